//! Typed reading of kapp Config YAML nodes with positions, following Go's
//! `encoding/json` rules that kapp relies on: field names match exactly or
//! case-insensitively, unknown fields are ignored, `null` is the zero value,
//! and a value of the wrong type is an error.

use super::OrderError;
use crate::yaml::{Node, NodeValue};
use std::path::Path;

/// Decoding context: the file and the field path of the node at hand.
#[derive(Clone)]
pub(crate) struct Ctx<'a> {
    pub file: &'a Path,
    pub path: String,
}

impl<'a> Ctx<'a> {
    pub fn new(file: &'a Path, path: impl Into<String>) -> Self {
        Ctx {
            file,
            path: path.into(),
        }
    }

    pub fn field(&self, key: &str) -> Ctx<'a> {
        let path = if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        };
        Ctx::new(self.file, path)
    }

    pub fn index(&self, i: usize) -> Ctx<'a> {
        Ctx::new(self.file, format!("{}[{i}]", self.path))
    }

    pub fn error(&self, node: &Node, message: impl Into<String>) -> OrderError {
        OrderError::Config {
            file: self.file.to_path_buf(),
            line: node.line,
            field: self.path.clone(),
            message: message.into(),
        }
    }
}

pub(crate) fn type_name(node: &Node) -> &'static str {
    match node.value {
        NodeValue::Null => "null",
        NodeValue::Bool(_) => "bool",
        NodeValue::Int(_) => "int",
        NodeValue::Float(_) => "float",
        NodeValue::Str { .. } => "string",
        NodeValue::Seq(_) => "list",
        NodeValue::Map(_) => "map",
    }
}

/// The entries of a map node; `null` is an empty map.
pub(crate) fn entries<'n>(node: &'n Node, ctx: &Ctx) -> Result<&'n [(Node, Node)], OrderError> {
    match &node.value {
        NodeValue::Map(e) => Ok(e),
        NodeValue::Null => Ok(&[]),
        _ => Err(ctx.error(node, format!("expected a map, found a {}", type_name(node)))),
    }
}

/// A field of a map node: exact name first, then case-insensitive (as Go's
/// JSON decoder does). `null` counts as absent.
pub(crate) fn field<'n>(
    node: &'n Node,
    name: &str,
    ctx: &Ctx,
) -> Result<Option<&'n Node>, OrderError> {
    let es = entries(node, ctx)?;
    let found = es
        .iter()
        .find(|(k, _)| k.key_string() == name)
        .or_else(|| {
            es.iter()
                .find(|(k, _)| k.key_string().eq_ignore_ascii_case(name))
        })
        .map(|(_, v)| v);
    Ok(found.filter(|v| !matches!(v.value, NodeValue::Null)))
}

pub(crate) fn string(node: &Node, name: &str, ctx: &Ctx) -> Result<String, OrderError> {
    match field(node, name, ctx)? {
        None => Ok(String::new()),
        Some(Node {
            value: NodeValue::Str { value, .. },
            ..
        }) => Ok(value.clone()),
        Some(other) => Err(ctx.field(name).error(
            other,
            format!("expected a string, found a {} (quote it)", type_name(other)),
        )),
    }
}

pub(crate) fn boolean(node: &Node, name: &str, ctx: &Ctx) -> Result<bool, OrderError> {
    match field(node, name, ctx)? {
        None => Ok(false),
        Some(Node {
            value: NodeValue::Bool(b),
            ..
        }) => Ok(*b),
        Some(other) => Err(ctx.field(name).error(
            other,
            format!("expected true or false, found a {}", type_name(other)),
        )),
    }
}

/// The items of a list field, each with its own context; absent is empty.
pub(crate) fn list<'n, 'a>(
    node: &'n Node,
    name: &str,
    ctx: &Ctx<'a>,
) -> Result<Vec<(&'n Node, Ctx<'a>)>, OrderError> {
    let fctx = ctx.field(name);
    match field(node, name, ctx)? {
        None => Ok(Vec::new()),
        Some(Node {
            value: NodeValue::Seq(items),
            ..
        }) => Ok(items
            .iter()
            .enumerate()
            .map(|(i, n)| (n, fctx.index(i)))
            .collect()),
        Some(other) => Err(fctx.error(
            other,
            format!("expected a list, found a {}", type_name(other)),
        )),
    }
}

pub(crate) fn string_list(node: &Node, name: &str, ctx: &Ctx) -> Result<Vec<String>, OrderError> {
    list(node, name, ctx)?
        .into_iter()
        .map(|(n, c)| match &n.value {
            NodeValue::Str { value, .. } => Ok(value.clone()),
            _ => Err(c.error(
                n,
                format!("expected a string, found a {} (quote it)", type_name(n)),
            )),
        })
        .collect()
}
