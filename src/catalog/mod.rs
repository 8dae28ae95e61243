//! Operations on a compiled catalog that combine core parts: for now,
//! annotating every Kubernetes object with the Argo CD sync wave that kapp's
//! apply order gives it (`strata compile --order argocd-sync-waves`).

use crate::compile::pyyaml_load;
use crate::compile::yaml_dump::{self, DumpOptions};
use crate::order::{self, OrderError};
use crate::value::Value;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("cannot read {}: {message}", path.display())]
    Io { path: PathBuf, message: String },
    #[error("cannot re-read {} to add sync waves: {message}", path.display())]
    Yaml { path: PathBuf, message: String },
    #[error("cannot order the objects of {}: {source}", dir.display())]
    Order {
        dir: PathBuf,
        #[source]
        source: Box<OrderError>,
    },
}

impl crate::diagnostics::ToDiagnostic for CatalogError {
    fn to_diagnostic(&self) -> crate::diagnostics::Diagnostic {
        let d = crate::diagnostics::Diagnostic::error(self.to_string());
        match self {
            CatalogError::Io { path, .. } | CatalogError::Yaml { path, .. } => d.with_file(path),
            CatalogError::Order { dir, .. } => d
                .with_file(dir)
                .with_hint("fix the kapp.k14s.io/change-group and change-rule annotations, or compile without --order"),
        }
    }
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), CatalogError> {
    let rd = std::fs::read_dir(dir).map_err(|e| CatalogError::Io {
        path: dir.to_path_buf(),
        message: e.to_string(),
    })?;
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        let meta = std::fs::symlink_metadata(&p).map_err(|e| CatalogError::Io {
            path: p.clone(),
            message: e.to_string(),
        })?;
        if meta.is_dir() {
            yaml_files(&p, out)?;
        } else if meta.is_file() && p.extension().is_some_and(|e| e == "yml" || e == "yaml") {
            out.push(p);
        }
    }
    Ok(())
}

/// A Kubernetes object: a map with `apiVersion` and `kind`.
fn is_object(v: &Value) -> bool {
    v.as_map()
        .is_some_and(|m| m.contains_key("apiVersion") && m.contains_key("kind"))
}

/// Annotates the objects of one compiled target directory with
/// `argocd.argoproj.io/sync-wave` = their kapp wave (waves are computed over
/// the whole target, across its files). Files without objects are left
/// byte for byte; files with objects are written again with `dump` (the
/// catalog's YAML style). Returns how many objects were annotated.
pub fn annotate_sync_waves(target_dir: &Path, dump: &DumpOptions) -> Result<usize, CatalogError> {
    let mut files = Vec::new();
    yaml_files(target_dir, &mut files)?;
    let mut docs_per_file: Vec<(PathBuf, Vec<Value>)> = Vec::new();
    let mut objects: Vec<Value> = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).map_err(|e| CatalogError::Io {
            path: f.clone(),
            message: e.to_string(),
        })?;
        let docs = pyyaml_load::load_all(&text).map_err(|message| CatalogError::Yaml {
            path: f.clone(),
            message,
        })?;
        if docs.iter().any(is_object) {
            objects.extend(docs.iter().filter(|d| is_object(d)).cloned());
            docs_per_file.push((f, docs));
        }
    }
    if objects.is_empty() {
        return Ok(0);
    }
    order::annotate_sync_waves(&mut objects, target_dir, &order::Options::default()).map_err(
        |source| CatalogError::Order {
            dir: target_dir.to_path_buf(),
            source: Box::new(source),
        },
    )?;
    let count = objects.len();
    let mut annotated = objects.into_iter();
    for (path, mut docs) in docs_per_file {
        for d in docs.iter_mut().filter(|d| is_object(d)) {
            if let Some(a) = annotated.next() {
                *d = a;
            }
        }
        std::fs::write(&path, yaml_dump::dump_all(&docs, dump)).map_err(|e| CatalogError::Io {
            path: path.clone(),
            message: e.to_string(),
        })?;
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::yaml_dump::MultilineStyle;

    #[test]
    fn namespaces_come_before_their_objects() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("app")).unwrap();
        std::fs::write(
            dir.path().join("app/deploy.yaml"),
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: shop\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("ns.yaml"),
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("values.yaml"), "replicas: 3\n").unwrap();
        let opts = DumpOptions::kapitan(2, MultilineStyle::parse("literal").unwrap(), false);
        let n = annotate_sync_waves(dir.path(), &opts).unwrap();
        assert_eq!(n, 2);
        let ns = std::fs::read_to_string(dir.path().join("ns.yaml")).unwrap();
        let deploy = std::fs::read_to_string(dir.path().join("app/deploy.yaml")).unwrap();
        assert!(ns.contains("argocd.argoproj.io/sync-wave: '0'"), "{ns}");
        assert!(
            deploy.contains("argocd.argoproj.io/sync-wave: '1'"),
            "{deploy}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("values.yaml")).unwrap(),
            "replicas: 3\n",
            "files without objects stay as they are"
        );
    }
}
