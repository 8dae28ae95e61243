//! Catalog diff: compares two compiled catalog directories target by target
//! and file by file, the way a reviewer wants to read a pull request.
//!
//! YAML and JSON files are compared semantically (key order and formatting
//! are not differences) and each changed Kubernetes object is named
//! `kind/namespace/name`. Secret values are redacted before any text is
//! produced, so no output format can leak them. The result is a plain,
//! serializable [`CatalogDiff`]; [`render`] turns it into text or markdown.

pub mod escape;
pub mod git;
pub mod groups;
pub mod redact;
pub mod render;

use crate::memtree::{MemFile, MemTree};
use crate::value::{Map, Value};
use rayon::prelude::*;
use redact::Redactor;
use regex::Regex;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What can go wrong while diffing: unreadable directories or files, bad patterns.
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    #[error("catalog directory {} not found", path.display())]
    NoDir { path: PathBuf },
    #[error("cannot read {}: {message}", path.display())]
    Io { path: PathBuf, message: String },
    #[error("invalid regular expression `{regex}` for {flag}: {message}")]
    BadRegex {
        flag: &'static str,
        regex: String,
        message: String,
    },
    #[error("git revision `{rev}`: {message}")]
    Git { rev: String, message: String },
    #[error("invalid --ignore-resource `{spec}`: expected group:kind:name (group empty for core, `*` matches anything)")]
    BadResource { spec: String },
}

impl crate::diagnostics::ToDiagnostic for DiffError {
    fn to_diagnostic(&self) -> crate::diagnostics::Diagnostic {
        let d = crate::diagnostics::Diagnostic::error(self.to_string());
        match self {
            DiffError::NoDir { path } | DiffError::Io { path, .. } => d.with_file(path),
            DiffError::BadResource { .. } => {
                d.with_hint("for example `apps:Deployment:web` or `:ConfigMap:*`")
            }
            DiffError::BadRegex { .. } => d,
            DiffError::Git { message, .. } if message.starts_with("cannot open the git repository") => d.with_hint(
                "--base and --head compare git revisions: run it inside a git repository (or pass --repo DIR); to compare two compiled directories use `--catalogs OLD_DIR NEW_DIR`",
            ),
            // A revision or object the clone lacks. A tree past a checkout
            // limit or holding a name refused exists: being told to fetch
            // it sent the author the wrong way (probe 44); those messages
            // say what to do themselves.
            DiffError::Git { message, .. }
                if message.starts_with("not a commit") || message.starts_with("cannot read") =>
            {
                d.with_hint(
                    "pass a branch, tag or commit that exists in the repository (fetch it first in CI: `fetch-depth: 0`)",
                )
            }
            DiffError::Git { .. } => d,
        }
    }
}

/// `group:kind:name`, each part matched exactly or with `*` wildcards.
#[derive(Debug, Clone)]
pub struct ResourceFilter {
    group: Regex,
    kind: Regex,
    name: Regex,
}

impl ResourceFilter {
    pub fn parse(spec: &str) -> Result<Self, DiffError> {
        let parts: Vec<&str> = spec.split(':').collect();
        if parts.len() != 3 || parts[1].is_empty() || parts[2].is_empty() {
            return Err(DiffError::BadResource { spec: spec.into() });
        }
        let glob = |p: &str| {
            let re = format!("^{}$", regex::escape(p).replace(r"\*", ".*"));
            Regex::new(&re).map_err(|_| DiffError::BadResource { spec: spec.into() })
        };
        Ok(ResourceFilter {
            group: glob(parts[0])?,
            kind: glob(parts[1])?,
            name: glob(parts[2])?,
        })
    }

    fn matches(&self, obj: &Value) -> bool {
        let Some(id) = K8sId::of(obj) else {
            return false;
        };
        self.group.is_match(&id.group)
            && self.kind.is_match(&id.kind)
            && self.name.is_match(&id.name)
    }
}

/// How to compare.
#[derive(Debug, Clone)]
pub struct DiffOptions {
    /// Parse YAML/JSON and compare values, not text.
    pub semantic: bool,
    pub redactor: Redactor,
    pub ignore_resources: Vec<ResourceFilter>,
    /// Field paths (`metadata.annotations.x`, `spec.items[0].y`) to drop
    /// before comparing; searched, not anchored.
    pub ignore_paths: Vec<Regex>,
    /// Lines of context in unified diffs.
    pub context: usize,
    /// A symlink is read only when it stays below its own target's
    /// directory (the catalog's first directory it is in); one into
    /// another target's is shown as a link. A review compiles only the
    /// targets that changed: a link into an unchanged target's directory
    /// was read in a full review and found nothing in an incremental one
    /// (probe 33).
    pub links_within_targets: bool,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            semantic: true,
            redactor: Redactor::default(),
            ignore_resources: Vec::new(),
            ignore_paths: Vec::new(),
            context: 3,
            links_within_targets: false,
        }
    }
}

impl DiffOptions {
    /// Compiles `--ignore-path` patterns.
    pub fn ignore_path_regexes(patterns: &[String]) -> Result<Vec<Regex>, DiffError> {
        patterns
            .iter()
            .map(|p| {
                Regex::new(p).map_err(|e| DiffError::BadRegex {
                    flag: "--ignore-path",
                    regex: p.clone(),
                    message: e.to_string(),
                })
            })
            .collect()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Added,
    Removed,
    Changed,
    Renamed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Added => "added",
            Status::Removed => "removed",
            Status::Changed => "changed",
            Status::Renamed => "renamed",
        }
    }
}

/// The whole comparison; only targets and files with differences appear.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CatalogDiff {
    pub summary: Summary,
    pub targets: Vec<TargetDiff>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Summary {
    pub targets_changed: usize,
    pub targets_added: usize,
    pub targets_removed: usize,
    pub files_added: usize,
    pub files_removed: usize,
    pub files_changed: usize,
    pub files_renamed: usize,
    pub objects_changed: usize,
}

impl CatalogDiff {
    pub fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }

    /// Appends `other`, naming its targets `<prefix>/<target>`; used when a
    /// catalog has several roots (Commodore's `manifests/` and `refs/`).
    pub fn append_prefixed(&mut self, prefix: &str, other: CatalogDiff) {
        let s = &mut self.summary;
        let o = other.summary;
        s.targets_changed += o.targets_changed;
        s.targets_added += o.targets_added;
        s.targets_removed += o.targets_removed;
        s.files_added += o.files_added;
        s.files_removed += o.files_removed;
        s.files_changed += o.files_changed;
        s.files_renamed += o.files_renamed;
        s.objects_changed += o.objects_changed;
        self.targets.extend(other.targets.into_iter().map(|mut t| {
            if !prefix.is_empty() {
                t.name = format!("{prefix}/{}", t.name);
            }
            t
        }));
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetDiff {
    /// The top-level directory under the catalog (`.` for files at the root).
    pub name: String,
    pub status: Status,
    pub files: Vec<FileDiff>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileDiff {
    /// Path relative to the target directory (the new path for renames).
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    pub status: Status,
    /// One entry per changed object (or one for the whole file in text mode).
    pub objects: Vec<ObjectDiff>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectDiff {
    /// `kind/namespace/name` (`kind/name` without a namespace), `document N`
    /// for other YAML documents, or the file name in text mode.
    pub name: String,
    pub status: Status,
    pub added_lines: usize,
    pub removed_lines: usize,
    /// A unified diff of the (redacted) canonical rendering.
    pub diff: String,
    /// The leaf changes of a changed object, on redacted values (empty for
    /// text files, added or removed objects, and objects with too many).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<groups::Change>,
}

/// Diffs two catalog directories.
pub fn diff_dirs(old: &Path, new: &Path, opts: &DiffOptions) -> Result<CatalogDiff, DiffError> {
    diff_trees((old, None), (new, None), opts)
}

/// [`diff_dirs`] of two catalogs each of which may keep some of its files
/// in memory ([`MemTree`], keyed by their path below the directory).
pub fn diff_trees(
    old: (&Path, Option<&MemTree>),
    new: (&Path, Option<&MemTree>),
    opts: &DiffOptions,
) -> Result<CatalogDiff, DiffError> {
    let old_files = walk_tree(old, opts.links_within_targets)?;
    let new_files = walk_tree(new, opts.links_within_targets)?;
    let mut targets: BTreeSet<&str> = BTreeSet::new();
    targets.extend(old_files.keys().map(|(t, _)| t.as_str()));
    targets.extend(new_files.keys().map(|(t, _)| t.as_str()));
    let mut out = CatalogDiff::default();
    for t in targets {
        let olds: BTreeMap<&str, &Src> = old_files
            .iter()
            .filter(|((tt, _), _)| tt == t)
            .map(|((_, f), p)| (f.as_str(), p))
            .collect();
        let news: BTreeMap<&str, &Src> = new_files
            .iter()
            .filter(|((tt, _), _)| tt == t)
            .map(|((_, f), p)| (f.as_str(), p))
            .collect();
        let status = match (olds.is_empty(), news.is_empty()) {
            (true, _) => Status::Added,
            (_, true) => Status::Removed,
            _ => Status::Changed,
        };
        let files = diff_target(&olds, &news, opts)?;
        if files.is_empty() {
            continue;
        }
        match status {
            Status::Added => out.summary.targets_added += 1,
            Status::Removed => out.summary.targets_removed += 1,
            _ => out.summary.targets_changed += 1,
        }
        for f in &files {
            match f.status {
                Status::Added => out.summary.files_added += 1,
                Status::Removed => out.summary.files_removed += 1,
                Status::Changed => out.summary.files_changed += 1,
                Status::Renamed => out.summary.files_renamed += 1,
            }
            out.summary.objects_changed += f.objects.len();
        }
        out.targets.push(TargetDiff {
            name: t.to_string(),
            status,
            files,
        });
    }
    hide_secrets_in_names(&mut out, &opts.redactor);
    Ok(out)
}

/// Target names, file paths and object labels go through the same rules
/// as values ([`Redactor::scrub_name`]): a token used as a file or
/// directory name, `DB_PASSWORD=x.env`, or a Secret named after a token
/// (whose `metadata.name` the body hides) would otherwise show in every
/// output. Files keep their order: the placeholder replaces the secret in
/// the name, not the name's place.
fn hide_secrets_in_names(diff: &mut CatalogDiff, redactor: &Redactor) {
    for t in &mut diff.targets {
        t.name = redactor.scrub_name(&t.name);
        for f in &mut t.files {
            f.path = redactor.scrub_name(&f.path);
            if let Some(old) = &mut f.old_path {
                *old = redactor.scrub_name(old);
            }
            for o in &mut f.objects {
                o.name = redactor.scrub_name(&o.name);
            }
        }
    }
}

/// Where a catalog's file is read from.
enum Src {
    Disk(PathBuf),
    Mem(Arc<MemFile>),
}

type FileMap = BTreeMap<(String, String), Src>;

/// The files of a catalog directory and of its tree in memory.
fn walk_tree(
    (root, mem): (&Path, Option<&MemTree>),
    links_within_targets: bool,
) -> Result<FileMap, DiffError> {
    let mut out = walk(root, links_within_targets)?;
    for (rel, f) in mem.map(MemTree::files).unwrap_or_default() {
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let key = match parts.split_first() {
            Some((only, [])) => (".".to_string(), only.clone()),
            Some((target, rest)) => (target.clone(), rest.join("/")),
            None => continue,
        };
        out.insert(key, Src::Mem(f));
    }
    Ok(out)
}

/// Every file under `root`, keyed by (target, path inside the target), sorted.
fn walk(root: &Path, links_within_targets: bool) -> Result<FileMap, DiffError> {
    if !root.is_dir() {
        return Err(DiffError::NoDir {
            path: root.to_path_buf(),
        });
    }
    let real_root = crate::fswalk::resolve(root).map_err(|e| DiffError::Io {
        path: root.to_path_buf(),
        message: e.to_string(),
    })?;
    let mut out = FileMap::new();
    let mut walk = Walk {
        root,
        real_root: &real_root,
        links_within_targets,
        visits: crate::fswalk::Visits::default(),
        out: &mut out,
    };
    walk.dir(root, real_root.clone())?;
    Ok(out)
}

/// Paths cannot hold NUL, so a map entry starting with it is no file but
/// the text shown in its place: what a symlink out of the catalog points to,
/// or that a FIFO or device was not read.
const REFUSED: &str = "\0refused:";

fn refused(text: String) -> PathBuf {
    PathBuf::from(format!("{REFUSED}{text}"))
}

/// Directory symlinks are followed (catalogs sometimes link shared
/// manifests), but never into a directory that is already one of the
/// current directory's ancestors, so a link back up the tree ends there,
/// nor more than [`crate::fswalk::MAX_DIR_VISITS`] times into one directory.
struct Walk<'a> {
    root: &'a Path,
    real_root: &'a Path,
    /// [`DiffOptions::links_within_targets`].
    links_within_targets: bool,
    visits: crate::fswalk::Visits,
    out: &'a mut FileMap,
}

impl Walk<'_> {
    /// Whether `real` (where the link at `path` leads) is below the
    /// directory of the target `path` is in: the catalog's first directory
    /// on the way to it, taken as it is (a link there leads nowhere of its
    /// own).
    fn in_own_target(&self, path: &Path, real: &Path) -> bool {
        let Ok(rel) = path.strip_prefix(self.root) else {
            return false;
        };
        let mut parts = rel.components();
        // A link that is a target's directory itself belongs to none.
        match (parts.next(), parts.next()) {
            (Some(first), Some(_)) => real.starts_with(self.real_root.join(first)),
            _ => false,
        }
    }

    /// Where the link at `path` points, as the diff shows it: an absolute
    /// target inside the catalog is named from the catalog's root
    /// (`<catalog>/b`). A review compiles into a new scratch directory each
    /// run, so `/tmp/strata-review-XXXX/head-catalog/compiled/b` differed
    /// from run to run, and between an incremental and a full review
    /// (re-probe verify23, v-absolute-link-shows-scratch-path).
    fn link_shown(&self, path: &Path) -> String {
        let Ok(target) = std::fs::read_link(path) else {
            return String::new();
        };
        [self.root, self.real_root]
            .iter()
            .find_map(|r| target.strip_prefix(r).ok())
            .filter(|_| target.is_absolute())
            .map(|rel| format!("<catalog>/{}", rel.display()))
            .unwrap_or_else(|| target.display().to_string())
    }

    /// `real` is where `dir` really is: entries that are no symlinks are
    /// resolved from it, not each from the root (that cost each level
    /// every level above it).
    fn dir(&mut self, dir: &Path, real: PathBuf) -> Result<(), DiffError> {
        let io = |path: &Path, e: std::io::Error| DiffError::Io {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        let root = self.root;
        match self.visits.enter(real.clone()) {
            Ok(()) => {}
            Err(crate::fswalk::Refusal::Loop) => return Ok(()),
            Err(why) => {
                return Err(DiffError::Io {
                    path: dir.to_path_buf(),
                    message: why.message("read"),
                })
            }
        }
        for entry in std::fs::read_dir(dir).map_err(|e| io(dir, e))? {
            let entry = entry.map_err(|e| io(dir, e))?;
            let path = entry.path();
            let lmeta = std::fs::symlink_metadata(&path).map_err(|e| io(&path, e))?;
            // A link out of the catalog (or dangling) is shown, never read.
            let link = lmeta.file_type().is_symlink();
            let inner = if link {
                crate::fswalk::inside(&path, self.real_root)
                    .filter(|r| !self.links_within_targets || self.in_own_target(&path, r))
            } else {
                crate::fswalk::real_entry(&real, &path, false).ok()
            };
            let outside = link && inner.is_none();
            let meta = if outside {
                None
            } else {
                Some(std::fs::metadata(&path).map_err(|e| io(&path, e))?)
            };
            if meta.as_ref().is_some_and(|m| m.is_dir()) {
                if let Some(inner) = inner.filter(|_| entry.file_name() != ".git") {
                    self.dir(&path, inner)?;
                }
                continue;
            }
            let rel = path.strip_prefix(root).unwrap_or(&path);
            let parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            let (target, file) = if parts.len() == 1 {
                (".".to_string(), parts[0].clone())
            } else {
                (parts[0].clone(), parts[1..].join("/"))
            };
            let shown = match &meta {
                None if self.links_within_targets => refused(format!(
                    "(symlink to {}: outside the target's directory, not read)",
                    self.link_shown(&path)
                )),
                None => refused(format!(
                    "(symlink to {}: outside the catalog, not read)",
                    self.link_shown(&path)
                )),
                Some(m) if !m.is_file() => refused("(not a regular file, not read)".into()),
                Some(_) => path,
            };
            self.out.insert((target, file), Src::Disk(shown));
        }
        self.visits.leave();
        Ok(())
    }
}

fn read(src: &Src) -> Result<Vec<u8>, DiffError> {
    let path = match src {
        Src::Disk(p) => p,
        Src::Mem(f) => return Ok(f.bytes.clone()),
    };
    if let Some(text) = path.to_str().and_then(|p| p.strip_prefix(REFUSED)) {
        return Ok(format!("{text}\n").into_bytes());
    }
    std::fs::read(path).map_err(|e| DiffError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// A file's content as the comparison sees it.
enum Content {
    /// Parsed YAML/JSON documents with ignored resources and paths removed.
    Docs(Vec<Value>),
    Text(String),
    Binary(Vec<u8>),
}

fn is_structured(path: &str) -> bool {
    let p = path.to_ascii_lowercase();
    p.ends_with(".yaml") || p.ends_with(".yml") || p.ends_with(".json")
}

fn load(path: &str, bytes: Vec<u8>, opts: &DiffOptions) -> Content {
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => return Content::Binary(e.into_bytes()),
    };
    if opts.semantic && is_structured(path) {
        // An alias of a value anchored under a secret key is hidden where it
        // is copied: redaction goes by key, and the alias's key may be neutral.
        let secret_key = |k: &str| opts.redactor.key_matches(k);
        if let Ok(docs) = crate::yaml::load_values_hiding_secret_aliases(
            &strip_boms(&text),
            &secret_key,
            redact::ALIASED,
            redact::ALIASED_UNDER_SECRET,
        ) {
            let docs = docs
                .into_iter()
                .filter(|d| !d.is_null())
                .filter(|d| !opts.ignore_resources.iter().any(|f| f.matches(d)))
                .map(|mut d| {
                    if !opts.ignore_paths.is_empty() {
                        strip_paths(&mut d, "", &opts.ignore_paths);
                    }
                    d
                })
                .collect();
            return Content::Docs(docs);
        }
    }
    Content::Text(text)
}

/// Without the byte-order marks at the start of the file and of its lines
/// (a later document's): Kubernetes' reader drops them, and a `\u{feff}kind`
/// key would hide that the object is a Secret from redaction.
///
/// Text (not parsed) keeps them: a file whose only change is a mark at a
/// line's start differs for the programs that read it (a script's `#!`, the
/// first key of a `.env` or `.conf` line), and the review said `no
/// differences` (verify25, v-bom-only-change-hidden). They are removed only
/// where text is shown and redacted, so a mark before `password=` does not
/// hide the line from redaction.
fn strip_boms(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('\u{feff}') {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(
        text.split_inclusive('\n')
            .map(|l| l.trim_start_matches('\u{feff}'))
            .collect(),
    )
}

/// Removes every field whose path matches one of `res`.
fn strip_paths(v: &mut Value, prefix: &str, res: &[Regex]) {
    match v {
        Value::Map(m) => {
            m.retain(|k, _| {
                let p = join_key(prefix, k);
                !res.iter().any(|r| r.is_match(&p))
            });
            for (k, child) in m.iter_mut() {
                strip_paths(child, &join_key(prefix, k), res);
            }
        }
        Value::List(items) => {
            for (i, child) in items.iter_mut().enumerate() {
                strip_paths(child, &format!("{prefix}[{i}]"), res);
            }
        }
        _ => {}
    }
}

fn join_key(prefix: &str, k: &str) -> String {
    if prefix.is_empty() {
        k.to_string()
    } else {
        format!("{prefix}.{k}")
    }
}

fn same(a: &Content, b: &Content) -> bool {
    match (a, b) {
        (Content::Docs(x), Content::Docs(y)) => x == y,
        (Content::Text(x), Content::Text(y)) => x == y,
        (Content::Binary(x), Content::Binary(y)) => x == y,
        _ => false,
    }
}

fn diff_target(
    olds: &BTreeMap<&str, &Src>,
    news: &BTreeMap<&str, &Src>,
    opts: &DiffOptions,
) -> Result<Vec<FileDiff>, DiffError> {
    // Files are read, parsed and compared in parallel; the results are
    // collected in path order, so the output does not depend on scheduling.
    enum Old<'a> {
        Changed(FileDiff),
        Same,
        Removed(&'a str, Content),
    }
    let olds_v: Vec<(&str, &Src)> = olds.iter().map(|(n, p)| (*n, *p)).collect();
    let compared: Vec<Result<Old, DiffError>> = olds_v
        .par_iter()
        .map(|(name, path)| {
            let old_bytes = read(path)?;
            let Some(np) = news.get(name) else {
                return Ok(Old::Removed(name, load(name, old_bytes, opts)));
            };
            let new_bytes = read(np)?;
            // A script that gains or loses its executable bit is a change
            // (git's `old mode` / `new mode`), whatever its content does.
            let mode = mode_change(path, np);
            let mut objects: Vec<ObjectDiff> = mode.into_iter().collect();
            // The same bytes are the same file: nothing to parse.
            if old_bytes != new_bytes {
                let old = load(name, old_bytes, opts);
                let new = load(name, new_bytes, opts);
                if !same(&old, &new) {
                    objects.extend(diff_content(name, Some(&old), Some(&new), opts));
                }
            }
            Ok(if objects.is_empty() {
                Old::Same
            } else {
                Old::Changed(FileDiff {
                    path: name.to_string(),
                    old_path: None,
                    status: Status::Changed,
                    objects,
                })
            })
        })
        .collect();
    let mut files = Vec::new();
    let mut removed: Vec<(&str, Content)> = Vec::new();
    for r in compared {
        match r? {
            Old::Changed(f) => files.push(f),
            Old::Same => {}
            Old::Removed(n, c) => removed.push((n, c)),
        }
    }
    let added: Vec<(&str, Content)> = news
        .iter()
        .filter(|(n, _)| !olds.contains_key(*n))
        .map(|(n, p)| (*n, *p))
        .collect::<Vec<_>>()
        .par_iter()
        .map(|(name, path)| Ok((*name, load(name, read(path)?, opts))))
        .collect::<Result<_, DiffError>>()?;
    // A removed and an added file with the same content are one rename.
    let mut added_used = vec![false; added.len()];
    for (old_name, old) in &removed {
        let hit = added
            .iter()
            .enumerate()
            .find(|(i, (_, new))| !added_used[*i] && same(old, new));
        match hit {
            Some((i, (new_name, _))) => {
                added_used[i] = true;
                files.push(FileDiff {
                    path: new_name.to_string(),
                    old_path: Some(old_name.to_string()),
                    status: Status::Renamed,
                    objects: Vec::new(),
                });
            }
            None => files.push(FileDiff {
                path: old_name.to_string(),
                old_path: None,
                status: Status::Removed,
                objects: diff_content(old_name, Some(old), None, opts),
            }),
        }
    }
    for (i, (name, new)) in added.iter().enumerate() {
        if !added_used[i] {
            files.push(FileDiff {
                path: name.to_string(),
                old_path: None,
                status: Status::Added,
                objects: diff_content(name, None, Some(new), opts),
            });
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path).then(a.old_path.cmp(&b.old_path)));
    Ok(files)
}

/// Whether a file is executable, as git records it (the one mode bit it
/// keeps); a refused entry (a link out of the catalog) has none.
#[cfg(unix)]
fn executable(src: &Src) -> bool {
    use std::os::unix::fs::PermissionsExt;
    match src {
        Src::Mem(f) => f.executable(),
        Src::Disk(path) => {
            !path.to_string_lossy().starts_with(REFUSED)
                && std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
        }
    }
}

#[cfg(not(unix))]
fn executable(_src: &Src) -> bool {
    false
}

/// The name under which a mode change is listed among a file's objects.
const MODE_CHANGE: &str = "(file mode)";

/// A file whose executable bit differs between the two sides, shown as git
/// shows it.
fn mode_change(old: &Src, new: &Src) -> Option<ObjectDiff> {
    let (a, b) = (executable(old), executable(new));
    if a == b {
        return None;
    }
    let git_mode = |x: bool| if x { "100755" } else { "100644" };
    Some(ObjectDiff {
        name: MODE_CHANGE.to_string(),
        status: Status::Changed,
        added_lines: 0,
        removed_lines: 0,
        diff: format!("old mode {}\nnew mode {}\n", git_mode(a), git_mode(b)),
        changes: Vec::new(),
    })
}

/// The identity of a Kubernetes object.
struct K8sId {
    group: String,
    kind: String,
    namespace: String,
    name: String,
}

impl K8sId {
    fn of(v: &Value) -> Option<K8sId> {
        let m = v.as_map()?;
        let kind = m.get("kind")?.as_str()?;
        let meta = m.get("metadata")?.as_map()?;
        let name = meta.get("name")?.as_str()?;
        let api = m.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let group = api.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
        let namespace = meta.get("namespace").and_then(Value::as_str).unwrap_or("");
        Some(K8sId {
            group: group.into(),
            kind: kind.into(),
            namespace: namespace.into(),
            name: name.into(),
        })
    }

    fn label(&self) -> String {
        if self.namespace.is_empty() {
            format!("{}/{}", self.kind, self.name)
        } else {
            format!("{}/{}/{}", self.kind, self.namespace, self.name)
        }
    }
}

/// Names each document; a name seen twice in one file gets `#2`, `#3`...
fn keyed(docs: &[Value]) -> Vec<(String, &Value)> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    docs.iter()
        .enumerate()
        .map(|(i, d)| {
            let base = K8sId::of(d)
                .map(|id| id.label())
                .unwrap_or_else(|| format!("document {}", i + 1));
            let n = seen.entry(base.clone()).or_insert(0);
            *n += 1;
            let name = if *n == 1 { base } else { format!("{base}#{n}") };
            (name, d)
        })
        .collect()
}

fn diff_content(
    file: &str,
    old: Option<&Content>,
    new: Option<&Content>,
    opts: &DiffOptions,
) -> Vec<ObjectDiff> {
    let file_name = file.rsplit('/').next().unwrap_or(file);
    let structured = matches!(old, Some(Content::Docs(_)) | None)
        && matches!(new, Some(Content::Docs(_)) | None);
    match (old, new) {
        _ if structured => {
            let empty = Vec::new();
            let od = match old {
                Some(Content::Docs(d)) => d,
                _ => &empty,
            };
            let nd = match new {
                Some(Content::Docs(d)) => d,
                _ => &empty,
            };
            diff_docs(od, nd, opts)
        }
        _ => {
            let (ot, nt) = match (old, new) {
                // Redacted together: an anchor one side aliases under a
                // secret key is hidden on both.
                (Some(Content::Text(o)), Some(Content::Text(n))) => opts
                    .redactor
                    .redact_text_pair(Some(&strip_boms(o)), Some(&strip_boms(n))),
                _ => (
                    old.map(|c| text_of(c, true, opts)),
                    new.map(|c| text_of(c, false, opts)),
                ),
            };
            let status = status_of(old.is_some(), new.is_some());
            let a = ot.unwrap_or_default();
            let b = nt.unwrap_or_default();
            if a == b {
                let binary = matches!(old, Some(Content::Binary(_)))
                    || matches!(new, Some(Content::Binary(_)));
                // Differences exist only in what redaction hid, or in bytes.
                let boms_only = match (old, new) {
                    (Some(Content::Text(o)), Some(Content::Text(n))) => {
                        strip_boms(o) == strip_boms(n)
                    }
                    _ => false,
                };
                let note = if binary {
                    "(binary files differ)\n"
                } else if boms_only {
                    "(the change is in byte order marks (U+FEFF) at the start of lines: not shown)\n"
                } else {
                    "(the change is in redacted values: not shown)\n"
                };
                return vec![ObjectDiff {
                    name: file_name.to_string(),
                    status,
                    added_lines: 0,
                    removed_lines: 0,
                    diff: note.into(),
                    changes: Vec::new(),
                }];
            }
            vec![object_diff(file_name.to_string(), status, &a, &b, opts)]
        }
    }
}

fn status_of(old: bool, new: bool) -> Status {
    match (old, new) {
        (false, _) => Status::Added,
        (_, false) => Status::Removed,
        _ => Status::Changed,
    }
}

/// Text shown for a file that is not compared semantically.
/// Parsed documents appear here when the other side of the file did not
/// parse: they are redacted like any object.
fn text_of(c: &Content, old_side: bool, opts: &DiffOptions) -> String {
    match c {
        Content::Binary(b) => format!("(binary file, {} bytes)\n", b.len()),
        Content::Docs(docs) => docs
            .iter()
            .map(|d| {
                let (a, b) = if old_side {
                    opts.redactor.redact_pair(Some(d), None)
                } else {
                    opts.redactor.redact_pair(None, Some(d))
                };
                to_text(if old_side { &a } else { &b })
            })
            .collect::<Vec<_>>()
            .join("---\n"),
        Content::Text(t) => opts.redactor.redact_text(&strip_boms(t)),
    }
}

fn diff_docs(old: &[Value], new: &[Value], opts: &DiffOptions) -> Vec<ObjectDiff> {
    let ok = keyed(old);
    let nk = keyed(new);
    let mut out = Vec::new();
    let old_map: BTreeMap<&str, &Value> = ok.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    let new_map: BTreeMap<&str, &Value> = nk.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    // Objects in the new file's order, then removed objects in the old order.
    for (name, nv) in &nk {
        match old_map.get(name.as_str()) {
            Some(ov) if *ov == *nv => {}
            Some(ov) => {
                let (a, b) = opts.redactor.redact_pair(Some(ov), Some(nv));
                let changes = groups::changes(&a, &b).unwrap_or_default();
                let a = to_text(&align(&a, &b));
                let b = to_text(&b);
                let mut d = object_diff(name.clone(), Status::Changed, &a, &b, opts);
                // A change only redaction saw has no visible leaf: its
                // diff is its description.
                if d.added_lines + d.removed_lines > 0 {
                    d.changes = changes;
                }
                out.push(d);
            }
            None => {
                let (_, b) = opts.redactor.redact_pair(None, Some(nv));
                let b = to_text(&b);
                out.push(object_diff(name.clone(), Status::Added, "", &b, opts));
            }
        }
    }
    for (name, ov) in &ok {
        if !new_map.contains_key(name.as_str()) {
            let (a, _) = opts.redactor.redact_pair(Some(ov), None);
            let a = to_text(&a);
            out.push(object_diff(name.clone(), Status::Removed, &a, "", opts));
        }
    }
    out
}

/// Orders `old`'s map keys like `new`'s, so that a key moved in the file
/// does not show up as removed and added in the text diff.
fn align(old: &Value, new: &Value) -> Value {
    match (old, new) {
        (Value::Map(o), Value::Map(n)) => {
            let mut m = Map::with_capacity_and_hasher(o.len(), Default::default());
            for (k, nv) in n {
                if let Some(ov) = o.get(k) {
                    m.insert(k.clone(), align(ov, nv));
                }
            }
            for (k, ov) in o {
                if !n.contains_key(k) {
                    m.insert(k.clone(), ov.clone());
                }
            }
            Value::Map(m)
        }
        (Value::List(o), Value::List(n)) => Value::List(
            o.iter()
                .enumerate()
                .map(|(i, ov)| match n.get(i) {
                    Some(nv) => align(ov, nv),
                    None => ov.clone(),
                })
                .collect(),
        ),
        _ => old.clone(),
    }
}

/// Canonical YAML of a redacted value; placeholders are shown unquoted so
/// they read as markers, not as values.
fn to_text(v: &Value) -> String {
    let mut s = crate::yaml::emit::to_yaml_string(v);
    for p in [
        redact::CHANGED,
        redact::UNCHANGED,
        redact::OLD,
        redact::ALIASED,
        redact::ALIASED_UNDER_SECRET,
    ] {
        s = s
            .replace(&format!("\"{p}\""), p)
            .replace(&format!("'{p}'"), p);
    }
    s
}

/// Time the line diffs of one process may take in all, and one file at
/// most. Past it a diff is still correct but less minimal (whole blocks
/// replaced): a review of a pull request that rewrites many large files
/// took 10 s per file (50 files: minutes).
const DIFF_TIME_TOTAL: std::time::Duration = std::time::Duration::from_secs(30);
const DIFF_TIME_PER_FILE: std::time::Duration = std::time::Duration::from_secs(10);

/// What is left of [`DIFF_TIME_TOTAL`], counted from the first diff.
fn diff_time_left() -> std::time::Duration {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let start = START.get_or_init(std::time::Instant::now);
    DIFF_TIME_TOTAL
        .saturating_sub(start.elapsed())
        .min(DIFF_TIME_PER_FILE)
}

fn object_diff(name: String, status: Status, a: &str, b: &str, opts: &DiffOptions) -> ObjectDiff {
    // A deadline keeps pathological inputs (huge generated files) from
    // stalling a review; past it the diff is correct but less minimal.
    let td = similar::TextDiff::configure()
        .timeout(diff_time_left())
        .diff_lines(a, b);
    let mut added = 0;
    let mut removed = 0;
    for c in td.iter_all_changes() {
        match c.tag() {
            similar::ChangeTag::Insert => added += 1,
            similar::ChangeTag::Delete => removed += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    let mut diff = String::new();
    for hunk in td
        .unified_diff()
        .context_radius(opts.context)
        .missing_newline_hint(false)
        .iter_hunks()
    {
        diff.push_str(&hunk.to_string());
    }
    ObjectDiff {
        name,
        status,
        added_lines: added,
        removed_lines: removed,
        diff,
        changes: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs(s: &str) -> Vec<Value> {
        crate::yaml::load_values(s).unwrap()
    }

    /// Probe 44: a revision past a checkout limit, or holding a refused
    /// name, exists; only a missing revision or object is told to fetch.
    #[test]
    fn only_missing_revisions_are_told_to_fetch() {
        use crate::diagnostics::ToDiagnostic;
        let hints = |message: &str| {
            DiffError::Git {
                rev: "abc".into(),
                message: message.into(),
            }
            .to_diagnostic()
            .hints
        };
        let fetch = "pass a branch, tag or commit that exists in the repository (fetch it first in CI: `fetch-depth: 0`)";
        assert_eq!(hints("not a commit in ."), [fetch]);
        assert_eq!(hints("cannot read tree 0123: object not found"), [fetch]);
        for message in [
            "the revision holds more than 200000 files (at `f0200000`): a review checks out at most that many (STRATA_CHECKOUT_FILES)",
            "`zz/d/d` nests directories more than 256 levels deep: a review checks out no deeper tree",
            "the tree holds an unsafe file name \"..\" in `a`; nothing was written from it",
        ] {
            assert!(hints(message).is_empty(), "{message}");
        }
    }

    #[test]
    fn key_order_and_formatting_are_not_differences() {
        let a =
            docs("kind: ConfigMap\nmetadata: {name: a, namespace: n}\ndata: {x: '1', y: '2'}\n");
        let b = docs("metadata:\n  namespace: n\n  name: a\nkind: ConfigMap\ndata:\n  y: \"2\"\n  x: \"1\"\n");
        assert!(diff_docs(&a, &b, &DiffOptions::default()).is_empty());
    }

    #[test]
    fn names_changed_objects_and_shows_unified_diff() {
        let a = docs("kind: ConfigMap\nmetadata: {name: a, namespace: n}\ndata: {x: '1'}\n---\nkind: Namespace\nmetadata: {name: n}\n");
        let b = docs("kind: ConfigMap\nmetadata: {name: a, namespace: n}\ndata: {x: '2'}\n---\nkind: Namespace\nmetadata: {name: n}\n");
        let d = diff_docs(&a, &b, &DiffOptions::default());
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].name, "ConfigMap/n/a");
        assert_eq!((d[0].added_lines, d[0].removed_lines), (1, 1));
        assert!(d[0].diff.contains("-  x: '1'") || d[0].diff.contains("-  x: \"1\""));
        assert!(d[0].diff.starts_with("@@"));
    }

    #[test]
    fn ignore_path_and_resource() {
        let o = DiffOptions {
            ignore_paths: DiffOptions::ignore_path_regexes(&[
                "^metadata\\.annotations\\.build$".into()
            ])
            .unwrap(),
            ignore_resources: vec![ResourceFilter::parse("apps:Deployment:w*").unwrap()],
            ..Default::default()
        };
        let a = load("f.yaml", b"kind: Service\nmetadata: {name: s, annotations: {build: '1'}}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: 1\n".to_vec(), &o);
        let b = load("f.yaml", b"kind: Service\nmetadata: {name: s, annotations: {build: '2'}}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: 2\n".to_vec(), &o);
        assert!(same(&a, &b));
        assert!(ResourceFilter::parse("Deployment").is_err());
    }

    #[test]
    fn walk_survives_a_symlink_loop_and_names_root_files() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("t");
        std::fs::create_dir_all(&t).unwrap();
        std::fs::write(t.join("a.yaml"), "x: 1\n").unwrap();
        std::fs::write(dir.path().join("top.txt"), "x\n").unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(dir.path(), t.join("loop")).unwrap();
            // Two targets sharing one directory both see its files.
            std::fs::create_dir_all(dir.path().join("shared")).unwrap();
            std::fs::write(dir.path().join("shared/s.yaml"), "s: 1\n").unwrap();
            std::os::unix::fs::symlink(dir.path().join("shared"), t.join("s")).unwrap();
        }
        let files = walk(dir.path(), false).unwrap();
        let keys: Vec<_> = files.keys().cloned().collect();
        #[cfg(unix)]
        {
            assert!(keys.contains(&("t".into(), "s/s.yaml".into())), "{keys:?}");
            assert!(
                keys.contains(&("shared".into(), "s.yaml".into())),
                "{keys:?}"
            );
            assert!(
                !keys.iter().any(|(_, f)| f.starts_with("loop/")),
                "{keys:?}"
            );
        }
        assert!(keys.contains(&("t".into(), "a.yaml".into())), "{keys:?}");
        assert!(keys.contains(&(".".into(), "top.txt".into())), "{keys:?}");
        // A review's diff (probe 33): a link into another target's
        // directory is shown, not read; one within its own is read.
        #[cfg(unix)]
        {
            std::fs::create_dir_all(t.join("own")).unwrap();
            std::fs::write(t.join("own/o.yaml"), "o: 1\n").unwrap();
            std::os::unix::fs::symlink("own", t.join("mine")).unwrap();
            let files = walk(dir.path(), true).unwrap();
            let keys: Vec<_> = files.keys().cloned().collect();
            assert!(
                keys.contains(&("t".into(), "mine/o.yaml".into())),
                "{keys:?}"
            );
            assert!(keys.contains(&("t".into(), "s".into())), "{keys:?}");
            assert!(
                !keys.iter().any(|(t, f)| t == "t" && f.starts_with("s/")),
                "{keys:?}"
            );
            let shown =
                String::from_utf8(read(&files[&("t".to_string(), "s".to_string())]).unwrap())
                    .unwrap();
            assert!(shown.contains("outside the target's directory"), "{shown}");
        }
    }

    /// Re-probe verify23 (v-absolute-link-shows-scratch-path): an absolute
    /// link into another target's directory was shown with the review's
    /// scratch directory, different on every run.
    #[cfg(unix)]
    #[test]
    fn an_absolute_link_into_the_catalog_is_shown_from_its_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a")).unwrap();
        std::fs::create_dir_all(dir.path().join("b")).unwrap();
        std::fs::write(dir.path().join("b/y.yml"), "w: 1\n").unwrap();
        std::os::unix::fs::symlink(dir.path().join("b"), dir.path().join("a/abs")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", dir.path().join("a/out")).unwrap();
        for within in [true, false] {
            let files = walk(dir.path(), within).unwrap();
            let shown = |f: &str| {
                read(&files[&("a".to_string(), f.to_string())])
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap()
            };
            if within {
                assert_eq!(
                    shown("abs"),
                    "(symlink to <catalog>/b: outside the target's directory, not read)\n"
                );
            }
            assert_eq!(
                shown("out"),
                format!(
                    "(symlink to /etc/hostname: outside the {}, not read)\n",
                    if within {
                        "target's directory"
                    } else {
                        "catalog"
                    }
                )
            );
        }
    }

    /// Fix9 (re-probe 13/14's deep-walk cost): the catalog walk resolves
    /// its root and symlinks, not each directory from the root (which cost
    /// each level every level above it).
    #[cfg(unix)]
    #[test]
    fn the_catalog_walk_resolves_only_its_root_and_links() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("c");
        let deep = crate::fswalk::tests::chain(&root.join("t"), 40);
        std::os::unix::fs::symlink(&deep, root.join("t/link")).unwrap();
        let mut files = FileMap::new();
        let n = crate::fswalk::counted::resolutions_below(dir.path(), || {
            files = walk(&root, false).unwrap();
        });
        let keys: Vec<_> = files.keys().map(|(t, f)| format!("{t}:{f}")).collect();
        assert_eq!(keys.len(), 2, "{keys:?}");
        assert!(keys[0].starts_with("t:d/d/") && keys[0].ends_with("/x.txt"));
        assert_eq!(keys[1], "t:link/x.txt");
        assert!(n <= 3, "the catalog walk resolved {n} paths");
    }

    /// Re-probe 7: a file whose only change is its executable bit was
    /// "no catalog changes"; git shows `old mode` / `new mode`.
    #[cfg(unix)]
    #[test]
    fn a_mode_change_is_a_change() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let side = |name: &str, mode: u32, text: &str| {
            let t = dir.path().join(name).join("t");
            std::fs::create_dir_all(&t).unwrap();
            std::fs::write(t.join("run.sh"), text).unwrap();
            std::fs::set_permissions(t.join("run.sh"), std::fs::Permissions::from_mode(mode))
                .unwrap();
            std::fs::write(t.join("cm.yaml"), "x: 1\n").unwrap();
            dir.path().join(name)
        };
        let o = DiffOptions::default();
        let (a, b) = (side("a", 0o644, "echo\n"), side("b", 0o755, "echo\n"));
        let d = diff_dirs(&a, &b, &o).unwrap();
        assert_eq!(d.summary.files_changed, 1);
        let f = &d.targets[0].files[0];
        assert_eq!((f.path.as_str(), f.objects.len()), ("run.sh", 1));
        assert_eq!(f.objects[0].diff, "old mode 100644\nnew mode 100755\n");
        // Losing the bit along with a content change: both are shown.
        let c = side("c", 0o600, "echo 2\n");
        let d = diff_dirs(&b, &c, &o).unwrap();
        let f = &d.targets[0].files[0];
        assert_eq!(f.objects.len(), 2, "{f:?}");
        assert_eq!(f.objects[0].diff, "old mode 100755\nnew mode 100644\n");
        // Other permission bits are not tracked (as in git).
        let e = side("e", 0o600, "echo\n");
        assert!(diff_dirs(&a, &e, &o).unwrap().is_empty());
    }

    #[test]
    fn binary_files_differ_without_content() {
        let o = DiffOptions::default();
        let a = load("b.bin", vec![0, 159, 146, 150], &o);
        let b = load("b.bin", vec![0, 159, 146, 151], &o);
        assert!(!same(&a, &b));
        let d = diff_content("b.bin", Some(&a), Some(&b), &o);
        assert_eq!(d[0].diff, "(binary files differ)\n");
    }

    #[test]
    fn a_secret_that_stops_parsing_is_still_redacted() {
        let o = DiffOptions::default();
        let a = load(
            "s.yaml",
            b"kind: Secret\nmetadata: {name: s}\ndata: {password: aHVudGVyMg==}\n".to_vec(),
            &o,
        );
        let b = load(
            "s.yaml",
            b"kind: Secret\nmetadata: {name: s}\ndata: {password: bmV3c2VjcmV0\n".to_vec(),
            &o,
        );
        assert!(matches!(b, Content::Text(_)), "the new side does not parse");
        for (x, y) in [(Some(&a), Some(&b)), (Some(&b), Some(&a)), (None, Some(&b))] {
            let d = diff_content("s.yaml", x, y, &o);
            let text: String = d.iter().map(|o| o.diff.as_str()).collect();
            assert!(
                !text.contains("aHVudGVyMg") && !text.contains("bmV3c2VjcmV0"),
                "{text}"
            );
        }
    }

    #[test]
    fn a_change_in_byte_order_marks_alone_is_a_change() {
        let o = DiffOptions::default();
        let a = load("run.sh", b"#!/bin/sh\necho hi\n".to_vec(), &o);
        let b = load("run.sh", "\u{feff}#!/bin/sh\necho hi\n".into(), &o);
        assert!(!same(&a, &b));
        let d = diff_content("run.sh", Some(&a), Some(&b), &o);
        assert_eq!(
            d[0].diff,
            "(the change is in byte order marks (U+FEFF) at the start of lines: not shown)\n"
        );
        // Parsed YAML still drops them, as Kubernetes' reader does.
        let y = load("c.yaml", b"a: 1\n".to_vec(), &o);
        let z = load("c.yaml", "\u{feff}a: 1\n".into(), &o);
        assert!(same(&y, &z));
        // And a mark before a secret's line does not keep it from redaction.
        let p = load("app.env", b"DB_PASSWORD=hunter2secret\n".to_vec(), &o);
        let q = load("app.env", "\u{feff}DB_PASSWORD=n3wsecretvalue\n".into(), &o);
        let text: String = diff_content("app.env", Some(&p), Some(&q), &o)
            .iter()
            .map(|o| o.diff.clone())
            .collect();
        assert!(
            !text.contains("hunter2secret") && !text.contains("n3wsecretvalue"),
            "{text}"
        );
    }

    #[test]
    fn duplicate_names_get_a_suffix() {
        let d =
            docs("kind: A\nmetadata: {name: x}\n---\nkind: A\nmetadata: {name: x}\n---\nfoo: 1\n");
        let names: Vec<_> = keyed(&d).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["A/x", "A/x#2", "document 3"]);
    }
}
