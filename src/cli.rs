//! Command-line definition and the one place that turns results into exit
//! codes and rendered messages: 0 ok, 1 a check found something, 2 an error.

use crate::commands;
use crate::diagnostics::Diagnostic;
use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Debug, Parser)]
#[command(
    name = "strata",
    version,
    about = "Kapitan/reclass-compatible inventories and catalogs, fast",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Render the inventory (reclass semantics) and print every target
    Inventory(commands::inventory::InventoryArgs),
    /// Carvel packages: list, resolve and render PackageInstalls; Commodore config packages: compile
    Package(commands::package::PackageArgs),
    /// Compile targets into a catalog (Kapitan-compatible `compile`)
    Compile(commands::compile::CompileArgs),
    /// Order Kubernetes resources the way kapp applies them (change groups and rules)
    Order(commands::order::OrderArgs),
    /// Commit a compiled catalog to the catalog repository and push it
    Push(commands::push::PushArgs),
    /// Diff two compiled catalogs per target, file and Kubernetes object
    Diff(commands::diff::DiffArgs),
    /// Lint the inventory (and optionally a compiled catalog)
    Lint(commands::lint::LintArgs),
    /// Post the diff and lint findings on the pull request as one comment, kept up to date
    Comment(commands::comment::CommentArgs),
    /// Render ytt-style templates, data values and overlays (ytt flags)
    Template(Box<commands::template::TemplateArgs>),
    /// Fetch git dependencies into dependencies/ (or jsonnet-bundler ones into vendor/)
    Fetch(commands::fetch::FetchArgs),
    /// Commodore-compatible cluster catalogs (`catalog compile <cluster-id>`)
    Catalog(commands::catalog::CatalogArgs),
    /// Commodore component authors: `component compile PATH` with golden tests
    Component(commands::component::ComponentArgs),
    /// Git hooks: `hooks install` puts strata's pre-commit hook in place
    Hooks(commands::hooks::HooksArgs),
    /// Print a shell completion script (bash, zsh or fish)
    Completions(commands::completions::CompletionsArgs),
    /// Kapitan secret references: write, reveal and re-encrypt (`?{type:path}`)
    Refs(commands::refs::RefsArgs),
    /// Do what the GitHub Actions event calls for: review a pull request, publish on push, else compile and lint
    Ci(commands::ci::CiArgs),
    /// Build the pull-request review locally: compile base and head from git, diff, lint, print the comment
    Review(commands::review::ReviewArgs),
}

/// Exit code for "a check found something" (diff in --check, lint errors).
pub const EXIT_FINDINGS: u8 = 1;
/// Exit code for any error.
pub const EXIT_ERROR: u8 = 2;

pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_ERROR } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    if let Some(bad) = crate::limits::first_invalid() {
        eprintln!("error: {bad}");
        return ExitCode::from(EXIT_ERROR);
    }
    // Parallel walks (renders, diffs, redaction) recurse as deep as the
    // values they read, up to the YAML readers' 256 levels: rayon's 2 MiB
    // default stacks overflowed on a 200-level map in a debug build.
    let _ = rayon::ThreadPoolBuilder::new()
        .stack_size(64 << 20)
        .build_global();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            let text = actions_safe(&render_error(&e)).into_owned();
            if color_for(&std::io::stderr()) {
                eprint!("{}", colorize(&text));
            } else {
                eprint!("{text}");
            }
            ExitCode::from(EXIT_ERROR)
        }
    }
}

/// Whether to colour what goes to `stream`: a terminal, and `NO_COLOR`
/// unset or empty (<https://no-color.org>).
pub fn color_for(stream: &impl std::io::IsTerminal) -> bool {
    stream.is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Colours rendered diagnostics line by line, like rustc: `error` red,
/// `warning` yellow, `hint:` cyan, locations blue; other lines unchanged.
pub fn colorize(text: &str) -> String {
    const RESET: &str = "\x1b[0m";
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        let styled = [
            ("error", "\x1b[1;31m"),
            ("warning", "\x1b[1;33m"),
            ("note", "\x1b[1;36m"),
            ("hint:", "\x1b[1;36m"),
            ("  --> ", "\x1b[34m"),
            ("  at: ", "\x1b[34m"),
        ]
        .iter()
        .find_map(|(p, c)| {
            let rest = body.strip_prefix(p)?;
            // `error: ...` and `error[rule]: ...`, not a word starting so.
            let head_len = if p.ends_with(' ') || p.ends_with(':') {
                p.len()
            } else if rest.starts_with(':') {
                p.len() + 1
            } else if rest.starts_with('[') {
                p.len() + rest.find("]:")? + 2
            } else {
                return None;
            };
            Some(format!(
                "{c}{}{RESET}{}",
                &body[..head_len],
                &body[head_len..]
            ))
        });
        out.push_str(styled.as_deref().unwrap_or(body));
        out.push_str(nl);
    }
    out
}

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Inventory(args) => commands::inventory::run(args),
        Command::Package(args) => commands::package::run(args),
        Command::Compile(args) => commands::compile::run(args),
        Command::Order(args) => commands::order::run(args),
        Command::Push(args) => commands::push::run(args),
        Command::Diff(args) => commands::diff::run(args),
        Command::Lint(args) => commands::lint::run(args),
        Command::Comment(args) => commands::comment::run(args),
        Command::Template(args) => commands::template::run(*args),
        Command::Fetch(args) => commands::fetch::run(args),
        Command::Catalog(args) => commands::catalog::run(args),
        Command::Component(args) => commands::component::run(args),
        Command::Hooks(args) => commands::hooks::run(args),
        Command::Completions(args) => commands::completions::run(args),
        Command::Ci(args) => commands::ci::run(args),
        Command::Refs(args) => commands::refs::run(args),
        Command::Review(args) => commands::review::run(args),
    }
}

/// An error carrying a full diagnostic through `anyhow` to the renderer.
#[derive(Debug)]
pub struct DiagnosticError(pub Diagnostic);

impl std::fmt::Display for DiagnosticError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.message)
    }
}

impl std::error::Error for DiagnosticError {}

/// Wraps any core error that can describe itself as a diagnostic.
pub fn diag_err<E: crate::diagnostics::ToDiagnostic>(e: E) -> anyhow::Error {
    anyhow::Error::new(DiagnosticError(e.to_diagnostic()))
}

/// Renders an error as `error: ...` with location and `hint:` lines.
pub fn render_error(e: &anyhow::Error) -> String {
    if let Some(DiagnosticError(d)) = e.downcast_ref::<DiagnosticError>() {
        return render_diagnostic(d);
    }
    inert(format!("error: {e:#}\n"))
}

/// `text` with its control and bidirectional characters escaped (`\u{1b}`,
/// `\r`, `\0`), line breaks and tabs kept: an error quotes what the
/// inventory wrote (an input path, a reference), and an ESC, CR or NUL there
/// went to the terminal and the job log raw (probe 37: `input_paths:
/// ["\e[2J..."]` cleared the screen).
pub fn inert(text: String) -> String {
    if !text
        .chars()
        .any(|c| c != '\n' && c != '\t' && crate::diagnostics::must_escape(c))
    {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c != '\n' && c != '\t' && crate::diagnostics::must_escape(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod inert_tests {
    #[test]
    fn errors_show_control_characters_escaped() {
        let e = anyhow::anyhow!(
            "input `\x1b]0;t\x07\x1b[2Jx\r::error::hi\0y\u{202e}` not found\nnext line\tend"
        );
        let t = super::render_error(&e);
        assert_eq!(
            t,
            "error: input `\\u{1b}]0;t\\u{7}\\u{1b}[2Jx\\r::error::hi\\u{0}y\\u{202e}` not found\nnext line\tend\n"
        );
        let d = crate::diagnostics::Diagnostic::error("key `a\x1b[2J` not found")
            .with_hint("define `a\r`");
        assert_eq!(
            super::render_diagnostic(&d),
            "error: key `a\\u{1b}[2J` not found\nhint: define `a\\r`\n"
        );
    }
}

#[cfg(test)]
mod color_tests {
    #[test]
    fn colours_the_heads_of_diagnostic_lines_only() {
        let t = "error[unused-class]: class `a`\n  --> a.yml:3\nhint: remove it\nerrors are fine\nwarning: w";
        let c = super::colorize(t);
        assert_eq!(
            c,
            "\x1b[1;31merror[unused-class]:\x1b[0m class `a`\n\x1b[34m  --> \x1b[0ma.yml:3\n\x1b[1;36mhint:\x1b[0m remove it\nerrors are fine\n\x1b[1;33mwarning:\x1b[0m w"
        );
    }
}

#[cfg(test)]
use crate::diagnostics::neutralize_commands;
pub use crate::diagnostics::{actions_safe, in_actions};

/// `eprintln!` through [`actions_safe`]: what commands print on stderr
/// may quote a pull request's content. Imported by the commands in place
/// of the standard macro.
macro_rules! eprintln {
    () => {
        ::std::eprintln!()
    };
    ($($arg:tt)*) => {
        ::std::eprint!(
            "{}\n",
            $crate::cli::actions_safe(&$crate::cli::inert(::std::format!($($arg)*)))
        )
    };
}
pub(crate) use eprintln;

/// `println!` through [`actions_safe`] (see [`eprintln`]).
macro_rules! println {
    () => {
        ::std::println!()
    };
    ($($arg:tt)*) => {
        ::std::print!("{}\n", $crate::cli::actions_safe(&::std::format!($($arg)*)))
    };
}
pub(crate) use println;

/// Human rendering of one diagnostic.
pub fn render_diagnostic(d: &Diagnostic) -> String {
    let mut out = format!("{}: {}\n", d.severity, d.message);
    if let Some(file) = &d.file {
        match d.line {
            Some(line) => out.push_str(&format!("  --> {}:{}\n", file.display(), line)),
            None => out.push_str(&format!("  --> {}\n", file.display())),
        }
    }
    if let Some(p) = &d.param_path {
        out.push_str(&format!("  at: {p}\n"));
    }
    for h in &d.hints {
        out.push_str(&format!("hint: {h}\n"));
    }
    inert(out)
}

/// GitHub Actions workflow-command rendering of one diagnostic.
pub fn render_github(d: &Diagnostic) -> String {
    let level = match d.severity {
        crate::diagnostics::Severity::Error => "error",
        crate::diagnostics::Severity::Warning => "warning",
        crate::diagnostics::Severity::Info => "notice",
    };
    let mut props = Vec::new();
    if let Some(f) = &d.file {
        props.push(format!(
            "file={}",
            escape_property(&f.display().to_string())
        ));
    }
    if let Some(l) = d.line {
        props.push(format!("line={l}"));
    }
    if !d.code.is_empty() {
        props.push(format!("title={}", escape_property(&d.code)));
    }
    let mut msg = d.message.clone();
    if let Some(p) = &d.param_path {
        msg.push_str(&format!(" (at {p})"));
    }
    // GitHub shows the message on the pull request's files and checks as
    // written: a bidirectional control a class name or a value carried
    // reordered the text there (probe 38), where the log, the comment and
    // the text output show it escaped. The file property stays exact: it
    // places the annotation.
    format!(
        "::{level} {}::{}\n",
        props.join(","),
        escape_data(&inert(msg))
    )
}

fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_location_and_hints() {
        let d = Diagnostic::error("class not found: `a.b`")
            .with_file("inventory/targets/t.yml")
            .with_line(3)
            .with_param_path("parameters.x")
            .with_hint("create classes/a/b.yml");
        assert_eq!(
            render_diagnostic(&d),
            "error: class not found: `a.b`\n  --> inventory/targets/t.yml:3\n  at: parameters.x\nhint: create classes/a/b.yml\n"
        );
        assert_eq!(
            render_github(&d),
            "::error file=inventory/targets/t.yml,line=3::class not found: `a.b` (at parameters.x)\n"
        );
    }

    /// Probe 38 (annotation-message-bidi-raw): `lint --format github` and
    /// `ci` wrote a class name's U+202E (and ESC) raw into the annotation
    /// GitHub shows on the pull request.
    #[test]
    fn annotations_show_control_and_bidi_characters_escaped() {
        let d = Diagnostic::error("class not found: `fix\u{202e}yrt\u{1b}[2K`\nsecond")
            .with_file("inventory/targets/t.yml")
            .with_line(2);
        let out = render_github(&d);
        assert_eq!(
            out,
            "::error file=inventory/targets/t.yml,line=2::class not found: `fix\\u{202e}yrt\\u{1b}[2K`%0Asecond\n"
        );
    }

    #[test]
    fn workflow_commands_in_printed_text_are_made_inert() {
        let text = "a\n   ::error file=x::fake\n::add-mask::y\nkeep :: this\nv: \"##[warning]x\"\nname\r::error::cr\n";
        let out = neutralize_commands(text);
        for line in out.split(['\n', '\r']) {
            assert!(!line.trim_start().starts_with("::"), "{out}");
            assert!(!line.contains("##["), "{out}");
        }
        assert_eq!(out.replace('\u{200B}', ""), text);
        assert!(matches!(
            neutralize_commands("plain\n"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
