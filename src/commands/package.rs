//! `strata package list|resolve|render`: Carvel packages offered by
//! repositories, the version a `PackageInstall` gets, and the chosen
//! package's rendered manifests. (`package compile`, Commodore's
//! configuration packages, lives in `config_package`.)

use crate::cli::eprintln;
use crate::cli::{diag_err, DiagnosticError};
use crate::compile::confine::Confine;
use crate::diagnostics::{Diagnostic, ToDiagnostic};
use crate::packages::install::{resolve_install, ClusterVersions, InstallError, Resolution};
use crate::packages::model::{self, Package, PackageInstall, Resource, Strictness};
use crate::packages::repo::{self, Catalog, RepoContent};
use crate::packages::select::SelectError;
use crate::packages::version::Version;
use crate::packages::{render, target};
use crate::yaml::NodeValue;
use anyhow::Context;
use clap::{Args, Subcommand};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct PackageArgs {
    #[command(subcommand)]
    pub command: PackageCommand,
}

#[derive(Debug, Subcommand)]
pub enum PackageCommand {
    /// List the packages and versions the repositories offer
    List(ListArgs),
    /// Resolve PackageInstalls: print the chosen version (and, on stderr, why
    /// every other version was rejected)
    Resolve(ResolveArgs),
    /// Render the chosen package's template steps for a PackageInstall
    Render(RenderArgs),
    /// Compile a Commodore configuration package with a test class into
    /// <package>/compiled (Commodore's `package compile`)
    Compile(Box<crate::commands::config_package::CompileArgs>),
}

/// Where packages come from. Repositories are merged in this order:
/// `--packages` files, `--repo` directories, then `--repository` documents;
/// a later repository offering an existing package goes through
/// kapp-controller's overlap rule (identical: kept; otherwise the higher
/// `packaging.carvel.dev/revision` wins; equal: conflict).
#[derive(Debug, Args)]
pub struct SourceArgs {
    /// YAML file of Package / PackageMetadata documents (one repository per file; repeatable)
    #[arg(long = "packages", value_name = "FILE")]
    pub packages: Vec<PathBuf>,
    /// Repository directory in kapp-controller layout (`packages/**/*.yml`; repeatable)
    #[arg(long = "repo", value_name = "DIR")]
    pub repos: Vec<PathBuf>,
    /// YAML file of PackageRepository documents to fetch (inline, git, http; repeatable)
    #[arg(long = "repository", value_name = "FILE")]
    pub repositories: Vec<PathBuf>,
    /// Make kapp-controller's admission rules (refName with three DNS
    /// segments, name `<refName>.<version>`, semver version) errors instead of warnings
    #[arg(long)]
    pub strict: bool,
    /// Read nothing outside the working directory but paths outside it
    /// given as flags, and fetch no repository or package content but
    /// `inline` (on by default on a GitHub `pull_request*` event)
    #[arg(long)]
    pub confine: bool,
}

/// The confinement of a package command whose files are `s`'s and `more`
/// ([`crate::commands::confine::working_tree`]), each given file checked;
/// `outputs` are trusted outside the working directory, checked on write.
fn confinement(
    s: &SourceArgs,
    more: &[&Path],
    outputs: &[&Path],
) -> anyhow::Result<Option<Confine>> {
    let given: Vec<&Path> = s
        .packages
        .iter()
        .chain(&s.repos)
        .chain(&s.repositories)
        .map(PathBuf::as_path)
        .chain(more.iter().copied())
        .collect();
    let trusted: Vec<&Path> = given.iter().chain(outputs).copied().collect();
    let c = crate::commands::confine::working_tree("package", s.confine, &trusted)?;
    crate::commands::confine::check_inputs(c.as_ref(), given.iter().copied())?;
    Ok(c)
}

#[derive(Debug, Args)]
pub struct ClusterArgs {
    /// YAML file with `kubernetesVersion` and `kappControllerVersion` of the target cluster
    #[arg(long, value_name = "FILE")]
    pub env: Option<PathBuf>,
    /// Kubernetes version of the target cluster (overrides --env)
    #[arg(long, value_name = "VERSION")]
    pub kubernetes_version: Option<String>,
    /// kapp-controller version of the target cluster (overrides --env)
    #[arg(long, value_name = "VERSION")]
    pub kapp_controller_version: Option<String>,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub sources: SourceArgs,
}

#[derive(Debug, Args)]
pub struct ResolveArgs {
    #[command(flatten)]
    pub sources: SourceArgs,
    /// YAML file of PackageInstall documents
    #[arg(long, value_name = "FILE")]
    pub install: PathBuf,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Do not explain rejected versions on stderr
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct RenderArgs {
    #[command(flatten)]
    pub sources: SourceArgs,
    /// YAML file with one PackageInstall document
    #[arg(long, value_name = "FILE")]
    pub install: PathBuf,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// YAML file of Secret / ConfigMap documents that the install's
    /// `spec.values[].secretRef` (and the ytt steps' valuesFrom / pathsFrom)
    /// name; the --install file may hold them too (repeatable)
    #[arg(long = "values", value_name = "FILE")]
    pub values: Vec<PathBuf>,
    /// Plain YAML data values for the package's ytt step, applied after the
    /// install's secrets (repeatable)
    #[arg(long = "data-values-file", value_name = "FILE")]
    pub data_values_files: Vec<PathBuf>,
    /// Write the manifests here instead of stdout (one YAML stream)
    #[arg(long, short, value_name = "FILE", conflicts_with = "output_dir")]
    pub output: Option<PathBuf>,
    /// Write `<DIR>/<install name>/<file>` plus a `VERSION` file, replacing
    /// that directory atomically
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
}

pub fn run(args: PackageArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        PackageCommand::List(a) => list(a),
        PackageCommand::Resolve(a) => resolve(a),
        PackageCommand::Render(a) => render_cmd(a),
        PackageCommand::Compile(a) => crate::commands::config_package::compile(*a),
    }
}

fn strictness(s: &SourceArgs) -> Strictness {
    if s.strict {
        Strictness::Strict
    } else {
        Strictness::Lenient
    }
}

fn print_warnings(ws: &[Diagnostic]) {
    for w in ws {
        eprint!(
            "{}",
            crate::cli::actions_safe(&crate::cli::render_diagnostic(w))
        );
    }
}

/// Loads and merges every repository given on the command line; confined
/// (`confine`), a PackageRepository is read only when it is `inline`: a
/// pull request's `fetch.git.url` (`file:///home/runner/...`, a local
/// path, an internal address) or `fetch.http` chose what the runner read.
pub fn load_catalog(s: &SourceArgs, confine: Option<&Confine>) -> anyhow::Result<Catalog> {
    let strict = strictness(s);
    let mut contents: Vec<RepoContent> = Vec::new();
    for f in &s.packages {
        let text = crate::error::read_to_string(f).map_err(diag_err)?;
        let c = repo::content_from_files(&f.display().to_string(), &[(f.clone(), text)], strict)
            .map_err(diag_err)?;
        contents.push(c);
    }
    for d in &s.repos {
        contents
            .push(repo::content_from_dir(&d.display().to_string(), d, strict).map_err(diag_err)?);
    }
    for f in &s.repositories {
        let docs = crate::error::read_yaml_all(f).map_err(diag_err)?;
        let (res, warnings) = model::parse_stream(f, &docs, strict, false).map_err(diag_err)?;
        print_warnings(&warnings);
        for r in res {
            let Resource::PackageRepository(r) = r else {
                anyhow::bail!(
                    "{}: --repository takes PackageRepository documents; use --packages for Package files and --install for PackageInstalls",
                    f.display()
                );
            };
            if r.paused {
                continue;
            }
            if confine.is_some() && !matches!(r.source, model::RepoSource::Inline { .. }) {
                anyhow::bail!(
                    "{}: PackageRepository {}: a confined run (a pull request's: a GitHub `pull_request*` event, or --confine) fetches no package repository but inline ones: the pull request would choose what the runner reads (a `file://` or local git repository, an internal address); use --repo DIR for a directory of the repository or `fetch.inline`, or run in a trusted job",
                    f.display(),
                    r.meta.name
                );
            }
            let work = tempfile::tempdir().context("creating a work directory")?;
            contents.push(repo::fetch_repository(&r, work.path(), strict).map_err(diag_err)?);
        }
    }
    let catalog = repo::merge(contents).map_err(diag_err)?;
    print_warnings(&catalog.warnings);
    Ok(catalog)
}

fn list(a: ListArgs) -> anyhow::Result<ExitCode> {
    let confine = confinement(&a.sources, &[], &[])?;
    let catalog = load_catalog(&a.sources, confine.as_ref())?;
    let mut rows: Vec<(&Package, Option<Version>)> = catalog
        .packages
        .iter()
        .map(|p| (p, Version::parse_relaxed(&p.version).ok()))
        .collect();
    rows.sort_by(|(a, av), (b, bv)| {
        a.ref_name
            .cmp(&b.ref_name)
            .then_with(|| match (av, bv) {
                (Some(x), Some(y)) => x.cmp(y),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => a.version.cmp(&b.version),
            })
            .then_with(|| a.meta.namespace.cmp(&b.meta.namespace))
    });
    let w_ref = rows
        .iter()
        .map(|(p, _)| p.ref_name.len())
        .max()
        .unwrap_or(0)
        .max(8);
    let w_ver = rows
        .iter()
        .map(|(p, _)| p.version.len())
        .max()
        .unwrap_or(0)
        .max(7);
    let mut out = String::new();
    out.push_str(&format!(
        "{:w_ref$}  {:w_ver$}  REPOSITORY\n",
        "REF-NAME", "VERSION"
    ));
    for (p, _) in &rows {
        let repo = p
            .meta
            .annotations
            .get(model::ANN_REPO_REF)
            .map(String::as_str)
            .unwrap_or("");
        out.push_str(&format!(
            "{:w_ref$}  {:w_ver$}  {repo}\n",
            p.ref_name, p.version
        ));
    }
    std::io::stdout().write_all(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// Reads `--env` plus overrides.
pub fn cluster_versions(c: &ClusterArgs) -> anyhow::Result<ClusterVersions> {
    let mut v = ClusterVersions::default();
    if let Some(f) = &c.env {
        let docs = crate::error::read_yaml_all(f).map_err(diag_err)?;
        if let Some(doc) = docs.first() {
            let NodeValue::Map(entries) = &doc.value else {
                anyhow::bail!(
                    "{}: expected a mapping with kubernetesVersion / kappControllerVersion",
                    f.display()
                );
            };
            for (k, val) in entries {
                let key = k.key_string();
                let text = match &val.value {
                    NodeValue::Null => None,
                    NodeValue::Str { value, .. } => Some(value.clone()),
                    NodeValue::Int(_) | NodeValue::Float(_) => Some(val.key_string()),
                    _ => anyhow::bail!(
                        "{}:{}: `{key}` must be a version string",
                        f.display(),
                        val.line
                    ),
                };
                match key.as_str() {
                    "kubernetesVersion" => v.kubernetes = text,
                    "kappControllerVersion" => v.kapp_controller = text,
                    _ => anyhow::bail!(
                        "{}:{}: unknown field `{key}` (expected kubernetesVersion, kappControllerVersion)",
                        f.display(),
                        k.line
                    ),
                }
            }
        }
    }
    if c.kubernetes_version.is_some() {
        v.kubernetes = c.kubernetes_version.clone();
    }
    if c.kapp_controller_version.is_some() {
        v.kapp_controller = c.kapp_controller_version.clone();
    }
    Ok(v)
}

/// An install file may be a whole release file (kapp-controller's own holds
/// CRDs, Deployments, Secrets...): packaging documents are parsed, any other
/// Kubernetes document (`apiVersion` and `kind` set) is passed over and its
/// content never printed; anything else is an error naming the document.
fn install_documents(
    f: &Path,
    docs: Vec<crate::yaml::Node>,
) -> anyhow::Result<Vec<crate::yaml::Node>> {
    let mut out = Vec::new();
    for (i, n) in docs.into_iter().enumerate() {
        if matches!(n.value, NodeValue::Null) {
            continue;
        }
        let field = |k: &str| {
            n.get(k).and_then(|v| match &v.value {
                NodeValue::Str { value, .. } => Some(value.clone()),
                _ => None,
            })
        };
        let (Some(_), Some(kind)) = (field("apiVersion"), field("kind")) else {
            anyhow::bail!(
                "{}:{}: document {} is not a Kubernetes object (it needs apiVersion and kind)",
                f.display(),
                n.line,
                i + 1
            );
        };
        // The kind alone decides, so a wrong apiVersion on a packaging
        // kind still gets the model's error.
        if matches!(
            kind.as_str(),
            "Package" | "PackageMetadata" | "PackageRepository" | "PackageInstall"
        ) {
            out.push(n);
        }
    }
    Ok(out)
}

fn load_installs(f: &Path, strict: Strictness) -> anyhow::Result<Vec<PackageInstall>> {
    let docs = crate::error::read_yaml_all(f).map_err(diag_err)?;
    let docs = install_documents(f, docs)?;
    let (res, warnings) = model::parse_stream(f, &docs, strict, false).map_err(diag_err)?;
    print_warnings(&warnings);
    let mut out = Vec::new();
    for r in res {
        match r {
            Resource::PackageInstall(i) => out.push(i),
            _ => anyhow::bail!(
                "{}: --install takes PackageInstall documents only",
                f.display()
            ),
        }
    }
    if out.is_empty() {
        anyhow::bail!("{}: no PackageInstall document found", f.display());
    }
    Ok(out)
}

fn install_error(i: &PackageInstall, e: &InstallError) -> anyhow::Error {
    let mut d = Diagnostic::error(e.to_string())
        .with_file(&i.origin.file)
        .with_line(i.origin.line);
    if let InstallError::Select(SelectError::NoneFound { rejected, .. }) = e {
        for (v, why) in rejected {
            d = d.with_hint(format!("{v}: {why}"));
        }
    }
    if let Some(h) = e.hint() {
        d = d.with_hint(h);
    }
    anyhow::Error::new(DiagnosticError(d))
}

fn resolve_all(
    sources: &SourceArgs,
    install: &Path,
    cluster: &ClusterArgs,
) -> anyhow::Result<Vec<(PackageInstall, Resolution)>> {
    let mut more = vec![install];
    more.extend(cluster.env.as_deref());
    let confine = confinement(sources, &more, &[])?;
    let installs = load_installs(install, strictness(sources))?;
    let catalog = load_catalog(sources, confine.as_ref())?;
    let cluster = cluster_versions(cluster)?;
    let mut out = Vec::new();
    for i in installs {
        match resolve_install(&i, &catalog.packages, &cluster) {
            Ok(r) => out.push((i, r)),
            Err(e) => return Err(install_error(&i, &e)),
        }
    }
    Ok(out)
}

fn resolve(a: ResolveArgs) -> anyhow::Result<ExitCode> {
    let resolved = resolve_all(&a.sources, &a.install, &a.cluster)?;
    let many = resolved.len() > 1;
    let mut out = String::new();
    for (i, r) in &resolved {
        if many {
            let ns = i.meta.namespace.as_deref().unwrap_or("default");
            out.push_str(&format!("{ns}/{} {}\n", r.install, r.version));
        } else {
            out.push_str(&format!("{}\n", r.version));
        }
        if !a.quiet {
            let from = r
                .package
                .meta
                .annotations
                .get(model::ANN_REPO_REF)
                .map(String::as_str)
                .unwrap_or("?");
            eprintln!(
                "note: {}: {} {} (from {from})",
                r.install, r.ref_name, r.version
            );
            for (v, why) in &r.rejected {
                eprintln!("note:   rejected {v}: {why}");
            }
        }
    }
    std::io::stdout().write_all(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// Secret / ConfigMap documents of a file (other kinds are skipped).
fn value_objects(f: &Path) -> anyhow::Result<Vec<crate::value::Value>> {
    let docs = crate::error::read_yaml_all(f).map_err(diag_err)?;
    Ok(docs
        .iter()
        .map(|n| n.to_value())
        .filter(|v| {
            matches!(
                v.get_path(&["kind"]).and_then(crate::value::Value::as_str),
                Some("Secret" | "ConfigMap")
            )
        })
        .collect())
}

fn render_cmd(a: RenderArgs) -> anyhow::Result<ExitCode> {
    let mut more = vec![a.install.as_path()];
    more.extend(a.cluster.env.as_deref());
    more.extend(a.values.iter().map(PathBuf::as_path));
    more.extend(a.data_values_files.iter().map(PathBuf::as_path));
    let outputs: Vec<&Path> = a
        .output
        .iter()
        .chain(&a.output_dir)
        .map(PathBuf::as_path)
        .collect();
    let confine = confinement(&a.sources, &more, &outputs)?;
    // The install file may carry the Secrets its values name.
    let install_docs = crate::error::read_yaml_all(&a.install).map_err(diag_err)?;
    let mut objects = Vec::new();
    let mut install_nodes = Vec::new();
    for n in install_docs {
        let v = n.to_value();
        match v.get_path(&["kind"]).and_then(crate::value::Value::as_str) {
            Some("Secret" | "ConfigMap") => objects.push(v),
            _ => install_nodes.push(n),
        }
    }
    let install_nodes = install_documents(&a.install, install_nodes)?;
    let (res, warnings) =
        model::parse_stream(&a.install, &install_nodes, strictness(&a.sources), false)
            .map_err(diag_err)?;
    print_warnings(&warnings);
    let installs: Vec<PackageInstall> = res
        .into_iter()
        .filter_map(|r| match r {
            Resource::PackageInstall(i) => Some(i),
            _ => None,
        })
        .collect();
    if installs.len() != 1 {
        anyhow::bail!(
            "{}: render takes exactly one PackageInstall (plus the Secrets / ConfigMaps its values name), found {}",
            a.install.display(),
            installs.len()
        );
    }
    for f in &a.values {
        objects.extend(value_objects(f)?);
    }
    let mut extra = Vec::new();
    for f in &a.data_values_files {
        let text = crate::error::read_to_string(f).map_err(diag_err)?;
        extra.push((f.display().to_string(), text));
    }
    let catalog = load_catalog(&a.sources, confine.as_ref())?;
    let cluster = cluster_versions(&a.cluster)?;
    let install = &installs[0];
    let r = resolve_install(install, &catalog.packages, &cluster)
        .map_err(|e| install_error(install, &e))?;
    let work = tempfile::tempdir().context("creating a work directory")?;
    let rendered = render::render_package(
        &r.package,
        render::RenderInputs {
            install: Some(install),
            objects: &objects,
            extra_values: &extra,
            // A pull request's Package would choose what the runner fetches.
            inline_only: confine.is_some(),
        },
        work.path(),
    )
    .map_err(|e| anyhow::Error::new(DiagnosticError(e.to_diagnostic())))?;
    eprintln!("note: {}: {} {}", install.meta.name, r.ref_name, r.version);
    if let Some(dir) = &a.output_dir {
        let mut files = rendered.files;
        if files.iter().any(|(n, _)| n == target::VERSION_FILE) {
            anyhow::bail!(
                "Package {} renders a file named {}, which strata keeps for the chosen version",
                r.package.meta.name,
                target::VERSION_FILE
            );
        }
        files.push((
            target::VERSION_FILE.to_string(),
            target::version_file(install, &r),
        ));
        let name = &install.meta.name;
        if name.contains(['/', '\\']) || name == "." || name == ".." {
            anyhow::bail!("install name `{name}` cannot be a directory name");
        }
        // A committed `out -> /home/runner/...` took the manifests there.
        crate::commands::confine::check_output(
            confine.as_ref(),
            "package",
            "--output-dir",
            &dir.join(name),
        )?;
        render::write_dir_atomically(&dir.join(name), &files)
            .map_err(|e| anyhow::Error::new(DiagnosticError(e.to_diagnostic())))?;
        return Ok(ExitCode::SUCCESS);
    }
    let text = rendered.to_stream();
    match &a.output {
        Some(p) => {
            crate::commands::confine::check_output(confine.as_ref(), "package", "--output", p)?;
            std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))?
        }
        None => std::io::stdout().write_all(text.as_bytes())?,
    }
    Ok(ExitCode::SUCCESS)
}
