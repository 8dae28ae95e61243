//! Kapitan secret references: `?{type:path}` tags in compiled output are
//! replaced by Kapitan 0.36.3's hashed form `?{type:path:<8 hex>}` (plain
//! references by their value), missing references are created from their
//! `||function` chain, and `--reveal` swaps tags for the stored values.
//! Reference files are Kapitan's (`data`, `encoding`, `type`, ...), so both
//! tools read what the other wrote. Below compile in the dependency order:
//! it knows values and files, not targets' compile entries.

mod functions;
mod gpg;
pub mod vault;

use crate::value::{Map, Value};
use crate::yaml::pydump::{self as yaml_dump, DumpOptions};
use crate::yaml::pyload as pyyaml_load;
use base64::Engine;
use regex::{Captures, Regex};
use sha2::Digest;
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::{Mutex, OnceLock};

pub use functions::FUNCTION_NAMES;

/// Sorted, deduplicated fingerprints of gpg recipients (`fingerprint:` or
/// `name:` looked up in the keyring), as Kapitan's `lookup_fingerprints`.
pub fn gpg_fingerprints(recipients: &[Value]) -> Result<Vec<String>, RefError> {
    gpg::fingerprints(recipients)
}

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// A reference that could not be compiled, revealed or written.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct RefError {
    pub message: String,
    pub hint: Option<String>,
}

impl RefError {
    pub fn new(message: impl Into<String>) -> Self {
        RefError {
            message: clip_words(message.into()),
            hint: None,
        }
    }

    pub fn hint(mut self, h: impl Into<String>) -> Self {
        self.hint = Some(clip_words(h.into()));
        self
    }
}

/// The longest word (a run without blanks) a reference error quotes whole.
const MAX_QUOTED_WORD: usize = 300;

/// `text` with every word longer than [`MAX_QUOTED_WORD`] bytes cut to its
/// first 200 bytes and its length. The tags, tokens, paths and function
/// arguments an error quotes come from the inventory, and a tag holds no
/// blank (Kapitan's pattern), so each is one word: a 400 KB tag path was
/// quoted three times per error, and `lint` printed 80 MB for 50 targets
/// including one class (probe 39, ref-tag-error-unclipped). Cutting words
/// here covers every message at once, the ones built in `functions` too.
fn clip_words(text: String) -> String {
    if text.len() <= MAX_QUOTED_WORD
        || !text
            .split(char::is_whitespace)
            .any(|w| w.len() > MAX_QUOTED_WORD)
    {
        return text;
    }
    let mut out = String::with_capacity(MAX_QUOTED_WORD * 4);
    let mut rest = text.as_str();
    while !rest.is_empty() {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let (word, after) = rest.split_at(end);
        out.push_str(&crate::inventory::resolve::clip(word.to_string()));
        let blanks = after.len() - after.trim_start().len();
        out.push_str(&after[..blanks]);
        rest = &after[blanks..];
    }
    out
}

impl crate::diagnostics::ToDiagnostic for RefError {
    fn to_diagnostic(&self) -> crate::diagnostics::Diagnostic {
        let d = crate::diagnostics::Diagnostic::error(self.message.clone());
        match &self.hint {
            Some(h) => d.with_hint(h.clone()),
            None => d,
        }
    }
}

/// Kapitan's `REF_TOKEN_TAG_PATTERN`: the tag, its token and the function
/// chain. The `regex` crate's leftmost-first matching gives Python's
/// groups for this pattern (no look-around, no back-references).
pub fn tag_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(\?\{(\w+:[\w\-\.\@\=/:]+)(\|(?:(?:\|\w+)(?::\S*)*)+)?=*\})")
            .expect("tag pattern")
    })
}

/// True when `text` holds at least one reference tag.
pub fn has_tag(text: &str) -> bool {
    text.contains("?{") && tag_regex().is_match(text)
}

/// True when a string anywhere in `v` may hold a tag (a cheap scan that
/// spares copying values without any).
pub fn value_has_tags(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains("?{"),
        Value::List(l) => l.iter().any(value_has_tags),
        Value::Map(m) => m.values().any(value_has_tags),
        _ => false,
    }
}

/// Every tag in `text`, as written.
pub fn tags_in(text: &str) -> Vec<String> {
    if !text.contains("?{") {
        return Vec::new();
    }
    tag_regex()
        .captures_iter(text)
        .map(|c| c[1].to_string())
        .collect()
}

/// The file `strata compile --reveal` leaves at the top of `compiled/`:
/// diff, ci and push refuse a catalog that holds it, so revealed values
/// never reach a review or a catalog repository.
pub const REVEALED_MARKER: &str = ".strata-revealed";

/// The revealed-catalog marker in `dir`, `dir/compiled` or any parent of
/// `dir` (a target directory of a revealed catalog counts too).
pub fn revealed_marker(dir: &Path) -> Option<PathBuf> {
    let abs = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        std::env::current_dir().ok()?.join(dir)
    };
    let below = abs.join("compiled").join(REVEALED_MARKER);
    if below.is_file() {
        return Some(below);
    }
    abs.ancestors()
        .map(|a| a.join(REVEALED_MARKER))
        .find(|m| m.is_file())
}

/// Set (to anything but empty or `0`) in the environment of a compile run
/// for a review: missing references are an error instead of being created
/// (a review must not invent secrets that nobody committed).
pub const READ_ONLY_ENV: &str = "STRATA_REFS_READ_ONLY";

/// The backends Kapitan 0.36.3 knows.
pub const BACKENDS: &[&str] = &[
    "plain",
    "base64",
    "env",
    "gpg",
    "vaultkv",
    "vaulttransit",
    "gkms",
    "awskms",
    "azkms",
];

/// What the compile of one target knows about it: its name (for errors
/// and for the function context) and `parameters.kapitan.secrets`.
#[derive(Debug, Clone, Default)]
pub struct TargetRefs {
    pub target: String,
    pub secrets: Option<Value>,
    /// vaultkv writes: mount, path in Vault and key (empty: defaults).
    pub vault_location: Option<[String; 3]>,
}

/// One reference file as stored (and as Kapitan stores it).
#[derive(Debug, Clone, PartialEq)]
pub struct RefFile {
    pub type_name: String,
    /// `data` exactly as Python's `str()` shows it: the hash is over it.
    pub data: String,
    pub encoding: String,
    /// Every other key (`recipients`, `vault_params`, ...).
    pub extra: Map,
}

impl RefFile {
    /// The YAML Kapitan writes (`yaml.safe_dump`, keys sorted).
    pub fn to_yaml(&self) -> String {
        let mut m = Map::default();
        m.insert("data".into(), Value::String(self.data.clone()));
        m.insert("encoding".into(), Value::String(self.encoding.clone()));
        for (k, v) in &self.extra {
            m.insert(k.clone(), v.clone());
        }
        m.insert("type".into(), Value::String(self.type_name.clone()));
        yaml_dump::dump(&sorted(Value::Map(m)), &DumpOptions::safe_dump())
    }
}

/// `yaml.safe_dump` sorts the keys of every mapping.
fn sorted(v: Value) -> Value {
    match v {
        Value::Map(m) => {
            let mut m: Map = m.into_iter().map(|(k, v)| (k, sorted(v))).collect();
            m.sort_keys();
            Value::Map(m)
        }
        Value::List(l) => Value::List(l.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// `json.dumps(v)`: one line, `, ` and `: ` separators, ASCII only.
fn python_json(v: &Value, out: &mut String) {
    match v {
        Value::Map(m) => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                crate::yaml::json_string(k, out);
                out.push_str(": ");
                python_json(x, out);
            }
            out.push('}');
        }
        Value::List(l) => {
            out.push('[');
            for (i, x) in l.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                python_json(x, out);
            }
            out.push(']');
        }
        Value::String(s) => crate::yaml::json_string(s, out),
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => out.push_str(&i.to_string()),
        Value::Float(f) => out.push_str(&yaml_dump::python_float_repr(*f)),
    }
}

/// Python's `str()` of a YAML scalar, as the hash and `compile()` see it.
fn python_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Int(i) => i.to_string(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Null => "None".into(),
        Value::Float(f) => crate::yaml::python_float_repr(*f),
        other => format!("{other:?}"),
    }
}

/// The parsed tag: `?{token||funcs}`.
struct Tag<'a> {
    tag: &'a str,
    token: &'a str,
    funcs: Option<&'a str>,
}

fn parse_tag(text: &str) -> Result<Tag<'_>, RefError> {
    let c = tag_regex()
        .captures(text)
        .filter(|c| c.get(0).map(|m| m.start()) == Some(0))
        .ok_or_else(|| {
            RefError::new(format!("{text}: is not a valid tag"))
                .hint("try something like: ?{base64:path/to/secret||random:str}")
        })?;
    Ok(Tag {
        tag: c.get(1).map_or("", |m| m.as_str()),
        token: c.get(2).map_or("", |m| m.as_str()),
        funcs: c.get(3).map(|m| m.as_str()),
    })
}

/// A reference read from its file, with what Kapitan derives from it.
#[derive(Debug, Clone)]
pub struct Ref {
    pub file: RefFile,
    /// The path in the tag, with any `@sub.var`.
    pub path: String,
    /// sha256(path without sub-variable + data), hex.
    pub hash: String,
    pub subvar: Option<String>,
}

impl Ref {
    /// The compiled form Kapitan writes into the catalog.
    fn compiled(&self, embed: bool) -> Result<String, RefError> {
        if self.file.type_name == "plain" {
            return self.plain_value();
        }
        if embed && self.file.type_name != "env" {
            return Ok(self.embedded_tag());
        }
        Ok(format!(
            "?{{{}:{}:{}}}",
            self.file.type_name,
            self.path,
            &self.hash[..8]
        ))
    }

    /// Kapitan's `compile_embedded`: the reference itself, as base64 of
    /// `json.dumps(ref.dump())`, in the tag.
    fn embedded_tag(&self) -> String {
        let mut m = Map::default();
        m.insert("data".into(), Value::String(self.file.data.clone()));
        m.insert("encoding".into(), Value::String(self.file.encoding.clone()));
        let ty = self.file.type_name.as_str();
        if matches!(ty, "vaultkv" | "vaulttransit") {
            // VaultSecret.dump(): the pydantic model_dump of vault_params.
            m.insert("type".into(), Value::String(ty.to_string()));
            m.insert(
                "vault_params".into(),
                vault::model_dump(self.file.extra.get("vault_params"), ty == "vaulttransit"),
            );
        } else {
            for (k, v) in &self.file.extra {
                m.insert(k.clone(), v.clone());
            }
            m.insert("type".into(), Value::String(ty.to_string()));
            // dump()'s keys are in sorted order for the other backends.
            m.sort_keys();
        }
        if let Some(sub) = &self.subvar {
            m.insert("embedded_subvar_path".into(), Value::String(sub.clone()));
        }
        let mut json = String::new();
        python_json(&Value::Map(m), &mut json);
        format!(
            "?{{{}:{}:embedded}}",
            self.file.type_name,
            B64.encode(json.as_bytes())
        )
    }

    /// Plain references are their value, also in compiled output.
    fn plain_value(&self) -> Result<String, RefError> {
        let Some(sub) = &self.subvar else {
            return Ok(self.file.data.clone());
        };
        let b64 = self.file.encoding == "base64";
        let text = if b64 {
            decode_utf8(&self.file.data)?
        } else {
            self.file.data.clone()
        };
        let v = subvar_value(&text, sub, "PlainRef")?;
        Ok(if b64 { B64.encode(v) } else { v })
    }
}

fn decode_utf8(data: &str) -> Result<String, RefError> {
    let bytes = B64
        .decode(data.trim())
        .map_err(|e| RefError::new(format!("data is not valid base64: {e}")))?;
    String::from_utf8(bytes).map_err(|_| RefError::new("data is not UTF-8 text"))
}

/// `a.b.c` in the YAML document `text`.
fn subvar_value(text: &str, path: &str, who: &str) -> Result<String, RefError> {
    // The parser's message may quote the secret: never pass it on.
    let doc = pyyaml_load::load(text).map_err(|_| {
        RefError::new(format!(
            "{who}: the revealed secret is not valid YAML, cannot access sub-variable {path}"
        ))
    })?;
    if doc.as_map().is_none() {
        return Err(RefError::new(format!(
            "{who}: revealed secret is not in embedded yaml, cannot access sub-variable at {path}"
        )));
    }
    let keys: Vec<&str> = path.split('.').collect();
    match doc.get_path(&keys) {
        Some(v) => Ok(python_str(v)),
        None => Err(RefError::new(format!(
            "{who}: cannot access sub-variable key {path}"
        ))),
    }
}

/// Where references live, and the lock that keeps two targets from
/// creating the same one at once.
pub struct Refs {
    root: PathBuf,
    create: Mutex<()>,
    revealed: Mutex<HashMap<String, String>>,
    /// Parsed reference files with their hashes: a reference used by many
    /// tags is read and hashed once per run (2,000 tags of a 2 MB reference
    /// hashed it 2,000 times: 86 s in a debug build, re-probe 18).
    files: Mutex<HashMap<String, (RefFile, String)>>,
    /// False in reviews: a missing reference is never created there.
    pub create_missing: bool,
    /// Kapitan's `--embed-refs`: tags carry the reference itself.
    pub embed: bool,
    /// Bytes the reference functions made in this run
    /// ([`MAX_GENERATED_BYTES`]).
    generated: std::sync::atomic::AtomicU64,
}

/// The most bytes reference functions (`||random:str:N`, keys) make in one
/// run: each tag may make 1 MiB, and 1,000 tags (42 KB of inventory) made
/// 1.4 GB of references in 64 s.
pub const MAX_GENERATED_BYTES: u64 = 64 << 20;

/// The largest reference file read: the base64 of a [`MAX_GENERATED_BYTES`]
/// secret (or of gpg's 64 MiB most), with room for its other keys.
pub const MAX_REF_FILE_BYTES: u64 = 96 << 20;

impl Refs {
    pub fn new(root: impl Into<PathBuf>) -> Refs {
        Refs {
            root: root.into(),
            create: Mutex::new(()),
            revealed: Mutex::new(HashMap::new()),
            files: Mutex::new(HashMap::new()),
            create_missing: true,
            embed: false,
            generated: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Counts `bytes` a reference function made against
    /// [`MAX_GENERATED_BYTES`].
    pub(crate) fn charge_generated(&self, bytes: usize) -> Result<(), RefError> {
        use std::sync::atomic::Ordering;
        let total = self
            .generated
            .fetch_add(bytes as u64, Ordering::Relaxed)
            .saturating_add(bytes as u64);
        if total > MAX_GENERATED_BYTES {
            return Err(RefError::new(format!(
                "the secret references created in this run hold more than {MAX_GENERATED_BYTES} bytes (`||random:str:N` makes N characters per tag): generate smaller secrets, or create them in several runs"
            )));
        }
        Ok(())
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `refs/<path>`, refusing anything that leaves the refs directory:
    /// a tag comes from a PR and a plain reference is written into the
    /// catalog, so `?{plain:../../etc/passwd}` must not read that file.
    pub fn file_path(&self, path: &str) -> Result<PathBuf, RefError> {
        let p = Path::new(path);
        let bad = path.is_empty()
            || p.is_absolute()
            || p.components()
                .any(|c| !matches!(c, Component::Normal(_)) && !matches!(c, Component::CurDir));
        if bad {
            return Err(RefError::new(format!(
                "reference path `{path}` leaves the refs directory (absolute or `..`)"
            ))
            .hint("write reference paths relative to the refs directory, e.g. targets/prod/db_password"));
        }
        Ok(self.root.join(p))
    }

    /// Reads `refs/<path>`; `Ok(None)` when there is no such file.
    pub fn read_file(&self, path: &str) -> Result<Option<RefFile>, RefError> {
        Ok(self.read_file_hashed(path)?.map(|(f, _)| f))
    }

    /// Kapitan's hash of a reference file: over its path and its data.
    fn file_hash(path: &str, file: &RefFile) -> String {
        let mut h = sha2::Sha256::new();
        h.update(path.as_bytes());
        h.update(file.data.as_bytes());
        hex(&h.finalize())
    }

    /// [`Refs::read_file`] with the file's hash ([`Refs::file_hash`]).
    fn read_file_hashed(&self, path: &str) -> Result<Option<(RefFile, String)>, RefError> {
        let full = self.file_path(path)?;
        if let Some(f) = self.files.lock().ok().and_then(|m| m.get(path).cloned()) {
            return Ok(Some(f));
        }
        if std::fs::symlink_metadata(&full).is_err() {
            return Ok(None);
        }
        // Symlinks (the file, or a directory on the way) may only lead to
        // files inside the refs directory.
        let (Ok(r), Ok(t)) = (self.root.canonicalize(), full.canonicalize()) else {
            return Ok(None);
        };
        if !t.starts_with(&r) {
            return Err(RefError::new(format!(
                "{}: resolves outside the refs directory (through a symlink); strata does not follow it",
                full.display()
            )));
        }
        // A directory or FIFO there was reported as "does not exist", with
        // a hint to write the reference, which then failed or waited.
        if !t.is_file() {
            return Err(RefError::new(format!(
                "{}: is not a regular file (a directory, a FIFO or a device): a reference is a file written by `strata refs --write`",
                full.display()
            )));
        }
        // A reference holds one secret; each file read is kept for the run
        // and its YAML parse takes about three times its size: a 200 MB
        // file (a pull request's, packed to kilobytes) took 726 MB, and a
        // review checks out 4 GiB (probe 39, ref-file-size-unbounded).
        let len = std::fs::metadata(&full).map(|m| m.len()).unwrap_or(0);
        if len > MAX_REF_FILE_BYTES {
            return Err(RefError::new(format!(
                "{}: is {len} bytes: a reference file holds at most {MAX_REF_FILE_BYTES} bytes (one secret, base64-encoded)",
                full.display()
            )));
        }
        let text = std::fs::read_to_string(&full)
            .map_err(|e| RefError::new(format!("{}: {e}", full.display())))?;
        let f =
            parse_ref_file(&text).map_err(|m| RefError::new(format!("{}: {m}", full.display())))?;
        let hash = Self::file_hash(path, &f);
        if let Ok(mut m) = self.files.lock() {
            m.insert(path.to_string(), (f.clone(), hash.clone()));
        }
        Ok(Some((f, hash)))
    }

    /// Writes a reference file as Kapitan does (parents created).
    pub fn write_file(&self, path: &str, file: &RefFile) -> Result<PathBuf, RefError> {
        let full = self.file_path(path)?;
        if let Some(parent) = full.parent() {
            // Checked before the directories are made: through a committed
            // `refs/out -> /elsewhere` link, `out/a/b/x` made `/elsewhere/a/b`
            // and only then was refused.
            if self.leaves_root(parent) {
                return Err(RefError::new(format!(
                    "{}: is below a symlink out of the refs directory; strata does not write through it",
                    full.display()
                )));
            }
            std::fs::create_dir_all(parent)
                .map_err(|e| RefError::new(format!("{}: {e}", parent.display())))?;
        }
        let outside = match (
            self.root.canonicalize(),
            full.parent().map(Path::canonicalize),
        ) {
            (Ok(r), Some(Ok(p))) => !p.starts_with(&r),
            _ => false,
        };
        if outside || std::fs::symlink_metadata(&full).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(RefError::new(format!(
                "{}: is a symlink or below one out of the refs directory; strata does not write through it",
                full.display()
            )));
        }
        // A file past the read limit could never be read back: `refs
        // --write` of a 100 MB value wrote 133 MB that every later compile
        // refused (probe 39's left-over, probe 40).
        let text = file.to_yaml();
        if text.len() as u64 > MAX_REF_FILE_BYTES {
            return Err(RefError::new(format!(
                "{}: the reference would be {} bytes, and a reference file holds at most {MAX_REF_FILE_BYTES} bytes (one secret of at most {} MiB, base64-encoded): not written; keep large files out of references",
                full.display(),
                text.len(),
                MAX_GENERATED_BYTES >> 20
            )));
        }
        std::fs::write(&full, text)
            .map_err(|e| RefError::new(format!("{}: {e}", full.display())))?;
        if let Ok(mut m) = self.files.lock() {
            m.insert(
                path.to_string(),
                (file.clone(), Self::file_hash(path, file)),
            );
        }
        Ok(full)
    }

    /// Whether the deepest part of `dir` that exists (a path below the
    /// refs directory) resolves outside it; a dangling link counts as out.
    fn leaves_root(&self, dir: &Path) -> bool {
        let Ok(root) = self.root.canonicalize() else {
            // No refs directory yet: whatever is written below it is new.
            return false;
        };
        let mut at = dir;
        while std::fs::symlink_metadata(at).is_err() {
            match at.parent() {
                Some(p) if p.starts_with(&self.root) => at = p,
                _ => return false,
            }
        }
        at.canonicalize()
            .map_or(true, |real| !real.starts_with(&root))
    }

    /// Kapitan's `backend[path]`: the reference with its hash, or `None`.
    pub fn get(&self, type_name: &str, path: &str) -> Result<Option<Ref>, RefError> {
        check_backend(type_name)?;
        let subvar = path.split_once('@').map(|(_, s)| s.to_string());
        let file_path: String = strip_subvars(path);
        let Some((mut file, hash)) = self.read_file_hashed(&file_path)? else {
            return Ok(None);
        };
        // The backend named in the tag decides how the file is read
        // (Kapitan loads the file with the tag's backend class).
        if file.type_name != type_name && type_name == "env" {
            file.encoding = "original".into();
        }
        file.type_name = type_name.to_string();
        Ok(Some(Ref {
            file,
            path: path.to_string(),
            hash,
            subvar,
        }))
    }

    /// The reference a token names (`type:path`, `type:path:hash`, or
    /// vaultkv's `type:path:mount:path_in_vault:key`).
    fn by_token(&self, token: &str, tag: &str) -> Result<Option<Ref>, RefError> {
        let attrs: Vec<&str> = token.split(':').collect();
        match attrs.len() {
            2 | 5 => self.get(attrs[0], attrs[1]),
            3 => {
                if attrs[2] == "embedded" {
                    return embedded(attrs[0], attrs[1]).map(Some);
                }
                let Some(r) = self.get(attrs[0], attrs[1])? else {
                    return Ok(None);
                };
                if r.hash[..8] != *attrs[2] {
                    return Err(RefError::new(format!(
                        "{tag}: token hash does not match with stored reference hash: {}:{}:{}",
                        attrs[0],
                        attrs[1],
                        &r.hash[..8]
                    ))
                    .hint(
                        "the reference file changed after this catalog was compiled: compile again",
                    ));
                }
                Ok(Some(r))
            }
            _ => Err(RefError::new(format!("{tag}: is not a valid tag"))
                .hint("try something like: ?{base64:path/to/secret||random:str}")),
        }
    }

    fn missing(&self, tag: &str, token: &str, t: &TargetRefs) -> RefError {
        let path = token.split(':').nth(1).unwrap_or("");
        let file = self.root.join(strip_subvars(path));
        let ty = token.split(':').next().unwrap_or("base64");
        let mut msg = format!(
            "reference {tag} not found: {} does not exist",
            file.display()
        );
        if !t.target.is_empty() {
            msg.push_str(&format!(" (target {})", t.target));
        }
        RefError::new(msg).hint(format!(
            "create it with `echo -n VALUE | strata refs --write {ty}:{} -f -` (or give the tag a function, e.g. ?{{{ty}:{}||random:str}})",
            strip_subvars(path),
            strip_subvars(path)
        ))
    }

    /// What a compile of this tag would fail on, without compiling or
    /// creating anything (for `strata lint`).
    pub fn check_tag(&self, text: &str, target: &str) -> Result<(), RefError> {
        let tag = parse_tag(text)?;
        let t = TargetRefs {
            target: target.to_string(),
            ..Default::default()
        };
        if self.by_token(tag.token, tag.tag)?.is_some() {
            return Ok(());
        }
        match tag.funcs {
            None => Err(self.missing(tag.tag, tag.token, &t)),
            Some(f) => {
                let body = f.strip_prefix("||").unwrap_or(f);
                for name in body
                    .split('|')
                    .map(|x| x.trim().split(':').next().unwrap_or(""))
                {
                    if name != "base64" && !FUNCTION_NAMES.contains(&name) {
                        return Err(RefError::new(format!(
                            "{}: {name}: unknown ref function used. Choose one of: {FUNCTION_NAMES:?}",
                            tag.tag
                        )));
                    }
                }
                Ok(())
            }
        }
    }

    /// The compiled form of one tag (Kapitan's `compile_replace_match`).
    pub fn compile_tag(&self, text: &str, t: &TargetRefs) -> Result<String, RefError> {
        let tag = parse_tag(text)?;
        if let Some(r) = self.by_token(tag.token, tag.tag)? {
            return r.compiled(self.embed);
        }
        let Some(funcs) = tag.funcs else {
            return Err(self.missing(tag.tag, tag.token, t));
        };
        if tag.token.contains('@') {
            return Err(RefError::new(format!(
                "{}: references with sub-variables must be created manually",
                tag.tag
            )));
        }
        if !self.create_missing {
            return Err(self.missing(tag.tag, tag.token, t).hint(
                "checks and reviews never create references, nor does a pull request's (confined) compile: run `strata compile` locally and commit the refs directory",
            ));
        }
        let _guard = self.create.lock().unwrap_or_else(|e| e.into_inner());
        // Another target may have created it while this one waited.
        if let Some(r) = self.by_token(tag.token, tag.tag)? {
            return r.compiled(self.embed);
        }
        self.create_from_functions(tag.token, funcs, t)?;
        match self.by_token(tag.token, tag.tag)? {
            Some(r) => r.compiled(self.embed),
            None => Err(self.missing(tag.tag, tag.token, t)),
        }
    }

    fn create_from_functions(
        &self,
        token: &str,
        funcs: &str,
        t: &TargetRefs,
    ) -> Result<(), RefError> {
        let out = functions::eval_chain(self, token, funcs)?;
        let attrs: Vec<&str> = token.split(':').collect();
        if !matches!(attrs.len(), 2 | 5) {
            return Err(RefError::new(format!("{token}: is not a valid token")));
        }
        let (ty, path) = (attrs[0], attrs[1]);
        let mut t = t.clone();
        if attrs.len() == 5 {
            t.vault_location = Some([attrs[2].into(), attrs[3].into(), attrs[4].into()]);
        }
        let t = &t;
        let (data, encoding) = if out.base64 {
            (B64.encode(out.data.as_bytes()), "base64")
        } else {
            (out.data, "original")
        };
        let file = self.encode(ty, path, data.as_bytes(), encoding, t)?;
        self.write_file(path, &file)?;
        Ok(())
    }

    /// A new reference file of backend `ty` holding `data` (already
    /// base64-encoded when `encoding` is `base64`), as Kapitan's
    /// `from_params` builds it.
    pub fn encode(
        &self,
        ty: &str,
        path: &str,
        data: &[u8],
        encoding: &str,
        t: &TargetRefs,
    ) -> Result<RefFile, RefError> {
        check_backend(ty)?;
        // plain, env and vaultkv references hold text (Kapitan decodes the
        // value as UTF-8 and fails): decoded lossily, a binary value was
        // stored with U+FFFD for its bytes, and revealed as something else.
        let text = || {
            std::str::from_utf8(data).map(str::to_owned).map_err(|_| {
                RefError::new(format!(
                    "cannot write ?{{{ty}:{path}}}: a {ty} reference holds text, and the value is not UTF-8"
                ))
                .hint("store binary data base64-encoded (--base64, encoding: base64), or in a base64 or gpg reference")
            })
        };
        let mut extra = Map::default();
        let (data, encoding) = match ty {
            "plain" => (text()?, encoding.to_string()),
            // EnvRef ignores the encoding it is given.
            "env" => (text()?, "original".to_string()),
            "base64" => (B64.encode(data), encoding.to_string()),
            "gpg" => {
                let recipients = gpg::recipients_for(t, path)?;
                let fps = gpg::fingerprints(&recipients)?;
                let enc = gpg::encrypt(data, &fps)?;
                extra.insert(
                    "recipients".into(),
                    Value::List(
                        fps.iter()
                            .map(|f| {
                                let mut m = Map::default();
                                m.insert("fingerprint".into(), Value::String(f.clone()));
                                Value::Map(m)
                            })
                            .collect(),
                    ),
                );
                (B64.encode(enc), encoding.to_string())
            }
            "vaultkv" => {
                let secrets = t.secrets.as_ref();
                let pv = secrets.and_then(|s| s.get_path(&["vaultkv"]));
                let params = vault::VaultParams::from_value(pv, false);
                let [mount, in_vault, key] = t.vault_location.clone().unwrap_or_default();
                if key.is_empty() {
                    return Err(RefError::new(format!(
                        "Could not create ?{{vaultkv:{path}}}: vaultkv: key is missing"
                    ))
                    .hint("name the key: ?{vaultkv:path:mount:path/in/vault:KEY||function}, or --vault-key with strata refs"));
                }
                let mount = if mount.is_empty() {
                    params.mount.clone()
                } else {
                    mount
                };
                let in_vault = if in_vault.is_empty() {
                    path.to_string()
                } else {
                    in_vault
                };
                let d = vault::kv_write(&params, &mount, &in_vault, &key, &text()?)?;
                extra.insert("vault_params".into(), params.dump(false));
                (d, encoding.to_string())
            }
            "vaulttransit" => {
                let pv = t
                    .secrets
                    .as_ref()
                    .and_then(|s| s.get_path(&["vaulttransit"]));
                let params = vault::VaultParams::from_value(pv, true);
                let (d, enc) = vault::transit_write(&params, data, encoding == "base64")?;
                extra.insert("vault_params".into(), params.dump(true));
                (d, enc)
            }
            other => return Err(unsupported(other, "write", path, &t.target)),
        };
        Ok(RefFile {
            type_name: ty.to_string(),
            data,
            encoding,
            extra,
        })
    }

    /// The stored value of a reference (Kapitan's `ref.reveal()`).
    pub fn reveal_ref(&self, r: &Ref, target: &str) -> Result<String, RefError> {
        let f = &r.file;
        match f.type_name.as_str() {
            "plain" => Ok(f.data.clone()),
            "env" => {
                let last = r.path.rsplit('/').next().unwrap_or("");
                let key = format!("KAPITAN_VAR_{last}");
                Ok(std::env::var(&key)
                    .or_else(|_| std::env::var(key.to_uppercase()))
                    .unwrap_or_else(|_| f.data.clone()))
            }
            "base64" => {
                let bytes = B64.decode(f.data.trim()).map_err(|e| {
                    RefError::new(format!("{}: data is not valid base64: {e}", r.path))
                })?;
                Ok(String::from_utf8(bytes).unwrap_or_else(|_| f.data.clone()))
            }
            "gpg" => {
                let bytes = B64.decode(f.data.trim()).map_err(|e| {
                    RefError::new(format!("{}: data is not valid base64: {e}", r.path))
                })?;
                gpg::decrypt(&bytes).map_err(|e| {
                    RefError::new(format!("cannot reveal ?{{gpg:{}}}: {}", r.path, e.message)).hint(
                        e.hint.unwrap_or_else(|| {
                            "import the private key of one of the recipients into gpg (GNUPGHOME)"
                                .into()
                        }),
                    )
                })
            }
            "vaultkv" | "vaulttransit" => {
                let transit = f.type_name == "vaulttransit";
                let params = vault::VaultParams::from_value(f.extra.get("vault_params"), transit);
                let res = if transit {
                    vault::transit_reveal(&params, &f.data)
                } else {
                    vault::kv_reveal(&params, &f.data, &f.encoding)
                };
                res.map_err(|e| {
                    let on = if target.is_empty() {
                        String::new()
                    } else {
                        format!(" (target {target})")
                    };
                    RefError {
                        message: format!(
                            "cannot reveal ?{{{}:{}}}{on}: {}",
                            f.type_name, r.path, e.message
                        ),
                        hint: e.hint,
                    }
                })
            }
            other => Err(unsupported(other, "reveal", &r.path, target)),
        }
    }

    /// The value one tag stands for (Kapitan's `_reveal_replace_match`).
    pub fn reveal_tag(&self, text: &str, t: &TargetRefs) -> Result<String, RefError> {
        let tag = parse_tag(text)?;
        if let Some(i) = tag.token.find('@') {
            // Sub-variable: reveal the whole reference, read the key.
            let token_plain = strip_subvars(tag.token);
            let sub = tag.token[i + 1..]
                .split(':')
                .next()
                .unwrap_or("")
                .to_string();
            let r = self
                .by_token(&token_plain, tag.tag)?
                .ok_or_else(|| self.missing(tag.tag, tag.token, t))?;
            let plain = self.reveal_cached(&token_plain, &r, &t.target)?;
            let b64 = r.file.encoding == "base64";
            let text = if b64 { decode_utf8(&plain)? } else { plain };
            let v = subvar_value(&text, &sub, "Revealer")?;
            return Ok(if b64 { B64.encode(v) } else { v });
        }
        let r = self
            .by_token(tag.token, tag.tag)?
            .ok_or_else(|| self.missing(tag.tag, tag.token, t))?;
        let v = self.reveal_cached(tag.token, &r, &t.target)?;
        match &r.subvar {
            // An embedded reference that carries its sub-variable path.
            Some(sub) => subvar_value(&v, sub, "Revealer"),
            None => Ok(v),
        }
    }

    fn reveal_cached(&self, key: &str, r: &Ref, target: &str) -> Result<String, RefError> {
        if let Some(v) = self.revealed.lock().ok().and_then(|m| m.get(key).cloned()) {
            return Ok(v);
        }
        let v = self.reveal_ref(r, target)?;
        if let Ok(mut m) = self.revealed.lock() {
            m.insert(key.to_string(), v.clone());
        }
        Ok(v)
    }

    /// Replaces every tag in `text` with its compiled form.
    pub fn compile_str(&self, text: &str, t: &TargetRefs) -> Result<String, RefError> {
        self.replace(text, |m| self.compile_tag(m, t))
    }

    /// Replaces every tag in `text` with its value.
    pub fn reveal_str(&self, text: &str, t: &TargetRefs) -> Result<String, RefError> {
        self.replace(text, |m| self.reveal_tag(m, t))
    }

    fn replace(
        &self,
        text: &str,
        f: impl Fn(&str) -> Result<String, RefError>,
    ) -> Result<String, RefError> {
        if !text.contains("?{") {
            return Ok(text.to_string());
        }
        let mut err = None;
        let out = tag_regex().replace_all(text, |c: &Captures| match f(&c[0]) {
            Ok(s) => s,
            Err(e) => {
                err.get_or_insert(e);
                String::new()
            }
        });
        match err {
            Some(e) => Err(e),
            None => Ok(out.into_owned()),
        }
    }

    /// Kapitan's `compile_obj`: every string, recursively. In a mapping,
    /// values using `||reveal:` wait for the others (which may create what
    /// they reveal), as Kapitan's multi-pass compile does.
    pub fn compile_value(&self, v: &Value, t: &TargetRefs) -> Result<Value, RefError> {
        match v {
            Value::String(s) => Ok(Value::String(self.compile_str(s, t)?)),
            Value::List(l) => l
                .iter()
                .map(|x| self.compile_value(x, t))
                .collect::<Result<_, _>>()
                .map(Value::List),
            Value::Map(m) => {
                let mut out: Vec<Option<Value>> = vec![None; m.len()];
                for (i, (_, x)) in m.iter().enumerate() {
                    if !matches!(x, Value::String(s) if s.contains("||reveal:")) {
                        out[i] = Some(self.compile_value(x, t)?);
                    }
                }
                loop {
                    let mut progress = false;
                    let mut pending = false;
                    for (i, (_, x)) in m.iter().enumerate() {
                        if out[i].is_some() {
                            continue;
                        }
                        match self.compile_value(x, t) {
                            Ok(c) => {
                                out[i] = Some(c);
                                progress = true;
                            }
                            Err(_) => pending = true,
                        }
                    }
                    if !pending || !progress {
                        break;
                    }
                }
                let mut res = Map::default();
                for ((k, x), c) in m.iter().zip(out) {
                    let c = match c {
                        Some(c) => c,
                        None => self.compile_value(x, t)?,
                    };
                    res.insert(k.clone(), c);
                }
                Ok(Value::Map(res))
            }
            other => Ok(other.clone()),
        }
    }

    /// Kapitan's `reveal_obj`.
    pub fn reveal_value(&self, v: &Value, t: &TargetRefs) -> Result<Value, RefError> {
        match v {
            Value::String(s) => Ok(Value::String(self.reveal_str(s, t)?)),
            Value::List(l) => l
                .iter()
                .map(|x| self.reveal_value(x, t))
                .collect::<Result<_, _>>()
                .map(Value::List),
            Value::Map(m) => {
                let mut res = Map::default();
                for (k, x) in m {
                    res.insert(k.clone(), self.reveal_value(x, t)?);
                }
                Ok(Value::Map(res))
            }
            other => Ok(other.clone()),
        }
    }
}

fn strip_subvars(path: &str) -> String {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"@[\w\.\-_]+").expect("subvar pattern"))
        .replace_all(path, "")
        .into_owned()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn check_backend(ty: &str) -> Result<(), RefError> {
    if BACKENDS.contains(&ty) {
        Ok(())
    } else {
        Err(RefError::new(format!("no backend for ref type: {ty}"))
            .hint(format!("use one of: {}", BACKENDS.join(", "))))
    }
}

fn unsupported(ty: &str, what: &str, path: &str, target: &str) -> RefError {
    let on = if target.is_empty() {
        String::new()
    } else {
        format!(" for target {target}")
    };
    let why = "cloud KMS backends are not built into strata";
    RefError::new(format!(
        "cannot {what} ?{{{ty}:{path}}}{on}: {why}"
    ))
    .hint(format!(
        "compiling existing {ty} references works offline (only the hash is written); to {what} values use `kapitan refs`"
    ))
}

/// Reads a reference file's YAML.
pub fn parse_ref_file(text: &str) -> Result<RefFile, String> {
    let v = pyyaml_load::load(text)?;
    let Value::Map(m) = v else {
        return Err("a reference file must be a mapping with `data` and `type`".into());
    };
    let data = match m.get("data") {
        None => return Err("a reference file needs a `data` key".into()),
        Some(Value::List(_) | Value::Map(_)) => {
            return Err(
                "`data` must be a string (the base64 of the secret), not a list or mapping".into(),
            )
        }
        Some(v) => python_str(v),
    };
    let type_name = m
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let encoding = m
        .get("encoding")
        .and_then(Value::as_str)
        .unwrap_or("original")
        .to_string();
    let extra = m
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "data" | "type" | "encoding"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Ok(RefFile {
        type_name,
        data,
        encoding,
        extra,
    })
}

/// `?{type:<base64 json>:embedded}`: the reference is in the tag.
fn embedded(ty: &str, b64: &str) -> Result<Ref, RefError> {
    let json = decode_utf8(b64)?;
    let v: serde_json::Value = serde_json::from_str(&json)
        .map_err(|e| RefError::new(format!("embedded reference is not JSON: {e}")))?;
    let data = v
        .get("data")
        .and_then(|d| d.as_str())
        .ok_or_else(|| RefError::new("embedded reference has no data"))?;
    let encoding = v
        .get("encoding")
        .and_then(|d| d.as_str())
        .unwrap_or("original");
    let extra = match Value::from_json(&v) {
        Value::Map(m) => m
            .into_iter()
            .filter(|(k, _)| {
                !matches!(
                    k.as_str(),
                    "data" | "encoding" | "type" | "embedded_subvar_path"
                )
            })
            .collect(),
        _ => Map::default(),
    };
    Ok(Ref {
        file: RefFile {
            type_name: ty.to_string(),
            data: data.to_string(),
            encoding: encoding.to_string(),
            extra,
        },
        path: b64.to_string(),
        hash: hex(&sha2::Sha256::digest(data.as_bytes())),
        subvar: v
            .get("embedded_subvar_path")
            .and_then(|d| d.as_str())
            .map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ref_file_data_that_is_not_text_is_named() {
        for data in ["[1, 2]", "{a: b}"] {
            let e = parse_ref_file(&format!("data: {data}\ntype: base64\n")).unwrap_err();
            assert!(e.contains("`data` must be a string"), "{e}");
        }
        // Scalars keep Python's str(): Kapitan accepts `data: 12`.
        assert_eq!(
            parse_ref_file("data: 12\ntype: base64\n").unwrap().data,
            "12"
        );
    }

    fn refs() -> (tempfile::TempDir, Refs) {
        let d = tempfile::tempdir().unwrap();
        let r = Refs::new(d.path());
        (d, r)
    }

    fn t() -> TargetRefs {
        TargetRefs {
            target: "prod".into(),
            ..Default::default()
        }
    }

    #[test]
    fn tag_groups_match_python() {
        let c = tag_regex()
            .captures("x ?{base64:a/b||random:str|base64} y")
            .unwrap();
        assert_eq!(&c[1], "?{base64:a/b||random:str|base64}");
        assert_eq!(&c[2], "base64:a/b");
        assert_eq!(&c[3], "||random:str|base64");
        // Greedy `\S*` runs to the last `}` when nothing separates tags.
        let c = tag_regex()
            .captures("?{base64:a||random:str}?{base64:b}")
            .unwrap();
        assert_eq!(&c[3], "||random:str}?{base64:b");
        assert_eq!(tags_in("?{base64:a} and ?{plain:b/c}").len(), 2);
        assert!(!has_tag("?{}"));
    }

    #[test]
    fn base64_hash_and_plain_value() {
        let (_d, r) = refs();
        let f = r
            .encode("base64", "x/pw", b"hunter2", "original", &t())
            .unwrap();
        r.write_file("x/pw", &f).unwrap();
        let expect = hex(&sha2::Sha256::digest(
            format!("x/pw{}", B64.encode("hunter2")).as_bytes(),
        ));
        assert_eq!(
            r.compile_str("a ?{base64:x/pw} b", &t()).unwrap(),
            format!("a ?{{base64:x/pw:{}}} b", &expect[..8])
        );
        let compiled = r.compile_str("?{base64:x/pw}", &t()).unwrap();
        assert_eq!(r.reveal_str(&compiled, &t()).unwrap(), "hunter2");
        let p = r.encode("plain", "x/p", b"open", "original", &t()).unwrap();
        r.write_file("x/p", &p).unwrap();
        assert_eq!(r.compile_str("?{plain:x/p}", &t()).unwrap(), "open");
    }

    #[test]
    fn missing_ref_names_tag_file_target_and_hint() {
        let (_d, r) = refs();
        let e = r.compile_str("?{base64:db/pw}", &t()).unwrap_err();
        assert!(e.message.contains("?{base64:db/pw}"), "{}", e.message);
        assert!(e.message.contains("db/pw does not exist"), "{}", e.message);
        assert!(e.message.contains("target prod"), "{}", e.message);
        assert!(e.hint.unwrap().contains("strata refs --write base64:db/pw"));
    }

    #[test]
    fn long_tags_are_quoted_cut_in_errors() {
        let (_d, r) = refs();
        let path = format!("{}x", "a/".repeat(200_000));
        let long = format!("?{{base64:{path}}}");
        // Missing, checked by lint, with an unknown function, and a
        // function chain's argument: every message and hint stays short,
        // still names the target, the tag's start and its length.
        let cases = [
            r.compile_str(&long, &t()).unwrap_err(),
            r.check_tag(&long, "prod").unwrap_err(),
            r.check_tag(&format!("?{{base64:{path}||nosuch}}"), "prod")
                .unwrap_err(),
            r.check_tag(&format!("?{{base64:x||{}}}", "f".repeat(100_000)), "prod")
                .unwrap_err(),
        ];
        for e in cases {
            let hint = e.hint.clone().unwrap_or_default();
            assert!(
                e.message.len() + hint.len() < 2_000,
                "{} bytes",
                e.message.len()
            );
            assert!(e.message.contains("?{base64:"), "{}", e.message);
            assert!(e.message.contains(" bytes)"), "{}", e.message);
        }
        let e = r.compile_str(&long, &t()).unwrap_err();
        assert!(e.message.contains("(target prod)"), "{}", e.message);
        // Short words are kept as they were.
        let e = r.compile_str("?{base64:db/pw}", &t()).unwrap_err();
        assert!(!e.message.contains(" bytes)"), "{}", e.message);
    }

    #[test]
    fn a_reference_file_past_the_size_limit_is_refused_unread() {
        let (d, r) = refs();
        let mut f = std::fs::File::create(d.path().join("big")).unwrap();
        use std::io::Write;
        f.write_all(b"type: base64\nencoding: original\ndata: ")
            .unwrap();
        // A sparse file: its size is what counts, nothing is read.
        f.set_len(MAX_REF_FILE_BYTES + 1).unwrap();
        let e = r.compile_str("?{base64:big}", &t()).unwrap_err();
        assert!(
            e.message.contains("is 100663297 bytes")
                && e.message
                    .contains("a reference file holds at most 100663296 bytes"),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_reference_file_past_the_read_limit_is_never_written() {
        // Probe 40: `refs --write` of a 100 MB value wrote 133 MB that every
        // later read refused.
        let (d, r) = refs();
        let f = RefFile {
            type_name: "base64".into(),
            data: "A".repeat(MAX_REF_FILE_BYTES as usize),
            encoding: "original".into(),
            extra: Map::default(),
        };
        let e = r.write_file("big", &f).unwrap_err();
        assert!(
            e.message
                .contains("a reference file holds at most 100663296 bytes")
                && e.message.contains("not written"),
            "{}",
            e.message
        );
        assert!(!d.path().join("big").exists());
        // One that fits is written and read back.
        let small = RefFile {
            data: "QUJD".into(),
            ..f
        };
        r.write_file("small", &small).unwrap();
        assert!(d.path().join("small").is_file());
    }

    #[test]
    fn paths_out_of_refs_are_refused() {
        let (d, r) = refs();
        for p in ["../x", "/etc/passwd", "a/../../b"] {
            assert!(
                r.compile_str(&format!("?{{plain:{p}}}"), &t()).is_err(),
                "{p}"
            );
        }
        // Symlinks out of the refs directory: a file and a directory.
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(
            outside.path().join("f"),
            "data: host-secret\nencoding: original\ntype: plain\n",
        )
        .unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(outside.path().join("f"), d.path().join("link")).unwrap();
            std::os::unix::fs::symlink(outside.path(), d.path().join("dir")).unwrap();
            for p in ["link", "dir/f"] {
                let e = r.compile_str(&format!("?{{plain:{p}}}"), &t()).unwrap_err();
                assert!(
                    e.message.contains("outside the refs directory"),
                    "{p}: {}",
                    e.message
                );
                assert!(!e.message.contains("host-secret"));
            }
            let f = r
                .encode("plain", "dir/new", b"x", "original", &t())
                .unwrap();
            assert!(r.write_file("dir/new", &f).is_err());
            assert!(!outside.path().join("new").exists());
            // Nothing is made outside on the way: not even the directories.
            let e = r.write_file("dir/a/b/new", &f).unwrap_err();
            assert!(
                e.message
                    .contains("below a symlink out of the refs directory"),
                "{}",
                e.message
            );
            assert!(!outside.path().join("a").exists());
            let e = r
                .compile_str("?{base64:dir/c/d||random:str:8}", &t())
                .unwrap_err();
            assert!(
                e.message.contains("out of the refs directory"),
                "{}",
                e.message
            );
            assert!(!outside.path().join("c").exists());
            // A dangling link is no way out either.
            std::os::unix::fs::symlink(outside.path().join("gone"), d.path().join("dangling"))
                .unwrap();
            assert!(r.write_file("dangling/e/x", &f).is_err());
            assert!(!outside.path().join("gone").exists());
        }
    }

    #[test]
    fn a_reference_that_is_no_file_is_named_so() {
        let (d, r) = refs();
        std::fs::create_dir_all(d.path().join("dir/sub")).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("dir", d.path().join("to-dir")).unwrap();
        for p in ["dir", "dir/sub", "to-dir"] {
            let e = r.compile_str(&format!("?{{plain:{p}}}"), &t()).unwrap_err();
            assert!(
                e.message.ends_with(&format!(
                    "{p}: is not a regular file (a directory, a FIFO or a device): a reference is a file written by `strata refs --write`"
                )),
                "{p}: {}",
                e.message
            );
        }
        // A missing one is still missing, with its hint.
        let e = r.compile_str("?{plain:nothing}", &t()).unwrap_err();
        assert!(e.message.contains("does not exist"), "{}", e.message);
    }

    #[test]
    fn functions_create_once_and_hash_mismatch_is_an_error() {
        let (d, r) = refs();
        let a = r
            .compile_str("?{base64:t/pw||random:str:12}", &t())
            .unwrap();
        let b = r
            .compile_str("?{base64:t/pw||random:str:12}", &t())
            .unwrap();
        assert_eq!(a, b);
        let v = r.reveal_str(&a, &t()).unwrap();
        assert_eq!(v.len(), 12);
        std::fs::write(
            d.path().join("t/pw"),
            "data: b3RoZXI=\nencoding: original\ntype: base64\n",
        )
        .unwrap();
        // A later run (files are read once per run) sees the new data.
        let later = Refs::new(d.path());
        assert!(later.reveal_str(&a, &t()).is_err());
    }

    #[test]
    fn reveal_dependency_in_one_mapping() {
        let (_d, r) = refs();
        let v = pyyaml_load::load(
            "pub: ?{base64:k/pub||reveal:k/priv|publickey}\npriv: ?{base64:k/priv||ed25519}\n",
        )
        .unwrap();
        let c = r.compile_value(&v, &t()).unwrap();
        let pubk = r
            .reveal_str(c.get_path(&["pub"]).unwrap().as_str().unwrap(), &t())
            .unwrap();
        assert!(pubk.starts_with("-----BEGIN PUBLIC KEY-----"), "{pubk}");
    }

    /// Re-probe 18 (encrypted-pem-or-symmetric-gpg-ref-waits-for-a-passphrase):
    /// a passphrase-protected key is refused at once, never prompted for
    /// (OpenSSL's default callback read the terminal).
    #[test]
    fn an_encrypted_private_key_is_refused_without_a_prompt() {
        let (d, r) = refs();
        let key =
            openssl::pkey::PKey::from_rsa(openssl::rsa::Rsa::generate(1024).unwrap()).unwrap();
        let pem = key
            .private_key_to_pem_pkcs8_passphrase(openssl::symm::Cipher::aes_128_cbc(), b"pw")
            .unwrap();
        let b64 = base64::engine::general_purpose::STANDARD.encode(&pem);
        std::fs::create_dir_all(d.path().join("k")).unwrap();
        std::fs::write(
            d.path().join("k/enc"),
            format!("data: {b64}\nencoding: original\ntype: base64\n"),
        )
        .unwrap();
        let v = pyyaml_load::load("pub: ?{base64:k/pub||reveal:k/enc|rsapublic}\n").unwrap();
        let e = r.compile_value(&v, &t()).unwrap_err().to_string();
        assert!(e.contains("encrypted with a passphrase"), "{e}");
    }
}
