//! `git push` through the command-line client (gix has no push yet).
//!
//! The token reaches git only through this process's child environment:
//! an inline credential helper, configured with `GIT_CONFIG_COUNT`/`KEY`/
//! `VALUE` variables (not `-c`, which would put even the helper on the
//! command line), prints `$STRATA_GIT_TOKEN` when git asks. Nothing is
//! written to disk and the token is never in any argv.

use super::{redact_url, Credentials, GitError, Result};
use gix::ObjectId;
use std::path::Path;
use std::process::{Command, Stdio};

/// What happened to a push that git carried out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushOutcome {
    /// The branch now points at the commit.
    Pushed,
    /// The branch moved on the remote since it was fetched (or another
    /// pusher holds its lock): fetch, re-apply and retry.
    Stale { message: String },
}

/// Answers only when git asks for the configured host (`host=` on stdin,
/// with its port): a redirect elsewhere gets no token.
const HELPER: &str = "!f() { test \"$1\" = get || exit 0; h=; \
while IFS= read -r l; do case \"$l\" in host=*) h=\"${l#host=}\";; esac; done; \
test -n \"$h\" && test \"$h\" = \"$STRATA_GIT_HOST\" || exit 0; \
echo \"username=${STRATA_GIT_USERNAME}\"; echo \"password=${STRATA_GIT_TOKEN}\"; }; f";

/// Pushes `commit` from the repository at `git_dir` to `refs/heads/<branch>`
/// of `url`, as a fast-forward only.
pub fn push(
    git_dir: &Path,
    url: &str,
    commit: ObjectId,
    branch: &str,
    credentials: Option<&Credentials>,
) -> Result<PushOutcome> {
    let shown = redact_url(url);
    let mut cmd = Command::new("git");
    cmd.arg("--git-dir")
        .arg(git_dir)
        // `--`: a URL from a manifest is never an option of git push.
        .args(["push", "--porcelain", "--no-verify", "--", url])
        .arg(format!("{commit}:refs/heads/{branch}"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Never prompt: a CI job must fail, not hang.
        .env("GIT_TERMINAL_PROMPT", "0")
        .env_remove("GIT_ASKPASS")
        .env_remove("SSH_ASKPASS")
        .env_remove("STRATA_GIT_TOKEN")
        .env_remove("STRATA_GIT_USERNAME")
        .env_remove("STRATA_GIT_HOST");
    // Keep any GIT_CONFIG_* the user set, appending ours after them.
    let base = std::env::var("GIT_CONFIG_COUNT")
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(0);
    // With a token, replace the configured helpers by ours; without one,
    // the user's helpers (a credential manager on a laptop) stay.
    // Redirects are not followed at all: git would ask for credentials for
    // the new host (the helper refuses those too).
    let stall = super::stall_limits();
    let mut config = vec![("http.followRedirects", "false")];
    // git's own keys only (gitoxide's are gix's).
    config.extend(
        stall
            .iter()
            .filter(|(k, _)| k.starts_with("http."))
            .map(|(k, v)| (*k, v.as_str())),
    );
    if let Some(c) = credentials {
        cmd.env("STRATA_GIT_HOST", super::url_host(url).unwrap_or_default());
        config.push(("credential.helper", ""));
        config.push(("credential.helper", HELPER));
        cmd.env("STRATA_GIT_USERNAME", &c.username)
            .env("STRATA_GIT_TOKEN", &c.token);
    }
    for (i, (k, v)) in config.iter().enumerate() {
        cmd.env(format!("GIT_CONFIG_KEY_{}", base + i), k)
            .env(format!("GIT_CONFIG_VALUE_{}", base + i), v);
    }
    cmd.env("GIT_CONFIG_COUNT", (base + config.len()).to_string());

    let out = cmd.output().map_err(GitError::Spawn)?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let scrub = |s: &str| -> String {
        let mut s = s.replace(url, &shown);
        if let Some(c) = credentials {
            if !c.token.is_empty() {
                s = s.replace(&c.token, "***");
            }
        }
        s.trim().to_string()
    };
    if out.status.success() {
        return Ok(PushOutcome::Pushed);
    }
    // `--porcelain` prints one line per ref: `!<TAB>src:dst<TAB>[rejected] (reason)`.
    let refline = stdout
        .lines()
        .find(|l| l.starts_with('!'))
        .map(|l| l.to_string());
    if let Some(line) = &refline {
        if is_stale(line) {
            return Ok(PushOutcome::Stale {
                message: scrub(line.rsplit('\t').next().unwrap_or(line)),
            });
        }
    }
    let mut message = scrub(&stderr);
    if let Some(line) = refline {
        let reason = scrub(line.rsplit('\t').next().unwrap_or(&line));
        if !message.contains(&reason) {
            message = format!("{reason}\n{message}");
        }
    }
    if message.is_empty() {
        message = format!("git push exited with {}", out.status);
    }
    Err(GitError::Push {
        url: shown,
        message,
    })
}

/// Rejections that mean "the branch moved under us", as opposed to hooks,
/// protections or permissions, which no retry fixes.
fn is_stale(line: &str) -> bool {
    let l = line.to_ascii_lowercase();
    l.contains("[rejected]")
        && (l.contains("fetch first") || l.contains("non-fast-forward") || l.contains("stale"))
        || l.contains("[remote rejected]")
            && (l.contains("failed to update ref")
                || l.contains("cannot lock ref")
                || l.contains("failed to lock")
                || l.contains("incorrect old value"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_moved_branches_from_other_rejections() {
        assert!(is_stale("!\tabc:refs/heads/main\t[rejected] (fetch first)"));
        assert!(is_stale(
            "!\tabc:refs/heads/main\t[rejected] (non-fast-forward)"
        ));
        assert!(is_stale(
            "!\tabc:refs/heads/main\t[remote rejected] (failed to update ref)"
        ));
        assert!(!is_stale(
            "!\tabc:refs/heads/main\t[remote rejected] (pre-receive hook declined)"
        ));
        assert!(!is_stale(
            "!\tabc:refs/heads/main\t[remote rejected] (protected branch hook declined)"
        ));
    }
}
