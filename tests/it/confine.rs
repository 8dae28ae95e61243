//! Issue 19: the commands that read files a pull request chooses (beyond
//! `compile`, `lint` and `inventory`) confine themselves to the working
//! tree on a `pull_request*` event or with `--confine`: a committed link
//! (or a path in a committed file) leading out of the checkout is refused,
//! naming it, and what it points at is never printed. Links inside the
//! tree keep working, and paths outside it given as flags are trusted.

use crate::strata;
use crate::support::copy_tree;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A marker the outside file holds: no output may show it when confined.
const MARKER: &str = "RUNNER-PRIVATE-7f3a";

/// `component compile` of the `component` fixture's demo, into `out/`.
const COMPONENT_NO_FETCH: [&str; 6] = [
    "component",
    "compile",
    "component-demo",
    "--no-fetch",
    "-o",
    "out",
];

/// `catalog compile` of the `commodore/basic` fixture, as it is.
const CATALOG_LOCAL: [&str; 6] = [
    "catalog",
    "compile",
    "c-prod",
    "--local",
    "--cluster-file",
    "cluster.json",
];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hostile/confine")
        .join(name)
}

/// A scratch directory holding `repo/` (a copy of fixture `name`) and
/// `outside/secret.yml` (the runner's file, holding [`MARKER`]).
fn setup(name: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    copy_tree(&fixture(name), &repo);
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.yml"), format!("stolen: {MARKER}\n")).unwrap();
    (tmp, repo, outside)
}

fn link(target: &Path, at: &Path) {
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, at).unwrap();
}

/// Runs strata in `dir` with `GITHUB_EVENT_NAME=event`, expecting `code`;
/// stdout and stderr.
fn run(dir: &Path, args: &[&str], event: &str, code: i32) -> String {
    let out = strata()
        .current_dir(dir)
        .args(args)
        .env("GITHUB_EVENT_NAME", event)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(code),
        "strata {args:?} ({event}) in {}: {text}",
        dir.display()
    );
    text
}

/// `args` is refused on a pull request and with `--confine` (the error
/// holding each of `needles`, never the marker), and reads the file
/// unconfined (a push).
fn refused_when_confined(repo: &Path, args: &[&str], needles: &[&str]) {
    let with_flag: Vec<&str> = args.iter().copied().chain(["--confine"]).collect();
    for (args, event) in [(args, "pull_request"), (&with_flag[..], "push")] {
        let err = run(repo, args, event, 2);
        for n in needles {
            assert!(err.contains(n), "{args:?} ({event}): no `{n}` in {err}");
        }
        assert!(!err.contains(MARKER), "{args:?} ({event}): {err}");
    }
}

/// `args` then `abs` (a path outside the working directory, as a flag
/// gives it) reads the outside file even on a pull request.
fn trusted_when_given(repo: &Path, args: &[&str], abs: &Path) {
    let abs = abs.display().to_string();
    let args: Vec<&str> = args.iter().copied().chain([abs.as_str()]).collect();
    let out = run(repo, &args, "pull_request", 0);
    assert!(out.contains(MARKER), "{args:?}: {out}");
}

/// The known finding: `strata template -f DIR` printed a file outside the
/// repository through a symlink the pull request committed in DIR.
#[test]
fn template_never_reads_through_a_link_out_of_the_checkout() {
    let (_tmp, repo, outside) = setup("template");
    let secret = outside.join("secret.yml");
    // A link inside the tree works confined.
    link(
        Path::new("../shared/inner.yml"),
        &repo.join("config/inner.yml"),
    );
    let out = run(&repo, &["template", "-f", "config"], "pull_request", 0);
    assert!(
        out.contains("app: demo") && out.contains("shared: true"),
        "{out}"
    );
    // A link out of the tree in the input directory.
    link(&secret, &repo.join("config/leak.yml"));
    refused_when_confined(
        &repo,
        &["template", "-f", "config"],
        &[
            "config/leak.yml",
            "through a symlink",
            "outside the repository",
            "--confine",
            "command line",
        ],
    );
    let out = run(&repo, &["template", "-f", "config"], "push", 0);
    assert!(out.contains(MARKER), "unconfined reads it, as ytt: {out}");
    std::fs::remove_file(repo.join("config/leak.yml")).unwrap();
    // A directory link out, and a committed link named as the input file,
    // a data values file or a data value's file.
    link(&outside, &repo.join("config/up"));
    refused_when_confined(&repo, &["template", "-f", "config"], &["config/up"]);
    std::fs::remove_file(repo.join("config/up")).unwrap();
    link(&secret, &repo.join("values.yml"));
    for args in [
        &["template", "-f", "config", "-f", "values.yml"][..],
        &["template", "-f", "config", "-f", "v/x.yml=values.yml"],
        &[
            "template",
            "-f",
            "config",
            "--data-values-file",
            "values.yml",
        ],
        &[
            "template",
            "-f",
            "config",
            "--data-value-file",
            "name=values.yml",
        ],
    ] {
        refused_when_confined(&repo, args, &["values.yml", "through a symlink"]);
    }
    // A path outside the tree given on the command line is trusted.
    trusted_when_given(&repo, &["template", "-f", "config", "-f"], &secret);
}

/// `strata order FILE` (and `--catalog DIR`, `--order-config FILE`) read a
/// committed link to the runner's files and printed them (`--format yaml`).
/// A link below a directory that leaves it was already skipped; now it is
/// refused when confined.
#[test]
fn order_never_reads_through_a_link_out_of_the_checkout() {
    let (_tmp, repo, outside) = setup("order");
    std::fs::write(
        outside.join("cm.yml"),
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {MARKER}, namespace: app}}\n"),
    )
    .unwrap();
    link(Path::new("../manifests"), &repo.join("more/m"));
    let out = run(
        &repo,
        &["order", "--format", "yaml", "manifests", "more"],
        "pull_request",
        0,
    );
    assert!(out.contains("kind: Namespace"), "{out}");
    link(&outside.join("cm.yml"), &repo.join("cm.yml"));
    link(&outside, &repo.join("deploy"));
    for args in [
        &["order", "--format", "yaml", "manifests", "cm.yml"][..],
        &["order", "--format", "yaml", "--catalog", "deploy"],
        &["order", "manifests", "--order-config", "cm.yml"],
    ] {
        refused_when_confined(&repo, args, &["through a symlink", "`strata order`"]);
    }
    let out = run(
        &repo,
        &["order", "--format", "yaml", "manifests", "cm.yml"],
        "push",
        0,
    );
    assert!(out.contains(MARKER), "{out}");
    link(&outside.join("cm.yml"), &repo.join("manifests/leak.yml"));
    refused_when_confined(&repo, &["order", "manifests"], &["manifests/leak.yml"]);
    // An outside path given as an argument is trusted.
    trusted_when_given(
        &repo,
        &["order", "--format", "yaml"],
        &outside.join("cm.yml"),
    );
}

/// Moves `file` aside (to `.real`) and commits a link in its place to
/// `target`, a file of the runner holding `text`.
fn link_out_instead(file: &Path, target: &Path, text: &str) {
    std::fs::write(target, text).unwrap();
    std::fs::rename(file, file.with_extension("real")).unwrap();
    link(target, file);
}

/// Replaces `@OUTSIDE@` in `file` by `outside`'s path.
fn place(file: &Path, outside: &Path) {
    let text = std::fs::read_to_string(file).unwrap();
    std::fs::write(
        file,
        text.replace("@OUTSIDE@", &outside.display().to_string()),
    )
    .unwrap();
}

/// A git repository at `dir` holding `files`, on branch `main`.
fn git_repo(dir: &Path, files: &[(&str, &str)]) {
    for (name, text) in files {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    for args in [&["init", "-q"][..], &["add", "-A"], &["commit", "-qm", "x"]] {
        crate::support::git(dir, args);
    }
}

/// `strata package list/resolve/render`: a PackageRepository's or a
/// Package's `fetch.git.url` of `file://` (a repository of the runner) was
/// cloned and shown; a committed link named as `--packages`, `--repo`,
/// `--install`, `--values` was read. Confined: refused, inline content
/// and links inside the tree keep working.
#[test]
fn package_never_reads_or_fetches_outside_the_checkout() {
    let (_tmp, repo, outside) = setup("package");
    for f in ["packages.yml", "repository.yml"] {
        place(&repo.join(f), &outside);
    }
    let stolen = format!(
        "apiVersion: data.packaging.carvel.dev/v1alpha1\nkind: Package\nmetadata: {{name: stolen.example.com.1.0.0}}\nspec:\n  refName: stolen.example.com\n  version: 1.0.0\n  template: {{spec: {{fetch: [{{inline: {{paths: {{a.yml: 'x: {MARKER}'}}}}}}], template: [{{kbld: {{}}}}], deploy: [{{kapp: {{}}}}]}}}}\n"
    );
    git_repo(
        &outside.join("content"),
        &[
            ("packages/stolen.yml", &stolen),
            (
                "config/cm.yml",
                &format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {MARKER}}}\n"),
            ),
        ],
    );
    // Inline content, through a link inside the tree: rendered.
    link(Path::new("packages.yml"), &repo.join("all.yml"));
    let out = run(
        &repo,
        &[
            "package",
            "render",
            "--packages",
            "all.yml",
            "--install",
            "install.yml",
        ],
        "pull_request",
        0,
    );
    assert!(out.contains("kind: Pod"), "{out}");
    // A PackageRepository fetched by git from the runner: listed unconfined.
    let list = ["package", "list", "--repository", "repository.yml"];
    let out = run(&repo, &list, "push", 0);
    assert!(out.contains("stolen.example.com"), "{out}");
    refused_when_confined(
        &repo,
        &list,
        &[
            "repository.yml",
            "PackageRepository runner",
            "fetches no package repository but inline ones",
        ],
    );
    // A Package fetching its content by git from the runner.
    let render = [
        "package",
        "render",
        "--packages",
        "packages.yml",
        "--install",
        "install-git.yml",
    ];
    let out = run(&repo, &render, "push", 0);
    assert!(out.contains(MARKER), "{out}");
    refused_when_confined(
        &repo,
        &render,
        &["fetch[0] `git`", "fetches only `inline` package content"],
    );
    // Committed links out named as inputs.
    link(
        &outside.join("content/packages/stolen.yml"),
        &repo.join("pk.yml"),
    );
    link(&outside.join("content"), &repo.join("vendor"));
    link(&outside.join("secret.yml"), &repo.join("values.yml"));
    for args in [
        &["package", "list", "--packages", "pk.yml"][..],
        &["package", "list", "--repo", "vendor"],
        &[
            "package",
            "resolve",
            "--packages",
            "packages.yml",
            "--install",
            "pk.yml",
        ],
    ] {
        refused_when_confined(&repo, args, &["through a symlink", "`strata package`"]);
    }
    let render = [
        "package",
        "render",
        "--packages",
        "packages.yml",
        "--install",
    ];
    for flag in ["--values", "--data-values-file"] {
        let args: Vec<&str> = render
            .iter()
            .copied()
            .chain(["install.yml", flag, "values.yml"])
            .collect();
        refused_when_confined(&repo, &args, &["values.yml", "through a symlink"]);
    }
}

/// `strata package render --output FILE` / `--output-dir DIR` wrote
/// through a committed link (a dangling one too) into the runner's files.
#[test]
fn package_render_never_writes_through_a_link_out() {
    let (_tmp, repo, outside) = setup("package");
    for f in ["packages.yml", "repository.yml"] {
        place(&repo.join(f), &outside);
    }
    link(&outside.join("new.yml"), &repo.join("rendered.yml"));
    link(&outside, &repo.join("out"));
    let render = [
        "package",
        "render",
        "--packages",
        "packages.yml",
        "--install",
        "install.yml",
    ];
    for (flag, path, shown) in [
        ("--output", "rendered.yml", "--output rendered.yml"),
        ("--output-dir", "out", "--output-dir out/web"),
    ] {
        let args: Vec<&str> = render.iter().copied().chain([flag, path]).collect();
        refused_when_confined(
            &repo,
            &args,
            &[shown, "leads outside the working directory"],
        );
    }
    assert!(!outside.join("new.yml").exists() && !outside.join("web").exists());
    let args: Vec<&str> = render
        .iter()
        .copied()
        .chain(["--output", "rendered.yml"])
        .collect();
    run(&repo, &args, "push", 0);
    assert!(
        outside.join("new.yml").is_file(),
        "unconfined, the link is followed"
    );
}

/// `strata diff --catalogs OLD NEW` with NEW a committed link to a
/// directory of the runner printed its files as added; a link below a
/// catalog was already left out (issue 19 item 7), and is refused too.
#[test]
fn diff_never_reads_a_catalog_linked_out_of_the_checkout() {
    let (_tmp, repo, outside) = setup("diff");
    let cat = |root: &Path, text: &str| {
        std::fs::create_dir_all(root.join("t")).unwrap();
        std::fs::write(root.join("t/cm.yml"), text).unwrap();
    };
    cat(&repo.join("old"), "a: 1\n");
    cat(&repo.join("real"), "a: 2\n");
    cat(&outside.join("cat"), &format!("a: {MARKER}\n"));
    link(Path::new("real"), &repo.join("new"));
    let args = ["diff", "--catalogs", "old", "new"];
    let out = run(&repo, &args, "pull_request", 0);
    assert!(out.contains('2'), "a link inside: {out}");
    std::fs::remove_file(repo.join("new")).unwrap();
    link(&outside.join("cat"), &repo.join("new"));
    refused_when_confined(
        &repo,
        &args,
        &["refusing to read new", "through a symlink", "`strata diff`"],
    );
    let out = run(&repo, &args, "push", 0);
    assert!(out.contains(MARKER), "{out}");
    trusted_when_given(&repo, &["diff", "--catalogs", "old"], &outside.join("cat"));
}

/// `strata refs`: a `.kapitan` `refs: refs-path:` outside the checkout or a
/// committed `refs` link had `--write` write (and `--reveal` read) the
/// runner's directory; `-t` read a class linked out; `--reveal` let the
/// pull request's reference files choose where the runner's Vault token
/// goes. Confined: refused.
#[test]
fn refs_never_reads_or_writes_outside_the_checkout() {
    let (_tmp, repo, outside) = setup("refs");
    let elsewhere = outside.join("refs");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let write = ["refs", "--write", "base64:w", "-f", "in.txt"];
    // Inside the tree, through a link: works.
    std::fs::create_dir_all(repo.join("store")).unwrap();
    link(Path::new("store"), &repo.join("refs"));
    run(&repo, &write, "pull_request", 0);
    assert!(repo.join("store/w").is_file());
    std::fs::remove_file(repo.join("refs")).unwrap();
    // `.kapitan` sending the refs out.
    std::fs::write(
        repo.join(".kapitan"),
        "refs:\n  refs-path: ../outside/refs\n",
    )
    .unwrap();
    refused_when_confined(
        &repo,
        &write,
        &[
            "`.kapitan` sets the refs path to `../outside/refs`",
            "outside the repository",
        ],
    );
    assert!(!elsewhere.join("w").exists());
    run(&repo, &write, "push", 0);
    assert!(elsewhere.join("w").is_file(), "unconfined, as Kapitan");
    std::fs::remove_file(repo.join(".kapitan")).unwrap();
    std::fs::remove_file(elsewhere.join("w")).unwrap();
    // A committed `refs` link out.
    link(&elsewhere, &repo.join("refs"));
    refused_when_confined(
        &repo,
        &write,
        &["refusing to read ./refs", "through a symlink"],
    );
    assert!(!elsewhere.join("w").exists());
    // The flag is trusted.
    let abs = elsewhere.display().to_string();
    let flagged: Vec<&str> = write.iter().copied().chain(["--refs-path", &abs]).collect();
    run(&repo, &flagged, "pull_request", 0);
    assert!(elsewhere.join("w").is_file());
    std::fs::remove_file(repo.join("refs")).unwrap();
    // The input file and the inventory.
    link(&outside.join("secret.yml"), &repo.join("leak.txt"));
    refused_when_confined(
        &repo,
        &["refs", "--write", "base64:v", "-f", "leak.txt"],
        &["leak.txt", "through a symlink"],
    );
    link(
        &outside.join("secret.yml"),
        &repo.join("inventory/classes/evil.yml"),
    );
    std::fs::write(
        repo.join("inventory/classes/common.yml"),
        "classes: [evil]\nparameters:\n  x: 1\n",
    )
    .unwrap();
    refused_when_confined(
        &repo,
        &["refs", "--write", "base64:v", "-f", "in.txt", "-t", "t"],
        &["evil.yml", "leads outside the repository"],
    );
    // Revealing.
    refused_when_confined(
        &repo,
        &["refs", "--reveal", "--tag", "?{base64:w}"],
        &["never reveals secrets"],
    );
}

/// `strata component compile`: a committed `class/defaults.yml` linked to
/// the runner's file, a jsonnet `importstr` of an outside path or through
/// a committed link, and a Kapitan dependency fetched from the runner
/// (`file://`) put the runner's files into the compiled catalog. Confined:
/// refused; the component compiles as before otherwise, and its network
/// dependencies (helm charts) are still fetched.
#[test]
fn component_compile_never_reads_outside_the_checkout() {
    let (_tmp, repo, outside) = setup("component");
    let comp = repo.join("component-demo");
    let args = COMPONENT_NO_FETCH;
    let compiled = || std::fs::read_to_string(repo.join("out/compiled/demo/demo/cm.yaml")).unwrap();
    run(&repo, &args, "pull_request", 0);
    assert!(compiled().contains("greeting: hello"));
    // The defaults class linked out.
    let defaults = comp.join("class/defaults.yml");
    link_out_instead(
        &defaults,
        &outside.join("defaults.yml"),
        &format!("parameters:\n  demo:\n    greeting: {MARKER}\n"),
    );
    run(&repo, &args, "push", 0);
    assert!(compiled().contains(MARKER), "unconfined, as Commodore");
    refused_when_confined(
        &repo,
        &args,
        &[
            "class/defaults.yml",
            "through a symlink",
            "`strata component compile`",
        ],
    );
    std::fs::remove_file(&defaults).unwrap();
    link(Path::new("defaults.real"), &defaults);
    run(&repo, &args, "pull_request", 0);
    // A jsonnet import of an outside file, by path and through a link.
    let main = comp.join("component/main.jsonnet");
    let secret = outside.join("secret.yml").display().to_string();
    for import in [secret.as_str(), "leak.txt"] {
        let _ = std::fs::remove_file(comp.join("component/leak.txt"));
        link(
            &outside.join("secret.yml"),
            &comp.join("component/leak.txt"),
        );
        std::fs::write(
            &main,
            format!("{{ cm: {{ data: importstr '{import}' }} }}\n"),
        )
        .unwrap();
        run(&repo, &args, "push", 0);
        assert!(compiled().contains(MARKER), "{import}");
        refused_when_confined(&repo, &args, &["outside the repository"]);
    }
    // A Kapitan dependency from the runner.
    std::fs::write(&main, "{ cm: { data: 1 } }\n").unwrap();
    std::fs::write(
        comp.join("class/demo.yml"),
        format!("parameters:\n  kapitan:\n    dependencies:\n      - type: git\n        source: file://{}\n        output_path: dependencies/x\n    compile:\n      - input_paths: ['${{_base_directory}}/component/main.jsonnet']\n        input_type: jsonnet\n        output_path: demo/\n", outside.display()),
    )
    .unwrap();
    let fetching = ["component", "compile", "component-demo", "-o", "out"];
    refused_when_confined(
        &repo,
        &fetching,
        &["fetches nothing from this machine", "file://"],
    );
}

/// `strata catalog compile --local`: a component's committed
/// `class/defaults.yml` linked to the runner's file, and a jsonnet
/// `importstr` of an outside path, went into the catalog. Confined:
/// refused. (The fetch of a component from this machine:
/// `fetch::catalog_from_git::a_confined_catalog_compile_fetches_no_component_from_this_machine`.)
#[test]
fn catalog_compile_never_reads_outside_the_checkout() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/commodore/basic"),
        &repo,
    );
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.yml"), format!("stolen: {MARKER}\n")).unwrap();
    let args = CATALOG_LOCAL;
    let catalog = || {
        let dir = repo.join("catalog/manifests/argocd");
        let mut all = String::new();
        for e in std::fs::read_dir(dir).unwrap() {
            all += &std::fs::read_to_string(e.unwrap().path()).unwrap();
        }
        all
    };
    run(&repo, &args, "pull_request", 0);
    assert!(catalog().contains("kind: Namespace"), "{}", catalog());
    // A component's defaults class linked out.
    let defaults = repo.join("dependencies/argocd/class/defaults.yml");
    let text = std::fs::read_to_string(&defaults).unwrap();
    link_out_instead(
        &defaults,
        &outside.join("defaults.yml"),
        &text.replace("${storage_lib:default_class}", MARKER),
    );
    run(&repo, &args, "push", 0);
    assert!(catalog().contains(MARKER), "unconfined, as Commodore");
    refused_when_confined(
        &repo,
        &args,
        &["defaults/argocd.yml", "leads outside the repository"],
    );
    std::fs::remove_file(&defaults).unwrap();
    std::fs::rename(defaults.with_extension("real"), &defaults).unwrap();
    // An import of an outside file.
    let main = repo.join("dependencies/argocd/component/main.jsonnet");
    let text = std::fs::read_to_string(&main).unwrap();
    let leak = format!(
        "  '99_leak': {{ data: importstr '{}' }},\n}}",
        outside.join("secret.yml").display()
    );
    std::fs::write(
        &main,
        text.trim_end().strip_suffix('}').unwrap().to_string() + &leak,
    )
    .unwrap();
    run(&repo, &args, "push", 0);
    assert!(
        std::fs::read_to_string(repo.join("catalog/manifests/argocd/99_leak.yaml"))
            .unwrap()
            .contains(MARKER)
    );
    refused_when_confined(&repo, &args, &["secret.yml", "outside the repository"]);
}

/// `strata comment` writes its report to `strata-review.md` (`--output`)
/// and `strata diff --json-out FILE` its JSON: a committed symlink there
/// had a pull request's run overwrite the runner's file (`~/.bashrc`);
/// `comment --diff`/`--lint`/`--order-catalogs` read linked reports and
/// catalogs. Confined: refused, the runner's file intact.
#[test]
fn comment_and_diff_never_write_or_read_through_a_link_out() {
    let (_tmp, repo, outside) = setup("diff");
    for (side, v) in [("old", 1), ("new", 2)] {
        std::fs::create_dir_all(repo.join(side).join("t")).unwrap();
        std::fs::write(repo.join(side).join("t/cm.yml"), format!("a: {v}\n")).unwrap();
    }
    let victim = outside.join("bashrc");
    let intact = || std::fs::read_to_string(&victim).unwrap() == "precious\n";
    std::fs::write(&victim, "precious\n").unwrap();
    link(&victim, &repo.join("d.json"));
    let diff = ["diff", "--catalogs", "old", "new", "--json-out", "d.json"];
    refused_when_confined(
        &repo,
        &diff,
        &["--json-out d.json", "leads outside the working directory"],
    );
    assert!(intact());
    run(&repo, &diff, "push", 0);
    assert!(!intact(), "unconfined, it follows the link");
    std::fs::remove_file(repo.join("d.json")).unwrap();
    std::fs::write(&victim, "precious\n").unwrap();
    run(
        &repo,
        &["diff", "--catalogs", "old", "new", "--json-out", "d.json"],
        "pull_request",
        0,
    );
    link(&victim, &repo.join("strata-review.md"));
    let comment = ["comment", "--dry-run", "--diff", "d.json"];
    refused_when_confined(
        &repo,
        &comment,
        &[
            "--output strata-review.md",
            "leads outside the working directory",
        ],
    );
    assert!(intact());
    std::fs::remove_file(repo.join("strata-review.md")).unwrap();
    run(&repo, &comment, "pull_request", 0);
    // Linked inputs.
    link(&outside.join("secret.yml"), &repo.join("lint.json"));
    link(&outside, &repo.join("up"));
    for args in [
        &[
            "comment",
            "--dry-run",
            "--diff",
            "d.json",
            "--lint",
            "lint.json",
        ][..],
        &[
            "comment",
            "--dry-run",
            "--diff",
            "d.json",
            "--order-catalogs",
            "old",
            "up",
        ],
    ] {
        refused_when_confined(&repo, args, &["through a symlink", "`strata comment`"]);
    }
}

/// `strata push` (and its `--dry-run`, which prints what it would push)
/// took a committed `compiled` link to a directory of the runner as the
/// catalog. Confined: refused before anything is cloned.
#[test]
fn push_never_publishes_a_catalog_linked_out_of_the_checkout() {
    let (_tmp, repo, outside) = setup("diff");
    std::fs::create_dir_all(outside.join("cat/t")).unwrap();
    std::fs::copy(outside.join("secret.yml"), outside.join("cat/t/s.yml")).unwrap();
    link(&outside.join("cat"), &repo.join("compiled"));
    let bare = outside.join("catalog.git");
    std::fs::create_dir_all(&bare).unwrap();
    crate::support::git(&bare, &["init", "-q", "--bare"]);
    let url = format!("file://{}", bare.display());
    let args = ["push", "--dry-run", "--catalog-repo", &url];
    let out = run(&repo, &args, "push", 0);
    assert!(
        out.contains(MARKER),
        "unconfined, the link is followed: {out}"
    );
    refused_when_confined(
        &repo,
        &args,
        &[
            "refusing to read compiled",
            "through a symlink",
            "`strata push`",
        ],
    );
}

/// `strata fetch --deps FILE` cloned a `file:///home/runner/...` repository
/// the pull request's file named into the checkout (where its compile then
/// read it as its own), and `--jsonnetfile` linked a `local` directory
/// outside it into `vendor/`. Confined: refused before anything is fetched.
#[test]
fn fetch_never_clones_or_links_the_runners_files() {
    let (_tmp, repo, outside) = setup("fetch");
    let private = outside.join("private");
    git_repo(&private, &[("x.yml", &format!("x: {MARKER}\n"))]);
    let url = format!("file://{}", private.display());
    std::fs::write(
        repo.join("deps.yml"),
        format!("- {{name: x, url: '{url}', version: main}}\n"),
    )
    .unwrap();
    let args = ["fetch", "--deps", "deps.yml"];
    refused_when_confined(
        &repo,
        &args,
        &["deps.yml: x", "fetches nothing from this machine"],
    );
    assert!(!repo.join("dependencies/x").exists());
    run(&repo, &args, "push", 0);
    let got = std::fs::read_to_string(repo.join("dependencies/x/x.yml")).unwrap();
    assert!(got.contains(MARKER), "unconfined, as asked");
    for source in [
        format!(r#"{{"git": {{"remote": "{url}", "subdir": ""}}}}"#),
        r#"{"local": {"directory": "../outside"}}"#.to_string(),
    ] {
        std::fs::write(
            repo.join("jsonnetfile.json"),
            format!(
                r#"{{"version": 1, "dependencies": [{{"source": {source}, "version": "main"}}]}}"#
            ),
        )
        .unwrap();
        refused_when_confined(
            &repo,
            &["fetch", "--jsonnetfile", "."],
            &["jsonnetfile.json: source."],
        );
        assert!(!repo.join("vendor").exists());
    }
}

/// `strata template --output-files DIR` wrote through a committed `DIR`
/// link (or a link inside DIR named like an output file) into the runner's
/// directory. Confined: refused before anything is written.
#[test]
fn template_never_writes_through_a_link_out_of_the_checkout() {
    let (_tmp, repo, outside) = setup("template");
    let victim = outside.join("ssh");
    std::fs::create_dir_all(&victim).unwrap();
    link(&victim, &repo.join("out"));
    let args = ["template", "-f", "config", "--output-files", "out"];
    refused_when_confined(
        &repo,
        &args,
        &["--output-files out", "leads outside the working directory"],
    );
    assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 0);
    std::fs::remove_file(repo.join("out")).unwrap();
    std::fs::create_dir_all(repo.join("out")).unwrap();
    link(&victim.join("a.yml"), &repo.join("out/a.yml"));
    refused_when_confined(
        &repo,
        &args,
        &["out/a.yml", "leads outside the working directory"],
    );
    assert!(!victim.join("a.yml").exists());
    run(&repo, &args, "push", 0);
    assert!(
        victim.join("a.yml").exists(),
        "unconfined, the link is followed"
    );
    // An output directory outside the working directory given as the flag.
    let abs = outside.join("elsewhere").display().to_string();
    run(
        &repo,
        &["template", "-f", "config", "--output-files", &abs],
        "pull_request",
        0,
    );
    assert!(outside.join("elsewhere/a.yml").is_file());
}

/// Issue 19, the gaps confine36 left in `fetch --jsonnetfile`: only the
/// direct dependencies of `jsonnetfile.json` were checked. A dependency's
/// own jsonnetfile naming a `file://` repository of the runner was cloned
/// into `vendor/`; a `jsonnetfile.jsonnet` was rendered unconfined (its
/// `importstr` of the runner's file became a remote, quoted by the fetch's
/// error); a remote on this machine's network (`http://127.0.0.1:9/`) was
/// fetched. Confined: each refused, naming the file.
#[test]
fn fetch_jsonnetfile_confines_the_dependencies_own_files() {
    let (_tmp, repo, outside) = setup("fetch");
    let private = outside.join("private");
    git_repo(&private, &[("x.libsonnet", &format!("'{MARKER}'\n"))]);
    let url = format!("file://{}", private.display());
    let jsonnetfile = |at: &Path, source: &str| {
        std::fs::create_dir_all(at).unwrap();
        std::fs::write(
            at.join("jsonnetfile.json"),
            format!(
                r#"{{"version": 1, "dependencies": [{{"source": {source}, "version": "main"}}]}}"#
            ),
        )
        .unwrap();
    };
    // A local package inside the tree (fine) whose own jsonnetfile names
    // the runner's repository.
    jsonnetfile(&repo, r#"{"local": {"directory": "libs/a"}}"#);
    jsonnetfile(
        &repo.join("libs/a"),
        &format!(r#"{{"git": {{"remote": "{url}", "subdir": ""}}}}"#),
    );
    let args = ["fetch", "--jsonnetfile", "."];
    refused_when_confined(
        &repo,
        &args,
        &[
            "libs/a/jsonnetfile.json: source.git.remote `file://",
            "fetches nothing from this machine",
        ],
    );
    assert!(!repo.join("vendor/private").exists());
    run(&repo, &args, "push", 0);
    let got = std::fs::read_to_string(repo.join("vendor/private/x.libsonnet")).unwrap();
    assert!(got.contains(MARKER), "unconfined, as jsonnet-bundler");
    std::fs::remove_dir_all(repo.join("vendor")).unwrap();
    std::fs::remove_file(repo.join("jsonnetfile.lock.json")).unwrap();
    // A remote on this machine or its network.
    for remote in [
        "http://127.0.0.1:9/x.git",
        "https://169.254.169.254/x.git",
        "ssh://-oProxyCommand=touch%20pwned/x",
    ] {
        jsonnetfile(
            &repo,
            &format!(r#"{{"git": {{"remote": "{remote}", "subdir": ""}}}}"#),
        );
        refused_when_confined(
            &repo,
            &args,
            &["source.git.remote", "this machine or its network"],
        );
    }
    // A jsonnetfile.jsonnet importing the runner's file.
    std::fs::remove_file(repo.join("jsonnetfile.json")).unwrap();
    std::fs::write(
        repo.join("jsonnetfile.jsonnet"),
        format!(
            "{{version: 1, dependencies: [{{source: {{git: {{remote: importstr '{}', subdir: ''}}}}, version: 'main'}}]}}\n",
            outside.join("secret.yml").display()
        ),
    )
    .unwrap();
    refused_when_confined(
        &repo,
        &args,
        &["jsonnetfile.jsonnet", "outside the repository"],
    );
    let out = run(&repo, &args, "push", 2);
    assert!(
        out.contains(MARKER),
        "unconfined, the import is read: {out}"
    );
}

/// Issue 19: a confined `component compile` still fetched what the pull
/// request's component named on this machine's network (a jsonnet
/// dependency's remote, a Kapitan dependency's source at
/// `http://127.0.0.1:9/`), and its jsonnet-bundler step cloned a `file://`
/// repository of the runner. Public network sources are still fetched
/// (helm components' CI on pull requests needs them).
#[test]
fn component_compile_fetches_nothing_from_this_machine() {
    let (_tmp, repo, outside) = setup("component");
    let comp = repo.join("component-demo");
    let private = outside.join("private");
    git_repo(&private, &[("x.libsonnet", &format!("'{MARKER}'\n"))]);
    let args = ["component", "compile", "component-demo", "-o", "out"];
    let jsonnetfile = |remote: &str| {
        std::fs::write(
            comp.join("jsonnetfile.json"),
            format!(r#"{{"version": 1, "dependencies": [{{"source": {{"git": {{"remote": "{remote}", "subdir": ""}}}}, "version": "main"}}]}}"#),
        )
        .unwrap();
    };
    let file_url = format!("file://{}", private.display());
    for remote in [
        file_url.as_str(),
        "http://127.0.0.1:9/x.git",
        "git@localhost:org/x.git",
    ] {
        jsonnetfile(remote);
        refused_when_confined(
            &repo,
            &args,
            &[
                "jsonnetfile.json: source.git.remote",
                "fetches nothing from this machine or its network",
            ],
        );
        assert!(!comp.join("vendor/private").exists(), "{remote}");
    }
    jsonnetfile(&file_url);
    run(&repo, &args, "push", 0);
    assert!(
        comp.join("vendor/private/x.libsonnet").is_file(),
        "unconfined"
    );
    std::fs::remove_file(comp.join("jsonnetfile.json")).unwrap();
    // A Kapitan dependency from this machine's network.
    std::fs::write(
        comp.join("class/demo.yml"),
        "parameters:\n  kapitan:\n    dependencies:\n      - type: https\n        source: http://127.0.0.1:9/x.yml\n        output_path: dependencies/x.yml\n    compile:\n      - input_paths: ['${_base_directory}/component/main.jsonnet']\n        input_type: jsonnet\n        output_path: demo/\n",
    )
    .unwrap();
    refused_when_confined(
        &repo,
        &args,
        &[
            "Kapitan dependency http://127.0.0.1:9/x.yml",
            "this machine or its network",
        ],
    );
}

/// Issue 19: `strata package compile` (a Commodore configuration package)
/// was not confined: on a pull request it fetched the components the
/// package names from this machine (`file://`) and read a package class
/// committed as a link to the runner's file. Confined: refused; a
/// `--tmp-dir` outside the checkout (a flag) and the links its scratch
/// inventory makes to the package keep working.
#[test]
fn package_compile_never_reads_or_fetches_outside_the_checkout() {
    let tmp = crate::component::package::setup();
    let pkg = tmp.path().join("demo");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let args = ["package", "compile", ".", "tests/defaults.yml"];
    // The components' URLs are `file://` repositories of this machine.
    refused_when_confined(
        &pkg,
        &args,
        &[
            "while fetching components",
            "`file://",
            "fetches nothing from this machine",
        ],
    );
    assert!(!pkg.join("compiled").exists());
    let work = tmp.path().join("work");
    let work_arg = format!("--tmp-dir={}", work.display());
    let with_work: Vec<&str> = args.iter().copied().chain([work_arg.as_str()]).collect();
    run(&pkg, &with_work, "push", 0);
    // Reusing the fetched components: confined, the scratch inventory's
    // links into the package (in the checkout) are read.
    let local: Vec<&str> = with_work.iter().copied().chain(["--local"]).collect();
    run(&pkg, &local, "pull_request", 0);
    assert!(pkg.join("compiled/greeter").is_dir());
    // The output directory committed as a link out: written through.
    std::fs::remove_dir_all(pkg.join("compiled")).unwrap();
    link(&outside, &pkg.join("compiled"));
    refused_when_confined(
        &pkg,
        &local,
        &["output", "compiled", "leads outside the working directory"],
    );
    assert!(!outside.join("greeter").exists());
    std::fs::remove_file(pkg.join("compiled")).unwrap();
    // A package class committed as a link to the runner's file.
    let common = pkg.join("common.yml");
    let text = std::fs::read_to_string(&common).unwrap();
    link_out_instead(
        &common,
        &outside.join("common.yml"),
        &format!("{text}\n# {MARKER}\n"),
    );
    run(&pkg, &local, "push", 0);
    refused_when_confined(
        &pkg,
        &local,
        &["common.yml", "leads outside the repository"],
    );
}

/// Issue 19: the outputs of `component compile` (`-o DIR`'s `compiled/`)
/// and `catalog compile` (`catalog/`) were not checked for links: a
/// committed `out/compiled -> /home/runner/x` had the compile delete and
/// write the runner's files there, and a golden directory committed as a
/// link to the runner's was printed in the golden diff. Confined: refused
/// before anything is written.
#[test]
fn compile_outputs_never_write_through_a_link_out() {
    let (_tmp, repo, outside) = setup("component");
    let args = COMPONENT_NO_FETCH;
    let victim = outside.join("victim");
    std::fs::create_dir_all(victim.join("demo")).unwrap();
    std::fs::write(victim.join("demo/keep"), "precious\n").unwrap();
    link(&victim, &repo.join("out/compiled"));
    refused_when_confined(
        &repo,
        &args,
        &[
            "output out/compiled",
            "leads outside the working directory",
            "`strata component compile`",
        ],
    );
    assert!(victim.join("demo/keep").is_file());
    run(&repo, &args, "push", 0);
    assert!(
        !victim.join("demo/keep").exists() && victim.join("demo/demo/cm.yaml").is_file(),
        "unconfined, the link is followed"
    );
    std::fs::remove_file(repo.join("out/compiled")).unwrap();
    // The golden directory linked to the runner's: printed in the diff.
    let theirs = outside.join("g/demo/demo");
    std::fs::create_dir_all(&theirs).unwrap();
    std::fs::copy(outside.join("secret.yml"), theirs.join("cm.yaml")).unwrap();
    link(&outside.join("g"), &repo.join("golden"));
    let golden: Vec<&str> = args.iter().copied().chain(["--golden", "golden"]).collect();
    let out = run(&repo, &golden, "push", 1);
    assert!(out.contains(MARKER), "unconfined, as git diff: {out}");
    refused_when_confined(
        &repo,
        &golden,
        &["refusing to read golden", "through a symlink"],
    );
    // `catalog compile`'s catalog directory.
    let tmp = tempfile::tempdir().unwrap();
    let cat = tmp.path().join("repo");
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/commodore/basic"),
        &cat,
    );
    let victim = tmp.path().join("victim");
    std::fs::create_dir_all(victim.join("manifests")).unwrap();
    std::fs::write(victim.join("manifests/keep"), "precious\n").unwrap();
    link(&victim, &cat.join("catalog"));
    let args = CATALOG_LOCAL;
    refused_when_confined(
        &cat,
        &args,
        &["repo/catalog: it leads outside the working directory"],
    );
    assert!(victim.join("manifests/keep").is_file());
    run(&cat, &args, "push", 0);
    assert!(
        !victim.join("manifests/keep").exists(),
        "unconfined, the runner's directory was replaced"
    );
    // `inventory/targets` linked out: its files were deleted and the
    // targets written there.
    std::fs::remove_file(cat.join("catalog")).unwrap();
    std::fs::write(victim.join("notes.yml"), "precious\n").unwrap();
    std::fs::remove_dir_all(cat.join("inventory/targets")).unwrap();
    link(&victim, &cat.join("inventory/targets"));
    refused_when_confined(
        &cat,
        &args,
        &["inventory/targets: it leads outside the working directory"],
    );
    assert!(victim.join("notes.yml").is_file());
    assert!(!victim.join("cluster.yml").exists());
    // `dependencies/lib` linked out: the libraries' alias links were made
    // there.
    std::fs::remove_file(cat.join("inventory/targets")).unwrap();
    let _ = std::fs::remove_dir_all(cat.join("dependencies/lib"));
    link(&victim, &cat.join("dependencies/lib"));
    refused_when_confined(
        &cat,
        &args,
        &["dependencies/lib: it leads outside the working directory"],
    );
    assert!(!victim.join("storage.libsonnet").exists());
}

/// A bare repository committed under the fetch's cache directory
/// (`dependencies/.repos/<host>/<path>.git`) was opened as the cache of its
/// URL, and git's rules obeyed its `config`: `url.<base>.insteadOf` had a
/// confined `fetch --deps` of `https://github.com/org/x.git` clone the
/// runner's `file://` repository instead, and `core.sshCommand` ran a
/// command the pull request chose. Confined: such a cache is not used.
#[test]
fn fetch_never_uses_a_repository_the_pull_request_committed() {
    let (tmp, repo, outside) = setup("fetch");
    let private = outside.join("private");
    git_repo(&private, &[("x.yml", &format!("x: {MARKER}\n"))]);
    let pwned = tmp.path().join("pwned");
    let bare = |path: &str, config: String| {
        let at = repo.join("dependencies/.repos").join(path);
        std::fs::create_dir_all(&at).unwrap();
        crate::support::git(&at, &["init", "-q", "--bare"]);
        let file = at.join("config");
        let text = std::fs::read_to_string(&file).unwrap() + &config;
        std::fs::write(file, text).unwrap();
    };
    bare(
        "github.com/org/x.git",
        format!(
            "[url \"file://{}\"]\n\tinsteadOf = https://github.com/org/x.git\n",
            private.display()
        ),
    );
    bare(
        "github.com/org/y.git",
        format!("[core]\n\tsshCommand = touch {}; false\n", pwned.display()),
    );
    std::fs::write(
        repo.join("deps.yml"),
        "- {name: x, url: 'https://github.com/org/x.git', version: main}\n",
    )
    .unwrap();
    std::fs::write(
        repo.join("ssh.yml"),
        "- {name: y, url: 'git@github.com:org/y.git', version: main}\n",
    )
    .unwrap();
    for args in [&["init", "-q"][..], &["add", "-A"], &["commit", "-qm", "x"]] {
        crate::support::git(&repo, args);
    }
    for deps in ["deps.yml", "ssh.yml"] {
        refused_when_confined(
            &repo,
            &["fetch", "--deps", deps],
            &[
                "dependencies/.repos holds files committed to the repository",
                "`core.sshCommand`",
            ],
        );
    }
    assert!(!repo.join("dependencies/x").exists());
    assert!(!pwned.exists());
    // Unconfined, git's rules: the configuration is obeyed.
    run(&repo, &["fetch", "--deps", "deps.yml"], "push", 0);
    let got = std::fs::read_to_string(repo.join("dependencies/x/x.yml")).unwrap();
    assert!(got.contains(MARKER), "{got}");
    run(&repo, &["fetch", "--deps", "ssh.yml"], "push", 2);
    assert!(pwned.exists());
}

/// `strata compile --cache DIR` on a pull request: a committed `DIR`
/// link (or `DIR/.catalogs`) leading out of the checkout had the pull
/// request's catalogs stored in a directory of the runner it chose (a
/// trusted job's cache). Confined: refused before anything is compiled.
#[test]
fn compile_never_stores_its_cache_through_a_link_out() {
    let (_tmp, repo, outside) = setup("diff");
    one_target(&repo, 1);
    let cache = outside.join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let args = ["compile", "--cache", ".cache"];
    for at in [".cache", ".cache/.catalogs"] {
        link(&cache, &repo.join(at));
        refused_when_confined(
            &repo,
            &args,
            &[
                &format!("--cache {at}: it leads outside the working directory"),
                "`strata compile`",
            ],
        );
        assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 0, "{at}");
        std::fs::remove_file(repo.join(at)).unwrap();
    }
    std::fs::remove_dir(repo.join(".cache")).unwrap();
    link(&cache, &repo.join(".cache"));
    run(&repo, &args, "push", 0);
    assert!(std::fs::read_dir(&cache).unwrap().count() > 0, "unconfined");
    std::fs::remove_file(repo.join(".cache")).unwrap();
    run(&repo, &args, "pull_request", 0);
    assert!(repo.join(".cache").is_dir());
}

/// An inventory of one target `t` in `repo`, compiling `main.jsonnet`
/// (`{ cm: { a: A } }`).
fn one_target(repo: &Path, a: u32) {
    std::fs::create_dir_all(repo.join("inventory/targets")).unwrap();
    std::fs::write(
        repo.join("inventory/targets/t.yml"),
        "parameters:\n  kapitan:\n    vars: {target: t}\n    compile:\n      - input_paths: [main.jsonnet]\n        input_type: jsonnet\n        output_path: .\n",
    )
    .unwrap();
    std::fs::write(
        repo.join("main.jsonnet"),
        format!("{{ cm: {{ a: {a} }} }}\n"),
    )
    .unwrap();
}

/// `strata review --output FILE` on a pull request wrote its report
/// through a committed `FILE -> /home/runner/.bashrc`, as `comment` did
/// before confine36. Refused before anything is compiled.
#[test]
fn review_never_writes_its_report_through_a_link_out() {
    let (_tmp, repo, outside) = setup("diff");
    let victim = outside.join("bashrc");
    std::fs::write(&victim, "precious\n").unwrap();
    one_target(&repo, 1);
    for args in [&["init", "-q"][..], &["add", "-A"], &["commit", "-qm", "a"]] {
        crate::support::git(&repo, args);
    }
    one_target(&repo, 2);
    link(&victim, &repo.join("r.md"));
    for args in [&["add", "-A"][..], &["commit", "-qm", "b"]] {
        crate::support::git(&repo, args);
    }
    let args = ["review", "--base", "HEAD~1", "--output", "r.md"];
    let err = run(&repo, &args, "pull_request", 2);
    assert!(
        err.contains("--output r.md: it leads outside the working directory")
            && err.contains("`strata review`"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    run(&repo, &args, "push", 0);
    let text = std::fs::read_to_string(&victim).unwrap();
    assert!(
        text.contains("strata review"),
        "unconfined, as asked: {text}"
    );
}

/// `strata lint --catalog DIR` on a pull request read a catalog committed
/// as a link to a directory of the runner and quoted what it found there
/// (a base64-encoded reference, decoded, with the file's path); the refs
/// directory a pull request's `.kapitan` names outside was read too.
/// Confined: refused, as the classes are.
#[test]
fn lint_never_reads_a_catalog_or_refs_outside_the_checkout() {
    use base64::Engine;
    let (_tmp, repo, outside) = setup("diff");
    one_target(&repo, 1);
    let reference = format!("?{{vaultkv:{MARKER}/x}}");
    let encoded = base64::engine::general_purpose::STANDARD.encode(reference);
    std::fs::create_dir_all(outside.join("cat/t")).unwrap();
    std::fs::write(
        outside.join("cat/t/s.yaml"),
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\ndata:\n  password: {encoded}\n"
        ),
    )
    .unwrap();
    link(&outside.join("cat"), &repo.join("compiled"));
    let args = ["lint", "--catalog", "compiled"];
    let out = run(&repo, &args, "push", 1);
    assert!(out.contains(MARKER), "unconfined, as given: {out}");
    refused_when_confined(
        &repo,
        &args,
        &[
            "refusing to read compiled (through a symlink)",
            "`strata lint`",
        ],
    );
    std::fs::remove_file(repo.join("compiled")).unwrap();
    std::fs::create_dir_all(outside.join("refs")).unwrap();
    std::fs::write(
        repo.join(".kapitan"),
        "compile:\n  refs-path: ../outside/refs\n",
    )
    .unwrap();
    refused_when_confined(
        &repo,
        &["lint"],
        &["refusing to read ../outside/refs", "`strata lint`"],
    );
    run(&repo, &["lint"], "push", 0);
}

/// `strata ci --collect DIR` on a pull request merged a shard directory the
/// checkout commits as a link to a directory of the runner, and showed its
/// files as the head's catalog in the review; a committed `--output-path`
/// link had the merged catalog written there. Refused, as the other
/// inputs and outputs; a shard directory outside the checkout (a flag) is
/// read.
#[test]
fn ci_collect_never_reads_a_shard_linked_out() {
    let (tmp, repo, outside) = setup("diff");
    one_target(&repo, 1);
    for args in [&["init", "-q"][..], &["add", "-A"], &["commit", "-qm", "a"]] {
        crate::support::git(&repo, args);
    }
    one_target(&repo, 2);
    for args in [&["add", "-A"][..], &["commit", "-qm", "b"]] {
        crate::support::git(&repo, args);
    }
    let sha = |rev: &str| {
        let out = std::process::Command::new("git")
            .args(["rev-parse", rev])
            .current_dir(&repo)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    let event = tmp.path().join("event.json");
    std::fs::write(
        &event,
        format!(
            r#"{{"pull_request": {{"number": 1, "base": {{"sha": "{}", "ref": "main"}}, "head": {{"sha": "{}", "ref": "x"}}}}}}"#,
            sha("HEAD~1"),
            sha("HEAD")
        ),
    )
    .unwrap();
    let shard = outside.join("shard");
    let shard_arg = shard.display().to_string();
    run(
        &repo,
        &["compile", "--shard", "1/1", "--output-path", &shard_arg],
        "push",
        0,
    );
    std::fs::write(shard.join("compiled/t/cm.yml"), format!("leak: {MARKER}\n")).unwrap();
    let ci = |args: &[&str]| {
        let out = strata()
            .current_dir(&repo)
            .args(["ci", "--dry-run"])
            .args(args)
            .env("GITHUB_EVENT_NAME", "pull_request")
            .env("GITHUB_EVENT_PATH", &event)
            .env_remove("GITHUB_TOKEN")
            .env_remove("GITHUB_STEP_SUMMARY")
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stderr).into_owned()
            + &String::from_utf8_lossy(&out.stdout);
        (out.status.code(), text)
    };
    let (_, text) = ci(&["--collect", &shard_arg]);
    assert!(text.contains(MARKER), "given outside, it is read: {text}");
    link(&shard, &repo.join("shard-1"));
    let (code, text) = ci(&["--collect", "shard-1"]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("refusing to read shard-1 (through a symlink)") && !text.contains(MARKER),
        "{text}"
    );
    // The merged catalog's directory linked out: written there.
    std::fs::remove_file(repo.join("shard-1")).unwrap();
    let victim = outside.join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    link(&victim, &repo.join("out"));
    let (code, text) = ci(&["--output-path", "out", "--collect", &shard_arg]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("--output-path out: it leads outside the working directory"),
        "{text}"
    );
    assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 0);
}

/// The jsonnet-bundler step writes `jsonnetfile.lock.json` (and `component
/// compile` renders `jsonnetfile.jsonnet` to `jsonnetfile.json`) in place:
/// a committed link there to the runner's file had it overwritten on a
/// pull request. Confined: refused, the runner's file intact.
#[test]
fn jsonnet_installs_never_write_through_a_link_out() {
    let (_tmp, repo, outside) = setup("component");
    let victim = outside.join("bashrc");
    let intact = || std::fs::read_to_string(&victim).unwrap() == "{}\n";
    std::fs::write(&victim, "{}\n").unwrap();
    std::fs::create_dir_all(repo.join("libs/a")).unwrap();
    std::fs::write(
        repo.join("jsonnetfile.json"),
        r#"{"version": 1, "dependencies": [{"source": {"local": {"directory": "libs/a"}}, "version": ""}]}"#,
    )
    .unwrap();
    link(&victim, &repo.join("jsonnetfile.lock.json"));
    let args = ["fetch", "--jsonnetfile", ".", "--update"];
    refused_when_confined(
        &repo,
        &args,
        &["jsonnetfile.lock.json: it leads outside the working directory"],
    );
    assert!(intact());
    run(&repo, &args, "push", 0);
    assert!(!intact(), "unconfined, as jb");
    std::fs::write(&victim, "{}\n").unwrap();
    let comp = repo.join("component-demo");
    std::fs::write(
        comp.join("jsonnetfile.jsonnet"),
        "{version: 1, dependencies: []}\n",
    )
    .unwrap();
    link(&victim, &comp.join("jsonnetfile.json"));
    refused_when_confined(
        &repo,
        &COMPONENT_NO_FETCH,
        &["jsonnetfile.json: it leads outside the working directory"],
    );
    assert!(intact());
}

/// A confined `component compile` still fetches the helm charts its
/// component names, with `helm pull` run as the Kapitan dependency's
/// `helm_path` says: a program the pull request chooses, which got the
/// runner's whole environment (`GITHUB_TOKEN`), where the compile's own
/// helm runs without its secret variables. Now withheld there too.
#[test]
fn confined_helm_pulls_get_no_secret_variables() {
    use std::os::unix::fs::PermissionsExt;
    let (tmp, repo, _outside) = setup("component");
    let comp = repo.join("component-demo");
    let seen = tmp.path().join("env.txt");
    let helm = repo.join("helm.sh");
    std::fs::write(
        &helm,
        format!("#!/bin/sh\nenv > '{}'\nexit 1\n", seen.display()),
    )
    .unwrap();
    std::fs::set_permissions(&helm, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        comp.join("class/demo.yml"),
        "parameters:\n  kapitan:\n    dependencies:\n      - type: helm\n        source: https://charts.example.com/\n        chart_name: demo\n        version: 1.0.0\n        helm_path: ./helm.sh\n        output_path: dependencies/demo/helmcharts/demo\n    compile:\n      - input_paths: ['${_base_directory}/component/main.jsonnet']\n        input_type: jsonnet\n        output_path: demo/\n",
    )
    .unwrap();
    let cache = tmp.path().join("cache");
    for (event, leaks) in [("push", true), ("pull_request", false)] {
        let _ = std::fs::remove_file(&seen);
        let out = strata()
            .current_dir(&repo)
            .args(["component", "compile", "component-demo", "-o", "out"])
            .env("GITHUB_EVENT_NAME", event)
            .env("GITHUB_TOKEN", format!("ghs_{MARKER}"))
            .env("STRATA_DEPENDENCY_CACHE", &cache)
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let env = std::fs::read_to_string(&seen).unwrap();
        assert_eq!(env.contains(MARKER), leaks, "{event}: {env}");
    }
    // A chart name `helm pull` took for its option (`--untardir` expands
    // the chart wherever it says): refused before helm runs, confined or
    // not.
    let class = std::fs::read_to_string(comp.join("class/demo.yml")).unwrap();
    std::fs::write(
        comp.join("class/demo.yml"),
        class.replace("chart_name: demo", "chart_name: --untardir=/tmp/x"),
    )
    .unwrap();
    let _ = std::fs::remove_file(&seen);
    let err = run(
        &repo,
        &["component", "compile", "component-demo", "-o", "out"],
        "push",
        2,
    );
    assert!(
        err.contains("chart_name `--untardir=/tmp/x` starts with `-`"),
        "{err}"
    );
    assert!(!seen.exists(), "helm ran");
}
