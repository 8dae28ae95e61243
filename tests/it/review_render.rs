//! The pull-request comment as GitHub shows it: fixture pull requests are
//! diffed and commented (`strata diff --json-out`, `strata comment
//! --dry-run`) and the comment is rendered with comrak's GitHub-flavoured
//! Markdown, with GitHub's tag filter. The HTML is checked for structure
//! (one title, the group heading first, `<details>` balanced and never
//! nested, each with its `<summary>`) and for names that could inject HTML
//! or Markdown (target directories, file names and object names carry
//! `<b>`, `</details>`, `*emphasis*` and links).
//!
//! With `STRATA_RENDER_OUT=DIR` the HTML pages are also written there (for
//! the screenshots in docs/review.md).

use crate::strata;
use std::path::{Path, PathBuf};

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn deployment(name: &str, ns: &str, replicas: u32, owner: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: {ns}\n  annotations:\n    owner: {owner}\nspec:\n  replicas: {replicas}\n  template:\n    spec:\n      containers:\n      - name: app\n        image: registry.example/{name}:1.0\n"
    )
}

/// A hostile target directory, file and object name on every fixture.
const EVIL_TARGET: &str = "evil<b>bold<i>*em*";
const EVIL_FILE: &str = "x</details><h1>pwn</h1>[link](https://evil.example).yaml";
const EVIL_OBJECT: &str = "a<img src=x onerror=alert(1)>`code`";

/// The hostile names' object changes on its own (7 -> 8 replicas), so it
/// is a group of its own and shows in the per-target details too.
fn evil(root: &Path, side: &str) {
    let replicas = if side == "old" { 7 } else { 8 };
    write(
        root,
        &format!("{side}/{EVIL_TARGET}/{EVIL_FILE}"),
        &deployment(&format!("'{EVIL_OBJECT}'"), "evil", replicas, "o"),
    );
}

struct Fixture {
    name: &'static str,
    dir: tempfile::TempDir,
    order: bool,
}

fn fixtures() -> Vec<Fixture> {
    let mut out = Vec::new();
    let mk = |name: &'static str, order: bool| Fixture {
        name,
        dir: tempfile::tempdir().unwrap(),
        order,
    };

    // A small change: one target scales up.
    let f = mk("small-change", false);
    for (side, r) in [("old", 2), ("new", 3)] {
        let root = f.dir.path();
        write(
            root,
            &format!("{side}/dev/app.yaml"),
            &deployment("app", "dev", r, "team-a"),
        );
        write(
            root,
            &format!("{side}/prod/app.yaml"),
            &deployment("app", "prod", 5, "team-a"),
        );
        evil(root, side);
    }
    out.push(f);

    // One owner change in 17 targets, 3 Deployments each, and a URL
    // derived from each target's name.
    let f = mk("17-targets", false);
    for side in ["old", "new"] {
        let root = f.dir.path();
        for t in 1..=17 {
            let tn = format!("cluster-{t:04}");
            let owner = if side == "old" {
                "owner-1@example.invalid"
            } else {
                "platform-team@example.invalid"
            };
            for a in ["api", "web", "worker"] {
                write(
                    root,
                    &format!("{side}/{tn}/{a}.yaml"),
                    &deployment(a, &tn, 2, owner),
                );
            }
            let url = if side == "old" {
                "http://old.example".to_string()
            } else {
                format!("https://{tn}.example")
            };
            write(
                root,
                &format!("{side}/{tn}/config.yaml"),
                &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config\n  namespace: {tn}\ndata:\n  url: {url}\n"),
            );
        }
        evil(root, side);
    }
    out.push(f);

    // A Secret's value changes.
    let f = mk("secret-change", false);
    for (side, pw) in [("old", "Old5ecretPw!x"), ("new", "N3wS3cretPw!y")] {
        let root = f.dir.path();
        write(
            root,
            &format!("{side}/prod/secret.yaml"),
            &format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: prod\nstringData:\n  password: {pw}\n  user: app\n"),
        );
        evil(root, side);
    }
    out.push(f);

    // A target is deleted.
    let f = mk("deleted-target", false);
    {
        let root = f.dir.path();
        for side in ["old", "new"] {
            write(
                root,
                &format!("{side}/dev/app.yaml"),
                &deployment("app", "dev", 1, "a"),
            );
            evil(root, side);
        }
        write(
            root,
            "old/gone/app.yaml",
            &deployment("app", "gone", 1, "a"),
        );
        write(
            root,
            "old/gone/svc.yaml",
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: app\n  namespace: gone\n",
        );
    }
    out.push(f);

    // The apply order changes (kapp change group and rule).
    let f = mk("apply-order", true);
    {
        let root = f.dir.path();
        let job = |name: &str, annotation: &str| {
            format!("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  namespace: web\n{annotation}")
        };
        for side in ["old", "new"] {
            write(
                root,
                &format!("{side}/web/ns.yaml"),
                "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web\n",
            );
            evil(root, side);
        }
        write(
            root,
            "old/web/jobs.yaml",
            &format!("{}---\n{}", job("migrate", ""), job("app", "")),
        );
        write(
            root,
            "new/web/jobs.yaml",
            &format!(
                "{}---\n{}",
                job("migrate", "  annotations:\n    kapp.k14s.io/change-group: migrations\n"),
                job("app", "  annotations:\n    kapp.k14s.io/change-rule: upsert after upserting migrations\n")
            ),
        );
    }
    out.push(f);
    out
}

/// The comment for a fixture, through the real commands.
fn comment(f: &Fixture) -> String {
    let (old, new) = (f.dir.path().join("old"), f.dir.path().join("new"));
    let diff = f.dir.path().join("diff.json");
    let out = strata()
        .args(["diff", "--format", "json", "--color", "never", "--catalogs"])
        .arg(&old)
        .arg(&new)
        .arg("--json-out")
        .arg(&diff)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut cmd = strata();
    cmd.args(["comment", "--dry-run", "--diff"])
        .arg(&diff)
        .arg("--output")
        .arg(f.dir.path().join("strata-review.md"))
        .env_remove("GITHUB_EVENT_PATH")
        .env_remove("GITHUB_RUN_ID");
    if f.order {
        cmd.arg("--order-catalogs").arg(&old).arg(&new);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// GitHub-flavoured Markdown as github.com renders comments: tables,
/// strikethrough, autolinks, task lists, raw HTML through the tag filter.
fn gfm(md: &str) -> String {
    let mut o = comrak::Options::default();
    o.extension.table = true;
    o.extension.strikethrough = true;
    o.extension.autolink = true;
    o.extension.tasklist = true;
    o.extension.tagfilter = true;
    o.render.unsafe_ = true;
    comrak::markdown_to_html(md, &o)
}

/// The HTML tags in order, as (closing, name).
fn tags(html: &str) -> Vec<(bool, String)> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find('<') {
        rest = &rest[i + 1..];
        let closing = rest.starts_with('/');
        let name: String = rest
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        if !name.is_empty() {
            out.push((closing, name.to_ascii_lowercase()));
        }
    }
    out
}

fn check_structure(name: &str, html: &str) {
    let t = tags(html);
    let h3: Vec<_> = t.iter().filter(|(c, n)| !c && n == "h3").collect();
    assert_eq!(h3.len(), 1, "{name}: one title\n{html}");
    assert!(html.contains("<h3>strata review</h3>"), "{name}\n{html}");
    for bad in ["h1", "h2", "script", "img", "b", "em", "a"] {
        assert!(
            !t.iter().any(|(_, n)| n == bad),
            "{name}: a <{bad}> tag came from a name\n{html}"
        );
    }
    // <details> balanced, never nested, each opening with its <summary>.
    let mut depth = 0;
    let mut expect_summary = false;
    for (closing, n) in &t {
        match (closing, n.as_str()) {
            (false, "details") => {
                depth += 1;
                assert_eq!(depth, 1, "{name}: nested <details>\n{html}");
                expect_summary = true;
                continue;
            }
            (true, "details") => {
                depth -= 1;
                assert!(depth >= 0, "{name}: </details> without <details>\n{html}");
            }
            (false, "summary") => assert!(expect_summary, "{name}: stray <summary>"),
            _ => assert!(
                !expect_summary,
                "{name}: <details> without <summary> first\n{html}"
            ),
        }
        expect_summary = false;
    }
    assert_eq!(depth, 0, "{name}: unclosed <details>\n{html}");
    // The hostile names are there, as text.
    assert!(
        html.contains("evil&lt;b&gt;bold&lt;i&gt;*em*"),
        "{name}\n{html}"
    );
}

#[test]
fn fixture_comments_render_as_github_markdown() {
    let out_dir = std::env::var_os("STRATA_RENDER_OUT").map(PathBuf::from);
    for f in fixtures() {
        let md = comment(&f);
        let html = gfm(&md);
        check_structure(f.name, &html);
        match f.name {
            "small-change" => {
                assert!(
                    html.contains("<h4>What changed: 2 changes in 2 objects</h4>"),
                    "{html}"
                );
                assert!(
                    html.contains("<code>spec.replicas</code>: <code>2</code> → <code>3</code>"),
                    "{html}"
                );
            }
            "17-targets" => {
                assert!(md.len() < 4000, "{} bytes\n{md}", md.len());
                assert!(
                    html.contains("<code>metadata.annotations.owner</code>: <code>&quot;owner-1@example.invalid&quot;</code> → <code>&quot;platform-team@example.invalid&quot;</code>"),
                    "{html}"
                );
                assert!(
                    html.contains("in 51 objects (<code>Deployment</code> ×51) across 17 targets"),
                    "{html}"
                );
                assert!(
                    html.contains("<code>data.url</code>: <code>&quot;http://old.example&quot;</code> → <code>&quot;https://&lt;target&gt;.example&quot;</code>"),
                    "{html}"
                );
                assert!(
                    html.contains("Every change of 18 targets is in the groups above"),
                    "{html}"
                );
            }
            "secret-change" => {
                assert!(
                    !md.contains("N3wS3cretPw") && !md.contains("Old5ecretPw"),
                    "{md}"
                );
                assert!(html.contains("&lt;redacted: changed&gt;"), "{html}");
            }
            "deleted-target" => {
                assert!(html.contains("target removed"), "{html}");
                assert!(
                    html.contains("<code>gone</code> (removed, 2 files)")
                        || html.contains("<code>gone</code>"),
                    "{html}"
                );
            }
            "apply-order" => {
                assert!(
                    html.contains("Apply order changed in <code>web</code>"),
                    "{html}"
                );
                assert!(
                    html.contains("<pre><code class=\"language-mermaid\">"),
                    "{html}"
                );
            }
            other => panic!("{other}"),
        }
        if let Some(dir) = &out_dir {
            std::fs::create_dir_all(dir).unwrap();
            let page = format!(
                "<!doctype html><meta charset=utf-8><title>{}</title><style>body{{font:14px -apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:860px;margin:16px;color:#1f2328}}code,pre{{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;background:#f6f8fa}}pre{{padding:8px;overflow:auto}}table{{border-collapse:collapse}}td,th{{border:1px solid #d1d9e0;padding:4px 8px}}details{{margin:6px 0}}summary{{cursor:pointer}}</style>\n{html}",
                f.name
            );
            std::fs::write(dir.join(format!("{}.html", f.name)), page).unwrap();
            std::fs::write(dir.join(format!("{}.md", f.name)), &md).unwrap();
        }
    }
}
