//! `strata component compile PATH`: Commodore's `component compile` for
//! component authors, with golden testing (`--golden DIR` exits 1 with the
//! diff when the output differs, `--update-golden` rewrites DIR).

use crate::cli::eprintln;
use crate::cli::{diag_err, EXIT_FINDINGS};
use crate::commodore::component::{self, ComponentOptions, GoldenStatus};
use crate::fetch::jsonnet::JbOptions;
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[derive(Debug, Args)]
pub struct ComponentArgs {
    #[command(subcommand)]
    pub command: ComponentCommand,
}

#[derive(Debug, Subcommand)]
pub enum ComponentCommand {
    /// Compile a component's test instance into <output>/compiled/<instance> (Commodore's `component compile`)
    Compile(CompileArgs),
}

/// Golden testing, shared by `component compile` and `package compile`.
#[derive(Debug, Args, Clone)]
pub struct GoldenArgs {
    /// Compare the compiled output (the `compiled/` directory) with DIR byte
    /// for byte, e.g. tests/golden/<instance>; exit 1 with the diff when it
    /// differs. The output goes to a temporary directory (for component
    /// compile: unless -o is given).
    #[arg(long, value_name = "DIR")]
    pub golden: Option<PathBuf>,
    /// With --golden: replace DIR's contents with the compiled output
    #[arg(long, requires = "golden")]
    pub update_golden: bool,
}

#[derive(Debug, Args)]
pub struct CompileArgs {
    /// The component's directory (a repository, or a directory inside one)
    pub path: PathBuf,
    /// Values file, added as a class after the component's (repeatable)
    #[arg(short = 'f', long = "values", value_name = "FILE")]
    pub values: Vec<PathBuf>,
    /// Compile the component as this instance (`component as alias`)
    #[arg(short = 'a', long = "alias", value_name = "INSTANCE")]
    pub alias: Option<String>,
    /// Additional jsonnet search path (repeatable)
    #[arg(short = 'J', long = "search-paths", value_name = "DIR")]
    pub search_paths: Vec<PathBuf>,
    /// Where `compiled/<instance>` is written [default: ./]
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// The component's name [default: the directory's name without `component-`]
    #[arg(short = 'n', long = "name")]
    pub name: Option<String>,
    /// Do not install the jsonnetfile.json dependencies (use vendor/ as it
    /// is) nor fetch the Kapitan dependencies (helm charts, ...)
    #[arg(long)]
    pub no_fetch: bool,
    /// Install jsonnet dependencies only from repositories already cached
    #[arg(long, conflicts_with = "no_fetch")]
    pub offline: bool,
    #[command(flatten)]
    pub golden: GoldenArgs,
    /// Print nothing but errors and the golden diff
    #[arg(short, long)]
    pub quiet: bool,
    /// Read nothing outside the working directory but paths outside it
    /// given as flags (the component's class files, jsonnet imports and
    /// every compile input), and fetch no Kapitan dependency missing from
    /// the checkout, as `strata compile --confine` (on by default on a
    /// GitHub `pull_request*` event)
    #[arg(long)]
    pub confine: bool,
}

pub fn run(args: ComponentArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        ComponentCommand::Compile(a) => compile(a),
    }
}

fn compile(args: CompileArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let given: Vec<&Path> = std::iter::once(args.path.as_path())
        .chain(args.values.iter().map(PathBuf::as_path))
        .chain(args.search_paths.iter().map(PathBuf::as_path))
        .chain(args.output.as_deref())
        .collect();
    let confine =
        crate::commands::confine::working_tree("component compile", args.confine, &given)?;
    if let Some(c) = &confine {
        // The directories themselves (a component is a repository: its
        // `.git` is not walked); what the compile reads below them is
        // checked read by read.
        for p in &given {
            c.check(p).map_err(|e| anyhow::anyhow!("{e}"))?;
        }
    }
    let temp_out = if args.golden.golden.is_some() && args.output.is_none() {
        Some(crate::fswalk::private_temp_dir("strata-golden-")?)
    } else {
        None
    };
    let output = match (&temp_out, &args.output) {
        (Some(t), _) => t.path().to_path_buf(),
        (None, Some(o)) => o.clone(),
        (None, None) => PathBuf::from("."),
    };
    let c = confine.as_ref();
    if temp_out.is_none() {
        let compiled = output.join("compiled");
        crate::commands::confine::check_output_dir(c, "component compile", "output", &compiled)?;
    }
    check_golden_links(c, "component compile", &args.golden)?;
    let jsonnet = if args.no_fetch {
        None
    } else {
        Some(JbOptions {
            repos_dir: crate::commodore::absolute(&args.path).join("dependencies/.repos"),
            offline: args.offline,
            credentials: crate::commands::fetch::token_credentials(None, "x-access-token")?,
            ext_vars: Vec::new(),
            update: true,
            confine: confine.clone(),
        })
    };
    let report = component::compile_component(&ComponentOptions {
        path: args.path.clone(),
        values: args.values.clone(),
        alias: args.alias.clone(),
        search_paths: args.search_paths.clone(),
        output: output.clone(),
        name: args.name.clone(),
        parallelism: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        jsonnet,
        kapitan_cache: (!args.no_fetch).then(crate::commands::compile::dependency_cache),
        dependencies_output: Some(args.output.clone().unwrap_or_else(|| PathBuf::from("."))),
        confine,
    })
    .map_err(diag_err)?;
    if !args.quiet {
        for w in &report.warnings {
            eprintln!("warning: {w}");
        }
        let what = if report.instance == report.component {
            report.component.clone()
        } else {
            format!("{} as {}", report.component, report.instance)
        };
        eprintln!(
            "Compiled component {what} to {} in {:.2}s",
            report.compiled.display(),
            started.elapsed().as_secs_f64()
        );
    }
    match &args.golden.golden {
        Some(golden) => check_golden(golden, &output.join("compiled"), &args.golden, args.quiet),
        None => Ok(ExitCode::SUCCESS),
    }
}

/// When confined, the golden directory is read (its files are printed in
/// the diff) and, with --update-golden, replaced: a committed link in it
/// to a file of the runner printed that file, or had it overwritten.
pub fn check_golden_links(
    confine: Option<&crate::compile::confine::Confine>,
    command: &str,
    args: &GoldenArgs,
) -> anyhow::Result<()> {
    let Some(golden) = &args.golden else {
        return Ok(());
    };
    crate::commands::confine::check_input(confine, golden)?;
    if args.update_golden {
        crate::commands::confine::check_output_dir(confine, command, "--golden", golden)?;
    }
    Ok(())
}

/// Compares (or, with --update-golden, rewrites) the golden directory.
pub fn check_golden(
    golden: &Path,
    compiled: &Path,
    args: &GoldenArgs,
    quiet: bool,
) -> anyhow::Result<ExitCode> {
    if args.update_golden {
        component::update_golden(golden, compiled).map_err(diag_err)?;
        if !quiet {
            eprintln!("Updated golden files in {}", golden.display());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let report = component::compare_golden(golden, compiled).map_err(diag_err)?;
    let total = report.files.len();
    if report.is_clean() {
        if !quiet {
            eprintln!(
                "Golden files: {total} of {total} identical ({})",
                golden.display()
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    // Like `make golden-diff` (`git diff --no-index`): a plain unified
    // diff per file. Component tests compile with fake references, so the
    // files hold nothing secret.
    let mut out = String::new();
    for (path, status) in &report.files {
        let (old, new) = match status {
            GoldenStatus::Identical => continue,
            GoldenStatus::Differs => (
                read_lossy(&golden.join(path)),
                read_lossy(&compiled.join(path)),
            ),
            GoldenStatus::Missing => (read_lossy(&golden.join(path)), String::new()),
            GoldenStatus::Extra => (String::new(), read_lossy(&compiled.join(path))),
        };
        let diff = similar::TextDiff::from_lines(&old, &new);
        out.push_str(
            &diff
                .unified_diff()
                .context_radius(3)
                .header(&format!("golden/{path}"), &format!("compiled/{path}"))
                .to_string(),
        );
    }
    print!("{out}");
    for (path, status) in &report.files {
        let what = match status {
            GoldenStatus::Identical => continue,
            GoldenStatus::Differs => "differs",
            GoldenStatus::Missing => "missing from the output",
            GoldenStatus::Extra => "not in the golden files",
        };
        eprintln!("golden: {path}: {what}");
    }
    eprintln!(
        "Golden files: {} of {total} identical ({}); run again with --update-golden to accept the new output",
        report.identical(),
        golden.display()
    );
    Ok(ExitCode::from(EXIT_FINDINGS))
}

fn read_lossy(p: &Path) -> String {
    std::fs::read(p)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}
