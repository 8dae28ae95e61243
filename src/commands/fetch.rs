//! `strata fetch`: fetch git dependencies (a list, or a Commodore-style
//! `parameters.components` map) into `dependencies/`, or install the
//! jsonnet-bundler dependencies of a directory into its `vendor/`.

use crate::cli::eprintln;
use crate::fetch::jsonnet::{self, JbOptions};
use crate::fetch::{self, Dependency, FetchOptions, Progress};
use crate::git::Credentials;
use crate::value::Value;
use anyhow::{anyhow, bail, Context};
use clap::Args;
use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;

#[derive(Debug, Args)]
pub struct FetchArgs {
    /// YAML/JSON file: a list of {name, url, version, path}, or a map of
    /// name -> {url, version, path} (also under `parameters.components`)
    #[arg(long, value_name = "FILE", required_unless_present = "jsonnetfile")]
    pub deps: Option<PathBuf>,
    /// Install the jsonnet-bundler dependencies of DIR into DIR/vendor
    #[arg(long, value_name = "DIR", conflicts_with = "deps")]
    pub jsonnetfile: Option<PathBuf>,
    /// Working directory: dependencies go to WORK_DIR/dependencies
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub work_dir: PathBuf,
    /// Use only what is on disk; fail when something is missing
    #[arg(long)]
    pub offline: bool,
    /// Discard local edits in checkouts instead of failing
    #[arg(long)]
    pub force: bool,
    /// Environment variable holding the HTTPS token [default: GITHUB_TOKEN, when set]
    #[arg(long, value_name = "VAR")]
    pub token_env: Option<String>,
    /// User name sent with the token
    #[arg(long, default_value = "x-access-token")]
    pub token_user: String,
    /// Repositories fetched at the same time [default: one per CPU]
    #[arg(long, short = 'j', default_value_t = 0)]
    pub parallelism: usize,
    /// External variable for jsonnetfile.jsonnet (repeatable)
    #[arg(long, value_name = "NAME=VALUE")]
    pub ext_str: Vec<String>,
    /// With --jsonnetfile: ignore the lock file and resolve versions again
    #[arg(long)]
    pub update: bool,
    /// Fetch nothing from this machine (a `file://` URL, a path, a
    /// jsonnet-bundler `local` directory outside the working directory)
    /// and read --deps / --jsonnetfile only inside the working directory
    /// unless given outside it (on by default on a GitHub `pull_request*`
    /// event)
    #[arg(long)]
    pub confine: bool,
}

/// On a pull request (or `--confine`), the sources the pull request's
/// files name must be fetched over the network: a `file:///home/runner/...`
/// repository (or a path) was cloned into the checkout, where the
/// pull request's compile then read it as its own.
fn confine_sources(args: &FetchArgs) -> anyhow::Result<Option<crate::compile::confine::Confine>> {
    let given: Vec<&Path> = [&args.deps, &args.jsonnetfile]
        .into_iter()
        .flatten()
        .map(PathBuf::as_path)
        .chain([args.work_dir.as_path()])
        .collect();
    let confine = crate::commands::confine::working_tree("fetch", args.confine, &given)?;
    if let Some(c) = &confine {
        for p in &given {
            c.check(p).map_err(|e| anyhow!("{e}"))?;
        }
    }
    Ok(confine)
}

pub fn run(args: FetchArgs) -> anyhow::Result<ExitCode> {
    let credentials = credentials(&args)?;
    let start = std::time::Instant::now();
    let confine = confine_sources(&args)?;
    if let Some(dir) = &args.jsonnetfile {
        let ext_vars = args
            .ext_str
            .iter()
            .map(|s| {
                s.split_once('=')
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .ok_or_else(|| anyhow!("--ext-str {s}: expected NAME=VALUE"))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let opts = JbOptions {
            repos_dir: args.work_dir.join("dependencies/.repos"),
            offline: args.offline,
            credentials,
            ext_vars,
            update: args.update,
            confine: confine.clone(),
        };
        let installed = jsonnet::install(dir, &opts)?;
        for i in &installed {
            let commit = i.commit.get(..12).unwrap_or(&i.commit);
            let state = if i.changed { "installed" } else { "up to date" };
            println!("{} {} {commit} {state}", i.name, i.version);
        }
        eprintln!(
            "{} jsonnet packages in {:.2}s",
            installed.len(),
            start.elapsed().as_secs_f64()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let Some(file) = &args.deps else {
        bail!("pass --deps FILE or --jsonnetfile DIR");
    };
    let deps = read_deps(file)?;
    if confine.is_some() {
        crate::fetch::refuse_local_sources(&deps)
            .map_err(|e| anyhow!("{}: {e}", file.display()))?;
    }
    let opts = FetchOptions {
        work_dir: args.work_dir.clone(),
        offline: args.offline,
        force: args.force,
        credentials,
        parallelism: args.parallelism,
        confined: confine.is_some(),
    };
    let progress = progress_reporter();
    let fetched = fetch::fetch(&deps, &opts, progress.as_ref());
    // Bars leave the cursor on their last line: end it before anything else.
    drop(progress);
    let fetched = fetched?;
    let repos: std::collections::BTreeSet<&str> = fetched.iter().map(|f| f.url.as_str()).collect();
    for f in &fetched {
        let state = if f.changed { "updated" } else { "up to date" };
        println!(
            "{} {} {} {state}",
            f.name,
            f.version,
            f.commit.get(..12).unwrap_or(&f.commit)
        );
    }
    eprintln!(
        "{} dependencies from {} repositories in {:.2}s",
        fetched.len(),
        repos.len(),
        start.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

fn credentials(args: &FetchArgs) -> anyhow::Result<Option<Credentials>> {
    token_credentials(args.token_env.as_deref(), &args.token_user)
}

/// The HTTPS token from `token_env` (which must be set) or `GITHUB_TOKEN`.
pub(crate) fn token_credentials(
    token_env: Option<&str>,
    token_user: &str,
) -> anyhow::Result<Option<Credentials>> {
    let token = match token_env {
        Some(var) => match std::env::var(var) {
            Ok(t) if !t.is_empty() => Some(t),
            _ => bail!("--token-env {var}: the environment variable {var} is not set or empty"),
        },
        None => std::env::var("GITHUB_TOKEN").ok().filter(|t| !t.is_empty()),
    };
    Ok(token.map(|token| Credentials {
        username: token_user.to_string(),
        token,
    }))
}

/// Reads the dependency file: a list of dependencies, or a map of name to
/// settings, optionally nested as `parameters.components`.
pub fn read_deps(file: &Path) -> anyhow::Result<Vec<Dependency>> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let values = crate::yaml::load_values(&text).map_err(|e| anyhow!("{}: {e}", file.display()))?;
    let Some(mut v) = values.into_iter().next() else {
        bail!(
            "{}: empty file, expected a list or map of dependencies",
            file.display()
        );
    };
    for key in ["parameters", "components"] {
        if let Some(inner) = v.as_map().and_then(|m| m.get(key)) {
            v = inner.clone();
        }
    }
    let field = |m: &crate::value::Map, at: &str, k: &str| -> anyhow::Result<Option<String>> {
        match m.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Int(i)) => Ok(Some(i.to_string())),
            Some(Value::Float(f)) => Ok(Some(f.to_string())),
            Some(_) => bail!("{}: {at}.{k} must be a string", file.display()),
        }
    };
    let one = |name: String, at: &str, m: &crate::value::Map| -> anyhow::Result<Dependency> {
        let url = field(m, at, "url")?.ok_or_else(|| {
            if m.contains_key("version") {
                anyhow!(
                    "{}: {at}: a `version`-only override for `{name}`, but no dependency of that name has a `url`",
                    file.display()
                )
            } else {
                anyhow!("{}: {at}: no `url`", file.display())
            }
        })?;
        let version = field(m, at, "version")?
            .ok_or_else(|| anyhow!("{}: {at}: no `version`", file.display()))?;
        Ok(Dependency {
            name,
            url,
            version,
            path: field(m, at, "path")?.filter(|p| !p.is_empty()),
            dir: None,
        })
    };
    let mut out = Vec::new();
    match &v {
        Value::List(items) => {
            for (i, item) in items.iter().enumerate() {
                let at = format!("[{i}]");
                let m = item
                    .as_map()
                    .ok_or_else(|| anyhow!("{}: {at} must be a map", file.display()))?;
                let name = field(m, &at, "name")?
                    .ok_or_else(|| anyhow!("{}: {at}: no `name`", file.display()))?;
                out.push(one(name, &at, m)?);
            }
        }
        Value::Map(map) => {
            for (name, item) in map {
                let m = item
                    .as_map()
                    .ok_or_else(|| anyhow!("{}: {name} must be a map", file.display()))?;
                out.push(one(name.clone(), name, m)?);
            }
        }
        _ => bail!("{}: expected a list or map of dependencies", file.display()),
    }
    Ok(out)
}

/// Spinners on a terminal, else a line per repository.
pub(crate) fn progress_reporter() -> Box<dyn Progress> {
    if std::io::stderr().is_terminal() {
        Box::new(Bars::default())
    } else {
        Box::new(Lines)
    }
}

/// One line per repository when it is done (CI logs).
struct Lines;

impl Progress for Lines {
    fn start(&self, _: &str, _: usize) {}
    fn step(&self, _: &str, _: &str) {}
    fn finish(&self, repo: &str, result: Result<&str, &str>) {
        match result {
            Ok(m) => eprintln!("{repo}: {m}"),
            Err(_) => eprintln!("{repo}: failed"),
        }
    }
}

/// One spinner per repository on a terminal.
#[derive(Default)]
struct Bars {
    multi: indicatif::MultiProgress,
    bars: Mutex<HashMap<String, indicatif::ProgressBar>>,
}

impl Bars {
    fn bar(&self, repo: &str) -> Option<indicatif::ProgressBar> {
        self.bars.lock().ok()?.get(repo).cloned()
    }
}

impl Drop for Bars {
    fn drop(&mut self) {
        let started = self.bars.lock().map(|m| !m.is_empty()).unwrap_or(false);
        if started {
            eprintln!();
        }
    }
}

impl Progress for Bars {
    fn start(&self, repo: &str, deps: usize) {
        let bar = self.multi.add(indicatif::ProgressBar::new_spinner());
        if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {prefix}: {msg}") {
            bar.set_style(style);
        }
        bar.set_prefix(format!("{repo} ({deps})"));
        bar.set_message("opening");
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        if let Ok(mut m) = self.bars.lock() {
            m.insert(repo.to_string(), bar);
        }
    }
    fn step(&self, repo: &str, what: &str) {
        if let Some(b) = self.bar(repo) {
            b.set_message(what.to_string());
        }
    }
    fn finish(&self, repo: &str, result: Result<&str, &str>) {
        if let Some(b) = self.bar(repo) {
            match result {
                Ok(m) => b.finish_with_message(m.to_string()),
                Err(_) => b.finish_with_message("failed"),
            }
        }
    }
}
