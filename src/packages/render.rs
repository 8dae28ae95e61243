//! Rendering a chosen `Package`: its App spec's fetch steps (inline, git,
//! http) and template steps, as kapp-controller would run them. `ytt` steps
//! run through strata's template engine (`crate::template`) with the
//! PackageInstall's values; `kbld` steps are passed through (image
//! references stay as written: resolving digests needs a registry). Helm,
//! kustomize, jsonnet, sops and cue steps are unsupported.

use super::model::{Package, PackageInstall};
use super::repo::{self, RepoError};
use super::select::VersionSelection;
use crate::diagnostics::{Diagnostic, ToDiagnostic};
use crate::template::eval::SrcFile;
use crate::value::Value;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("Package {package}: {message}")]
    Unsupported { package: String, message: String },
    #[error("Package {package}: template step {index} (`{kind}`): {message}")]
    Step {
        package: String,
        index: usize,
        kind: String,
        message: String,
    },
    #[error("{0}")]
    Write(String),
    #[error(transparent)]
    Repo(#[from] RepoError),
    #[error(transparent)]
    Io(#[from] crate::error::Error),
}

impl ToDiagnostic for RenderError {
    fn to_diagnostic(&self) -> Diagnostic {
        match self {
            RenderError::Repo(e) => e.to_diagnostic(),
            RenderError::Io(e) => e.to_diagnostic(),
            _ => Diagnostic::error(self.to_string()),
        }
    }
}

fn unsupported(p: &Package, message: impl Into<String>) -> RenderError {
    RenderError::Unsupported {
        package: p.meta.name.clone(),
        message: message.into(),
    }
}

fn get_str<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    v.as_map().and_then(|m| m.get(key)).and_then(Value::as_str)
}

fn selection(v: Option<&Value>) -> Option<VersionSelection> {
    let semver = v?.as_map()?.get("semver")?;
    let m = semver.as_map();
    let constraints = m
        .and_then(|m| m.get("constraints"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let prereleases = m.and_then(|m| m.get("prereleases")).and_then(|p| match p {
        Value::Null => None,
        other => Some(
            other
                .as_map()
                .and_then(|m| m.get("identifiers"))
                .and_then(Value::as_list)
                .map(|l| {
                    l.iter()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
        ),
    });
    Some(VersionSelection {
        constraints,
        prereleases,
    })
}

fn fetch_step(p: &Package, step: &Value, dest: &Path) -> Result<(), RenderError> {
    let name = p.meta.name.as_str();
    let Some(m) = step.as_map() else {
        return Err(unsupported(p, "fetch step is not a mapping"));
    };
    std::fs::create_dir_all(dest).map_err(|e| crate::error::Error::io(dest, e))?;
    if let Some(inline) = m.get("inline") {
        if inline.as_map().and_then(|m| m.get("pathsFrom")).is_some() {
            return Err(unsupported(p, "fetch.inline.pathsFrom reads cluster secrets / config maps; inline the files under `paths`"));
        }
        if let Some(paths) = inline
            .as_map()
            .and_then(|m| m.get("paths"))
            .and_then(Value::as_map)
        {
            let mut keys: Vec<&String> = paths.keys().collect();
            keys.sort();
            for k in keys {
                if !repo::safe_relative(k) {
                    return Err(unsupported(
                        p,
                        format!("fetch.inline.paths: `{k}` must be a relative path"),
                    ));
                }
                let text = paths[k].as_str().unwrap_or_default();
                let f = dest.join(k);
                if let Some(parent) = f.parent() {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| crate::error::Error::io(parent, e))?;
                }
                std::fs::write(&f, text).map_err(|e| crate::error::Error::io(&f, e))?;
            }
        }
        return Ok(());
    }
    if let Some(git) = m.get("git") {
        let url = get_str(git, "url").ok_or_else(|| unsupported(p, "fetch.git.url is missing"))?;
        let clone = dest.join(".strata-git");
        repo::fetch_git(
            name,
            url,
            get_str(git, "ref"),
            selection(git.as_map().and_then(|m| m.get("refSelection"))).as_ref(),
            &clone,
        )?;
        let src = repo::sub_dir(name, &clone, get_str(git, "subPath"))?;
        move_tree(&src, dest)?;
        let _ = std::fs::remove_dir_all(&clone);
        return Ok(());
    }
    if let Some(http) = m.get("http") {
        let url =
            get_str(http, "url").ok_or_else(|| unsupported(p, "fetch.http.url is missing"))?;
        let stage = dest.join(".strata-http");
        std::fs::create_dir_all(&stage).map_err(|e| crate::error::Error::io(&stage, e))?;
        let data = repo::download(url, &stage)
            .map_err(|e| unsupported(p, format!("fetch.http {}: {e}", url.escape_debug())))?;
        if let Some(want) = get_str(http, "sha256") {
            let got = repo::sha256_hex(&data);
            if !got.eq_ignore_ascii_case(want.trim()) {
                return Err(unsupported(
                    p,
                    format!(
                        "fetch.http {}: sha256 mismatch: expected {want}, downloaded {got}",
                        url.escape_debug()
                    ),
                ));
            }
        }
        let file_name = url.rsplit('/').next().unwrap_or("");
        repo::unpack(&data, file_name, &stage)
            .map_err(|e| unsupported(p, format!("fetch.http {}: {e}", url.escape_debug())))?;
        let src = repo::sub_dir(name, &stage, get_str(http, "subPath"))?;
        move_tree(&src, dest)?;
        let _ = std::fs::remove_dir_all(&stage);
        return Ok(());
    }
    let kind = m.keys().find(|k| *k != "path").cloned().unwrap_or_default();
    Err(unsupported(
        p,
        format!("fetch step `{kind}` is not supported yet (strata fetches inline, git and http content; image, imgpkgBundle and helmChart need a registry / chart client)"),
    ))
}

fn move_tree(src: &Path, dest: &Path) -> Result<(), RenderError> {
    let mut files = Vec::new();
    collect(src, &mut files)?;
    for rel in files {
        let to = dest.join(&rel);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(|e| crate::error::Error::io(parent, e))?;
        }
        std::fs::copy(src.join(&rel), &to).map_err(|e| crate::error::Error::io(&to, e))?;
    }
    Ok(())
}

/// The files of a fetched tree, relative to it: fswalk's walk, so a
/// symlink out of the tree, a loop or links that fan out are not followed,
/// and `.git` is left out.
fn collect(root: &Path, out: &mut Vec<PathBuf>) -> Result<(), RenderError> {
    let files = crate::fswalk::files_below(root, &crate::fswalk::not_git)
        .map_err(|e| crate::error::Error::io(&e.path, e.source))?;
    out.extend(
        files
            .into_iter()
            .filter_map(|p| p.strip_prefix(root).ok().map(Path::to_path_buf)),
    );
    Ok(())
}

/// What a render may read besides the package: the install (its
/// `spec.values` and annotations) and the `Secret` / `ConfigMap` documents
/// that the install's values, a ytt step's `valuesFrom` and its
/// `inline.pathsFrom` name (there is no cluster to ask).
#[derive(Debug, Default, Clone, Copy)]
pub struct RenderInputs<'a> {
    pub install: Option<&'a PackageInstall>,
    pub objects: &'a [Value],
    /// Plain data values (name, YAML text) applied after the install's
    /// secrets: strata's inline `values` in the inventory, `--data-values-file`.
    pub extra_values: &'a [(String, String)],
    /// Only `inline` fetch steps are taken (a confined compile: a pull
    /// request's package would choose which repository or URL the runner
    /// fetches, and the review would show it).
    pub inline_only: bool,
}

/// A rendered package: its manifests as (relative file name, YAML text),
/// in a deterministic order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rendered {
    pub files: Vec<(String, String)>,
}

impl Rendered {
    /// All manifests as one YAML stream.
    pub fn to_stream(&self) -> String {
        let mut out = String::new();
        for (_, text) in &self.files {
            let body = text.strip_prefix("---\n").unwrap_or(text);
            if body.trim().is_empty() {
                continue;
            }
            if !out.is_empty() {
                out.push_str("---\n");
            }
            out.push_str(body);
            if !body.ends_with('\n') {
                out.push('\n');
            }
        }
        out
    }
}

/// ytt's annotations on a PackageInstall that move values around
/// (kapp-controller `pkg/packageinstall/app.go`).
const ANN_DV_OVERLAYS: &str = "ext.packaging.carvel.dev/ytt-data-values-overlays";
const ANN_PATHS_FROM_SECRET: &str = "ext.packaging.carvel.dev/ytt-paths-from-secret-name";

fn same_namespace(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (Some(x), Some(y)) => x == y,
        _ => true,
    }
}

/// The files a Secret or ConfigMap holds, sorted by key (kapp-controller
/// sorts the paths it writes them to). A Secret's `stringData` wins over
/// `data`, as the API server merges them.
fn object_files(
    objects: &[Value],
    kind: &str,
    name: &str,
    namespace: Option<&str>,
) -> Result<Vec<(String, String)>, String> {
    let found = objects.iter().find(|o| {
        o.get_path(&["kind"]).and_then(Value::as_str) == Some(kind)
            && o.get_path(&["metadata", "name"]).and_then(Value::as_str) == Some(name)
            && same_namespace(
                o.get_path(&["metadata", "namespace"])
                    .and_then(Value::as_str),
                namespace,
            )
    });
    let Some(obj) = found else {
        return Err(format!(
            "{kind} `{name}` not found among the supplied documents"
        ));
    };
    let mut files: std::collections::BTreeMap<String, String> = Default::default();
    if let Some(data) = obj.get_path(&["data"]).and_then(Value::as_map) {
        for (k, v) in data {
            let text = scalar_string(v).unwrap_or_default();
            let text = if kind == "Secret" {
                use base64::Engine;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(text.trim())
                    .map_err(|e| format!("{kind} `{name}`: data.{k} is not base64: {e}"))?;
                String::from_utf8(bytes)
                    .map_err(|_| format!("{kind} `{name}`: data.{k} is not UTF-8 text"))?
            } else {
                text
            };
            files.insert(k.clone(), text);
        }
    }
    if kind == "Secret" {
        if let Some(data) = obj.get_path(&["stringData"]).and_then(Value::as_map) {
            for (k, v) in data {
                files.insert(k.clone(), scalar_string(v).unwrap_or_default());
            }
        }
    }
    for k in files.keys() {
        if !repo::safe_relative(k) {
            return Err(format!(
                "{kind} `{name}`: key `{k}` is not a relative file name"
            ));
        }
    }
    Ok(files.into_iter().collect())
}

fn scalar_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        Value::Float(f) => Some(f.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A ytt step's reference to a Secret or ConfigMap (`secretRef` /
/// `configMapRef` with `name`).
fn object_ref(m: &crate::value::Map) -> Option<(&'static str, Option<&str>)> {
    if let Some(r) = m.get("secretRef") {
        return Some(("Secret", get_str(r, "name")));
    }
    if let Some(r) = m.get("configMapRef") {
        return Some(("ConfigMap", get_str(r, "name")));
    }
    None
}

/// `--file-mark path:key=value` as ytt reads it: `exclude=true` drops
/// files, `type=...` retypes them (path may be a glob).
fn apply_file_marks(files: &mut Vec<SrcFile>, marks: &[String]) -> Result<(), String> {
    for m in marks {
        let bad = || format!("fileMarks: expected `path:key=value`, got `{m}`");
        let (path, kv) = m.rsplit_once(':').ok_or_else(bad)?;
        let (key, value) = kv.split_once('=').ok_or_else(bad)?;
        let glob = globset::Glob::new(path)
            .map_err(|e| format!("fileMarks: `{m}`: {e}"))?
            .compile_matcher();
        let hit = |f: &SrcFile| f.path == path || glob.is_match(&f.path);
        match key {
            "exclude" if value == "true" => files.retain(|f| !hit(f)),
            "exclude" => {}
            "type" => files
                .iter_mut()
                .filter(|f| hit(f))
                .for_each(|f| f.mark_type = Some(value.to_string())),
            other => return Err(format!("fileMarks: unknown mark `{other}` in `{m}`")),
        }
    }
    Ok(())
}

fn to_src(files: &[(String, String)]) -> Vec<SrcFile> {
    files
        .iter()
        .map(|(n, t)| SrcFile::new(n.clone(), t.clone()))
        .collect()
}

/// The YAML files under the fetched content, verbatim, by relative path.
fn content_files(work: &Path) -> Result<Vec<(String, String)>, RenderError> {
    let paths = repo::yaml_files(work)?;
    let mut out = Vec::new();
    for f in paths {
        let rel = f
            .strip_prefix(work)
            .unwrap_or(&f)
            .to_string_lossy()
            .replace('\\', "/");
        out.push((rel, crate::error::read_to_string(&f)?));
    }
    Ok(out)
}

/// Runs one `ytt` template step. `input` is the previous step's output
/// (ytt's stdin); `first` is set for the first ytt step, which takes the
/// PackageInstall's values and extra paths, as kapp-controller does (the
/// steps that could take them earlier, helmTemplate and cue, are unsupported).
fn ytt_step(
    p: &Package,
    index: usize,
    body: &Value,
    work: &Path,
    input: Option<&[(String, String)]>,
    inputs: &RenderInputs,
    first: bool,
) -> Result<Vec<(String, String)>, RenderError> {
    let fail = |message: String| RenderError::Step {
        package: p.meta.name.clone(),
        index,
        kind: "ytt".into(),
        message,
    };
    let empty = crate::value::Map::default();
    let m = match body {
        Value::Null => &empty,
        Value::Map(m) => m,
        _ => return Err(fail("expected a mapping".into())),
    };
    for k in m.keys() {
        if !matches!(
            k.as_str(),
            "paths" | "inline" | "ignoreUnknownComments" | "strict" | "fileMarks" | "valuesFrom"
        ) {
            return Err(fail(format!(
                "unknown field `{k}` (expected one of: paths, inline, ignoreUnknownComments, strict, fileMarks, valuesFrom)"
            )));
        }
    }
    let ns = inputs.install.and_then(|i| i.meta.namespace.as_deref());
    let strs = |key: &str| -> Result<Vec<String>, RenderError> {
        match m.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::List(l)) => l
                .iter()
                .map(|x| {
                    x.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| fail(format!("{key}: expected a list of strings")))
                })
                .collect(),
            Some(_) => Err(fail(format!("{key}: expected a list of strings"))),
        }
    };

    // Inputs, in ytt's -f order: paths (or stdin, or the whole content),
    // then the inline files.
    let mut files: Vec<SrcFile> = Vec::new();
    let paths = strs("paths")?;
    if paths.is_empty() {
        match input {
            Some(prev) => files.extend(to_src(prev)),
            None => files.extend(to_src(&content_files_all(work)?)),
        }
    } else {
        for path in &paths {
            if path == "-" {
                let prev = input.ok_or_else(|| {
                    fail("path `-` (stdin) needs a previous template step".into())
                })?;
                files.extend(to_src(prev));
                continue;
            }
            let trimmed = path.trim_end_matches('/');
            let full = if trimmed.is_empty() || trimmed == "." {
                work.to_path_buf()
            } else if repo::safe_relative(trimmed) {
                work.join(trimmed)
            } else {
                return Err(fail(format!(
                    "paths: `{path}` must be relative to the fetched content"
                )));
            };
            if !full.exists() {
                return Err(fail(format!(
                    "paths: `{path}` does not exist in the fetched content"
                )));
            }
            files.extend(crate::template::collect_files(&[full]).map_err(|e| fail(e.0))?);
        }
    }
    let mut inline_files: Vec<(String, String)> = Vec::new();
    if let Some(inline) = m.get("inline").and_then(Value::as_map) {
        if let Some(ps) = inline.get("paths").and_then(Value::as_map) {
            let mut keys: Vec<&String> = ps.keys().collect();
            keys.sort();
            for k in keys {
                if !repo::safe_relative(k) {
                    return Err(fail(format!("inline.paths: `{k}` must be a relative path")));
                }
                inline_files.push((k.clone(), scalar_string(&ps[k]).unwrap_or_default()));
            }
        }
        for (j, src) in inline
            .get("pathsFrom")
            .and_then(Value::as_list)
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let sm = src.as_map().cloned().unwrap_or_default();
            let Some((kind, Some(name))) = object_ref(&sm) else {
                return Err(fail(format!(
                    "inline.pathsFrom[{j}]: expected secretRef or configMapRef with a name"
                )));
            };
            let dir = sm
                .values()
                .next()
                .and_then(|r| get_str(r, "directoryPath"))
                .unwrap_or("");
            if !dir.is_empty() && !repo::safe_relative(dir) {
                return Err(fail(format!(
                    "inline.pathsFrom[{j}].directoryPath `{dir}` must be relative"
                )));
            }
            for (k, text) in object_files(inputs.objects, kind, name, ns)
                .map_err(|e| fail(format!("inline.pathsFrom[{j}]: {e}")))?
            {
                let path = if dir.is_empty() {
                    k
                } else {
                    format!("{dir}/{k}")
                };
                inline_files.push((path, text));
            }
        }
    }
    // The install's extra ytt paths (annotation
    // `...ytt-paths-from-secret-name[.suffix]`, ordered by suffix) go to the
    // first ytt step.
    if let (true, Some(install)) = (first, inputs.install) {
        let mut named: Vec<(&str, &str)> = install
            .meta
            .annotations
            .iter()
            .filter_map(|(k, v)| {
                if k == ANN_PATHS_FROM_SECRET {
                    Some(("", v.as_str()))
                } else {
                    k.strip_prefix(ANN_PATHS_FROM_SECRET)
                        .and_then(|s| s.strip_prefix('.'))
                        .map(|s| (s, v.as_str()))
                }
            })
            .collect();
        named.sort();
        for (_, secret) in named {
            inline_files.extend(
                object_files(inputs.objects, "Secret", secret, ns)
                    .map_err(|e| fail(format!("annotation {ANN_PATHS_FROM_SECRET}: {e}")))?,
            );
        }
    }

    // Data values: the step's valuesFrom, then the install's secrets, then
    // strata's plain values.
    let mut values: Vec<SrcFile> = Vec::new();
    for (j, src) in m
        .get("valuesFrom")
        .and_then(Value::as_list)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let sm = src.as_map().cloned().unwrap_or_default();
        if let Some((kind, name)) = object_ref(&sm) {
            let name =
                name.ok_or_else(|| fail(format!("valuesFrom[{j}]: the reference has no name")))?;
            for (k, text) in object_files(inputs.objects, kind, name, ns)
                .map_err(|e| fail(format!("valuesFrom[{j}]: {e}")))?
            {
                values.push(SrcFile::new(format!("{kind} {name}: {k}"), text));
            }
        } else if let Some(path) = sm.get("path").and_then(Value::as_str) {
            if !repo::safe_relative(path) || !work.join(path).is_file() {
                return Err(fail(format!(
                    "valuesFrom[{j}].path `{path}` is not a file of the fetched content"
                )));
            }
            let text = crate::error::read_to_string(&work.join(path))?;
            values.push(SrcFile::new(path.to_string(), text));
        } else if sm.contains_key("downwardAPI") {
            return Err(fail(format!(
                "valuesFrom[{j}]: downwardAPI reads the live cluster and is not supported"
            )));
        } else {
            return Err(fail(format!(
                "valuesFrom[{j}]: expected secretRef, configMapRef or path"
            )));
        }
    }
    if first {
        if let Some(install) = inputs.install {
            let overlays = install.meta.annotations.contains_key(ANN_DV_OVERLAYS);
            for (j, (name, _)) in install.values.iter().enumerate() {
                let found = object_files(inputs.objects, "Secret", name, ns).map_err(|e| {
                    fail(format!(
                        "PackageInstall {}: spec.values[{j}].secretRef: {e}",
                        install.meta.name
                    ))
                })?;
                for (k, text) in found {
                    if overlays {
                        // kapp-controller then passes them as ytt files (data
                        // values overlays), not as --data-values-file.
                        inline_files.push((k, text));
                    } else {
                        values.push(SrcFile::new(format!("Secret {name}: {k}"), text));
                    }
                }
            }
        }
        for (name, text) in inputs.extra_values {
            values.push(SrcFile::new(name.clone(), text.clone()));
        }
    }
    files.extend(to_src(&inline_files));
    apply_file_marks(&mut files, &strs("fileMarks")?).map_err(fail)?;

    let opts = crate::template::Options {
        files,
        data_values_files: values,
        ignore_unknown_comments: m
            .get("ignoreUnknownComments")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        strict: m.get("strict").and_then(Value::as_bool).unwrap_or(false),
        ..Default::default()
    };
    let out = crate::template::run(&opts).map_err(|e| fail(e.0))?;
    Ok(out.into_files())
}

/// Every file of the fetched content (ytt's `-f <dir>`), by relative path.
fn content_files_all(work: &Path) -> Result<Vec<(String, String)>, RenderError> {
    let files = crate::template::collect_files(&[work.to_path_buf()])
        .map_err(|e| RenderError::Write(e.0))?;
    Ok(files.into_iter().map(|f| (f.path, f.text)).collect())
}

/// Fetches a package's content into `work` and runs its template steps:
/// `ytt` through strata's template engine (the install's values go to the
/// first ytt step, as kapp-controller does), `kbld` passed through. Without
/// template steps (or when `kbld` comes first) the fetched YAML files are the
/// manifests.
pub fn render_package(
    p: &Package,
    inputs: RenderInputs,
    work: &Path,
) -> Result<Rendered, RenderError> {
    let Some(spec) = &p.template else {
        return Err(unsupported(p, "has no spec.template.spec to render"));
    };
    let steps = |key: &str| -> Vec<Value> {
        spec.as_map()
            .and_then(|m| m.get(key))
            .and_then(Value::as_list)
            .map(<[Value]>::to_vec)
            .unwrap_or_default()
    };
    let fetches = steps("fetch");
    if fetches.is_empty() {
        return Err(unsupported(p, "has no fetch steps"));
    }
    for (i, step) in fetches.iter().enumerate() {
        // kapp-controller: one fetch step fills the root, several go to
        // their `path` (default: the step's index).
        let dest = if fetches.len() == 1 {
            work.to_path_buf()
        } else {
            let sub = get_str(step, "path")
                .map(str::to_string)
                .unwrap_or_else(|| i.to_string());
            if !repo::safe_relative(&sub) {
                return Err(unsupported(
                    p,
                    format!("fetch[{i}].path `{sub}` must be a relative path"),
                ));
            }
            work.join(sub)
        };
        if inputs.inline_only && !step.as_map().is_some_and(|m| m.contains_key("inline")) {
            let kind = step
                .as_map()
                .and_then(|m| m.keys().find(|k| *k != "path").cloned())
                .unwrap_or_default();
            return Err(unsupported(
                p,
                format!("fetch[{i}] `{kind}`: a confined compile (a review of a pull request) fetches only `inline` package content, as does `package render` on a pull request or with --confine: the pull request would choose what the runner reads; inline the files, or run without confinement in a trusted job"),
            ));
        }
        fetch_step(p, step, &dest)?;
    }
    let mut stream: Option<Vec<(String, String)>> = None;
    let mut seen_ytt = false;
    for (i, step) in steps("template").iter().enumerate() {
        let Some((kind, body)) = step.as_map().and_then(|m| m.iter().next()) else {
            return Err(unsupported(p, format!("template step {i} is empty")));
        };
        match kind.as_str() {
            "kbld" => {
                if stream.is_none() {
                    stream = Some(content_files(work)?);
                }
            }
            "ytt" => {
                let out = ytt_step(
                    p,
                    i,
                    body,
                    work,
                    stream.as_deref(),
                    &inputs,
                    !seen_ytt,
                )?;
                seen_ytt = true;
                stream = Some(out);
            }
            other => {
                return Err(RenderError::Step {
                    package: p.meta.name.clone(),
                    index: i,
                    kind: other.to_string(),
                    message: "not supported: strata renders `ytt` steps and passes `kbld` through (render the package with kapp-controller, or switch the step to ytt)".into(),
                })
            }
        }
    }
    let files = match stream {
        Some(s) => s,
        None => content_files(work)?,
    };
    Ok(Rendered { files })
}

/// The rendered manifests as values, in file order (empty documents dropped).
pub fn rendered_documents(r: &Rendered) -> Result<Vec<Value>, String> {
    let mut docs = Vec::new();
    for (name, text) in &r.files {
        let values = crate::yaml::load_values(text).map_err(|e| format!("{name}: {e}"))?;
        docs.extend(values.into_iter().filter(|v| !v.is_null()));
    }
    Ok(docs)
}

/// Writes `files` as the directory `dir`, replacing what was there in one
/// rename: the new content is built beside it first, so a failure leaves
/// the old directory untouched.
pub fn write_dir_atomically(dir: &Path, files: &[(String, String)]) -> Result<(), RenderError> {
    let io = |p: &Path, e: std::io::Error| RenderError::Io(crate::error::Error::io(p, e));
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).map_err(|e| io(&parent, e))?;
    let stage = tempfile::Builder::new()
        .prefix(".strata-package-")
        .tempdir_in(&parent)
        .map_err(|e| io(&parent, e))?;
    let new = stage.path().join("new");
    for (name, text) in files {
        if !repo::safe_relative(name) {
            return Err(RenderError::Write(format!(
                "rendered file name `{name}` is not a relative path"
            )));
        }
        let f = new.join(name);
        if let Some(pp) = f.parent() {
            std::fs::create_dir_all(pp).map_err(|e| io(pp, e))?;
        }
        std::fs::write(&f, text).map_err(|e| io(&f, e))?;
    }
    std::fs::create_dir_all(&new).map_err(|e| io(&new, e))?;
    if dir.exists() {
        std::fs::rename(dir, stage.path().join("old")).map_err(|e| io(dir, e))?;
    }
    std::fs::rename(&new, dir).map_err(|e| io(dir, e))?;
    Ok(())
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::packages::model::{parse_stream, Resource, Strictness};

    fn package(template: &str) -> Package {
        let text = format!(
            "apiVersion: data.packaging.carvel.dev/v1alpha1\nkind: Package\nmetadata:\n  name: app.example.com.1.0.0\nspec:\n  refName: app.example.com\n  version: 1.0.0\n  template:\n    spec:\n{template}"
        );
        let docs = crate::yaml::load_all(&text).unwrap();
        let (mut res, _) = parse_stream(Path::new("p"), &docs, Strictness::Strict, false).unwrap();
        let Resource::Package(p) = res.remove(0) else {
            panic!()
        };
        p
    }

    const FETCH: &str = "      fetch:\n      - inline:\n          paths:\n            b.yml: |\n              kind: ConfigMap\n              metadata: {name: b}\n            a.yml: |\n              kind: ConfigMap\n              metadata: {name: a}\n";

    fn names(r: &Rendered) -> Vec<String> {
        rendered_documents(r)
            .unwrap()
            .iter()
            .map(|d| {
                d.get_path(&["metadata", "name"])
                    .and_then(Value::as_str)
                    .unwrap()
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn kbld_passes_through_inline_content() {
        let p = package(&format!("{FETCH}      template:\n      - kbld:\n          paths: ['-']\n      deploy:\n      - kapp: {{}}\n"));
        let work = tempfile::tempdir().unwrap();
        let r = render_package(&p, RenderInputs::default(), work.path()).unwrap();
        assert_eq!(names(&r), ["a", "b"]);
        assert_eq!(r.files[0].0, "a.yml");
    }

    const YTT_FETCH: &str = "      fetch:\n      - inline:\n          paths:\n            config/values.yml: |\n              #@data/values\n              ---\n              name: dflt\n              replicas: 1\n            config/cm.yml: |\n              #@ load(\"@ytt:data\", \"data\")\n              kind: ConfigMap\n              metadata:\n                name: #@ data.values.name\n              data:\n                replicas: #@ str(data.values.replicas)\n";

    fn install(text: &str) -> PackageInstall {
        let docs = crate::yaml::load_all(text).unwrap();
        let (mut res, _) = parse_stream(Path::new("i"), &docs, Strictness::Strict, false).unwrap();
        let Resource::PackageInstall(i) = res.remove(0) else {
            panic!()
        };
        i
    }

    #[test]
    fn ytt_takes_the_install_values_then_kbld() {
        let p = package(&format!(
            "{YTT_FETCH}      template:\n      - ytt:\n          paths: [config/]\n      - kbld:\n          paths: ['-']\n"
        ));
        let i = install("apiVersion: packaging.carvel.dev/v1alpha1\nkind: PackageInstall\nmetadata: {name: app, namespace: apps}\nspec:\n  packageRef: {refName: app.example.com}\n  values:\n  - secretRef: {name: app-values}\n");
        let secret = crate::yaml::load_values(
            "kind: Secret\nmetadata: {name: app-values, namespace: apps}\nstringData:\n  v.yml: 'name: from-secret'\ndata:\n  w.yml: cmVwbGljYXM6IDM=\n",
        )
        .unwrap();
        let work = tempfile::tempdir().unwrap();
        let extra = [("inline".to_string(), "replicas: 5\n".to_string())];
        let r = render_package(
            &p,
            RenderInputs {
                install: Some(&i),
                objects: &secret,
                extra_values: &extra,
                inline_only: false,
            },
            work.path(),
        )
        .unwrap();
        assert_eq!(names(&r), ["from-secret"]);
        let doc = &rendered_documents(&r).unwrap()[0];
        // base64 `data` (replicas: 3) is applied, then the plain values win.
        assert_eq!(
            doc.get_path(&["data", "replicas"]),
            Some(&Value::String("5".into()))
        );
        assert_eq!(r.files[0].0, "cm.yml");

        // A secret in another namespace is not the install's.
        let other = crate::yaml::load_values(
            "kind: Secret\nmetadata: {name: app-values, namespace: other}\nstringData: {v.yml: 'a: 1'}\n",
        )
        .unwrap();
        let work = tempfile::tempdir().unwrap();
        let e = render_package(
            &p,
            RenderInputs {
                install: Some(&i),
                objects: &other,
                extra_values: &[],
                inline_only: false,
            },
            work.path(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("template step 0 (`ytt`): PackageInstall app: spec.values[0].secretRef: Secret `app-values` not found"),
            "{e}"
        );
    }

    #[test]
    fn unsupported_steps_name_package_and_step() {
        let p = package(&format!(
            "{FETCH}      template:\n      - kbld: {{}}\n      - helmTemplate: {{}}\n"
        ));
        let work = tempfile::tempdir().unwrap();
        let e = render_package(&p, RenderInputs::default(), work.path())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                "Package app.example.com.1.0.0: template step 1 (`helmTemplate`): not supported"
            ),
            "{e}"
        );
    }

    #[test]
    fn atomic_directory_write_replaces_content() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("pk/app");
        write_dir_atomically(&dir, &[("a.yml".into(), "a: 1\n".into())]).unwrap();
        write_dir_atomically(&dir, &[("sub/b.yml".into(), "b: 1\n".into())]).unwrap();
        assert!(!dir.join("a.yml").exists());
        assert_eq!(
            std::fs::read_to_string(dir.join("sub/b.yml")).unwrap(),
            "b: 1\n"
        );
        let left: Vec<_> = std::fs::read_dir(d.path().join("pk")).unwrap().collect();
        assert_eq!(left.len(), 1, "no staging directory is left");
    }

    #[test]
    fn registry_sources_are_reported() {
        let p = package("      fetch:\n      - imgpkgBundle:\n          image: r/x:1\n      template:\n      - kbld: {}\n");
        let work = tempfile::tempdir().unwrap();
        let e = render_package(&p, RenderInputs::default(), work.path()).unwrap_err();
        assert!(e.to_string().contains("imgpkgBundle"), "{e}");
    }
}
