//! Catalog files held in memory instead of on disk: what a review compiles
//! for targets whose outputs only strata's own writers produce and nothing
//! reads back. The review diffs them and throws them away, and creating,
//! then deleting, thousands of small files cost more than compiling them
//! on a disk that discards freed blocks (see docs/incremental.md).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// One file: its bytes and, when a writer set one, its permission bits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemFile {
    pub bytes: Vec<u8>,
    pub mode: Option<u32>,
}

impl MemFile {
    /// Executable, as git records a mode (the one bit it keeps).
    pub fn executable(&self) -> bool {
        self.mode.is_some_and(|m| m & 0o111 != 0)
    }
}

/// Files by path relative to a catalog's `compiled/` directory, up to a
/// byte budget: past it, writers put their files on disk as before.
#[derive(Debug)]
pub struct MemTree {
    files: Mutex<BTreeMap<PathBuf, Arc<MemFile>>>,
    used: AtomicU64,
    budget: u64,
}

impl MemTree {
    pub fn new(budget: u64) -> MemTree {
        MemTree {
            files: Mutex::new(BTreeMap::new()),
            used: AtomicU64::new(0),
            budget,
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<PathBuf, Arc<MemFile>>> {
        // A writer that panicked left the map whole (inserts are single
        // calls): its data is still good.
        self.files.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps `bytes` at `rel` unless that takes the tree past its budget;
    /// `false` then, and for every later call (the count only grows), so
    /// a path never moves back from disk into memory.
    pub fn put(&self, rel: &Path, bytes: &[u8]) -> bool {
        let n = bytes.len() as u64;
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let next = used.saturating_add(n);
            if next > self.budget {
                // Full for good: every later call fails too.
                self.used.store(u64::MAX, Ordering::Relaxed);
                return false;
            }
            match self
                .used
                .compare_exchange_weak(used, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(now) => used = now,
            }
        }
        self.lock().insert(
            rel.to_path_buf(),
            Arc::new(MemFile {
                bytes: bytes.to_vec(),
                mode: None,
            }),
        );
        true
    }

    /// Sets the mode of the file at `rel`; `false` when the tree has none.
    pub fn set_mode(&self, rel: &Path, mode: u32) -> bool {
        let mut files = self.lock();
        match files.get_mut(rel) {
            Some(f) => {
                Arc::make_mut(f).mode = Some(mode);
                true
            }
            None => false,
        }
    }

    /// Forgets the file at `rel` (it was written on disk instead).
    pub fn remove(&self, rel: &Path) {
        self.lock().remove(rel);
    }

    /// Every file, sorted by path.
    pub fn files(&self) -> Vec<(PathBuf, Arc<MemFile>)> {
        self.lock()
            .iter()
            .map(|(p, f)| (p.clone(), f.clone()))
            .collect()
    }

    /// The files below the directory `dir` (relative, as the keys are).
    pub fn files_below(&self, dir: &Path) -> Vec<(PathBuf, Arc<MemFile>)> {
        self.lock()
            .range(dir.to_path_buf()..)
            .take_while(|(p, _)| p.starts_with(dir))
            .map(|(p, f)| (p.clone(), f.clone()))
            .collect()
    }

    /// Writes the files below `dir` under `root` (a catalog's `compiled/`)
    /// and forgets them: for readers that need them on disk.
    pub fn write_out(&self, root: &Path, dir: &Path) -> std::io::Result<()> {
        let files = self.files_below(dir);
        for (rel, f) in &files {
            let path = root.join(rel);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&path, &f.bytes)?;
            #[cfg(unix)]
            if let Some(m) = f.mode {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(m))?;
            }
        }
        let mut map = self.lock();
        for (rel, _) in files {
            map.remove(&rel);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_budget_every_file_goes_to_disk() {
        let t = MemTree::new(10);
        assert!(t.put(Path::new("a/x"), b"12345"));
        assert!(!t.put(Path::new("a/y"), b"123456"));
        // Small enough, but after a refusal: a later write of a path that
        // went to disk must not come back into memory.
        assert!(!t.put(Path::new("a/z"), b"1"));
        let names: Vec<PathBuf> = t.files().into_iter().map(|(p, _)| p).collect();
        assert_eq!(names, vec![PathBuf::from("a/x")]);
    }

    #[test]
    fn files_below_a_directory_and_writing_them_out() {
        let t = MemTree::new(1 << 20);
        for p in ["a/x.yml", "a/s/y.yml", "ab/z.yml", "b/w.yml"] {
            assert!(t.put(Path::new(p), p.as_bytes()));
        }
        assert!(t.set_mode(Path::new("a/s/y.yml"), 0o755));
        assert!(!t.set_mode(Path::new("a/none"), 0o755));
        let below: Vec<PathBuf> = t
            .files_below(Path::new("a"))
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        assert_eq!(
            below,
            vec![PathBuf::from("a/s/y.yml"), PathBuf::from("a/x.yml")]
        );
        let d = tempfile::tempdir().unwrap();
        t.write_out(d.path(), Path::new("a")).unwrap();
        assert_eq!(
            std::fs::read(d.path().join("a/s/y.yml")).unwrap(),
            b"a/s/y.yml"
        );
        assert!(!d.path().join("ab").exists());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let m = std::fs::metadata(d.path().join("a/s/y.yml")).unwrap();
            assert_eq!(m.permissions().mode() & 0o777, 0o755);
        }
        let left: Vec<PathBuf> = t.files().into_iter().map(|(p, _)| p).collect();
        assert_eq!(
            left,
            vec![PathBuf::from("ab/z.yml"), PathBuf::from("b/w.yml")]
        );
    }
}
