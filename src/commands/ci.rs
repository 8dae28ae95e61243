//! `strata ci`: one command for a GitHub Actions job that does what the
//! event calls for. A pull request compiles base and head, diffs, lints and
//! comments; a push to the default branch compiles, lints and publishes the
//! catalog; anything else compiles and lints. The job summary and the step
//! outputs are written in every case. Every step is a library call
//! ([`crate::workspace`]): no command line is rebuilt, strata never runs
//! itself, and nothing passes between steps through files.

use crate::ci::{self, Event, Outputs};
use crate::cli::eprintln;
use crate::cli::{diag_err, render_diagnostic, render_github, EXIT_FINDINGS};
use crate::commands::comment::GithubEnv;
use crate::commands::inventory::InventoryFlags;
use crate::commands::push::PublishFlags;
use crate::commands::review::RevisionFlags;
use crate::diagnostics::{Diagnostic, Severity};
use crate::github::body::{self, Revisions, SUMMARY_LIMIT};
use crate::lint::{self, LintOptions};
use crate::workspace::mask::SecretMask;
use crate::workspace::review::{self as wreview, Head, ReviewRequest};
use crate::workspace::Workspace;
use clap::{Args, ValueEnum};
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
    #[command(flatten)]
    pub rev: RevisionFlags,
    /// Compile every target on both sides of a pull request (no fingerprints)
    #[arg(long)]
    pub full: bool,
    /// Pushes and other events: compile with this cache (see `strata compile --cache`)
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
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
    /// Flags passed to `strata compile` (older usage; the same flags are accepted directly)
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
    let started = std::time::Instant::now();
    // Issue 15: a review or a publish never reveals secrets.
    crate::commands::refs::refuse_reveal_flag(&args.compile_flags, "strata ci")?;
    for dir in &args.collect {
        crate::commands::refs::refuse_revealed(dir, "strata ci")?;
    }
    let env = |k: &str| std::env::var(k).ok();
    let event = ci::Event::detect(&env).map_err(diag_err)?;
    let in_actions = env("GITHUB_ACTIONS").as_deref() == Some("true");
    eprintln!("strata ci: {} event", event.name());
    // Locked while this process lives: the next run removes the ones
    // killed runs left (re-probe 11).
    let work = crate::fswalk::locked_temp_dir(&std::env::temp_dir(), "strata-ci-")
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
        // The shards' directories are read into the review, and merged
        // into --output-path: on a pull request one the checkout commits as
        // a link out (`shard-1 -> /home/runner/x`) showed the runner's
        // files as the catalog, or had the catalog written there.
        if matches!(event, Event::PullRequest { .. }) {
            let given: Vec<&Path> = args.collect.iter().map(PathBuf::as_path).collect();
            let all: Vec<&Path> = given
                .iter()
                .copied()
                .chain(args.output_path.as_deref())
                .collect();
            let confine = crate::commands::confine::working_tree("ci", true, &all)?;
            crate::commands::confine::check_inputs(confine.as_ref(), given)?;
            if args.output_path.is_some() {
                crate::commands::confine::check_output_dir(
                    confine.as_ref(),
                    "ci",
                    "--output-path",
                    &out_root,
                )?;
            }
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
    let timings = std::env::var("STRATA_TIMINGS").is_ok_and(|v| !v.is_empty() && v != "0");
    // A pull request (compiled here): both revisions read and rendered
    // once, for lint and review alike.
    let pr_req = match &event {
        Event::PullRequest { pr, .. } if collected.is_none() => Some(pr_request(&args, pr)?),
        _ => None,
    };
    let mut pr_open = pr_req.as_ref().map(|r| wreview::open(r, Some(&inv_opts)));
    let (findings, base_findings) = match (&pr_open, &pr_req) {
        (Some(opened), Some(req)) => pr_lint(opened, &inv_opts, &req.base, work.path(), timings)?,
        _ => {
            // `--collect` on a pull request: the working tree is the pull
            // request's, read as the review reads it (its committed
            // symlink to a file of the runner is refused, not quoted).
            let inv_opts = match &event {
                Event::PullRequest { .. } => crate::inventory::InventoryOptions {
                    confine: Some(std::env::current_dir()?.canonicalize()?),
                    ..inv_opts.clone()
                },
                _ => inv_opts.clone(),
            };
            let findings = lint::lint_path(
                &inv_opts,
                &LintOptions {
                    // A pull request's lint is the same with shards as
                    // without: the catalog rules have no base catalog to
                    // tell their findings new from old (each counted as
                    // new), and the review compares the apply orders.
                    catalog: collected
                        .as_ref()
                        .filter(|_| !matches!(event, Event::PullRequest { .. }))
                        .map(|_| head_catalog.clone()),
                    ..Default::default()
                },
            )
            .map_err(diag_err)?;
            let findings = masked(findings, || inventory_mask(&inv_opts));
            // A pull request is judged (and annotated) by the findings it adds.
            let base_findings = match &event {
                Event::PullRequest { pr, .. } => base_lint(&inv_opts, pr, work.path()),
                _ => None,
            };
            (findings, base_findings)
        }
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
    // Annotations are strata's own workflow commands (their text is
    // escaped); other renderings may quote the pull request.
    let rendered = if in_actions {
        rendered
    } else {
        crate::cli::actions_safe(&rendered).into_owned()
    };
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
            review(
                &args,
                pr,
                work.path(),
                &head_catalog,
                (pr_req.as_ref(), pr_open.take()),
                (&findings, base_findings.as_deref()),
                &mut outputs,
                timings,
            )?;
        }
        _ => {
            if collected.is_none() {
                let mut flags = crate::commands::review::compile_flags(
                    &args.inv,
                    &args.rev,
                    &args.compile_flags,
                )?;
                flags.output_path = Some(out_root.clone());
                let ws = Workspace::open(Path::new("."), &flags).map_err(diag_err)?;
                // The job's log is read by whoever can read the
                // repository's runs: errors and warnings are masked.
                let rendered = ws.render_masked().map_err(diag_err)?;
                let selected = crate::compile::select_targets(
                    &rendered.prepared,
                    if args.targets.is_empty() {
                        &flags.targets
                    } else {
                        &args.targets
                    },
                    &[],
                );
                if selected.is_empty() {
                    anyhow::bail!("no targets found (check --targets)");
                }
                let _masked = SecretMask::program_output(&rendered);
                let report = ws
                    .compile_catalog(&rendered, &selected)
                    .map_err(|e| diag_err(SecretMask::of(&rendered).error(e)))?;
                if !report.warnings.is_empty() {
                    let mask = SecretMask::of(&rendered);
                    for w in &report.warnings {
                        eprintln!(
                            "warning: {} (continue_on_compile_error is set)",
                            mask.text(w)
                        );
                    }
                }
                for w in &report.notices {
                    eprintln!("warning: {w}");
                }
                eprintln!(
                    "Compiled {} targets in {:.2}s",
                    report.targets.len(),
                    started.elapsed().as_secs_f64()
                );
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
    if timings {
        eprintln!(
            "timing: strata ci until cleanup: {:.3}s",
            started.elapsed().as_secs_f64()
        );
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

/// The review of a pull request's base (where the branch forked off) and
/// head.
fn pr_request(
    args: &CiArgs,
    pr: &crate::github::PullRequest,
) -> anyhow::Result<ReviewRequest<'static>> {
    let (Some(base), Some(head)) = (&pr.base_sha, &pr.head_sha) else {
        anyhow::bail!("the pull request event has no base or head sha");
    };
    let repo = Path::new(".");
    let base = crate::commands::review::review_base(repo, base, base, head);
    Ok(ReviewRequest {
        repo,
        base,
        head: Head::Rev(head.clone()),
        flags: crate::commands::review::compile_flags(&args.inv, &args.rev, &args.compile_flags)?,
        targets: args.targets.clone(),
        incremental: !args.full,
    })
}

/// A pull request's lint findings: the working tree's, and the base's
/// (`None` when the base cannot be linted), from the review's renders
/// when they are the working tree's (else each side rendered again).
pub(crate) fn pr_lint(
    opened: &Result<wreview::Pr, crate::workspace::WorkspaceError>,
    inv_opts: &crate::inventory::InventoryOptions,
    base: &str,
    work: &Path,
    timings: bool,
) -> anyhow::Result<(Vec<Diagnostic>, Option<Vec<Diagnostic>>)> {
    let pr = opened.as_ref().ok();
    let shared = pr.and_then(|p| p.head_lint_input());
    let base_input = pr.and_then(|p| p.base_lint_input());
    // One mask for both sides, made once from their distinct renders (the
    // base shares the head's for every target the change cannot reach): a
    // side's findings masked with the other side's secret values too hide
    // nothing they should show.
    let both_mask: std::sync::OnceLock<SecretMask> = std::sync::OnceLock::new();
    let both = || {
        both_mask.get_or_init(|| {
            let mut seen = std::collections::HashSet::new();
            let renders = shared
                .iter()
                .flat_map(|(_, r)| r.values())
                .chain(base_input.iter().flat_map(|((_, r), _)| r.values()))
                .copied()
                .filter(|r| seen.insert(std::ptr::from_ref(*r)));
            SecretMask::of_renders_by_name(renders)
        })
    };
    // The two sides share nothing they write: linted side by side, each
    // file text the two trees hold alike parsed once.
    let side_by_side = LintOptions {
        shared_parses: Some(std::sync::Arc::new(match pr {
            Some(p) => crate::lint::rules::SharedParses::with_yaml(p.texts()),
            None => Default::default(),
        })),
        ..LintOptions::default()
    };
    let head_lint = || -> anyhow::Result<(Vec<Diagnostic>, bool, std::time::Duration)> {
        let clock = std::time::Instant::now();
        // A review reads only the repository: in the working tree, a pull
        // request's committed symlink is a real link (to `/etc/shadow`, say).
        let confined = crate::inventory::InventoryOptions {
            confine: Some(std::env::current_dir()?.canonicalize()?),
            ..inv_opts.clone()
        };
        let findings = match &shared {
            Some((inv, rendered)) => lint::lint_rendered(inv, rendered, &side_by_side),
            // A pull request that deletes the inventory: nothing to lint, and
            // the review shows every target removed.
            None if pr.is_some() && !confined.path.exists() => Ok(Vec::new()),
            None => lint::lint_path(&confined, &LintOptions::default()),
        };
        // When the review itself could not open the revisions, its error is
        // the one to report (it names the cause: `classes_uri` outside...).
        let findings = match findings {
            Err(_) if opened.is_err() => Vec::new(),
            f => f.map_err(diag_err)?,
        };
        let findings = match &shared {
            Some(_) => masked_by(findings, both),
            None => masked(findings, || inventory_mask(&confined)),
        };
        Ok((findings, shared.is_some(), clock.elapsed()))
    };
    let base_lint = || {
        let clock = std::time::Instant::now();
        let base_findings = match &base_input {
            Some(((inv, rendered), root)) => {
                match lint::lint_rendered(inv, rendered, &side_by_side) {
                    Ok(found) => Some(relative_to(masked_by(found, both), root)),
                    Err(e) => {
                        eprintln!("warning: cannot lint the base revision: {e}");
                        None
                    }
                }
            }
            None => lint_revision(inv_opts, base, work),
        };
        (base_findings, base_input.is_some(), clock.elapsed())
    };
    let (head, base) = std::thread::scope(|s| {
        let base = s.spawn(base_lint);
        (head_lint(), base.join())
    });
    let (findings, head_shared, head_time) = head?;
    let (base_findings, base_shared, base_time) =
        base.map_err(|_| anyhow::anyhow!("linting the base revision failed (thread)"))?;
    if timings {
        let shared = |s: bool| if s { " (shared renders)" } else { "" };
        eprintln!(
            "timing: lint the head{}: {:.3}s",
            shared(head_shared),
            head_time.as_secs_f64()
        );
        eprintln!(
            "timing: lint the base{} (beside the head): {:.3}s",
            shared(base_shared),
            base_time.as_secs_f64()
        );
    }
    Ok((findings, base_findings))
}

/// Lint findings of a revision read below `root`, with paths written as
/// the working tree's are.
fn relative_to(found: Vec<Diagnostic>, root: &Path) -> Vec<Diagnostic> {
    let prefix = format!("{}/", root.display());
    found
        .into_iter()
        .map(|mut d| {
            if let Some(f) = &d.file {
                if let Ok(rel) = f.strip_prefix(root) {
                    d.file = Some(Path::new(".").join(rel));
                }
            }
            d.message = d.message.replace(&prefix, "");
            d.hints = d.hints.iter().map(|h| h.replace(&prefix, "")).collect();
            d
        })
        .collect()
}

/// A pull request: diff the base (where the branch forked off) and the
/// head, then comment (or write the summary only).
#[allow(clippy::too_many_arguments)]
fn review(
    args: &CiArgs,
    pr: &crate::github::PullRequest,
    work: &Path,
    head_catalog: &Path,
    // The pull request's review, already opened (not with --collect).
    (req, opened): (
        Option<&ReviewRequest>,
        Option<Result<wreview::Pr, crate::workspace::WorkspaceError>>,
    ),
    // The head's lint findings, and the base's (when it could be linted).
    (findings, base_findings): (&[Diagnostic], Option<&[Diagnostic]>),
    outputs: &mut Outputs,
    timings: bool,
) -> anyhow::Result<()> {
    let (Some(base), Some(head)) = (&pr.base_sha, &pr.head_sha) else {
        anyhow::bail!("the pull request event has no base or head sha");
    };
    let repo = Path::new(".");
    let base = crate::commands::review::review_base(repo, base, base, head);
    // Both sides are compiled here (the head only when the shards did not),
    // so the comment can also compare their apply order.
    let r = match (req, opened) {
        (Some(req), Some(opened)) => {
            let pr = opened.map_err(diag_err)?;
            let clock = std::time::Instant::now();
            let diff_opts = crate::commands::review::pr_diff_options(&pr, &req.flags)?;
            if timings {
                eprintln!(
                    "timing: the inventories' secret values: {:.3}s",
                    clock.elapsed().as_secs_f64()
                );
            }
            let r = pr.finish(&diff_opts).map_err(diag_err)?;
            crate::commands::review::report(req, &r);
            r
        }
        _ => {
            // `--collect`: the head is the shards' catalog, compiled from
            // this working tree; its inventory's secret values, and the
            // base revision's, are hidden (red41).
            let mut opts = crate::commands::review::diff_options()?;
            let inv = args.inv.options("inventory")?;
            let mut values =
                crate::workspace::known::worktree_known_values(inv.clone(), &opts.redactor);
            values.extend(crate::workspace::known::revision_known_values(
                &base,
                &inv,
                &opts.redactor,
            ));
            opts.redactor = opts.redactor.with_known_values(&values);
            crate::commands::review::build_with(
                &ReviewRequest {
                    repo,
                    base: base.clone(),
                    head: Head::Catalog(head_catalog.to_path_buf()),
                    flags: crate::commands::review::compile_flags(
                        &args.inv,
                        &args.rev,
                        &args.compile_flags,
                    )?,
                    targets: args.targets.clone(),
                    incremental: !args.full,
                },
                &opts,
            )?
        }
    };
    if timings {
        for (what, d) in &r.timings {
            eprintln!("timing: {what}: {:.3}s", d.as_secs_f64());
        }
    }
    // The text diff goes to the log.
    std::io::stdout().lock().write_all(
        crate::cli::actions_safe(&crate::diff::render::text(&r.diff, false)).as_bytes(),
    )?;
    let (changed, files) = Outputs::from_diff(&r.diff);
    outputs.changed_targets = changed;
    outputs.diff_files = files;
    let clock = std::time::Instant::now();
    let (order, compared) = crate::commands::review::order_changes(&r);
    if timings {
        eprintln!(
            "timing: compare apply orders ({compared} of {} changed targets): {:.3}s",
            r.diff.summary.targets_changed,
            clock.elapsed().as_secs_f64()
        );
    }
    let lint = crate::commands::comment::findings(findings);
    let lint_base = base_findings.map(crate::commands::comment::findings);
    let revs = Revisions {
        base_sha: Some(base.clone()),
        head_sha: Some(head.clone()),
        run_url: Revisions::run_url_from_env(&|k| std::env::var(k).ok()),
    };

    let token = args.github.token.clone().filter(|t| !t.trim().is_empty());
    if !args.no_comment && token.is_some() {
        crate::commands::comment::post(
            &crate::commands::comment::ReviewParts {
                diff: &r.diff,
                lint: &lint,
                lint_base: lint_base.as_deref(),
                order: &order,
                revs,
            },
            &crate::commands::comment::PostOptions {
                output: &work.join("strata-review.md"),
                marker: &args.marker,
                dry_run: false,
                pr: Some(pr.clone()),
                github: &args.github,
            },
        )?;
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
        let report = body::build_review(
            &r.diff,
            &lint,
            lint_base.as_deref(),
            &order,
            &revs,
            None,
            SUMMARY_LIMIT - 1024,
        )
        .markdown;
        append(path, &report, "the job summary")?;
    }
    if timings {
        eprintln!(
            "timing: apply orders, comment and job summary: {:.3}s",
            clock.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

pub(crate) fn diagnostic_key(d: &Diagnostic) -> lint::baseline::StableKey {
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
    let base = crate::commands::review::review_base(repo, base, base, head);
    lint_revision(inv, &base, work)
}

/// The lint findings of revision `base` (read from git into `work`), with
/// paths written as the working tree's are.
/// Lint findings as `ci` and `review` show them (log, annotations, job
/// summary, comment): the values of the inventory's secret-named
/// parameters they quote are masked, as the errors are (a compile entry's
/// `input_type` may come from a reference to one; re-probe 15). The mask
/// is made only when there is something to show.
fn masked(findings: Vec<Diagnostic>, mask: impl FnOnce() -> SecretMask) -> Vec<Diagnostic> {
    if findings.is_empty() {
        return findings;
    }
    let mask = mask();
    masked_by(findings, || &mask)
}

/// [`masked`] with a mask made elsewhere (and only if there are findings).
fn masked_by<'m>(
    findings: Vec<Diagnostic>,
    mask: impl FnOnce() -> &'m SecretMask,
) -> Vec<Diagnostic> {
    if findings.is_empty() {
        return findings;
    }
    let mask = mask();
    findings.into_iter().map(|d| mask.diagnostic(d)).collect()
}

/// The mask of the inventory at `opts`, rendered again (lint rendered it
/// and kept nothing); the credential shapes only when it does not load.
fn inventory_mask(opts: &crate::inventory::InventoryOptions) -> SecretMask {
    match crate::inventory::Inventory::load(opts) {
        Ok(inv) => SecretMask::of_renders_by_name(lint::render_all(&inv).values()),
        Err(_) => SecretMask::of_values([]),
    }
}

pub(crate) fn lint_revision(
    inv: &crate::inventory::InventoryOptions,
    base: &str,
    work: &Path,
) -> Option<Vec<Diagnostic>> {
    let repo = Path::new(".");
    let tree = work.join("base-lint-src");
    if let Err(e) = crate::diff::git::extract(repo, base, "", &tree) {
        eprintln!("warning: cannot read the base revision for lint: {e}");
        return None;
    }
    // Paths are the working directory's: run from a subdirectory of the
    // repository, the base is read at that subdirectory too (else its
    // inventory is not found, and every finding counts as new).
    let src = match crate::diff::git::subdir(repo) {
        Ok(sub) if !sub.is_empty() => tree.join(sub),
        _ => tree,
    };
    let mut opts = inv.clone();
    // Only the revision's own tree is read (an absolute inventory path
    // from `.kapitan` named a directory elsewhere on the runner).
    if opts.path.is_absolute() {
        eprintln!(
            "warning: cannot lint the base revision: the inventory path `{}` is outside the repository",
            opts.path.display()
        );
        return None;
    }
    opts.path = src.join(&opts.path);
    // The pull request that adds the inventory: its base has no findings.
    if !opts.path.exists() {
        return Some(Vec::new());
    }
    opts.confine = Some(src.canonicalize().unwrap_or_else(|_| src.clone()));
    let found = match lint::lint_path(&opts, &LintOptions::default()) {
        Ok(f) => masked(f, || inventory_mask(&opts)),
        Err(e) => {
            eprintln!("warning: cannot lint the base revision: {e}");
            return None;
        }
    };
    Some(relative_to(found, &src))
}

/// The address of strata's comment on the pull request (after posting it).
fn find_comment(args: &CiArgs, pr: u64, token: &str) -> Option<String> {
    let repo = args.github.repository.as_deref()?;
    // Only strata's own comment: a planted marker is never linked to.
    let found = crate::github::Client::new(&args.github.api_url, repo, token)
        .and_then(|c| crate::github::own_comment(&c, pr, &args.marker));
    match found {
        Ok(Some(c)) => Some(ci::comment_url(&args.server_url, repo, pr, c.id)),
        Ok(None) => None,
        Err(e) => {
            eprintln!("warning: cannot read back the comment's address: {e}");
            None
        }
    }
}
