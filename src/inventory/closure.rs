//! A target's class closure without rendering it: its target file and every
//! class file it includes, transitively, and every class name it looks up.
//! Two revisions of an inventory give a target the same parameters when
//! none of those files changed, every name resolves to the same file on
//! both sides, and nothing in the closure depends on rendered values or on
//! which class files exist (an interpolated class name, a wildcard pattern
//! when the set of class names differs, a missing class). A review uses
//! this to render on the base only the targets a change can reach.

use super::{checks, EntityFile, Include, Inventory, InventoryError};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

/// What rendering one target reads of the inventory.
#[derive(Debug, Clone, Default)]
pub struct Closure {
    /// The target file, every class file included, and `reclass-config.yml`
    /// when class mappings apply (paths as the inventory has them).
    pub files: BTreeSet<PathBuf>,
    /// Every class name looked up, found or not.
    pub names: BTreeSet<String>,
    /// Some `classes` list has a wildcard pattern.
    pub patterns: bool,
    /// Why the closure cannot be known without rendering, if so.
    pub dynamic: Option<String>,
}

impl Inventory {
    /// The class closure of target `name`. An error only when a file in it
    /// does not parse (the target does not render either).
    pub fn closure(&self, name: &str) -> Result<Closure, InventoryError> {
        let (entity, file_idx) =
            self.targets
                .get(name)
                .ok_or_else(|| InventoryError::UnknownTarget {
                    name: name.to_string(),
                    known: self.target_names(),
                })?;
        let mut c = Closure::default();
        c.files.insert(entity.path.clone());
        let mut done = HashSet::new();
        let mut stack = Vec::new();
        let mapped = self.mapped_classes(name)?;
        if !mapped.is_empty() {
            c.files
                .insert(self.files[self.config_file as usize].clone());
            let base = EntityFile {
                file: self.config_file,
                loc: String::new(),
                includes: mapped
                    .iter()
                    .map(|(n, _)| Include::Name(n.clone(), 1))
                    .collect(),
                listed: Vec::new(),
                apps: Default::default(),
                parameters: Default::default(),
                exports: Default::default(),
                unknown_keys: Vec::new(),
                patterns: false,
            };
            self.walk_closure(&base, &mut c, &mut done, &mut stack)?;
        }
        let tfile = self.parse_entity(entity, *file_idx, String::new())?;
        if c.dynamic.is_none() {
            self.walk_closure(&tfile, &mut c, &mut done, &mut stack)?;
        }
        Ok(c)
    }

    fn walk_closure(
        &self,
        f: &EntityFile,
        c: &mut Closure,
        done: &mut HashSet<String>,
        stack: &mut Vec<String>,
    ) -> Result<(), InventoryError> {
        c.patterns |= f.patterns;
        for inc in &f.includes {
            let name = match inc {
                Include::Name(n, _) => n,
                Include::Interpolated(..) => {
                    c.dynamic = Some("a class name with a reference".into());
                    return Ok(());
                }
            };
            if done.contains(name) {
                continue;
            }
            if stack.contains(name) {
                c.dynamic = Some("a class cycle".into());
                return Ok(());
            }
            c.names.insert(name.clone());
            let Some(&idx) = self.class_index.get(name) else {
                if self.is_ignored(name) {
                    continue;
                }
                c.dynamic = Some(format!("class `{name}` is missing"));
                return Ok(());
            };
            if stack.len() >= checks::MAX_CLASS_DEPTH {
                c.dynamic = Some("classes nested too deep".into());
                return Ok(());
            }
            let cf = self.class_file(idx)?;
            c.files.insert(self.classes[idx].entity.path.clone());
            stack.push(name.clone());
            self.walk_closure(&cf, c, done, stack)?;
            stack.pop();
            if c.dynamic.is_some() {
                return Ok(());
            }
            done.insert(name.clone());
        }
        Ok(())
    }

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
    for rel in la.intersection(&lb) {
        if std::fs::read(a.join(rel)).ok()? != std::fs::read(b.join(rel)).ok()? {
            changed.insert(rel.clone());
        }
    }
    Some(changed)
}

/// The targets of `head` that render to the same parameters on `base`
/// (`changed`: the files that differ between the two inventory
/// directories, relative to them). `Err` with the reason when no target
/// can be trusted to (the options or configuration differ).
pub fn unaffected(
    head: &Inventory,
    base: &Inventory,
    changed: &BTreeSet<PathBuf>,
) -> Result<BTreeSet<String>, String> {
    let mut ho = head.opts.clone();
    let mut bo = base.opts.clone();
    ho.path = PathBuf::new();
    bo.path = PathBuf::new();
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
    for t in head.targets.keys() {
        let (Some(hf), Some(bf)) = (head.target_file(t), base.target_file(t)) else {
            continue;
        };
        let Some(hrel) = rel(head, hf) else { continue };
        if Some(&hrel) != rel(base, bf).as_ref() || changed.contains(&hrel) {
            continue;
        }
        let Ok(c) = head.closure(t) else { continue };
        if c.dynamic.is_some() || (c.patterns && !same_names) {
            continue;
        }
        let files_same = c
            .files
            .iter()
            .all(|f| rel(head, f).is_some_and(|r| !changed.contains(&r)));
        let names_same = c.names.iter().all(|n| {
            hc.get(n.as_str()).cloned().flatten() == bc.get(n.as_str()).cloned().flatten()
                && hc.contains_key(n.as_str()) == bc.contains_key(n.as_str())
        });
        if files_same && names_same {
            out.insert(t.clone());
        }
    }
    Ok(out)
}
