//! Typed inventory errors. Each names the file (and line) and, where there
//! is one, the parameter path, and knows the hint that helps fix it.

use crate::diagnostics::{Diagnostic, ToDiagnostic};
use std::path::PathBuf;

#[derive(Debug, Clone, thiserror::Error)]
pub enum InventoryError {
    #[error("inventory directory {} not found", path.display())]
    NoInventory { path: PathBuf },

    #[error("cannot read {}: {message}", path.display())]
    Io { path: PathBuf, message: String },

    /// A configuration file's value of the wrong type or range.
    #[error("{}: {message}", path.display())]
    Config { path: PathBuf, message: String },

    #[error("invalid yaml in {}:{line}:{col}: {message}", path.display())]
    Yaml {
        path: PathBuf,
        line: usize,
        col: usize,
        message: String,
    },

    #[error("{kind} `{name}` collides: it is defined in both {} and {}", first.display(), second.display())]
    Collides {
        kind: &'static str,
        name: String,
        first: PathBuf,
        second: PathBuf,
    },

    #[error("{what} in {}:{line}: expected a {expected}, found {found}", path.display())]
    Shape {
        path: PathBuf,
        line: usize,
        what: String,
        expected: &'static str,
        found: &'static str,
    },

    #[error("class not found: `{class}` (included from {}:{line})", from.display())]
    ClassNotFound {
        class: String,
        from: PathBuf,
        line: usize,
    },

    #[error("a class name (included from {}:{line}) interpolates to {len} bytes (`{class}`), more than a class name can be ({limit} bytes, a file path)", from.display())]
    ClassNameTooLong {
        class: String,
        len: usize,
        limit: usize,
        from: PathBuf,
        line: usize,
    },

    #[error("class pattern `{pattern}` did not match any classes (in {})", from.display())]
    PatternNoMatch { pattern: String, from: PathBuf },

    #[error("invalid class pattern `{pattern}` in {}: {message}", from.display())]
    BadPattern {
        pattern: String,
        from: PathBuf,
        message: String,
    },

    #[error("class include cycle: {chain} (in {}:{line})", from.display())]
    ClassCycle {
        chain: String,
        from: PathBuf,
        line: usize,
    },

    #[error("cannot change constant key parameters.{key}: set in {first} and again in {second}")]
    Constant {
        key: String,
        first: String,
        second: String,
    },

    #[error("cannot merge {new} over {old} at parameters.{key}: the {old} comes from {old_origin}, the {new} from {new_origin}")]
    Merge {
        key: String,
        old: &'static str,
        new: &'static str,
        old_origin: String,
        new_origin: String,
    },

    #[error(
        "cannot resolve reference `{reference}` in {} ({origin}): {reason}",
        reference_place(param)
    )]
    Unresolved {
        reference: String,
        param: String,
        origin: String,
        reason: String,
    },

    #[error("references at parameters.{param} expand to more than {limit} bytes: a reference is copied too often (a reference bomb?)")]
    TooLarge { param: String, limit: usize },

    #[error("the targets rendered so far take more than {limit} bytes together, this one {size} (parameters.{param}: {param_size}): a class that copies a large value into every target? Render fewer targets, or raise STRATA_RENDER_MEMORY")]
    RenderedTooLarge {
        limit: usize,
        size: usize,
        param: String,
        param_size: usize,
    },

    #[error("not rendered: the targets before it (in name order) already take more than {limit} bytes together (see the first target that failed): raise STRATA_RENDER_MEMORY if they are right")]
    RenderedAfterLimit { limit: usize },

    #[error("resolving parameters.{param} took more than {limit} reference lookups: look for a reference loop through overriding classes")]
    TooManyLookups { param: String, limit: usize },

    #[error("resolving parameters.{param} brought the reference lookups of all targets together past {limit} (each target may make 1000000): look up fewer references in the classes many targets include, or raise STRATA_MAX_RENDER_LOOKUPS")]
    TooManyRenderLookups { param: String, limit: usize },

    #[error("references at parameters.{param} build a value nested deeper than {limit} levels")]
    ValueTooDeep { param: String, limit: usize },

    #[error("references nest deeper than {limit} levels at parameters.{param}: {chain}")]
    RefTooDeep {
        param: String,
        chain: String,
        limit: usize,
    },

    #[error("reference loop at parameters.{param}: {chain}")]
    Loop { param: String, chain: String },

    #[error("invalid reference in {origin}: {message}")]
    RefSyntax { origin: String, message: String },

    #[error("invalid regular expression `{regex}` for ignore_class_notfound_regexp: {message}")]
    BadRegex { regex: String, message: String },

    #[error("{} leads outside the repository (through a symlink, or an inventory path set outside it): a review reads only the repository's own files", path.display())]
    OutsideTree { path: PathBuf },

    #[error("invalid target name {name:?} from {}: {reason}", path.display())]
    BadTargetName {
        path: PathBuf,
        name: String,
        reason: &'static str,
    },

    #[error("unknown top-level key `{key}` in {}:{line}{}", path.display(), suggestion.map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default())]
    UnknownKey {
        path: PathBuf,
        line: usize,
        key: String,
        suggestion: Option<&'static str>,
    },

    #[error("classes nest deeper than {limit} levels at `{class}` (included from {}:{line})", from.display())]
    ClassTooDeep {
        class: String,
        from: PathBuf,
        line: usize,
        limit: usize,
    },

    #[error("{}: class_mappings entry `{entry}`: {message}", path.display())]
    BadClassMapping {
        path: PathBuf,
        entry: String,
        message: String,
    },

    #[error("{}: unsupported key `{key}`: {message}", path.display())]
    UnsupportedConfig {
        path: PathBuf,
        key: String,
        message: String,
    },

    #[error("unknown target `{name}`")]
    UnknownTarget { name: String, known: Vec<String> },

    #[error("target `{target}`: {source}")]
    InTarget {
        target: String,
        #[source]
        source: Box<InventoryError>,
    },
}

impl InventoryError {
    pub fn in_target(self, target: &str) -> Self {
        match self {
            e @ InventoryError::InTarget { .. } => e,
            e => InventoryError::InTarget {
                target: target.to_string(),
                source: Box::new(e),
            },
        }
    }

    /// The error without the target wrapper.
    pub fn root(&self) -> &InventoryError {
        match self {
            InventoryError::InTarget { source, .. } => source.root(),
            e => e,
        }
    }
}

impl ToDiagnostic for InventoryError {
    fn to_diagnostic(&self) -> Diagnostic {
        let mut d = Diagnostic::error(self.to_string());
        match self.root() {
            InventoryError::NoInventory { path } => {
                d = d.with_file(path).with_hint(
                    "pass --inventory-path DIR pointing at a directory holding classes/ and targets/",
                )
            }
            InventoryError::Io { path, .. } => d = d.with_file(path),
            InventoryError::Config { path, .. } => {
                d = d
                    .with_file(path)
                    .with_hint("fix the value, or remove the key to use the default")
            }
            InventoryError::Yaml {
                path,
                line,
                message,
                ..
            } => {
                d = d.with_file(path).with_line(*line).with_hint(if crate::yaml::is_limit_message(message) {
                    "this is one of strata's limits against hostile input (docs/reliability.md)"
                } else if message.starts_with("duplicate key") {
                    // Not a syntax error: Kapitan's reclass reads the file
                    // (kapicorp/kapitan's own tests/test_resources has one),
                    // so say what to change when migrating.
                    "remove one of the two keys: Kapitan's reclass silently keeps the last value, strata (like reclass-rs) refuses duplicates; `strata lint` lists every one"
                } else {
                    "fix the YAML syntax at that line (quote values that start with `*`, `&`, `!`, `{` or `[`)"
                })
            }
            InventoryError::Collides { second, .. } => {
                d = d
                    .with_file(second)
                    .with_hint("rename or remove one of the two files")
            }
            InventoryError::Shape { path, line, .. } => d = d.with_file(path).with_line(*line),
            InventoryError::ClassNotFound { class, from, line } => {
                // A name with empty parts or path separators names no file
                // that could be created: say how class names map to files.
                let odd = class
                    .split('.')
                    .any(|p| p.is_empty() || p.contains(['/', '\\']));
                d = d.with_file(from).with_line(*line).with_hint(if odd {
                    "a class name is directory and file names under classes/ joined by `.` (`a.b` is classes/a/b.yml); fix the name, or pass --ignore-class-not-found".to_string()
                } else {
                    format!(
                        "create classes/{}.yml, fix the name, or pass --ignore-class-not-found",
                        class.replace('.', "/")
                    )
                })
            }
            InventoryError::ClassNameTooLong { from, line, .. } => {
                d = d.with_file(from).with_line(*line).with_hint(
                    "a class name interpolates parameters that are too long: reference shorter values in `classes`",
                )
            }
            InventoryError::PatternNoMatch { from, .. } => {
                d = d.with_file(from).with_hint(
                    "fix the pattern, or pass --ignore-class-not-found to drop patterns that match nothing",
                )
            }
            InventoryError::BadPattern { from, .. } => d = d.with_file(from),
            InventoryError::BadClassMapping { path, .. } => {
                d = d.with_file(path).with_hint(
                    "write each entry as `<glob or /regex/> <class> [<class>...]`, as reclass-rs reads it",
                )
            }
            InventoryError::UnsupportedConfig { path, .. } => d = d.with_file(path),
            InventoryError::ClassCycle { from, line, .. } => d = d.with_file(from).with_line(*line),
            InventoryError::Constant { key, .. } => {
                d = d
                    .with_param_path(format!("parameters.{key}"))
                    .with_hint("remove the `=` prefix where the key is first set, or stop overriding it")
            }
            InventoryError::Merge { key, .. } => {
                d = d.with_param_path(format!("parameters.{key}")).with_hint(
                    "prefix the key with `~` to replace the inherited value instead of merging",
                )
            }
            InventoryError::Unresolved { param, origin, .. } => {
                if let Some((f, l)) = origin.rsplit_once(':') {
                    if let Ok(l) = l.parse::<usize>() {
                        d = d.with_file(std::path::Path::new(f)).with_line(l);
                    }
                }
                if !param.is_empty() {
                    d = d.with_param_path(format!("parameters.{param}"));
                }
                d = d.with_hint(
                    "define the referenced key, give a default with `${path::default}`, or escape the reference as `\\${...}`",
                )
            }
            InventoryError::TooLarge { param, .. }
            | InventoryError::RenderedTooLarge { param, .. }
            | InventoryError::ValueTooDeep { param, .. }
            | InventoryError::TooManyLookups { param, .. }
            | InventoryError::TooManyRenderLookups { param, .. }
            | InventoryError::RefTooDeep { param, .. } => {
                d = d
                    .with_param_path(format!("parameters.{param}"))
                    .with_hint("see docs/reliability.md for strata's limits")
            }
            InventoryError::Loop { param, .. } => {
                d = d.with_param_path(format!("parameters.{param}"))
            }
            InventoryError::OutsideTree { path } => {
                d = d.with_file(path).with_hint(
                    "commit the file itself instead of a symlink to it (what it points at is not read)",
                )
            }
            InventoryError::BadTargetName { path, .. } => {
                d = d.with_file(path).with_hint(
                    "rename the file: a target name becomes a catalog directory name",
                )
            }
            InventoryError::UnknownKey { path, line, .. } => {
                d = d.with_file(path).with_line(*line).with_hint(format!(
                    "a class or target file has only these top-level keys: {}",
                    super::checks::TOP_LEVEL_KEYS.join(", ")
                ))
            }
            InventoryError::ClassTooDeep { from, line, .. } => {
                d = d
                    .with_file(from)
                    .with_line(*line)
                    .with_hint("flatten the class hierarchy")
            }
            InventoryError::RefSyntax { origin, message } => {
                // `path:line`, or `path` with the line in the message, so
                // that annotations carry file= and line=.
                let (file, line) = match origin.rsplit_once(':') {
                    Some((f, l)) if l.parse::<usize>().is_ok() => (f, l.parse().ok()),
                    _ => (
                        origin.as_str(),
                        message
                            .strip_prefix("line ")
                            .and_then(|m| m.split(':').next())
                            .and_then(|l| l.parse::<usize>().ok()),
                    ),
                };
                d = d.with_file(std::path::Path::new(file));
                if let Some(l) = line {
                    d = d.with_line(l);
                }
            }
            InventoryError::UnknownTarget { known, .. } => {
                let list: Vec<_> = known.iter().take(10).cloned().collect();
                d = d.with_hint(format!("known targets: {}", list.join(", ")))
            }
            _ => {}
        }
        d
    }
}

/// Where an unresolved reference was: a parameter, or (no parameter path)
/// an interpolated class name such as `classes: [${cluster}]`.
fn reference_place(param: &str) -> String {
    if param.is_empty() {
        "a class name".into()
    } else {
        format!("parameters.{param}")
    }
}
