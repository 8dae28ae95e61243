//! `strata compile`: Kapitan's `compile` flags (defaults from `.kapitan`),
//! the inventory, the compile core, then either moving the catalog into
//! place or, with `--check`, reporting how it differs from the one on disk.

use crate::cli::{diag_err, EXIT_FINDINGS};
use crate::cli::{eprintln, println};
use crate::commands::inventory::InventoryFlags;
use crate::compile;
use crate::diagnostics::{Diagnostic, ToDiagnostic};
use crate::inventory::config::KapitanDefaults;
use crate::inventory::Inventory;
use crate::workspace::mask::SecretMask;
use crate::workspace::{CompileFlags, Workspace};
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
    /// Keep each target's catalog in DIR under its fingerprint and compile only targets not found there
    #[arg(long, value_name = "DIR", conflicts_with_all = ["check", "order"])]
    pub cache: Option<PathBuf>,
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
    /// Accepted for Kapitan compatibility: strata does not compare
    /// `.kapitan`'s `version` with its own
    #[arg(long)]
    pub ignore_version_check: bool,
    /// Accepted for Kapitan compatibility: strata has one jsonnet, which
    /// formats numbers as the C++ jsonnet does
    #[arg(long)]
    pub use_go_jsonnet: bool,
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
    /// Unknown keys in reclass-config.yml are errors, not warnings
    #[arg(long)]
    pub strict: bool,
    /// Compile only shard I of N (1-based) of the selected targets: sorted by
    /// name, every N-th from the I-th (for a CI matrix; merge with `strata ci --collect`)
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Read nothing outside the working directory and the -J search paths,
    /// as a review reads a pull request (on by default on a GitHub
    /// `pull_request`/`pull_request_target` event)
    #[arg(long)]
    pub confine: bool,
}

/// Whether this runs for a GitHub pull request, whose inventory anyone who
/// can open one controls.
pub(crate) fn pull_request_event() -> bool {
    std::env::var("GITHUB_EVENT_NAME").is_ok_and(|e| e.starts_with("pull_request"))
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

/// Where fetched dependencies are kept between runs.
/// A confined compile's `--cache DIR` inside the working directory, as
/// the other commands' outputs: a committed `.cache -> /home/runner/x`
/// (or a link in it where the store writes: `.catalogs`, `.inventories`,
/// an entry) had a pull request's compile store its catalogs there, a
/// directory of the runner it chose (a trusted job's cache). Entries below
/// are not walked: a cache git tracks files in is never served.
fn check_cache_dir(cache: &Path) -> anyhow::Result<()> {
    let confine = crate::commands::confine::working_tree("compile", true, &[cache])?;
    let check = |p: &Path| {
        crate::commands::confine::check_output(confine.as_ref(), "compile", "--cache", p)
    };
    check(cache)?;
    let mut links: Vec<PathBuf> = std::fs::read_dir(cache)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_symlink()))
        .map(|e| e.path())
        .collect();
    links.sort();
    links.iter().try_for_each(|p| check(p))
}

pub(crate) fn dependency_cache() -> PathBuf {
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
        (None, None) => shared_tmp_cache(&std::env::temp_dir()),
    }
}

/// The cache in the shared temporary directory (no `HOME`, no
/// `XDG_CACHE_HOME`): one per user, made 0700, and trusted only when this
/// user owns it and no one else may write it. Another user could plant
/// entries under the predictable paths of a shared name, and they were
/// compiled into the catalog (re-probe 17); otherwise this run caches in
/// a directory of its own.
fn shared_tmp_cache(tmp: &Path) -> PathBuf {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt};
        // SAFETY: getuid cannot fail and has no side effects.
        let uid = unsafe { libc::getuid() };
        let dir = tmp.join(format!("strata-kapitan-dependencies-{uid}"));
        let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
        let trusted = std::fs::symlink_metadata(&dir)
            .is_ok_and(|m| m.is_dir() && m.uid() == uid && m.mode() & 0o022 == 0);
        if trusted {
            return dir;
        }
        // A fresh private directory, kept for the run's later steps.
        crate::fswalk::private_temp_dir_in(tmp, "strata-kapitan-dependencies-")
            .map(tempfile::TempDir::keep)
            .unwrap_or(dir)
    }
    #[cfg(not(unix))]
    tmp.join("strata-kapitan-dependencies")
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
    confined: bool,
) -> anyhow::Result<()> {
    use crate::fetch::kapitan as deps;
    let (items, force) = deps::select(&prepared.dumps, selected, fetch, force);
    if items.is_empty() {
        return Ok(());
    }
    let opts = deps::DepsOptions {
        output_path: output_path.to_path_buf(),
        cache_dir: dependency_cache(),
        force,
        absolute_roots: Vec::new(),
        confined,
        withhold_env: confined,
    };
    let log = deps::fetch_dependencies(&items, &opts).map_err(diag_err)?;
    if !quiet {
        for line in log {
            eprintln!("{line}");
        }
    }
    Ok(())
}

impl CompileArgs {
    /// The flags that decide what the catalog holds, for the library.
    pub fn flags(&self) -> CompileFlags {
        CompileFlags {
            inventory_path: self.inv.inventory_path.clone(),
            enable_class_wildcards: self.inv.enable_class_wildcards,
            ignore_class_not_found: self.inv.ignore_class_not_found,
            ignore_class_not_found_regexp: self.inv.ignore_class_not_found_regexp.clone(),
            compose_node_name: self.inv.compose_node_name,
            search_paths: self.search_paths.clone(),
            parallelism: self.parallelism,
            indent: self.indent,
            yaml_multiline_string_style: self.yaml_multiline_string_style.clone(),
            yaml_dump_null_as_empty: self.yaml_dump_null_as_empty,
            output_path: self.output_path.clone(),
            targets: self.targets.clone(),
            python: self.python.clone(),
            jinja2_filters: self.jinja2_filters.clone(),
            refs_path: self.refs_path.clone(),
            reveal: self.reveal,
            embed_refs: self.embed_refs,
            // A check (pre-commit, CI) reports; it never writes into refs/.
            refs_read_only: self.refs_read_only || self.check,
            keep_going: self.keep_going,
        }
    }
}

/// `STRATA_TIMINGS=1`: per-phase timings on stderr when the command ends
/// (on any exit path, hence a guard).
struct TimingsGuard(Instant);

impl TimingsGuard {
    fn start() -> Option<TimingsGuard> {
        let on = std::env::var("STRATA_TIMINGS").is_ok_and(|v| !v.is_empty() && v != "0");
        if !on {
            return None;
        }
        compile::timings::enable();
        Some(TimingsGuard(Instant::now()))
    }
}

impl Drop for TimingsGuard {
    fn drop(&mut self) {
        eprintln!("timings:");
        for (phase, d, n) in compile::timings::report() {
            eprintln!("  {:<44} {:>8.3}s  x{n}", phase, d.as_secs_f64());
        }
        eprintln!(
            "  {:<44} {:>8.3}s",
            "total (wall)",
            self.0.elapsed().as_secs_f64()
        );
    }
}

pub fn run(args: CompileArgs) -> anyhow::Result<ExitCode> {
    let _timings = TimingsGuard::start();
    let started = Instant::now();
    if let Some(b) = args.inventory_backend.as_deref() {
        if !matches!(b, "reclass" | "reclass-rs") {
            anyhow::bail!(
                "inventory backend `{b}` is not supported: strata reads reclass inventories"
            );
        }
    }
    let flags = args.flags();
    let confined = args.confine || pull_request_event();
    if confined {
        KapitanDefaults::check_inside(Path::new("."), &std::env::current_dir()?)
            .map_err(diag_err)?;
    }
    let mut ws = Workspace::open(Path::new("."), &flags).map_err(diag_err)?;
    // Revealed values come from outside the tree (the environment, Vault),
    // which fingerprints do not cover, and the cache would keep them in
    // plain text.
    if args.cache.is_some() && ws.refs.reveal {
        anyhow::bail!(
            "--cache cannot be used with --reveal: revealed secrets come from outside the repository, so a cached catalog could hold stale ones, and the cache would store them in plain text; compile with --reveal without --cache"
        );
    }
    if confined {
        let cwd = std::env::current_dir()?;
        ws.confine(&cwd, Path::new("."), &flags).map_err(diag_err)?;
        if let Some(cache) = &args.cache {
            check_cache_dir(cache)?;
        }
    }
    let indent = ws.compile.indent;
    let multiline = ws.compile.multiline;
    let null_as_empty = ws.compile.null_as_empty;
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

    let defaults = KapitanDefaults::load(Path::new(".")).map_err(diag_err)?;
    let fetch = args.fetch || defaults.get_bool("compile", "fetch");
    let force_fetch = args.force_fetch || defaults.get_bool("compile", "force-fetch");
    if fetch || force_fetch {
        // Like Kapitan: classes may come from the dependencies themselves,
        // so the inventory that names them is read ignoring missing ones.
        let mut lenient = ws.inventory.clone();
        lenient.ignore_class_notfound = true;
        let nodes = Inventory::load(&lenient)
            .and_then(|i| i.render(&[]))
            .map_err(diag_err)?;
        let prepared = compile::prepare(&nodes, &ws.compile.inventory_path).map_err(diag_err)?;
        let selected = compile::select_targets(&prepared, &args.targets, &labels);
        fetch_dependencies(
            &prepared,
            &selected,
            true,
            force_fetch,
            &ws.output_path,
            args.quiet,
            confined,
        )?;
    }
    let inventory = compile::timings::time("inventory load", || Inventory::load(&ws.inventory))
        .map_err(diag_err)?;
    let mut config_warnings = inventory.warnings().to_vec();
    config_warnings.extend(defaults.unknown_keys(Path::new(".")));
    for w in &config_warnings {
        eprintln!("warning: {w}");
    }
    if args.strict && !config_warnings.is_empty() {
        anyhow::bail!("--strict: the configuration has unknown keys (see the warnings above)");
    }
    let total_targets = inventory.target_names().len();
    // With a cache, a compile of every target whose inventory files did not
    // change since a cached run may need no rendering at all.
    let inventory_digest = match &args.cache {
        Some(_) => compile::timings::time("cache: inventory digest", || {
            crate::workspace::cache::inventory_digest(&inventory)
        }),
        None => None,
    };
    if let (Some(cache), Some(digest)) = (&args.cache, &inventory_digest) {
        let whole = args.targets.is_empty()
            && args.labels.is_empty()
            && shard.is_none()
            && !fetch
            && !force_fetch;
        if whole {
            if let Some((report, stats)) = ws
                .compile_catalog_unrendered(digest, cache)
                .map_err(diag_err)?
            {
                if !args.quiet {
                    eprintln!(
                        "Compiled {} targets in {:.2}s ({} from the cache, {} compiled; inventory unchanged, not rendered)",
                        report.targets.len(),
                        started.elapsed().as_secs_f64(),
                        stats.hits,
                        stats.compiled
                    );
                }
                return Ok(ExitCode::SUCCESS);
            }
        }
    }
    let nodes = compile::timings::time("render", || {
        render_for_compile(&inventory, &args.targets, args.quiet)
    })?;
    let planned = compile::timings::time("plan", || compile::plan_all(&nodes)).map_err(|e| {
        // An invalid entry quotes its value: masked in a pull request's log.
        let e = crate::workspace::WorkspaceError::from(e);
        diag_err(if confined {
            SecretMask::of_values(nodes.values().map(|n| &n.parameters)).error(e)
        } else {
            e
        })
    })?;
    let rendered = crate::workspace::Rendered {
        prepared: compile::timings::time("prepare", || {
            compile::prepare_owned(planned, nodes, &ws.compile.inventory_path)
        }),
    };
    // A pull request's compile is confined, and its log is a review
    // output: what its errors quote is masked there.
    let mask = std::cell::OnceCell::new();
    let shown = |d: Diagnostic| -> Diagnostic {
        if confined {
            mask.get_or_init(|| SecretMask::of(&rendered)).diagnostic(d)
        } else {
            d
        }
    };
    let shown_text = |t: &str| -> String {
        if confined {
            mask.get_or_init(|| SecretMask::of(&rendered)).text(t)
        } else {
            t.to_string()
        }
    };
    let prepared = &rendered.prepared;
    let mut selected = compile::select_targets(prepared, &args.targets, &labels);
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
        fetch_dependencies(
            prepared,
            &selected,
            false,
            false,
            &ws.output_path,
            args.quiet,
            confined,
        )?;
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
                let dir = ws.output_path.join("compiled");
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
    // What its programs print (`std.trace`, a filter's `print`) too.
    let _masked = confined.then(|| SecretMask::program_output(&rendered));
    if let Some(cache) = &args.cache {
        let pb = progress_bar(selected.len(), args.quiet);
        let on_done = |_: &str| {
            if let Some(pb) = &pb {
                pb.inc(1);
            }
        };
        let res = ws.compile_catalog_cached_with(
            &rendered,
            &selected,
            cache,
            &on_done,
            inventory_digest.as_deref(),
        );
        if let Some(pb) = &pb {
            pb.finish_and_clear();
        }
        let (report, stats) = res.map_err(|e| {
            anyhow::Error::new(crate::cli::DiagnosticError(shown(e.to_diagnostic())))
        })?;
        for w in &report.warnings {
            eprintln!(
                "warning: {} (continue_on_compile_error is set)",
                shown_text(w)
            );
        }
        for w in &report.notices {
            eprintln!("warning: {w}");
        }
        if !args.quiet {
            eprintln!(
                "Compiled {} targets in {:.2}s ({} from the cache, {} compiled)",
                report.targets.len(),
                started.elapsed().as_secs_f64(),
                stats.hits,
                stats.compiled
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let output_path = ws.output_path.clone();
    // --check never writes beside the catalog; a real run builds next to it
    // so that the final rename stays on one file system.
    // Both locked: the next run removes what a killed one left.
    let temp = if args.check {
        crate::fswalk::locked_temp_dir(&std::env::temp_dir(), "strata-check-")
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
    let report = ws.compile_into(&rendered, &selected, temp.path(), &on_done);
    if let Some(pb) = &pb {
        pb.finish_and_clear();
    }
    let report =
        report.map_err(|e| hide_temp(shown(e.to_diagnostic()), temp.path(), &output_path))?;
    // --keep-going: the failed targets' old output stays as it was; only
    // whole, compiled targets are installed.
    let all_targets = all_targets && report.failed.is_empty();
    if args.order.is_some() {
        let dump = compile::yaml_dump::DumpOptions::kapitan(indent, multiline, null_as_empty);
        for (_, dir) in &report.targets {
            let target_dir = temp.path().join("compiled").join(dir);
            // Named in the output path, as compile errors are: the scratch
            // catalog is gone when the error is read (compat38).
            crate::catalog::annotate_sync_waves(&target_dir, &dump)
                .map_err(|e| hide_temp(shown(e.to_diagnostic()), temp.path(), &output_path))?;
        }
    }
    for w in &report.warnings {
        eprintln!(
            "warning: {} (continue_on_compile_error is set)",
            shown_text(w)
        );
    }
    for w in &report.notices {
        eprintln!("warning: {w}");
    }
    if args.check && !report.failed.is_empty() {
        report_failures(&report, &shown);
        return Ok(ExitCode::from(crate::cli::EXIT_ERROR));
    }
    if args.check {
        let dirs: Vec<String> = report.targets.iter().map(|(_, d)| d.clone()).collect();
        // Nor does a check of some targets read (and list) through a link.
        if !all_targets {
            for d in &dirs {
                compile::refuse_linked_catalog(&output_path, d).map_err(diag_err)?;
            }
        }
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
    // The previous catalog went into the temporary root: removing it is part
    // of the run's cost.
    compile::timings::time("remove previous catalog", || drop(temp));
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
        report_failures(&report, &shown);
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
fn report_failures(report: &compile::CompileReport, shown: &dyn Fn(Diagnostic) -> Diagnostic) {
    let color = crate::cli::color_for(&std::io::stderr());
    for (_, e) in &report.failed {
        let text = crate::cli::render_diagnostic(&shown(e.to_diagnostic()));
        eprint!(
            "{}",
            if color {
                crate::cli::colorize(&text)
            } else {
                crate::cli::actions_safe(&text).into_owned()
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

/// An error about a file in the temporary catalog root names the file
/// where it will be (`<output>/compiled/...`): the temporary directory is
/// gone when the user reads the message.
fn hide_temp(
    mut d: crate::diagnostics::Diagnostic,
    temp: &Path,
    output_path: &Path,
) -> anyhow::Error {
    let (from, to) = (
        temp.display().to_string(),
        output_path.display().to_string(),
    );
    d.message = d.message.replace(&from, &to);
    d.hints = d.hints.iter().map(|h| h.replace(&from, &to)).collect();
    if let Some(f) = &d.file {
        if let Ok(rel) = f.strip_prefix(temp) {
            d.file = Some(output_path.join(rel));
        }
    }
    anyhow::Error::new(crate::cli::DiagnosticError(d))
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
    // Targets left unrendered past the render limit: one line for all.
    let mut unrendered = Vec::new();
    let mut left_out = 0usize;
    for (name, r) in inventory.render_each() {
        match r {
            Ok(node) => {
                nodes.insert(name, node);
            }
            Err(e)
                if matches!(
                    e.root(),
                    crate::inventory::InventoryError::RenderedAfterLimit { .. }
                ) =>
            {
                if asked.is_empty() || asked.contains(&name) {
                    unrendered.push(name)
                } else {
                    left_out += 1;
                }
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
    if left_out > 0 && !quiet {
        eprintln!("warning: {left_out} more target(s) not rendered past the render limit (STRATA_RENDER_MEMORY) are left out of the inventory");
    }
    let last = failed.pop();
    for e in &failed {
        eprint!(
            "{}",
            crate::cli::actions_safe(&crate::cli::render_diagnostic(
                &crate::diagnostics::ToDiagnostic::to_diagnostic(e)
            ))
        );
    }
    if !unrendered.is_empty() {
        let shown: Vec<&str> = unrendered.iter().take(5).map(String::as_str).collect();
        let more = match unrendered.len() - shown.len() {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        let msg = format!(
            "{} target(s) not rendered ({}{more}): the targets before them (in name order) already take more than the render limit (STRATA_RENDER_MEMORY)",
            unrendered.len(),
            shown.join(", ")
        );
        if last.is_none() {
            anyhow::bail!(msg);
        }
        eprintln!("error: {msg}");
    }
    match last {
        Some(e) => Err(diag_err(e)),
        None => Ok(nodes),
    }
}

#[cfg(test)]
mod unknown_target_tests {
    use super::*;

    /// Re-probe 17 (dependency-cache-fixed-path-in-shared-tmp-without-home):
    /// with no HOME, the cache was one fixed name in the shared temporary
    /// directory, and another user's entries there were compiled in.
    #[cfg(unix)]
    #[test]
    fn the_shared_tmp_cache_is_the_users_own() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        // SAFETY: getuid cannot fail.
        let uid = unsafe { libc::getuid() };
        let own = tmp
            .path()
            .join(format!("strata-kapitan-dependencies-{uid}"));
        assert_eq!(shared_tmp_cache(tmp.path()), own);
        let mode = std::fs::metadata(&own).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        // Writable by others (planted, or loosened): not trusted.
        std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o777)).unwrap();
        let other = shared_tmp_cache(tmp.path());
        assert_ne!(other, own);
        assert!(other.starts_with(tmp.path()) && other.is_dir());
    }

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
