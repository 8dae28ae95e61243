//! Secret values strata itself knows: the strings a review's inventories
//! hold under secret-named parameters (`db.password`), and the values of
//! the Kapitan `plain`/`base64` references such a parameter names. A
//! template that copies one under a neutral key (`DB_CONN_ARG`, a
//! container's args, an annotation) or into a larger string, or encodes it
//! as base64 (a ConfigMap's `binaryData`, `std.base64(user + ':' + pw)`),
//! gives the diff's rules nothing to read there (red41): the value itself
//! is known, so it is hidden wherever it occurs, exactly, and a base64 run
//! that holds its encoding is hidden whole.

use crate::value::Value;
use base64::Engine;
use std::collections::BTreeSet;

use super::{Redactor, OLD};

/// Shorter values are not hidden by their value: a five-letter password
/// would hide that word in every file (the error masks' bound too).
const MIN_LEN: usize = 6;

/// The automaton of the known values and their base64 forms.
#[derive(Debug)]
pub(super) struct Known {
    ac: aho_corasick::AhoCorasick,
    /// Per pattern: whether it is a base64 form (the run around it is
    /// hidden whole).
    encoded: Vec<bool>,
}

impl Known {
    pub(super) fn new(values: &BTreeSet<String>) -> Option<Known> {
        let mut patterns: Vec<(String, bool)> = Vec::new();
        for v in values {
            patterns.push((v.clone(), false));
            for form in base64_forms(v) {
                patterns.push((form, true));
            }
        }
        if patterns.is_empty() {
            return None;
        }
        // Longest first among equals: a value holding another is hidden
        // whole (leftmost-longest picks the longer at one start anyway).
        patterns.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.cmp(b)));
        patterns.dedup_by(|a, b| a.0 == b.0);
        let ac = aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostLongest)
            .build(patterns.iter().map(|p| p.0.as_str()))
            .ok()?;
        Some(Known {
            ac,
            encoded: patterns.iter().map(|p| p.1).collect(),
        })
    }

    /// `text` with every known value replaced by `<redacted>`, and every
    /// base64 run holding one's encoding replaced whole.
    pub(super) fn hide(&self, text: &str) -> Option<String> {
        let mut matches = self.ac.find_iter(text).peekable();
        matches.peek()?;
        let bytes = text.as_bytes();
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for m in matches {
            let (mut start, mut end) = (m.start(), m.end());
            if self.encoded[m.pattern().as_usize()] {
                while start > 0 && is_base64_byte(bytes[start - 1]) {
                    start -= 1;
                }
                while end < bytes.len() && (is_base64_byte(bytes[end]) || bytes[end] == b'=') {
                    end += 1;
                }
            }
            if start < at {
                // Inside a run already hidden.
                at = at.max(end);
                continue;
            }
            out.push_str(&text[at..start]);
            out.push_str(OLD);
            at = end;
        }
        out.push_str(&text[at.min(text.len())..]);
        Some(out)
    }
}

fn is_base64_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_')
}

/// The parts of `value`'s base64 encoding that every encoding of a text
/// holding it shares, whatever the value's offset in that text (three
/// alignments), in the standard and the URL-safe alphabet: the encoded
/// characters that depend on the value's bytes alone. Values of fewer
/// than 9 bytes leave too short a part to be told from other base64 and
/// are read only as the whole encoding of the value alone.
fn base64_forms(value: &str) -> Vec<String> {
    let b = value.as_bytes();
    let std = base64::engine::general_purpose::STANDARD;
    let mut out = vec![std.encode(b).trim_end_matches('=').to_string()];
    if b.len() >= 9 {
        for off in 1..3 {
            let mut padded = vec![b'A'; off];
            padded.extend_from_slice(b);
            let enc = std.encode(&padded);
            let enc = enc.trim_end_matches('=');
            // The characters that also encode the padding bytes, and the
            // last group (which depends on what follows), are cut.
            let skip = (off * 8).div_ceil(6);
            let keep_end = ((off + b.len()) * 8 / 6).min(enc.len());
            if keep_end > skip + 8 {
                out.push(enc[skip..keep_end].to_string());
            }
        }
        // Alone, the last group depends on what follows too.
        let whole = &out[0];
        let cut = (b.len() * 8 / 6).min(whole.len());
        if cut > 8 {
            out.push(whole[..cut].to_string());
        }
    }
    let url: Vec<String> = out
        .iter()
        .filter(|f| f.contains(['+', '/']))
        .map(|f| f.replace('+', "-").replace('/', "_"))
        .collect();
    out.extend(url);
    out.retain(|f| f.len() >= 8);
    out
}

/// The secret values of rendered parameters (each target's, of each
/// revision a review reads): the strings (and numbers) under secret-named
/// keys, at any depth below one, and the `value` of a `{name, value}` pair
/// whose name is secret, as the error masks read them; without references
/// (`?{...}`, which a compile writes hashed) and without the values a diff
/// shows under a secret key (`${NAME}`, a template expression).
/// `reference` answers the value of a Kapitan `plain` or `base64`
/// reference tag found there (the refs file's, None when unknown).
pub fn secret_values<'a>(
    redactor: &Redactor,
    roots: impl IntoIterator<Item = &'a Value>,
    reference: &dyn Fn(&str) -> Option<String>,
) -> BTreeSet<String> {
    secret_values_of_sides(redactor, vec![(roots.into_iter().collect(), reference)])
}

/// One side's renders and its answer to a reference tag.
pub type Side<'a> = (Vec<&'a Value>, &'a dyn Fn(&str) -> Option<String>);

/// [`secret_values`] of several sides (a review's base and head), each with
/// its own references. The sides share the renders of the targets a change
/// cannot reach: each render is read once, and the reference tags it holds
/// are answered by every side it belongs to.
pub fn secret_values_of_sides(redactor: &Redactor, sides: Vec<Side<'_>>) -> BTreeSet<String> {
    use rayon::prelude::*;
    // Each distinct render with the sides holding it (a bit per side).
    let mut index: std::collections::HashMap<*const Value, usize> = Default::default();
    let mut roots: Vec<(&Value, u64)> = Vec::new();
    for (side, (values, _)) in sides.iter().enumerate().take(64) {
        for v in values {
            let i = *index.entry(std::ptr::from_ref(*v)).or_insert_with(|| {
                roots.push((v, 0));
                roots.len() - 1
            });
            roots[i].1 |= 1 << side;
        }
    }
    let n = sides.len().min(64);
    // 1,000 targets' parameters are millions of values: read side by
    // side, each thread with its own memo of the keys' kinds.
    let (mut out, tags) = roots
        .par_iter()
        .fold(
            || (Memo::default(), BTreeSet::new(), vec![BTreeSet::new(); n]),
            |(mut memo, mut out, mut tags), (v, mask)| {
                let mut found = BTreeSet::new();
                collect(redactor, &mut memo, v, false, &mut out, &mut found, 0);
                for (side, t) in tags.iter_mut().enumerate() {
                    if mask & (1 << side) != 0 {
                        t.extend(found.iter().cloned());
                    }
                }
                (memo, out, tags)
            },
        )
        .map(|(_, out, tags)| (out, tags))
        .reduce(
            || (BTreeSet::new(), vec![BTreeSet::new(); n]),
            |(mut a, mut at), (b, bt)| {
                a.extend(b);
                for (x, y) in at.iter_mut().zip(bt) {
                    x.extend(y);
                }
                (a, at)
            },
        );
    for ((_, reference), tags) in sides.iter().zip(tags) {
        for tag in tags {
            if let Some(v) = reference(&tag) {
                add(&v, &mut out, &mut BTreeSet::new());
            }
        }
    }
    out
}

/// What a key is to [`collect`], asked once per distinct key.
#[derive(Clone, Copy)]
enum Kind {
    /// Names a secret (`password`, `apiToken`).
    Secret,
    /// Names or points at one (`secretKeyRef`, `passwordFile`).
    Pointer,
    Neutral,
}

type Memo<'v> = std::collections::HashMap<&'v str, Kind, ahash::RandomState>;

fn kind<'v>(redactor: &Redactor, memo: &mut Memo<'v>, k: &'v str) -> Kind {
    *memo.entry(k).or_insert_with(|| {
        if !super::structural::names_a_secret_value(k) {
            Kind::Pointer
        } else if redactor.key_matches(k) {
            Kind::Secret
        } else {
            Kind::Neutral
        }
    })
}

fn collect<'v>(
    redactor: &Redactor,
    memo: &mut Memo<'v>,
    v: &'v Value,
    secret: bool,
    out: &mut BTreeSet<String>,
    tags: &mut BTreeSet<String>,
    depth: usize,
) {
    if depth > 512 {
        return;
    }
    match v {
        Value::String(s) if secret => add(s, out, tags),
        Value::Int(i) if secret => add(&i.to_string(), out, tags),
        Value::List(items) => {
            for i in items {
                collect(redactor, memo, i, secret, out, tags, depth + 1);
            }
        }
        Value::Map(m) => {
            let named = ["name", "key"].iter().any(|k| {
                m.get(*k)
                    .and_then(Value::as_str)
                    .is_some_and(|n| redactor.key_matches(n))
            });
            for (k, child) in m {
                let hide = match kind(redactor, memo, k) {
                    // What is below a key that names or points at a
                    // secret names things, even under a secret's key
                    // (`GITHUB_TOKEN: {secretKeyRef: {key: GITHUB_TOKEN}}`).
                    Kind::Pointer => false,
                    Kind::Secret => true,
                    Kind::Neutral => secret || (named && k == "value"),
                };
                collect(redactor, memo, child, hide, out, tags, depth + 1);
            }
        }
        _ => {}
    }
}

/// A value that names rather than holds (kapitan-reference's
/// `target_secret: targets/tesoro`, a refs path, also with its backend,
/// `plain:targets/tesoro/cert-key`; `GITHUB_TOKEN`, the name
/// of a variable): a lower-case path of words, or a variable's name in
/// capitals with `_`. Hidden wherever it occurs, it hid those names in
/// every script and manifest of the catalog.
fn names_something(s: &str) -> bool {
    let path = s.contains('/')
        && s.bytes().all(|b| {
            b.is_ascii_lowercase()
                || b.is_ascii_digit()
                || matches!(b, b'/' | b'.' | b'_' | b'-' | b':')
        });
    let variable = s.contains('_')
        && s.starts_with(|c: char| c.is_ascii_uppercase())
        && s.bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    path || variable
}

fn add(s: &str, out: &mut BTreeSet<String>, tags: &mut BTreeSet<String>) {
    let s = s.trim();
    if s.starts_with("?{") {
        // The refs file's value, for a whole `?{plain:…}`/`?{base64:…}`
        // tag (a compile writes a plain reference's value into the
        // catalog; a base64 one's with --embed-refs, encoded): read once
        // the parameters are.
        tags.insert(s.to_string());
        return;
    }
    if s.chars().count() < MIN_LEN || super::structural::is_placeholder(s) || names_something(s) {
        return;
    }
    out.insert(s.to_string());
    if s.contains('\n') {
        for line in s.lines().map(str::trim) {
            if line.chars().count() >= MIN_LEN {
                out.insert(line.to_string());
            }
        }
    }
}
