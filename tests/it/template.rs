//! `strata template` against the ytt conformance corpus (cases produced by
//! ytt itself): every `tier:core` case must pass; the overall pass count
//! must not fall below the floor reached so far. Prints counts per tag.

use std::collections::BTreeMap;
use std::path::Path;

/// Lowest acceptable number of passing cases across the whole corpus.
const PASS_FLOOR: usize = 600;

struct Outcome {
    ok: bool,
    why: String,
}

fn run_case(dir: &Path) -> Outcome {
    let args: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("args.json")).expect("args.json"))
            .expect("valid args.json");
    let out = tempfile::tempdir().expect("tempdir");
    let outdir = out.path().to_string_lossy().to_string();
    let argv: Vec<String> = args["ytt_args"]
        .as_array()
        .expect("ytt_args")
        .iter()
        .map(|a| {
            let a = a.as_str().unwrap_or_default();
            if a == "OUTDIR" {
                outdir.clone()
            } else {
                a.to_string()
            }
        })
        .collect();
    let uses_outdir = argv.iter().any(|a| a == &outdir);
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("strata"));
    cmd.arg("template").args(&argv).current_dir(dir);
    if let Some(env) = args["env"].as_object() {
        for (k, v) in env {
            cmd.env(k, v.as_str().unwrap_or_default());
        }
    }
    let res = cmd.output().expect("strata runs");
    let stdout = String::from_utf8_lossy(&res.stdout);
    let stderr = String::from_utf8_lossy(&res.stderr);
    let err_file = dir.join("expected_error.txt");
    if err_file.exists() {
        if res.status.success() {
            return Outcome {
                ok: false,
                why: "expected an error, got success".into(),
            };
        }
        let want = std::fs::read_to_string(err_file).expect("expected_error.txt");
        let missing: Vec<&str> = want
            .lines()
            .filter(|l| !l.is_empty() && !stderr.contains(l))
            .collect();
        return Outcome {
            ok: missing.is_empty(),
            why: format!("missing {missing:?} in: {stderr}"),
        };
    }
    let exp_yaml = dir.join("expected.yaml");
    if exp_yaml.exists() && !uses_outdir {
        let want = std::fs::read_to_string(exp_yaml).expect("expected.yaml");
        return Outcome {
            ok: res.status.success() && stdout == want,
            why: format!("stderr: {stderr}\n--- expected\n{want}--- got\n{stdout}"),
        };
    }
    let exp_files = dir.join("expected_files");
    if exp_files.is_dir() {
        let mut ok = res.status.success();
        let mut stack = vec![exp_files.clone()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d)
                .expect("read expected_files")
                .flatten()
            {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                    continue;
                }
                let rel = p.strip_prefix(&exp_files).expect("under expected_files");
                let got = std::fs::read_to_string(out.path().join(rel)).unwrap_or_default();
                if got != std::fs::read_to_string(&p).unwrap_or_default() {
                    ok = false;
                }
            }
        }
        return Outcome {
            ok,
            why: format!("stderr: {stderr}"),
        };
    }
    Outcome {
        ok: false,
        why: "case has no expectation".into(),
    }
}

#[test]
fn ytt_conformance_corpus() {
    let root = crate::conformance_dir().join("ytt");
    let index = std::fs::read_to_string(root.join("cases.tsv")).expect("cases.tsv");
    let mut passed: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut core_failures = Vec::new();
    let mut total = (0, 0);
    for line in index.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        let (name, tags) = (cols[0], cols[1]);
        let outcome = run_case(&root.join("cases").join(name));
        total.1 += 1;
        if outcome.ok {
            total.0 += 1;
        } else {
            println!("FAIL {name}: {}", outcome.why.lines().next().unwrap_or(""));
        }
        for t in tags.split(',') {
            let e = passed.entry(t.to_string()).or_default();
            e.1 += 1;
            if outcome.ok {
                e.0 += 1;
            }
            if t == "tier:core" && !outcome.ok {
                core_failures.push(format!("{name}: {}", outcome.why));
            }
        }
    }
    println!("ytt corpus: {} / {} cases pass", total.0, total.1);
    let mut rows: Vec<_> = passed.iter().collect();
    rows.sort_by(|a, b| b.1 .1.cmp(&a.1 .1).then(a.0.cmp(b.0)));
    for (tag, (ok, n)) in rows {
        println!("{tag:<28} {ok:>4} / {n:>4}");
    }
    assert!(
        core_failures.is_empty(),
        "{} tier:core cases fail:\n{}",
        core_failures.len(),
        core_failures.join("\n")
    );
    assert!(
        total.0 >= PASS_FLOOR,
        "only {} cases pass, below the floor of {PASS_FLOOR}",
        total.0
    );
}

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/template")
        .join(name)
}

#[test]
fn renders_schema_values_flags_and_overlays() {
    let dir = fixture("basic");
    let expected = std::fs::read_to_string(dir.join("expected.yaml")).expect("fixture");
    crate::strata()
        .current_dir(&dir)
        .args([
            "template",
            "-f",
            "schema.yml",
            "-f",
            "values.yml",
            "-f",
            "config.yml",
            "-f",
            "overlay.yml",
            "--data-value",
            "name=web",
            "--data-value-yaml",
            "ports=[80, 8080]",
        ])
        .assert()
        .success()
        .stdout(expected);
}

#[test]
fn overlay_without_match_names_file_and_documents() {
    let dir = fixture("errors");
    crate::strata()
        .current_dir(&dir)
        .args(["template", "-f", "config.yml", "-f", "overlay.yml"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("overlay.yml:3"))
        .stderr(predicates::str::contains(
            "Expected number of matched nodes to be 1, but was 0",
        ))
        .stderr(predicates::str::contains(
            "compared 1 documents [config.yml:",
        ))
        .stderr(predicates::str::contains("overlay.subset({kind: Service})"));
}

#[test]
fn wrong_data_value_type_names_file_line_and_types() {
    let dir = fixture("errors");
    crate::strata()
        .current_dir(&dir)
        .args([
            "template",
            "-f",
            "schema.yml",
            "-f",
            "values.yml",
            "-f",
            "config.yml",
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("values.yml:3"))
        .stderr(predicates::str::contains("found: string"))
        .stderr(predicates::str::contains(
            "expected: integer (by schema.yml:3)",
        ));
}

/// Fragments (what a function made of YAML returns) are mappings for
/// `dict()` and `**` and say `yamlfragment`; `-o json` prints one compact
/// JSON text per document; `-f -` reads the template from standard input.
#[test]
fn fragments_are_mappings_and_json_output_from_stdin() {
    let tpl = "#@ def m():\na: 1\nb: [x, \"<y>\"]\n#@ end\n#@ def f(a=None, b=None):\n#@   return [a, type(b)]\n#@ end\n---\nd: #@ dict(m(), c=2)\nk: #@ f(**m())\nt: #@ type(m())\ni: #@ [\"a\" in m(), 1 in m()[\"b\"], 2 in m()[\"b\"]]\n---\nsecond: 1.5\n";
    let out = crate::strata()
        .args(["template", "-f", "-", "-o", "json"])
        .write_stdin(tpl)
        .output()
        .expect("strata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "{\"d\":{\"a\":1,\"b\":[\"x\",\"\\u003cy\\u003e\"],\"c\":2},\"i\":[true,true,false],\"k\":[1,\"yamlfragment\"],\"t\":\"yamlfragment\"}{\"second\":1.5}"
    );
}
