//! `@ytt:toml`: `encode` writes TOML the way ytt 0.49's encoder
//! (BurntSushi/toml 1.2) does — keys sorted, plain keys before tables,
//! nested tables indented — and `decode` parses TOML into sorted maps.

use super::node::{Kind, Node, Pos, Scalar, Val};

/// Largest `indent=` ytt accepts (it bounds the output size).
const MAX_INDENT: i64 = 8;

/// A value reduced to what the encoder distinguishes.
enum T<'a> {
    Null,
    Scalar(&'a Scalar),
    /// Entries sorted by key, later duplicates winning (Go maps).
    Map(Vec<(String, &'a Val)>),
    Array(Vec<&'a Val>),
}

fn view(v: &Val) -> T<'_> {
    match v {
        Val::Scalar(Scalar::Null) => T::Null,
        Val::Scalar(s) => T::Scalar(s),
        Val::Node(n) => match n.kind {
            Kind::Map => {
                let mut items: Vec<(String, &Val)> = Vec::new();
                for i in &n.items {
                    let k = i.key.display();
                    match items.iter_mut().find(|(x, _)| *x == k) {
                        Some(e) => e.1 = &i.val,
                        None => items.push((k, &i.val)),
                    }
                }
                items.sort_by(|a, b| a.0.cmp(&b.0));
                T::Map(items)
            }
            _ => T::Array(n.items.iter().map(|i| &i.val).collect()),
        },
    }
}

fn is_table(v: &Val) -> bool {
    match view(v) {
        T::Map(_) => true,
        T::Array(items) => is_table_array(&items),
        _ => false,
    }
}

fn is_table_array(items: &[&Val]) -> bool {
    !items.is_empty() && items.iter().all(|i| matches!(view(i), T::Map(_)))
}

struct Enc {
    out: String,
    indent: String,
}

fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn key_part(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        quote(k)
    }
}

fn key_path(key: &[String]) -> String {
    key.iter()
        .map(|k| key_part(k))
        .collect::<Vec<_>>()
        .join(".")
}

/// Go's `strconv.FormatFloat(f, 'f', -1, 64)` plus ".0" when it has no dot.
fn float(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f < 0.0 { "-inf" } else { "+inf" }.into();
    }
    let s = format!("{f}");
    if s.contains('.') {
        s
    } else {
        format!("{s}.0")
    }
}

impl Enc {
    fn newline(&mut self) {
        if !self.out.is_empty() {
            self.out.push('\n');
        }
    }

    fn indent_for(&self, key: &[String]) -> String {
        self.indent.repeat(key.len().saturating_sub(1))
    }

    fn element(&mut self, v: &Val) -> Result<(), String> {
        match view(v) {
            T::Null => return Err("toml: cannot encode array with nil element".into()),
            T::Scalar(s) => match s {
                Scalar::Str(s) => self.out.push_str(&quote(s)),
                Scalar::Bool(b) => self.out.push_str(&b.to_string()),
                Scalar::Int(i) => self.out.push_str(&i.to_string()),
                Scalar::Float(f) => self.out.push_str(&float(*f)),
                Scalar::Null => {}
            },
            T::Array(items) => {
                self.out.push('[');
                for (i, it) in items.iter().enumerate() {
                    self.element(it)?;
                    if i + 1 != items.len() {
                        self.out.push_str(", ");
                    }
                }
                self.out.push(']');
            }
            T::Map(items) => self.map(&[], &items, true)?,
        }
        Ok(())
    }

    fn key_value(&mut self, key: &[String], v: &Val, inline: bool) -> Result<(), String> {
        if key.is_empty() {
            return self.element(v);
        }
        let ind = self.indent_for(key);
        self.out.push_str(&ind);
        self.out.push_str(&key_part(&key[key.len() - 1]));
        self.out.push_str(" = ");
        self.element(v)?;
        if !inline {
            self.newline();
        }
        Ok(())
    }

    fn map(
        &mut self,
        key: &[String],
        items: &[(String, &Val)],
        inline: bool,
    ) -> Result<(), String> {
        let (sub, direct): (Vec<_>, Vec<_>) = items.iter().partition(|(_, v)| is_table(v));
        if inline {
            self.out.push('{');
        }
        for (group, trail) in [(&direct, !sub.is_empty()), (&sub, false)] {
            for (i, (k, v)) in group.iter().enumerate() {
                if v.is_null() {
                    continue;
                }
                if inline {
                    self.key_value(std::slice::from_ref(k), v, true)?;
                    if trail || i + 1 != group.len() {
                        self.out.push_str(", ");
                    }
                } else {
                    let mut path = key.to_vec();
                    path.push(k.clone());
                    self.encode(&path, v)?;
                }
            }
        }
        if inline {
            self.out.push('}');
        }
        Ok(())
    }

    fn encode(&mut self, key: &[String], v: &Val) -> Result<(), String> {
        match view(v) {
            T::Null => Ok(()),
            T::Scalar(_) => self.key_value(key, v, false),
            T::Array(items) if is_table_array(&items) && !key.is_empty() => {
                for it in items {
                    let T::Map(entries) = view(it) else {
                        continue;
                    };
                    self.newline();
                    let ind = self.indent_for(key);
                    self.out.push_str(&format!("{ind}[[{}]]", key_path(key)));
                    self.newline();
                    self.map(key, &entries, false)?;
                }
                Ok(())
            }
            T::Array(_) => self.key_value(key, v, false),
            T::Map(entries) => {
                if key.len() == 1 {
                    self.newline();
                }
                if !key.is_empty() {
                    let ind = self.indent_for(key);
                    self.out.push_str(&format!("{ind}[{}]", key_path(key)));
                    self.newline();
                }
                self.map(key, &entries, false)
            }
        }
    }
}

/// `toml.encode(value, indent=N)`.
pub fn encode(v: &Val, indent: i64) -> Result<String, String> {
    if !(0..=MAX_INDENT).contains(&indent) {
        return Err("indent value must be between 0 and 8".into());
    }
    let mut e = Enc {
        out: String::new(),
        indent: if indent > 0 {
            " ".repeat(indent as usize)
        } else {
            "  ".into()
        },
    };
    e.encode(&[], v)?;
    Ok(e.out)
}

fn from_toml(v: &::toml::Value) -> Val {
    match v {
        ::toml::Value::String(s) => Val::Scalar(Scalar::Str(s.clone())),
        ::toml::Value::Integer(i) => Val::Scalar(Scalar::Int(*i)),
        ::toml::Value::Float(f) => Val::Scalar(Scalar::Float(*f)),
        ::toml::Value::Boolean(b) => Val::Scalar(Scalar::Bool(*b)),
        // Go's decoder gives time values; they print as their TOML text
        ::toml::Value::Datetime(d) => Val::Scalar(Scalar::Str(d.to_string())),
        ::toml::Value::Array(a) => {
            let mut n = Node::array(Pos::unknown());
            n.items = a
                .iter()
                .map(|x| Node::array_item(from_toml(x), Pos::unknown()))
                .collect();
            Val::Node(Box::new(n))
        }
        ::toml::Value::Table(t) => table(t),
    }
}

fn table(t: &::toml::Table) -> Val {
    let mut n = Node::map(Pos::unknown());
    // toml's Table is a BTreeMap: keys come sorted, as ytt sorts them
    n.items = t
        .iter()
        .map(|(k, v)| Node::map_item(Scalar::Str(k.clone()), from_toml(v), Pos::unknown()))
        .collect();
    Val::Node(Box::new(n))
}

/// `toml.decode(text)`: a map with sorted keys.
pub fn decode(text: &str) -> Result<Val, String> {
    let t: ::toml::Table = text
        .parse()
        .map_err(|e: ::toml::de::Error| format!("toml: {}", e.message()))?;
    Ok(table(&t))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(s: &str) -> Val {
        let d = super::super::yamlmeta::parse(s, "t", false).unwrap();
        d.items.into_iter().next().unwrap().val
    }

    #[test]
    fn encodes_like_ytt() {
        assert_eq!(encode(&yaml("{}"), 0).unwrap(), "");
        assert_eq!(
            encode(&yaml("{b: str, a: [1, 2, 3, 456]}"), 0).unwrap(),
            "a = [1, 2, 3, 456]\nb = \"str\"\n"
        );
        let v = yaml("inside_map: {fragment: [piece1, piece2]}\ninside_array: [{fragment: [piece1, piece2]}]\n");
        assert_eq!(
            encode(&v, 4).unwrap(),
            "[[inside_array]]\n    fragment = [\"piece1\", \"piece2\"]\n\n[inside_map]\n    fragment = [\"piece1\", \"piece2\"]\n"
        );
        assert_eq!(
            encode(&yaml("map: {foo: bar}\narray: [1, 2, three]\n"), 0).unwrap(),
            "array = [1, 2, \"three\"]\n\n[map]\n  foo = \"bar\"\n"
        );
        assert_eq!(
            encode(&yaml("a: {b: {c: 1.0}, x: {yy: 1}}\n\"k k\": 2\n"), 0).unwrap(),
            "\"k k\" = 2\n\n[a]\n  [a.b]\n    c = 1.0\n  [a.x]\n    yy = 1\n"
        );
        assert!(encode(&yaml("{}"), 9).is_err());
    }

    #[test]
    fn decodes_sorted() {
        let v = decode("b = \"str\"\na = [ 1, 2 ]\n[[stuff]]\nx = 1.5\n").unwrap();
        assert_eq!(
            super::super::emit::encode_val(&v),
            "a:\n- 1\n- 2\nb: str\nstuff:\n- x: 1.5\n"
        );
        assert!(decode("a = ").is_err());
    }
}
