//! `strata diff`: compare two compiled catalogs and print the differences
//! as text, markdown or JSON.

use crate::cli::diag_err;
use crate::diff::redact::Redactor;
use crate::diff::{self, DiffOptions, ResourceFilter};
use clap::{Args, ValueEnum};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Markdown,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Color {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// Diff two compiled catalog directories (each holds one directory per target)
    #[arg(long, num_args = 2, value_names = ["OLD_DIR", "NEW_DIR"])]
    pub catalogs: Option<Vec<PathBuf>>,
    /// The old side: this git revision (a branch, tag or commit) [default in a pull_request workflow: where the pull request branched off its base]
    #[arg(long, value_name = "REF")]
    pub base: Option<String>,
    /// The new side: this git revision [default: the pull request's head in a pull_request workflow, else HEAD]
    #[arg(long, value_name = "REF")]
    pub head: Option<String>,
    /// Git revisions: diff the catalog committed at PATH in each revision (e.g. a Commodore catalog repository) instead of compiling
    #[arg(long, value_name = "PATH")]
    pub catalog_path: Option<String>,
    /// Git revisions: the git repository to read
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,
    /// Git revisions: the compiler, run in each revision's tree with the flags after `--` (through `sh -c`) [default: this strata's `compile`]
    #[arg(long, value_name = "COMMAND")]
    pub compile_command: Option<String>,
    /// Git revisions: where --compile-command writes the catalog, relative to the tree
    #[arg(long, value_name = "PATH", default_value = "compiled")]
    pub compiled_dir: PathBuf,
    /// Colour the text output: auto (on a terminal, unless NO_COLOR is set), always, never
    #[arg(long, value_enum, default_value = "auto")]
    pub color: Color,
    #[command(flatten)]
    pub inv: crate::commands::inventory::InventoryFlags,
    #[command(flatten)]
    pub rev: crate::commands::review::RevisionFlags,
    /// With --base: more compile flags after `--` (e.g. `-- -t prod`; strata sets --output-path); the common ones are also accepted directly
    #[arg(last = true, value_name = "COMPILE_FLAG")]
    pub compile_flags: Vec<String>,
    /// Output format
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Compare files as text, not as YAML/JSON values
    #[arg(long)]
    pub no_semantic: bool,
    /// Redact values of keys matching this regex (searched; repeatable), on top of the defaults
    #[arg(long, value_name = "REGEX")]
    pub redact_key: Vec<String>,
    /// Do not redact the default key names (password, token, secret, ...); Secret data is always redacted
    #[arg(long)]
    pub no_default_redact: bool,
    /// Ignore objects matching group:kind:name (`*` wildcards; empty group for core)
    #[arg(long, value_name = "GROUP:KIND:NAME")]
    pub ignore_resource: Vec<String>,
    /// Ignore fields whose path (`metadata.annotations.x`, `spec.items[0].y`) matches this regex
    #[arg(long, value_name = "REGEX")]
    pub ignore_path: Vec<String>,
    /// Lines of context in diffs
    #[arg(long, default_value_t = 3)]
    pub context: usize,
    /// Exit 1 when there are differences (default: exit 0 either way)
    #[arg(long, alias = "check")]
    pub exit_code: bool,
    /// Also write the JSON diff to this file (for `strata comment`)
    #[arg(long, value_name = "FILE")]
    pub json_out: Option<PathBuf>,
    /// --catalogs: neither directory (nor a symlink in it) may lead out of
    /// the working directory unless given outside it (on by default on a
    /// GitHub `pull_request*` event; --base compiles confined always)
    #[arg(long)]
    pub confine: bool,
}

pub fn run(args: DiffArgs) -> anyhow::Result<ExitCode> {
    // Trees read from git live here until the diff is printed.
    let mut _scratch = None;
    crate::commands::refs::refuse_reveal_flag(&args.compile_flags, "strata diff")?;
    if let Some(c) = &args.compile_command {
        crate::commands::refs::refuse_reveal_flag(
            &c.split_whitespace().collect::<Vec<_>>(),
            "strata diff",
        )?;
    }
    let mut reviewed: Option<crate::workspace::review::Review> = None;
    let revisions = match &args.catalogs {
        Some(_) if args.base.is_some() || args.head.is_some() => {
            anyhow::bail!("--catalogs OLD_DIR NEW_DIR cannot be combined with --base/--head")
        }
        Some(_) => None,
        None => Some(revisions(&args)?),
    };
    let (old, new) = match (&args.catalogs, &revisions) {
        (Some(dirs), _) if dirs.len() == 2 => (dirs[0].clone(), dirs[1].clone()),
        (None, Some((base, head))) => {
            let (base, head) = (base.as_str(), head.as_str());
            let tmp = crate::fswalk::private_temp_dir("strata-diff-")
                .map_err(|e| anyhow::anyhow!("cannot create a temporary directory: {e}"))?;
            let (o, n) = (tmp.path().join("base"), tmp.path().join("head"));
            let sides = match &args.catalog_path {
                Some(path) => {
                    diff::git::extract(&args.repo, base, path, &o).map_err(diag_err)?;
                    diff::git::extract(&args.repo, head, path, &n).map_err(diag_err)?;
                    (o, n)
                }
                None if args.compile_command.is_some() => {
                    let mut out = Vec::new();
                    let command = args.compile_command.as_deref().unwrap_or_default();
                    for (rev, dir) in [(base, &o), (head, &n)] {
                        diff::git::extract(&args.repo, rev, "", dir).map_err(diag_err)?;
                        out.push(compile_tree(&args, command, rev, dir)?);
                    }
                    (out[0].clone(), out[1].clone())
                }
                None => {
                    // strata's own compile: in this process, from git objects.
                    let req = crate::workspace::review::ReviewRequest {
                        repo: &args.repo,
                        base: base.to_string(),
                        head: crate::workspace::review::Head::Rev(head.to_string()),
                        flags: crate::commands::review::compile_flags(
                            &args.inv,
                            &args.rev,
                            &args.compile_flags,
                        )?,
                        targets: Vec::new(),
                        incremental: true,
                    };
                    // Opened as a review opens them (with the working
                    // tree's inventory options): both inventories' secret
                    // values are hidden wherever the diff shows them (red41).
                    let inv = args.inv.options("inventory")?;
                    let pr = crate::workspace::review::open(&req, Some(&inv)).map_err(diag_err)?;
                    let mut opts = diff_options(&args)?;
                    let values =
                        crate::workspace::known::pr_known_values(&pr, &req.flags, &opts.redactor);
                    opts.redactor = opts.redactor.with_known_values(&values);
                    let r = pr.finish(&opts).map_err(diag_err)?;
                    reviewed = Some(r);
                    (PathBuf::new(), PathBuf::new())
                }
            };
            _scratch = Some(tmp);
            sides
        }
        _ => anyhow::bail!("pass --catalogs OLD_DIR NEW_DIR, or --base REF [--head REF]"),
    };
    let d = match reviewed {
        Some(r) => r.diff,
        None => {
            if let Some(dirs) = &args.catalogs {
                // A committed `compiled -> /home/runner/...` was diffed and
                // printed whole.
                let given: Vec<&std::path::Path> = dirs.iter().map(PathBuf::as_path).collect();
                let confine = crate::commands::confine::working_tree("diff", args.confine, &given)?;
                crate::commands::confine::check_inputs(confine.as_ref(), given.iter().copied())?;
            }
            crate::commands::refs::refuse_revealed(&old, "strata diff")?;
            crate::commands::refs::refuse_revealed(&new, "strata diff")?;
            // The secret values of the working tree's inventory, when
            // there is one (red41): catalogs compiled from it may copy
            // them under neutral keys.
            let mut opts = diff_options(&args)?;
            let values = match args.inv.options("inventory") {
                Ok(inv) => {
                    let mut values =
                        crate::workspace::known::worktree_known_values(inv.clone(), &opts.redactor);
                    // An old catalog checked out from a catalog repository
                    // that `strata push` published names its source commit:
                    // that revision's values (rotated away by the change)
                    // are known too (red42).
                    if let Some(rev) = crate::git::head_message(&old)
                        .and_then(|m| crate::publish::source_commit(&m))
                    {
                        values.extend(crate::workspace::known::revision_known_values(
                            &rev,
                            &inv,
                            &opts.redactor,
                        ));
                    }
                    values
                }
                Err(_) => Default::default(),
            };
            opts.redactor = opts.redactor.with_known_values(&values);
            diff::diff_dirs(&old, &new, &opts).map_err(diag_err)?
        }
    };
    let json = || serde_json::to_string_pretty(&d).map(|s| s + "\n");
    if let Some(path) = &args.json_out {
        // A committed `diff.json -> /home/runner/.bashrc` was overwritten.
        let confine = crate::commands::confine::working_tree("diff", args.confine, &[path])?;
        crate::commands::confine::check_output(confine.as_ref(), "diff", "--json-out", path)?;
        std::fs::write(path, json()?)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    }
    let out = match args.format {
        Format::Json => json()?,
        Format::Markdown => diff::render::markdown(&d),
        Format::Text => {
            let color = match args.color {
                Color::Always => true,
                Color::Never => false,
                Color::Auto => {
                    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
                }
            };
            diff::render::text(&d, color)
        }
    };
    // Text and markdown go to a log; JSON is data (usually to a file).
    let out = match args.format {
        Format::Json => out,
        _ => crate::cli::actions_safe(&out).into_owned(),
    };
    std::io::stdout().lock().write_all(out.as_bytes())?;
    Ok(if args.exit_code && !d.is_empty() {
        ExitCode::from(crate::cli::EXIT_FINDINGS)
    } else {
        ExitCode::SUCCESS
    })
}

fn diff_options(args: &DiffArgs) -> anyhow::Result<DiffOptions> {
    Ok(DiffOptions {
        semantic: !args.no_semantic,
        redactor: Redactor::new(&args.redact_key, !args.no_default_redact).map_err(diag_err)?,
        ignore_resources: args
            .ignore_resource
            .iter()
            .map(|s| ResourceFilter::parse(s))
            .collect::<Result<_, _>>()
            .map_err(diag_err)?,
        ignore_paths: DiffOptions::ignore_path_regexes(&args.ignore_path).map_err(diag_err)?,
        context: args.context,
        // Two catalogs given whole (`--compiled-dir`, `--compile-command`):
        // links between their targets are read there.
        links_within_targets: false,
    })
}

/// Compiles the tree of one revision with `--compile-command`, which
/// writes `--compiled-dir` inside the tree, and returns that catalog
/// directory. A revision whose compile fails is an error naming the
/// revision, with the compiler's last lines, redacted as a diff is: the
/// compiler may quote the pull request's files.
fn compile_tree(
    args: &DiffArgs,
    command: &str,
    rev: &str,
    dir: &std::path::Path,
) -> anyhow::Result<PathBuf> {
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c")
        .arg(format!("{command} \"$@\""))
        .arg("strata-compile");
    let catalog = dir.join(&args.compiled_dir);
    let out = cmd
        .args(&args.compile_flags)
        // A review compiles what was committed: no secret is invented.
        .env(crate::refs::READ_ONLY_ENV, "1")
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| anyhow::anyhow!("cannot run the compiler for `{rev}`: {e}"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        let redactor =
            Redactor::new(&args.redact_key, !args.no_default_redact).map_err(diag_err)?;
        anyhow::bail!(
            "compiling revision `{rev}` failed ({}):\n{}",
            out.status,
            redactor.redact_text(&tail.join("\n"))
        );
    }
    if !catalog.is_dir() {
        anyhow::bail!(
            "compiling revision `{rev}` wrote no {}/ directory; pass --compiled-dir",
            args.compiled_dir.display()
        );
    }
    Ok(catalog)
}

/// The two revisions to compare: the flags, else what a `pull_request`
/// event says (the merge base of its base and head, as GitHub's "Files
/// changed" shows it, and its head).
fn revisions(args: &DiffArgs) -> anyhow::Result<(String, String)> {
    let event = match std::env::var_os("GITHUB_EVENT_PATH") {
        Some(p) if args.base.is_none() => {
            crate::github::PullRequest::from_event(std::path::Path::new(&p)).ok()
        }
        _ => None,
    };
    let head = match (&args.head, event.as_ref().and_then(|e| e.head_sha.clone())) {
        (Some(h), _) => h.clone(),
        (None, Some(h)) => h,
        (None, None) => "HEAD".to_string(),
    };
    if let Some(b) = &args.base {
        return Ok((b.clone(), head));
    }
    let Some(base) = event.and_then(|e| e.base_sha) else {
        anyhow::bail!(
            "nothing to compare: pass --catalogs OLD_DIR NEW_DIR or --base REF [--head REF] (in a pull_request workflow the base comes from GITHUB_EVENT_PATH)"
        );
    };
    let base = crate::commands::review::review_base(&args.repo, &base, &base, &head);
    Ok((base, head))
}
