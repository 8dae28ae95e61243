//! The secret values a review knows (red41): the strings its inventories
//! hold under secret-named parameters and the values of the Kapitan
//! `plain`/`base64` references named there, read from each revision's
//! renders (or the working tree's inventory), for the redactor to hide
//! wherever a diff shows them.

use crate::diff::redact::Redactor;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The secret values of a pull request's two inventories, as `redactor`
/// names secrets: of the renders both sides keep for lint (opened with the
/// working tree's inventory options).
pub fn pr_known_values(
    pr: &super::review::Pr,
    flags: &super::CompileFlags,
    redactor: &Redactor,
) -> BTreeSet<String> {
    let refs_dir = |root: &Path| refs_dir(root, flags.refs_path.as_deref());
    let mut sides: Vec<(Vec<&crate::value::Value>, PathBuf)> = Vec::new();
    if let Some((_, renders)) = pr.head_lint_input() {
        let params = renders
            .values()
            .filter_map(|r| r.as_ref().ok().map(|n| &n.parameters))
            .collect();
        sides.push((params, refs_dir(Path::new("."))));
    }
    if let Some(((_, renders), root)) = pr.base_lint_input() {
        let params = renders
            .values()
            .filter_map(|r| r.as_ref().ok().map(|n| &n.parameters))
            .collect();
        sides.push((params, refs_dir(root)));
    }
    if sides.is_empty() {
        // A `--full` review opens no lint input (red42: its ci comment and
        // summary showed every known value): each revision's own renders.
        for (nodes, root) in pr.renders_by_side() {
            let params = nodes.into_iter().map(|n| &n.parameters).collect();
            sides.push((params, refs_dir(root)));
        }
    }
    let refs: Vec<crate::refs::Refs> = sides
        .iter()
        .map(|(_, dir)| crate::refs::Refs::new(dir.clone()))
        .collect();
    let references: Vec<_> = refs
        .iter()
        .map(|r| move |tag: &str| reference_value(r, tag))
        .collect();
    crate::diff::redact::secret_values_of_sides(
        redactor,
        sides
            .into_iter()
            .zip(&references)
            .map(|((params, _), r)| (params, r as &dyn Fn(&str) -> Option<String>))
            .collect(),
    )
}

/// The secret values of the working tree's inventory at `opts` (red41),
/// for a diff of catalogs compiled from it (`diff --catalogs`, `push`'s
/// dry run): none when there is no inventory or it does not load. Read
/// confined to the working directory, as a review reads a pull request's.
pub fn worktree_known_values(
    opts: crate::inventory::InventoryOptions,
    redactor: &Redactor,
) -> BTreeSet<String> {
    match std::env::current_dir().and_then(|d| d.canonicalize()) {
        Ok(cwd) => known_values_at(opts, &cwd, redactor),
        Err(_) => Default::default(),
    }
}

/// [`worktree_known_values`] of the revision `rev` of the repository in
/// the working directory (read from git into a scratch directory): the
/// base of `ci --collect`, whose values the head's catalog may still
/// show on the base's side. None known when it cannot be read.
pub fn revision_known_values(
    rev: &str,
    opts: &crate::inventory::InventoryOptions,
    redactor: &Redactor,
) -> BTreeSet<String> {
    let repo = Path::new(".");
    let Ok(tmp) = crate::fswalk::private_temp_dir("strata-known-") else {
        return Default::default();
    };
    let tree = tmp.path().join("tree");
    if crate::diff::git::extract(repo, rev, "", &tree).is_err() || opts.path.is_absolute() {
        return Default::default();
    }
    let root = match crate::diff::git::subdir(repo) {
        Ok(sub) if !sub.is_empty() => tree.join(sub),
        _ => tree,
    };
    let root = root.canonicalize().unwrap_or(root);
    let opts = crate::inventory::InventoryOptions {
        path: root.join(&opts.path),
        ..opts.clone()
    };
    known_values_at(opts, &root, redactor)
}

/// The secret values of the inventory at `opts`, read confined to `root`,
/// its references in `root/refs`.
fn known_values_at(
    mut opts: crate::inventory::InventoryOptions,
    root: &Path,
    redactor: &Redactor,
) -> BTreeSet<String> {
    let mut values = BTreeSet::new();
    if !opts.path.is_dir() {
        return values;
    }
    opts.confine = Some(root.to_path_buf());
    let Ok(inv) = crate::inventory::Inventory::load(&opts) else {
        return values;
    };
    let renders = crate::lint::render_all(&inv);
    let refs = crate::refs::Refs::new(refs_dir(root, None));
    let reference = |tag: &str| reference_value(&refs, tag);
    values.extend(crate::diff::redact::secret_values(
        redactor,
        renders
            .values()
            .filter_map(|r| r.as_ref().ok().map(|n| &n.parameters)),
        &reference,
    ));
    values
}

/// Where a revision's tree at `root` keeps its references, as the compile
/// finds them: `flag`, else `.kapitan`'s `compile: refs-path`, else
/// `./refs`; inside the tree (an absolute path is not read).
fn refs_dir(root: &Path, flag: Option<&Path>) -> PathBuf {
    let configured = flag.map(Path::to_path_buf).or_else(|| {
        crate::inventory::config::KapitanDefaults::load(root)
            .ok()?
            .get_path("compile", "refs-path")
            .map(PathBuf::from)
    });
    match configured {
        Some(p) if !p.is_absolute() => root.join(p),
        _ => root.join("refs"),
    }
}

/// The stored value of a Kapitan `?{plain:PATH}` or `?{base64:PATH}` tag
/// (with `||functions` or a hash after the path), from the refs files.
fn reference_value(refs: &crate::refs::Refs, tag: &str) -> Option<String> {
    let inner = tag.strip_prefix("?{")?.strip_suffix('}')?;
    let (ty, rest) = inner.split_once(':')?;
    if !matches!(ty, "plain" | "base64") {
        return None;
    }
    let path = rest.split('|').next()?.split(':').next()?;
    let r = refs.get(ty, path).ok()??;
    refs.reveal_ref(&r, "").ok()
}
