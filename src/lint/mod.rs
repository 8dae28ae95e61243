//! Inventory lint: every problem in one run, as [`Diagnostic`]s with a rule
//! id, a severity and a file and line where there is one.
//!
//! Rules: files that do not parse or have the wrong shape, missing classes,
//! unresolvable references, reference and include cycles (each target is
//! rendered on its own so every target reports), classes no target uses,
//! plaintext values that look like secrets, `?{vaultkv:...}` references that
//! a compiled catalog base64-encoded, and the Commodore rules on
//! `parameters.components` / `applications`.

pub mod baseline;
pub mod rules;

use crate::diagnostics::{Diagnostic, Severity};
use crate::inventory::{Inventory, InventoryError, RenderedNode};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every rule: id, default severity, one-line description (for SARIF and docs).
pub const RULES: &[(&str, Severity, &str)] = &[
    ("yaml-invalid", Severity::Error, "a class or target file is not valid YAML"),
    ("inventory-invalid", Severity::Error, "a class or target file has the wrong shape, or two files define one name"),
    ("class-not-found", Severity::Error, "a class or target includes a class that does not exist"),
    ("class-cycle", Severity::Error, "classes include each other in a cycle"),
    ("unresolved-reference", Severity::Error, "a ${...} reference cannot be resolved"),
    ("reference-cycle", Severity::Error, "${...} references refer to each other in a loop"),
    ("render-error", Severity::Error, "a target cannot be rendered (merge or constant conflict)"),
    ("unused-class", Severity::Warning, "no target includes this class"),
    ("plaintext-secret", Severity::Error, "a value under a secret-like key is not a ?{...} reference (an error when it looks like a real secret, a warning otherwise)"),
    ("missing-secret-ref", Severity::Error, "a ?{type:path} secret reference has no reference file and no function to create it (strata compile would fail)"),
    ("vaultkv-base64", Severity::Error, "a ?{vaultkv:...} reference is base64-encoded in the compiled catalog, so it is never resolved"),
    ("compile-entry-invalid", Severity::Error, "parameters.kapitan (its compile entries, vars, dependencies) is invalid: strata compile and Kapitan would refuse it"),
    ("component-without-version", Severity::Error, "a Commodore component has no version"),
    ("duplicate-instance", Severity::Error, "two applications entries use the same instance name"),
    ("unknown-component", Severity::Error, "an applications entry names a component not in parameters.components"),
    (crate::order::CODE_MALFORMED, Severity::Error, "a kapp.k14s.io/change-group or change-rule annotation is malformed"),
    (crate::order::CODE_CYCLE, Severity::Error, "kapp change rules order the objects of a target in a cycle"),
    (crate::order::CODE_UNMATCHED, Severity::Warning, "a kapp change rule names a change group that no object carries"),
    (crate::order::CODE_INVALID, Severity::Error, "the objects of a target cannot be ordered (invalid input)"),
];

#[derive(Debug, thiserror::Error)]
pub enum LintError {
    #[error("catalog directory {} not found", path.display())]
    NoCatalog { path: PathBuf },
    #[error("cannot read {}: {message}", path.display())]
    Io { path: PathBuf, message: String },
    #[error(transparent)]
    Inventory(#[from] InventoryError),
}

impl crate::diagnostics::ToDiagnostic for LintError {
    fn to_diagnostic(&self) -> Diagnostic {
        let d = Diagnostic::error(self.to_string());
        match self {
            LintError::NoCatalog { path } => d
                .with_file(path)
                .with_hint("pass --catalog DIR pointing at a compiled catalog, or leave it out"),
            LintError::Io { path, .. } => d.with_file(path),
            LintError::Inventory(e) => e.to_diagnostic(),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct LintOptions {
    /// A compiled catalog to check for base64-encoded secret references.
    pub catalog: Option<PathBuf>,
    /// Kapitan's refs directory: every `?{...}` tag in the parameters must
    /// have its reference file (or a function). Unset: no check.
    pub refs_path: Option<PathBuf>,
    /// Parses shared with a lint of another tree running beside this one.
    pub shared_parses: Option<std::sync::Arc<rules::SharedParses>>,
}

/// Loads the inventory and lints it. Problems that stop the inventory from
/// loading at all (two files defining one name, a broken
/// `reclass-config.yml`) are findings too; a missing directory or an invalid
/// option is an error.
pub fn lint_path(
    inv_opts: &crate::inventory::InventoryOptions,
    opts: &LintOptions,
) -> Result<Vec<Diagnostic>, LintError> {
    match Inventory::load(inv_opts) {
        Ok(inv) => lint(&inv, opts),
        Err(
            e @ (InventoryError::Collides { .. }
            | InventoryError::Yaml { .. }
            | InventoryError::Shape { .. }
            | InventoryError::BadClassMapping { .. }
            | InventoryError::UnsupportedConfig { .. }),
        ) => {
            let mut found = Findings::default();
            found.add(inventory_diagnostic(&e), None);
            if let Some(cat) = &opts.catalog {
                for d in rules::vaultkv_base64(cat)? {
                    found.add(d, None);
                }
            }
            Ok(found.finish())
        }
        Err(e) => Err(e.into()),
    }
}

/// Runs every rule. Findings are deduplicated (a class shared by several
/// targets reports once, naming the targets) and sorted by file, line, rule.
pub fn lint(inv: &Inventory, opts: &LintOptions) -> Result<Vec<Diagnostic>, LintError> {
    let results = render_all(inv);
    let refs: BTreeMap<String, &Result<RenderedNode, InventoryError>> =
        results.iter().map(|(t, r)| (t.clone(), r)).collect();
    lint_rendered(inv, &refs, opts)
}

/// Every target rendered on its own (so every broken target reports), in
/// parallel: what [`lint_rendered`] takes.
pub fn render_all(inv: &Inventory) -> BTreeMap<String, Result<RenderedNode, InventoryError>> {
    // Without the target in the message, so that one broken class shared
    // by many targets is reported once, naming them.
    let bare = |e| match e {
        InventoryError::InTarget { source, .. } => *source,
        e => e,
    };
    inv.render_each()
        .into_iter()
        .map(|(t, r)| (t, r.map_err(bare)))
        .collect()
}

/// [`lint`] with every target already rendered ([`render_all`]'s results;
/// `rendered` has one entry per target of `inv`). A review lints a
/// revision with the renders of the targets a change cannot reach taken
/// from the other revision: the findings are those of [`lint`].
pub fn lint_rendered(
    inv: &Inventory,
    results: &BTreeMap<String, &Result<RenderedNode, InventoryError>>,
    opts: &LintOptions,
) -> Result<Vec<Diagnostic>, LintError> {
    let mut found = Findings::default();
    for w in inv.warnings() {
        found.add(
            Diagnostic::error(format!("unknown key `{}` in {}", w.key, w.path.display()))
                .with_file(&w.path)
                .with_code("config-unknown-key")
                .with_hint("remove the key, or check its spelling against reclass-rs's reclass-config.yml keys"),
            None,
        );
    }
    for e in inv.check_files() {
        found.add(inventory_diagnostic(&e), None);
    }
    let class_files = inv.class_files();
    let mut files: Vec<PathBuf> = class_files.iter().map(|(_, f)| f.clone()).collect();
    files.extend(
        inv.target_names()
            .iter()
            .filter_map(|t| inv.target_file(t).map(|p| p.to_path_buf())),
    );
    let mut cache = rules::FileCache::sharing(opts.shared_parses.clone());
    let mut rendered: BTreeMap<&str, &RenderedNode> = BTreeMap::new();
    let mut failed = false;
    // Results are handled in target order.
    for t in inv.target_names() {
        let Some(r) = results.get(&t) else {
            continue;
        };
        match r {
            Ok(node) => {
                let (k, _) = results.get_key_value(&t).expect("present");
                rendered.insert(k.as_str(), node);
            }
            Err(e) => {
                failed = true;
                let mut d = inventory_diagnostic(e);
                // Loops and merge conflicts name a parameter, not a file:
                // point at the first file that sets it.
                if d.file.is_none() {
                    if let Some(p) = d.param_path.clone() {
                        if let Some((f, l)) = rules::locate_param(&files, &mut cache, &p) {
                            d = d.with_file(f).with_line(l);
                        }
                    }
                }
                found.add(d, Some(&t));
            }
        }
    }
    // With a target that did not render, its classes are unknown: an
    // "unused" report would be a guess.
    if !failed {
        let used: BTreeSet<&str> = rendered
            .values()
            .flat_map(|n| n.classes.iter().map(String::as_str))
            .collect();
        for (name, file) in &class_files {
            if !used.contains(name.as_str()) {
                found.add(
                    Diagnostic::warning(format!("class `{name}` is not used by any target"))
                        .with_code("unused-class")
                        .with_file(file)
                        .with_hint("remove the class, or include it where it is needed"),
                    None,
                );
            }
        }
    }
    for f in &files {
        for d in rules::plaintext_secrets(f, &mut cache) {
            found.add(d, None);
        }
    }
    let class_map: BTreeMap<&str, &PathBuf> =
        class_files.iter().map(|(n, f)| (n.as_str(), f)).collect();
    for (t, node) in &rendered {
        let mut node_files: Vec<PathBuf> = node
            .classes
            .iter()
            .filter_map(|c| class_map.get(c.as_str()).map(|p| (*p).clone()))
            .collect();
        if let Some(tf) = inv.target_file(t) {
            node_files.push(tf.to_path_buf());
        }
        for d in rules::commodore(node, &node_files, &mut cache) {
            found.add(d, Some(t));
        }
        if let Err(e) = crate::compile::model::plan_target(node) {
            use crate::diagnostics::ToDiagnostic;
            let e = crate::compile::locate_entry_error(e, node);
            found.add(
                e.to_diagnostic().with_code("compile-entry-invalid"),
                Some(t),
            );
        }
    }
    if let Some(refs_path) = &opts.refs_path {
        let refs = crate::refs::Refs::new(refs_path);
        // The tags of each input file, by line: read and scanned once, not
        // once per target naming it (probe 39, lint-input-scan-per-target:
        // a class naming a directory of 200 files of 1 MB, included by 20
        // targets, took `lint` 48 s; each target may name 2,000 files).
        let mut scanned: BTreeMap<PathBuf, Vec<(usize, String)>> = BTreeMap::new();
        for (t, node) in &rendered {
            let mut node_files: Vec<PathBuf> = node
                .classes
                .iter()
                .filter_map(|c| class_map.get(c.as_str()).map(|p| (*p).clone()))
                .collect();
            if let Some(tf) = inv.target_file(t) {
                node_files.push(tf.to_path_buf());
            }
            // The target's own file wins: it is the most specific.
            node_files.reverse();
            let mut problems = Vec::new();
            missing_refs(&refs, t, &node.parameters, "parameters", &mut problems);
            for (param, e) in problems {
                let mut d = Diagnostic::error(e.message)
                    .with_code("missing-secret-ref")
                    .with_param_path(param.clone());
                if let Some(h) = e.hint {
                    d = d.with_hint(h);
                }
                if let Some((f, l)) = rules::locate_param(&node_files, &mut cache, &param) {
                    d = d.with_file(f).with_line(l);
                }
                found.add(d, Some(t));
            }
            // Tags written literally in the entries' input files (a
            // template's `?{...}`), looked up from the working directory.
            for file in input_files(&node.parameters) {
                let tags = scanned
                    .entry(file.clone())
                    .or_insert_with(|| file_tags(&file));
                for (line, tag) in tags.iter() {
                    if let Err(e) = refs.check_tag(tag, t) {
                        let mut d = Diagnostic::error(e.message)
                            .with_code("missing-secret-ref")
                            .with_file(&file)
                            .with_line(*line);
                        if let Some(h) = e.hint {
                            d = d.with_hint(h);
                        }
                        found.add(d, Some(t));
                    }
                }
            }
        }
    }
    if let Some(cat) = &opts.catalog {
        for d in rules::vaultkv_base64(cat)? {
            found.add(d, None);
        }
        for d in rules::order_findings(cat)? {
            found.add(d, None);
        }
    }
    Ok(found.finish())
}

/// The reference tags written in an input file, with their lines.
fn file_tags(file: &Path) -> Vec<(usize, String)> {
    #[cfg(test)]
    tests::SCANS.with(|c| c.set(c.get() + 1));
    let Ok(text) = std::fs::read_to_string(file) else {
        return Vec::new();
    };
    text.lines()
        .enumerate()
        .flat_map(|(i, line)| {
            crate::refs::tags_in(line)
                .into_iter()
                .map(move |tag| (i + 1, tag))
        })
        .collect()
}

/// The regular files (at most 1 MiB, 2000 per target) named by the
/// target's `kapitan.compile` input paths, below the working directory;
/// glob patterns are skipped.
fn input_files(params: &crate::value::Value) -> Vec<PathBuf> {
    use crate::value::Value;
    let mut out = Vec::new();
    let Some(Value::List(entries)) = params.get_path(&["kapitan", "compile"]) else {
        return out;
    };
    for e in entries {
        if !matches!(
            e.get_path(&["input_type"]).and_then(Value::as_str),
            Some("jinja2" | "jsonnet" | "helm" | "ytt")
        ) {
            continue;
        }
        let Some(Value::List(paths)) = e.get_path(&["input_paths"]) else {
            continue;
        };
        for p in paths.iter().filter_map(Value::as_str) {
            let path = std::path::Path::new(p);
            if p.contains(['*', '?', '[']) || path.is_absolute() || p.contains("..") {
                continue;
            }
            collect_files(path, 0, &mut out);
        }
    }
    out.sort();
    out.dedup();
    out
}

fn collect_files(p: &std::path::Path, depth: usize, out: &mut Vec<PathBuf>) {
    if depth > 16 || out.len() >= 2000 {
        return;
    }
    let Ok(meta) = std::fs::symlink_metadata(p) else {
        return;
    };
    if meta.is_file() {
        if meta.len() <= 1 << 20 {
            out.push(p.to_path_buf());
        }
    } else if meta.is_dir() {
        let Ok(rd) = std::fs::read_dir(p) else { return };
        let mut entries: Vec<PathBuf> = rd.filter_map(Result::ok).map(|e| e.path()).collect();
        entries.sort();
        for e in entries {
            collect_files(&e, depth + 1, out);
        }
    }
}

/// Every tag under `v` that a compile would fail on, with its parameter path.
fn missing_refs(
    refs: &crate::refs::Refs,
    target: &str,
    v: &crate::value::Value,
    path: &str,
    out: &mut Vec<(String, crate::refs::RefError)>,
) {
    use crate::value::Value;
    match v {
        Value::String(s) => {
            for tag in crate::refs::tags_in(s) {
                if let Err(e) = refs.check_tag(&tag, target) {
                    out.push((path.to_string(), e));
                }
            }
        }
        Value::Map(m) => {
            for (k, x) in m {
                missing_refs(refs, target, x, &format!("{path}.{k}"), out);
            }
        }
        Value::List(l) => {
            for x in l {
                missing_refs(refs, target, x, path, out);
            }
        }
        _ => {}
    }
}

/// The rule an inventory error belongs to, with its location.
fn inventory_diagnostic(e: &InventoryError) -> Diagnostic {
    use crate::diagnostics::ToDiagnostic;
    let root = e.root();
    let mut d = root.to_diagnostic();
    let code = match root {
        InventoryError::Yaml { .. } => "yaml-invalid",
        InventoryError::ClassNotFound { .. } | InventoryError::PatternNoMatch { .. } => {
            "class-not-found"
        }
        InventoryError::ClassCycle { .. } => "class-cycle",
        InventoryError::Unresolved { origin, .. } | InventoryError::RefSyntax { origin, .. } => {
            if d.file.is_none() {
                if let Some((file, line)) = split_origin(origin) {
                    d = d.with_file(file).with_line(line);
                }
            }
            "unresolved-reference"
        }
        InventoryError::Loop { .. } => "reference-cycle",
        InventoryError::Constant { .. } | InventoryError::Merge { .. } => "render-error",
        _ => "inventory-invalid",
    };
    d.with_code(code)
}

/// `path/to/file.yml:12` as written by the inventory's origin text.
fn split_origin(origin: &str) -> Option<(PathBuf, usize)> {
    let (file, line) = origin.rsplit_once(':')?;
    let line: usize = line.parse().ok()?;
    Some((PathBuf::from(file), line))
}

/// Where and what: two findings with the same key are one.
type FindingKey = (Option<PathBuf>, Option<usize>, String, String);

#[derive(Default)]
struct Findings {
    items: BTreeMap<FindingKey, (Diagnostic, BTreeSet<String>)>,
}

impl Findings {
    fn add(&mut self, d: Diagnostic, target: Option<&str>) {
        let key = (d.file.clone(), d.line, d.code.clone(), d.message.clone());
        let entry = self
            .items
            .entry(key)
            .or_insert_with(|| (d, BTreeSet::new()));
        if let Some(t) = target {
            entry.1.insert(t.to_string());
        }
    }

    fn finish(self) -> Vec<Diagnostic> {
        self.items
            .into_values()
            .map(|(mut d, targets)| {
                if !targets.is_empty() {
                    let list: Vec<&str> = targets.iter().map(String::as_str).take(5).collect();
                    let more = targets.len().saturating_sub(5);
                    let mut h = format!(
                        "in target{}: {}",
                        if targets.len() == 1 { "" } else { "s" },
                        list.join(", ")
                    );
                    if more > 0 {
                        h.push_str(&format!(" and {more} more"));
                    }
                    d.hints.push(h);
                }
                d
            })
            .collect()
    }
}

/// Counts (errors, warnings).
pub fn counts(findings: &[Diagnostic]) -> (usize, usize) {
    let e = findings
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    let w = findings
        .iter()
        .filter(|d| d.severity == Severity::Warning)
        .count();
    (e, w)
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        /// Input files [`file_tags`] read on this thread.
        pub(super) static SCANS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// Probe 39 (lint-input-scan-per-target): every target naming an input
    /// file read and scanned it for tags again, so a class naming a
    /// directory of 200 files of 1 MB, included by 20 targets, took `lint`
    /// 48 s (each target may name 2,000 such files). A file is scanned once
    /// per lint; each target still gets its own finding.
    #[test]
    fn an_input_file_is_scanned_once_for_all_targets() {
        // Input paths are relative to the working directory (the crate's,
        // in a test): the template lives in a scratch directory below it.
        std::fs::create_dir_all("target").unwrap();
        let input = tempfile::tempdir_in("target").unwrap();
        std::fs::write(input.path().join("t.j2"), "a: ?{base64:nosuch/x}\n").unwrap();
        let rel = input
            .path()
            .strip_prefix(std::env::current_dir().unwrap())
            .unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let inv = tmp.path().join("inventory");
        std::fs::create_dir_all(inv.join("classes")).unwrap();
        std::fs::create_dir_all(inv.join("targets")).unwrap();
        std::fs::create_dir_all(tmp.path().join("refs")).unwrap();
        std::fs::write(
            inv.join("classes/x.yml"),
            format!(
                "parameters:\n  kapitan:\n    compile:\n      - {{output_path: o, input_type: jinja2, input_paths: ['{}']}}\n",
                rel.join("t.j2").display()
            ),
        )
        .unwrap();
        for t in ["a", "b", "c"] {
            std::fs::write(inv.join(format!("targets/{t}.yml")), "classes: [x]\n").unwrap();
        }
        let loaded = Inventory::load(&crate::inventory::InventoryOptions {
            path: inv,
            ..Default::default()
        })
        .unwrap();
        let before = SCANS.with(|c| c.get());
        let found = lint(
            &loaded,
            &LintOptions {
                refs_path: Some(tmp.path().join("refs")),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(SCANS.with(|c| c.get()) - before, 1);
        let missing: Vec<String> = found
            .iter()
            .filter(|d| d.code == "missing-secret-ref")
            .map(|d| d.message.clone())
            .collect();
        assert_eq!(missing.len(), 3, "{missing:?}");
    }

    #[test]
    fn origin_is_split_at_the_last_colon() {
        assert_eq!(
            split_origin("inv/classes/a.yml:7"),
            Some((PathBuf::from("inv/classes/a.yml"), 7))
        );
        assert_eq!(split_origin("a rendered value"), None);
    }

    #[test]
    fn every_rule_has_a_unique_id() {
        let ids: BTreeSet<_> = RULES.iter().map(|r| r.0).collect();
        assert_eq!(ids.len(), RULES.len());
    }
}
