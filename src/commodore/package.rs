//! `strata package compile`: Commodore's `package compile` for authors of
//! configuration packages. A working directory (a fresh temporary one, or
//! `--tmp-dir`) gets Commodore 1.35's fake global configuration: the
//! fake cluster facts in `params/cluster.yml`, `global/commodore.yml`
//! listing the `-f` values files (as classes `t-fake.<stem>`) and then the
//! package's test class, the package linked in as `classes/<name>` and a
//! fake `lib/argocd.libjsonnet`. The components the package uses are
//! fetched from git per `parameters.components` (or, in local mode, taken
//! from `dependencies/`), the whole catalog is compiled as `catalog
//! compile` compiles it, and `compiled/` is copied into the package (or
//! wherever the caller says).

use super::{
    commodore_yaml, compile_catalog_with, copy_tree, map, relsymlink, s, write, write_target,
    CatalogOptions, CommodoreError, Dependencies, Layout, BOOTSTRAP,
};
use crate::fetch::{self, Dependency, FetchOptions, Progress};
use crate::value::Value;
use std::path::{Path, PathBuf};

/// The cluster id of Commodore's fake cluster facts.
pub const FAKE_CLUSTER: &str = "c-green-test-1234";

/// What `strata package compile` is asked to do.
#[derive(Debug, Clone)]
pub struct PackageOptions {
    /// The package's directory.
    pub path: PathBuf,
    /// The test class, a file relative to the package (`tests/defaults.yml`).
    pub test_class: String,
    /// `-f/--values`: classes before the test class.
    pub values: Vec<PathBuf>,
    /// `--local`: reuse the working directory's `dependencies/` (fetch no
    /// component; a component not checked out there is skipped).
    pub local: bool,
    /// Install the components' jsonnet dependencies (and, with
    /// [`PackageOptions::kapitan_dependencies`], Kapitan's) before compiling.
    pub fetch_dependencies: bool,
    /// `--tmp-dir`: the working directory (kept afterwards); else a fresh
    /// temporary directory, removed unless `keep_dir`.
    pub tmp_dir: Option<PathBuf>,
    pub keep_dir: bool,
    /// Where `compiled/`'s contents are copied (merged, as Commodore's
    /// `copytree(dirs_exist_ok=True)`): Commodore's is `<package>/compiled`.
    pub output: PathBuf,
    /// How components and jsonnet dependencies are fetched.
    pub offline: bool,
    pub credentials: Option<crate::git::Credentials>,
    pub parallelism: usize,
    /// Where Kapitan `dependencies` are cached between runs.
    pub kapitan_dependencies: Option<PathBuf>,
    /// A pull request's compile (`--confine`, a `pull_request*` event),
    /// as `catalog compile`'s: classes and reads below these roots (the
    /// working directory is added), components and dependencies only from
    /// the network.
    pub confine: Option<crate::compile::confine::Confine>,
}

/// What a package compile did.
#[derive(Debug, Clone)]
pub struct PackageReport {
    pub package: String,
    pub instances: Vec<String>,
    /// The working directory when it was kept.
    pub kept: Option<PathBuf>,
    pub fetched: usize,
    pub warnings: Vec<String>,
}

/// The package name Commodore derives from the directory: its name
/// without `package-`, or without `pkg.` for a package checked out in a
/// catalog's `dependencies/`.
pub fn package_name(dir: &Path) -> String {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Some(rest) = name.strip_prefix("pkg.") {
        return rest.to_string();
    }
    dir.file_stem()
        .map(|n| n.to_string_lossy().replace("package-", ""))
        .unwrap_or_default()
}

/// `_setup_inventory`'s fake cluster facts.
fn fake_params() -> Value {
    map(vec![(
        "parameters",
        map(vec![
            (
                "cluster",
                map(vec![
                    ("catalog_url", s("ssh://git@git.example.com/org/repo.git")),
                    ("name", s(FAKE_CLUSTER)),
                    ("display_name", s("Test Cluster 1234")),
                    ("tenant", s("t-silent-test-1234")),
                    ("tenant_display_name", s("Test Tenant 1234")),
                ]),
            ),
            (
                "facts",
                map(vec![
                    ("distribution", s("x-fake-distribution")),
                    ("cloud", s("x-fake-cloud")),
                    ("region", s("x-fake-region")),
                ]),
            ),
            ("argocd", map(vec![("namespace", s("syn"))])),
            (
                "kapitan",
                map(vec![(
                    "secrets",
                    map(vec![(
                        "vaultkv",
                        map(vec![
                            ("VAULT_ADDR", s("https://vault.syn.example.com")),
                            ("VAULT_SKIP_VERIFY", s("false")),
                            ("VAULT_CAPATH", s("/etc/ssl/certs/")),
                            ("auth", s("token")),
                            ("engine", s("kv-v2")),
                            ("mount", s("clusters/kv")),
                        ]),
                    )]),
                )]),
            ),
        ]),
    )])
}

/// The fake Argo CD library of `package compile` (unlike `component
/// compile`'s, its `App` has no `base` parameter).
const FAKE_ARGOCD: &str = "
local ArgoApp(component, namespace, project='', secrets=true) = {};
local ArgoProject(name) = {};

{
  App: ArgoApp,
  Project: ArgoProject,
}";

fn remove(p: &Path) -> Result<(), CommodoreError> {
    match std::fs::symlink_metadata(p) {
        Err(_) => Ok(()),
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(p).map_err(|e| CommodoreError::io(p, e)),
        Ok(_) => std::fs::remove_file(p).map_err(|e| CommodoreError::io(p, e)),
    }
}

/// Commodore's `clean_working_tree`: the inventory, the libraries, the
/// compiled output and the catalog go; component checkouts stay.
fn clean_working_tree(layout: &Layout) -> Result<(), CommodoreError> {
    for p in [
        layout.inventory_dir(),
        layout.lib_dir(),
        layout.dependencies_dir().join("libs"),
        layout.work_dir.join("compiled"),
        layout.catalog_dir(),
    ] {
        remove(&p)?;
    }
    Ok(())
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `_setup_inventory`: the fake global configuration around the package's
/// test class.
fn setup_inventory(
    layout: &Layout,
    package: &str,
    root_class: &str,
    values: &[PathBuf],
) -> Result<(), CommodoreError> {
    let tenant_dir = layout.classes_dir().join("t-fake");
    let global_dir = layout.classes_dir().join("global");
    for d in [
        layout.components_dir(),
        layout.defaults_dir(),
        layout.classes_dir().join("params"),
        layout.targets_dir(),
        layout.lib_dir(),
        layout.dependencies_dir().join("libs"),
        tenant_dir.clone(),
        global_dir.clone(),
    ] {
        std::fs::create_dir_all(&d).map_err(|e| CommodoreError::io(&d, e))?;
    }
    let mut classes = Vec::new();
    for f in values {
        let stem = f
            .file_stem()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        classes.push(s(&format!("t-fake.{stem}")));
        relsymlink(f, &tenant_dir, &file_name(f))?;
    }
    classes.push(s(&format!("{package}.{root_class}")));
    write(
        &global_dir.join("commodore.yml"),
        &commodore_yaml(&[map(vec![("classes", Value::List(classes))])]),
    )?;
    write(&layout.params_file(), &commodore_yaml(&[fake_params()]))?;
    write(&layout.lib_dir().join("argocd.libjsonnet"), FAKE_ARGOCD)
}

fn resolve(p: &Path, what: &str) -> Result<PathBuf, CommodoreError> {
    std::fs::canonicalize(p).map_err(|e| {
        CommodoreError::new(format!("{what} {}: {e}", p.display()))
            .file(p)
            .hint("check the path (relative paths are taken from the current directory)")
    })
}

/// Fetches the components (and instances) the hierarchy names into
/// `dependencies/<instance>` (Commodore's `fetch_components`).
fn fetch_components(
    layout: &Layout,
    opts: &PackageOptions,
    progress: &dyn Progress,
) -> Result<usize, CommodoreError> {
    let specs = super::instance_specs(layout)?;
    let deps: Vec<Dependency> = specs
        .into_iter()
        .map(|(name, spec)| {
            let mut d = Dependency::new(&name, &spec.url, &spec.version, Some(&spec.path));
            d.dir = Some(PathBuf::from("dependencies").join(&name));
            d
        })
        .collect();
    if opts.confine.is_some() {
        fetch::refuse_local_sources(&deps).map_err(|e| {
            CommodoreError::new(format!("while fetching components:\n{e}")).hint(
                "the components come from `parameters.components` (url, version) of the package and the test class",
            )
        })?;
    }
    let fopts = FetchOptions {
        work_dir: layout.work_dir.clone(),
        offline: opts.offline,
        force: false,
        credentials: opts.credentials.clone(),
        parallelism: 0,
        confined: opts.confine.is_some(),
    };
    let fetched = fetch::fetch(&deps, &fopts, progress).map_err(|e| {
        CommodoreError::new(format!("while fetching components:\n{e}")).hint(
            "the components come from `parameters.components` (url, version) of the package and the test class",
        )
    })?;
    Ok(fetched.len())
}

/// Compiles a configuration package as `commodore package compile`.
pub fn compile_package(
    opts: &PackageOptions,
    progress: &dyn Progress,
) -> Result<PackageReport, CommodoreError> {
    if !opts.path.is_dir() {
        return Err(CommodoreError::new(format!(
            "package directory {} does not exist",
            opts.path.display()
        ))
        .file(&opts.path));
    }
    let pkg_path = resolve(&opts.path, "package directory")?;
    let values = opts
        .values
        .iter()
        .map(|f| resolve(f, "values file"))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(f) = values.iter().find(|f| !f.is_file()) {
        return Err(
            CommodoreError::new(format!("values file {} is not a file", f.display()))
                .file(f)
                .hint("-f takes a YAML class file, e.g. tests/extra.yml"),
        );
    }
    let package = package_name(&pkg_path);
    let class_path = Path::new(&opts.test_class);
    if class_path.is_absolute()
        || class_path
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return Err(CommodoreError::new(format!(
            "test class `{}` is not a path inside the package",
            opts.test_class
        ))
        .hint("give the test class relative to the package directory, e.g. tests/defaults.yml"));
    }
    let root_class = opts.test_class.replace(".yml", "").replace('/', ".");
    let root_class_path = pkg_path.join(&opts.test_class);
    if !root_class_path.is_file() {
        return Err(
            CommodoreError::new(format!("Test class '{root_class}' doesn't exist."))
                .file(&root_class_path)
                .hint("the test class is a file inside the package, e.g. tests/defaults.yml"),
        );
    }
    if package.is_empty() || package.starts_with('.') {
        return Err(CommodoreError::new(format!(
            "cannot derive a package name from {}",
            pkg_path.display()
        ))
        .hint("the package name is the directory's name without `package-`"));
    }

    let (temp, work, keep) = match &opts.tmp_dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|e| CommodoreError::io(d, e))?;
            (None, resolve(d, "--tmp-dir")?, true)
        }
        None => {
            let t = tempfile::Builder::new()
                .prefix("package-")
                .tempdir()
                .map_err(|e| {
                    CommodoreError::new(format!("cannot create a temporary directory: {e}"))
                })?;
            let w = resolve(t.path(), "temporary directory")?;
            (Some(t), w, opts.keep_dir)
        }
    };
    let layout = Layout::new(&work);
    if !opts.local {
        clean_working_tree(&layout)?;
    }
    setup_inventory(&layout, &package, &root_class, &values)?;
    relsymlink(&pkg_path, &layout.classes_dir(), &package)?;
    write_target(&layout, &Dependencies::default(), BOOTSTRAP, BOOTSTRAP)?;
    let fetched = if opts.local {
        0
    } else {
        fetch_components(&layout, opts, progress)?
    };

    let jsonnet = opts
        .fetch_dependencies
        .then(|| crate::fetch::jsonnet::JbOptions {
            repos_dir: layout.dependencies_dir().join(".repos"),
            offline: opts.offline,
            credentials: opts.credentials.clone(),
            ext_vars: Vec::new(),
            update: true,
            confine: opts.confine.clone(),
        });
    let kapitan_cache = opts
        .kapitan_dependencies
        .as_deref()
        .filter(|_| opts.fetch_dependencies);
    let report = compile_catalog_with(
        &CatalogOptions {
            work_dir: work.clone(),
            cluster_id: FAKE_CLUSTER.to_string(),
            parallelism: opts.parallelism,
            jsonnet,
            confine: opts.confine.clone(),
        },
        kapitan_cache,
    )?;
    let compiled = work.join("compiled");
    if compiled.is_dir() {
        copy_tree(&compiled, &opts.output)?;
    } else {
        std::fs::create_dir_all(&opts.output).map_err(|e| CommodoreError::io(&opts.output, e))?;
    }
    let kept = if keep {
        match temp {
            Some(t) => Some(t.keep()),
            None => Some(work.clone()),
        }
    } else {
        None
    };
    Ok(PackageReport {
        package,
        instances: report.instances,
        kept,
        fetched,
        warnings: report.warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_directories() {
        assert_eq!(package_name(Path::new("/x/package-foo")), "foo");
        assert_eq!(package_name(Path::new("/x/pkg.foo")), "foo");
        assert_eq!(package_name(Path::new("/x/pkg.foo.bar")), "foo.bar");
        assert_eq!(package_name(Path::new("/x/foo")), "foo");
    }
}
