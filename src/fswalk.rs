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

/// Every file below `dir` (directory symlinks followed), sorted by path.
/// A directory for which `descend` says false is left out, with all it
/// holds.
pub fn files_below(dir: &Path, descend: &dyn Fn(&Path) -> bool) -> Result<Vec<PathBuf>, WalkError> {
    let mut out = Vec::new();
    walk(dir, descend, &mut out)?;
    Ok(out)
}

fn walk(
    dir: &Path,
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
        if p.is_dir() {
            if descend(&p) {
                walk(&p, descend, out)?;
            }
        } else {
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
}
