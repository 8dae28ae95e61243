//! YAML reading with positions, on top of `yaml-rust2`'s event parser.
//!
//! yaml-rust2 is maintained, keeps key order (we build the maps ourselves)
//! and reports a line and column for every event, which is what error
//! messages need. Plain scalars are resolved with the YAML 1.2 core rules
//! that reclass-rs (serde_yaml 0.9) applies, so `yes`, `on` and `0755` are
//! strings and `1e3` is a float; `<<` merge keys and anchors are applied.

pub mod emit;
pub mod pydump;
pub mod pyload;

use crate::value::{Map, Value};
use std::collections::{HashMap, HashSet};
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser, Tag};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// A parsed YAML node with the 1-based line and column it starts at.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub value: NodeValue,
    pub line: usize,
    pub col: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum NodeValue {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    /// A string; `quoted` is true for quoted and block scalars, which never
    /// resolve to another type.
    Str {
        value: String,
        quoted: bool,
    },
    Seq(Vec<Node>),
    /// Entries in document order; keys are unique (checked at load).
    Map(Vec<(Node, Node)>),
}

/// A YAML syntax or structure error with its position.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} at line {line} column {col}")]
pub struct YamlError {
    pub message: String,
    pub line: usize,
    pub col: usize,
}

impl Node {
    /// The key as a string: scalars print as YAML would read them back.
    pub fn key_string(&self) -> String {
        match &self.value {
            NodeValue::Null => "null".into(),
            NodeValue::Bool(b) => b.to_string(),
            NodeValue::Int(i) => i.to_string(),
            NodeValue::Float(f) => format_float(*f),
            NodeValue::Str { value, .. } => value.clone(),
            NodeValue::Seq(_) | NodeValue::Map(_) => format!("{:?}", self.to_value()),
        }
    }

    /// Converts to a rendered [`Value`], dropping positions.
    pub fn to_value(&self) -> Value {
        match &self.value {
            NodeValue::Null => Value::Null,
            NodeValue::Bool(b) => Value::Bool(*b),
            NodeValue::Int(i) => Value::Int(*i),
            NodeValue::Float(f) => Value::Float(*f),
            NodeValue::Str { value, .. } => Value::String(value.clone()),
            NodeValue::Seq(items) => Value::List(items.iter().map(Node::to_value).collect()),
            NodeValue::Map(entries) => {
                let mut m = Map::with_capacity_and_hasher(entries.len(), Default::default());
                for (k, v) in entries {
                    m.insert(k.key_string(), v.to_value());
                }
                Value::Map(m)
            }
        }
    }

    /// A rendered value as a node, every position set to `line` (for code
    /// that parses documents it built itself; strings count as quoted).
    pub fn from_value(v: &Value, line: usize) -> Node {
        let value = match v {
            Value::Null => NodeValue::Null,
            Value::Bool(b) => NodeValue::Bool(*b),
            Value::Int(i) => NodeValue::Int(*i),
            Value::Float(f) => NodeValue::Float(*f),
            Value::String(s) => NodeValue::Str {
                value: s.clone(),
                quoted: true,
            },
            Value::List(items) => {
                NodeValue::Seq(items.iter().map(|x| Node::from_value(x, line)).collect())
            }
            Value::Map(m) => NodeValue::Map(
                m.iter()
                    .map(|(k, x)| {
                        (
                            Node::from_value(&Value::String(k.clone()), line),
                            Node::from_value(x, line),
                        )
                    })
                    .collect(),
            ),
        };
        Node {
            value,
            line,
            col: 1,
        }
    }

    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            NodeValue::Map(entries) => entries
                .iter()
                .find(|(k, _)| k.key_string() == key)
                .map(|(_, v)| v),
            _ => None,
        }
    }
}

/// PyYAML's float text (`1000.0`, `1.0e+20`), used for keys only.
fn format_float(f: f64) -> String {
    yaml_float(f)
}

/// Python's `repr(float)`: shortest round-trip digits, exponent form when
/// the decimal exponent is below -4 or above 16.
pub fn python_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    let sci = format!("{:e}", f.abs());
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    let decpt = exp + 1;
    let sign = if f < 0.0 { "-" } else { "" };
    let body = if decpt <= -4 || decpt > 16 {
        let mut s = digits[..1].to_string();
        if digits.len() > 1 {
            s.push('.');
            s.push_str(&digits[1..]);
        }
        let e = decpt - 1;
        format!("{s}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
    } else if decpt <= 0 {
        format!("0.{}{}", "0".repeat((-decpt) as usize), digits)
    } else if decpt as usize >= digits.len() {
        format!("{}{}.0", digits, "0".repeat(decpt as usize - digits.len()))
    } else {
        format!(
            "{}.{}",
            &digits[..decpt as usize],
            &digits[decpt as usize..]
        )
    };
    format!("{sign}{body}")
}

/// PyYAML's `represent_float`.
pub fn yaml_float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    let mut v = python_float_repr(f).to_lowercase();
    if !v.contains('.') && v.contains('e') {
        v = v.replacen('e', ".0e", 1);
    }
    v
}

/// Parses every document of a YAML stream. An empty stream gives no documents.
pub fn load_all(text: &str) -> Result<Vec<Node>, YamlError> {
    let mut builder = Builder::default();
    drive(text, &mut builder, |b| b.error.clone())?;
    Ok(builder.docs)
}

/// [`load_all`] for an inventory's class and target files: what aliases
/// copy counts against the run's [`max_run_alias_nodes`] too. An inventory
/// holds every class a target includes at once; other readers (a catalog
/// file, a values file read by each target's jsonnet) hold one stream at a
/// time, or inside an evaluation's memory budget.
pub fn load_all_inventory(text: &str) -> Result<Vec<Node>, YamlError> {
    let mut builder = Builder::default();
    drive_bounded(text, &mut builder, |b| b.error.clone(), max_nodes(), true)?;
    Ok(builder.docs)
}

/// [`load_one`] for an inventory's class and target files
/// ([`load_all_inventory`]).
pub fn load_one_inventory(text: &str) -> Result<Option<Node>, YamlError> {
    single(load_all_inventory(text)?)
}

/// Feeds the events of `text` to `recv`, enforcing [`MAX_DEPTH`],
/// [`MAX_ALIAS_NODES`] and [`max_nodes`] on the way, for every YAML reader
/// in strata.
///
/// Events are pulled one at a time rather than through `Parser::load`,
/// which recurses once per nesting level and so overflows the stack on a
/// deep enough document before any limit could apply. `failed` reports the
/// receiver's own error, which stops the stream early.
pub fn drive<R: MarkedEventReceiver>(
    text: &str,
    recv: &mut R,
    failed: impl Fn(&R) -> Option<YamlError>,
) -> Result<(), YamlError> {
    drive_bounded(text, recv, failed, max_nodes(), false)
}

fn drive_bounded<R: MarkedEventReceiver>(
    text: &str,
    recv: &mut R,
    failed: impl Fn(&R) -> Option<YamlError>,
    max_nodes: usize,
    run_counted: bool,
) -> Result<(), YamlError> {
    // A byte order mark may start a YAML stream (YAML 1.2, 5.2; PyYAML and
    // reclass-rs accept it); yaml-rust2 reads it as part of the first key.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // yaml-rust2 takes a NUL byte for the end of the stream: what followed
    // it was dropped without an error (probe 34, yaml-nul-byte-truncates:
    // `a: 1\n\0\n  b: 2` read as `a: 1`, exit 0), and git shows such a
    // file as binary, so a pull request's reviewer sees none of it. YAML
    // does not allow the character; PyYAML, libyaml and go-yaml refuse it.
    if let Some(at) = text.find('\0') {
        let before = &text[..at];
        let line = before.matches('\n').count() + 1;
        let col = before[before.rfind('\n').map_or(0, |i| i + 1)..]
            .chars()
            .count()
            + 1;
        return Err(YamlError {
            message: "a NUL byte, which YAML does not allow (is this a binary file?): remove it, or write it as \"\\0\" in a double-quoted string".into(),
            line,
            col,
        });
    }
    let mut parser = Parser::new_from_str(text);
    let mut guard = Guard {
        max_nodes,
        run_counted,
        ..Guard::default()
    };
    let mut held = HeldBlock::new(text);
    loop {
        let (ev, mark) = match parser.next_token() {
            Ok(x) => x,
            Err(e) => {
                // A receiver error met first is the more useful message.
                if let Some(err) = failed(recv) {
                    return Err(err);
                }
                let m = e.marker();
                return Err(YamlError {
                    message: e.info().to_string(),
                    line: m.line(),
                    col: m.col() + 1,
                });
            }
        };
        if let Err(message) = guard.check(&ev) {
            return Err(YamlError {
                message,
                line: mark.line(),
                col: mark.col() + 1,
            });
        }
        let end = ev == Event::StreamEnd;
        for (ev, mark) in held.pass(ev, mark) {
            recv.on_event(ev, mark);
            if let Some(err) = failed(recv) {
                return Err(err);
            }
        }
        if end {
            return Ok(());
        }
    }
}

/// Holds back a block scalar (`|`, `>`) followed by nothing but the ends
/// of its collections and document, when the text does not end with a line
/// break: if the scalar runs to the end of the text, yaml-rust2 gave it a
/// final line break the text does not have (its scanner adds one when the
/// last line is as deep as the block), where YAML 1.2 (8.1.1.2: the final
/// break is kept only if present), PyYAML (Kapitan) and libyaml
/// (reclass-rs) give none. compat37: `configManagementPlugins: |` at the
/// end of a kapitan-reference class got a `\n` Kapitan's values lack.
struct HeldBlock<'t> {
    /// The text's last line, when no line break ends the text.
    tail: Option<&'t str>,
    held: Vec<(Event, Marker)>,
}

impl<'t> HeldBlock<'t> {
    fn new(text: &'t str) -> Self {
        let tail = match text.rfind(['\n', '\r']) {
            Some(i) => &text[i + 1..],
            None => text,
        };
        HeldBlock {
            tail: (!tail.is_empty()).then_some(tail),
            held: Vec::new(),
        }
    }

    /// The events to deliver now, in order.
    fn pass(&mut self, ev: Event, mark: Marker) -> Vec<(Event, Marker)> {
        let Some(tail) = self.tail else {
            return vec![(ev, mark)];
        };
        let block = matches!(
            ev,
            Event::Scalar(_, TScalarStyle::Literal | TScalarStyle::Folded, ..)
        );
        let closing = matches!(
            ev,
            Event::MappingEnd | Event::SequenceEnd | Event::DocumentEnd
        );
        if closing && !self.held.is_empty() {
            self.held.push((ev, mark));
            return Vec::new();
        }
        let mut out = std::mem::take(&mut self.held);
        if ev == Event::StreamEnd {
            if let Some((Event::Scalar(value, ..), at)) = out.first_mut() {
                if value.ends_with('\n') && Self::added_a_break(tail, at.col()) {
                    value.pop();
                }
            }
        }
        if block {
            self.held.push((ev, mark));
        } else {
            out.push((ev, mark));
        }
        out
    }

    /// Whether yaml-rust2 ended the block with a break of its own. A
    /// block's event is marked at its first content line, at the block's
    /// indentation; the last line belongs to the block when it is that deep
    /// (or blank), and yaml-rust2 adds the break when the line holds at
    /// least that many characters (and one).
    fn added_a_break(tail: &str, indent: usize) -> bool {
        let spaces = tail.chars().take_while(|c| *c == ' ').count();
        let len = tail.chars().count();
        (spaces >= indent || spaces == len) && len >= indent.max(1)
    }
}

/// Counts nesting and the nodes and scalar bytes each anchor stands for, so
/// that an alias bomb (the "billion laughs", or one long string aliased a
/// million times) is refused before it is copied.
#[derive(Default)]
struct Guard {
    /// Open collections: anchor id and size so far (itself included).
    open: Vec<(usize, Size)>,
    /// Size of each anchor in the current document.
    sizes: HashMap<usize, Size>,
    /// What aliases have copied so far in this stream.
    copied: Size,
    /// Nodes written out in this stream (an alias is one).
    nodes: usize,
    max_nodes: usize,
    /// What aliases copy counts against the run's budget too (an
    /// inventory's files: [`load_all_inventory`]).
    run_counted: bool,
}

/// Nodes and scalar bytes.
#[derive(Default, Clone, Copy)]
struct Size {
    nodes: usize,
    bytes: usize,
}

impl Size {
    fn add(&mut self, other: Size) {
        self.nodes = self.nodes.saturating_add(other.nodes);
        self.bytes = self.bytes.saturating_add(other.bytes);
    }
}

impl Guard {
    fn check(&mut self, ev: &Event) -> Result<(), String> {
        if matches!(
            ev,
            Event::Scalar(..)
                | Event::SequenceStart(..)
                | Event::MappingStart(..)
                | Event::Alias(_)
        ) {
            self.nodes += 1;
            if self.nodes > self.max_nodes {
                return Err(format!(
                    "the file holds more than {} YAML nodes (keys, values and list items): split it into smaller files, or raise STRATA_MAX_YAML_NODES",
                    self.max_nodes
                ));
            }
        }
        match ev {
            Event::DocumentStart => self.sizes.clear(),
            Event::Scalar(text, _, anchor, _) => self.node(
                Size {
                    nodes: 1,
                    bytes: text.len(),
                },
                *anchor,
            ),
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                if self.open.len() >= MAX_DEPTH {
                    return Err(too_deep());
                }
                self.open.push((*anchor, Size { nodes: 1, bytes: 0 }));
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some((anchor, size)) = self.open.pop() {
                    self.node(size, anchor);
                }
            }
            Event::Alias(id) => {
                let size = self
                    .sizes
                    .get(id)
                    .copied()
                    .unwrap_or(Size { nodes: 1, bytes: 0 });
                self.copied.add(size);
                if self.copied.nodes > MAX_ALIAS_NODES {
                    return Err(format!(
                        "aliases expand to more than {MAX_ALIAS_NODES} nodes: write the values out or nest fewer aliases"
                    ));
                }
                if self.copied.bytes > MAX_ALIAS_BYTES {
                    return Err(format!(
                        "aliases copy more than {MAX_ALIAS_BYTES} bytes of text: write the values out or alias long strings less often"
                    ));
                }
                if self.run_counted {
                    run_alias_charge(size)?;
                }
                self.node(size, 0);
            }
            _ => {}
        }
        Ok(())
    }

    fn node(&mut self, size: Size, anchor: usize) {
        if anchor > 0 {
            self.sizes.insert(anchor, size);
        }
        if let Some(top) = self.open.last_mut() {
            top.1.add(size);
        }
    }
}

/// Parses of YAML texts, shared by the readers of two revisions of one
/// tree (a review's base and head inventories, and lint beside them): a
/// text both hold is parsed once, whichever asks first, on whatever
/// thread. A node's lines and columns depend on its text alone, not on
/// the file it came from.
#[derive(Default)]
pub struct TextCache {
    by_text: std::sync::Mutex<HashMap<std::sync::Arc<str>, std::sync::Arc<Parse>>>,
}

/// One text's [`load_all`], made once.
#[derive(Default)]
pub struct Parse(std::sync::OnceLock<Result<Vec<Node>, YamlError>>);

impl Parse {
    /// `text` parsed now, for a reader that shares it with no one.
    pub fn of(text: &str) -> Parse {
        Parse(std::sync::OnceLock::from(load_all(text)))
    }

    /// The documents, or the error [`load_all`] gives.
    pub fn all(&self) -> &Result<Vec<Node>, YamlError> {
        self.0
            .get()
            .expect("a cached parse is made before it is handed out")
    }

    /// What [`load_one`] gives for the same text.
    pub fn one(&self) -> Result<Option<&Node>, YamlError> {
        let docs = self.all().as_ref().map_err(Clone::clone)?;
        match docs.len() {
            0 => Ok(None),
            1 => Ok(docs.first()),
            _ => Err(several_documents(&docs[1])),
        }
    }
}

impl std::fmt::Debug for TextCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextCache").finish_non_exhaustive()
    }
}

impl TextCache {
    /// How many distinct texts it holds.
    pub fn len(&self) -> usize {
        self.by_text.lock().map_or(0, |m| m.len())
    }

    /// Whether it holds no text.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `text`'s parse: made here, or by the caller that asked first (a
    /// caller asking while another parses the same text waits for it).
    pub fn parse(&self, text: &str) -> std::sync::Arc<Parse> {
        let entry = {
            let mut map = self.by_text.lock().unwrap_or_else(|e| e.into_inner());
            match map.get(text) {
                Some(p) => std::sync::Arc::clone(p),
                None => {
                    let p = std::sync::Arc::new(Parse::default());
                    map.insert(text.into(), std::sync::Arc::clone(&p));
                    p
                }
            }
        };
        entry.0.get_or_init(|| load_all_inventory(text));
        entry
    }
}

fn several_documents(second: &Node) -> YamlError {
    YamlError {
        message: "expected a single YAML document, found several".into(),
        line: second.line,
        col: second.col,
    }
}

/// Parses a single-document stream; an empty stream is `None`.
pub fn load_one(text: &str) -> Result<Option<Node>, YamlError> {
    single(load_all(text)?)
}

/// The one document of a stream, `None` for an empty one; several are an
/// error at the second.
fn single(mut docs: Vec<Node>) -> Result<Option<Node>, YamlError> {
    match docs.len() {
        0 => Ok(None),
        1 => Ok(docs.pop()),
        _ => Err(several_documents(&docs[1])),
    }
}

/// Parses a YAML stream straight into rendered values.
pub fn load_values(text: &str) -> Result<Vec<Value>, YamlError> {
    Ok(load_all(text)?.iter().map(Node::to_value).collect())
}

/// [`load_values`] for a reader that hides values by their key (the diff's
/// redaction): where an alias copies an anchor written under a key that
/// `secret_key` accepts, or under `data`/`stringData`, its scalars become
/// `placeholder` (`password: &pw x` / `DB_CONN_ARG: *pw` would otherwise
/// show `x` under a key that says nothing). The anchor itself is kept.
/// The other way round, an anchor under a neutral key whose alias sits
/// under a secret key (`base: &b x` / `password: *b`) shows `anchored` at
/// the anchor and at every other alias outside a secret key; the alias
/// under the secret key keeps the value, for redaction to compare.
pub fn load_values_hiding_secret_aliases(
    text: &str,
    secret_key: &dyn Fn(&str) -> bool,
    placeholder: &str,
    anchored: &str,
) -> Result<Vec<Value>, YamlError> {
    // A first pass finds the aliases under secret keys; only a text with
    // both an anchor and an alias can have one.
    let mut aliased = HashSet::new();
    if text.contains('&') && text.contains('*') {
        let mut scan = AliasScan {
            secret: secret_key,
            stack: Vec::new(),
            doc: 0,
            found: HashSet::new(),
        };
        if drive(text, &mut scan, |_| None).is_ok() {
            aliased = scan.found;
        }
    }
    let mut builder = Builder {
        hide: Some((secret_key, placeholder)),
        anchored: Some((aliased, anchored)),
        ..Builder::default()
    };
    // Counted for the run, as an inventory's files are: a review parses
    // every target's catalog, and a `copy` of one 300-byte file whose
    // aliases copy 739,000 nodes into 20 targets took a review 88 s (probe
    // 39). Past the budget a file is an error here, and the diff compares
    // it as text.
    drive_bounded(text, &mut builder, |b| b.error.clone(), max_nodes(), true)?;
    Ok(builder.docs.iter().map(Node::to_value).collect())
}

/// Whether a value at this point of a document sits under a secret key
/// (at any depth) or under `data`/`stringData` (a Secret's values).
fn under_secret_key<'k>(secret: &SecretKey, mut pending: impl Iterator<Item = &'k str>) -> bool {
    pending.any(|k| secret(k) || k == "data" || k == "stringData")
}

/// The first pass of [`load_values_hiding_secret_aliases`]: the
/// (document, anchor) pairs that an alias under a secret key refers to.
struct AliasScan<'a> {
    secret: &'a SecretKey<'a>,
    /// Per open collection: for a map, the key whose value is being read.
    stack: Vec<Option<Option<String>>>,
    doc: usize,
    found: HashSet<(usize, usize)>,
}

impl AliasScan<'_> {
    /// A node ended: in a map it was a key (then the value follows) or a
    /// value (then the next key).
    fn node_done(&mut self, key_text: Option<String>) {
        if let Some(Some(pending)) = self.stack.last_mut() {
            *pending = match pending.take() {
                None => Some(key_text.unwrap_or_default()),
                Some(_) => None,
            };
        }
    }
}

impl MarkedEventReceiver for AliasScan<'_> {
    fn on_event(&mut self, ev: Event, _mark: Marker) {
        match ev {
            Event::DocumentStart => self.doc += 1,
            Event::Alias(id) => {
                let pending = self.stack.iter().filter_map(|f| f.as_ref()?.as_deref());
                if under_secret_key(self.secret, pending) {
                    self.found.insert((self.doc, id));
                }
                self.node_done(None);
            }
            Event::Scalar(text, ..) => self.node_done(Some(text)),
            Event::SequenceStart(..) => self.stack.push(None),
            Event::MappingStart(..) => self.stack.push(Some(None)),
            Event::SequenceEnd | Event::MappingEnd => {
                self.stack.pop();
                self.node_done(None);
            }
            _ => {}
        }
    }
}

enum Frame {
    Seq {
        anchor: usize,
        items: Vec<Node>,
        mark: Marker,
    },
    Map {
        anchor: usize,
        entries: Vec<(Node, Node)>,
        /// Key text to its line: duplicate checks in constant time, so
        /// that a map of n keys loads in linear, not quadratic, time.
        index: HashMap<String, usize>,
        pending_key: Option<Node>,
        /// Keys from `<<` merges, applied at the end (explicit keys win).
        merges: Vec<Node>,
        mark: Marker,
    },
}

/// Whether a map key names a secret.
type SecretKey<'a> = dyn Fn(&str) -> bool + 'a;

#[derive(Default)]
struct Builder<'a> {
    stack: Vec<Frame>,
    docs: Vec<Node>,
    anchors: HashMap<usize, Node>,
    error: Option<YamlError>,
    /// For [`load_values_hiding_secret_aliases`]: which keys are secret,
    /// and what an alias of an anchor under one copies instead of scalars.
    hide: Option<(&'a SecretKey<'a>, &'a str)>,
    /// Anchors written under a secret key, in the current document.
    secret_anchors: HashSet<usize>,
    /// The (document, anchor) pairs aliased under a secret key, and what
    /// their anchor and their aliases outside secret keys show instead.
    anchored: Option<(HashSet<(usize, usize)>, &'a str)>,
    /// Anchors of the current document shown as `anchored`.
    masked_anchors: HashSet<usize>,
    /// Documents started so far.
    doc: usize,
}

/// Replaces every scalar of `node` but booleans and nulls (which redaction
/// leaves visible) by `with`; keys stay. Iterative: an alias may copy a
/// node made of other aliases, deeper than the parser's nesting limit.
fn mask_scalars(node: &mut Node, with: &str) {
    let mut todo = vec![node];
    while let Some(n) = todo.pop() {
        match &mut n.value {
            NodeValue::Null | NodeValue::Bool(_) => {}
            v @ (NodeValue::Int(_) | NodeValue::Float(_) | NodeValue::Str { .. }) => {
                *v = NodeValue::Str {
                    value: with.to_string(),
                    quoted: true,
                };
            }
            NodeValue::Seq(items) => todo.extend(items.iter_mut()),
            NodeValue::Map(entries) => todo.extend(entries.iter_mut().map(|(_, v)| v)),
        }
    }
}

impl Builder<'_> {
    fn fail(&mut self, message: String, mark: Marker) {
        if self.error.is_none() {
            self.error = Some(YamlError {
                message,
                line: mark.line(),
                col: mark.col() + 1,
            });
        }
    }

    /// Whether a node pushed now sits under a secret key.
    fn under_secret(&self) -> bool {
        let Some((secret, _)) = self.hide else {
            return false;
        };
        let keys: Vec<String> = self
            .stack
            .iter()
            .filter_map(|f| match f {
                Frame::Map {
                    pending_key: Some(k),
                    ..
                } => Some(k.key_string()),
                _ => None,
            })
            .collect();
        under_secret_key(secret, keys.iter().map(String::as_str))
    }

    /// Adds a finished node to the collection being built.
    fn push_node(&mut self, mut node: Node, anchor: usize) {
        if anchor > 0 {
            self.anchors.insert(anchor, node.clone());
            if self.hide.is_some() {
                let under_secret = self.under_secret();
                if under_secret {
                    self.secret_anchors.insert(anchor);
                } else {
                    self.secret_anchors.remove(&anchor);
                }
                self.masked_anchors.remove(&anchor);
                if let Some((aliased, with)) = &self.anchored {
                    if !under_secret && aliased.contains(&(self.doc, anchor)) {
                        mask_scalars(&mut node, with);
                        self.masked_anchors.insert(anchor);
                    }
                }
            }
        }
        let mut fail = None;
        match self.stack.last_mut() {
            None => self.docs.push(node),
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map {
                entries,
                index,
                pending_key,
                merges,
                ..
            }) => {
                match pending_key.take() {
                    None => {
                        if matches!(node.value, NodeValue::Seq(_) | NodeValue::Map(_)) {
                            let kind = if matches!(node.value, NodeValue::Seq(_)) {
                                "sequence"
                            } else {
                                "mapping"
                            };
                            fail = Some((
                                format!("a mapping key must be a scalar, found a {kind}: use a string key"),
                                node.line,
                                node.col,
                            ));
                        } else {
                            *pending_key = Some(node);
                        }
                    }
                    Some(key) => {
                        let is_merge = matches!(&key.value, NodeValue::Str { value, quoted: false } if value == "<<");
                        if is_merge {
                            merges.push(node);
                            return;
                        }
                        let ks = key.key_string();
                        if let Some(prev) = index.get(&ks) {
                            fail = Some((
                                format!("duplicate key `{ks}` (first defined at line {prev})"),
                                key.line,
                                key.col,
                            ));
                        } else {
                            index.insert(ks, key.line);
                            entries.push((key, node));
                        }
                    }
                }
            }
        }
        if let Some((message, line, col)) = fail {
            if self.error.is_none() {
                self.error = Some(YamlError { message, line, col });
            }
        }
    }
}

fn apply_merges(entries: &mut Vec<(Node, Node)>, merges: Vec<Node>) -> Result<(), String> {
    if merges.is_empty() {
        return Ok(());
    }
    // Merged keys go first (in merge order), explicit keys override them.
    let mut merged: Vec<(Node, Node)> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut add = |src: &Node, merged: &mut Vec<(Node, Node)>| -> Result<(), String> {
        match &src.value {
            NodeValue::Map(es) => {
                for (k, v) in es {
                    if seen.insert(k.key_string()) {
                        merged.push((k.clone(), v.clone()));
                    }
                }
                Ok(())
            }
            _ => Err("a `<<` merge key needs a mapping or a list of mappings".into()),
        }
    };
    for m in &merges {
        match &m.value {
            NodeValue::Seq(items) => {
                for it in items {
                    add(it, &mut merged)?;
                }
            }
            _ => add(m, &mut merged)?,
        }
    }
    let explicit = std::mem::take(entries);
    let explicit_keys: HashSet<String> = explicit.iter().map(|(k, _)| k.key_string()).collect();
    for (k, v) in merged {
        if !explicit_keys.contains(&k.key_string()) {
            entries.push((k, v));
        }
    }
    entries.extend(explicit);
    Ok(())
}

impl MarkedEventReceiver for Builder<'_> {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        if self.error.is_some() {
            return;
        }
        match ev {
            Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => {}
            // Anchors are per document.
            Event::DocumentStart => {
                self.anchors.clear();
                self.secret_anchors.clear();
                self.masked_anchors.clear();
                self.doc += 1;
            }
            Event::Alias(id) => match self.anchors.get(&id) {
                Some(n) => {
                    let mut n = n.clone();
                    if let Some((_, with)) = self.hide {
                        if self.secret_anchors.contains(&id) {
                            mask_scalars(&mut n, with);
                        }
                    }
                    if self.masked_anchors.contains(&id) && !self.under_secret() {
                        if let Some((_, with)) = &self.anchored {
                            mask_scalars(&mut n, with);
                        }
                    }
                    n.line = mark.line();
                    n.col = mark.col() + 1;
                    self.push_node(n, 0);
                }
                None => self.fail("unknown alias".into(), mark),
            },
            Event::Scalar(text, style, anchor, tag) => match resolve_scalar(text, style, tag) {
                Ok(value) => {
                    let node = Node {
                        value,
                        line: mark.line(),
                        col: mark.col() + 1,
                    };
                    self.push_node(node, anchor);
                }
                Err(msg) => self.fail(msg, mark),
            },
            Event::SequenceStart(anchor, tag) => {
                if self.stack.len() >= MAX_DEPTH {
                    return self.fail(too_deep(), mark);
                }
                if let Some(msg) = check_collection_tag(&tag, "seq") {
                    return self.fail(msg, mark);
                }
                self.stack.push(Frame::Seq {
                    anchor,
                    items: Vec::new(),
                    mark,
                });
            }
            Event::MappingStart(anchor, tag) => {
                if self.stack.len() >= MAX_DEPTH {
                    return self.fail(too_deep(), mark);
                }
                if let Some(msg) = check_collection_tag(&tag, "map") {
                    return self.fail(msg, mark);
                }
                self.stack.push(Frame::Map {
                    anchor,
                    entries: Vec::new(),
                    index: HashMap::new(),
                    pending_key: None,
                    merges: Vec::new(),
                    mark,
                });
            }
            Event::SequenceEnd => {
                if let Some(Frame::Seq {
                    anchor,
                    items,
                    mark,
                }) = self.stack.pop()
                {
                    let node = Node {
                        value: NodeValue::Seq(items),
                        line: mark.line(),
                        col: mark.col() + 1,
                    };
                    self.push_node(node, anchor);
                }
            }
            Event::MappingEnd => {
                if let Some(Frame::Map {
                    anchor,
                    mut entries,
                    merges,
                    mark,
                    ..
                }) = self.stack.pop()
                {
                    if let Err(msg) = apply_merges(&mut entries, merges) {
                        return self.fail(msg, mark);
                    }
                    let node = Node {
                        value: NodeValue::Map(entries),
                        line: mark.line(),
                        col: mark.col() + 1,
                    };
                    self.push_node(node, anchor);
                }
            }
        }
    }
}

/// Deeper nesting than this is refused: recursion over it could exhaust the
/// stack, and no real configuration comes near it.
pub const MAX_DEPTH: usize = 256;

/// At most this many nodes may be produced by alias expansion in one stream
/// (each alias counts the nodes it copies). Real files use aliases for a few
/// shared blocks; a bound is what serious YAML parsers (libyaml-based
/// serde_yaml, go-yaml) also apply against alias bombs.
pub const MAX_ALIAS_NODES: usize = 1_000_000;

/// At most this many bytes of scalar text may be copied by alias expansion
/// in one stream: a long string aliased often is a bomb with few nodes.
pub const MAX_ALIAS_BYTES: usize = 64 << 20;

/// The most nodes aliases may copy in all the streams one run reads
/// together: `STRATA_MAX_RUN_ALIAS_NODES`, default 4,000,000 (four streams
/// at [`MAX_ALIAS_NODES`]). The per-stream bounds hold each file to a
/// million copied nodes, but an inventory holds every class a target
/// includes: 100 class files of 303 bytes, each nesting aliases to 656,000
/// nodes, took `inventory` 84 s and 9.8 GB before the render limit stopped
/// it (probe 39, yaml-alias-expansion-per-file-times-files).
pub fn max_run_alias_nodes() -> u64 {
    crate::limits::get("STRATA_MAX_RUN_ALIAS_NODES", 4_000_000)
}

/// The most bytes of scalar text aliases may copy in all the streams one
/// run reads together (four streams at [`MAX_ALIAS_BYTES`]).
pub const MAX_RUN_ALIAS_BYTES: u64 = 4 * MAX_ALIAS_BYTES as u64;

#[cfg(not(test))]
static RUN_ALIAS_COPIED: (std::sync::atomic::AtomicU64, std::sync::atomic::AtomicU64) = (
    std::sync::atomic::AtomicU64::new(0),
    std::sync::atomic::AtomicU64::new(0),
);

/// Adds what an alias copies to the run's count. Unit tests run on threads
/// of one process, each its own run (their alias bombs would add up).
fn run_alias_charge(size: Size) -> Result<(), String> {
    use std::sync::atomic::Ordering::Relaxed;
    let (nodes, bytes) = (size.nodes as u64, size.bytes as u64);
    #[cfg(not(test))]
    let (n, b) = (
        RUN_ALIAS_COPIED
            .0
            .fetch_add(nodes, Relaxed)
            .saturating_add(nodes),
        RUN_ALIAS_COPIED
            .1
            .fetch_add(bytes, Relaxed)
            .saturating_add(bytes),
    );
    #[cfg(test)]
    let (n, b) = {
        thread_local! {
            static COPIED: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
        }
        let _ = Relaxed;
        COPIED.with(|c| {
            let (n, b) = c.get();
            let now = (n.saturating_add(nodes), b.saturating_add(bytes));
            c.set(now);
            now
        })
    };
    let max = max_run_alias_nodes();
    if n > max {
        return Err(format!(
            "aliases in the files read so far expand to more than {max} nodes together (each file may expand to {MAX_ALIAS_NODES}; STRATA_MAX_RUN_ALIAS_NODES): write the values out, or nest fewer aliases in the files one target includes"
        ));
    }
    if b > MAX_RUN_ALIAS_BYTES {
        return Err(format!(
            "aliases in the files read so far copy more than {MAX_RUN_ALIAS_BYTES} bytes of text together (each file may copy {MAX_ALIAS_BYTES}): write the values out, or alias long strings less often"
        ));
    }
    Ok(())
}

/// The most nodes one YAML stream may write out: `STRATA_MAX_YAML_NODES`,
/// default 2,000,000. A node in memory costs up to ~270 bytes however
/// short its text, so a 12 MB flow list of empty maps (`[{},{},...]`, 4
/// million nodes) took 1.1 GB to read and 48 MB took 3.3 GB. Real files
/// write 10 or more bytes a node: 2,000,000 is a 20 MB file or more, far
/// past a class, a Kubernetes object (1.5 MB in etcd) or a chart's CRDs.
pub fn max_nodes() -> usize {
    usize::try_from(crate::limits::get("STRATA_MAX_YAML_NODES", 2_000_000)).unwrap_or(usize::MAX)
}

fn too_deep() -> String {
    format!("nesting deeper than {MAX_DEPTH} levels")
}

/// Whether a [`YamlError`]'s message is one of the limits [`drive`]
/// enforces (nesting, alias expansion, nodes), not a syntax error: the
/// hint is then the limit's, not "fix the syntax".
pub fn is_limit_message(message: &str) -> bool {
    [
        "nesting deeper than",
        "aliases expand to more than",
        "aliases copy more than",
        "aliases in the files read so far",
        "the file holds more than",
    ]
    .iter()
    .any(|p| message.starts_with(p))
}

fn tag_name(tag: &Tag) -> String {
    format!("{}{}", tag.handle, tag.suffix)
}

/// The error for a scalar its tag does not fit. The scalar itself is not
/// quoted: it may be a password (`password: !!int hunter2`), and the error
/// reaches lint output, CI annotations and review logs; the caller adds the
/// file and line.
fn not_of_type(tag: &str, what: &str) -> String {
    format!(
        "the value tagged `{tag}` is not {what} (value not shown): fix the value or remove the tag"
    )
}

fn check_collection_tag(tag: &Option<Tag>, kind: &str) -> Option<String> {
    let tag = tag.as_ref()?;
    let full = tag_name(tag);
    let ok = match kind {
        "seq" => matches!(full.as_str(), "!!seq" | "tag:yaml.org,2002:seq" | "!"),
        _ => matches!(full.as_str(), "!!map" | "tag:yaml.org,2002:map" | "!"),
    };
    (!ok).then(|| format!("unsupported YAML tag `{full}` on a {kind}: remove the tag"))
}

/// Resolves a scalar by style and tag, YAML 1.2 core schema as serde_yaml 0.9.
fn resolve_scalar(
    text: String,
    style: TScalarStyle,
    tag: Option<Tag>,
) -> Result<NodeValue, String> {
    if let Some(tag) = &tag {
        let full = tag_name(tag);
        let short = full
            .strip_prefix("tag:yaml.org,2002:")
            .map(|s| format!("!!{s}"))
            .unwrap_or(full.clone());
        return match short.as_str() {
            "!!str" | "!" => Ok(NodeValue::Str {
                value: text,
                quoted: true,
            }),
            "!!null" => Ok(NodeValue::Null),
            "!!bool" => parse_bool(&text)
                .map(NodeValue::Bool)
                .ok_or_else(|| not_of_type("!!bool", "a bool")),
            "!!int" => parse_int(&text)
                .map(NodeValue::Int)
                .ok_or_else(|| not_of_type("!!int", "an int")),
            "!!float" => parse_float(&text)
                .or_else(|| parse_int(&text).map(|i| i as f64))
                .map(NodeValue::Float)
                .ok_or_else(|| not_of_type("!!float", "a float")),
            _ => Err(format!(
                "unsupported YAML tag `{full}`: strata reads plain YAML only; quote the value or remove the tag"
            )),
        };
    }
    if style != TScalarStyle::Plain {
        return Ok(NodeValue::Str {
            value: text,
            quoted: true,
        });
    }
    Ok(resolve_plain(text))
}

pub fn resolve_plain(text: String) -> NodeValue {
    match text.as_str() {
        "" | "~" | "null" | "Null" | "NULL" => return NodeValue::Null,
        _ => {}
    }
    if let Some(b) = parse_bool(&text) {
        return NodeValue::Bool(b);
    }
    if let Some(i) = parse_int(&text) {
        return NodeValue::Int(i);
    }
    if let Some(f) = parse_float(&text) {
        return NodeValue::Float(f);
    }
    NodeValue::Str {
        value: text,
        quoted: false,
    }
}

fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "true" | "True" | "TRUE" => Some(true),
        "false" | "False" | "FALSE" => Some(false),
        _ => None,
    }
}

fn parse_int(s: &str) -> Option<i64> {
    let (neg, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let (radix, digits) = if let Some(d) = body.strip_prefix("0x") {
        (16, d)
    } else if let Some(d) = body.strip_prefix("0o") {
        (8, d)
    } else if let Some(d) = body.strip_prefix("0b") {
        (2, d)
    } else {
        // Leading zeros are not an int in serde_yaml's reading: `0755` stays a string.
        if body.len() > 1 && body.starts_with('0') {
            return None;
        }
        (10, body)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let mag = i128::from_str_radix(digits, radix).ok()?;
    i64::try_from(if neg { -mag } else { mag }).ok()
}

fn parse_float(s: &str) -> Option<f64> {
    match s {
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => return Some(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => return Some(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Some(f64::NAN),
        _ => {}
    }
    let body = s.strip_prefix(['-', '+']).unwrap_or(s);
    // Digits only is an int or, with leading zeros, a string; never a float.
    if body.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let starts_ok = body.starts_with(|c: char| c.is_ascii_digit() || c == '.');
    if !starts_ok || !body.chars().any(|c| c.is_ascii_digit()) {
        return None;
    }
    // Rust also reads `inf`, `nan` and `infinity`, which YAML does not:
    // no letter but an exponent's gets past this.
    if !body
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+'))
    {
        return None;
    }
    s.parse::<f64>().ok()
}

/// Whether any of `resolves_to_non_string`'s patterns can match `body`: a
/// byte no pattern has rules it out without running them. The emitter asks
/// this of every key and string it writes, most of them words such as
/// `metadata` or quantities such as `512Mi` (5% of a compile's
/// instructions went to the regexes).
fn may_resolve(body: &str) -> bool {
    // The bytes of the number, timestamp and sexagesimal patterns.
    const NUMERIC: [u32; 8] = {
        let mut t = [0u32; 8];
        let set = b"0123456789+-._:eEbxoabcdefABCDEFinfINFatTZ \t";
        let mut i = 0;
        while i < set.len() {
            t[(set[i] >> 5) as usize] |= 1 << (set[i] & 31);
            i += 1;
        }
        t
    };
    let b = body.as_bytes();
    match b.first() {
        // The bool and null words (`~` too) have at most five bytes.
        Some(b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~') => {
            b.len() <= 5
        }
        Some(b'<') => body == "<<",
        Some(b'=') => body == "=",
        Some(b'0'..=b'9' | b'+' | b'-' | b'.') => b
            .iter()
            .all(|&c| NUMERIC[(c >> 5) as usize] & (1 << (c & 31)) != 0),
        _ => false,
    }
}

/// True when a plain scalar with this text would be read back as something
/// other than a string under YAML 1.1 (PyYAML's implicit resolvers).
pub fn resolves_to_non_string(text: &str) -> bool {
    if text.is_empty() {
        return true; // '' resolves to null
    }
    may_resolve(text.strip_suffix('\n').unwrap_or(text)) && matches_a_resolver(text)
}

/// `resolves_to_non_string` by the resolvers' patterns alone.
fn matches_a_resolver(text: &str) -> bool {
    static RES: std::sync::OnceLock<Vec<(&'static str, regex::Regex)>> = std::sync::OnceLock::new();
    let res = RES.get_or_init(|| {
        let pats: [(&str, &str); 8] = [
            (
                "yYnNtTfFoO",
                r"^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$",
            ),
            (
                "-+0123456789.",
                r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
            ),
            (
                "-+0123456789",
                r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$",
            ),
            ("<", r"^(?:<<)$"),
            ("~nN", r"^(?:~|null|Null|NULL)$"),
            (
                "0123456789",
                r"^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$",
            ),
            ("=", r"^(?:=)$"),
            // Kapitan imports yamllint, whose `quoted-strings` rule adds a
            // YAML 1.2 octal (`0o17`) int resolver to PyYAML globally.
            ("-+0123456789", r"^(?:[-+]?0o?[0-7_]+)$"),
        ];
        pats.iter()
            .map(|(first, p)| (*first, regex::Regex::new(p).expect("static regex")))
            .collect()
    });
    let Some(first) = text.chars().next() else {
        return true; // '' resolves to null
    };
    // Python's `$` also matches before a final newline.
    let body = text.strip_suffix('\n').unwrap_or(text);
    // The bool, null, merge and value patterns match at most five
    // characters: a longer key such as `name` or `nodeSelector` skips them.
    let longest = |firsts: &str| match firsts {
        "yYnNtTfFoO" => 5,
        "~nN" => 4,
        "<" => 2,
        "=" => 1,
        _ => usize::MAX,
    };
    res.iter().any(|(firsts, re)| {
        firsts.contains(first)
            && body.len() <= longest(firsts)
            && (re.is_match(body) || (body.len() < text.len() && re.is_match(text)))
    })
}

/// `json.dumps(s, ensure_ascii=True)` of one string.
pub fn json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            c => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{:04x}", unit));
                }
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    /// Probe 39 (yaml-alias-expansion-per-file-times-files): what aliases
    /// copy in an inventory's files adds up over the run; other readers
    /// (each target's values file read by jsonnet) only count per stream.
    #[test]
    fn only_inventory_files_count_aliases_for_the_run() {
        // 10 scalars, then 5 levels of 9 aliases: 739,017 copied nodes.
        let mut text = String::from("l0: &a0 [1,2,3,4,5,6,7,8,9,10]\n");
        for i in 1..6 {
            text.push_str(&format!(
                "l{i}: &a{i} [{}]\n",
                vec![format!("*a{}", i - 1); 9].join(",")
            ));
        }
        for _ in 0..7 {
            load_all(&text).unwrap();
        }
        let mut failed = None;
        for n in 1..=7 {
            if let Err(e) = load_all_inventory(&text) {
                failed = Some((n, e));
                break;
            }
        }
        let (n, e) = failed.expect("the run's alias budget");
        assert_eq!(n, 6, "{}", e.message);
        assert!(
            e.message.contains("STRATA_MAX_RUN_ALIAS_NODES"),
            "{}",
            e.message
        );
    }

    /// A text is parsed once however many readers ask (the second gets the
    /// first one's parse), and a cached parse reads as `load_one` and
    /// `load_all` read the text: no document, one, several, an error.
    #[test]
    fn a_cached_parse_is_made_once_and_reads_as_a_fresh_one() {
        let cache = super::TextCache::default();
        for text in [
            "",
            "a: 1\nb: [x, y]\n",
            "a: 1\n---\nb: 2\n",
            "a: [1\n",
            "k: \0\n",
        ] {
            let (first, again) = (cache.parse(text), cache.parse(text));
            assert!(std::sync::Arc::ptr_eq(&first, &again), "{text:?}");
            assert_eq!(first.all(), &super::load_all(text), "{text:?}");
            assert_eq!(
                first.one().map(|n| n.cloned()),
                super::load_one(text),
                "{text:?}"
            );
            assert_eq!(super::Parse::of(text).all(), first.all(), "{text:?}");
        }
        assert!(!std::sync::Arc::ptr_eq(
            &cache.parse("a: 1\n"),
            &cache.parse("a: 2\n")
        ));
    }

    /// The byte filter never rules out a scalar a resolver's pattern
    /// matches: every string of up to three bytes over the patterns'
    /// alphabet and some others and of up to four over the numbers', each
    /// also with a final newline, and longer values the patterns do and do
    /// not match.
    #[test]
    fn the_byte_filter_keeps_every_scalar_a_resolver_matches() {
        let alphabet: Vec<char> = "0123456789+-._:eEbxoafAFinINtTZ \tyYsSlLuUrR<=~m\u{e9}"
            .chars()
            .collect();
        let numeric: Vec<char> = "019+-._:eExbaTZ ".chars().collect();
        let mut strings: Vec<String> = Vec::new();
        for (chars, len) in [(&alphabet, 3), (&numeric, 4)] {
            let mut level = vec![String::new()];
            for _ in 0..len {
                level = level
                    .iter()
                    .flat_map(|s| chars.iter().map(move |c| format!("{s}{c}")))
                    .collect();
                strings.extend(level.iter().cloned());
            }
        }
        strings.extend(
            [
                "False",
                "FALSE",
                "NULL",
                "2001-12-14t21:59:43.10-05:00",
                "2002-12-14",
                "2001-12-14 21:59:43.10 -5",
                "1_000_000",
                "0x_DEAD_beef",
                "0b1010_0111",
                "190:20:30.15",
                "-1:30",
                "+.INF",
                "6.8523015e+5",
                "685.230_15e+03",
                "0o1234567",
                "-0o17",
                "1.2.3.4",
                "512Mi",
                "v1.2.3",
                "10.0.0.1/8",
                "nodeSelector",
            ]
            .map(String::from),
        );
        let mut matched = 0;
        for s in &strings {
            for text in [s.clone(), format!("{s}\n")] {
                if !text.is_empty() && matches_a_resolver(&text) {
                    matched += 1;
                    assert!(
                        may_resolve(text.strip_suffix('\n').unwrap_or(&text)),
                        "{text:?}"
                    );
                }
                assert_eq!(
                    resolves_to_non_string(&text),
                    text.is_empty() || matches_a_resolver(&text),
                    "{text:?}"
                );
            }
        }
        assert!(matched > 5_000, "{matched}");
    }

    /// probe 34: yaml-rust2 ended the stream at a NUL byte, dropping the
    /// rest of the file without an error.
    #[test]
    fn a_nul_byte_is_an_error_not_the_end_of_the_stream() {
        let e = load_all("parameters:\n  a: 1\n\0\n  b: 2\n").unwrap_err();
        assert_eq!((e.line, e.col), (3, 1), "{e:?}");
        assert!(e.message.contains("NUL byte"), "{e:?}");
        let e = load_all("a: \"x\0y\"\n").unwrap_err();
        assert_eq!((e.line, e.col), (1, 6), "{e:?}");
        // Written as an escape it is a character of the value.
        let v = load_all("a: \"x\\0y\"\n").unwrap();
        assert_eq!(
            v[0].get("a").unwrap().to_value(),
            Value::String("x\0y".into())
        );
    }

    use super::*;

    fn one(text: &str) -> Value {
        load_one(text).unwrap().unwrap().to_value()
    }

    /// compat37: kapicorp/kapitan-reference's
    /// `argocd-server-custom-tools.yml` ends inside a `|` block without a
    /// final line break; yaml-rust2 adds one, so the value had a `\n` that
    /// Kapitan (PyYAML) and reclass-rs (libyaml) do not give. The expected
    /// values are PyYAML 6's.
    #[test]
    fn a_block_scalar_ending_the_file_without_a_line_break_has_none() {
        let s = |v: &str| Value::String(v.into());
        for (text, want) in [
            ("a: |\n  x\n  y", "x\ny"),
            ("a: >\n  x\n  y", "x y"),
            ("a: >\n  x\n\n  y", "x\ny"),
            ("a: |+\n  x", "x"),
            ("a: |-\n  x", "x"),
            ("a: |2\n   x\n   y", " x\n y"),
            ("a: |\r\n  x\r\n  y", "x\ny"),
            // Trailing indentation: yaml-rust2 added a line break when it
            // was as deep as the block's.
            ("a: |\n  x\n  ", "x\n"),
            ("a: |+\n  x\n  ", "x\n"),
            ("a: |\n  x\n\n  y\n  ", "x\n\ny\n"),
            ("a: |\n  x\n ", "x\n"),
            // A comment after the block is no part of it.
            ("a: |\n  x\n# c", "x\n"),
            ("a: |\n  # c\n# c", "# c\n"),
            // With the final line break nothing changes.
            ("a: |\n  x\n  y\n", "x\ny\n"),
        ] {
            assert_eq!(one(text).as_map().unwrap()["a"], s(want), "{text:?}");
        }
        assert_eq!(
            one("- |\n  x\n- |\n  y"),
            Value::List(vec![s("x\n"), s("y")])
        );
        let nested = one("a:\n  b: |\n    x\n    # c\n  # d");
        assert_eq!(
            nested.as_map().unwrap()["a"].as_map().unwrap()["b"],
            s("x\n# c\n")
        );
        // Only the last document's block reaches the end of the stream.
        let docs = load_values("a: |\n  x\n---\nb: |\n  y").unwrap();
        assert_eq!(docs[0].as_map().unwrap()["a"], s("x\n"));
        assert_eq!(docs[1].as_map().unwrap()["b"], s("y"));
    }

    #[test]
    fn yaml_1_2_scalars() {
        let v = one("a: yes\nb: on\nc: 0755\nd: 1e3\ne: ~\nf: true\ng: '1'\nh: 0x1f\ni: -3\nj: .inf\nk: 1.5\nl: nan\n");
        let m = v.as_map().unwrap();
        assert_eq!(m["a"], Value::String("yes".into()));
        assert_eq!(m["b"], Value::String("on".into()));
        assert_eq!(m["c"], Value::String("0755".into()));
        assert_eq!(m["d"], Value::Float(1000.0));
        assert_eq!(m["e"], Value::Null);
        assert_eq!(m["f"], Value::Bool(true));
        assert_eq!(m["g"], Value::String("1".into()));
        assert_eq!(m["h"], Value::Int(31));
        assert_eq!(m["i"], Value::Int(-3));
        assert_eq!(m["j"], Value::Float(f64::INFINITY));
        assert_eq!(m["k"], Value::Float(1.5));
        assert_eq!(m["l"], Value::String("nan".into()));
    }

    /// A leading byte order mark is no part of the first key (a target file
    /// saved by an editor that writes one failed with "unknown top-level
    /// key `\u{feff}parameters`"; reclass-rs and PyYAML accept it).
    #[test]
    fn byte_order_mark_starts_a_stream() {
        let v = one("\u{feff}parameters:\n  a: 1\n");
        assert_eq!(
            v.as_map().unwrap()["parameters"].as_map().unwrap()["a"],
            Value::Int(1)
        );
        // Anywhere else it is still content.
        let v = one("a: \u{feff}x\n");
        assert_eq!(v.as_map().unwrap()["a"], Value::String("\u{feff}x".into()));
    }

    #[test]
    fn anchors_and_merge_keys() {
        let v = one("base: &b {x: 1, y: 2}\nsvc:\n  <<: *b\n  y: 3\nl: &l [1]\nm: *l\n");
        let svc = v.get_path(&["svc"]).unwrap().as_map().unwrap();
        assert_eq!(svc["x"], Value::Int(1));
        assert_eq!(svc["y"], Value::Int(3));
        assert_eq!(v.get_path(&["m"]), Some(&Value::List(vec![Value::Int(1)])));
    }

    #[test]
    fn duplicate_key_is_an_error_with_line() {
        let e = load_one("a: 1\nb: 2\na: 3\n").unwrap_err();
        assert!(e.message.contains("duplicate key `a`"), "{e}");
        assert_eq!(e.line, 3);
    }

    #[test]
    fn syntax_error_has_position() {
        let e = load_one("a: [1, 2\nb: c\n").unwrap_err();
        assert!(e.line >= 1);
    }

    #[test]
    fn tags() {
        let v = one("a: !!str 12\nb: !!int '7'\n");
        assert_eq!(v.get_path(&["a"]), Some(&Value::String("12".into())));
        assert_eq!(v.get_path(&["b"]), Some(&Value::Int(7)));
        let e = load_one("a: !vault x\n").unwrap_err();
        assert!(e.message.contains("unsupported YAML tag `!vault`"), "{e}");
    }

    #[test]
    fn node_positions() {
        let n = load_one("a:\n  b: 1\n").unwrap().unwrap();
        let b = n.get("a").unwrap().get("b").unwrap();
        assert_eq!((b.line, b.col), (2, 6));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = "[".repeat(10_000) + &"]".repeat(10_000);
        let e = load_one(&deep).unwrap_err();
        assert!(
            e.message.contains("nesting deeper than") || e.message.contains("recursion limit"),
            "{e}"
        );
    }

    /// Runs `f` on a thread with a small stack, as test threads and
    /// embedders may have: limits must hold before recursion, not after.
    fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(f)
            .unwrap()
            .join()
            .unwrap()
    }

    #[test]
    fn deep_block_nesting_is_an_error_on_a_small_stack() {
        let map: String = (0..20_000).map(|i| " ".repeat(i) + "a:\n").collect();
        let seq: String = (0..20_000).map(|i| " ".repeat(i) + "-\n").collect();
        for text in [map, seq] {
            let e = on_small_stack(move || load_one(&text).unwrap_err());
            assert!(e.message.contains("nesting deeper than 256 levels"), "{e}");
            assert_eq!(e.line, 257);
        }
    }

    #[test]
    fn alias_bomb_is_refused() {
        let mut text = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n".to_string();
        for i in 1..10 {
            let refs = vec![format!("*a{}", i - 1); 9].join(", ");
            text += &format!("a{i}: &a{i} [{refs}]\n");
        }
        let e = load_one(&text).unwrap_err();
        assert!(
            e.message
                .contains("aliases expand to more than 1000000 nodes"),
            "{e}"
        );
        // Ordinary alias use stays fine.
        let v = one("b: &b {x: [1, 2]}\nc: *b\nd: *b\n");
        assert_eq!(
            v.get_path(&["d", "x"]),
            Some(&Value::List(vec![Value::Int(1), Value::Int(2)]))
        );
    }

    /// Issue 19 (Known gap "Loading YAML costs memory in proportion to its
    /// size"): a node costs up to ~270 bytes however short its text, so
    /// `[{},{},...]` took 70 bytes of memory per byte of input; the nodes
    /// of one stream are bounded, aliases counting one each (their copies
    /// are bounded on their own).
    #[test]
    fn nodes_of_one_stream_are_bounded() {
        let load = |text: &str, max: usize| {
            let mut b = Builder::default();
            drive_bounded(text, &mut b, |b| b.error.clone(), max, false).map(|()| b.docs.len())
        };
        // The document's map, `a`, its list and three maps: six nodes.
        assert_eq!(load("a: [{}, {}, {}]\n", 6), Ok(1));
        let e = load("a: [{}, {}, {}, {}]\n", 6).unwrap_err();
        assert!(
            e.message.contains(
                "the file holds more than 6 YAML nodes (keys, values and list items): split it into smaller files, or raise STRATA_MAX_YAML_NODES"
            ),
            "{e}"
        );
        assert_eq!((e.line, e.col), (1, 17));
        // Counted over the whole stream, every document together.
        assert!(load("a: 1\n---\nb: 2\n---\nc: 3\n", 8).is_err());
        assert_eq!(load("a: 1\n---\nb: 2\n---\nc: 3\n", 9), Ok(3));
        assert_eq!(load("a: &x [1]\nb: *x\n", 6), Ok(1));
        assert_eq!(max_nodes(), 2_000_000);
    }

    #[test]
    fn long_string_aliased_often_is_refused() {
        // Few nodes, but each alias copies 1 MiB: 2^24 copies would be 16 TiB.
        let mut text = format!("a0: &a0 \"{}\"\n", "x".repeat(1 << 20));
        for i in 1..25 {
            text += &format!("a{i}: &a{i} [*a{}, *a{}]\n", i - 1, i - 1);
        }
        let e = load_one(&text).unwrap_err();
        assert!(
            e.message
                .contains("aliases copy more than 67108864 bytes of text"),
            "{e}"
        );
        // A long string aliased a few times is fine.
        let few = format!("a: &a \"{}\"\nb: [*a, *a, *a]\n", "y".repeat(1 << 20));
        assert_eq!(
            one(&few).get_path(&["b"]).unwrap().as_list().unwrap().len(),
            3
        );
    }

    #[test]
    fn many_keys_load() {
        // Quadratic duplicate checks made this take minutes.
        let text: String = (0..200_000).map(|i| format!("k{i}: {i}\n")).collect();
        let v = one(&text);
        assert_eq!(v.as_map().unwrap().len(), 200_000);
        let dup = text + "k7: 1\n";
        let e = load_one(&dup).unwrap_err();
        assert!(
            e.message
                .contains("duplicate key `k7` (first defined at line 8)"),
            "{e}"
        );
    }

    #[test]
    fn complex_keys_are_refused() {
        for text in ["? [a, b]\n: 1\n", "? {a: 1}\n: 1\n", "{[a]: 1}\n"] {
            let e = load_one(text).unwrap_err();
            assert!(
                e.message.contains("a mapping key must be a scalar"),
                "{text}: {e}"
            );
        }
    }

    #[test]
    fn anchors_do_not_cross_documents() {
        assert!(load_all("a: &x 1\n---\nb: *x\n").is_err());
    }

    #[test]
    fn multi_document() {
        let docs = load_values("a: 1\n---\nb: 2\n").unwrap();
        assert_eq!(docs.len(), 2);
        assert!(load_all("").unwrap().is_empty());
    }

    /// Re-probe of 2026-11-26 (redact-semantic-mode-shows-what-text-mode-hides):
    /// an alias copying a value anchored under a secret key.
    #[test]
    fn aliases_of_secret_anchors_can_be_hidden() {
        let secret = |k: &str| k == "password";
        let text = "a:\n  password: &pw s3cr3t\n  conn: *pw\n  plain: &p visible\n  copy: *p\nb:\n  password: &m {user: u, n: 1, on: true, l: [x]}\n  other: *m\n  merged: {<<: *m, extra: 2}\n---\nkind: Secret\ndata: {k: &d c2Vj}\nmetadata: {annotations: {x: *d}}\n---\npw: *pw\n";
        let got = load_values_hiding_secret_aliases(text, &secret, "<hidden>", "<anchored>");
        // An anchor is per document: the last one's alias is an error.
        assert!(got.is_err());
        let text = text.rsplit_once("---").unwrap().0;
        let docs =
            load_values_hiding_secret_aliases(text, &secret, "<hidden>", "<anchored>").unwrap();
        let y: String = docs.iter().map(emit::to_yaml_string).collect();
        assert!(!y.contains("conn: s3cr3t"), "{y}");
        assert!(
            y.contains("conn: <hidden>") || y.contains("conn: '<hidden>'"),
            "{y}"
        );
        assert!(y.contains("copy: visible"), "{y}");
        assert!(!y.contains("x: c2Vj"), "{y}");
        // The anchor stays (redaction hides it by its key); keys and
        // booleans of a copied map stay, so a merge still works.
        assert!(y.contains("password: s3cr3t"), "{y}");
        for hidden in ["user: u", "n: 1", "- x"] {
            assert_eq!(y.matches(hidden).count(), 1, "{hidden}: {y}");
        }
        assert_eq!(y.matches("\"on\": true").count(), 3, "{y}");
        assert!(y.contains("extra: 2"), "{y}");
        // The plain reader is unchanged.
        let plain: String = load_values(text)
            .unwrap()
            .iter()
            .map(emit::to_yaml_string)
            .collect();
        assert!(plain.contains("conn: s3cr3t"), "{plain}");
    }

    /// Re-probe (redact-secret-alias-anchored-under-neutral-key): the anchor
    /// is written under a neutral key and only its alias under a secret one.
    #[test]
    fn anchors_aliased_under_secret_keys_are_hidden_at_the_anchor() {
        let secret = |k: &str| k == "password";
        let text = "base: &b s3cr3t\nother: *b\npassword: *b\nblock: &m {pw: hunter2, on: true}\nnested:\n  password:\n    <<: *m\nplain: &p visible\ncopy: *p\n---\nbase: &b kept\nother: *b\n";
        let docs =
            load_values_hiding_secret_aliases(text, &secret, "<hidden>", "<anchored>").unwrap();
        let y: String = docs.iter().map(emit::to_yaml_string).collect();
        for shown in ["s3cr3t", "hunter2"] {
            // Once each: under the secret key, for redaction to compare.
            assert_eq!(y.matches(shown).count(), 1, "{shown}: {y}");
        }
        assert!(y.contains("password: s3cr3t"), "{y}");
        assert!(y.contains("<anchored>"), "{y}");
        assert!(y.contains("copy: visible"), "{y}");
        // Anchors are per document: the second document's `b` is another.
        assert_eq!(y.matches("kept").count(), 2, "{y}");
        assert_eq!(y.matches("\"on\": true").count(), 2, "{y}");
    }
}
