//! Unrendered inventory values: what class and target files hold after
//! parsing, and what the merge builds for a target before references are
//! resolved. Subtrees are shared (`Arc`) between classes and targets, so a
//! target copies only the maps that its merge actually changes.

use super::refs::{self, Template};
use super::InventoryError;
use crate::value::Value;
use crate::yaml::{Node, NodeValue};
use indexmap::IndexMap;
use std::sync::Arc;

/// Where a value came from: an index into the inventory's file table, and a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Origin {
    pub file: u32,
    pub line: u32,
}

#[derive(Debug, Clone)]
pub enum UValue {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    /// A string without references.
    Str(Arc<str>),
    /// A string with references, parsed once when the file was read.
    Tmpl(Arc<(Template, Origin)>),
    List(Arc<Vec<UValue>>),
    Map(Arc<UMap>),
    /// Values for one key that can only be merged once references are
    /// resolved (reclass-rs's "value list"), oldest first.
    Layers(Arc<Vec<Layer>>),
    /// A reference that failed in a layer that a later layer may still
    /// overwrite (only exists while flattening layers).
    Error(Arc<InventoryError>),
}

#[derive(Debug, Clone)]
pub struct Layer {
    pub value: UValue,
    pub origin: Origin,
}

#[derive(Debug, Clone)]
pub struct UEntry {
    pub value: UValue,
    pub origin: Origin,
    /// `=key`: later changes are errors.
    pub constant: bool,
    /// `~key`: replaces instead of merging.
    pub replace: bool,
}

#[derive(Debug, Clone, Default)]
pub struct UMap {
    pub entries: IndexMap<Arc<str>, UEntry, ahash::RandomState>,
}

impl UValue {
    pub fn kind(&self) -> &'static str {
        match self {
            UValue::Null => "null",
            UValue::Bool(_) => "bool",
            UValue::Int(_) => "int",
            UValue::Float(_) => "float",
            UValue::Str(_) | UValue::Tmpl(_) => "string",
            UValue::List(_) => "list",
            UValue::Map(_) => "map",
            UValue::Layers(_) => "value with references",
            UValue::Error(_) => "unresolved reference",
        }
    }

    fn is_plain_scalar(&self) -> bool {
        matches!(
            self,
            UValue::Bool(_) | UValue::Int(_) | UValue::Float(_) | UValue::Str(_)
        )
    }

    /// A rendered value as an unrendered one (it has no references left).
    pub fn from_value(v: &Value) -> UValue {
        match v {
            Value::Null => UValue::Null,
            Value::Bool(b) => UValue::Bool(*b),
            Value::Int(i) => UValue::Int(*i),
            Value::Float(f) => UValue::Float(*f),
            Value::String(s) => UValue::Str(Arc::from(s.as_str())),
            Value::List(l) => UValue::List(Arc::new(l.iter().map(UValue::from_value).collect())),
            Value::Map(m) => {
                let mut um = UMap::default();
                um.entries.reserve(m.len());
                for (k, v) in m {
                    um.entries.insert(
                        Arc::from(k.as_str()),
                        UEntry {
                            value: UValue::from_value(v),
                            origin: Origin::default(),
                            constant: false,
                            replace: false,
                        },
                    );
                }
                UValue::Map(Arc::new(um))
            }
        }
    }
}

/// Converts a parsed YAML node into an unrendered value: strings with
/// references become templates and `~`/`=` key prefixes become flags.
pub fn from_node(node: &Node, file: u32) -> Result<UValue, String> {
    Ok(match &node.value {
        NodeValue::Null => UValue::Null,
        NodeValue::Bool(b) => UValue::Bool(*b),
        NodeValue::Int(i) => UValue::Int(*i),
        NodeValue::Float(f) => UValue::Float(*f),
        NodeValue::Str { value, .. } => string_value(
            value,
            Origin {
                file,
                line: node.line as u32,
            },
        )
        .map_err(|e| format!("line {}: {e}", node.line))?,
        NodeValue::Seq(items) => UValue::List(Arc::new(
            items
                .iter()
                .map(|n| from_node(n, file))
                .collect::<Result<_, _>>()?,
        )),
        NodeValue::Map(entries) => UValue::Map(Arc::new(map_from_entries(entries, file)?)),
    })
}

pub fn map_from_entries(entries: &[(Node, Node)], file: u32) -> Result<UMap, String> {
    let mut m = UMap::default();
    m.entries.reserve(entries.len());
    for (k, v) in entries {
        let key = k.key_string();
        let (name, constant, replace) = match key.chars().next() {
            Some('=') => (&key[1..], true, false),
            Some('~') => (&key[1..], false, true),
            _ => (key.as_str(), false, false),
        };
        let value = from_node(v, file)?;
        let origin = Origin {
            file,
            line: k.line as u32,
        };
        // Duplicate keys were rejected by the YAML reader; `a` and `~a` in one
        // mapping collide here, and the later one wins as in reclass-rs.
        m.entries.insert(
            Arc::from(name),
            UEntry {
                value,
                origin,
                constant,
                replace,
            },
        );
    }
    Ok(m)
}

fn string_value(s: &str, origin: Origin) -> Result<UValue, String> {
    match refs::parse(s)? {
        None => Ok(UValue::Str(Arc::from(s))),
        Some(t) => Ok(UValue::Tmpl(Arc::new((t, origin)))),
    }
}

/// A merge conflict found while building a target, reported with context
/// by the caller (which knows the parameter path).
#[derive(Debug)]
pub enum MergeConflict {
    Constant {
        key: String,
        first: Origin,
        second: Origin,
    },
    Types {
        path: Vec<Arc<str>>,
        old: &'static str,
        new: &'static str,
        old_origin: Origin,
        new_origin: Origin,
    },
    /// A failed reference under a map or list (surfaced when flattening).
    Unresolved(Arc<InventoryError>),
}

/// Merges `other` into `base`, key by key (the class-merge step).
pub fn merge_maps(
    base: &mut UMap,
    other: &UMap,
    path: &mut Vec<Arc<str>>,
) -> Result<(), MergeConflict> {
    for (k, e) in &other.entries {
        match base.entries.get_mut(k) {
            None => {
                base.entries.insert(k.clone(), e.clone());
            }
            Some(cur) => {
                if cur.constant {
                    path.push(k.clone());
                    let key = path.join(".");
                    path.pop();
                    return Err(MergeConflict::Constant {
                        key,
                        first: cur.origin,
                        second: e.origin,
                    });
                }
                if e.replace {
                    cur.value = e.value.clone();
                } else {
                    path.push(k.clone());
                    let r = merge_value(&mut cur.value, cur.origin, &e.value, e.origin, path);
                    path.pop();
                    r?;
                }
                cur.origin = e.origin;
                cur.constant |= e.constant;
            }
        }
    }
    Ok(())
}

/// Merges one value over another where that can be decided without
/// resolving references; otherwise records both as layers for later.
fn merge_value(
    base: &mut UValue,
    base_origin: Origin,
    other: &UValue,
    other_origin: Origin,
    path: &mut Vec<Arc<str>>,
) -> Result<(), MergeConflict> {
    match (&mut *base, other) {
        (_, UValue::Null) | (UValue::Null, _) => *base = other.clone(),
        (UValue::Map(a), UValue::Map(b)) => merge_maps(Arc::make_mut(a), b, path)?,
        (UValue::List(a), UValue::List(b)) => Arc::make_mut(a).extend(b.iter().cloned()),
        (a, b) if a.is_plain_scalar() && b.is_plain_scalar() => *base = other.clone(),
        (UValue::Layers(ls), _) => Arc::make_mut(ls).push(Layer {
            value: other.clone(),
            origin: other_origin,
        }),
        _ => {
            let old = std::mem::replace(base, UValue::Null);
            *base = UValue::Layers(Arc::new(vec![
                Layer {
                    value: old,
                    origin: base_origin,
                },
                Layer {
                    value: other.clone(),
                    origin: other_origin,
                },
            ]));
        }
    }
    Ok(())
}

/// The merge step used while flattening layers, once references of the
/// layer are resolved: type mismatches are errors now.
pub fn merge_resolved(
    base: &mut UValue,
    base_origin: Origin,
    other: UValue,
    other_origin: Origin,
    path: &mut Vec<Arc<str>>,
) -> Result<(), MergeConflict> {
    if matches!(other, UValue::Null) {
        *base = UValue::Null;
        return Ok(());
    }
    match (&mut *base, other) {
        (UValue::Null, o) => *base = o,
        (UValue::Error(e), o) => {
            if matches!(o, UValue::Map(_) | UValue::List(_)) {
                return Err(MergeConflict::Unresolved(e.clone()));
            }
            *base = o;
        }
        (UValue::Map(a), UValue::Map(b)) => merge_maps(Arc::make_mut(a), &b, path)?,
        (UValue::List(a), UValue::List(b)) => Arc::make_mut(a).extend(b.iter().cloned()),
        (b, o) => {
            let mismatch = matches!(b, UValue::Map(_) | UValue::List(_))
                || matches!(o, UValue::Map(_) | UValue::List(_));
            if mismatch {
                return Err(MergeConflict::Types {
                    path: path.clone(),
                    old: b.kind(),
                    new: o.kind(),
                    old_origin: base_origin,
                    new_origin: other_origin,
                });
            }
            *base = o;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::load_one;

    fn umap(src: &str) -> UMap {
        let n = load_one(src).unwrap().unwrap();
        match n.value {
            NodeValue::Map(e) => map_from_entries(&e, 0).unwrap(),
            _ => panic!("not a map"),
        }
    }

    #[test]
    fn prefixes_become_flags() {
        let m = umap("~a: 1\n=b: 2\nc: ${x}\n");
        assert!(m.entries["a"].replace);
        assert!(m.entries["b"].constant);
        assert!(matches!(m.entries["c"].value, UValue::Tmpl(_)));
    }

    #[test]
    fn eager_merge_and_layers() {
        let mut base = umap("a: {x: 1}\nl: [1]\ns: 1\nr: ${q}\n");
        let other = umap("a: {y: 2}\nl: [2]\ns: two\nr: {z: 1}\n");
        merge_maps(&mut base, &other, &mut Vec::new()).unwrap();
        let a = match &base.entries["a"].value {
            UValue::Map(m) => m.clone(),
            _ => panic!(),
        };
        assert_eq!(a.entries.len(), 2);
        assert!(matches!(&base.entries["l"].value, UValue::List(l) if l.len() == 2));
        assert!(matches!(&base.entries["s"].value, UValue::Str(s) if &**s == "two"));
        assert!(matches!(&base.entries["r"].value, UValue::Layers(l) if l.len() == 2));
    }

    #[test]
    fn constant_cannot_change() {
        let mut base = umap("=c: 1\n");
        let other = umap("c: 2\n");
        assert!(matches!(
            merge_maps(&mut base, &other, &mut Vec::new()),
            Err(MergeConflict::Constant { .. })
        ));
    }

    #[test]
    fn replace_prefix() {
        let mut base = umap("a: {x: 1}\n");
        let other = umap("~a: {y: 2}\n");
        merge_maps(&mut base, &other, &mut Vec::new()).unwrap();
        match &base.entries["a"].value {
            UValue::Map(m) => assert_eq!(m.entries.keys().map(|k| &**k).collect::<Vec<_>>(), ["y"]),
            _ => panic!(),
        }
    }
}
