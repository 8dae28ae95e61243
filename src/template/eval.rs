//! Starlark side of templates: the runtime functions compiled templates
//! call to build YAML (`__ytt_tpl_*`), YAML fragments and data values as
//! Starlark values, the `@ytt:*` modules, and loading of `.star` /
//! `.lib.yml` files from the input set.

use super::compile::{Compiled, TAG_SHIFT};
use super::node::{Ann, Kind, Node, Pos, Scalar, Val};
use allocative::Allocative;
use starlark::any::ProvidesStaticType;
use starlark::environment::{FrozenModule, Globals, GlobalsBuilder, LibraryExtension, Module};
use starlark::eval::{Evaluator, FileLoader};
use starlark::starlark_complex_value;
use starlark::starlark_module;
use starlark::starlark_simple_value;
use starlark::syntax::{AstModule, Dialect};
use starlark::values::dict::{AllocDict, DictRef};
use starlark::values::list::{AllocList, ListRef};
use starlark::values::none::NoneType;
use starlark::values::structs::{AllocStruct, StructRef};
use starlark::values::tuple::{TupleRef, UnpackTuple};
use starlark::values::{
    starlark_value, Heap, NoSerialize, StarlarkPagablePanic, StarlarkValue, Value,
};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

/// An overlay matcher built by `@ytt:overlay` functions.
#[derive(Debug, Clone)]
pub enum Matcher {
    All,
    Subset(Val),
    MapKey(String),
    Index(i64),
    And(Vec<Matcher>),
    Or(Vec<Matcher>),
    Not(Box<Matcher>),
}

/// A Starlark function kept for later calls (overlay matchers, `via=`):
/// the index into the list of functions its evaluation recorded.
#[derive(Debug, Clone)]
pub struct FuncRef {
    pub eval_id: usize,
    pub idx: usize,
    pub desc: String,
}

/// An annotation argument after evaluation.
#[derive(Debug, Clone)]
pub enum AnnVal {
    Data(Val),
    Matcher(Matcher),
    Func(FuncRef),
    /// A value we cannot use outside Starlark (e.g. a function).
    Other(String),
}

impl AnnVal {
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            AnnVal::Data(Val::Scalar(Scalar::Bool(b))) => Some(*b),
            _ => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            AnnVal::Data(Val::Scalar(Scalar::Str(s))) => Some(s),
            _ => None,
        }
    }
}

#[derive(Debug, ProvidesStaticType, NoSerialize, Allocative, StarlarkPagablePanic)]
pub struct StarMatcher(#[allocative(skip)] pub Matcher);
starlark_simple_value!(StarMatcher);

impl std::fmt::Display for StarMatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<overlay matcher>")
    }
}

#[starlark_value(type = "function")]
impl<'v> StarlarkValue<'v> for StarMatcher {
    /// Matchers are functions `(index_or_key, left, right) -> bool` in ytt.
    fn invoke(
        &self,
        _me: Value<'v>,
        args: &starlark::eval::Arguments<'v, '_>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> starlark::Result<Value<'v>> {
        args.no_named_args()?;
        let [_idx, left, right] = args.positional::<3>(eval.heap())?;
        let pos = Pos::unknown();
        let conv = |v: Value<'v>| to_val(v, &pos).map_err(|e| starlark::Error::new_other(err(e)));
        let (l, r) = (conv(left)?, conv(right)?);
        let idx = _idx.unpack_i32().unwrap_or(0).max(0) as usize;
        let ok = super::overlay::run_builtin_matcher(&self.0, idx, &l, &r)
            .map_err(|e| starlark::Error::new_other(err(e.message)))?;
        Ok(Value::new_bool(ok))
    }
}

/// `template.replace` result: setting it as a node value does nothing.
#[derive(Debug, ProvidesStaticType, NoSerialize, Allocative, StarlarkPagablePanic)]
pub struct Noop;
starlark_simple_value!(Noop);
impl std::fmt::Display for Noop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "noop")
    }
}
#[starlark_value(type = "noop")]
impl<'v> StarlarkValue<'v> for Noop {}

/// A map, array or document set inside a tree that every value read from
/// it shares: reading `data.values.big` points into the tree instead of
/// copying `big` (a copy per access made a loop over a values file
/// quadratic, 1.1 GB for a 200 KB file, and the copies lay outside the
/// Starlark heap's limit; re-probe 10).
#[derive(Debug, Clone)]
pub struct SharedNode {
    root: Arc<Node>,
    /// `items[i].val` at each step from the root.
    path: Arc<[u32]>,
}

impl SharedNode {
    /// A new tree, counted against the heap limit
    /// ([`super::guard::charge_outside`]).
    pub fn new(root: Arc<Node>) -> Self {
        super::guard::charge_outside(approx_size(&root));
        Self::input(root)
    }

    /// The data values: input, not built by the template, so not charged.
    fn input(root: Arc<Node>) -> Self {
        SharedNode {
            root,
            path: Arc::from(Vec::new()),
        }
    }

    /// The node this points at.
    pub fn node(&self) -> &Node {
        let mut n: &Node = &self.root;
        for &i in self.path.iter() {
            // Paths are only made to a child node of an immutable tree.
            match n.items.get(i as usize).map(|it| &it.val) {
                Some(Val::Node(b)) => n = b,
                _ => return n,
            }
        }
        n
    }

    /// The node at `items[i].val` (a map, array or document set).
    fn child(&self, i: usize) -> SharedNode {
        let mut path = self.path.to_vec();
        path.push(i as u32);
        SharedNode {
            root: self.root.clone(),
            path: Arc::from(path),
        }
    }
}

/// About the bytes a tree holds (nodes and their strings), without
/// recursion.
fn approx_size(root: &Node) -> usize {
    let scalar = |s: &Scalar| match s {
        Scalar::Str(t) => t.len(),
        _ => 0,
    };
    let mut total = 0usize;
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        total = total
            .saturating_add(std::mem::size_of::<Node>())
            .saturating_add(scalar(&n.key));
        match &n.val {
            Val::Scalar(s) => total = total.saturating_add(scalar(s)),
            Val::Node(b) => stack.push(b),
        }
        stack.extend(n.items.iter());
    }
    total
}

/// Data values as the template reads them ([`SharedNode::input`]).
fn from_input_val<'v>(v: Val, heap: Heap<'v>) -> Value<'v> {
    match v {
        Val::Node(n) if matches!(n.kind, Kind::Map | Kind::DocSet) => {
            heap.alloc(Frag(SharedNode::input(Arc::new(*n))))
        }
        other => from_val(&other, heap),
    }
}

/// A YAML fragment (map, array or document set) or a data values map.
#[derive(Debug, ProvidesStaticType, NoSerialize, Allocative, StarlarkPagablePanic)]
pub struct Frag(#[allocative(skip)] pub SharedNode);
starlark_simple_value!(Frag);

/// `items[i].val` of `parent` as a data value: maps stay shared.
fn from_val_in<'v>(parent: &SharedNode, i: usize, heap: Heap<'v>) -> Value<'v> {
    let Some(item) = parent.node().items.get(i) else {
        return Value::new_none();
    };
    match &item.val {
        Val::Scalar(s) => scalar_to_value(s, heap),
        Val::Node(n) => match n.kind {
            Kind::Map | Kind::DocSet => heap.alloc(Frag(parent.child(i))),
            Kind::Array => {
                let child = parent.child(i);
                let items: Vec<Value> = (0..n.items.len())
                    .map(|j| from_val_in(&child, j, heap))
                    .collect();
                heap.alloc(AllocList(items))
            }
            _ => Value::new_none(),
        },
    }
}

/// Starlark-style repr of a YAML value (dicts, lists, True/None).
fn repr_val(v: &Val) -> String {
    match v {
        Val::Scalar(Scalar::Null) => "None".into(),
        Val::Scalar(Scalar::Bool(b)) => {
            if *b {
                "True".into()
            } else {
                "False".into()
            }
        }
        Val::Scalar(Scalar::Str(s)) => format!("{s:?}"),
        Val::Scalar(x) => x.display(),
        Val::Node(n) => match n.kind {
            Kind::Map => {
                let items: Vec<String> = n
                    .items
                    .iter()
                    .map(|i| {
                        format!(
                            "{}: {}",
                            repr_val(&Val::Scalar(i.key.clone())),
                            repr_val(&i.val)
                        )
                    })
                    .collect();
                format!("{{{}}}", items.join(", "))
            }
            _ => {
                let items: Vec<String> = n.items.iter().map(|i| repr_val(&i.val)).collect();
                format!("[{}]", items.join(", "))
            }
        },
    }
}

impl std::fmt::Display for Frag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // a data values map is a struct in ytt, printed without its fields
        if self.0.node().kind == Kind::Map {
            return write!(f, "struct(...)");
        }
        write!(
            f,
            "{}",
            repr_val(&Val::Node(Box::new(self.0.node().clone())))
        )
    }
}

fn scalar_matches_value(s: &Scalar, v: Value) -> bool {
    match s {
        Scalar::Str(k) => v.unpack_str() == Some(k.as_str()),
        Scalar::Int(i) => v.unpack_i32().map(|x| x as i64) == Some(*i),
        Scalar::Bool(b) => v.unpack_bool() == Some(*b),
        Scalar::Null => v.is_none(),
        Scalar::Float(_) => false,
    }
}

#[starlark_value(type = "struct")]
impl<'v> StarlarkValue<'v> for Frag {
    fn get_attr(&self, attribute: &str, heap: Heap<'v>) -> Option<Value<'v>> {
        let n = self.0.node();
        if n.kind != Kind::Map {
            return None;
        }
        n.items
            .iter()
            .enumerate()
            .rev()
            .find(|(_, i)| matches!(&i.key, Scalar::Str(k) if k == attribute))
            .map(|(idx, _)| from_val_in(&self.0, idx, heap))
    }
    fn has_attr(&self, attribute: &str, _heap: Heap<'v>) -> bool {
        let n = self.0.node();
        n.kind == Kind::Map
            && n.items
                .iter()
                .any(|i| matches!(&i.key, Scalar::Str(k) if k == attribute))
    }
    fn dir_attr(&self) -> Vec<String> {
        self.0
            .node()
            .items
            .iter()
            .map(|i| i.key.display())
            .collect()
    }
    fn at(&self, index: Value<'v>, heap: Heap<'v>) -> starlark::Result<Value<'v>> {
        let node = self.0.node();
        match node.kind {
            Kind::Map => {
                for (idx, i) in node.items.iter().enumerate().rev() {
                    if scalar_matches_value(&i.key, index) {
                        return Ok(from_val_in(&self.0, idx, heap));
                    }
                }
                Err(starlark::Error::new_other(anyhow::anyhow!(
                    "key {} not found",
                    index
                )))
            }
            _ => {
                let n = node.items.len() as i32;
                let mut i = index.unpack_i32().ok_or_else(|| {
                    starlark::Error::new_other(anyhow::anyhow!("index must be an int"))
                })?;
                if i < 0 {
                    i += n;
                }
                if i < 0 || i >= n {
                    return Err(starlark::Error::new_other(anyhow::anyhow!(
                        "index out of range"
                    )));
                }
                Ok(from_val_in(&self.0, i as usize, heap))
            }
        }
    }
    fn length(&self) -> starlark::Result<i32> {
        Ok(self.0.node().items.len() as i32)
    }
    fn to_bool(&self) -> bool {
        !self.0.node().items.is_empty()
    }
    fn iterate_collect(&self, heap: Heap<'v>) -> starlark::Result<Vec<Value<'v>>> {
        let node = self.0.node();
        Ok(match node.kind {
            Kind::Map => node
                .items
                .iter()
                .map(|i| scalar_to_value(&i.key, heap))
                .collect(),
            _ => (0..node.items.len())
                .map(|idx| from_val_in(&self.0, idx, heap))
                .collect(),
        })
    }
    fn is_in(&self, other: Value<'v>) -> starlark::Result<bool> {
        let node = self.0.node();
        Ok(match node.kind {
            Kind::Map => node
                .items
                .iter()
                .any(|i| scalar_matches_value(&i.key, other)),
            _ => false,
        })
    }
    fn equals(&self, other: Value<'v>) -> starlark::Result<bool> {
        match Frag::from_value(other) {
            Some(o) => Ok(super::overlay::val_equal(
                &Val::Node(Box::new(self.0.node().clone())),
                &Val::Node(Box::new(o.0.node().clone())),
            )),
            None => Ok(false),
        }
    }
}

/// ytt's `yamlfragment`: what a function made of YAML returns (a map, an
/// array, a document set, or nothing when no node was produced). Indexable
/// by key or position, iterable, a mapping for `**` and `dict()`, without
/// attributes; values inside are fragments too.
#[derive(Debug, ProvidesStaticType, NoSerialize, Allocative, StarlarkPagablePanic)]
pub struct YFrag(#[allocative(skip)] pub Option<SharedNode>);
starlark_simple_value!(YFrag);

impl std::fmt::Display for YFrag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // ytt prints the Go type it wraps
        let t = match self.0.as_ref().map(|n| n.node().kind) {
            Some(Kind::Map) => "*yamlmeta.Map",
            Some(Kind::Array) => "*yamlmeta.Array",
            Some(Kind::DocSet) => "*yamlmeta.DocumentSet",
            _ => "<nil>",
        };
        write!(f, "yamlfragment({t})")
    }
}

/// `items[i].val` of a fragment: collections stay fragments, shared.
fn from_val_frag_in<'v>(parent: &SharedNode, i: usize, heap: Heap<'v>) -> Value<'v> {
    let Some(item) = parent.node().items.get(i) else {
        return Value::new_none();
    };
    match &item.val {
        Val::Scalar(s) => scalar_to_value(s, heap),
        Val::Node(n) => match n.kind {
            Kind::Map | Kind::Array | Kind::DocSet => heap.alloc(YFrag(Some(parent.child(i)))),
            _ => Value::new_none(),
        },
    }
}

impl YFrag {
    fn items(&self) -> &[Node] {
        self.0
            .as_ref()
            .map(|n| n.node().items.as_slice())
            .unwrap_or(&[])
    }
    fn is_map(&self) -> bool {
        self.0.as_ref().is_some_and(|n| n.node().kind == Kind::Map)
    }
    /// `items[i].val` as a fragment value.
    fn item<'v>(&self, i: usize, heap: Heap<'v>) -> Value<'v> {
        match &self.0 {
            Some(n) => from_val_frag_in(n, i, heap),
            None => Value::new_none(),
        }
    }
    fn index(&self, index: Value) -> Option<usize> {
        let n = self.items().len() as i64;
        let mut i = index.unpack_i32()? as i64;
        if i < 0 {
            i += n;
        }
        (0..n).contains(&i).then_some(i as usize)
    }
}

#[starlark_value(type = "yamlfragment")]
impl<'v> StarlarkValue<'v> for YFrag {
    fn at(&self, index: Value<'v>, heap: Heap<'v>) -> starlark::Result<Value<'v>> {
        if self.is_map() {
            for (idx, i) in self.items().iter().enumerate().rev() {
                if scalar_matches_value(&i.key, index) {
                    return Ok(self.item(idx, heap));
                }
            }
            return Err(starlark::Error::new_other(anyhow::anyhow!(
                "key {} not found",
                index.to_repr()
            )));
        }
        if index.unpack_i32().is_none() {
            return Err(starlark::Error::new_other(anyhow::anyhow!(
                "yamlfragment index: got {}, want int",
                index.get_type()
            )));
        }
        match self.index(index) {
            Some(i) => Ok(self.item(i, heap)),
            None => Err(starlark::Error::new_other(anyhow::anyhow!(
                "index {} out of range: yamlfragment has {} elements",
                index,
                self.items().len()
            ))),
        }
    }
    fn length(&self) -> starlark::Result<i32> {
        Ok(self.items().len() as i32)
    }
    fn to_bool(&self) -> bool {
        !self.items().is_empty()
    }
    fn iterate_collect(&self, heap: Heap<'v>) -> starlark::Result<Vec<Value<'v>>> {
        Ok(if self.is_map() {
            self.items()
                .iter()
                .map(|i| scalar_to_value(&i.key, heap))
                .collect()
        } else {
            (0..self.items().len())
                .map(|idx| self.item(idx, heap))
                .collect()
        })
    }
    fn is_in(&self, other: Value<'v>) -> starlark::Result<bool> {
        // ytt looks the value up as a key, or for arrays as an index
        Ok(if self.is_map() {
            self.items()
                .iter()
                .any(|i| scalar_matches_value(&i.key, other))
        } else {
            self.index(other).is_some()
        })
    }
    fn equals(&self, other: Value<'v>) -> starlark::Result<bool> {
        match YFrag::from_value(other) {
            Some(o) => match (&self.0, &o.0) {
                (Some(a), Some(b)) => Ok(super::overlay::val_equal(
                    &Val::Node(Box::new(a.node().clone())),
                    &Val::Node(Box::new(b.node().clone())),
                )),
                (None, None) => Ok(true),
                _ => Ok(false),
            },
            None => Ok(false),
        }
    }
}

/// A fragment as a plain dict (for `**` and `dict()`), else `None`.
fn frag_as_dict<'v>(v: Value<'v>, heap: Heap<'v>) -> Option<Value<'v>> {
    if let Some(f) = YFrag::from_value(v) {
        if !(f.is_map() || f.0.is_none()) {
            return None;
        }
        let items: Vec<(Value, Value)> = f
            .items()
            .iter()
            .enumerate()
            .map(|(idx, i)| (scalar_to_value(&i.key, heap), f.item(idx, heap)))
            .collect();
        return Some(heap.alloc(AllocDict(items)));
    }
    if let Some(s) = YStruct::from_value(v) {
        return Some(heap.alloc(AllocDict(s.0.clone())));
    }
    let f = Frag::from_value(v)?;
    let node = f.0.node();
    if node.kind != Kind::Map {
        return None;
    }
    let items: Vec<(Value, Value)> = node
        .items
        .iter()
        .enumerate()
        .map(|(idx, i)| (scalar_to_value(&i.key, heap), from_val_in(&f.0, idx, heap)))
        .collect();
    Some(heap.alloc(AllocDict(items)))
}

/// ytt's `struct` (`struct.make`, `struct.make_and_bind`, `__ns`): fields
/// read as attributes and, as in ytt, also as a mapping (`s["k"]`, `in`,
/// iteration over the names, `len`).
#[derive(
    Debug,
    starlark::values::Trace,
    starlark::values::Freeze,
    starlark::coerce::Coerce,
    ProvidesStaticType,
    NoSerialize,
    Allocative,
    StarlarkPagablePanic,
)]
#[repr(C)]
pub struct YStructGen<V: starlark::values::ValueLifetimeless>(pub Vec<(V, V)>);
starlark_complex_value!(pub YStruct);

impl<'v, V: starlark::values::ValueLike<'v>> std::fmt::Display for YStructGen<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "struct(...)")
    }
}

impl<'v, V: starlark::values::ValueLike<'v>> YStructGen<V> {
    fn get(&self, name: &str) -> Option<Value<'v>> {
        self.0
            .iter()
            .find(|(k, _)| k.to_value().unpack_str() == Some(name))
            .map(|(_, v)| v.to_value())
    }
}

#[starlark_value(type = "struct")]
impl<'v, V: starlark::values::ValueLike<'v>> StarlarkValue<'v> for YStructGen<V>
where
    Self: ProvidesStaticType<'v>,
{
    fn get_attr(&self, attribute: &str, _heap: Heap<'v>) -> Option<Value<'v>> {
        self.get(attribute)
    }
    fn has_attr(&self, attribute: &str, _heap: Heap<'v>) -> bool {
        self.get(attribute).is_some()
    }
    fn dir_attr(&self) -> Vec<String> {
        self.0
            .iter()
            .filter_map(|(k, _)| k.to_value().unpack_str().map(str::to_string))
            .collect()
    }
    fn at(&self, index: Value<'v>, _heap: Heap<'v>) -> starlark::Result<Value<'v>> {
        let Some(name) = index.unpack_str() else {
            return Err(starlark::Error::new_other(anyhow::anyhow!(
                "struct key must be a string, but was {}",
                index.get_type()
            )));
        };
        self.get(name).ok_or_else(|| {
            starlark::Error::new_other(anyhow::anyhow!("struct has no .{name} attribute"))
        })
    }
    fn is_in(&self, other: Value<'v>) -> starlark::Result<bool> {
        Ok(other.unpack_str().is_some_and(|k| self.get(k).is_some()))
    }
    fn length(&self) -> starlark::Result<i32> {
        Ok(self.0.len() as i32)
    }
    fn iterate_collect(&self, _heap: Heap<'v>) -> starlark::Result<Vec<Value<'v>>> {
        Ok(self.0.iter().map(|(k, _)| k.to_value()).collect())
    }
    fn equals(&self, other: Value<'v>) -> starlark::Result<bool> {
        let Some(o) = YStruct::from_value(other) else {
            return Ok(false);
        };
        if o.0.len() != self.0.len() {
            return Ok(false);
        }
        for (k, v) in &self.0 {
            let Some(ov) = k.to_value().unpack_str().and_then(|k| o.get(k)) else {
                return Ok(false);
            };
            if !v.to_value().equals(ov)? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

pub fn scalar_to_value<'v>(s: &Scalar, heap: Heap<'v>) -> Value<'v> {
    match s {
        Scalar::Null => Value::new_none(),
        Scalar::Bool(b) => Value::new_bool(*b),
        Scalar::Int(i) => heap.alloc(*i),
        Scalar::Float(f) => heap.alloc(*f),
        Scalar::Str(s) => heap.alloc(s.as_str()),
    }
}

/// YAML value -> Starlark: maps become struct-like fragments, arrays lists.
pub fn from_val<'v>(v: &Val, heap: Heap<'v>) -> Value<'v> {
    match v {
        Val::Scalar(s) => scalar_to_value(s, heap),
        Val::Node(n) => match n.kind {
            Kind::Map | Kind::DocSet => heap.alloc(Frag(SharedNode::new(Arc::new((**n).clone())))),
            Kind::Array => {
                let items: Vec<Value> = n.items.iter().map(|i| from_val(&i.val, heap)).collect();
                heap.alloc(AllocList(items))
            }
            _ => Value::new_none(),
        },
    }
}

/// Deepest nesting of lists, dicts, structs and YAML fragments converted
/// from Starlark into YAML (emitted, or given to `yaml.encode`,
/// `json.encode`, `toml.encode`, `struct.encode`): the YAML readers' limit.
/// A dict that contains itself (`d["x"] = d`) is infinitely deep; a loop
/// (`d = [d]`) builds millions of levels within the heap limit.
pub const MAX_VALUE_DEPTH: usize = 256;

fn value_too_deep() -> String {
    format!(
        "a value nested deeper than {MAX_VALUE_DEPTH} levels (a list or dict that contains itself?): build a flatter value"
    )
}

/// Whether a YAML value nests maps, arrays or document sets more than
/// `budget` levels (recursion bounded by `budget`).
fn val_deeper_than(v: &Val, budget: usize) -> bool {
    match v {
        Val::Scalar(_) => false,
        Val::Node(n) => node_deeper_than(n, budget),
    }
}

fn node_deeper_than(n: &Node, budget: usize) -> bool {
    let budget = if matches!(n.kind, Kind::Map | Kind::Array | Kind::DocSet) {
        match budget.checked_sub(1) {
            Some(b) => b,
            None => return true,
        }
    } else {
        budget
    };
    val_deeper_than(&n.val, budget) || n.items.iter().any(|i| node_deeper_than(i, budget))
}

/// Starlark -> YAML value.
pub fn to_val(v: Value, pos: &Pos) -> Result<Val, String> {
    to_val_at(v, pos, 0)
}

/// [`to_val`] of a value `depth` levels down.
fn to_val_at(v: Value, pos: &Pos, depth: usize) -> Result<Val, String> {
    if v.is_none() {
        return Ok(Val::null());
    }
    if let Some(b) = v.unpack_bool() {
        return Ok(Val::Scalar(Scalar::Bool(b)));
    }
    if let Some(i) = v.unpack_i32() {
        return Ok(Val::Scalar(Scalar::Int(i as i64)));
    }
    if let Some(s) = v.unpack_str() {
        return Ok(Val::Scalar(Scalar::Str(s.to_string())));
    }
    match v.get_type() {
        "int" => {
            let s = v.to_str();
            return s
                .parse::<i64>()
                .map(|i| Val::Scalar(Scalar::Int(i)))
                .map_err(|_| format!("integer {s} is too large"));
        }
        "float" => {
            let f: f64 = v.to_str().parse().unwrap_or(f64::NAN);
            let f = if let Ok(ff) = v.to_repr().parse::<f64>() {
                ff
            } else {
                f
            };
            return Ok(Val::Scalar(Scalar::Float(f)));
        }
        _ => {}
    }
    // Everything below holds values: one level deeper.
    if depth >= MAX_VALUE_DEPTH {
        return Err(value_too_deep());
    }
    let depth = depth + 1;
    if let Some(f) = Frag::from_value(v) {
        if node_deeper_than(f.0.node(), MAX_VALUE_DEPTH - depth + 1) {
            return Err(value_too_deep());
        }
        let mut n = f.0.node().clone();
        n.set_pos_deep(pos);
        return Ok(Val::Node(Box::new(n)));
    }
    if let Some(f) = YFrag::from_value(v) {
        return Ok(match &f.0 {
            Some(n) => {
                if node_deeper_than(n.node(), MAX_VALUE_DEPTH - depth + 1) {
                    return Err(value_too_deep());
                }
                let mut n = n.node().clone();
                n.set_pos_deep(pos);
                Val::Node(Box::new(n))
            }
            None => Val::null(),
        });
    }
    if let Some(l) = ListRef::from_value(v) {
        return list_to_val(l.iter(), pos, depth);
    }
    if let Some(t) = TupleRef::from_value(v) {
        return list_to_val(t.iter(), pos, depth);
    }
    if let Some(d) = DictRef::from_value(v) {
        let mut m = Node::map(pos.clone());
        for (k, val) in d.iter() {
            let key = match to_val_at(k, pos, depth)? {
                Val::Scalar(s) => s,
                Val::Node(_) => return Err("map keys must be scalars".into()),
            };
            m.items.push(Node::map_item(
                key,
                to_val_at(val, pos, depth)?,
                pos.clone(),
            ));
        }
        return Ok(Val::Node(Box::new(m)));
    }
    if let Some(s) = StructRef::from_value(v) {
        if let Some((_, hint)) = s.iter().find(|(k, _)| k.as_str() == "__ytt_wont_encode") {
            return Err(format!(
                "Unable to convert value: {}",
                hint.unpack_str().unwrap_or("value does not encode")
            ));
        }
        let mut m = Node::map(pos.clone());
        for (k, val) in s.iter() {
            m.items.push(Node::map_item(
                Scalar::Str(k.as_str().to_string()),
                to_val_at(val, pos, depth)?,
                pos.clone(),
            ));
        }
        return Ok(Val::Node(Box::new(m)));
    }
    if let Some(s) = YStruct::from_value(v) {
        let mut m = Node::map(pos.clone());
        for (k, val) in &s.0 {
            m.items.push(Node::map_item(
                Scalar::Str(k.unpack_str().unwrap_or_default().to_string()),
                to_val_at(*val, pos, depth)?,
                pos.clone(),
            ));
        }
        return Ok(Val::Node(Box::new(m)));
    }
    Err(format!(
        "Unable to convert value: {} (type {})",
        v,
        v.get_type()
    ))
}

fn list_to_val<'v>(
    it: impl Iterator<Item = Value<'v>>,
    pos: &Pos,
    depth: usize,
) -> Result<Val, String> {
    let mut a = Node::array(pos.clone());
    for x in it {
        a.items
            .push(Node::array_item(to_val_at(x, pos, depth)?, pos.clone()));
    }
    Ok(Val::Node(Box::new(a)))
}

fn is_callable(v: Value) -> bool {
    matches!(
        v.get_type(),
        "function" | "native_function" | "partial" | "lambda"
    )
}

/// Records a function in the module being evaluated so it survives freezing.
fn keep_func<'v>(v: Value<'v>, eval: &Evaluator<'v, '_, '_>, c: &Ctx) -> FuncRef {
    let m = eval.module();
    let mut items: Vec<Value<'v>> = m
        .extra_value()
        .and_then(|l| ListRef::from_value(l).map(|l| l.content().to_vec()))
        .unwrap_or_default();
    items.push(v);
    let idx = items.len() - 1;
    m.set_extra_value(eval.heap().alloc(AllocList(items)));
    FuncRef {
        eval_id: c.id,
        idx,
        desc: v.to_repr(),
    }
}

fn func_value<'v>(f: &FuncRef, eval: &Evaluator<'v, '_, '_>, c: &Ctx) -> anyhow::Result<Value<'v>> {
    let list = if f.eval_id == c.id {
        eval.module().extra_value()
    } else {
        let funcs = c.reg.funcs.borrow();
        // SAFETY: the evaluator's frozen heap now references the owner, so
        // the value lives as long as the module being evaluated.
        funcs
            .get(&f.eval_id)
            .map(|o| unsafe { o.owned_frozen_value(eval.frozen_heap()) }.to_value())
    };
    list.and_then(|l| ListRef::from_value(l).and_then(|l| l.content().get(f.idx).copied()))
        .ok_or_else(|| err(format!("internal: function {} is gone", f.desc)))
}

/// Calls functions for the overlay engine from inside an evaluation.
pub struct EvalCaller<'a, 'v, 'b, 'c> {
    pub eval: &'a mut Evaluator<'v, 'b, 'c>,
    /// Set when the evaluator's module may receive strata's helpers.
    pub globals: Option<&'a Globals>,
}

fn arg_value<'v>(
    a: &super::overlay::Arg,
    eval: &Evaluator<'v, '_, '_>,
    c: &Ctx,
) -> Result<Value<'v>, String> {
    use super::overlay::Arg;
    let heap = eval.heap();
    Ok(match a {
        Arg::Int(i) => heap.alloc(*i),
        Arg::Str(s) => heap.alloc(s.as_str()),
        Arg::Val(v) => from_val(v, heap),
        Arg::Plain(v) => from_val_plain(v, heap),
        Arg::Kept(f) => func_value(f, eval, c).map_err(|e| e.to_string())?,
        Arg::List(items) => {
            let vs: Result<Vec<Value>, String> =
                items.iter().map(|x| arg_value(x, eval, c)).collect();
            heap.alloc(AllocList(vs?))
        }
        Arg::Dict(items) => {
            let mut vs = Vec::new();
            for (k, x) in items {
                vs.push((heap.alloc(k.as_str()), arg_value(x, eval, c)?));
            }
            heap.alloc(AllocDict(vs))
        }
    })
}

impl<'v> EvalCaller<'_, 'v, '_, '_> {
    fn call_value(&mut self, fv: Value<'v>, args: &[super::overlay::Arg]) -> Result<Val, String> {
        let c = ctx(self.eval).map_err(|e| e.to_string())?;
        let args: Result<Vec<Value>, String> =
            args.iter().map(|a| arg_value(a, self.eval, c)).collect();
        let args = args?;
        let r = self
            .eval
            .eval_function(fv, &args, &[])
            .map_err(|e| ytt_message(&format!("{}", e.without_diagnostic())))?;
        to_val(r, &Pos::unknown())
    }
}

impl super::overlay::Caller for EvalCaller<'_, '_, '_, '_> {
    fn call(&mut self, f: &FuncRef, args: Vec<super::overlay::Arg>) -> Result<Val, String> {
        let c = ctx(self.eval).map_err(|e| e.to_string())?;
        let fv = func_value(f, self.eval, c).map_err(|e| e.to_string())?;
        self.call_value(fv, &args)
    }

    fn call_helper(&mut self, name: &str, args: Vec<super::overlay::Arg>) -> Result<Val, String> {
        if self.eval.module().get(name).is_none() {
            let globals = self
                .globals
                .ok_or_else(|| format!("internal: helper {name} unavailable here"))?;
            let helpers = format!(
                "{}\n{}",
                include_str!("lib/assert.star"),
                include_str!("lib/validate.star")
            );
            // the helpers are strata's own code: a failure here is a bug
            let ast = AstModule::parse("strata-helpers", helpers, &dialect())
                .map_err(|e| format!("internal: strata helpers: {e}"))?;
            self.eval
                .eval_module(ast, globals)
                .map_err(|e| format!("internal: strata helpers: {e}"))?;
        }
        let fv = self
            .eval
            .module()
            .get(name)
            .ok_or_else(|| format!("internal: helper {name} missing"))?;
        self.call_value(fv, &args)
    }
}

fn to_ann_val<'v>(v: Value<'v>, pos: &Pos, eval: &Evaluator<'v, '_, '_>, c: &Ctx) -> AnnVal {
    if let Some(m) = StarMatcher::from_value(v) {
        return AnnVal::Matcher(m.0.clone());
    }
    if is_callable(v) {
        return AnnVal::Func(keep_func(v, eval, c));
    }
    match to_val(v, pos) {
        Ok(x) => AnnVal::Data(x),
        // tuples holding functions, assertion structs: keep the value itself
        Err(_) => AnnVal::Func(keep_func(v, eval, c)),
    }
}

fn to_matcher(v: Value) -> anyhow::Result<Matcher> {
    if let Some(m) = StarMatcher::from_value(v) {
        return Ok(m.0.clone());
    }
    if let Some(s) = v.unpack_str() {
        return Ok(Matcher::MapKey(s.to_string()));
    }
    anyhow::bail!("expected an overlay matcher, got {}", v.get_type())
}

/// A `#@library/ref` document handed to libraries: its ref (`@lib`,
/// `@lib~alias`, `@lib@child`), the document, whether it is a schema, and
/// whether a library took it.
#[derive(Debug, Clone)]
pub struct LibRef {
    pub lib_ref: String,
    pub doc: Node,
    pub schema: bool,
    /// Values from flags: merged like flags (new keys allowed).
    pub plain: bool,
    /// The ref as the user wrote it (for messages about unused refs).
    pub full_ref: String,
    /// `#@data/values after_library_module=True`: applied after values given
    /// with `with_data_values()`.
    pub after: bool,
    pub used: std::cell::Cell<bool>,
}

/// What one library (or the root) sees: its files and the library refs its
/// data values documents carry for its own private libraries.
#[derive(Debug, Default)]
pub struct Scope {
    pub files: Vec<SrcFile>,
    pub refs: RefCell<Vec<LibRef>>,
    /// `--dangerous-data-values-disable-validation` (inherited by libraries).
    pub disable_validation: bool,
}

/// A library instance as `library.get()` and `with_data_values()` build it.
#[derive(Debug, Clone, Default)]
pub struct LibState {
    pub name: String,
    pub files: Vec<SrcFile>,
    pub schema: Vec<Node>,
    /// Data values documents applied after the library's own: (doc, plain).
    pub values: Vec<(Node, bool)>,
    /// Library-ref documents marked `after_library_module=True`.
    pub after_values: Vec<Node>,
    /// The parent's refs this instance takes: they count as used once the
    /// library is evaluated (as in ytt).
    pub consumed: Vec<(Rc<Scope>, usize)>,
    pub refs: Vec<LibRef>,
    pub ignore_unknown: bool,
    pub implicit_map_key_overrides: bool,
    pub disable_validation: bool,
}

/// All compiled files of a run, shared by every evaluation (functions of
/// one file run while another is evaluated).
#[derive(Default)]
pub struct Registry {
    pub compiled: RefCell<Vec<Rc<Compiled>>>,
    /// Functions each finished evaluation kept (by evaluation id).
    pub funcs: RefCell<HashMap<usize, starlark::values::OwnedFrozenValue>>,
    /// Library instances (handles are indexes).
    pub libs: RefCell<Vec<LibState>>,
    next_id: std::cell::Cell<usize>,
}

struct Entry {
    tag: u64,
    node: Node,
    /// `template.replace` value, and whether it was a YAML fragment (then
    /// duplicate keys are errors, as in ytt)
    replace: Option<(Val, bool)>,
}

#[derive(Default)]
struct ECtx {
    stack: Vec<Entry>,
    pending_anns: HashMap<u64, Vec<Ann>>,
    pending_keys: HashMap<u64, Scalar>,
}

/// Positional and keyword arguments of one annotation.
type Collected = (Vec<AnnVal>, Vec<(String, AnnVal)>);

#[derive(ProvidesStaticType)]
pub struct Ctx {
    id: usize,
    reg: Rc<Registry>,
    scope: Rc<Scope>,
    disable_validation: bool,
    ctxs: RefCell<Vec<ECtx>>,
    root: RefCell<Option<Node>>,
    collected: RefCell<Vec<Collected>>,
    /// Per collected annotation: its positional tuples kept as values
    /// (validation annotations check that a rule is a tuple).
    collected_tuples: RefCell<Vec<Vec<Option<AnnVal>>>>,
    pub data_values: Val,
    pub implicit_map_key_overrides: bool,
}

fn err(msg: impl Into<String>) -> anyhow::Error {
    anyhow::anyhow!(msg.into())
}

impl Ctx {
    pub fn new(reg: Rc<Registry>, scope: Rc<Scope>, data_values: Val, implicit: bool) -> Self {
        let id = reg.next_id.get() + 1;
        reg.next_id.set(id);
        let disable_validation = scope.disable_validation;
        Ctx {
            id,
            reg,
            scope,
            disable_validation,
            ctxs: RefCell::new(Vec::new()),
            root: RefCell::new(None),
            collected: RefCell::new(Vec::new()),
            collected_tuples: RefCell::new(Vec::new()),
            data_values,
            implicit_map_key_overrides: implicit,
        }
    }

    fn tpl(&self, tag: u64) -> anyhow::Result<(Rc<Compiled>, usize)> {
        let fid = (tag / TAG_SHIFT) as usize;
        let idx = (tag % TAG_SHIFT) as usize;
        let c = self
            .reg
            .compiled
            .borrow()
            .get(fid)
            .cloned()
            .ok_or_else(|| err("internal: unknown template"))?;
        if idx >= c.nodes.len() {
            return Err(err("internal: unknown node"));
        }
        Ok((c, idx))
    }

    fn attach(&self, parent: &mut Entry, child: Entry) -> anyhow::Result<()> {
        if let Some((repl, strict)) = child.replace {
            return splice(
                parent,
                &child.node,
                repl,
                self.implicit_map_key_overrides || !strict,
            );
        }
        let node = child.node;
        let p = &mut parent.node;
        if p.kind == Kind::TextRoot {
            p.items.push(node);
            return Ok(());
        }
        if p.has_value_slot() {
            p.val = Val::Node(Box::new(node));
            return Ok(());
        }
        if p.kind == Kind::Map && node.kind == Kind::MapItem {
            if let Some(i) = p.items.iter().position(|x| x.key.same(&node.key)) {
                if node.has_ann("yaml/map-key-override") || self.implicit_map_key_overrides {
                    // as ytt: the earlier item goes, the new one takes its own place
                    p.items.remove(i);
                    p.items.push(node);
                    return Ok(());
                }
                return Err(err(format!(
                    "{}: expected key '{}' to not be specified again (unless 'yaml/map-key-override' annotation is added)",
                    node.pos,
                    node.key.display()
                )));
            }
        }
        p.items.push(node);
        Ok(())
    }

    fn start_node(&self, tag: u64) -> anyhow::Result<()> {
        let (c, idx) = self.tpl(tag)?;
        let t = &c.nodes[idx];
        let mut node = t.node.clone();
        node.anns.clear();
        if node.has_value_slot() && !t.static_subtree {
            node.val = Val::null();
        }
        let needs_wrap;
        {
            let mut ctxs = self.ctxs.borrow_mut();
            let ec = ctxs.last_mut().ok_or_else(|| err("internal: no context"))?;
            if let Some(a) = ec.pending_anns.remove(&tag) {
                node.anns = a;
            }
            if let Some(k) = ec.pending_keys.remove(&tag) {
                node.key = k;
            }
            needs_wrap = ec.stack.is_empty()
                && matches!(
                    node.kind,
                    Kind::MapItem | Kind::ArrayItem | Kind::Doc | Kind::Text
                );
            if !needs_wrap && ec.stack.is_empty() {
                ec.stack.push(Entry {
                    tag,
                    node,
                    replace: None,
                });
                return Ok(());
            }
        }
        if needs_wrap {
            let p = t
                .parent
                .ok_or_else(|| err("internal: node without parent"))?;
            self.start_node(tag - idx as u64 + p as u64)?;
        }
        // unwind to the common ancestor
        let mut chain = Vec::new();
        let mut cur = t.parent;
        while let Some(p) = cur {
            chain.push(tag - idx as u64 + p as u64);
            cur = c.nodes[p].parent;
        }
        let mut ctxs = self.ctxs.borrow_mut();
        let ec = ctxs.last_mut().ok_or_else(|| err("internal: no context"))?;
        loop {
            let top = ec.stack.last().map(|e| e.tag);
            match top {
                Some(tt) if chain.contains(&tt) => break,
                Some(_) if ec.stack.len() > 1 => {
                    let child = ec.stack.pop().expect("non-empty");
                    let parent = ec.stack.last_mut().expect("non-empty");
                    self.attach(parent, child)?;
                }
                _ => {
                    return Err(err(format!(
                        "{}: internal: cannot place node in its parent",
                        node.pos
                    )))
                }
            }
        }
        ec.stack.push(Entry {
            tag,
            node,
            replace: None,
        });
        Ok(())
    }

    fn set_node(&self, tag: u64, v: Option<Value>) -> anyhow::Result<()> {
        let (c, idx) = self.tpl(tag)?;
        let mut ctxs = self.ctxs.borrow_mut();
        let ec = ctxs.last_mut().ok_or_else(|| err("internal: no context"))?;
        let top = ec
            .stack
            .last_mut()
            .ok_or_else(|| err("internal: empty stack"))?;
        match v {
            None => {
                top.node.val = c.nodes[idx].node.val.clone();
            }
            Some(v) => {
                if Noop::from_value(v).is_some() {
                    return Ok(());
                }
                let pos = top.node.pos.clone();
                if top.node.kind == Kind::Text {
                    let Some(text) = v.unpack_str() else {
                        let go_type = match v.get_type() {
                            "int" => "int64",
                            "float" => "float64",
                            "bool" => "bool",
                            "NoneType" => "<nil>",
                            "list" | "tuple" => "[]interface {}",
                            _ => "*orderedmap.Map",
                        };
                        return Err(err(format!(
                            "{pos}: cannot set non-string value ({go_type}), consider using str(...) to convert to string"
                        )));
                    };
                    top.node.val = Val::Scalar(Scalar::Str(text.to_string()));
                    return Ok(());
                }
                // The error's span names the position (as ytt's messages do).
                let val = to_val(v, &pos).map_err(err)?;
                if let Val::Node(n) = &val {
                    if n.kind == Kind::DocSet {
                        let (what, kinds) = match top.node.kind {
                            Kind::MapItem => ("map items", "arrays, maps"),
                            Kind::ArrayItem => ("array items", "maps, arrays"),
                            _ => ("documents", "arrays, maps"),
                        };
                        return Err(err(format!(
                            "{pos}: {what} can only contain {kinds}, or scalars; this is a document set"
                        )));
                    }
                }
                if !top.node.has_value_slot() {
                    return Err(err(format!(
                        "{pos}: cannot set value of a {}",
                        super::compile::kind_name(top.node.kind)
                    )));
                }
                top.node.val = val;
            }
        }
        Ok(())
    }

    fn end_ctx(&self) -> anyhow::Result<Option<Node>> {
        let mut ec = self
            .ctxs
            .borrow_mut()
            .pop()
            .ok_or_else(|| err("internal: unexpected end of context"))?;
        while ec.stack.len() > 1 {
            let child = ec.stack.pop().expect("non-empty");
            let parent = ec.stack.last_mut().expect("non-empty");
            self.attach(parent, child)?;
        }
        Ok(ec.stack.pop().map(|e| e.node))
    }

    fn replace(&self, v: Value) -> anyhow::Result<()> {
        let mut ctxs = self.ctxs.borrow_mut();
        let ec = ctxs.last_mut().ok_or_else(|| err("internal: no context"))?;
        let top = ec
            .stack
            .last_mut()
            .ok_or_else(|| err("internal: empty stack"))?;
        let pos = top.node.pos.clone();
        let strict = Frag::from_value(v).is_some() || YFrag::from_value(v).is_some();
        top.replace = Some((to_val(v, &pos).map_err(err)?, strict));
        Ok(())
    }
}

fn splice(parent: &mut Entry, placeholder: &Node, repl: Val, implicit: bool) -> anyhow::Result<()> {
    let pos = placeholder.pos.clone();
    match placeholder.kind {
        Kind::MapItem => {
            let items = match repl {
                Val::Node(n) if n.kind == Kind::Map => n.items,
                other => {
                    return Err(err(format!(
                        "{pos}: expected value to be map, but was {}",
                        other.type_name()
                    )))
                }
            };
            for it in items {
                if let Some(i) = parent.node.items.iter().position(|x| x.key.same(&it.key)) {
                    if !(implicit || it.has_ann("yaml/map-key-override")) {
                        return Err(err(format!(
                            "{pos}: expected key '{}' to not be specified again (unless 'yaml/map-key-override' annotation is added)",
                            it.key.display()
                        )));
                    }
                    parent.node.items.remove(i);
                    parent.node.items.push(it);
                } else {
                    parent.node.items.push(it);
                }
            }
        }
        Kind::ArrayItem => match repl {
            Val::Node(n) if n.kind == Kind::Array => parent.node.items.extend(n.items),
            other => {
                return Err(err(format!(
                    "{pos}: expected value to be array, but was {}",
                    other.type_name()
                )))
            }
        },
        Kind::Doc => match repl {
            Val::Node(n) if n.kind == Kind::DocSet => parent.node.items.extend(n.items),
            Val::Node(n) if n.kind == Kind::Array => {
                for it in n.items {
                    parent.node.items.push(Node::doc(it.val, pos.clone()));
                }
            }
            other => {
                return Err(err(format!(
                    "{pos}: expected value to be document set, but was {}",
                    other.type_name()
                )))
            }
        },
        _ => {
            return Err(err(format!(
                "{pos}: expected to replace document value, map item or array item"
            )))
        }
    }
    Ok(())
}

fn ctx<'a>(eval: &'a Evaluator) -> anyhow::Result<&'a Ctx> {
    eval.extra
        .and_then(|e| e.downcast_ref::<Ctx>())
        .ok_or_else(|| err("internal: template context missing"))
}

#[starlark_module]
fn tpl_natives(builder: &mut GlobalsBuilder) {
    fn __ytt_tpl_start_ctx(eval: &mut Evaluator) -> anyhow::Result<NoneType> {
        ctx(eval)?.ctxs.borrow_mut().push(ECtx::default());
        Ok(NoneType)
    }

    fn __ytt_tpl_end_ctx<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<Value<'v>> {
        let c = ctx(eval)?;
        let root = c.end_ctx()?;
        if let Some(v) = args.items.first() {
            return Ok(*v);
        }
        Ok(match root {
            Some(n) if n.kind == Kind::TextRoot => eval.heap().alloc(text_root_string(&n)),
            Some(n) => frag_value(n, eval.heap()),
            None => eval.heap().alloc(YFrag(None)),
        })
    }

    fn __ytt_tpl_end_ctx_root(eval: &mut Evaluator) -> anyhow::Result<NoneType> {
        let c = ctx(eval)?;
        let root = c.end_ctx()?;
        *c.root.borrow_mut() = root;
        Ok(NoneType)
    }

    fn __ytt_tpl_start_node(tag: i64, eval: &mut Evaluator) -> anyhow::Result<NoneType> {
        ctx(eval)?.start_node(tag as u64)?;
        Ok(NoneType)
    }

    fn __ytt_tpl_set_node<'v>(
        tag: i64,
        v: Option<Value<'v>>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<NoneType> {
        ctx(eval)?.set_node(tag as u64, v)?;
        Ok(NoneType)
    }

    fn __ytt_tpl_set_map_item_key<'v>(
        tag: i64,
        key: Value<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<NoneType> {
        let c = ctx(eval)?;
        let k = match to_val(key, &Pos::unknown()).map_err(err)? {
            Val::Scalar(s) => s,
            _ => return Err(err("map keys must be scalars")),
        };
        let mut ctxs = c.ctxs.borrow_mut();
        let ec = ctxs.last_mut().ok_or_else(|| err("internal: no context"))?;
        ec.pending_keys.insert(tag as u64, k);
        Ok(NoneType)
    }

    fn __ytt_tpl_collect_node_annotation<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: DictRef<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<i64> {
        let c = ctx(eval)?;
        let pos = Pos::unknown();
        let a: Vec<AnnVal> = args
            .items
            .iter()
            .map(|v| to_ann_val(*v, &pos, eval, c))
            .collect();
        let mut kw = Vec::new();
        for (k, v) in kwargs.iter() {
            kw.push((
                k.unpack_str().unwrap_or("").to_string(),
                to_ann_val(v, &pos, eval, c),
            ));
        }
        let tuples: Vec<Option<AnnVal>> = args
            .items
            .iter()
            .map(|v| {
                TupleRef::from_value(*v)
                    .is_some()
                    .then(|| AnnVal::Func(keep_func(*v, eval, c)))
            })
            .collect();
        c.collected_tuples.borrow_mut().push(tuples);
        let mut col = c.collected.borrow_mut();
        col.push((a, kw));
        Ok(col.len() as i64 - 1)
    }

    fn __ytt_tpl_start_node_annotation(
        tag: i64,
        name: &str,
        handle: i64,
        eval: &mut Evaluator,
    ) -> anyhow::Result<NoneType> {
        let c = ctx(eval)?;
        let (comp, idx) = c.tpl(tag as u64)?;
        let pos = comp.nodes[idx]
            .node
            .anns
            .iter()
            .find(|a| a.name == name)
            .map(|a| a.pos.clone())
            .unwrap_or_default();
        let (mut args, kwargs) = c
            .collected
            .borrow()
            .get(handle as usize)
            .cloned()
            .unwrap_or_default();
        if name == "assert/validate" || name == "schema/validation" {
            if let Some(ts) = c.collected_tuples.borrow().get(handle as usize) {
                for (a, t) in args.iter_mut().zip(ts) {
                    if let Some(t) = t {
                        *a = t.clone();
                    }
                }
            }
        }
        let mut ctxs = c.ctxs.borrow_mut();
        let ec = ctxs.last_mut().ok_or_else(|| err("internal: no context"))?;
        let list = ec.pending_anns.entry(tag as u64).or_default();
        list.retain(|a| a.name != name);
        list.push(Ann {
            name: name.to_string(),
            args,
            kwargs,
            pos,
        });
        Ok(NoneType)
    }

    fn __ns<'v>(
        #[starlark(kwargs)] kwargs: DictRef<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<Value<'v>> {
        let items: Vec<(String, Value<'v>)> = kwargs
            .iter()
            .map(|(k, v)| (k.unpack_str().unwrap_or("").to_string(), v))
            .collect();
        Ok(eval.heap().alloc(AllocStruct(items)))
    }

    fn __lib_get<'v>(
        dir: &str,
        name: &str,
        alias: Value<'v>,
        ignore_unknown_comments: bool,
        implicit_map_key_overrides: bool,
        disable_validation: bool,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<i64> {
        let c = ctx(eval)?;
        let alias = alias.unpack_str();
        let base = if dir.is_empty() {
            format!("_ytt_lib/{name}/")
        } else {
            format!("{dir}/_ytt_lib/{name}/")
        };
        let files: Vec<SrcFile> = c
            .scope
            .files
            .iter()
            .filter(|f| f.path.starts_with(&base))
            .map(|f| SrcFile {
                path: f.path[base.len()..].to_string(),
                text: f.text.clone(),
                mark_type: f.mark_type.clone(),
            })
            .collect();
        if files.is_empty() {
            return Err(err(format!(
                "Expected to find library '{name}' (hint: put it in '{base}')"
            )));
        }
        // as ytt orders a library's files: a directory's own files first
        let mut files = files;
        files.sort_by_key(|f| f.path.matches('/').count());
        let mut st = LibState {
            name: name.to_string(),
            files,
            ignore_unknown: ignore_unknown_comments,
            implicit_map_key_overrides,
            disable_validation: disable_validation || c.disable_validation,
            ..Default::default()
        };
        for (ri, r) in c.scope.refs.borrow().iter().enumerate() {
            let Some((first, rest)) = split_lib_ref(&r.lib_ref) else {
                continue;
            };
            let (rpath, ralias) = match first.split_once('~') {
                Some((p, a)) => (p, Some(a)),
                None => (first, None),
            };
            let path_ok = rpath.is_empty() || rpath == name;
            let alias_ok = match ralias {
                Some(a) => alias == Some(a),
                None => !rpath.is_empty(),
            };
            if !(path_ok && alias_ok) {
                continue;
            }
            st.consumed.push((c.scope.clone(), ri));
            let mut doc = r.doc.clone();
            doc.anns.retain(|a| a.name != "library/ref");
            if rest.is_empty() {
                if r.schema {
                    st.schema.push(doc);
                } else if r.after {
                    st.after_values.push(doc);
                } else {
                    st.values.push((doc, r.plain));
                }
            } else {
                st.refs.push(LibRef {
                    lib_ref: rest.to_string(),
                    doc,
                    schema: r.schema,
                    plain: r.plain,
                    full_ref: r.full_ref.clone(),
                    after: r.after,
                    used: std::cell::Cell::new(false),
                });
            }
        }
        let mut libs = c.reg.libs.borrow_mut();
        libs.push(st);
        Ok(libs.len() as i64 - 1)
    }

    fn __lib_with_dv<'v>(
        handle: i64,
        v: Value<'v>,
        plain: bool,
        schema: bool,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<i64> {
        let c = ctx(eval)?;
        let val = to_val(v, &Pos::unknown()).map_err(err)?;
        if plain && has_anns(&val) {
            return Err(err(
                "Expected to be plain YAML, having no annotations (hint: remove comments starting with `#@`)",
            ));
        }
        let mut libs = c.reg.libs.borrow_mut();
        let mut st = libs
            .get(handle as usize)
            .cloned()
            .ok_or_else(|| err("internal: unknown library"))?;
        let doc = Node::doc(val, Pos::unknown());
        if schema {
            st.schema.push(doc);
        } else {
            st.values.push((doc, plain));
        }
        libs.push(st);
        Ok(libs.len() as i64 - 1)
    }

    fn __lib_eval<'v>(handle: i64, eval: &mut Evaluator<'v, '_, '_>) -> anyhow::Result<Value<'v>> {
        let c = ctx(eval)?;
        let st = c
            .reg
            .libs
            .borrow()
            .get(handle as usize)
            .cloned()
            .ok_or_else(|| err("internal: unknown library"))?;
        mark_used(&st);
        let out = super::run_library(&st, c.reg.clone(), super::LibMode::Eval)
            .map_err(|e| err(format!("Evaluating library '{}': {}", st.name, e.0)))?;
        let mut ds = Node::new(Kind::DocSet, Pos::unknown());
        ds.items = out.docs;
        Ok(eval.heap().alloc(Frag(SharedNode::new(Arc::new(ds)))))
    }

    fn __lib_data_values<'v>(
        handle: i64,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<Value<'v>> {
        let c = ctx(eval)?;
        let st = c
            .reg
            .libs
            .borrow()
            .get(handle as usize)
            .cloned()
            .ok_or_else(|| err("internal: unknown library"))?;
        mark_used(&st);
        let out = super::run_library(&st, c.reg.clone(), super::LibMode::Values)
            .map_err(|e| err(format!("Evaluating library '{}': {}", st.name, e.0)))?;
        Ok(from_input_val(
            out.values.unwrap_or(Val::null()),
            eval.heap(),
        ))
    }

    fn __lib_export<'v>(
        handle: i64,
        name: &str,
        path: Value<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<Value<'v>> {
        let c = ctx(eval)?;
        let path = path.unpack_str();
        let st = c
            .reg
            .libs
            .borrow()
            .get(handle as usize)
            .cloned()
            .ok_or_else(|| err("internal: unknown library"))?;
        if name.starts_with('_') {
            return Err(err(format!(
                "Symbols starting with '_' are private, and cannot be exported (symbol '{name}')"
            )));
        }
        mark_used(&st);
        let mode = super::LibMode::Export(name.to_string(), path.map(str::to_string));
        let out = super::run_library(&st, c.reg.clone(), mode)
            .map_err(|e| err(format!("Exporting from library '{}': {}", st.name, e.0)))?;
        let v = out
            .export
            .ok_or_else(|| err(format!("Expected to find exported symbol '{name}'")))?;
        // SAFETY: the evaluator's frozen heap now references the owner.
        Ok(unsafe { v.owned_frozen_value(eval.frozen_heap()) }.to_value())
    }

    fn __ov_subset<'v>(v: Value<'v>) -> anyhow::Result<StarMatcher> {
        Ok(StarMatcher(Matcher::Subset(
            to_val(v, &Pos::unknown()).map_err(err)?,
        )))
    }

    fn __ov_map_key(key: &str) -> anyhow::Result<StarMatcher> {
        Ok(StarMatcher(Matcher::MapKey(key.to_string())))
    }

    fn __ov_index(i: i64) -> anyhow::Result<StarMatcher> {
        Ok(StarMatcher(Matcher::Index(i)))
    }

    fn __ov_and_op<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
    ) -> anyhow::Result<StarMatcher> {
        let ms: anyhow::Result<Vec<Matcher>> = args.items.iter().map(|v| to_matcher(*v)).collect();
        Ok(StarMatcher(Matcher::And(ms?)))
    }

    fn __ov_or_op<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
    ) -> anyhow::Result<StarMatcher> {
        let ms: anyhow::Result<Vec<Matcher>> = args.items.iter().map(|v| to_matcher(*v)).collect();
        Ok(StarMatcher(Matcher::Or(ms?)))
    }

    fn __ov_not_op<'v>(v: Value<'v>) -> anyhow::Result<StarMatcher> {
        Ok(StarMatcher(Matcher::Not(Box::new(to_matcher(v)?))))
    }

    fn __ov_apply<'v>(
        left: Value<'v>,
        #[starlark(args)] rights: UnpackTuple<Value<'v>>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<Value<'v>> {
        let pos = Pos::unknown();
        let mut l = to_val(left, &pos).map_err(err)?;
        let rs: Vec<Val> = rights
            .items
            .iter()
            .map(|r| to_val(*r, &pos).map_err(err))
            .collect::<anyhow::Result<_>>()?;
        {
            let mut caller = EvalCaller {
                eval: &mut *eval,
                globals: None,
            };
            for r in &rs {
                super::overlay::apply_top(&mut l, r, &mut caller).map_err(|e| err(e.message))?;
            }
        }
        super::overlay::strip_overlay_anns_val(&mut l);
        Ok(from_val(&l, eval.heap()))
    }

    fn __assert_try_to<'v>(
        f: Value<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<Value<'v>> {
        let r = eval.eval_function(f, &[], &[]);
        let heap = eval.heap();
        Ok(match r {
            Ok(v) => heap.alloc((v, Value::new_none())),
            Err(e) => {
                let raw = format!("{}", e.without_diagnostic());
                let msg = go_message(&raw).unwrap_or(raw);
                heap.alloc((Value::new_none(), heap.alloc(msg)))
            }
        })
    }

    fn __tpl_replace<'v>(v: Value<'v>, eval: &mut Evaluator<'v, '_, '_>) -> anyhow::Result<Noop> {
        ctx(eval)?.replace(v)?;
        Ok(Noop)
    }

    fn __data_values<'v>(eval: &mut Evaluator<'v, '_, '_>) -> anyhow::Result<Value<'v>> {
        let c = ctx(eval)?;
        let v = c.data_values.clone();
        Ok(from_input_val(v, eval.heap()))
    }

    /// Fails with exactly `msg` (ytt's builtins prefix their own name).
    fn __assert_fail(msg: &str) -> anyhow::Result<NoneType> {
        Err(err(msg.to_string()))
    }

    fn __yaml_encode<'v>(v: Value<'v>) -> anyhow::Result<String> {
        let val = to_val(v, &Pos::unknown()).map_err(err)?;
        match &val {
            Val::Node(n) if n.kind == Kind::DocSet => Ok(super::emit::encode_docs(n.items.iter())),
            _ => Ok(super::emit::encode_val(&val)),
        }
    }

    fn __yaml_decode<'v>(s: &str, eval: &mut Evaluator<'v, '_, '_>) -> anyhow::Result<Value<'v>> {
        let d = super::yamlmeta::parse(s, "yaml.decode", false).map_err(|e| err(e.message))?;
        let v = d
            .items
            .first()
            .map(|d| d.val.clone())
            .unwrap_or(Val::null());
        Ok(from_val_plain(&v, eval.heap()))
    }

    fn __json_encode<'v>(
        v: Value<'v>,
        #[starlark(require = named)] indent: Option<i64>,
        #[starlark(require = named)] escape_html: Option<bool>,
    ) -> anyhow::Result<String> {
        let val = to_val(v, &Pos::unknown()).map_err(err)?;
        let mut out = val_to_json(&val, indent.unwrap_or(0));
        if escape_html.unwrap_or(true) {
            out = out
                .replace('<', "\\u003c")
                .replace('>', "\\u003e")
                .replace('&', "\\u0026");
        }
        Ok(out)
    }

    /// `**x` at a call site: maps of any kind as a dict (see
    /// `compile::rewrite_kwargs_splat`).
    fn __ytt_kw<'v>(v: Value<'v>, eval: &mut Evaluator<'v, '_, '_>) -> anyhow::Result<Value<'v>> {
        Ok(frag_as_dict(v, eval.heap()).unwrap_or(v))
    }

    /// `struct.make(**fields)`.
    fn __struct_make<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(kwargs)] kwargs: Value<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<Value<'v>> {
        if !args.items.is_empty() {
            return Err(err("struct: unexpected positional arguments"));
        }
        let d = DictRef::from_value(kwargs).ok_or_else(|| err("internal: kwargs not a dict"))?;
        let fields: Vec<(Value, Value)> = d.iter().collect();
        Ok(eval.heap().alloc(YStructGen(fields)))
    }

    fn __toml_encode<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        #[starlark(require = named)] indent: Option<i64>,
    ) -> anyhow::Result<String> {
        let [v] = args.items[..] else {
            return Err(err("expected exactly one argument"));
        };
        let val = to_val(v, &Pos::unknown()).map_err(err)?;
        super::ytoml::encode(&val, indent.unwrap_or(0)).map_err(err)
    }

    fn __toml_decode<'v>(
        #[starlark(args)] args: UnpackTuple<Value<'v>>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<Value<'v>> {
        let [v] = args.items[..] else {
            return Err(err("expected exactly one argument"));
        };
        let Some(s) = v.unpack_str() else {
            return Err(err(format!("expected string, but was {}", v.get_type())));
        };
        let val = super::ytoml::decode(s).map_err(err)?;
        Ok(from_val_plain(&val, eval.heap()))
    }

    fn __base64_encode(s: &str) -> anyhow::Result<String> {
        Ok(base64_encode(s.as_bytes()))
    }

    fn __base64_decode(s: &str) -> anyhow::Result<String> {
        let bytes = base64_decode(s).ok_or_else(|| err("illegal base64 data"))?;
        String::from_utf8(bytes).map_err(|e| err(e.to_string()))
    }

    fn __url_path_escape(s: &str) -> anyhow::Result<String> {
        Ok(url_escape(
            s,
            |c| c.is_ascii_alphanumeric() || b"-_.~$&+,;=:@".contains(&c),
            false,
        ))
    }

    fn __url_path_unescape(s: &str) -> anyhow::Result<String> {
        url_unescape(s, false)
    }

    fn __url_query_escape(s: &str) -> anyhow::Result<String> {
        Ok(url_escape(
            s,
            |c| c.is_ascii_alphanumeric() || b"-_.~".contains(&c),
            true,
        ))
    }

    fn __url_query_unescape(s: &str) -> anyhow::Result<String> {
        url_unescape(s, true)
    }

    fn __url_escape_user(s: &str) -> anyhow::Result<String> {
        Ok(url_escape(
            s,
            |c| c.is_ascii_alphanumeric() || b"-_.~$&+,;=".contains(&c),
            false,
        ))
    }

    fn __url_hostname(host: &str) -> anyhow::Result<String> {
        if let Some(rest) = host.strip_prefix('[') {
            return Ok(rest.split(']').next().unwrap_or("").to_string());
        }
        Ok(host.split(':').next().unwrap_or("").to_string())
    }

    fn __url_parse<'v>(s: &str, eval: &mut Evaluator<'v, '_, '_>) -> anyhow::Result<Value<'v>> {
        let (scheme, rest) = match s.split_once("://") {
            Some((sc, r))
                if !sc.is_empty()
                    && sc
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
            {
                (sc, r)
            }
            _ => ("", s),
        };
        let auth_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (auth, tail) = rest.split_at(auth_end);
        let (userinfo, host) = match auth.rfind('@') {
            Some(i) => (Some(&auth[..i]), &auth[i + 1..]),
            None => (None, auth),
        };
        let heap = eval.heap();
        let (user, pw) = match userinfo {
            None => (Value::new_none(), Value::new_none()),
            Some(u) => match u.split_once(':') {
                Some((n, p)) => (
                    heap.alloc(url_unescape(n, false)?),
                    heap.alloc(url_unescape(p, false)?),
                ),
                None => (heap.alloc(url_unescape(u, false)?), Value::new_none()),
            },
        };
        let items = vec![
            heap.alloc(scheme),
            user,
            pw,
            heap.alloc(host),
            heap.alloc(tail),
        ];
        Ok(heap.alloc(AllocList(items)))
    }

    fn __ip_parse_addr(s: &str) -> anyhow::Result<String> {
        s.parse::<std::net::IpAddr>()
            .map(|a| a.to_string())
            .map_err(|_| err(format!("ip.parse_addr: invalid IP address: {s}")))
    }

    fn __ip_is_v4(s: &str) -> anyhow::Result<bool> {
        Ok(s.parse::<std::net::Ipv4Addr>().is_ok())
    }

    fn __ip_parse_cidr<'v>(s: &str, eval: &mut Evaluator<'v, '_, '_>) -> anyhow::Result<Value<'v>> {
        let bad = || err(format!("ip.parse_cidr: invalid CIDR address: {s}"));
        let (a, bits) = s.split_once('/').ok_or_else(bad)?;
        let addr: std::net::IpAddr = a.parse().map_err(|_| bad())?;
        let bits: u32 = bits.parse().map_err(|_| bad())?;
        let net = match addr {
            std::net::IpAddr::V4(v4) => {
                if bits > 32 {
                    return Err(bad());
                }
                let mask = if bits == 0 {
                    0
                } else {
                    u32::MAX << (32 - bits)
                };
                std::net::IpAddr::V4(std::net::Ipv4Addr::from(u32::from(v4) & mask))
            }
            std::net::IpAddr::V6(v6) => {
                if bits > 128 {
                    return Err(bad());
                }
                let mask = if bits == 0 {
                    0
                } else {
                    u128::MAX << (128 - bits)
                };
                std::net::IpAddr::V6(std::net::Ipv6Addr::from(u128::from(v6) & mask))
            }
        };
        let heap = eval.heap();
        let items = vec![
            heap.alloc(addr.to_string()),
            heap.alloc(format!("{net}/{bits}")),
            heap.alloc(net.to_string()),
        ];
        Ok(heap.alloc(AllocList(items)))
    }

    fn __version_require_at_least(v: &str) -> anyhow::Result<NoneType> {
        let want = semver::Version::parse(v).map_err(|_| {
            err(format!(
                "version.require_at_least: version string '{v}' must be a valid semver"
            ))
        })?;
        let have = semver::Version::parse(YTT_COMPAT_VERSION).map_err(|e| err(e.to_string()))?;
        if have < want {
            return Err(err(format!(
                "version.require_at_least: ytt version '{have}' does not meet the minimum required version '{want}'"
            )));
        }
        Ok(NoneType)
    }

    fn __sha256_sum(s: &str) -> anyhow::Result<String> {
        use sha2::Digest;
        let d = sha2::Sha256::digest(s.as_bytes());
        Ok(d.iter().map(|b| format!("{b:02x}")).collect())
    }

    fn __md5_sum(s: &str) -> anyhow::Result<String> {
        Ok(format!("{:x}", md5::compute(s.as_bytes())))
    }

    fn __regexp_match(pattern: &str, s: &str) -> anyhow::Result<bool> {
        let re = regex::Regex::new(pattern).map_err(|e| err(e.to_string()))?;
        Ok(re.is_match(s))
    }

    fn __regexp_replace<'v>(
        pattern: &str,
        s: &str,
        repl: Value<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<String> {
        let re = regex::Regex::new(pattern).map_err(|e| err(e.to_string()))?;
        if let Some(r) = repl.unpack_str() {
            return Ok(re.replace_all(s, r).to_string());
        }
        let mut out = String::new();
        let mut last = 0;
        for m in re.find_iter(s) {
            out.push_str(&s[last..m.start()]);
            let arg = eval.heap().alloc(m.as_str());
            let r = eval
                .eval_function(repl, &[arg], &[])
                .map_err(|e| err(format!("{}", e.without_diagnostic())))?;
            out.push_str(
                r.unpack_str()
                    .ok_or_else(|| err("replacement function must return a string"))?,
            );
            last = m.end();
        }
        out.push_str(&s[last..]);
        Ok(out)
    }

    fn __json_decode<'v>(s: &str, eval: &mut Evaluator<'v, '_, '_>) -> anyhow::Result<Value<'v>> {
        let j: serde_json::Value = serde_json::from_str(s)
            .map_err(|e| err(format!("json.decode: {}", go_json_error(s, &e))))?;
        Ok(json_to_value(&j, eval.heap()))
    }

    fn __struct_encode<'v>(
        v: Value<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<Value<'v>> {
        let val = to_val(v, &Pos::unknown()).map_err(err)?;
        Ok(val_to_struct(&val, eval.heap()))
    }

    fn __struct_decode<'v>(
        v: Value<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<Value<'v>> {
        let val = to_val(v, &Pos::unknown()).map_err(err)?;
        Ok(from_val_plain(&val, eval.heap()))
    }
}

/// The string a text template built.
pub fn text_root_string(n: &Node) -> String {
    let mut s = String::new();
    for it in &n.items {
        if let Val::Scalar(Scalar::Str(t)) = &it.val {
            s.push_str(t);
        }
    }
    s
}

/// A YAML fragment returned by a function: maps and arrays without
/// annotations behave as dicts and lists (as in ytt); fragments that carry
/// annotations (e.g. for `overlay.apply`) or document sets stay fragments.
fn frag_value<'v>(n: Node, heap: Heap<'v>) -> Value<'v> {
    heap.alloc(YFrag(Some(SharedNode::new(Arc::new(n)))))
}

/// `struct.encode`: maps become structs (all the way down), arrays lists.
fn val_to_struct<'v>(v: &Val, heap: Heap<'v>) -> Value<'v> {
    match v {
        Val::Scalar(s) => scalar_to_value(s, heap),
        Val::Node(n) => match n.kind {
            Kind::Map => {
                let fields: Vec<(Value, Value)> = n
                    .items
                    .iter()
                    .map(|i| (heap.alloc(i.key.display()), val_to_struct(&i.val, heap)))
                    .collect();
                heap.alloc(YStructGen(fields))
            }
            Kind::Array | Kind::DocSet => {
                let items: Vec<Value> = n
                    .items
                    .iter()
                    .map(|i| val_to_struct(&i.val, heap))
                    .collect();
                heap.alloc(AllocList(items))
            }
            _ => Value::new_none(),
        },
    }
}

/// YAML value -> plain Starlark dicts and lists.
pub fn from_val_plain<'v>(v: &Val, heap: Heap<'v>) -> Value<'v> {
    match v {
        Val::Scalar(s) => scalar_to_value(s, heap),
        Val::Node(n) => match n.kind {
            Kind::Map => {
                let items: Vec<(Value, Value)> = n
                    .items
                    .iter()
                    .map(|i| (scalar_to_value(&i.key, heap), from_val_plain(&i.val, heap)))
                    .collect();
                heap.alloc(AllocDict(items))
            }
            Kind::Array | Kind::DocSet => {
                let items: Vec<Value> = n
                    .items
                    .iter()
                    .map(|i| from_val_plain(&i.val, heap))
                    .collect();
                heap.alloc(AllocList(items))
            }
            _ => Value::new_none(),
        },
    }
}

fn json_to_value<'v>(j: &serde_json::Value, heap: Heap<'v>) -> Value<'v> {
    match j {
        serde_json::Value::Null => Value::new_none(),
        serde_json::Value::Bool(b) => Value::new_bool(*b),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => heap.alloc(i),
            None => heap.alloc(n.as_f64().unwrap_or(0.0)),
        },
        serde_json::Value::String(s) => heap.alloc(s.as_str()),
        serde_json::Value::Array(a) => {
            let items: Vec<Value> = a.iter().map(|x| json_to_value(x, heap)).collect();
            heap.alloc(AllocList(items))
        }
        serde_json::Value::Object(o) => {
            let items: Vec<(Value, Value)> = o
                .iter()
                .map(|(k, v)| (heap.alloc(k.as_str()), json_to_value(v, heap)))
                .collect();
            heap.alloc(AllocDict(items))
        }
    }
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn base64_encode(b: &[u8]) -> String {
    let mut out = String::new();
    for chunk in b.chunks(3) {
        let n = chunk.len();
        let v = (chunk[0] as u32) << 16
            | (*chunk.get(1).unwrap_or(&0) as u32) << 8
            | *chunk.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= n {
                out.push(B64[((v >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = 0u32;
    let mut bits = 0;
    for c in s.bytes() {
        if c == b'=' {
            break;
        }
        let v = B64.iter().position(|x| *x == c)? as u32;
        buf = buf << 6 | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buf >> bits) as u8);
            buf &= (1 << bits) - 1;
        }
    }
    Some(out)
}

pub fn val_to_json(v: &Val, indent: i64) -> String {
    fn conv(v: &Val) -> serde_json::Value {
        match v {
            Val::Scalar(Scalar::Null) => serde_json::Value::Null,
            Val::Scalar(Scalar::Bool(b)) => serde_json::Value::Bool(*b),
            Val::Scalar(Scalar::Int(i)) => serde_json::Value::from(*i),
            Val::Scalar(Scalar::Float(f)) => serde_json::Value::from(*f),
            Val::Scalar(Scalar::Str(s)) => serde_json::Value::String(s.clone()),
            Val::Node(n) => match n.kind {
                Kind::Map => {
                    // Go's encoding/json sorts map keys
                    let mut items: Vec<(String, &Val)> =
                        n.items.iter().map(|i| (i.key.display(), &i.val)).collect();
                    items.sort_by(|a, b| a.0.cmp(&b.0));
                    let mut m = serde_json::Map::default();
                    for (k, v) in items {
                        m.insert(k, conv(v));
                    }
                    serde_json::Value::Object(m)
                }
                _ => serde_json::Value::Array(n.items.iter().map(|i| conv(&i.val)).collect()),
            },
        }
    }
    let j = conv(v);
    if indent <= 0 {
        return serde_json::to_string(&j).unwrap_or_default();
    }
    let ind = " ".repeat(indent as usize);
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(ind.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    if serde::Serialize::serialize(&j, &mut ser).is_err() {
        return String::new();
    }
    String::from_utf8(buf).unwrap_or_default()
}

/// starlark-go's exact wording for a starlark-rust message, where the
/// two only differ in words (what `assert.try_to` hands back).
fn go_message(kind: &str) -> Option<String> {
    if let Some(rest) = kind.strip_prefix("Object of type `") {
        let parts: Vec<&str> = rest.split('`').collect();
        if parts.len() >= 4 && parts[1] == " has no attribute " {
            return Some(format!("{} has no .{} field or method", parts[0], parts[2]));
        }
    }
    if let Some(rest) = kind.strip_prefix("Missing parameter `") {
        let parts: Vec<&str> = rest.split('`').collect();
        if parts.len() >= 4 && parts[1] == " for call to " {
            let f = parts[2].rsplit('.').next().unwrap_or(parts[2]);
            return Some(format!("function {f} missing 1 argument ({})", parts[0]));
        }
    }
    None
}

/// Go's `encoding/json` wording for the common syntax errors.
fn go_json_error(text: &str, e: &serde_json::Error) -> String {
    let msg = e.to_string();
    if e.is_eof() {
        return "unexpected end of JSON input".into();
    }
    let at = text
        .lines()
        .nth(e.line().saturating_sub(1))
        .and_then(|l| l.chars().nth(e.column().saturating_sub(1)));
    match at {
        Some(c) if msg.starts_with("expected value") => {
            format!("invalid character '{c}' looking for beginning of value")
        }
        _ => msg,
    }
}

/// Adds ytt's wording to starlark-rust messages (users search for it).
fn ytt_message(kind: &str) -> String {
    let mut msg = kind.replace("__ytt_assert", "assert");
    if let Some(rest) = kind.strip_prefix("Variable `") {
        if let Some(name) = rest.split('`').next() {
            msg = if name == "true" || name == "false" {
                format!(
                    "undefined: {name} (hint: use '{}' instead of '{name}' for boolean assignment)",
                    if name == "true" { "True" } else { "False" }
                )
            } else {
                format!("undefined: {name} ({kind})")
            };
        }
    } else if let Some(rest) = kind.strip_prefix("Operation `") {
        let parts: Vec<&str> = rest.split('`').collect();
        if parts.len() >= 6 {
            msg = format!(
                "unknown binary op: {} {} {} ({kind})",
                parts[2], parts[0], parts[4]
            );
        }
    } else if let Some(rest) = kind.strip_prefix("Missing parameter `") {
        let parts: Vec<&str> = rest.split('`').collect();
        if parts.len() >= 3 {
            let f = parts[2].rsplit('.').next().unwrap_or(parts[2]);
            msg = format!("function {f} missing 1 argument ({}) ({kind})", parts[0]);
        }
    } else if let Some(rest) = kind.strip_prefix("Parse error: unexpected keyword '") {
        let kw = rest.split('\'').next().unwrap_or("");
        msg =
            format!("use of reserved keyword '{kw}' is not allowed (expected identifier) ({kind})");
    }
    msg
}

/// Percent-encodes bytes `keep` rejects (Go's url escaping); spaces become
/// `+` in query values.
fn url_escape(s: &str, keep: impl Fn(u8) -> bool, space_plus: bool) -> String {
    let mut out = String::new();
    for &b in s.as_bytes() {
        if keep(b) {
            out.push(b as char);
        } else if b == b' ' && space_plus {
            out.push('+');
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn url_unescape(s: &str, plus_space: bool) -> anyhow::Result<String> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = s
                    .get(i + 1..i + 3)
                    .ok_or_else(|| err(format!("invalid URL escape \"{}\"", &s[i..])))?;
                let v = u8::from_str_radix(hex, 16)
                    .map_err(|_| err(format!("invalid URL escape \"%{hex}\"")))?;
                out.push(v);
                i += 3;
            }
            b'+' if plus_space => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|e| err(e.to_string()))
}

/// The ytt version whose template language strata implements (the corpus
/// commit is v0.48.0 plus 8 commits); `version.require_at_least` checks it.
pub const YTT_COMPAT_VERSION: &str = "0.48.0";

/// Source of a `@ytt:` module, built on the natives above.
fn ytt_module_src(name: &str) -> Option<&'static str> {
    Some(match name {
        "data" => "data = __ns(values = __data_values(), list = lambda path=None: __data_list(__DIR__, path), read = lambda path: __data_read(__DIR__, path))\n",
        "overlay" => "overlay = __ns(subset = __ov_subset, all = __ov_all, map_key = __ov_map_key, index = __ov_index, and_op = __ov_and_op, or_op = __ov_or_op, not_op = __ov_not_op, apply = __ov_apply)\n",
        "template" => "template = __ns(replace = __tpl_replace)\n",
        "assert" => include_str!("lib/assert.star"),
        "yaml" => "yaml = __ns(encode = __yaml_encode, decode = __yaml_decode)\n",
        "json" => "json = __ns(encode = __json_encode, decode = __json_decode)\n",
        "struct" => include_str!("lib/struct.star"),
        "library" => include_str!("lib/library.star"),
        "ip" => include_str!("lib/ip.star"),
        "url" => include_str!("lib/url.star"),
        "version" => "version = __ns(require_at_least = __version_require_at_least)\n",
        "base64" => "base64 = __ns(encode = __base64_encode, decode = __base64_decode)\n",
        "sha256" => "sha256 = __ns(sum = __sha256_sum)\n",
        "md5" => "md5 = __ns(sum = __md5_sum)\n",
        "toml" => "toml = __ns(encode = __toml_encode, decode = __toml_decode)\n",
        "regexp" => "regexp = __ns(match = __regexp_match, replace = __regexp_replace)\n",
        _ => return None,
    })
}

fn mark_used(st: &LibState) {
    for (scope, i) in &st.consumed {
        if let Some(r) = scope.refs.borrow().get(*i) {
            r.used.set(true);
        }
    }
}

/// Splits `@first@rest` into ("first", "@rest").
fn split_lib_ref(r: &str) -> Option<(&str, &str)> {
    let body = r.strip_prefix('@')?;
    Some(match body.find('@') {
        Some(i) => (&body[..i], &body[i..]),
        None => (body, ""),
    })
}

fn has_anns(v: &Val) -> bool {
    match v {
        Val::Node(n) => {
            !n.anns.is_empty()
                || has_anns(&n.val)
                || n.items
                    .iter()
                    .any(|i| !i.anns.is_empty() || has_anns(&i.val))
        }
        _ => false,
    }
}

/// Resolves a `data.read`/`data.list` path: absolute from the root, else
/// relative to the calling file's directory.
fn data_path(dir: &str, path: &str) -> String {
    // absolute paths start at the root of the library holding `dir`
    let with_slash = format!("{dir}/");
    let base = if path.starts_with('/') {
        lib_root(&with_slash)
    } else {
        dir
    };
    let rel = path.trim_start_matches('/');
    let joined = if base.is_empty() {
        rel.to_string()
    } else {
        format!("{base}/{rel}")
    };
    join_rel("", &joined)
}

#[starlark_module]
fn data_natives(builder: &mut GlobalsBuilder) {
    fn __data_list<'v>(
        dir: &str,
        path: Value<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<Value<'v>> {
        let c = ctx(eval)?;
        let path = path.unpack_str();
        let root = lib_root(&format!("{dir}/")).to_string();
        let root_prefix = if root.is_empty() {
            String::new()
        } else {
            format!("{root}/")
        };
        let sub = data_path(dir, path.unwrap_or(""));
        let prefix = if sub.is_empty() {
            String::new()
        } else {
            format!("{sub}/")
        };
        let abs = path.map(|p| p.starts_with('/')).unwrap_or(false);
        let files: Vec<String> = c
            .scope
            .files
            .iter()
            .filter(|f| f.path.starts_with(&prefix) && f.path.starts_with(&root_prefix))
            .filter(|f| !f.path[root_prefix.len()..].contains("_ytt_lib/"))
            .map(|f| {
                if abs {
                    format!("/{}", &f.path[root_prefix.len()..])
                } else {
                    f.path[prefix.len()..].to_string()
                }
            })
            .collect();
        let heap = eval.heap();
        let items: Vec<Value> = files.iter().map(|f| heap.alloc(f.as_str())).collect();
        Ok(heap.alloc(AllocList(items)))
    }

    fn __data_read(dir: &str, path: &str, eval: &mut Evaluator) -> anyhow::Result<String> {
        let c = ctx(eval)?;
        let target = data_path(dir, path);
        c.scope
            .files
            .iter()
            .find(|f| f.path == target)
            .map(|f| f.text.clone())
            .ok_or_else(|| err(format!("Expected to find file '{target}' (hint: only files included via -f flag are available)")))
    }
}

pub fn globals() -> Globals {
    let mut b = GlobalsBuilder::extended_by(&[
        LibraryExtension::StructType,
        LibraryExtension::Map,
        LibraryExtension::Filter,
    ]);
    tpl_natives(&mut b);
    data_natives(&mut b);
    super::guard::natives(&mut b);
    b.set("__ov_all", StarMatcher(Matcher::All));
    b.build()
}

pub fn dialect() -> Dialect {
    Dialect {
        enable_top_level_stmt: true,
        enable_def: true,
        enable_lambda: true,
        enable_load: true,
        enable_keyword_only_arguments: true,
        ..Dialect::Extended
    }
}

/// A source file of the run.
#[derive(Debug, Clone)]
pub struct SrcFile {
    pub path: String,
    pub text: String,
    /// `--file-mark path:type=...` (yaml-template, yaml-plain, text-template,
    /// text-plain, starlark, data).
    pub mark_type: Option<String>,
}

impl SrcFile {
    pub fn new(path: impl Into<String>, text: impl Into<String>) -> Self {
        SrcFile {
            path: path.into(),
            text: text.into(),
            mark_type: None,
        }
    }
    pub fn is_star(&self) -> bool {
        match self.mark_type.as_deref() {
            Some(t) => t == "starlark",
            None => self.path.ends_with(".star"),
        }
    }
    pub fn is_yaml(&self) -> bool {
        match self.mark_type.as_deref() {
            Some(t) => t == "yaml-template" || t == "yaml-plain",
            None => self.path.ends_with(".yml") || self.path.ends_with(".yaml"),
        }
    }
    pub fn is_text(&self) -> bool {
        match self.mark_type.as_deref() {
            Some(t) => t == "text-template",
            None => self.path.ends_with(".txt"),
        }
    }
    pub fn is_plain_yaml(&self) -> bool {
        self.mark_type.as_deref() == Some("yaml-plain")
    }
}

/// Everything a run evaluates: files, compiled templates and loaded modules.
pub struct Workspace {
    pub files: Vec<SrcFile>,
    pub reg: Rc<Registry>,
    pub scope: Rc<Scope>,
    pub globals: Globals,
    pub data_values: RefCell<Val>,
    /// Bumped whenever the data values change (keys the `@ytt:data` cache).
    dv_gen: std::cell::Cell<usize>,
    modules: RefCell<HashMap<String, FrozenModule>>,
    pub ignore_unknown: bool,
    pub implicit_map_key_overrides: bool,
    pub strict: bool,
    loading: RefCell<Vec<String>>,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct EvalError(pub String);

/// Files a `load()` chain may nest (each loading the next): every level
/// holds an evaluator, so a chain of 3,000 `.star` files ended on the
/// evaluation memory budget, whose error spoke of a value built too large.
pub const MAX_LOAD_DEPTH: usize = 256;

struct Loader<'a> {
    ws: &'a Workspace,
    from: String,
}

impl FileLoader for Loader<'_> {
    fn load(&self, path: &str) -> starlark::Result<FrozenModule> {
        self.ws
            .load_module(&self.from, path)
            .map_err(|e| starlark::Error::new_other(anyhow::anyhow!(e.0)))
    }
}

/// Whether a relative load reaches into a private library directly.
fn is_under_private_lib(path: &str, from: &str) -> bool {
    let t = join_rel(from, path);
    let from_lib = from.contains("_ytt_lib/");
    !from_lib && (t.starts_with("_ytt_lib/") || t.contains("/_ytt_lib/"))
}

/// The root of the private library holding `path` ("" for the root).
fn lib_root(path: &str) -> &str {
    match path.rfind("_ytt_lib/") {
        Some(i) => {
            let rest = &path[i + "_ytt_lib/".len()..];
            match rest.find('/') {
                Some(j) => &path[..i + "_ytt_lib/".len() + j],
                None => "",
            }
        }
        None => "",
    }
}

fn join_rel(from: &str, path: &str) -> String {
    let dir = match from.rfind('/') {
        Some(i) if !path.starts_with('/') => &from[..i],
        _ if path.starts_with('/') => lib_root(from),
        _ => "",
    };
    let mut parts: Vec<&str> = if dir.is_empty() {
        vec![]
    } else {
        dir.split('/').collect()
    };
    for p in path.split('/') {
        match p {
            "." | "" => {}
            ".." => {
                parts.pop();
            }
            x => parts.push(x),
        }
    }
    parts.join("/")
}

impl Workspace {
    pub fn new(files: Vec<SrcFile>) -> Self {
        Self::with_registry(files, Rc::new(Registry::default()))
    }

    /// A workspace sharing compiled templates with its parent (libraries).
    pub fn with_registry(files: Vec<SrcFile>, reg: Rc<Registry>) -> Self {
        Self::with_scope(files, reg, false)
    }

    pub fn with_scope(files: Vec<SrcFile>, reg: Rc<Registry>, disable_validation: bool) -> Self {
        let scope = Rc::new(Scope {
            files: files.clone(),
            refs: RefCell::new(Vec::new()),
            disable_validation,
        });
        Workspace {
            files,
            reg,
            scope,
            globals: globals(),
            data_values: RefCell::new(Val::Node(Box::new(Node::map(Pos::unknown())))),
            dv_gen: std::cell::Cell::new(0),
            modules: RefCell::new(HashMap::new()),
            ignore_unknown: false,
            implicit_map_key_overrides: false,
            strict: false,
            loading: RefCell::new(Vec::new()),
        }
    }

    pub fn load_module(&self, from: &str, path: &str) -> Result<FrozenModule, EvalError> {
        if let Some(m) = path.strip_prefix("@ytt:") {
            let src = ytt_module_src(m).ok_or_else(|| {
                EvalError(format!(
                    "cannot load {path}: builtin ytt library does not have module '{m}' (hint: is it available in newer version of ytt?)"
                ))
            })?;
            let dir = match from.rfind('/') {
                Some(i) => &from[..i],
                None => "",
            };
            // modules that know the loading file's directory (and, for
            // data, the current data values) are cached per directory
            let cache_key = if src.contains("__DIR__") {
                format!("@ytt:{m}\0{dir}\0{}", self.dv_gen.get())
            } else {
                format!("@ytt:{m}")
            };
            if let Some(fm) = self.modules.borrow().get(&cache_key) {
                return Ok(fm.clone());
            }
            let key = format!("@ytt:{m}");
            let src = src.replace("__DIR__", &format!("{dir:?}"));
            let fm = self.eval_code(&key, &src, None)?.0;
            self.modules.borrow_mut().insert(cache_key, fm.clone());
            return Ok(fm);
        }
        let target = if let Some(rest) = path.strip_prefix('@') {
            // `@lib:path` loads from the private library `_ytt_lib/lib`
            let Some((lib, file)) = rest.split_once(':') else {
                return Err(EvalError(format!(
                    "cannot load {path}: expected library path in format '@lib:path'"
                )));
            };
            let dir = match from.rfind('/') {
                Some(i) => &from[..i],
                None => "",
            };
            let base = if dir.is_empty() {
                format!("_ytt_lib/{lib}")
            } else {
                format!("{dir}/_ytt_lib/{lib}")
            };
            join_rel("", &format!("{base}/{file}"))
        } else {
            if is_under_private_lib(path, from) {
                return Err(EvalError(format!(
                    "cannot load {path}: Could not load file '{path}' because it's contained in another library; Encountered private library '_ytt_lib' (hint: load files of private libraries with load(\"@lib:path\"))"
                )));
            }
            join_rel(from, path)
        };
        if let Some(fm) = self.modules.borrow().get(&target) {
            return Ok(fm.clone());
        }
        if self.loading.borrow().contains(&target) {
            return Err(EvalError(format!(
                "cannot load {path}: cycle while loading {target}"
            )));
        }
        let Some(idx) = self.files.iter().position(|f| f.path == target) else {
            return Err(EvalError(format!(
                "cannot load {path}: Expected to find file '{target}' (hint: only files included via -f flag are available)"
            )));
        };
        if self.loading.borrow().len() >= MAX_LOAD_DEPTH {
            return Err(EvalError(format!(
                "cannot load {path}: files load each other more than {MAX_LOAD_DEPTH} deep (a load() chain): load fewer files from one another"
            )));
        }
        self.loading.borrow_mut().push(target.clone());
        let r = self.eval_file(idx);
        self.loading.borrow_mut().pop();
        let (fm, _) = r?;
        self.modules.borrow_mut().insert(target, fm.clone());
        Ok(fm)
    }

    /// Evaluates file `idx` (YAML template or `.star`): its module and, for
    /// YAML, the resulting document set.
    pub fn eval_file(&self, idx: usize) -> Result<(FrozenModule, Option<Node>), EvalError> {
        let f = &self.files[idx];
        if f.is_star() {
            let fid = self.reg.compiled.borrow().len();
            let c = super::compile::compile_star(&f.text, fid, &f.path)
                .map_err(|e| EvalError(e.to_string()))?;
            let code = c.code.clone();
            self.reg.compiled.borrow_mut().push(Rc::new(c));
            return self.eval_code(&f.path, &code, Some(fid));
        }
        if f.is_text() {
            let fid = self.reg.compiled.borrow().len();
            let c = super::compile::compile_text(&f.text, fid, &f.path)
                .map_err(|e| EvalError(e.to_string()))?;
            let code = c.code.clone();
            self.reg.compiled.borrow_mut().push(Rc::new(c));
            return self.eval_code(&f.path, &code, Some(fid));
        }
        let doc = super::yamlmeta::parse(&f.text, &f.path, self.strict).map_err(|e| {
            EvalError(format!(
                "Unmarshaling YAML template '{}': {}",
                f.path, e.message
            ))
        })?;
        self.eval_docset(&f.path, &doc)
    }

    pub fn eval_docset(
        &self,
        path: &str,
        doc: &Node,
    ) -> Result<(FrozenModule, Option<Node>), EvalError> {
        let fid = self.reg.compiled.borrow().len();
        let c = super::compile::compile_yaml(doc, fid, path, self.ignore_unknown)
            .map_err(|e| EvalError(e.to_string()))?;
        let code = c.code.clone();
        self.reg.compiled.borrow_mut().push(Rc::new(c));
        self.eval_code(path, &code, Some(fid))
    }

    fn eval_code(
        &self,
        path: &str,
        code: &str,
        fid: Option<usize>,
    ) -> Result<(FrozenModule, Option<Node>), EvalError> {
        super::guard::check_depth(code).map_err(|e| EvalError(format!("{path}: {e}")))?;
        let ast = super::guard::parse(path, code, &dialect())
            .map_err(|e| EvalError(self.describe(e, fid, path)))?;
        let ctx = Ctx::new(
            self.reg.clone(),
            self.scope.clone(),
            self.data_values.borrow().clone(),
            self.implicit_map_key_overrides,
        );
        let loader = Loader {
            ws: self,
            from: path.to_string(),
        };
        Module::with_temp_heap(|module| {
            let res = {
                let mut eval = Evaluator::new(&module);
                eval.extra = Some(&ctx);
                eval.set_loader(&loader);
                super::guard::limit(&mut eval);
                let _dog = crate::limits::watchdog(path.to_string());
                eval.eval_module(ast, &self.globals)
            };
            if let Err(e) = res {
                return Err(EvalError(self.describe(e, fid, path)));
            }
            let root = ctx.root.borrow_mut().take();
            let fm = module
                .freeze()
                .map_err(|e| EvalError(format!("{path}: {e:?}")))?;
            if let Some(list) = fm.owned_extra_value() {
                self.reg.funcs.borrow_mut().insert(ctx.id, list);
            }
            Ok((fm, root))
        })
    }

    /// Sets the data values templates see.
    pub fn set_data_values(&self, v: Val) {
        *self.data_values.borrow_mut() = v;
        self.dv_gen.set(self.dv_gen.get() + 1);
    }

    /// Runs `f` with a caller that can run functions kept by earlier
    /// evaluations (for overlays applied after templates ran).
    pub fn with_caller<R>(&self, f: impl FnOnce(&mut dyn super::overlay::Caller) -> R) -> R {
        let ctx = Ctx::new(
            self.reg.clone(),
            self.scope.clone(),
            self.data_values.borrow().clone(),
            self.implicit_map_key_overrides,
        );
        let loader = Loader {
            ws: self,
            from: String::new(),
        };
        Module::with_temp_heap(|module| {
            let mut eval = Evaluator::new(&module);
            eval.extra = Some(&ctx);
            eval.set_loader(&loader);
            super::guard::limit(&mut eval);
            let _dog =
                crate::limits::watchdog("an overlay or a function a template kept".to_string());
            let mut caller = EvalCaller {
                eval: &mut eval,
                globals: Some(&self.globals),
            };
            f(&mut caller)
        })
    }

    /// Error text naming the template file and line.
    /// `path` names the file when the error has no span (starlark's own
    /// heap and tick limits are detected away from any statement).
    fn describe(&self, e: starlark::Error, fid: Option<usize>, path: &str) -> String {
        let kind = format!("{}", e.without_diagnostic());
        let msg = super::guard::limit_message(&kind).unwrap_or_else(|| ytt_message(&kind));
        // An error raised inside a built-in module (`@ytt:url`) is named by
        // the innermost call from the user's files, which is what to fix.
        let user_call = || {
            e.call_stack()
                .frames
                .iter()
                .rev()
                .filter_map(|f| f.location.as_ref())
                .find(|s| !s.filename().starts_with('@'))
                .cloned()
        };
        let loc = match e.span() {
            Some(s) if s.filename().starts_with('@') => user_call().or_else(|| Some(s.clone())),
            Some(s) => Some(s.clone()),
            None => None,
        }
        .map(|s| {
            let r = s.resolve_span();
            (s.filename().to_string(), r.begin.line + 1)
        });
        let (file, line) = match loc {
            Some((f, l)) => {
                let compiled = self.reg.compiled.borrow();
                let mapped = fid
                    .and_then(|id| compiled.get(id))
                    .filter(|c| c.name == f)
                    .or_else(|| compiled.iter().find(|c| c.name == f))
                    .and_then(|c| c.line_map.get(l - 1).copied())
                    .unwrap_or(l);
                (f, mapped)
            }
            None => (String::new(), 0),
        };
        if file.is_empty() {
            format!("{path}: {msg}")
        } else {
            format!("{file}:{line}: {msg}")
        }
    }
}
