//! Turning values into catalog files the way Kapitan's `CompilingFile`
//! does: the file name for a key and output type, Python's
//! `json.dump(indent, sort_keys)`, the `toml` 0.10.2 encoder, `plain`, the
//! empty-file rule for falsy values and `prune`.

use super::yaml_dump::{self, integral_text, python_float_repr, DumpOptions};
use crate::value::{Map, Value};

/// `output_type` of a compile entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputType {
    Yaml,
    Yml,
    Json,
    Toml,
    Plain,
    Auto,
}

impl OutputType {
    pub fn parse(s: &str) -> Option<OutputType> {
        Some(match s {
            "yaml" => OutputType::Yaml,
            "yml" => OutputType::Yml,
            "json" => OutputType::Json,
            "toml" => OutputType::Toml,
            "plain" => OutputType::Plain,
            "auto" => OutputType::Auto,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            OutputType::Yaml => "yaml",
            OutputType::Yml => "yml",
            OutputType::Json => "json",
            OutputType::Toml => "toml",
            OutputType::Plain => "plain",
            OutputType::Auto => "auto",
        }
    }
}

/// The concrete format a file is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Yaml,
    Json,
    Toml,
    Plain,
}

/// File name (relative to the entry's output directory) and format for one
/// top-level key (`InputType.to_file`).
pub fn file_for_key(key: &str, output_type: OutputType) -> (String, Format) {
    match output_type {
        OutputType::Yaml => (format!("{key}.yaml"), Format::Yaml),
        OutputType::Yml => (format!("{key}.yml"), Format::Yaml),
        OutputType::Json => (format!("{key}.json"), Format::Json),
        OutputType::Toml => (format!("{key}.toml"), Format::Toml),
        OutputType::Plain => (key.to_string(), Format::Plain),
        OutputType::Auto => {
            // os.path.splitext: the extension of the last component, a
            // leading dot does not count.
            let base = key.rsplit('/').next().unwrap_or(key);
            let trimmed = base.trim_start_matches('.');
            let ext = trimmed.rfind('.').map(|i| &trimmed[i..]).unwrap_or("");
            match ext {
                ".yaml" | ".yml" => (key.to_string(), Format::Yaml),
                ".json" => (key.to_string(), Format::Json),
                ".toml" => (key.to_string(), Format::Toml),
                _ => (format!("{key}.yaml"), Format::Yaml),
            }
        }
    }
}

/// Settings that shape every written file.
#[derive(Debug, Clone)]
pub struct WriteOptions {
    pub yaml: DumpOptions,
    pub json_indent: usize,
}

/// The bytes of one file, or Kapitan's error text for values that cannot
/// be written in that format.
pub fn render_file(v: &Value, format: Format, opts: &WriteOptions) -> Result<String, String> {
    match format {
        Format::Plain => match v {
            Value::String(s) => Ok(s.clone()),
            other => Err(format!(
                "expected string or bytes-like object, got '{}'",
                python_type_name(other)
            )),
        },
        _ if !v.is_truthy() => Ok(String::new()),
        Format::Yaml => match v {
            Value::Map(_) => Ok(yaml_dump::dump(v, &opts.yaml)),
            Value::List(items) => Ok(yaml_dump::dump_all(items, &opts.yaml)),
            // dump_all iterates the string: one document per character.
            Value::String(s) => {
                let docs: Vec<Value> = s.chars().map(|c| Value::String(c.to_string())).collect();
                Ok(yaml_dump::dump_all(&docs, &opts.yaml))
            }
            other => Err(format!(
                "'{}' object is not iterable",
                python_type_name(other)
            )),
        },
        Format::Json => {
            let mut out = String::new();
            json_dump(v, opts.json_indent, 0, true, &mut out);
            Ok(out)
        }
        Format::Toml => match v {
            Value::Map(m) => toml_dumps(m, true),
            other => Err(format!(
                "toml can only dump a mapping, got '{}'",
                python_type_name(other)
            )),
        },
    }
}

/// The Python type name Kapitan's errors show.
pub fn python_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Int(_) => "int",
        Value::Float(f) if integral_text(*f).is_some() => "int",
        Value::Float(_) => "float",
        Value::String(_) => "str",
        Value::List(_) => "list",
        Value::Map(_) => "dict",
    }
}

/// `utils.prune_empty`: drops nulls, empty lists and empty maps, judged
/// before their own children are pruned.
pub fn prune_empty(v: &Value) -> Value {
    fn is_empty_or_null(v: &Value) -> bool {
        match v {
            Value::Null => true,
            Value::List(l) => l.is_empty(),
            Value::Map(m) => m.is_empty(),
            _ => false,
        }
    }
    match v {
        Value::Map(m) => Value::Map(
            m.iter()
                .filter(|(_, v)| !is_empty_or_null(v))
                .map(|(k, v)| (k.clone(), prune_empty(v)))
                .collect(),
        ),
        Value::List(l) => Value::List(
            l.iter()
                .filter(|v| !is_empty_or_null(v))
                .map(prune_empty)
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A number as Python prints it after `json.loads` of jsonnet output.
fn json_number(v: &Value) -> Option<String> {
    match v {
        Value::Int(i) => Some(i.to_string()),
        Value::Float(f) => Some(integral_text(*f).unwrap_or_else(|| {
            if f.is_nan() {
                "NaN".into()
            } else if f.is_infinite() {
                if *f > 0.0 { "Infinity" } else { "-Infinity" }.into()
            } else {
                python_float_repr(*f)
            }
        })),
        _ => None,
    }
}

pub use crate::yaml::json_string;

/// `json.dump(v, indent=indent, sort_keys=sort)`: no final newline.
pub fn json_dump(v: &Value, indent: usize, level: usize, sort: bool, out: &mut String) {
    let nl = |out: &mut String, lvl: usize| {
        out.push('\n');
        out.push_str(&" ".repeat(indent * lvl));
    };
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(_) | Value::Float(_) => out.push_str(&json_number(v).unwrap_or_default()),
        Value::String(s) => json_string(s, out),
        Value::List(l) if l.is_empty() => out.push_str("[]"),
        Value::Map(m) if m.is_empty() => out.push_str("{}"),
        Value::List(l) => {
            out.push('[');
            for (i, item) in l.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                nl(out, level + 1);
                json_dump(item, indent, level + 1, sort, out);
            }
            nl(out, level);
            out.push(']');
        }
        Value::Map(m) => {
            out.push('{');
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            if sort {
                entries.sort_by(|a, b| a.0.cmp(b.0));
            }
            for (i, (k, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                nl(out, level + 1);
                json_string(k, out);
                out.push_str(": ");
                json_dump(item, indent, level + 1, sort, out);
            }
            nl(out, level);
            out.push('}');
        }
    }
}

/// Python's `repr(str)`.
pub fn python_str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::new();
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            c if python_printable(c) => out.push(c),
            c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push(quote);
    out
}

/// An approximation of `str.isprintable` for non-ASCII characters: control,
/// format, separator (other than space), surrogate and private-use code
/// points are not printable.
fn python_printable(c: char) -> bool {
    let u = c as u32;
    !(u < 0x20
        || (0x7f..=0xa0).contains(&u)
        || u == 0xad
        || u == 0x1680
        || (0x2000..=0x200f).contains(&u)
        || (0x2028..=0x202f).contains(&u)
        || (0x205f..=0x206f).contains(&u)
        || u == 0x3000
        || u == 0xfeff
        || (0xe000..=0xf8ff).contains(&u)
        || (0xfff9..=0xfffb).contains(&u)
        || (0xf0000..).contains(&u))
}

/// `toml._dump_str`: Python's repr, massaged into a TOML basic string.
fn toml_str(s: &str) -> String {
    let r = python_str_repr(s);
    let single = r.starts_with('\'');
    let mut v = r[1..r.len() - 1].to_string();
    if single {
        v = v.replace("\\'", "'").replace('"', "\\\"");
    }
    let mut parts: Vec<String> = v.split("\\x").map(str::to_string).collect();
    while parts.len() > 1 {
        if parts[0].is_empty() {
            parts.remove(0);
            if parts.len() == 1 {
                break;
            }
        }
        parts[0] = parts[0].replace("\\\\", "\\");
        let first: Vec<char> = parts[0].chars().collect();
        let mut i = first.len();
        let mut joinx = first.last() != Some(&'\\');
        while i > 1 && first[i - 1] == '\\' {
            joinx = !joinx;
            i -= 1;
        }
        let joiner = if joinx { "x" } else { "u00" };
        let merged = format!("{}{}{}", parts[0], joiner, parts[1]);
        parts.splice(0..2, [merged]);
    }
    format!("\"{}\"", parts[0])
}

fn toml_value(v: &Value, ints: bool) -> String {
    match v {
        Value::String(s) => toml_str(s),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => match integral_text(*f) {
            Some(t) if ints => t,
            _ => python_float_repr(*f)
                .replace("e+0", "e+")
                .replace("e-0", "e-"),
        },
        Value::List(l) => {
            let mut s = String::from("[");
            for item in l {
                s.push(' ');
                s.push_str(&toml_value(item, ints));
                s.push(',');
            }
            s.push(']');
            s
        }
        Value::Map(m) => {
            // Python iterates a dict as its keys.
            toml_value(
                &Value::List(m.keys().cloned().map(Value::String).collect()),
                ints,
            )
        }
        Value::Null => "\"None\"".into(),
    }
}

fn toml_key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        toml_str(k)
    }
}

type Sections = Vec<(String, Map)>;

fn toml_sections(o: &Map, sup: &str, ints: bool) -> Result<(String, Sections), String> {
    let sup = if !sup.is_empty() && !sup.ends_with('.') {
        format!("{sup}.")
    } else {
        sup.to_string()
    };
    let mut retstr = String::new();
    let mut retdict: Sections = Vec::new();
    let mut arraystr = String::new();
    for (section, value) in o {
        let qsection = toml_key(section);
        match value {
            Value::Map(m) => retdict.push((qsection, m.clone())),
            Value::List(l) if l.iter().any(|a| matches!(a, Value::Map(_))) => {
                for a in l {
                    let Value::Map(a) = a else {
                        return Err("toml cannot write a list mixing tables and values".into());
                    };
                    let mut arraytabstr = String::from("\n");
                    arraystr.push_str(&format!("[[{sup}{qsection}]]\n"));
                    let (s, mut d) = toml_sections(a, &format!("{sup}{qsection}"), ints)?;
                    if !s.is_empty() {
                        if s.starts_with('[') {
                            arraytabstr.push_str(&s);
                        } else {
                            arraystr.push_str(&s);
                        }
                    }
                    while !d.is_empty() {
                        let mut newd: Sections = Vec::new();
                        for (dsec, dmap) in &d {
                            let (s1, d1) =
                                toml_sections(dmap, &format!("{sup}{qsection}.{dsec}"), ints)?;
                            if !s1.is_empty() {
                                arraytabstr.push_str(&format!("[{sup}{qsection}.{dsec}]\n"));
                                arraytabstr.push_str(&s1);
                            }
                            for (k1, m1) in d1 {
                                newd.push((format!("{dsec}.{k1}"), m1));
                            }
                        }
                        d = newd;
                    }
                    arraystr.push_str(&arraytabstr);
                }
            }
            Value::Null => {}
            other => {
                retstr.push_str(&format!("{qsection} = {}\n", toml_value(other, ints)));
            }
        }
    }
    retstr.push_str(&arraystr);
    Ok((retstr, retdict))
}

/// `toml.dumps` (toml 0.10.2). `ints`: integral floats are integers.
pub fn toml_dumps(o: &Map, ints: bool) -> Result<String, String> {
    let (mut retval, mut sections) = toml_sections(o, "", ints)?;
    while !sections.is_empty() {
        let mut newsections: Sections = Vec::new();
        for (section, m) in &sections {
            let (add, addsections) = toml_sections(m, section, ints)?;
            if !add.is_empty() || addsections.is_empty() {
                if !retval.is_empty() && !retval.ends_with("\n\n") {
                    retval.push('\n');
                }
                retval.push_str(&format!("[{section}]\n"));
                retval.push_str(&add);
            }
            for (s, m2) in addsections {
                newsections.push((format!("{section}.{s}"), m2));
            }
        }
        sections = newsections;
    }
    Ok(retval)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::yaml_dump::MultilineStyle;

    fn parse(j: &str) -> Value {
        Value::from_json(&serde_json::from_str(j).unwrap())
    }

    fn wopts() -> WriteOptions {
        WriteOptions {
            yaml: DumpOptions::kapitan(2, MultilineStyle::Literal, false),
            json_indent: 2,
        }
    }

    #[test]
    fn auto_output_names() {
        assert_eq!(
            file_for_key("notes.txt", OutputType::Auto).0,
            "notes.txt.yaml"
        );
        assert_eq!(
            file_for_key("x.json", OutputType::Auto),
            ("x.json".to_string(), Format::Json)
        );
        assert_eq!(file_for_key("README", OutputType::Auto).0, "README.yaml");
        assert_eq!(file_for_key("a", OutputType::Plain).0, "a");
        assert_eq!(file_for_key("a", OutputType::Yml).0, "a.yml");
    }

    #[test]
    fn json_like_python() {
        let v = parse(r#"{"b":[1,[2,3],{}],"a":"caf\u00e9 \ud83d\ude00 \u0001","c":1e-5,"d":[]}"#);
        let out = render_file(&v, Format::Json, &wopts()).unwrap();
        assert_eq!(
            out,
            "{\n  \"a\": \"caf\\u00e9 \\ud83d\\ude00 \\u0001\",\n  \"b\": [\n    1,\n    [\n      2,\n      3\n    ],\n    {}\n  ],\n  \"c\": 1e-05,\n  \"d\": []\n}"
        );
    }

    #[test]
    fn falsy_values_give_empty_files_and_scalars_fail() {
        for j in ["{}", "[]", "0", "false", "\"\"", "null"] {
            assert_eq!(render_file(&parse(j), Format::Yaml, &wopts()).unwrap(), "");
        }
        assert!(render_file(&parse("42"), Format::Yaml, &wopts())
            .unwrap_err()
            .contains("'int' object is not iterable"));
        assert_eq!(
            render_file(&parse("\"hi\""), Format::Yaml, &wopts()).unwrap(),
            "h\n--- i\n...\n"
        );
        assert!(render_file(&parse("{}"), Format::Plain, &wopts())
            .unwrap_err()
            .contains("got 'dict'"));
    }

    #[test]
    fn prune_keeps_containers_that_become_empty() {
        let v = parse(
            r#"{"a":null,"b":{},"c":[],"d":{"x":null},"e":[{},{"y":null},null,0,"",false,[]]}"#,
        );
        assert_eq!(
            serde_json::to_string(&prune_empty(&v)).unwrap(),
            r#"{"d":{},"e":[{},0,"",false]}"#
        );
    }

    #[test]
    fn toml_like_toml_0_10() {
        let v = parse(
            r#"{"debug":false,"nums":[1,2],"path":"C:\\temp","quote":"say \"hi\"","backends":[{"name":"a"},{"name":"b"}],"server":{"host":"h","tls":{"on":true}}}"#,
        );
        let Value::Map(m) = v else { unreachable!() };
        assert_eq!(
            toml_dumps(&m, true).unwrap(),
            "debug = false\nnums = [ 1, 2,]\npath = \"C:\\\\temp\"\nquote = \"say \\\"hi\\\"\"\n[[backends]]\nname = \"a\"\n\n[[backends]]\nname = \"b\"\n\n[server]\nhost = \"h\"\n\n[server.tls]\non = true\n"
        );
    }

    #[test]
    fn python_repr_of_strings() {
        assert_eq!(python_str_repr("it's"), "\"it's\"");
        assert_eq!(python_str_repr("a\nb"), "'a\\nb'");
        assert_eq!(python_str_repr("café\u{1}"), "'café\\x01'");
    }
}
