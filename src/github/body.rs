//! The pull-request comment and the job-summary report, as markdown.
//!
//! The comment leads with what a reviewer reads first: the revisions
//! compared, a summary table, the change groups (each distinct change once,
//! with how many objects of which kinds in which targets and one example
//! diff), the lint findings the pull request adds (fixed ones collapsed,
//! pre-existing ones counted), the apply-order changes, then the details
//! per target, collapsed. The comment only shows per-object diffs that no
//! group shows already; the job summary and the artifact show them all.
//!
//! To fit a size limit, detail is dropped in a fixed order: per-object
//! diffs (largest first), then the per-target lists, then the example
//! diffs of the groups; the groups and the summary stay. A line near the
//! top says what was left out and where to find it.

use super::LintFinding;
use crate::diff::escape;
use crate::diff::groups::{self, ChangeGroup, GroupKey, Member};
use crate::diff::render::{fence, html_escape, summary_table};
use crate::diff::{CatalogDiff, ObjectDiff};
use crate::lint::baseline::{self, Partition, StableKey};
use crate::order::OrderChange;
use std::collections::{BTreeSet, HashMap, HashSet};
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
/// Targets named in a group's line; more are counted.
const MAX_GROUP_TARGETS: usize = 5;
/// Groups shown in full; more are counted (the job summary has them all).
const MAX_GROUPS: usize = 50;
/// Groups whose example diff is shown open.
const OPEN_EXAMPLES: usize = 3;
/// An example diff longer than this is cut (the per-target details and
/// the job summary have it whole).
const MAX_EXAMPLE_BYTES: usize = 4 * 1024;
/// A value in a group's one-line description longer than this is cut.
const MAX_VALUE_CHARS: usize = 120;

/// Where the comment came from: shown at the top.
#[derive(Debug, Clone, Default)]
pub struct Revisions {
    pub base_sha: Option<String>,
    pub head_sha: Option<String>,
    /// The workflow run (whose job summary has the full report).
    pub run_url: Option<String>,
}

impl Revisions {
    /// The run's address from GitHub Actions' environment
    /// (`GITHUB_SERVER_URL`, `GITHUB_REPOSITORY`, `GITHUB_RUN_ID`).
    pub fn run_url_from_env(env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
        let server = env("GITHUB_SERVER_URL").unwrap_or_else(|| "https://github.com".into());
        let repo = env("GITHUB_REPOSITORY")?;
        let id = env("GITHUB_RUN_ID")?;
        let ok = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
        };
        (ok(&repo) && id.chars().all(|c| c.is_ascii_digit()) && !id.is_empty())
            .then(|| format!("{}/{repo}/actions/runs/{id}", server.trim_end_matches('/')))
    }
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
    build_review(diff, lint, None, order, revs, marker_name, limit)
}

/// The stable key of a finding (see [`crate::lint::baseline`]).
pub fn finding_key(f: &LintFinding) -> StableKey {
    StableKey::new(&f.code, f.file.as_deref(), &f.message)
}

/// [`build_with_order`] with the base revision's lint findings: the
/// report then shows the findings the pull request adds, the ones it
/// fixes (collapsed) and counts the ones that were there before (listed
/// only without a marker, i.e. in the job summary and artifact).
pub fn build_review(
    diff: &CatalogDiff,
    lint: &[LintFinding],
    base_lint: Option<&[LintFinding]>,
    order: &[OrderChange],
    revs: &Revisions,
    marker_name: Option<&str>,
    limit: usize,
) -> Report {
    let head = match marker_name {
        Some(m) => format!("{}\n", marker(m)),
        None => String::new(),
    };
    let lint = match base_lint {
        Some(base) => LintView::Relative(baseline::partition(base, lint, finding_key)),
        None => LintView::All(lint.to_vec()),
    };
    if diff.is_empty() && lint.is_empty() && order.is_empty() {
        return Report {
            markdown: format!("{head}{NOTHING}\n"),
            omitted: Vec::new(),
        };
    }
    let groups = groups::group(diff);
    let ctx = Ctx {
        diff,
        groups: &groups,
        lint: &lint,
        order,
        revs,
        head: &head,
        // The comment leaves out what the groups already show.
        compact: marker_name.is_some(),
        covered: covered(diff, &groups),
    };
    // Object diffs by size, largest first: the order they are left out in.
    let mut sizes: Vec<(usize, (usize, usize, usize))> = Vec::new();
    for (ti, t) in diff.targets.iter().enumerate() {
        for (fi, f) in t.files.iter().enumerate() {
            for (oi, o) in f.objects.iter().enumerate() {
                if ctx.compact && ctx.covered.contains_key(&(ti, fi, oi)) {
                    continue;
                }
                sizes.push((o.diff.len(), (ti, fi, oi)));
            }
        }
    }
    sizes.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut omitted: HashSet<(usize, usize, usize)> = HashSet::new();
    let mut next = 0;
    let mut detail = Detail::Objects;
    loop {
        let md = render(&ctx, &omitted, detail);
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
                Detail::Targets => Detail::NoTargets,
                Detail::NoTargets => Detail::NoExamples,
                Detail::NoExamples => {
                    let note = "\n\n_… cut here: the report is longer than GitHub allows; the full report is in the job summary and the `strata-review.md` artifact._\n";
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

/// The lint findings as the report shows them.
enum LintView {
    /// No base to compare with: every finding.
    All(Vec<LintFinding>),
    Relative(Partition<LintFinding>),
}

impl LintView {
    fn is_empty(&self) -> bool {
        match self {
            LintView::All(v) => v.is_empty(),
            LintView::Relative(p) => {
                p.new.is_empty() && p.fixed.is_empty() && p.existing.is_empty()
            }
        }
    }

    /// The findings counted in the summary table: all, or the new ones.
    fn counted(&self) -> &[LintFinding] {
        match self {
            LintView::All(v) => v,
            LintView::Relative(p) => &p.new,
        }
    }
}

struct Ctx<'a> {
    diff: &'a CatalogDiff,
    groups: &'a [ChangeGroup],
    lint: &'a LintView,
    order: &'a [OrderChange],
    revs: &'a Revisions,
    head: &'a str,
    compact: bool,
    /// Objects each of whose changes is in a listed group (numbered from
    /// 1), with those groups: the groups' example diffs show the change.
    covered: HashMap<(usize, usize, usize), Vec<usize>>,
}

/// Up to this many objects shown by groups are still named, each with its
/// group, in the comment's per-target details; more are only counted.
const MAX_COVERED_NAMED: usize = 60;

fn covered(
    diff: &CatalogDiff,
    groups: &[ChangeGroup],
) -> HashMap<(usize, usize, usize), Vec<usize>> {
    let mut listed: HashMap<Member, Vec<usize>> = HashMap::new();
    let mut unlisted: HashSet<Member> = HashSet::new();
    for (i, g) in groups.iter().enumerate() {
        for m in &g.members {
            let size = diff.targets[m.target].files[m.file].objects[m.object]
                .diff
                .len();
            // An object alone in its group is shown by the group's example,
            // unless the example had to be cut.
            if i < MAX_GROUPS && (g.members.len() > 1 || size <= MAX_EXAMPLE_BYTES) {
                listed.entry(*m).or_default().push(i + 1);
            } else {
                unlisted.insert(*m);
            }
        }
    }
    listed
        .into_iter()
        .filter(|(m, _)| !unlisted.contains(m))
        .map(|(m, g)| ((m.target, m.file, m.object), g))
        .collect()
}

fn files_count(n: usize) -> String {
    format!("{n} file{}", if n == 1 { "" } else { "s" })
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{} {}", thousands(n), if n == 1 { one } else { many })
}

/// `1020` as `1,020`.
fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Inline code for markdown: no backtick or line break from the input can
/// end it early.
fn code(s: &str) -> String {
    format!("`{}`", escape::code(s))
}

/// `<code>` for HTML blocks (`<summary>`), escaped.
fn html_code(s: &str) -> String {
    format!("<code>{}</code>", escape::html(s))
}

fn cut_value(s: &str) -> String {
    if s.chars().count() <= MAX_VALUE_CHARS {
        return s.to_string();
    }
    let mut t: String = s.chars().take(MAX_VALUE_CHARS).collect();
    t.push('…');
    t
}

/// How much of the per-target listing a report shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Detail {
    /// Every object, with its diff unless left out.
    Objects,
    /// Every file, with how many objects differ.
    Files,
    /// One line per target.
    Targets,
    /// No per-target listing (the groups name the targets).
    NoTargets,
    /// Groups without their example diffs.
    NoExamples,
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

fn render(ctx: &Ctx, omitted: &HashSet<(usize, usize, usize)>, detail: Detail) -> String {
    let diff = ctx.diff;
    let mut out = String::from(ctx.head);
    out.push_str("### strata review\n\n");
    render_revisions(&mut out, ctx.revs);
    let counted = ctx.lint.counted();
    let errors = counted.iter().filter(|f| f.severity == "error").count();
    let warnings = counted.iter().filter(|f| f.severity == "warning").count();
    out.push_str(&summary_table(diff, Some((errors, warnings))));
    out.push('\n');
    // Said first, so that it survives even a cut at the end.
    if !omitted.is_empty() || detail > Detail::Objects {
        let names = omitted_names(diff, omitted);
        let what = match detail {
            Detail::Objects => String::new(),
            Detail::Files => ", and the list of objects".into(),
            Detail::Targets => ", and the list of files".into(),
            Detail::NoTargets => ", and the per-target details".into(),
            Detail::NoExamples => ", the per-target details and the groups' example diffs".into(),
        };
        let _ = write!(
            out,
            "**{} left out{}** to fit GitHub's comment size limit (largest diffs first); the full report is in the job summary{} and the `strata-review.md` artifact{}\n\n",
            plural(names.len(), "diff", "diffs"),
            what,
            match &ctx.revs.run_url {
                Some(u) => format!(" of [this run]({u})"),
                None => String::new(),
            },
            if names.is_empty() { "." } else { ":" }
        );
        for n in names.iter().take(MAX_OMITTED_LISTED) {
            let _ = writeln!(out, "- {}", code(n));
        }
        if names.len() > MAX_OMITTED_LISTED {
            let _ = writeln!(out, "- … and {} more", names.len() - MAX_OMITTED_LISTED);
        }
        if !names.is_empty() {
            out.push('\n');
        }
    }
    render_groups(&mut out, ctx, detail < Detail::NoExamples);
    render_lint(&mut out, ctx);
    render_order(&mut out, ctx.order, detail);
    if diff.is_empty() {
        out.push_str("No catalog changes.\n\n");
    } else if detail < Detail::NoTargets {
        render_targets(&mut out, ctx, omitted, detail);
    }
    out
}

fn short(s: &str) -> String {
    s.chars().take(7).collect()
}

fn render_revisions(out: &mut String, revs: &Revisions) {
    let mut parts = Vec::new();
    if let (Some(b), Some(h)) = (&revs.base_sha, &revs.head_sha) {
        parts.push(format!(
            "Compared base {} with head {}",
            code(&short(b)),
            code(&short(h))
        ));
    }
    if let Some(u) = &revs.run_url {
        parts.push(format!("full report: [job summary]({u})"));
    }
    if !parts.is_empty() {
        let _ = writeln!(out, "{}.\n", parts.join(" · "));
    }
}

/// The one-line description of a group's change.
fn describe(ctx: &Ctx, g: &ChangeGroup) -> String {
    let first = g.members[0];
    let t = &ctx.diff.targets[first.target];
    let f = &t.files[first.file];
    match &g.key {
        GroupKey::Change(c) => {
            let path = if c.path.is_empty() {
                "the whole document".to_string()
            } else {
                code(&c.path)
            };
            match (&c.old, &c.new) {
                (Some(o), Some(n)) => {
                    format!("{path}: {} → {}", code(&cut_value(o)), code(&cut_value(n)))
                }
                (None, Some(n)) => format!("{path} added: {}", code(&cut_value(n))),
                (Some(o), None) => format!("{path} removed (was {})", code(&cut_value(o))),
                (None, None) => path,
            }
        }
        GroupKey::Objects { status, kind } => {
            format!("{} objects {}", code(kind), status.as_str())
        }
        GroupKey::Target { status } => format!(
            "{} {}",
            if g.targets.len() == 1 {
                "target"
            } else {
                "targets"
            },
            status.as_str()
        ),
        GroupKey::Text(_) if g.members.len() == 1 => format!("{} changed", code(&f.path)),
        GroupKey::Text(_) => format!("the same change to {}", code(&f.path)),
    }
}

fn render_groups(out: &mut String, ctx: &Ctx, examples: bool) {
    if ctx.groups.is_empty() {
        return;
    }
    let objects: BTreeSet<Member> = ctx
        .groups
        .iter()
        .flat_map(|g| g.members.iter().copied())
        .collect();
    let _ = writeln!(
        out,
        "#### What changed: {} in {}\n",
        plural(ctx.groups.len(), "change", "changes"),
        plural(objects.len(), "object", "objects")
    );
    for (i, g) in ctx.groups.iter().enumerate().take(MAX_GROUPS) {
        let kinds: Vec<String> = g
            .kinds
            .iter()
            .map(|(k, n)| format!("{} ×{}", code(k), thousands(*n)))
            .collect();
        let mut targets: Vec<String> = g
            .targets
            .iter()
            .take(MAX_GROUP_TARGETS)
            .map(|t| code(t))
            .collect();
        if g.targets.len() > MAX_GROUP_TARGETS {
            targets.push(format!("and {} more", g.targets.len() - MAX_GROUP_TARGETS));
        }
        // Text files are files, not objects of a kind.
        let what = if g.kinds.keys().all(|k| k == "file") {
            plural(g.members.len(), "file", "files")
        } else {
            format!(
                "{} ({})",
                plural(g.members.len(), "object", "objects"),
                kinds.join(", ")
            )
        };
        let _ = writeln!(
            out,
            "**{}.** {}  \nin {what} across {}: {}\n",
            i + 1,
            describe(ctx, g),
            plural(g.targets.len(), "target", "targets"),
            targets.join(", ")
        );
        if !examples {
            continue;
        }
        let m = g.members[0];
        let t = &ctx.diff.targets[m.target];
        let f = &t.files[m.file];
        let o = &f.objects[m.object];
        let mut text = o.diff.clone();
        if text.len() > MAX_EXAMPLE_BYTES {
            let mut cut = MAX_EXAMPLE_BYTES;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push_str("\n… (cut: the whole diff is in the per-target details)\n");
        }
        let _ = writeln!(
            out,
            "<details{}><summary>Example: {} · {}{}</summary>\n",
            if i < OPEN_EXAMPLES { " open" } else { "" },
            html_code(&t.name),
            html_code(&f.path),
            object_suffix(f.path.as_str(), o, true)
        );
        out.push_str(&fence("diff", &text));
        out.push_str("\n</details>\n\n");
    }
    if ctx.groups.len() > MAX_GROUPS {
        let _ = writeln!(
            out,
            "… and {} more {} (in the job summary).\n",
            thousands(ctx.groups.len() - MAX_GROUPS),
            if ctx.groups.len() - MAX_GROUPS == 1 {
                "change"
            } else {
                "changes"
            }
        );
    }
}

/// ` · <code>Deployment/ns/x</code>` after a file's name, or nothing for a
/// plain file whose only "object" is the file itself.
fn object_suffix(path: &str, o: &ObjectDiff, html: bool) -> String {
    let base = path.rsplit('/').next().unwrap_or(path);
    if o.name == base {
        return String::new();
    }
    if html {
        format!(" · {}", html_code(&o.name))
    } else {
        format!(" {}", code(&o.name))
    }
}

fn finding_line(out: &mut String, f: &LintFinding) {
    let loc = match (&f.file, f.line) {
        (Some(file), Some(l)) => format!(" {}", code(&format!("{file}:{l}"))),
        (Some(file), None) => format!(" {}", code(file)),
        _ => String::new(),
    };
    let rule = if f.code.is_empty() {
        String::new()
    } else {
        format!(" {}", code(&f.code))
    };
    let _ = writeln!(
        out,
        "- **{}**{rule}{loc}: {}",
        html_escape(&f.severity),
        md_text(&f.message)
    );
}

/// Text from a finding's message: no HTML, no line breaks, and markdown
/// that could restructure the list (links, emphasis) neutralised.
fn md_text(s: &str) -> String {
    // Also `|` and `#`: the text may stand in a table cell or start a line.
    escape::text(s).replace('|', "\\|").replace('#', "\\#")
}

fn findings_list(out: &mut String, list: &[LintFinding], more: &str) {
    for f in list.iter().take(MAX_FINDINGS_LISTED) {
        finding_line(out, f);
    }
    if list.len() > MAX_FINDINGS_LISTED {
        let _ = writeln!(
            out,
            "- … and {} more{more}",
            list.len() - MAX_FINDINGS_LISTED
        );
    }
}

fn severity_counts(list: &[LintFinding]) -> String {
    let e = list.iter().filter(|f| f.severity == "error").count();
    let w = list.iter().filter(|f| f.severity == "warning").count();
    format!(
        "{}, {}",
        plural(e, "error", "errors"),
        plural(w, "warning", "warnings")
    )
}

fn render_lint(out: &mut String, ctx: &Ctx) {
    match ctx.lint {
        LintView::All(lint) => {
            if lint.is_empty() {
                return;
            }
            let errors = lint.iter().any(|f| f.severity == "error");
            let _ = writeln!(
                out,
                "<details{}><summary>Lint findings ({})</summary>\n",
                // Errors are what a reviewer must see: shown open.
                if errors { " open" } else { "" },
                severity_counts(lint)
            );
            findings_list(out, lint, " (see the job summary)");
            out.push_str("\n</details>\n\n");
        }
        LintView::Relative(p) => {
            if p.new.is_empty() && p.fixed.is_empty() && p.existing.is_empty() {
                return;
            }
            let _ = writeln!(
                out,
                "#### Lint: {} new ({}), {} fixed, {} already in the base\n",
                thousands(p.new.len()),
                severity_counts(&p.new),
                thousands(p.fixed.len()),
                thousands(p.existing.len())
            );
            if !p.new.is_empty() {
                findings_list(out, &p.new, " (see the job summary)");
                out.push('\n');
            }
            if !p.fixed.is_empty() {
                let _ = writeln!(
                    out,
                    "<details><summary>Fixed by this pull request ({})</summary>\n",
                    thousands(p.fixed.len())
                );
                findings_list(out, &p.fixed, "");
                out.push_str("\n</details>\n\n");
            }
            if !p.existing.is_empty() {
                if ctx.compact {
                    let _ = writeln!(
                        out,
                        "{} that the base already had are not listed here: they are in the job summary and the `strata-review.md` artifact.\n",
                        plural(p.existing.len(), "finding", "findings")
                    );
                } else {
                    let _ = writeln!(
                        out,
                        "<details><summary>Already in the base ({})</summary>\n",
                        thousands(p.existing.len())
                    );
                    findings_list(out, &p.existing, "");
                    out.push_str("\n</details>\n\n");
                }
            }
        }
    }
}

fn render_targets(
    out: &mut String,
    ctx: &Ctx,
    omitted: &HashSet<(usize, usize, usize)>,
    detail: Detail,
) {
    let diff = ctx.diff;
    let _ = writeln!(out, "#### Per target\n");
    let mut all_grouped: Vec<&str> = Vec::new();
    // Few objects shown by groups: still named, with their group.
    let name_covered = !ctx.compact || ctx.covered.len() <= MAX_COVERED_NAMED;
    for (ti, t) in diff.targets.iter().enumerate() {
        let in_group = |fi: usize, oi: usize| -> Option<&Vec<usize>> {
            if ctx.compact {
                ctx.covered.get(&(ti, fi, oi))
            } else {
                None
            }
        };
        let shown: Vec<(usize, usize)> = t
            .files
            .iter()
            .enumerate()
            .flat_map(|(fi, f)| (0..f.objects.len()).map(move |oi| (fi, oi)))
            .filter(|(fi, oi)| name_covered || in_group(*fi, *oi).is_none())
            .collect();
        let objects: usize = t.files.iter().map(|f| f.objects.len()).sum();
        // A file renamed with its content unchanged has no object, so no
        // group shows it: it is listed here, or it would be shown nowhere.
        let bare: Vec<&crate::diff::FileDiff> =
            t.files.iter().filter(|f| f.objects.is_empty()).collect();
        if shown.is_empty() && bare.is_empty() {
            all_grouped.push(&t.name);
            continue;
        }
        match detail {
            Detail::Objects | Detail::Files => {
                let _ = writeln!(
                    out,
                    "<details><summary>{} ({}, {})</summary>\n",
                    html_code(&t.name),
                    t.status.as_str(),
                    files_count(t.files.len())
                );
                for f in &bare {
                    let path = match &f.old_path {
                        Some(old) => format!("{} → {}", code(old), code(&f.path)),
                        None => code(&f.path),
                    };
                    if detail == Detail::Files {
                        let _ = writeln!(out, "- {} {path} (content unchanged)", f.status.as_str());
                    } else {
                        let _ = writeln!(
                            out,
                            "**{}** {path} (content unchanged)\n",
                            f.status.as_str()
                        );
                    }
                }
                let mut last_file = None;
                for &(fi, oi) in &shown {
                    let f = &t.files[fi];
                    if detail == Detail::Files {
                        if last_file != Some(fi) {
                            let n = f.objects.len();
                            let _ = writeln!(
                                out,
                                "- {} {} ({})",
                                f.status.as_str(),
                                code(&f.path),
                                plural(n, "object", "objects")
                            );
                        }
                        last_file = Some(fi);
                        continue;
                    }
                    let o = &f.objects[oi];
                    let one_header = o.name == f.path.rsplit('/').next().unwrap_or(&f.path);
                    if last_file != Some(fi) {
                        // One header per file; a plain file's only "object"
                        // is the file itself, so it gets no second name.
                        let path = match &f.old_path {
                            Some(old) => format!("{} → {}", code(old), code(&f.path)),
                            None => code(&f.path),
                        };
                        let counts = if one_header {
                            format!(" (+{} −{})", o.added_lines, o.removed_lines)
                        } else {
                            String::new()
                        };
                        let _ = writeln!(out, "**{}** {path}{counts}\n", f.status.as_str());
                    }
                    last_file = Some(fi);
                    if !one_header {
                        let _ = write!(
                            out,
                            "{} ({}, +{} −{})",
                            code(&o.name),
                            o.status.as_str(),
                            o.added_lines,
                            o.removed_lines
                        );
                    }
                    if let Some(gs) = in_group(fi, oi) {
                        let gs: Vec<String> = gs.iter().map(|g| g.to_string()).collect();
                        let _ = writeln!(
                            out,
                            "{}as in group{} {} above\n",
                            if one_header { "" } else { ": " },
                            if gs.len() == 1 { "" } else { "s" },
                            gs.join(", ")
                        );
                    } else if omitted.contains(&(ti, fi, oi)) {
                        out.push_str(if one_header { "Diff" } else { ": diff" });
                        out.push_str(" left out to fit, see the job summary\n\n");
                    } else {
                        if !one_header {
                            out.push_str("\n\n");
                        }
                        out.push_str(&fence("diff", &t.files[fi].objects[oi].diff));
                        out.push('\n');
                    }
                }
                if shown.len() < objects {
                    let _ = writeln!(
                        out,
                        "\n{} whose changes are all in the groups above.",
                        plural(objects - shown.len(), "more object", "more objects")
                    );
                }
                out.push_str("\n</details>\n\n");
            }
            _ => {
                let _ = writeln!(
                    out,
                    "- {} ({}, {})",
                    code(&t.name),
                    t.status.as_str(),
                    files_count(t.files.len())
                );
            }
        }
    }
    if detail > Detail::Objects {
        out.push('\n');
    }
    if !all_grouped.is_empty() {
        let names: Vec<String> = all_grouped
            .iter()
            .take(MAX_GROUP_TARGETS * 2)
            .map(|t| code(t))
            .collect();
        let more = all_grouped.len().saturating_sub(MAX_GROUP_TARGETS * 2);
        let _ = writeln!(
            out,
            "Every change of {} is in the groups above: {}{}.\n",
            plural(all_grouped.len(), "target", "targets"),
            names.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        );
    }
}

/// One block per target whose apply order changed; the graphs go first
/// when the report has to shrink.
fn render_order(out: &mut String, order: &[OrderChange], detail: Detail) {
    for c in order {
        let n = c.moved.len();
        let _ = writeln!(
            out,
            "<details><summary>Apply order changed in {} ({n} change{} moved)</summary>\n",
            html_code(&c.target),
            if n == 1 { "" } else { "s" }
        );
        for m in c.moved.iter().take(MAX_OMITTED_LISTED) {
            let _ = writeln!(out, "- {}", code(m));
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
/// The notice may quote a server's answer (the 403 message): it is text,
/// not Markdown or HTML, and stays on its line.
pub fn with_notice(notice: &str, report: &str) -> String {
    format!("> [!NOTE]\n> {}\n\n{report}", md_text(notice))
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
            changes: Vec::new(),
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
                            // Distinct per object: nothing groups.
                            diff: format!("@@ -1 +1 @@\n-a: {t}-{f}\n+a: 2\n").repeat(5),
                            changes: Vec::new(),
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
        // The first 50 are shown by their groups' examples.
        assert_eq!(r.omitted.len(), 950);
        // 1,000 distinct changes: their 50 listed groups and the file
        // list do not fit together, so the per-target list is one line each.
        assert!(
            r.markdown
                .contains("**950 diffs left out, and the list of files**"),
            "{}",
            &r.markdown[..2000]
        );
        assert!(r.markdown.contains("#### What changed: 1,000 changes"));
        assert!(r
            .markdown
            .contains("… and 950 more changes (in the job summary)."));
        assert!(
            r.markdown.contains("- `target-199` (changed, 5 files)"),
            "every target listed"
        );
        let full = build(&d, &[], &Revisions::default(), None, usize::MAX);
        assert!(full
            .markdown
            .contains("**changed** `manifests/file-4.yaml`"));
    }

    /// compat34 (compat-review-hides-pure-rename): kapicorp/kapitan's
    /// tests/test_resources `external-test` target wrote `test2.md`
    /// instead of `test.md` (same content): the summary counted one file
    /// renamed, and the per-target section said "Every change of 1 target
    /// is in the groups above: `external-test`", where no group shows it.
    #[test]
    fn a_pure_rename_is_listed_under_its_target() {
        let mut d = CatalogDiff::default();
        d.targets.push(TargetDiff {
            name: "external-test".into(),
            status: Status::Changed,
            files: vec![FileDiff {
                path: "test2.md".into(),
                old_path: Some("test.md".into()),
                status: Status::Renamed,
                objects: Vec::new(),
            }],
        });
        d.summary.targets_changed = 1;
        d.summary.files_renamed = 1;
        let r = build(&d, &[], &Revisions::default(), None, usize::MAX);
        assert!(
            r.markdown
                .contains("**renamed** `test.md` → `test2.md` (content unchanged)"),
            "{}",
            r.markdown
        );
        assert!(
            !r.markdown.contains("is in the groups above"),
            "{}",
            r.markdown
        );
    }

    /// The issue's example: one owner annotation changed in 60
    /// Deployments of each of 17 targets.
    fn owner_change() -> CatalogDiff {
        let mut d = CatalogDiff::default();
        for t in 1..=17 {
            let files: Vec<FileDiff> = (0..60)
                .map(|i| FileDiff {
                    path: format!("apps/app-{i}.yaml"),
                    old_path: None,
                    status: Status::Changed,
                    objects: vec![ObjectDiff {
                        name: format!("Deployment/tenant/app-{i}"),
                        status: Status::Changed,
                        added_lines: 1,
                        removed_lines: 1,
                        diff: format!(
                            "@@ -3,5 +3,5 @@\n   annotations:\n-    owner: owner-1@example.invalid\n+    owner: platform-team@example.invalid\n   name: app-{i}\n"
                        ),
                        changes: vec![crate::diff::groups::Change {
                            path: "metadata.annotations.owner".into(),
                            old: Some("\"owner-1@example.invalid\"".into()),
                            new: Some("\"platform-team@example.invalid\"".into()),
                        }],
                    }],
                })
                .collect();
            d.summary.files_changed += files.len();
            d.summary.objects_changed += files.len();
            d.targets.push(TargetDiff {
                name: format!("cluster-{t:04}"),
                status: Status::Changed,
                files,
            });
        }
        d.summary.targets_changed = 17;
        d
    }

    #[test]
    fn one_change_in_many_objects_is_one_short_group() {
        let d = owner_change();
        let revs = Revisions {
            base_sha: Some("1111111aaaa".into()),
            head_sha: Some("2222222bbbb".into()),
            run_url: Some("https://github.com/o/r/actions/runs/5".into()),
        };
        let r = build(&d, &[], &revs, Some(DEFAULT_MARKER), COMMENT_LIMIT);
        let md = &r.markdown;
        assert!(md.len() < 4000, "{} bytes:\n{md}", md.len());
        assert!(
            md.contains("#### What changed: 1 change in 1,020 objects"),
            "{md}"
        );
        assert!(
            md.contains("`metadata.annotations.owner`: `\"owner-1@example.invalid\"` → `\"platform-team@example.invalid\"`"),
            "{md}"
        );
        assert!(
            md.contains("in 1,020 objects (`Deployment` ×1,020) across 17 targets: `cluster-0001`, `cluster-0002`, `cluster-0003`, `cluster-0004`, `cluster-0005`, and 12 more"),
            "{md}"
        );
        assert_eq!(md.matches("```diff").count(), 1, "one example diff");
        assert!(
            md.contains("Compared base `1111111` with head `2222222`"),
            "{md}"
        );
        assert!(md.contains("[job summary](https://github.com/o/r/actions/runs/5)"));
        assert!(r.omitted.is_empty());
        // The job summary keeps every diff.
        let full = build(&d, &[], &revs, None, usize::MAX);
        assert_eq!(full.markdown.matches("```diff").count(), 1021);
    }

    fn finding(sev: &str, code: &str, file: &str, line: usize, msg: &str) -> LintFinding {
        LintFinding {
            severity: sev.into(),
            code: code.into(),
            message: msg.into(),
            file: Some(file.into()),
            line: Some(line),
            hints: Vec::new(),
        }
    }

    #[test]
    fn lint_relative_to_base() {
        let base: Vec<LintFinding> = (0..59)
            .map(|i| {
                finding(
                    "warning",
                    "unused-class",
                    &format!("classes/c{i}.yml"),
                    1,
                    &format!("class `c{i}` is not used by any target"),
                )
            })
            .chain([finding(
                "error",
                "class-not-found",
                "targets/a.yml",
                3,
                "class `gone` not found",
            )])
            .collect();
        let mut head: Vec<LintFinding> = base[..59]
            .iter()
            .map(|f| LintFinding {
                line: Some(9),
                ..f.clone()
            })
            .collect();
        head.push(finding(
            "error",
            "plaintext-secret",
            "classes/new.yml",
            2,
            "plaintext <b>secret</b> under `password`",
        ));
        let r = build_review(
            &owner_change(),
            &head,
            Some(&base),
            &[],
            &Revisions::default(),
            Some(DEFAULT_MARKER),
            COMMENT_LIMIT,
        );
        let md = &r.markdown;
        assert!(
            md.contains("#### Lint: 1 new (1 error, 0 warnings), 1 fixed, 59 already in the base"),
            "{md}"
        );
        assert!(md.contains("plaintext &lt;b&gt;secret&lt;/b&gt;"), "{md}");
        assert!(
            !md.contains("c17"),
            "existing findings are not listed in the comment"
        );
        assert!(md.contains("59 findings that the base already had are not listed here"));
        assert!(
            md.contains("| 1 | 0 |"),
            "the table counts the new findings: {md}"
        );
        let full = build_review(
            &owner_change(),
            &head,
            Some(&base),
            &[],
            &Revisions::default(),
            None,
            usize::MAX,
        );
        assert!(full.markdown.contains("Already in the base (59)"));
        assert!(
            full.markdown.contains("class \\`c17\\`") || full.markdown.contains("`c17`"),
            "{}",
            full.markdown
        );
    }

    #[test]
    fn groups_and_summary_outlast_every_other_detail() {
        // 60 distinct changes, each with a 4 KiB example: with the
        // per-target details gone the examples alone are too long.
        let mut d = CatalogDiff::default();
        for t in 0..60 {
            let body: String = (0..200).map(|i| format!(" line {i:04}\n")).collect();
            d.targets.push(TargetDiff {
                name: format!("t{t:02}"),
                status: Status::Changed,
                files: vec![FileDiff {
                    path: "f.yaml".into(),
                    old_path: None,
                    status: Status::Changed,
                    objects: vec![ObjectDiff {
                        name: "ConfigMap/ns/c".into(),
                        status: Status::Changed,
                        added_lines: 1,
                        removed_lines: 1,
                        diff: format!("@@ -1 +1 @@\n-v: {t}\n+v: x{t}\n{body}"),
                        changes: vec![crate::diff::groups::Change {
                            path: "data.v".into(),
                            old: Some(format!("{t}")),
                            new: Some(format!("\"x{t}\"")),
                        }],
                    }],
                }],
            });
        }
        d.summary.targets_changed = 60;
        let r = build(&d, &[], &Revisions::default(), Some(DEFAULT_MARKER), 30_000);
        let md = &r.markdown;
        assert!(md.len() <= 30_000);
        assert!(md.contains("| 60 |"), "the summary stays");
        assert!(
            md.contains("the per-target details and the groups' example diffs**"),
            "{}",
            &md[..1500]
        );
        assert!(
            md.contains("**50.** `data.v`: `49` → `\"x49\"`"),
            "every listed group stays"
        );
        assert!(md.contains("… and 10 more changes (in the job summary)."));
        assert!(!md.contains("```diff") && !md.contains("#### Per target"));
        assert!(!md.contains("cut here"), "no blind cut was needed");
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
