//! Postprocessing filters of `parameters.commodore.postprocess.filters`,
//! run on `compiled/<instance>/<path>` after Kapitan's compile. The builtin
//! `helm_namespace` filter is implemented natively with the behaviour of
//! Commodore's jsonnet filter, `jsonnet` filters run through
//! [`super::jsonnet_filter`]; invalid definitions are skipped with a
//! warning, as Commodore does.

use super::{commodore_yaml, map, s, CommodoreError};
use crate::inventory::RenderedNode;
use crate::value::{Map, Value};
use std::path::Path;

const REQUIRED: [&str; 3] = ["filter", "path", "type"];

/// Runs the instance's filters; returns warnings.
pub fn run_filters(
    compiled: &Path,
    instance: &str,
    component: &str,
    instance_dir: &Path,
    node: &RenderedNode,
    work_dir: &Path,
    confine: Option<&crate::confine::Confine>,
) -> Result<Vec<String>, CommodoreError> {
    let mut warnings = Vec::new();
    let Some(filters) = node
        .parameters
        .get_path(&["commodore", "postprocess", "filters"])
        .and_then(Value::as_list)
    else {
        return Ok(warnings);
    };
    for fd in filters {
        let name = fd
            .get_path(&["filter"])
            .and_then(Value::as_str)
            .unwrap_or("<unknown>");
        let Some(m) = fd.as_map() else {
            warnings.push(format!(
                "Skipping filter '{name}' of {instance}: not a mapping"
            ));
            continue;
        };
        let missing: Vec<&str> = REQUIRED
            .iter()
            .copied()
            .filter(|k| !m.contains_key(*k))
            .collect();
        if !missing.is_empty() {
            warnings.push(format!(
                "Skipping filter '{name}' of {instance} with invalid definition: missing key(s) {}",
                missing.join(", ")
            ));
            continue;
        }
        let enabled = match m.get("enabled") {
            None => true,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                warnings.push(format!(
                    "Skipping filter '{name}' of {instance} with invalid definition: Filter key 'enabled' is not a boolean"
                ));
                continue;
            }
        };
        let path = m.get("path").and_then(Value::as_str).unwrap_or("");
        let root = compiled.join(instance);
        let out_dir = root.join(path);
        if !stays_inside(&root, &out_dir) {
            return Err(CommodoreError::new(format!(
                "postprocess filter '{name}' of {instance}: path `{path}` leads outside compiled/{instance}: a filter may only rewrite its instance's own catalog"
            )));
        }
        let args = m
            .get("filterargs")
            .and_then(Value::as_map)
            .cloned()
            .unwrap_or_default();
        match m.get("type").and_then(Value::as_str) {
            Some("builtin") => {
                if name != "helm_namespace" {
                    warnings.push(format!(
                        "Skipping filter '{name}' of {instance}: Unknown builtin filter: {name}"
                    ));
                    continue;
                }
                if !m.contains_key("filterargs") {
                    warnings.push(format!("Skipping filter '{name}' of {instance}: Builtin filter is missing required key 'filterargs'"));
                    continue;
                }
                if !out_dir.exists() {
                    warnings.push(format!("Skipping filter '{name}' of {instance}: Builtin filter called on path which doesn't exist"));
                    continue;
                }
                if !enabled {
                    continue;
                }
                helm_namespace(&out_dir, &args)?;
            }
            Some("jsonnet") => {
                let file = instance_dir.join(name);
                if !file.is_file() {
                    warnings.push(format!("Skipping filter '{name}' of {instance}: Jsonnet filter definition does not exist"));
                    continue;
                }
                if !enabled {
                    continue;
                }
                let inventory = crate::value::Value::Map(
                    [
                        (
                            "applications",
                            Value::List(node.applications.iter().map(|a| s(a)).collect()),
                        ),
                        (
                            "classes",
                            Value::List(node.classes.iter().map(|c| s(c)).collect()),
                        ),
                        ("environment", s(&node.environment)),
                        ("exports", node.exports.clone()),
                        ("parameters", node.parameters.clone()),
                    ]
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect(),
                );
                // A pull request's filter reads what its compile may: the
                // filter file (`filter: ../../../home/runner/x.json` was
                // evaluated into the catalog), its imports and `yaml_load`.
                let scope = confine.cloned().map(std::sync::Arc::new);
                crate::confine::scoped(scope, || {
                    crate::confine::check(&file).map_err(|e| {
                        CommodoreError::new(format!("jsonnet filter {}: {e}", file.display()))
                            .file(&file)
                    })?;
                    super::jsonnet_filter::run(
                        &file, work_dir, component, &out_dir, &inventory, &args,
                    )
                })?;
            }
            other => warnings.push(format!(
                "Skipping filter '{name}' of {instance}: Filter has unknown type {}",
                other.unwrap_or("<none>")
            )),
        }
    }
    Ok(warnings)
}

/// Whether `p` lies inside `root`, lexically (after `..`) and through the
/// symlinks of its longest existing prefix (the check confined reviews make
/// of every read): filter paths and file names come from the inventory and
/// the filter's output, and `..` in them wrote files outside the catalog.
pub(crate) fn stays_inside(root: &Path, p: &Path) -> bool {
    crate::compile::confine::Confine::new([root.to_path_buf()])
        .check(p)
        .is_ok()
}

/// The builtin `helm_namespace` filter: every file directly in `dir` is
/// read as a YAML stream and written back as `<stem>.yaml` with
/// `metadata.namespace` set on each object, except `exclude_objects`
/// (`{kind, name}`); `create_namespace` adds `00_namespace.yaml`.
pub fn helm_namespace(dir: &Path, args: &Map) -> Result<(), CommodoreError> {
    let ns = args
        .get("namespace")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            CommodoreError::new(
                "Builtin filter 'helm_namespace': filter argument 'namespace' is required",
            )
        })?;
    let create = match args.get("create_namespace") {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => s == "true",
        _ => false,
    };
    let excludes: Vec<(Value, Value)> = args
        .get("exclude_objects")
        .and_then(Value::as_list)
        .unwrap_or(&[])
        .iter()
        .map(|e| {
            (
                e.get_path(&["kind"]).cloned().unwrap_or(Value::Null),
                e.get_path(&["name"]).cloned().unwrap_or(Value::Null),
            )
        })
        .collect();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| CommodoreError::new(format!("{}: {e}", dir.display())))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    let mut outputs: Vec<(String, Value)> = Vec::new();
    for f in &files {
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let parts: Vec<&str> = name.split('.').collect();
        let stem = parts[..parts.len() - 1].join(".");
        let text = std::fs::read_to_string(f)
            .map_err(|e| CommodoreError::new(format!("{}: {e}", f.display())).file(f))?;
        let docs = crate::compile::pyyaml_load::load_all(&text)
            .map_err(|e| CommodoreError::new(format!("{}: {e}", f.display())).file(f))?;
        let objs: Vec<Value> = docs
            .into_iter()
            .filter(|d| !d.is_null())
            .map(|mut o| {
                let kind = o.get_path(&["kind"]).cloned().unwrap_or(Value::Null);
                let oname = o
                    .get_path(&["metadata", "name"])
                    .cloned()
                    .unwrap_or(Value::Null);
                let excluded = excludes.iter().any(|(k, n)| *k == kind && *n == oname);
                if !excluded {
                    if let Value::Map(m) = &mut o {
                        let meta = m
                            .entry("metadata".to_string())
                            .or_insert_with(|| Value::Map(Map::default()));
                        if let Value::Map(mm) = meta {
                            mm.insert("namespace".into(), s(ns));
                        }
                    }
                }
                o
            })
            .collect();
        outputs.push((stem, Value::List(objs)));
    }
    if create {
        let ns_obj = map(vec![
            ("apiVersion", s("v1")),
            ("kind", s("Namespace")),
            (
                "metadata",
                map(vec![
                    ("annotations", Value::Map(Map::default())),
                    ("labels", map(vec![("name", s(&ns.replace(':', "-")))])),
                    ("name", s(ns)),
                ]),
            ),
        ]);
        outputs.push(("00_namespace".into(), ns_obj));
    }
    for (stem, v) in outputs {
        let text = match &v {
            Value::List(l) => commodore_yaml(l),
            other => commodore_yaml(std::slice::from_ref(other)),
        };
        let out = dir.join(format!("{stem}.yaml"));
        std::fs::write(&out, text)
            .map_err(|e| CommodoreError::new(format!("{}: {e}", out.display())))?;
    }
    Ok(())
}
