//! Jsonnet postprocessing filters as Commodore runs them: the filter file
//! (relative to the instance's checkout) is evaluated with the ext vars
//! `target`/`component` (the component name), `output_path` and the
//! filter's `filterargs`, the natives `yaml_load`, `yaml_load_all`,
//! `list_dir` and `commodore_inventory`, and each top-level key is written
//! to `<output_path>/<key>.yaml` (a list as a YAML stream).

use super::{commodore_yaml, CommodoreError};
use crate::compile::jsonnet::{val_to_value, BundledResolver, LIB_IMPORT as KAPITAN_LIB};
use crate::value::{Map, Value};
use jrsonnet_evaluator::error::ErrorKind;
use jrsonnet_evaluator::function::builtin::{NativeCallback, NativeCallbackHandler};
use jrsonnet_evaluator::trace::PathResolver;
use jrsonnet_evaluator::{Result as JrResult, State, Val};
use jrsonnet_gcmodule::Trace;
use std::path::{Path, PathBuf};
use std::rc::Rc;

fn rt_err(msg: impl AsRef<str>) -> jrsonnet_evaluator::Error {
    ErrorKind::RuntimeError(msg.as_ref().into()).into()
}

fn to_val(v: &Value) -> JrResult<Val> {
    Ok(match v {
        Value::Null => Val::Null,
        Value::Bool(b) => Val::Bool(*b),
        Value::Int(i) => Val::try_num(*i as f64)?,
        Value::Float(f) => Val::try_num(*f)?,
        Value::String(s) => Val::string(s.as_str()),
        Value::List(l) => Val::arr(l.iter().map(to_val).collect::<JrResult<Vec<_>>>()?),
        Value::Map(m) => {
            let mut b = jrsonnet_evaluator::ObjValue::builder_with_capacity(m.len());
            for (k, item) in m {
                b.field(k.as_str()).value(to_val(item)?);
            }
            Val::Obj(b.build())
        }
    })
}

#[derive(Clone, Copy)]
enum Kind {
    YamlLoad,
    YamlLoadAll,
    ListDir,
    Inventory,
}

struct Handler {
    kind: Kind,
    inventory: Rc<Value>,
}

impl Trace for Handler {
    fn is_type_tracked() -> bool {
        false
    }
}

fn arg_str(args: &[Val], i: usize) -> JrResult<String> {
    match args.get(i) {
        Some(Val::Str(s)) => Ok(s.clone().into_flat().to_string()),
        _ => Err(rt_err(format!("argument {} must be a string", i + 1))),
    }
}

impl NativeCallbackHandler for Handler {
    fn call(&self, args: &[Val]) -> JrResult<Val> {
        match self.kind {
            Kind::YamlLoad | Kind::YamlLoadAll => {
                let file = arg_str(args, 0)?;
                crate::confine::check(Path::new(&file)).map_err(rt_err)?;
                let text =
                    std::fs::read_to_string(&file).map_err(|e| rt_err(format!("{file}: {e}")))?;
                let docs = crate::compile::pyyaml_load::load_all(&text)
                    .map_err(|e| rt_err(format!("{file}: {e}")))?;
                if matches!(self.kind, Kind::YamlLoad) {
                    to_val(docs.first().unwrap_or(&Value::Null))
                } else {
                    to_val(&Value::List(docs))
                }
            }
            Kind::ListDir => {
                let dir = arg_str(args, 0)?;
                let basename = matches!(args.get(1), Some(Val::Bool(true)));
                crate::confine::check(Path::new(&dir)).map_err(rt_err)?;
                let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
                    .map_err(|e| rt_err(format!("{dir}: {e}")))?
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.is_file())
                    .collect();
                files.sort();
                let names = files
                    .iter()
                    .map(|p| {
                        let s = if basename {
                            p.file_name()
                                .map(|n| n.to_string_lossy().into_owned())
                                .unwrap_or_default()
                        } else {
                            p.to_string_lossy().into_owned()
                        };
                        Value::String(s)
                    })
                    .collect();
                to_val(&Value::List(names))
            }
            Kind::Inventory => to_val(&self.inventory),
        }
    }
}

/// Runs one jsonnet filter and writes its output.
pub fn run(
    filter: &Path,
    work_dir: &Path,
    component: &str,
    out_dir: &Path,
    inventory: &Value,
    args: &Map,
) -> Result<(), CommodoreError> {
    // The filter is component code: its memory is metered like compile's.
    let what = format!(
        "component {component}, jsonnet postprocess filter {}",
        filter.display()
    );
    crate::memguard::metered(&what, || {
        run_metered(filter, work_dir, component, out_dir, inventory, args)
    })
}

fn run_metered(
    filter: &Path,
    work_dir: &Path,
    component: &str,
    out_dir: &Path,
    inventory: &Value,
    args: &Map,
) -> Result<(), CommodoreError> {
    let ctx = crate::compile::jsonnet::StdContext::new(PathResolver::Absolute);
    let mut ext: Vec<(String, String)> = args
        .iter()
        .map(|(k, v)| {
            let s = match v {
                Value::String(s) => s.clone(),
                other => crate::compile::jsonnet::python_json_dumps(other),
            };
            (k.clone(), s)
        })
        .collect();
    ext.push(("target".into(), component.into()));
    ext.push(("component".into(), component.into()));
    ext.push(("output_path".into(), out_dir.to_string_lossy().into_owned()));
    for (k, v) in ext {
        ctx.add_ext_str(k.into(), v.into());
    }
    let inv = Rc::new(inventory.clone());
    let natives: [(&str, Kind, &[&str]); 4] = [
        ("yaml_load", Kind::YamlLoad, &["file"]),
        ("yaml_load_all", Kind::YamlLoadAll, &["file"]),
        ("list_dir", Kind::ListDir, &["dir", "basename"]),
        ("commodore_inventory", Kind::Inventory, &[]),
    ];
    for (name, kind, params) in natives {
        #[allow(deprecated)]
        let cb = NativeCallback::new(
            params.iter().map(|s| s.to_string()).collect(),
            Handler {
                kind,
                inventory: inv.clone(),
            },
        );
        ctx.add_native(name, cb);
    }
    let mut builder = State::builder();
    builder
        .import_resolver(BundledResolver {
            search_paths: vec![
                work_dir.to_path_buf(),
                work_dir.join("vendor"),
                work_dir.join("dependencies"),
            ],
            bundled: super::BUNDLED_LIBS
                .iter()
                .copied()
                .chain([(KAPITAN_LIB, crate::compile::jsonnet::KAPITAN_LIBJSONNET)])
                .collect(),
            bundled_first: false,
        })
        .context_initializer(ctx);
    let state = builder.build();
    let _guard = state.enter();
    let v = crate::compile::jsonnet::with_layer_budget(|| {
        let result = state.import(filter).and_then(|v| val_to_value(&v));
        result.map_err(|e| format!("{e}").trim_end().to_string())
    })
    .map_err(|e| {
        CommodoreError::new(format!("jsonnet filter {}: {e}", filter.display())).file(filter)
    })?;
    let Value::Map(m) = v else {
        return Err(CommodoreError::new(format!(
            "jsonnet filter {} must return an object (file name -> content)",
            filter.display()
        ))
        .file(filter));
    };
    for (key, content) in m {
        let text = match &content {
            Value::List(l) => commodore_yaml(l),
            other => commodore_yaml(std::slice::from_ref(other)),
        };
        let out = out_dir.join(format!("{key}.yaml"));
        if Path::new(&key).is_absolute() || !super::postprocess::stays_inside(out_dir, &out) {
            return Err(CommodoreError::new(format!(
                "jsonnet filter {}: output file `{key}` leads outside {}: a filter may only write below its path",
                filter.display(),
                out_dir.display()
            ))
            .file(filter));
        }
        if let Some(p) = out.parent() {
            std::fs::create_dir_all(p)
                .map_err(|e| CommodoreError::new(format!("{}: {e}", p.display())))?;
        }
        std::fs::write(&out, text)
            .map_err(|e| CommodoreError::new(format!("{}: {e}", out.display())))?;
    }
    Ok(())
}
