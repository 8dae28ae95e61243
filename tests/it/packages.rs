//! Carvel packages: the 107-case conformance corpus
//! (`../shared/conformance/packages/`) and CLI behaviour of `strata package`.

use crate::support::copy_tree;
use crate::support::git;
use crate::{conformance_dir, strata};
use std::fs;
use std::path::{Path, PathBuf};
use strata::packages::overlap::{rebase, Decision};
use strata::packages::select::{highest, VersionSelection};
use strata::value::Value;

fn read(p: &Path) -> String {
    fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn lines(p: &Path) -> Vec<String> {
    read(p)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/packages")
        .join(name)
}

/// `selection.yaml`: `{semver: {constraints, prereleases}}`.
fn selection(p: &Path) -> VersionSelection {
    let v = strata::yaml::load_values(&read(p)).unwrap().remove(0);
    let semver = v.get_path(&["semver"]).cloned().unwrap_or(Value::Null);
    let constraints = semver
        .get_path(&["constraints"])
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let prereleases = match semver.get_path(&["prereleases"]) {
        None | Some(Value::Null) => None,
        Some(pr) => Some(
            pr.get_path(&["identifiers"])
                .and_then(Value::as_list)
                .map(|l| {
                    l.iter()
                        .map(|x| match x {
                            Value::String(s) => s.clone(),
                            other => format!("{other:?}"),
                        })
                        .collect()
                })
                .unwrap_or_default(),
        ),
    };
    VersionSelection {
        constraints,
        prereleases,
    }
}

fn expect_error(dir: &Path, got: &str) -> Result<(), String> {
    for want in lines(&dir.join("expected_error.txt")) {
        if !got.contains(&want) {
            return Err(format!("error {got:?} lacks {want:?}"));
        }
    }
    Ok(())
}

fn run_tags(dir: &Path) -> Result<(), String> {
    let versions = lines(&dir.join("versions.txt"));
    let sel = selection(&dir.join("selection.yaml"));
    match highest(&versions, &sel, &[]) {
        Ok(s) => {
            if dir.join("expected_error.txt").exists() {
                return Err(format!("selected {} but expected an error", s.selected));
            }
            let want = read(&dir.join("expected.txt")).trim().to_string();
            if s.selected != want {
                return Err(format!("selected {}, expected {want}", s.selected));
            }
            let matching = dir.join("expected_matching.txt");
            if matching.exists() && s.matching != lines(&matching) {
                return Err(format!(
                    "matching {:?}, expected {:?}",
                    s.matching,
                    lines(&matching)
                ));
            }
            Ok(())
        }
        Err(e) => {
            if !dir.join("expected_error.txt").exists() {
                return Err(format!("unexpected error: {e}"));
            }
            expect_error(dir, &e.to_string())
        }
    }
}

fn run_install(dir: &Path) -> Result<(), String> {
    let mut cmd = strata();
    cmd.arg("package")
        .arg("resolve")
        .arg("--packages")
        .arg(dir.join("packages.yaml"))
        .arg("--install")
        .arg(dir.join("packageinstall.yaml"));
    if dir.join("env.yaml").exists() {
        cmd.arg("--env").arg(dir.join("env.yaml"));
    }
    let out = cmd.output().map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let code = out.status.code();
    if dir.join("expected_error.txt").exists() {
        if code != Some(2) {
            return Err(format!("exit {code:?} (stdout {stdout:?}), expected 2"));
        }
        expect_error(dir, &stderr)
    } else {
        let want = read(&dir.join("expected.txt")).trim().to_string();
        if code != Some(0) || stdout != format!("{want}\n") {
            return Err(format!(
                "exit {code:?}, stdout {stdout:?}, stderr {stderr:?}; expected {want}"
            ));
        }
        Ok(())
    }
}

fn run_overlap(dir: &Path) -> Result<(), String> {
    let load = |f: &str| {
        strata::yaml::load_values(&read(&dir.join(f)))
            .unwrap()
            .remove(0)
    };
    match rebase(&load("existing.yaml"), &load("new.yaml")) {
        Ok(d) => {
            if dir.join("expected_error.txt").exists() {
                return Err(format!("decided {d:?} but expected an error"));
            }
            let got = match d {
                Decision::KeepExisting => "keep-existing",
                Decision::ApplyNew => "apply-new",
            };
            let want = read(&dir.join("expected.txt")).trim().to_string();
            if got != want {
                return Err(format!("decided {got}, expected {want}"));
            }
            Ok(())
        }
        Err(e) => {
            if !dir.join("expected_error.txt").exists() {
                return Err(format!("unexpected error: {e}"));
            }
            expect_error(dir, &e.to_string())
        }
    }
}

#[test]
fn conformance_corpus() {
    let root = conformance_dir().join("packages");
    let index = read(&root.join("cases.tsv"));
    let mut total = 0;
    let mut failures = Vec::new();
    let mut per_kind: std::collections::BTreeMap<String, (usize, usize)> = Default::default();
    for line in index.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() < 2 {
            continue;
        }
        let (case, kind) = (cols[0], cols[1]);
        let dir = root.join("cases").join(case);
        total += 1;
        let result = match kind {
            "tags" => run_tags(&dir),
            "packageinstall" => run_install(&dir),
            "overlap" => run_overlap(&dir),
            other => Err(format!("unknown kind {other}")),
        };
        let entry = per_kind.entry(kind.to_string()).or_default();
        entry.1 += 1;
        match result {
            Ok(()) => entry.0 += 1,
            Err(e) => failures.push(format!("{case}: {e}")),
        }
    }
    let passed = total - failures.len();
    eprintln!("packages conformance: {passed}/{total} passed");
    for (kind, (ok, n)) in &per_kind {
        eprintln!("  {kind}: {ok}/{n}");
    }
    assert_eq!(total, 107, "the corpus has 107 cases");
    assert!(failures.is_empty(), "failures:\n{}", failures.join("\n"));
}

#[test]
fn list_shows_every_version_in_order() {
    let out = strata()
        .args(["package", "list", "--packages"])
        .arg(fixture("repo-a.yml"))
        .arg("--repo")
        .arg(fixture("repo-b"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0], ["REF-NAME", "VERSION", "REPOSITORY"]);
    let versions: Vec<(&str, &str)> = rows[1..].iter().map(|r| (r[0], r[1])).collect();
    assert_eq!(
        versions,
        [
            ("app.example.com", "1.0.0"),
            ("app.example.com", "1.2.0"),
            ("app.example.com", "1.10.0"),
            ("tool.example.com", "0.1.0"),
        ]
    );
}

#[test]
fn resolve_explains_rejections_on_stderr() {
    let out = strata()
        .args(["package", "resolve", "--packages"])
        .arg(fixture("repo-a.yml"))
        .arg("--repo")
        .arg(fixture("repo-b"))
        .arg("--install")
        .arg(fixture("install.yml"))
        .args(["--kubernetes-version", "1.28.3"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "1.2.0\n");
    assert!(
        stderr.contains("rejected 1.10.0: kubernetes-version-check"),
        "{stderr}"
    );
    assert!(
        stderr.contains("rejected 1.0.0: lower than 1.2.0"),
        "{stderr}"
    );
}

#[test]
fn resolve_error_names_the_problem() {
    let out = strata()
        .args(["package", "resolve", "--repo"])
        .arg(fixture("repo-b"))
        .arg("--install")
        .arg(fixture("install.yml"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("after-kubernetes-version-check=0"),
        "{stderr}"
    );
    assert!(
        stderr.contains("1.10.0: kubernetes-version-check: needs kubernetes version"),
        "{stderr}"
    );
}

#[test]
fn strict_mode_rejects_short_ref_names() {
    let case = conformance_dir().join("packages/cases/pkgi-downgrade-same-version");
    let out = strata()
        .args(["package", "resolve", "--strict", "--packages"])
        .arg(case.join("packages.yaml"))
        .arg("--install")
        .arg(case.join("packageinstall.yaml"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr.contains("spec.refName"), "{stderr}");
    assert!(stderr.contains("three dot-separated segments"), "{stderr}");
}

#[test]
fn unknown_field_is_an_error_with_location() {
    let out = strata()
        .args(["package", "list", "--packages"])
        .arg(fixture("bad-field.yml"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("Package app.example.com.1.0.0: field `spec.refname`: unknown field"),
        "{stderr}"
    );
    assert!(stderr.contains("bad-field.yml:7"), "{stderr}");
}

#[test]
fn conflicting_repositories_fail_for_the_later_one() {
    let out = strata()
        .args(["package", "list", "--repo"])
        .arg(fixture("repo-b"))
        .arg("--packages")
        .arg(fixture("repo-b-conflict.yml"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // --packages files are merged before --repo directories.
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("repository"), "{stderr}");
    assert!(
        stderr.contains("Conflicting resources: Package/app.example.com.1.10.0 is already present but not identical (mismatch in spec.releaseNotes)"),
        "{stderr}"
    );
}

#[test]
fn git_repository_with_ref_selection() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    fs::create_dir_all(work.join("repo/packages")).unwrap();
    git(&work, &["init", "-q"]);
    let pkg = |v: &str| {
        format!(
            "apiVersion: data.packaging.carvel.dev/v1alpha1\nkind: Package\nmetadata:\n  name: app.example.com.{v}\nspec:\n  refName: app.example.com\n  version: {v}\n"
        )
    };
    for (tag, versions) in [
        ("v1.0.0", vec!["1.0.0"]),
        ("v1.1.0", vec!["1.0.0", "1.1.0"]),
        ("v2.0.0-rc.1", vec!["1.0.0", "1.1.0", "2.0.0"]),
    ] {
        for v in versions {
            fs::write(work.join(format!("repo/packages/{v}.yml")), pkg(v)).unwrap();
        }
        git(&work, &["add", "-A"]);
        git(&work, &["commit", "-qm", tag]);
        git(&work, &["tag", tag]);
    }
    let bare = tmp.path().join("bare.git");
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            "--bare",
            work.to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
    let repo_file = tmp.path().join("repo.yml");
    fs::write(
        &repo_file,
        format!(
            "apiVersion: packaging.carvel.dev/v1alpha1\nkind: PackageRepository\nmetadata:\n  name: git-repo\n  namespace: ns\nspec:\n  fetch:\n    git:\n      url: {}\n      refSelection:\n        semver:\n          constraints: '>=1.0.0'\n      subPath: repo\n",
            bare.display()
        ),
    )
    .unwrap();
    let out = strata()
        .args(["package", "list", "--repository"])
        .arg(&repo_file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // v2.0.0-rc.1 is a prerelease tag: v1.1.0 is checked out.
    let versions: Vec<&str> = stdout
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().nth(1).unwrap())
        .collect();
    assert_eq!(versions, ["1.0.0", "1.1.0"]);
    assert!(stdout.contains("ns/git-repo"), "{stdout}");

    // An explicit ref, and no ref at all (the default branch).
    for (git_ref, want) in [
        ("      ref: v1.0.0\n", vec!["1.0.0"]),
        ("", vec!["1.0.0", "1.1.0", "2.0.0"]),
    ] {
        let f = tmp.path().join("repo-ref.yml");
        fs::write(
            &f,
            format!(
                "apiVersion: packaging.carvel.dev/v1alpha1\nkind: PackageRepository\nmetadata:\n  name: git-repo\nspec:\n  fetch:\n    git:\n      url: {}\n{git_ref}      subPath: repo\n",
                bare.display()
            ),
        )
        .unwrap();
        let out = strata()
            .args(["package", "list", "--repository"])
            .arg(&f)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let versions: Vec<&str> = stdout
            .lines()
            .skip(1)
            .map(|l| l.split_whitespace().nth(1).unwrap())
            .collect();
        assert_eq!(versions, want, "ref {git_ref:?}");
    }
}

/// Probe 40: a git PackageRepository holding one blob under many names
/// (a few kB packed) was checked out whole, once per name; its tree's size
/// is read before `git checkout` and held to STRATA_MAX_FETCH_BYTES.
#[test]
fn a_git_repository_past_the_fetch_size_is_not_checked_out() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    fs::create_dir_all(work.join("repo/packages")).unwrap();
    for i in 0..20 {
        fs::write(
            work.join(format!("repo/packages/f{i:02}.yml")),
            "#".repeat(64 << 10),
        )
        .unwrap();
    }
    git(&work, &["init", "-q"]);
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-qm", "one"]);
    let repo_file = tmp.path().join("repo.yml");
    fs::write(
        &repo_file,
        format!(
            "apiVersion: packaging.carvel.dev/v1alpha1\nkind: PackageRepository\nmetadata:\n  name: git-repo\nspec:\n  fetch:\n    git:\n      url: {}\n      subPath: repo\n",
            work.display()
        ),
    )
    .unwrap();
    let list = |limit: &str| {
        strata()
            .args(["package", "list", "--repository"])
            .arg(&repo_file)
            .env("STRATA_MAX_FETCH_BYTES", limit)
            .output()
            .unwrap()
    };
    let out = list("500000");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("hold more than 500000 bytes (a blob repeated under many names?)")
            && stderr.contains("STRATA_MAX_FETCH_BYTES"),
        "{stderr}"
    );
    let out = list("2000000");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Serves one response body to every connection, on loopback.
fn serve(body: Vec<u8>) -> (String, std::thread::JoinHandle<()>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let handle = std::thread::spawn(move || {
        // Two requests: the good fetch and the bad-checksum one.
        for stream in listener.incoming().take(2) {
            let mut s = stream.unwrap();
            let mut req = Vec::new();
            let mut buf = [0u8; 1024];
            while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => req.extend_from_slice(&buf[..n]),
                }
            }
            let head = format!("HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
            s.write_all(head.as_bytes()).unwrap();
            s.write_all(&body).unwrap();
        }
    });
    (format!("http://{addr}/repo.tgz"), handle)
}

#[test]
fn http_repository_checks_sha256() {
    let mut builder = tar::Builder::new(Vec::new());
    let body = read(&fixture("repo-a.yml"));
    let mut h = tar::Header::new_ustar();
    h.set_size(body.len() as u64);
    h.set_mode(0o644);
    builder
        .append_data(&mut h, "packages/app.yml", body.as_bytes())
        .unwrap();
    let tar_bytes = builder.into_inner().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &tar_bytes).unwrap();
    let tgz = gz.finish().unwrap();
    let sha = strata::packages::repo::sha256_hex(&tgz);
    let (url, handle) = serve(tgz);
    let tmp = tempfile::tempdir().unwrap();
    let write_repo = |sha: &str| {
        let f = tmp.path().join(format!("repo-{}.yml", &sha[..4]));
        fs::write(
            &f,
            format!(
                "apiVersion: packaging.carvel.dev/v1alpha1\nkind: PackageRepository\nmetadata:\n  name: http-repo\nspec:\n  fetch:\n    http:\n      url: {url}\n      sha256: {sha}\n"
            ),
        )
        .unwrap();
        f
    };
    let good = write_repo(&sha);
    let out = strata()
        .args(["package", "list", "--repository"])
        .arg(&good)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("default/http-repo"));

    let bad = write_repo(&"0".repeat(64));
    let out = strata()
        .args(["package", "list", "--repository"])
        .arg(&bad)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr.contains("sha256 mismatch"), "{stderr}");
    handle.join().unwrap();
}

#[test]
fn image_repositories_are_reported_unsupported() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("r.yml");
    fs::write(
        &f,
        "apiVersion: packaging.carvel.dev/v1alpha1\nkind: PackageRepository\nmetadata:\n  name: r\nspec:\n  fetch:\n    imgpkgBundle:\n      image: registry.example.com/repo:1.0.0\n",
    )
    .unwrap();
    let out = strata()
        .args(["package", "list", "--repository"])
        .arg(&f)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr
            .contains("fetch.imgpkgBundle (registry.example.com/repo:1.0.0) is not supported yet"),
        "{stderr}"
    );
}

fn run(args: &[&std::ffi::OsStr]) -> (i32, String, String) {
    let out = strata().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn render_args(install: &Path, extra: &[&str]) -> Vec<std::ffi::OsString> {
    let mut v: Vec<std::ffi::OsString> = vec![
        "package".into(),
        "render".into(),
        "--packages".into(),
        fixture("render.yml").into(),
        "--install".into(),
        install.into(),
    ];
    v.extend(extra.iter().map(|s| s.into()));
    v
}

fn run_render(install: &Path, extra: &[&str]) -> (i32, String, String) {
    let args = render_args(install, extra);
    let refs: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    run(&refs)
}

#[test]
fn render_passes_kbld_through() {
    let (code, out, err) = run_render(&fixture("render-install.yml"), &[]);
    assert_eq!(code, 0, "{err}");
    let docs = strata::yaml::load_values(&out).unwrap();
    let images: Vec<&str> = docs
        .iter()
        .filter_map(|d| d.get_path(&["spec", "image"]).and_then(Value::as_str))
        .collect();
    assert_eq!(images, ["nginx:1.25"]);
}

fn str_at<'v>(d: &'v Value, path: &[&str]) -> Option<&'v str> {
    d.get_path(path).and_then(Value::as_str)
}

/// The ytt step gets the schema defaults, then the install's Secret (base64
/// `data` and `stringData`, from the --install file), then
/// --data-values-file; kbld after it passes the stream through.
#[test]
fn render_runs_ytt_with_the_install_values() {
    let install = fixture("render-install-ytt.yml");
    let (code, out, err) = run_render(&install, &[]);
    assert_eq!(code, 0, "{err}");
    let docs = strata::yaml::load_values(&out).unwrap();
    assert_eq!(docs.len(), 1, "{out}");
    assert_eq!(str_at(&docs[0], &["metadata", "name"]), Some("web-prod"));
    assert_eq!(str_at(&docs[0], &["spec", "image"]), Some("nginx:1.27"));
    assert_eq!(
        str_at(&docs[0], &["metadata", "annotations", "replicas"]),
        Some("1")
    );
    assert!(err.contains("web.example.com 2.0.0"), "{err}");

    let dv = fixture("render-data-values.yml");
    let (code, out, err) = run_render(&install, &["--data-values-file", dv.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let docs = strata::yaml::load_values(&out).unwrap();
    assert_eq!(
        str_at(&docs[0], &["metadata", "annotations", "replicas"]),
        Some("4")
    );

    // Into a directory: <dir>/<install>/<ytt output file> and VERSION; a
    // second render replaces the directory (stale files go).
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("web")).unwrap();
    fs::write(dir.path().join("web/stale.yml"), "x: 1\n").unwrap();
    let d = dir.path().to_str().unwrap();
    let (code, _, err) = run_render(&install, &["--output-dir", d]);
    assert_eq!(code, 0, "{err}");
    let mut files: Vec<String> = fs::read_dir(dir.path().join("web"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, ["VERSION", "pod.yml"]);
    let version = read(&dir.path().join("web/VERSION"));
    assert!(version.lines().any(|l| l == "version: 2.0.0"), "{version}");
    let pod = strata::yaml::load_values(&read(&dir.path().join("web/pod.yml"))).unwrap();
    assert_eq!(str_at(&pod[0], &["metadata", "name"]), Some("web-prod"));
    let top: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(top.len(), 1, "no staging directory is left");
}

#[test]
fn render_without_the_values_secret_names_it() {
    let text = read(&fixture("render-install-ytt.yml"));
    let only_install = text.split("\n---\n").next().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("pkgi.yml");
    fs::write(&f, only_install).unwrap();
    let (code, _, err) = run_render(&f, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("Package web.example.com.2.0.0: template step 0 (`ytt`): PackageInstall web: spec.values[0].secretRef: Secret `web-values` not found"),
        "{err}"
    );
    // --values supplies it from another file.
    let secret = dir.path().join("secret.yml");
    fs::write(&secret, text.split("\n---\n").nth(1).unwrap()).unwrap();
    let (code, out, err) = run_render(&f, &["--values", secret.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("name: web-prod"), "{out}");
}

#[test]
fn render_reports_unsupported_steps() {
    let (code, out, err) = run_render(&fixture("render-install-helm.yml"), &[]);
    assert_eq!(code, 2);
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains(
            "Package chart.example.com.1.0.0: template step 0 (`helmTemplate`): not supported"
        ),
        "{err}"
    );
}

fn compile(project: &Path, out: &Path) -> (i32, String) {
    let o = strata()
        .current_dir(project)
        .args([
            "compile",
            "--inventory-path",
            "inventory",
            "--quiet",
            "--output-path",
        ])
        .arg(out)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `strata compile` resolves `parameters.packages_install` and the
/// PackageInstall documents a compile entry wrote, renders them into
/// `compiled/<target>/packages/<install>/`, and a newer package version
/// shows up as one changed line in `strata diff`.
#[test]
fn compile_renders_installs_and_a_version_bump_is_one_diff_line() {
    let project = tempfile::tempdir().unwrap();
    copy_tree(&fixture("compile"), project.path());
    let old = tempfile::tempdir().unwrap();
    let (code, err) = compile(project.path(), old.path());
    assert_eq!(code, 0, "{err}");
    let web = old.path().join("compiled/prod/packages/web");
    assert_eq!(
        read(&web.join("VERSION")),
        "install: apps/web\nrefName: web.example.com\nversion: 1.0.0\nconstraints: >=1.0.0 <2.0.0\n"
    );
    let deploy = strata::yaml::load_values(&read(&web.join("deployment.yml"))).unwrap();
    // `values: {replicas: 3}` in the inventory overrides the schema default.
    assert_eq!(
        deploy[0].get_path(&["spec", "replicas"]),
        Some(&Value::Int(3))
    );
    assert!(web.join("service.yml").is_file());
    // The install a compile entry wrote, with its values Secret.
    let tool = old.path().join("compiled/prod/packages/tool");
    let cm = strata::yaml::load_values(&read(&tool.join("cm.yml"))).unwrap();
    assert_eq!(str_at(&cm[0], &["data", "greeting"]), Some("bonjour"));
    assert!(read(&tool.join("VERSION")).contains("version: 0.1.0\n"));

    // The repository gains 1.1.0 (same templates): one line changes.
    let repo = project.path().join("repo/packages/web.example.com");
    let v1 = read(&repo.join("1.0.0.yml"));
    fs::write(repo.join("1.1.0.yml"), v1.replace("1.0.0", "1.1.0")).unwrap();
    let new = tempfile::tempdir().unwrap();
    let (code, err) = compile(project.path(), new.path());
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        read(&new.path().join("compiled/prod/packages/web/deployment.yml")),
        read(&web.join("deployment.yml"))
    );
    let o = strata()
        .args(["diff", "--color", "never", "--catalogs"])
        .arg(old.path().join("compiled"))
        .arg(new.path().join("compiled"))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The text report indents the unified diff under the file.
    let body: Vec<&str> = out.lines().map(str::trim_start).collect();
    let removed: Vec<&&str> = body
        .iter()
        .filter(|l| l.starts_with('-') && !l.starts_with("---"))
        .collect();
    let added: Vec<&&str> = body
        .iter()
        .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
        .collect();
    assert_eq!(removed, [&"-version: 1.0.0"], "{out}");
    assert_eq!(added, [&"+version: 1.1.0"], "{out}");
    assert!(out.contains("1 target changed, 1 file changed"), "{out}");
}

#[test]
fn compile_errors_name_target_and_parameter() {
    let project = tempfile::tempdir().unwrap();
    copy_tree(&fixture("compile"), project.path());
    let target = project.path().join("inventory/targets/prod.yml");
    let text = read(&target);
    fs::write(&target, text.replace("'>=1.0.0 <2.0.0'", "'>=5.0.0'")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let (code, err) = compile(project.path(), out.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("target prod"), "{err}");
    assert!(
        err.contains("parameters.packages_install.web: Expected to find at least one version"),
        "{err}"
    );
    assert!(err.contains("rejected 1.0.0"), "{err}");
    assert!(
        !out.path().join("compiled").exists(),
        "nothing written on failure"
    );

    fs::write(
        &target,
        text.replace("refName: web.example.com", "refname: web.example.com"),
    )
    .unwrap();
    let (code, err) = compile(project.path(), out.path());
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("parameters.packages_install.web: field `spec.packageRef.refname`"),
        "{err}"
    );

    // Installs without an output directory are an error, not skipped.
    fs::write(
        &target,
        text.replace("    vars:\n      target: prod\n    compile:", "    compile:")
            .replace("kapitan:\n    compile:\n      - input_type: copy\n        input_paths:\n          - manifests/tool-install.yml\n        output_path: manifests\n", "kapitan: {}\n"),
    )
    .unwrap();
    let (code, err) = compile(project.path(), out.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("prod"), "{err}");
    assert!(
        err.contains(
            "parameters.packages_install is set but parameters.kapitan.vars.target is not"
        ),
        "{err}"
    );
}

/// An install file that is a whole release file: CRDs, a Namespace and a
/// Secret around the PackageInstall. They are passed over, the secret's
/// value never printed; a document that is no Kubernetes object is named.
#[test]
fn resolve_install_accepts_any_kubernetes_document() {
    let dir = tempfile::tempdir().unwrap();
    let install = dir.path().join("release.yml");
    let pkgi = std::fs::read_to_string(fixture("install.yml")).unwrap();
    std::fs::write(
        &install,
        format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kapp-controller\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: kc-config\nstringData:\n  token: s3cr3t-v4lue\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: packageinstalls.packaging.carvel.dev\n---\n{pkgi}"
        ),
    )
    .unwrap();
    let out = strata()
        .args(["package", "resolve", "--packages"])
        .arg(fixture("repo-a.yml"))
        .arg("--repo")
        .arg(fixture("repo-b"))
        .arg("--install")
        .arg(&install)
        .args(["--kubernetes-version", "1.28.3"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "1.2.0\n");
    assert!(!stdout.contains("s3cr3t") && !stderr.contains("s3cr3t"));

    std::fs::write(&install, format!("just: text\n---\n{pkgi}")).unwrap();
    let out = strata()
        .args(["package", "resolve", "--packages"])
        .arg(fixture("repo-a.yml"))
        .arg("--install")
        .arg(&install)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("release.yml") && stderr.contains("document 1 is not a Kubernetes object"),
        "{stderr}"
    );
}

/// Re-probe 18 (packages-render-ships-scratch-lock-file,
/// package-render-errors-name-scratch-directory): a compiled install holds
/// the rendered files and VERSION only (not the work directory's `.lock`),
/// and a render error names the package, not the work directory.
#[test]
fn compiled_installs_hold_no_scratch_files_and_errors_name_no_scratch_path() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::create_dir_all(d.join("inventory/targets")).unwrap();
    fs::create_dir_all(d.join("repo/packages")).unwrap();
    let package = |paths: &str| {
        format!(
            "apiVersion: data.packaging.carvel.dev/v1alpha1\nkind: Package\nmetadata: {{name: app.example.com.1.0.0}}\nspec:\n  refName: app.example.com\n  version: 1.0.0\n  template:\n    spec:\n      fetch: [{{inline: {{paths: {paths}}}}}]\n      template: [{{ytt: {{}}}}]\n      deploy: [{{kapp: {{}}}}]\n"
        )
    };
    fs::write(
        d.join("repo/packages/p.yml"),
        package(r#"{cm.yml: "motd: hi"}"#),
    )
    .unwrap();
    fs::write(
        d.join("inventory/targets/t.yml"),
        "parameters:\n  kapitan: {vars: {target: t}}\n  package_repositories: {r: {path: repo}}\n  packages_install:\n    i: {packageRef: {refName: app.example.com, versionSelection: {constraints: \">=0.0.0\"}}}\n",
    )
    .unwrap();
    let out = strata().current_dir(d).arg("compile").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut files: Vec<String> = fs::read_dir(d.join("compiled/t/packages/i"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, ["VERSION", "cm.yml"]);

    fs::write(
        d.join("repo/packages/p.yml"),
        package(r#"{a: "x: 1", a/b.yml: "y: 2"}"#),
    )
    .unwrap();
    let out = strata().current_dir(d).arg("compile").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("packages_install.i: Package app.example.com.1.0.0: "),
        "{err}"
    );
    assert!(!err.contains("strata-pkg-"), "{err}");
}

/// Probe 41: a `fetch.git` URL's `user:password@` went to git on its
/// command line (git's and its `git-remote-http`'s), where every local user
/// reads it in `ps` while the clone runs. A dumb-HTTP git server that asks
/// for basic authentication looks at every process's command line on each
/// request.
#[test]
fn a_git_repositorys_credentials_are_not_on_gits_command_line() {
    use std::io::{BufRead, BufReader, Write};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    fs::create_dir_all(work.join("repo/packages")).unwrap();
    fs::write(work.join("repo/packages/p.yml"), "# none\n").unwrap();
    git(&work, &["init", "-q"]);
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-qm", "one"]);
    let bare = tmp.path().join("served.git");
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            "--bare",
            work.to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
    git(&bare, &["update-server-info"]);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let shown = Arc::new(AtomicUsize::new(0));
    let authorized = Arc::new(AtomicUsize::new(0));
    {
        let (shown, authorized) = (shown.clone(), authorized.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut s) = stream else { continue };
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut line = String::new();
                if r.read_line(&mut line).is_err() {
                    continue;
                }
                let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
                let mut auth = false;
                loop {
                    let mut h = String::new();
                    if r.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                        break;
                    }
                    // base64 of `gituser:pa55-in-git-url`
                    if h.trim() == "Authorization: Basic Z2l0dXNlcjpwYTU1LWluLWdpdC11cmw=" {
                        auth = true;
                    }
                }
                let on_lines = command_lines_holding(b"pa55-in-git-url");
                shown.fetch_max(on_lines, Ordering::SeqCst);
                if !auth {
                    let _ = s.write_all(b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"r\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                    continue;
                }
                authorized.fetch_add(1, Ordering::SeqCst);
                let rel = path.split('?').next().unwrap_or("").trim_start_matches('/');
                match fs::read(bare.join(rel)) {
                    Ok(body) => {
                        let _ = write!(
                            s,
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                            body.len()
                        );
                        let _ = s.write_all(&body);
                    }
                    Err(_) => {
                        let _ = s.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                    }
                }
            }
        });
    }
    let repo_file = tmp.path().join("repo.yml");
    fs::write(
        &repo_file,
        format!(
            "apiVersion: packaging.carvel.dev/v1alpha1\nkind: PackageRepository\nmetadata:\n  name: git-repo\nspec:\n  fetch:\n    git:\n      url: http://gituser:pa55-in-git-url@127.0.0.1:{port}/\n      subPath: repo\n"
        ),
    )
    .unwrap();
    let out = strata()
        .args(["package", "list", "--repository"])
        .arg(&repo_file)
        .env("HOME", tmp.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("pa55-in-git-url"), "{stderr}");
    assert!(
        authorized.load(Ordering::SeqCst) > 0,
        "the clone authenticated"
    );
    assert_eq!(shown.load(Ordering::SeqCst), 0, "on a command line");
}

/// How many processes' command lines hold `needle` (read from /proc).
fn command_lines_holding(needle: &[u8]) -> usize {
    let Ok(rd) = fs::read_dir("/proc") else {
        return 0;
    };
    rd.flatten()
        .filter_map(|e| fs::read(e.path().join("cmdline")).ok())
        .filter(|c| c.windows(needle.len()).any(|w| w == needle))
        .count()
}
