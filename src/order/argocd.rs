//! Argo CD sync waves from kapp's order: every object of a rendered catalog
//! gets `argocd.argoproj.io/sync-wave` set to its kapp wave (0 for the first
//! wave), so Argo CD applies the catalog in the order kapp would.

use super::{config, plan, Document, Options, OrderError};
use crate::value::{Map, Value};
use crate::yaml::Node;
use std::collections::HashMap;
use std::path::Path;

pub const SYNC_WAVE_ANNOTATION: &str = "argocd.argoproj.io/sync-wave";

/// Sets `metadata.annotations."argocd.argoproj.io/sync-wave"` on every
/// object to its wave (as a string, as Argo CD requires), replacing any
/// existing value. kapp Config documents configure the order and are left
/// alone. `source` names the objects in error messages (e.g. the catalog
/// directory); object N is reported as line N.
pub fn annotate_sync_waves(
    objects: &mut [Value],
    source: &Path,
    options: &Options,
) -> Result<(), OrderError> {
    let docs: Vec<Document> = objects
        .iter()
        .enumerate()
        .filter(|(_, v)| !v.is_null())
        .map(|(i, v)| Document {
            node: Node::from_value(v, i + 1),
            file: source.to_path_buf(),
            raw: None,
        })
        .collect();
    let graph = plan(&docs, options)?;
    let mut wave_of: HashMap<String, usize> = HashMap::new();
    for (w, wave) in graph.waves().iter().enumerate() {
        for &i in wave {
            wave_of.insert(graph.changes()[i].resource.identity(), w);
        }
    }
    let mut resources = Vec::with_capacity(docs.len());
    for doc in &docs {
        let origin = super::Origin {
            file: doc.file.clone(),
            line: doc.node.line,
        };
        resources.push(super::Resource::from_value(doc.node.to_value(), origin)?);
    }
    // Looked up with the namespaces the graph ordered them with: a
    // cluster-scoped object written with a namespace, or a namespaced one
    // written without, missed its wave and went unannotated (wave 0 to
    // Argo CD, before what it waits for).
    super::prepare_namespaces(&mut resources, options);
    for (res, object) in resources
        .iter()
        .zip(objects.iter_mut().filter(|v| !v.is_null()))
    {
        if res.api_version == config::CONFIG_API_VERSION {
            continue;
        }
        // Repeated identical objects share their first copy's wave.
        if let Some(w) = wave_of.get(&res.identity()) {
            set_annotation(object, SYNC_WAVE_ANNOTATION, w.to_string());
        }
    }
    Ok(())
}

fn set_annotation(object: &mut Value, key: &str, value: String) {
    let Value::Map(root) = object else { return };
    let meta = child_map(root, "metadata");
    let annotations = child_map(meta, "annotations");
    annotations.insert(key.to_string(), Value::String(value));
}

/// The map under `key`, created (or replacing a null) when missing.
fn child_map<'a>(map: &'a mut Map, key: &str) -> &'a mut Map {
    let slot = map.entry(key.to_string()).or_insert(Value::Null);
    if !matches!(slot, Value::Map(_)) {
        *slot = Value::Map(Map::default());
    }
    match slot {
        Value::Map(m) => m,
        _ => unreachable!("just made a map"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wave(v: &Value) -> Option<&str> {
        v.get_path(&["metadata", "annotations", SYNC_WAVE_ANNOTATION])
            .and_then(Value::as_str)
    }

    #[test]
    fn objects_get_their_kapp_wave() {
        let mut objects = crate::yaml::load_values(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop, annotations: {argocd.argoproj.io/sync-wave: '-5', keep: me}}\n\
             ---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: shop}\n\
             ---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n\
             ---\napiVersion: kapp.k14s.io/v1alpha1\nkind: Config\n\
             ---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: shop}\n\
             ---\napiVersion: example.com/v1\nkind: Thing\n",
        )
        .unwrap();
        annotate_sync_waves(&mut objects, Path::new("catalog"), &Options::default()).unwrap();
        let waves: Vec<Option<&str>> = objects.iter().map(wave).collect();
        // Namespace first, then the ConfigMap (and its identical repeat),
        // then the Deployment (its old wave replaced); the Config untouched.
        // The Thing, of a kind whose scope is unknown (no CRD), is ordered
        // as written, without a namespace.
        assert_eq!(
            waves,
            [Some("2"), Some("1"), Some("0"), None, Some("1"), Some("0")]
        );
        assert_eq!(
            objects[0].get_path(&["metadata", "annotations", "keep"]),
            Some(&Value::String("me".into()))
        );
        assert!(objects[3].get_path(&["metadata"]).is_none());
    }

    /// compat38: a cluster-scoped object written with a namespace (Kapitan's
    /// examples/kubernetes writes its Namespaces so) is ordered without it
    /// since compat37, but was looked up as written and got no wave: Argo
    /// CD's wave 0, before what it waits for (the ClusterRoleBinding here).
    #[test]
    fn cluster_scoped_objects_written_with_a_namespace_keep_their_wave() {
        let mut objects = crate::yaml::load_values(
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop, namespace: shop}\n\
             ---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: sa, namespace: shop}\n\
             ---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r, namespace: shop}\n\
             ---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: rb, namespace: shop}\n",
        )
        .unwrap();
        annotate_sync_waves(&mut objects, Path::new("catalog"), &Options::default()).unwrap();
        let waves: Vec<Option<&str>> = objects.iter().map(wave).collect();
        assert!(waves.iter().all(Option::is_some), "{waves:?}");
        // The binding waits for its role, as in `strata order`.
        assert!(waves[3] > waves[2], "{waves:?}");
    }

    #[test]
    fn errors_name_the_object() {
        let mut objects = crate::yaml::load_values(
            "kind: Job\nmetadata: {name: a, annotations: {kapp.k14s.io/change-rule: nonsense}}\n",
        )
        .unwrap();
        let e = annotate_sync_waves(&mut objects, Path::new("catalog"), &Options::default())
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("job/a () namespace: default: annotation kapp.k14s.io/change-rule"),
            "{e}"
        );
        assert!(wave(&objects[0]).is_none(), "nothing annotated on error");
    }
}
