//! A minimal Lieutenant API client: `GET <api>/clusters/<id>` and
//! `GET <api>/tenants/<tenant>` with a bearer token, over `http://` or
//! `https://`. It reuses the hyper + rustls (ring) stack octocrab already
//! brings, so no extra TLS library is compiled; server certificates are
//! checked against the system roots, or the PEM bundle named by
//! `SSL_CERT_FILE` / `SSL_CERT_DIR` when set (rustls-native-certs).

use super::{ClusterInfo, CommodoreError};
use crate::value::Value;
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(30);

/// The largest answer read (a Lieutenant cluster or tenant is kilobytes).
const MAX_ANSWER: usize = 64 << 20;

/// A response as the caller needs it: status and raw body.
struct Response {
    status: u16,
    body: Vec<u8>,
}

/// Why a request failed before any response arrived.
fn describe_transport_error(e: &(dyn std::error::Error + 'static)) -> String {
    let mut chain = Vec::new();
    let mut tls = None;
    let mut refused = false;
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(t) = err.downcast_ref::<rustls::Error>() {
            tls = Some(t.to_string());
        }
        let text = err.to_string();
        if !chain.iter().any(|c: &String| c.contains(&text)) {
            chain.push(text);
        }
        cur = err.source();
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::ConnectionRefused {
                refused = true;
            }
            // io::Error::source() skips the error it wraps (hyper-rustls
            // wraps tokio-rustls' io::Error, which wraps rustls' error).
            if let Some(inner) = io.get_ref() {
                cur = Some(inner as &(dyn std::error::Error + 'static));
            }
        }
    }
    if let Some(t) = tls {
        format!("TLS failure: {t}")
    } else if refused {
        "connection refused".to_string()
    } else {
        chain.join(": ")
    }
}

fn fetch(url: &str, token: Option<&str>) -> Result<Response, String> {
    let uri: hyper::Uri = url.parse().map_err(|e| format!("invalid URL: {e}"))?;
    let mut req = hyper::Request::get(uri).header("Accept", "application/json");
    if let Some(t) = token {
        req = req.header("Authorization", format!("Bearer {t}"));
    }
    let req = req
        .body(Empty::<Bytes>::new())
        .map_err(|e| format!("invalid request: {e}"))?;
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_native_roots(rustls::crypto::ring::default_provider())
        .map_err(|e| {
            format!("no trusted CA certificates (system roots, SSL_CERT_FILE, SSL_CERT_DIR): {e}")
        })?
        .https_or_http()
        .enable_http1()
        .build();
    // Title-case header names, as Commodore (python-requests) sends them.
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new())
        .http1_title_case_headers(true)
        .build(connector);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the I/O runtime: {e}"))?;
    rt.block_on(async {
        let work = async {
            let resp = client
                .request(req)
                .await
                .map_err(|e| describe_transport_error(&e))?;
            let status = resp.status().as_u16();
            // Bounded: a server (or a proxy) answering without end
            // would take all memory (re-probe 16, the GitHub client).
            let body = http_body_util::Limited::new(resp.into_body(), MAX_ANSWER)
                .collect()
                .await
                .map_err(|e| match e.downcast_ref::<hyper::Error>() {
                    Some(e) => format!("reading the response: {}", describe_transport_error(e)),
                    None if e.is::<http_body_util::LengthLimitError>() => {
                        format!("the response is larger than {} MiB", MAX_ANSWER >> 20)
                    }
                    None => format!("reading the response: {e}"),
                })?
                .to_bytes()
                .to_vec();
            Ok::<Response, String>(Response { status, body })
        };
        tokio::time::timeout(TIMEOUT, work)
            .await
            .map_err(|_| format!("no response within {}s", TIMEOUT.as_secs()))?
    })
}

fn get(base: &str, token: Option<&str>, path: &str) -> Result<Value, CommodoreError> {
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        return Err(CommodoreError::new(format!(
            "--api-url {base}: the Lieutenant API URL must start with http:// or https://"
        )));
    }
    let url = format!("{}/{path}", base.trim_end_matches('/'));
    let err = |m: String| {
        CommodoreError::new(format!("While fetching cluster specification: {url}: {m}"))
    };
    let resp = fetch(&url, token).map_err(|m| {
        let e = err(m);
        if e.message.contains("TLS failure") {
            e.hint("to trust a private CA, point SSL_CERT_FILE at its PEM certificate")
        } else {
            e
        }
    })?;
    let json: Result<serde_json::Value, _> = serde_json::from_slice(&resp.body);
    let reason = json
        .as_ref()
        .ok()
        .and_then(|j| j.get("reason"))
        .and_then(|r| r.as_str())
        .map(|r| format!(": {}", shown_reason(r)))
        .unwrap_or_default();
    match resp.status {
        200 => {}
        401 | 403 => {
            return Err(err(format!(
                "API returned {}{reason} (authentication failed)",
                resp.status
            ))
            .hint("check --api-token / COMMODORE_API_TOKEN"))
        }
        404 => {
            return Err(err(format!("API returned 404{reason} (not found)"))
                .hint("check the cluster id and --api-url"))
        }
        s => return Err(err(format!("API returned {s}{reason}"))),
    }
    let json = json.map_err(|e| err(format!("the response body is not JSON: {e}")))?;
    Ok(Value::from_json(&json))
}

/// Reads the cluster, then its tenant.
pub fn load_cluster(
    api: &str,
    token: Option<&str>,
    cluster_id: &str,
) -> Result<ClusterInfo, CommodoreError> {
    let Value::Map(cluster) = get(api, token, &format!("clusters/{cluster_id}"))? else {
        return Err(CommodoreError::new(
            "the cluster API response is not an object",
        ));
    };
    let tenant_id = cluster
        .get("tenant")
        .and_then(Value::as_str)
        .ok_or_else(|| CommodoreError::new("cluster does not have a tenant reference"))?
        .to_string();
    let Value::Map(tenant) = get(api, token, &format!("tenants/{tenant_id}"))? else {
        return Err(CommodoreError::new(
            "the tenant API response is not an object",
        ));
    };
    ClusterInfo::new(cluster, tenant)
}

/// A server's `reason` as shown: at most 4,000 characters, control
/// characters escaped, so that a broken or hostile API cannot flood the
/// log, drive the terminal or start a line of its own (re-probe 18).
fn shown_reason(reason: &str) -> String {
    const MAX: usize = 4_000;
    let mut out = String::new();
    for (n, (at, c)) in reason.char_indices().enumerate() {
        if n == MAX {
            out.push_str(&format!("... ({} more bytes)", reason.len() - at));
            break;
        }
        out.push(c);
    }
    crate::diagnostics::escape_controls(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;

    /// Serves one canned HTTP response per connection and returns the
    /// request lines it saw.
    fn serve(responses: Vec<String>) -> (String, std::thread::JoinHandle<Vec<String>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let h = std::thread::spawn(move || {
            let mut seen = Vec::new();
            for resp in responses {
                let (mut s, _) = listener.accept().unwrap();
                let mut r = BufReader::new(s.try_clone().unwrap());
                // A TLS client hello (record type 0x16) has no line ends:
                // answer it at once with the plain-http response.
                if r.fill_buf()
                    .map(|b| b.first() == Some(&0x16))
                    .unwrap_or(false)
                {
                    seen.push("<tls client hello>".to_string());
                    s.write_all(resp.as_bytes()).unwrap();
                    continue;
                }
                loop {
                    let mut line = Vec::new();
                    let n = r.read_until(b'\n', &mut line).unwrap_or(0);
                    let line = String::from_utf8_lossy(&line).to_string();
                    if n == 0 || line == "\r\n" {
                        break;
                    }
                    seen.push(line.trim_end().to_string());
                }
                s.write_all(resp.as_bytes()).unwrap();
            }
            seen
        });
        (addr, h)
    }

    fn response(status: &str, body: &str) -> String {
        format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    }

    #[test]
    fn reads_cluster_and_tenant_with_bearer_token() {
        let (addr, h) = serve(vec![
            response(
                "200 OK",
                r#"{"id":"c-1","displayName":"One","tenant":"t-1","facts":{"distribution":"k3s","cloud":"local"}}"#,
            ),
            response("200 OK", r#"{"id":"t-1","displayName":"Tenant"}"#),
        ]);
        let info = load_cluster(&format!("http://{addr}/api/"), Some("tok"), "c-1").unwrap();
        assert_eq!(info.id().unwrap(), "c-1");
        let seen = h.join().unwrap();
        assert!(
            seen.contains(&"GET /api/clusters/c-1 HTTP/1.1".to_string()),
            "{seen:?}"
        );
        assert!(
            seen.contains(&"GET /api/tenants/t-1 HTTP/1.1".to_string()),
            "{seen:?}"
        );
        let auth: Vec<_> = seen
            .iter()
            .filter(|l| l.to_ascii_lowercase().starts_with("authorization:"))
            .collect();
        assert_eq!(auth.len(), 2);
        assert!(auth.iter().all(|l| l.ends_with(": Bearer tok")), "{auth:?}");
    }

    /// Re-probe 18 (lieutenant-api-error-reason-printed-whole-and-raw).
    #[test]
    fn an_error_reason_is_cut_and_its_control_characters_escaped() {
        let reason = format!(
            "bad\u{1b}]0;t\u{7}\n::error title=f::forged\u{202E}{}",
            "b".repeat(10_000)
        );
        let body = serde_json::json!({ "reason": reason }).to_string();
        let (addr, h) = serve(vec![response("500 Internal Server Error", &body)]);
        let e = load_cluster(&format!("http://{addr}"), None, "c-x").unwrap_err();
        h.join().unwrap();
        let m = &e.message;
        assert!(m.contains("bad\\u{1b}]0;t\\u{7}\\n::error"), "{m}");
        assert!(!m.contains('\n') && !m.contains('\u{1b}'), "{m}");
        // A bidirectional control (re-probe 18) is escaped as well.
        assert!(
            m.contains("forged\\u{202e}bbb") && !m.contains('\u{202E}'),
            "{m}"
        );
        assert!(m.len() < 4_300 && m.ends_with("(6034 more bytes)"), "{m}");
    }

    #[test]
    fn http_errors_name_the_url_but_not_the_token() {
        for (status, want) in [
            ("401 Unauthorized", "authentication failed"),
            ("403 Forbidden", "authentication failed"),
            ("404 Not Found", "not found"),
        ] {
            let (addr, h) = serve(vec![response(status, r#"{"reason":"nope"}"#)]);
            let e = load_cluster(&format!("http://{addr}"), Some("s3cret"), "c-x").unwrap_err();
            h.join().unwrap();
            assert!(
                e.message.contains(&format!("http://{addr}/clusters/c-x")),
                "{}",
                e.message
            );
            assert!(e.message.contains(want), "{}", e.message);
            assert!(e.message.contains("nope"), "{}", e.message);
            assert!(!e.message.contains("s3cret"), "{}", e.message);
        }
    }

    #[test]
    fn bad_json_is_reported() {
        let (addr, h) = serve(vec![response("200 OK", "<html>")]);
        let e = load_cluster(&format!("http://{addr}"), None, "c-x").unwrap_err();
        h.join().unwrap();
        assert!(e.message.contains("not JSON"), "{}", e.message);
        assert!(e.message.contains("/clusters/c-x"), "{}", e.message);
    }

    #[test]
    fn connection_refused_is_reported() {
        let addr = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let e = load_cluster(&format!("http://{addr}"), None, "c-x").unwrap_err();
        assert!(e.message.contains("connection refused"), "{}", e.message);
        assert!(
            e.message.contains(&format!("http://{addr}/clusters/c-x")),
            "{}",
            e.message
        );
    }

    #[test]
    fn https_goes_through_tls() {
        // A plain-http server answering a TLS client hello: the client must
        // fail in the TLS layer, not parse the bytes as HTTP.
        let (addr, h) = serve(vec![response("200 OK", "{}")]);
        let e = load_cluster(&format!("https://{addr}"), None, "c-x").unwrap_err();
        h.join().unwrap();
        assert!(e.message.contains("TLS failure"), "{}", e.message);
        assert!(
            e.message.contains(&format!("https://{addr}/clusters/c-x")),
            "{}",
            e.message
        );
    }

    #[test]
    fn other_schemes_are_refused() {
        let e = load_cluster("ftp://example.org", None, "c-x").unwrap_err();
        assert!(e.message.contains("http:// or https://"), "{}", e.message);
    }
}
