//! The pull-request comment: reads what GitHub Actions provides (API URL,
//! repository, event payload, token), finds strata's earlier comment by its
//! hidden marker and updates it in place, or creates it once.
//!
//! The REST calls go through `octocrab` on a current-thread tokio runtime
//! owned by [`Client`]: the rest of strata is synchronous.

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
    #[error("cannot set up a GitHub API client for {url}: {message}")]
    Setup { url: String, message: String },
    #[error("GITHUB_TOKEN is not a valid token (empty, or spaces or control characters inside)")]
    BadToken,
}

/// An error and its causes on one line: octocrab's top-level messages
/// ("Service error") do not say what went wrong.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut msg = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !msg.contains(&text) {
            msg.push_str(": ");
            msg.push_str(&text);
        }
        source = s.source();
    }
    msg
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
            GithubError::BadToken => {
                d.with_hint("pass the token alone, e.g. `GITHUB_TOKEN: ${{ github.token }}`")
            }
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

/// The most an event payload may hold: GitHub caps webhook payloads at
/// 25 MB.
const MAX_EVENT_BYTES: u64 = 64 * 1024 * 1024;

/// Reads the event payload (`GITHUB_EVENT_PATH`): a regular file of at
/// most [`MAX_EVENT_BYTES`]. A FIFO there blocked `ci` and `comment` for
/// ever, and `/dev/zero` was read until memory ran out (probe 38,
/// event-path-not-a-regular-file, low: the runner sets the variable, so
/// only a mistaken workflow or an earlier step points it elsewhere).
pub fn read_event(path: &Path) -> Result<String, std::io::Error> {
    use std::io::Read;
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(std::io::Error::other(
            "not a regular file (GITHUB_EVENT_PATH names the event's JSON file GitHub Actions writes)",
        ));
    }
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(MAX_EVENT_BYTES + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > MAX_EVENT_BYTES {
        return Err(std::io::Error::other(format!(
            "larger than {MAX_EVENT_BYTES} bytes: GitHub's event payloads are at most 25 MB"
        )));
    }
    Ok(text)
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
        let text = read_event(path).map_err(|e| GithubError::Io {
            path: path.into(),
            message: e.to_string(),
        })?;
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

/// A client for the issue-comment endpoints of the REST API, on `octocrab`.
///
/// strata is synchronous: the client owns a current-thread tokio runtime
/// and blocks on each request. The requests go through octocrab's raw
/// `_get`/`_post`/`_patch` (its base URI, token, headers, TLS and timeouts)
/// rather than its typed models, so the answers are read as loosely as
/// GitHub Enterprise versions differ, and the status of every failure is
/// known (the fork fallback and the one retry depend on it).
pub struct Client {
    runtime: tokio::runtime::Runtime,
    octocrab: octocrab::Octocrab,
    api_url: String,
    repo: String,
    /// The token is an installation token (`ghs_`), as the Actions token is.
    installation_token: bool,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Comment {
    pub id: u64,
    #[serde(default)]
    pub body: Option<String>,
    #[serde(default)]
    pub user: Option<User>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct User {
    #[serde(default)]
    pub login: String,
}

/// The account GitHub Actions' own token (`GITHUB_TOKEN`, an installation
/// token) writes comments as.
pub const ACTIONS_BOT: &str = "github-actions[bot]";

const TIMEOUT: Duration = Duration::from_secs(30);

/// The longest one request may take, answer included: [`TIMEOUT`] bounds
/// each read, and a server sending a byte every few seconds never hits it.
const REQUEST_TIME: Duration = Duration::from_secs(120);

/// The largest answer read: a page of 100 comments of GitHub's 65,536
/// characters each is about 30 MB.
const MAX_ANSWER: usize = 64 << 20;

/// The most pages of comments listed (100,000 comments).
const MAX_PAGES: u32 = 1_000;

/// The most comment text listed before strata's own comment is found
/// (`$STRATA_COMMENT_LIST_BYTES`): 4,000 comments of GitHub's longest.
const MAX_LISTED: u64 = 256 << 20;

/// The longest the listing of a pull request's comments may take, in
/// seconds (`$STRATA_COMMENT_LIST_SECONDS`): each page is bounded by
/// [`REQUEST_TIME`], but 1,000 pages of a server trickling bytes were
/// 1,000 of them (probe 27). GitHub answers a page in about a second.
const LIST_SECONDS: u64 = 600;

/// An answer's body, at most [`MAX_ANSWER`] bytes (octocrab's
/// `body_to_string` reads any size: 3 GB aborted a run; re-probe 16).
async fn read_answer<B>(body: B) -> Result<String, String>
where
    B: hyper::body::Body,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    use http_body_util::BodyExt;
    match http_body_util::Limited::new(body, MAX_ANSWER)
        .collect()
        .await
    {
        Ok(c) => Ok(String::from_utf8_lossy(&c.to_bytes()).into_owned()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(format!(
            "the answer is larger than {} MiB",
            MAX_ANSWER >> 20
        )),
        Err(e) => Err(error_chain(e.as_ref())),
    }
}

/// A server's error message as shown: at most 4,000 characters.
fn cut_message(message: &str) -> String {
    const MAX: usize = 4_000;
    match message.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}… ({} more bytes)", &message[..at], message.len() - at),
        None => message.to_string(),
    }
}

/// The id of the comment a `POST` created (or a `PATCH` updated): an
/// object's numeric `id`. A `POST` answered with a redirect is followed as
/// a `GET` (probe 27: the comment list it reached was taken for the
/// created comment, "created comment 0", and nothing had been created).
fn answer_id(text: &str) -> Option<u64> {
    #[derive(Deserialize)]
    struct IdAnswer {
        #[serde(default)]
        id: Option<u64>,
    }
    serde_json::from_str::<IdAnswer>(text).ok()?.id
}

/// The most comments one page may hold: strata asks for 100.
const PAGE_SIZE: usize = 100;

/// Reads an answer into `T`: its fields only, anything else skipped
/// without being kept. Read into a `serde_json::Value` first, a 64 MiB
/// answer of `[{},{},...]` took 3.3 GB of memory (`[0,0,...]` 2.75 GB in
/// 22 s), from the page of comments, `/user`, the created comment or an
/// error's message alike (probe 41, github-answer-json-amplification).
fn parse<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, serde_json::Error> {
    serde_json::from_str(text)
}

/// One page of comments: at most [`PAGE_SIZE`], refused past it as it is
/// read (6 million `{"id":1}` items were 6 million comments).
struct Page(Vec<Comment>);

impl<'de> Deserialize<'de> for Page {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Page, D::Error> {
        struct Items;
        impl<'de> serde::de::Visitor<'de> for Items {
            type Value = Page;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                write!(f, "a list of at most {PAGE_SIZE} comments")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Page, A::Error> {
                let mut out = Vec::new();
                while let Some(c) = seq.next_element::<Comment>()? {
                    if out.len() == PAGE_SIZE {
                        return Err(serde::de::Error::custom(format!(
                            "more than {PAGE_SIZE} comments in one page (strata asks for {PAGE_SIZE})"
                        )));
                    }
                    out.push(c);
                }
                Ok(Page(out))
            }
        }
        d.deserialize_seq(Items)
    }
}

/// What `GET /user` answers that strata reads.
#[derive(Deserialize)]
struct UserAnswer {
    #[serde(default, deserialize_with = "string_or_none")]
    login: Option<String>,
}

/// A string, or `None` for any other JSON value (skipped, not kept): the
/// login `/user` answers.
fn string_or_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Option<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
            while a.next_element::<IgnoredAny>()?.is_some() {}
            Ok(None)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
            while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(None)
        }
    }
    d.deserialize_any(V)
}

impl Client {
    /// A client for `repo` (`owner/name`) on the API at `api_url` (the
    /// routes are joined to it, so `https://ghe.example.com/api/v3` works).
    pub fn new(api_url: &str, repo: &str, token: &str) -> Result<Client, GithubError> {
        let api_url = api_url.trim_end_matches('/').to_string();
        // A token pasted with its newline, or with a space inside, cannot go
        // in a header (octocrab would panic on it).
        let token = token.trim();
        if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(GithubError::BadToken);
        }
        let setup = |message: String| GithubError::Setup {
            url: api_url.clone(),
            message,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| setup(format!("cannot start the HTTP runtime: {e}")))?;
        // octocrab spawns its request queue on the current runtime.
        let octocrab = {
            let _in_runtime = runtime.enter();
            octocrab::Octocrab::builder()
                .base_uri(api_url.as_str())
                .map_err(|e| setup(error_chain(&e)))?
                .personal_token(token.to_string())
                .add_header(
                    http::header::ACCEPT,
                    "application/vnd.github+json".to_string(),
                )
                .set_connect_timeout(Some(TIMEOUT))
                .set_read_timeout(Some(TIMEOUT))
                .set_write_timeout(Some(TIMEOUT))
                .build()
                .map_err(|e| setup(error_chain(&e)))?
        };
        Ok(Client {
            runtime,
            octocrab,
            api_url,
            repo: repo.to_string(),
            installation_token: token.starts_with("ghs_"),
        })
    }

    /// One request; idempotent ones (`GET`, `PATCH`) are tried once more
    /// after a server error or a dropped connection, which GitHub has now
    /// and then. `POST` is not, so a comment is never created twice.
    /// (octocrab's own retry layer is not built in: it would retry `POST`.)
    fn call(
        &self,
        method: &'static str,
        route: &str,
        body: Option<serde_json::Value>,
    ) -> Result<String, GithubError> {
        let retryable = |e: &GithubError| {
            matches!(e, GithubError::Http { status, .. } if *status >= 500)
                || matches!(e, GithubError::Transport { .. })
        };
        match self.call_once(method, route, body.as_ref()) {
            Err(e) if method != "POST" && retryable(&e) => {
                std::thread::sleep(Duration::from_secs(1));
                self.call_once(method, route, body.as_ref())
            }
            r => r,
        }
    }

    /// `route` is relative (`/repos/...`): octocrab joins it to the base URI
    /// and only then adds the token. The answer's text, read into what each
    /// caller needs ([`parse`]), never into a `serde_json::Value`.
    fn call_once(
        &self,
        method: &'static str,
        route: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<String, GithubError> {
        let url = format!("{}{route}", self.api_url);
        let transport = |message: String| GithubError::Transport {
            method,
            url: url.clone(),
            message,
        };
        let octo = &self.octocrab;
        let work = async {
            let sent = match method {
                "GET" => octo._get(route).await,
                "POST" => octo._post(route, body).await,
                "PATCH" => octo._patch(route, body).await,
                _ => unreachable!("only GET, POST and PATCH are used"),
            };
            let res = sent.map_err(|e| transport(error_chain(&e)))?;
            let status = res.status().as_u16();
            let text = read_answer(res.into_body()).await.map_err(transport)?;
            if !(200..300).contains(&status) {
                #[derive(Deserialize)]
                struct ErrorAnswer {
                    #[serde(default)]
                    message: Option<String>,
                }
                let message = serde_json::from_str::<ErrorAnswer>(&text)
                    .ok()
                    .and_then(|a| a.message)
                    .unwrap_or(text);
                // A server's message goes to the job log: a few lines.
                let message = cut_message(&message);
                return Err(GithubError::Http {
                    method,
                    url: url.clone(),
                    status,
                    message,
                });
            }
            Ok(text)
        };
        self.runtime.block_on(async {
            tokio::time::timeout(REQUEST_TIME, work)
                .await
                .map_err(|_| {
                    transport(format!(
                        "no complete answer within {} s",
                        REQUEST_TIME.as_secs()
                    ))
                })?
        })
    }

    /// The pull request's comments page by page, oldest first, each page
    /// handed to `each` and dropped before the next is asked for, until
    /// `each` answers `false` or a page is not full (at most [`MAX_PAGES`]:
    /// a server that always answers a full page would be asked for ever).
    /// Anyone can comment on a pull request, up to 65,536 characters each:
    /// holding every page (1,000 pages of 100 comments of 60 KB took 6.4 GB)
    /// would let them choose the memory a review takes.
    pub fn for_each_comment_page(
        &self,
        pr: u64,
        mut each: impl FnMut(Vec<Comment>) -> Result<bool, GithubError>,
    ) -> Result<(), GithubError> {
        // The allocator keeps much of what each page took (reading 1,000
        // pages of 6 MB one at a time still ended at 6.3 GB of memory):
        // bound what is read in all.
        let max_listed = crate::limits::get("STRATA_COMMENT_LIST_BYTES", MAX_LISTED);
        let list_seconds = crate::limits::get("STRATA_COMMENT_LIST_SECONDS", LIST_SECONDS);
        let started = std::time::Instant::now();
        let mut listed = 0u64;
        let listing_err = |message: String| GithubError::Transport {
            method: "GET",
            url: format!("{}/repos/{}/issues/{pr}/comments", self.api_url, self.repo),
            message,
        };
        for page in 1.. {
            if page > MAX_PAGES {
                return Err(listing_err(format!(
                    "more than {MAX_PAGES} pages of 100 comments: the server's answers do not end"
                )));
            }
            // Checked between pages: the page under way is bounded by
            // REQUEST_TIME (and its one retry).
            if page > 1 && started.elapsed().as_secs() >= list_seconds {
                return Err(listing_err(format!(
                    "listing the pull request's comments took more than {list_seconds} s ({} pages read): raise STRATA_COMMENT_LIST_SECONDS if the server is slow",
                    page - 1
                )));
            }
            let route = format!(
                "/repos/{}/issues/{pr}/comments?per_page=100&page={page}",
                self.repo
            );
            let text = self.call("GET", &route, None)?;
            let batch = parse::<Page>(&text)
                .map_err(|e| GithubError::Transport {
                    method: "GET",
                    url: format!("{}{route}", self.api_url),
                    message: format!("unexpected answer: {e}"),
                })?
                .0;
            let full = batch.len() >= 100;
            listed += batch
                .iter()
                .map(|c| c.body.as_ref().map_or(0, String::len) as u64)
                .sum::<u64>();
            if listed > max_listed {
                return Err(listing_err(format!(
                    "the pull request's comments before strata's own hold more than {max_listed} bytes (anyone may comment): raise STRATA_COMMENT_LIST_BYTES to read further"
                )));
            }
            if !each(batch)? || !full {
                break;
            }
        }
        Ok(())
    }

    /// The login comments made with this token carry: `$STRATA_COMMENT_AUTHOR`
    /// when set (a GitHub App's own token comments as `<app>[bot]`, which an
    /// installation token cannot look up), else `github-actions[bot]` for
    /// an installation token (which cannot read `/user`), else the token's
    /// user.
    pub fn author(&self) -> Result<String, GithubError> {
        if let Some(login) = std::env::var("STRATA_COMMENT_AUTHOR")
            .ok()
            .filter(|l| !l.trim().is_empty())
        {
            return Ok(login.trim().to_string());
        }
        if self.installation_token {
            return Ok(ACTIONS_BOT.to_string());
        }
        match self.call("GET", "/user", None) {
            Ok(text) => Ok(parse::<UserAnswer>(&text)
                .map_err(|e| GithubError::Transport {
                    method: "GET",
                    url: format!("{}/user", self.api_url),
                    message: format!("unexpected answer: {e}"),
                })?
                .login
                .unwrap_or_default()),
            // An app's token answers 403 here: it is a bot like the Actions one.
            Err(e) if e.is_forbidden() => Ok(ACTIONS_BOT.to_string()),
            Err(e) => Err(e),
        }
    }

    pub fn create_comment(&self, pr: u64, body: &str) -> Result<u64, GithubError> {
        let route = format!("/repos/{}/issues/{pr}/comments", self.repo);
        let text = self.call("POST", &route, Some(serde_json::json!({ "body": body })))?;
        answer_id(&text).ok_or_else(|| GithubError::Transport {
            method: "POST",
            url: format!("{}{route}", self.api_url),
            message: "the answer is not the created comment (no numeric `id`): was the request redirected? Check GITHUB_API_URL".into(),
        })
    }

    /// GitHub answers the updated comment: anything else means the
    /// request went elsewhere (a `PATCH` answered with a 303 is followed as
    /// a `GET`, and the comment list it reached was taken for success,
    /// "updated comment 1" with nothing updated; probe 41).
    pub fn update_comment(&self, id: u64, body: &str) -> Result<(), GithubError> {
        let route = format!("/repos/{}/issues/comments/{id}", self.repo);
        let text = self.call("PATCH", &route, Some(serde_json::json!({ "body": body })))?;
        if answer_id(&text) != Some(id) {
            return Err(GithubError::Transport {
                method: "PATCH",
                url: format!("{}{route}", self.api_url),
                message: format!("the answer is not the updated comment (no `id` {id}): was the request redirected? Check GITHUB_API_URL"),
            });
        }
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

/// strata's own comment for `marker_name` on the pull request: the oldest
/// one that starts with the marker *and* was written by this token's
/// account. Anyone can type the marker into a comment; such a comment is
/// never taken for ours (neither updated nor linked to).
pub fn own_comment(
    client: &Client,
    pr: u64,
    marker_name: &str,
) -> Result<Option<Comment>, GithubError> {
    let marker = body::marker(marker_name);
    // Asked once, and only when a comment carries the marker.
    let mut me: Option<String> = None;
    let mut found = None;
    client.for_each_comment_page(pr, |batch| {
        for c in batch {
            if !c.body.as_deref().is_some_and(|b| b.starts_with(&marker)) {
                continue;
            }
            if me.is_none() {
                me = Some(client.author()?);
            }
            let me = me.as_deref().unwrap_or_default();
            // A `/user` answer without a login must not match a comment
            // whose user has none either.
            if !me.is_empty() && c.user.as_ref().is_some_and(|u| u.login == me) {
                // The oldest one is ours: later pages need not be read.
                found = Some(c);
                return Ok(false);
            }
        }
        Ok(true)
    })?;
    Ok(found)
}

/// Creates the comment, or updates strata's own one ([`own_comment`]);
/// posts nothing when its text is already current.
pub fn publish(
    client: &Client,
    pr: u64,
    marker_name: &str,
    text: &str,
) -> Result<Outcome, GithubError> {
    let existing = own_comment(client, pr, marker_name)?;
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

    /// Re-probe 16 (github-api-answers-unbounded): an answer of any size
    /// was read whole (3 GB aborted a run), and a server's error message
    /// of 50 MB went to the log.
    #[test]
    fn answers_and_messages_are_bounded() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let big = http_body_util::Full::new(hyper::body::Bytes::from(vec![b' '; MAX_ANSWER + 1]));
        let err = rt.block_on(read_answer(big)).unwrap_err();
        assert_eq!(err, "the answer is larger than 64 MiB");
        let fits = http_body_util::Full::new(hyper::body::Bytes::from_static(b"[]"));
        assert_eq!(rt.block_on(read_answer(fits)).unwrap(), "[]");
        let long = "é".repeat(5_000);
        let cut = cut_message(&long);
        assert!(
            cut.starts_with(&"é".repeat(4_000)) && cut.ends_with("… (2000 more bytes)"),
            "{cut}"
        );
        assert_eq!(cut_message("Not Found"), "Not Found");
    }

    #[test]
    fn only_an_object_with_an_id_is_a_created_comment() {
        assert_eq!(answer_id(r#"{"id": 7, "body": "x"}"#), Some(7));
        assert_eq!(answer_id(r#"[{"id": 7}]"#), None);
        assert_eq!(answer_id(r#"{"id": "7"}"#), None);
        assert_eq!(answer_id("{}"), None);
    }

    /// Probe 41 (github-answer-json-amplification): a 60 MB answer read
    /// into a `serde_json::Value` took 3.3 GB. Each answer is read into
    /// what is needed; a page holds at most 100 comments.
    #[test]
    fn answers_are_read_into_what_is_needed_only() {
        let item = r#"{"id":1,"body":"b","user":{"login":"u"},"x":[[{}],0,"s"]}"#;
        let page = |n: usize| format!("[{}]", vec![item; n].join(","));
        assert_eq!(parse::<Page>(&page(100)).unwrap().0.len(), 100);
        let e = parse::<Page>(&page(101)).err().unwrap().to_string();
        assert!(e.contains("more than 100 comments in one page"), "{e}");
        // Skipped, not kept: a large value where a login goes.
        let big = format!(r#"{{"login":[{}0]}}"#, "{},".repeat(1_000_000));
        assert_eq!(parse::<UserAnswer>(&big).unwrap().login, None);
        let me = parse::<UserAnswer>(r#"{"login":"me","id":3}"#).unwrap();
        assert_eq!(me.login.as_deref(), Some("me"));
        assert_eq!(
            answer_id(&format!(r#"{{"x":[{}0],"id":9}}"#, "{},".repeat(1_000_000))),
            Some(9)
        );
    }

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

    /// Probe 38 (event-path-not-a-regular-file): a FIFO blocked the read
    /// for ever and `/dev/zero` took all memory.
    #[cfg(unix)]
    #[test]
    fn an_event_path_that_is_no_regular_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("event.json");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        // The directory first: before the fix the others never returned.
        for p in [dir.path(), Path::new("/dev/zero"), fifo.as_path()] {
            let e = PullRequest::from_event(p).unwrap_err().to_string();
            assert!(e.contains("not a regular file"), "{e}");
        }
    }
}
