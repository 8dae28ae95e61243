//! The string rules: [`Redactor::scrub`]'s sequence over one string value
//! (whatever its key), and the helpers only it uses.

use regex::Regex;

use super::commands::{
    echo_into_file_re, hide_client_passwords, hide_stdin_password, secret_file_name,
    stdin_password_re, user_password_flag,
};
use super::iac::{hide_iac_secret_markers, terraform_sensitive_flow};
use super::keys::{
    credential_header, jaas_user, jwk_private, secret_word_re, signature_param,
    NOT_SECRET_DIRECTIVES,
};
use super::lines::{colon_inside_word, space_pair_candidate};
use super::positional::hide_positional_secrets;
use super::shapes::{
    hide_base64_private_keys, hide_shape_rules, mask_url_passwords, xml_value_child,
};
use super::structural::{
    is_placeholder, names_receivers, receiver_key, starts_with_sops_ciphertext,
};
use super::{hide_after_first, replace_in, Redactor, OLD};

/// Whether a method called with a string literal sets a secret: its name
/// matches (`setPassword`, `withPassword`, `password`, `apiKey`), and is
/// not a getter or a check (`getPassword("db")` names one), or it is
/// node-redis' `auth`.
fn secret_setter(method: &str, matches: impl Fn(&str) -> bool) -> bool {
    if method == "auth" {
        return true;
    }
    let verb = [
        "get", "has", "is", "remove", "delete", "clear", "unset", "reset",
    ]
    .iter()
    .any(|v| {
        method.len() > v.len()
            && method[..v.len()].eq_ignore_ascii_case(v)
            && method.as_bytes()[v.len()].is_ascii_uppercase()
    });
    !verb && matches(method)
}

/// `kubectl patch secret … '{"data":{…}}'` (or `stringData`): group 2
/// is the data's map.
fn patch_secret_data_re() -> &'static Regex {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r#"(\bpatch[ \t]+secrets?\b[^\n]*?\\?["'](?:data|stringData)\\?["'][ \t]*:[ \t]*)(\{[^{}\n]*\})"#)
            .expect("static regex is valid")
    })
}

/// [`secret_patch_path`](super::structural::secret_patch_path) in a flow map: `"path": "/data/…"`.
fn patch_path_re() -> &'static Regex {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r#"(?:^|[{,\s])\\?["']?path\\?["']?[ \t]*[:=][ \t]*\\?["']?/(?:data|stringData)/"#,
        )
        .expect("static regex is valid")
    })
}

impl Redactor {
    /// [`Self::scrub`]'s rules; `depth` counts the quoted values they read
    /// inside (each level has one kind of quote fewer, so four are enough).
    pub(super) fn scrub_at(&self, text: &str, depth: usize) -> String {
        let receivers = self.defaults && names_receivers(text);
        let jwk = self.defaults && text.contains("kty");
        let jaas = self.defaults && text.contains("LoginModule");
        let mut out = mask_url_passwords(text, OLD);
        if out.contains("github") {
            replace_in(&mut out, &self.github_userinfo, |c: &regex::Captures| {
                format!("{}{OLD}@{}", &c[1], &c[3])
            });
        }
        for re in self.credentials_for(&out) {
            replace_in(&mut out, re, OLD);
        }
        // `-----BEGIN ` base64-encoded (a PEM file as Helm values take
        // it, `tls.key: LS0t…`): hidden when it decodes to a private key.
        if out.contains("LS0tLS1CRUdJTi") {
            hide_base64_private_keys(&mut out);
        }
        // red39: a gzip file base64-encoded, read decompressed (a text
        // that holds none of the token's magic: the check above the
        // decoder keeps it from reading itself).
        if out.contains("H4sI") {
            super::shapes::hide_gzip_base64(&mut out, |t| {
                self.scrub(t) != t || self.redact_text(t) != t
            });
        }
        // The literal scan for the clients' names is the pre-check.
        if let Some(hidden) = hide_client_passwords(&out) {
            out = hidden;
        }
        if self.defaults {
            hide_iac_secret_markers(&mut out);
        }
        if out.contains('|')
            && (out.contains("stdin")
                || out.contains("chpasswd")
                || out.contains("sudo")
                || out.contains("secret")
                || out.contains("vercel")
                || out.contains("pub token")
                || out.contains("--with-token")
                || out.contains("vault login")
                || out.contains("kinit")
                || out.contains("wg ")
                || out.contains("passwd")
                || out.contains("kubeseal")
                || out.contains("-keystore"))
        {
            replace_in(&mut out, stdin_password_re(), hide_stdin_password);
        }
        if self.defaults
            && (out.contains('>') || out.contains("tee"))
            && (out.contains("echo") || out.contains("printf"))
        {
            replace_in(&mut out, echo_into_file_re(), |c: &regex::Captures| {
                let word = &c[2];
                let inner = word.trim_matches(['"', '\'']);
                if inner.is_empty()
                    || inner == OLD
                    || inner.starts_with('$')
                    || !secret_file_name(&c[4], |k| self.key_matches(k))
                {
                    return c[0].to_string();
                }
                let q = if word.len() > inner.len() {
                    &word[..1]
                } else {
                    ""
                };
                format!("{}{q}{OLD}{q}{}{}", &c[1], &c[3], &c[4])
            });
        }
        replace_in(&mut out, &self.auth_header, |c: &regex::Captures| {
            format!("{}{OLD}", &c[1])
        });
        if out.contains("earer") || out.contains("asic") || out.contains("EARER") {
            // A random token has a digit, a base64 sign or capitals
            // inside; `Basic configuration` has none.
            replace_in(&mut out, &self.scheme_token, |c: &regex::Captures| {
                let t = &c[2];
                let capitals = t.chars().skip(1).filter(char::is_ascii_uppercase).count();
                if capitals >= 2
                    || t.contains(|ch: char| ch.is_ascii_digit() || matches!(ch, '=' | '+' | '/'))
                {
                    format!("{}{OLD}", &c[1])
                } else {
                    c[0].to_string()
                }
            });
        }
        // `kubectl patch secret NAME -p '{"data":{"conn":"X"}}'`: the
        // patch's data is the Secret's (re-probe 18).
        if out.contains("patch") && out.contains("ecret") && out.contains("ata") {
            replace_in(&mut out, patch_secret_data_re(), |c: &regex::Captures| {
                format!("{}{}", &c[1], self.hide_flow_values(&c[2]))
            });
        }
        if out.contains('{')
            && (out.contains("value")
                || out.contains("default")
                || out.contains("Value")
                || out.contains("Default"))
        {
            // The key the map is the value of, if any (read back from the
            // map's start): a secret key's flow map (ARM's
            // `"adminPassword": {"value": x}`) hides its values.
            let hay = out.clone();
            replace_in(&mut out, &self.flow_map, |c: &regex::Captures| {
                let map = &c[0];
                let key = c.get(0).and_then(|m| flow_map_key(&hay[..m.start()]));
                if key.is_some_and(|k| self.key_matches(k)) && !map.contains(OLD) {
                    return self.hide_flow_values(map);
                }
                let named = self
                    .flow_name
                    .captures(map)
                    .is_some_and(|n| self.key_matches(&n[1]))
                    || (map.contains("path") && patch_path_re().is_match(map));
                // Terraform JSON on one line: a `set_sensitive` item (the
                // first of its list), a sensitive variable or output, an
                // SSM `SecureString` parameter.
                let terraform = self.defaults
                    && (key == Some("set_sensitive") || terraform_sensitive_flow(map));
                if named || terraform {
                    self.flow_value
                        .replace_all(map, |v: &regex::Captures| format!("{}{OLD}", &v[1]))
                        .into_owned()
                } else {
                    c[0].to_string()
                }
            });
        }
        if out.contains("=>") {
            replace_in(&mut out, &self.rocket, |c: &regex::Captures| {
                if self.key_matches(&c[3]) && &c[5] != OLD {
                    format!("{}{}{}{}{OLD}", &c[1], &c[2], &c[3], &c[4])
                } else {
                    c[0].to_string()
                }
            });
        }
        if out.contains("curl")
            || out.contains("wget")
            || ((out.contains("http ") || out.contains("https "))
                && (out.contains(" -a") || out.contains("--auth")))
        {
            replace_in(&mut out, &self.curl_user, hide_after_first);
        }
        if out.contains("redis-cli") || out.contains("valkey-cli") || out.contains("keydb-cli") {
            replace_in(&mut out, &self.redis_a, hide_after_first);
        }
        if out.contains("-u") || out.contains("-creds") {
            replace_in(&mut out, &self.user_flag, |c: &regex::Captures| {
                if user_password_flag(&c[2], &c[3]) {
                    let (user, _) = c[3].split_once(':').unwrap_or_default();
                    format!("{}{user}:{OLD}", &c[1])
                } else {
                    c[0].to_string()
                }
            });
        }
        if out.contains(':') {
            replace_in(&mut out, &self.pgpass_line, hide_after_first);
        }
        if out.contains("login") && out.contains("-p") {
            replace_in(&mut out, &self.registry_login, hide_after_first);
        }
        if out.contains(" set") {
            replace_in(&mut out, &self.config_set, |c: &regex::Captures| {
                if self.key_matches(&c[2]) && &c[3] != OLD {
                    format!("{}{OLD}", &c[1])
                } else {
                    c[0].to_string()
                }
            });
        }
        // Apache's directives are case-insensitive (`requestheader set`).
        if out.contains("_header")
            || out.contains("-header ")
            || out.contains("header_up")
            || out.contains("Header ")
            || out.contains("header ")
            || out.contains("HEADER ")
        {
            replace_in(&mut out, &self.header_directive, |c: &regex::Captures| {
                let (name, value) = (&c[2], &c[3]);
                // `$http_authorization`: an nginx variable, not a secret;
                // HAProxy's `%[req.hdr(x)]` and Caddy's `{env.KEY}` alike.
                let value_start = value.trim_start_matches(['"', '\'']);
                let variable = value_start.starts_with('$')
                    || value_start.starts_with("%[")
                    || (value_start.starts_with('{') && !value_start.starts_with("{\""));
                if (self.key_matches(name) || (self.defaults && credential_header(name)))
                    && !variable
                    && !value.contains(OLD)
                {
                    format!("{}{OLD}", &c[1])
                } else {
                    c[0].to_string()
                }
            });
        }
        if out.contains('<') {
            replace_in(&mut out, &self.attr_pair, |c: &regex::Captures| {
                let key = c.get(2).or_else(|| c.get(3)).map_or("", |m| m.as_str());
                if self.key_matches(key) && !c[4].is_empty() && !c[4].starts_with(OLD) {
                    format!("{}{OLD}", &c[1])
                } else {
                    c[0].to_string()
                }
            });
        }
        // Only a text holding a secret word (its literals are what the
        // engine scans for): the rule itself starts at every line.
        if secret_word_re().is_match(&out) {
            replace_in(&mut out, &self.blank_pair, |c: &regex::Captures| {
                let key = &c[2];
                let b = key.as_bytes();
                // red41: a word after an acronym starts at its capital
                // (Pure-FTPd's `MYSQLPassword`, `LDAPBindPW`).
                let words = key.contains('_')
                    || b.windows(2)
                        .any(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase())
                    || b.windows(3).any(|w| {
                        w[0].is_ascii_uppercase()
                            && w[1].is_ascii_uppercase()
                            && w[2].is_ascii_lowercase()
                    })
                    || c[1].contains("define");
                let not_secret = NOT_SECRET_DIRECTIVES
                    .iter()
                    .any(|d| key.eq_ignore_ascii_case(d));
                if words && !not_secret && self.key_matches(key) && !c[3].starts_with(OLD) {
                    format!("{}{OLD}{}", &c[1], &c[4])
                } else {
                    c[0].to_string()
                }
            });
        }
        // IOS reads its commands in any letter case.
        if out.contains("sername")
            || out.contains("SERNAME")
            || out.contains("nable ")
            || out.contains("NABLE ")
            || out.contains("assword ")
            || out.contains("ASSWORD ")
        {
            replace_in(&mut out, &self.cisco, |c: &regex::Captures| {
                // Groups 1-2: `username`/`enable`; 3-5: a `line`'s password.
                let (head, value, tail) = match c.get(1) {
                    Some(h) => (h.as_str(), &c[2], ""),
                    None => (&c[3], &c[4], &c[5]),
                };
                if value.starts_with(OLD) {
                    c[0].to_string()
                } else {
                    format!("{head}{OLD}{tail}")
                }
            });
        }
        if out.contains(" >")
            && (out.contains("user ") || out.contains("SETUSER") || out.contains("setuser"))
        {
            replace_in(&mut out, &self.redis_acl, |c: &regex::Captures| {
                let line = &c[0];
                let acl = line
                    .split_whitespace()
                    .any(|w| matches!(w, "on" | "off") || w.starts_with(['~', '+', '&']));
                if !acl {
                    return line.to_string();
                }
                let mut shown = String::with_capacity(line.len());
                for (i, word) in line.split(' ').enumerate() {
                    if i > 0 {
                        shown.push(' ');
                    }
                    match word.strip_prefix(['>', '<']) {
                        Some(pw) if !pw.is_empty() && !pw.starts_with(OLD) => {
                            shown.push_str(&word[..1]);
                            shown.push_str(OLD);
                        }
                        _ => shown.push_str(word),
                    }
                }
                shown
            });
        }
        if out.contains("</") && out.contains('=') {
            replace_in(&mut out, &self.xml_keyed, |c: &regex::Captures| {
                if c[2] == c[5] && self.key_matches(&c[3]) && &c[4] != OLD {
                    format!("{}{OLD}</{}>", &c[1], &c[5])
                } else {
                    c[0].to_string()
                }
            });
        }
        if out.contains("={") || out.contains("= {") {
            replace_in(&mut out, &self.braced, |c: &regex::Captures| {
                if self.key_matches(&c[2]) && !c[3].is_empty() && &c[3] != OLD {
                    format!("{}{OLD}}}", &c[1])
                } else {
                    c[0].to_string()
                }
            });
        }
        if out.contains(['"', '\'']) && colon_inside_word(&out) {
            replace_in(&mut out, &self.colon_key, |c: &regex::Captures| {
                if self.key_matches(&c[3]) && &c[5] != OLD {
                    format!("{}{}{}{}{OLD}", &c[1], &c[2], &c[3], &c[4])
                } else {
                    c[0].to_string()
                }
            });
        }
        if (out.contains("ENV") || out.contains("env") || out.contains("Env") || out.contains('.'))
            && space_pair_candidate(&out)
        {
            replace_in(&mut out, &self.space_pair, |c: &regex::Captures| {
                let value = c[4].trim_end();
                if (c.get(2).is_some() || c[3].contains('.'))
                    && self.key_matches(&c[3])
                    && !value.starts_with(OLD)
                {
                    format!("{}{OLD}", &c[1])
                } else {
                    c[0].to_string()
                }
            });
        }
        if out.contains("set ")
            || out.contains("set\t")
            || out.contains("setenv")
            || out.contains("setx")
            || out.contains("SET")
            || out.contains("Setx")
            || out.contains("set(")
            || out.contains("-Item")
            || out.contains("-item")
            || out.contains("-Variable")
            || out.contains("-variable")
        {
            replace_in(&mut out, &self.set_pair, |c: &regex::Captures| {
                let value = c[3].trim_start_matches(['"', '\'']);
                // `set $key $http_x_key;`: an nginx variable; `gh secret
                // set API_TOKEN --body X`: an option; `< file`: a file.
                if self.key_matches(&c[2])
                    && !value.starts_with(['$', '-', '<', '|'])
                    && !value.starts_with(OLD)
                {
                    format!("{}{OLD}", &c[1])
                } else {
                    c[0].to_string()
                }
            });
        }
        let sql = ((out.contains("ASSWORD") || out.contains("assword"))
            && (out.contains(" '") || out.contains(" \"") || out.contains("('")))
            || out.contains("DENTIFIED")
            || out.contains("dentified");
        if sql
            || out.contains("insecure-password")
            || (out.contains("stats") && out.contains("auth"))
        {
            replace_in(
                &mut out,
                &self.auth_directive,
                |c: &regex::Captures| match (c.get(1), c.get(3)) {
                    (Some(d), _) if !c[2].starts_with(OLD) => format!("{}{OLD}", d.as_str()),
                    (_, Some(d)) if !c[4].starts_with(OLD) => format!("{}{OLD}", d.as_str()),
                    _ => c[0].to_string(),
                },
            );
        }
        if [
            "@tcp(", "@tcp6(", "@unix(", "@udp(", "@udp6(", "@(", "sqlplus", "sqlldr", "expdp",
            "impdp", "oracle:", "rman", "dgmgrl",
        ]
        .iter()
        .any(|w| out.contains(w))
        {
            replace_in(&mut out, &self.dsn_password, |c: &regex::Captures| {
                match (c.get(1), c.get(4)) {
                    (Some(u), _) if &c[2] != OLD => format!("{}{OLD}{}", u.as_str(), &c[3]),
                    (_, Some(u)) if &c[5] != OLD => format!("{}{OLD}", u.as_str()),
                    _ => c[0].to_string(),
                }
            });
        }
        if out.contains(['?', '&', '#']) && out.contains('=') {
            let azure_function = out.contains("azurewebsites.net") || out.contains("/api/");
            let influx_user = out.contains("?u=") || out.contains("&u=");
            replace_in(&mut out, &self.query, |c: &regex::Captures| {
                // Azure Functions' function key (`…azurewebsites.net/api/
                // fn?code=X`); InfluxDB 1.x's password beside its user
                // (`?u=writer&p=X`): re-probe 18.
                let function_key = azure_function && c[2].eq_ignore_ascii_case("code");
                let influx = influx_user && &c[2] == "p";
                if self.key_matches(&c[2])
                    || signature_param(&c[2])
                    || c[2].eq_ignore_ascii_case("auth")
                    || function_key
                    || influx
                {
                    format!("{}{}{}{OLD}", &c[1], &c[2], &c[3])
                } else {
                    c[0].to_string()
                }
            });
        }
        // Before the inline rule, which reads `$pw = ConvertTo-SecureString`
        // as a key and its value.
        if out.contains("secret set")
            || out.contains("variable set")
            || out.contains("put-parameter")
            || out.contains("secretsmanager")
            || out.contains("ecureString")
            || out.contains("ecurestring")
        {
            replace_in(&mut out, &self.gh_secret, |c: &regex::Captures| {
                // `ConvertTo-SecureString $pw`: a variable.
                if c[2].contains(OLD) || c[2].starts_with('$') || c[2].starts_with('-') {
                    c[0].to_string()
                } else {
                    format!("{}{OLD}", &c[1])
                }
            });
        }
        if out.contains(".") && (out.contains("(\"") || out.contains("('")) {
            replace_in(&mut out, &self.setter_call, |c: &regex::Captures| {
                if secret_setter(&c[2], |n| self.key_matches(n))
                    && !c[3].is_empty()
                    && !c[3].contains(OLD)
                {
                    format!("{}{OLD}{}", &c[1], &c[4])
                } else {
                    c[0].to_string()
                }
            });
        }
        if out.contains(['[', '('])
            || out.contains("->")
            || out.contains("\" to ")
            || out.contains("' to ")
        {
            replace_in(&mut out, &self.code_pair, |c: &regex::Captures| {
                let key = [2, 3, 4, 5]
                    .into_iter()
                    .find_map(|i| c.get(i))
                    .map_or("", |m| m.as_str());
                if self.key_matches(key) && !c[6].is_empty() && &c[6] != OLD {
                    format!("{}{OLD}", &c[1])
                } else {
                    c[0].to_string()
                }
            });
        }
        if out.contains("${") {
            replace_in(&mut out, &self.shell_default, |c: &regex::Captures| {
                if self.key_matches(&c[2]) && !c[3].is_empty() && &c[3] != OLD {
                    format!("{}{OLD}}}", &c[1])
                } else {
                    c[0].to_string()
                }
            });
        }
        if out.contains("ommand") || out.contains("OMMAND") || out.contains("passwordeval") {
            replace_in(&mut out, &self.pass_command, |c: &regex::Captures| {
                let v = &c[2];
                let q = &v[..usize::from(v.starts_with(['"', '\'']))];
                if v.contains(OLD) || v.trim_matches(['"', '\'']).is_empty() {
                    c[0].to_string()
                } else {
                    format!("{}{q}{OLD}{q}", &c[1])
                }
            });
        }
        if out.contains("Credentials(") {
            replace_in(&mut out, &self.sbt_credentials, |c: &regex::Captures| {
                if c[2].is_empty() || &c[2] == OLD {
                    c[0].to_string()
                } else {
                    format!("{}{OLD}", &c[1])
                }
            });
        }
        if out.contains("||") || out.contains("??") || out.contains("?:") || out.contains(" //") {
            replace_in(&mut out, &self.fallback, |c: &regex::Captures| {
                if self.key_matches(&c[2]) && !c[3].is_empty() && &c[3] != OLD {
                    format!("{}{OLD}", &c[1])
                } else {
                    c[0].to_string()
                }
            });
        }
        if out.contains([':', '=']) {
            // The inline rule's plain value stops at `{` and blanks: a
            // placeholder it starts (`${DB_PASSWORD}`, `$(cat /run/x)`) is
            // read whole from the text after it.
            let placeholders = (out.contains("${")
                || out.contains("$(")
                || out.contains("{{")
                || out.contains("ENC["))
            .then(|| out.clone());
            replace_in(&mut out, &self.inline, |c: &regex::Captures| {
                let key = c[2].trim_start_matches("export ");
                let value = &c[4];
                if let (Some(text), Some(v)) = (&placeholders, c.get(4)) {
                    if is_placeholder(value)
                        || starts_with_placeholder(&text[v.start()..])
                        || starts_with_sops_ciphertext(&text[v.start()..])
                    {
                        return c[0].to_string();
                    }
                }
                if value.starts_with('>') && c[3].ends_with('=') {
                    // `key => value`: the hash-rocket rule's.
                    return c[0].to_string();
                }
                if c[2].contains(':') && c[3].contains("::") {
                    // `std::token::Kind`: a path, not a Hiera key
                    // (`profile::db::password: x`).
                    return c[0].to_string();
                }
                if &c[3] == ":" && matches!(value, "env" | "file") && c[1].ends_with('-') {
                    // keytool's `-storepass:env VAR` / `-keypass:file F`:
                    // where the password is, which the next word names.
                    return c[0].to_string();
                }
                if c[3].starts_with('}') && c[3].contains(':') {
                    // `${PWD}:/src`: a shell variable in a path, not a key
                    // (`${env:KEY} = x` and `$ENV{KEY} = x` assign with `=`).
                    return c[0].to_string();
                }
                if (self.key_matches(key)
                    || (receivers && receiver_key(key))
                    || (jwk && jwk_private(key))
                    || (jaas && jaas_user(key))
                    || self.auth_value(key, value))
                    && value != OLD
                    && !value.is_empty()
                    && !super::lines::bool_null_or_empty(value)
                {
                    format!("{}{}{}{OLD}", &c[1], &c[2], &c[3])
                } else if depth >= 6 {
                    c[0].to_string()
                } else if let Some(q) = ["\"\"\"", "'''"].into_iter().find(|q| value.starts_with(q))
                {
                    // A triple-quoted value (to its end or the text's):
                    // what it quotes is scrubbed in turn.
                    let inner = &value[3..];
                    let (inner, close) = match inner.strip_suffix(q) {
                        Some(i) => (i, q),
                        None => (inner, ""),
                    };
                    let inner = self.scrub_at(inner, depth + 1);
                    format!("{}{}{}{q}{inner}{close}", &c[1], &c[2], &c[3])
                } else if value.len() >= 2
                    && ((value.starts_with('"') && value.ends_with('"'))
                        || (value.starts_with('\'') && value.ends_with('\'')))
                {
                    // A quoted value is matched whole: what it quotes
                    // (`config.json: '{"password": "x"}'`) is scrubbed
                    // in turn. Its inside holds no quote of its kind, so
                    // this ends after a few levels.
                    let (q, inner) = (&value[..1], &value[1..value.len() - 1]);
                    format!(
                        "{}{}{}{q}{}{q}",
                        &c[1],
                        &c[2],
                        &c[3],
                        self.scrub_at(inner, depth + 1)
                    )
                } else if let Some(inner) =
                    value.strip_prefix('[').and_then(|v| v.strip_suffix(']'))
                {
                    // A flow list under a neutral key: its items are read
                    // in turn (`args: [--password=x]`).
                    format!(
                        "{}{}{}[{}]",
                        &c[1],
                        &c[2],
                        &c[3],
                        self.scrub_at(inner, depth + 1)
                    )
                } else if let Some((k, _)) = value.split_once('=').filter(|(k, v)| {
                    let k = k.trim_start_matches('-');
                    !v.is_empty()
                        && *v != OLD
                        && is_key_name(k)
                        && (self.key_matches(k) || self.auth_value(k, v))
                }) {
                    // `--from-literal=password=x`, `--env=API_TOKEN=x`: the
                    // option's value is itself a `key=value`; so is a
                    // neutral key's value that is an option (`rfc2136:
                    // --rfc2136-tsig-secret=x`, probe26).
                    format!("{}{}{}{k}={OLD}", &c[1], &c[2], &c[3])
                } else {
                    c[0].to_string()
                }
            });
        }
        if out.contains('-') {
            replace_in(&mut out, &self.flag, |c: &regex::Captures| {
                let name = c[2].trim_start_matches('-');
                if (self.key_matches(name) || self.auth_value(name, &c[4])) && &c[4] != OLD {
                    format!("{}{}{}{OLD}", &c[1], &c[2], &c[3])
                } else {
                    c[0].to_string()
                }
            });
        }
        if out.contains("assword") || out.contains("ASSWORD") {
            replace_in(&mut out, &self.netrc, |c: &regex::Captures| {
                // A line that is only `password X` (netrc's multi-line
                // form) or a `machine ... password X` entry; not prose.
                let entry = !c[1]
                    .trim_start()
                    .get(..8)
                    .is_some_and(|w| w.eq_ignore_ascii_case("password"));
                if (entry || c[3].trim().is_empty()) && &c[2] != OLD {
                    format!("{}{OLD}{}", &c[1], &c[3])
                } else {
                    c[0].to_string()
                }
            });
        }
        if out.contains("secret \"") && out.contains(';') {
            replace_in(&mut out, &self.tsig_secret, |c: &regex::Captures| {
                if c[2].contains(OLD) {
                    c[0].to_string()
                } else {
                    format!("{}{OLD}{}", &c[1], &c[3])
                }
            });
        }
        if ["MD5", "SHA", "AES", " M ", "RMD", "TIGER", "WHIRLPOOL"]
            .iter()
            .any(|w| out.contains(w))
        {
            replace_in(&mut out, &self.ntp_key, |c: &regex::Captures| {
                if c[2].contains(OLD) {
                    c[0].to_string()
                } else {
                    format!("{}{OLD}{}", &c[1], &c[3])
                }
            });
        }
        if out.contains("cache_peer") && out.contains("login=") {
            replace_in(&mut out, &self.squid_login, hide_after_first);
        }
        if ["Pass ", "Pass\t", "PASS ", "PASS\t"]
            .iter()
            .any(|w| out.contains(w))
        {
            replace_in(&mut out, &self.pass_line, |c: &regex::Captures| {
                if c[2].contains(OLD) {
                    c[0].to_string()
                } else {
                    format!("{}{OLD}{}", &c[1], &c[3])
                }
            });
        }
        if ["{PLAIN", "{CLEARTEXT", "{plain", "{cleartext"]
            .iter()
            .any(|w| out.contains(w))
        {
            replace_in(&mut out, &self.plain_scheme, hide_after_first);
        }
        if out.contains("changeUserPassword") {
            replace_in(&mut out, &self.mongo_password, |c: &regex::Captures| {
                if c[2].is_empty() || c[2].contains(OLD) {
                    c[0].to_string()
                } else {
                    format!("{}{OLD}", &c[1])
                }
            });
        }
        if out.contains("createUser ") {
            replace_in(&mut out, &self.snmp_user, |c: &regex::Captures| {
                let mut s = format!("{}{OLD}", &c[1]);
                if let Some(privacy) = c.get(3) {
                    s.push_str(privacy.as_str());
                    s.push_str(OLD);
                }
                s
            });
        }
        // Written in lower case by redis.conf, sentinel.conf and
        // slapd/nslcd.conf.
        if [
            "requirepass",
            "masterauth",
            "bindpw",
            "rootpw",
            "sshpw",
            "auth-pass",
            "sentinel-pass",
            "community",
            "neighbor",
            "ospf",
            // red40: the LDAP clients' `BINDPW` in capitals (pam_ldap's
            // and nss_ldap's `ldap.conf` read either case).
            "BINDPW",
            "ROOTPW",
        ]
        .iter()
        .any(|d| out.contains(d))
        {
            replace_in(&mut out, &self.directive, hide_after_first);
        }
        if out.contains("password") && out.contains('/') {
            replace_in(&mut out, &self.debconf_password, |c: &regex::Captures| {
                if c[2].trim() == OLD {
                    c[0].to_string()
                } else {
                    format!("{}{OLD}", &c[1])
                }
            });
        }
        if xml_value_child(&out) {
            self.hide_xml_settings(&mut out);
        }
        if out.contains("<<<") {
            replace_in(&mut out, &self.here_string, |c: &regex::Captures| {
                if c[2].contains(OLD) {
                    c[0].to_string()
                } else {
                    format!("{}{OLD}", &c[1])
                }
            });
        }
        if out.contains("sshpass") {
            replace_in(&mut out, &self.sshpass, hide_after_first);
        }
        if out.contains("--from-literal") && out.contains("secret") {
            replace_in(&mut out, &self.from_literal, |c: &regex::Captures| {
                if &c[2] == OLD {
                    c[0].to_string()
                } else {
                    format!("{}{OLD}", &c[1])
                }
            });
        }
        if out.contains(" -p") {
            replace_in(&mut out, &self.mysql_p, hide_after_first);
        }
        if out.contains("</") {
            replace_in(&mut out, &self.xml, |c: &regex::Captures| {
                let local = c[1].rsplit(':').next().unwrap_or_default();
                if c[1] == c[4] && self.key_matches(local) && &c[3] != OLD {
                    format!("<{}{}>{OLD}</{}>", &c[1], &c[2], &c[4])
                } else {
                    c[0].to_string()
                }
            });
        }
        // Issue 19: secrets by their position (daemons, init scripts,
        // network devices).
        hide_positional_secrets(&mut out, |k| self.key_matches(k));
        hide_shape_rules(&mut out, |k| self.key_matches(k));
        out
    }
}

/// The key whose value a flow map is, read back from the text before the
/// map: `KEY: {`, `"KEY": {`, `KEY: [{` (the first item of a list).
fn flow_map_key(before: &str) -> Option<&str> {
    let b = before.trim_end_matches([' ', '\t']);
    let b = b
        .strip_suffix('[')
        .unwrap_or(b)
        .trim_end_matches([' ', '\t']);
    let b = b.strip_suffix(':')?.trim_end_matches([' ', '\t']);
    let b = b.strip_suffix(['"', '\'']).unwrap_or(b);
    let start = b
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
        .map_or(0, |i| i + 1);
    let key = &b[start..];
    key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        .then_some(key)
}

/// Whether `rest` (a value and the text after it) starts with a
/// [placeholder](is_placeholder) that ends the value: the text up to a
/// blank, quote, `,`, `;` or an escaped line break, or for a command
/// substitution to its closing parenthesis.
fn starts_with_placeholder(rest: &str) -> bool {
    if !(rest.starts_with("${") || rest.starts_with("$(") || rest.starts_with("{{")) {
        return false;
    }
    let end = if rest.starts_with("$(") {
        let mut depth = 0usize;
        let mut end = None;
        for (i, ch) in rest.char_indices() {
            match ch {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(i + 1);
                        break;
                    }
                }
                '\n' | '\\' => break,
                _ => {}
            }
        }
        match end {
            Some(e) => e,
            None => return false,
        }
    } else if rest.starts_with("{{") {
        match rest.find("}}") {
            Some(e) => e + 2,
            None => return false,
        }
    } else {
        rest.find(|ch: char| ch.is_whitespace() || matches!(ch, '"' | '\'' | ',' | ';' | '\\'))
            .unwrap_or(rest.len())
    };
    let after = rest[end..].chars().next();
    after.is_none_or(|ch| ch.is_whitespace() || matches!(ch, '"' | '\'' | ',' | ';' | '\\'))
        && is_placeholder(&rest[..end])
}

/// A key as [`Redactor::inline`] reads one: `[A-Za-z_][A-Za-z0-9_.-]*`.
fn is_key_name(k: &str) -> bool {
    k.starts_with(|ch: char| ch.is_ascii_alphabetic() || ch == '_')
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}
