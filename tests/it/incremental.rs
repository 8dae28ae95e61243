//! Incremental review == full review: random edits to a fixture inventory
//! and its components (classes, targets, jsonnet imports, Jinja2 includes,
//! copied files, targets added and removed, output paths, links inside the
//! tree, secret references, `.kapitan`, search-path shadowing, ytt entries,
//! odd file names), on the head and on every other seed's base, then
//! `strata review` with fingerprints must print byte for byte what
//! `strata review --full` (every target compiled on both sides) prints;
//! and `compile --cache` must write what a compile without the cache
//! writes.

use crate::strata;
use crate::support::git;
use crate::support::{self, copy_tree};
use std::path::Path;

/// A small deterministic generator (no dependency, same sequence everywhere).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A new repository holding the files below `repo`, committed, with a
/// `base` branch there.
fn commit_base(repo: &Path) {
    git(repo, &["init", "-q"]);
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "base"]);
    git(repo, &["branch", "base"]);
}

fn targets(repo: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(repo.join("inventory/targets"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn edit(path: &Path, f: impl FnOnce(String) -> String) {
    // A class an earlier edit removed comes back with this edit alone.
    let text = std::fs::read_to_string(path).unwrap_or_else(|_| "parameters:\n".into());
    std::fs::write(path, f(text)).unwrap();
}

/// One random edit; returns what it did (for failure messages).
fn random_edit(repo: &Path, rng: &mut Rng, n: usize) -> String {
    let ts = targets(repo);
    let pick = |rng: &mut Rng| ts[rng.below(ts.len())].clone();
    match rng.below(37) {
        0 => {
            let t = ["alpha", "beta"][rng.below(2)];
            edit(
                &repo.join(format!("inventory/classes/tenants/{t}.yml")),
                |_| format!("parameters:\n  owner: {t}-{n}@example.invalid\n"),
            );
            format!("owner of tenant {t}")
        }
        1 => {
            let t = pick(rng);
            let r = rng.below(5);
            edit(&repo.join(format!("inventory/targets/{t}")), |s| {
                let i = s.find("replicas:").unwrap();
                format!("{}replicas: {r}\n", &s[..i])
            });
            format!("replicas of {t} -> {r}")
        }
        2 => {
            edit(&repo.join("components/web/helpers.libsonnet"), |s| {
                s.replace(
                    "annotations: { owner: owner",
                    &format!("annotations: {{ rev: '{n}', owner: owner"),
                )
            });
            "jsonnet import helpers.libsonnet".into()
        }
        3 => {
            edit(&repo.join("templates/partials/footer.j2"), |s| {
                format!("{s}-- edit {n}\n")
            });
            "jinja2 include footer.j2".into()
        }
        4 => {
            let name = ["one.txt", "two.txt"][rng.below(2)];
            let p = repo.join("files/static").join(name);
            let old = std::fs::read_to_string(&p).unwrap_or_default();
            std::fs::write(&p, format!("{old}line {n}\n")).unwrap();
            format!("copied file {name}")
        }
        5 => {
            edit(&repo.join("components/web/banner.txt"), |s| {
                format!("{s}banner {n}\n")
            });
            "importstr banner.txt".into()
        }
        6 => {
            let from = pick(rng);
            let to = format!("n{n}.yml");
            std::fs::copy(
                repo.join("inventory/targets").join(&from),
                repo.join("inventory/targets").join(&to),
            )
            .unwrap();
            format!("added target {to} (copy of {from})")
        }
        7 if ts.len() > 1 => {
            let t = pick(rng);
            std::fs::remove_file(repo.join("inventory/targets").join(&t)).unwrap();
            format!("removed target {t}")
        }
        8 => {
            let t = pick(rng);
            edit(&repo.join(format!("inventory/targets/{t}")), |s| {
                if s.contains("tenants.alpha") {
                    s.replace("tenants.alpha", "tenants.beta")
                } else {
                    s.replace("tenants.beta", "tenants.alpha")
                }
            });
            format!("tenant of {t} swapped")
        }
        9 => {
            // Changes no parameter: every fingerprint stays.
            edit(&repo.join("inventory/classes/common.yml"), |s| {
                format!("# note {n}\n{s}")
            });
            "comment in common.yml".into()
        }
        11 => {
            // The tenant's class named through a reference.
            let t = pick(rng);
            let tenant = ["alpha", "beta"][rng.below(2)];
            edit(&repo.join(format!("inventory/targets/{t}")), |s| {
                s.replace("tenants.alpha", "tenants.${tenant}")
                    .replace("tenants.beta", "tenants.${tenant}")
                    .replacen(
                        "parameters:\n",
                        &format!("parameters:\n  tenant: {tenant}\n"),
                        1,
                    )
            });
            format!("{t}: class tenants.${{tenant}} with tenant {tenant}")
        }
        12 => {
            // A new class file, included by one target.
            let t = pick(rng);
            let class = repo.join(format!("inventory/classes/extra/x{n}.yml"));
            std::fs::create_dir_all(class.parent().unwrap()).unwrap();
            std::fs::write(
                &class,
                format!("parameters:\n  owner: x{n}@example.invalid\n"),
            )
            .unwrap();
            edit(&repo.join(format!("inventory/targets/{t}")), |s| {
                s.replacen("classes:\n", &format!("classes:\n  - extra.x{n}\n"), 1)
            });
            format!("new class extra.x{n} in {t}")
        }
        13 => {
            // A class no target uses (lint: unused-class).
            let class = repo.join(format!("inventory/classes/unused/u{n}.yml"));
            std::fs::create_dir_all(class.parent().unwrap()).unwrap();
            std::fs::write(&class, "parameters:\n  unused: true\n").unwrap();
            format!("unused class u{n}")
        }
        14 => {
            // Lint: a plaintext secret.
            edit(&repo.join("inventory/classes/tenants/beta.yml"), |s| {
                format!("{s}  api_token: Zx9{n}qLm2Vt8RkP4wY7sHc3Nd6Fj1Gb5\n")
            });
            "plaintext secret in tenants.beta".into()
        }
        15 => {
            // The reclass configuration changes: every target may.
            edit(&repo.join("inventory/reclass-config.yml"), |s| {
                format!("{s}# note {n}\n")
            });
            "comment in reclass-config.yml".into()
        }
        16 => {
            // A class t4 names but the base does not have (ignored there).
            let class = repo.join("inventory/classes/optional/missing.yml");
            std::fs::create_dir_all(class.parent().unwrap()).unwrap();
            std::fs::write(
                &class,
                format!("parameters:\n  owner: optional-{n}@example.invalid\n"),
            )
            .unwrap();
            "class optional.missing added".into()
        }
        17 => {
            // A class a wildcard pattern (`extras.*`) now matches.
            std::fs::write(
                repo.join(format!("inventory/classes/extras/b{n}.yml")),
                format!("parameters:\n  owner: extras-{n}@example.invalid\n"),
            )
            .unwrap();
            format!("class extras.b{n} added")
        }
        18 => {
            // A template reads the whole inventory.
            edit(&repo.join("templates/docs/README.md.j2"), |s| {
                format!("{s}Targets: {{{{ inventory_global | length }}}}\n")
            });
            "docs template reads inventory_global".into()
        }
        19 => {
            // A reference that does not resolve: rendering fails (both
            // reviews must fail alike, lint reports it).
            edit(&repo.join("inventory/classes/tenants/alpha.yml"), |s| {
                format!("{s}  broken: ${{nowhere:{n}}}\n")
            });
            "unresolved reference in tenants.alpha".into()
        }
        20 => {
            // A class file removed: missing classes are ignored, and a
            // wildcard pattern matches one class less.
            let class = ["tenants/alpha.yml", "extras/a.yml"][rng.below(2)];
            let _ = std::fs::remove_file(repo.join("inventory/classes").join(class));
            format!("class file {class} removed")
        }
        21 => {
            // Another target's output directory (`vars.target` naming it):
            // both write `compiled/<other>/`.
            let (t, other) = (pick(rng), pick(rng));
            let other = other.trim_end_matches(".yml").to_string();
            edit(&repo.join(format!("inventory/targets/{t}")), |s| {
                s.replacen(
                    "parameters:\n",
                    &format!("parameters:\n  kapitan:\n    vars:\n      target: {other}\n"),
                    1,
                )
            });
            format!("{t} writes into {other}'s directory")
        }
        22 => {
            // A file the copied directory did not have.
            std::fs::write(
                repo.join(format!("files/static/new{n}.txt")),
                format!("new {n}\n"),
            )
            .unwrap();
            format!("new copied file new{n}.txt")
        }
        23 => {
            // A template the rendered directory did not have.
            std::fs::write(
                repo.join(format!("templates/docs/extra{n}.md.j2")),
                format!("extra {n} for {{{{ inventory.parameters.owner }}}}\n"),
            )
            .unwrap();
            format!("new template extra{n}.md.j2")
        }
        24 => {
            // An import the imported file gains (followed transitively).
            std::fs::write(
                repo.join(format!("components/web/extra{n}.libsonnet")),
                format!("{{ rev: 'x{n}' }}\n"),
            )
            .unwrap();
            edit(&repo.join("components/web/helpers.libsonnet"), |s| {
                format!(
                    "local extra = import 'extra{n}.libsonnet';\n{}",
                    s.replace("annotations: { ", "annotations: { x: extra.rev, ")
                )
            });
            format!("helpers.libsonnet imports extra{n}.libsonnet")
        }
        25 => {
            // Every web target's output path.
            edit(&repo.join("inventory/classes/components/web.yml"), |s| {
                s.replace("output_path: web\n", &format!("output_path: web{n}\n"))
            });
            format!("web output path -> web{n}")
        }
        26 => {
            // The merge order of a target's classes.
            let t = pick(rng);
            edit(&repo.join(format!("inventory/targets/{t}")), |s| {
                s.replacen(
                    "  - common\n  - components.web\n",
                    "  - components.web\n  - common\n",
                    1,
                )
            });
            format!("{t}: components.web before common")
        }
        27 => {
            // A link inside the tree: the imported file is another one,
            // whose later edits change what the component reads.
            let p = repo.join("components/web/banner.txt");
            let _ = std::fs::remove_file(&p);
            std::os::unix::fs::symlink("../../files/static/one.txt", &p).unwrap();
            "banner.txt links to files/static/one.txt".into()
        }
        28 => {
            // A parameter the compile does not read.
            let t = pick(rng);
            edit(&repo.join(format!("inventory/targets/{t}")), |s| {
                s.replacen(
                    "parameters:\n",
                    &format!("parameters:\n  unread{n}: {n}\n"),
                    1,
                )
            });
            format!("{t}: unread parameter")
        }
        29 => {
            // A secret reference in a parameter both inputs read: its tag
            // compiles to a hash of the reference file.
            let t = ["alpha", "beta"][rng.below(2)];
            let kind = ["base64", "plain"][rng.below(2)];
            if !repo.join("refs/shared/owner").exists() {
                write_ref(repo, kind, &format!("owner-{n}"));
            }
            edit(
                &repo.join(format!("inventory/classes/tenants/{t}.yml")),
                |_| format!("parameters:\n  owner: ?{{{kind}:shared/owner}}\n"),
            );
            format!("owner of tenant {t} a ?{{{kind}:shared/owner}} reference")
        }
        30 => {
            // The secret rotated (whether or not a tag names it yet).
            let kind = ["base64", "plain"][rng.below(2)];
            write_ref(repo, kind, &format!("rotated-{n}"));
            format!("refs/shared/owner rewritten ({kind})")
        }
        31 => {
            // The repository's `.kapitan` changes how every target compiles.
            let (text, what) = [
                ("compile:\n  indent: 4\n", "indent 4"),
                ("compile:\n  embed-refs: true\n", "embed-refs"),
                (
                    "compile:\n  multiline-string-style: literal\n",
                    "literal strings",
                ),
                (
                    "compile:\n  search-paths:\n    - shadow\n    - .\n",
                    "search paths",
                ),
                ("", "empty"),
            ][rng.below(5)];
            std::fs::write(repo.join(".kapitan"), text).unwrap();
            format!(".kapitan: {what}")
        }
        32 => {
            // A file earlier in the search order (when `.kapitan` lists
            // `shadow` first) replaces the component's input or its import.
            let name = ["main.jsonnet", "helpers.libsonnet", "banner.txt"][rng.below(3)];
            let from = repo.join("components/web").join(name);
            let to = repo.join("shadow/components/web").join(name);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            // The shadowing copy imports its siblings from its own directory.
            for sibling in ["helpers.libsonnet", "banner.txt"] {
                let (s, d) = (from.with_file_name(sibling), to.with_file_name(sibling));
                if !d.exists() {
                    let _ = std::fs::copy(s, d);
                }
            }
            let text = std::fs::read_to_string(&from).unwrap_or_default();
            let text = if name == "main.jsonnet" {
                text.replace("team: p.owner", &format!("team: p.owner, shadow: '{n}'"))
            } else if name == "banner.txt" {
                format!("{text}shadow {n}\n")
            } else {
                text
            };
            std::fs::write(&to, text).unwrap();
            format!("shadow/components/web/{name}")
        }
        33 => {
            // The component writes a file under an odd name (the in-memory
            // catalog of an incremental review must treat it as the disk
            // of a full review does: same file, same error).
            let name = [
                "sub/x",
                "a//b",
                "./c",
                "d/",
                "e/.",
                "\u{e4}",
                "a\u{308}",
                "..x",
                " lead",
                "Web",
                "deployment/inner",
                "x:y",
            ][rng.below(12)];
            edit(&repo.join("components/web/main.jsonnet"), |s| {
                let at = s.rfind('}').unwrap();
                format!("{}  '{name}': {{ rev: {n} }},\n{}", &s[..at], &s[at..])
            });
            format!("main.jsonnet writes {name:?}")
        }
        34 => {
            // A copied file under an odd name (git stores any byte but NUL
            // and `/`).
            let name = [
                "new\nline.txt",
                "tab\t.txt",
                "\u{e4}.txt",
                "a\u{308}.txt",
                ".hidden",
                "-dash",
                "back\\slash",
                "q\"uote",
            ][rng.below(8)];
            std::fs::write(repo.join("files/static").join(name), format!("odd {n}\n")).unwrap();
            format!("copied file {name:?}")
        }
        35 => {
            // A target gains a ytt entry (templates, an overlay, a Starlark
            // library) reading its parameters as data values.
            let t = pick(rng);
            let dir = repo.join("ytt");
            std::fs::create_dir_all(&dir).unwrap();
            if !dir.join("svc.yml").exists() {
                std::fs::write(
                    dir.join("svc.yml"),
                    "#@ load(\"@ytt:data\", \"data\")\n#@ load(\"names.star\", \"svc\")\n\
                     apiVersion: v1\nkind: Service\nmetadata:\n  name: #@ svc(data.values.web.name)\n\
                     \x20 labels:\n    owner: #@ data.values.owner\n",
                )
                .unwrap();
                std::fs::write(
                    dir.join("names.star"),
                    "def svc(n):\n  return n + \"-svc\"\nend\n",
                )
                .unwrap();
            }
            edit(&repo.join(format!("inventory/targets/{t}")), |s| {
                if s.contains("input_type: ytt") {
                    s
                } else {
                    s.replacen(
                        "parameters:\n",
                        "parameters:\n  kapitan:\n    compile:\n      - input_type: ytt\n        \
                         input_paths: [ytt]\n        output_path: svc\n",
                        1,
                    )
                }
            });
            format!("{t}: a ytt entry")
        }
        36 => {
            // The ytt inputs change: the library, or an overlay added.
            let dir = repo.join("ytt");
            std::fs::create_dir_all(&dir).unwrap();
            if rng.below(2) == 0 {
                std::fs::write(
                    dir.join("names.star"),
                    format!("def svc(n):\n  return n + \"-svc{n}\"\nend\n"),
                )
                .unwrap();
                "ytt/names.star".into()
            } else {
                std::fs::write(
                    dir.join("overlay.yml"),
                    format!(
                        "#@ load(\"@ytt:overlay\", \"overlay\")\n\
                         #@overlay/match by=overlay.subset({{\"kind\": \"Service\"}}), expects=\"0+\"\n\
                         ---\nmetadata:\n  #@overlay/match missing_ok=True\n  annotations:\n    rev: \"{n}\"\n"
                    ),
                )
                .unwrap();
                "ytt/overlay.yml".into()
            }
        }
        _ => {
            edit(&repo.join("inventory/classes/components/docs.yml"), |s| {
                let i = s.find("title: ").unwrap();
                let j = i + s[i..].find('\n').unwrap();
                format!("{}title: Docs {n}{}", &s[..i], &s[j..])
            });
            "docs title".into()
        }
    }
}

/// How many random pull requests each equivalence test makes:
/// `STRATA_EQUIVALENCE_SEEDS` (12 by default).
fn seeds() -> u64 {
    std::env::var("STRATA_EQUIVALENCE_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(12)
}

/// How many random edits a pull request makes at most:
/// `STRATA_EQUIVALENCE_EDITS` (3 by default; 150 seeds at 8 pass).
fn max_edits() -> usize {
    std::env::var("STRATA_EQUIVALENCE_EDITS")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(3)
}

/// Writes `refs/shared/owner` as `strata refs --write` does (a user
/// rotating a secret).
fn write_ref(repo: &Path, kind: &str, value: &str) {
    strata()
        .current_dir(repo)
        .args([
            "refs",
            "--write",
            &format!("{kind}:shared/owner"),
            "-f",
            "-",
        ])
        .write_stdin(value.to_string())
        .assert()
        .success();
}

fn review(repo: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut cmd = strata();
    cmd.current_dir(repo)
        .args(["review", "--base", "base", "--head", "HEAD"])
        .args(extra);
    for v in [
        "GITHUB_EVENT_PATH",
        "GITHUB_STEP_SUMMARY",
        "GITHUB_TOKEN",
        "GITHUB_REPOSITORY",
        "GITHUB_EVENT_NAME",
    ] {
        cmd.env_remove(v);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn incremental_review_equals_full_review_under_random_edits() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/incremental");
    let seeds = seeds();
    let (mut skipped_some, mut changed_some, mut base_skipped) = (false, false, false);
    let mut ok = 0;
    for seed in 1..=seeds {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        copy_tree(&fixture, repo);
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ seed.wrapping_mul(0x1000_0001));
        let mut done = Vec::new();
        // Every other seed starts from a base that random edits made (a
        // link, another output path, a target writing elsewhere), so that
        // the head's edits meet them.
        if seed % 2 == 0 {
            for n in 0..1 + rng.below(2) {
                done.push(format!("base: {}", random_edit(repo, &mut rng, 100 + n)));
            }
        }
        commit_base(repo);
        for n in 0..1 + rng.below(max_edits()) {
            done.push(random_edit(repo, &mut rng, n));
        }
        git(repo, &["add", "-A"]);
        git(repo, &["commit", "-q", "--allow-empty", "-m", "head"]);
        if seed % 3 == 0 {
            // A working tree that is not the head commit (lint reads the
            // working tree, the review the commits).
            done.push(format!("uncommitted: {}", random_edit(repo, &mut rng, 9)));
        }
        let inc = review(repo, &[]);
        let full = review(repo, &["--full"]);
        assert_eq!(
            (inc.0, &inc.1),
            (full.0, &full.1),
            "seed {seed}: edits {done:?}\nincremental stderr: {}\nfull stderr: {}",
            inc.2,
            full.2
        );
        // `strata ci` on the pull request: stdout (lint findings and the
        // diff), job summary, step outputs and exit code.
        let ci_inc = ci(repo, &[]);
        let ci_full = ci(repo, &["--full"]);
        assert_eq!(
            ci_inc.0, ci_full.0,
            "seed {seed}: edits {done:?}\nincremental stderr: {}\nfull stderr: {}",
            ci_inc.2, ci_full.2
        );
        assert_eq!(ci_inc.1, ci_full.1, "seed {seed}: edits {done:?}");
        if inc.0 == 0 {
            ok += 1;
            skipped_some |= !inc.2.contains(", 0 unchanged");
            changed_some |= inc.1.contains("ConfigMap") || inc.1.contains("README.md");
            base_skipped |= !inc.2.contains("all prepared") && !inc.2.contains("base: 5 of 5");
        }
    }
    assert!(
        ok * 2 > seeds,
        "only {ok} of {seeds} seeds reviewed without an error"
    );
    assert!(
        skipped_some,
        "no seed left any target out: the test does not exercise fingerprints"
    );
    assert!(changed_some);
    assert!(base_skipped, "no seed rendered only part of the base");
}

/// `strata ci` on a pull_request event from `base` to HEAD (comment off):
/// exit code, then stdout + job summary + step outputs, then stderr.
fn ci(repo: &Path, extra: &[&str]) -> (i32, String, String) {
    ci_with(repo, extra, &[])
}

/// [`ci`] with more environment variables.
fn ci_with(repo: &Path, extra: &[&str], envs: &[(&str, &str)]) -> (i32, String, String) {
    let rev = |r: &str| {
        let out = std::process::Command::new("git")
            .current_dir(repo)
            .args(["rev-parse", r])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let work = tempfile::tempdir().unwrap();
    let event = work.path().join("event.json");
    std::fs::write(
        &event,
        format!(
            r#"{{"pull_request": {{"number": 1, "base": {{"sha": "{}"}}, "head": {{"sha": "{}"}}}}}}"#,
            rev("base"),
            rev("HEAD")
        ),
    )
    .unwrap();
    let (summary, output) = (work.path().join("summary.md"), work.path().join("output"));
    let mut cmd = strata();
    cmd.current_dir(repo)
        .args(["ci", "--no-comment", "--fail-on", "warning"])
        .args(extra);
    for (k, _) in std::env::vars() {
        if k.starts_with("GITHUB_") || k.starts_with("RUNNER_") {
            cmd.env_remove(k);
        }
    }
    cmd.envs(envs.iter().copied())
        .env("GITHUB_EVENT_NAME", "pull_request")
        .env("GITHUB_EVENT_PATH", &event)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env("GITHUB_OUTPUT", &output);
    let out = cmd.output().unwrap();
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}\n--- summary\n{}\n--- outputs\n{}",
            String::from_utf8_lossy(&out.stdout),
            read(&summary),
            read(&output)
        ),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn ci_full_from_a_subdirectory_lints_the_base_there() {
    // Run from the platform's subdirectory, `ci --full` read the base's
    // inventory at the repository's root: not found, every finding of the
    // head counted as new (exit 1) where the incremental run saw them
    // already in the base (exit 0).
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/incremental");
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    copy_tree(&fixture, &repo.join("platform"));
    std::fs::write(
        repo.join("platform/inventory/classes/orphan.yml"),
        "parameters: {}\n",
    )
    .unwrap();
    commit_base(repo);
    edit(&repo.join("platform/components/web/banner.txt"), |_| {
        "hello\n".into()
    });
    git(repo, &["commit", "-qam", "head"]);
    let sub = repo.join("platform");
    let extra = ["--search-paths", ".", "lib"];
    let inc = ci(&sub, &extra);
    let full = ci(&sub, &[&extra[..], &["--full"]].concat());
    assert_eq!(inc.0, 0, "{}\n{}", inc.1, inc.2);
    assert!(inc.1.contains("already in the base"), "{}", inc.1);
    assert!(!full.2.contains("cannot lint the base"), "{}", full.2);
    assert_eq!(full.0, inc.0, "{}\n{}", full.1, full.2);
    assert_eq!(full.1, inc.1);
}

#[test]
fn ci_collect_on_a_pull_request_lints_the_checkout_confined() {
    // `ci --collect` linted the pull request's checkout unconfined: a
    // committed symlink class to a file of the runner was read, and its
    // top-level key quoted in the log and the job summary (a `ci` without
    // shards, which lints as the review reads, refuses it).
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/incremental");
    let dir = tempfile::tempdir().unwrap();
    let repo = &dir.path().join("repo");
    copy_tree(&fixture, repo);
    commit_base(repo);
    let shard = dir.path().join("s1");
    let out = strata()
        .current_dir(repo)
        .args(["compile", "--shard", "1/1", "--output-path"])
        .arg(&shard)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let outside = dir.path().join("runner-file.yml");
    std::fs::write(&outside, "runner_only_key_q7: 1\nparameters: {}\n").unwrap();
    std::os::unix::fs::symlink(&outside, repo.join("inventory/classes/leak.yml")).unwrap();
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "head"]);
    let (code, out, err) = ci(repo, &["--collect", shard.to_str().unwrap()]);
    assert!(!out.contains("runner_only_key_q7"), "{out}");
    assert!(!err.contains("runner_only_key_q7"), "{err}");
    assert!(err.contains("leads outside the repository"), "{err}");
    assert_eq!(code, 2, "{err}");
}

#[test]
fn ci_collect_on_a_pull_request_lints_as_ci_does() {
    // With shards, the pull request's lint ran the catalog rules (kapp
    // order, vaultkv-base64) on the head only: a finding as old as the
    // base counted as new on every pull request (exit 1, quoting the
    // scratch catalog's path), where `ci` without shards reports none.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/incremental");
    let dir = tempfile::tempdir().unwrap();
    let repo = &dir.path().join("repo");
    copy_tree(&fixture, repo);
    std::fs::write(
        repo.join("files/static/obj.yml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  annotations:\n    kapp.k14s.io/change-rule: \"garbage rule\"\n",
    )
    .unwrap();
    commit_base(repo);
    edit(&repo.join("components/web/banner.txt"), |_| {
        "hello\n".into()
    });
    git(repo, &["commit", "-qam", "head"]);
    let shard = dir.path().join("s1");
    let out = strata()
        .current_dir(repo)
        .args(["compile", "--shard", "1/1", "--output-path"])
        .arg(&shard)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let collected = ci(repo, &["--collect", shard.to_str().unwrap()]);
    let full = ci(repo, &["--full"]);
    assert!(!collected.1.contains("change-rule"), "{}", collected.1);
    assert_eq!(collected.0, full.0, "{}\n{}", collected.1, collected.2);
    assert_eq!(collected.1, full.1);
}

#[test]
fn review_runs_from_a_subdirectory_with_compile_flags() {
    // `diff --base` and `review` compile each revision from the directory
    // the user stands in, with compile flags given directly.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/incremental");
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    copy_tree(&fixture, &repo.join("platform"));
    commit_base(repo);
    edit(&repo.join("platform/components/web/banner.txt"), |_| {
        "hello\n".into()
    });
    git(repo, &["commit", "-qam", "head"]);
    let sub = repo.join("platform");
    let out = strata()
        .current_dir(&sub)
        .args(["diff", "--base", "base", "--search-paths", ".", "lib"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("ConfigMap"), "{text}");
    assert!(text.contains("+  banner: \"hello\\n\""), "{text}");
    // Targets without the web component did not change.
    assert!(!text.contains("target t3"), "{text}");
    let (code, out, err) = review(&sub, &["--inventory-path", "inventory"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("ConfigMap"), "{out}");
    assert!(err.contains("unchanged (same fingerprint)"), "{err}");
}

fn tree(root: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn compile(dir: &Path, extra: &[&str]) -> (bool, String) {
    let out_dir = if extra.contains(&"--output-path") {
        &[][..]
    } else {
        &["--output-path", "out"][..]
    };
    let out = strata()
        .current_dir(dir)
        .arg("compile")
        .args(out_dir)
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every entry below `root`: a file's permission bits and bytes, a link's
/// target, a directory's permission bits.
fn catalog(root: &Path) -> std::collections::BTreeMap<String, (u32, Vec<u8>)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let mode = meta.permissions().mode();
            let body = if meta.file_type().is_symlink() {
                std::fs::read_link(&p)
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes()
            } else if meta.is_dir() {
                stack.push(p);
                Vec::new()
            } else {
                std::fs::read(&p).unwrap()
            };
            out.insert(rel, (mode, body));
        }
    }
    out
}

/// `strata compile --cache` == `strata compile` under the random edits of
/// the review's equivalence test: the cache (as actions/cache restores it
/// from an earlier run) is warmed on a base, the edits are made, and the
/// cached compile must write the catalog a compile without the cache
/// writes (bytes, modes, links), or fail as it fails and leave the
/// previous catalog in place.
#[test]
fn compile_cache_equals_a_full_compile_under_random_edits() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/incremental");
    let seeds = seeds();
    let (mut served, mut ok_some) = (false, 0);
    for seed in 1..=seeds {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("w");
        copy_tree(&fixture, &repo);
        let cache = dir.path().join("cache");
        let cache = cache.to_str().unwrap();
        let mut rng = Rng(0x5851_F42D_4C95_7F2D ^ seed.wrapping_mul(0x1000_0001));
        let mut done = Vec::new();
        for n in 0..rng.below(2) {
            done.push(format!("base: {}", random_edit(&repo, &mut rng, 100 + n)));
        }
        let (warmed, _) = compile(&repo, &["--cache", cache]);
        let before = warmed.then(|| catalog(&repo.join("out/compiled")));
        for n in 0..1 + rng.below(max_edits()) {
            done.push(random_edit(&repo, &mut rng, n));
        }
        let (ok, err) = compile(&repo, &["--cache", cache]);
        let (ok_full, err_full) = compile(&repo, &["--output-path", "full"]);
        assert_eq!(
            ok, ok_full,
            "seed {seed}: edits {done:?}\ncached: {err}\nfull: {err_full}"
        );
        if ok {
            assert_eq!(
                catalog(&repo.join("out/compiled")),
                catalog(&repo.join("full/compiled")),
                "seed {seed}: edits {done:?}\ncached: {err}"
            );
            served |= !err.contains("(0 from the cache");
            ok_some += 1;
        } else if let Some(before) = before {
            assert_eq!(
                catalog(&repo.join("out/compiled")),
                before,
                "seed {seed}: edits {done:?}: a failed cached compile changed the catalog"
            );
        }
    }
    assert!(
        ok_some * 2 > seeds,
        "only {ok_some} of {seeds} seeds compiled"
    );
    assert!(served, "no seed served a target from the cache");
}

#[test]
fn compile_cache_reuses_unchanged_targets_and_matches_a_full_compile() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/incremental");
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("w");
    copy_tree(&fixture, &work);
    let cache = dir.path().join("cache");
    let cache_arg = cache.to_str().unwrap();
    let (ok, err) = compile(&work, &["--cache", cache_arg]);
    assert!(ok, "{err}");
    assert!(err.contains("(0 from the cache, 5 compiled)"), "{err}");
    let first = tree(&work.join("out/compiled"));
    let (ok, err) = compile(&work, &["--cache", cache_arg]);
    assert!(ok, "{err}");
    assert!(err.contains("(5 from the cache, 0 compiled"), "{err}");
    assert_eq!(tree(&work.join("out/compiled")), first);

    // The jsonnet component changes: its four targets are compiled again,
    // t3 (docs only) comes from the cache; the result is a full compile's.
    edit(&work.join("components/web/banner.txt"), |_| "hi\n".into());
    std::fs::remove_file(work.join("inventory/targets/t5.yml")).unwrap();
    let (ok, err) = compile(&work, &["--cache", cache_arg]);
    assert!(ok, "{err}");
    assert!(err.contains("(1 from the cache, 3 compiled)"), "{err}");
    let cached = tree(&work.join("out/compiled"));
    let (ok, err) = compile(&work, &["--output-path", "full"]);
    assert!(ok, "{err}");
    assert_eq!(cached, tree(&work.join("full/compiled")));
    assert!(!cached.keys().any(|k| k.starts_with("t5/")));

    // A failing compile leaves the previous catalog in place.
    edit(&work.join("components/web/helpers.libsonnet"), |s| {
        s.replace("spec:", "spec: error 'broken',")
    });
    let (ok, err) = compile(&work, &["--cache", cache_arg]);
    assert!(!ok, "{err}");
    assert_eq!(tree(&work.join("out/compiled")), cached);
}

/// Every file below `root` (relative path) with its inode: a catalog left
/// in place keeps its inodes, a rebuilt one gets new directories at least.
fn inodes(root: &Path) -> std::collections::BTreeMap<String, u64> {
    use std::os::unix::fs::MetadataExt;
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            out.insert(rel, std::fs::symlink_metadata(&p).unwrap().ino());
            if p.is_dir() {
                stack.push(p);
            }
        }
    }
    out
}

#[test]
fn compile_cache_with_nothing_changed_neither_renders_nor_rebuilds_and_stays_exact() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/incremental");
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("w");
    copy_tree(&fixture, &work);
    let cache = dir.path().join("cache");
    let cache_arg = cache.to_str().unwrap();
    let (ok, err) = compile(&work, &["--cache", cache_arg]);
    assert!(ok, "{err}");
    let (ok, err) = compile(&work, &["--output-path", "full"]);
    assert!(ok, "{err}");
    let full = tree(&work.join("full/compiled"));
    assert_eq!(tree(&work.join("out/compiled")), full);
    let before = inodes(&work.join("out/compiled"));

    // Nothing changed: not rendered, the catalog is left as it is.
    let (ok, err) = compile(&work, &["--cache", cache_arg]);
    assert!(ok, "{err}");
    assert!(
        err.contains("(5 from the cache, 0 compiled; inventory unchanged, not rendered)"),
        "{err}"
    );
    assert_eq!(inodes(&work.join("out/compiled")), before);
    assert_eq!(tree(&work.join("out/compiled")), full);

    // A catalog file edited, another added, one removed: the next run puts
    // back exactly the compiled catalog.
    let files: Vec<String> = full.keys().cloned().collect();
    std::fs::write(work.join("out/compiled").join(&files[0]), "edited\n").unwrap();
    std::fs::write(work.join("out/compiled/stray.yml"), "x: 1\n").unwrap();
    std::fs::remove_file(work.join("out/compiled").join(&files[1])).unwrap();
    let (ok, err) = compile(&work, &["--cache", cache_arg]);
    assert!(ok, "{err}");
    assert_eq!(tree(&work.join("out/compiled")), full);
    // Editing a file in place also edited the cache entry it was linked
    // from: nothing the cache kept may have changed with it.
    let (ok, err) = compile(&work, &["--cache", cache_arg]);
    assert!(ok, "{err}");
    assert_eq!(tree(&work.join("out/compiled")), full);

    // An inventory edit that changes no parameter: rendered (the files
    // differ), every target from the cache, the catalog left in place.
    let before = inodes(&work.join("out/compiled"));
    edit(&work.join("inventory/targets/t1.yml"), |s| {
        format!("# a comment\n{s}")
    });
    let (ok, err) = compile(&work, &["--cache", cache_arg]);
    assert!(ok, "{err}");
    assert!(err.contains("(5 from the cache, 0 compiled)"), "{err}");
    assert_eq!(inodes(&work.join("out/compiled")), before);

    // A parameter changes: rendered and compiled, as a full compile.
    edit(&work.join("inventory/targets/t1.yml"), |s| {
        format!("{s}\n  extra_for_cache_test: 1\n")
    });
    let (ok, err) = compile(&work, &["--cache", cache_arg]);
    assert!(ok, "{err}");
    assert!(!err.contains("not rendered"), "{err}");
    let (ok, err) = compile(&work, &["--output-path", "full2"]);
    assert!(ok, "{err}");
    assert_eq!(
        tree(&work.join("out/compiled")),
        tree(&work.join("full2/compiled"))
    );
}

/// Re-probe 7 (cache-stale-jinja2-template-executable-bit): a Jinja2
/// output keeps its template's mode, so the mode is part of the
/// fingerprint: a change that only makes a template executable (or
/// private) is compiled again, never served from the cache, and the
/// review shows it as git does (`old mode` / `new mode`).
#[cfg(unix)]
#[test]
fn a_template_mode_change_is_compiled_again_and_shown() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("w");
    std::fs::create_dir_all(work.join("inventory/targets")).unwrap();
    std::fs::create_dir_all(work.join("tpl")).unwrap();
    std::fs::write(work.join("tpl/run.sh"), "#!/bin/sh\necho {{ 1 + 1 }}\n").unwrap();
    std::fs::write(
        work.join("inventory/targets/t.yml"),
        "parameters:\n  kapitan:\n    vars: {target: t}\n    compile:\n      - {output_path: o, input_type: jinja2, input_paths: [tpl], output_type: yaml}\n",
    )
    .unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let chmod = |m: u32| {
        std::fs::set_permissions(work.join("tpl/run.sh"), std::fs::Permissions::from_mode(m))
            .unwrap()
    };
    chmod(0o644);
    let cache = dir.path().join("cache");
    let cache_arg = cache.to_str().unwrap();
    let out = work.join("out/compiled/t/o/run.sh");
    let (ok, err) = compile(&work, &["--cache", cache_arg]);
    assert!(ok, "{err}");
    assert_eq!(mode(&out), 0o644);
    for m in [0o755, 0o600] {
        chmod(m);
        let (ok, err) = compile(&work, &["--cache", cache_arg]);
        assert!(ok, "{err}");
        assert!(
            err.contains("(0 from the cache, 1 compiled)"),
            "{m:o}: {err}"
        );
        assert_eq!(mode(&out), m);
    }

    // A pull request that only makes the script executable.
    chmod(0o644);
    std::fs::write(work.join(".gitignore"), "out/\n").unwrap();
    commit_base(&work);
    chmod(0o755);
    git(&work, &["commit", "-q", "-am", "executable"]);
    for extra in [&[][..], &["--full"][..]] {
        let (code, out, err) = review(&work, extra);
        assert_eq!(code, 0, "{err}");
        assert!(!err.contains("1 unchanged"), "{extra:?}: {err}");
        assert!(
            out.contains("old mode 100644") && out.contains("new mode 100755"),
            "{extra:?}: {out}\n{err}"
        );
        assert!(!out.contains("no catalog changes"), "{extra:?}: {out}");
    }
}

/// Re-probe 7 (cache-poisoned-by-in-place-edit-with-mtime-kept): a write
/// through the catalog of the same size that sets the modification time
/// back (`touch -r`, `rsync --inplace -t`, `cp -p` onto the file) reached
/// the cache entry the file is linked to, and every later compile served
/// it. The inode's change time, which no one can set back, shows it.
#[cfg(unix)]
#[test]
fn an_edit_through_the_catalog_that_keeps_the_mtime_is_not_served() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("w");
    std::fs::create_dir_all(work.join("inventory/targets")).unwrap();
    std::fs::write(
        work.join("inventory/targets/t.yml"),
        "parameters:\n  kapitan:\n    vars: {target: t}\n    compile:\n      - {output_path: o, input_type: jsonnet, input_paths: [m.jsonnet], output_type: yaml}\n",
    )
    .unwrap();
    std::fs::write(work.join("m.jsonnet"), "{cm: {a: 1}}\n").unwrap();
    let cache = dir.path().join("cache");
    let cache_arg = cache.to_str().unwrap();
    let file = work.join("out/compiled/t/o/cm.yaml");
    let (ok, err) = compile(&work, &["--cache", cache_arg]);
    assert!(ok, "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "a: 1\n");
    // Nothing changed: the cache serves it, without compiling.
    let (ok, err) = compile(&work, &["--cache", cache_arg]);
    assert!(ok, "{err}");
    assert!(err.contains("(1 from the cache, 0 compiled"), "{err}");
    let edit = || {
        let mtime = std::fs::metadata(&file).unwrap().modified().unwrap();
        // The change time has a clock tick's resolution.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
        std::io::Write::write_all(&mut &f, b"a: 9\n").unwrap();
        f.set_modified(mtime).unwrap();
    };
    edit();
    let (ok, err) = compile(&work, &["--cache", cache_arg]);
    assert!(ok, "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "a: 1\n", "{err}");
    std::fs::remove_dir_all(work.join("out")).unwrap();
    let (ok, err) = compile(&work, &["--cache", cache_arg]);
    assert!(ok, "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "a: 1\n", "{err}");
    // Files strata links and unlinks itself (their change time moves) are
    // still served: checked by content once, then by state again.
    for _ in 0..2 {
        let (ok, err) = compile(&work, &["--cache", cache_arg]);
        assert!(ok, "{err}");
        assert!(err.contains("(1 from the cache, 0 compiled"), "{err}");
    }
}

/// Probe 25 (cache-inventory-facts-ignore-vault-env): a target's model
/// dump reads the `VAULT_*` variables (the defaults of
/// `kapitan.secrets.vaultkv`); a compile whose inventory files were
/// unchanged took the facts kept under the old values, found every
/// fingerprint in the cache and served the catalog of the old `VAULT_ADDR`.
#[test]
fn a_changed_vault_variable_is_not_served_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("w");
    std::fs::create_dir_all(work.join("inventory/targets")).unwrap();
    std::fs::create_dir_all(work.join("tpl")).unwrap();
    std::fs::write(
        work.join("inventory/targets/t.yml"),
        "parameters:\n  kapitan:\n    vars: {target: t}\n    secrets:\n      vaultkv: {auth: token}\n    compile:\n      - {output_path: o, input_type: jinja2, input_paths: [tpl]}\n",
    )
    .unwrap();
    std::fs::write(
        work.join("tpl/x.yml"),
        "addr: {{ inventory.parameters.kapitan.secrets.vaultkv.addr }}\n",
    )
    .unwrap();
    let cache = dir.path().join("cache");
    let run = |addr: &str| {
        let out = strata()
            .current_dir(&work)
            .env("VAULT_ADDR", addr)
            .args(["compile", "--output-path", "out", "--cache"])
            .arg(&cache)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{err}");
        let text = std::fs::read_to_string(work.join("out/compiled/t/o/x.yml")).unwrap();
        (text, err)
    };
    assert_eq!(run("http://one").0, "addr: http://one");
    let (text, err) = run("http://one");
    assert!(err.contains("not rendered"), "{err}");
    assert_eq!(text, "addr: http://one");
    let (text, err) = run("http://two");
    assert_eq!(text, "addr: http://two", "{err}");
}

/// Probe 25 (cache-key-before-compile-wrote-a-reference): a compile that
/// created a reference (`?{base64:targets/a/pw||randomstr}`) stored its
/// catalog under the key of the references *before* it (no `pw`); with
/// `pw` gone again (a fresh checkout, a cleaned tree), the next compile
/// took that entry: a catalog naming a reference nothing wrote, where a
/// compile without the cache creates it.
#[test]
fn a_compile_that_writes_a_reference_is_not_cached_under_the_old_references() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("w");
    std::fs::create_dir_all(work.join("inventory/targets")).unwrap();
    std::fs::create_dir_all(work.join("tpl")).unwrap();
    std::fs::create_dir_all(work.join("refs")).unwrap();
    std::fs::write(
        work.join("inventory/targets/a.yml"),
        "parameters:\n  s: ?{base64:targets/a/pw||randomstr}\n  kapitan:\n    vars: {target: a}\n    compile:\n      - {output_path: o, input_type: jinja2, input_paths: [tpl]}\n",
    )
    .unwrap();
    std::fs::write(work.join("tpl/x.yml"), "s: {{ inventory.parameters.s }}\n").unwrap();
    let cache = dir.path().join("cache");
    let cache_arg = cache.to_str().unwrap();
    let pw = work.join("refs/targets/a/pw");
    let (ok, err) = compile(&work, &["--cache", cache_arg]);
    assert!(ok, "{err}");
    assert!(pw.is_file(), "{err}");
    std::fs::remove_dir_all(work.join("refs/targets")).unwrap();
    let (ok, err) = compile(&work, &["--cache", cache_arg]);
    assert!(ok, "{err}");
    assert!(pw.is_file(), "the reference was not written again: {err}");
    // With the references as they are now, the entry is stored, then taken.
    for _ in 0..2 {
        let (ok, err) = compile(&work, &["--cache", cache_arg]);
        assert!(ok, "{err}");
    }
    let (ok, err) = compile(&work, &["--cache", cache_arg]);
    assert!(ok, "{err}");
    assert!(err.contains("(1 from the cache, 0 compiled"), "{err}");
}

/// Probe 25 (fingerprint-reads-fifo-and-hangs): the cache's inventory
/// digest read `reclass-config.yml` whatever it was: a FIFO there (which
/// rendering skips) made `compile --cache` hang.
#[cfg(unix)]
#[test]
fn a_fifo_reclass_config_does_not_hang_a_cached_compile() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("w");
    std::fs::create_dir_all(work.join("inventory/targets")).unwrap();
    std::fs::write(
        work.join("inventory/targets/t.yml"),
        "parameters:\n  kapitan:\n    vars: {target: t}\n    compile:\n      - {output_path: o, input_type: jsonnet, input_paths: [m.jsonnet], output_type: yaml}\n",
    )
    .unwrap();
    std::fs::write(work.join("m.jsonnet"), "{cm: {a: 1}}\n").unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(work.join("inventory/reclass-config.yml"))
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        return; // no mkfifo here
    }
    let cache = dir.path().join("cache");
    let (ok, err) = compile(&work, &["--cache", cache.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(err.contains("(0 from the cache, 1 compiled)"), "{err}");
}

/// Re-probe 10 (a-incremental-review-shared-output-dir-differs-from-full):
/// a pull request pointing a second target's `vars.target` at an existing
/// target's output directory was reviewed as "target added" (the existing
/// target, unchanged, was compiled on neither side), while a full review
/// showed a changed file. Every target writing a shared directory is
/// compiled on both sides.
#[test]
fn targets_sharing_an_output_directory_review_as_a_full_review_does() {
    let target = |name: &str, dir: &str| {
        format!("parameters:\n  kapitan:\n    vars: {{target: {dir}}}\n    compile:\n      - {{output_path: o, input_type: jinja2, input_paths: [tpl/{name}.txt]}}\n")
    };
    // (base vars.target of b, head vars.target of b, head edit of b's template)
    for (base_b, head_b, edit) in [("b", "a", false), ("a", "a", true), ("a", "b", false)] {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("w");
        let put = |rel: &str, text: &str| support::put(&work, rel, text);
        put("inventory/targets/a.yml", &target("a", "a"));
        put("inventory/targets/b.yml", &target("b", base_b));
        put("tpl/a.txt", "a\n");
        put("tpl/b.txt", "b\n");
        commit_base(&work);
        put("inventory/targets/b.yml", &target("b", head_b));
        if edit {
            put("tpl/b.txt", "b2\n");
        }
        git(&work, &["commit", "-q", "-am", "pr"]);
        let (code, incremental, err) = review(&work, &[]);
        let (full_code, full, full_err) = review(&work, &["--full"]);
        let case = format!("{base_b} -> {head_b}, edit {edit}");
        assert_eq!((code, full_code), (0, 0), "{case}: {err}\n{full_err}");
        assert_eq!(incremental, full, "{case}: {err}");
        if head_b == "a" {
            assert!(
                !incremental.contains("target added"),
                "{case}: {incremental}"
            );
        }
    }
}

/// Probe 25 (nested-output-directories-review-differs): targets `a` and
/// `a.sub` write `compiled/a/` and `compiled/a/sub/`, and `a` writes
/// `sub/y.yml` too, which `a.sub` overwrites. A pull request changing only
/// `a`: the full review showed no change (`a.sub`'s file on both sides),
/// the incremental one compiled `a` alone and showed its file changed; the
/// cache brought back the cached `a`'s file where a compile of both wrote
/// `a.sub`'s. Targets whose directories nest are compiled on both sides,
/// and not cached, as targets sharing one directory are.
#[test]
fn targets_with_nested_output_directories_review_and_cache_as_a_full_compile() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("w");
    let put = |rel: &str, text: &str| support::put(&work, rel, text);
    let target = |t: &str, v: &str, tpl: &str| {
        format!("parameters:\n  v: {v}\n  kapitan:\n    vars: {{target: {t}}}\n    compile:\n      - {{input_type: jinja2, input_paths: [{tpl}], output_path: .}}\n")
    };
    put("inventory/targets/a.yml", &target("a", "A", "tpl"));
    put("inventory/targets/a.sub.yml", &target("a.sub", "B", "tpl2"));
    put("tpl/sub/y.yml", "w: from-a-{{ inventory.parameters.v }}\n");
    put("tpl2/y.yml", "w: {{ inventory.parameters.v }}\n");
    put(".gitignore", "out/\nfull/\n");
    commit_base(&work);
    let cache = dir.path().join("cache");
    let cache_arg = cache.to_str().unwrap();
    let (ok, err) = compile(&work, &["--cache", cache_arg, "--parallelism", "1"]);
    assert!(ok, "{err}");
    put("inventory/targets/a.yml", &target("a", "A2", "tpl"));
    git(&work, &["commit", "-q", "-am", "pr"]);
    let (code, incremental, err) = review(&work, &["--parallelism", "1"]);
    let (full_code, full, full_err) = review(&work, &["--full", "--parallelism", "1"]);
    assert_eq!((code, full_code), (0, 0), "{err}\n{full_err}");
    assert_eq!(incremental, full, "{err}");
    let (ok, err) = compile(&work, &["--cache", cache_arg, "--parallelism", "1"]);
    assert!(ok, "{err}");
    let (ok, err) = compile(&work, &["--output-path", "full", "--parallelism", "1"]);
    assert!(ok, "{err}");
    assert_eq!(
        tree(&work.join("out/compiled")),
        tree(&work.join("full/compiled")),
        "{err}"
    );
}

/// Probe 20 (remove-entry-deletes-another-targets-output): target `z`'s new
/// `remove` entry deletes target `b`'s file; the incremental review left
/// `b` (unchanged fingerprint) out of both catalogs, so the removal failed
/// (nothing to remove) where the full review showed `b`'s file removed.
/// One worker, so that `b` is compiled before `z` in the full review.
#[test]
fn a_remove_of_another_targets_output_reviews_as_a_full_review_does() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("w");
    let put = |rel: &str, text: &str| support::put(&work, rel, text);
    let target = |t: &str, extra: &str| {
        format!("parameters:\n  kapitan:\n    vars: {{target: {t}}}\n    compile:\n      - {{input_type: jinja2, input_paths: [tpl/x.yml], output_path: .}}\n{extra}")
    };
    put("inventory/targets/b.yml", &target("b", ""));
    put("inventory/targets/z.yml", &target("z", ""));
    put("tpl/x.yml", "v: 1\n");
    commit_base(&work);
    put(
        "inventory/targets/z.yml",
        &target(
            "z",
            "      - {input_type: remove, input_paths: [compiled/b/x.yml], output_path: .}\n",
        ),
    );
    git(&work, &["commit", "-q", "-am", "pr"]);
    let (code, incremental, err) = review(&work, &["--parallelism", "1"]);
    let (full_code, full, full_err) = review(&work, &["--full", "--parallelism", "1"]);
    assert_eq!((code, full_code), (0, 0), "{err}\n{full_err}");
    assert_eq!(incremental, full, "{err}");
    assert!(err.contains("`z` removes `compiled/b/x.yml`"), "{err}");
}

/// Probe 33 (fp-sibling-dotted-targets-review-as-added): targets `x.one`
/// and `x.two` write `compiled/x/one/` and `compiled/x/two/`, which the
/// catalog diff compares as one target, `x`. A pull request adding `x.two`
/// (or removing it) with `x.one` unchanged: the incremental review left
/// `x.one` out of both catalogs, so the base had no `compiled/x/` and the
/// review said "target added" ("removed"), where the full review said
/// `x` changed. Every target below a first directory a compiled target
/// writes below is compiled on both sides.
#[test]
fn sibling_targets_of_a_changed_one_review_as_a_full_review_does() {
    let target = |t: &str, v: &str| {
        format!("parameters:\n  v: {v}\n  kapitan:\n    vars: {{target: {t}}}\n    compile:\n      - {{input_type: jinja2, input_paths: [tpl], output_path: .}}\n")
    };
    // (targets on the base, on the head)
    let cases: [(&[&str], &[&str]); 3] = [
        (&["x.one", "y"], &["x.one", "x.two", "y"]),
        (&["x.one", "x.two", "y"], &["x.one", "y"]),
        (&["x.one", "x.two", "y"], &["x.one", "x.two", "y", "z"]),
    ];
    for (base, head) in cases {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("w");
        let put = |rel: &str, text: &str| support::put(&work, rel, text);
        put("tpl/y.yml", "w: {{ inventory.parameters.v }}\n");
        for t in base {
            put(&format!("inventory/targets/{t}.yml"), &target(t, t));
        }
        commit_base(&work);
        std::fs::remove_dir_all(work.join("inventory/targets")).unwrap();
        for t in head {
            put(&format!("inventory/targets/{t}.yml"), &target(t, t));
        }
        git(&work, &["add", "-A"]);
        git(&work, &["commit", "-q", "-m", "pr"]);
        let (code, incremental, err) = review(&work, &["--parallelism", "1"]);
        let (full_code, full, full_err) = review(&work, &["--full", "--parallelism", "1"]);
        let case = format!("{base:?} -> {head:?}");
        assert_eq!((code, full_code), (0, 0), "{case}: {err}\n{full_err}");
        assert_eq!(incremental, full, "{case}: {err}");
        if head.len() == 4 {
            // A change elsewhere leaves the group out.
            assert!(err.contains("3 unchanged"), "{case}: {err}");
        } else {
            assert!(
                !incremental.contains("target added"),
                "{case}: {incremental}"
            );
            assert!(
                !incremental.contains("target removed"),
                "{case}: {incremental}"
            );
        }
    }
}

/// Probe 33 (fp-link-into-another-targets-output-review-differs): an
/// `external` entry of target `a` (always compiled) left a symlink
/// `compiled/a/link -> ../b` in the catalog. The full review compiled `b`
/// too and read the link as `b`'s files (`link/y.yml` added); the
/// incremental one left `b` (unchanged) out, the link led nowhere and was
/// shown as a link. A review now reads a link only below its own target's
/// directory, in both modes.
#[test]
fn a_link_into_another_targets_output_reviews_as_a_full_review_does() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("w");
    let put = |rel: &str, text: &str| support::put(&work, rel, text);
    put(
        "inventory/targets/a.yml",
        "parameters:\n  kapitan:\n    vars: {target: a}\n    compile:\n      - {input_type: external, input_paths: [scripts/gen.sh], output_path: ., args: ['\\${compiled_target_dir}']}\n",
    );
    put(
        "inventory/targets/b.yml",
        "parameters:\n  v: B\n  kapitan:\n    vars: {target: b}\n    compile:\n      - {input_type: jinja2, input_paths: [tpl], output_path: .}\n",
    );
    put("tpl/y.yml", "w: {{ inventory.parameters.v }}\n");
    let script = |link: bool| {
        let ln = if link { "ln -s ../b \"$1/link\"\n" } else { "" };
        format!("#!/bin/sh\necho one > \"$1/own.txt\"\n{ln}")
    };
    let exec = |text: &str| {
        use std::os::unix::fs::PermissionsExt;
        put("scripts/gen.sh", text);
        let p = work.join("scripts/gen.sh");
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    exec(&script(false));
    commit_base(&work);
    exec(&script(true));
    git(&work, &["commit", "-q", "-am", "pr"]);
    let (code, incremental, err) = review(&work, &["--parallelism", "1"]);
    let (full_code, full, full_err) = review(&work, &["--full", "--parallelism", "1"]);
    assert_eq!((code, full_code), (0, 0), "{err}\n{full_err}");
    assert_eq!(incremental, full, "{err}");
    assert!(err.contains("1 unchanged"), "{err}");
    assert!(
        incremental.contains("symlink to ../b: outside the target's directory"),
        "{incremental}"
    );
}

/// Probe 33 (fp-compile-error-masked-with-prepared-targets-only): a
/// component's error quoted its target's `note`, whose value another
/// target (unchanged) holds as `db_password`. The full review masked the
/// error with every target's secret-named values; the incremental review
/// prepared only the changed target, and its error showed the value.
#[test]
fn a_compile_error_is_masked_as_in_a_full_review() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("w");
    let put = |rel: &str, text: &str| support::put(&work, rel, text);
    let target = |t: &str, param: &str| {
        format!("parameters:\n  {param}: Zq7Hunter22Secretive\n  kapitan:\n    vars: {{target: {t}}}\n    compile:\n      - {{input_type: jsonnet, input_paths: [c/{t}.jsonnet], output_path: .}}\n")
    };
    put("inventory/targets/a.yml", &target("a", "note"));
    put("inventory/targets/b.yml", &target("b", "db_password"));
    put(
        "c/a.jsonnet",
        "local kap = import 'lib/kapitan.libjsonnet';\n{ a: { n: kap.inventory().parameters.note } }\n",
    );
    put("c/b.jsonnet", "{ b: { x: 1 } }\n");
    commit_base(&work);
    put(
        "c/a.jsonnet",
        "local kap = import 'lib/kapitan.libjsonnet';\nerror 'bad note ' + kap.inventory().parameters.note\n",
    );
    git(&work, &["commit", "-q", "-am", "pr"]);
    let (code, incremental, err) = review(&work, &["--parallelism", "1"]);
    let (full_code, full, full_err) = review(&work, &["--full", "--parallelism", "1"]);
    assert_eq!((code, full_code), (2, 2), "{err}\n{full_err}");
    assert_eq!((&incremental, &err), (&full, &full_err));
    assert!(err.contains("bad note <redacted>"), "{err}");
    assert!(!err.contains("Zq7Hunter22"), "{err}");
}

#[test]
fn ci_collect_reviews_the_pull_request_that_adds_the_inventory() {
    // Probe 31 (review-side-without-inventory-fails, `--collect`): a base
    // without the inventory stopped the review of the shards' catalog with
    // "inventory directory not found"; it has no targets.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/incremental");
    let dir = tempfile::tempdir().unwrap();
    let repo = &dir.path().join("repo");
    std::fs::create_dir_all(repo).unwrap();
    std::fs::write(repo.join("README"), "x\n").unwrap();
    commit_base(repo);
    copy_tree(&fixture, repo);
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "adds the inventory"]);
    let shard = dir.path().join("s1");
    let out = strata()
        .current_dir(repo)
        .args(["compile", "--shard", "1/1", "--output-path"])
        .arg(&shard)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (code, out, err) = ci(repo, &["--collect", shard.to_str().unwrap()]);
    assert!(!err.contains("not found"), "{err}");
    assert!(out.contains("targets added"), "{out}");
    assert!(code == 0 || code == 1, "{out}\n{err}");
}

/// The apply orders of an incremental review are compared only for the
/// targets its diff found changed: a pull request that moves `web`'s jobs
/// (a kapp change group and rule) and leaves `db` alone shows `web`'s new
/// order, as the full review does, and nothing for `db`.
#[test]
fn a_changed_apply_order_shows_as_in_a_full_review() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("w");
    let put = |rel: &str, text: &str| support::put(&work, rel, text);
    let target = |name: &str| {
        format!("parameters:\n  kapitan:\n    vars: {{target: {name}}}\n    compile:\n      - {{output_path: ., input_type: jinja2, input_paths: [tpl/{name}.yml]}}\n")
    };
    let job = |name: &str, annotations: &str| {
        format!("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  namespace: ns\n{annotations}")
    };
    let jobs =
        |group: &str, rule: &str| format!("{}---\n{}", job("migrate", group), job("app", rule));
    for t in ["web", "db"] {
        put(&format!("inventory/targets/{t}.yml"), &target(t));
        put(&format!("tpl/{t}.yml"), &jobs("", ""));
    }
    commit_base(&work);
    put(
        "tpl/web.yml",
        &jobs(
            "  annotations:\n    kapp.k14s.io/change-group: migrations\n",
            "  annotations:\n    kapp.k14s.io/change-rule: upsert after upserting migrations\n",
        ),
    );
    git(&work, &["commit", "-q", "-am", "pr"]);
    let (code, incremental, err) = ci(&work, &[]);
    let (full_code, full, full_err) = ci(&work, &["--full"]);
    assert_eq!((code, full_code), (0, 0), "{err}\n{full_err}");
    assert_eq!(incremental, full, "{err}");
    assert!(
        incremental.contains("Apply order changed in <code>web</code> (1 change moved)"),
        "{incremental}"
    );
    assert_eq!(
        incremental.matches("Apply order changed in").count(),
        1,
        "{incremental}"
    );
}

/// A review compares the apply orders of only the changed targets whose
/// changes reach what kapp's rules read: a spec change and an ordinary
/// annotation are not compared (and reorder nothing, as the full review
/// finds), a change group is, and so is every change of a target holding
/// its own kapp `Config`, whose matchers may read any field (here the
/// ordinary annotation joins a group that another job waits for).
#[test]
fn apply_orders_are_compared_where_a_change_can_reach_the_rules() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("w");
    let put = |rel: &str, text: &str| support::put(&work, rel, text);
    let target = |name: &str| {
        format!("parameters:\n  kapitan:\n    vars: {{target: {name}}}\n    compile:\n      - {{output_path: ., input_type: jinja2, input_paths: [tpl/{name}.yml]}}\n")
    };
    let job = |name: &str, meta: &str, spec: &str| {
        format!("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  namespace: ns\n{meta}spec:\n  parallelism: {spec}\n")
    };
    let config = "apiVersion: kapp.k14s.io/v1alpha1\nkind: Config\nchangeGroupBindings:\n- name: owned\n  resourceMatchers:\n  - hasAnnotationMatcher: {keys: [owner]}\nchangeRuleBindings:\n- rules: [upsert after upserting owned]\n  resourceMatchers:\n  - kindNamespaceNameMatcher: {kind: Job, namespace: ns, name: app}\n---\n";
    let note = "  annotations:\n    note: x\n";
    let owner = "  annotations:\n    note: x\n    owner: team\n";
    let group = "  annotations:\n    kapp.k14s.io/change-group: migrations\n";
    let rule = "  annotations:\n    kapp.k14s.io/change-rule: upsert after upserting migrations\n";
    for t in ["spec", "group", "config"] {
        put(&format!("inventory/targets/{t}.yml"), &target(t));
    }
    put(
        "tpl/spec.yml",
        &format!(
            "{}---\n{}",
            job("migrate", group, "1"),
            job("app", rule, "1")
        ),
    );
    put(
        "tpl/group.yml",
        &format!("{}---\n{}", job("migrate", "", "1"), job("app", rule, "1")),
    );
    put(
        "tpl/config.yml",
        &format!(
            "{config}{}---\n{}",
            job("migrate", note, "1"),
            job("app", "", "1")
        ),
    );
    commit_base(&work);
    put(
        "tpl/spec.yml",
        &format!(
            "{}---\n{}",
            job("migrate", group, "2"),
            job("app", &format!("{rule}    owner: team\n"), "3")
        ),
    );
    put(
        "tpl/group.yml",
        &format!(
            "{}---\n{}",
            job("migrate", group, "1"),
            job("app", rule, "1")
        ),
    );
    put(
        "tpl/config.yml",
        &format!(
            "{config}{}---\n{}",
            job("migrate", owner, "1"),
            job("app", "", "1")
        ),
    );
    git(&work, &["commit", "-q", "-am", "pr"]);
    let timings = [("STRATA_TIMINGS", "1")];
    let (code, incremental, err) = ci_with(&work, &[], &timings);
    let (full_code, full, full_err) = ci_with(&work, &["--full"], &timings);
    assert_eq!((code, full_code), (0, 0), "{err}\n{full_err}");
    assert_eq!(incremental, full, "{err}");
    for t in ["group", "config"] {
        assert!(
            incremental.contains(&format!(
                "Apply order changed in <code>{t}</code> (1 change moved)"
            )),
            "{t}: {incremental}"
        );
    }
    assert_eq!(
        incremental.matches("Apply order changed in").count(),
        2,
        "{incremental}"
    );
    for e in [&err, &full_err] {
        assert!(
            e.contains("timing: compare apply orders (2 of 3 changed targets)"),
            "{e}"
        );
    }
}

/// A cache restored by `actions/cache` (an archive unpacked anew: new
/// inodes and times) serves its entries, checked by their bytes, when git
/// tracks nothing in its directory; it gave no hits at all before. Files a
/// commit put there are never trusted by their bytes (a commit chooses
/// both an entry and the record beside it; probe 36): such a cache serves
/// nothing.
#[test]
fn a_restored_cache_serves_its_entries_unless_a_commit_put_files_there() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/incremental");
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("w");
    copy_tree(&fixture, &work);
    commit_base(&work);
    let cache = work.join(".strata-cache");
    let (ok, err) = compile(&work, &["--cache", ".strata-cache"]);
    assert!(ok, "{err}");
    assert!(err.contains("(0 from the cache, 5 compiled)"), "{err}");
    let built = tree(&work.join("out/compiled"));
    let saved = dir.path().join("saved");
    copy_tree(&cache, &saved);
    // A fresh checkout with the cache restored: new inodes, new times.
    let restore = || {
        std::fs::remove_dir_all(&cache).unwrap();
        copy_tree(&saved, &cache);
        std::fs::remove_dir_all(work.join("out")).unwrap();
    };
    restore();
    let (ok, err) = compile(&work, &["--cache", ".strata-cache"]);
    assert!(ok, "{err}");
    assert!(err.contains("(5 from the cache, 0 compiled)"), "{err}");
    assert_eq!(tree(&work.join("out/compiled")), built);
    // An entry whose bytes changed after it was stored is compiled again.
    restore();
    let entry = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir() && !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .unwrap();
    let file = support::files_under(&entry).into_iter().next().unwrap();
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[0] ^= 1;
    std::fs::write(&file, bytes).unwrap();
    let (ok, err) = compile(&work, &["--cache", ".strata-cache"]);
    assert!(ok, "{err}");
    assert!(err.contains("(4 from the cache, 1 compiled)"), "{err}");
    assert_eq!(tree(&work.join("out/compiled")), built);
    // The same cache committed: nothing is served from it.
    restore();
    git(&work, &["add", "-f", ".strata-cache"]);
    git(&work, &["commit", "-q", "-m", "cache"]);
    let (ok, err) = compile(&work, &["--cache", ".strata-cache"]);
    assert!(ok, "{err}");
    assert!(err.contains("(0 from the cache, 5 compiled)"), "{err}");
    assert_eq!(tree(&work.join("out/compiled")), built);
}

/// An incremental review keeps the files of targets whose inputs are all
/// known in memory (docs/incremental.md). A target whose Jinja2 output
/// holds a PackageInstall has them written out for the package step,
/// which reads them back: the review shows the rendered package's change
/// exactly as a full review (every file on disk) does.
#[test]
fn a_target_kept_in_memory_still_renders_its_packages() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/packages/compile"),
        repo,
    );
    let target = repo.join("inventory/targets/prod.yml");
    let text = std::fs::read_to_string(&target).unwrap();
    // A jinja2 entry (a copy is always written to disk) and no
    // `packages_install` (such a target is always compiled, on disk).
    let (head, _) = text.split_once("  packages_install:").unwrap();
    std::fs::write(
        &target,
        head.replace("input_type: copy", "input_type: jinja2"),
    )
    .unwrap();
    // A second target kept in memory, unchanged by the pull request.
    std::fs::write(
        repo.join("inventory/targets/other.yml"),
        "parameters:\n  kapitan:\n    vars: {target: other}\n    compile:\n      - {input_type: jinja2, input_paths: [other], output_path: m}\n",
    )
    .unwrap();
    std::fs::create_dir_all(repo.join("other")).unwrap();
    std::fs::write(repo.join("other/cm.yml"), "kind: ConfigMap\n").unwrap();
    commit_base(repo);
    let install = repo.join("manifests/tool-install.yml");
    let text = std::fs::read_to_string(&install).unwrap();
    std::fs::write(
        &install,
        text.replace("greeting: bonjour", "greeting: salut"),
    )
    .unwrap();
    std::fs::write(
        repo.join("inventory/targets/prod.yml"),
        std::fs::read_to_string(&target).unwrap().replace(
            "kubernetes_version: 1.29.0",
            "kubernetes_version: 1.29.1\n  v: 2",
        ),
    )
    .unwrap();
    git(repo, &["commit", "-q", "-am", "salut"]);
    let inc = review(repo, &[]);
    let full = review(repo, &["--full"]);
    assert_eq!(inc.0, 0, "{}", inc.2);
    assert_eq!((inc.0, &inc.1), (full.0, &full.1), "{}\n{}", inc.2, full.2);
    // The package step's output: the ConfigMap the package renders.
    assert!(
        inc.1.contains("packages/tool/cm.yml")
            && inc.1.contains("-  greeting: bonjour")
            && inc.1.contains("+  greeting: salut"),
        "{}",
        inc.1
    );
    assert!(inc.2.contains("1 unchanged"), "{}", inc.2);
    // Past a small budget, the rest of the files are written: the review
    // reads both and shows the same.
    let out = strata()
        .current_dir(repo)
        .args(["review", "--base", "base", "--head", "HEAD"])
        .env("STRATA_REVIEW_MEMORY_BYTES", "300")
        .env_remove("GITHUB_EVENT_PATH")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), full.1);
}

/// A name a target's files use both as a file and as a directory is an
/// error on disk (`File exists`, `Is a directory`), as is a path longer
/// than the file system takes; a review keeping the
/// target in memory must meet the same error, not show the files (each
/// case here passed the incremental review with exit 0 before the tree
/// checked it).
#[test]
fn a_name_both_file_and_directory_fails_in_memory_as_on_disk() {
    let entry = |out: &str, input: &str| {
        format!("      - {{output_path: {out}, input_type: jsonnet, input_paths: [{input}], output_type: plain}}\n")
    };
    let cases = [
        // A file, then a file below it (one entry: keys in order).
        (entry("o", "m.jsonnet"), "{a: 'x', 'a/b': 'y'}", "{}"),
        // A file below a name, then that name as a file.
        (
            entry("o", "m.jsonnet") + &entry("o", "n.jsonnet"),
            "{'a/b': 'y'}",
            "{a: 'x'}",
        ),
        // An entry's (empty) output directory, then a file of that name.
        (
            entry("o", "n.jsonnet") + &entry(".", "m.jsonnet"),
            "{o: 'x'}",
            "{}",
        ),
        // A file, then an entry whose output directory has its name.
        (
            entry(".", "m.jsonnet") + &entry("o", "n.jsonnet"),
            "{o: 'x'}",
            "{}",
        ),
        // A path longer than the file system takes (names of 200 bytes).
        (
            entry("o", "m.jsonnet"),
            "{[std.join('/', std.makeArray(30, function(i) std.repeat('b', 200)))]: 'x'}",
            "{}",
        ),
        // A key ending in `/` or `/.`: the tree's key dropped that end
        // (a file `a`), the disk refuses the name.
        (entry("o", "m.jsonnet"), "{'a/': 'x'}", "{}"),
        (entry("o", "m.jsonnet"), "{'a/b/': 'x'}", "{}"),
        (entry("o", "m.jsonnet"), "{'a/.': 'x'}", "{}"),
    ];
    for (i, (entries, m, n)) in cases.iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        std::fs::create_dir_all(repo.join("inventory/targets")).unwrap();
        std::fs::write(
            repo.join("inventory/targets/t.yml"),
            format!("parameters:\n  kapitan:\n    vars: {{target: t}}\n    compile:\n{entries}"),
        )
        .unwrap();
        std::fs::write(repo.join("m.jsonnet"), format!("{m}\n")).unwrap();
        std::fs::write(repo.join("n.jsonnet"), format!("{n}\n")).unwrap();
        commit_base(repo);
        std::fs::write(repo.join("m.jsonnet"), format!("{m}\n// head\n")).unwrap();
        git(repo, &["commit", "-q", "-am", "head"]);
        let errors = |s: &str| -> Vec<String> {
            s.lines()
                .filter(|l| l.starts_with("error:"))
                .map(str::to_string)
                .collect()
        };
        let inc = review(repo, &[]);
        let full = review(repo, &["--full"]);
        assert_eq!(full.0, 2, "case {i}: {}", full.2);
        assert_eq!(
            (inc.0, &inc.1, errors(&inc.2)),
            (full.0, &full.1, errors(&full.2)),
            "case {i}"
        );
        assert!(
            [
                "File exists",
                "Is a directory",
                "File name too long",
                "No such file or directory"
            ]
            .iter()
            .any(|e| inc.2.contains(e)),
            "case {i}: {}",
            inc.2
        );
    }
}
