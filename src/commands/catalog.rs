//! `strata catalog compile <cluster-id>`: Commodore's `catalog compile` on
//! a working directory whose dependencies are already checked out (local
//! mode), with cluster facts from `--cluster-file` or the Lieutenant API.

use crate::cli::diag_err;
use crate::commodore::{self, CatalogOptions, ClusterInfo, Layout};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Debug, Args)]
pub struct CatalogArgs {
    #[command(subcommand)]
    pub command: CatalogCommand,
}

#[derive(Debug, Subcommand)]
pub enum CatalogCommand {
    /// Compile a cluster's catalog into catalog/manifests and catalog/refs
    Compile(CompileArgs),
}

#[derive(Debug, Args)]
pub struct CompileArgs {
    /// The cluster's id (must match inventory/classes/params/cluster.yml)
    pub cluster_id: String,
    /// The working directory (holds inventory/, dependencies/, catalog/)
    #[arg(
        short = 'd',
        long = "working-dir",
        value_name = "DIR",
        default_value = "."
    )]
    pub working_dir: PathBuf,
    /// Use the dependencies already in the working directory (the only mode strata has)
    #[arg(long)]
    pub local: bool,
    /// Lieutenant-style cluster object (JSON or YAML) to render params/cluster.yml from
    #[arg(long, value_name = "FILE")]
    pub cluster_file: Option<PathBuf>,
    /// Lieutenant API URL (http:// only) to read the cluster and tenant from
    #[arg(long, env = "COMMODORE_API_URL", value_name = "URL")]
    pub api_url: Option<String>,
    /// Lieutenant API token
    #[arg(
        long,
        env = "COMMODORE_API_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    pub api_token: Option<String>,
    /// Instances compiled at once [default: number of CPUs]
    #[arg(short = 'p', long, value_name = "N")]
    pub parallelism: Option<usize>,
    /// Print nothing but errors
    #[arg(long)]
    pub quiet: bool,
}

pub fn run(args: CatalogArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        CatalogCommand::Compile(a) => compile(a),
    }
}

fn compile(args: CompileArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let layout = Layout::new(&args.working_dir);
    let info = if let Some(f) = &args.cluster_file {
        Some(ClusterInfo::load(f).map_err(diag_err)?)
    } else if let Some(url) = &args.api_url {
        Some(
            commodore::api::load_cluster(url, args.api_token.as_deref(), &args.cluster_id)
                .map_err(diag_err)?,
        )
    } else {
        None
    };
    if let Some(info) = &info {
        let id = info.id().map_err(diag_err)?;
        if id != args.cluster_id {
            anyhow::bail!(
                "the cluster object is for {id}, but compilation was requested for {}",
                args.cluster_id
            );
        }
        info.write_params(&layout).map_err(diag_err)?;
    }
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let report = commodore::compile_catalog(&CatalogOptions {
        work_dir: layout.work_dir.clone(),
        cluster_id: args.cluster_id.clone(),
        parallelism: args.parallelism.unwrap_or(cpus),
    })
    .map_err(diag_err)?;
    for w in &report.warnings {
        eprintln!("warning: {w}");
    }
    if !args.quiet {
        eprintln!(
            "Compiled catalog of {} ({} instances, {} secret references) in {:.2}s",
            args.cluster_id,
            report.instances.len(),
            report.refs,
            started.elapsed().as_secs_f64()
        );
    }
    Ok(ExitCode::SUCCESS)
}
