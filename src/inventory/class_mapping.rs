//! `class_mappings` from `reclass-config.yml`: classes every node whose
//! name (or path, with `class_mappings_match_path`) matches a glob or a
//! `/regex/` gets before its own classes, exactly as reclass-rs 0.11 does.

use super::InventoryError;
use std::path::Path;

/// Backtracking steps one class-mapping regex may take to match one target
/// name, at most. Patterns with look-around or back-references backtrack
/// (as Python's `re` does); fancy-regex's default of 1,000,000 steps per
/// match, times every target and mapping, let 20 mappings of 40 bytes run
/// past 30 minutes on 500 targets. Target names are short: real mappings
/// take tens of steps.
pub const MAX_BACKTRACK: usize = 10_000;

/// Backtracking steps all the regex mappings may take over all targets,
/// spread evenly: each match gets this divided by targets x mappings
/// (between 100 and [`MAX_BACKTRACK`]), so the bound is the same on every
/// run of the same inventory.
pub const TOTAL_BACKTRACK: usize = 20_000_000;

/// Regex matches (targets x regex mappings) one inventory may ask for.
/// Each match is bounded in steps ([`backtrack_limit`]) but costs
/// microseconds whatever its pattern: 10,000 targets and 2,000 regex
/// mappings (20,000,000 matches) took 42 s in a release build. Real
/// inventories ask for hundreds of targets x tens of mappings.
pub const MAX_REGEX_MATCHES: usize = 1_000_000;

/// Longest class name a regex mapping may make: a class is a file path
/// (Linux's `PATH_MAX`).
pub const MAX_CLASS_NAME: usize = 4096;

/// The most memory one compiled regex of `reclass-config.yml` (a
/// `class_mappings` regex, an `ignore_class_notfound_regexp`) may take, and
/// its lazy DFA's cache: `\w{200}` compiles to about 13 MB, so 200 such
/// patterns (4 kB of a pull request's file) took `inventory` 43 s and
/// 2.6 GB (probe 38, reclass-config-regex-size-unbounded). The regex
/// crate's default is 10 MB each; real patterns take a few kilobytes.
pub const MAX_REGEX_SIZE: usize = 256 * 1024;

/// The first 100 characters of a name quoted in an error.
fn short(s: &str) -> String {
    match s.char_indices().nth(100) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

/// Refuses more than [`MAX_REGEX_MATCHES`] matches of `regexes` (the regex
/// entries of `config`) against `targets` targets, naming the first entry.
pub fn check_regex_matches(
    targets: usize,
    regexes: &[&String],
    config: &Path,
) -> Result<(), InventoryError> {
    let matches = targets.saturating_mul(regexes.len());
    match regexes.first() {
        Some(first) if matches > MAX_REGEX_MATCHES => Err(InventoryError::BadClassMapping {
            path: config.to_path_buf(),
            entry: first.trim().to_string(),
            message: format!(
                "{} regex entries (this one and the others) matched against {targets} targets \
                 make {matches} regex matches, more than {MAX_REGEX_MATCHES}: use glob patterns \
                 (their number is not limited) or fewer regex entries",
                regexes.len()
            ),
        }),
        _ => Ok(()),
    }
}

/// The per-match limit for `mappings` regex mappings over `targets`.
pub fn backtrack_limit(targets: usize, mappings: usize) -> usize {
    (TOTAL_BACKTRACK / targets.max(1).saturating_mul(mappings.max(1))).clamp(100, MAX_BACKTRACK)
}

enum Pattern {
    Glob(globset::GlobMatcher),
    Regex(fancy_regex::Regex),
}

/// One `class_mappings` entry: a pattern and the classes it maps to.
pub struct ClassMapping {
    pattern: Pattern,
    classes: Vec<String>,
}

/// reclass writes back-references as `\\1` (two backslashes in the YAML
/// value); the regex crate expands `${1}`.
fn replace_backrefs(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("\\\\") {
        let after = &rest[i + 2..];
        let digits = after.chars().take_while(char::is_ascii_digit).count();
        if digits == 0 {
            out.push_str(&rest[..i + 2]);
            rest = after;
            continue;
        }
        out.push_str(&rest[..i]);
        out.push_str("${");
        out.push_str(&after[..digits]);
        out.push('}');
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

impl ClassMapping {
    /// Parses `"<pattern> <class> [<class>...]"`, reporting errors against
    /// `config` (the `reclass-config.yml` path).
    /// `backtrack` is the per-match limit ([`backtrack_limit`]).
    pub fn parse(
        spec: &str,
        config: &Path,
        backtrack: usize,
    ) -> Result<ClassMapping, InventoryError> {
        let bad = |message: String| InventoryError::BadClassMapping {
            path: config.to_path_buf(),
            entry: spec.to_string(),
            message,
        };
        let mut parts = spec.split_whitespace();
        let pat = parts
            .next()
            .ok_or_else(|| bad("expected `<pattern> <class> [<class>...]`".into()))?;
        // A leading `*` is escaped as `\*` so YAML does not read an alias.
        let pat = pat
            .strip_prefix('\\')
            .filter(|p| p.starts_with('*'))
            .unwrap_or(pat);
        let classes: Vec<&str> = parts.collect();
        if classes.is_empty() {
            return Err(bad(format!("no classes mapped for `{pat}`")));
        }
        let pattern = if let Some(body) = pat.strip_prefix('/') {
            let Some(body) = body.strip_suffix('/') else {
                return Err(bad("a regex pattern must be enclosed in `/`".into()));
            };
            if body.is_empty() {
                return Err(bad("empty regex patterns are not supported".into()));
            }
            Pattern::Regex(
                fancy_regex::RegexBuilder::new(body)
                    .backtrack_limit(backtrack)
                    .delegate_size_limit(MAX_REGEX_SIZE)
                    .delegate_dfa_size_limit(MAX_REGEX_SIZE)
                    .build()
                    .map_err(|e| {
                        // fancy-regex reports the size limit as "error
                        // building NFA" only.
                        let e = e.to_string();
                        let size = if e.contains("NFA") || e.contains("size limit") {
                            format!(" (a compiled regex may take at most {MAX_REGEX_SIZE} bytes: write a simpler pattern)")
                        } else {
                            String::new()
                        };
                        bad(format!("invalid regex `{body}`: {e}{size}"))
                    })?,
            )
        } else {
            Pattern::Glob(
                globset::GlobBuilder::new(pat)
                    .literal_separator(false)
                    .backslash_escape(true)
                    .build()
                    .map_err(|e| bad(format!("invalid glob `{pat}`: {e}")))?
                    .compile_matcher(),
            )
        };
        Ok(ClassMapping {
            pattern,
            classes: classes.iter().map(|c| replace_backrefs(c)).collect(),
        })
    }

    /// Appends the mapped classes to `out` (without duplicates) when
    /// `node` matches.
    pub fn append_if_matches(
        &self,
        node: &str,
        out: &mut Vec<String>,
        config: &Path,
    ) -> Result<(), InventoryError> {
        // A set: one entry may list a hundred thousand classes, and a scan
        // of `out` per class was quadratic (40,000 took 56 s; re-probe 18).
        let mut seen: std::collections::HashSet<String> = out.iter().cloned().collect();
        let mut push = |c: String| {
            if seen.insert(c.clone()) {
                out.push(c);
            }
        };
        match &self.pattern {
            Pattern::Regex(re) => {
                // Most targets match few mappings: `is_match` does not build
                // the captures (a trivial pattern took ~2 µs a match with).
                let matched = re
                    .is_match(node)
                    .map_err(|e| InventoryError::BadClassMapping {
                        path: config.to_path_buf(),
                        entry: re.as_str().to_string(),
                        message: format!("matching `{node}`: {e}"),
                    })?;
                if !matched {
                    return Ok(());
                }
                let caps = re
                    .captures(node)
                    .map_err(|e| InventoryError::BadClassMapping {
                        path: config.to_path_buf(),
                        entry: re.as_str().to_string(),
                        message: format!("matching `{node}`: {e}"),
                    })?;
                if let Some(cap) = caps {
                    for c in &self.classes {
                        let mut s = String::new();
                        cap.expand(c, &mut s);
                        // A class name is a file path: `\\1` repeated
                        // thousands of times made names of megabytes.
                        if s.len() > MAX_CLASS_NAME {
                            return Err(InventoryError::BadClassMapping {
                                path: config.to_path_buf(),
                                entry: re.as_str().to_string(),
                                message: format!(
                                    "class `{}` expands to {} bytes for `{}`, more than a class name can be ({MAX_CLASS_NAME} bytes, a file path): use fewer references to the match",
                                    short(c),
                                    s.len(),
                                    short(node),
                                ),
                            });
                        }
                        push(s);
                    }
                }
            }
            Pattern::Glob(g) => {
                if g.is_match(node) {
                    for c in &self.classes {
                        push(c.clone());
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Re-probe 18 (class-mappings-many-classes-quadratic): many classes
    /// are deduplicated in order, and a regex mapping cannot make a class
    /// name longer than a path.
    #[test]
    fn many_and_long_mapped_classes() {
        let p = Path::new("reclass-config.yml");
        let mut names: Vec<String> = (0..50_000).map(|i| format!("c{i}")).collect();
        names.push("c7".into());
        let m = ClassMapping::parse(&format!("* {}", names.join(" ")), p, MAX_BACKTRACK).unwrap();
        let mut out = vec!["c3".to_string()];
        m.append_if_matches("t", &mut out, p).unwrap();
        assert_eq!(out.len(), 50_000);
        assert_eq!(&out[..3], ["c3", "c0", "c1"]);
        let m = ClassMapping::parse(&format!("/(.*)/ {}", "\\\\1".repeat(30)), p, MAX_BACKTRACK)
            .unwrap();
        let e = m
            .append_if_matches(&"n".repeat(200), &mut Vec::new(), p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("expands to 6000 bytes"), "{e}");
        assert!(e.len() < 600, "{e}");
        let mut ok = Vec::new();
        m.append_if_matches("short", &mut ok, p).unwrap();
        assert_eq!(ok, ["short".repeat(30)]);
    }

    /// Re-probe of 2026-11-26: a pattern just under fancy-regex's default
    /// of 1,000,000 steps per match, times 500 targets and 20 mappings, ran
    /// past 30 minutes. Such a pattern is now an error at once.
    #[test]
    fn catastrophic_backtracking_is_an_error() {
        let p = Path::new("reclass-config.yml");
        let m = ClassMapping::parse("/^((a)(?=a)|a)*b/ c", p, MAX_BACKTRACK).unwrap();
        let e = m
            .append_if_matches("aaaaaaaaaaaaaaaaaa-1", &mut Vec::new(), p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("backtracking"), "{e}");
        // Spread over many targets and mappings, each match gets less.
        assert_eq!(backtrack_limit(50, 20), 10_000);
        assert_eq!(backtrack_limit(500, 20), 2_000);
        assert_eq!(backtrack_limit(5_000, 40), 100);
        assert_eq!(backtrack_limit(100_000, 1_000), 100);
        // Look-around in an ordinary mapping still works.
        assert_eq!(
            mapped(&["/^(?!test-)(.*)-prod$/ env.\\\\1"], "web-prod"),
            ["env.web"]
        );
    }

    fn mapped(specs: &[&str], node: &str) -> Vec<String> {
        let p = Path::new("reclass-config.yml");
        let mut out = Vec::new();
        for s in specs {
            ClassMapping::parse(s, p, MAX_BACKTRACK)
                .unwrap()
                .append_if_matches(node, &mut out, p)
                .unwrap();
        }
        out
    }

    #[test]
    fn globs_regexes_and_backrefs() {
        let specs = [
            "dev-*  env.develop",
            "/^prod-(.*)$/  env.production app.\\\\1",
            "/(test)\\/.*/ regex.rust-${1}",
            "/^test(?!.*-stg-test).*/  cluster.test",
            "\\*  common",
        ];
        assert_eq!(mapped(&specs, "dev-a"), ["env.develop", "common"]);
        assert_eq!(
            mapped(&specs, "prod-b"),
            ["env.production", "app.b", "common"]
        );
        assert_eq!(
            mapped(&specs, "test/a"),
            ["regex.rust-test", "cluster.test", "common"]
        );
        assert_eq!(
            mapped(&specs, "test/x-stg-test"),
            ["regex.rust-test", "common"]
        );
    }

    #[test]
    fn bad_entries_are_named() {
        let p = Path::new("inv/reclass-config.yml");
        for (spec, want) in [
            ("dev-*", "no classes mapped"),
            ("/abc  x", "enclosed in `/`"),
            ("//  x", "empty regex"),
            ("/(/  x", "invalid regex"),
        ] {
            let e = ClassMapping::parse(spec, p, MAX_BACKTRACK)
                .err()
                .unwrap()
                .to_string();
            assert!(
                e.contains(want) && e.contains("inv/reclass-config.yml"),
                "{e}"
            );
        }
    }
}
