//! Lint findings for kapp ordering annotations, before they reach a
//! cluster: malformed `change-group` / `change-rule` annotations, ordering
//! cycles (when applying and when deleting), and rules whose target group no
//! resource carries (kapp silently ignores those).

use super::graph::{group_name, is_group_annotation, is_rule_annotation, rule, Budget};
use super::{collect, plan, Document, Op, Options, OrderError, Resource};
use crate::diagnostics::{Diagnostic, ToDiagnostic};
use crate::yaml::{Node, NodeValue};
use std::collections::{HashMap, HashSet};
use std::path::Path;

pub const CODE_MALFORMED: &str = "order-malformed-annotation";
pub const CODE_CYCLE: &str = "order-cycle";
pub const CODE_UNMATCHED: &str = "order-rule-never-matches";
pub const CODE_INVALID: &str = "order-invalid-input";

/// Lints the ordering of `docs` (resources and kapp Configs) under
/// `options` (its ops are ignored: both applying and deleting are checked).
/// Findings come in document order; an input that cannot be read at all
/// gives a single `order-invalid-input` error.
pub fn lint(docs: &[Document], options: &Options) -> Vec<Diagnostic> {
    let (resources, config) = match collect(docs, options) {
        Ok(rc) => rc,
        Err(e) => return vec![e.to_diagnostic().with_code(CODE_INVALID)],
    };
    let doc_at: HashMap<(&Path, usize), &Document> = docs
        .iter()
        .map(|d| ((d.file.as_path(), d.node.line), d))
        .collect();
    let mut findings = Vec::new();
    let mut carried: HashSet<String> = HashSet::new();
    let mut rules = Vec::new();
    let mut budget = Budget::default();
    for res in &resources {
        let doc = doc_at.get(&(res.origin.file.as_path(), res.origin.line));
        for (key, value) in &res.annotations {
            let line = doc.map_or(res.origin.line, |d| annotation_line(d, key));
            if is_group_annotation(key) {
                match group_name(value, res, &mut budget) {
                    Ok(g) => {
                        carried.insert(g);
                    }
                    Err(e) => findings.push(malformed(res, key, line, e)),
                }
            } else if is_rule_annotation(key) {
                match rule(value, res, &mut budget) {
                    Ok(r) => rules.push((res, key, line, value, r)),
                    Err(e) => findings.push(malformed(res, key, line, e)),
                }
            }
        }
        for binding in &config.change_group_bindings {
            if binding.matchers.iter().any(|m| m.matches(res)) {
                if let Ok(g) = group_name(&binding.name, res, &mut budget) {
                    carried.insert(g);
                }
            }
        }
        if let Some(e) = budget.spent() {
            // Every later group and rule would be the same finding again.
            findings.push(
                Diagnostic::error(format!("{}: {e}", res.description()))
                    .with_code(CODE_INVALID)
                    .with_file(&res.origin.file)
                    .with_line(res.origin.line),
            );
            return findings;
        }
    }
    for (res, key, line, text, r) in rules {
        if !carried.contains(&r.target_group) {
            findings.push(
                Diagnostic::warning(format!(
                    "{}: annotation {key}: rule '{text}' targets change group {}, which no resource carries; kapp ignores it",
                    res.description(),
                    r.target_group
                ))
                .with_code(CODE_UNMATCHED)
                .with_file(&res.origin.file)
                .with_line(line)
                .with_hint("fix the group name, or add the group to the resource it should wait for"),
            );
        }
    }
    if findings.iter().any(|d| d.code == CODE_MALFORMED) {
        // The graph would stop at the first malformed annotation again.
        return findings;
    }
    let mut cycles = HashSet::new();
    for op in [Op::Upsert, Op::Delete] {
        let mut opts = options.clone();
        opts.ops.default = op;
        opts.ops.overrides.clear();
        match plan(docs, &opts) {
            Ok(_) => {}
            Err(e @ OrderError::Cycle { .. }) => {
                if cycles.insert(e.to_string()) {
                    let d = e.to_diagnostic().with_code(CODE_CYCLE);
                    let when = if op == Op::Delete {
                        "deleting"
                    } else {
                        "upserting"
                    };
                    let message = format!("when {when}: {}", d.message);
                    findings.push(Diagnostic { message, ..d });
                }
            }
            Err(e) => findings.push(e.to_diagnostic().with_code(CODE_INVALID)),
        }
    }
    findings
}

fn malformed(res: &Resource, key: &str, line: usize, message: String) -> Diagnostic {
    Diagnostic::error(format!("{}: annotation {key}: {message}", res.description()))
        .with_code(CODE_MALFORMED)
        .with_file(&res.origin.file)
        .with_line(line)
        .with_hint("a change rule reads `(upsert|delete) (before|after) (upserting|deleting) <group>`; group names are `[dns-prefix/]name`")
}

/// The line of `metadata.annotations.<key>` in the document, or the
/// document's first line.
fn annotation_line(doc: &Document, key: &str) -> usize {
    let entry = doc
        .node
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| match &a.value {
            NodeValue::Map(entries) => entries.iter().find(|(k, _)| k.key_string() == key),
            _ => None,
        });
    entry.map_or(doc.node.line, |(k, _): &(Node, Node)| k.line)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As `strata lint --catalog` runs: kapp's defaults and `kapp deploy`'s
    /// preparation, so these namespace-less Jobs are named in `default`.
    fn lint_text(yaml: &str) -> Vec<Diagnostic> {
        let docs = crate::order::parse_documents(Path::new("app.yml"), yaml).unwrap();
        lint(&docs, &Options::default())
    }

    #[test]
    fn malformed_annotations_are_all_reported_with_their_line() {
        let d = lint_text(
            "kind: Job\nmetadata:\n  name: a\n  annotations:\n    kapp.k14s.io/change-group: ok/a\n    kapp.k14s.io/change-rule.x: upsert after upserting\n---\nkind: Job\nmetadata:\n  name: b\n  annotations:\n    kapp.k14s.io/change-group.y: 'bad/'\n",
        );
        assert_eq!(d.len(), 2, "{d:?}");
        assert_eq!(d[0].code, CODE_MALFORMED);
        assert_eq!(d[0].line, Some(6));
        assert!(d[0].message.starts_with("job/a () namespace: default: annotation kapp.k14s.io/change-rule.x: Expected change rule annotation value to have format"), "{}", d[0].message);
        assert_eq!(d[1].line, Some(12));
        assert!(
            d[1].message.contains("kapp.k14s.io/change-group.y"),
            "{}",
            d[1].message
        );
    }

    #[test]
    fn unmatched_rules_warn_and_cycles_error_for_each_op() {
        let d = lint_text(
            "kind: Job\nmetadata:\n  name: a\n  annotations:\n    kapp.k14s.io/change-group: g/a\n    kapp.k14s.io/change-rule: delete after deleting g/b\n    kapp.k14s.io/change-rule.typo: upsert after upserting g/bb\n---\nkind: Job\nmetadata:\n  name: b\n  annotations:\n    kapp.k14s.io/change-group: g/b\n    kapp.k14s.io/change-rule: delete after deleting g/a\n",
        );
        let codes: Vec<&str> = d.iter().map(|d| d.code.as_str()).collect();
        assert_eq!(codes, [CODE_UNMATCHED, CODE_CYCLE], "{d:?}");
        assert!(
            d[0].message.contains("targets change group g/bb"),
            "{}",
            d[0].message
        );
        assert_eq!(d[0].severity, crate::diagnostics::Severity::Warning);
        assert_eq!(d[0].line, Some(7));
        assert!(d[1].message.starts_with("when deleting: Detected cycle while ordering changes: [job/a () namespace: default] -> [job/b () namespace: default]"), "{}", d[1].message);
    }

    /// Re-probe 18: lint substitutes every binding's group for every
    /// resource it matches and passed over the ones that fail, so 70
    /// bindings of ten `{name}` of a 100 KB name made 70 MB of names that
    /// nothing bounded; past the budget lint stops with one error.
    #[test]
    fn lint_stops_once_the_substitution_budget_is_spent() {
        let bindings =
            "- {name: 'g/{name}{name}{name}{name}{name}{name}{name}{name}{name}{name}', resourceMatchers: [{allMatcher: {}}]}\n"
                .repeat(70);
        let d = lint_text(&format!(
            "apiVersion: kapp.k14s.io/v1alpha1\nkind: Config\nchangeGroupBindings:\n{bindings}---\nkind: Job\nmetadata: {{name: {}}}\n",
            "a".repeat(100_000)
        ));
        assert_eq!(
            d.len(),
            1,
            "{:?}",
            d.iter().map(|d| &d.code).collect::<Vec<_>>()
        );
        assert_eq!(d[0].code, CODE_INVALID);
        assert!(
            d[0].message
                .contains("more than 67108864 bytes once their placeholders are substituted")
                && d[0].file.as_deref() == Some(Path::new("app.yml")),
            "{:?}",
            d[0]
        );
    }

    #[test]
    fn clean_input_has_no_findings_and_bad_input_one() {
        assert!(lint_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n").is_empty());
        let d = lint_text("- not a resource\n");
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].code, CODE_INVALID);
    }
}
