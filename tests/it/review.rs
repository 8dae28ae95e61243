//! `strata diff`, `strata lint` and `strata comment` through the binary.
//! The comment tests run against a local HTTP server that answers like the
//! GitHub REST API and records every request.

use crate::github_api::FakeGithub;
use crate::strata;
use crate::support::git;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/review")
}

fn catalogs() -> (PathBuf, PathBuf) {
    let c = fixtures().join("catalog");
    (c.join("old"), c.join("new"))
}

fn stdout_of(args: &[&str]) -> (i32, String, String) {
    stdout_with_env(args, &[])
}

/// Runs strata with `env` set and no GitHub Actions variables inherited.
fn stdout_with_env(args: &[&str], env: &[(&str, &Path)]) -> (i32, String, String) {
    let mut cmd = strata();
    cmd.args(args);
    for v in [
        "GITHUB_EVENT_PATH",
        "GITHUB_STEP_SUMMARY",
        "GITHUB_TOKEN",
        "GITHUB_REPOSITORY",
    ] {
        cmd.env_remove(v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn diff_args<'a>(old: &'a Path, new: &'a Path, extra: &[&'a str]) -> Vec<String> {
    let mut v = vec![
        "diff".to_string(),
        "--catalogs".into(),
        old.display().to_string(),
        new.display().to_string(),
    ];
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn run_diff(extra: &[&str]) -> (i32, String, String) {
    let (old, new) = catalogs();
    let args = diff_args(&old, &new, extra);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    stdout_of(&refs)
}

// ---------------------------------------------------------------- diff

#[test]
fn diff_text_lists_targets_files_and_objects() {
    let (code, out, err) = run_diff(&[]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains('\x1b'), "no colour when not a terminal");
    assert!(out.contains("target dev (changed)"), "{out}");
    assert!(out.contains("target fresh (added)"), "{out}");
    assert!(out.contains("target gone (removed)"), "{out}");
    assert!(
        !out.contains("target prod"),
        "unchanged target listed:\n{out}"
    );
    assert!(
        out.contains("renamed  old-name.yaml -> new-name.yaml"),
        "{out}"
    );
    assert!(out.contains("Deployment/web/web (changed, +2 -2)"), "{out}");
    assert!(
        out.contains("-  replicas: 1") && out.contains("+  replicas: 2"),
        "{out}"
    );
    // Only key order and quoting changed in the ConfigMap.
    assert!(!out.contains("ConfigMap/web/web-config"), "{out}");
    assert!(out.contains("README.md (changed, +1 -1)"), "{out}");
    assert!(
        out.contains("-hello\n") && out.contains("+hello world\n"),
        "{out}"
    );
}

#[test]
fn diff_exit_code_and_check() {
    assert_eq!(run_diff(&["--exit-code"]).0, 1);
    assert_eq!(run_diff(&["--check"]).0, 1);
    let (old, _) = catalogs();
    let args = diff_args(&old, &old, &["--exit-code"]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, _) = stdout_of(&refs);
    assert_eq!(code, 0);
    assert_eq!(out, "no differences\n");
}

#[test]
fn diff_json_summary() {
    let (code, out, _) = run_diff(&["--format", "json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let s = &v["summary"];
    assert_eq!(s["targets_changed"], 1);
    assert_eq!(s["targets_added"], 1);
    assert_eq!(s["targets_removed"], 1);
    assert_eq!(s["files_renamed"], 1);
    assert_eq!(s["files_added"], 1);
    assert_eq!(s["files_removed"], 1);
    assert_eq!(s["files_changed"], 3);
    let targets: Vec<&str> = v["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(targets, ["dev", "fresh", "gone"]);
    let dev_files: Vec<(&str, &str)> = v["targets"][0]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].as_str().unwrap(), f["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        dev_files,
        [
            ("README.md", "changed"),
            ("manifests/app.yaml", "changed"),
            ("manifests/secret.yaml", "changed"),
            ("new-name.yaml", "renamed"),
        ]
    );
    assert_eq!(v["targets"][0]["files"][3]["old_path"], "old-name.yaml");
}

#[test]
fn diff_noise_controls() {
    let (_, out, _) = run_diff(&["--ignore-path", r"^metadata\.annotations\.build-id$"]);
    assert!(!out.contains("build-id"), "{out}");
    assert!(out.contains("Deployment/web/web (changed, +1 -1)"), "{out}");
    let (_, out, _) = run_diff(&["--ignore-resource", "apps:Deployment:w*"]);
    assert!(!out.contains("Deployment/web/web"), "{out}");
    let (code, _, err) = run_diff(&["--ignore-resource", "Deployment"]);
    assert_eq!(code, 2);
    assert!(err.contains("group:kind:name"), "{err}");
}

#[test]
fn diff_errors() {
    let (code, _, err) = stdout_of(&["diff", "--catalogs", "/nonexistent/a", "/nonexistent/b"]);
    assert_eq!(code, 2);
    assert!(err.contains("/nonexistent/a"), "{err}");
    let repo = catalog_repo();
    let r = repo.path().to_str().unwrap();
    let (code, _, err) = stdout_of(&["diff", "--repo", r, "--base", "main~1", "--head", "main"]);
    assert_eq!(code, 2);
    assert!(err.contains("compiling revision `main~1` failed"), "{err}");
    assert!(
        err.contains("inventory"),
        "the compiler's own message: {err}"
    );
    let (code, _, err) = stdout_of(&["diff"]);
    assert_eq!(code, 2);
    assert!(err.contains("--catalogs"), "{err}");
    let (code, _, err) = run_diff(&["--redact-key", "("]);
    assert_eq!(code, 2);
    assert!(err.contains("--redact-key"), "{err}");
}

/// Every secret value in the fixture catalogs, plain and base64-encoded.
const SECRETS: &[&str] = &[
    "Xk9#mP2vL8qR4tZw",
    "WGs5I21QMnZMOHFSNHRadw==",
    "Qw7!nB3xK5sJ1yHe",
    "UXc3IW5CM3hLNXNKMXlIZQ==",
    "ghp_R3alL00kingT0kenV4lue1234567890ab",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "BEGIN PRIVATE KEY",
    "LS0tLS1CRUdJTi",
    "Old5ecretPw",
    "N3wS3cretPw",
    "tok_9f8e7d6c5b4a3210",
    "tok_0a1b2c3d4e5f6789",
];

fn assert_no_secret(what: &str, text: &str) {
    for s in SECRETS {
        assert!(!text.contains(s), "{what} leaks `{s}`:\n{text}");
    }
    assert!(text.contains("<redacted: changed>"), "{what}:\n{text}");
    assert!(text.contains("<redacted: unchanged>"), "{what}:\n{text}");
}

#[test]
fn secrets_never_leak_in_any_format() {
    let redact = ["--redact-key", "^connectionString$"];
    let mut json = String::new();
    for fmt in ["text", "markdown", "json"] {
        let mut args = vec!["--format", fmt];
        args.extend(redact);
        let (code, out, err) = run_diff(&args);
        assert_eq!(code, 0, "{err}");
        assert_no_secret(fmt, &out);
        assert!(out.contains("Secret/web/db-creds"), "{fmt}: {out}");
        assert!(out.contains("ConfigMap/web/app-settings"), "{fmt}: {out}");
        if fmt == "json" {
            json = out;
        }
    }
    // The comment, its job summary and its artifact, from that JSON.
    let dir = tempfile::tempdir().unwrap();
    let diff = dir.path().join("diff.json");
    std::fs::write(&diff, &json).unwrap();
    let artifact = dir.path().join("review.md");
    let out = strata()
        .args(["comment", "--dry-run", "--diff"])
        .arg(&diff)
        .arg("--output")
        .arg(&artifact)
        .env_remove("GITHUB_EVENT_PATH")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_no_secret("comment", &String::from_utf8(out.stdout).unwrap());
    let piped = strata()
        .args(["comment", "--dry-run", "--diff", "-", "--output"])
        .arg(dir.path().join("piped.md"))
        .env_remove("GITHUB_EVENT_PATH")
        .write_stdin(json.clone())
        .output()
        .unwrap();
    assert!(piped.status.success());
    assert_no_secret(
        "comment from stdin",
        &String::from_utf8(piped.stdout).unwrap(),
    );
    assert_no_secret("artifact", &std::fs::read_to_string(&artifact).unwrap());
    // The job summary and the annotations of the fork fallback.
    let gh = FakeGithub::start();
    let ws = Workspace::new(true);
    let diff = ws.write("diff.json", &json);
    let (code, out, err) = ws.comment(&gh, &diff, None);
    assert_eq!(code, 0, "{err}");
    for s in SECRETS {
        assert!(!out.contains(s), "annotations leak `{s}`");
    }
    assert_no_secret(
        "job summary",
        &std::fs::read_to_string(ws.path("summary.md")).unwrap(),
    );
    // Without the extra pattern the connection string is shown, but not the
    // password inside it.
    let (_, out, _) = run_diff(&[]);
    assert!(
        out.contains("postgres://app:<redacted: changed>@db:5432/app"),
        "{out}"
    );
    assert!(
        !out.contains("N3wS3cretPw") && !out.contains("Old5ecretPw"),
        "{out}"
    );
}

// ---------------------------------------------------------------- lint

fn lint(inv: &str, extra: &[&str]) -> (i32, String, String) {
    let path = fixtures().join("lint").join(inv);
    let mut args = vec![
        "lint".to_string(),
        "--inventory-path".into(),
        path.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    stdout_of(&refs)
}

fn findings(inv: &str, extra: &[&str]) -> Vec<serde_json::Value> {
    let mut args = vec!["--format", "json"];
    args.extend(extra);
    let (_, out, err) = lint(inv, &args);
    let v: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    v["findings"].as_array().unwrap().clone()
}

fn find<'a>(f: &'a [serde_json::Value], code: &str) -> Vec<&'a serde_json::Value> {
    f.iter().filter(|d| d["code"] == code).collect()
}

fn file_name(d: &serde_json::Value) -> String {
    Path::new(d["file"].as_str().unwrap_or(""))
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[test]
fn lint_broken_inventory_reports_every_target() {
    let f = findings("broken", &[]);
    let yaml = find(&f, "yaml-invalid");
    assert_eq!(yaml.len(), 1, "parse error reported once: {f:#?}");
    assert_eq!(file_name(yaml[0]), "bad.yml");
    assert!(yaml[0]["line"].as_u64().is_some());
    let missing = find(&f, "class-not-found");
    assert_eq!(missing.len(), 1);
    assert_eq!(file_name(missing[0]), "t2.yml");
    assert_eq!(missing[0]["line"], 2);
    let unres = find(&f, "unresolved-reference");
    assert_eq!(unres.len(), 1, "{f:#?}");
    assert_eq!(file_name(unres[0]), "refs.yml");
    assert_eq!(unres[0]["line"], 2);
    let cycle = find(&f, "reference-cycle");
    assert_eq!(cycle.len(), 1, "{f:#?}");
    assert_eq!(file_name(cycle[0]), "loop.yml");
    assert_eq!(cycle[0]["line"], 2);
    assert!(
        find(&f, "unused-class").is_empty(),
        "not guessed when a target fails"
    );
    let (code, _, _) = lint("broken", &[]);
    assert_eq!(code, 1);
}

#[test]
fn lint_commodore_rules_secrets_and_unused() {
    let f = findings("commodore", &[]);
    let unused = find(&f, "unused-class");
    assert_eq!(unused.len(), 1);
    assert_eq!(file_name(unused[0]), "unused.yml");
    assert_eq!(unused[0]["severity"], "warning");
    let secret = find(&f, "plaintext-secret");
    assert_eq!(secret.len(), 1, "{f:#?}");
    assert_eq!(secret[0]["param_path"], "parameters.db.password");
    assert_eq!(secret[0]["line"], 5);
    let nover = find(&f, "component-without-version");
    assert_eq!(nover.len(), 1, "deduplicated over c1 and c2: {f:#?}");
    assert!(nover[0]["message"].as_str().unwrap().contains("`nover`"));
    assert_eq!(file_name(nover[0]), "components.yml");
    assert_eq!(nover[0]["line"], 12);
    assert!(nover[0]["hints"].to_string().contains("in targets: c1, c2"));
    let unknown = find(&f, "unknown-component");
    assert_eq!(unknown.len(), 1);
    assert_eq!(unknown[0]["line"], 4);
    let dup = find(&f, "duplicate-instance");
    assert_eq!(dup.len(), 1);
    assert_eq!(dup[0]["line"], 5);
    // The secret itself is never printed, in any format.
    for fmt in ["text", "json", "github", "sarif"] {
        let (_, out, _) = lint("commodore", &["--format", fmt]);
        assert!(!out.contains("Xk9#mP2vL8qR4tZw"), "{fmt}: {out}");
    }
}

#[test]
fn lint_vaultkv_base64_in_catalog() {
    let cat = fixtures().join("lint/catalog");
    let f = findings("commodore", &["--catalog", cat.to_str().unwrap()]);
    let v = find(&f, "vaultkv-base64");
    assert_eq!(v.len(), 1, "only the encoded one: {f:#?}");
    assert_eq!(file_name(v[0]), "secret.yaml");
    assert_eq!(v[0]["line"], 6);
    assert!(v[0]["message"]
        .as_str()
        .unwrap()
        .contains("?{vaultkv:c1/db/password}"));
    let (code, _, err) = lint("commodore", &["--catalog", "/nonexistent/catalog"]);
    assert_eq!(code, 2);
    assert!(err.contains("/nonexistent/catalog"));
}

#[test]
fn lint_formats_and_fail_on() {
    let (code, out, _) = lint("commodore", &["--format", "github"]);
    assert_eq!(code, 1);
    assert!(
        out.lines()
            .all(|l| l.starts_with("::error ") || l.starts_with("::warning ")),
        "{out}"
    );
    assert!(out.contains("title=unused-class"), "{out}");
    assert!(out.contains("line=5"), "{out}");
    let (_, out, _) = lint("commodore", &["--format", "sarif"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["version"], "2.1.0");
    let results = v["runs"][0]["results"].as_array().unwrap();
    assert!(results
        .iter()
        .any(|r| r["ruleId"] == "unused-class" && r["level"] == "warning"));
    let rules = v["runs"][0]["tool"]["driver"]["rules"].as_array().unwrap();
    for r in results {
        assert!(rules.iter().any(|x| x["id"] == r["ruleId"]), "{r}");
    }
    let (_, out, _) = lint("commodore", &[]);
    assert!(
        out.contains("warning[unused-class]: class `unused` is not used by any target"),
        "{out}"
    );
    // Only warnings: exit 0 by default, 1 with --fail-on warning.
    let dir = tempfile::tempdir().unwrap();
    let inv = dir.path();
    std::fs::create_dir_all(inv.join("classes")).unwrap();
    std::fs::create_dir_all(inv.join("targets")).unwrap();
    std::fs::write(inv.join("classes/a.yml"), "parameters: {x: 1}\n").unwrap();
    std::fs::write(inv.join("classes/b.yml"), "parameters: {y: 1}\n").unwrap();
    std::fs::write(inv.join("targets/t.yml"), "classes: [a]\n").unwrap();
    let p = inv.to_str().unwrap();
    assert_eq!(stdout_of(&["lint", "--inventory-path", p]).0, 0);
    assert_eq!(
        stdout_of(&["lint", "--inventory-path", p, "--fail-on", "warning"]).0,
        1
    );
    std::fs::write(inv.join("targets/u.yml"), "classes: [b]\n").unwrap();
    let (code, out, _) = stdout_of(&["lint", "--inventory-path", p, "--fail-on", "warning"]);
    assert_eq!((code, out.as_str()), (0, "0 error(s), 0 warning(s)\n"));
}

// ---------------------------------------------------------------- comment

struct Workspace {
    dir: tempfile::TempDir,
}

impl Workspace {
    fn new(fork: bool) -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        let head_repo = if fork { "someone/infra" } else { "acme/infra" };
        let mut event: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(fixtures().join("github/pull_request_event.json")).unwrap(),
        )
        .unwrap();
        event["pull_request"]["head"]["repo"]["full_name"] = head_repo.into();
        std::fs::write(dir.path().join("event.json"), event.to_string()).unwrap();
        Workspace { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn comment(&self, gh: &FakeGithub, diff: &Path, lint: Option<&Path>) -> (i32, String, String) {
        self.comment_with(gh, diff, lint, &[])
    }

    fn comment_with(
        &self,
        gh: &FakeGithub,
        diff: &Path,
        lint: Option<&Path>,
        extra: &[&str],
    ) -> (i32, String, String) {
        let mut cmd = strata();
        cmd.current_dir(self.dir.path())
            .arg("comment")
            .args(extra)
            .arg("--diff")
            .arg(diff)
            .env("GITHUB_API_URL", &gh.url)
            .env("GITHUB_REPOSITORY", "acme/infra")
            .env("GITHUB_EVENT_PATH", self.path("event.json"))
            .env("GITHUB_TOKEN", "ghs_testtoken")
            .env("GITHUB_STEP_SUMMARY", self.path("summary.md"));
        if let Some(l) = lint {
            cmd.arg("--lint").arg(l);
        }
        let out = cmd.output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    }
}

fn diff_json(extra: &[&str]) -> String {
    let mut args = vec!["--format", "json"];
    args.extend(extra);
    run_diff(&args).1
}

const LINT_JSON: &str = r#"{"findings": [
  {"severity": "error", "code": "class-not-found", "message": "class not found: `a.b`", "file": "inventory/targets/t.yml", "line": 3},
  {"severity": "warning", "code": "unused-class", "message": "class `old` is not used by any target", "file": "inventory/classes/old.yml"}
], "summary": {"errors": 1, "warnings": 1}}"#;

#[test]
fn comment_is_created_once_then_updated_then_left_alone() {
    let gh = FakeGithub::start();
    gh.state
        .lock()
        .unwrap()
        .comments
        .push((55, "alice".into(), "LGTM".into()));
    let ws = Workspace::new(false);
    let diff = ws.write("diff.json", &diff_json(&[]));
    let lint = ws.write("lint.json", LINT_JSON);

    // First run: one create.
    let (code, _, err) = ws.comment(&gh, &diff, Some(&lint));
    assert_eq!(code, 0, "{err}");
    let reqs = gh.requests();
    let methods: Vec<_> = reqs
        .iter()
        .map(|r| (r.method.as_str(), r.path.as_str()))
        .collect();
    assert_eq!(
        methods,
        [
            (
                "GET",
                "/repos/acme/infra/issues/7/comments?per_page=100&page=1"
            ),
            ("POST", "/repos/acme/infra/issues/7/comments"),
        ]
    );
    assert!(reqs.iter().all(|r| r.auth == "Bearer ghs_testtoken"));
    let body: serde_json::Value = serde_json::from_str(&reqs[1].body).unwrap();
    let body = body["body"].as_str().unwrap();
    assert!(body.starts_with("<!-- strata-review -->\n"), "{body}");
    assert!(body.contains("| targets changed | files added | files changed | files removed | files renamed | lint errors | lint warnings |"));
    assert!(body.contains("| 3 | 1 | 3 | 1 | 1 | 1 | 1 |"), "{body}");
    assert!(
        body.contains("<details><summary><code>dev</code>"),
        "{body}"
    );
    assert!(
        body.contains("`Deployment/web/web` (changed, +2 −2)"),
        "{body}"
    );
    assert!(body.contains("class not found"), "{body}");
    assert!(
        body.contains("Compared base `1111111` with head `2222222`"),
        "{body}"
    );
    assert!(std::fs::read_to_string(ws.path("summary.md"))
        .unwrap()
        .contains("Deployment/web/web"));
    assert!(std::fs::read_to_string(ws.path("strata-review.md"))
        .unwrap()
        .contains("Deployment/web/web"));

    // Second run, nothing changed any more: one update, to the one-line text.
    let (old, _) = catalogs();
    let args = diff_args(&old, &old, &["--format", "json"]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let empty = ws.write("empty.json", &stdout_of(&refs).1);
    let (code, _, err) = ws.comment(&gh, &empty, None);
    assert_eq!(code, 0, "{err}");
    let reqs = gh.requests();
    assert_eq!(reqs.len(), 2, "{reqs:?}");
    assert_eq!(reqs[1].method, "PATCH");
    assert_eq!(reqs[1].path, "/repos/acme/infra/issues/comments/1001");
    let body: serde_json::Value = serde_json::from_str(&reqs[1].body).unwrap();
    assert_eq!(
        body["body"],
        "<!-- strata-review -->\nstrata review: no catalog changes and no lint findings.\n"
    );

    // Third run: the comment already says so; nothing is posted.
    let (code, _, err) = ws.comment(&gh, &empty, None);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("up to date"), "{err}");
    let reqs = gh.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].method, "GET");
    let s = gh.state.lock().unwrap();
    assert_eq!(s.comments.len(), 2, "alice's comment and ours");
    assert_eq!(s.comments[0].2, "LGTM");
}

#[test]
fn comment_is_cut_to_fit_and_full_diff_goes_to_summary() {
    let gh = FakeGithub::start();
    let ws = Workspace::new(false);
    let mut d: serde_json::Value = serde_json::from_str(&diff_json(&[])).unwrap();
    // One huge object diff in an extra target.
    let huge: String = (0..4000)
        .map(|i| format!("+  key{i}: value{i}\n"))
        .collect();
    d["targets"].as_array_mut().unwrap().push(serde_json::json!({
        "name": "zbig", "status": "changed",
        "files": [{"path": "big.yaml", "status": "changed", "objects": [
            {"name": "ConfigMap/big/huge", "status": "changed", "added_lines": 4000, "removed_lines": 0,
             "diff": format!("@@ -1,0 +1,4000 @@\n{huge}")}
        ]}]
    }));
    let diff = ws.write("diff.json", &d.to_string());
    let (code, _, err) = ws.comment(&gh, &diff, None);
    assert_eq!(code, 0, "{err}");
    let reqs = gh.requests();
    let body: serde_json::Value = serde_json::from_str(&reqs[1].body).unwrap();
    let body = body["body"].as_str().unwrap();
    assert!(body.chars().count() <= 65_536, "{}", body.len());
    assert!(body.contains("1 diff left out"), "{body}");
    assert!(
        body.contains("`zbig/big.yaml: ConfigMap/big/huge`"),
        "{body}"
    );
    assert!(!body.contains("key3999"));
    assert!(body.contains("+  replicas: 2"), "smaller diffs stay");
    let summary = std::fs::read_to_string(ws.path("summary.md")).unwrap();
    assert!(summary.contains("key3999: value3999"));
    let artifact = std::fs::read_to_string(ws.path("strata-review.md")).unwrap();
    assert!(artifact.contains("key3999: value3999"));
}

#[test]
fn fork_pull_request_falls_back_to_annotations() {
    let gh = FakeGithub::start();
    let ws = Workspace::new(true);
    let diff = ws.write("diff.json", &diff_json(&[]));
    let lint = ws.write("lint.json", LINT_JSON);
    let (code, out, err) = ws.comment(&gh, &diff, Some(&lint));
    assert_eq!(code, 0, "{err}");
    assert!(
        gh.requests().is_empty(),
        "a fork's token cannot write: no request"
    );
    assert!(
        out.starts_with("::notice title=strata review::This pull request comes from a fork"),
        "{out}"
    );
    assert!(
        out.contains(
            "::error file=inventory/targets/t.yml,line=3,title=class-not-found::class not found"
        ),
        "{out}"
    );
    let summary = std::fs::read_to_string(ws.path("summary.md")).unwrap();
    assert!(
        summary.starts_with("> [!NOTE]\n> This pull request comes from a fork"),
        "{summary}"
    );
    assert!(summary.contains("Deployment/web/web"));
}

#[test]
fn read_only_token_falls_back_too() {
    let gh = FakeGithub::start();
    gh.state.lock().unwrap().forbid_writes = true;
    let ws = Workspace::new(false);
    let diff = ws.write("diff.json", &diff_json(&[]));
    let (code, out, err) = ws.comment(&gh, &diff, None);
    assert_eq!(code, 0, "{err}");
    assert_eq!(gh.requests().len(), 2, "list, then the refused create");
    assert!(
        out.contains("Resource not accessible by integration"),
        "{out}"
    );
    assert!(std::fs::read_to_string(ws.path("summary.md"))
        .unwrap()
        .contains("[!NOTE]"));
}

#[test]
fn comment_needs_the_environment() {
    let ws = Workspace::new(false);
    let diff = ws.write("diff.json", "{\"summary\": {}, \"targets\": []}");
    let out = strata()
        .current_dir(ws.dir.path())
        .args(["comment", "--diff"])
        .arg(&diff)
        .env_remove("GITHUB_REPOSITORY")
        .env_remove("GITHUB_TOKEN")
        .env("GITHUB_EVENT_PATH", ws.path("event.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("GITHUB_REPOSITORY"));
    let bad = ws.write("bad.json", "{\"targets\": 3}");
    let out = strata()
        .current_dir(ws.dir.path())
        .args(["comment", "--dry-run", "--diff"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.json"));
}

// ---------------------------------------------------------------- conformance catalogs

/// Copies `src` to `dst`; with `rewrite`, every YAML/JSON file that parses is
/// written back with its map keys in reverse order and in strata's own block
/// style, which must not be a semantic difference.
fn copy_tree(src: &Path, dst: &Path, rewrite: bool, parsed: &mut usize) {
    std::fs::create_dir_all(dst).unwrap();
    let mut entries: Vec<_> = std::fs::read_dir(src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        let to = dst.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_tree(&p, &to, rewrite, parsed);
            continue;
        }
        let bytes = std::fs::read(&p).unwrap();
        let name = p.to_string_lossy().to_lowercase();
        let structured = [".yaml", ".yml", ".json"].iter().any(|e| name.ends_with(e));
        let docs = std::str::from_utf8(&bytes)
            .ok()
            .filter(|_| structured)
            .and_then(|t| strata::yaml::load_values(t).ok());
        match docs {
            Some(docs) if rewrite => {
                *parsed += 1;
                let docs: Vec<_> = docs.iter().map(reverse_keys).collect();
                std::fs::write(&to, strata::yaml::emit::to_yaml_stream(&docs)).unwrap();
            }
            _ => std::fs::write(&to, &bytes).unwrap(),
        }
    }
}

fn reverse_keys(v: &strata::value::Value) -> strata::value::Value {
    use strata::value::Value;
    match v {
        Value::Map(m) => Value::Map(
            m.iter()
                .rev()
                .map(|(k, v)| (k.clone(), reverse_keys(v)))
                .collect(),
        ),
        Value::List(l) => Value::List(l.iter().map(reverse_keys).collect()),
        other => other.clone(),
    }
}

/// Kapitan's real compiled trees from the compile corpus: reordering keys
/// and reformatting every YAML/JSON file is no difference; with
/// `--no-semantic` the same files all differ.
#[test]
fn conformance_catalogs_reformatted_are_not_different() {
    let cases = crate::conformance_dir().join("compile/cases");
    let mut names: Vec<_> = std::fs::read_dir(&cases)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    let (mut catalogs, mut parsed, mut text_changed) = (0, 0, 0);
    for case in names {
        let compiled = case.join("expected/compiled");
        if !compiled.is_dir() {
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let (old, new) = (dir.path().join("old"), dir.path().join("new"));
        let mut n = 0;
        copy_tree(&compiled, &old, false, &mut n);
        copy_tree(&compiled, &new, true, &mut n);
        parsed += n;
        catalogs += 1;
        let args = diff_args(&old, &new, &["--exit-code"]);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, out, err) = stdout_of(&refs);
        assert_eq!(
            (code, out.as_str()),
            (0, "no differences\n"),
            "{}: {err}",
            case.display()
        );
        if n > 0 {
            let args = diff_args(&old, &new, &["--no-semantic", "--format", "json"]);
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            let v: serde_json::Value = serde_json::from_str(&stdout_of(&refs).1).unwrap();
            let changed = v["summary"]["files_changed"].as_u64().unwrap() as usize;
            assert!(changed <= n, "{}: {changed} of {n}", case.display());
            text_changed += changed;
        }
    }
    eprintln!("diff conformance: {catalogs} Kapitan catalogs, {parsed} YAML/JSON files reformatted, 0 semantic differences, {text_changed} text differences");
    assert!(
        catalogs >= 40 && parsed >= 100,
        "{catalogs} catalogs, {parsed} files"
    );
    assert!(
        text_changed * 2 > parsed,
        "the rewrite changes the text of most files"
    );
}

/// Lint over every inventory of the conformance corpora: never an error
/// exit (2), never a panic; findings are rendered in every format.
#[test]
fn lint_runs_over_every_conformance_inventory() {
    let root = crate::conformance_dir();
    let mut dirs = Vec::new();
    for area in ["inventory", "compile/cases"] {
        let mut d: Vec<_> = std::fs::read_dir(root.join(area))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        d.sort();
        dirs.extend(
            d.into_iter()
                .map(|p| p.join("inventory"))
                .filter(|p| p.is_dir()),
        );
    }
    let mut counts = [0usize; 2];
    for inv in &dirs {
        let out = strata()
            .args(["lint", "--format", "sarif", "--inventory-path"])
            .arg(inv)
            .current_dir(inv.parent().unwrap())
            .output()
            .unwrap();
        let code = out.status.code().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(code == 0 || code == 1, "{}: {stderr}", inv.display());
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["version"], "2.1.0");
        counts[code as usize] += 1;
    }
    eprintln!(
        "lint conformance: {} inventories, {} clean, {} with findings",
        dirs.len(),
        counts[0],
        counts[1]
    );
    assert!(dirs.len() > 100);
}

// ---------------------------------------------------------------- git revisions

/// A repository with the fixture catalogs committed twice under `catalog/`,
/// then the working tree changed again (uncommitted) to prove it is not read.
fn catalog_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    let (old, new) = catalogs();
    git(repo, &["init", "-q", "-b", "main"]);
    let mut n = 0;
    copy_tree(&old, &repo.join("catalog"), false, &mut n);
    std::fs::write(repo.join("README.md"), "outside the catalog\n").unwrap();
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "v1"]);
    std::fs::remove_dir_all(repo.join("catalog")).unwrap();
    copy_tree(&new, &repo.join("catalog"), false, &mut n);
    std::fs::write(repo.join("README.md"), "changed outside the catalog\n").unwrap();
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "v2"]);
    std::fs::write(repo.join("catalog/prod/app.yaml"), "uncommitted: true\n").unwrap();
    dir
}

#[test]
fn diff_committed_catalogs_at_two_revisions() {
    let dir = catalog_repo();
    let repo = dir.path().to_str().unwrap();
    let (code, out, err) = stdout_of(&[
        "diff",
        "--repo",
        repo,
        "--base",
        "HEAD~1",
        "--head",
        "main",
        "--catalog-path",
        "catalog",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let from_git: serde_json::Value = serde_json::from_str(&out).unwrap();
    let (_, out, _) = run_diff(&["--format", "json"]);
    let from_dirs: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(from_git, from_dirs, "same diff as the two directories");
    // --head defaults to HEAD; the uncommitted change is not seen.
    let (_, out, _) = stdout_of(&[
        "diff",
        "--repo",
        repo,
        "--base",
        "HEAD~1",
        "--catalog-path",
        "catalog/",
    ]);
    assert!(
        !out.contains("uncommitted") && !out.contains("target prod"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("catalog/prod/app.yaml")).unwrap(),
        "uncommitted: true\n"
    );
    // The same revision twice: no differences.
    let (code, out, _) = stdout_of(&[
        "diff",
        "--repo",
        repo,
        "--base",
        "HEAD",
        "--head",
        "HEAD",
        "--catalog-path",
        "catalog",
        "--exit-code",
    ]);
    assert_eq!((code, out.as_str()), (0, "no differences\n"));
    // A revision that does not exist is an error naming it.
    let (code, _, err) = stdout_of(&[
        "diff",
        "--repo",
        repo,
        "--base",
        "nope",
        "--catalog-path",
        "catalog",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("`nope`"), "{err}");
}

const COPY_COMPILER: &str = "mkdir -p out && cp -r catalog out/compiled && true";

/// `--base/--head` compiling each revision's tree, here with a stand-in
/// compiler through --compile-command, which gets the flags after `--`.
#[test]
fn diff_compiles_both_revisions() {
    let dir = catalog_repo();
    let r = dir.path().to_str().unwrap();
    let (code, out, err) = stdout_of(&[
        "diff",
        "--repo",
        r,
        "--base",
        "HEAD~1",
        "--head",
        "HEAD",
        "--compile-command",
        COPY_COMPILER,
        "--compiled-dir",
        "out/compiled",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let (_, direct, _) = run_diff(&["--format", "json"]);
    let direct: serde_json::Value = serde_json::from_str(&direct).unwrap();
    assert_eq!(v, direct, "compiled at both revisions = the two catalogs");
    // The flags after `--` reach the compiler.
    let check_flags = "test \"$*\" = '--fast -t dev' && mkdir -p compiled && true";
    let (code, out, err) = stdout_of(&[
        "diff",
        "--repo",
        r,
        "--base",
        "HEAD",
        "--compile-command",
        check_flags,
        "--exit-code",
        "--",
        "--fast",
        "-t",
        "dev",
    ]);
    assert_eq!((code, out.as_str()), (0, "no differences\n"), "{err}");
    // A failing compile is an error naming the revision, with its output.
    let (code, _, err) = stdout_of(&[
        "diff",
        "--repo",
        r,
        "--base",
        "HEAD~1",
        "--compile-command",
        "echo boom >&2; exit 3",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("compiling revision `HEAD~1` failed") && err.contains("boom"),
        "{err}"
    );
    // Re-probe 7: the compiler's output may quote the pull request's
    // files; it is redacted as a diff is.
    let (code, _, err) = stdout_of(&[
        "diff",
        "--repo",
        r,
        "--base",
        "HEAD~1",
        "--compile-command",
        "printf 'DB_PASSWORD=hunter2SECRETVAL\\nAUTH=Authorization: Bearer SECRETVAL2abcdef0123\\nboom\\n' >&2; exit 3",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("boom") && !err.contains("SECRETVAL"), "{err}");
    let (code, _, err) = stdout_of(&[
        "diff",
        "--repo",
        r,
        "--base",
        "HEAD~1",
        "--compile-command",
        "true",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("wrote no compiled/ directory"), "{err}");
}

#[test]
fn diff_color_always() {
    let (_, out, _) = run_diff(&["--color", "always"]);
    assert!(out.contains("\x1b[32m      +  replicas: 2\x1b[0m"), "{out}");
    assert!(out.contains("\x1b[31m      -  replicas: 1\x1b[0m"), "{out}");
}

#[test]
fn a_server_error_on_listing_is_retried_once() {
    let gh = FakeGithub::start();
    gh.state.lock().unwrap().fail_next = 1;
    let ws = Workspace::new(false);
    let diff = ws.write("diff.json", &diff_json(&[]));
    let (code, _, err) = ws.comment(&gh, &diff, None);
    assert_eq!(code, 0, "{err}");
    let methods: Vec<String> = gh.requests().iter().map(|r| r.method.clone()).collect();
    assert_eq!(methods, ["GET", "GET", "POST"]);
    // Twice in a row is an error (exit 2), not a fallback.
    gh.state.lock().unwrap().fail_next = 2;
    let (code, _, err) = ws.comment(&gh, &diff, None);
    assert_eq!(code, 2);
    assert!(err.contains("answered 502"), "{err}");
}

#[test]
fn one_comment_per_marker_name() {
    let gh = FakeGithub::start();
    let ws = Workspace::new(false);
    let diff = ws.write("diff.json", &diff_json(&[]));
    for name in ["prod", "dev", "prod"] {
        let (code, _, err) = ws.comment_with(
            &gh,
            &diff,
            None,
            &["--marker", &format!("strata-review:{name}")],
        );
        assert_eq!(code, 0, "{err}");
    }
    let s = gh.state.lock().unwrap();
    let markers: Vec<&str> = s
        .comments
        .iter()
        .map(|c| c.2.lines().next().unwrap())
        .collect();
    assert_eq!(
        markers,
        ["<!-- strata-review:prod -->", "<!-- strata-review:dev -->"]
    );
    drop(s);
    let (code, _, err) = ws.comment_with(&gh, &diff, None, &["--marker", "x-->y"]);
    assert_eq!(code, 2);
    assert!(err.contains("invalid --marker"), "{err}");
}

/// In a pull_request workflow `strata diff` needs no revision flags: the
/// base (where the branch left its base) and head come from the event.
#[test]
fn diff_revisions_from_the_pull_request_event() {
    let dir = catalog_repo();
    let repo = dir.path();
    let sha = |rev: &str| {
        let out = std::process::Command::new("git")
            .current_dir(repo)
            .args(["rev-parse", rev])
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    // The base branch moved on after the pull request branched off:
    // main~1 is where it branched, `base` has one more commit.
    git(repo, &["branch", "base", "HEAD~1"]);
    git(repo, &["checkout", "-q", "base"]);
    std::fs::write(
        repo.join("catalog/gone/extra.yaml"),
        "kind: Namespace\nmetadata: {name: extra}\n",
    )
    .unwrap();
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "base moves on"]);
    let event = repo.join("event.json");
    std::fs::write(
        &event,
        serde_json::json!({"pull_request": {"number": 7,
            "base": {"sha": sha("base"), "repo": {"full_name": "acme/infra"}},
            "head": {"sha": sha("main"), "repo": {"full_name": "acme/infra"}}}})
        .to_string(),
    )
    .unwrap();
    let r = repo.to_str().unwrap();
    let (code, out, err) = stdout_with_env(
        &[
            "diff",
            "--repo",
            r,
            "--catalog-path",
            "catalog",
            "--format",
            "json",
        ],
        &[("GITHUB_EVENT_PATH", &event)],
    );
    assert_eq!(code, 0, "{err}");
    let from_event: serde_json::Value = serde_json::from_str(&out).unwrap();
    let (_, direct, _) = run_diff(&["--format", "json"]);
    let direct: serde_json::Value = serde_json::from_str(&direct).unwrap();
    assert_eq!(
        from_event, direct,
        "the base's own later commit is not part of the diff"
    );
    let (code, _, err) = stdout_of(&["diff", "--repo", r, "--catalog-path", "catalog"]);
    assert_eq!(code, 2);
    assert!(err.contains("nothing to compare"), "{err}");
}

/// `strata diff --base --head` with strata's own compiler: a small Kapitan
/// project committed twice, each revision compiled from git's objects.
#[test]
fn diff_compiles_two_revisions_with_strata_compile() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    let write = |p: &str, text: &str| {
        let p = repo.join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    let project = |replicas: u32, password: &str| {
        write(
            "inventory/classes/common.yml",
            "parameters:\n  kapitan:\n    vars:\n      target: ${_reclass_:name:short}\n    compile:\n      - output_path: manifests\n        input_type: jsonnet\n        input_paths: [components/app.jsonnet]\n        output_type: yaml\n",
        );
        write(
            "inventory/targets/dev.yml",
            &format!(
                "classes: [common]\nparameters:\n  replicas: {replicas}\n  password: {password}\n"
            ),
        );
        write(
            "inventory/targets/prod.yml",
            "classes: [common]\nparameters:\n  replicas: 3\n  password: Pr0dOnlyS3cret\n",
        );
        write(
            "components/app.jsonnet",
            "local kap = import 'lib/kapitan.libjsonnet';\nlocal p = kap.inventory().parameters;\n{\n  app: [\n    { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'app', namespace: std.extVar('target') }, spec: { replicas: p.replicas } },\n    { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'app', namespace: std.extVar('target') }, stringData: { password: p.password } },\n  ],\n}\n",
        );
    };
    git(repo, &["init", "-q", "-b", "main"]);
    project(1, "Zx81Hq2Lm9Ke4Wv7");
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "v1"]);
    project(2, "Pq3Rt6Yu8Io1As4D");
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "v2"]);
    let r = repo.to_str().unwrap();
    let (code, out, err) = stdout_of(&[
        "diff",
        "--repo",
        r,
        "--base",
        "HEAD~1",
        "--head",
        "HEAD",
        "--exit-code",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.starts_with("target dev (changed)\n  changed  manifests/app.yaml"),
        "{out}"
    );
    assert!(out.contains("Deployment/dev/app (changed, +1 -1)"), "{out}");
    assert!(
        out.contains("-  replicas: 1\n") && out.contains("+  replicas: 2\n"),
        "{out}"
    );
    assert!(out.contains("Secret/dev/app (changed, +1 -1)"), "{out}");
    assert!(out.contains("+  password: <redacted: changed>"), "{out}");
    for secret in ["Zx81Hq2Lm9Ke4Wv7", "Pq3Rt6Yu8Io1As4D", "Pr0dOnlyS3cret"] {
        assert!(!out.contains(secret), "{secret} leaked: {out}");
    }
    assert!(!out.contains("target prod"), "{out}");
    // Flags after `--` reach `strata compile`: only prod compiled, no change.
    let (code, out, err) = stdout_of(&[
        "diff",
        "--repo",
        r,
        "--base",
        "HEAD~1",
        "--exit-code",
        "--",
        "-t",
        "prod",
    ]);
    assert_eq!((code, out.as_str()), (0, "no differences\n"), "{err}");
}

/// A repository whose first commit holds `catalog/t/real.yaml`.
fn one_configmap_repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    std::fs::create_dir_all(repo.join("catalog/t")).unwrap();
    std::fs::write(
        repo.join("catalog/t/real.yaml"),
        "kind: ConfigMap\nmetadata: {name: real}\n",
    )
    .unwrap();
    git(repo, &["init", "-q", "-b", "main"]);
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "v1"]);
    dir
}

/// A pull request cannot make the diff read files outside the repository
/// through symlinks; links inside the tree still work.
#[cfg(unix)]
#[test]
fn symlinks_in_a_revision_never_leave_the_tree() {
    let dir = one_configmap_repository();
    let repo = dir.path();
    let outside = repo.join("outside-secret.txt");
    std::fs::write(&outside, "TOP-SECRET-OUTSIDE-VALUE\n").unwrap();
    std::os::unix::fs::symlink(&outside, repo.join("catalog/t/escape.yaml")).unwrap();
    std::os::unix::fs::symlink("../../outside-secret.txt", repo.join("catalog/t/climb.txt"))
        .unwrap();
    std::os::unix::fs::symlink("real.yaml", repo.join("catalog/t/inside.yaml")).unwrap();
    git(repo, &["add", "catalog"]);
    git(repo, &["commit", "-q", "-m", "links"]);
    let r = repo.to_str().unwrap();
    let (code, out, err) = stdout_of(&[
        "diff",
        "--repo",
        r,
        "--base",
        "HEAD~1",
        "--catalog-path",
        "catalog",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("TOP-SECRET-OUTSIDE-VALUE"), "{out}");
    assert!(
        out.contains(&format!("+(symlink to {})", outside.display())),
        "{out}"
    );
    assert!(
        out.contains("+(symlink to ../../outside-secret.txt)"),
        "{out}"
    );
    assert!(
        out.contains("added    inside.yaml\n    ConfigMap/real (added, +3 -0)"),
        "{out}"
    );
}

/// Every file of the working tree and of `.git` (the index included), with
/// its content, plus what `git status` says (without letting it refresh
/// the index).
fn repo_snapshot(repo: &Path) -> (Vec<(PathBuf, Vec<u8>)>, String) {
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                walk(&p, out);
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    let mut files = Vec::new();
    walk(repo, &mut files);
    files.sort();
    let status = std::process::Command::new("git")
        .current_dir(repo)
        .args(["--no-optional-locks", "status", "--porcelain", "-uall"])
        .output()
        .unwrap();
    assert!(status.status.success());
    (files, String::from_utf8(status.stdout).unwrap())
}

/// Reading two revisions (for a committed catalog, and for compiling each
/// tree) neither reads nor changes uncommitted edits, a dirty index or
/// untracked files, and leaves `.git` byte for byte as it was.
#[test]
fn reading_revisions_leaves_the_working_tree_and_index_alone() {
    let dir = catalog_repo();
    let repo = dir.path();
    // Staged, then edited again: index and working tree differ from HEAD and
    // from each other.
    std::fs::write(
        repo.join("catalog/dev/app.yaml"),
        "kind: ConfigMap\nmetadata: {name: staged}\n",
    )
    .unwrap();
    git(repo, &["add", "catalog/dev/app.yaml"]);
    std::fs::write(
        repo.join("catalog/dev/app.yaml"),
        "kind: ConfigMap\nmetadata: {name: edited-after-staging}\n",
    )
    .unwrap();
    std::fs::write(
        repo.join("catalog/dev/untracked.yaml"),
        "kind: ConfigMap\nmetadata: {name: untracked}\n",
    )
    .unwrap();
    let before = repo_snapshot(repo);
    assert!(
        // Staged (index column) and edited again (working-tree column).
        before.1.lines().any(|l| l.len() > 3
            && !l.starts_with([' ', '?'])
            && l[1..].starts_with('M')
            && l.ends_with(" catalog/dev/app.yaml"))
            && before.1.contains("?? catalog/dev/untracked.yaml"),
        "{}",
        before.1
    );
    let r = repo.to_str().unwrap();
    let (code, committed, err) = stdout_of(&[
        "diff",
        "--repo",
        r,
        "--base",
        "HEAD~1",
        "--catalog-path",
        "catalog",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, compiled, err) = stdout_of(&[
        "diff",
        "--repo",
        r,
        "--base",
        "HEAD~1",
        "--compile-command",
        COPY_COMPILER,
        "--compiled-dir",
        "out/compiled",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    for out in [&committed, &compiled] {
        for word in ["staged", "edited-after-staging", "untracked", "uncommitted"] {
            assert!(!out.contains(word), "{word} seen: {out}");
        }
    }
    let (_, direct, _) = run_diff(&["--format", "json"]);
    let direct: serde_json::Value = serde_json::from_str(&direct).unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&committed).unwrap(),
        direct
    );
    let after = repo_snapshot(repo);
    assert_eq!(before.1, after.1, "git status");
    assert_eq!(
        before.0.iter().map(|f| &f.0).collect::<Vec<_>>(),
        after.0.iter().map(|f| &f.0).collect::<Vec<_>>(),
        "the same files in the working tree and .git"
    );
    assert!(before.0 == after.0, "file contents changed");
}

/// Files are written with their executable bit, so a compile script
/// committed in the repository runs from the extracted tree.
#[cfg(unix)]
#[test]
fn executable_files_keep_their_bit() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    std::fs::create_dir_all(repo.join("catalog/t")).unwrap();
    std::fs::write(
        repo.join("catalog/t/cm.yaml"),
        "kind: ConfigMap\nmetadata: {name: cm}\n",
    )
    .unwrap();
    let script = repo.join("gen.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nmkdir -p compiled && cp -r catalog/t compiled/t\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    git(repo, &["init", "-q", "-b", "main"]);
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "v1"]);
    let (code, out, err) = stdout_of(&[
        "diff",
        "--repo",
        repo.to_str().unwrap(),
        "--base",
        "HEAD",
        "--compile-command",
        "./gen.sh",
        "--exit-code",
    ]);
    assert_eq!((code, out.as_str()), (0, "no differences\n"), "{err}");
}

/// A link that looks inside the tree when read as text but climbs out
/// through another link (`t/l -> ..`, so `t/l/t/l/..` is not `t/l/t`)
/// is not recreated: it would show a file of the machine in the diff.
#[cfg(unix)]
#[test]
fn symlinks_chained_through_other_links_never_leave_the_tree() {
    let dir = one_configmap_repository();
    let repo = dir.path();
    std::os::unix::fs::symlink("..", repo.join("catalog/t/l")).unwrap();
    let climb = format!("{}{}etc/passwd", "l/t/".repeat(10), "../".repeat(21));
    std::os::unix::fs::symlink(&climb, repo.join("catalog/t/passwd.txt")).unwrap();
    git(repo, &["add", "catalog"]);
    git(repo, &["commit", "-q", "-m", "links"]);
    let (code, out, err) = stdout_of(&[
        "diff",
        "--repo",
        repo.to_str().unwrap(),
        "--base",
        "HEAD~1",
        "--catalog-path",
        "catalog",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("root:"), "{out}");
    assert!(out.contains(&format!("+(symlink to {climb})")), "{out}");
}

// ---------------------------------------------------------------- order

#[test]
fn comment_draws_the_new_apply_order_when_it_changed() {
    let dir = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    let job = |name: &str, annotation: &str| {
        format!("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  namespace: web\n{annotation}")
    };
    for side in ["old", "new"] {
        write(
            &format!("{side}/web/ns.yaml"),
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web\n",
        );
        // Another target whose order stays as it is.
        write(&format!("{side}/db/job.yaml"), &job("backup", ""));
    }
    write(
        "old/web/jobs.yaml",
        &format!("{}---\n{}", job("migrate", ""), job("app", "")),
    );
    write(
        "new/web/jobs.yaml",
        &format!(
            "{}---\n{}",
            job(
                "migrate",
                "  annotations:\n    kapp.k14s.io/change-group: migrations\n"
            ),
            job(
                "app",
                "  annotations:\n    kapp.k14s.io/change-rule: upsert after upserting migrations\n"
            )
        ),
    );
    let (old, new) = (dir.path().join("old"), dir.path().join("new"));
    let args = diff_args(&old, &new, &["--format", "json"]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, json, err) = stdout_of(&refs);
    assert_eq!(code, 0, "{err}");
    let diff = dir.path().join("diff.json");
    std::fs::write(&diff, json).unwrap();
    let run = |order: bool| {
        let mut cmd = strata();
        cmd.args(["comment", "--dry-run", "--diff"])
            .arg(&diff)
            .arg("--output")
            .arg(dir.path().join("review.md"))
            .env_remove("GITHUB_EVENT_PATH");
        if order {
            cmd.arg("--order-catalogs").arg(&old).arg(&new);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let body = run(true);
    assert!(
        body.contains("Apply order changed in <code>web</code> (1 change moved)"),
        "{body}"
    );
    assert!(
        !body.contains("Apply order changed in <code>db</code>"),
        "{body}"
    );
    assert!(
        body.contains("- `(upsert) job/app (batch/v1) namespace: web`"),
        "{body}"
    );
    let graph = body.split("```mermaid\n").nth(1).expect("a mermaid block");
    assert!(graph.starts_with("flowchart LR\n"), "{body}");
    assert!(graph.contains("subgraph wave3[\"wave 3\"]"), "{body}");
    // The full report (artifact) has it too; without the flag nothing is drawn.
    let artifact = std::fs::read_to_string(dir.path().join("review.md")).unwrap();
    assert!(artifact.contains("```mermaid"), "{artifact}");
    assert!(!run(false).contains("mermaid"));
}

/// Probe 31 (review-side-without-inventory-fails): the pull request that
/// adds the inventory, and one that deletes it, stopped the review with
/// "inventory directory ./inventory not found" (exit 2): the side without
/// one has no targets, and the review lists them added or removed. With no
/// inventory on either side the path is wrong, and that stays an error.
#[test]
fn a_side_without_an_inventory_has_no_targets() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path();
    let put = |rel: &str, text: &str| {
        let p = repo.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    let review = |base: &str| {
        let out = strata()
            .current_dir(repo)
            .args(["review", "--base", base])
            .env_remove("GITHUB_EVENT_PATH")
            .env_remove("GITHUB_EVENT_NAME")
            .env_remove("GITHUB_STEP_SUMMARY")
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    put("README", "x\n");
    git(repo, &["init", "-q"]);
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "no inventory"]);
    git(repo, &["branch", "empty"]);
    put("README", "y\n");
    git(repo, &["commit", "-q", "-am", "still none"]);
    let (code, text) = review("empty");
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("not found"), "{text}");
    put(
        "inventory/targets/t.yml",
        "parameters:\n  kapitan:\n    vars: {target: t}\n    compile:\n      - {output_path: o, input_type: jsonnet, input_paths: [m.jsonnet], output_type: yaml}\n",
    );
    put("m.jsonnet", "{a: {b: 1}}\n");
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "adds the inventory"]);
    git(repo, &["branch", "with"]);
    let (code, text) = review("empty");
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("target added"), "{text}");
    git(repo, &["rm", "-rq", "inventory", "m.jsonnet"]);
    git(repo, &["commit", "-q", "-m", "deletes it"]);
    let (code, text) = review("with");
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("target removed"), "{text}");
}

/// crd38 (compat38's helm chart output): a CRD's schema names fields
/// (`passCredentials`, `clientKey`, `password`) and holds no values, so a
/// chart bump shows the schema change instead of `<redacted>`; a schema's
/// `default` under a secret-named field and a Secret's data stay hidden.
#[test]
fn crd_schemas_are_shown_in_diffs() {
    let c = fixtures().join("crd");
    let (old, new) = (c.join("old"), c.join("new"));
    let modes: [&[&str]; 2] = [&[], &["--no-semantic"]];
    for mode in modes {
        for format in ["text", "markdown", "json"] {
            let mut extra = vec!["--format", format, "--color", "never"];
            extra.extend(mode);
            let args = diff_args(&old, &new, &extra);
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            let (code, out, err) = stdout_of(&refs);
            assert_eq!(code, 0, "{mode:?} {format}: {err}");
            // The text mode shows the file (its schema's `kind` property
            // is a map, not a Secret's kind); its line rule still hides
            // the blocks under secret-named fields.
            let shown: &[&str] = if mode.is_empty() {
                &[
                    "Pass credentials to every domain (also redirects)",
                    "maxLength",
                    "REST resource (v2)",
                ]
            } else {
                &["REST resource (v2)"]
            };
            for shown in shown {
                assert!(
                    out.contains(shown),
                    "{mode:?} {format}: {shown} hidden\n{out}"
                );
            }
            for secret in [
                "Qz8oldDefaultPw",
                "Qz8newDefaultPw",
                "Qz8oldSecretData",
                "Qz8newSecretData",
            ] {
                assert!(
                    !out.contains(secret),
                    "{mode:?} {format}: {secret} shown\n{out}"
                );
            }
        }
    }
}

/// Probe 44 (shallow): in a shallow clone the merge base of the base and
/// the head is cut off, and the review compared with the base branch's tip
/// without a word: a change made on the base branch after the fork showed
/// as reverted by the pull request. The review still runs (the fallback is
/// documented), and says why on stderr, with what to do.
#[test]
fn a_review_in_a_shallow_clone_says_its_base_is_not_the_fork_point() {
    use crate::support::put;
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    let target = |t: &str, input: &str| {
        format!("parameters:\n  kapitan:\n    vars: {{target: {t}}}\n    compile:\n      - {{output_path: o, input_type: jsonnet, input_paths: [{input}], output_type: yaml}}\n")
    };
    put(&src, "inventory/targets/t.yml", &target("t", "m.jsonnet"));
    put(&src, "inventory/targets/u.yml", &target("u", "n.jsonnet"));
    put(&src, "m.jsonnet", "{a: {x: 1}}\n");
    put(&src, "n.jsonnet", "{b: {y: 1}}\n");
    git(&src, &["init", "-q"]);
    git(&src, &["add", "-A"]);
    git(&src, &["commit", "-qm", "fork point"]);
    git(&src, &["checkout", "-qb", "pr"]);
    put(&src, "m.jsonnet", "{a: {x: 2}}\n");
    git(&src, &["commit", "-qam", "the pull request"]);
    git(&src, &["checkout", "-q", "main"]);
    put(&src, "n.jsonnet", "{b: {y: 5}}\n");
    git(&src, &["commit", "-qam", "main goes on"]);

    let review = |repo: &Path| {
        let out = strata()
            .args(["review", "--base", "main"])
            .current_dir(repo)
            .env_remove("GITHUB_EVENT_NAME")
            .env_remove("GITHUB_ACTIONS")
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let warning = "warning: the base `main` and the head have no common ancestor in this clone, which is shallow: the review compares with `main` itself, so changes made on it since the head forked off show as reverted by the head; check out with `fetch-depth: 0` (actions/checkout) or `git fetch --unshallow`";

    // A full clone: the pull request's change only, no warning.
    git(&src, &["checkout", "-q", "pr"]);
    let (code, out, err) = review(&src);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("`x`: `1` → `2`"), "{out}");
    assert!(!out.contains("`y`"), "{out}");
    assert!(!err.contains("warning: the base"), "{err}");

    // A clone one commit deep on each branch.
    let url = format!("file://{}", src.display());
    let shallow = dir.path().join("shallow");
    git(
        dir.path(),
        &[
            "clone", "-q", "--depth", "1", "--branch", "pr", &url, "shallow",
        ],
    );
    git(
        &shallow,
        &["fetch", "-q", "--depth", "1", "origin", "main:main"],
    );
    let (code, out, err) = review(&shallow);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("`y`: `5` → `1`"), "{out}");
    assert_eq!(
        err.lines()
            .filter(|l| l.starts_with("warning:"))
            .collect::<Vec<_>>(),
        [warning],
        "{err}"
    );
}
