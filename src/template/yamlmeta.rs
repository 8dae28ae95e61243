//! Reads YAML the way ytt does: YAML 1.1 scalars (go-yaml v2 rules), every
//! document, map item and array item with its line, and every comment
//! attached to a node (same-line comments to the innermost node on the line,
//! comments above a node to the outermost node on the next line with nodes;
//! trailing comments to an injected empty document).

use super::node::{Comment, Kind, Node, Pos, Scalar, Val};
use std::collections::HashMap;
use std::sync::Arc;
use yaml_rust2::parser::{Event, MarkedEventReceiver, Tag};
use yaml_rust2::scanner::{Marker, TScalarStyle};

#[derive(Debug, Clone, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct ParseError {
    pub file: String,
    pub line: usize,
    pub message: String,
}

enum Frame {
    Map {
        node: Node,
        key: Option<(Scalar, usize)>,
        anchor: usize,
        col: usize,
    },
    Seq {
        node: Node,
        anchor: usize,
        col: usize,
    },
}

struct Builder<'a> {
    file: Arc<str>,
    lines: &'a [&'a str],
    docs: Vec<Node>,
    stack: Vec<Frame>,
    doc_line: usize,
    doc_explicit: bool,
    doc_val: Option<(Val, usize)>,
    anchors: HashMap<usize, Val>,
    block_scalars: Vec<usize>,
    error: Option<String>,
    error_line: usize,
    strict: bool,
}

impl Builder<'_> {
    fn push_val(&mut self, v: Val, line: usize, col: usize, anchor: usize) {
        if anchor > 0 {
            self.anchors.insert(anchor, v.clone());
        }
        match self.stack.last_mut() {
            None => self.doc_val = Some((v, line)),
            Some(Frame::Seq {
                node, col: seq_col, ..
            }) => {
                let _ = col;
                let from = node
                    .items
                    .last()
                    .map(|i| i.pos.line + 1)
                    .unwrap_or(node.pos.line);
                let l = dash_line(self.lines, from, line, *seq_col);
                node.items
                    .push(Node::array_item(v, Pos::new(&self.file, l)));
            }
            Some(Frame::Map { node, key, .. }) => match key.take() {
                None => match v {
                    Val::Scalar(s) => *key = Some((s, line)),
                    Val::Node(_) => {
                        if self.error.is_none() {
                            self.error = Some("complex map keys are not supported".into());
                            self.error_line = line;
                        }
                        *key = Some((Scalar::Null, line));
                    }
                },
                Some((k, kline)) => {
                    node.items
                        .push(Node::map_item(k, v, Pos::new(&self.file, kline)));
                }
            },
        }
    }
}

impl MarkedEventReceiver for Builder<'_> {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        let line = mark.line();
        match ev {
            Event::DocumentStart => {
                self.doc_line = line;
                let text = self.lines.get(line.wrapping_sub(1)).copied().unwrap_or("");
                self.doc_explicit = text.trim_start().starts_with("---");
                self.doc_val = None;
            }
            Event::DocumentEnd => {
                let pos = if self.doc_explicit {
                    Pos::new(&self.file, self.doc_line)
                } else if self.docs.is_empty() {
                    Pos {
                        file: self.file.clone(),
                        line: 0,
                    }
                } else {
                    Pos::new(&self.file, self.doc_line)
                };
                let val = self.doc_val.take().map(|(v, _)| v).unwrap_or(Val::null());
                self.docs.push(Node::doc(val, pos));
            }
            Event::Scalar(text, style, anchor, tag) => {
                if matches!(style, TScalarStyle::Literal | TScalarStyle::Folded) {
                    self.block_scalars.push(line);
                }
                let s = match resolve_scalar(&text, style, tag.as_ref()) {
                    Ok(s) => s,
                    Err(e) => {
                        if self.error.is_none() {
                            self.error = Some(e);
                            self.error_line = line;
                        }
                        Scalar::Null
                    }
                };
                if self.strict && style == TScalarStyle::Plain && tag.is_none() {
                    if let Some(e) = strict_check(&text) {
                        if self.error.is_none() {
                            self.error = Some(e);
                            self.error_line = line;
                        }
                    }
                }
                self.push_val(Val::Scalar(s), line, mark.col(), anchor);
            }
            Event::Alias(id) => {
                let v = self.anchors.get(&id).cloned().unwrap_or(Val::null());
                self.push_val(v, line, mark.col(), 0);
            }
            Event::SequenceStart(anchor, _) => {
                let col = seq_indicator_col(self.lines, line, mark.col());
                self.stack.push(Frame::Seq {
                    node: Node::array(Pos::new(&self.file, line)),
                    anchor,
                    col,
                })
            }
            Event::MappingStart(anchor, _) => self.stack.push(Frame::Map {
                node: Node::map(Pos::new(&self.file, line)),
                key: None,
                anchor,
                col: mark.col(),
            }),
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some(f) = self.stack.pop() {
                    let (mut node, anchor, col) = match f {
                        Frame::Map {
                            node, anchor, col, ..
                        } => (node, anchor, col),
                        Frame::Seq { node, anchor, col } => (node, anchor, col),
                    };
                    if node.kind == Kind::Map {
                        apply_merge_keys(&mut node);
                    }
                    let l = node.pos.line;
                    self.push_val(Val::Node(Box::new(node)), l, col, anchor);
                }
            }
            _ => {}
        }
    }
}

fn apply_merge_keys(map: &mut Node) {
    if !map
        .items
        .iter()
        .any(|i| matches!(&i.key, Scalar::Str(k) if k == "<<"))
    {
        return;
    }
    // as go-yaml: merged keys take the place of `<<`, explicit keys override
    // them in place
    let mut out: Vec<Node> = Vec::new();
    for it in std::mem::take(&mut map.items) {
        if matches!(&it.key, Scalar::Str(k) if k == "<<") {
            let srcs: Vec<Node> = match &it.val {
                Val::Node(n) if n.kind == Kind::Map => vec![(**n).clone()],
                Val::Node(n) if n.kind == Kind::Array => n
                    .items
                    .iter()
                    .filter_map(|i| i.val.as_node().cloned())
                    .collect(),
                _ => vec![],
            };
            for src in srcs {
                for mi in src.items {
                    if !out.iter().any(|o| o.key.same(&mi.key)) {
                        out.push(mi);
                    }
                }
            }
        } else if let Some(i) = out.iter().position(|o| o.key.same(&it.key)) {
            out[i] = it;
        } else {
            out.push(it);
        }
    }
    map.items = out;
}

/// Column of the `-` indicators of a block sequence whose start event was
/// reported at (line, col) (the scanner's position, not the indicator's);
/// `usize::MAX` for flow sequences.
fn seq_indicator_col(lines: &[&str], line: usize, col: usize) -> usize {
    let Some(text) = lines.get(line.wrapping_sub(1)) else {
        return usize::MAX;
    };
    if col > 0 && text.as_bytes().get(col - 1) == Some(&b'[') {
        return usize::MAX;
    }
    let mut l = line;
    while l >= 1 {
        let t = lines[l - 1];
        let trimmed = t.trim_start();
        if trimmed.starts_with('-') {
            return t.len() - trimmed.len();
        }
        if !(trimmed.is_empty() || trimmed.starts_with('#')) && l != line {
            break;
        }
        l -= 1;
    }
    usize::MAX
}

/// The line of the `-` that introduces the next block sequence item: the
/// first line from `from` on with `-` in the sequence's indicator column
/// (go-yaml positions items there; empty values report a later line).
fn dash_line(lines: &[&str], from: usize, value_line: usize, seq_col: usize) -> usize {
    if seq_col == usize::MAX {
        return value_line;
    }
    let mut l = from.max(1);
    while l <= value_line {
        if let Some(t) = lines.get(l - 1) {
            let b = t.as_bytes();
            if b.get(seq_col) == Some(&b'-')
                && matches!(
                    b.get(seq_col + 1),
                    None | Some(b' ') | Some(b'\t') | Some(b'\r')
                )
                && b[..seq_col].iter().all(|c| *c == b' ' || *c == b'-')
            {
                return l;
            }
        }
        l += 1;
    }
    value_line
}

/// go-yaml's wording for the common scanner errors (what ytt users see).
fn go_yaml_wording(info: &str) -> String {
    if info.starts_with("unexpected character") {
        return format!("found character that cannot start any token ({info})");
    }
    if info.contains("simple key expect") || info.contains("could not find expected ':'") {
        return format!("could not find expected ':' ({info})");
    }
    info.to_string()
}

fn tag_name(tag: &Tag) -> String {
    let full = format!("{}{}", tag.handle, tag.suffix);
    match full.strip_prefix("tag:yaml.org,2002:") {
        Some(s) => format!("!!{s}"),
        None => full,
    }
}

fn resolve_scalar(text: &str, style: TScalarStyle, tag: Option<&Tag>) -> Result<Scalar, String> {
    if let Some(tag) = tag {
        let t = tag_name(tag);
        return match t.as_str() {
            "!!str" | "!" => Ok(Scalar::Str(text.to_string())),
            "!!null" => Ok(Scalar::Null),
            "!!bool" | "!!int" | "!!float" => {
                let r = resolve_plain(text);
                match (t.as_str(), r) {
                    ("!!bool", r @ Scalar::Bool(_)) => Ok(r),
                    ("!!int", r @ Scalar::Int(_)) => Ok(r),
                    ("!!float", Scalar::Int(i)) => Ok(Scalar::Float(i as f64)),
                    ("!!float", r @ Scalar::Float(_)) => Ok(r),
                    // The value is not quoted: it may be a password
                    // (`password: !!int hunter2`); the caller names the line.
                    (_, r) => Err(format!(
                        "cannot decode a {} value as a {t} (value not shown): fix the value or remove the tag",
                        tag_of(&r)
                    )),
                }
            }
            _ => Ok(Scalar::Str(text.to_string())),
        };
    }
    if style != TScalarStyle::Plain {
        return Ok(Scalar::Str(text.to_string()));
    }
    Ok(resolve_plain(text))
}

fn tag_of(s: &Scalar) -> &'static str {
    match s {
        Scalar::Null => "!!null",
        Scalar::Bool(_) => "!!bool",
        Scalar::Int(_) => "!!int",
        Scalar::Float(_) => "!!float",
        Scalar::Str(_) => "!!str",
    }
}

fn strict_check(text: &str) -> Option<String> {
    let amb = [
        "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off",
        "OFF",
    ];
    if amb.contains(&text) {
        return Some(format!(
            "Found '{text}' ambigious (could be !!str or !!bool)"
        ));
    }
    None
}

/// Parses an integer the way Go's `strconv.ParseInt(s, 0, 64)` does.
pub fn parse_go_int(s: &str) -> Option<i64> {
    let (neg, rest) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if rest.is_empty() {
        return None;
    }
    let (radix, digits) = if let Some(d) = rest.strip_prefix("0x").or(rest.strip_prefix("0X")) {
        (16, d)
    } else if let Some(d) = rest.strip_prefix("0o").or(rest.strip_prefix("0O")) {
        (8, d)
    } else if let Some(d) = rest.strip_prefix("0b").or(rest.strip_prefix("0B")) {
        (2, d)
    } else if rest.len() > 1 && rest.starts_with('0') {
        (8, &rest[1..])
    } else {
        (10, rest)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let v = i128::from_str_radix(digits, radix).ok()?;
    let v = if neg { -v } else { v };
    i64::try_from(v).ok()
}

fn is_yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
        i += 1;
    }
    let start = i;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let d = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == d {
            return false;
        }
    } else {
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return false;
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
            i += 1;
        }
        let d = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == d {
            return false;
        }
    }
    i == b.len()
}

/// Whether a plain string looks like a go-yaml timestamp (then it is
/// quoted on output).
pub fn looks_like_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 8 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-' && {
        let rest = &s[5..];
        let mut parts = rest.splitn(2, '-');
        let m = parts.next().unwrap_or("");
        let d = parts.next().unwrap_or("");
        let dd: String = d.chars().take_while(|c| c.is_ascii_digit()).collect();
        !m.is_empty()
            && m.len() <= 2
            && m.chars().all(|c| c.is_ascii_digit())
            && !dd.is_empty()
            && dd.len() <= 2
            && (d.len() == dd.len() || matches!(d.as_bytes()[dd.len()], b'T' | b't' | b' '))
    }
}

/// YAML 1.1 plain scalar resolution as go-yaml v2 does it.
pub fn resolve_plain(s: &str) -> Scalar {
    match s {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Scalar::Bool(true)
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Scalar::Bool(false)
        }
        "" | "~" | "null" | "Null" | "NULL" => return Scalar::Null,
        ".nan" | ".NaN" | ".NAN" => return Scalar::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Scalar::Float(f64::INFINITY)
        }
        "-.inf" | "-.Inf" | "-.INF" => return Scalar::Float(f64::NEG_INFINITY),
        _ => {}
    }
    let first = s.as_bytes()[0];
    if first == b'.' {
        if is_yaml_style_float(s) {
            if let Ok(f) = s.parse::<f64>() {
                return Scalar::Float(f);
            }
        }
        return Scalar::Str(s.to_string());
    }
    if first.is_ascii_digit() || first == b'-' || first == b'+' {
        let plain = s.replace('_', "");
        if let Some(i) = parse_go_int(&plain) {
            return Scalar::Int(i);
        }
        if is_yaml_style_float(&plain) {
            if let Ok(f) = plain.parse::<f64>() {
                return Scalar::Float(f);
            }
        }
    }
    Scalar::Str(s.to_string())
}

/// Whether a string would read back as something else than a string.
pub fn needs_quotes_to_stay_string(s: &str) -> bool {
    !matches!(resolve_plain(s), Scalar::Str(_)) || looks_like_timestamp(s) || is_base60_float(s)
}

fn is_base60_float(s: &str) -> bool {
    // go-yaml: ^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
        i += 1;
    }
    if i >= b.len() || !b[i].is_ascii_digit() {
        return false;
    }
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while i < b.len() && b[i] == b':' {
        i += 1;
        let d = i;
        while i < b.len() && b[i].is_ascii_digit() && i - d < 2 {
            i += 1;
        }
        if i == d {
            return false;
        }
        if i - d == 2 && b[d] > b'5' {
            return false;
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

/// Finds the comment on a line: `#` at the start or after a blank, outside
/// quotes. Returns (byte offset of '#', text after '#').
fn find_comment(line: &str) -> Option<(usize, &str)> {
    let b = line.as_bytes();
    let mut in_s = false;
    let mut in_d = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if in_d {
            if c == b'\\' {
                i += 2;
                continue;
            }
            if c == b'"' {
                in_d = false;
            }
        } else if in_s {
            if c == b'\'' {
                in_s = false;
            }
        } else if c == b'#' && (i == 0 || b[i - 1] == b' ' || b[i - 1] == b'\t') {
            return Some((i, &line[i + 1..]));
        } else if c == b'"'
            && (i == 0 || matches!(b[i - 1], b' ' | b'\t' | b'[' | b'{' | b',' | b':' | b'-'))
        {
            in_d = true;
        } else if c == b'\''
            && (i == 0 || matches!(b[i - 1], b' ' | b'\t' | b'[' | b'{' | b',' | b':' | b'-'))
        {
            in_s = true;
        }
        i += 1;
    }
    None
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// Parses a file into a document set with comments attached.
pub fn parse(text: &str, file: &str, strict: bool) -> Result<Node, ParseError> {
    let file: Arc<str> = Arc::from(file);
    let lines: Vec<&str> = text.split('\n').collect();
    let mut b = Builder {
        file: file.clone(),
        lines: &lines,
        docs: Vec::new(),
        stack: Vec::new(),
        doc_line: 0,
        doc_explicit: false,
        doc_val: None,
        anchors: HashMap::new(),
        block_scalars: Vec::new(),
        error: None,
        error_line: 0,
        strict,
    };
    // The shared driver bounds nesting and alias expansion.
    let driven = crate::yaml::drive(text, &mut b, |b| {
        b.error.as_ref().map(|m| crate::yaml::YamlError {
            message: m.clone(),
            line: b.error_line,
            col: 0,
        })
    });
    if let Err(e) = driven {
        if b.error.is_none() {
            return Err(ParseError {
                file: file.to_string(),
                line: e.line,
                message: format!("yaml: line {}: {}", e.line, go_yaml_wording(&e.message)),
            });
        }
    }
    if let Some(msg) = b.error.take() {
        return Err(ParseError {
            file: file.to_string(),
            line: b.error_line,
            message: msg,
        });
    }
    // Lines inside block scalars carry no comments.
    let mut skip = vec![false; lines.len() + 2];
    for &l in &b.block_scalars {
        // the parser's mark may be past the `|`/`>` line: go back to it
        let mut h = l;
        while h > 1 && !lines.get(h - 1).is_some_and(|t| is_block_head(t)) {
            h -= 1;
        }
        if !lines
            .get(h.wrapping_sub(1))
            .is_some_and(|t| is_block_head(t))
        {
            h = l;
        }
        let Some(head) = lines.get(h.wrapping_sub(1)) else {
            continue;
        };
        let base = indent_of(head);
        let mut i = h; // 0-based index of the next line
        while i < lines.len() {
            let t = lines[i];
            if t.trim().is_empty() || indent_of(t) > base {
                skip[i + 1] = true;
                i += 1;
            } else {
                break;
            }
        }
    }
    let mut comments = Vec::new();
    for (idx, line) in lines.iter().enumerate() {
        let ln = idx + 1;
        if skip[ln] {
            continue;
        }
        if let Some((_, data)) = find_comment(line) {
            comments.push(Comment {
                data: data.trim_end_matches('\r').to_string(),
                pos: Pos::new(&file, ln),
            });
        }
    }
    let mut root = Node::new(Kind::DocSet, Pos::new(&file, 0));
    root.items = std::mem::take(&mut b.docs);
    attach_comments(&mut root, comments);
    // ytt presents an implicit first document at line 1 (after comments
    // were attached, which must not see it)
    if let Some(first) = root.items.first_mut() {
        if !first.pos.is_known() && !first.injected && first.comments.is_empty() {
            first.pos.line = 1;
        }
    }
    Ok(root)
}

/// A line that opens a block scalar: ends with `|` or `>` and optional
/// chomping/indentation indicators (and maybe a comment).
fn is_block_head(line: &str) -> bool {
    let code = match find_comment(line) {
        Some((at, _)) => &line[..at],
        None => line,
    };
    let t = code
        .trim_end()
        .trim_end_matches(|c: char| c == '-' || c == '+' || c.is_ascii_digit());
    (t.ends_with('|') || t.ends_with('>'))
        && t[..t.len() - 1]
            .chars()
            .last()
            .is_none_or(|c| c == ' ' || c == ':' || c == '-')
}

fn collect_lines(n: &Node, path: &mut Vec<usize>, out: &mut Vec<(usize, Vec<usize>)>) {
    if n.kind != Kind::DocSet && n.pos.is_known() && n.kind != Kind::Map && n.kind != Kind::Array {
        out.push((n.pos.line, path.clone()));
    }
    let children: &[Node] = match &n.val {
        Val::Node(v) if n.has_value_slot() => &v.items,
        _ => &n.items,
    };
    for (i, c) in children.iter().enumerate() {
        path.push(i);
        collect_lines(c, path, out);
        path.pop();
    }
}

pub fn node_at_mut<'a>(root: &'a mut Node, path: &[usize]) -> &'a mut Node {
    let mut cur = root;
    for &i in path {
        cur = if cur.has_value_slot() {
            match &mut cur.val {
                Val::Node(v) => &mut v.items[i],
                Val::Scalar(_) => unreachable!("path into a scalar"),
            }
        } else {
            &mut cur.items[i]
        };
    }
    cur
}

fn attach_comments(root: &mut Node, comments: Vec<Comment>) {
    let mut at = Vec::new();
    collect_lines(root, &mut Vec::new(), &mut at);
    // first and last node (pre-order) per line
    let mut by_line: std::collections::BTreeMap<usize, (Vec<usize>, Vec<usize>)> =
        std::collections::BTreeMap::new();
    for (l, p) in at {
        by_line
            .entry(l)
            .and_modify(|e| e.1 = p.clone())
            .or_insert((p.clone(), p));
    }
    let mut trailing = Vec::new();
    for c in comments {
        match by_line.range(c.pos.line..).next() {
            Some((&l, (first, last))) => {
                let p = if l == c.pos.line {
                    last.clone()
                } else {
                    first.clone()
                };
                node_at_mut(root, &p).comments.push(c);
            }
            None => trailing.push(c),
        }
    }
    if !trailing.is_empty() {
        let mut d = Node::doc(Val::null(), Pos::unknown());
        d.pos.file = root.pos.file.clone();
        d.comments = trailing;
        d.injected = true;
        root.items.push(d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml11_scalars() {
        assert_eq!(resolve_plain("yes"), Scalar::Bool(true));
        assert_eq!(resolve_plain("010"), Scalar::Int(8));
        assert_eq!(resolve_plain("0x1F"), Scalar::Int(31));
        assert_eq!(resolve_plain("1e3"), Scalar::Float(1000.0));
        assert_eq!(resolve_plain("~"), Scalar::Null);
        assert_eq!(resolve_plain("abc"), Scalar::Str("abc".into()));
        assert!(looks_like_timestamp("2006-01-02"));
        assert!(is_base60_float("1:20"));
    }

    /// `password: !!int <value>`: the error names the tag, not the value.
    #[test]
    fn tag_errors_quote_no_value() {
        for tag in ["!!int", "!!float", "!!bool"] {
            let err = parse(
                &format!("password: {tag} Tok3n-S3cret-333\n"),
                "t.yml",
                false,
            )
            .err()
            .unwrap_or_else(|| panic!("{tag} must not parse"));
            let text = format!("{err:?} {err}");
            assert!(!text.contains("Tok3n"), "{text}");
            assert!(text.contains(&format!("as a {tag}")), "{text}");
        }
    }

    #[test]
    fn attaches_comments() {
        let d = parse("#@ load('x')\na: 1 #@ v\nb:\n- 1\n#@ end\n", "t.yml", false).unwrap();
        let doc = &d.items[0];
        let map = doc.val.as_node().unwrap();
        assert_eq!(map.items[0].comments.len(), 2);
        assert_eq!(d.items.len(), 2);
        assert!(d.items[1].injected);
    }
}

#[cfg(test)]
mod dash_tests {
    use super::*;

    #[test]
    fn dash_on_own_line() {
        let d = parse("a:\n#@ x\n-\n  #@ y\n  b: 1\n", "t.yml", false).unwrap();
        let arr = d.items[0].val.as_node().unwrap().items[0]
            .val
            .as_node()
            .unwrap();
        assert_eq!(arr.items[0].pos.line, 3);
        assert_eq!(arr.items[0].comments.len(), 1);
    }
}
