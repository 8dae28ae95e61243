//! The reclass-compatible inventory engine: class and target discovery,
//! depth-first class inclusion (relative names, `${...}` in class names,
//! opt-in wildcard patterns), deep merge with `~`/`=` key prefixes, and late
//! reference resolution. Semantics follow reclass-rs (what Commodore uses);
//! see the README's compatibility section for where strata differs.
//!
//! Class files are read and parsed at most once per run (lazily, on first
//! use, shared by all targets); targets render in parallel.

pub mod checks;
pub mod class_mapping;
pub mod closure;
pub mod config;
mod discover;
pub mod error;
pub mod locate;
pub mod refs;
pub mod resolve;
pub mod uvalue;

pub use error::InventoryError;

use crate::value::{Map, Value};
use discover::Entity;
use indexmap::IndexSet;
use rayon::prelude::*;
use refs::Template;
use resolve::{raw_string, Resolver};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use uvalue::{merge_maps, MergeConflict, Origin, UEntry, UMap, UValue};

/// How to read an inventory; flags and config files fill it in.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InventoryOptions {
    pub path: PathBuf,
    pub enable_class_wildcards: bool,
    pub ignore_class_notfound: bool,
    pub ignore_class_notfound_regexp: Vec<String>,
    pub compose_node_name: bool,
    /// Commodore's documented `applications` rule: `~app` removes only an
    /// `app` added earlier (kapicorp-reclass), instead of reclass-rs's
    /// remembered negation that also keeps a later `app` out.
    pub applications_negate_earlier_only: bool,
    /// Class and target files (and the directories holding them) must lie
    /// in this directory once symlinks are resolved: a review lints the
    /// working tree, where a pull request's committed symlink to
    /// `/etc/shadow` is a real link.
    pub confine: Option<PathBuf>,
    /// With `confine`, more directories class and target files may
    /// resolve into: a package compile links the package (in the checkout)
    /// into its scratch inventory (in a temporary directory).
    pub confine_also: Vec<PathBuf>,
}

/// What the rendered parameters and exports of the targets of one render
/// may take together, counted as reference expansion counts (string bytes
/// plus 32 per node, about half of what they take in memory):
/// `STRATA_RENDER_MEMORY` bytes, or 1 GiB.
pub fn render_limit() -> usize {
    usize::try_from(crate::limits::get(
        "STRATA_RENDER_MEMORY",
        DEFAULT_RENDER_LIMIT as u64,
    ))
    .unwrap_or(usize::MAX)
}

/// See [`render_limit`]. The bench's generated platform (`bench/platform.sh`:
/// ~3,400 parameters per target) counts 175 KB per target and peaks at
/// 0.6 GB for 1,000 targets: the default is about 6,000 such targets, in
/// about 3.5 GB.
pub const DEFAULT_RENDER_LIMIT: usize = 1 << 30;

fn rendered_size(node: &RenderedNode) -> usize {
    resolve::value_size(&node.parameters)
        .0
        .saturating_add(resolve::value_size(&node.exports).0)
}

/// The top-level parameter that takes the most (the first by name among
/// equals), and its size, for the error.
fn largest_parameter(parameters: &Value) -> (String, usize) {
    let mut best = (String::new(), 0);
    if let Value::Map(m) = parameters {
        let mut keys: Vec<&String> = m.keys().collect();
        keys.sort();
        for k in keys {
            let size = resolve::value_size(&m[k.as_str()]).0;
            if size > best.1 {
                best = (k.clone(), size);
            }
        }
    }
    best
}

/// One rendered target.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RenderedNode {
    #[serde(skip)]
    pub name: String,
    pub classes: Vec<String>,
    pub applications: Vec<String>,
    pub parameters: Value,
    pub exports: Value,
    pub environment: String,
    /// What rendering it read of the inventory (its class closure).
    #[serde(skip)]
    pub sources: closure::Sources,
}

/// A class or target file after parsing.
#[derive(Debug)]
struct EntityFile {
    file: u32,
    /// Dotted directory that relative class names start from.
    loc: String,
    includes: Vec<Include>,
    /// The `classes` list as reported: absolute names, `${...}` entries as
    /// written, wildcard patterns expanded. May repeat names (a pattern's
    /// matches are not filtered against the file's other entries): the
    /// target's list keeps first occurrences.
    listed: Vec<Listed>,
    apps: AppList,
    parameters: UMap,
    exports: UMap,
    /// Top-level keys that are no reclass key and no near-miss of one:
    /// Kapitan and reclass-rs ignore them (and real inventories have them),
    /// so only lint reports them. Near-misses are errors at parse time.
    unknown_keys: Vec<InventoryError>,
    /// The `classes` list has a wildcard pattern (its matches depend on
    /// which class files exist).
    patterns: bool,
}

#[derive(Debug)]
enum Include {
    /// A class name and the line of the `classes` entry it came from.
    Name(String, usize),
    Interpolated(Template, Origin),
    /// A wildcard pattern's matches, in order, and the entry's line.
    Pattern(Arc<Expansion>, usize),
}

/// An entry of a file's reported `classes` list.
#[derive(Debug)]
enum Listed {
    Name(String),
    Pattern(Arc<Expansion>),
}

/// The class names one wildcard pattern matches. Computed once per
/// inventory and shared by every file that lists the pattern, so that N
/// files repeating a pattern with N matches cost N + N, not N * N.
#[derive(Debug)]
struct Expansion {
    /// Unique within the inventory: lets a target skip a repeat of an
    /// expansion it has already walked.
    id: usize,
    /// Indexes into `Inventory::wildcard_names` (so sorted by code point):
    /// 4 bytes a match, as many distinct patterns can each match many.
    names: Vec<u32>,
    /// Some match looks like a `${...}` entry, so it could equal a file's
    /// interpolated entry as written: such expansions are stored per file,
    /// filtered like any other entry, to keep the old first-occurrence rule.
    templated: bool,
}

/// reclass-rs's removable list: `~app` removes an application, and is
/// remembered so that the application stays out when it is added later.
#[derive(Debug, Clone, Default)]
struct AppList {
    items: OrderedSet,
    negations: OrderedSet,
    /// The file's entries as written, for the earlier-only rule.
    raw: Vec<String>,
}

/// Names in insertion order with constant-time look-up and removal (a
/// removed name leaves a hole): 20,000 `applications` entries in one class
/// took seconds per target with a `Vec` searched for every entry.
#[derive(Debug, Clone, Default)]
struct OrderedSet {
    slots: Vec<Option<String>>,
    index: HashMap<String, usize>,
}

impl OrderedSet {
    fn contains(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    fn remove(&mut self, name: &str) -> bool {
        match self.index.remove(name) {
            Some(i) => {
                self.slots[i] = None;
                true
            }
            None => false,
        }
    }

    fn push(&mut self, name: &str) {
        if !self.contains(name) {
            self.index.insert(name.to_string(), self.slots.len());
            self.slots.push(Some(name.to_string()));
        }
    }

    fn iter(&self) -> impl Iterator<Item = &String> {
        self.slots.iter().flatten()
    }

    fn into_vec(self) -> Vec<String> {
        self.slots.into_iter().flatten().collect()
    }
}

impl AppList {
    fn negate(&mut self, name: &str) {
        if !self.items.remove(name) {
            self.negations.push(name);
        }
    }

    fn add(&mut self, item: &str) {
        self.raw.push(item.to_string());
        if let Some(neg) = item.strip_prefix('~') {
            self.negate(neg);
        } else if !self.negations.remove(item) {
            self.items.push(item);
        }
    }

    /// Applies another file's entries in order: `~app` removes an `app`
    /// already present, nothing more.
    fn merge_earlier_only(&mut self, other: &AppList) {
        for entry in &other.raw {
            match entry.strip_prefix('~') {
                Some(neg) => {
                    self.items.remove(neg);
                }
                None => self.items.push(entry),
            }
        }
    }

    fn merge(&mut self, other: &AppList) {
        for n in other.negations.iter() {
            self.negate(n);
        }
        for i in other.items.iter() {
            self.add(i);
        }
    }
}

struct ClassSlot {
    entity: Entity,
    parsed: Parsed,
}

/// A class or target file's parse, made once.
type Parsed = OnceLock<Result<Arc<EntityFile>, InventoryError>>;

/// A discovered inventory. Cheap to share across threads.
pub struct Inventory {
    opts: InventoryOptions,
    /// Every file that can appear in an `Origin`: classes first, then targets.
    files: Vec<PathBuf>,
    /// Each file's place among `files` sorted by path: a target's sources
    /// are gathered by index and sorted by this, not by comparing paths
    /// (that took as many instructions as merging the classes).
    file_rank: Vec<u32>,
    classes: Vec<ClassSlot>,
    class_index: HashMap<String, usize, ahash::RandomState>,
    /// Class names wildcard patterns can match, sorted by code point.
    wildcard_names: Vec<String>,
    /// Each distinct pattern's matches, filled as class files are parsed
    /// (in parallel, hence the lock).
    expansions: Mutex<HashMap<String, Arc<Expansion>>>,
    /// Each target's file, its index in `files` and its parse, made once
    /// (a review's lint reads every target file after rendering them).
    targets: BTreeMap<String, (Entity, u32, Parsed)>,
    ignore_regexps: Vec<regex::Regex>,
    class_mappings: Vec<class_mapping::ClassMapping>,
    class_mappings_match_path: bool,
    class_mapping_lines: Vec<usize>,
    /// `reclass-config.yml`'s index in `files`, for errors in mapped classes.
    config_file: u32,
    classes_dir: PathBuf,
    targets_dir: PathBuf,
    warnings: Vec<config::ConfigWarning>,
    /// Parses shared with another inventory holding mostly the same files.
    texts: Option<Arc<crate::yaml::TextCache>>,
    /// Reference look-ups of every target rendered, against
    /// [`resolve::max_render_lookups`].
    lookups: std::sync::atomic::AtomicUsize,
}

impl Inventory {
    /// Discovers classes and targets. Class files are parsed later, once.
    pub fn load(opts: &InventoryOptions) -> Result<Inventory, InventoryError> {
        let mut opts = opts.clone();
        let dir = &opts.path.clone();
        if !dir.is_dir() {
            return Err(InventoryError::NoInventory { path: dir.clone() });
        }
        // Confined like the class files: a `reclass-config.yml` linked to a
        // file outside showed its lines in a review's lint findings.
        if let Some(root) = opts.confine.as_deref() {
            let config = dir.join("reclass-config.yml");
            if std::fs::symlink_metadata(&config).is_ok() {
                let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
                discover::check_inside(&config, &root)?;
            }
        }
        let cfg = config::ReclassConfig::load(dir)?;
        cfg.apply(&mut opts);
        let classes_dir = dir.join(cfg.classes_uri.as_deref().unwrap_or("classes"));
        let targets_dir = match cfg.nodes_uri.as_deref() {
            Some(n) => dir.join(n),
            None if !dir.join("targets").is_dir() && dir.join("nodes").is_dir() => {
                dir.join("nodes")
            }
            None => dir.join("targets"),
        };
        let roots: Vec<PathBuf> = match &opts.confine {
            Some(c) => std::iter::once(c.clone())
                .chain(opts.confine_also.iter().cloned())
                .collect(),
            None => Vec::new(),
        };
        let class_entities = discover::walk(&classes_dir, discover::Kind::Class, false, &roots)?;
        let target_entities = discover::walk(
            &targets_dir,
            discover::Kind::Target,
            opts.compose_node_name,
            &roots,
        )?;

        let mut files = Vec::with_capacity(class_entities.len() + target_entities.len());
        let mut classes = Vec::with_capacity(class_entities.len());
        let mut class_index =
            HashMap::with_capacity_and_hasher(class_entities.len(), ahash::RandomState::default());
        let mut wildcard_names = Vec::new();
        for e in class_entities {
            files.push(e.path.clone());
            class_index.insert(e.name.clone(), classes.len());
            if !e.hidden && !e.name.is_empty() {
                wildcard_names.push(e.name.clone());
            }
            classes.push(ClassSlot {
                entity: e,
                parsed: OnceLock::new(),
            });
        }
        wildcard_names.sort();
        let mut targets = BTreeMap::new();
        for e in target_entities {
            let idx = files.len() as u32;
            files.push(e.path.clone());
            targets.insert(e.name.clone(), (e, idx, OnceLock::new()));
        }
        let ignore_regexps = opts
            .ignore_class_notfound_regexp
            .iter()
            .map(|r| {
                regex::RegexBuilder::new(r)
                    .size_limit(class_mapping::MAX_REGEX_SIZE)
                    .dfa_size_limit(class_mapping::MAX_REGEX_SIZE)
                    .build()
                    .map_err(|e| InventoryError::BadRegex {
                        regex: r.clone(),
                        message: e.to_string(),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let config_path = dir.join("reclass-config.yml");
        let regexes: Vec<&String> = cfg
            .class_mappings
            .iter()
            .filter(|m| m.trim_start().starts_with('/'))
            .collect();
        class_mapping::check_regex_matches(targets.len(), &regexes, &config_path)?;
        let backtrack = class_mapping::backtrack_limit(targets.len(), regexes.len());
        let class_mappings = cfg
            .class_mappings
            .iter()
            .map(|s| class_mapping::ClassMapping::parse(s, &config_path, backtrack))
            .collect::<Result<Vec<_>, _>>()?;
        let config_file = files.len() as u32;
        files.push(config_path);
        let mut by_path: Vec<u32> = (0..files.len() as u32).collect();
        by_path.sort_by(|a, b| files[*a as usize].cmp(&files[*b as usize]));
        let mut file_rank = vec![0u32; files.len()];
        for (rank, i) in by_path.into_iter().enumerate() {
            file_rank[i as usize] = rank as u32;
        }
        Ok(Inventory {
            opts,
            files,
            file_rank,
            classes,
            class_index,
            wildcard_names,
            expansions: Mutex::new(HashMap::new()),
            targets,
            ignore_regexps,
            class_mappings,
            class_mappings_match_path: cfg.class_mappings_match_path,
            class_mapping_lines: cfg.class_mapping_lines,
            config_file,
            classes_dir,
            targets_dir,
            warnings: cfg.warnings,
            texts: None,
            lookups: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// Parses its files through `texts`, which another inventory of the
    /// same tree (a review's other revision) shares: each text they both
    /// hold is parsed once.
    pub fn share_parses(&mut self, texts: Arc<crate::yaml::TextCache>) {
        self.texts = Some(texts);
    }

    /// Warnings about the configuration (unknown `reclass-config.yml`
    /// keys), each naming file and key, sorted.
    pub fn warnings(&self) -> &[config::ConfigWarning] {
        &self.warnings
    }

    /// The classes `class_mappings` gives a target, in reclass's order,
    /// each with the index of the entry that mapped it.
    pub fn mapped_classes(&self, name: &str) -> Result<Vec<(String, usize)>, InventoryError> {
        let mut out = Vec::new();
        if self.class_mappings.is_empty() {
            return Ok(out);
        }
        let Some((entity, _, _)) = self.targets.get(name) else {
            return Ok(out);
        };
        let matchname = if self.class_mappings_match_path {
            let rel = entity
                .path
                .strip_prefix(&self.targets_dir)
                .unwrap_or(&entity.path)
                .with_extension("");
            rel.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/")
        } else {
            name.to_string()
        };
        let config = &self.files[self.config_file as usize];
        let mut seen = std::collections::HashSet::new();
        for (i, cm) in self.class_mappings.iter().enumerate() {
            let mut classes = Vec::new();
            cm.append_if_matches(&matchname, &mut classes, config)?;
            for c in classes {
                if seen.insert(c.clone()) {
                    out.push((c, i));
                }
            }
        }
        Ok(out)
    }

    /// The effective options (flags merged with `reclass-config.yml`).
    pub fn options(&self) -> &InventoryOptions {
        &self.opts
    }

    /// All target names, sorted.
    pub fn target_names(&self) -> Vec<String> {
        self.targets.keys().cloned().collect()
    }

    /// The file a target is defined in.
    pub fn target_file(&self, name: &str) -> Option<&Path> {
        self.targets.get(name).map(|(e, _, _)| e.path.as_path())
    }

    /// All class names and their files, sorted by name.
    pub fn class_files(&self) -> Vec<(String, PathBuf)> {
        let mut v: Vec<_> = self
            .classes
            .iter()
            .map(|c| (c.entity.name.clone(), c.entity.path.clone()))
            .collect();
        v.sort();
        v
    }

    /// Parses every class and target file (used or not) and returns every
    /// problem found, sorted by file: for linting, where one error per run
    /// is not enough.
    pub fn check_files(&self) -> Vec<InventoryError> {
        let problems = |r: Result<Arc<EntityFile>, InventoryError>| match r {
            Ok(f) => f.unknown_keys.clone(),
            Err(e) => vec![e],
        };
        let mut errors: Vec<InventoryError> = (0..self.classes.len())
            .into_par_iter()
            .flat_map_iter(|i| problems(self.class_file(i)))
            .collect();
        errors.extend(
            self.targets
                .values()
                .flat_map(|t| problems(self.target_file_parsed(t))),
        );
        errors.sort_by_key(|e| e.to_string());
        errors
    }

    /// Renders the given targets (all when empty), in parallel. The first
    /// error in target order is returned, so failures are deterministic.
    pub fn render(
        &self,
        targets: &[String],
    ) -> Result<BTreeMap<String, RenderedNode>, InventoryError> {
        let names: Vec<String> = if targets.is_empty() {
            self.target_names()
        } else {
            let mut names = Vec::with_capacity(targets.len());
            for t in targets {
                if !self.targets.contains_key(t) {
                    return Err(InventoryError::UnknownTarget {
                        name: t.clone(),
                        known: self.target_names(),
                    });
                }
                names.push(t.clone());
            }
            names.sort();
            names.dedup();
            names
        };
        let mut out = BTreeMap::new();
        for (_, r) in self.render_many(&names) {
            let node = r?;
            out.insert(node.name.clone(), node);
        }
        Ok(out)
    }

    /// Renders every target on its own, in parallel, keeping each result:
    /// a broken class only fails the targets whose closure includes it.
    pub fn render_each(&self) -> BTreeMap<String, Result<RenderedNode, InventoryError>> {
        self.render_many(&self.target_names()).collect()
    }

    /// Renders `names` (sorted, distinct) in parallel, holding their
    /// rendered parameters together to [`render_limit`]: each target is
    /// held to the reference expansion limit, but a class that copies a
    /// large value (its own, or one references built) into every target
    /// would otherwise take that many times the memory.
    ///
    /// Sizes are added up in name order, so the target that crosses the
    /// limit is the same on every run; the targets after it are not
    /// rendered. Targets are rendered in slices; inside a slice, no target
    /// starts once those rendered (in any order) pass the limit, so at most
    /// one target per thread is held past it, and the ones left out are
    /// then rendered one at a time, in order, to find the target that
    /// crosses.
    pub fn render_many<'n>(
        &'n self,
        names: &'n [String],
    ) -> impl Iterator<Item = (String, Result<RenderedNode, InventoryError>)> + 'n {
        const SLICE: usize = 64;
        let limit = render_limit();
        let mut total = 0usize;
        names.chunks(SLICE).flat_map(move |slice| {
            type Sized = Option<(Result<RenderedNode, InventoryError>, usize)>;
            let render = |n: &String| -> (Result<RenderedNode, InventoryError>, usize) {
                match self.render_target(n) {
                    Ok(node) => {
                        let size = rendered_size(&node);
                        (Ok(node), size)
                    }
                    Err(e) => (Err(e.in_target(n)), 0),
                }
            };
            let seen = std::sync::atomic::AtomicUsize::new(total);
            let rendered: Vec<Sized> = if total > limit {
                slice.iter().map(|_| None).collect()
            } else {
                slice
                    .par_iter()
                    .map(|n| {
                        if seen.load(std::sync::atomic::Ordering::Relaxed) > limit {
                            return None;
                        }
                        let (r, size) = render(n);
                        seen.fetch_add(size, std::sync::atomic::Ordering::Relaxed);
                        Some((r, size))
                    })
                    .collect()
            };
            let mut out = Vec::with_capacity(slice.len());
            for (n, r) in slice.iter().zip(rendered) {
                if total > limit {
                    out.push((
                        n.clone(),
                        Err(InventoryError::RenderedAfterLimit { limit }.in_target(n)),
                    ));
                    continue;
                }
                let (r, size) = r.unwrap_or_else(|| render(n));
                total = total.saturating_add(size);
                let r = match r {
                    Ok(node) if total > limit => {
                        let (param, param_size) = largest_parameter(&node.parameters);
                        Err(InventoryError::RenderedTooLarge {
                            limit,
                            size,
                            param,
                            param_size,
                        }
                        .in_target(n))
                    }
                    r => r,
                };
                out.push((n.clone(), r));
            }
            out
        })
    }

    /// Renders one target.
    pub fn render_target(&self, name: &str) -> Result<RenderedNode, InventoryError> {
        let slot = self
            .targets
            .get(name)
            .ok_or_else(|| InventoryError::UnknownTarget {
                name: name.to_string(),
                known: self.target_names(),
            })?;
        let (entity, file_idx, _) = slot;
        let tfile = self.target_file_parsed(slot)?;
        let mut b = Build {
            inv: self,
            params: UMap::default(),
            exports: UMap::default(),
            listed: IndexSet::default(),
            apps: AppList::default(),
            done: HashSet::default(),
            patterns_done: HashSet::default(),
            patterns_listed: HashSet::default(),
            stack: Vec::new(),
            sources: closure::Sources::default(),
            source_files: Vec::new(),
        };
        b.params.entries.insert(
            Arc::from("_reclass_"),
            UEntry {
                value: UValue::from_value(&self.meta(name, entity)),
                origin: Origin {
                    file: *file_idx,
                    line: 0,
                },
                constant: false,
                replace: false,
            },
        );
        let mapped = self.mapped_classes(name)?;
        if !mapped.is_empty() {
            let lines = &self.class_mapping_lines;
            // reclass renders the mapped classes into a base node first,
            // then the node's own file on top, sharing one seen-list.
            let base = EntityFile {
                file: self.config_file,
                loc: String::new(),
                includes: mapped
                    .iter()
                    .map(|(c, i)| Include::Name(c.clone(), lines.get(*i).copied().unwrap_or(1)))
                    .collect(),
                listed: mapped.into_iter().map(|(c, _)| Listed::Name(c)).collect(),
                apps: AppList::default(),
                parameters: UMap::default(),
                exports: UMap::default(),
                unknown_keys: Vec::new(),
                patterns: false,
            };
            b.include(&base)?;
        }
        b.include(&tfile)?;
        let Build {
            params,
            exports,
            listed,
            apps,
            mut sources,
            mut source_files,
            ..
        } = b;
        source_files.sort_unstable_by_key(|i| self.file_rank[*i as usize]);
        source_files.dedup();
        // In path order already: the set is built without comparing much.
        sources.files = source_files
            .into_iter()
            .map(|i| self.files[i as usize].clone())
            .collect();
        let mut r = Resolver::new(&params, &self.files, &self.lookups);
        let parameters = r.render_root()?;
        let exports = r.render_detached(&exports, "exports")?;
        Ok(RenderedNode {
            name: name.to_string(),
            classes: listed.into_iter().collect(),
            applications: apps.items.into_vec(),
            parameters: Value::Map(parameters),
            exports: Value::Map(exports),
            environment: "base".to_string(),
            sources,
        })
    }

    /// The `_reclass_` meta parameter, as reclass-rs builds it.
    fn meta(&self, name: &str, entity: &Entity) -> Value {
        let parts: Vec<String> = if self.opts.compose_node_name
            && !entity.parts.first().is_some_and(|p| p.starts_with('_'))
        {
            entity.parts.clone()
        } else if entity.parts.first().is_some_and(|p| p.starts_with('_')) {
            entity.parts.last().cloned().into_iter().collect()
        } else {
            vec![name.to_string()]
        };
        let mut nm = Map::default();
        nm.insert("full".into(), Value::String(name.to_string()));
        nm.insert(
            "parts".into(),
            Value::List(parts.iter().cloned().map(Value::String).collect()),
        );
        nm.insert("path".into(), Value::String(parts.join("/")));
        nm.insert(
            "short".into(),
            Value::String(parts.last().cloned().unwrap_or_default()),
        );
        let mut m = Map::default();
        m.insert("environment".into(), Value::String("base".into()));
        m.insert("name".into(), Value::Map(nm));
        Value::Map(m)
    }

    fn target_file_parsed(
        &self,
        (entity, idx, parsed): &(Entity, u32, Parsed),
    ) -> Result<Arc<EntityFile>, InventoryError> {
        parsed
            .get_or_init(|| self.parse_entity(entity, *idx, String::new()).map(Arc::new))
            .clone()
    }

    fn class_file(&self, idx: usize) -> Result<Arc<EntityFile>, InventoryError> {
        let slot = &self.classes[idx];
        slot.parsed
            .get_or_init(|| {
                self.parse_entity(&slot.entity, idx as u32, slot.entity.loc.clone())
                    .map(Arc::new)
            })
            .clone()
    }

    fn is_ignored(&self, class: &str) -> bool {
        self.opts.ignore_class_notfound
            && (self.ignore_regexps.is_empty()
                || self.ignore_regexps.iter().any(|r| r.is_match(class)))
    }

    fn parse_entity(
        &self,
        e: &Entity,
        file: u32,
        loc: String,
    ) -> Result<EntityFile, InventoryError> {
        let path = &e.path;
        let text = std::fs::read_to_string(path).map_err(|err| InventoryError::Io {
            path: path.clone(),
            message: err.to_string(),
        })?;
        let yaml_err = |y: crate::yaml::YamlError| InventoryError::Yaml {
            path: path.clone(),
            line: y.line,
            col: y.col,
            message: y.message,
        };
        let shared = self.texts.as_ref().map(|t| t.parse(&text));
        let owned;
        let doc = match &shared {
            Some(p) => p.one().map_err(yaml_err)?,
            None => {
                owned = crate::yaml::load_one_inventory(&text).map_err(yaml_err)?;
                owned.as_ref()
            }
        };
        let shape = |what: &str, line: usize, expected: &'static str, found: &crate::yaml::Node| {
            InventoryError::Shape {
                path: path.clone(),
                line,
                what: what.to_string(),
                expected,
                found: node_kind(found),
            }
        };
        let entries: &[(crate::yaml::Node, crate::yaml::Node)] = match doc {
            None => &[],
            Some(n) => match &n.value {
                crate::yaml::NodeValue::Map(es) => es,
                crate::yaml::NodeValue::Null => &[],
                _ => return Err(shape("the file", n.line, "map", n)),
            },
        };
        let mut raw_classes: Vec<(String, usize)> = Vec::new();
        let mut apps = AppList::default();
        let mut parameters = UMap::default();
        let mut exports = UMap::default();
        let mut unknown_keys = Vec::new();
        for (k, v) in entries {
            let key = k.key_string();
            match key.as_str() {
                "classes" | "applications" => {
                    let items = match &v.value {
                        crate::yaml::NodeValue::Null => Vec::new(),
                        crate::yaml::NodeValue::Seq(items) => items.clone(),
                        _ => return Err(shape(&format!("`{key}`"), v.line, "list", v)),
                    };
                    for it in items {
                        let s = match &it.value {
                            crate::yaml::NodeValue::Str { value, .. } => value.clone(),
                            crate::yaml::NodeValue::Int(_)
                            | crate::yaml::NodeValue::Float(_)
                            | crate::yaml::NodeValue::Bool(_) => it.key_string(),
                            _ => {
                                return Err(shape(
                                    &format!("an entry of `{key}`"),
                                    it.line,
                                    "string",
                                    &it,
                                ))
                            }
                        };
                        if key == "classes" {
                            raw_classes.push((s, it.line));
                        } else {
                            apps.add(&s);
                        }
                    }
                }
                "parameters" | "exports" => {
                    let m = match &v.value {
                        crate::yaml::NodeValue::Null => UMap::default(),
                        crate::yaml::NodeValue::Map(es) => uvalue::map_from_entries(es, file)
                            .map_err(|message| InventoryError::RefSyntax {
                                origin: path.display().to_string(),
                                message,
                            })?,
                        _ => return Err(shape(&format!("`{key}`"), v.line, "map", v)),
                    };
                    if key == "parameters" {
                        parameters = m;
                    } else {
                        exports = m;
                    }
                }
                "environment" => {}
                _ => {
                    let suggestion = checks::did_you_mean(&key, checks::TOP_LEVEL_KEYS);
                    let err = InventoryError::UnknownKey {
                        path: path.clone(),
                        line: k.line,
                        suggestion,
                        key,
                    };
                    if suggestion.is_some() {
                        return Err(err);
                    }
                    unknown_keys.push(err);
                }
            }
        }
        let (includes, listed, patterns) = self.expand_classes(&raw_classes, &loc, file, path)?;
        Ok(EntityFile {
            file,
            loc,
            includes,
            listed,
            apps,
            parameters,
            exports,
            unknown_keys,
            patterns,
        })
    }

    /// Turns a file's `classes` list into what to include and what to report.
    fn expand_classes(
        &self,
        raw: &[(String, usize)],
        loc: &str,
        file: u32,
        path: &Path,
    ) -> Result<(Vec<Include>, Vec<Listed>, bool), InventoryError> {
        let mut includes = Vec::new();
        let mut patterns = false;
        // Entries as shown, deduplicated (first occurrence wins); shared
        // pattern expansions go in unfiltered, in their place.
        let mut seen: HashSet<String> = HashSet::new();
        let mut listed: Vec<Listed> = Vec::new();
        let mut add =
            |inc: Include, shown: String, includes: &mut Vec<Include>, listed: &mut Vec<Listed>| {
                if seen.insert(shown.clone()) {
                    includes.push(inc);
                    listed.push(Listed::Name(shown));
                }
            };
        for (s, line) in raw {
            if s.contains("${") && s.contains('}') {
                // Relative to the including file first, references after,
                // as reclass-rs does (`.${dist}` is `cluster.${dist}`).
                let s = &absolute(s, loc);
                match refs::parse(s) {
                    Ok(Some(t)) => add(
                        Include::Interpolated(
                            t,
                            Origin {
                                file,
                                line: *line as u32,
                            },
                        ),
                        s.clone(),
                        &mut includes,
                        &mut listed,
                    ),
                    Ok(None) => add(
                        Include::Name(absolute(s, loc), *line),
                        absolute(s, loc),
                        &mut includes,
                        &mut listed,
                    ),
                    Err(message) => {
                        return Err(InventoryError::RefSyntax {
                            origin: format!("{}:{line}", path.display()),
                            message,
                        })
                    }
                }
                continue;
            }
            let is_pattern = self.opts.enable_class_wildcards
                && s.contains(['*', '?', '['])
                && !self.class_index.contains_key(s.as_str());
            if is_pattern {
                patterns = true;
                let exp = self.expansion(s, path)?;
                if exp.names.is_empty() {
                    if self.opts.ignore_class_notfound {
                        continue;
                    }
                    return Err(InventoryError::PatternNoMatch {
                        pattern: s.clone(),
                        from: path.to_path_buf(),
                    });
                }
                if exp.templated {
                    for m in self.matched(&exp) {
                        add(
                            Include::Name(m.clone(), *line),
                            m.clone(),
                            &mut includes,
                            &mut listed,
                        );
                    }
                } else {
                    // Not filtered against the file's other entries: a match
                    // that repeats a name entry is skipped when walked (the
                    // name is included by then), and none can equal a
                    // `${...}` entry as written.
                    includes.push(Include::Pattern(exp.clone(), *line));
                    listed.push(Listed::Pattern(exp));
                }
                continue;
            }
            let abs = absolute(s, loc);
            add(
                Include::Name(abs.clone(), *line),
                abs,
                &mut includes,
                &mut listed,
            );
        }
        Ok((includes, listed, patterns))
    }

    /// The matches of wildcard pattern `pattern`, computed on first use.
    fn expansion(&self, pattern: &str, path: &Path) -> Result<Arc<Expansion>, InventoryError> {
        // A poisoned lock only means another thread panicked; the map is
        // still consistent (entries are inserted whole).
        let cache = || self.expansions.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = cache().get(pattern) {
            return Ok(e.clone());
        }
        // Matched without the lock, so that files listing other patterns
        // parse meanwhile; if two threads match the same pattern, the first
        // stored expansion is the one both use.
        let glob = globset::GlobBuilder::new(pattern)
            .literal_separator(false)
            .backslash_escape(false)
            .build()
            .map_err(|e| InventoryError::BadPattern {
                pattern: pattern.to_string(),
                from: path.to_path_buf(),
                message: e.to_string(),
            })?
            .compile_matcher();
        let names: Vec<u32> = (0..self.wildcard_names.len() as u32)
            .filter(|&i| glob.is_match(self.wildcard_names[i as usize].as_str()))
            .collect();
        let templated = names.iter().any(|&i| {
            let n = &self.wildcard_names[i as usize];
            n.contains("${") && n.contains('}')
        });
        let mut cache = cache();
        let id = cache.len();
        let e = cache
            .entry(pattern.to_string())
            .or_insert_with(|| {
                Arc::new(Expansion {
                    id,
                    names,
                    templated,
                })
            })
            .clone();
        Ok(e)
    }

    /// The class names of expansion `e`, in order.
    fn matched<'a>(&'a self, e: &'a Expansion) -> impl Iterator<Item = &'a String> + 'a {
        e.names.iter().map(|&i| &self.wildcard_names[i as usize])
    }
}

fn node_kind(n: &crate::yaml::Node) -> &'static str {
    match n.value {
        crate::yaml::NodeValue::Null => "null",
        crate::yaml::NodeValue::Bool(_) => "bool",
        crate::yaml::NodeValue::Int(_) => "int",
        crate::yaml::NodeValue::Float(_) => "float",
        crate::yaml::NodeValue::Str { .. } => "string",
        crate::yaml::NodeValue::Seq(_) => "list",
        crate::yaml::NodeValue::Map(_) => "map",
    }
}

/// Makes a relative class name (`.sibling`, `..parent`) absolute: the first
/// dot is the including file's directory, each further dot one level up,
/// never above `classes/`.
pub fn absolute(name: &str, loc: &str) -> String {
    if !name.starts_with('.') {
        return name.to_string();
    }
    let rest = name.trim_start_matches('.');
    let dots = name.len() - rest.len();
    let mut base: Vec<&str> = if loc.is_empty() {
        Vec::new()
    } else {
        loc.split('.').collect()
    };
    for _ in 1..dots {
        base.pop();
    }
    base.push(rest);
    base.join(".")
}

/// The per-target merge state.
struct Build<'a> {
    inv: &'a Inventory,
    params: UMap,
    exports: UMap,
    listed: IndexSet<String, ahash::RandomState>,
    apps: AppList,
    done: HashSet<String, ahash::RandomState>,
    /// Expansions (by id) walked in full: all their names are in `done`.
    patterns_done: HashSet<usize, ahash::RandomState>,
    /// Expansions (by id) whose names are all in `listed`.
    patterns_listed: HashSet<usize, ahash::RandomState>,
    /// Classes being included right now, for cycle errors.
    stack: Vec<String>,
    /// What the target read; its `files` are filled from `source_files`
    /// when the merge is done.
    sources: closure::Sources,
    /// The files included, by index into the inventory's `files`.
    source_files: Vec<u32>,
}

impl Build<'_> {
    fn include(&mut self, f: &EntityFile) -> Result<(), InventoryError> {
        let inv = self.inv;
        let from = &inv.files[f.file as usize];
        self.source_files.push(f.file);
        self.sources.patterns |= f.patterns;
        for inc in &f.includes {
            let (name, line) = match inc {
                Include::Name(n, line) => (n.clone(), *line),
                Include::Interpolated(t, origin) => {
                    let mut r = Resolver::new(&self.params, &inv.files, &inv.lookups);
                    let v = r.render_template(t, *origin)?;
                    let mut s = String::new();
                    raw_string(&v, &mut s);
                    // Every name is kept (the node's `classes`, the review's
                    // closure): 200 interpolations of a 16 MB parameter,
                    // ignored as not found, held 3.3 GB (probe 38,
                    // interpolated-class-names-unbounded).
                    if s.len() > class_mapping::MAX_CLASS_NAME {
                        let len = s.len();
                        return Err(InventoryError::ClassNameTooLong {
                            class: resolve::clip(s),
                            len,
                            limit: class_mapping::MAX_CLASS_NAME,
                            from: from.clone(),
                            line: origin.line as usize,
                        });
                    }
                    (absolute(&s, &f.loc), origin.line as usize)
                }
                Include::Pattern(e, line) => {
                    // A repeat would only find every name done (and
                    // already in `sources.names`): skip it whole.
                    if !self.patterns_done.contains(&e.id) {
                        for n in inv.matched(e) {
                            // Done names are in `sources.names` already: skip
                            // them without copying the name.
                            if self.done.contains(n) {
                                continue;
                            }
                            self.include_name(n.clone(), *line, from)?;
                        }
                        self.patterns_done.insert(e.id);
                    }
                    continue;
                }
            };
            self.include_name(name, line, from)?;
        }
        for c in &f.listed {
            match c {
                Listed::Name(c) => {
                    if !self.listed.contains(c) {
                        self.listed.insert(c.clone());
                    }
                }
                Listed::Pattern(e) => {
                    if self.patterns_listed.insert(e.id) {
                        for n in inv.matched(e) {
                            if !self.listed.contains(n) {
                                self.listed.insert(n.clone());
                            }
                        }
                    }
                }
            }
        }
        if inv.opts.applications_negate_earlier_only {
            self.apps.merge_earlier_only(&f.apps);
        } else {
            self.apps.merge(&f.apps);
        }
        let conflict = |c: MergeConflict| {
            Resolver::new(&UMap::default(), &inv.files, &inv.lookups).conflict(c)
        };
        merge_maps(&mut self.params, &f.parameters, &mut Vec::new()).map_err(conflict)?;
        merge_maps(&mut self.exports, &f.exports, &mut Vec::new()).map_err(conflict)?;
        Ok(())
    }

    /// Includes class `name`, listed at `line` of file `from`, unless done.
    fn include_name(
        &mut self,
        name: String,
        line: usize,
        from: &Path,
    ) -> Result<(), InventoryError> {
        let inv = self.inv;
        self.sources.names.insert(name.clone());
        if self.done.contains(&name) {
            return Ok(());
        }
        if let Some(pos) = self.stack.iter().position(|s| *s == name) {
            let mut chain: Vec<String> = self.stack[pos..].to_vec();
            chain.push(name);
            return Err(InventoryError::ClassCycle {
                chain: chain.join(" -> "),
                from: from.to_path_buf(),
                line,
            });
        }
        let Some(&idx) = inv.class_index.get(&name) else {
            if inv.is_ignored(&name) {
                return Ok(());
            }
            return Err(InventoryError::ClassNotFound {
                // Quoted twice per target that includes it (probe 34).
                class: resolve::clip(name),
                from: from.to_path_buf(),
                line,
            });
        };
        if self.stack.len() >= checks::MAX_CLASS_DEPTH {
            return Err(InventoryError::ClassTooDeep {
                class: name,
                from: from.to_path_buf(),
                line,
                limit: checks::MAX_CLASS_DEPTH,
            });
        }
        let cf = inv.class_file(idx)?;
        self.stack.push(name.clone());
        self.include(&cf)?;
        self.stack.pop();
        self.done.insert(name);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_names() {
        assert_eq!(
            absolute(".sibling", "component.deep"),
            "component.deep.sibling"
        );
        assert_eq!(
            absolute("..defaults", "component.deep"),
            "component.defaults"
        );
        assert_eq!(absolute(".....top", "component.deep"), "top");
        assert_eq!(absolute(".top", ""), "top");
        assert_eq!(absolute("abs.name", "x"), "abs.name");
    }

    /// Two inventories parsing through one cache (a review's base and
    /// head) render what each renders alone, errors included, and a file
    /// text they both hold is parsed once.
    #[test]
    fn inventories_sharing_parses_render_as_alone() {
        let write = |files: &[(&str, &str)]| {
            let dir = tempfile::tempdir().unwrap();
            for (p, text) in files {
                let path = dir.path().join(p);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, text).unwrap();
            }
            dir
        };
        let common = ("classes/common.yml", "parameters:\n  a: 1\n  b: ${a}\n");
        let base = write(&[
            common,
            ("targets/t.yml", "classes: [common]\nparameters:\n  c: x\n"),
            ("targets/u.yml", "classes: [common]\n"),
        ]);
        let head = write(&[
            common,
            ("targets/t.yml", "classes: [common]\nparameters:\n  c: y\n"),
            ("targets/u.yml", "classes: [common]\n"),
            ("targets/bad.yml", "classes: [common\n"),
        ]);
        let open = |dir: &tempfile::TempDir| {
            Inventory::load(&InventoryOptions {
                path: dir.path().to_path_buf(),
                ..InventoryOptions::default()
            })
            .unwrap()
        };
        let show = |r: BTreeMap<String, Result<RenderedNode, InventoryError>>| {
            r.into_iter()
                .map(|(t, n)| match n {
                    Ok(n) => format!("{t}: {:?} {:?}", n.classes, n.parameters),
                    Err(e) => format!("{t}: {e}"),
                })
                .collect::<Vec<_>>()
        };
        let texts = Arc::new(crate::yaml::TextCache::default());
        let (mut b, mut h) = (open(&base), open(&head));
        b.share_parses(texts.clone());
        h.share_parses(texts.clone());
        let shared = (show(b.render_each()), show(h.render_each()));
        assert_eq!(
            shared,
            (
                show(open(&base).render_each()),
                show(open(&head).render_each())
            )
        );
        assert!(
            shared.1.iter().any(|l| l.starts_with("bad: ")),
            "{shared:?}"
        );
        // Five texts for seven files: the class and `u` are the same on
        // both sides.
        assert_eq!(texts.len(), 5);
    }

    /// Writes an inventory from `(path, text)` pairs and renders target `t`.
    fn render_one(files: &[(&str, &str)], opts: InventoryOptions) -> Result<Value, InventoryError> {
        let dir = tempfile::tempdir().unwrap();
        for (p, text) in files {
            let path = dir.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let inv = Inventory::load(&InventoryOptions {
            path: dir.path().to_path_buf(),
            ..opts
        })?;
        let mut nodes = inv.render(&["t".to_string()])?;
        let mut p = nodes.remove("t").unwrap().parameters;
        if let Value::Map(m) = &mut p {
            m.shift_remove("_reclass_");
        }
        Ok(p)
    }

    fn params(files: &[(&str, &str)]) -> serde_json::Value {
        render_one(files, InventoryOptions::default())
            .unwrap()
            .to_json()
    }

    fn error(files: &[(&str, &str)]) -> String {
        render_one(files, InventoryOptions::default())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn references_keep_type_and_stringify() {
        let p = params(&[(
            "targets/t.yml",
            "parameters:\n  m: {a: 1}\n  b: true\n  whole: ${m}\n  text: b=${b} m=${m}\n  nested: ${${ptr}}\n  ptr: b\n",
        )]);
        assert_eq!(p["whole"], serde_json::json!({"a": 1}));
        assert_eq!(p["text"], r#"b=True m={"a":1.0}"#);
        assert_eq!(p["nested"], true);
    }

    #[test]
    fn references_to_references_and_defaults() {
        let p = params(&[(
            "targets/t.yml",
            "parameters:\n  a: ${b}\n  b: ${c:d}\n  c: {d: deep}\n  e: ${nope::fallback}\n  f: ${c:nope::42}\n",
        )]);
        assert_eq!(p["a"], "deep");
        assert_eq!(p["e"], "fallback");
        assert_eq!(p["f"], 42);
    }

    #[test]
    fn referenced_maps_merge_in_hierarchy_order() {
        let p = params(&[
            ("classes/c1.yml", "parameters:\n  x: ${one}\n"),
            ("classes/c2.yml", "parameters:\n  x: ${two}\n"),
            (
                "targets/t.yml",
                "classes: [c1, c2]\nparameters:\n  one: {a: 1}\n  two: {b: 2}\n  x: {c: 3}\n",
            ),
        ]);
        assert_eq!(p["x"], serde_json::json!({"a": 1, "b": 2, "c": 3}));
    }

    #[test]
    fn overwritten_missing_reference_is_ignored() {
        let p = params(&[
            ("classes/c1.yml", "parameters:\n  a: ${missing}\n"),
            ("targets/t.yml", "classes: [c1]\nparameters:\n  a: fine\n"),
        ]);
        assert_eq!(p["a"], "fine");
    }

    #[test]
    fn self_reference_inside_a_map_overridden_by_a_reference() {
        // Commodore's instance aliases: `comp: ${inst}` over the component's
        // defaults, which refer to themselves (reclass-rs resolves this).
        let p = params(&[
            (
                "classes/c.yml",
                "parameters:\n  comp:\n    a: 1\n    b: ${comp:a}\n",
            ),
            (
                "targets/t.yml",
                "classes: [c]\nparameters:\n  comp: ${inst}\n  inst: {c: 2}\n",
            ),
        ]);
        assert_eq!(p["comp"], serde_json::json!({"a": 1, "b": 1, "c": 2}));
        let e = error(&[
            ("classes/c.yml", "parameters:\n  comp:\n    a: 1\n"),
            (
                "targets/t.yml",
                "classes: [c]\nparameters:\n  comp: ${comp:a}\n",
            ),
        ]);
        assert!(e.contains("reference loop"), "{e}");
    }

    #[test]
    fn loops_are_errors_not_hangs() {
        let e = error(&[("targets/t.yml", "parameters:\n  a: ${b}\n  b: x-${a}\n")]);
        assert!(e.contains("reference loop"), "{e}");
        let e = error(&[("targets/t.yml", "parameters:\n  a:\n    b: ${a}\n")]);
        assert!(e.contains("reference loop"), "{e}");
        // A reference into a sibling of the map being rendered is no loop.
        let p = params(&[(
            "targets/t.yml",
            "parameters:\n  a:\n    b: ${a:c}\n    c: 1\n",
        )]);
        assert_eq!(p["a"]["b"], 1);
    }

    #[test]
    fn merge_type_errors_name_both_files() {
        let e = error(&[
            ("classes/c.yml", "parameters:\n  a: [1]\n"),
            ("targets/t.yml", "classes: [c]\nparameters:\n  a: text\n"),
        ]);
        assert!(
            e.contains("cannot merge string over list at parameters.a"),
            "{e}"
        );
        assert!(e.contains("c.yml:2") && e.contains("t.yml:3"), "{e}");
        // `~` replaces instead, so no error.
        let p = params(&[
            ("classes/c.yml", "parameters:\n  a: [1]\n"),
            ("targets/t.yml", "classes: [c]\nparameters:\n  ~a: text\n"),
        ]);
        assert_eq!(p["a"], "text");
    }

    #[test]
    fn class_names_with_references_and_cycles() {
        let p = params(&[
            ("classes/base.yml", "parameters:\n  dist: k3s\n"),
            ("classes/dist/k3s.yml", "parameters:\n  picked: yes\n"),
            ("targets/t.yml", "classes: [base, 'dist.${dist}']\n"),
        ]);
        assert_eq!(p["picked"], "yes");
        let e = error(&[
            ("classes/a.yml", "classes: [b]\n"),
            ("classes/b.yml", "classes: [a]\n"),
            ("targets/t.yml", "classes: [a]\n"),
        ]);
        assert!(e.contains("class include cycle: a -> b -> a"), "{e}");
    }

    #[test]
    fn wildcard_patterns_expand_sorted_in_place() {
        let files = [
            ("classes/apps/b.yml", "parameters: {order: [b]}\n"),
            ("classes/apps/a.yml", "parameters: {order: [a]}\n"),
            ("classes/first.yml", "parameters: {order: [first]}\n"),
            ("targets/t.yml", "classes: [first, 'apps.*', apps.a]\n"),
        ];
        let opts = InventoryOptions {
            enable_class_wildcards: true,
            ..Default::default()
        };
        let p = render_one(&files, opts).unwrap().to_json();
        assert_eq!(p["order"], serde_json::json!(["first", "a", "b"]));
        let e = render_one(&files, InventoryOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("class not found: `apps.*`"), "{e}");
    }

    /// Issue #19: N class files each listing `b.*` (N matches) stored N*N
    /// include entries; a pattern's matches are now stored once and shared.
    #[test]
    fn repeated_wildcard_pattern_is_stored_once() {
        const N: usize = 60;
        let dir = tempfile::tempdir().unwrap();
        let write = |p: &str, text: &str| {
            let path = dir.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        for i in 0..N {
            write(&format!("classes/a/x{i:02}.yml"), "classes: ['b.*']\n");
            write(
                &format!("classes/b/y{i:02}.yml"),
                &format!("parameters: {{pb{i:02}: 1}}\n"),
            );
        }
        write("targets/t.yml", "classes: ['a.*', b.y00]\n");
        let inv = Inventory::load(&InventoryOptions {
            path: dir.path().to_path_buf(),
            enable_class_wildcards: true,
            ..Default::default()
        })
        .unwrap();
        let node = inv.render(&["t".to_string()]).unwrap().remove("t").unwrap();
        // Included classes are listed before the class that includes them.
        let mut want: Vec<String> = (0..N).map(|i| format!("b.y{i:02}")).collect();
        want.extend((0..N).map(|i| format!("a.x{i:02}")));
        assert_eq!(node.classes, want);
        let params = node.parameters.to_json();
        assert_eq!(params["pb00"], 1);
        assert_eq!(params[format!("pb{:02}", N - 1)], 1);
        let stored: usize = (0..inv.classes.len())
            .map(|i| {
                let f = inv.class_file(i).unwrap();
                f.includes.len() + f.listed.len()
            })
            .sum();
        // One include and one listed entry per `a.x*` file, not N of each.
        assert_eq!(stored, 2 * N);
        let cached = inv.expansions.lock().unwrap();
        assert_eq!(cached.len(), 2, "one expansion per distinct pattern");
        assert_eq!(cached["b.*"].names.len(), N);
    }

    #[test]
    fn check_files_reports_every_broken_file() {
        let dir = tempfile::tempdir().unwrap();
        for (p, text) in [
            ("classes/ok.yml", "parameters: {a: 1}\n"),
            ("classes/bad.yml", "parameters: [\n"),
            ("classes/unused.yml", "classes: a\n"),
            ("targets/t.yml", "classes: [ok]\n"),
        ] {
            let path = dir.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let inv = Inventory::load(&InventoryOptions {
            path: dir.path().to_path_buf(),
            ..Default::default()
        })
        .unwrap();
        let errs: Vec<String> = inv.check_files().iter().map(|e| e.to_string()).collect();
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(errs
            .iter()
            .any(|e| e.contains("bad.yml") && e.contains("invalid yaml")));
        assert!(errs
            .iter()
            .any(|e| e.contains("unused.yml") && e.contains("expected a list")));
        assert!(
            inv.render(&[]).is_ok(),
            "unused broken classes do not break targets"
        );
    }

    /// Random inventories full of references, prefixes, cycles and type
    /// clashes: rendering must return a value or an error, never panic or hang.
    #[test]
    fn random_inventories_never_panic() {
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rnd = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let keys = ["a", "b", "c", "~a", "d", "=e", "f", "g", "l"];
        let scalar = |rnd: &mut dyn FnMut(u64) -> u64| -> String {
            match rnd(16) {
                0 => "${a}".into(),
                1 => "x-${b:c::y}".into(),
                2 => "${${d::a}::z}".into(),
                3 => "null".into(),
                4 => "${l}".into(),
                5 => "${c::dflt}".into(),
                6 => "'\\\\${a}'".into(),
                7 => "7".into(),
                8 => "${b:a}".into(),
                _ => "plain".into(),
            }
        };
        let (mut ok, mut failed) = (0, 0);
        for case in 0..150 {
            let mut files: Vec<(String, String)> = Vec::new();
            for c in 0..4 {
                let mut text = String::from("classes: [");
                for _ in 0..rnd(3) {
                    // Mostly earlier classes; now and then a cycle or a missing one.
                    let j = if rnd(10) == 0 {
                        rnd(5)
                    } else if c > 0 {
                        rnd(c)
                    } else {
                        continue;
                    };
                    text.push_str(&format!("c{j}, "));
                }
                text.push_str("]\nparameters:\n");
                for k in keys {
                    if rnd(2) == 0 {
                        continue;
                    }
                    let k = if k == "=e" && rnd(8) != 0 { "e" } else { k };
                    if k == "l" {
                        text.push_str("  l: [1, '${a::q}']\n");
                    } else if matches!(k, "b" | "g") || rnd(40) == 0 {
                        text.push_str(&format!("  {k}:\n"));
                        for k2 in ["a", "c", "~d"] {
                            let v = scalar(&mut rnd);
                            text.push_str(&format!("    {k2}: {v}\n"));
                        }
                    } else {
                        let v = scalar(&mut rnd);
                        text.push_str(&format!("  {k}: {v}\n"));
                    }
                }
                files.push((format!("classes/c{c}.yml"), text));
            }
            files.push(("targets/t.yml".into(), "classes: [c0, c1, c2, c3]\n".into()));
            let refs: Vec<(&str, &str)> = files
                .iter()
                .map(|(a, b)| (a.as_str(), b.as_str()))
                .collect();
            let start = std::time::Instant::now();
            match render_one(
                &refs,
                InventoryOptions {
                    ignore_class_notfound: case % 2 == 0,
                    ..Default::default()
                },
            ) {
                Ok(_) => ok += 1,
                Err(e) => {
                    if failed == 0 {
                        eprintln!("first error: {e}");
                    }
                    failed += 1
                }
            }
            assert!(
                start.elapsed().as_secs() < 5,
                "case {case} took too long: {files:?}"
            );
        }
        assert!(
            ok > 10 && failed > 10,
            "the generator covers both outcomes: {ok} ok, {failed} failed"
        );
    }

    #[test]
    fn applications_negate_earlier_only_for_commodore() {
        let files = [
            ("classes/a.yml", "applications: [foo, bar]\n"),
            ("classes/b.yml", "applications: [~bar, ~baz]\n"),
            ("classes/c.yml", "applications: [baz, qux]\n"),
            (
                "targets/t.yml",
                "classes: [a, b, c]\napplications: [~qux]\n",
            ),
        ];
        let dir = tempfile::tempdir().unwrap();
        for (p, text) in files {
            let path = dir.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let apps = |earlier_only: bool| {
            let inv = Inventory::load(&InventoryOptions {
                path: dir.path().to_path_buf(),
                applications_negate_earlier_only: earlier_only,
                ..Default::default()
            })
            .unwrap();
            inv.render_target("t").unwrap().applications
        };
        assert_eq!(
            apps(false),
            ["foo"],
            "reclass-rs: ~baz keeps the later baz out"
        );
        assert_eq!(
            apps(true),
            ["foo", "baz"],
            "Commodore: ~baz only removes an earlier baz"
        );
    }

    #[test]
    fn applications_remember_negations() {
        let mut root = AppList::default();
        let mut a = AppList::default();
        for s in ["foo", "bar"] {
            a.add(s);
        }
        let mut b = AppList::default();
        for s in ["~bar", "~baz"] {
            b.add(s);
        }
        let mut c = AppList::default();
        for s in ["baz", "qux"] {
            c.add(s);
        }
        root.merge(&a);
        root.merge(&b);
        root.merge(&c);
        assert_eq!(root.items.into_vec(), ["foo", "qux"]);
    }
}
