//! `strata package compile PATH TEST_CLASS`: Commodore's `package compile`
//! for configuration packages, with golden testing (`--golden DIR` exits 1
//! with the diff when the output differs, `--update-golden` rewrites DIR).

use crate::cli::diag_err;
use crate::cli::eprintln;
use crate::commands::component::{check_golden, GoldenArgs};
use crate::commodore::package::{self, PackageOptions};
use crate::fetch::{NoProgress, Progress};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[derive(Debug, Args)]
pub struct CompileArgs {
    /// The configuration package's directory (its name, without
    /// `package-`, is the package name)
    pub path: PathBuf,
    /// The test class: a file in the package, e.g. tests/defaults.yml
    pub test_class: String,
    /// Values file, added as a class before the test class (repeatable)
    #[arg(short = 'f', long = "values", value_name = "FILE")]
    pub values: Vec<PathBuf>,
    /// Reuse the working directory (--tmp-dir) as it is: fetch no
    /// component; components missing in its dependencies/ are skipped
    #[arg(long)]
    pub local: bool,
    /// Do not install the components' jsonnet (and Kapitan) dependencies
    #[arg(
        short = 'F',
        long = "no-fetch-dependencies",
        overrides_with = "fetch_dependencies"
    )]
    pub no_fetch_dependencies: bool,
    /// Install the components' jsonnet and Kapitan dependencies (the default)
    #[arg(long = "fetch-dependencies", overrides_with = "no_fetch_dependencies")]
    pub fetch_dependencies: bool,
    /// Keep the temporary working directory (its path is printed)
    #[arg(short = 'k', long = "keep-dir", overrides_with = "no_keep_dir")]
    pub keep_dir: bool,
    /// Remove the temporary working directory afterwards (the default)
    #[arg(long = "no-keep-dir", overrides_with = "keep_dir")]
    pub no_keep_dir: bool,
    /// The working directory to use (kept afterwards; pass it again with
    /// --local to recompile without fetching)
    #[arg(long = "tmp-dir", value_name = "PATH")]
    pub tmp_dir: Option<PathBuf>,
    /// Fetch nothing: use only repositories already in the working
    /// directory's dependencies/.repos
    #[arg(long)]
    pub offline: bool,
    #[command(flatten)]
    pub golden: GoldenArgs,
    /// Instances compiled at once [default: number of CPUs]
    #[arg(short = 'p', long, value_name = "N")]
    pub parallelism: Option<usize>,
    /// Print nothing but errors and the golden diff
    #[arg(short, long)]
    pub quiet: bool,
    /// Compile as a pull request's compile: read nothing outside the
    /// working directory (and paths outside it given as flags), no class
    /// linked out of it, and fetch no component or dependency from this
    /// machine or its network, as `catalog compile --confine` (on by
    /// default on a GitHub `pull_request*` event)
    #[arg(long)]
    pub confine: bool,
}

pub fn compile(args: CompileArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let given: Vec<&Path> = std::iter::once(args.path.as_path())
        .chain(args.values.iter().map(PathBuf::as_path))
        .chain(args.tmp_dir.as_deref())
        .collect();
    let confine = crate::commands::confine::working_tree("package compile", args.confine, &given)?;
    if let Some(c) = &confine {
        // The package is a repository: its `.git` is not walked, what the
        // compile reads below it is checked read by read (as `component
        // compile`).
        for p in &given {
            c.check(p).map_err(|e| anyhow::anyhow!("{e}"))?;
        }
    }
    // A golden check compiles beside the package, not into it.
    let temp_out = match &args.golden.golden {
        Some(_) => Some(crate::fswalk::private_temp_dir("strata-golden-")?),
        None => None,
    };
    let output = match &temp_out {
        Some(t) => t.path().join("compiled"),
        None => crate::commodore::absolute(&args.path).join("compiled"),
    };
    let c = confine.as_ref();
    if temp_out.is_none() {
        crate::commands::confine::check_output_dir(c, "package compile", "output", &output)?;
    }
    crate::commands::component::check_golden_links(c, "package compile", &args.golden)?;
    let progress: Box<dyn Progress> = if args.quiet {
        Box::new(NoProgress)
    } else {
        crate::commands::fetch::progress_reporter()
    };
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let report = package::compile_package(
        &PackageOptions {
            path: args.path.clone(),
            test_class: args.test_class.clone(),
            values: args.values.clone(),
            local: args.local,
            fetch_dependencies: !args.no_fetch_dependencies,
            tmp_dir: args.tmp_dir.clone(),
            keep_dir: args.keep_dir,
            output: output.clone(),
            offline: args.offline,
            credentials: crate::commands::fetch::token_credentials(None, "x-access-token")?,
            parallelism: args.parallelism.unwrap_or(cpus).max(1),
            kapitan_dependencies: Some(crate::commands::compile::dependency_cache()),
            confine,
        },
        progress.as_ref(),
    )
    .map_err(diag_err)?;
    drop(progress);
    if !args.quiet {
        for w in &report.warnings {
            eprintln!("warning: {w}");
        }
        if let (Some(dir), None) = (&report.kept, &args.tmp_dir) {
            eprintln!(
                "Compilation working directory: {}. Specify `--tmp-dir={}`, if you want to use local mode for subsequent compilations.",
                dir.display(),
                dir.display()
            );
        }
        eprintln!(
            "Compiled package {} ({} instances: {}) to {} in {:.2}s",
            report.package,
            report.instances.len(),
            report.instances.join(", "),
            output.display(),
            started.elapsed().as_secs_f64()
        );
    }
    match &args.golden.golden {
        Some(golden) => check_golden(golden, &output, &args.golden, args.quiet),
        None => Ok(ExitCode::SUCCESS),
    }
}
