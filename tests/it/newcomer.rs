//! A newcomer's first hour (issue 20): `--keep-going`, colour only on a
//! terminal, unknown targets named with a suggestion, plaintext secrets
//! found whatever their entropy, and a hint outside git that fits.

use crate::strata;
use std::path::Path;

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// Targets `good` and `prod` compile; `broken` fails in its jsonnet.
fn project(dir: &Path) {
    write(
        dir,
        "inventory/classes/common.yml",
        "parameters:\n  kapitan:\n    vars:\n      target: ${_reclass_:name:short}\n    compile:\n      - output_path: manifests\n        input_type: jsonnet\n        input_paths:\n          - ${component}\n        output_type: yaml\n",
    );
    for (t, c) in [
        ("good", "components/ok.jsonnet"),
        ("prod", "components/ok.jsonnet"),
        ("broken", "components/boom.jsonnet"),
    ] {
        write(
            dir,
            &format!("inventory/targets/{t}.yml"),
            &format!("classes: [common]\nparameters:\n  component: {c}\n"),
        );
    }
    write(
        dir,
        "components/ok.jsonnet",
        "{ app: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app' } } }\n",
    );
    write(
        dir,
        "components/boom.jsonnet",
        "error 'boom: this target needs fixing'\n",
    );
}

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = strata()
        .args(args)
        .current_dir(dir)
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn keep_going_compiles_the_rest_and_lists_the_failures() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    // Without it, the one broken target stops everything and nothing is written.
    let (code, _, err) = run(dir.path(), &["compile"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("boom"), "{err}");
    assert!(!dir.path().join("compiled").exists());

    let (code, _, err) = run(dir.path(), &["compile", "--keep-going"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("boom: this target needs fixing"), "{err}");
    assert!(
        err.contains("Compiled 2 of 3 targets; 1 failed: broken"),
        "{err}"
    );
    assert!(
        !err.contains("\x1b["),
        "no colour when stderr is not a terminal: {err}"
    );
    let compiled = dir.path().join("compiled");
    assert!(
        compiled.join("good/manifests/app.yml").is_file()
            || compiled.join("good/manifests/app.yaml").is_file(),
        "{:?}",
        std::fs::read_dir(compiled.join("good/manifests"))
            .map(|d| d.map(|e| e.unwrap().file_name()).collect::<Vec<_>>())
    );
    assert!(compiled.join("prod").is_dir());
    assert!(!compiled.join("broken").exists(), "no half-written target");
    // A previous good catalog of the failing target is kept as it was.
    write(&compiled, "broken/manifests/old.yml", "kept: true\n");
    let (code, _, _) = run(dir.path(), &["compile", "--keep-going"]);
    assert_eq!(code, 2);
    assert_eq!(
        std::fs::read_to_string(compiled.join("broken/manifests/old.yml")).unwrap(),
        "kept: true\n"
    );
    // --check with a failure is an error, not a verdict on the catalog.
    let (code, _, err) = run(dir.path(), &["compile", "--check", "--keep-going"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn unknown_target_is_named_with_a_suggestion() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    let (code, _, err) = run(dir.path(), &["compile", "-t", "prdo"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown target `prdo`"), "{err}");
    assert!(err.contains("did you mean `prod`?"), "{err}");
    // Like Kapitan, a known target with it still compiles; the unknown one is a warning.
    let (code, _, err) = run(dir.path(), &["compile", "-t", "good", "nope"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("warning: unknown target `nope`"), "{err}");
}

#[test]
fn plaintext_secret_of_low_entropy_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "inventory/targets/t.yml",
        "parameters:\n  password: hunter2plaintext\n  ref_password: ?{vaultkv:t/db/password}\n",
    );
    let (code, out, err) = run(dir.path(), &["lint"]);
    assert_eq!(code, 0, "a warning does not fail by default: {out}{err}");
    assert!(
        out.contains("warning[plaintext-secret]: `parameters.password` is a plaintext value"),
        "{out}"
    );
    assert!(!out.contains("ref_password"), "{out}");
    assert!(
        !out.contains("hunter2plaintext"),
        "the value is never printed: {out}"
    );
}

/// Runs `strata ARGS` on a pseudo-terminal (util-linux `script`), so that
/// stdout and stderr are terminals.
fn on_terminal(dir: &Path, args: &str, no_color: bool) -> String {
    let bin = assert_cmd::cargo::cargo_bin("strata");
    let mut cmd = std::process::Command::new("script");
    cmd.args(["-qec", &format!("{} {args}", bin.display()), "/dev/null"])
        .current_dir(dir)
        .env_remove("NO_COLOR");
    if no_color {
        cmd.env("NO_COLOR", "1");
    }
    let out = cmd.output().expect("util-linux `script` runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn colour_on_a_terminal_unless_no_color() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    write(
        dir.path(),
        "inventory/classes/unused.yml",
        "parameters: {}\n",
    );
    let lint = on_terminal(dir.path(), "lint", false);
    assert!(
        lint.contains("\x1b[1;33mwarning[unused-class]:\x1b[0m class `unused`"),
        "{lint:?}"
    );
    let err = on_terminal(dir.path(), "compile -t nope", false);
    assert!(
        err.contains("\x1b[1;31merror:\x1b[0m unknown target `nope`"),
        "{err:?}"
    );
    for args in ["lint", "compile -t nope"] {
        let plain = on_terminal(dir.path(), args, true);
        assert!(!plain.contains("\x1b["), "NO_COLOR: {plain:?}");
    }
    // Not a terminal: no colour either.
    let (_, out, _) = run(dir.path(), &["lint"]);
    assert!(
        out.contains("warning[unused-class]") && !out.contains("\x1b["),
        "{out}"
    );
}

#[test]
fn outside_git_the_hint_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = strata()
        .args(["diff", "--base", "main"])
        .current_dir(dir.path())
        .env("GIT_CEILING_DIRECTORIES", dir.path().parent().unwrap())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("run it inside a git repository"), "{err}");
    assert!(!err.contains("fetch-depth"), "{err}");
}
