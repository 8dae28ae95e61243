//! A minimal Lieutenant API client: `GET <api>/clusters/<id>` and
//! `GET <api>/tenants/<tenant>` with a bearer token. Plain `http://` only
//! (strata carries no TLS stack for this; use `--cluster-file` otherwise).

use super::{ClusterInfo, CommodoreError};
use crate::value::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

fn get(base: &str, token: Option<&str>, path: &str) -> Result<Value, CommodoreError> {
    let rest = base.strip_prefix("http://").ok_or_else(|| {
        CommodoreError::new(format!("--api-url {base}: only http:// URLs are supported"))
            .hint("for https APIs, save the cluster and tenant objects and pass --cluster-file")
    })?;
    let (hostport, prefix) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
        None => (rest, ""),
    };
    let addr = if hostport.contains(':') {
        hostport.to_string()
    } else {
        format!("{hostport}:80")
    };
    let url = format!("http://{hostport}{prefix}/{path}");
    let err = |m: String| {
        CommodoreError::new(format!("While fetching cluster specification: {url}: {m}"))
    };
    let mut stream = TcpStream::connect(&addr).map_err(|e| err(e.to_string()))?;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let mut req = format!(
        "GET {prefix}/{path} HTTP/1.1\r\nHost: {hostport}\r\nAccept: application/json\r\nConnection: close\r\n"
    );
    if let Some(t) = token {
        req.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    req.push_str("\r\n");
    stream
        .write_all(req.as_bytes())
        .map_err(|e| err(e.to_string()))?;
    let mut buf = Vec::new();
    stream
        .read_to_end(&mut buf)
        .map_err(|e| err(e.to_string()))?;
    let text = String::from_utf8_lossy(&buf);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| err("malformed HTTP response".into()))?;
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| err("malformed HTTP status line".into()))?;
    let chunked = head.lines().any(|l| {
        l.to_ascii_lowercase().starts_with("transfer-encoding:")
            && l.to_ascii_lowercase().contains("chunked")
    });
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_string()
    };
    let json: serde_json::Value = serde_json::from_str(&body)
        .map_err(|e| err(format!("HTTP {status}, body is not JSON: {e}")))?;
    if status != 200 {
        let reason = json.get("reason").and_then(|r| r.as_str()).unwrap_or("");
        return Err(err(format!("API returned {status}: {reason}")));
    }
    Ok(Value::from_json(&json))
}

fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
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
