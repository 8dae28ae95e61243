//! Publishing a compiled catalog: replace the managed content of a catalog
//! repository's branch with a directory, commit when something changed, and
//! push, re-applying the catalog on the new tip when another pipeline pushed
//! first.
//!
//! Entry point for every caller (`strata push`, and later `compile --push`
//! and `catalog compile --push`): [`Publisher::new`] validates the catalog
//! directory before anything touches the remote, [`Publisher::plan`] fetches
//! and computes the change set and commit, [`Publisher::publish`] pushes it.

use crate::diagnostics::{Diagnostic, ToDiagnostic};
use crate::git::{self, CacheRepo, Credentials, FileMap, GitError, Identity, PushOutcome};
use gix::ObjectId;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How the catalog directory maps onto the catalog repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Kapitan: every top-level entry of the compiled directory (one per
    /// target) is managed and replaced as a whole.
    Kapitan,
    /// Commodore: `manifests/` and `refs/` are managed; the rest of the
    /// repository (README, CI files) is left alone.
    Commodore,
}

/// Where the compiled catalog came from, for the commit message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceInfo {
    pub repository: Option<String>,
    pub commit: Option<String>,
}

impl SourceInfo {
    /// `GITHUB_REPOSITORY`/`GITHUB_SHA` when set (GitHub Actions), else the
    /// repository containing `dir` and its HEAD.
    pub fn detect(env: &dyn Fn(&str) -> Option<String>, dir: &Path) -> SourceInfo {
        let non_empty = |k: &str| env(k).filter(|v| !v.trim().is_empty());
        if let (Some(repo), Some(sha)) = (non_empty("GITHUB_REPOSITORY"), non_empty("GITHUB_SHA")) {
            let server =
                non_empty("GITHUB_SERVER_URL").unwrap_or_else(|| "https://github.com".into());
            return SourceInfo {
                repository: Some(format!("{}/{repo}", server.trim_end_matches('/'))),
                commit: Some(sha),
            };
        }
        match git::local_head(dir) {
            Some((repo, head)) => SourceInfo {
                repository: Some(repo),
                commit: Some(head),
            },
            None => SourceInfo::default(),
        }
    }
}

/// The identity GitHub Actions commits as.
pub fn github_actions_identity() -> Identity {
    Identity {
        name: "github-actions[bot]".into(),
        email: "41898282+github-actions[bot]@users.noreply.github.com".into(),
    }
}

/// Everything a publish needs.
#[derive(Debug, Clone)]
pub struct Request {
    pub catalog_dir: PathBuf,
    pub repo_url: String,
    pub branch: String,
    pub layout: Layout,
    /// Repository paths to manage; empty means the layout's default.
    pub managed: Vec<String>,
    /// Replaces the first line of the generated commit message.
    pub message: Option<String>,
    /// `None`: the user's git configuration, read when the cache opens.
    pub author: Option<Identity>,
    pub source: SourceInfo,
    pub credentials: Option<Credentials>,
    /// The bare repository caching the catalog repository between runs.
    pub cache_dir: PathBuf,
    /// Push attempts before giving up when the branch keeps moving.
    pub max_attempts: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ChangeKind {
    Added,
    Changed,
    Removed,
}

impl ChangeKind {
    /// One-letter status as `git status --short` prints it.
    pub fn letter(self) -> char {
        match self {
            ChangeKind::Added => 'A',
            ChangeKind::Changed => 'M',
            ChangeKind::Removed => 'D',
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub path: String,
    pub kind: ChangeKind,
}

/// Change counts of one target (Kapitan) or component directory (Commodore).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupSummary {
    pub group: String,
    pub added: usize,
    pub changed: usize,
    pub removed: usize,
}

/// What a push would do against the branch as last fetched.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The branch tip the plan applies to; `None` for a new branch.
    pub tip: Option<ObjectId>,
    /// Changed files, sorted by path.
    pub changes: Vec<FileChange>,
    pub summary: Vec<GroupSummary>,
    pub message: String,
    /// The commit to push; `None` when nothing changed.
    pub commit: Option<ObjectId>,
    /// The managed files at `tip`, which the plan replaces.
    pub old_files: FileMap,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.commit.is_none()
    }
}

/// How a publish ended.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The plan that was pushed (or found empty), after any re-applies.
    pub plan: Plan,
    /// Push attempts made (0 when nothing had to be pushed).
    pub attempts: usize,
    /// `true` when the commit landed on the branch.
    pub pushed: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error("catalog directory {} does not exist", path.display())]
    CatalogMissing { path: PathBuf },
    #[error("catalog path {} is not a directory", path.display())]
    CatalogNotDir { path: PathBuf },
    #[error("catalog directory {} is empty: nothing was compiled", path.display())]
    CatalogEmpty { path: PathBuf },
    #[error("{} is not a Commodore catalog: it has no manifests/ directory", path.display())]
    NotCommodore { path: PathBuf },
    #[error("invalid managed path `{path}`: {reason}")]
    BadManaged { path: String, reason: String },
    #[error("the catalog repository URL {url} contains a password")]
    UrlWithPassword { url: String },
    #[error("refusing to send a token in clear text to {url}")]
    ClearTextToken { url: String },
    #[error("no commit author configured")]
    NoAuthor,
    #[error("invalid branch name `{0}`")]
    BadBranch(String),
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("push to {url} (branch `{branch}`) still rejected after {attempts} attempts: {last}")]
    RetriesExhausted {
        url: String,
        branch: String,
        attempts: usize,
        last: String,
    },
}

impl ToDiagnostic for PublishError {
    fn to_diagnostic(&self) -> Diagnostic {
        let d = Diagnostic::error(self.to_string());
        match self {
            PublishError::CatalogMissing { path }
            | PublishError::CatalogNotDir { path }
            | PublishError::CatalogEmpty { path } => d
                .with_file(path)
                .with_hint("compile the catalog first; nothing was pushed"),
            PublishError::NotCommodore { path } => d
                .with_file(path)
                .with_hint("pass the directory Commodore compiled into (it holds manifests/ and refs/), or drop --layout commodore"),
            PublishError::ClearTextToken { .. } => {
                d.with_hint("use an https:// URL (plain http:// is only allowed to 127.0.0.1/localhost)")
            }
            PublishError::Git(GitError::CacheLocked { path, .. }) => d.with_hint(format!(
                "another strata process holds the lock on {}.lock (a push or fetch still running with the same cache): wait for it, or give this run another cache directory",
                path.display()
            )),
            PublishError::NoAuthor => d.with_hint(
                "pass --author \"NAME <EMAIL>\" or set git config user.name and user.email",
            ),
            PublishError::BadManaged { .. } => d.with_hint(
                "--managed takes a path relative to the repository root, like `prod` or `manifests`",
            ),
            PublishError::UrlWithPassword { .. } => d.with_hint(
                "remove the password from the URL and put the token in GITHUB_TOKEN or the variable named by --token-env",
            ),
            PublishError::RetriesExhausted { .. } => d.with_hint(
                "other pipelines keep pushing to this branch; run again, or raise --max-attempts",
            ),
            PublishError::Git(GitError::Push { .. } | GitError::Fetch { .. }) => d.with_hint(
                "check the URL, and for https:// that a token is given (GITHUB_TOKEN or --token-env VAR) that may read and write the repository",
            ),
            _ => d,
        }
    }
}

pub type Result<T, E = PublishError> = std::result::Result<T, E>;

/// A validated catalog with its files written into the cache repository.
pub struct Publisher {
    req: Request,
    author: Identity,
    cache: CacheRepo,
    managed: Vec<String>,
    files: FileMap,
    unmanaged: Vec<String>,
}

impl Publisher {
    /// Checks the catalog directory and the request, then writes the
    /// catalog's files into the cache repository. Nothing remote happens here,
    /// so an invalid catalog never reaches the repository.
    pub fn new(req: Request) -> Result<Publisher> {
        if git::url_has_password(&req.repo_url) {
            return Err(PublishError::UrlWithPassword {
                url: git::redact_url(&req.repo_url),
            });
        }
        if req.credentials.is_some() && git::is_clear_text_remote(&req.repo_url) {
            return Err(PublishError::ClearTextToken {
                url: git::redact_url(&req.repo_url),
            });
        }
        validate_branch(&req.branch)?;
        let top = top_level_entries(&req.catalog_dir)?;
        let managed = managed_paths(&req, &top)?;
        let unmanaged = top
            .iter()
            .filter(|t| {
                !managed
                    .iter()
                    .any(|m| m == *t || m.split('/').next() == Some(t))
            })
            .cloned()
            .collect();
        let cache = CacheRepo::open_or_init(&req.cache_dir)?;
        let author = match &req.author {
            Some(a) => a.clone(),
            None => cache.configured_author().ok_or(PublishError::NoAuthor)?,
        };
        let mut files = FileMap::new();
        for m in &managed {
            let path = req.catalog_dir.join(m);
            if std::fs::symlink_metadata(&path).is_ok() {
                files.extend(cache.write_dir(&path, m)?);
            }
        }
        Ok(Publisher {
            req,
            author,
            cache,
            managed,
            files,
            unmanaged,
        })
    }

    /// Writes the managed files as the branch holds them (`old_dir`) and as
    /// the publish would leave them (`new_dir`), for a reviewable diff.
    pub fn checkout_sides(&self, plan: &Plan, old_dir: &Path, new_dir: &Path) -> Result<()> {
        self.cache.checkout_files(&plan.old_files, old_dir)?;
        self.cache.checkout_files(&self.files, new_dir)?;
        Ok(())
    }

    /// The source commit the catalog at the plan's tip was published from
    /// (its message's `Source commit:` line, as [`commit_message`] writes
    /// it), if any.
    pub fn tip_source_commit(&self, plan: &Plan) -> Option<String> {
        let message = self.cache.commit_message(plan.tip?).ok()?;
        source_commit(&message)
    }

    /// The repository paths this publish replaces.
    pub fn managed(&self) -> &[String] {
        &self.managed
    }

    /// Top-level entries of the catalog directory that no managed path
    /// covers; they are not published.
    pub fn unmanaged(&self) -> &[String] {
        &self.unmanaged
    }

    pub fn request(&self) -> &Request {
        &self.req
    }

    /// Fetches the branch and computes what publishing would change, writing
    /// the commit (not pushing it) when something did.
    pub fn plan(&self) -> Result<Plan> {
        let tip = self.cache.fetch_branch(
            &self.req.repo_url,
            &self.req.branch,
            self.req.credentials.as_ref(),
        )?;
        let base_tree = match tip {
            Some(t) => Some(self.cache.commit_tree(t)?),
            None => None,
        };
        let mut old = FileMap::new();
        if let Some(tree) = base_tree {
            for m in &self.managed {
                old.extend(self.cache.list_tree(tree, m)?);
            }
        }
        let changes = diff(&old, &self.files);
        let summary = summarize(&changes, self.req.layout);
        let message = commit_message(&self.req, &summary, changes.len());
        let commit = if changes.is_empty() {
            None
        } else {
            let tree = self
                .cache
                .build_tree(base_tree, &self.managed, &self.files)?;
            if Some(tree) == base_tree {
                None
            } else {
                Some(
                    self.cache
                        .write_commit(tree, tip, &self.author, &self.author, &message)?,
                )
            }
        };
        Ok(Plan {
            tip,
            changes,
            summary,
            message,
            commit,
            old_files: old,
        })
    }

    /// Pushes `plan`; when the branch moved meanwhile, fetches, re-applies
    /// the catalog on the new tip and tries again, up to `max_attempts`.
    pub fn publish(&self, mut plan: Plan) -> Result<Outcome> {
        let max = self.req.max_attempts.max(1);
        let mut attempts = 0;
        loop {
            let Some(commit) = plan.commit else {
                return Ok(Outcome {
                    plan,
                    attempts,
                    pushed: false,
                });
            };
            attempts += 1;
            match git::push(
                self.cache.path(),
                &self.req.repo_url,
                commit,
                &self.req.branch,
                self.req.credentials.as_ref(),
            )? {
                PushOutcome::Pushed => {
                    return Ok(Outcome {
                        plan,
                        attempts,
                        pushed: true,
                    })
                }
                PushOutcome::Stale { message } => {
                    if attempts >= max {
                        return Err(PublishError::RetriesExhausted {
                            url: git::redact_url(&self.req.repo_url),
                            branch: self.req.branch.clone(),
                            attempts,
                            last: message,
                        });
                    }
                    std::thread::sleep(backoff(attempts));
                    plan = self.plan()?;
                }
            }
        }
    }
}

/// Grows with each attempt, with jitter so racing pipelines drift apart.
fn backoff(attempt: usize) -> Duration {
    let base = 100u64 << attempt.min(4);
    let jitter = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::from(d.subsec_nanos()) % 100)
        .unwrap_or(0)
        + u64::from(std::process::id() % 50);
    Duration::from_millis(base + jitter)
}

fn validate_branch(branch: &str) -> Result<()> {
    let ok = !branch.is_empty()
        && gix::validate::reference::name_partial(branch.into()).is_ok()
        && !branch.starts_with('-');
    if ok {
        Ok(())
    } else {
        Err(PublishError::BadBranch(branch.to_string()))
    }
}

fn top_level_entries(dir: &Path) -> Result<Vec<String>> {
    let meta = match std::fs::metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(PublishError::CatalogMissing {
                path: dir.to_path_buf(),
            })
        }
        Err(source) => {
            return Err(GitError::Io {
                path: dir.to_path_buf(),
                source,
            }
            .into())
        }
    };
    if !meta.is_dir() {
        return Err(PublishError::CatalogNotDir {
            path: dir.to_path_buf(),
        });
    }
    let io = |source| GitError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).map_err(io)? {
        let e = e.map_err(io)?;
        let name = e.file_name().to_string_lossy().into_owned();
        if name != ".git" {
            out.push(name);
        }
    }
    out.sort();
    if out.is_empty() {
        return Err(PublishError::CatalogEmpty {
            path: dir.to_path_buf(),
        });
    }
    Ok(out)
}

fn managed_paths(req: &Request, top: &[String]) -> Result<Vec<String>> {
    let mut managed: Vec<String> = if !req.managed.is_empty() {
        req.managed
            .iter()
            .map(|m| normalize_managed(m))
            .collect::<Result<_>>()?
    } else {
        match req.layout {
            Layout::Kapitan => top.to_vec(),
            Layout::Commodore => vec!["manifests".into(), "refs".into()],
        }
    };
    if req.layout == Layout::Commodore && !req.catalog_dir.join("manifests").is_dir() {
        return Err(PublishError::NotCommodore {
            path: req.catalog_dir.clone(),
        });
    }
    managed.sort();
    managed.dedup();
    // A path inside another managed path is already covered.
    let all = managed.clone();
    managed.retain(|m| {
        !all.iter()
            .any(|o| o != m && m.starts_with(o.as_str()) && m.as_bytes()[o.len()] == b'/')
    });
    Ok(managed)
}

fn normalize_managed(path: &str) -> Result<String> {
    let bad = |reason: &str| PublishError::BadManaged {
        path: path.to_string(),
        reason: reason.to_string(),
    };
    let trimmed = path.trim_end_matches('/');
    let trimmed = trimmed.strip_prefix("./").unwrap_or(trimmed);
    if trimmed.is_empty() || trimmed == "." {
        return Err(bad("the repository root cannot be managed as a whole"));
    }
    if trimmed.starts_with('/') || trimmed.contains('\\') {
        return Err(bad("must be a relative path with `/` separators"));
    }
    let parts: Vec<&str> = trimmed.split('/').collect();
    if parts
        .iter()
        .any(|p| p.is_empty() || *p == "." || *p == ".." || *p == ".git")
    {
        return Err(bad(
            "must not contain empty, `.`, `..` or `.git` components",
        ));
    }
    Ok(parts.join("/"))
}

/// File-level changes from `old` to `new`, sorted by path.
pub fn diff(old: &FileMap, new: &FileMap) -> Vec<FileChange> {
    let mut out = Vec::new();
    for (path, entry) in new {
        match old.get(path) {
            None => out.push(FileChange {
                path: path.clone(),
                kind: ChangeKind::Added,
            }),
            Some(o) if o != entry => out.push(FileChange {
                path: path.clone(),
                kind: ChangeKind::Changed,
            }),
            Some(_) => {}
        }
    }
    for path in old.keys() {
        if !new.contains_key(path) {
            out.push(FileChange {
                path: path.clone(),
                kind: ChangeKind::Removed,
            });
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// The target (Kapitan: first path component) or component directory
/// (Commodore: `manifests/<component>`, `refs/<component>`) of a path.
fn group_of(path: &str, layout: Layout) -> String {
    let parts: Vec<&str> = path.split('/').collect();
    match layout {
        Layout::Commodore if parts.len() > 2 => format!("{}/{}", parts[0], parts[1]),
        _ => parts[0].to_string(),
    }
}

pub fn summarize(changes: &[FileChange], layout: Layout) -> Vec<GroupSummary> {
    let mut groups: BTreeMap<String, GroupSummary> = BTreeMap::new();
    for c in changes {
        let g = group_of(&c.path, layout);
        let s = groups.entry(g.clone()).or_insert_with(|| GroupSummary {
            group: g,
            ..Default::default()
        });
        match c.kind {
            ChangeKind::Added => s.added += 1,
            ChangeKind::Changed => s.changed += 1,
            ChangeKind::Removed => s.removed += 1,
        }
    }
    groups.into_values().collect()
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// The `Source commit:` of a message [`commit_message`] wrote: a commit id
/// (hex, 7 to 64 digits), nothing else.
pub fn source_commit(message: &str) -> Option<String> {
    let id = message
        .lines()
        .find_map(|l| l.strip_prefix("Source commit: "))?
        .trim();
    ((7..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| id.to_string())
}

/// The commit message: subject, source repository and commit, and per-target
/// counts.
pub fn commit_message(req: &Request, summary: &[GroupSummary], files: usize) -> String {
    let src = &req.source;
    let subject = match (&req.message, &src.repository, &src.commit) {
        (Some(m), _, _) => m.trim().to_string(),
        (None, Some(r), Some(c)) => format!("Update catalog from {r}@{}", short(c)),
        (None, Some(r), None) => format!("Update catalog from {r}"),
        (None, None, Some(c)) => format!("Update catalog from {}", short(c)),
        (None, None, None) => "Update catalog".to_string(),
    };
    let mut msg = format!("{subject}\n\n");
    if let Some(r) = &src.repository {
        msg.push_str(&format!("Source repository: {r}\n"));
    }
    if let Some(c) = &src.commit {
        msg.push_str(&format!("Source commit: {c}\n"));
    }
    if src.repository.is_some() || src.commit.is_some() {
        msg.push('\n');
    }
    let what = match req.layout {
        Layout::Kapitan => "target",
        Layout::Commodore => "component",
    };
    msg.push_str(&format!(
        "{files} file{} changed in {} {what}{}:\n",
        if files == 1 { "" } else { "s" },
        summary.len(),
        if summary.len() == 1 { "" } else { "s" }
    ));
    for s in summary {
        msg.push_str(&format!(
            "- {}: {} added, {} changed, {} removed\n",
            s.group, s.added, s.changed, s.removed
        ));
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::{FileEntry, FileKind};

    fn id(n: u8) -> ObjectId {
        ObjectId::from_bytes_or_panic(&[n; 20])
    }

    fn map(items: &[(&str, u8)]) -> FileMap {
        items
            .iter()
            .map(|(p, n)| {
                (
                    p.to_string(),
                    FileEntry {
                        kind: FileKind::Blob,
                        id: id(*n),
                    },
                )
            })
            .collect()
    }

    fn request(layout: Layout) -> Request {
        Request {
            catalog_dir: "c".into(),
            repo_url: "file:///x".into(),
            branch: "main".into(),
            layout,
            managed: vec![],
            message: None,
            author: Some(github_actions_identity()),
            source: SourceInfo {
                repository: Some("https://github.com/acme/infra".into()),
                commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
            },
            credentials: None,
            cache_dir: "cache".into(),
            max_attempts: 3,
        }
    }

    #[test]
    fn diffs_and_summarizes_per_target() {
        let old = map(&[("dev/a", 1), ("dev/b", 2), ("prod/x", 3)]);
        let new = map(&[("dev/a", 1), ("dev/b", 9), ("dev/c", 4), ("stage/y", 5)]);
        let changes = diff(&old, &new);
        let listed: Vec<String> = changes
            .iter()
            .map(|c| format!("{} {}", c.kind.letter(), c.path))
            .collect();
        assert_eq!(listed, ["M dev/b", "A dev/c", "D prod/x", "A stage/y"]);
        let s = summarize(&changes, Layout::Kapitan);
        assert_eq!(s.len(), 3);
        assert_eq!(
            (s[0].group.as_str(), s[0].added, s[0].changed),
            ("dev", 1, 1)
        );
        assert_eq!((s[1].group.as_str(), s[1].removed), ("prod", 1));
        let msg = commit_message(&request(Layout::Kapitan), &s, changes.len());
        assert!(
            msg.starts_with("Update catalog from https://github.com/acme/infra@0123456789ab\n\n")
        );
        assert!(msg.contains("Source commit: 0123456789abcdef0123456789abcdef01234567\n"));
        assert!(
            msg.contains("4 files changed in 3 targets:\n- dev: 1 added, 1 changed, 0 removed\n")
        );
    }

    #[test]
    fn commodore_groups_by_component() {
        let changes = diff(
            &FileMap::new(),
            &map(&[
                ("manifests/argocd/a.yaml", 1),
                ("manifests/argocd/b.yaml", 2),
                ("refs/x/y", 3),
            ]),
        );
        let s = summarize(&changes, Layout::Commodore);
        let groups: Vec<_> = s.iter().map(|g| (g.group.as_str(), g.added)).collect();
        assert_eq!(groups, [("manifests/argocd", 2), ("refs/x", 1)]);
        let mut req = request(Layout::Commodore);
        req.message = Some("Custom subject".into());
        let msg = commit_message(&req, &s, 3);
        assert!(
            msg.starts_with("Custom subject\n\nSource repository: https://github.com/acme/infra\n")
        );
        assert!(msg.contains("3 files changed in 2 components:"));
    }

    #[test]
    fn managed_paths_are_validated() {
        assert_eq!(normalize_managed("./prod/").unwrap(), "prod");
        assert_eq!(normalize_managed("a/b").unwrap(), "a/b");
        for bad in ["", ".", "/abs", "a/../b", ".git", "a//b"] {
            assert!(normalize_managed(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn source_prefers_github_environment() {
        let env = |k: &str| match k {
            "GITHUB_REPOSITORY" => Some("acme/infra".to_string()),
            "GITHUB_SHA" => Some("abc".to_string()),
            _ => None,
        };
        let s = SourceInfo::detect(&env, Path::new("/nonexistent"));
        assert_eq!(
            s.repository.as_deref(),
            Some("https://github.com/acme/infra")
        );
        assert_eq!(s.commit.as_deref(), Some("abc"));
    }

    #[test]
    fn source_commit_reads_what_commit_message_writes() {
        let src = |commit: &str| {
            format!("Update catalog from x@{commit}\n\nSource repository: https://example.net/x\nSource commit: {commit}\n\n2 files changed\n")
        };
        let sha = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(source_commit(&src(sha)).as_deref(), Some(sha));
        assert_eq!(source_commit(&src("main; rm -rf /")), None);
        assert_eq!(source_commit(&src("abc")), None);
        assert_eq!(source_commit("Update catalog\n"), None);
    }

    #[test]
    fn invalid_catalogs_are_rejected_before_any_git_work() {
        let tmp = tempfile::tempdir().unwrap();
        let mut req = request(Layout::Kapitan);
        req.cache_dir = tmp.path().join("cache");
        req.catalog_dir = tmp.path().join("missing");
        assert!(matches!(
            Publisher::new(req.clone()),
            Err(PublishError::CatalogMissing { .. })
        ));
        std::fs::create_dir(tmp.path().join("empty")).unwrap();
        req.catalog_dir = tmp.path().join("empty");
        assert!(matches!(
            Publisher::new(req.clone()),
            Err(PublishError::CatalogEmpty { .. })
        ));
        std::fs::create_dir_all(tmp.path().join("c/prod")).unwrap();
        req.catalog_dir = tmp.path().join("c");
        req.layout = Layout::Commodore;
        assert!(matches!(
            Publisher::new(req.clone()),
            Err(PublishError::NotCommodore { .. })
        ));
        assert!(
            !req.cache_dir.exists(),
            "no cache is created for an invalid catalog"
        );
    }
}
