//! The rule type of the positional and the shape tables: a regex whose
//! group `v` is the secret, the needles that run it, and one walker over a
//! table.

use regex::Regex;

use super::{replace_in, OLD};

/// A secret read by its place on a line (a daemon's configuration, a
/// database init script, a network device's configuration, a shape of
/// issue 19's review): the regex's group named `v` is hidden, the rest of
/// the match kept; a group named `key`, if any, must name a secret (the
/// key rules). `needles` are the pre-check: any of them found runs the
/// rule (one [`regex::RegexSet`] pass for a table, [`needle_set`]), a rule
/// without needles runs on every text; `shown` keeps a `v` that is not a
/// secret (a path, a SASL mechanism's name, a version, an option).
pub(super) struct Rule {
    pub(super) needles: &'static [&'static str],
    pub(super) re: Regex,
    pub(super) shown: fn(&str) -> bool,
}

impl Rule {
    /// A rule of a table compiled once (the regex is static).
    pub(super) fn new(needles: &'static [&'static str], re: &str, shown: fn(&str) -> bool) -> Rule {
        let re = Regex::new(re).expect("static regex is valid");
        // Without `v` the walker keeps every match: a rule that hides nothing.
        debug_assert!(
            re.capture_names().flatten().any(|n| n == "v"),
            "a rule's regex names its secret `v`: {re}"
        );
        Rule { needles, re, shown }
    }
}

/// One set of `first` and every rule's needles (each once, as `pattern`
/// makes it a regex), and each rule's needles' indexes in it.
pub(super) fn needle_set<'a>(
    first: &[&'static str],
    rules: impl Iterator<Item = &'a [&'static str]> + Clone,
    pattern: impl Fn(&str) -> String,
) -> (regex::RegexSet, Vec<Vec<usize>>) {
    let mut all: Vec<&'static str> = first.to_vec();
    for needles in rules.clone() {
        for n in needles {
            if !all.contains(n) {
                all.push(n);
            }
        }
    }
    let ids = rules
        .map(|needles| {
            needles
                .iter()
                .filter_map(|n| all.iter().position(|a| a == n))
                .collect()
        })
        .collect();
    let set = regex::RegexSet::new(all.iter().map(|n| pattern(n))).expect("static regex is valid");
    (set, ids)
}

/// Hides the secret of each match of `rules` in `out`, running a rule only
/// when `hit` (a pass of the table's [`needle_set`] over `out`) found one
/// of its needles (`ids`, the rule's needles' indexes) or it has none.
pub(super) fn hide_rule_values(
    out: &mut String,
    rules: &[Rule],
    ids: &[Vec<usize>],
    hit: &regex::SetMatches,
    secret_name: impl Fn(&str) -> bool,
) {
    for (rule, ids) in rules.iter().zip(ids) {
        if !ids.is_empty() && !ids.iter().any(|&i| hit.matched(i)) {
            continue;
        }
        replace_in(out, &rule.re, |c: &regex::Captures| {
            let (Some(all), Some(v)) = (c.get(0), c.name("v")) else {
                return c[0].to_string();
            };
            let named = c.name("key").is_none_or(|k| secret_name(k.as_str()));
            if !named || v.as_str().contains(OLD) || (rule.shown)(v.as_str()) {
                return all.as_str().to_string();
            }
            let m = all.as_str();
            let (s, e) = (v.start() - all.start(), v.end() - all.start());
            format!("{}{OLD}{}", &m[..s], &m[e..])
        });
    }
}
