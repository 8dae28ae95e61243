//! Reference resolution for one target: walks the merged, unrendered
//! parameters and renders them, resolving `${...}` late (after all merging),
//! flattening layered values, caching every resolved reference path so
//! each is rendered once, and detecting loops exactly.

use super::refs::{Template, Token};
use super::uvalue::{merge_resolved, Layer, MergeConflict, Origin, UMap, UValue};
use super::InventoryError;
use crate::value::{Map, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// Separates keys in internal paths; cannot occur in YAML keys we match.
const SEP: char = '\u{1f}';
/// A safety net against pathological chains that are not loops.
pub const MAX_DEPTH: usize = 256;
/// Bytes (string bytes plus [`NODE_WEIGHT`] per node) that reference
/// resolution may copy for one target: `r1: ${r0}${r0}` forty levels deep
/// would be a terabyte. 64 MiB is two million nodes, far above what real
/// inventories copy (a few thousand nodes per target).
pub const MAX_EXPANSION: usize = 64 * 1024 * 1024;
/// What one node (a list item, a map entry, a scalar) counts, roughly its
/// size in memory.
const NODE_WEIGHT: usize = 32;
/// References one target may look up (cache hits included). Overriding
/// layers whose references fail are tried one by one, so a reference loop
/// spread over many classes is exponential in the loop's length; this
/// bound turns that into an error in about a second.
pub const MAX_LOOKUPS: usize = 1_000_000;

/// References all the targets of one render may look up together
/// (`$STRATA_MAX_RENDER_LOOKUPS`, default 100,000,000; the bench platform
/// looks up about 1,700 per target, so 6,000 targets are 10 million).
/// [`MAX_LOOKUPS`] is per target, so a class of a million `${a}` (4 MB)
/// included by N targets cost N million look-ups: 40 targets took 58 s to
/// render in a debug build, and a pull request adding a thousand target
/// files (13 bytes each) kept a review busy for many minutes (probe 38,
/// lookup-budget-per-target).
pub fn max_render_lookups() -> usize {
    static MAX: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *MAX.get_or_init(|| crate::limits::get("STRATA_MAX_RENDER_LOOKUPS", 100_000_000) as usize)
}

/// Look-ups are added to the render's shared count in steps of this many.
const SHARED_STEP: usize = 4096;

pub struct Resolver<'a> {
    root: &'a UMap,
    files: &'a [PathBuf],
    cache: HashMap<String, Value, ahash::RandomState>,
    /// The path being rendered when each pending reference was taken, and
    /// the reference's target.
    frames: Vec<(String, String)>,
    cur: String,
    /// What reference resolution copied so far, against [`MAX_EXPANSION`].
    expanded: usize,
    /// References looked up so far, against [`MAX_LOOKUPS`].
    lookups: usize,
    /// Look-ups of every target of the render, against `max_shared`.
    shared: &'a std::sync::atomic::AtomicUsize,
    max_shared: usize,
    /// A unique id per pushed frame, parallel to `frames`.
    frame_ids: Vec<u64>,
    next_id: u64,
    /// The innermost frame a loop found while resolving the current
    /// reference ran into.
    loop_hit: Option<usize>,
    /// Reference paths that failed by looping into an outer frame: they fail
    /// the same way while that frame (index, id) is still being resolved.
    /// Without this, a loop through n keys each overridden in m classes is
    /// tried m^n times.
    failures: HashMap<String, (InventoryError, usize, u64), ahash::RandomState>,
    /// Layered values whose layers are being merged for a lookup below them.
    merging: Vec<String>,
    /// Cleared path buffers of finished frames, for the next ones.
    spare_paths: Vec<String>,
    /// Key buffers of finished references, reused by later ones.
    spare_keys: Vec<String>,
}

/// Weighted nodes plus string bytes of a value, and its depth, without
/// recursion (values can be as deep as references make them).
pub(crate) fn value_size(v: &Value) -> (usize, usize) {
    // Most references resolve to a scalar: no work list for those.
    match v {
        Value::String(s) => return (NODE_WEIGHT + s.len(), 1),
        Value::List(_) | Value::Map(_) => {}
        _ => return (NODE_WEIGHT, 1),
    }
    let mut n = 0usize;
    let mut deepest = 0;
    let mut todo = vec![(v, 1usize)];
    while let Some((v, depth)) = todo.pop() {
        n += NODE_WEIGHT;
        deepest = deepest.max(depth);
        match v {
            Value::String(s) => n += s.len(),
            Value::List(items) => todo.extend(items.iter().map(|x| (x, depth + 1))),
            Value::Map(m) => {
                for (k, x) in m {
                    n += k.len();
                    todo.push((x, depth + 1));
                }
            }
            _ => {}
        }
    }
    (n, deepest)
}

/// Human form of an internal path: `a.b[0].c`, cut by [`clip`].
fn display_path(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    for (i, seg) in p.split(SEP).enumerate() {
        if i > 0 && !seg.starts_with('[') {
            out.push('.');
        }
        out.push_str(seg);
    }
    clip(out)
}

/// The longest parameter path, reference or reason an error quotes whole.
const MAX_QUOTED: usize = 300;

/// `s` cut to its first 200 bytes and its length past [`MAX_QUOTED`]
/// bytes: an error names a key as long as the key is (a 500 KB key
/// above one unresolved reference printed 1 MB per target, 201 MB for
/// 200 targets; probe 34, long-key-error-amplification).
pub(crate) fn clip(s: String) -> String {
    if s.len() <= MAX_QUOTED {
        return s;
    }
    let mut end = 200;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &s[..end], s.len())
}

fn ref_text(p: &str) -> String {
    format!("${{{}}}", p.replace(SEP, ":"))
}

/// `a` is `b` or an ancestor of `b` (as key paths).
fn is_prefix_or_equal(a: &str, b: &str) -> bool {
    b.len() >= a.len() && b.starts_with(a) && (b.len() == a.len() || b[a.len()..].starts_with(SEP))
}

impl<'a> Resolver<'a> {
    /// `shared` counts the look-ups of every target of the render (see
    /// [`max_render_lookups`]).
    pub fn new(
        root: &'a UMap,
        files: &'a [PathBuf],
        shared: &'a std::sync::atomic::AtomicUsize,
    ) -> Self {
        Resolver {
            root,
            files,
            cache: HashMap::default(),
            frames: Vec::new(),
            cur: String::new(),
            expanded: 0,
            lookups: 0,
            shared,
            max_shared: max_render_lookups(),
            frame_ids: Vec::new(),
            next_id: 0,
            loop_hit: None,
            failures: HashMap::default(),
            merging: Vec::new(),
            spare_paths: Vec::new(),
            spare_keys: Vec::new(),
        }
    }

    pub fn origin_text(&self, o: Origin) -> String {
        match self.files.get(o.file as usize) {
            Some(p) if o.line > 0 => format!("{}:{}", p.display(), o.line),
            Some(p) => p.display().to_string(),
            None => "a rendered value".to_string(),
        }
    }

    /// Renders the whole parameter tree.
    pub fn render_root(&mut self) -> Result<Map, InventoryError> {
        let root = self.root;
        self.render_map(root)
    }

    /// Renders a map that is not part of the parameters (exports), with
    /// references resolved against the parameters.
    pub fn render_detached(&mut self, m: &UMap, label: &str) -> Result<Map, InventoryError> {
        self.cur = format!("\u{1e}{label}");
        let r = self.render_map(m);
        self.cur.clear();
        r
    }

    /// Renders a single string (a class name) against the parameters.
    pub fn render_template(
        &mut self,
        t: &Template,
        origin: Origin,
    ) -> Result<Value, InventoryError> {
        self.render_tmpl(t, origin)
    }

    fn render_map(&mut self, m: &UMap) -> Result<Map, InventoryError> {
        let mut out = Map::with_capacity_and_hasher(m.entries.len(), Default::default());
        for (k, e) in &m.entries {
            let len = self.cur.len();
            if len > 0 {
                self.cur.push(SEP);
            }
            self.cur.push_str(k);
            let cacheable = matches!(
                e.value,
                UValue::Map(_) | UValue::Tmpl(_) | UValue::Layers(_)
            );
            let v = match cacheable.then(|| self.cache.get(&self.cur)).flatten() {
                Some(v) => Ok(v.clone()),
                None => self.render(&e.value),
            };
            self.cur.truncate(len);
            // `String::from`, not `to_string`: `Arc<str>`'s goes through
            // `Display` (7% of rendering a map).
            out.insert(String::from(&**k), v?);
        }
        Ok(out)
    }

    fn render(&mut self, v: &UValue) -> Result<Value, InventoryError> {
        Ok(match v {
            UValue::Null => Value::Null,
            UValue::Bool(b) => Value::Bool(*b),
            UValue::Int(i) => Value::Int(*i),
            UValue::Float(f) => Value::Float(*f),
            UValue::Str(s) => Value::String(String::from(&**s)),
            UValue::Tmpl(t) => self.render_tmpl(&t.0, t.1)?,
            UValue::List(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let len = self.cur.len();
                    self.cur.push(SEP);
                    // Into the path itself: `format!` allocated per item,
                    // and `write!` cost a formatter per item.
                    push_index(&mut self.cur, i);
                    let r = self.render(item);
                    self.cur.truncate(len);
                    out.push(r?);
                }
                Value::List(out)
            }
            UValue::Map(m) => Value::Map(self.render_map(m)?),
            UValue::Layers(layers) => self.flatten(layers)?,
            UValue::Error(e) => return Err((**e).clone()),
        })
    }

    /// Resolves each layer's references, merges the layers in order and
    /// renders the result. A failing reference in a layer that a later
    /// scalar overwrites is ignored, as reclass-rs does.
    fn flatten(&mut self, layers: &[Layer]) -> Result<Value, InventoryError> {
        let base = self.merge_layers(layers)?;
        self.render(&base)
    }

    /// The layers merged, with only the layers that are references
    /// resolved: what they hold stays unrendered.
    fn merge_layers(&mut self, layers: &[Layer]) -> Result<UValue, InventoryError> {
        let mut base = UValue::Null;
        let mut base_origin = Origin::default();
        let last = layers.len().saturating_sub(1);
        for (i, layer) in layers.iter().enumerate() {
            let v = match &layer.value {
                UValue::Tmpl(t) => match self.render_tmpl(&t.0, t.1) {
                    Ok(v) => UValue::from_value(&v),
                    Err(e) if i < last && !matches!(e, InventoryError::RefSyntax { .. }) => {
                        UValue::Error(Arc::new(e))
                    }
                    Err(e) => return Err(e),
                },
                other => other.clone(),
            };
            let mut path: Vec<Arc<str>> = self.cur.split(SEP).map(Arc::from).collect();
            merge_resolved(&mut base, base_origin, v, layer.origin, &mut path)
                .map_err(|c| self.conflict(c))?;
            base_origin = layer.origin;
        }
        Ok(base)
    }

    pub fn conflict(&self, c: MergeConflict) -> InventoryError {
        match c {
            MergeConflict::Constant { key, first, second } => InventoryError::Constant {
                key: display_path(&key.replace('.', &SEP.to_string())),
                first: self.origin_text(first),
                second: self.origin_text(second),
            },
            MergeConflict::Types {
                path,
                old,
                new,
                old_origin,
                new_origin,
            } => InventoryError::Merge {
                key: display_path(&path.join(&SEP.to_string())),
                old,
                new,
                old_origin: self.origin_text(old_origin),
                new_origin: self.origin_text(new_origin),
            },
            MergeConflict::Unresolved(e) => (*e).clone(),
        }
    }

    fn render_tmpl(&mut self, t: &Template, origin: Origin) -> Result<Value, InventoryError> {
        if let [Token::Ref(inner)] = t.tokens.as_slice() {
            let path = self.ref_path(inner, origin)?;
            return self.resolve(&path, origin);
        }
        // Room for the literal text and a short value or two: most
        // templates are `prefix-${x}`, and growing from empty reallocated.
        let lits: usize = t
            .tokens
            .iter()
            .map(|tok| match tok {
                Token::Lit(l) => l.len(),
                Token::Ref(_) => 16,
            })
            .sum();
        let mut s = String::with_capacity(lits);
        for tok in &t.tokens {
            match tok {
                Token::Lit(l) => s.push_str(l),
                Token::Ref(inner) => {
                    let path = self.ref_path(inner, origin)?;
                    let v = self.resolve(&path, origin)?;
                    raw_string(&v, &mut s);
                }
            }
        }
        Ok(Value::String(s))
    }

    /// The text of a reference's path, with nested references resolved.
    fn ref_path<'t>(
        &mut self,
        inner: &'t [Token],
        origin: Origin,
    ) -> Result<std::borrow::Cow<'t, str>, InventoryError> {
        if let [Token::Lit(l)] = inner {
            return Ok(std::borrow::Cow::Borrowed(l));
        }
        let mut s = String::new();
        for tok in inner {
            match tok {
                Token::Lit(l) => s.push_str(l),
                Token::Ref(nested) => {
                    let path = self.ref_path(nested, origin)?;
                    let v = self.resolve(&path, origin)?;
                    raw_string(&v, &mut s);
                }
            }
        }
        Ok(std::borrow::Cow::Owned(s))
    }

    /// A loop is a reference to a path that is being rendered, or to an
    /// ancestor of one. `with_cur` also checks the path rendered right now.
    fn check_loop(&mut self, key: &str, with_cur: bool) -> Result<(), InventoryError> {
        let at = if with_cur && is_prefix_or_equal(key, &self.cur) {
            Some(self.frames.len())
        } else {
            self.frames
                .iter()
                .rposition(|(p, _)| is_prefix_or_equal(key, p))
        };
        let hit = at.is_some();
        if hit || self.frames.len() > MAX_DEPTH {
            // Too deep is no loop but depends on the frames all the same.
            self.note_hit(at.unwrap_or(self.frames.len()));
            let mut chain: Vec<String> = self.frames.iter().map(|(_, t)| ref_text(t)).collect();
            chain.push(ref_text(key));
            let param = self
                .frames
                .first()
                .map(|(p, _)| p.as_str())
                .unwrap_or(&self.cur);
            if !hit {
                // Not a loop, only long: name its ends, not 256 links.
                let chain = format!(
                    "{} -> ... -> {}",
                    chain.first().cloned().unwrap_or_default(),
                    ref_text(key)
                );
                return Err(InventoryError::RefTooDeep {
                    param: display_path(param),
                    chain,
                    limit: MAX_DEPTH,
                });
            }
            return Err(InventoryError::Loop {
                param: display_path(param),
                chain: chain.join(" -> "),
            });
        }
        Ok(())
    }

    /// [`Self::check_loop`] for the path being looked up (`cur`), without
    /// copying it.
    fn check_loop_at_cur(&mut self) -> Result<(), InventoryError> {
        let cur = std::mem::take(&mut self.cur);
        let r = self.check_loop(&cur, false);
        self.cur = cur;
        r
    }

    /// Resolves `path[::default]` to its fully rendered value.
    fn resolve(
        &mut self,
        path_with_default: &str,
        origin: Origin,
    ) -> Result<Value, InventoryError> {
        // Byte searches: `str::split_once("::")` set up a substring
        // searcher for each of the ~1,300 references of every target.
        let bytes = path_with_default.as_bytes();
        let (path, default) = match bytes.windows(2).position(|w| w == b"::") {
            Some(i) => (&path_with_default[..i], Some(&path_with_default[i + 2..])),
            None => (path_with_default, None),
        };
        // The runs between colons copied whole (a char at a time grew the
        // string byte by byte: 8% of a render's instructions), into a
        // buffer of an earlier reference: two of three references are
        // answered from the cache, and need no key of their own.
        let mut key = self.spare_keys.pop().unwrap_or_default();
        key.clear();
        // A byte scan: `str::split(':')`'s char searcher cost more than
        // the copy.
        let mut start = 0;
        for (i, b) in path.bytes().enumerate() {
            if b == b':' {
                key.push_str(&path[start..i]);
                key.push(SEP);
                start = i + 1;
            }
        }
        key.push_str(&path[start..]);
        let r = self.resolve_key(&key, path, default, origin);
        self.spare_keys.push(key);
        r
    }

    fn resolve_key(
        &mut self,
        key: &str,
        path: &str,
        default: Option<&str>,
        origin: Origin,
    ) -> Result<Value, InventoryError> {
        self.lookups += 1;
        if self.lookups > MAX_LOOKUPS {
            return Err(InventoryError::TooManyLookups {
                param: self.param(),
                limit: MAX_LOOKUPS,
            });
        }
        if self.lookups.is_multiple_of(SHARED_STEP)
            && self
                .shared
                .fetch_add(SHARED_STEP, std::sync::atomic::Ordering::Relaxed)
                + SHARED_STEP
                > self.max_shared
        {
            return Err(InventoryError::TooManyRenderLookups {
                param: self.param(),
                limit: self.max_shared,
            });
        }
        if let Some(v) = self.cache.get(key) {
            let v = v.clone();
            self.count(&v)?;
            return Ok(v);
        }
        if let Some((e, j, id)) = (!self.failures.is_empty())
            .then(|| self.failures.get(key))
            .flatten()
        {
            if self.frame_ids.get(*j) == Some(id) {
                let (e, j) = (e.clone(), *j);
                self.note_hit(j);
                return Err(e);
            }
        }
        self.check_loop(key, true)?;
        let my = self.frames.len();
        let saved = self.loop_hit.take();
        // A path buffer from an earlier frame: a fresh one grew key by key
        // on every reference.
        let spare = self.spare_paths.pop().unwrap_or_default();
        let from = std::mem::replace(&mut self.cur, spare);
        self.frames.push((from, key.to_string()));
        self.next_id += 1;
        self.frame_ids.push(self.next_id);
        let r = self.navigate(key, origin);
        let (from, _) = self.frames.pop().unwrap_or_default();
        self.frame_ids.pop();
        let mut used = std::mem::replace(&mut self.cur, from);
        used.clear();
        self.spare_paths.push(used);
        // Hits at this frame or deeper are gone with it.
        let sub = self.loop_hit.take().filter(|j| *j < my);
        self.loop_hit = saved.max(sub);
        if let (Err(Failed(e)), Some(j)) = (&r, sub) {
            self.failures
                .insert(key.to_string(), (e.clone(), j, self.frame_ids[j]));
        }
        match r {
            Err(Missing { key: missing }) => match default {
                Some(d) => parse_default(d, origin, self),
                None => Err(self.unresolved(path, origin, format!("key `{missing}` not found"))),
            },
            Err(Failed(e)) => Err(e),
            Ok(v) => {
                self.count(&v)?;
                Ok(v)
            }
        }
    }

    fn note_hit(&mut self, j: usize) {
        self.loop_hit = self.loop_hit.max(Some(j));
    }

    /// The parameter whose resolution is under way, for a limit's error:
    /// the outermost one a reference chain started from.
    fn param(&self) -> String {
        display_path(
            self.frames
                .first()
                .map(|(p, _)| p.as_str())
                .unwrap_or(&self.cur),
        )
    }

    /// Adds a resolved value to the expansion budget.
    /// Values nested by references (`a: {x: ${b}}`, `b: {x: ${c}}`, ...)
    /// are held to the YAML nesting limit too, so that nothing that walks
    /// them recursively (clone, merge, output, drop) can overflow the stack.
    fn count(&mut self, v: &Value) -> Result<(), InventoryError> {
        let (size, depth) = value_size(v);
        self.expanded = self.expanded.saturating_add(size);
        if self.expanded > MAX_EXPANSION {
            return Err(InventoryError::TooLarge {
                param: self.param(),
                limit: MAX_EXPANSION,
            });
        }
        if depth > crate::yaml::MAX_DEPTH {
            return Err(InventoryError::ValueTooDeep {
                param: self.param(),
                limit: crate::yaml::MAX_DEPTH,
            });
        }
        Ok(())
    }

    fn unresolved(&self, path: &str, origin: Origin, reason: String) -> InventoryError {
        InventoryError::Unresolved {
            reference: clip(format!("${{{path}}}")),
            param: display_path(&self.cur),
            origin: self.origin_text(origin),
            reason: clip(reason),
        }
    }

    fn navigate(&mut self, key: &str, origin: Origin) -> Result<Value, Lookup> {
        let keys: Vec<&str> = key.split(SEP).collect();
        let root = self.root;
        self.navigate_from(root, &keys, 0, key, origin)
    }

    /// Looks `keys[start..]` up in `map` (what `keys[..start]` holds).
    fn navigate_from(
        &mut self,
        start_map: &UMap,
        keys: &[&str],
        start: usize,
        key: &str,
        origin: Origin,
    ) -> Result<Value, Lookup> {
        let mut map: &UMap = start_map;
        for (i, k) in keys.iter().enumerate().skip(start) {
            if i > 0 {
                self.cur.push(SEP);
            }
            self.cur.push_str(k);
            let Some(entry) = map.entries.get(*k) else {
                return Err(Missing { key: k.to_string() });
            };
            let last = i + 1 == keys.len();
            match &entry.value {
                UValue::Map(m) if !last => map = m,
                v if last => {
                    self.check_loop_at_cur().map_err(Failed)?;
                    let v = self.render(v).map_err(Failed)?;
                    self.cache.insert(self.cur.clone(), v.clone());
                    return Ok(v);
                }
                UValue::Layers(layers)
                    if !self.cache.contains_key(&self.cur) && !self.merging.contains(&self.cur) =>
                {
                    // As reclass-rs: a lookup below layered values (a map
                    // overridden by `${other}`, as Commodore's instance
                    // aliases do) merges the layers without rendering the
                    // rest of them, so `${comp:a}` inside `comp` resolves.
                    self.merging.push(self.cur.clone());
                    let merged = self.merge_layers(layers);
                    self.merging.pop();
                    return match merged.map_err(Failed)? {
                        UValue::Map(m) => self.navigate_from(&m, keys, i + 1, key, origin),
                        other => Err(Failed(self.lookup_error(
                            &keys[..=i],
                            keys[i + 1],
                            other.kind(),
                            origin,
                        ))),
                    };
                }
                v @ (UValue::Tmpl(_) | UValue::Layers(_)) => {
                    let rendered = match self.cache.get(&self.cur) {
                        Some(c) => c.clone(),
                        None => {
                            self.check_loop_at_cur().map_err(Failed)?;
                            let r = self.render(v).map_err(Failed)?;
                            self.cache.insert(self.cur.clone(), r.clone());
                            r
                        }
                    };
                    let v = self.descend(rendered, &keys[..=i], &keys[i + 1..], origin)?;
                    self.cache.insert(key.to_string(), v.clone());
                    return Ok(v);
                }
                other => {
                    return Err(Failed(self.lookup_error(
                        &keys[..=i],
                        keys[i + 1],
                        other.kind(),
                        origin,
                    )))
                }
            }
        }
        Err(Missing {
            key: keys.last().unwrap_or(&"").to_string(),
        })
    }

    /// Continues a lookup inside an already rendered value.
    fn descend(
        &self,
        mut v: Value,
        done: &[&str],
        rest: &[&str],
        origin: Origin,
    ) -> Result<Value, Lookup> {
        let mut traversed: Vec<&str> = done.to_vec();
        for k in rest {
            v = match v {
                Value::Map(mut m) => match m.swap_remove(*k) {
                    Some(x) => x,
                    None => return Err(Missing { key: k.to_string() }),
                },
                other => {
                    return Err(Failed(self.lookup_error(
                        &traversed,
                        k,
                        other.type_name(),
                        origin,
                    )))
                }
            };
            traversed.push(k);
        }
        Ok(v)
    }

    fn lookup_error(
        &self,
        done: &[&str],
        next: &str,
        kind: &str,
        origin: Origin,
    ) -> InventoryError {
        let path = self
            .frames
            .last()
            .map(|(_, t)| t.replace(SEP, ":"))
            .unwrap_or_default();
        let reason = if kind == "list" {
            format!(
                "`{}` is a list and references cannot index lists (looking up `{next}`)",
                done.join(":")
            )
        } else {
            format!(
                "`{}` is a {kind}, so `{next}` cannot be looked up in it",
                done.join(":")
            )
        };
        InventoryError::Unresolved {
            reference: clip(format!("${{{path}}}")),
            param: display_path(self.frames.last().map(|(p, _)| p.as_str()).unwrap_or("")),
            origin: self.origin_text(origin),
            reason: clip(reason),
        }
    }
}

enum Lookup {
    Missing { key: String },
    Failed(InventoryError),
}
use Lookup::{Failed, Missing};

fn parse_default(d: &str, origin: Origin, r: &Resolver) -> Result<Value, InventoryError> {
    match crate::yaml::load_one(d) {
        Ok(None) => Ok(Value::Null),
        Ok(Some(n)) => Ok(n.to_value()),
        Err(e) => Err(InventoryError::RefSyntax {
            origin: r.origin_text(origin),
            // The default is not quoted: it may be a password
            // (`${db:password::hunter2}`) and errors reach CI logs.
            message: format!(
                "the default value of a reference is not valid YAML (value not shown): {}",
                e.message
            ),
        }),
    }
}

/// Appends a value as it reads inside a string, as reclass-rs writes it:
/// Python-style booleans, `null`, and compact JSON (numbers as floats) for
/// lists and maps.
pub fn raw_string(v: &Value, out: &mut String) {
    match v {
        Value::String(s) => out.push_str(s),
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Int(i) => out.push_str(&i.to_string()),
        Value::Float(f) => out.push_str(&float_text(*f)),
        Value::List(_) | Value::Map(_) => json_floats(v, out),
    }
}

fn float_text(f: f64) -> String {
    if f.is_nan() {
        ".nan".into()
    } else if f.is_infinite() {
        if f > 0.0 { ".inf" } else { "-.inf" }.into()
    } else {
        serde_json::Number::from_f64(f)
            .map(|n| n.to_string())
            .unwrap_or_default()
    }
}

fn json_floats(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => out.push_str(&float_text(*i as f64)),
        Value::Float(f) if f.is_finite() => out.push_str(&float_text(*f)),
        Value::Float(_) => out.push_str("null"),
        Value::String(s) => out.push_str(&serde_json::to_string(s).unwrap_or_default()),
        Value::List(l) => {
            out.push('[');
            for (i, x) in l.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_floats(x, out);
            }
            out.push(']');
        }
        Value::Map(m) => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(k).unwrap_or_default());
                out.push(':');
                json_floats(x, out);
            }
            out.push('}');
        }
    }
}

/// `[i]` appended to a parameter path, digits written directly.
fn push_index(path: &mut String, i: usize) {
    let mut digits = [0u8; 20];
    let mut n = i;
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    path.push('[');
    // ASCII digits: always valid UTF-8.
    path.push_str(std::str::from_utf8(&digits[at..]).unwrap_or_default());
    path.push(']');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_indexes_are_written_in_decimal() {
        let mut p = String::from("a");
        for i in [0, 7, 10, 1234, usize::MAX] {
            p.truncate(1);
            push_index(&mut p, i);
            assert_eq!(p, format!("a[{i}]"));
        }
    }

    #[test]
    fn raw_strings_match_reclass_rs() {
        let v = Value::from_json(&serde_json::json!([1, {"x": 2}, true, null, "s", 1.5]));
        let mut s = String::new();
        raw_string(&v, &mut s);
        assert_eq!(s, r#"[1.0,{"x":2.0},true,null,"s",1.5]"#);
        let mut b = String::new();
        raw_string(&Value::Bool(true), &mut b);
        raw_string(&Value::Float(1000.0), &mut b);
        assert_eq!(b, "True1000.0");
    }

    #[test]
    fn prefix_paths() {
        assert!(is_prefix_or_equal("a", "a\u{1f}b"));
        assert!(is_prefix_or_equal("a", "a"));
        assert!(!is_prefix_or_equal("a", "ab"));
        assert_eq!(display_path("a\u{1f}b\u{1f}[0]\u{1f}c"), "a.b[0].c");
    }

    /// probe 34: an error quotes at most a few hundred bytes of a path
    /// (a 500 KB key printed 1 MB per target), cut on a character.
    #[test]
    fn long_paths_are_cut_in_errors() {
        let key = "é".repeat(100_000);
        let shown = display_path(&format!("{key}\u{1f}x"));
        assert!(shown.len() < 300, "{}", shown.len());
        assert!(
            shown.starts_with("éé") && shown.ends_with("… (200002 bytes)"),
            "{shown}"
        );
        assert_eq!(clip("short".into()), "short");
    }
}
