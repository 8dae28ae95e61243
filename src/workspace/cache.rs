//! `strata compile --cache DIR`: each target's compiled directory kept
//! under its fingerprint, so a compile only compiles the targets whose
//! fingerprint is not in the cache. Cached files are hard-linked into the
//! new catalog (copied where links are not possible): bytes that did not
//! change are not written again. The catalog is still built beside the old
//! one and swapped in at the end, so a failure leaves the previous catalog
//! as it was, and files that went away are gone.
//!
//! Not cached (always compiled): targets without a fingerprint (see
//! [`super::fingerprint`]), targets sharing their output directory with
//! another target, and every target of a run that had
//! `continue_on_compile_error` warnings.

use super::fingerprint::Fingerprinter;
use super::{Rendered, Workspace, WorkspaceError};
use crate::compile::{self, CompileReport};
use std::collections::BTreeMap;
use std::path::Path;

/// What a cached compile did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct CacheStats {
    /// Targets taken from the cache.
    pub hits: usize,
    /// Targets compiled (and stored when they could be).
    pub compiled: usize,
    /// Of those, targets that cannot be cached (no fingerprint or a shared
    /// output directory).
    pub uncacheable: usize,
}

fn io_err(path: &Path, e: std::io::Error) -> WorkspaceError {
    WorkspaceError::Config {
        message: format!("{}: {e}", path.display()),
        hint: Some("check that the --cache directory is writable, or remove it".into()),
    }
}

/// Recreates the tree `from` at `to` with hard links (copies across file
/// systems). Anything but regular files and directories is refused.
fn link_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    let mut entries: Vec<_> = std::fs::read_dir(from)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let ft = e.file_type()?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if ft.is_dir() {
            link_tree(&src, &dst)?;
        } else if ft.is_file() {
            if std::fs::hard_link(&src, &dst).is_err() {
                std::fs::copy(&src, &dst)?;
            }
        } else {
            return Err(std::io::Error::other(format!(
                "{} is not a regular file or directory",
                src.display()
            )));
        }
    }
    Ok(())
}

impl Workspace {
    /// [`Workspace::compile_catalog`] with a cache directory.
    pub fn compile_catalog_cached(
        &self,
        rendered: &Rendered,
        selected: &[String],
        cache: &Path,
        on_done: &(dyn Fn(&str) + Sync),
    ) -> Result<(CompileReport, CacheStats), WorkspaceError> {
        std::fs::create_dir_all(cache).map_err(|e| io_err(cache, e))?;
        let plans = &rendered.prepared.plans;
        let mut per_dir: BTreeMap<&str, usize> = BTreeMap::new();
        for p in plans.values() {
            *per_dir.entry(p.dir.as_str()).or_default() += 1;
        }
        let mut fp = Fingerprinter::new(self, rendered);
        let temp = compile::temp_root(&self.output_path)?;
        let new_root = temp.path().join("compiled");
        std::fs::create_dir_all(&new_root).map_err(|e| io_err(&new_root, e))?;
        let mut stats = CacheStats::default();
        let mut report = CompileReport::default();
        let mut to_compile = Vec::new();
        let mut keys: BTreeMap<String, String> = BTreeMap::new();
        for name in selected {
            let Some(plan) = plans.get(name) else {
                continue;
            };
            let key = match fp.target(name) {
                Ok(k) if per_dir.get(plan.dir.as_str()) == Some(&1) && !plan.dir.is_empty() => k,
                _ => {
                    stats.uncacheable += 1;
                    to_compile.push(name.clone());
                    continue;
                }
            };
            let hit = cache.join(&key);
            if hit.is_dir() {
                let dest = new_root.join(&plan.dir);
                link_tree(&hit, &dest).map_err(|e| io_err(&hit, e))?;
                report.targets.push((name.clone(), plan.dir.clone()));
                stats.hits += 1;
                on_done(name);
            } else {
                keys.insert(name.clone(), key);
                to_compile.push(name.clone());
            }
        }
        let compiled = self.compile_into(rendered, &to_compile, temp.path(), on_done)?;
        stats.compiled = to_compile.len();
        if compiled.warnings.is_empty() {
            for (name, dir) in &compiled.targets {
                let Some(key) = keys.get(name) else {
                    continue;
                };
                let partial = cache.join(format!(".partial-{key}"));
                let _ = std::fs::remove_dir_all(&partial);
                // A target that cannot be stored is simply compiled again
                // next time.
                if link_tree(&new_root.join(dir), &partial).is_ok() {
                    if std::fs::rename(&partial, cache.join(key)).is_err() {
                        let _ = std::fs::remove_dir_all(&partial);
                    }
                } else {
                    let _ = std::fs::remove_dir_all(&partial);
                }
            }
        }
        report.targets.extend(compiled.targets);
        report.targets.sort();
        report.warnings = compiled.warnings;
        let all = selected.len() == plans.len();
        compile::install(temp.path(), &self.output_path, &report, all)?;
        Ok((report, stats))
    }
}
