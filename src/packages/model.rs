//! The four Carvel packaging resources, read from YAML with every field of
//! the upstream documentation and nothing else: an unknown or mistyped
//! field is an error naming the file, line, document and field path.
//!
//! `Package` / `PackageMetadata` are `data.packaging.carvel.dev/v1alpha1`,
//! `PackageRepository` / `PackageInstall` are `packaging.carvel.dev/v1alpha1`.
//! Deep parts that strata passes through untouched (`template.spec`'s step
//! bodies, `valuesSchema.openAPIv3`) are checked only at the level strata
//! interprets.

use super::select::VersionSelection;
use super::version::Version;
use crate::diagnostics::{Diagnostic, ToDiagnostic};
use crate::value::Value;
use crate::yaml::{Node, NodeValue};
use indexmap::IndexMap;
use std::path::{Path, PathBuf};

pub const DATA_API: &str = "data.packaging.carvel.dev/v1alpha1";
pub const PKG_API: &str = "packaging.carvel.dev/v1alpha1";

pub const ANN_REPO_REF: &str = "packaging.carvel.dev/package-repository-ref";
pub const ANN_REVISION: &str = "packaging.carvel.dev/revision";
pub const ANN_DOWNGRADABLE: &str = "packaging.carvel.dev/downgradable";
pub const ANN_IGNORE_K8S: &str = "packaging.carvel.dev/ignore-kubernetes-version-selection";
pub const ANN_IGNORE_KC: &str = "packaging.carvel.dev/ignore-kapp-controller-version-selection";

/// A bad field in a packaging document.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}:{line}: {doc}: field `{field}`: {message}", file.display())]
pub struct ModelError {
    pub file: PathBuf,
    pub line: usize,
    /// `Package pkg.example.com.1.0.0` or `document 2` when unnamed.
    pub doc: String,
    pub field: String,
    pub message: String,
}

impl ToDiagnostic for ModelError {
    fn to_diagnostic(&self) -> Diagnostic {
        Diagnostic::error(format!(
            "{}: field `{}`: {}",
            self.doc, self.field, self.message
        ))
        .with_file(&self.file)
        .with_line(self.line)
        .with_param_path(self.field.clone())
    }
}

/// Where a document came from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Origin {
    pub file: PathBuf,
    pub line: usize,
}

/// Kubernetes object metadata, the fields strata uses.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Meta {
    pub name: String,
    pub namespace: Option<String>,
    pub labels: IndexMap<String, String>,
    pub annotations: IndexMap<String, String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Package {
    pub meta: Meta,
    pub ref_name: String,
    pub version: String,
    pub released_at: Option<String>,
    pub release_notes: Option<String>,
    pub licenses: Vec<String>,
    pub kubernetes_constraints: Option<String>,
    pub kapp_controller_constraints: Option<String>,
    /// `spec.template.spec` (an App spec).
    pub template: Option<Value>,
    pub values_schema: Option<Value>,
    /// The whole document (compared when repositories overlap, rendered).
    pub doc: Value,
    pub origin: Origin,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PackageMetadata {
    pub meta: Meta,
    pub display_name: Option<String>,
    pub short_description: Option<String>,
    pub doc: Value,
    pub origin: Origin,
}

/// Where a repository's content comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum RepoSource {
    /// `fetch.inline.paths`: file path -> content.
    Inline { paths: IndexMap<String, String> },
    Git {
        url: String,
        git_ref: Option<String>,
        ref_selection: Option<VersionSelection>,
        sub_path: Option<String>,
    },
    Http {
        url: String,
        sha256: Option<String>,
        sub_path: Option<String>,
    },
    /// `fetch.image` (recognised, not supported: no registry client yet).
    Image { url: String },
    /// `fetch.imgpkgBundle` (recognised, not supported yet).
    ImgpkgBundle { image: String },
    /// A directory on disk (CLI `--repo DIR`, not a Kubernetes field).
    Directory { path: PathBuf },
}

#[derive(Debug, Clone, PartialEq)]
pub struct PackageRepository {
    pub meta: Meta,
    pub source: RepoSource,
    pub paused: bool,
    pub origin: Origin,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PackageInstall {
    pub meta: Meta,
    pub ref_name: String,
    pub selection: VersionSelection,
    pub service_account_name: Option<String>,
    /// `spec.values[].secretRef` as (name, key).
    pub values: Vec<(String, Option<String>)>,
    pub last_attempted_version: Option<String>,
    pub doc: Value,
    pub origin: Origin,
}

/// Any packaging document.
#[derive(Debug, Clone, PartialEq)]
pub enum Resource {
    Package(Package),
    PackageMetadata(PackageMetadata),
    PackageRepository(PackageRepository),
    PackageInstall(PackageInstall),
}

/// How strictly the admission rules of kapp-controller's API server are
/// applied (`refName` segments, `<refName>.<version>` names, semver
/// versions). kapp-controller's reconciler itself does not re-check them, and
/// the upstream test suites use names like `expected-pkg`; `Lenient` turns
/// these into warnings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strictness {
    Strict,
    Lenient,
}

/// Reads every packaging document of a YAML stream. Other kinds are an
/// error unless `skip_others` (then they are ignored).
pub fn parse_stream(
    file: &Path,
    docs: &[Node],
    strictness: Strictness,
    skip_others: bool,
) -> Result<(Vec<Resource>, Vec<Diagnostic>), ModelError> {
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    for (i, node) in docs.iter().enumerate() {
        if matches!(node.value, NodeValue::Null) {
            continue;
        }
        let label = format!("document {}", i + 1);
        match parse_resource(file, node, &label, strictness, &mut warnings)? {
            Some(r) => out.push(r),
            None if skip_others => {}
            None => {
                let kind = node.get("kind").map(|k| k.key_string()).unwrap_or_default();
                return Err(ModelError {
                    file: file.to_path_buf(),
                    line: node.line,
                    doc: label,
                    field: "kind".into(),
                    message: format!(
                        "expected Package, PackageMetadata, PackageRepository or PackageInstall, found `{kind}`"
                    ),
                });
            }
        }
    }
    Ok((out, warnings))
}

/// Parses one document; `Ok(None)` when it is not a packaging kind.
pub fn parse_resource(
    file: &Path,
    node: &Node,
    label: &str,
    strictness: Strictness,
    warnings: &mut Vec<Diagnostic>,
) -> Result<Option<Resource>, ModelError> {
    let mut r = Reader {
        file,
        doc: label.to_string(),
    };
    let top = r.obj(node, "")?;
    let api = r.opt_str(&top, "apiVersion")?.unwrap_or_default();
    let kind = r.opt_str(&top, "kind")?.unwrap_or_default();
    let expected_api = match kind.as_str() {
        "Package" | "PackageMetadata" => DATA_API,
        "PackageRepository" | "PackageInstall" => PKG_API,
        _ => return Ok(None),
    };
    if api != expected_api {
        return Err(r.err(
            top.field_node("apiVersion").unwrap_or(node),
            "apiVersion",
            format!("{kind} needs apiVersion `{expected_api}`, found `{api}`"),
        ));
    }
    let meta = r.meta(&top)?;
    r.doc = format!("{kind} {}", meta.name);
    let origin = Origin {
        file: file.to_path_buf(),
        line: node.line,
    };
    let doc = node.to_value();
    let res = match kind.as_str() {
        "Package" => {
            r.known(&top, &["apiVersion", "kind", "metadata", "spec"])?;
            Resource::Package(r.package(&top, meta, doc, origin, strictness, warnings)?)
        }
        "PackageMetadata" => {
            r.known(&top, &["apiVersion", "kind", "metadata", "spec"])?;
            Resource::PackageMetadata(
                r.package_metadata(&top, meta, doc, origin, strictness, warnings)?,
            )
        }
        "PackageRepository" => {
            r.known(&top, &["apiVersion", "kind", "metadata", "spec", "status"])?;
            Resource::PackageRepository(r.repository(&top, meta, origin)?)
        }
        _ => {
            r.known(&top, &["apiVersion", "kind", "metadata", "spec", "status"])?;
            Resource::PackageInstall(r.install(&top, meta, doc, origin)?)
        }
    };
    Ok(Some(res))
}

/// A map node with its field path.
struct Obj<'n> {
    node: &'n Node,
    entries: &'n [(Node, Node)],
    path: String,
}

impl<'n> Obj<'n> {
    fn field_node(&self, key: &str) -> Option<&'n Node> {
        self.entries
            .iter()
            .find(|(k, _)| k.key_string() == key)
            .map(|(_, v)| v)
    }

    fn child(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }
}

struct Reader<'a> {
    file: &'a Path,
    doc: String,
}

const META_FIELDS: &[&str] = &[
    "name",
    "namespace",
    "labels",
    "annotations",
    "generateName",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "ownerReferences",
    "finalizers",
    "managedFields",
    "selfLink",
];

impl<'a> Reader<'a> {
    fn err(&self, node: &Node, field: &str, message: impl Into<String>) -> ModelError {
        ModelError {
            file: self.file.to_path_buf(),
            line: node.line,
            doc: self.doc.clone(),
            field: field.to_string(),
            message: message.into(),
        }
    }

    fn obj<'n>(&self, node: &'n Node, path: &str) -> Result<Obj<'n>, ModelError> {
        match &node.value {
            NodeValue::Map(entries) => Ok(Obj {
                node,
                entries,
                path: path.to_string(),
            }),
            other => Err(self.err(
                node,
                if path.is_empty() { "(document)" } else { path },
                format!("expected a mapping, found {}", node_kind(other)),
            )),
        }
    }

    /// Rejects keys outside `allowed`.
    fn known(&self, o: &Obj<'_>, allowed: &[&str]) -> Result<(), ModelError> {
        for (k, _) in o.entries {
            let key = k.key_string();
            if !allowed.contains(&key.as_str()) {
                return Err(self.err(
                    k,
                    &o.child(&key),
                    format!("unknown field (expected one of: {})", allowed.join(", ")),
                ));
            }
        }
        Ok(())
    }

    fn opt_obj<'n>(&self, o: &Obj<'n>, key: &str) -> Result<Option<Obj<'n>>, ModelError> {
        match o.field_node(key) {
            None => Ok(None),
            Some(n) if matches!(n.value, NodeValue::Null) => Ok(None),
            Some(n) => self.obj(n, &o.child(key)).map(Some),
        }
    }

    fn opt_str(&self, o: &Obj<'_>, key: &str) -> Result<Option<String>, ModelError> {
        match o.field_node(key) {
            None => Ok(None),
            Some(n) => match &n.value {
                NodeValue::Null => Ok(None),
                NodeValue::Str { value, .. } => Ok(Some(value.clone())),
                other => Err(self.err(
                    n,
                    &o.child(key),
                    format!(
                        "expected a string, found {} (quote it: `{key}: \"{}\"`)",
                        node_kind(other),
                        n.key_string()
                    ),
                )),
            },
        }
    }

    fn req_str(&self, o: &Obj<'_>, key: &str) -> Result<String, ModelError> {
        match self.opt_str(o, key)? {
            Some(s) if !s.is_empty() => Ok(s),
            _ => Err(self.err(o.node, &o.child(key), "required field is missing or empty")),
        }
    }

    fn opt_bool(&self, o: &Obj<'_>, key: &str) -> Result<Option<bool>, ModelError> {
        match o.field_node(key) {
            None => Ok(None),
            Some(n) => match &n.value {
                NodeValue::Null => Ok(None),
                NodeValue::Bool(b) => Ok(Some(*b)),
                other => Err(self.err(
                    n,
                    &o.child(key),
                    format!("expected true or false, found {}", node_kind(other)),
                )),
            },
        }
    }

    fn opt_int(&self, o: &Obj<'_>, key: &str) -> Result<Option<i64>, ModelError> {
        match o.field_node(key) {
            None => Ok(None),
            Some(n) => match &n.value {
                NodeValue::Null => Ok(None),
                NodeValue::Int(i) => Ok(Some(*i)),
                other => Err(self.err(
                    n,
                    &o.child(key),
                    format!("expected an integer, found {}", node_kind(other)),
                )),
            },
        }
    }

    fn opt_list<'n>(&self, o: &Obj<'n>, key: &str) -> Result<Option<&'n [Node]>, ModelError> {
        match o.field_node(key) {
            None => Ok(None),
            Some(n) => match &n.value {
                NodeValue::Null => Ok(None),
                NodeValue::Seq(items) => Ok(Some(items)),
                other => Err(self.err(
                    n,
                    &o.child(key),
                    format!("expected a list, found {}", node_kind(other)),
                )),
            },
        }
    }

    fn str_list(&self, o: &Obj<'_>, key: &str) -> Result<Vec<String>, ModelError> {
        let mut out = Vec::new();
        for (i, n) in self
            .opt_list(o, key)?
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            match &n.value {
                NodeValue::Str { value, .. } => out.push(value.clone()),
                other => {
                    return Err(self.err(
                        n,
                        &format!("{}[{i}]", o.child(key)),
                        format!("expected a string, found {}", node_kind(other)),
                    ))
                }
            }
        }
        Ok(out)
    }

    fn str_map(&self, o: &Obj<'_>, key: &str) -> Result<IndexMap<String, String>, ModelError> {
        let mut out = IndexMap::new();
        if let Some(m) = self.opt_obj(o, key)? {
            for (k, v) in m.entries {
                let name = k.key_string();
                match &v.value {
                    NodeValue::Str { value, .. } => {
                        out.insert(name, value.clone());
                    }
                    other => {
                        return Err(self.err(
                            v,
                            &m.child(&name),
                            format!("expected a string, found {} (quote it)", node_kind(other)),
                        ))
                    }
                }
            }
        }
        Ok(out)
    }

    fn items<'n>(&self, o: &Obj<'n>, key: &str) -> Result<Vec<Obj<'n>>, ModelError> {
        let mut out = Vec::new();
        for (i, n) in self
            .opt_list(o, key)?
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            out.push(self.obj(n, &format!("{}[{i}]", o.child(key)))?);
        }
        Ok(out)
    }

    fn meta(&self, top: &Obj<'_>) -> Result<Meta, ModelError> {
        let Some(m) = self.opt_obj(top, "metadata")? else {
            return Err(self.err(top.node, "metadata", "required field is missing"));
        };
        self.known(&m, META_FIELDS)?;
        Ok(Meta {
            name: self.req_str(&m, "name")?,
            namespace: self.opt_str(&m, "namespace")?,
            labels: self.str_map(&m, "labels")?,
            annotations: self.str_map(&m, "annotations")?,
        })
    }

    fn version_selection(&self, o: &Obj<'_>) -> Result<VersionSelection, ModelError> {
        self.known(o, &["constraints", "prereleases"])?;
        // `prereleases: {}` enables them; absent or null keeps them out.
        let prereleases = match self.opt_obj(o, "prereleases")? {
            None => None,
            Some(p) => {
                self.known(&p, &["identifiers"])?;
                Some(self.str_list(&p, "identifiers")?)
            }
        };
        Ok(VersionSelection {
            constraints: self.opt_str(o, "constraints")?.unwrap_or_default(),
            prereleases,
        })
    }

    fn semver_selection(&self, o: &Obj<'_>) -> Result<VersionSelection, ModelError> {
        self.known(o, &["semver"])?;
        match self.opt_obj(o, "semver")? {
            Some(s) => self.version_selection(&s),
            None => Err(self.err(o.node, &o.child("semver"), "required field is missing")),
        }
    }

    fn constraints_only(&self, o: &Obj<'_>, key: &str) -> Result<Option<String>, ModelError> {
        match self.opt_obj(o, key)? {
            None => Ok(None),
            Some(s) => {
                self.known(&s, &["constraints"])?;
                Ok(self.opt_str(&s, "constraints")?)
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn package(
        &self,
        top: &Obj<'_>,
        meta: Meta,
        doc: Value,
        origin: Origin,
        strictness: Strictness,
        warnings: &mut Vec<Diagnostic>,
    ) -> Result<Package, ModelError> {
        let Some(spec) = self.opt_obj(top, "spec")? else {
            return Err(self.err(top.node, "spec", "required field is missing"));
        };
        self.known(
            &spec,
            &[
                "refName",
                "version",
                "releasedAt",
                "releaseNotes",
                "capacityRequirementsDescription",
                "licenses",
                "template",
                "valuesSchema",
                "includedSoftware",
                "kappControllerVersionSelection",
                "kubernetesVersionSelection",
            ],
        )?;
        let ref_name = self.req_str(&spec, "refName")?;
        let version = self.req_str(&spec, "version")?;
        self.opt_str(&spec, "capacityRequirementsDescription")?;
        for sw in self.items(&spec, "includedSoftware")? {
            self.known(&sw, &["displayName", "version", "description"])?;
            for k in ["displayName", "version", "description"] {
                self.opt_str(&sw, k)?;
            }
        }
        let values_schema = match self.opt_obj(&spec, "valuesSchema")? {
            None => None,
            Some(vs) => {
                self.known(&vs, &["openAPIv3"])?;
                vs.field_node("openAPIv3").map(Node::to_value)
            }
        };
        let template = match self.opt_obj(&spec, "template")? {
            None => None,
            Some(t) => {
                self.known(&t, &["spec"])?;
                match self.opt_obj(&t, "spec")? {
                    None => None,
                    Some(s) => {
                        self.app_spec(&s)?;
                        Some(s.node.to_value())
                    }
                }
            }
        };
        let pkg = Package {
            ref_name,
            version,
            released_at: self.opt_str(&spec, "releasedAt")?,
            release_notes: self.opt_str(&spec, "releaseNotes")?,
            licenses: self.str_list(&spec, "licenses")?,
            kubernetes_constraints: self.constraints_only(&spec, "kubernetesVersionSelection")?,
            kapp_controller_constraints: self
                .constraints_only(&spec, "kappControllerVersionSelection")?,
            template,
            values_schema,
            doc,
            origin,
            meta,
        };
        // Admission rules of kapp-controller's aggregated API server.
        let mut rules = Vec::new();
        if let Err(e) = check_ref_name(&pkg.ref_name) {
            rules.push(("spec.refName", e, spec.field_node("refName")));
        }
        if let Err(e) = Version::parse_relaxed(&pkg.version) {
            rules.push((
                "spec.version",
                format!("`{}` is not a valid semver version: {e}", pkg.version),
                spec.field_node("version"),
            ));
        }
        let want = format!("{}.{}", pkg.ref_name, pkg.version);
        if pkg.meta.name != want {
            rules.push((
                "metadata.name",
                format!(
                    "must be `<spec.refName>.<spec.version>` = `{want}`, found `{}`",
                    pkg.meta.name
                ),
                None,
            ));
        }
        self.apply_rules(rules, top.node, strictness, warnings)?;
        Ok(pkg)
    }

    fn apply_rules(
        &self,
        rules: Vec<(&str, String, Option<&Node>)>,
        fallback: &Node,
        strictness: Strictness,
        warnings: &mut Vec<Diagnostic>,
    ) -> Result<(), ModelError> {
        for (field, message, node) in rules {
            let e = self.err(node.unwrap_or(fallback), field, message);
            match strictness {
                Strictness::Strict => return Err(e),
                Strictness::Lenient => {
                    let mut d = e.to_diagnostic();
                    d.severity = crate::diagnostics::Severity::Warning;
                    d = d.with_hint("kapp-controller's API server rejects this document");
                    warnings.push(d);
                }
            }
        }
        Ok(())
    }

    /// The App spec inside `Package.spec.template`: the step kinds are
    /// checked, their bodies are passed through.
    fn app_spec(&self, s: &Obj<'_>) -> Result<(), ModelError> {
        self.known(
            s,
            &[
                "serviceAccountName",
                "cluster",
                "fetch",
                "template",
                "deploy",
                "paused",
                "canceled",
                "syncPeriod",
                "noopDelete",
                "defaultNamespace",
            ],
        )?;
        let kinds: [(&str, &[&str]); 3] = [
            (
                "fetch",
                &[
                    "inline",
                    "image",
                    "http",
                    "git",
                    "helmChart",
                    "imgpkgBundle",
                    "path",
                ],
            ),
            (
                "template",
                &[
                    "ytt",
                    "kbld",
                    "helmTemplate",
                    "kustomize",
                    "jsonnet",
                    "sops",
                    "cue",
                ],
            ),
            ("deploy", &["kapp"]),
        ];
        for (key, allowed) in kinds {
            for step in self.items(s, key)? {
                self.known(&step, allowed)?;
                if step
                    .entries
                    .iter()
                    .filter(|(k, _)| k.key_string() != "path")
                    .count()
                    != 1
                {
                    return Err(self.err(
                        step.node,
                        &step.path,
                        format!(
                            "each {key} step needs exactly one of: {}",
                            allowed.join(", ")
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    fn package_metadata(
        &self,
        top: &Obj<'_>,
        meta: Meta,
        doc: Value,
        origin: Origin,
        strictness: Strictness,
        warnings: &mut Vec<Diagnostic>,
    ) -> Result<PackageMetadata, ModelError> {
        let spec = self.opt_obj(top, "spec")?;
        let mut pm = PackageMetadata {
            meta,
            display_name: None,
            short_description: None,
            doc,
            origin,
        };
        if let Some(spec) = spec {
            self.known(
                &spec,
                &[
                    "displayName",
                    "longDescription",
                    "shortDescription",
                    "iconSVGBase64",
                    "providerName",
                    "maintainers",
                    "categories",
                    "supportDescription",
                ],
            )?;
            for k in [
                "longDescription",
                "iconSVGBase64",
                "providerName",
                "supportDescription",
            ] {
                self.opt_str(&spec, k)?;
            }
            for m in self.items(&spec, "maintainers")? {
                self.known(&m, &["name"])?;
                self.opt_str(&m, "name")?;
            }
            self.str_list(&spec, "categories")?;
            pm.display_name = self.opt_str(&spec, "displayName")?;
            pm.short_description = self.opt_str(&spec, "shortDescription")?;
        }
        let mut rules = Vec::new();
        if let Err(e) = check_ref_name(&pm.meta.name) {
            rules.push(("metadata.name", e, None));
        }
        self.apply_rules(rules, top.node, strictness, warnings)?;
        Ok(pm)
    }

    fn secret_ref(&self, o: &Obj<'_>, keys: &[&str]) -> Result<(), ModelError> {
        if let Some(s) = self.opt_obj(o, "secretRef")? {
            self.known(&s, keys)?;
            for k in keys {
                self.opt_str(&s, k)?;
            }
        }
        Ok(())
    }

    fn repository(
        &self,
        top: &Obj<'_>,
        meta: Meta,
        origin: Origin,
    ) -> Result<PackageRepository, ModelError> {
        let Some(spec) = self.opt_obj(top, "spec")? else {
            return Err(self.err(top.node, "spec", "required field is missing"));
        };
        self.known(&spec, &["fetch", "paused", "syncPeriod"])?;
        self.opt_str(&spec, "syncPeriod")?;
        let paused = self.opt_bool(&spec, "paused")?.unwrap_or(false);
        let Some(fetch) = self.opt_obj(&spec, "fetch")? else {
            return Err(self.err(spec.node, "spec.fetch", "required field is missing"));
        };
        let allowed = ["image", "imgpkgBundle", "http", "git", "inline"];
        self.known(&fetch, &allowed)?;
        if fetch.entries.len() != 1 {
            return Err(self.err(
                fetch.node,
                "spec.fetch",
                format!("needs exactly one of: {}", allowed.join(", ")),
            ));
        }
        let key = fetch.entries[0].0.key_string();
        let Some(f) = self.opt_obj(&fetch, &key)? else {
            return Err(self.err(
                fetch.node,
                &fetch.child(&key),
                "expected a mapping, found null",
            ));
        };
        let source = match key.as_str() {
            "image" => {
                self.known(&f, &["url", "secretRef", "tagSelection", "subPath"])?;
                self.secret_ref(&f, &["name"])?;
                if let Some(t) = self.opt_obj(&f, "tagSelection")? {
                    self.semver_selection(&t)?;
                }
                self.opt_str(&f, "subPath")?;
                RepoSource::Image {
                    url: self.req_str(&f, "url")?,
                }
            }
            "imgpkgBundle" => {
                self.known(&f, &["image", "secretRef", "tagSelection"])?;
                self.secret_ref(&f, &["name"])?;
                if let Some(t) = self.opt_obj(&f, "tagSelection")? {
                    self.semver_selection(&t)?;
                }
                RepoSource::ImgpkgBundle {
                    image: self.req_str(&f, "image")?,
                }
            }
            "http" => {
                self.known(&f, &["url", "sha256", "secretRef", "subPath"])?;
                self.secret_ref(&f, &["name"])?;
                RepoSource::Http {
                    url: self.req_str(&f, "url")?,
                    sha256: self.opt_str(&f, "sha256")?,
                    sub_path: self.opt_str(&f, "subPath")?,
                }
            }
            "git" => {
                self.known(
                    &f,
                    &[
                        "url",
                        "ref",
                        "refSelection",
                        "secretRef",
                        "subPath",
                        "lfsSkipSmudge",
                        "depth",
                        "forceHTTPBasicAuth",
                    ],
                )?;
                self.secret_ref(&f, &["name"])?;
                self.opt_bool(&f, "lfsSkipSmudge")?;
                self.opt_bool(&f, "forceHTTPBasicAuth")?;
                self.opt_int(&f, "depth")?;
                let ref_selection = match self.opt_obj(&f, "refSelection")? {
                    Some(r) => Some(self.semver_selection(&r)?),
                    None => None,
                };
                RepoSource::Git {
                    url: self.req_str(&f, "url")?,
                    git_ref: self.opt_str(&f, "ref")?,
                    ref_selection,
                    sub_path: self.opt_str(&f, "subPath")?,
                }
            }
            _ => {
                self.known(&f, &["paths", "pathsFrom"])?;
                if let Some(pf) = self.items(&f, "pathsFrom")?.first() {
                    self.known(pf, &["secretRef", "configMapRef"])?;
                    return Err(self.err(
                        pf.node,
                        &pf.path,
                        "secrets and config maps live in the cluster; put the files under `paths` instead",
                    ));
                }
                RepoSource::Inline {
                    paths: self.str_map(&f, "paths")?,
                }
            }
        };
        Ok(PackageRepository {
            meta,
            source,
            paused,
            origin,
        })
    }

    fn install(
        &self,
        top: &Obj<'_>,
        meta: Meta,
        doc: Value,
        origin: Origin,
    ) -> Result<PackageInstall, ModelError> {
        let Some(spec) = self.opt_obj(top, "spec")? else {
            return Err(self.err(top.node, "spec", "required field is missing"));
        };
        self.known(
            &spec,
            &[
                "serviceAccountName",
                "cluster",
                "packageRef",
                "values",
                "paused",
                "canceled",
                "syncPeriod",
                "noopDelete",
                "defaultNamespace",
            ],
        )?;
        for k in ["paused", "canceled", "noopDelete"] {
            self.opt_bool(&spec, k)?;
        }
        self.opt_str(&spec, "syncPeriod")?;
        self.opt_str(&spec, "defaultNamespace")?;
        if let Some(c) = self.opt_obj(&spec, "cluster")? {
            self.known(&c, &["namespace", "kubeconfigSecretRef"])?;
            self.opt_str(&c, "namespace")?;
            if let Some(k) = self.opt_obj(&c, "kubeconfigSecretRef")? {
                self.known(&k, &["name", "key"])?;
                self.opt_str(&k, "name")?;
                self.opt_str(&k, "key")?;
            }
        }
        let Some(pref) = self.opt_obj(&spec, "packageRef")? else {
            return Err(self.err(spec.node, "spec.packageRef", "required field is missing"));
        };
        self.known(&pref, &["refName", "versionSelection"])?;
        let ref_name = self.req_str(&pref, "refName")?;
        let selection = match self.opt_obj(&pref, "versionSelection")? {
            Some(vs) => self.version_selection(&vs)?,
            None => VersionSelection::default(),
        };
        let mut values = Vec::new();
        for v in self.items(&spec, "values")? {
            self.known(&v, &["secretRef"])?;
            let Some(s) = self.opt_obj(&v, "secretRef")? else {
                return Err(self.err(v.node, &v.child("secretRef"), "required field is missing"));
            };
            self.known(&s, &["name", "key"])?;
            values.push((self.req_str(&s, "name")?, self.opt_str(&s, "key")?));
        }
        let mut last_attempted_version = None;
        if let Some(st) = self.opt_obj(top, "status")? {
            self.known(
                &st,
                &[
                    "lastAttemptedVersion",
                    "version",
                    "conditions",
                    "observedGeneration",
                    "friendlyDescription",
                    "usefulErrorMessage",
                ],
            )?;
            last_attempted_version = self.opt_str(&st, "lastAttemptedVersion")?;
        }
        Ok(PackageInstall {
            meta,
            ref_name,
            selection,
            service_account_name: self.opt_str(&spec, "serviceAccountName")?,
            values,
            last_attempted_version: last_attempted_version.filter(|s| !s.is_empty()),
            doc,
            origin,
        })
    }
}

fn node_kind(v: &NodeValue) -> &'static str {
    match v {
        NodeValue::Null => "null",
        NodeValue::Bool(_) => "a boolean",
        NodeValue::Int(_) => "an integer",
        NodeValue::Float(_) => "a number",
        NodeValue::Str { .. } => "a string",
        NodeValue::Seq(_) => "a list",
        NodeValue::Map(_) => "a mapping",
    }
}

/// `refName` / PackageMetadata name: a DNS subdomain of at least three
/// segments (`fluent-bit.community.tanzu.vmware.com`).
pub fn check_ref_name(name: &str) -> Result<(), String> {
    let segments: Vec<&str> = name.split('.').collect();
    if segments.len() < 3 {
        return Err(format!(
            "`{name}` must have at least three dot-separated segments (e.g. `app.example.com`)"
        ));
    }
    if name.len() > 253 {
        return Err(format!("`{name}` is longer than 253 characters"));
    }
    for s in segments {
        let ok = !s.is_empty()
            && s.len() <= 63
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !s.starts_with('-')
            && !s.ends_with('-');
        if !ok {
            return Err(format!(
                "`{name}` is not a DNS subdomain (lowercase letters, digits and `-`, segments of 1-63 characters)"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(
        text: &str,
        strictness: Strictness,
    ) -> Result<(Vec<Resource>, Vec<Diagnostic>), ModelError> {
        let docs = crate::yaml::load_all(text).unwrap();
        parse_stream(Path::new("t.yaml"), &docs, strictness, false)
    }

    const PKG: &str = "apiVersion: data.packaging.carvel.dev/v1alpha1
kind: Package
metadata:
  name: app.example.com.1.0.0
spec:
  refName: app.example.com
  version: 1.0.0
  releaseNotes: first
  licenses: [Apache-2.0]
  valuesSchema:
    openAPIv3:
      properties: {}
  kubernetesVersionSelection:
    constraints: '>=1.25.0'
  template:
    spec:
      fetch:
      - imgpkgBundle:
          image: registry.example.com/app:1.0.0
      template:
      - ytt:
          paths: [config/]
      - kbld:
          paths: ['-', .imgpkg/images.yml]
      deploy:
      - kapp: {}
";

    #[test]
    fn reads_a_package() {
        let (res, warnings) = parse(PKG, Strictness::Strict).unwrap();
        assert!(warnings.is_empty());
        let Resource::Package(p) = &res[0] else {
            panic!()
        };
        assert_eq!(p.ref_name, "app.example.com");
        assert_eq!(p.version, "1.0.0");
        assert_eq!(p.kubernetes_constraints.as_deref(), Some(">=1.25.0"));
        assert_eq!(p.licenses, ["Apache-2.0"]);
        assert!(p.template.is_some());
    }

    #[test]
    fn unknown_fields_name_document_and_path() {
        let bad = PKG.replace("  releaseNotes: first", "  releaseNote: first");
        let e = parse(&bad, Strictness::Strict).unwrap_err();
        assert_eq!(e.field, "spec.releaseNote");
        assert_eq!(e.line, 8);
        assert!(
            e.to_string().contains("Package app.example.com.1.0.0"),
            "{e}"
        );
        let bad = PKG.replace("      - kapp: {}", "      - kap: {}");
        let e = parse(&bad, Strictness::Strict).unwrap_err();
        assert_eq!(e.field, "spec.template.spec.deploy[0].kap");
        let bad = PKG.replace("  version: 1.0.0", "  version: 1");
        let e = parse(&bad, Strictness::Strict).unwrap_err();
        assert_eq!(e.field, "spec.version");
        assert!(e.message.contains("expected a string"), "{e}");
    }

    #[test]
    fn admission_rules_strict_or_warned() {
        let bad = PKG.replace("name: app.example.com.1.0.0", "name: app.1.0.0");
        let e = parse(&bad, Strictness::Strict).unwrap_err();
        assert_eq!(e.field, "metadata.name");
        let short = PKG.replace("app.example.com", "app");
        let e = parse(&short, Strictness::Strict).unwrap_err();
        assert_eq!(e.field, "spec.refName");
        let (res, warnings) = parse(&short, Strictness::Lenient).unwrap();
        assert_eq!(res.len(), 1);
        assert_eq!(warnings.len(), 1);
        let badver = PKG.replace("1.0.0", "1.0");
        let e = parse(&badver, Strictness::Strict).unwrap_err();
        assert_eq!(e.field, "spec.version");
    }

    #[test]
    fn wrong_api_version_and_kind() {
        let e = parse(
            &PKG.replace("data.packaging", "packaging"),
            Strictness::Strict,
        )
        .unwrap_err();
        assert_eq!(e.field, "apiVersion");
        let e = parse(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
            Strictness::Strict,
        )
        .unwrap_err();
        assert_eq!(e.field, "kind");
    }

    #[test]
    fn reads_install_and_repository() {
        let text = "apiVersion: packaging.carvel.dev/v1alpha1
kind: PackageInstall
metadata:
  name: app
  namespace: apps
  annotations:
    packaging.carvel.dev/downgradable: ''
spec:
  serviceAccountName: sa
  packageRef:
    refName: app.example.com
    versionSelection:
      constraints: '>=1.0.0 <2.0.0'
      prereleases:
        identifiers: [rc]
  values:
  - secretRef:
      name: app-values
status:
  lastAttemptedVersion: 1.0.0
---
apiVersion: packaging.carvel.dev/v1alpha1
kind: PackageRepository
metadata:
  name: repo
spec:
  fetch:
    git:
      url: https://example.com/repo.git
      refSelection:
        semver:
          constraints: '>=1.0.0'
      subPath: repo
";
        let (res, _) = parse(text, Strictness::Strict).unwrap();
        let Resource::PackageInstall(i) = &res[0] else {
            panic!()
        };
        assert_eq!(i.selection.constraints, ">=1.0.0 <2.0.0");
        assert_eq!(i.selection.prereleases, Some(vec!["rc".to_string()]));
        assert_eq!(i.values, [("app-values".to_string(), None)]);
        assert_eq!(i.last_attempted_version.as_deref(), Some("1.0.0"));
        let Resource::PackageRepository(r) = &res[1] else {
            panic!()
        };
        let RepoSource::Git {
            ref_selection,
            sub_path,
            ..
        } = &r.source
        else {
            panic!()
        };
        assert_eq!(ref_selection.as_ref().unwrap().constraints, ">=1.0.0");
        assert_eq!(sub_path.as_deref(), Some("repo"));

        let two = text.replace("    git:\n", "    http:\n      url: http://x\n    git:\n");
        let e = parse(&two, Strictness::Strict).unwrap_err();
        assert_eq!(e.field, "spec.fetch");
        let novalue = text.replace("  - secretRef:\n      name: app-values\n", "  - {}\n");
        let e = parse(&novalue, Strictness::Strict).unwrap_err();
        assert_eq!(e.field, "spec.values[0].secretRef");
    }

    #[test]
    fn ref_names() {
        assert!(check_ref_name("fluent-bit.carvel.dev").is_ok());
        assert!(check_ref_name("expected-pkg").is_err());
        assert!(check_ref_name("Upper.example.com").is_err());
        assert!(check_ref_name("a..b.c").is_err());
    }
}
