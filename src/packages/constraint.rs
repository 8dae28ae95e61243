//! vendir's version-constraint grammar (`carvel-dev/semver/v4` `ParseRange`
//! at the commit kapp-controller and vendir pin), parsed by hand and
//! evaluated over [`Version`], whose order includes build metadata.
//!
//! The grammar is not `semver::VersionReq`'s: space is AND, ` || ` is OR, a
//! bare version means "exactly", `!`/`!=` exist, `^ ~ *` and partial versions
//! do not, and prereleases are compared by plain precedence. The quirks of
//! the reference parser are reproduced on purpose (see
//! `../shared/conformance/packages/README.md`): single-character tokens are
//! dropped, `1.x.x` means `1.0.x`, any token containing an `x` goes through
//! wildcard expansion, and an operator is everything before the first digit.

use super::version::Version;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

impl Op {
    fn parse(s: &str) -> Option<Op> {
        Some(match s {
            "" | "=" | "==" => Op::Eq,
            "!" | "!=" => Op::Ne,
            ">" => Op::Gt,
            ">=" => Op::Ge,
            "<" => Op::Lt,
            "<=" => Op::Le,
            _ => return None,
        })
    }

    fn as_str(self) -> &'static str {
        match self {
            Op::Eq => "=",
            Op::Ne => "!=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Lt => "<",
            Op::Le => "<=",
        }
    }
}

/// Comparisons one constraint may hold (after `x` wildcards are expanded):
/// each is checked against every version offered, so 40,000 `||`
/// alternatives (518 kB) against 20,000 versions took 45 s (debug build).
/// Real constraints hold a few.
pub const MAX_TERMS: usize = 1000;

/// One `op version` term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comparator {
    pub op: Op,
    pub version: Version,
}

impl Comparator {
    pub fn matches(&self, v: &Version) -> bool {
        let o = v.cmp(&self.version);
        match self.op {
            Op::Eq => o.is_eq(),
            Op::Ne => o.is_ne(),
            Op::Gt => o.is_gt(),
            Op::Ge => o.is_ge(),
            Op::Lt => o.is_lt(),
            Op::Le => o.is_le(),
        }
    }
}

impl fmt::Display for Comparator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.op.as_str(), self.version)
    }
}

/// A parsed constraint: OR of AND-groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Constraint {
    pub groups: Vec<Vec<Comparator>>,
}

/// Why a constraint string was rejected; the text follows the reference
/// parser so users can search for it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConstraintError(pub String);

impl Constraint {
    pub fn parse(s: &str) -> Result<Constraint, ConstraintError> {
        let tokens = split_and_trim(s);
        let or_parts = split_or_parts(&tokens)?;
        let expanded = expand_wildcards(&or_parts)?;
        let terms: usize = expanded.iter().map(Vec::len).sum();
        if terms > MAX_TERMS {
            return Err(ConstraintError(format!(
                "the constraint holds {terms} comparisons: at most {MAX_TERMS} are read (write a few wider ranges)"
            )));
        }
        let mut groups = Vec::with_capacity(expanded.len());
        for part in &expanded {
            let mut group = Vec::with_capacity(part.len());
            for token in part {
                let (op_str, v_str) = split_comparator_version(token)?;
                let op = Op::parse(op_str).ok_or_else(|| {
                    ConstraintError(format!(
                        "Could not parse Range {token:?}: Could not parse comparator {op_str:?} in {:?}",
                        format!("{op_str}{v_str}")
                    ))
                })?;
                let version = Version::parse(v_str).map_err(|e| {
                    ConstraintError(format!(
                        "Could not parse Range {token:?}: Could not parse version {v_str:?} in {:?}: {e}",
                        format!("{op_str}{v_str}")
                    ))
                })?;
                group.push(Comparator { op, version });
            }
            groups.push(group);
        }
        Ok(Constraint { groups })
    }

    pub fn matches(&self, v: &Version) -> bool {
        self.groups.iter().any(|g| g.iter().all(|c| c.matches(v)))
    }
}

impl fmt::Display for Constraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, g) in self.groups.iter().enumerate() {
            if i > 0 {
                f.write_str(" || ")?;
            }
            for (j, c) in g.iter().enumerate() {
                if j > 0 {
                    f.write_str(" ")?;
                }
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

/// Splits on spaces, except after an operator character, so `>= 1.2.3` stays
/// one token; tokens shorter than two characters are dropped (reference
/// behaviour: `1.0.0 - 2.0.0` loses its `-`, `*` vanishes).
fn split_and_trim(s: &str) -> Vec<String> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut last: isize = 0;
    let mut last_char = 0u8;
    for (i, &c) in b.iter().enumerate() {
        let i = i as isize;
        if c == b' ' && !matches!(last_char, b'>' | b'<' | b'=') {
            if last < i - 1 {
                out.push(s[last as usize..i as usize].to_string());
            }
            last = i + 1;
        } else if c != b' ' {
            last_char = c;
        }
    }
    if last < b.len() as isize - 1 {
        out.push(s[last as usize..].to_string());
    }
    out.into_iter().map(|t| t.replace(' ', "")).collect()
}

fn split_or_parts(tokens: &[String]) -> Result<Vec<Vec<String>>, ConstraintError> {
    let mut parts = Vec::new();
    let mut last = 0;
    for (i, t) in tokens.iter().enumerate() {
        if t == "||" {
            if i == 0 {
                return Err(ConstraintError("First element in range is '||'".into()));
            }
            if last == i {
                // The reference builds a nil function here and crashes when
                // it is evaluated; an error is the only sane reading.
                return Err(ConstraintError("Empty range between '||'".into()));
            }
            parts.push(tokens[last..i].to_vec());
            last = i + 1;
        }
    }
    if last == tokens.len() {
        return Err(ConstraintError("Last element in range is '||'".into()));
    }
    parts.push(tokens[last..].to_vec());
    Ok(parts)
}

fn split_comparator_version(s: &str) -> Result<(&str, &str), ConstraintError> {
    match s.find(|c: char| c.is_ascii_digit()) {
        Some(i) => Ok((s[..i].trim(), &s[i..])),
        None => Err(ConstraintError(format!(
            "Could not get version from string: {s:?}"
        ))),
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Wildcard {
    None,
    Major,
    Minor,
    Patch,
}

fn wildcard_type(v: &str) -> Wildcard {
    let parts: Vec<&str> = v.split('.').collect();
    if parts.last() != Some(&"x") {
        return Wildcard::None;
    }
    match parts.len() {
        1 => Wildcard::Major,
        2 => Wildcard::Minor,
        3 => Wildcard::Patch,
        _ => Wildcard::None,
    }
}

fn flat_from_wildcard(v: &str) -> String {
    let v = v.replacen(".x.x", ".x", 1).replacen(".x", ".0", 1);
    if v.split('.').count() == 2 {
        format!("{v}.0")
    } else {
        v
    }
}

/// Go's `strconv.Atoi`: optional sign, decimal digits, fits in 64 bits.
fn atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<i64>().ok()
}

/// Increments dot-separated part `idx`; an unparsable part gives "" (the
/// reference ignores that error and builds an operator-only token).
fn increment(v: &str, idx: usize) -> String {
    let mut parts: Vec<String> = v.split('.').map(str::to_string).collect();
    let Some(n) = parts
        .get(idx)
        .and_then(|p| atoi(p))
        .and_then(|n| n.checked_add(1))
    else {
        return String::new();
    };
    parts[idx] = n.to_string();
    parts.join(".")
}

fn expand_wildcards(parts: &[Vec<String>]) -> Result<Vec<Vec<String>>, ConstraintError> {
    let mut expanded = Vec::with_capacity(parts.len());
    for part in parts {
        let mut out = Vec::new();
        for token in part {
            if !token.contains('x') {
                out.push(token.clone());
                continue;
            }
            let (op, v) = split_comparator_version(token)?;
            let kind = wildcard_type(v);
            let flat = flat_from_wildcard(v);
            let (result_op, bump) = match op {
                ">" => (">=", true),
                ">=" => (">=", false),
                "<" => ("<", false),
                "<=" => ("<", true),
                "" | "=" | "==" => {
                    out.push(format!(">={flat}"));
                    ("<", true)
                }
                "!=" | "!" => {
                    out.push(format!("<{flat}"));
                    (">=", true)
                }
                _ => ("", false),
            };
            let result_version = if bump {
                match kind {
                    Wildcard::Patch => increment(&flat, 1),
                    Wildcard::Minor => increment(&flat, 0),
                    Wildcard::Major | Wildcard::None => String::new(),
                }
            } else {
                flat
            };
            out.push(format!("{result_op}{result_version}"));
        }
        expanded.push(out);
    }
    Ok(expanded)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    fn c(s: &str) -> Constraint {
        Constraint::parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }

    fn err(s: &str) -> String {
        Constraint::parse(s).unwrap_err().0
    }

    fn matching(s: &str, candidates: &[&str]) -> Vec<String> {
        let con = c(s);
        candidates
            .iter()
            .filter(|x| con.matches(&v(x)))
            .map(|x| x.to_string())
            .collect()
    }

    const SET: &[&str] = &[
        "0.9.0",
        "1.0.0",
        "1.2.3",
        "1.2.9",
        "1.3.0",
        "1.10.0",
        "2.0.0-rc.1",
        "2.0.0",
        "2.1.0-beta.1",
        "3.0.0",
        "3.1.0",
    ];

    #[test]
    fn tokenizer_keeps_operator_with_spaced_version() {
        assert_eq!(split_and_trim(">= 1.2.3 < 2.0.0"), [">=1.2.3", "<2.0.0"]);
        assert_eq!(
            split_and_trim("   >1.0.0    <3.0.0  "),
            [">1.0.0", "<3.0.0"]
        );
        assert_eq!(split_and_trim("1.0.0 - 2.0.0"), ["1.0.0", "2.0.0"]);
        assert!(split_and_trim("*").is_empty());
        assert_eq!(split_and_trim("a || b"), ["||"]);
        assert_eq!(split_and_trim("ab || cd"), ["ab", "||", "cd"]);
    }

    #[test]
    fn space_is_and_bars_are_or() {
        assert_eq!(
            matching(">1.0.0 <3.0.0", SET),
            [
                "1.2.3",
                "1.2.9",
                "1.3.0",
                "1.10.0",
                "2.0.0-rc.1",
                "2.0.0",
                "2.1.0-beta.1"
            ]
        );
        assert_eq!(
            matching("<1.0.0 || >=3.0.0", SET),
            ["0.9.0", "3.0.0", "3.1.0"]
        );
        assert_eq!(
            matching(">1.0.0 <1.3.0 || >=3.0.0 !3.0.0", SET),
            ["1.2.3", "1.2.9", "3.1.0"]
        );
    }

    #[test]
    fn exact_and_not() {
        for s in ["1.2.3", "=1.2.3", "==1.2.3"] {
            assert_eq!(matching(s, SET), ["1.2.3"], "{s}");
        }
        for s in ["!1.2.3", "!=1.2.3"] {
            assert_eq!(matching(s, SET).len(), SET.len() - 1, "{s}");
        }
    }

    #[test]
    fn build_metadata_takes_part() {
        assert!(!c("1.0.0").matches(&v("1.0.0+vmware.1")));
        assert!(c("1.0.0+vmware.1").matches(&v("1.0.0+vmware.1")));
        assert!(c(">=1.0.0 <1.0.1").matches(&v("1.0.0+vmware.2")));
        let builds = [
            "1.0.0",
            "1.0.0+1",
            "1.0.0+2",
            "1.0.0+ab1",
            "1.0.0+z1",
            "1.0.0+ab1.foo",
        ];
        assert_eq!(matching(">1.0.0+ab1.foo", &builds), ["1.0.0+z1"]);
    }

    #[test]
    fn prereleases_use_plain_precedence() {
        assert!(c("<2.0.0").matches(&v("2.0.0-rc.1")));
        assert!(c(">=1.2.4-0").matches(&v("1.3.0-beta.1")));
        assert!(c(">=1.2.4-0").matches(&v("2.0.0-10")));
        assert!(!c(">=1.2.4-0").matches(&v("1.2.3")));
    }

    #[test]
    fn wildcards_expand_like_the_reference() {
        assert_eq!(c("1.2.x").to_string(), ">=1.2.0 <1.3.0");
        assert_eq!(c("1.x").to_string(), ">=1.0.0 <2.0.0");
        assert_eq!(c("1.x.x").to_string(), ">=1.0.0 <1.1.0");
        assert_eq!(c(">1.x").to_string(), ">=2.0.0");
        assert_eq!(c(">=1.x").to_string(), ">=1.0.0");
        assert_eq!(c("<=1.2.x").to_string(), "<1.3.0");
        assert_eq!(c("<1.2.x").to_string(), "<1.2.0");
        assert_eq!(c(">1.2.x").to_string(), ">=1.3.0");
        assert_eq!(c("!=1.2.x").to_string(), "<1.2.0 >=1.3.0");
        assert!(matching("!=1.2.x", SET).is_empty());
        // An operator the expansion does not know is dropped (reference quirk).
        assert_eq!(c("~1.x").to_string(), "=1.0.0");
        assert_eq!(
            c("1.2.x || 3.x").to_string(),
            ">=1.2.0 <1.3.0 || >=3.0.0 <4.0.0"
        );
        assert_eq!(matching("1.x.x", SET), ["1.0.0"]);
        assert_eq!(matching("1.2.x", SET), ["1.2.3", "1.2.9"]);
    }

    #[test]
    fn rejected_forms() {
        assert_eq!(err("*"), "Last element in range is '||'");
        assert_eq!(err(""), "Last element in range is '||'");
        assert_eq!(err("|| 1.0.0"), "First element in range is '||'");
        assert_eq!(err("1.0.0 ||"), "Last element in range is '||'");
        assert!(err("1.0.0 || || 2.0.0").contains("Empty range"));
        assert_eq!(
            err("^1.2.0"),
            "Could not parse Range \"^1.2.0\": Could not parse comparator \"^\" in \"^1.2.0\""
        );
        assert!(err("~1.2.0").contains("comparator \"~\""));
        assert!(err("v1.2.3").contains("comparator \"v\""));
        assert!(err(">v1.2.3").contains("comparator \">v\""));
        assert!(err("1.2").contains("No Major.Minor.Patch elements found"));
        assert!(err(">1.2").contains("Could not parse version \"1.2\""));
        assert_eq!(
            err(">1.0.0, <3.0.0"),
            "Could not parse Range \">1.0.0,\": Could not parse version \"1.0.0,\" in \">1.0.0,\": Invalid character(s) found in patch number \"0,\""
        );
        assert!(err(">1.0.0,<3.0.0").contains("\"0,<3.0.0\""));
        assert_eq!(err("2.0.0-x.1"), "Could not get version from string: \"<\"");
        assert!(err("x.x").contains("Could not get version"));
    }

    #[test]
    fn hyphen_range_is_two_exact_versions() {
        assert_eq!(c("1.0.0 - 2.0.0").to_string(), "=1.0.0 =2.0.0");
        assert!(matching("1.0.0 - 2.0.0", SET).is_empty());
    }
}
