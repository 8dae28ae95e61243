//! Helpers shared by the test modules: `git` run with a fixed identity and
//! without the user's or the system's configuration.

use std::path::Path;
use std::process::Command;

/// `git` with its configuration confined to `home` and a fixed author and
/// committer.
pub fn git_cmd(home: &Path) -> Command {
    let mut c = Command::new("git");
    c.env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Seeder")
        .env("GIT_AUTHOR_EMAIL", "seed@example.com")
        .env("GIT_COMMITTER_NAME", "Seeder")
        .env("GIT_COMMITTER_EMAIL", "seed@example.com")
        .env_remove("GIT_DIR");
    c
}

/// Runs `git args` in `dir` with [`git_cmd`], asserts it succeeded and
/// returns its standard output.
pub fn git_in(home: &Path, dir: &Path, args: &[&str]) -> String {
    let mut cmd = git_cmd(home);
    cmd.current_dir(dir);
    run(cmd, args)
}

/// [`git_in`] with a throw-away home, `main` as the default branch and no
/// commit signing; returns standard output without the trailing newline.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let home = tempfile::tempdir().expect("a temporary home");
    let mut cmd = git_cmd(home.path());
    cmd.current_dir(dir).args([
        "-c",
        "commit.gpgsign=false",
        "-c",
        "init.defaultBranch=main",
    ]);
    run(cmd, args).trim().to_string()
}

fn run(mut cmd: Command, args: &[&str]) -> String {
    let out = cmd.args(args).output().expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Copies the directory tree `src` to `dst` (created), following symlinks.
/// Writes `text` to `root/rel`, making its directories.
pub fn put(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// Every file below `dir` (not directories), sorted.
pub fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

pub fn copy_tree(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.path().is_dir() {
            copy_tree(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
}

/// [`git`] with `input` on its standard input (`git mktree`).
pub fn git_input(dir: &Path, args: &[&str], input: &str) -> String {
    use std::io::Write;
    let home = tempfile::tempdir().expect("a temporary home");
    let mut child = git_cmd(home.path())
        .current_dir(dir)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("git runs");
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(input.as_bytes())
        .expect("git reads its input");
    let out = child.wait_with_output().expect("git ends");
    assert!(out.status.success(), "git {args:?} failed");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Sets `path`'s modification time two hours back: older than the minute
/// a sweep of scratch directories leaves alone.
pub fn age(path: &Path) {
    assert!(Command::new("touch")
        .args(["-d", "2 hours ago"])
        .arg(path)
        .status()
        .expect("touch runs")
        .success());
}
