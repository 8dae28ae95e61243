//! A target's class closure: its target file and every class file it
//! includes, transitively, and every class name it looks up (names with
//! references as they resolved), recorded while rendering. Two revisions
//! of an inventory give a target the same parameters when none of those
//! files changed, every name names the same file on both sides (a class
//! added or removed that an ignored missing name or a wildcard pattern
//! could now match is caught there), and the options and configuration are
//! the same. A review uses this to render on the base only the targets a
//! change can reach.

use super::{Inventory, InventoryError};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What rendering one target read of the inventory, recorded by the
/// renderer: class names with references are recorded as they resolved.
/// Every step of a render depends only on the files read before it (a
/// reference in a class name sees the parameters merged so far), so a
/// revision in which these files are the same and these names name the
/// same files renders the target alike.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sources {
    /// The target file, every class file included, and `reclass-config.yml`
    /// when class mappings apply (paths as the inventory has them).
    pub files: BTreeSet<PathBuf>,
    /// Every class name looked up, found or ignored as missing.
    pub names: BTreeSet<String>,
    /// Some `classes` list has a wildcard pattern.
    pub patterns: bool,
}

impl Inventory {
    /// The inventory directory (as given in the options).
    pub fn root(&self) -> &Path {
        &self.opts.path
    }

    /// Every class name and its file relative to the inventory directory
    /// (`None` when the file is outside it).
    fn relative_classes(&self) -> BTreeMap<&str, Option<PathBuf>> {
        self.classes
            .iter()
            .map(|c| {
                (
                    c.entity.name.as_str(),
                    c.entity
                        .path
                        .strip_prefix(&self.opts.path)
                        .ok()
                        .map(Path::to_path_buf),
                )
            })
            .collect()
    }
}

/// The files that differ between two inventory directories (relative
/// paths: added, removed or different bytes); `None` when a directory
/// cannot be compared file by file (a symlink, an unreadable entry).
pub fn changed_files(a: &Path, b: &Path) -> Option<BTreeSet<PathBuf>> {
    fn list(root: &Path) -> Option<BTreeSet<PathBuf>> {
        let mut out = BTreeSet::new();
        let mut stack = vec![PathBuf::new()];
        while let Some(rel) = stack.pop() {
            for e in std::fs::read_dir(root.join(&rel)).ok()? {
                let e = e.ok()?;
                let ft = e.file_type().ok()?;
                let r = rel.join(e.file_name());
                if ft.is_symlink() {
                    return None;
                } else if ft.is_dir() {
                    stack.push(r);
                } else {
                    out.insert(r);
                }
            }
        }
        Some(out)
    }
    let (la, lb) = (list(a)?, list(b)?);
    let mut changed: BTreeSet<PathBuf> = la.symmetric_difference(&lb).cloned().collect();
    // One pair of buffers for every file (zeroing two new 64 KiB buffers
    // per file was 3% of a review's instructions).
    let mut bufs = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    for rel in la.intersection(&lb) {
        if !same_bytes(&a.join(rel), &b.join(rel), &mut bufs)? {
            changed.insert(rel.clone());
        }
    }
    Some(changed)
}

/// Whether two files hold the same bytes, read in bounded chunks (a large
/// file is never held in memory); `None` when one cannot be read.
fn same_bytes(a: &Path, b: &Path, (ba, bb): &mut (Vec<u8>, Vec<u8>)) -> Option<bool> {
    use std::io::Read;
    let (mut ra, mut rb) = (std::fs::File::open(a).ok()?, std::fs::File::open(b).ok()?);
    if ra.metadata().ok()?.len() != rb.metadata().ok()?.len() {
        return Some(false);
    }
    loop {
        let n = ra.read(ba).ok()?;
        if n == 0 {
            // Same length: the other is at its end too.
            return Some(rb.read(&mut bb[..1]).ok()? == 0);
        }
        rb.read_exact(&mut bb[..n]).ok()?;
        if ba[..n] != bb[..n] {
            return Some(false);
        }
    }
}

/// The targets of `head` that render to the same parameters on `base`
/// (`changed`: the files that differ between the two inventory
/// directories, relative to them; `rendered`: the head's renders, whose
/// [`Sources`] say what each read). `Err` with the reason when no target
/// can be trusted to (the options or configuration differ).
pub fn unaffected(
    head: &Inventory,
    base: &Inventory,
    changed: &BTreeSet<PathBuf>,
    rendered: &BTreeMap<String, Result<super::RenderedNode, InventoryError>>,
) -> Result<BTreeSet<String>, String> {
    let mut ho = head.opts.clone();
    let mut bo = base.opts.clone();
    ho.path = PathBuf::new();
    bo.path = PathBuf::new();
    // Confinement only refuses files; what renders renders alike.
    ho.confine = None;
    bo.confine = None;
    if ho != bo {
        return Err("the inventory options differ".into());
    }
    let dirs = |inv: &Inventory| -> Option<(PathBuf, PathBuf)> {
        let classes = inv.classes_dir.strip_prefix(&inv.opts.path).ok()?;
        let targets = inv.targets_dir.strip_prefix(&inv.opts.path).ok()?;
        Some((classes.to_path_buf(), targets.to_path_buf()))
    };
    let (Some(hd), Some(bd)) = (dirs(head), dirs(base)) else {
        return Err("the classes or targets directory is outside the inventory".into());
    };
    if hd != bd {
        return Err("the classes or targets directory differs".into());
    }
    if let Some(f) = changed
        .iter()
        .find(|f| !f.starts_with(&hd.0) && !f.starts_with(&hd.1))
    {
        return Err(format!(
            "{} changed (neither a class nor a target)",
            f.display()
        ));
    }
    let hc = head.relative_classes();
    let bc = base.relative_classes();
    let same_names = hc.len() == bc.len() && hc.keys().eq(bc.keys());
    let rel =
        |inv: &Inventory, p: &Path| p.strip_prefix(&inv.opts.path).ok().map(Path::to_path_buf);
    let mut out = BTreeSet::new();
    for (t, r) in rendered {
        let Ok(node) = r else { continue };
        let (Some(hf), Some(bf)) = (head.target_file(t), base.target_file(t)) else {
            continue;
        };
        let Some(hrel) = rel(head, hf) else { continue };
        if Some(&hrel) != rel(base, bf).as_ref() || changed.contains(&hrel) {
            continue;
        }
        let s = &node.sources;
        if s.patterns && !same_names {
            continue;
        }
        let files_same = s
            .files
            .iter()
            .all(|f| rel(head, f).is_some_and(|r| !changed.contains(&r)));
        let names_same = s.names.iter().all(|n| {
            hc.get(n.as_str()).cloned().flatten() == bc.get(n.as_str()).cloned().flatten()
                && hc.contains_key(n.as_str()) == bc.contains_key(n.as_str())
        });
        if files_same && names_same {
            out.insert(t.clone());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_files_lists_added_removed_and_edited_files() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let write = |root: &Path, rel: &str, text: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        write(a.path(), "classes/same.yml", "x: 1\n");
        write(b.path(), "classes/same.yml", "x: 1\n");
        write(a.path(), "classes/edited.yml", "x: 1\n");
        write(b.path(), "classes/edited.yml", "x: 2\n");
        write(a.path(), "classes/longer.yml", "x: 1\n");
        write(b.path(), "classes/longer.yml", "x: 1\ny: 2\n");
        write(a.path(), "targets/gone.yml", "");
        write(b.path(), "targets/new.yml", "");
        let big = "a".repeat(200_000);
        write(a.path(), "classes/big.yml", &big);
        write(b.path(), "classes/big.yml", &format!("{}b", &big[1..]));
        let changed = changed_files(a.path(), b.path()).unwrap();
        let names: Vec<String> = changed
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "classes/big.yml",
                "classes/edited.yml",
                "classes/longer.yml",
                "targets/gone.yml",
                "targets/new.yml"
            ]
        );
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(a.path().join("classes/same.yml"), b.path().join("l.yml"))
                .unwrap();
            assert!(changed_files(a.path(), b.path()).is_none());
        }
    }

    fn inventory(root: &Path) -> Inventory {
        Inventory::load(&crate::inventory::InventoryOptions {
            path: root.to_path_buf(),
            ignore_class_notfound: true,
            ..Default::default()
        })
        .unwrap()
    }

    #[test]
    fn a_target_is_unaffected_only_when_its_closure_is() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        for root in [a.path(), b.path()] {
            let write = |rel: &str, text: &str| {
                let p = root.join(rel);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, text).unwrap();
            };
            write("classes/common.yml", "parameters:\n  env: prod\n");
            write("classes/apps/prod.yml", "parameters:\n  app: 1\n");
            write("classes/tenant/a.yml", "parameters:\n  owner: a\n");
            write("classes/tenant/b.yml", "parameters:\n  owner: b\n");
            write("targets/ta.yml", "classes: [common, tenant.a]\n");
            write("targets/tb.yml", "classes: [common, tenant.b]\n");
            // A class named through a reference, resolved while rendering.
            write("targets/tr.yml", "classes:\n  - common\n  - apps.${env}\n");
            // A class that does not exist (ignored).
            write("targets/tm.yml", "classes: [common, optional.extra]\n");
        }
        let head = inventory(a.path());
        let renders = head.render_each();
        let unaffected = |base_root: &Path| {
            let base = inventory(base_root);
            let changed = changed_files(a.path(), base_root).unwrap();
            unaffected(&head, &base, &changed, &renders).unwrap()
        };
        let all: BTreeSet<String> = ["ta", "tb", "tm", "tr"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(unaffected(b.path()), all);
        // One tenant changes: its target only.
        std::fs::write(
            b.path().join("classes/tenant/b.yml"),
            "parameters:\n  owner: c\n",
        )
        .unwrap();
        let got = unaffected(b.path());
        assert!(!got.contains("tb") && got.contains("ta"), "{got:?}");
        // The class a reference resolved to changes: that target.
        std::fs::write(
            b.path().join("classes/apps/prod.yml"),
            "parameters:\n  app: 2\n",
        )
        .unwrap();
        assert!(!unaffected(b.path()).contains("tr"));
        // The class the missing name names appears on one side.
        std::fs::create_dir_all(b.path().join("classes/optional")).unwrap();
        std::fs::write(
            b.path().join("classes/optional/extra.yml"),
            "parameters: {}\n",
        )
        .unwrap();
        let got = unaffected(b.path());
        assert!(!got.contains("tm") && got.contains("ta"), "{got:?}");
        // reclass-config.yml changes: no target can be trusted.
        std::fs::write(
            b.path().join("reclass-config.yml"),
            "ignore_class_notfound: true\n",
        )
        .unwrap();
        let base = inventory(b.path());
        let changed = changed_files(a.path(), b.path()).unwrap();
        assert!(super::unaffected(&head, &base, &changed, &renders).is_err());
    }
}
