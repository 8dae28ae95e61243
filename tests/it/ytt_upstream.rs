//! ytt's own test material run through `strata template`
//! (tests/fixtures/ytt-upstream, copied from carvel-dev/ytt with its
//! licence): the examples exactly as ytt's end-to-end test runs them, the
//! playground examples, and the `pkg/*/filetests` suites.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ytt-upstream")
}

/// Runs `strata template ARGS` in `dir` with `stdin` and extra environment.
fn template(dir: &Path, args: &[&str], stdin: Option<&[u8]>, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("strata"));
    cmd.arg("template").args(args).current_dir(dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("strata runs");
    {
        let mut pipe = child.stdin.take().expect("stdin pipe");
        if let Some(b) = stdin {
            std::io::Write::write_all(&mut pipe, b).expect("write stdin");
        }
    }
    child.wait_with_output().expect("strata finishes")
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// One case of ytt's `test/e2e/e2e_test.go`: `-f` files, flags, standard
/// input, environment and the expected stdout (a file under examples/ or the
/// literal string of the Go test).
struct E2e {
    name: &'static str,
    files: &'static [&'static str],
    flags: &'static [&'static str],
    stdin: Option<&'static str>,
    env: &'static [(&'static str, &'static str)],
    expected: Expected,
}

enum Expected {
    File(&'static str),
    Text(&'static str),
}

const DV: &[&str] = &["data-values/config.yml", "data-values/values.yml"];

fn e2e_cases() -> Vec<E2e> {
    let mut v = vec![
        E2e {
            name: "data-values --data-value",
            files: DV,
            flags: &["--data-value", "nothing=null", "--data-value", "string=str", "--data-value", "bool=true", "--data-value", "int=123", "--data-value", "float=123.123"],
            stdin: None,
            env: &[],
            expected: Expected::Text("nothing: \"null\"\nstring: str\nbool: \"true\"\nint: \"123\"\nfloat: \"123.123\"\n"),
        },
        E2e {
            name: "data-values --data-value-yaml",
            files: DV,
            flags: &["--data-value-yaml", "nothing=null", "--data-value-yaml", "string=str", "--data-value-yaml", "bool=true", "--data-value-yaml", "int=123", "--data-value-yaml", "float=123.123"],
            stdin: None,
            env: &[],
            expected: Expected::Text("nothing: null\nstring: str\nbool: true\nint: 123\nfloat: 123.123\n"),
        },
        E2e {
            name: "data-values --data-values-env",
            files: DV,
            flags: &["--data-values-env", "STR_VAL", "--data-values-env-yaml", "YAML_VAL"],
            stdin: None,
            env: &[("STR_VAL_nothing", "null"), ("YAML_VAL_string", "str"), ("YAML_VAL_bool", "true"), ("YAML_VAL_int", "123"), ("YAML_VAL_float", "123.123")],
            expected: Expected::Text("nothing: \"null\"\nstring: str\nbool: true\nint: 123\nfloat: 123.123\n"),
        },
        E2e {
            name: "data-values --data-value-yaml and --data-values-env-yaml",
            files: DV,
            flags: &["--data-value-yaml", "nothing=[1,2,3]", "--data-values-env-yaml", "YAML_VAL"],
            stdin: None,
            env: &[("YAML_VAL_string", "[1,2,4]"), ("YAML_VAL_bool", "true"), ("YAML_VAL_int", "123"), ("YAML_VAL_float", "123.123")],
            expected: Expected::Text("nothing:\n- 1\n- 2\n- 3\nstring:\n- 1\n- 2\n- 4\nbool: true\nint: 123\nfloat: 123.123\n"),
        },
        E2e {
            name: "data-values-directory",
            files: &["data-values-directory/config"],
            flags: &["--data-values-file", "data-values-directory/values"],
            stdin: None,
            env: &[],
            expected: Expected::File("data-values-directory/expected.txt"),
        },
        E2e {
            name: "data-values --data-value-file",
            files: DV,
            flags: &["--data-value-file", "string=data-values/file-as-value.txt"],
            stdin: None,
            env: &[],
            expected: Expected::Text("nothing: something\nstring: |-\n  Value that comes from a file.\n\n  Typically, useful for files that contain values\n  that should just be passed through to system\n  configuration, wholesale (e.g. certs).\nbool: false\nint: 0\nfloat: 0\n"),
        },
        E2e {
            name: "data-values-multiple-envs defaults",
            files: &["data-values-multiple-envs/config/"],
            flags: &["-v", "version=123"],
            stdin: None,
            env: &[],
            expected: Expected::Text("app_config:\n  version: \"123\"\n  ports:\n  - 8080\n"),
        },
        E2e {
            name: "data-values-multiple-envs dev",
            files: &["data-values-multiple-envs/config/", "data-values-multiple-envs/envs/dev.yml"],
            flags: &[],
            stdin: None,
            env: &[],
            expected: Expected::Text("app_config:\n  version: v1alpha1\n  ports:\n  - 8080\n"),
        },
        E2e {
            name: "data-values-multiple-envs staging",
            files: &["data-values-multiple-envs/config/", "data-values-multiple-envs/envs/staging.yml"],
            flags: &[],
            stdin: None,
            env: &[],
            expected: Expected::Text("app_config:\n  version: v1beta1\n  ports:\n  - 8081\n"),
        },
        E2e {
            name: "data-values-multiple-envs prod",
            files: &["data-values-multiple-envs/config/", "data-values-multiple-envs/envs/prod.yml"],
            flags: &[],
            stdin: None,
            env: &[],
            expected: Expected::Text("app_config:\n  version: v1\n  ports:\n  - 80\n"),
        },
        E2e {
            name: "stdin through --file",
            files: &["-", "eirini/input.yml"],
            flags: &[],
            stdin: Some("eirini/config.yml"),
            env: &[],
            expected: Expected::File("eirini/config-result.yml"),
        },
        E2e {
            name: "stdin through --data-values-file",
            files: &[],
            flags: &["--data-values-file", "-", "--data-values-inspect"],
            stdin: Some("data-values/values-file.yml"),
            env: &[],
            expected: Expected::Text("nothing: something\nstring: str\nbool: true\nint: 124\nnew_thing: new\n"),
        },
        E2e {
            name: "pipe stdin (-f-)",
            files: &[],
            flags: &["-f-"],
            stdin: Some("k8s-relative-rolling-update/config.yml"),
            env: &[],
            expected: Expected::File("k8s-relative-rolling-update/expected.txt"),
        },
        E2e {
            name: "json output",
            files: &["k8s-adjust-rbac-version"],
            flags: &["-o", "json"],
            stdin: None,
            env: &[],
            expected: Expected::Text("{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRole\"}{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRole\"}"),
        },
        E2e {
            name: "eirini config.yml",
            files: &["eirini/config.yml", "eirini/input.yml"],
            flags: &[],
            stdin: None,
            env: &[],
            expected: Expected::File("eirini/config-result.yml"),
        },
        E2e {
            name: "eirini config-alt1.yml",
            files: &["eirini/config-alt1.yml", "eirini/input.yml"],
            flags: &[],
            stdin: None,
            env: &[],
            expected: Expected::File("eirini/config-result.yml"),
        },
        E2e {
            name: "eirini config-alt2.yml and friends",
            files: &["eirini/config-alt2.yml", "eirini/config.lib.yaml", "eirini/config.star", "eirini/data.txt", "eirini/data2.lib.txt", "eirini/input.yml"],
            flags: &[],
            stdin: None,
            env: &[],
            expected: Expected::File("eirini/config-result.yml"),
        },
    ];
    for dir in ["inline", "function", "bulk"] {
        v.push(E2e {
            name: match dir {
                "inline" => "data-values-required/inline",
                "function" => "data-values-required/function",
                _ => "data-values-required/bulk",
            },
            files: match dir {
                "inline" => &["data-values-required/inline"],
                "function" => &["data-values-required/function"],
                _ => &["data-values-required/bulk"],
            },
            flags: &["-v", "version=123"],
            stdin: None,
            env: &[],
            expected: Expected::File("data-values-required/expected.txt"),
        });
    }
    // TestSchema, TestOverlays, TestApplicationSpecificScenarios and
    // TestRemainingExamples: `-f DIR`, compared with DIR/expected.txt
    for dir in [
        "schema",
        "schema-arrays",
        "overlay",
        "overlay-files",
        "overlay-not-matcher",
        "overlay-regular-files",
        "k8s-add-global-label",
        "k8s-adjust-rbac-version",
        "k8s-docker-secret",
        "k8s-relative-rolling-update",
        "k8s-config-map-files",
        "k8s-update-env-var",
        "k8s-overlay-all-containers",
        "k8s-overlay-remove-resources",
        "k8s-overlay-in-config-map",
        "concourse-overlay",
        "toml-serialize",
    ] {
        let files: &'static [&'static str] = Box::leak(vec![dir].into_boxed_slice());
        let exp: &'static str = Box::leak(format!("{dir}/expected.txt").into_boxed_str());
        v.push(E2e {
            name: dir,
            files,
            flags: &[],
            stdin: None,
            env: &[],
            expected: Expected::File(exp),
        });
    }
    v
}

#[test]
fn ytt_examples_as_ytts_e2e_test_runs_them() {
    let ex = root().join("examples");
    let mut failed = Vec::new();
    let cases = e2e_cases();
    for c in &cases {
        let mut args: Vec<&str> = Vec::new();
        for f in c.files {
            args.push("-f");
            args.push(f);
        }
        args.extend(c.flags);
        let stdin = c
            .stdin
            .map(|p| std::fs::read(ex.join(p)).expect("stdin file"));
        let out = template(&ex, &args, stdin.as_deref(), c.env);
        let want = match &c.expected {
            Expected::File(p) => read(&ex.join(p)),
            Expected::Text(t) => t.to_string(),
        };
        let got = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() || got != want {
            failed.push(format!(
                "{}: exit {:?}\nstderr: {}\n--- expected\n{want}--- got\n{got}",
                c.name,
                out.status.code(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    println!(
        "ytt examples (e2e): {}/{} identical",
        cases.len() - failed.len(),
        cases.len()
    );
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

#[test]
fn ytt_e2e_standard_input_is_read_once_and_version_constraint_holds() {
    let ex = root().join("examples");
    let out = template(
        &ex,
        &["--data-values-file", "-", "-f", "-"],
        Some(b"a: 1\n"),
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Extracting data value from file:\n  Reading file 'stdin.yml':\n    Standard input has already been read, has the '-' argument been used in more than one flag?"),
        "{err}"
    );
    let out = template(&ex, &["-f", "version-constraint"], None, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// TestCheckDirectoryOutput: `--dangerous-emptied-output-directory` empties
/// the directory and writes one file per template; refuses `.` and any
/// directory holding the working directory.
#[test]
fn ytt_e2e_emptied_output_directory() {
    let ex = root().join("examples");
    let tmp = tempfile::tempdir().expect("tempdir");
    let outdir = tmp.path().join("out");
    std::fs::create_dir_all(&outdir).expect("mkdir");
    std::fs::write(outdir.join("stale.yml"), "old: true\n").expect("write");
    let flag = format!("--dangerous-emptied-output-directory={}", outdir.display());
    let out = template(&ex, &["-f", "eirini/", &flag], None, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        read(&outdir.join("config-result.yml")),
        read(&ex.join("eirini/config-result.yml"))
    );
    assert!(
        !outdir.join("stale.yml").exists(),
        "the directory was not emptied"
    );
    for bad in [".", tmp.path().to_str().unwrap()] {
        let out = template(
            &outdir,
            &[
                "-f",
                ex.join("eirini/input.yml").to_str().unwrap(),
                "--dangerous-emptied-output-directory",
                bad,
            ],
            None,
            &[],
        );
        assert_eq!(out.status.code(), Some(2), "{bad} accepted");
        assert!(
            outdir.join("config-result.yml").exists(),
            "{bad}: files deleted"
        );
    }
}

/// The playground examples ytt's e2e test runs (basics less three it skips,
/// all overlays) and, beyond it, the getting-started ones: each must run.
#[test]
fn ytt_playground_examples_run() {
    let pg = root().join("examples/playground");
    let skipped_by_ytt = [
        "example-assert",
        "example-load-custom-library-module",
        "example-ytt-library-module",
    ];
    let mut ran = 0;
    let mut failed = Vec::new();
    for group in ["basics", "overlays", "getting-started"] {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(pg.join(group))
            .expect("playground group")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        for d in dirs {
            let name = d.file_name().unwrap().to_string_lossy().to_string();
            if group == "basics" && skipped_by_ytt.contains(&name.as_str()) {
                continue;
            }
            ran += 1;
            let out = template(&pg, &["-f", d.to_str().unwrap()], None, &[]);
            if !out.status.success() {
                failed.push(format!(
                    "{group}/{name}: {}",
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
    }
    println!("ytt playground examples: {}/{ran} run", ran - failed.len());
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// The data values ytt's yamltemplate filetests run with.
const FILETEST_VALUES: &str = "int: 123\nintNeg: -49\nfloat: 123.123\nt: true\nf: false\nnullz: null\nstring: string\nmap:\n  a: 123\nlist:\n- a\n- 123\n- a: 123\n";

/// Trailing whitespace off every line and trailing empty lines off the end
/// (ytt's `TrimTrailingMultilineWhitespace`).
fn trim_ws(s: &str) -> String {
    let lines: Vec<&str> = s
        .split('\n')
        .map(|l| l.trim_end_matches([' ', '\t']))
        .collect();
    lines.join("\n").trim_end_matches('\n').to_string()
}

#[derive(PartialEq)]
enum Verdict {
    /// Output identical, or the error text identical after ytt's trimming.
    Exact,
    /// An expected error: strata failed with ytt's message (the first line
    /// of the expected error) but its trace/context lines differ.
    Message,
    Fail(String),
}

/// strata's error text without the CLI's `error: ` prefix.
fn error_text(out: &Output) -> String {
    let e = String::from_utf8_lossy(&out.stderr).to_string();
    e.strip_prefix("error: ").unwrap_or(&e).to_string()
}

fn judge_error(got: &str, want: &str) -> Verdict {
    let got = trim_ws(got);
    let want = trim_ws(want);
    if got == want {
        return Verdict::Exact;
    }
    // ytt's first error line; a Starlark backtrace line `- fn: message`
    // names the failing function first, which is not part of the message
    let first = want
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let first = match first.strip_prefix("- ") {
        Some(rest) => match rest.split_once(": ") {
            Some((f, msg))
                if !f.is_empty()
                    && f.chars()
                        .all(|c| c.is_alphanumeric() || c == '_' || c == '.') =>
            {
                msg
            }
            _ => rest,
        },
        None => first,
    };
    if !first.is_empty() && got.contains(first) {
        Verdict::Message
    } else {
        Verdict::Fail(format!(
            "error differs\n--- expected\n{want}\n--- got\n{got}"
        ))
    }
}

/// A yamltemplate filetest: the template (named `stdin` as in ytt's
/// harness) with the harness' data values.
fn run_yaml_filetest(tpl: &str, expected: &str, work: &Path) -> Verdict {
    std::fs::write(work.join("stdin"), tpl).expect("write template");
    std::fs::write(work.join("values.yml"), FILETEST_VALUES).expect("write values");
    // `OUTPUT POSITION:` tests compare ytt's `-o pos` output
    let (pos, expected) = match expected.strip_prefix("OUTPUT POSITION:\n") {
        Some(rest) => (true, rest),
        None => (false, expected),
    };
    let mut args = vec![
        "-f",
        "stdin",
        "--file-mark",
        "stdin:type=yaml-template",
        "--data-values-file",
        "values.yml",
    ];
    if pos {
        args.extend(["-o", "pos"]);
    }
    let out = template(work, &args, None, &[]);
    let want = expected.replace("__YTT_VERSION__", "0.0.0");
    if let Some(err) = want.strip_prefix("ERR:") {
        if out.status.success() {
            return Verdict::Fail("expected an error, got success".into());
        }
        return judge_error(&error_text(&out), err.strip_prefix(' ').unwrap_or(err));
    }
    let got = String::from_utf8_lossy(&out.stdout);
    if out.status.success() && got == want {
        Verdict::Exact
    } else {
        Verdict::Fail(format!(
            "stderr: {}\n--- expected\n{want}--- got\n{got}",
            error_text(&out)
        ))
    }
}

/// A texttemplate filetest: the text template's output file.
fn run_text_filetest(tpl: &str, expected: &str, work: &Path) -> Verdict {
    std::fs::write(work.join("stdin"), tpl).expect("write template");
    let outdir = work.join("out");
    let _ = std::fs::remove_dir_all(&outdir);
    let out = template(
        work,
        &[
            "-f",
            "stdin",
            "--file-mark",
            "stdin:type=text-template",
            "--output-files",
            outdir.to_str().unwrap(),
        ],
        None,
        &[],
    );
    if let Some(err) = expected.strip_prefix("\nERR:") {
        if out.status.success() {
            return Verdict::Fail("expected an error, got success".into());
        }
        return judge_error(&error_text(&out), err.strip_prefix(' ').unwrap_or(err));
    }
    let got = std::fs::read_to_string(outdir.join("stdin")).unwrap_or_default();
    if out.status.success() && got == expected {
        Verdict::Exact
    } else {
        Verdict::Fail(format!(
            "stderr: {}\n--- expected\n{expected}--- got\n{got}",
            error_text(&out)
        ))
    }
}

/// A validations filetest. The ytt CLI (and so strata) runs
/// `@assert/validate` on data values only, so the template becomes a
/// `#@data/values` document (as the ytt corpus does it) and the final data
/// values are printed; `stdin:N` in strata's messages is shifted back by
/// the lines added. An expected error passes when every line of it (trimmed)
/// appears in strata's message.
fn run_validation_filetest(tpl: &str, expected: &str, work: &Path) -> Verdict {
    let explicit_doc = tpl.lines().any(|l| l == "---" || l.starts_with("--- "));
    let (prefix, shift) = if explicit_doc {
        ("#@data/values\n", 1)
    } else {
        ("#@data/values\n---\n", 2)
    };
    std::fs::write(work.join("stdin"), format!("{prefix}{tpl}")).expect("write template");
    let out = template(
        work,
        &[
            "-f",
            "stdin",
            "--file-mark",
            "stdin:type=yaml-template",
            "--data-values-inspect",
        ],
        None,
        &[],
    );
    if let Some(err) = expected.strip_prefix("ERR:") {
        if out.status.success() {
            return Verdict::Fail("expected an error, got success".into());
        }
        let raw = error_text(&out);
        let re = regex::Regex::new(r"stdin:(\d+)").expect("regex");
        let got = re
            .replace_all(&raw, |c: &regex::Captures| {
                let n: usize = c[1].parse().unwrap_or(0);
                format!("stdin:{}", n.saturating_sub(shift))
            })
            .to_string();
        if trim_ws(&got) == trim_ws(err.strip_prefix(' ').unwrap_or(err)) {
            return Verdict::Exact;
        }
        let missing: Vec<&str> = err
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !got.contains(l))
            .collect();
        return if missing.is_empty() {
            Verdict::Message
        } else {
            Verdict::Fail(format!(
                "missing {missing:?}\n--- expected\n{err}\n--- got\n{got}"
            ))
        };
    }
    let got = String::from_utf8_lossy(&out.stdout);
    if out.status.success() && got == expected {
        Verdict::Exact
    } else {
        Verdict::Fail(format!(
            "stderr: {}\n--- expected\n{expected}--- got\n{got}",
            error_text(&out)
        ))
    }
}

/// Filetests for features strata does not have, with the reason. They run
/// too: one that starts passing must be taken off this list.
const UNSUPPORTED: &[(&str, &str)] = &[
    (
        "validations/when=/can-use-context.tpltest",
        "uses ctx.root as the template's document set, which only ytt's filetest harness provides; the CLI (and strata) validates data values, where ctx.root is the data values",
    ),
    (
        "yamltemplate/ytt-library/version-constraint-err.tpltest",
        "ytt's harness runs as version 0.0.0; strata reports the ytt language version it implements (0.48.0)",
    ),
];

#[test]
fn ytt_filetests_conformance() {
    let base = root().join("filetests");
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut exact = 0;
    let mut message = 0;
    let mut total = 0;
    let mut failed: Vec<(String, String)> = Vec::new();
    for (suite, sep) in [
        ("yamltemplate", "\n+++\n\n"),
        ("texttemplate", "\n+++\n"),
        ("validations", "\n+++\n\n"),
    ] {
        for f in crate::support::files_under(&base.join(suite)) {
            let rel = f.strip_prefix(&base).unwrap().to_string_lossy().to_string();
            let text = read(&f);
            let Some((tpl, expected)) = text.split_once(sep) else {
                panic!("{rel}: no +++ separator");
            };
            total += 1;
            let work = tmp.path().join(total.to_string());
            std::fs::create_dir_all(&work).expect("work dir");
            let verdict = if suite == "texttemplate" {
                run_text_filetest(tpl, expected, &work)
            } else if suite == "validations" {
                run_validation_filetest(tpl, expected, &work)
            } else {
                run_yaml_filetest(tpl, expected, &work)
            };
            match verdict {
                Verdict::Exact => exact += 1,
                Verdict::Message => message += 1,
                Verdict::Fail(why) => failed.push((rel, why)),
            }
        }
    }
    let names: BTreeSet<&str> = failed.iter().map(|(n, _)| n.as_str()).collect();
    println!(
        "ytt filetests: {}/{total} pass ({exact} identical, {message} with ytt's error message but other context lines)",
        exact + message
    );
    for (n, why) in &failed {
        println!("FAIL {n}: {}", why.lines().next().unwrap_or(""));
        if std::env::var_os("STRATA_FILETESTS_VERBOSE").is_some() {
            println!("{why}\n");
        }
    }
    let listed: BTreeSet<&str> = UNSUPPORTED.iter().map(|(n, _)| *n).collect();
    let unexpected: Vec<&&str> = names.difference(&listed).collect();
    let fixed: Vec<&&str> = listed.difference(&names).collect();
    assert!(
        unexpected.is_empty(),
        "filetests failing that are not listed as unsupported: {unexpected:?}"
    );
    assert!(
        fixed.is_empty(),
        "filetests listed as unsupported now pass: {fixed:?}"
    );
}
