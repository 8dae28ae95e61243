//! The fuzz targets, shared by the libFuzzer entry points (fuzz_targets/)
//! and the stable mutation driver (src/mutate.rs). Each takes arbitrary
//! bytes and must return (an error is fine) without panicking, hanging or
//! running out of memory.

use std::path::PathBuf;
use std::sync::OnceLock;

fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

/// The YAML loader (inventory reading, YAML 1.2) and the PyYAML-style one.
pub fn yaml(data: &[u8]) {
    let t = text(data);
    if let Ok(docs) = strata::yaml::load_all(&t) {
        for d in &docs {
            let _ = d.to_value();
        }
    }
    let _ = strata::compile::pyyaml_load::load_all(&t);
}

/// A scratch inventory directory reused by every run of this process.
fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        // Every run rewrites a small inventory: on tmpfs when there is one.
        let shm = std::path::Path::new("/dev/shm");
        let d = if shm.is_dir() {
            tempfile::tempdir_in(shm)
        } else {
            tempfile::tempdir()
        }
        .expect("a temporary directory");
        let p = d.keep();
        p
    })
}

/// Writes the files and renders every target; errors are expected.
fn render(files: &[(String, String)]) {
    let root = scratch().join("inventory");
    let _ = std::fs::remove_dir_all(&root);
    for (rel, content) in files {
        let p = root.join(rel);
        let _ = std::fs::create_dir_all(p.parent().expect("a parent"));
        let _ = std::fs::write(p, content);
    }
    let opts = strata::inventory::InventoryOptions {
        path: root,
        ..Default::default()
    };
    if let Ok(inv) = strata::inventory::Inventory::load(&opts) {
        let _ = inv.render(&[]);
        let _ = inv.check_files();
    }
}

/// The reference parser, then the resolver on the same text as a value
/// next to a few parameters it can refer to.
pub fn refs(data: &[u8]) {
    let t = text(data);
    let _ = strata::inventory::refs::parse(&t);
    let quoted = format!("{t:?}"); // a YAML double-quoted scalar
    let target = format!(
        "parameters:\n  a: 1\n  b:\n    c: [x, y]\n  s: \"${{a}}-${{b:c}}\"\n  v: {quoted}\n  w: {quoted}\n"
    );
    render(&[("targets/t.yml".into(), target)]);
}

/// The class/target loader: the input split at lines `===` into a target
/// and up to three classes it includes.
pub fn inventory(data: &[u8]) {
    let t = text(data);
    let mut files = Vec::new();
    for (i, part) in t.split("\n===\n").take(4).enumerate() {
        let rel = if i == 0 {
            "targets/t.yml".to_string()
        } else {
            format!("classes/c{}.yml", i - 1)
        };
        files.push((rel, part.to_string()));
    }
    render(&files);
}

/// The ytt-style engine: the input split at `===` into a template and an
/// overlay (`#@overlay/match` annotations and friends).
pub fn overlay(data: &[u8]) {
    let t = text(data);
    let mut parts = t.splitn(2, "\n===\n");
    let template = parts.next().unwrap_or("").to_string();
    let overlay = parts.next().unwrap_or("").to_string();
    let file = |path: &str, text: String| strata::template::eval::SrcFile {
        path: path.to_string(),
        text,
        mark_type: None,
    };
    let opts = strata::template::Options {
        files: vec![file("config.yml", template), file("overlay.yml", overlay)],
        ..Default::default()
    };
    let _ = strata::template::run(&opts);
}

/// The diff redactor: the input split at `===` into an old and a new
/// version, compared as YAML objects and as text.
pub fn redact(data: &[u8]) {
    let t = text(data);
    let mut parts = t.splitn(2, "\n===\n");
    let old = parts.next().unwrap_or("");
    let new = parts.next().unwrap_or("");
    // One redactor for the process, as a review builds one: compiling its
    // regexes per input made this target run at ~60 inputs a second.
    static REDACTOR: OnceLock<strata::diff::redact::Redactor> = OnceLock::new();
    let r = REDACTOR.get_or_init(strata::diff::redact::Redactor::default);
    let first = |s: &str| {
        strata::yaml::load_values(s)
            .ok()
            .and_then(|v| v.into_iter().next())
    };
    let (o, n) = (first(old), first(new));
    let _ = r.redact_pair(o.as_ref(), n.as_ref());
    let _ = r.redact_text(old);
    let _ = r.redact_text(new);
}
