//! Two repositories offering the same `Package` / `PackageMetadata`: the
//! rule kapp-controller applies through kapp's rebase overlay
//! (`yttRebasePackageRelatedRsByRevision` in `pkg/pkgrepository/app_template.go`).
//!
//! Same owning repository: ordinary update. Different owners: identical
//! resources (spec, labels and annotations minus kapp/kapp-controller
//! bookkeeping) keep the existing one; otherwise the higher
//! `packaging.carvel.dev/revision` wins and equal revisions conflict.

use super::model::{ANN_REPO_REF, ANN_REVISION};
use crate::value::{Map, Value};
use std::cmp::Ordering;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    KeepExisting,
    ApplyNew,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OverlapError {
    #[error(
        "Conflicting resources: {kind}/{name} is already present but not identical ({reason})"
    )]
    Conflict {
        kind: String,
        name: String,
        reason: String,
    },
    #[error("{kind}/{name}: annotation {ANN_REVISION} `{value}`: int: invalid literal with base 10: {part}")]
    Revision {
        kind: String,
        name: String,
        value: String,
        part: String,
    },
}

const IGNORED_LABELS: &[&str] = &["kapp.k14s.io/app", "kapp.k14s.io/association"];
const IGNORED_ANNOTATIONS: &[&str] = &[
    "kapp.k14s.io/disable-original",
    "kapp.k14s.io/disable-wait",
    ANN_REPO_REF,
    "kapp.k14s.io/identity",
    "kapp.k14s.io/create-strategy",
];

fn meta_map(doc: &Value, key: &str) -> Map {
    doc.get_path(&["metadata", key])
        .and_then(Value::as_map)
        .cloned()
        .unwrap_or_default()
}

fn str_at<'v>(doc: &'v Value, path: &[&str]) -> Option<&'v str> {
    doc.get_path(path).and_then(Value::as_str)
}

fn without(m: &Map, ignored: &[&str]) -> Map {
    m.iter()
        .filter(|(k, _)| !ignored.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// `[-1]` when absent; Starlark's `int()` on each dot-separated part.
fn revision(doc: &Value) -> Result<Vec<i128>, (String, String)> {
    let Some(rev) = str_at(doc, &["metadata", "annotations", ANN_REVISION]) else {
        return Ok(vec![-1]);
    };
    rev.split('.')
        .map(|part| {
            let digits = part.strip_prefix(['+', '-']).unwrap_or(part);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err((rev.to_string(), part.to_string()));
            }
            part.parse::<i128>()
                .map_err(|_| (rev.to_string(), part.to_string()))
        })
        .collect()
}

/// Element-wise, then the longer one wins (`0` < `0.0`, `1.9` < `1.10`).
pub fn cmp_revisions(a: &[i128], b: &[i128]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        match x.cmp(y) {
            Ordering::Equal => continue,
            o => return o,
        }
    }
    a.len().cmp(&b.len())
}

fn spec_difference(existing: &Value, new: &Value) -> Option<String> {
    let ex = existing.get_path(&["spec"]).cloned().unwrap_or(Value::Null);
    let nw = new.get_path(&["spec"]).cloned().unwrap_or(Value::Null);
    if ex == nw {
        return None;
    }
    let (Some(exm), Some(nwm)) = (ex.as_map(), nw.as_map()) else {
        return Some("mismatch in spec".into());
    };
    for k in nwm.keys() {
        if !exm.contains_key(k) {
            return Some(format!("adding spec.{k}"));
        }
    }
    for (k, v) in exm {
        match nwm.get(k) {
            None => return Some(format!("missing spec.{k}")),
            Some(n) if n != v => return Some(format!("mismatch in spec.{k}")),
            _ => {}
        }
    }
    Some("mismatch in unknown location".into())
}

/// Why two offers are not identical, or `None` when they are.
pub fn difference(existing: &Value, new: &Value) -> Option<String> {
    if let Some(reason) = spec_difference(existing, new) {
        return Some(reason);
    }
    if without(&meta_map(existing, "labels"), IGNORED_LABELS)
        != without(&meta_map(new, "labels"), IGNORED_LABELS)
    {
        return Some("mismatch in metadata.labels".into());
    }
    if without(&meta_map(existing, "annotations"), IGNORED_ANNOTATIONS)
        != without(&meta_map(new, "annotations"), IGNORED_ANNOTATIONS)
    {
        return Some("mismatch in metadata.annotations".into());
    }
    None
}

/// Decides between the resource already present and the one a repository
/// wants to apply.
pub fn rebase(existing: &Value, new: &Value) -> Result<Decision, OverlapError> {
    let new_owner = str_at(new, &["metadata", "annotations", ANN_REPO_REF]).unwrap_or("");
    let existing_owner =
        str_at(existing, &["metadata", "annotations", ANN_REPO_REF]).unwrap_or(new_owner);
    if new_owner == existing_owner {
        return Ok(Decision::ApplyNew);
    }
    let Some(reason) = difference(existing, new) else {
        return Ok(Decision::KeepExisting);
    };
    let kind = str_at(existing, &["kind"]).unwrap_or("").to_string();
    let name = str_at(existing, &["metadata", "name"])
        .unwrap_or("")
        .to_string();
    let rev_err = |(value, part): (String, String)| OverlapError::Revision {
        kind: kind.clone(),
        name: name.clone(),
        value,
        part,
    };
    let ex_rev = revision(existing).map_err(rev_err)?;
    let nw_rev = revision(new).map_err(rev_err)?;
    match cmp_revisions(&ex_rev, &nw_rev) {
        Ordering::Greater => Ok(Decision::KeepExisting),
        Ordering::Less => Ok(Decision::ApplyNew),
        Ordering::Equal => Err(OverlapError::Conflict { kind, name, reason }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(owner: &str, rev: Option<&str>, image: &str) -> Value {
        let rev = rev
            .map(|r| format!("    packaging.carvel.dev/revision: '{r}'\n"))
            .unwrap_or_default();
        let text = format!(
            "kind: Package\nmetadata:\n  name: a.b.c.1.0.0\n  annotations:\n    packaging.carvel.dev/package-repository-ref: {owner}\n{rev}spec:\n  refName: a.b.c\n  version: 1.0.0\n  image: {image}\n"
        );
        crate::yaml::load_values(&text).unwrap().remove(0)
    }

    #[test]
    fn revisions_order_numerically_then_by_length() {
        assert_eq!(cmp_revisions(&[0], &[0, 0]), Ordering::Less);
        assert_eq!(cmp_revisions(&[1, 10], &[1, 9]), Ordering::Greater);
        assert_eq!(cmp_revisions(&[1, 2, 0, 0, 1], &[1, 2, 1]), Ordering::Less);
        assert_eq!(cmp_revisions(&[-1], &[1]), Ordering::Less);
    }

    #[test]
    fn decisions() {
        let a = doc("ns/a", None, "x");
        assert_eq!(rebase(&a, &doc("ns/a", None, "y")), Ok(Decision::ApplyNew));
        assert_eq!(
            rebase(&a, &doc("ns/b", None, "x")),
            Ok(Decision::KeepExisting)
        );
        let e = rebase(&a, &doc("ns/b", None, "y")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Conflicting resources: Package/a.b.c.1.0.0 is already present but not identical (mismatch in spec.image)"
        );
        assert_eq!(
            rebase(&doc("ns/a", Some("2"), "x"), &doc("ns/b", Some("1"), "y")),
            Ok(Decision::KeepExisting)
        );
        assert_eq!(
            rebase(
                &doc("ns/a", Some("1.9"), "x"),
                &doc("ns/b", Some("1.10"), "y")
            ),
            Ok(Decision::ApplyNew)
        );
        let e = rebase(&doc("ns/a", Some("1.a"), "x"), &doc("ns/b", Some("1"), "y")).unwrap_err();
        assert!(
            e.to_string()
                .contains("int: invalid literal with base 10: a"),
            "{e}"
        );
    }
}
