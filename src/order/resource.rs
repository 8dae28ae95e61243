//! The view of a Kubernetes resource that ordering needs: identity
//! (apiVersion, kind, name, namespace), annotations, labels and, for
//! field-based matchers and CRD placeholders, the whole document.

use super::OrderError;
use crate::value::Value;
use indexmap::IndexMap;
use std::path::PathBuf;

/// Where a document came from, for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub file: PathBuf,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Resource {
    pub api_version: String,
    pub kind: String,
    /// `metadata.name`, or `metadata.generateName` followed by `*`.
    pub name: String,
    /// Empty for cluster-scoped resources.
    pub namespace: String,
    pub annotations: IndexMap<String, String>,
    pub labels: IndexMap<String, String>,
    pub doc: Value,
    pub origin: Origin,
    /// The document's source text, when known (see `Document::raw`).
    pub raw: Option<String>,
}

impl Resource {
    /// Reads the identifying fields of one YAML document. Missing fields are
    /// empty (kapp's own unit tests omit `apiVersion`); fields of the wrong
    /// type are errors rather than silently ignored.
    pub fn from_value(doc: Value, origin: Origin) -> Result<Resource, OrderError> {
        let bad = |message: String| OrderError::InvalidResource {
            file: origin.file.clone(),
            line: origin.line,
            message,
        };
        let map = doc.as_map().ok_or_else(|| {
            bad(format!(
                "expected a Kubernetes resource (a map with apiVersion, kind and metadata), found a {}",
                doc.type_name()
            ))
        })?;
        let string_at = |path: &[&str]| -> Result<String, OrderError> {
            let mut cur = Some(&doc);
            for key in path {
                cur = cur.and_then(|v| v.as_map()).and_then(|m| m.get(*key));
            }
            match cur {
                None | Some(Value::Null) => Ok(String::new()),
                Some(Value::String(s)) => Ok(s.clone()),
                Some(other) => Err(bad(format!(
                    "`{}` must be a string, found a {}",
                    path.join("."),
                    other.type_name()
                ))),
            }
        };
        let api_version = string_at(&["apiVersion"])?;
        if api_version.matches('/').count() > 1 {
            return Err(bad(format!(
                "apiVersion `{api_version}` must have the form `group/version` or `version`"
            )));
        }
        let kind = string_at(&["kind"])?;
        if kind.is_empty() {
            return Err(bad(
                "document has no `kind`: not a Kubernetes resource (only resources and kapp Configs can be ordered)".into(),
            ));
        }
        let mut name = string_at(&["metadata", "name"])?;
        if name.is_empty() {
            let generate = string_at(&["metadata", "generateName"])?;
            if !generate.is_empty() {
                name = generate + "*";
            }
        }
        let namespace = string_at(&["metadata", "namespace"])?;
        if let Some(meta) = map.get("metadata") {
            if !meta.is_null() && meta.as_map().is_none() {
                return Err(bad(format!(
                    "`metadata` must be a map, found a {}",
                    meta.type_name()
                )));
            }
        }
        let annotations = string_map(&doc, "annotations").map_err(&bad)?;
        let labels = string_map(&doc, "labels").map_err(&bad)?;
        Ok(Resource {
            api_version,
            kind,
            name,
            namespace,
            annotations,
            labels,
            doc,
            origin,
            raw: None,
        })
    }

    /// The API group: the part of apiVersion before `/`, empty for core.
    pub fn api_group(&self) -> &str {
        match self.api_version.split_once('/') {
            Some((group, _)) => group,
            None => "",
        }
    }

    /// kapp's resource description: `kind/name (apiVersion) cluster` or
    /// `... namespace: ns`, with the kind lower-cased.
    pub fn description(&self) -> String {
        let scope = if self.namespace.is_empty() {
            "cluster".to_string()
        } else {
            format!("namespace: {}", self.namespace)
        };
        format!(
            "{}/{} ({}) {}",
            self.kind.to_lowercase(),
            self.name,
            self.api_version,
            scope
        )
    }

    /// What makes two documents the same resource for kapp: namespace, API
    /// group, kind and name (not the version, which changes over time).
    pub fn identity(&self) -> String {
        format!(
            "{}/{}/{}/{}",
            self.namespace,
            self.api_group(),
            self.kind,
            self.name
        )
    }

    /// Whether this is an `apiextensions.k8s.io` CustomResourceDefinition.
    pub fn is_crd(&self) -> bool {
        self.api_group() == "apiextensions.k8s.io" && self.kind == "CustomResourceDefinition"
    }

    /// A string field of the document by key path; missing or non-string is empty.
    pub fn str_field(&self, path: &[&str]) -> &str {
        self.doc
            .get_path(path)
            .and_then(Value::as_str)
            .unwrap_or("")
    }
}

/// A resource from a one-document YAML string (tests only).
#[cfg(test)]
pub(crate) fn test_resource(yaml: &str) -> Resource {
    let doc = crate::yaml::load_values(yaml).unwrap().remove(0);
    let origin = Origin {
        file: "r.yaml".into(),
        line: 1,
    };
    Resource::from_value(doc, origin).unwrap()
}

fn string_map(doc: &Value, key: &str) -> Result<IndexMap<String, String>, String> {
    let Some(v) = doc.get_path(&["metadata", key]) else {
        return Ok(IndexMap::new());
    };
    let m = match v {
        Value::Null => return Ok(IndexMap::new()),
        Value::Map(m) => m,
        other => {
            return Err(format!(
                "`metadata.{key}` must be a map of strings, found a {}",
                other.type_name()
            ))
        }
    };
    m.iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k.clone(), s.clone())),
            other => Err(format!(
                "`metadata.{key}.{k}` must be a string (quote it), found a {}",
                other.type_name()
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(text: &str) -> Result<Resource, OrderError> {
        let doc = crate::yaml::load_values(text).unwrap().remove(0);
        Resource::from_value(
            doc,
            Origin {
                file: "in.yaml".into(),
                line: 1,
            },
        )
    }

    #[test]
    fn description_and_group() {
        let r =
            res("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: ns}\n")
                .unwrap();
        assert_eq!(r.description(), "deployment/web (apps/v1) namespace: ns");
        assert_eq!(r.api_group(), "apps");
        let r = res("kind: Job\nmetadata: {generateName: mig-}\n").unwrap();
        assert_eq!(r.description(), "job/mig-* () cluster");
        assert_eq!(r.api_group(), "");
    }

    #[test]
    fn wrong_types_are_errors() {
        let e = res("kind: Job\nmetadata: {name: a, annotations: {x: 1}}\n").unwrap_err();
        assert!(e.to_string().contains("metadata.annotations.x"), "{e}");
        let e = res("apiVersion: a/b/c\nkind: Job\n").unwrap_err();
        assert!(e.to_string().contains("group/version"), "{e}");
        assert!(res("- a\n").is_err());
        let e = res("replicas: 3\nimage: nginx\n").unwrap_err();
        assert!(
            e.to_string().contains("in.yaml:1: document has no `kind`"),
            "{e}"
        );
    }
}
