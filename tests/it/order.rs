//! `strata order`: the kapp-order conformance corpus (every case, edges as a
//! set and kapp's waves byte for byte) and CLI behaviour on own fixtures.

use crate::{conformance_dir, strata};
use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    conformance_dir().join("kapp-order")
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/order")
}

/// The `strata order` arguments that reproduce a corpus case's setup:
/// `order input.yaml [--order-config config.yaml] [--delete] [--op K/N=OP]...
/// [--no-default-config]`.
fn case_args(case: &Path) -> Vec<String> {
    let json = std::fs::read_to_string(case.join("case.json")).expect("case.json");
    let spec: serde_json::Value = serde_json::from_str(&json).expect("case.json is JSON");
    // kapp's change-graph tests order the resources as written, without
    // `kapp deploy`'s preparation (which drops cluster-scoped namespaces).
    let mut args = vec![
        "order".to_string(),
        "--keep-cluster-scoped-namespaces".to_string(),
    ];
    args.push(case.join("input.yaml").display().to_string());
    if case.join("config.yaml").is_file() {
        args.push("--order-config".into());
        args.push(case.join("config.yaml").display().to_string());
    }
    match spec["op"].as_str() {
        Some("upsert") => {}
        Some("delete") => args.push("--delete".into()),
        other => panic!("unexpected op {other:?}"),
    }
    if spec["default_config"] == serde_json::Value::Bool(false) {
        args.push("--no-default-config".into());
    }
    if let Some(ops) = spec.get("ops").and_then(|o| o.as_object()) {
        for (key, op) in ops {
            args.push(format!("--op={key}={}", op.as_str().expect("op")));
        }
    }
    args
}

fn sorted_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

/// Runs one case; `Err` describes the mismatch.
fn check_case(case: &Path) -> Result<(), String> {
    let args = case_args(case);
    if case.join("expected_error.txt").is_file() {
        let out = strata().args(&args).output().map_err(|e| e.to_string())?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.code() != Some(2) {
            return Err(format!("expected exit 2, got {:?}", out.status.code()));
        }
        let wanted = std::fs::read_to_string(case.join("expected_error.txt")).unwrap();
        for phrase in wanted.lines().filter(|l| !l.trim().is_empty()) {
            if !stderr.contains(phrase) {
                return Err(format!("error lacks `{phrase}`:\n{stderr}"));
            }
        }
        // Cycles are reported along kapp's own path, so its full message holds.
        let full =
            std::fs::read_to_string(case.join("expected_error_full.txt")).unwrap_or_default();
        if full.starts_with("Detected cycle") && !stderr.contains(full.trim()) {
            return Err(format!(
                "cycle reported differently:\n{stderr}\nkapp: {full}"
            ));
        }
        return Ok(());
    }
    let run = |extra: &[&str]| -> Result<String, String> {
        let out = strata()
            .args(&args)
            .args(extra)
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!(
                "exit {:?}: {}",
                out.status.code(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let expected = std::fs::read_to_string(case.join("expected.txt")).unwrap();
    let got = run(&["--format", "edges"])?;
    let (want, have) = (sorted_lines(&expected), sorted_lines(&got));
    if want != have {
        let missing: Vec<_> = want.iter().filter(|l| !have.contains(l)).take(5).collect();
        let extra: Vec<_> = have.iter().filter(|l| !want.contains(l)).take(5).collect();
        return Err(format!(
            "edges differ ({} expected, {} got); missing {missing:?}; unexpected {extra:?}",
            want.len(),
            have.len()
        ));
    }
    let waves = run(&["--format", "waves"])?;
    let expected_waves = std::fs::read_to_string(case.join("expected_linearized.txt")).unwrap();
    if waves.trim_end() != expected_waves.trim_end() {
        return Err(format!(
            "waves differ:\n--- expected\n{expected_waves}\n--- got\n{waves}"
        ));
    }
    Ok(())
}

#[test]
fn kapp_order_conformance() {
    let index = std::fs::read_to_string(corpus().join("cases.tsv")).expect("cases.tsv");
    let cases: Vec<&str> = index
        .lines()
        .skip(1)
        .filter_map(|l| l.split('\t').next())
        .filter(|c| !c.is_empty())
        .collect();
    assert!(cases.len() >= 39, "only {} cases in cases.tsv", cases.len());
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|c| {
            check_case(&corpus().join("cases").join(c))
                .err()
                .map(|e| format!("{c}: {e}"))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} kapp-order cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn change_group_names_match_kapp() {
    let tsv = std::fs::read_to_string(corpus().join("change-group-names.tsv")).unwrap();
    let mut checked = 0;
    for line in tsv.lines().skip(1) {
        let (name, valid) = line.rsplit_once('\t').expect("name<TAB>valid");
        let ok = strata::order::validate_group_name(name).is_ok();
        assert_eq!(ok, valid == "true", "group name `{name}`");
        checked += 1;
    }
    assert!(checked >= 14, "only {checked} names checked");
}

fn run_ok(args: &[&str]) -> String {
    let out = strata().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "strata {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn app_dir() -> String {
    fixtures().join("app").display().to_string()
}

/// `(op) kind/name (v) scope -> ...` edge lines shortened to `kind/name -> kind/name`.
fn short_edges(edges: &str) -> Vec<String> {
    edges
        .lines()
        .map(|l| {
            l.split(" -> ")
                .map(|side| side.split(' ').nth(1).unwrap().to_string())
                .collect::<Vec<_>>()
                .join(" -> ")
        })
        .collect()
}

#[test]
fn directory_input_with_defaults_and_in_line_config() {
    // Files are read in path order: app.yml, crds/widget-crd.yaml,
    // kapp-config.yml (configures only), smoke-test.json; README.txt is skipped.
    let waves = run_ok(&["order", &app_dir(), "--format", "waves"]);
    assert_eq!(
        waves,
        "(upsert) namespace/shop (v1) cluster\n\
         (upsert) customresourcedefinition/widgets.example.com (apiextensions.k8s.io/v1) cluster\n\
         ---\n\
         (upsert) secret/db (v1) namespace: shop\n\
         ---\n\
         (upsert) widget/gadget (example.com/v1) namespace: shop\n\
         (upsert) job/migrate (batch/v1) namespace: shop\n\
         ---\n\
         (upsert) deployment/web (apps/v1) namespace: shop\n\
         ---\n\
         (upsert) pod/smoke-test (v1) namespace: shop\n"
    );
    let edges = run_ok(&["order", "--catalog", &app_dir(), "--format", "edges"]);
    assert_eq!(
        short_edges(&edges),
        [
            "deployment/web -> job/migrate",
            "deployment/web -> namespace/shop",
            "deployment/web -> secret/db",
            "job/migrate -> namespace/shop",
            "job/migrate -> secret/db",
            "pod/smoke-test -> deployment/web",
            "pod/smoke-test -> namespace/shop",
            "pod/smoke-test -> secret/db",
            "secret/db -> namespace/shop",
            "widget/gadget -> customresourcedefinition/widgets.example.com",
            "widget/gadget -> namespace/shop",
            "widget/gadget -> secret/db",
        ]
    );
}

#[test]
fn text_format_shows_waves_and_the_edges_behind_them() {
    let text = run_ok(&["order", &app_dir()]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "wave 1 (2 changes)");
    assert_eq!(lines[1], "  (upsert) namespace/shop (v1) cluster");
    let wave2 = lines
        .iter()
        .position(|l| *l == "wave 2 (1 change)")
        .unwrap();
    assert_eq!(
        lines[wave2 + 1],
        "  (upsert) secret/db (v1) namespace: shop"
    );
    assert_eq!(
        lines[wave2 + 2],
        "    after (upsert) namespace/shop (v1) cluster"
    );
    assert_eq!(
        text.matches("\n    after ").count(),
        12,
        "one line per edge"
    );
    assert_eq!(text.lines().filter(|l| l.starts_with("wave ")).count(), 5);
}

#[test]
fn without_defaults_only_annotations_and_configs_count() {
    let edges = run_ok(&[
        "order",
        &app_dir(),
        "--no-default-config",
        "--format",
        "edges",
    ]);
    assert_eq!(
        edges,
        "(upsert) deployment/web (apps/v1) namespace: shop -> (upsert) job/migrate (batch/v1) namespace: shop\n\
         (upsert) pod/smoke-test (v1) namespace: shop -> (upsert) deployment/web (apps/v1) namespace: shop\n"
    );
    let extra = fixtures().join("extra-config.yml").display().to_string();
    let edges = run_ok(&[
        "order",
        &app_dir(),
        "--no-default-config",
        "--order-config",
        &extra,
        "--format",
        "edges",
    ]);
    assert_eq!(
        short_edges(&edges),
        [
            "deployment/web -> job/migrate",
            "job/migrate -> secret/db",
            "pod/smoke-test -> deployment/web",
        ]
    );
    // An order config must hold kapp Configs only.
    let not_config = fixtures().join("app/app.yml").display().to_string();
    strata()
        .args(["order", &app_dir(), "--order-config", &not_config])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("expected a kapp Config"));
}

#[test]
fn json_yaml_and_mermaid_outputs() {
    let json = run_ok(&["order", &app_dir(), "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let changes = v["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 7, "the kapp Config is not a change");
    let pod = changes.iter().find(|c| c["kind"] == "Pod").unwrap();
    assert_eq!(pod["op"], "upsert");
    assert_eq!(pod["namespace"], "shop");
    assert_eq!(pod["waitingFor"].as_array().unwrap().len(), 3);
    assert_eq!(v["waves"].as_array().unwrap().len(), 5);

    // The resources as written (comments kept, JSON stays JSON), in order.
    let yaml = run_ok(&["order", &app_dir(), "--format", "yaml"]);
    let docs = strata::yaml::load_values(&yaml).unwrap();
    let kinds: Vec<&str> = docs
        .iter()
        .map(|d| d.get_path(&["kind"]).and_then(|k| k.as_str()).unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "Namespace",
            "CustomResourceDefinition",
            "Secret",
            "Widget",
            "Job",
            "Deployment",
            "Pod"
        ]
    );
    assert!(
        yaml.starts_with("apiVersion: v1\nkind: Namespace\n"),
        "{yaml}"
    );
    assert!(yaml.contains("# An app as a user writes it"), "{yaml}");
    assert!(
        yaml.ends_with("---\n{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"smoke-test\", \"namespace\": \"shop\"}}\n"),
        "{yaml}"
    );

    let mermaid = run_ok(&["order", &app_dir(), "--format", "mermaid"]);
    assert!(mermaid.starts_with("flowchart LR\n"), "{mermaid}");
    assert_eq!(mermaid.matches("  subgraph wave").count(), 5);
    assert_eq!(mermaid.matches(" --> ").count(), 12, "{mermaid}");
    // The Namespace node is drawn once, and arrows point in apply order.
    let ns_node = mermaid
        .lines()
        .find(|l| l.contains("[\"(upsert) namespace/shop (v1) cluster\"]"))
        .unwrap()
        .trim()
        .split('[')
        .next()
        .unwrap()
        .to_string();
    assert!(mermaid.contains(&format!("  {ns_node} --> ")), "{mermaid}");
    assert!(!mermaid.contains(&format!(" --> {ns_node}\n")), "{mermaid}");
}

#[test]
fn delete_order_and_per_resource_ops() {
    // Deleting: custom resources go before their CRD, every other resource
    // after it (kapp's default delete rules); upsert rules do not apply.
    let edges = run_ok(&["order", &app_dir(), "--delete", "--format", "edges"]);
    let crd = "customresourcedefinition/widgets.example.com";
    let mut want = vec![format!("{crd} -> widget/gadget")];
    for other in [
        "deployment/web",
        "job/migrate",
        "namespace/shop",
        "pod/smoke-test",
        "secret/db",
    ] {
        want.push(format!("{other} -> {crd}"));
    }
    want.sort();
    assert_eq!(short_edges(&edges), want);

    // From stdin, with one resource left alone: a noop change has no rules
    // and is no rule's target, and the input has no CRD to wait for.
    let input = std::fs::read_to_string(fixtures().join("app/app.yml")).unwrap();
    let out = strata()
        .args([
            "order",
            "-",
            "--delete",
            "--op",
            "Namespace/shop=noop",
            "--format",
            "waves",
        ])
        .write_stdin(input.clone())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let waves = String::from_utf8(out.stdout).unwrap();
    assert!(!waves.contains("---"), "one wave: {waves}");
    assert!(
        waves.contains("(noop) namespace/shop (v1) cluster\n"),
        "{waves}"
    );
    assert!(
        waves.contains("(delete) deployment/web (apps/v1) namespace: shop\n"),
        "{waves}"
    );

    strata()
        .args(["order", "-", "--op", "job/nope=delete"])
        .write_stdin(input)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("no resource matches `job/nope`"));
    strata()
        .args(["order", "x.yml", "--op", "job/a=remove"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("unknown op `remove`"));
    strata().args(["order"]).assert().code(2);
}

fn bad(name: &str) -> String {
    fixtures().join("bad").join(name).display().to_string()
}

#[test]
fn errors_exit_2_naming_file_object_and_annotation() {
    use predicates::str::contains;
    strata()
        .args(["order", &bad("cycle.yml")])
        .assert()
        .code(2)
        .stderr(contains(
            "Detected cycle while ordering changes: [job/first (batch/v1) namespace: default] -> [job/second (batch/v1) namespace: default] -> [job/first (batch/v1) namespace: default]",
        ))
        .stderr(contains("hint: break the cycle"));
    strata()
        .args(["order", &bad("rule.yml")])
        .assert()
        .code(2)
        .stderr(contains(
            "Resource job/typo (batch/v1) namespace: default: annotation kapp.k14s.io/change-rule: ",
        ))
        .stderr(contains("order `afterwards`"))
        .stderr(contains("rule.yml:6"));
    strata()
        .args(["order", &bad("config.yml")])
        .assert()
        .code(2)
        .stderr(contains("changeGroupBindings[0].resourceMatchers[1]"))
        .stderr(contains("config.yml:7"));
    strata()
        .args(["order", &bad("not-yaml.yml")])
        .assert()
        .code(2)
        .stderr(contains("invalid yaml"))
        .stderr(contains("not-yaml.yml"));
    strata()
        .args(["order", &bad("missing.yml")])
        .assert()
        .code(2)
        .stderr(contains("cannot read"));
}

/// `strata::order::lint` over the corpus: every error case is reported as an
/// error finding with kapp's phrase, and no success case has an error.
#[test]
fn lint_agrees_with_the_corpus() {
    use strata::diagnostics::Severity;
    use strata::order::{config_from_documents, lint, parse_documents, Options};
    let cases_dir = corpus().join("cases");
    let mut names: Vec<_> = std::fs::read_dir(&cases_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    let mut checked = 0;
    for case in names {
        let read = |f: &str| {
            let path = case.join(f);
            parse_documents(&path, &std::fs::read_to_string(&path).unwrap()).unwrap()
        };
        let spec: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(case.join("case.json")).unwrap())
                .unwrap();
        let mut options = Options {
            default_config: spec["default_config"] == serde_json::Value::Bool(true),
            ..Options::default()
        };
        if case.join("config.yaml").is_file() {
            options.extra_config = config_from_documents(&read("config.yaml")).unwrap();
        }
        let findings = lint(&read("input.yaml"), &options);
        let errors: Vec<&str> = findings
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .map(|d| d.message.as_str())
            .collect();
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        match std::fs::read_to_string(case.join("expected_error.txt")) {
            Ok(phrase) => assert!(
                errors.iter().any(|e| e.contains(phrase.trim())),
                "{name}: no error with `{}` in {errors:?}",
                phrase.trim()
            ),
            Err(_) => assert!(errors.is_empty(), "{name}: unexpected {errors:?}"),
        }
        checked += 1;
    }
    assert!(checked >= 39, "only {checked} cases");
}

/// A chart rendered with `helm template --namespace argocd` writes its
/// namespaced objects without `metadata.namespace` (kapitan-reference's
/// argo-cd chart; compat-order-helm-serviceaccount-without-namespace).
const CHART_JSONNET: &str = "{
  'namespace': { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'argocd' } },
  'sa': { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'argocd-application-controller' } },
  'role': { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'argocd-application-controller' } },
  'rolebinding': { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'argocd-application-controller' } },
  'deployment': { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'argocd-server' } },
}
";

/// `kapp deploy` puts a namespaced resource written without a namespace
/// into its `-n` namespace before ordering; strata ordered it without one,
/// so kapp's default rule for service accounts had no `{namespace}` and
/// `compile --order`, `order` and `lint --catalog` failed on such charts.
#[test]
fn chart_objects_without_a_namespace_are_ordered_in_kapps_default_namespace() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("inventory/targets")).unwrap();
    std::fs::write(
        root.join("inventory/targets/argocd.yml"),
        "parameters:\n  kapitan:\n    vars: {target: argocd}\n    compile:\n      - {output_path: manifests, input_type: jsonnet, input_paths: [chart.jsonnet]}\n",
    )
    .unwrap();
    std::fs::write(root.join("chart.jsonnet"), CHART_JSONNET).unwrap();
    strata()
        .current_dir(root)
        .args(["compile", "--order", "argocd-sync-waves"])
        .assert()
        .success();
    let manifests = root.join("compiled/argocd/manifests");
    let wave = |file: &str| {
        let text = std::fs::read_to_string(manifests.join(file)).unwrap();
        let line = text
            .lines()
            .find(|l| l.contains("argocd.argoproj.io/sync-wave"))
            .unwrap_or_else(|| panic!("{file} has no wave:\n{text}"))
            .to_string();
        line.rsplit(' ')
            .next()
            .unwrap()
            .trim_matches('\'')
            .to_string()
    };
    // kapp's defaults: the Deployment waits for the ServiceAccount and
    // RBAC, the RoleBinding for the Role.
    assert_eq!(wave("sa.yaml"), "0");
    assert_eq!(wave("role.yaml"), "0");
    assert_eq!(wave("rolebinding.yaml"), "1");
    assert_eq!(wave("deployment.yaml"), "2");

    let catalog = root.join("compiled/argocd").display().to_string();
    let text = run_ok(&["order", "--catalog", &catalog]);
    assert!(
        text.contains(
            "(upsert) serviceaccount/argocd-application-controller (v1) namespace: default"
        ),
        "{text}"
    );
    // kapp's `-n` (or `$KAPP_NAMESPACE`): the objects go into the chart's
    // Namespace and wait for it.
    let edges = run_ok(&[
        "order",
        "--catalog",
        &catalog,
        "-n",
        "argocd",
        "--format",
        "edges",
    ]);
    assert!(edges.contains("(upsert) deployment/argocd-server (apps/v1) namespace: argocd -> (upsert) namespace/argocd (v1) cluster"), "{edges}");
    let out = strata()
        .env("KAPP_NAMESPACE", "argocd")
        .args(["order", "--catalog", &catalog, "--format", "edges"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), edges);
    let deleting = run_ok(&[
        "order",
        "--catalog",
        &catalog,
        "--namespace=argocd",
        "--delete",
        "--format",
        "edges",
    ]);
    assert!(deleting.contains("(delete) namespace/argocd (v1) cluster -> (delete) serviceaccount/argocd-application-controller (v1) namespace: argocd"), "{deleting}");
    // As written (kapp's change-graph tests), kapp's rule has no value.
    strata()
        .args(["order", "--catalog", &catalog, "--as-written"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "Placeholder {namespace} does not have a value",
        ));
    strata()
        .args(["order", "--catalog", &catalog, "-n", "Not_A_Namespace"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "`Not_A_Namespace` is not a namespace name",
        ));

    let lint = strata()
        .current_dir(root)
        .args(["lint", "--catalog", "compiled"])
        .output()
        .unwrap();
    let report =
        String::from_utf8_lossy(&lint.stdout).to_string() + &String::from_utf8_lossy(&lint.stderr);
    assert!(
        lint.status.success() && !report.contains("order-"),
        "{report}"
    );
}
