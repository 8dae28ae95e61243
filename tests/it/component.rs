//! `strata component compile`: real Project Syn components (copied with
//! their licences into `tests/fixtures/commodore/components/`) compiled
//! the way their `make golden-diff` runs Commodore, against the golden
//! files Commodore wrote; golden checking and updating.

use crate::strata;
use std::fs;
use std::path::{Path, PathBuf};

fn component(name: &str) -> tempfile::TempDir {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/commodore/components")
        .join(name);
    let tmp = tempfile::tempdir().unwrap();
    copy(&src, tmp.path());
    tmp
}

fn copy(src: &Path, dst: &Path) {
    fs::create_dir_all(dst).unwrap();
    for e in fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.path().is_dir() {
            copy(&e.path(), &to);
        } else {
            fs::copy(e.path(), &to).unwrap();
        }
    }
}

/// Every file below `dir`, relative, sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// `component compile . -f tests/<instance>.yml --search-paths . -n <name>
/// [--alias <instance>]`, as the component template's Makefile runs it.
fn compile_args(name: &str, instance: &str, alias: bool) -> Vec<String> {
    let mut a: Vec<String> = [
        "component",
        "compile",
        ".",
        "-f",
        &format!("tests/{instance}.yml"),
        "--search-paths",
        ".",
        "-n",
        name,
        "--no-fetch",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if alias {
        a.extend(["--alias".to_string(), instance.to_string()]);
    }
    a
}

#[test]
fn real_components_compile_to_their_golden_files() {
    for (name, instance, alias) in [
        ("secrets", "defaults", false),
        ("namespaces", "team1", true),
        ("namespaces", "team2", true),
    ] {
        let dir = component(name);
        let out = strata()
            .args(compile_args(name, instance, alias))
            .args(["-o", "out"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name}/{instance}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The catalog Commodore writes for the instance, file for file.
        let golden = dir.path().join("tests/golden").join(instance);
        let compiled = dir.path().join("out/compiled");
        let want = files(&golden);
        assert!(!want.is_empty());
        assert_eq!(files(&compiled), want, "{name}/{instance}");
        for f in &want {
            assert_eq!(
                fs::read(compiled.join(f)).unwrap(),
                fs::read(golden.join(f)).unwrap(),
                "{name}/{instance}: {}",
                f.display()
            );
        }
        // The same through --golden.
        let out = strata()
            .args(compile_args(name, instance, alias))
            .args(["--golden", &format!("tests/golden/{instance}")])
            .current_dir(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        let n = want.len();
        assert!(
            err.contains(&format!("Golden files: {n} of {n} identical")),
            "{err}"
        );
    }
}

#[test]
fn a_changed_golden_file_fails_with_its_diff_and_update_golden_rewrites_it() {
    let dir = component("namespaces");
    let golden = dir.path().join("tests/golden/team1");
    let file = golden.join("team1/team1/my-namespace.yaml");
    let original = fs::read_to_string(&file).unwrap();
    fs::write(&file, original.replace("my-namespace", "other-namespace")).unwrap();
    let args = compile_args("namespaces", "team1", true);
    let out = strata()
        .args(&args)
        .args(["--golden", "tests/golden/team1"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stderr.contains("golden: team1/team1/my-namespace.yaml: differs"),
        "{stderr}"
    );
    assert!(stdout.contains("-  name: other-namespace"), "{stdout}");
    assert!(stdout.contains("+  name: my-namespace"), "{stdout}");

    let out = strata()
        .args(&args)
        .args(["--golden", "tests/golden/team1", "--update-golden"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(fs::read_to_string(&file).unwrap(), original);
}
