//! `strata inventory`: render targets and print them as JSON or YAML.

use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct InventoryArgs {
    /// Inventory directory (holds classes/ and targets/)
    #[arg(long, default_value = "./inventory")]
    pub inventory_path: PathBuf,
}

pub fn run(_args: InventoryArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("the inventory engine is not built yet")
}
