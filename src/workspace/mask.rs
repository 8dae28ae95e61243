//! What a review's error messages must not show. An evaluator's error may
//! quote a value the program computed (`no such field: <value>`, a bad
//! regex, a template name): when that value is an inventory parameter
//! under a secret-named key, or has a credential's shape, the message in
//! a review's log, comment or job summary would reveal it. Errors of a
//! review, of `ci` and of a confined compile go through a [`SecretMask`]:
//! the values of the inventory's secret-named parameters are replaced
//! wherever they occur, and the diff's credential shapes (tokens, URL
//! passwords, private keys) are hidden. So are the values the diff's own
//! rules hide in the parameters (a Secret manifest's `data`, a `secrets:`
//! map, `auth: user:x`, a value beside `sensitive: true`, a secret inside
//! a string): the parameters are redacted as a diff would, and what that
//! hid is masked. Its `key: value` rules are not applied to the message:
//! they would read a file name in it as a key.

use super::{Rendered, WorkspaceError};
use crate::diagnostics::{Diagnostic, ToDiagnostic};
use crate::diff::redact::Redactor;
use crate::value::Value;
use std::collections::BTreeSet;

/// Shorter values are not masked: a five-letter password would hide that
/// word wherever the message says it, and such a value is no secret.
const MIN_LEN: usize = 6;

/// What replaces a masked value, as in a diff.
const HIDDEN: &str = "<redacted>";

/// The secret values of one inventory, and the credential rules.
pub struct SecretMask {
    redactor: Redactor,
    values: Option<aho_corasick::AhoCorasick>,
}

impl SecretMask {
    /// The mask of the parameters (or whole dumps) in `roots`.
    pub fn of_values<'a>(roots: impl IntoIterator<Item = &'a Value>) -> Self {
        Self::build(roots, true)
    }

    /// [`Self::of_values`] without the diff's structural rules: the values
    /// of secret-named parameters and the credential shapes only. For lint
    /// findings, which name files, classes and parameter paths, and quote a
    /// value only where a compile entry holds it: the structural rules cost
    /// a redaction of every target's parameters, which took the bench
    /// platform's pull-request loop from 3.5–4.6 s to 12.9 s at 1,000
    /// targets (distinct per-target parameters defeat the cache).
    pub fn of_values_by_name<'a>(roots: impl IntoIterator<Item = &'a Value>) -> Self {
        Self::build(roots, false)
    }

    fn build<'a>(roots: impl IntoIterator<Item = &'a Value>, structural: bool) -> Self {
        use rayon::prelude::*;
        let redactor = Redactor::default();
        let roots: Vec<&Value> = roots.into_iter().collect();
        // The secret-named values, the roots read side by side (1,000
        // targets' parameters are millions of values).
        let mut found = roots
            .par_iter()
            .fold(
                || (KeyMemo::new(&redactor), BTreeSet::new()),
                |(mut keys, mut found), v| {
                    collect(&mut keys, v, false, &mut found, 0);
                    (keys, found)
                },
            )
            .map(|(_, found)| found)
            .reduce(BTreeSet::new, |mut a, b| {
                a.extend(b);
                a
            });
        // The digests of the top-level parameters already read: targets
        // share most of theirs (classes), and the diff's rules cost far
        // more than a digest.
        let mut seen = std::collections::HashSet::new();
        for v in roots.into_iter().filter(|_| structural) {
            // What the diff's structural rules would hide (issue 19), one
            // top-level parameter at a time (a root that is itself a
            // manifest, with a `kind`, whole).
            match v {
                Value::Map(m) if !m.contains_key("kind") => {
                    // A target's dump holds its parameters under
                    // `parameters` (a neutral key): each is a unit there.
                    let units = m.iter().flat_map(|(k, child)| match child {
                        Value::Map(p) if k == "parameters" && !p.contains_key("kind") => {
                            p.iter().collect::<Vec<_>>()
                        }
                        _ => vec![(k, child)],
                    });
                    for (k, child) in units {
                        // SHA-256: a pull request chooses the parameters, so
                        // two that collide must not share what the cache
                        // says they hide.
                        let digest = super::fingerprint::value_digest(k, child);
                        if seen.insert(digest) {
                            found.extend(cached_hidden_in_parameter(&redactor, digest, k, child));
                        }
                    }
                }
                _ => {
                    let (_, shown) = redactor.redact_pair(None, Some(v));
                    hidden_by_diff(v, &shown, &mut found, 0);
                }
            }
        }
        // Longest first, so a value holding another is hidden whole.
        let mut values: Vec<String> = found.into_iter().collect();
        values.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        let values = (!values.is_empty())
            .then(|| {
                aho_corasick::AhoCorasick::builder()
                    .match_kind(aho_corasick::MatchKind::LeftmostLongest)
                    .build(&values)
                    .ok()
            })
            .flatten();
        SecretMask { redactor, values }
    }

    /// The mask of the targets that rendered among `renders` (a render's
    /// error may quote a value of those that did).
    pub fn of_renders<'a>(renders: impl IntoIterator<Item = &'a RenderResult>) -> Self {
        Self::of_values(rendered_parameters(renders))
    }

    /// [`Self::of_renders`] by name only ([`Self::of_values_by_name`]).
    pub fn of_renders_by_name<'a>(renders: impl IntoIterator<Item = &'a RenderResult>) -> Self {
        Self::of_values_by_name(rendered_parameters(renders))
    }

    /// The mask of a rendered inventory (every target's parameters).
    pub fn of(rendered: &Rendered) -> Self {
        Self::of_values(rendered.prepared.dumps.values())
    }

    /// Masks what the programs a compile of `rendered` runs print
    /// (`std.trace`, a Jinja2 filter's or kadet input's `print`) until the
    /// guard drops; the mask is made when the first line is printed.
    pub fn program_output(rendered: &Rendered) -> crate::diagnostics::ProgramOutputFilter {
        let dumps = rendered.prepared.dumps.clone();
        let mask = std::sync::OnceLock::new();
        crate::diagnostics::filter_program_output(std::sync::Arc::new(move |text: &str| {
            mask.get_or_init(|| SecretMask::of_values(dumps.values()))
                .text(text)
        }))
    }

    /// `text` with the secret values and credential shapes hidden.
    pub fn text(&self, text: &str) -> String {
        let text = match &self.values {
            Some(ac) => ac.replace_all(text, &vec![HIDDEN; ac.patterns_len()]),
            None => text.to_string(),
        };
        self.redactor.hide_credential_shapes(&text)
    }

    /// The error as it will be shown, masked. Its file, line and parameter
    /// path are kept; they name where, not what.
    pub fn error(&self, e: WorkspaceError) -> WorkspaceError {
        WorkspaceError::Shown(Box::new(self.diagnostic(e.to_diagnostic())))
    }

    /// [`Self::error`] of a diagnostic.
    pub fn diagnostic(&self, mut d: Diagnostic) -> Diagnostic {
        d.message = self.text(&d.message);
        d.hints = d.hints.iter().map(|h| self.text(h)).collect();
        d
    }
}

type RenderResult = Result<crate::inventory::RenderedNode, crate::inventory::InventoryError>;

/// The parameters of the targets that rendered.
fn rendered_parameters<'a>(
    renders: impl IntoIterator<Item = &'a RenderResult>,
) -> impl Iterator<Item = &'a Value> {
    renders
        .into_iter()
        .filter_map(|r| r.as_ref().ok().map(|n| &n.parameters))
}

/// [`Redactor::key_matches`] asked once per distinct key: a platform's
/// targets share most of their keys (their classes'), and the key rules
/// are many patterns (it was most of linting 1,000 targets' masks).
struct KeyMemo<'r, 'v> {
    redactor: &'r Redactor,
    memo: std::collections::HashMap<&'v str, bool, ahash::RandomState>,
}

impl<'r, 'v> KeyMemo<'r, 'v> {
    fn new(redactor: &'r Redactor) -> Self {
        KeyMemo {
            redactor,
            memo: Default::default(),
        }
    }

    fn matches(&mut self, key: &'v str) -> bool {
        let r = self.redactor;
        *self.memo.entry(key).or_insert_with(|| r.key_matches(key))
    }
}

/// Adds the strings under secret-named keys (`secret` once one is above),
/// and the `value` of a `{name: <secret-named>, value: ...}` pair.
fn collect<'v>(
    keys: &mut KeyMemo<'_, 'v>,
    v: &'v Value,
    secret: bool,
    out: &mut BTreeSet<String>,
    depth: usize,
) {
    // Rendered values are bounded in depth; this guards the stack anyway.
    if depth > 512 {
        return;
    }
    match v {
        Value::String(s) if secret => add(s, out),
        Value::Int(i) if secret => add(&i.to_string(), out),
        Value::Float(f) if secret => add(&f.to_string(), out),
        Value::List(items) => {
            for i in items {
                collect(keys, i, secret, out, depth + 1);
            }
        }
        Value::Map(m) => {
            let named = ["name", "key"].iter().any(|k| {
                m.get(*k)
                    .and_then(Value::as_str)
                    .is_some_and(|n| keys.matches(n))
            });
            for (k, child) in m {
                let hide = secret || keys.matches(k) || (named && k == "value");
                collect(keys, child, hide, out, depth + 1);
            }
        }
        _ => {}
    }
}

/// Adds what the diff's redaction `shown` of `v` hid: a whole value
/// replaced by a placeholder (every string below it, for a map or list),
/// and the parts of a string a placeholder stands for.
fn hidden_by_diff(v: &Value, shown: &Value, out: &mut BTreeSet<String>, depth: usize) {
    if depth > 512 {
        return;
    }
    match (v, shown) {
        (Value::Map(m), Value::Map(s)) => {
            // A key the diff renamed (a credential as a key) is left to
            // the credential shapes.
            for (k, child) in m {
                if let Some(sc) = s.get(k) {
                    hidden_by_diff(child, sc, out, depth + 1);
                }
            }
        }
        (Value::List(l), Value::List(s)) => {
            for (child, sc) in l.iter().zip(s) {
                hidden_by_diff(child, sc, out, depth + 1);
            }
        }
        (Value::String(a), Value::String(b)) if a != b => {
            for part in hidden_parts(a, b) {
                add(part, out);
            }
        }
        (_, Value::String(b)) if placeholder_re().is_match(b) => {
            let mut leaves = Vec::new();
            scalars(v, &mut leaves, depth);
            for leaf in leaves {
                add(&leaf, out);
            }
        }
        _ => {}
    }
}

/// What the diff would hide in the top-level parameter `key`.
fn hidden_in_parameter(redactor: &Redactor, key: &str, v: &Value) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let one = Value::Map(std::iter::once((key.to_string(), v.clone())).collect());
    let (_, shown) = redactor.redact_pair(None, Some(&one));
    hidden_by_diff(&one, &shown, &mut found, 0);
    found
}

/// [`hidden_in_parameter`], kept for the process by the parameter's
/// digest: a review or `ci` builds a mask for each error, from every
/// target's parameters (100 failing targets sharing 3,000 strings took a
/// review from 13 s to 118 s, debug build, before this).
fn cached_hidden_in_parameter(
    redactor: &Redactor,
    digest: [u8; 32],
    key: &str,
    v: &Value,
) -> Vec<String> {
    type Cache = std::sync::Mutex<std::collections::HashMap<[u8; 32], Vec<String>>>;
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(hit) = cache.lock().ok().and_then(|c| c.get(&digest).cloned()) {
        return hit;
    }
    let found: Vec<String> = hidden_in_parameter(redactor, key, v).into_iter().collect();
    if let Ok(mut c) = cache.lock() {
        c.insert(digest, found.clone());
    }
    found
}

/// The scalars of `v`, as text.
fn scalars(v: &Value, out: &mut Vec<String>, depth: usize) {
    if depth > 512 {
        return;
    }
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Int(i) => out.push(i.to_string()),
        Value::Float(f) => out.push(f.to_string()),
        Value::List(items) => items.iter().for_each(|i| scalars(i, out, depth + 1)),
        Value::Map(m) => m.values().for_each(|i| scalars(i, out, depth + 1)),
        _ => {}
    }
}

/// A placeholder the diff writes for what it hides.
fn placeholder_re() -> &'static regex::Regex {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        regex::Regex::new(r"<redacted(?:: [a-z ]+)?>").expect("static regex is valid")
    })
}

/// The parts of `original` that placeholders stand for in `shown`: the
/// text around the placeholders is found in `original` in order, and what
/// lies between is hidden. None when the texts do not line up (the diff
/// showed a string decoded, or withheld it with a note).
fn hidden_parts<'a>(original: &'a str, shown: &str) -> Vec<&'a str> {
    let pieces: Vec<&str> = placeholder_re().split(shown).collect();
    let Some((first, rest)) = pieces.split_first() else {
        return Vec::new();
    };
    if rest.is_empty() || !original.starts_with(first) {
        return Vec::new();
    }
    let mut pos = first.len();
    let mut parts = Vec::new();
    for (i, piece) in rest.iter().enumerate() {
        let at = if i + 1 == rest.len() {
            original
                .len()
                .checked_sub(piece.len())
                .filter(|&at| at >= pos && original.ends_with(piece))
        } else if piece.is_empty() {
            Some(pos)
        } else {
            original[pos..].find(piece).map(|f| pos + f)
        };
        let Some(at) = at else {
            return Vec::new();
        };
        parts.push(&original[pos..at]);
        pos = at + piece.len();
    }
    parts
}

fn add(s: &str, out: &mut BTreeSet<String>) {
    let s = s.trim();
    // A Kapitan reference names a secret; it is not one.
    if s.chars().count() < MIN_LEN || s.starts_with("?{") {
        return;
    }
    out.insert(s.to_string());
    let first = escaped_forms(s);
    // Escaped twice: an error quoting a JSON document or a value already
    // repr'd (`f"{json.dumps(cfg)!r}"`, a list of reprs; re-probe 15).
    for f in &first {
        out.extend(escaped_forms(f));
    }
    out.extend(first);
    if s.contains('\n') {
        for line in s.lines().map(str::trim) {
            if line.chars().count() >= MIN_LEN {
                out.insert(line.to_string());
            }
        }
    }
}

/// `s` as messages quote it: escaped as JSON or Rust's `{:?}` do (a quote,
/// backslash or newline in the value; re-probe 11), as Python's repr,
/// `ascii()`, `json.dumps` and bytes repr do. None for a plain value.
fn escaped_forms(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    if !s.contains(|c: char| c == '"' || c == '\\' || c.is_control() || !c.is_ascii()) {
        return out;
    }
    if let Ok(json) = serde_json::to_string(s) {
        out.push(json[1..json.len() - 1].to_string());
    }
    out.push(s.escape_debug().to_string());
    out.push(s.escape_default().to_string());
    // Python's repr (a Jinja2 filter's or kadet's error: `'a"b\\c'`,
    // control characters as `\xNN`; re-probe 12), quoted either way.
    let repr = python_repr_inner(s);
    out.push(repr.replace('\'', "\\'"));
    out.push(repr.replace("\\'", "'"));
    out.push(repr);
    // ASCII-only forms: Python's `ascii()` and `json.dumps` (which escape
    // every non-ASCII character; re-probe 13).
    if !s.is_ascii() {
        let (py, json) = ascii_escapes(s);
        out.push(py.replace('\'', "\\'"));
        out.push(py);
        out.push(json);
        // Its UTF-8 bytes as Python writes them (`b'\xc3\xa9'`).
        let bytes = python_bytes_repr_inner(s);
        out.push(bytes.replace('\'', "\\'"));
        out.push(bytes);
    }
    out.retain(|f| f != s);
    out
}

/// The inside of Python's `repr()` of `s` (its quotes dropped).
fn python_repr_inner(s: &str) -> String {
    let r = crate::compile::output::python_str_repr(s);
    r[1..r.len() - 1].to_string()
}

/// The inside of Python's `repr()` of `s.encode()`, quotes unescaped.
fn python_bytes_repr_inner(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 2);
    for b in s.bytes() {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out
}

/// Python's escape of one character.
fn python_escape(c: char) -> String {
    let n = c as u32;
    if n < 0x100 {
        format!("\\x{n:02x}")
    } else if n < 0x10000 {
        format!("\\u{n:04x}")
    } else {
        format!("\\U{n:08x}")
    }
}

/// `s` as Python's `ascii()` writes it (inside the quotes) and as
/// `json.dumps` does by default (`ensure_ascii`: `\uNNNN`, astral
/// characters as surrogate pairs).
fn ascii_escapes(s: &str) -> (String, String) {
    let mut py = String::with_capacity(s.len() * 2);
    for c in python_repr_inner(s).chars() {
        if c.is_ascii() {
            py.push(c);
        } else {
            py.push_str(&python_escape(c));
        }
    }
    let mut json = String::with_capacity(s.len() * 2);
    let inner = serde_json::to_string(s).unwrap_or_default();
    for c in inner.trim_matches('"').chars() {
        if c.is_ascii() {
            json.push(c);
        } else {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                json.push_str(&format!("\\u{u:04x}"));
            }
        }
    }
    (py, json)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 19: values the diff hides by structural rules, not by their
    /// key's name, are masked too.
    #[test]
    fn values_the_diffs_structural_rules_hide_are_masked() {
        let params = yaml(
            "db_secret:\n  apiVersion: v1\n  kind: Secret\n  metadata: {name: db}\n  stringData: {conn: PLANTsecretdata1}\n  data: {other: UExBTlRiYXNlNjQ=}\napp:\n  secrets: {DB_CONN: PLANTsecretsmap2}\n  registry: {auth: 'ci:PLANTauthpair3'}\ntf_out: {value: PLANTsensitive4, sensitive: true}\nrun: 'curl -u ci:PLANTinline5 https://ci.example'\nregion: westeurope\n",
        );
        let m = SecretMask::of_values([&params]);
        let msg = "bad: PLANTsecretdata1 UExBTlRiYXNlNjQ= PLANTsecretsmap2 ci:PLANTauthpair3 PLANTsensitive4 PLANTinline5 in westeurope (db)";
        let shown = m.text(msg);
        for gone in ["PLANT", "UExBTlRiYXNlNjQ="] {
            assert!(!shown.contains(gone), "{gone}: {shown}");
        }
        assert!(shown.ends_with("in westeurope (db)"), "{shown}");
    }

    /// Lint findings are masked by name and shape only (cost); errors by
    /// the structural rules too.
    #[test]
    fn a_mask_by_name_leaves_the_structural_rules_out() {
        let params =
            yaml("db_password: PLANTbyname1\napp:\n  secrets: {DB_CONN: PLANTsecretsmap2}\n");
        let msg = "x PLANTbyname1 PLANTsecretsmap2 ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        let by_name = SecretMask::of_values_by_name([&params]).text(msg);
        assert!(
            !by_name.contains("PLANTbyname1") && !by_name.contains("ghp_"),
            "{by_name}"
        );
        assert!(by_name.contains("PLANTsecretsmap2"), "{by_name}");
        let full = SecretMask::of_values([&params]).text(msg);
        assert!(!full.contains("PLANT"), "{full}");
    }

    #[test]
    fn hidden_parts_line_up_around_placeholders() {
        assert_eq!(
            hidden_parts("a password=xyz1234 b", "a password=<redacted> b"),
            vec!["xyz1234"]
        );
        assert_eq!(
            hidden_parts("u:p1 and q:p2", "u:<redacted> and q:<redacted: changed>"),
            vec!["p1", "p2"]
        );
        assert!(hidden_parts("abc", "(content not shown)").is_empty());
        assert!(hidden_parts("abc", "xyz <redacted>").is_empty());
    }

    fn yaml(text: &str) -> Value {
        crate::yaml::load_values(text)
            .expect("valid YAML")
            .remove(0)
    }

    #[test]
    fn hides_secret_named_values_and_credential_shapes() {
        let params = yaml(
            "db:\n  password: hunter2SECRET\n  host: db.example\nenv:\n- {name: API_TOKEN, value: tok-1234567}\n- {name: MODE, value: production}\npin: 1234\ngh: ghp_abcdefghijklmnopqrstuvwxyz0123456789\ncredentials:\n  nested: [deepvalue1]\n",
        );
        let m = SecretMask::of_values([&params]);
        let msg = "no such field: hunter2SECRET (tok-1234567, deepvalue1) at db.example in production; ghp_abcdefghijklmnopqrstuvwxyz0123456789";
        let shown = m.text(msg);
        for gone in [
            "hunter2SECRET",
            "tok-1234567",
            "deepvalue1",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        ] {
            assert!(!shown.contains(gone), "{gone}: {shown}");
        }
        // Neutral values stay, and so does the message around them.
        assert!(shown.starts_with("no such field: <redacted>"), "{shown}");
        assert!(shown.contains("db.example in production"), "{shown}");
    }

    #[test]
    fn short_values_and_references_are_not_masked() {
        let params = yaml("password: admin\ntoken: '?{base64:path/to/tok}'\n");
        let m = SecretMask::of_values([&params]);
        assert!(m.values.is_none());
        assert_eq!(m.text("user admin"), "user admin");
    }

    #[test]
    fn file_names_holding_secret_words_are_not_read_as_keys() {
        let m = SecretMask::of_values([]);
        for t in [
            "input password.jsonnet: no such field: abc",
            "Jinja2 error in tpl/secret.env: unknown function (in secret.env:2)",
            "input components/token/main.jsonnet: runtime error: x",
        ] {
            assert_eq!(m.text(t), t);
        }
    }

    /// Re-probe 13 (error-mask-misses-python-unicode-escapes): Python's
    /// `ascii()`, `json.dumps` and the repr of a line separator.
    #[test]
    fn non_ascii_values_are_hidden_in_ascii_escapes() {
        let params = yaml("secret_key: \"PLANT6é-ü-ñ\"\nclient_secret: \"PLANT7\\u2028ls\"\n");
        let m = SecretMask::of_values([&params]);
        for msg in [
            r"ValueError: bad value 'PLANT7\u2028ls'",
            r#""PLANT6\u00e9-\u00fc-\u00f1""#,
            r"'PLANT6\xe9-\xfc-\xf1'",
            r#""PLANT7\u2028ls""#,
            r"ValueError: b'PLANT6\xc3\xa9-\xc3\xbc-\xc3\xb1'",
        ] {
            let shown = m.text(msg);
            assert!(!shown.contains("PLANT"), "{msg} -> {shown}");
        }
    }

    /// Re-probe 15 (error-mask-misses-double-escaped-forms): a value
    /// escaped twice (JSON of JSON, repr of repr, repr of a bytes repr, a
    /// list of reprs), as an error quoting an escaped document shows it.
    #[test]
    fn values_escaped_twice_are_hidden() {
        let params = yaml(
            "secret_key: \"PLANT6é-ü-ñ\"\nclient_secret: \"PLANT7\\u2028ls\"\nemo_password: \"PLANTemo\\U0001F600x\"\ndb_password: \"PLANT8 tab\\there 'q' \\\"dq\\\" \\\\bs\"\n",
        );
        let m = SecretMask::of_values([&params]);
        for msg in [
            r####"ValueError: "b'PLANT6\\xc3\\xa9-\\xc3\\xbc-\\xc3\\xb1'""####,
            r####"ValueError: "\"PLANT6\\u00e9-\\u00fc-\\u00f1\"""####,
            r####"ValueError: '"PLANT6\\u00e9-\\u00fc-\\u00f1"'"####,
            r####"ValueError: "'PLANT6é-ü-ñ'""####,
            r####"ValueError: "'PLANT6\u00e9-\u00fc-\u00f1'""####,
            r####"ValueError: ["'PLANT6é-ü-ñ'"]"####,
            r####"ValueError: "\"PLANT6é-ü-ñ\"""####,
            r####"ValueError: "b'PLANT7\\xe2\\x80\\xa8ls'""####,
            r####"ValueError: "\"PLANT7\\u2028ls\"""####,
            r####"ValueError: '"PLANT7\\u2028ls"'"####,
            r####"ValueError: "'PLANT7\\u2028ls'""####,
            r####"ValueError: "'PLANT7\\u2028ls'""####,
            r####"ValueError: ["'PLANT7\\u2028ls'"]"####,
            r####"ValueError: "\"PLANT7 ls\"""####,
            r####"ValueError: "b'PLANTemo\\xf0\\x9f\\x98\\x80x'""####,
            r####"ValueError: "\"PLANTemo\\ud83d\\ude00x\"""####,
            r####"ValueError: '"PLANTemo\\ud83d\\ude00x"'"####,
            r####"ValueError: "'PLANTemo😀x'""####,
            r####"ValueError: "'PLANTemo\ud83d\ude00x'""####,
            r####"ValueError: ["'PLANTemo😀x'"]"####,
            r####"ValueError: "\"PLANTemo😀x\"""####,
            r####"ValueError: 'b\'PLANT8 tab\\there \\\'q\\\' "dq" \\\\bs\''"####,
            r####"ValueError: "\"PLANT8 tab\\there 'q' \\\"dq\\\" \\\\bs\"""####,
            r####"ValueError: '"PLANT8 tab\\there \'q\' \\"dq\\" \\\\bs"'"####,
            r####"ValueError: '\'PLANT8 tab\\there \\\'q\\\' "dq" \\\\bs\''"####,
            r####"ValueError: "'PLANT8 tab\\there \\'q\\' \"dq\" \\\\bs'""####,
            r####"ValueError: ['\'PLANT8 tab\\there \\\'q\\\' "dq" \\\\bs\'']"####,
            r####"ValueError: "\"PLANT8 tab\\there 'q' \\\"dq\\\" \\\\bs\"""####,
        ] {
            let shown = m.text(msg);
            assert!(!shown.contains("PLANT"), "{msg} -> {shown}");
        }
    }

    /// Re-probe 11 (error-mask-misses-escaped-values): a value holding a
    /// quote, backslash or newline was quoted escaped, and shown.
    #[test]
    fn escaped_and_multi_line_values_are_hidden() {
        let params =
            yaml("db_password: 'PLANT1\"quo\\te'\napi_token: \"PLANT2 with\\nnewline-x\"\n");
        let m = SecretMask::of_values([&params]);
        for msg in [
            r#"invalid literal for int() with base 10: 'PLANT1"quo\\te'"#,
            r#"template "PLANT1\"quo\\te" not found"#,
            r#"template "PLANT2 with\nnewline-x" not found"#,
            "PLANT2 with\nnewline-x",
            "{\n  \"a\": \"PLANT2 with\\nnewline-x\"\n}",
        ] {
            let shown = m.text(msg);
            assert!(!shown.contains("PLANT"), "{msg} -> {shown}");
        }
    }

    #[test]
    fn the_longest_value_is_hidden_whole() {
        let params = yaml("password: secretvalue\napi_key: secretvalue-and-more\n");
        let m = SecretMask::of_values([&params]);
        assert_eq!(m.text("x secretvalue-and-more y"), "x <redacted> y");
    }
}
