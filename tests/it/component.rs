//! `strata component compile`: real Project Syn components (copied with
//! their licences into `tests/fixtures/commodore/components/`) compiled
//! the way their `make golden-diff` runs Commodore, against the golden
//! files Commodore wrote; golden checking and updating.

use crate::strata;
use crate::support::copy_tree;
use std::fs;
use std::path::{Path, PathBuf};

fn component(name: &str) -> tempfile::TempDir {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/commodore/components")
        .join(name);
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&src, tmp.path());
    tmp
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

/// `strata package compile`: the `demo` configuration package
/// (tests/fixtures/commodore/packages) with the real `secrets` component and
/// the fixture's multi-instance `greeter`, each committed into a local bare
/// repository (tag v1.0.0) that the package's `parameters.components` URLs
/// are rewritten to; the golden files are Commodore 1.35.1's output
/// (packages/commodore-golden.sh).
pub(crate) mod package {
    use super::files;
    use crate::strata;
    use crate::support::copy_tree;
    use crate::support::git;
    use std::fs;
    use std::path::{Path, PathBuf};

    fn fixtures() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/commodore")
    }

    /// A temporary directory with `remotes/component-{secrets,greeter}.git`
    /// and the package in `demo/`, its URLs pointing at the remotes.
    pub(crate) fn setup() -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        let remotes = tmp.path().join("remotes");
        for (name, src) in [
            ("secrets", fixtures().join("components/secrets")),
            ("greeter", fixtures().join("packages/greeter")),
        ] {
            let work = tmp.path().join(format!("src-{name}"));
            copy_tree(&src, &work);
            git(&work, &["init", "-q"]);
            git(&work, &["add", "-A"]);
            git(&work, &["commit", "-q", "-m", "v1"]);
            git(&work, &["tag", "v1.0.0"]);
            fs::create_dir_all(&remotes).unwrap();
            let bare = remotes.join(format!("component-{name}.git"));
            git(
                tmp.path(),
                &[
                    "clone",
                    "-q",
                    "--bare",
                    work.to_str().unwrap(),
                    bare.to_str().unwrap(),
                ],
            );
        }
        let pkg = tmp.path().join("demo");
        copy_tree(&fixtures().join("packages/demo"), &pkg);
        let common = pkg.join("common.yml");
        let text = fs::read_to_string(&common).unwrap().replace(
            "https://github.com/projectsyn/",
            &format!("file://{}/", remotes.display()),
        );
        assert!(text.contains("file://"));
        fs::write(&common, text).unwrap();
        tmp
    }

    fn assert_same_tree(got: &Path, want: &Path) {
        let names = files(want);
        assert!(!names.is_empty());
        assert_eq!(files(got), names, "{}", got.display());
        for f in &names {
            assert_eq!(
                fs::read_to_string(got.join(f)).unwrap(),
                fs::read_to_string(want.join(f)).unwrap(),
                "{}",
                f.display()
            );
        }
    }

    #[test]
    fn compiles_a_package_as_commodore_does() {
        let tmp = setup();
        let pkg = tmp.path().join("demo");
        for (case, args) in [
            (
                "defaults",
                vec!["tests/defaults.yml", "-f", "tests/extra.yml"],
            ),
            ("region", vec!["tests/region.yml"]),
        ] {
            let _ = fs::remove_dir_all(pkg.join("compiled"));
            let out = strata()
                .args(["package", "compile", "."])
                .args(&args)
                .current_dir(&pkg)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{case}: {err}");
            assert!(
                err.contains("3 instances: greeter, greeter-b, secrets"),
                "{err}"
            );
            // Commodore's layout: <package>/compiled/<instance>/...
            assert_same_tree(&pkg.join("compiled"), &pkg.join("tests/golden").join(case));
            // The Vault reference is a compiled Kapitan token, never revealed.
            let secret =
                fs::read_to_string(pkg.join("compiled/secrets/secrets/10_secrets.yaml")).unwrap();
            assert!(
                secret.contains(
                    "password: ?{vaultkv:t-silent-test-1234/c-green-test-1234/app/db/password:"
                ),
                "{secret}"
            );

            // --golden compiles beside the package and compares.
            let _ = fs::remove_dir_all(pkg.join("compiled"));
            let golden = format!("tests/golden/{case}");
            let out = strata()
                .args(["package", "compile", "."])
                .args(&args)
                .args(["--golden", &golden])
                .current_dir(&pkg)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(0), "{case}: {err}");
            assert!(err.contains("Golden files: 10 of 10 identical"), "{err}");
            assert!(!pkg.join("compiled").exists());
        }
    }

    #[test]
    fn golden_differences_exit_1_and_update_golden_rewrites() {
        let tmp = setup();
        let pkg = tmp.path().join("demo");
        // The region test's golden files checked against the defaults test.
        let out = strata()
            .args([
                "package",
                "compile",
                ".",
                "tests/defaults.yml",
                "-f",
                "tests/extra.yml",
            ])
            .args(["--golden", "tests/golden/region"])
            .current_dir(&pkg)
            .output()
            .unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
        assert!(
            stderr.contains("golden: greeter/greeter/10_config.yaml: differs"),
            "{stderr}"
        );
        assert!(stdout.contains("-  region: test-region"), "{stdout}");
        assert!(stdout.contains("+  region: x-fake-region"), "{stdout}");

        let out = strata()
            .args([
                "package",
                "compile",
                ".",
                "tests/defaults.yml",
                "-f",
                "tests/extra.yml",
            ])
            .args(["--golden", "tests/golden/region", "--update-golden"])
            .current_dir(&pkg)
            .output()
            .unwrap();
        assert!(out.status.success());
        assert_same_tree(
            &pkg.join("tests/golden/region"),
            &pkg.join("tests/golden/defaults"),
        );
    }

    #[test]
    fn a_kept_working_directory_recompiles_in_local_mode_without_fetching() {
        let tmp = setup();
        let pkg = tmp.path().join("demo");
        let work = tmp.path().join("work");
        let ok = |args: &[&str]| {
            let out = strata()
                .args(["package", "compile", ".", "tests/region.yml"])
                .args(args)
                .current_dir(&pkg)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        ok(&["--tmp-dir", work.to_str().unwrap()]);
        assert!(work
            .join("dependencies/greeter-b/class/greeter.yml")
            .is_file());
        // The remotes are gone: local mode needs none of them.
        fs::remove_dir_all(tmp.path().join("remotes")).unwrap();
        fs::remove_dir_all(pkg.join("compiled")).unwrap();
        ok(&["--tmp-dir", work.to_str().unwrap(), "--local", "-F"]);
        assert_same_tree(&pkg.join("compiled"), &pkg.join("tests/golden/region"));
    }

    #[test]
    fn a_missing_test_class_or_component_repository_is_a_clear_error() {
        let tmp = setup();
        let pkg = tmp.path().join("demo");
        let out = strata()
            .args(["package", "compile", ".", "tests/nope.yml"])
            .current_dir(&pkg)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains("Test class 'tests.nope' doesn't exist."),
            "{err}"
        );
        let out = strata()
            .args(["package", "compile", ".", "../demo/tests/defaults.yml"])
            .current_dir(&pkg)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("is not a path inside the package"), "{err}");
        let out = strata()
            .args(["package", "compile", ".", "tests/region.yml", "-f", "tests"])
            .current_dir(&pkg)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("is not a file"), "{err}");

        fs::rename(
            tmp.path().join("remotes/component-greeter.git"),
            tmp.path().join("remotes/gone.git"),
        )
        .unwrap();
        let out = strata()
            .args(["package", "compile", ".", "tests/region.yml"])
            .current_dir(&pkg)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("while fetching components"), "{err}");
        assert!(err.contains("component-greeter.git"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// Helm-based components: the chart from `parameters.<component>.charts`
/// fetched through the Kapitan `dependencies` entry (type helm) into the
/// component's `helmcharts/`, then rendered by the `helm` compile entry;
/// with a fake `helm` on PATH, and without one.
#[cfg(unix)]
mod helm {
    use crate::strata;
    use crate::support::copy_tree;
    use std::fs;
    use std::path::Path;

    fn podinfo() -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        copy_tree(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/commodore/helm-component/podinfo"),
            &tmp.path().join("podinfo"),
        );
        fs::create_dir_all(tmp.path().join("bin")).unwrap();
        fs::create_dir_all(tmp.path().join("empty")).unwrap();
        tmp
    }

    /// A fake helm: logs its arguments (one per line, runs separated by
    /// `--`), `pull` writes a Chart.yaml where helm untars the chart,
    /// `template` writes fixed manifests into --output-dir.
    fn fake_helm(dir: &Path) {
        let log = dir.join("helm.log");
        let script = format!(
            r#"#!/bin/sh
printf '%s\n' "$@" -- >> '{log}'
cmd="$1"; shift
dest=""; out=""; chart=""
while [ $# -gt 0 ]; do
  case "$1" in
    --destination) dest="$2"; shift ;;
    --output-dir) out="$2"; shift ;;
    --version|--repo|--namespace|--values) shift ;;
    -*) ;;
    *) chart="$1" ;;
  esac
  shift
done
case "$cmd" in
  pull)
    mkdir -p "$dest/$chart/templates"
    printf 'apiVersion: v2\nname: %s\nversion: 6.5.0\n' "$chart" > "$dest/$chart/Chart.yaml"
    ;;
  template)
    mkdir -p "$out/podinfo/templates"
    cat > "$out/podinfo/templates/deployment.yaml" <<'X'
---
# Source: podinfo/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
  namespace: syn-podinfo
spec:
  replicas: 2
X
    ;;
esac
"#,
            log = log.display()
        );
        let p = dir.join("bin/helm");
        fs::write(&p, script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// PATH with the fake helm first (its script needs mkdir and cat).
    fn with_fake_helm(tmp: &Path) -> String {
        format!(
            "{}:{}",
            tmp.join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }

    fn compile(tmp: &Path, path: &str) -> std::process::Output {
        strata()
            .args(["component", "compile", ".", "-f", "tests/defaults.yml"])
            .args(["-o", "out"])
            .current_dir(tmp.join("podinfo"))
            .env("PATH", path)
            .env("STRATA_DEPENDENCY_CACHE", tmp.join("cache"))
            .output()
            .unwrap()
    }

    #[test]
    fn fetches_the_chart_and_renders_it_with_helm() {
        let tmp = podinfo();
        fake_helm(tmp.path());
        let path = with_fake_helm(tmp.path());
        let out = compile(tmp.path(), &path);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        let c = tmp.path().join("podinfo");
        // The Kapitan dependency, in the component's helmcharts/.
        assert!(c.join("helmcharts/podinfo/6.5.0/Chart.yaml").is_file());
        let deployment = fs::read_to_string(
            c.join("out/compiled/podinfo/podinfo/01_helmchart/podinfo/templates/deployment.yaml"),
        )
        .unwrap();
        assert_eq!(
            deployment,
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: podinfo\n  namespace: syn-podinfo\nspec:\n  replicas: 2\n"
        );
        let log = fs::read_to_string(tmp.path().join("helm.log")).unwrap();
        let runs: Vec<Vec<&str>> = log
            .split("--\n")
            .filter(|r| !r.is_empty())
            .map(|r| r.lines().collect())
            .collect();
        assert_eq!(runs.len(), 2, "{log}");
        assert_eq!(runs[0][0], "pull");
        assert!(
            runs[0].ends_with(&[
                "--untar",
                "--version",
                "6.5.0",
                "--repo",
                "https://stefanprodan.github.io/podinfo",
                "podinfo"
            ]),
            "{log}"
        );
        assert_eq!(runs[1][0], "template");
        let ns = runs[1].iter().position(|a| *a == "--namespace").unwrap();
        assert_eq!(runs[1][ns + 1], "syn-podinfo");
        let chart = c.join("helmcharts/podinfo/6.5.0");
        assert_eq!(
            runs[1][runs[1].len() - 2..],
            ["podinfo", chart.to_str().unwrap()]
        );

        // The chart is there: a second compile renders without pulling.
        let out = compile(tmp.path(), &path);
        assert!(out.status.success());
        let log = fs::read_to_string(tmp.path().join("helm.log")).unwrap();
        assert_eq!(log.matches("pull\n").count(), 1, "{log}");
        assert_eq!(log.matches("template\n").count(), 2, "{log}");
    }

    #[test]
    fn a_dependency_outside_the_component_is_refused_before_anything_is_fetched() {
        let tmp = podinfo();
        let outside = tmp.path().join("outside/chart");
        let class = tmp.path().join("podinfo/class/podinfo.yml");
        let text = fs::read_to_string(&class).unwrap().replace(
            "${_base_directory}/helmcharts/podinfo/${podinfo:charts:podinfo:version}\n        source",
            &format!("{}\n        source", outside.display()),
        );
        assert!(text.contains(outside.to_str().unwrap()));
        fs::write(&class, text).unwrap();
        fake_helm(tmp.path());
        let out = compile(tmp.path(), &with_fake_helm(tmp.path()));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("component podinfo"), "{err}");
        assert!(err.contains("is outside the allowed directories"), "{err}");
        assert!(!outside.exists());
        assert!(!tmp.path().join("helm.log").exists(), "helm ran");
    }

    #[test]
    fn without_helm_the_error_names_the_component_the_chart_and_how_to_install_helm() {
        let tmp = podinfo();
        let empty = tmp.path().join("empty").display().to_string();
        // The chart must be fetched with helm.
        let out = compile(tmp.path(), &empty);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("component podinfo"), "{err}");
        assert!(err.contains("helm chart `podinfo`"), "{err}");
        assert!(err.contains("https://helm.sh/docs/intro/install/"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(!tmp.path().join("podinfo/out/compiled/podinfo").exists());

        // The chart already fetched: rendering it needs helm too.
        fake_helm(tmp.path());
        let bin = with_fake_helm(tmp.path());
        assert!(compile(tmp.path(), &bin).status.success());
        let out = compile(tmp.path(), &empty);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("component podinfo"), "{err}");
        assert!(err.contains("helmcharts/podinfo/6.5.0"), "{err}");
        assert!(err.contains("https://helm.sh/docs/intro/install/"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// A jsonnet comment closed by `**/` (the header of projectsyn's
/// `lib/prometheus.libsonnet`) ends there: the code after it is code, as
/// in the C++ jsonnet (vendor/jrsonnet-lexer/STRATA.md).
#[test]
fn a_comment_closed_by_double_star_slash_ends_there() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    fs::create_dir_all(d.join("inventory/targets")).unwrap();
    fs::create_dir_all(d.join("lib")).unwrap();
    fs::write(
        d.join("inventory/targets/t.yml"),
        "parameters:\n  kapitan:\n    vars: {target: t}\n    compile:\n      - input_paths: [main.jsonnet]\n        input_type: jsonnet\n        output_path: .\n",
    )
    .unwrap();
    fs::write(
        d.join("lib/doc.libsonnet"),
        "/**\n * \\file doc\n **/\nlocal a = 1;\n/** b ***/\nlocal b = a + 1;\n/**/ /***/\n{\n  /* x * y **/ B: b,\n}\n",
    )
    .unwrap();
    fs::write(
        d.join("main.jsonnet"),
        "local doc = import 'lib/doc.libsonnet';\n{ out: { b: doc.B } }\n",
    )
    .unwrap();
    let out = strata().arg("compile").current_dir(d).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        fs::read_to_string(d.join("compiled/t/out.yaml")).unwrap(),
        "b: 2\n"
    );
}
