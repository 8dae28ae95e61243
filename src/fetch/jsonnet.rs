//! Jsonnet dependencies the way jsonnet-bundler (`jb install`) resolves
//! them, without `jb`: `jsonnetfile.json` (or `jsonnetfile.jsonnet`
//! rendered with external variables) lists git sources (`remote`,
//! `subdir`, `version`) and local ones; each is installed to
//! `vendor/<host>/<path>[/<subdir>]`, with a legacy symlink
//! `vendor/<name>` when `legacyImports` is on, transitive dependencies
//! included, and the resolved commits written to `jsonnetfile.lock.json`.

use super::{open_repo, present_and_pinned, repo_dir_name, resolve, tree};
use crate::git::{redact_url, CacheRepo, Credentials};
use serde_json::{json, Value as Json};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};

/// How to install.
#[derive(Debug, Clone, Default)]
pub struct JbOptions {
    /// Where bare repositories are cached (shared with [`super::fetch`]).
    pub repos_dir: PathBuf,
    pub offline: bool,
    pub credentials: Option<Credentials>,
    /// External variables for `jsonnetfile.jsonnet`.
    pub ext_vars: Vec<(String, String)>,
    /// Ignore the lock file and resolve every version again (`jb update`).
    pub update: bool,
    /// A pull request's install (`--confine`, a `pull_request*` event):
    /// every git remote, the dependencies' own included, must be a network
    /// URL ([`super::is_network_url`]), a direct `local` directory and
    /// what `jsonnetfile.jsonnet` imports must lie below these roots.
    pub confine: Option<crate::compile::confine::Confine>,
}

/// One installed package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// The vendor path (`github.com/org/repo/subdir`) or the legacy name
    /// of a local source.
    pub name: String,
    /// The remote without credentials (empty for local sources).
    pub remote: String,
    pub version: String,
    /// The commit installed (empty for local sources).
    pub commit: String,
    /// Whether `vendor/` was written for it by this run.
    pub changed: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum JbError {
    #[error("{file}: {message}")]
    File { file: PathBuf, message: String },
    #[error("jsonnet dependency `{name}` ({remote}, version `{version}`): {message}")]
    Dependency {
        name: String,
        remote: String,
        version: String,
        message: String,
    },
}

#[derive(Debug, Clone)]
enum Source {
    Git { remote: String, subdir: String },
    Local { directory: String },
}

#[derive(Debug, Clone)]
struct Dep {
    source: Source,
    version: String,
    legacy_name: Option<String>,
    legacy_imports: bool,
}

impl Dep {
    /// jsonnet-bundler's package name: the vendor path.
    fn name(&self) -> String {
        match &self.source {
            Source::Git { remote, subdir } => {
                let base = repo_dir_name(remote);
                let base = base.strip_suffix(".git").unwrap_or(&base).to_string();
                let sub = subdir.trim_matches('/');
                if sub.is_empty() {
                    base
                } else {
                    format!("{base}/{sub}")
                }
            }
            Source::Local { .. } => self.legacy(),
        }
    }

    /// The short import name: `name` if given, else the last element of
    /// the sub-directory, else the repository (or directory) name.
    fn legacy(&self) -> String {
        if let Some(n) = &self.legacy_name {
            return n.clone();
        }
        let last = |s: &str| {
            s.trim_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .to_string()
        };
        match &self.source {
            Source::Git { remote, subdir } if !subdir.trim_matches('/').is_empty() => {
                let _ = remote;
                last(subdir)
            }
            Source::Git { remote, .. } => {
                let r = last(&repo_dir_name(remote));
                r.strip_suffix(".git").unwrap_or(&r).to_string()
            }
            Source::Local { directory } => last(directory),
        }
    }
}

/// Reads `jsonnetfile.json`, or renders `jsonnetfile.jsonnet`, in `dir`.
/// `None` when neither exists (a package without dependencies).
fn read_jsonnetfile(dir: &Path, ext_vars: &[(String, String)]) -> Result<Option<Json>, JbError> {
    let json = dir.join("jsonnetfile.json");
    let jsonnet = dir.join("jsonnetfile.jsonnet");
    if json.is_file() {
        let text = std::fs::read_to_string(&json).map_err(|e| JbError::File {
            file: json.clone(),
            message: e.to_string(),
        })?;
        return serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| JbError::File {
                file: json,
                message: format!("invalid JSON: {e}"),
            });
    }
    if jsonnet.is_file() {
        return render(&jsonnet, ext_vars)
            .map(Some)
            .map_err(|message| JbError::File {
                file: jsonnet,
                message,
            });
    }
    Ok(None)
}

/// Renders a `jsonnetfile.jsonnet` with external variables (Commodore does
/// this for each component before installing).
pub fn render_jsonnetfile(file: &Path, ext_vars: &[(String, String)]) -> Result<Json, String> {
    render(file, ext_vars)
}

fn render(file: &Path, ext_vars: &[(String, String)]) -> Result<Json, String> {
    use jrsonnet_evaluator::trace::PathResolver;
    use jrsonnet_evaluator::State;
    // strata's std: `std.parseJson` keeps numbers as numbers.
    let ctx = crate::compile::jsonnet::StdContext::new(PathResolver::Absolute);
    for (k, v) in ext_vars {
        ctx.add_ext_str(k.as_str().into(), v.as_str().into());
    }
    let mut builder = State::builder();
    builder
        // Imports are checked against the active confinement: a pull
        // request's `importstr '/home/runner/...'` became a remote's URL,
        // quoted by the fetch's error.
        .import_resolver(crate::compile::jsonnet::BundledResolver {
            search_paths: Vec::new(),
            bundled: Vec::new(),
            bundled_first: false,
        })
        .context_initializer(ctx);
    let state = builder.build();
    let _guard = state.enter();
    let abs = std::fs::canonicalize(file).map_err(|e| e.to_string())?;
    let v = crate::compile::jsonnet::with_layer_budget(|| {
        state
            .import(abs.as_path())
            .and_then(|v| crate::compile::jsonnet::val_to_value(&v))
            .map_err(|e| format!("{e}").trim_end().to_string())
    })?;
    serde_json::to_value(&v).map_err(|e| e.to_string())
}

fn parse_deps(file: &Path, v: &Json) -> Result<(Vec<Dep>, bool), JbError> {
    let err = |message: String| JbError::File {
        file: file.to_path_buf(),
        message,
    };
    let legacy_default = v
        .get("legacyImports")
        .and_then(Json::as_bool)
        .unwrap_or(true);
    let mut out = Vec::new();
    let list = match v.get("dependencies") {
        None | Some(Json::Null) => return Ok((out, legacy_default)),
        Some(Json::Array(a)) => a,
        Some(_) => return Err(err("`dependencies` must be a list".into())),
    };
    for (i, d) in list.iter().enumerate() {
        let at = |m: &str| err(format!("dependencies[{i}]: {m}"));
        let source = d.get("source").ok_or_else(|| at("no `source`"))?;
        let src = if let Some(g) = source.get("git") {
            let remote = g
                .get("remote")
                .and_then(Json::as_str)
                .ok_or_else(|| at("`source.git.remote` is missing"))?;
            Source::Git {
                remote: remote.to_string(),
                subdir: g
                    .get("subdir")
                    .and_then(Json::as_str)
                    .unwrap_or_default()
                    .to_string(),
            }
        } else if let Some(l) = source.get("local") {
            Source::Local {
                directory: l
                    .get("directory")
                    .and_then(Json::as_str)
                    .ok_or_else(|| at("`source.local.directory` is missing"))?
                    .to_string(),
            }
        } else {
            return Err(at("only `git` and `local` sources are supported"));
        };
        if let Source::Git { subdir, remote } = &src {
            if subdir.split('/').any(|c| c == "..") {
                return Err(at("`subdir` must stay inside the repository"));
            }
            if let Some(why) = super::unfetchable_url(remote) {
                return Err(at(&why));
            }
        }
        let version = d
            .get("version")
            .and_then(Json::as_str)
            .unwrap_or(if matches!(src, Source::Git { .. }) {
                "master"
            } else {
                ""
            })
            .to_string();
        let dep = Dep {
            source: src,
            version,
            legacy_name: d.get("name").and_then(Json::as_str).map(str::to_string),
            legacy_imports: d
                .get("legacyImports")
                .and_then(Json::as_bool)
                .unwrap_or(legacy_default),
        };
        // The legacy name is joined to vendor/ as a link: `..` or an
        // absolute name made (or replaced) a link anywhere. jsonnet-bundler's
        // legacy names are one path component.
        if dep.legacy_name.is_some() || matches!(dep.source, Source::Local { .. }) {
            let legacy = dep.legacy();
            if !one_component(&legacy) {
                return Err(at(&format!(
                    "the legacy import name {legacy:?} (`name`, linked as vendor/<name>) must be one plain path component: not empty, `.` or `..`, without `/`, `\\` or control characters"
                )));
            }
        }
        out.push(dep);
    }
    Ok((out, legacy_default))
}

/// Whether `name` is one plain path component (a link name in vendor/).
fn one_component(name: &str) -> bool {
    !(name.is_empty()
        || name == "."
        || name == ".."
        || name.contains(['/', '\\'])
        || name.chars().any(char::is_control))
}

/// Sum of a vendored directory: sha256 over sorted relative paths and
/// contents, base64 (jsonnet-bundler's idea, not its exact bytes).
fn dir_sum(dir: &Path) -> Option<String> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).ok()?.flatten() {
            let p = e.path();
            let ft = e.file_type().ok()?;
            if ft.is_dir() {
                stack.push(p);
            } else {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut h = Sha256::new();
    for f in files {
        let rel = f.strip_prefix(dir).ok()?.to_string_lossy().into_owned();
        let data = match std::fs::symlink_metadata(&f).ok()?.file_type().is_symlink() {
            true => std::fs::read_link(&f)
                .ok()?
                .to_string_lossy()
                .as_bytes()
                .to_vec(),
            false => std::fs::read(&f).ok()?,
        };
        h.update(rel.as_bytes());
        h.update([0]);
        h.update(&data);
    }
    use base64::Engine;
    Some(base64::engine::general_purpose::STANDARD.encode(h.finalize()))
}

/// Installs the dependencies of the jsonnetfile in `dir` into
/// `dir/vendor` and writes `dir/jsonnetfile.lock.json`.
pub fn install(dir: &Path, opts: &JbOptions) -> Result<Vec<Installed>, JbError> {
    let confine = opts.confine.clone().map(std::sync::Arc::new);
    crate::compile::confine::scoped(confine, || install_scoped(dir, opts))
}

/// A git remote or local directory a confined install refuses: the pull
/// request would choose which of the runner's files (or which service of
/// its network) go into `vendor/`.
fn refuse_when_confined(
    dir: &Path,
    file: &Path,
    dep: &Dep,
    opts: &JbOptions,
) -> Result<(), JbError> {
    let Some(c) = &opts.confine else {
        return Ok(());
    };
    let message = match &dep.source {
        Source::Git { remote, .. } if !super::is_network_url(remote) => format!(
            "source.git.remote `{}`: {}",
            crate::diagnostics::escape_controls(&redact_url(remote)),
            super::CONFINED_FETCH
        ),
        Source::Local { directory } => match c.check(&dir.join(directory)) {
            Err(e) => format!("source.local.directory: {e}"),
            Ok(()) => return Ok(()),
        },
        Source::Git { .. } => return Ok(()),
    };
    Err(JbError::File {
        file: file.to_path_buf(),
        message,
    })
}

/// Why a confined install refuses to write a file that is a link out.
pub(crate) const WRITE_THROUGH_LINK: &str = "it leads outside the working directory (through a symlink the pull request committed): a pull request's install (a GitHub `pull_request*` event, or --confine) writes only inside it; remove the link";

fn install_scoped(dir: &Path, opts: &JbOptions) -> Result<Vec<Installed>, JbError> {
    let file = dir.join("jsonnetfile.json");
    let Some(root) = read_jsonnetfile(dir, &opts.ext_vars)? else {
        return Err(JbError::File {
            file,
            message: "no jsonnetfile.json or jsonnetfile.jsonnet here".into(),
        });
    };
    let (direct, legacy_default) = parse_deps(&file, &root)?;
    for d in &direct {
        refuse_when_confined(dir, &file, d, opts)?;
    }
    let lock_path = dir.join("jsonnetfile.lock.json");
    let mut locked: HashMap<String, (String, String)> = HashMap::new();
    if !opts.update && lock_path.is_file() {
        let text = std::fs::read_to_string(&lock_path).map_err(|e| JbError::File {
            file: lock_path.clone(),
            message: e.to_string(),
        })?;
        let v: Json = serde_json::from_str(&text).map_err(|e| JbError::File {
            file: lock_path.clone(),
            message: format!("invalid JSON: {e}"),
        })?;
        let (deps, _) = parse_deps(&lock_path, &v)?;
        if let Some(Json::Array(list)) = v.get("dependencies") {
            for (d, raw) in deps.iter().zip(list) {
                let sum = raw.get("sum").and_then(Json::as_str).unwrap_or_default();
                locked.insert(d.name(), (d.version.clone(), sum.to_string()));
            }
        }
    }
    // The lock is written in place: a pull request's committed
    // `jsonnetfile.lock.json -> /home/runner/.bashrc` was overwritten.
    if opts
        .confine
        .as_ref()
        .is_some_and(|c| !c.check_write(&lock_path))
    {
        return Err(JbError::File {
            file: lock_path,
            message: WRITE_THROUGH_LINK.into(),
        });
    }
    let vendor = dir.join("vendor");
    // A committed link (`vendor -> /elsewhere`, `dependencies/.repos ->
    // $HOME`) carried the packages, the links to local sources and the
    // clones -- and the deletion of an older install -- wherever it
    // pointed (probe 29).
    let repos_parent = opts.repos_dir.parent().unwrap_or(&opts.repos_dir);
    let linked = crate::fswalk::first_link_below(dir, &vendor).or_else(|| {
        [repos_parent, opts.repos_dir.as_path()]
            .into_iter()
            .find(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()))
            .map(Path::to_path_buf)
    });
    if let Some(at) = linked {
        let to = std::fs::read_link(&at)
            .map(|t| format!(" (to {})", t.display()))
            .unwrap_or_default();
        return Err(JbError::File {
            file: at,
            message: format!(
                "is a symbolic link{to}: jsonnet packages and their clones are written only into real directories; remove the link"
            ),
        });
    }
    std::fs::create_dir_all(&vendor).map_err(|e| JbError::File {
        file: vendor.clone(),
        message: e.to_string(),
    })?;
    let mut repos: HashMap<String, CacheRepo> = HashMap::new();
    let mut queue: VecDeque<Dep> = direct.into();
    let mut done: BTreeMap<String, (Dep, Installed, String)> = BTreeMap::new();
    while let Some(dep) = queue.pop_front() {
        let name = dep.name();
        // The first (shallowest) requirement of a package wins.
        if done.contains_key(&name) {
            continue;
        }
        let legacy = dep.legacy_imports.then(|| dep.legacy());
        let (installed, sum, pkg_dir) = match &dep.source {
            Source::Local { directory } => {
                let target = dir.join(directory);
                if !target.is_dir() {
                    return Err(JbError::Dependency {
                        name,
                        remote: String::new(),
                        version: String::new(),
                        message: format!("local directory {} does not exist", target.display()),
                    });
                }
                let rel = Path::new("..").join(directory);
                relink(&vendor.join(dep.legacy()), &rel).map_err(|message| {
                    JbError::Dependency {
                        name: name.clone(),
                        remote: String::new(),
                        version: String::new(),
                        message,
                    }
                })?;
                let inst = Installed {
                    name: name.clone(),
                    remote: String::new(),
                    version: String::new(),
                    commit: String::new(),
                    changed: false,
                };
                (inst, String::new(), target)
            }
            Source::Git { remote, subdir } => {
                let (inst, sum) =
                    install_git(&dep, remote, subdir, &vendor, &locked, &mut repos, opts)?;
                if let Some(l) = &legacy {
                    if l != &name {
                        relink(&vendor.join(l), Path::new(&name)).map_err(|message| {
                            JbError::Dependency {
                                name: name.clone(),
                                remote: redact_url(remote),
                                version: dep.version.clone(),
                                message,
                            }
                        })?;
                    }
                }
                (inst, sum, vendor.join(&name))
            }
        };
        // Transitive dependencies come from the package's own jsonnetfile.
        if let Some(v) = read_jsonnetfile(&pkg_dir, &[])? {
            let own = pkg_dir.join("jsonnetfile.json");
            let (deps, _) = parse_deps(&own, &v)?;
            for d in deps {
                if let Source::Local { .. } = d.source {
                    continue;
                }
                refuse_when_confined(&pkg_dir, &own, &d, opts)?;
                queue.push_back(d);
            }
        }
        done.insert(name, (dep, installed, sum));
    }
    // The lock: every package, sorted by name, at its commit.
    let deps: Vec<Json> = done
        .values()
        .map(|(dep, inst, sum)| match &dep.source {
            Source::Git { remote, subdir } => {
                let mut e = json!({
                    "source": {"git": {"remote": remote, "subdir": subdir}},
                    "version": inst.commit,
                    "sum": sum,
                });
                if let (Some(n), Some(o)) = (&dep.legacy_name, e.as_object_mut()) {
                    o.insert("name".into(), json!(n));
                }
                e
            }
            Source::Local { directory } => json!({
                "source": {"local": {"directory": directory}},
                "version": "",
            }),
        })
        .collect();
    let lock = json!({"version": 1, "dependencies": deps, "legacyImports": legacy_default});
    let mut text = serde_json::to_string_pretty(&lock).unwrap_or_default();
    text.push('\n');
    if std::fs::read_to_string(&lock_path).ok().as_deref() != Some(text.as_str()) {
        std::fs::write(&lock_path, text).map_err(|e| JbError::File {
            file: lock_path.clone(),
            message: e.to_string(),
        })?;
    }
    Ok(done.into_values().map(|(_, i, _)| i).collect())
}

fn install_git(
    dep: &Dep,
    remote: &str,
    subdir: &str,
    vendor: &Path,
    locked: &HashMap<String, (String, String)>,
    repos: &mut HashMap<String, CacheRepo>,
    opts: &JbOptions,
) -> Result<(Installed, String), JbError> {
    let name = dep.name();
    let shown = redact_url(remote);
    let err = |message: String| JbError::Dependency {
        name: name.clone(),
        remote: shown.clone(),
        version: dep.version.clone(),
        message,
    };
    let lock = locked.get(&name);
    let want = lock.map(|(c, _)| c.clone()).unwrap_or(dep.version.clone());
    let dest = vendor.join(&name);
    // Up to date: the locked commit is installed and untouched.
    if let Some((commit, sum)) = lock {
        if !sum.is_empty() && dest.is_dir() && dir_sum(&dest).as_deref() == Some(sum.as_str()) {
            return Ok((
                Installed {
                    name: name.clone(),
                    remote: shown.clone(),
                    version: dep.version.clone(),
                    commit: commit.clone(),
                    changed: false,
                },
                sum.clone(),
            ));
        }
    }
    if !repos.contains_key(remote) {
        let w = want.clone();
        let needs = move |r: &CacheRepo| !present_and_pinned(r.repo(), &w);
        let repo = open_repo(
            remote,
            &opts.repos_dir,
            opts.offline,
            opts.confine.is_some(),
            opts.credentials.as_ref(),
            &needs,
            &|_| {},
        )
        .map_err(&err)?;
        repos.insert(remote.to_string(), repo);
    }
    let Some(repo) = repos.get(remote) else {
        return Err(err("repository not open".into()));
    };
    let commit = resolve(repo.repo(), &want)
        .ok_or_else(|| err("unknown version: no such branch, tag or commit".into()))?
        .id();
    let tree_id = repo.commit_tree(commit).map_err(|e| err(e.to_string()))?;
    let sub = subdir.trim_matches('/');
    let files = repo
        .list_tree(tree_id, sub)
        .map_err(|e| err(e.to_string()))?;
    if files.is_empty() && !sub.is_empty() {
        return Err(err(format!("`subdir` {sub} does not exist at {commit}")));
    }
    // A link committed inside vendor/ (`vendor/github.com -> /elsewhere`)
    // would carry the deletion and the write below (the package's own
    // directory, a link, is replaced, not followed).
    if let Some(at) = dest
        .parent()
        .and_then(|p| crate::fswalk::first_link_below(vendor, p))
    {
        return Err(err(format!(
            "{} is a symbolic link: a package is written only into real directories below vendor/; remove the link",
            at.display()
        )));
    }
    if std::fs::symlink_metadata(&dest).is_ok() {
        let r = if dest.is_dir() && !dest.is_symlink() {
            std::fs::remove_dir_all(&dest)
        } else {
            std::fs::remove_file(&dest)
        };
        r.map_err(|e| err(format!("{}: {e}", dest.display())))?;
    }
    std::fs::create_dir_all(&dest).map_err(|e| err(format!("{}: {e}", dest.display())))?;
    tree::write_subtree(repo, &files, sub, &dest).map_err(&err)?;
    let sum = dir_sum(&dest).unwrap_or_default();
    Ok((
        Installed {
            name: name.clone(),
            remote: shown.clone(),
            version: dep.version.clone(),
            commit: commit.to_string(),
            changed: true,
        },
        sum,
    ))
}

/// Points the symlink `link` at `target`, replacing an older link.
fn relink(link: &Path, target: &Path) -> Result<(), String> {
    if let Ok(m) = std::fs::symlink_metadata(link) {
        if m.file_type().is_symlink() {
            if std::fs::read_link(link).ok().as_deref() == Some(target) {
                return Ok(());
            }
            std::fs::remove_file(link).map_err(|e| format!("{}: {e}", link.display()))?;
        } else {
            return Err(format!(
                "{} exists and is not a symlink: remove it",
                link.display()
            ));
        }
    }
    if let Some(p) = link.parent() {
        std::fs::create_dir_all(p).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(target, link).map_err(|e| format!("{}: {e}", link.display()))
    }
    #[cfg(not(unix))]
    {
        Err(format!(
            "{}: symlinks are only supported on Unix",
            link.display()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Probe 45's leftover: a git remote in git's remote-helper form or
    /// starting with `-` got gix's own refusal, naming no way out.
    #[test]
    fn remote_helper_and_option_remotes_are_refused_with_what_to_give() {
        let file = Path::new("jsonnetfile.json");
        for remote in [
            "ext::sh -c touch% /tmp/x",
            "fd::17",
            "--upload-pack=touch x",
        ] {
            let v: Json = serde_json::json!({
                "version": 1,
                "dependencies": [{"source": {"git": {"remote": remote}}, "version": "main"}],
            });
            let e = parse_deps(file, &v).expect_err("refused").to_string();
            assert!(e.contains("dependencies[0]: the URL"), "{e}");
            assert!(
                e.contains("give an https://, ssh://, git@host:path or file:// URL"),
                "{e}"
            );
        }
        let v: Json = serde_json::json!({
            "version": 1,
            "dependencies": [{"source": {"git": {"remote": "https://h/a/b.git"}}, "version": "main"}],
        });
        assert!(parse_deps(file, &v).is_ok());
    }

    #[test]
    fn names_packages_like_jsonnet_bundler() {
        let d = |remote: &str, subdir: &str, name: Option<&str>| Dep {
            source: Source::Git {
                remote: remote.into(),
                subdir: subdir.into(),
            },
            version: "main".into(),
            legacy_name: name.map(str::to_string),
            legacy_imports: true,
        };
        let a = d(
            "https://github.com/coreos/kube-prometheus",
            "jsonnet/kube-prometheus",
            None,
        );
        assert_eq!(
            a.name(),
            "github.com/coreos/kube-prometheus/jsonnet/kube-prometheus"
        );
        assert_eq!(a.legacy(), "kube-prometheus");
        let b = d(
            "https://github.com/bitnami-labs/kube-libsonnet.git",
            "",
            None,
        );
        assert_eq!(b.name(), "github.com/bitnami-labs/kube-libsonnet");
        assert_eq!(b.legacy(), "kube-libsonnet");
        assert_eq!(
            d("https://github.com/a/b", "lib", Some("bee")).legacy(),
            "bee"
        );
    }
}
