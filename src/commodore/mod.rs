//! Commodore-compatible cluster catalogs: from a working directory laid out
//! like `commodore catalog compile --local` expects (global and tenant
//! configuration under `inventory/classes/`, components and packages under
//! `dependencies/`), discover packages, components and instances from the
//! `applications` list, create the symlinks and Kapitan targets Commodore
//! creates, write the `?{vaultkv:...}` reference files, compile every
//! instance through [`crate::compile`], run the postprocessing filters and
//! write `catalog/manifests/` and `catalog/refs/`.
//!
//! Fetching dependencies from git is not done here: every dependency must
//! already be checked out (Commodore's local mode).

pub mod api;
pub mod cluster;
pub mod component;
pub mod jsonnet_filter;
pub mod package;
pub mod postprocess;
pub mod refs;

use crate::compile::yaml_dump::{self, DumpOptions, MultilineStyle};
use crate::compile::{self, CompileOptions};
use crate::diagnostics::{Diagnostic, ToDiagnostic};
use crate::inventory::{Inventory, InventoryOptions, RenderedNode};
use crate::value::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub use cluster::ClusterInfo;

/// The bootstrap target Commodore renders cluster-wide parameters from.
pub const BOOTSTRAP: &str = "cluster";
const PACKAGE_PREFIX: &str = "pkg.";

/// A Commodore error: what went wrong, where (file), and what to do.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct CommodoreError {
    pub message: String,
    pub file: Option<PathBuf>,
    pub hint: Option<String>,
}

impl CommodoreError {
    pub fn new(message: impl Into<String>) -> Self {
        CommodoreError {
            message: message.into(),
            file: None,
            hint: None,
        }
    }

    pub fn file(mut self, f: &Path) -> Self {
        self.file = Some(f.to_path_buf());
        self
    }

    pub fn hint(mut self, h: impl Into<String>) -> Self {
        self.hint = Some(h.into());
        self
    }

    fn io(path: &Path, e: std::io::Error) -> Self {
        CommodoreError::new(format!("{}: {e}", path.display())).file(path)
    }
}

impl ToDiagnostic for CommodoreError {
    fn to_diagnostic(&self) -> Diagnostic {
        let mut d = Diagnostic::error(self.message.clone());
        if let Some(f) = &self.file {
            d = d.with_file(f);
        }
        if let Some(h) = &self.hint {
            d = d.with_hint(h.clone());
        }
        d
    }
}

fn from_display(e: impl std::fmt::Display) -> CommodoreError {
    CommodoreError::new(e.to_string())
}

/// A compile error with its input file and hint kept.
fn from_compile(e: compile::CompileError) -> CommodoreError {
    CommodoreError {
        message: e.to_string(),
        file: e.input.clone(),
        hint: e.hint.as_deref().map(str::to_string),
    }
}

/// Where a missing jsonnet library would have come from, in one mode.
pub(crate) struct ImportFetch<'a> {
    /// The command that installs the component's `jsonnetfile.json`
    /// dependencies, when this compile did not (`None`: it did).
    pub skipped: Option<&'a str>,
    /// Where they are installed.
    pub vendor: &'a Path,
    /// What else makes a library importable (`-J`), if anything.
    pub other: Option<&'a str>,
}

/// For a jsonnet import that is not found, Commodore-style: the component
/// whose compile needed it, the `jsonnetfile.json` that declares its
/// libraries (or that it has none), and the step that installs them.
/// `None` when `message` is not about a missing import.
pub(crate) fn missing_import_hint(
    message: &str,
    component: &str,
    instance: &str,
    dir: &Path,
    fetch: &ImportFetch,
) -> Option<String> {
    if !message.contains("couldn't open import") {
        return None;
    }
    let who = if instance == component {
        format!("component {component}")
    } else {
        format!("component {component} (instance {instance})")
    };
    let json = dir.join("jsonnetfile.json");
    let declared = if json.is_file() {
        Some(json.clone())
    } else {
        Some(dir.join("jsonnetfile.jsonnet")).filter(|p| p.is_file())
    };
    let other = fetch.other.map(|o| format!(", or {o}")).unwrap_or_default();
    let vendor = fetch.vendor.display();
    Some(match (declared, fetch.skipped) {
        (Some(file), Some(cmd)) => format!(
            "{who} declares its jsonnet libraries in {}, which were not installed: {cmd} installs them into {vendor}{other}",
            file.display()
        ),
        (Some(file), None) => format!(
            "{who} declares its jsonnet libraries in {}, installed into {vendor}, and this import is not among them: add the library to {}{other}",
            file.display(),
            file.display()
        ),
        (None, _) => format!(
            "{who} has no jsonnetfile.json ({}): declare the library there (jsonnet-bundler format) to have it installed into {vendor}{other}",
            json.display()
        ),
    })
}

/// The parameters key of a component or instance (`-` becomes `_`).
pub fn parameters_key(name: &str) -> String {
    name.replace('-', "_")
}

/// Where a dependency comes from: `parameters.components.<name>` or
/// `parameters.packages.<name>`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DependencySpec {
    pub url: String,
    pub version: String,
    pub path: String,
}

/// One component instance: its name and the component it instantiates.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Instance {
    pub name: String,
    pub component: String,
}

/// The working directory's layout (Commodore's `Inventory` class).
#[derive(Debug, Clone)]
pub struct Layout {
    pub work_dir: PathBuf,
}

impl Layout {
    pub fn new(work_dir: &Path) -> Self {
        Layout {
            work_dir: absolute(work_dir),
        }
    }
    pub fn inventory_dir(&self) -> PathBuf {
        self.work_dir.join("inventory")
    }
    pub fn classes_dir(&self) -> PathBuf {
        self.inventory_dir().join("classes")
    }
    pub fn components_dir(&self) -> PathBuf {
        self.classes_dir().join("components")
    }
    pub fn defaults_dir(&self) -> PathBuf {
        self.classes_dir().join("defaults")
    }
    pub fn targets_dir(&self) -> PathBuf {
        self.inventory_dir().join("targets")
    }
    pub fn params_file(&self) -> PathBuf {
        self.classes_dir()
            .join("params")
            .join(format!("{BOOTSTRAP}.yml"))
    }
    pub fn dependencies_dir(&self) -> PathBuf {
        self.work_dir.join("dependencies")
    }
    pub fn lib_dir(&self) -> PathBuf {
        self.dependencies_dir().join("lib")
    }
    pub fn component_dir(&self, name: &str) -> PathBuf {
        self.dependencies_dir().join(name)
    }
    pub fn package_dir(&self, name: &str) -> PathBuf {
        self.dependencies_dir()
            .join(format!("{PACKAGE_PREFIX}{name}"))
    }
    pub fn catalog_dir(&self) -> PathBuf {
        self.work_dir.join("catalog")
    }
}

/// Makes `p` absolute and drops `.`/`..` without touching the disk.
pub fn absolute(p: &Path) -> PathBuf {
    let p = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    };
    compile::jsonnet::normpath(&p)
}

/// `os.path.relpath(target, start)` for two absolute, normalized paths.
pub fn relpath(target: &Path, start: &Path) -> PathBuf {
    let t: Vec<_> = target.components().collect();
    let s: Vec<_> = start.components().collect();
    let common = t.iter().zip(&s).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..s.len() {
        out.push("..");
    }
    for c in &t[common..] {
        out.push(c.as_os_str());
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// Commodore's `relsymlink`: a relative symlink `dest_dir/dest_name` to
/// `src`, replacing whatever is there.
fn relsymlink(src: &Path, dest_dir: &Path, dest_name: &str) -> Result<(), CommodoreError> {
    let link_src = relpath(src, dest_dir);
    let link_dst = dest_dir.join(dest_name);
    if !src.exists() {
        return Err(CommodoreError::new(format!(
            "Can't link {} to {}. Source does not exist.",
            link_src.display(),
            link_dst.display()
        ))
        .file(src));
    }
    if std::fs::symlink_metadata(&link_dst).is_ok() {
        std::fs::remove_file(&link_dst).map_err(|e| CommodoreError::io(&link_dst, e))?;
    }
    symlink(&link_src, &link_dst)
}

#[cfg(unix)]
fn symlink(src: &Path, dst: &Path) -> Result<(), CommodoreError> {
    std::os::unix::fs::symlink(src, dst).map_err(|e| CommodoreError::io(dst, e))
}

#[cfg(not(unix))]
fn symlink(_src: &Path, dst: &Path) -> Result<(), CommodoreError> {
    Err(CommodoreError::new("symlinks are only supported on Unix").file(dst))
}

/// Empties a directory (creating it when missing), like `rm_tree_contents`.
fn reset_dir(dir: &Path) -> Result<(), CommodoreError> {
    std::fs::create_dir_all(dir).map_err(|e| CommodoreError::io(dir, e))?;
    let entries = std::fs::read_dir(dir).map_err(|e| CommodoreError::io(dir, e))?;
    for e in entries {
        let e = e.map_err(|e| CommodoreError::io(dir, e))?;
        let p = e.path();
        let ft = e.file_type().map_err(|e| CommodoreError::io(&p, e))?;
        if ft.is_dir() {
            std::fs::remove_dir_all(&p).map_err(|e| CommodoreError::io(&p, e))?;
        } else {
            std::fs::remove_file(&p).map_err(|e| CommodoreError::io(&p, e))?;
        }
    }
    Ok(())
}

/// PyYAML's `yaml.dump(obj, Dumper=IndentedListDumper)` as Commodore uses
/// it: sorted keys, indented lists, block literals for multi-line strings.
pub fn commodore_yaml(docs: &[Value]) -> String {
    let opts = DumpOptions {
        indent: 2,
        indentless_sequences: false,
        multiline: Some(MultilineStyle::Literal),
        null_as_empty: false,
        integral_floats_as_ints: true,
        quote_digit_strings: false,
    };
    let sorted: Vec<Value> = docs.iter().map(sort_keys).collect();
    yaml_dump::dump_all(&sorted, &opts)
}

/// Sorts every mapping by key (PyYAML's `sort_keys=True`).
pub fn sort_keys(v: &Value) -> Value {
    match v {
        Value::Map(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Map(
                keys.into_iter()
                    .map(|k| (k.clone(), sort_keys(&m[k])))
                    .collect(),
            )
        }
        Value::List(l) => Value::List(l.iter().map(sort_keys).collect()),
        other => other.clone(),
    }
}

/// A component's `jsonnetfile.jsonnet`, if it has one, rendered into its
/// `jsonnetfile.json` with `parameters.<component>.jsonnetfile_parameters`
/// as external variables (Commodore's `render_jsonnetfile_json`).
pub(crate) fn render_jsonnetfile(
    dir: &Path,
    component: &str,
    cluster: &Value,
    confine: Option<&crate::compile::confine::Confine>,
) -> Result<(), CommodoreError> {
    let jsonnet = dir.join("jsonnetfile.jsonnet");
    if !jsonnet.is_file() {
        return Ok(());
    }
    let ext: Vec<(String, String)> = cluster
        .get_path(&[parameters_key(component).as_str(), "jsonnetfile_parameters"])
        .and_then(Value::as_map)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let text = match v {
                        Value::String(s) => s.clone(),
                        other => serde_json::to_string(other).unwrap_or_default(),
                    };
                    (k.clone(), text)
                })
                .collect()
        })
        .unwrap_or_default();
    // A pull request's imports stay in the checkout, as its compile's.
    let scoped = confine.cloned().map(std::sync::Arc::new);
    let v = crate::compile::confine::scoped(scoped, || {
        crate::fetch::jsonnet::render_jsonnetfile(&jsonnet, &ext)
    })
    .map_err(|m| CommodoreError::new(format!("{}: {m}", jsonnet.display())).file(&jsonnet))?;
    let mut text = serde_json::to_string_pretty(&v).map_err(from_display)?;
    text.push('\n');
    let out = dir.join("jsonnetfile.json");
    if confine.is_some_and(|c| !c.check_write(&out)) {
        return Err(CommodoreError::new(format!(
            "{}: {}",
            out.display(),
            crate::fetch::jsonnet::WRITE_THROUGH_LINK
        ))
        .file(&out));
    }
    write(&out, &text)
}

fn write(path: &Path, text: &str) -> Result<(), CommodoreError> {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).map_err(|e| CommodoreError::io(p, e))?;
    }
    std::fs::write(path, text).map_err(|e| CommodoreError::io(path, e))
}

fn map(entries: Vec<(&str, Value)>) -> Value {
    Value::Map(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

fn s(v: &str) -> Value {
    Value::String(v.to_string())
}

/// The dependencies a cluster uses, as discovered from its inventory.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Dependencies {
    /// Package name -> spec (only packages present in `dependencies/`).
    pub packages: BTreeMap<String, DependencySpec>,
    /// Component name -> spec (only components present in `dependencies/`).
    pub components: BTreeMap<String, DependencySpec>,
    /// Instance name -> component, sorted by instance.
    pub instances: BTreeMap<String, String>,
    /// Instance spec (url/version/path after falling back to the component's).
    pub instance_specs: BTreeMap<String, DependencySpec>,
    /// Warnings Commodore prints (skipped dependencies, missing defaults).
    #[serde(skip)]
    pub warnings: Vec<String>,
}

fn render_cluster(layout: &Layout, ignore_missing: bool) -> Result<RenderedNode, CommodoreError> {
    let opts = InventoryOptions {
        path: layout.inventory_dir(),
        ignore_class_notfound: ignore_missing,
        applications_negate_earlier_only: true,
        ..Default::default()
    };
    let inv = Inventory::load(&opts).map_err(from_display)?;
    inv.render_target(BOOTSTRAP).map_err(from_display)
}

/// `DependencySpec.parse` of Commodore: `url` and `version` are required
/// unless a base spec (the aliased component's) provides them.
fn parse_spec(
    kind: &str,
    name: &str,
    info: Option<&Value>,
    base: Option<&DependencySpec>,
) -> Result<DependencySpec, CommodoreError> {
    let empty = Map::default();
    let info = match info {
        Some(Value::Map(m)) => m,
        None | Some(Value::Null) => &empty,
        Some(other) => {
            return Err(CommodoreError::new(format!(
                "parameters.{kind}s.{name} must be a mapping with url and version, not {}",
                other.type_name()
            )))
        }
    };
    let field = |k: &str| -> Option<String> {
        info.get(k).map(|v| match v {
            Value::String(s) => s.clone(),
            Value::Int(i) => i.to_string(),
            Value::Float(f) => f.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => String::new(),
        })
    };
    let cap = if kind == "component" {
        "Component"
    } else {
        "Package"
    };
    for f in ["url", "version"] {
        if field(f).is_none() && base.is_none() {
            return Err(
                CommodoreError::new(format!("{cap} '{name}' is missing field '{f}'"))
                    .hint(format!("set parameters.{kind}s.{name}.{f}")),
            );
        }
    }
    let mut path = field("path").unwrap_or_default();
    if let Some(p) = path.strip_prefix('/') {
        path = p.to_string();
    }
    // Commodore only strips the leading `/`; `..` linked classes from
    // outside the checkout (and the working directory).
    if !path.is_empty() && !crate::packages::repo::safe_relative(&path) {
        return Err(bad_sub_path(kind, name, &path, "may not hold `..`"));
    }
    Ok(match base {
        Some(b) => DependencySpec {
            url: field("url").unwrap_or_else(|| b.url.clone()),
            version: field("version").unwrap_or_else(|| b.version.clone()),
            path: if path.is_empty() {
                b.path.clone()
            } else {
                path
            },
        },
        None => DependencySpec {
            url: field("url").unwrap_or_default(),
            version: field("version").unwrap_or_default(),
            path,
        },
    })
}

/// The refusal of a dependency's `path` that leaves its checkout
/// `dependencies/<name>` (`dependencies/pkg.<name>` for a package).
fn bad_sub_path(kind: &str, name: &str, path: &str, why: &str) -> CommodoreError {
    let checkout = if kind == "package" {
        format!("dependencies/{PACKAGE_PREFIX}{name}")
    } else {
        format!("dependencies/{name}")
    };
    CommodoreError::new(format!(
        "invalid parameters.{kind}s.{name}.path {path:?}: it names a directory of the {kind}'s repository and must stay inside its checkout {checkout}, so it {why}"
    ))
    .hint(format!(
        "set parameters.{kind}s.{name}.path to the subdirectory of the repository that holds class/ (e.g. `path: component`), or remove it to use the repository's top level"
    ))
}

/// The directory of a checkout that `spec.path` names, refused when a
/// symlink on the way leads out of the checkout (the lexical check is
/// [`parse_spec`]'s).
fn checkout_subdir(
    kind: &str,
    name: &str,
    checkout: &Path,
    spec: &DependencySpec,
) -> Result<PathBuf, CommodoreError> {
    if spec.path.is_empty() {
        return Ok(checkout.to_path_buf());
    }
    let target = checkout.join(&spec.path);
    if !postprocess::stays_inside(checkout, &target) {
        return Err(bad_sub_path(
            kind,
            name,
            &spec.path,
            "may not lead out of it through a symlink",
        )
        .file(&target));
    }
    Ok(target)
}

/// Splits `applications` into packages and component aliases, with
/// Commodore's checks.
pub fn discover_packages(applications: &[String]) -> Result<BTreeSet<String>, CommodoreError> {
    let mut out = BTreeSet::new();
    for app in applications {
        let Some(name) = app.strip_prefix(PACKAGE_PREFIX) else {
            continue;
        };
        if matches!(name, "components" | "defaults" | "global" | "params") {
            return Err(CommodoreError::new(format!(
                "Can't use reserved name '{name}' as package name."
            )));
        }
        if name.starts_with("t-") {
            return Err(CommodoreError::new(
                "Package names can't be prefixed with 't-'. This prefix is reserved for tenant configurations.",
            ));
        }
        check_path_name("package", name, app)?;
        out.insert(name.to_string());
    }
    Ok(out)
}

/// Whether `name` is one plain path component: not empty, `.` or `..`,
/// without `/`, `\` or control characters.
fn is_plain_name(name: &str) -> bool {
    !(name.is_empty()
        || name == "."
        || name == ".."
        || name.contains(['/', '\\'])
        || name.chars().any(char::is_control))
}

/// Component, instance and package names become directory, file and link
/// names (`dependencies/<c>`, `inventory/classes/components/<i>.yml`,
/// `compiled/<i>`): `..` in one read a checkout from outside `dependencies/`
/// and left links outside the working directory.
fn check_path_name(what: &str, name: &str, app: &str) -> Result<(), CommodoreError> {
    if !is_plain_name(name) {
        return Err(CommodoreError::new(format!(
            "invalid {what} name {name:?} in `applications` entry {app:?}: names become directory and file names, so they may not be empty, `.` or `..`, nor hold `/`, `\\` or control characters"
        )));
    }
    Ok(())
}

fn format_list(names: &BTreeSet<String>) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
    match quoted.len() {
        0 => String::new(),
        1 => quoted[0].clone(),
        n => format!("{} and {}", quoted[..n - 1].join(", "), quoted[n - 1]),
    }
}

/// Components and instance -> component map from `applications`, checking
/// duplicate instance names and aliases of an existing component.
pub fn discover_components(
    applications: &[String],
) -> Result<(BTreeSet<String>, BTreeMap<String, String>), CommodoreError> {
    let mut components = BTreeSet::new();
    let mut by_alias: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for app in applications {
        if app.starts_with(PACKAGE_PREFIX) {
            continue;
        }
        let parts: Vec<&str> = app.split(" as ").collect();
        let (cn, alias) = match parts.as_slice() {
            [c, a] => (c.to_string(), a.to_string()),
            _ => (app.clone(), app.clone()),
        };
        check_path_name("component", &cn, app)?;
        check_path_name("instance", &alias, app)?;
        components.insert(cn.clone());
        by_alias.entry(alias).or_default().insert(cn);
    }
    let mut aliases = BTreeMap::new();
    for (alias, cns) in by_alias {
        if cns.len() > 1 {
            if cns.contains(&alias) {
                let others: BTreeSet<String> =
                    cns.iter().filter(|c| **c != alias).cloned().collect();
                if others.len() > 1 {
                    return Err(CommodoreError::new(format!(
                        "While discovering components: Components {} alias existing component '{alias}'",
                        format_list(&others)
                    )));
                }
                let other = others.iter().next().cloned().unwrap_or_default();
                return Err(CommodoreError::new(format!(
                    "While discovering components: Component '{other}' aliases existing component '{alias}'"
                )));
            }
            return Err(CommodoreError::new(format!(
                "While discovering components: Duplicate component alias '{alias}': components {} are aliased to '{alias}'",
                format_list(&cns)
            )));
        }
        if let Some(cn) = cns.into_iter().next() {
            aliases.insert(alias, cn);
        }
    }
    Ok((components, aliases))
}

/// `c` and `c as c` both listed: Commodore refuses an identity alias next
/// to the plain entry (they name the same instance twice).
fn check_identity_duplicates(applications: &[String]) -> Result<(), CommodoreError> {
    let plain: BTreeSet<&str> = applications.iter().map(String::as_str).collect();
    for app in applications {
        if let Some((c, a)) = app.split_once(" as ") {
            if c == a && plain.contains(c) {
                return Err(CommodoreError::new(format!(
                    "Component '{c}' is listed both as `{c}` and as `{app}`: an instance name can be used only once"
                )));
            }
        }
    }
    Ok(())
}

fn params_of<'a>(node: &'a RenderedNode, key: &str) -> Option<&'a Value> {
    node.parameters.get_path(&[key])
}

/// Registers packages: discovers them (with missing classes ignored, since
/// packages are not linked yet), checks their specs and links the ones
/// checked out under `dependencies/pkg.<name>`.
fn register_packages(layout: &Layout, deps: &mut Dependencies) -> Result<(), CommodoreError> {
    let node = render_cluster(layout, true)?;
    let pkgs = discover_packages(&node.applications)?;
    let specs = params_of(&node, "packages");
    // Every package is checked before the first link is made.
    let mut links = Vec::new();
    for p in pkgs {
        let known = specs
            .and_then(|s| s.as_map())
            .map(|m| m.contains_key(&p))
            .unwrap_or(false);
        if !known {
            return Err(CommodoreError::new(format!(
                "Unknown package '{p}'. Please add it to 'parameters.packages'"
            )));
        }
        let spec = parse_spec("package", &p, specs.and_then(|s| s.get_path(&[&p])), None)?;
        let dir = layout.package_dir(&p);
        if !dir.is_dir() {
            deps.warnings.push(format!(
                "Skipping registration of package '{p}': repo is not available"
            ));
            continue;
        }
        let target = checkout_subdir("package", &p, &dir, &spec)?;
        if !target.is_dir() {
            return Err(CommodoreError::new(format!(
                "Can't symlink package subpath {}, not a directory",
                spec.path
            ))
            .file(&target));
        }
        links.push((p, spec, target));
    }
    for (p, spec, target) in links {
        relsymlink(&target, &layout.classes_dir(), &p)?;
        deps.packages.insert(p, spec);
    }
    Ok(())
}

/// The checkout directory of an instance (`dependencies/<instance>/<path>`).
pub fn instance_dir(layout: &Layout, instance: &str, spec: &DependencySpec) -> PathBuf {
    let d = layout.component_dir(instance);
    if spec.path.is_empty() {
        d
    } else {
        d.join(&spec.path)
    }
}

/// `lib/` files of a component must start with its name, and not with the
/// name of another deployed component that starts with its name.
fn check_library_name(
    components: &BTreeSet<String>,
    cname: &str,
    lib: &str,
) -> Result<(), CommodoreError> {
    let stem = Path::new(lib)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if components
        .iter()
        .any(|c| c != cname && c.starts_with(cname) && stem.starts_with(c.as_str()))
    {
        return Err(CommodoreError::new(format!(
            "Component '{cname}' defines component library '{lib}' which is reserved for another component."
        )));
    }
    if !stem.starts_with(cname) {
        return Err(CommodoreError::new(format!(
            "Component '{cname}' uses invalid component library name '{lib}'. Consider using a library alias."
        ))
        .hint("prefix the library file with the component name, or expose it with _metadata.library_aliases"));
    }
    Ok(())
}

fn lib_files(dir: &Path) -> Result<Vec<PathBuf>, CommodoreError> {
    let lib = dir.join("lib");
    if !lib.exists() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for e in std::fs::read_dir(&lib).map_err(|e| CommodoreError::io(&lib, e))? {
        let e = e.map_err(|e| CommodoreError::io(&lib, e))?;
        if !e.file_name().to_string_lossy().starts_with('.') {
            out.push(e.path());
        }
    }
    out.sort();
    Ok(out)
}

/// What the hierarchy asks for: the components, the instance -> component
/// map and the spec of every component and instance (instances fall back
/// to their component's url/version/path).
type ComponentSpecs = (
    BTreeSet<String>,
    BTreeMap<String, String>,
    BTreeMap<String, DependencySpec>,
);

fn read_component_specs(node: &RenderedNode) -> Result<ComponentSpecs, CommodoreError> {
    check_identity_duplicates(&node.applications)?;
    let (components, aliases) = discover_components(&node.applications)?;
    let specs = params_of(node, "components");
    let spec_map = match specs {
        Some(Value::Map(m)) if !m.is_empty() => m.clone(),
        _ => {
            return Err(CommodoreError::new(
                "Components list ('parameters.components') missing",
            ))
        }
    };
    let mut cspecs = BTreeMap::new();
    let component_names: BTreeSet<&String> = aliases.values().collect();
    for cn in &component_names {
        if !spec_map.contains_key(cn.as_str()) {
            return Err(CommodoreError::new(format!(
                "Unknown component '{cn}'. Please add it to 'parameters.components'"
            )));
        }
        cspecs.insert(
            (*cn).clone(),
            parse_spec("component", cn, spec_map.get(cn.as_str()), None)?,
        );
    }
    for (alias, cn) in &aliases {
        if component_names.contains(alias) {
            continue;
        }
        let spec = parse_spec("component", alias, spec_map.get(alias), cspecs.get(cn))?;
        cspecs.insert(alias.clone(), spec);
    }
    Ok((components, aliases, cspecs))
}

fn register_components(layout: &Layout, deps: &mut Dependencies) -> Result<(), CommodoreError> {
    let node = render_cluster(layout, false)?;
    let (components, aliases, cspecs) = read_component_specs(&node)?;
    let mut registered = BTreeSet::new();
    for cn in &components {
        let Some(spec) = cspecs.get(cn) else { continue };
        if !layout.component_dir(cn).is_dir() {
            deps.warnings.push(format!(
                "Skipping registration of component {cn}: repo is not available"
            ));
            continue;
        }
        registered.insert(cn.clone());
        deps.components.insert(cn.clone(), spec.clone());
    }
    // Every component's and instance's `path` is checked before the first
    // link is made.
    let instances = aliases.iter().filter(|(_, cn)| registered.contains(*cn));
    for name in registered.iter().chain(instances.map(|(alias, _)| alias)) {
        let checkout = layout.component_dir(name);
        if checkout.is_dir() {
            checkout_subdir("component", name, &checkout, &cspecs[name])?;
        }
    }
    for cn in &registered {
        let dir = instance_dir(layout, cn, &cspecs[cn]);
        relsymlink(
            &dir.join("class").join(format!("{cn}.yml")),
            &layout.components_dir(),
            &format!("{cn}.yml"),
        )?;
        relsymlink(
            &dir.join("class").join("defaults.yml"),
            &layout.defaults_dir(),
            &format!("{cn}.yml"),
        )?;
        for lib in lib_files(&dir)? {
            let name = lib
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            check_library_name(&registered, cn, &name)?;
            relsymlink(&lib, &layout.lib_dir(), &name)?;
        }
    }
    let pruned: Vec<&String> = aliases
        .iter()
        .filter(|(_, c)| !registered.contains(*c))
        .map(|(a, _)| a)
        .collect();
    if !pruned.is_empty() {
        deps.warnings.push(format!(
            "Dropping alias(es) {pruned:?} with missing component(s)."
        ));
    }
    for (alias, cn) in &aliases {
        if !registered.contains(cn) {
            continue;
        }
        deps.instances.insert(alias.clone(), cn.clone());
        deps.instance_specs
            .insert(alias.clone(), cspecs[alias].clone());
        if alias == cn {
            continue;
        }
        if !layout.component_dir(alias).is_dir() {
            return Err(CommodoreError::new(format!(
                "Missing alias checkout for '{alias} as {cn}'"
            ))
            .hint(format!(
                "check out the component {cn} in dependencies/{alias}"
            )));
        }
        let dir = instance_dir(layout, alias, &cspecs[alias]);
        relsymlink(
            &dir.join("class").join(format!("{cn}.yml")),
            &layout.components_dir(),
            &format!("{alias}.yml"),
        )?;
        relsymlink(
            &dir.join("class").join("defaults.yml"),
            &layout.defaults_dir(),
            &format!("{alias}.yml"),
        )?;
    }
    Ok(())
}

/// Commodore's `render_target`: the target of an instance (or the
/// bootstrap target when `instance` is `cluster`).
pub fn render_target(
    layout: &Layout,
    deps: &Dependencies,
    instance: &str,
    component: &str,
) -> Result<Value, CommodoreError> {
    let bootstrap = instance == BOOTSTRAP;
    let mut classes = vec![s(&format!("params.{BOOTSTRAP}"))];
    for c in deps.components.keys() {
        let stem = if c == component && instance != component {
            instance
        } else {
            c
        };
        if layout.defaults_dir().join(format!("{stem}.yml")).is_file() {
            classes.push(s(&format!("defaults.{stem}")));
        }
    }
    classes.push(s("global.commodore"));
    let mut params = Map::default();
    params.insert("_instance".into(), s(instance));
    if !bootstrap {
        if !layout
            .components_dir()
            .join(format!("{instance}.yml"))
            .is_file()
        {
            return Err(CommodoreError::new(format!(
                "Target rendering failed for {instance}: component class is missing"
            )));
        }
        classes.push(s(&format!("components.{instance}")));
        let spec = deps
            .instance_specs
            .get(instance)
            .cloned()
            .unwrap_or(DependencySpec {
                url: String::new(),
                version: String::new(),
                path: String::new(),
            });
        params.insert(
            "_base_directory".into(),
            s(&instance_dir(layout, instance, &spec).to_string_lossy()),
        );
        // Host-specific in Commodore too (its install directory and its
        // Python interpreter).
        let wrapper = kustomize_wrapper(layout)?;
        params.insert("_kustomize_wrapper".into(), s(&wrapper.to_string_lossy()));
        params.insert("_python3".into(), s(&python3_on_path()));
        params.insert(
            "kapitan".into(),
            map(vec![("vars", map(vec![("target", s(instance))]))]),
        );
    }
    if component != instance {
        let ckey = parameters_key(component);
        let tkey = parameters_key(instance);
        params.insert(tkey.clone(), Value::Map(Map::default()));
        params.insert(ckey, s(&format!("${{{tkey}}}")));
    }
    Ok(map(vec![
        ("classes", Value::List(classes)),
        ("parameters", Value::Map(params)),
    ]))
}

/// What `${_kustomize_wrapper}` runs, as Commodore's `run-kustomize`:
/// `run-kustomize <output-dir> [kustomize build args...]` with the
/// kustomization directory in `$INPUT_DIR`.
const KUSTOMIZE_WRAPPER: &str = r#"#!/bin/sh
# Written by strata for Commodore components that compile through
# ${_kustomize_wrapper} (an `external` compile entry):
#   INPUT_DIR=<kustomization> run-kustomize <output-dir> [kustomize build args...]
set -e
kustomize=$(command -v kustomize) || {
  echo "kustomize not found on PATH ($PATH): install kustomize (https://kubectl.docs.kubernetes.io/installation/kustomize/)" >&2
  exit 7
}
if [ -z "$INPUT_DIR" ]; then
  echo "run-kustomize: INPUT_DIR is not set: the compile entry's env_vars must name the kustomization directory" >&2
  exit 2
fi
if [ -z "$1" ]; then
  echo "run-kustomize: the first argument must be the output directory" >&2
  exit 2
fi
mkdir -p "$1"
exec "$kustomize" build "$INPUT_DIR" -o "$@"
"#;

/// Writes the kustomize wrapper to `dependencies/.strata/run-kustomize`
/// (Commodore ships it in its install directory) and returns its path.
fn kustomize_wrapper(layout: &Layout) -> Result<PathBuf, CommodoreError> {
    let path = layout.work_dir.join("dependencies/.strata/run-kustomize");
    if std::fs::read_to_string(&path).ok().as_deref() != Some(KUSTOMIZE_WRAPPER) {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| CommodoreError::io(dir, e))?;
        }
        std::fs::write(&path, KUSTOMIZE_WRAPPER).map_err(|e| CommodoreError::io(&path, e))?;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| CommodoreError::io(&path, e))?;
    }
    Ok(path)
}

/// `${_python3}`: Commodore gives its own interpreter, else `python3` from
/// PATH, else `NOT_AVAILABLE`; strata has no interpreter of its own, so it
/// takes the first `python3` on PATH (an absolute path, as compile entries
/// use it as an input path).
fn python3_on_path() -> String {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("python3"))
        .find(|p| p.is_file())
        .map(|p| absolute(&p).to_string_lossy().into_owned())
        .unwrap_or_else(|| "NOT_AVAILABLE".into())
}

fn write_target(
    layout: &Layout,
    deps: &Dependencies,
    instance: &str,
    component: &str,
) -> Result<(), CommodoreError> {
    let t = render_target(layout, deps, instance, component)?;
    write(
        &layout.targets_dir().join(format!("{instance}.yml")),
        &commodore_yaml(&[t]),
    )
}

/// Reads the cluster id and tenant from `params/cluster.yml`.
pub fn read_cluster_and_tenant(layout: &Layout) -> Result<(String, String), CommodoreError> {
    let file = layout.params_file();
    if !file.is_file() {
        return Err(
            CommodoreError::new(format!("params file for {BOOTSTRAP} does not exist"))
                .file(&file)
                .hint("pass --cluster-file with the cluster's Lieutenant object"),
        );
    }
    let text = std::fs::read_to_string(&file).map_err(|e| CommodoreError::io(&file, e))?;
    let v = compile::pyyaml_load::load(&text).map_err(|e| CommodoreError::new(e).file(&file))?;
    let get = |k: &str| {
        v.get_path(&["parameters", BOOTSTRAP, k])
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| {
                CommodoreError::new(format!("parameters.{BOOTSTRAP}.{k} is missing")).file(&file)
            })
    };
    Ok((get("name")?, get("tenant")?))
}

/// Prepares the working directory as `commodore catalog compile --local`
/// does: resets targets and component symlinks, registers packages and
/// components, writes every target.
pub fn setup(layout: &Layout, cluster_id: &str) -> Result<Dependencies, CommodoreError> {
    let (current, _tenant) = read_cluster_and_tenant(layout)?;
    if current != cluster_id {
        return Err(CommodoreError::new(format!(
            "[Local mode] Cluster ID mismatch: local state targets {current}, compilation was requested for {cluster_id}"
        )));
    }
    reset_dir(&layout.targets_dir())?;
    reset_dir(&layout.defaults_dir())?;
    reset_dir(&layout.components_dir())?;
    for d in [layout.lib_dir(), layout.dependencies_dir().join("libs")] {
        std::fs::create_dir_all(&d).map_err(|e| CommodoreError::io(&d, e))?;
    }
    let mut deps = Dependencies::default();
    write_target(layout, &deps, BOOTSTRAP, BOOTSTRAP)?;
    register_packages(layout, &mut deps)?;
    register_components(layout, &mut deps)?;
    for (alias, cn) in &deps.instances.clone() {
        write_target(layout, &deps, alias, cn)?;
    }
    write_target(layout, &deps, BOOTSTRAP, BOOTSTRAP)?;
    Ok(deps)
}

/// The first step of Commodore's regular (fetching) mode, once
/// `params/cluster.yml` is written: resets targets and component symlinks
/// (and package symlinks left by an earlier run) and writes the bootstrap
/// target, so the hierarchy can be rendered to discover packages.
pub fn prepare_regular(layout: &Layout) -> Result<(), CommodoreError> {
    reset_dir(&layout.targets_dir())?;
    reset_dir(&layout.defaults_dir())?;
    reset_dir(&layout.components_dir())?;
    let classes = layout.classes_dir();
    if let Ok(entries) = std::fs::read_dir(&classes) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_symlink() {
                std::fs::remove_file(&p).map_err(|e| CommodoreError::io(&p, e))?;
            }
        }
    }
    for d in [layout.lib_dir(), layout.dependencies_dir().join("libs")] {
        std::fs::create_dir_all(&d).map_err(|e| CommodoreError::io(&d, e))?;
    }
    write_target(layout, &Dependencies::default(), BOOTSTRAP, BOOTSTRAP)
}

/// The packages the hierarchy uses (`pkg.` entries of `applications`) and
/// their specs, rendered with missing classes ignored (packages are not
/// there yet), as Commodore's `fetch_packages` reads them.
pub fn package_specs(layout: &Layout) -> Result<BTreeMap<String, DependencySpec>, CommodoreError> {
    let node = render_cluster(layout, true)?;
    let specs = params_of(&node, "packages");
    let mut out = BTreeMap::new();
    for p in discover_packages(&node.applications)? {
        if !specs
            .and_then(|s| s.as_map())
            .is_some_and(|m| m.contains_key(&p))
        {
            return Err(CommodoreError::new(format!(
                "Unknown package '{p}'. Please add it to 'parameters.packages'"
            )));
        }
        let spec = parse_spec("package", &p, specs.and_then(|s| s.get_path(&[&p])), None)?;
        out.insert(p, spec);
    }
    Ok(out)
}

/// The component instances to fetch, with their specs, after linking the
/// fetched packages into the hierarchy (so a package can add components
/// and change their versions), as Commodore's `fetch_components` reads
/// them. Keys are instance names (a plain component is its own instance).
pub fn instance_specs(layout: &Layout) -> Result<BTreeMap<String, DependencySpec>, CommodoreError> {
    let mut deps = Dependencies::default();
    register_packages(layout, &mut deps)?;
    let node = render_cluster(layout, false)?;
    // Every component (also one used only through aliases) and every alias.
    let (_, _, cspecs) = read_component_specs(&node)?;
    Ok(cspecs)
}

fn metadata<'a>(cluster: &'a Value, component: &str) -> Option<&'a Map> {
    cluster
        .get_path(&[parameters_key(component).as_str(), "_metadata"])
        .and_then(Value::as_map)
}

/// A library alias becomes a link in `dependencies/lib/` and its target a
/// path below the component's `lib/`: a component's defaults (a pull
/// request's) named `../../../home/runner/.bashrc` as an alias, and the
/// link replaced that file, outside every working directory.
fn check_library_alias(cn: &str, libalias: &str, libname: &Value) -> Result<(), CommodoreError> {
    if !is_plain_name(libalias) {
        return Err(CommodoreError::new(format!(
            "invalid template library alias {libalias:?} of component '{cn}' (parameters.{}._metadata.library_aliases): an alias becomes a file name in dependencies/lib, so it may not be empty, `.` or `..`, nor hold `/`, `\\` or control characters",
            parameters_key(cn)
        )));
    }
    let name = libname.as_str().unwrap_or("");
    let leaves = Path::new(name)
        .components()
        .any(|c| !matches!(c, std::path::Component::Normal(_)))
        || name.contains('\\')
        || name.chars().any(char::is_control);
    if leaves {
        return Err(CommodoreError::new(format!(
            "invalid template library {name:?} for alias '{libalias}' of component '{cn}' (parameters.{}._metadata.library_aliases): it names a file of the component's lib/ directory, so it may not be absolute nor hold `..`, `\\` or control characters",
            parameters_key(cn)
        )));
    }
    Ok(())
}

/// Library aliases (`_metadata.library_aliases`) with Commodore's prefix
/// and collision checks, then their symlinks in `dependencies/lib/`.
fn library_aliases(
    layout: &Layout,
    deps: &Dependencies,
    cluster: &Value,
) -> Result<Vec<String>, CommodoreError> {
    let mut warnings = Vec::new();
    let prefixes: BTreeSet<String> = cluster
        .get_path(&["components"])
        .and_then(Value::as_map)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    let mut collisions: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for cn in deps.components.keys() {
        let meta = metadata(cluster, cn);
        let mut additional = meta
            .and_then(|m| m.get("replaces"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if !additional.is_empty() && deps.components.contains_key(&additional) {
            let om = metadata(cluster, &additional);
            let deprecated = om
                .and_then(|m| m.get("deprecated"))
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let replaced_by = om
                .and_then(|m| m.get("replaced_by"))
                .and_then(Value::as_str)
                .unwrap_or("");
            if !deprecated {
                warnings.push(format!("Ignoring additional library prefix '{additional}' requested by '{cn}'. Component '{additional}' is also deployed on the cluster and isn't deprecated."));
                additional.clear();
            } else if replaced_by != cn {
                warnings.push(format!("Ignoring additional library prefix '{additional}' requested by '{cn}'. Component '{additional}' is also deployed on the cluster and hasn't nominated '{cn}' as its replacement."));
                additional.clear();
            }
        }
        let Some(aliases) = meta
            .and_then(|m| m.get("library_aliases"))
            .and_then(Value::as_map)
        else {
            continue;
        };
        for (libalias, libname) in aliases {
            check_library_alias(cn, libalias, libname)?;
            for p in &prefixes {
                if p == cn || (!additional.is_empty() && *p == additional) {
                    continue;
                }
                if libalias.starts_with(p.as_str()) {
                    return Err(CommodoreError::new(format!(
                        "Invalid alias prefix '{p}' for template library alias of component '{cn}'"
                    )));
                }
            }
            collisions
                .entry(libalias.clone())
                .or_default()
                .insert(cn.clone());
        }
    }
    for (libalias, cnames) in &collisions {
        if cnames.len() > 1 {
            let all = if cnames.len() > 2 { "all" } else { "both" };
            return Err(CommodoreError::new(format!(
                "Components {} {all} define component library alias '{libalias}'",
                format_list(cnames)
            )));
        }
    }
    for (cn, spec) in &deps.components {
        let Some(aliases) = metadata(cluster, cn)
            .and_then(|m| m.get("library_aliases"))
            .and_then(Value::as_map)
        else {
            continue;
        };
        let dir = instance_dir(layout, cn, spec).join("lib");
        for (libalias, libname) in aliases {
            let libname = libname.as_str().unwrap_or("");
            let f = dir.join(libname);
            if libname.is_empty() || !f.is_file() {
                warnings.push(format!("[WARN] '{cn}' template library alias '{libalias}' refers to nonexistent template library '{libname}'"));
                continue;
            }
            relsymlink(&f, &layout.lib_dir(), libalias)?;
        }
    }
    Ok(warnings)
}

/// Checks `multi_instance`, `component_versions` and version overrides
/// without URL, as Commodore does before compiling.
fn verify(
    deps: &Dependencies,
    cluster: &Value,
    nodes: &BTreeMap<String, RenderedNode>,
) -> Result<(), CommodoreError> {
    if let Some(Value::Map(m)) = cluster.get_path(&["component_versions"]) {
        if !m.is_empty() {
            return Err(CommodoreError::new("Specifying component versions in parameter `component_versions` is no longer suppported. Please migrate your configuration to parameter `components`."));
        }
    }
    for (alias, cn) in &deps.instances {
        if alias == cn {
            continue;
        }
        let multi = metadata(cluster, cn)
            .and_then(|m| m.get("multi_instance"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if !multi {
            return Err(CommodoreError::new(format!(
                "Component {cn} with alias {alias} does not support instantiation."
            ))
            .hint(format!(
                "the component must set parameters.{}._metadata.multi_instance: true",
                parameters_key(cn)
            )));
        }
        let cv = cluster.get_path(&["components", alias.as_str()]);
        let has_version = ["url", "version"].iter().any(|k| {
            cv.and_then(|c| c.get_path(&[k]))
                .is_some_and(|v| !v.is_null())
        });
        let flag = |m: Option<&Map>| {
            m.and_then(|m| m.get("multi_version"))
                .and_then(Value::as_bool)
                .unwrap_or(false)
        };
        let ameta = nodes
            .get(alias)
            .and_then(|n| {
                n.parameters
                    .get_path(&[parameters_key(cn).as_str(), "_metadata"])
            })
            .and_then(Value::as_map);
        if has_version && !(flag(metadata(cluster, cn)) && flag(ameta)) {
            return Err(CommodoreError::new(format!(
                "Component {cn} with alias {alias} does not support overriding instance version."
            ))
            .hint(format!(
                "the component must set parameters.{}._metadata.multi_version: true",
                parameters_key(cn)
            )));
        }
    }
    let alias_only: BTreeSet<&String> = deps
        .instances
        .iter()
        .filter(|(a, c)| a != c)
        .map(|(a, _)| a)
        .collect();
    let mut errors = Vec::new();
    if let Some(Value::Map(cs)) = cluster.get_path(&["components"]) {
        for (name, spec) in cs {
            if alias_only.contains(name) {
                let base = &deps.instances[name];
                if !cs.contains_key(base) {
                    errors.push(format!("component '{base}' (imported as {name})"));
                }
            } else if spec.get_path(&["url"]).is_none() {
                errors.push(format!("component '{name}'"));
            }
        }
    }
    if let Some(Value::Map(ps)) = cluster.get_path(&["packages"]) {
        for (name, spec) in ps {
            if spec.get_path(&["url"]).is_none() {
                errors.push(format!("package '{name}'"));
            }
        }
    }
    if !errors.is_empty() {
        let (sfx, have) = if errors.len() > 1 {
            ("s", "have")
        } else {
            ("", "has")
        };
        let set: BTreeSet<String> = errors.into_iter().collect();
        let names: Vec<&String> = set.iter().collect();
        let joined = match names.len() {
            1 => names[0].clone(),
            n => format!(
                "{} and {}",
                names[..n - 1]
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                names[n - 1]
            ),
        };
        return Err(CommodoreError::new(format!(
            "Version override{sfx} specified for {joined} which {have} no URL"
        ))
        .hint("an entry in parameters.components/packages with only `version` is usually a typo in the name"));
    }
    Ok(())
}

/// What `compile_catalog` did.
#[derive(Debug, Default)]
pub struct CatalogReport {
    pub deps: Dependencies,
    pub instances: Vec<String>,
    pub refs: usize,
    pub warnings: Vec<String>,
}

/// Settings of one catalog compile.
#[derive(Debug, Clone)]
pub struct CatalogOptions {
    pub work_dir: PathBuf,
    pub cluster_id: String,
    pub parallelism: usize,
    /// Install the components' jsonnet dependencies into `vendor/` before
    /// compiling (Commodore's regular mode); `None` in local mode.
    pub jsonnet: Option<crate::fetch::jsonnet::JbOptions>,
    /// A pull request's compile (`--confine`, a `pull_request*` event):
    /// class files must resolve inside the working directory, the compile
    /// reads only below these roots (the working directory is added), and
    /// no Kapitan dependency comes from this machine.
    pub confine: Option<crate::compile::confine::Confine>,
}

/// Commodore's `fetch_jsonnet_libraries`: each component's
/// `jsonnetfile.jsonnet` is rendered to `jsonnetfile.json` with
/// `parameters.<component>.jsonnetfile_parameters` as external variables,
/// the working directory gets a `jsonnetfile.json` naming every component
/// checkout and `dependencies/lib` as local sources, and its dependencies
/// (the components' own, transitively) are installed into `vendor/`, with
/// no stale lock file.
fn install_jsonnet_dependencies(
    layout: &Layout,
    deps: &Dependencies,
    cluster: &Value,
    jb: &crate::fetch::jsonnet::JbOptions,
) -> Result<(), CommodoreError> {
    let mut sources = Vec::new();
    for cn in deps.components.keys() {
        let dir = layout.component_dir(cn);
        render_jsonnetfile(&dir, cn, cluster, jb.confine.as_ref())?;
        sources.push(serde_json::json!({"source": {"local": {"directory":
            relpath(&dir, &layout.work_dir).to_string_lossy()}}}));
    }
    sources.push(serde_json::json!({"source": {"local": {"directory":
        relpath(&layout.lib_dir(), &layout.work_dir).to_string_lossy()}}}));
    let file = serde_json::json!({"version": 1, "dependencies": sources, "legacyImports": true});
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    serde::Serialize::serialize(&file, &mut ser).map_err(from_display)?;
    buf.push(b'\n');
    write(
        &layout.work_dir.join("jsonnetfile.json"),
        &String::from_utf8_lossy(&buf),
    )?;
    let lock = layout.work_dir.join("jsonnetfile.lock.json");
    if lock.exists() {
        std::fs::remove_file(&lock).map_err(|e| CommodoreError::io(&lock, e))?;
    }
    let opts = crate::fetch::jsonnet::JbOptions {
        update: true,
        ..jb.clone()
    };
    crate::fetch::jsonnet::install(&layout.work_dir, &opts).map_err(from_display)?;
    Ok(())
}

/// Commodore's bundled jsonnet libraries (its install directory is a
/// search path, so components import them as `lib/commodore.libjsonnet`,
/// `lib/kube.libjsonnet`, ...), with their licences in `src/commodore/lib/`.
pub const BUNDLED_LIBS: [(&str, &str); 4] = [
    (
        "lib/commodore.libjsonnet",
        include_str!("lib/commodore.libjsonnet"),
    ),
    ("lib/kube.libjsonnet", include_str!("lib/kube.libjsonnet")),
    ("lib/kube.libsonnet", include_str!("lib/kube.libsonnet")),
    (
        "lib/kube-libsonnet/kube.libsonnet",
        include_str!("lib/kube-libsonnet/kube.libsonnet"),
    ),
];

/// Writes [`BUNDLED_LIBS`] under `root` (a search path for the compile).
fn write_bundled_libs(root: &Path) -> Result<(), CommodoreError> {
    for (rel, text) in BUNDLED_LIBS {
        write(&root.join(rel), text)?;
    }
    Ok(())
}

/// Kapitan's dependency fetch as Commodore runs it before compiling
/// (`--fetch`): every `parameters.kapitan.dependencies` entry of the
/// `instances` (instance -> component), relative `output_path`s below
/// `output_path`, absolute ones (`${_base_directory}/helmcharts/...`) only
/// below `roots`. Unlike Commodore (`--force-fetch`), what is already
/// there is kept, so a fetched chart is not downloaded again. Errors name
/// the component, the dependency and (for helm) the chart.
pub(crate) fn fetch_kapitan_dependencies(
    prepared: &compile::Prepared,
    instances: &BTreeMap<String, String>,
    output_path: &Path,
    roots: Vec<PathBuf>,
    cache_dir: &Path,
    confined: bool,
) -> Result<Vec<String>, CommodoreError> {
    use crate::fetch::kapitan as deps;
    let selected: Vec<String> = instances.keys().cloned().collect();
    let (items, _) = deps::select(&prepared.dumps, &selected, true, false);
    if items.is_empty() {
        return Ok(Vec::new());
    }
    // A component's own chart and library sources come from the network
    // (its CI on a pull request fetches them); one on this machine is the
    // runner's, which the pull request chose.
    if confined {
        if let Some((target, source)) = deps::first_local_source(&items) {
            return Err(CommodoreError::new(format!(
                "instance {target}: Kapitan dependency {}: {}",
                crate::diagnostics::escape_controls(&crate::git::redact_url(&source)),
                crate::fetch::CONFINED_FETCH
            ))
            .hint("fetch from the network (https, ssh), commit the files, or compile in a trusted job"));
        }
    }
    let opts = deps::DepsOptions {
        output_path: output_path.to_path_buf(),
        cache_dir: cache_dir.to_path_buf(),
        force: false,
        absolute_roots: roots,
        confined: false,
        withhold_env: confined,
    };
    deps::fetch_dependencies(&items, &opts).map_err(|e| {
        let component = instances.get(&e.target).cloned().unwrap_or_default();
        let what = if component == e.target || component.is_empty() {
            format!("component {}", e.target)
        } else {
            format!("component {component} (instance {})", e.target)
        };
        let mut err = CommodoreError::new(format!(
            "{what}: Kapitan dependency {}: {}",
            e.source_shown, e.message
        ));
        if let Some(h) = e.hint {
            err = err.hint(h);
        }
        err
    })
}

/// A missing helm binary's error names the component that needs it, not
/// only the target and the chart.
pub(crate) fn name_component_needing_helm(
    mut err: CommodoreError,
    component: &str,
) -> CommodoreError {
    if err.message.contains(compile::helm::HELM_MISSING) {
        err.message = format!("component {component}: {}", err.message);
    }
    err
}

/// Compiles the catalog of `cluster_id` in a prepared working directory.
pub fn compile_catalog(opts: &CatalogOptions) -> Result<CatalogReport, CommodoreError> {
    compile_catalog_with(opts, None)
}

/// [`compile_catalog`], fetching the instances' Kapitan `dependencies`
/// first when `kapitan_cache` (their cache directory) is given.
pub(crate) fn compile_catalog_with(
    opts: &CatalogOptions,
    kapitan_cache: Option<&Path>,
) -> Result<CatalogReport, CommodoreError> {
    let layout = Layout::new(&opts.work_dir);
    let deps = setup(&layout, &opts.cluster_id)?;
    let inv_opts = InventoryOptions {
        path: layout.inventory_dir(),
        applications_negate_earlier_only: true,
        // The components' classes are links into `dependencies/`: a
        // committed `class/defaults.yml -> /home/runner/...` was read.
        confine: opts.confine.as_ref().map(|_| {
            layout
                .work_dir
                .canonicalize()
                .unwrap_or_else(|_| layout.work_dir.clone())
        }),
        // A package compile's scratch inventory (a temporary directory)
        // links the package and the values files of the checkout.
        confine_also: opts
            .confine
            .as_ref()
            .map(|c| c.roots().to_vec())
            .unwrap_or_default(),
        ..Default::default()
    };
    let inv = Inventory::load(&inv_opts).map_err(from_display)?;
    let nodes = inv.render(&[]).map_err(from_display)?;
    let cluster = nodes
        .get(BOOTSTRAP)
        .map(|n| n.parameters.clone())
        .ok_or_else(|| CommodoreError::new("the bootstrap target `cluster` did not render"))?;
    let mut warnings = deps.warnings.clone();
    warnings.extend(library_aliases(&layout, &deps, &cluster)?);
    verify(&deps, &cluster, &nodes)?;
    if let Some(jb) = &opts.jsonnet {
        install_jsonnet_dependencies(&layout, &deps, &cluster, jb)?;
    }

    // Locked while this process lives: the next compile removes the ones
    // killed runs left (re-probe 10).
    let temp = crate::fswalk::locked_temp_dir(&layout.work_dir, ".strata-catalog-")
        .map_err(|e| CommodoreError::io(&layout.work_dir, e))?;
    let tmp = temp.path();
    let refs_dir = tmp.join("catalog").join("refs");
    let refs = refs::write_refs(&refs_dir, &nodes, &deps.instances)?;

    // Commodore's own jsonnet libraries, found as `lib/commodore.libjsonnet`, ...
    let libroot = tmp.join("commodore-lib");
    write_bundled_libs(&libroot)?;
    let mut search_paths = Vec::new();
    let vendor = layout.work_dir.join("vendor");
    if vendor.is_dir() {
        search_paths.push(vendor);
    }
    search_paths.push(layout.work_dir.clone());
    search_paths.push(layout.dependencies_dir());
    search_paths.push(libroot.clone());
    let prepared = compile::prepare(&nodes, &layout.inventory_dir()).map_err(from_display)?;
    let selected: Vec<String> = deps.instances.keys().cloned().collect();
    if let Some(cache) = kapitan_cache {
        warnings.extend(
            fetch_kapitan_dependencies(
                &prepared,
                &deps.instances,
                &layout.work_dir,
                vec![layout.work_dir.clone()],
                cache,
                opts.confine.is_some(),
            )?
            .into_iter()
            .filter_map(|l| l.strip_prefix("warning: ").map(str::to_string)),
        );
    }
    let copts = CompileOptions {
        inventory_path: layout.inventory_dir(),
        search_paths,
        indent: 2,
        multiline: MultilineStyle::Literal,
        null_as_empty: false,
        parallelism: opts.parallelism.max(1),
        python: Default::default(),
        absolute_roots: base_directories(&layout, &deps),
        confine: opts.confine.clone().map(|mut c| {
            c.add(&layout.work_dir);
            c
        }),
        memory: None,
    };
    let build = tmp.join("build");
    // A missing jsonnet import (in a compile entry or a jsonnet filter):
    // the component, its jsonnetfile.json and the fetch step.
    let skipped = format!(
        "`strata catalog compile {}` without --local (Commodore's fetch step)",
        opts.cluster_id
    );
    let vendor = layout.work_dir.join("vendor");
    let fetch = ImportFetch {
        skipped: opts.jsonnet.is_none().then_some(skipped.as_str()),
        vendor: &vendor,
        other: None,
    };
    let with_import_hint = |err: CommodoreError, instance: &str| {
        let hint = deps.instances.get(instance).and_then(|cn| {
            // The checkout whose jsonnetfile.json the fetch step installs.
            let dir = layout.component_dir(cn);
            missing_import_hint(&err.message, cn, instance, &dir, &fetch)
        });
        match hint {
            Some(h) if err.hint.is_none() => err.hint(h),
            _ => err,
        }
    };
    let report =
        compile::compile_into(&prepared, &selected, &copts, &build, &|_| {}).map_err(|e| {
            let instance = e.target.clone().unwrap_or_default();
            let err = match deps.instances.get(&instance) {
                Some(c) => name_component_needing_helm(from_compile(e), c),
                None => from_compile(e),
            };
            with_import_hint(err, &instance)
        })?;
    warnings.extend(report.notices);
    let compiled = build.join("compiled");
    if !refs.is_empty() {
        for instance in &selected {
            if let Some(plan) = prepared.plans.get(instance) {
                compile_ref_tokens(&compiled.join(&plan.dir), plan, &refs)?;
            }
        }
    }
    for (instance, cn) in &deps.instances {
        if let Some(node) = nodes.get(instance) {
            let spec = &deps.instance_specs[instance];
            let dir = instance_dir(&layout, instance, spec);
            warnings.extend(
                postprocess::run_filters(
                    &compiled,
                    instance,
                    cn,
                    &dir,
                    node,
                    &layout.work_dir,
                    copts.confine.as_ref(),
                )
                .map_err(|e| with_import_hint(e, instance))?,
            );
        }
    }
    let manifests = tmp.join("catalog").join("manifests");
    std::fs::create_dir_all(&manifests).map_err(|e| CommodoreError::io(&manifests, e))?;
    for instance in deps.instances.keys() {
        let src = compiled.join(instance);
        if src.is_dir() {
            copy_tree(&src, &manifests)?;
        }
    }
    install(&layout, tmp)?;
    Ok(CatalogReport {
        instances: deps.instances.keys().cloned().collect(),
        deps,
        refs: refs.len(),
        warnings,
    })
}

/// Each instance's `${_base_directory}` (its checkout under
/// `dependencies/`), the one place outside the catalog an absolute
/// `output_path` of its compile entries may name: components that run
/// kustomize generate their `kustomization.yaml` there.
fn base_directories(layout: &Layout, deps: &Dependencies) -> BTreeMap<String, Vec<PathBuf>> {
    deps.instance_specs
        .iter()
        .map(|(i, spec)| (i.clone(), vec![absolute(&instance_dir(layout, i, spec))]))
        .collect()
}

/// Rewrites reference tokens in a target's compiled files the way Kapitan
/// does for jsonnet and Jinja2 output (copied files keep them as written).
fn compile_ref_tokens(
    root: &Path,
    plan: &compile::model::TargetPlan,
    refs: &BTreeMap<String, String>,
) -> Result<(), CommodoreError> {
    let copied: Vec<PathBuf> = plan
        .entries
        .iter()
        .filter(|e| e.input_type == compile::model::InputType::Copy)
        .map(|e| root.join(e.output_path.as_deref().unwrap_or("")))
        .collect();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.filter_map(Result::ok) {
            let p = e.path();
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_file() && !copied.iter().any(|c| p.starts_with(c)) {
                let Ok(text) = std::fs::read_to_string(&p) else {
                    continue;
                };
                if text.contains("?{") {
                    let new = refs::compile_tokens(&text, refs);
                    if new != text {
                        std::fs::write(&p, new).map_err(|e| CommodoreError::io(&p, e))?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// Copies `src`'s contents into `dst` (`shutil.copytree(dirs_exist_ok=True)`),
/// keeping symlinks as symlinks.
fn copy_tree(src: &Path, dst: &Path) -> Result<(), CommodoreError> {
    std::fs::create_dir_all(dst).map_err(|e| CommodoreError::io(dst, e))?;
    let mut entries: Vec<_> = std::fs::read_dir(src)
        .map_err(|e| CommodoreError::io(src, e))?
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let from = e.path();
        let to = dst.join(e.file_name());
        let meta = std::fs::symlink_metadata(&from).map_err(|e| CommodoreError::io(&from, e))?;
        if meta.is_dir() {
            copy_tree(&from, &to)?;
        } else {
            if std::fs::symlink_metadata(&to).is_ok() {
                let _ = std::fs::remove_file(&to);
            }
            std::fs::copy(&from, &to).map_err(|e| CommodoreError::io(&to, e))?;
        }
    }
    Ok(())
}

/// Moves the new `catalog/manifests`, `catalog/refs` and `compiled/` into
/// the working directory, each with one rename (the old ones go to the
/// temporary directory, which is removed afterwards).
fn install(layout: &Layout, tmp: &Path) -> Result<(), CommodoreError> {
    let catalog = layout.catalog_dir();
    std::fs::create_dir_all(&catalog).map_err(|e| CommodoreError::io(&catalog, e))?;
    let old = tmp.join("old");
    std::fs::create_dir_all(&old).map_err(|e| CommodoreError::io(&old, e))?;
    let moves = [
        (
            tmp.join("catalog").join("manifests"),
            catalog.join("manifests"),
            "manifests",
        ),
        (
            tmp.join("catalog").join("refs"),
            catalog.join("refs"),
            "refs",
        ),
        (
            tmp.join("build").join("compiled"),
            layout.work_dir.join("compiled"),
            "compiled",
        ),
    ];
    for (new, dest, name) in moves {
        if std::fs::symlink_metadata(&dest).is_ok() {
            std::fs::rename(&dest, old.join(name)).map_err(|e| CommodoreError::io(&dest, e))?;
        }
        if new.exists() {
            std::fs::rename(&new, &dest).map_err(|e| CommodoreError::io(&dest, e))?;
        }
    }
    Ok(())
}

/// Lists the dependencies of the working directory's cluster without
/// compiling (used by `strata inventory components|packages|show`).
pub fn discover(work_dir: &Path, cluster_id: &str) -> Result<Dependencies, CommodoreError> {
    setup(&Layout::new(work_dir), cluster_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apps(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn aliases_and_duplicates() {
        let (c, a) = discover_components(&apps(&["a", "b as b2", "b", "pkg.x"])).unwrap();
        assert_eq!(c.into_iter().collect::<Vec<_>>(), vec!["a", "b"]);
        assert_eq!(a.get("b2").map(String::as_str), Some("b"));
        assert_eq!(a.get("b").map(String::as_str), Some("b"));
        let e = discover_components(&apps(&["a", "b as a"])).unwrap_err();
        assert!(
            e.message
                .contains("Component 'b' aliases existing component 'a'"),
            "{e}"
        );
        let e = discover_components(&apps(&["a as x", "b as x"])).unwrap_err();
        assert!(e.message.contains("Duplicate component alias 'x'"), "{e}");
        assert!(check_identity_duplicates(&apps(&["c", "c as c"])).is_err());
        assert!(check_identity_duplicates(&apps(&["c as c"])).is_ok());
    }

    #[test]
    fn names_that_are_not_one_path_component_are_refused() {
        // They became paths: `..` read a checkout outside dependencies/ and
        // left links outside the working directory.
        for app in [
            "nginx as ../../../esc",
            "../esc",
            "nginx as a/b",
            "nginx as ..",
            "nginx as ",
            "x\\y",
        ] {
            let e = discover_components(&apps(&[app])).unwrap_err();
            assert!(e.message.starts_with("invalid "), "{app}: {e}");
        }
        let e = discover_packages(&apps(&["pkg.../../../esc"])).unwrap_err();
        assert!(e.message.contains("invalid package name"), "{e}");
        assert!(discover_components(&apps(&["nginx as nginx-2", "cert-manager"])).is_ok());
    }

    #[test]
    fn package_names() {
        assert!(discover_packages(&apps(&["pkg.params"])).is_err());
        assert!(discover_packages(&apps(&["pkg.t-foo"])).is_err());
        let p = discover_packages(&apps(&["pkg.monitoring", "a"])).unwrap();
        assert_eq!(p.into_iter().collect::<Vec<_>>(), vec!["monitoring"]);
    }

    #[test]
    fn spec_parsing() {
        let v = map(vec![("version", s("v1"))]);
        let e = parse_spec("component", "x", Some(&v), None).unwrap_err();
        assert_eq!(e.message, "Component 'x' is missing field 'url'");
        let base = DependencySpec {
            url: "u".into(),
            version: "v".into(),
            path: "p".into(),
        };
        // `..` led out of dependencies/<name>; Commodore only strips a
        // leading `/`.
        for bad in ["../../esc", "/../esc", "a/../../esc", "..", "//etc"] {
            let spec = map(vec![("url", s("u")), ("version", s("v")), ("path", s(bad))]);
            let e = parse_spec("component", "nginx", Some(&spec), None).unwrap_err();
            assert!(
                e.message
                    .starts_with("invalid parameters.components.nginx.path")
                    && e.message.contains("dependencies/nginx"),
                "{bad}: {e}"
            );
        }
        let inside = map(vec![
            ("url", s("u")),
            ("version", s("v")),
            ("path", s("/a/./b")),
        ]);
        let p = parse_spec("package", "mon", Some(&inside), None).unwrap();
        assert_eq!(p.path, "a/./b");
        let a = parse_spec("component", "y", Some(&v), Some(&base)).unwrap();
        assert_eq!(
            a,
            DependencySpec {
                url: "u".into(),
                version: "v1".into(),
                path: "p".into()
            }
        );
    }

    #[test]
    fn library_names() {
        let comps: BTreeSet<String> = ["foo", "foo-operator"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert!(check_library_name(&comps, "foo", "foo.libsonnet").is_ok());
        assert!(check_library_name(&comps, "foo", "foo-operator.libsonnet").is_err());
        assert!(check_library_name(&comps, "foo", "bar.libsonnet").is_err());
    }

    #[test]
    fn relpaths() {
        assert_eq!(
            relpath(
                Path::new("/w/dependencies/a/class/a.yml"),
                Path::new("/w/inventory/classes/components")
            ),
            PathBuf::from("../../../dependencies/a/class/a.yml")
        );
    }
}
