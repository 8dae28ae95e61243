//! Turns an annotated YAML document set into a Starlark program, as ytt
//! does: `#@` code lines become statements, every node becomes a
//! `__ytt_tpl_start_node(tag)` call (so loops and conditions can repeat or
//! skip it), `key: #@ expr` becomes `__ytt_tpl_set_node(tag, (expr))`, and
//! other annotations are evaluated with `__ytt_tpl_start_node_annotation`.
//! ytt's Starlark closes blocks with `end`; we re-indent instead.

use super::node::{Kind, Node, Pos, Val};

/// Template node table entry: the node without children, and its parent.
#[derive(Debug, Clone)]
pub struct TplNode {
    pub node: Node,
    pub parent: Option<usize>,
    /// The node carries its whole (comment-free) subtree: one instruction
    /// places it, no code is generated for its children.
    pub static_subtree: bool,
}

/// Whether any comment sits on `n` or below.
fn has_comments(n: &Node) -> bool {
    !n.comments.is_empty()
        || n.val.as_node().map(has_comments).unwrap_or(false)
        || n.items.iter().any(has_comments)
}

#[derive(Debug)]
pub struct Compiled {
    pub file_id: usize,
    pub name: String,
    pub nodes: Vec<TplNode>,
    pub code: String,
    /// Starlark line (1-based) -> source line, for error messages.
    pub line_map: Vec<usize>,
}

#[derive(Debug, thiserror::Error)]
#[error("{pos}: {message}")]
pub struct CompileError {
    pub pos: Pos,
    pub message: String,
}

pub const TAG_SHIFT: u64 = 1 << 32;

#[derive(Debug, Clone, PartialEq)]
enum LineKind {
    Code,
    Node,
}

struct Line {
    text: String,
    kind: LineKind,
    src: usize,
}

struct Builder {
    file_id: usize,
    nodes: Vec<TplNode>,
    lines: Vec<Line>,
    ignore_unknown: bool,
}

/// What a comment means.
pub enum Meta {
    Comment,
    Code(String),
    Value(String),
    Ann(String, String),
}

pub fn classify(data: &str, same_line: bool, ignore_unknown: bool) -> Result<Meta, String> {
    if let Some(rest) = data.strip_prefix('!') {
        let _ = rest;
        return Ok(Meta::Comment);
    }
    if let Some(rest) = data.strip_prefix('@') {
        let (name, content) = match rest.split_once(' ') {
            Some((n, c)) => (n, c),
            None => (rest, ""),
        };
        if name == "comment" {
            // `#@comment ...` is ytt's annotation form of a comment
            return Ok(Meta::Comment);
        }
        if name.is_empty() {
            return Ok(if same_line {
                Meta::Value(content.to_string())
            } else {
                Meta::Code(content.to_string())
            });
        }
        return Ok(Meta::Ann(name.to_string(), content.to_string()));
    }
    if ignore_unknown {
        return Ok(Meta::Comment);
    }
    Err(
        "Expected ytt-formatted string (use '#@' for annotations or code, '#!' for comments)"
            .into(),
    )
}

impl Builder {
    fn tag(&self, idx: usize) -> u64 {
        self.file_id as u64 * TAG_SHIFT + idx as u64
    }

    fn push(&mut self, text: String, kind: LineKind, src: usize) {
        self.lines.push(Line { text, kind, src });
    }

    fn build(&mut self, node: &Node, parent: Option<usize>) -> Result<(), CompileError> {
        self.build_opts(node, parent, false)
    }

    fn build_opts(
        &mut self,
        node: &Node,
        parent: Option<usize>,
        text_strings: bool,
    ) -> Result<(), CompileError> {
        let text_strings = text_strings
            || node.comments.iter().any(|c| {
                c.data
                    .strip_prefix('@')
                    .map(|d| d.split(' ').next() == Some("yaml/text-templated-strings"))
                    .unwrap_or(false)
            });
        if !text_strings
            && parent.is_some()
            && matches!(node.kind, Kind::MapItem | Kind::ArrayItem)
            && !has_comments(node)
        {
            let idx = self.nodes.len();
            self.nodes.push(TplNode {
                node: node.clone(),
                parent,
                static_subtree: true,
            });
            let tag = self.tag(idx);
            let line = if node.pos.is_known() {
                node.pos.line
            } else {
                0
            };
            self.push(format!("__ytt_tpl_start_node({tag})"), LineKind::Node, line);
            return Ok(());
        }
        let mut codes = Vec::new();
        let mut values = Vec::new();
        let mut anns = Vec::new();
        let mut needs_end = 0;
        for c in &node.comments {
            let same = node.pos.is_known() && c.pos.line == node.pos.line;
            let meta = classify(&c.data, same, self.ignore_unknown).map_err(|m| CompileError {
                pos: c.pos.clone(),
                message: format!("Failed to parse line {}: '#{}': {}", c.pos.line, c.data, m),
            })?;
            match meta {
                Meta::Comment => {}
                Meta::Value(v) => {
                    let has_yaml_value = match &node.val {
                        Val::Scalar(s) => node.has_value_slot() && *s != super::node::Scalar::Null,
                        Val::Node(_) => true,
                    } || (!node.has_value_slot() && !node.items.is_empty());
                    if has_yaml_value {
                        return Err(CompileError {
                            pos: c.pos.clone(),
                            message: format!(
                                "Expected YAML node at line {} to have either computed or YAML value, but found both",
                                c.pos
                            ),
                        });
                    }
                    values.push((v, c.pos.line));
                }
                Meta::Code(code) => {
                    if needs_end > 0 {
                        return Err(CompileError {
                            pos: c.pos.clone(),
                            message: format!(
                                "Unexpected code at line {} after use of '*/end', expected YAML node",
                                c.pos
                            ),
                        });
                    }
                    let trimmed = code.trim_start();
                    let mut code = code.clone();
                    for kw in ["if/end", "else/end", "elif/end", "for/end", "def/end"] {
                        if trimmed.starts_with(kw) {
                            needs_end += 1;
                            code = code.replacen(kw, &kw[..kw.len() - 4], 1);
                        }
                    }
                    codes.push((code, c.pos.line));
                }
                Meta::Ann(name, content) => anns.push((name, content, c.pos.line)),
            }
        }
        // a shallow copy: children are compiled as their own nodes
        let mut tnode = Node::new(node.kind, node.pos.clone());
        tnode.key = node.key.clone();
        tnode.injected = node.injected;
        if let Val::Scalar(sc) = &node.val {
            tnode.val = Val::Scalar(sc.clone());
        }
        let idx = self.nodes.len();
        self.nodes.push(TplNode {
            node: tnode,
            parent,
            static_subtree: false,
        });
        let tag = self.tag(idx);
        for (c, l) in codes {
            self.push(c, LineKind::Code, l);
        }
        for (name, content, l) in &anns {
            self.nodes[idx].node.anns.push(super::node::Ann {
                name: name.clone(),
                args: vec![],
                kwargs: vec![],
                pos: Pos::new(&node.pos.file, *l),
            });
            self.push(
                format!(
                    "__ytt_tpl_start_node_annotation({tag}, {:?}, __ytt_tpl_collect_node_annotation({}))",
                    name, content
                ),
                LineKind::Code,
                *l,
            );
        }
        let line = if node.pos.is_known() {
            node.pos.line
        } else {
            0
        };
        if text_strings && node.kind == Kind::MapItem {
            if let super::node::Scalar::Str(k) = &node.key {
                if k.contains("(@") {
                    self.build_text(k, line, &node.pos)?;
                    self.push(
                        format!("__ytt_tpl_set_map_item_key({tag}, (__ytt_tpl_end_ctx()))"),
                        LineKind::Node,
                        line,
                    );
                }
            }
        }
        self.push(format!("__ytt_tpl_start_node({tag})"), LineKind::Node, line);
        if !values.is_empty() {
            for (v, l) in values {
                self.push(
                    format!("__ytt_tpl_set_node({tag}, ({v}))"),
                    LineKind::Node,
                    l,
                );
            }
        } else if node.has_value_slot() {
            match &node.val {
                Val::Node(child) => self.build_opts(child, Some(idx), text_strings)?,
                Val::Scalar(super::node::Scalar::Str(sv)) if text_strings && sv.contains("(@") => {
                    self.build_text(sv, line, &node.pos)?;
                    self.push(
                        format!("__ytt_tpl_set_node({tag}, (__ytt_tpl_end_ctx()))"),
                        LineKind::Node,
                        line,
                    );
                }
                Val::Scalar(_) => {
                    self.push(format!("__ytt_tpl_set_node({tag})"), LineKind::Node, line)
                }
            }
        } else {
            for child in &node.items {
                self.build_opts(child, Some(idx), text_strings)?;
            }
        }
        for _ in 0..needs_end {
            self.push("end".into(), LineKind::Code, 0);
        }
        Ok(())
    }
}

/// Strips a trailing `# comment` outside strings (rough: enough to see
/// whether a code line opens a block).
fn code_without_comment(s: &str) -> &str {
    let end = code_bytes(s)
        .find(|&(_, c)| c == b'#')
        .map_or(s.len(), |(i, _)| i);
    &s[..end]
}

/// The bytes of a line of code outside string literals, with their
/// offsets, comment included.
fn code_bytes(s: &str) -> impl Iterator<Item = (usize, u8)> + '_ {
    let b = s.as_bytes();
    let mut q: Option<u8> = None;
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < b.len() {
            let (at, c) = (i, b[i]);
            i += 1;
            match q {
                Some(qc) => {
                    if c == b'\\' {
                        i += 1;
                    } else if c == qc {
                        q = None;
                    }
                }
                None if c == b'"' || c == b'\'' => q = Some(c),
                None => return Some((at, c)),
            }
        }
        None
    })
}

fn first_word(s: &str) -> &str {
    let s = s.trim_start();
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// Re-indents ytt's `end`-terminated code and wraps functions that build
/// YAML in their own evaluation context.
fn layout(
    lines: Vec<Line>,
    line_map: &mut Vec<usize>,
    lenient_end: bool,
) -> Result<String, String> {
    // 1. depth of each line
    struct L {
        depth: usize,
        text: String,
        kind: LineKind,
        src: usize,
    }
    let mut out: Vec<L> = Vec::new();
    let mut depth = 0usize;
    let mut body_has_stmt: Vec<bool> = Vec::new();
    let mut paren = 0i32;
    let mut continued = false;
    for line in lines {
        if continued {
            // a backslash continuation keeps its text as written
            continued = line.text.trim_end().ends_with('\\');
            if let Some(last) = out.last_mut() {
                last.text.push('\n');
                last.text.push_str(&line.text);
            }
            continue;
        }
        let t = line.text.trim().to_string();
        continued = line.kind == LineKind::Code && t.ends_with('\\');
        if paren > 0 {
            // continuation of a bracketed expression
            paren += bracket_delta(&t);
            out.push(L {
                depth,
                text: t,
                kind: line.kind,
                src: line.src,
            });
            continue;
        }
        if t.is_empty() {
            continue;
        }
        let w = first_word(&t);
        if t == "end" || (w == "end" && code_without_comment(&t).trim() == "end") {
            if depth == 0 {
                return Err("unexpected end".into());
            }
            if body_has_stmt.pop() == Some(false) {
                out.push(L {
                    depth,
                    text: "pass".into(),
                    kind: LineKind::Code,
                    src: line.src,
                });
            }
            depth -= 1;
            continue;
        }
        let is_cont = matches!(w, "elif" | "else");
        let d = if is_cont {
            depth.saturating_sub(1)
        } else {
            depth
        };
        if is_cont {
            if body_has_stmt.last() == Some(&false) {
                out.push(L {
                    depth,
                    text: "pass".into(),
                    kind: LineKind::Code,
                    src: line.src,
                });
            }
            if let Some(b) = body_has_stmt.last_mut() {
                *b = false;
            }
        } else if let Some(b) = body_has_stmt.last_mut() {
            *b = true;
        }
        let bare = code_without_comment(&t).trim_end().to_string();
        if matches!(w, "if" | "for" | "def" | "elif" | "while")
            && paren == 0
            && bracket_delta(&bare) == 0
            && !bare.ends_with(':')
            && !(w == "def" && bare.contains("):"))
        {
            return Err(
                "got newline, want ':' (hint: missing colon at the end of 'if/for/def' statement?)"
                    .into(),
            );
        }
        if w == "pass" && bare == "pass" {
            return Err("use of reserved keyword 'pass' is not allowed".into());
        }
        paren += bracket_delta(&bare);
        let opens = bare.ends_with(':') && paren == 0;
        out.push(L {
            depth: d,
            text: t,
            kind: line.kind,
            src: line.src,
        });
        if opens && !is_cont {
            depth += 1;
            body_has_stmt.push(false);
        } else if opens && is_cont {
            // body of else/elif: already counted
        }
    }
    if depth > 0 && !lenient_end {
        return Err(
            "mismatched set of block openings (if/else/elif/for/def) and closing (end)".into(),
        );
    }
    while depth > 0 {
        if body_has_stmt.pop() == Some(false) {
            out.push(L {
                depth,
                text: "pass".into(),
                kind: LineKind::Code,
                src: 0,
            });
        }
        depth -= 1;
    }
    // 2. functions that build YAML get their own context
    let n = out.len();
    let mut insert_after: Vec<(usize, usize)> = Vec::new(); // (index, depth) start_ctx
    let mut append_at: Vec<(usize, usize)> = Vec::new(); // (index after body, depth)
    let mut returns: Vec<usize> = Vec::new();
    for i in 0..n {
        if first_word(&out[i].text) != "def" {
            continue;
        }
        let d = out[i].depth;
        let mut j = i + 1;
        let mut uses = false;
        let mut rets = Vec::new();
        let mut nested_def_depth: Option<usize> = None;
        while j < n && out[j].depth > d {
            if let Some(nd) = nested_def_depth {
                if out[j].depth <= nd {
                    nested_def_depth = None;
                }
            }
            if nested_def_depth.is_none() {
                if first_word(&out[j].text) == "def" {
                    nested_def_depth = Some(out[j].depth);
                } else {
                    if out[j].kind == LineKind::Node {
                        uses = true;
                    }
                    if first_word(&out[j].text) == "return" {
                        rets.push(j);
                    }
                }
            }
            j += 1;
        }
        if uses {
            insert_after.push((i, d + 1));
            append_at.push((j, d + 1));
            returns.extend(rets);
        }
    }
    for r in returns {
        let t = out[r].text.clone();
        let rest = t.trim_start().strip_prefix("return").unwrap_or("").trim();
        let rest = code_without_comment(rest).trim();
        out[r].text = if rest.is_empty() {
            "return __ytt_tpl_end_ctx()".into()
        } else {
            format!("return __ytt_tpl_end_ctx(({rest}))")
        };
    }
    let mut result = String::new();
    line_map.clear();
    let mut emit = |depth: usize, text: &str, src: usize, result: &mut String| {
        for _ in 0..depth {
            result.push_str("    ");
        }
        result.push_str(text);
        result.push('\n');
        line_map.push(src);
    };
    for (i, l) in out.iter().enumerate() {
        for &(j, d) in append_at.iter().filter(|(j, _)| *j == i) {
            let _ = j;
            emit(d, "return __ytt_tpl_end_ctx()", l.src, &mut result);
        }
        emit(l.depth, &l.text, l.src, &mut result);
        for &(_, d) in insert_after.iter().filter(|(k, _)| *k == i) {
            emit(d, "__ytt_tpl_start_ctx()", l.src, &mut result);
        }
    }
    for &(_, d) in append_at.iter().filter(|(j, _)| *j == n) {
        emit(d, "return __ytt_tpl_end_ctx()", 0, &mut result);
    }
    Ok(result)
}

fn bracket_delta(s: &str) -> i32 {
    code_bytes(s)
        .take_while(|&(_, c)| c != b'#')
        .map(|(_, c)| match c {
            b'(' | b'[' | b'{' => 1,
            b')' | b']' | b'}' => -1,
            _ => 0,
        })
        .sum()
}

/// starlark-rust's `f(**x)` and `dict(x)` take only a dict (or pairs),
/// where ytt (starlark-go) takes any mapping: a YAML map fragment, data
/// values, a struct, an overlay `via` argument. Wrap every call-site
/// `**expr` as `**__ytt_kw(expr)` and the positional argument of
/// `dict(expr, ...)` as `__ytt_kw(expr)`, which turns such maps into dicts;
/// `def f(**kw)` and `lambda **kw:` stay.
pub fn rewrite_kwargs_splat(code: &str) -> String {
    if !code.contains("**") && !code.contains("dict(") {
        return code.to_string();
    }
    // structural bytes only: outside strings and comments
    let mut toks: Vec<(usize, u8)> = Vec::new();
    let mut comment = false;
    for (at, c) in code_bytes(code) {
        if comment {
            if c == b'\n' {
                comment = false;
                toks.push((at, c));
            }
            continue;
        }
        if c == b'#' {
            comment = true;
            continue;
        }
        toks.push((at, c));
    }
    let mut inserts: Vec<(usize, &str)> = Vec::new();
    // `dict(` (not `.dict(`, not `def dict(`) with a positional argument
    for (i, &(at, c)) in toks.iter().enumerate() {
        // Bytes, not `&code[at - 4..at]`: `at - 4` may fall inside a
        // multi-byte character (found by fuzzing).
        if c != b'(' || !code.as_bytes()[..at].ends_with(b"dict") {
            continue;
        }
        let before = &code[..at - 4];
        if before
            .chars()
            .last()
            .is_some_and(|ch| ch.is_alphanumeric() || ch == '_' || ch == '.')
            || before.trim_end().ends_with("def")
        {
            continue;
        }
        let mut depth = 0i32;
        let mut end = None;
        for &(p, b) in &toks[i + 1..] {
            match b {
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' if depth == 0 => {
                    end = Some(p);
                    break;
                }
                b')' | b']' | b'}' => depth -= 1,
                b',' if depth == 0 => {
                    end = Some(p);
                    break;
                }
                _ => {}
            }
        }
        let Some(end) = end else { continue };
        let arg = code[at + 1..end].trim();
        let is_kwarg = {
            let name_end = arg
                .find(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
                .unwrap_or(arg.len());
            name_end > 0
                && arg[name_end..].trim_start().starts_with('=')
                && !arg[name_end..].trim_start().starts_with("==")
        };
        if arg.is_empty() || arg.starts_with('*') || is_kwarg {
            continue;
        }
        inserts.push((at + 1, "__ytt_kw("));
        inserts.push((end, ")"));
    }
    let mut k = 0;
    while k + 1 < toks.len() {
        let (at, c) = toks[k];
        if !(c == b'*' && toks[k + 1] == (at + 1, b'*')) {
            k += 1;
            continue;
        }
        // the enclosing bracket (or the statement start)
        let mut depth = 0i32;
        let mut open: Option<usize> = None;
        let mut j = k;
        while j > 0 {
            j -= 1;
            let (p, b) = toks[j];
            match b {
                b')' | b']' | b'}' => depth += 1,
                b'(' | b'[' | b'{' if depth == 0 => {
                    open = Some(p);
                    break;
                }
                b'(' | b'[' | b'{' => depth -= 1,
                _ => {}
            }
        }
        let seg_start = open
            .map(|p| p + 1)
            .unwrap_or_else(|| code[..at].rfind('\n').map(|p| p + 1).unwrap_or(0));
        let is_def = open.is_some_and(|p| {
            let before = code[..p].trim_end();
            // After the last non-word character, whatever its width
            // (`+ 1` split a multi-byte one: found by fuzzing).
            let word_start = before
                .char_indices()
                .rev()
                .find(|&(_, ch)| !(ch.is_alphanumeric() || ch == '_'))
                .map(|(x, ch)| x + ch.len_utf8())
                .unwrap_or(0);
            code[..word_start].trim_end().ends_with("def")
        });
        let seg = &code[seg_start..at];
        let is_lambda = seg.rfind("lambda").is_some_and(|l| !seg[l..].contains(':'));
        if is_def || is_lambda {
            k += 2;
            continue;
        }
        // the splatted expression ends at `,` or the closing bracket
        let mut depth = 0i32;
        let mut end = code.len();
        let mut m = k + 2;
        while m < toks.len() {
            let (p, b) = toks[m];
            match b {
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' if depth == 0 => {
                    end = p;
                    break;
                }
                b')' | b']' | b'}' => depth -= 1,
                b',' | b'\n' if depth == 0 => {
                    end = p;
                    break;
                }
                _ => {}
            }
            m += 1;
        }
        inserts.push((at + 2, "__ytt_kw("));
        inserts.push((end, ")"));
        k += 2;
    }
    inserts.sort_by_key(|(p, _)| *p);
    let mut out = String::with_capacity(code.len() + inserts.len() * 10);
    let mut last = 0;
    for (p, t) in inserts {
        out.push_str(&code[last..p]);
        out.push_str(t);
        last = p;
    }
    out.push_str(&code[last..]);
    out
}

/// starlark-rust reserves `assert`, which ytt code uses as the name of the
/// `@ytt:assert` module: rename the identifier outside string literals.
pub fn rewrite_reserved(code: &str) -> String {
    if !code.contains("assert") {
        return code.to_string();
    }
    let b = code.as_bytes();
    let mut out = String::with_capacity(code.len() + 16);
    let mut i = 0;
    let mut last = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'#' {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'"' || c == b'\'' {
            let triple = i + 2 < b.len() && b[i + 1] == c && b[i + 2] == c;
            let start = i;
            if triple {
                i += 3;
                while i + 2 < b.len() && !(b[i] == c && b[i + 1] == c && b[i + 2] == c) {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 3;
            } else {
                i += 1;
                while i < b.len() && b[i] != c && b[i] != b'\n' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            let lit = &code[start..i.min(b.len())];
            if lit == "\"assert\"" || lit == "'assert'" {
                // a load() symbol: bind it under the renamed identifier
                let before = code[..start].trim_end();
                if before.ends_with(',') && code[..start].contains("load(") {
                    out.push_str(&code[last..start]);
                    out.push_str("__ytt_assert=\"assert_\"");
                    last = i.min(b.len());
                }
            }
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let prev_dot = start > 0 && b[start - 1] == b'.';
            if &code[start..i] == "assert" && !prev_dot {
                out.push_str(&code[last..start]);
                out.push_str("__ytt_assert");
                last = i;
            }
            continue;
        }
        i += 1;
    }
    out.push_str(&code[last.min(code.len())..]);
    out
}

/// Compiles a parsed YAML template.
pub fn compile_yaml(
    docset: &Node,
    file_id: usize,
    name: &str,
    ignore_unknown: bool,
) -> Result<Compiled, CompileError> {
    let mut b = Builder {
        file_id,
        nodes: Vec::new(),
        lines: Vec::new(),
        ignore_unknown,
    };
    b.push("__ytt_tpl_start_ctx()".into(), LineKind::Code, 0);
    b.build(docset, None)?;
    b.push("__ytt_tpl_end_ctx_root()".into(), LineKind::Code, 0);
    let mut line_map = Vec::new();
    let code = layout(b.lines, &mut line_map, false).map_err(|m| CompileError {
        pos: Pos::new(&docset.pos.file, 0),
        message: m,
    })?;
    Ok(Compiled {
        file_id,
        name: name.to_string(),
        nodes: b.nodes,
        code: rewrite_kwargs_splat(&rewrite_reserved(&code)),
        line_map,
    })
}

/// Compiles a `.star` file: plain Starlark.
pub fn compile_star(text: &str, file_id: usize, name: &str) -> Result<Compiled, CompileError> {
    // ytt's Starlark closes blocks with `end`; lay it out like template code
    let lines: Vec<Line> = text
        .lines()
        .enumerate()
        .map(|(i, l)| Line {
            text: l.to_string(),
            kind: LineKind::Code,
            src: i + 1,
        })
        .collect();
    let mut line_map = Vec::new();
    let code = layout(lines, &mut line_map, true).map_err(|m| CompileError {
        pos: Pos::new(&std::sync::Arc::from(name), 0),
        message: m,
    })?;
    Ok(Compiled {
        file_id,
        name: name.to_string(),
        nodes: Vec::new(),
        code: rewrite_kwargs_splat(&rewrite_reserved(&code)),
        line_map,
    })
}

/// Whether any comment below asks for templating (`#@`).
pub fn has_templating(n: &Node) -> bool {
    if n.comments.iter().any(|c| c.data.starts_with('@')) {
        return true;
    }
    if let Val::Node(v) = &n.val {
        if has_templating(v) {
            return true;
        }
    }
    n.items.iter().any(has_templating)
}

/// The kind names used in messages.
pub fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::DocSet => "document set",
        Kind::Doc => "document",
        Kind::Map => "map",
        Kind::MapItem => "map item",
        Kind::Array => "array",
        Kind::ArrayItem => "array item",
        Kind::TextRoot | Kind::Text => "text",
    }
}

/// A piece of a text template: literal text or a `(@ ... @)` code block.
enum Piece {
    Text(String, usize),
    Code(String, usize),
}

fn parse_text(data: &str, start_line: usize) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut line = start_line;
    let mut in_code = false;
    let mut start = 0;
    let mut start_line_of_piece = line;
    let b = data.as_bytes();
    // ytt's column: 1-based, counted in characters, of the pair's 2nd char
    let col_at = |i: usize| -> usize {
        let ls = data[..i].rfind('\n').map(|p| p + 1).unwrap_or(0);
        data[ls..i].chars().count() + 1
    };
    let mut i = 0;
    while i < b.len() {
        if !in_code && b[i] == b'(' && b.get(i + 1) == Some(&b'@') {
            pieces.push(Piece::Text(data[start..i].to_string(), start_line_of_piece));
            in_code = true;
            start = i + 2;
            start_line_of_piece = line;
            i += 2;
            continue;
        }
        if b[i] == b'@' && b.get(i + 1) == Some(&b')') {
            if !in_code {
                return Err(format!(
                    "Unexpected code closing '@)' at line {line} col {}",
                    col_at(i + 1)
                ));
            }
            pieces.push(Piece::Code(data[start..i].to_string(), start_line_of_piece));
            in_code = false;
            start = i + 2;
            start_line_of_piece = line;
            i += 2;
            continue;
        }
        if in_code && b[i] == b'(' && b.get(i + 1) == Some(&b'@') {
            return Err(format!(
                "Unexpected code opening '(@' at line {line} col {}",
                col_at(i + 1)
            ));
        }
        if b[i] == b'\n' {
            line += 1;
        }
        i += 1;
    }
    if in_code {
        return Err(format!(
            "Missing code closing '@)' at line {line} col {}",
            col_at(data.len())
        ));
    }
    pieces.push(Piece::Text(data[start..].to_string(), start_line_of_piece));
    Ok(pieces)
}

impl Builder {
    /// Emits a text template building a string in its own context; the
    /// caller consumes `__ytt_tpl_end_ctx()`.
    fn build_text(&mut self, data: &str, start_line: usize, pos: &Pos) -> Result<(), CompileError> {
        let mut pieces = parse_text(data, start_line).map_err(|m| CompileError {
            pos: pos.clone(),
            message: m,
        })?;
        // whitespace trimming markers
        for i in 0..pieces.len() {
            let (trim_left, trim_right) = match &pieces[i] {
                Piece::Code(c, _) => (c.starts_with('-'), c.ends_with('-')),
                _ => (false, false),
            };
            if trim_left && i > 0 {
                if let Piece::Text(t, _) = &mut pieces[i - 1] {
                    *t = t.trim_end().to_string();
                }
            }
            if trim_right && i + 1 < pieces.len() {
                if let Piece::Text(t, _) = &mut pieces[i + 1] {
                    *t = t.trim_start().to_string();
                }
            }
        }
        let mut root = Node::new(Kind::TextRoot, pos.clone());
        root.val = Val::null();
        let root_idx = self.nodes.len();
        self.nodes.push(TplNode {
            node: root,
            parent: None,
            static_subtree: false,
        });
        let root_tag = self.tag(root_idx);
        self.push("__ytt_tpl_start_ctx()".into(), LineKind::Code, start_line);
        self.push(
            format!("__ytt_tpl_start_node({root_tag})"),
            LineKind::Node,
            start_line,
        );
        for p in pieces {
            match p {
                Piece::Text(t, l) => {
                    let mut n = Node::new(Kind::Text, Pos::new(&pos.file, l));
                    n.val = Val::Scalar(super::node::Scalar::Str(t));
                    let idx = self.nodes.len();
                    self.nodes.push(TplNode {
                        node: n,
                        parent: Some(root_idx),
                        static_subtree: false,
                    });
                    let tag = self.tag(idx);
                    self.push(format!("__ytt_tpl_start_node({tag})"), LineKind::Node, l);
                    self.push(format!("__ytt_tpl_set_node({tag})"), LineKind::Node, l);
                }
                Piece::Code(c, l) => {
                    let mut code = c.as_str();
                    code = code.strip_suffix('-').unwrap_or(code);
                    let print = code.starts_with('=') || code.starts_with("-=");
                    code = code
                        .strip_prefix("-=")
                        .or_else(|| code.strip_prefix('='))
                        .or_else(|| code.strip_prefix('-'))
                        .unwrap_or(code);
                    if print {
                        let n = Node::new(Kind::Text, Pos::new(&pos.file, l));
                        let idx = self.nodes.len();
                        self.nodes.push(TplNode {
                            node: n,
                            parent: Some(root_idx),
                            static_subtree: false,
                        });
                        let tag = self.tag(idx);
                        self.push(format!("__ytt_tpl_start_node({tag})"), LineKind::Node, l);
                        self.push(
                            format!("__ytt_tpl_set_node({tag}, ({}))", code.trim()),
                            LineKind::Node,
                            l,
                        );
                    } else {
                        for (k, cl) in code.split('\n').enumerate() {
                            self.push(cl.to_string(), LineKind::Code, l + k);
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// Compiles a text template file (`(@ code @)`, `(@= expr @)`).
pub fn compile_text(text: &str, file_id: usize, name: &str) -> Result<Compiled, CompileError> {
    let mut b = Builder {
        file_id,
        nodes: Vec::new(),
        lines: Vec::new(),
        ignore_unknown: false,
    };
    let pos = Pos::new(&std::sync::Arc::from(name), 1);
    b.build_text(text, 1, &pos)?;
    b.push("__ytt_tpl_end_ctx_root()".into(), LineKind::Code, 0);
    let mut line_map = Vec::new();
    let code = layout(b.lines, &mut line_map, false).map_err(|m| CompileError {
        pos: pos.clone(),
        message: m,
    })?;
    Ok(Compiled {
        file_id,
        name: name.to_string(),
        nodes: b.nodes,
        code: rewrite_kwargs_splat(&rewrite_reserved(&code)),
        line_map,
    })
}

#[cfg(test)]
mod splat_tests {
    use super::rewrite_kwargs_splat as r;

    #[test]
    fn wraps_call_site_splats_only() {
        assert_eq!(r("dict(**left)"), "dict(**__ytt_kw(left))");
        assert_eq!(r("f(a, **g(x, y), b=1)"), "f(a, **__ytt_kw(g(x, y)), b=1)");
        assert_eq!(
            r("def f(a, **kw):\n  return g(**kw)\n"),
            "def f(a, **kw):\n  return g(**__ytt_kw(kw))\n"
        );
        assert_eq!(
            r("x = lambda **kw: dict(**kw)"),
            "x = lambda **kw: dict(**__ytt_kw(kw))"
        );
        assert_eq!(r("s = '**a' # f(**b)\n"), "s = '**a' # f(**b)\n");
        assert_eq!(r("x = dict(m(), a=1)"), "x = dict(__ytt_kw(m()), a=1)");
        assert_eq!(r("x = dict(a=1) + d.dict(y)"), "x = dict(a=1) + d.dict(y)");
        assert_eq!(r("x = dict()"), "x = dict()");
        assert_eq!(r("x = dict(**m())"), "x = dict(**__ytt_kw(m()))");
        assert_eq!(
            r("def f(a,\n      **kw):\n  return g(x,\n    **kw)\n"),
            "def f(a,\n      **kw):\n  return g(x,\n    **__ytt_kw(kw))\n"
        );
    }
}
