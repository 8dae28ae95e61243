//! `yaml.safe_load` as Kapitan's `kap.yaml_load` sees files: YAML 1.1
//! implicit types (`yes`/`on` are booleans, `0755` is octal, `1_000` and
//! `1:30` are integers, `1e3` is a string), anchors and `<<` merges. The
//! inventory uses YAML 1.2 (`crate::yaml`); this loader exists only so that
//! compile inputs read data files exactly as Kapitan does.

use super::pydump::resolves_to_non_string;
use crate::value::{Map, Value};
use std::collections::HashMap;
use yaml_rust2::parser::{Event, MarkedEventReceiver};
use yaml_rust2::scanner::{Marker, TScalarStyle};

enum Frame {
    Seq(usize, Vec<Value>),
    Map(usize, Map, Option<String>, Vec<Value>),
}

#[derive(Default)]
struct Loader {
    stack: Vec<Frame>,
    docs: Vec<Value>,
    anchors: HashMap<usize, Value>,
    error: Option<String>,
}

fn key_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => super::python_float_repr(*f),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

impl Loader {
    fn push(&mut self, v: Value, anchor: usize) {
        if anchor > 0 {
            self.anchors.insert(anchor, v.clone());
        }
        match self.stack.last_mut() {
            None => self.docs.push(v),
            Some(Frame::Seq(_, items)) => items.push(v),
            Some(Frame::Map(_, m, pending, merges)) => match pending.take() {
                // PyYAML refuses them (a dict or list is unhashable); their
                // text, made for each key, also cost as much as an aliased
                // value is large (fuzzing: 2 kB, 6 s).
                None if matches!(v, Value::List(_) | Value::Map(_)) => {
                    self.error = Some(
                        "while constructing a mapping: found unhashable key (a mapping or sequence)"
                            .into(),
                    );
                }
                None => *pending = Some(key_text(&v)),
                Some(k) if k == "<<" => merges.push(v),
                Some(k) => {
                    m.insert(k, v);
                }
            },
        }
    }
}

impl MarkedEventReceiver for Loader {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        if self.error.is_some() {
            return;
        }
        match ev {
            Event::Alias(id) => match self.anchors.get(&id).cloned() {
                Some(v) => self.push(v, 0),
                None => self.error = Some(format!("unknown alias at line {}", mark.line())),
            },
            Event::Scalar(text, style, anchor, tag) => {
                let v = if tag.is_some() || style != TScalarStyle::Plain {
                    match tag.map(|t| t.suffix) {
                        Some(s) if s == "int" => resolve_plain(&text),
                        Some(s) if s == "float" => resolve_plain(&text),
                        Some(s) if s == "bool" => resolve_plain(&text),
                        Some(s) if s == "null" => Value::Null,
                        _ => Value::String(text),
                    }
                } else {
                    resolve_plain(&text)
                };
                if let Value::String(s) = &v {
                    if is_timestamp(s) && style == TScalarStyle::Plain {
                        self.error = Some(format!(
                            "`{s}` at line {} is a date, which is not JSON serializable",
                            mark.line()
                        ));
                        return;
                    }
                }
                self.push(v, anchor);
            }
            Event::SequenceStart(anchor, _) => self.stack.push(Frame::Seq(anchor, Vec::new())),
            Event::MappingStart(anchor, _) => {
                self.stack
                    .push(Frame::Map(anchor, Map::default(), None, Vec::new()))
            }
            Event::SequenceEnd => {
                if let Some(Frame::Seq(anchor, items)) = self.stack.pop() {
                    self.push(Value::List(items), anchor);
                }
            }
            Event::MappingEnd => {
                if let Some(Frame::Map(anchor, m, _, merges)) = self.stack.pop() {
                    let m = if merges.is_empty() {
                        m
                    } else {
                        let mut merged = Map::default();
                        for src in merges {
                            let maps = match src {
                                Value::List(l) => l,
                                other => vec![other],
                            };
                            for mm in maps {
                                if let Value::Map(mm) = mm {
                                    for (k, v) in mm {
                                        merged.entry(k).or_insert(v);
                                    }
                                }
                            }
                        }
                        for (k, v) in m {
                            merged.insert(k, v);
                        }
                        merged
                    };
                    self.push(Value::Map(m), anchor);
                }
            }
            _ => {}
        }
    }
}

fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 10
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && resolves_to_non_string(s)
        && s.parse::<i64>().is_err()
        && s.replace('_', "").parse::<f64>().is_err()
}

fn parse_int_body(s: &str) -> Option<i64> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let body = body.replace('_', "");
    let v = if let Some(b) = body.strip_prefix("0b") {
        i64::from_str_radix(b, 2).ok()?
    } else if let Some(o) = body.strip_prefix("0o") {
        i64::from_str_radix(o, 8).ok()?
    } else if let Some(h) = body.strip_prefix("0x") {
        i64::from_str_radix(h, 16).ok()?
    } else if body.contains(':') {
        // Too big for i64 (Python's int has no bound): None, so it is read
        // as a float like any other too-big integer (found by fuzzing: the
        // unchecked `acc * 60` overflowed).
        let mut acc = 0i64;
        for part in body.split(':') {
            acc = acc
                .checked_mul(60)?
                .checked_add(part.parse::<i64>().ok()?)?;
        }
        acc
    } else if body.len() > 1 && body.starts_with('0') {
        i64::from_str_radix(&body[1..], 8).ok()?
    } else {
        body.parse().ok()?
    };
    Some(if neg { -v } else { v })
}

fn parse_float_body(s: &str) -> Option<f64> {
    let t = s.replace('_', "");
    match t.to_ascii_lowercase().as_str() {
        ".inf" | "+.inf" => return Some(f64::INFINITY),
        "-.inf" => return Some(f64::NEG_INFINITY),
        ".nan" => return Some(f64::NAN),
        _ => {}
    }
    if t.contains(':') {
        let (neg, body) = match t.as_bytes().first() {
            Some(b'-') => (true, &t[1..]),
            Some(b'+') => (false, &t[1..]),
            _ => (false, t.as_str()),
        };
        let mut acc = 0f64;
        for part in body.split(':') {
            acc = acc * 60.0 + part.parse::<f64>().ok()?;
        }
        return Some(if neg { -acc } else { acc });
    }
    t.parse().ok()
}

/// PyYAML's resolution of a plain scalar.
fn resolve_plain(text: &str) -> Value {
    if !resolves_to_non_string(text) {
        return Value::String(text.to_string());
    }
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Value::Bool(true)
        }
        "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Value::Bool(false)
        }
        _ => {}
    }
    if let Some(i) = parse_int_body(text) {
        return Value::Int(i);
    }
    if let Some(f) = parse_float_body(text) {
        return Value::Float(f);
    }
    Value::String(text.to_string())
}

/// Every document of a YAML stream, PyYAML style.
pub fn load_all(text: &str) -> Result<Vec<Value>, String> {
    let mut loader = Loader::default();
    // The shared driver bounds nesting and alias expansion.
    crate::yaml::drive(text, &mut loader, |l| {
        l.error.as_ref().map(|m| crate::yaml::YamlError {
            message: m.clone(),
            line: 0,
            col: 0,
        })
    })
    .map_err(|e| match loader.error.take() {
        Some(m) => m,
        None => format!("{} at line {}", e.message, e.line),
    })?;
    Ok(loader.docs)
}

/// `yaml.safe_load`: the first document, or null for an empty stream.
pub fn load(text: &str) -> Result<Value, String> {
    Ok(load_all(text)?.into_iter().next().unwrap_or(Value::Null))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fuzzing (2026-11-26 evening): aliased mappings used as keys were
    /// turned into JSON text for every key (2 kB of input: 6 s, 400 MB).
    /// PyYAML refuses such keys.
    #[test]
    fn mapping_and_sequence_keys_are_unhashable() {
        for text in ["{[1]: 2}", "? {a: 1}\n: 2\n", "a: &x {b: 1}\nc: {*x : 2}\n"] {
            let e = load_all(text).unwrap_err();
            assert!(e.contains("unhashable key"), "{text}: {e}");
        }
        assert!(load_all("{1: a, null: b, x: c}").is_ok());
    }

    #[test]
    fn yaml11_scalars() {
        let v = load("a: yes\nb: 0755\nc: 1_000\nd: 0x1F\ne: 1:30\nf: 1.10\ng: 1e3\nh: ~\ni: on\n")
            .unwrap();
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"a":true,"b":493,"c":1000,"d":31,"e":90,"f":1.1,"g":"1e3","h":null,"i":true}"#
        );
    }

    /// Found by `bench/fuzz.sh` (cargo-fuzz, target `yaml`): a sexagesimal
    /// integer past i64 overflowed (a panic in debug builds, a wrong value in
    /// release ones). It is read as a float, as other too-big integers are.
    #[test]
    fn sexagesimal_overflow_found_by_fuzzing() {
        let input =
            include_bytes!("../../tests/fixtures/hostile/fuzz/yaml-sexagesimal-overflow.bin");
        let text = String::from_utf8_lossy(input);
        let _ = load_all(&text);
        let _ = crate::yaml::load_values(&text);
        let v = load("a: 33333333333333333333:33\nb: -1:00:00\n").unwrap();
        assert_eq!(v.get_path(&["a"]), Some(&Value::Float(2e21)));
        assert_eq!(v.get_path(&["b"]), Some(&Value::Int(-3600)));
    }

    #[test]
    fn dates_are_errors() {
        assert!(load("d: 2021-01-01\n").is_err());
    }
}
