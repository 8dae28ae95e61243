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

/// What a file costs the budget besides its bytes and its name: the map's
/// node, the `Arc` and the `MemFile` (about 100 bytes on 64-bit targets).
const PER_FILE: u64 = 128;

/// Files by path relative to a catalog's `compiled/` directory, up to a
/// byte budget (each file's bytes, name and [`PER_FILE`]): past it, writers put their files on disk as before. The
/// directories the writers made are kept too, so that a name used both
/// as a file and as a directory is found ([`MemTree::file_conflicts`]):
/// on disk that is an error, and the writer then puts the target on disk
/// to meet the same one.
#[derive(Debug)]
pub struct MemTree {
    inner: Mutex<Inner>,
    used: AtomicU64,
    budget: u64,
}

#[derive(Debug, Default)]
struct Inner {
    files: BTreeMap<PathBuf, Arc<MemFile>>,
    dirs: std::collections::BTreeSet<PathBuf>,
}

impl Inner {
    /// Whether a file or directory lies strictly below `rel`. Paths order
    /// by component, so what lies below `rel` comes right after it.
    fn anything_below(&self, rel: &Path) -> bool {
        let first_below = |mut after: std::collections::btree_set::Range<'_, PathBuf>| {
            after
                .find(|p| p.as_path() != rel)
                .is_some_and(|p| p.starts_with(rel))
        };
        self.files
            .range(rel.to_path_buf()..)
            .find(|(p, _)| p.as_path() != rel)
            .is_some_and(|(p, _)| p.starts_with(rel))
            || first_below(self.dirs.range(rel.to_path_buf()..))
    }

    /// Whether a directory above `rel` is a file.
    fn file_above(&self, rel: &Path) -> bool {
        rel.ancestors()
            .skip(1)
            .any(|a| !a.as_os_str().is_empty() && self.files.contains_key(a))
    }
}

impl MemTree {
    pub fn new(budget: u64) -> MemTree {
        MemTree {
            inner: Mutex::new(Inner::default()),
            used: AtomicU64::new(0),
            budget,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A writer that panicked left the maps whole (inserts are single
        // calls): their data is still good.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether writing a file at `rel` would fail on disk given what the
    /// tree holds: a directory above it is a file, or `rel` is a
    /// directory.
    pub fn file_conflicts(&self, rel: &Path) -> bool {
        let inner = self.lock();
        inner.file_above(rel) || inner.dirs.contains(rel) || inner.anything_below(rel)
    }

    /// Whether making the directory `rel` would fail on disk: it, or a
    /// directory above it, is a file.
    pub fn dir_conflicts(&self, rel: &Path) -> bool {
        let inner = self.lock();
        inner.files.contains_key(rel) || inner.file_above(rel)
    }

    /// Records the directory `rel` (a compile entry's output directory,
    /// made even when the entry writes nothing into it).
    pub fn add_dir(&self, rel: &Path) {
        self.lock().dirs.insert(rel.to_path_buf());
    }

    /// Keeps `bytes` at `rel` unless that takes the tree past its budget;
    /// `false` then, and for every later call (the count only grows), so
    /// a path never moves back from disk into memory.
    pub fn put(&self, rel: &Path, bytes: &[u8]) -> bool {
        // The name and the entry cost memory too: 20,000 empty files under
        // 3,000-byte names were 60 MB the budget never saw (a budget of
        // one byte kept them all).
        let n = (bytes.len() + rel.as_os_str().len()) as u64 + PER_FILE;
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
        self.lock().files.insert(
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
        let mut inner = self.lock();
        match inner.files.get_mut(rel) {
            Some(f) => {
                Arc::make_mut(f).mode = Some(mode);
                true
            }
            None => false,
        }
    }

    /// Forgets the file at `rel` (it was written on disk instead).
    pub fn remove(&self, rel: &Path) {
        self.lock().files.remove(rel);
    }

    /// Every file, sorted by path.
    pub fn files(&self) -> Vec<(PathBuf, Arc<MemFile>)> {
        self.lock()
            .files
            .iter()
            .map(|(p, f)| (p.clone(), f.clone()))
            .collect()
    }

    /// The files below the directory `dir` (relative, as the keys are).
    pub fn files_below(&self, dir: &Path) -> Vec<(PathBuf, Arc<MemFile>)> {
        self.lock()
            .files
            .range(dir.to_path_buf()..)
            .take_while(|(p, _)| p.starts_with(dir))
            .map(|(p, f)| (p.clone(), f.clone()))
            .collect()
    }

    /// Writes the files and directories below `dir` under `root` (a
    /// catalog's `compiled/`) and forgets them: for readers that need them
    /// on disk, and for a writer that must meet what the disk says.
    pub fn write_out(&self, root: &Path, dir: &Path) -> std::io::Result<()> {
        let files = self.files_below(dir);
        let dirs: Vec<PathBuf> = self
            .lock()
            .dirs
            .range(dir.to_path_buf()..)
            .take_while(|p| p.starts_with(dir))
            .cloned()
            .collect();
        for d in &dirs {
            std::fs::create_dir_all(root.join(d))?;
        }
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
        let mut inner = self.lock();
        for (rel, _) in files {
            inner.files.remove(&rel);
        }
        for d in dirs {
            inner.dirs.remove(&d);
        }
        Ok(())
    }
}

/// Whether the file system at `dir` keeps apart names that differ only in
/// case or in Unicode normalisation (`A`/`a`, precomposed/decomposed `é`),
/// as the tree does: on one that folds them (macOS, Windows) two outputs
/// so named are one file on disk and two in memory, so a review there
/// writes its files. Probed with two files; `false` when it cannot tell.
pub fn keeps_names_apart(dir: &Path) -> bool {
    let probe = |a: &str, b: &str| -> bool {
        let (pa, pb) = (dir.join(a), dir.join(b));
        let apart = std::fs::write(&pa, b"").is_ok() && !pb.exists();
        let _ = std::fs::remove_file(&pa);
        apart
    };
    probe(".strata-case-A", ".strata-case-a") && probe(".strata-nfc-\u{e9}", ".strata-nfc-e\u{301}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_budget_every_file_goes_to_disk() {
        let t = MemTree::new(PER_FILE + 3 + 10);
        assert!(t.put(Path::new("a/x"), b"12345"));
        assert!(!t.put(Path::new("a/y"), b"123456"));
        // Small enough, but after a refusal: a later write of a path that
        // went to disk must not come back into memory.
        assert!(!t.put(Path::new("a/z"), b"1"));
        let names: Vec<PathBuf> = t.files().into_iter().map(|(p, _)| p).collect();
        assert_eq!(names, vec![PathBuf::from("a/x")]);
    }

    #[test]
    fn names_and_entries_count_toward_the_budget() {
        // Empty files under long names: the budget bounds them too.
        let t = MemTree::new(10_000);
        let name = "n".repeat(200);
        let kept = (0..1_000)
            .take_while(|i| t.put(&Path::new(&name).join(i.to_string()), b""))
            .count();
        assert!(kept > 0 && kept < 50, "{kept} files kept");
        assert!(!t.put(Path::new("x"), b""));
        // A file that fits with its name and entry, and one that does not.
        let t = MemTree::new(PER_FILE + 10);
        assert!(t.put(Path::new("ab"), b"12345678"));
        let t = MemTree::new(PER_FILE + 10);
        assert!(!t.put(Path::new("abc"), b"12345678"));
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

    /// What would fail on disk: a file where a directory is (or was made),
    /// a directory or file below a file.
    #[test]
    fn a_name_that_is_both_a_file_and_a_directory_conflicts() {
        let t = MemTree::new(1 << 20);
        assert!(t.put(Path::new("t/o/a"), b"x"));
        t.add_dir(Path::new("t/d"));
        assert!(t.file_conflicts(Path::new("t/o/a/b")));
        assert!(t.file_conflicts(Path::new("t/o/a/b/c")));
        assert!(t.file_conflicts(Path::new("t/o")));
        assert!(t.file_conflicts(Path::new("t/d")));
        assert!(t.file_conflicts(Path::new("t")));
        assert!(!t.file_conflicts(Path::new("t/o/a")), "an overwrite");
        assert!(!t.file_conflicts(Path::new("t/o/ab")));
        assert!(!t.file_conflicts(Path::new("t/d/x")));
        assert!(!t.file_conflicts(Path::new("t/c")));
        assert!(t.dir_conflicts(Path::new("t/o/a")));
        assert!(t.dir_conflicts(Path::new("t/o/a/s")));
        assert!(!t.dir_conflicts(Path::new("t/o")));
        assert!(!t.dir_conflicts(Path::new("t/d")));
        // The directory made with nothing in it is written out too.
        let d = tempfile::tempdir().unwrap();
        t.write_out(d.path(), Path::new("t")).unwrap();
        assert!(d.path().join("t/d").is_dir());
        assert!(d.path().join("t/o/a").is_file());
        assert!(!t.file_conflicts(Path::new("t/d")));
    }

    #[test]
    fn this_file_system_keeps_names_apart() {
        // Linux file systems compare bytes (the CI and this project's
        // machines); the probe leaves nothing behind.
        let d = tempfile::tempdir().unwrap();
        if cfg!(target_os = "linux") {
            assert!(keeps_names_apart(d.path()));
        }
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
        assert!(!keeps_names_apart(&d.path().join("missing")));
    }
}
