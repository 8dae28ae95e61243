//! Finding class and target files: a directory walk that follows
//! symlinks (also relative ones pointing outside the tree), sorted so that
//! names, errors and output never depend on the file system's order.

use super::InventoryError;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Class,
    Target,
}

/// A class or target file and the name it defines.
#[derive(Debug, Clone)]
pub struct Entity {
    pub name: String,
    pub path: PathBuf,
    /// Path components under the root, without the extension.
    pub parts: Vec<String>,
    /// Dotted directory relative class names start from.
    pub loc: String,
    /// Some component starts with `.`: not matched by wildcard patterns.
    pub hidden: bool,
}

/// Lists the entities under `root` (which may be missing: no entities);
/// with `confine` (not empty), every file and directory must resolve
/// inside one of its directories.
pub fn walk(
    root: &Path,
    kind: Kind,
    compose: bool,
    confine: &[PathBuf],
) -> Result<Vec<Entity>, InventoryError> {
    let mut files = Vec::new();
    if root.is_dir() {
        let mut visits = crate::fswalk::Visits::default();
        let real = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        // The root is entered once: it cannot be refused.
        let _ = visits.enter(real.clone());
        let confine: Vec<PathBuf> = confine
            .iter()
            .map(|c| c.canonicalize().unwrap_or_else(|_| c.clone()))
            .collect();
        if !confine.is_empty() && !confine.iter().any(|c| real.starts_with(c)) {
            return Err(InventoryError::OutsideTree {
                path: root.to_path_buf(),
            });
        }
        Walk {
            out: &mut files,
            visits: &mut visits,
            confine: &confine,
        }
        .walk_dir(root, &real, &mut Vec::new())?;
    }
    let mut by_name: BTreeMap<String, Entity> = BTreeMap::new();
    for (path, rel) in files {
        let e = entity(path, rel, kind, compose);
        if kind == Kind::Target {
            // The file's stem too: `a/..yml` composes to `a..` but is no name.
            let stem = e.parts.last().map(String::as_str).unwrap_or("");
            if let Some(reason) = super::checks::bad_target_name(&e.name)
                .or_else(|| super::checks::bad_target_name(stem))
            {
                return Err(InventoryError::BadTargetName {
                    path: e.path,
                    name: e.name,
                    reason,
                });
            }
        }
        if let Some(prev) = by_name.get(&e.name) {
            let (first, second) = if prev.path <= e.path {
                (prev.path.clone(), e.path.clone())
            } else {
                (e.path.clone(), prev.path.clone())
            };
            return Err(InventoryError::Collides {
                kind: if kind == Kind::Class {
                    "class"
                } else {
                    "target"
                },
                name: e.name,
                first,
                second,
            });
        }
        by_name.insert(e.name.clone(), e);
    }
    Ok(by_name.into_values().collect())
}

struct Walk<'a> {
    out: &'a mut Vec<(PathBuf, Vec<String>)>,
    visits: &'a mut crate::fswalk::Visits,
    confine: &'a [PathBuf],
}

/// Whether `real` lies in one of `roots` (none: no confinement).
fn allowed(roots: &[PathBuf], real: &Path) -> bool {
    roots.is_empty() || roots.iter().any(|c| real.starts_with(c))
}

impl Walk<'_> {
    /// `real` is `dir` resolved: a directory's entries that are not links
    /// are resolved by joining their names to it, not each from the root
    /// (that cost every level each level above it, twice: 40 branches 245
    /// levels deep took a review 24 s; re-probe 13).
    fn walk_dir(
        &mut self,
        dir: &Path,
        real: &Path,
        rel: &mut Vec<String>,
    ) -> Result<(), InventoryError> {
        let rd = std::fs::read_dir(dir).map_err(|e| InventoryError::Io {
            path: dir.to_path_buf(),
            message: e.to_string(),
        })?;
        let mut entries: Vec<(String, PathBuf, bool)> = rd
            .filter_map(|e| e.ok())
            .map(|e| {
                let link = e.file_type().is_ok_and(|t| t.is_symlink());
                (e.file_name().to_string_lossy().into_owned(), e.path(), link)
            })
            .collect();
        entries.sort();
        for (name, path, link) in entries {
            // `metadata` follows symlinks; a dangling link is skipped.
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            let resolved = || {
                if link {
                    path.canonicalize().ok()
                } else {
                    Some(real.join(&name))
                }
            };
            if meta.is_dir() {
                let canon = resolved().unwrap_or_else(|| path.clone());
                if !allowed(self.confine, &canon) {
                    return Err(InventoryError::OutsideTree { path });
                }
                // A symlink back up the tree would loop forever (skipped);
                // links that fan out would branch without end (an error).
                match self.visits.enter(canon.clone()) {
                    Ok(()) => {}
                    Err(crate::fswalk::Refusal::Loop) => continue,
                    Err(why) => {
                        return Err(InventoryError::Io {
                            path,
                            message: why.message("read"),
                        })
                    }
                }
                rel.push(name);
                let r = self.walk_dir(&path, &canon, rel);
                rel.pop();
                self.visits.leave();
                r?;
            } else if meta.is_file() && (name.ends_with(".yml") || name.ends_with(".yaml")) {
                // FIFOs and devices (a link to /dev/zero) are never read.
                if !self.confine.is_empty()
                    && !resolved().is_some_and(|r| allowed(self.confine, &r))
                {
                    return Err(InventoryError::OutsideTree { path });
                }
                let stem = name.rsplit_once('.').map_or(name.as_str(), |(s, _)| s);
                let mut parts = rel.clone();
                parts.push(stem.to_string());
                self.out.push((path, parts));
            }
        }
        Ok(())
    }
}

/// `path` resolved through symlinks lies inside `root` (canonical).
pub(crate) fn check_inside(path: &Path, root: &Path) -> Result<(), InventoryError> {
    match path.canonicalize() {
        Ok(real) if real.starts_with(root) => Ok(()),
        _ => Err(InventoryError::OutsideTree {
            path: path.to_path_buf(),
        }),
    }
}

fn entity(path: PathBuf, parts: Vec<String>, kind: Kind, compose: bool) -> Entity {
    let hidden = parts.iter().any(|p| p.starts_with('.'));
    match kind {
        Kind::Class => {
            // `foo/init.yml` is class `foo`; relative names in it start
            // from foo's parent.
            let (name_parts, loc_parts): (&[String], &[String]) =
                if parts.last().is_some_and(|p| p == "init") {
                    let dir = &parts[..parts.len() - 1];
                    (dir, &dir[..dir.len().saturating_sub(1)])
                } else {
                    (&parts[..], &parts[..parts.len() - 1])
                };
            Entity {
                name: name_parts.join("."),
                loc: loc_parts.join("."),
                path,
                parts,
                hidden,
            }
        }
        Kind::Target => {
            let last = parts.last().cloned().unwrap_or_default();
            let name = if compose && !parts[0].starts_with('_') {
                parts.join(".")
            } else {
                last
            };
            Entity {
                name,
                loc: String::new(),
                path,
                parts,
                hidden,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(parts: &[&str]) -> Vec<String> {
        parts.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn class_names() {
        let e = entity("x".into(), p(&["a", "b", "init"]), Kind::Class, false);
        assert_eq!((e.name.as_str(), e.loc.as_str()), ("a.b", "a"));
        let e = entity("x".into(), p(&["a", "b", "c"]), Kind::Class, false);
        assert_eq!((e.name.as_str(), e.loc.as_str()), ("a.b.c", "a.b"));
        let e = entity("x".into(), p(&["init"]), Kind::Class, false);
        assert_eq!(e.name, "");
        assert!(entity("x".into(), p(&[".h", "c"]), Kind::Class, false).hidden);
    }

    #[test]
    fn target_names() {
        let e = entity("x".into(), p(&["a", "n1"]), Kind::Target, false);
        assert_eq!(e.name, "n1");
        let e = entity("x".into(), p(&["a", "n1"]), Kind::Target, true);
        assert_eq!(e.name, "a.n1");
        let e = entity("x".into(), p(&["_hidden", "z1"]), Kind::Target, true);
        assert_eq!(e.name, "z1");
    }
}
