//! Change groups and change rules: group name validation (Kubernetes
//! "qualified names" without the 63-character limit), placeholder
//! substitution per resource, and the four-word rule syntax
//! `(upsert|delete) (before|after) (upserting|deleting) <group>`.

use super::resource::Resource;
use regex::Regex;
use std::sync::LazyLock;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    Upsert,
    Delete,
    /// An unchanged resource: it has no rules and is never a rule target.
    Noop,
}

impl Op {
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Upsert => "upsert",
            Op::Delete => "delete",
            Op::Noop => "noop",
        }
    }

    pub fn parse(s: &str) -> Option<Op> {
        match s {
            "upsert" => Some(Op::Upsert),
            "delete" => Some(Op::Delete),
            "noop" => Some(Op::Noop),
            _ => None,
        }
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// The rule's change waits for the target group.
    After,
    /// The target group waits for the rule's change.
    Before,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeRule {
    /// The op of the change the rule applies to (`upsert` or `delete`).
    pub action: Op,
    pub order: Order,
    /// The op of the target changes (`upserting` or `deleting`).
    pub target_action: Op,
    pub target_group: String,
    pub ignore_if_cyclical: bool,
    /// 0 for annotations, 100 + binding index for config bindings; heavier
    /// rules are added first, which decides which optional rules survive.
    pub weight: usize,
}

const RULE_FORMAT: &str = "(upsert|delete) (before|after) (upserting|deleting) (change-group)";

impl ChangeRule {
    /// Parses a rule string (placeholders already substituted).
    pub fn parse(s: &str) -> Result<ChangeRule, String> {
        // Split on single spaces like kapp: doubled spaces are an error there too.
        let pieces: Vec<&str> = s.split(' ').collect();
        if pieces.len() != 4 {
            return Err(format!(
                "Expected change rule annotation value to have format '{RULE_FORMAT}', but was '{s}'"
            ));
        }
        validate_group_name(pieces[3])?;
        let action = match pieces[0] {
            "upsert" => Op::Upsert,
            "delete" => Op::Delete,
            other => {
                return Err(format!(
                    "Unknown change rule action `{other}` in '{s}' (expected upsert or delete)"
                ))
            }
        };
        let order = match pieces[1] {
            "after" => Order::After,
            "before" => Order::Before,
            other => {
                return Err(format!(
                    "Unknown change rule order `{other}` in '{s}' (expected before or after)"
                ))
            }
        };
        let target_action = match pieces[2] {
            "upserting" => Op::Upsert,
            "deleting" => Op::Delete,
            other => {
                return Err(format!(
                    "Unknown change rule target action `{other}` in '{s}' (expected upserting or deleting)"
                ))
            }
        };
        Ok(ChangeRule {
            action,
            order,
            target_action,
            target_group: pieces[3].to_string(),
            ignore_if_cyclical: false,
            weight: 0,
        })
    }
}

static PLACEHOLDER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\{.+?\}").expect("placeholder regex"));

const PLACEHOLDERS: &str = "{api-group}, {kind}, {name}, {namespace}, {crd-kind}, {crd-group}";

/// Longest group name or rule after substitution (1 MiB: a real one is a
/// few hundred bytes).
pub const MAX_SUBSTITUTED_LEN: usize = 1 << 20;

/// Substitutes `{api-group}`, `{kind}`, `{name}`, `{namespace}`,
/// `{crd-kind}` and `{crd-group}` with the resource's values. A placeholder
/// that is unknown or empty for this resource is an error, as in kapp.
pub fn substitute_placeholders(template: &str, res: &Resource) -> Result<String, String> {
    if !template.contains('{') {
        return Ok(template.to_string());
    }
    let (crd_kind, crd_group) = if res.is_crd() {
        (
            res.str_field(&["spec", "names", "kind"]),
            res.str_field(&["spec", "group"]),
        )
    } else {
        ("", "")
    };
    let mut error = None;
    // Each placeholder repeats a value the file chose: 10,000 `{name}`s of
    // a 100 KB name asked for gigabytes (re-probe 18).
    let mut len = template.len();
    let out = PLACEHOLDER.replace_all(template, |caps: &regex::Captures| {
        let placeholder = &caps[0];
        let value = match placeholder {
            "{api-group}" => res.api_group(),
            "{kind}" => &res.kind,
            "{name}" => &res.name,
            "{namespace}" => &res.namespace,
            "{crd-kind}" => crd_kind,
            "{crd-group}" => crd_group,
            _ => {
                error.get_or_insert_with(|| {
                    format!(
                        "Unknown placeholder {placeholder} in '{template}' (expected one of: {PLACEHOLDERS})"
                    )
                });
                return String::new();
            }
        };
        if value.is_empty() {
            error.get_or_insert_with(|| {
                format!(
                    "Placeholder {placeholder} does not have a value for target resource (hint: placeholders with the 'crd-' prefix can only be used with CRDs)"
                )
            });
        }
        len = len.saturating_add(value.len());
        if len > MAX_SUBSTITUTED_LEN {
            error.get_or_insert_with(|| {
                format!(
                    "the value is longer than {MAX_SUBSTITUTED_LEN} bytes once its placeholders are substituted: use fewer placeholders or shorter names"
                )
            });
            return String::new();
        }
        value.to_string()
    });
    match error {
        Some(e) => Err(e),
        None => Ok(out.into_owned()),
    }
}

/// Checks a change group name: a Kubernetes qualified name (`[prefix/]name`)
/// except that the name part may be longer than 63 characters, since
/// placeholders can make it long.
pub fn validate_group_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("Expected non-empty group name".into());
    }
    let errors = qualified_name_errors(name);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "Expected change group name {name:?} to be a qualified name: {}",
            errors.join("; ")
        ))
    }
}

const NAME_PART_RULE: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName', 'my.name' or '123-abc')";

fn qualified_name_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else if let Some(e) = dns_subdomain_error(prefix) {
                errs.push(format!("prefix part {e}"));
            }
            *name
        }
        _ => {
            return vec![format!(
                "a qualified name {NAME_PART_RULE}, with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )]
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    }
    if !is_qualified_name_part(name) {
        errs.push(format!("name part {NAME_PART_RULE}"));
    }
    errs
}

fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => {
            f.is_ascii_alphanumeric()
                && l.is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// A DNS-1123 subdomain: at most 253 characters, dot-separated labels of
/// lower-case alphanumerics and `-`, each starting and ending alphanumeric.
fn dns_subdomain_error(s: &str) -> Option<String> {
    if s.len() > 253 {
        return Some("must be no more than 253 characters".into());
    }
    let label_ok = |l: &str| {
        let b = l.as_bytes();
        let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        match (b.first(), b.last()) {
            (Some(f), Some(e)) => alnum(f) && alnum(e) && b.iter().all(|c| alnum(c) || *c == b'-'),
            _ => false,
        }
    };
    if s.split('.').all(label_ok) {
        None
    } else {
        Some("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com')".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::order::resource::test_resource as res;

    #[test]
    fn rule_parsing() {
        let r = ChangeRule::parse("upsert before deleting apps.big.co/etcd").unwrap();
        assert_eq!(
            (r.action, r.order, r.target_action, r.target_group.as_str()),
            (Op::Upsert, Order::Before, Op::Delete, "apps.big.co/etcd")
        );
        assert!(ChangeRule::parse("upsert after upserting  g").is_err());
        assert!(ChangeRule::parse("upsert after g").is_err());
        let e = ChangeRule::parse("update after upserting g").unwrap_err();
        assert!(e.contains("action `update`"), "{e}");
        let e = ChangeRule::parse("upsert after upserting g/").unwrap_err();
        assert!(e.contains("to be a qualified name"), "{e}");
    }

    #[test]
    fn placeholders() {
        let crd = res("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: foos.x.io}\nspec: {group: x.io, names: {kind: Foo}}\n");
        assert_eq!(
            substitute_placeholders("g/crds-{crd-group}-{crd-kind}", &crd).unwrap(),
            "g/crds-x.io-Foo"
        );
        let cm = res("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: ns}\n");
        assert_eq!(
            substitute_placeholders("g/{kind}-{name}-{namespace}", &cm).unwrap(),
            "g/ConfigMap-a-ns"
        );
        let e = substitute_placeholders("g/{api-group}", &cm).unwrap_err();
        assert!(
            e.contains("Placeholder {api-group} does not have a value"),
            "{e}"
        );
        let e = substitute_placeholders("g/{crd-kind}", &cm).unwrap_err();
        assert!(e.contains("{crd-kind}"), "{e}");
        let e = substitute_placeholders("g/{nope}", &cm).unwrap_err();
        assert!(e.contains("Unknown placeholder {nope}"), "{e}");
        // `${x}` is another tool's syntax, but kapp still sees `{x}` in it.
        assert!(substitute_placeholders("g/${x}", &cm).is_err());
        // Re-probe 18 (order-placeholder-substitution-unbounded-abort):
        // repeated placeholders of a long name stop at the bound.
        let mut long = cm.clone();
        long.name = "a".repeat(100_000);
        let e =
            substitute_placeholders(&format!("g/{}", "{name}".repeat(10_000)), &long).unwrap_err();
        assert!(e.contains("longer than 1048576 bytes"), "{e}");
        let ok = substitute_placeholders(&format!("g/{}", "{name}".repeat(10)), &long).unwrap();
        assert_eq!(ok.len(), 2 + 1_000_000);
    }

    #[test]
    fn group_names() {
        for ok in [
            "valid",
            "a.b/c_D-e",
            "x.io/name",
            &format!("x/{}", "a".repeat(300)),
        ] {
            assert!(validate_group_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "_",
            "invalid/",
            "invalid/_",
            "/_",
            "a/b/c",
            "Upper.io/x",
            "g/x.",
        ] {
            assert!(validate_group_name(bad).is_err(), "{bad}");
        }
        assert!(validate_group_name(&format!("{}/x", "a".repeat(254))).is_err());
    }
}
