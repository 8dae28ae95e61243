//! The lint rules that read files themselves (plaintext secrets, base64
//! secret references in catalogs) or rendered targets (Commodore rules).

use super::LintError;
use crate::diagnostics::Diagnostic;
use crate::inventory::RenderedNode;
use crate::value::Value;
use crate::yaml::{Node, NodeValue};
use regex::Regex;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// Parsed inventory files, each read once for all rules and targets.
#[derive(Default)]
pub struct FileCache {
    files: HashMap<PathBuf, Option<Arc<Text>>>,
    shared: Option<Arc<SharedParses>>,
}

/// Files parsed by content, for lints that run side by side on two trees
/// holding mostly the same files (a review's base and head): each text is
/// parsed and searched for plaintext secrets once. A node's lines depend on
/// its text alone, not on its path.
#[derive(Default)]
pub struct SharedParses {
    by_text: Mutex<HashMap<Arc<str>, Arc<Text>>>,
    /// The YAML parses, shared with the inventories lint reads (a
    /// review's base and head loaded them already).
    yaml: Option<Arc<crate::yaml::TextCache>>,
}

/// One file text, and what the rules read from it, each made once.
struct Text {
    text: Arc<str>,
    yaml: Option<Arc<crate::yaml::TextCache>>,
    /// The documents, or why they do not parse.
    docs: OnceLock<Arc<crate::yaml::Parse>>,
    /// `plaintext_secrets`' findings, naming the file that made them.
    secrets: OnceLock<Vec<Diagnostic>>,
}

impl Text {
    fn new(text: Arc<str>, yaml: Option<Arc<crate::yaml::TextCache>>) -> Self {
        Text {
            text,
            yaml,
            docs: OnceLock::new(),
            secrets: OnceLock::new(),
        }
    }

    fn docs(&self) -> Option<&[Node]> {
        // The other side may be parsing the same text: it waits for that
        // parse rather than doing its own.
        let parse = self.docs.get_or_init(|| match &self.yaml {
            Some(cache) => cache.parse(&self.text),
            None => Arc::new(crate::yaml::Parse::of(&self.text)),
        });
        parse.all().as_deref().ok()
    }
}

impl std::fmt::Debug for SharedParses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedParses").finish_non_exhaustive()
    }
}

impl SharedParses {
    /// Parses shared with the inventories that parsed through `yaml`.
    pub fn with_yaml(yaml: Arc<crate::yaml::TextCache>) -> Self {
        SharedParses {
            by_text: Mutex::default(),
            yaml: Some(yaml),
        }
    }

    fn text(&self, text: String) -> Arc<Text> {
        let mut map = self.by_text.lock().unwrap_or_else(|e| e.into_inner());
        let text: Arc<str> = text.into();
        Arc::clone(
            map.entry(Arc::clone(&text))
                .or_insert_with(|| Arc::new(Text::new(text, self.yaml.clone()))),
        )
    }
}

impl FileCache {
    /// A cache whose parses are shared with other lints through `shared`.
    pub fn sharing(shared: Option<Arc<SharedParses>>) -> Self {
        FileCache {
            files: HashMap::new(),
            shared,
        }
    }

    /// The file's text; `None` when it cannot be read.
    fn text(&mut self, path: &Path) -> Option<&Text> {
        let shared = &self.shared;
        self.files
            .entry(path.to_path_buf())
            .or_insert_with(|| {
                let text = std::fs::read_to_string(path).ok()?;
                Some(match shared {
                    Some(s) => s.text(text),
                    None => Arc::new(Text::new(text.into(), None)),
                })
            })
            .as_deref()
    }

    /// The file's documents; `None` when it cannot be read or parsed (the
    /// `yaml-invalid` rule reports that).
    fn get(&mut self, path: &Path) -> Option<&[Node]> {
        self.text(path)?.docs()
    }
}

fn secret_key_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new("(?i)(password|passwd|secret|token|api[_-]?key|private[_-]?key|access[_-]?key|credential)")
            .expect("static regex is valid")
    })
}

/// Shannon entropy in bits per character.
pub fn entropy(s: &str) -> f64 {
    // Ordered, so the float sum (and so the verdict) is the same every run.
    let mut counts: BTreeMap<char, usize> = BTreeMap::new();
    let mut n = 0usize;
    for c in s.chars() {
        *counts.entry(c).or_insert(0) += 1;
        n += 1;
    }
    if n == 0 {
        return 0.0;
    }
    counts
        .values()
        .map(|&k| {
            let p = k as f64 / n as f64;
            -p * p.log2()
        })
        .sum()
}

/// Whether a value under a secret-like key looks like a real secret rather
/// than a name, a path, a reference or a placeholder.
pub fn looks_like_secret(s: &str) -> bool {
    let len = s.chars().count();
    if len < 12 || s.chars().any(char::is_whitespace) {
        return false;
    }
    // References are resolved elsewhere: `${...}` parameters, `?{...}` secrets.
    if s.contains("${") || s.contains("?{") || s.contains("://") || s.starts_with('/') {
        return false;
    }
    let classes = [
        s.chars().any(|c| c.is_ascii_lowercase()),
        s.chars().any(|c| c.is_ascii_uppercase()),
        s.chars().any(|c| c.is_ascii_digit()),
        s.chars().any(|c| !c.is_ascii_alphanumeric()),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    // Lower-case words with separators (`my-app-tls`, `db.secret.name`) are names.
    if !s
        .chars()
        .any(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
    {
        return false;
    }
    let h = entropy(s);
    (classes >= 3 && h >= 3.0) || (len >= 20 && h >= 3.5)
}

/// Keys that name or point at a secret rather than hold one:
/// `secretName`, `existingSecret`, `tokenPath`, `passwordFile`, `secretRef`.
fn names_a_secret(key: &str) -> bool {
    let k = key.to_ascii_lowercase().replace(['-', '_', '.'], "");
    k.starts_with("existing")
        || [
            "name",
            "names",
            "ref",
            "refs",
            "file",
            "path",
            "dir",
            "mount",
            "key",
            "keys",
            "enabled",
            "type",
            "length",
            "policy",
            "namespace",
            "field",
            "selector",
            "env",
        ]
        .iter()
        .any(|s| k.ends_with(s) && k.len() > s.len())
}

/// Empty values and references (resolved, and checked, elsewhere).
fn is_reference(s: &str) -> bool {
    let t = s.trim();
    t.is_empty() || t.contains("?{") || t.contains("${")
}

/// An absolute file path (`/opt/secrets/sa.json`): what a secret-like key
/// holds when it names the file the secret is read from
/// (`GOOGLE_APPLICATION_CREDENTIALS`, `*_TOKEN_FILE` written without the
/// suffix). Two or more components of ordinary path characters, so a
/// password that happens to start with `/` (`/Sup3r$ecret!`) still warns.
fn is_file_path(s: &str) -> bool {
    let Some(rest) = s.strip_prefix('/') else {
        return false;
    };
    let parts: Vec<&str> = rest.split('/').collect();
    parts.len() >= 2
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        })
}

/// `plaintext-secret`: high-entropy strings under secret-like keys below
/// `parameters`. The message never includes the value.
pub fn plaintext_secrets(file: &Path, cache: &mut FileCache) -> Vec<Diagnostic> {
    let Some(text) = cache.text(file) else {
        return Vec::new();
    };
    let found = text.secrets.get_or_init(|| {
        let mut out = Vec::new();
        for doc in text.docs().unwrap_or_default() {
            if let Some(params) = doc.get("parameters") {
                walk_secrets(params, "parameters", false, file, &mut out);
            }
        }
        out
    });
    // Made from another tree's file of the same text: the same findings,
    // in this file.
    found
        .iter()
        .map(|d| Diagnostic {
            file: Some(file.to_path_buf()),
            ..d.clone()
        })
        .collect()
}

fn walk_secrets(
    node: &Node,
    path: &str,
    under_secret: bool,
    file: &Path,
    out: &mut Vec<Diagnostic>,
) {
    match &node.value {
        NodeValue::Map(entries) => {
            for (k, v) in entries {
                let key = k.key_string();
                // Kapitan's backend settings (gpg fingerprints, KMS key
                // names, Vault addresses) are not secret values.
                if path == "parameters.kapitan" && key == "secrets" {
                    continue;
                }
                let own = secret_key_re().is_match(&key) && !names_a_secret(&key);
                // `importCredentialsSecret: {name: my-user2}`,
                // `secretKeyRef: {name: ..}`: a Kubernetes object's name
                // inside a secret-like map names the Secret, it is no secret.
                let naming = ["name", "namespace", "kind"].contains(&key.as_str());
                let secret = (under_secret && !naming) || secret_key_re().is_match(&key);
                let p = format!("{path}.{key}");
                walk_secrets(v, &p, secret, file, out);
                if own {
                    if let NodeValue::Str { value, .. } = &v.value {
                        if !looks_like_secret(value) && !is_reference(value) && !is_file_path(value)
                        {
                            out.push(
                                Diagnostic::warning(format!(
                                    "`{p}` is a plaintext value under a secret-like key, not a `?{{...}}` secret reference"
                                ))
                                .with_code("plaintext-secret")
                                .with_file(file)
                                .with_line(v.line)
                                .with_param_path(&p)
                                .with_hint("keep secrets out of git: store it in a secret backend and reference it, e.g. `?{vaultkv:${cluster:name}/app/password}`"),
                            );
                        }
                    }
                }
            }
        }
        NodeValue::Seq(items) => {
            for (i, v) in items.iter().enumerate() {
                walk_secrets(v, &format!("{path}[{i}]"), under_secret, file, out);
            }
        }
        NodeValue::Str { value, .. } if under_secret && looks_like_secret(value) => {
            out.push(
                Diagnostic::error(format!(
                    "`{path}` looks like a plaintext secret ({} characters, high entropy)",
                    value.chars().count()
                ))
                .with_code("plaintext-secret")
                .with_file(file)
                .with_line(node.line)
                .with_param_path(path)
                .with_hint("keep secrets out of git: store it in a secret backend and reference it, e.g. `?{vaultkv:${cluster:name}/app/password}`"),
            );
        }
        _ => {}
    }
}

/// Decodes standard or URL-safe base64 (padding optional); `None` if invalid.
pub fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.trim_end_matches('=');
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        } as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    if bits >= 6 {
        return None;
    }
    Some(out)
}

/// kapp ordering rules over each compiled target (a top-level directory of
/// the catalog): malformed `kapp.k14s.io/change-group`/`change-rule`
/// annotations, ordering cycles, and rules that can never match. Only
/// Kubernetes objects (documents with `apiVersion` and `kind`) take part.
pub fn order_findings(catalog: &Path) -> Result<Vec<Diagnostic>, LintError> {
    if !catalog.is_dir() {
        return Err(LintError::NoCatalog {
            path: catalog.to_path_buf(),
        });
    }
    let targets = crate::order::catalog_documents(catalog).map_err(|e| LintError::Io {
        path: catalog.to_path_buf(),
        message: e.to_string(),
    })?;
    let mut out = Vec::new();
    for docs in targets.values() {
        out.extend(crate::order::lint(docs, &crate::order::Options::default()));
    }
    Ok(out)
}

/// `vaultkv-base64`: base64 strings in catalog files that decode to text
/// holding a `?{vaultkv:...}` reference. Files are visited in sorted order.
pub fn vaultkv_base64(catalog: &Path) -> Result<Vec<Diagnostic>, LintError> {
    if !catalog.is_dir() {
        return Err(LintError::NoCatalog {
            path: catalog.to_path_buf(),
        });
    }
    let token = Regex::new(r"[A-Za-z0-9+/_-]{16,}={0,2}").expect("static regex is valid");
    let reference = Regex::new(r"\?\{vaultkv:[^}]*\}").expect("static regex is valid");
    let files = crate::fswalk::files_below(catalog, &crate::fswalk::not_git).map_err(|e| {
        LintError::Io {
            path: e.path,
            message: e.source.to_string(),
        }
    })?;
    let mut out = Vec::new();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue; // binary files hold no YAML manifests
        };
        for (i, line) in text.lines().enumerate() {
            for m in token.find_iter(line) {
                let Some(bytes) = base64_decode(m.as_str()) else {
                    continue;
                };
                let decoded = String::from_utf8_lossy(&bytes);
                if let Some(r) = reference.find(&decoded) {
                    out.push(
                        Diagnostic::error(format!(
                            "`{}` is base64-encoded here, so the secret backend never resolves it",
                            r.as_str()
                        ))
                        .with_code("vaultkv-base64")
                        .with_file(&f)
                        .with_line(i + 1)
                        .with_hint("put the reference under `stringData` (not `data`) of the Secret, or do not base64-encode it in the component"),
                    );
                }
            }
        }
    }
    Ok(out)
}

/// The Commodore rules on one rendered target. Only targets with a
/// `parameters.components` map are Commodore targets, and only entries with
/// a `url` are Commodore component specs: Kapitan inventories (e.g.
/// kapitan-reference's generators) use `parameters.components` for their
/// own settings, without `url` or `version`.
pub fn commodore(node: &RenderedNode, files: &[PathBuf], cache: &mut FileCache) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let Some(components) = node
        .parameters
        .get_path(&["components"])
        .and_then(Value::as_map)
    else {
        return out;
    };
    for (name, spec) in components {
        if spec.as_map().is_none_or(|m| m.get("url").is_none()) {
            continue;
        }
        let has_version = spec
            .as_map()
            .and_then(|m| m.get("version"))
            .is_some_and(|v| !v.is_null());
        if !has_version {
            let mut d = Diagnostic::error(format!("component `{name}` has no `version`"))
                .with_code("component-without-version")
                .with_param_path(format!("parameters.components.{name}"))
                .with_hint("pin the component: set `parameters.components.<name>.version` to a tag or commit");
            if let Some((f, l)) = locate(files, cache, |doc| {
                match &doc.get("parameters")?.get("components")?.value {
                    NodeValue::Map(entries) => entries
                        .iter()
                        .find(|(k, _)| k.key_string() == *name)
                        .map(|(k, _)| k.line),
                    _ => None,
                }
            }) {
                d = d.with_file(f).with_line(l);
            }
            out.push(d);
        }
    }
    let mut instances: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for app in &node.applications {
        // `pkg.*` entries are Commodore configuration packages, not components.
        if app.starts_with("pkg.") {
            continue;
        }
        let (component, instance) = match app.split_once(" as ") {
            Some((c, i)) => (c.trim(), i.trim()),
            None => (app.trim(), app.trim()),
        };
        instances.entry(instance).or_default().push(app);
        if !components.contains_key(component) {
            let mut d = Diagnostic::error(format!(
                "applications entry `{app}` names component `{component}`, which is not in parameters.components"
            ))
            .with_code("unknown-component")
            .with_hint(format!("add `parameters.components.{component}` with `url` and `version`, or fix the name"));
            if let Some((f, l)) = locate_app(files, cache, app) {
                d = d.with_file(f).with_line(l);
            }
            out.push(d);
        }
    }
    for (instance, apps) in instances {
        if apps.len() > 1 {
            let mut d = Diagnostic::error(format!(
                "instance name `{instance}` is used by {} applications entries: {}",
                apps.len(),
                apps.iter()
                    .map(|a| format!("`{a}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
            .with_code("duplicate-instance")
            .with_hint("give each instance a unique name with `component as instance`");
            if let Some((f, l)) = locate_app(files, cache, apps[1]) {
                d = d.with_file(f).with_line(l);
            }
            out.push(d);
        }
    }
    out
}

fn locate_app(files: &[PathBuf], cache: &mut FileCache, app: &str) -> Option<(PathBuf, usize)> {
    locate(files, cache, |doc| match &doc.get("applications")?.value {
        NodeValue::Seq(items) => items
            .iter()
            .find(|n| matches!(&n.value, NodeValue::Str { value, .. } if value.trim() == app))
            .map(|n| n.line),
        _ => None,
    })
}

/// The first file and line that sets a dotted parameter path
/// (`parameters.a.b`; `~`/`=` key prefixes are ignored).
pub fn locate_param(
    files: &[PathBuf],
    cache: &mut FileCache,
    path: &str,
) -> Option<(PathBuf, usize)> {
    let keys: Vec<&str> = path.split('.').collect();
    locate(files, cache, |doc| {
        let mut node = doc;
        let mut line = None;
        for k in &keys {
            let (key, value) = crate::inventory::locate::key_of(node, k)?;
            line = Some(key.line);
            node = value;
        }
        line
    })
}

/// The first file (in the order given) and line where `find` matches.
fn locate(
    files: &[PathBuf],
    cache: &mut FileCache,
    find: impl Fn(&Node) -> Option<usize>,
) -> Option<(PathBuf, usize)> {
    for f in files {
        if let Some(docs) = cache.get(f) {
            if let Some(line) = docs.iter().find_map(&find) {
                return Some((f.clone(), line));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {

    #[test]
    fn order_findings_cover_malformed_annotations_per_target() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("prod");
        std::fs::create_dir_all(&t).unwrap();
        std::fs::write(
            t.join("job.yaml"),
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  annotations:\n    kapp.k14s.io/change-rule: \"upsert sometime\"\n",
        )
        .unwrap();
        std::fs::write(t.join("values.yaml"), "replicas: 2\n").unwrap();
        let found = order_findings(dir.path()).unwrap();
        assert!(
            found.iter().any(|d| d.code == crate::order::CODE_MALFORMED),
            "{found:?}"
        );
        let clean = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(clean.path().join("dev")).unwrap();
        std::fs::write(clean.path().join("dev/values.yaml"), "replicas: 2\n").unwrap();
        assert!(order_findings(clean.path()).unwrap().is_empty());
    }

    use super::*;

    /// Two lints sharing parses read each file themselves (their findings
    /// name their own paths) and parse a text the other parsed only once.
    #[test]
    fn lints_side_by_side_parse_a_shared_text_once() {
        let dir = tempfile::tempdir().unwrap();
        let text = "parameters:\n  db:\n    password: Sup3rS3cr3tP@ss!\n";
        let files: Vec<PathBuf> = ["base.yml", "head.yml", "other.yml"]
            .iter()
            .map(|n| dir.path().join(n))
            .collect();
        std::fs::write(&files[0], text).unwrap();
        std::fs::write(&files[1], text).unwrap();
        std::fs::write(&files[2], format!("\n{text}")).unwrap();
        let shared = Arc::new(SharedParses::default());
        let mut base = FileCache::sharing(Some(Arc::clone(&shared)));
        let mut head = FileCache::sharing(Some(shared));
        let a = base.get(&files[0]).unwrap().as_ptr();
        assert_eq!(head.get(&files[1]).unwrap().as_ptr(), a);
        assert_ne!(head.get(&files[2]).unwrap().as_ptr(), a);
        let line = |c: &mut FileCache, f: &Path| {
            let found = plaintext_secrets(f, c);
            assert_eq!(found.len(), 1, "{found:?}");
            assert_eq!(found[0].file.as_deref(), Some(f));
            found[0].line
        };
        assert_eq!(line(&mut base, &files[0]), Some(3));
        assert_eq!(line(&mut head, &files[1]), Some(3));
        assert_eq!(line(&mut head, &files[2]), Some(4));
    }

    #[test]
    fn secret_heuristic() {
        for s in [
            "Sup3rS3cr3tP@ss!",
            "ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R",
            "3f9a0c1d7e2b4a6f8c0d1e3f5a7b9c2d4e6f8a0b",
        ] {
            assert!(looks_like_secret(s), "{s}");
        }
        for s in [
            "changeme",
            "my-app-tls-secret",
            "?{vaultkv:a/b}",
            "${secret:x}",
            "/etc/secret/token",
            "https://example.com/Token1",
            "hunter2",
        ] {
            assert!(!looks_like_secret(s), "{s}");
        }
    }

    #[test]
    fn any_plaintext_value_under_a_secret_key_warns() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("c.yml");
        std::fs::write(
            &f,
            "parameters:\n  password: hunter2plaintext\n  db:\n    token: ''\n    api_key: '?{vaultkv:a/b}'\n    secretName: my-tls\n    existingSecret: x\n    passwordRef: ${x}\n    secret: changeme\n  app_token: Sup3rS3cr3tP@ss!\n",
        )
        .unwrap();
        let mut cache = FileCache::default();
        let found: Vec<(crate::diagnostics::Severity, String, Option<usize>)> =
            plaintext_secrets(&f, &mut cache)
                .into_iter()
                .map(|d| (d.severity, d.param_path.clone().unwrap_or_default(), d.line))
                .collect();
        use crate::diagnostics::Severity::*;
        assert_eq!(
            found,
            vec![
                (Warning, "parameters.password".to_string(), Some(2)),
                (Warning, "parameters.db.secret".to_string(), Some(9)),
                (Error, "parameters.app_token".to_string(), Some(10)),
            ]
        );
        for d in plaintext_secrets(&f, &mut cache) {
            assert!(!d.message.contains("hunter2") && !d.message.contains("changeme"));
        }
    }

    /// compat34 (compat-lint-credentials-file-path): kapicorp/
    /// kapitan-reference's `env: {GOOGLE_APPLICATION_CREDENTIALS:
    /// /opt/secrets/service_account_file}` (two components) was reported
    /// as a plaintext secret: the variable names the key file, it is no
    /// secret.
    #[test]
    fn a_file_path_under_a_secret_key_is_no_plaintext_secret() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("c.yml");
        std::fs::write(
            &f,
            "parameters:\n  env:\n    GOOGLE_APPLICATION_CREDENTIALS: /opt/secrets/service_account_file\n    AWS_CREDENTIALS: /var/run/secrets/aws.json\n    DB_PASSWORD: /Sup3r$ecret!\n    API_TOKEN: /tok\n    SECRET: /a//b\n",
        )
        .unwrap();
        let mut cache = FileCache::default();
        let found: Vec<String> = plaintext_secrets(&f, &mut cache)
            .into_iter()
            .map(|d| d.param_path.clone().unwrap_or_default())
            .collect();
        assert_eq!(
            found,
            vec![
                "parameters.env.DB_PASSWORD".to_string(),
                "parameters.env.API_TOKEN".to_string(),
                "parameters.env.SECRET".to_string(),
            ]
        );
    }

    #[test]
    fn base64() {
        assert_eq!(
            base64_decode("P3t2YXVsdGt2OmEvYn0=").unwrap(),
            b"?{vaultkv:a/b}"
        );
        assert_eq!(base64_decode("aGk").unwrap(), b"hi");
        assert!(base64_decode("a").is_none());
        assert!(base64_decode("a b").is_none());
    }
}
