//! `strata inventory`: rendering, formats, options and error reporting.

use crate::strata;
use serde_json::Value as J;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/inventory")
        .join(name)
}

fn render(args: &[&str]) -> J {
    let out = strata()
        .args(["inventory", "--format", "json"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn renders_merge_references_and_applications() {
    let inv = fixture("basic");
    let v = render(&["--inventory-path", inv.to_str().unwrap()]);
    let dev = &v["nodes"]["dev"];
    assert_eq!(
        dev["classes"],
        serde_json::json!(["defaults", "common", "apps.web"])
    );
    assert_eq!(dev["applications"], serde_json::json!(["web"]));
    let p = &dev["parameters"];
    assert_eq!(p["web"]["image"], "nginx:1.25");
    assert_eq!(p["web"]["replicas"], 1);
    assert_eq!(p["web"]["url"], "https://dev.example.com");
    assert_eq!(p["images"], serde_json::json!(["base", "dev"]));
    assert_eq!(p["_reclass_"]["name"]["full"], "dev");

    let prod = &v["nodes"]["prod"];
    assert_eq!(prod["applications"], serde_json::json!(["monitoring"]));
    let p = &prod["parameters"];
    assert_eq!(
        p["web"]["image"], "nginx:1.26",
        "late binding sees the target's value"
    );
    assert_eq!(p["web"]["replicas"], 3);
    assert_eq!(
        p["labels"],
        serde_json::json!({"tier": "gold"}),
        "~ replaces"
    );
    assert_eq!(p["web"]["port"], 8080);
}

#[test]
fn selects_targets_and_writes_yaml() {
    let inv = fixture("basic");
    let out = strata()
        .args([
            "inventory",
            "--format",
            "yaml",
            "-t",
            "prod",
            "--inventory-path",
        ])
        .arg(&inv)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("nodes:\n  prod:\n"), "{text}");
    assert!(!text.contains("dev:"));
    assert!(text.contains("image: nginx:1.26"));
}

#[test]
fn compose_node_name_uses_the_path() {
    let inv = fixture("basic");
    let v = render(&[
        "--compose-node-name",
        "--inventory-path",
        inv.to_str().unwrap(),
    ]);
    let prod = &v["nodes"]["prod.prod"]["parameters"]["_reclass_"]["name"];
    assert_eq!(prod["parts"], serde_json::json!(["prod", "prod"]));
    assert_eq!(prod["path"], "prod/prod");
    assert_eq!(prod["short"], "prod");
}

#[test]
fn unknown_target_is_an_error() {
    let inv = fixture("basic");
    strata()
        .args(["inventory", "-t", "nope", "--inventory-path"])
        .arg(&inv)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("unknown target `nope`"))
        .stderr(predicates::str::contains("hint: known targets: dev, prod"));
}

#[test]
fn errors_name_file_parameter_and_exit_2() {
    let inv = fixture("broken");
    strata()
        .args(["inventory", "-t", "t1", "--inventory-path"])
        .arg(&inv)
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "cannot resolve reference `${nope}`",
        ))
        .stderr(predicates::str::contains("at: parameters.a"))
        .stderr(predicates::str::contains("t1.yml:2"));
    strata()
        .args(["inventory", "-t", "t2", "--inventory-path"])
        .arg(&inv)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("class not found: `missing.one`"))
        .stderr(predicates::str::contains(
            "hint: create classes/missing/one.yml",
        ));
    // Skipped with the flag, still listed.
    let v = render(&[
        "-t",
        "t2",
        "--ignore-class-not-found",
        "--inventory-path",
        inv.to_str().unwrap(),
    ]);
    assert_eq!(
        v["nodes"]["t2"]["classes"],
        serde_json::json!(["missing.one"])
    );
}

#[test]
fn a_class_name_that_names_no_file_gets_a_hint_on_class_names() {
    let dir = tempfile::tempdir().unwrap();
    let inv = dir.path().join("inventory");
    std::fs::create_dir_all(inv.join("classes")).unwrap();
    std::fs::create_dir_all(inv.join("targets")).unwrap();
    std::fs::write(
        inv.join("targets/t.yml"),
        "classes:\n  - ../../etc/passwd\n",
    )
    .unwrap();
    let out = strata()
        .args(["inventory", "--inventory-path"])
        .arg(&inv)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("class not found"), "{err}");
    assert!(err.contains("targets/t.yml:2"), "{err}");
    assert!(
        err.contains("hint: a class name is directory and file names under classes/ joined by `.`"),
        "{err}"
    );
    // No path made of the bad name is suggested.
    assert!(!err.contains("create classes/"), "{err}");
    // An interpolated class name whose reference is missing says so (it
    // read "in parameters." with an empty parameter path).
    std::fs::write(inv.join("targets/t.yml"), "classes:\n  - ${foo}\n").unwrap();
    let out = strata()
        .args(["inventory", "--inventory-path"])
        .arg(&inv)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot resolve reference `${foo}` in a class name")
            && err.contains("targets/t.yml:2"),
        "{err}"
    );
    assert!(!err.contains("parameters."), "{err}");
}

/// Files saved with a UTF-8 byte order mark load as without it (reclass-rs
/// and Kapitan accept them), classes and targets alike.
#[test]
fn files_with_a_byte_order_mark_load() {
    let dir = tempfile::tempdir().unwrap();
    let inv = dir.path().join("inventory");
    std::fs::create_dir_all(inv.join("classes")).unwrap();
    std::fs::create_dir_all(inv.join("targets")).unwrap();
    std::fs::write(inv.join("classes/c.yml"), "\u{feff}parameters:\n  a: 1\n").unwrap();
    std::fs::write(
        inv.join("targets/t.yml"),
        "\u{feff}classes: [c]\nparameters:\n  b: ${a}\n",
    )
    .unwrap();
    let v = render(&["--inventory-path", inv.to_str().unwrap()]);
    assert_eq!(v["nodes"]["t"]["parameters"]["b"], serde_json::json!(1));
}

#[test]
fn missing_inventory_directory() {
    strata()
        .args(["inventory", "--inventory-path", "/nonexistent/strata-inv"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "inventory directory /nonexistent/strata-inv not found",
        ));
}

#[test]
fn kapitan_file_and_reclass_config_set_options() {
    let dir = tempfile::tempdir().unwrap();
    let inv = dir.path().join("inv");
    std::fs::create_dir_all(inv.join("classes/apps")).unwrap();
    std::fs::create_dir_all(inv.join("targets")).unwrap();
    std::fs::write(inv.join("classes/apps/a.yml"), "parameters: {a: 1}\n").unwrap();
    std::fs::write(inv.join("classes/apps/b.yml"), "parameters: {b: 2}\n").unwrap();
    std::fs::write(
        inv.join("targets/t.yml"),
        "classes: ['apps.*', optional.x]\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join(".kapitan"),
        "inventory:\n  inventory-path: inv\ninventory_backend:\n  enable-class-wildcards: true\n",
    )
    .unwrap();
    std::fs::write(
        inv.join("reclass-config.yml"),
        "ignore_class_notfound: true\n",
    )
    .unwrap();
    let out = strata()
        .current_dir(dir.path())
        .args(["inventory", "--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: J = serde_json::from_slice(&out.stdout).unwrap();
    let t = &v["nodes"]["t"];
    assert_eq!(
        t["classes"],
        serde_json::json!(["apps.a", "apps.b", "optional.x"])
    );
    assert_eq!(t["parameters"]["a"], 1);
    assert_eq!(t["parameters"]["b"], 2);
}

#[cfg(unix)]
#[test]
fn follows_directory_symlinks_outside_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("shared-classes");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::write(shared.join("x.yml"), "parameters: {x: linked}\n").unwrap();
    let inv = dir.path().join("inv");
    std::fs::create_dir_all(inv.join("classes")).unwrap();
    std::fs::create_dir_all(inv.join("targets")).unwrap();
    std::os::unix::fs::symlink("../../shared-classes", inv.join("classes/ext")).unwrap();
    std::fs::write(inv.join("targets/t.yml"), "classes: [ext.x]\n").unwrap();
    let v = render(&["--inventory-path", inv.to_str().unwrap()]);
    assert_eq!(v["nodes"]["t"]["parameters"]["x"], "linked");
}

#[test]
fn output_is_deterministic() {
    let inv = fixture("basic");
    let a = strata()
        .args(["inventory", "--inventory-path"])
        .arg(&inv)
        .output()
        .unwrap();
    let b = strata()
        .args(["inventory", "--inventory-path"])
        .arg(&inv)
        .output()
        .unwrap();
    assert_eq!(a.stdout, b.stdout);
}

/// reclass-rs's own `tests/inventory-class-mapping`, rendered by
/// reclass-rs 0.11 in all four combinations of `compose_node_name` and
/// `class_mappings_match_path` (class-mapping.gen.py made the expectation).
#[test]
fn class_mappings_match_reclass_rs() {
    let src = fixture("class-mapping");
    let expected: J = serde_json::from_str(
        &std::fs::read_to_string(src.with_file_name("class-mapping.expected.json")).unwrap(),
    )
    .unwrap();
    let config = std::fs::read_to_string(src.join("reclass-config.yml")).unwrap();
    for (variant, want) in expected.as_object().unwrap() {
        let compose = variant.contains("compose=true");
        let match_path = variant.contains("match_path=true");
        let dir = tempfile::tempdir().unwrap();
        for sub in ["classes", "nodes"] {
            copy_dir(&src.join(sub), &dir.path().join(sub));
        }
        let cfg = config
            .replace(
                "compose_node_name: false",
                &format!("compose_node_name: {compose}"),
            )
            .replace(
                "class_mappings_match_path: true",
                &format!("class_mappings_match_path: {match_path}"),
            );
        std::fs::write(dir.path().join("reclass-config.yml"), cfg).unwrap();
        let got = render(&["--inventory-path", dir.path().to_str().unwrap()]);
        let nodes = got["nodes"].as_object().unwrap();
        let want = want.as_object().unwrap();
        assert_eq!(
            nodes.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>(),
            "{variant}"
        );
        for (name, w) in want {
            for key in ["classes", "applications", "parameters"] {
                assert_eq!(nodes[name][key], w[key], "{variant} {name} {key}");
            }
        }
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

#[test]
fn bad_class_mapping_and_unsupported_config_are_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("targets")).unwrap();
    std::fs::write(dir.path().join("targets/t.yml"), "classes: []\n").unwrap();
    for (cfg, want) in [
        (
            "class_mappings: ['/abc  x']\n",
            "class_mappings entry `/abc  x`",
        ),
        (
            "reclass_rs_compat_flags: [nested-reference-null-as-none]\n",
            "unsupported key `reclass_rs_compat_flags`",
        ),
    ] {
        std::fs::write(dir.path().join("reclass-config.yml"), cfg).unwrap();
        let out = strata()
            .args(["inventory", "--inventory-path"])
            .arg(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(want) && err.contains("reclass-config.yml"),
            "{err}"
        );
    }
}

#[test]
fn unknown_reclass_config_keys_warn_and_strict_fails() {
    let inv = fixture("class-mapping");
    let run = |extra: &[&str]| {
        strata()
            .args(["inventory", "--inventory-path", inv.to_str().unwrap()])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = run(&[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("warning:")
            && err.contains("reclass-config.yml")
            && err.contains("unknown key `allow_none_override`"),
        "{err}"
    );
    let out = run(&["--strict"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--strict"));
    let out = strata()
        .args(["lint", "--inventory-path", inv.to_str().unwrap()])
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("unknown key `allow_none_override`"), "{text}");
}

/// compat34 (compat-lint-python-reclass-keys-are-errors): kapicorp/
/// kapitan's examples/terraform `reclass-config.yml` sets Python reclass's
/// `storage_type: yaml_fs`, `pretty_print`, `output` and
/// `inventory_base_uri`, which change nothing in Kapitan: `strata lint`
/// reported each as an error (so `strata ci` on a push, `--fail-on error`,
/// published nothing) and every compile warned. Another storage type still
/// warns.
#[test]
fn python_reclass_settings_without_effect_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let inv = dir.path().join("inventory");
    std::fs::create_dir_all(inv.join("targets")).unwrap();
    std::fs::create_dir_all(inv.join("classes")).unwrap();
    std::fs::write(inv.join("targets/t.yml"), "parameters:\n  a: 1\n").unwrap();
    let cfg = |storage: &str| {
        std::fs::write(
            inv.join("reclass-config.yml"),
            format!("storage_type: {storage}\npretty_print: true\noutput: yml\ninventory_base_uri: .\nnodes_uri: targets\nclasses_uri: classes\n"),
        )
        .unwrap();
    };
    // Exit code and stdout + stderr.
    let run = |args: &[&str]| {
        let out = strata()
            .current_dir(dir.path())
            .args(args)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.code(), text)
    };
    cfg("yaml_fs");
    let (code, text) = run(&["lint"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(!text.contains("unknown key"), "{text}");
    let (code, text) = run(&["inventory", "--strict"]);
    assert_eq!(code, Some(0), "{text}");
    cfg("mixed");
    let (code, text) = run(&["lint"]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("unknown key `storage_type`"), "{text}");
}

/// `compile -t T` needs only T's closure: a class broken elsewhere leaves
/// the other target out with a warning; a full compile names every broken
/// target and its class.
#[test]
fn compile_targets_render_only_what_they_need() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let w = |p: &str, s: &str| {
        let p = d.join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, s).unwrap();
    };
    w("inventory/classes/ok.yml", "parameters:\n  kapitan:\n    vars:\n      target: ${_reclass_:name:short}\n    compile:\n      - output_path: .\n        output_type: yaml\n        input_type: jsonnet\n        input_paths: [main.jsonnet]\n");
    w(
        "inventory/classes/broken1.yml",
        "parameters:\n  a: 1\n  a: 2\n",
    );
    w("inventory/classes/broken2.yml", "parameters: [\n");
    w("inventory/targets/good.yml", "classes: [ok]\n");
    w("inventory/targets/bad1.yml", "classes: [ok, broken1]\n");
    w("inventory/targets/bad2.yml", "classes: [ok, broken2]\n");
    w("main.jsonnet", "{ out: { v: 1 } }\n");
    let out = strata()
        .current_dir(d)
        .args(["compile", "-t", "good"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(d.join("compiled/good/out.yaml").is_file(), "{err}");
    assert!(err.contains("bad1") && err.contains("bad2"), "{err}");
    let out = strata()
        .current_dir(d)
        .args(["inventory", "-t", "good"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = strata().current_dir(d).args(["compile"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("broken1.yml") && err.contains("broken2.yml"),
        "{err}"
    );
}

/// reclass-rs 0.11 renders node `good` (its `nodeinfo`) although class
/// `broken` (duplicate key) is in the inventory; so does `inventory -t`.
/// The full inventory fails naming the broken class file.
#[test]
fn broken_class_outside_the_closure_does_not_stop_a_target() {
    let inv = fixture("broken-elsewhere");
    let expected: J = serde_json::from_str(
        &std::fs::read_to_string(inv.with_file_name("broken-elsewhere.expected.json")).unwrap(),
    )
    .unwrap();
    let got = render(&["--inventory-path", inv.to_str().unwrap(), "-t", "good"]);
    for key in ["classes", "applications", "parameters"] {
        assert_eq!(got["nodes"]["good"][key], expected["good"][key], "{key}");
    }
    let out = strata()
        .args(["inventory", "--inventory-path", inv.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("broken.yml") && err.contains("duplicate key"),
        "{err}"
    );
}
