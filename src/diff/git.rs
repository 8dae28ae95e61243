//! Reading a directory as it is at a git revision, without touching the
//! working tree or the index: the files are written to a directory the
//! caller owns (a temporary one). Only symlinks that stay inside the tree
//! are recreated.
//!
//! This uses git's plumbing (`rev-parse`, `ls-tree`, `cat-file --batch`)
//! through the `git` binary rather than `gix`: gix is a large build, and the
//! plumbing output is stable and enough for reading one tree.

use super::DiffError;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};

fn git_err(rev: &str, message: impl Into<String>) -> DiffError {
    DiffError::Git {
        rev: rev.to_string(),
        message: message.into(),
    }
}

fn git(repo: &Path) -> Command {
    let mut c = Command::new("git");
    c.arg("-C").arg(repo);
    c
}

/// The commit id a revision names.
pub fn resolve(repo: &Path, rev: &str) -> Result<String, DiffError> {
    let out = git(repo)
        .args(["rev-parse", "--verify", "--quiet", "--end-of-options"])
        .arg(format!("{rev}^{{commit}}"))
        .output()
        .map_err(|e| git_err(rev, format!("cannot run git: {e}")))?;
    if !out.status.success() {
        return Err(git_err(rev, format!("not a commit in {}", repo.display())));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The best common ancestor of two revisions, if git finds one (a shallow
/// clone may not have it).
pub fn merge_base(repo: &Path, a: &str, b: &str) -> Option<String> {
    let out = git(repo)
        .args(["merge-base", "--end-of-options", a, b])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Writes the files under `subpath` (the whole tree when empty) at `rev`
/// into `dest`, keeping their paths relative to `subpath`. Returns how many
/// files were written; a `subpath` missing at that revision gives none.
pub fn extract(repo: &Path, rev: &str, subpath: &str, dest: &Path) -> Result<usize, DiffError> {
    let commit = resolve(repo, rev)?;
    let sub = subpath.trim_matches('/');
    let mut ls = git(repo);
    ls.args(["ls-tree", "-r", "-z", "--full-tree", &commit]);
    if !sub.is_empty() {
        ls.arg("--").arg(sub);
    }
    let out = ls
        .output()
        .map_err(|e| git_err(rev, format!("cannot run git: {e}")))?;
    if !out.status.success() {
        return Err(git_err(rev, String::from_utf8_lossy(&out.stderr).trim()));
    }
    // `<mode> <type> <object>\t<path>\0`; submodules (`commit`) are skipped.
    let mut blobs: Vec<(String, String, String)> = Vec::new();
    for entry in out.stdout.split(|b| *b == 0).filter(|e| !e.is_empty()) {
        let entry = String::from_utf8_lossy(entry);
        let Some((meta, path)) = entry.split_once('\t') else {
            continue;
        };
        let parts: Vec<&str> = meta.split(' ').collect();
        if parts.len() != 3 || parts[1] != "blob" {
            continue;
        }
        let rel = if sub.is_empty() {
            path.to_string()
        } else {
            match path.strip_prefix(sub).and_then(|p| p.strip_prefix('/')) {
                Some(r) => r.to_string(),
                None => continue,
            }
        };
        blobs.push((parts[0].to_string(), parts[2].to_string(), rel));
    }
    std::fs::create_dir_all(dest).map_err(|e| io_err(dest, e))?;
    if blobs.is_empty() {
        return Ok(0);
    }
    let mut child = git(repo)
        .args(["cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| git_err(rev, format!("cannot run git: {e}")))?;
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let ids: String = blobs.iter().map(|(_, id, _)| format!("{id}\n")).collect();
    // Write from another thread: git answers while it reads, and both pipes
    // would fill up otherwise.
    let writer = std::thread::spawn(move || stdin.write_all(ids.as_bytes()));
    let mut reader = BufReader::new(child.stdout.take().expect("stdout is piped"));
    for (mode, id, rel) in &blobs {
        let mut header = String::new();
        reader
            .read_line(&mut header)
            .map_err(|e| git_err(rev, e.to_string()))?;
        let size: usize = header
            .split(' ')
            .nth(2)
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| {
                git_err(
                    rev,
                    format!("unexpected `git cat-file` answer for {id}: {header}"),
                )
            })?;
        let mut data = vec![0; size + 1]; // content, then a newline
        reader
            .read_exact(&mut data)
            .map_err(|e| git_err(rev, e.to_string()))?;
        data.pop();
        let target = dest.join(rel);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io_err(parent, e))?;
        }
        if mode == "120000" {
            write_symlink(&data, rel, &target)?;
        } else {
            std::fs::write(&target, &data).map_err(|e| io_err(&target, e))?;
        }
    }
    let _ = writer.join();
    let status = child.wait().map_err(|e| git_err(rev, e.to_string()))?;
    if !status.success() {
        return Err(git_err(rev, "`git cat-file` failed"));
    }
    Ok(blobs.len())
}

/// A symlink whose target stays inside the extracted tree (relative, not
/// climbing out with `..`) is recreated, so inventories and components that
/// link within the repository still compile. Any other link is written as a
/// small text file naming its target: following it could show a file of the
/// machine running the review (tokens included) in the diff.
fn write_symlink(data: &[u8], rel: &str, target: &Path) -> Result<(), DiffError> {
    let to = String::from_utf8_lossy(data).into_owned();
    if stays_inside(rel, &to) {
        #[cfg(unix)]
        return std::os::unix::fs::symlink(&to, target).map_err(|e| io_err(target, e));
    }
    let mut text = b"(symlink to ".to_vec();
    text.extend_from_slice(data);
    text.extend_from_slice(b")\n");
    std::fs::write(target, text).map_err(|e| io_err(target, e))
}

/// Whether link `rel` (a path inside the tree) pointing at `to` resolves
/// inside the tree.
fn stays_inside(rel: &str, to: &str) -> bool {
    if to.is_empty() || to.starts_with('/') || to.contains('\\') {
        return false;
    }
    let mut depth: Vec<&str> = rel.split('/').collect();
    depth.pop(); // the link's own name
    for part in to.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if depth.pop().is_none() {
                    return false;
                }
            }
            p => depth.push(p),
        }
    }
    true
}

fn io_err(path: &Path, e: std::io::Error) -> DiffError {
    DiffError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::stays_inside;

    #[test]
    fn links_that_stay_inside_the_tree() {
        assert!(stays_inside("a/b/link", "../c/file"));
        assert!(stays_inside("link", "dir/file"));
        assert!(stays_inside("a/link", "./x"));
        assert!(!stays_inside("a/link", "../../etc/passwd"));
        assert!(!stays_inside("link", "/etc/passwd"));
        assert!(!stays_inside("link", ".."));
        assert!(!stays_inside("link", ""));
    }
}
