//! `strata catalog compile`: Commodore's local mode on the working
//! directories under `tests/fixtures/commodore/`, compared byte for byte
//! with the catalogs the real Commodore produced from them
//! (`<name>.expected/`, written by `bench/commodore-compare.sh`), plus the
//! checks Commodore makes (instances, aliases, versions, libraries, facts)
//! and the Lieutenant API mode against a local HTTP server.

use crate::strata;
use crate::support::copy_tree;
use std::fs;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/commodore")
}

/// A writable copy of a fixture working directory.
fn work(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixtures().join(name), dir.path());
    dir
}

/// `strata catalog compile <cluster> --local` on the working directory `dir`.
fn compile_cmd(dir: &Path, cluster: &str) -> assert_cmd::Command {
    let mut cmd = strata();
    cmd.args([
        "catalog",
        "compile",
        cluster,
        "--local",
        "--quiet",
        "--cluster-file",
    ])
    .arg(dir.join("cluster.json"))
    .arg("-d")
    .arg(dir);
    cmd
}

fn compile(dir: &Path, cluster: &str) -> assert_cmd::assert::Assert {
    compile_cmd(dir, cluster).assert()
}

fn files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

fn read(p: &Path) -> String {
    fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn stderr(a: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&a.get_output().stderr).into_owned()
}

#[test]
fn catalogs_match_commodore() {
    let mut compared = 0;
    for e in fs::read_dir(fixtures()).unwrap() {
        let p = e.unwrap().path();
        let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(base) = name.strip_suffix(".expected") else {
            continue;
        };
        let info: serde_json::Value =
            serde_json::from_str(&read(&fixtures().join(base).join("cluster.json"))).unwrap();
        let cluster = info["cluster"]["id"].as_str().unwrap().to_string();
        let dir = work(base);
        compile(dir.path(), &cluster).success();
        let catalog = dir.path().join("catalog");
        let ours = files(&catalog);
        let theirs = files(&p);
        assert_eq!(ours, theirs, "{base}: catalog file lists differ");
        for f in &theirs {
            assert_eq!(
                read(&catalog.join(f)),
                read(&p.join(f)),
                "{base}: {}",
                f.display()
            );
            compared += 1;
        }
    }
    assert!(compared >= 27, "only {compared} files compared");
}

#[test]
fn working_directory_is_set_up_like_commodore() {
    let dir = work("basic");
    let d = dir.path();
    compile(d, "c-prod").success();
    let link = |p: &str| fs::read_link(d.join(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
    assert_eq!(
        link("inventory/classes/monitoring"),
        PathBuf::from("../../dependencies/pkg.monitoring")
    );
    assert_eq!(
        link("inventory/classes/ingress"),
        PathBuf::from("../../dependencies/pkg.ingress/config")
    );
    assert_eq!(
        link("inventory/classes/components/prometheus-infra.yml"),
        PathBuf::from("../../../dependencies/prometheus-infra/class/prometheus.yml")
    );
    assert_eq!(
        link("inventory/classes/defaults/prometheus-infra.yml"),
        PathBuf::from("../../../dependencies/prometheus-infra/class/defaults.yml")
    );
    assert_eq!(
        link("dependencies/lib/storage.libsonnet"),
        PathBuf::from("../storage-lib/lib/storage-lib.libsonnet")
    );
    // cert-manager is removed with `~cert-manager` by the tenant.
    assert!(!d
        .join("inventory/classes/components/cert-manager.yml")
        .exists());
    let target = read(&d.join("inventory/targets/prometheus-infra.yml"));
    assert!(target.starts_with(
        "classes:\n  - params.cluster\n  - defaults.argocd\n  - defaults.nginx\n  - defaults.prometheus-infra\n  - defaults.storage-lib\n  - global.commodore\n  - components.prometheus-infra\nparameters:\n"
    ), "{target}");
    assert!(
        target.contains("  _instance: prometheus-infra\n"),
        "{target}"
    );
    assert!(
        target.contains("  prometheus: ${prometheus_infra}\n  prometheus_infra: {}\n"),
        "{target}"
    );
    let boot = read(&d.join("inventory/targets/cluster.yml"));
    assert!(
        boot.ends_with("  - global.commodore\nparameters:\n  _instance: cluster\n"),
        "{boot}"
    );
    let params = read(&d.join("inventory/classes/params/cluster.yml"));
    assert!(params.contains("  cluster:\n    catalog_url: ssh://git@git.example.com/catalogs/c-prod.git\n    display_name: Production\n    name: c-prod\n    tenant: t-acme\n    tenant_display_name: ACME Corp.\n"), "{params}");
    assert!(
        params.contains("  dynamic_facts:\n    kubernetesVersion:\n      major: '1'\n"),
        "{params}"
    );
    // Compiling again gives the same catalog (and leaves no temporary directory).
    let before = files(&d.join("catalog"));
    compile(d, "c-prod").success();
    assert_eq!(before, files(&d.join("catalog")));
    assert!(!fs::read_dir(d).unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with(".strata")));
}

/// Runs a failing compile on a modified copy of `basic` and returns stderr.
fn failing(edit: impl FnOnce(&Path)) -> String {
    let dir = work("basic");
    edit(dir.path());
    let a = compile(dir.path(), "c-prod").code(2);
    let before = dir.path().join("catalog").exists();
    assert!(!before, "a failed compile must not write a catalog");
    stderr(&a)
}

fn replace(p: &Path, from: &str, to: &str) {
    let text = read(p);
    assert!(text.contains(from), "{}: {from}", p.display());
    fs::write(p, text.replace(from, to)).unwrap();
}

#[test]
fn aliasing_needs_multi_instance() {
    let e = failing(|d| {
        replace(
            &d.join("dependencies/prometheus/class/defaults.yml"),
            "multi_instance: true",
            "multi_instance: false",
        );
    });
    assert!(
        e.contains(
            "Component prometheus with alias prometheus-infra does not support instantiation."
        ),
        "{e}"
    );
}

#[test]
fn instance_version_needs_multi_version() {
    let e = failing(|d| {
        replace(
            &d.join("dependencies/prometheus/class/defaults.yml"),
            "multi_version: true",
            "multi_version: false",
        );
    });
    assert!(
        e.contains("does not support overriding instance version"),
        "{e}"
    );
}

#[test]
fn duplicate_instances_are_refused() {
    let tenant = "inventory/classes/t-acme/c-prod.yml";
    let e = failing(|d| {
        replace(
            &d.join(tenant),
            "  - ~cert-manager\n",
            "  - ~cert-manager\n  - nginx as prometheus-infra\n",
        )
    });
    assert!(
        e.contains("Duplicate component alias 'prometheus-infra'"),
        "{e}"
    );
    let e = failing(|d| {
        replace(
            &d.join(tenant),
            "  - ~cert-manager\n",
            "  - ~cert-manager\n  - nginx as argocd\n",
        )
    });
    assert!(
        e.contains("Component 'nginx' aliases existing component 'argocd'"),
        "{e}"
    );
    let e = failing(|d| {
        replace(
            &d.join(tenant),
            "  - ~cert-manager\n",
            "  - ~cert-manager\n  - argocd as argocd\n",
        )
    });
    assert!(
        e.contains("listed both as `argocd` and as `argocd as argocd`"),
        "{e}"
    );
}

#[test]
fn identity_alias_alone_is_fine() {
    let dir = work("basic");
    replace(
        &dir.path().join("inventory/classes/global/common.yml"),
        "  - argocd\n",
        "  - argocd as argocd\n",
    );
    compile(dir.path(), "c-prod").success();
    assert!(dir
        .path()
        .join("catalog/manifests/argocd/10_secret.yaml")
        .is_file());
}

#[test]
fn version_only_entry_is_a_typo() {
    let e = failing(|d| {
        replace(
            &d.join("inventory/classes/t-acme/c-prod.yml"),
            "    prometheus-infra:\n",
            "    argcd:\n      version: v1\n    prometheus-infra:\n",
        );
    });
    assert!(
        e.contains("Version override specified for component 'argcd' which has no URL"),
        "{e}"
    );
}

#[test]
fn missing_version_is_an_error() {
    let e = failing(|d| {
        replace(
            &d.join("inventory/classes/global/common.yml"),
            "      version: v7.1.0\n",
            "",
        )
    });
    assert!(
        e.contains("Component 'argocd' is missing field 'version'"),
        "{e}"
    );
}

#[test]
fn library_names_are_checked() {
    let e = failing(|d| {
        fs::rename(
            d.join("dependencies/storage-lib/lib/storage-lib.libsonnet"),
            d.join("dependencies/storage-lib/lib/volumes.libsonnet"),
        )
        .unwrap();
    });
    assert!(
        e.contains(
            "Component 'storage-lib' uses invalid component library name 'volumes.libsonnet'"
        ),
        "{e}"
    );
    let e = failing(|d| {
        replace(
            &d.join("dependencies/storage-lib/class/defaults.yml"),
            "storage.libsonnet: storage-lib.libsonnet",
            "argocd-storage.libsonnet: storage-lib.libsonnet",
        );
    });
    assert!(
        e.contains(
            "Invalid alias prefix 'argocd' for template library alias of component 'storage-lib'"
        ),
        "{e}"
    );
}

#[test]
fn required_facts_and_cluster_id() {
    let e = failing(|d| replace(&d.join("cluster.json"), "\"cloud\": \"exoscale\", ", ""));
    assert!(e.contains("Required fact 'cloud' not set"), "{e}");
    let dir = work("basic");
    let a = compile(dir.path(), "c-other").code(2);
    assert!(stderr(&a).contains("c-prod"), "{}", stderr(&a));
}

#[test]
fn disabled_and_invalid_filters() {
    // nginx's jsonnet filter is `enabled: false`; enabled, it runs (and
    // writes nothing, it returns `{}`); a filter whose file is missing is
    // skipped with a warning, as Commodore does.
    let dir = work("basic");
    let class = dir.path().join("dependencies/nginx/class/nginx.yml");
    replace(&class, "          enabled: false\n", "");
    replace(
        &class,
        "filter: postprocess/disabled.jsonnet",
        "filter: postprocess/missing.jsonnet",
    );
    let a = compile(dir.path(), "c-prod").success();
    assert!(
        stderr(&a).contains("Jsonnet filter definition does not exist"),
        "{}",
        stderr(&a)
    );
    let dir = work("basic");
    replace(
        &dir.path().join("dependencies/nginx/class/nginx.yml"),
        "          enabled: false\n",
        "",
    );
    compile(dir.path(), "c-prod").success();
    let expected = files(&fixtures().join("basic.expected"));
    assert_eq!(files(&dir.path().join("catalog")), expected);
}

#[test]
fn jsonnet_filter_errors_name_the_filter() {
    let dir = work("monorepo");
    let f = dir
        .path()
        .join("dependencies/site-config/components/site-config/postprocess/annotate.jsonnet");
    replace(&f, "std.extVar('owner')", "std.extVar('no-such-var')");
    let a = compile(dir.path(), "c-edge-01").code(2);
    assert!(stderr(&a).contains("annotate.jsonnet"), "{}", stderr(&a));
    assert!(!dir.path().join("catalog").exists());
}

#[test]
fn lieutenant_api_mode() {
    use std::io::{BufRead, BufReader, Write};
    let info: serde_json::Value =
        serde_json::from_str(&read(&fixtures().join("basic/cluster.json"))).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let mut auth = Vec::new();
        for _ in 0..2 {
            let (mut s, _) = listener.accept().unwrap();
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            let path = line.split_whitespace().nth(1).unwrap().to_string();
            loop {
                let mut h = String::new();
                r.read_line(&mut h).unwrap();
                if h.to_ascii_lowercase().starts_with("authorization:") {
                    auth.push(h.trim().to_string());
                }
                if h == "\r\n" || h.is_empty() {
                    break;
                }
            }
            let body = match path.as_str() {
                "/api/clusters/c-prod" => info["cluster"].to_string(),
                "/api/tenants/t-acme" => info["tenant"].to_string(),
                _ => "{\"reason\":\"not found\"}".to_string(),
            };
            write!(s, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        }
        auth
    });
    let dir = work("basic");
    strata()
        .args([
            "catalog",
            "compile",
            "c-prod",
            "--local",
            "--quiet",
            "--api-url",
        ])
        .arg(format!("http://{addr}/api"))
        .env("COMMODORE_API_TOKEN", "secret-token")
        .arg("-d")
        .arg(dir.path())
        .assert()
        .success();
    let auth = server.join().unwrap();
    assert_eq!(auth, vec!["Authorization: Bearer secret-token"; 2]);
    let params = read(&dir.path().join("inventory/classes/params/cluster.yml"));
    assert!(
        params.contains("    tenant_display_name: ACME Corp.\n"),
        "{params}"
    );
    assert!(dir
        .path()
        .join("catalog/manifests/argocd/10_secret.yaml")
        .is_file());
}

#[test]
fn successor_takes_predecessor_prefix_only_when_nominated() {
    let dir = work("successor");
    replace(
        &dir.path()
            .join("dependencies/legacy-backup/class/defaults.yml"),
        "      replaced_by: backup\n",
        "      replaced_by: other\n",
    );
    let a = compile(dir.path(), "c-lab").code(2);
    let e = stderr(&a);
    assert!(
        e.contains(
            "Invalid alias prefix 'legacy-backup' for template library alias of component 'backup'"
        ),
        "{e}"
    );
    assert!(!dir.path().join("catalog").exists());
}

#[test]
fn inventory_lists_dependencies() {
    let dir = work("basic");
    compile(dir.path(), "c-prod").success();
    let a = strata()
        .args(["inventory", "show", "--format", "json", "-d"])
        .arg(dir.path())
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_slice(&a.get_output().stdout).unwrap();
    assert_eq!(v["cluster"], "c-prod");
    // The ingress package raises nginx's version; the instance overrides its own.
    assert_eq!(v["components"]["nginx"]["version"], "v1.9.0");
    assert_eq!(
        v["components"]["prometheus"]["instances"]["prometheus-infra"]["version"],
        "v2.4.0"
    );
    assert_eq!(v["packages"]["ingress"]["path"], "config");
    assert!(v["components"].get("cert-manager").is_none());
    let a = strata()
        .args(["inventory", "packages", "--format", "yaml", "-d"])
        .arg(dir.path())
        .assert()
        .success();
    let text = String::from_utf8_lossy(&a.get_output().stdout).into_owned();
    assert!(
        text.contains(
            "  ingress: https://git.example.com/packages/ingress.git @ v0.2.0 (path config)\n"
        ),
        "{text}"
    );
}

#[test]
fn component_paths_and_instance_parameters() {
    let dir = work("monorepo");
    let d = dir.path();
    let a = compile(d, "c-edge-01").success();
    // Invalid filter definitions are skipped with a warning, as Commodore does.
    assert!(stderr(&a).contains("Builtin filter called on path which doesn't exist"));
    assert_eq!(
        fs::read_link(d.join("inventory/classes/components/gateway-public.yml")).unwrap(),
        PathBuf::from("../../../dependencies/gateway-public/components/gateway/class/gateway.yml")
    );
    assert_eq!(
        fs::read_link(d.join("inventory/classes/edge")).unwrap(),
        PathBuf::from("../../dependencies/pkg.edge/packages/edge")
    );
    let public = read(&d.join("catalog/manifests/gateway-public/20_service.yaml"));
    assert!(public.contains("type: LoadBalancer"), "{public}");
    let internal = read(&d.join("catalog/manifests/gateway-internal/20_service.yaml"));
    assert!(internal.contains("type: ClusterIP"), "{internal}");
    let chart = read(&d.join("catalog/manifests/gateway-internal/10_chart/deployment.yaml"));
    assert!(chart.contains("  namespace: gateway-internal\n"), "{chart}");
}

/// `catalog compile --push` commits catalog/manifests and catalog/refs to
/// the catalog repository; a compile that fails pushes nothing.
#[test]
fn compile_and_push_to_the_catalog_repository() {
    let git = |args: &[&str], dir: &Path| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let remote = tempfile::tempdir().unwrap();
    assert!(git(&["init", "--bare", "-q", "-b", "main"], remote.path()).0);
    let url = format!("file://{}", remote.path().display());
    let cache = tempfile::tempdir().unwrap();
    let push = |dir: &Path| {
        strata()
            .args([
                "catalog", "compile", "c-prod", "--local", "--quiet", "--push",
            ])
            .arg("--cluster-file")
            .arg(dir.join("cluster.json"))
            .arg("-d")
            .arg(dir)
            .args([
                "--catalog-repo",
                &url,
                "--author",
                "CI <ci@example.com>",
                "--cache-dir",
            ])
            .arg(cache.path())
            .assert()
    };

    // A failing compile pushes nothing.
    let broken = work("basic");
    let cluster = broken.path().join("cluster.json");
    replace(&cluster, "\"distribution\"", "\"distro\"");
    push(broken.path()).code(2);
    assert!(
        !git(&["rev-parse", "--verify", "-q", "main"], remote.path()).0,
        "nothing pushed"
    );

    let dir = work("basic");
    push(dir.path()).success();
    let (ok, files) = git(&["ls-tree", "-r", "--name-only", "main"], remote.path());
    assert!(ok);
    let pushed: Vec<&str> = files.lines().collect();
    let mut compiled: Vec<String> = files_under(&dir.path().join("catalog"));
    compiled.sort();
    assert_eq!(
        pushed,
        compiled.iter().map(String::as_str).collect::<Vec<_>>()
    );
    assert!(
        pushed.iter().any(|f| f.starts_with("manifests/")),
        "{pushed:?}"
    );
}

fn files_under(root: &Path) -> Vec<String> {
    files(root)
        .into_iter()
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|p| !p.starts_with(".git/"))
        .collect()
}

/// Writes an executable script.
#[cfg(unix)]
fn script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    fs::write(path, body).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

/// `nginx` of `basic` rendered through `helm template` and kustomize (via
/// `${_kustomize_wrapper}`) instead of copying pre-rendered files.
const HELM_AND_KUSTOMIZE: &str = r#"parameters:
  kapitan:
    compile:
      - input_paths:
          - ${_base_directory}/helmcharts/ingress-nginx/4.0.0
        input_type: helm
        output_path: ${_instance}/01_helmchart
        helm_values:
          controller:
            replicaCount: ${nginx:replicas}
        helm_params:
          name: ingress-nginx
          namespace: ${nginx:namespace}
          api_versions: networking.k8s.io/v1/Ingress
      - input_paths:
          - ${_kustomize_wrapper}
        input_type: external
        output_path: .
        env_vars:
          INPUT_DIR: ${_base_directory}/kustomize
        args:
          - \${compiled_target_dir}/${_instance}/10_kustomize
  commodore:
    postprocess:
      filters:
        - type: builtin
          path: ${_instance}/01_helmchart/ingress-nginx/templates
          filter: helm_namespace
          filterargs:
            namespace: ${nginx:namespace}
"#;

fn helm_and_kustomize_work() -> tempfile::TempDir {
    let dir = work("basic");
    let c = dir.path().join("dependencies/nginx");
    fs::write(c.join("class/nginx.yml"), HELM_AND_KUSTOMIZE).unwrap();
    fs::create_dir_all(c.join("helmcharts/ingress-nginx/4.0.0")).unwrap();
    fs::write(
        c.join("helmcharts/ingress-nginx/4.0.0/Chart.yaml"),
        "name: ingress-nginx\n",
    )
    .unwrap();
    fs::create_dir_all(c.join("kustomize")).unwrap();
    fs::write(c.join("kustomize/kustomization.yaml"), "resources: []\n").unwrap();
    dir
}

#[cfg(unix)]
#[test]
fn helm_and_kustomize_run_the_binaries() {
    let dir = helm_and_kustomize_work();
    let bin = tempfile::tempdir().unwrap();
    let log = bin.path().join("log");
    // Fake binaries: record argv (one line each) and write known manifests
    // where the real tools would.
    script(
        &bin.path().join("helm"),
        &format!(
            r#"#!/bin/sh
printf '%s\n' "$@" > '{log}.helm'
out=""; values=""
while [ $# -gt 0 ]; do
  case "$1" in
    --output-dir) out="$2"; shift ;;
    --values) values="$2"; shift ;;
  esac
  shift
done
cp "$values" '{log}.values'
mkdir -p "$out/ingress-nginx/templates"
cat > "$out/ingress-nginx/templates/deployment.yaml" <<'X'
---
# Source: ingress-nginx/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ingress-nginx-controller
spec:
  replicas: 1
---
# Source: ingress-nginx/templates/deployment.yaml
apiVersion: v1
kind: Service
metadata:
  name: ingress-nginx-controller
X
"#,
            log = log.display()
        ),
    );
    script(
        &bin.path().join("kustomize"),
        &format!(
            r#"#!/bin/sh
printf '%s\n' "$@" > '{log}.kustomize'
mkdir -p "$4"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-kustomize\n' > "$4/v1_configmap_from-kustomize.yaml"
"#,
            log = log.display()
        ),
    );
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    compile_cmd(dir.path(), "c-prod")
        .env("PATH", &path)
        .assert()
        .success();
    let d = dir.path();

    let helm: Vec<String> = read(&PathBuf::from(format!("{}.helm", log.display())))
        .lines()
        .map(str::to_string)
        .collect();
    let chart = d.join("dependencies/nginx/helmcharts/ingress-nginx/4.0.0");
    assert_eq!(helm.len(), 13, "{helm:?}");
    assert_eq!(
        helm[..7],
        [
            "template",
            "--include-crds",
            "--skip-tests",
            "--namespace",
            "ingress-nginx",
            "--api-versions",
            "networking.k8s.io/v1/Ingress"
        ]
    );
    assert_eq!(helm[7], "--values");
    assert_eq!(helm[9], "--output-dir");
    assert_eq!(helm[11..], ["ingress-nginx", chart.to_str().unwrap()]);
    let values = read(&PathBuf::from(format!("{}.values", log.display())));
    // pkg.ingress sets nginx.replicas to 2.
    assert_eq!(values, "controller:\n  replicaCount: 2\n");

    let kustomize: Vec<String> = read(&PathBuf::from(format!("{}.kustomize", log.display())))
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(kustomize.len(), 4, "{kustomize:?}");
    assert_eq!(kustomize[0], "build");
    assert_eq!(
        Path::new(&kustomize[1]),
        d.join("dependencies/nginx/kustomize")
    );
    assert_eq!(kustomize[2], "-o");
    assert!(
        kustomize[3].ends_with("/nginx/10_kustomize"),
        "{kustomize:?}"
    );

    let m = d.join("catalog/manifests/nginx");
    let mut got: Vec<String> = files(&m)
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    got.sort();
    assert_eq!(
        got,
        [
            "01_helmchart/ingress-nginx/templates/deployment.yaml",
            "10_kustomize/v1_configmap_from-kustomize.yaml"
        ]
    );
    assert_eq!(
        read(&m.join("01_helmchart/ingress-nginx/templates/deployment.yaml")),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: ingress-nginx-controller\n  namespace: ingress-nginx\nspec:\n  replicas: 1\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: ingress-nginx-controller\n  namespace: ingress-nginx\n"
    );
    assert_eq!(
        read(&m.join("10_kustomize/v1_configmap_from-kustomize.yaml")),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-kustomize\n"
    );
    let target = read(&d.join("inventory/targets/nginx.yml"));
    let wrapper = d.join("dependencies/.strata/run-kustomize");
    assert!(
        target.contains(&format!("  _kustomize_wrapper: {}\n", wrapper.display())),
        "{target}"
    );
}

#[cfg(unix)]
#[test]
fn missing_helm_and_kustomize_are_named() {
    // An empty PATH: neither tool can be found, whatever the machine has.
    let empty = tempfile::tempdir().unwrap();
    let dir = helm_and_kustomize_work();
    let a = compile_cmd(dir.path(), "c-prod")
        .env("PATH", empty.path())
        .assert()
        .code(2);
    let e = stderr(&a);
    assert!(e.contains("nginx"), "{e}");
    assert!(e.contains("compile entry #1"), "{e}");
    assert!(e.contains("install helm"), "{e}");

    // Without the helm entry, the kustomize wrapper reports its tool.
    let f = dir.path().join("dependencies/nginx/class/nginx.yml");
    let text = read(&f);
    let start = text
        .find("      - input_paths:\n          - ${_base_directory}/helm")
        .unwrap();
    let end = text
        .find("      - input_paths:\n          - ${_kustomize")
        .unwrap();
    fs::write(&f, format!("{}{}", &text[..start], &text[end..])).unwrap();
    let a = compile_cmd(dir.path(), "c-prod")
        .env("PATH", empty.path())
        .assert()
        .code(2);
    let e = stderr(&a);
    assert!(e.contains("nginx"), "{e}");
    assert!(e.contains("compile entry #1"), "{e}");
    assert!(e.contains("kustomize not found"), "{e}");
    assert!(e.contains("install kustomize"), "{e}");
}

/// kadet runs in Python (issue 16); where it cannot (no kadet package, or
/// the input is not a kadet module) the error names the entry.
#[test]
fn kadet_failure_names_the_entry() {
    let e = failing(|d| {
        replace(
            &d.join("dependencies/nginx/class/nginx.yml"),
            "input_type: copy",
            "input_type: kadet",
        );
    });
    assert!(e.contains("(kadet -> "), "{e}");
    assert!(e.contains("nginx"), "{e}");
    assert!(e.contains("compile entry #1"), "{e}");
}

/// Runs `openssl` with `args` in `dir`; false when it is missing or fails.
fn openssl(dir: &Path, args: &[&str]) -> bool {
    std::process::Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// A CA (`<name>-ca.pem`) and a server certificate for 127.0.0.1 signed by
/// it (`<name>.pem`, `<name>.key`).
fn make_certs(dir: &Path, name: &str) -> bool {
    let ext = dir.join(format!("{name}.ext"));
    fs::write(
        &ext,
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    let (ca, ca_key) = (format!("{name}-ca.pem"), format!("{name}-ca.key"));
    let (cert, key, csr) = (
        format!("{name}.pem"),
        format!("{name}.key"),
        format!("{name}.csr"),
    );
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut a = vec!["req", "-x509"];
    a.extend(ec);
    a.extend([
        "-keyout",
        &ca_key,
        "-out",
        &ca,
        "-days",
        "2",
        "-subj",
        "/CN=strata test CA",
    ]);
    let mut b = vec!["req"];
    b.extend(ec);
    b.extend(["-keyout", &key, "-out", &csr, "-subj", "/CN=127.0.0.1"]);
    let ext_name = format!("{name}.ext");
    let c = [
        "x509",
        "-req",
        "-in",
        &csr,
        "-CA",
        &ca,
        "-CAkey",
        &ca_key,
        "-CAcreateserial",
        "-out",
        &cert,
        "-days",
        "2",
        "-extfile",
        &ext_name,
    ];
    openssl(dir, &a) && openssl(dir, &b) && openssl(dir, &c)
}

#[test]
fn lieutenant_api_over_https() {
    let certs = tempfile::tempdir().unwrap();
    if !make_certs(certs.path(), "server") || !make_certs(certs.path(), "other") {
        eprintln!("skipped: the openssl CLI is missing or cannot make certificates");
        return;
    }
    // `openssl s_server -WWW` serves files below its working directory.
    let info: serde_json::Value =
        serde_json::from_str(&read(&fixtures().join("basic/cluster.json"))).unwrap();
    let www = tempfile::tempdir().unwrap();
    fs::create_dir_all(www.path().join("api/clusters")).unwrap();
    fs::create_dir_all(www.path().join("api/tenants")).unwrap();
    fs::write(
        www.path().join("api/clusters/c-prod"),
        info["cluster"].to_string(),
    )
    .unwrap();
    fs::write(
        www.path().join("api/tenants/t-acme"),
        info["tenant"].to_string(),
    )
    .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = std::process::Command::new("openssl")
        .args(["s_server", "-quiet", "-WWW", "-accept"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("-cert")
        .arg(certs.path().join("server.pem"))
        .arg("-key")
        .arg(certs.path().join("server.key"))
        .current_dir(www.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let up = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let run = |ca: &str| {
        let dir = work("basic");
        let a = strata()
            .args([
                "catalog",
                "compile",
                "c-prod",
                "--local",
                "--quiet",
                "--api-url",
            ])
            .arg(format!("https://127.0.0.1:{port}/api"))
            .env("COMMODORE_API_TOKEN", "secret-token")
            .env("SSL_CERT_FILE", certs.path().join(ca))
            .env_remove("SSL_CERT_DIR")
            .arg("-d")
            .arg(dir.path())
            .assert();
        (dir, a)
    };
    let result = std::panic::catch_unwind(|| {
        assert!(up, "openssl s_server did not start");
        let (dir, a) = run("server-ca.pem");
        a.success();
        let params = read(&dir.path().join("inventory/classes/params/cluster.yml"));
        assert!(
            params.contains("    tenant_display_name: ACME Corp.\n"),
            "{params}"
        );
        // A server whose certificate is not signed by a trusted CA.
        let (_dir, a) = run("other-ca.pem");
        let e = stderr(&a.code(2));
        assert!(e.contains("TLS failure"), "{e}");
        assert!(
            e.contains(&format!("https://127.0.0.1:{port}/api/clusters/c-prod")),
            "{e}"
        );
        assert!(e.contains("SSL_CERT_FILE"), "{e}");
        assert!(!e.contains("secret-token"), "{e}");
    });
    let _ = server.kill();
    let _ = server.wait();
    if let Err(p) = result {
        std::panic::resume_unwind(p);
    }
}

/// Re-probe 10 (b-catalog-compile-killed-scratch-left-in-working-dir): a
/// killed `catalog compile` left `.strata-catalog-*` (a whole catalog) in
/// the working directory, and a killed `component compile` its
/// `strata-component-*` scratch inventory in `$TMPDIR`, for ever. The
/// next run removes the ones no process holds.
#[test]
fn killed_runs_scratch_directories_are_removed_by_the_next_run() {
    use crate::support::age;
    let dir = work("basic");
    let stale = dir.path().join(".strata-catalog-KiLLeD");
    fs::create_dir_all(stale.join("catalog/manifests")).unwrap();
    fs::write(stale.join("catalog/manifests/x.yaml"), "x: 1\n").unwrap();
    age(&stale);
    compile(dir.path(), "c-prod").success();
    assert!(!stale.exists(), "the stale catalog scratch is still there");
    let left: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".strata-catalog-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");

    let tmp = tempfile::tempdir().unwrap();
    let stale = tmp.path().join("strata-component-KiLLeD");
    fs::create_dir_all(stale.join("inventory/classes")).unwrap();
    age(&stale);
    let comp = tmp.path().join("c");
    copy_tree(
        &fixtures().join("components/namespaces"),
        &comp.join("namespaces"),
    );
    let out = strata()
        .current_dir(&comp)
        .args([
            "component",
            "compile",
            "namespaces",
            "--no-fetch",
            "-a",
            "team1",
            "-f",
            "namespaces/tests/team1.yml",
        ])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        !stale.exists(),
        "the stale component scratch is still there"
    );
}
