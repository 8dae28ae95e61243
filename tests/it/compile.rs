//! `strata compile`: catalog layout and bytes, atomic writes, path checks,
//! `--check`, and the Kapitan conformance corpus.

use crate::{conformance_dir, strata};
use std::fs;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/compile")
        .join(name)
}

/// A writable copy of a fixture project.
fn copy_fixture(name: &str) -> tempfile::TempDir {
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
    let dir = tempfile::tempdir().unwrap();
    copy(&fixture(name), dir.path());
    dir
}

fn compile_in(project: &Path, out: &Path) -> assert_cmd::assert::Assert {
    strata()
        .current_dir(project)
        .args(["compile", "--inventory-path", "inventory", "--output-path"])
        .arg(out)
        .arg("--quiet")
        .assert()
}

fn read(p: &Path) -> String {
    fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn compiles_jsonnet_and_jinja2_like_kapitan() {
    let out = tempfile::tempdir().unwrap();
    compile_in(&fixture("basic"), out.path()).success();
    let c = out.path().join("compiled");
    // Sorted keys, indented sequences, YAML 1.1 quoting of "1.10".
    assert_eq!(
        read(&c.join("prod/manifests/deployment.yaml")),
        "kind: Deployment\nmetadata:\n  labels:\n    version: '1.10'\n  name: prod\nspec:\n  ports:\n    - 80\n    - 443\n  replicas: 3\n"
    );
    assert_eq!(
        read(&c.join("dev/manifests/notes.yaml")),
        "text: |\n  line one\n  line two\n"
    );
    // suffix_remove drops `.j2`; trim_blocks removes the newline after tags.
    assert_eq!(
        read(&c.join("dev/docs/README.md")),
        "# dev\n\nreplicas: 1\n- item 1\n- item 2\n"
    );
    // No temporary directory is left beside the catalog.
    let leftovers: Vec<_> = fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, vec![std::ffi::OsString::from("compiled")]);
}

/// The README's example project compiles (Kapitan 0.36.3 gives the same
/// bytes for it).
#[test]
fn example_project_compiles() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/minimal");
    let out = tempfile::tempdir().unwrap();
    compile_in(&example, out.path()).success();
    let c = out.path().join("compiled");
    assert_eq!(
        read(&c.join("prod/docs/README.md.j2")),
        "# echo on prod\n\nImage `docker.io/ealen/echo-server:0.9.2`, 3 replica(s),\nserved at https://echo.prod.example.com."
    );
    let svc = read(&c.join("dev/echo/service.yaml"));
    assert!(svc.starts_with("apiVersion: v1\nkind: Service\n"), "{svc}");
}

#[test]
fn targets_flag_replaces_only_those_targets() {
    let out = tempfile::tempdir().unwrap();
    compile_in(&fixture("basic"), out.path()).success();
    let stale = out.path().join("compiled/prod/stale.txt");
    fs::write(&stale, "old").unwrap();
    strata()
        .current_dir(fixture("basic"))
        .args([
            "compile",
            "--inventory-path",
            "inventory",
            "--quiet",
            "-t",
            "dev",
            "--output-path",
        ])
        .arg(out.path())
        .assert()
        .success();
    assert!(stale.exists(), "prod was not selected and must be kept");
    compile_in(&fixture("basic"), out.path()).success();
    assert!(!stale.exists(), "a full compile replaces the whole catalog");
}

#[test]
fn failure_keeps_the_previous_catalog_and_names_the_input() {
    let project = copy_fixture("basic");
    let out = tempfile::tempdir().unwrap();
    compile_in(project.path(), out.path()).success();
    let before = read(&out.path().join("compiled/dev/manifests/deployment.yaml"));
    fs::write(
        project.path().join("components/app.jsonnet"),
        "{ a: error 'replicas must be set' }",
    )
    .unwrap();
    compile_in(project.path(), out.path())
        .code(2)
        .stderr(predicates::str::contains("replicas must be set"))
        .stderr(predicates::str::contains("app.jsonnet"))
        .stderr(predicates::str::contains("compile entry #1"));
    assert_eq!(
        read(&out.path().join("compiled/dev/manifests/deployment.yaml")),
        before
    );
}

#[test]
fn output_path_outside_the_target_is_rejected() {
    let project = copy_fixture("basic");
    let class = project.path().join("inventory/classes/app.yml");
    let text = read(&class).replace("output_path: docs", "output_path: ../../escaped");
    fs::write(&class, text).unwrap();
    let out = tempfile::tempdir().unwrap();
    compile_in(project.path(), out.path())
        .code(2)
        .stderr(predicates::str::contains(
            "leaves the target's output directory",
        ));
    assert!(!out.path().join("compiled").exists());
    assert!(!out.path().join("escaped").exists());
}

#[test]
fn copy_remove_and_external_inputs() {
    let project = tempfile::tempdir().unwrap();
    let p = project.path();
    fs::create_dir_all(p.join("inventory/targets")).unwrap();
    fs::create_dir_all(p.join("files/sub")).unwrap();
    fs::create_dir_all(p.join("scripts")).unwrap();
    fs::write(p.join("files/a.txt"), "a\n").unwrap();
    fs::write(p.join("files/.hidden"), "h\n").unwrap();
    fs::write(p.join("files/sub/drop.txt"), "d\n").unwrap();
    fs::write(
        p.join("scripts/gen.sh"),
        "#!/bin/sh\nprintf '%s %s' \"$GREETING\" \"$1\" > \"$2/out.txt\"\n",
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(p.join("scripts/gen.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    }
    fs::write(
        p.join("inventory/targets/t.yml"),
        r#"parameters:
  kapitan:
    vars:
      target: t
    compile:
      - output_path: files
        input_type: copy
        input_paths: [files]
      - output_path: .
        input_type: remove
        input_paths: [compiled/t/files/sub]
      - output_path: gen
        input_type: external
        input_paths: [scripts/gen.sh]
        args: [world, '\${compiled_target_dir}']
        env_vars:
          GREETING: hello
"#,
    )
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    compile_in(p, out.path()).success();
    let t = out.path().join("compiled/t");
    assert_eq!(read(&t.join("files/a.txt")), "a\n");
    assert_eq!(read(&t.join("files/.hidden")), "h\n");
    assert!(!t.join("files/sub").exists(), "removed by the remove entry");
    assert_eq!(read(&t.join("gen/out.txt")), "hello world");
}

#[test]
fn defaults_come_from_dot_kapitan() {
    let project = copy_fixture("basic");
    fs::write(
        project.path().join(".kapitan"),
        "compile:\n  output-path: build\n  indent: 4\n",
    )
    .unwrap();
    strata()
        .current_dir(project.path())
        .args(["compile", "--quiet"])
        .assert()
        .success();
    let yaml = read(
        &project
            .path()
            .join("build/compiled/dev/manifests/deployment.yaml"),
    );
    assert_eq!(
        yaml,
        "kind: Deployment\nmetadata:\n    labels:\n        version: '1.10'\n    name: dev\nspec:\n    ports:\n        - 80\n        - 443\n    replicas: 1\n"
    );
}

#[test]
fn check_reports_changed_files() {
    let out = tempfile::tempdir().unwrap();
    compile_in(&fixture("basic"), out.path()).success();
    let run_check = || {
        strata()
            .current_dir(fixture("basic"))
            .args([
                "compile",
                "--inventory-path",
                "inventory",
                "--check",
                "--output-path",
            ])
            .arg(out.path())
            .assert()
    };
    run_check().success();
    fs::write(out.path().join("compiled/dev/docs/README.md"), "edited").unwrap();
    run_check().code(1).stdout(predicates::str::contains(
        "changed: compiled/dev/docs/README.md",
    ));
    // --check never writes the catalog.
    assert_eq!(
        read(&out.path().join("compiled/dev/docs/README.md")),
        "edited"
    );
}

/// Runs every case of `conformance/compile` through `check-compile`, the
/// same script `.ci/run` uses, and asserts that every case passes byte for
/// byte.
#[test]
fn kapitan_conformance_corpus() {
    let dir = conformance_dir();
    let script = dir.join("check-compile");
    let bin = assert_cmd::cargo::cargo_bin("strata");
    let out = std::process::Command::new("python3")
        .arg(&script)
        .arg("--")
        .arg(&bin)
        .args([
            "compile",
            "--inventory-path",
            "{inventory}",
            "--output-path",
            "{output}",
            "{flags}",
        ])
        .output()
        .expect("python3 runs check-compile");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let cases = stdout
        .lines()
        .filter(|l| l.starts_with("PASS ") || l.starts_with("SEMANTIC ") || l.starts_with("FAIL "))
        .count();
    assert!(cases >= 54, "the corpus has at least 54 cases:\n{stdout}");
    assert!(
        out.status.success(),
        "check-compile failed:\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("byte-identical: {cases} of {cases}")),
        "every case must be byte-identical:\n{stdout}"
    );
}

#[test]
fn order_argocd_sync_waves_annotates_objects() {
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/minimal");
    let out = tempfile::tempdir().unwrap();
    crate::strata()
        .current_dir(&example)
        .args(["compile", "--order", "argocd-sync-waves", "--output-path"])
        .arg(out.path())
        .assert()
        .success();
    let deploy =
        std::fs::read_to_string(out.path().join("compiled/prod/echo/deployment.yaml")).unwrap();
    assert!(
        deploy.contains("argocd.argoproj.io/sync-wave: '0'"),
        "{deploy}"
    );
    // Non-YAML outputs are untouched.
    let page = std::fs::read_to_string(out.path().join("compiled/prod/docs/README.md.j2")).unwrap();
    assert!(page.starts_with("# echo on prod"));
    crate::strata()
        .current_dir(&example)
        .args(["compile", "--order", "bogus"])
        .assert()
        .code(2);
}

/// compat38: an object `--order` cannot order (Kapitan's examples/kubernetes
/// `labels` target: a float label value) was named in the scratch catalog,
/// `<output>/.strata-compile-XXXX/compiled/...`, gone when the error is read.
#[test]
fn order_errors_name_the_output_path_not_the_scratch_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("inventory/targets")).unwrap();
    std::fs::write(
        root.join("inventory/targets/labels.yml"),
        "parameters:\n  kapitan:\n    vars: {target: labels}\n    compile:\n      - {output_path: manifests, input_type: jsonnet, input_paths: [m.jsonnet]}\n",
    )
    .unwrap();
    std::fs::write(
        root.join("m.jsonnet"),
        "{ cm: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', labels: { v: 1.5 } } } }\n",
    )
    .unwrap();
    let out = crate::strata()
        .current_dir(root)
        .args([
            "compile",
            "--order",
            "argocd-sync-waves",
            "--output-path",
            "out",
        ])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8_lossy(&out);
    assert!(!err.contains(".strata-compile-"), "{err}");
    let t = root.join("out/compiled/labels").display().to_string();
    assert!(
        err.contains(&format!("cannot order the objects of {t}: {t}:1: ")),
        "{err}"
    );
    assert!(err.contains(&format!("--> {t}")), "{err}");
}

#[test]
fn ytt_input_type_renders_templates_with_target_parameters() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("inventory/targets")).unwrap();
    std::fs::create_dir_all(root.join("ytt")).unwrap();
    std::fs::write(
        root.join("inventory/targets/web.yml"),
        "parameters:\n  kapitan:\n    vars: {target: web}\n    compile:\n      - output_path: manifests\n        input_type: ytt\n        input_paths: [ytt]\n  app: {name: web, replicas: 3}\n",
    )
    .unwrap();
    std::fs::write(
        root.join("ytt/deploy.yml"),
        "#@ load(\"@ytt:data\", \"data\")\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: #@ data.values.app.name\nspec:\n  replicas: #@ data.values.app.replicas\n",
    )
    .unwrap();
    std::fs::write(
        root.join("ytt/overlay.yml"),
        "#@ load(\"@ytt:overlay\", \"overlay\")\n#@overlay/match by=overlay.subset({\"kind\": \"Deployment\"})\n---\nmetadata:\n  #@overlay/match missing_ok=True\n  labels:\n    team: platform\n",
    )
    .unwrap();
    crate::strata()
        .current_dir(root)
        .args(["compile"])
        .assert()
        .success();
    let out = std::fs::read_to_string(root.join("compiled/web/manifests/deploy.yml")).unwrap();
    assert!(out.contains("name: web"), "{out}");
    assert!(out.contains("replicas: 3"), "{out}");
    assert!(out.contains("team: platform"), "overlay applied: {out}");
}

/// Kapitan's `examples/terraform` (class_mappings by path) compiles file
/// for file as Kapitan 0.36.3 compiled it.
#[test]
fn kapitan_terraform_example_compiles_like_kapitan() {
    let project = copy_fixture("kapitan-terraform");
    let out = tempfile::tempdir().unwrap();
    compile_in(project.path(), out.path()).success();
    let expected = fixture("kapitan-terraform").join("expected");
    fn files(root: &Path, dir: &Path, acc: &mut Vec<PathBuf>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                files(root, &p, acc);
            } else {
                acc.push(p.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    let (mut want, mut got) = (Vec::new(), Vec::new());
    files(&expected, &expected, &mut want);
    let compiled = out.path().join("compiled");
    files(&compiled, &compiled, &mut got);
    want.sort();
    got.sort();
    assert_eq!(got, want);
    assert_eq!(want.len(), 36);
    for f in &want {
        assert_eq!(
            read(&compiled.join(f)),
            read(&expected.join(f)),
            "{}",
            f.display()
        );
    }
}
