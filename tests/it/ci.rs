//! `strata compile --shard`, `strata ci` and the action's script
//! (`action/run.sh`, `action/install.sh`) with fake `GITHUB_*` variables,
//! recorded event payloads, the local GitHub API server and a local bare
//! catalog repository.

use crate::github_api::FakeGithub;
use crate::strata;
use crate::support::git;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A small Kapitan project: one jsonnet component, targets with a replica
/// count each.
fn project(dir: &Path, targets: &[(&str, u32)]) {
    write(
        dir,
        "inventory/classes/common.yml",
        "parameters:\n  kapitan:\n    vars:\n      target: ${_reclass_:name:short}\n    compile:\n      - output_path: manifests\n        input_type: jsonnet\n        input_paths: [components/app.jsonnet]\n        output_type: yaml\n",
    );
    for (name, replicas) in targets {
        write(
            dir,
            &format!("inventory/targets/{name}.yml"),
            &format!("classes: [common]\nparameters:\n  replicas: {replicas}\n"),
        );
    }
    write(
        dir,
        "components/app.jsonnet",
        "local kap = import 'lib/kapitan.libjsonnet';\nlocal p = kap.inventory().parameters;\n{\n  app: [\n    { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'app', namespace: std.extVar('target') }, spec: { replicas: p.replicas } },\n  ],\n}\n",
    );
}

/// Every file under `dir`, relative, with its content.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// `strata` in `dir` with no GitHub Actions variables from the outside.
fn strata_in(dir: &Path) -> assert_cmd::Command {
    let mut cmd = strata();
    cmd.current_dir(dir);
    for (k, _) in std::env::vars() {
        if k.starts_with("GITHUB_") || k.starts_with("RUNNER_") || k.starts_with("INPUT_") {
            cmd.env_remove(k);
        }
    }
    cmd.env_remove("CI");
    cmd
}

fn output(cmd: &mut assert_cmd::Command) -> (i32, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

const FIVE: &[(&str, u32)] = &[("a", 1), ("b", 2), ("c", 3), ("d", 4), ("e", 5)];

#[test]
fn shards_are_disjoint_and_together_the_full_compile() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    project(d, FIVE);
    let (code, _, err) = output(strata_in(d).args(["compile", "--output-path", "full"]));
    assert_eq!(code, 0, "{err}");
    let full = files(&d.join("full/compiled"));
    assert_eq!(full.len(), 5, "{full:?}");
    let mut union = BTreeMap::new();
    for i in 1..=3 {
        let out = format!("s{i}");
        let (code, _, err) = output(strata_in(d).args([
            "compile",
            "--shard",
            &format!("{i}/3"),
            "--output-path",
            &out,
        ]));
        assert_eq!(code, 0, "{err}");
        let shard = files(&d.join(&out).join("compiled"));
        assert!(!shard.is_empty() && shard.len() < 5, "{i}: {shard:?}");
        for (k, v) in shard {
            assert!(union.insert(k.clone(), v).is_none(), "{k} in two shards");
        }
    }
    assert_eq!(union, full);
    // Sorted names, every third: a and d in the first shard.
    let s1: Vec<String> = files(&d.join("s1/compiled")).into_keys().collect();
    assert_eq!(s1, vec!["a/manifests/app.yaml", "d/manifests/app.yaml"]);

    // Sharding applies after -t; an empty shard is not an error.
    let (code, _, err) = output(strata_in(d).args([
        "compile",
        "-t",
        "b",
        "e",
        "--shard",
        "2/2",
        "--output-path",
        "t",
    ]));
    assert_eq!(code, 0, "{err}");
    let t: Vec<String> = files(&d.join("t/compiled")).into_keys().collect();
    assert_eq!(t, vec!["e/manifests/app.yaml"]);
    let (code, _, err) =
        output(strata_in(d).args(["compile", "--shard", "9/9", "--output-path", "empty"]));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("shard 9/9 has no targets"), "{err}");
    assert!(files(&d.join("empty/compiled")).is_empty());
    // --check works per shard.
    let (code, _, err) = output(strata_in(d).args([
        "compile",
        "--shard",
        "2/3",
        "--check",
        "--output-path",
        "s2",
    ]));
    assert_eq!(code, 0, "{err}");

    // The collected shards are the full catalog again.
    let (code, _, err) = output(strata_in(d).args([
        "ci",
        "--collect",
        "s1",
        "s2",
        "s3/compiled",
        "--output-path",
        "merged",
    ]));
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("collected 5 target(s) from 3 shard(s)"),
        "{err}"
    );
    assert_eq!(files(&d.join("merged/compiled")), full);

    // A target in two shards is refused, naming both.
    let (code, _, err) =
        output(strata_in(d).args(["ci", "--collect", "s1", "full", "--output-path", "bad"]));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("compiled/a/manifests/app.yaml is in two shards: s1 and full"),
        "{err}"
    );
    assert!(
        err.contains("hint: a target was compiled by two shards"),
        "{err}"
    );
}

#[test]
fn shard_spec_errors() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), FIVE);
    for (spec, why) in [
        ("0/2", "I must be between 1 and 2"),
        ("3/2", "I must be between 1 and 2"),
        ("x", "expected I/N"),
        ("1/0", "N must be at least 1"),
    ] {
        let (code, _, err) = output(strata_in(dir.path()).args(["compile", "--shard", spec]));
        assert_eq!(code, 2, "{spec}: {err}");
        assert!(
            err.contains(&format!("invalid shard `{spec}`: {why}")),
            "{spec}: {err}"
        );
        assert!(!dir.path().join("compiled").exists());
    }
}

// ---------------------------------------------------------------- the action

/// A repository with a base commit and a head commit of the project, the
/// event payload, and files for the outputs and the summary.
struct Job {
    dir: tempfile::TempDir,
    base: String,
    head: String,
}

impl Job {
    fn new() -> Job {
        Job::with_files(&[], &[])
    }

    /// [`Job::new`] with extra files in the base and in the head commit.
    fn with_files(base_files: &[(&str, &str)], head_files: &[(&str, &str)]) -> Job {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        project(&repo, &[("dev", 1), ("prod", 3)]);
        for (rel, text) in base_files {
            write(&repo, rel, text);
        }
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", "base"]);
        let base = git(&repo, &["rev-parse", "HEAD"]);
        project(&repo, &[("dev", 2), ("prod", 3)]);
        for (rel, text) in head_files {
            write(&repo, rel, text);
        }
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", "dev: two replicas"]);
        let head = git(&repo, &["rev-parse", "HEAD"]);
        Job { dir, base, head }
    }

    fn repo(&self) -> PathBuf {
        self.dir.path().join("repo")
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Runs `action/run.sh` for `event` with the action's inputs.
    fn run(
        &self,
        event: &str,
        git_ref: &str,
        gh: Option<&FakeGithub>,
        inputs: &[(&str, &str)],
    ) -> (i32, String, String) {
        let payload =
            std::fs::read_to_string(root().join(format!("tests/fixtures/ci/events/{event}.json")))
                .unwrap()
                .replace("BASE_SHA", &self.base)
                .replace("HEAD_SHA", &self.head);
        let event_path = self.path(&format!("{event}.json"));
        std::fs::write(&event_path, payload).unwrap();
        let mut cmd = Command::new("bash");
        cmd.arg(root().join("action/run.sh"))
            .current_dir(self.repo());
        for (k, _) in std::env::vars() {
            if ["GITHUB_", "RUNNER_", "INPUT_", "STRATA_"]
                .iter()
                .any(|p| k.starts_with(p))
            {
                cmd.env_remove(k);
            }
        }
        cmd.env("GITHUB_ACTIONS", "true")
            .env("CI", "true")
            .env("GITHUB_EVENT_NAME", event)
            .env("GITHUB_EVENT_PATH", &event_path)
            .env("GITHUB_OUTPUT", self.path("output"))
            .env("GITHUB_STEP_SUMMARY", self.path("summary.md"))
            .env("GITHUB_REPOSITORY", "acme/infra")
            .env("GITHUB_SERVER_URL", "https://github.com")
            .env("GITHUB_SHA", &self.head)
            .env("GITHUB_REF", git_ref)
            .env("GITHUB_TOKEN", "ghs_testtoken")
            .env("XDG_CACHE_HOME", self.path("cache"))
            .env("STRATA_BIN", assert_cmd::cargo::cargo_bin("strata"))
            .env("INPUT_COMMAND", "ci")
            .env("INPUT_COMMENT", "true")
            .env("INPUT_FAIL_ON", "error");
        match gh {
            Some(gh) => cmd.env("GITHUB_API_URL", &gh.url),
            // Nothing may talk to GitHub: a closed port.
            None => cmd.env("GITHUB_API_URL", "http://127.0.0.1:9"),
        };
        for (k, v) in inputs {
            cmd.env(format!("INPUT_{}", k.to_uppercase().replace('-', "_")), v);
        }
        let out = cmd.output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    }

    fn outputs(&self) -> BTreeMap<String, String> {
        std::fs::read_to_string(self.path("output"))
            .unwrap()
            .lines()
            .map(|l| {
                let (k, v) = l.split_once('=').unwrap();
                (k.to_string(), v.to_string())
            })
            .collect()
    }

    fn summary(&self) -> String {
        std::fs::read_to_string(self.path("summary.md")).unwrap()
    }
}

fn expected_outputs(
    changed: &str,
    files: &str,
    errors: &str,
    url: &str,
) -> BTreeMap<String, String> {
    // The fixtures' target names hold no blank: the JSON form lists the
    // same names.
    let names: Vec<&str> = changed.split(' ').filter(|n| !n.is_empty()).collect();
    let json = serde_json::to_string(&names).unwrap();
    [
        ("changed-targets", changed),
        ("changed-targets-json", json.as_str()),
        ("diff-files", files),
        ("lint-errors", errors),
        ("comment-url", url),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

#[test]
fn action_on_a_pull_request_comments_the_diff() {
    let job = Job::new();
    let gh = FakeGithub::start();
    let (code, out, err) = job.run("pull_request", "refs/pull/7/merge", Some(&gh), &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("strata ci: pull_request event"), "{err}");
    let reqs = gh.requests();
    let posts: Vec<_> = reqs.iter().filter(|r| r.method == "POST").collect();
    assert_eq!(posts.len(), 1, "{reqs:?}");
    assert_eq!(posts[0].path, "/repos/acme/infra/issues/7/comments");
    assert_eq!(posts[0].auth, "Bearer ghs_testtoken");
    let body: serde_json::Value = serde_json::from_str(&posts[0].body).unwrap();
    let body = body["body"].as_str().unwrap();
    assert!(body.starts_with("<!-- strata-review -->"), "{body}");
    assert!(body.contains("dev"), "{body}");
    assert!(body.contains("Deployment/dev/app"), "{body}");
    assert!(
        body.contains("-  replicas: 1") && body.contains("+  replicas: 2"),
        "{body}"
    );
    assert!(!body.contains("Deployment/prod/app"), "{body}");
    assert_eq!(
        job.outputs(),
        expected_outputs(
            "dev",
            "1",
            "0",
            "https://github.com/acme/infra/pull/7#issuecomment-1001"
        )
    );
    let summary = job.summary();
    assert!(summary.contains("+  replicas: 2"), "{summary}");
    // The text diff is in the log too.
    assert!(out.contains("target dev (changed)"), "{out}");

    // Run again: the comment is current, nothing is posted, same address.
    std::fs::remove_file(job.path("output")).unwrap();
    let (code, out, err) = job.run("pull_request", "refs/pull/7/merge", Some(&gh), &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(gh.requests().iter().all(|r| r.method == "GET"));
    assert_eq!(
        job.outputs()["comment-url"],
        "https://github.com/acme/infra/pull/7#issuecomment-1001"
    );

    // comment: false writes the review to the summary and calls no API.
    std::fs::remove_file(job.path("output")).unwrap();
    std::fs::remove_file(job.path("summary.md")).unwrap();
    let (code, out, err) = job.run(
        "pull_request",
        "refs/pull/7/merge",
        Some(&gh),
        &[("comment", "false"), ("targets", "prod")],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(gh.requests().is_empty());
    assert_eq!(job.outputs(), expected_outputs("", "0", "0", ""));
    assert!(
        job.summary().contains("no catalog changes"),
        "{}",
        job.summary()
    );
}

#[test]
fn pull_request_comment_shows_only_new_lint_findings() {
    // The base already has two unused classes, one with a plaintext
    // secret (an error); the pull request adds one more unused class.
    let secret = "Xk9#mP2vL8qR4tZw";
    let job = Job::with_files(
        &[
            ("inventory/classes/old.yml", "parameters:\n  x: 1\n"),
            (
                "inventory/classes/leak.yml",
                &format!("parameters:\n  db:\n    password: '{secret}'\n"),
            ),
        ],
        &[("inventory/classes/added-later.yml", "parameters:\n  y: 1\n")],
    );
    let gh = FakeGithub::start();
    let (code, out, err) = job.run("pull_request", "refs/pull/7/merge", Some(&gh), &[]);
    // The pre-existing error does not fail the pull request.
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("lint: 1 new, 0 fixed, 3 already in the base"),
        "{err}"
    );
    let reqs = gh.requests();
    let post = reqs.iter().find(|r| r.method == "POST").expect("a comment");
    let body: serde_json::Value = serde_json::from_str(&post.body).unwrap();
    let body = body["body"].as_str().unwrap();
    assert!(
        body.contains("#### Lint: 1 new (0 errors, 1 warning), 0 fixed, 3 already in the base"),
        "{body}"
    );
    assert!(body.contains("added-later"), "{body}");
    assert!(
        !body.contains("old.yml") && !body.contains("leak.yml"),
        "{body}"
    );
    // Annotations: only the new finding.
    assert!(out.contains("added-later"), "{out}");
    assert!(
        !out.contains("title=unused-class,file=./inventory/classes/old.yml")
            && !out.contains("leak.yml"),
        "{out}"
    );
    // The job summary lists the existing ones.
    let summary = std::fs::read_to_string(job.path("summary.md")).unwrap();
    assert!(summary.contains("Already in the base (3)"), "{summary}");
    assert!(summary.contains("old.yml"), "{summary}");
    for text in [body.to_string(), out.clone(), err.clone(), summary] {
        assert!(!text.contains(secret));
    }
}

#[test]
fn action_on_push_to_the_default_branch_publishes() {
    let job = Job::new();
    let bare = job.path("catalog.git");
    git(
        job.dir.path(),
        &["init", "-q", "--bare", "-b", "main", "catalog.git"],
    );
    let url = format!("file://{}", bare.display());
    // A feature branch publishes nothing.
    let (code, out, err) = job.run(
        "push",
        "refs/heads/feature",
        None,
        &[("catalog-repo", &url)],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("refs/heads/feature is not the default branch: nothing pushed"),
        "{err}"
    );
    assert!(git(&bare, &["branch", "--list"]).is_empty());
    // The default branch does.
    std::fs::remove_file(job.path("output")).unwrap();
    let (code, out, err) = job.run("push", "refs/heads/main", None, &[("catalog-repo", &url)]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("Pushed "), "{out}");
    let tree = git(&bare, &["ls-tree", "-r", "--name-only", "main"]);
    assert_eq!(tree, "dev/manifests/app.yaml\nprod/manifests/app.yaml");
    let dev = git(&bare, &["show", "main:dev/manifests/app.yaml"]);
    assert!(dev.contains("replicas: 2"), "{dev}");
    let msg = git(&bare, &["log", "-1", "--format=%an%n%B", "main"]);
    assert!(msg.starts_with("github-actions[bot]\n"), "{msg}");
    assert!(msg.contains(&job.head), "{msg}");
    assert_eq!(job.outputs(), expected_outputs("", "0", "0", ""));
    let summary = job.summary();
    assert!(
        summary.contains("Event `push`: compiled 2 target(s)."),
        "{summary}"
    );
    assert!(
        summary.contains("Published the catalog to file://"),
        "{summary}"
    );

    // No catalog repository: compiled and linted, nothing pushed, said so.
    let (code, _, err) = job.run("push", "refs/heads/main", None, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("No catalog repository configured"), "{err}");
}

#[test]
fn action_on_other_events_compiles_and_lints() {
    let job = Job::new();
    let (code, out, err) = job.run("workflow_dispatch", "refs/heads/main", None, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("strata ci: workflow_dispatch event"), "{err}");
    assert!(err.contains("Compiled 2 targets"), "{err}");
    assert_eq!(job.outputs(), expected_outputs("", "0", "0", ""));
    assert!(
        job.summary().contains(
            "Event `workflow_dispatch`: compiled 2 target(s).\n\nLint: 0 error(s), 0 warning(s)."
        ),
        "{}",
        job.summary()
    );

    // An unused class is a warning: it fails only with fail-on: warning,
    // and a failed lint publishes nothing.
    write(
        &job.repo(),
        "inventory/classes/unused.yml",
        "parameters: {}\n",
    );
    let (code, out, err) = job.run("workflow_dispatch", "refs/heads/main", None, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("::warning file="), "{out}");
    let bare = job.path("catalog.git");
    git(
        job.dir.path(),
        &["init", "-q", "--bare", "-b", "main", "catalog.git"],
    );
    let url = format!("file://{}", bare.display());
    let (code, out, err) = job.run(
        "push",
        "refs/heads/main",
        None,
        &[("fail-on", "warning"), ("catalog-repo", &url)],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("Lint failed: the catalog was not published."),
        "{err}"
    );
    assert!(git(&bare, &["branch", "--list"]).is_empty());
    // A lint error (a plaintext secret) counts in lint-errors.
    write(
        &job.repo(),
        "inventory/targets/dev.yml",
        "classes: [common]\nparameters:\n  replicas: 2\n  password: Zx81Hq2Lm9Ke4Wv7\n",
    );
    std::fs::remove_file(job.path("output")).unwrap();
    let (code, out, err) = job.run("schedule", "refs/heads/main", None, &[("fail-on", "never")]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(job.outputs()["lint-errors"], "1");
    let (code, _, _) = job.run("schedule", "refs/heads/main", None, &[]);
    assert_eq!(code, 1);
    // A bad input is refused before anything runs.
    let (code, out, _) = job.run("schedule", "refs/heads/main", None, &[("comment", "maybe")]);
    assert_eq!(code, 2);
    assert!(out.contains("input comment must be true or false"), "{out}");
}

#[test]
fn action_pull_request_with_collected_shards() {
    let job = Job::new();
    let repo = job.repo();
    for i in 1..=2 {
        let (code, _, err) = output(strata_in(&repo).args([
            "compile",
            "--shard",
            &format!("{i}/2"),
            "--output-path",
            &format!("../shard{i}"),
        ]));
        assert_eq!(code, 0, "{err}");
    }
    let gh = FakeGithub::start();
    let (code, out, err) = job.run(
        "pull_request",
        "refs/pull/7/merge",
        Some(&gh),
        &[("args", "--collect ../shard1 ../shard2")],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("collected 2 target(s) from 2 shard(s)"),
        "{err}"
    );
    assert_eq!(job.outputs()["changed-targets"], "dev");
    assert_eq!(job.outputs()["diff-files"], "1");
    let posts: Vec<_> = gh
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect();
    assert_eq!(posts.len(), 1);
    assert!(
        posts[0].body.contains("+  replicas: 2"),
        "{}",
        posts[0].body
    );
}

/// The download path of `action/install.sh`, from a `file://` release: the
/// sha256 is checked, a mismatch is an error, a missing asset falls back to
/// building.
#[test]
fn install_script_checks_the_release_sha256() {
    let triple = match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => "x86_64-unknown-linux-gnu",
        ("linux", "aarch64") => "aarch64-unknown-linux-gnu",
        _ => return,
    };
    if Command::new("curl").arg("--version").output().is_err() {
        eprintln!("curl is not installed: skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let release = d.join("release");
    std::fs::create_dir_all(release.join("pkg")).unwrap();
    write(&release, "pkg/strata", "#!/bin/sh\necho fake strata\n");
    Command::new("chmod")
        .args(["+x", "pkg/strata"])
        .current_dir(&release)
        .status()
        .unwrap();
    let asset = format!("strata-{triple}.tar.gz");
    assert!(Command::new("tar")
        .args(["-czf", &asset, "-C", "pkg", "strata"])
        .current_dir(&release)
        .status()
        .unwrap()
        .success());
    let sum = Command::new("sha256sum")
        .arg(&asset)
        .current_dir(&release)
        .output()
        .unwrap();
    std::fs::write(release.join(format!("{asset}.sha256")), &sum.stdout).unwrap();
    let install = |version: &str| {
        let out_file = d.join(format!("out-{version}"));
        let mut cmd = Command::new("bash");
        cmd.arg(root().join("action/install.sh"))
            .arg("download")
            .env_remove("STRATA_BIN")
            .env("STRATA_VERSION", version)
            .env(
                "STRATA_RELEASE_URL",
                format!("file://{}", release.display()),
            )
            .env("RUNNER_TEMP", d.join(format!("tmp-{version}")))
            .env("GITHUB_OUTPUT", &out_file)
            .env("GITHUB_ACTION_PATH", root());
        std::fs::create_dir_all(d.join(format!("tmp-{version}"))).unwrap();
        let out = cmd.output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            std::fs::read_to_string(&out_file).unwrap_or_default(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, outputs, err) = install("v1");
    assert_eq!(code, 0, "{err}");
    let bin = outputs.strip_prefix("bin=").unwrap().trim();
    let ran = Command::new(bin).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&ran.stdout), "fake strata\n");
    // A tampered asset is refused.
    std::fs::write(
        release.join(format!("{asset}.sha256")),
        format!("{}  {asset}\n", "0".repeat(64)),
    )
    .unwrap();
    let (code, outputs, err) = install("v2");
    assert_eq!(code, 2, "{err}");
    assert!(outputs.is_empty(), "{outputs}");
    // No asset at all: build from source, with a cache key.
    std::fs::remove_file(release.join(&asset)).unwrap();
    let (code, outputs, err) = install("v3");
    assert_eq!(code, 0, "{err}");
    assert!(outputs.contains("source=true\n"), "{outputs}");
    assert!(outputs.contains("cache-key=strata-"), "{outputs}");
    assert!(outputs.contains("-v3-"), "{outputs}");
}

/// `strata ci` on a pull request compiles the pull request's inventory
/// confined to the repository: a head that copies a file from outside the
/// repository fails, and that file's content reaches no output (log,
/// summary, comment, any request sent to GitHub).
#[test]
fn pull_request_reading_outside_the_repository_reveals_nothing() {
    const MARKER: &str = "M4rker-ci-0utside-2b9e";
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("credentials");
    std::fs::write(&secret, format!("{MARKER}\n")).unwrap();
    let dev = format!(
        "classes: [common]\nparameters:\n  replicas: 2\n  kapitan:\n    compile:\n      - output_path: stolen\n        input_type: copy\n        input_paths: ['{}']\n",
        secret.display()
    );
    let job = Job::with_files(&[], &[("inventory/targets/dev.yml", &dev)]);
    let gh = FakeGithub::start();
    let (code, out, err) = job.run("pull_request", "refs/pull/7/merge", Some(&gh), &[]);
    assert_ne!(code, 0, "{out}{err}");
    let mut all = out + &err + &std::fs::read_to_string(job.path("summary.md")).unwrap_or_default();
    for r in gh.requests() {
        all += &r.body;
    }
    assert!(!all.contains(MARKER), "the file leaked: {all}");
    assert!(
        all.contains("outside the repository") && all.contains("target dev, compile entry #2"),
        "{all}"
    );
}

/// red41: a value the inventory holds under a secret-named parameter (or
/// a `plain` reference named there) that a component copies under a
/// neutral key, into a larger string, or base64-encoded, is hidden in
/// every output of a pull request's review: the comment, the job
/// summary, the log, `review`'s report, `diff --base` and `diff
/// --catalogs` in both modes, and `push --dry-run`.
#[test]
fn known_secret_values_are_hidden_in_every_review_output() {
    const OLD: &str = "Qv7Rt2Wx9KmL4Nzp";
    const NEW: &str = "Hj3Kd8Fs1Pq6Vby0";
    const PLAIN_OLD: &str = "Gz4Mn8Xc2Vb6Lk0q";
    const PLAIN_NEW: &str = "Pw6Er1Ty4Ui7Op0a";
    let class = |pw: &str| {
        format!("parameters:\n  kapitan:\n    vars:\n      target: ${{_reclass_:name:short}}\n    compile:\n      - output_path: manifests\n        input_type: jsonnet\n        input_paths: [components/app.jsonnet]\n        output_type: yaml\n  db:\n    password: {pw}\n  grafana:\n    admin_password: ?{{plain:grafana_admin}}\n")
    };
    let app = "local kap = import 'lib/kapitan.libjsonnet';\nlocal p = kap.inventory().parameters;\n{\n  app: [\n    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'web', namespace: std.extVar('target') },\n      data: { DB_CONN_ARG: p.db.password, JAVA_OPTS: '-Xmx512m -Dapp.db.conn=' + p.db.password,\n              BASIC_B64: std.base64('app:' + p.db.password), GF: p.grafana.admin_password, replicas: std.toString(p.replicas),\n              HEX: std.join('', [std.format('%02x', c) for c in std.encodeUTF8('pw=' + p.db.password)]), MD5: std.md5(p.db.password) } },\n  ],\n}\n";
    let plain = |v: &str| format!("data: {v}\nencoding: original\ntype: plain\n");
    let job = Job::with_files(
        &[
            ("inventory/classes/common.yml", &class(OLD)),
            ("components/app.jsonnet", app),
            ("refs/grafana_admin", &plain(PLAIN_OLD)),
        ],
        &[
            ("inventory/classes/common.yml", &class(NEW)),
            ("refs/grafana_admin", &plain(PLAIN_NEW)),
        ],
    );
    let secrets = [OLD, NEW, PLAIN_OLD, PLAIN_NEW];
    let b64 = |s: &str| {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(format!("app:{s}"))[4..20].to_string()
    };
    // red42: its hex (inside a longer text's) and its md5 digest.
    let hex = |s: &str| s.bytes().map(|b| format!("{b:02x}")).collect::<String>();
    let md5 = |s: &str| format!("{:x}", md5::compute(s));
    let check = |what: &str, text: &str| {
        for s in secrets {
            assert!(!text.contains(s), "{what}: {s} shown:\n{text}");
            assert!(
                !text.contains(&b64(s)),
                "{what}: base64 of {s} shown:\n{text}"
            );
        }
        for s in [OLD, NEW] {
            assert!(!text.contains(&hex(s)), "{what}: hex of {s} shown:\n{text}");
            assert!(!text.contains(&md5(s)), "{what}: md5 of {s} shown:\n{text}");
        }
    };
    let gh = FakeGithub::start();
    let (code, out, err) = job.run("pull_request", "refs/pull/7/merge", Some(&gh), &[]);
    assert_eq!(code, 0, "{out}{err}");
    let posts: Vec<String> = gh.requests().into_iter().map(|r| r.body).collect();
    assert!(posts.iter().any(|b| b.contains("DB_CONN_ARG")), "{posts:?}");
    check("ci comment", &posts.join("\n"));
    assert!(out.contains("DB_CONN_ARG: <redacted>"), "{out}");
    check("ci log", &(out + &err));
    check("ci summary", &job.summary());
    // red42: a `--full` review opens no lint input; its values were not
    // known (every one showed in the comment, the log and the summary).
    let gh = FakeGithub::start();
    let (code, out, err) = job.run(
        "pull_request",
        "refs/pull/7/merge",
        Some(&gh),
        &[("args", "--full")],
    );
    assert_eq!(code, 0, "{out}{err}");
    let posts: Vec<String> = gh.requests().into_iter().map(|r| r.body).collect();
    assert!(posts.iter().any(|b| b.contains("DB_CONN_ARG")), "{posts:?}");
    check("ci --full comment", &posts.join("\n"));
    check("ci --full log", &(out + &err));
    check("ci --full summary", &job.summary());
    let repo = job.repo();
    // `ci --collect` of a shard compiled from the head: both revisions'
    // values, the base's read from git.
    let (code, _, err) =
        output(strata_in(&repo).args(["compile", "--shard", "1/1", "--output-path", "../shard1"]));
    assert_eq!(code, 0, "{err}");
    let gh = FakeGithub::start();
    let (code, out, err) = job.run(
        "pull_request",
        "refs/pull/7/merge",
        Some(&gh),
        &[("args", "--collect ../shard1")],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("collected 2 target(s) from 1 shard(s)"),
        "{err}"
    );
    let posts: Vec<String> = gh.requests().into_iter().map(|r| r.body).collect();
    assert!(posts.iter().any(|b| b.contains("DB_CONN_ARG")), "{posts:?}");
    check("ci --collect comment", &posts.join("\n"));
    check("ci --collect log", &(out + &err));
    check("ci --collect summary", &job.summary());
    let art = job.path("art.md");
    let (code, out, err) = output(
        strata_in(&repo)
            .args(["review", "--base", &job.base, "--output"])
            .arg(&art),
    );
    assert_eq!(code, 0, "{out}{err}");
    check(
        "review",
        &(out + &err + &std::fs::read_to_string(&art).unwrap()),
    );
    for mode in [&[][..], &["--no-semantic"][..]] {
        for format in ["text", "json"] {
            let (code, out, err) = output(
                strata_in(&repo)
                    .args(["diff", "--base", &job.base, "--format", format])
                    .args(mode),
            );
            assert_eq!(code, 0, "{out}{err}");
            assert!(out.contains("DB_CONN_ARG"), "{out}");
            check(&format!("diff --base {format} {mode:?}"), &(out + &err));
        }
    }
    // The catalogs compiled from each revision, diffed in the working
    // tree (whose inventory is the head's): the head's values.
    git(&repo, &["checkout", "-q", &job.base]);
    let (code, out, err) =
        output(strata_in(&repo).args(["compile", "--output-path", "../base-out"]));
    assert_eq!(code, 0, "{out}{err}");
    git(&repo, &["checkout", "-q", "main"]);
    let (code, out, err) =
        output(strata_in(&repo).args(["compile", "--output-path", "../head-out"]));
    assert_eq!(code, 0, "{out}{err}");
    for mode in [&[][..], &["--no-semantic"][..]] {
        let (code, out, err) = output(
            strata_in(&repo)
                .args([
                    "diff",
                    "--catalogs",
                    "../base-out/compiled",
                    "../head-out/compiled",
                ])
                .args(mode),
        );
        assert_eq!(code, 0, "{out}{err}");
        assert!(out.contains("DB_CONN_ARG"), "{out}");
        for s in [NEW, PLAIN_NEW] {
            assert!(!out.contains(s) && !out.contains(&b64(s)), "{s}: {out}");
        }
    }
    // `push --dry-run` of the head's catalog over the base's.
    let bare = job.path("catalog.git");
    std::fs::create_dir_all(&bare).unwrap();
    git(&bare, &["init", "--bare", "-q", "-b", "main"]);
    let seed = job.path("base-out/compiled");
    git(&seed, &["init", "-q", "-b", "main"]);
    git(&seed, &["add", "-A"]);
    git(&seed, &["commit", "-q", "-m", "seed"]);
    git(
        &seed,
        &["push", "-q", &format!("file://{}", bare.display()), "main"],
    );
    let (code, out, err) = output(
        strata_in(&repo)
            .env("HOME", job.path("home"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .args([
                "push",
                "--catalog-dir",
                "../head-out/compiled",
                "--cache-dir",
                "../pcache",
                "--dry-run",
            ])
            .args(["--catalog-repo", &format!("file://{}", bare.display())])
            .args(["--author", "CI <ci@example.com>"]),
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("DB_CONN_ARG"), "{out}");
    for s in [NEW, PLAIN_NEW] {
        assert!(
            !out.contains(s) && !out.contains(&b64(s)),
            "{s}: {out}{err}"
        );
    }
    // red42: a catalog that `strata push` published from the base names
    // its source commit: the base's values (rotated away by the change)
    // are known on the old side of the dry run too.
    let bare2 = job.path("catalog2.git");
    std::fs::create_dir_all(&bare2).unwrap();
    git(&bare2, &["init", "--bare", "-q", "-b", "main"]);
    let push = |dry: bool| {
        let mut c = strata_in(&repo);
        c.env("HOME", job.path("home"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("GITHUB_REPOSITORY")
            .env_remove("GITHUB_SHA")
            .arg("push")
            .arg("--catalog-dir")
            .arg(if dry {
                "../head-out/compiled"
            } else {
                "../base-out/compiled"
            })
            .args(["--cache-dir", if dry { "../pcache3" } else { "../pcache2" }])
            .args(["--catalog-repo", &format!("file://{}", bare2.display())])
            .args(["--author", "CI <ci@example.com>"]);
        if dry {
            c.arg("--dry-run");
        }
        output(&mut c)
    };
    git(&repo, &["checkout", "-q", &job.base]);
    let (code, out, err) = push(false);
    assert_eq!(code, 0, "{out}{err}");
    git(&repo, &["checkout", "-q", "main"]);
    let (code, out, err) = push(true);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("DB_CONN_ARG"), "{out}");
    check("push --dry-run over a published catalog", &(out + &err));
    // And `diff --catalogs` whose old side is a checkout of that catalog
    // repository.
    let clone = job.path("catalog-checkout");
    git(
        &repo,
        &[
            "clone",
            "-q",
            &format!("file://{}", bare2.display()),
            clone.to_str().unwrap(),
        ],
    );
    for mode in [&[][..], &["--no-semantic"][..]] {
        let (code, out, err) = output(
            strata_in(&repo)
                .args(["diff", "--catalogs"])
                .arg(&clone)
                .arg("../head-out/compiled")
                .args(mode),
        );
        assert_eq!(code, 0, "{out}{err}");
        assert!(out.contains("DB_CONN_ARG"), "{out}");
        check(
            &format!("diff --catalogs from a published catalog {mode:?}"),
            &(out + &err),
        );
    }
}

/// red41: a `plain` reference's value is known where the compile reads
/// it: `.kapitan`'s `compile: refs-path` (here `./secrets`), in a review
/// (both revisions) and in `diff --catalogs` (the working tree's).
#[test]
fn known_reference_values_follow_the_kapitan_refs_path() {
    const OLD: &str = "Gz4Mn8Xc2Vb6Lk0q";
    const NEW: &str = "Pw6Er1Ty4Ui7Op0a";
    let class = "parameters:\n  kapitan:\n    vars:\n      target: ${_reclass_:name:short}\n    compile:\n      - output_path: manifests\n        input_type: jsonnet\n        input_paths: [components/app.jsonnet]\n        output_type: yaml\n  grafana:\n    admin_password: ?{plain:grafana_admin}\n";
    let app = "local kap = import 'lib/kapitan.libjsonnet';\nlocal p = kap.inventory().parameters;\n{ app: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'grafana' }, data: { GF: p.grafana.admin_password, replicas: std.toString(p.replicas) } }] }\n";
    let plain = |v: &str| format!("data: {v}\nencoding: original\ntype: plain\n");
    let job = Job::with_files(
        &[
            (".kapitan", "compile:\n  refs-path: ./secrets\n"),
            ("inventory/classes/common.yml", class),
            ("components/app.jsonnet", app),
            ("secrets/grafana_admin", &plain(OLD)),
        ],
        &[
            ("inventory/classes/common.yml", class),
            ("components/app.jsonnet", app),
            ("secrets/grafana_admin", &plain(NEW)),
        ],
    );
    let repo = job.repo();
    let (code, out, err) = output(strata_in(&repo).args(["review", "--base", &job.base]));
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("GF: <redacted>"), "{out}");
    for s in [OLD, NEW] {
        assert!(!out.contains(s) && !err.contains(s), "{s}: {out}{err}");
    }
    let (code, out, err) =
        output(strata_in(&repo).args(["compile", "--output-path", "../head-out"]));
    assert_eq!(code, 0, "{out}{err}");
    let empty = job.path("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (code, out, err) = output(
        strata_in(&repo)
            .args(["diff", "--catalogs"])
            .arg(&empty)
            .arg("../head-out/compiled"),
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("GF: <redacted>"), "{out}");
    assert!(!out.contains(NEW), "{out}");
}
