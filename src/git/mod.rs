//! Git plumbing for publishing catalogs: a bare cache repository fetched with
//! gix, file listings of trees and directories, tree building, commits, and
//! the one step gix cannot do yet (push), done with the `git` command-line
//! client.
//!
//! Credentials never touch the disk or a command line: gix gets them through
//! a callback, and `git push` through an inline credential helper that reads
//! them from its environment (see [`push`]).

mod mirror;
mod push;

pub use mirror::MirrorOutcome;
pub use push::{push, PushOutcome};

pub use crate::remote::redact_url;
pub(crate) use crate::remote::stall_limits;
use gix::bstr::{BStr, ByteSlice};
use gix::objs::tree::EntryKind;
use gix::ObjectId;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// Errors from repository operations. Messages never contain credentials:
/// URLs are shown through [`redact_url`].
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("cannot open or create the cache repository {path}: {message}")]
    Cache { path: PathBuf, message: String },
    #[error("the cache repository {path} is in use by another strata process: {message}")]
    CacheLocked { path: PathBuf, message: String },
    #[error("invalid repository URL `{url}`: {message}")]
    Url { url: String, message: String },
    #[error("fetching branch `{branch}` from {url} failed: {message}")]
    Fetch {
        url: String,
        branch: String,
        message: String,
    },
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Path { path: PathBuf, message: String },
    #[error("git object database error ({context}): {message}")]
    Object { context: String, message: String },
    #[error("cannot run `git push` (is git installed?): {0}")]
    Spawn(std::io::Error),
    #[error("pushing to {url} failed: {message}")]
    Push { url: String, message: String },
}

pub type Result<T, E = GitError> = std::result::Result<T, E>;

/// An HTTPS token and the user name to send with it. `Debug` hides the token.
#[derive(Clone)]
pub struct Credentials {
    pub username: String,
    pub token: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("token", &"<redacted>")
            .finish()
    }
}

/// A name and email for commits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub name: String,
    pub email: String,
}

impl Identity {
    /// Parses `NAME <EMAIL>`.
    pub fn parse(s: &str) -> Option<Identity> {
        let s = s.trim();
        let open = s.rfind('<')?;
        let rest = s[open + 1..].strip_suffix('>')?;
        let name = s[..open].trim();
        if name.is_empty() || rest.is_empty() || rest.contains(['<', '>']) {
            return None;
        }
        Some(Identity {
            name: name.to_string(),
            email: rest.to_string(),
        })
    }
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} <{}>", self.name, self.email)
    }
}

/// One file of a tree or directory: what git stores for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileEntry {
    pub kind: FileKind,
    pub id: ObjectId,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Blob,
    Executable,
    Link,
}

impl FileKind {
    fn entry_kind(self) -> EntryKind {
        match self {
            FileKind::Blob => EntryKind::Blob,
            FileKind::Executable => EntryKind::BlobExecutable,
            FileKind::Link => EntryKind::Link,
        }
    }
}

/// Files keyed by `/`-separated repository path, sorted.
pub type FileMap = BTreeMap<String, FileEntry>;

/// Whether the URL carries a password in its user-info part.
pub fn url_has_password(url: &str) -> bool {
    match gix::Url::try_from(url) {
        Ok(u) => u.password().is_some(),
        Err(_) => false,
    }
}

/// Whether the URL is fetched over HTTP(S), the only transports a token is for.
pub fn is_http_url(url: &str) -> bool {
    matches!(
        gix::Url::try_from(url).map(|u| u.scheme),
        Ok(gix::url::Scheme::Http | gix::url::Scheme::Https)
    )
}

/// Whether a token sent to `url` would travel in clear text to another
/// machine: plain `http://` to anything but a loopback address.
pub fn is_clear_text_remote(url: &str) -> bool {
    match gix::Url::try_from(url) {
        Ok(u) if u.scheme == gix::url::Scheme::Http => {
            !matches!(u.host(), Some("127.0.0.1" | "localhost" | "::1" | "[::1]"))
        }
        _ => false,
    }
}

/// The bare repository that caches a catalog repository between runs.
pub struct CacheRepo {
    repo: gix::Repository,
    path: PathBuf,
    /// Held for the whole publish: concurrent runs sharing a cache would
    /// otherwise race on its ref locks. An OS lock on `<path>.lock`, which
    /// the kernel releases when the process ends however it ends: gix's
    /// marker file stayed behind a killed run, and every later fetch or
    /// push using the cache waited 600 s, then failed, until someone
    /// removed it (probe 41).
    _lock: std::fs::File,
}

/// How long to wait for another process using the same cache.
const CACHE_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(600);

/// The error and its causes on one line: gix's top-level messages alone
/// ("Transport handshake failed") do not say what to fix.
pub(crate) fn gix_msg(e: impl std::error::Error) -> String {
    // Some causes dump a whole credential context over several lines: the
    // first line says what went wrong.
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

/// Takes the OS lock on `<path>.lock` (created if absent, never removed),
/// waiting up to `wait` for another process to release it.
fn lock_cache(path: &Path, wait: std::time::Duration) -> Result<std::fs::File> {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    let lock_path = PathBuf::from(name);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| GitError::Cache {
            path: path.to_path_buf(),
            message: format!("{}: {e}", lock_path.display()),
        })?;
    let started = std::time::Instant::now();
    let mut pause = std::time::Duration::from_millis(10);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) if started.elapsed() < wait => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_secs(1));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(GitError::CacheLocked {
                    path: path.to_path_buf(),
                    message: format!("still locked after {} s", wait.as_secs()),
                })
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(GitError::Cache {
                    path: path.to_path_buf(),
                    message: format!("cannot lock {}: {e}", lock_path.display()),
                })
            }
        }
    }
}

/// Creates the bare repository at `path` whole or not at all: made beside
/// it and renamed into place. A run killed while `gix::init_bare` wrote
/// left a directory without `HEAD`, which every later run refused
/// ("Refusing to initialize the non-empty directory") until someone
/// removed it (probe 41). Such a leftover (this process holds the lock,
/// and a directory without `HEAD` is no repository) is removed first.
fn init_whole(path: &Path) -> std::result::Result<(), String> {
    let remove = |p: &Path| -> std::result::Result<(), String> {
        match std::fs::symlink_metadata(p) {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(p),
            Ok(_) => std::fs::remove_file(p),
            Err(_) => Ok(()),
        }
        .map_err(|e| format!("cannot remove the unfinished {}: {e}", p.display()))
    };
    let mut name = path.as_os_str().to_owned();
    name.push(".init");
    let fresh = PathBuf::from(name);
    remove(&fresh)?;
    std::fs::create_dir_all(&fresh).map_err(|e| e.to_string())?;
    gix::init_bare(&fresh).map_err(gix_msg)?;
    remove(path)?;
    std::fs::rename(&fresh, path).map_err(|e| e.to_string())
}

impl CacheRepo {
    /// Opens the bare repository at `path`, creating it when absent, and
    /// locks it (an OS lock on `<path>.lock`) until dropped, waiting for
    /// other holders.
    pub fn open_or_init(path: &Path) -> Result<CacheRepo> {
        Self::open_or_init_waiting(path, CACHE_LOCK_WAIT)
    }

    fn open_or_init_waiting(path: &Path, wait: std::time::Duration) -> Result<CacheRepo> {
        let cache_err = |message: String| GitError::Cache {
            path: path.to_path_buf(),
            message,
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| cache_err(e.to_string()))?;
        }
        let lock = lock_cache(path, wait)?;
        if !path.join("HEAD").is_file() {
            init_whole(path).map_err(cache_err)?;
        }
        // Credential helpers from the user's configuration may run (when no
        // token is given), but never a terminal prompt: CI must not hang.
        let options = gix::open::Options::default()
            // A redirect must not carry the token to another host.
            .config_overrides(
                [
                    "gitoxide.credentials.terminalPrompt=false".to_string(),
                    "http.followRedirects=false".to_string(),
                ]
                .into_iter()
                .chain(stall_limits().map(|(k, v)| format!("{k}={v}"))),
            );
        let repo = gix::open_opts(path, options).map_err(|e| cache_err(gix_msg(e)))?;
        Ok(CacheRepo {
            repo,
            path: path.to_path_buf(),
            _lock: lock,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The author from the user's and system git configuration (and
    /// `GIT_AUTHOR_*`), for runs outside any repository.
    pub fn configured_author(&self) -> Option<Identity> {
        author_of(&self.repo)
    }

    /// Fetches `branch` from `url` and returns its tip, or `None` when the
    /// remote has no such branch yet (a new or empty catalog repository).
    pub fn fetch_branch(
        &self,
        url: &str,
        branch: &str,
        credentials: Option<&Credentials>,
    ) -> Result<Option<ObjectId>> {
        let shown = redact_url(url);
        let fetch_err = |message: String| GitError::Fetch {
            url: shown.clone(),
            branch: branch.to_string(),
            message,
        };
        let spec = format!("+refs/heads/{branch}:refs/remotes/origin/{branch}");
        let remote = self
            .repo
            .remote_at(url)
            .map_err(|e| GitError::Url {
                url: shown.clone(),
                // gix quotes the URL it cannot parse (`input="…"`), its
                // password too (re-probe verify23,
                // v-dependency-url-credentials-in-fetch-errors).
                message: gix_msg(e).replace(url, &shown),
            })?
            .with_fetch_tags(gix::remote::fetch::Tags::None)
            .with_refspecs([spec.as_str()], gix::remote::Direction::Fetch)
            .map_err(|e| fetch_err(gix_msg(e)))?;
        let mut connection = remote
            .connect(gix::remote::Direction::Fetch)
            .map_err(|e| fetch_err(gix_msg(e)))?;
        if let Some(c) = credentials.cloned() {
            connection.set_credentials(token_only(c, url));
        }
        let prepare = connection
            .prepare_fetch(gix::progress::Discard, Default::default())
            .map_err(|e| fetch_err(gix_msg(e)))?;
        let wanted = format!("refs/heads/{branch}");
        let tip = prepare
            .ref_map()
            .mappings
            .iter()
            .find(|m| m.remote.as_name() == Some(BStr::new(wanted.as_bytes())))
            .and_then(|m| m.remote.as_id().map(|id| id.to_owned()));
        let Some(tip) = tip else {
            return Ok(None);
        };
        let interrupt = AtomicBool::new(false);
        prepare
            .receive(gix::progress::Discard, &interrupt)
            .map_err(|e| fetch_err(gix_msg(e)))?;
        Ok(Some(tip))
    }

    /// The message of commit `commit` (lossily decoded).
    pub fn commit_message(&self, commit: ObjectId) -> Result<String> {
        let c = self
            .repo
            .find_commit(commit)
            .map_err(|e| obj_err(format!("reading commit {commit}"), e))?;
        let m = c
            .message_raw()
            .map_err(|e| obj_err(format!("reading the message of commit {commit}"), e))?;
        Ok(String::from_utf8_lossy(m).into_owned())
    }

    /// The root tree of commit `commit`.
    pub fn commit_tree(&self, commit: ObjectId) -> Result<ObjectId> {
        let c = self
            .repo
            .find_commit(commit)
            .map_err(|e| obj_err(format!("reading commit {commit}"), e))?;
        c.tree_id()
            .map(|id| id.detach())
            .map_err(|e| obj_err(format!("reading the tree of commit {commit}"), e))
    }

    /// Every file under `prefix` (a `/`-separated path, or the root when
    /// empty) of tree `tree`, keyed by full path.
    pub fn list_tree(&self, tree: ObjectId, prefix: &str) -> Result<FileMap> {
        let mut out = FileMap::new();
        let mut tree_id = tree;
        if !prefix.is_empty() {
            let mut found = None;
            let mut current = tree;
            let parts: Vec<&str> = prefix.split('/').collect();
            for (i, part) in parts.iter().enumerate() {
                let t = self.find_tree(current)?;
                let Some(entry) = t.entries.iter().find(|e| e.filename == part.as_bytes()) else {
                    return Ok(out);
                };
                if i + 1 == parts.len() {
                    found = Some((entry.mode.kind(), entry.oid));
                } else if entry.mode.is_tree() {
                    current = entry.oid;
                } else {
                    return Ok(out);
                }
            }
            match found {
                Some((EntryKind::Tree, id)) => tree_id = id,
                Some((kind, id)) => {
                    if let Some(k) = file_kind(kind) {
                        out.insert(prefix.to_string(), FileEntry { kind: k, id });
                    }
                    return Ok(out);
                }
                None => return Ok(out),
            }
        }
        let mut budget = WalkBudget {
            max_files: crate::limits::checkout_files() as usize,
            components: 0,
            max_components: crate::limits::checkout_path_components(),
            max_tree_bytes: crate::limits::checkout_tree_bytes(),
        };
        self.walk_tree(tree_id, prefix, &mut out, 0, &mut budget)?;
        Ok(out)
    }

    fn find_tree(&self, id: ObjectId) -> Result<gix::objs::Tree> {
        let t = self
            .repo
            .find_tree(id)
            .map_err(|e| obj_err(format!("reading tree {id}"), e))?;
        t.decode()
            .map(|t| t.into())
            .map_err(|e| obj_err(format!("decoding tree {id}"), e))
    }

    /// At most 256 levels, 200,000 files (`STRATA_CHECKOUT_FILES`), and
    /// the review checkout's bounds on path components (files and
    /// directories) and on one tree object's size: the tree may be a pull
    /// request's (each level was a frame: 1,200 levels overflowed a debug
    /// build's stack; re-probe 12), and three trees of 1,000 entries each
    /// naming the next (28 KiB of objects) made 10^9 empty directories to
    /// walk, holding `strata fetch` for ever (probe 44).
    fn walk_tree(
        &self,
        id: ObjectId,
        prefix: &str,
        out: &mut FileMap,
        depth: usize,
        budget: &mut WalkBudget,
    ) -> Result<()> {
        let max_files = budget.max_files;
        let limit = |message: String| GitError::Path {
            path: PathBuf::from(prefix.chars().take(120).collect::<String>()),
            message,
        };
        if depth >= 256 {
            return Err(limit(
                "the tree nests directories more than 256 levels deep".into(),
            ));
        }
        if let Ok(h) = self.repo.find_header(id) {
            if h.size() > budget.max_tree_bytes {
                return Err(limit(format!(
                    "the directory is a git tree of {} bytes: a fetched tree may hold at most {} bytes in one directory (STRATA_CHECKOUT_TREE_BYTES)",
                    h.size(),
                    budget.max_tree_bytes
                )));
            }
        }
        let mut seen = std::collections::HashSet::new();
        let at = if prefix.is_empty() {
            "at its root".to_string()
        } else {
            format!("in `{}`", crate::diagnostics::escape_controls(prefix))
        };
        let unsafe_name = |what: String| {
            GitError::Path {
            path: PathBuf::from("the fetched tree"),
            message: format!(
                "holds {what} {at}: nothing was written from it (git refuses such a tree: its history was crafted)"
            ),
        }
        };
        for entry in self.find_tree(id)?.entries {
            let name = tree_entry_name(entry.filename.as_ref()).map_err(unsafe_name)?;
            // Two entries of one name (a link `a` and a directory `a`):
            // the directory's files were written through the link.
            if !seen.insert(name.clone()) {
                return Err(unsafe_name(format!("the name {name:?} twice")));
            }
            let path = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            budget.components += depth as u64 + 1;
            if budget.components > budget.max_components {
                return Err(GitError::Path {
                    path: PathBuf::from(path.chars().take(120).collect::<String>()),
                    message: format!(
                        "the tree's paths (files and directories) hold more than {} path components in all (STRATA_CHECKOUT_PATH_COMPONENTS)",
                        budget.max_components
                    ),
                });
            }
            let kind = entry.mode.kind();
            if kind == EntryKind::Tree {
                self.walk_tree(entry.oid, &path, out, depth + 1, budget)?;
            } else if let Some(k) = file_kind(kind) {
                if out.len() >= max_files {
                    return Err(limit(format!(
                        "the tree holds more than {max_files} files (STRATA_CHECKOUT_FILES)"
                    )));
                }
                out.insert(
                    path,
                    FileEntry {
                        kind: k,
                        id: entry.oid,
                    },
                );
            }
        }
        Ok(())
    }

    /// The blob `id` (the file `path` of a fetched tree), refused when its
    /// header says it is larger than `$STRATA_CHECKOUT_FILE_BYTES` (256 MiB),
    /// before it is read: a blob is read whole, and one of 2 GB of zeros
    /// packs into 2 MB (a fetch took 2.1 GB of memory; probe 27).
    pub fn read_blob(
        &self,
        id: ObjectId,
        path: &str,
    ) -> std::result::Result<gix::Blob<'_>, String> {
        let max = crate::limits::checkout_file_bytes();
        let reading = |e: &dyn std::fmt::Display| format!("reading blob {id} ({path}): {e}");
        let size = self.repo.find_header(id).map_err(|e| reading(&e))?.size();
        if size > max {
            return Err(format!(
                "`{path}` is {size} bytes: a fetched file may hold at most {max} bytes (STRATA_CHECKOUT_FILE_BYTES)"
            ));
        }
        self.repo.find_blob(id).map_err(|e| reading(&e))
    }

    /// [`CacheRepo::read_blob`] for a file a fetch writes (`strata fetch`,
    /// Commodore components and packages, Kapitan git dependencies,
    /// jsonnet-bundler sources), its size counted against the bytes all
    /// the fetches of one run write, `$STRATA_MAX_FETCH_BYTES` (4 GiB, a
    /// review's checkout of a revision): one blob of zeros under many names
    /// packs to almost nothing, and 50 names of a 20 MB blob (a 26 kB
    /// pack) wrote 1 GB in 5 s; at the per-file and file-count limits that
    /// was terabytes (probe 40).
    pub fn read_fetched_blob(
        &self,
        id: ObjectId,
        path: &str,
    ) -> std::result::Result<gix::Blob<'_>, String> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static FETCHED: AtomicU64 = AtomicU64::new(0);
        let max = crate::limits::max_fetch_bytes();
        let size = self
            .repo
            .find_header(id)
            .map_err(|e| format!("reading blob {id} ({path}): {e}"))?
            .size();
        let total = FETCHED
            .fetch_add(size, Ordering::Relaxed)
            .saturating_add(size);
        if total > max {
            return Err(format!(
                "`{path}` ({size} bytes): the files fetched in this run hold more than {max} bytes (a blob repeated under many names?): fetch less, or raise STRATA_MAX_FETCH_BYTES"
            ));
        }
        self.read_blob(id, path)
    }

    /// Writes the blobs of `files` below `dir` (a symbolic link becomes a
    /// small file holding its target), so a tree can be compared with the
    /// tools that read directories.
    pub fn checkout_files(&self, files: &FileMap, dir: &Path) -> Result<()> {
        for (path, entry) in files {
            let dest = dir.join(path);
            let io = |source| GitError::Io {
                path: dest.clone(),
                source,
            };
            if let Some(parent) = dest.parent() {
                std::fs::create_dir_all(parent).map_err(io)?;
            }
            let blob = self
                .read_blob(entry.id, path)
                .map_err(|message| GitError::Path {
                    path: dest.clone(),
                    message,
                })?;
            std::fs::write(&dest, &blob.data).map_err(io)?;
        }
        Ok(())
    }

    /// Writes every file below `dir` as a blob and returns them keyed by
    /// `prefix/relative/path`. Directories named `.git` are skipped.
    pub fn write_dir(&self, dir: &Path, prefix: &str) -> Result<FileMap> {
        let mut out = FileMap::new();
        let meta = std::fs::symlink_metadata(dir).map_err(|source| GitError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        if meta.is_dir() {
            self.write_dir_inner(dir, prefix, &mut out)?;
        } else {
            let entry = self.write_file(dir, &meta)?;
            out.insert(prefix.to_string(), entry);
        }
        Ok(out)
    }

    fn write_dir_inner(&self, dir: &Path, prefix: &str, out: &mut FileMap) -> Result<()> {
        let io = |source| GitError::Io {
            path: dir.to_path_buf(),
            source,
        };
        let mut entries = Vec::new();
        for e in std::fs::read_dir(dir).map_err(io)? {
            entries.push(e.map_err(io)?);
        }
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let path = e.path();
            let Some(name) = e.file_name().to_str().map(str::to_string) else {
                return Err(GitError::Path {
                    path,
                    message: "file name is not valid UTF-8".into(),
                });
            };
            if name == ".git" {
                continue;
            }
            let rel = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            let meta = std::fs::symlink_metadata(&path).map_err(|source| GitError::Io {
                path: path.clone(),
                source,
            })?;
            if meta.is_dir() {
                self.write_dir_inner(&path, &rel, out)?;
            } else {
                let entry = self.write_file(&path, &meta)?;
                out.insert(rel, entry);
            }
        }
        Ok(())
    }

    fn write_file(&self, path: &Path, meta: &std::fs::Metadata) -> Result<FileEntry> {
        let io = |source| GitError::Io {
            path: path.to_path_buf(),
            source,
        };
        let (kind, data) = if meta.file_type().is_symlink() {
            let target = std::fs::read_link(path).map_err(io)?;
            let Some(t) = target.to_str() else {
                return Err(GitError::Path {
                    path: path.to_path_buf(),
                    message: "symlink target is not valid UTF-8".into(),
                });
            };
            (FileKind::Link, t.as_bytes().to_vec())
        } else if meta.is_file() {
            (
                if is_executable(meta) {
                    FileKind::Executable
                } else {
                    FileKind::Blob
                },
                std::fs::read(path).map_err(io)?,
            )
        } else {
            return Err(GitError::Path {
                path: path.to_path_buf(),
                message: "not a regular file, directory or symlink".into(),
            });
        };
        let id = self
            .repo
            .write_blob(&data)
            .map_err(|e| obj_err(format!("writing {}", path.display()), e))?
            .detach();
        Ok(FileEntry { kind, id })
    }

    /// Builds a tree from `base` (or the empty tree) with every path in
    /// `remove` deleted and then every file of `files` written.
    pub fn build_tree(
        &self,
        base: Option<ObjectId>,
        remove: &[String],
        files: &FileMap,
    ) -> Result<ObjectId> {
        let base = base.unwrap_or_else(|| ObjectId::empty_tree(self.repo.object_hash()));
        let mut editor = self
            .repo
            .edit_tree(base)
            .map_err(|e| obj_err("opening the base tree".into(), e))?;
        for path in remove {
            editor
                .remove(path.as_str())
                .map_err(|e| obj_err(format!("removing {path}"), e))?;
        }
        for (path, entry) in files {
            editor
                .upsert(path.as_str(), entry.kind.entry_kind(), entry.id)
                .map_err(|e| obj_err(format!("adding {path}"), e))?;
        }
        editor
            .write()
            .map(|id| id.detach())
            .map_err(|e| obj_err("writing the tree".into(), e))
    }

    /// Writes a commit object (no reference is updated: the push does that
    /// on the remote).
    pub fn write_commit(
        &self,
        tree: ObjectId,
        parent: Option<ObjectId>,
        author: &Identity,
        committer: &Identity,
        message: &str,
    ) -> Result<ObjectId> {
        let now = gix::date::Time::now_local_or_utc();
        let sig = |i: &Identity| gix::actor::Signature {
            name: i.name.as_str().into(),
            email: i.email.as_str().into(),
            time: now,
        };
        let commit = gix::objs::Commit {
            tree,
            parents: parent.into_iter().collect(),
            author: sig(author),
            committer: sig(committer),
            encoding: None,
            message: message.into(),
            extra_headers: Vec::new(),
        };
        self.repo
            .write_object(&commit)
            .map(|id| id.detach())
            .map_err(|e| obj_err("writing the commit".into(), e))
    }
}

fn obj_err(context: String, e: impl std::fmt::Display) -> GitError {
    GitError::Object {
        context,
        message: e.to_string(),
    }
}

/// A fetched tree entry's name as one path component. Git never writes
/// the refused names, but a crafted tree (any remote a dependency names)
/// can hold them: `..` or `../../x` were joined to the checkout directory
/// and written outside it, and `.git` (any case) made the checkout a
/// repository of the remote's choosing, whose `config` git runs commands
/// from (`core.fsmonitor`) (probe 36, fetched-tree-names-write-outside).
fn tree_entry_name(name: &BStr) -> std::result::Result<String, String> {
    let bytes: &[u8] = name.as_ref();
    let text = name.to_str_lossy();
    if text.eq_ignore_ascii_case(".git")
        || bytes.is_empty()
        || bytes == b"."
        || bytes == b".."
        || bytes.contains(&b'/')
        || bytes.contains(&0)
        || (cfg!(windows) && (bytes.contains(&b'\\') || bytes.contains(&b':')))
    {
        return Err(format!("an unsafe file name {text:?}"));
    }
    Ok(text.into_owned())
}

fn file_kind(kind: EntryKind) -> Option<FileKind> {
    match kind {
        EntryKind::Blob => Some(FileKind::Blob),
        EntryKind::BlobExecutable => Some(FileKind::Executable),
        EntryKind::Link => Some(FileKind::Link),
        // Submodules are not content a catalog carries.
        EntryKind::Tree | EntryKind::Commit => None,
    }
}

#[cfg(unix)]
fn is_executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_meta: &std::fs::Metadata) -> bool {
    false
}

/// The local repository containing `dir`: its HEAD commit and a name for it
/// (the `origin` URL without password, or the work tree path).
pub fn local_head(dir: &Path) -> Option<(String, String)> {
    let repo = gix::discover(dir).ok()?;
    let head = repo.head_id().ok()?.detach().to_string();
    let name = repo
        .find_remote("origin")
        .ok()
        .and_then(|r| {
            r.url(gix::remote::Direction::Fetch)
                .map(|u| redact_url(&u.to_bstring().to_string()))
        })
        .or_else(|| repo.workdir().map(|p| p.display().to_string()))
        .unwrap_or_else(|| repo.path().display().to_string());
    Some((name, head))
}

/// The message of the HEAD commit of the repository containing `dir`, if
/// any (a catalog checkout's: what it was published from).
pub fn head_message(dir: &Path) -> Option<String> {
    let repo = gix::discover(dir).ok()?;
    let commit = repo.head_commit().ok()?;
    let m = commit.message_raw().ok()?;
    Some(String::from_utf8_lossy(m).into_owned())
}

/// The author configured for the repository containing `dir` (its config,
/// the user's and the system's, and `GIT_AUTHOR_*`), if any.
pub fn configured_author(dir: &Path) -> Option<Identity> {
    author_of(&gix::discover(dir).ok()?)
}

fn author_of(repo: &gix::Repository) -> Option<Identity> {
    let sig = repo.author()?.ok()?;
    let name = sig.name.to_str().ok()?.trim().to_string();
    let email = sig.email.to_str().ok()?.trim().to_string();
    if name.is_empty() || email.is_empty() {
        return None;
    }
    Some(Identity { name, email })
}

/// A credential callback that answers with the token and nothing else:
/// configured helpers are not asked and nothing is stored (`Store` and
/// `Erase` are ignored).
/// `host[:port]` of a URL, as git's credential protocol names it.
pub(crate) fn url_host(url: &str) -> Option<String> {
    let u = gix::Url::try_from(url).ok()?;
    let host = u.host()?.to_string();
    Some(match u.port {
        Some(p) => format!("{host}:{p}"),
        None => host,
    })
}

/// Whether `url` is on the GitHub server the job runs against (the host of
/// `GITHUB_SERVER_URL`, else `github.com`, with its port): the one host a
/// job's token is for. A pull request's fetch sends the token nowhere else:
/// it names the hosts, and one of its own got the token (issue 19).
pub fn is_github_host(url: &str) -> bool {
    let server = std::env::var("GITHUB_SERVER_URL")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "https://github.com".into());
    same_host(url, &server)
}

/// Whether two URLs name the same host (and port), case-blind.
pub fn same_host(a: &str, b: &str) -> bool {
    let lower = |h: Option<String>| h.map(|h| h.to_ascii_lowercase());
    let want = lower(url_host(b));
    want.is_some() && lower(url_host(a)) == want
}

/// A credential callback that hands the token only to `url`'s host: after
/// a redirect to another host it answers nothing, so the token stays home.
pub(crate) fn token_only(
    c: Credentials,
    url: &str,
) -> impl FnMut(
    gix::credentials::helper::Action,
) -> gix::Result<Option<gix::credentials::protocol::Outcome>> {
    let expected = url_host(url);
    move |action| match action {
        gix::credentials::helper::Action::Get(ctx) => {
            let asked = ctx.host.clone().or_else(|| {
                ctx.url
                    .as_ref()
                    .and_then(|u| url_host(&String::from_utf8_lossy(u)))
            });
            if asked.is_none() || asked != expected {
                return Ok(None);
            }
            Ok(Some(gix::credentials::protocol::Outcome {
                identity: gix::sec::identity::Account {
                    username: c.username.clone(),
                    password: c.token.clone(),
                    oauth_refresh_token: None,
                },
                next: ctx.into(),
            }))
        }
        _ => Ok(None),
    }
}

/// What one fetched tree's walk may still list.
struct WalkBudget {
    max_files: usize,
    components: u64,
    max_components: u64,
    max_tree_bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fetched_tree_names_are_one_plain_component() {
        let name = |n: &str| tree_entry_name(n.as_bytes().as_bstr());
        for bad in ["", ".", "..", "a/b", "../x", ".git", ".GIT", "a\0b"] {
            assert!(name(bad).is_err(), "{bad:?}");
        }
        for good in ["a", ".gitignore", ".github", "..a", "a..", "a\\b", "x y"] {
            assert_eq!(name(good).unwrap(), good);
        }
    }

    #[test]
    fn parses_identities() {
        assert_eq!(
            Identity::parse("Jane Doe <jane@example.com>"),
            Some(Identity {
                name: "Jane Doe".into(),
                email: "jane@example.com".into()
            })
        );
        assert_eq!(Identity::parse("jane@example.com"), None);
        assert_eq!(Identity::parse("<jane@example.com>"), None);
        assert_eq!(Identity::parse("Jane <>"), None);
    }

    /// Re-probe verify23 (v-dependency-url-credentials-in-fetch-errors):
    /// gix's error for a URL it cannot parse quoted it whole, so a password
    /// holding a `/` (`user:to/ken@host`) was in the job's log.
    #[test]
    fn an_unparseable_urls_password_is_not_in_the_error() {
        let dir = tempfile::tempdir().unwrap();
        let repo = CacheRepo::open_or_init(&dir.path().join("c")).unwrap();
        let url = "http://user:v23Se/cret@127.0.0.1:9/r.git";
        let e = repo
            .fetch_branch(url, "main", None)
            .unwrap_err()
            .to_string();
        assert!(!e.contains("v23Se"), "{e}");
        assert!(e.contains("http://***@127.0.0.1:9/r.git"), "{e}");
        let e = repo.fetch_mirror(url, None).unwrap_err().to_string();
        assert!(!e.contains("v23Se"), "{e}");
    }

    #[test]
    fn redacts_passwords_only() {
        assert_eq!(
            redact_url("https://user:s3cret@example.com/a.git"),
            "https://***:***@example.com/a.git"
        );
        assert_eq!(
            redact_url("https://ghp_tok3n@github.com/o/r.git"),
            "https://***@github.com/o/r.git"
        );
        assert_eq!(
            redact_url("ssh://git@github.com/o/r.git"),
            "ssh://git@github.com/o/r.git"
        );
        assert_eq!(
            redact_url("git@github.com:o/r.git"),
            "git@github.com:o/r.git"
        );
        assert!(!redact_url("https://user:s3cret@example.com/a.git").contains("s3cret"));
        assert_eq!(
            redact_url("https://example.com/a.git"),
            "https://example.com/a.git"
        );
        assert!(url_has_password("https://u:p@h/x"));
        assert!(!url_has_password("https://u@h/x"));
        assert!(is_http_url("https://h/x"));
        assert!(is_clear_text_remote("http://example.com/x"));
        assert!(!is_clear_text_remote("http://127.0.0.1:8080/x"));
        assert!(!is_clear_text_remote("https://example.com/x"));
        assert!(!is_http_url("file:///tmp/x"));
        assert!(!is_http_url("git@github.com:o/r.git"));
    }

    #[test]
    fn debug_hides_the_token() {
        let c = Credentials {
            username: "x".into(),
            token: "s3cret".into(),
        };
        assert!(!format!("{c:?}").contains("s3cret"));
    }

    #[test]
    fn one_process_at_a_time_per_cache() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("cache");
        let first = CacheRepo::open_or_init(&path).unwrap();
        let wait = std::time::Duration::from_millis(50);
        let err = CacheRepo::open_or_init_waiting(&path, wait).err().unwrap();
        assert!(matches!(err, GitError::CacheLocked { .. }), "{err}");
        drop(first);
        assert!(CacheRepo::open_or_init_waiting(&path, wait).is_ok());
    }

    /// Probe 41: a run killed while `gix::init_bare` wrote the cache left a
    /// directory without `HEAD`, and every later run refused it.
    #[test]
    fn a_cache_repository_left_unfinished_is_made_again() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("cache");
        std::fs::create_dir_all(path.join("hooks")).unwrap();
        std::fs::write(path.join("description"), "x").unwrap();
        let repo = CacheRepo::open_or_init(&path).unwrap();
        assert!(path.join("HEAD").is_file());
        assert!(!tmp.path().join("cache.init").exists());
        drop(repo);
        // A whole one is kept as it is.
        std::fs::write(path.join("keep"), "x").unwrap();
        CacheRepo::open_or_init(&path).unwrap();
        assert!(path.join("keep").is_file());
    }

    /// Probe 41: a run killed while it held the cache (SIGKILL, a runner's
    /// cancel, `ulimit -f`) left gix's `<path>.lock` marker, and every later
    /// run waited 600 s for it, then failed.
    #[test]
    fn a_lock_file_left_by_a_killed_run_does_not_block() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("cache");
        std::fs::write(tmp.path().join("cache.lock"), "").unwrap();
        let wait = std::time::Duration::from_millis(50);
        assert!(CacheRepo::open_or_init_waiting(&path, wait).is_ok());
    }

    #[test]
    fn builds_trees_and_lists_them_back() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = CacheRepo::open_or_init(&tmp.path().join("cache")).unwrap();
        let src = tmp.path().join("src");
        std::fs::create_dir_all(src.join("a/b")).unwrap();
        std::fs::write(src.join("a/b/c.yaml"), "c").unwrap();
        std::fs::write(src.join("a/d.yaml"), "d").unwrap();
        std::fs::create_dir_all(src.join("keep")).unwrap();
        std::fs::write(src.join("keep/k"), "k").unwrap();
        let files = repo.write_dir(&src, "").unwrap();
        assert_eq!(
            files.keys().collect::<Vec<_>>(),
            ["a/b/c.yaml", "a/d.yaml", "keep/k"]
        );
        let tree = repo.build_tree(None, &[], &files).unwrap();
        assert_eq!(repo.list_tree(tree, "").unwrap(), files);
        assert_eq!(repo.list_tree(tree, "a/b").unwrap().len(), 1);
        assert!(repo.list_tree(tree, "missing").unwrap().is_empty());

        // Replacing `a` with one file drops the old files and empty trees.
        let mut new = FileMap::new();
        new.insert("a/x".into(), files["keep/k"]);
        let tree2 = repo.build_tree(Some(tree), &["a".into()], &new).unwrap();
        assert_eq!(
            repo.list_tree(tree2, "")
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["a/x", "keep/k"]
        );
        // Same content, same tree id: how empty commits are avoided.
        let tree3 = repo.build_tree(Some(tree2), &["a".into()], &new).unwrap();
        assert_eq!(tree2, tree3);
    }
}
