//! Confining what a compile reads to a few allowed directories.
//!
//! A review compiles a pull request's inventory: an input path, a jsonnet
//! import, a file-reading native or a Jinja2 include could otherwise name
//! any file on the machine (`/proc/self/environ`, `~/.git-credentials`) and
//! put it into the catalog diff shown in the PR. When a compile is confined,
//! every file it reads must lie inside one of the roots, lexically and after
//! following symlinks. The check sits deep in jrsonnet's importer and
//! minijinja's loader callbacks, so the active confinement is a per-thread
//! value set around each target's entries (an entry compiles on one thread).

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::fswalk::normpath;

/// The directories a confined compile may read below.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Confine {
    lexical: Vec<PathBuf>,
    canonical: Vec<PathBuf>,
    /// Where a path relative to the working directory (a `fileglob`
    /// pattern) points: a review compiles a revision's copy of the working
    /// directory, which the process does not run in.
    base: Option<PathBuf>,
    /// What a refusal says after "it is outside the repository" (the
    /// commands other than compile name their own way to read it).
    why: Option<String>,
    /// Files of a revision's tree that stand for a committed symlink
    /// leading out of it (written as a `(symlink to …)` text, never
    /// followed): refused as the link would be in a working tree, not read
    /// as the placeholder text (probe 44: a jsonnet input failed with a
    /// syntax error about `(symlink to`).
    links_out: Vec<PathBuf>,
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        normpath(p)
    } else {
        normpath(&std::env::current_dir().unwrap_or_default().join(p))
    }
}

/// Whether `p`, below one of `roots`, is in a `.git` directory there: the
/// working tree of a pull request's compile (the sharded workflow) holds
/// one, and its `config` the token actions/checkout persists, which an
/// `importstr '.git/config'` or a `copy` input put into the catalog (probe
/// 31, confined-compile-reads-git-dir-checkout-token). A review's revision
/// trees have none.
fn in_git_dir(roots: &[PathBuf], p: &Path) -> bool {
    roots.iter().any(|r| {
        p.strip_prefix(r)
            .is_ok_and(|rel| rel.components().any(|c| c.as_os_str() == ".git"))
    })
}

/// The path with its longest existing prefix resolved through symlinks.
fn canonical(p: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut cur = p.to_path_buf();
    loop {
        if let Ok(mut c) = crate::fswalk::resolve(&cur) {
            c.extend(rest.iter().rev());
            return c;
        }
        match (cur.file_name(), cur.parent()) {
            (Some(n), Some(parent)) => {
                rest.push(n.to_os_string());
                cur = parent.to_path_buf();
            }
            _ => return p.to_path_buf(),
        }
    }
}

impl Confine {
    /// Reads are allowed below `roots` (a revision's tree, the search paths
    /// the user gave on the command line).
    pub fn new(roots: impl IntoIterator<Item = PathBuf>) -> Confine {
        let mut c = Confine::default();
        for r in roots {
            c.add(&r);
        }
        c
    }

    /// Paths relative to the working directory resolve against `dir`.
    pub fn with_base(mut self, dir: PathBuf) -> Confine {
        self.base = Some(dir);
        self
    }

    /// A refusal ends with `why` (after "it is outside the repository, ")
    /// instead of the review's and compile's wording.
    pub fn with_why(mut self, why: String) -> Confine {
        self.why = Some(why);
        self
    }

    /// `paths` (files of a root) stand for symlinks leading outside the
    /// roots: reading them, or a path below them, is refused.
    pub fn with_links_out(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Confine {
        for p in paths {
            let lex = absolute(&p);
            let can = canonical(&lex);
            self.links_out.push(lex);
            self.links_out.push(can);
        }
        self.links_out.sort();
        self.links_out.dedup();
        self
    }

    /// Whether `path` is one of the [`Self::with_links_out`] files or
    /// below one (a path that does not exist in the tree, where the link
    /// to a directory would have led).
    pub fn below_link_out(&self, path: &Path) -> bool {
        let lex = absolute(path);
        self.links_out.iter().any(|l| lex.starts_with(l))
    }

    /// The roots, symlinks resolved.
    pub fn roots(&self) -> &[PathBuf] {
        &self.canonical
    }

    /// Allows one more root.
    pub fn add(&mut self, root: &Path) {
        let lex = absolute(root);
        let can = canonical(&lex);
        if !self.lexical.contains(&lex) {
            self.lexical.push(lex);
        }
        if !self.canonical.contains(&can) {
            self.canonical.push(can);
        }
    }

    /// Whether reading `path` is allowed: `Err` with the message to show.
    pub fn check(&self, path: &Path) -> Result<(), String> {
        self.check_with(path, canonical)
    }

    /// Whether writing `path` stays below the roots: [`Self::check`] of
    /// the path and, for a link (dangling too: the write creates its
    /// target), of where it points.
    pub fn check_write(&self, path: &Path) -> bool {
        let target = std::fs::read_link(path)
            .ok()
            .map(|t| path.parent().unwrap_or(Path::new("")).join(t));
        self.check(path).is_ok() && target.is_none_or(|t| self.check(&t).is_ok())
    }

    /// [`Self::check`] of `path` known to be really at `real` (a walk
    /// resolves a directory from its parent's real path: resolving each
    /// from the root cost each level every level above it).
    pub fn check_resolved(&self, path: &Path, real: &Path) -> Result<(), String> {
        self.check_with(path, |_| real.to_path_buf())
    }

    fn check_with(
        &self,
        path: &Path,
        resolved: impl FnOnce(&Path) -> PathBuf,
    ) -> Result<(), String> {
        let lex = absolute(path);
        let inside = |roots: &[PathBuf], p: &Path| roots.iter().any(|r| p.starts_with(r));
        let real = resolved(&lex);
        let how = if !inside(&self.lexical, &lex) && !inside(&self.canonical, &lex) {
            ""
        } else if !inside(&self.canonical, &real)
            || inside(&self.links_out, &lex)
            || inside(&self.links_out, &real)
        {
            " (through a symlink)"
        } else if in_git_dir(&self.lexical, &lex) || in_git_dir(&self.canonical, &real) {
            return Err(format!(
                "refusing to read {}: it is in the repository's `.git` directory, which holds git's own data (actions/checkout keeps the job's token in `.git/config`), not the repository's files: a pull request's compile reads only those",
                path.display()
            ));
        } else {
            return Ok(());
        };
        let why = self.why.as_deref().unwrap_or(
            "and reviews of pull requests only read files inside the repository (and the search paths given with -J on the command line); `strata compile` reads it",
        );
        Err(format!(
            "refusing to read {}{how}: it is outside the repository, {why}",
            path.display()
        ))
    }

    /// [`Self::check`] for a directory that a program reads as a whole (a
    /// helm chart, a ytt directory): the directory and every symlink below
    /// it, following links that stay inside, each real directory once.
    pub fn check_tree(&self, root: &Path) -> Result<(), String> {
        self.check(root)?;
        self.check_links_below(root, true, &|p| self.check(p))
    }

    /// Calls `link` on every symlink below `root` (following the ones
    /// that stay inside, each real directory once) and, with `git_dirs`,
    /// [`Self::check`]s a `.git` directory there: [`Self::check_tree`]'s
    /// walk, for a caller that checks links its own way (an output
    /// directory, whose dangling links are written through and whose
    /// `.git` is not read).
    pub fn check_links_below(
        &self,
        root: &Path,
        git_dirs: bool,
        link: &dyn Fn(&Path) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut seen = std::collections::HashSet::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            let Ok(real) = dir.canonicalize() else {
                continue;
            };
            if !real.is_dir() || !seen.insert(real) {
                continue;
            }
            // An unreadable directory fails the program that reads it, with
            // its own message; only escapes are this check's business.
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut names: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
            names.sort();
            for p in names {
                let Ok(meta) = p.symlink_metadata() else {
                    continue;
                };
                if meta.file_type().is_symlink() {
                    link(&p)?;
                    stack.push(p);
                } else if meta.is_dir() {
                    // A chart or ytt directory holding the checkout's
                    // `.git` (the repository's root as the input) had
                    // `.git/config` read by ytt's `data.read` or helm's
                    // `.Files.Get` (re-probe verify23,
                    // v-git-dir-read-below-a-ytt-or-helm-directory).
                    if git_dirs && p.file_name().is_some_and(|n| n == ".git") {
                        self.check(&p)?;
                    }
                    stack.push(p);
                }
            }
        }
        Ok(())
    }
}

thread_local! {
    static ACTIVE: RefCell<Option<Arc<Confine>>> = const { RefCell::new(None) };
}

/// Runs `f` with `confine` active on this thread (none: reads are free).
pub(crate) fn scoped<R>(confine: Option<Arc<Confine>>, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Arc<Confine>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let prev = self.0.take();
            ACTIVE.with(|a| *a.borrow_mut() = prev);
        }
    }
    let prev = ACTIVE.with(|a| a.replace(confine));
    let _restore = Restore(prev);
    f()
}

/// Checks a read against the confinement active on this thread.
pub(crate) fn check(path: &Path) -> Result<(), String> {
    ACTIVE.with(|a| match &*a.borrow() {
        Some(c) => c.check(path),
        None => Ok(()),
    })
}

/// The refusal [`check`] gives for `path` when it is (or is below) a
/// symlink a revision commits leading out of its tree, which a lookup
/// that found no file there would otherwise report as missing.
pub(crate) fn refused_link_out(path: &Path) -> Option<String> {
    ACTIVE.with(|a| match &*a.borrow() {
        Some(c) if c.below_link_out(path) => c.check(path).err(),
        _ => None,
    })
}

/// [`check`] of `path` known to be really at `real`
/// ([`Confine::check_resolved`]).
pub(crate) fn check_resolved(path: &Path, real: &Path) -> Result<(), String> {
    ACTIVE.with(|a| match &*a.borrow() {
        Some(c) => c.check_resolved(path, real),
        None => Ok(()),
    })
}

/// Whether a confinement is active on this thread (a pull request's
/// compile).
pub(crate) fn active() -> bool {
    ACTIVE.with(|a| a.borrow().is_some())
}

/// The confined compile's stand-in for the working directory
/// ([`Confine::with_base`]); `None`: the working directory itself.
pub(crate) fn base() -> Option<PathBuf> {
    ACTIVE.with(|a| a.borrow().as_ref().and_then(|c| c.base.clone()))
}

/// [`check`] of a directory read as a whole ([`Confine::check_tree`]).
pub(crate) fn check_tree(path: &Path) -> Result<(), String> {
    ACTIVE.with(|a| match &*a.borrow() {
        Some(c) => c.check_tree(path),
        None => Ok(()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inside_outside_dotdot_and_symlinks() {
        let d = tempfile::tempdir().unwrap();
        let repo = d.path().join("repo");
        std::fs::create_dir_all(repo.join("lib")).unwrap();
        std::fs::write(repo.join("lib/a.txt"), "a").unwrap();
        std::fs::write(d.path().join("secret"), "s").unwrap();
        let c = Confine::new([repo.clone()]);
        assert!(c.check(&repo.join("lib/a.txt")).is_ok());
        assert!(c.check(&repo.join("lib/missing")).is_ok());
        let e = c.check(&d.path().join("secret")).unwrap_err();
        assert!(e.contains("outside the repository"), "{e}");
        assert!(c.check(&repo.join("lib/../../secret")).is_err());
        assert!(c.check(Path::new("/proc/self/environ")).is_err());
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(d.path().join("secret"), repo.join("lib/link")).unwrap();
            let e = c.check(&repo.join("lib/link")).unwrap_err();
            assert!(e.contains("through a symlink"), "{e}");
            std::os::unix::fs::symlink(d.path(), repo.join("up")).unwrap();
            assert!(c.check(&repo.join("up/secret")).is_err());
        }
    }

    /// Probe 31 (confined-compile-reads-git-dir-checkout-token).
    #[test]
    fn the_git_directory_is_not_read() {
        let d = tempfile::tempdir().unwrap();
        let repo = d.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("sub/.git")).unwrap();
        std::fs::write(repo.join(".git/config"), "x").unwrap();
        let c = Confine::new([repo.clone()]);
        for p in [
            ".git/config",
            "./.git/config",
            "sub/.git/x",
            "a/../.git/HEAD",
        ] {
            let e = c.check(&repo.join(p)).unwrap_err();
            assert!(e.contains("`.git` directory"), "{p}: {e}");
        }
        for p in [".gitignore", ".github/x.yml", "a.git/x", "git/config"] {
            assert!(c.check(&repo.join(p)).is_ok(), "{p}");
        }
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(".git", repo.join("g")).unwrap();
            let e = c.check(&repo.join("g/config")).unwrap_err();
            assert!(e.contains("`.git` directory"), "{e}");
        }
    }

    /// Re-probe verify23 (v-git-dir-read-below-a-ytt-or-helm-directory): a
    /// ytt or helm input directory holding `.git` passed the tree check.
    #[test]
    fn a_tree_holding_the_git_directory_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let repo = d.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("y/.github")).unwrap();
        let c = Confine::new([repo.clone()]);
        let e = c.check_tree(&repo).unwrap_err();
        assert!(e.contains("`.git` directory"), "{e}");
        assert!(c.check_tree(&repo.join("y")).is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn trees_are_checked_through_every_symlink_inside() {
        let d = tempfile::tempdir().unwrap();
        let repo = d.path().join("repo");
        let chart = repo.join("charts/app");
        std::fs::create_dir_all(chart.join("templates")).unwrap();
        std::fs::create_dir_all(repo.join("shared")).unwrap();
        std::fs::write(chart.join("templates/a.yaml"), "a").unwrap();
        std::fs::write(d.path().join("secret"), "s").unwrap();
        let c = Confine::new([repo.clone()]);
        assert!(c.check_tree(&chart).is_ok());
        // A link to a directory inside the repository, and a loop: fine.
        std::os::unix::fs::symlink(repo.join("shared"), chart.join("shared")).unwrap();
        std::os::unix::fs::symlink("..", chart.join("templates/up")).unwrap();
        assert!(c.check_tree(&chart).is_ok());
        // A link out, two levels down or behind the inside link: refused.
        std::os::unix::fs::symlink(d.path().join("secret"), repo.join("shared/s")).unwrap();
        let e = c.check_tree(&chart).unwrap_err();
        assert!(
            e.contains("through a symlink") && e.contains("shared/s"),
            "{e}"
        );
        std::fs::remove_file(repo.join("shared/s")).unwrap();
        std::os::unix::fs::symlink("/etc", chart.join("templates/etc")).unwrap();
        let e = c.check_tree(&chart).unwrap_err();
        assert!(e.contains("templates/etc"), "{e}");
    }

    #[test]
    fn only_active_in_scope() {
        let d = tempfile::tempdir().unwrap();
        let c = Arc::new(Confine::new([d.path().to_path_buf()]));
        assert!(check(Path::new("/etc/hostname")).is_ok());
        scoped(Some(c), || {
            assert!(check(Path::new("/etc/hostname")).is_err());
            assert!(check(&d.path().join("x")).is_ok());
        });
        assert!(check(Path::new("/etc/hostname")).is_ok());
    }
}
