//! The working-tree confinement of the commands other than `compile`,
//! `lint` and `inventory` that read files a pull request chooses
//! (`template`, `order`, `diff`, `refs`, `package`, `component compile`,
//! `catalog compile`): on with `--confine` or on a GitHub `pull_request*`
//! event, as compile's is, and built on the same [`Confine`]. A committed
//! symlink (or a path in a committed file) leading out of the checkout
//! made these commands print the runner's files (issue 19: `strata
//! template -f DIR` through a link in DIR).

use crate::compile::confine::Confine;
use crate::compile::jsonnet::normpath;
use std::path::Path;

/// The confinement of `strata COMMAND` when `flag` (`--confine`) is given
/// or the event is a pull request's; `None` otherwise. Reads must lie in
/// the working directory, lexically and through symlinks. A path in
/// `given` (the user's flags) that lies outside the working directory as
/// written is trusted with all below it; one inside it is held to it like
/// any other, since the pull request chose what it is (a link committed as
/// `values.yml`).
pub(crate) fn working_tree(
    command: &str,
    flag: bool,
    given: &[&Path],
) -> anyhow::Result<Option<Confine>> {
    if !(flag || crate::commands::compile::pull_request_event()) {
        return Ok(None);
    }
    let cwd = std::env::current_dir()?;
    let real = cwd.canonicalize()?;
    let mut c = Confine::new([cwd.clone()]).with_why(format!(
        "and `strata {command}` on a pull request (a GitHub `pull_request*` event, or --confine) reads only the working directory's own files: the pull request chose where this path leads; to read a file outside it deliberately, give its real path on the command line"
    ));
    for p in given {
        if *p == Path::new("-") {
            continue;
        }
        let lex = normpath(&cwd.join(p));
        if !lex.starts_with(&cwd) && !lex.starts_with(&real) {
            c.add(&lex);
        }
    }
    Ok(Some(c))
}

/// Checks an input given on the command line (or named by a file the
/// pull request holds): a file, or a directory with every symlink below it
/// ([`Confine::check_tree`]), before anything in it is listed or read.
pub(crate) fn check_input(confine: Option<&Confine>, path: &Path) -> anyhow::Result<()> {
    let Some(c) = confine else {
        return Ok(());
    };
    if path == Path::new("-") {
        return Ok(());
    }
    if path.is_dir() {
        c.check_tree(path)
    } else {
        c.check(path)
    }
    .map_err(|e| anyhow::anyhow!("{e}"))
}

/// [`check_input`] of each path.
pub(crate) fn check_inputs<'a>(
    confine: Option<&Confine>,
    paths: impl IntoIterator<Item = &'a Path>,
) -> anyhow::Result<()> {
    for p in paths {
        check_input(confine, p)?;
    }
    Ok(())
}

/// Refuses an output file (`flag`, its path) that leads out of the working
/// directory when confined: a committed `strata-review.md ->
/// /home/runner/.bashrc` had `comment` (and `diff --json-out`) overwrite
/// the runner's file on a pull request.
pub(crate) fn check_output(
    confine: Option<&Confine>,
    command: &str,
    flag: &str,
    path: &Path,
) -> anyhow::Result<()> {
    // A dangling link (to a file yet to be written) resolves nowhere, so
    // its target is checked as written: the write would create it.
    match confine.map(|c| !c.check_write(path)) {
        Some(true) => anyhow::bail!(
            "{flag} {}: it leads outside the working directory (through a symlink the pull request committed, or a path outside it), and `strata {command}` on a pull request (a GitHub `pull_request*` event, or --confine) writes only inside it: remove the link, or give a path outside the working directory on the command line",
            path.display()
        ),
        _ => Ok(()),
    }
}

/// [`check_output`] of a directory a command writes into (and deletes
/// from), and of every symlink below it, dangling ones too
/// ([`Confine::check_links_below`]): a committed
/// `compiled -> /home/runner/.ssh` (or `catalog`, `inventory/targets`,
/// a link inside them) had `component compile` and `catalog compile`
/// replace the runner's files there on a pull request. Links that stay
/// inside the working directory are kept.
pub(crate) fn check_output_dir(
    confine: Option<&Confine>,
    command: &str,
    flag: &str,
    dir: &Path,
) -> anyhow::Result<()> {
    let Some(c) = confine else {
        return Ok(());
    };
    check_output(confine, command, flag, dir)?;
    let link = |p: &Path| check_output(confine, command, flag, p).map_err(|e| e.to_string());
    c.check_links_below(dir, false, &link)
        .map_err(anyhow::Error::msg)
}
