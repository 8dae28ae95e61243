//! Rendered (fully resolved) values: what the inventory hands to compile,
//! and what every output format serializes. Unrendered inventory values live
//! in `inventory::uvalue` and never leave the inventory module.

use indexmap::IndexMap;
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

/// An insertion-ordered map: key order is the order the merge produced.
pub type Map = IndexMap<String, Value, ahash::RandomState>;

#[derive(Debug, Clone, PartialEq, Default)]
pub enum Value {
    #[default]
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    String(String),
    List(Vec<Value>),
    Map(Map),
}

impl Value {
    /// Python's truth of the value.
    pub fn is_truthy(&self) -> bool {
        match self {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::String(s) => !s.is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Map(m) => !m.is_empty(),
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_map(&self) -> Option<&Map> {
        match self {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_list(&self) -> Option<&[Value]> {
        match self {
            Value::List(l) => Some(l),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The value at a `:`-free key path (`["a", "b"]` is `a.b`).
    pub fn get_path<S: AsRef<str>>(&self, path: &[S]) -> Option<&Value> {
        let mut cur = self;
        for key in path {
            cur = cur.as_map()?.get(key.as_ref())?;
        }
        Some(cur)
    }

    /// A short name for the value's type, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::String(_) => "string",
            Value::List(_) => "list",
            Value::Map(_) => "map",
        }
    }

    /// The path (`a.b[0]`) of the first `.inf`/`.nan` float, which JSON
    /// cannot represent (serde_json would silently write `null`).
    pub fn non_finite_path(&self) -> Option<String> {
        // Paths are built only for a value that has one to report: building
        // one per node cost `inventory --format json` a tenth of its time.
        if !self.has_non_finite() {
            return None;
        }
        let mut todo = vec![(self, String::new())];
        while let Some((v, path)) = todo.pop() {
            match v {
                Value::Float(f) if !f.is_finite() => return Some(path),
                Value::List(items) => {
                    for (i, x) in items.iter().enumerate().rev() {
                        todo.push((x, format!("{path}[{i}]")));
                    }
                }
                Value::Map(m) => {
                    for (k, x) in m.iter().rev() {
                        let p = if path.is_empty() {
                            k.clone()
                        } else {
                            format!("{path}.{k}")
                        };
                        todo.push((x, p));
                    }
                }
                _ => {}
            }
        }
        None
    }

    fn has_non_finite(&self) -> bool {
        let mut todo = vec![self];
        while let Some(v) = todo.pop() {
            match v {
                Value::Float(f) if !f.is_finite() => return true,
                Value::List(items) => todo.extend(items),
                Value::Map(m) => todo.extend(m.values()),
                _ => {}
            }
        }
        false
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    pub fn from_json(v: &serde_json::Value) -> Value {
        match v {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            serde_json::Value::String(s) => Value::String(s.clone()),
            serde_json::Value::Array(a) => Value::List(a.iter().map(Value::from_json).collect()),
            serde_json::Value::Object(o) => Value::Map(
                o.iter()
                    .map(|(k, v)| (k.clone(), Value::from_json(v)))
                    .collect(),
            ),
        }
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Null => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Int(i) => s.serialize_i64(*i),
            Value::Float(f) => s.serialize_f64(*f),
            Value::String(st) => s.serialize_str(st),
            Value::List(l) => {
                let mut seq = s.serialize_seq(Some(l.len()))?;
                for v in l {
                    seq.serialize_element(v)?;
                }
                seq.end()
            }
            Value::Map(m) => {
                let mut map = s.serialize_map(Some(m.len()))?;
                for (k, v) in m {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trip_keeps_order_and_types() {
        let j: serde_json::Value =
            serde_json::from_str(r#"{"z":1,"a":[1.5,"x",null,true],"m":{}}"#).unwrap();
        let v = Value::from_json(&j);
        assert_eq!(v.get_path(&["z"]), Some(&Value::Int(1)));
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"z":1,"a":[1.5,"x",null,true],"m":{}}"#
        );
    }
}
