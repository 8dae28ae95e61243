//! Infrastructure-as-code: values that Terraform, CloudFormation, ARM /
//! Bicep and CI runners are told are secret (`sensitive = true`, `NoEcho`,
//! `@secure()`, `::add-mask::`), read in the text of a file.

use regex::Regex;
use std::collections::HashSet;

use super::{hide_after_first, replace_in, OLD};

/// Secrets that infrastructure-as-code tools and CI runners are told are
/// secrets beside a neutral name (issue 19): Puppet's `Sensitive('X')`,
/// Terraform's `sensitive("X")`, the CDK's `SecretValue.unsafePlainText('X')`,
/// `pulumi config set --secret NAME X`, Azure DevOps'
/// `##vso[task.setvariable variable=x;issecret=true]X` and GitHub Actions'
/// `::add-mask::X`. Each behind a literal pre-check.
pub(super) fn hide_iac_secret_markers(out: &mut String) {
    if out.contains("ensitive")
        || out.contains("PlainText(")
        || out.contains("plainText(")
        || out.contains("plain_text(")
    {
        static CALL: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
        let re = CALL.get_or_init(|| {
            Regex::new(
                r#"(\b(?:[Ss]ensitive(?:\.new)?|SecretValue[ \t]*\.[ \t]*(?:unsafePlainText|plainText|unsafe_plain_text|plain_text))\([ \t]*)("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')"#,
            )
            .expect("static regex is valid")
        });
        replace_in(out, re, hide_after_first);
    }
    if out.contains("@secure()") {
        replace_in(out, bicep_secure_param_re(), hide_after_first);
    }
    if out.contains("::add-mask::") || (out.contains("##vso[") && out.contains("issecret")) {
        // The value runs to the quote that opened the command (`echo
        // "::add-mask::X"`) or to the line's end.
        static RUNNER: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
        let re = RUNNER.get_or_init(|| {
            Regex::new(
                r#"(["']?)(::add-mask::|##vso\[task\.setvariable\b[^\]\n]*\bissecret=true\b[^\]\n]*\])([^\n]*)"#,
            )
            .expect("static regex is valid")
        });
        replace_in(out, re, |c: &regex::Captures| {
            let (q, rest) = (&c[1], &c[3]);
            let end = match q.chars().next() {
                Some(q) => rest.rfind(q).unwrap_or(rest.len()),
                None => rest.trim_end().len(),
            };
            let value = rest[..end].trim();
            if value.is_empty() || value == OLD || variable_reference(value) {
                c[0].to_string()
            } else {
                format!("{q}{}{OLD}{}", &c[2], &rest[end..])
            }
        });
    }
    if out.contains("pulumi") && out.contains("--secret") {
        static PULUMI: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
        let re = PULUMI.get_or_init(|| {
            Regex::new(
                r#"(\bpulumi[ \t]+config[ \t]+set[ \t]+(?:(?:-s|--stack|-C|--cwd|--config-file)(?:[ \t]+|=)\S+[ \t]+|--?[A-Za-z][A-Za-z\-]*[ \t]+)*["']?[A-Za-z0-9_.:\-\[\]]+["']?[ \t]+(?:--?[A-Za-z][A-Za-z\-]*[ \t]+)*)("(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^\s"'\-|;&][^\s|;&]*)([^\n]*)"#,
            )
            .expect("static regex is valid")
        });
        replace_in(out, re, |c: &regex::Captures| {
            let secret = c[1].contains("--secret")
                || c[3]
                    .split(['|', ';', '&'])
                    .next()
                    .is_some_and(|tail| tail.split_whitespace().any(|w| w == "--secret"));
            if secret && &c[2] != OLD && !variable_reference(&c[2]) {
                format!("{}{OLD}{}", &c[1], &c[3])
            } else {
                c[0].to_string()
            }
        });
    }
}

/// A shell, PowerShell, batch or workflow variable reference that names a
/// value rather than being one (`$DB_CONN`, `${{ secrets.X }}`, `$(x)`,
/// `%X%`, `$env:X`).
fn variable_reference(value: &str) -> bool {
    static VAR: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let re = VAR.get_or_init(|| {
        Regex::new(
            r#"^["']?(?:\$\{\{[^}]*\}\}|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\$\([A-Za-z_][A-Za-z0-9_.]*\)|%[A-Za-z_][A-Za-z0-9_]*%|\$\{?env:[A-Za-z_][A-Za-z0-9_]*\}?)["']?$"#,
        )
        .expect("static regex is valid")
    });
    re.is_match(value)
}

/// Bicep's `@secure() param NAME TYPE = 'X'` (other decorators and line
/// breaks may come between): group 1 up to the default, group 2 the value.
pub(super) fn bicep_secure_param_re() -> &'static Regex {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r#"(@secure\(\)\s*(?:@[A-Za-z]+\([^\n]*\)\s*)*param[ \t]+[A-Za-z_][A-Za-z0-9_]*[ \t]+[A-Za-z]+[ \t]*=[ \t]*)('''(?s:.*?)(?:'''|\z)|'(?:[^'\\\n]|\\.)*')"#,
        )
        .expect("static regex is valid")
    })
}

/// An ARM / Bicep JSON parameter type that holds a secret.
pub(super) fn secure_parameter_type(ty: &str) -> bool {
    ty.eq_ignore_ascii_case("securestring") || ty.eq_ignore_ascii_case("secureobject")
}

/// Whether a flow map says `NoEcho: true` or is of a secure type
/// (`{"type": "secureString", "defaultValue": x}`).
fn secure_marker_flow(map: &str) -> bool {
    if map.contains("ecure") {
        let lower = map.to_ascii_lowercase();
        if lower.contains("securestring") || lower.contains("secureobject") {
            return true;
        }
    }
    map.match_indices("NoEcho").any(|(i, w)| {
        let rest = map[i + w.len()..].trim_start_matches(['"', '\'', ' ', '\t']);
        rest.strip_prefix(':').is_some_and(|r| {
            r.trim_start_matches([' ', '\t', '"', '\''])
                .get(..4)
                .is_some_and(|t| t.eq_ignore_ascii_case("true"))
        })
    })
}

/// The lines of a text holding a CloudFormation parameter's `Default`
/// whose sibling says `NoEcho: true`, or an ARM parameter's
/// `defaultValue` whose sibling `type` is `secureString` or
/// `secureObject` (YAML, or JSON over lines; issue 19). Siblings are the
/// key lines at the marker's column, up to a less indented line or the
/// list item's start.
pub(super) fn secure_parameter_default_lines(text: &str, line_re: &Regex) -> HashSet<usize> {
    let mut hidden = HashSet::new();
    if !(text.contains("NoEcho") || text.contains("ecure")) {
        return hidden;
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    type KeyLine = Option<(usize, String, String, bool)>;
    let keys: Vec<KeyLine> = lines
        .iter()
        .map(|l| {
            line_re.captures(l).map(|c| {
                let value = c[4].trim().trim_end_matches(',').trim_matches(['"', '\'']);
                (
                    c[1].trim_end_matches(['"', '\'']).len(),
                    c[2].to_string(),
                    value.to_string(),
                    l.trim_start().starts_with("- "),
                )
            })
        })
        .collect();
    let is_default =
        |k: &str| k.eq_ignore_ascii_case("default") || k.eq_ignore_ascii_case("defaultvalue");
    for (m, key) in keys.iter().enumerate() {
        let Some((col, k, v, item)) = key else {
            continue;
        };
        let marker = (k == "NoEcho" && v.eq_ignore_ascii_case("true"))
            || (k.eq_ignore_ascii_case("type") && secure_parameter_type(v));
        if !marker {
            continue;
        }
        // Whether the scan goes on past line `j` (up to the item's start or
        // a less indented line, then down to the next item).
        let mut sibling = |j: usize, down: bool| -> bool {
            if lines[j].trim().is_empty() {
                return true;
            }
            match &keys[j] {
                Some((c, k, _, starts)) if c == col => {
                    if down && *starts {
                        return false;
                    }
                    if is_default(k) {
                        hidden.insert(j);
                    }
                    down || !*starts
                }
                Some((c, ..)) => c > col,
                None => indent(lines[j]) > *col,
            }
        };
        if !*item {
            for j in (0..m).rev() {
                if !sibling(j, false) {
                    break;
                }
            }
        }
        for j in m + 1..lines.len() {
            if !sibling(j, true) {
                break;
            }
        }
    }
    hidden
}

/// Whether a flow map says `sensitive: true` (`"sensitive": true`,
/// `sensitive = true`) or `SecureString`: [`terraform_secret_lines`] for
/// one map.
pub(super) fn terraform_sensitive_flow(map: &str) -> bool {
    map.contains("SecureString")
        || secure_marker_flow(map)
        || map.match_indices("sensitive").any(|(i, w)| {
            let rest = map[i + w.len()..].trim_start_matches(['"', '\'', ' ', '\t']);
            rest.strip_prefix([':', '='])
                .is_some_and(|r| r.trim_start().starts_with("true"))
        })
}

/// The attributes that hold a Terraform block's secret value
/// ([`terraform_secret_lines`]): a `*secret*` resource's value
/// (`kubernetes_secret.data`, `github_actions_secret.plaintext_value`,
/// `azurerm_key_vault_secret.value`, `google_secret_manager_secret_version.
/// secret_data`, `aws_secretsmanager_secret_version.secret_string`), a
/// sensitive variable's `default`, an output's `value`.
const TERRAFORM_VALUE_ATTRIBUTES: &[&str] = &[
    "value",
    "default",
    "plaintext_value",
    "secret_data",
    "secret_string",
    "secret_binary",
    "data",
    "binary_data",
    // Vault's `vault_generic_secret` / `vault_kv_secret_v2` (verify 17).
    "data_json",
    // red43: a Vault agent's `env_template "DB_PASSWORD" { contents = … }`.
    "contents",
];

/// Whether a block header's second word is a quoted label (`env_template
/// "DB_PASSWORD" {`), as HCL writes block labels.
fn words_quoted_label(t: &str) -> bool {
    t.split_whitespace()
        .nth(1)
        .is_some_and(|w| w.starts_with('"'))
}

/// The lines of an HCL text (a `.tf` file rendered by Jinja2, as Kapitan
/// compiles Terraform, or one carried in a ConfigMap) whose attribute
/// Terraform itself holds as a secret under a neutral name: one of
/// [`TERRAFORM_VALUE_ATTRIBUTES`] directly in a block that is a resource
/// whose type holds `secret` (`resource "kubernetes_secret" "db" {`), a
/// helm_release's `set_sensitive {`, or a block that says `sensitive =
/// true` (a variable or output) or `type = "SecureString"` (an SSM
/// parameter), before or after the attribute, or a variable or output
/// whose name matches the key rules (`variable "db_password" {`, read by
/// `secret`). The line rule hides the value and, when it opens a bracket
/// (`data = {`), the lines to its close. Blocks are read by their braces
/// outside quoted strings.
pub(super) fn terraform_secret_lines(text: &str, secret: impl Fn(&str) -> bool) -> HashSet<usize> {
    let mut hidden = HashSet::new();
    // `resources:` and `output:` are common words of YAML: the block
    // headers' quote is the pre-check.
    if !(text.contains("resource \"")
        || text.contains("sensitive")
        || text.contains("SecureString")
        || text.contains("variable \"")
        || text.contains("output \"")
        || text.contains("\" {"))
    {
        return hidden;
    }
    // The open blocks: whether each holds secrets, and its attribute lines.
    let mut stack: Vec<(bool, Vec<usize>)> = Vec::new();
    for (i, line) in text.split('\n').enumerate() {
        let t = line.trim();
        let (mut opens, mut closes, mut quoted) = (0usize, 0usize, false);
        let mut prev = ' ';
        for ch in t.chars() {
            match ch {
                '"' if prev != '\\' => quoted = !quoted,
                '{' if !quoted => opens += 1,
                '}' if !quoted => closes += 1,
                _ => {}
            }
            prev = ch;
        }
        if let (Some((flag, lines)), Some((key, value))) = (stack.last_mut(), t.split_once('=')) {
            let key = key.trim();
            let value = value.trim();
            if TERRAFORM_VALUE_ATTRIBUTES.contains(&key) {
                lines.push(i);
            } else if (key == "sensitive" && value == "true")
                || (key == "type" && value.trim_matches('"') == "SecureString")
            {
                *flag = true;
            }
        }
        if opens > closes {
            let mut words = t.split_whitespace();
            let first = words.next().unwrap_or_default();
            let second = words.next().map(|w| w.trim_matches('"'));
            let secret = (first == "resource" && second.is_some_and(|ty| ty.contains("secret")))
                || (matches!(first, "variable" | "output") && second.is_some_and(&secret))
                // red43: any block labelled with a secret's name (a Vault
                // agent's `env_template "DB_PASSWORD" {`, Nomad's and
                // Consul's labelled blocks): its label is quoted.
                || (words_quoted_label(t) && second.is_some_and(&secret))
                || first == "set_sensitive"
                || (first == "dynamic" && second == Some("set_sensitive"));
            for _ in closes..opens {
                stack.push((secret, Vec::new()));
            }
        } else {
            for _ in opens..closes {
                if let Some((true, lines)) = stack.pop() {
                    hidden.extend(lines);
                }
            }
        }
    }
    for (flag, lines) in stack {
        if flag {
            hidden.extend(lines);
        }
    }
    hidden
}
