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
/// each written reference path with its `data` field.
pub fn write_refs(
    refs_dir: &Path,
    nodes: &BTreeMap<String, RenderedNode>,
    instances: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, CommodoreError> {
    std::fs::create_dir_all(refs_dir)
        .map_err(|e| CommodoreError::new(format!("{}: {e}", refs_dir.display())))?;
    let Some(cluster) = nodes.get(BOOTSTRAP) else {
        return Ok(BTreeMap::new());
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
        return Ok(BTreeMap::new());
    }
    let vault = cluster
        .parameters
        .get_path(&["kapitan", "secrets", "vaultkv"])
        .cloned()
        .ok_or_else(|| {
            CommodoreError::new("secret references found but parameters.kapitan.secrets.vaultkv is not set")
                .hint("set the Vault address and mount in parameters.kapitan.secrets.vaultkv (Commodore's global defaults do)")
        })?;
    let mut written = BTreeMap::new();
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
        if written.contains_key(path) {
            continue;
        }
        let data = base64::engine::general_purpose::STANDARD.encode(format!("{secret}:{key}"));
        written.insert(path.to_string(), data.clone());
        let doc = map(vec![
            ("data", s(&data)),
            ("encoding", s("original")),
            ("type", s(ty)),
            ("vault_params", vault.clone()),
        ]);
        super::write(&refs_dir.join(rel), &commodore_yaml(&[doc]))?;
    }
    Ok(written)
}

fn is_path_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '@' | '=' | '/' | ':')
}

/// Kapitan's compile step for references: every `?{type:path}` whose
/// reference file exists becomes `?{type:path:<hash>}`, the hash being the
/// first 8 hex digits of sha256(path + data). Tokens with functions
/// (`|...`) or without a reference file are left as written.
pub fn compile_tokens(text: &str, refs: &BTreeMap<String, String>) -> String {
    use sha2::Digest;
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("?{") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let end = after
            .find(|c: char| !is_path_char(c))
            .unwrap_or(after.len());
        let tag = &after[..end];
        let closed = after[end..].starts_with('}');
        let replaced = tag.split_once(':').and_then(|(ty, path)| {
            let type_ok = !ty.is_empty() && ty.chars().all(|c| c.is_alphanumeric() || c == '_');
            if !closed || !type_ok || path.contains('@') {
                return None;
            }
            let data = refs.get(path)?;
            let hash = sha2::Sha256::digest(format!("{path}{data}").as_bytes());
            let hex: String = hash.iter().take(4).map(|b| format!("{b:02x}")).collect();
            Some(format!("?{{{ty}:{path}:{hex}}}"))
        });
        match replaced {
            Some(r) => {
                out.push_str(&r);
                rest = &after[end + 1..];
            }
            None => {
                out.push_str("?{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiles_tokens_with_kapitan_hash() {
        let mut refs = BTreeMap::new();
        // base64 of `t-acme/c-prod/argocd:admin-password`; the hash was
        // produced by Kapitan 0.36 on the same reference.
        refs.insert(
            "t-acme/c-prod/argocd/admin-password".to_string(),
            "dC1hY21lL2MtcHJvZC9hcmdvY2Q6YWRtaW4tcGFzc3dvcmQ=".to_string(),
        );
        let t = compile_tokens(
            "p: ?{vaultkv:t-acme/c-prod/argocd/admin-password} ?{vaultkv:x/y}",
            &refs,
        );
        assert_eq!(
            t,
            "p: ?{vaultkv:t-acme/c-prod/argocd/admin-password:1a2b8b75} ?{vaultkv:x/y}"
        );
    }

    #[test]
    fn finds_refs() {
        let mut out = BTreeSet::new();
        find_in_str("a ?{vaultkv:x/y/z} b ?{vaultkv:q/r}?{}", &mut out);
        assert_eq!(
            out.into_iter().collect::<Vec<_>>(),
            vec!["vaultkv:q/r", "vaultkv:x/y/z"]
        );
    }
}
