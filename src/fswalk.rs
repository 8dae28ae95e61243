//! The one directory walk behind the modules that read whole trees
//! (compiled catalogs, package repositories, rendered charts): every file
//! below a directory, in sorted path order, so what is built from it is
//! the same byte for byte on every machine.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

/// How often one walk may enter the same directory. Only symlinks make a
/// walk enter a directory twice; links that fan out (`a` and `b` ->
/// `../next` on each level of a chain) give 2^n paths without any loop, so
/// 24 levels of them ran every walker for hours and `copy` filled the disk.
pub const MAX_DIR_VISITS: u32 = 1_000;

/// How deep a walk goes: each level costs every later path operation below
/// it (a class directory 2,000 levels deep took a compile past 90 s;
/// re-probe 12), and a review checks out no deeper tree.
pub const MAX_WALK_DEPTH: usize = 256;

/// How many directory levels one walk may go through in all (each
/// directory counts its depth; `$STRATA_MAX_WALK_LEVELS`): every level
/// costs each path operation below it, so forty branches just under
/// [`MAX_WALK_DEPTH`] (1.2 million levels, from 18 KB of git objects) took
/// a review 24 s, and 200 past 90 s (re-probe 13). An inventory of 20,000
/// class directories 8 levels deep is 160,000.
fn max_walk_levels() -> u64 {
    static MAX: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *MAX.get_or_init(|| crate::limits::get("STRATA_MAX_WALK_LEVELS", 1_000_000))
}

/// How many directory levels all the walks of one run may go through
/// together (`$STRATA_MAX_RUN_WALK_LEVELS`, 20 times one walk's budget): the
/// walk budget above is per walk, and every target walks its own inputs,
/// so 200 targets naming one Jinja2 directory of forty branches 238 levels
/// deep walked it 200 times, each to the budget, and kept a review busy
/// for 204 s (probe 38, walk-budget-per-target). The targets now share one
/// budget with the inventory, catalog and fingerprint walks.
fn max_run_walk_levels() -> u64 {
    static MAX: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *MAX.get_or_init(|| crate::limits::get("STRATA_MAX_RUN_WALK_LEVELS", 20_000_000))
}

/// Directory levels the walks of this process went through so far.
static RUN_WALK_LEVELS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// `std::fs::canonicalize`. Resolving a path reads each of its prefixes
/// (realpath reads every level as a possible link), so a walk that
/// resolved each directory from the root cost every level each level above
/// it: the walks resolve their root and symlinks only (see
/// [`real_entry`]), and tests count what they resolve.
pub fn resolve(path: &Path) -> std::io::Result<PathBuf> {
    #[cfg(test)]
    counted::note(path);
    std::fs::canonicalize(path)
}

/// For tests: how many paths below a directory [`resolve`] resolved while
/// a closure ran (on any thread: a compile's entries run on a pool).
#[cfg(test)]
pub(crate) mod counted {
    use std::path::{Path, PathBuf};
    use std::sync::Mutex;

    static WATCHED: Mutex<Vec<(PathBuf, u64)>> = Mutex::new(Vec::new());

    pub(super) fn note(path: &Path) {
        let path = std::env::current_dir().unwrap_or_default().join(path);
        let mut w = WATCHED.lock().unwrap_or_else(|e| e.into_inner());
        for (dir, n) in w.iter_mut() {
            if path.starts_with(dir) {
                *n += 1;
            }
        }
    }

    /// Runs `f`, and says how many paths below `dir` it resolved.
    pub(crate) fn resolutions_below(dir: &Path, f: impl FnOnce()) -> u64 {
        let lock = || WATCHED.lock().unwrap_or_else(|e| e.into_inner());
        lock().push((dir.to_path_buf(), 0));
        f();
        let mut w = lock();
        let at = w.iter().position(|(d, _)| d == dir).expect("watched");
        w.remove(at).1
    }
}

/// Where the directory entry `path` really is, given where its directory
/// really is (`dir_real`) and whether the entry is a symlink (its own type,
/// not its target's): an entry that is no link is its directory's real
/// path joined with its name (an entry is never `.` or `..`); a link is
/// resolved.
pub fn real_entry(dir_real: &Path, path: &Path, link: bool) -> std::io::Result<PathBuf> {
    match path.file_name() {
        Some(name) if !link => Ok(dir_real.join(name)),
        _ => resolve(path),
    }
}

/// Why a walk does not enter a directory.
#[derive(Debug, PartialEq)]
pub enum Refusal {
    /// It is being walked already (a link back up the tree).
    Loop,
    /// It was entered [`MAX_DIR_VISITS`] times already.
    FanOut,
    /// It is [`MAX_WALK_DEPTH`] levels below the walk's start.
    TooDeep,
    /// The walk went through [`max_walk_levels`] directory levels already.
    TooMany,
    /// The run's walks together went through [`max_run_walk_levels`].
    TooManyInRun,
}

impl Refusal {
    /// Says why, after the path; `what` is what the walk does (`read`,
    /// `copied`).
    pub fn message(&self, what: &str) -> String {
        match self {
            Refusal::Loop => format!(
                "leads back to a directory being {what} (a symlink loop)"
            ),
            Refusal::FanOut => format!(
                "reached through symlinks more than {MAX_DIR_VISITS} times (links that fan out, such as `a` and `b` -> `../next` on every level)"
            ),
            Refusal::TooDeep => format!(
                "is more than {MAX_WALK_DEPTH} directory levels deep: nest directories less deeply"
            ),
            Refusal::TooMany => format!(
                "is past {} directory levels walked in all, each directory counting its depth (STRATA_MAX_WALK_LEVELS): nest fewer directories less deeply",
                max_walk_levels()
            ),
            Refusal::TooManyInRun => format!(
                "is past {} directory levels walked by this run in all, every target's inputs, the inventory and the catalogs together, each directory counting its depth (STRATA_MAX_RUN_WALK_LEVELS): name deep directories from fewer targets, or nest them less deeply",
                max_run_walk_levels()
            ),
        }
    }
}

/// The directories a walk is in and how often it entered each, by real
/// (canonical) path. Every directory walker keeps one, so no tree of links
/// makes a walk loop or branch without bound.
#[derive(Debug)]
pub struct Visits {
    ancestors: Vec<PathBuf>,
    // By bytes: `Path`'s equality and hash parse components (a loop
    // check of every ancestor cost the depth squared per directory).
    counts: HashMap<std::ffi::OsString, u32>,
    /// Directory levels gone through so far, and the most allowed.
    levels: u64,
    max_levels: u64,
    /// The levels of every walk of the run, and the most allowed.
    run_levels: &'static std::sync::atomic::AtomicU64,
    max_run_levels: u64,
}

impl Default for Visits {
    fn default() -> Self {
        Visits {
            ancestors: Vec::new(),
            counts: HashMap::new(),
            levels: 0,
            max_levels: max_walk_levels(),
            run_levels: &RUN_WALK_LEVELS,
            max_run_levels: max_run_walk_levels(),
        }
    }
}

impl Visits {
    /// Enters directory `real`, unless it is being walked or was entered
    /// too often. [`Visits::leave`] it after walking it.
    pub fn enter(&mut self, real: PathBuf) -> Result<(), Refusal> {
        // Real paths are canonical: the same directory is the same bytes.
        if self
            .ancestors
            .iter()
            .any(|a| a.as_os_str() == real.as_os_str())
        {
            return Err(Refusal::Loop);
        }
        if self.ancestors.len() >= MAX_WALK_DEPTH {
            return Err(Refusal::TooDeep);
        }
        let depth = self.ancestors.len() as u64 + 1;
        self.levels += depth;
        if self.levels > self.max_levels {
            return Err(Refusal::TooMany);
        }
        let run = self
            .run_levels
            .fetch_add(depth, std::sync::atomic::Ordering::Relaxed)
            + depth;
        if run > self.max_run_levels {
            return Err(Refusal::TooManyInRun);
        }
        let n = self
            .counts
            .entry(real.as_os_str().to_os_string())
            .or_insert(0);
        if *n >= MAX_DIR_VISITS {
            return Err(Refusal::FanOut);
        }
        *n += 1;
        self.ancestors.push(real);
        Ok(())
    }

    pub fn leave(&mut self) {
        self.ancestors.pop();
    }
}

/// A directory that could not be read, and why.
#[derive(Debug)]
pub struct WalkError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

impl std::fmt::Display for WalkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot read {}: {}", self.path.display(), self.source)
    }
}

/// Its message already holds the cause's.
impl std::error::Error for WalkError {}

/// Every regular file below `dir`, sorted by path. Symlinks are followed
/// only while they stay inside `dir` (a link to `/etc/shadow`, `/dev/zero`
/// or `../..` is left out) and never into a directory being walked (no
/// loops); FIFOs, devices and sockets are left out. A directory for which
/// `descend` says false is left out, with all it holds.
pub fn files_below(dir: &Path, descend: &dyn Fn(&Path) -> bool) -> Result<Vec<PathBuf>, WalkError> {
    let mut out = Vec::new();
    let root = resolve(dir).map_err(|source| WalkError {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut visits = Visits::default();
    // The root itself is entered once and cannot fail.
    let _ = visits.enter(root.clone());
    walk(dir, &root, &root, &mut visits, descend, &mut out)?;
    Ok(out)
}

/// Every file below `dir` with its path relative to `dir` (`/`-separated),
/// in sorted order, following symlinks wherever they lead (the caller
/// confines what it reads), each real directory once on a path and at most
/// [`MAX_DIR_VISITS`] times in all. A FIFO, socket or device is an error: a
/// FIFO blocks a read forever and `/dev/zero` never ends. For template
/// inputs (`ytt`, `strata template -f DIR`), which read every file.
pub fn files_following(dir: &Path) -> Result<Vec<(String, PathBuf)>, WalkError> {
    /// `real` is where `dir` really is: its entries are resolved from it.
    fn walk(
        dir: &Path,
        real: PathBuf,
        base: &Path,
        visits: &mut Visits,
        out: &mut Vec<(String, PathBuf)>,
    ) -> Result<(), WalkError> {
        let fail = |path: &Path, source| WalkError {
            path: path.to_path_buf(),
            source,
        };
        visits
            .enter(real.clone())
            .map_err(|why| fail(dir, std::io::Error::other(why.message("read"))))?;
        let mut entries = Vec::new();
        for e in std::fs::read_dir(dir).map_err(|e| fail(dir, e))? {
            let e = e.map_err(|e| fail(dir, e))?;
            let link = e.file_type().is_ok_and(|t| t.is_symlink());
            entries.push((e.path(), link));
        }
        entries.sort();
        for (p, link) in entries {
            let meta = std::fs::metadata(&p).map_err(|e| fail(&p, e))?;
            if meta.is_dir() {
                let inner = real_entry(&real, &p, link).map_err(|e| fail(&p, e))?;
                walk(&p, inner, base, visits, out)?;
            } else if meta.is_file() {
                let rel = p
                    .strip_prefix(base)
                    .unwrap_or(&p)
                    .to_string_lossy()
                    .replace('\\', "/");
                out.push((rel, p));
            } else {
                return Err(fail(
                    &p,
                    std::io::Error::other(
                        "not a regular file (a FIFO, socket or device): only files and directories are read",
                    ),
                ));
            }
        }
        visits.leave();
        Ok(())
    }
    let real = resolve(dir).map_err(|source| WalkError {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut out = Vec::new();
    walk(dir, real, dir, &mut Visits::default(), &mut out)?;
    Ok(out)
}

/// Where a path really is, if that is inside `root`.
pub fn inside(path: &Path, root: &Path) -> Option<PathBuf> {
    let real = resolve(path).ok()?;
    real.starts_with(root).then_some(real)
}

/// `real` is where `dir` really is: entries that are no symlinks are
/// resolved from it.
fn walk(
    dir: &Path,
    real: &Path,
    root: &Path,
    visits: &mut Visits,
    descend: &dyn Fn(&Path) -> bool,
    out: &mut Vec<PathBuf>,
) -> Result<(), WalkError> {
    let err = |source| WalkError {
        path: dir.to_path_buf(),
        source,
    };
    let mut entries = Vec::new();
    for e in std::fs::read_dir(dir).map_err(err)? {
        entries.push(e.map_err(err)?.path());
    }
    entries.sort();
    for p in entries {
        let Ok(meta) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        let (meta, inner) = if meta.file_type().is_symlink() {
            // Followed only to somewhere inside the tree.
            let Some(target) = inside(&p, root) else {
                continue;
            };
            match std::fs::metadata(&p) {
                Ok(m) => (m, target),
                Err(_) => continue,
            }
        } else {
            let inner = real_entry(real, &p, false).map_err(|source| WalkError {
                path: p.clone(),
                source,
            })?;
            (meta, inner)
        };
        if meta.is_dir() {
            if !descend(&p) {
                continue;
            }
            match visits.enter(inner.clone()) {
                Ok(()) => {}
                // A link back up adds nothing that is not read already.
                Err(Refusal::Loop) => continue,
                Err(why) => {
                    return Err(WalkError {
                        path: p,
                        source: std::io::Error::other(why.message("read")),
                    })
                }
            }
            let r = walk(&p, &inner, root, visits, descend, out);
            visits.leave();
            r?;
        } else if meta.is_file() {
            out.push(p);
        }
    }
    Ok(())
}

/// For [`files_below`]: every directory but `.git`.
/// The first symbolic link on the way from `base` (excluded) down to `path`
/// (included), among the parts that exist: a write below `base` would go
/// through it, wherever it points.
pub fn first_link_below(base: &Path, path: &Path) -> Option<PathBuf> {
    let rest = path.strip_prefix(base).ok()?;
    let mut at = base.to_path_buf();
    for c in rest.components() {
        at.push(c);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => return Some(at),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

pub fn not_git(dir: &Path) -> bool {
    dir.file_name().is_none_or(|n| n != ".git")
}

/// `os.path.normpath` without touching the file system.
pub fn normpath(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            // A leading `..` stays (popping it made `../../x` read as `x`,
            // inside the tree: re-probe 12); `/..` is `/`.
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(".."),
            },
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// `.yml` or `.yaml`.
pub fn is_yaml(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yml" | "yaml")
    )
}

/// The lock file inside a [`locked_temp_dir`].
const LOCK_FILE: &str = ".lock";

/// A directory `<parent>/<prefix>XXXX`, removed when dropped, and locked
/// while it exists; left-over ones (of killed processes, or of one the
/// memory budget ended, which skips destructors) under `parent` are removed
/// first. Reviews keep their scratch trees in such directories too.
pub fn locked_temp_dir(parent: &Path, prefix: &str) -> std::io::Result<LockedTempDir> {
    remove_stale_locked_dirs(parent, prefix);
    let dir = private(&mut tempfile::Builder::new())
        .prefix(prefix)
        .tempdir_in(parent)?;
    let lock = std::fs::File::create(dir.path().join(LOCK_FILE))?;
    lock.lock()?;
    Ok(LockedTempDir { dir, _lock: lock })
}

/// A scratch directory in the system's temporary directory, readable by
/// its owner only.
pub fn private_temp_dir(prefix: &str) -> std::io::Result<tempfile::TempDir> {
    private_temp_dir_in(&std::env::temp_dir(), prefix)
}

/// [`private_temp_dir`] in `parent`.
pub fn private_temp_dir_in(parent: &Path, prefix: &str) -> std::io::Result<tempfile::TempDir> {
    private(&mut tempfile::Builder::new())
        .prefix(prefix)
        .tempdir_in(parent)
}

/// Scratch directories are the user's alone (0700, as `mkdtemp(3)` and
/// Python's `tempfile.mkdtemp` make them; tempfile leaves the mode to the
/// umask, 0755 under the usual 022): they hold checked-out revisions with
/// their secrets, helm values and compiled catalogs, which other users of
/// a shared runner could read (re-probe 16).
fn private<'a, 'b>(b: &'a mut tempfile::Builder<'b, 'b>) -> &'a mut tempfile::Builder<'b, 'b> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        b.permissions(std::fs::Permissions::from_mode(0o700));
    }
    b
}

/// A [`locked_temp_dir`]: the lock's descriptor is closed with the
/// directory (a helm input makes one per entry: kept to the process's end,
/// a large catalog ran out of descriptors).
pub struct LockedTempDir {
    // Dropped first: the directory goes while the lock is still held.
    dir: tempfile::TempDir,
    _lock: std::fs::File,
}

impl LockedTempDir {
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Removes the `<prefix>*` directories under `parent` that no running
/// process holds. Best effort: what cannot be removed stays.
fn remove_stale_locked_dirs(parent: &Path, prefix: &str) -> usize {
    let Ok(rd) = std::fs::read_dir(parent) else {
        return 0;
    };
    let mut removed = 0;
    for e in rd.filter_map(Result::ok) {
        let name = e.file_name();
        if !name.to_string_lossy().starts_with(prefix) || !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        // A compile starting right now may not hold its lock yet: leave
        // directories younger than a minute alone.
        let young = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_none_or(|age| age.as_secs() < 60);
        let held = young
            || match open_lock(&e.path().join(LOCK_FILE)) {
                // The lock taken here is dropped with `f`.
                Some(Ok(f)) => f.try_lock().is_err(),
                Some(Err(_)) => false,
                // Not a lock strata made (a link or a FIFO a pull request
                // committed as `.strata-compile-x/.lock`): left alone.
                None => true,
            };
        if !held && std::fs::remove_dir_all(e.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Opens a left-over directory's lock file without following a link or
/// waiting on a FIFO (the directory may be a pull request's, with
/// `.lock -> /dev/stdin` or a FIFO in it; re-probe 16). None when it is
/// there but not a regular file.
fn open_lock(path: &Path) -> Option<std::io::Result<std::fs::File>> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    match opts.open(path) {
        Ok(f) if f.metadata().is_ok_and(|m| m.is_file()) => Some(Ok(f)),
        Ok(_) => None,
        // There (a link, or unreadable): not ours to judge.
        Err(_) if std::fs::symlink_metadata(path).is_ok() => None,
        Err(e) => Some(Err(e)),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A chain of `depth` directories below `root` ending in `x.txt`, and
    /// its deepest directory.
    pub(crate) fn chain(root: &Path, depth: usize) -> PathBuf {
        let mut at = root.to_path_buf();
        for _ in 0..depth {
            at.push("d");
        }
        std::fs::create_dir_all(&at).unwrap();
        std::fs::write(at.join("x.txt"), "x\n").unwrap();
        at
    }

    /// Fix9 (re-probe 13/14's deep-walk cost in the other walks): a walk
    /// resolves its root and its symlinks, not each directory from the root
    /// (which cost each level every level above it).
    #[cfg(unix)]
    #[test]
    fn walks_resolve_only_their_root_and_links() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("t");
        let deep = chain(&root, 40);
        std::os::unix::fs::symlink(&deep, root.join("link")).unwrap();
        let mut below = Vec::new();
        let n = counted::resolutions_below(tmp.path(), || {
            below = files_below(&root, &not_git).unwrap();
        });
        assert_eq!(below.len(), 2, "{below:?}");
        assert!(below[0].ends_with("d/d/x.txt") && below[1].ends_with("link/x.txt"));
        assert!(n <= 3, "files_below resolved {n} paths");
        let mut following = Vec::new();
        let n = counted::resolutions_below(tmp.path(), || {
            following = files_following(&root).unwrap();
        });
        assert_eq!(following.len(), 2, "{following:?}");
        assert_eq!(following[1].0, "link/x.txt");
        assert!(n <= 3, "files_following resolved {n} paths");
    }

    /// Re-probe 14 (deep-walk-cost-many-branches-under-bound): each
    /// directory counts its depth against the walk's budget; a loop check
    /// compares bytes.
    #[test]
    fn a_walk_counts_the_levels_it_goes_through() {
        let mut v = Visits {
            max_levels: 10,
            ..Visits::default()
        };
        let mut at = PathBuf::from("/r");
        v.enter(at.clone()).unwrap();
        for _ in 0..3 {
            at.push("d");
            v.enter(at.clone()).unwrap();
        }
        // 1 + 2 + 3 + 4 levels so far: the next, 5 deep, is past 10.
        assert_eq!(v.enter(at.join("d")), Err(Refusal::TooMany));
        assert_eq!(v.enter(PathBuf::from("/r/d")), Err(Refusal::Loop));
        assert!(Refusal::TooMany
            .message("read")
            .contains("STRATA_MAX_WALK_LEVELS"));
    }

    /// Probe 38 (walk-budget-per-target): the walks of one run share a
    /// budget, so many targets walking one deep directory stop together.
    #[test]
    fn the_walks_of_a_run_share_a_budget() {
        let run: &'static std::sync::atomic::AtomicU64 =
            Box::leak(Box::new(std::sync::atomic::AtomicU64::new(0)));
        let walk = || Visits {
            run_levels: run,
            max_run_levels: 25,
            ..Visits::default()
        };
        // Each walk: 1 + 2 + 3 + 4 = 10 levels, well inside its own budget.
        let chain = |v: &mut Visits| -> Result<(), Refusal> {
            let mut at = PathBuf::from("/r");
            v.enter(at.clone())?;
            for _ in 0..3 {
                at.push("d");
                v.enter(at.clone())?;
            }
            Ok(())
        };
        chain(&mut walk()).unwrap();
        chain(&mut walk()).unwrap();
        assert_eq!(chain(&mut walk()), Err(Refusal::TooManyInRun));
        assert!(Refusal::TooManyInRun
            .message("read")
            .contains("STRATA_MAX_RUN_WALK_LEVELS"));
    }

    fn aged(path: &Path) {
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
        std::fs::File::open(path)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }

    /// Re-probe 16 (scratch-dirs-world-readable-helm-values): scratch
    /// directories were 0755 under the usual umask.
    #[cfg(unix)]
    #[test]
    fn scratch_directories_are_the_owners_alone() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let locked = locked_temp_dir(tmp.path(), "strata-x-").unwrap();
        let private = private_temp_dir("strata-x-").unwrap();
        for dir in [locked.path(), private.path()] {
            let mode = std::fs::metadata(dir).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "{}", dir.display());
        }
    }

    /// Re-probe 16 (stale-temp-sweep-follows-committed-lock-link): the
    /// sweep opened a left-over directory's `.lock` through a link (to a
    /// file outside, or a FIFO: the run hung). Such directories are left
    /// alone; a plain left-over one is removed.
    #[cfg(unix)]
    #[test]
    fn the_sweep_follows_no_link_and_waits_on_no_fifo() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("fifo");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let outside = tmp.path().join("outside");
        std::fs::write(&outside, "x").unwrap();
        let parent = tmp.path().join("out");
        for (name, lock) in [
            ("linked", Some(&outside)),
            ("fifo", Some(&fifo)),
            ("plain", None),
        ] {
            let dir = parent.join(format!(".strata-compile-{name}"));
            std::fs::create_dir_all(&dir).unwrap();
            match lock {
                Some(to) => std::os::unix::fs::symlink(to, dir.join(LOCK_FILE)).unwrap(),
                None => std::fs::write(dir.join(LOCK_FILE), "").unwrap(),
            }
            aged(&dir);
        }
        let fifo_dir = parent.join(".strata-compile-direct");
        std::fs::create_dir_all(&fifo_dir).unwrap();
        assert!(std::process::Command::new("mkfifo")
            .arg(fifo_dir.join(LOCK_FILE))
            .status()
            .unwrap()
            .success());
        aged(&fifo_dir);
        // Would block for ever on a FIFO: run where a hang fails the test.
        let (tx, rx) = std::sync::mpsc::channel();
        let p = parent.clone();
        std::thread::spawn(move || tx.send(remove_stale_locked_dirs(&p, ".strata-compile-")));
        let removed = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the sweep returns");
        assert_eq!(removed, 1);
        assert!(!parent.join(".strata-compile-plain").exists());
        for name in ["linked", "fifo", "direct"] {
            assert!(
                parent.join(format!(".strata-compile-{name}")).exists(),
                "{name}"
            );
        }
    }

    #[test]
    fn sorted_and_pruned() {
        let tmp = tempfile::tempdir().unwrap();
        for rel in [
            "b/2.yaml",
            "a/1.yml",
            "a/z/3.txt",
            ".git/HEAD",
            "skip/x.yaml",
        ] {
            let p = tmp.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        let files = files_below(tmp.path(), &|d| {
            not_git(d) && d.file_name().is_none_or(|n| n != "skip")
        })
        .unwrap();
        let rel: Vec<_> = files
            .iter()
            .map(|p| {
                p.strip_prefix(tmp.path())
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(rel, ["a/1.yml", "a/z/3.txt", "b/2.yaml"]);
        assert!(files_below(&tmp.path().join("missing"), &not_git).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_of_the_tree_loops_and_special_files_are_left_out() {
        use std::os::unix::fs::symlink;
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside.txt");
        std::fs::write(&outside, "secret").unwrap();
        let root = tmp.path().join("cat");
        std::fs::create_dir_all(root.join("t")).unwrap();
        std::fs::write(root.join("t/real.yaml"), "a: 1").unwrap();
        symlink(&outside, root.join("t/escape.txt")).unwrap();
        symlink("/dev/zero", root.join("t/zero")).unwrap();
        symlink("../..", root.join("t/up")).unwrap();
        symlink(".", root.join("t/self")).unwrap();
        symlink("real.yaml", root.join("t/inside.yaml")).unwrap();
        let fifo = root.join("t/fifo");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let files = files_below(&root, &not_git).unwrap();
        let rel: Vec<_> = files
            .iter()
            .map(|p| p.strip_prefix(&root).unwrap().to_str().unwrap().to_string())
            .collect();
        assert_eq!(rel, ["t/inside.yaml", "t/real.yaml"]);
    }

    /// `d0` .. `dN`, each `d_i` holding links `a` and `b` to `d_{i+1}`, and
    /// a file in `dN`: 2^N paths to it, and no loop.
    #[cfg(unix)]
    pub fn symlink_fan_out(dir: &Path, n: usize) {
        for i in 0..=n {
            std::fs::create_dir_all(dir.join(format!("d{i}"))).unwrap();
        }
        for i in 0..n {
            for l in ["a", "b"] {
                let to = format!("../d{}", i + 1);
                std::os::unix::fs::symlink(to, dir.join(format!("d{i}/{l}"))).unwrap();
            }
        }
        std::fs::write(dir.join(format!("d{n}/f.yml")), "x: 1\n").unwrap();
    }

    /// Re-probe of 2026-11-26: 24 levels ran every walker past 60 s.
    #[cfg(unix)]
    #[test]
    fn links_that_fan_out_are_bounded() {
        let tmp = tempfile::tempdir().unwrap();
        symlink_fan_out(tmp.path(), 40);
        let e = files_below(tmp.path(), &|_| true).unwrap_err().to_string();
        assert!(e.contains("more than 1000 times"), "{e}");
        // A few levels are read in full: every path is a file.
        let small = tempfile::tempdir().unwrap();
        symlink_fan_out(small.path(), 3);
        assert_eq!(files_below(small.path(), &|_| true).unwrap().len(), 15);
    }
}
