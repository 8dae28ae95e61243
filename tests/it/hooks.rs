//! `strata hooks install`, the git hook script `hooks/pre-commit`, the
//! `.pre-commit-hooks.yaml` hooks through `pre-commit try-repo`, and
//! `strata completions`.
//!
//! Every git command runs with the user's and the system's git configuration
//! shut out, so a `core.hooksPath` or identity set on the machine cannot leak
//! into what is tested.

use crate::strata;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const HOOK: &str = include_str!("../../hooks/pre-commit");

fn crate_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn strata_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_strata"))
}

fn isolate(cmd: &mut Command) {
    cmd.env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "strata test")
        .env("GIT_AUTHOR_EMAIL", "test@example.invalid")
        .env("GIT_COMMITTER_NAME", "strata test")
        .env("GIT_COMMITTER_EMAIL", "test@example.invalid")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE");
}

fn git(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(dir).args(args);
    isolate(&mut cmd);
    let out = cmd.output().expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn init_repo(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
}

/// `strata hooks install ARGS` run in `dir`: (exit code, stdout, stderr).
fn install(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let mut cmd = strata();
    cmd.current_dir(dir).args(["hooks", "install"]).args(args);
    cmd.env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE");
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o111 == 0o111
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    let mut entries: Vec<_> = std::fs::read_dir(from)
        .unwrap()
        .map(|e| e.unwrap())
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name();
        // A catalog compiled in the source tree is not part of the example.
        if name == "compiled" {
            continue;
        }
        let (src, dst) = (e.path(), to.join(&name));
        if e.file_type().unwrap().is_dir() {
            copy_dir(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// A git repository holding examples/minimal with its compiled catalog, all
/// committed: the state both hooks must accept.
fn example_repo(dir: &Path) {
    copy_dir(&crate_root().join("examples/minimal"), dir);
    let out = strata()
        .current_dir(dir)
        .args(["compile", "--quiet"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "compile: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dir.join("compiled").is_dir());
    init_repo(dir);
    git(dir, &["add", "-A"]);
    git(
        dir,
        &["commit", "-q", "-m", "example inventory and catalog"],
    );
}

/// Breaks the inventory: a target now includes a class that does not exist.
fn break_inventory(dir: &Path) {
    let t = dir.join("inventory/targets/dev.yml");
    let text = std::fs::read_to_string(&t).unwrap();
    let broken = text.replacen("classes:\n", "classes:\n  - no.such.klass\n", 1);
    assert_ne!(text, broken, "dev.yml has a classes: list");
    std::fs::write(&t, broken).unwrap();
}

/// Changes a parameter without recompiling: the catalog is now stale.
fn stale_catalog(dir: &Path) {
    let c = dir.join("inventory/classes/components/echo.yml");
    let text = std::fs::read_to_string(&c).unwrap();
    let changed = text.replacen("replicas: 1", "replicas: 3", 1);
    assert_ne!(text, changed);
    std::fs::write(&c, changed).unwrap();
}

#[test]
fn install_into_a_fresh_repository_then_again() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    init_repo(&repo);
    let hook = repo.join(".git/hooks/pre-commit");

    let (code, out, err) = install(&repo, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("installed the strata pre-commit hook"),
        "{out}"
    );
    assert!(out.contains(".git/hooks/pre-commit"), "{out}");
    assert_eq!(std::fs::read_to_string(&hook).unwrap(), HOOK);
    assert!(is_executable(&hook));

    // Re-installing our own hook is fine and changes nothing.
    let (code, out, err) = install(&repo, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("already installed"), "{out}");
    assert_eq!(std::fs::read_to_string(&hook).unwrap(), HOOK);

    // From a subdirectory it still finds the repository's hooks.
    let sub = repo.join("inventory/classes");
    std::fs::create_dir_all(&sub).unwrap();
    let (code, out, _) = install(&sub, &[]);
    assert_eq!(code, 0);
    assert!(out.contains("already installed"), "{out}");
}

#[test]
fn foreign_hook_is_refused_and_force_keeps_a_backup() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    init_repo(&repo);
    let hooks = repo.join(".git/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let hook = hooks.join("pre-commit");
    let foreign = "#!/bin/sh\nexec make check\n";
    std::fs::write(&hook, foreign).unwrap();

    let (code, out, err) = install(&repo, &[]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("pre-commit already exists and is not strata's hook"),
        "{err}"
    );
    assert!(err.contains(&hook.display().to_string()), "{err}");
    assert!(err.contains("--force"), "{err}");
    assert_eq!(std::fs::read_to_string(&hook).unwrap(), foreign);
    assert!(!hooks.join("pre-commit.strata-backup").exists());

    let (code, out, err) = install(&repo, &["--force"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("pre-commit.strata-backup"), "{out}");
    assert_eq!(
        std::fs::read_to_string(hooks.join("pre-commit.strata-backup")).unwrap(),
        foreign
    );
    assert_eq!(std::fs::read_to_string(&hook).unwrap(), HOOK);
    assert!(is_executable(&hook));

    // --force over our own hook needs no backup and keeps the first one.
    let (code, out, _) = install(&repo, &["--force"]);
    assert_eq!(code, 0);
    assert!(out.contains("already installed"), "{out}");
    assert_eq!(
        std::fs::read_to_string(hooks.join("pre-commit.strata-backup")).unwrap(),
        foreign
    );
}

#[test]
fn install_respects_core_hooks_path_and_worktrees() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    init_repo(&repo);
    git(&repo, &["config", "core.hooksPath", ".githooks"]);
    let (code, out, err) = install(&repo, &[]);
    assert_eq!(code, 0, "{err}");
    let hook = repo.join(".githooks/pre-commit");
    assert_eq!(std::fs::read_to_string(&hook).unwrap(), HOOK, "{out}");
    assert!(!repo.join(".git/hooks/pre-commit").exists());

    // A linked worktree shares the main repository's hooks.
    let plain = tmp.path().join("plain");
    init_repo(&plain);
    std::fs::write(plain.join("f"), "x\n").unwrap();
    git(&plain, &["add", "f"]);
    git(&plain, &["commit", "-q", "-m", "f"]);
    let wt = tmp.path().join("wt");
    git(
        &plain,
        &["worktree", "add", "-q", "-b", "other", wt.to_str().unwrap()],
    );
    let (code, _, err) = install(&wt, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read_to_string(plain.join(".git/hooks/pre-commit")).unwrap(),
        HOOK
    );
}

#[test]
fn install_outside_a_repository_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = strata();
    cmd.current_dir(tmp.path())
        .args(["hooks", "install"])
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CEILING_DIRECTORIES", tmp.path().parent().unwrap())
        .env_remove("GIT_DIR");
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("is not inside a git repository"), "{err}");
}

#[test]
fn the_git_hook_passes_a_clean_repository_and_blocks_a_broken_one() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    example_repo(&repo);
    let (code, _, err) = install(&repo, &[]);
    assert_eq!(code, 0, "{err}");

    // Through `git commit`, as a user meets it, with the built binary.
    let commit = |msg: &str| {
        let mut cmd = Command::new("git");
        cmd.arg("-C")
            .arg(&repo)
            .args(["commit", "-q", "--allow-empty", "-m", msg]);
        isolate(&mut cmd);
        cmd.env("STRATA_BIN", strata_bin());
        cmd.output().unwrap()
    };
    let out = commit("clean");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("catalog is up to date"));

    stale_catalog(&repo);
    git(&repo, &["add", "-A"]);
    let out = commit("stale");
    assert!(!out.status.success());
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("catalog differs"), "{text}");
    assert!(text.contains("compiled/dev/"), "{text}");

    break_inventory(&repo);
    git(&repo, &["add", "-A"]);
    let out = commit("broken");
    assert!(!out.status.success());
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("no.such.klass"), "{text}");

    // Without strata, a clear message (and the commit is stopped).
    let mut cmd = Command::new("sh");
    cmd.arg(repo.join(".git/hooks/pre-commit"))
        .current_dir(&repo)
        .env("STRATA_BIN", tmp.path().join("no-strata-here"));
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot find"), "{err}");
    assert!(err.contains("STRATA_BIN"), "{err}");
}

/// The pre-commit executable: `STRATA_PRECOMMIT`, else `pre-commit` on PATH.
/// None means skip, which CI (env `CI`) never accepts.
fn pre_commit() -> Option<PathBuf> {
    let candidate = std::env::var_os("STRATA_PRECOMMIT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("pre-commit"));
    let works = Command::new(&candidate)
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if works {
        return Some(candidate);
    }
    let why = format!(
        "pre-commit not found ({}): set STRATA_PRECOMMIT or put pre-commit on PATH (pip install pre-commit)",
        candidate.display()
    );
    assert!(std::env::var_os("CI").is_none(), "{why}");
    eprintln!("skipping the pre-commit test: {why}");
    None
}

/// `pre-commit try-repo HOOKS_REPO HOOK --all-files` in `repo`, with the
/// built strata first on PATH.
fn try_repo(pre_commit: &Path, hooks_repo: &Path, repo: &Path, hook: &str, home: &Path) -> Output {
    let bin_dir = strata_bin().parent().unwrap().to_path_buf();
    let path = std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    let mut cmd = Command::new(pre_commit);
    cmd.current_dir(repo)
        .arg("try-repo")
        .arg(hooks_repo)
        .args([hook, "--all-files", "--color", "never"])
        .env("PATH", path)
        .env("PRE_COMMIT_HOME", home)
        .env_remove("STRATA_BIN");
    isolate(&mut cmd);
    cmd.output().unwrap()
}

#[test]
fn pre_commit_try_repo_runs_the_system_hooks() {
    let Some(pre_commit) = pre_commit() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    // The hooks repository: try-repo reads the manifest from a git commit.
    let hooks_repo = tmp.path().join("hooks-repo");
    init_repo(&hooks_repo);
    std::fs::copy(
        crate_root().join(".pre-commit-hooks.yaml"),
        hooks_repo.join(".pre-commit-hooks.yaml"),
    )
    .unwrap();
    git(&hooks_repo, &["add", "-A"]);
    git(&hooks_repo, &["commit", "-q", "-m", "hooks"]);

    let repo = tmp.path().join("repo");
    example_repo(&repo);
    let home = tmp.path().join("pre-commit-home");
    let text = |o: &Output| {
        String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr)
    };

    for hook in ["strata-lint-system", "strata-compile-check-system"] {
        let out = try_repo(&pre_commit, &hooks_repo, &repo, hook, &home);
        let t = text(&out);
        assert!(out.status.success(), "{hook}: {t}");
        assert!(t.contains("Passed"), "{hook}: {t}");
    }

    // Staged, as a commit would have them (pre-commit stashes unstaged edits).
    stale_catalog(&repo);
    git(&repo, &["add", "-A"]);
    let out = try_repo(
        &pre_commit,
        &hooks_repo,
        &repo,
        "strata-compile-check-system",
        &home,
    );
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("Failed"), "{t}");
    assert!(t.contains("catalog differs"), "{t}");

    break_inventory(&repo);
    git(&repo, &["add", "-A"]);
    let out = try_repo(&pre_commit, &hooks_repo, &repo, "strata-lint-system", &home);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("Failed"), "{t}");
    assert!(t.contains("no.such.klass"), "{t}");
}

#[test]
fn completions_for_each_shell_name_the_subcommands() {
    for shell in ["bash", "zsh", "fish"] {
        let out = strata().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(!text.trim().is_empty(), "{shell}");
        for sub in ["compile", "lint", "inventory", "hooks", "completions"] {
            assert!(text.contains(sub), "{shell} completion lacks {sub}");
        }
        // Flags of a subcommand are completed too.
        assert!(text.contains("inventory-path"), "{shell}");
    }
    let out = strata().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
