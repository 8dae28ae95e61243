//! Compiling what real Kapitan repositories contain (issue 16), against
//! output made by Kapitan 0.36.3: kadet inputs and Python jinja2 filter
//! files (one interpreter per compile; errors when Python or kadet is
//! missing), Kapitan's model defaults, C++ jsonnet number formatting.
//!
//! The Python tests need a Python 3 with `kadet` and `jinja2`: `STRATA_TEST_PYTHON`,
//! else `.ci/.venv/bin/python` (which `.ci/run` installs), else `python3`.
//! Without one they are skipped with a message, except when `CI` or
//! `STRATA_REQUIRE_PYTHON` is set: then they fail.

use crate::strata;
use crate::support::copy_tree;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/kapitan_compat")
        .join(name)
}

fn has_kadet(python: &Path) -> bool {
    Command::new(python)
        .args(["-c", "import kadet, jinja2"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A Python with kadet, or None (after saying why) when tests may skip.
fn python() -> Option<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(p) = std::env::var_os("STRATA_TEST_PYTHON") {
        candidates.push(PathBuf::from(p));
    }
    candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/.venv/bin/python"));
    candidates.push(PathBuf::from("python3"));
    if let Some(p) = candidates.into_iter().find(|p| has_kadet(p)) {
        return Some(p);
    }
    let required =
        std::env::var_os("CI").is_some() || std::env::var_os("STRATA_REQUIRE_PYTHON").is_some();
    assert!(
        !required,
        "no Python with the kadet and jinja2 packages: set STRATA_TEST_PYTHON (`.ci/run` installs one in .ci/.venv)"
    );
    eprintln!("skipped: no Python with the kadet and jinja2 packages (set STRATA_TEST_PYTHON)");
    None
}

/// A writable copy of a case (Python writes `__pycache__` beside modules).
fn project(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixture(name), dir.path());
    dir
}

fn files(root: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(root.join(rel))
        .unwrap()
        .map(|e| e.unwrap())
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let r = rel.join(e.file_name());
        if e.path().is_dir() {
            files(root, &r, out);
        } else {
            out.push(r);
        }
    }
}

/// Every file of `expected` is in `got` with the same bytes, and no more.
fn assert_same_tree(got: &Path, expected: &Path) {
    let (mut g, mut e) = (Vec::new(), Vec::new());
    files(got, Path::new(""), &mut g);
    files(expected, Path::new(""), &mut e);
    assert_eq!(g, e, "file lists differ");
    for rel in &e {
        let a = fs::read_to_string(got.join(rel)).unwrap();
        let b = fs::read_to_string(expected.join(rel)).unwrap();
        assert_eq!(a, b, "{} differs from Kapitan's", rel.display());
    }
}

fn compile(dir: &Path, python: &Path) -> assert_cmd::assert::Assert {
    strata()
        .current_dir(dir)
        .args(["compile", "--quiet", "--output-path", "out", "--python"])
        .arg(python)
        .assert()
}

/// [`compile`] that fails with exit 2: its stderr.
fn compile_error(dir: &Path, python: &Path) -> String {
    let out = compile(dir, python).code(2).get_output().stderr.clone();
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn kadet_inputs_give_kapitans_bytes() {
    let Some(py) = python() else { return };
    let p = project("kadet");
    let out = compile(p.path(), &py).success();
    // The generator's print() must not corrupt the bridge's protocol.
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("kadet says hello"), "{stderr}");
    assert_same_tree(&p.path().join("out/compiled"), &p.path().join("expected"));
}

/// kapitan-reference's `keda` target (kapicorp/generators' `charts`
/// generator) subclasses Kapitan's `HelmChart` in a kadet input; strata's
/// bridge refused it ("not available"). The stand-in helm (`bin/helm`, as
/// `KAPITAN_HELM_PATH`, which Kapitan honours too) prints its arguments and
/// values file, so `expected/` (Kapitan 0.36.3's) pins the command line,
/// the values' quoting and the documents (a comment-only one dropped).
#[cfg(unix)]
#[test]
fn kadet_helm_charts_render_as_kapitans() {
    use std::os::unix::fs::PermissionsExt;
    let Some(py) = python() else { return };
    let p = project("kadet-helmchart");
    let helm = p.path().join("bin/helm");
    fs::set_permissions(&helm, fs::Permissions::from_mode(0o755)).unwrap();
    strata()
        .current_dir(p.path())
        .env("KAPITAN_HELM_PATH", &helm)
        .args(["compile", "--quiet", "--output-path", "out", "--python"])
        .arg(&py)
        .assert()
        .success();
    assert_same_tree(&p.path().join("out/compiled"), &p.path().join("expected"));

    // helm's failure reaches the error with the chart it rendered.
    let failing = p.path().join("bin/failing-helm");
    fs::write(
        &failing,
        "#!/bin/sh\necho 'Error: chart is broken' >&2\nexit 1\n",
    )
    .unwrap();
    fs::set_permissions(&failing, fs::Permissions::from_mode(0o755)).unwrap();
    let out = strata()
        .current_dir(p.path())
        .env("KAPITAN_HELM_PATH", &failing)
        .args(["compile", "--quiet", "--output-path", "out", "--python"])
        .arg(&py)
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8_lossy(&out);
    assert!(
        err.contains("HelmTemplateError: HelmChart charts/demo"),
        "{err}"
    );
    assert!(err.contains("Error: chart is broken"), "{err}");
    assert!(
        err.contains("compile entry #1 (kadet -> manifests)"),
        "{err}"
    );

    // A pull request's compile renders no chart outside the repository.
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("Chart.yaml"), "name: x\n").unwrap();
    let target = p.path().join("inventory/targets/demo.yml");
    let text = fs::read_to_string(&target).unwrap();
    fs::write(
        &target,
        text.replace(
            "chart_dir: charts/demo",
            &format!("chart_dir: {}", outside.path().display()),
        ),
    )
    .unwrap();
    let out = strata()
        .current_dir(p.path())
        .env("KAPITAN_HELM_PATH", &helm)
        .args([
            "compile",
            "--confine",
            "--quiet",
            "--output-path",
            "out",
            "--python",
        ])
        .arg(&py)
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8_lossy(&out);
    assert!(
        err.contains(&format!("refusing to read {}", outside.path().display())),
        "{err}"
    );
}

/// One interpreter serves every target of a compile.
#[cfg(unix)]
#[test]
fn one_python_process_per_compile() {
    use std::os::unix::fs::PermissionsExt;
    let Some(py) = python() else { return };
    let p = project("kadet");
    let log = p.path().join("starts.log");
    let wrapper = p.path().join("counting-python");
    fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho start >> '{}'\nexec '{}' \"$@\"\n",
            log.display(),
            py.display()
        ),
    )
    .unwrap();
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
    compile(p.path(), &wrapper).success();
    // 2 targets x 4 kadet entries, one interpreter.
    assert_eq!(fs::read_to_string(&log).unwrap(), "start\n");
}

#[test]
fn missing_python_names_target_entry_and_install() {
    let p = project("kadet");
    let out = compile(p.path(), Path::new("/nonexistent/python3"))
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8_lossy(&out);
    assert!(err.contains("target alpha"), "{err}");
    assert!(err.contains("compile entry #1 (kadet"), "{err}");
    assert!(err.contains("/nonexistent/python3"), "{err}");
    assert!(err.contains("pip install kadet"), "{err}");
    assert!(!p.path().join("out/compiled/alpha").exists());
}

/// A Python without kadet: `-S` hides the site-packages kadet is in.
#[cfg(unix)]
#[test]
fn missing_kadet_says_how_to_install_it() {
    use std::os::unix::fs::PermissionsExt;
    let Some(py) = python() else { return };
    let p = project("kadet");
    let wrapper = p.path().join("bare-python");
    fs::write(
        &wrapper,
        format!("#!/bin/sh\nexec '{}' -S \"$@\"\n", py.display()),
    )
    .unwrap();
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
    let err = compile_error(p.path(), &wrapper);
    assert!(err.contains("kadet package is not available"), "{err}");
    assert!(err.contains("-m pip install kadet"), "{err}");
    assert!(err.contains("target alpha"), "{err}");
}

#[test]
fn kadet_exception_names_target_input_and_cause() {
    let Some(py) = python() else { return };
    let p = project("kadet");
    fs::write(
        p.path().join("components/allnames/__init__.py"),
        "def main():\n    raise RuntimeError('no such cluster: mars')\n",
    )
    .unwrap();
    let err = compile_error(p.path(), &py);
    assert!(
        err.contains("Could not load Kadet module: allnames"),
        "{err}"
    );
    assert!(err.contains("RuntimeError: no such cluster: mars"), "{err}");
    assert!(err.contains("components/allnames"), "{err}");
    assert!(!p.path().join("out/compiled").join("alpha").exists());
}

#[test]
fn python_jinja2_filters_give_kapitans_bytes() {
    let Some(py) = python() else { return };
    let p = project("filters");
    compile(p.path(), &py).success();
    assert_same_tree(&p.path().join("out/compiled"), &p.path().join("expected"));
}

/// `.inf`/`.nan` reach a Python filter as floats (serde_json would write
/// `null`), and the YAML filter writes them as PyYAML does.
#[test]
fn python_jinja2_filters_get_non_finite_numbers_as_floats() {
    let Some(py) = python() else { return };
    let p = project("filters-inf");
    compile(p.path(), &py).success();
    assert_same_tree(&p.path().join("out/compiled"), &p.path().join("expected"));
}

/// Without Python, templates that do not use the file's filters still
/// render; one that does gets an error naming the filter, file and cause.
#[test]
fn filter_file_without_python() {
    let p = project("filters");
    let no_python = Path::new("/nonexistent/python3");
    fs::write(
        p.path().join("templates/out.txt"),
        "{{ 'x' | b64encode }}\n",
    )
    .unwrap();
    // The jsonnet entry's template uses a Python filter: it fails alike.
    let out = compile(p.path(), no_python)
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8_lossy(&out);
    assert!(err.contains("(jsonnet -> jsonnet)"), "{err}");
    assert!(err.contains("filter `shout` is defined in"), "{err}");
    let t = p.path().join("inventory/targets/one.yml");
    let text = fs::read_to_string(&t).unwrap();
    let cut = text.find("      - output_path: jsonnet").unwrap();
    fs::write(&t, &text[..cut]).unwrap();
    fs::write(
        p.path().join("templates/out.txt"),
        "{{ 'x' | b64encode }}\n",
    )
    .unwrap();
    compile(p.path(), no_python).success();
    assert_eq!(
        fs::read_to_string(p.path().join("out/compiled/one/out.txt")).unwrap(),
        "eA=="
    );
    fs::write(p.path().join("templates/out.txt"), "{{ 'x' | shout }}\n").unwrap();
    let out = compile(p.path(), no_python)
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8_lossy(&out);
    assert!(err.contains("filter `shout`"), "{err}");
    assert!(
        err.contains("jinja2_filters.py, which needs Python"),
        "{err}"
    );
    assert!(err.contains("/nonexistent/python3"), "{err}");
}

/// `.kapitan`'s `jinja2-filters` names another file; a named file that is
/// missing is an error (only the default may be absent).
#[test]
fn filter_file_from_dot_kapitan() {
    let Some(py) = python() else { return };
    let p = project("filters");
    fs::rename(
        p.path().join("lib/jinja2_filters.py"),
        p.path().join("lib/my_filters.py"),
    )
    .unwrap();
    fs::write(
        p.path().join(".kapitan"),
        "compile:\n  jinja2-filters: lib/my_filters.py\n",
    )
    .unwrap();
    // Only jinja2 entries use the named file; jsonnet's
    // `kap.jinja2_template` loads the default one, gone here (as in Kapitan).
    let t = p.path().join("inventory/targets/one.yml");
    let text = fs::read_to_string(&t).unwrap();
    let cut = text.find("      - output_path: jsonnet").unwrap();
    fs::write(&t, &text[..cut]).unwrap();
    compile(p.path(), &py).success();
    assert_eq!(
        fs::read_to_string(p.path().join("out/compiled/one/out.txt")).unwrap(),
        fs::read_to_string(p.path().join("expected/one/out.txt")).unwrap()
    );
    fs::write(
        p.path().join(".kapitan"),
        "compile:\n  jinja2-filters: lib/missing.py\n",
    )
    .unwrap();
    let err = compile_error(p.path(), &py);
    assert!(err.contains("missing.py does not exist"), "{err}");
}

fn compile_model(env: &[(&str, &str)]) -> tempfile::TempDir {
    let p = project("model");
    let mut cmd = strata();
    cmd.current_dir(p.path())
        .args(["compile", "--quiet", "--output-path", "out"]);
    for k in [
        "VAULT_ADDR",
        "VAULT_SKIP_VERIFY",
        "VAULT_NAMESPACE",
        "VAULT_CACERT",
        "VAULT_CAPATH",
        "VAULT_CLIENT_KEY",
        "VAULT_CLIENT_CERT",
    ] {
        cmd.env_remove(k);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.assert().success();
    p
}

/// Kapitan's pydantic model defaults in `parameters.kapitan` (no Python).
#[test]
fn kapitan_model_defaults_in_the_inventory() {
    let p = compile_model(&[]);
    assert_same_tree(&p.path().join("out/compiled"), &p.path().join("expected"));
    let p = compile_model(&[
        ("VAULT_ADDR", "http://v:8200"),
        ("VAULT_SKIP_VERIFY", "false"),
        ("VAULT_NAMESPACE", "ns"),
    ]);
    assert_same_tree(
        &p.path().join("out/compiled"),
        &p.path().join("expected-vault-env"),
    );
}

#[test]
fn unknown_secrets_backend_is_an_error() {
    let p = project("model");
    let t = p.path().join("inventory/targets/bare.yml");
    let text = fs::read_to_string(&t).unwrap().replace("gkms:", "gkmz:");
    fs::write(&t, text).unwrap();
    let out = strata()
        .current_dir(p.path())
        .args(["compile", "--quiet", "--output-path", "out"])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8_lossy(&out);
    assert!(err.contains("parameters.kapitan.secrets.gkmz"), "{err}");
    assert!(err.contains("target bare"), "{err}");
}

/// jsonnet numbers become strings as in the C++ jsonnet (no Python).
#[test]
fn jsonnet_numbers_in_strings_match_cpp_jsonnet() {
    let p = project("numbers");
    strata()
        .current_dir(p.path())
        .args(["compile", "--quiet", "--output-path", "out"])
        .assert()
        .success();
    assert_same_tree(&p.path().join("out/compiled"), &p.path().join("expected"));
    let yaml = fs::read_to_string(p.path().join("out/compiled/nums/strings.yaml")).unwrap();
    assert!(yaml.contains("'0.029999999999999999'"), "{yaml}");
}

/// compat37: a repository whose `.kapitan` pins an older `version:`
/// (myspotontheweb/kapitan-demo: 0.29, neXenio/kapitan-reference: 0.31)
/// compiles with Kapitan 0.36 only as `kapitan compile
/// --ignore-version-check`; the same command line with strata failed
/// with "unexpected argument". `--use-go-jsonnet` likewise: both change
/// nothing in strata's output.
#[test]
fn kapitans_version_check_and_go_jsonnet_switches_are_accepted() {
    let p = project("numbers");
    fs::write(
        p.path().join(".kapitan"),
        "version: 0.29\ncompile:\n  prune: true\n",
    )
    .unwrap();
    strata()
        .current_dir(p.path())
        .args([
            "compile",
            "--ignore-version-check",
            "--use-go-jsonnet",
            "--quiet",
            "--output-path",
            "out",
        ])
        .assert()
        .success();
    assert_same_tree(&p.path().join("out/compiled"), &p.path().join("expected"));
}

/// Duplicate keys stay an error (reclass-rs refuses them; Kapitan's reclass
/// keeps the last); `strata lint` lists all of them at once.
#[test]
fn lint_lists_every_duplicate_key() {
    let d = tempfile::tempdir().unwrap();
    let inv = d.path().join("inventory");
    fs::create_dir_all(inv.join("classes")).unwrap();
    fs::create_dir_all(inv.join("targets")).unwrap();
    fs::write(inv.join("classes/c1.yml"), "parameters:\n  a: 1\n  a: 2\n").unwrap();
    fs::write(
        inv.join("classes/c2.yml"),
        "parameters:\n  x:\n    y: 1\n    y: 2\n",
    )
    .unwrap();
    fs::write(inv.join("targets/t.yml"), "classes: [c1, c2]\n").unwrap();
    let out = strata()
        .current_dir(d.path())
        .arg("lint")
        .assert()
        .code(1)
        .get_output()
        .stderr
        .clone();
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&out),
        String::from_utf8_lossy(
            &strata()
                .current_dir(d.path())
                .arg("lint")
                .output()
                .unwrap()
                .stdout
        )
    );
    assert!(out.contains("c1.yml:3:3: duplicate key `a`"), "{out}");
    assert!(out.contains("c2.yml:4:5: duplicate key `y`"), "{out}");
    let err = strata()
        .current_dir(d.path())
        .args(["compile", "--output-path", "out"])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    // compat34 (compat-duplicate-key-hint-says-syntax): kapicorp/kapitan's
    // tests/test_resources `component/mysql.yml` repeats `storage:`; the
    // hint told the user to quote values, as for a syntax error.
    let err = String::from_utf8_lossy(&err);
    assert!(
        err.contains(
            "hint: remove one of the two keys: Kapitan's reclass silently keeps the last value"
        ),
        "{err}"
    );
    assert!(!err.contains("quote values"), "{err}");
}

/// A loopback HTTP server for `www`: answers 200 with the file, 404 when
/// there is none, 503 once `down` is set (the network is gone).
fn serve(www: PathBuf, down: std::sync::Arc<std::sync::atomic::AtomicBool>) -> u16 {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut line = String::new();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                    break;
                }
            }
            let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
            let file = www.join(path.trim_start_matches('/'));
            let (status, body) = if down.load(std::sync::atomic::Ordering::SeqCst) {
                ("503 Service Unavailable", Vec::new())
            } else {
                match fs::read(&file) {
                    Ok(b) if !path.contains("..") => ("200 OK", b),
                    _ => ("404 Not Found", Vec::new()),
                }
            };
            let mut resp = format!(
                "HTTP/1.0 {status}\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
                body.len()
            )
            .into_bytes();
            resp.extend_from_slice(&body);
            let _ = stream.write_all(&resp);
        }
    });
    port
}

/// `parameters.kapitan.dependencies` with `--fetch`, `--force-fetch` and
/// the cache used offline, against a local bare repository and a loopback
/// HTTP server; the files are Kapitan's.
#[test]
fn kapitan_dependencies_fetch_like_kapitan() {
    use crate::support::git;
    let fx = fixture("deps");
    let tmp = tempfile::tempdir().unwrap();
    // The repository: `repo-v1` tagged v1, then `repo-v2` on main.
    let src = tmp.path().join("src");
    copy_tree(&fx.join("repo-v1"), &src);
    git(&src, &["init", "-q"]);
    git(&src, &["add", "-A"]);
    git(&src, &["commit", "-qm", "one"]);
    git(&src, &["tag", "v1"]);
    copy_tree(&fx.join("repo-v2"), &src);
    git(&src, &["add", "-A"]);
    git(&src, &["commit", "-qm", "two"]);
    let bare = tmp.path().join("repo.git");
    git(tmp.path(), &["clone", "-q", "--bare", "src", "repo.git"]);
    let down = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let port = serve(fx.join("www"), down.clone());

    let proj = tmp.path().join("proj");
    copy_tree(&fx.join("inventory"), &proj.join("inventory"));
    fs::create_dir_all(proj.join("inventory/classes")).unwrap();
    let t = proj.join("inventory/targets/t1.yml");
    let text = fs::read_to_string(&t)
        .unwrap()
        .replace("@REPO@", &bare.display().to_string())
        .replace("@PORT@", &port.to_string());
    fs::write(&t, text).unwrap();
    let cache = tmp.path().join("cache");
    let run = |args: &[&str]| {
        strata()
            .current_dir(&proj)
            .env("STRATA_DEPENDENCY_CACHE", &cache)
            .args(["compile", "--output-path", "."])
            .args(args)
            .assert()
    };

    // Without --fetch nothing is fetched (and the copy input is missing).
    run(&[]).code(2);
    assert!(!proj.join("vendor").exists());

    run(&["--fetch"]).success();
    assert_same_tree(&proj.join("vendor"), &fx.join("expected/vendor"));
    assert_same_tree(&proj.join("compiled"), &fx.join("expected/compiled"));

    // A fetch never overwrites what is there; a forced one does.
    let edited = proj.join("vendor/repo-head/lib/one.libsonnet");
    fs::write(&edited, "edited\n").unwrap();
    run(&["--fetch"]).success();
    assert_eq!(fs::read_to_string(&edited).unwrap(), "edited\n");
    run(&["--force-fetch"]).success();
    assert_eq!(
        fs::read_to_string(&edited).unwrap(),
        fs::read_to_string(fx.join("expected/vendor/repo-head/lib/one.libsonnet")).unwrap()
    );

    // `.kapitan`'s `fetch: true` stands for --fetch.
    fs::remove_dir_all(proj.join("vendor")).unwrap();
    fs::write(proj.join(".kapitan"), "compile:\n  fetch: true\n").unwrap();
    run(&[]).success();
    assert_same_tree(&proj.join("vendor"), &fx.join("expected/vendor"));
    fs::remove_file(proj.join(".kapitan")).unwrap();

    // Offline: the remote and the server are gone, the cache serves.
    fs::rename(&bare, tmp.path().join("moved.git")).unwrap();
    down.store(true, std::sync::atomic::Ordering::SeqCst);
    fs::remove_dir_all(proj.join("vendor")).unwrap();
    let out = run(&["--fetch"]).success().get_output().stderr.clone();
    let err = String::from_utf8_lossy(&out);
    assert!(err.contains("using the cached copy"), "{err}");
    assert_same_tree(&proj.join("vendor"), &fx.join("expected/vendor"));
    // --force-fetch needs the network for http.
    let out = run(&["--force-fetch"]).code(2).get_output().stderr.clone();
    let err = String::from_utf8_lossy(&out);
    assert!(err.contains("fetching unsuccessful"), "{err}");
    assert!(err.contains("target t1"), "{err}");
}

/// A helm chart dependency without the helm binary: a clear error.
#[test]
fn helm_dependency_without_helm_is_a_clear_error() {
    let d = tempfile::tempdir().unwrap();
    let inv = d.path().join("inventory");
    fs::create_dir_all(inv.join("classes")).unwrap();
    fs::create_dir_all(inv.join("targets")).unwrap();
    fs::write(
        inv.join("targets/t.yml"),
        "parameters:\n  kapitan:\n    vars:\n      target: t\n    dependencies:\n      - type: helm\n        source: http://127.0.0.1:9/charts\n        chart_name: demo\n        version: 1.0.0\n        output_path: charts/demo\n        helm_path: /nonexistent/helm\n",
    )
    .unwrap();
    let out = strata()
        .current_dir(d.path())
        .env("STRATA_DEPENDENCY_CACHE", d.path().join("cache"))
        .args(["compile", "--fetch", "--output-path", "."])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8_lossy(&out);
    assert!(err.contains("needs the helm binary"), "{err}");
    assert!(err.contains("target t"), "{err}");
    assert!(err.contains("install helm"), "{err}");
}

/// Probe 27 (helm-pull-without-time-limit): `helm pull` ran without a
/// time limit, so a chart repository that never answers held the fetch
/// for ever. It runs like every program a compile starts, stopped past
/// STRATA_PROGRAM_TIMEOUT (lowered here); a fake helm stands for it.
#[cfg(unix)]
#[test]
fn a_helm_pull_that_never_returns_is_stopped() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let inv = d.path().join("inventory");
    fs::create_dir_all(inv.join("targets")).unwrap();
    let helm = d.path().join("fake-helm");
    fs::write(&helm, "#!/bin/sh\nsleep 100\n").unwrap();
    fs::set_permissions(&helm, fs::Permissions::from_mode(0o755)).unwrap();
    fs::write(
        inv.join("targets/t.yml"),
        format!("parameters:\n  kapitan:\n    vars:\n      target: t\n    dependencies:\n      - type: helm\n        source: http://127.0.0.1:9/charts\n        chart_name: demo\n        version: 1.0.0\n        output_path: charts/demo\n        helm_path: {}\n", helm.display()),
    )
    .unwrap();
    let out = strata()
        .current_dir(d.path())
        .env("STRATA_DEPENDENCY_CACHE", d.path().join("cache"))
        .env("STRATA_PROGRAM_TIMEOUT", "2")
        .args(["compile", "--fetch", "--output-path", "."])
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("helm pull did not finish within 2 s and was stopped"),
        "{err}"
    );
}

/// A library module that imports a package this Python lacks: the error
/// names the package (Kapitan only says the library is not found).
#[test]
fn missing_package_of_a_kadet_library_is_named() {
    let Some(py) = python() else { return };
    let p = project("kadet");
    fs::write(
        p.path().join("lib/kgen/__init__.py"),
        "import no_such_package_for_strata\n",
    )
    .unwrap();
    let err = compile_error(p.path(), &py);
    assert!(err.contains("Could not load module name kgen"), "{err}");
    assert!(err.contains("`no_such_package_for_strata`"), "{err}");
}

/// A generator that kills its interpreter: a clear error, no hang, and
/// the catalog on disk is left alone.
#[test]
fn python_dying_mid_compile_is_an_error() {
    let Some(py) = python() else { return };
    let p = project("kadet");
    fs::write(
        p.path().join("components/allnames/__init__.py"),
        "import os\n\ndef main():\n    os._exit(3)\n",
    )
    .unwrap();
    let err = compile_error(p.path(), &py);
    assert!(err.contains("the Python bridge stopped"), "{err}");
    assert!(err.contains("components/allnames"), "{err}");
    assert!(!p.path().join("out/compiled").exists());
}

/// kapitan-reference keeps its generators' settings in
/// `parameters.components` (no `url`, no `version`): `strata lint` must not
/// report them as unpinned Commodore components, while a Commodore spec
/// (with `url`) without `version` still is.
#[test]
fn lint_leaves_kapitan_generator_components_and_secret_names_alone() {
    let d = tempfile::tempdir().unwrap();
    let inv = d.path().join("inventory");
    fs::create_dir_all(inv.join("classes")).unwrap();
    fs::create_dir_all(inv.join("targets")).unwrap();
    fs::write(
        inv.join("classes/echo.yml"),
        "parameters:\n  components:\n    echo-server:\n      image: jmalloc/echo-server\n      service:\n        type: ClusterIP\n  rabbitmq_user:\n    another-user:\n      importCredentialsSecret:\n        name: my-rabbit-user2\n      credentials:\n        value: Xk9#mP2$vL8qR4wZ\n",
    )
    .unwrap();
    fs::write(inv.join("targets/echo.yml"), "classes:\n  - echo\n").unwrap();
    // kapitan-reference's rabbitmq class: a Secret's *name* is no secret,
    // while a high-entropy value under `credentials` still is.
    let out = strata()
        .current_dir(d.path())
        .args(["lint", "--format", "json"])
        .assert()
        .code(1);
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(!text.contains("component-without-version"), "{text}");
    assert!(!text.contains("importCredentialsSecret.name"), "{text}");
    assert!(text.contains("another-user.credentials.value"), "{text}");
    assert!(
        !text.contains("Xk9#mP2"),
        "the value is never shown: {text}"
    );
    fs::write(
        inv.join("classes/echo.yml"),
        "parameters:\n  components:\n    echo-server:\n      url: https://example.com/component-echo.git\n",
    )
    .unwrap();
    let out = strata()
        .current_dir(d.path())
        .args(["lint", "--format", "json"])
        .assert()
        .code(1);
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(text.contains("component-without-version"), "{text}");
}

/// What a kadet input (or helm) prints is read into strata's memory: a
/// generator that returns a huge value meets the evaluation memory budget
/// (`STRATA_EVAL_MEMORY`, lowered here) with exit 2 naming the target,
/// entry and input, instead of taking all of the machine's memory.
#[test]
fn kadet_output_is_held_to_the_evaluation_memory_budget() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::create_dir_all(d.join("components/big")).unwrap();
    fs::write(
        d.join("components/big/__init__.py"),
        "from kapitan.inputs.kadet import BaseObj\n\n\ndef main():\n    obj = BaseObj()\n    obj.root.big = {'v': 'x' * 200000000}\n    return obj\n",
    )
    .unwrap();
    fs::create_dir_all(d.join("inventory/targets")).unwrap();
    fs::write(
        d.join("inventory/targets/t.yml"),
        "parameters:\n  kapitan:\n    vars: {target: t}\n    compile:\n      - {output_path: x, input_type: kadet, input_paths: [components/big], output_type: yaml}\n",
    )
    .unwrap();
    let out = strata()
        .current_dir(d)
        .args(["compile", "--output-path", "out", "--python"])
        .arg(&py)
        .env("STRATA_EVAL_MEMORY", "100000000")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("target t, compile entry #1 (kadet -> x), input ")
            && err.contains("components/big")
            && err.contains("the evaluations in progress hold more than 100000000 bytes of memory"),
        "{err}"
    );
    assert!(!d.join("out/compiled/t").exists());
}

/// A kadet input that never returns is stopped past the program time limit
/// (`STRATA_PROGRAM_TIMEOUT`, lowered here), and the next kadet input runs
/// in a new interpreter.
#[test]
fn a_kadet_input_that_never_returns_is_stopped() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (name, body) in [
        ("spin", "    while True:\n        pass\n"),
        (
            "ok",
            "    obj = BaseObj()\n    obj.root.a = 1\n    return obj\n",
        ),
    ] {
        fs::create_dir_all(d.join("components").join(name)).unwrap();
        fs::write(
            d.join("components").join(name).join("__init__.py"),
            format!("from kapitan.inputs.kadet import BaseObj\n\n\ndef main():\n{body}"),
        )
        .unwrap();
    }
    fs::create_dir_all(d.join("inventory/targets")).unwrap();
    fs::write(
        d.join("inventory/targets/t.yml"),
        "parameters:\n  kapitan:\n    vars: {target: t}\n    compile:\n      - {output_path: x, input_type: kadet, input_paths: [components/spin], output_type: yaml}\n      - {output_path: y, input_type: kadet, input_paths: [components/ok], output_type: yaml}\n",
    )
    .unwrap();
    let out = strata()
        .current_dir(d)
        .args([
            "compile",
            "--keep-going",
            "-p",
            "1",
            "--output-path",
            "out",
            "--python",
        ])
        .arg(&py)
        .env("STRATA_PROGRAM_TIMEOUT", "2")
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("components/spin for target t did not finish within 2 s and was stopped")
            && err.contains("raise STRATA_PROGRAM_TIMEOUT"),
        "{err}"
    );
    // The second entry ran in a new interpreter: its error is not "the
    // Python bridge stopped".
    assert!(!err.contains("bridge stopped"), "{err}");
}

/// Fifth re-probe: a kadet input that leaves work for the interpreter's
/// exit (an `atexit` handler, a non-daemon thread) held the compile for as
/// long as that work ran: the bridge waited for the interpreter without a
/// bound once the last call had returned. The exit is now bounded like a
/// call; the catalog is installed and a warning names the last call.
/// (Before, this test waited for the sleeps: the interpreter holds stderr.)
#[test]
fn a_kadet_input_that_leaves_work_for_exit_does_not_hold_the_compile() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::create_dir_all(d.join("components/k")).unwrap();
    fs::write(
        d.join("components/k/__init__.py"),
        "import atexit, threading, time\n\n\ndef main(p):\n    atexit.register(time.sleep, 100)\n    threading.Thread(target=time.sleep, args=(100,)).start()\n    return {\"x\": {\"a\": 1}}\n",
    )
    .unwrap();
    fs::create_dir_all(d.join("inventory/targets")).unwrap();
    fs::write(
        d.join("inventory/targets/t.yml"),
        "parameters:\n  kapitan:\n    vars: {target: t}\n    compile:\n      - {output_path: out, input_type: kadet, input_paths: [components/k], output_type: yaml}\n",
    )
    .unwrap();
    let started = std::time::Instant::now();
    let out = strata()
        .current_dir(d)
        .args(["compile", "--python"])
        .arg(&py)
        .env("STRATA_PROGRAM_TIMEOUT", "2")
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "{err}"
    );
    assert!(
        err.contains("did not exit within 2 s of its last call")
            && err.contains("components/k for target t"),
        "{err}"
    );
    assert_eq!(
        fs::read_to_string(d.join("compiled/t/out/x.yaml")).unwrap(),
        "a: 1\n"
    );
}
