//! Compiling a catalog from a rendered inventory, as `kapitan compile`
//! does: every selected target's `parameters.kapitan.compile` entries run
//! in order (`jsonnet`, `jinja2`, `copy`, `remove`, `external`) and write
//! `compiled/<target>/...` byte for byte like Kapitan 0.36.
//!
//! The catalog is built in a temporary directory beside the output and
//! moved into place only when every target succeeded, so a failure never
//! leaves a half-written catalog. Targets compile in parallel.

pub(crate) use crate::child;
pub mod catalog_reads;
pub use crate::confine;
pub mod helm;
pub mod jinja;
pub mod jsonnet;
pub mod model;
pub mod output;
pub mod python;
pub use crate::yaml::pyload as pyyaml_load;
pub mod schema;
pub mod timings;
pub use crate::yaml::pydump as yaml_dump;

use crate::diagnostics::{Diagnostic, ToDiagnostic};
use crate::inventory::RenderedNode;
use crate::value::{Map, Value};
use model::{Entry, InputType, TargetPlan};
use output::{Format, WriteOptions};
use rayon::prelude::*;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use yaml_dump::{DumpOptions, MultilineStyle};

/// A compile failure: which target, which entry, which input, and why.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", self.render())]
pub struct CompileError {
    pub target: Option<String>,
    pub entry: Option<String>,
    pub input: Option<PathBuf>,
    pub message: String,
    /// Boxed (with `origin`) to keep the error small: it travels in every
    /// `Result` of compile.
    pub hint: Option<Box<str>>,
    /// The inventory parameter the error is about.
    pub origin: Option<Box<ParamOrigin>>,
}

/// An inventory parameter an error is about.
#[derive(Debug, Clone)]
pub struct ParamOrigin {
    /// `parameters.kapitan.compile[0].input_type`.
    pub param: String,
    /// The class or target file and line that wrote it, when found.
    pub written_at: Option<(PathBuf, usize)>,
}

impl CompileError {
    pub fn new(message: impl Into<String>) -> Self {
        CompileError {
            target: None,
            entry: None,
            input: None,
            message: message.into(),
            hint: None,
            origin: None,
        }
    }

    pub fn target(mut self, t: &str) -> Self {
        self.target = Some(t.to_string());
        self
    }

    pub fn entry(mut self, e: &Entry) -> Self {
        self.entry = Some(e.describe());
        self
    }

    pub fn input(mut self, p: &Path) -> Self {
        self.input = Some(p.to_path_buf());
        self
    }

    pub fn hint(mut self, h: impl Into<String>) -> Self {
        self.hint = Some(h.into().into_boxed_str());
        self
    }

    fn render(&self) -> String {
        let mut where_ = Vec::new();
        if let Some(t) = &self.target {
            where_.push(format!("target {t}"));
        }
        if let Some(e) = &self.entry {
            where_.push(e.clone());
        }
        if let Some(i) = &self.input {
            where_.push(format!("input {}", i.display()));
        }
        if where_.is_empty() {
            self.message.clone()
        } else {
            format!("{}: {}", where_.join(", "), self.message)
        }
    }

    fn io(path: &Path, e: std::io::Error) -> Self {
        CompileError::new(format!("{}: {e}", path.display()))
    }
}

impl ToDiagnostic for CompileError {
    fn to_diagnostic(&self) -> Diagnostic {
        let mut d = Diagnostic::error(self.render());
        if let Some(i) = &self.input {
            d = d.with_file(i);
        }
        if let Some(o) = &self.origin {
            if let Some((f, l)) = &o.written_at {
                d = d.with_file(f).with_line(*l);
            }
            d = d.with_param_path(o.param.clone());
        }
        if let Some(h) = &self.hint {
            d = d.with_hint(h.to_string());
        }
        d
    }
}

/// Settings of one compile run (Kapitan's flags).
#[derive(Debug, Clone)]
pub struct CompileOptions {
    pub inventory_path: PathBuf,
    /// `-J` paths, absolute.
    pub search_paths: Vec<PathBuf>,
    pub indent: usize,
    pub multiline: MultilineStyle,
    pub null_as_empty: bool,
    pub parallelism: usize,
    /// The interpreter for kadet inputs and Python jinja2 filters.
    pub python: python::PythonOptions,
    /// Per target, the directories an absolute `output_path` may name
    /// (Commodore: the instance's `${_base_directory}`); everywhere else,
    /// and for every target not listed, absolute paths are refused.
    pub absolute_roots: BTreeMap<String, Vec<PathBuf>>,
    /// When set (reviews of pull requests), every file the compile reads
    /// must lie below one of these roots (the catalog being built is added);
    /// `None` reads what the inventory names, as Kapitan does.
    pub confine: Option<confine::Confine>,
    /// Targets whose files may be kept in memory instead of written
    /// (a review's): see [`InMemory`].
    pub memory: Option<InMemory>,
}

/// Where a compile keeps the files of some targets instead of writing
/// them: in `tree`, keyed by their path below `compiled/`. Only targets
/// in `targets` whose entries are all jsonnet, jinja2 or ytt (strata's
/// own writers, no program writing beside them), that write nothing
/// outside their own directory, read nothing of the catalog and share no
/// directory with another target; every other target, and every file
/// past the tree's budget, goes to disk as before.
#[derive(Debug, Clone)]
pub struct InMemory {
    pub tree: Arc<crate::memtree::MemTree>,
    pub targets: BTreeSet<String>,
}

/// What a successful run did.
#[derive(Debug, Default)]
pub struct CompileReport {
    /// Compiled targets and their directories below `compiled/`.
    pub targets: Vec<(String, String)>,
    /// Entries that failed with `continue_on_compile_error`.
    pub warnings: Vec<String>,
    /// What went wrong once the outputs were written (the Python bridge
    /// had to be stopped at its exit): shown as warnings, the catalog is
    /// complete.
    pub notices: Vec<String>,
    /// Targets that failed, with why (only with `keep_going`, see [`compile_selected`]).
    pub failed: Vec<(String, CompileError)>,
}

/// The validated inventory: plans for every target and the model dumps
/// inputs see.
pub struct Prepared {
    pub plans: BTreeMap<String, TargetPlan>,
    /// Dumps with `target_full_path` empty (Jinja2's view).
    pub dumps: Arc<BTreeMap<String, Value>>,
    /// The same dumps as jsonnet's `kap.inventory()` sees them
    /// (`target_full_path` set on conversion).
    pub jsonnet_view: Arc<jsonnet::InventoryView>,
    /// The Jinja2 views, converted once (template values share memory),
    /// on the first jinja2 entry: most compiles have none, and converting
    /// every target's parameters costs as much as rendering them.
    jinja: std::sync::OnceLock<JinjaViews>,
}

struct JinjaViews {
    targets: BTreeMap<String, minijinja::Value>,
    global: minijinja::Value,
}

impl Prepared {
    fn jinja(&self) -> &JinjaViews {
        self.jinja.get_or_init(|| {
            let targets: BTreeMap<String, minijinja::Value> = self
                .dumps
                .iter()
                .map(|(k, v)| (k.clone(), jinja::to_template_value(v)))
                .collect();
            let global =
                minijinja::Value::from_iter(targets.iter().map(|(k, v)| (k.clone(), v.clone())));
            JinjaViews { targets, global }
        })
    }
}

/// An invalid `kapitan.compile` entry: the class or target file that wrote
/// it, found among the files the target read (merged values carry none).
pub fn locate_entry_error(mut e: CompileError, node: &RenderedNode) -> CompileError {
    let Some(origin) = e.origin.as_deref_mut() else {
        return e;
    };
    let Some(rest) = origin.param.strip_prefix("parameters.kapitan.compile[") else {
        return e;
    };
    let Some((index, field)) = rest.split_once(']') else {
        return e;
    };
    let field = field.strip_prefix('.');
    let entry = index.parse::<usize>().ok().and_then(|i| {
        node.parameters
            .get_path(&["kapitan", "compile"])?
            .as_list()?
            .get(i)
    });
    if let Some(entry) = entry {
        let files: Vec<&Path> = node.sources.files.iter().map(PathBuf::as_path).collect();
        origin.written_at = crate::inventory::locate::compile_entry(&files, entry, field);
    }
    e
}

/// Validates every target's compile settings (Kapitan validates the whole
/// inventory, not only the selected targets).
pub fn prepare(
    nodes: &BTreeMap<String, RenderedNode>,
    inventory_path: &Path,
) -> Result<Prepared, CompileError> {
    let planned = plan_all(nodes)?;
    let dumps = planned
        .kaps
        .into_iter()
        .map(|(name, kap)| {
            let dump = model::model_dump(&nodes[&name], &kap, "");
            (name, dump)
        })
        .collect();
    Ok(prepared(planned.plans, dumps, inventory_path))
}

/// Every target's plan, validated, before its dump is made: a caller that
/// needs the renders after an error (to mask what the error quotes) still
/// has them.
pub struct Planned {
    plans: BTreeMap<String, TargetPlan>,
    kaps: BTreeMap<String, crate::value::Map>,
}

/// Plans every target and checks the settings between targets.
pub fn plan_all(nodes: &BTreeMap<String, RenderedNode>) -> Result<Planned, CompileError> {
    // Each target's plan is its own work: in parallel, then the first
    // error in target order (as a sequential loop would report).
    type One = Result<(TargetPlan, crate::value::Map), CompileError>;
    let done: Vec<(&String, One)> = nodes
        .par_iter()
        .map(|(name, node)| {
            let r = model::plan_target(node).map_err(|e| locate_entry_error(e, node));
            (name, r)
        })
        .collect();
    let mut plans = BTreeMap::new();
    let mut kaps = BTreeMap::new();
    for (name, r) in done {
        let (plan, kap) = r?;
        kaps.insert(name.clone(), kap);
        plans.insert(name.clone(), plan);
    }
    for plan in plans.values() {
        let installs = nodes
            .get(&plan.name)
            .and_then(|n| n.parameters.get_path(&["packages_install"]))
            .is_some_and(|v| !v.is_null());
        if installs && plan.target_var.is_empty() {
            return Err(CompileError::new(
                "parameters.packages_install is set but parameters.kapitan.vars.target is not: the packages have no output directory",
            )
            .target(&plan.name)
            .hint("set parameters.kapitan.vars.target to the target's own name, e.g. ${_reclass_:name:short}"));
        }
        if !plan.entries.is_empty() && !plans.contains_key(&plan.target_var) {
            return Err(CompileError::new(format!(
                "parameters.kapitan.vars.target is `{}`, which is not a target name",
                plan.target_var
            ))
            .target(&plan.name)
            .hint("set vars.target to the target's own name, e.g. ${_reclass_:name:short}"));
        }
    }
    Ok(Planned { plans, kaps })
}

/// [`prepare`] of renders nothing reads again: their parameters move into
/// the dumps instead of being copied (at 1,000 targets of ~3,400
/// parameters, ~500 MB copied and both held at once).
pub fn prepare_owned(
    planned: Planned,
    nodes: BTreeMap<String, RenderedNode>,
    inventory_path: &Path,
) -> Prepared {
    let Planned { plans, kaps } = planned;
    // `plan_all` planned every render or failed: the same names.
    debug_assert!(nodes.keys().eq(kaps.keys()));
    let pairs: Vec<((String, RenderedNode), crate::value::Map)> =
        nodes.into_iter().zip(kaps.into_values()).collect();
    let dumps: BTreeMap<String, Value> = pairs
        .into_par_iter()
        .map(|((name, node), kap)| {
            let dump = model::model_dump_owned(node, kap, "");
            (name, dump)
        })
        .collect();
    prepared(plans, dumps, inventory_path)
}

fn prepared(
    plans: BTreeMap<String, TargetPlan>,
    dumps: BTreeMap<String, Value>,
    inventory_path: &Path,
) -> Prepared {
    let dumps = Arc::new(dumps);
    Prepared {
        plans,
        jinja: std::sync::OnceLock::new(),
        jsonnet_view: Arc::new(jsonnet::InventoryView {
            targets: dumps.clone(),
            inventory_path: inventory_path.to_path_buf(),
        }),
        dumps,
    }
}

/// Selected target names: `--targets` (unknown names dropped, like
/// Kapitan), `--labels` (every `k=v` must match), or all.
pub fn select_targets(
    prepared: &Prepared,
    targets: &[String],
    labels: &[(String, String)],
) -> Vec<String> {
    let mut out: Vec<String> = if !targets.is_empty() {
        targets
            .iter()
            .filter(|t| prepared.plans.contains_key(*t))
            .cloned()
            .collect()
    } else if !labels.is_empty() {
        prepared
            .dumps
            .iter()
            .filter(|(_, d)| {
                let l = d.get_path(&["parameters", "kapitan", "labels"]);
                labels.iter().all(|(k, v)| {
                    l.and_then(|l| l.get_path(&[k])).and_then(Value::as_str) == Some(v.as_str())
                })
            })
            .map(|(n, _)| n.clone())
            .collect()
    } else {
        prepared.plans.keys().cloned().collect()
    };
    out.sort();
    out.dedup();
    out
}

/// Rejects absolute paths and `..`: what an entry names must stay inside
/// the target's output directory.
/// The most components an output path or file name may have.
const MAX_PATH_COMPONENTS: usize = 64;

fn check_relative(p: &str, what: &str) -> Result<(), String> {
    // Names no file system takes are refused here, by the name the entry
    // gave (escaped): the write's own error named the scratch catalog and
    // printed the byte raw.
    let shown = |p: &str| {
        let e: String = p.escape_debug().collect();
        match e.char_indices().nth(80) {
            Some((i, _)) => format!("{}...", &e[..i]),
            None => e,
        }
    };
    if p.contains('\0') {
        return Err(format!(
            "{what} `{}` holds a NUL byte, which no file name may hold",
            shown(p)
        ));
    }
    if let Some(long) = p.split('/').find(|c| c.len() > 255) {
        return Err(format!(
            "{what} `{}` has a name of {} bytes (`{}`): file systems take no more than 255 bytes in one name; shorten the key that names it",
            shown(p),
            long.len(),
            shown(long)
        ));
    }
    let path = Path::new(p);
    if path.is_absolute() {
        return Err(format!(
            "{what} `{p}` is absolute; it must be relative to the target's output directory"
        ));
    }
    // Each level is a directory every walk of the catalog goes through by
    // its full path: 1,500 levels (one 100-byte key) took a review past
    // 90 s (re-probe 11).
    let depth = path.components().count();
    if depth > MAX_PATH_COMPONENTS {
        return Err(format!(
            "{what} `{}` has {depth} path components: at most {MAX_PATH_COMPONENTS} are allowed; use fewer `/` in the key that names it",
            shown(p)
        ));
    }
    if path.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(format!(
            "{what} `{p}` leaves the target's output directory (`..`)"
        ));
    }
    // Git refuses a tree holding `.git` (any case): a catalog with
    // `t/.git/config.yaml` compiled (exit 0) and could never be pushed
    // (``invalid filename: ".GIT"``, naming no file; probe 37).
    if p.split('/').any(|c| c.eq_ignore_ascii_case(".git")) {
        return Err(format!(
            "{what} `{}` holds a `.git` directory, which git refuses to commit (the catalog could not be pushed): rename the key or path that names it",
            shown(p)
        ));
    }
    Ok(())
}

/// An absolute `output_path` is taken only inside one of the target's
/// allowed roots (lexically, after `.`/`..` are folded): the root it lies
/// in, and the normalised directory.
fn absolute_output<'a>(ctx: &'a TargetCtx, p: &str) -> Result<Option<(&'a Path, PathBuf)>, String> {
    let path = Path::new(p);
    if !path.is_absolute() || ctx.abs_roots.is_empty() {
        return Ok(None);
    }
    let dir = jsonnet::normpath(path);
    match ctx.abs_roots.iter().find(|r| dir.starts_with(r)) {
        Some(r) => Ok(Some((r.as_path(), dir))),
        None => Err(format!(
            "output_path `{p}` is absolute and outside {}: an absolute output_path must lie inside the component's own directory (`${{_base_directory}}`), any other must be relative to the target's output directory",
            ctx.abs_roots
                .iter()
                .map(|r| format!("`{}`", r.display()))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// The root a write below `path` has to stay in: the target's output
/// directory, or the allowed root `path` lies in (lexically).
fn root_of<'a>(ctx: &'a TargetCtx, path: &Path) -> Result<&'a Path, String> {
    if path.starts_with(&ctx.target_root) {
        return Ok(&ctx.target_root);
    }
    ctx.abs_roots
        .iter()
        .find(|r| path.starts_with(r))
        .map(PathBuf::as_path)
        .ok_or_else(|| {
            format!(
                "{} is outside the target's output directory",
                path.display()
            )
        })
}

/// `create_dir_all(dir)` that refuses to start when the deepest existing
/// ancestor of `dir` resolves (through symlinks) outside `root`, so no
/// directory is ever created outside it; then checks `dir` itself.
fn create_dir_inside(ctx: &TargetCtx, root: &Path, dir: &Path) -> Result<(), String> {
    let mut existing = dir;
    while std::fs::symlink_metadata(existing).is_err() {
        match existing.parent() {
            Some(p) => existing = p,
            None => break,
        }
    }
    if existing != dir {
        dir_inside(root, existing, &root_name(ctx, root))?;
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    dir_inside(root, dir, &root_name(ctx, root))
}

/// Checks that the existing directory `dir` resolves (through symlinks)
/// inside `root`, which errors call `name`.
fn dir_inside(root: &Path, dir: &Path, name: &str) -> Result<(), String> {
    let (Ok(r), Ok(d)) = (root.canonicalize(), dir.canonicalize()) else {
        return Ok(());
    };
    if d.starts_with(&r) {
        Ok(())
    } else {
        Err(format!(
            "{} resolves outside {name} (through a symlink)",
            dir.display()
        ))
    }
}

/// How errors call a root writes must stay in.
fn root_name(ctx: &TargetCtx, root: &Path) -> String {
    if root == ctx.target_root {
        "the target's output directory".into()
    } else {
        format!("the component directory `{}`", root.display())
    }
}

/// After creating `path`'s parent, checks that no symlink took it outside
/// `root`.
fn check_inside(root: &Path, path: &Path) -> Result<(), String> {
    check_inside_named(root, path, "the target's output directory")
}

/// [`check_inside`] for a root the error calls `name`.
fn check_inside_named(root: &Path, path: &Path, name: &str) -> Result<(), String> {
    let parent = path.parent().unwrap_or(path);
    let (Ok(r), Ok(p)) = (root.canonicalize(), parent.canonicalize()) else {
        return Ok(());
    };
    if !p.starts_with(&r) {
        return Err(format!(
            "{} resolves outside {name} (through a symlink)",
            path.display()
        ));
    }
    refuse_symlink(path)
}

fn refuse_symlink(path: &Path) -> Result<(), String> {
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if meta.file_type().is_symlink() {
            return Err(format!(
                "{} is a symlink; strata does not write through symlinks",
                path.display()
            ));
        }
    }
    Ok(())
}

pub(crate) fn has_magic(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// The first directory that globbing `pattern` would list and `check`
/// refuses, walking the pattern's directory components as the glob does
/// (each directory checked before it is listed). At most 100,000
/// directories are looked at; past that the walk stops and the glob runs
/// (the matches are checked one by one all the same).
fn first_refused_dir(
    pattern: &str,
    opts: glob::MatchOptions,
    check: &dyn Fn(&Path) -> Result<(), String>,
) -> Option<PathBuf> {
    use std::path::Component;
    let mut base = PathBuf::new();
    let mut rest: Vec<String> = Vec::new();
    for c in Path::new(pattern).components() {
        let text = c.as_os_str().to_string_lossy().into_owned();
        if rest.is_empty() && !(matches!(c, Component::Normal(_)) && has_magic(&text)) {
            base.push(c.as_os_str());
        } else {
            rest.push(text);
        }
    }
    if base.as_os_str().is_empty() {
        base.push(".");
    }
    let mut budget = 100_000usize;
    let mut dirs = vec![base];
    // Every component but the last names directories to descend into;
    // the last is matched in each directory reached (so those are listed).
    let steps = rest.len().saturating_sub(1);
    for comp in rest.iter().take(steps) {
        let mut next = Vec::new();
        for d in &dirs {
            if check(d).is_err() {
                return Some(d.clone());
            }
            if !has_magic(comp) {
                let p = d.join(comp);
                if p.is_dir() {
                    next.push(p);
                }
            } else {
                let pat = glob::Pattern::new(comp).ok()?;
                for x in subdirs(d) {
                    budget = budget.checked_sub(1)?;
                    let name = x.file_name().map(|n| n.to_string_lossy().into_owned());
                    if name.is_some_and(|n| pat.matches_with(&n, opts)) {
                        next.push(x);
                    }
                }
            }
        }
        dirs = next;
    }
    dirs.into_iter().find(|d| check(d).is_err())
}

/// The directories (symlinks to directories included) in `d`, sorted.
fn subdirs(d: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(d) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out
}

/// `pattern` with each run of `*` made one `*` (the same wildcard for
/// Python's `fnmatch`).
fn squeeze_stars(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    for c in pattern.chars() {
        if !(c == '*' && out.ends_with('*')) {
            out.push(c);
        }
    }
    out
}

/// Kapitan's input lookup: every search path, globbing when the path has
/// glob characters. Sorted and deduplicated (Kapitan uses a set).
pub(crate) fn resolve_inputs(pattern: &str, search_paths: &[PathBuf]) -> Vec<PathBuf> {
    resolve_inputs_within(pattern, search_paths, &confine::check)
}

/// [`resolve_inputs`] that lists no directory `check` refuses: a glob
/// meeting one (a symlink out of the tree) returns that directory alone,
/// which the caller's own check then refuses by its name. Before, the glob
/// listed it and the error named the first file found there (re-probe 8).
pub(crate) fn resolve_inputs_within(
    pattern: &str,
    search_paths: &[PathBuf],
    check: &dyn Fn(&Path) -> Result<(), String>,
) -> Vec<PathBuf> {
    // Python's `glob.glob` without `recursive=True`, as Kapitan calls it,
    // reads `**` as `*` (one name); the glob crate's recursive `**` matched
    // every path below, and repeated (`**/**/**/*`) once per way of
    // splitting a path among them (re-probe 15).
    let pattern = &squeeze_stars(pattern);
    let mut out = Vec::new();
    let mut link_out = None;
    for s in search_paths {
        if has_magic(pattern) {
            // os.path.join drops the search path for an absolute pattern.
            let full = if Path::new(pattern).is_absolute() {
                pattern.to_string()
            } else {
                format!(
                    "{}/{}",
                    glob::Pattern::escape(&s.to_string_lossy()),
                    pattern
                )
            };
            let opts = glob::MatchOptions {
                require_literal_leading_dot: true,
                ..Default::default()
            };
            if let Some(refused) = first_refused_dir(&full, opts, check) {
                out.push(refused);
                continue;
            }
            if let Ok(paths) = glob::glob_with(&full, opts) {
                out.extend(paths.filter_map(Result::ok));
            }
        } else {
            let p = s.join(pattern);
            if p.exists() || std::fs::symlink_metadata(&p).is_ok() {
                out.push(jsonnet::normpath(&p));
            } else if link_out.is_none() && confine::refused_link_out(&p).is_some() {
                link_out = Some(jsonnet::normpath(&p));
            }
        }
    }
    // Found nowhere, but the first search path's candidate is below a
    // directory a pull request links out of its tree: listed for the
    // caller's check to refuse by name, as in the working tree, not
    // reported missing (probe 45).
    if out.is_empty() {
        out.extend(link_out);
    }
    out.sort();
    out.dedup();
    out
}

/// What one compile run's targets share.
struct RunShared {
    /// The run's one Python interpreter (started on first use).
    bridge: Arc<python::Bridge>,
    /// Files written by all targets, and the most allowed
    /// ([`crate::limits::max_files`]).
    files: std::sync::atomic::AtomicU64,
    max_files: u64,
    /// Bytes written by all targets, and the most allowed
    /// ([`crate::limits::max_catalog_bytes`]).
    bytes: std::sync::atomic::AtomicU64,
    max_bytes: u64,
    /// The tree and the targets that keep their files in it.
    memory: Option<(Arc<crate::memtree::MemTree>, BTreeSet<String>)>,
}

impl RunShared {
    /// Adds `n` bytes to what the run wrote; whether that is past the most
    /// allowed.
    fn past_max_bytes(&self, n: u64) -> bool {
        self.bytes
            .fetch_add(n, std::sync::atomic::Ordering::Relaxed)
            .saturating_add(n)
            > self.max_bytes
    }
}

struct TargetCtx<'a> {
    plan: &'a TargetPlan,
    prepared: &'a Prepared,
    /// Search paths plus the temporary catalog root.
    search_paths: Vec<PathBuf>,
    /// `<tmp>/compiled/<target dir>`.
    target_root: PathBuf,
    /// `<tmp>`, the catalog being built.
    catalog_root: PathBuf,
    write: WriteOptions,
    /// Normalised directories an absolute `output_path` may name
    /// ([`CompileOptions::absolute_roots`]); writes there are always careful.
    abs_roots: Vec<PathBuf>,
    /// The compile's one Python interpreter (started on first use).
    python: &'a Arc<python::Bridge>,
    refs: Option<&'a RefsSetup>,
    target_refs: crate::refs::TargetRefs,
    /// Directories this target created (or found) below `target_root`.
    dirs: RefCell<HashSet<PathBuf>>,
    /// Something other than strata's own writers (an external program,
    /// helm) writes into the catalog, so a symlink may appear anywhere in
    /// it: every write is then checked against the file system.
    careful: bool,
    /// A written file mentions `PackageInstall`: the Carvel package step
    /// has to read the outputs back (otherwise it has nothing to find).
    wrote_install: std::cell::Cell<bool>,
    /// Files written so far, and the most allowed
    /// ([`crate::limits::max_target_files`]).
    files: std::cell::Cell<u64>,
    max_files: u64,
    /// What the run's targets share.
    run: &'a RunShared,
    /// Where this target's files go instead of the disk, while the tree's
    /// budget lasts ([`InMemory`]); `None` once they went to disk.
    memory: std::cell::Cell<Option<&'a crate::memtree::MemTree>>,
}

impl TargetCtx<'_> {
    /// `path`'s name below `compiled/` when the target keeps its files in
    /// memory.
    fn in_memory(&self, path: &Path) -> Option<(&crate::memtree::MemTree, PathBuf)> {
        let tree = self.memory.get()?;
        let rel = path.strip_prefix(self.catalog_root.join("compiled")).ok()?;
        Some((tree, rel.to_path_buf()))
    }

    /// Writes what the target kept in memory to disk and keeps everything
    /// after it there: for the package step, which reads the outputs back,
    /// and for a name used both as a file and as a directory, so that the
    /// write meets the same error as on disk.
    fn spill(&self) -> Result<(), String> {
        let Some(tree) = self.memory.take() else {
            return Ok(());
        };
        tree.write_out(
            &self.catalog_root.join("compiled"),
            Path::new(&self.plan.dir),
        )
        .and_then(|()| std::fs::create_dir_all(&self.target_root))
        .map_err(|e| format!("{}: {e}", self.target_root.display()))
    }
}

/// Kapitan secret references for a compile run: where they live and
/// whether values are written (`--reveal`) or only hashed tags.
pub struct RefsSetup {
    pub refs: Arc<crate::refs::Refs>,
    pub reveal: bool,
}

/// Marks the hint part of a reference error inside the entry's error text.
const HINT_SEP: &str = "\u{1f}hint:";

fn ref_err(e: crate::refs::RefError) -> String {
    match e.hint {
        Some(h) => format!("{}{HINT_SEP}{h}", e.message),
        None => e.message,
    }
}

/// A compiled value with its reference tags compiled (or revealed).
fn refs_value(ctx: &TargetCtx, v: &Value) -> Result<Option<Value>, String> {
    let Some(r) = ctx.refs else { return Ok(None) };
    if !crate::refs::value_has_tags(v) {
        return Ok(None);
    }
    let res = if r.reveal {
        r.refs.reveal_value(v, &ctx.target_refs)
    } else {
        r.refs.compile_value(v, &ctx.target_refs)
    };
    res.map(Some).map_err(ref_err)
}

/// Text output (jinja2, ytt, plain) with its reference tags compiled.
fn refs_text(ctx: &TargetCtx, text: String) -> Result<String, String> {
    let Some(r) = ctx.refs else { return Ok(text) };
    if !text.contains("?{") {
        return Ok(text);
    }
    let res = if r.reveal {
        r.refs.reveal_str(&text, &ctx.target_refs)
    } else {
        r.refs.compile_str(&text, &ctx.target_refs)
    };
    res.map_err(ref_err)
}

fn mentions_install(bytes: &[u8]) -> bool {
    const NEEDLE: &[u8] = b"PackageInstall";
    match std::str::from_utf8(bytes) {
        Ok(s) => s.contains("PackageInstall"),
        Err(_) => bytes.windows(NEEDLE.len()).any(|w| w == NEEDLE),
    }
}

fn write_file(ctx: &TargetCtx, path: &Path, bytes: &[u8]) -> Result<(), String> {
    let n = ctx.files.get() + 1;
    ctx.files.set(n);
    if n > ctx.max_files {
        return Err(format!(
            "the target writes more than {} files (one per top-level key of a jsonnet or kadet output): write fewer, larger files, or raise STRATA_MAX_TARGET_FILES",
            ctx.max_files
        ));
    }
    let all = ctx
        .run
        .files
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        + 1;
    if all > ctx.run.max_files {
        return Err(format!(
            "the compile writes more than {} files in all targets together: write fewer, larger files, or raise STRATA_MAX_FILES",
            ctx.run.max_files
        ));
    }
    let len = bytes.len() as u64;
    if ctx.run.past_max_bytes(len) {
        return Err(format!(
            "the compile writes more than {} bytes in all targets together (this file {len}): a large file copied or generated by a class many targets include? Write smaller files, or raise STRATA_MAX_CATALOG_BYTES",
            ctx.run.max_bytes
        ));
    }
    if !ctx.wrote_install.get() && mentions_install(bytes) {
        ctx.wrote_install.set(true);
    }
    if ctx.careful || !path.starts_with(&ctx.target_root) {
        let root = root_of(ctx, path)?;
        match path.parent() {
            Some(parent) => create_dir_inside(ctx, root, parent)?,
            None => check_inside_named(root, path, &root_name(ctx, root))?,
        }
        refuse_symlink(path)?;
        return std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()));
    }
    // The catalog is a fresh directory that only strata's writers fill,
    // with regular files and directories: names were checked lexically
    // (check_relative), so no path can leave it and nothing needs a look
    // at the file system besides creating each directory once.
    if let Some((tree, rel)) = ctx.in_memory(path) {
        if disk_may_refuse(path) || tree.file_conflicts(&rel) {
            ctx.spill()?;
        } else if tree.put(&rel, bytes) {
            return Ok(());
        } else {
            // Past the budget: on disk, and only there.
            tree.remove(&rel);
        }
    }
    if let Some(parent) = path.parent() {
        ensure_dir(ctx, parent)?;
    }
    timings::time("write files (summed over threads)", || {
        std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
    })
}

/// Whether the file system may refuse `path` for its length alone (Linux
/// takes at most 4,095 bytes; names were checked already): a target kept
/// in memory then goes to disk, to meet the same error as a full compile
/// (a key of 30 names of 200 bytes passed in memory and failed on disk).
/// Going to disk is always right, so the bound is loose. So does a name
/// ending in `/` or `/.` (a jsonnet key `a/`): the tree's key, a
/// `PathBuf`, drops that end and kept the file as `a`, where the disk
/// says "Is a directory" or "No such file or directory" (an incremental
/// review exited 0 where `--full` failed).
fn disk_may_refuse(path: &Path) -> bool {
    let raw = path.as_os_str().as_encoded_bytes();
    raw.len() >= 3_800 || raw.ends_with(b"/") || raw.ends_with(b"/.") || raw == b"."
}

fn ensure_dir(ctx: &TargetCtx, dir: &Path) -> Result<(), String> {
    if ctx.dirs.borrow().contains(dir) {
        return Ok(());
    }
    timings::time("mkdir (summed over threads)", || {
        std::fs::create_dir_all(dir)
    })
    .map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut dirs = ctx.dirs.borrow_mut();
    let mut d = Some(dir);
    while let Some(p) = d {
        if !dirs.insert(p.to_path_buf()) || p == ctx.target_root {
            break;
        }
        d = p.parent();
    }
    Ok(())
}

fn compile_jsonnet(
    ctx: &TargetCtx,
    entry: &Entry,
    input: &Path,
    out_dir: &Path,
) -> Result<(), String> {
    let env = jsonnet::JsonnetEnv {
        search_paths: ctx.search_paths.clone(),
        inventory: ctx.prepared.jsonnet_view.clone(),
        python: Some(ctx.python.clone()),
    };
    let v = timings::time("jsonnet eval (summed over threads)", || {
        jsonnet::evaluate(input, &ctx.plan.target_var, &env)
    })?;
    let v = match v {
        Value::Map(m) => m,
        other => {
            let base = input
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            // os.path.splitext: the last extension; leading dots do not count.
            let trimmed = base.trim_start_matches('.');
            let lead = base.len() - trimmed.len();
            let stem = match trimmed.rfind('.') {
                Some(i) => base[..lead + i].to_string(),
                None => base.clone(),
            };
            let mut m = Map::default();
            m.insert(stem, other);
            m
        }
    };
    write_outputs(ctx, entry, &v, out_dir)
}

/// Writes every key of an input's result as one output file (Kapitan's
/// `InputType.to_file`), for jsonnet and kadet.
fn write_outputs(ctx: &TargetCtx, entry: &Entry, v: &Map, out_dir: &Path) -> Result<(), String> {
    for (key, value) in v {
        let pruned;
        let value = if entry.prune {
            pruned = output::prune_empty(value);
            &pruned
        } else {
            value
        };
        let (name, format) = output::file_for_key(key, entry.output_type);
        check_relative(&name, "output file")?;
        let with_refs = refs_value(ctx, value)?;
        let value = with_refs.as_ref().unwrap_or(value);
        let text = timings::time("serialise (summed over threads)", || {
            output::render_file(value, format, &ctx.write)
        })
        .map_err(|e| format!("cannot write key `{key}` as {}: {e}", format_name(format)))?;
        write_file(ctx, &out_dir.join(&name), text.as_bytes())?;
    }
    Ok(())
}

/// `input_type: kadet`: the input directory's `main()` runs in the compile's
/// Python bridge; its files are written by strata's emitters.
fn compile_kadet(
    ctx: &TargetCtx,
    entry: &Entry,
    input: &Path,
    out_dir: &Path,
) -> Result<(), String> {
    let out = ctx
        .python
        .kadet(
            &ctx.plan.name,
            input,
            &entry.input_params,
            out_dir,
            &ctx.search_paths,
            &kadet_host_request,
        )
        .map_err(|e| e.to_string())?;
    match out {
        Some(m) => write_outputs(ctx, entry, &m, out_dir),
        None => Ok(()),
    }
}

/// What a kadet input asks of strata while it runs: Kapitan's `HelmChart`
/// (kapicorp/generators' `charts` generator: kapitan-reference's `keda`
/// target) renders `chart_dir` with `helm template` under the same rules
/// as a `helm` entry (flag checks, a confined compile's paths and
/// environment) and gets helm's documents in stdout order, nulls dropped.
fn kadet_host_request(req: &serde_json::Value) -> serde_json::Value {
    let run = || -> Result<Vec<Value>, String> {
        let Some(Value::Map(m)) = req.get("helm").map(Value::from_json) else {
            return Err("strata's kadet bridge sent a request strata does not know".into());
        };
        let chart = match m.get("chart_dir") {
            Some(Value::String(d)) => PathBuf::from(d),
            _ => return Err("HelmChart: chart_dir must be a string".into()),
        };
        // Relative to the repository (Kapitan's working directory): in a
        // review, the revision's tree.
        let chart = match confine::base() {
            Some(b) if chart.is_relative() => b.join(chart),
            _ => chart,
        };
        confine::check_tree(&chart)?;
        let mut params = match m.get("helm_params") {
            Some(Value::Map(p)) => p.clone(),
            _ => Map::default(),
        };
        // Kapitan renders to stdout (`output_path="-"`): helm's own order
        // of documents, not one file per template.
        params.insert("output_file".into(), Value::String("helmchart.yaml".into()));
        let mut extra = Map::default();
        extra.insert("helm_params".into(), Value::Map(params));
        if let Some(v) = m.get("helm_values") {
            extra.insert("helm_values".into(), v.clone());
        }
        if let Some(p @ Value::String(_)) = m.get("helm_path") {
            extra.insert("helm_path".into(), p.clone());
        }
        let files = helm::render(&extra, &chart)
            .map_err(|e| format!("HelmChart {}: {e}", chart.display()))?;
        Ok(files.into_iter().flat_map(|(_, docs)| docs).collect())
    };
    match run() {
        Ok(docs) => serde_json::json!({"ok": true, "docs": Value::List(docs)}),
        Err(e) => serde_json::json!({"ok": false, "error": e}),
    }
}

fn format_name(f: Format) -> &'static str {
    match f {
        Format::Yaml => "yaml",
        Format::Json => "json",
        Format::Toml => "toml",
        Format::Plain => "plain",
    }
}

fn compile_jinja2(
    ctx: &TargetCtx,
    entry: &Entry,
    input: &Path,
    out_dir: &Path,
) -> Result<(), String> {
    let mut input_params = entry.input_params.clone();
    input_params
        .entry("compile_path".to_string())
        .or_insert_with(|| Value::String(out_dir.to_string_lossy().into_owned()));
    let mut c: Vec<(String, minijinja::Value)> = vec![
        (
            "inventory_global".into(),
            ctx.prepared.jinja().global.clone(),
        ),
        (
            "inventory".into(),
            ctx.prepared
                .jinja()
                .targets
                .get(&ctx.plan.target_var)
                .cloned()
                .unwrap_or_default(),
        ),
        (
            "input_params".into(),
            jinja::to_template_value(&Value::Map(input_params)),
        ),
    ];
    for (k, v) in &ctx.plan.vars {
        c.push((k.clone(), jinja::to_template_value(v)));
    }
    let tctx = minijinja::Value::from_iter(c);
    let filters = ctx.python.jinja_filters().map_err(|e| e.to_string())?;
    let configure = |env: &mut minijinja::Environment<'static>| {
        python::add_filters(ctx.python, &filters, env);
    };
    let rendered = timings::time("jinja2 render (summed over threads)", || {
        jinja::render_path(input, &tctx, &ctx.search_paths, &configure)
    })?;
    for r in rendered {
        let mut name = r.name;
        if entry.suffix_remove && name.ends_with(&entry.suffix_stripped) {
            // Kapitan uses str.rstrip, which strips any trailing run of the
            // suffix's characters (`build2.j2` -> `build`): kept on purpose.
            let set: Vec<char> = entry.suffix_stripped.chars().collect();
            name = name.trim_end_matches(|c| set.contains(&c)).to_string();
        }
        check_relative(&name, "output file")?;
        let path = out_dir.join(&name);
        let content = refs_text(ctx, r.content)?;
        write_file(ctx, &path, content.as_bytes())?;
        set_mode(ctx, &path, r.mode);
    }
    Ok(())
}

#[cfg(unix)]
fn set_mode(ctx: &TargetCtx, path: &Path, mode: Option<u32>) {
    use std::os::unix::fs::PermissionsExt;
    if let Some(m) = mode {
        if let Some((tree, rel)) = ctx.in_memory(path) {
            if tree.set_mode(&rel, m) {
                return;
            }
        }
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(m));
    }
}

#[cfg(not(unix))]
fn set_mode(_ctx: &TargetCtx, _path: &Path, _mode: Option<u32>) {}

/// Whether the directory really at `real` is the catalog being built (really
/// at `catalog`), the catalog it replaces, or another compile's temporary
/// catalog: `copy` of a directory that holds them (`input_paths: [.]`)
/// would copy its own output into itself, level after level, and the
/// previous catalog one level deeper every compile.
fn is_own_output(real: &Path, catalog: Option<&Path>) -> bool {
    let Some(catalog) = catalog else {
        return false;
    };
    if real == catalog {
        return true;
    }
    // A temporary catalog lives in the output directory, beside `compiled`.
    let temporary = catalog
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with(TEMP_PREFIX));
    let Some(output) = catalog.parent().filter(|_| temporary) else {
        return false;
    };
    real == output.join("compiled")
        || (real.parent() == Some(output)
            && real
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(TEMP_PREFIX)))
}

/// `copy` of a regular file, or of a directory (its files, directories and
/// symlinks to them, recursively). A FIFO would block the read forever and
/// a device (`/dev/zero`) never ends: both are refused, as are sockets.
fn copy_into(ctx: &TargetCtx, src: &Path, dst: &Path) -> Result<(), String> {
    let catalog = crate::fswalk::resolve(&ctx.catalog_root).ok();
    Copy {
        ctx,
        top: dst,
        top_real: None,
        catalog: catalog.as_deref(),
        visits: crate::fswalk::Visits::default(),
    }
    .copy(src, None, dst)
}

/// One `copy` walk. Each directory is resolved from its parent's real path
/// (only symlinks are resolved whole): resolving each from the root cost
/// each level every level above it.
struct Copy<'a, 'c> {
    ctx: &'a TargetCtx<'c>,
    /// The directory being copied into, and where it really is once it
    /// exists.
    top: &'a Path,
    top_real: Option<PathBuf>,
    /// Where the catalog being built really is.
    catalog: Option<&'a Path>,
    visits: crate::fswalk::Visits,
}

impl Copy<'_, '_> {
    /// Copies `src` (really at `real`, when its directory's walk knows it)
    /// to `dst`.
    fn copy(&mut self, src: &Path, real: Option<PathBuf>, dst: &Path) -> Result<(), String> {
        let ctx = self.ctx;
        // Follows symlinks, as the copy does; opens nothing.
        let meta = std::fs::metadata(src).map_err(|e| format!("{}: {e}", src.display()))?;
        if meta.is_dir() {
            let real = match real {
                Some(r) => r,
                None => {
                    crate::fswalk::resolve(src).map_err(|e| format!("{}: {e}", src.display()))?
                }
            };
            if is_own_output(&real, self.catalog) {
                return Ok(());
            }
            // Before it is listed: the names of an outside directory (a key
            // in the runner's home) are not the repository's to show either.
            confine::check_resolved(src, &real)?;
            // The directory being copied into, met inside what is copied (a
            // glob such as `*` matches the target's own output in the
            // catalog being built): copying it would copy it into itself,
            // level after level. It exists once the first directory is
            // copied.
            if self.top_real.is_none() {
                self.top_real = crate::fswalk::resolve(self.top).ok();
            }
            if self.top_real.as_ref() == Some(&real) {
                return Ok(());
            }
            // A link back up (`up -> ..`) would repeat the tree until the
            // path is too long; links that fan out would copy it 2^n times.
            self.visits.enter(real.clone()).map_err(|why| {
                format!(
                    "{}: {}: copy cannot follow it",
                    src.display(),
                    why.message("copied")
                )
            })?;
            let res = self.copy_dir(src, &real, dst);
            self.visits.leave();
            res
        } else if meta.is_file() {
            match &real {
                Some(r) => confine::check_resolved(src, r)?,
                None => confine::check(src)?,
            }
            let bytes = std::fs::read(src).map_err(|e| format!("{}: {e}", src.display()))?;
            write_file(ctx, dst, &bytes)?;
            set_mode(ctx, dst, jinja::file_mode(src));
            Ok(())
        } else {
            Err(format!(
                "{}: {}, not a regular file or directory: copy reads only files and directories (and symlinks to them)",
                src.display(),
                special_kind(&meta)
            ))
        }
    }

    /// The entries of directory `src` (really at `real`), entered.
    fn copy_dir(&mut self, src: &Path, real: &Path, dst: &Path) -> Result<(), String> {
        let ctx = self.ctx;
        // As for output names: each level costs every later walk of the
        // catalog (a copied tree 800 levels deep took a review 51 s).
        let depth = dst
            .strip_prefix(&ctx.target_root)
            .map_or(0, |r| r.components().count());
        if depth > MAX_PATH_COMPONENTS {
            return Err(format!(
                "{}: the copy nests directories more than {MAX_PATH_COMPONENTS} levels deep in the target's output; copy a shallower tree",
                src.display()
            ));
        }
        if ctx.careful || !dst.starts_with(&ctx.target_root) {
            create_dir_inside(ctx, root_of(ctx, dst)?, dst)?;
        } else {
            ensure_dir(ctx, dst)?;
        }
        let mut entries: Vec<_> = std::fs::read_dir(src)
            .map_err(|e| format!("{}: {e}", src.display()))?
            .filter_map(Result::ok)
            .collect();
        entries.sort_by_key(|e| e.file_name());
        entries.iter().try_for_each(|e| {
            let path = e.path();
            let link = e.file_type().is_ok_and(|t| t.is_symlink());
            // A dangling link fails as it did: on reading what it names.
            let inner = crate::fswalk::real_entry(real, &path, link).ok();
            self.copy(&path, inner, &dst.join(e.file_name()))
        })
    }
}

#[cfg(unix)]
fn special_kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else {
        "a special file"
    }
}

#[cfg(not(unix))]
fn special_kind(_meta: &std::fs::Metadata) -> &'static str {
    "a special file"
}

fn compile_copy(ctx: &TargetCtx, input: &Path, out_dir: &Path) -> Result<(), String> {
    if input.is_dir() {
        copy_into(ctx, input, out_dir)
    } else {
        let name = input.file_name().unwrap_or_default();
        copy_into(ctx, input, &out_dir.join(name))
    }
}

fn compile_remove(input: &Path, catalog_root: &Path, abs_roots: &[PathBuf]) -> Result<(), String> {
    // Only the catalog being built may lose files: Kapitan would also delete
    // matches below `.` (a previous catalog), strata leaves them alone.
    // Below an allowed root (a Commodore component's directory, where its
    // kustomizations are generated) files may go too, but never the root.
    let Ok(p) = input.canonicalize() else {
        return Ok(());
    };
    let inside = |root: &Path, strict: bool| {
        root.canonicalize()
            .is_ok_and(|r| p.starts_with(&r) && !(strict && p == r))
    };
    if !inside(catalog_root, false) && !abs_roots.iter().any(|r| inside(r, true)) {
        return Ok(());
    }
    // The whole catalog being built (`input_paths: [""]` or `[compiled]`):
    // nothing would be left to install.
    if [catalog_root.to_path_buf(), catalog_root.join("compiled")]
        .iter()
        .any(|r| r.canonicalize().is_ok_and(|r| r == p))
    {
        return Err(format!(
            "`{}` is the whole catalog being built: remove only what is below a target's directory",
            input.display()
        ));
    }
    let res = if p.is_dir() {
        std::fs::remove_dir_all(&p)
    } else {
        std::fs::remove_file(&p)
    };
    res.map_err(|e| format!("cannot remove {}: {e}", p.display()))
}

fn compile_external(entry: &Entry, input: &Path, out_dir: &Path) -> Result<(), String> {
    let dir = out_dir.to_string_lossy();
    let subst = |s: &str| s.replace("${compiled_target_dir}", &dir);
    let mut cmd = vec![input.to_string_lossy().into_owned()];
    cmd.extend(entry.args.iter().map(|a| subst(a)));
    let mut c = std::process::Command::new("/bin/sh");
    c.arg("-c").arg(cmd.join(" ")).env_clear();
    let mut has_path = false;
    let mut has_home = false;
    for (k, v) in &entry.env_vars {
        has_path |= k == "PATH";
        has_home |= k == "HOME";
        c.env(k, subst(v));
    }
    if !has_path {
        if let Some(p) = std::env::var_os("PATH") {
            c.env("PATH", p);
        }
    }
    if !has_home {
        if let Some(h) = std::env::var_os("HOME") {
            c.env("HOME", h);
        }
    }
    // What it prints on stdout is not used (nor kept: `yes` would fill
    // memory); the end of its stderr goes into the error.
    c.stdout(std::process::Stdio::null());
    match child::run(&mut c).map_err(|e| format!("cannot run {}: {e}", input.display()))? {
        child::Ended::TimedOut(limit) => Err(format!(
            "external command `{}` {}",
            cmd.join(" "),
            child::timed_out_message(limit)
        )),
        child::Ended::Exited(status, _) if status.success() => Ok(()),
        child::Ended::Exited(status, stderr) => Err(format!(
            "external command `{}` failed ({status}): {}",
            cmd.join(" "),
            stderr.trim_end()
        )),
    }
}

/// Runs an `external` entry and charges what it wrote into the catalog to
/// the run's byte and file budgets, as strata's own writes are charged
/// before each file: the program writes its files itself, so a script
/// writing 20 GB into `${compiled_target_dir}` (or one file per target of
/// a class many targets include) was never counted (probe 39's left-over,
/// probe 40). Measured once the program has exited, as the growth of the
/// target's directory (or the absolute output directory), before the
/// catalog is swapped in; links are not followed.
fn external_counted(
    ctx: &TargetCtx,
    out_dir: &Path,
    run: impl FnOnce() -> Result<(), String>,
) -> Result<(), String> {
    let root = if out_dir.starts_with(&ctx.target_root) {
        ctx.target_root.as_path()
    } else {
        out_dir
    };
    let file_budget = ctx.max_files.min(ctx.run.max_files);
    let (files0, bytes0) = tree_usage(root, u64::MAX);
    run()?;
    let (files1, bytes1) = tree_usage(root, files0.saturating_add(file_budget));
    let (files, bytes) = (files1.saturating_sub(files0), bytes1.saturating_sub(bytes0));
    let n = ctx.files.get().saturating_add(files);
    ctx.files.set(n);
    let all = ctx
        .run
        .files
        .fetch_add(files, std::sync::atomic::Ordering::Relaxed)
        .saturating_add(files);
    if n > ctx.max_files || all > ctx.run.max_files {
        return Err(format!(
            "the external command wrote {files} files and directories or more into the catalog, past the limit of {} files for one target (STRATA_MAX_TARGET_FILES) or {} for the run (STRATA_MAX_FILES): write fewer, larger files, or raise the limit",
            ctx.max_files, ctx.run.max_files
        ));
    }
    if ctx.run.past_max_bytes(bytes) {
        return Err(format!(
            "the compile writes more than {} bytes in all targets together (this external command {bytes}, counted once it had exited): a program writing without end, or a large file written for each target of a class many targets include? Write smaller files, or raise STRATA_MAX_CATALOG_BYTES",
            ctx.run.max_bytes
        ));
    }
    Ok(())
}

/// Regular files and directories below `root`, and the files' sizes
/// summed, links not followed; the walk stops once more than `max_files`
/// were seen (what it counted so far, past the limit, is returned).
fn tree_usage(root: &Path, max_files: u64) -> (u64, u64) {
    let (mut files, mut bytes) = (0u64, 0u64);
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() {
                todo.push(e.path());
            } else if t.is_file() {
                bytes = bytes.saturating_add(e.metadata().map(|m| m.len()).unwrap_or(0));
            } else {
                continue;
            }
            files += 1;
            if files > max_files {
                return (files, bytes);
            }
        }
    }
    (files, bytes)
}

/// `input_type: helm`: one output file per rendered template, at the path
/// helm gave it below `output_path` (Kapitan's `Helm.compile_file`).
fn compile_helm(
    ctx: &TargetCtx,
    entry: &Entry,
    input: &Path,
    out_dir: &Path,
) -> Result<(), String> {
    for (rel, docs) in helm::render(&entry.extra, input)? {
        let docs = Value::List(docs);
        let value = if entry.prune {
            output::prune_empty(&docs)
        } else {
            docs
        };
        let (name, format) = output::file_for_key(&rel, entry.output_type);
        check_relative(&name, "output file")?;
        let value = refs_value(ctx, &value)?.unwrap_or(value);
        let text = output::render_file(&value, format, &ctx.write)
            .map_err(|e| format!("cannot write {rel} as {}: {e}", format_name(format)))?;
        write_file(ctx, &out_dir.join(&name), text.as_bytes())?;
    }
    Ok(())
}

fn compile_entry(ctx: &TargetCtx, entry: &Entry, catalog_root: &Path) -> Result<(), CompileError> {
    let target = ctx.plan.name.as_str();
    let err = |m: String| CompileError::new(m).target(target).entry(entry);
    let output_path = entry.output_path.as_deref().unwrap_or(".");
    let out_dir = match absolute_output(ctx, output_path).map_err(err)? {
        Some((root, dir)) => {
            if entry.input_type != InputType::Remove {
                create_dir_inside(ctx, root, &dir).map_err(err)?;
            }
            dir
        }
        None => {
            check_relative(output_path, "output_path").map_err(err)?;
            let out_dir = jsonnet::normpath(&ctx.target_root.join(output_path));
            // A target kept in memory has nothing on disk to check; its
            // output directory is recorded, as an empty one is a
            // directory a file cannot take the name of.
            if let Some((tree, rel)) = ctx
                .in_memory(&out_dir)
                .filter(|_| entry.input_type != InputType::Remove)
            {
                if disk_may_refuse(&out_dir) || tree.dir_conflicts(&rel) {
                    ctx.spill().map_err(err)?;
                } else {
                    tree.add_dir(&rel);
                }
            }
            if entry.input_type != InputType::Remove && ctx.memory.get().is_none() {
                std::fs::create_dir_all(&out_dir)
                    .map_err(|e| err(format!("{}: {e}", out_dir.display())))?;
                // Checks the directory itself (check_inside looks at a path's parent).
                check_inside(&ctx.target_root, &out_dir.join("x")).map_err(err)?;
                ctx.dirs.borrow_mut().insert(out_dir.clone());
            }
            out_dir
        }
    };
    // Code from the repository runs here: its memory is metered (a value
    // doubled in a loop would otherwise take all of it).
    let what = |input: Option<&Path>| match input {
        Some(i) => format!(
            "target {target}, {}, input {}",
            entry.describe(),
            i.display()
        ),
        None => format!("target {target}, {}", entry.describe()),
    };
    if entry.input_type == InputType::Ytt {
        let res = crate::memguard::metered(&what(None), || {
            contain_panic(|| compile_ytt(ctx, entry, &out_dir))
        });
        return res.map_err(|m| match m.split_once(HINT_SEP) {
            Some((m, h)) => err(m.to_string()).hint(h),
            None => err(m),
        });
    }
    for pattern in &entry.input_paths {
        let inputs = resolve_inputs(pattern, &ctx.search_paths);
        if inputs.is_empty() && !entry.ignore_missing {
            return Err(err(format!(
                "Compile error: {pattern} for target: {target} not found in search_paths: {:?}",
                ctx.search_paths
            ))
            .hint("check input_paths, or pass the directory with --search-paths (-J)"));
        }
        for input in inputs {
            // `external` runs a program (often an absolute one) and
            // `remove` only deletes below the catalog: neither is a read.
            // A helm chart is read by another program, file by file.
            if entry.input_type == InputType::Helm {
                confine::check_tree(&input).map_err(|m| err(m).input(&input))?;
            } else if !matches!(entry.input_type, InputType::External | InputType::Remove) {
                confine::check(&input).map_err(|m| err(m).input(&input))?;
            }
            let run = || {
                match entry.input_type {
                InputType::Jsonnet => compile_jsonnet(ctx, entry, &input, &out_dir),
                InputType::Jinja2 => compile_jinja2(ctx, entry, &input, &out_dir),
                InputType::Copy => compile_copy(ctx, &input, &out_dir),
                InputType::Remove => compile_remove(&input, catalog_root, &ctx.abs_roots),
                InputType::External => {
                    external_counted(ctx, &out_dir, || compile_external(entry, &input, &out_dir))
                }
                InputType::Helm => compile_helm(ctx, entry, &input, &out_dir),
                InputType::Kadet => compile_kadet(ctx, entry, &input, &out_dir),
                other => Err(format!(
                    "input type `{}` is not supported by strata (only jsonnet, jinja2, copy, remove, external and helm)",
                    other.as_str()
                )),
            }
            };
            // jsonnet and Jinja2 run the repository's code; what helm and
            // kadet print is read into memory here.
            let res = match entry.input_type {
                InputType::Jsonnet | InputType::Jinja2 | InputType::Helm | InputType::Kadet => {
                    crate::memguard::metered(&what(Some(&input)), || contain_panic(run))
                }
                _ => contain_panic(run),
            };
            res.map_err(|m| match m.split_once(HINT_SEP) {
                Some((m, h)) => err(m.to_string()).input(&input).hint(h),
                None => err(m).input(&input),
            })?;
        }
    }
    Ok(())
}

/// Runs one compile input, turning a panic in the engines it drives
/// (jsonnet, minijinja, starlark: code that a pull request controls
/// reaches corners of them) into an error for this input, so one input
/// cannot end the process with exit 101 and no file named. The panic is a
/// bug, and says so.
fn contain_panic(run: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        Ok(r) => r,
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".to_string());
            Err(format!(
                "internal error while compiling this input: {message} (a bug in strata or an engine it uses: please report it with the input){HINT_SEP}change the input to avoid the construct named above"
            ))
        }
    }
}

/// `input_type: ytt` (strata's extension): every input path of the entry
/// (templates, overlays, data values, libraries) is one ytt run, as
/// `strata template -f ...` would do; the data values are the entry's
/// `input_params` when given, else the target's parameters. Each
/// template's documents go to a file named after it under `output_path`.
fn compile_ytt(ctx: &TargetCtx, entry: &Entry, out_dir: &Path) -> Result<(), String> {
    let mut inputs = Vec::new();
    for pattern in &entry.input_paths {
        let found = resolve_inputs(pattern, &ctx.search_paths);
        if found.is_empty() && !entry.ignore_missing {
            return Err(format!(
                "{pattern} not found in search_paths: {:?}",
                ctx.search_paths
            ));
        }
        for f in &found {
            confine::check_tree(f)?;
        }
        inputs.extend(found);
    }
    let values = if entry.input_params.is_empty() {
        ctx.prepared
            .dumps
            .get(&ctx.plan.name)
            .and_then(|d| d.get_path(&["parameters"]))
            .cloned()
            .unwrap_or(Value::Null)
    } else {
        Value::Map(entry.input_params.clone())
    };
    let out = crate::template::render_paths(&inputs, Some(&values)).map_err(|e| e.0)?;
    for (name, text) in out.into_files() {
        check_relative(&name, "output file")?;
        let text = refs_text(ctx, text)?;
        write_file(ctx, &out_dir.join(&name), text.as_bytes())?;
    }
    Ok(())
}

fn compile_target(
    plan: &TargetPlan,
    prepared: &Prepared,
    opts: &CompileOptions,
    refs: Option<&RefsSetup>,
    catalog_root: &Path,
    run: &RunShared,
    careful: bool,
) -> Result<Vec<String>, CompileError> {
    let bridge = &run.bridge;
    let mut search_paths = opts.search_paths.clone();
    search_paths.push(catalog_root.to_path_buf());
    // Kapitan reads the raw parameter; a value that is not one of its style
    // names leaves PyYAML's own choice (quoted multiline strings).
    let style = match &plan.multiline_style {
        Some(v) if v.is_truthy() => v.as_str().and_then(MultilineStyle::parse),
        _ => Some(opts.multiline),
    };
    let mut yaml = DumpOptions::kapitan(opts.indent, opts.multiline, opts.null_as_empty);
    yaml.multiline = style;
    let ctx = TargetCtx {
        plan,
        prepared,
        search_paths,
        target_root: catalog_root.join("compiled").join(&plan.dir),
        catalog_root: catalog_root.to_path_buf(),
        write: WriteOptions {
            yaml,
            json_indent: opts.indent,
        },
        abs_roots: opts
            .absolute_roots
            .get(&plan.name)
            .into_iter()
            .flatten()
            .map(|r| jsonnet::normpath(r))
            // Never the file system root: that would allow everything.
            .filter(|r| r.is_absolute() && r.parent().is_some())
            .collect(),
        python: bridge,
        refs,
        target_refs: crate::refs::TargetRefs {
            target: plan.name.clone(),
            secrets: prepared
                .dumps
                .get(&plan.name)
                .and_then(|d| d.get_path(&["parameters", "kapitan", "secrets"]))
                .cloned(),
            ..Default::default()
        },
        dirs: RefCell::new(HashSet::new()),
        careful,
        wrote_install: std::cell::Cell::new(false),
        files: std::cell::Cell::new(0),
        max_files: crate::limits::max_target_files(),
        run,
        memory: std::cell::Cell::new(
            run.memory
                .as_ref()
                .filter(|(_, names)| names.contains(&plan.name))
                .map(|(tree, _)| &**tree),
        ),
    };
    if ctx.memory.get().is_none() {
        ensure_dir(&ctx, &ctx.target_root.clone()).map_err(CompileError::new)?;
    }
    let mut warnings = Vec::new();
    let confined = opts.confine.as_ref().map(|c| {
        let mut c = c.clone();
        c.add(catalog_root);
        Arc::new(c)
    });
    for entry in &plan.entries {
        let res = confine::scoped(confined.clone(), || {
            compile_entry(&ctx, entry, catalog_root)
        });
        if let Err(e) = res {
            if entry.continue_on_compile_error {
                warnings.push(e.to_string());
            } else {
                return Err(e);
            }
        }
    }
    // Carvel packages (issue 10): after the entries, whose output may hold
    // PackageInstall documents. Reading every output back is only needed
    // when one may hold one (or a program wrote outputs strata did not see).
    let may_install =
        ctx.careful || ctx.wrote_install.get() || declares_packages(prepared, &plan.name);
    if let Some(params) = prepared
        .dumps
        .get(&plan.name)
        .filter(|_| may_install)
        .and_then(|d| d.get_path(&["parameters"]))
    {
        // The package step reads the outputs back from disk.
        ctx.spill()
            .map_err(|e| CompileError::new(e).target(&plan.name))?;
        timings::time("packages (summed over threads)", || {
            crate::packages::target::compile_target_packages(
                params,
                &ctx.target_root,
                &ctx.search_paths,
                confined.as_deref(),
            )
        })
        .map_err(|e| CompileError::new(e.0).target(&plan.name))?;
    }
    Ok(warnings)
}

/// A target without compile entries is still compiled when it declares
/// `parameters.packages_install`.
fn declares_packages(prepared: &Prepared, target: &str) -> bool {
    prepared
        .dumps
        .get(target)
        .and_then(|d| d.get_path(&["parameters", "packages_install"]))
        .is_some_and(|v| !v.is_null())
}

/// Compiles the selected targets into `<catalog_root>/compiled/`.
/// `on_done` is called once per finished target (for a progress bar).
pub fn compile_into(
    prepared: &Prepared,
    selected: &[String],
    opts: &CompileOptions,
    catalog_root: &Path,
    on_done: &(dyn Fn(&str) + Sync),
) -> Result<CompileReport, CompileError> {
    compile_selected(prepared, selected, opts, None, catalog_root, on_done, false)
}

/// Compiles the selected targets, with Kapitan secret references compiled
/// (or revealed) in every jsonnet, jinja2, helm and ytt output when `refs`
/// is given; with `keep_going` a failing target is listed in the report's
/// `failed` (its partial output stays in `catalog_root`, which [`install`]
/// never reads for it) instead of stopping the others.
pub fn compile_selected(
    prepared: &Prepared,
    selected: &[String],
    opts: &CompileOptions,
    refs: Option<&RefsSetup>,
    catalog_root: &Path,
    on_done: &(dyn Fn(&str) + Sync),
    keep_going: bool,
) -> Result<CompileReport, CompileError> {
    std::fs::create_dir_all(catalog_root.join("compiled"))
        .map_err(|e| CompileError::io(catalog_root, e))?;
    let plans: Vec<&TargetPlan> = selected
        .iter()
        .filter_map(|t| prepared.plans.get(t))
        .filter(|p| {
            !p.entries.is_empty() || (!p.dir.is_empty() && declares_packages(prepared, &p.name))
        })
        .collect();
    // Programs other than strata may leave symlinks in the catalog (and
    // two targets may share an output directory).
    let careful = plans.iter().any(|p| {
        p.entries.iter().any(|e| {
            matches!(
                e.input_type,
                InputType::External | InputType::Helm | InputType::Kadet
            )
        })
    });
    // No more workers than targets, and at most max_workers(): each has a
    // 64 MiB stack, and `.kapitan` (a pull request's file) sets the number
    // (`parallelism: 100000` took a review past a minute for one target).
    let workers = opts
        .parallelism
        .clamp(1, crate::limits::max_workers())
        .min(plans.len().max(1));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(workers)
        // jsonnet evaluation and the writers recurse over deeply nested
        // values; the default 2 MiB thread stack is not always enough.
        .stack_size(64 << 20)
        .build()
        .map_err(|e| {
            CompileError::new(format!(
                "cannot start {workers} worker threads ({e}): lower --parallelism or `parallelism` in .kapitan"
            ))
        })?;
    let run = RunShared {
        bridge: Arc::new(python::Bridge::new(&opts.python, prepared.dumps.clone())),
        files: std::sync::atomic::AtomicU64::new(0),
        max_files: crate::limits::max_files(),
        bytes: std::sync::atomic::AtomicU64::new(0),
        max_bytes: crate::limits::max_catalog_bytes(),
        memory: None,
    };
    let started = std::time::Instant::now();
    // Targets whose output directories are the same (a `vars.target` naming
    // another target) or one inside the other (`a` and `a.sub`) may write
    // the same files: compiled side by side, which one's file the catalog
    // kept changed from run to run (probe 34, overlapping-targets-race), so
    // a review could show one target's file and the published catalog hold
    // the other's. Each such group is compiled one target after the other,
    // in name order, as `--parallelism 1` does.
    let units = overlap_units(&plans);
    let run = RunShared {
        memory: opts
            .memory
            .as_ref()
            .filter(|_| !careful)
            .map(|m| (m.tree.clone(), in_memory_targets(&units, m))),
        ..run
    };
    let done: Vec<Vec<Result<Vec<String>, CompileError>>> = pool.install(|| {
        units
            .par_iter()
            .map(|unit| {
                unit.iter()
                    .map(|p| {
                        let r =
                            compile_target(p, prepared, opts, refs, catalog_root, &run, careful);
                        on_done(&p.name);
                        r
                    })
                    .collect()
            })
            .collect()
    });
    let mut by_name: BTreeMap<&str, Result<Vec<String>, CompileError>> = BTreeMap::new();
    for (unit, rs) in units.iter().zip(done) {
        for (p, r) in unit.iter().zip(rs) {
            by_name.insert(p.name.as_str(), r);
        }
    }
    let results: Vec<Result<Vec<String>, CompileError>> = plans
        .iter()
        .filter_map(|p| by_name.remove(p.name.as_str()))
        .collect();
    if timings::enabled() {
        timings::add("compile targets (wall)", started.elapsed());
    }
    let mut report = CompileReport::default();
    for (plan, r) in plans.iter().zip(results) {
        match r {
            Ok(w) => {
                report.warnings.extend(w);
                report.targets.push((plan.name.clone(), plan.dir.clone()));
            }
            Err(e) if keep_going => report.failed.push((plan.name.clone(), e)),
            Err(e) => return Err(e),
        }
    }
    report.notices.extend(run.bridge.close());
    Ok(report)
}

/// The targets of `m` that may keep their files in memory ([`InMemory`]):
/// alone in their unit (no other target writes their directory or reads
/// the catalog), with jsonnet, jinja2 and ytt entries only, none writing
/// to an absolute path.
fn in_memory_targets(units: &[Vec<&TargetPlan>], m: &InMemory) -> BTreeSet<String> {
    units
        .iter()
        .filter_map(|u| match u.as_slice() {
            [p] => Some(*p),
            _ => None,
        })
        .filter(|p| m.targets.contains(&p.name) && !p.dir.is_empty())
        .filter(|p| !catalog_reads::reads_the_catalog(p))
        .filter(|p| {
            p.entries.iter().all(|e| {
                matches!(
                    e.input_type,
                    InputType::Jsonnet | InputType::Jinja2 | InputType::Ytt
                ) && !e
                    .output_path
                    .as_deref()
                    .is_some_and(|o| Path::new(o).is_absolute())
            })
        })
        .map(|p| p.name.clone())
        .collect()
}

/// The plans grouped so that targets whose output directories overlap
/// (transitively: `a/x` and `a/y` both inside `a`) are one group, each
/// group in the plans' (name) order; the groups in the order of their
/// first target. One group of all when a target reads the catalog.
fn overlap_units<'a>(plans: &[&'a TargetPlan]) -> Vec<Vec<&'a TargetPlan>> {
    // A target reading (or removing) other targets' files in the catalog
    // being built sees whichever of them are written already: then every
    // target is compiled in name order, one after the other.
    if plans.iter().any(|p| catalog_reads::reads_the_catalog(p)) {
        return vec![plans.to_vec()];
    }
    let dirs: Vec<(String, String)> = plans
        .iter()
        .map(|p| (p.name.clone(), p.dir.clone()))
        .collect();
    let overlaps = catalog_reads::overlapping_outputs(&dirs);
    let index: BTreeMap<&str, usize> = plans
        .iter()
        .enumerate()
        .map(|(i, p)| (p.name.as_str(), i))
        .collect();
    // Union-find over plan indexes; a group's root is its smallest index.
    let mut root: Vec<usize> = (0..plans.len()).collect();
    fn find(root: &mut [usize], mut i: usize) -> usize {
        while root[i] != i {
            root[i] = root[root[i]];
            i = root[i];
        }
        i
    }
    for (t, group) in &overlaps {
        let Some(&a) = index.get(t.as_str()) else {
            continue;
        };
        for g in group {
            if let Some(&b) = index.get(g.as_str()) {
                let (ra, rb) = (find(&mut root, a), find(&mut root, b));
                root[ra.max(rb)] = ra.min(rb);
            }
        }
    }
    let mut units: BTreeMap<usize, Vec<&'a TargetPlan>> = BTreeMap::new();
    for (i, p) in plans.iter().enumerate() {
        let r = find(&mut root, i);
        units.entry(r).or_default().push(p);
    }
    units.into_values().collect()
}

const TEMP_PREFIX: &str = ".strata-compile-";

/// A temporary catalog root beside the output, removed when dropped.
///
/// A killed compile cannot remove its own: each holds a lock on
/// `<temp>/.lock` for as long as the process lives (the kernel releases it
/// on any exit, SIGKILL included), and every compile first removes the
/// temporary roots whose lock it can take: those are left over.
pub fn temp_root(output_path: &Path) -> Result<crate::fswalk::LockedTempDir, CompileError> {
    std::fs::create_dir_all(output_path).map_err(|e| CompileError::io(output_path, e))?;
    crate::fswalk::locked_temp_dir(output_path, TEMP_PREFIX)
        .map_err(|e| CompileError::io(output_path, e))
}

/// Moves a finished catalog into `<output_path>/compiled`: the whole
/// catalog when every target was compiled, else only the compiled targets'
/// directories (Kapitan keeps the others).
pub fn install(
    temp: &Path,
    output_path: &Path,
    report: &CompileReport,
    all_targets: bool,
) -> Result<(), CompileError> {
    timings::time("install (swap)", || {
        install_inner(temp, output_path, report, all_targets)
    })
}

fn install_inner(
    temp: &Path,
    output_path: &Path,
    report: &CompileReport,
    all_targets: bool,
) -> Result<(), CompileError> {
    let new = temp.join("compiled");
    let dest = output_path.join("compiled");
    if all_targets {
        let old = temp.join("previous");
        // A link (even a dangling one) is moved aside, never followed.
        if std::fs::symlink_metadata(&dest).is_ok() {
            std::fs::rename(&dest, &old).map_err(|e| CompileError::io(&dest, e))?;
        }
        if let Err(e) = std::fs::rename(&new, &dest) {
            // The previous catalog goes back: a failed install keeps it.
            if old.exists() {
                let _ = std::fs::rename(&old, &dest);
            }
            return Err(CompileError::io(&new, e));
        }
        return Ok(());
    }
    // Checked for every target before anything moves: an install stopped
    // half-way would leave a mixed catalog.
    for (_, dir) in &report.targets {
        refuse_linked_catalog(output_path, dir)?;
    }
    for (_, dir) in &report.targets {
        let from = new.join(dir);
        let to = dest.join(dir);
        if std::fs::symlink_metadata(&to).is_ok() {
            let old = temp.join("previous").join(dir);
            if let Some(p) = old.parent() {
                std::fs::create_dir_all(p).map_err(|e| CompileError::io(p, e))?;
            }
            std::fs::rename(&to, &old).map_err(|e| CompileError::io(&to, e))?;
        }
        if let Some(p) = to.parent() {
            std::fs::create_dir_all(p).map_err(|e| CompileError::io(p, e))?;
        }
        if from.exists() {
            std::fs::rename(&from, &to).map_err(|e| CompileError::io(&to, e))?;
        }
    }
    Ok(())
}

/// A compile of some targets replaces `compiled/<dir>` only: were
/// `compiled` (or a directory between it and `<dir>`) a symbolic link, the
/// install would delete and write where it points, outside the output
/// directory (a pull request can commit `compiled -> $HOME`). The full
/// compile replaces the link itself; this one refuses it.
pub fn refuse_linked_catalog(output_path: &Path, dir: &str) -> Result<(), CompileError> {
    // The target's own directory may be a link: it is moved aside, never
    // followed; `compiled` and the directories above the target's count.
    let catalog = output_path.join("compiled");
    let above = Path::new(dir).parent().unwrap_or(Path::new(""));
    let Some(at) = crate::fswalk::first_link_below(output_path, &catalog.join(above)) else {
        return Ok(());
    };
    let to = std::fs::read_link(&at)
        .map(|t| format!(" (to {})", t.display()))
        .unwrap_or_default();
    Err(CompileError::new(format!(
        "{} is a symbolic link{to}: a compile (or --check) of some targets works on their directories in the catalog only, and never writes, deletes or compares through a link",
        at.display()
    ))
    .hint("remove the link (a compile of every target replaces it with the catalog)"))
}

fn list_files(root: &Path, rel: &Path, out: &mut BTreeMap<PathBuf, PathBuf>) {
    let Ok(rd) = std::fs::read_dir(root.join(rel)) else {
        return;
    };
    for e in rd.filter_map(Result::ok) {
        let r = rel.join(e.file_name());
        if e.path().is_dir() {
            list_files(root, &r, out);
        } else {
            out.insert(r, e.path());
        }
    }
}

/// `--check`: files that differ between a freshly compiled catalog and the
/// one on disk, as `(status, path)` with status `added`, `removed` or
/// `changed`, sorted by path.
pub fn diff_catalogs(
    new_root: &Path,
    old_root: &Path,
    dirs: Option<&[String]>,
) -> Vec<(&'static str, PathBuf)> {
    let mut new_files = BTreeMap::new();
    let mut old_files = BTreeMap::new();
    match dirs {
        None => {
            list_files(new_root, Path::new(""), &mut new_files);
            list_files(old_root, Path::new(""), &mut old_files);
        }
        Some(ds) => {
            for d in ds {
                list_files(new_root, Path::new(d), &mut new_files);
                list_files(old_root, Path::new(d), &mut old_files);
            }
        }
    }
    let mut out = Vec::new();
    for (rel, p) in &new_files {
        match old_files.get(rel) {
            None => out.push(("added", rel.clone())),
            Some(o) => {
                if std::fs::read(p).ok() != std::fs::read(o).ok() {
                    out.push(("changed", rel.clone()));
                }
            }
        }
    }
    for rel in old_files.keys() {
        if !new_files.contains_key(rel) {
            out.push(("removed", rel.clone()));
        }
    }
    out.sort_by(|a, b| a.1.cmp(&b.1));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_in_an_input_is_an_error_for_that_input() {
        let e = contain_panic(|| panic!("index out of bounds")).unwrap_err();
        assert!(
            e.starts_with("internal error while compiling this input: index out of bounds"),
            "{e}"
        );
        assert!(e.contains(HINT_SEP), "{e}");
        assert_eq!(
            contain_panic(|| Err("plain".into())),
            Err("plain".to_string())
        );
        assert_eq!(contain_panic(|| Ok(())), Ok(()));
    }

    #[test]
    fn paths_must_stay_inside() {
        assert!(check_relative("a/b", "x").is_ok());
        assert!(check_relative("../a", "x").is_err());
        assert!(check_relative("/etc", "x").is_err());
        // Re-probe 7: names no file system takes are refused by name
        // (escaped), before a write fails naming the scratch catalog.
        let e = check_relative("o/x\0y.yaml", "output file").unwrap_err();
        assert!(
            e.starts_with("output file `o/x\\0y.yaml` holds a NUL byte"),
            "{e}"
        );
        assert!(!e.contains('\0'));
        let long = format!("o/{}.yaml", "a".repeat(300));
        let e = check_relative(&long, "output file").unwrap_err();
        assert!(e.contains("305 bytes"), "{e}");
        assert!(e.contains("more than 255"), "{e}");
        assert!(check_relative(&format!("o/{}.yaml", "a".repeat(250)), "x").is_ok());
        // Probe 37: git refuses `.git` in a tree, so push failed later.
        for p in [".git/config.yaml", "sub/.GIT/hooks/x.yaml", "a/.Git"] {
            let e = check_relative(p, "output file").unwrap_err();
            assert!(
                e.contains(&format!(
                    "output file `{p}` holds a `.git` directory, which git refuses to commit"
                )),
                "{e}"
            );
        }
        assert!(check_relative(".github/workflows/x.yaml", "x").is_ok());
        assert!(check_relative("a/.gitignore", "x").is_ok());
    }

    #[test]
    fn globbing_skips_dot_files() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.jsonnet"), "").unwrap();
        std::fs::write(d.path().join(".b.jsonnet"), "").unwrap();
        let found = resolve_inputs("*.jsonnet", &[d.path().to_path_buf()]);
        assert_eq!(found, vec![d.path().join("a.jsonnet")]);
        assert!(resolve_inputs("missing", &[d.path().to_path_buf()]).is_empty());
    }

    /// Re-probe 15 (copy-glob-repeated-doublestar-exponential): `**` was
    /// recursive, so `files/**/*` matched every file and directory below
    /// (Kapitan's `glob.glob` without `recursive=True` reads `**` as `*`:
    /// `kapitan compile` copies `files/a/b` and `files/a/m.txt` alone), and
    /// `**/**/**/**/**/**/*` over a 40-level chain took a review past 30 s
    /// (each path once per way of splitting it among the `**`s).
    #[test]
    fn double_star_is_one_name_as_in_kapitan() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        for f in ["files/t.txt", "files/a/m.txt", "files/a/b/c/q.txt"] {
            std::fs::create_dir_all(root.join(f).parent().unwrap()).unwrap();
            std::fs::write(root.join(f), "x").unwrap();
        }
        let search = [root.to_path_buf()];
        let want = vec![root.join("files/a/b"), root.join("files/a/m.txt")];
        assert_eq!(resolve_inputs("files/**/*", &search), want);
        assert_eq!(resolve_inputs("files/**/**", &search), want);
        assert_eq!(resolve_inputs("files/a**/*", &search), want);
        let chain = format!("chain/{}", ["d"; 40].join("/"));
        std::fs::create_dir_all(root.join(&chain)).unwrap();
        let pattern = format!("chain/{}*", "**/".repeat(8));
        let depth9 = root.join(format!("chain/{}", ["d"; 9].join("/")));
        assert_eq!(resolve_inputs(&pattern, &search), vec![depth9.clone()]);
        // The confined walk (which checks each directory it lists) agrees.
        assert_eq!(
            resolve_inputs_within(&pattern, &search, &|_| Ok(())),
            vec![depth9]
        );
    }

    #[test]
    fn diff_reports_changes() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        std::fs::write(a.path().join("same"), "x").unwrap();
        std::fs::write(b.path().join("same"), "x").unwrap();
        std::fs::write(a.path().join("new"), "x").unwrap();
        std::fs::write(b.path().join("gone"), "x").unwrap();
        let d = diff_catalogs(a.path(), b.path(), None);
        assert_eq!(
            d,
            vec![
                ("removed", PathBuf::from("gone")),
                ("added", PathBuf::from("new"))
            ]
        );
    }
}
