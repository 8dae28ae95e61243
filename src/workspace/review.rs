//! A pull request's catalog change, built in this process: the base and
//! head revisions read from git objects (each with its own `.kapitan`),
//! both inventories rendered, and only the targets whose fingerprints
//! differ compiled on each side. Every other target has the same catalog
//! on both sides, so leaving it out of both changes nothing in the diff,
//! the apply-order comparison or anything built from them.

use super::fingerprint::Fingerprinter;
use super::mask::SecretMask;
use super::{open_revision, open_revision_like, CompileFlags, Rendered, Workspace, WorkspaceError};
use crate::diff::{self, CatalogDiff, DiffOptions};
use crate::inventory::{closure, Inventory, InventoryError, InventoryOptions, RenderedNode};
use crate::memtree::MemTree;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the head side comes from.
pub enum Head {
    /// A revision, compiled like the base.
    Rev(String),
    /// An already compiled catalog (`ci --collect`): the base is then
    /// compiled in full.
    Catalog(PathBuf),
}

/// What to review.
pub struct ReviewRequest<'a> {
    /// Any directory of the repository; revisions compile from the same
    /// subdirectory.
    pub repo: &'a Path,
    pub base: String,
    pub head: Head,
    pub flags: CompileFlags,
    /// Only these targets (all when empty: then `flags.targets`).
    pub targets: Vec<String>,
    /// Compile only targets whose fingerprints differ (false: everything).
    pub incremental: bool,
}

/// The result, with the catalogs it compared (alive as long as this is).
pub struct Review {
    pub diff: CatalogDiff,
    pub base_catalog: PathBuf,
    pub head_catalog: PathBuf,
    /// Targets compiled on the base and head side.
    pub compiled: (usize, usize),
    /// Targets left out as unchanged.
    pub unchanged: usize,
    /// Targets compiled on both sides although unchanged, and why.
    pub always: Vec<(String, String)>,
    /// Base targets rendered, of all base targets (the others render as
    /// on the head).
    pub base_rendered: (usize, usize),
    /// Why the base was prepared in full, if it was.
    pub full_reason: Option<String>,
    /// Time spent in each phase.
    pub timings: Timings,
    /// The diff compared every field of every object (semantic, nothing
    /// ignored): its leaf changes say what an apply order could depend on.
    diff_exact: bool,
    /// The files of the base and head catalogs kept in memory.
    memory: [Option<Arc<MemTree>>; 2],
    _scratch: crate::fswalk::LockedTempDir,
}

impl Review {
    /// The targets whose apply order differs between the two catalogs, and
    /// how many targets were compared. Only a target the diff found
    /// changed can be ordered differently, and of those only one whose
    /// changes reach what kapp's rules read
    /// ([`crate::order::may_reorder`]): an image or replica bump, the usual
    /// pull request, reorders nothing, and parsing both sides' documents
    /// again was a twentieth of a review's instructions.
    pub fn order_changes(&self) -> std::io::Result<(Vec<crate::order::OrderChange>, usize)> {
        let mut only: BTreeSet<String> = BTreeSet::new();
        for t in &self.diff.targets {
            if t.status != diff::Status::Changed {
                continue;
            }
            // A name the diff prefixed (`manifests/t`) counts by its top
            // directory too.
            let top = t.name.split('/').next().unwrap_or_default();
            let in_memory = |m: &Option<Arc<MemTree>>| {
                m.as_ref().is_some_and(|m| {
                    m.files_below(Path::new(top)).iter().any(|(p, f)| {
                        crate::fswalk::is_yaml(p) && crate::order::bytes_may_hold_config(&f.bytes)
                    })
                })
            };
            if !self.diff_exact
                || may_reorder(t)
                || [&self.base_catalog, &self.head_catalog]
                    .iter()
                    .any(|c| crate::order::may_hold_config(&c.join(top)))
                || self.memory.iter().any(in_memory)
            {
                only.insert(t.name.clone());
                only.insert(top.to_string());
            }
        }
        // A target the diff named by its top directory is compared when any
        // name below it was.
        let compared = self
            .diff
            .targets
            .iter()
            .filter(|t| only.contains(&t.name))
            .count();
        // The apply orders are read from disk.
        for (catalog, m) in [&self.base_catalog, &self.head_catalog]
            .into_iter()
            .zip(&self.memory)
        {
            if let Some(m) = m {
                for name in &only {
                    m.write_out(catalog, Path::new(name))?;
                }
            }
        }
        let changes = crate::order::changed_orders_of(
            &self.base_catalog,
            &self.head_catalog,
            &crate::order::Options::default(),
            Some(&only),
        )?;
        Ok((changes, compared))
    }
}

/// Whether a target's changes, as the diff lists them, may move an object
/// in its apply order: a YAML file added, removed or renamed, an object
/// added or removed, a whole-object or too-long change, an object of a
/// kind that shapes the rules, or a leaf change kapp's rules read.
fn may_reorder(t: &diff::TargetDiff) -> bool {
    let yaml = |p: &str| crate::fswalk::is_yaml(Path::new(p));
    t.files.iter().any(|f| {
        (yaml(&f.path) || f.old_path.as_deref().is_some_and(yaml))
            && (f.status != diff::Status::Changed
                || f.objects.iter().any(|o| {
                    let kind = diff::groups::kind_of(&o.name);
                    o.status != diff::Status::Changed
                        || o.changes.is_empty()
                        || kind == "file"
                        || crate::order::REORDERING_KINDS.contains(&kind)
                        || o.changes.iter().any(|c| crate::order::may_reorder(&c.path))
                }))
    })
}

/// Whether a diff with these options lists every leaf change.
fn exact(o: &DiffOptions) -> bool {
    o.semantic && o.ignore_paths.is_empty() && o.ignore_resources.is_empty()
}

/// Drops `v` on a thread of its own, so that freeing it costs the caller
/// nothing; it holds only memory.
fn drop_aside<T: Send + 'static>(v: T) {
    // Without a thread to be had, the closure and `v` are dropped here.
    let _ = std::thread::Builder::new()
        .name("strata-drop".into())
        .spawn(move || drop(v));
}

fn scratch_err(e: std::io::Error) -> WorkspaceError {
    WorkspaceError::Config {
        message: format!("cannot create a temporary directory: {e}"),
        hint: None,
    }
}

fn select(r: &Rendered, targets: &[String]) -> Vec<String> {
    crate::compile::select_targets(&r.prepared, targets, &[])
}

fn named(rev: &str, e: WorkspaceError) -> WorkspaceError {
    WorkspaceError::Config {
        message: without_scratch(&format!("compiling revision `{rev}` failed: {e}")),
        hint: match &e {
            WorkspaceError::Config { hint, .. } => hint.clone(),
            other => crate::diagnostics::ToDiagnostic::to_diagnostic(other)
                .hints
                .first()
                .cloned(),
        },
    }
}

/// `text` with the review's scratch trees left out of the paths it names
/// (`/tmp/strata-review-XXXX/head/d/self` is `d/self` of the revision,
/// `.../head-catalog/compiled/t/x` the revision's `compiled/t/x`):
/// they are the repository's files, and the scratch path means nothing to
/// the reader.
fn without_scratch(text: &str) -> String {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(
            r#"[^\s`'"(\[]*/strata-review-[A-Za-z0-9]+(/(?:base|head)(?:-catalog)?)?(/|\b)"#,
        )
        .expect("static regex is valid")
    });
    // A path below the tree loses the prefix; the tree itself (a search
    // path listed in an error) is `.`; the scratch root, which holds both
    // trees, is the tree's parent (`.kapitan` naming `../f.py`).
    re.replace_all(text, |c: &regex::Captures| {
        match (c.get(1).is_some(), &c[2] == "/") {
            (true, true) => "",
            (true, false) => ".",
            (false, true) => "../",
            (false, false) => "..",
        }
        .to_string()
    })
    .into_owned()
}

/// Time spent in each phase of a review, in order (`STRATA_TIMINGS=1`
/// prints them).
pub type Timings = Vec<(String, std::time::Duration)>;

/// The names in `all` that `wanted` selects (all when empty), sorted, as
/// [`crate::compile::select_targets`] does.
fn select_names(all: &BTreeSet<String>, wanted: &[String]) -> Vec<String> {
    let mut out: Vec<String> = if wanted.is_empty() {
        all.iter().cloned().collect()
    } else {
        wanted
            .iter()
            .filter(|t| all.contains(*t))
            .cloned()
            .collect()
    };
    out.sort();
    out.dedup();
    out
}

/// Whether two inventories are read alike, wherever they are (the path,
/// and the tree each is confined to, differ between revisions).
fn same_options(a: &InventoryOptions, b: &InventoryOptions) -> bool {
    let (mut a, mut b) = (a.clone(), b.clone());
    a.path = PathBuf::new();
    b.path = PathBuf::new();
    a.confine = None;
    b.confine = None;
    a == b
}

type Renders = BTreeMap<String, Result<RenderedNode, InventoryError>>;

/// A pull request's two revisions read from git, and their inventories
/// rendered as far as the change needs: the head in full, the base only
/// for the targets the change can reach (see
/// [`crate::inventory::closure`]); every other base target renders as on
/// the head. Lint (of both sides) and the review share these renders.
pub struct Pr<'r> {
    req: &'r ReviewRequest<'r>,
    head_rev: String,
    scratch: crate::fswalk::LockedTempDir,
    base_ws: Workspace,
    head_ws: Workspace,
    base_inv: Inventory,
    head_inv: Inventory,
    head_nodes: Renders,
    base_nodes: Renders,
    /// Base targets not rendered there: they render as on the head.
    reused: BTreeSet<String>,
    /// Why every base target was rendered, if so.
    pub full_reason: Option<String>,
    /// The head's inventory is the working tree's (same options, same
    /// files): the head's renders are the working tree's lint's.
    head_is_worktree: bool,
    /// The working tree's inventory and renders, when it differs from the
    /// head's.
    worktree: Option<Worktree>,
    /// The base's inventory was opened as the working tree's is, below
    /// this root (its lint's paths are made relative to it).
    base_lint_root: Option<PathBuf>,
    /// The YAML parses both inventories made, for lint to share.
    texts: std::sync::Arc<crate::yaml::TextCache>,
    pub timings: Timings,
}

/// The working tree's inventory (lint's) when it is not the head's.
struct Worktree {
    inv: Inventory,
    /// Its renders, but for the targets the head's renders stand in for.
    nodes: Renders,
    stand_in: BTreeSet<String>,
}

/// The targets of `other` that render as on the head (see
/// [`closure::unaffected`]); `Err` with the reason when none can be
/// trusted to.
fn unaffected(
    other: &Inventory,
    head: &Inventory,
    head_nodes: &Renders,
) -> Result<BTreeSet<String>, String> {
    let changed = closure::changed_files(head.root(), other.root())
        .ok_or("an inventory directory has a symlink or an unreadable file")?;
    let mut u = closure::unaffected(head, other, &changed, head_nodes)?;
    // A target that does not render on the head is rendered on each side
    // (its error names that side's files).
    u.retain(|t| head_nodes.get(t).is_some_and(|r| r.is_ok()));
    let names: BTreeSet<String> = other.target_names().into_iter().collect();
    u.retain(|t| names.contains(t));
    Ok(u)
}

/// Every target of `inv` but `skip` rendered, in parallel.
fn render_except(inv: &Inventory, skip: &BTreeSet<String>) -> Renders {
    let todo: Vec<String> = inv
        .target_names()
        .into_iter()
        .filter(|t| !skip.contains(t))
        .collect();
    inv.render_many(&todo).collect()
}

/// The review's scratch tree under the system's temporary directory,
/// locked while this process lives: a killed review's is removed by the
/// next one.
/// An empty inventory at `path`, a directory a revision lacks, when it
/// lies in the review's scratch tree `scratch` (never elsewhere: an
/// `--inventory-path` given as an absolute flag is the user's).
fn empty_inventory(path: &Path, scratch: &Path) -> Result<(), WorkspaceError> {
    let scratch = scratch
        .canonicalize()
        .unwrap_or_else(|_| scratch.to_path_buf());
    let inside = path.is_absolute()
        && crate::compile::jsonnet::normpath(path).starts_with(&scratch)
        && !path.exists();
    if !inside {
        return Ok(());
    }
    std::fs::create_dir_all(path.join("targets")).map_err(scratch_err)
}

fn scratch_dir() -> Result<crate::fswalk::LockedTempDir, WorkspaceError> {
    crate::fswalk::locked_temp_dir(&std::env::temp_dir(), "strata-review-").map_err(scratch_err)
}

/// Reads both revisions and renders what the change needs.
/// `worktree`: the working tree's inventory options (lint's); when they
/// are the revisions', lint can take its renders from here.
pub fn open<'r>(
    req: &'r ReviewRequest<'r>,
    worktree: Option<&InventoryOptions>,
) -> Result<Pr<'r>, WorkspaceError> {
    let Head::Rev(head_rev) = &req.head else {
        return Err(WorkspaceError::Config {
            message: "a review of a compiled head catalog renders no head".into(),
            hint: None,
        });
    };
    let mut timings = Timings::new();
    let mut clock = std::time::Instant::now();
    let mut lap = |what: String, timings: &mut Timings| {
        timings.push((what, clock.elapsed()));
        clock = std::time::Instant::now();
    };
    let scratch = scratch_dir()?;
    let subdir = diff::git::subdir(req.repo)?;
    let root = scratch.path().to_path_buf();
    let open_ws = |rev: &str, name: &str, like| {
        open_revision_like(req.repo, rev, &subdir, &root.join(name), &req.flags, like)
            .map_err(|e| named(rev, e))
    };
    // The head first, then the base, whose files the head holds alike are
    // links to the head's: one tree's files created, not two.
    let head_ws = open_ws(head_rev, "head", None);
    let base_ws = open_ws(&req.base, "base", head_ws.as_ref().ok().map(|(_, x)| x));
    let (base_ws, _) = base_ws?;
    let (head_ws, _) = head_ws?;
    lap("read both revisions from git".into(), &mut timings);
    // `--full` shares nothing with lint either: the reference to compare
    // the incremental review with.
    let lint_opts = worktree.filter(|w| {
        req.incremental
            && w.path.is_relative()
            && same_options(w, &head_ws.inventory)
            && same_options(w, &base_ws.inventory)
            // The same directory too (`.kapitan` may name another one for
            // `compile` than for `inventory`).
            && super::anchor(&head_ws.root, &w.path) == head_ws.inventory.path
            && super::anchor(&base_ws.root, &w.path) == base_ws.inventory.path
    });
    // The working tree is where a committed symlink is a real link (to
    // `/etc/shadow`, say): its inventory is read only inside it.
    let confined = match (
        lint_opts,
        std::env::current_dir().and_then(|d| d.canonicalize()),
    ) {
        (Some(w), Ok(cwd)) => Some(InventoryOptions {
            confine: Some(cwd),
            ..w.clone()
        }),
        _ => None,
    };
    let lint_opts = confined.as_ref();
    let head_is_worktree = lint_opts.is_some_and(|w| {
        closure::changed_files(&w.path, &head_ws.inventory.path).is_some_and(|c| c.is_empty())
    });
    let base_opts = match lint_opts {
        Some(w) => InventoryOptions {
            path: base_ws.root.join(&w.path),
            confine: None,
            ..w.clone()
        },
        None => base_ws.inventory.clone(),
    };
    let head_opts = match (head_is_worktree, lint_opts) {
        (true, Some(w)) => w,
        _ => &head_ws.inventory,
    };
    // The pull request that adds the inventory, or one that deletes (or
    // moves) it, has a revision without one: that side has no targets, and
    // the review shows every target added or removed (it stopped with
    // "inventory directory not found", so the first pull request of a
    // project could not be reviewed; probe 31,
    // review-side-without-inventory-fails). Only inside the scratch tree,
    // and only when the other side has one (else the path is wrong).
    match (base_opts.path.is_dir(), head_opts.path.is_dir()) {
        (false, true) => empty_inventory(&base_opts.path, scratch.path())?,
        (true, false) => empty_inventory(&head_opts.path, scratch.path())?,
        _ => {}
    }
    // The two revisions hold mostly the same files: each text is parsed
    // once, for both inventories and for lint.
    let texts = std::sync::Arc::new(crate::yaml::TextCache::default());
    let mut base_inv = Inventory::load(&base_opts).map_err(|e| named(&req.base, e.into()))?;
    let mut head_inv = Inventory::load(head_opts).map_err(|e| named(head_rev, e.into()))?;
    base_inv.share_parses(texts.clone());
    head_inv.share_parses(texts.clone());
    lap("load both inventories".into(), &mut timings);
    let head_nodes = head_inv.render_each();
    lap(
        format!("render the head ({} targets)", head_nodes.len()),
        &mut timings,
    );
    // A working tree that is not the head (a merge commit checked out, an
    // uncommitted edit): the head's renders stand in for its targets that
    // its differences cannot reach, as for the base.
    let worktree = match lint_opts {
        Some(w) if !head_is_worktree => Inventory::load(w).ok().map(|mut inv| {
            inv.share_parses(texts.clone());
            let stand_in = unaffected(&inv, &head_inv, &head_nodes).unwrap_or_default();
            let nodes = render_except(&inv, &stand_in);
            lap(
                format!("render the working tree ({} targets)", nodes.len()),
                &mut timings,
            );
            Worktree {
                inv,
                nodes,
                stand_in,
            }
        }),
        _ => None,
    };
    let (reused, full_reason) = if !req.incremental {
        (BTreeSet::new(), Some("--full".to_string()))
    } else {
        match unaffected(&base_inv, &head_inv, &head_nodes) {
            Ok(u) => (u, None),
            Err(why) => (BTreeSet::new(), Some(why)),
        }
    };
    lap("class closures".into(), &mut timings);
    let base_nodes = render_except(&base_inv, &reused);
    lap(
        format!(
            "render the base ({} of {} targets)",
            base_nodes.len(),
            base_nodes.len() + reused.len()
        ),
        &mut timings,
    );
    let base_lint_root = lint_opts.map(|_| base_ws.root.clone());
    Ok(Pr {
        worktree,
        req,
        head_rev: head_rev.clone(),
        scratch,
        base_ws,
        head_ws,
        base_inv,
        head_inv,
        head_nodes,
        base_nodes,
        reused,
        full_reason,
        head_is_worktree,
        base_lint_root,
        texts,
        timings,
    })
}

/// One revision's inventory and every target's render, for lint.
pub type LintInput<'p> = (
    &'p Inventory,
    BTreeMap<String, &'p Result<RenderedNode, InventoryError>>,
);

impl Pr<'_> {
    /// Each revision's renders (the head's, then the base's, the head's
    /// standing in for the targets the base reuses) with the root its
    /// files are read below: what a `--full` review, which opens no
    /// lint input, knows the secret values of (red42).
    pub fn renders_by_side(&self) -> [(Vec<&RenderedNode>, &Path); 2] {
        fn ok(r: &Result<RenderedNode, InventoryError>) -> Option<&RenderedNode> {
            r.as_ref().ok()
        }
        let head = self.head_nodes.values().filter_map(ok).collect();
        let base = self
            .base_nodes
            .values()
            .chain(self.reused.iter().filter_map(|t| self.head_nodes.get(t)))
            .filter_map(ok)
            .collect();
        [(head, &self.head_ws.root), (base, &self.base_ws.root)]
    }

    /// The working tree's inventory and renders (the head's where they
    /// stand in), when lint can share them.
    pub fn head_lint_input(&self) -> Option<LintInput<'_>> {
        if let Some(w) = &self.worktree {
            let mut m = BTreeMap::new();
            for t in w.inv.target_names() {
                let r = if w.stand_in.contains(&t) {
                    self.head_nodes.get(&t)
                } else {
                    w.nodes.get(&t)
                };
                m.insert(t, r?);
            }
            return Some((&w.inv, m));
        }
        if !self.head_is_worktree {
            return None;
        }
        Some((
            &self.head_inv,
            self.head_nodes
                .iter()
                .map(|(t, r)| (t.clone(), r))
                .collect(),
        ))
    }

    /// The base's inventory and renders (the head's for the targets the
    /// change cannot reach), opened as the working tree's inventory is
    /// below the returned root, when the options allow.
    pub fn base_lint_input(&self) -> Option<(LintInput<'_>, &Path)> {
        let root = self.base_lint_root.as_deref()?;
        let mut m = BTreeMap::new();
        for t in self.base_inv.target_names() {
            let r = if self.reused.contains(&t) {
                self.head_nodes.get(&t)
            } else {
                self.base_nodes.get(&t)
            };
            m.insert(t, r?);
        }
        Some(((&self.base_inv, m), root))
    }

    /// The YAML parses of both revisions' inventory files (and the working
    /// tree's), for lint to read the same texts without parsing them again.
    pub fn texts(&self) -> std::sync::Arc<crate::yaml::TextCache> {
        self.texts.clone()
    }

    /// How many base targets were rendered (of how many).
    pub fn base_rendered(&self) -> (usize, usize) {
        (
            self.base_nodes.len(),
            self.base_nodes.len() + self.reused.len(),
        )
    }

    /// Compiles what differs on each side and diffs.
    pub fn finish(self, diff_opts: &DiffOptions) -> Result<Review, WorkspaceError> {
        let Pr {
            req,
            head_rev,
            scratch,
            base_ws,
            head_ws,
            base_inv,
            head_inv,
            head_nodes,
            mut base_nodes,
            reused,
            full_reason,
            mut timings,
            ..
        } = self;
        let mut clock = std::time::Instant::now();
        let mut lap = |what: String, timings: &mut Timings| {
            timings.push((what, clock.elapsed()));
            clock = std::time::Instant::now();
        };
        let base_rendered = (base_nodes.len(), base_nodes.len() + reused.len());
        // Errors as full renders report them: the base's first, each
        // side's first in target order.
        // Masked with what did render (a reference error may quote a value).
        let masked = |nodes: &Renders, e: &InventoryError| {
            SecretMask::of_renders(nodes.values()).error(e.clone().into())
        };
        if let Some(e) = base_nodes.values().find_map(|r| r.as_ref().err()) {
            return Err(named(&req.base, masked(&base_nodes, e)));
        }
        if let Some(e) = head_nodes.values().find_map(|r| r.as_ref().err()) {
            return Err(named(&head_rev, masked(&head_nodes, e)));
        }
        let mut head_map: BTreeMap<String, RenderedNode> = head_nodes
            .into_iter()
            .filter_map(|(t, r)| r.ok().map(|n| (t, n)))
            .collect();
        drop(head_inv);
        let wanted = if req.targets.is_empty() {
            &req.flags.targets
        } else {
            &req.targets
        };
        let head_names: BTreeSet<String> = head_map.keys().cloned().collect();
        let base_names: BTreeSet<String> = base_inv.target_names().into_iter().collect();
        drop(base_inv);
        let head_all = select_names(&head_names, wanted);
        let base_all = select_names(&base_names, wanted);
        let head_set: BTreeSet<&String> = head_all.iter().collect();
        let base_set: BTreeSet<&String> = base_all.iter().collect();

        // Every head target's plan. A full prepare validates every target
        // and writes two model dumps per target; only the targets compiled
        // or fingerprinted in full need the dumps. When a plan might not
        // validate (a superset of what `prepare` refuses), both sides are
        // prepared in full, so the error is `prepare`'s own.
        let mut need_full = if req.incremental {
            None
        } else {
            full_reason.clone()
        };
        let mut plans = BTreeMap::new();
        for (t, n) in &head_map {
            match crate::compile::model::plan_target(n) {
                Ok((plan, _)) => {
                    if n.parameters.get_path(&["packages_install"]).is_some() {
                        need_full.get_or_insert_with(|| format!("`{t}` installs packages"));
                    }
                    plans.insert(t.clone(), plan);
                }
                Err(_) => {
                    need_full.get_or_insert_with(|| format!("`{t}` has an invalid plan"));
                }
            }
        }
        if let Some(p) = plans
            .values()
            .find(|p| !p.entries.is_empty() && !plans.contains_key(&p.target_var))
        {
            need_full.get_or_insert_with(|| format!("`{}` names no vars.target", p.name));
        }
        // Two targets writing one output directory (a `vars.target` naming
        // another target): what a side shows there depends on targets a
        // partial compile would leave out, so every target writing such a
        // directory, on either side, is compiled on both (re-probe 10).
        let mut shared_dir: BTreeMap<String, String> = BTreeMap::new();
        // The targets writing below each first directory of `compiled/`,
        // on either side: the diff's unit (see `sibling_groups`).
        let mut siblings: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        if req.incremental {
            let base_plans: Vec<(String, String)> = base_names
                .iter()
                .filter_map(|t| match base_nodes.get(t) {
                    Some(Ok(n)) => crate::compile::model::plan_target(n)
                        .ok()
                        .filter(|(p, _)| !p.entries.is_empty())
                        .map(|(p, _)| (t.clone(), p.dir)),
                    Some(Err(_)) => None,
                    None => plans
                        .get(t)
                        .filter(|p| !p.entries.is_empty())
                        .map(|p| (t.clone(), p.dir.clone())),
                })
                .collect();
            let head_plans: Vec<(String, String)> = plans
                .iter()
                .filter(|(_, p)| !p.entries.is_empty())
                .map(|(t, p)| (t.clone(), p.dir.clone()))
                .collect();
            siblings = sibling_groups(base_plans.iter().chain(head_plans.iter()));
            // Or one directory inside another (`a` and `a.sub` write
            // `a/` and `a/sub/`): the same holds (probe 25).
            for side in [&base_plans, &head_plans] {
                let dirs: BTreeMap<&str, &str> =
                    side.iter().map(|(t, d)| (t.as_str(), d.as_str())).collect();
                for (t, names) in super::fingerprint::overlapping_outputs(side) {
                    let dir = dirs.get(t.as_str()).copied().unwrap_or_default();
                    let (mut same, mut around) = (Vec::new(), Vec::new());
                    for n in &names {
                        match dirs.get(n.as_str()) {
                            Some(d) if *d != dir => around.push(format!("`{n}`'s `{d}`")),
                            _ => same.push(format!("`{n}`")),
                        }
                    }
                    let mut why =
                        format!("output directory `{dir}` is written by {}", same.join(", "));
                    if !around.is_empty() {
                        why.push_str(&format!(" and overlaps {}", around.join(", ")));
                    }
                    shared_dir.entry(t).or_insert(why);
                }
            }
            // A `remove` entry deleting outside its own target's directory
            // (`compiled/other/x.yml`): what the other targets show depends
            // on it, so every target is compiled on both sides (probe 20).
            let remover = base_names
                .iter()
                .filter_map(|t| match base_nodes.get(t) {
                    Some(Ok(n)) => crate::compile::model::plan_target(n).ok().map(|(p, _)| p),
                    _ => None,
                })
                .chain(plans.values().cloned())
                .find_map(|p| {
                    super::fingerprint::removes_outside_own_dir(&p).map(|pat| (p.name, pat))
                });
            if let Some((r, pat)) = remover {
                let why = format!("`{r}` removes `{pat}`, which may be another target's output");
                for t in base_names.iter().chain(plans.keys()) {
                    shared_dir.entry(t.clone()).or_insert_with(|| why.clone());
                }
            }
            if let Some((t, why)) = shared_dir.iter().next() {
                need_full.get_or_insert_with(|| format!("`{t}`'s {why}"));
            }
        }
        lap("plan the head".into(), &mut timings);

        let mut unchanged = 0;
        let mut always = Vec::new();
        let mut changed: BTreeSet<String> = BTreeSet::new();
        // Base targets prepared, and the targets decided by their full
        // fingerprints (rendered on the base).
        let mut needed: BTreeSet<String> = BTreeSet::new();
        let mut later: Vec<String> = Vec::new();
        if need_full.is_none() {
            // A target reading the whole inventory changes whenever any
            // target's parameters may.
            let any_params_differ = !base_nodes.is_empty() || head_names != base_names;
            let empty = Rendered {
                prepared: crate::compile::prepare(
                    &BTreeMap::new(),
                    &head_ws.compile.inventory_path,
                )
                .map_err(|e| named(&head_rev, e.into()))?,
            };
            let mut fh_in = Fingerprinter::new(&head_ws, &empty);
            let mut fb_in = Fingerprinter::new(&base_ws, &empty);
            for t in base_set.union(&head_set) {
                let t: &String = t;
                if !(base_set.contains(t) && head_set.contains(t)) {
                    changed.insert(t.clone());
                    if base_set.contains(t) {
                        needed.insert(t.clone());
                    }
                    continue;
                }
                let plan = &plans[t];
                let kh = fh_in.plan_inputs(t, plan, false);
                let tv = &plan.target_var;
                let same_params =
                    reused.contains(t) && (tv == t || tv.is_empty() || reused.contains(tv));
                match &kh {
                    Err(why) => {
                        need_full
                            .get_or_insert_with(|| format!("`{t}` is always compiled ({why})"));
                        break;
                    }
                    Ok((_, true)) if any_params_differ || !same_params => {
                        need_full.get_or_insert_with(|| format!("`{t}` reads the whole inventory"));
                        break;
                    }
                    Ok(_) => {}
                }
                if !same_params {
                    later.push(t.clone());
                    needed.insert(t.clone());
                    continue;
                }
                match (fb_in.plan_inputs(t, plan, false), kh) {
                    (Ok(a), Ok(b)) if a == b => unchanged += 1,
                    // Compiled with every target's parameters.
                    (_, Ok((_, true))) => {
                        need_full.get_or_insert_with(|| format!("`{t}` reads the whole inventory"));
                        break;
                    }
                    (Err(why), _) => {
                        need_full
                            .get_or_insert_with(|| format!("`{t}` is always compiled ({why})"));
                        break;
                    }
                    _ => {
                        changed.insert(t.clone());
                        needed.insert(t.clone());
                    }
                }
            }
        }
        // A target compiled beside siblings left out (`x.one` unchanged,
        // `x.two` added): the diff would see `compiled/x/` only on the
        // head and call it an added target. Such groups are compiled whole
        // (below), which needs every target prepared.
        if need_full.is_none() {
            if let Some(t) = changed
                .iter()
                .chain(later.iter())
                .find(|t| sibling_group(&siblings, t).is_some_and(|g| g.len() > 1))
            {
                need_full = Some(format!(
                    "`{t}` shares its first output directory with other targets"
                ));
            }
        }
        lap("compare compile inputs".into(), &mut timings);
        let full = need_full.is_some();
        // The base's nodes: its own renders, the head's for the others
        // (the same parameters).
        let mut base_map: BTreeMap<String, RenderedNode> = BTreeMap::new();
        {
            let mut node = |t: &str| -> Option<RenderedNode> {
                match base_nodes.remove(t) {
                    Some(r) => r.ok(),
                    None if reused.contains(t) => head_map.get(t).cloned(),
                    None => None,
                }
            };
            let wanted: Vec<&String> = if full {
                base_names.iter().collect()
            } else {
                needed.iter().collect()
            };
            for t in wanted {
                if let Some(n) = node(t) {
                    // Its vars.target's parameters (validated, and read by
                    // its compile) come too, when that is a base target.
                    if !full {
                        if let Ok((plan, _)) = crate::compile::model::plan_target(&n) {
                            if plan.target_var != *t && base_names.contains(&plan.target_var) {
                                if let Some(v) = node(&plan.target_var) {
                                    base_map.insert(plan.target_var.clone(), v);
                                }
                            }
                        }
                    }
                    base_map.insert(t.clone(), n);
                }
            }
        }
        drop(base_nodes);
        // The head's: what it compiles or fingerprints in full, with their
        // vars.target.
        if !full {
            let mut keep: BTreeSet<&String> = BTreeSet::new();
            for t in changed.iter().chain(later.iter()) {
                if let Some(p) = plans.get(t) {
                    keep.insert(t);
                    if !p.target_var.is_empty() && plans.contains_key(&p.target_var) {
                        keep.insert(&p.target_var);
                    }
                }
            }
            let keep: BTreeSet<String> = keep.into_iter().cloned().collect();
            let (kept, left): (BTreeMap<_, _>, BTreeMap<_, _>) = std::mem::take(&mut head_map)
                .into_iter()
                .partition(|(t, _)| keep.contains(t));
            head_map = kept;
            // Freeing every other target's parameter tree (millions of
            // small allocations: 0.28 s at the bench's 1,000 targets) need
            // not hold up the compile.
            drop_aside(left);
        }
        drop(plans);
        let planned = crate::compile::plan_all(&head_map).map_err(|e| {
            let mask = SecretMask::of_values(head_map.values().map(|n| &n.parameters));
            named(&head_rev, mask.error(e.into()))
        })?;
        let head_r = Rendered {
            prepared: crate::compile::prepare_owned(
                planned,
                head_map,
                &head_ws.compile.inventory_path,
            ),
        };
        lap(
            format!("prepare the head ({} targets)", head_r.prepared.plans.len()),
            &mut timings,
        );
        let planned = crate::compile::plan_all(&base_map).map_err(|e| {
            let mask = SecretMask::of_values(base_map.values().map(|n| &n.parameters));
            named(&req.base, mask.error(e.into()))
        })?;
        let base_r = Rendered {
            prepared: crate::compile::prepare_owned(
                planned,
                base_map,
                &base_ws.compile.inventory_path,
            ),
        };
        lap(
            format!("prepare the base ({} targets)", base_r.prepared.plans.len()),
            &mut timings,
        );
        let mut fh = Fingerprinter::new(&head_ws, &head_r);
        let mut fb = Fingerprinter::new(&base_ws, &base_r);
        let decide = |t: &String,
                      changed: &mut BTreeSet<String>,
                      unchanged: &mut usize,
                      always: &mut Vec<(String, String)>,
                      fb: &mut Fingerprinter,
                      fh: &mut Fingerprinter| {
            match (fb.target(t), fh.target(t)) {
                (Ok(a), Ok(b)) if a == b => *unchanged += 1,
                (Err(why), _) | (_, Err(why)) => {
                    always.push((t.clone(), why));
                    changed.insert(t.clone());
                }
                _ => {
                    changed.insert(t.clone());
                }
            }
        };
        if full && req.incremental {
            // Every target's full fingerprints, as before.
            changed.clear();
            unchanged = 0;
            for t in base_set.union(&head_set) {
                if !(base_set.contains(t) && head_set.contains(t)) {
                    changed.insert((*t).clone());
                    continue;
                }
                decide(
                    t,
                    &mut changed,
                    &mut unchanged,
                    &mut always,
                    &mut fb,
                    &mut fh,
                );
            }
        } else if !full {
            for t in &later {
                decide(
                    t,
                    &mut changed,
                    &mut unchanged,
                    &mut always,
                    &mut fb,
                    &mut fh,
                );
            }
        }
        // Probe 33: the diff compares `compiled/<first directory>/` as one
        // target, whatever targets wrote below it. With `x.one` left out as
        // unchanged and `x.two` added, the base had no `compiled/x/`, and
        // the review called `x` an added target where a full review called
        // it changed (a removed `x.two`: "removed"). Every target writing
        // below a first directory one compiled target writes below is
        // compiled on both sides too.
        if req.incremental {
            // Until nothing is added: a target whose directory differs
            // between the sides joins two groups.
            let mut more: BTreeSet<String> = BTreeSet::new();
            let mut todo: Vec<String> = changed.iter().cloned().collect();
            while let Some(t) = todo.pop() {
                for s in sibling_group(&siblings, &t).unwrap_or_default() {
                    if !changed.contains(&s) && more.insert(s.clone()) {
                        todo.push(s);
                    }
                }
            }
            for s in more {
                if base_set.contains(&s) && head_set.contains(&s) {
                    unchanged = unchanged.saturating_sub(1);
                    always.push((
                        s.clone(),
                        "it writes below the same first output directory as a changed target"
                            .into(),
                    ));
                }
                changed.insert(s);
            }
        }
        for (t, why) in &shared_dir {
            let on_both = base_set.contains(t) && head_set.contains(t);
            if on_both && !changed.contains(t) {
                changed.insert(t.clone());
                unchanged = unchanged.saturating_sub(1);
                always.push((t.clone(), why.clone()));
            }
        }
        lap("fingerprints".into(), &mut timings);
        let keep = |all: &[String]| -> Vec<String> {
            if !req.incremental {
                return all.to_vec();
            }
            all.iter()
                .filter(|t| changed.contains(*t))
                .cloned()
                .collect()
        };
        let (base_sel, head_sel) = (keep(&base_all), keep(&head_all));
        let root = scratch.path().to_path_buf();
        let base_catalog = root.join("base-catalog");
        let head_catalog = root.join("head-catalog");
        // An incremental review keeps the files of targets whose inputs are
        // all known in memory (a full review writes every file: it is what
        // the equivalence test compares with).
        let in_memory = req.incremental && crate::memtree::keeps_names_apart(&root);
        let memory = |sel: &[String]| {
            in_memory.then(|| crate::compile::InMemory {
                tree: Arc::new(MemTree::new(crate::limits::review_memory_bytes())),
                targets: sel
                    .iter()
                    .filter(|t| !always.iter().any(|(a, _)| a == *t))
                    .cloned()
                    .collect(),
            })
        };
        let (base_memory, head_memory) = (memory(&base_sel), memory(&head_sel));
        let compile = |ws: &Workspace,
                       r: &Rendered,
                       sel: &[String],
                       root: &Path,
                       rev: &str,
                       memory: &Option<crate::compile::InMemory>| {
            let _masked = SecretMask::program_output(r);
            ws.compile_into_memory(r, sel, root, memory.clone(), &|_| {})
                .map_err(|e| {
                    // Masked with every target's parameters, as a full
                    // review's error is: `r` holds only the targets this
                    // review prepared, and a value secret-named in another
                    // target showed in the incremental review's error and
                    // was hidden in the full one (probe 33). Rendered
                    // again on this error path only.
                    let mask = match (full, ws.render()) {
                        (false, Ok(all)) => SecretMask::of(&all),
                        _ => SecretMask::of(r),
                    };
                    named(rev, mask.error(e))
                })
                .map(|rep| rep.targets.len())
        };
        let compiled = (
            compile(
                &base_ws,
                &base_r,
                &base_sel,
                &base_catalog,
                &req.base,
                &base_memory,
            )?,
            compile(
                &head_ws,
                &head_r,
                &head_sel,
                &head_catalog,
                &head_rev,
                &head_memory,
            )?,
        );
        lap(
            format!(
                "compile {} base and {} head targets",
                compiled.0, compiled.1
            ),
            &mut timings,
        );
        let mut review = Review {
            diff: CatalogDiff::default(),
            base_catalog: base_catalog.join("compiled"),
            head_catalog: head_catalog.join("compiled"),
            compiled,
            unchanged,
            always,
            base_rendered,
            full_reason: need_full,
            timings: Vec::new(),
            diff_exact: exact(diff_opts),
            memory: [base_memory.map(|m| m.tree), head_memory.map(|m| m.tree)],
            _scratch: scratch,
        };
        for dir in [&review.base_catalog, &review.head_catalog] {
            std::fs::create_dir_all(dir).map_err(scratch_err)?;
        }
        // Links into another target's directory are shown, not read: that
        // target may be left out of both catalogs (probe 33).
        let diff_opts = DiffOptions {
            links_within_targets: true,
            ..diff_opts.clone()
        };
        review.diff = diff::diff_trees(
            (&review.base_catalog, review.memory[0].as_deref()),
            (&review.head_catalog, review.memory[1].as_deref()),
            &diff_opts,
        )?;
        lap("diff".into(), &mut timings);
        drop((head_r, base_r));
        lap("free the renders".into(), &mut timings);
        review.timings = timings;
        Ok(review)
    }
}

/// The targets (with compile entries, on either side) writing below each
/// first directory of `compiled/`: `x.one` and `x.two` (`compiled/x/one/`,
/// `compiled/x/two/`) are one target to the catalog diff.
fn sibling_groups<'a>(
    plans: impl Iterator<Item = &'a (String, String)>,
) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (t, dir) in plans {
        if let Some(top) = Path::new(dir).components().next() {
            out.entry(top.as_os_str().to_string_lossy().into_owned())
                .or_default()
                .insert(t.clone());
        }
    }
    out
}

/// Every target of `t`'s groups (a target whose directory differs between
/// the sides is in two), `t` included; `None` when `t` writes nothing.
fn sibling_group(groups: &BTreeMap<String, BTreeSet<String>>, t: &str) -> Option<BTreeSet<String>> {
    let all: BTreeSet<String> = groups
        .values()
        .filter(|g| g.contains(t))
        .flat_map(|g| g.iter().cloned())
        .collect();
    (!all.is_empty()).then_some(all)
}

/// Builds the review.
pub fn review(req: &ReviewRequest, diff_opts: &DiffOptions) -> Result<Review, WorkspaceError> {
    match &req.head {
        Head::Rev(_) => open(req, None)?.finish(diff_opts),
        Head::Catalog(dir) => review_catalog(req, dir, diff_opts),
    }
}

/// `ci --collect`: the head is a compiled catalog; the base is compiled
/// in full.
fn review_catalog(
    req: &ReviewRequest,
    head_catalog: &Path,
    diff_opts: &DiffOptions,
) -> Result<Review, WorkspaceError> {
    let mut clock = std::time::Instant::now();
    let mut timings = Timings::new();
    let scratch = scratch_dir()?;
    let subdir = diff::git::subdir(req.repo)?;
    let ws = open_revision(
        req.repo,
        &req.base,
        &subdir,
        &scratch.path().join("base"),
        &req.flags,
    )
    .map_err(|e| named(&req.base, e))?;
    // The pull request that adds the inventory: its base has none, and
    // no targets (as in [`open`]), when the head catalog has some.
    if std::fs::read_dir(head_catalog).is_ok_and(|mut d| d.next().is_some()) {
        empty_inventory(&ws.inventory.path, scratch.path())?;
    }
    let r = ws.render_masked().map_err(|e| named(&req.base, e))?;
    timings.push(("read and render the base".into(), clock.elapsed()));
    clock = std::time::Instant::now();
    let wanted = if req.targets.is_empty() {
        &req.flags.targets
    } else {
        &req.targets
    };
    let all = select(&r, wanted);
    let base_root = scratch.path().join("base-catalog");
    let masked = SecretMask::program_output(&r);
    let n = ws
        .compile_into(&r, &all, &base_root, &|_| {})
        .map_err(|e| named(&req.base, SecretMask::of(&r).error(e)))?
        .targets
        .len();
    drop(masked);
    timings.push(("compile the base".into(), clock.elapsed()));
    let mut review = Review {
        diff: CatalogDiff::default(),
        base_catalog: base_root.join("compiled"),
        head_catalog: head_catalog.to_path_buf(),
        compiled: (n, 0),
        unchanged: 0,
        always: Vec::new(),
        base_rendered: (r.prepared.plans.len(), r.prepared.plans.len()),
        full_reason: None,
        timings,
        diff_exact: exact(diff_opts),
        memory: [None, None],
        _scratch: scratch,
    };
    for dir in [&review.base_catalog, &review.head_catalog] {
        std::fs::create_dir_all(dir).map_err(scratch_err)?;
    }
    // As a compiled review shows them (`ci --collect` == `ci`).
    let diff_opts = DiffOptions {
        links_within_targets: true,
        ..diff_opts.clone()
    };
    review.diff = diff::diff_dirs(&review.base_catalog, &review.head_catalog, &diff_opts)?;
    Ok(review)
}

#[cfg(test)]
mod scratch_tests {
    #[test]
    fn error_paths_name_the_revisions_files_not_the_scratch_tree() {
        let msg = "input /tmp/strata-review-Ab12Cd/head/d/self: leads back (`/tmp/strata-review-Ab12Cd/base/x.yml`)";
        assert_eq!(
            super::without_scratch(msg),
            "input d/self: leads back (`x.yml`)"
        );
        // Re-probe 7: a write error named the scratch catalog.
        let msg = "input m.jsonnet: /tmp/strata-review-QoWL3U/head-catalog/compiled/t/o/a.yaml: File name too long";
        assert_eq!(
            super::without_scratch(msg),
            "input m.jsonnet: compiled/t/o/a.yaml: File name too long"
        );
        // Re-probe 10: the search paths of a "not found" error.
        let msg = r#"not found in search_paths: ["/tmp/strata-review-73xnEV/head", "lib", "/tmp/strata-review-73xnEV/head-catalog"]"#;
        assert_eq!(
            super::without_scratch(msg),
            r#"not found in search_paths: [".", "lib", "."]"#
        );
        // Re-probe 11: the scratch root, a `..` of the revision's tree.
        let msg = "sets the Jinja2 filters file to `/tmp/strata-review-OJ0N3m/f.py`, search_paths: [\"/tmp/strata-review-u6Ytfq\"]";
        assert_eq!(
            super::without_scratch(msg),
            "sets the Jinja2 filters file to `../f.py`, search_paths: [\"..\"]"
        );
    }
}
