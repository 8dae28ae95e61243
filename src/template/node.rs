//! The YAML tree ytt templates work on: document sets, documents, maps, map
//! items, arrays and array items, each with a source position, the comments
//! the parser attached to it and the annotations evaluation gave it.

use std::sync::Arc;

/// Where a node came from: file name (as given on the command line) and
/// 1-based line; line 0 means unknown.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pos {
    pub file: Arc<str>,
    pub line: usize,
}

impl Pos {
    pub fn new(file: &Arc<str>, line: usize) -> Self {
        Pos {
            file: file.clone(),
            line,
        }
    }
    pub fn unknown() -> Self {
        Pos::default()
    }
    pub fn is_known(&self) -> bool {
        self.line > 0
    }
}

impl std::fmt::Display for Pos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}", self.file, self.line)
        } else if !self.file.is_empty() {
            write!(f, "{}:?", self.file)
        } else {
            write!(f, "?")
        }
    }
}

/// A leaf value.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
}

impl Scalar {
    pub fn type_name(&self) -> &'static str {
        match self {
            Scalar::Null => "null",
            Scalar::Bool(_) => "boolean",
            Scalar::Int(_) => "integer",
            Scalar::Float(_) => "float",
            Scalar::Str(_) => "string",
        }
    }
    /// Equality as ytt compares keys and leaf values (ints and floats differ).
    pub fn same(&self, other: &Scalar) -> bool {
        match (self, other) {
            (Scalar::Float(a), Scalar::Float(b)) => a == b || (a.is_nan() && b.is_nan()),
            _ => self == other,
        }
    }
    pub fn display(&self) -> String {
        match self {
            Scalar::Null => "null".into(),
            Scalar::Bool(b) => b.to_string(),
            Scalar::Int(i) => i.to_string(),
            Scalar::Float(f) => super::emit::format_float(*f),
            Scalar::Str(s) => s.clone(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    DocSet,
    Doc,
    Map,
    MapItem,
    Array,
    ArrayItem,
    /// Text template output (its items are `Text` pieces).
    TextRoot,
    Text,
}

/// A raw `#...` comment as the parser found it (text after `#`).
#[derive(Debug, Clone)]
pub struct Comment {
    pub data: String,
    pub pos: Pos,
}

/// An evaluated annotation: `#@name args` after Starlark ran the arguments.
#[derive(Debug, Clone)]
pub struct Ann {
    pub name: String,
    pub args: Vec<super::eval::AnnVal>,
    pub kwargs: Vec<(String, super::eval::AnnVal)>,
    pub pos: Pos,
}

impl Ann {
    pub fn kwarg(&self, name: &str) -> Option<&super::eval::AnnVal> {
        self.kwargs.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }
}

/// The value slot of a document, map item or array item.
#[derive(Debug, Clone)]
pub enum Val {
    Scalar(Scalar),
    /// A map, array or (in fragments) document set.
    Node(Box<Node>),
}

impl Val {
    pub fn null() -> Val {
        Val::Scalar(Scalar::Null)
    }
    pub fn is_null(&self) -> bool {
        matches!(self, Val::Scalar(Scalar::Null))
    }
    pub fn type_name(&self) -> &'static str {
        match self {
            Val::Scalar(s) => s.type_name(),
            Val::Node(n) => match n.kind {
                Kind::Map => "map",
                Kind::Array => "array",
                Kind::DocSet => "document set",
                Kind::Doc => "document",
                Kind::MapItem => "map item",
                Kind::ArrayItem => "array item",
                Kind::TextRoot | Kind::Text => "string",
            },
        }
    }
    pub fn as_node(&self) -> Option<&Node> {
        match self {
            Val::Node(n) => Some(n),
            _ => None,
        }
    }
    pub fn as_node_mut(&mut self) -> Option<&mut Node> {
        match self {
            Val::Node(n) => Some(n),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Node {
    pub kind: Kind,
    /// Key of a map item (Null otherwise).
    pub key: Scalar,
    /// Value of a document, map item or array item.
    pub val: Val,
    /// Children of a document set, map or array.
    pub items: Vec<Node>,
    pub comments: Vec<Comment>,
    pub anns: Vec<Ann>,
    pub pos: Pos,
    /// A document ytt injected to hold trailing comments.
    pub injected: bool,
}

impl Node {
    pub fn new(kind: Kind, pos: Pos) -> Self {
        Node {
            kind,
            key: Scalar::Null,
            val: Val::null(),
            items: Vec::new(),
            comments: Vec::new(),
            anns: Vec::new(),
            pos,
            injected: false,
        }
    }
    pub fn map(pos: Pos) -> Self {
        Node::new(Kind::Map, pos)
    }
    pub fn array(pos: Pos) -> Self {
        Node::new(Kind::Array, pos)
    }
    pub fn map_item(key: Scalar, val: Val, pos: Pos) -> Self {
        let mut n = Node::new(Kind::MapItem, pos);
        n.key = key;
        n.val = val;
        n
    }
    pub fn array_item(val: Val, pos: Pos) -> Self {
        let mut n = Node::new(Kind::ArrayItem, pos);
        n.val = val;
        n
    }
    pub fn doc(val: Val, pos: Pos) -> Self {
        let mut n = Node::new(Kind::Doc, pos);
        n.val = val;
        n
    }
    pub fn has_value_slot(&self) -> bool {
        matches!(self.kind, Kind::Doc | Kind::MapItem | Kind::ArrayItem)
    }
    pub fn ann(&self, name: &str) -> Option<&Ann> {
        self.anns.iter().find(|a| a.name == name)
    }
    pub fn has_ann(&self, name: &str) -> bool {
        self.ann(name).is_some()
    }
    /// Finds a map item by key.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.items
            .iter()
            .find(|i| matches!(&i.key, Scalar::Str(k) if k == key))
    }
    /// Drops annotations and comments everywhere below.
    pub fn strip_meta(&mut self) {
        self.anns.clear();
        self.comments.clear();
        if let Val::Node(n) = &mut self.val {
            n.strip_meta();
        }
        for i in &mut self.items {
            i.strip_meta();
        }
    }
    /// Sets the position of every node below (for values built in code).
    pub fn set_pos_deep(&mut self, pos: &Pos) {
        if !self.pos.is_known() {
            self.pos = pos.clone();
        }
        if let Val::Node(n) = &mut self.val {
            n.set_pos_deep(pos);
        }
        for i in &mut self.items {
            i.set_pos_deep(pos);
        }
    }
}
