//! `strata ci`: one command for a GitHub Actions job that does what the
//! event calls for. A pull request compiles base and head, diffs, lints and
//! comments; a push to the default branch compiles, lints and publishes the
//! catalog; anything else compiles and lints. The job summary and the step
//! outputs are written in every case. The steps are strata's own
//! subcommands, run in this process with the arguments they would get on
//! the command line.

use crate::ci::{self, Event, Outputs};
use crate::cli::{diag_err, render_diagnostic, render_github, Cli, EXIT_FINDINGS};
use crate::commands::comment::GithubEnv;
use crate::commands::inventory::InventoryFlags;
use crate::commands::push::PublishFlags;
use crate::diagnostics::{Diagnostic, Severity};
use crate::github::body::{self, Revisions, SUMMARY_LIMIT};
use crate::lint::{self, LintOptions};
use clap::{Args, Parser as _, ValueEnum};
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    Error,
    Warning,
    Never,
}

#[derive(Debug, Args)]
pub struct CiArgs {
    #[command(flatten)]
    pub inv: InventoryFlags,
    /// Compile (and diff) only these targets
    #[arg(short = 't', long = "targets", num_args = 1.., value_name = "TARGET")]
    pub targets: Vec<String>,
    /// Do not compile: merge these shards' outputs (`strata compile --shard I/N --output-path DIR`) and use the result
    #[arg(long, num_args = 1.., value_name = "DIR")]
    pub collect: Vec<PathBuf>,
    /// Keep the compiled (or collected) catalog in DIR/compiled [default: a temporary directory]
    #[arg(long, value_name = "DIR")]
    pub output_path: Option<PathBuf>,
    /// Exit 1 when a lint finding of this severity or worse exists (and then publish nothing)
    #[arg(long, value_enum, default_value = "error")]
    pub fail_on: FailOn,
    /// On pull requests, let --fail-on count the findings the base already had too (by default only the new ones count)
    #[arg(long)]
    pub fail_on_existing: bool,
    /// On pull requests, write the review to the job summary only
    #[arg(long)]
    pub no_comment: bool,
    /// Name in the comment's hidden marker (one comment per name)
    #[arg(long, value_name = "NAME", default_value = body::DEFAULT_MARKER)]
    pub marker: String,
    #[command(flatten)]
    pub publish: PublishFlags,
    /// Flags passed to `strata compile` (e.g. `-- --search-paths . lib`)
    #[arg(last = true, value_name = "COMPILE FLAGS")]
    pub compile_flags: Vec<String>,
    #[command(flatten)]
    pub github: GithubEnv,
    #[arg(
        long,
        env = "GITHUB_SERVER_URL",
        default_value = "https://github.com",
        hide = true
    )]
    pub server_url: String,
    #[arg(long, env = "GITHUB_OUTPUT", hide = true)]
    pub github_output: Option<PathBuf>,
}

/// Runs one strata subcommand in this process, as if from the command line.
fn sub<I: IntoIterator<Item = OsString>>(argv: I) -> anyhow::Result<ExitCode> {
    let argv: Vec<OsString> = std::iter::once(OsString::from("strata"))
        .chain(argv)
        .collect();
    let cli = Cli::try_parse_from(&argv).map_err(|e| {
        anyhow::anyhow!(
            "invalid arguments for `{}`: {}",
            argv.iter()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" "),
            e.to_string().lines().next().unwrap_or_default()
        )
    })?;
    crate::cli::run(cli)
}

fn os<S: AsRef<std::ffi::OsStr>>(s: S) -> OsString {
    s.as_ref().to_os_string()
}

/// The inventory flags, back on a command line for `compile`.
fn inventory_argv(inv: &InventoryFlags) -> Vec<OsString> {
    let mut a = Vec::new();
    if let Some(p) = &inv.inventory_path {
        a.extend([os("--inventory-path"), os(p)]);
    }
    if inv.enable_class_wildcards {
        a.push(os("--enable-class-wildcards"));
    }
    if inv.ignore_class_not_found {
        a.push(os("--ignore-class-not-found"));
    }
    for r in &inv.ignore_class_not_found_regexp {
        a.extend([os("--ignore-class-not-found-regexp"), os(r)]);
    }
    if inv.compose_node_name {
        a.push(os("--compose-node-name"));
    }
    a
}

/// Everything `strata compile` gets besides `--output-path`.
fn compile_argv(args: &CiArgs) -> Vec<OsString> {
    let mut a = inventory_argv(&args.inv);
    if !args.targets.is_empty() {
        a.push(os("-t"));
        a.extend(args.targets.iter().map(os));
    }
    a.extend(args.compile_flags.iter().map(os));
    a
}

fn append(path: &Path, text: &str, what: &str) -> anyhow::Result<()> {
    let err = |e: std::io::Error| anyhow::anyhow!("cannot write {what} {}: {e}", path.display());
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(err)?;
    f.write_all(text.as_bytes()).map_err(err)
}

/// Top-level entries of a catalog directory (the targets), sorted.
fn catalog_entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

pub fn run(args: CiArgs) -> anyhow::Result<ExitCode> {
    if !body::valid_marker_name(&args.marker) {
        anyhow::bail!(
            "invalid --marker `{}`: use letters, digits, `.`, `_`, `:`, `/` and single `-`",
            args.marker
        );
    }
    // Issue 15: a review or a publish never reveals secrets.
    crate::commands::refs::refuse_reveal_flag(&args.compile_flags, "strata ci")?;
    for dir in &args.collect {
        crate::commands::refs::refuse_revealed(dir, "strata ci")?;
    }
    let env = |k: &str| std::env::var(k).ok();
    let event = ci::Event::detect(&env).map_err(diag_err)?;
    let in_actions = env("GITHUB_ACTIONS").as_deref() == Some("true");
    eprintln!("strata ci: {} event", event.name());
    let work = tempfile::Builder::new()
        .prefix("strata-ci-")
        .tempdir()
        .map_err(|e| anyhow::anyhow!("cannot create a temporary directory: {e}"))?;
    let out_root = args
        .output_path
        .clone()
        .unwrap_or_else(|| work.path().join("out"));

    // Lint first: an inventory that does not load still gets its findings
    // (and annotations) before compiling stops on it.
    let head_catalog = out_root.join("compiled");
    let collected = if args.collect.is_empty() {
        None
    } else {
        if !catalog_entries(&head_catalog).is_empty() {
            anyhow::bail!(
                "{} is not empty: --collect merges into a fresh directory",
                head_catalog.display()
            );
        }
        let targets = ci::collect(&args.collect, &head_catalog).map_err(diag_err)?;
        eprintln!(
            "collected {} target(s) from {} shard(s)",
            targets.len(),
            args.collect.len()
        );
        Some(targets)
    };
    let inv_opts = args.inv.options("inventory")?;
    let findings = lint::lint_path(
        &inv_opts,
        &LintOptions {
            catalog: collected.as_ref().map(|_| head_catalog.clone()),
            ..Default::default()
        },
    )
    .map_err(diag_err)?;
    // A pull request is judged (and annotated) by the findings it adds.
    let base_findings = match &event {
        Event::PullRequest { pr, .. } => base_lint(&inv_opts, pr, work.path()),
        _ => None,
    };
    let partition = base_findings
        .as_ref()
        .map(|b| lint::baseline::partition(b, &findings, diagnostic_key));
    if let Some(p) = &partition {
        eprintln!(
            "lint: {} new, {} fixed, {} already in the base (listed in the job summary)",
            p.new.len(),
            p.fixed.len(),
            p.existing.len()
        );
    }
    let shown: &[Diagnostic] = match &partition {
        Some(p) => &p.new,
        None => &findings,
    };
    let rendered: String = shown
        .iter()
        .map(|d| {
            if in_actions {
                render_github(d)
            } else {
                render_diagnostic(d)
            }
        })
        .collect();
    std::io::stdout().lock().write_all(rendered.as_bytes())?;
    let (errors, warnings) = lint::counts(&findings);
    eprintln!("lint: {errors} error(s), {warnings} warning(s)");
    let (errors, warnings) = if args.fail_on_existing {
        (errors, warnings)
    } else {
        lint::counts(shown)
    };
    let failed = match args.fail_on {
        FailOn::Error => errors > 0,
        FailOn::Warning => errors + warnings > 0,
        FailOn::Never => false,
    };
    let mut outputs = Outputs {
        lint_errors: errors,
        ..Default::default()
    };

    match &event {
        Event::PullRequest { pr, .. } => {
            let lint_json = work.path().join("lint.json");
            let json = serde_json::json!({
                "findings": findings,
                "summary": {"errors": errors, "warnings": warnings},
            });
            std::fs::write(&lint_json, serde_json::to_string_pretty(&json)? + "\n")?;
            if let Some(b) = &base_findings {
                let json = serde_json::json!({ "findings": b });
                std::fs::write(
                    work.path().join("lint-base.json"),
                    serde_json::to_string_pretty(&json)? + "\n",
                )?;
            }
            review(
                &args,
                pr,
                work.path(),
                &head_catalog,
                collected.is_some(),
                &lint_json,
                &mut outputs,
            )?;
        }
        _ => {
            if collected.is_none() {
                let mut argv = vec![
                    os("compile"),
                    os("--refs-read-only"),
                    os("--output-path"),
                    os(&out_root),
                ];
                argv.extend(compile_argv(&args));
                sub(argv)?;
            }
            let targets = catalog_entries(&head_catalog);
            let mut summary = format!(
                "## strata ci\n\nEvent `{}`: compiled {} target(s){}.\n\n",
                event.name(),
                targets.len(),
                if collected.is_some() {
                    format!(" (collected from {} shards)", args.collect.len())
                } else {
                    String::new()
                }
            );
            summary.push_str(&lint_markdown(&findings, errors, warnings));
            let publish = match &event {
                Event::Push {
                    default_branch: true,
                    ..
                } => match &args.publish.catalog_repo {
                    _ if failed => Some("Lint failed: the catalog was not published.".to_string()),
                    Some(url) => {
                        crate::commands::push::publish_catalog(
                            &args.publish,
                            head_catalog.clone(),
                            crate::publish::Layout::Kapitan,
                            url,
                        )?;
                        Some(format!(
                            "Published the catalog to {} (branch `{}`).",
                            crate::git::redact_url(url),
                            args.publish.branch
                        ))
                    }
                    None => Some(
                        "No catalog repository configured (`--catalog-repo` / the `catalog-repo` input): nothing pushed."
                            .to_string(),
                    ),
                },
                Event::Push { git_ref, .. } => Some(format!(
                    "`{git_ref}` is not the default branch: nothing pushed."
                )),
                _ => None,
            };
            if let Some(p) = &publish {
                eprintln!("{}", p.replace('`', ""));
                summary.push_str(&format!("\n{p}\n"));
            }
            if let Some(path) = &args.github.step_summary {
                append(path, &summary, "the job summary")?;
            }
        }
    }
    if let Some(path) = &args.github_output {
        append(path, &outputs.render(), "the step outputs")?;
    }
    Ok(if failed {
        ExitCode::from(EXIT_FINDINGS)
    } else {
        ExitCode::SUCCESS
    })
}

fn lint_markdown(findings: &[Diagnostic], errors: usize, warnings: usize) -> String {
    let mut s = format!("Lint: {errors} error(s), {warnings} warning(s).\n");
    const MAX: usize = 100;
    for d in findings.iter().take(MAX) {
        let sev = match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "note",
        };
        let at = match (&d.file, d.line) {
            (Some(f), Some(l)) => format!(" (`{}:{l}`)", f.display()),
            (Some(f), None) => format!(" (`{}`)", f.display()),
            _ => String::new(),
        };
        s.push_str(&format!(
            "- **{sev}** {}{at}\n",
            crate::diff::render::html_escape(&d.message)
        ));
    }
    if findings.len() > MAX {
        s.push_str(&format!("- ... and {} more\n", findings.len() - MAX));
    }
    s
}

/// A pull request: diff the base (where the branch forked off) and the
/// head, then comment (or write the summary only).
fn review(
    args: &CiArgs,
    pr: &crate::github::PullRequest,
    work: &Path,
    head_catalog: &Path,
    collected: bool,
    lint_json: &Path,
    outputs: &mut Outputs,
) -> anyhow::Result<()> {
    let (Some(base), Some(head)) = (&pr.base_sha, &pr.head_sha) else {
        anyhow::bail!("the pull request event has no base or head sha");
    };
    let repo = Path::new(".");
    let base = crate::diff::git::merge_base(repo, base, head).unwrap_or_else(|| base.clone());
    let diff_json = work.join("diff.json");
    let mut argv = vec![
        os("diff"),
        os("--format"),
        os("text"),
        os("--color"),
        os("never"),
        os("--json-out"),
        os(&diff_json),
    ];
    // Both sides are compiled here (the head only when the shards did not),
    // so the comment can also compare their apply order.
    let src = work.join("base-src");
    // Already there when the base was linted.
    if !src.exists() {
        crate::diff::git::extract(repo, &base, "", &src).map_err(diag_err)?;
    }
    let base_out = work.join("base-out");
    compile_revision(&src, &base_out, &compile_argv(args), &base)?;
    let base_catalog = base_out.join("compiled");
    let head_catalog = if collected {
        head_catalog.to_path_buf()
    } else {
        let src = work.join("head-src");
        crate::diff::git::extract(repo, head, "", &src).map_err(diag_err)?;
        let head_out = work.join("head-out");
        compile_revision(&src, &head_out, &compile_argv(args), head)?;
        head_out.join("compiled")
    };
    argv.extend([os("--catalogs"), os(&base_catalog), os(&head_catalog)]);
    sub(argv)?;
    let diff = crate::github::read_diff(&diff_json).map_err(diag_err)?;
    let (changed, files) = Outputs::from_diff(&diff);
    outputs.changed_targets = changed;
    outputs.diff_files = files;

    let lint_base = work.join("lint-base.json");
    let token = args.github.token.clone().filter(|t| !t.trim().is_empty());
    if !args.no_comment && token.is_some() {
        let mut base_args = Vec::new();
        if lint_base.exists() {
            base_args = vec![os("--lint-base"), os(&lint_base)];
        }
        sub([
            os("comment"),
            os("--diff"),
            os(&diff_json),
            os("--lint"),
            os(lint_json),
            os("--output"),
            os(work.join("strata-review.md")),
            os("--marker"),
            os(&args.marker),
            os("--order-catalogs"),
            os(&base_catalog),
            os(&head_catalog),
        ]
        .into_iter()
        .chain(base_args))?;
        if !pr.from_fork {
            outputs.comment_url = find_comment(args, pr.number, token.as_deref().unwrap_or(""));
        }
        return Ok(());
    }
    let why = if args.no_comment {
        "comments are off (--no-comment)"
    } else {
        "GITHUB_TOKEN is not set"
    };
    eprintln!("not commenting: {why}; the review is in the job summary");
    if let Some(path) = &args.github.step_summary {
        let lint = crate::github::read_lint(lint_json).map_err(diag_err)?;
        let revs = Revisions {
            base_sha: Some(base.clone()),
            head_sha: Some(head.clone()),
            run_url: Revisions::run_url_from_env(&|k| std::env::var(k).ok()),
        };
        let order = crate::order::changed_orders(
            &base_catalog,
            &head_catalog,
            &crate::order::Options::default(),
        )
        .unwrap_or_else(|e| {
            eprintln!("warning: cannot compare the apply order: {e}");
            Vec::new()
        });
        let base_lint = if lint_base.exists() {
            Some(crate::github::read_lint(&lint_base).map_err(diag_err)?)
        } else {
            None
        };
        let report = body::build_review(
            &diff,
            &lint,
            base_lint.as_deref(),
            &order,
            &revs,
            None,
            SUMMARY_LIMIT - 1024,
        )
        .markdown;
        append(path, &report, "the job summary")?;
    }
    Ok(())
}

/// The address of strata's comment on the pull request (after posting it).
fn find_comment(args: &CiArgs, pr: u64, token: &str) -> Option<String> {
    let repo = args.github.repository.as_deref()?;
    let marker = body::marker(&args.marker);
    let found = crate::github::Client::new(&args.github.api_url, repo, token)
        .and_then(|c| c.list_comments(pr))
        .map(|cs| {
            cs.into_iter()
                .find(|c| c.body.as_deref().is_some_and(|b| b.contains(&marker)))
        });
    match found {
        Ok(Some(c)) => Some(ci::comment_url(&args.server_url, repo, pr, c.id)),
        Ok(None) => None,
        Err(e) => {
            eprintln!("warning: cannot read back the comment's address: {e}");
            None
        }
    }
}

fn diagnostic_key(d: &Diagnostic) -> lint::baseline::StableKey {
    let file = d.file.as_ref().map(|f| f.to_string_lossy().into_owned());
    lint::baseline::StableKey::new(&d.code, file.as_deref(), &d.message)
}

/// The base revision's lint findings, with paths as the head's are
/// written (relative to the repository); `None` (and a warning) when the
/// base cannot be read, so that every finding counts as before.
fn base_lint(
    inv: &crate::inventory::InventoryOptions,
    pr: &crate::github::PullRequest,
    work: &Path,
) -> Option<Vec<Diagnostic>> {
    let (Some(base), Some(head)) = (&pr.base_sha, &pr.head_sha) else {
        return None;
    };
    let repo = Path::new(".");
    let base = crate::diff::git::merge_base(repo, base, head).unwrap_or_else(|| base.clone());
    let src = work.join("base-src");
    if let Err(e) = crate::diff::git::extract(repo, &base, "", &src) {
        eprintln!("warning: cannot read the base revision for lint: {e}");
        return None;
    }
    let mut opts = inv.clone();
    if opts.path.is_relative() {
        opts.path = src.join(&opts.path);
    }
    let found = match lint::lint_path(&opts, &LintOptions::default()) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("warning: cannot lint the base revision: {e}");
            return None;
        }
    };
    let prefix = format!("{}/", src.display());
    Some(
        found
            .into_iter()
            .map(|mut d| {
                if let Some(f) = &d.file {
                    if let Ok(rel) = f.strip_prefix(&src) {
                        d.file = Some(Path::new(".").join(rel));
                    }
                }
                d.message = d.message.replace(&prefix, "");
                d.hints = d.hints.iter().map(|h| h.replace(&prefix, "")).collect();
                d
            })
            .collect(),
    )
}

/// Compiles a revision's tree (extracted into `src`) with this strata into
/// `out/compiled`, in a child process so the tree's `.kapitan` applies.
fn compile_revision(src: &Path, out: &Path, flags: &[OsString], rev: &str) -> anyhow::Result<()> {
    let exe = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("cannot find the strata binary: {e}"))?;
    let res = std::process::Command::new(exe)
        .arg("compile")
        .arg("--output-path")
        .arg(out)
        .args(flags)
        .env(crate::refs::READ_ONLY_ENV, "1")
        .current_dir(src)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| anyhow::anyhow!("cannot run the compiler for `{rev}`: {e}"))?;
    if !res.status.success() {
        let stderr = String::from_utf8_lossy(&res.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        anyhow::bail!(
            "compiling revision `{rev}` failed ({}):\n{}",
            res.status,
            tail.join("\n")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn inventory_flags_round_trip() {
        #[derive(Parser)]
        struct T {
            #[command(flatten)]
            inv: InventoryFlags,
        }
        let argv = [
            "t",
            "--inventory-path",
            "inv",
            "--ignore-class-not-found",
            "--ignore-class-not-found-regexp",
            "^x",
            "--compose-node-name",
        ];
        let t = T::try_parse_from(argv).unwrap();
        let back: Vec<String> = inventory_argv(&t.inv)
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        assert_eq!(back, argv[1..]);
    }
}
