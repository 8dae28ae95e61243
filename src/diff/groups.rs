//! Change groups: one entry per distinct change of a catalog diff, with
//! every object and target it touches. A pull request that changes one
//! owner annotation in 1,020 Deployments of 17 targets is one group, not
//! 1,020 diffs.
//!
//! An object's changes are its leaf differences: a path inside the object
//! (`metadata.annotations.owner`, list items as `[3]`) with the old and new
//! value, or a subtree added or removed. Two changes group when path, old
//! and new are equal, or, for changes no other target makes literally,
//! equal after the target's own name is replaced by `<target>` in each, so
//! `owner-cluster-0001` in target `cluster-0001` and `owner-cluster-0002`
//! in `cluster-0002` are one change, while `mysql:5.7.28` stays itself in
//! target `mysql` (and groups with target `examples`' bump). Objects added or
//! removed as a whole group by kind; the objects of an added or removed
//! target group by that; files compared as text group by their diff
//! (line numbers and the target name taken out). The values come from the
//! redacted rendering, so a secret is never part of a group.

use super::{CatalogDiff, Status};
use crate::value::Value;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// One leaf difference inside an object, on redacted values.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Change {
    /// `metadata.annotations.owner`; list items as `[3]`; empty for the
    /// whole document.
    pub path: String,
    /// One-line JSON of the old value; absent when the path was added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old: Option<String>,
    /// One-line JSON of the new value; absent when the path was removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new: Option<String>,
}

/// More leaf changes than this in one object: it is not grouped by path
/// (a rewrite reads better as its diff).
pub const MAX_CHANGES_PER_OBJECT: usize = 64;

/// The leaf changes from `old` to `new`, in the new value's key order, or
/// `None` when there are more than [`MAX_CHANGES_PER_OBJECT`].
pub fn changes(old: &Value, new: &Value) -> Option<Vec<Change>> {
    let mut out = Vec::new();
    walk(old, new, &mut String::new(), &mut out).then_some(out)
}

fn one_line(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

fn push(out: &mut Vec<Change>, c: Change) -> bool {
    out.push(c);
    out.len() <= MAX_CHANGES_PER_OBJECT
}

fn walk(old: &Value, new: &Value, path: &mut String, out: &mut Vec<Change>) -> bool {
    if old == new {
        return true;
    }
    let len = path.len();
    match (old, new) {
        (Value::Map(o), Value::Map(n)) => {
            for (k, nv) in n {
                append_key(path, k);
                let ok = match o.get(k) {
                    Some(ov) => walk(ov, nv, path, out),
                    None => push(
                        out,
                        Change {
                            path: path.clone(),
                            old: None,
                            new: Some(one_line(nv)),
                        },
                    ),
                };
                path.truncate(len);
                if !ok {
                    return false;
                }
            }
            for (k, ov) in o {
                if n.contains_key(k) {
                    continue;
                }
                append_key(path, k);
                let ok = push(
                    out,
                    Change {
                        path: path.clone(),
                        old: Some(one_line(ov)),
                        new: None,
                    },
                );
                path.truncate(len);
                if !ok {
                    return false;
                }
            }
            true
        }
        (Value::List(o), Value::List(n)) => {
            for i in 0..o.len().max(n.len()) {
                path.push_str(&format!("[{i}]"));
                let ok = match (o.get(i), n.get(i)) {
                    (Some(a), Some(b)) => walk(a, b, path, out),
                    (a, b) => push(
                        out,
                        Change {
                            path: path.clone(),
                            old: a.map(one_line),
                            new: b.map(one_line),
                        },
                    ),
                };
                path.truncate(len);
                if !ok {
                    return false;
                }
            }
            true
        }
        _ => push(
            out,
            Change {
                path: path.clone(),
                old: Some(one_line(old)),
                new: Some(one_line(new)),
            },
        ),
    }
}

fn append_key(path: &mut String, k: &str) {
    let plain = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '/'));
    if plain {
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(k);
    } else {
        // Keys with dots (annotations like `kapp.k14s.io/change-group`)
        // are quoted so the path stays unambiguous.
        path.push_str(&format!(
            "[{}]",
            serde_json::to_string(k).unwrap_or_default()
        ));
    }
}

/// What a group's members have in common.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum GroupKey {
    /// One leaf change (normalised).
    Change(Change),
    /// Whole objects of one kind added or removed in targets that stay.
    Objects { status: Status, kind: String },
    /// The objects of targets added or removed as a whole.
    Target { status: Status },
    /// The same text diff (normalised) of files not compared as YAML, or
    /// of objects whose changes are too many or hidden by redaction.
    Text(String),
}

/// One object (or text file) in a group, by index into the diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Member {
    pub target: usize,
    pub file: usize,
    pub object: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChangeGroup {
    pub key: GroupKey,
    /// Every object with this change, in diff order.
    pub members: Vec<Member>,
    /// Object kinds and how many of each, sorted by kind.
    pub kinds: BTreeMap<String, usize>,
    /// Names of the targets, in diff order, each once.
    pub targets: Vec<String>,
}

/// The kind of an object named `kind/namespace/name` or `kind/name`;
/// `file` for text files and documents without one.
pub fn kind_of(object_name: &str) -> &str {
    match object_name.split_once('/') {
        Some((k, _)) if !k.is_empty() && !k.contains(' ') => k,
        _ => "file",
    }
}

/// The target's own name as it may appear in values: the last path
/// segment (Commodore diffs prefix targets with `manifests/`).
fn own_name(target: &str) -> &str {
    target.rsplit('/').next().unwrap_or(target)
}

/// Replaces the target's own name by `<target>` (names shorter than 3
/// characters are left alone: they would match inside unrelated words).
pub fn normalise(s: &str, target: &str) -> String {
    let name = own_name(target);
    if name.chars().count() < 3 {
        return s.to_string();
    }
    s.replace(name, "<target>")
}

fn normalise_change(c: &Change, target: &str) -> Change {
    Change {
        path: normalise(&c.path, target),
        old: c.old.as_deref().map(|v| normalise(v, target)),
        new: c.new.as_deref().map(|v| normalise(v, target)),
    }
}

/// A text diff without its hunk headers (line numbers), after the file's
/// path when the diff is a whole file's: the same edit to two different
/// files is two changes.
fn text_of(diff: &str, file: Option<&str>) -> String {
    let body: Vec<&str> = diff.lines().filter(|l| !l.starts_with("@@")).collect();
    match file {
        Some(path) => format!("{path}\n{}", body.join("\n")),
        None => body.join("\n"),
    }
}

/// The targets making each change as it is (`literal`) and with each
/// target's name replaced by `<target>` (`replaced`).
struct Spread<K> {
    literal: BTreeMap<K, BTreeSet<usize>>,
    replaced: BTreeMap<K, BTreeSet<usize>>,
}

impl<K> Default for Spread<K> {
    fn default() -> Self {
        Spread {
            literal: BTreeMap::new(),
            replaced: BTreeMap::new(),
        }
    }
}

impl<K: Ord> Spread<K> {
    fn add(&mut self, replaced: K, literal: K, target: usize) {
        self.replaced.entry(replaced).or_default().insert(target);
        self.literal.entry(literal).or_default().insert(target);
    }

    /// The replaced form where it alone makes several targets' changes
    /// equal; else the change as it is.
    fn key(&self, replaced: K, literal: K) -> K {
        let shared =
            |m: &BTreeMap<K, BTreeSet<usize>>, k: &K| m.get(k).is_some_and(|s| s.len() > 1);
        if !shared(&self.literal, &literal) && shared(&self.replaced, &replaced) {
            replaced
        } else {
            literal
        }
    }
}

/// Groups every change of `diff`; the largest groups first (ties in
/// order of first appearance), so the order is deterministic.
pub fn group(diff: &CatalogDiff) -> Vec<ChangeGroup> {
    // How many targets make each leaf change (and each edit of a file
    // compared as text) as it is, and as it is once each target's name is
    // replaced: the replaced form groups only changes it makes equal across
    // targets (`owner-cluster-0001`, ...); a change several targets make
    // literally, or one target alone, keeps its own values (`mysql:5.7.28`
    // in targets `examples` and `mysql` is one change, and a value that
    // merely contains the name is shown as it is).
    let mut changes: Spread<Change> = Spread::default();
    let mut texts: Spread<String> = Spread::default();
    for (ti, t) in diff.targets.iter().enumerate() {
        for f in &t.files {
            for o in &f.objects {
                if o.changes.is_empty() {
                    let file = (kind_of(&o.name) == "file").then_some(f.path.as_str());
                    let text = text_of(&o.diff, file);
                    texts.add(normalise(&text, &t.name), text, ti);
                }
                for c in &o.changes {
                    changes.add(normalise_change(c, &t.name), c.clone(), ti);
                }
            }
        }
    }
    let mut index: BTreeMap<GroupKey, usize> = BTreeMap::new();
    let mut groups: Vec<ChangeGroup> = Vec::new();
    let mut add = |key: GroupKey, m: Member, kind: &str, target: &str| {
        let gi = *index.entry(key.clone()).or_insert_with(|| {
            groups.push(ChangeGroup {
                key,
                members: Vec::new(),
                kinds: BTreeMap::new(),
                targets: Vec::new(),
            });
            groups.len() - 1
        });
        let g = &mut groups[gi];
        if g.members.last() == Some(&m) {
            return;
        }
        g.members.push(m);
        *g.kinds.entry(kind.to_string()).or_default() += 1;
        if g.targets.last().map(String::as_str) != Some(target) {
            g.targets.push(target.to_string());
        }
    };
    for (ti, t) in diff.targets.iter().enumerate() {
        for (fi, f) in t.files.iter().enumerate() {
            for (oi, o) in f.objects.iter().enumerate() {
                let m = Member {
                    target: ti,
                    file: fi,
                    object: oi,
                };
                let kind = kind_of(&o.name);
                if matches!(t.status, Status::Added | Status::Removed) {
                    add(GroupKey::Target { status: t.status }, m, kind, &t.name);
                } else if matches!(o.status, Status::Added | Status::Removed) && kind != "file" {
                    add(
                        GroupKey::Objects {
                            status: o.status,
                            kind: kind.to_string(),
                        },
                        m,
                        kind,
                        &t.name,
                    );
                } else if o.changes.is_empty() {
                    let file = (kind == "file").then_some(f.path.as_str());
                    let text = text_of(&o.diff, file);
                    let text = texts.key(normalise(&text, &t.name), text);
                    add(GroupKey::Text(text), m, kind, &t.name);
                } else {
                    for c in &o.changes {
                        let key = changes.key(normalise_change(c, &t.name), c.clone());
                        add(GroupKey::Change(key), m, kind, &t.name);
                    }
                }
            }
        }
    }
    let mut order: Vec<usize> = (0..groups.len()).collect();
    order.sort_by(|&a, &b| {
        groups[b]
            .members
            .len()
            .cmp(&groups[a].members.len())
            .then(a.cmp(&b))
    });
    let mut slots: Vec<Option<ChangeGroup>> = groups.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::{FileDiff, ObjectDiff, TargetDiff};

    fn yaml(s: &str) -> Value {
        crate::yaml::load_values(s).unwrap().remove(0)
    }

    #[test]
    fn leaf_changes_name_the_path() {
        let a = yaml("metadata:\n  annotations:\n    owner: a\n    kapp.k14s.io/x: '1'\nspec:\n  ports: [1, 2]\n");
        let b = yaml("metadata:\n  annotations:\n    owner: b\n    kapp.k14s.io/x: '2'\nspec:\n  ports: [1]\n  new: {x: 1}\n");
        let c = changes(&a, &b).unwrap();
        let got: Vec<(String, Option<String>, Option<String>)> =
            c.into_iter().map(|c| (c.path, c.old, c.new)).collect();
        assert_eq!(
            got,
            vec![
                (
                    "metadata.annotations.owner".into(),
                    Some("\"a\"".into()),
                    Some("\"b\"".into())
                ),
                (
                    "metadata.annotations[\"kapp.k14s.io/x\"]".into(),
                    Some("\"1\"".into()),
                    Some("\"2\"".into())
                ),
                ("spec.ports[1]".into(), Some("2".into()), None),
                ("spec.new".into(), None, Some("{\"x\":1}".into())),
            ]
        );
    }

    #[test]
    fn too_many_changes_are_not_listed() {
        let a = Value::List((0..100).map(Value::Int).collect());
        let b = Value::List((1..101).map(Value::Int).collect());
        assert!(changes(&a, &b).is_none());
    }

    fn obj(name: &str, path: &str, old: &str, new: &str) -> ObjectDiff {
        ObjectDiff {
            name: name.into(),
            status: Status::Changed,
            added_lines: 1,
            removed_lines: 1,
            diff: format!("@@ -1 +1 @@\n-{old}\n+{new}\n"),
            changes: vec![Change {
                path: path.into(),
                old: Some(old.into()),
                new: Some(new.into()),
            }],
        }
    }

    fn target(name: &str, objects: Vec<ObjectDiff>) -> TargetDiff {
        TargetDiff {
            name: name.into(),
            status: Status::Changed,
            files: vec![FileDiff {
                path: "app.yaml".into(),
                old_path: None,
                status: Status::Changed,
                objects,
            }],
        }
    }

    #[test]
    fn same_change_groups_across_targets_and_target_names() {
        let mut d = CatalogDiff::default();
        for t in ["cluster-0001", "cluster-0002", "cluster-0003"] {
            d.targets.push(target(
                t,
                vec![
                    obj(
                        "Deployment/ns/a",
                        "metadata.annotations.owner",
                        "\"x\"",
                        "\"y\"",
                    ),
                    obj(
                        "Deployment/ns/b",
                        "metadata.annotations.owner",
                        "\"x\"",
                        "\"y\"",
                    ),
                    obj(
                        "ConfigMap/ns/c",
                        "data.url",
                        "\"old\"",
                        &format!("\"https://{t}.example\""),
                    ),
                ],
            ));
        }
        d.targets.push(target(
            "other",
            vec![obj(
                "Deployment/ns/a",
                "metadata.annotations.owner",
                "\"x\"",
                "\"z\"",
            )],
        ));
        let g = group(&d);
        assert_eq!(g.len(), 3, "{g:#?}");
        assert_eq!(g[0].members.len(), 6);
        assert_eq!(
            g[0].targets,
            ["cluster-0001", "cluster-0002", "cluster-0003"]
        );
        assert_eq!(g[0].kinds.get("Deployment"), Some(&6));
        match &g[1].key {
            GroupKey::Change(c) => {
                assert_eq!(c.new.as_deref(), Some("\"https://<target>.example\""))
            }
            k => panic!("{k:?}"),
        }
        assert_eq!(g[1].members.len(), 3);
        assert_eq!(g[2].targets, ["other"]);
    }

    /// compat37, kapicorp/kapitan-reference: one image bump in targets
    /// `examples` and `mysql` was two changes (`"mysql:5.7.28"` and
    /// `"<target>:5.7.28"`: the name was replaced in the one target whose
    /// name the image contains), and a change of one target showed
    /// `"jmalloc/<target>"` and `/var/run/<target>d` where the catalog has
    /// `jmalloc/echo-server` and `/var/run/mysqld`.
    #[test]
    fn a_value_that_merely_contains_a_target_name_is_not_rewritten() {
        let mut d = CatalogDiff::default();
        for t in ["examples", "mysql"] {
            d.targets.push(target(
                t,
                vec![obj(
                    "StatefulSet/ns/mysql",
                    "spec.template.spec.containers[0].image",
                    "\"mysql:5.7.28\"",
                    "\"mysql:5.7.44\"",
                )],
            ));
        }
        d.targets.push(target(
            "mysqld",
            vec![obj(
                "ConfigMap/ns/c",
                "data.sock",
                "\"/var/run/mysqld/a.sock\"",
                "\"/var/run/mysqld/b.sock\"",
            )],
        ));
        let g = group(&d);
        assert_eq!(g.len(), 2, "{g:#?}");
        assert_eq!(g[0].targets, ["examples", "mysql"]);
        match (&g[0].key, &g[1].key) {
            (GroupKey::Change(a), GroupKey::Change(b)) => {
                assert_eq!(a.old.as_deref(), Some("\"mysql:5.7.28\""));
                assert_eq!(b.old.as_deref(), Some("\"/var/run/mysqld/a.sock\""));
            }
            k => panic!("{k:?}"),
        }
    }

    /// The same for files compared as text (a README listing the image).
    #[test]
    fn a_text_edit_that_merely_contains_a_target_name_groups_literally() {
        let text = |t: &str, old: &str, new: &str| {
            let mut o = obj("README.md", "", old, new);
            o.changes.clear();
            target(t, vec![o])
        };
        let mut d = CatalogDiff::default();
        d.targets
            .push(text("examples", "image mysql:5.7.28", "image mysql:5.7.44"));
        d.targets
            .push(text("mysql", "image mysql:5.7.28", "image mysql:5.7.44"));
        d.targets.push(text(
            "cluster-0001",
            "url a",
            "url https://cluster-0001.example",
        ));
        d.targets.push(text(
            "cluster-0002",
            "url a",
            "url https://cluster-0002.example",
        ));
        let g = group(&d);
        assert_eq!(g.len(), 2, "{g:#?}");
        assert_eq!(g[0].targets, ["examples", "mysql"]);
        assert_eq!(g[1].targets, ["cluster-0001", "cluster-0002"]);
    }

    #[test]
    fn removed_targets_group_together() {
        let mut d = CatalogDiff::default();
        for t in ["a1", "b2"] {
            let mut t = target(t, vec![obj("Deployment/ns/a", "x", "1", "2")]);
            t.status = Status::Removed;
            d.targets.push(t);
        }
        let g = group(&d);
        assert_eq!(g.len(), 1);
        assert_eq!(
            g[0].key,
            GroupKey::Target {
                status: Status::Removed
            }
        );
        assert_eq!(g[0].targets, ["a1", "b2"]);
    }
}
