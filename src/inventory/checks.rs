//! Checks that keep hostile or mistyped inventories from doing harm: target
//! names that would escape or collide in the catalog directory, top-level
//! keys that are not reclass keys (a typo like `clases:` would otherwise
//! silently drop every class), and the class-chain depth limit.
//! docs/reliability.md lists each with its message.

/// The keys a class or target file may have at its top level (reclass's
/// node and class entities).
pub const TOP_LEVEL_KEYS: &[&str] = &[
    "classes",
    "applications",
    "parameters",
    "exports",
    "environment",
];

/// Classes may include classes at most this deep: the include walk recurses
/// once per level and no real hierarchy comes near it.
pub const MAX_CLASS_DEPTH: usize = 256;

/// Why a target name cannot be used, or `None` when it can. Target names
/// become catalog directory names (`compiled/<name>`), so `.`, `..`, empty
/// names and path separators would write outside or over other targets.
pub fn bad_target_name(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("the name is empty")
    } else if name == "." || name == ".." {
        Some("`.` and `..` name directories, not targets")
    } else if name.contains(['/', '\\']) {
        Some("the name contains a path separator")
    } else if name.chars().any(char::is_control) {
        Some("the name contains a control character")
    } else {
        None
    }
}

/// The closest of `known` to `word` when it is close enough to be a typo.
pub fn did_you_mean<'a>(word: &str, known: &[&'a str]) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).max(1);
    known
        .iter()
        .map(|k| (edit_distance(&word.to_lowercase(), k), *k))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, k)| k)
}

/// Levenshtein distance over chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_names() {
        for bad in ["", ".", "..", "a/b", "a\\b", "a\nb", "a\u{1b}[31m"] {
            assert!(bad_target_name(bad).is_some(), "{bad:?}");
        }
        for good in ["t1", "a.b", "prod-eu_1", ".hidden", "x.", "a..b"] {
            assert!(bad_target_name(good).is_none(), "{good:?}");
        }
    }

    #[test]
    fn suggestions() {
        assert_eq!(did_you_mean("clases", TOP_LEVEL_KEYS), Some("classes"));
        assert_eq!(
            did_you_mean("Parameters", TOP_LEVEL_KEYS),
            Some("parameters")
        );
        assert_eq!(
            did_you_mean("paramters", TOP_LEVEL_KEYS),
            Some("parameters")
        );
        assert_eq!(did_you_mean("foo", TOP_LEVEL_KEYS), None);
    }
}
