//! What strata shows of, and asks of, the remote git servers it fetches
//! from and pushes to: a URL as it may be printed (no credentials), and
//! the stall limits every http(s) transfer runs under. Below `git` and
//! `packages` alike, which both talk to such servers.

/// Shows a URL without secrets: no password, and for http(s) no user name
/// either (`https://<token>@github.com/...` is a common way to embed a
/// token). SSH user names (`git@host`) stay.
pub fn redact_url(url: &str) -> String {
    match gix::Url::try_from(url) {
        Ok(mut u) => {
            let http = matches!(u.scheme, gix::url::Scheme::Http | gix::url::Scheme::Https);
            let mut changed = false;
            if u.password().is_some() {
                u.set_password(Some("***".into()));
                changed = true;
            }
            if http && u.user().is_some_and(|user| !user.is_empty()) {
                u.set_user(Some("***".into()));
                changed = true;
            }
            if changed {
                u.to_bstring().to_string()
            } else {
                url.to_string()
            }
        }
        // Unparseable: hide anything between `//` and `@` to be safe.
        Err(_) => match (url.find("://"), url.rfind('@')) {
            (Some(s), Some(at)) if at > s => format!("{}***{}", &url[..s + 3], &url[at..]),
            _ => url.to_string(),
        },
    }
}

/// The most a fetch or push over http(s) may stall: under 1,000 bytes a
/// second for `$STRATA_PROGRAM_TIMEOUT` seconds (300), and 30 s to connect.
/// Without them a server that accepts and never answers held `push` and
/// `fetch` for ever (probe 27); git and gix set no time limit of their own.
pub fn stall_limits() -> [(&'static str, String); 3] {
    [
        ("http.lowSpeedLimit", "1000".to_string()),
        (
            "http.lowSpeedTime",
            crate::child::per_program_timeout().as_secs().to_string(),
        ),
        ("gitoxide.http.connectTimeout", "30000".to_string()),
    ]
}
/// `text` with `%XX` escapes decoded (a URL's user and password; the
/// review's redaction reads percent-encoded `data:` URLs with it).
pub fn percent_decoded(text: &str) -> Vec<u8> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b
            .get(i + 1..i + 3)
            .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (b[i], hex) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// `path` with every byte outside printable ASCII percent-encoded: the
/// request line is ASCII.
pub fn percent_encoded(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_graphic() {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
