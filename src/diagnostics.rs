//! Diagnostics: what the core reports to the user (errors, warnings, lint
//! findings), with where it happened and how to fix it. The CLI renders
//! them as text, JSON or GitHub annotations; the core never prints.

use serde::Serialize;
use std::fmt;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

/// One finding: a message, where it is, and hints on what to do.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnostic {
    pub severity: Severity,
    /// A stable id for lint rules (e.g. `unused-class`); empty for plain errors.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub code: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// A parameter path such as `parameters.a.b`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub param_path: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hints: Vec<String>,
}

impl Diagnostic {
    pub fn new(severity: Severity, message: impl Into<String>) -> Self {
        Diagnostic {
            severity,
            code: String::new(),
            message: message.into(),
            file: None,
            line: None,
            param_path: None,
            hints: Vec::new(),
        }
    }

    pub fn error(message: impl Into<String>) -> Self {
        Self::new(Severity::Error, message)
    }

    pub fn warning(message: impl Into<String>) -> Self {
        Self::new(Severity::Warning, message)
    }

    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.code = code.into();
        self
    }

    pub fn with_file(mut self, file: impl Into<PathBuf>) -> Self {
        self.file = Some(file.into());
        self
    }

    pub fn with_line(mut self, line: usize) -> Self {
        self.line = Some(line);
        self
    }

    pub fn with_param_path(mut self, path: impl Into<String>) -> Self {
        self.param_path = Some(path.into());
        self
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hints.push(hint.into());
        self
    }
}

/// Errors that know how to describe themselves as a diagnostic.
pub trait ToDiagnostic {
    fn to_diagnostic(&self) -> Diagnostic;
}

impl ToDiagnostic for crate::error::Error {
    fn to_diagnostic(&self) -> Diagnostic {
        match self {
            crate::error::Error::Io { path, .. } => {
                Diagnostic::error(self.to_string()).with_file(path)
            }
            crate::error::Error::Yaml { path, source } => Diagnostic::error(self.to_string())
                .with_file(path)
                .with_line(source.line)
                .with_hint("fix the YAML syntax at that line"),
        }
    }
}

/// A filter for what the programs a compile runs print besides their
/// results (`std.trace`, the prints of Jinja2 filters and kadet inputs).
pub type OutputFilter = std::sync::Arc<dyn Fn(&str) -> String + Send + Sync>;

static PROGRAM_OUTPUT: std::sync::RwLock<Option<OutputFilter>> = std::sync::RwLock::new(None);

/// Passes a compile's program output to the user (stderr, as Kapitan's
/// jsonnet and Python do). It is the one place such output leaves strata:
/// the programs print while they run, long before the CLI could render
/// anything, and a review's log must go through [`filter_program_output`]'s
/// filter first.
pub fn program_output(text: &str) {
    program_output_cut(text, 0, "");
}

/// [`program_output`] of a piece of a line cut short: the piece is
/// filtered first, then its last `drop` bytes are dropped (where a value
/// may begin that the cut split, which the filter could not recognise)
/// and `note` is said instead.
pub fn program_output_cut(text: &str, drop: usize, note: &str) {
    match admit(
        &PROGRAM_OUTPUT_SENT,
        &PROGRAM_OUTPUT_NOTED,
        text.len(),
        MAX_PROGRAM_OUTPUT,
    ) {
        Admit::Show => {}
        Admit::Note => {
            eprintln!(
                "… (the compile's programs printed more than {MAX_PROGRAM_OUTPUT} bytes (std.trace, kadet, Python filters): the rest is not shown)"
            );
            return;
        }
        Admit::Drop => return,
    }
    let filter = PROGRAM_OUTPUT.read().ok().and_then(|f| f.clone());
    eprint!(
        "{}",
        actions_safe(&shown_output(text, filter.as_ref(), drop, note))
    );
}

/// What program output one run passes on in all: `std.trace` in a fold
/// (150 bytes of jsonnet) wrote 3.5 GB into the log in the 60 s the
/// evaluation may run (probe 37).
const MAX_PROGRAM_OUTPUT: usize = 64 << 20;

static PROGRAM_OUTPUT_SENT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static PROGRAM_OUTPUT_NOTED: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

#[derive(Debug, PartialEq, Eq)]
enum Admit {
    Show,
    /// The first piece past the limit: say so, once.
    Note,
    Drop,
}

/// Counts `n` more bytes against `limit` in `sent`; the piece that
/// crosses the limit is still shown, the next one is the note.
fn admit(
    sent: &std::sync::atomic::AtomicUsize,
    noted: &std::sync::atomic::AtomicBool,
    n: usize,
    limit: usize,
) -> Admit {
    use std::sync::atomic::Ordering::Relaxed;
    if sent.fetch_add(n, Relaxed) < limit {
        Admit::Show
    } else if !noted.swap(true, Relaxed) {
        Admit::Note
    } else {
        Admit::Drop
    }
}

/// What [`program_output_cut`] prints, before it is made inert for Actions.
fn shown_output<'a>(
    text: &'a str,
    filter: Option<&OutputFilter>,
    drop: usize,
    note: &str,
) -> std::borrow::Cow<'a, str> {
    let mut shown = match filter {
        Some(f) => std::borrow::Cow::Owned(f(text)),
        None => std::borrow::Cow::Borrowed(text),
    };
    if drop > 0 {
        let mut at = shown.len().saturating_sub(drop);
        while !shown.is_char_boundary(at) {
            at -= 1;
        }
        shown = std::borrow::Cow::Owned(format!("{}{note}", &shown[..at]));
    }
    shown
}

/// Filters [`program_output`] until the guard drops (the previous filter
/// then comes back).
pub fn filter_program_output(filter: OutputFilter) -> ProgramOutputFilter {
    let previous = PROGRAM_OUTPUT
        .write()
        .map(|mut f| f.replace(filter))
        .unwrap_or(None);
    ProgramOutputFilter { previous }
}

/// See [`filter_program_output`].
pub struct ProgramOutputFilter {
    previous: Option<OutputFilter>,
}

impl Drop for ProgramOutputFilter {
    fn drop(&mut self) {
        if let Ok(mut f) = PROGRAM_OUTPUT.write() {
            *f = self.previous.take();
        }
    }
}

/// Whether strata runs in a GitHub Actions job, whose runner reads the
/// job's output for workflow commands.
pub fn in_actions() -> bool {
    static IN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *IN.get_or_init(|| std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true"))
}

/// Whether `c` is shown escaped in a value someone else chose: a control
/// character (it can drive the terminal or start a line), a line or
/// paragraph separator, or a bidirectional control (U+202A-U+202E,
/// U+2066-U+2069, U+200E/U+200F, U+061C), which reorders what follows it
/// on screen, so `reason: ok` can read as something else ("Trojan Source";
/// a Lieutenant API `reason` kept them, re-probe 18), or an invisible
/// character (see [`is_invisible`]).
pub fn must_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}'
                | '\u{2029}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2066}'..='\u{2069}'
                | '\u{200E}'
                | '\u{200F}'
                | '\u{061C}'
        )
        || is_invisible(c)
}

/// A character that takes no room on screen: zero-width spaces and
/// joiners, the word joiner and invisible operators, the byte-order mark,
/// the soft hyphen, Hangul fillers, Unicode tag characters. Inside a name
/// or a changed line it makes two different texts look the same: a target
/// `prod\u{200b}` beside `prod`, a value `"true\u{200b}"` shown as
/// `"true"` on both sides of a diff (probe 38,
/// invisible-characters-shown-raw). An emoji joined with U+200D is shown
/// with the joiner escaped too.
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{115F}'
            | '\u{1160}'
            | '\u{17B4}'
            | '\u{17B5}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200D}'
            | '\u{2060}'..='\u{2064}'
            | '\u{206A}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{E0000}'..='\u{E007F}'
    )
}

/// `text` with its control characters escaped (`\n`, `\u{1b}`, `\u{202e}`;
/// [`must_escape`]): a value a server or an inventory chose, shown on one
/// line that cannot drive the terminal, start a line of its own or reorder
/// what is shown.
pub fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(must_escape) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if must_escape(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// `text` made inert for a GitHub Actions log: the runner runs a line that
/// starts with `::` (after spaces) as a workflow command (`::error`,
/// `::add-mask`, `::stop-commands`) and one holding `##[` as a legacy one,
/// and a pull request controls much of what strata prints (diff lines,
/// file names, error messages). A zero-width space goes between the two
/// characters; the text reads the same. Outside Actions, unchanged.
pub fn actions_safe(text: &str) -> std::borrow::Cow<'_, str> {
    if !in_actions() {
        return std::borrow::Cow::Borrowed(text);
    }
    neutralize_commands(text)
}

pub(crate) fn neutralize_commands(text: &str) -> std::borrow::Cow<'_, str> {
    // The runner splits the log at `\r` as well as `\n`: a file name
    // holding a carriage return starts a line there.
    let breaks = ['\n', '\r'];
    let risky =
        text.contains("##[") || text.split(breaks).any(|l| l.trim_start().starts_with("::"));
    if !risky {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for line in text.split_inclusive(breaks) {
        let line = line.replace("##[", "#\u{200B}#[");
        let indent = line.len() - line.trim_start().len();
        if line[indent..].starts_with("::") {
            out.push_str(&line[..indent + 1]);
            out.push('\u{200B}');
            out.push_str(&line[indent + 1..]);
        } else {
            out.push_str(&line);
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn program_output_stops_after_the_limit_with_one_note() {
        use super::{admit, Admit};
        let (sent, noted) = (
            std::sync::atomic::AtomicUsize::new(0),
            std::sync::atomic::AtomicBool::new(false),
        );
        let got: Vec<Admit> = (0..6).map(|_| admit(&sent, &noted, 400, 1000)).collect();
        assert_eq!(
            got,
            [
                Admit::Show,
                Admit::Show,
                Admit::Show,
                Admit::Note,
                Admit::Drop,
                Admit::Drop
            ]
        );
    }

    use super::*;

    /// Re-probe 16: a cut line is masked whole first, then its tail goes,
    /// so a value the cut split shows none of its start.
    /// Re-probe 18 (dependency-url-error-not-escaped): a URL an inventory
    /// chose stays on one line.
    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(
            escape_controls("https://h/f\n::error::x\r\nX: y\u{1b}[2J"),
            "https://h/f\\n::error::x\\r\\nX: y\\u{1b}[2J"
        );
        assert!(matches!(
            escape_controls("plain"),
            std::borrow::Cow::Borrowed("plain")
        ));
    }

    /// Probe 38 (invisible-characters-shown-raw): a zero-width space,
    /// joiner, word joiner, BOM or tag character in a name or a changed
    /// line was shown as nothing, so `prod\u{200b}` read as `prod`.
    #[test]
    fn invisible_characters_are_escaped() {
        assert_eq!(
            escape_controls("prod\u{200B} a\u{200D}b\u{2060}c\u{FEFF}d\u{AD}e\u{E0041}"),
            "prod\\u{200b} a\\u{200d}b\\u{2060}c\\u{feff}d\\u{ad}e\\u{e0041}"
        );
    }

    /// Re-probe 18 (lieutenant-reason-keeps-bidi-controls): a value shown
    /// on the terminal kept U+202E and the other bidirectional controls,
    /// which reorder what follows them; they are escaped, other text past
    /// ASCII is not.
    #[test]
    fn bidirectional_controls_are_escaped() {
        assert_eq!(
            escape_controls("ok \u{202E}gnp.exe\u{202C} \u{2066}a\u{2069}\u{200F}\u{061C}\u{2028}"),
            "ok \\u{202e}gnp.exe\\u{202c} \\u{2066}a\\u{2069}\\u{200f}\\u{61c}\\u{2028}"
        );
        for c in ('\u{202A}'..='\u{202E}').chain('\u{2066}'..='\u{2069}') {
            assert!(must_escape(c), "{:x}", c as u32);
        }
        assert!(matches!(
            escape_controls("café 名前 ü 👍 ä"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn cut_output_is_masked_before_its_tail_is_dropped() {
        let filter: OutputFilter =
            std::sync::Arc::new(|t: &str| t.replace("SECRETVALUE", "<redacted>"));
        let split = format!("{}SECRET", "B".repeat(250));
        assert_eq!(
            shown_output(&split, Some(&filter), 16, "…\n"),
            format!("{}…\n", "B".repeat(240))
        );
        let whole = format!("{}SECRETVALUE{}", "A".repeat(10), "é".repeat(150));
        let shown = shown_output(&whole, Some(&filter), 16, "…\n");
        assert!(
            shown.starts_with(&format!("{}<redacted>é", "A".repeat(10))),
            "{shown}"
        );
        assert!(
            shown.ends_with("é…\n") && shown.len() < whole.len(),
            "{shown}"
        );
        assert_eq!(shown_output("plain\n", None, 0, ""), "plain\n");
    }
}
