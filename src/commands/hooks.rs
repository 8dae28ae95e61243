//! `strata hooks install`: puts strata's git pre-commit hook into the
//! repository's hooks directory and says what it did.

use crate::cli::diag_err;
use crate::hooks::{self, InstallOutcome};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct HooksArgs {
    #[command(subcommand)]
    pub command: HooksCommand,
}

#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// Install the pre-commit hook (strata lint + strata compile --check) into
    /// the repository's hooks directory (core.hooksPath and worktrees respected)
    Install(InstallArgs),
}

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// Replace a pre-commit hook that strata did not write, keeping it as
    /// pre-commit.strata-backup
    #[arg(long)]
    pub force: bool,
    /// A directory inside the repository [default: the current directory]
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,
}

pub fn run(args: HooksArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        HooksCommand::Install(a) => install(a),
    }
}

fn install(args: InstallArgs) -> anyhow::Result<ExitCode> {
    let outcome = hooks::install(&args.repo, args.force).map_err(diag_err)?;
    match outcome {
        InstallOutcome::Installed { path } => {
            println!("installed the strata pre-commit hook: {}", path.display())
        }
        InstallOutcome::Unchanged { path } => println!(
            "the strata pre-commit hook is already installed: {}",
            path.display()
        ),
        InstallOutcome::Updated { path } => {
            println!("updated the strata pre-commit hook: {}", path.display())
        }
        InstallOutcome::Replaced { path, backup } => println!(
            "installed the strata pre-commit hook: {} (the previous hook is kept as {})",
            path.display(),
            backup.display()
        ),
    }
    Ok(ExitCode::SUCCESS)
}
