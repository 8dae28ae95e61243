//! `strata compile`: Kapitan's `compile` flags (defaults from `.kapitan`),
//! the inventory, the compile core, then either moving the catalog into
//! place or, with `--check`, reporting how it differs from the one on disk.

use crate::cli::{diag_err, EXIT_FINDINGS};
use crate::commands::inventory::InventoryFlags;
use crate::compile::yaml_dump::MultilineStyle;
use crate::compile::{self, CompileOptions};
use crate::inventory::config::KapitanDefaults;
use crate::inventory::Inventory;
use crate::value::Value;
use clap::Args;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[derive(Debug, Args)]
pub struct CompileArgs {
    #[command(flatten)]
    pub inv: InventoryFlags,
    /// Where `compiled/` is written [default: ., or .kapitan]
    #[arg(long, value_name = "DIR")]
    pub output_path: Option<PathBuf>,
    /// Compile only these targets (space separated)
    #[arg(short = 't', long = "targets", num_args = 1.., value_name = "TARGET", conflicts_with = "labels")]
    pub targets: Vec<String>,
    /// Compile only targets whose parameters.kapitan.labels match every key=value
    #[arg(short = 'l', long = "labels", num_args = 1.., value_name = "KEY=VALUE")]
    pub labels: Vec<String>,
    /// Where inputs and imports are looked up [default: . lib]
    #[arg(short = 'J', long = "search-paths", num_args = 1.., value_name = "DIR")]
    pub search_paths: Vec<PathBuf>,
    /// Targets compiled at once [default: number of CPUs]
    #[arg(short = 'p', long, value_name = "N")]
    pub parallelism: Option<usize>,
    /// YAML and JSON indentation [default: 2]
    #[arg(short = 'i', long, value_name = "N")]
    pub indent: Option<usize>,
    /// How YAML writes strings with line breaks: literal, folded or double-quotes [default: literal]
    #[arg(
        short = 'L',
        long = "yaml-multiline-string-style",
        value_name = "STYLE"
    )]
    pub yaml_multiline_string_style: Option<String>,
    /// Write YAML nulls as nothing (`key:`) instead of `null`
    #[arg(long)]
    pub yaml_dump_null_as_empty: bool,
    /// Compile into a temporary directory and exit 1 when it differs from --output-path
    #[arg(long)]
    pub check: bool,
    /// Annotate every object with its apply order: `argocd-sync-waves` sets
    /// `argocd.argoproj.io/sync-wave` to the object's kapp wave
    #[arg(long, value_name = "MODE", value_parser = ["argocd-sync-waves"])]
    pub order: Option<String>,
    /// Inventory backend (accepted for Kapitan compatibility; strata has one)
    #[arg(long, value_name = "NAME")]
    pub inventory_backend: Option<String>,
    /// Accepted for Kapitan compatibility (Kapitan 0.36 ignores it too)
    #[arg(long)]
    pub prune: bool,
    /// Print each compiled target
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// Print nothing but errors
    #[arg(long)]
    pub quiet: bool,
    /// Unknown keys in reclass-config.yml are errors, not warnings
    #[arg(long)]
    pub strict: bool,
    /// Compile only shard I of N (1-based) of the selected targets: sorted by
    /// name, every N-th from the I-th (for a CI matrix; merge with `strata ci --collect`)
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| compile::jsonnet::normpath(&d.join(p)))
            .unwrap_or_else(|_| p.to_path_buf())
    }
}

fn progress_bar(len: usize, quiet: bool) -> Option<indicatif::ProgressBar> {
    let on_terminal = std::io::stderr().is_terminal();
    if quiet || !on_terminal || std::env::var_os("CI").is_some() || len < 2 {
        return None;
    }
    let pb = indicatif::ProgressBar::new(len as u64);
    if let Ok(style) = indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} targets {msg}")
    {
        pb.set_style(style);
    }
    Some(pb)
}

pub fn run(args: CompileArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let defaults = KapitanDefaults::load(Path::new(".")).map_err(diag_err)?;
    let inv_opts = args.inv.options("compile")?;
    if let Some(b) = args.inventory_backend.as_deref() {
        if !matches!(b, "reclass" | "reclass-rs") {
            anyhow::bail!(
                "inventory backend `{b}` is not supported: strata reads reclass inventories"
            );
        }
    }
    let output_path = args
        .output_path
        .clone()
        .or_else(|| {
            defaults
                .get_str("compile", "output-path")
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| PathBuf::from("."));
    let search_paths: Vec<PathBuf> = if !args.search_paths.is_empty() {
        args.search_paths.clone()
    } else {
        let d = defaults.get_strings("compile", "search-paths");
        if d.is_empty() {
            vec![PathBuf::from("."), PathBuf::from("lib")]
        } else {
            d.into_iter().map(PathBuf::from).collect()
        }
    };
    let number = |flag: &str| -> Option<usize> {
        match defaults.get("compile", flag) {
            Some(Value::Int(i)) if *i >= 0 => Some(*i as usize),
            Some(Value::String(s)) => s.parse().ok(),
            _ => None,
        }
    };
    let indent = args.indent.or_else(|| number("indent")).unwrap_or(2);
    let style_name = args
        .yaml_multiline_string_style
        .clone()
        .or_else(|| defaults.get_str("compile", "yaml-multiline-string-style"))
        .unwrap_or_else(|| "literal".into());
    let multiline = MultilineStyle::parse(&style_name).ok_or_else(|| {
        anyhow::anyhow!(
            "--yaml-multiline-string-style `{style_name}`: use literal, folded or double-quotes"
        )
    })?;
    let null_as_empty =
        args.yaml_dump_null_as_empty || defaults.get_bool("compile", "yaml-dump-null-as-empty");
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let parallelism = args
        .parallelism
        .or_else(|| number("parallelism"))
        .unwrap_or(cpus);
    let mut labels = Vec::new();
    for l in &args.labels {
        let (k, v) = l
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("--labels `{l}`: write labels as key=value"))?;
        labels.push((k.to_string(), v.to_string()));
    }

    let shard = args
        .shard
        .as_deref()
        .map(crate::ci::Shard::parse)
        .transpose()
        .map_err(diag_err)?;

    let inventory = Inventory::load(&inv_opts).map_err(diag_err)?;
    let mut config_warnings = inventory.warnings().to_vec();
    config_warnings.extend(defaults.unknown_keys(std::path::Path::new(".")));
    for w in &config_warnings {
        eprintln!("warning: {w}");
    }
    if args.strict && !config_warnings.is_empty() {
        anyhow::bail!("--strict: the configuration has unknown keys (see the warnings above)");
    }
    let total_targets = inventory.target_names().len();
    let nodes = render_for_compile(&inventory, &args.targets, args.quiet)?;
    let prepared = compile::prepare(&nodes, &absolute(&inv_opts.path)).map_err(diag_err)?;
    let mut selected = compile::select_targets(&prepared, &args.targets, &labels);
    if selected.is_empty() {
        anyhow::bail!("no targets found (check --targets / --labels)");
    }
    if let Some(shard) = &shard {
        selected = shard.select(&selected);
        if selected.is_empty() {
            // More shards than targets: this one has nothing to do, which
            // is not an error in a fixed-size matrix.
            if !args.check {
                let dir = absolute(&output_path).join("compiled");
                std::fs::create_dir_all(&dir)
                    .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
            }
            if !args.quiet {
                eprintln!("shard {shard} has no targets");
            }
            return Ok(ExitCode::SUCCESS);
        }
    }
    let all_targets = selected.len() == total_targets;
    let opts = CompileOptions {
        inventory_path: absolute(&inv_opts.path),
        search_paths: search_paths.iter().map(|p| absolute(p)).collect(),
        indent,
        multiline,
        null_as_empty,
        parallelism,
    };
    let output_path = absolute(&output_path);
    // --check never writes beside the catalog; a real run builds next to it
    // so that the final rename stays on one file system.
    let temp = if args.check {
        tempfile::Builder::new()
            .prefix("strata-check-")
            .tempdir()
            .map_err(|e| anyhow::anyhow!("cannot create a temporary directory: {e}"))?
    } else {
        compile::temp_root(&output_path).map_err(diag_err)?
    };
    let pb = progress_bar(selected.len(), args.quiet);
    let verbose = args.verbose && !args.quiet;
    let on_done = |name: &str| {
        if let Some(pb) = &pb {
            pb.inc(1);
        } else if verbose {
            eprintln!("Compiled {name}");
        }
    };
    let report = compile::compile_into(&prepared, &selected, &opts, temp.path(), &on_done);
    if let Some(pb) = &pb {
        pb.finish_and_clear();
    }
    let report = report.map_err(diag_err)?;
    if args.order.is_some() {
        let dump = compile::yaml_dump::DumpOptions::kapitan(indent, multiline, null_as_empty);
        for (_, dir) in &report.targets {
            let target_dir = temp.path().join("compiled").join(dir);
            crate::catalog::annotate_sync_waves(&target_dir, &dump).map_err(diag_err)?;
        }
    }
    for w in &report.warnings {
        eprintln!("warning: {w} (continue_on_compile_error is set)");
    }
    if args.check {
        let dirs: Vec<String> = report.targets.iter().map(|(_, d)| d.clone()).collect();
        let diffs = compile::diff_catalogs(
            &temp.path().join("compiled"),
            &output_path.join("compiled"),
            if all_targets { None } else { Some(&dirs) },
        );
        if diffs.is_empty() {
            if !args.quiet {
                eprintln!("catalog is up to date ({} targets)", report.targets.len());
            }
            return Ok(ExitCode::SUCCESS);
        }
        for (status, path) in &diffs {
            println!("{status}: compiled/{}", path.display());
        }
        eprintln!(
            "catalog differs from {}: {} file(s); run `strata compile` to update it",
            output_path.join("compiled").display(),
            diffs.len()
        );
        return Ok(ExitCode::from(EXIT_FINDINGS));
    }
    compile::install(temp.path(), &output_path, &report, all_targets).map_err(diag_err)?;
    if !args.quiet {
        eprintln!(
            "Compiled {} targets in {:.2}s",
            report.targets.len(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The rendered targets compile sees. A full compile needs every target and
/// reports every one that fails (each naming its broken class); with
/// `--targets`, only the asked targets must render: a broken class outside
/// their closure leaves the other targets out of the global inventory view
/// with a warning instead of stopping the run.
fn render_for_compile(
    inventory: &Inventory,
    asked: &[String],
    quiet: bool,
) -> anyhow::Result<std::collections::BTreeMap<String, crate::inventory::RenderedNode>> {
    let mut nodes = std::collections::BTreeMap::new();
    let mut failed = Vec::new();
    for (name, r) in inventory.render_each() {
        match r {
            Ok(node) => {
                nodes.insert(name, node);
            }
            Err(e) if asked.is_empty() || asked.contains(&name) => failed.push(e),
            Err(e) => {
                if !quiet {
                    eprintln!(
                        "warning: target `{name}` is not compiled and left out of the inventory: {e}"
                    );
                }
            }
        }
    }
    let last = failed.pop();
    for e in &failed {
        eprint!(
            "{}",
            crate::cli::render_diagnostic(&crate::diagnostics::ToDiagnostic::to_diagnostic(e))
        );
    }
    match last {
        Some(e) => Err(diag_err(e)),
        None => Ok(nodes),
    }
}
