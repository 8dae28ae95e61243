//! The `vaultkv` and `vaulttransit` backends: Vault's HTTP API (KV v1 and
//! v2, transit encrypt/decrypt) with token, AppRole, userpass, ldap or
//! github login, as Kapitan's hvac client does. A small blocking HTTP/1.1
//! client: plain TCP, or TLS through the system OpenSSL (`cacert`,
//! `skip_verify`; the system's CA store otherwise).

use super::RefError;
use crate::value::{Map, Value};
use base64::Engine;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;
/// A Vault answer larger than this is not a secret: refuse it.
const MAX_RESPONSE: usize = 16 << 20;

/// Kapitan's vault parameters (file's `vault_params` or the target's
/// `parameters.kapitan.secrets.vaultkv`), with the `VAULT_*` variables as
/// fallbacks.
#[derive(Debug, Clone)]
pub struct VaultParams {
    pub addr: String,
    pub auth: String,
    pub engine: String,
    pub mount: String,
    pub namespace: Option<String>,
    pub skip_verify: bool,
    pub cacert: Option<String>,
    pub crypto_key: Option<String>,
}

/// The Vault model's fields that Kapitan's pydantic-settings model also
/// accepts under their `VAULT_*` name (`validation_alias`), and reads from
/// the environment under it (`compile::model`'s dumps).
pub(crate) const SETTINGS_ALIASES: [(&str, &str); 7] = [
    ("addr", "VAULT_ADDR"),
    ("skip_verify", "VAULT_SKIP_VERIFY"),
    ("client_key", "VAULT_CLIENT_KEY"),
    ("client_cert", "VAULT_CLIENT_CERT"),
    ("cacert", "VAULT_CACERT"),
    ("capath", "VAULT_CAPATH"),
    ("namespace", "VAULT_NAMESPACE"),
];

/// `vault_params` (a reference file's, or a target's
/// `parameters.kapitan.secrets.vaultkv`) with each `VAULT_*` key read as
/// its field: reference files written by older Kapitan versions, and
/// inventories following Kapitan's documentation, spell them
/// `VAULT_ADDR: https://...`, which Kapitan 0.36's model takes as `addr`.
fn with_field_names(m: Option<&Map>) -> Option<Map> {
    let mut out = m?.clone();
    for (field, alias) in SETTINGS_ALIASES {
        if let Some(v) = out.shift_remove(alias) {
            out.insert(field.into(), v);
        }
    }
    Some(out)
}

fn get_str(m: Option<&Map>, k: &str) -> Option<String> {
    m.and_then(|m| m.get(k)).and_then(|v| match v {
        Value::String(s) => Some(s.clone()),
        _ => None,
    })
}

impl VaultParams {
    pub fn from_value(v: Option<&Value>, transit: bool) -> VaultParams {
        let named = with_field_names(v.and_then(Value::as_map));
        let m = named.as_ref();
        let env = |k: &str| std::env::var(k).ok().filter(|s| !s.is_empty());
        VaultParams {
            addr: get_str(m, "addr")
                .or_else(|| env("VAULT_ADDR"))
                .unwrap_or_else(|| "http://localhost:8200".into()),
            auth: get_str(m, "auth").unwrap_or_default(),
            engine: get_str(m, "engine")
                .unwrap_or_else(|| if transit { "transit" } else { "kv-v2" }.into()),
            mount: get_str(m, "mount")
                .unwrap_or_else(|| if transit { "transit" } else { "secret" }.into()),
            namespace: get_str(m, "namespace").or_else(|| env("VAULT_NAMESPACE")),
            skip_verify: m
                .and_then(|m| m.get("skip_verify"))
                .and_then(Value::as_bool)
                .or_else(|| env("VAULT_SKIP_VERIFY").map(|v| v == "true" || v == "1"))
                .unwrap_or(true),
            cacert: get_str(m, "cacert").or_else(|| env("VAULT_CACERT")),
            crypto_key: get_str(m, "crypto_key"),
        }
    }

    /// `vault_params` as Kapitan's `model_dump()` writes them.
    pub fn dump(&self, transit: bool) -> Value {
        let s = |v: &str| Value::String(v.to_string());
        let o = |v: &Option<String>| v.as_deref().map(s).unwrap_or(Value::Null);
        let mut m = Map::default();
        m.insert("addr".into(), s(&self.addr));
        m.insert("skip_verify".into(), Value::Bool(self.skip_verify));
        m.insert("client_key".into(), Value::Null);
        m.insert("client_cert".into(), Value::Null);
        m.insert("cacert".into(), o(&self.cacert));
        m.insert("capath".into(), Value::Null);
        m.insert("namespace".into(), o(&self.namespace));
        m.insert("engine".into(), s(&self.engine));
        m.insert("auth".into(), s(&self.auth));
        m.insert("crypto_key".into(), o(&self.crypto_key));
        m.insert("always_latest".into(), Value::Bool(false));
        m.insert("mount".into(), s(&self.mount));
        m.insert(
            "key".into(),
            if transit {
                o(&self.crypto_key)
            } else {
                Value::Null
            },
        );
        Value::Map(m)
    }
}

/// `KapitanReferenceVault*Config(**v).model_dump()`: every field in the
/// model's order, defaults filled in (environment fallbacks left out).
pub fn model_dump(v: Option<&Value>, transit: bool) -> Value {
    let named = with_field_names(v.and_then(Value::as_map));
    let m = named.as_ref();
    let s = |x: &str| Value::String(x.to_string());
    let fields: [(&str, Value); 13] = [
        ("addr", Value::Null),
        ("skip_verify", Value::Bool(true)),
        ("client_key", Value::Null),
        ("client_cert", Value::Null),
        ("cacert", Value::Null),
        ("capath", Value::Null),
        ("namespace", Value::Null),
        ("engine", s(if transit { "transit" } else { "kv-v2" })),
        ("auth", Value::Null),
        ("crypto_key", Value::Null),
        ("always_latest", Value::Bool(false)),
        ("mount", s(if transit { "transit" } else { "secret" })),
        ("key", Value::Null),
    ];
    let mut out = Map::default();
    for (k, default) in fields {
        let v = m.and_then(|m| m.get(k)).cloned().unwrap_or(default);
        out.insert(k.to_string(), v);
    }
    Value::Map(out)
}

struct Url {
    tls: bool,
    host: String,
    port: u16,
    base: String,
}

fn parse_addr(addr: &str) -> Result<Url, RefError> {
    let (tls, rest) = if let Some(r) = addr.strip_prefix("https://") {
        (true, r)
    } else if let Some(r) = addr.strip_prefix("http://") {
        (false, r)
    } else {
        return Err(RefError::new(format!(
            "Vault address `{addr}` must start with http:// or https://"
        )));
    };
    let (hostport, base) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].trim_end_matches('/').to_string()),
        None => (rest, String::new()),
    };
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || hostport.starts_with('[') => (
            h.trim_matches(['[', ']']).to_string(),
            p.parse()
                .map_err(|_| RefError::new(format!("Vault address `{addr}`: bad port")))?,
        ),
        _ => (hostport.to_string(), if tls { 443 } else { 80 }),
    };
    Ok(Url {
        tls,
        host,
        port,
        base,
    })
}

trait Stream: Read + Write {}
impl<T: Read + Write> Stream for T {}

/// A whole Vault request (TLS handshake, request, answer) ends within
/// this: a server that answers a byte at a time kept every read within
/// its own timeout, and so the request, open for as long as it liked.
const REQUEST_DEADLINE: Duration = Duration::from_secs(30);

/// A connection whose reads and writes fail once `until` has passed.
#[derive(Debug)]
struct Deadline {
    tcp: TcpStream,
    until: std::time::Instant,
    deadline: Duration,
}

impl Deadline {
    fn expired(&self) -> std::io::Error {
        std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!(
                "no complete answer within {} s",
                self.deadline.as_secs_f64()
            ),
        )
    }

    fn left(&self) -> std::io::Result<Duration> {
        let left = self
            .until
            .saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(self.expired());
        }
        Ok(left)
    }

    /// A socket timeout is the deadline: it was set to the time left.
    fn timed(&self, r: std::io::Result<usize>) -> std::io::Result<usize> {
        match r {
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                Err(self.expired())
            }
            other => other,
        }
    }
}

impl Read for Deadline {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.left()?;
        self.tcp.set_read_timeout(Some(left))?;
        let r = self.tcp.read(buf);
        self.timed(r)
    }
}

impl Write for Deadline {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let left = self.left()?;
        self.tcp.set_write_timeout(Some(left))?;
        let r = self.tcp.write(buf);
        self.timed(r)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.tcp.flush()
    }
}

/// One request; returns the status and the JSON body.
fn request(
    p: &VaultParams,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&serde_json::Value>,
) -> Result<(u16, serde_json::Value), RefError> {
    request_within(p, method, path, token, body, REQUEST_DEADLINE)
}

/// [`request`], ended after `deadline`.
fn request_within(
    p: &VaultParams,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&serde_json::Value>,
    deadline: Duration,
) -> Result<(u16, serde_json::Value), RefError> {
    // The namespace is a header.
    if let Some(ns) = p
        .namespace
        .as_deref()
        .filter(|ns| ns.chars().any(char::is_control))
    {
        return Err(RefError::new(format!(
            "Vault at {}: the namespace `{}` holds a control character: refused before connecting (it is sent as a header)",
            p.addr,
            crate::diagnostics::escape_controls(ns)
        )));
    }
    let url = parse_addr(&p.addr)?;
    let net = |e: std::io::Error| RefError::new(format!("Vault at {}: {e}", p.addr));
    // Bounded: an unreachable address must not hang the compile.
    use std::net::ToSocketAddrs;
    let addrs: Vec<_> = (url.host.as_str(), url.port)
        .to_socket_addrs()
        .map_err(net)?
        .collect();
    let mut tcp = None;
    let mut last = None;
    for a in addrs {
        match TcpStream::connect_timeout(&a, Duration::from_secs(10)) {
            Ok(s) => {
                tcp = Some(s);
                break;
            }
            Err(e) => last = Some(e),
        }
    }
    let tcp = match (tcp, last) {
        (Some(t), _) => t,
        (None, Some(e)) => return Err(net(e)),
        (None, None) => {
            return Err(RefError::new(format!(
                "Vault at {}: the host has no address",
                p.addr
            )))
        }
    };
    let tcp = Deadline {
        tcp,
        until: std::time::Instant::now() + deadline,
        deadline,
    };
    let mut stream: Box<dyn Stream> = if url.tls {
        use openssl::ssl::{SslConnector, SslMethod, SslVerifyMode};
        let ssl = |e: openssl::error::ErrorStack| RefError::new(format!("Vault TLS: {e}"));
        let mut b = SslConnector::builder(SslMethod::tls()).map_err(ssl)?;
        if let Some(ca) = &p.cacert {
            b.set_ca_file(ca).map_err(ssl)?;
        }
        if p.skip_verify {
            b.set_verify(SslVerifyMode::NONE);
        }
        let c = b.build();
        let s = c
            .connect(&url.host, tcp)
            .map_err(|e| RefError::new(format!("Vault TLS to {}: {e}", p.addr)))?;
        Box::new(s)
    } else {
        Box::new(tcp)
    };
    let payload = body.map(|b| b.to_string()).unwrap_or_default();
    // The path comes from a reference file's data (base64 of `path:key`),
    // which a reviewer cannot read: a CR/LF in it added headers and whole
    // requests of its choosing (`DELETE /v1/...`) to what went to Vault
    // with the runner's token (probe 40). Bytes outside printable ASCII are
    // percent-encoded, as hvac's requests does.
    let path = crate::remote::percent_encoded(path);
    let mut req = format!(
        "{method} {}/v1/{path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nAccept: application/json\r\nContent-Length: {}\r\n",
        crate::remote::percent_encoded(&url.base),
        url.host,
        payload.len()
    );
    if let Some(t) = token {
        req.push_str(&format!("X-Vault-Token: {t}\r\n"));
    }
    if let Some(ns) = &p.namespace {
        req.push_str(&format!("X-Vault-Namespace: {ns}\r\n"));
    }
    if body.is_some() {
        req.push_str("Content-Type: application/json\r\n");
    }
    req.push_str("\r\n");
    req.push_str(&payload);
    stream.write_all(req.as_bytes()).map_err(net)?;
    let mut raw = Vec::new();
    stream
        .take(MAX_RESPONSE as u64 + 1)
        .read_to_end(&mut raw)
        .map_err(net)?;
    if raw.len() > MAX_RESPONSE {
        return Err(RefError::new(format!(
            "Vault at {}: answer too large",
            p.addr
        )));
    }
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| RefError::new(format!("Vault at {}: not an HTTP answer", p.addr)))?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut body = raw[split + 4..].to_vec();
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| RefError::new(format!("Vault at {}: not an HTTP answer", p.addr)))?;
    if head.lines().any(|l| {
        l.to_ascii_lowercase().starts_with("transfer-encoding:")
            && l.to_ascii_lowercase().contains("chunked")
    }) {
        body = dechunk(&body);
    }
    let json = if body.iter().all(u8::is_ascii_whitespace) {
        serde_json::Value::Null
    } else {
        serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null)
    };
    Ok((status, json))
}

fn dechunk(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = b;
    while let Some(i) = rest.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(
            String::from_utf8_lossy(&rest[..i])
                .split(';')
                .next()
                .unwrap_or("")
                .trim(),
            16,
        )
        .unwrap_or(0);
        // The size is the server's claim: `ffffffffffffffff` overflowed
        // the sum (a panic; probe 27).
        let Some(end) = (i + 2)
            .checked_add(size)
            .filter(|&e| size > 0 && e <= rest.len())
        else {
            break;
        };
        out.extend_from_slice(&rest[i + 2..end]);
        rest = &rest[(end + 2).min(rest.len())..];
    }
    out
}

/// Kapitan's `VaultClient.authenticate`: token (VAULT_TOKEN or
/// ~/.vault-token), AppRole (VAULT_ROLE_ID, VAULT_SECRET_ID), userpass and
/// ldap (VAULT_USERNAME, VAULT_PASSWORD), github (VAULT_TOKEN).
fn login(p: &VaultParams) -> Result<String, RefError> {
    match p.auth.as_str() {
        "token" => {
            if let Ok(t) = std::env::var("VAULT_TOKEN") {
                if !t.is_empty() {
                    return Ok(t);
                }
            }
            read_token_file()
        }
        "approle" => {
            let role = std::env::var("VAULT_ROLE_ID").unwrap_or_default();
            let secret = std::env::var("VAULT_SECRET_ID").unwrap_or_default();
            let body = serde_json::json!({"role_id": role, "secret_id": secret});
            let (status, v) = request(p, "POST", "auth/approle/login", None, Some(&body))?;
            v.pointer("/auth/client_token")
                .and_then(|t| t.as_str())
                .filter(|_| status == 200)
                .map(str::to_string)
                .ok_or_else(|| {
                    RefError::new(format!("Vault AppRole login failed (HTTP {status})"))
                        .hint("check VAULT_ROLE_ID and VAULT_SECRET_ID")
                })
        }
        "userpass" | "ldap" | "github" => {
            let env = |k: &str| std::env::var(k).unwrap_or_default();
            let (path, body) = if p.auth == "github" {
                let token = match std::env::var("VAULT_TOKEN") {
                    Ok(t) if !t.is_empty() => t,
                    _ => read_token_file()?,
                };
                ("auth/github/login".to_string(), serde_json::json!({ "token": token }))
            } else {
                let user = env("VAULT_USERNAME");
                (
                    format!("auth/{}/login/{user}", p.auth),
                    serde_json::json!({ "password": env("VAULT_PASSWORD") }),
                )
            };
            let (status, v) = request(p, "POST", &path, None, Some(&body))?;
            v.pointer("/auth/client_token")
                .and_then(|t| t.as_str())
                .filter(|_| status == 200)
                .map(str::to_string)
                .ok_or_else(|| {
                    RefError::new(format!("Vault {} login failed (HTTP {status})", p.auth)).hint(
                        if p.auth == "github" {
                            "check VAULT_TOKEN (a GitHub token)"
                        } else {
                            "check VAULT_USERNAME and VAULT_PASSWORD"
                        },
                    )
                })
        }
        "" => Err(RefError::new(
            "No Authentication type parameter specified: set parameters.kapitan.secrets.vaultkv.auth (token or approle)",
        )),
        other => Err(RefError::new(format!(
            "Vault authentication type '{other}' is not supported (token, approle, userpass, ldap, github)"
        ))),
    }
}

/// `~/.vault-token`, never through a symlink (as Kapitan).
fn read_token_file() -> Result<String, RefError> {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let file = home
        .map(|h| h.join(".vault-token"))
        .ok_or_else(|| RefError::new("VAULT_TOKEN is not set and there is no home directory"))?;
    if std::fs::symlink_metadata(&file).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(RefError::new(format!(
            "Token file {} is a symbolic link and will not be read",
            file.display()
        )));
    }
    let t = std::fs::read_to_string(&file).map_err(|_| {
        RefError::new(
            "Vault Authentication Error: VAULT_TOKEN is not set and ~/.vault-token cannot be read",
        )
        .hint("export VAULT_TOKEN, or use auth: approle with VAULT_ROLE_ID and VAULT_SECRET_ID")
    })?;
    Ok(t.trim().to_string())
}

fn check(status: u16, what: &str) -> Result<(), RefError> {
    // Decoded from a reference file: shown escaped, on one line.
    let what = crate::diagnostics::escape_controls(what);
    match status {
        200 | 204 => Ok(()),
        403 => Err(RefError::new(format!(
            "Permission Denied. make sure the token is authorised to access '{what}' on Vault"
        ))),
        404 => Err(RefError::new(format!(
            "path '{what}' does not exist on Vault"
        ))),
        s => Err(RefError::new(format!(
            "Vault answered HTTP {s} for '{what}'"
        ))),
    }
}

/// Reads `path` (KV v1 or v2) and returns its key/value map.
fn kv_read(
    p: &VaultParams,
    token: &str,
    mount: &str,
    path: &str,
) -> Result<Option<serde_json::Map<String, serde_json::Value>>, RefError> {
    let (api, ptr) = if p.engine == "kv" {
        (format!("{mount}/{path}"), "/data")
    } else {
        (format!("{mount}/data/{path}"), "/data/data")
    };
    let (status, v) = request(p, "GET", &api, Some(token), None)?;
    if status == 404 {
        return Ok(None);
    }
    check(status, path)?;
    Ok(v.pointer(ptr).and_then(|d| d.as_object()).cloned())
}

/// `vaultkv` reveal: the data is base64 of `path/in/vault:key`.
pub fn kv_reveal(p: &VaultParams, data: &str, encoding: &str) -> Result<String, RefError> {
    let decoded = super::decode_utf8(data)?;
    let Some((path, key)) = decoded.split_once(':').filter(|(_, k)| !k.contains(':')) else {
        return Err(RefError::new(format!(
            "Invalid vault secret: secret should be stored as 'path/in/vault:key', not '{}'",
            crate::diagnostics::escape_controls(&decoded)
        )));
    };
    let token = login(p)?;
    let (shown_path, shown_key) = (
        crate::diagnostics::escape_controls(path),
        crate::diagnostics::escape_controls(key),
    );
    let secrets = kv_read(p, &token, &p.mount, path)?
        .ok_or_else(|| RefError::new(format!("path '{shown_path}' does not exist on Vault")))?;
    let v = secrets
        .get(key)
        .and_then(|v| v.as_str())
        .ok_or_else(|| RefError::new(format!("key '{shown_key}' does not exist on Vault")))?;
    if v.is_empty() {
        return Err(RefError::new(format!(
            "'{shown_key}' doesn't exist on '{shown_path}'"
        )));
    }
    if encoding == "base64" {
        let b = B64.decode(v).map_err(|e| {
            RefError::new(format!(
                "'{shown_key}' on '{shown_path}' is not base64: {e}"
            ))
        })?;
        return String::from_utf8(b).map_err(|_| RefError::new("Vault value is not UTF-8 text"));
    }
    Ok(v.to_string())
}

/// `vaultkv` write: stores `value` under `key` at `path` (keeping the
/// other keys) and returns the reference data, base64 of `path:key`.
pub fn kv_write(
    p: &VaultParams,
    mount: &str,
    path: &str,
    key: &str,
    value: &str,
) -> Result<String, RefError> {
    let token = login(p)?;
    let mut secrets = kv_read(p, &token, mount, path)?.unwrap_or_default();
    secrets.insert(
        key.to_string(),
        serde_json::Value::String(value.to_string()),
    );
    let (api, body) = if p.engine == "kv" {
        (
            format!("{mount}/{path}"),
            serde_json::Value::Object(secrets),
        )
    } else {
        (
            format!("{mount}/data/{path}"),
            serde_json::json!({ "data": serde_json::Value::Object(secrets) }),
        )
    };
    let (status, _) = request(p, "POST", &api, Some(&token), Some(&body))?;
    check(status, path)?;
    Ok(B64.encode(format!("{path}:{key}")))
}

/// `vaulttransit` reveal: decrypt the stored ciphertext.
pub fn transit_reveal(p: &VaultParams, data: &str) -> Result<String, RefError> {
    let cipher = super::decode_utf8(data)?;
    let key = p
        .crypto_key
        .clone()
        .ok_or_else(|| RefError::new("Cannot access vault params: crypto_key is not set"))?;
    let token = login(p)?;
    let body = serde_json::json!({ "ciphertext": cipher });
    let (status, v) = request(
        p,
        "POST",
        &format!("{}/decrypt/{key}", p.mount),
        Some(&token),
        Some(&body),
    )?;
    check(status, &key)?;
    let plain = v
        .pointer("/data/plaintext")
        .and_then(|x| x.as_str())
        .ok_or_else(|| RefError::new("Vault transit answer has no plaintext"))?;
    let b = B64
        .decode(plain)
        .map_err(|e| RefError::new(format!("Vault transit plaintext is not base64: {e}")))?;
    String::from_utf8(b).map_err(|_| RefError::new("Vault transit plaintext is not UTF-8 text"))
}

/// `vaulttransit` write: encrypt and return the reference data (base64 of
/// the ciphertext) and its encoding, as Kapitan's `_encrypt` does.
pub fn transit_write(
    p: &VaultParams,
    value: &[u8],
    already_b64: bool,
) -> Result<(String, String), RefError> {
    let key = p.crypto_key.clone().ok_or_else(|| {
        RefError::new(
            "vaulttransit needs a key: set parameters.kapitan.secrets.vaulttransit.crypto_key",
        )
    })?;
    let (inner, encoding) = if already_b64 {
        (value.to_vec(), "original")
    } else {
        (B64.encode(value).into_bytes(), "base64")
    };
    let token = login(p)?;
    let body = serde_json::json!({ "plaintext": B64.encode(&inner) });
    let (status, v) = request(
        p,
        "POST",
        &format!("{}/encrypt/{key}", p.mount),
        Some(&token),
        Some(&body),
    )?;
    check(status, &key)?;
    let cipher = v
        .pointer("/data/ciphertext")
        .and_then(|x| x.as_str())
        .ok_or_else(|| RefError::new("Vault transit answer has no ciphertext"))?;
    Ok((B64.encode(cipher), encoding.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kv-v2 token login to a test server on 127.0.0.1.
    fn local_kv2(port: u16) -> VaultParams {
        VaultParams {
            addr: format!("http://127.0.0.1:{port}"),
            auth: "token".into(),
            engine: "kv-v2".into(),
            mount: "secret".into(),
            namespace: None,
            skip_verify: false,
            cacert: None,
            crypto_key: None,
        }
    }

    /// Probe 27 (vault-chunk-size-overflow-panics): a chunk size of
    /// `ffffffffffffffff` overflowed `i + 2 + size` and panicked (a slice
    /// out of order in a release build): a Vault server could end the run.
    #[test]
    fn a_chunk_size_past_the_body_ends_the_body() {
        assert_eq!(dechunk(b"ffffffffffffffff\r\nabc\r\n0\r\n\r\n"), b"");
        assert_eq!(dechunk(b"3\r\nabc\r\n10\r\nxy"), b"abc");
        assert_eq!(dechunk(b"3\r\nabc\r\n2;x=1\r\nde\r\n0\r\n\r\n"), b"abcde");
    }

    /// compat34 (compat-vault-params-under-vault-names): a reference file
    /// that older Kapitan wrote with the target's `VAULT_*` keys (the
    /// myspotontheweb/kapitan-demo repository's) is read by Kapitan 0.36
    /// as `addr`, `capath`, `skip_verify`; the embedded tag carried
    /// Kapitan's defaults instead (`addr: null`, `skip_verify: true`).
    #[test]
    fn vault_names_are_read_as_the_model_fields() {
        let params: Value = crate::yaml::load_all(
            "VAULT_ADDR: https://vault.example.com\nVAULT_CAPATH: /etc/ssl/certs\nVAULT_SKIP_VERIFY: false\nauth: token\nengine: kv-v2\n",
        )
        .unwrap()
        .remove(0)
        .to_value();
        let dump = model_dump(Some(&params), false);
        // Kapitan 0.36.3's `vault_params` of that file, in its order.
        let want = [
            ("addr", Value::String("https://vault.example.com".into())),
            ("skip_verify", Value::Bool(false)),
            ("client_key", Value::Null),
            ("client_cert", Value::Null),
            ("cacert", Value::Null),
            ("capath", Value::String("/etc/ssl/certs".into())),
            ("namespace", Value::Null),
            ("engine", Value::String("kv-v2".into())),
            ("auth", Value::String("token".into())),
            ("crypto_key", Value::Null),
            ("always_latest", Value::Bool(false)),
            ("mount", Value::String("secret".into())),
            ("key", Value::Null),
        ];
        let got: Vec<(&str, &Value)> = dump
            .as_map()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.as_str(), v))
            .collect();
        let want: Vec<(&str, &Value)> = want.iter().map(|(k, v)| (*k, v)).collect();
        assert_eq!(got, want);
        let p = VaultParams::from_value(Some(&params), false);
        assert_eq!(p.addr, "https://vault.example.com");
        assert!(!p.skip_verify);
    }

    /// Re-probe 10 (b-vault-trickling-server-no-total-deadline): a server
    /// sending a byte at a time kept each read within its timeout, and so
    /// the request open for ever. The whole request has a deadline.
    #[test]
    fn a_trickling_server_meets_the_request_deadline() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            // "HTTP/1.1 200 OK..." one byte every 100 ms, never ending.
            for b in b"HTTP/1.1 200 OK\r\nX-Slow: "
                .iter()
                .chain([b'x'; 200].iter())
            {
                if s.write_all(&[*b]).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let p = local_kv2(port);
        let e = request_within(
            &p,
            "GET",
            "secret/data/x",
            None,
            None,
            Duration::from_secs(1),
        )
        .expect_err("the request must end at its deadline");
        let msg = e.to_string();
        assert!(msg.contains("no complete answer within 1 s"), "{msg}");
        assert!(msg.contains(&p.addr), "{msg}");
        drop(server);
    }

    /// Probe 40: the path of a `?{vaultkv:...}` reference (its data, base64
    /// of `path:key`, unreadable in a review) went into the request line as
    /// it was: a CR/LF added headers and a second request, with the token,
    /// to what the runner sent to Vault.
    #[test]
    fn a_path_with_line_breaks_cannot_add_requests() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            let _ = s.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
            String::from_utf8_lossy(&got).into_owned()
        });
        let mut p = local_kv2(port);
        let (status, _) = request(
            &p,
            "GET",
            "secret/data/x HTTP/1.1\r\nHost: v\r\n\r\nDELETE /v1/secret/data/prod",
            Some("tok"),
            None,
        )
        .unwrap();
        assert_eq!(status, 404);
        let head = server.join().unwrap();
        let first = head.lines().next().unwrap();
        assert_eq!(
            first,
            "GET /v1/secret/data/x%20HTTP/1.1%0D%0AHost:%20v%0D%0A%0D%0ADELETE%20/v1/secret/data/prod HTTP/1.1"
        );
        assert!(!head.contains("\r\nDELETE"), "{head}");
        p.namespace = Some("ns\r\nX-Evil: 1".into());
        let e = request(&p, "GET", "secret/data/x", Some("tok"), None).unwrap_err();
        assert!(e.to_string().contains("holds a control character"), "{e}");
    }
}
