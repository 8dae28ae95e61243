//! The README's commands, run as written in a fresh clone, so the README
//! cannot drift from the binary: the quick start and the "on your own
//! inventory" block (inventory, compile, lint, diff --base).

use crate::support::git;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The lines of the first ```` ```sh ```` block after `heading_text`.
fn sh_block(readme: &str, heading_text: &str) -> Vec<String> {
    let at = readme
        .find(heading_text)
        .unwrap_or_else(|| panic!("README has no `{heading_text}`"));
    let rest = &readme[at..];
    let start = rest.find("```sh\n").expect("an sh block") + "```sh\n".len();
    let end = rest[start..].find("```").expect("the block ends") + start;
    rest[start..end]
        .lines()
        .map(|l| l.split(" #").next().unwrap_or("").trim().to_string())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect()
}

/// Copies a directory tree, leaving out `compiled/`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        if name == "compiled" {
            continue;
        }
        let p = e.path();
        if e.file_type().unwrap().is_dir() {
            copy_tree(&p, &to.join(&name));
        } else {
            std::fs::copy(&p, to.join(&name)).unwrap();
        }
    }
}

/// Runs one README line (`strata ARGS`) in `dir`; returns (code, stdout, stderr).
fn run_line(line: &str, dir: &Path) -> (i32, String, String) {
    let args: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(args[0], "strata", "a README command: {line}");
    let out = crate::strata()
        .args(&args[1..])
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_EVENT_NAME")
        .env_remove("GITHUB_EVENT_PATH")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn readme_quick_start_and_own_inventory_commands_work_as_written() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let tmp = tempfile::tempdir().unwrap();

    // Quick start: `(cd examples/minimal && strata compile)` in a clone.
    let quick = sh_block(&readme, "## Quick start");
    let compile_line = quick
        .iter()
        .find(|l| l.contains("examples/minimal"))
        .expect("the quick start compiles examples/minimal");
    // `cargo run --release --` is this very binary (built by `cargo test`).
    assert_eq!(
        compile_line,
        "(cd examples/minimal && cargo run --release -- compile)"
    );
    let clone = tmp.path().join("clone");
    copy_tree(
        &root().join("examples/minimal"),
        &clone.join("examples/minimal"),
    );
    let (code, out, err) = run_line("strata compile", &clone.join("examples/minimal"));
    assert_eq!(code, 0, "{out}{err}");
    assert!(clone
        .join("examples/minimal/compiled/prod/echo/deployment.yaml")
        .is_file());

    // "On your own inventory": a git repository with the inventory at its
    // root, cloned fresh, with a branch that changes prod.
    let origin = tmp.path().join("origin");
    copy_tree(&root().join("examples/minimal"), &origin);
    git(&origin, &["init", "-q"]);
    git(&origin, &["add", "-A"]);
    git(&origin, &["commit", "-q", "-m", "inventory"]);
    let work = tmp.path().join("work");
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            origin.to_str().unwrap(),
            work.to_str().unwrap(),
        ],
    );
    let prod = work.join("inventory/targets/prod.yml");
    let text = std::fs::read_to_string(&prod).unwrap();
    assert!(text.contains("replicas: 3"), "{text}");
    std::fs::write(&prod, text.replace("replicas: 3", "replicas: 5")).unwrap();
    git(&work, &["commit", "-q", "-am", "prod: 5 replicas"]);

    let own = sh_block(&readme, "On your own inventory");
    assert!(own.len() >= 4, "{own:?}");
    let mut seen = Vec::new();
    for line in &own {
        let (code, out, err) = run_line(line, &work);
        assert_eq!(code, 0, "`{line}` failed:\n{out}{err}");
        let sub = line.split_whitespace().nth(1).unwrap().to_string();
        match sub.as_str() {
            "inventory" => assert!(out.contains("replicas"), "{out}"),
            "compile" => assert!(work.join("compiled/prod").is_dir()),
            "lint" => assert!(out.contains("0 error(s)"), "{out}"),
            "diff" => {
                assert!(out.contains("target prod (changed)"), "{out}");
                assert!(
                    out.contains("-  replicas: 3") && out.contains("+  replicas: 5"),
                    "{out}"
                );
                assert!(!out.contains("target dev"), "{out}");
            }
            "review" => {
                assert!(out.contains("### strata review"), "{out}");
                assert!(out.contains("replicas"), "{out}");
                assert!(!out.contains("`dev`"), "{out}");
            }
            other => panic!("the test does not know README command `{other}`: add it"),
        }
        seen.push(sub);
    }
    assert_eq!(seen, ["inventory", "compile", "lint", "diff", "review"]);
}
