//! Rendering a chosen `Package`: its App spec's fetch steps (inline, git,
//! http) and template steps. `kbld` steps are passed through (image
//! references stay as written: resolving digests needs a registry); `ytt`
//! steps need the template engine, which is not in strata yet, and are
//! reported as such rather than skipped. Helm, kustomize, jsonnet, sops and
//! cue steps are unsupported.

use super::model::Package;
use super::repo::{self, RepoError};
use super::select::VersionSelection;
use crate::diagnostics::{Diagnostic, ToDiagnostic};
use crate::value::Value;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("Package {package}: {message}")]
    Unsupported { package: String, message: String },
    #[error("Package {package}: template step {index} is `ytt`, and ytt templates need strata's template engine, which is not available yet")]
    NeedsTemplateEngine { package: String, index: usize },
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
            RenderError::NeedsTemplateEngine { .. } => Diagnostic::error(self.to_string())
                .with_hint("`strata package resolve` still gives the chosen version"),
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
        let data =
            repo::download(url).map_err(|e| unsupported(p, format!("fetch.http {url}: {e}")))?;
        if let Some(want) = get_str(http, "sha256") {
            let got = repo::sha256_hex(&data);
            if !got.eq_ignore_ascii_case(want.trim()) {
                return Err(unsupported(
                    p,
                    format!("fetch.http {url}: sha256 mismatch: expected {want}, downloaded {got}"),
                ));
            }
        }
        let stage = dest.join(".strata-http");
        std::fs::create_dir_all(&stage).map_err(|e| crate::error::Error::io(&stage, e))?;
        let file_name = url.rsplit('/').next().unwrap_or("");
        repo::unpack(&data, file_name, &stage)
            .map_err(|e| unsupported(p, format!("fetch.http {url}: {e}")))?;
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
    collect(src, src, &mut files)?;
    for rel in files {
        let to = dest.join(&rel);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(|e| crate::error::Error::io(parent, e))?;
        }
        std::fs::copy(src.join(&rel), &to).map_err(|e| crate::error::Error::io(&to, e))?;
    }
    Ok(())
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), RenderError> {
    let rd = std::fs::read_dir(dir).map_err(|e| crate::error::Error::io(dir, e))?;
    let mut paths = Vec::new();
    for e in rd {
        paths.push(e.map_err(|e| crate::error::Error::io(dir, e))?.path());
    }
    paths.sort();
    for p in paths {
        if p.file_name().is_some_and(|n| n == ".git") {
            continue;
        }
        if p.is_dir() {
            collect(root, &p, out)?;
        } else if let Ok(rel) = p.strip_prefix(root) {
            out.push(rel.to_path_buf());
        }
    }
    Ok(())
}

/// Fetches and templates a package; returns the manifests in file order.
pub fn render_package(p: &Package, work: &Path) -> Result<Vec<Value>, RenderError> {
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
        fetch_step(p, step, &dest)?;
    }
    for (i, step) in steps("template").iter().enumerate() {
        let kind = step
            .as_map()
            .and_then(|m| m.keys().next().cloned())
            .unwrap_or_default();
        match kind.as_str() {
            "kbld" => {}
            "ytt" => {
                return Err(RenderError::NeedsTemplateEngine {
                    package: p.meta.name.clone(),
                    index: i,
                })
            }
            other => {
                return Err(unsupported(
                    p,
                    format!("template step {i} `{other}` is not supported (strata renders ytt and passes kbld through)"),
                ))
            }
        }
    }
    let mut files = Vec::new();
    repo::yaml_files(work, &mut files)?;
    let mut docs = Vec::new();
    for f in files {
        let text = crate::error::read_to_string(&f)?;
        let values =
            crate::yaml::load_values(&text).map_err(|source| crate::error::Error::Yaml {
                path: f.clone(),
                source,
            })?;
        docs.extend(values.into_iter().filter(|v| !v.is_null()));
    }
    Ok(docs)
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

    #[test]
    fn kbld_passes_through_inline_content() {
        let p = package(&format!("{FETCH}      template:\n      - kbld:\n          paths: ['-']\n      deploy:\n      - kapp: {{}}\n"));
        let work = tempfile::tempdir().unwrap();
        let docs = render_package(&p, work.path()).unwrap();
        let names: Vec<&str> = docs
            .iter()
            .map(|d| {
                d.get_path(&["metadata", "name"])
                    .and_then(Value::as_str)
                    .unwrap()
            })
            .collect();
        assert_eq!(names, ["a", "b"]);
    }

    #[test]
    fn ytt_waits_for_the_template_engine() {
        let p = package(&format!("{FETCH}      template:\n      - ytt: {{}}\n"));
        let work = tempfile::tempdir().unwrap();
        let e = render_package(&p, work.path()).unwrap_err();
        assert!(
            matches!(e, RenderError::NeedsTemplateEngine { index: 0, .. }),
            "{e}"
        );
    }

    #[test]
    fn registry_sources_are_reported() {
        let p = package("      fetch:\n      - imgpkgBundle:\n          image: r/x:1\n      template:\n      - kbld: {}\n");
        let work = tempfile::tempdir().unwrap();
        let e = render_package(&p, work.path()).unwrap_err();
        assert!(e.to_string().contains("imgpkgBundle"), "{e}");
    }
}
