//! Fetching dependencies (components, packages, config repositories) from
//! git, the way Commodore does: each remote cloned once as a bare
//! repository under `dependencies/.repos/`, each dependency checked out at
//! `dependencies/<name>` at its pinned version (branch, tag or commit).
//!
//! Everything goes through gix (no `git` binary for http(s) and ssh). A
//! checkout is a tree written from the bare repository and registered as
//! a linked worktree of it; what was written is recorded in
//! `dependencies/.repos/.state/<name>.json` so a later run can tell local
//! edits (never thrown away without `force`) from files it may replace.

pub mod jsonnet;
pub mod kapitan;
mod tree;

use crate::git::{redact_url, CacheRepo, Credentials, GitError};
use gix::ObjectId;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One dependency: a repository, a version and optionally a sub-directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependency {
    pub name: String,
    pub url: String,
    /// A branch, a tag or a (possibly abbreviated) commit id.
    pub version: String,
    /// A sub-directory of the repository that the hierarchy sees.
    pub path: Option<String>,
    /// Where the checkout goes, relative to the working directory, instead
    /// of `dependencies/<name>` (Commodore clones the global and tenant
    /// configuration into `inventory/classes/`). With `path`, only that
    /// sub-directory is written there, in place (no symlink): Commodore's
    /// layout, where the hierarchy reads `<checkout>/<path>`.
    pub dir: Option<PathBuf>,
}

impl Dependency {
    /// A dependency checked out at `dependencies/<name>`.
    pub fn new(name: &str, url: &str, version: &str, path: Option<&str>) -> Dependency {
        Dependency {
            name: name.to_string(),
            url: url.to_string(),
            version: version.to_string(),
            path: path.filter(|p| !p.is_empty()).map(str::to_string),
            dir: None,
        }
    }
}

/// The version that stands for the remote's default branch (its `HEAD`),
/// for a repository pinned to no version (Commodore's config repositories
/// without a revision).
pub const DEFAULT_BRANCH: &str = "HEAD";

/// How to fetch.
#[derive(Debug, Clone)]
pub struct FetchOptions {
    /// The Commodore working directory: `dependencies/` is created in it.
    pub work_dir: PathBuf,
    /// Use only what is on disk; never contact a remote.
    pub offline: bool,
    /// Overwrite local edits in checkouts instead of failing.
    pub force: bool,
    /// HTTPS token (for `http(s)://` URLs only).
    pub credentials: Option<Credentials>,
    /// Repositories fetched at the same time (0: one per CPU).
    pub parallelism: usize,
    /// A pull request's fetch: no repository the checkout holds is used
    /// ([`open_repo`]).
    pub confined: bool,
}

impl FetchOptions {
    pub fn new(work_dir: impl Into<PathBuf>) -> FetchOptions {
        FetchOptions {
            work_dir: work_dir.into(),
            offline: false,
            force: false,
            credentials: None,
            parallelism: 0,
            confined: false,
        }
    }

    pub fn dependencies_dir(&self) -> PathBuf {
        self.work_dir.join("dependencies")
    }
}

/// A dependency after the fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    pub name: String,
    /// The URL without credentials.
    pub url: String,
    pub version: String,
    pub commit: String,
    /// What the hierarchy uses: the checkout, or the symlink to `path` in it.
    pub dir: PathBuf,
    /// Whether files of the checkout were written or removed by this run.
    pub changed: bool,
}

/// Per-repository progress. Implementations must be cheap and thread-safe:
/// repositories are fetched in parallel.
pub trait Progress: Sync {
    /// A repository starts; `deps` dependencies live in it.
    fn start(&self, repo: &str, deps: usize);
    /// What the repository's fetch is doing now.
    fn step(&self, repo: &str, what: &str);
    /// The repository is done (`Err` holds the error message).
    fn finish(&self, repo: &str, result: Result<&str, &str>);
}

/// A [`Progress`] that reports nothing.
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _: &str, _: usize) {}
    fn step(&self, _: &str, _: &str) {}
    fn finish(&self, _: &str, _: Result<&str, &str>) {}
}

#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("dependency `{name}`: {message}")]
    Invalid { name: String, message: String },
    #[error("dependency `{name}` ({}, version `{version}`): {message}", url.escape_debug())]
    Dependency {
        name: String,
        url: String,
        version: String,
        message: String,
    },
    #[error("dependency `{name}`: local changes in {dir} would be overwritten: {files}\nhint: commit or move them, or pass --force to discard them")]
    LocalChanges {
        name: String,
        dir: PathBuf,
        files: String,
    },
    #[error("{}", .0.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"))]
    Many(Vec<FetchError>),
    #[error("{0}")]
    Io(String),
}

impl FetchError {
    /// Every error, flattened.
    pub fn all(&self) -> Vec<&FetchError> {
        match self {
            FetchError::Many(v) => v.iter().flat_map(|e| e.all()).collect(),
            e => vec![e],
        }
    }
}

/// The directory name of a remote's bare repository under `.repos/`:
/// `<host>/<path>.git` (`local/<path>.git` for file URLs), like Commodore.
pub fn repo_dir_name(url: &str) -> String {
    let (host, path) = match gix::Url::try_from(url) {
        Ok(u) => (u.host().unwrap_or("local").to_string(), u.path.to_string()),
        Err(_) => ("local".to_string(), url.to_string()),
    };
    let path = path.trim_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    let clean: Vec<String> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != "." && *p != "..")
        .map(|p| {
            p.chars()
                .map(|c| {
                    if c.is_alphanumeric() || "-_.".contains(c) {
                        c
                    } else {
                        '_'
                    }
                })
                .collect()
        })
        .collect();
    let host: String = host
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    // The path's `..` parts are dropped above; a host is one name too, and
    // `git@..:x` (or `https://../x`) made `.repos/../x.git`, a clone and
    // (as a jsonnet-bundler package name) a vendor directory one level out,
    // deleted and replaced on install (probe 29).
    let host = match host.as_str() {
        "" | "." | ".." => "_".to_string(),
        _ => host,
    };
    format!("{host}/{}.git", clean.join("/"))
}

/// The SSH form of an HTTP(S) URL, `git@host:path/to/repo.git`: user
/// information and the port are dropped (an HTTPS port is never the SSH
/// one). `None` for other URLs.
pub fn ssh_push_url(url: &str) -> Option<String> {
    let u = gix::Url::try_from(url).ok()?;
    if !matches!(u.scheme, gix::url::Scheme::Http | gix::url::Scheme::Https) {
        return None;
    }
    let host = u.host()?;
    let path = u.path.to_string();
    let path = path.trim_matches('/');
    if path.is_empty() {
        return None;
    }
    let path = if path.ends_with(".git") {
        path.to_string()
    } else {
        format!("{path}.git")
    };
    Some(format!("git@{host}:{path}"))
}

/// A URL for the repository config: http(s) without user information.
fn config_url(url: &str) -> String {
    match gix::Url::try_from(url) {
        Ok(mut u) if matches!(u.scheme, gix::url::Scheme::Http | gix::url::Scheme::Https) => {
            u.set_user(None);
            u.set_password(None);
            u.to_bstring().to_string()
        }
        _ => url.to_string(),
    }
}

/// Why `url` is no URL a dependency is fetched from: git's remote-helper
/// form `TRANSPORT::ADDRESS` (`ext::` runs a command, `fd::` reads a file
/// descriptor; gix refused them with its own words, "Protocol Ext is
/// denied per configuration", naming no way out: probe 45), or a leading
/// `-` that git and ssh take for an option.
pub(crate) fn unfetchable_url(url: &str) -> Option<String> {
    const USE: &str = "give an https://, ssh://, git@host:path or file:// URL";
    let shown = crate::diagnostics::escape_controls(url);
    let helper = url
        .split_once("::")
        .map(|(t, _)| t)
        .filter(|t| !t.is_empty() && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
    if let Some(t) = helper {
        return Some(format!(
            "the URL `{shown}` names git's `{t}::` remote helper, which strata never runs: {USE}"
        ));
    }
    url.starts_with('-').then(|| {
        format!(
            "the URL `{shown}` starts with `-`, which git and ssh would read as an option: {USE}"
        )
    })
}

fn check(deps: &[Dependency]) -> Result<(), FetchError> {
    let mut seen: BTreeMap<&str, &Dependency> = BTreeMap::new();
    let mut errors = Vec::new();
    for d in deps {
        let invalid = |message: String| FetchError::Invalid {
            name: crate::diagnostics::escape_controls(&d.name).into_owned(),
            message,
        };
        // A control character (a newline) made `dependencies/f\nx` and
        // split the error lines that named it (probe 40).
        if !is_plain_name(&d.name) || d.name.starts_with('.') {
            errors.push(invalid(
                "invalid name (a plain directory name is needed)".into(),
            ));
        }
        if d.url.is_empty() {
            errors.push(invalid("no `url`".into()));
        } else if crate::git::url_has_password(&d.url) {
            errors.push(invalid(format!(
                "the URL {} carries a password: put the token in the environment instead",
                redact_url(&d.url)
            )));
        }
        if let Some(why) = unfetchable_url(&d.url) {
            errors.push(invalid(why));
        }
        if d.version.is_empty() {
            errors.push(invalid("no `version`".into()));
        }
        if let Some(dir) = &d.dir {
            let outside = dir.is_absolute()
                || dir
                    .components()
                    .any(|c| matches!(c, std::path::Component::ParentDir));
            if outside {
                errors.push(invalid(format!(
                    "checkout directory {} must be inside the working directory",
                    dir.display()
                )));
            }
        }
        if let Some(p) = &d.path {
            if p.split('/').any(|c| c == "..") || p.starts_with('/') {
                errors.push(invalid(format!(
                    "`path` {p} must stay inside the repository"
                )));
            }
        }
        if let Some(prev) = seen.insert(&d.name, d) {
            if prev != d {
                errors.push(invalid("listed twice with different settings".into()));
            }
        }
    }
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        _ => Err(FetchError::Many(errors)),
    }
}

/// Fetches every dependency: each distinct URL once (in parallel), then
/// each dependency's checkout. Results are sorted by dependency name.
pub fn fetch(
    deps: &[Dependency],
    opts: &FetchOptions,
    progress: &dyn Progress,
) -> Result<Vec<Fetched>, FetchError> {
    check(deps)?;
    let mut by_url: BTreeMap<&str, Vec<&Dependency>> = BTreeMap::new();
    let mut names = std::collections::BTreeSet::new();
    for d in deps {
        if names.insert(d.name.as_str()) {
            by_url.entry(d.url.as_str()).or_default().push(d);
        }
    }
    let groups: Vec<(&str, Vec<&Dependency>)> = by_url.into_iter().collect();
    let run = || -> Vec<Result<Vec<Fetched>, FetchError>> {
        groups
            .par_iter()
            .map(|(url, deps)| {
                let shown = redact_url(url);
                progress.start(&shown, deps.len());
                let r = fetch_repo(url, deps, opts, &|s| progress.step(&shown, s));
                match &r {
                    Ok(f) => {
                        let changed = f.iter().filter(|f| f.changed).count();
                        progress.finish(
                            &shown,
                            Ok(&format!("{} checked out, {changed} changed", f.len())),
                        )
                    }
                    Err(e) => progress.finish(&shown, Err(&e.to_string())),
                }
                r
            })
            .collect()
    };
    let results = if opts.parallelism > 0 {
        rayon::ThreadPoolBuilder::new()
            .num_threads(opts.parallelism.min(crate::limits::max_workers()))
            .build()
            .map_err(|e| FetchError::Io(e.to_string()))?
            .install(run)
    } else {
        run()
    };
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for r in results {
        match r {
            Ok(f) => out.extend(f),
            Err(FetchError::Many(v)) => errors.extend(v),
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(if errors.len() == 1 {
            errors.remove(0)
        } else {
            FetchError::Many(errors)
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Makes sure the bare repository of `url` is on disk and current (unless
/// offline) and returns it. `needs_network` decides, given the repository
/// as it is, whether a fetch is needed at all. `confined` (a pull
/// request's fetch) refuses repositories the checkout's git tracks.
pub(crate) fn open_repo(
    url: &str,
    repos_dir: &Path,
    offline: bool,
    confined: bool,
    credentials: Option<&Credentials>,
    needs_network: &dyn Fn(&CacheRepo) -> bool,
    step: &dyn Fn(&str),
) -> Result<CacheRepo, String> {
    let path = repos_dir.join(repo_dir_name(url));
    let existed = path.join("HEAD").is_file();
    // A repository's own `config` is git's to obey: a pull request that
    // commits one under the cache directory chooses `core.sshCommand`
    // (a command this process runs), `url.<base>.insteadOf` (a network
    // URL fetched from `file:///home/runner/...`) and credential helpers.
    if confined && existed && crate::diff::git::tracks_files_below(repos_dir) {
        return Err(format!(
            "{} holds files committed to the repository: a pull request's fetch (a GitHub `pull_request*` event, or --confine) uses no repository the pull request supplies, as git obeys its `config` (`core.sshCommand` runs a command, `insteadOf` redirects the URL); remove the cache directory from the commit",
            repos_dir.display()
        ));
    }
    if offline && !existed {
        return Err(format!(
            "offline: the repository is not on disk ({}); run once without --offline",
            path.display()
        ));
    }
    let repo = CacheRepo::open_or_init(&path).map_err(|e| e.to_string())?;
    if !existed {
        record_remote(&path, url).map_err(|e| e.to_string())?;
    }
    if !offline && (!existed || needs_network(&repo)) {
        step(if existed { "fetching" } else { "cloning" });
        let creds = credentials_for(credentials, url, confined, crate::git::is_github_host);
        if creds.is_some() && crate::git::is_clear_text_remote(url) {
            return Err(
                "refusing to send a token over plain http:// to a non-loopback host; use https://"
                    .into(),
            );
        }
        repo.fetch_mirror(url, creds).map_err(|e| match e {
            GitError::Fetch { message, .. } => format!("cannot fetch: {message}"),
            e => e.to_string(),
        })?;
    }
    Ok(repo)
}

/// The token for a fetch of `url`: http(s) only and, for a pull request's
/// fetch (`confined`), only to the GitHub server (`github`): the pull
/// request names the hosts, and one of its own was sent the runner's
/// `GITHUB_TOKEN` when it asked for credentials (issue 19).
fn credentials_for<'a>(
    credentials: Option<&'a Credentials>,
    url: &str,
    confined: bool,
    github: impl Fn(&str) -> bool,
) -> Option<&'a Credentials> {
    credentials.filter(|_| crate::git::is_http_url(url) && (!confined || github(url)))
}

/// Records `origin` in the bare repository's config, for people working
/// in it: the URL without credentials and, for HTTPS, the SSH push URL.
fn record_remote(repo: &Path, url: &str) -> std::io::Result<()> {
    let config = repo.join("config");
    let mut text = std::fs::read_to_string(&config).unwrap_or_default();
    if text.contains("[remote \"origin\"]") {
        return Ok(());
    }
    let quote = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
    text.push_str("[remote \"origin\"]\n");
    text.push_str(&format!("\turl = {}\n", quote(&config_url(url))));
    text.push_str("\tfetch = +refs/heads/*:refs/remotes/origin/*\n");
    if let Some(push) = ssh_push_url(url) {
        text.push_str(&format!("\tpushurl = {}\n", quote(&push)));
    }
    std::fs::write(config, text)
}

/// How a version resolves in the bare repository.
pub(crate) enum Resolved {
    Branch(ObjectId),
    Tag(ObjectId),
    Commit(ObjectId),
}

impl Resolved {
    pub(crate) fn id(&self) -> ObjectId {
        match self {
            Resolved::Branch(i) | Resolved::Tag(i) | Resolved::Commit(i) => *i,
        }
    }
}

/// Resolves a version like `git rev-parse` would for a clone: tag, then
/// branch (`origin/<v>`), then a commit id (abbreviated or full).
pub(crate) fn resolve(repo: &gix::Repository, version: &str) -> Option<Resolved> {
    let peel = |name: &str| -> Option<ObjectId> {
        let mut r = repo.find_reference(name).ok()?;
        r.peel_to_commit().ok().map(|c| c.id)
    };
    if let Some(id) = peel(&format!("refs/tags/{version}")) {
        return Some(Resolved::Tag(id));
    }
    if let Some(id) = peel(&format!("refs/remotes/origin/{version}")) {
        return Some(Resolved::Branch(id));
    }
    if version.len() >= 4 && version.len() <= 40 && version.bytes().all(|b| b.is_ascii_hexdigit()) {
        let id = if version.len() == 40 {
            ObjectId::from_hex(version.as_bytes()).ok()?
        } else {
            let prefix = gix::hash::Prefix::from_hex(version).ok()?;
            // `Err(())`: ambiguous, which is as unknown as missing.
            repo.objects.lookup_prefix(prefix, None).ok()??.ok()?
        };
        let commit = repo.find_object(id).ok()?.peel_to_commit().ok()?;
        return Some(Resolved::Commit(commit.id));
    }
    None
}

/// Whether a version is pinned immutably and already present (a tag or a
/// full commit id), so no fetch is needed for it.
pub(crate) fn present_and_pinned(repo: &gix::Repository, version: &str) -> bool {
    match resolve(repo, version) {
        Some(Resolved::Tag(_)) => true,
        Some(Resolved::Commit(_)) => version.len() == 40,
        _ => false,
    }
}

fn fetch_repo(
    url: &str,
    deps: &[&Dependency],
    opts: &FetchOptions,
    step: &dyn Fn(&str),
) -> Result<Vec<Fetched>, FetchError> {
    let shown = redact_url(url);
    let deps_dir = opts.dependencies_dir();
    let repos_dir = deps_dir.join(".repos");
    let dep_err = |d: &Dependency, message: String| FetchError::Dependency {
        name: d.name.clone(),
        url: shown.clone(),
        version: d.version.clone(),
        message,
    };
    let all_err = |message: String| {
        let errors: Vec<FetchError> = deps.iter().map(|d| dep_err(d, message.clone())).collect();
        if errors.len() == 1 {
            errors.into_iter().next().unwrap_or(FetchError::Io(message))
        } else {
            FetchError::Many(errors)
        }
    };
    // A committed `dependencies/.repos -> $HOME/x` carried the clones (and
    // their `.state` records) wherever it pointed (probe 29).
    if let Some(at) = [deps_dir.as_path(), repos_dir.as_path()]
        .into_iter()
        .find(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()))
    {
        return Err(all_err(format!(
            "{} is a symbolic link: clones and checkouts are written only into real directories; remove the link",
            at.display()
        )));
    }
    let needs = |r: &CacheRepo| {
        !deps
            .iter()
            .all(|d| present_and_pinned(r.repo(), &d.version))
    };
    let repo = open_repo(
        url,
        &repos_dir,
        opts.offline,
        opts.confined,
        opts.credentials.as_ref(),
        &needs,
        step,
    )
    .map_err(all_err)?;
    step("checking out");
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for d in deps {
        let Some(resolved) = resolve(repo.repo(), &d.version) else {
            let why = if opts.offline {
                "unknown version (no such branch, tag or commit on disk; offline)"
            } else {
                "unknown version: the remote has no such branch or tag, and no such commit"
            };
            errors.push(dep_err(d, why.into()));
            continue;
        };
        let commit = resolved.id();
        match tree::checkout(&repo, d, commit, &deps_dir, opts.force) {
            Ok((dir, changed)) => out.push(Fetched {
                name: d.name.clone(),
                url: shown.clone(),
                version: d.version.clone(),
                commit: commit.to_string(),
                dir,
                changed,
            }),
            Err(tree::CheckoutError::LocalChanges(dir, files)) => {
                errors.push(FetchError::LocalChanges {
                    name: d.name.clone(),
                    dir,
                    files,
                })
            }
            Err(tree::CheckoutError::Other(m)) => errors.push(dep_err(d, m)),
        }
    }
    match errors.len() {
        0 => Ok(out),
        1 => Err(errors.remove(0)),
        _ => Err(FetchError::Many(errors)),
    }
}

/// Why a confined fetch refuses a URL that is not [`is_network_url`]'s.
pub const CONFINED_FETCH: &str = "a pull request's fetch (a GitHub `pull_request*` event, or --confine) fetches nothing from this machine or its network (a `file://` URL, a path, git's `ext::` or `fd::`, localhost, a loopback, private or link-local address, an option for ssh): the pull request would choose which of the runner's files or services go into the checkout; give a public network URL (https, ssh) or fetch in a trusted job";

/// The first of `deps` a confined fetch refuses ([`is_network_url`]), as
/// the error to show: a pull request's files name these URLs.
pub fn refuse_local_sources(deps: &[Dependency]) -> Result<(), String> {
    match deps.iter().find(|d| !is_network_url(&d.url)) {
        Some(d) => Err(format!(
            "{} `{}`: {CONFINED_FETCH}",
            d.name,
            crate::diagnostics::escape_controls(&redact_url(&d.url))
        )),
        None => Ok(()),
    }
}

/// Whether `url` is fetched over the network (https, http, ssh, git, or
/// scp-like `git@host:`), not from this machine (`file://`, a path, git's
/// `ext::`/`fd::` transports, or a host that is this machine or its
/// private network: see [`host_of_this_machine`]), which a pull request's
/// inventory must not choose.
pub fn is_network_url(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    let scheme = ["https://", "http://", "ssh://", "git://", "git@"]
        .iter()
        .any(|p| lower.starts_with(p));
    // A space or control character is no part of a URL: what a program
    // makes of one is anybody's guess.
    if !scheme || url.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return false;
    }
    let Ok(u) = gix::Url::try_from(url) else {
        return false;
    };
    let starts_option = |s: &str| s.starts_with('-');
    // ssh takes a host or user starting with `-` as its option
    // (`ssh://-oProxyCommand=...`): a command on this machine.
    match u.host() {
        Some(h) if !h.is_empty() && !starts_option(h) && !host_of_this_machine(h) => {}
        _ => return false,
    }
    !u.user().is_some_and(starts_option)
        && !starts_option(u.path.to_string().trim_start_matches('/'))
}

/// Whether `host` names this machine or an address of its own network: a
/// `localhost` name, a loopback, unspecified, link-local (the cloud's
/// metadata service at 169.254.169.254), private or shared address, or a
/// number spelled another way (`2130706433`, `0x7f.1`, `127.1`, which
/// the resolver takes for 127.0.0.1). A name that resolves to such an
/// address is not seen: names are not resolved here.
pub fn host_of_this_machine(host: &str) -> bool {
    let h = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase();
    if h == "localhost" || h.ends_with(".localhost") || h.is_empty() {
        return true;
    }
    let v4 = |ip: std::net::Ipv4Addr| {
        let [a, b, ..] = ip.octets();
        ip.is_loopback()
            || ip.is_unspecified()
            || ip.is_link_local()
            || ip.is_private()
            || ip.is_broadcast()
            || (a == 100 && (64..128).contains(&b))
    };
    if let Ok(ip) = h.parse::<std::net::Ipv4Addr>() {
        return v4(ip);
    }
    if let Ok(ip) = h.parse::<std::net::Ipv6Addr>() {
        let first = ip.segments()[0];
        return ip.is_loopback()
            || ip.is_unspecified()
            || (first & 0xffc0) == 0xfe80
            || (first & 0xfe00) == 0xfc00
            || ip.to_ipv4_mapped().is_some_and(v4);
    }
    // inet_aton's other spellings: a last part that is a number (no name
    // ends in one) with only numbers before it.
    let numeric = |p: &str| {
        !p.is_empty()
            && (p.bytes().all(|b| b.is_ascii_digit())
                || p.strip_prefix("0x")
                    .is_some_and(|x| x.bytes().all(|b| b.is_ascii_hexdigit())))
    };
    h.split('.').all(numeric)
}

/// One path component that stays where it is joined: not empty, `.` or
/// `..`, without a separator or a control character.
fn is_plain_name(s: &str) -> bool {
    !matches!(s, "" | "." | "..") && !s.chars().any(|c| c == '/' || c == '\\' || c.is_control())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derives_ssh_push_urls() {
        assert_eq!(
            ssh_push_url("https://github.com/projectsyn/component-x.git").as_deref(),
            Some("git@github.com:projectsyn/component-x.git")
        );
        assert_eq!(
            ssh_push_url("https://user:tok@git.example.com:8443/a/b/c").as_deref(),
            Some("git@git.example.com:a/b/c.git")
        );
        assert_eq!(ssh_push_url("git@github.com:a/b.git"), None);
        assert_eq!(ssh_push_url("file:///tmp/x.git"), None);
    }

    #[test]
    fn names_repository_directories() {
        assert_eq!(
            repo_dir_name("https://github.com/projectsyn/component-x.git"),
            "github.com/projectsyn/component-x.git"
        );
        assert_eq!(
            repo_dir_name("git@github.com:projectsyn/component-x"),
            "github.com/projectsyn/component-x.git"
        );
        assert_eq!(repo_dir_name("file:///tmp/a/../r.git"), "local/tmp/a/r.git");
        for url in [
            "git@..:victim",
            "https://../victim",
            "ssh://git@../victim",
            "file://../victim",
        ] {
            let name = repo_dir_name(url);
            assert!(
                Path::new(&name)
                    .components()
                    .all(|c| matches!(c, std::path::Component::Normal(_))),
                "{url}: {name}"
            );
        }
        assert_eq!(repo_dir_name("git@.:victim"), "_/victim.git");
        assert_eq!(
            config_url("https://u:p@h.example/x.git"),
            "https://h.example/x.git"
        );
    }

    /// A bare repository with one commit holding `files`, made with git.
    fn bare_repo(dir: &Path, name: &str, files: &[(&str, &str)]) -> String {
        let work = dir.join(format!("{name}-src"));
        for (p, c) in files {
            let p = work.join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, c).unwrap();
        }
        let git = |cwd: &Path, args: &[&str]| {
            let ok = std::process::Command::new("git")
                .current_dir(cwd)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("HOME", dir)
                .env("GIT_AUTHOR_NAME", "t")
                .env("GIT_AUTHOR_EMAIL", "t@example.com")
                .env("GIT_COMMITTER_NAME", "t")
                .env("GIT_COMMITTER_EMAIL", "t@example.com")
                .args(args)
                .status()
                .unwrap()
                .success();
            assert!(ok, "git {args:?}");
        };
        git(&work, &["init", "-q", "-b", "main"]);
        git(&work, &["add", "-A"]);
        git(&work, &["commit", "-q", "-m", "one"]);
        let bare = dir.join(format!("{name}.git"));
        git(
            dir,
            &[
                "clone",
                "-q",
                "--bare",
                work.to_str().unwrap(),
                bare.to_str().unwrap(),
            ],
        );
        format!("file://{}", bare.display())
    }

    #[derive(Default)]
    struct Recorder(std::sync::Mutex<Vec<String>>);

    impl Progress for Recorder {
        fn start(&self, repo: &str, deps: usize) {
            self.0.lock().unwrap().push(format!("start {repo} {deps}"));
        }
        fn step(&self, _: &str, _: &str) {}
        fn finish(&self, repo: &str, result: Result<&str, &str>) {
            let r = match result {
                Ok(m) => m.to_string(),
                Err(_) => "error".to_string(),
            };
            self.0.lock().unwrap().push(format!("finish {repo} {r}"));
        }
    }

    #[test]
    fn fetches_repositories_in_parallel_and_reports_each() {
        let tmp = tempfile::tempdir().unwrap();
        let urls: Vec<String> = (0..3)
            .map(|i| bare_repo(tmp.path(), &format!("r{i}"), &[("a/f", "x"), ("b/g", "y")]))
            .collect();
        let mut deps = Vec::new();
        for (i, u) in urls.iter().enumerate() {
            for sub in ["a", "b"] {
                deps.push(Dependency::new(&format!("d{i}{sub}"), u, "main", Some(sub)));
            }
        }
        let mut opts = FetchOptions::new(tmp.path().join("work"));
        opts.parallelism = 2;
        let rec = Recorder::default();
        let fetched = fetch(&deps, &opts, &rec).unwrap();
        let names: Vec<&str> = fetched.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["d0a", "d0b", "d1a", "d1b", "d2a", "d2b"]);
        assert!(fetched.iter().all(|f| f.changed));
        let mut events = rec.0.lock().unwrap().clone();
        events.sort();
        let mut want: Vec<String> = urls
            .iter()
            .flat_map(|u| {
                [
                    format!("finish {u} 2 checked out, 2 changed"),
                    format!("start {u} 2"),
                ]
            })
            .collect();
        want.sort();
        assert_eq!(events, want);
        // Sparse: `d0a` sees `a/f`, and its checkout has no `b/`.
        let d0a = opts.dependencies_dir().join("d0a");
        assert_eq!(std::fs::read_to_string(d0a.join("f")).unwrap(), "x");
        assert!(!opts.dependencies_dir().join(".d0a/b").exists());

        // A second run changes nothing.
        let again = fetch(&deps, &opts, &NoProgress).unwrap();
        assert!(again.iter().all(|f| !f.changed));
        // Offline resolves from disk.
        opts.offline = true;
        assert_eq!(fetch(&deps, &opts, &NoProgress).unwrap().len(), 6);

        // Dropping `path`: the sub-directory checkout and its link make way
        // for a whole checkout; adding it back reverses that.
        let dir = opts.dependencies_dir();
        deps[0].path = None;
        fetch(&deps, &opts, &NoProgress).unwrap();
        assert!(!dir.join(".d0a").exists());
        assert!(!dir.join("d0a").is_symlink());
        assert_eq!(std::fs::read_to_string(dir.join("d0a/b/g")).unwrap(), "y");
        deps[0].path = Some("b".into());
        fetch(&deps, &opts, &NoProgress).unwrap();
        assert!(dir.join("d0a").is_symlink());
        assert_eq!(std::fs::read_to_string(dir.join("d0a/g")).unwrap(), "y");
        assert!(!dir.join(".d0a/a").exists());
    }

    #[test]
    fn checks_out_in_place_at_the_default_branch() {
        let tmp = tempfile::tempdir().unwrap();
        let url = bare_repo(tmp.path(), "r", &[("a/f", "x"), ("b/g", "y"), ("top", "t")]);
        let opts = FetchOptions::new(tmp.path().join("work"));
        let mut d = Dependency::new("c", &url, DEFAULT_BRANCH, Some("a"));
        d.dir = Some(PathBuf::from("dependencies/c"));
        let f = fetch(std::slice::from_ref(&d), &opts, &NoProgress).unwrap();
        let dir = opts.work_dir.join("dependencies/c");
        assert_eq!(f[0].dir, dir);
        assert!(!dir.is_symlink());
        assert_eq!(std::fs::read_to_string(dir.join("a/f")).unwrap(), "x");
        assert!(!dir.join("b").exists() && !dir.join("top").exists());
        assert!(dir.join(".git").is_file());
        // Another `path` at the same commit is not "up to date".
        d.path = Some("b".into());
        let f = fetch(std::slice::from_ref(&d), &opts, &NoProgress).unwrap();
        assert!(f[0].changed);
        assert!(!dir.join("a").exists());
        assert_eq!(std::fs::read_to_string(dir.join("b/g")).unwrap(), "y");
        let f = fetch(std::slice::from_ref(&d), &opts, &NoProgress).unwrap();
        assert!(!f[0].changed);
        // A directory outside the working directory is refused.
        d.dir = Some(PathBuf::from("../elsewhere"));
        assert!(check(&[d]).is_err());
    }

    /// Issue 19: a confined fetch refused `file://` and paths only, so a
    /// pull request could still make the runner fetch from itself or its
    /// network (`http://127.0.0.1:8200/`, the metadata service) or run a
    /// command through ssh's options.
    #[test]
    fn urls_of_this_machine_are_not_network_urls() {
        for url in [
            "https://github.com/projectsyn/component-x.git",
            "git@github.com:org/repo.git",
            "ssh://git@git.example.com:2222/org/repo.git",
            "http://charts.example.com/",
            "https://8.8.8.8/x",
            "https://[2001:db8::1]/x",
            "https://10x.example.com/x",
        ] {
            assert!(is_network_url(url), "{url}");
        }
        for url in [
            "file:///home/runner/private",
            "/home/runner/private",
            "ext::sh -c touch% /tmp/pwned",
            "fd::17",
            "https://localhost/x",
            "https://LOCALHOST./x",
            "http://vault.localhost:8200/x",
            "http://127.0.0.1:8200/x",
            "http://127.1/x",
            "http://2130706433/x",
            "http://0x7f.0.0.1/x",
            "http://0.0.0.0/x",
            "http://169.254.169.254/latest/meta-data/",
            "https://10.0.0.5/x",
            "https://192.168.1.1/x",
            "https://172.16.0.1/x",
            "https://100.64.0.1/x",
            "https://[::1]/x",
            "https://[fe80::1]/x",
            "https://[fd00::1]/x",
            "https://[::ffff:127.0.0.1]/x",
            "git@localhost:org/repo.git",
            "git@127.0.0.1:org/repo.git",
            "ssh://git@[::1]/x",
            "ssh://-oProxyCommand=touch%20x/y",
            "ssh://-oProxyCommand=x@host/y",
            "git@github.com:-oProxyCommand=x",
            "https://github.com/a b",
            "https://github.com/a\nb",
            "https://",
        ] {
            assert!(!is_network_url(url), "{url}");
        }
    }

    /// Issue 19: a confined fetch sent the runner's token to whatever host
    /// the pull request named, when it asked for credentials.
    #[test]
    fn a_confined_fetch_sends_the_token_only_to_the_github_server() {
        let c = Credentials {
            username: "x-access-token".into(),
            token: "t".into(),
        };
        let github = |u: &str| crate::git::same_host(u, "https://github.com");
        let to =
            |url: &str, confined: bool| credentials_for(Some(&c), url, confined, github).is_some();
        assert!(to("https://github.com/org/x.git", true));
        assert!(to("https://GitHub.com/org/x.git", true));
        assert!(!to("https://attacker.example/org/x.git", true));
        assert!(!to("https://github.com.attacker.example/x.git", true));
        assert!(!to("https://github.com:8443/x.git", true));
        assert!(to("https://attacker.example/org/x.git", false));
        assert!(!to("git@github.com:org/x.git", false));
    }

    #[test]
    fn rejects_bad_dependencies() {
        let d = |name: &str, url: &str, version: &str| Dependency::new(name, url, version, None);
        assert!(check(&[d("a", "file:///x", "main")]).is_ok());
        assert!(check(&[d("../a", "file:///x", "main")]).is_err());
        // Probe 40: a newline made `dependencies/f\nx`.
        let e = check(&[d("f\nx", "file:///x", "main")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "dependency `f\\nx`: invalid name (a plain directory name is needed)"
        );
        assert!(check(&[d("a", "", "main")]).is_err());
        assert!(check(&[d("a", "file:///x", "")]).is_err());
        let e = check(&[d("a", "https://u:s3cret@h/x", "main")]).unwrap_err();
        assert!(!e.to_string().contains("s3cret"));
        assert!(check(&[d("a", "file:///x", "main"), d("a", "file:///y", "main")]).is_err());
        // Probe 45: gix's own refusals named no way out.
        for (url, says) in [
            (
                "ext::sh -c touch% /tmp/x",
                "names git's `ext::` remote helper, which strata never runs",
            ),
            ("fd::17", "names git's `fd::` remote helper"),
            (
                "--upload-pack=touch /tmp/x",
                "starts with `-`, which git and ssh would read as an option",
            ),
        ] {
            let e = check(&[d("a", url, "main")]).unwrap_err().to_string();
            assert_eq!(
                e,
                format!(
                    "dependency `a`: the URL `{url}` {says}{}",
                    e.split_once(says).unwrap().1
                ),
            );
            assert!(
                e.ends_with("give an https://, ssh://, git@host:path or file:// URL"),
                "{e}"
            );
        }
        for url in ["https://h/x::y", "git@h:a::b", "/srv/x", "ssh://h/-x"] {
            assert!(check(&[d("a", url, "main")]).is_ok(), "{url}");
        }
    }
}
