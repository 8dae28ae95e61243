//! kapp-style apply ordering of Kubernetes resources.
//!
//! Given the resources of an app (multi-document YAML), what is done to each
//! (upsert, delete or noop) and kapp Config (`changeGroupBindings`,
//! `changeRuleBindings`, plus kapp's defaults), build the same dependency
//! graph kapp's `diffgraph` builds: change groups from annotations and
//! bindings, change rules with placeholders, optional rules dropped when
//! they would close a cycle. The result gives the direct edges and kapp's
//! apply waves.

mod argocd;
mod config;
mod decode;
mod graph;
mod lint;
mod matcher;
mod resource;
mod review;
mod rule;

pub use argocd::{annotate_sync_waves, SYNC_WAVE_ANNOTATION};
pub use config::{ChangeGroupBinding, ChangeRuleBinding, Config};
pub use graph::{Change, ChangeGraph};
pub use lint::{lint, CODE_CYCLE, CODE_INVALID, CODE_MALFORMED, CODE_UNMATCHED};
pub use matcher::{Matcher, PathPart};
pub use resource::{Origin, Resource};
pub use review::{
    bytes_may_hold_config, catalog_documents, changed_orders, changed_orders_of, may_hold_config,
    may_reorder, mermaid, OrderChange, REORDERING_KINDS,
};
pub use rule::{substitute_placeholders, validate_group_name, ChangeRule, Op, Order};

use crate::diagnostics::{Diagnostic, ToDiagnostic};
use crate::value::Value;
use crate::yaml::{Node, NodeValue};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum OrderError {
    #[error(transparent)]
    Read(#[from] crate::error::Error),
    #[error("{}:{line}: {message}", file.display())]
    InvalidResource {
        file: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{}:{line}: invalid kapp config{}: {message}", file.display(), if field.is_empty() { String::new() } else { format!(" at `{field}`") })]
    Config {
        file: PathBuf,
        line: usize,
        field: String,
        message: String,
    },
    /// A bad change group / rule of one resource (annotation or binding).
    #[error("Resource {resource}: {from}: {message}")]
    Rule {
        resource: String,
        /// `annotation <key>` or the config binding.
        from: String,
        file: PathBuf,
        line: usize,
        message: String,
    },
    #[error(
        "Detected cycle while ordering changes: {} (found repeated: {repeated})",
        cycle_path(path)
    )]
    Cycle { path: Vec<String>, repeated: String },
    #[error("the change rules make more than {limit} dependencies between changes (a rule on a group that holds thousands of resources, e.g. `upsert after upserting all`, waited for by thousands): use fewer, narrower groups")]
    TooManyDependencies { limit: usize },
    #[error("no resource matches `{key}` (expected <kind>/<name>, e.g. deployment/web)")]
    UnknownOpTarget { key: String },
    #[error("Found resource '{resource}' multiple times with different content ({}:{} and {}:{})", first.file.display(), first.line, second.file.display(), second.line)]
    Duplicate {
        resource: String,
        first: Origin,
        second: Origin,
    },
}

/// Changes of a cycle's path named in full; a longer path names its first
/// ones, the count left out and the last two (which close the cycle).
const CYCLE_PATH_SHOWN: usize = 12;

/// kapp's `[a] -> [b] -> [a]`, bounded: a cycle through 50,000 changes
/// made one error line of 2.2 MB (in the job log, an annotation and the
/// lint report), which names no more than its first changes usefully.
fn cycle_path(path: &[String]) -> String {
    if path.len() <= CYCLE_PATH_SHOWN + 2 {
        return format!("[{}]", path.join("] -> ["));
    }
    let head = &path[..CYCLE_PATH_SHOWN];
    let tail = &path[path.len() - 2..];
    format!(
        "[{}] -> ... {} more changes ... -> [{}] ({} changes in all)",
        head.join("] -> ["),
        path.len() - CYCLE_PATH_SHOWN - 2,
        tail.join("] -> ["),
        path.len() - 1
    )
}

impl ToDiagnostic for OrderError {
    fn to_diagnostic(&self) -> Diagnostic {
        let d = Diagnostic::error(self.to_string());
        match self {
            OrderError::Read(e) => e.to_diagnostic(),
            OrderError::InvalidResource { file, line, .. } => d.with_file(file).with_line(*line),
            OrderError::Config { file, line, .. } => d
                .with_file(file)
                .with_line(*line)
                .with_hint("see https://carvel.dev/kapp/docs/latest/config/ for the Config format"),
            OrderError::Rule { file, line, .. } => d
                .with_file(file)
                .with_line(*line)
                .with_hint("a change rule reads `(upsert|delete) (before|after) (upserting|deleting) <group>`; group names are `[dns-prefix/]name`"),
            OrderError::Cycle { .. } => d.with_hint(
                "break the cycle by removing a change rule, or mark a config binding `ignoreIfCyclical: true`",
            ),
            OrderError::UnknownOpTarget { .. } => d,
            OrderError::TooManyDependencies { .. } => {
                d.with_hint("see docs/reliability.md for strata's limits")
            }
            OrderError::Duplicate { second, .. } => d
                .with_file(&second.file)
                .with_line(second.line)
                .with_hint("a resource (namespace, API group, kind, name) may appear more than once only with identical content; if the directory holds several targets' catalogs, order one target at a time"),
        }
    }
}

/// One YAML document of the input and where it came from.
#[derive(Debug, Clone)]
pub struct Document {
    pub node: Node,
    pub file: PathBuf,
    /// The document's own source text, when it can be cut out of the file:
    /// resources are written back exactly as given (quoting, comments).
    pub raw: Option<String>,
}

/// Parses a multi-document YAML stream; empty documents are skipped and
/// `kind: List` documents are flattened into their `items`, as kubectl does.
pub fn parse_documents(file: &Path, text: &str) -> Result<Vec<Document>, OrderError> {
    let nodes = crate::yaml::load_all(text).map_err(|source| crate::error::Error::Yaml {
        path: file.to_path_buf(),
        source,
    })?;
    let chunks = raw_chunks(text).unwrap_or_default();
    // Documents and chunks are both in file order: one cursor finds each
    // document's chunk.
    let mut next_chunk = chunks.iter().peekable();
    let mut docs = Vec::new();
    for node in nodes {
        while next_chunk
            .next_if(|(_, last, _)| *last < node.line)
            .is_some()
        {}
        let raw = next_chunk
            .peek()
            .filter(|(first, _, _)| *first <= node.line)
            .map(|(_, _, text)| text.trim_start_matches(['\n', '\r']).to_string());
        push_document(node, file, raw, &mut docs);
    }
    Ok(docs)
}

/// The source text of each document of a stream with its first and last
/// line. Documents are separated by `---` or ended by `...` at the start of
/// a line (markers cannot occur inside content). `None` when the stream has
/// directives or content on a marker line (`--- |`): those are re-emitted.
fn raw_chunks(text: &str) -> Option<Vec<(usize, usize, String)>> {
    let mut chunks = Vec::new();
    let mut current = String::new();
    let mut first = 1;
    let mut last = 0;
    for (i, line) in text.lines().enumerate() {
        last = i + 1;
        if line.starts_with('%') {
            return None;
        }
        let marker = line
            .strip_prefix("---")
            .or_else(|| line.strip_prefix("..."))
            .filter(|rest| rest.is_empty() || rest.starts_with([' ', '\t']));
        if let Some(rest) = marker {
            let rest = rest.trim();
            if !rest.is_empty() && !rest.starts_with('#') {
                return None;
            }
            chunks.push((first, last - 1, std::mem::take(&mut current)));
            first = last + 1;
            continue;
        }
        current.push_str(line);
        current.push('\n');
    }
    chunks.push((first, last, current));
    Some(chunks)
}

fn push_document(node: Node, file: &Path, raw: Option<String>, docs: &mut Vec<Document>) {
    match node.value {
        NodeValue::Null => {}
        NodeValue::Map(_) if is_list_kind(&node) => {
            if let Some(Node {
                value: NodeValue::Seq(items),
                ..
            }) = node.get("items")
            {
                for item in items.clone() {
                    push_document(item, file, None, docs);
                }
            }
        }
        _ => docs.push(Document {
            node,
            file: file.to_path_buf(),
            raw,
        }),
    }
}

/// `kind: List` / `kind: ConfigMapList` etc. with `items`, as kubectl accepts.
fn is_list_kind(node: &Node) -> bool {
    let kind = node.get("kind").map(|k| k.key_string()).unwrap_or_default();
    kind.ends_with("List") && node.get("items").is_some()
}

/// What to do to each resource.
#[derive(Debug, Clone)]
pub struct Ops {
    /// The op of every resource not listed in `overrides`.
    pub default: Op,
    /// `(<kind>/<name>, op)`, kind case-insensitive, in any namespace.
    pub overrides: Vec<(String, Op)>,
}

impl Default for Ops {
    fn default() -> Self {
        Ops {
            default: Op::Upsert,
            overrides: Vec::new(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Options {
    /// Start from kapp's built-in bindings, as `kapp deploy` does.
    pub default_config: bool,
    /// Bindings from separate config files (`--order-config`), applied after
    /// the defaults and any kapp Config found among the resources.
    pub extra_config: Config,
    pub ops: Ops,
    /// Order every resource with the `metadata.namespace` it is written
    /// with, as kapp's change-graph tests build their graphs. `kapp deploy`
    /// (and so the default) first removes it from cluster-scoped resources
    /// and puts namespaced ones written without one into
    /// [`Options::default_namespace`].
    pub keep_cluster_scoped_namespaces: bool,
    /// kapp's `-n` (`DefaultNamespace`): the namespace a namespaced resource
    /// written without one is ordered in. Empty leaves such resources
    /// without one, as kapp does with an empty `-n`.
    pub default_namespace: String,
}

/// What kapp's `-n` comes to with no flag, no `$KAPP_NAMESPACE` and a
/// kubeconfig context that names no namespace (client-go's fallback).
pub const KAPP_DEFAULT_NAMESPACE: &str = "default";

impl Default for Options {
    fn default() -> Self {
        Options {
            default_config: true,
            extra_config: Config::default(),
            ops: Ops::default(),
            keep_cluster_scoped_namespaces: false,
            default_namespace: KAPP_DEFAULT_NAMESPACE.to_string(),
        }
    }
}

/// Reads a config file's documents: each must be a kapp Config (or a
/// ConfigMap labelled `kapp.k14s.io/config`).
pub fn config_from_documents(docs: &[Document]) -> Result<Config, OrderError> {
    let mut config = Config::default();
    for item in classified(docs) {
        match item? {
            (_, config::DocKind::Config(c) | config::DocKind::ConfigAndResource(c)) => {
                config.extend(c)
            }
            (res, config::DocKind::Resource) => {
                return Err(OrderError::Config {
                    file: res.origin.file.clone(),
                    line: res.origin.line,
                    field: String::new(),
                    message: format!(
                        "expected a kapp Config (apiVersion: {}, kind: {}), found {}",
                        config::CONFIG_API_VERSION,
                        config::CONFIG_KIND,
                        res.description()
                    ),
                })
            }
        }
    }
    Ok(config)
}

/// Each document read as a resource and sorted into config / resource.
fn classified(
    docs: &[Document],
) -> impl Iterator<Item = Result<(Resource, config::DocKind), OrderError>> + '_ {
    docs.iter().map(|doc| {
        let origin = Origin {
            file: doc.file.clone(),
            line: doc.node.line,
        };
        let mut res = Resource::from_value(doc.node.to_value(), origin)?;
        res.raw = doc.raw.clone();
        let kind = config::classify(&res, &doc.node)?;
        Ok((res, kind))
    })
}

/// kapp's `kapp.k14s.io/noop` (its value is ignored): the resource only
/// takes part in ordering as a noop change.
pub const NOOP_ANNOTATION: &str = "kapp.k14s.io/noop";

/// Builds the change graph of the resources in `docs`. kapp Config documents
/// among them configure the ordering and are not changes themselves.
pub fn plan(docs: &[Document], options: &Options) -> Result<ChangeGraph, OrderError> {
    let (resources, config) = collect(docs, options)?;
    let resources = dedup_resources(resources)?;
    let mut used = vec![false; options.ops.overrides.len()];
    let changes = resources
        .into_iter()
        .map(|resource| {
            let key = format!("{}/{}", resource.kind.to_lowercase(), resource.name);
            let op = match options
                .ops
                .overrides
                .iter()
                .position(|(k, _)| k.eq_ignore_ascii_case(&key))
            {
                Some(i) => {
                    used[i] = true;
                    options.ops.overrides[i].1
                }
                None => options.ops.default,
            };
            // kapp's `ChangeImpl.op`: a resource in the new set carrying
            // the annotation is neither applied nor waited on, whatever
            // its diff; one being deleted is not in the new set, so kapp
            // never reads the annotation there.
            let op = if op != Op::Delete && resource.annotations.contains_key(NOOP_ANNOTATION) {
                Op::Noop
            } else {
                op
            };
            Change { resource, op }
        })
        .collect();
    if let Some(i) = used.iter().position(|u| !u) {
        return Err(OrderError::UnknownOpTarget {
            key: options.ops.overrides[i].0.clone(),
        });
    }
    ChangeGraph::build(changes, &config)
}

/// Splits the documents into resources (with their document) and the
/// effective config: defaults (if enabled), Configs among the documents in
/// order, then `options.extra_config`.
fn collect(docs: &[Document], options: &Options) -> Result<(Vec<Resource>, Config), OrderError> {
    let mut config = if options.default_config {
        Config::kapp_defaults()
    } else {
        Config::default()
    };
    let mut resources = Vec::new();
    for item in classified(docs) {
        let (res, kind) = item?;
        match kind {
            config::DocKind::Config(c) => config.extend(c),
            config::DocKind::ConfigAndResource(c) => {
                config.extend(c);
                resources.push(res);
            }
            config::DocKind::Resource => resources.push(res),
        }
    }
    config.extend(options.extra_config.clone());
    prepare_namespaces(&mut resources, options);
    Ok((resources, config))
}

/// The namespaces resources are ordered with, as `kapp deploy` prepares
/// them (`Preparation.placeIntoNamespace`, before it orders): a
/// cluster-scoped resource loses the namespace it may be written with, a
/// namespaced one written without one goes into the default namespace.
/// Without the former a Namespace written with its own name as
/// `metadata.namespace` (Kapitan's examples do) waited for itself, an
/// `order-cycle` kapp never reports; without the latter kapp's default
/// rule for service accounts (`delete before deleting
/// ...namespaces-{namespace}`) failed on every ServiceAccount a helm chart
/// writes without a namespace, and namespaced workloads written so waited
/// for none of the ConfigMaps, Secrets and RBAC kapp makes them wait for.
/// A kind whose scope strata cannot know keeps what it is written with.
pub(crate) fn prepare_namespaces(resources: &mut [Resource], options: &Options) {
    if options.keep_cluster_scoped_namespaces {
        return;
    }
    let declared = declared_scopes(resources);
    for res in resources.iter_mut() {
        match scope_of(res, &declared) {
            Some(Scope::Cluster) => res.namespace.clear(),
            Some(Scope::Namespaced) if res.namespace.is_empty() => {
                res.namespace.clone_from(&options.default_namespace)
            }
            _ => {}
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    Cluster,
    Namespaced,
}

/// Whether a resource's kind is namespaced, as far as can be known without
/// a cluster (kapp asks the cluster, then the CRDs being deployed, which
/// win): a CRD among the resources, Kubernetes' own kinds, Carvel's.
/// `None` for a custom kind whose CRD is not among them: written without
/// a namespace it is as likely a cluster-scoped kind (Cilium's pools,
/// Gatekeeper's constraints, Kyverno's ClusterPolicy in real catalogs) as
/// a namespaced one that kapp would place (a PrometheusRule).
fn scope_of(res: &Resource, declared: &HashMap<(String, String), Scope>) -> Option<Scope> {
    let group = res.api_group();
    if let Some(scope) = declared.get(&(group.to_string(), res.kind.clone())) {
        return Some(*scope);
    }
    if CLUSTER_SCOPED
        .iter()
        .any(|(g, k)| *g == group && *k == res.kind)
    {
        return Some(Scope::Cluster);
    }
    if matcher::BUILTIN_API_GROUPS.contains(&group)
        || NEWER_KUBERNETES_API_GROUPS.contains(&group)
        || CARVEL_NAMESPACED_GROUPS.contains(&group)
    {
        return Some(Scope::Namespaced);
    }
    None
}

/// Kubernetes' own API groups newer than kapp's list of built-in ones
/// ([`matcher::BUILTIN_API_GROUPS`]): with those, every kind in them that
/// [`CLUSTER_SCOPED`] does not list is namespaced.
const NEWER_KUBERNETES_API_GROUPS: &[&str] = &["resource.k8s.io", "storagemigration.k8s.io"];

/// Carvel's API groups, whose kinds are all namespaced (kapp-controller's
/// App, PackageInstall, PackageRepository, Package, PackageMetadata;
/// secretgen-controller's): their CRDs are installed with kapp-controller,
/// not with the apps that use them.
const CARVEL_NAMESPACED_GROUPS: &[&str] = &[
    "kappctrl.k14s.io",
    "packaging.carvel.dev",
    "data.packaging.carvel.dev",
    "secretgen.carvel.dev",
    "secretgen.k14s.io",
];

/// Built-in Kubernetes kinds that are not namespaced, as (API group, kind)
/// (`kubectl api-resources --namespaced=false`, Kubernetes 1.34).
const CLUSTER_SCOPED: &[(&str, &str)] = &[
    ("", "ComponentStatus"),
    ("", "Namespace"),
    ("", "Node"),
    ("", "PersistentVolume"),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
    (
        "admissionregistration.k8s.io",
        "MutatingAdmissionPolicyBinding",
    ),
    (
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
    ),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
    ),
    (
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
    ),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("apiregistration.k8s.io", "APIService"),
    ("authentication.k8s.io", "SelfSubjectReview"),
    ("authentication.k8s.io", "TokenReview"),
    ("authorization.k8s.io", "SelfSubjectAccessReview"),
    ("authorization.k8s.io", "SelfSubjectRulesReview"),
    ("authorization.k8s.io", "SubjectAccessReview"),
    ("certificates.k8s.io", "CertificateSigningRequest"),
    ("certificates.k8s.io", "ClusterTrustBundle"),
    ("extensions", "PodSecurityPolicy"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    ("internal.apiserver.k8s.io", "StorageVersion"),
    ("metrics.k8s.io", "NodeMetrics"),
    ("networking.k8s.io", "IngressClass"),
    ("networking.k8s.io", "IPAddress"),
    ("networking.k8s.io", "ServiceCIDR"),
    ("node.k8s.io", "RuntimeClass"),
    ("policy", "PodSecurityPolicy"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("resource.k8s.io", "DeviceClass"),
    ("resource.k8s.io", "DeviceTaintRule"),
    ("resource.k8s.io", "ResourceSlice"),
    ("scheduling.k8s.io", "PriorityClass"),
    ("storage.k8s.io", "CSIDriver"),
    ("storage.k8s.io", "CSINode"),
    ("storage.k8s.io", "StorageClass"),
    ("storage.k8s.io", "VolumeAttachment"),
    ("storage.k8s.io", "VolumeAttributesClass"),
    ("storagemigration.k8s.io", "StorageVersionMigration"),
];

/// The scope each CRD among the resources declares for its (API group,
/// kind) (kapp's `localCRDScopes`).
fn declared_scopes(resources: &[Resource]) -> HashMap<(String, String), Scope> {
    let mut declared = HashMap::new();
    for res in resources.iter() {
        if res.api_group() != "apiextensions.k8s.io" || res.kind != "CustomResourceDefinition" {
            continue;
        }
        let spec = res
            .doc
            .as_map()
            .and_then(|m| m.get("spec"))
            .and_then(Value::as_map);
        let field = |m: Option<&crate::value::Map>, k: &str| {
            m.and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        // The API server refuses a CRD without one of the two (kapp would
        // read anything else as cluster-scoped); such a CRD says nothing.
        let scope = match field(spec, "scope").as_deref() {
            Some("Namespaced") => Scope::Namespaced,
            Some("Cluster") => Scope::Cluster,
            _ => continue,
        };
        let names = spec.and_then(|s| s.get("names")).and_then(Value::as_map);
        if let (Some(group), Some(kind)) = (field(spec, "group"), field(names, "kind")) {
            declared.insert((group, kind), scope);
        }
    }
    declared
}

/// Drops repeated resources as `kapp deploy` does: the same namespace, API
/// group, kind and name twice is fine with identical content (the first
/// stays), an error otherwise. The API version is not part of the identity.
fn dedup_resources(resources: Vec<Resource>) -> Result<Vec<Resource>, OrderError> {
    let mut first: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut out: Vec<Resource> = Vec::with_capacity(resources.len());
    for res in resources {
        match first.get(&res.identity()) {
            Some(&i) if out[i].doc == res.doc => {}
            Some(&i) => {
                return Err(OrderError::Duplicate {
                    resource: res.description(),
                    first: out[i].origin.clone(),
                    second: res.origin,
                })
            }
            None => {
                first.insert(res.identity(), out.len());
                out.push(res);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
