//! `strata component compile`: Commodore's `component compile` for
//! component authors. A throw-away working directory is laid out the way
//! Commodore 1.35 lays it out (fake cluster facts in `params/cluster.yml`,
//! the component's class and defaults linked in, the values files as
//! classes, one target named after the instance, a fake
//! `lib/argocd.libjsonnet`), the target is compiled with Commodore's search
//! paths and fake, revealed `vaultkv` references, the postprocessing
//! filters run, and the result lands in `<output>/compiled/<instance>`.
//! [`compare_golden`] compares such a `compiled/` directory with a
//! component's golden files byte for byte.

use super::{
    absolute, commodore_yaml, library_aliases, map, relsymlink, s, verify, write,
    write_bundled_libs, CommodoreError, Dependencies, DependencySpec, Layout, BOOTSTRAP,
};
use crate::compile::yaml_dump::MultilineStyle;
use crate::compile::{self, CompileOptions};
use crate::inventory::{Inventory, InventoryOptions};
use crate::value::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What `strata component compile` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct ComponentOptions {
    /// The component's directory (a repository, or a sub-directory of one).
    pub path: PathBuf,
    /// `-f/--values`: extra classes, in order, after the component's class.
    pub values: Vec<PathBuf>,
    /// `-a/--alias`: the instance name (default: the component name).
    pub alias: Option<String>,
    /// `-J/--search-paths`: jsonnet search paths before Commodore's own.
    pub search_paths: Vec<PathBuf>,
    /// `-o/--output`: the catalog lands in `<output>/compiled/<instance>`.
    pub output: PathBuf,
    /// `-n/--name`: the component name (default: the directory's name
    /// without `component-`).
    pub name: Option<String>,
    pub parallelism: usize,
    /// Install the `jsonnetfile.json` dependencies into `<component>/vendor`
    /// first (Commodore runs `jb install`); `None` uses `vendor/` as it is.
    pub jsonnet: Option<crate::fetch::jsonnet::JbOptions>,
    /// Fetch the Kapitan `dependencies` (git, http, helm charts) first,
    /// cached in this directory (Commodore compiles with `--fetch`).
    pub kapitan_cache: Option<PathBuf>,
    /// Where relative `output_path`s of Kapitan dependencies go (Kapitan's
    /// output directory, `-o`); `None`: `output`. A golden check compiles
    /// into a temporary output but fetches where `make golden-diff` would.
    pub dependencies_output: Option<PathBuf>,
    /// A pull request's compile (`--confine`, a `pull_request*` event):
    /// the component's class files and every read of the compile must lie
    /// below these roots (the scratch inventory is added), and no Kapitan
    /// dependency is fetched from this machine (`file://`, a path).
    pub confine: Option<crate::compile::confine::Confine>,
}

/// What a component compile did.
#[derive(Debug, Clone)]
pub struct ComponentReport {
    pub component: String,
    pub instance: String,
    /// `<output>/compiled/<instance>`.
    pub compiled: PathBuf,
    pub warnings: Vec<String>,
}

/// Commodore's fake cluster facts for component tests
/// (`_prepare_kapitan_inventory`).
fn fake_params(component: &str, instance: &str) -> Value {
    map(vec![(
        "parameters",
        map(vec![
            (
                "cluster",
                map(vec![
                    ("catalog_url", s("ssh://git@git.example.com/org/repo.git")),
                    ("name", s("c-green-test-1234")),
                    ("display_name", s("Test Cluster 1234")),
                    ("tenant", s("t-silent-test-1234")),
                    ("tenant_display_name", s("Test Tenant 1234")),
                ]),
            ),
            (
                "facts",
                map(vec![
                    ("distribution", s("test-distribution")),
                    ("cloud", s("cloudscale")),
                    ("region", s("rma1")),
                ]),
            ),
            ("argocd", map(vec![("namespace", s("test"))])),
            (
                "components",
                map(vec![(
                    component,
                    map(vec![
                        ("url", s(&format!("https://example.com/{component}.git"))),
                        ("version", s("master")),
                    ]),
                )]),
            ),
            (
                "kapitan",
                map(vec![
                    ("vars", map(vec![("target", s(instance))])),
                    ("namespace", s("test")),
                ]),
            ),
        ]),
    )])
}

/// The fake Argo CD library Commodore plugs in for every component test.
const FAKE_ARGOCD: &str = "
local ArgoApp(component, namespace, project='', secrets=true, base=null) = {};
local ArgoProject(name) = {};

{
  App: ArgoApp,
  Project: ArgoProject,
}";

/// The repository a component directory belongs to (the nearest ancestor
/// with `.git`) and the component's path inside it.
fn repository_of(dir: &Path) -> (PathBuf, String) {
    let mut cur = Some(dir);
    while let Some(d) = cur {
        if d.join(".git").exists() {
            let sub = dir
                .strip_prefix(d)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            return (d.to_path_buf(), sub);
        }
        cur = d.parent();
    }
    (dir.to_path_buf(), String::new())
}

/// The component name Commodore derives from the directory: its stem
/// without `component-`.
pub fn default_name(dir: &Path) -> String {
    dir.file_stem()
        .map(|s| s.to_string_lossy().replace("component-", ""))
        .unwrap_or_default()
}

fn resolve(p: &Path, what: &str) -> Result<PathBuf, CommodoreError> {
    std::fs::canonicalize(p).map_err(|e| {
        CommodoreError::new(format!("{what} {}: {e}", p.display()))
            .file(p)
            .hint("check the path (relative paths are taken from the current directory)")
    })
}

/// Compiles one instance of a component as `commodore component compile`.
pub fn compile_component(opts: &ComponentOptions) -> Result<ComponentReport, CommodoreError> {
    if !opts.path.is_dir() {
        return Err(CommodoreError::new(format!(
            "Can't compile component, repository {} doesn't exist",
            opts.path.display()
        ))
        .file(&opts.path));
    }
    let component_path = resolve(&opts.path, "component directory")?;
    let values = opts
        .values
        .iter()
        .map(|f| resolve(f, "values file"))
        .collect::<Result<Vec<_>, _>>()?;
    let mut search_paths: Vec<PathBuf> = opts.search_paths.iter().map(|p| absolute(p)).collect();
    search_paths.push(component_path.join("vendor"));
    let output = absolute(&opts.output);
    let name = match &opts.name {
        Some(n) if !n.is_empty() => n.clone(),
        _ => default_name(&component_path),
    };
    let instance = match &opts.alias {
        Some(a) if !a.is_empty() => a.clone(),
        _ => name.clone(),
    };
    for (what, v) in [("component name", &name), ("instance name", &instance)] {
        // The same names a catalog compile refuses (`check_path_name`): a
        // backslash or control character failed later, in the scratch
        // inventory, naming its temporary path.
        if v.is_empty()
            || v.contains(['/', '\\'])
            || v.starts_with('.')
            || v.chars().any(char::is_control)
        {
            return Err(CommodoreError::new(format!(
                "invalid {what} {v:?}: names become directory and file names, so they may not be empty, start with `.`, nor hold `/`, `\\` or control characters"
            ))
                .hint("pass --name (and --alias) with a plain name such as `my-component`"));
        }
    }

    // Locked while this process lives: the next compile removes the ones
    // killed runs left (re-probe 10).
    let temp = crate::fswalk::locked_temp_dir(&std::env::temp_dir(), "strata-component-")
        .map_err(|e| CommodoreError::new(format!("cannot create a temporary directory: {e}")))?;
    let work =
        std::fs::canonicalize(temp.path()).map_err(|e| CommodoreError::io(temp.path(), e))?;
    let layout = Layout::new(&work);
    for d in [
        layout.components_dir(),
        layout.defaults_dir(),
        layout
            .params_file()
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default(),
        layout.targets_dir(),
        layout.lib_dir(),
        layout.dependencies_dir().join("libs"),
    ] {
        std::fs::create_dir_all(&d).map_err(|e| CommodoreError::io(&d, e))?;
    }
    search_paths.push(layout.dependencies_dir());

    let (repo_dir, sub_path) = repository_of(&component_path);
    let class_file = component_path.join("class").join(format!("{name}.yml"));
    let defaults_file = component_path.join("class").join("defaults.yml");
    for f in [&class_file, &defaults_file] {
        // A committed link to /dev/zero or a FIFO exists but is no file:
        // "could not find" sent the author looking for a missing one.
        if f.exists() && !f.is_file() {
            return Err(CommodoreError::new(format!(
                "{} is not a regular file (a directory, a FIFO, a device, or a link to one): only regular files are read",
                f.display()
            ))
            .file(f)
            .hint("commit the class as a plain YAML file"));
        }
    }
    if !class_file.is_file() {
        return Err(CommodoreError::new(format!(
            "Could not find component class file: {}",
            class_file.display()
        ))
        .file(&class_file)
        .hint("the component name comes from the directory name; pass --name if it differs"));
    }
    if !defaults_file.is_file() {
        return Err(CommodoreError::new(format!(
            "Could not find component default file: {}",
            defaults_file.display()
        ))
        .file(&defaults_file));
    }
    if let Some(c) = &opts.confine {
        // The scratch inventory links to these: a committed
        // `class/defaults.yml -> /home/runner/...` was read as a class and
        // quoted in errors and the catalog.
        for f in std::iter::once(&class_file)
            .chain(std::iter::once(&defaults_file))
            .chain(&values)
        {
            c.check(f).map_err(|e| CommodoreError::new(e).file(f))?;
        }
    }
    relsymlink(
        &class_file,
        &layout.components_dir(),
        &format!("{name}.yml"),
    )?;
    relsymlink(
        &defaults_file,
        &layout.defaults_dir(),
        &format!("{name}.yml"),
    )?;
    relsymlink(&repo_dir, &layout.dependencies_dir(), &name)?;
    let mut value_classes = Vec::new();
    for f in &values {
        let fname = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        relsymlink(f, &layout.classes_dir(), &fname)?;
        value_classes.push(
            f.file_stem()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        );
    }
    write(
        &layout.params_file(),
        &commodore_yaml(&[fake_params(&name, &instance)]),
    )?;

    let spec = DependencySpec {
        url: format!("https://example.com/{name}.git"),
        version: "master".into(),
        path: sub_path.clone(),
    };
    let mut deps = Dependencies::default();
    deps.components.insert(name.clone(), spec.clone());
    deps.instances.insert(instance.clone(), name.clone());
    deps.instance_specs.insert(instance.clone(), spec);

    // generate_target: the classes Commodore lists, in its order.
    let mut classes = vec![
        s(&format!("params.{BOOTSTRAP}")),
        s(&format!("defaults.{name}")),
        s(&format!("components.{name}")),
    ];
    classes.extend(value_classes.iter().map(|c| s(c)));
    let mut params = Map::default();
    params.insert("_instance".into(), s(&instance));
    params.insert(
        "_base_directory".into(),
        s(&component_path.to_string_lossy()),
    );
    let wrapper = super::kustomize_wrapper(&layout)?;
    params.insert("_kustomize_wrapper".into(), s(&wrapper.to_string_lossy()));
    params.insert("_python3".into(), s(&super::python3_on_path()));
    params.insert(
        "kapitan".into(),
        map(vec![("vars", map(vec![("target", s(&instance))]))]),
    );
    if name != instance {
        let ckey = super::parameters_key(&name);
        let tkey = super::parameters_key(&instance);
        params.insert(tkey.clone(), Value::Map(Map::default()));
        params.insert(ckey, s(&format!("${{{tkey}}}")));
    }
    let target = map(vec![
        ("classes", Value::List(classes)),
        ("parameters", Value::Map(params)),
    ]);
    write(
        &layout.targets_dir().join(format!("{instance}.yml")),
        &commodore_yaml(&[target]),
    )?;
    write(&layout.lib_dir().join("argocd.libjsonnet"), FAKE_ARGOCD)?;

    // Errors name the scratch inventory's links (and the repository's
    // link below `dependencies/`); the author knows the files they point at.
    let mut real: Vec<(PathBuf, PathBuf)> = vec![
        (
            layout.components_dir().join(format!("{name}.yml")),
            class_file.clone(),
        ),
        (
            layout.defaults_dir().join(format!("{name}.yml")),
            defaults_file.clone(),
        ),
        (layout.dependencies_dir().join(&name), repo_dir.clone()),
    ];
    for f in &values {
        if let Some(fname) = f.file_name() {
            real.push((layout.classes_dir().join(fname), f.clone()));
        }
    }
    let run = || -> Result<ComponentReport, CommodoreError> {
        let inv_opts = InventoryOptions {
            path: layout.inventory_dir(),
            applications_negate_earlier_only: true,
            ..Default::default()
        };
        let inv = Inventory::load(&inv_opts).map_err(super::from_display)?;
        let nodes = inv.render(&[]).map_err(super::from_display)?;
        let node = nodes.get(&instance).ok_or_else(|| {
            CommodoreError::new(format!("the target `{instance}` did not render"))
        })?;
        let cluster = node.parameters.clone();
        verify(&deps, &cluster, &nodes)?;
        let mut warnings = library_aliases(&layout, &deps, &cluster)?;

        // jsonnetfile.jsonnet -> jsonnetfile.json, then the jsonnet-bundler step.
        super::render_jsonnetfile(&component_path, &name, &cluster, opts.confine.as_ref())?;
        if let Some(jb) = &opts.jsonnet {
            if component_path.join("jsonnetfile.json").is_file() {
                let jb = crate::fetch::jsonnet::JbOptions {
                    update: true,
                    ..jb.clone()
                };
                crate::fetch::jsonnet::install(&component_path, &jb).map_err(|e| {
                    CommodoreError::new(format!(
                        "installing the jsonnet dependencies of component {name}: {e}"
                    ))
                    .file(&component_path.join("jsonnetfile.json"))
                })?;
            }
        }

        // Kapitan's search paths: the caller's, then the working directory and
        // Commodore's install directory (its bundled libraries).
        let libroot = work.join(".strata-commodore-lib");
        write_bundled_libs(&libroot)?;
        search_paths.push(work.clone());
        search_paths.push(libroot);
        let prepared =
            compile::prepare(&nodes, &layout.inventory_dir()).map_err(super::from_compile)?;
        if let Some(cache) = &opts.kapitan_cache {
            let instances = BTreeMap::from([(instance.clone(), name.clone())]);
            let deps_output = opts
                .dependencies_output
                .as_deref()
                .map(absolute)
                .unwrap_or_else(|| output.clone());
            let log = super::fetch_kapitan_dependencies(
                &prepared,
                &instances,
                &deps_output,
                vec![
                    repo_dir.clone(),
                    output.clone(),
                    deps_output.clone(),
                    work.clone(),
                ],
                cache,
                opts.confine.is_some(),
            )?;
            warnings.extend(
                log.into_iter()
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
            // The component directory is `${_base_directory}`: kustomize
            // components write their kustomization there.
            absolute_roots: [(instance.clone(), vec![component_path.clone()])].into(),
            // The scratch inventory and libraries and the output, beside
            // the caller's roots.
            confine: opts.confine.clone().map(|mut c| {
                for r in [&work, &output] {
                    c.add(r);
                }
                c
            }),
            memory: None,
        };
        // A missing jsonnet import (in a compile entry or a jsonnet filter):
        // the component, its jsonnetfile.json and the fetch step.
        let vendor = component_path.join("vendor");
        let skipped = format!(
        "`strata component compile` without --no-fetch (or `strata fetch --jsonnetfile {}`, Commodore runs `jb install` there)",
        component_path.display()
    );
        let fetch = super::ImportFetch {
            skipped: opts.jsonnet.is_none().then_some(skipped.as_str()),
            vendor: &vendor,
            other: Some("pass the library's directory with -J/--search-paths"),
        };
        let with_import_hint = |err: CommodoreError| match super::missing_import_hint(
            &err.message,
            &name,
            &instance,
            &component_path,
            &fetch,
        ) {
            Some(h) if err.hint.is_none() => err.hint(h),
            _ => err,
        };
        let build = work.join("build");
        let report = compile::compile_into(
            &prepared,
            std::slice::from_ref(&instance),
            &copts,
            &build,
            &|_| {},
        )
        .map_err(|e| {
            with_import_hint(super::name_component_needing_helm(
                super::from_compile(e),
                &name,
            ))
        })?;
        warnings.extend(report.notices);
        let compiled_root = build.join("compiled");
        reveal_fake_refs(&compiled_root.join(&instance))?;
        warnings.extend(
            super::postprocess::run_filters(
                &compiled_root,
                &instance,
                &name,
                &component_path,
                node,
                &output,
                copts.confine.as_ref(),
            )
            .map_err(with_import_hint)?,
        );

        // Kapitan replaces `<output>/compiled/<instance>` as a whole.
        let dest = output.join("compiled").join(&instance);
        if std::fs::symlink_metadata(&dest).is_ok() {
            std::fs::remove_dir_all(&dest).map_err(|e| CommodoreError::io(&dest, e))?;
        }
        let src = compiled_root.join(&instance);
        if src.is_dir() {
            super::copy_tree(&src, &dest)?;
        } else {
            std::fs::create_dir_all(&dest).map_err(|e| CommodoreError::io(&dest, e))?;
        }
        Ok(ComponentReport {
            component: name,
            instance,
            compiled: dest,
            warnings,
        })
    };
    run().map_err(|e| unscratch(e, &real, &work))
}

/// How errors show the component compile's scratch directory.
const SCRATCH: &str = "<scratch>";

/// `e` with the scratch paths in `real` (scratch, real) replaced by the
/// files they link to, and any other path below the scratch directory
/// `work` shown below `<scratch>`: the directory is gone once the compile
/// ends, and a missing import's list of search paths named it (probe 43).
fn unscratch(mut e: CommodoreError, real: &[(PathBuf, PathBuf)], work: &Path) -> CommodoreError {
    let mut pairs: Vec<(String, String)> = real
        .iter()
        .map(|(a, b)| (a.display().to_string(), b.display().to_string()))
        .collect();
    pairs.push((work.display().to_string(), SCRATCH.to_string()));
    // The longest first: a link's path may begin another's.
    pairs.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
    fn fix(text: &str, pairs: &[(String, String)]) -> String {
        pairs
            .iter()
            .fold(text.to_string(), |t, (a, b)| t.replace(a.as_str(), b))
    }
    e.message = fix(&e.message, &pairs);
    e.hint = e.hint.as_deref().map(|h| fix(h, &pairs));
    if let Some(f) = &e.file {
        for (a, b) in real {
            if let Ok(rest) = f.strip_prefix(a) {
                e.file = Some(if rest.as_os_str().is_empty() {
                    b.clone()
                } else {
                    b.join(rest)
                });
                break;
            }
        }
    }
    e
}

/// Commodore compiles component tests with a fake Vault backend and
/// `--reveal`: every `?{vaultkv:PATH}` reference reads as `PATH`.
fn reveal_fake_refs(dir: &Path) -> Result<(), CommodoreError> {
    if !dir.is_dir() {
        return Ok(());
    }
    for f in crate::fswalk::files_below(dir, &|_| true)
        .map_err(|e| CommodoreError::new(e.to_string()))?
    {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        if !text.contains("?{vaultkv:") {
            continue;
        }
        let new = reveal_text(&text);
        if new != text {
            std::fs::write(&f, new).map_err(|e| CommodoreError::io(&f, e))?;
        }
    }
    Ok(())
}

fn is_ref_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '@' | '=' | '/' | ':')
}

/// `?{vaultkv:PATH}` -> `PATH` (tokens with `|` functions are left alone).
pub fn reveal_text(text: &str) -> String {
    const OPEN: &str = "?{vaultkv:";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(OPEN) {
        out.push_str(&rest[..i]);
        let after = &rest[i + OPEN.len()..];
        let end = after.find(|c: char| !is_ref_char(c));
        match end {
            Some(e) if after[e..].starts_with('}') && e > 0 => {
                out.push_str(after[..e].trim_end_matches('='));
                rest = &after[e + 1..];
            }
            _ => {
                out.push_str(OPEN);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// How one file of a golden comparison differs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GoldenStatus {
    Identical,
    Differs,
    /// In the golden files, not in the output.
    Missing,
    /// In the output, not in the golden files.
    Extra,
}

/// A byte-for-byte comparison of a `compiled/` directory with golden files.
#[derive(Debug, Clone, Default)]
pub struct GoldenReport {
    /// Path relative to the compared roots -> status, sorted.
    pub files: BTreeMap<String, GoldenStatus>,
}

impl GoldenReport {
    pub fn identical(&self) -> usize {
        self.files
            .values()
            .filter(|s| **s == GoldenStatus::Identical)
            .count()
    }
    pub fn is_clean(&self) -> bool {
        self.identical() == self.files.len()
    }
}

fn relative_files(root: &Path) -> Result<BTreeMap<String, PathBuf>, CommodoreError> {
    let mut out = BTreeMap::new();
    if !root.exists() {
        return Ok(out);
    }
    for f in crate::fswalk::files_below(root, &|_| true)
        .map_err(|e| CommodoreError::new(e.to_string()))?
    {
        if let Ok(rel) = f.strip_prefix(root) {
            out.insert(rel.to_string_lossy().into_owned(), f.clone());
        }
    }
    Ok(out)
}

/// Compares `compiled` (a `compiled/` directory) with `golden` byte for byte
/// (`git diff --no-index tests/golden/<instance> compiled/`).
pub fn compare_golden(golden: &Path, compiled: &Path) -> Result<GoldenReport, CommodoreError> {
    let old = relative_files(golden)?;
    let new = relative_files(compiled)?;
    let mut report = GoldenReport::default();
    for (rel, path) in &old {
        let status = match new.get(rel) {
            None => GoldenStatus::Missing,
            Some(np) => {
                let a = std::fs::read(path).map_err(|e| CommodoreError::io(path, e))?;
                let b = std::fs::read(np).map_err(|e| CommodoreError::io(np, e))?;
                if a == b {
                    GoldenStatus::Identical
                } else {
                    GoldenStatus::Differs
                }
            }
        };
        report.files.insert(rel.clone(), status);
    }
    for rel in new.keys() {
        if !old.contains_key(rel) {
            report.files.insert(rel.clone(), GoldenStatus::Extra);
        }
    }
    Ok(report)
}

/// `make gen-golden`: replaces the golden directory's contents with
/// `compiled`'s.
pub fn update_golden(golden: &Path, compiled: &Path) -> Result<(), CommodoreError> {
    if std::fs::symlink_metadata(golden).is_ok() {
        std::fs::remove_dir_all(golden).map_err(|e| CommodoreError::io(golden, e))?;
    }
    super::copy_tree(compiled, golden)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reveals_vaultkv_tokens() {
        assert_eq!(
            reveal_text("a: ?{vaultkv:t/c/comp/key}\nb: x?{vaultkv:p/q}y\n"),
            "a: t/c/comp/key\nb: xp/qy\n"
        );
        assert_eq!(reveal_text("?{vaultkv:p|base64}"), "?{vaultkv:p|base64}");
        assert_eq!(reveal_text("?{plain:p}"), "?{plain:p}");
    }

    #[test]
    fn names_from_directories() {
        assert_eq!(default_name(Path::new("/x/component-foo-bar")), "foo-bar");
        assert_eq!(default_name(Path::new("/x/foo")), "foo");
    }
}
