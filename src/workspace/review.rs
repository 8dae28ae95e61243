//! A pull request's catalog change, built in this process: the base and
//! head revisions read from git objects (each with its own `.kapitan`),
//! both inventories rendered, and only the targets whose fingerprints
//! differ compiled on each side. Every other target has the same catalog
//! on both sides, so leaving it out of both changes nothing in the diff,
//! the apply-order comparison or anything built from them.

use super::fingerprint::Fingerprinter;
use super::{open_revision, CompileFlags, Rendered, Workspace, WorkspaceError};
use crate::diff::{self, CatalogDiff, DiffOptions};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

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
    _scratch: tempfile::TempDir,
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
        message: format!("compiling revision `{rev}` failed: {e}"),
        hint: match &e {
            WorkspaceError::Config { hint, .. } => hint.clone(),
            other => crate::diagnostics::ToDiagnostic::to_diagnostic(other)
                .hints
                .first()
                .cloned(),
        },
    }
}

/// Builds the review.
pub fn review(req: &ReviewRequest, diff_opts: &DiffOptions) -> Result<Review, WorkspaceError> {
    let scratch = tempfile::Builder::new()
        .prefix("strata-review-")
        .tempdir()
        .map_err(scratch_err)?;
    let subdir = diff::git::subdir(req.repo)?;
    let root = scratch.path().to_path_buf();
    let open = |rev: &str, name: &str| -> Result<(Workspace, Rendered), WorkspaceError> {
        let ws = open_revision(req.repo, rev, &subdir, &root.join(name), &req.flags)
            .map_err(|e| named(rev, e))?;
        let r = ws.render().map_err(|e| named(rev, e))?;
        Ok((ws, r))
    };
    // Both sides are read and rendered at once (two independent trees).
    let (base_side, head_side) = std::thread::scope(|s| {
        // Rendering recurses over nested values: the main thread's stack size.
        let head = std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn_scoped(s, || match &req.head {
                Head::Rev(h) => Some(open(h, "head")),
                Head::Catalog(_) => None,
            });
        let base = open(&req.base, "base");
        (
            base,
            head.map_err(|_| ()).and_then(|h| h.join().map_err(|_| ())),
        )
    });
    let (base_ws, base_r) = base_side?;
    let mut head_side = match head_side {
        Ok(h) => h,
        Err(()) => {
            return Err(WorkspaceError::Config {
                message: "rendering the head revision failed (thread)".into(),
                hint: None,
            })
        }
    };
    let base_catalog = root.join("base-catalog");
    let wanted = if req.targets.is_empty() {
        &req.flags.targets
    } else {
        &req.targets
    };
    let base_all = select(&base_r, wanted);
    let mut review = Review {
        diff: CatalogDiff::default(),
        base_catalog: base_catalog.join("compiled"),
        head_catalog: PathBuf::new(),
        compiled: (0, 0),
        unchanged: 0,
        always: Vec::new(),
        _scratch: scratch,
    };
    let compile = |ws: &Workspace, r: &Rendered, sel: &[String], root: &Path, rev: &str| {
        ws.compile_into(r, sel, root, &|_| {})
            .map_err(|e| named(rev, e))
            .map(|rep| rep.targets.len())
    };
    match &req.head {
        Head::Catalog(dir) => {
            review.compiled.0 = compile(&base_ws, &base_r, &base_all, &base_catalog, &req.base)?;
            review.head_catalog = dir.clone();
        }
        Head::Rev(head) => {
            let (head_ws, head_r) = match head_side.take() {
                Some(h) => h?,
                None => open(head, "head")?,
            };
            let head_all = select(&head_r, wanted);
            let (base_sel, head_sel) = if req.incremental {
                let mut fb = Fingerprinter::new(&base_ws, &base_r);
                let mut fh = Fingerprinter::new(&head_ws, &head_r);
                let base_set: BTreeSet<&String> = base_all.iter().collect();
                let head_set: BTreeSet<&String> = head_all.iter().collect();
                let mut changed = BTreeSet::new();
                for t in base_set.union(&head_set) {
                    if !(base_set.contains(t) && head_set.contains(t)) {
                        changed.insert((*t).clone());
                        continue;
                    }
                    match (fb.target(t), fh.target(t)) {
                        (Ok(a), Ok(b)) if a == b => review.unchanged += 1,
                        (Err(why), _) | (_, Err(why)) => {
                            review.always.push(((*t).clone(), why));
                            changed.insert((*t).clone());
                        }
                        _ => {
                            changed.insert((*t).clone());
                        }
                    }
                }
                let keep = |all: &[String]| -> Vec<String> {
                    all.iter()
                        .filter(|t| changed.contains(*t))
                        .cloned()
                        .collect()
                };
                (keep(&base_all), keep(&head_all))
            } else {
                (base_all, head_all)
            };
            let head_catalog = root.join("head-catalog");
            review.compiled.0 = compile(&base_ws, &base_r, &base_sel, &base_catalog, &req.base)?;
            review.compiled.1 = compile(&head_ws, &head_r, &head_sel, &head_catalog, head)?;
            review.head_catalog = head_catalog.join("compiled");
        }
    }
    // An empty side still needs a directory to diff against.
    for dir in [&review.base_catalog, &review.head_catalog] {
        std::fs::create_dir_all(dir).map_err(scratch_err)?;
    }
    review.diff = diff::diff_dirs(&review.base_catalog, &review.head_catalog, diff_opts)?;
    Ok(review)
}
