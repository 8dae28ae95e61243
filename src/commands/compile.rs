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
    /// Compile every target that can be compiled when some fail: list the failures and exit 2 (the failed targets' old output is kept)
    #[arg(long)]
    pub keep_going: bool,
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
    /// Fetch parameters.kapitan.dependencies (git, http(s), helm) before compiling
    #[arg(long)]
    pub fetch: bool,
    /// Fetch dependencies again and overwrite files already at their output_path
    #[arg(long)]
    pub force_fetch: bool,
    /// Python interpreter for kadet inputs and Python jinja2 filters, with the
    /// `kadet` package installed [default: $STRATA_PYTHON, else python3]
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// Python file whose functions are Jinja2 filters (needs Python)
    /// [default: lib/jinja2_filters.py when it exists, or .kapitan]
    #[arg(long, value_name = "FILE")]
    pub jinja2_filters: Option<PathBuf>,
    /// Print each compiled target
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// Print nothing but errors
    #[arg(long)]
    pub quiet: bool,
    /// Where Kapitan secret references (`?{...}`) are read and created [default: ./refs, or .kapitan]
    #[arg(long, value_name = "DIR")]
    pub refs_path: Option<PathBuf>,
    /// Write the references' values into the catalog instead of hashed tags
    /// (a local catalog only: never commit or push it)
    #[arg(long)]
    pub reveal: bool,
    /// Never create missing references from their functions (what `strata
    /// ci` compiles with: a review or a publish must not invent secrets)
    #[arg(long)]
    pub refs_read_only: bool,
    /// Write each reference into its tag (`?{type:<base64>:embedded}`), as Kapitan's --embed-refs
    #[arg(long)]
    pub embed_refs: bool,
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

/// Kapitan's `load_jinja2_filters_from_file`: the default file counts only
/// when it exists; any other path must.
fn jinja2_filters_file(args: &CompileArgs, defaults: &KapitanDefaults) -> Option<PathBuf> {
    const DEFAULT: &str = "lib/jinja2_filters.py";
    let p = args
        .jinja2_filters
        .clone()
        .or_else(|| {
            defaults
                .get_str("compile", "jinja2-filters")
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| PathBuf::from(DEFAULT));
    let p = compile::jsonnet::normpath(&p);
    if p == Path::new(DEFAULT) && !p.is_file() {
        return None;
    }
    Some(absolute(&p))
}

/// Where fetched dependencies are kept between runs.
fn dependency_cache() -> PathBuf {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(d) = env("STRATA_DEPENDENCY_CACHE") {
        return d;
    }
    match (env("XDG_CACHE_HOME"), env("HOME")) {
        (Some(x), _) => x.join("strata/kapitan-dependencies"),
        (None, Some(h)) => h.join(".cache/strata/kapitan-dependencies"),
        (None, None) => std::env::temp_dir().join("strata-kapitan-dependencies"),
    }
}

/// `parameters.kapitan.dependencies` of the selected targets (Kapitan's
/// `fetch_dependencies`), before anything is compiled.
fn fetch_dependencies(
    prepared: &compile::Prepared,
    selected: &[String],
    fetch: bool,
    force: bool,
    output_path: &Path,
    quiet: bool,
) -> anyhow::Result<()> {
    use crate::fetch::kapitan as deps;
    let (items, force) = deps::select(&prepared.dumps, selected, fetch, force);
    if items.is_empty() {
        return Ok(());
    }
    let opts = deps::DepsOptions {
        output_path: absolute(output_path),
        cache_dir: dependency_cache(),
        force,
    };
    let log = deps::fetch_dependencies(&items, &opts).map_err(diag_err)?;
    if !quiet {
        for line in log {
            eprintln!("{line}");
        }
    }
    Ok(())
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

    let fetch = args.fetch || defaults.get_bool("compile", "fetch");
    let force_fetch = args.force_fetch || defaults.get_bool("compile", "force-fetch");
    if fetch || force_fetch {
        // Like Kapitan: classes may come from the dependencies themselves,
        // so the inventory that names them is read ignoring missing ones.
        let mut lenient = inv_opts.clone();
        lenient.ignore_class_notfound = true;
        let nodes = Inventory::load(&lenient)
            .and_then(|i| i.render(&[]))
            .map_err(diag_err)?;
        let prepared = compile::prepare(&nodes, &absolute(&inv_opts.path)).map_err(diag_err)?;
        let selected = compile::select_targets(&prepared, &args.targets, &labels);
        fetch_dependencies(
            &prepared,
            &selected,
            true,
            force_fetch,
            &output_path,
            args.quiet,
        )?;
    }
    let inventory = Inventory::load(&inv_opts).map_err(diag_err)?;
    let nodes = inventory.render(&[]).map_err(diag_err)?;
    let prepared = compile::prepare(&nodes, &absolute(&inv_opts.path)).map_err(diag_err)?;
    let mut selected = compile::select_targets(&prepared, &args.targets, &labels);
    let unknown: Vec<&String> = args
        .targets
        .iter()
        .filter(|t| !prepared.plans.contains_key(*t))
        .collect();
    if !unknown.is_empty() {
        let known: Vec<&str> = prepared.plans.keys().map(String::as_str).collect();
        let msg = unknown_targets_message(&unknown, &known);
        // Like Kapitan, names that match nothing are skipped when others
        // match (said on stderr), and an error when none does.
        if selected.is_empty() {
            anyhow::bail!("{msg}");
        }
        eprintln!("warning: {msg}");
    }
    if !fetch && !force_fetch {
        // Entries marked `force_fetch: true` are fetched on every compile.
        fetch_dependencies(&prepared, &selected, false, false, &output_path, args.quiet)?;
    }
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
    let all_targets = selected.len() == prepared.plans.len();
    let opts = CompileOptions {
        inventory_path: absolute(&inv_opts.path),
        search_paths: search_paths.iter().map(|p| absolute(p)).collect(),
        indent,
        multiline,
        null_as_empty,
        parallelism,
        python: compile::python::PythonOptions {
            python: args.python.clone(),
            jinja2_filters: jinja2_filters_file(&args, &defaults),
        },
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
    let refs_path = args
        .refs_path
        .clone()
        .or_else(|| defaults.get_str("compile", "refs-path").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("./refs"));
    let mut engine = crate::refs::Refs::new(absolute(&refs_path));
    // A check (pre-commit, CI) reports; it never writes into refs/ either.
    engine.create_missing = !args.refs_read_only
        && !args.check
        && !std::env::var(crate::refs::READ_ONLY_ENV).is_ok_and(|v| !v.is_empty() && v != "0");
    engine.embed = args.embed_refs || defaults.get_bool("compile", "embed-refs");
    let refs = compile::RefsSetup {
        refs: std::sync::Arc::new(engine),
        reveal: args.reveal,
    };
    let report = compile::compile_selected(
        &prepared,
        &selected,
        &opts,
        Some(&refs),
        temp.path(),
        &on_done,
        args.keep_going,
    );
    if let Some(pb) = &pb {
        pb.finish_and_clear();
    }
    let report = report.map_err(diag_err)?;
    // --keep-going: the failed targets' old output stays as it was; only
    // whole, compiled targets are installed.
    let all_targets = all_targets && report.failed.is_empty();
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
    if args.check && !report.failed.is_empty() {
        report_failures(&report);
        return Ok(ExitCode::from(crate::cli::EXIT_ERROR));
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
    if args.reveal {
        // Marks the catalog so diff, ci and push refuse it.
        let marker = output_path
            .join("compiled")
            .join(crate::refs::REVEALED_MARKER);
        std::fs::write(
            &marker,
            "This catalog was compiled with --reveal: it holds secret values. Never commit or push it.\n",
        )
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", marker.display()))?;
    }
    if !report.failed.is_empty() {
        report_failures(&report);
        return Ok(ExitCode::from(crate::cli::EXIT_ERROR));
    }
    if !args.quiet {
        eprintln!(
            "Compiled {} targets in {:.2}s",
            report.targets.len(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `--keep-going`: each failed target's error, then one line naming them.
fn report_failures(report: &compile::CompileReport) {
    let color = crate::cli::color_for(&std::io::stderr());
    for (_, e) in &report.failed {
        let text =
            crate::cli::render_diagnostic(&crate::diagnostics::ToDiagnostic::to_diagnostic(e));
        eprint!(
            "{}",
            if color {
                crate::cli::colorize(&text)
            } else {
                text
            }
        );
    }
    let names: Vec<&str> = report.failed.iter().map(|(n, _)| n.as_str()).collect();
    eprintln!(
        "Compiled {} of {} targets; {} failed: {}",
        report.targets.len(),
        report.targets.len() + report.failed.len(),
        report.failed.len(),
        names.join(", ")
    );
}

/// `unknown target `nope``, with the closest known name for each.
fn unknown_targets_message(unknown: &[&String], known: &[&str]) -> String {
    let names: Vec<String> = unknown.iter().map(|t| format!("`{t}`")).collect();
    let mut msg = format!(
        "unknown target{} {} (in --targets)",
        if unknown.len() == 1 { "" } else { "s" },
        names.join(", ")
    );
    for t in unknown {
        if let Some(c) = closest(t, known) {
            msg.push_str(&format!("\nhint: `{t}`: did you mean `{c}`?"));
        }
    }
    if known.is_empty() {
        msg.push_str("\nhint: the inventory has no targets with a compile section");
    } else if known.len() <= 10 {
        msg.push_str(&format!("\nhint: known targets: {}", known.join(", ")));
    } else {
        msg.push_str(&format!(
            "\nhint: {} targets are known; `strata inventory` lists them",
            known.len()
        ));
    }
    msg
}

/// The known name nearest to `name` by edit distance, if it is near enough
/// to be a typo (at most a third of the name's length, at least 1).
fn closest<'a>(name: &str, known: &[&'a str]) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    known
        .iter()
        .map(|k| (edit_distance(name, k), *k))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, k)| k)
}

/// Edit distance with adjacent transpositions (`prdo` is one edit from `prod`).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod unknown_target_tests {
    use super::*;

    #[test]
    fn names_the_target_and_suggests_a_close_one() {
        let nope = "prdo".to_string();
        let msg = unknown_targets_message(&[&nope], &["dev", "prod", "staging"]);
        assert!(
            msg.starts_with("unknown target `prdo` (in --targets)"),
            "{msg}"
        );
        assert!(msg.contains("did you mean `prod`?"), "{msg}");
        assert!(msg.contains("known targets: dev, prod, staging"), "{msg}");
        let far = "zzzzzz".to_string();
        assert!(!unknown_targets_message(&[&far], &["dev"]).contains("did you mean"));
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("prdo", "prod"), 1);
    }
}
