//! `strata compile --cache DIR`: each target's compiled directory kept
//! under its fingerprint, so a compile only compiles the targets whose
//! fingerprint is not in the cache. Cached files are hard-linked into the
//! new catalog (copied where links are not possible): bytes that did not
//! change are not written again. The catalog is still built beside the old
//! one and swapped in at the end, so a failure leaves the previous catalog
//! as it was, and files that went away are gone.
//!
//! Not cached (always compiled): targets without a fingerprint (see
//! [`super::fingerprint`]), targets sharing their output directory with
//! another target, and every target of a run that had
//! `continue_on_compile_error` warnings.
//!
//! Two records make a compile with nothing changed cheap:
//! - `.catalogs/<output>.json`: the keys of the catalog a run of every
//!   target installed, and what every entry below `compiled/` looked like
//!   then (path, size, modification time, inode, mode, change time, and
//!   the SHA-256 that settles a moved change time). When a run
//!   would install exactly those keys and the catalog still looks the same,
//!   it is left as it is: nothing linked, written, swapped or removed.
//! - `.inventories/<digest>.json`: the [`InventoryFacts`] of an inventory,
//!   under a digest of every file rendering reads ([`inventory_digest`]).
//!   A compile whose inventory files are byte for byte those of an earlier
//!   run takes the facts from there and fingerprints every target without
//!   rendering; only when every target is then in the cache is the
//!   rendering skipped (any miss renders and compiles as usual).

use super::fingerprint::{Fingerprinter, InventoryFacts};
use super::{Rendered, Workspace, WorkspaceError};
use crate::compile::{self, timings, CompileReport};
use crate::inventory::Inventory;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What a cached compile did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct CacheStats {
    /// Targets taken from the cache.
    pub hits: usize,
    /// Targets compiled (and stored when they could be).
    pub compiled: usize,
    /// Of those, targets that cannot be cached (no fingerprint or a shared
    /// output directory).
    pub uncacheable: usize,
}

fn io_err(path: &Path, e: std::io::Error) -> WorkspaceError {
    WorkspaceError::Config {
        message: format!("{}: {e}", path.display()),
        hint: Some("check that the --cache directory is writable, or remove it".into()),
    }
}

/// Recreates the tree `from` at `to` with hard links (copies across file
/// systems). Anything but regular files and directories is refused.
fn link_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    let mut entries: Vec<_> = std::fs::read_dir(from)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let ft = e.file_type()?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if ft.is_dir() {
            link_tree(&src, &dst)?;
        } else if ft.is_file() {
            if std::fs::hard_link(&src, &dst).is_err() {
                std::fs::copy(&src, &dst)?;
            }
        } else {
            return Err(std::io::Error::other(format!(
                "{} is not a regular file or directory",
                src.display()
            )));
        }
    }
    Ok(())
}

/// A catalog directory a facts record may name: relative, with plain
/// names only. The record is a file in the cache directory, which a CI
/// cache restored from another run (a pull request's) may have written:
/// `../..` or an absolute directory there made a compile link the cached
/// files outside the catalog (probe 29), where a rendered plan's
/// directory is always below it.
fn plain_relative(dir: &str) -> bool {
    !dir.is_empty()
        && !dir.contains('\0')
        && Path::new(dir)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A digest of every file rendering `inventory` reads (class and target
/// files with their names and paths, `reclass-config.yml`), the effective
/// inventory options, strata's version and the environment variables a
/// model dump reads (`VAULT_ADDR`, ...); `None` when a file cannot be
/// read (the run then renders, and reports it).
pub fn inventory_digest(inventory: &Inventory) -> Option<String> {
    let mut h = Sha256::new();
    // `facts 4`: entries list the files they name, their `helm_path`
    // marked, and a `post_renderer` makes them unknown (facts cached
    // before differ).
    h.update(format!(
        "strata {}
facts 4
{:?}
",
        env!("CARGO_PKG_VERSION"),
        inventory.options()
    ));
    // A dump also reads the `VAULT_*` settings from the environment (the
    // defaults of `kapitan.secrets.vaultkv`): before, a compile whose
    // inventory files were unchanged took the facts kept under the old
    // values and served the catalog a template printing `addr` from
    // then (probe 25).
    for name in crate::compile::model::dump_env_names() {
        if let Some(v) = std::env::var_os(&name) {
            let v = v.to_string_lossy();
            h.update(format!("env {name} {} ", v.len()));
            h.update(v.as_bytes());
            h.update(b"\n");
        }
    }
    let mut file = |kind: &str, name: &str, path: &Path| -> Option<()> {
        // A FIFO (`reclass-config.yml` made one, which rendering skips)
        // would block the read for ever: no digest, the run renders.
        if !std::fs::metadata(path).ok()?.is_file() {
            return None;
        }
        let bytes = std::fs::read(path).ok()?;
        h.update(format!(
            "{kind} {name} {} {}\n",
            path.display(),
            bytes.len()
        ));
        h.update(&bytes);
        Some(())
    };
    for (name, path) in inventory.class_files() {
        file("class", &name, &path)?;
    }
    for name in inventory.target_names() {
        file("target", &name, inventory.target_file(&name)?)?;
    }
    let config = inventory.options().path.join("reclass-config.yml");
    if std::fs::symlink_metadata(&config).is_ok() {
        file("config", "", &config)?;
    }
    Some(hex(&h.finalize()))
}

/// What the catalog a run of every target installed holds.
#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct CatalogRecord {
    /// Target name -> (output directory, cache key).
    targets: BTreeMap<String, (String, String)>,
    /// [`catalog_state`] right after the install.
    state: State,
}

/// What one file looked like when it was stored or installed.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct FileState {
    /// Size, modification time, inode and mode: a write or a replacement
    /// changes one of them, unless the modification time was set back.
    quick: String,
    /// The inode's change time, which no one can set back: it moves on
    /// any write, and also when a link to the file is made or removed
    /// (which strata does itself), so a moved one is settled by `sha256`.
    ctime: (i64, i64),
    sha256: String,
}

/// Every entry below a directory as the file system shows it.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
struct State {
    dirs: Vec<String>,
    files: BTreeMap<String, FileState>,
}

/// Files by path: the quick state, the change time, where the file is.
type Files = BTreeMap<String, (String, (i64, i64), PathBuf)>;

/// The entries below `dir`: directories, and files with their state and
/// path (not yet hashed). `None` when `dir` cannot be read or holds
/// something other than files and directories.
fn scan(dir: &Path) -> Option<(Vec<String>, Files)> {
    use std::os::unix::fs::MetadataExt;
    fn walk(dir: &Path, rel: &str, dirs: &mut Vec<String>, files: &mut Files) -> Option<()> {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .ok()?
            .collect::<Result<_, _>>()
            .ok()?;
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = e.file_name();
            let name = name.to_str()?;
            let r = format!("{rel}/{name}");
            let m = e.metadata().ok()?;
            if m.is_dir() {
                dirs.push(r.clone());
                walk(&e.path(), &r, dirs, files)?;
            } else if m.is_file() {
                let quick = format!(
                    "{} {} {} {} {}",
                    m.len(),
                    m.mtime(),
                    m.mtime_nsec(),
                    m.ino(),
                    m.mode()
                );
                files.insert(r, (quick, (m.ctime(), m.ctime_nsec()), e.path()));
            } else {
                return None;
            }
        }
        Some(())
    }
    // The root itself must be a directory, not a link to one: a cache
    // directory or catalog a pull request committed could hold
    // `<key> -> /srv` (any empty directory of the runner) beside a
    // `<key>.state` saying "empty", and the target was served with no
    // files, exit 0; `compiled -> /srv` with a planted catalog record
    // kept an empty catalog "as it is" (probe 36).
    if !real_dir(dir) {
        return None;
    }
    let (mut dirs, mut files) = (Vec::new(), Files::new());
    walk(dir, "", &mut dirs, &mut files)?;
    Some((dirs, files))
}

/// `path` is a directory itself, not a symbolic link to one.
fn real_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

fn file_sha256(path: &Path) -> Option<String> {
    let mut h = Sha256::new();
    let mut f = std::fs::File::open(path).ok()?;
    std::io::copy(&mut f, &mut h).ok()?;
    Some(hex(&h.finalize()))
}

/// The state of everything below `dir` (path, type, size, modification
/// time, inode, mode, change time and content digest): any file written,
/// replaced, added or removed since changes it. `None` when `dir` cannot
/// be read or holds something other than files and directories.
fn catalog_state(dir: &Path) -> Option<State> {
    let (dirs, files) = scan(dir)?;
    let files = files
        .into_iter()
        .map(|(r, (quick, ctime, path))| {
            let sha256 = file_sha256(&path)?;
            Some((
                r,
                FileState {
                    quick,
                    ctime,
                    sha256,
                },
            ))
        })
        .collect::<Option<_>>()?;
    Some(State { dirs, files })
}

/// Whether `dir` still looks as `kept` says: the same entries with the
/// same size, modification time, inode and mode, and, for a file whose
/// change time moved, the same bytes. On a match, the state now (change
/// times updated) when one moved, so the next check reads no bytes.
///
/// `by_content`: a file whose inode or times moved (a cache restored from
/// an archive, such as `actions/cache`'s) is the same file when its size,
/// mode and bytes are. Only for a cache directory git tracks nothing in:
/// a commit could put an entry and a record agreeing on their bytes there.
fn state_matches(dir: &Path, kept: &State, by_content: bool) -> Option<Option<State>> {
    let (dirs, files) = scan(dir)?;
    if dirs != kept.dirs || files.len() != kept.files.len() {
        return None;
    }
    let mut moved = false;
    let mut now = State {
        dirs,
        files: BTreeMap::new(),
    };
    for (r, (quick, ctime, path)) in files {
        let k = kept.files.get(&r)?;
        let quick_moved = quick != k.quick;
        if quick_moved && !(by_content && size_and_mode(&quick) == size_and_mode(&k.quick)) {
            return None;
        }
        if quick_moved || ctime != k.ctime {
            if file_sha256(&path)? != k.sha256 {
                return None;
            }
            moved = true;
        }
        now.files.insert(
            r,
            FileState {
                quick,
                ctime,
                sha256: k.sha256.clone(),
            },
        );
    }
    Some(moved.then_some(now))
}

/// The size and mode of a [`FileState::quick`].
fn size_and_mode(quick: &str) -> (Option<&str>, Option<&str>) {
    let mut f = quick.split(' ');
    (f.next(), f.nth(3))
}

fn state_path(cache: &Path, key: &str) -> PathBuf {
    cache.join(format!("{key}.state"))
}

/// The entry `cache/<key>` is there and looks as it did when it was stored
/// (its files are hard-linked into catalogs, where anyone may write to
/// them).
fn entry_intact(cache: &Path, key: &str, by_content: bool) -> bool {
    let path = state_path(cache, key);
    let Some(kept) = read_record::<State>(&path) else {
        return false;
    };
    match state_matches(&cache.join(key), &kept, by_content) {
        None => false,
        Some(None) => true,
        Some(Some(now)) => {
            write_record(&path, &now);
            true
        }
    }
}

/// Moves a finished target directory `partial` into the cache as `key`,
/// with its state beside it. Best effort: a target that cannot be stored
/// is compiled again next time.
fn store_entry(cache: &Path, key: &str, partial: &Path, by_content: bool) {
    // Another run sharing the cache may have stored the key since this
    // one missed it, and a third may be linking from that entry into its
    // catalog: removing it under that run left it a catalog with the
    // files not yet removed, exit 0 (probe 36).
    if entry_intact(cache, key, by_content) {
        return;
    }
    let entry = cache.join(key);
    let state = state_path(cache, key);
    // An entry that failed its check is replaced: moved aside whole
    // first, so a path below `entry` names the old entry or the new one,
    // never one half removed.
    let _ = std::fs::remove_file(&state);
    let old = tempfile::Builder::new()
        .prefix(SCRATCH_OLD)
        .tempdir_in(cache)
        .ok();
    match &old {
        Some(old) => {
            let _ = std::fs::rename(&entry, old.path().join("entry"));
        }
        None => {
            let _ = std::fs::remove_dir_all(&entry);
        }
    }
    let stored = std::fs::rename(partial, &entry).is_ok()
        && catalog_state(&entry)
            .and_then(|s| serde_json::to_vec(&s).ok())
            .is_some_and(|s| std::fs::write(&state, s).is_ok());
    if !stored {
        let _ = std::fs::remove_dir_all(partial);
        let _ = std::fs::remove_file(&state);
    }
}

/// Prefixes of a run's scratch directories in the cache.
const SCRATCH_PARTIAL: &str = ".partial-";
const SCRATCH_OLD: &str = ".old-";

/// Removes scratch directories a killed run left in `cache` (an hour
/// old or more: a running compile's are younger).
fn sweep_scratch(cache: &Path) {
    let Ok(entries) = std::fs::read_dir(cache) else {
        return;
    };
    let hour = std::time::Duration::from_secs(3600);
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with(SCRATCH_PARTIAL) || name.starts_with(SCRATCH_OLD)) {
            continue;
        }
        let stale = e
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t.elapsed().is_ok_and(|age| age >= hour));
        if stale && e.file_type().is_ok_and(|t| t.is_dir()) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// A new directory in `cache` to link a finished target into before
/// [`store_entry`] moves it in place (removed when dropped, if still
/// there). Its own for this run: two compiles sharing a cache used one
/// `.partial-<key>` each emptied and filled at once, and the first to
/// move it in stored what the other had linked so far, with a state to
/// match: 3,982 of a target's 12,000 files, served by every later run
/// (probe 36, cache-concurrent-store-incomplete-entry).
fn partial_dir(cache: &Path, key: &str) -> Option<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(&format!("{SCRATCH_PARTIAL}{key}-"))
        .tempdir_in(cache)
        .ok()
}

fn record_path(cache: &Path, output_path: &Path) -> PathBuf {
    let id = hex(&Sha256::digest(output_path.to_string_lossy().as_bytes()));
    cache.join(".catalogs").join(format!("{id}.json"))
}

/// The targets whose output directory is another's too, or inside or
/// above another's (`a` and `a.sub`): not cached, since what their
/// directory holds depends on the others and on the order of the writes
/// (probe 25: a cached `a` brought back its `sub/y.yml` where a compile
/// of both wrote `a.sub`'s).
fn overlapping_of<'a>(dirs: impl Iterator<Item = (&'a String, &'a String)>) -> BTreeSet<String> {
    let dirs: Vec<(String, String)> = dirs.map(|(t, d)| (t.clone(), d.clone())).collect();
    super::fingerprint::overlapping_outputs(&dirs)
        .into_keys()
        .collect()
}

fn facts_path(cache: &Path, digest: &str) -> PathBuf {
    cache.join(".inventories").join(format!("{digest}.json"))
}

/// What tells the very file strata wrote from another with the same
/// bytes: its device, inode, size and change time (which no one can set,
/// and a checkout or restore makes new). `None` for anything but a
/// regular file.
fn record_stamp(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(path).ok()?;
    m.is_file().then(|| {
        format!(
            "{} {} {} {} {}",
            m.dev(),
            m.ino(),
            m.len(),
            m.ctime(),
            m.ctime_nsec()
        )
    })
}

fn stamp_path(record: &Path) -> PathBuf {
    record.with_extension("stamp")
}

/// The facts kept under `digest`, when their record is the file a run
/// wrote there ([`write_facts`]). The record decides which targets a
/// compile that skips rendering installs, and a cache directory inside the
/// repository holds whatever a merged pull request committed: a planted
/// `{"targets":{}}` under the (computable) digest installed an empty
/// catalog, exit 0 (probe 36). Entries are trusted the same way (their
/// files' inodes and change times, [`entry_intact`]).
fn read_facts(cache: &Path, digest: &str) -> Option<InventoryFacts> {
    let path = facts_path(cache, digest);
    facts_intact(&path).then(|| read_record(&path)).flatten()
}

fn facts_intact(path: &Path) -> bool {
    let kept = read_regular(&stamp_path(path)).and_then(|b| String::from_utf8(b).ok());
    kept.is_some_and(|kept| record_stamp(path).is_some_and(|now| now == kept))
}

fn write_facts(cache: &Path, digest: &str, facts: &InventoryFacts) {
    let path = facts_path(cache, digest);
    let _ = std::fs::remove_file(stamp_path(&path));
    if !write_record(&path, facts) {
        return;
    }
    if let Some(stamp) = record_stamp(&path) {
        let _ = std::fs::write(stamp_path(&path), stamp);
    }
}

/// Writes `value` as JSON at `path` through a temporary file (a reader
/// never sees half of it). Best effort: a record that cannot be written
/// only makes the next run do more work; `false` then.
fn write_record<T: serde::Serialize>(path: &Path, value: &T) -> bool {
    let Some(dir) = path.parent() else {
        return false;
    };
    // `.catalogs` / `.inventories` a link (committed into a cache directory
    // inside the repository): the records went where it pointed, outside
    // the cache (probe 42, cache-record-directory-link-out). Not written
    // then: the next run renders and compiles as with no record.
    if std::fs::create_dir_all(dir).is_err() || !real_dir(dir) {
        return false;
    }
    let Ok(bytes) = serde_json::to_vec(value) else {
        return false;
    };
    let Ok(mut tmp) = tempfile::NamedTempFile::new_in(dir) else {
        return false;
    };
    std::io::Write::write_all(&mut tmp, &bytes).is_ok() && tmp.persist(path).is_ok()
}

fn read_record<T: serde::de::DeserializeOwned>(path: &Path) -> Option<T> {
    serde_json::from_slice(&read_regular(path)?).ok()
}

/// The most bytes a record (a state, catalog, facts record or stamp) may
/// hold: a state of a million files is about 200 MB.
const MAX_RECORD_BYTES: u64 = 1 << 30;

/// The bytes of the regular file at `path` itself (not through a link,
/// not a FIFO or device), up to [`MAX_RECORD_BYTES`]; `None` otherwise
/// (the run then compiles, as without the record). The cache directory
/// is what a commit or a restored `actions/cache` put there: a
/// `<key>.state`, `.catalogs/<id>.json` or `.stamp` that was a link to
/// `/dev/zero` took memory at 450 MB/s until the machine ran out, and a
/// FIFO blocked the compile for ever.
fn read_regular(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let len = f.metadata().ok().filter(|m| m.is_file())?.len();
    if len > MAX_RECORD_BYTES {
        return None;
    }
    let mut bytes = Vec::with_capacity(len as usize);
    f.take(MAX_RECORD_BYTES + 1).read_to_end(&mut bytes).ok()?;
    (bytes.len() as u64 <= MAX_RECORD_BYTES).then_some(bytes)
}

impl Workspace {
    /// The catalog at `<output_path>/compiled` is the one a run installed
    /// with exactly these `keys`, untouched since.
    fn catalog_is(&self, cache: &Path, keys: &BTreeMap<String, (String, String)>) -> bool {
        timings::time("cache: check installed catalog", || {
            let path = record_path(cache, &self.output_path);
            let Some(mut rec) = read_record::<CatalogRecord>(&path) else {
                return false;
            };
            if rec.targets != *keys {
                return false;
            }
            match state_matches(&self.output_path.join("compiled"), &rec.state, false) {
                None => false,
                Some(None) => true,
                Some(Some(now)) => {
                    rec.state = now;
                    write_record(&path, &rec);
                    true
                }
            }
        })
    }

    fn remember_catalog(&self, cache: &Path, keys: BTreeMap<String, (String, String)>) {
        timings::time("cache: record installed catalog", || {
            if let Some(state) = catalog_state(&self.output_path.join("compiled")) {
                let rec = CatalogRecord {
                    targets: keys,
                    state,
                };
                write_record(&record_path(cache, &self.output_path), &rec);
            }
        })
    }

    /// A compile of every target without rendering: when the inventory's
    /// files are those of an earlier cached run ([`inventory_digest`]) and
    /// every target's fingerprint, made from the facts kept then, is in
    /// the cache. The catalog is then left as it is when it is the one
    /// those keys make, else rebuilt from the cache and swapped in.
    /// `None`: not possible, render and compile as usual.
    pub fn compile_catalog_unrendered(
        &self,
        digest: &str,
        cache: &Path,
    ) -> Result<Option<(CompileReport, CacheStats)>, WorkspaceError> {
        let Some(facts) = read_facts(cache, digest) else {
            return Ok(None);
        };
        let overlapping = overlapping_of(facts.targets.iter().map(|(t, f)| (t, &f.dir)));
        let mut fp = Fingerprinter::from_facts(self, &facts);
        let mut keys = BTreeMap::new();
        for (name, f) in &facts.targets {
            if f.entries.is_empty() && !f.installs_packages {
                continue; // nothing to compile
            }
            if !plain_relative(&f.dir) || overlapping.contains(name) {
                return Ok(None);
            }
            let Ok(key) = fp.target(name) else {
                return Ok(None);
            };
            if !real_dir(&cache.join(&key)) {
                return Ok(None);
            }
            keys.insert(name.clone(), (f.dir.clone(), key));
        }
        let report = CompileReport {
            targets: keys
                .iter()
                .map(|(n, (d, _))| (n.clone(), d.clone()))
                .collect(),
            ..Default::default()
        };
        let stats = CacheStats {
            hits: keys.len(),
            ..Default::default()
        };
        if self.catalog_is(cache, &keys) {
            return Ok(Some((report, stats)));
        }
        // Linking from an entry that was written to through the catalog
        // would spread the edit: such an entry is a miss (the usual path
        // compiles the target again).
        let intact = timings::time("cache: check entries", || {
            keys.values()
                .all(|(_, key)| entry_intact(cache, key, false))
        });
        if !intact {
            return Ok(None);
        }
        let temp = compile::temp_root(&self.output_path)?;
        let new_root = temp.path().join("compiled");
        timings::time("cache: link hits", || -> Result<(), WorkspaceError> {
            std::fs::create_dir_all(&new_root).map_err(|e| io_err(&new_root, e))?;
            for (dir, key) in keys.values() {
                let hit = cache.join(key);
                link_tree(&hit, &new_root.join(dir)).map_err(|e| io_err(&hit, e))?;
            }
            Ok(())
        })?;
        compile::install(temp.path(), &self.output_path, &report, true)?;
        timings::time("remove previous catalog", || drop(temp));
        self.remember_catalog(cache, keys);
        Ok(Some((report, stats)))
    }

    /// [`Workspace::compile_catalog`] with a cache directory.
    pub fn compile_catalog_cached(
        &self,
        rendered: &Rendered,
        selected: &[String],
        cache: &Path,
        on_done: &(dyn Fn(&str) + Sync),
    ) -> Result<(CompileReport, CacheStats), WorkspaceError> {
        self.compile_catalog_cached_with(rendered, selected, cache, on_done, None)
    }

    /// [`Workspace::compile_catalog_cached`]; with `inventory_digest` (the
    /// [`inventory_digest`] of the inventory `rendered` came from), a run
    /// of every target keeps the facts that let the next run with the same
    /// inventory files skip rendering
    /// ([`Workspace::compile_catalog_unrendered`]).
    pub fn compile_catalog_cached_with(
        &self,
        rendered: &Rendered,
        selected: &[String],
        cache: &Path,
        on_done: &(dyn Fn(&str) + Sync),
        inventory_digest: Option<&str>,
    ) -> Result<(CompileReport, CacheStats), WorkspaceError> {
        std::fs::create_dir_all(cache).map_err(|e| io_err(cache, e))?;
        sweep_scratch(cache);
        // A cache restored by `actions/cache` has new inodes: its entries
        // are checked by their bytes, unless a commit put files there.
        let by_content = !crate::diff::git::tracks_files_below(cache);
        let plans = &rendered.prepared.plans;
        let overlapping = overlapping_of(plans.iter().map(|(t, p)| (t, &p.dir)));
        let t0 = std::time::Instant::now();
        let mut fp = Fingerprinter::new(self, rendered);
        let refs_before = Fingerprinter::refs_now(self);
        let mut stats = CacheStats::default();
        let mut to_compile = Vec::new();
        // Target -> (output directory, key) of every cacheable target.
        let mut keys: BTreeMap<String, (String, String)> = BTreeMap::new();
        for name in selected {
            let Some(plan) = plans.get(name) else {
                continue;
            };
            if plan.entries.is_empty() && !declares_packages(rendered, name) {
                continue; // nothing to compile (compile_selected skips it too)
            }
            match fp.target(name) {
                Ok(k) if !overlapping.contains(name) && !plan.dir.is_empty() => {
                    keys.insert(name.clone(), (plan.dir.clone(), k));
                }
                _ => {
                    stats.uncacheable += 1;
                    to_compile.push(name.clone());
                }
            }
        }
        let all = selected.len() == plans.len();
        if let (Some(digest), true) = (inventory_digest, all) {
            if !fetches_dependencies(rendered) {
                // A record no run wrote (or one a restore copied) is
                // replaced by this run's.
                if !facts_intact(&facts_path(cache, digest)) {
                    write_facts(cache, digest, &fp.inventory_facts());
                }
            }
        }
        if timings::enabled() {
            timings::add("cache: fingerprints", t0.elapsed());
        }
        let everything_cached =
            to_compile.is_empty() && keys.values().all(|(_, k)| real_dir(&cache.join(k)));
        if all && everything_cached && self.catalog_is(cache, &keys) {
            // The catalog on disk is the one these keys make: keep it.
            stats.hits = keys.len();
            let report = CompileReport {
                targets: keys.into_iter().map(|(n, (d, _))| (n, d)).collect(),
                ..Default::default()
            };
            return Ok((report, stats));
        }
        let t0 = std::time::Instant::now();
        let temp = compile::temp_root(&self.output_path)?;
        let new_root = temp.path().join("compiled");
        std::fs::create_dir_all(&new_root).map_err(|e| io_err(&new_root, e))?;
        let mut report = CompileReport::default();
        let mut missed: BTreeMap<String, String> = BTreeMap::new();
        for (name, (dir, key)) in &keys {
            let hit = cache.join(key);
            if entry_intact(cache, key, by_content) {
                link_tree(&hit, &new_root.join(dir)).map_err(|e| io_err(&hit, e))?;
                report.targets.push((name.clone(), dir.clone()));
                stats.hits += 1;
                on_done(name);
            } else {
                missed.insert(name.clone(), key.clone());
                to_compile.push(name.clone());
            }
        }
        to_compile.sort();
        if timings::enabled() {
            timings::add("cache: link hits", t0.elapsed());
        }
        let compiled = self.compile_into(rendered, &to_compile, temp.path(), on_done)?;
        let t0 = std::time::Instant::now();
        stats.compiled = to_compile.len();
        let failed = !compiled.failed.is_empty();
        // The keys hold the references as they were before the compile: one
        // that wrote a reference (`?{base64:pw||randomstr}` creates `pw`)
        // made entries a later run with `pw` gone would take, leaving a
        // catalog that names a reference no one wrote again (probe 25).
        // The next run, with the references as they are now, stores them.
        let refs_written = refs_before.is_err() || Fingerprinter::refs_now(self) != refs_before;
        if compiled.warnings.is_empty() && !refs_written {
            for (name, dir) in &compiled.targets {
                let Some(key) = missed.get(name) else {
                    continue;
                };
                // A target that cannot be stored is simply compiled again
                // next time.
                let Some(partial) = partial_dir(cache, key) else {
                    continue;
                };
                if link_tree(&new_root.join(dir), partial.path()).is_ok() {
                    store_entry(cache, key, partial.path(), by_content);
                }
            }
        }
        if timings::enabled() {
            timings::add("cache: store", t0.elapsed());
        }
        report.targets.extend(compiled.targets);
        report.targets.sort();
        report.warnings = compiled.warnings;
        report.notices = compiled.notices;
        compile::install(temp.path(), &self.output_path, &report, all)?;
        timings::time("remove previous catalog", || drop(temp));
        // Only a catalog made of cached targets alone can be recognised
        // next time.
        if all && stats.uncacheable == 0 && report.warnings.is_empty() && !failed && !refs_written {
            self.remember_catalog(cache, keys);
        } else {
            let _ = std::fs::remove_file(record_path(cache, &self.output_path));
        }
        Ok((report, stats))
    }
}

fn declares_packages(rendered: &Rendered, target: &str) -> bool {
    rendered
        .prepared
        .dumps
        .get(target)
        .and_then(|d| d.get_path(&["parameters", "packages_install"]))
        .is_some_and(|v| !v.is_null())
}

/// Some target declares `parameters.kapitan.dependencies`: `force_fetch`
/// ones are fetched on every compile, so such a compile is never skipped.
fn fetches_dependencies(rendered: &Rendered) -> bool {
    rendered.prepared.dumps.values().any(|d| {
        match d.get_path(&["parameters", "kapitan", "dependencies"]) {
            None | Some(crate::value::Value::Null) => false,
            Some(crate::value::Value::List(l)) => !l.is_empty(),
            Some(_) => true,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(dir: &Path, files: usize) {
        for i in 0..files {
            let f = dir.join(format!("d{}/f{i}", i % 3));
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, format!("{i}\n")).unwrap();
        }
    }

    fn files_below(dir: &Path) -> usize {
        scan(dir).map_or(0, |(_, files)| files.len())
    }

    /// Two runs storing one key at once: the second starts linking while
    /// the first has finished, and the first's complete directory is what
    /// the entry holds, with a state that matches it.
    #[test]
    fn a_store_beside_another_runs_stores_a_complete_entry() {
        let tmp = tempfile::tempdir().unwrap();
        let (cache, full) = (tmp.path().join("cache"), tmp.path().join("full"));
        std::fs::create_dir_all(&cache).unwrap();
        tree(&full, 30);
        let first = partial_dir(&cache, "k").unwrap();
        link_tree(&full, first.path()).unwrap();
        // The other run has linked one directory of three so far.
        let second = partial_dir(&cache, "k").unwrap();
        link_tree(&full.join("d0"), &second.path().join("d0")).unwrap();
        store_entry(&cache, "k", first.path(), false);
        assert_eq!(files_below(&cache.join("k")), 30);
        assert!(entry_intact(&cache, "k", false));
        drop((first, second));
        let left: Vec<_> = std::fs::read_dir(&cache)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left.len(), 2, "{left:?}"); // `k` and `k.state`
    }

    /// A run that missed a key stores it after another run stored the
    /// same one, which a third may be linking from: the stored entry stays
    /// (its files are not removed under the reader), and a broken one is
    /// replaced.
    #[test]
    fn a_store_keeps_an_entry_another_run_stored() {
        use std::os::unix::fs::MetadataExt;
        let tmp = tempfile::tempdir().unwrap();
        let (cache, full) = (tmp.path().join("cache"), tmp.path().join("full"));
        std::fs::create_dir_all(&cache).unwrap();
        tree(&full, 30);
        let inode = |p: &Path| std::fs::metadata(p).unwrap().ino();
        let stored = partial_dir(&cache, "k").unwrap();
        link_tree(&full, stored.path()).unwrap();
        store_entry(&cache, "k", stored.path(), false);
        let before = inode(&cache.join("k/d1/f1"));
        let late = partial_dir(&cache, "k").unwrap();
        std::fs::create_dir_all(late.path().join("d1")).unwrap();
        std::fs::write(late.path().join("d1/f1"), "1\n").unwrap();
        store_entry(&cache, "k", late.path(), false);
        assert_eq!(inode(&cache.join("k/d1/f1")), before);
        assert_eq!(files_below(&cache.join("k")), 30);
        // A broken entry (a file written to through a catalog) is replaced.
        std::fs::write(cache.join("k/d1/f1"), "edited\n").unwrap();
        let fresh = tmp.path().join("fresh");
        tree(&fresh, 30);
        let again = partial_dir(&cache, "k").unwrap();
        link_tree(&fresh, again.path()).unwrap();
        store_entry(&cache, "k", again.path(), false);
        assert_eq!(
            std::fs::read_to_string(cache.join("k/d1/f1")).unwrap(),
            "1\n"
        );
        assert!(entry_intact(&cache, "k", false));
        drop((stored, late, again));
        assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 2);
    }
}
