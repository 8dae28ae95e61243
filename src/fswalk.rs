//! The one directory walk behind the modules that read whole trees
//! (compiled catalogs, package repositories, rendered charts): every file
//! below a directory, in sorted path order, so what is built from it is
//! the same byte for byte on every machine.

use std::path::{Path, PathBuf};

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

/// Every regular file below `dir`, sorted by path. Symlinks are followed
/// only while they stay inside `dir` (a link to `/etc/shadow`, `/dev/zero`
/// or `../..` is left out) and never into a directory being walked (no
/// loops); FIFOs, devices and sockets are left out. A directory for which
/// `descend` says false is left out, with all it holds.
pub fn files_below(dir: &Path, descend: &dyn Fn(&Path) -> bool) -> Result<Vec<PathBuf>, WalkError> {
    let mut out = Vec::new();
    let root = std::fs::canonicalize(dir).map_err(|source| WalkError {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut stack = vec![root.clone()];
    walk(dir, &root, &mut stack, descend, &mut out)?;
    Ok(out)
}

/// Where a path really is, if that is inside `root`.
pub fn inside(path: &Path, root: &Path) -> Option<PathBuf> {
    let real = std::fs::canonicalize(path).ok()?;
    real.starts_with(root).then_some(real)
}

fn walk(
    dir: &Path,
    root: &Path,
    stack: &mut Vec<PathBuf>,
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
        let meta = if meta.file_type().is_symlink() {
            // Followed only to somewhere inside the tree.
            if inside(&p, root).is_none() {
                continue;
            }
            match std::fs::metadata(&p) {
                Ok(m) => m,
                Err(_) => continue,
            }
        } else {
            meta
        };
        if meta.is_dir() {
            let real = std::fs::canonicalize(&p).map_err(|source| WalkError {
                path: p.clone(),
                source,
            })?;
            if stack.contains(&real) || !descend(&p) {
                continue;
            }
            stack.push(real);
            let r = walk(&p, root, stack, descend, out);
            stack.pop();
            r?;
        } else if meta.is_file() {
            out.push(p);
        }
    }
    Ok(())
}

/// For [`files_below`]: every directory but `.git`.
pub fn not_git(dir: &Path) -> bool {
    dir.file_name().is_none_or(|n| n != ".git")
}

/// `.yml` or `.yaml`.
pub fn is_yaml(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yml" | "yaml")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
