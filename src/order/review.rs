//! Apply order as a reviewer sees it: the Kubernetes objects of each
//! compiled target, the targets whose kapp apply order differs between two
//! catalogs, and the Mermaid flowchart that shows the new order.

use super::{plan, ChangeGraph, Document, Options};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Beyond this many edges a drawing is unreadable (and too large for
/// GitHub's renderer): only the waves are drawn.
pub const MERMAID_MAX_EDGES: usize = 300;

/// A flowchart with one subgraph per wave; an arrow `B --> A` means B is
/// applied before A.
pub fn mermaid(graph: &ChangeGraph) -> String {
    let descs: Vec<String> = graph.changes().iter().map(|c| c.description()).collect();
    let label = |s: &str| s.replace('"', "#quot;");
    let mut out = String::from("flowchart LR\n");
    for (w, wave) in graph.waves().iter().enumerate() {
        out.push_str(&format!("  subgraph wave{}[\"wave {}\"]\n", w + 1, w + 1));
        for &i in wave {
            out.push_str(&format!("    c{i}[\"{}\"]\n", label(&descs[i])));
        }
        out.push_str("  end\n");
    }
    let edges: Vec<(usize, usize)> = graph.edges().collect();
    if edges.len() > MERMAID_MAX_EDGES {
        out.push_str(&format!(
            "  %% {} edges not drawn (more than {MERMAID_MAX_EDGES}); see --format edges\n",
            edges.len()
        ));
    } else {
        for (a, b) in edges {
            out.push_str(&format!("  c{b} --> c{a}\n"));
        }
    }
    out
}

/// The Kubernetes objects (documents with `apiVersion` and `kind`) of each
/// target, a top-level directory of `catalog`, in sorted file order. Files
/// that are not YAML, or not valid YAML, are skipped: reporting them is
/// another check's business.
pub fn catalog_documents(catalog: &Path) -> std::io::Result<BTreeMap<String, Vec<Document>>> {
    documents_of(catalog, None)
}

/// [`catalog_documents`] of the targets in `only` (all when `None`).
fn documents_of(
    catalog: &Path,
    only: Option<&BTreeSet<String>>,
) -> std::io::Result<BTreeMap<String, Vec<Document>>> {
    let mut out = BTreeMap::new();
    let mut targets = Vec::new();
    for e in std::fs::read_dir(catalog)? {
        targets.push(e?.path());
    }
    targets.sort();
    for target in targets {
        let Some(name) = target.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if only.is_some_and(|o| !o.contains(name)) || !target.is_dir() {
            continue;
        }
        let files = crate::fswalk::files_below(&target, &crate::fswalk::not_git)
            .map_err(|e| std::io::Error::new(e.source.kind(), e.to_string()))?;
        let mut docs = Vec::new();
        for f in files.into_iter().filter(|f| crate::fswalk::is_yaml(f)) {
            let Ok(text) = std::fs::read_to_string(&f) else {
                continue;
            };
            let Ok(parsed) = super::parse_documents(&f, &text) else {
                continue;
            };
            docs.extend(
                parsed
                    .into_iter()
                    .filter(|d| d.node.get("apiVersion").is_some() && d.node.get("kind").is_some()),
            );
        }
        if !docs.is_empty() {
            out.insert(name.to_string(), docs);
        }
    }
    Ok(out)
}

/// A target whose apply order differs between the two catalogs.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderChange {
    pub target: String,
    /// Changes present on both sides that now go in another relative
    /// position (kapp's change descriptions), sorted.
    pub moved: Vec<String>,
    /// The new order as a Mermaid flowchart.
    pub mermaid: String,
}

/// Targets present in both catalogs whose apply order changed: the waves,
/// restricted to the changes both sides have, differ. Adding or removing a
/// resource alone is not an order change (the diff shows it); a rule, a
/// change group or a new dependency that moves existing resources is.
/// Targets that cannot be ordered on either side are skipped: `strata
/// lint` reports them.
pub fn changed_orders(
    old: &Path,
    new: &Path,
    options: &Options,
) -> std::io::Result<Vec<OrderChange>> {
    changed_orders_of(old, new, options, None)
}

/// [`changed_orders`] of the targets in `only` (all when `None`): a review
/// passes the targets its diff found changed, since a target whose files
/// are the same on both sides has the same order on both. The two
/// catalogs are read side by side.
pub fn changed_orders_of(
    old: &Path,
    new: &Path,
    options: &Options,
    only: Option<&BTreeSet<String>>,
) -> std::io::Result<Vec<OrderChange>> {
    let (old_docs, new_docs) = std::thread::scope(|s| {
        let new_docs = s.spawn(|| documents_of(new, only));
        let old_docs = documents_of(old, only);
        (old_docs, new_docs.join())
    });
    let old_docs = old_docs?;
    let new_docs = new_docs.map_err(|_| {
        std::io::Error::other("reading the new catalog's documents failed (thread)")
    })??;
    let mut out = Vec::new();
    for (target, new_target_docs) in &new_docs {
        let Some(old_target_docs) = old_docs.get(target) else {
            continue;
        };
        let (Ok(a), Ok(b)) = (
            plan(old_target_docs, options),
            plan(new_target_docs, options),
        ) else {
            continue;
        };
        let (wa, wb) = (wave_of(&a), wave_of(&b));
        let common: Vec<&String> = wa.keys().filter(|k| wb.contains_key(*k)).collect();
        let rank = |w: &BTreeMap<String, usize>| -> BTreeMap<String, usize> {
            // Dense ranks over the common changes, so that a wave emptied or
            // added by other resources does not count as a move.
            let mut levels: Vec<usize> = common.iter().map(|k| w[*k]).collect();
            levels.sort_unstable();
            levels.dedup();
            common
                .iter()
                .map(|k| {
                    let r = levels.binary_search(&w[*k]).unwrap_or_default();
                    ((*k).clone(), r)
                })
                .collect()
        };
        let (ra, rb) = (rank(&wa), rank(&wb));
        let moved: Vec<String> = common
            .iter()
            .filter(|k| ra.get(**k) != rb.get(**k))
            .map(|k| (*k).clone())
            .collect();
        if !moved.is_empty() {
            out.push(OrderChange {
                target: target.clone(),
                moved,
                mermaid: mermaid(&b),
            });
        }
    }
    Ok(out)
}

/// Whether a leaf change at `path` (a diff's path: `spec.replicas`,
/// `metadata.annotations.owner`, `metadata.annotations["kapp.k14s.io/change-group"]`)
/// of an object that keeps its kind, namespace and name can move it in the
/// apply order when kapp's default configuration is the only one: its
/// rules read the API version, kind, name, namespace and `kapp.k14s.io/`
/// annotations, never the spec, the data or other labels and annotations.
/// Anything else about `metadata`, and a path a redaction rewrote, may.
pub fn may_reorder(path: &str) -> bool {
    if path.contains("<redacted") || path.contains("k14s.io") {
        return true;
    }
    match path.strip_prefix("metadata") {
        Some(rest) => !["annotations", "labels"].iter().any(|m| {
            rest.strip_prefix('.')
                .and_then(|r| r.strip_prefix(m))
                .is_some_and(|r| r.starts_with('.') || r.starts_with('['))
        }),
        None => path.is_empty() || path.starts_with("apiVersion") || path.starts_with("kind"),
    }
}

/// Kinds of which any change may reorder their target: a CRD says which
/// kinds are custom resources and which are cluster-scoped, a `List` holds
/// other objects, and a kapp `Config` sets the rules.
pub const REORDERING_KINDS: &[&str] = &["CustomResourceDefinition", "List", "Config"];

/// Whether a target's directory holds a kapp configuration (a
/// `kapp.k14s.io/v1alpha1` document or a ConfigMap labelled
/// `kapp.k14s.io/config`) in any YAML file, or a file it cannot read: its
/// matchers may read any field, so no change can be ruled out there.
pub fn may_hold_config(dir: &Path) -> bool {
    let Ok(files) = crate::fswalk::files_below(dir, &crate::fswalk::not_git) else {
        return dir.exists();
    };
    files
        .into_iter()
        .filter(|f| crate::fswalk::is_yaml(f))
        .any(|f| match std::fs::read(&f) {
            Ok(bytes) => bytes_may_hold_config(&bytes),
            Err(_) => true,
        })
}

/// Whether a YAML file's bytes may hold a kapp configuration (see
/// [`may_hold_config`]).
pub fn bytes_may_hold_config(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    text.contains(super::config::CONFIG_API_VERSION) || text.contains(super::config::CONFIG_LABEL)
}

/// The wave (0-based) of each change, by description.
fn wave_of(graph: &ChangeGraph) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for (w, wave) in graph.waves().iter().enumerate() {
        for &i in wave {
            out.insert(graph.changes()[i].description(), w);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    const NS: &str = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web\n";

    #[test]
    fn only_what_kapps_default_rules_read_may_reorder() {
        for p in [
            "",
            "apiVersion",
            "kind",
            "metadata",
            "metadata.name",
            "metadata.namespace",
            "metadata.generateName",
            "metadata.annotations",
            "metadata.labels",
            r#"metadata.annotations["kapp.k14s.io/change-group"]"#,
            r#"metadata.annotations["kapp.k14s.io/disable-default-change-group-and-rules"]"#,
            r#"metadata.labels["kapp.k14s.io/config"]"#,
            "metadata.annotations.<redacted>",
        ] {
            assert!(may_reorder(p), "{p}");
        }
        for p in [
            "spec.replicas",
            "spec.template.spec.containers[0].image",
            "data.config",
            "rules[0].verbs[1]",
            "metadata.annotations.owner",
            r#"metadata.annotations["example.com/owner"]"#,
            "metadata.labels.app",
            r#"metadata.labels["app.kubernetes.io/version"]"#,
        ] {
            assert!(!may_reorder(p), "{p}");
        }
    }

    fn job(name: &str, annotations: &str) -> String {
        format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  namespace: web\n{annotations}"
        )
    }

    #[test]
    fn a_new_rule_that_moves_a_resource_is_an_order_change() {
        let tmp = tempfile::tempdir().unwrap();
        let (old, new) = (tmp.path().join("old"), tmp.path().join("new"));
        write(&old, "web/ns.yaml", NS);
        write(&old, "web/migrate.yaml", &job("migrate", ""));
        write(&old, "web/app.yaml", &job("app", ""));
        write(&new, "web/ns.yaml", NS);
        write(
            &new,
            "web/migrate.yaml",
            &job(
                "migrate",
                "  annotations:\n    kapp.k14s.io/change-group: db-migrations\n",
            ),
        );
        write(
            &new,
            "web/app.yaml",
            &job(
                "app",
                "  annotations:\n    kapp.k14s.io/change-rule: upsert after upserting db-migrations\n",
            ),
        );
        let changes = changed_orders(&old, &new, &Options::default()).unwrap();
        // Restricted to the targets a review's diff found changed: others
        // are not read.
        let only = |t: &str| Some(BTreeSet::from([t.to_string()]));
        let web = changed_orders_of(&old, &new, &Options::default(), only("web").as_ref());
        assert_eq!(web.unwrap(), changes);
        let other = changed_orders_of(&old, &new, &Options::default(), only("db").as_ref());
        assert_eq!(other.unwrap(), vec![]);
        assert_eq!(changes.len(), 1, "{changes:?}");
        assert_eq!(changes[0].target, "web");
        assert_eq!(changes[0].moved.len(), 1, "{changes:?}");
        assert!(changes[0].moved[0].contains("job/app"), "{changes:?}");
        let m = &changes[0].mermaid;
        assert!(m.starts_with("flowchart LR\n"), "{m}");
        assert!(m.contains("subgraph wave3"), "{m}");
    }

    /// A chart's ServiceAccount written without a namespace made both sides
    /// fail to order (kapp's rule for service accounts had no
    /// `{namespace}`), so the target was skipped and a new rule that moves
    /// its Job went unreported. Both sides are placed in kapp's `default`.
    #[test]
    fn charts_without_namespaces_are_compared_both_sides_alike() {
        let tmp = tempfile::tempdir().unwrap();
        let (old, new) = (tmp.path().join("old"), tmp.path().join("new"));
        let sa = "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: runner}\n";
        let job = |name: &str, annotations: &str| {
            format!("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n{annotations}")
        };
        for side in [&old, &new] {
            write(side, "web/sa.yaml", sa);
            write(
                side,
                "web/migrate.yaml",
                &job(
                    "migrate",
                    "  annotations: {kapp.k14s.io/change-group: db}\n",
                ),
            );
        }
        write(&old, "web/app.yaml", &job("app", ""));
        write(
            &new,
            "web/app.yaml",
            &job(
                "app",
                "  annotations: {kapp.k14s.io/change-rule: upsert after upserting db}\n",
            ),
        );
        let changes = changed_orders(&old, &new, &Options::default()).unwrap();
        assert_eq!(changes.len(), 1, "{changes:?}");
        assert_eq!(
            changes[0].moved,
            ["(upsert) job/app (batch/v1) namespace: default"]
        );
    }

    #[test]
    fn adding_a_resource_alone_is_not_an_order_change() {
        let tmp = tempfile::tempdir().unwrap();
        let (old, new) = (tmp.path().join("old"), tmp.path().join("new"));
        write(&old, "web/ns.yaml", NS);
        write(&old, "web/app.yaml", &job("app", ""));
        write(&new, "web/ns.yaml", NS);
        write(&new, "web/app.yaml", &job("app", ""));
        write(&new, "web/other.yaml", &job("other", ""));
        // Not YAML at all: skipped, not an error.
        write(&new, "web/notes.yaml", "a: [\n");
        assert_eq!(
            changed_orders(&old, &new, &Options::default()).unwrap(),
            vec![]
        );
    }
}
