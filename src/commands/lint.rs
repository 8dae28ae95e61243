//! `strata lint`: every inventory problem in one run, as text, JSON, GitHub
//! workflow commands or SARIF; exit 1 when a finding reaches `--fail-on`.

use crate::cli::{diag_err, render_diagnostic, render_github};
use crate::commands::inventory::InventoryFlags;
use crate::diagnostics::{Diagnostic, Severity};
use crate::lint::{self, LintOptions};
use clap::{Args, ValueEnum};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
    Github,
    Sarif,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    Error,
    Warning,
}

#[derive(Debug, Args)]
pub struct LintArgs {
    #[command(flatten)]
    pub inv: InventoryFlags,
    /// A compiled catalog to check for base64-encoded `?{vaultkv:...}` references
    #[arg(long, value_name = "DIR")]
    pub catalog: Option<PathBuf>,
    /// Kapitan's refs directory: report `?{...}` tags whose reference file is
    /// missing [default: ./refs (or .kapitan's compile refs-path) when it exists]
    #[arg(long, value_name = "DIR")]
    pub refs_path: Option<PathBuf>,
    /// Output format
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Exit 1 when a finding of this severity or worse exists
    #[arg(long, value_enum, default_value = "error")]
    pub fail_on: FailOn,
    /// Read nothing outside the working directory, as a review reads a pull
    /// request (on by default on a GitHub `pull_request*` event)
    #[arg(long)]
    pub confine: bool,
}

/// `opts` read as a review reads a pull request's tree with `--confine` or
/// on a pull request's event (the action runs `lint` and `inventory` there
/// too): a committed class or target linked to a file of the runner is
/// refused, not quoted in the log (probe 31,
/// lint-on-pull-request-reads-symlinked-class; `ci` did so since probe 30).
/// The flag is for workflows that check out a pull request under another
/// event (`issue_comment`, `workflow_run`), which the event name misses.
pub(crate) fn confined_on_pull_request(
    opts: crate::inventory::InventoryOptions,
    confine: bool,
) -> anyhow::Result<crate::inventory::InventoryOptions> {
    if !(confine || crate::commands::compile::pull_request_event()) || opts.confine.is_some() {
        return Ok(opts);
    }
    Ok(crate::inventory::InventoryOptions {
        confine: Some(std::env::current_dir()?.canonicalize()?),
        ..opts
    })
}

pub fn run(args: LintArgs) -> anyhow::Result<ExitCode> {
    let opts = confined_on_pull_request(args.inv.options("inventory")?, args.confine)?;
    let lint_opts = LintOptions {
        catalog: args.catalog.clone(),
        refs_path: args.refs_path.clone().or_else(|| {
            let d = crate::inventory::config::KapitanDefaults::load(std::path::Path::new("."))
                .ok()
                .and_then(|d| d.get_str("compile", "refs-path"))
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("./refs"));
            d.is_dir().then_some(d)
        }),
        ..LintOptions::default()
    };
    // The catalog and the refs directory are read as the classes are: a
    // committed `compiled -> /home/runner/x` had the runner's files
    // checked, and what they hold quoted in the findings (the refs path
    // may come from the pull request's `.kapitan`).
    let given: Vec<&std::path::Path> = [&args.catalog, &args.refs_path]
        .into_iter()
        .flatten()
        .map(PathBuf::as_path)
        .collect();
    let confine = crate::commands::confine::working_tree("lint", args.confine, &given)?;
    crate::commands::confine::check_inputs(
        confine.as_ref(),
        [&lint_opts.catalog, &lint_opts.refs_path]
            .into_iter()
            .flatten()
            .map(PathBuf::as_path),
    )?;
    let findings = lint::lint_path(&opts, &lint_opts).map_err(diag_err)?;
    let out = match args.format {
        Format::Text if crate::cli::color_for(&std::io::stdout()) => {
            crate::cli::colorize(&text(&findings))
        }
        Format::Text => crate::cli::actions_safe(&text(&findings)).into_owned(),
        Format::Json => serde_json::to_string_pretty(&json(&findings))? + "\n",
        Format::Github => findings.iter().map(render_github).collect(),
        Format::Sarif => serde_json::to_string_pretty(&sarif(&findings))? + "\n",
    };
    std::io::stdout().lock().write_all(out.as_bytes())?;
    let threshold = match args.fail_on {
        FailOn::Error => Severity::Error,
        FailOn::Warning => Severity::Warning,
    };
    Ok(if findings.iter().any(|d| d.severity >= threshold) {
        ExitCode::from(crate::cli::EXIT_FINDINGS)
    } else {
        ExitCode::SUCCESS
    })
}

fn text(findings: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in findings {
        let mut r = render_diagnostic(d);
        if !d.code.is_empty() {
            // `error[unused-class]: ...` like compilers print rule ids.
            if let Some(rest) = r.strip_prefix(&d.severity.to_string()) {
                r = format!("{}[{}]{}", d.severity, d.code, rest);
            }
        }
        out.push_str(&r);
    }
    let (e, w) = lint::counts(findings);
    out.push_str(&format!("{e} error(s), {w} warning(s)\n"));
    out
}

fn json(findings: &[Diagnostic]) -> serde_json::Value {
    let (e, w) = lint::counts(findings);
    serde_json::json!({
        "findings": findings,
        "summary": {"errors": e, "warnings": w},
    })
}

/// SARIF 2.1.0, as GitHub code scanning reads it.
fn sarif(findings: &[Diagnostic]) -> serde_json::Value {
    let level = |s: Severity| match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    };
    let rules: Vec<_> = lint::RULES
        .iter()
        .map(|(id, sev, desc)| {
            serde_json::json!({
                "id": id,
                "shortDescription": {"text": desc},
                "defaultConfiguration": {"level": level(*sev)},
            })
        })
        .collect();
    let results: Vec<_> = findings
        .iter()
        .map(|d| {
            let mut text = d.message.clone();
            for h in &d.hints {
                text.push_str(&format!("\nhint: {h}"));
            }
            let mut r = serde_json::json!({
                "ruleId": if d.code.is_empty() { "error" } else { d.code.as_str() },
                "level": level(d.severity),
                "message": {"text": text},
            });
            if let Some(f) = &d.file {
                let uri = f.to_string_lossy().replace('\\', "/");
                let uri = uri.strip_prefix("./").unwrap_or(&uri).to_string();
                let mut region = serde_json::Map::default();
                if let Some(l) = d.line {
                    region.insert("startLine".into(), l.max(1).into());
                }
                let mut phys = serde_json::json!({"artifactLocation": {"uri": uri}});
                if !region.is_empty() {
                    phys["region"] = serde_json::Value::Object(region);
                }
                r["locations"] = serde_json::json!([{"physicalLocation": phys}]);
            }
            r
        })
        .collect();
    serde_json::json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "strata",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "results": results,
        }],
    })
}
