//! OpenAPI schemas of CustomResourceDefinitions (`openAPIV3Schema`, also
//! Crossplane's CompositeResourceDefinitions): a key under `properties`
//! names a *field* and holds a schema (`type`, `description`, ...), never a
//! value, so `password: {type: string}` stays visible (compat38: 146 of
//! 156 markers in real Helm chart output were such schemas). Literal values
//! a schema carries (`default`, `example`, `enum`, `const`) are still read
//! as if they sat under the property's own name, so a default password
//! stays hidden, and every string still passes the credential shapes.

use crate::value::{Map, Value};

use super::Redactor;

/// Keywords whose value maps field names to schemas.
const NAMED_SCHEMAS: &[&str] = &[
    "properties",
    "patternProperties",
    "definitions",
    "$defs",
    "dependencies",
];

/// Keywords whose value is a schema, or a list of schemas (`allOf`, or the
/// tuple form of `items`).
const SUB_SCHEMAS: &[&str] = &[
    "items",
    "additionalProperties",
    "additionalItems",
    "not",
    "allOf",
    "anyOf",
    "oneOf",
];

/// Keywords holding a literal of the field's type: a value the field may
/// take, read under the field's name.
const LITERALS: &[&str] = &["default", "example", "examples", "enum", "const"];

/// A map entry as [`Redactor::walk_entry`] returns it.
type Entry = (String, Value);

/// The key under which a CRD holds its schema.
pub(super) fn is_schema_root(key: &str) -> bool {
    key == "openAPIV3Schema"
}

/// red39 (crd38's text-mode leftover): the lines of a text (`--no-semantic`,
/// a CRD carried in a string) that name a field of an `openAPIV3Schema`,
/// a key whose parent is one of [`NAMED_SCHEMAS`] below the schema root:
/// the line rule does not read them as secret keys, so the field's schema
/// below (`description`, `type`) is shown, as the semantic walk shows it.
/// Returned with the lines of [`LITERALS`] directly below a field that
/// `secret` names, which stay hidden (a default password). Read by
/// indentation; a block list item's key counts from after its `- `.
pub(super) fn text_schema_field_lines(
    text: &str,
    secret: impl Fn(&str) -> bool,
) -> (
    std::collections::HashSet<usize>,
    std::collections::HashSet<usize>,
) {
    let mut fields = std::collections::HashSet::new();
    let mut literals = std::collections::HashSet::new();
    // The open keys: (column, key, whether a secret-named field).
    let mut stack: Vec<(usize, &str, bool)> = Vec::new();
    for (i, line) in text.split('\n').enumerate() {
        let body = line.trim_end_matches('\r');
        let t = body.trim_start();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let mut column = body.len() - t.len();
        let mut t = t;
        while let Some(rest) = t.strip_prefix("- ") {
            let rest_t = rest.trim_start();
            column += t.len() - rest_t.len();
            t = rest_t;
        }
        let Some((key, _)) = t.split_once(':') else {
            continue;
        };
        let key = key.trim().trim_matches(['"', '\'']);
        while stack.last().is_some_and(|(c, _, _)| *c >= column) {
            stack.pop();
        }
        let in_schema = stack.iter().any(|(_, k, _)| is_schema_root(k));
        let mut secret_field = false;
        if in_schema {
            match stack.last() {
                Some((_, parent, _)) if NAMED_SCHEMAS.contains(parent) => {
                    fields.insert(i);
                    secret_field = secret(key);
                }
                Some((_, _, true)) if LITERALS.contains(&key) => {
                    literals.insert(i);
                }
                _ => {}
            }
        }
        stack.push((column, key, secret_field));
    }
    (fields, literals)
}

/// Text mode: whether the `kind:` key found at `start..end` of `text` has
/// nothing after it on its line and a deeper `name:` line next, so its
/// value is a map (a CRD schema's `kind` property: `kind:` / `description:
/// ...`), which cannot spell `Secret`. A plain scalar cannot hold `: `, so
/// the next line is not a continued `Secret`; an indicator (`!!str`, `&a`,
/// `*a`, a quote) on either line still counts as a possible Secret.
pub(super) fn kind_holds_a_map(text: &str, start: usize, end: usize) -> bool {
    let Some(rest) = text.get(end..) else {
        return false;
    };
    let (line_rest, after) = rest.split_once('\n').unwrap_or((rest, ""));
    let line_rest = line_rest.trim_end_matches('\r');
    if !line_rest.trim().is_empty() {
        return false;
    }
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let key_line = &text[line_start..end];
    let key_col = key_line.len() - key_line.trim_start_matches([' ', '\t', '-']).len();
    let Some(next) = after
        .split('\n')
        .map(|l| l.trim_end_matches('\r'))
        .find(|l| !l.trim().is_empty())
    else {
        return false;
    };
    let ind = next.len() - next.trim_start_matches(' ').len();
    let next = next.trim_start_matches(' ');
    let Some((name, value)) = next.split_once(':') else {
        return false;
    };
    ind > key_col
        && !name.is_empty()
        && name
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '_' | '-' | '.'))
        && (value.is_empty() || value.starts_with(' '))
}

/// A map on either side (the other absent or a map too), or `None`.
fn maps<'a>(old: Option<&'a Value>, new: Option<&'a Value>) -> Option<(&'a Map, &'a Map)> {
    static EMPTY: std::sync::OnceLock<Map> = std::sync::OnceLock::new();
    let empty = EMPTY.get_or_init(Map::default);
    match (old, new) {
        (None, None) => None,
        (Some(Value::Map(o)), Some(Value::Map(n))) => Some((o, n)),
        (Some(Value::Map(o)), None) => Some((o, empty)),
        (None, Some(Value::Map(n))) => Some((empty, n)),
        _ => None,
    }
}

/// The union of two maps' keys, the old side's order first.
fn union_keys<'a>(o: &'a Map, n: &'a Map) -> Vec<&'a String> {
    let mut keys: Vec<&String> = o.keys().collect();
    keys.extend(n.keys().filter(|k| !o.contains_key(*k)));
    keys
}

impl Redactor {
    /// [`Self::walk`] of a schema; `field` is the property it describes
    /// (`None` at the root).
    pub(super) fn walk_schema(
        &self,
        field: Option<&str>,
        old: Option<&Value>,
        new: Option<&Value>,
    ) -> (Option<Value>, Option<Value>) {
        let Some((o, n)) = maps(old, new) else {
            return self.walk_as(field, old, new);
        };
        let mut a = Map::with_capacity_and_hasher(o.len(), Default::default());
        let mut b = Map::with_capacity_and_hasher(n.len(), Default::default());
        for k in union_keys(o, n) {
            let (ov, nv) = (o.get(k), n.get(k));
            let (x, y) = if NAMED_SCHEMAS.contains(&k.as_str()) && maps(ov, nv).is_some() {
                self.walk_named_schemas(ov, nv)
            } else if SUB_SCHEMAS.contains(&k.as_str()) {
                self.walk_sub_schemas(field, ov, nv)
            } else if LITERALS.contains(&k.as_str()) && field.is_some() {
                self.walk_as(field, ov, nv)
            } else {
                // Any other keyword (and anything a schema should not
                // hold) is read with the usual key rules.
                let (x, y) = self.walk_entry(k, ov, nv);
                if let Some((key, v)) = x {
                    a.insert(key, v);
                }
                if let Some((key, v)) = y {
                    b.insert(key, v);
                }
                continue;
            };
            if let Some(x) = x {
                a.insert(k.clone(), x);
            }
            if let Some(y) = y {
                b.insert(k.clone(), y);
            }
        }
        (old.map(|_| Value::Map(a)), new.map(|_| Value::Map(b)))
    }

    /// `properties: {NAME: schema}`: each value a schema of field NAME.
    fn walk_named_schemas(
        &self,
        old: Option<&Value>,
        new: Option<&Value>,
    ) -> (Option<Value>, Option<Value>) {
        let Some((o, n)) = maps(old, new) else {
            return self.walk(old, new);
        };
        let mut a = Map::with_capacity_and_hasher(o.len(), Default::default());
        let mut b = Map::with_capacity_and_hasher(n.len(), Default::default());
        for k in union_keys(o, n) {
            let (x, y) = self.walk_schema(Some(k), o.get(k), n.get(k));
            if let Some(x) = x {
                a.insert(k.clone(), x);
            }
            if let Some(y) = y {
                b.insert(k.clone(), y);
            }
        }
        (old.map(|_| Value::Map(a)), new.map(|_| Value::Map(b)))
    }

    /// `items: schema`, `allOf: [schema, ...]`: schemas of the same field.
    fn walk_sub_schemas(
        &self,
        field: Option<&str>,
        old: Option<&Value>,
        new: Option<&Value>,
    ) -> (Option<Value>, Option<Value>) {
        let list = |v: Option<&Value>| match v {
            Some(Value::List(l)) => Some(l.clone()),
            _ => None,
        };
        match (list(old), list(new)) {
            (Some(_) | None, Some(_) | None)
                if matches!(old, Some(Value::List(_))) || matches!(new, Some(Value::List(_))) =>
            {
                let (o, n) = (list(old).unwrap_or_default(), list(new).unwrap_or_default());
                let mut a = Vec::with_capacity(o.len());
                let mut b = Vec::with_capacity(n.len());
                for i in 0..o.len().max(n.len()) {
                    let (x, y) = self.walk_schema(field, o.get(i), n.get(i));
                    a.extend(x);
                    b.extend(y);
                }
                (old.map(|_| Value::List(a)), new.map(|_| Value::List(b)))
            }
            _ => self.walk_schema(field, old, new),
        }
    }

    /// A value walked as if it sat under `field` (the rules for that key
    /// apply to it as they did before schemas were read); without a field,
    /// as it is.
    fn walk_as(
        &self,
        field: Option<&str>,
        old: Option<&Value>,
        new: Option<&Value>,
    ) -> (Option<Value>, Option<Value>) {
        let Some(field) = field else {
            return self.walk(old, new);
        };
        let (x, y) = self.walk_entry(field, old, new);
        (x.map(|(_, v)| v), y.map(|(_, v)| v))
    }

    /// `{key: value}` walked as a one-key map: the key rules of the walk
    /// apply. Returns each side's entry (its key may come back hidden when
    /// it holds a credential).
    fn walk_entry(
        &self,
        key: &str,
        old: Option<&Value>,
        new: Option<&Value>,
    ) -> (Option<Entry>, Option<Entry>) {
        let one = |v: Option<&Value>| {
            v.map(|v| {
                let mut m = Map::with_capacity_and_hasher(1, Default::default());
                m.insert(key.to_string(), v.clone());
                Value::Map(m)
            })
        };
        let (x, y) = self.walk(one(old).as_ref(), one(new).as_ref());
        let first = |v: Option<Value>| match v {
            Some(Value::Map(m)) => m.into_iter().next(),
            _ => None,
        };
        (first(x), first(y))
    }
}

#[cfg(test)]
mod tests {
    use super::super::Redactor;
    use crate::value::Value;

    fn v(s: &str) -> Value {
        crate::yaml::load_values(s).unwrap().remove(0)
    }

    fn shown(r: &Redactor, old: Option<&str>, new: &str) -> (String, String) {
        let old = old.map(v);
        let (a, b) = r.redact_pair(old.as_ref(), Some(&v(new)));
        (
            crate::yaml::emit::to_yaml_string(&a),
            crate::yaml::emit::to_yaml_string(&b),
        )
    }

    /// A CRD shaped like k8up's, keda's and argo-cd's: secret-named
    /// properties hold schemas.
    const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: repos.example.io}
spec:
  versions:
  - name: v1
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            properties:
              passCredentials: {description: Pass credentials to all domains, type: boolean}
              clientKey:
                description: Key of the client certificate
                properties:
                  secretRef: {properties: {name: {type: string}}, type: object}
                type: object
              secrets:
                items:
                  properties:
                    parameter: {type: string}
                  required: [parameter]
                  type: object
                type: array
              password:
                description: A PASSWORD_DESCRIPTION_SHOWN
                type: string
                default: DEFAULT_PASSWORD_Q1
                example: ghp_0123456789abcdefghijABCDEFGHIJ012345
                enum: [ENUM_PASSWORD_Q2]
              region: {type: string, default: westeurope}
              jwtTokens:
                items: {type: string, default: ITEM_TOKEN_Q3}
                type: array
";

    #[test]
    fn crd_schema_properties_stay_visible() {
        let r = Redactor::new(&[], true).unwrap();
        let (_, b) = shown(&r, None, CRD);
        for field in [
            "passCredentials:",
            "Pass credentials to all domains",
            "Key of the client certificate",
            "required:",
            "- parameter",
            "A PASSWORD_DESCRIPTION_SHOWN",
            "westeurope",
        ] {
            assert!(b.contains(field), "{field} hidden:\n{b}");
        }
        assert!(!b.contains("clientKey: <redacted"), "{b}");
    }

    #[test]
    fn crd_schema_literals_of_secret_fields_stay_hidden() {
        let r = Redactor::new(&[], true).unwrap();
        let (_, b) = shown(&r, None, CRD);
        for secret in [
            "DEFAULT_PASSWORD_Q1",
            "ghp_0123456789",
            "ENUM_PASSWORD_Q2",
            "ITEM_TOKEN_Q3",
        ] {
            assert!(!b.contains(secret), "{secret} shown:\n{b}");
        }
        // A change of a hidden default is still a change.
        let newer = CRD.replace("DEFAULT_PASSWORD_Q1", "DEFAULT_PASSWORD_Q9");
        let (a, b) = shown(&r, Some(CRD), &newer);
        assert!(b.contains("default: \"<redacted: changed>\""), "{b}");
        assert!(!a.contains("Q1") && !b.contains("Q9"), "{a}\n{b}");
    }

    /// Outside an `openAPIV3Schema`, a `password` map is read as before.
    #[test]
    fn maps_outside_a_schema_are_unchanged() {
        let r = Redactor::new(&[], true).unwrap();
        let (_, b) = shown(
            &r,
            None,
            "spec:\n  properties:\n    password: {type: string, default: Q4notschema}\n",
        );
        assert!(!b.contains("Q4notschema"), "{b}");
    }

    /// Text mode: a CRD's schema has a `kind` property whose value is a
    /// map; the file was withheld whole as a possible Secret.
    #[test]
    fn a_kind_property_holding_a_map_is_not_a_secret_kind() {
        let r = Redactor::new(&[], true).unwrap();
        let crd = "kind: CustomResourceDefinition\nspec:\n  properties:\n    kind:\n      description: Kind of the object\n      type: string\n";
        assert!(!r.looks_like_secret(crd));
        for secret in [
            "kind:\n  Secret\ndata: {}\n",
            "kind:\n  !!str Secret\n",
            "kind:\n  \"Secret\"\n",
            "kind: # c\n  Secret\n",
            "kind:\n  Sec\n  ret\n",
            "kind:\ndata: {}\n",
        ] {
            assert!(r.looks_like_secret(secret), "{secret}");
        }
    }
}
