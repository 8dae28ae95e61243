//! Versions as vendir and kapp-controller read them.
//!
//! The parsed value is a [`semver::Version`], but parsing follows the
//! `carvel-dev/semver/v4` rules (strict `MAJOR.MINOR.PATCH[-pre][+build]`,
//! numeric build identifiers may have leading zeros) and ordering is
//! vendir's: build metadata takes part in the comparison (empty build sorts
//! first, then identifier by identifier, numeric < alphanumeric), which
//! `semver`'s own `Ord` only approximates.

use std::cmp::Ordering;

/// A version accepted by vendir's strict parser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version(pub semver::Version);

const ALPHANUM: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789";

fn only_digits(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_digit())
}

fn only_alphanum(s: &str) -> bool {
    s.chars().all(|c| ALPHANUM.contains(c))
}

fn leading_zero(s: &str) -> bool {
    s.len() > 1 && s.starts_with('0')
}

fn number(part: &str, what: &str) -> Result<u64, String> {
    if !only_digits(part) {
        return Err(format!(
            "Invalid character(s) found in {what} number {part:?}"
        ));
    }
    if leading_zero(part) {
        let cap = format!("{}{}", what[..1].to_uppercase(), &what[1..]);
        return Err(format!(
            "{cap} number must not contain leading zeroes {part:?}"
        ));
    }
    part.parse::<u64>()
        .map_err(|e| format!("strconv.ParseUint: parsing {part:?}: {e}"))
}

fn extensions(parts: &str, kind: &str, check_zeros: bool) -> Result<(), String> {
    for p in parts.split('.') {
        if p.is_empty() {
            return Err(format!("{kind} is empty"));
        }
        if only_digits(p) {
            if p.parse::<u64>().is_err() {
                return Err(format!("Invalid numeric {kind} {p:?}"));
            }
            if check_zeros && leading_zero(p) {
                return Err(format!(
                    "Numeric PreRelease version must not contain leading zeroes {p:?}"
                ));
            }
        } else if !only_alphanum(p) {
            return Err(format!("Invalid character(s) found in {kind} {p:?}"));
        }
    }
    Ok(())
}

impl Version {
    /// vendir's strict `Parse`: no `v`, all three numbers, no spaces.
    pub fn parse(s: &str) -> Result<Version, String> {
        if s.is_empty() {
            return Err("Version string empty".into());
        }
        let parts: Vec<&str> = s.splitn(3, '.').collect();
        if parts.len() != 3 {
            return Err("No Major.Minor.Patch elements found".into());
        }
        let major = number(parts[0], "major")?;
        let minor = number(parts[1], "minor")?;
        let mut rest = parts[2];
        let mut build = None;
        if let Some(i) = rest.find('+') {
            build = Some(&rest[i + 1..]);
            rest = &rest[..i];
        }
        let mut pre = None;
        if let Some(i) = rest.find('-') {
            pre = Some(&rest[i + 1..]);
            rest = &rest[..i];
        }
        let patch = number(rest, "patch")?;
        if let Some(pre) = pre {
            extensions(pre, "PreRelease", true)?;
        }
        if let Some(build) = build {
            extensions(build, "BuildMeta", false)?;
        }
        let pre = pre.unwrap_or("");
        let build = build.unwrap_or("");
        let to_err = |e: semver::Error| format!("{e}");
        Ok(Version(semver::Version {
            major,
            minor,
            patch,
            pre: if pre.is_empty() {
                semver::Prerelease::EMPTY
            } else {
                semver::Prerelease::new(pre).map_err(to_err)?
            },
            build: if build.is_empty() {
                semver::BuildMetadata::EMPTY
            } else {
                semver::BuildMetadata::new(build).map_err(to_err)?
            },
        }))
    }

    /// vendir's `NewRelaxedSemver`: one leading `v` is dropped.
    pub fn parse_relaxed(s: &str) -> Result<Version, String> {
        Version::parse(s.strip_prefix('v').unwrap_or(s))
    }

    /// blang's `ParseTolerant`, used for the cluster's component versions:
    /// trims spaces and a `v`, drops leading zeros, fills `1.27` to `1.27.0`.
    pub fn parse_tolerant(s: &str) -> Result<Version, String> {
        let s = s.trim();
        let s = s.strip_prefix('v').unwrap_or(s);
        let mut parts: Vec<String> = s.splitn(3, '.').map(str::to_string).collect();
        for p in parts.iter_mut() {
            if p.len() > 1 {
                let t = p.trim_start_matches('0');
                *p = if t.is_empty() || !t.starts_with(|c: char| c.is_ascii_digit()) {
                    format!("0{t}")
                } else {
                    t.to_string()
                };
            }
        }
        if parts.len() < 3 {
            if parts
                .last()
                .is_some_and(|p| p.contains('+') || p.contains('-'))
            {
                return Err("Short version cannot contain PreRelease/Build meta data".into());
            }
            while parts.len() < 3 {
                parts.push("0".into());
            }
        }
        Version::parse(&parts.join("."))
    }

    pub fn has_prerelease(&self) -> bool {
        !self.0.pre.is_empty()
    }

    /// The version without prerelease and build (kapp-controller matches the
    /// cluster's versions this way).
    pub fn finalized(&self) -> Version {
        Version(semver::Version::new(
            self.0.major,
            self.0.minor,
            self.0.patch,
        ))
    }

    /// The prerelease identifiers (`rc`, `1` for `-rc.1`).
    pub fn prerelease_parts(&self) -> impl Iterator<Item = &str> {
        let s = self.0.pre.as_str();
        s.split('.').filter(move |_| !s.is_empty())
    }
}

/// One prerelease / build identifier compared as carvel-dev/semver does.
fn cmp_ident(a: &str, b: &str) -> Ordering {
    let an = only_digits(a);
    let bn = only_digits(b);
    match (an, bn) {
        (true, true) => {
            let x = a.parse::<u64>().unwrap_or(u64::MAX);
            let y = b.parse::<u64>().unwrap_or(u64::MAX);
            x.cmp(&y)
        }
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (false, false) => a.cmp(b),
    }
}

fn cmp_idents(a: &str, b: &str) -> Ordering {
    let mut ai = a.split('.');
    let mut bi = b.split('.');
    loop {
        match (ai.next(), bi.next()) {
            (Some(x), Some(y)) => match cmp_ident(x, y) {
                Ordering::Equal => continue,
                o => return o,
            },
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (None, None) => return Ordering::Equal,
        }
    }
}

impl Ord for Version {
    fn cmp(&self, o: &Self) -> Ordering {
        let (a, b) = (&self.0, &o.0);
        a.major
            .cmp(&b.major)
            .then(a.minor.cmp(&b.minor))
            .then(a.patch.cmp(&b.patch))
            .then_with(|| match (a.pre.is_empty(), b.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => cmp_idents(a.pre.as_str(), b.pre.as_str()),
            })
            .then_with(|| match (a.build.is_empty(), b.build.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Less,
                (false, true) => Ordering::Greater,
                (false, false) => cmp_idents(a.build.as_str(), b.build.as_str()),
            })
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn strict_parse_rejects_what_vendir_rejects() {
        for bad in [
            "",
            "1.2",
            "v1.2.3",
            "01.2.3",
            "1.02.3",
            "1.2.03",
            "1.2.3-",
            "1.2.3+",
            "1.2.3-01",
            "1.2.3-a..b",
            "1.2.3-a_b",
            "1.2.3+a..b",
            " 1.2.3",
            "1.2.3,",
            "x.2.3",
            "1.2.3 ",
        ] {
            assert!(Version::parse(bad).is_err(), "{bad:?} should be rejected");
        }
        for good in [
            "0.0.0",
            "1.2.3-rc.1",
            "1.2.3+001",
            "1.2.3-x-y.0+b.c",
            "10.20.30",
        ] {
            assert!(Version::parse(good).is_ok(), "{good:?} should parse");
        }
    }

    #[test]
    fn error_messages_follow_vendir() {
        assert_eq!(
            Version::parse("1.0.0,").unwrap_err(),
            "Invalid character(s) found in patch number \"0,\""
        );
        assert_eq!(
            Version::parse("1.2").unwrap_err(),
            "No Major.Minor.Patch elements found"
        );
    }

    #[test]
    fn relaxed_and_tolerant() {
        assert_eq!(Version::parse_relaxed("v1.2.3").unwrap(), v("1.2.3"));
        assert!(Version::parse_relaxed("vv1.2.3").is_err());
        assert_eq!(
            Version::parse_tolerant(" v1.27.3+k3s1 ")
                .unwrap()
                .finalized(),
            v("1.27.3")
        );
        assert_eq!(Version::parse_tolerant("1.27").unwrap(), v("1.27.0"));
        assert_eq!(Version::parse_tolerant("01.027.0").unwrap(), v("1.27.0"));
        assert!(Version::parse_tolerant("develop").is_err());
        assert!(Version::parse_tolerant("1.2-rc").is_err());
    }

    #[test]
    fn build_metadata_is_ordered() {
        // vendir-semver-build-metadata-order, ascending.
        let want = [
            "1.0.0-pre+foo",
            "1.0.0",
            "1.0.0+1",
            "1.0.0+2",
            "1.0.0+ab1",
            "1.0.0+ab1.foo",
            "1.0.0+z1",
            "1.1.0",
            "1.1.0+aaaa",
            "2.0.0",
        ];
        let mut got: Vec<Version> = want.iter().rev().map(|s| v(s)).collect();
        got.sort();
        let got: Vec<String> = got.iter().map(|x| x.to_string()).collect();
        assert_eq!(got, want);
        assert_ne!(v("1.0.0").cmp(&v("1.0.0+vmware.1")), Ordering::Equal);
        assert_eq!(v("1.0.0+01").cmp(&v("1.0.0+1")), Ordering::Equal);
    }

    #[test]
    fn prerelease_precedence() {
        assert!(v("1.0.0-alpha") < v("1.0.0-alpha.1"));
        assert!(v("1.0.0-alpha.1") < v("1.0.0-alpha.beta"));
        assert!(v("1.0.0-beta.2") < v("1.0.0-beta.11"));
        assert!(v("1.0.0-rc.1") < v("1.0.0"));
        assert!(v("2.0.0-rc.1") < v("2.0.0"));
        assert!(v("1.9.0") < v("1.10.0"));
    }
}
