//! Text and markdown renderings of a [`CatalogDiff`]. Pure functions to
//! strings: the CLI decides where they go. The pull-request comment reuses
//! the markdown pieces (summary table, one `<details>` block per target).

use super::{CatalogDiff, ObjectDiff};
use std::fmt::Write;

const RESET: &str = "\x1b[0m";
const BOLD: &str = "\x1b[1m";
const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const CYAN: &str = "\x1b[36m";

/// One line of summary: `2 targets changed, 1 file added, ...`.
pub fn summary_line(d: &CatalogDiff) -> String {
    if d.is_empty() {
        return "no differences".into();
    }
    let s = &d.summary;
    let mut parts = Vec::new();
    let mut add = |n: usize, one: &str, many: &str, what: &str| {
        if n > 0 {
            parts.push(format!("{n} {} {what}", if n == 1 { one } else { many }));
        }
    };
    add(s.targets_changed, "target", "targets", "changed");
    add(s.targets_added, "target", "targets", "added");
    add(s.targets_removed, "target", "targets", "removed");
    add(s.files_added, "file", "files", "added");
    add(s.files_changed, "file", "files", "changed");
    add(s.files_removed, "file", "files", "removed");
    add(s.files_renamed, "file", "files", "renamed");
    add(s.objects_changed, "object", "objects", "differ");
    parts.join(", ")
}

/// Plain text, with ANSI colours when `color` is set. Names (targets,
/// files, objects) come from a pull request: their control and
/// bidirectional characters are shown escaped (`\u{1b}`, `\u{202e}`), as in
/// the markdown, so a name cannot drive the terminal or the CI log, start a
/// line of its own or reorder the line it is on.
pub fn text(d: &CatalogDiff, color: bool) -> String {
    use crate::diagnostics::escape_controls as esc;
    let paint = |code: &str, s: &str| {
        if color {
            format!("{code}{s}{RESET}")
        } else {
            s.to_string()
        }
    };
    let mut out = String::new();
    for t in &d.targets {
        let _ = writeln!(
            out,
            "{}",
            paint(
                BOLD,
                &format!("target {} ({})", esc(&t.name), t.status.as_str())
            )
        );
        for f in &t.files {
            match &f.old_path {
                Some(old) => {
                    let _ = writeln!(
                        out,
                        "  {:<8} {} -> {}",
                        f.status.as_str(),
                        esc(old),
                        esc(&f.path)
                    );
                }
                None => {
                    let _ = writeln!(out, "  {:<8} {}", f.status.as_str(), esc(&f.path));
                }
            }
            for o in &f.objects {
                let _ = writeln!(
                    out,
                    "    {} ({}, +{} -{})",
                    paint(BOLD, &esc(&o.name)),
                    o.status.as_str(),
                    o.added_lines,
                    o.removed_lines
                );
                for line in o.diff.lines() {
                    let code = match line.as_bytes().first() {
                        Some(b'+') => GREEN,
                        Some(b'-') => RED,
                        Some(b'@') => CYAN,
                        _ => "",
                    };
                    let l = format!("      {}", body_line(line));
                    if code.is_empty() {
                        out.push_str(&l);
                    } else {
                        out.push_str(&paint(code, &l));
                    }
                    out.push('\n');
                }
            }
        }
    }
    out.push_str(&groups_text(d, color));
    let _ = writeln!(out, "{}", summary_line(d));
    out
}

/// A changed line for the terminal: control, bidirectional and invisible
/// characters shown as escapes, tabs kept. The lines come from a pull
/// request's catalog, and the text output printed them raw: an ESC
/// sequence set the terminal's title or cleared the screen of whoever ran
/// `strata review` or `diff`, a carriage return put another text over the
/// line, U+202E reordered it (probe 38, diff-text-body-controls-raw; the
/// names and the markdown's fenced bodies were escaped already).
fn body_line(line: &str) -> std::borrow::Cow<'_, str> {
    let escaped = |c: char| c != '\t' && crate::diagnostics::must_escape(c);
    if !line.chars().any(escaped) {
        return std::borrow::Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len() + 8);
    for c in line.chars() {
        if escaped(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Change groups listed in the text output; more are counted.
const MAX_TEXT_GROUPS: usize = 20;

/// The change groups (see [`super::groups`]) as plain lines, for the
/// terminal: what changed, in how many objects of which kinds, where.
/// Empty when every change is in one object only (the diff above says it
/// all).
pub fn groups_text(d: &CatalogDiff, color: bool) -> String {
    use super::groups::{self, GroupKey};
    use crate::diagnostics::escape_controls as esc;
    let gs = groups::group(d);
    if gs.iter().all(|g| g.members.len() < 2) {
        return String::new();
    }
    let mut out = String::new();
    let head = format!(
        "{} change{} across targets:",
        gs.len(),
        if gs.len() == 1 { "" } else { "s" }
    );
    let _ = writeln!(
        out,
        "{}",
        if color {
            format!("{BOLD}{head}{RESET}")
        } else {
            head
        }
    );
    let one = |v: &str| -> String {
        let v: String = v
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        if v.chars().count() > 80 {
            format!("{}…", v.chars().take(80).collect::<String>())
        } else {
            v
        }
    };
    for (i, g) in gs.iter().enumerate().take(MAX_TEXT_GROUPS) {
        let m = g.members[0];
        let f = &d.targets[m.target].files[m.file];
        let what = match &g.key {
            GroupKey::Change(c) => {
                let path = if c.path.is_empty() {
                    "(whole document)"
                } else {
                    c.path.as_str()
                };
                match (&c.old, &c.new) {
                    (Some(o), Some(n)) => format!("{path}: {} -> {}", one(o), one(n)),
                    (None, Some(n)) => format!("{path} added: {}", one(n)),
                    (Some(o), None) => format!("{path} removed (was {})", one(o)),
                    (None, None) => path.to_string(),
                }
            }
            GroupKey::Objects { status, kind } => format!("{kind} objects {}", status.as_str()),
            GroupKey::Target { status } => format!("targets {}", status.as_str()),
            GroupKey::Text(_) => format!("{} changed", esc(&f.path)),
        };
        let kinds: Vec<String> = g.kinds.iter().map(|(k, n)| format!("{k} x{n}")).collect();
        let targets: Vec<_> = g.targets.iter().take(5).map(|t| esc(t)).collect();
        let more = g.targets.len().saturating_sub(5);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "  {}. {what}\n     in {} object{} ({}) of {} target{}: {}{more}",
            i + 1,
            g.members.len(),
            if g.members.len() == 1 { "" } else { "s" },
            kinds.join(", "),
            g.targets.len(),
            if g.targets.len() == 1 { "" } else { "s" },
            targets.join(", "),
        );
    }
    if gs.len() > MAX_TEXT_GROUPS {
        let _ = writeln!(out, "  ... and {} more", gs.len() - MAX_TEXT_GROUPS);
    }
    out
}

/// The full markdown report: summary table, then one block per target.
pub fn markdown(d: &CatalogDiff) -> String {
    let mut out = String::from("### Catalog diff\n\n");
    if d.is_empty() {
        out.push_str("No differences.\n");
        return out;
    }
    out.push_str(&summary_table(d, None));
    out.push('\n');
    out.push_str(&targets_markdown(d, &|_, _, _| false));
    out
}

/// Lint counts shown in the summary table: (errors, warnings).
pub type LintCounts = (usize, usize);

/// The summary table of the pull-request comment and the markdown report.
pub fn summary_table(d: &CatalogDiff, lint: Option<LintCounts>) -> String {
    let s = &d.summary;
    let mut out = String::from(
        "| targets changed | files added | files changed | files removed | files renamed |",
    );
    let mut sep = String::from("| --- | --- | --- | --- | --- |");
    let mut row = format!(
        "| {} | {} | {} | {} | {} |",
        s.targets_changed + s.targets_added + s.targets_removed,
        s.files_added,
        s.files_changed,
        s.files_removed,
        s.files_renamed
    );
    if let Some((e, w)) = lint {
        out.push_str(" lint errors | lint warnings |");
        sep.push_str(" --- | --- |");
        let _ = write!(row, " {e} | {w} |");
    }
    format!("{out}\n{sep}\n{row}\n")
}

/// One `<details>` block per target, one diff block per object. Objects for
/// which `omit(target, file, object)` is true are listed without their diff.
pub fn targets_markdown(d: &CatalogDiff, omit: &dyn Fn(usize, usize, usize) -> bool) -> String {
    let mut out = String::new();
    for (ti, t) in d.targets.iter().enumerate() {
        let nfiles = t.files.len();
        let _ = writeln!(
            out,
            "<details><summary><code>{}</code> ({}, {} file{})</summary>\n",
            html_escape(&t.name),
            t.status.as_str(),
            nfiles,
            if nfiles == 1 { "" } else { "s" }
        );
        for (fi, f) in t.files.iter().enumerate() {
            match &f.old_path {
                Some(old) => {
                    let _ = writeln!(
                        out,
                        "**{}** `{}` → `{}`\n",
                        f.status.as_str(),
                        md_code(old),
                        md_code(&f.path)
                    );
                }
                None => {
                    let _ = writeln!(out, "**{}** `{}`\n", f.status.as_str(), md_code(&f.path));
                }
            }
            for (oi, o) in f.objects.iter().enumerate() {
                out.push_str(&object_markdown(o, omit(ti, fi, oi)));
            }
        }
        out.push_str("</details>\n\n");
    }
    out
}

fn object_markdown(o: &ObjectDiff, omitted: bool) -> String {
    let mut out = format!(
        "`{}` ({}, +{} −{})",
        md_code(&o.name),
        o.status.as_str(),
        o.added_lines,
        o.removed_lines
    );
    if omitted {
        out.push_str(": diff left out to fit, see the job summary\n\n");
        return out;
    }
    out.push_str("\n\n");
    out.push_str(&fence("diff", &o.diff));
    out.push('\n');
    out
}

/// A fenced code block whose fence is longer than any backtick run inside.
/// Control and bidirectional characters in the content are shown as
/// escapes (`\u{202e}`): a pull request's line could otherwise read in the
/// comment in another order than it holds (GitHub's own diff view warns
/// of them; a fenced block shows them silently). Line breaks and tabs stay.
pub fn fence(lang: &str, content: &str) -> String {
    let escaped;
    let content = if content
        .chars()
        .any(|c| !matches!(c, '\n' | '\r' | '\t') && crate::diagnostics::must_escape(c))
    {
        escaped = content
            .chars()
            .map(|c| match c {
                '\n' | '\r' | '\t' => c.to_string(),
                c if crate::diagnostics::must_escape(c) => format!("\\u{{{:x}}}", c as u32),
                c => c.to_string(),
            })
            .collect::<String>();
        escaped.as_str()
    } else {
        content
    };
    let mut longest = 0;
    let mut run = 0;
    for c in content.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let f = "`".repeat((longest + 1).max(3));
    let nl = if content.ends_with('\n') || content.is_empty() {
        ""
    } else {
        "\n"
    };
    format!("{f}{lang}\n{content}{nl}{f}\n")
}

fn md_code(s: &str) -> String {
    super::escape::code(s)
}

pub fn html_escape(s: &str) -> String {
    super::escape::html(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A changed target with one file (renamed from `old_path` when given)
    /// holding one object whose `spec.o` went from 1 to 2.
    fn one_change(
        target: &str,
        path: &str,
        old_path: Option<&str>,
        object: &str,
    ) -> crate::diff::TargetDiff {
        use crate::diff::{groups::Change, FileDiff, Status, TargetDiff};
        TargetDiff {
            name: target.into(),
            status: Status::Changed,
            files: vec![FileDiff {
                path: path.into(),
                old_path: old_path.map(Into::into),
                status: if old_path.is_some() {
                    Status::Renamed
                } else {
                    Status::Changed
                },
                objects: vec![ObjectDiff {
                    name: object.into(),
                    status: Status::Changed,
                    added_lines: 1,
                    removed_lines: 1,
                    diff: "@@ -1 +1 @@\n-o: 1\n+o: 2\n".into(),
                    changes: vec![Change {
                        path: "spec.o".into(),
                        old: Some("1".into()),
                        new: Some("2".into()),
                    }],
                }],
            }],
        }
    }

    #[test]
    fn text_lists_groups_shared_by_objects() {
        let mut d = CatalogDiff::default();
        for t in ["a", "b"] {
            d.targets
                .push(one_change(t, "x.yaml", None, "Deployment/ns/x"));
        }
        let t = text(&d, false);
        assert!(
            t.contains("1 change across targets:\n  1. spec.o: 1 -> 2\n     in 2 objects (Deployment x2) of 2 targets: a, b\n"),
            "{t}"
        );
        d.targets.pop();
        assert!(!text(&d, false).contains("across targets"));
    }

    /// verify21 (v-text-output-names-raw-controls): the text output printed
    /// a pull request's target, file and object names raw, an ESC or a
    /// U+202E too, while the markdown showed them escaped.
    #[test]
    fn text_shows_names_control_characters_escaped() {
        let mut d = CatalogDiff::default();
        for t in ["a\u{202e}b", "c\u{1b}[2Kd"] {
            d.targets.push(one_change(
                t,
                "x\u{2067}y.yaml",
                Some("o\rld.yaml"),
                "Deployment/ns/e\u{1b}]0;t\u{7}x",
            ));
        }
        let t = text(&d, false);
        assert!(
            !t.chars()
                .any(|c| c != '\n' && crate::diagnostics::must_escape(c)),
            "{t:?}"
        );
        for shown in [
            "target a\\u{202e}b (changed)",
            "o\\rld.yaml -> x\\u{2067}y.yaml",
            "e\\u{1b}]0;t\\u{7}x (changed",
            "of 2 targets: a\\u{202e}b, c\\u{1b}[2Kd",
        ] {
            assert!(t.contains(shown), "{shown} not in {t}");
        }
    }

    #[test]
    /// A changed line holding a bidirectional control shows it as an
    /// escape in the comment's fenced diff (verify21:
    /// v-markdown-diff-body-bidi-raw).
    fn fenced_bodies_show_bidi_and_control_characters_escaped() {
        let out = fence("diff", "+b\u{202e} evil\u{2066}\n+z\u{1b}[31mRED\r\n\tx\n");
        assert_eq!(
            out,
            "```diff\n+b\\u{202e} evil\\u{2066}\n+z\\u{1b}[31mRED\r\n\tx\n```\n"
        );
    }

    /// Probe 38 (diff-text-body-controls-raw): the text output's changed
    /// lines kept ESC sequences, a carriage return and U+202E raw.
    #[test]
    fn text_shows_changed_lines_control_characters_escaped() {
        let mut d = CatalogDiff::default();
        let mut t = one_change("t", "r.md", None, "document 1");
        t.files[0].objects[0].diff =
            "@@ -1 +1 @@\n-line\n+line \u{1b}]0;x\u{7}\u{1b}[2J\u{202e}a\rb\tc\u{200b}\n".into();
        d.targets.push(t);
        for color in [false, true] {
            let out = text(&d, color);
            let body = out
                .replace(GREEN, "")
                .replace(RED, "")
                .replace(CYAN, "")
                .replace(RESET, "")
                .replace(BOLD, "");
            assert!(
                body.contains("+line \\u{1b}]0;x\\u{7}\\u{1b}[2J\\u{202e}a\\rb\tc\\u{200b}\n"),
                "{body:?}"
            );
        }
    }

    #[test]
    fn fence_outgrows_backticks() {
        assert_eq!(fence("diff", "a ```` b"), "`````diff\na ```` b\n`````\n");
        assert_eq!(fence("", "x\n"), "```\nx\n```\n");
    }
}
