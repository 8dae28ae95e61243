//! The packages phase of `strata compile` for one target: the installs the
//! inventory declares (`parameters.packages_install`) and the
//! `PackageInstall` documents the target's other compile entries wrote are
//! resolved against `parameters.package_repositories`, and each chosen
//! package is rendered into `compiled/<target>/packages/<install>/` beside a
//! small `VERSION` file, so that a version change is one line of the
//! catalog diff.

use super::hierarchy::{self, DeclaredRepository};
use super::install::{resolve_install, InstallError};
use super::model::{ModelError, PackageInstall, Strictness};
use super::render::{self, RenderInputs};
use super::repo::{self, RepoContent};
use super::select::SelectError;
use crate::confine::Confine;
use crate::value::Value;
use std::path::{Path, PathBuf};

/// The stable file that records the choice (not YAML on purpose: tools that
/// apply every `*.yaml` / `*.yml` of a catalog directory skip it).
pub const VERSION_FILE: &str = "VERSION";

/// Directory below the target's output.
pub const PACKAGES_DIR: &str = "packages";

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct PackagesError(pub String);

fn model_err(e: ModelError) -> PackagesError {
    let field = if e.field.is_empty() {
        String::new()
    } else {
        format!(": field `{}`", e.field)
    };
    PackagesError(format!("{}{field}: {}", e.doc, e.message))
}

/// An install to resolve, and where it came from (for messages).
struct Wanted {
    install: PackageInstall,
    values: Option<Value>,
    origin: String,
}

/// The target's output YAML files that may hold a PackageInstall or a
/// Secret / ConfigMap, with their text (other files are not kept).
fn output_files(target_root: &Path) -> Result<Vec<(PathBuf, String)>, PackagesError> {
    let skip = target_root.join(PACKAGES_DIR);
    let files = crate::fswalk::files_below(target_root, &|d| d != skip)
        .map_err(|e| PackagesError(e.to_string()))?;
    let mut out = Vec::new();
    for f in files.into_iter().filter(|f| crate::fswalk::is_yaml(f)) {
        let text = std::fs::read_to_string(&f)
            .map_err(|e| PackagesError(format!("cannot read {}: {e}", f.display())))?;
        if text.contains("PackageInstall") || text.contains("Secret") || text.contains("ConfigMap")
        {
            out.push((f, text));
        }
    }
    Ok(out)
}

/// The PackageInstall documents of the output files, as (file, document).
fn output_installs(files: &[(PathBuf, String)]) -> Result<Vec<(PathBuf, Value)>, PackagesError> {
    let mut out = Vec::new();
    for (f, text) in files.iter().filter(|(_, t)| t.contains("PackageInstall")) {
        let docs = crate::yaml::load_values(text).map_err(|e| {
            PackagesError(format!(
                "{}:{}:{}: invalid YAML: {}",
                f.display(),
                e.line,
                e.col,
                e.message
            ))
        })?;
        out.extend(
            docs.into_iter()
                .filter(|d| d.get_path(&["kind"]).and_then(Value::as_str) == Some("PackageInstall"))
                .map(|d| (f.clone(), d)),
        );
    }
    Ok(out)
}

/// The Secrets / ConfigMaps of the output files (files that do not parse
/// are skipped: not every `.yml` a template writes is YAML, and these only
/// matter when an install names them).
fn output_objects(files: &[(PathBuf, String)]) -> Vec<Value> {
    let mut out = Vec::new();
    for (_, text) in files {
        if let Ok(docs) = crate::yaml::load_values(text) {
            out.extend(docs.into_iter().filter(|d| {
                matches!(
                    d.get_path(&["kind"]).and_then(Value::as_str),
                    Some("Secret" | "ConfigMap")
                )
            }));
        }
    }
    out
}

fn find_dir(path: &str, search_paths: &[PathBuf]) -> Option<PathBuf> {
    let p = Path::new(path);
    if p.is_absolute() {
        return p.is_dir().then(|| p.to_path_buf());
    }
    search_paths.iter().map(|s| s.join(p)).find(|c| c.is_dir())
}

fn install_error(origin: &str, e: &InstallError) -> PackagesError {
    let mut msg = format!("{origin}: {e}");
    if let InstallError::Select(SelectError::NoneFound { rejected, .. }) = e {
        for (v, why) in rejected {
            msg.push_str(&format!("\n  rejected {v}: {why}"));
        }
    }
    if let Some(h) = e.hint() {
        msg.push_str(&format!("\n  hint: {h}"));
    }
    PackagesError(msg)
}

/// The `VERSION` file: one `key: value` per line, in a fixed order.
pub fn version_file(install: &PackageInstall, r: &super::install::Resolution) -> String {
    let mut out = String::new();
    let ns = install.meta.namespace.as_deref().unwrap_or("default");
    out.push_str(&format!("install: {ns}/{}\n", install.meta.name));
    out.push_str(&format!("refName: {}\n", r.ref_name));
    out.push_str(&format!("version: {}\n", r.version));
    if !install.selection.constraints.is_empty() {
        out.push_str(&format!("constraints: {}\n", install.selection.constraints));
    }
    out
}

/// Runs the packages phase for one target: `params` are its parameters,
/// `target_root` its output directory (inside the catalog being built),
/// `search_paths` where relative repository directories are looked up.
/// A confined compile (`confine`: a review's) reads repository directories
/// only inside it and fetches only inline content.
/// Returns the install names rendered.
pub fn compile_target_packages(
    params: &Value,
    target_root: &Path,
    search_paths: &[PathBuf],
    confine: Option<&Confine>,
) -> Result<Vec<String>, PackagesError> {
    let source = Path::new("parameters");
    let mut wanted = Vec::new();
    if let Some(v) = params.get_path(&["packages_install"]) {
        for d in hierarchy::declared_installs(source, v).map_err(model_err)? {
            wanted.push(Wanted {
                install: d.install,
                values: d.values,
                origin: d.param_path,
            });
        }
    }
    let files = output_files(target_root)?;
    for (file, doc) in &output_installs(&files)? {
        let rel = file.strip_prefix(target_root).unwrap_or(file);
        let found = hierarchy::installs_from_documents(rel, std::slice::from_ref(doc))
            .map_err(|e| PackagesError(e.to_string()))?;
        for install in found {
            let origin = format!("PackageInstall {} in {}", install.meta.name, rel.display());
            wanted.push(Wanted {
                install,
                values: None,
                origin,
            });
        }
    }
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let limit = crate::limits::max_target_installs();
    if let Some(w) = usize::try_from(limit).ok().and_then(|l| wanted.get(l)) {
        return Err(PackagesError(format!(
            "{}: the target has more than {limit} package installs (parameters.packages_install and the PackageInstall documents its compile entries wrote; each is resolved, rendered and written as a directory): split them over more targets, or raise STRATA_MAX_TARGET_INSTALLS",
            w.origin
        )));
    }
    // A map, not a scan of the names so far: quadratic in the installs.
    let mut names: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
    for w in &wanted {
        if let Some(first) = names.insert(&w.install.meta.name, &w.origin) {
            return Err(PackagesError(format!(
                "{}: another install ({first}) has the same name `{}`; each install renders into packages/<name>/, so names must be unique per target",
                w.origin, w.install.meta.name
            )));
        }
    }

    let repos_value = params
        .get_path(&["package_repositories"])
        .filter(|v| !v.is_null())
        .ok_or_else(|| {
            PackagesError(format!(
                "{}: parameters.package_repositories is not set; declare the repositories that offer the package (`path: DIR`, fetch.inline, git or http)",
                wanted[0].origin
            ))
        })?;
    let declared =
        hierarchy::repositories_from_parameters(source, repos_value).map_err(model_err)?;
    let mut contents: Vec<RepoContent> = Vec::new();
    for r in declared {
        match r {
            DeclaredRepository::Directory { name, path } => {
                let dir = find_dir(&path, search_paths).ok_or_else(|| {
                    PackagesError(format!(
                        "parameters.package_repositories.{name}.path: directory `{path}` not found in the search paths {search_paths:?}"
                    ))
                })?;
                // The directory and every link below it (`packages ->
                // /elsewhere`): the repository's files are rendered into
                // the catalog the review shows.
                if let Some(c) = confine {
                    c.check_tree(&dir).map_err(|e| {
                        PackagesError(format!("parameters.package_repositories.{name}.path: {e}"))
                    })?;
                }
                contents.push(
                    repo::content_from_dir(&name, &dir, Strictness::Lenient).map_err(|e| {
                        PackagesError(format!("parameters.package_repositories.{name}: {e}"))
                    })?,
                );
            }
            DeclaredRepository::Repository(r) if r.paused => {}
            DeclaredRepository::Repository(r)
                if confine.is_some()
                    && !matches!(r.source, super::model::RepoSource::Inline { .. }) =>
            {
                return Err(PackagesError(format!(
                    "parameters.package_repositories.{}.fetch: a confined compile (a review of a pull request) fetches no package repository but inline ones: the pull request would choose what the runner reads; use `path:` to a directory of the repository or `fetch.inline`, or compile without confinement",
                    r.meta.name
                )));
            }
            DeclaredRepository::Repository(r) => {
                // Locked: the next run removes the ones killed runs left.
                let work = crate::fswalk::locked_temp_dir(&std::env::temp_dir(), "strata-pkg-")
                    .map_err(|e| PackagesError(format!("cannot create a work directory: {e}")))?;
                // Errors name the repository's files, not the work directory.
                let scratch = format!("{}/content/", work.path().display());
                contents.push(
                    repo::fetch_repository(&r, work.path(), Strictness::Lenient).map_err(|e| {
                        let e = e.to_string().replace(&scratch, "");
                        PackagesError(format!(
                            "parameters.package_repositories.{}: {e}",
                            r.meta.name
                        ))
                    })?,
                );
            }
        }
    }
    let catalog = repo::merge(contents)
        .map_err(|e| PackagesError(format!("parameters.package_repositories: {e}")))?;
    let cluster = hierarchy::cluster_from_parameters(params);
    let objects = output_objects(&files);

    // One work directory for the target: making a locked one sweeps the
    // temporary directory for stale ones, a read of all of it per install.
    let work = crate::fswalk::locked_temp_dir(&std::env::temp_dir(), "strata-pkg-")
        .map_err(|e| PackagesError(format!("cannot create a work directory: {e}")))?;
    let mut done = Vec::new();
    for (i, w) in wanted.iter().enumerate() {
        let r = resolve_install(&w.install, &catalog.packages, &cluster)
            .map_err(|e| install_error(&w.origin, &e))?;
        let extra: Vec<(String, String)> = w
            .values
            .iter()
            .map(|v| {
                (
                    format!("{}.values", w.origin),
                    crate::yaml::emit::to_yaml_string(v),
                )
            })
            .collect();
        // Below the work directory, not in it: its `.lock` is not package
        // content (every install shipped it; re-probe 18).
        let content = work.path().join(format!("content-{i}"));
        std::fs::create_dir(&content)
            .map_err(|e| PackagesError(format!("cannot create a work directory: {e}")))?;
        // Errors name the package's files, not the work directory.
        let scratch = format!("{}/", content.display());
        let rendered = render::render_package(
            &r.package,
            RenderInputs {
                install: Some(&w.install),
                objects: &objects,
                extra_values: &extra,
                inline_only: confine.is_some(),
            },
            &content,
        )
        .map_err(|e| {
            let e = e.to_string().replace(&scratch, "");
            if e.starts_with("Package ") {
                PackagesError(format!("{}: {e}", w.origin))
            } else {
                PackagesError(format!(
                    "{}: Package {}: {e}",
                    w.origin, r.package.meta.name
                ))
            }
        })?;
        // The files are in memory now: one install's scratch at a time on
        // disk (a fetched package may be large), not all of them.
        let _ = std::fs::remove_dir_all(&content);
        let mut files = rendered.files;
        if files.iter().any(|(n, _)| n == VERSION_FILE) {
            return Err(PackagesError(format!(
                "{}: Package {} renders a file named {VERSION_FILE}, which strata keeps for the chosen version",
                w.origin, r.package.meta.name
            )));
        }
        files.push((VERSION_FILE.into(), version_file(&w.install, &r)));
        let name = &w.install.meta.name;
        if name.contains(['/', '\\']) || !repo::safe_relative(name) {
            return Err(PackagesError(format!(
                "{}: install name `{name}` cannot be a directory name",
                w.origin
            )));
        }
        let dir = target_root.join(PACKAGES_DIR).join(name);
        if dir.exists() {
            return Err(PackagesError(format!(
                "{}: {} already exists (written by a compile entry); strata renders installs there",
                w.origin,
                dir.strip_prefix(target_root).unwrap_or(&dir).display()
            )));
        }
        render::write_dir_atomically(&dir, &files)
            .map_err(|e| PackagesError(format!("{}: {e}", w.origin)))?;
        done.push(w.install.meta.name.clone());
    }
    Ok(done)
}
