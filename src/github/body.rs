//! The pull-request comment and the job-summary report, as markdown: a
//! summary table, the lint findings, then one `<details>` block per target
//! with a diff block per object. Cut to a size limit by leaving out the
//! largest diffs first and saying which.

use super::LintFinding;
use crate::diff::escape;
use crate::diff::render::{fence, html_escape, summary_table, targets_markdown};
use crate::diff::CatalogDiff;
use crate::order::OrderChange;
use std::collections::HashSet;
use std::fmt::Write;

/// The default name in the hidden marker that identifies strata's comment
/// among a pull request's comments.
pub const DEFAULT_MARKER: &str = "strata-review";

/// The hidden marker for a name: `<!-- strata-review -->`.
pub fn marker(name: &str) -> String {
    format!("<!-- {name} -->")
}

/// Marker names are kept to characters that cannot end an HTML comment.
pub fn valid_marker_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | ':' | '/'))
        && !name.contains("--")
}
/// GitHub refuses issue comments longer than this.
pub const COMMENT_LIMIT: usize = 65_536;
/// GitHub's limit for one step's job summary.
pub const SUMMARY_LIMIT: usize = 1024 * 1024;

/// Lint findings listed in full; more are counted.
const MAX_FINDINGS_LISTED: usize = 100;
/// Left-out diffs named in the note; more are counted.
const MAX_OMITTED_LISTED: usize = 30;

/// Where the comment came from: shown at the bottom.
#[derive(Debug, Clone, Default)]
pub struct Revisions {
    pub base_sha: Option<String>,
    pub head_sha: Option<String>,
}

/// A built report and what had to be left out of it.
#[derive(Debug, Clone)]
pub struct Report {
    pub markdown: String,
    /// `target/file: object` of each diff left out.
    pub omitted: Vec<String>,
}

/// The one-line report for a pull request with no changes and no findings.
pub const NOTHING: &str = "strata review: no catalog changes and no lint findings.";

/// Builds the report; with a `marker` name it starts with the hidden marker (the
/// comment), without it is the job summary / artifact. The markdown is at
/// most `limit` bytes (bytes, not characters, so that GitHub's character
/// limit holds for any text).
pub fn build(
    diff: &CatalogDiff,
    lint: &[LintFinding],
    revs: &Revisions,
    marker_name: Option<&str>,
    limit: usize,
) -> Report {
    build_with_order(diff, lint, &[], revs, marker_name, limit)
}

/// Mermaid graphs larger than this are named, not drawn: GitHub's renderer
/// gives up on them and they would crowd the diffs out of the comment.
const MAX_GRAPH_BYTES: usize = 16 * 1024;

/// [`build`], with the targets whose apply order changed: each with the
/// changes that moved and the new order as a Mermaid graph.
pub fn build_with_order(
    diff: &CatalogDiff,
    lint: &[LintFinding],
    order: &[OrderChange],
    revs: &Revisions,
    marker_name: Option<&str>,
    limit: usize,
) -> Report {
    let head = match marker_name {
        Some(m) => format!("{}\n", marker(m)),
        None => String::new(),
    };
    if diff.is_empty() && lint.is_empty() && order.is_empty() {
        return Report {
            markdown: format!("{head}{NOTHING}\n"),
            omitted: Vec::new(),
        };
    }
    // Object diffs by size, largest first: the order they are left out in.
    let mut sizes: Vec<(usize, (usize, usize, usize))> = Vec::new();
    for (ti, t) in diff.targets.iter().enumerate() {
        for (fi, f) in t.files.iter().enumerate() {
            for (oi, o) in f.objects.iter().enumerate() {
                sizes.push((o.diff.len(), (ti, fi, oi)));
            }
        }
    }
    sizes.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut omitted: HashSet<(usize, usize, usize)> = HashSet::new();
    let mut next = 0;
    let mut detail = Detail::Objects;
    loop {
        let md = render(diff, lint, order, revs, &head, &omitted, detail);
        if md.len() <= limit {
            let names = omitted_names(diff, &omitted);
            return Report {
                markdown: md,
                omitted: names,
            };
        }
        if next >= sizes.len() {
            // Without any diff it still does not fit: list less, then cut.
            detail = match detail {
                Detail::Objects => Detail::Files,
                Detail::Files => Detail::Targets,
                Detail::Targets => {
                    let note = "\n\n_… cut here: the report is longer than GitHub allows; the full report is in the job summary and the artifact._\n";
                    let mut cut = limit.saturating_sub(note.len());
                    while cut > 0 && !md.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    return Report {
                        markdown: format!("{}{note}", &md[..cut]),
                        omitted: omitted_names(diff, &omitted),
                    };
                }
            };
            continue;
        }
        // Leave out enough of the largest diffs to cover the excess at once,
        // then render again to check.
        let mut excess = md.len() - limit;
        while next < sizes.len() {
            let (size, key) = sizes[next];
            next += 1;
            omitted.insert(key);
            if size >= excess {
                break;
            }
            excess -= size;
        }
    }
}

fn files_count(n: usize) -> String {
    format!("{n} file{}", if n == 1 { "" } else { "s" })
}

/// How much of the per-target listing a report shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Detail {
    /// Every object, with its diff unless left out.
    Objects,
    /// Every file, with how many objects differ.
    Files,
    /// One line per target.
    Targets,
}

fn omitted_names(diff: &CatalogDiff, omitted: &HashSet<(usize, usize, usize)>) -> Vec<String> {
    let mut keys: Vec<_> = omitted.iter().copied().collect();
    keys.sort();
    keys.into_iter()
        .map(|(ti, fi, oi)| {
            let t = &diff.targets[ti];
            let f = &t.files[fi];
            format!("{}/{}: {}", t.name, f.path, f.objects[oi].name)
        })
        .collect()
}

fn render(
    diff: &CatalogDiff,
    lint: &[LintFinding],
    order: &[OrderChange],
    revs: &Revisions,
    head: &str,
    omitted: &HashSet<(usize, usize, usize)>,
    detail: Detail,
) -> String {
    let mut out = String::from(head);
    out.push_str("### strata review\n\n");
    let errors = lint.iter().filter(|f| f.severity == "error").count();
    let warnings = lint.iter().filter(|f| f.severity == "warning").count();
    out.push_str(&summary_table(diff, Some((errors, warnings))));
    out.push('\n');
    // Said first, so that it survives even a cut at the end.
    if !omitted.is_empty() {
        let names = omitted_names(diff, omitted);
        let _ = write!(
            out,
            "**{} diff{} left out** to fit GitHub's comment size limit (largest first){}; the full diff is in the job summary and the review artifact:\n\n",
            names.len(),
            if names.len() == 1 { "" } else { "s" },
            match detail {
                Detail::Objects => "",
                Detail::Files => ", and the list of objects",
                Detail::Targets => ", and the list of files",
            }
        );
        for n in names.iter().take(MAX_OMITTED_LISTED) {
            let _ = writeln!(out, "- `{}`", escape::code(n));
        }
        if names.len() > MAX_OMITTED_LISTED {
            let _ = writeln!(out, "- … and {} more", names.len() - MAX_OMITTED_LISTED);
        }
        out.push('\n');
    }
    if !lint.is_empty() {
        let _ = writeln!(
            out,
            "<details{}><summary>Lint findings ({} error{}, {} warning{})</summary>\n",
            // Errors are what a reviewer must see: shown open.
            if errors > 0 { " open" } else { "" },
            errors,
            if errors == 1 { "" } else { "s" },
            warnings,
            if warnings == 1 { "" } else { "s" }
        );
        for f in lint.iter().take(MAX_FINDINGS_LISTED) {
            let loc = match (&f.file, f.line) {
                (Some(file), Some(l)) => format!(" `{}:{l}`", escape::code(file)),
                (Some(file), None) => format!(" `{}`", escape::code(file)),
                _ => String::new(),
            };
            let code = if f.code.is_empty() {
                String::new()
            } else {
                format!(" `{}`", escape::code(&f.code))
            };
            let _ = writeln!(
                out,
                "- **{}**{code}{loc}: {}",
                f.severity,
                escape::text(&f.message.replace('\n', " "))
            );
        }
        if lint.len() > MAX_FINDINGS_LISTED {
            let _ = writeln!(
                out,
                "- … and {} more (see the job summary)",
                lint.len() - MAX_FINDINGS_LISTED
            );
        }
        out.push_str("\n</details>\n\n");
    }
    render_order(&mut out, order, detail);
    if diff.is_empty() {
        out.push_str("No catalog changes.\n\n");
    } else {
        match detail {
            Detail::Objects => out.push_str(&targets_markdown(diff, &|t, f, o| {
                omitted.contains(&(t, f, o))
            })),
            Detail::Files => {
                for t in &diff.targets {
                    let _ = writeln!(
                        out,
                        "<details><summary><code>{}</code> ({}, {})</summary>\n",
                        html_escape(&t.name),
                        t.status.as_str(),
                        files_count(t.files.len())
                    );
                    for f in &t.files {
                        let n = f.objects.len();
                        let _ = writeln!(
                            out,
                            "- {} `{}` ({n} object{})",
                            f.status.as_str(),
                            escape::code(&f.path),
                            if n == 1 { "" } else { "s" }
                        );
                    }
                    out.push_str("\n</details>\n\n");
                }
            }
            Detail::Targets => {
                for t in &diff.targets {
                    let _ = writeln!(
                        out,
                        "- `{}` ({}, {})",
                        escape::code(&t.name),
                        t.status.as_str(),
                        files_count(t.files.len())
                    );
                }
                out.push('\n');
            }
        }
    }
    if let (Some(b), Some(h)) = (&revs.base_sha, &revs.head_sha) {
        let short = |s: &str| s.chars().take(12).collect::<String>();
        let _ = writeln!(out, "<sub>base {} → head {}</sub>", short(b), short(h));
    }
    out
}

/// One block per target whose apply order changed; the graphs go first
/// when the report has to shrink.
fn render_order(out: &mut String, order: &[OrderChange], detail: Detail) {
    for c in order {
        let n = c.moved.len();
        let _ = writeln!(
            out,
            "<details><summary>Apply order changed in <code>{}</code> ({n} change{} moved)</summary>\n",
            html_escape(&c.target),
            if n == 1 { "" } else { "s" }
        );
        for m in c.moved.iter().take(MAX_OMITTED_LISTED) {
            let _ = writeln!(out, "- `{}`", escape::code(m));
        }
        if n > MAX_OMITTED_LISTED {
            let _ = writeln!(out, "- … and {} more", n - MAX_OMITTED_LISTED);
        }
        out.push('\n');
        if detail == Detail::Objects && c.mermaid.len() <= MAX_GRAPH_BYTES {
            out.push_str(&fence("mermaid", &c.mermaid));
        } else {
            let _ = writeln!(
                out,
                "_The graph is left out here; `strata order --catalog <catalog>/{} --format mermaid` draws it._",
                escape::code(&c.target)
            );
        }
        out.push_str("\n</details>\n\n");
    }
}

/// The job-summary form of a report that could not be posted.
pub fn with_notice(notice: &str, report: &str) -> String {
    format!("> [!NOTE]\n> {notice}\n\n{report}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::{FileDiff, ObjectDiff, Status, TargetDiff};

    fn big_diff() -> CatalogDiff {
        let obj = |name: &str, lines: usize| ObjectDiff {
            name: name.into(),
            status: Status::Changed,
            added_lines: lines,
            removed_lines: 0,
            diff: format!("@@ -1 +1,{lines} @@\n{}", "+ x: y\n".repeat(lines)),
        };
        let mut d = CatalogDiff::default();
        d.targets.push(TargetDiff {
            name: "t".into(),
            status: Status::Changed,
            files: vec![FileDiff {
                path: "f.yaml".into(),
                old_path: None,
                status: Status::Changed,
                objects: vec![
                    obj("A/big", 20_000),
                    obj("A/mid", 3_000),
                    obj("A/small", 10),
                ],
            }],
        });
        d.summary.targets_changed = 1;
        d.summary.files_changed = 1;
        d.summary.objects_changed = 3;
        d
    }

    #[test]
    fn cut_to_fit_drops_largest_first() {
        let d = big_diff();
        let r = build(
            &d,
            &[],
            &Revisions::default(),
            Some(DEFAULT_MARKER),
            COMMENT_LIMIT,
        );
        assert!(r.markdown.len() <= COMMENT_LIMIT);
        assert_eq!(r.omitted, ["t/f.yaml: A/big"]);
        assert!(r.markdown.contains("1 diff left out"));
        assert!(r.markdown.contains("+ x: y"), "the smaller diffs stay");
        let full = build(&d, &[], &Revisions::default(), None, usize::MAX);
        assert!(full.omitted.is_empty());
        assert!(!full.markdown.contains("<!--"));
    }

    #[test]
    fn many_diffs_fall_back_to_file_listing() {
        let mut d = CatalogDiff::default();
        for t in 0..200 {
            d.targets.push(TargetDiff {
                name: format!("target-{t}"),
                status: Status::Changed,
                files: (0..5)
                    .map(|f| FileDiff {
                        path: format!("manifests/file-{f}.yaml"),
                        old_path: None,
                        status: Status::Changed,
                        objects: vec![ObjectDiff {
                            name: format!("Deployment/ns/app-{f}"),
                            status: Status::Changed,
                            added_lines: 1,
                            removed_lines: 1,
                            diff: "@@ -1 +1 @@\n-a: 1\n+a: 2\n".repeat(5),
                        }],
                    })
                    .collect(),
            });
        }
        let r = build(
            &d,
            &[],
            &Revisions::default(),
            Some(DEFAULT_MARKER),
            COMMENT_LIMIT,
        );
        assert!(r.markdown.len() <= COMMENT_LIMIT);
        assert_eq!(r.omitted.len(), 1000);
        assert!(r.markdown.contains("**1000 diffs left out**"));
        assert!(r.markdown.contains("and the list of objects"));
        assert!(r
            .markdown
            .contains("- changed `manifests/file-4.yaml` (1 object)"));
        assert!(
            r.markdown.contains("<code>target-199</code>"),
            "every target listed"
        );
    }

    #[test]
    fn tiny_limit_cuts_text() {
        let r = build(
            &big_diff(),
            &[],
            &Revisions::default(),
            Some(DEFAULT_MARKER),
            300,
        );
        assert!(r.markdown.len() <= 300, "{}", r.markdown.len());
        assert!(r.markdown.starts_with("<!-- strata-review -->\n"));
    }

    #[test]
    fn nothing_is_one_line() {
        let r = build(
            &CatalogDiff::default(),
            &[],
            &Revisions::default(),
            Some(DEFAULT_MARKER),
            COMMENT_LIMIT,
        );
        assert_eq!(r.markdown, format!("<!-- strata-review -->\n{NOTHING}\n"));
        assert!(valid_marker_name("strata-review:prod/eu.1"));
        assert!(!valid_marker_name("a-->b") && !valid_marker_name("a b") && !valid_marker_name(""));
    }
}
