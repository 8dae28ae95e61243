//! Kapitan's `parameters.kapitan.dependencies` (`compile --fetch`,
//! `--force-fetch`, `.kapitan`'s `fetch: true`): git repositories (a `ref`,
//! a `subdir`), http(s) files (optionally unpacked from tar, tar.gz or zip)
//! and helm charts (with the `helm` binary), copied to each entry's
//! `output_path` below the compile's output directory before compiling.
//!
//! As in Kapitan, a normal fetch never overwrites a file that is already
//! there and skips names starting with `.`; a forced one overwrites. Unlike
//! Kapitan (which fetches into a temporary directory every run), what was
//! fetched is kept in a cache keyed by source: a git remote is a bare
//! mirror (refreshed on each fetch unless the ref is a tag or full commit
//! already there, and used as it is when the remote cannot be reached), an
//! http file is downloaded once (again with `--force-fetch`).

use crate::git::{redact_url, CacheRepo, FileKind};
use crate::value::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

/// How to fetch.
#[derive(Debug, Clone)]
pub struct DepsOptions {
    /// The compile's `--output-path`: entries' `output_path` are below it.
    pub output_path: PathBuf,
    /// Where fetched sources are kept between runs.
    pub cache_dir: PathBuf,
    /// `--force-fetch`: fetch again and overwrite existing files.
    pub force: bool,
    /// Absolute `output_path`s are allowed below these directories (Commodore
    /// components fetch into `${_base_directory}/...`); elsewhere, and
    /// when empty, an absolute `output_path` is refused.
    pub absolute_roots: Vec<PathBuf>,
    /// A confined compile (a review of a pull request, `--confine`): the
    /// pull request would name what the runner fetches (a git repository
    /// anywhere on the runner, an internal URL), so nothing is fetched.
    pub confined: bool,
    /// A pull request's fetch of the network dependencies it names
    /// (`component compile`, `catalog compile`): `helm pull`, whose
    /// `helm_path` the pull request chooses, runs without the runner's
    /// secret variables, as a confined compile's helm does.
    pub withhold_env: bool,
}

/// A dependency that could not be fetched.
#[derive(Debug, Clone, thiserror::Error)]
#[error("target {target}: dependency {source_shown}: {message}")]
pub struct DepsError {
    pub target: String,
    pub source_shown: String,
    pub message: String,
    pub hint: Option<String>,
}

impl crate::diagnostics::ToDiagnostic for DepsError {
    fn to_diagnostic(&self) -> crate::diagnostics::Diagnostic {
        let d = crate::diagnostics::Diagnostic::error(self.to_string());
        match &self.hint {
            Some(h) => d.with_hint(h.clone()),
            None => d,
        }
    }
}

struct Dep {
    target: String,
    kind: String,
    source: String,
    /// Absolute destination.
    dest: PathBuf,
    fields: Map,
}

impl Dep {
    fn str(&self, k: &str) -> Option<&str> {
        self.fields.get(k).and_then(Value::as_str)
    }
    fn flag(&self, k: &str) -> bool {
        matches!(self.fields.get(k), Some(Value::Bool(true)))
    }
    fn err(&self, message: impl Into<String>) -> DepsError {
        DepsError {
            target: self.target.clone(),
            source_shown: crate::diagnostics::escape_controls(&redact_url(&self.source))
                .into_owned(),
            message: message.into(),
            hint: None,
        }
    }
}

fn short_hash(s: &str) -> String {
    crate::packages::repo::sha256_hex(s.as_bytes())[..16].to_string()
}

/// The targets whose dependencies Kapitan fetches: all with `--fetch`,
/// else (without `--force-fetch`) those with an entry marked `force_fetch`,
/// which are then fetched with force.
pub fn select(
    dumps: &BTreeMap<String, Value>,
    targets: &[String],
    fetch: bool,
    force_fetch: bool,
) -> (Vec<(String, Value)>, bool) {
    let deps_of = |t: &String| -> Option<(String, Value)> {
        let d = dumps
            .get(t)?
            .get_path(&["parameters", "kapitan", "dependencies"])?;
        Some((t.clone(), d.clone()))
    };
    let all: Vec<(String, Value)> = targets.iter().filter_map(deps_of).collect();
    if fetch || force_fetch {
        return (all, force_fetch);
    }
    let marked: Vec<(String, Value)> = all
        .into_iter()
        .filter(|(_, d)| {
            matches!(d, Value::List(items) if items.iter().any(|i| {
                matches!(i.get_path(&["force_fetch"]), Some(Value::Bool(true)))
            }))
        })
        .collect();
    (marked, true)
}

/// The first dependency of `items` (target, source) whose source lies on
/// this machine: a `file://` URL or a path, which git and the copy read
/// wherever the inventory says (a pull request's `file:///home/runner/...`
/// put the runner's repository into the catalog). Network sources are not.
pub fn first_local_source(items: &[(String, Value)]) -> Option<(String, String)> {
    let network = super::is_network_url;
    items.iter().find_map(|(target, list)| {
        let Value::List(list) = list else {
            return None;
        };
        list.iter().find_map(|item| {
            let source = item.get_path(&["source"]).and_then(Value::as_str)?;
            (!network(source)).then(|| (target.clone(), source.to_string()))
        })
    })
}

/// Fetches every dependency of `items` (`(target, model-dumped
/// dependencies)`); returns one line per dependency written.
pub fn fetch_dependencies(
    items: &[(String, Value)],
    opts: &DepsOptions,
) -> Result<Vec<String>, DepsError> {
    let mut seen = BTreeSet::new();
    let mut deps = Vec::new();
    let mut kept = Vec::new();
    for (target, list) in items {
        let Value::List(list) = list else { continue };
        for item in list {
            let Value::Map(fields) = item else { continue };
            let get = |k: &str| fields.get(k).and_then(Value::as_str).unwrap_or_default();
            let source = get("source").to_string();
            let rel = get("output_path");
            let bad = |m: String| DepsError {
                target: target.clone(),
                source_shown: crate::diagnostics::escape_controls(&redact_url(&source))
                    .into_owned(),
                message: m,
                hint: Some("give output_path relative to the compile's --output-path".into()),
            };
            let rel_path = Path::new(rel);
            let dest = if rel_path.is_absolute() && !opts.absolute_roots.is_empty() {
                let dest = crate::compile::jsonnet::normpath(rel_path);
                if !opts.absolute_roots.iter().any(|r| dest.starts_with(r)) {
                    return Err(DepsError {
                        hint: Some(format!(
                            "an absolute output_path must be inside {}",
                            opts.absolute_roots
                                .iter()
                                .map(|r| r.display().to_string())
                                .collect::<Vec<_>>()
                                .join(" or ")
                        )),
                        ..bad(format!(
                            "output_path `{rel}` is outside the allowed directories"
                        ))
                    });
                }
                dest
            } else {
                if rel.is_empty()
                    || rel_path.is_absolute()
                    || rel_path
                        .components()
                        .any(|c| matches!(c, Component::ParentDir))
                {
                    return Err(bad(format!(
                        "output_path `{rel}` must be a relative path inside the output directory"
                    )));
                }
                crate::compile::jsonnet::normpath(&opts.output_path.join(rel))
            };
            // A link committed below the output directory would carry the
            // write elsewhere (`deps -> /outside`).
            let base = opts
                .absolute_roots
                .iter()
                .find(|r| dest.starts_with(r))
                .unwrap_or(&opts.output_path);
            // `output_path: .git` wrote the dependency's `config` (a
            // `core.fsmonitor` command) and `hooks/` into the repository's
            // own git directory: the job's next git command ran them.
            if dest
                .strip_prefix(base)
                .unwrap_or(&dest)
                .components()
                .any(|c| c.as_os_str().eq_ignore_ascii_case(".git"))
            {
                return Err(bad(format!(
                    "output_path `{rel}` is inside a `.git` directory, whose files git runs (hooks, `core.fsmonitor`): fetch dependencies elsewhere"
                )));
            }
            if let Some(link) = crate::fswalk::first_link_below(base, &dest) {
                return Err(bad(format!(
                    "output_path `{rel}` goes through the symbolic link `{}`",
                    link.display()
                )));
            }
            if opts.confined {
                // What the checkout already holds at the output_path is
                // kept, as Kapitan keeps it without --force-fetch:
                // kapicorp/kapitan-reference commits its generators and
                // says `fetch: true` in `.kapitan`. Nothing is fetched;
                // a forced or missing dependency is still refused. The
                // working directory counts too: a shard compiles into
                // `--output-path shard` and reads the checkout's copy.
                let present = |p: &Path| std::fs::symlink_metadata(p).is_ok();
                let forced =
                    opts.force || matches!(fields.get("force_fetch"), Some(Value::Bool(true)));
                if !forced && (present(&dest) || (rel_path.is_relative() && present(rel_path))) {
                    let line = format!(
                        "Dependency {}: {rel} is already there, not fetched (a confined compile fetches nothing)",
                        crate::diagnostics::escape_controls(&redact_url(&source))
                    );
                    // Targets sharing a class name the same dependency.
                    if !kept.contains(&line) {
                        kept.push(line);
                    }
                    continue;
                }
                return Err(DepsError {
                    hint: Some("fetch dependencies in a trusted step (`strata compile --fetch` outside the pull request's workflow) or commit them; a compile with --confine, or on a pull_request event, reads only the checkout".into()),
                    ..bad("a confined compile (a review of a pull request) does not fetch dependencies: the pull request would choose what the runner reads".into())
                });
            }
            if !seen.insert((source.clone(), dest.clone())) {
                continue;
            }
            deps.push(Dep {
                target: target.clone(),
                kind: get("type").to_string(),
                source,
                dest,
                fields: fields.clone(),
            });
        }
    }
    let mut log = kept;
    // Kapitan's order: http, git, helm.
    let mut by_source: BTreeMap<(u8, String), Vec<&Dep>> = BTreeMap::new();
    for d in &deps {
        let order = match d.kind.as_str() {
            "http" | "https" => 0,
            "git" => 1,
            "helm" => 2,
            _ => 3,
        };
        by_source
            .entry((order, d.source.clone()))
            .or_default()
            .push(d);
    }
    for ((order, _), group) in &by_source {
        match order {
            0 => fetch_http(group, opts, &mut log)?,
            1 => fetch_git(group, opts, &mut log)?,
            2 => fetch_helm(group, opts, &mut log)?,
            _ => {
                return Err(group[0].err(format!(
                "dependency type `{}` is not supported by strata (git, http, https and helm are)",
                group[0].kind
            )))
            }
        }
    }
    Ok(log)
}

/// What [`put_file`] writes: bytes in memory, or a file's content.
enum Content<'a> {
    Bytes(&'a [u8]),
    File(&'a Path),
}

/// Writes `data` to `dest` (below `root`) unless (without force) a file is
/// there. A directory between `root` and `dest` that is a symbolic link is
/// refused: a link the repository commits below a git dependency's
/// `output_path` (`deps/evil -> /home/runner/.ssh`) carried the fetched
/// files through it, outside the output directory (probe 40).
fn put_file(
    root: &Path,
    dest: &Path,
    data: Content<'_>,
    exec: bool,
    force: bool,
) -> Result<bool, String> {
    if let Some(link) = dest
        .parent()
        .and_then(|p| crate::fswalk::first_link_below(root, p))
    {
        return Err(format!(
            "{} is a symbolic link: a dependency is not written through it (remove the link, or fetch into another output_path)",
            link.display()
        ));
    }
    if !force && dest.exists() {
        return Ok(false);
    }
    if let Some(p) = dest.parent() {
        std::fs::create_dir_all(p).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    if std::fs::symlink_metadata(dest).is_ok_and(|m| m.file_type().is_symlink()) {
        std::fs::remove_file(dest).map_err(|e| format!("{}: {e}", dest.display()))?;
    }
    // Whole or not at all: a file cut short (a full disk, a kill) was kept
    // by every later fetch, which never overwrites a file that is there.
    let part = dest.with_file_name(format!(
        ".{}.strata-part",
        dest.file_name().unwrap_or_default().to_string_lossy()
    ));
    let written = match data {
        Content::Bytes(b) => std::fs::write(&part, b),
        // Streamed: an unpacked archive's file may be as large as the
        // archive limit (1 GiB), and was read whole into memory.
        Content::File(src) => std::fs::File::open(src).and_then(|mut from| {
            let mut to = std::fs::File::create(&part)?;
            std::io::copy(&mut from, &mut to).map(drop)
        }),
    }
    .and_then(|()| {
        #[cfg(unix)]
        if exec {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&part, std::fs::Permissions::from_mode(0o755))?;
        }
        std::fs::rename(&part, dest)
    });
    if let Err(e) = written {
        let _ = std::fs::remove_file(&part);
        return Err(format!("{}: {e}", dest.display()));
    }
    #[cfg(not(unix))]
    let _ = exec;
    Ok(true)
}

/// Kapitan's `safe_copy_tree` (no overwrite, no dot-names) or, with force,
/// `copy_tree` (overwrite).
fn copy_tree(src: &Path, dst: &Path, force: bool) -> Result<(), String> {
    let mut entries: Vec<_> = std::fs::read_dir(src)
        .map_err(|e| format!("{}: {e}", src.display()))?
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(|e| e.file_name());
    std::fs::create_dir_all(dst).map_err(|e| format!("{}: {e}", dst.display()))?;
    for e in entries {
        let name = e.file_name();
        if !force && name.to_string_lossy().starts_with('.') {
            continue;
        }
        let meta = std::fs::symlink_metadata(e.path()).map_err(|err| err.to_string())?;
        if meta.is_dir() {
            let into = dst.join(&name);
            if std::fs::symlink_metadata(&into).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(format!(
                    "{} is a symbolic link: a dependency is not copied through it",
                    into.display()
                ));
            }
            copy_tree(&e.path(), &into, force)?;
        } else if meta.is_file() {
            let from = e.path();
            put_file(
                dst,
                &dst.join(&name),
                Content::File(&from),
                is_exec(&meta),
                force,
            )?;
        }
    }
    Ok(())
}

#[cfg(unix)]
fn is_exec(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_exec(_m: &std::fs::Metadata) -> bool {
    false
}

fn fetch_git(group: &[&Dep], opts: &DepsOptions, log: &mut Vec<String>) -> Result<(), DepsError> {
    let first = group[0];
    // Before gix sees it: its refusal of `ext::` named no way out (probe 45).
    if let Some(why) = super::unfetchable_url(&first.source) {
        return Err(first.err(why));
    }
    let cache = opts.cache_dir.join("git").join(short_hash(&first.source));
    let repo = CacheRepo::open_or_init(&cache).map_err(|e| first.err(e.to_string()))?;
    let refs: Vec<String> = group
        .iter()
        .map(|d| d.str("ref").unwrap_or(super::DEFAULT_BRANCH).to_string())
        .collect();
    let pinned = refs
        .iter()
        .all(|r| super::present_and_pinned(repo.repo(), r));
    if opts.force || !pinned {
        if let Err(e) = repo.fetch_mirror(&first.source, None) {
            let all_cached = refs
                .iter()
                .all(|r| super::resolve(repo.repo(), r).is_some());
            if !all_cached {
                return Err(DepsError {
                    hint: Some("check the source URL and your network; fetched repositories are then kept in the cache for offline use".into()),
                    ..first.err(format!("fetching unsuccessful: {e}"))
                });
            }
            log.push(format!(
                "warning: Dependency {}: cannot reach the remote ({e}); using the cached copy",
                redact_url(&first.source)
            ));
        }
    }
    for (d, r) in group.iter().zip(&refs) {
        if d.flag("submodules") {
            return Err(d.err("`submodules: true` is not supported by strata"));
        }
        let commit = super::resolve(repo.repo(), r)
            .ok_or_else(|| d.err(format!("ref `{r}` not found in the repository")))?
            .id();
        let tree = repo.commit_tree(commit).map_err(|e| d.err(e.to_string()))?;
        let subdir = d
            .str("subdir")
            .unwrap_or_default()
            .trim_matches('/')
            .to_string();
        let files = repo
            .list_tree(tree, &subdir)
            .map_err(|e| d.err(e.to_string()))?;
        if !subdir.is_empty() && files.keys().all(|k| !k.starts_with(&format!("{subdir}/"))) {
            return Err(d.err(format!("subdir {subdir} not found in repo")));
        }
        for (path, entry) in &files {
            let rel = if subdir.is_empty() {
                path.as_str()
            } else {
                &path[subdir.len() + 1..]
            };
            if !opts.force && rel.split('/').any(|p| p.starts_with('.')) {
                continue;
            }
            let blob = repo
                .read_fetched_blob(entry.id, path)
                .map_err(|e| d.err(e))?;
            let dest = d.dest.join(rel);
            put_file(
                &d.dest,
                &dest,
                Content::Bytes(&blob.data),
                entry.kind == FileKind::Executable,
                opts.force,
            )
            .map_err(|e| d.err(e))?;
        }
        log.push(format!(
            "Dependency {}: saved to {}",
            redact_url(&d.source),
            d.dest.display()
        ));
    }
    Ok(())
}

fn base_name(source: &str) -> String {
    let s = source.split(['?', '#']).next().unwrap_or(source);
    s.rsplit('/').next().unwrap_or_default().to_string()
}

fn fetch_http(group: &[&Dep], opts: &DepsOptions, log: &mut Vec<String>) -> Result<(), DepsError> {
    let first = group[0];
    let name = base_name(&first.source);
    let cached = opts
        .cache_dir
        .join("http")
        .join(short_hash(&first.source))
        .join(if name.is_empty() { "download" } else { &name });
    // Without force an existing file is never overwritten, so when every
    // destination is already there, there is nothing to download.
    if !opts.force && group.iter().all(|d| !d.flag("unpack") && d.dest.is_file()) {
        for d in group {
            log.push(format!(
                "Dependency {}: {} already exists, kept",
                redact_url(&d.source),
                d.dest.display()
            ));
        }
        return Ok(());
    }
    if opts.force || !cached.is_file() {
        put_download(&first.source, &cached)
            .map_err(|e| first.err(format!("fetching unsuccessful: {e}")))?;
    }
    let data =
        std::fs::read(&cached).map_err(|e| first.err(format!("{}: {e}", cached.display())))?;
    for d in group {
        if !d.flag("unpack") {
            put_file(
                d.dest.parent().unwrap_or(&d.dest),
                &d.dest,
                Content::Bytes(&data),
                false,
                opts.force,
            )
            .map_err(|e| d.err(e))?;
            log.push(format!(
                "Dependency {}: saved to {}",
                redact_url(&d.source),
                d.dest.display()
            ));
            continue;
        }
        let is_zip = data.starts_with(b"PK\x03\x04");
        let is_tar = data.len() > 262 && &data[257..262] == b"ustar";
        let is_tgz = data.starts_with(&[0x1f, 0x8b])
            && (name.ends_with(".tar.gz") || name.ends_with(".tgz"));
        if !(is_zip || is_tar || is_tgz) {
            log.push(format!(
                "Dependency {}: not a tar, tar.gz or zip archive; nothing unpacked (as Kapitan)",
                redact_url(&d.source)
            ));
            continue;
        }
        let tmp = tempfile::tempdir().map_err(|e| d.err(e.to_string()))?;
        if is_zip {
            unzip(&data, tmp.path()).map_err(|e| d.err(format!("unzip: {e}")))?;
        } else {
            crate::packages::repo::unpack(&data, &name, tmp.path()).map_err(|e| d.err(e))?;
        }
        copy_tree(tmp.path(), &d.dest, opts.force).map_err(|e| d.err(e))?;
        log.push(format!(
            "Dependency {}: extracted to {}",
            redact_url(&d.source),
            d.dest.display()
        ));
    }
    Ok(())
}

/// Downloads `source` to `cached` through a temporary file beside it: the
/// body goes to disk as it arrives, and a failed download leaves nothing
/// (nor a partial file the next run would take for the download).
fn put_download(source: &str, cached: &Path) -> Result<(), String> {
    let dir = cached.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let file = crate::packages::repo::download_into(source, dir)?;
    // A temporary file is private (0600); the cache keeps the usual mode.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = file
            .as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644));
    }
    file.persist(cached)
        .map(drop)
        .map_err(|e| format!("{}: {}", cached.display(), e.error))
}

fn le16(b: &[u8], at: usize) -> Option<usize> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?) as usize)
}

fn le32(b: &[u8], at: usize) -> Option<usize> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?) as usize)
}

/// Most bytes unpacked from one zip archive, all entries together (a
/// bound against zip bombs, which also reuse one entry's data many times).
const MAX_ZIP_TOTAL: u64 = crate::packages::repo::MAX_UNPACKED;

/// Extracts a zip archive (stored and deflated entries) below `into`;
/// names leaving the directory are refused.
fn unzip(data: &[u8], into: &Path) -> Result<(), String> {
    unzip_limited(data, into, MAX_ZIP_TOTAL)
}

fn unzip_limited(data: &[u8], into: &Path, limit: u64) -> Result<(), String> {
    use std::io::Read;
    let eocd = (0..data.len().saturating_sub(21))
        .rev()
        .find(|&i| data[i..].starts_with(b"PK\x05\x06"))
        .ok_or("no end of central directory")?;
    let count = le16(data, eocd + 10).ok_or("truncated")?;
    let mut at = le32(data, eocd + 16).ok_or("truncated")?;
    let mut budget = limit;
    for _ in 0..count {
        if !data.get(at..).is_some_and(|d| d.starts_with(b"PK\x01\x02")) {
            return Err("bad central directory entry".into());
        }
        let method = le16(data, at + 10).ok_or("truncated")?;
        let csize = le32(data, at + 20).ok_or("truncated")?;
        let usize_ = le32(data, at + 24).ok_or("truncated")?;
        let nlen = le16(data, at + 28).ok_or("truncated")?;
        let elen = le16(data, at + 30).ok_or("truncated")?;
        let clen = le16(data, at + 32).ok_or("truncated")?;
        let local = le32(data, at + 42).ok_or("truncated")?;
        let name = String::from_utf8_lossy(data.get(at + 46..at + 46 + nlen).ok_or("truncated")?)
            .into_owned();
        at += 46 + nlen + elen + clen;
        let rel = Path::new(&name);
        if rel.is_absolute()
            || rel
                .components()
                .any(|c| matches!(c, Component::ParentDir | Component::Prefix(_)))
        {
            return Err(format!("entry `{name}` leaves the directory"));
        }
        let dest = into.join(rel);
        if name.ends_with('/') {
            std::fs::create_dir_all(&dest).map_err(|e| format!("entry `{name}`: {e}"))?;
            continue;
        }
        let too_big = || {
            format!("entry `{name}`: the archive unpacks to more than {} MiB (the limit for one archive)", limit >> 20)
        };
        if usize_ as u64 > budget {
            return Err(too_big());
        }
        let lnlen = le16(data, local + 26).ok_or("truncated")?;
        let lelen = le16(data, local + 28).ok_or("truncated")?;
        let start = local + 30 + lnlen + lelen;
        let raw = data.get(start..start + csize).ok_or("truncated entry")?;
        let content: Box<dyn Read + '_> = match method {
            0 => Box::new(raw),
            // The size in the header is only a claim; the entry is decoded
            // into its file as it is read, never held whole (probe 44: a
            // 1 MB zip of one 1,000 MB entry took 1.6 GB).
            8 => Box::new(flate2::read::DeflateDecoder::new(raw)),
            m => {
                return Err(format!(
                    "entry `{name}`: compression method {m} is not supported"
                ))
            }
        };
        if let Some(p) = dest.parent() {
            std::fs::create_dir_all(p).map_err(|e| format!("entry `{name}`: {e}"))?;
        }
        let mut file = std::fs::File::create(&dest).map_err(|e| format!("entry `{name}`: {e}"))?;
        // In 1 MiB reads: `io::copy`'s 8 KiB ones made the decoding of a
        // 1,000 MB entry take twice as long.
        let mut reader = std::io::BufReader::with_capacity(1 << 20, content.take(budget + 1));
        let written = std::io::copy(&mut reader, &mut file).map_err(|e| format!("{name}: {e}"))?;
        budget = budget.checked_sub(written).ok_or_else(too_big)?;
    }
    Ok(())
}

fn fetch_helm(group: &[&Dep], opts: &DepsOptions, log: &mut Vec<String>) -> Result<(), DepsError> {
    for d in group {
        if d.dest.exists() && !opts.force {
            continue;
        }
        let chart = d.str("chart_name").unwrap_or_default();
        let version = d.str("version");
        // The chart name is `helm pull`'s argument, which helm takes for
        // an option when it starts with `-` (`--untardir=/home/runner/x`
        // expanded the chart there): no chart is named so.
        if chart.starts_with('-') {
            return Err(d.err(format!(
                "chart_name `{}` starts with `-`, which helm takes for one of its options: name the chart",
                crate::diagnostics::escape_controls(chart)
            )));
        }
        // Both name a directory of the cache (`<chart>-<version>`) and the
        // chart is the directory `helm pull --untar` makes: `../../x` read
        // a directory of the runner into the output, and with
        // --force-fetch deleted the one the cache path then named (probe 40).
        for (field, value) in [("chart_name", Some(chart)), ("version", version)] {
            let Some(value) = value else { continue };
            if !super::is_plain_name(value) {
                return Err(d.err(format!(
                    "{field} `{}` is not a plain name (empty, `.`, `..`, or holding `/`, `\\` or a control character): it names a directory of the dependency cache; give the chart's name and version",
                    crate::diagnostics::escape_controls(value)
                )));
            }
        }
        let helm = d
            .str("helm_path")
            .map(str::to_string)
            .or_else(|| std::env::var("KAPITAN_HELM_PATH").ok())
            .unwrap_or_else(|| "helm".into());
        let cached = opts
            .cache_dir
            .join("helm")
            .join(short_hash(&d.source))
            .join(format!("{chart}-{}", version.unwrap_or("latest")));
        if !cached.is_dir() || opts.force {
            let tmp = tempfile::tempdir().map_err(|e| d.err(e.to_string()))?;
            let mut cmd = std::process::Command::new(&helm);
            cmd.args(["pull", "--destination"])
                .arg(tmp.path())
                .arg("--untar");
            if let Some(v) = version {
                cmd.args(["--version", v]);
            }
            if d.source.starts_with("oci://") {
                cmd.arg(&d.source);
            } else {
                cmd.args(["--repo", &d.source, chart]);
            }
            if opts.withhold_env {
                crate::child::withhold_secret_env(&mut cmd);
            }
            // Bounded like every program a compile runs: a chart repository
            // that never answers held `helm pull`, and the fetch, for ever.
            cmd.stdout(std::process::Stdio::null());
            let ended = crate::child::run(&mut cmd).map_err(|e| {
                let mut err = d.err(if e.kind() == std::io::ErrorKind::NotFound {
                    format!("helm chart `{chart}` needs the helm binary, and `{helm}` was not found")
                } else {
                    format!("cannot run `{helm}`: {e}")
                });
                err.hint = Some("install helm (https://helm.sh/docs/intro/install/), or set helm_path / KAPITAN_HELM_PATH".into());
                err
            })?;
            match ended {
                crate::child::Ended::TimedOut(limit) => {
                    return Err(d.err(format!(
                        "helm pull {}",
                        crate::child::timed_out_message(limit)
                    )));
                }
                crate::child::Ended::Exited(status, stderr) if !status.success() => {
                    return Err(d.err(format!("helm pull failed: {}", stderr.trim())));
                }
                crate::child::Ended::Exited(..) => {}
            }
            if cached.exists() {
                let _ = std::fs::remove_dir_all(&cached);
            }
            if let Some(p) = cached.parent() {
                std::fs::create_dir_all(p).map_err(|e| d.err(e.to_string()))?;
            }
            copy_tree(&tmp.path().join(chart), &cached, true).map_err(|e| d.err(e))?;
        }
        copy_tree(&cached, &d.dest, opts.force).map_err(|e| d.err(e))?;
        log.push(format!("Dependency {chart}: saved to {}", d.dest.display()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_names() {
        assert_eq!(base_name("http://h/a/b.tar.gz?x=1"), "b.tar.gz");
        assert_eq!(base_name("http://h/"), "");
    }

    #[test]
    fn unzip_refuses_escaping_names() {
        // A stored entry named `../x`.
        let name = b"../x";
        let mut z = Vec::new();
        z.extend_from_slice(b"PK\x03\x04");
        z.extend_from_slice(&[0; 22]);
        z.extend_from_slice(&(name.len() as u16).to_le_bytes());
        z.extend_from_slice(&0u16.to_le_bytes());
        z.extend_from_slice(name);
        let cd = z.len();
        z.extend_from_slice(b"PK\x01\x02");
        z.extend_from_slice(&[0; 24]);
        z.extend_from_slice(&(name.len() as u16).to_le_bytes());
        z.extend_from_slice(&[0; 16]);
        z.extend_from_slice(name);
        let cd_len = z.len() - cd;
        z.extend_from_slice(b"PK\x05\x06");
        z.extend_from_slice(&[0; 6]);
        z.extend_from_slice(&1u16.to_le_bytes());
        z.extend_from_slice(&(cd_len as u32).to_le_bytes());
        z.extend_from_slice(&(cd as u32).to_le_bytes());
        z.extend_from_slice(&[0; 2]);
        let d = tempfile::tempdir().unwrap();
        let e = unzip(&z, d.path()).unwrap_err();
        assert!(e.contains("leaves the directory"), "{e}");
    }

    /// A zip whose `names` all point at one deflated entry of `size` zero
    /// bytes (the overlapping-entries bomb).
    fn overlapping_zip(names: &[&str], size: usize) -> Vec<u8> {
        use std::io::Write;
        let mut enc =
            flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(&vec![0u8; size]).unwrap();
        let packed = enc.finish().unwrap();
        let mut z = Vec::new();
        z.extend_from_slice(b"PK\x03\x04");
        z.extend_from_slice(&[0; 22]);
        z.extend_from_slice(&1u16.to_le_bytes());
        z.extend_from_slice(&0u16.to_le_bytes());
        z.extend_from_slice(b"x");
        z.extend_from_slice(&packed);
        let cd = z.len();
        for name in names {
            z.extend_from_slice(b"PK\x01\x02");
            z.extend_from_slice(&[0; 6]);
            z.extend_from_slice(&8u16.to_le_bytes());
            z.extend_from_slice(&[0; 8]);
            z.extend_from_slice(&(packed.len() as u32).to_le_bytes());
            z.extend_from_slice(&(size as u32).to_le_bytes());
            z.extend_from_slice(&(name.len() as u16).to_le_bytes());
            z.extend_from_slice(&[0; 12]);
            z.extend_from_slice(&0u32.to_le_bytes());
            z.extend_from_slice(name.as_bytes());
        }
        let cd_len = z.len() - cd;
        z.extend_from_slice(b"PK\x05\x06");
        z.extend_from_slice(&[0; 6]);
        z.extend_from_slice(&(names.len() as u16).to_le_bytes());
        z.extend_from_slice(&(cd_len as u32).to_le_bytes());
        z.extend_from_slice(&(cd as u32).to_le_bytes());
        z.extend_from_slice(&[0; 2]);
        z
    }

    #[test]
    fn unzip_stops_at_the_archive_limit_across_entries() {
        let z = overlapping_zip(&["a", "b", "c", "d"], 512 << 10);
        let d = tempfile::tempdir().unwrap();
        unzip_limited(&z, d.path(), 4 << 20).unwrap();
        assert_eq!(std::fs::read(d.path().join("d")).unwrap().len(), 512 << 10);
        let d = tempfile::tempdir().unwrap();
        let e = unzip_limited(&z, d.path(), 1 << 20).unwrap_err();
        assert!(e.contains("more than 1 MiB"), "{e}");
        assert!(!d.path().join("c").exists());
    }

    /// The size a zip's directory states is only a claim: an entry that
    /// says 1 byte and inflates to 2 MiB is decoded into its file as it is
    /// read (not into memory: probe 44, a 1 MB zip of one 1,000 MB entry
    /// took 1.6 GB) and stopped just past the limit.
    #[test]
    fn unzip_stops_an_entry_larger_than_it_says_at_the_limit() {
        let mut z = overlapping_zip(&["a"], 2 << 20);
        let cd = le32(&z, z.len() - 6).unwrap();
        z[cd + 24..cd + 28].copy_from_slice(&1u32.to_le_bytes());
        let d = tempfile::tempdir().unwrap();
        let e = unzip_limited(&z, d.path(), 1 << 20).unwrap_err();
        assert!(
            e.contains("entry `a`: the archive unpacks to more than 1 MiB"),
            "{e}"
        );
        let written = std::fs::metadata(d.path().join("a")).map_or(0, |m| m.len());
        assert!(written <= (1 << 20) + 1, "{written}");
        let d = tempfile::tempdir().unwrap();
        unzip_limited(&z, d.path(), 4 << 20).unwrap();
        assert_eq!(
            std::fs::read(d.path().join("a")).unwrap(),
            vec![0u8; 2 << 20]
        );
    }
}
