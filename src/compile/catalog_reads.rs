//! Which compile entries read or write the catalog being built: inputs
//! that may lie below `compiled/`, `remove` entries reaching another
//! target's directory, and targets whose output directories overlap.
//! What such a target writes depends on which other targets are compiled
//! with it, so the compiler writes them in a fixed order and a review or
//! cache never takes them alone.

use super::model::{InputType, TargetPlan};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Whether an input pattern may match a path below the catalog being
/// built, which the compiler adds to the search paths (last): every
/// search path's matches are taken (Kapitan's set), so a tree file at
/// `compiled/a/x.yml` (a committed catalog) was hashed while the compile
/// also read target `a`'s fresh output there (probe 20). The catalog root
/// holds `compiled/` only: a pattern whose first name, lexically
/// normalised, is or may match `compiled` is such an input.
pub fn input_may_be_in_catalog(pattern: &str) -> bool {
    if Path::new(pattern).is_absolute() {
        return false;
    }
    let norm = super::jsonnet::normpath(Path::new(pattern));
    let Some(first) = norm.components().find_map(|c| match c {
        std::path::Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
        _ => None,
    }) else {
        return false;
    };
    // A `..` left at the front climbs out of every search path: the
    // catalog root's parent is no tree the fingerprint can hash either.
    if norm.starts_with("..") {
        return true;
    }
    first == "compiled"
        || glob::Pattern::new(&first).is_ok_and(|p| {
            p.matches_with(
                "compiled",
                glob::MatchOptions {
                    require_literal_leading_dot: true,
                    ..Default::default()
                },
            )
        })
}

/// The first `remove` input of a plan that may name a path of the
/// catalog outside the target's own directory (`compiled/<dir>/...`):
/// such an entry deletes other targets' files, so what another target
/// shows depends on whether this one is compiled with it (probe 20: a
/// review that left the other target out showed nothing, a full review
/// showed its file removed).
pub fn removes_outside_own_dir(plan: &TargetPlan) -> Option<String> {
    let own = Path::new("compiled").join(&plan.dir);
    plan.entries
        .iter()
        .filter(|e| e.input_type == InputType::Remove)
        .flat_map(|e| e.input_paths.iter())
        .find(|pattern| {
            if !input_may_be_in_catalog(pattern) {
                return false;
            }
            let norm = super::jsonnet::normpath(Path::new(pattern.as_str()));
            // Inside only when the own directory's names are literal.
            let literal = norm
                .components()
                .take(own.components().count())
                .all(|c| !super::has_magic(&c.as_os_str().to_string_lossy()));
            !(literal && norm.starts_with(&own))
        })
        .cloned()
}

/// Whether a plan reads the catalog being built: an input pattern (a
/// `copy`, `jinja2`, `jsonnet` ... input; not an `external` program's
/// path) whose first name is or may match `compiled`, or a `remove` of
/// another target's files. What it reads or removes depends on which
/// other targets have been written already (probe 34: a `copy` of
/// `compiled/[ab]` copied both, one or neither from run to run, exit 0).
pub fn reads_the_catalog(plan: &TargetPlan) -> bool {
    removes_outside_own_dir(plan).is_some()
        || plan
            .entries
            .iter()
            .filter(|e| !matches!(e.input_type, InputType::External | InputType::Remove))
            .flat_map(|e| e.input_paths.iter())
            .any(|p| {
                input_may_be_in_catalog(p)
                    && !super::jsonnet::normpath(Path::new(p.as_str())).starts_with("..")
            })
}

/// The targets whose output directory overlaps another target's, each
/// with the targets it overlaps (itself included, sorted): the same
/// directory (a `vars.target` naming another target), or one inside the
/// other (targets `a` and `a.sub` write `compiled/a/` and
/// `compiled/a/sub/`). What such a directory holds depends on every one
/// of them and on the order they are written in: a review leaving one out
/// (probe 25: `a` writing `sub/y.yml`, which `a.sub` overwrites) showed a
/// change a full review did not, and the cache served `a`'s file where a
/// compile of both wrote `a.sub`'s. `dirs`: (target, directory below
/// `compiled/`).
pub fn overlapping_outputs(dirs: &[(String, String)]) -> BTreeMap<String, Vec<String>> {
    let mut by_dir: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (t, d) in dirs {
        by_dir.entry(d.as_str()).or_default().push(t.as_str());
    }
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut join = |group: &[&str]| {
        for t in group {
            out.entry(t.to_string())
                .or_default()
                .extend(group.iter().map(|x| x.to_string()));
        }
    };
    for (dir, ts) in &by_dir {
        if ts.len() > 1 {
            join(ts);
        }
        // Every directory above this one (`a` for `a/sub`, `a/b` and `a`
        // for `a/b/c`) that is another target's. The empty one is that of
        // targets without `vars.target`, which compile nothing.
        let above = dir
            .char_indices()
            .filter(|(i, c)| *c == '/' && *i > 0)
            .map(|(i, _)| &dir[..i]);
        for up in above {
            if let Some(us) = by_dir.get(up) {
                let group: Vec<&str> = us.iter().chain(ts.iter()).copied().collect();
                join(&group);
            }
        }
    }
    out.into_iter()
        .map(|(t, set)| (t, set.into_iter().collect()))
        .collect()
}
