//! Writing a commit's tree into a checkout directory and moving it to
//! another commit later, without ever overwriting a file the user edited.

use super::Dependency;
use crate::git::{CacheRepo, FileEntry, FileKind, FileMap};
use gix::ObjectId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub(crate) enum CheckoutError {
    /// The checkout directory and the files edited (or deleted) in it.
    LocalChanges(PathBuf, String),
    Other(String),
}

/// What strata wrote into a checkout, to recognise local edits.
#[derive(Serialize, Deserialize, Default)]
struct State {
    commit: String,
    /// The checkout directory's name in `dependencies/` (`name` or `.name`).
    #[serde(default)]
    root: String,
    /// The sub-directory written (empty: the whole tree).
    #[serde(default)]
    sparse: String,
    files: BTreeMap<String, Written>,
}

#[derive(Serialize, Deserialize, Clone)]
struct Written {
    id: String,
    /// `blob`, `exe` or `link`.
    kind: String,
    size: u64,
    mtime_ns: i128,
    /// Recorded before a checkout writes anything ([`pending_state`]): the
    /// run may stop part-way (a fetch limit, a full disk, a kill), so the
    /// file may be absent or hold `id` or `also`, all of which are strata's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pending: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    also: Vec<String>,
}

fn kind_name(k: FileKind) -> &'static str {
    match k {
        FileKind::Blob => "blob",
        FileKind::Executable => "exe",
        FileKind::Link => "link",
    }
}

fn io_err(path: &Path, e: std::io::Error) -> CheckoutError {
    CheckoutError::Other(format!("{}: {e}", path.display()))
}

fn mtime_ns(meta: &std::fs::Metadata) -> i128 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(-1)
}

/// The blob id of what is on disk at `path` (a file or a symlink), if any.
fn disk_id(path: &Path, meta: &std::fs::Metadata) -> Option<ObjectId> {
    let data = if meta.file_type().is_symlink() {
        std::fs::read_link(path).ok()?.to_str()?.as_bytes().to_vec()
    } else if meta.is_file() {
        std::fs::read(path).ok()?
    } else {
        return None;
    };
    gix::objs::compute_hash(gix::hash::Kind::Sha1, gix::objs::Kind::Blob, &data).ok()
}

/// Whether the file strata wrote at `rel` is still as written.
fn unchanged(root: &Path, rel: &str, w: &Written) -> bool {
    let path = root.join(rel);
    let Ok(meta) = std::fs::symlink_metadata(&path) else {
        return w.pending;
    };
    if w.pending {
        return disk_id(&path, &meta)
            .is_some_and(|id| same_id(id, &w.id) || w.also.iter().any(|a| same_id(id, a)));
    }
    let is_link = meta.file_type().is_symlink();
    if is_link != (w.kind == "link") {
        return false;
    }
    if meta.len() == w.size && mtime_ns(&meta) == w.mtime_ns {
        return true;
    }
    disk_id(&path, &meta).is_some_and(|id| same_id(id, &w.id))
}

fn same_id(id: ObjectId, hex: &str) -> bool {
    ObjectId::from_hex(hex.as_bytes()).is_ok_and(|h| h == id)
}

fn state_path(deps_dir: &Path, name: &str) -> PathBuf {
    deps_dir.join(".repos/.state").join(format!("{name}.json"))
}

/// The record written before a checkout changes any file: every file it
/// may remove or write, with the content it has now and the one it will
/// have. A run stopped part-way (`STRATA_MAX_FETCH_BYTES`, a full disk, a
/// kill) left files no record named, and the next `strata fetch` took them
/// for local changes and asked for `--force` (probe 40's left-over); with
/// this record it carries on. Its empty commit is never up to date.
fn pending_state(
    root_name: &str,
    sparse: &str,
    old_files: &BTreeMap<String, Written>,
    files: &FileMap,
) -> State {
    let mut pending: BTreeMap<String, Written> = BTreeMap::new();
    for (rel, w) in old_files {
        pending.insert(
            rel.clone(),
            Written {
                id: w.id.clone(),
                kind: w.kind.clone(),
                size: u64::MAX,
                mtime_ns: -1,
                pending: true,
                also: w.also.clone(),
            },
        );
    }
    for (rel, entry) in files {
        let id = entry.id.to_string();
        match pending.get_mut(rel) {
            Some(w) => {
                if w.id != id && !w.also.contains(&id) {
                    w.also.push(id);
                }
            }
            None => {
                pending.insert(
                    rel.clone(),
                    Written {
                        id,
                        kind: kind_name(entry.kind).into(),
                        size: u64::MAX,
                        mtime_ns: -1,
                        pending: true,
                        also: Vec::new(),
                    },
                );
            }
        }
    }
    State {
        commit: String::new(),
        root: root_name.to_string(),
        sparse: sparse.to_string(),
        files: pending,
    }
}

/// Writes the state file whole or not at all (a temporary file renamed
/// over it): one cut short by a kill was unreadable, and the checkout
/// then counted as not strata's.
fn write_state(state_file: &Path, state: &State) -> Result<(), CheckoutError> {
    if let Some(parent) = state_file.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io_err(parent, e))?;
    }
    let json = serde_json::to_vec_pretty(state).map_err(|e| CheckoutError::Other(e.to_string()))?;
    let tmp = state_file.with_extension("json.new");
    std::fs::write(&tmp, json).map_err(|e| io_err(&tmp, e))?;
    std::fs::rename(&tmp, state_file).map_err(|e| io_err(state_file, e))
}

/// Checks `dep` out at `commit` and returns the directory the hierarchy
/// uses and whether anything was written.
pub(crate) fn checkout(
    repo: &CacheRepo,
    dep: &Dependency,
    commit: ObjectId,
    deps_dir: &Path,
    force: bool,
) -> Result<(PathBuf, bool), CheckoutError> {
    let other = |e: crate::git::GitError| CheckoutError::Other(e.to_string());
    // With `path`, the repository goes to `.name` and `name` links into it.
    // A checkout elsewhere in the working directory is recorded relative
    // to `dependencies/`, so a change of place is noticed like one of `path`.
    // With `dir` and `path`, only `path` is written, in place, without a
    // symlink (Commodore's layout: the hierarchy reads `<dir>/<path>`).
    let (root, link, root_name) = match (&dep.dir, &dep.path) {
        (Some(d), _) => (
            deps_dir.parent().unwrap_or(deps_dir).join(d),
            None,
            Path::new("..").join(d).to_string_lossy().into_owned(),
        ),
        (None, Some(p)) if !p.trim_matches('/').is_empty() => (
            deps_dir.join(format!(".{}", dep.name)),
            Some(p.trim_matches('/').to_string()),
            format!(".{}", dep.name),
        ),
        _ => (deps_dir.join(&dep.name), None, dep.name.clone()),
    };
    let state_file = state_path(deps_dir, &dep.name);
    let mut old: Option<State> = std::fs::read(&state_file)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    // `path` was added or removed since the last run: the old checkout
    // goes (unless edited), and this one starts afresh.
    if let Some(s) = old
        .as_ref()
        .filter(|s| !s.root.is_empty() && s.root != root_name)
    {
        let old_root = deps_dir.join(&s.root);
        if std::fs::symlink_metadata(&old_root).is_ok() {
            let edited: Vec<String> = s
                .files
                .iter()
                .filter(|(rel, w)| !unchanged(&old_root, rel, w))
                .map(|(rel, _)| rel.clone())
                .collect();
            if !edited.is_empty() && !force {
                return Err(CheckoutError::LocalChanges(old_root, list(&edited)));
            }
            remove_path(&old_root)?;
        }
        let link_path = deps_dir.join(&dep.name);
        if std::fs::symlink_metadata(&link_path).is_ok_and(|m| m.file_type().is_symlink()) {
            std::fs::remove_file(&link_path).map_err(|e| io_err(&link_path, e))?;
        }
        old = None;
    }
    let sparse: Option<String> = match (&dep.dir, &link) {
        (Some(_), _) => dep
            .path
            .as_deref()
            .map(|p| p.trim_matches('/').to_string())
            .filter(|p| !p.is_empty()),
        (None, l) => l.clone(),
    };
    let sparse_name = sparse.clone().unwrap_or_default();
    let root_exists = std::fs::symlink_metadata(&root).is_ok();
    let mut changed = false;

    // What a run killed while writing a file left beside it.
    if let (Some(s), true) = (&old, root_exists) {
        for rel in s.files.iter().filter(|(_, w)| w.pending).map(|(r, _)| r) {
            let _ = std::fs::remove_file(part_path(&root.join(rel)));
        }
    }
    let edited: Vec<String> = match (&old, root_exists) {
        (Some(s), true) => s
            .files
            .iter()
            .filter(|(rel, w)| !unchanged(&root, rel, w))
            .map(|(rel, _)| rel.clone())
            .collect(),
        _ => Vec::new(),
    };
    let up_to_date = old
        .as_ref()
        .is_some_and(|s| same_id(commit, &s.commit) && s.sparse == sparse_name)
        && root_exists
        && edited.is_empty();

    if !up_to_date {
        if !edited.is_empty() && !force {
            return Err(CheckoutError::LocalChanges(root.clone(), list(&edited)));
        }
        let tree = repo.commit_tree(commit).map_err(other)?;
        // A `path` dependency needs only its sub-directory: the hierarchy
        // never sees the rest, and it is most of the files of a repository
        // holding many components.
        let files = repo
            .list_tree(tree, sparse.as_deref().unwrap_or_default())
            .map_err(other)?;
        let old_files = match (&old, root_exists) {
            (Some(s), true) => s.files.clone(),
            (None, true) => {
                let empty = std::fs::read_dir(&root)
                    .map(|mut d| d.next().is_none())
                    .unwrap_or(false);
                if !empty && !force {
                    return Err(CheckoutError::LocalChanges(
                        root.clone(),
                        "the directory exists and was not checked out by strata".into(),
                    ));
                }
                if !empty {
                    remove_path(&root)?;
                }
                BTreeMap::new()
            }
            _ => BTreeMap::new(),
        };
        let mut new_state = State {
            commit: commit.to_string(),
            root: root_name.clone(),
            sparse: sparse_name.clone(),
            files: BTreeMap::new(),
        };
        // Untracked files in the way of new files are the user's (asked
        // before anything is removed: the removed files were not recorded
        // when this refused, and the next run took them for deleted ones).
        if !force {
            let blocked: Vec<String> = files
                .iter()
                .filter(|(rel, e)| {
                    !old_files.contains_key(*rel) && {
                        let p = root.join(rel);
                        match std::fs::symlink_metadata(&p) {
                            Ok(m) => disk_id(&p, &m) != Some(e.id),
                            Err(_) => false,
                        }
                    }
                })
                .map(|(rel, _)| rel.clone())
                .collect();
            if !blocked.is_empty() {
                return Err(CheckoutError::LocalChanges(root.clone(), list(&blocked)));
            }
        }
        write_state(
            &state_file,
            &pending_state(&root_name, &sparse_name, &old_files, &files),
        )?;
        // Files the new tree no longer has.
        for rel in old_files.keys() {
            if !files.contains_key(rel) {
                let p = root.join(rel);
                if std::fs::symlink_metadata(&p).is_ok() {
                    std::fs::remove_file(&p).map_err(|e| io_err(&p, e))?;
                    changed = true;
                }
                prune_empty_dirs(&root, rel);
            }
        }
        for (rel, entry) in &files {
            let p = root.join(rel);
            // A file an interrupted run recorded as pending may hold either
            // content: written again.
            let same = old_files.get(rel).is_some_and(|w| {
                !w.pending && same_id(entry.id, &w.id) && w.kind == kind_name(entry.kind)
            }) && !edited.contains(rel);
            if !same || std::fs::symlink_metadata(&p).is_err() {
                write_entry(repo, &p, entry)?;
                changed = true;
            }
            let meta = std::fs::symlink_metadata(&p).map_err(|e| io_err(&p, e))?;
            new_state.files.insert(
                rel.clone(),
                Written {
                    id: entry.id.to_string(),
                    kind: kind_name(entry.kind).into(),
                    size: meta.len(),
                    mtime_ns: mtime_ns(&meta),
                    pending: false,
                    also: Vec::new(),
                },
            );
        }
        std::fs::create_dir_all(&root).map_err(|e| io_err(&root, e))?;
        link_worktree(repo, &dep.name, &root, commit, tree, sparse.as_deref())?;
        write_state(&state_file, &new_state)?;
    }

    let Some(sub) = link else {
        if let Some(sub) = &sparse {
            if !root.join(sub).is_dir() {
                return Err(CheckoutError::Other(format!(
                    "`path` {sub} is not a directory of the repository at this version"
                )));
            }
        }
        return Ok((root, changed));
    };
    if !root.join(&sub).is_dir() {
        return Err(CheckoutError::Other(format!(
            "`path` {sub} is not a directory of the repository at this version"
        )));
    }
    let link_path = deps_dir.join(&dep.name);
    let target = PathBuf::from(format!(".{}", dep.name)).join(&sub);
    match std::fs::symlink_metadata(&link_path) {
        Ok(m) if m.file_type().is_symlink() => {
            if std::fs::read_link(&link_path).ok().as_deref() != Some(target.as_path()) {
                std::fs::remove_file(&link_path).map_err(|e| io_err(&link_path, e))?;
                symlink(&target, &link_path)?;
                changed = true;
            }
        }
        Ok(_) if !force => {
            return Err(CheckoutError::LocalChanges(
                link_path.clone(),
                "a directory is where the symlink to `path` goes".into(),
            ))
        }
        Ok(_) => {
            remove_path(&link_path)?;
            symlink(&target, &link_path)?;
            changed = true;
        }
        Err(_) => {
            symlink(&target, &link_path)?;
            changed = true;
        }
    }
    Ok((link_path, changed))
}

/// Makes the checkout a linked worktree of the bare repository (as `git
/// worktree add --detach` would), so people can work and commit in it: an
/// admin directory `worktrees/<name>` with a detached `HEAD` and an index
/// of the commit's tree, and a `.git` file pointing at it. For a `path`
/// checkout, entries outside `path` are marked skip-worktree, so git does
/// not see them as deleted. The index carries no stat data: git re-hashes
/// the files once on the first `git status`.
fn link_worktree(
    repo: &CacheRepo,
    name: &str,
    root: &Path,
    commit: ObjectId,
    tree: ObjectId,
    sparse: Option<&str>,
) -> Result<(), CheckoutError> {
    let other = |m: String| CheckoutError::Other(m);
    let git_dir = std::fs::canonicalize(repo.path()).map_err(|e| io_err(repo.path(), e))?;
    let admin = git_dir.join("worktrees").join(name);
    std::fs::create_dir_all(&admin).map_err(|e| io_err(&admin, e))?;
    std::fs::create_dir_all(root).map_err(|e| io_err(root, e))?;
    let root_abs = std::fs::canonicalize(root).map_err(|e| io_err(root, e))?;
    let write = |p: PathBuf, text: String| std::fs::write(&p, text).map_err(|e| io_err(&p, e));
    write(
        admin.join("gitdir"),
        format!("{}\n", root_abs.join(".git").display()),
    )?;
    write(admin.join("commondir"), "../..\n".into())?;
    write(admin.join("HEAD"), format!("{commit}\n"))?;
    write(
        root_abs.join(".git"),
        format!("gitdir: {}\n", admin.display()),
    )?;
    let index = repo
        .repo()
        .index_from_tree(&tree)
        .map_err(|e| other(format!("building the index of {tree}: {e}")))?;
    let (mut state, _) = index.into_parts();
    if let Some(sub) = sparse {
        let prefix = format!("{sub}/");
        for (entry, path) in state.entries_mut_with_paths() {
            if !path.starts_with(prefix.as_bytes()) {
                entry.flags.insert(
                    gix::index::entry::Flags::SKIP_WORKTREE | gix::index::entry::Flags::EXTENDED,
                );
            }
        }
    }
    let mut file = gix::index::File::from_state(state, admin.join("index"));
    file.write(Default::default())
        .map_err(|e| other(format!("writing {}: {e}", admin.join("index").display())))?;
    Ok(())
}

fn list(files: &[String]) -> String {
    let mut s = files.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    if files.len() > 5 {
        s.push_str(&format!(" and {} more", files.len() - 5));
    }
    s
}

fn remove_path(p: &Path) -> Result<(), CheckoutError> {
    let meta = std::fs::symlink_metadata(p).map_err(|e| io_err(p, e))?;
    if meta.is_dir() {
        std::fs::remove_dir_all(p).map_err(|e| io_err(p, e))
    } else {
        std::fs::remove_file(p).map_err(|e| io_err(p, e))
    }
}

fn prune_empty_dirs(root: &Path, rel: &str) {
    let mut p = root.join(rel);
    while p.pop() && p != root {
        if std::fs::remove_dir(&p).is_err() {
            break;
        }
    }
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) -> Result<(), CheckoutError> {
    std::os::unix::fs::symlink(target, link).map_err(|e| io_err(link, e))
}

#[cfg(not(unix))]
fn symlink(_target: &Path, link: &Path) -> Result<(), CheckoutError> {
    Err(CheckoutError::Other(format!(
        "{}: symlinks are only supported on Unix",
        link.display()
    )))
}

/// Writes one tree entry to `path`, replacing whatever is there.
pub(crate) fn write_entry(
    repo: &CacheRepo,
    path: &Path,
    entry: &FileEntry,
) -> Result<(), CheckoutError> {
    if let Some(parent) = path.parent() {
        // A file where a directory now goes (or the reverse) is replaced.
        if let Ok(m) = std::fs::symlink_metadata(parent) {
            if !m.is_dir() {
                std::fs::remove_file(parent).map_err(|e| io_err(parent, e))?;
            }
        }
        std::fs::create_dir_all(parent).map_err(|e| io_err(parent, e))?;
    }
    if let Ok(m) = std::fs::symlink_metadata(path) {
        if m.is_dir() {
            std::fs::remove_dir_all(path).map_err(|e| io_err(path, e))?;
        } else {
            std::fs::remove_file(path).map_err(|e| io_err(path, e))?;
        }
    }
    let blob = repo
        .read_fetched_blob(entry.id, &path.display().to_string())
        .map_err(CheckoutError::Other)?;
    match entry.kind {
        FileKind::Link => {
            let target = String::from_utf8_lossy(&blob.data).into_owned();
            symlink(Path::new(&target), path)?;
        }
        FileKind::Blob | FileKind::Executable => {
            // Whole or not at all: written beside, then renamed into place
            // (a full disk or a kill left a file cut short, which the next
            // run took for a local change).
            let part = part_path(path);
            let written = std::fs::write(&part, &blob.data).and_then(|()| {
                #[cfg(unix)]
                if entry.kind == FileKind::Executable {
                    use std::os::unix::fs::PermissionsExt;
                    std::fs::set_permissions(&part, std::fs::Permissions::from_mode(0o755))?;
                }
                std::fs::rename(&part, path)
            });
            if let Err(e) = written {
                let _ = std::fs::remove_file(&part);
                return Err(io_err(path, e));
            }
        }
    }
    Ok(())
}

/// Where [`write_entry`] writes a file before renaming it into place.
fn part_path(path: &Path) -> PathBuf {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    path.with_file_name(format!(".{name}.strata-part"))
}

/// Writes the files of `files` (keys relative to `prefix`) below `dest`.
pub(crate) fn write_subtree(
    repo: &CacheRepo,
    files: &FileMap,
    prefix: &str,
    dest: &Path,
) -> Result<(), String> {
    for (path, entry) in files {
        let rel = if prefix.is_empty() {
            path.as_str()
        } else {
            path.strip_prefix(prefix)
                .map(|r| r.trim_start_matches('/'))
                .unwrap_or(path)
        };
        write_entry(repo, &dest.join(rel), entry).map_err(|e| match e {
            CheckoutError::Other(m) | CheckoutError::LocalChanges(_, m) => m,
        })?;
    }
    Ok(())
}
