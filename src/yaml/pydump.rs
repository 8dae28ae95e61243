//! A YAML writer that produces the same bytes as PyYAML 6's pure-Python
//! `SafeDumper`, which is what Kapitan writes catalogs with. Migrating users
//! diff their old catalog against ours, so every rule of PyYAML's emitter
//! that can show up in a catalog is reproduced here: YAML 1.1 implicit
//! resolution (which strings need quotes), scalar analysis and style choice,
//! folding at 80 columns, block scalar headers, `...` after open-ended
//! documents, and Kapitan's `PrettyDumper` tweaks (indented sequences,
//! multiline strings as block scalars, `null` as empty).
//!
//! `crate::yaml::emit` stays the simple writer for strata's own output.

use crate::value::Value;
use std::borrow::Cow;

/// How Kapitan's `PrettyDumper` writes strings that contain a line break
/// (`--yaml-multiline-string-style`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MultilineStyle {
    Literal,
    Folded,
    DoubleQuotes,
}

impl MultilineStyle {
    /// Parses Kapitan's names (`literal`, `folded`, `double-quotes`).
    pub fn parse(s: &str) -> Option<MultilineStyle> {
        match s {
            "literal" => Some(MultilineStyle::Literal),
            "folded" => Some(MultilineStyle::Folded),
            "double-quotes" => Some(MultilineStyle::DoubleQuotes),
            _ => None,
        }
    }
}

/// Dumper settings. [`DumpOptions::kapitan`] is Kapitan's catalog writer,
/// [`DumpOptions::safe_dump`] is plain `yaml.safe_dump(default_flow_style=False)`.
#[derive(Debug, Clone)]
pub struct DumpOptions {
    /// Indentation step; PyYAML ignores values outside 2..=9 and uses 2.
    pub indent: usize,
    /// PyYAML's default: a sequence that is a mapping value is not indented.
    pub indentless_sequences: bool,
    /// `Some` when strings with a line break get a block/quoted style.
    pub multiline: Option<MultilineStyle>,
    /// Write `null` as nothing (`key:`), Kapitan's `--yaml-dump-null-as-empty`.
    pub null_as_empty: bool,
    /// Integral floats are written as integers: jsonnet numbers are doubles
    /// and Kapitan reads jsonnet's JSON output back with Python's `json`,
    /// which makes every integral number an `int`.
    pub integral_floats_as_ints: bool,
    /// Kapitan's `_helm_str_representer` for the `helm_values` file: a
    /// string of two or more digits that starts with `0` or is longer than
    /// 6 is single-quoted. helm's YAML reader took `03190301`, a string to
    /// PyYAML, for the number 3.190301e+06 (Kapitan issue 1370).
    pub quote_digit_strings: bool,
}

impl DumpOptions {
    pub fn kapitan(indent: usize, style: MultilineStyle, null_as_empty: bool) -> Self {
        DumpOptions {
            indent,
            indentless_sequences: false,
            multiline: Some(style),
            null_as_empty,
            integral_floats_as_ints: true,
            quote_digit_strings: false,
        }
    }

    pub fn safe_dump() -> Self {
        DumpOptions {
            indent: 2,
            indentless_sequences: true,
            multiline: None,
            null_as_empty: false,
            integral_floats_as_ints: false,
            quote_digit_strings: false,
        }
    }

    /// `yaml.dump(helm_values, Dumper=SafeDumper)` with Kapitan's string
    /// representer for helm (`write_helm_values_file`).
    pub fn helm_values() -> Self {
        DumpOptions {
            quote_digit_strings: true,
            ..Self::safe_dump()
        }
    }
}

/// `yaml.dump(value)`: one document.
pub fn dump(value: &Value, opts: &DumpOptions) -> String {
    dump_all(std::slice::from_ref(value), opts)
}

/// `yaml.dump_all(docs)`: one document per element.
pub fn dump_all(docs: &[Value], opts: &DumpOptions) -> String {
    let nodes: Vec<Node> = docs.iter().map(|d| represent(d, opts)).collect();
    let best_indent = if (2..10).contains(&opts.indent) {
        opts.indent
    } else {
        2
    };
    let mut e = Emitter {
        out: String::new(),
        best_indent,
        best_width: 80,
        indentless_sequences: opts.indentless_sequences,
        indent: None,
        indents: Vec::new(),
        column: 0,
        whitespace: true,
        indention: true,
        open_ended: false,
        root_context: false,
        mapping_context: false,
        simple_key_context: false,
    };
    e.emit_stream(&nodes);
    e.out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    Str,
    Other,
}

#[derive(Debug)]
struct Scalar<'a> {
    /// Borrowed from the value for strings: no copy per scalar.
    text: Cow<'a, str>,
    /// Characters in `text` (PyYAML counts code points).
    len: usize,
    /// Requested style: None (plain if possible), `|`, `>` or `"`.
    style: Option<char>,
    /// [`analyze`] of `text`, once per scalar: a mapping key's analysis is
    /// needed twice (simple-key check, then style).
    analysis: Analysis,
    /// No requested style and the plain text reads back with this tag
    /// (PyYAML's `implicit[0]`).
    implicit_plain: bool,
}

#[derive(Debug)]
enum Node<'a> {
    Scalar(Scalar<'a>),
    Seq(Vec<Node<'a>>),
    Map(Vec<(Node<'a>, Node<'a>)>),
}

fn scalar(text: Cow<'_, str>, tag: Tag, style: Option<char>) -> Node<'_> {
    let (analysis, len) = if simple_ascii(&text) {
        (Analysis::SIMPLE, text.len())
    } else {
        let chars: Vec<char> = text.chars().collect();
        (analyze(&chars), chars.len())
    };
    let implicit_plain = style.is_none()
        && match tag {
            Tag::Str => !resolves_to_non_string(&text),
            Tag::Other => true,
        };
    Node::Scalar(Scalar {
        text,
        len,
        style,
        analysis,
        implicit_plain,
    })
}

fn represent_str<'a>(s: &'a str, opts: &DumpOptions) -> Node<'a> {
    let style = match opts.multiline {
        Some(style) if s.contains('\n') => Some(match style {
            MultilineStyle::Literal => '|',
            MultilineStyle::Folded => '>',
            MultilineStyle::DoubleQuotes => '"',
        }),
        _ if opts.quote_digit_strings
            && s.len() > 1
            && s.bytes().all(|b| b.is_ascii_digit())
            && (s.starts_with('0') || s.len() > 6) =>
        {
            Some('\'')
        }
        _ => None,
    };
    scalar(Cow::Borrowed(s), Tag::Str, style)
}

fn represent<'a>(v: &'a Value, opts: &DumpOptions) -> Node<'a> {
    match v {
        Value::Null => scalar(
            Cow::Borrowed(if opts.null_as_empty { "" } else { "null" }),
            Tag::Other,
            None,
        ),
        Value::Bool(b) => scalar(
            Cow::Borrowed(if *b { "true" } else { "false" }),
            Tag::Other,
            None,
        ),
        Value::Int(i) => scalar(Cow::Owned(i.to_string()), Tag::Other, None),
        Value::Float(f) => {
            let text = if opts.integral_floats_as_ints {
                integral_text(*f).unwrap_or_else(|| yaml_float(*f))
            } else {
                yaml_float(*f)
            };
            scalar(Cow::Owned(text), Tag::Other, None)
        }
        Value::String(s) => represent_str(s, opts),
        Value::List(items) => Node::Seq(items.iter().map(|i| represent(i, opts)).collect()),
        Value::Map(m) => {
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            // Python sorts str by code point, which is UTF-8 byte order.
            entries.sort_by(|a, b| a.0.cmp(b.0));
            Node::Map(
                entries
                    .into_iter()
                    .map(|(k, v)| (represent_str(k, opts), represent(v, opts)))
                    .collect(),
            )
        }
    }
}

/// The full decimal digits of an integral, finite double (`-0` is `0`).
pub(crate) fn integral_text(f: f64) -> Option<String> {
    if f.is_finite() && f.fract() == 0.0 {
        if f == 0.0 {
            return Some("0".into());
        }
        Some(format!("{f:.0}"))
    } else {
        None
    }
}

pub(crate) use crate::yaml::{python_float_repr, yaml_float};

pub use crate::yaml::resolves_to_non_string;

#[derive(Debug)]
struct Analysis {
    empty: bool,
    multiline: bool,
    allow_block_plain: bool,
    allow_single_quoted: bool,
    allow_block: bool,
}

fn is_break(c: char) -> bool {
    matches!(c, '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn is_space_or_break0(c: char) -> bool {
    matches!(
        c,
        '\0' | ' ' | '\t' | '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

impl Analysis {
    /// What [`analyze`] finds for a [`simple_ascii`] text.
    const SIMPLE: Analysis = Analysis {
        empty: false,
        multiline: false,
        allow_block_plain: true,
        allow_single_quoted: true,
        allow_block: true,
    };
}

/// The common case (names, image tags, paths, versions): a letter or digit
/// first, then only letters, digits and `-_./`. No indicator, space, break
/// or character to escape, so [`analyze`] would find [`Analysis::SIMPLE`].
fn simple_ascii(s: &str) -> bool {
    s.as_bytes().first().is_some_and(u8::is_ascii_alphanumeric)
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b'/'))
}

fn analyze(s: &[char]) -> Analysis {
    if s.is_empty() {
        return Analysis {
            empty: true,
            multiline: false,
            allow_block_plain: true,
            allow_single_quoted: true,
            allow_block: false,
        };
    }
    let mut block_indicators = false;
    let mut line_breaks = false;
    let mut special = false;
    let (mut leading_space, mut leading_break) = (false, false);
    let (mut trailing_space, mut trailing_break) = (false, false);
    let (mut break_space, mut space_break) = (false, false);
    let starts = |p: &str| s.len() >= p.len() && s.iter().zip(p.chars()).all(|(a, b)| *a == b);
    if starts("---") || starts("...") {
        block_indicators = true;
    }
    let mut preceded_by_ws = true;
    let mut followed_by_ws = s.len() == 1 || is_space_or_break0(s[1]);
    let mut prev_space = false;
    let mut prev_break = false;
    let n = s.len();
    for (index, &ch) in s.iter().enumerate() {
        if index == 0 {
            if "#,[]{}&*!|>'\"%@`".contains(ch) {
                block_indicators = true;
            }
            if (ch == '?' || ch == ':') && followed_by_ws {
                block_indicators = true;
            }
            if ch == '-' && followed_by_ws {
                block_indicators = true;
            }
        } else {
            if ch == ':' && followed_by_ws {
                block_indicators = true;
            }
            if ch == '#' && preceded_by_ws {
                block_indicators = true;
            }
        }
        if is_break(ch) {
            line_breaks = true;
        }
        if !(ch == '\n' || ('\x20'..='\x7e').contains(&ch)) {
            // allow_unicode is off: every other character needs escaping.
            special = true;
        }
        if ch == ' ' {
            if index == 0 {
                leading_space = true;
            }
            if index == n - 1 {
                trailing_space = true;
            }
            if prev_break {
                break_space = true;
            }
            prev_space = true;
            prev_break = false;
        } else if is_break(ch) {
            if index == 0 {
                leading_break = true;
            }
            if index == n - 1 {
                trailing_break = true;
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
        preceded_by_ws = is_space_or_break0(ch);
        followed_by_ws = index + 2 >= n || is_space_or_break0(s[index + 2]);
    }
    let mut allow_block_plain = true;
    let mut allow_single_quoted = true;
    let mut allow_block = true;
    if leading_space || leading_break || trailing_space || trailing_break {
        allow_block_plain = false;
    }
    if trailing_space {
        allow_block = false;
    }
    if break_space {
        allow_block_plain = false;
        allow_single_quoted = false;
    }
    if space_break || special {
        allow_block_plain = false;
        allow_single_quoted = false;
        allow_block = false;
    }
    if line_breaks || block_indicators {
        allow_block_plain = false;
    }
    Analysis {
        empty: false,
        multiline: line_breaks,
        allow_block_plain,
        allow_single_quoted,
        allow_block,
    }
}

struct Emitter {
    out: String,
    best_indent: usize,
    best_width: usize,
    indentless_sequences: bool,
    indent: Option<usize>,
    indents: Vec<Option<usize>>,
    column: usize,
    whitespace: bool,
    indention: bool,
    open_ended: bool,
    root_context: bool,
    mapping_context: bool,
    simple_key_context: bool,
}

impl Emitter {
    fn emit_stream(&mut self, docs: &[Node]) {
        for (i, doc) in docs.iter().enumerate() {
            // Scalar events always carry a tag here, so PyYAML's "empty
            // document" check never fires and only later documents get `---`.
            if i > 0 {
                self.write_indent();
                self.write_indicator("---", true, false, false);
            }
            self.expect_node(doc, true, false, false);
            self.write_indent();
        }
        if self.open_ended {
            self.write_indicator("...", true, false, false);
            self.write_indent();
        }
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        match self.indent {
            None => self.indent = Some(if flow { self.best_indent } else { 0 }),
            Some(i) if !indentless => self.indent = Some(i + self.best_indent),
            Some(_) => {}
        }
    }

    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().flatten();
    }

    fn expect_node(&mut self, node: &Node, root: bool, mapping: bool, simple_key: bool) {
        self.root_context = root;
        self.mapping_context = mapping;
        self.simple_key_context = simple_key;
        match node {
            Node::Scalar(s) => {
                self.increase_indent(true, false);
                self.process_scalar(s);
                self.pop_indent();
            }
            Node::Seq(items) if items.is_empty() => {
                self.write_indicator("[", true, true, false);
                self.write_indicator("]", false, false, false);
            }
            Node::Map(entries) if entries.is_empty() => {
                self.write_indicator("{", true, true, false);
                self.write_indicator("}", false, false, false);
            }
            Node::Seq(items) => {
                let indentless =
                    self.indentless_sequences && self.mapping_context && !self.indention;
                self.increase_indent(false, indentless);
                for item in items {
                    self.write_indent();
                    self.write_indicator("-", true, false, true);
                    self.expect_node(item, false, false, false);
                }
                self.pop_indent();
            }
            Node::Map(entries) => {
                self.increase_indent(false, false);
                for (k, v) in entries {
                    self.write_indent();
                    if check_simple_key(k) {
                        self.expect_node(k, false, true, true);
                        self.write_indicator(":", false, false, false);
                        self.expect_node(v, false, true, false);
                    } else {
                        self.write_indicator("?", true, false, true);
                        self.expect_node(k, false, true, false);
                        self.write_indent();
                        self.write_indicator(":", true, false, true);
                        self.expect_node(v, false, true, false);
                    }
                }
                self.pop_indent();
            }
        }
    }

    fn choose_style(&self, s: &Scalar, a: &Analysis) -> char {
        if s.style == Some('"') {
            return '"';
        }
        if s.style.is_none()
            && s.implicit_plain
            && !(self.simple_key_context && (a.empty || a.multiline))
            && a.allow_block_plain
        {
            return ' ';
        }
        if let Some(st @ ('|' | '>')) = s.style {
            if !self.simple_key_context && a.allow_block {
                return st;
            }
        }
        // PyYAML: `if not style or style == "'"`.
        if matches!(s.style, None | Some('\''))
            && a.allow_single_quoted
            && !(self.simple_key_context && a.multiline)
        {
            return '\'';
        }
        '"'
    }

    fn process_scalar(&mut self, s: &Scalar) {
        let style = self.choose_style(s, &s.analysis);
        let split = !self.simple_key_context;
        if style == ' ' && !s.text.chars().any(|c| c == ' ' || is_break(c)) {
            // What `write_plain` does for a text without spaces or breaks.
            if self.root_context {
                self.open_ended = true;
            }
            if s.text.is_empty() {
                return;
            }
            if !self.whitespace {
                self.write_str(" ");
            }
            self.whitespace = false;
            self.indention = false;
            self.column += s.len;
            self.out.push_str(&s.text);
            return;
        }
        let text: Vec<char> = s.text.chars().collect();
        match style {
            '"' => self.write_double_quoted(&text, split),
            '\'' => self.write_single_quoted(&text, split),
            '>' => self.write_folded(&text),
            '|' => self.write_literal(&text),
            _ => self.write_plain(&text, split),
        }
    }

    fn write_raw(&mut self, data: &[char]) {
        self.column += data.len();
        self.out.extend(data.iter());
    }

    fn write_str(&mut self, data: &str) {
        self.column += data.chars().count();
        self.out.push_str(data);
    }

    fn write_indicator(&mut self, ind: &str, need_ws: bool, whitespace: bool, indention: bool) {
        if !self.whitespace && need_ws {
            self.out.push(' ');
            self.column += 1;
        }
        self.out.push_str(ind);
        self.column += ind.chars().count();
        self.whitespace = whitespace;
        self.indention = self.indention && indention;
        self.open_ended = false;
    }

    fn write_indent(&mut self) {
        let indent = self.indent.unwrap_or(0);
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.write_line_break(None);
        }
        if self.column < indent {
            self.whitespace = true;
            for _ in self.column..indent {
                self.out.push(' ');
            }
            self.column = indent;
        }
    }

    fn write_line_break(&mut self, br: Option<char>) {
        self.out.push(br.unwrap_or('\n'));
        self.whitespace = true;
        self.indention = true;
        self.column = 0;
    }

    fn write_breaks(&mut self, text: &[char]) {
        for &br in text {
            self.write_line_break(if br == '\n' { None } else { Some(br) });
        }
    }

    fn write_plain(&mut self, text: &[char], split: bool) {
        if self.root_context {
            self.open_ended = true;
        }
        if text.is_empty() {
            return;
        }
        if !self.whitespace {
            self.write_str(" ");
        }
        self.whitespace = false;
        self.indention = false;
        // Without spaces or breaks the loop below writes the text in one go.
        if !text.iter().any(|&c| c == ' ' || is_break(c)) {
            self.write_raw(text);
            return;
        }
        let (mut spaces, mut breaks) = (false, false);
        let (mut start, mut end) = (0usize, 0usize);
        while end <= text.len() {
            let ch = text.get(end).copied();
            if spaces {
                if ch != Some(' ') {
                    if start + 1 == end && self.column > self.best_width && split {
                        self.write_indent();
                        self.whitespace = false;
                        self.indention = false;
                    } else {
                        self.write_raw(&text[start..end]);
                    }
                    start = end;
                }
            } else if breaks {
                if !ch.is_some_and(is_break) {
                    if text[start] == '\n' {
                        self.write_line_break(None);
                    }
                    self.write_breaks(&text[start..end]);
                    self.write_indent();
                    self.whitespace = false;
                    self.indention = false;
                    start = end;
                }
            } else if ch.is_none_or(|c| c == ' ' || is_break(c)) {
                self.write_raw(&text[start..end]);
                start = end;
            }
            if let Some(c) = ch {
                spaces = c == ' ';
                breaks = is_break(c);
            }
            end += 1;
        }
    }

    fn write_single_quoted(&mut self, text: &[char], split: bool) {
        self.write_indicator("'", true, false, false);
        let (mut spaces, mut breaks) = (false, false);
        let (mut start, mut end) = (0usize, 0usize);
        while end <= text.len() {
            let ch = text.get(end).copied();
            if spaces {
                if ch != Some(' ') {
                    if start + 1 == end
                        && self.column > self.best_width
                        && split
                        && start != 0
                        && end != text.len()
                    {
                        self.write_indent();
                    } else {
                        self.write_raw(&text[start..end]);
                    }
                    start = end;
                }
            } else if breaks {
                if !ch.is_some_and(is_break) {
                    if text[start] == '\n' {
                        self.write_line_break(None);
                    }
                    self.write_breaks(&text[start..end]);
                    self.write_indent();
                    start = end;
                }
            } else if ch.is_none_or(|c| c == ' ' || is_break(c) || c == '\'') && start < end {
                self.write_raw(&text[start..end]);
                start = end;
            }
            if ch == Some('\'') {
                self.write_str("''");
                start = end + 1;
            }
            if let Some(c) = ch {
                spaces = c == ' ';
                breaks = is_break(c);
            }
            end += 1;
        }
        self.write_indicator("'", false, false, false);
    }

    fn write_double_quoted(&mut self, text: &[char], split: bool) {
        self.write_indicator("\"", true, false, false);
        let (mut start, mut end) = (0usize, 0usize);
        while end <= text.len() {
            let ch = text.get(end).copied();
            let needs_escape = match ch {
                None => true,
                Some(c) => {
                    matches!(
                        c,
                        '"' | '\\' | '\u{85}' | '\u{2028}' | '\u{2029}' | '\u{feff}'
                    ) || !('\x20'..='\x7e').contains(&c)
                }
            };
            if needs_escape {
                if start < end {
                    self.write_raw(&text[start..end]);
                    start = end;
                }
                if let Some(c) = ch {
                    let esc = match c {
                        '\0' => "\\0".to_string(),
                        '\x07' => "\\a".into(),
                        '\x08' => "\\b".into(),
                        '\t' => "\\t".into(),
                        '\n' => "\\n".into(),
                        '\x0b' => "\\v".into(),
                        '\x0c' => "\\f".into(),
                        '\r' => "\\r".into(),
                        '\x1b' => "\\e".into(),
                        '"' => "\\\"".into(),
                        '\\' => "\\\\".into(),
                        '\u{85}' => "\\N".into(),
                        '\u{a0}' => "\\_".into(),
                        '\u{2028}' => "\\L".into(),
                        '\u{2029}' => "\\P".into(),
                        c if (c as u32) <= 0xff => format!("\\x{:02X}", c as u32),
                        c if (c as u32) <= 0xffff => format!("\\u{:04X}", c as u32),
                        c => format!("\\U{:08X}", c as u32),
                    };
                    self.write_str(&esc);
                    start = end + 1;
                }
            }
            if 0 < end
                && end + 1 < text.len()
                && (ch == Some(' ') || start >= end)
                && self.column + end.saturating_sub(start) > self.best_width
                && split
            {
                let mut data: Vec<char> = if start < end {
                    text[start..end].to_vec()
                } else {
                    Vec::new()
                };
                data.push('\\');
                if start < end {
                    start = end;
                }
                self.write_raw(&data);
                self.write_indent();
                self.whitespace = false;
                self.indention = false;
                if text.get(start) == Some(&' ') {
                    self.write_str("\\");
                }
            }
            end += 1;
        }
        self.write_indicator("\"", false, false, false);
    }

    fn block_hints(&self, text: &[char]) -> String {
        let mut hints = String::new();
        if let (Some(&first), Some(&last)) = (text.first(), text.last()) {
            if first == ' ' || is_break(first) {
                hints.push_str(&self.best_indent.to_string());
            }
            if !is_break(last) {
                hints.push('-');
            } else if text.len() == 1 || is_break(text[text.len() - 2]) {
                hints.push('+');
            }
        }
        hints
    }

    fn write_folded(&mut self, text: &[char]) {
        let hints = self.block_hints(text);
        self.write_indicator(&format!(">{hints}"), true, false, false);
        if hints.ends_with('+') {
            self.open_ended = true;
        }
        self.write_line_break(None);
        let mut leading_space = true;
        let (mut spaces, mut breaks) = (false, true);
        let (mut start, mut end) = (0usize, 0usize);
        while end <= text.len() {
            let ch = text.get(end).copied();
            if breaks {
                if !ch.is_some_and(is_break) {
                    if !leading_space && ch.is_some_and(|c| c != ' ') && text[start] == '\n' {
                        self.write_line_break(None);
                    }
                    leading_space = ch == Some(' ');
                    self.write_breaks(&text[start..end]);
                    if ch.is_some() {
                        self.write_indent();
                    }
                    start = end;
                }
            } else if spaces {
                if ch != Some(' ') {
                    if start + 1 == end && self.column > self.best_width {
                        self.write_indent();
                    } else {
                        self.write_raw(&text[start..end]);
                    }
                    start = end;
                }
            } else if ch.is_none_or(|c| c == ' ' || is_break(c)) {
                self.write_raw(&text[start..end]);
                if ch.is_none() {
                    self.write_line_break(None);
                }
                start = end;
            }
            if let Some(c) = ch {
                breaks = is_break(c);
                spaces = c == ' ';
            }
            end += 1;
        }
    }

    fn write_literal(&mut self, text: &[char]) {
        let hints = self.block_hints(text);
        self.write_indicator(&format!("|{hints}"), true, false, false);
        if hints.ends_with('+') {
            self.open_ended = true;
        }
        self.write_line_break(None);
        let mut breaks = true;
        let (mut start, mut end) = (0usize, 0usize);
        while end <= text.len() {
            let ch = text.get(end).copied();
            if breaks {
                if !ch.is_some_and(is_break) {
                    self.write_breaks(&text[start..end]);
                    if ch.is_some() {
                        self.write_indent();
                    }
                    start = end;
                }
            } else if ch.is_none_or(is_break) {
                // PyYAML does not advance the column here; nothing after a
                // literal line depends on it because a break follows.
                self.out.extend(text[start..end].iter());
                if ch.is_none() {
                    self.write_line_break(None);
                }
                start = end;
            }
            if let Some(c) = ch {
                breaks = is_break(c);
            }
            end += 1;
        }
    }
}

fn check_simple_key(k: &Node) -> bool {
    match k {
        Node::Scalar(s) => {
            let a = &s.analysis;
            s.len < 128 && !a.empty && !a.multiline
        }
        Node::Seq(items) => items.is_empty(),
        Node::Map(entries) => entries.is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Map;

    fn map(entries: &[(&str, Value)]) -> Value {
        Value::Map(
            entries
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect::<Map>(),
        )
    }
    /// kapicorp/kapitan tests/test_resources `helm-string-values`: the
    /// values file said `numeric_string: 03190301` (a string to PyYAML) and
    /// helm rendered `NUMERIC_STRING: '3.190301e+06'` where Kapitan gives
    /// `03190301`. Expected text: Kapitan 0.36.3's `_helm_str_representer`
    /// on SafeDumper (and plain `safe_dump` for the second half).
    #[test]
    fn helm_values_quote_digit_strings_as_kapitan_does() {
        let v = map(&[
            ("a", s("03190301")),
            ("b", s("0755")),
            ("c", s("00000000")),
            ("d", s("1234567")),
            ("e", s("123456")),
            ("f", s("0")),
            ("g", s("08")),
            ("h", s("09:30")),
            ("i", s("0x1F")),
            ("j", s("hello")),
            ("k", Value::List(vec![s("0189"), s("12345678901234567890")])),
            ("0123456789", Value::Int(1)),
            ("l", s("\u{661}\u{662}")),
            ("m", s("0999")),
        ]);
        assert_eq!(
            dump(&v, &DumpOptions::helm_values()),
            "'0123456789': 1\na: '03190301'\nb: '0755'\nc: '00000000'\nd: '1234567'\ne: '123456'\nf: '0'\ng: '08'\nh: 09:30\ni: '0x1F'\nj: hello\nk:\n- '0189'\n- '12345678901234567890'\nl: \"\\u0661\\u0662\"\nm: '0999'\n"
        );
        assert_eq!(
            dump(&v, &DumpOptions::safe_dump()),
            "0123456789: 1\na: 03190301\nb: '0755'\nc: '00000000'\nd: '1234567'\ne: '123456'\nf: '0'\ng: 08\nh: 09:30\ni: '0x1F'\nj: hello\nk:\n- 0189\n- '12345678901234567890'\nl: \"\\u0661\\u0662\"\nm: 0999\n"
        );
    }

    fn s(x: &str) -> Value {
        Value::String(x.into())
    }
    fn kap() -> DumpOptions {
        DumpOptions::kapitan(2, MultilineStyle::Literal, false)
    }

    #[test]
    fn sorted_keys_and_indented_sequences() {
        let v = map(&[
            (
                "b",
                Value::List(vec![
                    Value::Int(1),
                    map(&[("y", s("1")), ("x", Value::Null)]),
                ]),
            ),
            ("a", map(&[])),
            ("c", Value::List(vec![])),
            (
                "d",
                Value::List(vec![Value::List(vec![Value::Int(1), Value::Int(2)])]),
            ),
        ]);
        assert_eq!(
            dump(&v, &kap()),
            "a: {}\nb:\n  - 1\n  - x: null\n    y: '1'\nc: []\nd:\n  - - 1\n    - 2\n"
        );
        assert_eq!(
            dump(&v, &DumpOptions::safe_dump()),
            "a: {}\nb:\n- 1\n- x: null\n  y: '1'\nc: []\nd:\n- - 1\n  - 2\n"
        );
    }

    #[test]
    fn indent_four() {
        let v = map(&[(
            "a",
            Value::List(vec![map(&[("k", Value::Int(1)), ("l", Value::Int(2))])]),
        )]);
        let o = DumpOptions::kapitan(4, MultilineStyle::Literal, false);
        assert_eq!(dump(&v, &o), "a:\n    -   k: 1\n        l: 2\n");
    }

    #[test]
    fn yaml11_quoting() {
        for q in [
            "yes",
            "on",
            "true",
            "null",
            "~",
            "",
            "123",
            "-1",
            "+1",
            "012",
            "0x1F",
            "1_000",
            "1.5",
            ".inf",
            "2021-01-01",
            "12:30",
            "190:20:30",
            "=",
            "<<",
            "0o17",
        ] {
            assert!(resolves_to_non_string(q), "{q}");
        }
        for p in [
            "y",
            "Y",
            "n",
            "1e3",
            "1.0e3",
            "0o18",
            "1.2.3",
            "10.0.0.1",
            "8080:80",
            "0123456789",
            "v1.2.3",
            "100m",
        ] {
            assert!(!resolves_to_non_string(p), "{p}");
        }
        let v = map(&[
            ("a", s("yes")),
            ("b", s("it's")),
            ("c", s("'q")),
            ("d", s("café")),
        ]);
        assert_eq!(
            dump(&v, &kap()),
            "a: 'yes'\nb: it's\nc: '''q'\nd: \"caf\\xE9\"\n"
        );
    }

    #[test]
    fn multidoc_and_open_ended() {
        let docs = vec![map(&[("a", Value::Int(1))]), s("last")];
        assert_eq!(dump_all(&docs, &kap()), "a: 1\n--- last\n...\n");
        let docs = vec![Value::Null, s("a string"), Value::Int(42)];
        assert_eq!(dump_all(&docs, &kap()), "null\n--- a string\n--- 42\n...\n");
        let docs = vec![s("first"), map(&[("b", Value::Int(2))])];
        assert_eq!(dump_all(&docs, &kap()), "first\n---\nb: 2\n");
    }

    #[test]
    fn block_scalars() {
        let v = map(&[
            ("keep", s("a\nb\n")),
            ("strip", s("a\nb")),
            ("extra", s("a\n\n")),
            ("lead", s("  x\ny\n")),
        ]);
        assert_eq!(
            dump(&v, &kap()),
            "extra: |+\n  a\n\nkeep: |\n  a\n  b\nlead: |2\n    x\n  y\nstrip: |-\n  a\n  b\n"
        );
        // PyYAML's plain safe_dump single-quotes multiline strings.
        let v = map(&[("a", s("l1\nl2\n"))]);
        assert_eq!(
            dump(&v, &DumpOptions::safe_dump()),
            "a: 'l1\n\n  l2\n\n  '\n"
        );
    }

    #[test]
    fn floats_like_python() {
        assert_eq!(python_float_repr(1e-5), "1e-05");
        assert_eq!(python_float_repr(0.0001), "0.0001");
        assert_eq!(python_float_repr(1.0 / 3.0), "0.3333333333333333");
        assert_eq!(python_float_repr(1e16), "1e+16");
        assert_eq!(python_float_repr(123456789.123), "123456789.123");
        assert_eq!(yaml_float(1e-7), "1.0e-07");
        assert_eq!(yaml_float(-1.5e-10), "-1.5e-10");
        assert_eq!(integral_text(-0.0).as_deref(), Some("0"));
        assert_eq!(
            integral_text(2f64.powi(64)).as_deref(),
            Some("18446744073709551616")
        );
    }

    #[test]
    fn folding_long_plain_at_80() {
        let words = vec!["lorem"; 30].join(" ");
        let v = map(&[("long_plain", s(&words))]);
        assert_eq!(
            dump(&v, &kap()),
            "long_plain: lorem lorem lorem lorem lorem lorem lorem lorem lorem lorem lorem lorem\n  lorem lorem lorem lorem lorem lorem lorem lorem lorem lorem lorem lorem lorem lorem\n  lorem lorem lorem lorem\n"
        );
    }

    #[test]
    fn null_as_empty() {
        let v = map(&[
            ("a", Value::Null),
            ("b", Value::List(vec![Value::Null, Value::Int(1)])),
        ]);
        let o = DumpOptions::kapitan(2, MultilineStyle::Literal, true);
        assert_eq!(dump(&v, &o), "a:\nb:\n  -\n  - 1\n");
        let docs = vec![
            map(&[("x", Value::Null)]),
            Value::Null,
            map(&[("y", Value::Int(1))]),
        ];
        assert_eq!(dump_all(&docs, &o), "x:\n---\n---\ny: 1\n");
    }
}
