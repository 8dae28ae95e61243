//! A jsonnet import that is not found in Commodore mode (`catalog compile`
//! and `component compile`): the error names the target, entry and input,
//! and its hint the component, its `jsonnetfile.json` and the step that
//! installs the component's jsonnet libraries.

use crate::strata;
use crate::support::copy_tree;
use std::fs;
use std::path::{Path, PathBuf};

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

const NO_DEPENDENCIES: &str = "{\"version\": 1, \"dependencies\": [], \"legacyImports\": true}\n";

/// The hint lines of an error output.
fn hints(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter(|l| l.starts_with("hint: "))
        .map(str::to_string)
        .collect()
}

/// `basic` whose `argocd` component imports a library nobody installed.
fn catalog_work(jsonnetfile: bool) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/commodore/basic"),
        dir.path(),
    );
    let work = dir.path().canonicalize().unwrap();
    let main = work.join("dependencies/argocd/component/main.jsonnet");
    let text = fs::read_to_string(&main).unwrap().replacen(
        "  '00_namespace'",
        "  '05_prometheus': (import 'kube-prometheus/main.libsonnet').prometheus,\n  '00_namespace'",
        1,
    );
    fs::write(&main, text).unwrap();
    if jsonnetfile {
        write(
            &work.join("dependencies/argocd/jsonnetfile.json"),
            NO_DEPENDENCIES,
        );
    }
    (dir, work)
}

fn catalog_compile(work: &Path) -> std::process::Output {
    strata()
        .args(["catalog", "compile", "c-prod", "--local", "--quiet"])
        .arg("--cluster-file")
        .arg(work.join("cluster.json"))
        .arg("-d")
        .arg(work)
        .output()
        .unwrap()
}

#[test]
fn catalog_compile_names_the_component_its_jsonnetfile_and_the_fetch_step() {
    let (_dir, work) = catalog_work(true);
    let out = catalog_compile(&work);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    let main = work.join("dependencies/argocd/component/main.jsonnet");
    assert!(
        e.starts_with(&format!(
            "error: target argocd, compile entry #1 (jsonnet -> argocd/), input {}: runtime error: couldn't open import \"kube-prometheus/main.libsonnet\": no match locally or in the search paths [",
            main.display()
        )),
        "{e}"
    );
    assert!(e.contains(&format!("\n  --> {}\n", main.display())), "{e}");
    assert_eq!(
        hints(&out.stderr),
        [format!(
            "hint: component argocd declares its jsonnet libraries in {}, which were not installed: `strata catalog compile c-prod` without --local (Commodore's fetch step) installs them into {}",
            work.join("dependencies/argocd/jsonnetfile.json").display(),
            work.join("vendor").display()
        )]
    );
    // Nothing of the catalog was written.
    assert!(!work.join("catalog/manifests").exists());
}

#[test]
fn catalog_compile_names_a_missing_jsonnetfile() {
    let (_dir, work) = catalog_work(false);
    let out = catalog_compile(&work);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        hints(&out.stderr),
        [format!(
            "hint: component argocd has no jsonnetfile.json ({}): declare the library there (jsonnet-bundler format) to have it installed into {}",
            work.join("dependencies/argocd/jsonnetfile.json").display(),
            work.join("vendor").display()
        )]
    );
}

#[test]
fn catalog_compile_names_the_component_for_a_jsonnet_filter_import() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/commodore/basic"),
        dir.path(),
    );
    let work = dir.path().canonicalize().unwrap();
    let c = work.join("dependencies/nginx");
    let class = c.join("class/nginx.yml");
    let text = fs::read_to_string(&class)
        .unwrap()
        .replace("          enabled: false\n", "");
    fs::write(&class, text).unwrap();
    write(
        &c.join("postprocess/disabled.jsonnet"),
        "local k = import 'kube-ssl/kube.libsonnet';\n{ x: k.x }\n",
    );
    write(&c.join("jsonnetfile.json"), NO_DEPENDENCIES);
    let out = catalog_compile(&work);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("couldn't open import \"kube-ssl/kube.libsonnet\""),
        "{e}"
    );
    assert_eq!(
        hints(&out.stderr),
        [format!(
            "hint: component nginx declares its jsonnet libraries in {}, which were not installed: `strata catalog compile c-prod` without --local (Commodore's fetch step) installs them into {}",
            c.join("jsonnetfile.json").display(),
            work.join("vendor").display()
        )]
    );
}

/// A component (`component-importer`) whose jsonnet imports a library
/// its jsonnetfile.json does not declare.
fn component(jsonnetfile: bool) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let c = dir
        .path()
        .canonicalize()
        .unwrap()
        .join("component-importer");
    write(
        &c.join("class/importer.yml"),
        "parameters:\n  kapitan:\n    compile:\n      - input_paths:\n          - ${_base_directory}/component/main.jsonnet\n        input_type: jsonnet\n        output_path: importer/\n",
    );
    write(
        &c.join("class/defaults.yml"),
        "parameters:\n  importer:\n    =_metadata:\n      multi_instance: true\n    namespace: syn-importer\n",
    );
    write(
        &c.join("component/main.jsonnet"),
        "local kube = import 'kube-ssl/kube.libsonnet';\n{ '00_ns': kube.Namespace('syn-importer') }\n",
    );
    if jsonnetfile {
        write(&c.join("jsonnetfile.json"), NO_DEPENDENCIES);
    }
    (dir, c)
}

fn component_compile(c: &Path, extra: &[&str]) -> std::process::Output {
    strata()
        .args(["component", "compile", ".", "-o", "out"])
        .args(extra)
        .current_dir(c)
        .output()
        .unwrap()
}

#[test]
fn component_compile_names_the_component_its_jsonnetfile_and_the_fetch_step() {
    let (_dir, c) = component(true);
    let jf = c.join("jsonnetfile.json");
    let vendor = c.join("vendor");

    // --no-fetch: the libraries were not installed.
    let out = component_compile(&c, &["--no-fetch"]);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    let main = c.join("component/main.jsonnet");
    assert!(
        e.starts_with(&format!(
            "error: target importer, compile entry #1 (jsonnet -> importer/), input {}: runtime error: couldn't open import \"kube-ssl/kube.libsonnet\": no match locally or in the search paths [",
            main.display()
        )),
        "{e}"
    );
    // The search paths in the scratch directory (gone once the compile
    // ends) are shown below `<scratch>`, not as `/tmp/strata-component-*`
    // (probe 43's left-over).
    assert!(!e.contains("strata-component-"), "{e}");
    assert!(
        e.contains(&format!(
            "search paths [\"{}\", \"<scratch>/dependencies\", \"<scratch>\", ",
            vendor.display()
        )),
        "{e}"
    );
    assert_eq!(
        hints(&out.stderr),
        [format!(
            "hint: component importer declares its jsonnet libraries in {}, which were not installed: `strata component compile` without --no-fetch (or `strata fetch --jsonnetfile {}`, Commodore runs `jb install` there) installs them into {}, or pass the library's directory with -J/--search-paths",
            jf.display(),
            c.display(),
            vendor.display()
        )]
    );

    // Installed (nothing to install): the library is not declared.
    let out = component_compile(&c, &[]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        hints(&out.stderr),
        [format!(
            "hint: component importer declares its jsonnet libraries in {}, installed into {}, and this import is not among them: add the library to {}, or pass the library's directory with -J/--search-paths",
            jf.display(),
            vendor.display(),
            jf.display()
        )]
    );
}

#[test]
fn component_compile_names_a_missing_jsonnetfile_and_the_alias() {
    let (_dir, c) = component(false);
    let out = component_compile(&c, &["--no-fetch", "--alias", "importer-2"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        hints(&out.stderr),
        [format!(
            "hint: component importer (instance importer-2) has no jsonnetfile.json ({}): declare the library there (jsonnet-bundler format) to have it installed into {}, or pass the library's directory with -J/--search-paths",
            c.join("jsonnetfile.json").display(),
            c.join("vendor").display()
        )]
    );
}
