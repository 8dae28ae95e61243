//! Kapitan secret reference files for every `?{vaultkv:path/key}` found in
//! the rendered parameters, written as Commodore writes them:
//! `catalog/refs/path/key` holding the base64 of `path:key`, the encoding,
//! the type and the Vault parameters of `parameters.kapitan.secrets.vaultkv`.

use super::{commodore_yaml, map, parameters_key, s, CommodoreError, BOOTSTRAP};
use crate::inventory::RenderedNode;
use crate::value::Value;
use base64::Engine;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path};

/// Every `?{...}` reference text (what is inside the braces) in a string.
pub fn find_in_str(text: &str, out: &mut BTreeSet<String>) {
    let mut rest = text;
    while let Some(i) = rest.find("?{") {
        let after = &rest[i + 2..];
        match after.find('}') {
            Some(0) => rest = &after[1..],
            Some(j) => {
                out.insert(after[..j].to_string());
                rest = &after[j + 1..];
            }
            None => break,
        }
    }
}

fn find(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::String(t) => find_in_str(t, out),
        Value::Map(m) => m.values().for_each(|v| find(v, out)),
        Value::List(l) => l.iter().for_each(|v| find(v, out)),
        _ => {}
    }
}

/// Collects references from the bootstrap target's non-component keys and
/// from every instance's component key, then writes the files. Returns
/// how many files were written.
pub fn write_refs(
    refs_dir: &Path,
    nodes: &BTreeMap<String, RenderedNode>,
    instances: &BTreeMap<String, String>,
) -> Result<usize, CommodoreError> {
    std::fs::create_dir_all(refs_dir)
        .map_err(|e| CommodoreError::new(format!("{}: {e}", refs_dir.display())))?;
    let Some(cluster) = nodes.get(BOOTSTRAP) else {
        return Ok(0);
    };
    let component_keys: BTreeSet<String> = instances.values().map(|c| parameters_key(c)).collect();
    let mut found = BTreeSet::new();
    if let Some(params) = cluster.parameters.as_map() {
        for (k, v) in params {
            if !component_keys.contains(k) {
                find(v, &mut found);
            }
        }
    }
    for (instance, cn) in instances {
        if let Some(v) = nodes
            .get(instance)
            .and_then(|n| n.parameters.get_path(&[parameters_key(cn).as_str()]))
        {
            find(v, &mut found);
        }
    }
    if found.is_empty() {
        return Ok(0);
    }
    let vault = cluster
        .parameters
        .get_path(&["kapitan", "secrets", "vaultkv"])
        .cloned()
        .ok_or_else(|| {
            CommodoreError::new("secret references found but parameters.kapitan.secrets.vaultkv is not set")
                .hint("set the Vault address and mount in parameters.kapitan.secrets.vaultkv (Commodore's global defaults do)")
        })?;
    let mut written = BTreeSet::new();
    for r in &found {
        let elems: Vec<&str> = r.split(':').collect();
        let (ty, path) = (elems[0], elems.get(1).copied().unwrap_or(""));
        if ty != "vaultkv" {
            return Err(CommodoreError::new(format!(
                "secret reference `?{{{r}}}`: only vaultkv references are supported (ref type: {ty})"
            )));
        }
        let Some((secret, key)) = path.rsplit_once('/') else {
            return Err(CommodoreError::new(format!(
                "secret reference `?{{{r}}}` must look like ?{{vaultkv:path/to/secret/key}}"
            )));
        };
        let rel = Path::new(path);
        if rel.is_absolute() || rel.components().any(|c| matches!(c, Component::ParentDir)) {
            return Err(CommodoreError::new(format!(
                "secret reference `?{{{r}}}` must stay inside catalog/refs (no leading / or ..)"
            )));
        }
        if !written.insert(path.to_string()) {
            continue;
        }
        let data = base64::engine::general_purpose::STANDARD.encode(format!("{secret}:{key}"));
        let doc = map(vec![
            ("data", s(&data)),
            ("encoding", s("original")),
            ("type", s(ty)),
            ("vault_params", vault.clone()),
        ]);
        super::write(&refs_dir.join(rel), &commodore_yaml(&[doc]))?;
    }
    Ok(written.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_refs() {
        let mut out = BTreeSet::new();
        find_in_str("a ?{vaultkv:x/y/z} b ?{vaultkv:q/r}?{}", &mut out);
        assert_eq!(out.into_iter().collect::<Vec<_>>(), vec!["vaultkv:q/r", "vaultkv:x/y/z"]);
    }
}
