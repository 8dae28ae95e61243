//! YAML writing for rendered values.
//!
//! `to_yaml_string` writes block-style YAML that reads back to the same value
//! (strings that would resolve to another type are quoted). Kapitan's exact
//! PyYAML byte layout for compiled catalogs lives beside it in the compile code.

use crate::value::Value;

/// Serializes one value as a YAML document (no `---`), ending in a newline.
pub fn to_yaml_string(v: &Value) -> String {
    let mut out = String::new();
    match v {
        Value::Map(m) if !m.is_empty() => write_map(&mut out, v, 0),
        Value::List(l) if !l.is_empty() => write_list(&mut out, v, 0),
        _ => {
            out.push_str(&scalar(v));
            out.push('\n');
        }
    }
    out
}

/// Serializes several values as a multi-document stream separated by `---`.
pub fn to_yaml_stream(docs: &[Value]) -> String {
    let mut out = String::new();
    for (i, d) in docs.iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        out.push_str(&to_yaml_string(d));
    }
    out
}

fn indent(out: &mut String, n: usize) {
    for _ in 0..n {
        out.push(' ');
    }
}

fn is_block(v: &Value) -> bool {
    matches!(v, Value::Map(m) if !m.is_empty()) || matches!(v, Value::List(l) if !l.is_empty())
}

fn write_map(out: &mut String, v: &Value, ind: usize) {
    let Value::Map(m) = v else { return };
    for (k, val) in m {
        indent(out, ind);
        out.push_str(&quote_str(k));
        out.push(':');
        match val {
            Value::Map(_) if is_block(val) => {
                out.push('\n');
                write_map(out, val, ind + 2);
            }
            Value::List(_) if is_block(val) => {
                out.push('\n');
                write_list(out, val, ind);
            }
            _ => {
                out.push(' ');
                out.push_str(&scalar(val));
                out.push('\n');
            }
        }
    }
}

fn write_list(out: &mut String, v: &Value, ind: usize) {
    let Value::List(l) = v else { return };
    for item in l {
        indent(out, ind);
        out.push('-');
        if is_block(item) {
            match item {
                Value::Map(_) => {
                    // First key on the dash line, the rest indented under it.
                    let mut inner = String::new();
                    write_map(&mut inner, item, ind + 2);
                    out.push(' ');
                    out.push_str(&inner[ind + 2..]);
                }
                _ => {
                    out.push('\n');
                    write_list(out, item, ind + 2);
                }
            }
        } else {
            out.push(' ');
            out.push_str(&scalar(item));
            out.push('\n');
        }
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        // PyYAML's form (`1.5e+300`, `1.0e-05`): it reads back as a float
        // in YAML 1.1 and 1.2 alike, where Rust's `1500...0` read back as an
        // integer.
        Value::Float(f) => super::yaml_float(*f),
        Value::String(s) => quote_str(s),
        Value::Map(_) => "{}".into(),
        Value::List(_) => "[]".into(),
    }
}

/// Quotes a string when plain style would not read back as the same string.
fn quote_str(s: &str) -> String {
    let plain_ok = !s.is_empty()
        && matches!(
            super::resolve_plain(s.to_string()),
            super::NodeValue::Str { .. }
        )
        // Kapitan's readers are YAML 1.1 (PyYAML): `yes`, `off`, a date,
        // `1_000` and `<<` are strings only when quoted (re-probe 16).
        && !super::resolves_to_non_string(s)
        && !s.starts_with(|c: char| c.is_whitespace() || "-?:,[]{}#&*!|>'\"%@`".contains(c))
        && !s.ends_with(char::is_whitespace)
        && !s.contains(": ")
        && !s.contains(" #")
        && !s.ends_with(':')
        && !s.chars().any(|c| c.is_control());
    if plain_ok {
        s.to_string()
    } else {
        serde_json::to_string(s).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::load_one;

    #[test]
    fn round_trips() {
        let src = "a:\n  b: [1, 2, {c: d}]\n  e: 'true'\n  f: ''\n  g: 'x: y'\n  h: []\n  i: {}\nl:\n- - 1\n  - 2\n- k: v\n  m: null\n";
        let v = load_one(src).unwrap().unwrap().to_value();
        let out = to_yaml_string(&v);
        let back = load_one(&out).unwrap().unwrap().to_value();
        assert_eq!(v, back, "{out}");
    }

    /// Re-probe 16 (inventory-yaml-output-leaves-yaml11-strings-unquoted):
    /// strings a YAML 1.1 reader (PyYAML, Kapitan's) resolves to another
    /// type were written plain.
    #[test]
    fn strings_yaml_1_1_reads_as_other_types_are_quoted() {
        for s in ["yes", "Off", "2001-12-14", "1_000", "<<", "0o17", "1:30"] {
            let out = to_yaml_string(&Value::String(s.into()));
            assert_eq!(out, format!("\"{s}\"\n"), "{s}");
        }
        for s in ["name", "yesterday", "2001-12", "v1_000"] {
            assert_eq!(to_yaml_string(&Value::String(s.into())), format!("{s}\n"));
        }
    }

    /// Large and small floats read back as the same floats (Rust's `{}`
    /// wrote 1.5e300 as 301 digits, which read back as an integer), in
    /// PyYAML's spelling.
    #[test]
    fn floats_read_back_as_floats() {
        for (f, text) in [
            (1.5e300, "1.5e+300"),
            (1e20, "1.0e+20"),
            (12345678901234567890.0, "1.2345678901234567e+19"),
            (1e-5, "1.0e-05"),
            (0.25, "0.25"),
            (1000.0, "1000.0"),
            (-2.5e-300, "-2.5e-300"),
        ] {
            let out = to_yaml_string(&Value::Float(f));
            assert_eq!(out, format!("{text}\n"));
            let back = load_one(&out).unwrap().unwrap().to_value();
            assert_eq!(back, Value::Float(f), "{out}");
        }
    }
}
