//! Kapitan secret references: the corpus Kapitan 0.36.3 wrote
//! (tests/fixtures/refs: refs from `kapitan refs --write`, catalogs from
//! `kapitan compile` and `--reveal`), errors, functions, `strata refs`,
//! gpg round trips with a key made here, and no secret in review output.

use crate::strata;
use crate::support::copy_tree;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/refs")
}

/// A writable copy of the corpus project.
fn project() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    copy_tree(&corpus().join("project"), d.path());
    d
}

/// Every file below `root`, relative path -> bytes.
fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        let Ok(rd) = fs::read_dir(dir) else { return };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn assert_same_tree(expected: &Path, actual: &Path) {
    let e = tree(expected);
    let a = tree(actual);
    assert_eq!(
        e.keys().collect::<Vec<_>>(),
        a.keys().collect::<Vec<_>>(),
        "file lists differ"
    );
    for (k, v) in &e {
        assert!(
            a[k] == *v,
            "{k} differs:\n--- kapitan\n{}\n--- strata\n{}",
            String::from_utf8_lossy(v),
            String::from_utf8_lossy(&a[k])
        );
    }
}

const COMPILE_TARGETS: &[&str] = &[
    "base64",
    "plain",
    "env",
    "b64enc",
    "subvar",
    "gpg",
    "vault",
    "hashed",
    "functions",
    "kms",
];
const REVEAL_TARGETS: &[&str] = &[
    "base64",
    "plain",
    "env",
    "b64enc",
    "subvar",
    "hashed",
    "functions",
];

#[test]
fn compiled_catalog_equals_kapitans_byte_for_byte() {
    let p = project();
    let refs_before = tree(&p.path().join("refs"));
    let out = tempfile::tempdir().unwrap();
    strata()
        .current_dir(p.path())
        .args(["compile", "--quiet", "--output-path"])
        .arg(out.path())
        .arg("-t")
        .args(COMPILE_TARGETS)
        .assert()
        .success();
    assert_same_tree(
        &corpus().join("expected/compiled"),
        &out.path().join("compiled"),
    );
    // Every reference existed (Kapitan wrote them): nothing was created.
    assert_eq!(refs_before, tree(&p.path().join("refs")));
}

#[test]
fn revealed_catalog_equals_kapitans_byte_for_byte() {
    let p = project();
    let out = tempfile::tempdir().unwrap();
    strata()
        .current_dir(p.path())
        .env("KAPITAN_VAR_db_host", "from-env")
        .args(["compile", "--quiet", "--reveal", "--output-path"])
        .arg(out.path())
        .arg("-t")
        .args(REVEAL_TARGETS)
        .assert()
        .success();
    // strata's only addition: the marker that keeps this catalog out of reviews.
    let marker = out.path().join("compiled/.strata-revealed");
    assert!(marker.is_file());
    fs::remove_file(marker).unwrap();
    assert_same_tree(
        &corpus().join("expected-reveal/compiled"),
        &out.path().join("compiled"),
    );
}

#[test]
fn refs_path_flag_and_dot_kapitan() {
    let p = project();
    fs::rename(p.path().join("refs"), p.path().join("secrets")).unwrap();
    let out = tempfile::tempdir().unwrap();
    // Without the setting the references are missing.
    strata()
        .current_dir(p.path())
        .args(["compile", "--quiet", "-t", "base64", "--output-path"])
        .arg(out.path())
        .assert()
        .code(2);
    strata()
        .current_dir(p.path())
        .args([
            "compile",
            "--quiet",
            "-t",
            "base64",
            "--refs-path",
            "secrets",
            "--output-path",
        ])
        .arg(out.path())
        .assert()
        .success();
    fs::write(
        p.path().join(".kapitan"),
        "compile:\n  refs-path: ./secrets\n",
    )
    .unwrap();
    let out2 = tempfile::tempdir().unwrap();
    strata()
        .current_dir(p.path())
        .args(["compile", "--quiet", "-t", "base64", "--output-path"])
        .arg(out2.path())
        .assert()
        .success();
    assert_eq!(
        fs::read(out2.path().join("compiled/base64/secrets.yaml")).unwrap(),
        fs::read(corpus().join("expected/compiled/base64/secrets.yaml")).unwrap()
    );
}

#[test]
fn errors_name_tag_file_target_and_leave_the_catalog_alone() {
    let cases: &[(&str, &[&str])] = &[
        (
            "missing",
            &[
                "?{base64:targets/missing/nothing_here}",
                "refs/targets/missing/nothing_here does not exist",
                "target missing",
                "strata refs --write base64:targets/missing/nothing_here",
            ],
        ),
        ("badfunc", &["nosuchfunction: unknown ref function used", "target badfunc"]),
        (
            "mismatch",
            &["token hash does not match with stored reference hash: base64:common/shared:f326a4c9"],
        ),
    ];
    for (target, needles) in cases {
        let p = project();
        let out = tempfile::tempdir().unwrap();
        let marker = out.path().join("compiled/keep/me.yaml");
        fs::create_dir_all(marker.parent().unwrap()).unwrap();
        fs::write(&marker, "a: 1\n").unwrap();
        let a = strata()
            .current_dir(p.path())
            .args(["compile", "--quiet", "-t", target, "--output-path"])
            .arg(out.path())
            .assert()
            .code(2);
        let err = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
        for n in *needles {
            assert!(err.contains(n), "{target}: `{n}` not in:\n{err}");
        }
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(fs::read_to_string(&marker).unwrap(), "a: 1\n");
        assert!(!out.path().join("compiled").join(target).exists());
    }
}

#[test]
fn cloud_kms_reveal_is_a_clear_error() {
    let p = project();
    let out = tempfile::tempdir().unwrap();
    let a = strata()
        .current_dir(p.path())
        .args([
            "compile",
            "--quiet",
            "--reveal",
            "-t",
            "kms",
            "--output-path",
        ])
        .arg(out.path())
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert!(err.contains("?{gkms:targets/kms/key}"), "{err}");
    assert!(err.contains("target kms"), "{err}");
    assert!(err.contains("not built into strata"), "{err}");
}

#[test]
fn functions_create_references_once() {
    let p = project();
    fs::remove_dir_all(p.path().join("refs/targets/functions")).unwrap();
    let compile = |out: &Path| {
        strata()
            .current_dir(p.path())
            .args(["compile", "--quiet", "-t", "functions", "--output-path"])
            .arg(out)
            .assert()
            .success();
    };
    let o1 = tempfile::tempdir().unwrap();
    let o2 = tempfile::tempdir().unwrap();
    compile(o1.path());
    let refs1 = tree(&p.path().join("refs/targets/functions"));
    compile(o2.path());
    assert_eq!(refs1, tree(&p.path().join("refs/targets/functions")));
    assert_same_tree(&o1.path().join("compiled"), &o2.path().join("compiled"));
    assert_eq!(refs1.len(), 12, "{:?}", refs1.keys());
    let yaml = fs::read_to_string(o1.path().join("compiled/functions/secrets.yaml")).unwrap();
    assert!(
        yaml.contains("first: ?{base64:targets/functions/random:"),
        "{yaml}"
    );
    // The reference file layout Kapitan writes (and reads).
    let rs = String::from_utf8(refs1["randomstr"].clone()).unwrap();
    assert!(
        rs.starts_with("data: ") && rs.ends_with("encoding: base64\ntype: base64\n"),
        "{rs}"
    );
    let reveal = |tag: &str| -> String {
        let a = strata()
            .current_dir(p.path())
            .args(["refs", "--reveal", "--tag", tag])
            .assert()
            .success();
        String::from_utf8(a.get_output().stdout.clone()).unwrap()
    };
    assert_eq!(reveal("?{base64:targets/functions/random}").len(), 43);
    assert_eq!(reveal("?{base64:targets/functions/lower}").len(), 12);
    assert!(reveal("?{base64:targets/functions/int}")
        .chars()
        .all(|c| c.is_ascii_digit()));
    assert_eq!(
        reveal("?{base64:targets/functions/basicauth}"),
        "YWRtaW46c2VjcmV0"
    );
    assert!(reveal("?{base64:targets/functions/rsa}").starts_with("-----BEGIN PRIVATE KEY-----"));
    assert!(reveal("?{base64:targets/functions/rsa_pub}").starts_with("-----BEGIN PUBLIC KEY-----"));
    assert!(reveal("?{base64:targets/functions/ed}").starts_with("-----BEGIN PRIVATE KEY-----"));
    assert!(reveal("?{base64:targets/functions/ed_pub}").starts_with("-----BEGIN PUBLIC KEY-----"));
    assert_eq!(reveal("?{base64:targets/functions/hashed}").len(), 64);
}

#[test]
fn refs_write_gives_kapitans_files() {
    let d = tempfile::tempdir().unwrap();
    let cases = [
        ("base64:common/shared", "s3cr3t-shared", false),
        ("base64:common/encoded", "encoded secret", true),
        ("plain:common/plain_b64", "plain with base64", true),
        ("env:targets/env/db_host", "db.example.internal", false),
        ("base64:common/binaryish", "line1\nline2: x\n", false),
        ("plain:common/plain_yaml", "a:\n  b: nested-plain\n", false),
    ];
    for (token, value, b64) in cases {
        let mut c = strata();
        c.current_dir(d.path())
            .args(["refs", "--write", token, "-f", "-"])
            .write_stdin(value);
        if b64 {
            c.arg("--base64");
        }
        c.assert().success();
        let path = token.split_once(':').unwrap().1;
        assert_eq!(
            fs::read_to_string(d.path().join("refs").join(path)).unwrap(),
            fs::read_to_string(corpus().join("project/refs").join(path)).unwrap(),
            "{token}"
        );
    }
    // Reveal: tags in a file, a reference file, and a bad write.
    let f = d.path().join("x.txt");
    fs::write(
        &f,
        "a=?{base64:common/shared} b=?{plain:common/plain_b64}\n",
    )
    .unwrap();
    let a = strata()
        .current_dir(d.path())
        .args(["refs", "--reveal", "-f"])
        .arg(&f)
        .assert()
        .success();
    assert_eq!(
        String::from_utf8_lossy(&a.get_output().stdout),
        "a=s3cr3t-shared b=cGxhaW4gd2l0aCBiYXNlNjQ=\n"
    );
    strata()
        .current_dir(d.path())
        .args(["refs", "--write", "nope:x", "-f", "-"])
        .write_stdin("v")
        .assert()
        .code(2);
    strata()
        .current_dir(d.path())
        .args(["refs", "--write", "plain:../escape", "-f", "-"])
        .write_stdin("v")
        .assert()
        .code(2);
    assert!(!d.path().join("escape").exists());
}

/// Probe 40 (probe 39's left-over): `refs --write` of a value larger than a
/// reference holds was read whole and written (100 MB: 1.3 GB of memory,
/// 15 s, a 133 MB file every later compile refused). Refused before it is
/// read, from a file's size or after 64 MiB of stdin.
#[test]
fn refs_write_refuses_a_value_larger_than_a_reference_holds() {
    let d = tempfile::tempdir().unwrap();
    let big = d.path().join("big.bin");
    // Sparse: nothing of it is read.
    fs::File::create(&big)
        .unwrap()
        .set_len((64 << 20) + 1)
        .unwrap();
    let out = strata()
        .current_dir(d.path())
        .args(["refs", "--write", "base64:big", "--binary", "-f"])
        .arg(&big)
        .timeout(std::time::Duration::from_secs(60))
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        err.contains(
            "holds more than 67108864 bytes: a reference holds one secret of at most 64 MiB"
        ),
        "{err}"
    );
    assert!(!d.path().join("refs/big").exists());
}

/// Probe 40: `refs --reveal --ref-file X` (and `-f X`) read X whole, of any
/// kind: a FIFO blocked for ever and a link to `/dev/zero` read until
/// memory ran out.
#[test]
fn refs_reveal_reads_only_regular_files() {
    let d = tempfile::tempdir().unwrap();
    assert!(std::process::Command::new("mkfifo")
        .arg(d.path().join("fifo"))
        .status()
        .unwrap()
        .success());
    std::os::unix::fs::symlink("/dev/zero", d.path().join("zero")).unwrap();
    for name in ["fifo", "zero"] {
        for flag in ["--ref-file", "-f"] {
            let out = strata()
                .current_dir(d.path())
                .args(["refs", "--reveal", flag, name])
                .timeout(std::time::Duration::from_secs(30))
                .assert()
                .code(2);
            let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
            assert!(
                err.contains(&format!(
                    "{name}: is not a regular file (a directory, a FIFO or a device)"
                )),
                "{flag} {name}: {err}"
            );
        }
    }
}

/// compat38: `refs --write plain:x --binary -f key.bin` of bytes that are
/// not UTF-8 stored U+FFFD for them (the secret was lost; Kapitan fails on
/// `data.decode()`). Refused, nothing written; base64 keeps the bytes.
#[test]
fn binary_values_that_are_not_text_are_refused_by_text_references() {
    let d = tempfile::tempdir().unwrap();
    let bytes: &[u8] = &[0xbf, 0xeb, 0xe1, 0x70, 0x00, 0xff, b'\n'];
    for token in ["plain:common/key", "env:common/key"] {
        let out = strata()
            .current_dir(d.path())
            .args(["refs", "--write", token, "--binary", "-f", "-"])
            .write_stdin(bytes)
            .assert()
            .code(2)
            .get_output()
            .stderr
            .clone();
        let err = String::from_utf8_lossy(&out);
        assert!(
            err.contains(&format!("cannot write ?{{{token}}}: a ")),
            "{err}"
        );
        assert!(
            err.contains("holds text, and the value is not UTF-8"),
            "{err}"
        );
        assert!(err.contains("--base64"), "{err}");
        assert!(!d.path().join("refs/common/key").exists(), "{token}");
    }
    for args in [
        &[
            "refs",
            "--write",
            "plain:common/key",
            "--binary",
            "--base64",
            "-f",
            "-",
        ][..],
        &[
            "refs",
            "--write",
            "base64:common/key2",
            "--binary",
            "-f",
            "-",
        ][..],
    ] {
        strata()
            .current_dir(d.path())
            .args(args)
            .write_stdin(bytes)
            .assert()
            .success();
    }
    let revealed = strata()
        .current_dir(d.path())
        .args(["refs", "--reveal", "--tag", "?{base64:common/key2}"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    // As Kapitan reveals binary data: base64.
    assert_eq!(String::from_utf8_lossy(&revealed), "v+vhcAD/Cg==");
}

fn have_gpg() -> bool {
    std::process::Command::new("gpg")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn gpg_round_trip_with_a_key_made_here() {
    if !have_gpg() {
        eprintln!("gpg not installed: skipped");
        return;
    }
    let (home, _) = gpg_home(&["Strata Test <strata-test@example.com>"]);
    let p = project();
    strata()
        .current_dir(p.path())
        .env("GNUPGHOME", home.path())
        .args([
            "refs",
            "--write",
            "gpg:targets/gpg/password",
            "-R",
            "strata-test@example.com",
            "-f",
            "-",
        ])
        .write_stdin("gpg-protected")
        .assert()
        .success();
    let file = fs::read_to_string(p.path().join("refs/targets/gpg/password")).unwrap();
    assert!(file.contains("recipients:\n- fingerprint: "), "{file}");
    assert!(file.ends_with("type: gpg\n"), "{file}");
    assert!(!file.contains("gpg-protected"));
    // The target lists Kapitan's fixture key; strata's file names its own.
    let out = tempfile::tempdir().unwrap();
    strata()
        .current_dir(p.path())
        .env("GNUPGHOME", home.path())
        .args([
            "compile",
            "--quiet",
            "--reveal",
            "-t",
            "gpg",
            "--output-path",
        ])
        .arg(out.path())
        .assert()
        .success();
    let y = fs::read_to_string(out.path().join("compiled/gpg/secrets.yaml")).unwrap();
    assert_eq!(
        y,
        "data:\n  first: gpg-protected\n  list:\n    - gpg-protected\n"
    );
    let hashed = tempfile::tempdir().unwrap();
    strata()
        .current_dir(p.path())
        .env("GNUPGHOME", home.path())
        .args(["compile", "--quiet", "-t", "gpg", "--output-path"])
        .arg(hashed.path())
        .assert()
        .success();
    let y = fs::read_to_string(hashed.path().join("compiled/gpg/secrets.yaml")).unwrap();
    assert!(
        y.starts_with("data:\n  first: ?{gpg:targets/gpg/password:"),
        "{y}"
    );
    // A function creates a gpg reference for the target's recipients.
    fs::write(
        p.path().join("inventory/targets/gpg.yml"),
        "classes:\n  - common\nparameters:\n  kapitan:\n    secrets:\n      gpg:\n        recipients:\n          - name: strata-test@example.com\n  data:\n    first: ?{gpg:targets/gpg/made||random:str:20}\n    list: []\n",
    )
    .unwrap();
    strata()
        .current_dir(p.path())
        .env("GNUPGHOME", home.path())
        .args(["compile", "--quiet", "-t", "gpg", "--output-path"])
        .arg(hashed.path())
        .assert()
        .success();
    let a = strata()
        .current_dir(p.path())
        .env("GNUPGHOME", home.path())
        .args(["refs", "--reveal", "--tag", "?{gpg:targets/gpg/made}"])
        .assert()
        .success();
    assert_eq!(a.get_output().stdout.len(), 20);
    // --update re-encrypts for the target's recipients, keeping the value.
    let before = fs::read_to_string(p.path().join("refs/targets/gpg/password")).unwrap();
    strata()
        .current_dir(p.path())
        .env("GNUPGHOME", home.path())
        .args(["refs", "--update", "gpg:targets/gpg/password", "-t", "gpg"])
        .assert()
        .success();
    let after = fs::read_to_string(p.path().join("refs/targets/gpg/password")).unwrap();
    assert_ne!(before, after);
    let a = strata()
        .current_dir(p.path())
        .env("GNUPGHOME", home.path())
        .args(["refs", "--reveal", "--tag", "?{gpg:targets/gpg/password}"])
        .assert()
        .success();
    assert_eq!(a.get_output().stdout, b"gpg-protected");
}

// ------------------------------------------------------------ no leaks

const OLD_VALUE: &str = "s3cr3t-shared";
const NEW_VALUE: &str = "n3w-r0tated-Secret";

fn assert_no_value(what: &str, text: &str) {
    use base64::Engine;
    for v in [OLD_VALUE, NEW_VALUE, "alpha value"] {
        let b64 = base64::engine::general_purpose::STANDARD.encode(v);
        assert!(!text.contains(v), "{what} leaks `{v}`:\n{text}");
        assert!(!text.contains(&b64), "{what} leaks base64 `{b64}`:\n{text}");
    }
}

/// Base and head catalogs of the corpus where `common/shared` was rotated.
fn rotated() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let p = project();
    let compile = |out: &Path| {
        strata()
            .current_dir(p.path())
            .args([
                "compile",
                "--quiet",
                "-t",
                "base64",
                "hashed",
                "--output-path",
            ])
            .arg(out)
            .assert()
            .success();
    };
    let base = p.path().join("base-out");
    let head = p.path().join("head-out");
    compile(&base);
    strata()
        .current_dir(p.path())
        .args(["refs", "--write", "base64:common/shared", "-f", "-"])
        .write_stdin(NEW_VALUE)
        .assert()
        .success();
    // The `hashed` target pins the old hash: point it at the new file.
    fs::write(
        p.path().join("inventory/targets/hashed.yml"),
        "classes:\n  - common\nparameters:\n  data:\n    first: ?{base64:common/shared}\n    list: []\n",
    )
    .unwrap();
    compile(&head);
    (p, base.join("compiled"), head.join("compiled"))
}

#[test]
fn no_secret_value_in_any_review_output() {
    let (p, base, head) = rotated();
    let mut json = String::new();
    for fmt in ["text", "markdown", "json"] {
        let a = strata()
            .args(["diff", "--color", "never", "--format", fmt, "--catalogs"])
            .arg(&base)
            .arg(&head)
            .assert();
        let out = a.get_output();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_no_value(fmt, &text);
        assert_no_value(fmt, &err);
        assert!(
            text.contains("secret changed, value not shown"),
            "{fmt}: {text}"
        );
        assert!(text.contains("?{base64:common/shared:"), "{fmt}: {text}");
        if fmt == "json" {
            json = text;
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let diff = dir.path().join("diff.json");
    fs::write(&diff, &json).unwrap();
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
    let body = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_no_value("comment", &body);
    assert!(body.contains("secret changed, value not shown"), "{body}");
    assert_no_value("comment stderr", &String::from_utf8_lossy(&out.stderr));
    if artifact.exists() {
        assert_no_value("artifact", &fs::read_to_string(&artifact).unwrap());
    }
    // A fork's pull request: job summary and annotations instead.
    let gh = crate::github_api::FakeGithub::start();
    let mut event: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/review/github/pull_request_event.json"),
        )
        .unwrap(),
    )
    .unwrap();
    event["pull_request"]["head"]["repo"]["full_name"] = "someone/infra".into();
    fs::write(dir.path().join("event.json"), event.to_string()).unwrap();
    let out = strata()
        .current_dir(dir.path())
        .args(["comment", "--diff"])
        .arg(&diff)
        .env("GITHUB_API_URL", &gh.url)
        .env("GITHUB_REPOSITORY", "acme/infra")
        .env("GITHUB_EVENT_PATH", dir.path().join("event.json"))
        .env("GITHUB_TOKEN", "ghs_testtoken")
        .env("GITHUB_STEP_SUMMARY", dir.path().join("summary.md"))
        .output()
        .unwrap();
    assert_no_value("annotations", &String::from_utf8_lossy(&out.stdout));
    assert_no_value("comment stderr", &String::from_utf8_lossy(&out.stderr));
    let summary = fs::read_to_string(dir.path().join("summary.md")).unwrap_or_default();
    assert_no_value("job summary", &summary);
    // Push dry-run of the head catalog.
    let bare = p.path().join("catalog.git");
    let st = std::process::Command::new("git")
        .args(["init", "--quiet", "--bare"])
        .arg(&bare)
        .status()
        .unwrap();
    assert!(st.success());
    let out = strata()
        .current_dir(p.path())
        .args([
            "push",
            "--dry-run",
            "--author",
            "Dev <dev@example.com>",
            "--catalog-dir",
        ])
        .arg(&head)
        .arg("--catalog-repo")
        .arg(format!("file://{}", bare.display()))
        .arg("--cache-dir")
        .arg(p.path().join("cache"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_no_value("push dry-run", &String::from_utf8_lossy(&out.stdout));
    assert_no_value("push dry-run stderr", &String::from_utf8_lossy(&out.stderr));
}

#[test]
fn revealed_catalogs_are_refused_by_review_and_publish() {
    let p = project();
    let out = p.path().join("revealed");
    strata()
        .current_dir(p.path())
        .args([
            "compile",
            "--quiet",
            "--reveal",
            "-t",
            "base64",
            "--output-path",
        ])
        .arg(&out)
        .assert()
        .success();
    let compiled = out.join("compiled");
    assert!(compiled.join(".strata-revealed").is_file());
    let yaml = fs::read_to_string(compiled.join("base64/secrets.yaml")).unwrap();
    assert!(yaml.contains(OLD_VALUE), "{yaml}");
    let check = |a: assert_cmd::assert::Assert, what: &str| {
        let o = a.code(2);
        let out = o.get_output();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(all.contains("reveal"), "{what}: {all}");
        assert_no_value(what, &all);
    };
    check(
        strata()
            .args(["diff", "--catalogs"])
            .arg(&compiled)
            .arg(&compiled)
            .assert(),
        "diff",
    );
    check(
        strata()
            .args(["diff", "--catalogs"])
            .arg(compiled.join("base64"))
            .arg(compiled.join("base64"))
            .assert(),
        "diff of a target dir",
    );
    check(
        strata()
            .current_dir(p.path())
            .args([
                "push",
                "--dry-run",
                "--author",
                "Dev <dev@example.com>",
                "--catalog-dir",
            ])
            .arg(&compiled)
            .arg("--catalog-repo")
            .arg(format!("file://{}", p.path().join("none.git").display()))
            .assert(),
        "push",
    );
    check(
        strata()
            .current_dir(p.path())
            .args(["ci", "--", "--reveal"])
            .env("GITHUB_EVENT_NAME", "push")
            .assert(),
        "ci",
    );
    check(
        strata()
            .current_dir(p.path())
            .args(["diff", "--base", "HEAD", "--", "--reveal"])
            .assert(),
        "diff --base",
    );
}

#[test]
fn lint_reports_missing_refs_without_compiling() {
    let p = project();
    let a = strata()
        .current_dir(p.path())
        .args(["lint", "--format", "json"])
        .assert()
        .code(1);
    let v: serde_json::Value = serde_json::from_slice(&a.get_output().stdout).unwrap();
    let list = v
        .as_array()
        .cloned()
        .unwrap_or_else(|| v["findings"].as_array().cloned().unwrap_or_default());
    let text = serde_json::to_string(&list).unwrap();
    let refs: Vec<&serde_json::Value> = list
        .iter()
        .filter(|d| d.to_string().contains("missing-secret-ref"))
        .collect();
    assert_eq!(refs.len(), 3, "{text}");
    assert!(
        text.contains("?{base64:targets/missing/nothing_here}"),
        "{text}"
    );
    assert!(text.contains("targets/missing.yml"), "{text}");
    assert!(
        text.contains("strata refs --write base64:targets/missing/nothing_here"),
        "{text}"
    );
    // gpg recipients' fingerprints are settings, not plaintext secrets.
    assert!(!text.contains("plaintext-secret"), "{text}");
    // Nothing was compiled or created.
    assert!(!p.path().join("compiled").exists());
    assert!(!p.path().join("refs/targets/missing").exists());
}

// ------------------------------------------------------------ fake Vault

/// A loopback Vault: token and AppRole login, KV v2 at `secret/`, KV v1 at
/// `kv1/`, transit at `transit/` (ciphertext = `vault:v1:` + reversed
/// base64, enough to prove the round trip).
struct FakeVault {
    url: String,
    store: std::sync::Arc<std::sync::Mutex<BTreeMap<String, serde_json::Value>>>,
}

const VAULT_TOKEN: &str = "s.test-token";

impl FakeVault {
    fn start() -> FakeVault {
        Self::start_with(None)
    }

    /// With `tls`, the server speaks HTTPS with that acceptor.
    fn start_with(tls: Option<openssl::ssl::SslAcceptor>) -> FakeVault {
        use std::io::{BufRead, BufReader, Read, Write};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let scheme = if tls.is_some() { "https" } else { "http" };
        let url = format!("{scheme}://{}", l.local_addr().unwrap());
        let store = std::sync::Arc::new(std::sync::Mutex::new(BTreeMap::new()));
        let st = store.clone();
        trait Rw: Read + Write {}
        impl<T: Read + Write> Rw for T {}
        std::thread::spawn(move || {
            for conn in l.incoming() {
                let Ok(conn) = conn else { continue };
                let conn: Box<dyn Rw> = match &tls {
                    Some(a) => match a.accept(conn) {
                        Ok(s) => Box::new(s),
                        Err(_) => continue,
                    },
                    None => Box::new(conn),
                };
                let mut r = BufReader::new(conn);
                let mut line = String::new();
                if r.read_line(&mut line).is_err() {
                    continue;
                }
                let mut parts = line.split_whitespace();
                let method = parts.next().unwrap_or("").to_string();
                let path = parts
                    .next()
                    .unwrap_or("")
                    .trim_start_matches("/v1/")
                    .to_string();
                let mut len = 0;
                let mut token = String::new();
                loop {
                    let mut h = String::new();
                    r.read_line(&mut h).unwrap();
                    if h.trim().is_empty() {
                        break;
                    }
                    let (k, v) = h.split_once(':').unwrap();
                    match k.to_ascii_lowercase().as_str() {
                        "content-length" => len = v.trim().parse().unwrap(),
                        "x-vault-token" => token = v.trim().to_string(),
                        _ => {}
                    }
                }
                let mut body = vec![0; len];
                r.read_exact(&mut body).unwrap();
                let body: serde_json::Value =
                    serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
                let (status, out) = Self::answer(&st, &method, &path, &token, &body);
                let text = out.to_string();
                let mut conn = r.into_inner();
                let _ = write!(
                    conn,
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{text}",
                    text.len()
                );
                let _ = conn.flush();
            }
        });
        FakeVault { url, store }
    }

    fn answer(
        st: &std::sync::Mutex<BTreeMap<String, serde_json::Value>>,
        method: &str,
        path: &str,
        token: &str,
        body: &serde_json::Value,
    ) -> (u16, serde_json::Value) {
        use serde_json::json;
        if path == "auth/userpass/login/alice" {
            return if body["password"] == "wonder" {
                (200, json!({"auth": {"client_token": VAULT_TOKEN}}))
            } else {
                (400, json!({"errors": ["invalid username or password"]}))
            };
        }
        if path == "auth/approle/login" {
            return if body["role_id"] == "role" && body["secret_id"] == "sec" {
                (200, json!({"auth": {"client_token": VAULT_TOKEN}}))
            } else {
                (400, json!({"errors": ["invalid role or secret ID"]}))
            };
        }
        if token != VAULT_TOKEN {
            return (403, json!({"errors": ["permission denied"]}));
        }
        let mut st = st.lock().unwrap();
        if let Some(key) = path.strip_prefix("transit/encrypt/") {
            let p = body["plaintext"]
                .as_str()
                .unwrap()
                .chars()
                .rev()
                .collect::<String>();
            return (
                200,
                json!({"data": {"ciphertext": format!("vault:v1:{key}:{p}")}}),
            );
        }
        if let Some(key) = path.strip_prefix("transit/decrypt/") {
            let c = body["ciphertext"].as_str().unwrap();
            let p = c.strip_prefix(&format!("vault:v1:{key}:")).unwrap();
            return (
                200,
                json!({"data": {"plaintext": p.chars().rev().collect::<String>()}}),
            );
        }
        let (key, v2) = if let Some(p) = path.strip_prefix("secret/data/") {
            (format!("secret/{p}"), true)
        } else {
            (path.to_string(), false)
        };
        match method {
            "GET" => match st.get(&key) {
                Some(d) if v2 => (200, json!({"data": {"data": d}})),
                Some(d) => (200, json!({"data": d})),
                None => (404, json!({"errors": []})),
            },
            _ => {
                let d = if v2 {
                    body["data"].clone()
                } else {
                    body.clone()
                };
                st.insert(key, d);
                (204, serde_json::Value::Null)
            }
        }
    }
}

fn vault_project(v: &FakeVault) -> tempfile::TempDir {
    let p = project();
    fs::write(
        p.path().join("inventory/targets/vault.yml"),
        format!(
            "classes:\n  - common\nparameters:\n  kapitan:\n    secrets:\n      vaultkv:\n        addr: {url}\n        auth: token\n        engine: kv-v2\n        mount: secret\n      vaulttransit:\n        addr: {url}\n        auth: token\n        crypto_key: k1\n  data:\n    first: ?{{vaultkv:targets/vault/made:secret:apps/db:password||random:str:24}}\n    list:\n      - ?{{vaultkv:targets/vault/manual}}\n      - ?{{vaulttransit:targets/vault/tr}}\n",
            url = v.url
        ),
    )
    .unwrap();
    fs::write(
        p.path().join("inventory/targets/approle.yml"),
        format!(
            "classes:\n  - common\nparameters:\n  kapitan:\n    secrets:\n      vaultkv:\n        addr: {url}\n        auth: approle\n        engine: kv\n        mount: kv1\n  data:\n    first: ?{{vaultkv:targets/approle/pw:kv1:team/app:pw||random:loweralpha:9}}\n    list: []\n",
            url = v.url
        ),
    )
    .unwrap();
    p
}

#[test]
fn vault_kv_v1_v2_transit_token_and_approle() {
    let v = FakeVault::start();
    let p = vault_project(&v);
    let run = |args: &[&str], stdin: Option<&str>| {
        let mut c = strata();
        c.current_dir(p.path())
            .env("VAULT_TOKEN", VAULT_TOKEN)
            .env("VAULT_ROLE_ID", "role")
            .env("VAULT_SECRET_ID", "sec")
            .args(args);
        if let Some(s) = stdin {
            c.write_stdin(s);
        }
        c.assert()
    };
    run(
        &[
            "refs",
            "--write",
            "vaultkv:targets/vault/manual",
            "-t",
            "vault",
            "--vault-key",
            "token",
            "-f",
            "-",
        ],
        Some("manual-vault-value"),
    )
    .success();
    run(
        &[
            "refs",
            "--write",
            "vaulttransit:targets/vault/tr",
            "-t",
            "vault",
            "-f",
            "-",
        ],
        Some("transit-value"),
    )
    .success();
    let manual = fs::read_to_string(p.path().join("refs/targets/vault/manual")).unwrap();
    assert!(manual.starts_with("data: dGFyZ2V0cy92YXVsdC9tYW51YWw6dG9rZW4=\nencoding: original\ntype: vaultkv\nvault_params:\n"), "{manual}");
    assert!(!manual.contains("manual-vault-value"));
    assert_eq!(
        v.store.lock().unwrap()["secret/targets/vault/manual"]["token"],
        "manual-vault-value"
    );
    // Compile creates the function's secret in Vault (KV v2 and, through
    // AppRole, KV v1), then --reveal reads every value back.
    let out = p.path().join("out");
    run(
        &[
            "compile",
            "--quiet",
            "-t",
            "vault",
            "approle",
            "--output-path",
            out.to_str().unwrap(),
        ],
        None,
    )
    .success();
    let y = fs::read_to_string(out.join("compiled/vault/secrets.yaml")).unwrap();
    assert!(
        y.starts_with("data:\n  first: ?{vaultkv:targets/vault/made:"),
        "{y}"
    );
    let made = v.store.lock().unwrap()["secret/apps/db"]["password"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(made.len(), 24);
    let pw = v.store.lock().unwrap()["kv1/team/app"]["pw"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(pw.len(), 9);
    let rev = p.path().join("rev");
    run(
        &[
            "compile",
            "--quiet",
            "--reveal",
            "-t",
            "vault",
            "approle",
            "--output-path",
            rev.to_str().unwrap(),
        ],
        None,
    )
    .success();
    let y = fs::read_to_string(rev.join("compiled/vault/secrets.yaml")).unwrap();
    use base64::Engine;
    // Kapitan's transit reveal gives the base64 of the value.
    let tr = base64::engine::general_purpose::STANDARD.encode("transit-value");
    assert_eq!(
        y,
        format!("data:\n  first: {made}\n  list:\n    - manual-vault-value\n    - {tr}\n")
    );
    let y = fs::read_to_string(rev.join("compiled/approle/secrets.yaml")).unwrap();
    assert!(y.contains(&format!("first: {pw}")), "{y}");
    // A wrong token: a clear error that names the reference, not the token.
    let bad = strata()
        .current_dir(p.path())
        .env("VAULT_TOKEN", "s.wrong")
        .args([
            "refs",
            "--reveal",
            "--tag",
            "?{vaultkv:targets/vault/manual}",
        ])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&bad.get_output().stderr).into_owned();
    assert!(
        err.contains("Permission Denied") && err.contains("targets/vault/manual"),
        "{err}"
    );
    assert!(!err.contains("s.wrong"), "{err}");
}

#[test]
fn ytt_output_gets_the_same_hashed_tags() {
    let p = project();
    fs::create_dir_all(p.path().join("ytt")).unwrap();
    fs::write(
        p.path().join("inventory/targets/yttcase.yml"),
        "parameters:\n  kapitan:\n    vars: {target: yttcase}\n    compile:\n      - output_path: m\n        input_type: ytt\n        input_paths: [ytt]\n  pw: ?{base64:common/shared}\n",
    )
    .unwrap();
    fs::write(
        p.path().join("ytt/secret.yml"),
        "#@ load(\"@ytt:data\", \"data\")\nkind: Secret\nstringData:\n  password: #@ data.values.pw\n  inline: \"x-?{plain:common/plain}-y\"\n",
    )
    .unwrap();
    let out = p.path().join("out");
    strata()
        .current_dir(p.path())
        .args(["compile", "--quiet", "-t", "yttcase", "--output-path"])
        .arg(&out)
        .assert()
        .success();
    let y = fs::read_to_string(out.join("compiled/yttcase/m/secret.yml")).unwrap();
    // The hash Kapitan wrote for this reference in the corpus.
    assert!(
        y.contains("password: ?{base64:common/shared:f326a4c9}"),
        "{y}"
    );
    assert!(y.contains("inline: x-plainuser-y"), "{y}");
}

#[test]
fn read_only_compiles_never_create_references() {
    let p = project();
    fs::remove_dir_all(p.path().join("refs/targets/functions")).unwrap();
    for how in ["flag", "env", "check"] {
        let mut c = strata();
        c.current_dir(p.path()).args([
            "compile",
            "--quiet",
            "-t",
            "functions",
            "--output-path",
            "out",
        ]);
        if how == "flag" {
            c.arg("--refs-read-only");
        } else if how == "check" {
            c.arg("--check");
        } else {
            c.env("STRATA_REFS_READ_ONLY", "1");
        }
        let a = c.assert().code(2);
        let err = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
        assert!(
            err.contains("reviews never create references"),
            "{how}: {err}"
        );
        assert!(!p.path().join("refs/targets/functions").exists(), "{how}");
    }
}

#[test]
fn embedded_refs_equal_kapitans_and_reveal() {
    let p = project();
    let out = p.path().join("out");
    strata()
        .current_dir(p.path())
        .args(["compile", "--quiet", "--embed-refs", "--output-path"])
        .arg(&out)
        .args([
            "-t", "base64", "subvar", "gpg", "b64enc", "hashed", "env", "kms", "vault",
        ])
        .assert()
        .success();
    assert_same_tree(
        &corpus().join("expected-embedded/compiled"),
        &out.join("compiled"),
    );
    // Revealing needs no refs directory: the reference is in the tag.
    let empty = tempfile::tempdir().unwrap();
    for t in ["subvar", "base64", "b64enc"] {
        let a = strata()
            .current_dir(empty.path())
            .args(["refs", "--reveal", "-f"])
            .arg(corpus().join(format!("expected-embedded/compiled/{t}/text/app.conf")))
            .assert()
            .success();
        assert_eq!(
            a.get_output().stdout,
            fs::read(corpus().join(format!("expected-reveal/compiled/{t}/text/app.conf"))).unwrap(),
            "{t}"
        );
    }
}

#[test]
fn refs_reveal_files_and_directories_like_kapitan() {
    let p = project();
    for (input, expected) in [
        (
            "expected-embedded/compiled/b64enc/secrets.yaml",
            "b64enc-secrets.yaml.out",
        ),
        (
            "expected/compiled/subvar/json/secrets.json",
            "subvar-secrets.json.out",
        ),
        ("expected/compiled/base64", "base64-dir.out"),
    ] {
        let a = strata()
            .current_dir(p.path())
            .args(["refs", "--reveal", "-f"])
            .arg(corpus().join(input))
            .assert()
            .success();
        assert_eq!(
            String::from_utf8_lossy(&a.get_output().stdout),
            fs::read_to_string(corpus().join("reveal-cli").join(expected)).unwrap(),
            "{input}"
        );
    }
}

/// A fresh GnuPG home with one key per uid; returns the home and the
/// keys' fingerprints.
fn gpg_home(uids: &[&str]) -> (tempfile::TempDir, Vec<String>) {
    let home = tempfile::tempdir().unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(home.path(), fs::Permissions::from_mode(0o700)).unwrap();
    }
    let mut fps = Vec::new();
    for uid in uids {
        let st = std::process::Command::new("gpg")
            .env("GNUPGHOME", home.path())
            .args([
                "--batch",
                "--passphrase",
                "",
                "--quick-gen-key",
                uid,
                "future-default",
                "default",
                "never",
            ])
            .output()
            .unwrap();
        assert!(
            st.status.success(),
            "{}",
            String::from_utf8_lossy(&st.stderr)
        );
        let out = std::process::Command::new("gpg")
            .env("GNUPGHOME", home.path())
            .args(["--batch", "--with-colons", "--list-keys", uid])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let fp = text
            .lines()
            .find(|l| l.starts_with("fpr:"))
            .and_then(|l| l.split(':').nth(9))
            .unwrap()
            .to_string();
        fps.push(fp);
    }
    (home, fps)
}

/// compat38: a gpg reference of binary data decrypts but is no text; the
/// hint said to import a private key that was there.
#[test]
fn gpg_binary_values_say_why_they_cannot_be_revealed() {
    if !have_gpg() {
        eprintln!("gpg not installed: skipped");
        return;
    }
    let (home, _) = gpg_home(&["Bin <bin@example.com>"]);
    let d = tempfile::tempdir().unwrap();
    strata()
        .current_dir(d.path())
        .env("GNUPGHOME", home.path())
        .args([
            "refs",
            "--write",
            "gpg:k",
            "-R",
            "bin@example.com",
            "--binary",
            "-f",
            "-",
        ])
        .write_stdin(&[0xbf_u8, 0xff, 0x00][..])
        .assert()
        .success();
    let out = strata()
        .current_dir(d.path())
        .env("GNUPGHOME", home.path())
        .args(["refs", "--reveal", "--tag", "?{gpg:k}"])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8_lossy(&out);
    assert!(
        err.contains("decrypted gpg data is not UTF-8 text"),
        "{err}"
    );
    assert!(err.contains("holds binary data"), "{err}");
    assert!(!err.contains("import the private key"), "{err}");
}

#[test]
fn validate_and_update_targets_for_gpg_recipients() {
    if !have_gpg() {
        eprintln!("gpg not installed: skipped");
        return;
    }
    let (home, fps) = gpg_home(&["One <one@example.com>", "Two <two@example.com>"]);
    let p = project();
    let target = |fp: &str| {
        fs::write(
            p.path().join("inventory/targets/gpg.yml"),
            format!("classes:\n  - common\nparameters:\n  kapitan:\n    secrets:\n      gpg:\n        recipients:\n          - fingerprint: {fp}\n  data:\n    first: ?{{gpg:gpg/db}}\n    list: []\n"),
        )
        .unwrap();
    };
    target(&fps[0]);
    let run = |args: &[&str]| {
        let mut c = strata();
        c.current_dir(p.path())
            .env("GNUPGHOME", home.path())
            .args(args);
        c
    };
    run(&["refs", "--write", "gpg:gpg/db", "-t", "gpg", "-f", "-"])
        .write_stdin("rotate-me")
        .assert()
        .success();
    run(&["refs", "--validate-targets"]).assert().success();
    target(&fps[1]);
    let a = run(&["refs", "--validate-targets"]).assert().code(1);
    let out = String::from_utf8_lossy(&a.get_output().stdout).into_owned();
    assert!(
        out.contains("?{gpg:gpg/db} recipient mismatch (target gpg)"),
        "{out}"
    );
    assert!(out.contains(&fps[1]) && out.contains(&fps[0]), "{out}");
    run(&["refs", "--update-targets"]).assert().success();
    run(&["refs", "--validate-targets"]).assert().success();
    let file = fs::read_to_string(p.path().join("refs/gpg/db")).unwrap();
    assert!(file.contains(&fps[1]) && !file.contains(&fps[0]), "{file}");
    let a = run(&["refs", "--reveal", "--tag", "?{gpg:gpg/db}"])
        .assert()
        .success();
    assert_eq!(a.get_output().stdout, b"rotate-me");
}

/// A self-signed certificate for 127.0.0.1 and an acceptor using it;
/// returns the acceptor and the certificate's PEM.
fn tls_acceptor() -> (openssl::ssl::SslAcceptor, Vec<u8>) {
    use openssl::{asn1::Asn1Time, hash::MessageDigest, pkey::PKey, rsa::Rsa, x509};
    let key = PKey::from_rsa(Rsa::generate(2048).unwrap()).unwrap();
    let mut name = x509::X509NameBuilder::new().unwrap();
    name.append_entry_by_text("CN", "127.0.0.1").unwrap();
    let name = name.build();
    let mut b = x509::X509Builder::new().unwrap();
    b.set_version(2).unwrap();
    b.set_subject_name(&name).unwrap();
    b.set_issuer_name(&name).unwrap();
    b.set_pubkey(&key).unwrap();
    b.set_not_before(&Asn1Time::days_from_now(0).unwrap())
        .unwrap();
    b.set_not_after(&Asn1Time::days_from_now(2).unwrap())
        .unwrap();
    let san = x509::extension::SubjectAlternativeName::new()
        .ip("127.0.0.1")
        .build(&b.x509v3_context(None, None))
        .unwrap();
    b.append_extension(san).unwrap();
    b.sign(&key, MessageDigest::sha256()).unwrap();
    let cert = b.build();
    let mut a =
        openssl::ssl::SslAcceptor::mozilla_intermediate(openssl::ssl::SslMethod::tls()).unwrap();
    a.set_private_key(&key).unwrap();
    a.set_certificate(&cert).unwrap();
    (a.build(), cert.to_pem().unwrap())
}

#[test]
fn vault_over_https_with_cacert_or_skip_verify() {
    let (acceptor, pem) = tls_acceptor();
    let v = FakeVault::start_with(Some(acceptor));
    v.store
        .lock()
        .unwrap()
        .insert("secret/app".into(), serde_json::json!({"pw": "over-tls"}));
    let p = project();
    let ca = p.path().join("ca.pem");
    fs::write(&ca, &pem).unwrap();
    let write_ref = |extra: &str| {
        fs::write(
            p.path().join("refs/app-pw"),
            format!(
                "data: YXBwOnB3\nencoding: original\ntype: vaultkv\nvault_params:\n  addr: {}\n  auth: token\n  engine: kv-v2\n  mount: secret\n{extra}",
                v.url
            ),
        )
        .unwrap();
    };
    let reveal = || {
        strata()
            .current_dir(p.path())
            .env("VAULT_TOKEN", VAULT_TOKEN)
            .env_remove("VAULT_CACERT")
            .args(["refs", "--reveal", "--tag", "?{vaultkv:app-pw}"])
            .assert()
    };
    // Verified against the CA file.
    write_ref(&format!(
        "  skip_verify: false\n  cacert: {}\n",
        ca.display()
    ));
    let a = reveal().success();
    assert_eq!(a.get_output().stdout, b"over-tls");
    // Kapitan's default, skip_verify: true.
    write_ref("");
    let a = reveal().success();
    assert_eq!(a.get_output().stdout, b"over-tls");
    // Verification on, without the CA: refused.
    write_ref("  skip_verify: false\n");
    let a = reveal().code(2);
    let err = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert!(err.contains("TLS"), "{err}");
}

/// compat34 (compat-vault-params-under-vault-names): a reference file
/// whose `vault_params` spell the address `VAULT_ADDR` (as older Kapitan
/// wrote them from the target's `kapitan.secrets.vaultkv`; Kapitan 0.36
/// reads that as `addr`) was revealed against `http://localhost:8200`.
#[test]
fn vault_params_under_vault_names_are_read() {
    let v = FakeVault::start();
    v.store.lock().unwrap().insert(
        "secret/app".into(),
        serde_json::json!({"pw": "from-vault-addr"}),
    );
    let p = project();
    fs::write(
        p.path().join("refs/app-pw"),
        format!(
            "data: YXBwOnB3\nencoding: original\ntype: vaultkv\nvault_params:\n  VAULT_ADDR: {}\n  VAULT_SKIP_VERIFY: false\n  auth: token\n  engine: kv-v2\n",
            v.url
        ),
    )
    .unwrap();
    let a = strata()
        .current_dir(p.path())
        .env("VAULT_TOKEN", VAULT_TOKEN)
        .env_remove("VAULT_ADDR")
        .args(["refs", "--reveal", "--tag", "?{vaultkv:app-pw}"])
        .assert()
        .success();
    assert_eq!(a.get_output().stdout, b"from-vault-addr");
}

#[test]
fn lint_reports_missing_refs_in_templates() {
    let p = project();
    fs::write(
        p.path().join("templates/extra.conf"),
        "ok=?{base64:common/shared}\nbad=?{base64:templates/not_there}\ntemplated=?{base64:targets/{{ target }}/x}\n",
    )
    .unwrap();
    let a = strata()
        .current_dir(p.path())
        .args(["lint", "--format", "json"])
        .assert()
        .code(1);
    let text = String::from_utf8_lossy(&a.get_output().stdout).into_owned();
    assert!(text.contains("?{base64:templates/not_there}"), "{text}");
    assert!(text.contains("templates/extra.conf"), "{text}");
    assert!(!text.contains("common/shared}"), "{text}");
    assert!(!text.contains("{{ target }}"), "{text}");
}

#[test]
fn vault_userpass_login() {
    let v = FakeVault::start();
    v.store.lock().unwrap().insert(
        "secret/app".into(),
        serde_json::json!({"pw": "via-userpass"}),
    );
    let p = project();
    fs::write(
        p.path().join("refs/app-pw"),
        format!(
            "data: YXBwOnB3\nencoding: original\ntype: vaultkv\nvault_params:\n  addr: {}\n  auth: userpass\n  engine: kv-v2\n  mount: secret\n",
            v.url
        ),
    )
    .unwrap();
    let reveal = |pw: &str| {
        strata()
            .current_dir(p.path())
            .env("VAULT_USERNAME", "alice")
            .env("VAULT_PASSWORD", pw)
            .args(["refs", "--reveal", "--tag", "?{vaultkv:app-pw}"])
            .assert()
    };
    let a = reveal("wonder").success();
    assert_eq!(a.get_output().stdout, b"via-userpass");
    let a = reveal("nope").code(2);
    let err = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert!(err.contains("userpass login failed"), "{err}");
    assert!(!err.contains("nope"), "{err}");
}

/// Kapitan's examples/kubernetes gpg references are signed by a key whose
/// public half is not published: gpg decrypts them but exits 2. Kapitan goes
/// by python-gnupg's DECRYPTION_OKAY status and reveals them; so must strata.
#[test]
fn gpg_reveals_a_reference_signed_by_an_unknown_key_like_kapitan() {
    if !have_gpg() {
        eprintln!("gpg not installed: skipped");
        return;
    }
    let f = corpus().join("gpg-unknown-signer");
    let home = tempfile::tempdir().unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(home.path(), fs::Permissions::from_mode(0o700)).unwrap();
    }
    let st = std::process::Command::new("gpg")
        .env("GNUPGHOME", home.path())
        .args(["--batch", "--import"])
        .arg(f.join("example@kapitan.dev.key"))
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let tag = "?{gpg:targets/minikube-mysql/mysql/password}";
    let a = strata()
        .current_dir(&f)
        .env("GNUPGHOME", home.path())
        .args(["refs", "--reveal", "--tag", tag, "--refs-path", "refs"])
        .assert()
        .success();
    let expected = fs::read(f.join("expected-reveal")).unwrap();
    assert_eq!(a.get_output().stdout, expected);
    // A message for a key we do not hold still fails, without gpg's status lines.
    let empty = tempfile::tempdir().unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(empty.path(), fs::Permissions::from_mode(0o700)).unwrap();
    }
    let b = strata()
        .current_dir(&f)
        .env("GNUPGHOME", empty.path())
        .args(["refs", "--reveal", "--tag", tag, "--refs-path", "refs"])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&b.get_output().stderr).into_owned();
    assert!(err.contains("gpg failed"), "{err}");
    assert!(!err.contains("[GNUPG:]"), "{err}");
    assert!(b.get_output().stdout.is_empty());
}

/// Re-probe 18 (encrypted-pem-or-symmetric-gpg-ref-waits-for-a-passphrase):
/// a gpg reference encrypted with a passphrase (`gpg -c`) made gpg-agent
/// ask for it on the terminal, and strata waited for ever.
#[test]
fn a_symmetric_gpg_reference_is_an_error_not_a_prompt() {
    use base64::Engine as _;
    if !have_gpg() {
        eprintln!("gpg not installed: skipped");
        return;
    }
    let (home, _) = gpg_home(&[]);
    let plain = home.path().join("plain.txt");
    fs::write(&plain, "secret\n").unwrap();
    let out = std::process::Command::new("gpg")
        .env("GNUPGHOME", home.path())
        .args([
            "--batch",
            "--pinentry-mode",
            "loopback",
            "--passphrase",
            "pw",
        ])
        .args(["--armor", "--symmetric", "--output", "-"])
        .arg(&plain)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = project();
    fs::create_dir_all(p.path().join("refs/k")).unwrap();
    let data = base64::engine::general_purpose::STANDARD.encode(&out.stdout);
    fs::write(
        p.path().join("refs/k/sym"),
        format!("data: {data}\nencoding: original\ntype: gpg\n"),
    )
    .unwrap();
    let a = strata()
        .current_dir(p.path())
        .env("GNUPGHOME", home.path())
        .timeout(std::time::Duration::from_secs(60))
        .args(["refs", "--reveal", "--tag", "?{gpg:k/sym}"])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert!(
        err.contains("the gpg message is encrypted with a passphrase (symmetric, `gpg -c`)"),
        "{err}"
    );
}

/// Probe 27 (gpg-reveal-decompression-bomb): a gpg message is compressed
/// before it is encrypted, and anyone can encrypt to the recipients named
/// in a reference file: 2,853 bytes decrypted to 2 GB of zeros and took
/// 4.2 GB of memory. What gpg writes is read to 64 MiB at most.
#[test]
fn a_gpg_reference_that_unpacks_without_end_is_refused() {
    if !have_gpg() {
        eprintln!("gpg not installed: skipped");
        return;
    }
    use std::io::Write;
    let (home, fps) = gpg_home(&["Bomb <bomb@example.com>"]);
    let mut gpg = std::process::Command::new("gpg")
        .env("GNUPGHOME", home.path())
        .args([
            "--batch",
            "--trust-model",
            "always",
            "--compress-algo",
            "bzip2",
        ])
        .args(["-z", "9", "-e", "-r", &fps[0]])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = gpg.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..80 {
            stdin.write_all(&zeros).unwrap();
        }
    });
    let out = gpg.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success());
    assert!(out.stdout.len() < 10_000, "{}", out.stdout.len());
    use base64::Engine;
    let p = project();
    fs::write(
        p.path().join("bomb"),
        format!(
            "data: {}\nencoding: original\nrecipients:\n- fingerprint: {}\ntype: gpg\n",
            base64::engine::general_purpose::STANDARD.encode(&out.stdout),
            fps[0]
        ),
    )
    .unwrap();
    let a = strata()
        .current_dir(p.path())
        .env("GNUPGHOME", home.path())
        .args(["refs", "--reveal", "--ref-file", "bomb"])
        .timeout(std::time::Duration::from_secs(120))
        .assert()
        .code(2);
    let o = a.get_output();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("gpg wrote more than 64 MiB: a secret is never that large"),
        "{err}"
    );
    assert!(o.stdout.is_empty(), "{}", o.stdout.len());
}
