//! `strata comment`: post the diff summary and lint findings on the pull
//! request as one comment, kept up to date in place; write the full report
//! to the job summary and a file. A fork's read-only token falls back to
//! annotations and the job summary.

use crate::cli::eprintln;
use crate::cli::{diag_err, render_github};
use crate::diagnostics::{Diagnostic, Severity};
use crate::github::body::{self, Revisions, COMMENT_LIMIT, SUMMARY_LIMIT};
use crate::github::{self, Client, LintFinding, Outcome, PullRequest};
use clap::Args;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct CommentArgs {
    /// `strata diff --format json` output (`-` for standard input)
    #[arg(long, value_name = "FILE")]
    pub diff: Option<PathBuf>,
    /// `strata lint --format json` output
    #[arg(long, value_name = "FILE")]
    pub lint: Option<PathBuf>,
    /// `strata lint --format json` output for the base revision: the
    /// comment then shows the findings the pull request adds (and, collapsed,
    /// fixes) and only counts the ones the base already had
    #[arg(long, value_name = "FILE", requires = "lint")]
    pub lint_base: Option<PathBuf>,
    /// The base and head catalogs: targets whose kapp apply order changed
    /// get the new order as a Mermaid graph in the comment
    #[arg(long, num_args = 2, value_names = ["OLD_DIR", "NEW_DIR"])]
    pub order_catalogs: Option<Vec<PathBuf>>,
    /// Where to write the full report (upload it as an artifact)
    #[arg(long, value_name = "FILE", default_value = "strata-review.md")]
    pub output: PathBuf,
    /// Name in the hidden marker: one comment per name (e.g. one per cluster in a matrix job)
    #[arg(long, value_name = "NAME", default_value = body::DEFAULT_MARKER)]
    pub marker: String,
    /// Print the comment instead of posting it
    #[arg(long)]
    pub dry_run: bool,
    /// Read the reports and catalogs, and write --output, only inside the
    /// working directory (paths outside it given as flags excepted): no
    /// committed symlink may lead out (on by default on a GitHub
    /// `pull_request*` event)
    #[arg(long)]
    pub confine: bool,
    #[arg(long, env = "GITHUB_EVENT_PATH", hide = true)]
    pub event_path: Option<PathBuf>,
    #[command(flatten)]
    pub github: GithubEnv,
}

/// What GitHub Actions tells a step through its environment, as hidden
/// flags (so tests can pass them too).
#[derive(Debug, Args)]
pub struct GithubEnv {
    #[arg(
        long,
        env = "GITHUB_API_URL",
        default_value = "https://api.github.com",
        hide = true
    )]
    pub api_url: String,
    #[arg(long, env = "GITHUB_REPOSITORY", hide = true)]
    pub repository: Option<String>,
    #[arg(long, env = "GITHUB_TOKEN", hide = true, hide_env_values = true)]
    pub token: Option<String>,
    #[arg(long, env = "GITHUB_STEP_SUMMARY", hide = true)]
    pub step_summary: Option<PathBuf>,
}

pub fn run(args: CommentArgs) -> anyhow::Result<ExitCode> {
    if !body::valid_marker_name(&args.marker) {
        anyhow::bail!(
            "invalid --marker `{}`: use letters, digits, `.`, `_`, `:`, `/` and single `-`",
            args.marker
        );
    }
    let mut given: Vec<&Path> = [&args.diff, &args.lint, &args.lint_base]
        .into_iter()
        .flatten()
        .map(PathBuf::as_path)
        .chain(args.order_catalogs.iter().flatten().map(PathBuf::as_path))
        .collect();
    let inputs = given.len();
    given.push(&args.output);
    let confine = crate::commands::confine::working_tree("comment", args.confine, &given)?;
    crate::commands::confine::check_inputs(confine.as_ref(), given[..inputs].iter().copied())?;
    crate::commands::confine::check_output(confine.as_ref(), "comment", "--output", &args.output)?;
    let diff = match &args.diff {
        Some(p) => github::read_diff(p).map_err(diag_err)?,
        None => Default::default(),
    };
    let lint = match &args.lint {
        Some(p) => github::read_lint(p).map_err(diag_err)?,
        None => Vec::new(),
    };
    let lint_base = match &args.lint_base {
        Some(p) => Some(github::read_lint(p).map_err(diag_err)?),
        None => None,
    };
    let pr = match &args.event_path {
        Some(p) if !args.dry_run || p.exists() => {
            Some(PullRequest::from_event(p).map_err(diag_err)?)
        }
        _ => None,
    };
    let order = match args.order_catalogs.as_deref() {
        Some([old, new]) => {
            for dir in [old, new] {
                if !dir.is_dir() {
                    anyhow::bail!(
                        "--order-catalogs: {} is not a directory (pass the base and head compiled catalogs)",
                        dir.display()
                    );
                }
            }
            crate::order::changed_orders(old, new, &crate::order::Options::default()).map_err(
                |e| anyhow::anyhow!("cannot read the catalogs for --order-catalogs: {e}"),
            )?
        }
        _ => Vec::new(),
    };
    let revs = Revisions {
        base_sha: pr.as_ref().and_then(|p| p.base_sha.clone()),
        head_sha: pr.as_ref().and_then(|p| p.head_sha.clone()),
        run_url: Revisions::run_url_from_env(&|k| std::env::var(k).ok()),
    };
    post(
        &ReviewParts {
            diff: &diff,
            lint: &lint,
            lint_base: lint_base.as_deref(),
            order: &order,
            revs,
        },
        &PostOptions {
            output: &args.output,
            marker: &args.marker,
            dry_run: args.dry_run,
            pr,
            github: &args.github,
        },
    )?;
    Ok(ExitCode::SUCCESS)
}

/// What a review comment is made of.
pub struct ReviewParts<'a> {
    pub diff: &'a crate::diff::CatalogDiff,
    pub lint: &'a [LintFinding],
    /// The base's findings: only the ones the pull request adds are shown
    /// (and annotated); `None` shows every finding.
    pub lint_base: Option<&'a [LintFinding]>,
    pub order: &'a [crate::order::OrderChange],
    pub revs: Revisions,
}

/// Where it goes.
pub struct PostOptions<'a> {
    /// The full report (the artifact).
    pub output: &'a Path,
    pub marker: &'a str,
    /// Print the comment on stdout instead of posting it.
    pub dry_run: bool,
    pub pr: Option<PullRequest>,
    pub github: &'a GithubEnv,
}

/// Writes the full report, then posts (or prints) the comment and writes
/// the job summary: what `strata comment` does, for `ci` and the local
/// review to call with values in memory.
pub fn post(parts: &ReviewParts, opts: &PostOptions) -> anyhow::Result<()> {
    let (diff, lint, order, revs) = (parts.diff, parts.lint, parts.order, &parts.revs);
    let lint_base = parts.lint_base;
    let full = body::build_review(diff, lint, lint_base, order, revs, None, usize::MAX);
    std::fs::write(opts.output, &full.markdown)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", opts.output.display()))?;
    let comment = body::build_review(
        diff,
        lint,
        lint_base,
        order,
        revs,
        Some(opts.marker),
        COMMENT_LIMIT,
    );
    if opts.dry_run {
        std::io::stdout()
            .lock()
            .write_all(crate::cli::actions_safe(&comment.markdown).as_bytes())?;
        return Ok(());
    }
    let need = |v: &Option<String>, name: &'static str| {
        v.clone()
            .ok_or_else(|| diag_err(github::GithubError::MissingEnv { name }))
    };
    let repo = need(&opts.github.repository, "GITHUB_REPOSITORY")?;
    let token = need(&opts.github.token, "GITHUB_TOKEN")?;
    let pr = opts.pr.as_ref().ok_or_else(|| {
        diag_err(github::GithubError::MissingEnv {
            name: "GITHUB_EVENT_PATH",
        })
    })?;

    let mut notice = None;
    if pr.from_fork {
        notice = Some("This pull request comes from a fork, whose token cannot comment: the review is in this job summary and the lint findings are annotations.".to_string());
    } else {
        let client = Client::new(&opts.github.api_url, &repo, &token).map_err(diag_err)?;
        match github::publish(&client, pr.number, opts.marker, &comment.markdown) {
            Ok(Outcome::Created(id)) => eprintln!("created comment {id} on #{}", pr.number),
            Ok(Outcome::Updated(id)) => eprintln!("updated comment {id} on #{}", pr.number),
            Ok(Outcome::Unchanged(id)) => {
                eprintln!("comment {id} on #{} is up to date", pr.number)
            }
            Err(e) if e.is_forbidden() => {
                notice = Some(format!("The token cannot comment on this pull request ({e}): the review is in this job summary and the lint findings are annotations."));
            }
            Err(e) => return Err(diag_err(e)),
        }
    }
    if !comment.omitted.is_empty() {
        eprintln!(
            "{} diff(s) left out of the comment to fit; full report in {}",
            comment.omitted.len(),
            opts.output.display()
        );
    }
    if let Some(n) = &notice {
        // The notice quotes the server's answer: escaped as a workflow
        // command's data (a carriage return in a 403 message started a
        // command of the server's choosing, `\r::error file=...::` or
        // `\r::add-mask::`, and `%0A` became a line break; probe 41).
        let mut out = render_github(
            &Diagnostic::new(Severity::Info, n.clone()).with_code("strata review".to_string()),
        );
        // Annotations show what the pull request adds, like the comment.
        let shown = match lint_base {
            Some(base) => crate::lint::baseline::partition(base, lint, body::finding_key).new,
            None => lint.to_vec(),
        };
        for f in &shown {
            out.push_str(&render_github(&to_diagnostic(f)));
        }
        std::io::stdout().lock().write_all(out.as_bytes())?;
    }
    if let Some(path) = &opts.github.step_summary {
        let mut report = body::build_review(
            diff,
            lint,
            lint_base,
            order,
            revs,
            None,
            SUMMARY_LIMIT - 1024,
        )
        .markdown;
        if let Some(n) = &notice {
            report = body::with_notice(n, &report);
        }
        append(path, &report)?;
    }
    Ok(())
}

/// Lint findings as the comment reads them (the same fields `strata lint
/// --format json` writes).
pub fn findings(diags: &[Diagnostic]) -> Vec<LintFinding> {
    diags
        .iter()
        .filter_map(|d| serde_json::to_value(d).ok())
        .filter_map(|v| serde_json::from_value(v).ok())
        .collect()
}

fn append(path: &Path, text: &str) -> anyhow::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| anyhow::anyhow!("cannot write the job summary {}: {e}", path.display()))?;
    f.write_all(text.as_bytes())
        .map_err(|e| anyhow::anyhow!("cannot write the job summary {}: {e}", path.display()))?;
    Ok(())
}

fn to_diagnostic(f: &LintFinding) -> Diagnostic {
    let sev = match f.severity.as_str() {
        "error" => Severity::Error,
        "warning" => Severity::Warning,
        _ => Severity::Info,
    };
    let mut d = Diagnostic::new(sev, f.message.clone()).with_code(f.code.clone());
    if let Some(file) = &f.file {
        d = d.with_file(file);
    }
    if let Some(l) = f.line {
        d = d.with_line(l);
    }
    d
}
