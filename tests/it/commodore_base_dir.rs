//! Commodore components that generate a kustomization in their own
//! directory (`output_path: ${_base_directory}/...`, then `external`
//! kustomize, then `remove`), through `strata catalog compile --local` and
//! `strata component compile`; absolute output paths anywhere else stay
//! refused (also through symlinks), and plain Kapitan mode refuses every
//! absolute path.

use crate::strata;
use crate::support::copy_tree;
use std::fs;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/commodore")
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// The compile entries of a projectsyn component that renders a
/// kustomization with jsonnet into its own directory, builds it with
/// `${_kustomize_wrapper}` and removes the generated directory again
/// (as component-argocd's operator kustomization does).
const KUSTOMIZE_CLASS: &str = r#"parameters:
  kapitan:
    compile:
      - input_paths:
          - ${_base_directory}/component/kustomization.jsonnet
        input_type: jsonnet
        output_type: json
        output_path: ${_base_directory}/manifests/${_instance}
      - input_paths:
          - ${_kustomize_wrapper}
        input_type: external
        output_path: .
        env_vars:
          INPUT_DIR: ${_base_directory}/manifests/${_instance}
        args:
          - \${compiled_target_dir}/${_instance}/10_kustomize
      - input_paths:
          - ${_base_directory}/manifests/${_instance}
        input_type: remove
        output_path: .
"#;

/// Reads the component's parameters (`parameters.<component>`) from the
/// inventory.
fn kustomization_jsonnet(component: &str) -> String {
    format!(
        "local kap = import 'lib/kapitan.libjsonnet';\n\
         local params = kap.inventory().parameters['{component}'];\n\
         {{\n  kustomization: {{\n    namespace: params.namespace,\n    \
         replicas: [{{ name: 'controller', count: params.replicas }}],\n  }},\n}}\n"
    )
}

/// A fake `kustomize build DIR -o OUT`: records its input directory's
/// files and puts the kustomization it read into a ConfigMap.
#[cfg(unix)]
fn fake_kustomize(bin: &Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = bin.join("kustomize");
    fs::write(
        &path,
        r#"#!/bin/sh
[ "$1" = build ] && [ "$3" = -o ] || { echo "unexpected arguments: $*" >&2; exit 3; }
mkdir -p "$4"
{
  printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kustomized\ndata:\n  files: %s\n  kustomization.json: |\n' "$(ls "$2" | tr '\n' ' ')"
  sed 's/^/    /' "$2/kustomization.json"
  echo
} > "$4/v1_configmap_kustomized.yaml"
"#,
    )
    .unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// What the fake kustomize wrote from the kustomization.json Kapitan's
/// json output (indent 2) gives for `namespace` and `replicas`.
fn expected_configmap(namespace: &str, replicas: u32) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kustomized\ndata:\n  files: kustomization.json \n  kustomization.json: |\n    {{\n      \"namespace\": \"{namespace}\",\n      \"replicas\": [\n        {{\n          \"count\": {replicas},\n          \"name\": \"controller\"\n        }}\n      ]\n    }}\n"
    )
}

/// `basic` with `nginx` replaced by the kustomize component.
fn catalog_work() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixtures().join("basic"), dir.path());
    let c = dir.path().join("dependencies/nginx");
    fs::write(c.join("class/nginx.yml"), KUSTOMIZE_CLASS).unwrap();
    write(
        &c.join("component/kustomization.jsonnet"),
        &kustomization_jsonnet("nginx"),
    );
    dir
}

fn catalog_compile(dir: &Path, path: &str) -> std::process::Output {
    strata()
        .args(["catalog", "compile", "c-prod", "--local", "--quiet"])
        .arg("--cluster-file")
        .arg(dir.join("cluster.json"))
        .arg("-d")
        .arg(dir)
        .env("PATH", path)
        .output()
        .unwrap()
}

#[cfg(unix)]
#[test]
fn catalog_compile_writes_and_reads_back_a_kustomization_in_the_component_dir() {
    let dir = catalog_work();
    let bin = tempfile::tempdir().unwrap();
    let path = fake_kustomize(bin.path());
    let out = catalog_compile(dir.path(), &path);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d = dir.path();
    // pkg.ingress sets nginx.replicas to 2.
    assert_eq!(
        fs::read_to_string(
            d.join("catalog/manifests/nginx/10_kustomize/v1_configmap_kustomized.yaml")
        )
        .unwrap(),
        expected_configmap("ingress-nginx", 2)
    );
    // The `remove` entry took the generated directory away again, and
    // nothing else of the component.
    assert!(!d.join("dependencies/nginx/manifests/nginx").exists());
    assert!(d
        .join("dependencies/nginx/manifests/templates/controller.yaml")
        .is_file());

    // Without the `remove` entry the kustomization stays where Kapitan
    // writes it (os.path.join with an absolute output_path).
    let class = d.join("dependencies/nginx/class/nginx.yml");
    let text = fs::read_to_string(&class).unwrap();
    let cut = text.find("      - input_paths:\n          - ${_base_directory}/manifests/${_instance}\n        input_type: remove").unwrap();
    fs::write(&class, &text[..cut]).unwrap();
    let out = catalog_compile(d, &path);
    assert!(out.status.success());
    let generated = d.join("dependencies/nginx/manifests/nginx/kustomization.json");
    assert_eq!(
        fs::read_to_string(generated).unwrap(),
        "{\n  \"namespace\": \"ingress-nginx\",\n  \"replicas\": [\n    {\n      \"count\": 2,\n      \"name\": \"controller\"\n    }\n  ]\n}"
    );
}

/// A component checkout of its own (`component-kustomized`), with a test
/// values file as its Makefile passes it.
fn component_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let c = dir.path().join("component-kustomized");
    write(&c.join("class/kustomized.yml"), KUSTOMIZE_CLASS);
    write(
        &c.join("class/defaults.yml"),
        "parameters:\n  kustomized:\n    namespace: syn-kustomized\n    replicas: 1\n",
    );
    write(
        &c.join("component/kustomization.jsonnet"),
        &kustomization_jsonnet("kustomized"),
    );
    write(
        &c.join("tests/defaults.yml"),
        "parameters:\n  kustomized:\n    replicas: 3\n",
    );
    dir
}

#[cfg(unix)]
#[test]
fn component_compile_writes_and_reads_back_a_kustomization_in_the_component_dir() {
    let dir = component_dir();
    let c = dir.path().join("component-kustomized");
    let bin = tempfile::tempdir().unwrap();
    let path = fake_kustomize(bin.path());
    let out = strata()
        .args([
            "component",
            "compile",
            ".",
            "-f",
            "tests/defaults.yml",
            "--no-fetch",
            "-o",
            "out",
        ])
        .current_dir(&c)
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        fs::read_to_string(
            c.join("out/compiled/kustomized/kustomized/10_kustomize/v1_configmap_kustomized.yaml")
        )
        .unwrap(),
        expected_configmap("syn-kustomized", 3)
    );
    assert!(!c.join("manifests/kustomized").exists());
    assert!(c.join("class/kustomized.yml").is_file());
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[cfg(unix)]
#[test]
fn absolute_output_paths_outside_the_component_dir_are_refused() {
    let bin = tempfile::tempdir().unwrap();
    let path = fake_kustomize(bin.path());
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escaped");
    for (to, what) in [
        (target.display().to_string(), "another directory"),
        (
            "${_base_directory}/../nginx-evil".to_string(),
            "`..` out of the component",
        ),
        (
            "${_base_directory}/../../compiled".to_string(),
            "the working directory",
        ),
    ] {
        let dir = catalog_work();
        let class = dir.path().join("dependencies/nginx/class/nginx.yml");
        let text = fs::read_to_string(&class).unwrap().replacen(
            "output_path: ${_base_directory}/manifests/${_instance}",
            &format!("output_path: {to}"),
            1,
        );
        fs::write(&class, text).unwrap();
        let out = catalog_compile(dir.path(), &path);
        assert_eq!(out.status.code(), Some(2), "{what}");
        let e = stderr(&out);
        let base = dir.path().join("dependencies/nginx");
        assert!(
            e.contains(&format!(
                "target nginx, compile entry #1 (jsonnet -> {}): output_path `{}` is absolute and outside `{}`: an absolute output_path must lie inside the component's own directory (`${{_base_directory}}`)",
                to.replace("${_base_directory}", &base.display().to_string()),
                to.replace("${_base_directory}", &base.display().to_string()),
                base.display()
            )),
            "{what}: {e}"
        );
        assert!(!target.exists(), "{what}");
        assert!(!dir.path().join("dependencies/nginx-evil").exists());
        assert!(!dir.path().join("catalog/manifests").exists(), "{what}");
    }
}

#[cfg(unix)]
#[test]
fn a_symlink_in_the_component_dir_does_not_lead_writes_out() {
    let bin = tempfile::tempdir().unwrap();
    let path = fake_kustomize(bin.path());
    let outside = tempfile::tempdir().unwrap();
    let dir = catalog_work();
    let manifests = dir.path().join("dependencies/nginx/manifests");
    fs::remove_dir_all(&manifests).unwrap();
    std::os::unix::fs::symlink(outside.path(), &manifests).unwrap();
    let out = catalog_compile(dir.path(), &path);
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(e.contains("target nginx, compile entry #1"), "{e}");
    assert!(
        e.contains(&format!(
            "{} resolves outside the component directory `{}` (through a symlink)",
            manifests.display(),
            dir.path().join("dependencies/nginx").display()
        )),
        "{e}"
    );
    // Nothing was created through the link.
    assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0);

    // A generated file that is a symlink to a file outside is not written through.
    fs::remove_file(&manifests).unwrap();
    fs::create_dir_all(manifests.join("nginx")).unwrap();
    let victim = outside.path().join("victim");
    fs::write(&victim, "keep\n").unwrap();
    let link = manifests.join("nginx/kustomization.json");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let out = catalog_compile(dir.path(), &path);
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(e.contains("target nginx, compile entry #1"), "{e}");
    assert!(
        e.contains(&format!(
            "{} is a symlink; strata does not write through symlinks",
            link.display()
        )),
        "{e}"
    );
    assert_eq!(fs::read_to_string(&victim).unwrap(), "keep\n");
}

/// Plain Kapitan mode keeps refusing every absolute output_path (strata's
/// hostile-input rule; Kapitan itself would write there).
#[test]
fn kapitan_mode_refuses_absolute_output_paths() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let abs = outside.path().join("x");
    write(
        &dir.path().join("inventory/targets/t.yml"),
        &format!(
            "parameters:\n  kapitan:\n    vars:\n      target: t\n    compile:\n      - output_path: {}\n        input_type: jsonnet\n        input_paths: [main.jsonnet]\n",
            abs.display()
        ),
    );
    write(&dir.path().join("main.jsonnet"), "{ a: 1 }\n");
    let out = strata()
        .arg("compile")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(
        e.contains(&format!(
            "target t, compile entry #1 (jsonnet -> {p}): output_path `{p}` is absolute; it must be relative to the target's output directory",
            p = abs.display()
        )),
        "{e}"
    );
    assert!(!abs.exists());
}
