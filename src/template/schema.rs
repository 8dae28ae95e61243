//! `@data/values-schema`: types and defaults of data values, and the type
//! check run after every data values document.

use super::eval::AnnVal;
use super::node::{Kind, Node, Pos, Scalar, Val};

#[derive(Debug, Clone)]
pub enum Ty {
    Any,
    Null,
    Bool,
    Int,
    Float,
    Str,
    Map(Vec<(Scalar, Field)>),
    Array(Box<Field>),
}

#[derive(Debug, Clone)]
pub struct Field {
    pub ty: Ty,
    pub nullable: bool,
    pub default: Val,
    pub pos: Pos,
    pub docs: Docs,
    /// `@schema/validation` rules for values at this place.
    pub validation: Option<super::node::Ann>,
}

/// `@schema/title`, `desc`, `deprecated` and the first of `examples`.
#[derive(Debug, Clone, Default)]
pub struct Docs {
    pub title: Option<String>,
    pub desc: Option<String>,
    pub deprecated: bool,
    pub example: Option<(String, Val)>,
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct SchemaError(pub String);

fn ty_name(t: &Ty) -> &'static str {
    match t {
        Ty::Any => "any",
        Ty::Null => "null",
        Ty::Bool => "boolean",
        Ty::Int => "integer",
        Ty::Float => "float",
        Ty::Str => "string",
        Ty::Map(_) => "map",
        Ty::Array(_) => "array",
    }
}

fn invalid(pos: &Pos, summary: &str, found: &str, expected: &str) -> SchemaError {
    SchemaError(format!(
        "Invalid schema - {summary}\n{pos}\n\n    = found: {found}\n    = expected: {expected}\n"
    ))
}

fn single_arg(node: &Node, name: &str, expected: &str) -> Result<Option<AnnVal>, SchemaError> {
    let Some(a) = node.ann(name) else {
        return Ok(None);
    };
    let syntax = |found: String| {
        SchemaError(format!(
            "Invalid schema\n{}: syntax error in @{name} annotation\n\n    = found: {found}\n    = expected: {expected}\n",
            a.pos
        ))
    };
    if !a.kwargs.is_empty() {
        return Err(syntax(format!("keyword argument in @{name}")));
    }
    match a.args.len() {
        0 => Err(syntax(format!("missing value in @{name}"))),
        1 => Ok(Some(a.args[0].clone())),
        n => Err(syntax(format!("{n} values in @{name}"))),
    }
}

fn check_doc_anns(node: &Node, in_any: bool, is_array_item: bool) -> Result<(), SchemaError> {
    for name in ["schema/desc", "schema/title", "schema/deprecated"] {
        if let Some(v) = single_arg(node, name, "string")? {
            if v.as_str().is_none() {
                let a = node.ann(name).expect("present");
                return Err(SchemaError(format!(
                    "Invalid schema\n{}: syntax error in @{name} annotation\n\n    = found: Non-string value in @{name}\n    = expected: string\n",
                    a.pos
                )));
            }
        }
    }
    if let Some(a) = node.ann("schema/examples") {
        let bad = |found: String| {
            SchemaError(format!(
                "Invalid schema\n{}: syntax error in @schema/examples annotation\n\n    = found: {found}\n    = expected: 2-tuple containing description (string) and example value (of expected type)\n",
                a.pos
            ))
        };
        if !a.kwargs.is_empty() {
            return Err(bad("keyword argument in @schema/examples".into()));
        }
        if a.args.is_empty() {
            return Err(bad("missing value in @schema/examples".into()));
        }
        for ex in &a.args {
            match ex {
                AnnVal::Data(Val::Node(n)) if n.kind == Kind::Array => {
                    if n.items.is_empty() {
                        return Err(bad("empty tuple in @schema/examples".into()));
                    }
                    if n.items.len() > 2 {
                        return Err(bad(format!(
                            "{}-tuple argument in @schema/examples",
                            n.items.len()
                        )));
                    }
                    if !matches!(n.items[0].val, Val::Scalar(Scalar::Str(_))) {
                        return Err(bad(format!(
                            "{} value for @schema/examples",
                            n.items[0].val.type_name()
                        )));
                    }
                }
                AnnVal::Data(v) => {
                    return Err(bad(format!("{} for @schema/examples", v.type_name())))
                }
                _ => return Err(bad("function for @schema/examples".into())),
            }
        }
    }
    let _ = (in_any, is_array_item);
    Ok(())
}

/// Builds the field for a node holding a value (document, map item, array item).
pub fn field_of(node: &Node, in_any: bool) -> Result<Field, SchemaError> {
    let is_array_item = node.kind == Kind::ArrayItem;
    let mut nullable = false;
    let mut any = in_any;
    let schema_anns: Vec<&str> = node
        .anns
        .iter()
        .filter(|a| a.name.starts_with("schema/"))
        .map(|a| a.name.as_str())
        .collect();
    if in_any && !schema_anns.is_empty() {
        let names: Vec<String> = schema_anns.iter().map(|n| format!("@{n}")).collect();
        return Err(SchemaError(format!(
            "Invalid schema\n{}: Schema was specified within an \"any type\" fragment\n\n    = found: {} annotation(s)\n    = expected: no '@schema/...' on nodes within a node annotated '@schema/type any=True'\n",
            node.pos,
            names.join(", ")
        )));
    }
    for a in &node.anns {
        match a.name.as_str() {
            "schema/nullable" => nullable = true,
            "schema/type" => {
                if a.kwargs.is_empty() {
                    return Err(SchemaError(format!(
                        "Invalid schema\n{}: expected @schema/type annotation to have keyword argument and value\n\n    = found: missing keyword argument and value\n    = expected: valid keyword argument and value\n",
                        a.pos
                    )));
                }
                for (k, v) in &a.kwargs {
                    if k != "any" {
                        return Err(SchemaError(format!(
                            "Invalid schema\n{}: unknown @schema/type annotation keyword argument\n\n    = found: {k}\n    = expected: A valid kwarg\n",
                            a.pos
                        )));
                    }
                    match v.as_bool() {
                        Some(b) => any = b,
                        None => {
                            let found = match v {
                                AnnVal::Data(Val::Scalar(Scalar::Int(_))) => "starlark.Int",
                                AnnVal::Data(Val::Scalar(Scalar::Str(_))) => "starlark.String",
                                _ => "starlark.Value",
                            };
                            return Err(SchemaError(format!(
                                "Invalid schema\n{}: unknown @schema/type annotation keyword argument\n\n    = found: {found}\n    = expected: starlark.Bool\n",
                                a.pos
                            )));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    if node.kind == Kind::Doc && node.has_ann("schema/deprecated") {
        return Err(SchemaError(format!(
            "Invalid schema\n{}: @schema/deprecated not supported on a document\n",
            node.pos
        )));
    }
    check_doc_anns(node, in_any, is_array_item)?;
    let mut ty = if any {
        Ty::Any
    } else {
        ty_of_val(&node.val, &node.pos, nullable)?
    };
    if any {
        // still validate nested annotations
        if let Val::Node(n) = &node.val {
            for it in &n.items {
                field_of(it, true)?;
            }
        }
    }
    let mut default = if any {
        node.val.clone()
    } else {
        default_of(&ty, &node.val)
    };
    if let Some(v) = single_arg(node, "schema/default", ty_name(&ty))? {
        if is_array_item {
            return Err(SchemaError(format!(
                "Invalid schema\nInvalid schema - @schema/default not supported on array item\n{}\n",
                node.pos
            )));
        }
        let dv = match v {
            AnnVal::Data(d) => d,
            _ => {
                return Err(invalid(
                    &node.pos,
                    "@schema/default is wrong type",
                    "function",
                    ty_name(&ty),
                ))
            }
        };
        if !any && !dv.is_null() {
            let mut errs = Vec::new();
            check(
                &Field {
                    ty: ty.clone(),
                    nullable,
                    default: Val::null(),
                    pos: node.pos.clone(),
                    docs: Docs::default(),
                    validation: None,
                },
                &dv,
                &node.pos,
                &mut errs,
            );
            if let Some((_, found, expected)) = errs.first() {
                return Err(invalid(
                    &node.pos,
                    "@schema/default is wrong type",
                    found,
                    expected,
                ));
            }
        }
        let tmp = Field {
            ty: ty.clone(),
            nullable,
            default: Val::null(),
            pos: node.pos.clone(),
            docs: Docs::default(),
            validation: None,
        };
        let mut dv = dv;
        fill_defaults(&tmp, &mut dv);
        default = dv;
    } else if nullable {
        default = Val::null();
    }
    if let Ty::Null = ty {
        ty = Ty::Any;
    }
    let mut docs = Docs::default();
    if let Some(v) = single_arg(node, "schema/title", "string")? {
        docs.title = v.as_str().map(str::to_string);
    }
    if let Some(v) = single_arg(node, "schema/desc", "string")? {
        docs.desc = v.as_str().map(str::to_string);
    }
    docs.deprecated = node.has_ann("schema/deprecated");
    if let Some(a) = node.ann("schema/examples") {
        for (i, ex) in a.args.iter().enumerate() {
            if let AnnVal::Data(Val::Node(n)) = ex {
                let desc = match &n.items[0].val {
                    Val::Scalar(Scalar::Str(s)) => s.clone(),
                    _ => String::new(),
                };
                let val = n.items.get(1).map(|i| i.val.clone()).unwrap_or(Val::null());
                if !(matches!(ty, Ty::Any) || nullable && val.is_null()) {
                    let mut errs = Vec::new();
                    let f = Field {
                        ty: ty.clone(),
                        nullable,
                        default: Val::null(),
                        pos: node.pos.clone(),
                        docs: Docs::default(),
                        validation: None,
                    };
                    check(&f, &val, &a.pos, &mut errs);
                    if let Some((_, found, expected)) = errs.first() {
                        let expected = expected.split(" (").next().unwrap_or(expected);
                        return Err(invalid(
                            &a.pos,
                            "@schema/examples has wrong type",
                            found,
                            expected,
                        ));
                    }
                }
                if i == 0 {
                    docs.example = Some((desc, val));
                }
            }
        }
    }
    Ok(Field {
        ty,
        nullable,
        default,
        pos: node.pos.clone(),
        docs,
        validation: node.ann("schema/validation").cloned(),
    })
}

fn ty_of_val(v: &Val, pos: &Pos, nullable: bool) -> Result<Ty, SchemaError> {
    Ok(match v {
        Val::Scalar(Scalar::Null) => {
            if nullable {
                return Err(SchemaError(format!(
                    "Invalid schema - null value not allowed here\n{pos}\n\n    = found: null value\n    = expected: non-null value\n"
                )));
            }
            return Err(SchemaError(format!(
                "Invalid schema - null value not allowed here\n{pos}\n\n    = found: null value\n    = expected: non-null value\n"
            )));
        }
        Val::Scalar(Scalar::Bool(_)) => Ty::Bool,
        Val::Scalar(Scalar::Int(_)) => Ty::Int,
        Val::Scalar(Scalar::Float(_)) => Ty::Float,
        Val::Scalar(Scalar::Str(_)) => Ty::Str,
        Val::Node(n) => match n.kind {
            Kind::Map => {
                let mut items = Vec::new();
                for it in &n.items {
                    items.push((it.key.clone(), field_of(it, false)?));
                }
                Ty::Map(items)
            }
            Kind::Array => {
                if n.items.len() != 1 {
                    return Err(SchemaError(format!(
                        "Invalid schema - wrong number of items in array definition\n{pos}\n\n    = found: {} array items\n    = expected: exactly 1 array item, of the desired type\n",
                        n.items.len()
                    )));
                }
                Ty::Array(Box::new(field_of(&n.items[0], false)?))
            }
            _ => Ty::Any,
        },
    })
}

fn default_of(ty: &Ty, v: &Val) -> Val {
    match ty {
        Ty::Map(items) => {
            let mut m = Node::map(Pos::unknown());
            for (k, f) in items {
                m.items
                    .push(Node::map_item(k.clone(), f.default.clone(), f.pos.clone()));
            }
            Val::Node(Box::new(m))
        }
        Ty::Array(_) => Val::Node(Box::new(Node::array(Pos::unknown()))),
        _ => {
            let mut v = v.clone();
            strip(&mut v);
            v
        }
    }
}

fn strip(v: &mut Val) {
    if let Val::Node(n) = v {
        n.strip_meta();
    }
}

/// (position of offending value, found, expected)
pub type Violation = (Pos, String, String);

fn type_of(v: &Val) -> String {
    v.type_name().to_string()
}

/// Checks a value against a field; collects violations.
pub fn check(f: &Field, v: &Val, pos: &Pos, out: &mut Vec<Violation>) {
    if v.is_null() {
        if f.nullable || matches!(f.ty, Ty::Any) {
            return;
        }
        out.push((
            pos.clone(),
            "null".into(),
            format!("{} (by {})", ty_name(&f.ty), f.pos),
        ));
        return;
    }
    let ok = match (&f.ty, v) {
        (Ty::Any, _) => true,
        (Ty::Bool, Val::Scalar(Scalar::Bool(_))) => true,
        (Ty::Int, Val::Scalar(Scalar::Int(_))) => true,
        (Ty::Float, Val::Scalar(Scalar::Float(_) | Scalar::Int(_))) => true,
        (Ty::Str, Val::Scalar(Scalar::Str(_))) => true,
        (Ty::Map(items), Val::Node(n)) if n.kind == Kind::Map => {
            for it in &n.items {
                match items.iter().find(|(k, _)| k.same(&it.key)) {
                    Some((_, fi)) => check(fi, &it.val, &it.pos, out),
                    None => {
                        let keys: Vec<String> = items
                            .iter()
                            .map(|(k, _)| format!("\"{}\"", k.display()))
                            .collect();
                        out.push((
                            it.pos.clone(),
                            it.key.display(),
                            format!(
                                "a map item with the key named {} (from {})",
                                keys.join(", "),
                                f.pos
                            ),
                        ));
                    }
                }
            }
            true
        }
        (Ty::Array(fi), Val::Node(n)) if n.kind == Kind::Array => {
            for it in &n.items {
                check(fi, &it.val, &it.pos, out);
            }
            true
        }
        _ => false,
    };
    if !ok {
        out.push((
            pos.clone(),
            type_of(v),
            format!("{} (by {})", ty_name(&f.ty), f.pos),
        ));
    }
}

/// Adds missing keys (with their defaults) to every map the schema types,
/// after existing keys: new array items and maps that replaced a null.
pub fn fill_defaults(f: &Field, v: &mut Val) {
    match (&f.ty, v) {
        (Ty::Map(items), Val::Node(n)) if n.kind == Kind::Map => {
            for (k, fi) in items {
                if !n.items.iter().any(|i| i.key.same(k)) {
                    n.items.push(Node::map_item(
                        k.clone(),
                        fi.default.clone(),
                        fi.pos.clone(),
                    ));
                }
            }
            for it in n.items.iter_mut() {
                if let Some((_, fi)) = items.iter().find(|(k, _)| k.same(&it.key)) {
                    fill_defaults(fi, &mut it.val);
                }
            }
        }
        (Ty::Array(fi), Val::Node(n)) if n.kind == Kind::Array => {
            for it in n.items.iter_mut() {
                fill_defaults(fi, &mut it.val);
            }
        }
        _ => {}
    }
}
