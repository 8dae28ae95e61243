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

/// The `strata order` arguments that reproduce a corpus case's setup.
fn case_args(case: &Path) -> Vec<String> {
    let json = std::fs::read_to_string(case.join("case.json")).expect("case.json");
    let spec: serde_json::Value = serde_json::from_str(&json).expect("case.json is JSON");
    let mut args = vec!["order".to_string(), "-f".into()];
    args.push(case.join("input.yaml").display().to_string());
    if case.join("config.yaml").is_file() {
        args.push("-f".into());
        args.push(case.join("config.yaml").display().to_string());
    }
    args.push("--op".into());
    args.push(spec["op"].as_str().expect("op").to_string());
    if spec["default_config"] == serde_json::Value::Bool(false) {
        args.push("--no-default-config".into());
    }
    if let Some(ops) = spec.get("ops").and_then(|o| o.as_object()) {
        for (key, op) in ops {
            args.push(format!("--op-for={key}={}", op.as_str().expect("op")));
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
    let got = run(&["-o", "edges"])?;
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
    let waves = run(&[])?;
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

#[test]
fn directory_input_with_defaults_and_user_config() {
    // Files are read in path order: app.yml, crds/widget-crd.yaml,
    // kapp-config.yml (configures only), smoke-test.json; README.txt is skipped.
    let waves = run_ok(&["order", "-f", &app_dir()]);
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
    let edges = run_ok(&["order", "-f", &app_dir(), "-o", "edges"]);
    let short: Vec<String> = edges
        .lines()
        .map(|l| {
            l.split(" -> ")
                .map(|side| side.split(' ').nth(1).unwrap().to_string())
                .collect::<Vec<_>>()
                .join(" -> ")
        })
        .collect();
    assert_eq!(
        short,
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
fn without_defaults_only_annotations_and_user_config_count() {
    let edges = run_ok(&[
        "order",
        "-f",
        &app_dir(),
        "--no-default-config",
        "-o",
        "edges",
    ]);
    assert_eq!(
        edges,
        "(upsert) deployment/web (apps/v1) namespace: shop -> (upsert) job/migrate (batch/v1) namespace: shop\n\
         (upsert) pod/smoke-test (v1) namespace: shop -> (upsert) deployment/web (apps/v1) namespace: shop\n"
    );
}

#[test]
fn json_and_yaml_outputs() {
    let json = run_ok(&["order", "-f", &app_dir(), "-o", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let changes = v["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 7, "the kapp Config is not a change");
    let pod = changes.iter().find(|c| c["kind"] == "Pod").unwrap();
    assert_eq!(pod["op"], "upsert");
    assert_eq!(pod["namespace"], "shop");
    assert_eq!(pod["waitingFor"].as_array().unwrap().len(), 3);
    assert_eq!(v["waves"].as_array().unwrap().len(), 5);

    let yaml = run_ok(&["order", "-f", &app_dir(), "-o", "yaml"]);
    let kinds: Vec<&str> = yaml
        .lines()
        .filter_map(|l| l.strip_prefix("kind: "))
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
    assert_eq!(yaml.matches("\n---\n").count(), 6);
}

#[test]
fn delete_order_and_per_resource_ops() {
    // Deleting: custom resources go before their CRD, every other resource
    // after it (kapp's default delete rules); upsert rules do not apply.
    let edges = run_ok(&["order", "-f", &app_dir(), "--op", "delete", "-o", "edges"]);
    let short: Vec<String> = edges
        .lines()
        .map(|l| {
            l.split(" -> ")
                .map(|side| side.split(' ').nth(1).unwrap().to_string())
                .collect::<Vec<_>>()
                .join(" -> ")
        })
        .collect();
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
    assert_eq!(short, want);

    // From stdin, with one resource left alone: a noop change has no rules
    // and is no rule's target, and the input has no CRD to wait for.
    let input = std::fs::read_to_string(fixtures().join("app/app.yml")).unwrap();
    let out = strata()
        .args([
            "order",
            "-f",
            "-",
            "--op",
            "delete",
            "--op-for",
            "Namespace/shop=noop",
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
        .args(["order", "-f", "-", "--op-for", "job/nope=delete"])
        .write_stdin(input)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("no resource matches `job/nope`"));
    strata()
        .args(["order", "-f", "x.yml", "--op-for", "job/a=remove"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("unknown op `remove`"));
}

fn bad(name: &str) -> String {
    fixtures().join("bad").join(name).display().to_string()
}

#[test]
fn errors_exit_2_naming_file_and_cause() {
    use predicates::str::contains;
    strata()
        .args(["order", "-f", &bad("cycle.yml")])
        .assert()
        .code(2)
        .stderr(contains(
            "Detected cycle while ordering changes: [job/first (batch/v1) cluster] -> [job/second (batch/v1) cluster] -> [job/first (batch/v1) cluster]",
        ))
        .stderr(contains("hint: break the cycle"));
    strata()
        .args(["order", "-f", &bad("rule.yml")])
        .assert()
        .code(2)
        .stderr(contains("Resource job/typo (batch/v1) cluster"))
        .stderr(contains("order `afterwards`"))
        .stderr(contains("rule.yml:6"));
    strata()
        .args(["order", "-f", &bad("config.yml")])
        .assert()
        .code(2)
        .stderr(contains("changeGroupBindings[0].resourceMatchers[1]"))
        .stderr(contains("config.yml:7"));
    strata()
        .args(["order", "-f", &bad("not-yaml.yml")])
        .assert()
        .code(2)
        .stderr(contains("invalid yaml"))
        .stderr(contains("not-yaml.yml"));
    strata()
        .args(["order", "-f", &bad("missing.yml")])
        .assert()
        .code(2)
        .stderr(contains("cannot read"));
}
