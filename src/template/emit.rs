//! Writes node trees as ytt prints them (go-yaml v2's emitter): two-space
//! indentation, sequences not indented under their key, strings quoted only
//! when they would read back as something else, long plain lines folded at
//! column 80, multi-line strings as literal blocks.

use super::node::{Kind, Node, Scalar, Val};
use super::yamlmeta::needs_quotes_to_stay_string;

const BEST_WIDTH: usize = 80;

/// Formats a float as Go's `strconv.FormatFloat(f, 'g', -1, 64)` (+ YAML's
/// spellings of infinity and NaN).
pub fn format_float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            ".inf".into()
        } else {
            "-.inf".into()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let e = format!("{:e}", f);
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let sign = if neg { "-" } else { "" };
    // Go's shortest 'g' format switches to an exponent outside [-4, 6).
    if !(-4..6).contains(&exp) {
        return exp_form(sign, &digits, exp);
    }
    let dp = exp + 1;
    let mut s = String::from(sign);
    if dp <= 0 {
        s.push_str("0.");
        for _ in 0..(-dp) {
            s.push('0');
        }
        s.push_str(&digits);
    } else if dp as usize >= digits.len() {
        s.push_str(&digits);
        for _ in 0..(dp as usize - digits.len()) {
            s.push('0');
        }
    } else {
        s.push_str(&digits[..dp as usize]);
        s.push('.');
        s.push_str(&digits[dp as usize..]);
    }
    s
}

fn exp_form(sign: &str, digits: &str, exp: i32) -> String {
    let mut s = String::from(sign);
    s.push_str(&digits[..1]);
    if digits.len() > 1 {
        s.push('.');
        s.push_str(&digits[1..]);
    }
    s.push('e');
    s.push(if exp < 0 { '-' } else { '+' });
    let a = exp.abs();
    if a < 10 {
        s.push('0');
    }
    s.push_str(&a.to_string());
    s
}

#[derive(Default)]
struct Analysis {
    multiline: bool,
    block_plain: bool,
    single_ok: bool,
    block_ok: bool,
}

fn is_printable(c: char) -> bool {
    let u = c as u32;
    u == 0x0A
        || (0x20..=0x7E).contains(&u)
        || u == 0x85
        || ((0xA0..=0xD7FF).contains(&u))
        || ((0xE000..=0xFFFD).contains(&u) && u != 0xFEFF)
        || (0x10000..=0x10FFFF).contains(&u)
}

fn analyze(s: &str) -> Analysis {
    if s.is_empty() {
        return Analysis {
            multiline: false,
            block_plain: true,
            single_ok: true,
            block_ok: false,
        };
    }
    let chars: Vec<char> = s.chars().collect();
    let mut block_ind = false;
    let (mut line_breaks, mut special) = (false, false);
    let (mut lead_sp, mut lead_br, mut trail_sp, mut trail_br) = (false, false, false, false);
    let (mut break_space, mut space_break) = (false, false);
    let (mut prev_space, mut prev_break) = (false, false);
    if s.starts_with("---") || s.starts_with("...") {
        block_ind = true;
    }
    let mut preceded_ws = true;
    let n = chars.len();
    for i in 0..n {
        let c = chars[i];
        let followed_ws = i + 1 >= n || matches!(chars[i + 1], ' ' | '\t' | '\n' | '\r');
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => block_ind = true,
                '?' | ':' | '-' if followed_ws => block_ind = true,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_ws => block_ind = true,
                '#' if preceded_ws => block_ind = true,
                _ => {}
            }
        }
        if !is_printable(c) {
            special = true;
        }
        if c == ' ' {
            if i == 0 {
                lead_sp = true;
            }
            if i + 1 == n {
                trail_sp = true;
            }
            if prev_break {
                break_space = true;
            }
            prev_space = true;
            prev_break = false;
        } else if c == '\n' || c == '\r' || c == '\u{85}' || c == '\u{2028}' || c == '\u{2029}' {
            line_breaks = true;
            if i == 0 {
                lead_br = true;
            }
            if i + 1 == n {
                trail_br = true;
            }
            if prev_space {
                space_break = true;
            }
            prev_space = false;
            prev_break = true;
        } else {
            prev_space = false;
            prev_break = false;
        }
        preceded_ws = matches!(c, ' ' | '\t' | '\n' | '\r');
    }
    let mut a = Analysis {
        multiline: line_breaks,
        block_plain: true,
        single_ok: true,
        block_ok: true,
    };
    if lead_sp || lead_br || trail_sp || trail_br {
        a.block_plain = false;
    }
    if trail_sp {
        a.block_ok = false;
    }
    if break_space {
        a.block_plain = false;
        a.single_ok = false;
    }
    if space_break || special {
        a.block_plain = false;
        a.single_ok = false;
        a.block_ok = false;
    }
    if line_breaks {
        a.block_plain = false;
    }
    if block_ind {
        a.block_plain = false;
    }
    a
}

#[derive(Clone, Copy, PartialEq)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

fn choose_style(s: &str, simple_key: bool) -> Style {
    let a = analyze(s);
    let mut style = if s.contains('\n') {
        Style::Literal
    } else if !needs_quotes_to_stay_string(s) {
        Style::Plain
    } else {
        Style::Double
    };
    if simple_key && a.multiline {
        style = Style::Double;
    }
    if style == Style::Plain && (!a.block_plain || (s.is_empty() && simple_key)) {
        style = Style::Single;
    }
    if style == Style::Single && !a.single_ok {
        style = Style::Double;
    }
    if style == Style::Literal && (!a.block_ok || simple_key) {
        style = Style::Double;
    }
    style
}

struct Writer {
    out: String,
    column: usize,
}

impl Writer {
    fn put(&mut self, s: &str) {
        self.out.push_str(s);
        match s.rfind('\n') {
            Some(i) => self.column = s[i + 1..].chars().count(),
            None => self.column += s.chars().count(),
        }
    }
    fn newline_indent(&mut self, indent: usize) {
        self.out.push('\n');
        self.indent_to(indent);
    }

    fn end_line(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    /// At the start of a line: writes `indent` spaces.
    fn indent_to(&mut self, indent: usize) {
        for _ in 0..indent {
            self.out.push(' ');
        }
        self.column = indent;
    }

    fn scalar(&mut self, s: &Scalar, indent: usize, simple_key: bool) {
        match s {
            Scalar::Null => self.put("null"),
            Scalar::Bool(b) => self.put(if *b { "true" } else { "false" }),
            Scalar::Int(i) => self.put(&i.to_string()),
            Scalar::Float(f) => self.put(&format_float(*f)),
            Scalar::Str(s) => self.string(s, indent, simple_key),
        }
    }

    fn string(&mut self, s: &str, indent: usize, simple_key: bool) {
        match choose_style(s, simple_key) {
            Style::Plain => {
                let chars: Vec<char> = s.chars().collect();
                let mut spaces = false;
                let mut buf = String::new();
                for i in 0..chars.len() {
                    let c = chars[i];
                    if c == ' ' {
                        let next_space = chars.get(i + 1) == Some(&' ');
                        if !simple_key && !spaces && self.column > BEST_WIDTH && !next_space {
                            self.newline_indent(indent);
                        } else {
                            buf.clear();
                            buf.push(c);
                            self.put(&buf);
                        }
                        spaces = true;
                    } else {
                        buf.clear();
                        buf.push(c);
                        self.put(&buf);
                        spaces = false;
                    }
                }
            }
            Style::Single => {
                self.put("'");
                let chars: Vec<char> = s.chars().collect();
                let mut spaces = false;
                let mut buf = String::new();
                for i in 0..chars.len() {
                    let c = chars[i];
                    if c == ' ' {
                        let next_space = chars.get(i + 1) == Some(&' ');
                        if !simple_key
                            && !spaces
                            && self.column > BEST_WIDTH
                            && i > 0
                            && i + 1 < chars.len()
                            && !next_space
                        {
                            self.newline_indent(indent);
                        } else {
                            self.put(" ");
                        }
                        spaces = true;
                    } else {
                        buf.clear();
                        if c == '\'' {
                            buf.push('\'');
                        }
                        buf.push(c);
                        self.put(&buf);
                        spaces = false;
                    }
                }
                self.put("'");
            }
            Style::Double => {
                self.put("\"");
                let chars: Vec<char> = s.chars().collect();
                let mut spaces = false;
                for i in 0..chars.len() {
                    let c = chars[i];
                    let u = c as u32;
                    if !is_printable(c)
                        || u == 0xFEFF
                        || c == '\n'
                        || c == '\r'
                        || u == 0x85
                        || u == 0x2028
                        || u == 0x2029
                        || c == '"'
                        || c == '\\'
                    {
                        let esc = match u {
                            0x00 => "\\0".to_string(),
                            0x07 => "\\a".into(),
                            0x08 => "\\b".into(),
                            0x09 => "\\t".into(),
                            0x0A => "\\n".into(),
                            0x0B => "\\v".into(),
                            0x0C => "\\f".into(),
                            0x0D => "\\r".into(),
                            0x1B => "\\e".into(),
                            0x22 => "\\\"".into(),
                            0x5C => "\\\\".into(),
                            0x85 => "\\N".into(),
                            0xA0 => "\\_".into(),
                            0x2028 => "\\L".into(),
                            0x2029 => "\\P".into(),
                            v if v <= 0xFF => format!("\\x{v:02X}"),
                            v if v <= 0xFFFF => format!("\\u{v:04X}"),
                            v => format!("\\U{v:08X}"),
                        };
                        self.put(&esc);
                        spaces = false;
                    } else if c == ' ' {
                        if !simple_key
                            && !spaces
                            && self.column > BEST_WIDTH
                            && i > 0
                            && i + 1 < chars.len()
                        {
                            self.newline_indent(indent);
                            if chars.get(i + 1) == Some(&' ') {
                                self.put("\\");
                            }
                        } else {
                            self.put(" ");
                        }
                        spaces = true;
                    } else {
                        self.put(&c.to_string());
                        spaces = false;
                    }
                }
                self.put("\"");
            }
            Style::Literal => {
                self.put("|");
                if s.starts_with(' ') || s.starts_with('\n') {
                    self.put("2");
                }
                let chomp = if !s.ends_with('\n') {
                    "-"
                } else if s == "\n" || s.ends_with("\n\n") {
                    "+"
                } else {
                    ""
                };
                self.put(chomp);
                let body = s;
                let mut at_line_start = true;
                self.end_line();
                for c in body.chars() {
                    if c == '\n' {
                        self.end_line();
                        at_line_start = true;
                    } else {
                        if at_line_start {
                            self.indent_to(indent);
                            at_line_start = false;
                        }
                        self.out.push(c);
                        self.column += 1;
                    }
                }
                // the caller adds the final newline; avoid doubling it
                if self.out.ends_with('\n') {
                    self.out.pop();
                }
            }
        }
    }

    /// Writes `val` whose first line continues the current one; `indent` is
    /// the indentation of the construct holding it.
    fn value(&mut self, val: &Val, indent: usize, in_seq: bool) {
        match val {
            Val::Scalar(s) => {
                self.scalar(s, indent + 2, false);
                self.end_line();
            }
            Val::Node(n) => self.node(n, indent, in_seq),
        }
    }

    fn node(&mut self, n: &Node, indent: usize, inline_first: bool) {
        match n.kind {
            Kind::Map => {
                if n.items.is_empty() {
                    self.put("{}");
                    self.end_line();
                    return;
                }
                for (i, it) in n.items.iter().enumerate() {
                    if i > 0 || !inline_first {
                        self.indent_to(indent);
                    }
                    self.scalar(&it.key, indent + 2, true);
                    self.put(":");
                    match &it.val {
                        Val::Node(v) if matches!(v.kind, Kind::Map) && !v.items.is_empty() => {
                            self.end_line();
                            self.node(v, indent + 2, false);
                        }
                        Val::Node(v) if matches!(v.kind, Kind::Array) && !v.items.is_empty() => {
                            self.end_line();
                            self.node(v, indent, false);
                        }
                        other => {
                            self.put(" ");
                            self.value(other, indent, false);
                        }
                    }
                }
            }
            Kind::Array => {
                if n.items.is_empty() {
                    self.put("[]");
                    self.end_line();
                    return;
                }
                for (i, it) in n.items.iter().enumerate() {
                    if i > 0 || !inline_first {
                        self.indent_to(indent);
                    }
                    self.put("- ");
                    match &it.val {
                        Val::Node(v)
                            if matches!(v.kind, Kind::Map | Kind::Array) && !v.items.is_empty() =>
                        {
                            self.node(v, indent + 2, true);
                        }
                        other => self.value(other, indent, true),
                    }
                }
            }
            _ => {
                self.put("null");
                self.end_line();
            }
        }
    }
}

/// Encodes one value as a YAML document body (no `---`).
pub fn encode_val(val: &Val) -> String {
    let mut w = Writer {
        out: String::new(),
        column: 0,
    };
    match val {
        Val::Scalar(s) => {
            w.scalar(s, 0, false);
            w.out.push('\n');
        }
        Val::Node(n) => w.node(n, 0, false),
    }
    w.out
}

/// Prints documents separated by `---`, skipping empty documents (null,
/// `{}`, `[]`) as ytt does.
pub fn encode_docs<'a>(docs: impl Iterator<Item = &'a Node>) -> String {
    let mut out = String::new();
    let mut first = true;
    for d in docs {
        let empty = match &d.val {
            Val::Scalar(Scalar::Null) => true,
            Val::Node(n) => matches!(n.kind, Kind::Map | Kind::Array) && n.items.is_empty(),
            _ => false,
        };
        if empty || d.injected {
            continue;
        }
        if !first {
            out.push_str("---\n");
        }
        first = false;
        out.push_str(&encode_val(&d.val));
    }
    out
}

/// The same documents as `-o json` prints them: one compact JSON text per
/// document with nothing between them, maps with sorted keys and strings
/// escaped as Go's `encoding/json` escapes them.
pub fn encode_docs_json<'a>(docs: impl Iterator<Item = &'a Node>) -> Result<String, String> {
    let mut out = String::new();
    for d in docs {
        let empty = match &d.val {
            Val::Scalar(Scalar::Null) => true,
            Val::Node(n) => matches!(n.kind, Kind::Map | Kind::Array) && n.items.is_empty(),
            _ => false,
        };
        if empty || d.injected {
            continue;
        }
        go_json(&d.val, &mut out)?;
    }
    Ok(out)
}

fn go_json_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Go's `encoding/json` float format: shortest digits, exponent form below
/// 1e-6 and from 1e21 on (`1e-7`, `1e+21`).
fn go_json_float(f: f64) -> Result<String, String> {
    if !f.is_finite() {
        return Err(format!("json: unsupported value: {}", format_float(f)));
    }
    let a = f.abs();
    if a != 0.0 && !(1e-6..1e21).contains(&a) {
        let e = format!("{f:e}");
        let (m, x) = e.split_once('e').unwrap_or((&e, "0"));
        let (sign, digits) = match x.strip_prefix('-') {
            Some(d) => ("-", d),
            None => ("+", x),
        };
        let digits = if sign == "+" && digits.len() < 2 {
            format!("0{digits}")
        } else {
            digits.to_string()
        };
        return Ok(format!("{m}e{sign}{digits}"));
    }
    Ok(format!("{f}"))
}

fn go_json(v: &Val, out: &mut String) -> Result<(), String> {
    match v {
        Val::Scalar(Scalar::Null) => out.push_str("null"),
        Val::Scalar(Scalar::Bool(b)) => out.push_str(if *b { "true" } else { "false" }),
        Val::Scalar(Scalar::Int(i)) => out.push_str(&i.to_string()),
        Val::Scalar(Scalar::Float(f)) => out.push_str(&go_json_float(*f)?),
        Val::Scalar(Scalar::Str(s)) => go_json_str(s, out),
        Val::Node(n) if n.kind == Kind::Map => {
            // Go maps: one entry per key (the last), sorted
            let mut items: Vec<(String, &Val)> = Vec::new();
            for i in &n.items {
                let k = i.key.display();
                match items.iter_mut().find(|(x, _)| *x == k) {
                    Some(e) => e.1 = &i.val,
                    None => items.push((k, &i.val)),
                }
            }
            items.sort_by(|a, b| a.0.cmp(&b.0));
            out.push('{');
            for (i, (k, v)) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json_str(k, out);
                out.push(':');
                go_json(v, out)?;
            }
            out.push('}');
        }
        Val::Node(n) => {
            out.push('[');
            for (i, it) in n.items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json(&it.val, out)?;
            }
            out.push(']');
        }
    }
    Ok(())
}

/// The documents as `-o pos` prints them: every line prefixed with the
/// source position of the node it comes from (ytt's FilePositionPrinter,
/// including its column width that grows by 10 past the widest position).
pub fn encode_docs_pos<'a>(docs: impl Iterator<Item = &'a Node>) -> String {
    struct P {
        out: String,
        width: usize,
    }
    impl P {
        fn pad(&mut self, s: &str) -> String {
            if s.len() > self.width {
                self.width = s.len() + 10;
            }
            format!("{s:>w$} | ", w = self.width)
        }
        fn line(&mut self, pos: &super::node::Pos) -> String {
            if pos.is_known() {
                let s = pos.to_string();
                self.pad(&s)
            } else {
                String::new()
            }
        }
        fn leaf(v: &Val) -> Option<String> {
            match v {
                Val::Scalar(s) => {
                    let e = encode_val(&Val::Scalar(s.clone()));
                    Some(e.strip_suffix('\n').unwrap_or(&e).to_string())
                }
                Val::Node(_) => None,
            }
        }
        fn val(&mut self, v: &Val, indent: &str) {
            match v {
                Val::Scalar(_) => {
                    let l = Self::leaf(v).unwrap_or_default();
                    let pad = self.pad("");
                    self.out.push_str(&format!("{pad}{indent}{l}\n"));
                }
                Val::Node(n) => {
                    let deeper = format!("{indent}  ");
                    for (i, it) in n.items.iter().enumerate() {
                        let head = match n.kind {
                            Kind::Map => format!("{}:", it.key.display()),
                            _ => format!("[{i}]"),
                        };
                        let line = self.line(&it.pos);
                        match Self::leaf(&it.val) {
                            Some(l) if !l.contains('\n') => {
                                self.out.push_str(&format!("{line}{indent}{head} {l}\n"));
                            }
                            _ => {
                                self.out.push_str(&format!("{line}{indent}{head}\n"));
                                self.val(&it.val, &deeper);
                            }
                        }
                    }
                }
            }
        }
    }
    let mut p = P {
        out: String::new(),
        width: 0,
    };
    for d in docs {
        let empty = match &d.val {
            Val::Scalar(Scalar::Null) => true,
            Val::Node(n) => matches!(n.kind, Kind::Map | Kind::Array) && n.items.is_empty(),
            _ => false,
        };
        if empty || d.injected {
            continue;
        }
        let line = p.line(&d.pos);
        p.out.push_str(&format!("{line}[doc]\n"));
        p.val(&d.val, "  ");
    }
    p.out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_output_like_go() {
        let v = super::super::yamlmeta::parse(
            "b: [1, 2.5, 1.0e-7, 1.0e+21, 100.0]\na: \"<&>\\x01\"\n---\n---\nx: null\n",
            "t",
            false,
        )
        .unwrap();
        assert_eq!(
            encode_docs_json(v.items.iter()).unwrap(),
            "{\"a\":\"\\u003c\\u0026\\u003e\\u0001\",\"b\":[1,2.5,1e-7,1e+21,100]}{\"x\":null}"
        );
    }

    #[test]
    fn floats_like_go() {
        assert_eq!(format_float(123.123), "123.123");
        assert_eq!(format_float(1.0), "1");
        assert_eq!(format_float(1e6), "1e+06");
        assert_eq!(format_float(0.00001), "1e-05");
        assert_eq!(format_float(123456.0), "123456");
        assert_eq!(format_float(0.5), "0.5");
    }

    #[test]
    fn quotes_only_when_needed() {
        let v = super::super::yamlmeta::parse(
            "a: \"123\"\nb: \"x\"\nc: \"\"\nd: \"a\\nb\\n\"\ne: [1]\n",
            "t",
            false,
        )
        .unwrap();
        assert_eq!(
            encode_docs(v.items.iter()),
            "a: \"123\"\nb: x\nc: \"\"\nd: |\n  a\n  b\ne:\n- 1\n"
        );
    }
}
