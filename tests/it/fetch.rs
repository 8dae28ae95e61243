//! `strata fetch` against repositories created by each test: bare
//! repositories over file:// and a `git http-backend` on 127.0.0.1 behind a
//! token (the server of the publish tests). No test touches the network.

use crate::publish::http;
use crate::strata;
use crate::support::git_in;
use std::path::{Path, PathBuf};

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

    fn git(&self, dir: &Path, args: &[&str]) -> String {
        git_in(&self.path("home"), dir, args)
    }

    /// A work repository `<name>-src` with one commit of `files` on `main`,
    /// and its bare copy `<root>/<name>.git` that dependencies fetch from.
    fn repo(&self, root: &str, name: &str, files: &[(&str, &str)]) -> PathBuf {
        let work = self.path(&format!("{name}-src"));
        write_files(&work, files);
        self.git(&work, &["init", "-q", "-b", "main"]);
        self.git(&work, &["add", "-A"]);
        self.git(&work, &["commit", "-q", "-m", "one"]);
        let bare = self.path(root).join(format!("{name}.git"));
        std::fs::create_dir_all(bare.parent().unwrap()).unwrap();
        self.git(
            self.tmp.path(),
            &[
                "clone",
                "-q",
                "--bare",
                work.to_str().unwrap(),
                bare.to_str().unwrap(),
            ],
        );
        bare
    }

    /// Commits `files` in the work repository of `name` and pushes `main`
    /// (and `tag`, if given) to its bare copy.
    fn commit(&self, bare: &Path, name: &str, files: &[(&str, &str)], tag: Option<&str>) -> String {
        let work = self.path(&format!("{name}-src"));
        write_files(&work, files);
        self.git(&work, &["add", "-A"]);
        self.git(&work, &["commit", "-q", "-m", "more"]);
        if let Some(t) = tag {
            self.git(&work, &["tag", t]);
        }
        let url = bare.to_str().unwrap();
        self.git(&work, &["push", "-q", "--tags", url, "main"]);
        self.git(&work, &["rev-parse", "HEAD"]).trim().to_string()
    }

    fn fetch(&self, deps: &str) -> assert_cmd::Command {
        std::fs::write(self.path("deps.yaml"), deps).unwrap();
        let mut c = strata();
        c.current_dir(self.tmp.path())
            .env("HOME", self.path("home"))
            .env("XDG_CONFIG_HOME", self.path("home/.config"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("GITHUB_TOKEN")
            .args(["fetch", "--deps", "deps.yaml", "--work-dir", "work"]);
        c
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }
}

fn write_files(root: &Path, files: &[(&str, &str)]) {
    for (path, content) in files {
        crate::support::put(root, path, content);
    }
}

fn url(p: &Path) -> String {
    format!("file://{}", p.display())
}

/// The stderr of `cmd`, which must fail with exit code 2.
fn failure_stderr(cmd: &mut assert_cmd::Command) -> String {
    out(cmd.assert().code(2).get_output()).1
}

fn out(o: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Bare repositories below `dir` (directories holding `HEAD` and `objects`).
fn bare_repos(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        if d.join("HEAD").is_file() && d.join("objects").is_dir() {
            found.push(d);
            continue;
        }
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            }
        }
    }
    found.sort();
    found
}

#[test]
fn clones_each_remote_once_and_checks_out_every_dependency() {
    let env = Env::new();
    let a = env.repo(
        "srv",
        "multi",
        &[
            ("component/class/one.yml", "one: 1\n"),
            ("packages/p/class/p.yml", "p: 1\n"),
            ("README.md", "multi\n"),
        ],
    );
    let b = env.repo(
        "srv",
        "single",
        &[("class/single.yml", "s: 1\n"), ("bin/run", "x")],
    );
    let deps = format!(
        "parameters:\n  components:\n    one: {{url: {u}, version: main, path: component}}\n    p: {{url: {u}, version: main, path: packages/p}}\n    whole: {{url: {u}, version: main}}\n    single: {{url: {s}, version: main}}\n",
        u = url(&a),
        s = url(&b)
    );
    let o = env.fetch(&deps).assert().success().get_output().clone();
    let (stdout, stderr) = out(&o);
    assert_eq!(stdout.lines().count(), 4, "{stdout}");
    assert!(stdout.lines().all(|l| l.ends_with(" updated")), "{stdout}");
    assert!(
        stderr.contains("4 dependencies from 2 repositories"),
        "{stderr}"
    );
    // Not a terminal: one line per repository.
    assert!(
        stderr.contains(&format!("{}: 3 checked out, 3 changed", url(&a))),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("{}: 1 checked out, 1 changed", url(&b))),
        "{stderr}"
    );

    // One bare repository per remote, however many dependencies use it.
    let repos = bare_repos(&env.path("work/dependencies/.repos"));
    assert_eq!(repos.len(), 2, "{repos:?}");
    assert!(repos
        .iter()
        .all(|r| r.extension().is_some_and(|e| e == "git")));

    // `path` dependencies are symlinks into their sub-directory.
    assert_eq!(env.read("work/dependencies/one/class/one.yml"), "one: 1\n");
    assert_eq!(env.read("work/dependencies/p/class/p.yml"), "p: 1\n");
    let link = std::fs::read_link(env.path("work/dependencies/one")).unwrap();
    assert_eq!(link, Path::new(".one/component"));
    assert_eq!(env.read("work/dependencies/whole/README.md"), "multi\n");
    assert_eq!(
        env.read("work/dependencies/single/class/single.yml"),
        "s: 1\n"
    );

    // Every checkout is a linked git worktree, clean, also the sparse ones.
    let head = env.git(&env.path("multi-src"), &["rev-parse", "HEAD"]);
    for d in ["one", "whole", "p"] {
        let dir = env.path(&format!("work/dependencies/{d}"));
        assert_eq!(env.git(&dir, &["status", "--porcelain"]), "", "{d}");
        assert_eq!(env.git(&dir, &["rev-parse", "HEAD"]), head, "{d}");
    }
    let single = env.path("work/dependencies/single");
    assert_eq!(env.git(&single, &["status", "--porcelain"]), "");
    std::fs::write(env.path("work/dependencies/whole/README.md"), "edited\n").unwrap();
    assert_eq!(
        env.git(
            &env.path("work/dependencies/whole"),
            &["status", "--porcelain"]
        ),
        " M README.md\n"
    );
    std::fs::write(env.path("work/dependencies/whole/README.md"), "multi\n").unwrap();

    // Up to date: nothing written.
    let o = env.fetch(&deps).assert().success().get_output().clone();
    let (stdout, _) = out(&o);
    assert!(
        stdout.lines().all(|l| l.ends_with(" up to date")),
        "{stdout}"
    );
}

#[test]
fn a_version_change_moves_the_checkout_and_local_edits_are_kept() {
    let env = Env::new();
    let bare = env.repo(
        "srv",
        "c",
        &[("class/c.yml", "v: 1\n"), ("old.txt", "old\n")],
    );
    env.git(&env.path("c-src"), &["tag", "v1.0.0"]);
    env.git(
        &env.path("c-src"),
        &["push", "-q", "--tags", bare.to_str().unwrap()],
    );
    std::fs::remove_file(env.path("c-src/old.txt")).unwrap();
    let second = env.commit(
        &bare,
        "c",
        &[("class/c.yml", "v: 2\n"), ("new/n.txt", "n\n")],
        Some("v2.0.0"),
    );
    // Quoted: an abbreviated commit id such as `9e80123456` is a number in YAML.
    let deps = |v: &str| format!("- {{name: c, url: {}, version: '{v}'}}\n", url(&bare));

    env.fetch(&deps("v1.0.0")).assert().success();
    assert_eq!(env.read("work/dependencies/c/class/c.yml"), "v: 1\n");
    assert!(env.path("work/dependencies/c/old.txt").is_file());

    // A new version: changed files rewritten, removed ones deleted.
    let o = env
        .fetch(&deps("v2.0.0"))
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(out(&o).0.contains(&second[..12]), "{}", out(&o).0);
    assert_eq!(env.read("work/dependencies/c/class/c.yml"), "v: 2\n");
    assert!(!env.path("work/dependencies/c/old.txt").exists());
    // The worktree moved with it.
    let checkout = env.path("work/dependencies/c");
    assert_eq!(env.git(&checkout, &["rev-parse", "HEAD"]).trim(), second);
    assert_eq!(env.git(&checkout, &["status", "--porcelain"]), "");
    assert_eq!(env.read("work/dependencies/c/new/n.txt"), "n\n");

    // A commit id (abbreviated) works too.
    env.fetch(&deps(&second[..10])).assert().success();

    // A local edit blocks the move back, naming the dependency and file.
    std::fs::write(env.path("work/dependencies/c/class/c.yml"), "mine\n").unwrap();
    let stderr = failure_stderr(&mut env.fetch(&deps("v1.0.0")));
    assert!(stderr.contains("dependency `c`"), "{stderr}");
    assert!(stderr.contains("class/c.yml"), "{stderr}");
    assert!(stderr.contains("--force"), "{stderr}");
    assert_eq!(env.read("work/dependencies/c/class/c.yml"), "mine\n");
    // Untouched even when the version does not change.
    env.fetch(&deps("v2.0.0")).assert().code(2);
    assert_eq!(env.read("work/dependencies/c/class/c.yml"), "mine\n");

    // --force discards it.
    env.fetch(&deps("v1.0.0")).arg("--force").assert().success();
    assert_eq!(env.read("work/dependencies/c/class/c.yml"), "v: 1\n");

    // A branch moves with the remote.
    env.fetch(&deps("main")).assert().success();
    let third = env.commit(&bare, "c", &[("class/c.yml", "v: 3\n")], None);
    let o = env
        .fetch(&deps("main"))
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(out(&o).0.contains(&third[..12]));
    assert_eq!(env.read("work/dependencies/c/class/c.yml"), "v: 3\n");
}

/// Probe 27 (fetched-blob-read-whole): a fetched file was read whole
/// and written whatever its size (one blob of 2 GB of zeros packs into
/// 2 MB: 2.1 GB written). Its header is checked against
/// STRATA_CHECKOUT_FILE_BYTES (256 MiB) first; lowered here.
#[test]
fn a_fetched_file_larger_than_the_file_limit_is_refused() {
    let env = Env::new();
    let bare = env.repo("srv", "c", &[("big", &"z".repeat(5000)), ("a", "a")]);
    let stderr = failure_stderr(
        env.fetch(&format!(
            "- {{name: c, url: {}, version: main}}\n",
            url(&bare)
        ))
        .env("STRATA_CHECKOUT_FILE_BYTES", "4000"),
    );
    assert!(
        stderr.contains("dependency `c`")
            && stderr.contains("big` is 5000 bytes: a fetched file may hold at most 4000 bytes (STRATA_CHECKOUT_FILE_BYTES)"),
        "{stderr}"
    );
    assert!(!env.path("work/dependencies/c/big").exists());
}

#[test]
fn errors_name_the_dependency_url_and_version() {
    let env = Env::new();
    let bare = env.repo("srv", "c", &[("a", "a")]);
    let stderr = failure_stderr(&mut env.fetch(&format!(
        "- {{name: c, url: {}, version: nope}}\n",
        url(&bare)
    )));
    assert!(stderr.contains("dependency `c`"), "{stderr}");
    assert!(stderr.contains(&url(&bare)), "{stderr}");
    assert!(stderr.contains("version `nope`"), "{stderr}");
    assert!(stderr.contains("unknown version"), "{stderr}");

    let missing = env.path("srv/missing.git");
    let stderr = failure_stderr(&mut env.fetch(&format!(
        "- {{name: m, url: {}, version: main}}\n",
        url(&missing)
    )));
    assert!(
        stderr.contains("dependency `m`") && stderr.contains("missing.git"),
        "{stderr}"
    );
    assert!(stderr.contains("cannot fetch"), "{stderr}");

    // A password in the URL is refused and not echoed.
    let o = env
        .fetch("- {name: s, url: 'https://me:hunter2@example.com/x.git', version: main}\n")
        .assert()
        .code(2)
        .get_output()
        .clone();
    let (stdout, stderr) = out(&o);
    assert!(
        !stderr.contains("hunter2") && !stdout.contains("hunter2"),
        "{stderr}"
    );
}

#[test]
fn offline_uses_what_is_on_disk_and_fails_clearly() {
    let env = Env::new();
    let bare = env.repo("srv", "c", &[("a", "1")]);
    let deps = format!("- {{name: c, url: {}, version: main}}\n", url(&bare));
    let stderr = failure_stderr(env.fetch(&deps).arg("--offline"));
    assert!(
        stderr.contains("offline") && stderr.contains("dependency `c`"),
        "{stderr}"
    );

    env.fetch(&deps).assert().success();
    // The remote disappears: offline still works from disk.
    std::fs::rename(&bare, env.path("srv/gone.git")).unwrap();
    env.fetch(&deps).arg("--offline").assert().success();
    env.fetch(&deps).assert().code(2);
}

fn all_bytes(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_file() {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out
}

#[test]
fn fetches_over_http_with_a_token_that_never_leaks() {
    let env = Env::new();
    const TOKEN: &str = "fetch-tok-7a6b5c4d3e2f-SECRET";
    let bare = env.repo("srv", "comp", &[("class/comp.yml", "c: 1\n")]);
    env.git(&env.path("comp-src"), &["tag", "v1"]);
    env.git(
        &env.path("comp-src"),
        &["push", "-q", "--tags", bare.to_str().unwrap()],
    );
    let server = http::start(env.path("srv"), TOKEN);
    let http_url = format!("http://127.0.0.1:{}/comp.git", server.port);
    let deps = format!("- {{name: comp, url: '{http_url}', version: v1}}\n");
    let check = |o: &std::process::Output| {
        let (stdout, stderr) = out(o);
        assert!(
            !stdout.contains(TOKEN) && !stderr.contains(TOKEN),
            "{stdout}{stderr}"
        );
    };

    // No token: refused by the server, a clear error.
    let o = env.fetch(&deps).assert().code(2).get_output().clone();
    check(&o);
    assert!(out(&o).1.contains("dependency `comp`"), "{}", out(&o).1);
    // Wrong token.
    let o = env
        .fetch(&deps)
        .env("GITHUB_TOKEN", "not-the-token-123")
        .assert()
        .code(2)
        .get_output()
        .clone();
    check(&o);

    let o = env
        .fetch(&deps)
        .args(["--token-env", "COMP_TOKEN"])
        .env("COMP_TOKEN", TOKEN)
        .assert()
        .success()
        .get_output()
        .clone();
    check(&o);
    assert_eq!(env.read("work/dependencies/comp/class/comp.yml"), "c: 1\n");

    // The push URL is the SSH form; the config holds no token.
    let repos = bare_repos(&env.path("work/dependencies/.repos"));
    assert_eq!(repos.len(), 1);
    let config = std::fs::read_to_string(repos[0].join("config")).unwrap();
    assert!(
        config.contains("pushurl = \"git@127.0.0.1:comp.git\""),
        "{config}"
    );
    let checkout = env.path("work/dependencies/comp");
    assert_eq!(
        env.git(&checkout, &["remote", "get-url", "--push", "origin"])
            .trim(),
        "git@127.0.0.1:comp.git"
    );
    for (path, bytes) in all_bytes(&env.path("work"))
        .into_iter()
        .chain(all_bytes(&env.path("home")))
    {
        assert!(
            !bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes()),
            "token found in {}",
            path.display()
        );
    }

    // Up to date with a tag already on disk: no request at all.
    let before = server.log.lock().unwrap().len();
    let o = env
        .fetch(&deps)
        .env("GITHUB_TOKEN", TOKEN)
        .assert()
        .success()
        .get_output()
        .clone();
    check(&o);
    assert_eq!(
        server.log.lock().unwrap().len(),
        before,
        "a request was made"
    );
    assert!(out(&o).0.contains("up to date"));

    // A branch asks the remote, and a new commit moves the checkout.
    let deps = format!("- {{name: comp, url: '{http_url}', version: main}}\n");
    let third = env.commit(&bare, "comp", &[("class/comp.yml", "c: 2\n")], None);
    let o = env
        .fetch(&deps)
        .env("GITHUB_TOKEN", TOKEN)
        .assert()
        .success()
        .get_output()
        .clone();
    check(&o);
    assert!(out(&o).0.contains(&third[..12]));
    assert_eq!(env.read("work/dependencies/comp/class/comp.yml"), "c: 2\n");

    // The branch unchanged: the ref listing only, no pack negotiated.
    let before = server.log.lock().unwrap().len();
    env.fetch(&deps)
        .env("GITHUB_TOKEN", TOKEN)
        .assert()
        .success();
    let log = server.log.lock().unwrap()[before..].to_vec();
    let posts = log.iter().filter(|l| l.starts_with("POST")).count();
    assert_eq!(posts, 1, "{log:?}");
}

#[test]
fn installs_jsonnet_bundler_dependencies_with_a_lock() {
    let env = Env::new();
    // A library whose sub-directory depends on another library.
    let base = env.repo("srv", "base-lib", &[("base.libsonnet", "{ b: 1 }\n")]);
    let lib_deps = format!(
        r#"{{"version": 1, "dependencies": [{{"source": {{"git": {{"remote": "{}"}}}}, "version": "main"}}]}}"#,
        url(&base)
    );
    let lib = env.repo(
        "srv",
        "kube",
        &[
            ("jsonnet/kube/kube.libsonnet", "{ k: 1 }\n"),
            ("jsonnet/kube/jsonnetfile.json", &lib_deps),
            ("other/x", "x"),
        ],
    );
    let comp = env.path("comp");
    std::fs::create_dir_all(&comp).unwrap();
    std::fs::write(
        comp.join("jsonnetfile.jsonnet"),
        r#"{ version: 1, dependencies: [ { source: { git: { remote: std.extVar('kube_url'), subdir: 'jsonnet/kube' } }, version: std.extVar('kube_version') } ], legacyImports: true }"#,
    )
    .unwrap();
    let run = |version: &str| {
        let mut c = strata();
        c.current_dir(env.path(""))
            .env("HOME", env.path("home"))
            .env_remove("GITHUB_TOKEN")
            .args(["fetch", "--jsonnetfile", "comp", "--work-dir", "work"])
            .arg("--ext-str")
            .arg(format!("kube_url={}", url(&lib)))
            .arg("--ext-str")
            .arg(format!("kube_version={version}"));
        c
    };
    let o = run("main").assert().success().get_output().clone();
    let (stdout, _) = out(&o);
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
    let kube_name = format!("local{}/jsonnet/kube", env.path("srv/kube").display());
    let vendored = comp.join("vendor").join(&kube_name);
    assert_eq!(
        std::fs::read_to_string(vendored.join("kube.libsonnet")).unwrap(),
        "{ k: 1 }\n"
    );
    assert!(!comp
        .join("vendor")
        .join(format!("local{}/other", env.path("srv/kube").display()))
        .exists());
    // Legacy names: the last element of the subdir, the repository name.
    assert_eq!(
        std::fs::read_to_string(comp.join("vendor/kube/kube.libsonnet")).unwrap(),
        "{ k: 1 }\n"
    );
    assert_eq!(
        std::fs::read_to_string(comp.join("vendor/base-lib/base.libsonnet")).unwrap(),
        "{ b: 1 }\n"
    );
    let lock: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(comp.join("jsonnetfile.lock.json")).unwrap())
            .unwrap();
    let head = env.git(&lib, &["rev-parse", "main"]).trim().to_string();
    let entries = lock["dependencies"].as_array().unwrap();
    assert_eq!(entries.len(), 2);
    let kube = entries
        .iter()
        .find(|e| e["source"]["git"]["subdir"] == "jsonnet/kube")
        .unwrap();
    assert_eq!(kube["version"], head.as_str());

    // The lock pins: a new commit upstream is not taken without --update.
    env.commit(
        &lib,
        "kube",
        &[("jsonnet/kube/kube.libsonnet", "{ k: 2 }\n")],
        None,
    );
    let o = run("main").assert().success().get_output().clone();
    assert!(
        out(&o).0.lines().all(|l| l.ends_with("up to date")),
        "{}",
        out(&o).0
    );
    run("main").arg("--update").assert().success();
    assert_eq!(
        std::fs::read_to_string(vendored.join("kube.libsonnet")).unwrap(),
        "{ k: 2 }\n"
    );
    // Unknown versions name the package and the version.
    let o = run("no-such")
        .arg("--update")
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert!(out(&o).1.contains("version `no-such`"), "{}", out(&o).1);
}

#[test]
fn a_version_only_override_without_a_dependency_is_an_error() {
    let env = Env::new();
    let stderr = failure_stderr(
        &mut env.fetch("parameters:\n  components:\n    ghost:\n      version: v1.2.3\n"),
    );
    assert!(
        stderr.contains("`version`-only override for `ghost`"),
        "{stderr}"
    );
    assert!(stderr.contains("deps.yaml"), "{stderr}");
}

/// `strata catalog compile` without `--local`: the global and tenant
/// configuration, two packages and the components of the `basic` Commodore
/// fixture, each committed into its own bare repository (file://), fetched
/// in Commodore's order into an empty working directory.
mod catalog {
    use super::{git_in, Env};
    use crate::strata;
    use std::path::{Path, PathBuf};

    fn fixture() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/commodore/basic")
    }

    fn expected() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/commodore/basic.expected")
    }

    /// Copies `src` into `dst`, rewriting the fixture's remote URLs to the
    /// test's bare repositories.
    fn copy(src: &Path, dst: &Path, remotes: &Path) {
        std::fs::create_dir_all(dst).unwrap();
        for e in std::fs::read_dir(src).unwrap() {
            let e = e.unwrap();
            let to = dst.join(e.file_name());
            if e.path().is_dir() {
                copy(&e.path(), &to, remotes);
            } else {
                let text = std::fs::read_to_string(e.path()).unwrap();
                std::fs::write(to, rewrite(&text, remotes)).unwrap();
            }
        }
    }

    fn rewrite(text: &str, remotes: &Path) -> String {
        let base = format!("file://{}/", remotes.display());
        [
            "https://github.com/projectsyn/",
            "https://git.example.com/components/",
            "https://git.example.com/packages/",
        ]
        .iter()
        .fold(text.to_string(), |t, from| t.replace(from, &base))
    }

    fn clear(dir: &Path) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.file_name().is_some_and(|n| n != ".git") {
                if p.is_dir() {
                    std::fs::remove_dir_all(&p).unwrap();
                } else {
                    std::fs::remove_file(&p).unwrap();
                }
            }
        }
    }

    /// A source directory, an extra file to add, and the refs to create
    /// (`branch:NAME` or a tag) on the commit holding them.
    type Version<'a> = (&'a Path, Option<(&'a str, &'a str)>, &'a [&'a str]);

    struct Remotes {
        env: Env,
        root: PathBuf,
    }

    impl Remotes {
        /// A bare repository `<name>.git` whose commits hold, in turn, each
        /// `(source directory, extra file, refs to create)` version.
        fn repo(&self, name: &str, versions: &[Version]) {
            let home = self.env.path("home");
            let work = self.env.path(&format!("src-{name}"));
            std::fs::create_dir_all(&work).unwrap();
            git_in(&home, &work, &["init", "-q", "-b", "main"]);
            for (i, (src, extra, refs)) in versions.iter().enumerate() {
                clear(&work);
                copy(src, &work, &self.root);
                if let Some((f, text)) = extra {
                    std::fs::write(work.join(f), text).unwrap();
                }
                git_in(&home, &work, &["add", "-A"]);
                git_in(&home, &work, &["commit", "-q", "-m", &format!("v{i}")]);
                for r in *refs {
                    if let Some(branch) = r.strip_prefix("branch:") {
                        git_in(&home, &work, &["branch", "-f", branch]);
                    } else {
                        git_in(&home, &work, &["tag", r]);
                    }
                }
            }
            let bare = self.root.join(format!("{name}.git"));
            git_in(
                &home,
                &self.env.path(""),
                &[
                    "clone",
                    "-q",
                    "--bare",
                    work.to_str().unwrap(),
                    bare.to_str().unwrap(),
                ],
            );
        }
    }

    /// Remotes for the `basic` fixture; `main` of the global repository
    /// pins a version argocd does not have, `main` of the tenant repository
    /// changes argocd's namespace, and nginx's `master` (the global
    /// version) differs from `v1.9.0` (the version the ingress package sets).
    fn remotes() -> Remotes {
        let env = Env::new();
        let root = env.path("remotes");
        std::fs::create_dir_all(&root).unwrap();
        let r = Remotes { env, root };
        let fx = fixture();
        let deps = fx.join("dependencies");
        let scratch = r.env.path("variants");
        // The variants: edited copies of fixture directories.
        let variant = |name: &str, src: &Path, file: &str, from: &str, to: &str| -> PathBuf {
            let dir = scratch.join(name);
            copy(src, &dir, &r.root);
            let f = dir.join(file);
            let text = std::fs::read_to_string(&f).unwrap();
            assert!(text.contains(from), "{}", f.display());
            std::fs::write(&f, text.replace(from, to)).unwrap();
            dir
        };
        let global = fx.join("inventory/classes/global");
        let global_bad = variant(
            "global",
            &global,
            "common.yml",
            "version: v7.1.0",
            "version: v9-missing",
        );
        r.repo(
            "global",
            &[(&global, None, &["good"]), (&global_bad, None, &[])],
        );
        let tenant = fx.join("inventory/classes/t-acme");
        let tenant_new = variant(
            "t-acme",
            &tenant,
            "c-prod.yml",
            "namespace: syn-argocd",
            "namespace: changed-ns",
        );
        r.repo(
            "t-acme",
            &[(&tenant, None, &["t-good"]), (&tenant_new, None, &[])],
        );
        r.repo(
            "component-argocd",
            &[(&deps.join("argocd"), None, &["v7.1.0"])],
        );
        r.repo(
            "storage-lib",
            &[(&deps.join("storage-lib"), None, &["v1.0.0"])],
        );
        r.repo(
            "prometheus",
            &[
                (&deps.join("prometheus"), None, &["v2.3.1"]),
                (
                    &deps.join("prometheus-infra"),
                    Some(("NEWS", "2.4.0\n")),
                    &["v2.4.0"],
                ),
            ],
        );
        let nginx_master = variant(
            "nginx",
            &deps.join("nginx"),
            "manifests/templates/controller.yaml",
            "nginx",
            "nginx-from-master",
        );
        r.repo(
            "nginx",
            &[
                (&deps.join("nginx"), None, &["v1.9.0"]),
                (&nginx_master, None, &["branch:master"]),
            ],
        );
        r.repo(
            "monitoring",
            &[(&deps.join("pkg.monitoring"), None, &["v1.4.0"])],
        );
        r.repo("ingress", &[(&deps.join("pkg.ingress"), None, &["v0.2.0"])]);
        let cluster = std::fs::read_to_string(fx.join("cluster.json"))
            .unwrap()
            .replace(
                "ssh://git@git.example.com/global.git",
                &format!("file://{}/global.git", r.root.display()),
            )
            .replace(
                "ssh://git@git.example.com/t-acme.git",
                &format!("file://{}/t-acme.git", r.root.display()),
            );
        std::fs::write(r.env.path("cluster.json"), cluster).unwrap();
        r
    }

    fn compile(r: &Remotes, work: &Path, extra: &[&str]) -> assert_cmd::assert::Assert {
        std::fs::create_dir_all(work).unwrap();
        strata()
            .current_dir(work)
            .env("HOME", r.env.path("home"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("GITHUB_TOKEN")
            .args(["catalog", "compile", "c-prod", "--cluster-file"])
            .arg(r.env.path("cluster.json"))
            .args(extra)
            .assert()
    }

    fn files(root: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
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

    /// `catalog/` equals Commodore's catalog of the fixture (which local
    /// mode reproduces, see tests/it/commodore.rs), file by file.
    fn assert_catalog(work: &Path) {
        let ours = work.join("catalog");
        let theirs = expected();
        let list = files(&theirs);
        assert_eq!(files(&ours), list);
        for f in &list {
            assert_eq!(
                std::fs::read_to_string(ours.join(f)).unwrap(),
                std::fs::read_to_string(theirs.join(f)).unwrap(),
                "{}",
                f.display()
            );
        }
        assert!(list.len() >= 12);
    }

    fn stderr(a: &assert_cmd::assert::Assert) -> String {
        String::from_utf8_lossy(&a.get_output().stderr).into_owned()
    }

    const OVERRIDES: [&str; 4] = [
        "--global-repo-revision-override",
        "good",
        "--tenant-repo-revision-override",
        "t-good",
    ];

    #[test]
    fn compiles_from_git_like_local_mode() {
        let r = remotes();
        let work = r.env.path("work");
        let a = compile(&r, &work, &OVERRIDES).success();
        let err = stderr(&a);
        assert!(err.contains("Fetched 9 dependencies (9 updated)"), "{err}");
        assert_catalog(&work);
        // Where Commodore puts everything.
        let deps = work.join("dependencies");
        assert!(work.join("inventory/classes/global/common.yml").is_file());
        assert!(work.join("inventory/classes/t-acme/c-prod.yml").is_file());
        assert!(work.join("inventory/classes/ingress").is_symlink());
        for d in [
            "argocd",
            "storage-lib",
            "prometheus",
            "prometheus-infra",
            "nginx",
        ] {
            assert!(deps.join(d).join("class").is_dir(), "{d}");
        }
        assert!(deps.join("pkg.ingress/config/nginx.yml").is_file());
        // `~cert-manager` removed it before fetching: no repository exists.
        assert!(!deps.join("cert-manager").exists());
        // The instance has its own version, the package's nginx version won.
        assert!(deps.join("prometheus-infra/NEWS").is_file());
        assert!(!deps.join("prometheus/NEWS").exists());
        let controller =
            std::fs::read_to_string(deps.join("nginx/manifests/templates/controller.yaml"))
                .unwrap();
        assert!(!controller.contains("nginx-from-master"));
        // The config checkouts are git worktrees at the overridden revision.
        let home = r.env.path("home");
        let head = git_in(
            &home,
            &work.join("inventory/classes/global"),
            &["rev-parse", "HEAD"],
        );
        let good = git_in(
            &home,
            &r.root.join("global.git"),
            &["rev-parse", "good^{commit}"],
        );
        assert_eq!(head, good);
        // Jsonnet-bundler ran at the working directory, as Commodore does.
        assert!(work.join("jsonnetfile.json").is_file());
        assert!(work.join("vendor/argocd").is_symlink());

        // A second run fetches nothing new and compiles the same catalog.
        let a = compile(&r, &work, &OVERRIDES).success();
        let err = stderr(&a);
        assert!(err.contains("Fetched 9 dependencies (0 updated)"), "{err}");
        assert_catalog(&work);

        // Offline works from what is on disk.
        let mut offline = OVERRIDES.to_vec();
        offline.push("--offline");
        compile(&r, &work, &offline).success();
        assert_catalog(&work);
    }

    /// Issue 19: the tenant's configuration (a pull request's) names the
    /// components' URLs; a confined catalog compile fetches none from this
    /// machine (these are `file://`), the configuration repositories given
    /// by the cluster object excepted.
    #[test]
    fn a_confined_catalog_compile_fetches_no_component_from_this_machine() {
        let r = remotes();
        let work = r.env.path("work");
        let mut args = OVERRIDES.to_vec();
        args.push("--confine");
        let a = compile(&r, &work, &args).failure().code(2);
        let err = stderr(&a);
        assert!(
            err.contains("a pull request's fetch")
                && err.contains("fetches nothing from this machine")
                && err.contains("`file://"),
            "{err}"
        );
        assert!(work.join("inventory/classes/global/common.yml").is_file());
        assert!(!work.join("dependencies/argocd").exists());
        assert!(!work.join("catalog").exists());
    }

    #[test]
    fn revision_overrides_pick_the_revision() {
        let r = remotes();
        // The tenant's default branch changes argocd's namespace.
        let work = r.env.path("work");
        compile(&r, &work, &OVERRIDES[..2]).success();
        let argocd = files(&work.join("catalog/manifests/argocd"));
        let all: String = argocd
            .iter()
            .map(|f| {
                std::fs::read_to_string(work.join("catalog/manifests/argocd").join(f)).unwrap()
            })
            .collect();
        assert!(all.contains("changed-ns"), "{all}");
        // The global default branch pins a version argocd does not have:
        // the error names the dependency, its URL and the version.
        let a = compile(&r, &r.env.path("work2"), &OVERRIDES[2..]).code(2);
        let err = stderr(&a);
        assert!(err.contains("while fetching components"), "{err}");
        assert!(err.contains("dependency `argocd`"), "{err}");
        assert!(err.contains("component-argocd.git"), "{err}");
        assert!(err.contains("version `v9-missing`"), "{err}");
        assert!(err.contains("unknown version"), "{err}");
    }

    #[test]
    fn offline_without_repositories_fails_clearly() {
        let r = remotes();
        let mut args = OVERRIDES.to_vec();
        args.push("--offline");
        let a = compile(&r, &r.env.path("work"), &args).code(2);
        let err = stderr(&a);
        assert!(err.contains("dependency `config.global`"), "{err}");
        assert!(err.contains("global.git"), "{err}");
        assert!(
            err.contains("offline: the repository is not on disk"),
            "{err}"
        );
        assert!(err.contains("run once without --offline"), "{err}");
    }
}

/// Writes a git object of `kind` from raw bytes into the bare repository
/// `bare` (`--literally`: git's own checks would refuse the crafted trees).
fn raw_object(bare: &Path, kind: &str, data: &[u8]) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new("git")
        .arg("--git-dir")
        .arg(bare)
        .args(["hash-object", "-t", kind, "--literally", "-w", "--stdin"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(data).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A tree object of `(mode, name, id)` entries, as given (order, names).
fn raw_tree(bare: &Path, entries: &[(&str, &[u8], &str)]) -> String {
    let mut data = Vec::new();
    for (mode, name, id) in entries {
        data.extend_from_slice(mode.as_bytes());
        data.push(b' ');
        data.extend_from_slice(name);
        data.push(0);
        data.extend((0..20).map(|i| u8::from_str_radix(&id[2 * i..2 * i + 2], 16).unwrap()));
    }
    raw_object(bare, "tree", &data)
}

/// A remote's tree holding names git never writes: `..`, a name with `/`,
/// `.git`, or a link `a` beside a directory `a`. The checkout joined them
/// to its directory: `..` and `../../x` wrote files outside it (exit 2,
/// the files left there), the link and directory wrote the directory's
/// files wherever the link led (exit 0), and `.git/config` made the
/// checkout a repository whose configuration the remote chose (probe 36,
/// fetched-tree-names-write-outside). Now refused before anything is
/// written.
#[test]
fn crafted_tree_names_never_write_outside_the_checkout() {
    let env = Env::new();
    let bare = env.repo("srv", "c", &[("ok.yml", "ok: 1\n")]);
    let blob = raw_object(&bare, "blob", b"pwned\n");
    let link = raw_object(&bare, "blob", b"../../../outside");
    let ok = raw_object(&bare, "blob", b"ok: 1\n");
    let file = |name: &'static [u8]| raw_tree(&bare, &[("100644", name, &blob)]);
    let mut dotdot = file(b"pwned-dotdot");
    for _ in 0..3 {
        dotdot = raw_tree(&bare, &[("40000", b"..", &dotdot)]);
    }
    let inner = raw_tree(&bare, &[("40000", b"b", &file(b"x"))]);
    let dotgit = raw_tree(&bare, &[("100644", b"config", &blob)]);
    type Entries<'a> = Vec<(&'a str, &'a [u8], &'a str)>;
    let cases: [(&str, Entries, &str); 4] = [
        ("dotdot", vec![("40000", b"..", &dotdot)], "\"..\""),
        (
            "slash",
            vec![("100644", b"../../../pwned-slash", &blob)],
            "\"../../../pwned-slash\"",
        ),
        (
            "linkdir",
            vec![("120000", b"a", &link), ("40000", b"a", &inner)],
            "\"a\" twice",
        ),
        ("dotgit", vec![("40000", b".git", &dotgit)], "\".git\""),
    ];
    std::fs::create_dir_all(env.path("outside")).unwrap();
    for (name, mut entries, needle) in cases {
        entries.push(("100644", b"ok.yml", &ok));
        let tree = raw_tree(&bare, &entries);
        let commit = env.git(&bare, &["commit-tree", &tree, "-m", name]);
        env.git(
            &bare,
            &["update-ref", &format!("refs/heads/{name}"), commit.trim()],
        );
        let stderr = failure_stderr(&mut env.fetch(&format!(
            "- {{name: c{name}, url: {}, version: {name}}}\n",
            url(&bare)
        )));
        assert!(
            stderr.contains(&format!("dependency `c{name}`"))
                && stderr.contains(needle)
                && stderr.contains("nothing was written from it"),
            "{name}: {stderr}"
        );
        assert!(
            !env.path(&format!("work/dependencies/c{name}/ok.yml"))
                .exists(),
            "{name}"
        );
    }
    let mut stray = Vec::new();
    for dir in [env.path(""), env.path("work"), env.path("outside")] {
        for e in std::fs::read_dir(dir).unwrap() {
            let n = e.unwrap().file_name().into_string().unwrap();
            if n.starts_with("pwned") || n == "b" {
                stray.push(n);
            }
        }
    }
    assert!(stray.is_empty(), "written outside: {stray:?}");
}
