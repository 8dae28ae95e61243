//! Package repositories: fetching their content (inline paths, a local
//! directory, git, http) and merging the `Package` / `PackageMetadata`
//! documents of several repositories into one catalog with kapp-controller's
//! overlap rule.
//!
//! Git goes through the `git` command line (credentials, proxies and
//! protocols are then the user's git configuration); `http://` is fetched by a
//! small built-in client and `https://` by `curl`. Image and imgpkg-bundle
//! sources need a registry client strata does not have yet.

use super::model::{
    parse_stream, ModelError, Package, PackageMetadata, PackageRepository, RepoSource, Resource,
    Strictness, ANN_REPO_REF,
};
use super::overlap::{rebase, Decision, OverlapError};
use super::select::{self, VersionSelection};
use crate::diagnostics::Diagnostic;
use crate::remote::{percent_decoded, percent_encoded};
use crate::value::Value;
use std::io::{Read, Seek, Write};
use std::path::{Component, Path, PathBuf};
use std::process::Command;

#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error(transparent)]
    Io(#[from] crate::error::Error),
    #[error("repository {repo}: {message}")]
    Fetch { repo: String, message: String },
    #[error("repository {repo}: {source}")]
    Overlap {
        repo: String,
        #[source]
        source: OverlapError,
    },
    #[error("repository {repo}: {kind} in {} is not allowed in a package repository (only Package and PackageMetadata)", file.display())]
    WrongKind {
        repo: String,
        kind: String,
        file: PathBuf,
    },
}

impl crate::diagnostics::ToDiagnostic for RepoError {
    fn to_diagnostic(&self) -> Diagnostic {
        match self {
            RepoError::Model(e) => e.to_diagnostic(),
            RepoError::Io(e) => e.to_diagnostic(),
            RepoError::Overlap { .. } => Diagnostic::error(self.to_string()).with_hint(
                "give one of them a higher `packaging.carvel.dev/revision` annotation, or make them identical",
            ),
            _ => Diagnostic::error(self.to_string()),
        }
    }
}

/// The documents one repository offers.
#[derive(Debug, Clone, Default)]
pub struct RepoContent {
    /// `<namespace>/<name>`, stamped on every document as
    /// `packaging.carvel.dev/package-repository-ref`.
    pub name: String,
    pub packages: Vec<Package>,
    pub metadata: Vec<PackageMetadata>,
    pub warnings: Vec<Diagnostic>,
}

/// What every repository together offers.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub packages: Vec<Package>,
    pub metadata: Vec<PackageMetadata>,
    pub warnings: Vec<Diagnostic>,
}

fn fetch_err(repo: &str, message: impl Into<String>) -> RepoError {
    RepoError::Fetch {
        repo: repo.to_string(),
        message: message.into(),
    }
}

/// Reads packaging documents from YAML streams that are already in memory
/// (for `--packages` files: `(path, text)`).
pub fn content_from_files(
    name: &str,
    files: &[(PathBuf, String)],
    strictness: Strictness,
) -> Result<RepoContent, RepoError> {
    let mut content = RepoContent {
        name: name.to_string(),
        ..Default::default()
    };
    for (path, text) in files {
        let docs = crate::yaml::load_all(text).map_err(|source| crate::error::Error::Yaml {
            path: path.clone(),
            source,
        })?;
        let (resources, warnings) = parse_stream(path, &docs, strictness, false)?;
        content.warnings.extend(warnings);
        for r in resources {
            match r {
                Resource::Package(p) => content.packages.push(p),
                Resource::PackageMetadata(m) => content.metadata.push(m),
                Resource::PackageRepository(_) => {
                    return Err(RepoError::WrongKind {
                        repo: name.into(),
                        kind: "PackageRepository".into(),
                        file: path.clone(),
                    })
                }
                Resource::PackageInstall(_) => {
                    return Err(RepoError::WrongKind {
                        repo: name.into(),
                        kind: "PackageInstall".into(),
                        file: path.clone(),
                    })
                }
            }
        }
    }
    Ok(content)
}

/// The `.yml`/`.yaml` files below `dir`, sorted; names starting with `.`
/// are skipped (`.imgpkg/` holds image locks, not packages).
pub(crate) fn yaml_files(dir: &Path) -> Result<Vec<PathBuf>, crate::error::Error> {
    let hidden = |p: &Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with('.'))
    };
    let files = crate::fswalk::files_below(dir, &|d| !hidden(d))
        .map_err(|e| crate::error::Error::io(&e.path, e.source))?;
    Ok(files
        .into_iter()
        .filter(|f| !hidden(f) && crate::fswalk::is_yaml(f))
        .collect())
}

/// Reads a repository laid out as kapp-controller expects (YAML files under
/// `packages/`), or any directory of YAML files when there is no `packages/`.
pub fn content_from_dir(
    name: &str,
    dir: &Path,
    strictness: Strictness,
) -> Result<RepoContent, RepoError> {
    if !dir.is_dir() {
        return Err(fetch_err(
            name,
            format!("{} is not a directory", dir.display()),
        ));
    }
    let root = if dir.join("packages").is_dir() {
        dir.join("packages")
    } else {
        dir.to_path_buf()
    };
    let files = yaml_files(&root)?;
    let mut texts = Vec::with_capacity(files.len());
    for f in files {
        let text = crate::error::read_to_string(&f)?;
        texts.push((f, text));
    }
    content_from_files(name, &texts, strictness)
}

pub(crate) fn safe_relative(p: &str) -> bool {
    let path = Path::new(p);
    !p.is_empty()
        && path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// Refuses `path` below fetched content `root` that a symlink takes
/// outside it: the content is a third party's (a git repository, a
/// tarball), and a link in it (`up -> /home/runner`) had the runner's files
/// read, and rendered, as the package's (re-probe 18
/// package-fetch-subpath-through-symlink-reads-outside). A path that does
/// not resolve is left to the caller's own check.
fn stays_inside(repo: &str, root: &Path, path: &Path, what: &str) -> Result<(), RepoError> {
    let (Ok(r), Ok(p)) = (crate::fswalk::resolve(root), crate::fswalk::resolve(path)) else {
        return Ok(());
    };
    if p.starts_with(&r) {
        Ok(())
    } else {
        Err(fetch_err(
            repo,
            format!("{what} leads outside the fetched content (through a symlink): refused; point it at a directory of the content"),
        ))
    }
}

pub(crate) fn sub_dir(repo: &str, root: &Path, sub: Option<&str>) -> Result<PathBuf, RepoError> {
    match sub {
        None | Some("") => Ok(root.to_path_buf()),
        Some(s) if safe_relative(s) => {
            let d = root.join(s);
            if d.is_dir() {
                stays_inside(repo, root, &d, &format!("subPath `{s}`"))?;
                Ok(d)
            } else {
                Err(fetch_err(
                    repo,
                    format!("subPath `{s}` is not a directory in the fetched content"),
                ))
            }
        }
        Some(s) => Err(fetch_err(
            repo,
            format!("subPath `{s}` must be a relative path inside the content"),
        )),
    }
}

fn run_git(repo: &str, args: &[&str], cwd: Option<&Path>) -> Result<String, RepoError> {
    run_git_with(repo, args, cwd, &mut Command::new("git"))
}

/// [`run_git`] on a prepared command (its environment set).
fn run_git_with(
    repo: &str,
    args: &[&str],
    cwd: Option<&Path>,
    cmd: &mut Command,
) -> Result<String, RepoError> {
    // A stalled server is given up on (it held the clone for ever).
    for (k, v) in crate::remote::stall_limits()
        .iter()
        .filter(|(k, _)| k.starts_with("http."))
    {
        cmd.arg("-c").arg(format!("{k}={v}"));
    }
    cmd.args(args).env("GIT_TERMINAL_PROMPT", "0");
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    let out = cmd.output().map_err(|e| {
        fetch_err(
            repo,
            format!("cannot run git: {e} (install git to use fetch.git)"),
        )
    })?;
    if !out.status.success() {
        return Err(fetch_err(
            repo,
            format!(
                "git {} failed: {}",
                args.first().copied().unwrap_or(""),
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Refuses to check out a tree of more than `$STRATA_CHECKOUT_FILES` files
/// (200,000) or `$STRATA_MAX_FETCH_BYTES` bytes (4 GiB), read from `git
/// ls-tree` as it lists them: one blob of zeros under many names (or one
/// subtree under many names) packs to almost nothing, and `git checkout`
/// writes it once per name (probe 40, the fetch's git trees' bound for the
/// git command this fetch runs).
fn check_tree_size(repo: &str, target: &str, into: &Path) -> Result<(), RepoError> {
    tree_size_within(
        repo,
        target,
        into,
        crate::limits::checkout_files(),
        crate::limits::max_fetch_bytes(),
    )
}

fn tree_size_within(
    repo: &str,
    target: &str,
    into: &Path,
    max_files: u64,
    max_bytes: u64,
) -> Result<(), RepoError> {
    let mut child = Command::new("git")
        .args([
            "ls-tree",
            "-r",
            "-l",
            "-z",
            "--full-tree",
            "--end-of-options",
            target,
        ])
        .current_dir(into)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| {
            fetch_err(
                repo,
                format!("cannot run git: {e} (install git to use fetch.git)"),
            )
        })?;
    let out = std::io::BufReader::new(child.stdout.take().expect("piped"));
    let (mut files, mut bytes) = (0u64, 0u64);
    let mut refused = None;
    for record in std::io::BufRead::split(out, 0) {
        let Ok(record) = record else { break };
        let head = record.split(|&b| b == b'\t').next().unwrap_or_default();
        let size = String::from_utf8_lossy(head)
            .split_whitespace()
            .last()
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(0);
        files += 1;
        bytes = bytes.saturating_add(size);
        if files > max_files {
            refused = Some(format!(
                "fetch.git: the tree at `{target}` holds more than {max_files} files: a fetched repository holds at most that many (STRATA_CHECKOUT_FILES)"
            ));
        } else if bytes > max_bytes {
            refused = Some(format!(
                "fetch.git: the files of the tree at `{target}` hold more than {max_bytes} bytes (a blob repeated under many names?): fetch less, or raise STRATA_MAX_FETCH_BYTES"
            ));
        }
        if refused.is_some() {
            break;
        }
    }
    let _ = child.kill();
    let status = child.wait();
    if let Some(m) = refused {
        return Err(fetch_err(repo, m));
    }
    if !status.is_ok_and(|s| s.success()) {
        return Err(fetch_err(
            repo,
            format!("git ls-tree failed: `{target}` is not a commit of the repository"),
        ));
    }
    Ok(())
}

/// `url` without the `user:password@` of an http(s) URL, which `git`
/// gets instead from a credential helper for that scheme and host only,
/// set in `git`'s environment (`GIT_CONFIG_COUNT`): on git's command line
/// (its own and its `git-remote-https`'s), every local user read the
/// password in `ps` for as long as the clone ran, and the clone's
/// `.git/config` kept it (probe 41, as for curl in probe 40's left-over).
fn credentials_apart(url: &str, git: &mut Command) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    if !matches!(scheme, "http" | "https") {
        return url.to_string();
    }
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return url.to_string();
    };
    let (user, password) = match rest[..at].split_once(':') {
        Some((u, p)) => (u, Some(p)),
        None => (&rest[..at], None),
    };
    let host = &rest[at + 1..authority_end];
    let decoded = |t: &str| String::from_utf8_lossy(&percent_decoded(t)).into_owned();
    // Added after any the caller's environment sets.
    let n: usize = std::env::var("GIT_CONFIG_COUNT")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let helper = match password {
        Some(_) => {
            r#"!f() { test "$1" = get && printf 'username=%s\npassword=%s\n' "$STRATA_GIT_USERNAME" "$STRATA_GIT_PASSWORD"; }; f"#
        }
        None => r#"!f() { test "$1" = get && printf 'username=%s\n' "$STRATA_GIT_USERNAME"; }; f"#,
    };
    git.env("GIT_CONFIG_COUNT", (n + 1).to_string())
        .env(
            format!("GIT_CONFIG_KEY_{n}"),
            format!("credential.{scheme}://{host}.helper"),
        )
        .env(format!("GIT_CONFIG_VALUE_{n}"), helper)
        .env("STRATA_GIT_USERNAME", decoded(user));
    if let Some(p) = password {
        git.env("STRATA_GIT_PASSWORD", decoded(p));
    }
    format!("{scheme}://{host}{}", &rest[authority_end..])
}

/// Clones `url` into `into` and checks out `ref` or the tag chosen by
/// `refSelection`. Returns the commit and the ref used.
pub fn fetch_git(
    repo: &str,
    url: &str,
    git_ref: Option<&str>,
    ref_selection: Option<&VersionSelection>,
    into: &Path,
) -> Result<(String, String), RepoError> {
    // git never names a ref with a leading `-`; from a manifest it would be
    // an option of `git checkout` (`--pathspec-from-file=` prints a file).
    if let Some(r) = git_ref.filter(|r| r.starts_with('-')) {
        return Err(fetch_err(
            repo,
            format!("fetch.git.ref {r:?}: a ref must not start with `-`"),
        ));
    }
    let dest = into.to_string_lossy().into_owned();
    let mut git = Command::new("git");
    let url = credentials_apart(url, &mut git);
    run_git_with(
        repo,
        &["clone", "--quiet", "--no-checkout", "--", &url, &dest],
        None,
        &mut git,
    )?;
    let target = match (git_ref, ref_selection) {
        (Some(_), Some(_)) => {
            return Err(fetch_err(
                repo,
                "fetch.git: set either `ref` or `refSelection`, not both",
            ))
        }
        (Some(r), None) => r.to_string(),
        (None, Some(sel)) => {
            let tags: Vec<String> = run_git(repo, &["tag", "--list"], Some(into))?
                .lines()
                .map(str::to_string)
                .collect();
            let s = select::highest(&tags, sel, &[])
                .map_err(|e| fetch_err(repo, format!("fetch.git.refSelection: {e}")))?;
            format!("refs/tags/{}", s.selected)
        }
        (None, None) => "origin/HEAD".to_string(),
    };
    check_tree_size(repo, &target, into)?;
    run_git(
        repo,
        &["checkout", "--quiet", "--end-of-options", &target, "--"],
        Some(into),
    )?;
    let commit = run_git(repo, &["rev-parse", "HEAD"], Some(into))?
        .trim()
        .to_string();
    Ok((commit, target))
}

/// Most bytes a download may take (a server that never ends its body, or a
/// huge file, fills memory otherwise).
const MAX_DOWNLOAD: u64 = 1 << 30;

/// The time a whole download may take: `STRATA_PROGRAM_TIMEOUT` (seconds,
/// default 300), as for the programs a compile starts; a server trickling a
/// byte at a time never trips a per-read timeout.
fn download_time_limit() -> std::time::Duration {
    std::time::Duration::from_secs(crate::limits::get("STRATA_PROGRAM_TIMEOUT", 300))
}

/// A plain-HTTP GET (redirects not followed; enough for mirrors and tests)
/// whose body goes to `out` as it arrives, with a running count: at most
/// `max_bytes` of it are written, and memory holds one 64 KiB read (a
/// growing buffer reserved twice the limit once past half of it).
fn http_get_limited(
    url: &str,
    max_bytes: u64,
    time_limit: std::time::Duration,
    out: &mut dyn Write,
) -> Result<u64, String> {
    let started = std::time::Instant::now();
    check_url(url)?;
    let rest = url.strip_prefix("http://").ok_or("not an http:// url")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    // `user:password@` is sent as basic authentication, as Python's
    // requests (Kapitan's `https` dependencies) sends it. It was taken for
    // part of the host, so the connection failed with an error quoting it,
    // a token included, in the job's log (probe 31,
    // http-dependency-userinfo-in-error), and went out in `Host:`.
    let (userinfo, hostport) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    if !hostport.is_ascii() {
        return Err(format!(
            "the host `{hostport}` is not ASCII: write it in its punycode (xn--) form"
        ));
    }
    // A `/` in a password (base64 tokens hold them) ends the host part, so
    // `user:to/ken@host` read `user:to` as host and port: the error quoted
    // the password's start (re-probe verify23,
    // v-dependency-url-credentials-in-fetch-errors). The port is not shown.
    if let Some((_, port)) = hostport
        .rsplit_once(':')
        .filter(|_| !hostport.ends_with(']'))
    {
        if !port.bytes().all(|b| b.is_ascii_digit()) {
            return Err("the URL's port is not a number: a `/`, `?` or `#` in its user or password ends the host part, percent-encode them (`/` as %2F)".into());
        }
    }
    let path = percent_encoded(path);
    let addr = if hostport.contains(':') {
        hostport.to_string()
    } else {
        format!("{hostport}:80")
    };
    let mut stream =
        std::net::TcpStream::connect(&addr).map_err(|e| format!("connect {addr}: {e}"))?;
    // One write: a server may answer and close after the first segment.
    let auth = userinfo
        .map(|u| {
            use base64::Engine;
            let plain = percent_decoded(u);
            format!(
                "Authorization: Basic {}\r\n",
                base64::engine::general_purpose::STANDARD.encode(plain)
            )
        })
        .unwrap_or_default();
    let request = format!(
        "GET {path} HTTP/1.0\r\nHost: {hostport}\r\n{auth}User-Agent: strata\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("send request: {e}"))?;
    // The status line and headers, then the body.
    const MAX_HEAD: usize = 64 << 10;
    let mut head: Vec<u8> = Vec::with_capacity(4096);
    let mut body_seen: Option<u64> = None;
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        let left = time_limit.saturating_sub(started.elapsed());
        if left.is_zero() {
            return Err(format!(
                "the download took more than {} s: raise STRATA_PROGRAM_TIMEOUT (seconds) if it needs longer",
                time_limit.as_secs()
            ));
        }
        stream
            .set_read_timeout(Some(left.min(std::time::Duration::from_secs(60))))
            .map_err(|e| e.to_string())?;
        let n = match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) if started.elapsed() >= time_limit => {
                return Err(format!(
                    "the download took more than {} s: raise STRATA_PROGRAM_TIMEOUT (seconds) if it needs longer ({e})",
                    time_limit.as_secs()
                ))
            }
            Err(e) => return Err(format!("read response: {e}")),
        };
        let mut body = &chunk[..n];
        if body_seen.is_none() {
            // The end of the headers may straddle two reads: look from 3
            // bytes before this read's start.
            let from = head.len().saturating_sub(3);
            head.extend_from_slice(body);
            let Some(at) = head[from..].windows(4).position(|w| w == b"\r\n\r\n") else {
                if head.len() > MAX_HEAD {
                    return Err(
                        "malformed HTTP response (no end of the headers in its first 64 KiB)"
                            .into(),
                    );
                }
                continue;
            };
            let split = from + at;
            check_http_head(&head[..split])?;
            body = &body[n - (head.len() - split - 4)..];
            body_seen = Some(0);
        }
        let seen = body_seen.get_or_insert(0);
        if *seen + body.len() as u64 > max_bytes {
            return Err(format!(
                "the response is larger than {} MiB (the limit for one download)",
                max_bytes >> 20
            ));
        }
        *seen += body.len() as u64;
        out.write_all(body)
            .map_err(|e| format!("write the download: {e}"))?;
    }
    body_seen.ok_or_else(|| "malformed HTTP response".to_string())
}

/// Refuses a response that is not `200` or is chunked.
fn check_http_head(head: &[u8]) -> Result<(), String> {
    let head = String::from_utf8_lossy(head);
    let status = head.lines().next().unwrap_or("");
    let code = status.split_whitespace().nth(1).unwrap_or("");
    if code != "200" {
        return Err(format!("server answered `{status}`"));
    }
    if head.lines().any(|l| {
        l.to_ascii_lowercase()
            .starts_with("transfer-encoding: chunked")
    }) {
        return Err("chunked responses are not supported by the built-in http client".into());
    }
    Ok(())
}

/// Downloads `url` into a new temporary file in `dir` (removed when it is
/// dropped, so a failed download leaves nothing behind): the body is never
/// held in memory whole. At most 1 GiB (`$STRATA_MAX_DOWNLOAD_BYTES`) and
/// `$STRATA_PROGRAM_TIMEOUT` seconds.
pub(crate) fn download_into(url: &str, dir: &Path) -> Result<tempfile::NamedTempFile, String> {
    let max = crate::limits::get("STRATA_MAX_DOWNLOAD_BYTES", MAX_DOWNLOAD);
    download_limited(url, dir, max, download_time_limit())
}

/// Runs curl for an `https://` download, its body counted on its way to
/// `out`: curl's `--max-filesize` holds only for a body whose size is
/// announced before curl 8.4 (Ubuntu 22.04 has 7.81), so an endless
/// chunked answer wrote 4.2 GB in 20 s, and would write for the whole
/// 300 s (probe 40). Past `max_bytes` curl is killed.
fn curl_limited(
    url: &str,
    max_bytes: u64,
    time_limit: std::time::Duration,
    out: &mut dyn Write,
) -> Result<(), String> {
    // The URL goes to curl in a config on its standard input (`-K -`), not
    // on its command line, which every local user reads in `ps`: a URL's
    // `user:password@` was shown there for as long as the download ran
    // (probe 40's left-over).
    let mut child = Command::new("curl")
        .args(["-fsSL", "--proto", "=https", "--proto-redir", "=https"])
        .arg("--max-filesize")
        .arg(max_bytes.to_string())
        .arg("--max-time")
        .arg(time_limit.as_secs().to_string())
        .args(["-K", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run curl for https: {e}"))?;
    {
        let mut stdin = child.stdin.take().expect("piped");
        let written = stdin.write_all(curl_config_url(url).as_bytes());
        // Dropped here: curl reads its config to the end before it connects.
        drop(stdin);
        if let Err(e) = written {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("cannot give curl the URL: {e}"));
        }
    }
    // curl's messages, read beside the body (a full stderr pipe would
    // stop it), at most 64 KiB of them.
    let mut stderr = child.stderr.take().expect("piped");
    let errors = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = (&mut stderr).take(64 << 10).read_to_end(&mut text);
        let _ = std::io::copy(&mut stderr, &mut std::io::sink());
        let text = String::from_utf8_lossy(&text);
        let text = text.trim();
        text.strip_prefix("curl: ").unwrap_or(text).to_string()
    });
    let mut body = child.stdout.take().expect("piped");
    let mut buf = vec![0u8; 64 << 10];
    let mut seen = 0u64;
    let failed = loop {
        let n = match body.read(&mut buf) {
            Ok(0) => break None,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => break Some(format!("read the download: {e}")),
        };
        seen += n as u64;
        if seen > max_bytes {
            break Some(format!(
                "the response is larger than {} MiB (the limit for one download)",
                max_bytes >> 20
            ));
        }
        if let Err(e) = out.write_all(&buf[..n]) {
            break Some(format!("write the download: {e}"));
        }
    };
    if failed.is_some() {
        let _ = child.kill();
    }
    drop(body);
    let status = child.wait().map_err(|e| format!("curl: {e}"))?;
    let errors = errors.join().unwrap_or_default();
    if let Some(m) = failed {
        return Err(m);
    }
    if !status.success() {
        return Err(format!("curl: {errors}"));
    }
    Ok(())
}

/// The `url = "..."` line of a curl config file (`-K`): inside double
/// quotes curl reads `\\` and `\"` as escapes. A URL reaching here holds
/// no control character nor blank ([`check_url`]).
fn curl_config_url(url: &str) -> String {
    let quoted = url.replace('\\', "\\\\").replace('"', "\\\"");
    format!("url = \"{quoted}\"\n")
}

/// Refuses a URL holding a control character or a blank, before anything
/// connects: the request line is built from it, so a CR/LF in an
/// inventory's URL added headers and whole requests of its choosing to what
/// the runner sent (re-probe 18 http-fetch-url-crlf-injects-raw-requests).
fn check_url(url: &str) -> Result<(), String> {
    match url.char_indices().find(|(_, c)| c.is_control() || c.is_whitespace()) {
        Some((at, c)) => Err(format!(
            "the URL holds {} at byte {at}: refused before connecting (a request built from it would carry what follows as headers or requests of its own); percent-encode it",
            c.escape_debug()
        )),
        None => Ok(()),
    }
}

fn download_limited(
    url: &str,
    dir: &Path,
    max_bytes: u64,
    time_limit: std::time::Duration,
) -> Result<tempfile::NamedTempFile, String> {
    check_url(url)?;
    let mut file = tempfile::Builder::new()
        .prefix(".strata-download-")
        .tempfile_in(dir)
        .map_err(|e| format!("create a temporary file in {}: {e}", dir.display()))?;
    if url.starts_with("http://") {
        let mut w = std::io::BufWriter::with_capacity(256 << 10, file.as_file_mut());
        http_get_limited(url, max_bytes, time_limit, &mut w)?;
        w.flush().map_err(|e| format!("write the download: {e}"))?;
        drop(w);
    } else if url.starts_with("https://") {
        // The same bounds through curl; redirects stay on https. Its
        // output is counted on its way to the file, never held whole.
        let mut w = std::io::BufWriter::with_capacity(256 << 10, file.as_file_mut());
        curl_limited(url, max_bytes, time_limit, &mut w)?;
        w.flush().map_err(|e| format!("write the download: {e}"))?;
        drop(w);
    } else {
        // Shown without its password: the inventory's URL may carry one
        // (re-probe verify23, v-dependency-url-credentials-in-fetch-errors).
        return Err(format!(
            "unsupported url scheme in `{}` (http:// or https://)",
            crate::remote::redact_url(url).escape_debug()
        ));
    }
    file.as_file_mut()
        .seek(std::io::SeekFrom::Start(0))
        .map_err(|e| format!("read the download: {e}"))?;
    Ok(file)
}

/// Downloads `url` into memory, through a temporary file in `dir`: read
/// back at its final size, never a buffer that doubles past the limit.
pub(crate) fn download(url: &str, dir: &Path) -> Result<Vec<u8>, String> {
    let file = download_into(url, dir)?;
    read_whole(file.as_file()).map_err(|e| format!("read the download: {e}"))
}

fn read_whole(mut f: &std::fs::File) -> std::io::Result<Vec<u8>> {
    let len = f.metadata()?.len();
    let mut data = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    f.read_to_end(&mut data)?;
    Ok(data)
}

/// Hex sha256 of the bytes.
pub fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(data);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// Most bytes one archive may unpack to (a bound against gzip and tar
/// bombs: a few kB of gzip can stand for terabytes).
pub const MAX_UNPACKED: u64 = 1 << 30;

/// Most entries (files, directories, links) one tar archive may hold: each
/// is a file-system operation, and 1.2 MB of tar.gz held 200,000 empty
/// files that took 26 s to unpack (re-probe 18). A zip archive holds at
/// most 65,535 entries (strata reads no zip64).
pub const MAX_ENTRIES: usize = 100_000;

/// A reader that fails once more than [`MAX_UNPACKED`] bytes went through
/// it, so a bomb ends with an error instead of filling memory or the disk.
struct Capped<R> {
    inner: R,
    seen: u64,
    limit: u64,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.seen += n as u64;
        if self.seen > self.limit {
            return Err(std::io::Error::other(format!(
                "unpacks to more than {} MiB (the limit for one archive)",
                self.limit >> 20
            )));
        }
        Ok(n)
    }
}

/// Unpacks a tgz / tar archive into `into`, or stores a plain file there.
/// The gzip stream is decoded as it is unpacked, never held whole, and at
/// most [`MAX_UNPACKED`] bytes come out of one archive.
pub fn unpack(data: &[u8], file_name: &str, into: &Path) -> Result<(), String> {
    unpack_limited(data, file_name, into, MAX_UNPACKED)
}

fn unpack_limited(data: &[u8], file_name: &str, into: &Path, limit: u64) -> Result<(), String> {
    let is_gzip = data.starts_with(&[0x1f, 0x8b]);
    let is_tar = data.len() > 262 && &data[257..262] == b"ustar";
    if is_gzip {
        let mut gz = Capped {
            inner: flate2::read::GzDecoder::new(data),
            seen: 0,
            limit,
        };
        // The first tar header tells a tarball from a gzipped plain file.
        let mut head = Vec::with_capacity(512);
        (&mut gz)
            .take(512)
            .read_to_end(&mut head)
            .map_err(|e| format!("gunzip: {e}"))?;
        let mut rest = std::io::Cursor::new(head).chain(gz);
        if rest.get_ref().0.get_ref().get(257..262) == Some(b"ustar".as_slice()) {
            extensions_fit(flate2::read::GzDecoder::new(data), limit)?;
            return untar(rest, into, limit, MAX_ENTRIES);
        }
        let name = file_name.trim_end_matches(".gz");
        let path = into.join(plain_name(name));
        let mut out = std::fs::File::create(&path).map_err(|e| format!("write {name}: {e}"))?;
        return std::io::copy(&mut rest, &mut out)
            .map(drop)
            .map_err(|e| format!("gunzip: {e}"));
    }
    if is_tar {
        extensions_fit(data, limit)?;
        return untar(data, into, limit, MAX_ENTRIES);
    }
    write_plain(data, file_name, into)
}

/// Most bytes of one PAX or GNU long-name header entry. Real ones hold a
/// few names and numbers; the tar crate reads each whole into memory
/// before the entry it describes, so a 600 KB tar.gz whose PAX header is
/// 600 MB of zeros took 1.2 GB (probe 44, tar-pax-header).
const MAX_EXTENSION: u64 = 1 << 20;

/// Refuses an archive holding a PAX or GNU long-name header entry larger
/// than [`MAX_EXTENSION`], read in a first pass that holds no entry's data
/// (the crate's raw mode yields those headers as entries). Other errors
/// are left to the unpacking pass, which names the entry.
fn extensions_fit(data: impl Read, limit: u64) -> Result<(), String> {
    let mut archive = tar::Archive::new(Capped {
        inner: data,
        seen: 0,
        limit,
    });
    let Ok(entries) = archive.entries() else {
        return Ok(());
    };
    let mut last: Option<String> = None;
    for entry in entries.raw(true) {
        let Ok(entry) = entry else { return Ok(()) };
        let kind = entry.header().entry_type();
        let extension = kind.is_pax_global_extensions()
            || kind.is_pax_local_extensions()
            || kind.is_gnu_longname()
            || kind.is_gnu_longlink();
        if extension && entry.size() > MAX_EXTENSION {
            let after = match &last {
                Some(name) => format!("after `{name}`"),
                None => "at the start".to_string(),
            };
            return Err(format!(
                "tar: a PAX or long-name header {after} holds {} bytes: at most {MAX_EXTENSION} are read (real ones hold a few names and numbers)",
                entry.size()
            ));
        }
        if !extension {
            last = Some(String::from_utf8_lossy(&entry.path_bytes()).into_owned());
        }
    }
    Ok(())
}

fn untar(data: impl Read, into: &Path, limit: u64, max_entries: usize) -> Result<(), String> {
    let mut archive = tar::Archive::new(Capped {
        inner: data,
        seen: 0,
        limit,
    });
    let entries = archive
        .entries()
        .map_err(|e| format!("tar: {}", tar_message(&e, into)))?;
    let mut last: Option<String> = None;
    // The stream's bytes are capped, but a GNU sparse entry's holes are
    // not in the stream: 131 bytes of tar.gz stood for a 20 GB file, which
    // the copy into the output path then read whole (probe 44). Count
    // every entry's size as the archive states it.
    let mut stated: u64 = 0;
    for (n, entry) in entries.enumerate() {
        if n == max_entries {
            return Err(format!(
                "tar: the archive holds more than {max_entries} entries (the limit for one archive; each is a file, directory or link to write): pack fewer, larger files"
            ));
        }
        let mut entry = entry.map_err(|e| {
            let which = match &last {
                Some(name) => format!("the entry after `{name}`"),
                None => "the first entry".to_string(),
            };
            format!("tar: cannot read {which}: {}", tar_message(&e, into))
        })?;
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        stated = stated.saturating_add(entry.size());
        if stated > limit {
            return Err(format!(
                "tar entry `{name}`: unpacks to more than {} MiB (the limit for one archive)",
                limit >> 20
            ));
        }
        // `unpack_in` refuses paths escaping the directory, but says so in
        // terms of strata's scratch directory: say which link leads out.
        entry.unpack_in(into).map_err(|e| {
            let why = tar_refusal(&entry, into).unwrap_or_else(|| tar_message(&e, into));
            format!("tar entry `{name}`: {why}")
        })?;
        owner_may_use(&entry, into);
        last = Some(name);
    }
    Ok(())
}

/// Gives the owner read and write access (and search, for a directory) to
/// what `entry` unpacked: the tar crate sets an entry's mode as it goes, so
/// a directory `0555` (a read-only tree, which Python's `tarfile` unpacks
/// by setting directory modes last) refused the files below it, and a
/// directory `0000` could not be copied from nor removed: the archive's
/// scratch directory stayed in `$TMPDIR` (probe 40, non-root users only).
#[cfg(unix)]
fn owner_may_use<R: Read>(entry: &tar::Entry<'_, R>, into: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let bits = match entry.header().entry_type() {
        tar::EntryType::Directory => 0o700,
        tar::EntryType::Regular | tar::EntryType::Continuous => 0o600,
        _ => return,
    };
    let Ok(path) = entry.path() else { return };
    let mut at = into.to_path_buf();
    for c in path.components() {
        if let Component::Normal(p) = c {
            at.push(p);
        }
    }
    // Not through a link: only what the archive itself made.
    if let Ok(m) = std::fs::symlink_metadata(&at) {
        if !m.file_type().is_symlink() && m.permissions().mode() & bits != bits {
            let _ = std::fs::set_permissions(
                &at,
                std::fs::Permissions::from_mode(m.permissions().mode() | bits),
            );
        }
    }
}

#[cfg(not(unix))]
fn owner_may_use<R: Read>(_entry: &tar::Entry<'_, R>, _into: &Path) {}

/// Why the tar crate refused `entry`, in terms of the archive: a hard link
/// to a file outside it (or not unpacked before it), or a path through a
/// symlink (of an earlier entry) that leads out. None when neither.
fn tar_refusal<R: Read>(entry: &tar::Entry<'_, R>, into: &Path) -> Option<String> {
    let root = into.canonicalize().ok()?;
    if entry.header().entry_type().is_hard_link() {
        let link = entry.link_name().ok()??;
        let shown = link.display();
        let outside = format!("a hard link to `{shown}`, outside the archive");
        let escapes = link.is_absolute() || link.components().any(|c| c == Component::ParentDir);
        return match into.join(&link).canonicalize() {
            Ok(p) if p.starts_with(&root) => None,
            Ok(_) => Some(outside),
            Err(_) if escapes => Some(outside),
            Err(_) => Some(format!(
                "a hard link to `{shown}`, which the archive does not hold before it"
            )),
        };
    }
    let path = entry.path().ok()?;
    let parts: Vec<_> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(p) => Some(p),
            _ => None,
        })
        .collect();
    let mut at = into.to_path_buf();
    for (i, part) in parts.iter().enumerate().take(parts.len().saturating_sub(1)) {
        at.push(part);
        if !std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            continue;
        }
        if !at.canonicalize().is_ok_and(|p| p.starts_with(&root)) {
            let link: PathBuf = parts[..=i].iter().collect();
            return Some(format!(
                "leads outside the archive (through the symlink `{}`)",
                link.display()
            ));
        }
    }
    None
}

/// A tar error's messages (each cause once), with strata's scratch
/// directory left out: paths are shown relative to the archive.
fn tar_message(e: &std::io::Error, into: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cause: Option<&dyn std::error::Error> = Some(e);
    while let Some(c) = cause {
        let m = c.to_string();
        if !parts.iter().any(|p| p.contains(&m)) {
            parts.push(m);
        }
        cause = c.source();
    }
    let mut text = parts.join(": ");
    let mut roots = vec![into.to_path_buf()];
    roots.extend(into.canonicalize().ok());
    for root in roots {
        let root = root.display().to_string();
        text = text
            .replace(&format!("{root}/"), "")
            .replace(&root, "the archive's root");
    }
    text
}

fn plain_name(name: &str) -> &str {
    if name.is_empty() || !safe_relative(name) {
        "content.yml"
    } else {
        name
    }
}

fn write_plain(data: &[u8], name: &str, into: &Path) -> Result<(), String> {
    let name = plain_name(name);
    std::fs::write(into.join(name), data).map_err(|e| format!("write {name}: {e}"))
}

/// Fetches a `PackageRepository` into `work` and reads its content.
pub fn fetch_repository(
    repo: &PackageRepository,
    work: &Path,
    strictness: Strictness,
) -> Result<RepoContent, RepoError> {
    let name = format!(
        "{}/{}",
        repo.meta.namespace.as_deref().unwrap_or("default"),
        repo.meta.name
    );
    let dir = work.join("content");
    std::fs::create_dir_all(&dir).map_err(|e| crate::error::Error::io(&dir, e))?;
    let root = match &repo.source {
        RepoSource::Directory { path } => path.clone(),
        RepoSource::Inline { paths } => {
            let mut keys: Vec<&String> = paths.keys().collect();
            keys.sort();
            for k in keys {
                if !safe_relative(k) {
                    return Err(fetch_err(&name, format!("fetch.inline.paths: `{k}` must be a relative path")));
                }
                let p = dir.join(k);
                if let Some(parent) = p.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| crate::error::Error::io(parent, e))?;
                }
                std::fs::write(&p, &paths[k]).map_err(|e| crate::error::Error::io(&p, e))?;
            }
            dir.clone()
        }
        RepoSource::Git {
            url,
            git_ref,
            ref_selection,
            sub_path,
        } => {
            fetch_git(&name, url, git_ref.as_deref(), ref_selection.as_ref(), &dir)?;
            sub_dir(&name, &dir, sub_path.as_deref())?
        }
        RepoSource::Http {
            url,
            sha256,
            sub_path,
        } => {
            let data = download(url, work).map_err(|e| fetch_err(&name, format!("fetch.http {}: {e}", url.escape_debug())))?;
            if let Some(want) = sha256 {
                let got = sha256_hex(&data);
                if !got.eq_ignore_ascii_case(want.trim()) {
                    return Err(fetch_err(
                        &name,
                        format!("fetch.http {}: sha256 mismatch: expected {want}, downloaded {got}", url.escape_debug()),
                    ));
                }
            }
            let file_name = url
                .split(['?', '#'])
                .next()
                .and_then(|u| u.rsplit('/').next())
                .unwrap_or("");
            unpack(&data, file_name, &dir).map_err(|e| fetch_err(&name, format!("fetch.http {}: {e}", url.escape_debug())))?;
            sub_dir(&name, &dir, sub_path.as_deref())?
        }
        RepoSource::Image { url } => {
            return Err(fetch_err(
                &name,
                format!("fetch.image ({url}) is not supported yet: strata has no OCI registry client; mirror the repository to git, http or a directory"),
            ))
        }
        RepoSource::ImgpkgBundle { image } => {
            return Err(fetch_err(
                &name,
                format!("fetch.imgpkgBundle ({image}) is not supported yet: strata has no OCI registry client; `imgpkg pull` it into a directory and use that"),
            ))
        }
    };
    // kapp-controller's layout reads `packages/`: in fetched content it may
    // be a link too (a directory on disk is the user's own).
    if !matches!(repo.source, RepoSource::Directory { .. }) {
        stays_inside(&name, &dir, &root.join("packages"), "`packages`")?;
    }
    content_from_dir(&name, &root, strictness)
}

fn stamp(doc: &mut Value, repo: &str) {
    if let Value::Map(top) = doc {
        let meta = top
            .entry("metadata".to_string())
            .or_insert_with(|| Value::Map(Default::default()));
        if let Value::Map(meta) = meta {
            let anns = meta
                .entry("annotations".to_string())
                .or_insert_with(|| Value::Map(Default::default()));
            if let Value::Map(anns) = anns {
                anns.insert(ANN_REPO_REF.to_string(), Value::String(repo.to_string()));
            }
        }
    }
}

/// Indexes by (namespace, name) so merging stays linear in catalog size.
type Index = std::collections::HashMap<(Option<String>, String), usize>;

/// Adds `doc` to `items` or resolves the clash with the overlap rule.
fn offer<T>(
    items: &mut Vec<T>,
    index: &mut Index,
    item: T,
    key: (Option<String>, String),
    doc: impl Fn(&T) -> &Value,
    repo: &str,
) -> Result<(), RepoError> {
    match index.get(&key) {
        None => {
            index.insert(key, items.len());
            items.push(item);
        }
        Some(&i) => match rebase(doc(&items[i]), doc(&item)) {
            Ok(Decision::ApplyNew) => items[i] = item,
            Ok(Decision::KeepExisting) => {}
            Err(source) => {
                return Err(RepoError::Overlap {
                    repo: repo.to_string(),
                    source,
                })
            }
        },
    }
    Ok(())
}

/// Merges repositories in order; a later repository offering an existing
/// name goes through the overlap rule.
pub fn merge(repos: Vec<RepoContent>) -> Result<Catalog, RepoError> {
    let mut cat = Catalog::default();
    let mut pkg_index = Index::new();
    let mut meta_index = Index::new();
    for repo in repos {
        cat.warnings.extend(repo.warnings);
        for mut p in repo.packages {
            stamp(&mut p.doc, &repo.name);
            p.meta
                .annotations
                .insert(ANN_REPO_REF.into(), repo.name.clone());
            let key = (p.meta.namespace.clone(), p.meta.name.clone());
            offer(
                &mut cat.packages,
                &mut pkg_index,
                p,
                key,
                |p| &p.doc,
                &repo.name,
            )?;
        }
        for mut m in repo.metadata {
            stamp(&mut m.doc, &repo.name);
            m.meta
                .annotations
                .insert(ANN_REPO_REF.into(), repo.name.clone());
            let key = (m.meta.namespace.clone(), m.meta.name.clone());
            offer(
                &mut cat.metadata,
                &mut meta_index,
                m,
                key,
                |m| &m.doc,
                &repo.name,
            )?;
        }
    }
    Ok(cat)
}

/// Fetches every (unpaused) repository in order and merges them: what
/// `strata compile` calls for the repositories an inventory declares.
pub fn catalog_from_repositories(
    repos: &[PackageRepository],
    strictness: Strictness,
) -> Result<Catalog, RepoError> {
    let mut contents = Vec::new();
    for r in repos.iter().filter(|r| !r.paused) {
        // Locked: the next run removes the ones killed runs left.
        let work = crate::fswalk::locked_temp_dir(&std::env::temp_dir(), "strata-pkg-")
            .map_err(|e| crate::error::Error::io(std::env::temp_dir(), e))?;
        contents.push(fetch_repository(r, work.path(), strictness)?);
    }
    merge(contents)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkg(version: &str, image: &str, rev: &str) -> String {
        format!(
            "apiVersion: data.packaging.carvel.dev/v1alpha1\nkind: Package\nmetadata:\n  name: app.example.com.{version}\n  annotations:\n    packaging.carvel.dev/revision: '{rev}'\nspec:\n  refName: app.example.com\n  version: {version}\n  template:\n    spec:\n      fetch:\n      - imgpkgBundle:\n          image: {image}\n"
        )
    }

    fn content(name: &str, text: &str) -> RepoContent {
        content_from_files(
            name,
            &[(PathBuf::from("p.yml"), text.to_string())],
            Strictness::Strict,
        )
        .unwrap()
    }

    #[test]
    fn overlapping_repositories() {
        let a = content(
            "ns/a",
            &(pkg("1.0.0", "img:a", "1") + "---\n" + &pkg("1.1.0", "img:a", "1")),
        );
        let same = content("ns/b", &pkg("1.0.0", "img:a", "1"));
        let cat = merge(vec![a.clone(), same]).unwrap();
        assert_eq!(cat.packages.len(), 2);
        assert_eq!(cat.packages[0].meta.annotations[ANN_REPO_REF], "ns/a");

        let newer = content("ns/b", &pkg("1.0.0", "img:b", "2"));
        let cat = merge(vec![a.clone(), newer]).unwrap();
        assert_eq!(cat.packages[0].meta.annotations[ANN_REPO_REF], "ns/b");

        let clash = content("ns/b", &pkg("1.0.0", "img:b", "1"));
        let e = merge(vec![a, clash]).unwrap_err();
        assert!(
            e.to_string().starts_with(
                "repository ns/b: Conflicting resources: Package/app.example.com.1.0.0"
            ),
            "{e}"
        );
        assert!(e.to_string().contains("(mismatch in spec.template)"), "{e}");
    }

    #[test]
    fn inline_and_directory_repositories() {
        let work = tempfile::tempdir().unwrap();
        let text = format!(
            "apiVersion: packaging.carvel.dev/v1alpha1\nkind: PackageRepository\nmetadata:\n  name: inline\nspec:\n  fetch:\n    inline:\n      paths:\n        packages/app.example.com/1.0.0.yml: |\n{}",
            pkg("1.0.0", "img:a", "1").lines().map(|l| format!("          {l}\n")).collect::<String>()
        );
        let docs = crate::yaml::load_all(&text).unwrap();
        let (res, _) = parse_stream(Path::new("r.yml"), &docs, Strictness::Strict, false).unwrap();
        let Resource::PackageRepository(r) = &res[0] else {
            panic!()
        };
        let c = fetch_repository(r, work.path(), Strictness::Strict).unwrap();
        assert_eq!(c.name, "default/inline");
        assert_eq!(c.packages[0].version, "1.0.0");
        let d = content_from_dir("dir", &work.path().join("content"), Strictness::Strict).unwrap();
        assert_eq!(d.packages.len(), 1);
    }

    /// A one-request HTTP server on 127.0.0.1: reads the request, then
    /// `respond` writes the whole response. Its URL.
    fn serve_once(respond: impl FnOnce(&mut std::net::TcpStream) + Send + 'static) -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            if let Ok((mut s, _)) = listener.accept() {
                let mut req = [0u8; 1024];
                let _ = s.read(&mut req);
                respond(&mut s);
            }
        });
        format!("http://127.0.0.1:{port}/x")
    }

    /// Re-probe 18 (package-fetch-subpath-through-symlink-reads-outside): a
    /// link in fetched content named as `subPath` (or as `packages`) had the
    /// runner's directory read as the package's content.
    #[cfg(unix)]
    #[test]
    fn a_sub_path_through_a_link_out_of_the_content_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let runner = tmp.path().join("runner");
        std::fs::create_dir_all(&runner).unwrap();
        let content = tmp.path().join("content");
        std::fs::create_dir_all(content.join("d/real")).unwrap();
        std::os::unix::fs::symlink(&runner, content.join("d/up")).unwrap();
        std::os::unix::fs::symlink(content.join("d/real"), content.join("inner")).unwrap();
        let err = sub_dir("r", &content, Some("d/up"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("subPath `d/up` leads outside the fetched content (through a symlink)"),
            "{err}"
        );
        assert_eq!(
            sub_dir("r", &content, Some("d/real")).unwrap(),
            content.join("d/real")
        );
        assert_eq!(
            sub_dir("r", &content, Some("inner")).unwrap(),
            content.join("inner")
        );
        std::os::unix::fs::symlink(&runner, content.join("d/real/packages")).unwrap();
        let err = stays_inside(
            "r",
            &content,
            &content.join("d/real/packages"),
            "`packages`",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("`packages` leads outside"), "{err}");
        assert!(stays_inside("r", &content, &content.join("d/missing"), "x").is_ok());
    }

    /// Probe 40: `fetch.git` ran `git checkout` on whatever tree the
    /// repository held: one blob of zeros under many names packs to almost
    /// nothing and is written once per name.
    #[test]
    fn a_git_fetch_checks_the_trees_size_before_checking_it_out() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        std::fs::create_dir_all(&src).unwrap();
        for i in 0..20 {
            std::fs::write(src.join(format!("f{i:02}.yml")), vec![b'#'; 64 << 10]).unwrap();
        }
        let git = |dir: &Path, args: &[&str]| {
            let ok = Command::new("git")
                .args(["-c", "user.email=a@b", "-c", "user.name=a"])
                .args(args)
                .current_dir(dir)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .output()
                .unwrap()
                .status
                .success();
            assert!(ok, "git {args:?}");
        };
        git(&src, &["init", "-q", "-b", "main"]);
        git(&src, &["add", "-A"]);
        git(&src, &["commit", "-qm", "one"]);
        let into = tmp.path().join("clone");
        run_git(
            "r",
            &[
                "clone",
                "--quiet",
                "--no-checkout",
                "--",
                src.to_str().unwrap(),
                into.to_str().unwrap(),
            ],
            None,
        )
        .unwrap();
        let err = tree_size_within("r", "origin/HEAD", &into, 200_000, 500_000)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("the files of the tree at `origin/HEAD` hold more than 500000 bytes (a blob repeated under many names?)"),
            "{err}"
        );
        let err = tree_size_within("r", "origin/HEAD", &into, 10, 1 << 30)
            .unwrap_err()
            .to_string();
        assert!(err.contains("holds more than 10 files"), "{err}");
        tree_size_within("r", "origin/HEAD", &into, 20, 20 * (64 << 10)).unwrap();
        assert!(tree_size_within("r", "nope", &into, 20, 1 << 30).is_err());
    }

    #[test]
    fn a_git_urls_credentials_go_to_its_environment() {
        let mut git = Command::new("git");
        assert_eq!(
            credentials_apart("https://u%40x:p%3Aw@h:8443/r.git?q#f", &mut git),
            "https://h:8443/r.git?q#f"
        );
        let env: std::collections::BTreeMap<String, String> = git
            .get_envs()
            .filter_map(|(k, v)| Some((k.to_str()?.into(), v?.to_str()?.into())))
            .collect();
        assert_eq!(env["STRATA_GIT_USERNAME"], "u@x");
        assert_eq!(env["STRATA_GIT_PASSWORD"], "p:w");
        let n = env["GIT_CONFIG_COUNT"].parse::<usize>().unwrap() - 1;
        assert_eq!(
            env[&format!("GIT_CONFIG_KEY_{n}")],
            "credential.https://h:8443.helper"
        );
        for plain in ["https://h/r.git", "git@h:r.git", "ssh://u:p@h/r", "/srv/r"] {
            let mut git = Command::new("git");
            assert_eq!(credentials_apart(plain, &mut git), plain);
            assert_eq!(git.get_envs().count(), 0, "{plain}");
        }
    }

    /// curl reads `\\` and `\"` inside a quoted config value as escapes
    /// (checked with curl 7.88: `-w '%{url_effective}'` shows `a"b\c`).
    #[test]
    fn a_url_is_quoted_for_curls_config() {
        assert_eq!(
            curl_config_url(r#"https://u:p@h/a"b\c"#),
            "url = \"https://u:p@h/a\\\"b\\\\c\"\n"
        );
    }

    /// Re-probe 18 (http-fetch-url-crlf-injects-raw-requests): a CR/LF in a
    /// URL added headers and a second request to what the runner sent.
    #[test]
    fn a_url_with_control_characters_is_refused_before_connecting() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let dir = tempfile::tempdir().unwrap();
        for url in [
            format!("http://127.0.0.1:{port}/x HTTP/1.1\r\nHost: internal\r\n\r\nDELETE /admin HTTP/1.1\r\n\r\n"),
            format!("http://127.0.0.1:{port}/x\ny"),
            format!("http://127.0.0.1:{port}/x\u{0}"),
            format!("https://127.0.0.1:{port}/x\r\n"),
        ] {
            let err = download_into(&url, dir.path()).unwrap_err();
            assert!(err.contains("refused before connecting"), "{err}");
            assert!(!err.contains(['\r', '\n', '\0']), "{err:?}");
            let mut w = Vec::new();
            let limit = std::time::Duration::from_secs(5);
            assert!(http_get_limited(&url, 1 << 20, limit, &mut w).is_err());
        }
        assert!(listener.accept().is_err(), "a connection was made");
        // Bytes past ASCII in the path are percent-encoded.
        let (port, rx) = one_request_server();
        let mut w = Vec::new();
        let url = format!("http://127.0.0.1:{port}/caf\u{e9}");
        http_get_limited(&url, 1 << 20, std::time::Duration::from_secs(60), &mut w).unwrap();
        let req = rx.recv().unwrap();
        assert!(req.starts_with("GET /caf%C3%A9 HTTP/1.0\r\n"), "{req:?}");
    }

    /// A server on 127.0.0.1 that answers one request with `ok` and hands
    /// over the request's first 1,024 bytes.
    fn one_request_server() -> (u16, std::sync::mpsc::Receiver<String>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            if let Ok((mut s, _)) = listener.accept() {
                let mut req = [0u8; 1024];
                let n = s.read(&mut req).unwrap_or(0);
                let _ = tx.send(String::from_utf8_lossy(&req[..n]).into_owned());
                let _ = s.write_all(b"HTTP/1.0 200 OK\r\n\r\nok");
            }
        });
        (port, rx)
    }

    /// Probe 31 (http-dependency-userinfo-in-error): `user:token@` was
    /// taken for part of the host, so the connection failed with an error
    /// quoting the token, and the request carried it in `Host:`.
    #[test]
    fn a_urls_user_and_password_are_sent_as_basic_auth_never_shown() {
        let (port, rx) = one_request_server();
        let mut w = Vec::new();
        let url = format!("http://us%40er:p31T0ken%2b@127.0.0.1:{port}/x");
        http_get_limited(&url, 1 << 20, std::time::Duration::from_secs(60), &mut w).unwrap();
        assert_eq!(w, b"ok");
        let req = rx.recv().unwrap();
        assert!(
            req.contains(&format!("\r\nHost: 127.0.0.1:{port}\r\n")),
            "{req:?}"
        );
        // base64 of `us@er:p31T0ken+`
        assert!(
            req.contains("\r\nAuthorization: Basic dXNAZXI6cDMxVDBrZW4r\r\n"),
            "{req:?}"
        );
        assert!(!req.contains("p31T0ken"), "{req:?}");
        // A server that is not there: the error names the host only.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = closed.local_addr().unwrap().port();
        drop(closed);
        let url = format!("http://user:p31T0ken@127.0.0.1:{port}/x");
        let err = http_get_limited(&url, 1 << 20, std::time::Duration::from_secs(60), &mut w)
            .unwrap_err();
        assert!(!err.contains("p31T0ken"), "{err}");
        assert!(err.contains(&format!("connect 127.0.0.1:{port}")), "{err}");
        assert_eq!(percent_decoded("a%2x%41%+1"), b"a%2xA%+1");
    }

    /// Re-probe verify23 (v-dependency-url-credentials-in-fetch-errors): a
    /// password with a `/` (cut the host part there) and a URL of another
    /// scheme were quoted in the error.
    #[test]
    fn errors_of_urls_with_a_password_never_quote_it() {
        let dir = tempfile::tempdir().unwrap();
        for url in [
            "http://user:v23To/ken@127.0.0.1:9/x.yml",
            "ftp://user:v23Token@127.0.0.1:9/x.yml",
        ] {
            let err = download_into(url, dir.path()).unwrap_err();
            assert!(!err.contains("v23To"), "{err}");
            assert!(
                err.contains("percent-encode") || err.contains("ftp://user:***@"),
                "{err}"
            );
        }
    }

    #[test]
    fn downloads_are_bounded_in_size_and_time() {
        use std::io::Write as _;
        let serve = |body: fn(&mut std::net::TcpStream)| {
            serve_once(move |s| {
                let _ = s.write_all(b"HTTP/1.0 200 OK\r\n\r\n");
                body(s);
            })
        };
        let limits = |max: u64, secs: u64| (max, std::time::Duration::from_secs(secs));
        let dir = tempfile::tempdir().unwrap();
        let leftovers = || std::fs::read_dir(dir.path()).unwrap().count();
        // A body that never ends: an error, and nothing left behind.
        let endless = |s: &mut std::net::TcpStream| {
            let block = vec![b'a'; 1 << 20];
            while s.write_all(&block).is_ok() {}
        };
        let (max, time) = limits(4 << 20, 60);
        let err = download_limited(&serve(endless), dir.path(), max, time).unwrap_err();
        assert!(err.contains("larger than 4 MiB"), "{err}");
        assert_eq!(leftovers(), 0);
        // The body is streamed with a running count: what reached the
        // writer is at most the limit, and it arrived in reads, never
        // gathered in one buffer first (re-probe 7: a Vec doubled to 2 GiB).
        struct Counting {
            total: u64,
            writes: usize,
        }
        impl Write for Counting {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.total += b.len() as u64;
                self.writes += 1;
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut w = Counting {
            total: 0,
            writes: 0,
        };
        let err = http_get_limited(&serve(endless), max, time, &mut w).unwrap_err();
        assert!(err.contains("larger than 4 MiB"), "{err}");
        assert!(w.total <= max && w.total > max / 2, "{}", w.total);
        assert!(w.writes > 8, "{}", w.writes);
        // A byte every 200 ms: each read is quick, the whole is not.
        let url = serve(|s| {
            for _ in 0..100 {
                if s.write_all(b"a").is_err() {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
        });
        let (max, time) = limits(4 << 20, 1);
        let err = download_limited(&url, dir.path(), max, time).unwrap_err();
        assert!(err.contains("took more than 1 s"), "{err}");
        assert_eq!(leftovers(), 0);
        // Within both, the body.
        let url = serve(|s| {
            let _ = s.write_all(b"hello");
        });
        let (max, time) = limits(4 << 20, 60);
        let f = download_limited(&url, dir.path(), max, time).unwrap();
        assert_eq!(read_whole(f.as_file()).unwrap(), b"hello");
        drop(f);
        assert_eq!(leftovers(), 0);
    }

    #[test]
    fn http_headers_split_across_reads() {
        use std::io::Write as _;
        let url = serve_once(|s| {
            for piece in [&b"HTTP/1.0 200 OK\r"[..], b"\nX-A: b\r\n\r", b"\nbo", b"dy"] {
                let _ = s.write_all(piece);
                let _ = s.flush();
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        });
        let mut out = Vec::new();
        let n =
            http_get_limited(&url, 1 << 20, std::time::Duration::from_secs(60), &mut out).unwrap();
        assert_eq!((n, out.as_slice()), (4, b"body".as_slice()));
    }

    /// A GNU sparse entry: `size` bytes of holes and no data in the stream.
    fn sparse_tar(name: &str, size: u64) -> Vec<u8> {
        fn octal(field: &mut [u8], v: u64) {
            let text = format!("{v:0width$o}\0", width = field.len() - 1);
            field.copy_from_slice(text.as_bytes());
        }
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::GNUSparse);
        h.set_size(0);
        h.set_mode(0o644);
        h.set_path(name).unwrap();
        let gnu = h.as_gnu_mut().unwrap();
        octal(&mut gnu.sparse[0].offset, size);
        octal(&mut gnu.sparse[0].numbytes, 0);
        octal(&mut gnu.realsize, size);
        h.set_cksum();
        let mut out = Vec::new();
        let mut b = tar::Builder::new(&mut out);
        b.append(&h, std::io::empty()).unwrap();
        b.finish().unwrap();
        drop(b);
        out
    }

    #[test]
    fn oversized_pax_and_long_name_headers_are_refused_before_they_are_read() {
        // Probe 44 (tar-pax-header): the crate reads a PAX header whole.
        let header = |name: &str, kind: tar::EntryType, size: u64| {
            let mut h = tar::Header::new_ustar();
            h.set_path(name).unwrap();
            h.set_entry_type(kind);
            h.set_size(size);
            h.set_mode(0o644);
            h.set_cksum();
            h
        };
        for kind in [tar::EntryType::XHeader, tar::EntryType::GNULongName] {
            let mut out = Vec::new();
            {
                let mut b = tar::Builder::new(&mut out);
                b.append(&header("ok.txt", tar::EntryType::Regular, 2), &b"hi"[..])
                    .unwrap();
                let big = vec![b'a'; (MAX_EXTENSION + 1) as usize];
                b.append(
                    &header("PaxHeaders/x", kind, big.len() as u64),
                    big.as_slice(),
                )
                .unwrap();
                b.append(&header("f.txt", tar::EntryType::Regular, 2), &b"hi"[..])
                    .unwrap();
                b.finish().unwrap();
            }
            let dir = tempfile::tempdir().unwrap();
            let err = unpack_limited(&out, "p.tar", dir.path(), 1 << 30).unwrap_err();
            assert_eq!(
                err,
                "tar: a PAX or long-name header after `ok.txt` holds 1048577 bytes: at most 1048576 are read (real ones hold a few names and numbers)",
                "{kind:?}"
            );
            assert!(!dir.path().join("ok.txt").exists());
        }
        // A real PAX header (a long name) unpacks.
        let mut out = Vec::new();
        {
            let mut b = tar::Builder::new(&mut out);
            let long = format!("{}/f.txt", "d".repeat(150));
            let mut h = tar::Header::new_ustar();
            h.set_size(2);
            h.set_mode(0o644);
            b.append_data(&mut h, &long, &b"hi"[..]).unwrap();
            b.finish().unwrap();
        }
        let dir = tempfile::tempdir().unwrap();
        unpack_limited(&out, "p.tar", dir.path(), 1 << 30).unwrap();
        assert!(dir.path().join("d".repeat(150)).join("f.txt").is_file());
    }

    #[test]
    fn sparse_entries_count_their_holes_toward_the_limit() {
        // Probe 44 (sparse-tar): the holes of a sparse entry are not in
        // the stream the cap counts; a 131-byte tar.gz unpacked to 20 GB.
        let dir = tempfile::tempdir().unwrap();
        let err = unpack_limited(
            &sparse_tar("big.bin", 8 << 20),
            "s.tar",
            dir.path(),
            1 << 20,
        )
        .unwrap_err();
        assert_eq!(
            err,
            "tar entry `big.bin`: unpacks to more than 1 MiB (the limit for one archive)"
        );
        assert!(!dir.path().join("big.bin").exists());
        // Under the limit a sparse entry unpacks, at its stated size.
        let dir = tempfile::tempdir().unwrap();
        unpack_limited(&sparse_tar("small.bin", 4096), "s.tar", dir.path(), 1 << 20).unwrap();
        let m = std::fs::metadata(dir.path().join("small.bin")).unwrap();
        assert_eq!(m.len(), 4096);
    }

    #[test]
    fn unpack_stops_a_gzip_bomb_at_the_limit() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&vec![0u8; 8 << 20]).unwrap();
        let bomb = gz.finish().unwrap();
        assert!(bomb.len() < 64 << 10);
        let dir = tempfile::tempdir().unwrap();
        let err = unpack_limited(&bomb, "x.gz", dir.path(), 1 << 20).unwrap_err();
        assert!(err.contains("more than 1 MiB"), "{err}");
        // A tarball whose members add up past the limit stops as well.
        let mut tar_bytes = Vec::new();
        {
            let mut b = tar::Builder::new(&mut tar_bytes);
            for i in 0..4 {
                let data = vec![b'a'; 512 << 10];
                let mut h = tar::Header::new_gnu();
                h.set_size(data.len() as u64);
                h.set_mode(0o644);
                h.set_cksum();
                b.append_data(&mut h, format!("f{i}"), data.as_slice())
                    .unwrap();
            }
            b.finish().unwrap();
        }
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&tar_bytes).unwrap();
        let tgz = gz.finish().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let err = unpack_limited(&tgz, "r.tgz", dir.path(), 1 << 20).unwrap_err();
        assert!(err.contains("more than 1 MiB"), "{err}");
        // Re-probe 18 (archive-entry-count-unbounded): an archive of many
        // empty files stops at the entry limit, before writing the one
        // past it; one at the limit unpacks.
        let mut many = Vec::new();
        {
            let mut b = tar::Builder::new(&mut many);
            for i in 0..5 {
                let mut h = tar::Header::new_gnu();
                h.set_size(0);
                h.set_mode(0o644);
                h.set_cksum();
                b.append_data(&mut h, format!("e{i}"), std::io::empty())
                    .unwrap();
            }
            b.finish().unwrap();
        }
        let dir = tempfile::tempdir().unwrap();
        let err = untar(many.as_slice(), dir.path(), 1 << 20, 4).unwrap_err();
        assert!(
            err.contains("the archive holds more than 4 entries") && err.contains("fewer, larger"),
            "{err}"
        );
        assert!(dir.path().join("e3").is_file() && !dir.path().join("e4").exists());
        let dir = tempfile::tempdir().unwrap();
        untar(many.as_slice(), dir.path(), 1 << 20, 5).unwrap();
        assert!(dir.path().join("e4").is_file());
        assert_eq!(MAX_ENTRIES, 100_000);
        // Under the limit the same archive unpacks.
        let dir = tempfile::tempdir().unwrap();
        unpack_limited(&tgz, "r.tgz", dir.path(), 4 << 20).unwrap();
        assert_eq!(
            std::fs::read(dir.path().join("f3")).unwrap().len(),
            512 << 10
        );
    }

    /// A tar of `(kind, name, content or link target)` entries: `f` a file,
    /// `s` a symlink, `h` a hard link.
    fn tar_of(entries: &[(char, &str, &str)]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (kind, name, x) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_mode(0o644);
            match kind {
                'f' => {
                    h.set_size(x.len() as u64);
                    h.set_cksum();
                    b.append_data(&mut h, name, x.as_bytes()).unwrap();
                }
                _ => {
                    h.set_entry_type(if *kind == 's' {
                        tar::EntryType::Symlink
                    } else {
                        tar::EntryType::Link
                    });
                    h.set_size(0);
                    b.append_link(&mut h, name, x).unwrap();
                }
            }
        }
        b.into_inner().unwrap()
    }

    /// Probe 40: directories `0555` and `0000` in an archive refused the
    /// files below them and could not be read or removed by a user other
    /// than root (the scratch directory stayed); the owner may now use
    /// everything unpacked, other bits kept.
    #[cfg(unix)]
    #[test]
    fn unpacked_directories_and_files_stay_usable_by_their_owner() {
        use std::os::unix::fs::PermissionsExt;
        let mut b = tar::Builder::new(Vec::new());
        for (name, mode, dir) in [
            ("locked", 0o000, true),
            ("ro", 0o555, true),
            ("ro/f.txt", 0o444, false),
            ("x.sh", 0o755, false),
        ] {
            let mut h = tar::Header::new_gnu();
            h.set_mode(mode);
            if dir {
                h.set_entry_type(tar::EntryType::Directory);
                h.set_size(0);
                h.set_cksum();
                b.append_data(&mut h, name, std::io::empty()).unwrap();
            } else {
                h.set_size(2);
                h.set_cksum();
                b.append_data(&mut h, name, &b"hi"[..]).unwrap();
            }
        }
        let data = b.into_inner().unwrap();
        let into = tempfile::tempdir().unwrap();
        unpack(&data, "x.tar", into.path()).unwrap();
        let mode = |p: &str| {
            std::fs::symlink_metadata(into.path().join(p))
                .unwrap()
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(mode("locked"), 0o700);
        assert_eq!(mode("ro"), 0o755);
        assert_eq!(mode("ro/f.txt"), 0o644);
        assert_eq!(mode("x.sh"), 0o755);
        assert_eq!(std::fs::read(into.path().join("ro/f.txt")).unwrap(), b"hi");
    }

    /// Fifth re-probe: a refused entry was reported by the tar crate's
    /// message, which names strata's scratch directory (`trying to unpack
    /// outside of destination path: /tmp/.tmpX`), not the entry and why.
    #[test]
    fn refused_tar_entries_are_named_without_the_scratch_directory() {
        let outside = tempfile::tempdir().unwrap();
        let out = outside.path().display().to_string();
        for (entries, shown) in [
            (
                vec![('s', "d", out.as_str()), ('f', "d/sym.txt", "x")],
                "tar entry `d/sym.txt`: leads outside the archive (through the symlink `d`)",
            ),
            (
                vec![('s', "d", "../.."), ('f', "d/e/f.txt", "x")],
                "tar entry `d/e/f.txt`: leads outside the archive (through the symlink `d`)",
            ),
            (
                vec![('h', "passwd", "/etc/passwd")],
                "tar entry `passwd`: a hard link to `/etc/passwd`, outside the archive",
            ),
            (
                vec![('h', "x", "missing")],
                "tar entry `x`: a hard link to `missing`, which the archive does not hold before it",
            ),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let into = dir.path().join("content");
            std::fs::create_dir(&into).unwrap();
            let err = unpack(&tar_of(&entries), "a.tar", &into).unwrap_err();
            assert!(err.contains(shown), "{entries:?}: {err}");
            let scratch = dir.path().display().to_string();
            assert!(!err.contains(&scratch), "{entries:?}: {err}");
            assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
        }
        // Links that stay inside unpack as before.
        let dir = tempfile::tempdir().unwrap();
        let entries = [
            ('f', "a/b.txt", "b"),
            ('s', "l", "a"),
            ('f', "l/c.txt", "c"),
            ('h', "h.txt", "a/b.txt"),
        ];
        unpack(&tar_of(&entries), "a.tar", dir.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a/c.txt")).unwrap(),
            "c"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("h.txt")).unwrap(),
            "b"
        );
        // An archive cut inside a header names the last entry read.
        let mut cut = tar_of(&[('f', "a.txt", "a"), ('f', "b.txt", "b")]);
        cut.truncate(1024 + 100);
        let dir = tempfile::tempdir().unwrap();
        let err = unpack(&cut, "a.tar", dir.path()).unwrap_err();
        assert!(err.contains("after `a.txt`"), "{err}");
    }

    #[test]
    fn unpack_formats() {
        let dir = tempfile::tempdir().unwrap();
        let mut builder = tar::Builder::new(Vec::new());
        let body = b"kind: x\n";
        let mut h = tar::Header::new_ustar();
        h.set_size(body.len() as u64);
        h.set_mode(0o644);
        builder
            .append_data(&mut h, "packages/a.yml", &body[..])
            .unwrap();
        let tar_bytes = builder.into_inner().unwrap();
        unpack(&tar_bytes, "r.tar", dir.path()).unwrap();
        assert!(dir.path().join("packages/a.yml").is_file());

        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&tar_bytes).unwrap();
        let tgz = gz.finish().unwrap();
        let dir2 = tempfile::tempdir().unwrap();
        unpack(&tgz, "r.tgz", dir2.path()).unwrap();
        assert!(dir2.path().join("packages/a.yml").is_file());

        let dir3 = tempfile::tempdir().unwrap();
        unpack(body, "pkg.yml", dir3.path()).unwrap();
        assert!(dir3.path().join("pkg.yml").is_file());
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
