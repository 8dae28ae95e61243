//! `strata review --base REF`: the pull-request review built locally, in
//! one step: base and head compiled from git objects (only the targets
//! whose fingerprints differ), diffed, linted, and the comment `strata ci`
//! would post printed on stdout. Also the compile flags that `diff --base`,
//! `ci` and `review` accept directly, as `compile` does.

use crate::cli::eprintln;
use crate::cli::{diag_err, render_diagnostic};
use crate::commands::comment::{self, GithubEnv, PostOptions, ReviewParts};
use crate::commands::inventory::InventoryFlags;
use crate::diff::redact::Redactor;
use crate::diff::DiffOptions;
use crate::github::body::{self, Revisions};
use crate::workspace::review::{self as wreview, Head, Review, ReviewRequest};
use crate::workspace::CompileFlags;
use clap::{Args, Parser};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `strata compile`'s flags that change a catalog, for commands that
/// compile revisions.
#[derive(Debug, Clone, Default, Args)]
pub struct RevisionFlags {
    /// Where inputs and imports are looked up [default: . lib, or .kapitan]
    #[arg(long = "search-paths", num_args = 1.., value_name = "DIR")]
    pub search_paths: Vec<PathBuf>,
    /// Targets compiled at once [default: number of CPUs]
    #[arg(long, value_name = "N")]
    pub parallelism: Option<usize>,
    /// YAML and JSON indentation [default: 2]
    #[arg(long, value_name = "N")]
    pub indent: Option<usize>,
    /// How YAML writes strings with line breaks: literal, folded or double-quotes
    #[arg(long = "yaml-multiline-string-style", value_name = "STYLE")]
    pub yaml_multiline_string_style: Option<String>,
    /// Write YAML nulls as nothing (`key:`) instead of `null`
    #[arg(long)]
    pub yaml_dump_null_as_empty: bool,
}

#[derive(Parser)]
#[command(name = "compile", no_binary_name = true)]
struct Trailing {
    #[command(flatten)]
    c: crate::commands::compile::CompileArgs,
}

/// The compile flags from the inventory flags, these flags and the
/// `strata compile` flags given after `--` (older usage; they win).
pub fn compile_flags(
    inv: &InventoryFlags,
    rev: &RevisionFlags,
    trailing: &[String],
) -> anyhow::Result<CompileFlags> {
    let mut f = CompileFlags {
        inventory_path: inv.inventory_path.clone(),
        enable_class_wildcards: inv.enable_class_wildcards,
        ignore_class_not_found: inv.ignore_class_not_found,
        ignore_class_not_found_regexp: inv.ignore_class_not_found_regexp.clone(),
        compose_node_name: inv.compose_node_name,
        search_paths: rev.search_paths.clone(),
        parallelism: rev.parallelism,
        indent: rev.indent,
        yaml_multiline_string_style: rev.yaml_multiline_string_style.clone(),
        yaml_dump_null_as_empty: rev.yaml_dump_null_as_empty,
        output_path: None,
        targets: Vec::new(),
        // A review never creates (nor reveals) a secret.
        refs_read_only: true,
        ..CompileFlags::default()
    };
    if trailing.is_empty() {
        return Ok(f);
    }
    let c = Trailing::try_parse_from(trailing)
        .map_err(|e| {
            anyhow::anyhow!(
                "compile flags after `--`: {}",
                e.to_string().lines().next().unwrap_or_default()
            )
        })?
        .c;
    if !c.labels.is_empty() || c.shard.is_some() || c.output_path.is_some() {
        anyhow::bail!(
            "compile flags after `--`: --labels, --shard and --output-path do not apply to a review; select targets with -t"
        );
    }
    if c.reveal {
        anyhow::bail!("a review never reveals secrets: remove --reveal from the compile flags");
    }
    let t = c.flags();
    f.targets = t.targets;
    f.python = t.python;
    f.jinja2_filters = t.jinja2_filters;
    f.refs_path = t.refs_path;
    f.embed_refs = t.embed_refs;
    if t.inventory_path.is_some() {
        f.inventory_path = t.inventory_path;
    }
    f.enable_class_wildcards |= t.enable_class_wildcards;
    f.ignore_class_not_found |= t.ignore_class_not_found;
    if !t.ignore_class_not_found_regexp.is_empty() {
        f.ignore_class_not_found_regexp = t.ignore_class_not_found_regexp;
    }
    f.compose_node_name |= t.compose_node_name;
    if !t.search_paths.is_empty() {
        f.search_paths = t.search_paths;
    }
    f.parallelism = t.parallelism.or(f.parallelism);
    f.indent = t.indent.or(f.indent);
    f.yaml_multiline_string_style = t
        .yaml_multiline_string_style
        .or(f.yaml_multiline_string_style);
    f.yaml_dump_null_as_empty |= t.yaml_dump_null_as_empty;
    Ok(f)
}

/// The review's diff settings: the defaults of `strata diff`.
pub fn diff_options() -> anyhow::Result<DiffOptions> {
    Ok(DiffOptions {
        redactor: Redactor::new(&[], true).map_err(diag_err)?,
        ..DiffOptions::default()
    })
}

/// [`diff_options`] with the secret values of the pull request's two
/// inventories (red41): a string under a secret-named parameter, or the
/// value of a `plain`/`base64` reference named there, that a template
/// copies under a neutral key or into a larger string (or encodes as
/// base64) is hidden wherever the diff shows it.
pub fn pr_diff_options(pr: &wreview::Pr, flags: &CompileFlags) -> anyhow::Result<DiffOptions> {
    let mut opts = diff_options()?;
    let values = crate::workspace::known::pr_known_values(pr, flags, &opts.redactor);
    opts.redactor = opts.redactor.with_known_values(&values);
    Ok(opts)
}

/// Builds the review of `base..head` with these diff settings and says on
/// stderr what it compiled.
pub fn build_with(req: &ReviewRequest, opts: &DiffOptions) -> anyhow::Result<Review> {
    let r = wreview::review(req, opts).map_err(diag_err)?;
    report(req, &r);
    Ok(r)
}

/// Says on stderr what a review compiled (and, with `STRATA_TIMINGS=1`,
/// nothing more: the caller prints the timings).
pub fn report(req: &ReviewRequest, r: &Review) {
    let mut line = format!(
        "review: compiled {} base and {} head target(s)",
        r.compiled.0, r.compiled.1
    );
    if req.incremental {
        line.push_str(&format!(", {} unchanged (same fingerprint)", r.unchanged));
        if let Some((t, why)) = r.always.first() {
            line.push_str(&format!(
                "; {} always compiled (e.g. `{t}`: {why})",
                r.always.len()
            ));
        }
        line.push_str(&format!(
            "; base: {} of {} target(s) rendered{}",
            r.base_rendered.0,
            r.base_rendered.1,
            match &r.full_reason {
                Some(why) => format!(", all prepared: {why}"),
                None => String::new(),
            }
        ));
    }
    eprintln!("{line}");
}

/// The targets whose apply order differs between the two catalogs, and
/// how many changed targets were compared (a warning when they cannot be).
pub fn order_changes(r: &Review) -> (Vec<crate::order::OrderChange>, usize) {
    r.order_changes().unwrap_or_else(|e| {
        eprintln!("warning: cannot compare the apply order: {e}");
        (Vec::new(), 0)
    })
}

#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// The base revision (a branch, tag or commit); the review starts where the head forked off it
    #[arg(long, value_name = "REF")]
    pub base: String,
    /// The head revision
    #[arg(long, value_name = "REF", default_value = "HEAD")]
    pub head: String,
    #[command(flatten)]
    pub inv: InventoryFlags,
    #[command(flatten)]
    pub rev: RevisionFlags,
    /// Review only these targets
    #[arg(short = 't', long = "targets", num_args = 1.., value_name = "TARGET")]
    pub targets: Vec<String>,
    /// Compile every target on both sides (no fingerprints)
    #[arg(long)]
    pub full: bool,
    /// Also write the full report (as the job summary has it) to FILE
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Name in the comment's hidden marker
    #[arg(long, value_name = "NAME", default_value = body::DEFAULT_MARKER)]
    pub marker: String,
    /// Flags passed to `strata compile` (older usage; the same flags are accepted directly)
    #[arg(last = true, value_name = "COMPILE_FLAG")]
    pub compile_flags: Vec<String>,
}

pub fn run(args: ReviewArgs) -> anyhow::Result<ExitCode> {
    if !body::valid_marker_name(&args.marker) {
        anyhow::bail!(
            "invalid --marker `{}`: use letters, digits, `.`, `_`, `:`, `/` and single `-`",
            args.marker
        );
    }
    // A review compiles the revisions confined already; its report on a
    // pull request goes only where the working tree holds no link out (a
    // committed `strata-review.md -> /home/runner/.bashrc` was overwritten,
    // as `comment`'s).
    if let Some(o) = &args.output {
        let c = crate::commands::confine::working_tree("review", false, &[o.as_path()])?;
        crate::commands::confine::check_output(c.as_ref(), "review", "--output", o)?;
    }
    let repo = Path::new(".");
    let head = crate::diff::git::resolve(repo, &args.head).map_err(diag_err)?;
    let base = crate::diff::git::resolve(repo, &args.base).map_err(diag_err)?;
    let base = review_base(repo, &args.base, &base, &head);
    let flags = compile_flags(&args.inv, &args.rev, &args.compile_flags)?;
    let inv = args.inv.options("inventory")?;
    let req = ReviewRequest {
        repo,
        base: base.clone(),
        head: Head::Rev(head.clone()),
        flags,
        targets: args.targets.clone(),
        incremental: !args.full,
    };
    let timings = std::env::var("STRATA_TIMINGS").is_ok_and(|v| !v.is_empty() && v != "0");
    // Both sides read and rendered once, for lint and review alike.
    let opened = wreview::open(&req, Some(&inv));
    // As on a pull request: the findings the change adds, the others counted.
    let scratch = tempfile::tempdir()?;
    let (findings, base_findings) =
        crate::commands::ci::pr_lint(&opened, &inv, &base, scratch.path(), timings)?;
    let shown = match &base_findings {
        Some(b) => {
            crate::lint::baseline::partition(b, &findings, crate::commands::ci::diagnostic_key).new
        }
        None => findings.clone(),
    };
    for d in &shown {
        eprint!("{}", crate::cli::actions_safe(&render_diagnostic(d)));
    }
    let pr = opened.map_err(diag_err)?;
    let diff_opts = pr_diff_options(&pr, &req.flags)?;
    let r = pr.finish(&diff_opts).map_err(diag_err)?;
    report(&req, &r);
    if timings {
        for (what, d) in &r.timings {
            eprintln!("timing: {what}: {:.3}s", d.as_secs_f64());
        }
    }
    let (order, _) = order_changes(&r);
    let lint = comment::findings(&findings);
    let lint_base = base_findings.as_deref().map(comment::findings);
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| scratch.path().join("strata-review.md"));
    let github = GithubEnv {
        api_url: String::new(),
        repository: None,
        token: None,
        step_summary: None,
    };
    comment::post(
        &ReviewParts {
            diff: &r.diff,
            lint: &lint,
            lint_base: lint_base.as_deref(),
            order: &order,
            revs: Revisions {
                base_sha: Some(base),
                head_sha: Some(head),
                run_url: None,
            },
        },
        &PostOptions {
            output: &output,
            marker: &args.marker,
            dry_run: true,
            pr: None,
            github: &github,
        },
    )?;
    std::io::stdout().lock().flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Where a review of `head` against `base` starts: their merge base, or
/// `base` itself when there is none in the clone. In a shallow clone
/// (`actions/checkout`'s default `fetch-depth: 1`, or 2) the merge base is
/// usually cut off, and the review then showed every change made on the
/// base branch since the fork as reverted by the pull request, with no
/// word of why (probe 44): that case is warned about, once per run.
pub(crate) fn review_base(repo: &Path, shown: &str, base: &str, head: &str) -> String {
    if let Some(b) = crate::diff::git::merge_base(repo, base, head) {
        return b;
    }
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if crate::diff::git::is_shallow(repo)
        && !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed)
    {
        eprintln!(
            "warning: the base `{shown}` and the head have no common ancestor in this clone, which is shallow: the review compares with `{shown}` itself, so changes made on it since the head forked off show as reverted by the head; check out with `fetch-depth: 0` (actions/checkout) or `git fetch --unshallow`"
        );
    }
    base.to_string()
}
