//! The pipeline as a library: one repository tree (the working directory
//! or a revision read from git), its `.kapitan` defaults and the compile
//! flags resolved once, the inventory rendered once, any set of targets
//! compiled into a catalog directory. `compile`, `diff --base`, `ci` and
//! the local review all go through here, so none of them rebuilds a
//! command line or runs strata as a child process.
//!
//! Relative paths (flags and `.kapitan`) are taken relative to the tree's
//! root, not to the process's working directory: a revision extracted into
//! a scratch directory compiles exactly like the checkout it came from.

pub mod cache;
pub mod fingerprint;
pub mod known;
pub mod mask;
pub mod review;

use crate::compile::yaml_dump::MultilineStyle;
use crate::compile::{self, CompileError, CompileOptions, CompileReport, Prepared};
use crate::diagnostics::{Diagnostic, ToDiagnostic};
use crate::inventory::config::KapitanDefaults;
use crate::inventory::{Inventory, InventoryError, InventoryOptions};
use crate::value::Value;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error(transparent)]
    Inventory(#[from] InventoryError),
    #[error(transparent)]
    Compile(#[from] CompileError),
    #[error(transparent)]
    Diff(#[from] crate::diff::DiffError),
    #[error("{message}")]
    Config {
        message: String,
        hint: Option<String>,
    },
    /// An error as it is to be shown, already masked
    /// ([`mask::SecretMask`]).
    #[error("{}", .0.message)]
    Shown(Box<Diagnostic>),
}

impl ToDiagnostic for WorkspaceError {
    fn to_diagnostic(&self) -> Diagnostic {
        match self {
            WorkspaceError::Inventory(e) => e.to_diagnostic(),
            WorkspaceError::Compile(e) => e.to_diagnostic(),
            WorkspaceError::Diff(e) => e.to_diagnostic(),
            WorkspaceError::Shown(d) => (**d).clone(),
            WorkspaceError::Config { message, hint } => {
                let d = Diagnostic::error(message.clone());
                match hint {
                    Some(h) => d.with_hint(h.clone()),
                    None => d,
                }
            }
        }
    }
}

/// The largest `--indent` (`.kapitan` `indent`).
const MAX_INDENT: usize = 64;

/// The most search paths `.kapitan` may set. Every input path and jsonnet
/// import of every target is looked up in each: 20,000 of them (249 kB,
/// a pull request's file) made 200 imports of one target take 5.6 s, and
/// a missing input's error listed all of them (429 kB per target; probe
/// 38, kapitan-search-paths-unbounded). Real ones set a handful.
const MAX_SEARCH_PATHS: usize = 256;

/// A `.kapitan` value of the wrong type or range, named with the file.
fn kapitan_value_err(key: &str, v: &Value, what: &str) -> WorkspaceError {
    let shown = crate::inventory::config::describe(v);
    config_err(format!("`.kapitan` sets `{key}` to {shown}: {what}"))
}

fn config_err(message: impl Into<String>) -> WorkspaceError {
    WorkspaceError::Config {
        message: message.into(),
        hint: None,
    }
}

/// The flags of `strata compile` that decide what a catalog holds, as
/// given (unset fields fall back to `.kapitan`, then to Kapitan's
/// defaults). Plain data: the CLI fills it from clap, tests by hand.
#[derive(Debug, Clone, Default)]
pub struct CompileFlags {
    pub inventory_path: Option<PathBuf>,
    pub enable_class_wildcards: bool,
    pub ignore_class_not_found: bool,
    pub ignore_class_not_found_regexp: Vec<String>,
    pub compose_node_name: bool,
    pub search_paths: Vec<PathBuf>,
    pub parallelism: Option<usize>,
    pub indent: Option<usize>,
    pub yaml_multiline_string_style: Option<String>,
    pub yaml_dump_null_as_empty: bool,
    pub output_path: Option<PathBuf>,
    /// Only these targets (all when empty).
    pub targets: Vec<String>,
    /// `--python`: the interpreter for kadet and Python jinja2 filters.
    pub python: Option<PathBuf>,
    /// `--jinja2-filters` [default: `.kapitan`, else `lib/jinja2_filters.py` when it exists].
    pub jinja2_filters: Option<PathBuf>,
    /// `--refs-path` [default: `.kapitan`, else `./refs`].
    pub refs_path: Option<PathBuf>,
    /// `--reveal`: write secret values (a local catalog only).
    pub reveal: bool,
    /// `--embed-refs` (or `.kapitan`).
    pub embed_refs: bool,
    /// Never create a missing reference (checks, reviews, publishing).
    pub refs_read_only: bool,
    /// A failing target does not stop the others (`--keep-going`).
    pub keep_going: bool,
}

/// Where Kapitan secret references live and how a compile treats them.
#[derive(Debug, Clone)]
pub struct RefsConfig {
    pub path: PathBuf,
    pub create_missing: bool,
    pub embed: bool,
    pub reveal: bool,
}

impl RefsConfig {
    /// A fresh reference engine for one compile run.
    pub fn setup(&self) -> compile::RefsSetup {
        let mut engine = crate::refs::Refs::new(self.path.clone());
        engine.create_missing = self.create_missing;
        engine.embed = self.embed;
        compile::RefsSetup {
            refs: std::sync::Arc::new(engine),
            reveal: self.reveal,
        }
    }
}

/// One repository tree with its settings resolved.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// The tree's root (`.` for the working directory).
    pub root: PathBuf,
    pub inventory: InventoryOptions,
    pub compile: CompileOptions,
    /// Where `compiled/` goes (absolute).
    pub output_path: PathBuf,
    /// Kapitan secret references.
    pub refs: RefsConfig,
    /// A failing target does not stop the others.
    pub keep_going: bool,
}

/// A rendered and validated inventory.
pub struct Rendered {
    pub prepared: Prepared,
}

impl Rendered {
    /// Every target name, sorted.
    pub fn targets(&self) -> Vec<String> {
        self.prepared.plans.keys().cloned().collect()
    }
}

/// `p` relative to `root`, made absolute without touching the file
/// system (no canonicalisation: symlinked roots stay as given).
fn anchor(root: &Path, p: &Path) -> PathBuf {
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        root.join(p)
    };
    if joined.is_absolute() {
        compile::jsonnet::normpath(&joined)
    } else {
        std::env::current_dir()
            .map(|d| compile::jsonnet::normpath(&d.join(&joined)))
            .unwrap_or(joined)
    }
}

impl Workspace {
    /// Reads `root/.kapitan` and resolves `flags` against it. `section` is
    /// the `.kapitan` section the inventory settings come from (`compile`).
    pub fn open(root: &Path, flags: &CompileFlags) -> Result<Workspace, WorkspaceError> {
        let defaults = KapitanDefaults::load(root)?;
        let section = "compile";
        let mut inv = InventoryOptions {
            path: flags
                .inventory_path
                .clone()
                .unwrap_or_else(|| PathBuf::from("./inventory")),
            enable_class_wildcards: flags.enable_class_wildcards,
            ignore_class_notfound: flags.ignore_class_not_found,
            ignore_class_notfound_regexp: flags.ignore_class_not_found_regexp.clone(),
            compose_node_name: flags.compose_node_name,
            applications_negate_earlier_only: false,
            confine: None,
            confine_also: Vec::new(),
        };
        defaults.apply(section, &mut inv, flags.inventory_path.is_some());
        // The working directory keeps its relative paths (they appear in
        // diagnostics as the user wrote them); any other tree is anchored.
        if root != Path::new(".") {
            inv.path = anchor(root, &inv.path);
        }
        let output_path = flags
            .output_path
            .clone()
            .or_else(|| {
                defaults
                    .get_path("compile", "output-path")
                    .map(PathBuf::from)
            })
            .unwrap_or_else(|| PathBuf::from("."));
        // A value of the wrong type was ignored (the default used instead):
        // an error naming the file, as a bad flag is.
        for key in [
            "output-path",
            "refs-path",
            "jinja2-filters",
            "yaml-multiline-string-style",
        ] {
            match defaults.get(section, key) {
                None | Some(Value::Null) | Some(Value::String(_)) => {}
                Some(v) => return Err(kapitan_value_err(key, v, "use a string")),
            }
        }
        match defaults.get(section, "search-paths") {
            None | Some(Value::Null) | Some(Value::String(_)) => {}
            Some(Value::List(l)) if l.len() > MAX_SEARCH_PATHS => {
                return Err(config_err(format!(
                    "`.kapitan` sets {} search paths (`search-paths`): use at most {MAX_SEARCH_PATHS} (every input path and jsonnet import is looked up in each, for every target)",
                    l.len()
                )))
            }
            Some(Value::List(l)) if l.iter().all(|x| x.as_str().is_some()) => {}
            Some(v) => return Err(kapitan_value_err("search-paths", v, "use a list of paths")),
        }
        let search_paths: Vec<PathBuf> = if !flags.search_paths.is_empty() {
            flags.search_paths.clone()
        } else {
            let d = defaults.get_strings("compile", "search-paths");
            if d.is_empty() {
                vec![PathBuf::from("."), PathBuf::from("lib")]
            } else {
                d.into_iter().map(PathBuf::from).collect()
            }
        };
        let number = |flag: &str| -> Result<Option<usize>, WorkspaceError> {
            match defaults.get(section, flag) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Int(i)) if *i >= 0 => Ok(usize::try_from(*i).ok()),
                // `1e3` is a float in YAML; a whole one is read as its number.
                Some(Value::Float(f)) if *f >= 0.0 && f.fract() == 0.0 && *f < 1e15 => {
                    Ok(Some(*f as usize))
                }
                Some(Value::String(s)) if s.trim().parse::<usize>().is_ok() => {
                    Ok(s.trim().parse().ok())
                }
                Some(v) => Err(kapitan_value_err(
                    flag,
                    v,
                    "use a whole number of 0 or more",
                )),
            }
        };
        let indent = match flags.indent {
            Some(i) => i,
            None => number("indent")?.unwrap_or(2),
        };
        // JSON output indents each level by it (YAML's emitter uses 2 to
        // 9): a huge one made a tiny input's output gigabytes.
        if indent > MAX_INDENT {
            let from = if flags.indent.is_some() {
                "--indent is".to_string()
            } else {
                "`.kapitan` sets `indent` to".to_string()
            };
            return Err(config_err(format!(
                "{from} {indent}: use at most {MAX_INDENT} (YAML output uses 2 to 9, JSON output indents each level by it)"
            )));
        }
        let style_name = flags
            .yaml_multiline_string_style
            .clone()
            .or_else(|| defaults.get_str(section, "yaml-multiline-string-style"))
            .unwrap_or_else(|| "literal".into());
        let multiline = MultilineStyle::parse(&style_name).ok_or_else(|| {
            let from = if flags.yaml_multiline_string_style.is_some() {
                "--yaml-multiline-string-style".to_string()
            } else {
                "`.kapitan` sets `yaml-multiline-string-style` to".to_string()
            };
            config_err(format!(
                "{from} `{style_name}`: use literal, folded or double-quotes"
            ))
        })?;
        let null_as_empty = flags.yaml_dump_null_as_empty
            || defaults.get_bool("compile", "yaml-dump-null-as-empty");
        let cpus = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        let parallelism = match flags.parallelism {
            Some(p) => p,
            None => number("parallelism")?.unwrap_or(cpus),
        };
        // Kapitan's `load_jinja2_filters_from_file`: the default file counts
        // only when it exists; any other path must.
        const DEFAULT_FILTERS: &str = "lib/jinja2_filters.py";
        let jinja2_filters = flags
            .jinja2_filters
            .clone()
            .or_else(|| {
                defaults
                    .get_str("compile", "jinja2-filters")
                    .map(PathBuf::from)
            })
            .unwrap_or_else(|| PathBuf::from(DEFAULT_FILTERS));
        let jinja2_filters = anchor(root, &jinja2_filters);
        let jinja2_filters = if anchor(root, Path::new(DEFAULT_FILTERS)) == jinja2_filters
            && !jinja2_filters.is_file()
        {
            None
        } else {
            Some(jinja2_filters)
        };
        let refs_path = flags
            .refs_path
            .clone()
            .or_else(|| defaults.get_path("compile", "refs-path").map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from("./refs"));
        let read_only_env =
            std::env::var(crate::refs::READ_ONLY_ENV).is_ok_and(|v| !v.is_empty() && v != "0");
        Ok(Workspace {
            root: root.to_path_buf(),
            compile: CompileOptions {
                inventory_path: anchor(root, &inv.path),
                search_paths: search_paths.iter().map(|p| anchor(root, p)).collect(),
                indent,
                multiline,
                null_as_empty,
                parallelism,
                python: compile::python::PythonOptions {
                    python: flags.python.clone(),
                    jinja2_filters,
                },
                absolute_roots: Default::default(),
                confine: None,
                memory: None,
            },
            output_path: anchor(root, &output_path),
            inventory: inv,
            refs: RefsConfig {
                path: anchor(root, &refs_path),
                create_missing: !flags.refs_read_only && !read_only_env,
                embed: flags.embed_refs || defaults.get_bool("compile", "embed-refs"),
                reveal: flags.reveal,
            },
            keep_going: flags.keep_going,
        })
    }

    /// Loads and renders the whole inventory and validates every target's
    /// compile settings (Kapitan validates all of them, not only the
    /// selected ones).
    pub fn render(&self) -> Result<Rendered, WorkspaceError> {
        let inventory = Inventory::load(&self.inventory)?;
        let nodes = inventory.render(&[])?;
        let planned = compile::plan_all(&nodes)?;
        let prepared = compile::prepare_owned(planned, nodes, &self.compile.inventory_path);
        Ok(Rendered { prepared })
    }

    /// [`Self::render`] for a review's or `ci`'s log: its errors are
    /// masked, those of the compile's preparation (an invalid entry quotes
    /// its value) with the parameters that rendered.
    pub fn render_masked(&self) -> Result<Rendered, WorkspaceError> {
        let shapes = |e: WorkspaceError| mask::SecretMask::of_values([]).error(e);
        let inventory = Inventory::load(&self.inventory).map_err(|e| shapes(e.into()))?;
        let nodes = inventory.render(&[]).map_err(|e| shapes(e.into()))?;
        let planned = compile::plan_all(&nodes).map_err(|e| {
            mask::SecretMask::of_values(nodes.values().map(|n| &n.parameters)).error(e.into())
        })?;
        let prepared = compile::prepare_owned(planned, nodes, &self.compile.inventory_path);
        Ok(Rendered { prepared })
    }

    /// Compiles `selected` into `<catalog_root>/compiled/`.
    pub fn compile_into(
        &self,
        rendered: &Rendered,
        selected: &[String],
        catalog_root: &Path,
        on_done: &(dyn Fn(&str) + Sync),
    ) -> Result<CompileReport, WorkspaceError> {
        self.compile_into_memory(rendered, selected, catalog_root, None, on_done)
    }

    /// [`Workspace::compile_into`], keeping what `memory` allows in memory.
    pub fn compile_into_memory(
        &self,
        rendered: &Rendered,
        selected: &[String],
        catalog_root: &Path,
        memory: Option<compile::InMemory>,
        on_done: &(dyn Fn(&str) + Sync),
    ) -> Result<CompileReport, WorkspaceError> {
        let refs = self.refs.setup();
        let with_memory;
        let opts = match memory {
            Some(m) => {
                with_memory = CompileOptions {
                    memory: Some(m),
                    ..self.compile.clone()
                };
                &with_memory
            }
            None => &self.compile,
        };
        Ok(compile::compile_selected(
            &rendered.prepared,
            selected,
            opts,
            Some(&refs),
            catalog_root,
            on_done,
            self.keep_going,
        )?)
    }
}

/// A revision's tree read from git objects into `dest` (nothing is checked
/// out), opened as a workspace at the same subdirectory the caller stands
/// in (`subdir`, relative to the repository root).
pub fn open_revision(
    repo: &Path,
    rev: &str,
    subdir: &str,
    dest: &Path,
    flags: &CompileFlags,
) -> Result<Workspace, WorkspaceError> {
    open_revision_like(repo, rev, subdir, dest, flags, None).map(|(ws, _)| ws)
}

/// [`open_revision`], its files that another revision's tree `like` holds
/// alike linked to that tree's ([`crate::diff::git::extract_like`]); also
/// returns what it extracted, for the next.
pub fn open_revision_like(
    repo: &Path,
    rev: &str,
    subdir: &str,
    dest: &Path,
    flags: &CompileFlags,
    like: Option<&crate::diff::git::Extracted>,
) -> Result<(Workspace, crate::diff::git::Extracted), WorkspaceError> {
    let extracted = crate::diff::git::extract_like(repo, rev, "", dest, like)?;
    let root = if subdir.is_empty() {
        dest.to_path_buf()
    } else {
        dest.join(subdir)
    };
    if !root.is_dir() {
        return Err(config_err(format!(
            "`{subdir}` does not exist at revision `{rev}`: nothing to compile there"
        )));
    }
    let mut flags = flags.clone();
    // The revision's catalog goes beside its tree, never where a
    // `.kapitan` output path would send it.
    flags.output_path = Some(dest.with_extension("out"));
    let mut ws = Workspace::open(&root, &flags)?;
    // A revision is a pull request's (or its base's): its compile reads
    // only its own tree and the search paths the user gave as flags
    // (trusted), never what its inventory or `.kapitan` names elsewhere.
    ws.confine(dest, &root, &flags)?;
    ws.compile.confine = ws
        .compile
        .confine
        .take()
        .map(|c| c.with_links_out(extracted.links_out().iter().cloned()));
    Ok((ws, extracted))
}

/// A revision's `.kapitan` and `reclass-config.yml` are the pull request's:
/// the inventory, its `classes_uri`/`nodes_uri` and the refs directory they
/// name must lie inside the revision's tree (else a pull request could make
/// the review render, and print, YAML files of the machine it runs on).
/// Paths given as flags are the user's own and stay as they are.
fn confine_inventory(
    ws: &Workspace,
    dest: &Path,
    flags: &CompileFlags,
) -> Result<(), WorkspaceError> {
    let tree = dest.canonicalize().unwrap_or_else(|_| dest.to_path_buf());
    let inside = |p: &Path| {
        let p = compile::jsonnet::normpath(p);
        // Resolved through symlinks as far as it exists (a link in the tree
        // to `/` is as far outside as `/` itself, and so is a directory yet
        // to be created below it).
        let p = resolve_existing(&p);
        p.starts_with(&tree) || p.starts_with(dest)
    };
    let refuse = |what: String| {
        Err(config_err(format!(
            "{what}, outside the repository: a review reads only the revision's own tree"
        )))
    };
    let show = |p: &Path| compile::jsonnet::normpath(p).display().to_string();
    if flags.inventory_path.is_none() && !inside(&ws.inventory.path) {
        return refuse(format!(
            "`.kapitan` sets the inventory path to `{}`",
            show(&ws.inventory.path)
        ));
    }
    if flags.refs_path.is_none() && !inside(&ws.refs.path) {
        return refuse(format!(
            "`.kapitan` sets the refs path to `{}`",
            show(&ws.refs.path)
        ));
    }
    // Python imports (runs) the filters file: a pull request's `.kapitan`
    // would choose which Python file of the runner a review executes.
    if flags.jinja2_filters.is_none() {
        if let Some(f) = &ws.compile.python.jinja2_filters {
            if !inside(f) {
                return refuse(format!(
                    "`.kapitan` sets the Jinja2 filters file to `{}`",
                    show(f)
                ));
            }
        }
    }
    // The catalog is installed there (`<output-path>/compiled` replaced): a
    // pull request would choose which directory of the runner to replace.
    if flags.output_path.is_none() && !inside(&ws.output_path) {
        return Err(config_err(format!(
            "`.kapitan` sets the output path to `{}`, outside the repository: a confined compile (a pull request's) writes only inside the working directory; give --output-path on the command line to write elsewhere",
            show(&ws.output_path)
        )));
    }
    let cfg = crate::inventory::config::ReclassConfig::load(&ws.inventory.path)?;
    for (key, value) in [
        ("classes_uri", &cfg.classes_uri),
        ("nodes_uri", &cfg.nodes_uri),
    ] {
        if let Some(v) = value {
            let p = ws.inventory.path.join(v);
            if !inside(&p) {
                return refuse(format!("reclass-config.yml sets `{key}` to `{v}`"));
            }
        }
    }
    Ok(())
}

/// `p` with its longest existing ancestor resolved through symlinks (the
/// rest, yet to be created, appended as it is).
fn resolve_existing(p: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut at = p;
    loop {
        if let Ok(real) = at.canonicalize() {
            return rest.iter().rev().fold(real, |acc, c| acc.join(c));
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                at = parent;
            }
            _ => return p.to_path_buf(),
        }
    }
}

impl Workspace {
    /// Confines what this workspace reads to `tree` (the repository) and
    /// the search paths given as flags, as a review confines each revision
    /// it compiles: for pull-request jobs that compile the working tree
    /// themselves (`compile --shard` before `ci --collect`). `base` is
    /// where relative paths of the inventory's code point.
    pub fn confine(
        &mut self,
        tree: &Path,
        base: &Path,
        flags: &CompileFlags,
    ) -> Result<(), WorkspaceError> {
        // The pull request's inventory chooses a Vault backend's address
        // (`parameters.kapitan.secrets.vaulttransit.addr`) and its refs
        // files the address a reveal asks: creating a reference sent the
        // runner's VAULT_TOKEN (or AppRole secret, or password) there.
        if self.refs.reveal {
            return Err(WorkspaceError::Config {
                message: "a confined compile (a pull request's) never reveals secrets: the pull request chooses the references and the Vault address they are read from".into(),
                hint: Some("remove --reveal; reveal only in a trusted job".into()),
            });
        }
        self.refs.create_missing = false;
        confine_inventory(self, tree, flags)?;
        self.inventory.confine = Some(tree.to_path_buf());
        self.compile.confine = Some(
            compile::confine::Confine::new(
                std::iter::once(tree.to_path_buf())
                    .chain(flags.search_paths.iter().map(|p| anchor(base, p))),
            )
            .with_base(base.to_path_buf()),
        );
        Ok(())
    }

    /// Compiles `selected` and replaces `<output_path>/compiled` with the
    /// result (only the selected targets' directories when not all are
    /// selected); a failure leaves the previous catalog as it was.
    pub fn compile_catalog(
        &self,
        rendered: &Rendered,
        selected: &[String],
    ) -> Result<CompileReport, WorkspaceError> {
        let temp = compile::temp_root(&self.output_path)?;
        let report = self.compile_into(rendered, selected, temp.path(), &|_| {})?;
        let all = selected.len() == rendered.prepared.plans.len();
        compile::install(temp.path(), &self.output_path, &report, all)?;
        Ok(report)
    }
}
