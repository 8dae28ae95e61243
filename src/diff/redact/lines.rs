//! The text (line) mode: the line rule read over a text file (`--no-semantic`,
//! and multi-line strings in the semantic mode), with the values that
//! continue over more lines (heredocs, block scalars, continuations, open
//! brackets) and YAML anchors and aliases.

use regex::Regex;
use std::collections::HashSet;

use super::commands::{
    command_secret_flag, glued_password, has_password_options, hide_flow_args, list_password_items,
    mysql_client, password_clients_re, positional_client, user_password_flag, PASSWORD_CLIENTS,
    REGISTRY_CLIS,
};
use super::escapes::decode_escapes;
use super::iac::{secure_parameter_default_lines, terraform_secret_lines};
use super::keys::{jaas_user, jwk_private};
use super::structural::{
    helm_parameter_value_lines, is_name_list_key, is_placeholder, is_visible_scalar,
    names_a_secret_value, names_receivers, pair_name_field, pair_value_field, receiver_key,
    secret_patch_path, starts_with_sops_ciphertext, KAPITAN_SECRET_BACKENDS,
};
use super::{Redactor, OLD};

impl Redactor {
    /// [`Self::redact_text`] after credential shapes, line by line; a line
    /// that defines one of `anchors` (`&name`) hides its value as a secret
    /// key's line does.
    pub(super) fn redact_lines(&self, text: &str, anchors: &HashSet<String>) -> String {
        let line_re = text_line_re();
        let escaped_key_re = escaped_key_re();
        let indent = |l: &str| l.len() - l.trim_start().len();
        let mut out = String::with_capacity(text.len());
        // After `key: |`, `key: >` or `key:` with nothing after it, the more
        // indented lines that follow are the secret's value too; after a
        // bare `key:` also the list items at its own indent (YAML's compact
        // `password:` / `- value`), unless the key is itself a list item.
        // After a secret key's plain or quoted value, the more indented
        // lines continue it (YAML folds them into the value).
        let mut hiding_below: Option<usize> = None;
        let mut compact_items = false;
        // A quoted value (`"`, `'`) or a triple-quoted one (`"""`, `'''`)
        // of a secret key that its line does not close: hidden to the line
        // that does (or to the end of the text).
        let mut hiding_quote: Option<char> = None;
        let mut hiding_until: Option<&str> = None;
        // After a secret key's value that opens a heredoc (`<<EOT`,
        // `<<-EOT`, `<<~EOT`, `<<'EOF'`: HCL, shell, Ruby), the lines to
        // the one that is only the marker; after one that ends in `\`
        // (a `.properties` or shell continuation), the lines it continues;
        // after one that opens a bracket it does not close (a multi-line
        // TOML or JSON array, an HCL list), the lines to the one that
        // closes it (a count of that bracket, quotes not read).
        let mut heredoc: Option<String> = None;
        let mut continued = false;
        let mut bracket: Option<(char, char, usize)> = None;
        // The column of an explicit key `? password`, whose value is on
        // the next line (`: value`) at that column.
        let mut explicit_secret: Option<usize> = None;
        let mut after_secret_flag = false;
        // The closing tag of a secret-named XML element whose text is on
        // the lines below its opening tag (re-probe 18).
        let mut xml_close: Option<String> = None;
        // The `-u`/`--user` flag the previous list item was, if any.
        let mut after_user_flag: Option<String> = None;
        // A flow mapping's secret key ends the previous line (`{password:`),
        // its value starts this one.
        let mut flow_value_next = false;
        // The key column of a bare `secrets:` (or `"secrets": {`), and
        // whether a line below it was read: a map below it holds values,
        // a list names Secrets ([`SECRET_NAME_LISTS`]).
        let mut secret_values_below: Option<(usize, bool)> = None;
        let mut env_values = self.secret_env_value_lines(text, line_re);
        if [
            "value", "api:", "jwt", "Jwt", "JWT", "crypt", "private:", "shared:", "key-auth",
            "key_auth", "keyauth",
        ]
        .iter()
        .any(|w| text.contains(w))
        {
            env_values.extend(self.nested_pair_value_lines(text, line_re));
        }
        if self.defaults && text.contains(']') {
            env_values.extend(section_key_lines(text));
        }
        if self.defaults
            && (text.contains("auth") || text.contains("Auth") || text.contains("AUTH"))
        {
            env_values.extend(self.auth_block_lines(text));
        }
        if self.defaults {
            env_values.extend(terraform_secret_lines(text, |k| self.key_matches(k)));
            env_values.extend(secure_parameter_default_lines(text, line_re));
        }
        if text.contains("].value") {
            env_values.extend(helm_parameter_value_lines(text, line_re, |k| {
                self.key_matches(k)
            }));
        }
        // A CRD schema's field names (red39): shown, their defaults hidden.
        let schema_fields = if text.contains("openAPIV3Schema") {
            let (fields, literals) =
                super::schema::text_schema_field_lines(text, |k| self.key_matches(k));
            env_values.extend(literals);
            fields
        } else {
            HashSet::new()
        };
        // A Pod volume's `secret:` source (only names and paths): shown.
        let volume_secrets = if text.contains("secretName") || text.contains("serviceAccountToken")
        {
            secret_volume_lines(text)
        } else {
            Vec::new()
        };
        // Alertmanager's PagerDuty/Pushover receivers: their keys count.
        let receivers = self.defaults && names_receivers(text);
        // A JSON Web Key's private members ([`jwk_private`]).
        let jwk = self.defaults && text.contains("kty");
        // A JAAS file's `user_NAME="X"` entries ([`jaas_user`]).
        let jaas = self.defaults && text.contains("LoginModule");
        // A block list of args (`- redis-cli` / `- -a` / `- VALUE`), maybe
        // split over `command:` and `args:`: the programs the file names.
        let mut programs: Vec<&str> = ["redis-cli", "curl", "sshpass"]
            .into_iter()
            .filter(|p| text.contains(p))
            .collect();
        // A client with password options, named as a word of its own (a
        // list item `- sqlcmd`, `[sqlcmd, ...]`, `/usr/bin/sqlcmd`): one
        // literal scan of the text.
        for m in password_clients_re().find_iter(text) {
            let before = text[..m.start()].chars().next_back();
            let after = text[m.end()..].chars().next();
            let word = before.is_none_or(|c| c.is_whitespace() || "[,\"'/".contains(c))
                && after.is_none_or(|c| c.is_whitespace() || ",]\"'".contains(c));
            let p = PASSWORD_CLIENTS.iter().find(|p| **p == m.as_str());
            // red38: the clients whose password is a word by its place
            // too (`[rabbitmqctl, change_password, U, X]`).
            if let Some(p) = p.filter(|p| {
                word && (has_password_options(p) || mysql_client(p) || positional_client(p))
            }) {
                if !programs.contains(p) {
                    programs.push(p);
                }
            }
        }
        // A block list item `- login`, or a flow list that starts with
        // `login` (`args: [login, -p, x]`), in a file that names a registry
        // client.
        static LOGIN_ITEM: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
        let login_item = LOGIN_ITEM.get_or_init(|| {
            Regex::new(
                r#"(?m)^[ \t]*-[ \t]+["']?login["']?[ \t]*$|\[[ \t]*["']?login["']?[ \t]*[,\]]"#,
            )
            .expect("static regex is valid")
        });
        if text.contains("login")
            && REGISTRY_CLIS.iter().any(|p| text.contains(p))
            && login_item.is_match(text)
        {
            programs.push("registry-login");
        }
        // red38: the block list items that hold a password by their place
        // (`- rabbitmqctl` / `- change_password` / `- U` / `- X`).
        let placed_items = if self.defaults && programs.iter().any(|p| positional_client(p)) {
            block_list_password_lines(text, &programs)
        } else {
            Vec::new()
        };
        for (i, line) in text.split_inclusive('\n').enumerate() {
            let (body, nl) = match line.strip_suffix('\n') {
                Some(b) => (b, "\n"),
                None => (line, ""),
            };
            if placed_items.binary_search(&i).is_ok() {
                if let Some(dash) = body.find("- ") {
                    out.push_str(&body[..dash + 2]);
                    out.push_str(OLD);
                    out.push_str(nl);
                    continue;
                }
            }
            if flow_value_next {
                if body.trim().is_empty() {
                    out.push_str(line);
                    continue;
                }
                flow_value_next = false;
                let ind = indent(body);
                let rest = &body[ind..];
                out.push_str(&body[..ind]);
                out.push_str(OLD);
                if let Some(end) = flow_value_end(rest) {
                    out.push_str(&self.scrub(&rest[end..]));
                }
                out.push_str(nl);
                continue;
            }
            if let Some(close) = &xml_close {
                if body.trim_start().starts_with(close.as_str()) {
                    out.push_str(line);
                    xml_close = None;
                } else {
                    if body.contains(close.as_str()) {
                        xml_close = None;
                    }
                    hide_line(&mut out, body, nl);
                }
                continue;
            }
            if let Some(marker) = &heredoc {
                if body.trim() == marker {
                    out.push_str(line);
                    heredoc = None;
                } else {
                    hide_line(&mut out, body, nl);
                }
                continue;
            }
            if continued {
                continued = body.trim_end().ends_with('\\');
                hide_line(&mut out, body, nl);
                continue;
            }
            if let Some((open, close, depth)) = bracket {
                let depth = body.chars().fold(depth, |d, ch| match ch {
                    ch if ch == open => d + 1,
                    ch if ch == close => d.saturating_sub(1),
                    _ => d,
                });
                bracket = (depth > 0).then_some((open, close, depth));
                // The closing line (`]`, `},`) stays when that is all it is.
                let closer = body.trim().trim_end_matches([',', ';']);
                if depth == 0 && closer.chars().all(|ch| ch == close) {
                    out.push_str(line);
                } else {
                    hide_line(&mut out, body, nl);
                }
                continue;
            }
            if let Some(q) = hiding_quote {
                if !body.trim().is_empty() {
                    out.push_str(&body[..indent(body)]);
                    out.push_str(OLD);
                }
                out.push_str(nl);
                if closes_quote(body, q) {
                    hiding_quote = None;
                }
                continue;
            }
            if let Some(delim) = hiding_until {
                if body.trim() == delim {
                    out.push_str(line);
                } else {
                    if !body.trim().is_empty() {
                        out.push_str(&body[..indent(body)]);
                        out.push_str(OLD);
                    }
                    out.push_str(nl);
                }
                if body.contains(delim) {
                    hiding_until = None;
                }
                continue;
            }
            if let Some(col) = explicit_secret {
                if body.trim().is_empty() {
                    out.push_str(line);
                    continue;
                }
                explicit_secret = None;
                let value = body[indent(body)..].strip_prefix(':');
                if let Some(value) = value.filter(|_| indent(body) == col) {
                    out.push_str(&body[..col]);
                    out.push(':');
                    if !value.trim().is_empty() {
                        out.push(' ');
                        out.push_str(OLD);
                    }
                    out.push_str(nl);
                    hiding_below = Some(col);
                    compact_items = value.trim().is_empty();
                    continue;
                }
            }
            if let Some(ind) = hiding_below {
                let compact_item = compact_items
                    && indent(body) == ind
                    && (body.trim_start().starts_with("- ") || body.trim() == "-");
                if compact_item {
                    out.push_str(&body[..indent(body)]);
                    out.push_str("- ");
                    out.push_str(OLD);
                    out.push_str(nl);
                    continue;
                }
                if body.trim().is_empty() || indent(body) > ind {
                    if !body.trim().is_empty() {
                        out.push_str(&body[..indent(body)]);
                        out.push_str(OLD);
                    }
                    out.push_str(nl);
                    continue;
                }
                hiding_below = None;
            }
            if let Some((col, seen)) = secret_values_below {
                if body.trim().is_empty() {
                    out.push_str(line);
                    continue;
                }
                if indent(body) > col {
                    secret_values_below = Some((col, true));
                    // A list names Secrets; Kapitan's backends are settings.
                    let backend = line_re.captures(body).is_some_and(|c| {
                        KAPITAN_SECRET_BACKENDS.contains(&c[2].to_ascii_lowercase().as_str())
                    });
                    if seen || !(body.trim_start().starts_with('-') || backend) {
                        out.push_str(&self.secret_values_line(body, line_re));
                        out.push_str(nl);
                        continue;
                    }
                }
                secret_values_below = None;
            }
            flow_value_next = flow_key_ends(body).is_some_and(|k| self.key_matches(k));
            let flag_before = std::mem::take(&mut after_secret_flag);
            let user_flag_before = after_user_flag.take();
            let item = body.trim_start().strip_prefix("- ").map(str::trim);
            if let Some(item) = item {
                let user_password = user_flag_before
                    .as_deref()
                    .is_some_and(|f| user_password_flag(f, item));
                if (flag_before && !item.starts_with('-')) || user_password {
                    out.push_str(&body[..body.len() - body.trim_start().len()]);
                    out.push_str("- ");
                    out.push_str(OLD);
                    out.push_str(nl);
                    continue;
                }
                let flag = item.trim_matches(['"', '\'']);
                if programs.iter().any(|p| glued_password(p, flag)) {
                    out.push_str(&body[..body.len() - body.trim_start().len()]);
                    out.push_str("- ");
                    out.push_str(OLD);
                    out.push_str(nl);
                    continue;
                }
                after_user_flag = Some(flag.to_string());
                after_secret_flag = item.starts_with('-')
                    && !item.contains(['=', ' '])
                    && (self.key_matches(flag.trim_start_matches('-'))
                        || programs.iter().any(|p| command_secret_flag(p, flag)));
            }
            // `? password` (or `- ? password`): an explicit key.
            let explicit = body.trim_start();
            let explicit = explicit.strip_prefix("- ").unwrap_or(explicit);
            if let Some(key) = explicit.strip_prefix("? ") {
                if self.key_matches(key.trim().trim_matches(['"', '\''])) {
                    explicit_secret = Some(body.len() - explicit.len());
                }
            }
            if let Some(at) = defines_anchor(body, anchors) {
                out.push_str(&body[..at]);
                if !body[at..].trim().is_empty() {
                    out.push(' ');
                    out.push_str(OLD);
                }
                out.push_str(nl);
                hiding_below = Some(indent(body));
                compact_items = false;
                continue;
            }
            if let Some(tag) = xml_open_tag(body) {
                let local = tag.rsplit(':').next().unwrap_or(tag);
                if self.key_matches(local) {
                    xml_close = Some(format!("</{tag}>"));
                    out.push_str(line);
                    continue;
                }
            }
            // An HCL block named for secrets (Consul's `acl { tokens {
            // initial_management = "X" } }`): its lines to the closing
            // brace, like a secret key's open bracket.
            if body.ends_with('{') && hcl_block_name(body).is_some_and(|n| self.key_matches(n)) {
                bracket = Some(('{', '}', 1));
                out.push_str(line);
                continue;
            }
            // A secret-named variable given a string its line opens and
            // does not close (issue 19): a PowerShell here-string, a JS/TS
            // template literal, Perl's `qq(…)`/`q{…}`.
            // A Dockerfile `ENV`/`ARG` whose secret value starts on, or
            // runs over, the lines a `\` continues (issue 19).
            if let Some(at) = self
                .dockerfile_continued_value(body)
                .or_else(|| self.shell_continued_value(body))
            {
                out.push_str(&body[..at]);
                out.push_str(OLD);
                out.push_str(" \\");
                out.push_str(nl);
                continued = true;
                continue;
            }
            // Make's `define DB_PASSWORD` … `endef` (red11).
            if self.make_define_opener(body) {
                out.push_str(line);
                hiding_until = Some("endef");
                continue;
            }
            if let Some((at, opener)) = self.multiline_opener(body) {
                out.push_str(&body[..at]);
                if !body[at..].trim().is_empty() {
                    out.push_str(OLD);
                }
                out.push_str(nl);
                match opener {
                    Opener::Until(delim) => hiding_until = Some(delim),
                    Opener::Bracket(open) => bracket = Some(open),
                }
                continue;
            }
            let caps = line_re.captures(body).or_else(|| {
                if body.contains('\\') {
                    escaped_key_re.captures(body)
                } else {
                    None
                }
            });
            let env_value = env_values.contains(&i);
            let key_of = |c: &regex::Captures| -> String {
                if c[2].contains('\\') {
                    decode_escapes(&c[2])
                } else {
                    c[2].to_string()
                }
            };
            match caps {
                Some(c)
                    if (env_value
                        || self.key_matches(&key_of(&c))
                        || (receivers && receiver_key(&key_of(&c)))
                        || (jwk && jwk_private(&key_of(&c)))
                        || (jaas && jaas_user(&key_of(&c))))
                        && !is_placeholder(&c[4])
                        && !c
                            .get(4)
                            .is_some_and(|v| starts_with_sops_ciphertext(&body[v.start()..]))
                        && !bool_null_or_empty(&c[4])
                        && !volume_secrets.contains(&i)
                        && !schema_fields.contains(&i) =>
                {
                    let value = c[4].trim();
                    if value.is_empty() || value.starts_with('|') || value.starts_with('>') {
                        hiding_below = Some(indent(body));
                        compact_items = value.is_empty() && !body.trim_start().starts_with('-');
                    } else {
                        // Lines more indented than the key continue a plain
                        // or quoted value (or are not YAML).
                        hiding_below = Some(c[1].trim_end_matches(['"', '\'']).len());
                        compact_items = false;
                        let triple = ["\"\"\"", "'''"];
                        if let Some(marker) = heredoc_marker(value) {
                            heredoc = Some(marker.to_string());
                            hiding_below = None;
                        } else if value.ends_with('\\') {
                            continued = true;
                        } else if let Some(open) = open_bracket(value) {
                            bracket = Some(open);
                        } else if let Some(delim) =
                            triple.into_iter().find(|d| value.starts_with(d))
                        {
                            if !value[3..].contains(delim) {
                                hiding_until = Some(delim);
                            }
                        } else if let Some(q) =
                            value.chars().next().filter(|q| matches!(q, '"' | '\''))
                        {
                            if !closes_quote(&value[1..], q) {
                                hiding_quote = Some(q);
                            }
                        }
                    }
                    out.push_str(&c[1]);
                    out.push_str(&c[2]);
                    out.push_str(&c[3]);
                    if !value.is_empty() {
                        out.push_str(OLD);
                    }
                    out.push_str(nl);
                }
                Some(c) if self.defaults && is_name_list_key(&key_of(&c)) => {
                    let value = c[4].trim();
                    if value.is_empty() || value == "{" {
                        secret_values_below =
                            Some((c[1].trim_end_matches(['"', '\'']).len(), false));
                        out.push_str(line);
                    } else if value.starts_with('{') {
                        out.push_str(&c[1]);
                        out.push_str(&c[2]);
                        out.push_str(&c[3]);
                        out.push_str(&self.hide_flow_values(&c[4]));
                        out.push_str(nl);
                    } else {
                        out.push_str(&self.scrub(line));
                    }
                }
                _ if !programs.is_empty() && glued_mysql_line(body, &programs).is_some() => {
                    // red38 (red-positional-cli-secrets): a MySQL client's
                    // `-pX` starting a line a folded (`>-`) or continued
                    // command line runs onto.
                    let (lead, end) = glued_mysql_line(body, &programs).unwrap_or_default();
                    out.push_str(&body[..lead + 2]);
                    out.push_str(OLD);
                    out.push_str(&self.scrub(&line[end..]));
                }
                _ if !programs.is_empty() && line.contains('[') => {
                    // `args: [-a, x]` after `command: [redis-cli]` on
                    // another line: the flow list's item after a flag of
                    // a program the file names.
                    out.push_str(&hide_flow_args(&self.scrub(line), &programs));
                }
                _ => out.push_str(&self.scrub(line)),
            }
        }
        out
    }
}

/// red38 (red-positional-cli-secrets): the indexes of the lines of
/// `text` that are block list items (`- X`, one scalar each) holding a
/// password by its place ([`list_password_items`]): each run of items
/// at one indent is a list; `programs` stand for a sibling `command` for
/// a run below an `args:` key.
fn block_list_password_lines(text: &str, programs: &[&str]) -> Vec<usize> {
    let mut found = Vec::new();
    // (indent, first line, items) of the run being read.
    let mut run: Option<(usize, usize, Vec<&str>)> = None;
    let mut args_key = false;
    let mut prev_args = false;
    let flush =
        |run: &mut Option<(usize, usize, Vec<&str>)>, args: bool, found: &mut Vec<usize>| {
            if let Some((_, first, items)) = run.take() {
                let progs: &[&str] = if args { programs } else { &[] };
                for (w, _) in list_password_items(&items, progs) {
                    found.push(first + w);
                }
            }
        };
    for (i, line) in text.lines().enumerate() {
        let ind = line.len() - line.trim_start().len();
        let item = line[ind..]
            .strip_prefix("- ")
            .map(|v| v.trim().trim_matches(['"', '\'']))
            .filter(|v| !v.is_empty() && !v.contains(": ") && !v.ends_with(':'));
        match (item, run.as_mut()) {
            (Some(v), Some((at, first, items))) if *at == ind && *first + items.len() == i => {
                items.push(v)
            }
            (Some(v), _) => {
                flush(&mut run, args_key, &mut found);
                args_key = prev_args;
                run = Some((ind, i, vec![v]));
            }
            (None, _) => flush(&mut run, args_key, &mut found),
        }
        let t = line.trim_start().trim_start_matches("- ").trim_end();
        prev_args = t == "args:";
    }
    flush(&mut run, args_key, &mut found);
    found.sort_unstable();
    found
}

/// red38: where the word `-pX` that starts `body` is (its start, its
/// end), when `programs` holds a MySQL client whose password it is.
fn glued_mysql_line(body: &str, programs: &[&str]) -> Option<(usize, usize)> {
    let lead = body.len() - body.trim_start().len();
    let rest = &body[lead..];
    if !rest.starts_with("-p") {
        return None;
    }
    let end = lead + rest.find(char::is_whitespace).unwrap_or(rest.len());
    let word = &body[lead..end];
    programs
        .iter()
        .any(|p| mysql_client(p) && glued_password(p, word))
        .then_some((lead, end))
}

/// How a multi-line string a line opens ends ([`Redactor::multiline_opener`]).
enum Opener {
    /// At the line holding this delimiter (a line that is only the
    /// delimiter is shown).
    Until(&'static str),
    /// At the bracket that closes this one.
    Bracket((char, char, usize)),
}

/// A value that opens a quote it does not close on its line (a `\`
/// continues it below).
fn leaves_quote_open(value: &str) -> bool {
    value
        .chars()
        .next()
        .filter(|q| matches!(q, '"' | '\''))
        .is_some_and(|q| !closes_quote(&value[1..], q))
}

impl Redactor {
    /// Where a Dockerfile `ENV`/`ARG` line's secret value starts when a
    /// `\` continues it onto the lines below ([`Self::multiline_opener`]'s
    /// counterpart; the line rule hides the continued lines).
    fn dockerfile_continued_value(&self, body: &str) -> Option<usize> {
        if !body.trim_end().ends_with('\\') {
            return None;
        }
        static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
        let re = RE.get_or_init(|| {
            Regex::new(r#"^[ \t]*(?i:env|arg)[ \t]+([A-Za-z_][A-Za-z0-9_]*)([ \t]*=[ \t]*|[ \t]+)(.*?)\\[ \t]*$"#)
                .expect("static regex is valid")
        });
        let c = re.captures(body)?;
        if !self.key_matches(&c[1]) {
            return None;
        }
        let value = c[3].trim();
        // `ENV KEY value \` (no `=`): the value is the rest of the
        // instruction. `KEY=\`, `KEY="first \`: it goes on below.
        let legacy = !c[2].contains('=');
        let open_quote = leaves_quote_open(value);
        (legacy || value.is_empty() || open_quote)
            .then(|| c.get(3).map_or(body.len(), |m| m.start()))
    }

    /// Where a shell `export K=\` line's secret value starts when a `\`
    /// continues it onto the lines below (`declare -x`, `typeset`,
    /// `readonly`, `local` too; issue 19, red11): the value empty or a
    /// quote left open. Without `=` the words are names, not a value.
    fn shell_continued_value(&self, body: &str) -> Option<usize> {
        if !body.trim_end().ends_with('\\') {
            return None;
        }
        static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
        let re = RE.get_or_init(|| {
            Regex::new(r#"^[ \t]*(?:export|readonly|local|(?:declare|typeset)(?:[ \t]+-[A-Za-z]+)*)[ \t]+(?:-[A-Za-z]+[ \t]+)*([A-Za-z_][A-Za-z0-9_]*)=(.*?)\\[ \t]*$"#)
                .expect("static regex is valid")
        });
        let c = re.captures(body)?;
        if !self.key_matches(&c[1]) {
            return None;
        }
        let value = c[2].trim();
        let open_quote = leaves_quote_open(value);
        (value.is_empty() || open_quote).then(|| c.get(2).map_or(body.len(), |m| m.start()))
    }

    /// Whether a line opens a GNU Make `define NAME [=]` block of a
    /// secret-named variable, whose value is the lines to `endef`.
    fn make_define_opener(&self, body: &str) -> bool {
        if !body.contains("define") {
            return false;
        }
        static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
        let re = RE.get_or_init(|| {
            Regex::new(r"^[ \t]*(?:(?:export|override|private)[ \t]+)*define[ \t]+([A-Za-z_][A-Za-z0-9_.\-]*)[ \t]*(?:=|:=|::=|:::=|\?=|\+=|!=)?[ \t]*\r?$")
                .expect("static regex is valid")
        });
        re.captures(body).is_some_and(|c| self.key_matches(&c[1]))
    }

    /// Where the value starts on a line that assigns a secret-named
    /// variable a string it does not close, and how that string ends: a
    /// PowerShell here-string (`$password = @"` to a line starting `"@`),
    /// a JS/TS template literal (`const password = `` ` `` to the next
    /// backtick), Perl's `qq(`, `q{`, `qq[` (to the bracket that closes it).
    fn multiline_opener(&self, body: &str) -> Option<(usize, Opener)> {
        if !(body.contains('`')
            || body.contains("@\"")
            || body.contains("@'")
            || body.contains("q(")
            || body.contains("q{")
            || body.contains("q["))
        {
            return None;
        }
        static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
        let re = RE.get_or_init(|| {
            Regex::new(
                r#"(?:^|[\s;({,$@])([A-Za-z_][A-Za-z0-9_]*)(?:[ \t]*:[ \t]*[A-Za-z_][A-Za-z0-9_<>\[\]|. ]*?)?[ \t]*:?=[ \t]*(@"|@'|`|qq?[({\[])(.*)$"#,
            )
            .expect("static regex is valid")
        });
        let c = re.captures(body)?;
        if !self.key_matches(&c[1]) {
            return None;
        }
        let (opener, rest) = (&c[2], &c[3]);
        let at = c.get(3)?.start();
        let end = match opener {
            "@\"" if rest.trim().is_empty() => Opener::Until("\"@"),
            "@'" if rest.trim().is_empty() => Opener::Until("'@"),
            "`" if !rest.contains('`') => Opener::Until("`"),
            q if q.starts_with('q') => {
                let bracket = &q[q.len() - 1..];
                Opener::Bracket(open_bracket(&format!("{bracket}{rest}"))?)
            }
            _ => return None,
        };
        Some((at, end))
    }
}

/// Whether a `:` sits inside a word (`db:password`, a key segment after
/// it starting with a letter): [`Redactor::colon_key`]'s pre-check, which
/// URLs (`://`), `key: value` and times (`12:00`) do not pass.
pub(super) fn colon_inside_word(text: &str) -> bool {
    let b = text.as_bytes();
    text.match_indices(':').any(|(i, _)| {
        i > 0
            && (b[i - 1].is_ascii_alphanumeric() || matches!(b[i - 1], b'_' | b'.' | b'-'))
            && b.get(i + 1)
                .is_some_and(|n| n.is_ascii_alphabetic() || *n == b'_')
    })
}

/// Whether a line starts (after its indent) with `ENV ` or with a dotted
/// word followed by a blank: [`Redactor::space_pair`]'s pre-check.
pub(super) fn space_pair_candidate(text: &str) -> bool {
    text.split('\n').any(|line| {
        let t = line.trim_start_matches([' ', '\t']);
        t.find([' ', '\t']).is_some_and(|e| {
            t[..e].eq_ignore_ascii_case("ENV")
                || (t[..e].contains('.') && !t[..e].contains([':', '=']))
        })
    })
}

/// A hidden line of [`Redactor::redact_lines`]: its indent and the
/// placeholder (nothing for a blank line).
fn hide_line(out: &mut String, body: &str, nl: &str) {
    if !body.trim().is_empty() {
        out.push_str(&body[..body.len() - body.trim_start().len()]);
        out.push_str(OLD);
    }
    out.push_str(nl);
}

/// The marker of a heredoc a value opens (`<<EOT`, `<<-EOT`, `<<~EOT`,
/// `<<'EOF'`, `<<"EOF"`, also inside it: `$(cat <<EOF`); not a
/// here-string (`<<<`) nor a YAML merge key.
fn heredoc_marker(value: &str) -> Option<&str> {
    let at = value.find("<<")?;
    let rest = value[at + 2..].trim_start_matches(['-', '~']);
    let rest = rest.trim_start_matches(['\'', '"']);
    let end = rest
        .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
        .unwrap_or(rest.len());
    let marker = &rest[..end];
    marker
        .starts_with(|ch: char| ch.is_ascii_alphabetic() || ch == '_')
        .then_some(marker)
}

/// The element a line that is only an opening XML tag opens
/// (`<password>`, `<wsse:Password Type="…">`), if it is one.
fn xml_open_tag(body: &str) -> Option<&str> {
    let t = body.trim();
    let inner = t.strip_prefix('<')?.strip_suffix('>')?;
    if inner.starts_with(['/', '!', '?']) || inner.ends_with('/') || inner.contains(['<', '>']) {
        return None;
    }
    let name = inner.split_whitespace().next()?;
    name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        .then_some(name)
}

/// The name of an unlabelled HCL block a line opens (`tokens {`), if it
/// is one: a single identifier before a `{` that ends the line.
fn hcl_block_name(body: &str) -> Option<&str> {
    let name = body.trim().strip_suffix('{')?.trim_end();
    let ok = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    ok.then_some(name)
}

/// A value that opens a bracket (`[`, `{`, `(`) it does not close on its
/// line: the bracket, its closing one and the depth left open.
fn open_bracket(value: &str) -> Option<(char, char, usize)> {
    let open = value.chars().next()?;
    let close = match open {
        '[' => ']',
        '{' => '}',
        '(' => ')',
        _ => return None,
    };
    let depth = value.chars().fold(0usize, |d, ch| match ch {
        ch if ch == open => d + 1,
        ch if ch == close => d.saturating_sub(1),
        _ => d,
    });
    (depth > 0).then_some((open, close, depth))
}

/// `^(indent)(- )?("|')?KEY("|')? [:=] VALUE$`: a line of a text file read
/// as a key and its value. A key may hold `:` or `::` between words
/// (Hiera's `profile::db::password`, `db:password`).
fn text_line_re() -> &'static Regex {
    static LINE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    LINE.get_or_init(|| {
        Regex::new(
            r#"^(\s*-?\s*["']?)([A-Za-z0-9_.\-]+(?:::?[A-Za-z0-9_.\-]+)*)(["']?\s*[:=]\s*)(.*)$"#,
        )
        .expect("static regex is valid")
    })
}

/// A double-quoted key spelled with escapes (`"pass\u0077ord": x`), read
/// decoded.
fn escaped_key_re() -> &'static Regex {
    static ESCAPED_KEY: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    ESCAPED_KEY.get_or_init(|| {
        Regex::new(r#"^(\s*-?\s*")((?:[^"\\\n]|\\.)*\\(?:[^"\\\n]|\\.)*)("\s*:\s*)(.*)$"#)
            .expect("static regex is valid")
    })
}

/// The key a line ends with inside a flow mapping (`cfg: {user: u, password:`),
/// whose value is on the next line.
fn flow_key_ends(line: &str) -> Option<&str> {
    static FLOW_KEY: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let re = FLOW_KEY.get_or_init(|| {
        Regex::new(r#"[{,]\s*["']?([A-Za-z0-9_.\-]+)["']?\s*:\s*$"#).expect("static regex is valid")
    });
    if !line.contains('{') && !line.trim_start().starts_with(',') {
        return None;
    }
    re.captures(line).and_then(|c| c.get(1)).map(|m| m.as_str())
}

/// Where a flow collection's value that starts `rest` ends: after its
/// closing quote, or at the first `,`, `}` or `]` of a plain value; `None`
/// when it does not end on this line.
fn flow_value_end(rest: &str) -> Option<usize> {
    let after = match rest.chars().next() {
        Some(q @ ('"' | '\'')) => {
            let mut escaped = false;
            let close = rest[1..].char_indices().find(|&(_, c)| {
                let end = c == q && !escaped;
                escaped = q == '"' && c == '\\' && !escaped;
                end
            })?;
            1 + close.0 + 1
        }
        _ => 0,
    };
    rest[after..].find([',', '}', ']']).map(|i| after + i)
}

/// YAML anchor and alias names (`&name`, `*name`) on a line.
fn anchor_names(line: &str, sigil: char) -> impl Iterator<Item = (usize, &str)> {
    line.match_indices(sigil).filter_map(move |(at, _)| {
        // A sigil starts a node: at the line's start or after a space,
        // `-`, `:`, `[`, `{` or `,`.
        let before = line[..at].chars().next_back();
        if !before.is_none_or(|c| c.is_whitespace() || matches!(c, '-' | ':' | '[' | '{' | ',')) {
            return None;
        }
        let rest = &line[at + 1..];
        let end = rest
            .find(|c: char| c.is_whitespace() || matches!(c, ',' | '[' | ']' | '{' | '}'))
            .unwrap_or(rest.len());
        (end > 0).then(|| (at + 1 + end, &rest[..end]))
    })
}

/// The names of the aliases (`*name`) on lines of `text` that redaction
/// changed in `redacted` (line for line), which `text` anchors somewhere.
pub(super) fn hidden_aliases(text: &str, redacted: &str) -> HashSet<String> {
    let defined: HashSet<&str> = text
        .lines()
        .flat_map(|l| anchor_names(l, '&').map(|(_, n)| n))
        .collect();
    text.lines()
        .zip(redacted.lines())
        .filter(|(a, b)| a != b)
        .flat_map(|(a, _)| anchor_names(a, '*').map(|(_, n)| n))
        .filter(|n| defined.contains(n))
        .map(str::to_string)
        .collect()
}

/// Where the value after an anchor in `anchors` starts on `line`, if the
/// line defines one.
fn defines_anchor(line: &str, anchors: &HashSet<String>) -> Option<usize> {
    if anchors.is_empty() {
        return None;
    }
    anchor_names(line, '&')
        .find(|(_, n)| anchors.contains(*n))
        .map(|(end, _)| end)
}

impl Redactor {
    /// A line of a map under a bare `secrets:` in the text mode, as
    /// [`Self::hide_values_under_secrets`] reads the map: a value hidden
    /// unless its key names or points at a secret, or it is a boolean or
    /// null; a line that is not `key: value` (a list item, a block
    /// scalar's line) hidden whole, a closing bracket kept.
    fn secret_values_line(&self, body: &str, line_re: &Regex) -> String {
        let Some(c) = line_re.captures(body) else {
            let t = body.trim();
            // A closing bracket, or a key the line rule does not read
            // (`ns/name:`) opening a block: shown.
            if t.trim_end_matches(',')
                .chars()
                .all(|ch| matches!(ch, '}' | ']'))
                || (t.ends_with(':') && !t.starts_with('-'))
            {
                return body.to_string();
            }
            // Such a key with a value: the key stays.
            if let Some(at) = body.find(": ").filter(|_| !t.starts_with(['-', '"', '\''])) {
                return format!("{} {OLD}", &body[..=at]);
            }
            let ind = body.len() - body.trim_start().len();
            return format!("{}{OLD}", &body[..ind]);
        };
        let value = c[4].trim();
        let bare = value.trim_end_matches(',').trim_matches(['"', '\'']);
        let opens = value.is_empty() || matches!(value, "{" | "[") || value.starts_with(['|', '>']);
        if !names_a_secret_value(&c[2]) || opens || is_visible_scalar(bare) {
            self.scrub(body)
        } else if value.starts_with('{') {
            format!(
                "{}{}{}{}",
                &c[1],
                &c[2],
                &c[3],
                self.hide_flow_values(&c[4])
            )
        } else {
            format!("{}{}{}{OLD}", &c[1], &c[2], &c[3])
        }
    }

    /// A flow map under `secrets` (`{DB_CONN: x, name: db}`) with its
    /// values hidden as [`Self::secret_values_line`] hides them.
    pub(super) fn hide_flow_values(&self, flow: &str) -> String {
        let hidden = self.inline.replace_all(flow, |c: &regex::Captures| {
            let v = c[4].trim_matches(['"', '\'']);
            if names_a_secret_value(&c[2]) && !is_visible_scalar(v) && v != OLD {
                format!("{}{}{}{OLD}", &c[1], &c[2], &c[3])
            } else {
                c[0].to_string()
            }
        });
        self.scrub(&hidden)
    }

    /// The lines `value: ...` of a block list item that also has
    /// `name: DB_PASSWORD` at the same column, before or after it
    /// (container `env`, Helm-style name/value lists).
    fn secret_env_value_lines(
        &self,
        text: &str,
        line_re: &Regex,
    ) -> std::collections::HashSet<usize> {
        let mut hidden = std::collections::HashSet::new();
        // The open item: its key column (`None` until the first key line
        // of a braced item), its `value` lines, whether its name is secret.
        type Item = Option<(Option<usize>, Vec<usize>, bool)>;
        let mut item: Item = None;
        let close = |item: &mut Item, hidden: &mut std::collections::HashSet<usize>| {
            if let Some((_, values, true)) = item.take() {
                hidden.extend(values);
            }
        };
        for (i, line) in text.split('\n').enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let indent = line.len() - line.trim_start().len();
            let trimmed = line.trim();
            let starts_item = trimmed.starts_with("- ");
            let caps = line_re.captures(line);
            // The key's column, before its opening quote (`"name": x`).
            let key_col = |c: &regex::Captures| c[1].trim_end_matches(['"', '\'']).len();
            let col = caps.as_ref().map(key_col);
            if starts_item {
                close(&mut item, &mut hidden);
                if let Some(col) = col {
                    item = Some((Some(col), Vec::new(), false));
                }
            } else if trimmed.ends_with('{') {
                // A JSON object over lines (a CloudFormation parameters
                // file), an HCL block (`setting {`, `env {`): an item whose
                // keys are on the lines below.
                close(&mut item, &mut hidden);
                item = Some((None, Vec::new(), false));
                continue;
            } else if item
                .as_ref()
                .is_some_and(|(c, _, _)| c.is_some_and(|c| indent < c))
            {
                close(&mut item, &mut hidden);
            }
            let (Some(c), Some((item_col, values, secret))) = (caps, item.as_mut()) else {
                continue;
            };
            let item_col = *item_col.get_or_insert(key_col(&c));
            if key_col(&c) != item_col {
                continue;
            }
            if pair_value_field(&c[2]) {
                values.push(i);
            } else if pair_name_field(&c[2]) {
                *secret |= self.key_matches(c[4].trim().trim_matches(['"', '\'', ',']));
            } else if &c[2] == "path" {
                *secret |= secret_patch_path(c[4].trim().trim_matches(['"', '\'', ',']));
            }
        }
        close(&mut item, &mut hidden);
        hidden
    }
}

/// Whether `rest` (what follows an opening quote `q`) closes it: a `"`
/// not escaped by `\`, a `'` not doubled (YAML's single-quoted escape).
fn closes_quote(rest: &str, q: char) -> bool {
    let mut chars = rest.chars().peekable();
    while let Some(ch) = chars.next() {
        if q == '"' && ch == '\\' {
            chars.next();
        } else if ch == q {
            if q == '\'' && chars.peek() == Some(&'\'') {
                chars.next();
            } else {
                return true;
            }
        }
    }
    false
}

impl Redactor {
    /// red43 (red-text-mode-auth-blocks): a block scalar under a key the
    /// `auth` rule reads ([`Redactor::auth_value`]) whose first line has a
    /// credential's shape: ingress-nginx's `auth: |` / `admin:X` (an
    /// htpasswd file, `user:{SHA}…`, or a plain `user:password`), as the
    /// semantic mode reads the string. The key's line, whose block the
    /// line rule then hides.
    fn auth_block_lines(&self, text: &str) -> HashSet<usize> {
        static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
        let re = RE.get_or_init(|| {
            Regex::new(
                r#"^[ \t]*(?:-[ \t]+)?["']?([A-Za-z0-9_.\-/]+)["']?:[ \t]*[|>][-+0-9]*[ \t]*\r?$"#,
            )
            .expect("static regex is valid")
        });
        let lines: Vec<&str> = text.split('\n').collect();
        let mut out = HashSet::new();
        for (i, line) in lines.iter().enumerate() {
            // A block scalar's header ends in its indicators.
            let end = line.trim_end().bytes().last();
            if !end.is_some_and(|b| matches!(b, b'|' | b'>' | b'-' | b'+') || b.is_ascii_digit()) {
                continue;
            }
            let Some(c) = re.captures(line) else {
                continue;
            };
            let next = lines[i + 1..]
                .iter()
                .map(|l| l.trim())
                .find(|l| !l.is_empty());
            if next.is_some_and(|n| self.auth_value(&c[1], n)) {
                out.insert(i);
            }
        }
        out
    }

    /// Issue 19 (probe26, r-redact-nested-name-value-pair-in-text): the
    /// `value` lines of a name/value pair that is a block map below a key
    /// of its own (Envoy's `- header:` / `key: x-api-key` / `value: x`,
    /// `auth:` / `name: DB_PASSWORD` / `value: x`), which
    /// [`Self::secret_env_value_lines`] does not read (it starts items at
    /// `- ` and `{` only). A pair is a small map: a block is read for at
    /// most 64 lines, so a text costs at most that many times its lines.
    fn nested_pair_value_lines(&self, text: &str, line_re: &Regex) -> HashSet<usize> {
        let lines: Vec<&str> = text.split('\n').collect();
        let mut hidden = HashSet::new();
        let key_col = |c: &regex::Captures| c[1].trim_end_matches(['"', '\'']).len();
        for (i, line) in lines.iter().enumerate() {
            let Some(opener) = line_re.captures(line) else {
                continue;
            };
            // probe32: a JSON object over lines opened after a key parent
            // (`"Jwt": {`), read like a YAML block.
            let brace = opener[4].trim() == "{"
                && self.defaults
                && super::structural::key_parent(&opener[2]);
            if (!opener[4].trim().is_empty() && !brace) || !opener[3].contains(':') {
                continue;
            }
            let top = key_col(&opener);
            let mut child_col = None;
            let (mut values, mut secret) = (Vec::new(), false);
            for (j, child) in lines.iter().enumerate().skip(i + 1).take(64) {
                if child.trim().is_empty() {
                    continue;
                }
                if child.len() - child.trim_start().len() <= top {
                    break;
                }
                let Some(c) = line_re.captures(child) else {
                    continue;
                };
                if c[1].contains('-') {
                    // A list below the opener: its items are
                    // `secret_env_value_lines`'.
                    break;
                }
                let col = *child_col.get_or_insert(key_col(&c));
                if key_col(&c) != col {
                    continue;
                }
                if pair_value_field(&c[2]) {
                    values.push(j);
                } else if pair_name_field(&c[2]) {
                    secret |= self.key_matches(c[4].trim().trim_matches(['"', '\'', ',']));
                }
                // The OpenTelemetry Collector's Datadog exporter, `api:` /
                // `key: X` (`site` beside it).
                if self.defaults
                    && c[2].trim_matches(['"', '\'']).eq_ignore_ascii_case("key")
                    && super::structural::key_parent(&opener[2])
                {
                    hidden.insert(j);
                }
                // probe35: netplan's WireGuard `key:` / `private: X`,
                // `keys:` / `shared: X`.
                if self.defaults
                    && super::structural::wireguard_key_parent(&opener[2])
                    && super::structural::WIREGUARD_KEY_CHILDREN
                        .contains(&c[2].trim_matches(['"', '\'']))
                {
                    hidden.insert(j);
                }
            }
            if secret {
                hidden.extend(values);
            }
        }
        hidden
    }
}

/// red39 (crd38's over-redaction left): a boolean, a null or an empty
/// string written as a secret-named key's whole value
/// (`enableSdsTokenMount: false`, `automountServiceAccountToken: false`,
/// `apiKey: null`, Istio's `accessToken: ""`; not `''`, which opens a
/// Nix string), shown in the text mode as
/// the semantic walk shows them (an optional comment or JSON comma after
/// it too).
pub(super) fn bool_null_or_empty(value: &str) -> bool {
    let v = value.split(" #").next().unwrap_or(value).trim();
    let v = v.strip_suffix(',').unwrap_or(v).trim_end();
    // Not `''`: Nix opens an indented string with it (`password = ''`).
    ["true", "false", "null", "~", "\"\""]
        .iter()
        .any(|w| v.eq_ignore_ascii_case(w))
}

/// red39 (red-ini-toml-section-key-parents): the `key = X` (`key: X`)
/// lines of an INI or TOML section named like a key parent of the
/// semantic walk (`[jwt]`, `[api]`, `[crypt]`, `[encryption]`; a dotted
/// or quoted section's last part, `[auth.jwt]`, `[[jwt]]`), as `jwt:
/// {key: X}` is read: the section's lines, to the next header, are its
/// children.
fn section_key_lines(text: &str) -> HashSet<usize> {
    let mut hidden = HashSet::new();
    let mut in_parent = false;
    for (i, line) in text.split('\n').enumerate() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            let name = name.trim_matches(['[', ']']).trim();
            let last = name.rsplit('.').next().unwrap_or(name).trim();
            in_parent = super::structural::key_parent(last);
            continue;
        }
        if in_parent
            && t.split_once(['=', ':']).is_some_and(|(k, _)| {
                k.trim()
                    .trim_matches(['"', '\''])
                    .eq_ignore_ascii_case("key")
            })
        {
            hidden.insert(i);
        }
    }
    hidden
}

/// red36 (compat34's over-redaction): the lines of a text (`--no-semantic`,
/// a file that does not parse) that open a Kubernetes secret volume
/// source, a bare `secret:` (also a projected volume's `- secret:`) whose
/// more indented lines are only `secretName`/`name`, `defaultMode`,
/// `optional` and `items` of `key`/`path`/`mode`, as the semantic mode's
/// `secret_volume_source` reads the map: they name a Secret and the files
/// it becomes, and hold none of its data.
fn secret_volume_lines(text: &str) -> Vec<usize> {
    let lines: Vec<&str> = text.split('\n').collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        let t = t.strip_prefix("- ").unwrap_or(t).trim_start();
        // red39: a projected volume's `serviceAccountToken:` source (its
        // `audience`, `expirationSeconds` and `path`) alike.
        let token = matches!(t, "serviceAccountToken:" | "\"serviceAccountToken\":");
        if !token && !matches!(t, "secret:" | "\"secret\":") {
            continue;
        }
        let column = indent(line);
        let mut named = false;
        let mut fits = true;
        let mut below = 0;
        for l in lines[i + 1..]
            .iter()
            .take_while(|l| l.trim().is_empty() || indent(l) > column)
        {
            let t = l.trim();
            if t.is_empty() {
                continue;
            }
            below += 1;
            let t = t.strip_prefix("- ").unwrap_or(t).trim_start();
            let Some((key, value)) = t.split_once(':') else {
                fits = false;
                break;
            };
            let value = value.trim();
            match key.trim() {
                "path" | "audience" | "expirationSeconds" if token => {
                    named |= key.trim() == "path";
                    fits &= !value.is_empty();
                }
                _ if token => fits = false,
                "secretName" | "name" => named |= !value.is_empty(),
                "items" => fits &= value.is_empty(),
                "defaultMode" | "optional" | "key" | "path" | "mode" => fits &= !value.is_empty(),
                _ => fits = false,
            }
            if !fits {
                break;
            }
        }
        if fits && named && below > 0 {
            found.push(i);
        }
    }
    found
}
