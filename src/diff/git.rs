//! Reading a directory as it is at a git revision, without touching the
//! working tree or the index: the revision is resolved and its tree walked
//! with gix straight from the object database, and the files are written to
//! a directory the caller owns (a temporary one). Nothing is checked out, so
//! uncommitted edits and a dirty index stay as they are.
//!
//! Writing is done so that no path can leave that directory: tree entry
//! names are checked (`..`, `/`, NUL are refused, `.git` is skipped as git
//! itself does), regular files are created before any symlink exists (so
//! no write goes through a link) and never over an existing path, and only
//! symlinks whose target provably stays inside the tree are recreated.

use super::DiffError;
use gix::bstr::ByteSlice;
use gix::objs::tree::EntryKind;
use gix::ObjectId;
use std::path::{Path, PathBuf};

fn git_err(rev: &str, message: impl Into<String>) -> DiffError {
    DiffError::Git {
        rev: rev.to_string(),
        message: message.into(),
    }
}

/// The error and its causes on one line: gix's top-level messages alone
/// rarely say what to fix.
fn gix_msg(e: &dyn std::error::Error) -> String {
    // Some messages span several lines of context: the first says it.
    let first_line = |s: String| s.lines().next().unwrap_or_default().trim().to_string();
    let mut msg = first_line(e.to_string());
    let mut source = e.source();
    while let Some(s) = source {
        let text = first_line(s.to_string());
        if !msg.contains(&text) {
            msg.push_str(": ");
            msg.push_str(&text);
        }
        source = s.source();
    }
    msg
}

/// The repository containing `dir` (like `git -C dir`: a subdirectory,
/// a linked worktree or a bare repository all work).
fn open(dir: &Path, rev: &str) -> Result<gix::Repository, DiffError> {
    let mut repo = gix::discover(dir).map_err(|e| {
        git_err(
            rev,
            format!(
                "cannot open the git repository {}: {}",
                dir.display(),
                gix_msg(&e)
            ),
        )
    })?;
    // Merge-base walks and tree reads revisit objects.
    repo.object_cache_size_if_unset(8 * 1024 * 1024);
    Ok(repo)
}

fn commit_id(repo: &gix::Repository, dir: &Path, rev: &str) -> Result<ObjectId, DiffError> {
    let spec = format!("{rev}^{{commit}}");
    repo.rev_parse_single(spec.as_str())
        .map(|id| id.detach())
        .map_err(|_| git_err(rev, format!("not a commit in {}", dir.display())))
}

/// The commit id a revision names.
pub fn resolve(repo: &Path, rev: &str) -> Result<String, DiffError> {
    let r = open(repo, rev)?;
    commit_id(&r, repo, rev).map(|id| id.to_string())
}

/// The best common ancestor of two revisions, if there is one that can be
/// found (a shallow clone may not have it).
pub fn merge_base(repo: &Path, a: &str, b: &str) -> Option<String> {
    let r = open(repo, a).ok()?;
    let one = commit_id(&r, repo, a).ok()?;
    let two = commit_id(&r, repo, b).ok()?;
    r.merge_base(one, two)
        .ok()
        .flatten()
        .map(|id| id.detach().to_string())
}

/// Whether the repository holding `dir` is a shallow clone (its history
/// cut off at `.git/shallow`), where a merge base may be out of reach.
pub fn is_shallow(dir: &Path) -> bool {
    open(dir, "HEAD").is_ok_and(|r| r.is_shallow().unwrap_or(false))
}

/// Where `dir` sits inside its repository's work tree, as a `/`-separated
/// path (empty at the root): a revision's tree is compiled from the same
/// subdirectory the user stands in.
pub fn subdir(dir: &Path) -> Result<String, DiffError> {
    let r = open(dir, "HEAD")?;
    let Some(work) = r.workdir() else {
        return Ok(String::new());
    };
    let (Ok(work), Ok(here)) = (work.canonicalize(), dir.canonicalize()) else {
        return Ok(String::new());
    };
    let rel = here.strip_prefix(&work).unwrap_or(Path::new(""));
    Ok(rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/"))
}

/// Whether the index of the repository whose work tree holds `dir` tracks
/// any file below it: files a commit put there, which its author chose.
/// `false` outside a repository (or for a directory that does not exist);
/// `true` when the repository is there but its index cannot be read.
pub fn tracks_files_below(dir: &Path) -> bool {
    let Ok(here) = dir.canonicalize() else {
        return false;
    };
    let Ok(r) = gix::discover(&here) else {
        return false;
    };
    let Some(Ok(work)) = r.workdir().map(Path::canonicalize) else {
        return false;
    };
    let Ok(rel) = here.strip_prefix(&work) else {
        return false;
    };
    let Ok(index) = r.index_or_empty() else {
        return true;
    };
    let rel: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let prefix = format!("{}/", rel.join("/"));
    index
        .entries()
        .iter()
        .any(|e| rel.is_empty() || e.path(&index).starts_with(prefix.as_bytes()))
}

/// One file of the tree to write: its kind, blob and path relative to the
/// extracted directory.
struct File {
    kind: EntryKind,
    id: ObjectId,
    rel: String,
}

/// Writes the files under `subpath` (the whole tree when empty) at `rev`
/// into `dest`, keeping their paths relative to `subpath`. Returns how many
/// regular files were written; a `subpath` missing at that revision gives
/// none.
pub fn extract(repo: &Path, rev: &str, subpath: &str, dest: &Path) -> Result<usize, DiffError> {
    extract_like(repo, rev, subpath, dest, None).map(|t| t.files.len())
}

/// The regular files [`extract_like`] wrote: where, and which blob each
/// one holds.
#[derive(Debug, Default)]
pub struct Extracted {
    root: PathBuf,
    files: std::collections::HashMap<String, (ObjectId, EntryKind)>,
    /// The symlinks leading out of the tree, written as a text naming
    /// their target ([`write_symlink`]), sorted.
    links_out: Vec<PathBuf>,
}

impl Extracted {
    /// Where the symlinks leading out of the tree are (as text files):
    /// a confined compile refuses them as it refuses such a link in a
    /// working tree ([`crate::confine::Confine::with_links_out`]).
    pub fn links_out(&self) -> &[PathBuf] {
        &self.links_out
    }
}

/// [`extract`], and where `like` (another revision's tree, extracted
/// before) holds the same blob at the same path with the same mode, the
/// file is a hard link to that one instead of a new file: a pull request's
/// two revisions share nearly all their files, and creating a file costs
/// ~50 times what linking one does on a disk that many scratch trees have
/// been deleted from (1,400 files: 1.7–2.4 s against 0.04 s). Nothing
/// writes into a revision's tree after it is extracted (its compile writes
/// beside it); a link that fails is a file written as before.
pub fn extract_like(
    repo: &Path,
    rev: &str,
    subpath: &str,
    dest: &Path,
    like: Option<&Extracted>,
) -> Result<Extracted, DiffError> {
    let r = open(repo, rev)?;
    let commit = commit_id(&r, repo, rev)?;
    let obj_err = |what: String, e: &dyn std::error::Error| {
        git_err(rev, format!("cannot read {what}: {}", gix_msg(e)))
    };
    let mut tree = r
        .find_commit(commit)
        .map_err(|e| obj_err(format!("commit {commit}"), &e))?
        .tree_id()
        .map_err(|e| obj_err(format!("the tree of commit {commit}"), &e))?
        .detach();
    // Down to `subpath`; anything else than a directory there is no files.
    let mut found = true;
    for part in subpath.split('/').filter(|p| !p.is_empty() && *p != ".") {
        let entries = read_tree(&r, tree, rev, subpath)?;
        match entries
            .into_iter()
            .find(|(_, name, _)| name.as_slice() == part.as_bytes())
        {
            Some((EntryKind::Tree, _, id)) => tree = id,
            _ => {
                found = false;
                break;
            }
        }
    }
    let limits = CheckoutLimits::get();
    let mut files = Vec::new();
    if found {
        let mut budget = Budget {
            seen: Default::default(),
            repeated: 0,
            components: 0,
            max_files: limits.files,
            max_components: limits.components,
            max_repeated: max_repeated_files(),
        };
        walk(&r, tree, "", rev, &mut files, 0, &mut budget)?;
    }
    // What the review writes is bounded before anything is written: a tree
    // whose entries share one subtree names N^L files from a few kilobytes
    // of objects, and one zero blob of 1 GB compresses to megabytes.
    let mut total: u64 = 0;
    for f in files.iter().filter(|f| f.kind != EntryKind::Link) {
        let size = r.find_header(f.id).map(|h| h.size()).unwrap_or(0);
        if size > limits.file_bytes {
            return Err(git_err(
                rev,
                format!(
                    "`{}` is {size} bytes: a review checks out files of at most {} bytes (STRATA_CHECKOUT_FILE_BYTES)",
                    f.rel, limits.file_bytes
                ),
            ));
        }
        total = total.saturating_add(size);
        if total > limits.bytes {
            return Err(git_err(
                rev,
                format!(
                    "the revision's files hold more than {} bytes (at `{}`): a review checks out at most that much (STRATA_CHECKOUT_BYTES)",
                    limits.bytes, f.rel
                ),
            ));
        }
    }
    std::fs::create_dir_all(dest).map_err(|e| io_err(dest, e))?;
    // Regular files first: once a symlink exists, a later write below it
    // could go through it. The walk lists a directory's files together, so
    // its directories are made once, not once per file.
    let mut made: Option<PathBuf> = None;
    let mut written = Extracted {
        root: dest.to_path_buf(),
        files: Default::default(),
        links_out: Vec::new(),
    };
    for f in files.iter().filter(|f| f.kind != EntryKind::Link) {
        let target = dest.join(&f.rel);
        if let Some(parent) = target.parent() {
            if made.as_deref() != Some(parent) {
                std::fs::create_dir_all(parent).map_err(|e| io_err(parent, e))?;
                made = Some(parent.to_path_buf());
            }
        }
        let same = like.filter(|l| l.files.get(&f.rel) == Some(&(f.id, f.kind)));
        let linked = same.is_some_and(|l| std::fs::hard_link(l.root.join(&f.rel), &target).is_ok());
        if !linked {
            let data = blob(&r, f, rev)?;
            write_new(&target, &data, f.kind == EntryKind::BlobExecutable)
                .map_err(|e| io_err(&target, e))?;
        }
        written.files.insert(f.rel.clone(), (f.id, f.kind));
    }
    for f in files.iter().filter(|f| f.kind == EntryKind::Link) {
        let data = blob(&r, f, rev)?;
        let target = dest.join(&f.rel);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io_err(parent, e))?;
        }
        if !write_symlink(&data, &f.rel, &target)? {
            written.links_out.push(target);
        }
    }
    written.links_out.sort();
    Ok(written)
}

/// The entries of a tree: kind, name, object.
type TreeEntries = Vec<(EntryKind, Vec<u8>, ObjectId)>;

fn read_tree(
    r: &gix::Repository,
    id: ObjectId,
    rev: &str,
    at: &str,
) -> Result<TreeEntries, DiffError> {
    // From the object's header, before it is inflated and decoded: one
    // tree of 2,000,000 entries packs to 4.8 MB and took 375 MB to list
    // before the file limit stopped the walk; a tree of empty directories
    // is under no file limit at all (probe 44).
    let max = crate::limits::checkout_tree_bytes();
    if let Ok(h) = r.find_header(id) {
        if h.size() > max {
            let at = if at.is_empty() {
                "the top directory".to_string()
            } else {
                format!("`{}`", at.chars().take(120).collect::<String>())
            };
            return Err(git_err(
                rev,
                format!(
                    "{at} is a git tree of {} bytes (a directory of some {} entries): a review reads trees of at most {max} bytes (STRATA_CHECKOUT_TREE_BYTES)",
                    h.size(),
                    h.size() / 36
                ),
            ));
        }
    }
    let tree = r
        .find_tree(id)
        .map_err(|e| git_err(rev, format!("cannot read tree {id}: {}", gix_msg(&e))))?;
    let decoded = tree
        .decode()
        .map_err(|e| git_err(rev, format!("cannot decode tree {id}: {}", gix_msg(&e))))?;
    Ok(decoded
        .entries
        .iter()
        .map(|e| (e.mode.kind(), e.filename.to_vec(), e.oid.to_owned()))
        .collect())
}

/// How deep a revision's tree may nest (each level was a frame of the
/// walk: 1,200 levels overflowed a debug build's stack; re-probe 12).
pub const MAX_TREE_DEPTH: usize = 256;

/// What a review checks out of one revision.
struct CheckoutLimits {
    files: usize,
    /// Path components of all files together: each one is a step of every
    /// path operation on the file, so 199,000 files 250 levels down (474 KB
    /// of objects) kept a review busy for 54 s within the other bounds
    /// (re-probe 14).
    components: u64,
    bytes: u64,
    file_bytes: u64,
}

impl CheckoutLimits {
    fn get() -> Self {
        CheckoutLimits {
            files: crate::limits::checkout_files() as usize,
            components: crate::limits::checkout_path_components(),
            bytes: crate::limits::get("STRATA_CHECKOUT_BYTES", 4 << 30),
            file_bytes: crate::limits::checkout_file_bytes(),
        }
    }
}

/// The most files a revision's tree may repeat (`STRATA_CHECKOUT_REPEATED_FILES`,
/// default 50,000): entries pointing at a subtree met before (a tree of
/// 700 entries all naming one subtree of 700 files is 490,000 files from
/// 48 KB of objects; re-probe 13).
fn max_repeated_files() -> usize {
    crate::limits::get("STRATA_CHECKOUT_REPEATED_FILES", 50_000) as usize
}

/// What one walk may still list: the subtrees met so far, the files
/// their repeats added, and the bounds (read once per walk).
struct Budget {
    seen: std::collections::HashSet<ObjectId>,
    repeated: usize,
    components: u64,
    max_files: usize,
    max_components: u64,
    max_repeated: usize,
}

impl Budget {
    /// Counts the path components of the entry `rel`, `depth` levels down.
    fn charge_components(&mut self, depth: usize, rel: &str, rev: &str) -> Result<(), DiffError> {
        self.components += depth as u64 + 1;
        if self.components > self.max_components {
            let max = self.max_components;
            return Err(git_err(
                rev,
                format!(
                    "the revision's file paths hold more than {max} path components in all (at `{}`): a review checks out at most that many (STRATA_CHECKOUT_PATH_COMPONENTS)",
                    rel.chars().take(120).collect::<String>()
                ),
            ));
        }
        Ok(())
    }
}

/// Every blob and symlink below tree `id`; submodules are skipped. At
/// most [`MAX_TREE_DEPTH`] levels, `STRATA_CHECKOUT_FILES` files,
/// `STRATA_CHECKOUT_PATH_COMPONENTS` path components and
/// [`max_repeated_files`] files in repeated subtrees.
fn walk(
    r: &gix::Repository,
    id: ObjectId,
    prefix: &str,
    rev: &str,
    out: &mut Vec<File>,
    depth: usize,
    budget: &mut Budget,
) -> Result<(), DiffError> {
    if depth >= MAX_TREE_DEPTH {
        return Err(git_err(
            rev,
            format!(
                "`{}` nests directories more than {MAX_TREE_DEPTH} levels deep: a review checks out no deeper tree",
                prefix.chars().take(120).collect::<String>()
            ),
        ));
    }
    let max_files = budget.max_files;
    let mut seen = std::collections::HashMap::new();
    for (kind, raw, oid) in read_tree(r, id, rev, prefix)? {
        let Some(name) = safe_name(&raw, rev, prefix)? else {
            continue;
        };
        // Git never writes a name twice in one tree, but a crafted tree can,
        // and the second write would fail with a misleading "File exists".
        // Two names differing in bytes that are not UTF-8 (`\xff`, `\xfe`)
        // are one name here, and git writes those.
        if let Some(first) = seen.insert(name.clone(), raw.clone()) {
            let at = if prefix.is_empty() {
                "the top directory"
            } else {
                prefix
            };
            let msg = if first == raw {
                format!("the tree holds `{name}` twice in {at} (git never writes that: the commit was crafted or is corrupt); nothing was written from it")
            } else {
                format!("the tree holds two names in {at} that read as `{name}` once their bytes that are not UTF-8 are replaced (a review reads file names as UTF-8); nothing was written from it: rename the files to UTF-8 names")
            };
            return Err(git_err(rev, msg));
        }
        let rel = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        if matches!(kind, EntryKind::Tree | EntryKind::Commit) {
            // A directory (or a submodule) is a step of the walk too, files
            // below it or not: 1,000,000 empty directories in one tree
            // (2.3 MB packed) added no file and took 4.8 s and 335 MB
            // (probe 44).
            budget.charge_components(depth, &rel, rev)?;
        }
        match kind {
            EntryKind::Tree => {
                let again = !budget.seen.insert(oid);
                let before = out.len();
                walk(r, oid, &rel, rev, out, depth + 1, budget)?;
                if again {
                    budget.repeated += out.len() - before;
                    let max = budget.max_repeated;
                    if budget.repeated > max {
                        return Err(git_err(
                            rev,
                            format!(
                                "the tree repeats subtrees (the same directory under many names, at `{rel}`) for more than {max} files: a review checks out no such tree (STRATA_CHECKOUT_REPEATED_FILES)"
                            ),
                        ));
                    }
                }
            }
            EntryKind::Blob | EntryKind::BlobExecutable | EntryKind::Link => {
                if out.len() >= max_files {
                    return Err(git_err(
                        rev,
                        format!(
                            "the revision holds more than {max_files} files (at `{rel}`): a review checks out at most that many (STRATA_CHECKOUT_FILES)"
                        ),
                    ));
                }
                budget.charge_components(depth, &rel, rev)?;
                out.push(File { kind, id: oid, rel })
            }
            EntryKind::Commit => {}
        }
    }
    Ok(())
}

/// A tree entry name usable as one path component. Git never writes the
/// refused ones, but a crafted tree can hold them, and joining `..` or a
/// name with a `/` would write outside the directory. `.git` is skipped as
/// `git checkout` does: a repository's own metadata is not content.
fn safe_name(name: &[u8], rev: &str, prefix: &str) -> Result<Option<String>, DiffError> {
    let text = name.to_str_lossy();
    if text.eq_ignore_ascii_case(".git") {
        return Ok(None);
    }
    let bad = name.is_empty()
        || name == b"."
        || name == b".."
        || name.contains(&b'/')
        || name.contains(&0)
        || (cfg!(windows) && (name.contains(&b'\\') || name.contains(&b':')));
    if bad {
        return Err(git_err(
            rev,
            format!("the tree holds an unsafe file name {text:?} in `{prefix}`; nothing was written from it"),
        ));
    }
    Ok(Some(text.into_owned()))
}

fn blob(r: &gix::Repository, f: &File, rev: &str) -> Result<Vec<u8>, DiffError> {
    r.find_object(f.id).map(|o| o.detach().data).map_err(|e| {
        git_err(
            rev,
            format!(
                "cannot read `{}` ({}): {} (a shallow or partial clone may lack it: check out with `fetch-depth: 0` and no `filter:`)",
                f.rel,
                f.id,
                gix_msg(&e)
            ),
        )
    })
}

/// Creates `path` (never over an existing file or link) with git's modes:
/// 0777 or 0666 before the umask.
fn write_new(path: &Path, data: &[u8], executable: bool) -> std::io::Result<()> {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(if executable { 0o777 } else { 0o666 });
    }
    #[cfg(not(unix))]
    let _ = executable;
    opts.open(path)?.write_all(data)
}

/// A symlink whose target stays inside the extracted tree (relative, not
/// climbing out with `..`) is recreated, so inventories and components that
/// link within the repository still compile. Any other link is written as a
/// small text file naming its target: following it could show a file of the
/// machine running the review (tokens included) in the diff. Returns
/// whether a link was made (false: the text was written).
fn write_symlink(data: &[u8], rel: &str, target: &Path) -> Result<bool, DiffError> {
    let to = String::from_utf8_lossy(data).into_owned();
    if stays_inside(rel, &to) {
        #[cfg(unix)]
        return std::os::unix::fs::symlink(&to, target)
            .map(|()| true)
            .map_err(|e| io_err(target, e));
    }
    let mut text = b"(symlink to ".to_vec();
    text.extend_from_slice(data);
    text.extend_from_slice(b")\n");
    std::fs::write(target, text)
        .map(|()| false)
        .map_err(|e| io_err(target, e))
}

/// Whether link `rel` (a path inside the tree) pointing at `to` resolves
/// inside the tree. `..` is only allowed before the first name: the
/// directories above the link are real ones, but a name may itself be a
/// link, and `link/..` would then not be where it looks (`a/l -> ..` makes
/// `a/l/../x` the parent of the tree).
fn stays_inside(rel: &str, to: &str) -> bool {
    if to.is_empty() || to.starts_with('/') || to.contains('\\') || to.contains('\0') {
        return false;
    }
    let mut depth: Vec<&str> = rel.split('/').collect();
    depth.pop(); // the link's own name
    let mut descended = false;
    for part in to.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if descended || depth.pop().is_none() {
                    return false;
                }
            }
            p => {
                descended = true;
                depth.push(p)
            }
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
    use super::{extract, extract_like, stays_inside};
    use std::path::PathBuf;
    use std::process::Command;

    fn git(dir: &std::path::Path, args: &[&str], input: &str) -> String {
        use std::io::Write;
        let mut child = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    #[test]
    fn a_crafted_tree_with_a_name_twice_is_refused_before_writing() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q"], "");
        let blob = git(&repo, &["hash-object", "-w", "--stdin"], "hi\n");
        let sub = git(&repo, &["mktree"], &format!("100644 blob {blob}\tx\n"));
        // `d` as a file and as a directory, below an ordinary file.
        let inner = git(
            &repo,
            &["mktree"],
            &format!("100644 blob {blob}\td\n040000 tree {sub}\td\n"),
        );
        let top = git(
            &repo,
            &["mktree"],
            &format!("100644 blob {blob}\ta\n040000 tree {inner}\tdir\n"),
        );
        let commit = git(&repo, &["commit-tree", &top, "-m", "crafted"], "");
        let dest = tmp.path().join("out");
        let err = extract(&repo, &commit, "", &dest).unwrap_err().to_string();
        assert!(err.contains("`d` twice in dir"), "{err}");
        assert!(!err.contains("File exists"), "{err}");
        assert!(!dest.join("a").exists(), "nothing is written");
    }

    /// Probe 42: names git writes, equal only once read as UTF-8, were
    /// called a crafted or corrupt commit.
    #[test]
    fn names_alike_once_read_as_utf8_are_named_as_such() {
        use std::os::unix::ffi::OsStrExt;
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        std::fs::create_dir_all(repo.join("tpl")).unwrap();
        for n in [&b"x\xff.yml"[..], b"x\xfe.yml"] {
            let name = std::ffi::OsStr::from_bytes(n);
            std::fs::write(repo.join("tpl").join(name), "a: 1\n").unwrap();
        }
        git(&repo, &["init", "-q"], "");
        git(&repo, &["add", "-A"], "");
        git(
            &repo,
            &[
                "-c",
                "user.name=a",
                "-c",
                "user.email=a@b",
                "commit",
                "-qm",
                "x",
            ],
            "",
        );
        let commit = git(&repo, &["rev-parse", "HEAD"], "");
        let dest = tmp.path().join("out");
        let err = extract(&repo, &commit, "", &dest).unwrap_err().to_string();
        assert!(err.contains("two names in tpl"), "{err}");
        assert!(err.contains("rename the files to UTF-8 names"), "{err}");
        assert!(!err.contains("crafted"), "{err}");
    }

    #[test]
    fn a_second_revision_links_the_files_the_first_holds_alike() {
        use std::os::unix::fs::MetadataExt;
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q"], "");
        let same = git(&repo, &["hash-object", "-w", "--stdin"], "same\n");
        let old = git(&repo, &["hash-object", "-w", "--stdin"], "old\n");
        let new = git(&repo, &["hash-object", "-w", "--stdin"], "new\n");
        let commit = |entries: String| {
            let top = git(&repo, &["mktree"], &entries);
            git(&repo, &["commit-tree", &top, "-m", "c"], "")
        };
        let head = commit(format!(
            "100644 blob {same}\ts\n100644 blob {new}\tc\n100755 blob {same}\tx\n"
        ));
        // `x` holds the same blob, but not executable: a file of its own.
        let base = commit(format!(
            "100644 blob {same}\ts\n100644 blob {old}\tc\n100644 blob {same}\tx\n"
        ));
        let (h, b) = (tmp.path().join("head"), tmp.path().join("base"));
        let first = extract_like(&repo, &head, "", &h, None).unwrap();
        extract_like(&repo, &base, "", &b, Some(&first)).unwrap();
        let ino = |p: PathBuf| std::fs::metadata(p).unwrap().ino();
        assert_eq!(ino(h.join("s")), ino(b.join("s")));
        assert_ne!(ino(h.join("c")), ino(b.join("c")));
        assert_ne!(ino(h.join("x")), ino(b.join("x")));
        assert_eq!(std::fs::read_to_string(b.join("c")).unwrap(), "old\n");
        assert_eq!(std::fs::read_to_string(b.join("s")).unwrap(), "same\n");
        assert_eq!(std::fs::metadata(b.join("x")).unwrap().mode() & 0o111, 0);
        // A tree whose file went away: written, not linked.
        std::fs::remove_file(h.join("s")).unwrap();
        let again = tmp.path().join("again");
        extract_like(&repo, &base, "", &again, Some(&first)).unwrap();
        assert_eq!(std::fs::read_to_string(again.join("s")).unwrap(), "same\n");
    }

    #[test]
    fn links_that_stay_inside_the_tree() {
        assert!(stays_inside("a/b/link", "../c/file"));
        assert!(stays_inside("link", "dir/file"));
        assert!(stays_inside("a/link", "./x"));
        assert!(!stays_inside("a/link", "../../etc/passwd"));
        assert!(!stays_inside("link", "/etc/passwd"));
        assert!(!stays_inside("link", ".."));
        assert!(!stays_inside("link", ""));
        // Through another link: `a/l -> ..` is inside, `a/l/../x` is not.
        assert!(stays_inside("a/l", ".."));
        assert!(!stays_inside("link", "a/l/../x"));
        assert!(!stays_inside("a/link", "../a/../../x"));
    }
}
