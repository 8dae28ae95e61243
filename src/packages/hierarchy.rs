//! The bridge `strata compile` calls: installs declared in the inventory
//! (`parameters.packages_install`) or emitted as `PackageInstall` documents
//! in a target's output are resolved against the catalog at compile time,
//! and each resolved install can be written back pinned to its version so a
//! version change is a one-line diff in the catalog.
//!
//! `parameters.packages_install` is a map of install name to a
//! `PackageInstall` (full document, or only its `spec`-level fields
//! `packageRef`, `serviceAccountName`, ... plus optional `namespace` and
//! `annotations`), or a list of full `PackageInstall` documents. In the short
//! form, `values` may be a mapping: plain data values for the package's ytt
//! step (a list is `spec.values`, secret references, as in the document).
//!
//! `parameters.package_repositories` is a map of repository name to a
//! `PackageRepository` (full document, or its spec fields `fetch`, `paused`
//! plus optional `namespace`), or `{path: DIR}` for a local directory.

use super::install::{ClusterVersions, Resolution};
use super::model::{
    parse_resource, ModelError, PackageInstall, PackageRepository, Resource, Strictness, PKG_API,
};
use crate::value::{Map, Value};
use crate::yaml::Node;
use std::path::Path;

fn not_install(source: &Path, label: &str) -> ModelError {
    ModelError {
        file: source.to_path_buf(),
        line: 0,
        doc: label.to_string(),
        field: "kind".into(),
        message: "expected a PackageInstall".into(),
    }
}

fn parse_install(source: &Path, doc: &Value, label: &str) -> Result<PackageInstall, ModelError> {
    let mut warnings = Vec::new();
    match parse_resource(
        source,
        &Node::from_value(doc, 0),
        label,
        Strictness::Strict,
        &mut warnings,
    )? {
        Some(Resource::PackageInstall(i)) => Ok(i),
        _ => Err(not_install(source, label)),
    }
}

/// One install the inventory declares, with strata's inline values.
#[derive(Debug, Clone)]
pub struct DeclaredInstall {
    pub install: PackageInstall,
    /// `values` given as a mapping in the short form.
    pub values: Option<Value>,
    /// `parameters.packages_install.<name>` (or `[i]`), for messages.
    pub param_path: String,
}

/// Normalises one `packages_install` entry into a full document.
fn entry_document(name: &str, entry: &Value) -> Value {
    match entry.as_map() {
        Some(m) => short_document("PackageInstall", name, m),
        None => entry.clone(),
    }
}

/// A document from the hierarchy's short form: a full document (with `kind`
/// or `apiVersion`) gets its `metadata.name` defaulted to the key; anything
/// else is the spec, with `namespace`/`annotations`/`labels` lifted into
/// metadata (a PackageInstall's `values` map is strata's own and stays out
/// of the spec).
fn short_document(kind: &str, name: &str, m: &Map) -> Value {
    if m.contains_key("kind") || m.contains_key("apiVersion") {
        let mut doc = m.clone();
        if let Some(Value::Map(meta)) = doc.get_mut("metadata") {
            meta.entry("name".to_string())
                .or_insert_with(|| Value::String(name.to_string()));
        }
        return Value::Map(doc);
    }
    let mut meta = Map::default();
    meta.insert("name".into(), Value::String(name.to_string()));
    let mut spec = Map::default();
    for (k, v) in m {
        match k.as_str() {
            "namespace" | "annotations" | "labels" => {
                meta.insert(k.clone(), v.clone());
            }
            "values" if kind == "PackageInstall" && matches!(v, Value::Map(_)) => {}
            _ => {
                spec.insert(k.clone(), v.clone());
            }
        }
    }
    let mut doc = Map::default();
    doc.insert("apiVersion".into(), Value::String(PKG_API.into()));
    doc.insert("kind".into(), Value::String(kind.into()));
    doc.insert("metadata".into(), Value::Map(meta));
    doc.insert("spec".into(), Value::Map(spec));
    Value::Map(doc)
}

/// Reads `parameters.packages_install` (`source` names the target, for errors).
pub fn installs_from_parameters(
    source: &Path,
    value: &Value,
) -> Result<Vec<PackageInstall>, ModelError> {
    Ok(declared_installs(source, value)?
        .into_iter()
        .map(|d| d.install)
        .collect())
}

/// Reads `parameters.packages_install` with the inline values of the short
/// form. Errors carry the parameter path in `doc`.
pub fn declared_installs(source: &Path, value: &Value) -> Result<Vec<DeclaredInstall>, ModelError> {
    let relabel = |label: &str, mut e: ModelError| {
        e.doc = label.to_string();
        e
    };
    let mut out = Vec::new();
    match value {
        Value::Null => {}
        Value::Map(m) => {
            for (name, entry) in m {
                let label = format!("parameters.packages_install.{name}");
                let short = entry
                    .as_map()
                    .is_some_and(|m| !m.contains_key("kind") && !m.contains_key("apiVersion"));
                let install = parse_install(source, &entry_document(name, entry), &label)
                    .map_err(|e| relabel(&label, e))?;
                let values = entry
                    .get_path(&["values"])
                    .filter(|v| short && matches!(v, Value::Map(_)))
                    .cloned();
                out.push(DeclaredInstall {
                    install,
                    values,
                    param_path: label,
                });
            }
        }
        Value::List(items) => {
            for (i, doc) in items.iter().enumerate() {
                let label = format!("parameters.packages_install[{i}]");
                let install = parse_install(source, doc, &label).map_err(|e| relabel(&label, e))?;
                out.push(DeclaredInstall {
                    install,
                    values: None,
                    param_path: label,
                });
            }
        }
        _ => {
            return Err(ModelError {
                file: source.to_path_buf(),
                line: 0,
                doc: "parameters".into(),
                field: "packages_install".into(),
                message: "expected a map of install name to PackageInstall, or a list of PackageInstall documents".into(),
            })
        }
    }
    Ok(out)
}

/// One repository the inventory declares.
#[derive(Debug, Clone)]
pub enum DeclaredRepository {
    /// `{path: DIR}`: a repository directory (relative to the search paths).
    Directory {
        name: String,
        path: String,
    },
    Repository(Box<PackageRepository>),
}

/// Reads `parameters.package_repositories` (in order). Errors carry the
/// parameter path in `doc`.
pub fn repositories_from_parameters(
    source: &Path,
    value: &Value,
) -> Result<Vec<DeclaredRepository>, ModelError> {
    let bad = |label: &str, field: &str, message: &str| ModelError {
        file: source.to_path_buf(),
        line: 0,
        doc: label.to_string(),
        field: field.into(),
        message: message.into(),
    };
    let parse = |label: &str, doc: &Value| -> Result<PackageRepository, ModelError> {
        let mut warnings = Vec::new();
        match parse_resource(
            source,
            &Node::from_value(doc, 0),
            label,
            Strictness::Strict,
            &mut warnings,
        ) {
            Ok(Some(Resource::PackageRepository(r))) => Ok(r),
            Ok(_) => Err(bad(label, "kind", "expected a PackageRepository")),
            Err(mut e) => {
                e.doc = label.to_string();
                Err(e)
            }
        }
    };
    let mut out = Vec::new();
    match value {
        Value::Null => {}
        Value::Map(m) => {
            for (name, entry) in m {
                let label = format!("parameters.package_repositories.{name}");
                let Some(em) = entry.as_map() else {
                    return Err(bad(&label, "", "expected a mapping (a PackageRepository, its spec fields, or `path: DIR`)"));
                };
                if let Some(path) = em.get("path") {
                    let Some(path) = path.as_str().filter(|p| !p.is_empty()) else {
                        return Err(bad(&label, "path", "expected a directory path"));
                    };
                    if em.len() > 1 {
                        return Err(bad(&label, "path", "a directory repository takes only `path`"));
                    }
                    out.push(DeclaredRepository::Directory {
                        name: name.clone(),
                        path: path.to_string(),
                    });
                    continue;
                }
                let doc = short_document("PackageRepository", name, em);
                out.push(DeclaredRepository::Repository(Box::new(parse(&label, &doc)?)));
            }
        }
        Value::List(items) => {
            for (i, doc) in items.iter().enumerate() {
                let label = format!("parameters.package_repositories[{i}]");
                out.push(DeclaredRepository::Repository(Box::new(parse(&label, doc)?)));
            }
        }
        _ => {
            return Err(bad(
                "parameters",
                "package_repositories",
                "expected a map of repository name to PackageRepository (or `path: DIR`), or a list of PackageRepository documents",
            ))
        }
    }
    Ok(out)
}

/// The `PackageInstall` documents of a target's compile output (other kinds
/// are skipped).
pub fn installs_from_documents(
    source: &Path,
    docs: &[Value],
) -> Result<Vec<PackageInstall>, ModelError> {
    let mut out = Vec::new();
    for (i, d) in docs.iter().enumerate() {
        let is_install = d.get_path(&["kind"]).and_then(Value::as_str) == Some("PackageInstall")
            && d.get_path(&["apiVersion"]).and_then(Value::as_str) == Some(PKG_API);
        if is_install {
            out.push(parse_install(source, d, &format!("document {}", i + 1))?);
        }
    }
    Ok(out)
}

fn scalar_text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        Value::Float(f) => Some(f.to_string()),
        _ => None,
    }
}

/// The cluster versions a target declares: `parameters.kubernetes_version`
/// and `parameters.kapp_controller_version` (facts, when the inventory has
/// them, are passed the same way by the caller).
pub fn cluster_from_parameters(params: &Value) -> ClusterVersions {
    ClusterVersions {
        kubernetes: scalar_text(params.get_path(&["kubernetes_version"])),
        kapp_controller: scalar_text(params.get_path(&["kapp_controller_version"])),
    }
}

/// The install's document with `versionSelection` pinned to the resolved
/// version (the catalog then changes by one line when the choice changes).
/// The original constraint is kept in annotation `strata.dev/version-selection`.
/// A version with a `v` prefix cannot be written as a constraint and is left
/// unpinned.
pub fn pinned_document(install: &PackageInstall, r: &Resolution) -> Value {
    let mut doc = install.doc.clone();
    if r.version.starts_with('v') {
        return doc;
    }
    if let Value::Map(top) = &mut doc {
        top.shift_remove("status");
        if let Some(Value::Map(meta)) = top.get_mut("metadata") {
            let anns = meta
                .entry("annotations".to_string())
                .or_insert_with(|| Value::Map(Map::default()));
            if let Value::Map(anns) = anns {
                anns.insert(
                    "strata.dev/version-selection".into(),
                    Value::String(install.selection.constraints.clone()),
                );
            }
        }
        if let Some(Value::Map(spec)) = top.get_mut("spec") {
            if let Some(Value::Map(pref)) = spec.get_mut("packageRef") {
                let mut vs = Map::default();
                vs.insert("constraints".into(), Value::String(r.version.clone()));
                pref.insert("versionSelection".into(), Value::Map(vs));
            }
        }
    }
    doc
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packages::install::resolve_installs;
    use crate::packages::model::parse_stream;

    fn params(text: &str) -> Value {
        crate::yaml::load_values(text).unwrap().remove(0)
    }

    fn packages() -> Vec<crate::packages::model::Package> {
        let mut text = String::new();
        for v in ["1.0.0", "1.1.0", "2.0.0-rc.1"] {
            text.push_str(&format!(
                "---\napiVersion: data.packaging.carvel.dev/v1alpha1\nkind: Package\nmetadata:\n  name: app.example.com.{v}\nspec:\n  refName: app.example.com\n  version: {v}\n  kubernetesVersionSelection:\n    constraints: '>=1.20.0'\n"
            ));
        }
        let docs = crate::yaml::load_all(&text).unwrap();
        let (res, _) = parse_stream(Path::new("p"), &docs, Strictness::Strict, false).unwrap();
        res.into_iter()
            .filter_map(|r| match r {
                Resource::Package(p) => Some(p),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn short_form_parameters_resolve() {
        let p = params(
            "kubernetes_version: 1.28.1\npackages_install:\n  app:\n    namespace: apps\n    serviceAccountName: sa\n    packageRef:\n      refName: app.example.com\n      versionSelection:\n        constraints: '>=1.0.0 <2.0.0'\n",
        );
        let installs = installs_from_parameters(
            Path::new("targets/t.yml"),
            p.get_path(&["packages_install"]).unwrap(),
        )
        .unwrap();
        assert_eq!(installs[0].meta.name, "app");
        assert_eq!(installs[0].meta.namespace.as_deref(), Some("apps"));
        let cluster = cluster_from_parameters(&p);
        assert_eq!(cluster.kubernetes.as_deref(), Some("1.28.1"));
        let r = resolve_installs(&installs, &packages(), &cluster);
        let r = r[0].as_ref().unwrap();
        assert_eq!(r.version, "1.1.0");
        let pinned = pinned_document(&installs[0], r);
        assert_eq!(
            pinned.get_path(&["spec", "packageRef", "versionSelection", "constraints"]),
            Some(&Value::String("1.1.0".into()))
        );
        assert_eq!(
            pinned.get_path(&["metadata", "annotations", "strata.dev/version-selection"]),
            Some(&Value::String(">=1.0.0 <2.0.0".into()))
        );
    }

    #[test]
    fn bad_parameters_name_the_field() {
        let p = params("packages_install:\n  app:\n    packageRef:\n      refname: x\n");
        let e = installs_from_parameters(
            Path::new("t.yml"),
            p.get_path(&["packages_install"]).unwrap(),
        )
        .unwrap_err();
        assert_eq!(e.doc, "parameters.packages_install.app");
        assert_eq!(e.field, "spec.packageRef.refname");
    }

    #[test]
    fn documents_in_output() {
        let docs = crate::yaml::load_values(
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: apps}\n---\napiVersion: packaging.carvel.dev/v1alpha1\nkind: PackageInstall\nmetadata: {name: app}\nspec:\n  packageRef: {refName: app.example.com}\n",
        )
        .unwrap();
        let installs = installs_from_documents(Path::new("out"), &docs).unwrap();
        assert_eq!(installs.len(), 1);
        let r = resolve_installs(
            &installs,
            &packages(),
            &ClusterVersions {
                kubernetes: Some("1.29.0".into()),
                kapp_controller: None,
            },
        );
        assert_eq!(r[0].as_ref().unwrap().version, "1.1.0");
    }
}
