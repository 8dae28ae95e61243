//! `strata push`: publish an already compiled catalog directory to the
//! catalog repository (commit only when something changed, retry when the
//! branch moved).

use crate::cli::diag_err;
use crate::cli::eprintln;
use crate::diff::redact::Redactor;
use crate::diff::{self, DiffOptions};
use crate::git::{Credentials, Identity};
use crate::publish::{self, Layout, Plan, Publisher, Request, SourceInfo};
use anyhow::{anyhow, bail};
use clap::{Args, ValueEnum};
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LayoutArg {
    /// Every top-level entry of the catalog directory (one per target)
    Kapitan,
    /// manifests/ and refs/ of a Commodore catalog
    Commodore,
}

/// `strata push`: the catalog directory, its layout, and the publish flags.
#[derive(Debug, Args)]
pub struct PushArgs {
    /// The compiled catalog [default: ./compiled, or ./catalog with --layout commodore]
    #[arg(long, value_name = "DIR")]
    pub catalog_dir: Option<PathBuf>,
    /// How the catalog directory maps onto the repository
    #[arg(long, value_enum, default_value = "kapitan")]
    pub layout: LayoutArg,
    #[command(flatten)]
    pub publish: PublishFlags,
    /// The catalog directory must resolve inside the working directory
    /// unless given outside it (on by default on a GitHub `pull_request*`
    /// event, where `--dry-run` prints what would be pushed)
    #[arg(long)]
    pub confine: bool,
}

/// The flags of a publish, shared with `compile --push` and `catalog
/// compile --push` (flatten them into their arguments and call
/// [`publish_catalog`]).
#[derive(Debug, Clone, Args)]
pub struct PublishFlags {
    /// The catalog repository (https://, ssh://, git@host:path or file://)
    #[arg(long, value_name = "URL")]
    pub catalog_repo: Option<String>,
    /// Branch to commit to (created when missing)
    #[arg(long, default_value = "main")]
    pub branch: String,
    /// First line of the commit message (the change summary is kept below it)
    #[arg(long, short = 'm', value_name = "TEXT")]
    pub message: Option<String>,
    /// Commit author [default: github-actions[bot] in GitHub Actions, else git config]
    #[arg(long, value_name = "NAME <EMAIL>")]
    pub author: Option<String>,
    /// Show what would change and push nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Show the changes and ask before pushing
    #[arg(long, short = 'i')]
    pub interactive: bool,
    /// Environment variable holding the HTTPS token [default: GITHUB_TOKEN, when set]
    #[arg(long, value_name = "VAR")]
    pub token_env: Option<String>,
    /// User name sent with the token
    #[arg(long, value_name = "NAME", default_value = "x-access-token")]
    pub token_user: String,
    /// Repository path to replace with the catalog's (repeatable); a managed path missing from the catalog is deleted
    #[arg(long, value_name = "PATH")]
    pub managed: Vec<String>,
    /// Cache of the catalog repository [default: $XDG_CACHE_HOME/strata/catalogs/<url>]
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Push attempts when other pipelines keep moving the branch
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub max_attempts: usize,
}

pub fn run(args: PushArgs) -> anyhow::Result<ExitCode> {
    let layout = match args.layout {
        LayoutArg::Kapitan => Layout::Kapitan,
        LayoutArg::Commodore => Layout::Commodore,
    };
    let catalog_dir = args.catalog_dir.clone().unwrap_or_else(|| match layout {
        Layout::Kapitan => PathBuf::from("compiled"),
        Layout::Commodore => PathBuf::from("catalog"),
    });
    // A committed `compiled -> /home/runner/...` was published (and shown
    // by --dry-run) as the catalog.
    let confine =
        crate::commands::confine::working_tree("push", args.confine, &[catalog_dir.as_path()])?;
    crate::commands::confine::check_input(confine.as_ref(), &catalog_dir)?;
    let Some(url) = args.publish.catalog_repo.clone() else {
        bail!("--catalog-repo URL is required");
    };
    publish_catalog(&args.publish, catalog_dir, layout, &url)
}

/// Publishes `catalog_dir` to `url` and prints the outcome. `url` is the
/// flag's value or, for Commodore, the cluster's `gitRepo.url`.
pub fn publish_catalog(
    flags: &PublishFlags,
    catalog_dir: PathBuf,
    layout: Layout,
    url: &str,
) -> anyhow::Result<ExitCode> {
    crate::commands::refs::refuse_revealed(&catalog_dir, "publishing")?;
    let env = |k: &str| std::env::var(k).ok();
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let author = resolve_author(flags.author.as_deref(), flags.dry_run, &env, &cwd)?;
    let credentials = resolve_credentials(flags, url, &env)?;
    let cache_dir = match &flags.cache_dir {
        Some(d) => d.clone(),
        None => default_cache_dir(url, &env)?,
    };
    let req = Request {
        catalog_dir,
        repo_url: url.to_string(),
        branch: flags.branch.clone(),
        layout,
        managed: flags.managed.clone(),
        message: flags.message.clone(),
        author,
        source: SourceInfo::detect(&env, &cwd),
        credentials,
        cache_dir,
        max_attempts: flags.max_attempts,
    };
    let publisher = Publisher::new(req).map_err(diag_err)?;
    if !publisher.unmanaged().is_empty() {
        eprintln!(
            "warning: not published (outside the managed paths): {}",
            publisher.unmanaged().join(", ")
        );
    }
    let plan = publisher.plan().map_err(diag_err)?;
    let target = format!("{} (branch {})", crate::git::redact_url(url), flags.branch);
    let mut out = std::io::stdout().lock();
    if plan.is_empty() {
        writeln!(out, "Nothing changed: {target} already holds this catalog")?;
        return Ok(ExitCode::SUCCESS);
    }
    if flags.dry_run {
        writeln!(out, "Dry run: would push to {target}:")?;
        out.write_all(
            crate::cli::actions_safe(&review_diff(&publisher, &plan, layout)?).as_bytes(),
        )?;
        write_changes(&mut out, &plan)?;
        writeln!(out, "\nCommit message:\n{}", indent(&plan.message))?;
        writeln!(out, "Nothing was pushed.")?;
        return Ok(ExitCode::SUCCESS);
    }
    if flags.interactive {
        writeln!(out, "Changes to push to {target}:")?;
        out.write_all(
            crate::cli::actions_safe(&review_diff(&publisher, &plan, layout)?).as_bytes(),
        )?;
        write_changes(&mut out, &plan)?;
        out.flush()?;
        eprint!("Push these changes? [y/N] ");
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if !matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
            writeln!(out, "Not pushed.")?;
            return Ok(ExitCode::SUCCESS);
        }
    }
    let outcome = publisher.publish(plan).map_err(diag_err)?;
    if !outcome.pushed {
        writeln!(
            out,
            "Nothing changed: {target} already holds this catalog (after another push landed)"
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let commit = outcome
        .plan
        .commit
        .map(|c| c.to_string())
        .unwrap_or_default();
    writeln!(
        out,
        "Pushed {} to {target}: {} file{} changed",
        &commit[..commit.len().min(12)],
        outcome.plan.changes.len(),
        if outcome.plan.changes.len() == 1 {
            ""
        } else {
            "s"
        }
    )?;
    for s in &outcome.plan.summary {
        writeln!(
            out,
            "  {}: {} added, {} changed, {} removed",
            s.group, s.added, s.changed, s.removed
        )?;
    }
    if outcome.attempts > 1 {
        writeln!(
            out,
            "The branch moved meanwhile: re-applied on its new tip (attempt {} of {}).",
            outcome.attempts,
            flags.max_attempts.max(1)
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The plan's changes rendered by `strata diff`'s renderer (semantic,
/// secrets redacted), so a dry run reads like a review.
fn review_diff(publisher: &Publisher, plan: &Plan, layout: Layout) -> anyhow::Result<String> {
    let tmp = crate::fswalk::private_temp_dir("strata-push-")
        .map_err(|e| anyhow::anyhow!("cannot create a temporary directory: {e}"))?;
    let (old, new) = (tmp.path().join("old"), tmp.path().join("new"));
    publisher
        .checkout_sides(plan, &old, &new)
        .map_err(diag_err)?;
    // The secret values of the inventory the catalog was compiled from,
    // when it is here (red41).
    let redactor = Redactor::new(&[], true).map_err(diag_err)?;
    let inventory = crate::inventory::InventoryOptions {
        path: "./inventory".into(),
        ..Default::default()
    };
    let mut values = crate::workspace::known::worktree_known_values(inventory.clone(), &redactor);
    // The catalog being replaced holds the values of the revision it was
    // published from (red42: a password the change rotated away showed on
    // the old side): that revision's inventory, when this repository has
    // it.
    if let Some(rev) = publisher.tip_source_commit(plan) {
        values.extend(crate::workspace::known::revision_known_values(
            &rev, &inventory, &redactor,
        ));
    }
    let opts = DiffOptions {
        redactor: redactor.with_known_values(&values),
        ..DiffOptions::default()
    };
    // Commodore catalogs are read per instance under manifests/, not as
    // one `manifests` target.
    let roots: &[&str] = match layout {
        Layout::Kapitan => &[""],
        Layout::Commodore => &["manifests", "refs"],
    };
    let mut d = diff::CatalogDiff::default();
    for root in roots {
        let (o, n) = (old.join(root), new.join(root));
        for dir in [&o, &n] {
            std::fs::create_dir_all(dir)
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
        }
        d.append_prefixed(root, diff::diff_dirs(&o, &n, &opts).map_err(diag_err)?);
    }
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    Ok(diff::render::text(&d, color))
}

fn write_changes(out: &mut impl Write, plan: &Plan) -> std::io::Result<()> {
    writeln!(out)?;
    for s in &plan.summary {
        writeln!(
            out,
            "{}: {} added, {} changed, {} removed",
            s.group, s.added, s.changed, s.removed
        )?;
    }
    Ok(())
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.is_empty() {
                "\n".to_string()
            } else {
                format!("    {l}\n")
            }
        })
        .collect()
}

fn resolve_author(
    flag: Option<&str>,
    dry_run: bool,
    env: &dyn Fn(&str) -> Option<String>,
    cwd: &std::path::Path,
) -> anyhow::Result<Option<Identity>> {
    if let Some(a) = flag {
        return Identity::parse(a)
            .map(Some)
            .ok_or_else(|| anyhow!("invalid --author `{a}`: expected `NAME <EMAIL>`"));
    }
    if env("GITHUB_ACTIONS").as_deref() == Some("true") {
        return Ok(Some(publish::github_actions_identity()));
    }
    if let Some(i) = crate::git::configured_author(cwd) {
        return Ok(Some(i));
    }
    if dry_run {
        // Nothing is committed for real: do not insist on an identity.
        return Ok(Some(Identity {
            name: "strata".into(),
            email: "strata@localhost".into(),
        }));
    }
    // The user's global configuration, read by the publisher.
    Ok(None)
}

fn resolve_credentials(
    flags: &PublishFlags,
    url: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> anyhow::Result<Option<Credentials>> {
    let token = match &flags.token_env {
        Some(var) => match env(var) {
            Some(t) if !t.is_empty() => Some(t),
            _ => bail!("--token-env {var}: the environment variable {var} is not set or empty"),
        },
        None => env("GITHUB_TOKEN").filter(|t| !t.is_empty()),
    };
    // Tokens are for HTTPS; SSH authenticates through the agent.
    Ok(token
        .filter(|_| crate::git::is_http_url(url))
        .map(|token| Credentials {
            username: flags.token_user.clone(),
            token,
        }))
}

fn default_cache_dir(url: &str, env: &dyn Fn(&str) -> Option<String>) -> anyhow::Result<PathBuf> {
    let base = match (env("XDG_CACHE_HOME"), env("HOME")) {
        (Some(x), _) if !x.is_empty() => PathBuf::from(x),
        (_, Some(h)) if !h.is_empty() => PathBuf::from(h).join(".cache"),
        _ => bail!("cannot find a cache directory: pass --cache-dir"),
    };
    let name: String = crate::git::redact_url(url)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    Ok(base.join("strata").join("catalogs").join(name))
}
