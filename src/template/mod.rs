//! ytt-compatible templating: data values (schema, documents, flags),
//! YAML templates evaluated with Starlark, overlay documents, and output
//! exactly as ytt prints it. See `docs/template.md`.

pub mod compile;
pub mod emit;
pub mod eval;
pub mod guard;
pub mod node;
pub mod overlay;
pub mod schema;
pub mod validate;
pub mod yamlmeta;
pub mod ytoml;

use eval::{SrcFile, Workspace};
use node::{Kind, Node, Pos, Scalar, Val};

/// Everything `strata template` can be asked to do.
#[derive(Debug, Default, Clone)]
pub struct Options {
    /// Input files as (ytt relative path, contents), in `-f` order.
    pub files: Vec<SrcFile>,
    /// `--data-values-file` documents as (name, contents).
    pub data_values_files: Vec<SrcFile>,
    /// Data value flags in ytt's precedence order, already split.
    pub flag_values: Vec<FlagValue>,
    pub data_values_inspect: bool,
    pub schema_inspect: bool,
    pub output: Option<String>,
    pub strict: bool,
    pub ignore_unknown_comments: bool,
    pub implicit_map_key_overrides: bool,
    pub disable_validation: bool,
}

/// One `--data-value*` / env setting: key path and value.
#[derive(Debug, Clone)]
pub struct FlagValue {
    pub key: String,
    pub value: Val,
    pub source: String,
}

/// What a library evaluation is for.
#[derive(Debug, Clone, PartialEq)]
pub enum LibMode {
    Eval,
    Values,
    /// `export(name, path)`
    Export(String, Option<String>),
}

#[derive(Debug, Default)]
pub struct Output {
    /// Final data values (library `data_values()`).
    pub values: Option<Val>,
    /// An exported symbol (library `export()`).
    pub export: Option<starlark::values::OwnedFrozenValue>,
    /// YAML documents, as ytt prints them to stdout.
    pub docs: Vec<Node>,
    /// Non-YAML outputs (text templates / data files) as (path, contents).
    pub files: Vec<(String, String)>,
    /// Output file name of each document's template (for --output-files).
    pub doc_files: Vec<String>,
}

impl Output {
    pub fn to_yaml(&self) -> String {
        emit::encode_docs(self.docs.iter())
    }

    /// The documents as `-o pos` prints them (source position per line).
    pub fn to_pos(&self) -> String {
        emit::encode_docs_pos(self.docs.iter())
    }

    /// The documents as `-o json` prints them (one JSON text each).
    pub fn to_json(&self) -> Result<String, String> {
        emit::encode_docs_json(self.docs.iter())
    }

    /// The output as files, as `--output-files` writes them: each template's
    /// documents in a file named after it, then the non-YAML outputs.
    pub fn into_files(self) -> Vec<(String, String)> {
        let mut per_file: Vec<(String, Vec<node::Node>)> = Vec::new();
        for (d, name) in self.docs.into_iter().zip(self.doc_files) {
            match per_file.iter_mut().find(|(n, _)| *n == name) {
                Some((_, v)) => v.push(d),
                None => per_file.push((name, vec![d])),
            }
        }
        let mut out: Vec<(String, String)> = per_file
            .into_iter()
            .map(|(name, docs)| (name, emit::encode_docs(docs.iter())))
            .collect();
        out.extend(self.files);
        out
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TemplateError(pub String);

fn terr(s: impl Into<String>) -> TemplateError {
    TemplateError(s.into())
}

fn is_private_lib(p: &str) -> bool {
    p.starts_with("_ytt_lib/") || p.contains("/_ytt_lib/")
}

fn doc_ann_name(c: &node::Comment) -> Option<&str> {
    let d = c.data.strip_prefix('@')?;
    let name = d.split(' ').next().unwrap_or("");
    if name.is_empty() {
        None
    } else {
        Some(name)
    }
}

#[derive(PartialEq, Clone, Copy, Debug)]
enum DocType {
    Template,
    Values,
    Schema,
}

fn doc_type(d: &Node) -> DocType {
    for c in &d.comments {
        match doc_ann_name(c) {
            Some("data/values") => return DocType::Values,
            Some("data/values-schema") => return DocType::Schema,
            _ => {}
        }
    }
    DocType::Template
}

/// Finds `#@data/values` annotations on nodes that are not documents.
fn misplaced_dv(n: &Node) -> Option<Pos> {
    if n.kind != Kind::Doc && n.kind != Kind::DocSet {
        for c in &n.comments {
            if matches!(
                doc_ann_name(c),
                Some("data/values") | Some("data/values-schema")
            ) {
                return Some(c.pos.clone());
            }
        }
    }
    if let Val::Node(v) = &n.val {
        if let Some(p) = misplaced_dv(v) {
            return Some(p);
        }
    }
    n.items.iter().find_map(misplaced_dv)
}

fn empty_map() -> Val {
    Val::Node(Box::new(Node::map(Pos::unknown())))
}

/// Runs the whole pipeline.
pub fn run(opts: &Options) -> Result<Output, TemplateError> {
    // Templates are code from the repository: their memory is metered (the
    // Starlark heap limit does not see values kept outside its heap).
    // A compile's ytt entry is metered under its target and entry name.
    let what = crate::memguard::current().unwrap_or_else(|| {
        let names: Vec<&str> = opts.files.iter().take(3).map(|f| f.path.as_str()).collect();
        let mut what = format!("templates {}", names.join(", "));
        if opts.files.len() > 3 {
            what.push_str(&format!(" and {} more", opts.files.len() - 3));
        }
        what
    });
    // starlark's garbage collector, `freeze`, `str()` and hashing recurse
    // over a value's depth with no guard of their own, and a loop
    // (`d = [d]`) nests millions of levels within the heap limit: the
    // evaluation gets a stack deep enough for that (docs/reliability.md).
    std::thread::scope(|s| {
        let worker = std::thread::Builder::new()
            .name("template".into())
            .stack_size(EVAL_STACK_BYTES)
            .spawn_scoped(s, || {
                crate::memguard::metered(&what, || {
                    run_in(opts, None, &eval::LibState::default(), LibMode::Eval)
                })
            })
            .map_err(|e| terr(format!("cannot start the template thread: {e}")))?;
        worker
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// Stack of the thread that evaluates templates: 1 GiB of address space,
/// touched only as deep as a value is nested (measured in a debug build:
/// 2,600,000 nested lists are collected and `str()`'d within it, tuples
/// overflow it from 3,000,000; the 64 MiB heap limit stops a loop at about
/// 1,000,000 lists or 1,300,000 tuples).
const EVAL_STACK_BYTES: usize = 1 << 30;

/// Evaluates a private library (`library.get(...).eval()` and friends).
pub fn run_library(
    st: &eval::LibState,
    reg: std::rc::Rc<eval::Registry>,
    mode: LibMode,
) -> Result<Output, TemplateError> {
    let opts = Options {
        files: st.files.clone(),
        ignore_unknown_comments: st.ignore_unknown,
        implicit_map_key_overrides: st.implicit_map_key_overrides,
        disable_validation: st.disable_validation,
        ..Default::default()
    };
    run_in(&opts, Some(reg), st, mode)
}

fn run_in(
    opts: &Options,
    reg: Option<std::rc::Rc<eval::Registry>>,
    lib: &eval::LibState,
    mode: LibMode,
) -> Result<Output, TemplateError> {
    let reg = reg.unwrap_or_default();
    let mut ws = Workspace::with_scope(opts.files.clone(), reg, opts.disable_validation);
    *ws.scope.refs.borrow_mut() = lib.refs.clone();
    ws.ignore_unknown = opts.ignore_unknown_comments;
    ws.implicit_map_key_overrides = opts.implicit_map_key_overrides;
    ws.strict = opts.strict;

    if opts.output.as_deref() == Some("openapi-v3") && !opts.schema_inspect {
        {
            return Err(terr("Output type currently only supported for data values schema (i.e. include --data-values-schema-inspect)"));
        }
    }
    if opts.schema_inspect && opts.output.as_deref() != Some("openapi-v3") {
        return Err(terr("Data values schema export only supported in OpenAPI v3 format; specify format with --output=openapi-v3 flag"));
    }

    // 1. parse YAML inputs and sort documents by kind
    struct Parsed {
        idx: usize,
        doc: Node,
        types: Vec<DocType>,
    }
    let mut parsed = Vec::new();
    for (idx, f) in opts.files.iter().enumerate() {
        if !f.is_yaml()
            || is_private_lib(&f.path)
            || f.path.ends_with(".lib.yml")
            || f.path.ends_with(".lib.yaml")
        {
            continue;
        }
        let doc = yamlmeta::parse(&f.text, &f.path, opts.strict).map_err(|e| {
            terr(format!(
                "Unmarshaling YAML template '{}': {}",
                f.path, e.message
            ))
        })?;
        if let Some(p) = misplaced_dv(&doc) {
            return Err(terr(format!(
                "{p}: Expected YAML document to be annotated with data/values but was not: only documents (---) can be annotated with @data/values"
            )));
        }
        let types: Vec<DocType> = doc.items.iter().map(doc_type).collect();
        parsed.push(Parsed { idx, doc, types });
    }

    // 2. schema
    let mut schema_doc: Option<Node> = None;
    let mut schema_docs: Vec<Node> = Vec::new();
    for p in &parsed {
        if !p.types.contains(&DocType::Schema) {
            continue;
        }
        let sub = subset(&p.doc, &p.types, DocType::Schema);
        let (_, res) = ws
            .eval_docset(&opts.files[p.idx].path, &sub)
            .map_err(|e| terr(e.0))?;
        schema_docs.extend(res.map(|r| r.items).unwrap_or_default());
    }
    schema_docs.extend(lib.schema.iter().cloned());
    {
        for d in schema_docs {
            if d.injected {
                continue;
            }
            if let Some(lr) = library_ref(&d)? {
                ws.scope.refs.borrow_mut().push(eval::LibRef {
                    full_ref: lr.clone(),
                    lib_ref: lr,
                    doc: d,
                    schema: true,
                    plain: false,
                    after: false,
                    used: std::cell::Cell::new(false),
                });
                continue;
            }
            match &mut schema_doc {
                None => schema_doc = Some(d),
                Some(existing) => {
                    // later schema documents overlay earlier ones
                    let defaults = overlay::doc_child_defaults(&d).map_err(|e| terr(e.message))?;
                    let repl = ws
                        .with_caller(|c| overlay::apply(&mut existing.val, &d.val, &defaults, c))
                        .map_err(|e| terr(e.message))?;
                    if repl {
                        existing.val = d.val.clone();
                    }
                }
            }
        }
    }
    let schema_field = match &schema_doc {
        Some(d) => Some(schema::field_of(d, false).map_err(|e| terr(e.0))?),
        None => None,
    };

    if opts.schema_inspect {
        let f = schema_field.clone().unwrap_or(schema::Field {
            ty: schema::Ty::Map(vec![]),
            nullable: false,
            default: empty_map(),
            pos: Pos::unknown(),
            docs: Default::default(),
            validation: None,
        });
        let doc = openapi(&f);
        return Ok(Output {
            docs: vec![Node::doc(doc, Pos::unknown())],
            ..Default::default()
        });
    }

    // 3. data values documents
    let mut values: Option<Val> = schema_field.as_ref().map(|f| f.default.clone());
    let mut dv_sources: Vec<String> = Vec::new();
    let mut dv_doc_anns: Option<(Vec<node::Ann>, Pos)> = None;
    for p in &parsed {
        if !p.types.contains(&DocType::Values) {
            continue;
        }
        if p.types.contains(&DocType::Template) {
            let non_empty = p.doc.items.iter().zip(&p.types).any(|(d, t)| {
                *t == DocType::Template && !d.injected && (!d.val.is_null() || d.pos.is_known())
            });
            if non_empty {
                return Err(terr(format!(
                    "Expected data values file '{}' to only have data values documents",
                    opts.files[p.idx].path
                )));
            }
        }
        let sub = subset(&p.doc, &p.types, DocType::Values);
        let (_, res) = ws
            .eval_docset(&opts.files[p.idx].path, &sub)
            .map_err(|e| terr(e.0))?;
        for d in res.map(|r| r.items).unwrap_or_default() {
            if d.injected {
                continue;
            }
            if let Some(lr) = library_ref(&d)? {
                let after = d
                    .ann("data/values")
                    .and_then(|a| a.kwarg("after_library_module"))
                    .and_then(|v| v.as_bool())
                    .unwrap_or(false);
                ws.scope.refs.borrow_mut().push(eval::LibRef {
                    full_ref: lr.clone(),
                    lib_ref: lr,
                    doc: d,
                    schema: false,
                    plain: false,
                    after,
                    used: std::cell::Cell::new(false),
                });
                continue;
            }
            if dv_doc_anns.is_none() {
                dv_doc_anns = Some((d.anns.clone(), d.pos.clone()));
            }
            dv_sources.push(opts.files[p.idx].path.clone());
            apply_dv(
                &ws,
                &mut values,
                &d,
                schema_field.as_ref(),
                &dv_sources,
                false,
            )?;
        }
    }

    // data values given to this library by its parent
    for (d, plain) in &lib.values {
        dv_sources.push("additional data values".into());
        apply_dv(
            &ws,
            &mut values,
            d,
            schema_field.as_ref(),
            &dv_sources,
            *plain,
        )?;
    }
    for d in &lib.after_values {
        dv_sources.push("additional data values".into());
        apply_dv(
            &ws,
            &mut values,
            d,
            schema_field.as_ref(),
            &dv_sources,
            false,
        )?;
    }

    // 4. --data-values-file and other flags
    for f in &opts.data_values_files {
        let doc = yamlmeta::parse(&f.text, &f.path, opts.strict).map_err(|e| {
            terr(format!(
                "Unmarshaling YAML data values file '{}': {}",
                f.path, e.message
            ))
        })?;
        if compile::has_templating(&doc) {
            return Err(terr(format!(
                "Checking data values file '{}': Expected to be plain YAML, having no annotations (hint: remove comments starting with `#@`)",
                f.path
            )));
        }
        for d in doc.items {
            if d.injected || (d.val.is_null() && !d.pos.is_known()) {
                continue;
            }
            dv_sources.push(f.path.clone());
            apply_dv(
                &ws,
                &mut values,
                &d,
                schema_field.as_ref(),
                &dv_sources,
                true,
            )?;
        }
    }
    for fv in &opts.flag_values {
        if let Some(rest) = fv.key.strip_prefix('@') {
            // `@lib:key=value`: a data value for a private library
            let Some((lib_ref, key)) = rest.split_once(':') else {
                return Err(terr(format!(
                    "Expected library-key separator ':' in '{}'",
                    fv.key
                )));
            };
            let mut lfv = fv.clone();
            lfv.key = key.to_string();
            let d = flag_doc(&lfv)?;
            ws.scope.refs.borrow_mut().push(eval::LibRef {
                lib_ref: format!("@{lib_ref}"),
                full_ref: format!("@{lib_ref}"),
                doc: d,
                schema: false,
                plain: true,
                after: false,
                used: std::cell::Cell::new(false),
            });
            continue;
        }
        let d = flag_doc(fv)?;
        dv_sources.push(fv.source.clone());
        apply_dv(
            &ws,
            &mut values,
            &d,
            schema_field.as_ref(),
            &dv_sources,
            true,
        )?;
    }
    let values = match values {
        Some(v) if !v.is_null() || schema_field.is_some() => v,
        _ => empty_map(),
    };

    if !opts.disable_validation {
        let (anns, pos) = dv_doc_anns.clone().unwrap_or_default();
        let root_pos = schema_field
            .as_ref()
            .map(|f| f.pos.clone())
            .filter(|p| p.is_known())
            .unwrap_or(pos);
        ws.with_caller(|c| validate::validate(c, &values, &anns, &root_pos, schema_field.as_ref()))
            .map_err(terr)?;
    }

    if mode == LibMode::Values {
        return Ok(Output {
            values: Some(values),
            ..Default::default()
        });
    }
    if let LibMode::Export(name, path) = &mode {
        ws.set_data_values(values.clone());
        return Ok(Output {
            export: Some(export_symbol(&ws, name, path.as_deref())?),
            ..Default::default()
        });
    }

    if opts.data_values_inspect {
        let mut v = values.clone();
        if let Val::Node(n) = &mut v {
            n.strip_meta();
        }
        return Ok(Output {
            docs: vec![Node::doc(v, Pos::unknown())],
            ..Default::default()
        });
    }

    // A library's own `@library/ref` documents come first: those its parent
    // passed down apply after them and win, as in ytt. (No ref was taken
    // yet: libraries are only fetched while templates run.)
    {
        let inherited = lib.refs.len();
        let mut refs = ws.scope.refs.borrow_mut();
        if inherited > 0 && inherited <= refs.len() {
            refs.rotate_left(inherited);
        }
    }

    // 5. templates
    ws.set_data_values(values);
    let mut out_docs: Vec<(Node, String)> = Vec::new();
    let mut overlays: Vec<Node> = Vec::new();
    let mut text_files = Vec::new();
    for p in &parsed {
        if !p.types.contains(&DocType::Template) {
            continue;
        }
        let path = opts.files[p.idx].path.clone();
        let sub = subset(&p.doc, &p.types, DocType::Template);
        let res = if compile::has_templating(&sub) && !opts.files[p.idx].is_plain_yaml() {
            ws.eval_docset(&path, &sub).map_err(|e| terr(e.0))?.1
        } else {
            let mut s = sub.clone();
            s.strip_meta();
            Some(s)
        };
        for d in res.map(|r| r.items).unwrap_or_default() {
            if d.injected && d.val.is_null() {
                continue;
            }
            if d.anns.iter().any(|a| a.name.starts_with("overlay/")) {
                overlays.push(d);
            } else {
                out_docs.push((d, path.clone()));
            }
        }
    }
    for (i, f) in opts.files.iter().enumerate() {
        if f.mark_type.as_deref() == Some("starlark") && !is_private_lib(&f.path) {
            // explicitly marked Starlark inputs run like templates
            ws.eval_file(i).map_err(|e| terr(e.0))?;
            continue;
        }
        if f.is_yaml() || f.is_star() || is_private_lib(&f.path) || f.path.contains(".lib.") {
            continue;
        }
        if f.is_text() {
            let (_, root) = ws.eval_file(i).map_err(|e| terr(e.0))?;
            let text = root.map(|r| eval::text_root_string(&r)).unwrap_or_default();
            text_files.push((f.path.clone(), text));
        } else {
            text_files.push((f.path.clone(), f.text.clone()));
        }
    }

    for r in ws.scope.refs.borrow().iter() {
        if r.used.get() {
            continue;
        }
        return Err(terr(if r.schema {
            format!(
                "Expected all provided library schema documents to be used but found unused:\n  Schema belonging to library '{}' on line {}",
                r.full_ref, r.doc.pos
            )
        } else {
            format!(
                "Expected all provided library data values documents to be used but found unused:\n  Data Value belonging to library '{}' on line {}",
                r.full_ref, r.doc.pos
            )
        }));
    }

    // 6. overlays
    let (docs, names): (Vec<Node>, Vec<String>) = out_docs.into_iter().unzip();
    let mut left = Node::new(Kind::DocSet, Pos::unknown());
    left.items = docs;
    let mut left_val = Val::Node(Box::new(left));
    if !overlays.is_empty() {
        let order: Vec<String> = overlays.iter().map(|o| o.pos.file.to_string()).collect();
        ws.with_caller(|c| {
            for ov in overlays {
                let mut right = Node::new(Kind::DocSet, Pos::unknown());
                right.items.push(ov);
                let right = Val::Node(Box::new(right));
                overlay::apply(&mut left_val, &right, &overlay::Expects::default(), c)?;
            }
            Ok(())
        })
        .map_err(|e: overlay::OverlayError| {
            terr(format!(
                "Overlaying (in following order: {}): {}",
                listed(&order),
                e.message
            ))
        })?;
    }
    let docs = match left_val {
        Val::Node(n) => n.items,
        _ => vec![],
    };
    let mut docs = docs;
    for d in &mut docs {
        d.strip_meta();
    }
    Ok(Output {
        doc_files: names,
        docs,
        files: text_files,
        ..Default::default()
    })
}

/// Finds `name` among a library's modules (`.star`, `.lib.yml`).
fn export_symbol(
    ws: &Workspace,
    name: &str,
    path: Option<&str>,
) -> Result<starlark::values::OwnedFrozenValue, TemplateError> {
    let candidates: Vec<String> = match path {
        Some(p) => vec![p.trim_start_matches('/').to_string()],
        None => ws
            .files
            .iter()
            .filter(|f| !is_private_lib(&f.path))
            .filter(|f| {
                f.is_star() || f.path.ends_with(".lib.yml") || f.path.ends_with(".lib.yaml")
            })
            .map(|f| f.path.clone())
            .collect(),
    };
    let mut found = Vec::new();
    for c in &candidates {
        let fm = ws.load_module("", c).map_err(|e| terr(e.0))?;
        if let Ok(Some(v)) = fm.get_option(name) {
            found.push((c.clone(), v));
        }
    }
    match found.len() {
        0 => Err(terr(format!(
            "Expected to find exported symbol '{name}', but did not"
        ))),
        1 => Ok(found.pop().map(|(_, v)| v).expect("one element")),
        _ => {
            let files: Vec<String> = found.iter().map(|(f, _)| f.clone()).collect();
            Err(terr(format!(
                "Expected to find exactly one exported symbol '{name}', but found multiple across files: {}",
                files.join(", ")
            )))
        }
    }
}

/// A document set with only the documents of one kind (others become empty
/// injected documents so code lines between them still run).
fn subset(doc: &Node, types: &[DocType], want: DocType) -> Node {
    let mut s = doc.clone();
    s.items = doc
        .items
        .iter()
        .zip(types)
        .map(|(d, t)| {
            if *t == want || d.injected {
                d.clone()
            } else {
                let mut e = Node::doc(Val::null(), d.pos.clone());
                e.comments = d
                    .comments
                    .iter()
                    .filter(|c| doc_ann_name(c).is_none())
                    .cloned()
                    .collect();
                e.injected = true;
                e
            }
        })
        .collect();
    s
}

/// Overlays named in an error's "in following order" list; past these,
/// the count. Each overlay document is named, so 20,000 of them in one file
/// made an error line of 160 kB.
const LISTED_OVERLAYS: usize = 20;

/// ytt's `a, b, c`, cut after [`LISTED_OVERLAYS`] names.
fn listed(names: &[String]) -> String {
    if names.len() <= LISTED_OVERLAYS {
        return names.join(", ");
    }
    format!(
        "{}, ... ({} in all)",
        names[..LISTED_OVERLAYS].join(", "),
        names.len()
    )
}

/// The `#@library/ref "@path~alias"` of a data values / schema document.
fn library_ref(d: &Node) -> Result<Option<String>, TemplateError> {
    let Some(a) = d.ann("library/ref") else {
        return Ok(None);
    };
    let bad = |m: String| {
        terr(format!(
            "Overlaying data values (in following order: {}):\n  Annotation library/ref:\n    {m}",
            d.pos.file
        ))
    };
    let Some(r) = a.args.first().and_then(|v| v.as_str()) else {
        return Err(bad("Expected library ref to be a string".into()));
    };
    let Some(rest) = r.strip_prefix('@') else {
        return Err(bad(format!(
            "Expected library ref to start with '@', got: '{r}'"
        )));
    };
    for seg in rest.split('@') {
        let parts: Vec<&str> = seg.split('~').collect();
        if parts.len() > 2 {
            return Err(bad(format!(
                "Expected library ref to have form: '@path', '@~alias', or '@path~alias', got: '{r}'"
            )));
        }
        if parts.len() == 2 && parts[1].is_empty() {
            return Err(bad("Expected library alias to not be empty".into()));
        }
        if parts[0].is_empty() && parts.len() == 1 {
            return Err(bad("Expected library name to not be empty".into()));
        }
    }
    Ok(Some(r.to_string()))
}

fn mk_ann(name: &str, kwargs: Vec<(&str, bool)>) -> node::Ann {
    node::Ann {
        name: name.into(),
        args: vec![],
        kwargs: kwargs
            .into_iter()
            .map(|(k, b)| {
                (
                    k.to_string(),
                    eval::AnnVal::Data(Val::Scalar(Scalar::Bool(b))),
                )
            })
            .collect(),
        pos: Pos::unknown(),
    }
}

/// Flag and `--data-values-file` values: maps merge, everything else
/// replaces; without a schema, new keys may be added.
fn mark_flag_overlay(v: &mut Val, allow_new: bool) {
    if let Val::Node(n) = v {
        if n.kind != Kind::Map {
            return;
        }
        for it in &mut n.items {
            let is_map = matches!(&it.val, Val::Node(c) if c.kind == Kind::Map);
            if is_map {
                if allow_new && !it.has_ann("overlay/match") {
                    it.anns
                        .push(mk_ann("overlay/match", vec![("missing_ok", true)]));
                }
                mark_flag_overlay(&mut it.val, allow_new);
            } else if !it.anns.iter().any(|a| a.name.starts_with("overlay/")) {
                if allow_new {
                    it.anns
                        .push(mk_ann("overlay/match", vec![("missing_ok", true)]));
                }
                it.anns
                    .push(mk_ann("overlay/replace", vec![("or_add", allow_new)]));
            }
        }
    }
}

fn apply_dv(
    ws: &Workspace,
    values: &mut Option<Val>,
    d: &Node,
    schema: Option<&schema::Field>,
    sources: &[String],
    from_flags: bool,
) -> Result<(), TemplateError> {
    let header = format!(
        "Overlaying data values (in following order: {}): \n",
        listed(sources)
    );
    let mut v = d.val.clone();
    if from_flags {
        mark_flag_overlay(&mut v, true);
    }
    match values {
        None => {
            let mut v = v;
            overlay::strip_overlay_anns_val(&mut v);
            *values = Some(v);
        }
        Some(cur) => {
            if cur.is_null() {
                let mut v = v;
                overlay::strip_overlay_anns_val(&mut v);
                *cur = v;
            } else {
                let defaults = overlay::doc_child_defaults(d).map_err(|e| terr(e.message))?;
                let repl = ws
                    .with_caller(|c| overlay::apply(cur, &v, &defaults, c))
                    .map_err(|e| terr(format!("{header}{}", e.message)))?;
                if repl {
                    overlay::strip_overlay_anns_val(&mut v);
                    *cur = v;
                }
            }
        }
    }
    if let (Some(f), Some(cur)) = (schema, values.as_mut()) {
        schema::fill_defaults(f, cur);
        let mut errs = Vec::new();
        schema::check(f, cur, &d.pos, &mut errs);
        if !errs.is_empty() {
            return Err(terr(format!("{header}{}", report(&errs))));
        }
    }
    Ok(())
}

fn report(errs: &[schema::Violation]) -> String {
    let mut s = String::from(
        "One or more data values were invalid\n====================================\n\n",
    );
    for (pos, found, expected) in errs {
        if expected.starts_with("a map item with the key named") {
            s.push_str("Given data value is not declared in schema\n");
        }
        s.push_str(&format!(
            "{pos}:\n\n    = found: {found}\n    = expected: {expected}\n\n"
        ));
    }
    s
}

/// Builds the overlay document for one flag value (`a.b.c=v`).
fn flag_doc(fv: &FlagValue) -> Result<Node, TemplateError> {
    let key = fv.key.as_str();
    if key.contains(':') {
        return Err(terr(format!(
            "Expected at most one library-key separator ':' in '{key}' (library data values are not supported by strata)"
        )));
    }
    let pos = Pos::new(&std::sync::Arc::from(fv.source.as_str()), 0);
    let mut val = fv.value.clone();
    for part in key.split('.').rev() {
        let mut m = Node::map(pos.clone());
        m.items.push(Node::map_item(
            Scalar::Str(part.to_string()),
            val,
            pos.clone(),
        ));
        val = Val::Node(Box::new(m));
    }
    Ok(Node::doc(val, pos))
}

/// `--data-values-schema-inspect --output openapi-v3`: ytt's property
/// names and order.
fn openapi(f: &schema::Field) -> Val {
    fn order(k: &str) -> usize {
        [
            "title",
            "type",
            "additionalProperties",
            "format",
            "nullable",
            "deprecated",
            "description",
            "x-example-description",
            "example",
            "items",
            "properties",
            "default",
        ]
        .iter()
        .position(|x| *x == k)
        .unwrap_or(99)
    }
    fn s(x: &str) -> Val {
        Val::Scalar(Scalar::Str(x.into()))
    }
    fn b(x: bool) -> Val {
        Val::Scalar(Scalar::Bool(x))
    }
    fn props(f: &schema::Field) -> Val {
        let mut items: Vec<(&str, Val)> = Vec::new();
        let d = &f.docs;
        if let Some(t) = &d.title {
            items.push(("title", s(t)));
        }
        if let Some(t) = &d.desc {
            items.push(("description", s(t)));
        }
        if d.deprecated {
            items.push(("deprecated", b(true)));
        }
        if let Some((desc, ex)) = &d.example {
            items.push(("x-example-description", s(desc)));
            items.push(("example", ex.clone()));
        }
        match &f.ty {
            schema::Ty::Map(fields) => {
                items.push(("type", s("object")));
                items.push(("additionalProperties", b(false)));
                let mut p = Node::map(Pos::unknown());
                for (k, fi) in fields {
                    p.items
                        .push(Node::map_item(k.clone(), props(fi), Pos::unknown()));
                }
                items.push(("properties", Val::Node(Box::new(p))));
            }
            schema::Ty::Array(fi) => {
                items.push(("type", s("array")));
                items.push(("default", f.default.clone()));
                items.push(("items", props(fi)));
            }
            schema::Ty::Any => {
                items.push(("nullable", b(true)));
                items.push(("default", f.default.clone()));
            }
            t => {
                let name = match t {
                    schema::Ty::Bool => "boolean",
                    schema::Ty::Int => "integer",
                    schema::Ty::Float => "number",
                    _ => "string",
                };
                items.push(("default", f.default.clone()));
                items.push(("type", s(name)));
                if matches!(t, schema::Ty::Float) {
                    items.push(("format", s("float")));
                }
            }
        }
        if f.nullable && !matches!(f.ty, schema::Ty::Any) {
            items.push(("nullable", b(true)));
            for it in items.iter_mut() {
                if it.0 == "default" {
                    it.1 = f.default.clone();
                }
            }
            if !items.iter().any(|i| i.0 == "default") {
                items.push(("default", f.default.clone()));
            }
        }
        items.sort_by_key(|(k, _)| order(k));
        let mut m = Node::map(Pos::unknown());
        for (k, v) in items {
            m.items
                .push(Node::map_item(Scalar::Str(k.into()), v, Pos::unknown()));
        }
        Val::Node(Box::new(m))
    }
    let mut root = Node::map(Pos::unknown());
    let add = |m: &mut Node, k: &str, v: Val| {
        m.items
            .push(Node::map_item(Scalar::Str(k.into()), v, Pos::unknown()))
    };
    add(&mut root, "openapi", s("3.0.0"));
    let mut info = Node::map(Pos::unknown());
    add(&mut info, "version", s("0.1.0"));
    add(
        &mut info,
        "title",
        s("Schema for data values, generated by ytt"),
    );
    add(&mut root, "info", Val::Node(Box::new(info)));
    add(&mut root, "paths", empty_map());
    let mut comps = Node::map(Pos::unknown());
    let mut schemas = Node::map(Pos::unknown());
    add(&mut schemas, "dataValues", props(f));
    add(&mut comps, "schemas", Val::Node(Box::new(schemas)));
    add(&mut root, "components", Val::Node(Box::new(comps)));
    Val::Node(Box::new(root))
}

/// Reads `-f`-style inputs: files keep their name, directories are walked
/// in sorted order with paths relative to the directory.
pub fn collect_files(paths: &[std::path::PathBuf]) -> Result<Vec<eval::SrcFile>, TemplateError> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            for (rel, full) in crate::fswalk::files_following(p).map_err(|e| terr(e.to_string()))? {
                let text = crate::error::read_to_string(&full).map_err(|e| terr(e.to_string()))?;
                out.push(eval::SrcFile::new(rel, text));
            }
        } else {
            let text = crate::error::read_to_string(p).map_err(|e| terr(e.to_string()))?;
            let name = p
                .file_name()
                .map(|f| f.to_string_lossy().to_string())
                .unwrap_or_default();
            out.push(eval::SrcFile::new(name, text));
        }
    }
    Ok(out)
}

fn value_to_val(v: &crate::value::Value) -> Val {
    use crate::value::Value as V;
    match v {
        V::Null => Val::null(),
        V::Bool(b) => Val::Scalar(Scalar::Bool(*b)),
        V::Int(i) => Val::Scalar(Scalar::Int(*i)),
        V::Float(f) => Val::Scalar(Scalar::Float(*f)),
        V::String(s) => Val::Scalar(Scalar::Str(s.clone())),
        V::List(items) => {
            let mut a = Node::array(Pos::unknown());
            for i in items {
                a.items
                    .push(Node::array_item(value_to_val(i), Pos::unknown()));
            }
            Val::Node(Box::new(a))
        }
        V::Map(m) => {
            let mut n = Node::map(Pos::unknown());
            for (k, i) in m {
                n.items.push(Node::map_item(
                    Scalar::Str(k.clone()),
                    value_to_val(i),
                    Pos::unknown(),
                ));
            }
            Val::Node(Box::new(n))
        }
    }
}

/// Renders ytt templates for another command (e.g. a `ytt` input type in
/// `strata compile`): `paths` as `-f` arguments, `values` (a target's
/// parameters) merged like `--data-values-file` (new keys allowed).
pub fn render_paths(
    paths: &[std::path::PathBuf],
    values: Option<&crate::value::Value>,
) -> Result<Output, TemplateError> {
    let mut opts = Options {
        files: collect_files(paths)?,
        ..Default::default()
    };
    if let Some(v) = values {
        opts.data_values_files.push(eval::SrcFile::new(
            "input parameters",
            emit::encode_val(&value_to_val(v)),
        ));
    }
    run(&opts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_with_parameters_as_data_values() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("t.yml"),
            "#@ load(\"@ytt:data\", \"data\")\n---\nname: #@ data.values.name\nreplicas: #@ data.values.replicas\n",
        )
        .expect("write");
        let mut m = crate::value::Map::default();
        m.insert("name".into(), crate::value::Value::String("web".into()));
        m.insert("replicas".into(), crate::value::Value::Int(2));
        let out = render_paths(
            &[dir.path().to_path_buf()],
            Some(&crate::value::Value::Map(m)),
        )
        .expect("renders");
        assert_eq!(out.to_yaml(), "name: web\nreplicas: 2\n");
    }

    #[test]
    fn later_data_values_need_missing_ok_for_new_keys() {
        let opts = Options {
            files: vec![
                eval::SrcFile::new("a.yml", "#@data/values\n---\na: 1\n"),
                eval::SrcFile::new("b.yml", "#@data/values\n---\nb: 2\n"),
            ],
            ..Default::default()
        };
        let e = run(&opts).expect_err("new key without missing_ok");
        assert!(
            e.0.contains("Expected number of matched nodes to be 1, but was 0"),
            "{}",
            e.0
        );
    }
}
