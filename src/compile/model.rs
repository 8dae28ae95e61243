//! Compile entries as Kapitan validates them (its pydantic models: unknown
//! keys and wrong types are errors, defaults depend on the input type), and
//! the "model dump" of a target that templates and `kap.inventory()` see:
//! `parameters.kapitan` completed with every default, `_kapitan_` and
//! `_reclass_` first.

use super::output::OutputType;
use super::CompileError;
use crate::inventory::RenderedNode;
use crate::value::{Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InputType {
    Jsonnet,
    Jinja2,
    Copy,
    Remove,
    External,
    Helm,
    Kadet,
    Kustomize,
    Cuelang,
    /// strata's extension: ytt-style templates, overlays and data values.
    Ytt,
}

impl InputType {
    pub(crate) fn parse(s: &str) -> Option<InputType> {
        Some(match s {
            "jsonnet" => InputType::Jsonnet,
            "jinja2" => InputType::Jinja2,
            "copy" => InputType::Copy,
            "remove" => InputType::Remove,
            "external" => InputType::External,
            "helm" => InputType::Helm,
            "kadet" => InputType::Kadet,
            "kustomize" => InputType::Kustomize,
            "cuelang" => InputType::Cuelang,
            "ytt" => InputType::Ytt,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            InputType::Jsonnet => "jsonnet",
            InputType::Jinja2 => "jinja2",
            InputType::Copy => "copy",
            InputType::Remove => "remove",
            InputType::External => "external",
            InputType::Helm => "helm",
            InputType::Kadet => "kadet",
            InputType::Kustomize => "kustomize",
            InputType::Cuelang => "cuelang",
            InputType::Ytt => "ytt",
        }
    }

    fn extra_fields(self) -> &'static [&'static str] {
        match self {
            InputType::External => &["env_vars", "args"],
            InputType::Jinja2 => &["suffix_remove", "suffix_stripped"],
            InputType::Helm => &[
                "helm_params",
                "helm_values",
                "helm_values_files",
                "helm_path",
                "kube_version",
            ],
            InputType::Kadet => &["input_value"],
            InputType::Kustomize => &["namespace", "patches", "patches_strategic", "patches_json"],
            InputType::Cuelang => &[
                "input",
                "input_fill_path",
                "output_yield_path",
                "output_filename",
            ],
            _ => &[],
        }
    }
}

const BASE_FIELDS: [&str; 9] = [
    "name",
    "input_type",
    "input_paths",
    "output_path",
    "input_params",
    "continue_on_compile_error",
    "output_type",
    "ignore_missing",
    "prune",
];

/// One validated compile entry.
#[derive(Debug, Clone)]
pub struct Entry {
    /// 1-based position in `parameters.kapitan.compile`, for messages.
    pub number: usize,
    pub name: Option<String>,
    pub input_type: InputType,
    pub input_paths: Vec<String>,
    pub output_path: Option<String>,
    pub input_params: Map,
    pub continue_on_compile_error: bool,
    pub output_type: OutputType,
    pub ignore_missing: bool,
    pub prune: bool,
    pub suffix_remove: bool,
    pub suffix_stripped: String,
    pub args: Vec<String>,
    pub env_vars: Vec<(String, String)>,
    /// The input type's own fields (`helm_params`, `helm_values`, ...) as
    /// written.
    pub extra: Map,
}

impl Entry {
    /// `#2 (jsonnet -> manifests)`, for messages.
    pub fn describe(&self) -> String {
        let label = self
            .name
            .as_ref()
            .map(|n| format!(" `{n}`"))
            .unwrap_or_default();
        format!(
            "compile entry #{}{label} ({} -> {})",
            self.number,
            self.input_type.as_str(),
            self.output_path.as_deref().unwrap_or("<none>")
        )
    }
}

/// What compile needs of one target, validated.
#[derive(Debug, Clone)]
pub struct TargetPlan {
    pub name: String,
    /// `parameters.kapitan.vars.target`.
    pub target_var: String,
    /// Output directory below `compiled/`: `vars.target` with `.` as `/`.
    pub dir: String,
    pub entries: Vec<Entry>,
    pub vars: Map,
    /// `parameters.multiline_string_style`, overriding the CLI when truthy.
    pub multiline_style: Option<Value>,
}

fn invalid(target: &str, field: &str, msg: impl std::fmt::Display) -> CompileError {
    let mut e = CompileError::new(format!("invalid {field}: {msg}"));
    e.origin = Some(Box::new(super::ParamOrigin {
        param: field.to_string(),
        written_at: None,
    }));
    e.target(target)
        .hint("fix parameters.kapitan in the inventory (Kapitan validates it the same way)")
}

/// pydantic's lax bool.
fn as_bool(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::Int(0) => Some(false),
        Value::Int(1) => Some(true),
        Value::String(s) => match s.to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" | "1" | "t" | "y" => Some(true),
            "false" | "no" | "off" | "0" | "f" | "n" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

fn parse_entry(target: &str, number: usize, v: &Value) -> Result<(Entry, Value), CompileError> {
    let at = |f: &str| format!("parameters.kapitan.compile[{}].{f}", number - 1);
    let Some(m) = v.as_map() else {
        return Err(invalid(
            target,
            &format!("parameters.kapitan.compile[{}]", number - 1),
            "must be a mapping",
        ));
    };
    let it_raw = m
        .get("input_type")
        .ok_or_else(|| invalid(target, &at("input_type"), "missing"))?;
    let input_type = it_raw
        .as_str()
        .and_then(InputType::parse)
        .ok_or_else(|| {
            invalid(
                target,
                &at("input_type"),
                format!(
                    "`{}` is not one of jsonnet, jinja2, copy, remove, external, helm, kadet, kustomize, cuelang",
                    it_raw.as_str().map(str::to_string).unwrap_or_else(|| format!("{it_raw:?}"))
                ),
            )
        })?;
    for k in m.keys() {
        if !BASE_FIELDS.contains(&k.as_str()) && !input_type.extra_fields().contains(&k.as_str()) {
            return Err(invalid(
                target,
                &at(k),
                "unknown compile entry key (extra fields are not permitted)",
            ));
        }
    }
    let get_str = |f: &str, required: bool| -> Result<Option<String>, CompileError> {
        match m.get(f) {
            None | Some(Value::Null) if required => Err(invalid(target, &at(f), "missing")),
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(invalid(
                target,
                &at(f),
                format!("must be a string, got {}", other.type_name()),
            )),
        }
    };
    let get_bool = |f: &str, default: bool| -> Result<bool, CompileError> {
        match m.get(f) {
            None | Some(Value::Null) => Ok(default),
            Some(v) => as_bool(v).ok_or_else(|| invalid(target, &at(f), "must be a boolean")),
        }
    };
    let str_list = |f: &str, required: bool| -> Result<Vec<String>, CompileError> {
        match m.get(f) {
            None if required => Err(invalid(target, &at(f), "missing")),
            None => Ok(Vec::new()),
            Some(Value::List(l)) => l
                .iter()
                .map(|x| {
                    x.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| invalid(target, &at(f), "must be a list of strings"))
                })
                .collect(),
            Some(_) => Err(invalid(target, &at(f), "must be a list of strings")),
        }
    };
    let name = get_str("name", false)?;
    let input_paths = str_list("input_paths", true)?;
    let output_path = get_str("output_path", input_type != InputType::Remove)?;
    let input_params = match m.get("input_params") {
        None => Map::default(),
        Some(Value::Map(p)) => p.clone(),
        Some(_) => return Err(invalid(target, &at("input_params"), "must be a mapping")),
    };
    let default_ot = match input_type {
        InputType::Jinja2 => OutputType::Plain,
        InputType::Helm => OutputType::Auto,
        _ => OutputType::Yaml,
    };
    let output_type = match m.get("output_type") {
        None | Some(Value::Null) => default_ot,
        Some(Value::String(s)) => OutputType::parse(s).ok_or_else(|| {
            invalid(
                target,
                &at("output_type"),
                format!("`{s}` is not one of yaml, yml, json, toml, plain, auto"),
            )
        })?,
        Some(_) => return Err(invalid(target, &at("output_type"), "must be a string")),
    };
    // Kapitan's helm model validates the value, then enforces `auto`
    // (`type_must_be_auto`): helm names its files, so `output_type: yaml`
    // (examples/kubernetes nginx-helm) must not add a second `.yaml`.
    let output_type = if input_type == InputType::Helm {
        OutputType::Auto
    } else {
        output_type
    };
    let continue_on_compile_error = get_bool("continue_on_compile_error", false)?;
    let ignore_missing = get_bool("ignore_missing", input_type == InputType::Jinja2)?;
    let prune_default = !matches!(
        input_type,
        InputType::Jsonnet | InputType::Helm | InputType::Kadet | InputType::Kustomize
    );
    let prune = get_bool("prune", prune_default)?;
    let suffix_remove = get_bool("suffix_remove", false)?;
    let suffix_stripped = get_str("suffix_stripped", false)?.unwrap_or_else(|| ".j2".into());
    let args = str_list("args", false)?;
    let env_vars = match m.get("env_vars") {
        None => Vec::new(),
        Some(Value::Map(e)) => e
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                other => Err(invalid(
                    target,
                    &at(&format!("env_vars.{k}")),
                    format!("must be a string, got {}", other.type_name()),
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(invalid(target, &at("env_vars"), "must be a mapping")),
    };

    // The dump: declared fields in model order with defaults, then the
    // type's own fields.
    let mut d = Map::default();
    d.insert(
        "name".into(),
        name.clone().map(Value::String).unwrap_or(Value::Null),
    );
    d.insert(
        "input_type".into(),
        Value::String(input_type.as_str().into()),
    );
    d.insert(
        "input_paths".into(),
        Value::List(input_paths.iter().cloned().map(Value::String).collect()),
    );
    d.insert(
        "output_path".into(),
        output_path
            .clone()
            .map(Value::String)
            .unwrap_or(Value::Null),
    );
    d.insert("input_params".into(), Value::Map(input_params.clone()));
    d.insert(
        "continue_on_compile_error".into(),
        Value::Bool(continue_on_compile_error),
    );
    d.insert(
        "output_type".into(),
        Value::String(output_type.as_str().into()),
    );
    d.insert("ignore_missing".into(), Value::Bool(ignore_missing));
    d.insert("prune".into(), Value::Bool(prune));
    match input_type {
        InputType::External => {
            d.insert(
                "env_vars".into(),
                Value::Map(
                    env_vars
                        .iter()
                        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                        .collect(),
                ),
            );
            d.insert(
                "args".into(),
                Value::List(args.iter().cloned().map(Value::String).collect()),
            );
        }
        InputType::Jinja2 => {
            d.insert("suffix_remove".into(), Value::Bool(suffix_remove));
            d.insert(
                "suffix_stripped".into(),
                Value::String(suffix_stripped.clone()),
            );
        }
        other => {
            for f in other.extra_fields() {
                d.insert(f.to_string(), m.get(*f).cloned().unwrap_or(Value::Null));
            }
        }
    }
    let entry = Entry {
        number,
        name,
        input_type,
        input_paths,
        output_path,
        input_params,
        continue_on_compile_error,
        output_type,
        ignore_missing,
        prune,
        suffix_remove,
        suffix_stripped,
        args,
        env_vars,
        extra: m
            .iter()
            .filter(|(k, _)| input_type.extra_fields().contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    };
    Ok((entry, Value::Map(d)))
}

/// Validates `parameters.kapitan` of a target; returns the plan and the
/// completed `kapitan` section for the model dump.
pub fn plan_target(node: &RenderedNode) -> Result<(TargetPlan, Map), CompileError> {
    let target = node.name.as_str();
    // Borrowed: a target's parameters are large, and only `kapitan` and
    // one style setting are read here.
    let empty = Map::default();
    let params = node.parameters.as_map().unwrap_or(&empty);
    let kap = match params.get("kapitan") {
        None | Some(Value::Null) => Map::default(),
        Some(Value::Map(k)) => k.clone(),
        Some(_) => return Err(invalid(target, "parameters.kapitan", "must be a mapping")),
    };
    let mut entries = Vec::new();
    let mut entry_dumps = Vec::new();
    match kap.get("compile") {
        None | Some(Value::Null) => {}
        Some(Value::List(items)) => {
            for (i, item) in items.iter().enumerate() {
                let (e, d) = parse_entry(target, i + 1, item)?;
                entries.push(e);
                entry_dumps.push(d);
            }
        }
        Some(_) => {
            return Err(invalid(
                target,
                "parameters.kapitan.compile",
                "must be a list",
            ))
        }
    }
    let vars = match kap.get("vars") {
        None | Some(Value::Null) => Map::default(),
        Some(Value::Map(v)) => v.clone(),
        Some(_) => {
            return Err(invalid(
                target,
                "parameters.kapitan.vars",
                "must be a mapping",
            ))
        }
    };
    let target_var = match vars.get("target") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            return Err(invalid(
                target,
                "parameters.kapitan.vars.target",
                "must be a string",
            ))
        }
    };
    // The directory is `vars.target` with `.` as `/`: a leading dot made it
    // absolute (target `.tmp.x` wrote `/tmp/x/`, outside the catalog: any
    // pull request could write where the runner may), and a doubled or
    // trailing one names the directory of another target in another
    // spelling (`a..sub` is `a/sub`), which the overlap checks missed.
    if let Some(t) = &target_var {
        if !t.is_empty() && t.split('.').any(str::is_empty) {
            return Err(invalid(
                target,
                "parameters.kapitan.vars.target",
                format!(
                    "`{t}` would be written to `compiled/{}`: with `.` as `/` an empty part is a path outside or another target's directory; rename the target file so its name neither starts nor ends with `.` nor holds `..`",
                    t.replace('.', "/")
                ),
            ));
        }
    }
    let labels = match kap.get("labels") {
        None | Some(Value::Null) => Map::default(),
        Some(Value::Map(l)) => {
            for (k, v) in l {
                if !matches!(v, Value::String(_)) {
                    return Err(invalid(
                        target,
                        &format!("parameters.kapitan.labels.{k}"),
                        "must be a string",
                    ));
                }
            }
            l.clone()
        }
        Some(_) => {
            return Err(invalid(
                target,
                "parameters.kapitan.labels",
                "must be a mapping",
            ))
        }
    };
    if !entries.is_empty() && target_var.is_none() {
        return Err(
            CompileError::new("parameters.kapitan.vars.target is not set")
                .target(target)
                .hint("add `vars: {target: ${_reclass_:name:short}}` under parameters.kapitan"),
        );
    }
    let mut vars_dump = Map::default();
    vars_dump.insert(
        "target".into(),
        target_var.clone().map(Value::String).unwrap_or(Value::Null),
    );
    for (k, v) in &vars {
        if k != "target" {
            vars_dump.insert(k.clone(), v.clone());
        }
    }
    let mut kd = Map::default();
    kd.insert("compile".into(), Value::List(entry_dumps));
    kd.insert("vars".into(), Value::Map(vars_dump.clone()));
    kd.insert("labels".into(), Value::Map(labels));
    kd.insert(
        "dependencies".into(),
        dependencies_dump(target, kap.get("dependencies"))?,
    );
    kd.insert("target_full_path".into(), Value::String(String::new()));
    kd.insert(
        "secrets".into(),
        secrets_dump(target, kap.get("secrets"), &|k| std::env::var(k).ok())?,
    );
    kd.insert(
        "validate".into(),
        kap.get("validate")
            .cloned()
            .unwrap_or(Value::List(Vec::new())),
    );
    for (k, v) in &kap {
        if !kd.contains_key(k) {
            kd.insert(k.clone(), v.clone());
        }
    }
    let multiline_style = params.get("multiline_string_style").cloned();
    let plan = TargetPlan {
        name: target.to_string(),
        dir: target_var.clone().unwrap_or_default().replace('.', "/"),
        target_var: target_var.unwrap_or_default(),
        entries,
        vars: vars_dump,
        multiline_style,
    };
    Ok((plan, kd))
}

/// Fills a pydantic model's fields in declaration order: the given value,
/// else the default; keys that are not fields are an error (`extra="forbid"`).
fn model_fields(
    target: &str,
    at: &str,
    v: &Value,
    fields: &[(&str, Option<Value>)],
) -> Result<Map, CompileError> {
    let Value::Map(m) = v else {
        return Err(invalid(target, at, "must be a mapping"));
    };
    for k in m.keys() {
        if !fields.iter().any(|(f, _)| f == k) {
            return Err(invalid(
                target,
                &format!("{at}.{k}"),
                "unknown key (extra fields are not permitted)",
            ));
        }
    }
    let mut out = Map::default();
    for (f, default) in fields {
        match (m.get(*f), default) {
            // pydantic coerces `"false"`, `0`, ... for a bool field.
            (Some(v), Some(Value::Bool(_))) => {
                let b = as_bool(v).map(Value::Bool).unwrap_or_else(|| v.clone());
                out.insert(f.to_string(), b);
            }
            (Some(v), _) => {
                out.insert(f.to_string(), v.clone());
            }
            (None, Some(d)) => {
                out.insert(f.to_string(), d.clone());
            }
            (None, None) => {
                return Err(invalid(target, &format!("{at}.{f}"), "is required"));
            }
        }
    }
    Ok(out)
}

fn s(v: &str) -> Option<Value> {
    Some(Value::String(v.into()))
}

const NULL: Option<Value> = Some(Value::Null);
const FALSE: Option<Value> = Some(Value::Bool(false));
const TRUE: Option<Value> = Some(Value::Bool(true));

/// `parameters.kapitan.dependencies` as Kapitan's `DependencyTypeConfig`
/// models dump it: every field of the entry's `type`, defaults filled in.
pub fn dependencies_dump(target: &str, v: Option<&Value>) -> Result<Value, CompileError> {
    let items = match v {
        None => return Ok(Value::List(Vec::new())),
        Some(Value::Null) => return Ok(Value::Null),
        Some(Value::List(items)) => items,
        Some(_) => {
            return Err(invalid(
                target,
                "parameters.kapitan.dependencies",
                "must be a list",
            ))
        }
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = format!("parameters.kapitan.dependencies[{i}]");
        let ty = item
            .get_path(&["type"])
            .and_then(Value::as_str)
            .unwrap_or_default();
        let base = [
            ("type", None),
            ("source", None),
            ("output_path", None),
            ("force_fetch", FALSE),
        ];
        let extra: &[(&str, Option<Value>)] = match ty {
            "git" => &[("ref", NULL), ("subdir", NULL), ("submodules", FALSE)],
            "http" | "https" => &[("unpack", FALSE)],
            "helm" => &[("chart_name", None), ("version", NULL), ("helm_path", NULL)],
            "oci" => &[
                ("subpath", NULL),
                ("media_type", NULL),
                ("insecure", FALSE),
                ("tls_verify", TRUE),
            ],
            other => {
                return Err(invalid(
                    target,
                    &format!("{at}.type"),
                    format!("`{other}` is not one of git, http, https, helm, oci"),
                ))
            }
        };
        let fields: Vec<(&str, Option<Value>)> =
            base.into_iter().chain(extra.iter().cloned()).collect();
        out.push(Value::Map(model_fields(target, &at, item, &fields)?));
    }
    Ok(Value::List(out))
}

// The Vault model's fields that pydantic-settings also reads from the
// environment, with their `VAULT_*` alias.
use crate::refs::vault::SETTINGS_ALIASES as VAULT_SETTINGS;

/// Every environment variable a model dump may read ([`vault_env`]'s
/// names of [`VAULT_SETTINGS`], each as written, upper- and lowercase),
/// sorted: a dump is a function of the inventory *and* these, so whatever
/// keeps dumps (the compile cache's inventory facts) must key them by
/// their values too.
pub fn dump_env_names() -> Vec<String> {
    let mut out: Vec<String> = VAULT_SETTINGS
        .iter()
        .flat_map(|(f, a)| [*f, *a])
        .flat_map(|n| [n.to_string(), n.to_uppercase(), n.to_lowercase()])
        .collect();
    out.sort();
    out.dedup();
    out
}

/// pydantic-settings' environment lookup for a Vault field: either alias,
/// any case.
fn vault_env(names: &[&str], env: &dyn Fn(&str) -> Option<String>) -> Option<Value> {
    for n in names {
        for k in [n.to_string(), n.to_uppercase(), n.to_lowercase()] {
            if let Some(v) = env(&k) {
                return Some(Value::String(v));
            }
        }
    }
    None
}

/// `parameters.kapitan.secrets` as Kapitan's `KapitanReferenceConfig`
/// dumps it: every backend key (null when unset) and the Vault models'
/// defaults, which pydantic-settings also reads from `VAULT_*` variables.
pub fn secrets_dump(
    target: &str,
    v: Option<&Value>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Value, CompileError> {
    let m = match v {
        None | Some(Value::Null) => return Ok(Value::Null),
        Some(Value::Map(m)) => m,
        Some(_) => {
            return Err(invalid(
                target,
                "parameters.kapitan.secrets",
                "must be a mapping",
            ))
        }
    };
    let at = "parameters.kapitan.secrets";
    let backends = ["gpg", "awskms", "vaultkv", "gkms", "vaulttransit", "azkms"];
    for k in m.keys() {
        if !backends.contains(&k.as_str()) {
            return Err(invalid(
                target,
                &format!("{at}.{k}"),
                "unknown key (extra fields are not permitted)",
            ));
        }
    }
    let mut out = Map::default();
    for b in backends {
        let v = match m.get(b) {
            None | Some(Value::Null) => Value::Null,
            Some(v) => {
                let at = format!("{at}.{b}");
                let fields: Vec<(&str, Option<Value>)> = match b {
                    "gpg" => vec![("recipients", Some(Value::List(Vec::new())))],
                    "awskms" | "gkms" | "azkms" => vec![("key", None)],
                    _ => {
                        let transit = b == "vaulttransit";
                        let e = |names: &[&str], d: Option<Value>| vault_env(names, env).or(d);
                        // The env-settings aliases are accepted as keys too.
                        let mut given = v.clone();
                        if let Value::Map(gm) = &mut given {
                            for (field, alias) in VAULT_SETTINGS {
                                if let Some(x) = gm.shift_remove(alias) {
                                    gm.insert(field.into(), x);
                                }
                            }
                        }
                        let skip = vault_env(&["skip_verify", "VAULT_SKIP_VERIFY"], env)
                            .and_then(|v| as_bool(&v))
                            .map_or(TRUE, |b| Some(Value::Bool(b)));
                        let fields = vec![
                            ("addr", e(&["addr", "VAULT_ADDR"], NULL)),
                            ("skip_verify", skip),
                            ("client_key", e(&["client_key", "VAULT_CLIENT_KEY"], NULL)),
                            (
                                "client_cert",
                                e(&["client_cert", "VAULT_CLIENT_CERT"], NULL),
                            ),
                            ("cacert", e(&["cacert", "VAULT_CACERT"], NULL)),
                            ("capath", e(&["capath", "VAULT_CAPATH"], NULL)),
                            ("namespace", e(&["namespace", "VAULT_NAMESPACE"], NULL)),
                            ("engine", if transit { s("transit") } else { s("kv-v2") }),
                            ("auth", NULL),
                            ("crypto_key", NULL),
                            ("always_latest", FALSE),
                            ("mount", if transit { s("transit") } else { s("secret") }),
                            ("key", NULL),
                        ];
                        out.insert(
                            b.to_string(),
                            Value::Map(model_fields(target, &at, &given, &fields)?),
                        );
                        continue;
                    }
                };
                Value::Map(model_fields(target, &at, v, &fields)?)
            }
        };
        out.insert(b.to_string(), v);
    }
    Ok(Value::Map(out))
}

/// `InventoryTarget.model_dump(by_alias=True)` of a target.
pub fn model_dump(node: &RenderedNode, kapitan: &Map, target_full_path: &str) -> Value {
    // `kapitan` is the validated `kapitan` argument's, not the render's.
    let params = match &node.parameters {
        Value::Map(m) => m
            .iter()
            .filter(|(k, _)| k.as_str() != "kapitan")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        _ => Map::default(),
    };
    dump_parts(
        params,
        node.classes.clone(),
        node.applications.clone(),
        node.exports.clone(),
        kapitan.clone(),
        target_full_path,
    )
}

/// [`model_dump`] of a render nothing reads again: its parameters move
/// into the dump instead of being copied (a full compile of 1,000 targets
/// of ~3,400 parameters each copied ~500 MB, and held both at once).
pub fn model_dump_owned(node: RenderedNode, kapitan: Map, target_full_path: &str) -> Value {
    let params = match node.parameters {
        Value::Map(m) => m,
        _ => Map::default(),
    };
    dump_parts(
        params,
        node.classes,
        node.applications,
        node.exports,
        kapitan,
        target_full_path,
    )
}

fn dump_parts(
    params: Map,
    classes: Vec<String>,
    applications: Vec<String>,
    exports: Value,
    mut kap: Map,
    target_full_path: &str,
) -> Value {
    kap.insert(
        "target_full_path".into(),
        Value::String(target_full_path.to_string()),
    );
    let mut p = Map::with_capacity_and_hasher(params.len() + 1, Default::default());
    p.insert("kapitan".into(), Value::Map(kap));
    p.insert(
        "_kapitan_".into(),
        params.get("_kapitan_").cloned().unwrap_or(Value::Null),
    );
    let reclass = match params.get("_reclass_") {
        Some(Value::Map(r)) => {
            // The metadata model declares `name` (short, full, path, parts)
            // first; other keys follow.
            let mut out = Map::default();
            if let Some(Value::Map(n)) = r.get("name") {
                let mut nm = Map::default();
                for k in ["short", "full", "path", "parts"] {
                    if let Some(v) = n.get(k) {
                        nm.insert(k.into(), v.clone());
                    }
                }
                out.insert("name".into(), Value::Map(nm));
            }
            for (k, v) in r {
                if !out.contains_key(k) {
                    out.insert(k.clone(), v.clone());
                }
            }
            Value::Map(out)
        }
        other => other.cloned().unwrap_or(Value::Null),
    };
    p.insert("_reclass_".into(), reclass);
    for (k, v) in params {
        if !p.contains_key(&k) {
            p.insert(k, v);
        }
    }
    let mut top = Map::default();
    top.insert("parameters".into(), Value::Map(p));
    top.insert(
        "classes".into(),
        Value::List(classes.into_iter().map(Value::String).collect()),
    );
    top.insert(
        "applications".into(),
        Value::List(applications.into_iter().map(Value::String).collect()),
    );
    top.insert(
        "exports".into(),
        match exports {
            Value::Null => Value::Map(Map::default()),
            other => other,
        },
    );
    Value::Map(top)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(params: &str) -> RenderedNode {
        RenderedNode {
            name: "t".into(),
            classes: vec!["common".into()],
            applications: vec![],
            parameters: Value::from_json(&serde_json::from_str(params).unwrap()),
            exports: Value::Map(Map::default()),
            environment: "base".into(),
            sources: Default::default(),
        }
    }

    #[test]
    fn defaults_depend_on_input_type() {
        let n = node(
            r#"{"kapitan":{"vars":{"target":"t"},"compile":[{"input_type":"jsonnet","input_paths":["a"],"output_path":"o"},{"input_type":"jinja2","input_paths":["b"],"output_path":"."}]}}"#,
        );
        let (plan, kd) = plan_target(&n).unwrap();
        assert!(!plan.entries[0].prune && !plan.entries[0].ignore_missing);
        assert!(plan.entries[1].ignore_missing);
        assert_eq!(plan.entries[1].output_type, OutputType::Plain);
        let dump = model_dump(&n, &kd, "t");
        let keys: Vec<_> = dump
            .get_path(&["parameters"])
            .unwrap()
            .as_map()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(keys, ["kapitan", "_kapitan_", "_reclass_"]);
    }

    /// A full compile moves each render into its dump: the same dump, in
    /// the same key order, as the copy the review's renders get.
    #[test]
    fn a_moved_render_dumps_as_a_copied_one() {
        let mut n = node(
            r#"{"z":1,"_reclass_":{"environment":"base","name":{"parts":["t"],"full":"t","short":"t","path":"t"}},"kapitan":{"vars":{"target":"t"},"compile":[]},"a":{"b":[1,"x",null]},"_kapitan_":{"k":true}}"#,
        );
        n.applications = vec!["app".into()];
        n.exports = Value::Null;
        let (_, kd) = plan_target(&n).unwrap();
        let copied = model_dump(&n, &kd, "p/t");
        let moved = model_dump_owned(n, kd, "p/t");
        assert_eq!(moved, copied);
        let order = |v: &Value, path: &[&str]| -> Vec<String> {
            v.get_path(path)
                .unwrap()
                .as_map()
                .unwrap()
                .keys()
                .cloned()
                .collect()
        };
        assert_eq!(
            order(&moved, &["parameters"]),
            ["kapitan", "_kapitan_", "_reclass_", "z", "a"]
        );
        assert_eq!(
            order(&moved, &["parameters", "_reclass_", "name"]),
            ["short", "full", "path", "parts"]
        );
        assert_eq!(
            order(&moved, &[]),
            ["parameters", "classes", "applications", "exports"]
        );
        assert_eq!(order(&moved, &["exports"]), Vec::<String>::new());
    }

    /// examples/kubernetes `minikube-nginx-helm` sets `output_type: yaml`
    /// ("this tests that helm switches to auto output type"): Kapitan
    /// wrote `clusterrole.yaml`, strata `clusterrole.yaml.yaml`.
    #[test]
    fn a_helm_entry_always_writes_helms_own_file_names() {
        for ot in ["yaml", "json", "plain", "toml", "auto"] {
            let n = node(&format!(
                r#"{{"kapitan":{{"vars":{{"target":"t"}},"compile":[{{"input_type":"helm","input_paths":["c"],"output_path":".","output_type":"{ot}"}}]}}}}"#
            ));
            let (plan, kd) = plan_target(&n).unwrap();
            assert_eq!(plan.entries[0].output_type, OutputType::Auto, "{ot}");
            let dump = model_dump(&n, &kd, "t");
            let entry = &dump
                .get_path(&["parameters", "kapitan", "compile"])
                .unwrap()
                .as_list()
                .unwrap()[0];
            assert_eq!(
                entry.get_path(&["output_type"]).and_then(Value::as_str),
                Some("auto"),
                "{ot}"
            );
        }
        // The value is still checked first, as pydantic does.
        let n = node(
            r#"{"kapitan":{"vars":{"target":"t"},"compile":[{"input_type":"helm","input_paths":["c"],"output_path":".","output_type":"xml"}]}}"#,
        );
        assert!(plan_target(&n).is_err());
    }

    #[test]
    fn unknown_keys_and_wrong_types_fail() {
        let n = node(
            r#"{"kapitan":{"vars":{"target":"t"},"compile":[{"input_type":"jsonnet","input_paths":["a"],"output_path":"o","output_typ":"json"}]}}"#,
        );
        assert!(plan_target(&n)
            .unwrap_err()
            .to_string()
            .contains("output_typ"));
        let n = node(
            r#"{"kapitan":{"vars":{"target":"t"},"compile":[{"input_type":"external","input_paths":["a"],"output_path":"o","env_vars":{"REPLICAS":3}}]}}"#,
        );
        assert!(plan_target(&n)
            .unwrap_err()
            .to_string()
            .contains("REPLICAS"));
        let n = node(
            r#"{"kapitan":{"vars":{"target":"t"},"compile":[{"input_type":"helmfile","input_paths":["a"],"output_path":"o"}]}}"#,
        );
        assert!(plan_target(&n)
            .unwrap_err()
            .to_string()
            .contains("helmfile"));
    }

    /// verify22: `vars.target` `.tmp.x` became the directory `/tmp/x`,
    /// which `Path::join` takes as absolute: the compile wrote there.
    #[test]
    fn a_target_directory_with_an_empty_part_is_refused() {
        for bad in [".tmp.x", "a..sub", "a.", "..x", "."] {
            let n = node(&format!(
                r#"{{"kapitan":{{"vars":{{"target":"{bad}"}},"compile":[{{"input_type":"jsonnet","input_paths":["a"],"output_path":"o"}}]}}}}"#
            ));
            let e = plan_target(&n).unwrap_err().to_string();
            assert!(
                e.contains("vars.target") && e.contains("empty part"),
                "{bad}: {e}"
            );
        }
        for good in ["t", "a.sub", "a.b.c"] {
            let n = node(&format!(
                r#"{{"kapitan":{{"vars":{{"target":"{good}"}},"compile":[{{"input_type":"jsonnet","input_paths":["a"],"output_path":"o"}}]}}}}"#
            ));
            let (plan, _) = plan_target(&n).unwrap();
            assert!(!plan.dir.starts_with('/') && !plan.dir.contains("//"));
        }
    }

    /// Probe 25: the compile cache keys its kept dumps by the variables
    /// [`dump_env_names`] lists; one the dump reads and the list misses
    /// would serve a stale dump again.
    #[test]
    fn every_variable_a_dump_reads_is_listed() {
        let v = Value::from_json(
            &serde_json::from_str(r#"{"vaultkv": {"auth": "token"}, "vaulttransit": {}}"#).unwrap(),
        );
        let asked = std::cell::RefCell::new(std::collections::BTreeSet::new());
        let env = |k: &str| {
            asked.borrow_mut().insert(k.to_string());
            None
        };
        secrets_dump("t", Some(&v), &env).unwrap();
        let listed: std::collections::BTreeSet<String> = dump_env_names().into_iter().collect();
        let asked = asked.into_inner();
        assert!(asked.contains("VAULT_ADDR"), "{asked:?}");
        let missed: Vec<&String> = asked.difference(&listed).collect();
        assert!(missed.is_empty(), "read but not listed: {missed:?}");
    }

    #[test]
    fn secrets_get_every_backend_and_vault_defaults() {
        let v = Value::from_json(
            &serde_json::from_str(r#"{"vaultkv": {"VAULT_ADDR": "http://a", "auth": "token"}}"#)
                .unwrap(),
        );
        let env = |k: &str| (k == "VAULT_NAMESPACE").then(|| "ns".to_string());
        let d = secrets_dump("t", Some(&v), &env).unwrap();
        let keys: Vec<&str> = d.as_map().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            ["gpg", "awskms", "vaultkv", "gkms", "vaulttransit", "azkms"]
        );
        let kv = d.get_path(&["vaultkv"]).unwrap();
        assert_eq!(
            kv.get_path(&["addr"]),
            Some(&Value::String("http://a".into()))
        );
        assert_eq!(
            kv.get_path(&["namespace"]),
            Some(&Value::String("ns".into()))
        );
        assert_eq!(
            kv.get_path(&["mount"]),
            Some(&Value::String("secret".into()))
        );
        assert_eq!(kv.get_path(&["skip_verify"]), Some(&Value::Bool(true)));
        let v = Value::from_json(
            &serde_json::from_str(r#"{"vaultkv": {"VAULT_SKIP_VERIFY": "false"}}"#).unwrap(),
        );
        let d = secrets_dump("t", Some(&v), &env).unwrap();
        assert_eq!(
            d.get_path(&["vaultkv", "skip_verify"]),
            Some(&Value::Bool(false))
        );
        let bad = Value::from_json(&serde_json::from_str(r#"{"gpg": {"keys": []}}"#).unwrap());
        let e = secrets_dump("t", Some(&bad), &env).unwrap_err();
        assert!(e.to_string().contains("secrets.gpg.keys"), "{e}");
    }

    #[test]
    fn dependencies_are_checked_per_type() {
        let deps = |j: &str| Value::from_json(&serde_json::from_str(j).unwrap());
        let ok = dependencies_dump(
            "t",
            Some(&deps(
                r#"[{"type": "https", "source": "s", "output_path": "o"}]"#,
            )),
        )
        .unwrap();
        assert_eq!(
            serde_json::to_string(&ok).unwrap(),
            r#"[{"type":"https","source":"s","output_path":"o","force_fetch":false,"unpack":false}]"#
        );
        let e = dependencies_dump(
            "t",
            Some(&deps(
                r#"[{"type": "helm", "source": "s", "output_path": "o"}]"#,
            )),
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("dependencies[0].chart_name: is required"),
            "{e}"
        );
        let e = dependencies_dump(
            "t",
            Some(&deps(
                r#"[{"type": "svn", "source": "s", "output_path": "o"}]"#,
            )),
        )
        .unwrap_err();
        assert!(e.to_string().contains("`svn` is not one of"), "{e}");
    }
}
