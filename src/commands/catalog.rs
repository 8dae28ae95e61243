//! `strata catalog compile <cluster-id>`: Commodore's `catalog compile` on
//! a working directory whose dependencies are already checked out (local
//! mode), with cluster facts from `--cluster-file` or the Lieutenant API.

use crate::cli::diag_err;
use crate::commodore::{self, CatalogOptions, ClusterInfo, Layout};
use clap::{Args, Subcommand, ValueEnum};
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
    /// After a successful compile, commit catalog/manifests and catalog/refs
    /// to the cluster's catalog repository (`gitRepo.url`, or --catalog-repo)
    #[arg(long)]
    pub push: bool,
    #[command(flatten)]
    pub publish: crate::commands::push::PublishFlags,
}

/// The cluster's catalog repository URL, as Commodore wrote it into
/// `inventory/classes/params/cluster.yml` (`parameters.cluster.catalog_url`).
fn catalog_url(layout: &Layout) -> anyhow::Result<String> {
    let path = layout.work_dir.join("inventory/classes/params/cluster.yml");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    let doc = crate::yaml::load_one(&text)
        .map_err(|e| anyhow::anyhow!("invalid yaml in {}: {e}", path.display()))?
        .map(|n| n.to_value())
        .unwrap_or_default();
    doc.get_path(&["parameters", "cluster", "catalog_url"])
        .and_then(|v| v.as_str())
        .map(str::to_string)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "{} has no parameters.cluster.catalog_url: pass --catalog-repo URL",
                path.display()
            )
        })
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
    if args.push {
        let url = match &args.publish.catalog_repo {
            Some(u) => u.clone(),
            None => catalog_url(&layout)?,
        };
        return crate::commands::push::publish_catalog(
            &args.publish,
            layout.work_dir.join("catalog"),
            crate::publish::Layout::Commodore,
            &url,
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// What `strata inventory <VIEW>` lists from a Commodore working directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DependencyView {
    Components,
    Packages,
    Show,
}

/// Discovers the working directory's dependencies (setting up symlinks
/// and targets as `catalog compile` does) and prints them.
pub fn show_dependencies(
    view: DependencyView,
    dir: &std::path::Path,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let layout = Layout::new(dir);
    let (cluster, _) = commodore::read_cluster_and_tenant(&layout).map_err(diag_err)?;
    let deps = commodore::discover(dir, &cluster).map_err(diag_err)?;
    for w in &deps.warnings {
        eprintln!("warning: {w}");
    }
    let mut instances: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (i, c) in &deps.instances {
        instances.entry(c.clone()).or_default().push(i.clone());
    }
    if json {
        let spec = |s: &commodore::DependencySpec| serde_json::json!({"url": s.url, "version": s.version, "path": s.path});
        let comps: serde_json::Map<String, serde_json::Value> = deps
            .components
            .iter()
            .map(|(n, s)| {
                let mut v = spec(s);
                let insts: serde_json::Map<String, serde_json::Value> = instances
                    .get(n)
                    .into_iter()
                    .flatten()
                    .map(|i| (i.clone(), spec(&deps.instance_specs[i])))
                    .collect();
                v["instances"] = serde_json::Value::Object(insts);
                (n.clone(), v)
            })
            .collect();
        let pkgs: serde_json::Map<String, serde_json::Value> = deps
            .packages
            .iter()
            .map(|(n, s)| (n.clone(), spec(s)))
            .collect();
        let out = match view {
            DependencyView::Components => serde_json::Value::Object(comps),
            DependencyView::Packages => serde_json::Value::Object(pkgs),
            DependencyView::Show => serde_json::json!({
                "cluster": cluster,
                "components": comps,
                "packages": pkgs,
            }),
        };
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    let fmt = |s: &commodore::DependencySpec| {
        let path = if s.path.is_empty() {
            String::new()
        } else {
            format!(" (path {})", s.path)
        };
        format!("{} @ {}{path}", s.url, s.version)
    };
    if matches!(view, DependencyView::Packages | DependencyView::Show) {
        println!("Packages:");
        for (n, s) in &deps.packages {
            println!("  {n}: {}", fmt(s));
        }
    }
    if matches!(view, DependencyView::Components | DependencyView::Show) {
        println!("Components:");
        for (n, s) in &deps.components {
            println!("  {n}: {}", fmt(s));
            for i in instances.get(n).into_iter().flatten() {
                if i != n {
                    println!("    instance {i}: {}", fmt(&deps.instance_specs[i]));
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
