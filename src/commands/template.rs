//! `strata template`: ytt-compatible templating (same flags as ytt for
//! files, data values and output).

use crate::template::eval::SrcFile;
use crate::template::node::{Scalar, Val};
use crate::template::{self, FlagValue, Options};
use anyhow::Context;
use clap::Args;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct TemplateArgs {
    /// File or directory (ytt -f); `name=path` sets the file's relative name
    #[arg(short = 'f', long = "file", value_name = "PATH")]
    pub files: Vec<String>,
    /// Set a data value as a string: key=value (key may be a.b.c)
    #[arg(short = 'v', long = "data-value", value_name = "KEY=VAL")]
    pub data_value: Vec<String>,
    /// Set a data value parsed as YAML: key=value
    #[arg(long = "data-value-yaml", value_name = "KEY=YAML")]
    pub data_value_yaml: Vec<String>,
    /// Set a data value to a file's contents: key=path
    #[arg(long = "data-value-file", value_name = "KEY=PATH")]
    pub data_value_file: Vec<String>,
    /// Plain YAML file (or directory) of data values
    #[arg(long = "data-values-file", value_name = "PATH")]
    pub data_values_file: Vec<String>,
    /// Environment variables with this prefix set data values (PREFIX_a__b=v)
    #[arg(long = "data-values-env", value_name = "PREFIX")]
    pub data_values_env: Vec<String>,
    /// Like --data-values-env, values parsed as YAML
    #[arg(long = "data-values-env-yaml", value_name = "PREFIX")]
    pub data_values_env_yaml: Vec<String>,
    /// Print the final data values instead of templates
    #[arg(long = "data-values-inspect")]
    pub data_values_inspect: bool,
    /// Print the data values schema (with --output openapi-v3)
    #[arg(long = "data-values-schema-inspect")]
    pub data_values_schema_inspect: bool,
    /// Output format: yaml (default) or json, and/or openapi-v3 for
    /// --data-values-schema-inspect (comma-separated or repeated, as ytt)
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FORMAT",
        value_delimiter = ','
    )]
    pub output: Vec<String>,
    /// Write results as files into this directory instead of stdout
    #[arg(long = "output-files", value_name = "DIR")]
    pub output_files: Option<PathBuf>,
    /// Delete this directory, then write the results into it as files
    #[arg(
        long = "dangerous-emptied-output-directory",
        value_name = "DIR",
        conflicts_with = "output_files"
    )]
    pub emptied_output_directory: Option<PathBuf>,
    /// File marks (path:type=yaml-plain, ...); accepted, partly honoured
    #[arg(long = "file-mark", value_name = "MARK")]
    pub file_mark: Vec<String>,
    /// Reject ambiguous YAML scalars such as `yes`
    #[arg(long = "strict", short = 's')]
    pub strict: bool,
    /// Treat comments that are not `#@`/`#!` as plain comments
    #[arg(long = "ignore-unknown-comments")]
    pub ignore_unknown_comments: bool,
    /// Let later map keys override earlier ones
    #[arg(long = "implicit-map-key-overrides")]
    pub implicit_map_key_overrides: bool,
    /// Skip data value validations
    #[arg(long = "dangerous-data-values-disable-validation")]
    pub dangerous_disable_validation: bool,
    /// Read nothing outside the working directory but paths outside it
    /// given as flags: no symlink in an input directory (or committed as
    /// an input file) may lead out (on by default on a GitHub
    /// `pull_request*` event)
    #[arg(long)]
    pub confine: bool,
}

/// The path of a `-f`/`--data-value-file`-style spec (`name=path`,
/// `key=path`).
fn spec_path(spec: &str) -> &Path {
    match spec.split_once('=') {
        Some((n, p)) if !n.is_empty() => Path::new(p),
        _ => Path::new(spec),
    }
}

fn expand(spec: &str) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let (name, path) = match spec.split_once('=') {
        Some((n, p)) if !n.is_empty() => (Some(n.to_string()), PathBuf::from(p)),
        _ => (None, PathBuf::from(spec)),
    };
    if path.is_dir() {
        let mut out = crate::fswalk::files_following(&path)?;
        if let Some(n) = name {
            for (rel, _) in out.iter_mut() {
                *rel = format!("{}/{}", n.trim_end_matches('/'), rel);
            }
        }
        return Ok(out);
    }
    if !path.exists() {
        anyhow::bail!("Checking file '{}': file does not exist", path.display());
    }
    let rel = name.unwrap_or_else(|| {
        path.file_name()
            .map(|f| f.to_string_lossy().to_string())
            .unwrap_or_default()
    });
    Ok(vec![(rel, path)])
}

fn read(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

/// ytt's name for a file read from standard input (`-f -`).
const STDIN_NAME: &str = "stdin.yml";

/// Standard input, readable once per run (`-f -`, `--data-values-file -`).
#[derive(Default)]
struct Stdin {
    used: bool,
}

impl Stdin {
    fn read(&mut self) -> anyhow::Result<String> {
        if self.used {
            anyhow::bail!(
                "Reading file '{STDIN_NAME}':\n    Standard input has already been read, has the '-' argument been used in more than one flag?"
            );
        }
        self.used = true;
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin().lock(), &mut text)
            .with_context(|| format!("Reading file '{STDIN_NAME}' from standard input"))?;
        Ok(text)
    }
}

/// How documents are printed to standard output.
#[derive(Clone, Copy, PartialEq)]
enum Format {
    Yaml,
    Json,
    /// Each line with the source position of its node.
    Pos,
}

/// The `-o` values split as ytt does: one file format (yaml, json) and at
/// most one schema type (openapi-v3).
fn output_types(types: &[String]) -> anyhow::Result<(Format, Option<String>)> {
    let mut json = None;
    let mut schema = None;
    for t in types {
        match t.as_str() {
            "yaml" => {
                json.get_or_insert(Format::Yaml);
            }
            "json" => {
                json.get_or_insert(Format::Json);
            }
            "pos" => {
                json.get_or_insert(Format::Pos);
            }
            "openapi-v3" => {
                schema.get_or_insert_with(|| t.clone());
            }
            other => anyhow::bail!("Unknown output type '{other}'"),
        }
    }
    Ok((json.unwrap_or(Format::Yaml), schema))
}

fn split_kv(s: &str, flag: &str) -> anyhow::Result<(String, String)> {
    match s.split_once('=') {
        Some((k, v)) => Ok((k.to_string(), v.to_string())),
        None => anyhow::bail!("Expected {flag} '{s}' to be in format 'key=value'"),
    }
}

/// `--file-mark path:key=value` (path may be a glob): exclude or retype files.
fn apply_file_marks(files: &mut Vec<SrcFile>, marks: &[String]) -> anyhow::Result<()> {
    for m in marks {
        let Some((path, kv)) = m.rsplit_once(':') else {
            anyhow::bail!("Expected file mark '{m}' to be in format 'path:key=value'");
        };
        let Some((key, value)) = kv.split_once('=') else {
            anyhow::bail!("Expected file mark '{m}' to be in format 'path:key=value'");
        };
        let glob = globset::Glob::new(path)
            .with_context(|| format!("invalid path in file mark '{m}'"))?
            .compile_matcher();
        let matches = |f: &SrcFile| f.path == path || glob.is_match(&f.path);
        match key {
            "exclude" => {
                if value == "true" {
                    files.retain(|f| !matches(f));
                }
            }
            "type" => {
                for f in files.iter_mut().filter(|f| matches(f)) {
                    f.mark_type = Some(value.to_string());
                }
            }
            "path" | "for-output" => {}
            other => anyhow::bail!("Unknown file mark '{other}' in '{m}'"),
        }
    }
    Ok(())
}

fn yaml_value(text: &str, what: &str, strict: bool) -> anyhow::Result<Val> {
    let d = template::yamlmeta::parse(text, what, strict)
        .map_err(|e| anyhow::anyhow!("Deserializing value for {what}: {}", e.message))?;
    Ok(d.items
        .into_iter()
        .next()
        .map(|d| d.val)
        .unwrap_or(Val::null()))
}

fn env_values(prefix: &str, as_yaml: bool, strict: bool) -> anyhow::Result<Vec<FlagValue>> {
    // `@lib:PREFIX` sends the values to a private library
    let (lib, prefix) = match prefix.strip_prefix('@').and_then(|r| r.rsplit_once(':')) {
        Some((lib, p)) => (Some(lib), p),
        None => (None, prefix),
    };
    let mut vars: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| k.starts_with(&format!("{prefix}_")))
        .collect();
    vars.sort();
    let mut out = Vec::new();
    for (k, v) in vars {
        let key = k[prefix.len() + 1..].replace("__", ".");
        let value = if as_yaml {
            yaml_value(&v, &k, strict)?
        } else {
            Val::Scalar(Scalar::Str(v))
        };
        let key = match lib {
            Some(l) => format!("@{l}:{key}"),
            None => key,
        };
        out.push(FlagValue {
            key,
            value,
            source: format!("{prefix}_* env vars"),
        });
    }
    Ok(out)
}

/// `--dangerous-emptied-output-directory`: ytt's refusals ("/", ".", "")
/// and, beyond them, any directory that holds the working directory or is
/// not a directory.
fn check_emptied_dir(dir: &Path) -> anyhow::Result<()> {
    let shown = dir.to_string_lossy();
    if ["/", ".", "./", ""].contains(&shown.as_ref()) {
        anyhow::bail!("Expected output directory path to not be one of '/', '.', './', ''");
    }
    if dir.exists() {
        if !dir.is_dir() || dir.is_symlink() {
            anyhow::bail!(
                "Expected output directory {shown} to be a directory (it is not; nothing was deleted)"
            );
        }
        let canon = dir.canonicalize()?;
        let cwd = std::env::current_dir()?.canonicalize()?;
        if cwd.starts_with(&canon) {
            anyhow::bail!(
                "Expected output directory {shown} to not contain the current directory (nothing was deleted)"
            );
        }
    }
    Ok(())
}

pub fn run(args: TemplateArgs) -> anyhow::Result<ExitCode> {
    let (format, schema_type) = output_types(&args.output)?;
    // Every path the user named; the files below a directory (and what a
    // committed link leads to) are the repository's choice.
    let mut given: Vec<&Path> = args.files.iter().map(|s| spec_path(s)).collect();
    given.extend(args.data_values_file.iter().map(Path::new));
    given.extend(
        args.data_value_file
            .iter()
            .filter_map(|s| s.split_once('=').map(|(_, p)| Path::new(p))),
    );
    let out_dir = args
        .output_files
        .as_deref()
        .or(args.emptied_output_directory.as_deref());
    let trusted: Vec<&Path> = given.iter().copied().chain(out_dir).collect();
    let confine = crate::commands::confine::working_tree("template", args.confine, &trusted)?;
    crate::commands::confine::check_inputs(confine.as_ref(), given.iter().copied())?;
    let mut stdin = Stdin::default();
    let mut opts = Options {
        data_values_inspect: args.data_values_inspect,
        schema_inspect: args.data_values_schema_inspect,
        output: schema_type,
        strict: args.strict,
        ignore_unknown_comments: args.ignore_unknown_comments,
        implicit_map_key_overrides: args.implicit_map_key_overrides,
        disable_validation: args.dangerous_disable_validation,
        ..Default::default()
    };
    for spec in &args.files {
        if spec == "-" {
            opts.files.push(SrcFile::new(STDIN_NAME, stdin.read()?));
            continue;
        }
        for (rel, path) in expand(spec)? {
            opts.files.push(SrcFile::new(rel, read(&path)?));
        }
    }
    apply_file_marks(&mut opts.files, &args.file_mark)?;
    for spec in &args.data_values_file {
        if spec == "-" {
            let text = stdin
                .read()
                .map_err(|e| anyhow::anyhow!("Extracting data value from file:\n  {e}"))?;
            opts.data_values_files.push(SrcFile::new(STDIN_NAME, text));
            continue;
        }
        let p = PathBuf::from(spec);
        if p.is_dir() {
            for (rel, path) in crate::fswalk::files_following(&p)? {
                if !(rel.ends_with(".yml") || rel.ends_with(".yaml")) {
                    continue;
                }
                opts.data_values_files.push(SrcFile::new(rel, read(&path)?));
            }
        } else {
            opts.data_values_files
                .push(SrcFile::new(spec.clone(), read(&p)?));
        }
    }
    for p in &args.data_values_env {
        opts.flag_values.extend(env_values(p, false, args.strict)?);
    }
    for p in &args.data_values_env_yaml {
        opts.flag_values.extend(env_values(p, true, args.strict)?);
    }
    for s in &args.data_value {
        let (k, v) = split_kv(s, "--data-value")?;
        opts.flag_values.push(FlagValue {
            key: k,
            value: Val::Scalar(Scalar::Str(v)),
            source: "kv arg".into(),
        });
    }
    for s in &args.data_value_yaml {
        let (k, v) = split_kv(s, "--data-value-yaml")?;
        if k.matches(':').count() > 0 && !k.starts_with('@') {
            anyhow::bail!("Expected at most one library-key separator ':' in '{k}'");
        }
        opts.flag_values.push(FlagValue {
            key: k.clone(),
            value: yaml_value(&v, &k, args.strict)?,
            source: "kv arg".into(),
        });
    }
    for s in &args.data_value_file {
        let (k, p) = split_kv(s, "--data-value-file")?;
        opts.flag_values.push(FlagValue {
            key: k,
            value: Val::Scalar(Scalar::Str(read(Path::new(&p))?)),
            source: "kv arg".into(),
        });
    }
    let out = template::run(&opts).map_err(|e| anyhow::anyhow!("{}", e.0))?;
    if let Some(dir) = &args.emptied_output_directory {
        check_emptied_dir(dir)?;
    }
    match args
        .output_files
        .as_ref()
        .or(args.emptied_output_directory.as_ref())
    {
        None => {
            let text = match format {
                Format::Json => out
                    .to_json()
                    .map_err(|e| anyhow::anyhow!("Marshaling combined template result: {e}"))?,
                Format::Pos => out.to_pos(),
                Format::Yaml => out.to_yaml(),
            };
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(text.as_bytes())?;
        }
        Some(dir) => {
            let files = out.into_files();
            let mut seen = std::collections::BTreeSet::new();
            for (name, _) in &files {
                if !seen.insert(name.as_str()) {
                    anyhow::bail!("Multiple files have same output destination paths: {name}");
                }
                // A name given as `-f NAME=PATH` is joined to the output
                // directory: one that leaves it is refused before anything
                // is written (re-probe 10).
                let path = Path::new(name);
                let leaves = path.is_absolute()
                    || path.components().any(|c| {
                        !matches!(
                            c,
                            std::path::Component::Normal(_) | std::path::Component::CurDir
                        )
                    });
                if leaves || name.is_empty() {
                    anyhow::bail!(
                        "output file name `{}` leaves the output directory {}: name files with relative paths inside it (`-f NAME=PATH`)",
                        name.escape_debug(),
                        dir.display()
                    );
                }
            }
            // A committed `out -> /home/runner/.ssh` (or a link inside
            // it) had a pull request's templates written there.
            crate::commands::confine::check_output(
                confine.as_ref(),
                "template",
                "--output-files",
                dir,
            )?;
            for (name, _) in &files {
                crate::commands::confine::check_output(
                    confine.as_ref(),
                    "template",
                    "--output-files",
                    &dir.join(name),
                )?;
            }
            if args.emptied_output_directory.is_some() && dir.exists() {
                std::fs::remove_dir_all(dir)
                    .with_context(|| format!("cannot empty {}", dir.display()))?;
            }
            for (name, text) in files {
                let p = dir.join(&name);
                if let Some(parent) = p.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::write(&p, text)
                    .with_context(|| format!("cannot write {}", p.display()))?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
