//! `strata catalog compile <cluster-id>`: Commodore's `catalog compile`,
//! with cluster facts from `--cluster-file` or the Lieutenant API: the
//! configuration, packages and components fetched from git in Commodore's
//! order, or (`--local`) taken as they are in the working directory.

use crate::cli::diag_err;
use crate::cli::eprintln;
use crate::commodore::{self, CatalogOptions, ClusterInfo, Layout};
use crate::fetch::jsonnet::JbOptions;
use crate::fetch::{self, Dependency, FetchOptions, NoProgress, Progress};
use clap::{Args, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};
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
    /// Use the configuration and dependencies already in the working
    /// directory instead of fetching them from git
    #[arg(long)]
    pub local: bool,
    /// Revision of the global configuration [default: globalGitRepoRevision
    /// of the cluster or tenant, else the remote's default branch]
    #[arg(long, value_name = "REV")]
    pub global_repo_revision_override: Option<String>,
    /// Revision of the tenant configuration [default: tenantGitRepoRevision
    /// of the cluster or tenant, else the remote's default branch]
    #[arg(long, value_name = "REV")]
    pub tenant_repo_revision_override: Option<String>,
    /// Fetch nothing: use the repositories already in dependencies/.repos;
    /// fail when one is missing
    #[arg(long, conflicts_with = "local")]
    pub offline: bool,
    /// Discard local edits in the configuration and dependency checkouts
    #[arg(long, conflicts_with = "local")]
    pub force: bool,
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
    /// Compile as a pull request's compile: read nothing outside the
    /// working directory (and a --working-dir outside it), no class linked
    /// out of it, and fetch no component, package or Kapitan dependency
    /// from this machine (`file://`, a path) (on by default on a GitHub
    /// `pull_request*` event)
    #[arg(long)]
    pub confine: bool,
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

/// Commodore's regular setup: the global and tenant configuration, then
/// the packages, then the components and instances the hierarchy names
/// once the packages are in it, each stage fetched in parallel over
/// repositories. Returns how to install the jsonnet dependencies, which
/// needs the rendered parameters and so happens in the compile.
fn fetch_all(
    args: &CompileArgs,
    layout: &Layout,
    info: &ClusterInfo,
    confine: Option<&crate::compile::confine::Confine>,
) -> anyhow::Result<JbOptions> {
    let confined = confine.is_some();
    let started = Instant::now();
    let credentials = crate::commands::fetch::token_credentials(
        args.publish.token_env.as_deref(),
        &args.publish.token_user,
    )?;
    let opts = FetchOptions {
        work_dir: layout.work_dir.clone(),
        offline: args.offline,
        force: args.force,
        credentials: credentials.clone(),
        parallelism: 0,
        confined,
    };
    let progress: Box<dyn Progress> = if args.quiet {
        Box::new(NoProgress)
    } else {
        crate::commands::fetch::progress_reporter()
    };
    let mut fetched = Vec::new();
    let mut stage = |what: &str, deps: Vec<Dependency>| -> anyhow::Result<()> {
        // The tenant's and global configuration name the components and
        // packages: one on this machine (`file:///home/runner/...`, a path)
        // would put the runner's repository into the catalog.
        if confined && what != "the global and tenant configuration" {
            crate::fetch::refuse_local_sources(&deps).map_err(anyhow::Error::msg)?;
        }
        let r = fetch::fetch(&deps, &opts, progress.as_ref());
        fetched.extend(r.map_err(|e| anyhow::anyhow!("while fetching {what}:\n{e}"))?);
        Ok(())
    };

    commodore::prepare_regular(layout).map_err(diag_err)?;
    let tenant = info.tenant_id().map_err(diag_err)?;
    let version = |flag: &Option<String>, own: Option<String>| {
        flag.clone()
            .or(own)
            .unwrap_or_else(|| fetch::DEFAULT_BRANCH.to_string())
    };
    let config = |name: &str, url: String, version: String, dir: PathBuf| Dependency {
        name: format!("config.{name}"),
        url,
        version,
        path: None,
        dir: Some(dir),
    };
    stage(
        "the global and tenant configuration",
        vec![
            config(
                "global",
                info.global_git_repo_url().map_err(diag_err)?,
                version(
                    &args.global_repo_revision_override,
                    info.global_git_repo_revision(),
                ),
                PathBuf::from("inventory/classes/global"),
            ),
            config(
                &tenant,
                info.config_repo_url().map_err(diag_err)?,
                version(
                    &args.tenant_repo_revision_override,
                    info.config_git_repo_revision(),
                ),
                PathBuf::from("inventory/classes").join(&tenant),
            ),
        ],
    )?;
    // Checkouts go to `dependencies/<name>` with `path` inside them, as
    // Commodore lays them out (`_base_directory` is `<checkout>/<path>`);
    // only `path` is written, which is what the hierarchy reads.
    let as_deps = |specs: std::collections::BTreeMap<String, commodore::DependencySpec>,
                   prefix: &str| {
        specs
            .into_iter()
            .map(|(n, s)| {
                let name = format!("{prefix}{n}");
                let mut d = Dependency::new(&name, &s.url, &s.version, Some(&s.path));
                d.dir = Some(PathBuf::from("dependencies").join(&name));
                d
            })
            .collect::<Vec<_>>()
    };
    let packages = commodore::package_specs(layout).map_err(diag_err)?;
    stage("configuration packages", as_deps(packages, "pkg."))?;
    let instances = commodore::instance_specs(layout).map_err(diag_err)?;
    stage("components", as_deps(instances, ""))?;
    drop(progress);
    if !args.quiet {
        let changed = fetched.iter().filter(|f| f.changed).count();
        eprintln!(
            "Fetched {} dependencies ({changed} updated) in {:.2}s",
            fetched.len(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(JbOptions {
        repos_dir: opts.dependencies_dir().join(".repos"),
        offline: args.offline,
        credentials,
        ext_vars: Vec::new(),
        update: true,
        confine: confine.cloned(),
    })
}

pub fn run(args: CatalogArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        CatalogCommand::Compile(a) => compile(a),
    }
}

fn compile(args: CompileArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let given: Vec<&Path> = std::iter::once(args.working_dir.as_path())
        .chain(args.cluster_file.as_deref())
        .collect();
    let confine = crate::commands::confine::working_tree("catalog compile", args.confine, &given)?;
    if let Some(c) = &confine {
        for p in &given {
            c.check(p).map_err(|e| anyhow::anyhow!("{e}"))?;
        }
    }
    let layout = Layout::new(&args.working_dir);
    // What the compile writes (and replaces) in the working directory: a
    // committed `catalog -> /home/runner/x` or `inventory/targets` link
    // carried the writes, and the removal of what was there, out of it
    // (`dependencies/lib` the libraries' alias links).
    // (The class links it makes in `inventory/classes` are replaced, not
    // followed; the loader checks where they lead.)
    for dir in [
        "catalog",
        "compiled",
        "inventory/targets",
        "inventory/classes/params",
        "dependencies/lib",
    ] {
        let at = layout.work_dir.join(dir);
        crate::commands::confine::check_output_dir(
            confine.as_ref(),
            "catalog compile",
            "output",
            &at,
        )?;
    }
    for file in ["jsonnetfile.json", "jsonnetfile.lock.json"] {
        let at = layout.work_dir.join(file);
        crate::commands::confine::check_output(confine.as_ref(), "catalog compile", "output", &at)?;
    }
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
    let jsonnet = if args.local {
        None
    } else {
        let Some(info) = &info else {
            anyhow::bail!(
                "fetching the configuration needs the cluster object: pass --cluster-file FILE or --api-url URL (or --local to use what is in {})",
                layout.work_dir.display()
            );
        };
        Some(fetch_all(&args, &layout, info, confine.as_ref())?)
    };
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    // Kapitan `dependencies` (helm charts, https libraries) are fetched with
    // everything else, as Commodore's `--fetch-dependencies` does; `--local`
    // uses what is already in the working directory.
    let kapitan_cache = (!args.local).then(crate::commands::compile::dependency_cache);
    let report = commodore::compile_catalog_with(
        &CatalogOptions {
            work_dir: layout.work_dir.clone(),
            cluster_id: args.cluster_id.clone(),
            parallelism: args.parallelism.unwrap_or(cpus),
            jsonnet,
            confine,
        },
        kapitan_cache.as_deref(),
    )
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
