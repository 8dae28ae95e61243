//! `strata push` against real repositories: bare repositories over file://
//! and a `git http-backend` served on 127.0.0.1 behind a token, created by
//! each test with the `git` CLI. No test touches the network.

use crate::strata;
use crate::support::git_in as git;
use std::path::{Path, PathBuf};

const AUTHOR: &str = "Catalog Bot <bot@example.com>";

struct Env {
    tmp: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("home")).unwrap();
        Env { tmp }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }

    fn home(&self) -> PathBuf {
        self.path("home")
    }

    fn git(&self, dir: &Path, args: &[&str]) -> String {
        git(&self.home(), dir, args)
    }

    /// An empty bare repository whose default branch is `main`.
    fn bare(&self, name: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::create_dir_all(&p).unwrap();
        self.git(&p, &["init", "--bare", "-q", "-b", "main"]);
        p
    }

    /// A bare repository with one commit on `main` holding `files`.
    fn seeded(&self, name: &str, files: &[(&str, &str)]) -> PathBuf {
        let bare = self.bare(name);
        let work = self.path(&format!("{name}-seed"));
        write_files(&work, files);
        self.git(&work, &["init", "-q", "-b", "main"]);
        self.git(&work, &["add", "-A"]);
        self.git(&work, &["commit", "-q", "-m", "seed"]);
        self.git(
            &work,
            &["push", "-q", &format!("file://{}", bare.display()), "main"],
        );
        bare
    }

    fn catalog(&self, name: &str, files: &[(&str, &str)]) -> PathBuf {
        let p = self.path(name);
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        write_files(&p, files);
        p
    }

    /// `strata push` with an isolated environment and a fixed author.
    fn push(&self, catalog: &Path, url: &str, cache: &str) -> assert_cmd::Command {
        let mut c = strata();
        c.current_dir(self.tmp.path())
            .env("HOME", self.home())
            .env("XDG_CONFIG_HOME", self.home().join(".config"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("GITHUB_TOKEN")
            .env_remove("GITHUB_ACTIONS")
            .env_remove("GITHUB_REPOSITORY")
            .env_remove("GITHUB_SHA")
            .env_remove("GITHUB_SERVER_URL")
            .arg("push")
            .arg("--catalog-dir")
            .arg(catalog)
            .args(["--catalog-repo", url])
            .arg("--cache-dir")
            .arg(self.path(cache));
        c
    }

    fn files(&self, bare: &Path, rev: &str) -> Vec<String> {
        self.git(bare, &["ls-tree", "-r", "--name-only", rev])
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn show(&self, bare: &Path, spec: &str) -> String {
        self.git(bare, &["show", spec])
    }

    fn count(&self, bare: &Path) -> usize {
        self.git(bare, &["rev-list", "--count", "main"])
            .trim()
            .parse()
            .unwrap()
    }

    fn head(&self, bare: &Path) -> String {
        self.git(bare, &["rev-parse", "main"]).trim().to_string()
    }
}

fn write_files(root: &Path, files: &[(&str, &str)]) {
    for (path, content) in files {
        crate::support::put(root, path, content);
    }
}

fn url(bare: &Path) -> String {
    format!("file://{}", bare.display())
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn creates_the_branch_then_makes_no_empty_commit() {
    let env = Env::new();
    let bare = env.bare("catalog.git");
    let cat = env.catalog(
        "compiled",
        &[
            ("dev/manifests/app.yaml", "kind: A\n"),
            ("prod/app.yaml", "kind: B\n"),
        ],
    );
    let out = env
        .push(&cat, &url(&bare), "cache")
        .args(["--author", AUTHOR])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("Pushed "), "{}", stdout(&out));
    assert_eq!(
        env.files(&bare, "main"),
        ["dev/manifests/app.yaml", "prod/app.yaml"]
    );
    assert_eq!(env.show(&bare, "main:prod/app.yaml"), "kind: B\n");
    let log = env.git(&bare, &["log", "-1", "--format=%an <%ae>%n%B", "main"]);
    assert!(log.starts_with("Catalog Bot <bot@example.com>\n"), "{log}");
    assert!(log.contains("2 files changed in 2 targets:"), "{log}");
    assert!(
        log.contains("- dev: 1 added, 0 changed, 0 removed"),
        "{log}"
    );
    assert_eq!(env.count(&bare), 1);
    // The objects gix wrote are well-formed for git.
    env.git(&bare, &["fsck", "--strict", "--no-dangling"]);

    // Same catalog again: nothing to commit, exit 0, no new commit, also
    // with a fresh cache (clone) instead of the warm one (fetch).
    for cache in ["cache", "cache2"] {
        let out = env
            .push(&cat, &url(&bare), cache)
            .args(["--author", AUTHOR])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            stdout(&out).starts_with("Nothing changed"),
            "{}",
            stdout(&out)
        );
        assert_eq!(env.count(&bare), 1);
    }
}

#[test]
fn replaces_managed_targets_and_keeps_the_rest() {
    let env = Env::new();
    let bare = env.seeded(
        "catalog.git",
        &[
            ("README.md", "catalog\n"),
            ("dev/stale.yaml", "old\n"),
            ("dev/app.yaml", "v1\n"),
            ("retired/x.yaml", "x\n"),
        ],
    );
    let cat = env.catalog(
        "compiled",
        &[
            ("dev/app.yaml", "v2\n"),
            ("dev/new.yaml", "n\n"),
            ("prod/p.yaml", "p\n"),
        ],
    );
    let out = env
        .push(&cat, &url(&bare), "cache")
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_REPOSITORY", "acme/inventory")
        .env("GITHUB_SHA", "0123456789abcdef0123456789abcdef01234567")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // Targets are managed as a whole; README and targets the catalog does
    // not mention stay.
    assert_eq!(
        env.files(&bare, "main"),
        [
            "README.md",
            "dev/app.yaml",
            "dev/new.yaml",
            "prod/p.yaml",
            "retired/x.yaml"
        ]
    );
    let log = env.git(&bare, &["log", "-1", "--format=%an <%ae>|%cn%n%B", "main"]);
    assert!(
        log.starts_with(
            "github-actions[bot] <41898282+github-actions[bot]@users.noreply.github.com>|github-actions[bot]\n"
        ),
        "{log}"
    );
    assert!(
        log.contains("Update catalog from https://github.com/acme/inventory@0123456789ab\n"),
        "{log}"
    );
    assert!(
        log.contains("Source commit: 0123456789abcdef0123456789abcdef01234567"),
        "{log}"
    );
    assert!(
        log.contains("- dev: 1 added, 1 changed, 1 removed\n"),
        "{log}"
    );
    assert!(
        log.contains("- prod: 1 added, 0 changed, 0 removed\n"),
        "{log}"
    );
    assert_eq!(
        env.git(&bare, &["rev-list", "--count", "--parents", "main"])
            .trim(),
        "2"
    );

    // An explicit managed path missing from the catalog is deleted.
    let out = env
        .push(&cat, &url(&bare), "cache")
        .args([
            "--author",
            AUTHOR,
            "--managed",
            "retired",
            "--message",
            "Retire",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not published (outside the managed paths): dev, prod"),
        "{}",
        stderr(&out)
    );
    assert!(!env
        .files(&bare, "main")
        .contains(&"retired/x.yaml".to_string()));
    let subject = env.git(&bare, &["log", "-1", "--format=%s", "main"]);
    assert_eq!(subject.trim(), "Retire");
}

#[test]
fn source_and_author_come_from_the_local_repository() {
    let env = Env::new();
    let bare = env.bare("catalog.git");
    let work = env.path("inventory-repo");
    write_files(&work, &[("inventory/targets/t.yml", "classes: []\n")]);
    env.git(&work, &["init", "-q", "-b", "main"]);
    env.git(&work, &["add", "-A"]);
    env.git(&work, &["commit", "-q", "-m", "inv"]);
    env.git(&work, &["config", "user.name", "Local Dev"]);
    env.git(&work, &["config", "user.email", "dev@example.com"]);
    let head = env.git(&work, &["rev-parse", "HEAD"]).trim().to_string();
    let cat = env.catalog("compiled", &[("t/a.yaml", "a\n")]);
    let out = env
        .push(&cat, &url(&bare), "cache")
        .current_dir(&work)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let log = env.git(&bare, &["log", "-1", "--format=%an <%ae>%n%B", "main"]);
    assert!(log.starts_with("Local Dev <dev@example.com>\n"), "{log}");
    assert!(log.contains(&format!("Source commit: {head}")), "{log}");
    assert!(log.contains(&format!("@{}", &head[..12])), "{log}");
}

#[test]
fn dry_run_lists_changes_and_pushes_nothing() {
    let env = Env::new();
    let bare = env.seeded(
        "catalog.git",
        &[("dev/a.yaml", "1\n"), ("dev/b.yaml", "b\n")],
    );
    let before = env.head(&bare);
    let cat = env.catalog("compiled", &[("dev/a.yaml", "2\n"), ("dev/c.yaml", "c\n")]);
    let out = env
        .push(&cat, &url(&bare), "cache")
        .args(["--dry-run", "--author", AUTHOR])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("target dev (changed)"), "{text}");
    for line in [
        "  changed  a.yaml",
        "  removed  b.yaml",
        "  added    c.yaml",
    ] {
        assert!(text.contains(line), "{line}: {text}");
    }
    assert!(
        text.contains("dev: 1 added, 1 changed, 1 removed"),
        "{text}"
    );
    assert!(text.contains("Nothing was pushed."), "{text}");
    assert_eq!(env.head(&bare), before);
}

#[test]
fn dry_run_shows_the_review_diff_with_secrets_redacted() {
    let env = Env::new();
    let cm = |v: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: web\ndata:\n  replicas: \"{v}\"\n")
    };
    let secret = |v: &str| {
        format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: web\nstringData:\n  password: {v}\n")
    };
    let bare = env.seeded(
        "catalog.git",
        &[
            ("manifests/web/cm.yaml", &cm("1")),
            ("manifests/web/secret.yaml", &secret("hunter2-old")),
            ("manifests/gone/x.yaml", "a: 1\n"),
        ],
    );
    let before = env.head(&bare);
    let cat = env.catalog(
        "catalog",
        &[
            ("manifests/web/cm.yaml", &cm("3")),
            ("manifests/web/secret.yaml", &secret("hunter2-new")),
            ("refs/web/password", "?{vaultkv:web/password}\n"),
        ],
    );
    let out = env
        .push(&cat, &url(&bare), "cache")
        .args(["--layout", "commodore", "--dry-run", "--author", AUTHOR])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    // The same renderer as `strata diff`: targets per instance, objects by
    // kind/namespace/name, a unified diff of the changed field.
    assert!(text.contains("target manifests/web (changed)"), "{text}");
    assert!(text.contains("target manifests/gone (removed)"), "{text}");
    assert!(text.contains("target refs/web (added)"), "{text}");
    assert!(text.contains("ConfigMap"), "{text}");
    assert!(text.contains("-  replicas: \"1\""), "{text}");
    assert!(text.contains("+  replicas: \"3\""), "{text}");
    assert!(!text.contains("hunter2"), "secret value leaked: {text}");
    assert!(text.contains("Nothing was pushed."), "{text}");
    assert_eq!(env.head(&bare), before);
}

#[test]
fn interactive_push_asks_first() {
    let env = Env::new();
    let bare = env.seeded("catalog.git", &[("dev/a.yaml", "1\n")]);
    let before = env.head(&bare);
    let cat = env.catalog("compiled", &[("dev/a.yaml", "2\n")]);
    let out = env
        .push(&cat, &url(&bare), "cache")
        .args(["-i", "--author", AUTHOR])
        .write_stdin("n\n")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("Push these changes? [y/N]"));
    assert!(
        stdout(&out).contains("  changed  a.yaml"),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("Not pushed."));
    assert_eq!(env.head(&bare), before);

    let out = env
        .push(&cat, &url(&bare), "cache")
        .args(["-i", "--author", AUTHOR])
        .write_stdin("y\n")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(env.show(&bare, "main:dev/a.yaml"), "2\n");
}

#[test]
fn commodore_layout_manages_manifests_and_refs() {
    let env = Env::new();
    let bare = env.seeded(
        "catalog.git",
        &[
            ("README.md", "cluster catalog\n"),
            (".github/workflows/ci.yml", "on: push\n"),
            ("manifests/old-component/a.yaml", "a\n"),
            ("manifests/argocd/app.yaml", "v1\n"),
            ("refs/old/secret", "?{vaultkv:x}\n"),
        ],
    );
    let cat = env.catalog(
        "catalog",
        &[
            ("manifests/argocd/app.yaml", "v2\n"),
            ("manifests/argocd/extra.yaml", "e\n"),
            ("scratch/notes.txt", "not published\n"),
        ],
    );
    let out = env
        .push(&cat, &url(&bare), "cache")
        .args(["--layout", "commodore", "--author", AUTHOR])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        env.files(&bare, "main"),
        [
            ".github/workflows/ci.yml",
            "README.md",
            "manifests/argocd/app.yaml",
            "manifests/argocd/extra.yaml"
        ]
    );
    assert!(stderr(&out).contains("not published (outside the managed paths): scratch"));
    let log = env.git(&bare, &["log", "-1", "--format=%B", "main"]);
    assert!(log.contains("4 files changed in 3 components:"), "{log}");
    assert!(
        log.contains("- manifests/argocd: 1 added, 1 changed, 0 removed\n"),
        "{log}"
    );
    assert!(
        log.contains("- manifests/old-component: 0 added, 0 changed, 1 removed\n"),
        "{log}"
    );
    assert!(
        log.contains("- refs/old: 0 added, 0 changed, 1 removed\n"),
        "{log}"
    );
}

#[test]
fn an_invalid_catalog_pushes_nothing() {
    let env = Env::new();
    let bare = env.seeded("catalog.git", &[("dev/a.yaml", "1\n")]);
    let before = env.head(&bare);
    let empty = env.catalog("empty", &[]);
    let not_commodore = env.catalog("compiled", &[("dev/a.yaml", "2\n")]);
    let file = env.path("file.txt");
    std::fs::write(&file, "x").unwrap();
    let cases: Vec<(PathBuf, Vec<&str>, &str)> = vec![
        (env.path("missing"), vec![], "does not exist"),
        (empty, vec![], "is empty: nothing was compiled"),
        (file, vec![], "is not a directory"),
        (
            not_commodore,
            vec!["--layout", "commodore"],
            "has no manifests/ directory",
        ),
    ];
    for (dir, extra, message) in cases {
        let out = env
            .push(&dir, &url(&bare), "cache")
            .args(["--author", AUTHOR])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
        let err = stderr(&out);
        assert!(err.contains(message), "{err}");
        assert!(
            err.contains("nothing was pushed") || err.contains("hint:"),
            "{err}"
        );
        assert_eq!(env.head(&bare), before);
    }
    // No author anywhere (isolated HOME, no repository): an error.
    let cat = env.catalog("ok", &[("dev/a.yaml", "2\n")]);
    let out = env.push(&cat, &url(&bare), "cache").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no commit author configured"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("hint: pass --author"),
        "{}",
        stderr(&out)
    );
    assert_eq!(env.head(&bare), before);

    // A token is never sent in clear text to another machine.
    let out = env
        .push(&cat, "http://example.invalid/c.git", "cache")
        .args(["--author", AUTHOR])
        .env("GITHUB_TOKEN", "tok-abc")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("refusing to send a token in clear text"),
        "{}",
        stderr(&out)
    );

    // A password in the URL is refused, and not echoed.
    let cat = env.catalog("ok", &[("dev/a.yaml", "2\n")]);
    let out = env
        .push(
            &cat,
            "https://user:hunter2secret@example.invalid/c.git",
            "cache",
        )
        .args(["--author", AUTHOR])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("contains a password"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("hunter2secret"));
    assert_eq!(env.head(&bare), before);
}

#[test]
fn other_rejections_fail_at_once() {
    let env = Env::new();
    let bare = env.seeded("catalog.git", &[("dev/a.yaml", "1\n")]);
    let hook = bare.join("hooks/pre-receive");
    std::fs::write(&hook, "#!/bin/sh\necho 'branch is protected' >&2\nexit 1\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let cat = env.catalog("compiled", &[("dev/a.yaml", "2\n")]);
    let out = env
        .push(&cat, &url(&bare), "cache")
        .args(["--author", AUTHOR])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("pre-receive hook declined"), "{err}");
    assert!(err.contains("branch is protected"), "{err}");
    assert!(!err.contains("still rejected after"), "{err}");

    let out = strata()
        .args(["push", "--catalog-dir"])
        .arg(&cat)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--catalog-repo URL is required"),
        "{}",
        stderr(&out)
    );
}

/// Two pipelines push different targets to the same branch at the same
/// time, several rounds each; a pre-receive hook holds every push for a
/// moment so their fetch/push windows overlap. Every commit must land.
#[test]
fn racing_pushes_all_land() {
    let env = Env::new();
    let bare = env.seeded("catalog.git", &[("README.md", "r\n")]);
    slow_receive(&bare);
    const ROUNDS: usize = 3;
    let env = std::sync::Arc::new(env);
    let outputs = race(&env, &url(&bare), ROUNDS, None);
    // Seed plus every round of both pushers, in one linear history.
    assert_every_round_landed(&env, &bare, ROUNDS);
    assert_eq!(
        env.git(&bare, &["rev-list", "--merges", "main"]).trim(),
        "",
        "history stays linear"
    );
    let last = format!("round: {}\n", ROUNDS - 1);
    assert_eq!(env.show(&bare, "main:a/round.yaml"), last);
    assert_eq!(env.show(&bare, "main:b/round.yaml"), last);
    assert_eq!(env.show(&bare, "main:README.md"), "r\n");
    // The barrier makes both pushers fetch the same tip each round, so the
    // loser of every round had to re-apply.
    let retried = outputs.iter().filter(|o| o.contains("re-applied")).count();
    assert!(retried >= 1, "no push had to retry: {outputs:#?}");
}

/// A pre-receive hook that holds every push for a second, so that racing
/// pushes overlap.
fn slow_receive(bare: &Path) {
    let hook = bare.join("hooks/pre-receive");
    std::fs::write(&hook, "#!/bin/sh\ncat >/dev/null\nsleep 1\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// Two pushers `a` and `b`, `rounds` rounds each, released together every
/// round; each push must succeed (and, with a token, never print it).
/// Returns the standard output of every push.
fn race(
    env: &std::sync::Arc<Env>,
    repo_url: &str,
    rounds: usize,
    token: Option<&'static str>,
) -> Vec<String> {
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
    let handles: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|who| {
            let env = env.clone();
            let barrier = barrier.clone();
            let repo_url = repo_url.to_string();
            std::thread::spawn(move || {
                let mut outputs = Vec::new();
                for round in 0..rounds {
                    let cat = env.catalog(
                        &format!("compiled-{who}"),
                        &[(&format!("{who}/round.yaml"), &format!("round: {round}\n"))],
                    );
                    barrier.wait();
                    let mut cmd = env.push(&cat, &repo_url, &format!("cache-{who}"));
                    cmd.args(["--author", AUTHOR, "--max-attempts", "10"])
                        .args(["--message", &format!("{who} round {round}")]);
                    if let Some(t) = token {
                        cmd.env("GITHUB_TOKEN", t);
                    }
                    let out = cmd.output().unwrap();
                    assert!(out.status.success(), "{who}: {}", stderr(&out));
                    if let Some(t) = token {
                        assert!(!stdout(&out).contains(t) && !stderr(&out).contains(t));
                    }
                    outputs.push(stdout(&out));
                }
                outputs
            })
        })
        .collect();
    handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect()
}

/// The seed commit plus one commit per round of both pushers.
fn assert_every_round_landed(env: &Env, bare: &Path, rounds: usize) {
    assert_eq!(env.count(bare), 1 + 2 * rounds);
    let subjects = env.git(bare, &["log", "--format=%s", "main"]);
    for who in ["a", "b"] {
        for round in 0..rounds {
            assert!(
                subjects.contains(&format!("{who} round {round}\n")),
                "{subjects}"
            );
        }
    }
}

/// Two runs on one machine sharing the default cache take turns.
#[test]
fn runs_sharing_a_cache_take_turns() {
    let env = std::sync::Arc::new(Env::new());
    let bare = env.seeded("catalog.git", &[("README.md", "r\n")]);
    let handles: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|who| {
            let env = env.clone();
            let url = url(&bare);
            std::thread::spawn(move || {
                let cat = env.catalog(&format!("compiled-{who}"), &[(&format!("{who}/x"), who)]);
                env.push(&cat, &url, "shared-cache")
                    .args(["--author", AUTHOR])
                    .output()
                    .unwrap()
            })
        })
        .collect();
    for h in handles {
        let out = h.join().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    assert_eq!(env.files(&bare, "main"), ["README.md", "a/x", "b/x"]);
    assert_eq!(env.count(&bare), 3);
}

/// The retry loop at the library level, deterministic: the branch moves
/// between planning and pushing.
#[test]
fn a_moved_branch_is_reapplied_or_reported_after_the_last_attempt() {
    use strata::publish::{Layout, PublishError, Publisher, Request, SourceInfo};
    let env = Env::new();
    let bare = env.seeded("catalog.git", &[("other/x", "x\n")]);
    let cat = env.catalog("compiled", &[("dev/a.yaml", "a\n")]);
    let request = |cache: &str, attempts: usize| Request {
        catalog_dir: cat.clone(),
        repo_url: url(&bare),
        branch: "main".into(),
        layout: Layout::Kapitan,
        managed: vec![],
        message: None,
        author: strata::git::Identity::parse(AUTHOR),
        source: SourceInfo::default(),
        credentials: None,
        cache_dir: env.path(cache),
        max_attempts: attempts,
    };
    let move_branch = |n: &str| {
        let work = env.path(&format!("mover-{n}"));
        env.git(
            env.tmp.path(),
            &["clone", "-q", &url(&bare), work.to_str().unwrap()],
        );
        write_files(&work, &[(&format!("other/{n}"), n)]);
        env.git(&work, &["add", "-A"]);
        env.git(&work, &["commit", "-q", "-m", &format!("move {n}")]);
        env.git(&work, &["push", "-q", "origin", "main"]);
    };

    let p = Publisher::new(request("cache1", 1)).unwrap();
    let plan = p.plan().unwrap();
    move_branch("1");
    let err = p.publish(plan).unwrap_err();
    assert!(
        matches!(err, PublishError::RetriesExhausted { attempts: 1, .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("still rejected after 1 attempts"),
        "{err}"
    );

    let p = Publisher::new(request("cache2", 3)).unwrap();
    let plan = p.plan().unwrap();
    move_branch("2");
    let outcome = p.publish(plan).unwrap();
    assert!(outcome.pushed);
    assert_eq!(outcome.attempts, 2);
    let files = env.files(&bare, "main");
    assert_eq!(files, ["dev/a.yaml", "other/1", "other/2", "other/x"]);
    assert_eq!(
        env.git(&bare, &["log", "-1", "--format=%s", "main~1"])
            .trim(),
        "move 2"
    );

    // Another pipeline pushed the very same catalog meanwhile: after the
    // re-apply nothing is left to commit, and no empty commit is made.
    let cat2 = env.catalog("compiled", &[("dev/a.yaml", "a2\n")]);
    let mut r3 = request("cache3", 3);
    r3.catalog_dir = cat2.clone();
    // A different message: otherwise both commits could be byte-identical
    // (same tree, parent and second), and the second push a no-op.
    r3.message = Some("slow".into());
    let mut r4 = request("cache4", 3);
    r4.catalog_dir = cat2;
    let slow = Publisher::new(r3).unwrap();
    let slow_plan = slow.plan().unwrap();
    let fast = Publisher::new(r4).unwrap();
    assert!(fast.publish(fast.plan().unwrap()).unwrap().pushed);
    let count = env.count(&bare);
    let outcome = slow.publish(slow_plan).unwrap();
    assert!(!outcome.pushed);
    assert!(outcome.plan.is_empty());
    assert_eq!(outcome.attempts, 1);
    assert_eq!(env.count(&bare), count);
}

pub(crate) mod http {
    //! A minimal HTTP/1.1 server forwarding every request to `git
    //! http-backend` (CGI), after checking a Basic-auth token.

    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::path::PathBuf;
    use std::process::{Command, Stdio};
    use std::sync::{Arc, Mutex};

    pub struct Server {
        pub port: u16,
        /// `METHOD path status` of every request served.
        pub log: Arc<Mutex<Vec<String>>>,
    }

    pub fn start(root: PathBuf, token: &str) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let log = Arc::new(Mutex::new(Vec::new()));
        let token = token.to_string();
        let log2 = log.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let root = root.clone();
                let token = token.clone();
                let log = log2.clone();
                std::thread::spawn(move || {
                    let _ = serve(stream, &root, &token, &log);
                });
            }
        });
        Server { port, log }
    }

    fn serve(
        stream: TcpStream,
        root: &std::path::Path,
        token: &str,
        log: &Mutex<Vec<String>>,
    ) -> std::io::Result<()> {
        let mut writer = stream.try_clone()?;
        let mut reader = BufReader::new(stream);
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or("").to_string();
        let target = parts.next().unwrap_or("").to_string();
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            reader.read_line(&mut h)?;
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
            }
        }
        let header = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        if header("expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue")) {
            writer.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        }
        let mut body = Vec::new();
        if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
            loop {
                let mut size = String::new();
                reader.read_line(&mut size)?;
                let n = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
                    .unwrap_or(0);
                let mut chunk = vec![0; n + 2];
                reader.read_exact(&mut chunk)?;
                if n == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..n]);
            }
        } else if let Some(n) = header("content-length").and_then(|v| v.parse::<usize>().ok()) {
            body.resize(n, 0);
            reader.read_exact(&mut body)?;
        }
        let user = header("authorization")
            .and_then(|v| v.strip_prefix("Basic ").map(str::to_string))
            .and_then(|b| decode_base64(&b))
            .and_then(|s| {
                let (u, p) = s.split_once(':')?;
                (p == token).then(|| u.to_string())
            });
        let (path, query) = target.split_once('?').unwrap_or((&target, ""));
        let Some(user) = user else {
            log.lock().unwrap().push(format!("{method} {path} 401"));
            writer.write_all(
                b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"git\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            )?;
            return Ok(());
        };
        let mut cmd = Command::new("git");
        cmd.arg("http-backend")
            .env("GIT_PROJECT_ROOT", root)
            .env("GIT_HTTP_EXPORT_ALL", "1")
            .env("REQUEST_METHOD", &method)
            .env("PATH_INFO", path)
            .env("QUERY_STRING", query)
            .env("CONTENT_LENGTH", body.len().to_string())
            .env("REMOTE_USER", &user)
            .env("REMOTE_ADDR", "127.0.0.1")
            .env("GATEWAY_INTERFACE", "CGI/1.1")
            .env("SERVER_PROTOCOL", "HTTP/1.1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(ct) = header("content-type") {
            cmd.env("CONTENT_TYPE", ct);
        }
        if let Some(p) = header("git-protocol") {
            cmd.env("GIT_PROTOCOL", p);
        }
        if let Some(e) = header("content-encoding") {
            cmd.env("HTTP_CONTENT_ENCODING", e);
        }
        let mut child = cmd.spawn()?;
        let mut stdin = child.stdin.take().unwrap();
        let feeder = std::thread::spawn(move || {
            let _ = stdin.write_all(&body);
        });
        let out = child.wait_with_output()?;
        let _ = feeder.join();
        let raw = out.stdout;
        let (head, body) = match find(&raw, b"\r\n\r\n") {
            Some(i) => (&raw[..i], &raw[i + 4..]),
            None => match find(&raw, b"\n\n") {
                Some(i) => (&raw[..i], &raw[i + 2..]),
                None => (&raw[..0], &raw[..]),
            },
        };
        let head = String::from_utf8_lossy(head);
        let mut status = "200 OK".to_string();
        let mut response = Vec::new();
        for h in head.lines() {
            if let Some(s) = h.strip_prefix("Status:") {
                status = s.trim().to_string();
            } else if !h.is_empty() {
                response.extend_from_slice(h.as_bytes());
                response.extend_from_slice(b"\r\n");
            }
        }
        log.lock()
            .unwrap()
            .push(format!("{method} {path} {}", &status[..3]));
        writer.write_all(format!("HTTP/1.1 {status}\r\n").as_bytes())?;
        writer.write_all(&response)?;
        writer.write_all(
            format!(
                "Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )
            .as_bytes(),
        )?;
        writer.write_all(body)?;
        writer.flush()
    }

    fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
        hay.windows(needle.len()).position(|w| w == needle)
    }

    fn decode_base64(s: &str) -> Option<String> {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut bits = 0u32;
        let mut n = 0;
        let mut out = Vec::new();
        for c in s.trim().bytes().filter(|&c| c != b'=') {
            let v = A.iter().position(|&a| a == c)? as u32;
            bits = (bits << 6) | v;
            n += 6;
            if n >= 8 {
                n -= 8;
                out.push((bits >> n) as u8);
                bits &= (1 << n) - 1;
            }
        }
        String::from_utf8(out).ok()
    }
}

/// Every file below `dir` (cache, remote) as bytes, to search for secrets.
fn all_bytes(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(b) = std::fs::read(&p) {
                out.push((p, b));
            }
        }
    }
    out
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[test]
fn pushes_over_http_with_a_token_that_never_leaks() {
    let env = Env::new();
    let root = env.path("srv");
    std::fs::create_dir_all(&root).unwrap();
    let bare = env.seeded("srv/catalog.git", &[("README.md", "r\n")]);
    const TOKEN: &str = "tok-9f8e7d6c5b4a-SECRET";
    let server = http::start(root, TOKEN);
    let repo_url = format!("http://127.0.0.1:{}/catalog.git", server.port);
    let cat = env.catalog("compiled", &[("dev/a.yaml", "a\n")]);
    let check_no_leak = |out: &std::process::Output| {
        assert!(!stdout(out).contains(TOKEN), "token in stdout");
        assert!(!stderr(out).contains(TOKEN), "token in stderr");
    };

    // Without a token the server refuses: a clear error, nothing pushed.
    let out = env
        .push(&cat, &repo_url, "cache")
        .args(["--author", AUTHOR])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("fetching branch `main` from"),
        "{}",
        stderr(&out)
    );
    check_no_leak(&out);

    // A wrong token fails too, and is not echoed either.
    let out = env
        .push(&cat, &repo_url, "cache")
        .args(["--author", AUTHOR, "--token-env", "CATALOG_TOKEN"])
        .env("CATALOG_TOKEN", "wrong-token-123456")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        !stderr(&out).contains("wrong-token-123456"),
        "{}",
        stderr(&out)
    );

    // A named variable that is missing is an error before any network use.
    let out = env
        .push(&cat, &repo_url, "cache")
        .args(["--author", AUTHOR, "--token-env", "NOT_SET_ANYWHERE"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("NOT_SET_ANYWHERE is not set"),
        "{}",
        stderr(&out)
    );

    // With the token (GITHUB_TOKEN by default): fetch, dry run, push.
    let out = env
        .push(&cat, &repo_url, "cache")
        .args(["--author", AUTHOR, "--dry-run"])
        .env("GITHUB_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("  added    a.yaml"),
        "{}",
        stdout(&out)
    );
    check_no_leak(&out);
    let out = env
        .push(&cat, &repo_url, "cache")
        .args(["--author", AUTHOR])
        .env("GITHUB_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    check_no_leak(&out);
    assert_eq!(env.files(&bare, "main"), ["README.md", "dev/a.yaml"]);
    // A second change through --token-env, fetched incrementally.
    let cat = env.catalog("compiled", &[("dev/a.yaml", "a2\n")]);
    let out = env
        .push(&cat, &repo_url, "cache")
        .args(["--author", AUTHOR, "--token-env", "CATALOG_TOKEN"])
        .env("CATALOG_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    check_no_leak(&out);
    assert_eq!(env.show(&bare, "main:dev/a.yaml"), "a2\n");
    assert_eq!(env.count(&bare), 3);

    let log = server.log.lock().unwrap().clone();
    assert!(
        log.iter()
            .any(|l| l.starts_with("POST /catalog.git/git-receive-pack 200")),
        "{log:#?}"
    );
    assert!(
        log.iter()
            .any(|l| l.starts_with("POST /catalog.git/git-upload-pack 200")),
        "{log:#?}"
    );
    // Nowhere on disk: not in the cache (config, refs, logs), not in the
    // served repository, not in the home directory.
    for dir in [env.path("cache"), env.path("srv"), env.home()] {
        for (path, bytes) in all_bytes(&dir) {
            assert!(
                !contains(&bytes, TOKEN),
                "token found in {}",
                path.display()
            );
        }
    }
    let config = std::fs::read_to_string(env.path("cache/config")).unwrap();
    assert!(
        !config.contains("127.0.0.1"),
        "no remote is recorded: {config}"
    );

    // Without a token, the user's own credential helpers are used (a
    // credential manager on a laptop), by the fetch (gix) and the push (git).
    env.git(
        &env.home(),
        &[
            "config",
            "--global",
            "credential.helper",
            "!f() { test \"$1\" = get && echo username=me && echo password=$MY_HELPER_TOKEN; }; f",
        ],
    );
    let cat = env.catalog("compiled", &[("dev/a.yaml", "a3\n")]);
    let out = env
        .push(&cat, &repo_url, "cache")
        .args(["--author", AUTHOR])
        .env("MY_HELPER_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    check_no_leak(&out);
    assert_eq!(env.show(&bare, "main:dev/a.yaml"), "a3\n");
}

/// The race again through `git http-backend` with a token, where the loser
/// learns about the moved branch from the server (`[remote rejected]
/// (failed to update ref)`) or from the ref advertisement (`fetch first`).
#[test]
fn racing_pushes_over_http_all_land() {
    let env = Env::new();
    let root = env.path("srv");
    std::fs::create_dir_all(&root).unwrap();
    let bare = env.seeded("srv/catalog.git", &[("README.md", "r\n")]);
    slow_receive(&bare);
    const TOKEN: &str = "race-token-0a1b2c3d";
    let server = http::start(root, TOKEN);
    let repo_url = format!("http://127.0.0.1:{}/catalog.git", server.port);
    const ROUNDS: usize = 2;
    let env = std::sync::Arc::new(env);
    let outputs = race(&env, &repo_url, ROUNDS, Some(TOKEN));
    assert_every_round_landed(&env, &bare, ROUNDS);
    let retried = outputs.iter().filter(|o| o.contains("re-applied")).count();
    assert!(retried >= 1, "no push had to retry: {outputs:#?}");
}
