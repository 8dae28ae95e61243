//! Unit tests of the whole ordering pipeline on small inline inputs.

use super::*;

fn graph(yaml: &str, options: &Options) -> Result<ChangeGraph, OrderError> {
    let docs = parse_documents(Path::new("in.yaml"), yaml)?;
    plan(&docs, options)
}

/// As kapp's change-graph tests build their graphs: no default bindings
/// and no `kapp deploy` preparation (namespaces as written; most of these
/// inputs have no apiVersion, which `kapp deploy` would refuse).
fn no_defaults() -> Options {
    Options {
        default_config: false,
        keep_cluster_scoped_namespaces: true,
        ..Options::default()
    }
}

fn short(g: &ChangeGraph, i: usize) -> String {
    let r = &g.changes()[i].resource;
    format!("{}/{}", r.kind.to_lowercase(), r.name)
}

fn edges(g: &ChangeGraph) -> Vec<String> {
    let mut out: Vec<String> = g
        .edges()
        .map(|(a, b)| format!("{} -> {}", short(g, a), short(g, b)))
        .collect();
    out.sort();
    out
}

fn waves(g: &ChangeGraph) -> Vec<Vec<String>> {
    g.waves()
        .into_iter()
        .map(|w| w.into_iter().map(|i| short(g, i)).collect())
        .collect()
}

const CHAIN: &str = "
kind: Job
metadata:
  name: seed
  annotations: {kapp.k14s.io/change-group: ex.com/seed}
---
kind: Job
metadata:
  name: migrate
  annotations:
    kapp.k14s.io/change-group: ex.com/migrate
    kapp.k14s.io/change-rule: upsert after upserting ex.com/seed
---
kind: Deployment
metadata:
  name: web
  annotations:
    kapp.k14s.io/change-rule.db: upsert after upserting ex.com/migrate
    kapp.k14s.io/change-rule.other: upsert after upserting ex.com/nobody
---
kind: Service
metadata: {name: web}
";

#[test]
fn annotation_rules_make_direct_edges_and_waves() {
    let g = graph(CHAIN, &no_defaults()).unwrap();
    assert_eq!(
        edges(&g),
        ["deployment/web -> job/migrate", "job/migrate -> job/seed"]
    );
    assert_eq!(
        waves(&g),
        [
            vec!["job/seed", "service/web"],
            vec!["job/migrate"],
            vec!["deployment/web"]
        ]
    );
    assert_eq!(g.changes()[0].description(), "(upsert) job/seed () cluster");
}

#[test]
fn rules_apply_only_to_their_op_and_target_op() {
    let mut options = no_defaults();
    options.ops.overrides = vec![("job/seed".into(), Op::Delete)];
    // seed is deleted, so "after upserting ex.com/seed" targets nothing;
    // the kind in the override key is case-insensitive.
    let g = graph(CHAIN, &options).unwrap();
    assert_eq!(edges(&g), ["deployment/web -> job/migrate"]);
    options.ops.overrides = vec![("Job/migrate".into(), Op::Noop)];
    let g = graph(CHAIN, &options).unwrap();
    assert!(edges(&g).is_empty(), "{:?}", edges(&g));
    options.ops.overrides = vec![("job/nope".into(), Op::Delete)];
    let e = graph(CHAIN, &options).unwrap_err();
    assert!(
        e.to_string().contains("no resource matches `job/nope`"),
        "{e}"
    );
}

#[test]
fn cycles_are_reported_along_the_path() {
    let yaml = "
kind: Job
metadata:
  name: a
  annotations: {kapp.k14s.io/change-group: g/a, kapp.k14s.io/change-rule: upsert after upserting g/c}
---
kind: Job
metadata:
  name: b
  annotations: {kapp.k14s.io/change-group: g/b, kapp.k14s.io/change-rule: upsert after upserting g/a}
---
kind: Job
metadata:
  name: c
  annotations: {kapp.k14s.io/change-group: g/c, kapp.k14s.io/change-rule: upsert after upserting g/b}
";
    let e = graph(yaml, &no_defaults()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Detected cycle while ordering changes: [job/a () cluster] -> [job/c () cluster] -> [job/b () cluster] -> [job/a () cluster] (found repeated: job/a () cluster)"
    );
}

#[test]
fn a_long_cycle_names_its_first_changes_and_the_count() {
    let n = 5000;
    let mut yaml = String::new();
    for i in 0..n {
        yaml.push_str(&format!(
            "---\nkind: Job\nmetadata:\n  name: j{i}\n  annotations: {{kapp.k14s.io/change-group: g/{i}, kapp.k14s.io/change-rule: upsert after upserting g/{}}}\n",
            (i + 1) % n
        ));
    }
    let e = graph(&yaml, &no_defaults()).unwrap_err().to_string();
    assert!(e.len() < 1000, "{} bytes: {}", e.len(), &e[..300]);
    assert!(
        e.starts_with(
            "Detected cycle while ordering changes: [job/j0 () cluster] -> [job/j1 () cluster] -> "
        ),
        "{e}"
    );
    assert!(
        e.ends_with("[job/j11 () cluster] -> ... 4987 more changes ... -> [job/j4999 () cluster] -> [job/j0 () cluster] (5000 changes in all) (found repeated: job/j0 () cluster)"),
        "{e}"
    );
}

#[test]
fn optional_rules_skip_edges_that_would_close_a_cycle() {
    // Three bindings: a -> b (required), then optional b -> c and c -> a.
    // The later binding weighs more, so c -> a is tried first and kept;
    // b -> c would then close a -> b -> c -> a and is dropped.
    let yaml = "
apiVersion: kapp.k14s.io/v1alpha1
kind: Config
changeGroupBindings:
- {name: g/a, resourceMatchers: [{kindNamespaceNameMatcher: {kind: Job, name: a}}]}
- {name: g/b, resourceMatchers: [{kindNamespaceNameMatcher: {kind: Job, name: b}}]}
- {name: g/c, resourceMatchers: [{kindNamespaceNameMatcher: {kind: Job, name: c}}]}
changeRuleBindings:
- rules: [upsert after upserting g/b]
  resourceMatchers: [{kindNamespaceNameMatcher: {kind: Job, name: a}}]
- rules: [upsert after upserting g/c, upsert after upserting g/b]
  ignoreIfCyclical: true
  resourceMatchers: [{kindNamespaceNameMatcher: {kind: Job, name: b}}]
- rules: [upsert after upserting g/a]
  ignoreIfCyclical: true
  resourceMatchers: [{kindNamespaceNameMatcher: {kind: Job, name: c}}]
---
{kind: Job, metadata: {name: a}}
---
{kind: Job, metadata: {name: b}}
---
{kind: Job, metadata: {name: c}}
";
    let g = graph(yaml, &no_defaults()).unwrap();
    assert_eq!(edges(&g), ["job/a -> job/b", "job/c -> job/a"]);
    assert_eq!(g.changes().len(), 3, "the Config is not a change");
}

#[test]
fn bad_rules_and_groups_name_the_resource() {
    let yaml = "
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
  annotations: {kapp.k14s.io/change-rule: upsert after upserting g/x/y}
";
    let e = graph(yaml, &no_defaults()).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.starts_with("Resource configmap/cm (v1) cluster: "),
        "{msg}"
    );
    assert!(msg.contains("to be a qualified name"), "{msg}");
    let d = e.to_diagnostic();
    assert_eq!(d.line, Some(2));

    // A bad group name matters only once some rule looks groups up.
    let bad_group = "kind: Job\nmetadata:\n  name: a\n  annotations: {kapp.k14s.io/change-group: '{api-group}'}\n";
    assert!(graph(bad_group, &no_defaults()).is_ok());
    let with_rule = format!("{bad_group}---\nkind: Job\nmetadata:\n  name: b\n  annotations: {{kapp.k14s.io/change-rule: upsert after upserting g/a}}\n");
    let e = graph(&with_rule, &no_defaults()).unwrap_err();
    assert!(e.to_string().contains("Placeholder {api-group}"), "{e}");
}

#[test]
fn defaults_order_namespaces_crds_and_config() {
    let yaml = "
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: app}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: app}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: app}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec: {group: example.com, names: {kind: Widget}}
---
apiVersion: v1
kind: Namespace
metadata: {name: app}
";
    let g = graph(yaml, &Options::default()).unwrap();
    assert_eq!(
        edges(&g),
        [
            "configmap/settings -> namespace/app",
            "deployment/web -> configmap/settings",
            "deployment/web -> namespace/app",
            "widget/w -> configmap/settings",
            "widget/w -> customresourcedefinition/widgets.example.com",
            "widget/w -> namespace/app",
        ]
    );
    assert_eq!(
        waves(&g),
        [
            vec![
                "customresourcedefinition/widgets.example.com",
                "namespace/app"
            ],
            vec!["configmap/settings"],
            vec!["widget/w", "deployment/web"],
        ]
    );
}

/// compat37: Kapitan's own examples/kubernetes writes Namespaces with
/// `metadata.namespace` set to their own name; read as namespaced, each
/// waited for itself and `strata lint --catalog` reported 4 `order-cycle`
/// errors. kapp drops the namespace of cluster-scoped resources before
/// ordering (`placeIntoNamespace`: `res.RemoveNamespace()`), built-in kinds
/// and kinds a CRD in the same set declares `scope: Cluster`.
#[test]
fn cluster_scoped_resources_lose_their_namespace_as_in_kapp() {
    let yaml = "
apiVersion: v1
kind: Namespace
metadata: {name: busybox, namespace: busybox}
---
apiVersion: v1
kind: Pod
metadata: {name: busybox, namespace: busybox}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: reader, namespace: busybox}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: issuers.example.com}
spec: {group: example.com, scope: Cluster, names: {kind: ClusterIssuer}}
---
apiVersion: example.com/v1
kind: ClusterIssuer
metadata: {name: le, namespace: busybox}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: busybox}
";
    let g = graph(yaml, &Options::default()).unwrap();
    let scope = |kind: &str| {
        g.changes()
            .iter()
            .find(|c| c.resource.kind == kind)
            .map(|c| c.resource.namespace.clone())
            .unwrap()
    };
    assert_eq!(scope("Namespace"), "");
    assert_eq!(scope("ClusterRole"), "");
    assert_eq!(scope("ClusterIssuer"), "");
    // Namespaced kinds keep theirs (an unknown kind too: no cluster to ask).
    assert_eq!(scope("Pod"), "busybox");
    assert_eq!(scope("Widget"), "busybox");
    assert!(edges(&g).contains(&"pod/busybox -> namespace/busybox".to_string()));
    let docs = parse_documents(Path::new("in.yaml"), yaml).unwrap();
    assert_eq!(lint(&docs, &Options::default()), vec![]);
}

#[test]
fn labelled_configmap_configures_and_is_applied() {
    let yaml = "
apiVersion: v1
kind: ConfigMap
metadata:
  name: kapp-config
  labels: {kapp.k14s.io/config: ''}
data:
  config.yml: |
    apiVersion: kapp.k14s.io/v1alpha1
    kind: Config
    changeRuleBindings:
    - rules: [upsert after upserting g/first]
      resourceMatchers: [{apiVersionKindMatcher: {apiVersion: batch/v1, kind: Job}}]
---
apiVersion: batch/v1
kind: Job
metadata:
  name: j
---
apiVersion: v1
kind: Secret
metadata:
  name: s
  annotations: {kapp.k14s.io/change-group: g/first}
";
    let g = graph(yaml, &no_defaults()).unwrap();
    assert_eq!(g.changes().len(), 3);
    assert_eq!(edges(&g), ["job/j -> secret/s"]);
}

#[test]
fn list_documents_are_flattened_and_empty_documents_skipped() {
    let yaml = "---\n---\napiVersion: v1\nkind: List\nitems:\n- {kind: Job, metadata: {name: a}}\n- {kind: Job, metadata: {name: b}}\n";
    let g = graph(yaml, &no_defaults()).unwrap();
    assert_eq!(g.changes().len(), 2);
    assert_eq!(g.changes()[1].resource.origin.line, 7);
}

#[test]
fn repeated_resources_are_merged_or_rejected_like_kapp_deploy() {
    let twice = "kind: Job\nmetadata: {name: a}\n---\nkind: Job\nmetadata: {name: a}\n";
    assert_eq!(graph(twice, &no_defaults()).unwrap().changes().len(), 1);
    // Another API version of the same group and kind is the same resource.
    let versions = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: a}\n---\napiVersion: batch/v2\nkind: Job\nmetadata: {name: a}\n";
    let e = graph(versions, &no_defaults()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Found resource 'job/a (batch/v2) cluster' multiple times with different content (in.yaml:1 and in.yaml:5)"
    );
    let other_ns =
        "kind: Job\nmetadata: {name: a}\n---\nkind: Job\nmetadata: {name: a, namespace: x}\n";
    assert_eq!(graph(other_ns, &no_defaults()).unwrap().changes().len(), 2);
}

#[test]
fn bad_binding_rules_name_the_config_and_binding() {
    let yaml = "
apiVersion: kapp.k14s.io/v1alpha1
kind: Config
changeRuleBindings:
- rules: [upsert after upserting g/ok]
  resourceMatchers: [{kindNamespaceNameMatcher: {kind: Job, name: other}}]
- rules: ['upsert after upserting g/{crd-kind}']
  resourceMatchers: [{apiVersionKindMatcher: {apiVersion: batch/v1, kind: Job}}]
---
{apiVersion: batch/v1, kind: Job, metadata: {name: a}}
";
    let e = graph(yaml, &no_defaults()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Resource job/a (batch/v1) cluster: in.yaml: changeRuleBindings[1]: Placeholder {crd-kind} does not have a value for target resource (hint: placeholders with the 'crd-' prefix can only be used with CRDs)"
    );
}

#[test]
fn documents_keep_their_source_text() {
    let text = "# leading comment\nkind: Job\nmetadata: {name: a}\nspec: {mode: OFF}\n--- # second\n\nkind: Job\nmetadata:\n  name: b\n...\n---\n---\napiVersion: v1\nkind: List\nitems:\n- {kind: Job, metadata: {name: c}}\n";
    let docs = parse_documents(Path::new("in.yaml"), text).unwrap();
    let raws: Vec<Option<&str>> = docs.iter().map(|d| d.raw.as_deref()).collect();
    assert_eq!(
        raws,
        [
            Some("# leading comment\nkind: Job\nmetadata: {name: a}\nspec: {mode: OFF}\n"),
            Some("kind: Job\nmetadata:\n  name: b\n"),
            None,
        ]
    );
    // Content on a marker line: no raw text for the whole stream.
    let docs = parse_documents(
        Path::new("in.yaml"),
        "--- {kind: Job, metadata: {name: a}}\n",
    )
    .unwrap();
    assert_eq!(docs[0].raw, None);
}

/// A helm chart rendered with `helm template --namespace argocd` writes its
/// objects without `metadata.namespace` (compat38,
/// compat-order-helm-serviceaccount-without-namespace).
const CHART: &str = "
apiVersion: v1
kind: Namespace
metadata: {name: argocd}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: controller}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: controller}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: controller}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: controller}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: server}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec: {group: example.com, scope: Namespaced, names: {kind: Widget}}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
";

/// `kapp deploy` puts every namespaced resource written without a
/// namespace into its `-n` namespace before it orders
/// (`Preparation.placeIntoNamespace`); without it kapp's default rule 4
/// (`delete before deleting ...namespaces-{namespace}`) had no
/// `{namespace}` for the ServiceAccount and the whole order failed, and
/// the Deployment waited for none of the RBAC kapp makes it wait for.
#[test]
fn namespaced_resources_without_a_namespace_go_into_the_default_namespace() {
    let g = graph(CHART, &Options::default()).unwrap();
    let scope = |name: &str, kind: &str| {
        g.changes()
            .iter()
            .find(|c| c.resource.kind == kind && c.resource.name == name)
            .map(|c| c.resource.namespace.clone())
            .unwrap()
    };
    assert_eq!(scope("controller", "ServiceAccount"), "default");
    assert_eq!(scope("server", "Deployment"), "default");
    assert_eq!(scope("w", "Widget"), "default");
    assert_eq!(scope("controller", "ClusterRole"), "");
    assert_eq!(scope("argocd", "Namespace"), "");
    assert_eq!(
        g.changes()[1].description(),
        "(upsert) serviceaccount/controller (v1) namespace: default"
    );
    let e = edges(&g);
    for dep in [
        "deployment/server -> serviceaccount/controller",
        "deployment/server -> role/controller",
        "deployment/server -> rolebinding/controller",
        "deployment/server -> clusterrole/controller",
        "widget/w -> customresourcedefinition/widgets.example.com",
    ] {
        assert!(e.contains(&dep.to_string()), "{dep} missing from {e:?}");
    }
    // `default` is not the chart's Namespace: nothing waits for it.
    assert!(!e.iter().any(|e| e.ends_with("namespace/argocd")), "{e:?}");

    // kapp's `-n argocd`: everything namespaced waits for the Namespace,
    // and when deleting, the ServiceAccount goes before it.
    let argocd = Options {
        default_namespace: "argocd".into(),
        ..Options::default()
    };
    let e = edges(&graph(CHART, &argocd).unwrap());
    assert!(e.contains(&"serviceaccount/controller -> namespace/argocd".to_string()));
    assert!(e.contains(&"deployment/server -> namespace/argocd".to_string()));
    let mut delete = argocd.clone();
    delete.ops.default = Op::Delete;
    let e = edges(&graph(CHART, &delete).unwrap());
    assert!(
        e.contains(&"namespace/argocd -> serviceaccount/controller".to_string()),
        "{e:?}"
    );

    // An empty `-n` leaves them without one, and kapp's rule fails as in
    // kapp; so do graphs built as written (kapp's change-graph tests).
    for options in [
        Options {
            default_namespace: String::new(),
            ..Options::default()
        },
        Options {
            keep_cluster_scoped_namespaces: true,
            ..Options::default()
        },
    ] {
        let msg = graph(CHART, &options).unwrap_err().to_string();
        assert!(
            msg.contains("Placeholder {namespace} does not have a value"),
            "{msg}"
        );
    }
}

/// kapp's `ChangeImpl.op` makes a resource of the new set annotated
/// `kapp.k14s.io/noop` a noop change (kapp's e2e `TestNoopAnn`: not
/// applied, nothing waits for it); strata upserted it, so kapp's last
/// default rule made the Deployment wait for the ConfigMap kapp never
/// applies.
#[test]
fn the_noop_annotation_makes_a_noop_change_as_in_kapp() {
    let yaml = "
apiVersion: v1
kind: ConfigMap
metadata:
  name: external
  annotations: {kapp.k14s.io/noop: ''}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
";
    let g = graph(yaml, &Options::default()).unwrap();
    assert_eq!(g.changes()[0].op, Op::Noop);
    assert_eq!(
        g.changes()[0].description(),
        "(noop) configmap/external (v1) namespace: default"
    );
    assert_eq!(edges(&g), ["deployment/web -> configmap/settings"]);
    // An explicit upsert is still the new set: noop. A deletion is not
    // (kapp never reads the annotation of a resource it deletes).
    let mut options = Options::default();
    options.ops.overrides = vec![("configmap/external".into(), Op::Upsert)];
    assert_eq!(graph(yaml, &options).unwrap().changes()[0].op, Op::Noop);
    options.ops.overrides = vec![("configmap/external".into(), Op::Delete)];
    assert_eq!(graph(yaml, &options).unwrap().changes()[0].op, Op::Delete);
    options.ops.overrides.clear();
    options.ops.default = Op::Delete;
    assert_eq!(graph(yaml, &options).unwrap().changes()[0].op, Op::Delete);
}

/// Only kinds whose scope is known are placed: Kubernetes' own (newer
/// cluster-scoped kinds too), Carvel's, and those a CRD in the set
/// declares. A custom kind without its CRD keeps what it is written with:
/// real catalogs write cluster-scoped custom resources without a namespace
/// (Cilium's IP pools, Gatekeeper's constraints, Kyverno's ClusterPolicy,
/// compat38's kapitan-reference and Project Syn components), and placed in
/// `default` they waited for every ConfigMap, Secret and RBAC object, which
/// kapp, asking the cluster, does not make them do.
#[test]
fn only_kinds_of_known_scope_are_placed() {
    let yaml = "
apiVersion: cilium.io/v2alpha1
kind: CiliumLoadBalancerIPPool
metadata: {name: pool}
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttributesClass
metadata: {name: fast}
---
apiVersion: networking.k8s.io/v1
kind: IPAddress
metadata: {name: 10.0.0.1}
---
apiVersion: packaging.carvel.dev/v1alpha1
kind: PackageInstall
metadata: {name: cert-manager}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: shop}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
";
    let g = graph(yaml, &Options::default()).unwrap();
    let scope = |kind: &str| {
        g.changes()
            .iter()
            .find(|c| c.resource.kind == kind)
            .map(|c| c.resource.namespace.clone())
            .unwrap()
    };
    assert_eq!(scope("CiliumLoadBalancerIPPool"), "");
    assert_eq!(scope("VolumeAttributesClass"), "");
    assert_eq!(scope("IPAddress"), "");
    assert_eq!(scope("PackageInstall"), "default");
    assert_eq!(scope("Widget"), "shop");
    assert_eq!(scope("ConfigMap"), "default");
    let e = edges(&g);
    assert!(
        !e.iter().any(|e| e.starts_with("ciliumloadbalancerippool/")
            || e.starts_with("volumeattributesclass/")),
        "{e:?}"
    );
    assert!(e.contains(&"packageinstall/cert-manager -> configmap/settings".to_string()));
}
