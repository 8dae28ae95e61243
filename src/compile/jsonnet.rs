//! The `jsonnet` input through `jrsonnet-evaluator`, with Kapitan's import
//! rules (the importing file's directory, then the bundled
//! `lib/kapitan.libjsonnet`, then the search paths), the `target` ext var and
//! the native functions Kapitan registers (`yaml_load`, `file_read`,
//! `inventory`, `sha256_string`, `gzip_b64`, `jinja2_render_file`, ...).

use super::jinja;
use super::pyyaml_load;
use super::yaml_dump::{self, DumpOptions};
use crate::value::{Map, Value};
use base64::Engine;
use jrsonnet_evaluator::error::ErrorKind;
use jrsonnet_evaluator::function::builtin::{NativeCallback, NativeCallbackHandler};
use jrsonnet_evaluator::trace::PathResolver;
use jrsonnet_evaluator::{AsPathLike, ImportResolver, Result as JrResult, SourcePath, State, Val};
use jrsonnet_gcmodule::{Acyclic, Trace};
use jrsonnet_ir::{SourceFile, SourceVirtual};
use sha2::Digest;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

/// strata's own `kapitan.libjsonnet`, importable as `lib/kapitan.libjsonnet`.
pub const KAPITAN_LIBJSONNET: &str = include_str!("kapitan.libjsonnet");
pub const LIB_IMPORT: &str = "lib/kapitan.libjsonnet";

/// What `kap.inventory()` can see: every target's model dump.
///
/// The dumps are the ones Jinja2 sees, shared (one per target, not two):
/// they hold `parameters.kapitan.target_full_path` empty, and jsonnet's
/// view sets it to the target's name with `.` as `/` when a dump becomes a
/// jsonnet value ([`InventoryView::target_val`]).
#[derive(Debug, Default)]
pub struct InventoryView {
    pub targets: Arc<BTreeMap<String, Value>>,
    pub inventory_path: PathBuf,
}

impl InventoryView {
    /// `kap.inventory(name)`: the target's dump with its `target_full_path`.
    pub fn target_val(&self, name: &str) -> Option<JrResult<Val>> {
        self.targets.get(name)?;
        Some(DumpNode::root(&self.targets, name).val())
    }

    /// `kap.inventory()` of every target: each target's dump is converted
    /// only when the jsonnet code reads it.
    fn all_val(&self) -> JrResult<Val> {
        let mut b = jrsonnet_evaluator::ObjValue::builder_with_capacity(self.targets.len());
        for name in self.targets.keys() {
            b.field(name.as_str())
                .thunk(DumpNode::root(&self.targets, name).thunk());
        }
        Ok(Val::Obj(b.build()))
    }
}

/// Where `parameters.kapitan.target_full_path` sits in a dump: jsonnet's
/// view replaces it with the target's name, `.` as `/`.
const FULL_PATH_ROUTE: [&str; 3] = ["parameters", "kapitan", "target_full_path"];

/// A map or list inside one target's model dump, converted into a jsonnet
/// value one level at a time, when the jsonnet code first reads it.
///
/// A component reads a few parameters of an inventory of thousands, and
/// each `kap.inventory()` call (one per jsonnet file, every target's dump
/// for `inventory_global()`) converted the whole dump: issue 18's
/// platform spent 5% of a compile there. The node names its place by
/// positions (the dumps are shared and never change while a compile
/// runs), so it holds no borrowed data and no jsonnet values.
#[derive(Clone)]
struct DumpNode {
    dumps: Arc<BTreeMap<String, Value>>,
    target: Rc<str>,
    /// Map entry or list positions from the dump's root.
    path: Rc<[u32]>,
    /// How many keys of [`FULL_PATH_ROUTE`] the path follows; `None` once
    /// it left the route.
    route: Option<u8>,
}

// A node holds plain Rust data only: nothing for the cycle collector to visit.
impl Trace for DumpNode {
    fn is_type_tracked() -> bool {
        false
    }
}

impl DumpNode {
    fn root(dumps: &Arc<BTreeMap<String, Value>>, target: &str) -> Self {
        Self {
            dumps: dumps.clone(),
            target: target.into(),
            path: Rc::from(Vec::new()),
            route: Some(0),
        }
    }

    /// A thunk that converts this node once, on first use.
    fn thunk(self) -> jrsonnet_evaluator::Thunk<Val> {
        jrsonnet_evaluator::Thunk::new(jrsonnet_evaluator::val::MemoizedClosureThunk::new(
            self,
            |node: DumpNode| node.val(),
        ))
    }

    fn what(&self) -> String {
        format!("inventory of target {}: ", self.target)
    }

    /// The dump's value at this node.
    fn resolve(&self) -> Option<&Value> {
        self.walk(|_| {})
    }

    /// The keys and indexes leading to this node, to name it in an error.
    fn segs(&self) -> Vec<Seg<'_>> {
        let mut segs = Vec::with_capacity(self.path.len());
        self.walk(|seg| segs.push(seg));
        segs
    }

    /// Follows the path from the dump's root, telling `step` each key or
    /// index it takes.
    fn walk<'a>(&'a self, mut step: impl FnMut(Seg<'a>)) -> Option<&'a Value> {
        let mut v = self.dumps.get(&*self.target)?;
        for &i in self.path.iter() {
            v = match v {
                Value::Map(m) => {
                    let (k, item) = m.get_index(i as usize)?;
                    step(Seg::Key(k));
                    item
                }
                Value::List(l) => {
                    step(Seg::Index(i as usize));
                    l.get(i as usize)?
                }
                _ => return None,
            };
        }
        Some(v)
    }

    fn child(&self, i: usize, route: Option<u8>) -> Self {
        let mut path = Vec::with_capacity(self.path.len() + 1);
        path.extend_from_slice(&self.path);
        path.push(i as u32);
        Self {
            dumps: self.dumps.clone(),
            target: self.target.clone(),
            path: path.into(),
            route,
        }
    }

    /// An element or field: scalars at once, maps and lists as nodes of
    /// their own; a non-finite number fails only when used.
    fn item_thunk(
        &self,
        i: usize,
        item: &Value,
        route: Option<u8>,
    ) -> JrResult<jrsonnet_evaluator::Thunk<Val>> {
        Ok(match item {
            Value::Map(_) | Value::List(_) => self.child(i, route).thunk(),
            Value::Float(f) if !f.is_finite() => {
                let item = self.child(i, None);
                jrsonnet_evaluator::Thunk::errored(rt_err(non_finite_message(
                    &item.segs(),
                    &self.what(),
                )))
            }
            _ => jrsonnet_evaluator::Thunk::evaluated(value_to_val_at(item, &mut Vec::new(), "")?),
        })
    }

    /// This node as a jsonnet value, one level deep.
    fn val(self) -> JrResult<Val> {
        let Some(v) = self.resolve() else {
            return Err(rt_err(format!("{}the value went away", self.what())));
        };
        match v {
            Value::Map(m) => {
                let mut b = jrsonnet_evaluator::ObjValue::builder_with_capacity(m.len());
                for (i, (k, item)) in m.iter().enumerate() {
                    let route = match self.route {
                        Some(r) if FULL_PATH_ROUTE.get(r as usize) == Some(&k.as_str()) => {
                            Some(r + 1)
                        }
                        _ => None,
                    };
                    if route == Some(FULL_PATH_ROUTE.len() as u8) {
                        let full_path = self.target.replace('.', "/");
                        b.field(k.as_str())
                            .thunk(jrsonnet_evaluator::Thunk::evaluated(Val::string(full_path)));
                        continue;
                    }
                    b.field(k.as_str()).thunk(self.item_thunk(i, item, route)?);
                }
                Ok(Val::Obj(b.build()))
            }
            Value::List(l) => {
                let mut items = Vec::with_capacity(l.len());
                for (i, item) in l.iter().enumerate() {
                    items.push(self.item_thunk(i, item, None)?);
                }
                Ok(Val::arr(items))
            }
            scalar => value_to_val_at(scalar, &mut self.segs(), &self.what()),
        }
    }
}

/// Everything a jsonnet evaluation needs besides the file.
#[derive(Clone)]
pub struct JsonnetEnv {
    /// `-J` paths then the temporary catalog root, all absolute.
    pub search_paths: Vec<PathBuf>,
    pub inventory: Arc<InventoryView>,
    /// For `jinja2_render_file`: Kapitan loads the default Python filter
    /// file (`lib/jinja2_filters.py` in the working directory) there.
    pub python: Option<Arc<super::python::Bridge>>,
}

fn rt_err(msg: impl AsRef<str>) -> jrsonnet_evaluator::Error {
    ErrorKind::RuntimeError(msg.as_ref().into()).into()
}

pub use crate::fswalk::normpath;

/// Jsonnet imports as Kapitan (and Commodore) resolve them: the importing
/// file's directory, then the search paths, plus libraries strata bundles
/// (`lib/kapitan.libjsonnet`, ...). Kapitan looks at its bundled library
/// before the search paths; Commodore's filters look at it after them.
#[derive(Acyclic)]
pub struct BundledResolver {
    pub search_paths: Vec<PathBuf>,
    /// (import path, contents) of the bundled libraries.
    pub bundled: Vec<(&'static str, &'static str)>,
    /// Bundled libraries win over files of the same path in the search paths.
    pub bundled_first: bool,
}

impl BundledResolver {
    fn bundled(&self, rel: &Path) -> Option<SourcePath> {
        self.bundled
            .iter()
            .find(|(name, _)| rel == Path::new(name))
            .map(|(name, _)| SourcePath::new(SourceVirtual((*name).into())))
    }
}

impl ImportResolver for BundledResolver {
    fn resolve_from(&self, from: &SourcePath, path: &dyn AsPathLike) -> JrResult<SourcePath> {
        let rel: PathBuf = path.as_path().as_ref().to_path_buf();
        let base = match from.downcast_ref::<SourceFile>() {
            Some(f) => f.path().parent().map(Path::to_path_buf).unwrap_or_default(),
            None => std::env::current_dir().map_err(|e| rt_err(e.to_string()))?,
        };
        let direct = normpath(&base.join(&rel));
        if direct.is_file() {
            return Ok(SourcePath::new(SourceFile::new(direct)));
        }
        if self.bundled_first {
            if let Some(b) = self.bundled(&rel) {
                return Ok(b);
            }
        }
        for s in &self.search_paths {
            let p = s.join(&rel);
            if p.is_file() {
                return Ok(SourcePath::new(SourceFile::new(normpath(&p))));
            }
        }
        if let Some(b) = self.bundled(&rel) {
            return Ok(b);
        }
        // A FIFO, device or directory of that name was reported as "no
        // match", which sent the author looking for a missing file (probe
        // 39, jsonnet-import-of-a-fifo-says-no-match).
        let candidates: Vec<PathBuf> = std::iter::once(direct.clone())
            .chain(self.search_paths.iter().map(|s| normpath(&s.join(&rel))))
            .collect();
        // Below a directory a pull request links out of the tree: refused
        // as in the working tree, not "no match" (probe 45).
        if let Some(refused) = candidates
            .iter()
            .find_map(|p| super::confine::refused_link_out(p))
        {
            return Err(rt_err(refused));
        }
        if let Some(p) = candidates
            .iter()
            .find(|p| std::fs::symlink_metadata(p).is_ok())
        {
            return Err(rt_err(format!(
                "couldn't open import \"{}\": {} is not a regular file (a directory, a FIFO, a device, or a symlink to none): jsonnet imports read files only",
                rel.display(),
                p.display()
            )));
        }
        Err(rt_err(format!(
            "couldn't open import \"{}\": no match locally or in the search paths {:?}",
            rel.display(),
            self.search_paths
        )))
    }

    fn load_file_contents(&self, resolved: &SourcePath) -> JrResult<Vec<u8>> {
        if let Some(v) = resolved.downcast_ref::<SourceVirtual>() {
            if let Some((_, text)) = self.bundled.iter().find(|(name, _)| *name == &*v.0) {
                return Ok(text.as_bytes().to_vec());
            }
        }
        match resolved.downcast_ref::<SourceFile>() {
            Some(f) => {
                super::confine::check(f.path()).map_err(rt_err)?;
                std::fs::read(f.path())
                    .map_err(|e| rt_err(format!("cannot read {}: {e}", f.path().display())))
            }
            None => Err(rt_err(format!("cannot load {resolved}"))),
        }
    }
}

/// The field name serde_json's `arbitrary_precision` uses for numbers.
const ARBITRARY_PRECISION_KEY: &str = "$serde_json::private::Number";

/// Converts an evaluated jsonnet value into a compile value. Integral
/// numbers in the `i64` range become integers, like Python's `json.loads`
/// of jsonnet's output (larger ones stay floats and print as integers).
pub fn val_to_value(v: &Val) -> JrResult<Value> {
    val_to_value_at(v, 0).map_err(Conv::into_error)
}

/// Deepest nesting of arrays and objects strata converts from jsonnet (the
/// YAML readers' limit, so every catalog strata writes can be read back).
/// A value that contains itself (`local o = {a: o}; o`) is infinitely deep
/// and jrsonnet builds it lazily without complaint: this limit is what
/// stops its conversion before the stack runs out.
pub const MAX_OUTPUT_DEPTH: usize = 256;

/// `a.b[3].c`, shortened in the middle when long (the path of an endless
/// value is the same key hundreds of times).
fn out_path(path: &[String]) -> String {
    let join = |segs: &[String]| {
        let mut p = String::new();
        for s in segs {
            if !p.is_empty() && !s.starts_with('[') {
                p.push('.');
            }
            p.push_str(s);
        }
        p
    };
    if path.len() <= 12 {
        join(path)
    } else {
        format!(
            "{}...{} ({} levels)",
            join(&path[..8]),
            join(&path[path.len() - 2..]),
            path.len()
        )
    }
}

/// A conversion's failure. Only the depth is tracked on the way down (the
/// conversion of every output runs here); the path of a value too deep is
/// collected on the way back up, innermost segment first.
enum Conv {
    Jr(jrsonnet_evaluator::Error),
    TooDeep(Vec<String>),
}

impl From<jrsonnet_evaluator::Error> for Conv {
    fn from(e: jrsonnet_evaluator::Error) -> Self {
        Conv::Jr(e)
    }
}

impl Conv {
    /// The same failure, one level up: `seg` is where it happened.
    fn within(self, seg: impl FnOnce() -> String) -> Conv {
        match self {
            Conv::TooDeep(mut p) => {
                p.push(seg());
                Conv::TooDeep(p)
            }
            other => other,
        }
    }

    fn into_error(self) -> jrsonnet_evaluator::Error {
        match self {
            Conv::Jr(e) => e,
            Conv::TooDeep(mut path) => {
                path.reverse();
                rt_err(format!(
                    "the output is nested deeper than {MAX_OUTPUT_DEPTH} levels at `{}` (a value that contains itself?): build a flatter value",
                    out_path(&path)
                ))
            }
        }
    }
}

/// Refuses an array or object at `depth` levels or deeper.
fn check_depth(v: &Val, depth: usize) -> Result<(), Conv> {
    if matches!(v, Val::Arr(_) | Val::Obj(_)) && depth >= MAX_OUTPUT_DEPTH {
        return Err(Conv::TooDeep(Vec::new()));
    }
    Ok(())
}

fn val_to_value_at(v: &Val, depth: usize) -> Result<Value, Conv> {
    check_depth(v, depth)?;
    Ok(match v {
        Val::Null => Value::Null,
        Val::Bool(b) => Value::Bool(*b),
        Val::Str(s) => Value::String(s.clone().into_flat().to_string()),
        Val::Num(n) => {
            let f = n.get();
            if f.fract() == 0.0 && f.abs() < 9.2e18 {
                Value::Int(f as i64)
            } else {
                Value::Float(f)
            }
        }
        Val::Arr(a) => {
            let mut out = Vec::with_capacity(a.len() as usize);
            for (i, item) in a.iter().enumerate() {
                out.push(
                    val_to_value_at(&item?, depth + 1)
                        .map_err(|e| e.within(|| format!("[{i}]")))?,
                );
            }
            Value::List(out)
        }
        Val::Obj(o) => {
            let mut fields = o.fields();
            // starlark (the template engine) turns on serde_json's
            // `arbitrary_precision`, under which jrsonnet's own
            // `std.parseJson` reads a number as this one-field object.
            // `StdContext` replaces it, but contexts built on plain
            // `jrsonnet_stdlib` (src/fetch) still produce it: read it back
            // as the number it is.
            if let [only] = fields.as_slice() {
                if only.as_str() == ARBITRARY_PRECISION_KEY {
                    if let Some(Val::Str(text)) = o.get(only.clone())? {
                        let text = text.into_flat().to_string();
                        if let Ok(i) = text.parse::<i64>() {
                            return Ok(Value::Int(i));
                        }
                        if let Ok(f) = text.parse::<f64>() {
                            return Ok(Value::Float(f));
                        }
                    }
                }
            }
            fields.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
            let mut m = Map::with_capacity_and_hasher(fields.len(), Default::default());
            for f in fields {
                let item = o.get(f.clone())?.unwrap_or(Val::Null);
                let v =
                    val_to_value_at(&item, depth + 1).map_err(|e| e.within(|| f.to_string()))?;
                m.insert(f.to_string(), v);
            }
            Value::Map(m)
        }
        Val::Func(_) => return Err(rt_err("tried to manifest function").into()),
    })
}

/// Builds a jsonnet value (jrsonnet's serde bridge would turn integers
/// into strings).
fn value_to_val(v: &Value) -> JrResult<Val> {
    value_to_val_at(v, &mut Vec::new(), "")
}

/// An element or field: a non-finite number fails only when used.
fn lazy_val<'a>(
    item: &'a Value,
    path: &mut Vec<Seg<'a>>,
    what: &str,
) -> JrResult<jrsonnet_evaluator::Thunk<Val>> {
    Ok(match item {
        Value::Float(f) if !f.is_finite() => {
            jrsonnet_evaluator::Thunk::errored(rt_err(non_finite_message(path, what)))
        }
        _ => jrsonnet_evaluator::Thunk::evaluated(value_to_val_at(item, path, what)?),
    })
}

/// One step of a parameter path, kept only to name a non-finite number.
enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

/// `value_to_val` for inventory data: jsonnet has no `.inf`/`.nan`, so such
/// a number becomes a field or element that fails, naming `what` and its
/// path, only when the jsonnet code uses it. Kapitan likewise fails only
/// when the number reaches the output (its `json.loads` of the result),
/// with a message that names neither.
fn value_to_val_at<'a>(v: &'a Value, path: &mut Vec<Seg<'a>>, what: &str) -> JrResult<Val> {
    Ok(match v {
        Value::Null => Val::Null,
        Value::Bool(b) => Val::Bool(*b),
        Value::Int(i) => Val::try_num(*i as f64)?,
        Value::Float(f) if !f.is_finite() => return Err(rt_err(non_finite_message(path, what))),
        Value::Float(f) => Val::try_num(*f)?,
        Value::String(s) => Val::string(s.as_str()),
        Value::List(l) => {
            let mut items = Vec::with_capacity(l.len());
            for (i, item) in l.iter().enumerate() {
                path.push(Seg::Index(i));
                let t = lazy_val(item, path, what);
                path.pop();
                items.push(t?);
            }
            Val::arr(items)
        }
        Value::Map(m) => {
            let mut b = jrsonnet_evaluator::ObjValue::builder_with_capacity(m.len());
            for (k, item) in m {
                path.push(Seg::Key(k));
                let t = lazy_val(item, path, what);
                path.pop();
                b.field(k.as_str()).thunk(t?);
            }
            Val::Obj(b.build())
        }
    })
}

fn non_finite_message(path: &[Seg], what: &str) -> String {
    let mut p = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) if p.is_empty() => p.push_str(k),
            Seg::Key(k) => {
                p.push('.');
                p.push_str(k);
            }
            Seg::Index(i) => p.push_str(&format!("[{i}]")),
        }
    }
    format!(
        "{what}{p} is .inf or .nan, which jsonnet cannot represent: quote it in the inventory (\".inf\") to pass a string, or use a finite number"
    )
}

/// `%.17g`, as the C++ jsonnet prints non-integral numbers.
fn format_g17(f: f64) -> String {
    let sci = format!("{f:.16e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..17).contains(&exp) {
        let mant = mant.trim_end_matches('0').trim_end_matches('.');
        format!("{mant}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
    } else {
        let decimals = (16 - exp).max(0) as usize;
        let fixed = format!("{f:.decimals$}");
        if fixed.contains('.') {
            fixed
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_string()
        } else {
            fixed
        }
    }
}

/// C++ jsonnet's `std.toString` of a non-string value: compact JSON with
/// `, ` and `: `, sorted keys, `{ }`/`[ ]` for empty containers, integral
/// numbers in full and others with 17 significant digits. Kapitan hashes
/// and zips exactly this text (`kap.sha256`, `kap.gzip_b64`).
pub fn cpp_to_string(v: &Val, out: &mut String) -> JrResult<()> {
    cpp_to_string_at(v, out, 0).map_err(Conv::into_error)
}

fn cpp_to_string_at(v: &Val, out: &mut String, depth: usize) -> Result<(), Conv> {
    check_depth(v, depth)?;
    match v {
        Val::Null => out.push_str("null"),
        Val::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Val::Num(n) => {
            let f = n.get();
            if f.fract() == 0.0 {
                out.push_str(&format!("{f:.0}"));
            } else {
                out.push_str(&format_g17(f));
            }
        }
        Val::Str(s) => {
            out.push('"');
            for c in s.clone().into_flat().chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    '\x08' => out.push_str("\\b"),
                    '\x0c' => out.push_str("\\f"),
                    c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                    c => out.push(c),
                }
            }
            out.push('"');
        }
        Val::Arr(a) => {
            if a.is_empty() {
                out.push_str("[ ]");
                return Ok(());
            }
            out.push('[');
            for (i, item) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                cpp_to_string_at(&item?, out, depth + 1)
                    .map_err(|e| e.within(|| format!("[{i}]")))?;
            }
            out.push(']');
        }
        Val::Obj(o) => {
            let mut fields = o.fields();
            if fields.is_empty() {
                out.push_str("{ }");
                return Ok(());
            }
            fields.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
            out.push('{');
            for (i, f) in fields.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                cpp_to_string_at(&Val::string(f.to_string()), out, depth)?;
                out.push_str(": ");
                let item = o.get(f.clone())?.unwrap_or(Val::Null);
                cpp_to_string_at(&item, out, depth + 1).map_err(|e| e.within(|| f.to_string()))?;
            }
            out.push('}');
        }
        Val::Func(_) => return Err(rt_err("couldn't manifest function as JSON").into()),
    }
    Ok(())
}

#[derive(Clone, Copy)]
enum NativeKind {
    ToString,
    Jinja2RenderFile,
    YamlLoad,
    YamlLoadStream,
    FileRead,
    FileExists,
    DirFilesList,
    DirFilesRead,
    Inventory,
    Topics,
    YamlDump,
    YamlDumpStream,
    Sha256,
    GzipB64,
    JsonschemaValidate,
}

struct Native {
    kind: NativeKind,
    env: Rc<JsonnetEnv>,
    /// What `yaml_load`/`yaml_load_stream` returned for a file in this
    /// evaluation: a loop loading one large file re-read and re-parsed it
    /// on every call (830 KB x 1,000 calls: 30-40 s).
    loaded: std::cell::RefCell<std::collections::HashMap<PathBuf, Val>>,
}

// Natives hold plain Rust data and strings (the loads they keep), never
// jsonnet values that hold others, so there is nothing for the cycle
// collector to visit.
impl Trace for Native {
    fn is_type_tracked() -> bool {
        false
    }
}

fn arg_str(args: &[Val], i: usize, fname: &str) -> JrResult<String> {
    match args.get(i) {
        Some(Val::Str(s)) => Ok(s.clone().into_flat().to_string()),
        _ => Err(rt_err(format!(
            "{fname}: argument {} must be a string",
            i + 1
        ))),
    }
}

/// `json.loads` of jsonnet's text: every integral number is an integer in
/// Python (`-0` is `0`); those beyond `i64` stay floats and are printed as
/// integers by the dumpers.
fn python_json_loads(text: &str, fname: &str) -> JrResult<Value> {
    fn ints(v: Value) -> Value {
        match v {
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Value::Int(f as i64),
            Value::List(l) => Value::List(l.into_iter().map(ints).collect()),
            Value::Map(m) => Value::Map(m.into_iter().map(|(k, v)| (k, ints(v))).collect()),
            other => other,
        }
    }
    serde_json::from_str::<serde_json::Value>(text)
        .map(|j| ints(Value::from_json(&j)))
        .map_err(|e| rt_err(format!("{fname}: argument is not JSON: {e}")))
}

impl Native {
    fn first_match(&self, name: &str, pred: impl Fn(&Path) -> bool) -> Option<PathBuf> {
        self.env
            .search_paths
            .iter()
            .map(|s| s.join(name))
            .find(|p| p.exists() && pred(p))
    }

    /// [`Self::first_match`] for a read: refused outside a confined
    /// compile's roots.
    fn find_to_read(&self, name: &str, pred: impl Fn(&Path) -> bool) -> JrResult<Option<PathBuf>> {
        match self.first_match(name, pred) {
            Some(p) => super::confine::check(&p).map(|()| Some(p)).map_err(rt_err),
            None => Ok(None),
        }
    }

    /// `yaml_load`'s (or `yaml_load_stream`'s) result for `name`, read and
    /// parsed once per evaluation.
    fn load_yaml(&self, name: &str, fname: &str, stream: bool) -> JrResult<Val> {
        let path = self.yaml_path(name, fname)?;
        if let Some(v) = self.loaded.borrow().get(&path) {
            return Ok(v.clone());
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| rt_err(format!("cannot read {}: {e}", path.display())))?;
        let docs =
            pyyaml_load::load_all(&text).map_err(|e| rt_err(format!("{}: {e}", path.display())))?;
        let v = if stream {
            Value::List(docs)
        } else {
            docs.into_iter().next().unwrap_or(Value::Null)
        };
        let v = Val::string(python_json_dumps(&v));
        self.loaded.borrow_mut().insert(path, v.clone());
        Ok(v)
    }

    fn yaml_path(&self, name: &str, fname: &str) -> JrResult<PathBuf> {
        self.find_to_read(name, |p| {
            p.is_file()
                && matches!(
                    p.extension().and_then(|e| e.to_str()),
                    Some("yml") | Some("yaml")
                )
        })?
        .ok_or_else(|| {
            rt_err(format!(
                "{fname}: could not find any input yaml file: {name}"
            ))
        })
    }

    fn run(&self, args: &[Val]) -> JrResult<Val> {
        use NativeKind::*;
        match self.kind {
            ToString => match args.first() {
                Some(Val::Str(s)) => Ok(Val::Str(s.clone())),
                Some(v) => {
                    let mut out = String::new();
                    cpp_to_string(v, &mut out)?;
                    Ok(Val::string(out))
                }
                None => Err(rt_err("strata_to_string: missing argument")),
            },
            Sha256 => {
                let s = arg_str(args, 0, "sha256_string")?;
                Ok(Val::string(format!(
                    "{:x}",
                    sha2::Sha256::digest(s.as_bytes())
                )))
            }
            GzipB64 => {
                let s = arg_str(args, 0, "gzip_b64")?;
                Ok(Val::string(gzip_b64(s.as_bytes())))
            }
            YamlDump | YamlDumpStream => {
                let s = arg_str(args, 0, "yaml_dump")?;
                let v = python_json_loads(&s, "yaml_dump")?;
                let mut opts = DumpOptions::safe_dump();
                opts.integral_floats_as_ints = true;
                let out = match (self.kind, v) {
                    (YamlDumpStream, Value::List(docs)) => yaml_dump::dump_all(&docs, &opts),
                    (YamlDumpStream, _) => {
                        return Err(rt_err("yaml_dump_stream: argument must be a list"))
                    }
                    (_, v) => yaml_dump::dump(&v, &opts),
                };
                Ok(Val::string(out))
            }
            YamlLoad => {
                let name = arg_str(args, 0, "yaml_load")?;
                self.load_yaml(&name, "yaml_load", false)
            }
            YamlLoadStream => {
                let name = arg_str(args, 0, "yaml_load_stream")?;
                self.load_yaml(&name, "yaml_load_stream", true)
            }
            FileRead => {
                let name = arg_str(args, 0, "file_read")?;
                let p = self.find_to_read(&name, Path::is_file)?.ok_or_else(|| {
                    rt_err(format!("file_read: {name} not found in search paths"))
                })?;
                std::fs::read_to_string(&p)
                    .map(Val::string)
                    .map_err(|e| rt_err(format!("cannot read {}: {e}", p.display())))
            }
            FileExists => {
                let name = arg_str(args, 0, "file_exists")?;
                let found = self.find_to_read(&name, |_| true)?;
                // A review compiles a revision in a scratch tree standing
                // in for the working directory: the path is given as the
                // working directory's, so both sides (and a plain compile)
                // say the same (re-probe 11: every review showed the two
                // scratch paths as a change).
                let found = found.map(|p| match super::confine::base() {
                    Some(base) => match (p.strip_prefix(&base), std::env::current_dir()) {
                        (Ok(rel), Ok(cwd)) => cwd.join(rel),
                        _ => p,
                    },
                    None => p,
                });
                let mut m = Map::default();
                m.insert("exists".into(), Value::Bool(found.is_some()));
                m.insert(
                    "path".into(),
                    Value::String(
                        found
                            .map(|p| p.to_string_lossy().into_owned())
                            .unwrap_or_default(),
                    ),
                );
                value_to_val(&Value::Map(m))
            }
            DirFilesList | DirFilesRead => {
                let name = arg_str(args, 0, "dir_files_list")?;
                let dir = self.find_to_read(&name, Path::is_dir)?.ok_or_else(|| {
                    rt_err(format!("{name}: directory not found in search paths"))
                })?;
                let mut files: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
                    .map_err(|e| rt_err(format!("cannot list {}: {e}", dir.display())))?
                    .filter_map(Result::ok)
                    .filter(|e| e.path().is_file())
                    .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
                    .collect();
                files.sort();
                if matches!(self.kind, DirFilesList) {
                    return value_to_val(&Value::List(
                        files.into_iter().map(|(n, _)| Value::String(n)).collect(),
                    ));
                }
                let mut m = Map::default();
                for (n, p) in files {
                    super::confine::check(&p).map_err(rt_err)?;
                    let text = std::fs::read_to_string(&p)
                        .map_err(|e| rt_err(format!("cannot read {}: {e}", p.display())))?;
                    m.insert(n, Value::String(text));
                }
                value_to_val(&Value::Map(m))
            }
            Inventory => {
                let target = match args.first() {
                    Some(Val::Str(s)) => Some(s.clone().into_flat().to_string()),
                    Some(Val::Null) | None => None,
                    _ => return Err(rt_err("inventory: target must be a string or null")),
                };
                match args.get(1) {
                    Some(Val::Null) | None => {}
                    Some(Val::Str(p)) => {
                        let mut p = PathBuf::from(p.clone().into_flat().to_string());
                        if p.is_relative() {
                            if let Ok(cwd) = std::env::current_dir() {
                                p = cwd.join(p);
                            }
                        }
                        if normpath(&p) != normpath(&self.env.inventory.inventory_path) {
                            return Err(rt_err(format!(
                                "inventory: strata only reads the compiled inventory ({}), not {}",
                                self.env.inventory.inventory_path.display(),
                                p.display()
                            )));
                        }
                    }
                    _ => return Err(rt_err("inventory: inv_path must be a string or null")),
                }
                // Not kept for the next call: a call converts only the
                // dump's top level (the rest on use), and kept values stayed
                // allocated after their evaluation (115 MB more at issue
                // 18's 200 targets; the cause was not found).
                let inv = &self.env.inventory;
                match target {
                    Some(t) => match inv.target_val(&t) {
                        Some(v) => v,
                        None => Err(rt_err(format!("inventory: target not found: {t}"))),
                    },
                    None => inv.all_val(),
                }
            }
            Topics => Err(rt_err("kap.topics() is not supported by strata")),
            Jinja2RenderFile => {
                let name = arg_str(args, 0, "jinja2_render_file")?;
                let ctx = python_json_loads(
                    &arg_str(args, 1, "jinja2_render_file")?,
                    "jinja2_render_file",
                )?;
                let path = self.find_to_read(&name, Path::is_file)?.ok_or_else(|| {
                    rt_err(format!(
                        "jinja2_render_file: {name} not found in search paths"
                    ))
                })?;
                let default = Path::new("lib/jinja2_filters.py");
                let filters = match &self.env.python {
                    Some(b) if default.is_file() => {
                        let abs = std::env::current_dir()
                            .map(|d| d.join(default))
                            .unwrap_or_else(|_| default.to_path_buf());
                        let f = b.filters_at(&abs).map_err(|e| rt_err(e.to_string()))?;
                        Some((b.clone(), f))
                    }
                    _ => None,
                };
                jinja::render_file_with(
                    &path,
                    &jinja::to_template_value(&ctx),
                    &self.env.search_paths,
                    &|env| {
                        if let Some((b, f)) = &filters {
                            super::python::add_filters(b, f, env);
                        }
                    },
                )
                .map(Val::string)
                .map_err(rt_err)
            }
            JsonschemaValidate => {
                let obj = python_json_loads(&arg_str(args, 0, "jsonschema")?, "jsonschema")?;
                let schema = python_json_loads(&arg_str(args, 1, "jsonschema")?, "jsonschema")?;
                let reason = super::schema::validate(&obj, &schema)
                    .err()
                    .unwrap_or_default();
                let mut m = Map::default();
                m.insert("valid".into(), Value::Bool(reason.is_empty()));
                m.insert("reason".into(), Value::String(reason));
                value_to_val(&Value::Map(m))
            }
        }
    }
}

struct Handler(Native);

impl Trace for Handler {
    fn is_type_tracked() -> bool {
        false
    }
}

impl NativeCallbackHandler for Handler {
    fn call(&self, args: &[Val]) -> JrResult<Val> {
        self.0.run(args)
    }
}

/// `std.parseJson` through serde_json and strata's `Value`: jrsonnet's own
/// deserializes into `Val` through serde, and starlark (the template
/// engine) turns on serde_json's `arbitrary_precision` for the whole build,
/// under which every number would arrive as a one-field object.
struct ParseJson;

impl Trace for ParseJson {
    fn is_type_tracked() -> bool {
        false
    }
}

impl NativeCallbackHandler for ParseJson {
    fn call(&self, args: &[Val]) -> JrResult<Val> {
        let text = arg_str(args, 0, "std.parseJson")?;
        let json: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| rt_err(format!("failed to parse json: {e}")))?;
        value_to_val(&Value::from_json(&json))
    }
}

/// `std.setMember` that, like the C++ jsonnet's (which indexes its `arr`
/// argument), also takes a string as the set: Kapitan's examples call
/// `std.setMember(c, "-0123456789abc...")`. jrsonnet's wants an array.
struct SetMember;

impl Trace for SetMember {
    fn is_type_tracked() -> bool {
        false
    }
}

impl jrsonnet_evaluator::function::builtin::Builtin for SetMember {
    fn name(&self) -> &str {
        "setMember"
    }

    fn params(&self) -> jrsonnet_evaluator::function::FunctionSignature {
        jrsonnet_stdlib::builtin_set_member {}.params()
    }

    fn call(
        &self,
        loc: jrsonnet_evaluator::function::CallLocation<'_>,
        args: &[Option<jrsonnet_evaluator::Thunk<Val>>],
    ) -> JrResult<Val> {
        let mut args = args.to_vec();
        if let Some(Some(arr)) = args.get(1) {
            if let Val::Str(s) = arr.evaluate()? {
                let chars: Vec<Val> = s
                    .to_string()
                    .chars()
                    .map(|c| Val::string(c.to_string()))
                    .collect();
                args[1] = Some(jrsonnet_evaluator::Thunk::evaluated(Val::Arr(
                    jrsonnet_evaluator::val::ArrValue::from(chars),
                )));
            }
        }
        jrsonnet_stdlib::builtin_set_member {}.call(loc, &args)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// jrsonnet's standard library context with strata's `std.parseJson`
/// (see [`ParseJson`]); same API as `jrsonnet_stdlib::ContextInitializer`.
#[derive(Trace)]
pub struct StdContext {
    stdlib_obj: jrsonnet_evaluator::ObjValue,
    settings: jrsonnet_gcmodule::Cc<std::cell::RefCell<jrsonnet_stdlib::Settings>>,
}

/// `std.trace`'s printer: jrsonnet's line (`TRACE: FILE:LINE VALUE` on
/// stderr, as Kapitan's jsonnet writes it), made inert for a GitHub Actions
/// log: the value is the pull request's to choose.
#[derive(jrsonnet_gcmodule::Acyclic)]
struct ActionsSafeTrace(PathResolver);

impl jrsonnet_stdlib::TracePrinter for ActionsSafeTrace {
    fn print_trace(
        &self,
        loc: jrsonnet_evaluator::function::CallLocation,
        value: jrsonnet_evaluator::IStr,
    ) {
        let mut line = String::from("TRACE:");
        if let Some(loc) = loc.0 {
            let locs = loc.0.map_source_locations(&[loc.1]);
            let path = loc
                .0
                .source_path()
                .path()
                .map_or_else(|| loc.0.source_path().to_string(), |p| self.0.resolve(p));
            line.push_str(&format!(" {path}:{}", locs[0].line));
        }
        line.push_str(&format!(" {value}\n"));
        crate::diagnostics::program_output(&line);
    }
}

impl StdContext {
    pub fn new(resolver: PathResolver) -> Self {
        let settings = jrsonnet_stdlib::Settings {
            ext_vars: Default::default(),
            ext_natives: Default::default(),
            trace_printer: Rc::new(ActionsSafeTrace(resolver.clone())),
            path_resolver: resolver,
        };
        let settings = jrsonnet_gcmodule::Cc::new(std::cell::RefCell::new(settings));
        let mut std = jrsonnet_evaluator::ObjValueBuilder::new();
        std.with_super(jrsonnet_stdlib::stdlib_uncached(settings.clone()));
        std.method(
            "setMember",
            jrsonnet_evaluator::function::FuncVal::builtin(SetMember),
        );
        #[allow(deprecated)]
        std.method(
            "parseJson",
            NativeCallback::new(vec!["str".into()], ParseJson),
        );
        StdContext {
            stdlib_obj: std.build(),
            settings,
        }
    }

    pub fn add_ext_str(&self, name: jrsonnet_evaluator::IStr, value: jrsonnet_evaluator::IStr) {
        self.settings
            .borrow_mut()
            .ext_vars
            .insert(name, jrsonnet_evaluator::tla::TlaArg::String(value));
    }

    pub fn add_native(
        &self,
        name: impl Into<jrsonnet_evaluator::IStr>,
        cb: impl Into<jrsonnet_evaluator::function::FuncVal>,
    ) {
        self.settings
            .borrow_mut()
            .ext_natives
            .insert(name.into(), cb.into());
    }
}

impl jrsonnet_evaluator::ContextInitializer for StdContext {
    fn populate(
        &self,
        source: jrsonnet_evaluator::Source,
        builder: &mut jrsonnet_evaluator::InitialContextBuilder,
    ) {
        // As jrsonnet_stdlib does: `std.thisFile` is per file.
        let mut std = jrsonnet_evaluator::ObjValueBuilder::new();
        std.with_super(self.stdlib_obj.clone());
        let this_file = {
            let sp = source.source_path();
            sp.path().map_or_else(
                || sp.to_string(),
                |p| self.settings.borrow().path_resolver.resolve(p),
            )
        };
        std.field("thisFile").hide().value(this_file);
        builder.bind(
            "std",
            jrsonnet_evaluator::Thunk::evaluated(Val::Obj(std.build())),
        );
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `json.dumps(v)`: `, `/`: ` separators, keys in order, ASCII only.
pub fn python_json_dumps(v: &Value) -> String {
    let mut out = String::new();
    jinja::python_json_inline(v, false, &mut out);
    out
}

/// Python's `gzip.compress(data, compresslevel=9, mtime=0)` in base64.
pub fn gzip_b64(data: &[u8]) -> String {
    use std::io::Write;
    let mut enc = flate2::GzBuilder::new()
        .mtime(0)
        .operating_system(255)
        .write(Vec::new(), flate2::Compression::new(9));
    // Writing to a Vec cannot fail.
    let _ = enc.write_all(data);
    let bytes = enc.finish().unwrap_or_default();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Steps of work one jsonnet evaluation may do that no allocation shows
/// (vendor/jrsonnet-evaluator/STRATA.md): object layers walked looking
/// fields up, and large strings handed to std functions (a step per 16
/// bytes past 4 KiB). About 15 s of lookups in a release build, far past
/// real components (a 5,000-layer object read whole takes 12,500,000).
/// `STRATA_EVAL_STEPS` changes it.
pub const MAX_LAYER_STEPS: u64 = 200_000_000;

/// Runs one jsonnet evaluation on this thread under the work budget and
/// the time limit; one that went past either is an error whatever it
/// returned (its walks were cut short).
pub fn with_layer_budget<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    let clock = crate::limits::eval_clock();
    let steps = crate::limits::get("STRATA_EVAL_STEPS", MAX_LAYER_STEPS);
    jrsonnet_evaluator::set_layer_step_budget(steps);
    jrsonnet_evaluator::set_evaluation_deadline(clock.deadline());
    let r = f();
    drop(clock);
    let exhausted = jrsonnet_evaluator::layer_steps_exhausted();
    let timed_out = jrsonnet_evaluator::evaluation_timed_out();
    jrsonnet_evaluator::set_layer_step_budget(u64::MAX);
    jrsonnet_evaluator::set_evaluation_deadline(None);
    if timed_out {
        return Err(crate::limits::eval_time_message());
    }
    if exhausted {
        return Err(format!(
            "the evaluation did more than {steps} steps of work that allocate nothing: an object extended field by field in a long loop (`a + {{[k]: v}}` in std.foldl) costs its length in every lookup, and a large string handed to a std function in a long loop (`std.length(s)`) costs its length in every call; build the object with one object comprehension (`{{[k]: v for k in ks}}`) and compute such values once, outside the loop, or raise STRATA_EVAL_STEPS"
        ));
    }
    r
}

/// Evaluates one jsonnet file for a target (ext var `target`).
pub fn evaluate(file: &Path, target: &str, env: &JsonnetEnv) -> Result<Value, String> {
    let ctx = StdContext::new(PathResolver::Absolute);
    ctx.add_ext_str("target".into(), target.into());
    let shared = Rc::new(env.clone());
    let natives: [(&str, NativeKind, &[&str]); 15] = [
        ("strata_to_string", NativeKind::ToString, &["obj"]),
        (
            "jinja2_render_file",
            NativeKind::Jinja2RenderFile,
            &["name", "ctx"],
        ),
        ("yaml_load", NativeKind::YamlLoad, &["name"]),
        ("yaml_load_stream", NativeKind::YamlLoadStream, &["name"]),
        ("file_read", NativeKind::FileRead, &["name"]),
        ("file_exists", NativeKind::FileExists, &["name"]),
        ("dir_files_list", NativeKind::DirFilesList, &["name"]),
        ("dir_files_read", NativeKind::DirFilesRead, &["name"]),
        ("inventory", NativeKind::Inventory, &["target", "inv_path"]),
        ("topics", NativeKind::Topics, &["name"]),
        ("yaml_dump", NativeKind::YamlDump, &["obj"]),
        ("yaml_dump_stream", NativeKind::YamlDumpStream, &["obj"]),
        ("sha256_string", NativeKind::Sha256, &["obj"]),
        ("gzip_b64", NativeKind::GzipB64, &["obj"]),
        (
            "jsonschema_validate",
            NativeKind::JsonschemaValidate,
            &["obj", "schema_obj"],
        ),
    ];
    for (name, kind, params) in natives {
        #[allow(deprecated)]
        let cb = NativeCallback::new(
            params.iter().map(|s| s.to_string()).collect(),
            Handler(Native {
                kind,
                env: shared.clone(),
                loaded: Default::default(),
            }),
        );
        ctx.add_native(name, cb);
    }
    let mut builder = State::builder();
    builder
        .import_resolver(BundledResolver {
            search_paths: env.search_paths.clone(),
            bundled: vec![(LIB_IMPORT, KAPITAN_LIBJSONNET)],
            bundled_first: true,
        })
        .context_initializer(ctx);
    let state = builder.build();
    let Some(_guard) = state.try_enter() else {
        return Err("jsonnet evaluation cannot be nested".into());
    };
    with_layer_budget(|| {
        let result = state.import(file).and_then(|v| val_to_value(&v));
        result.map_err(|e| format_error(&e))
    })
}

fn format_error(e: &jrsonnet_evaluator::Error) -> String {
    use jrsonnet_evaluator::trace::{CompactFormat, TraceFormat};
    let fmt = CompactFormat {
        resolver: PathResolver::Absolute,
        max_trace: 10,
        padding: 4,
    };
    // jrsonnet's message names its own command-line flag, which strata
    // does not have.
    fmt.format(e)
        .unwrap_or_else(|_| e.to_string())
        .trim_end()
        .replace(
            "stack overflow, try to reduce recursion, or set --max-stack to bigger value",
            "stack overflow: the jsonnet call stack is full (an endless recursion, or a value nested too deep?)",
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Re-probe 12 (review-helm-relative-outside-paths-read): `../../x`
    /// normalised to `x`, so an even number of leading `..` looked inside
    /// the tree to the checks that gate on it. `os.path.normpath` keeps
    /// them, and `/..` is `/`.
    #[test]
    fn normpath_keeps_leading_parent_dirs() {
        for (p, want) in [
            ("../../x", "../../x"),
            ("../x/../../y", "../../y"),
            ("./../../../../a/b", "../../../../a/b"),
            ("a/../../b", "../b"),
            ("a/b/../c", "a/c"),
            ("a/./b/..", "a"),
            ("/../x", "/x"),
            ("/a/../../b", "/b"),
            ("..", ".."),
            ("a/..", ""),
        ] {
            assert_eq!(normpath(Path::new(p)), PathBuf::from(want), "{p}");
        }
    }

    fn eval(src: &str) -> Result<Value, String> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("main.jsonnet");
        std::fs::write(&p, src).unwrap();
        std::fs::write(dir.path().join("data.yml"), "a: yes\nb: 0755\n").unwrap();
        let env = JsonnetEnv {
            search_paths: vec![dir.path().to_path_buf()],
            inventory: Arc::new(InventoryView::default()),
            python: None,
        };
        evaluate(&p, "tgt", &env)
    }

    /// Probe 39 (jsonnet-import-of-a-fifo-says-no-match): an import of a
    /// FIFO (or a directory) that is there said "no match locally or in the
    /// search paths".
    #[test]
    fn an_import_of_something_not_a_file_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("main.jsonnet");
        assert!(std::process::Command::new("mkfifo")
            .arg(dir.path().join("pipe"))
            .status()
            .unwrap()
            .success());
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let env = JsonnetEnv {
            search_paths: vec![dir.path().to_path_buf()],
            inventory: Arc::new(InventoryView::default()),
            python: None,
        };
        for (src, name) in [("importstr 'pipe'", "pipe"), ("import 'sub'", "sub")] {
            std::fs::write(&p, src).unwrap();
            let err = evaluate(&p, "tgt", &env).unwrap_err();
            assert!(
                err.contains(&format!("{name} is not a regular file")) && !err.contains("no match"),
                "{err}"
            );
        }
        std::fs::write(&p, "import 'nosuch'").unwrap();
        let err = evaluate(&p, "tgt", &env).unwrap_err();
        assert!(
            err.contains("no match locally or in the search paths"),
            "{err}"
        );
    }

    /// Probe 39 (jsonnet-not-utf8-error-debug-form): a component or an
    /// `importstr` file that is not UTF-8 was named in Rust's debug form,
    /// `SourceFile("/path")`, with nothing to do about it.
    #[test]
    fn a_file_that_is_not_utf8_is_named_plainly() {
        let dir = tempfile::tempdir().unwrap();
        let env = JsonnetEnv {
            search_paths: vec![dir.path().to_path_buf()],
            inventory: Arc::new(InventoryView::default()),
            python: None,
        };
        std::fs::write(dir.path().join("bad.txt"), b"a\xff\xfeb").unwrap();
        let main = dir.path().join("main.jsonnet");
        std::fs::write(&main, "importstr 'bad.txt'").unwrap();
        let bad = dir.path().join("bad.jsonnet");
        std::fs::write(&bad, b"{ a: '\xff' }").unwrap();
        for (file, named) in [(&main, "bad.txt"), (&bad, "bad.jsonnet")] {
            let err = evaluate(file, "tgt", &env).unwrap_err();
            assert!(
                err.contains("is not valid utf-8")
                    && err.contains(named)
                    && err.contains("save it as UTF-8")
                    && !err.contains("SourceFile("),
                "{err}"
            );
        }
        // importbin reads the bytes.
        std::fs::write(&main, "std.length(importbin 'bad.txt')").unwrap();
        assert!(evaluate(&main, "tgt", &env).is_ok());
    }

    #[test]
    fn parse_yaml_refuses_a_nul_byte_instead_of_stopping_there() {
        let err = eval("std.parseYaml('a: 1\\n\\u0000\\nb: 2\\n')").unwrap_err();
        assert!(err.contains("a NUL byte on line 2"), "{err}");
        let v = eval("std.parseYaml('a: 1\\nb: \"x\\\\0y\"\\n')").unwrap();
        assert_eq!(v.get_path(&["b"]), Some(&Value::String("x\0y".into())));
    }

    #[test]
    fn ext_var_and_kapitan_lib() {
        let v = eval(
            "local kap = import 'lib/kapitan.libjsonnet';\n{ t: std.extVar('target'), h: kap.sha256('x'), y: std.parseJson(kap.yaml_load('data.yml')), d: kap.yaml_dump({b: [1], a: 'l1\\nl2'}) }",
        )
        .unwrap();
        assert_eq!(v.get_path(&["t"]), Some(&Value::String("tgt".into())));
        assert_eq!(
            v.get_path(&["h"]).and_then(Value::as_str),
            Some("2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881")
        );
        assert_eq!(
            serde_json::to_string(v.get_path(&["y"]).unwrap()).unwrap(),
            r#"{"a":true,"b":493}"#
        );
        assert_eq!(
            v.get_path(&["d"]).and_then(Value::as_str),
            Some("a: 'l1\n\n  l2'\nb:\n- 1\n")
        );
    }

    #[test]
    fn parsed_json_numbers_are_numbers() {
        let v = eval(
            r#"local j = std.parseJson('{"a": 1, "b": [2.5, -3], "c": 12345678901234567890, "d": {"e": null, "f": "x"}}');
{ sum: j.a + 1, f: j.b[0] * 2, n: j.b[1], t: std.type(j.a), big: j.c, d: j.d, s: std.parseJson('"s"'), y: std.parseYaml('a: 1').a + 1, this: std.length(std.thisFile) > 0 }"#,
        )
        .unwrap();
        let get = |k: &str| v.get_path(&[k]).cloned().unwrap();
        assert_eq!(get("sum"), Value::Int(2));
        assert_eq!(get("f"), Value::Int(5));
        assert_eq!(get("n"), Value::Int(-3));
        assert_eq!(get("t"), Value::String("number".into()));
        assert_eq!(get("big"), Value::Float(12345678901234567890.0));
        assert_eq!(
            serde_json::to_string(&get("d")).unwrap(),
            r#"{"e":null,"f":"x"}"#
        );
        assert_eq!(get("s"), Value::String("s".into()));
        assert_eq!(get("y"), Value::Int(2));
        assert_eq!(get("this"), Value::Bool(true));
        let e = eval("std.parseJson('{')").unwrap_err();
        assert!(e.contains("failed to parse json"), "{e}");
    }

    #[test]
    fn errors_name_the_file() {
        let e = eval("{ a: error 'boom' }").unwrap_err();
        assert!(e.contains("boom"), "{e}");
    }

    #[test]
    fn to_string_like_cpp_jsonnet() {
        let v = eval(
            "local kap = import 'lib/kapitan.libjsonnet';\n{ s: std.native('strata_to_string')({ b: [1, 2.5, 'x', null, true, { c: {} }, []], f: 0.1, n: -0, e: 1e21, t: 1e-7 }), h: kap.sha256({f: 0.1}) }",
        )
        .unwrap();
        assert_eq!(
            v.get_path(&["s"]).and_then(Value::as_str),
            Some("{\"b\": [1, 2.5, \"x\", null, true, {\"c\": { }}, [ ]], \"e\": 1000000000000000000000, \"f\": 0.10000000000000001, \"n\": -0, \"t\": 9.9999999999999995e-08}")
        );
        let expected = format!(
            "{:x}",
            sha2::Sha256::digest(b"{\"f\": 0.10000000000000001}")
        );
        assert_eq!(
            v.get_path(&["h"]).and_then(Value::as_str),
            Some(expected.as_str())
        );
    }

    #[test]
    fn gzip_like_python() {
        assert_eq!(
            gzip_b64(b"hello world\n"),
            "H4sIAAAAAAAC/8tIzcnJVyjPL8pJ4QIALTsIrwwAAAA="
        );
    }

    #[test]
    fn block_comments_end_at_double_star_slash() {
        // projectsyn's libraries open with `/** ... **/`: the comment ends
        // there, as in the C++ jsonnet (vendor/jrsonnet-lexer/STRATA.md).
        let v = eval(
            "/**\n * \\file doc\n **/\nlocal x = 1;\n/* a ***/ local y = 2; /*** b */\n/**/\n{ x: x, y: y /* c **** d */ }",
        )
        .unwrap();
        assert_eq!(serde_json::to_string(&v).unwrap(), r#"{"x":1,"y":2}"#);
        assert!(eval("/* never closed **\n{}").is_err());
    }

    /// `kap.inventory()` converts a dump one level at a time as the code
    /// reads it (issue 18): what it reads is the dump, with
    /// `parameters.kapitan.target_full_path` (and only that path) replaced,
    /// and a non-finite number fails only where it is read.
    #[test]
    fn inventory_values_are_converted_as_read() {
        let dump = |name: &str| {
            let mut v = Value::from_json(&serde_json::json!({
                "classes": ["common"],
                "parameters": {
                    "kapitan": {"target_full_path": "", "vars": {"target": name}},
                    "other": {"kapitan": {"target_full_path": "kept"}},
                    "list": [1, [2, {"x": "y"}], {"z": [true, null, 1.5]}],
                    "bad": {"n": 0}
                }
            }));
            if let Value::Map(top) = &mut v {
                if let Some(Value::Map(p)) = top.get_mut("parameters") {
                    p.insert("bad".into(), Value::Float(f64::INFINITY));
                }
            }
            v
        };
        let targets: BTreeMap<String, Value> = [
            ("a.b".to_string(), dump("a.b")),
            ("c".to_string(), dump("c")),
        ]
        .into();
        let dir = tempfile::tempdir().unwrap();
        let env = JsonnetEnv {
            search_paths: vec![dir.path().to_path_buf()],
            inventory: Arc::new(InventoryView {
                targets: Arc::new(targets),
                inventory_path: dir.path().join("inventory"),
            }),
            python: None,
        };
        let run = |src: &str| {
            let p = dir.path().join("main.jsonnet");
            std::fs::write(&p, src).unwrap();
            evaluate(&p, "a.b", &env)
        };
        let v = run("local kap = import 'lib/kapitan.libjsonnet';\n\
             local p = kap.inventory().parameters;\n\
             local g = kap.inventory_global();\n\
             { full: p.kapitan.target_full_path, other: p.other, list: p.list, \
               c: g.c.parameters.kapitan.target_full_path, \
               targets: std.objectFields(g), classes: g['a.b'].classes, \
               same: kap.inventory().parameters.list == g['a.b'].parameters.list }")
        .unwrap();
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"c":"c","classes":["common"],"full":"a/b","list":[1,[2,{"x":"y"}],{"z":[true,null,1.5]}],"other":{"kapitan":{"target_full_path":"kept"}},"same":true,"targets":["a.b","c"]}"#
        );
        let err =
            run("local kap = import 'lib/kapitan.libjsonnet'; kap.inventory().parameters.bad")
                .unwrap_err();
        assert!(
            err.contains("inventory of target a.b: parameters.bad is .inf or .nan"),
            "{err}"
        );
    }

    /// Re-probe 7 (jsonnet-yaml-load-native-reparses-per-call): a file is
    /// read and parsed once per evaluation, however often it is loaded.
    #[test]
    fn yaml_load_reads_a_file_once_per_evaluation() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("d.yml"), "a: 1\n").unwrap();
        let native = Native {
            kind: NativeKind::YamlLoad,
            env: Rc::new(JsonnetEnv {
                search_paths: vec![dir.path().to_path_buf()],
                inventory: Arc::new(InventoryView::default()),
                python: None,
            }),
            loaded: Default::default(),
        };
        let load = || match native.run(&[Val::string("d.yml")]) {
            Ok(Val::Str(s)) => s.to_string(),
            _ => panic!("yaml_load failed"),
        };
        assert_eq!(load(), r#"{"a": 1}"#);
        // Changed on disk: the evaluation keeps what it read.
        std::fs::write(dir.path().join("d.yml"), "a: 2\n").unwrap();
        assert_eq!(load(), r#"{"a": 1}"#);
        assert_eq!(native.loaded.borrow().len(), 1);
    }
}
