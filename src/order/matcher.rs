//! kapp resource matchers (`resourceMatchers` in a kapp Config): which
//! resources a change group or change rule binding applies to.

use super::decode::{self, Ctx};
use super::resource::Resource;
use super::OrderError;
use crate::value::Value;
use crate::yaml::{Node, NodeValue};

#[derive(Debug, Clone, PartialEq)]
pub enum Matcher {
    All,
    Any(Vec<Matcher>),
    And(Vec<Matcher>),
    Not(Box<Matcher>),
    KindNamespaceName {
        kind: String,
        namespace: String,
        name: String,
    },
    ApiGroupKind {
        api_group: String,
        kind: String,
    },
    ApiVersionKind {
        api_version: String,
        kind: String,
    },
    /// All keys must be present.
    HasAnnotation(Vec<String>),
    /// Namespaced, and (when names are given) in one of them.
    HasNamespace(Vec<String>),
    /// The API group is not one of Kubernetes' built-in groups.
    CustomResource,
    /// The field at the path is missing, null, or an empty list/map.
    EmptyField(Vec<PathPart>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum PathPart {
    Key(String),
    Index(usize),
    AllIndexes,
}

/// API groups kapp treats as built in (`customResourceMatcher` is their complement).
pub(super) const BUILTIN_API_GROUPS: &[&str] = &[
    "",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "apiregistration.k8s.io",
    "apps",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "events.k8s.io",
    "extensions",
    "flowcontrol.apiserver.k8s.io",
    "internal.apiserver.k8s.io",
    "metrics.k8s.io",
    "migration.k8s.io",
    "networking.k8s.io",
    "node.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "scheduling.k8s.io",
    "storage.k8s.io",
];

/// The matcher kinds in the precedence kapp uses when one entry names several.
const MATCHER_KEYS: &[&str] = &[
    "allMatcher",
    "anyMatcher",
    "notMatcher",
    "andMatcher",
    "kindNamespaceNameMatcher",
    "apiGroupKindMatcher",
    "apiVersionKindMatcher",
    "hasAnnotationMatcher",
    "hasNamespaceMatcher",
    "customResourceMatcher",
    "emptyFieldMatcher",
];

impl Matcher {
    pub fn matches(&self, res: &Resource) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Any(ms) => ms.iter().any(|m| m.matches(res)),
            Matcher::And(ms) => ms.iter().all(|m| m.matches(res)),
            Matcher::Not(m) => !m.matches(res),
            Matcher::KindNamespaceName {
                kind,
                namespace,
                name,
            } => res.kind == *kind && res.namespace == *namespace && res.name == *name,
            Matcher::ApiGroupKind { api_group, kind } => {
                res.api_group() == api_group && res.kind == *kind
            }
            Matcher::ApiVersionKind { api_version, kind } => {
                res.api_version == *api_version && res.kind == *kind
            }
            Matcher::HasAnnotation(keys) => keys.iter().all(|k| res.annotations.contains_key(k)),
            Matcher::HasNamespace(names) => {
                !res.namespace.is_empty() && (names.is_empty() || names.contains(&res.namespace))
            }
            Matcher::CustomResource => !BUILTIN_API_GROUPS.contains(&res.api_group()),
            Matcher::EmptyField(path) => is_empty_at(&res.doc, path),
        }
    }

    /// Parses one entry of a `resourceMatchers` / `matchers` list.
    pub(crate) fn parse(node: &Node, ctx: &Ctx) -> Result<Matcher, OrderError> {
        decode::entries(node, ctx)?;
        // Go decodes `null` as "not set", so `customResourceMatcher:` alone is
        // no matcher at all; `{}` is the way to write an argument-less one.
        let mut chosen = None;
        for key in MATCHER_KEYS {
            if let Some(v) = decode::field(node, key, ctx)? {
                chosen = Some((*key, v));
                break;
            }
        }
        let Some((key, v)) = chosen else {
            return Err(ctx.error(
                node,
                format!(
                    "unknown or empty resource matcher; expected one of: {}",
                    MATCHER_KEYS.join(", ")
                ),
            ));
        };
        let c = ctx.field(key);
        let list = |name: &str| -> Result<Vec<Matcher>, OrderError> {
            decode::list(v, name, &c)?
                .into_iter()
                .map(|(n, nc)| Matcher::parse(n, &nc))
                .collect()
        };
        Ok(match key {
            "allMatcher" => {
                decode::entries(v, &c)?;
                Matcher::All
            }
            "anyMatcher" => Matcher::Any(list("matchers")?),
            "andMatcher" => Matcher::And(list("matchers")?),
            "notMatcher" => match decode::field(v, "matcher", &c)? {
                Some(inner) => Matcher::Not(Box::new(Matcher::parse(inner, &c.field("matcher"))?)),
                None => return Err(c.error(v, "notMatcher needs a `matcher`")),
            },
            "kindNamespaceNameMatcher" => Matcher::KindNamespaceName {
                kind: decode::string(v, "kind", &c)?,
                namespace: decode::string(v, "namespace", &c)?,
                name: decode::string(v, "name", &c)?,
            },
            "apiGroupKindMatcher" => Matcher::ApiGroupKind {
                api_group: decode::string(v, "apiGroup", &c)?,
                kind: decode::string(v, "kind", &c)?,
            },
            "apiVersionKindMatcher" => Matcher::ApiVersionKind {
                api_version: decode::string(v, "apiVersion", &c)?,
                kind: decode::string(v, "kind", &c)?,
            },
            "hasAnnotationMatcher" => Matcher::HasAnnotation(decode::string_list(v, "keys", &c)?),
            "hasNamespaceMatcher" => Matcher::HasNamespace(decode::string_list(v, "names", &c)?),
            "customResourceMatcher" => {
                decode::entries(v, &c)?;
                Matcher::CustomResource
            }
            _ => Matcher::EmptyField(
                decode::list(v, "path", &c)?
                    .into_iter()
                    .map(|(n, nc)| parse_path_part(n, &nc))
                    .collect::<Result<_, _>>()?,
            ),
        })
    }
}

fn parse_path_part(node: &Node, ctx: &Ctx) -> Result<PathPart, OrderError> {
    if let NodeValue::Str { value, .. } = &node.value {
        return Ok(PathPart::Key(value.clone()));
    }
    if !matches!(node.value, NodeValue::Map(_)) {
        return Err(ctx.error(
            node,
            "a path part is a map key (string), {index: N} or {allIndexes: true}",
        ));
    }
    if decode::boolean(node, "allIndexes", ctx)? {
        return Ok(PathPart::AllIndexes);
    }
    match decode::field(node, "index", ctx)? {
        Some(Node {
            value: NodeValue::Int(i),
            ..
        }) if *i >= 0 => Ok(PathPart::Index(*i as usize)),
        _ => Err(ctx.error(
            node,
            "emptyFieldMatcher paths support map keys, {index: N} (N >= 0) and {allIndexes: true}",
        )),
    }
}

/// kapp's empty-field test: a missing key, an out-of-range index or a
/// scalar where a collection was expected (when null) all count as empty.
fn is_empty_at(value: &Value, path: &[PathPart]) -> bool {
    let mut cur = value;
    for (i, part) in path.iter().enumerate() {
        match part {
            PathPart::Key(k) => match cur {
                Value::Map(m) => match m.get(k) {
                    Some(v) => cur = v,
                    None => return true,
                },
                other => return other.is_null(),
            },
            PathPart::Index(idx) => match cur {
                Value::List(l) => match l.get(*idx) {
                    Some(v) => cur = v,
                    None => return true,
                },
                other => return other.is_null(),
            },
            PathPart::AllIndexes => {
                return match cur {
                    Value::List(l) => l.iter().all(|v| is_empty_at(v, &path[i + 1..])),
                    other => other.is_null(),
                }
            }
        }
    }
    match cur {
        Value::Null => true,
        Value::List(l) => l.is_empty(),
        Value::Map(m) => m.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::order::resource::test_resource as res;

    fn matcher(text: &str) -> Result<Matcher, OrderError> {
        let node = crate::yaml::load_one(text).unwrap().unwrap();
        Matcher::parse(&node, &Ctx::new(std::path::Path::new("c.yaml"), "m"))
    }

    #[test]
    fn matchers_match() {
        let cm = res("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: ns, annotations: {k: v}}\ndata: {}\n");
        let cr =
            res("apiVersion: example.com/v1\nkind: Foo\nmetadata: {name: b}\nspec: {x: [1]}\n");
        let m = matcher("andMatcher: {matchers: [{hasNamespaceMatcher: {}}, {notMatcher: {matcher: {customResourceMatcher: {}}}}]}").unwrap();
        assert!(m.matches(&cm) && !m.matches(&cr));
        let m = matcher("apiGroupKindMatcher: {apiGroup: '', kind: ConfigMap}").unwrap();
        assert!(m.matches(&cm));
        let m = matcher("hasNamespaceMatcher: {names: [other]}").unwrap();
        assert!(!m.matches(&cm));
        let m = matcher("hasAnnotationMatcher: {keys: [k]}").unwrap();
        assert!(m.matches(&cm) && !m.matches(&cr));
        let m = matcher("emptyFieldMatcher: {path: [data]}").unwrap();
        assert!(m.matches(&cm) && m.matches(&cr));
        let m = matcher("emptyFieldMatcher: {path: [spec, x, {allIndexes: true}]}").unwrap();
        assert!(!m.matches(&cr));
        let m = matcher("kindNamespaceNameMatcher: {kind: Foo, namespace: '', name: b}").unwrap();
        assert!(m.matches(&cr));
        // Field names are case-insensitive, as with Go's JSON decoder.
        let m = matcher("APIVersionKindMatcher: {apiversion: v1, Kind: ConfigMap}").unwrap();
        assert!(m.matches(&cm));
    }

    #[test]
    fn bad_matchers_are_errors() {
        let e = matcher("apiVersionKindMatchr: {}").unwrap_err();
        assert!(
            e.to_string().contains("unknown or empty resource matcher"),
            "{e}"
        );
        let e = matcher("anyMatcher: {matchers: [{customResourceMatcher: {}}, 3]}").unwrap_err();
        assert!(e.to_string().contains("m.anyMatcher.matchers[1]"), "{e}");
        let e = matcher("apiVersionKindMatcher: {kind: [a]}").unwrap_err();
        assert!(e.to_string().contains("expected a string"), "{e}");
    }
}
