//! Target fingerprints: a SHA-256 of everything a target's catalog
//! depends on, so that a review compiles only the targets whose
//! fingerprint differs between base and head (and a cache can key a
//! target's catalog by it).
//!
//! A fingerprint covers strata's version, the flags that change output
//! (indent, multiline style, null-as-empty, the search paths relative to
//! the tree), the target's rendered parameters (after references; they
//! hold its compile entries and `vars`), those of `vars.target` when it
//! names another target, and the path and bytes of every file its compile
//! reads: input files and directories, jsonnet `import`/`importstr`/
//! `importbin` with a literal path followed transitively (resolved like the
//! compiler: the importing file's directory, then the search paths), Jinja2
//! `include`/`import`/`from`/`extends` with a literal name (the template's
//! directory, then the search paths), copy sources, ytt inputs, helm chart
//! directories. A template that reads the whole inventory
//! (`inventory_global`, `kap.inventory('other')`) also covers every
//! target's parameters.
//!
//! A target has no fingerprint (it is always compiled) when a dependency
//! cannot be known before compiling: an `external` or `kadet` entry,
//! `parameters.packages_install`, an input that does not exist yet, a
//! computed import or include (a tag whose name is more than one quoted
//! string), a jsonnet file calling the file-reading helpers (`file_read`,
//! `yaml_load`, `dir_files_*`, `jinja2_template`, ...) or reaching a native
//! by a computed name, or a Jinja2 template using `compile_path`.

use super::{Rendered, Workspace};
use crate::compile::catalog_reads::input_may_be_in_catalog;
pub use crate::compile::catalog_reads::{
    overlapping_outputs, reads_the_catalog, removes_outside_own_dir,
};
use crate::compile::model::InputType;
use regex::Regex;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A target's fingerprint, hex; `None` when it must always be compiled
/// (with the reason).
pub type Fingerprint = Result<String, String>;

/// What the compile of one input reads.
#[derive(Clone)]
enum Deps {
    /// Files (path relative to the tree, digest) and whether the whole
    /// inventory is read.
    Known {
        files: BTreeMap<String, [u8; 32]>,
        global: bool,
    },
    Unknown(String),
}

fn jsonnet_import_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| {
        Regex::new(r#"\bimport(?:str|bin)?\s*(?:'([^'\\\n]*)'|"([^"\\\n]*)")"#).unwrap()
    })
}

fn jsonnet_any_import_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| Regex::new(r"\bimport(?:str|bin)?\b").unwrap())
}

fn jsonnet_reads_files_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| {
        Regex::new(r#"\b(?:file_read|file_exists|yaml_load|yaml_load_stream|dir_files_list|dir_files_read|jinja2_template|jinja2_render_file)\b"#)
            .unwrap()
    })
}

/// `std.thisFile` in any form (`std['thisFile']`, `$std.thisFile`): the
/// word is enough.
fn jsonnet_this_file_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| Regex::new(r"\bthisFile\b").unwrap())
}

fn jsonnet_global_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| {
        Regex::new(
            r#"\binventory_global\b|\binventory\s*\(\s*[^)\s]|std\.native\s*\(\s*['"]inventory"#,
        )
        .unwrap()
    })
}

fn jinja_tag_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| {
        Regex::new(
            r#"\{%[-+]?\s*(include|import|from|extends)\s+(?:'([^'\n]*)'|"([^"\n]*)"|(\S+))([^%]*(?:%[^}][^%]*)*)%\}"#,
        )
        .unwrap()
    })
}

/// The start of an `include`/`import`/`from`/`extends` tag.
fn jinja_opener_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| Regex::new(r"\{%[-+]?\s*(?:include|import|from|extends)\b").unwrap())
}

/// What may follow a literal template name in its tag for the name to be
/// the whole of it: `ignore missing`, `with/without context`, `as NAME`,
/// `import NAMES`. Anything else (`~ var`, `if ... else ...`, `+ x`) makes
/// the name computed.
fn jinja_tag_rest_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| {
        Regex::new(
            r#"^\s*(?:ignore\s+missing\s*)?(?:(?:with|without)\s+context\s*)?(?:as\s+[A-Za-z_]\w*\s*(?:(?:with|without)\s+context\s*)?|import\s+[A-Za-z_][\w\s,]*?(?:(?:with|without)\s+context\s*)?)?[-+]?$"#,
        )
        .unwrap()
    })
}

/// Whether a Jinja2 template reads `input_params` other than one named
/// entry (`input_params.name`, `input_params['name']`): printed, passed to
/// a filter or iterated (`.items()`), it holds `compile_path`, the scratch
/// directory the catalog is built in (probe 19: `{{ input_params }}` made
/// a full review show the base and head scratch paths as a change that the
/// incremental review, and the cache, left out).
fn jinja_reads_input_params_whole(text: &str) -> bool {
    static R: OnceLock<Regex> = OnceLock::new();
    static ONE: OnceLock<Regex> = OnceLock::new();
    let re = R.get_or_init(|| Regex::new(r"\binput_params\b").unwrap());
    let one = ONE.get_or_init(|| {
        Regex::new(r#"^\s*(?:\.\s*[A-Za-z_]\w*|\[\s*(?:'[^'\\]*'|"[^"\\]*")\s*\])"#).unwrap()
    });
    re.find_iter(text).any(|m| {
        let after = &text[m.end()..];
        match one.find(after) {
            // A method call (`.items()`, `.get(k)`) reads more than one entry.
            Some(e) => after[e.end()..].trim_start().starts_with('('),
            None => true,
        }
    })
}

/// Every mention of the word `inventory` in jsonnet code that is not a
/// call of the target's own inventory (`inventory()`): an alias
/// (`local f = kap.inventory`), a bracket access (`kap['inventory']`) or a
/// call with a target name may read any target's parameters.
fn jsonnet_reads_other_inventory(text: &str) -> bool {
    static R: OnceLock<Regex> = OnceLock::new();
    static OWN: OnceLock<Regex> = OnceLock::new();
    let re = R.get_or_init(|| Regex::new(r"inventory").unwrap());
    let own = OWN.get_or_init(|| Regex::new(r"^\s*\(\s*\)").unwrap());
    re.find_iter(text).any(|m| {
        let before = text[..m.start()].chars().next_back();
        let after = &text[m.end()..];
        let word_end = !after.starts_with(|c: char| c.is_alphanumeric() || c == '_');
        // `parameters.kapitan.vars`-style names holding the word
        // (`inventory_path`) are not the helper.
        let word_start = !before.is_some_and(|c| c.is_alphanumeric() || c == '_');
        word_start && word_end && !own.is_match(after)
    })
}

/// Whether jsonnet code can reach a native by a name computed at run time:
/// `std.native(x)` with anything but a literal name, or Kapitan's helper
/// library used other than as `NAME.field` (`std.get(kap, 'file_' +
/// 'read')`, `kap[name]`, passing `kap` on), or imported without a name.
fn jsonnet_computed_native(text: &str) -> bool {
    static NATIVE: OnceLock<Regex> = OnceLock::new();
    static LITERAL: OnceLock<Regex> = OnceLock::new();
    static LIB: OnceLock<Regex> = OnceLock::new();
    static BOUND: OnceLock<Regex> = OnceLock::new();
    static STD: OnceLock<Regex> = OnceLock::new();
    // `std` other than as `std.name` (`std['nat' + 'ive']`, `local s =
    // std`, `std.get(std, n)`) reaches any of its fields by a computed
    // name, `native` and `thisFile` included, with neither word in the
    // text (probe 20: `std['nat' + 'ive']('fil' + 'e_read')` read a file
    // no fingerprint covered).
    let std_word = STD.get_or_init(|| Regex::new(r"\bstd\b").unwrap());
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    if std_word.find_iter(text).any(|m| {
        let after = text[m.end()..].trim_start();
        let Some(rest) = after.strip_prefix('.') else {
            return true;
        };
        !rest
            .trim_start()
            .starts_with(|c: char| c.is_alphabetic() || c == '_')
    }) {
        return true;
    }
    let native = NATIVE.get_or_init(|| Regex::new(r"\bnative\b").unwrap());
    let literal = LITERAL.get_or_init(|| {
        Regex::new(r#"^\s*\(\s*(?:'[A-Za-z0-9_]+'|"[A-Za-z0-9_]+")\s*\)"#).unwrap()
    });
    if native
        .find_iter(text)
        .any(|m| !literal.is_match(&text[m.end()..]))
    {
        return true;
    }
    let lib = LIB.get_or_init(|| {
        Regex::new(r#"\bimport\s*(?:'[^'\n]*kapitan\.libjsonnet'|"[^"\n]*kapitan\.libjsonnet")"#)
            .unwrap()
    });
    let bound = BOUND.get_or_init(|| {
        Regex::new(r#"\blocal\s+([A-Za-z_]\w*)\s*=\s*import\s*(?:'[^'\n]*kapitan\.libjsonnet'|"[^"\n]*kapitan\.libjsonnet")"#)
            .unwrap()
    });
    let names: Vec<String> = bound
        .captures_iter(text)
        .map(|c| c[1].to_string())
        .collect();
    if lib.find_iter(text).count() != names.len() {
        return true;
    }
    names.iter().any(|name| {
        text.match_indices(name.as_str()).any(|(at, _)| {
            let (before, after) = (&text[..at], &text[at + name.len()..]);
            let whole = !before.ends_with(is_word) && !after.starts_with(is_word);
            let binding = before.trim_end().ends_with("local");
            whole && !binding && !after.trim_start().starts_with('.')
        })
    })
}

/// How the compile reads a file the jsonnet scan reaches.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Read {
    /// Evaluated: its imports and natives count.
    Code,
    /// `importstr`/`importbin`: its bytes only.
    Data,
    /// A tree copy of `lib/kapitan.libjsonnet` the compiler leaves for its
    /// bundled library: hashed and its imports followed (as before), not
    /// scanned, since it is never evaluated.
    Bundled,
}

/// What of a `kapitan.libjsonnet` is to be scanned: nothing when it is made
/// of forwarding definitions alone (and comments), else all of it.
/// Forwarding definitions are a field named after a file-reading helper
/// that calls a file-reading native (`file_read(name)::
/// std.native('file_read')(name)`), `inventory` with the target's own
/// default passed on (`inventory(target=std.extVar('target'), ...)::
/// std.native('inventory')(target, ...)`), `inventory_global`, and fields
/// and `local` functions forwarding to natives that read nothing
/// (`sha256(obj):: std.native('sha256_string')(std.toString(obj))`), their
/// parameters' defaults and their arguments names and literals only. A
/// component calling them names them, and its own scan sees that.
///
/// Anything else in the file (`self[f]`, `std.objectValues(self)`, an
/// import, another field, code in an argument) and it is scanned whole.
/// Probe 19 scanned what was left around the forwarding definitions, which
/// caught `banner(n):: std.native('file_read')(n)`; probe 25 reached a
/// blanked `file_read` by a computed name (`[self[f]('d.txt') for f in
/// std.objectFieldsAll(self) if f == 'file' + '_read']`), which no word of
/// what was left showed.
fn without_forwarding_helpers(text: &str) -> String {
    static DEF: OnceLock<Regex> = OnceLock::new();
    static LOCAL: OnceLock<Regex> = OnceLock::new();
    static OWN: OnceLock<Regex> = OnceLock::new();
    static OWN_ARG: OnceLock<Regex> = OnceLock::new();
    static PARAMS: OnceLock<Regex> = OnceLock::new();
    static ARGS: OnceLock<Regex> = OnceLock::new();
    let def = DEF.get_or_init(|| {
        Regex::new(
            r#"\b([A-Za-z_]\w*)\s*\(((?:[^()]|\([^()]*\))*)\)\s*::\s*std\.native\s*\(\s*(?:'([A-Za-z0-9_]+)'|"([A-Za-z0-9_]+)")\s*\)\s*\(((?:[^()]|\([^()]*\))*)\)"#,
        )
        .unwrap()
    });
    let local = LOCAL.get_or_init(|| {
        Regex::new(
            r#"\blocal\s+([A-Za-z_]\w*)\s*\(([^()]*)\)\s*=\s*std\.native\s*\(\s*(?:'([A-Za-z0-9_]+)'|"([A-Za-z0-9_]+)")\s*\)\s*\(((?:[^()]|\([^()]*\))*)\)\s*;"#,
        )
        .unwrap()
    });
    let own = OWN.get_or_init(|| {
        Regex::new(r#"^\s*target\s*=\s*std\.extVar\s*\(\s*(?:'target'|"target")\s*\)\s*(?:,|$)"#)
            .unwrap()
    });
    let own_arg = OWN_ARG.get_or_init(|| Regex::new(r"^\s*target\s*(?:,|$)").unwrap());
    // Parameters: names, each with a literal default or the target's own.
    let params = PARAMS.get_or_init(|| {
        let p = r#"[A-Za-z_]\w*(?:\s*=\s*(?:null|true|false|-?[0-9]+(?:\.[0-9]+)?|'[^'\\\n]*'|"[^"\\\n]*"|std\.extVar\s*\(\s*(?:'target'|"target")\s*\)))?"#;
        Regex::new(&format!(r"^\s*(?:{p}(?:\s*,\s*{p})*\s*,?)?\s*$")).unwrap()
    });
    // Arguments: names (the parameters), passed as they are or as text.
    let args = ARGS.get_or_init(|| {
        let a = r#"(?:[A-Za-z_]\w*|(?:std\.toString|str)\s*\(\s*[A-Za-z_]\w*\s*\)|null|'[^'\\\n]*'|"[^"\\\n]*")"#;
        Regex::new(&format!(r"^\s*(?:{a}(?:\s*,\s*{a})*\s*,?)?\s*$")).unwrap()
    });
    let reads = |w: &str| jsonnet_reads_files_re().is_match(w);
    let mut out = text.to_string();
    let mut blank = |m: regex::Match| {
        out.replace_range(m.range(), &" ".repeat(m.len()));
    };
    for c in def.captures_iter(text) {
        let field = &c[1];
        let native = c.get(3).or_else(|| c.get(4)).map_or("", |m| m.as_str());
        let forwards = if native == "inventory" {
            field == "inventory_global"
                || (field == "inventory" && own.is_match(&c[2]) && own_arg.is_match(&c[5]))
        } else if reads(native) {
            reads(field)
        } else {
            true
        };
        if forwards && params.is_match(&c[2]) && args.is_match(&c[5]) {
            blank(c.get(0).expect("whole match"));
        }
    }
    for c in local.captures_iter(text) {
        let native = c.get(3).or_else(|| c.get(4)).map_or("", |m| m.as_str());
        if !reads(native) && native != "inventory" && params.is_match(&c[2]) && args.is_match(&c[5])
        {
            blank(c.get(0).expect("whole match"));
        }
    }
    // What is left of a trusted library is comments: nothing to scan (a
    // comment's words, `native` say, read as code by the word scans).
    if inert(&out) {
        String::new()
    } else {
        text.to_string()
    }
}

/// Whether jsonnet text is nothing but braces, commas, blanks and
/// comments: an object of the definitions blanked out of it. A comment
/// marker inside a string is no comment, but a string is not inert either,
/// and what stands before the marker is checked all the same.
fn inert(text: &str) -> bool {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => match text[i + 2..].find("*/") {
                Some(end) => i += 2 + end + 2,
                None => return false,
            },
            b'{' | b'}' | b',' => i += 1,
            c if c.is_ascii_whitespace() => i += 1,
            _ => return false,
        }
    }
    true
}

/// Feeds a value to a hash, each node tagged with its type and each
/// string and collection with its length, so that two values hash alike
/// only when they are equal. The JSON text this replaced writes every
/// non-finite float as `null`: a parameter changing from `.inf` to `-.inf`,
/// `.nan` or null kept its target's fingerprint, and the review called the
/// target unchanged (probe 19). `buf` collects the bytes between updates.
fn hash_value(v: &crate::value::Value, buf: &mut Vec<u8>, h: &mut Sha256) {
    use crate::value::Value;
    if buf.len() >= 64 * 1024 {
        h.update(&buf[..]);
        buf.clear();
    }
    fn text(buf: &mut Vec<u8>, tag: u8, s: &str) {
        buf.push(tag);
        buf.extend_from_slice(&(s.len() as u64).to_le_bytes());
        buf.extend_from_slice(s.as_bytes());
    }
    match v {
        Value::Null => buf.push(b'n'),
        Value::Bool(b) => buf.extend_from_slice(if *b { b"t" } else { b"f" }),
        Value::Int(i) => {
            buf.push(b'i');
            buf.extend_from_slice(&i.to_le_bytes());
        }
        Value::Float(f) => {
            buf.push(b'd');
            buf.extend_from_slice(&f.to_bits().to_le_bytes());
        }
        Value::String(s) => text(buf, b's', s),
        Value::List(l) => {
            buf.push(b'l');
            buf.extend_from_slice(&(l.len() as u64).to_le_bytes());
            for x in l {
                hash_value(x, buf, h);
            }
        }
        Value::Map(m) => {
            buf.push(b'm');
            buf.extend_from_slice(&(m.len() as u64).to_le_bytes());
            for (k, x) in m {
                text(buf, b'k', k);
                hash_value(x, buf, h);
            }
        }
    }
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// The SHA-256 of a key and its value, by [`hash_value`]: the review's
/// secret mask keys what it learnt of a parameter by it.
pub(crate) fn value_digest(key: &str, v: &crate::value::Value) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update((key.len() as u64).to_le_bytes());
    h.update(key.as_bytes());
    hash_whole_value(v, &mut h);
    h.finalize().into()
}

/// [`hash_value`] of `v`, its buffer flushed.
fn hash_whole_value(v: &crate::value::Value, h: &mut Sha256) {
    let mut buf = Vec::with_capacity(64 * 1024);
    hash_value(v, &mut buf, h);
    h.update(&buf);
}

/// What a fingerprint needs of one rendered target, small enough to keep:
/// the compile cache stores them so that a compile whose inventory files
/// did not change can fingerprint its targets without rendering them.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TargetFacts {
    pub dir: String,
    pub target_var: String,
    pub installs_packages: bool,
    /// SHA-256 of the target's model dump (as JSON), hex.
    pub dump: String,
    pub entries: Vec<EntryFacts>,
}

/// One compile entry as fingerprints see it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EntryFacts {
    pub input_type: String,
    pub input_paths: Vec<String>,
    /// [`crate::compile::model::Entry::describe`], for reasons.
    pub describe: String,
    /// Files the entry names besides its inputs, read by path from the
    /// tree's root: helm's `helm_values_files`, and `helm_path` when it is
    /// a path rather than a program looked up in `PATH`.
    pub names: Vec<String>,
    /// Why the entry reads files its settings do not name, when it does:
    /// helm's `dependency_update` builds the chart's dependencies from
    /// Chart.yaml, whose `file://../other` charts lie outside the input.
    #[serde(default)]
    pub unknown: Option<String>,
}

impl EntryFacts {
    pub fn of(e: &crate::compile::model::Entry) -> Self {
        let mut names = Vec::new();
        let mut unknown = None;
        if e.input_type == InputType::Helm {
            if let Some(files) = e.extra.get("helm_values_files").and_then(|v| v.as_list()) {
                names.extend(files.iter().filter_map(|f| f.as_str()).map(str::to_string));
            }
            // A helm binary outside the tree is assumed the same on both
            // sides (as a `helm` on PATH); one in the tree is the PR's.
            if let Some(bin) = e.extra.get("helm_path").and_then(|v| v.as_str()) {
                if bin.contains('/') && !Path::new(bin).is_absolute() {
                    names.push(format!("{HELM_PATH_MARK}{bin}"));
                } else {
                    // A program on PATH: `$KAPITAN_HELM_PATH` does not apply.
                    names.push(HELM_PATH_MARK.to_string());
                }
            }
            // helm flags that name a file helm reads or runs.
            if let Some(params) = e.extra.get("helm_params").and_then(|v| v.as_map()) {
                for (k, v) in params {
                    let flag = k.replace('_', "-");
                    let file_flag = matches!(
                        flag.as_str(),
                        "post-renderer"
                            | "ca-file"
                            | "cert-file"
                            | "key-file"
                            | "keyring"
                            | "repository-config"
                            | "registry-config"
                            | "kubeconfig"
                            | "kube-ca-file"
                    );
                    if let (true, Some(v)) = (file_flag, v.as_str()) {
                        names.push(v.to_string());
                    }
                    // Probe 20: flags naming a directory helm reads
                    // (`values_directory`: every values file in it; the
                    // caches of charts) or arguments of the post-renderer
                    // (which may name files it reads).
                    let dir_flag = matches!(
                        flag.as_str(),
                        "values-directory"
                            | "repository-cache"
                            | "content-cache"
                            | "post-renderer-args"
                    );
                    if dir_flag
                        && !matches!(
                            v,
                            crate::value::Value::Null | crate::value::Value::Bool(false)
                        )
                    {
                        unknown.get_or_insert_with(|| {
                            format!("helm's --{flag} reads files strata does not follow")
                        });
                    }
                    // Probe 25: the post-renderer is a program helm pipes
                    // the manifests through; what it reads (a kustomization
                    // and its patches, say) is no file helm names, so hashing
                    // the program alone hid a change to those.
                    if flag == "post-renderer"
                        && !matches!(
                            v,
                            crate::value::Value::Null | crate::value::Value::Bool(false)
                        )
                        && v.as_str() != Some("")
                    {
                        unknown = Some(
                            "helm's post_renderer runs a program, which may read any file"
                                .to_string(),
                        );
                    }
                    // Probe 19: the dependencies' charts (`file://../lib`)
                    // are read from wherever Chart.yaml points.
                    if flag == "dependency-update" && v.is_truthy() {
                        unknown = Some(
                            "helm's dependency_update reads the charts Chart.yaml names (file://...), outside the input"
                                .to_string(),
                        );
                    }
                }
            }
        }
        EntryFacts {
            input_type: e.input_type.as_str().to_string(),
            input_paths: e.input_paths.clone(),
            describe: e.describe(),
            names,
            unknown,
        }
    }
}

/// Whether a name that is not found may be a file of a catalog: a path
/// through a `compiled` directory (Kapitan's catalog) or a compile's
/// scratch directory.
fn names_catalog(name: &str) -> bool {
    name.split(['/', '\\'])
        .any(|c| c == "compiled" || c.starts_with(".strata-compile"))
}

/// Marks the [`EntryFacts::names`] item that is the entry's `helm_path`
/// (empty after it when that is a program looked up in `PATH`).
const HELM_PATH_MARK: &str = "helm_path:";

/// [`TargetFacts`] of every target of an inventory.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct InventoryFacts {
    pub targets: BTreeMap<String, TargetFacts>,
}

enum Source<'a> {
    Rendered(&'a Rendered),
    Facts(&'a InventoryFacts),
}

/// Computes fingerprints for one tree; reuses what several targets share.
pub struct Fingerprinter<'a> {
    ws: &'a Workspace,
    source: Source<'a>,
    /// Facts of the targets looked at so far.
    facts: HashMap<String, Option<TargetFacts>>,
    /// The tree's root, absolute (paths in fingerprints are relative to it).
    root: PathBuf,
    cache: HashMap<(InputType, PathBuf), Deps>,
    global: Option<[u8; 32]>,
    /// The secret references' directory: a rotated secret changes the
    /// hash its tags compile to.
    refs: Option<Result<[u8; 32], String>>,
}

impl<'a> Fingerprinter<'a> {
    pub fn new(ws: &'a Workspace, rendered: &'a Rendered) -> Self {
        Self::with_source(ws, Source::Rendered(rendered))
    }

    /// Fingerprints from kept facts (no rendered inventory): the same
    /// fingerprints as [`Fingerprinter::new`] gives for the inventory the
    /// facts were taken from.
    pub fn from_facts(ws: &'a Workspace, facts: &'a InventoryFacts) -> Self {
        Self::with_source(ws, Source::Facts(facts))
    }

    fn with_source(ws: &'a Workspace, source: Source<'a>) -> Self {
        Fingerprinter {
            ws,
            source,
            facts: HashMap::new(),
            root: super::anchor(&ws.root, Path::new(".")),
            cache: HashMap::new(),
            global: None,
            refs: None,
        }
    }

    /// The digest of the secret references' directory as it is now (not
    /// remembered): a compile may write references (`?{base64:x||randomstr}`
    /// creates `x`), so a cache compares it before and after.
    pub fn refs_now(ws: &Workspace) -> Result<[u8; 32], String> {
        let facts = InventoryFacts::default();
        Fingerprinter::from_facts(ws, &facts).refs_digest()
    }

    fn refs_digest(&mut self) -> Result<[u8; 32], String> {
        if let Some(r) = &self.refs {
            return r.clone();
        }
        let dir = self.ws.refs.path.clone();
        let r = if std::fs::symlink_metadata(&dir).is_err() {
            Ok(digest(b"no refs"))
        } else {
            match self.tree_deps(&dir) {
                Deps::Known { files, .. } => {
                    let mut h = Sha256::new();
                    for (path, d) in &files {
                        h.update(path.as_bytes());
                        h.update([0]);
                        h.update(d);
                    }
                    Ok(h.finalize().into())
                }
                Deps::Unknown(why) => Err(format!("secret references: {why}")),
            }
        };
        self.refs = Some(r.clone());
        r
    }

    /// Whether a confined compile (a review's) may read `p`: the
    /// fingerprint reads nothing the compile would refuse to read (the
    /// target is then compiled, and its compile fails naming the file).
    fn confined(&self, p: &Path) -> Result<(), String> {
        match &self.ws.compile.confine {
            Some(c) => c.check(p),
            None => Ok(()),
        }
    }

    /// The bytes of a file the compile reads, within the confinement.
    fn read(&self, p: &Path) -> Result<Vec<u8>, String> {
        self.confined(p)?;
        // A FIFO would block the read for ever (probe 25: `compile
        // --cache` hung where the compile refuses it).
        match std::fs::metadata(p) {
            Ok(m) if !m.is_file() => return Err("not a regular file".into()),
            _ => {}
        }
        std::fs::read(p).map_err(|e| e.to_string())
    }

    fn rel(&self, p: &Path) -> String {
        match p.strip_prefix(&self.root) {
            Ok(r) => format!("./{}", r.to_string_lossy()),
            Err(_) => p.to_string_lossy().into_owned(),
        }
    }

    fn global_digest(&mut self) -> [u8; 32] {
        if let Some(g) = self.global {
            return g;
        }
        let mut h = Sha256::new();
        for name in self.names() {
            let Some(f) = self.facts_of(&name) else {
                continue;
            };
            h.update(name.as_bytes());
            h.update([0]);
            h.update(f.dump.as_bytes());
            h.update([0]);
        }
        let g: [u8; 32] = h.finalize().into();
        self.global = Some(g);
        g
    }

    /// The fingerprint of every target in `targets`.
    pub fn all(&mut self, targets: &[String]) -> BTreeMap<String, Fingerprint> {
        targets
            .iter()
            .map(|t| (t.clone(), self.target(t)))
            .collect()
    }

    /// Every target name, sorted.
    fn names(&self) -> Vec<String> {
        match &self.source {
            Source::Rendered(r) => r.prepared.plans.keys().cloned().collect(),
            Source::Facts(f) => f.targets.keys().cloned().collect(),
        }
    }

    /// What the fingerprint of `name` needs (`None`: not a target).
    fn facts_of(&mut self, name: &str) -> Option<TargetFacts> {
        if let Some(f) = self.facts.get(name) {
            return f.clone();
        }
        let f = match &self.source {
            Source::Facts(f) => f.targets.get(name).cloned(),
            Source::Rendered(r) => {
                let prepared = &r.prepared;
                prepared.plans.get(name).map(|plan| {
                    let dump = prepared.dumps.get(name);
                    let mut h = Sha256::new();
                    if let Some(d) = dump {
                        hash_whole_value(d, &mut h);
                    }
                    TargetFacts {
                        dir: plan.dir.clone(),
                        target_var: plan.target_var.clone(),
                        installs_packages: dump
                            .and_then(|d| d.get_path(&["parameters", "packages_install"]))
                            .is_some_and(|v| !v.is_null()),
                        dump: hex(&h.finalize()),
                        entries: plan.entries.iter().map(EntryFacts::of).collect(),
                    }
                })
            }
        };
        self.facts.insert(name.to_string(), f.clone());
        f
    }

    /// The facts of every target, to keep (see [`TargetFacts`]).
    pub fn inventory_facts(&mut self) -> InventoryFacts {
        let mut targets = BTreeMap::new();
        for name in self.names() {
            if let Some(f) = self.facts_of(&name) {
                targets.insert(name, f);
            }
        }
        InventoryFacts { targets }
    }

    /// One target's fingerprint.
    pub fn target(&mut self, name: &str) -> Fingerprint {
        let Some(plan) = self.facts_of(name) else {
            return Err(format!("`{name}` is not a target"));
        };
        if plan.installs_packages {
            return Err("it installs packages (parameters.packages_install)".into());
        }
        let (inputs, global) = self.facts_inputs(name, &plan.dir, &plan.entries)?;
        let mut h = Sha256::new();
        h.update(inputs);
        let mut views = vec![name.to_string()];
        if plan.target_var != name {
            views.push(plan.target_var.clone());
        }
        for v in &views {
            if let Some(d) = self.facts_of(v) {
                h.update(v.as_bytes());
                h.update(d.dump.as_bytes());
                h.update([0]);
            }
        }
        if global {
            h.update(b"global");
            h.update(self.global_digest());
        }
        Ok(hex(&h.finalize()))
    }

    /// Everything in target `name`'s fingerprint but its parameters and
    /// the global inventory: the version, the flags, the secret
    /// references and the files its compile entries read *in this tree*,
    /// with the target's plan taken from `plan` (the other revision's,
    /// when a review knows both render the same). Also whether the target
    /// reads the whole inventory. `installs`: the target sets
    /// `parameters.packages_install` to something else than null.
    pub fn plan_inputs(
        &mut self,
        name: &str,
        plan: &crate::compile::model::TargetPlan,
        installs: bool,
    ) -> Result<([u8; 32], bool), String> {
        if installs {
            return Err("it installs packages (parameters.packages_install)".into());
        }
        let entries: Vec<EntryFacts> = plan.entries.iter().map(EntryFacts::of).collect();
        self.facts_inputs(name, &plan.dir, &entries)
    }

    fn facts_inputs(
        &mut self,
        name: &str,
        dir: &str,
        entries: &[EntryFacts],
    ) -> Result<([u8; 32], bool), String> {
        let mut h = Sha256::new();
        let opts = &self.ws.compile;
        h.update(format!(
            "strata {}\nindent {}\nmultiline {:?}\nnull_as_empty {}\n",
            env!("CARGO_PKG_VERSION"),
            opts.indent,
            opts.multiline,
            opts.null_as_empty
        ));
        let refs = &self.ws.refs;
        h.update(format!(
            "refs {} embed {} reveal {}\npython {:?} filters {:?}\n",
            self.rel(&refs.path),
            refs.embed,
            refs.reveal,
            opts.python.python,
            opts.python.jinja2_filters.as_ref().map(|p| self.rel(p)),
        ));
        h.update(self.refs_digest()?);
        if let Some(f) = &opts.python.jinja2_filters {
            match self.read(f) {
                Ok(b) => h.update(digest(&b)),
                Err(e) => return Err(format!("cannot read {}: {e}", f.display())),
            }
        }
        let search: Vec<String> = opts.search_paths.iter().map(|p| self.rel(p)).collect();
        h.update(format!(
            "search {search:?}\ninventory {}\n",
            self.rel(&opts.inventory_path)
        ));
        h.update(format!("target {name}\ndir {}\n", dir));
        let mut files: BTreeMap<String, [u8; 32]> = BTreeMap::new();
        let mut global = false;
        for entry in entries {
            let Some(input_type) = InputType::parse(&entry.input_type) else {
                return Err(format!("{}: unknown input type", entry.describe));
            };
            if let Some(why) = &entry.unknown {
                return Err(format!("{}: {why}", entry.describe));
            }
            match input_type {
                InputType::External => {
                    return Err(format!(
                        "{} runs an external program, whose inputs strata cannot know",
                        entry.describe
                    ))
                }
                InputType::Kadet => return Err(format!("{} runs Python (kadet)", entry.describe)),
                // A kustomization names other directories (`../base`); a
                // CUE package imports others.
                InputType::Kustomize | InputType::Cuelang => {
                    return Err(format!(
                        "{} reads files its input names, which strata does not follow",
                        entry.describe
                    ))
                }
                InputType::Jinja2 => {
                    if let Some(f) = &opts.python.jinja2_filters {
                        return Err(format!(
                            "{}: Python Jinja2 filters ({}) may read any file",
                            entry.describe,
                            self.rel(f)
                        ));
                    }
                }
                // What a `remove` entry names is in the catalog being built.
                InputType::Remove => continue,
                // helm without `helm_path` runs `$KAPITAN_HELM_PATH`: a path
                // relative to the tree is the pull request's file.
                InputType::Helm if !entry.names.iter().any(|n| n.starts_with(HELM_PATH_MARK)) => {
                    if let Some(bin) = std::env::var_os("KAPITAN_HELM_PATH") {
                        let bin = bin.to_string_lossy().into_owned();
                        h.update(format!("KAPITAN_HELM_PATH {bin}\n"));
                        if bin.contains('/') && !Path::new(&bin).is_absolute() {
                            match self.read(&self.root.join(&bin)) {
                                Ok(b) if is_script(&b) => {
                                    return Err(format!(
                                        "{}: KAPITAN_HELM_PATH `{bin}` is a script, which may read any file",
                                        entry.describe
                                    ))
                                }
                                Ok(b) => {
                                    files.insert(format!("helm {bin}"), digest(&b));
                                }
                                Err(e) => {
                                    return Err(format!(
                                        "{}: cannot read KAPITAN_HELM_PATH `{bin}`: {e}",
                                        entry.describe
                                    ))
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
            for name in &entry.names {
                let is_helm_path = name.starts_with(HELM_PATH_MARK);
                let name = name.strip_prefix(HELM_PATH_MARK).unwrap_or(name);
                if name.is_empty() {
                    continue;
                }
                // An absolute name (a values file outside the tree) is
                // hashed by its bytes all the same.
                let path = self.root.join(name);
                match self.read(&path) {
                    Ok(b) if is_helm_path && is_script(&b) => {
                        return Err(format!(
                            "{}: helm_path `{name}` is a script, which may read any file",
                            entry.describe
                        ))
                    }
                    Ok(b) => {
                        files.insert(format!("named {name}"), digest(&b));
                    }
                    Err(e) => return Err(format!("{}: cannot read `{name}`: {e}", entry.describe)),
                }
            }
            for pattern in &entry.input_paths {
                if input_may_be_in_catalog(pattern) {
                    return Err(format!(
                        "{}: input `{pattern}` may name the catalog being built (the compiler looks for inputs there too, after the search paths)",
                        entry.describe
                    ));
                }
                let found =
                    crate::compile::resolve_inputs_within(pattern, &opts.search_paths, &|p| {
                        self.confined(p)
                    });
                if found.is_empty() {
                    return Err(format!(
                        "{}: input `{pattern}` is not in the search paths (it may come from the catalog being built)",
                        entry.describe
                    ));
                }
                h.update(format!("input {pattern} -> {}\n", found.len()));
                for input in found {
                    match self.deps(input_type, &input) {
                        Deps::Known {
                            files: f,
                            global: g,
                        } => {
                            merge_files(&mut files, f);
                            global |= g;
                        }
                        Deps::Unknown(why) => return Err(format!("{}: {why}", entry.describe)),
                    }
                }
            }
        }
        for (path, d) in &files {
            h.update(path.as_bytes());
            h.update([0]);
            h.update(d);
        }
        Ok((h.finalize().into(), global))
    }

    fn deps(&mut self, kind: InputType, input: &Path) -> Deps {
        let key = (kind, input.to_path_buf());
        if let Some(d) = self.cache.get(&key) {
            return d.clone();
        }
        let d = match kind {
            InputType::Jsonnet => self.jsonnet_deps(input),
            InputType::Jinja2 => self.jinja_deps(input),
            _ => self.tree_deps(input),
        };
        self.cache.insert(key, d.clone());
        d
    }

    /// Every file below `input` (or `input` itself), as the copy, ytt and
    /// helm inputs read them.
    fn tree_deps(&self, input: &Path) -> Deps {
        let mut files = BTreeMap::new();
        if let Err(e) = self.confined(input) {
            return Deps::Unknown(e);
        }
        let mut stack = vec![input.to_path_buf()];
        while let Some(p) = stack.pop() {
            let meta = match std::fs::symlink_metadata(&p) {
                Ok(m) => m,
                Err(e) => return Deps::Unknown(format!("cannot read {}: {e}", p.display())),
            };
            // A link may point anywhere (or at its own directory). What is
            // no link below a directory inside the confinement is inside
            // too: only links are resolved (resolving each entry from the
            // root cost each level every level above it).
            if meta.file_type().is_symlink() {
                if let Err(e) = self.confined(&p) {
                    return Deps::Unknown(e);
                }
                return Deps::Unknown(format!("{} is a symlink", self.rel(&p)));
            }
            if meta.is_dir() {
                let rd = match std::fs::read_dir(&p) {
                    Ok(rd) => rd,
                    Err(e) => return Deps::Unknown(format!("cannot read {}: {e}", p.display())),
                };
                // A directory's entries, empty ones included, are part of
                // what a copy writes.
                let mut names: Vec<PathBuf> = rd.filter_map(Result::ok).map(|e| e.path()).collect();
                names.sort();
                files.insert(format!("{}/", self.rel(&p)), digest(b"dir"));
                stack.extend(names);
            } else if !meta.is_file() {
                // A FIFO would block the read for ever; the compile
                // refuses it (and a device) anyway.
                return Deps::Unknown(format!("{} is not a regular file", self.rel(&p)));
            } else {
                match std::fs::read(&p) {
                    Ok(b) => {
                        files.insert(self.rel(&p), file_digest(&b, Some(&meta)));
                    }
                    Err(e) => return Deps::Unknown(format!("cannot read {}: {e}", p.display())),
                }
            }
        }
        Deps::Known {
            files,
            global: false,
        }
    }

    fn jsonnet_deps(&self, input: &Path) -> Deps {
        let search = &self.ws.compile.search_paths;
        let mut files = BTreeMap::new();
        let mut global = false;
        let mut seen = BTreeSet::new();
        // The compiler reads the file at the lexically normalised path
        // (`BundledResolver`), whatever a symlink on the way says `..` is.
        let mut todo = vec![(crate::compile::jsonnet::normpath(input), Read::Code)];
        while let Some((path, read)) = todo.pop() {
            if !seen.insert((path.clone(), read)) {
                continue;
            }
            let bytes = match self.read(&path) {
                Ok(b) => b,
                Err(e) => return Deps::Unknown(format!("cannot read {}: {e}", path.display())),
            };
            files.insert(self.rel(&path), digest(&bytes));
            // importstr/importbin targets are data, not code.
            if read == Read::Data {
                continue;
            }
            let text = String::from_utf8_lossy(&bytes);
            // Kapitan's own helper library forwards to the natives; what
            // counts is whether the component calls them, so its
            // forwarding definitions are not scanned. Anything else such a
            // file does is (probe 19: a helper under another name read a
            // file no fingerprint covered). A tree copy the compiler leaves
            // for its bundled library is not read at all: only its bytes
            // and imports count. Its imports are followed all the same.
            let helpers = path.file_name().is_some_and(|n| n == "kapitan.libjsonnet");
            let scanned = match read {
                Read::Bundled => String::new(),
                _ if helpers => without_forwarding_helpers(&text),
                _ => text.to_string(),
            };
            if jsonnet_reads_files_re().is_match(&scanned) {
                return Deps::Unknown(format!(
                    "{} reads files named at run time (file_read, yaml_load, ...)",
                    self.rel(&path)
                ));
            }
            // `std.thisFile` is the file's absolute path: in a review, a
            // scratch directory that differs per side and per run (probe
            // 20: a full review showed it as a change of every target
            // printing it; the incremental review and the cache did not).
            if jsonnet_this_file_re().is_match(&scanned) {
                return Deps::Unknown(format!(
                    "{} uses std.thisFile (the file's path on this machine)",
                    self.rel(&path)
                ));
            }
            if jsonnet_computed_native(&scanned) {
                return Deps::Unknown(format!(
                    "{} calls a native by a computed name (or uses Kapitan's helper library other than as `kap.name`)",
                    self.rel(&path)
                ));
            }
            global |=
                jsonnet_global_re().is_match(&scanned) || jsonnet_reads_other_inventory(&scanned);
            let literal: Vec<_> = jsonnet_import_re().captures_iter(&text).collect();
            if literal.len() != jsonnet_any_import_re().find_iter(&text).count() {
                return Deps::Unknown(format!(
                    "{} imports a computed path (or mentions `import` outside an import)",
                    self.rel(&path)
                ));
            }
            let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
            for c in literal {
                let rel = c.get(1).or_else(|| c.get(2)).map_or("", |m| m.as_str());
                let is_code = !c[0].starts_with("importstr") && !c[0].starts_with("importbin");
                // As `BundledResolver`: the importing file's directory
                // first, lexically normalised before it is looked at (probe
                // 19: `lk/../x` with `lk` a symlink named another file to
                // the file system, and the fingerprint hashed a file of the
                // search paths the compiler never read); then the bundled
                // library for its exact path; then the search paths.
                let direct = crate::compile::jsonnet::normpath(&dir.join(rel));
                let bundled = Path::new(rel) == Path::new(crate::compile::jsonnet::LIB_IMPORT)
                    && !direct.is_file();
                let mut candidates = vec![direct];
                candidates.extend(search.iter().map(|s| s.join(rel)));
                match candidates.into_iter().find(|p| p.is_file()) {
                    Some(p) => {
                        let p = crate::compile::jsonnet::normpath(&p);
                        files.insert(
                            format!("import {rel} in {}", self.rel(&path)),
                            digest(self.rel(&p).as_bytes()),
                        );
                        let read = match (is_code, bundled) {
                            (false, _) => Read::Data,
                            (true, true) => Read::Bundled,
                            (true, false) => Read::Code,
                        };
                        todo.push((p, read));
                    }
                    // strata's bundled kapitan.libjsonnet (covered by the
                    // version), found by that exact import path only.
                    None if Path::new(rel) == Path::new(crate::compile::jsonnet::LIB_IMPORT) => {}
                    None => {
                        return Deps::Unknown(format!(
                            "{} imports `{rel}`, which is not found",
                            self.rel(&path)
                        ))
                    }
                }
            }
        }
        Deps::Known { files, global }
    }

    fn jinja_deps(&self, input: &Path) -> Deps {
        let search = &self.ws.compile.search_paths;
        let mut files = BTreeMap::new();
        let mut global = false;
        let mut seen = BTreeSet::new();
        // (template, the directory of the template being rendered): the
        // loader looks there first, for includes at any depth.
        let mut todo: Vec<(PathBuf, PathBuf)> = Vec::new();
        match self.tree_deps(input) {
            Deps::Known { files: f, .. } => {
                for k in f.keys() {
                    if !k.ends_with('/') {
                        let p = self.root.join(k.trim_start_matches("./"));
                        let top = p.parent().unwrap_or(Path::new(".")).to_path_buf();
                        todo.push((p, top));
                    }
                }
                files.extend(f);
            }
            u => return u,
        }
        while let Some((path, top)) = todo.pop() {
            if !seen.insert((path.clone(), top.clone())) {
                continue;
            }
            let bytes = match self.read(&path) {
                Ok(b) => b,
                Err(e) => return Deps::Unknown(format!("cannot read {}: {e}", path.display())),
            };
            // The mode too: an output keeps its template's mode (re-probe
            // 7: a template made executable was served from the cache).
            let meta = std::fs::metadata(&path).ok();
            files.insert(self.rel(&path), file_digest(&bytes, meta.as_ref()));
            let text = String::from_utf8_lossy(&bytes);
            if text.contains("compile_path") || jinja_reads_input_params_whole(&text) {
                return Deps::Unknown(format!(
                    "{} uses compile_path (a scratch directory), or input_params whole, which holds it",
                    self.rel(&path)
                ));
            }
            if text.contains("fileglob") {
                return Deps::Unknown(format!(
                    "{} lists files at run time (fileglob)",
                    self.rel(&path)
                ));
            }
            global |= text.contains("inventory_global");
            // A tag opener the tag pattern does not read whole (no closing
            // `%}` on the line, say) is not understood: computed.
            let openers = jinja_opener_re().find_iter(&text).count();
            if openers != jinja_tag_re().find_iter(&text).count() {
                return Deps::Unknown(format!(
                    "{} has an include, import or extends tag that is not read whole",
                    self.rel(&path)
                ));
            }
            for c in jinja_tag_re().captures_iter(&text) {
                let literal = c.get(2).or_else(|| c.get(3)).map(|m| m.as_str());
                let rest = c.get(5).map_or("", |m| m.as_str());
                let Some(name) = literal.filter(|_| jinja_tag_rest_re().is_match(rest)) else {
                    return Deps::Unknown(format!(
                        "{} has a computed {} (`{}`)",
                        self.rel(&path),
                        &c[1],
                        c[0].trim()
                    ));
                };
                // An escape (`'data\/x.txt'`) names another file than
                // the text shows: computed.
                if name.contains('\\') {
                    return Deps::Unknown(format!(
                        "{} has a template name with an escape (`{}`)",
                        self.rel(&path),
                        c[0].trim()
                    ));
                }
                let mut dirs = vec![top.clone()];
                dirs.extend(search.iter().cloned());
                let found = if name.split('/').any(|p| p == "..") {
                    None
                } else {
                    dirs.iter().map(|d| d.join(name)).find(|p| p.is_file())
                };
                // A template that is not found fails the compile, unless
                // the tag ignores it: then its absence is what is recorded,
                // unless it names a catalog (another target's output, which
                // the compile may have written by then).
                if found.is_none() && names_catalog(name) {
                    return Deps::Unknown(format!(
                        "{} includes `{name}`, which may be in the catalog being built",
                        self.rel(&path)
                    ));
                }
                if found.is_none() && !rest.contains("ignore") {
                    return Deps::Unknown(format!(
                        "{} includes `{name}`, which is not found",
                        self.rel(&path)
                    ));
                }
                files.insert(
                    format!(
                        "include {name} in {} from {}",
                        self.rel(&path),
                        self.rel(&top)
                    ),
                    digest(
                        found
                            .as_deref()
                            .map(|p| self.rel(p))
                            .unwrap_or_default()
                            .as_bytes(),
                    ),
                );
                if let Some(p) = found {
                    todo.push((p, top.clone()));
                }
            }
        }
        Deps::Known { files, global }
    }
}

/// Whether a program is a script (`#!`): a wrapper around helm in the
/// repository (probe 25: one that read a patch file of the tree) reads
/// files strata cannot know; a helm binary reads the chart and the values.
fn is_script(bytes: &[u8]) -> bool {
    bytes.starts_with(b"#!")
}

/// Adds an input's files to a target's. A file two entries read is kept
/// with both digests: a copy's holds its permission bits, a jsonnet
/// import's does not, and the one read last replaced the other (probe 25:
/// a copied script also read by `importstr` was made executable, and the
/// review called the target unchanged).
fn merge_files(files: &mut BTreeMap<String, [u8; 32]>, more: BTreeMap<String, [u8; 32]>) {
    use std::collections::btree_map::Entry;
    for (path, d) in more {
        match files.entry(path) {
            Entry::Vacant(v) => {
                v.insert(d);
            }
            Entry::Occupied(mut o) if *o.get() != d => {
                let mut h = Sha256::new();
                h.update(o.get());
                h.update(d);
                o.insert(h.finalize().into());
            }
            Entry::Occupied(_) => {}
        }
    }
}

/// A file's bytes and its permission bits: copy and jinja2 outputs keep
/// the input's mode (`chmod 600` as much as `chmod +x`).
fn file_digest(bytes: &[u8], meta: Option<&std::fs::Metadata>) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(bytes);
    h.update(b"\0mode");
    h.update(meta.map_or(0, mode_bits).to_le_bytes());
    h.finalize().into()
}

#[cfg(unix)]
fn mode_bits(m: &std::fs::Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o7777
}

#[cfg(not(unix))]
fn mode_bits(_m: &std::fs::Metadata) -> u32 {
    0
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `$KAPITAN_HELM_PATH` is the process's: the test that sets it holds
    /// this for writing, and every test fingerprinting a helm entry holds it
    /// for reading (a relative value set by one made another's helm target
    /// fail to fingerprint, now and then, in a full run).
    static HELM_ENV: std::sync::RwLock<()> = std::sync::RwLock::new(());

    #[test]
    fn import_patterns() {
        let t = r#"local a = import 'a.libsonnet'; local b = importstr "b.txt"; x"#;
        let caps: Vec<_> = jsonnet_import_re().captures_iter(t).collect();
        assert_eq!(caps.len(), 2);
        assert_eq!(jsonnet_any_import_re().find_iter(t).count(), 2);
        let computed = "local a = import ('x' + y);";
        assert_eq!(jsonnet_import_re().captures_iter(computed).count(), 0);
        assert_eq!(jsonnet_any_import_re().find_iter(computed).count(), 1);
        assert!(jsonnet_global_re().is_match("kap.inventory('other')"));
        assert!(!jsonnet_global_re().is_match("kap.inventory()"));
        assert!(jsonnet_reads_files_re().is_match("kap.yaml_load('x')"));
    }

    /// Fourth re-probe: names that look literal but are not, and helpers
    /// reached other than by name, made a changed target "unchanged".
    #[test]
    fn computed_names_are_seen() {
        let tag = |t: &str| {
            let c = jinja_tag_re().captures(t).unwrap();
            let rest = c.get(5).map_or("", |m| m.as_str());
            c.get(2).or_else(|| c.get(3)).is_some() && jinja_tag_rest_re().is_match(rest)
        };
        for literal in [
            "{% include 'a.j2' %}",
            "{%- include \"a.j2\" ignore missing with context -%}",
            "{% import 'm.j2' as m %}",
            "{% from 'm.j2' import a, b with context %}",
            "{% extends 'base.j2' %}",
        ] {
            assert!(tag(literal), "{literal}");
        }
        for computed in [
            "{% include 'data/' ~ inventory.parameters.f %}",
            "{% include 'nope.txt' if false else 'data/x.txt' %}",
            "{% import 'data/' ~ x as m %}",
            "{% extends 'a' + b %}",
            "{% include ['a.j2', 'b.j2'] %}",
        ] {
            assert!(!tag(computed), "{computed}");
        }
        let kap = "local kap = import 'lib/kapitan.libjsonnet';\n";
        assert!(!jsonnet_reads_other_inventory(&format!(
            "{kap}kap.inventory().parameters"
        )));
        assert!(!jsonnet_reads_other_inventory(
            "local inventory_path = 1; x.inventory_path"
        ));
        for other in [
            "local f = kap.inventory; f('u')",
            "kap['inventory']('u')",
            "kap.inventory('u')",
        ] {
            assert!(jsonnet_reads_other_inventory(other), "{other}");
        }
        assert!(!jsonnet_computed_native(&format!(
            "{kap}{{a: kap.inventory(), b: std.native('sha256_string')('x')}}"
        )));
        for computed in [
            "std.native('file_' + 'read')('x')".to_string(),
            "local n = std.native; n('file_read')".to_string(),
            format!("{kap}std.get(kap, 'file_' + 'read')('x')"),
            format!("{kap}kap['file_read']('x')"),
            "(import 'lib/kapitan.libjsonnet').inventory()".to_string(),
        ] {
            assert!(jsonnet_computed_native(&computed), "{computed}");
        }
    }

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn fingerprints(root: &Path) -> BTreeMap<String, Fingerprint> {
        let ws = Workspace::open(root, &super::super::CompileFlags::default()).unwrap();
        let r = ws.render().unwrap();
        Fingerprinter::new(&ws, &r).all(&r.targets())
    }

    #[test]
    fn fingerprints_follow_what_a_target_reads() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        let entry = |t: &str, input: &str| {
            format!(
                "parameters:\n  kapitan:\n    vars:\n      target: {t}\n    compile:\n      - input_type: {input}\n        output_path: out\n"
            )
        };
        write(
            root,
            "inventory/targets/a.yml",
            &(entry("a", "jsonnet") + "        input_paths: [c/a.jsonnet]\n"),
        );
        write(
            root,
            "inventory/targets/b.yml",
            &(entry("b", "jsonnet") + "        input_paths: [c/b.jsonnet]\n"),
        );
        write(
            root,
            "inventory/targets/x.yml",
            &(entry("x", "external") + "        input_paths: [c/run.sh]\n"),
        );
        write(
            root,
            "c/a.jsonnet",
            "local l = import 'lib.libsonnet'; { a: l.v }",
        );
        write(root, "c/lib.libsonnet", "{ v: 1 }");
        write(root, "c/b.jsonnet", "{ b: importstr 'b.txt' }");
        write(root, "c/b.txt", "one");
        write(root, "c/run.sh", "true");
        let first = fingerprints(root);
        assert!(first["a"].is_ok() && first["b"].is_ok(), "{first:?}");
        assert!(first["x"].as_ref().unwrap_err().contains("external"));
        // An import of a changes a only; an importstr of b changes b only.
        write(root, "c/lib.libsonnet", "{ v: 2 }");
        let second = fingerprints(root);
        assert_ne!(first["a"], second["a"]);
        assert_eq!(first["b"], second["b"]);
        write(root, "c/b.txt", "two");
        let third = fingerprints(root);
        assert_eq!(second["a"], third["a"]);
        assert_ne!(second["b"], third["b"]);
        // A file nobody reads changes nothing.
        write(root, "c/unused.libsonnet", "{}");
        assert_eq!(fingerprints(root), third);
        // A computed import cannot be followed: always compiled.
        write(
            root,
            "c/a.jsonnet",
            "local n = 'lib'; local l = import (n + '.libsonnet'); l",
        );
        assert!(fingerprints(root)["a"].is_err());
    }

    /// Re-probe 10 (a-review-opens-outside-files-fingerprint): a review's
    /// fingerprints opened the files outside the tree that its compile
    /// then refused to read. A confined workspace's fingerprint reads
    /// nothing outside: the target is compiled (and its compile refuses).
    #[test]
    fn confined_fingerprints_read_nothing_outside_the_tree() {
        let _env = HELM_ENV.read().unwrap_or_else(|e| e.into_inner());
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("repo");
        let outside = d.path().join("outside");
        write(&outside, "s.txt", "secret\n");
        write(&outside, "v.yaml", "a: 1\n");
        let abs = |n: &str| outside.join(n).display().to_string();
        write(
            &root,
            "inventory/targets/j.yml",
            "parameters:\n  kapitan:\n    vars: {target: j}\n    compile:\n      - {input_type: jsonnet, output_path: out, input_paths: [m.jsonnet]}\n",
        );
        write(
            &root,
            "m.jsonnet",
            &format!("{{a: importstr '{}'}}\n", abs("s.txt")),
        );
        write(
            &root,
            "inventory/targets/h.yml",
            &format!("parameters:\n  kapitan:\n    vars: {{target: h}}\n    compile:\n      - {{input_type: helm, output_path: out, input_paths: [charts/c], helm_values_files: ['{}']}}\n", abs("v.yaml")),
        );
        write(&root, "charts/c/Chart.yaml", "name: c\n");
        let flags = super::super::CompileFlags::default();
        let mut ws = Workspace::open(&root, &flags).unwrap();
        let r = ws.render().unwrap();
        // Unconfined (a local compile), both are hashed by their bytes.
        let fp = Fingerprinter::new(&ws, &r).all(&r.targets());
        assert!(fp.values().all(|f| f.is_ok()), "{fp:?}");
        ws.confine(&root, &root, &flags).unwrap();
        let fp = Fingerprinter::new(&ws, &r).all(&r.targets());
        for t in ["h", "j"] {
            let why = fp[t].as_ref().expect_err(t);
            assert!(why.contains("outside the repository"), "{t}: {why}");
        }
    }

    /// Fix9 (re-probe 13/14's deep-walk cost in the copy and Jinja2 walks):
    /// a confined fingerprint and compile of deep input trees resolve the
    /// inputs and links, not each directory from the root (which cost each
    /// level every level above it: 40 Jinja2 chains 245 levels deep took a
    /// review 16 s).
    #[cfg(unix)]
    #[test]
    fn deep_inputs_are_resolved_from_their_parents() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("repo");
        for (t, kind, input) in [("j", "jinja2", "tpl"), ("c", "copy", "files")] {
            write(
                &root,
                &format!("inventory/targets/{t}.yml"),
                &format!("parameters:\n  kapitan:\n    vars: {{target: {t}}}\n    compile:\n      - {{input_type: {kind}, output_path: o, input_paths: [{input}]}}\n"),
            );
        }
        let deep = crate::fswalk::tests::chain(&root.join("tpl/zz"), 40);
        std::os::unix::fs::symlink(&deep, root.join("tpl/link")).unwrap();
        crate::fswalk::tests::chain(&root.join("files/zz"), 40);
        let flags = super::super::CompileFlags::default();
        let mut ws = Workspace::open(&root, &flags).unwrap();
        ws.confine(&root, &root, &flags).unwrap();
        let r = ws.render().unwrap();
        let mut fp = BTreeMap::new();
        let n = crate::fswalk::counted::resolutions_below(d.path(), || {
            fp = Fingerprinter::new(&ws, &r).all(&r.targets());
        });
        // The Jinja2 input holds a link: its fingerprint is unknown.
        assert!(fp["c"].is_ok(), "{fp:?}");
        assert!(n <= 10, "the fingerprints resolved {n} paths");
        let n = crate::fswalk::counted::resolutions_below(d.path(), || {
            ws.compile_catalog(&r, &r.targets()).unwrap();
        });
        let zz = format!("zz/{}x.txt", "d/".repeat(40));
        for out in [
            format!("j/o/{zz}"),
            "j/o/link/x.txt".into(),
            format!("c/o/{zz}"),
        ] {
            let text = std::fs::read_to_string(root.join("compiled").join(&out));
            // Jinja2 drops the last line break, as Kapitan's does.
            assert_eq!(text.ok().as_deref().map(str::trim_end), Some("x"), "{out}");
        }
        assert!(n <= 20, "the compile resolved {n} paths");
    }

    /// Re-probe 5 (review-fingerprint-misses-helm-values-files-escaped-include-fileglob):
    /// files named by entry fields, escaped and missing template names,
    /// `fileglob`, Python filters and a repository's own kapitan.libjsonnet.
    #[test]
    fn fingerprints_cover_named_files_and_refuse_what_they_cannot_follow() {
        let _env = HELM_ENV.write().unwrap_or_else(|e| e.into_inner());
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        let entry = |t: &str, input: &str, path: &str| {
            format!(
                "parameters:\n  kapitan:\n    vars:\n      target: {t}\n    compile:\n      - input_type: {input}\n        output_path: out\n        input_paths: [{path}]\n"
            )
        };
        write(
            root,
            "inventory/targets/h.yml",
            &(entry("h", "helm", "charts/c")
                + "        helm_values_files: [values/prod.yaml]\n        helm_path: bin/helm\n        helm_params: {kube_ca_file: bin/ca.pem}\n"),
        );
        // A values file outside the tree: hashed by its bytes too.
        let outside = tempfile::tempdir().unwrap();
        let abs = outside.path().join("v.yaml");
        std::fs::write(&abs, "a: 1\n").unwrap();
        write(
            root,
            "inventory/targets/h2.yml",
            &(entry("h2", "helm", "charts/c")
                + &format!("        helm_values_files: ['{}']\n", abs.display())),
        );
        write(root, "bin/ca.pem", "ca\n");
        write(root, "charts/c/Chart.yaml", "name: c\n");
        write(root, "values/prod.yaml", "a: 1\n");
        write(root, "bin/helm", "\u{7f}ELF helm\n");
        for (t, text) in [
            ("escaped", "{% include 'data\\/x.txt' %}"),
            ("glob", "{{ 'data/*' | fileglob }}"),
            ("missing", "{% include 'nope.j2' %}"),
            ("ignored", "{% include 'nope.j2' ignore missing %}"),
        ] {
            write(
                root,
                &format!("inventory/targets/{t}.yml"),
                &entry(t, "jinja2", &format!("t/{t}.j2")),
            );
            write(root, &format!("t/{t}.j2"), text);
        }
        write(
            root,
            "inventory/targets/k.yml",
            &entry("k", "jsonnet", "c/k.jsonnet"),
        );
        write(
            root,
            "c/k.jsonnet",
            "local kap = import 'lib/kapitan.libjsonnet'; { v: kap.v }",
        );
        write(
            root,
            "lib/kapitan.libjsonnet",
            "local h = import 'helpers.libsonnet'; { v: h.v, file_read: std.native('file_read') }",
        );
        write(root, "lib/helpers.libsonnet", "{ v: 1 }");
        let first = fingerprints(root);
        let reason = |t: &str| first[t].as_ref().err().cloned().unwrap_or_default();
        assert!(reason("escaped").contains("escape"), "{first:?}");
        assert!(reason("glob").contains("fileglob"), "{first:?}");
        assert!(reason("missing").contains("not found"), "{first:?}");
        assert!(first["ignored"].is_ok() && first["h"].is_ok(), "{first:?}");
        assert!(first["k"].is_ok(), "{first:?}");
        for (file, changed) in [
            ("values/prod.yaml", "h"),
            ("bin/helm", "h"),
            ("bin/ca.pem", "h"),
            (abs.to_str().unwrap(), "h2"),
            ("lib/helpers.libsonnet", "k"),
        ] {
            let before = fingerprints(root);
            write(root, file, "changed: 2\n");
            let after = fingerprints(root);
            assert_ne!(before[changed], after[changed], "{file}");
            assert_eq!(before["ignored"], after["ignored"], "{file}");
        }
        // The template that was missing shows up: the target changes.
        let before = fingerprints(root);
        write(root, "t/nope.j2", "x");
        assert_ne!(before["ignored"], fingerprints(root)["ignored"]);
        // Re-probe 7: a missing import is the bundled library only by its
        // exact path; a missing `ignore missing` include through a catalog
        // may be another target's output.
        for (t, input, file, text) in [
            (
                "imp",
                "jsonnet",
                "c/imp.jsonnet",
                "local kap = import 'compiled/a/kapitan.libjsonnet'; { v: kap.v }",
            ),
            (
                "inc",
                "jinja2",
                "t/inc.j2",
                "{% include 'compiled/a/part.txt' ignore missing %}",
            ),
        ] {
            write(
                root,
                &format!("inventory/targets/{t}.yml"),
                &entry(t, input, file),
            );
            write(root, file, text);
        }
        let fp = fingerprints(root);
        assert!(
            fp["imp"].as_ref().is_err_and(|e| e.contains("not found")),
            "{fp:?}"
        );
        assert!(
            fp["inc"].as_ref().is_err_and(|e| e.contains("catalog")),
            "{fp:?}"
        );
        // A relative `$KAPITAN_HELM_PATH` is the pull request's file.
        write(
            root,
            "inventory/targets/hk.yml",
            &entry("hk", "helm", "charts/c"),
        );
        write(root, "tools/helm", "\u{7f}ELF helm\n");
        std::env::set_var("KAPITAN_HELM_PATH", "tools/helm");
        let before = fingerprints(root);
        write(root, "tools/helm", "\u{7f}ELF helm, changed\n");
        let after = fingerprints(root);
        // A wrapper script may read any file (probe 25).
        write(root, "tools/helm", "#!/bin/sh\n");
        let script = fingerprints(root);
        std::env::remove_var("KAPITAN_HELM_PATH");
        assert!(before["hk"].is_ok(), "{before:?}");
        assert_ne!(before["hk"], after["hk"]);
        assert!(
            script["hk"].as_ref().is_err_and(|e| e.contains("script")),
            "{script:?}"
        );
        assert_eq!(before["h"], after["h"], "helm_path wins over the variable");
        // Python filters may read anything.
        write(root, "lib/jinja2_filters.py", "def f(x):\n    return x\n");
        let with_filters = fingerprints(root);
        assert!(
            with_filters["ignored"]
                .as_ref()
                .unwrap_err()
                .contains("Python"),
            "{with_filters:?}"
        );
    }

    /// Probe 19: a review called a target unchanged whose output changed.
    /// `lk/../x.libsonnet` with `lk` a symlink: the compiler reads the file
    /// the path names lexically, the fingerprint hashed the one a search
    /// path gave after the file system resolved `lk/..` elsewhere.
    #[cfg(unix)]
    #[test]
    fn an_import_through_a_link_and_dotdot_is_the_file_the_compiler_reads() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        write(
            root,
            "inventory/targets/a.yml",
            "parameters:\n  kapitan:\n    vars: {target: a}\n    compile:\n      - {input_type: jsonnet, input_paths: [c/w/main.jsonnet], output_path: o}\n",
        );
        write(
            root,
            "c/w/main.jsonnet",
            "local x = import 'lk/../x.libsonnet'; { x: x }",
        );
        write(root, "c/w/x.libsonnet", "{ v: 1 }");
        write(root, "x.libsonnet", "{ v: 'decoy' }");
        write(root, "lk/.keep", "");
        write(root, "empty/inner/.keep", "");
        std::os::unix::fs::symlink("../../empty/inner", root.join("c/w/lk")).unwrap();
        let before = fingerprints(root);
        assert!(before["a"].is_ok(), "{before:?}");
        write(root, "c/w/x.libsonnet", "{ v: 2 }");
        assert_ne!(before["a"], fingerprints(root)["a"]);
    }

    /// Probe 19: any file named kapitan.libjsonnet went unscanned, so a
    /// helper under another name read a file no fingerprint covered, or
    /// `inventory()` another target's parameters. Kapitan's forwarding
    /// definitions still leave a component's fingerprint alone.
    #[test]
    fn a_helper_library_is_scanned_past_its_forwarding_definitions() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        let target = |t: &str, input: &str| {
            format!(
                "parameters:\n  kapitan:\n    vars: {{target: {t}}}\n    compile:\n      - {{input_type: jsonnet, input_paths: [{input}], output_path: o}}\n"
            )
        };
        for (t, lib) in [
            ("banner", "{ banner(n):: std.native('file_read')(n) }"),
            (
                "wrapped",
                "{ file_read(n):: std.native('file_read')(n), banner(n):: self.file_read(n) }",
            ),
            (
                "other",
                "{ inventory(target=std.extVar('target')):: std.native('inventory')('b', null) }",
            ),
            (
                "kapitan",
                include_str!("../../tests/fixtures/kapitan_compat/model/lib/kapitan.libjsonnet"),
            ),
        ] {
            write(
                root,
                &format!("inventory/targets/{t}.yml"),
                &target(t, &format!("c/{t}/main.jsonnet")),
            );
            write(root, &format!("c/{t}/kapitan.libjsonnet"), lib);
            let call = if t == "other" {
                "k.inventory()"
            } else {
                "k.banner('d.txt')"
            };
            let call = if t == "kapitan" {
                "k.sha256('x')"
            } else {
                call
            };
            write(
                root,
                &format!("c/{t}/main.jsonnet"),
                &format!("local k = import 'kapitan.libjsonnet'; {{ v: {call} }}"),
            );
        }
        write(
            root,
            "inventory/targets/b.yml",
            &target("b", "c/kapitan/main.jsonnet"),
        );
        let fp = fingerprints(root);
        for t in ["banner", "wrapped"] {
            assert!(
                fp[t].as_ref().is_err_and(|e| e.contains("reads files")),
                "{t}: {fp:?}"
            );
        }
        assert!(fp["kapitan"].is_ok(), "{fp:?}");
        // `other` reads b's parameters: b's change is its change.
        write(
            root,
            "inventory/targets/b.yml",
            &(target("b", "c/kapitan/main.jsonnet") + "  x: 1\n"),
        );
        let after = fingerprints(root);
        assert_ne!(fp["other"], after["other"]);
        assert_eq!(fp["kapitan"], after["kapitan"]);
    }

    /// Probe 25: a helper library reached its own blanked `file_read` by a
    /// computed name (`self[f]`), or ran code in a forwarding definition's
    /// argument: a change to the file it read left the target "unchanged".
    /// Only a library made of forwarding definitions alone is trusted.
    #[test]
    fn a_helper_library_is_trusted_only_when_made_of_forwarding_definitions() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        let fwd = "file_read(n):: std.native('file_read')(n)";
        let stock =
            include_str!("../../tests/fixtures/kapitan_compat/model/lib/kapitan.libjsonnet");
        let libs = [
            (
                "computed",
                format!("{{ {fwd}, banner(n):: [self[f](n) for f in std.objectFieldsAll(self) if f == 'file' + '_read'][0] }}"),
                false,
            ),
            (
                "values",
                format!("{{ {fwd}, banner(n):: std.objectValuesAll(self)[0](n) }}"),
                false,
            ),
            (
                "argument",
                format!("{{ {fwd}, sha256(obj):: std.native('sha256_string')(self['file' + '_read']('d.txt')) }}"),
                false,
            ),
            (
                "default",
                format!("{{ {fwd}, sha256(obj, x=self['file' + '_read']('d.txt')):: std.native('sha256_string')(x) }}"),
                false,
            ),
            (
                "local",
                format!("local lib = {{ {fwd} }};\n{{ banner(n):: lib['file' + '_read'](n) }}"),
                false,
            ),
            ("stock", stock.to_string(), true),
            (
                "stock-path",
                stock.replace("inv_path=null", "inv_path=\"inventory/\""),
                true,
            ),
            (
                "strata",
                include_str!("../compile/kapitan.libjsonnet").to_string(),
                true,
            ),
        ];
        for (t, lib, trusted) in &libs {
            write(
                root,
                &format!("inventory/targets/{t}.yml"),
                &format!("parameters:\n  kapitan:\n    vars: {{target: {t}}}\n    compile:\n      - {{input_type: jsonnet, input_paths: [c/{t}/main.jsonnet], output_path: o}}\n"),
            );
            write(root, &format!("c/{t}/kapitan.libjsonnet"), lib);
            let call = if *trusted {
                "k.sha256('x')"
            } else {
                "k.banner('d.txt')"
            };
            let call = if t.starts_with("arg") || t.starts_with("def") {
                "k.sha256('x')"
            } else {
                call
            };
            write(
                root,
                &format!("c/{t}/main.jsonnet"),
                &format!("local k = import 'kapitan.libjsonnet'; {{ v: {call} }}"),
            );
        }
        write(root, "d.txt", "one");
        let fp = fingerprints(root);
        for (t, _, trusted) in &libs {
            if *trusted {
                assert!(fp[*t].is_ok(), "{t}: {fp:?}");
            } else {
                assert!(
                    fp[*t].as_ref().is_err_and(|e| e.contains("reads files")),
                    "{t}: {fp:?}"
                );
            }
        }
    }

    /// Probe 19: parameters were hashed as JSON, which writes every
    /// non-finite float as `null`.
    #[test]
    fn non_finite_parameters_are_told_apart() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        write(root, "t/x.j2", "x={{ inventory.parameters.x }}");
        let mut seen = BTreeSet::new();
        for x in [
            ".inf", "-.inf", ".nan", "null", "1.0", "1", "'1'", "-0.0", "0.0",
        ] {
            write(
                root,
                "inventory/targets/a.yml",
                &format!("parameters:\n  x: {x}\n  kapitan:\n    vars: {{target: a}}\n    compile:\n      - {{input_type: jinja2, input_paths: [t/x.j2], output_path: o}}\n"),
            );
            let fp = fingerprints(root)["a"].clone().unwrap();
            assert!(seen.insert(fp), "{x} hashes as an earlier value");
        }
    }

    /// Probe 19: helm's `dependency_update` reads the charts Chart.yaml
    /// names (`file://../lib`), which the chart directory does not hold.
    #[test]
    fn a_helm_dependency_update_is_always_compiled() {
        let _env = HELM_ENV.read().unwrap_or_else(|e| e.into_inner());
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        write(
            root,
            "charts/c/Chart.yaml",
            "name: c\ndependencies:\n  - {name: l, repository: 'file://../l'}\n",
        );
        write(root, "charts/l/Chart.yaml", "name: l\n");
        for (t, on) in [("u", "true"), ("n", "false")] {
            write(
                root,
                &format!("inventory/targets/{t}.yml"),
                &format!("parameters:\n  kapitan:\n    vars: {{target: {t}}}\n    compile:\n      - {{input_type: helm, input_paths: [charts/c], output_path: o, helm_params: {{dependency_update: {on}}}}}\n"),
            );
        }
        let fp = fingerprints(root);
        assert!(
            fp["u"]
                .as_ref()
                .is_err_and(|e| e.contains("dependency_update")),
            "{fp:?}"
        );
        assert!(fp["n"].is_ok(), "{fp:?}");
    }

    /// Probe 20 (helm-flags-reading-directories-unfingerprinted): helm 4's
    /// `values_directory` reads every values file of a directory, the
    /// cache flags read charts, `post_renderer_args` are the post-renderer's;
    /// `kube_ca_file` names a file.
    #[test]
    fn helm_flags_reading_directories_are_always_compiled() {
        let _env = HELM_ENV.read().unwrap_or_else(|e| e.into_inner());
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        write(root, "charts/c/Chart.yaml", "name: c\n");
        write(root, "vals/a.yaml", "x: 1\n");
        write(root, "ca.pem", "ca\n");
        for (t, params) in [
            ("v", "values_directory: vals"),
            ("r", "repository_cache: vals"),
            ("p", "post_renderer_args: vals/a.yaml"),
            ("k", "kube_ca_file: ca.pem"),
            ("n", "namespace: x"),
        ] {
            write(
                root,
                &format!("inventory/targets/{t}.yml"),
                &format!("parameters:\n  kapitan:\n    vars: {{target: {t}}}\n    compile:\n      - {{input_type: helm, input_paths: [charts/c], output_path: o, helm_params: {{{params}}}}}\n"),
            );
        }
        let fp = fingerprints(root);
        for t in ["v", "r", "p"] {
            assert!(
                fp[t].as_ref().is_err_and(|e| e.contains("does not follow")),
                "{t}: {fp:?}"
            );
        }
        assert!(fp["k"].is_ok() && fp["n"].is_ok(), "{fp:?}");
        let before = fp["k"].clone();
        write(root, "ca.pem", "other\n");
        assert_ne!(fingerprints(root)["k"], before);
    }

    /// Probe 25 (helm-post-renderer-reads-unfingerprinted-files): the
    /// post-renderer (or a helm_path that is a wrapper script) is a program
    /// that read a patch file of the tree: a change to the patch left the
    /// target "unchanged". Such entries have no fingerprint.
    #[test]
    fn a_helm_post_renderer_or_wrapper_script_is_always_compiled() {
        let _env = HELM_ENV.read().unwrap_or_else(|e| e.into_inner());
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        write(root, "charts/c/Chart.yaml", "name: c\n");
        write(root, "bin/pr.sh", "#!/bin/sh\ncat\ncat patches/p.txt\n");
        write(root, "bin/helm.sh", "#!/bin/sh\nexec helm \"$@\"\n");
        write(root, "bin/helm", "\u{7f}ELF helm\n");
        for (t, fields) in [
            ("pr", "helm_params: {post_renderer: bin/pr.sh}"),
            ("prpath", "helm_params: {post_renderer: kustomize-wrapper}"),
            ("wrapper", "helm_path: bin/helm.sh"),
            ("binary", "helm_path: bin/helm"),
            ("none", "helm_params: {post_renderer: ''}"),
        ] {
            write(
                root,
                &format!("inventory/targets/{t}.yml"),
                &format!("parameters:\n  kapitan:\n    vars: {{target: {t}}}\n    compile:\n      - {{input_type: helm, input_paths: [charts/c], output_path: o, {fields}}}\n"),
            );
        }
        let fp = fingerprints(root);
        for t in ["pr", "prpath"] {
            assert!(
                fp[t].as_ref().is_err_and(|e| e.contains("post_renderer")),
                "{t}: {fp:?}"
            );
        }
        assert!(
            fp["wrapper"].as_ref().is_err_and(|e| e.contains("script")),
            "{fp:?}"
        );
        assert!(fp["binary"].is_ok() && fp["none"].is_ok(), "{fp:?}");
    }

    /// Probe 19 (jinja2-input-params-prints-scratch-compile-path): a
    /// template printing `input_params` whole wrote the scratch
    /// `compile_path` without naming it, and kept its fingerprint.
    #[test]
    fn a_template_reading_input_params_whole_is_always_compiled() {
        for whole in [
            "{{ input_params }}",
            "{{ input_params | tojson }}",
            "{% for k, v in input_params.items() %}{{ v }}{% endfor %}",
            "{{ input_params.get(name) }}",
            "{{ input_params[name] }}",
        ] {
            assert!(jinja_reads_input_params_whole(whole), "{whole}");
        }
        for one in [
            "{{ input_params.namespace }}",
            "{{ input_params['namespace'] }}",
            "{{ input_params . namespace | upper }}",
            "{{ my_input_params }}",
        ] {
            assert!(!jinja_reads_input_params_whole(one), "{one}");
        }
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        for (t, text) in [("w", "{{ input_params }}"), ("n", "{{ input_params.x }}")] {
            write(
                root,
                &format!("inventory/targets/{t}.yml"),
                &format!("parameters:\n  kapitan:\n    vars: {{target: {t}}}\n    compile:\n      - {{input_type: jinja2, input_paths: [t/{t}.j2], output_path: o, input_params: {{x: 1}}}}\n"),
            );
            write(root, &format!("t/{t}.j2"), text);
        }
        let fp = fingerprints(root);
        assert!(
            fp["w"].as_ref().is_err_and(|e| e.contains("input_params")),
            "{fp:?}"
        );
        assert!(fp["n"].is_ok(), "{fp:?}");
    }

    /// Probe 20 (input-path-resolved-in-the-catalog-too): the compiler
    /// takes an input's matches in every search path and in the catalog
    /// being built; a tree copy of `compiled/a/x.yml` kept the fingerprint
    /// of a target copying target `a`'s fresh output.
    #[test]
    fn an_input_that_may_be_in_the_catalog_is_always_compiled() {
        for p in [
            "compiled/a/x.yml",
            "./compiled/a",
            "x/../compiled/a/x.yml",
            "*/a/x.yml",
            "c*/a",
            "[bc]ompiled/a",
            "../elsewhere/x",
        ] {
            assert!(input_may_be_in_catalog(p), "{p}");
        }
        for p in [
            "components/x.jsonnet",
            "t/*.j2",
            "compiled-notes/x",
            ".c*/x",
        ] {
            assert!(!input_may_be_in_catalog(p), "{p}");
        }
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        write(root, "compiled/a/x.yml", "v: committed\n");
        write(root, "data/x.yml", "v: 1\n");
        for (t, input) in [
            ("b", "compiled/a/x.yml"),
            ("c", "*/x.yml"),
            ("d", "data/x.yml"),
        ] {
            write(
                root,
                &format!("inventory/targets/{t}.yml"),
                &format!("parameters:\n  kapitan:\n    vars: {{target: {t}}}\n    compile:\n      - {{input_type: copy, input_paths: ['{input}'], output_path: o}}\n"),
            );
        }
        let fp = fingerprints(root);
        for t in ["b", "c"] {
            assert!(
                fp[t].as_ref().is_err_and(|e| e.contains("catalog")),
                "{t}: {fp:?}"
            );
        }
        assert!(fp["d"].is_ok(), "{fp:?}");
    }

    /// Probe 20 (jsonnet-thisfile-prints-scratch-path): `std.thisFile` is
    /// the file's absolute path, a scratch directory per review side; a
    /// component printing it kept its fingerprint.
    #[test]
    fn a_component_using_this_file_is_always_compiled() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        for (t, text) in [
            ("f", "{ x: { f: std.thisFile } }"),
            ("g", "local l = import 'l.libsonnet'; { x: l }"),
            ("b", "{ x: { f: std['thisFile'] } }"),
            ("n", "{ x: { thisFiles: 1 } }"),
        ] {
            write(
                root,
                &format!("inventory/targets/{t}.yml"),
                &format!("parameters:\n  kapitan:\n    vars: {{target: {t}}}\n    compile:\n      - {{input_type: jsonnet, input_paths: [c/{t}.jsonnet], output_path: o}}\n"),
            );
            write(root, &format!("c/{t}.jsonnet"), text);
        }
        write(root, "c/l.libsonnet", "{ here: std.thisFile }");
        let fp = fingerprints(root);
        for t in ["f", "g", "b"] {
            assert!(
                fp[t].as_ref().is_err_and(|e| e.contains("thisFile")),
                "{t}: {fp:?}"
            );
        }
        assert!(fp["n"].is_ok(), "{fp:?}");
    }

    /// Probe 20 (jsonnet-std-bracket-access-hides-native): `std` indexed
    /// by a computed name reached `native` and `file_read` with neither
    /// word in the text.
    #[test]
    fn std_reached_by_a_computed_name_is_always_compiled() {
        for computed in [
            "local n = std['nat' + 'ive']; n('fil' + 'e_read')('d')",
            "std [ 'native' ]('file_read')",
            "local s = std; s.native",
            "std.get(std, 'nat' + 'ive')",
            "std.objectValuesAll(std)",
            "std.",
        ] {
            assert!(jsonnet_computed_native(computed), "{computed}");
        }
        for plain in [
            "std.length(x) + std . map(f, y) + std.\n  join(',', z)",
            "std.native('sha256_string')(x)",
            "{ stdout: 1, std_x: 2 }",
        ] {
            assert!(!jsonnet_computed_native(plain), "{plain}");
        }
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        write(root, "data/d.txt", "one\n");
        for (t, text) in [
            (
                "c",
                "local n = std['nat' + 'ive']; { x: { d: n('fil' + 'e_read')('data/d.txt') } }",
            ),
            ("p", "{ x: { d: std.length('a') } }"),
        ] {
            write(
                root,
                &format!("inventory/targets/{t}.yml"),
                &format!("parameters:\n  kapitan:\n    vars: {{target: {t}}}\n    compile:\n      - {{input_type: jsonnet, input_paths: [c/{t}.jsonnet], output_path: o}}\n"),
            );
            write(root, &format!("c/{t}.jsonnet"), text);
        }
        let fp = fingerprints(root);
        assert!(
            fp["c"].as_ref().is_err_and(|e| e.contains("computed name")),
            "{fp:?}"
        );
        assert!(fp["p"].is_ok(), "{fp:?}");
    }

    /// Probe 20 (remove-entry-deletes-another-targets-output).
    /// Probe 25: a file copied (its mode counts) and read by `importstr`
    /// (its bytes only) was kept with the digest read last: made
    /// executable, the copy changed and the fingerprint did not.
    #[cfg(unix)]
    #[test]
    fn a_file_two_entries_read_keeps_what_each_hashes() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        write(
            root,
            "inventory/targets/a.yml",
            "parameters:\n  kapitan:\n    vars: {target: a}\n    compile:\n      - {input_type: copy, input_paths: [data/x.sh], output_path: bin}\n      - {input_type: jsonnet, input_paths: [c/main.jsonnet], output_path: o}\n",
        );
        write(root, "c/main.jsonnet", "{ d: importstr '../data/x.sh' }");
        write(root, "data/x.sh", "#!/bin/sh\necho hi\n");
        let chmod = |m: u32| {
            std::fs::set_permissions(root.join("data/x.sh"), std::fs::Permissions::from_mode(m))
                .unwrap()
        };
        chmod(0o644);
        let before = fingerprints(root);
        assert!(before["a"].is_ok(), "{before:?}");
        chmod(0o755);
        assert_ne!(before["a"], fingerprints(root)["a"]);
    }

    /// Probe 25 (fingerprint-reads-fifo-and-hangs): a FIFO below a copy
    /// input, or named as a values file, blocked the fingerprint's read for
    /// ever (`compile --cache` hung; the compile refuses it).
    #[cfg(unix)]
    #[test]
    fn a_fifo_is_not_read() {
        let _env = HELM_ENV.read().unwrap_or_else(|e| e.into_inner());
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        write(
            root,
            "inventory/targets/a.yml",
            "parameters:\n  kapitan:\n    vars: {target: a}\n    compile:\n      - {input_type: copy, input_paths: [data], output_path: o}\n",
        );
        write(
            root,
            "inventory/targets/h.yml",
            "parameters:\n  kapitan:\n    vars: {target: h}\n    compile:\n      - {input_type: helm, input_paths: [charts/c], output_path: o, helm_values_files: [data/pipe]}\n",
        );
        write(root, "data/x.txt", "x\n");
        write(root, "charts/c/Chart.yaml", "name: c\n");
        let ok = std::process::Command::new("mkfifo")
            .arg(root.join("data/pipe"))
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return; // no mkfifo here
        }
        let fp = fingerprints(root);
        for t in ["a", "h"] {
            assert!(
                fp[t]
                    .as_ref()
                    .is_err_and(|e| e.contains("not a regular file")),
                "{t}: {fp:?}"
            );
        }
    }

    #[test]
    fn overlapping_output_directories_are_grouped() {
        let dirs: Vec<(String, String)> = [
            ("a", "a"),
            ("a.sub", "a/sub"),
            ("a.sub.deep", "a/sub/deep"),
            ("ab", "ab"),
            ("b", "b"),
            ("b2", "b"),
            ("c", "c/x"),
            ("none", ""),
            ("none2", ""),
        ]
        .iter()
        .map(|(t, d)| (t.to_string(), d.to_string()))
        .collect();
        let o = overlapping_outputs(&dirs);
        let get = |t: &str| o.get(t).cloned().unwrap_or_default();
        assert_eq!(get("a"), ["a", "a.sub", "a.sub.deep"]);
        assert_eq!(get("a.sub"), ["a", "a.sub", "a.sub.deep"]);
        assert_eq!(get("a.sub.deep"), ["a", "a.sub", "a.sub.deep"]);
        // `ab` is no directory inside `a`.
        assert!(get("ab").is_empty());
        assert_eq!(get("b"), ["b", "b2"]);
        assert!(get("c").is_empty());
        // Targets without `vars.target` (compiling nothing) are no
        // directory above the others.
        assert_eq!(get("none"), ["none", "none2"]);
    }

    #[test]
    fn a_remove_outside_the_own_directory_is_told() {
        use crate::compile::model::{Entry, TargetPlan};
        let plan = |t: &str, removes: &[&str]| TargetPlan {
            name: t.to_string(),
            target_var: t.to_string(),
            dir: t.to_string(),
            entries: removes
                .iter()
                .enumerate()
                .map(|(i, r)| Entry {
                    number: i + 1,
                    name: None,
                    input_type: InputType::Remove,
                    input_paths: vec![r.to_string()],
                    output_path: None,
                    input_params: Default::default(),
                    continue_on_compile_error: false,
                    output_type: crate::compile::output::OutputType::Yaml,
                    ignore_missing: false,
                    prune: false,
                    suffix_remove: false,
                    suffix_stripped: String::new(),
                    args: vec![],
                    env_vars: vec![],
                    extra: Default::default(),
                })
                .collect(),
            vars: Default::default(),
            multiline_style: None,
        };
        for (removes, outside) in [
            (&["compiled/z/tmp"][..], false),
            (&["compiled/z"], false),
            (&["./compiled/z/a/../b"], false),
            (&["tmp/x"], false),
            (&["compiled/b/x.yml"], true),
            (&["compiled/z/../b/x.yml"], true),
            (&["compiled/*/x.yml"], true),
            (&["c*/z/x"], true),
            (&["compiled/z/ok", "compiled/b"], true),
        ] {
            let got = removes_outside_own_dir(&plan("z", removes));
            assert_eq!(got.is_some(), outside, "{removes:?}: {got:?}");
        }
    }

    #[test]
    fn jinja_tags() {
        let t = "{% include 'a.j2' %}{%- from \"m.j2\" import x %}{% include name %}";
        let caps: Vec<_> = jinja_tag_re().captures_iter(t).collect();
        assert_eq!(caps.len(), 3);
        assert_eq!(caps[0].get(2).unwrap().as_str(), "a.j2");
        assert_eq!(caps[1].get(3).unwrap().as_str(), "m.j2");
        assert_eq!(caps[2].get(4).unwrap().as_str(), "name");
    }
}
