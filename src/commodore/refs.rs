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

/// Every reference below `v` with the parameter path (`a.b[0]`) where it
/// first occurs, so an error can say where to look.
fn find(v: &Value, at: &str, out: &mut BTreeMap<String, String>) {
    match v {
        Value::String(t) => {
            let mut refs = BTreeSet::new();
            find_in_str(t, &mut refs);
            for r in refs {
                out.entry(r).or_insert_with(|| at.to_string());
            }
        }
        Value::Map(m) => m
            .iter()
            .for_each(|(k, v)| find(v, &format!("{at}.{k}"), out)),
        Value::List(l) => l
            .iter()
            .enumerate()
            .for_each(|(i, v)| find(v, &format!("{at}[{i}]"), out)),
        _ => {}
    }
}

/// The first inventory file read for `node` that spells reference `r` out
/// (a reference built from `${...}` parts is in none).
fn file_with(node: Option<&RenderedNode>, r: &str) -> Option<std::path::PathBuf> {
    let needle = format!("?{{{r}}}");
    node?.sources.files.iter().find_map(|f| {
        let text = std::fs::read_to_string(f).ok()?;
        text.contains(&needle).then(|| f.clone())
    })
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
    // Reference -> (node it was found in, parameter path).
    let mut found: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut add = |node: &str, paths: BTreeMap<String, String>| {
        for (r, at) in paths {
            found.entry(r).or_insert_with(|| (node.to_string(), at));
        }
    };
    if let Some(params) = cluster.parameters.as_map() {
        let mut paths = BTreeMap::new();
        for (k, v) in params {
            if !component_keys.contains(k) {
                find(v, &format!("parameters.{k}"), &mut paths);
            }
        }
        add(BOOTSTRAP, paths);
    }
    for (instance, cn) in instances {
        let key = parameters_key(cn);
        if let Some(v) = nodes
            .get(instance)
            .and_then(|n| n.parameters.get_path(&[key.as_str()]))
        {
            let mut paths = BTreeMap::new();
            find(v, &format!("parameters.{key}"), &mut paths);
            add(instance, paths);
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
    for (r, (node, at)) in &found {
        let fail = |what: String| {
            let e = CommodoreError::new(format!("secret reference `?{{{r}}}` in {at}: {what}"));
            match file_with(nodes.get(node.as_str()), r) {
                Some(f) => e.file(&f),
                None => e,
            }
        };
        let elems: Vec<&str> = r.split(':').collect();
        let (ty, path) = (elems[0], elems.get(1).copied().unwrap_or(""));
        if ty != "vaultkv" {
            return Err(fail(format!(
                "only vaultkv references are supported (ref type: {ty})"
            )));
        }
        let Some((secret, key)) = path.rsplit_once('/') else {
            return Err(fail(
                "it must look like ?{vaultkv:path/to/secret/key}".to_string(),
            ));
        };
        let rel = Path::new(path);
        if rel.is_absolute() || rel.components().any(|c| matches!(c, Component::ParentDir)) {
            return Err(fail(
                "it must stay inside catalog/refs (no leading / or ..)".to_string(),
            ));
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
    fn a_refused_reference_names_its_parameter_and_file() {
        let tmp = tempfile::tempdir().unwrap();
        let class = tmp.path().join("global.yml");
        std::fs::write(
            &class,
            "parameters:\n  app:\n    env: [ok, '?{vaultkv:../../escape/key}']\n",
        )
        .unwrap();
        let mut sources = crate::inventory::closure::Sources::default();
        sources.files.insert(class.clone());
        let params = r#"{"app":{"env":["ok","?{vaultkv:../../escape/key}"]},
            "kapitan":{"secrets":{"vaultkv":{"VAULT_ADDR":"x"}}}}"#;
        let node = RenderedNode {
            name: BOOTSTRAP.into(),
            classes: vec![],
            applications: vec![],
            parameters: Value::from_json(&serde_json::from_str(params).unwrap()),
            exports: Value::Map(Default::default()),
            environment: "base".into(),
            sources,
        };
        let nodes = BTreeMap::from([(BOOTSTRAP.to_string(), node)]);
        let refs = tmp.path().join("refs");
        let e = write_refs(&refs, &nodes, &BTreeMap::new()).unwrap_err();
        assert!(
            e.message.contains("in parameters.app.env[1]"),
            "{}",
            e.message
        );
        assert!(
            e.message.contains("must stay inside catalog/refs"),
            "{}",
            e.message
        );
        assert_eq!(e.file.as_deref(), Some(class.as_path()));
        assert!(!tmp.path().join("escape").exists());
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
