//! The pull-request comment: reads what GitHub Actions provides (API URL,
//! repository, event payload, token), finds strata's earlier comment by its
//! hidden marker and updates it in place, or creates it once.
//!
//! The REST calls go through `ureq` (blocking, rustls): `octocrab` brings in
//! tokio and hyper, which is a large build for three HTTP requests.

pub mod body;

use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum GithubError {
    #[error("environment variable {name} is not set")]
    MissingEnv { name: &'static str },
    #[error("cannot read {}: {message}", path.display())]
    Io { path: PathBuf, message: String },
    #[error("{} is not a pull request event: {message}", path.display())]
    BadEvent { path: PathBuf, message: String },
    #[error("{} is not valid {what} JSON: {message}", path.display())]
    BadInput {
        path: PathBuf,
        what: &'static str,
        message: String,
    },
    #[error("GitHub API {method} {url} answered {status}: {message}")]
    Http {
        method: &'static str,
        url: String,
        status: u16,
        message: String,
    },
    #[error("GitHub API {method} {url} failed: {message}")]
    Transport {
        method: &'static str,
        url: String,
        message: String,
    },
}

impl GithubError {
    /// The token may not write here (a pull request from a fork).
    pub fn is_forbidden(&self) -> bool {
        matches!(
            self,
            GithubError::Http {
                status: 403 | 404,
                ..
            }
        )
    }
}

impl crate::diagnostics::ToDiagnostic for GithubError {
    fn to_diagnostic(&self) -> crate::diagnostics::Diagnostic {
        let d = crate::diagnostics::Diagnostic::error(self.to_string());
        match self {
            GithubError::MissingEnv { name } => d.with_hint(format!(
                "run inside GitHub Actions, or set {name} (GITHUB_API_URL, GITHUB_REPOSITORY, GITHUB_EVENT_PATH, GITHUB_TOKEN)"
            )),
            GithubError::Io { path, .. }
            | GithubError::BadEvent { path, .. }
            | GithubError::BadInput { path, .. } => d.with_file(path),
            GithubError::Http { status: 401, .. } => {
                d.with_hint("check GITHUB_TOKEN; the workflow needs `permissions: pull-requests: write`")
            }
            _ => d,
        }
    }
}

/// One lint finding as `strata lint --format json` writes it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct LintFinding {
    pub severity: String,
    #[serde(default)]
    pub code: String,
    pub message: String,
    #[serde(default)]
    pub file: Option<String>,
    #[serde(default)]
    pub line: Option<usize>,
    #[serde(default)]
    pub hints: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct LintReport {
    findings: Vec<LintFinding>,
}

/// Reads `strata lint --format json` output.
pub fn read_lint(path: &Path) -> Result<Vec<LintFinding>, GithubError> {
    let text = read(path)?;
    let r: LintReport = serde_json::from_str(&text).map_err(|e| GithubError::BadInput {
        path: path.into(),
        what: "lint",
        message: e.to_string(),
    })?;
    Ok(r.findings)
}

/// Reads `strata diff --format json` output.
pub fn read_diff(path: &Path) -> Result<crate::diff::CatalogDiff, GithubError> {
    let text = read(path)?;
    serde_json::from_str(&text).map_err(|e| GithubError::BadInput {
        path: path.into(),
        what: "diff",
        message: e.to_string(),
    })
}

/// Reads a file; `-` is standard input (`strata diff --format json | strata comment --diff -`).
fn read(path: &Path) -> Result<String, GithubError> {
    let err = |e: std::io::Error| GithubError::Io {
        path: path.into(),
        message: e.to_string(),
    };
    if path == Path::new("-") {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s).map_err(err)?;
        return Ok(s);
    }
    std::fs::read_to_string(path).map_err(err)
}

/// What the event payload tells about the pull request.
#[derive(Debug, Clone, PartialEq)]
pub struct PullRequest {
    pub number: u64,
    pub base_sha: Option<String>,
    pub head_sha: Option<String>,
    /// The head branch lives in another repository: the token cannot write.
    pub from_fork: bool,
}

impl PullRequest {
    pub fn from_event(path: &Path) -> Result<PullRequest, GithubError> {
        let text = read(path)?;
        let bad = |m: &str| GithubError::BadEvent {
            path: path.into(),
            message: m.into(),
        };
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(&e.to_string()))?;
        let pr = v
            .get("pull_request")
            .ok_or_else(|| bad("no `pull_request` object (run on `pull_request` events)"))?;
        let number = pr
            .get("number")
            .or_else(|| v.get("number"))
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| bad("no pull request `number`"))?;
        let s = |p: &str| pr.pointer(p).and_then(|x| x.as_str()).map(str::to_string);
        let head_repo = s("/head/repo/full_name");
        let base_repo = s("/base/repo/full_name");
        Ok(PullRequest {
            number,
            base_sha: s("/base/sha"),
            head_sha: s("/head/sha"),
            from_fork: matches!((&head_repo, &base_repo), (Some(h), Some(b)) if h != b),
        })
    }
}

/// A minimal client for the issue-comment endpoints of the REST API.
pub struct Client {
    agent: ureq::Agent,
    api_url: String,
    token: String,
    repo: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Comment {
    pub id: u64,
    #[serde(default)]
    pub body: Option<String>,
}

impl Client {
    pub fn new(api_url: &str, repo: &str, token: &str) -> Client {
        Client {
            agent: ureq::AgentBuilder::new()
                .timeout(Duration::from_secs(30))
                .user_agent(concat!("strata/", env!("CARGO_PKG_VERSION")))
                .build(),
            api_url: api_url.trim_end_matches('/').to_string(),
            token: token.to_string(),
            repo: repo.to_string(),
        }
    }

    fn request(&self, method: &'static str, url: &str) -> ureq::Request {
        self.agent
            .request(method, url)
            .set("Accept", "application/vnd.github+json")
            .set("X-GitHub-Api-Version", "2022-11-28")
            .set("Authorization", &format!("Bearer {}", self.token))
    }

    /// One request; idempotent ones (`GET`, `PATCH`) are tried once more
    /// after a server error or a dropped connection, which GitHub has now
    /// and then. `POST` is not, so a comment is never created twice.
    fn call(
        &self,
        method: &'static str,
        url: &str,
        body: Option<serde_json::Value>,
    ) -> Result<serde_json::Value, GithubError> {
        let retryable = |e: &GithubError| {
            matches!(e, GithubError::Http { status, .. } if *status >= 500)
                || matches!(e, GithubError::Transport { .. })
        };
        match self.call_once(method, url, body.clone()) {
            Err(e) if method != "POST" && retryable(&e) => {
                std::thread::sleep(Duration::from_secs(1));
                self.call_once(method, url, body)
            }
            r => r,
        }
    }

    fn call_once(
        &self,
        method: &'static str,
        url: &str,
        body: Option<serde_json::Value>,
    ) -> Result<serde_json::Value, GithubError> {
        let req = self.request(method, url);
        let res = match body {
            Some(b) => req.send_json(b),
            None => req.call(),
        };
        match res {
            Ok(r) => r.into_json().map_err(|e| GithubError::Transport {
                method,
                url: url.into(),
                message: format!("invalid JSON in the answer: {e}"),
            }),
            Err(ureq::Error::Status(status, r)) => {
                let text = r.into_string().unwrap_or_default();
                let message = serde_json::from_str::<serde_json::Value>(&text)
                    .ok()
                    .and_then(|v| v.get("message").and_then(|m| m.as_str()).map(String::from))
                    .unwrap_or(text);
                Err(GithubError::Http {
                    method,
                    url: url.into(),
                    status,
                    message,
                })
            }
            Err(e) => Err(GithubError::Transport {
                method,
                url: url.into(),
                message: e.to_string(),
            }),
        }
    }

    /// Every comment on the pull request, oldest first (all pages).
    pub fn list_comments(&self, pr: u64) -> Result<Vec<Comment>, GithubError> {
        let mut all = Vec::new();
        for page in 1.. {
            let url = format!(
                "{}/repos/{}/issues/{pr}/comments?per_page=100&page={page}",
                self.api_url, self.repo
            );
            let v = self.call("GET", &url, None)?;
            let batch: Vec<Comment> =
                serde_json::from_value(v).map_err(|e| GithubError::Transport {
                    method: "GET",
                    url: url.clone(),
                    message: format!("unexpected answer: {e}"),
                })?;
            let n = batch.len();
            all.extend(batch);
            if n < 100 {
                break;
            }
        }
        Ok(all)
    }

    pub fn create_comment(&self, pr: u64, body: &str) -> Result<u64, GithubError> {
        let url = format!("{}/repos/{}/issues/{pr}/comments", self.api_url, self.repo);
        let v = self.call("POST", &url, Some(serde_json::json!({ "body": body })))?;
        Ok(v.get("id").and_then(|i| i.as_u64()).unwrap_or(0))
    }

    pub fn update_comment(&self, id: u64, body: &str) -> Result<(), GithubError> {
        let url = format!("{}/repos/{}/issues/comments/{id}", self.api_url, self.repo);
        self.call("PATCH", &url, Some(serde_json::json!({ "body": body })))?;
        Ok(())
    }
}

/// What `publish` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Created(u64),
    Updated(u64),
    /// The comment already says exactly this.
    Unchanged(u64),
}

/// Creates the comment, or updates the one carrying the marker (the oldest
/// if there are several); posts nothing when its text is already current.
pub fn publish(
    client: &Client,
    pr: u64,
    marker_name: &str,
    text: &str,
) -> Result<Outcome, GithubError> {
    let marker = body::marker(marker_name);
    let existing = client
        .list_comments(pr)?
        .into_iter()
        .find(|c| c.body.as_deref().is_some_and(|b| b.contains(&marker)));
    match existing {
        Some(c) if c.body.as_deref().is_some_and(|b| same_text(b, text)) => {
            Ok(Outcome::Unchanged(c.id))
        }
        Some(c) => {
            client.update_comment(c.id, text)?;
            Ok(Outcome::Updated(c.id))
        }
        None => client.create_comment(pr, text).map(Outcome::Created),
    }
}

/// GitHub may store a body with `\r\n` line ends and without the final
/// newline: neither is a change.
fn same_text(stored: &str, new: &str) -> bool {
    stored.replace("\r\n", "\n").trim_end() == new.replace("\r\n", "\n").trim_end()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_ends_are_not_a_change() {
        assert!(same_text("a\r\nb\r\n", "a\nb\n"));
        assert!(same_text("a\nb", "a\nb\n"));
        assert!(!same_text("a\nb", "a\nc\n"));
    }

    #[test]
    fn fork_is_detected_from_the_event() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("event.json");
        std::fs::write(
            &p,
            r#"{"number": 7, "pull_request": {"number": 7, "base": {"sha": "b", "repo": {"full_name": "o/r"}}, "head": {"sha": "h", "repo": {"full_name": "fork/r"}}}}"#,
        )
        .unwrap();
        let pr = PullRequest::from_event(&p).unwrap();
        assert_eq!(pr.number, 7);
        assert!(pr.from_fork);
        assert_eq!(pr.head_sha.as_deref(), Some("h"));
        std::fs::write(&p, r#"{"push": {}}"#).unwrap();
        assert!(PullRequest::from_event(&p).is_err());
    }
}
