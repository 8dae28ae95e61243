//! A GitHub REST API stand-in on 127.0.0.1 for the issue-comment endpoints
//! of `acme/infra` pull request 7, recording every request (shared by the
//! review and ci tests).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/review")
}

#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub auth: String,
    pub body: String,
}

#[derive(Default)]
pub struct GithubState {
    pub comments: Vec<(u64, String, String)>, // id, user, body
    pub requests: Vec<Request>,
    pub forbid_writes: bool,
    /// The `message` of the 403 answering a write (GitHub's when `None`).
    pub forbid_message: Option<String>,
    /// Answer this many requests with 502 first.
    pub fail_next: usize,
    pub next_id: u64,
    /// The login `GET /user` answers; `None` answers 403 as GitHub does
    /// for an installation token.
    pub token_user: Option<String>,
    /// Answer `POST`s with a 302 to this path.
    pub redirect_posts: Option<String>,
    /// Answer `PATCH`es with a 303 (see other: a `GET`) to this path.
    pub redirect_patches: Option<String>,
    /// Wait this long before answering each page of the comment list.
    pub page_delay: std::time::Duration,
}

/// A GitHub REST API stand-in on 127.0.0.1 for the issue-comment endpoints.
pub struct FakeGithub {
    pub url: String,
    pub state: Arc<Mutex<GithubState>>,
}

fn comment_json(id: u64, user: &str, body: &str) -> serde_json::Value {
    // Shaped like a recorded `GET /repos/{o}/{r}/issues/{n}/comments` item.
    let recorded: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("github/comment.json")).unwrap(),
    )
    .unwrap();
    let mut c = recorded;
    c["id"] = id.into();
    c["url"] = format!("https://api.github.com/repos/acme/infra/issues/comments/{id}").into();
    c["html_url"] = format!("https://github.com/acme/infra/pull/7#issuecomment-{id}").into();
    c["user"]["login"] = user.into();
    c["body"] = body.into();
    c
}

impl FakeGithub {
    pub fn start() -> FakeGithub {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(GithubState {
            next_id: 1001,
            ..Default::default()
        }));
        let st = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() || line.is_empty() {
                    continue;
                }
                let mut parts = line.split_whitespace();
                let method = parts.next().unwrap_or("").to_string();
                let path = parts.next().unwrap_or("").to_string();
                let mut len = 0;
                let mut auth = String::new();
                loop {
                    let mut h = String::new();
                    reader.read_line(&mut h).unwrap();
                    let h = h.trim_end();
                    if h.is_empty() {
                        break;
                    }
                    let (k, v) = h.split_once(':').unwrap();
                    match k.to_ascii_lowercase().as_str() {
                        "content-length" => len = v.trim().parse().unwrap(),
                        "authorization" => auth = v.trim().to_string(),
                        _ => {}
                    }
                }
                let mut body = vec![0; len];
                reader.read_exact(&mut body).unwrap();
                let body = String::from_utf8(body).unwrap();
                let (status, answer) = {
                    let mut s = st.lock().unwrap();
                    s.requests.push(Request {
                        method: method.clone(),
                        path: path.clone(),
                        auth,
                        body: body.clone(),
                    });
                    answer(&mut s, &method, &path, &body)
                };
                let text = answer.to_string();
                let location = match answer.get("location").and_then(|l| l.as_str()) {
                    Some(l) if (300..400).contains(&status) => format!("Location: {l}\r\n"),
                    _ => String::new(),
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} X\r\n{location}Content-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                    text.len()
                );
            }
        });
        FakeGithub { url, state }
    }

    pub fn requests(&self) -> Vec<Request> {
        std::mem::take(&mut self.state.lock().unwrap().requests)
    }
}

fn answer(s: &mut GithubState, method: &str, path: &str, body: &str) -> (u16, serde_json::Value) {
    let forbidden = serde_json::json!({
        "message": s.forbid_message.clone().unwrap_or_else(|| "Resource not accessible by integration".into()),
        "documentation_url": "https://docs.github.com/rest/issues/comments#create-an-issue-comment",
        "status": "403"
    });
    let new_body = || {
        serde_json::from_str::<serde_json::Value>(body).unwrap()["body"]
            .as_str()
            .unwrap()
            .to_string()
    };
    if s.fail_next > 0 {
        s.fail_next -= 1;
        return (502, serde_json::json!({"message": "Server Error"}));
    }
    let route = path.split('?').next().unwrap();
    match (method, route) {
        ("GET", "/user") => match &s.token_user {
            Some(u) => (200, serde_json::json!({ "login": u, "type": "User" })),
            None => (403, forbidden),
        },
        ("GET", "/repos/acme/infra/issues/7/comments") => {
            std::thread::sleep(s.page_delay);
            let page: usize = path
                .split("page=")
                .last()
                .and_then(|p| p.parse().ok())
                .unwrap_or(1);
            let items: Vec<_> = s
                .comments
                .iter()
                .skip((page - 1) * 100)
                .take(100)
                .map(|(id, u, b)| comment_json(*id, u, b))
                .collect();
            (200, serde_json::Value::Array(items))
        }
        ("POST", "/repos/acme/infra/issues/7/comments") if s.forbid_writes => (403, forbidden),
        ("POST", _) if s.redirect_posts.is_some() => (
            302,
            serde_json::json!({ "location": s.redirect_posts.clone() }),
        ),
        ("POST", "/repos/acme/infra/issues/7/comments") => {
            let id = s.next_id;
            s.next_id += 1;
            let b = new_body();
            let user = s
                .token_user
                .clone()
                .unwrap_or_else(|| "github-actions[bot]".into());
            s.comments.push((id, user.clone(), b.clone()));
            (201, comment_json(id, &user, &b))
        }
        ("PATCH", _) if s.redirect_patches.is_some() => (
            303,
            serde_json::json!({ "location": s.redirect_patches.clone() }),
        ),
        ("PATCH", p) if p.starts_with("/repos/acme/infra/issues/comments/") => {
            if s.forbid_writes {
                return (403, forbidden);
            }
            let id: u64 = p.rsplit('/').next().unwrap().parse().unwrap();
            let b = new_body();
            match s.comments.iter_mut().find(|c| c.0 == id) {
                Some(c) => {
                    c.2 = b.clone();
                    (200, comment_json(id, "github-actions[bot]", &b))
                }
                None => (404, serde_json::json!({"message": "Not Found"})),
            }
        }
        _ => (404, serde_json::json!({"message": "Not Found"})),
    }
}
