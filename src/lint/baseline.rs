//! Lint findings relative to a base revision: which findings a pull
//! request adds, which it fixes, and which were there before.
//!
//! A finding is matched by a key that survives edits elsewhere in the
//! file: rule id, file and message, without the line number (a class
//! shifted down by ten lines is the same finding) and with `:LINE[:COL]`
//! locations inside the message taken out. Hints (which targets are
//! affected) are not part of the key either. Identical keys are counted,
//! so a third copy of a finding that existed twice is one new finding.

use regex::Regex;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// What a finding is, for comparing base and head.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct StableKey {
    pub code: String,
    pub file: Option<String>,
    pub message: String,
}

impl StableKey {
    pub fn new(code: &str, file: Option<&str>, message: &str) -> Self {
        static LOC: OnceLock<Regex> = OnceLock::new();
        let loc =
            LOC.get_or_init(|| Regex::new(r"(:\d+)+\b|\b(line|column) \d+").expect("valid regex"));
        let file = file.map(|f| f.strip_prefix("./").unwrap_or(f).replace('\\', "/"));
        StableKey {
            code: code.to_string(),
            file,
            message: loc.replace_all(message, "").into_owned(),
        }
    }
}

/// Head findings split by the base.
#[derive(Debug, Clone, PartialEq)]
pub struct Partition<T> {
    /// In the head, not in the base: what the pull request adds.
    pub new: Vec<T>,
    /// In the base, not in the head: what the pull request fixes.
    pub fixed: Vec<T>,
    /// In both (the head's copy).
    pub existing: Vec<T>,
}

impl<T> Default for Partition<T> {
    fn default() -> Self {
        Partition {
            new: Vec::new(),
            fixed: Vec::new(),
            existing: Vec::new(),
        }
    }
}

/// Splits `head` into new and existing findings and lists the `base`
/// findings the head no longer has; each list keeps its input order.
pub fn partition<T: Clone>(base: &[T], head: &[T], key: impl Fn(&T) -> StableKey) -> Partition<T> {
    let mut left: BTreeMap<StableKey, usize> = BTreeMap::new();
    for b in base {
        *left.entry(key(b)).or_default() += 1;
    }
    let mut out = Partition::default();
    for h in head {
        match left.get_mut(&key(h)) {
            Some(n) if *n > 0 => {
                *n -= 1;
                out.existing.push(h.clone());
            }
            _ => out.new.push(h.clone()),
        }
    }
    // The base's findings not matched by a head finding, in base order.
    let mut fixed_left = left;
    for b in base {
        let k = key(b);
        if let Some(n) = fixed_left.get_mut(&k) {
            if *n > 0 {
                *n -= 1;
                out.fixed.push(b.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    struct F {
        code: &'static str,
        file: &'static str,
        line: usize,
        msg: &'static str,
    }

    fn key(f: &F) -> StableKey {
        StableKey::new(f.code, Some(f.file), f.msg)
    }

    fn f(code: &'static str, file: &'static str, line: usize, msg: &'static str) -> F {
        F {
            code,
            file,
            line,
            msg,
        }
    }

    #[test]
    fn line_shifts_keep_a_finding_existing() {
        let base = vec![
            f(
                "unused-class",
                "classes/a.yml",
                1,
                "class `a` is not used by any target",
            ),
            f(
                "unresolved-reference",
                "classes/b.yml",
                3,
                "cannot resolve ${x} at classes/b.yml:3",
            ),
            f(
                "plaintext-secret",
                "classes/c.yml",
                7,
                "value under `password` looks like a secret",
            ),
        ];
        let head = vec![
            f(
                "unused-class",
                "./classes/a.yml",
                11,
                "class `a` is not used by any target",
            ),
            f(
                "unresolved-reference",
                "classes/b.yml",
                9,
                "cannot resolve ${x} at classes/b.yml:9",
            ),
            f(
                "unused-class",
                "classes/new.yml",
                1,
                "class `new` is not used by any target",
            ),
        ];
        let p = partition(&base, &head, key);
        assert_eq!(p.existing.len(), 2);
        assert_eq!(p.existing[0].line, 11, "the head's copy is kept");
        assert_eq!(p.new, vec![head[2].clone()]);
        assert_eq!(p.fixed, vec![base[2].clone()]);
    }

    #[test]
    fn duplicates_are_counted() {
        let a = f("x", "f", 1, "same");
        let p = partition(std::slice::from_ref(&a), &[a.clone(), a.clone()], key);
        assert_eq!((p.new.len(), p.existing.len(), p.fixed.len()), (1, 1, 0));
        let p = partition(&[a.clone(), a.clone()], std::slice::from_ref(&a), key);
        assert_eq!((p.new.len(), p.existing.len(), p.fixed.len()), (0, 1, 1));
    }

    #[test]
    fn a_different_rule_or_file_is_a_different_finding() {
        let p = partition(
            &[f("a", "f", 1, "m")],
            &[f("b", "f", 1, "m"), f("a", "g", 1, "m")],
            key,
        );
        assert_eq!((p.new.len(), p.existing.len(), p.fixed.len()), (2, 0, 1));
    }
}
