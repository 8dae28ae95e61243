//! Secret redaction for diffs. Runs on values before any text is produced,
//! so every output format (text, markdown, JSON, pull-request comments) only
//! ever sees `<redacted: changed>` / `<redacted: unchanged>`.
//!
//! Redacted: every value under `data` and `stringData` of a `kind: Secret`
//! object (at any depth, so `List` items count; the items of a
//! `SecretList`, which carry no `kind`, too) and of a SealedSecret's
//! `spec.template` (copied unencrypted into the Secret it makes) and of an
//! ExternalSecret's `spec.target.template` (the operator writes it into
//! the Secret it makes), and the
//! value of any key
//! matching one of the key patterns. Booleans and nulls stay visible
//! (`automountServiceAccountToken: false` is not a secret). The password of
//! a URL (`postgres://app:<password>@db/app`) is redacted in every string,
//! whatever its key: connection strings live in ConfigMaps too.

mod commands;
mod escapes;
mod iac;
mod keys;
mod known;
mod lines;
mod memo;
mod positional;
mod rules;
mod schema;
mod scrub;
mod shapes;
mod structural;
#[cfg(test)]
mod tests;

use super::DiffError;
use crate::value::Value;
use regex::Regex;
use std::collections::HashSet;

use escapes::{
    blank_invisible, decode_escapes, decode_quote_escapes, encode_controls, has_invisible,
};
use iac::bicep_secure_param_re;
use keys::{
    bundler_host_key, credential_header, keyword_in_key, more_secret_key_names,
    name_may_hold_secret, package_manager_auth_key,
};
pub use known::{secret_values, secret_values_of_sides};
use lines::hidden_aliases;
use positional::hide_positional_secrets;
use shapes::{
    hide_base64_private_keys, hide_shape_rules, xml_name_child_re, xml_value_child,
    xml_value_child_re, DER_PRIVATE_KEYS_AND_KEYSTORES, MAILCHIMP_API_KEY, VENDOR_TOKEN_INNER,
    VENDOR_TOKEN_PREFIXES,
};
use structural::{plain_kind, toml_secret_kind};

/// Key names redacted without being asked (searched, case-insensitive):
/// the key ends in one of these words (`DB_PASSWORD`, `apiToken`,
/// `aws_secret_access_key`, `secretKey`, `SECRET_KEY`), or in the word
/// `pass` on its own (`ADMIN_PASS`, `db.pass`, `adminPass`, not `bypass`).
/// Also `passphrase` and Azure's `AccountKey` / `SharedAccessKey` (the key
/// of a storage or Service Bus connection string, after detect-secrets'
/// `AzureStorageKeyDetector`), and npm's `_auth` (base64 of `user:password`
/// in `.npmrc`; a plain `auth` key has its own rule, [`Redactor::auth_value`]),
/// and `REDISCLI_AUTH` (the password `redis-cli` reads from the environment),
/// and `SSHPASS` (the one `sshpass -e` reads), and Redis's `requirepass`
/// and `masterauth` (also `redis-server --requirepass X`), and OpenLDAP's
/// `rootpw`/`bindpw` as keys (cn=config LDIF's `olcRootPW: X`), and
/// `pass` written after one of a few words with no separator (WP-CLI's
/// `--dbpass`, `adminpass`, `rootpass`, offlineimap's `remotepass`; not
/// `bypass`, `compass`), and
/// `REDIS_AUTH`, the Neo4j image's `NEO4J_AUTH` (`user/password`); a
/// pre-shared key, `psk` as the last word (`IPSEC_PSK`,
/// `wpa_psk`), and a wallet's `MNEMONIC` (its seed phrase). Re-probe 18:
/// `creds` (`REGISTRY_CREDS`), `storepass`/`keypass` (Gradle and Ant
/// properties), `PASSCODE`, `PASSKEY`, a key that is the token type
/// `bearer`, SSSD's `ldap_default_authtok`, the Kafka Schema Registry
/// client's `basic.auth.user.info` (`KEY:SECRET`).
pub const DEFAULT_KEY_PATTERN: &str = "(?i:password|passwd|pwd|passphrase|secret|token|api[_-]?key|private[_-]?key|secret[_-]?(access[_-]?)?key|account[_-]?key|shared[_-]?access[_-]?key|cred(?:s|entials?)|(^|[_.-])pass|(^|[_.-])pw|(^|[_.-])psk|mnemonic|pass[_.-]?(?:code|key)|(^|[_.-])bearer|(^|[_.-])authtok|basic[_.-]auth[_.-]user[_.-]info)$|[a-z0-9]Pass$|(?i:^_auth$|pgpass$|^rediscli_auth$|^securejsondata$|^sshpass$|^requirepass$|^masterauth$|rootpw$|bindpw$|(?:db|admin|root|user|app|mysql|pg|smtp|mail|ldap|redis|bind|remote|imap|pop|ftp|store|key)pass$|redis[_.-]?auth$|neo4j[_.-]?auth$)";

/// Secret words found anywhere in a key name, after detect-secrets'
/// `KeywordDetector` (`SECRET_KEY_BASE`, `DB_PASSWORDS`, `API_KEY_1`,
/// `password.txt`, a kubeconfig's `client-key-data`; Erlang's
/// distribution cookie, `RABBITMQ_ERLANG_COOKIE`, Elixir's
/// `RELEASE_COOKIE`, with which a node joins the cluster and runs code;
/// `ENCRYPTKEY` and `ENCRYPT_KEY`, Mattermost's and Serf's; WireGuard's
/// `PresharedKey`; re-probe 18: Splunk's `pass4SymmKey`, OCI's
/// `pass_phrase`, Traefik's ACME `hmacEncoded`, `PRIVKEY`, a wallet's `SEED_PHRASE`, a
/// `TOTP_SEED`, and the word password in German, Dutch, Portuguese,
/// Spanish and French; not a plain `seed`, which is a random generator's
/// more often): the key is secret
/// unless the last word after the last of them is one of
/// [`REFERENCE_WORDS`]. [`PRODUCT_KEY_PATTERN`] adds more.
pub const KEYWORD_PATTERN: &str = r"(?i)password|passwd|pass[_.-]?phrase|pass4symm[_.-]?key|hmac[_.-]?encoded|secret|token|credential|api[_.-]?key|priv(?:ate)?[_.-]?key|seed[_.-]?phrase|otp[_.-]?seed|passwort|kennwort|wachtwoord|senha|contrase(?:n|ñ)a|mot[_.-]?de[_.-]?passe|access[_.-]?key|account[_.-]?key|encrypt(?:ion)?[_.-]?key|pre[_.-]?shared[_.-]?key|signing[_.-]?key|client[_.-]?key|erlang[_.-]?cookie|release[_.-]?cookie";

/// More of [`KEYWORD_PATTERN`]'s words (after the fifth re-probe): the
/// `KEY` names of well-known products' secrets, Rails' `RAILS_MASTER_KEY`,
/// New Relic's `LICENSE_KEY`, Datadog's `DD_APP_KEY`, LaunchDarkly's
/// `SDK_KEY`, Segment's and Honeycomb's `WRITE_KEY`/`WRITEKEY`, Algolia's
/// `ADMIN_KEY`, PagerDuty's `INTEGRATION_KEY`, `HMAC_KEY`, `SESSION_KEY`,
/// `COOKIE_KEY`, `STRIPE_KEY`, Tailscale's `TS_AUTHKEY` (`AUTH_KEY`);
/// Airflow's `FERNET_KEY`, Consul's `GOSSIP_KEY`, Vault's `UNSEAL_KEY` and
/// `RECOVERY_KEY`, Elastic Fleet's `ENROLLMENT_KEY`, `DEPLOY_KEY`, the
/// Fluentd/Fluent Bit forward protocol's `shared_key`; re-probe 18:
/// Backblaze's `B2_APPLICATION_KEY` (Datadog's `DD_APPLICATION_KEY`),
/// Artifactory's `JOINKEY`, WAL-G's `LIBSODIUM_KEY`, Azure Functions'
/// `x-functions-key` and API Management's `Ocp-Apim-Subscription-Key`;
/// probe32: OVH's `consumer_key`, `MEILISEARCH_KEY`, certbot's
/// `dns_linode_key`, Plausible's `TOTP_VAULT_KEY`, Supabase's
/// `VAULT_ENC_KEY`, Vaultwarden's `PUSH_INSTALLATION_KEY`, ASP.NET's
/// `validationKey`/`decryptionKey`; red41: NiFi's
/// `nifi.sensitive.props.key`; not `primary_key`, `routing_key` or
/// `public_key`. Run only on keys holding `key` in any case.
pub const PRODUCT_KEY_PATTERN: &str = r"(?i)(?:sensitive[_.-]props|master|licen[cs]e|app(?:lication)?|join|libsodium|functions?|subscription|sdk|write|admin|hmac|session|cookie|integration|stripe|auth|fernet|gossip|unseal|recovery|enrollment|deploy|shared|consumer|meilisearch|linode|vault|installation|validation|decryption|enc)[_.-]?key";

/// The last word of a key that names or points at a secret rather than
/// holding it (`secretName`, `passwordSecretRef`, `tokenPath`,
/// `DB_PASSWORD_FILE`, `tokenUrl`, `passwordPolicy`, Kafka's
/// `basic.auth.credentials.source`). A word, not a
/// suffix: `tokenProfile` does not end in the word `file`.
pub const REFERENCE_WORDS: &[&str] = &[
    "name",
    "names",
    "ref",
    "refs",
    "reference",
    "path",
    "paths",
    "file",
    "files",
    "dir",
    "namespace",
    "selector",
    "url",
    "uri",
    "endpoint",
    "type",
    "ttl",
    "policy",
    "length",
    "template",
    "version",
    "class",
    "provider",
    "stdin",
    "source",
];

/// Values that are credentials whatever their key, after gitleaks'
/// default rules (github-pat, github-fine-grained-pat, github-oauth,
/// github-app-token, gitlab-pat, aws-access-token, slack tokens, jwt,
/// private-key, stripe-access-token, gcp-api-key, sendgrid-api-token),
/// and PuTTY private key files:
/// <https://github.com/gitleaks/gitleaks/blob/master/config/gitleaks.toml>.
pub const CREDENTIAL_PATTERNS: &[&str] = &[
    r"gh[pousr]_[0-9A-Za-z]{36}",
    r"github_pat_[0-9A-Za-z_]{82}",
    // red43: the whole token, not its first 20 characters: GitLab's
    // routable tokens are longer and end in `.VV.CRC` (`glpat-…{27,}.01.…`).
    r"glpat-[0-9A-Za-z_\-]{20,}(?:\.[0-9a-z]{2}\.[0-9a-z]{7,})?",
    // More of gitleaks' prefixed tokens, one alternation (its literal
    // prefixes are what the engine scans for): slack-app-token,
    // slack-config-refresh-token, npm-access-token, pypi-upload-token,
    // digitalocean-pat/-access-token/-refresh-token,
    // vault-service-token/-batch-token (`hvs.`/`hvb.`), openai-api-key
    // (`sk-proj-`, `sk-svcacct-`, `sk-admin-`, the `T3BlbkFJ` marker),
    // anthropic-api-key, and GitLab's other token prefixes (pipeline
    // trigger, runner, deploy, CI build, SCIM, feature flag, agent, OAuth,
    // feed), and Tailscale's keys (`tskey-auth-`). Lengths are gitleaks'
    // or shorter (test-style tokens too).
    r"\b(?:xapp-[0-9]-[A-Za-z0-9-]{10,}|xoxe-[0-9]-[A-Za-z0-9]{10,}|npm_[A-Za-z0-9]{30,}|pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}|do[opr]_v1_[A-Za-z0-9]{32,}|hv[sb]\.[A-Za-z0-9_\-]{24,}|sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}|sk-[A-Za-z0-9_\-]{8,}T3BlbkFJ[A-Za-z0-9_\-]*|sk-ant-[a-z]+[0-9]{2}-[A-Za-z0-9_\-]{20,}|gl(?:ptt|rt|dt|cbt|soat|ffct|agent|oas|ft)-[0-9A-Za-z_\-]{20,}(?:\.[0-9a-z]{2}\.[0-9a-z]{7,})?|tskey-(?:auth|client|api|scim|webhook)-[A-Za-z0-9]+-[A-Za-z0-9]{10,})",
    r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b",
    r"xox[baprs]-[0-9A-Za-z-]{10,}",
    r"\bey[A-Za-z0-9]{17,}\.ey[A-Za-z0-9/\\_-]{17,}\.(?:[A-Za-z0-9/\\_-]{10,}={0,2})?",
    // A key whose END line is missing (cut short) is hidden to the end of
    // the string or file.
    // Also OpenVPN's static key (the `ta.key` of tls-auth/tls-crypt, inline
    // in client `.ovpn` files) and the SSH.com / RFC 4716 frame
    // (`---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----`).
    r"(?s)-----BEGIN[ A-Z0-9_-]{0,100}(?:PRIVATE KEY(?: BLOCK)?|OpenVPN [A-Za-z0-9 _.-]{1,60}?)-----(?:.*?-----END[ A-Z0-9_-]{0,100}(?:PRIVATE KEY(?: BLOCK)?|OpenVPN [A-Za-z0-9 _.-]{1,60}?)-----|.*)|---- BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY ----(?:.*?---- END[ A-Z0-9_-]{0,100}PRIVATE KEY ----|.*)",
    // A minisign or OpenBSD signify secret key file: its comment line
    // and the base64 key below it (re-probe 17; a public key's comment
    // says `public key`).
    r"untrusted comment: [^\n]*secret key[^\n]*\r?\n[ \t]*[A-Za-z0-9+/]{16,}={0,2}",
    // A PuTTY key file, to its `Private-MAC` line (or the end).
    r"(?s)PuTTY-User-Key-File-[0-9]+:.*?(?:Private-MAC:[^\n]*|\z)",
    // stripe-access-token, gcp-api-key, sendgrid-api-token
    r"\b(?:sk|rk)_(?:test|live|prod)_[A-Za-z0-9]{10,99}",
    r"\bAIza[0-9A-Za-z_\-]{35,}",
    r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}",
    // Probe 31: a credential file base64-encoded whole under a neutral
    // name, as CI variables hold them (`GCP_SA_KEY`, `KUBECONFIG_DATA`):
    // a GCP service-account key (`{"type": "service_account"`, minified or
    // as gcloud writes it) and a kubeconfig (`apiVersion: v1` and then
    // `clusters:`, as kubectl writes it, or `kind: Config` and a line end:
    // `C[g-v]` encodes `\n` and the next byte's first bits), with the
    // lines that carry the token on when `base64` wrapped it. red38
    // (red-base64-docker-config-json): a registry's `config.json` /
    // `.dockerconfigjson` (`{"auths":`, minified or indented) in a
    // ConfigMap or an Ignition `data:…;base64,` URL.
    r"(?m)\b(?:eyJhdXRocyI6|ewogICJhdXRocy|ewogICAgImF1dGhz|ewoJImF1dGhz|eyAiYXV0aHMi|eyJ0eXBlIjogInNlcnZpY2VfYWNjb3Vu|eyJ0eXBlIjoic2VydmljZV9hY2NvdW50|ewogICJ0eXBlIjogInNlcnZpY2VfYWNjb3Vu|YXBpVmVyc2lvbjogdjEKY2x1c3RlcnM6|YXBpVmVyc2lvbjogdjEKa2luZDogQ29uZmlnC[g-v])[A-Za-z0-9+/]*={0,2}(?:[ \t]*\r?\n[ \t]*[A-Za-z0-9+/]+={0,2}[ \t]*\r?$)*",
    // doppler-api-token, for every Doppler token kind (personal, service
    // with its config name, CLI, service account, SCIM, audit).
    r"\bdp\.(?:pt|st|ct|sa|scim|audit)\.(?:[a-z0-9_\-]{1,64}\.)?[A-Za-z0-9]{40,44}\b",
    // Issue 19 (probe26): more vendors' token shapes.
    VENDOR_TOKEN_PREFIXES,
    VENDOR_TOKEN_INNER[0],
    VENDOR_TOKEN_INNER[1],
    VENDOR_TOKEN_INNER[2],
    MAILCHIMP_API_KEY,
    DER_PRIVATE_KEYS_AND_KEYSTORES,
    // A Kapitan reference compiled with `--embed-refs`
    // (`?{base64:<data>:embedded}`): the data is the stored reference,
    // which for the base64 and plain backends is the secret itself, only
    // encoded. A hashed tag shows nothing of it; an embedded one does not
    // either (re-probe 15).
    r"\?\{[A-Za-z0-9_]+:[A-Za-z0-9+/=_\-]{8,}:embedded\}",
    // red41: Jetty's obfuscated password (`OBF:1v2j1uum…`, a
    // `realm.properties` entry, a `jetty.xml` `<Set name="password">`,
    // Rundeck's and ActiveMQ's too): obfuscation, not encryption (Jetty's
    // `Password.deobfuscate` reverses it). `MD5:` and `CRYPT:` hashes stay.
    r"\bOBF:[0-9a-z]{8,}",
    // red36 (red-chat-bot-webhook-urls): Loggly's HTTP input URL, whose
    // path holds the customer token (`logs-01.loggly.com/inputs/<token>/`).
    r"(?:https?://)?logs-01\.loggly\.com/(?:inputs|bulk)/[A-Za-z0-9\-]{8,}",
    // red36 (red-proxy-credentials): a proxy client's share URL, whose
    // user part is the credential (Shadowsocks' `ss://BASE64(method:X)@`,
    // V2Ray/Xray's `vless://UUID@`, Trojan's, Hysteria's, TUIC's), and
    // VMess's `vmess://BASE64(JSON)` (the JSON holds the user's id).
    r"\b(?:ss|ssr|vless|trojan|hysteria2?|hy2|tuic)://[^\s@\x22'<>`]{6,}@|\bvmess://[A-Za-z0-9+/=_\-]{16,}",
    // slack-webhook-url (gitleaks wants 43-56 characters of path; shorter
    // test-style paths are hidden too)
    r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{20,}",
    // Discord and Microsoft Teams (Office 365 connector) webhook URLs: the
    // token is a part of the path (gitleaks' `microsoft-teams-webhook`,
    // with any length of ids, as for Slack above). Last: see
    // [`WEBHOOK_PATTERNS`].
    r"(?:https?://)?(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api(?:/v[0-9]+)?/webhooks/[0-9]+/[A-Za-z0-9_\-]+",
    r"(?:https?://)?(?:[A-Za-z0-9-]+\.webhook\.office\.com/webhookb2|outlook\.office(?:365)?\.com/webhook)/[^\s\x22'<>`]+",
    // Telegram bot API URLs hold the bot's token (`bot<id>:<secret>`).
    r"(?:https?://)?api\.telegram\.org/(?:file/)?bot[0-9]+:[A-Za-z0-9_\-]+",
    r"(?:https?://)?hooks\.zapier\.com/hooks/catch/[0-9]+/[A-Za-z0-9_\-]+",
    // Incoming-hook URLs whose last path segments are the key: Mattermost
    // (`/hooks/<key>`), Rocket.Chat (`/hooks/<id>/<token>`), n8n and
    // others (`/webhook/<uuid>`): a segment of at least 8 characters (an
    // issue tracker's numeric hook id, `/hooks/42`, is shown).
    // red36 (red-chat-bot-webhook-urls): also `/hook/<key>` (Feishu's and
    // Lark's custom bots, `open-apis/bot/v2/hook/<uuid>`).
    r"https?://[^\s/\x22'<>`]+(?:/[^\s/\x22'<>`?#]+)*?/(?:hooks?|webhooks?)/(?:catch/)?[A-Za-z0-9_\-]{8,}(?:/[A-Za-z0-9_\-]+)*",
    // red36: a webhook URL whose key is its `key` query parameter (WeCom's
    // group bots, `qyapi.weixin.qq.com/cgi-bin/webhook/send?key=<uuid>`).
    r"https?://[^\s/\x22'<>`]+(?:/[^\s/\x22'<>`?#]+)*?/webhook[^\s/\x22'<>`?#]*(?:/[^\s/\x22'<>`?#]+)*\?(?:[^\s\x22'<>`#]*&)?key=[A-Za-z0-9_\-]{8,}[^\s\x22'<>`]*",
];

/// How many of [`CREDENTIAL_PATTERNS`], at its end, are webhook URLs,
/// each holding the word `hook` or `telegram`.
const WEBHOOK_PATTERNS: usize = 6;

/// The annotation in which `kubectl apply` keeps a whole copy of the object.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Whether `value` is base64 (padded or not) of `user:password`, both
/// parts printable ASCII without blanks: a Basic credential.
fn decodes_to_user_password(value: &str) -> bool {
    use base64::Engine;
    let engine = base64::engine::general_purpose::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    );
    let Ok(bytes) = engine.decode(value) else {
        return false;
    };
    bytes.iter().all(|b| b.is_ascii_graphic())
        && bytes
            .iter()
            .position(|&b| b == b':')
            .is_some_and(|i| i > 0 && i + 1 < bytes.len())
}

pub const CHANGED: &str = "<redacted: changed>";
pub const UNCHANGED: &str = "<redacted: unchanged>";
/// The old side of a changed or removed value: the new side says `changed`.
pub const OLD: &str = "<redacted>";
/// What a YAML alias of a value anchored under a secret key copies, in the
/// semantic mode (the anchor's own key shows whether the value changed).
pub const ALIASED: &str = "<redacted: alias of a secret value>";

/// What a value anchored under a neutral key shows, in the semantic mode,
/// when an alias of it sits under a secret key (there redaction compares
/// it by that key).
pub const ALIASED_UNDER_SECRET: &str = "<redacted: aliased under a secret key>";

#[derive(Debug, Clone)]
pub struct Redactor {
    /// Names these rules in the memo of their answers (`memo.rs`; a clone
    /// shares it).
    memo_id: u64,
    keys: Vec<Regex>,
    /// Whether the default key rules apply ([`DEFAULT_KEY_PATTERN`] and
    /// [`KEYWORD_PATTERN`]).
    defaults: bool,
    secret_kind: Regex,
    credentials: Vec<Regex>,
    /// `key: value`, `key = value`, `key="value"` inside a longer string:
    /// the key (group 2) is checked against the key patterns, group 4 hidden.
    inline: Regex,
    /// `<password>value</password>` (the value may be a CDATA section; the
    /// element may have attributes and a namespace prefix).
    xml: Regex,
    /// `--password VALUE` / `--password, VALUE` (a flow list of args).
    flag: Regex,
    /// `Authorization: SCHEME VALUE` (gitleaks' `curl-auth-header` for
    /// Basic/Bearer, any scheme word here: Splunk, Bot, SSWS, GenieKey),
    /// wherever the header is written.
    auth_header: Regex,
    /// `Bearer X` / `Basic X` wherever written (a header's value without
    /// its name): X is hidden when it looks like a credential.
    scheme_token: Regex,
    /// A flow map `{name: DB_PASSWORD, value: x}` in either order (`key`
    /// for `name` too, and the names of [`credential_header`]); `default`
    /// for `value` too (Tekton and Argo params).
    flow_map: Regex,
    flow_name: Regex,
    flow_value: Regex,
    /// `kind:` written as a key (line start, list item, flow map or JSON).
    kind_key: Regex,
    /// Ruby/Perl/PHP hashes: `:password => "x"`, `'password' => 'x'`, also
    /// nested (`['db' => ['password' => 'x']]`, `array('db' => array(…))`).
    rocket: Regex,
    /// `.netrc`: `password X` after `machine`/`login`/`default` tokens.
    netrc: Regex,
    /// `mysql -pX` (the password glued to `-p`) in a MySQL client command.
    mysql_p: Regex,
    /// Configuration directives that take a password as their argument:
    /// redis `requirepass`/`masterauth`, Redis Sentinel's `sentinel
    /// auth-pass MASTER X` and `sentinel sentinel-pass X`, OpenLDAP/nslcd
    /// `bindpw`/`rootpw`; also commented out with a glued `#`
    /// (`#requirepass X`). Re-probe 17: net-snmp's community strings
    /// (`rocommunity X`, `rwcommunity6 X`), FRR/Quagga's BGP `neighbor
    /// PEER password X` and OSPF `ip ospf message-digest-key N md5 X` /
    /// `ip ospf authentication-key X`. Re-probe 18: Kickstart's `rootpw`
    /// and `sshpw` read past their flags (`rootpw --plaintext X`,
    /// `sshpw --username=root X`).
    directive: Regex,
    /// A debconf answer whose type is `password` (a Debian preseed file's
    /// `d-i passwd/root-password password X`, `echo "mysql-server
    /// mysql-server/root_password password X" | debconf-set-selections`):
    /// owner, question, type, then the value (group 2) to the line's end
    /// or a quote (re-probe 18).
    debconf_password: Regex,
    /// `sshpass -p PASSWORD`.
    sshpass: Regex,
    /// `kubectl create secret generic --from-literal KEY=VALUE`: VALUE is
    /// a Secret's data whatever KEY says.
    from_literal: Regex,
    /// A quoted key indexed and assigned (`os.environ["DB_PASSWORD"] = "x"`,
    /// `ENV['API_TOKEN'] = 'x'`, C#'s `Configuration["Db:Password"] = "x"`,
    /// probe35: a Ruby symbol, Chef's `knife[:vsphere_pass] = "x"`)
    /// or passed before its value to a setter (`os.Setenv("DB_PASSWORD",
    /// "x")`, `System.setProperty(…)`, also a getter's default:
    /// `os.getenv("DB_PASSWORD", "x")`, Ruby's block form
    /// `ENV.fetch('DB_PASSWORD') { 'x' }`), or paired with its value by an
    /// operator (Kotlin `"password" to "x"`, Scala `"db.password" -> "x"`).
    /// Run before [`Self::inline`], which would hide the call (`pw =
    /// os.getenv(…`) and leave the default after it.
    code_pair: Regex,
    /// A command that prints a password, whole: restic's
    /// `--password-command "echo X"`, borg's `BORG_PASSCOMMAND="echo X"`,
    /// msmtp's `passwordeval`; the option rule would hide its first word
    /// only (re-probe 18). Group 2 the value, quoted or one word.
    pass_command: Regex,
    /// SBT's `Credentials("REALM", "HOST", "USER", "X")`: group 2 the
    /// password, the fourth argument (re-probe 18).
    sbt_credentials: Regex,
    /// A secret-named variable's fallback value (`process.env.DB_PASSWORD
    /// || 'x'`, `?? "x"`; re-probe 18: Kotlin's, Groovy's and PHP's `?:`,
    /// Perl's `//` after `$ENV{KEY}`): group 2 is the name, group 3 the
    /// value.
    fallback: Regex,
    /// A URL query parameter `?name=value` / `&name=value`: matched on its
    /// own, since the first one after a scheme (`jdbc:mysql://db?password=x`)
    /// is inside what [`Self::inline`] reads as the value of `jdbc:`.
    query: Regex,
    /// `curl -u user:password` / `--user` (gitleaks' `curl-auth-user`),
    /// and HTTPie's `http -a user:password` / `--auth`.
    curl_user: Regex,
    /// `redis-cli -a PASSWORD`, in a command line or a flow list of args.
    redis_a: Regex,
    /// `-u user:password` of any program ([`user_password_flag`](commands::user_password_flag)), in a
    /// command line or a flow list of args.
    user_flag: Regex,
    /// A `.pgpass` line, `host:port:database:user:password`, wherever it is.
    pgpass_line: Regex,
    /// `<add key="DbPassword" value="x"/>` (.NET `appSettings`, Spring
    /// `<property name=… value=…/>`): the secret name is an attribute value
    /// (group 2); or the element's own name (group 3), `<Password
    /// value="x"/>`. Group 4 is the value.
    attr_pair: Regex,
    /// A secret-named key and its value apart by blanks, the value the
    /// line's last word (a `;`, `}` or comment may follow): configuration
    /// directives (Apache `AuthLDAPBindPassword X`, keepalived `auth_pass
    /// X`, Fluent Bit `HTTP_Passwd X`), Gradle `storePassword "X"` (also
    /// after `{`), C `#define DB_PASSWORD "X"`. Only a key of more than
    /// one word (`_` or a capital inside), so prose (`Password must …`)
    /// is not read; nginx's `proxy_pass` and its kin are not secrets.
    /// Group 2 is the key, group 3 the value.
    blank_pair: Regex,
    /// Cisco IOS `username U … password|secret [TYPE] X`, `enable
    /// secret|password [TYPE] X`, and a `line`'s ` password TYPE X` (with
    /// its type digit, X ending the line: a bare `password X` is the key
    /// rules', and `Password 2 must match` is prose).
    cisco: Regex,
    /// A Redis ACL rule (`user NAME on >X ~* +@all`, `ACL SETUSER NAME on
    /// >X`): its `>X` and `<X` words are passwords.
    redis_acl: Regex,
    /// `docker login -p PASSWORD` (podman, nerdctl, buildah, skopeo, oras,
    /// `helm registry login`, go-containerregistry's `crane auth login`,
    /// `regctl registry login`), in a command line or a flow list of args.
    registry_login: Regex,
    /// `aws configure set aws_secret_access_key X`, `npm config set
    /// _authToken X`, `kubectl config set users.u.token X`: the key
    /// (group 2) is checked against the key patterns.
    config_set: Regex,
    /// nginx `proxy_set_header X-Api-Key X;` / `add_header` /
    /// `grpc_set_header`, HAProxy's `http-request set-header` (`add-header`,
    /// `http-response`; red39), Caddy's `header_up` and `request_header`:
    /// the header name (group 2) is checked against the key patterns and
    /// [`credential_header`].
    header_directive: Regex,
    /// A token as the only userinfo of an http(s) URL to GitHub
    /// (`https://TOKEN@github.com/o/r.git`, the form GitHub documents for
    /// tokens; a host with a `github` label, so GitHub Enterprise too).
    github_userinfo: Regex,
    /// A secret key and its value apart by blanks, at a line's start: a
    /// Java `.properties` line (`db.password X`, the key dotted) or a
    /// Dockerfile `ENV DB_PASSWORD X`. Group 2 is the key, group 3 the
    /// value (the rest of the line).
    space_pair: Regex,
    /// `set -gx GITHUB_TOKEN X` (fish), `set $api_key "X";` (nginx),
    /// `setenv API_TOKEN X` (csh), `setx API_TOKEN X` (Windows `cmd`),
    /// `set(API_TOKEN X)` (CMake), `set env(API_TOKEN) X` (Tcl),
    /// PowerShell's `Set-Item -Path Env:API_TOKEN -Value X` and
    /// `Set-Variable -Name DbPassword -Value X` (`New-Variable`; re-probe
    /// 17): group 2 is
    /// the key. A value that is an option (`gh secret set DB_PASSWORD
    /// --body X`, the option's own rule reads it), a redirection or a
    /// variable is not one. An `=` between blanks (muttrc's `set
    /// smtp_pass = "X"`) and MySQL's `FOR user` (`SET PASSWORD FOR 'u'@'%'
    /// = 'X'`) come before the value; they had been read as it (re-probe
    /// 17).
    set_pair: Regex,
    /// An XML element naming its key in an attribute, `<entry
    /// key="db.password">X</entry>` (Java properties XML), `<param
    /// name="token">X</param>`: group 3 is the key, group 4 the text.
    xml_keyed: Regex,
    /// A braced value, `PWD={X};` (ODBC connection strings): group 2 is
    /// the key.
    braced: Regex,
    /// Password directives written with their user or after other words:
    /// haproxy's `stats auth USER:X` and `user NAME insecure-password X`;
    /// SQL's `PASSWORD 'X'` (`CREATE|ALTER USER|ROLE ... WITH PASSWORD`),
    /// MySQL's `SET PASSWORD [FOR u] = 'X'` and `PASSWORD('X')`, and
    /// `IDENTIFIED [WITH plugin] BY X`, quoted (MySQL) or not (Oracle).
    auth_directive: Regex,
    /// A Go MySQL driver DSN, `user:X@tcp(host:3306)/db` (also `unix(`),
    /// and Oracle's `sqlplus user/X@db` (`sqlldr`, `expdp`, `impdp`; probe35:
    /// `rman target sys/X@db`, `dgmgrl sys/X@db`) and
    /// JDBC URL (`jdbc:oracle:thin:user/X@db:1521/ORCL`).
    dsn_password: Regex,
    /// A quoted key holding `:` (`"db:password": X`, the hierarchy
    /// separator of .NET configuration keys): its last segment (group 3)
    /// is checked against the key patterns.
    colon_key: Regex,
    /// An XML element naming its key in a `name` attribute whose value is
    /// a `<value>` child (.NET `<setting name="ApiKey">` / `<value>x`),
    /// read over lines on the whole text.
    xml_setting: Regex,
    /// A here-string into a program that reads a password on standard
    /// input (`--password-stdin`, `passwd --stdin`, `sudo -S`, `terraform
    /// login`, which reads its token there): `<<< "x"`.
    here_string: Regex,
    /// A value written into a secret store by its CLI: `gh secret set
    /// NAME --body x` (`-b`, a GitHub Actions secret), AWS `ssm
    /// put-parameter --value x` and `secretsmanager create-secret|
    /// put-secret-value|update-secret --secret-string x`, Azure `keyvault
    /// secret set --value x`, PowerShell `ConvertTo-SecureString "x"
    /// -AsPlainText` (the plain text of a secure string). The stdin forms
    /// are [`stdin_password_re`](commands::stdin_password_re)'s.
    gh_secret: Regex,
    /// A BIND TSIG (or rndc) key's `secret "X";` inside its `key { }`
    /// block, at a line's start or after `{`/`;` (re-probe 17). The `;`
    /// is what tells it from an HCL block (`secret "db" {`).
    tsig_secret: Regex,
    /// net-snmp's SNMPv3 user, `createUser [-e ID] NAME SHA "X" [AES "X"]`:
    /// the authentication and privacy passphrases (groups 2 and 4;
    /// re-probe 17).
    snmp_user: Regex,
    /// A chrony or ntpd key file line, `ID TYPE [HEX:|ASCII:]X` (`1 SHA256
    /// HEX:…`, ntpd's `1 M X`), the key the line's last word (re-probe 17).
    ntp_key: Regex,
    /// squid's `cache_peer … login=USER:X` (re-probe 17).
    squid_login: Regex,
    /// A line that is only `Pass X` (isync/mbsync's `Pass`, an FTP
    /// session's `PASS X`), capitalised: lower-case `pass` is Python's
    /// statement and pf's rule (`pass out all`) (re-probe 17).
    pass_line: Regex,
    /// A Dovecot password with a plain-text scheme, `{PLAIN}X`,
    /// `{CLEARTEXT}X`, `{PLAIN.b64}X` (a passwd-file's `user:{PLAIN}X::`);
    /// hashed schemes (`{SHA512-CRYPT}`) stay (re-probe 17).
    plain_scheme: Regex,
    /// MongoDB's `db.changeUserPassword("user", "X")`: the password is the
    /// second argument (re-probe 17).
    mongo_password: Regex,
    /// A shell default without the colon, `${DB_PASSWORD-x}` /
    /// `${DB_PASSWORD=x}` (`${K:-x}` is the inline rule's): group 1 is the
    /// name, group 3 the value (re-probe 18).
    shell_default: Regex,
    /// A method named for a secret called with a string literal
    /// (`ds.setPassword("X")`, a builder's `.password("X")`,
    /// Testcontainers' `.withPassword("X")`, `.apiKey("X")`, node-redis'
    /// `.auth("X")`): group 2 is the method's name (re-probe 18).
    setter_call: Regex,
    /// The secret values this review knows (its inventories' secret-named
    /// parameters, red41), hidden wherever they occur; none by default.
    known: Option<std::sync::Arc<known::Known>>,
}

impl Default for Redactor {
    fn default() -> Self {
        Redactor::new(&[], true).expect("the default pattern is valid")
    }
}

impl Redactor {
    /// `extra` are `--redact-key` patterns; `defaults` adds [`DEFAULT_KEY_PATTERN`].
    pub fn new(extra: &[String], defaults: bool) -> Result<Self, DiffError> {
        // Compiling the rules costs ~30 ms, and a review builds several
        // redactors (the diff's, each mask's): the plain ones are built
        // once per process and cloned (a clone shares the compiled rules).
        static PLAIN: [std::sync::OnceLock<Redactor>; 2] =
            [std::sync::OnceLock::new(), std::sync::OnceLock::new()];
        if !extra.is_empty() {
            return Self::build(extra, defaults);
        }
        let cell = &PLAIN[usize::from(defaults)];
        if let Some(r) = cell.get() {
            return Ok(r.clone());
        }
        let r = Self::build(extra, defaults)?;
        Ok(cell.get_or_init(|| r).clone())
    }

    fn build(extra: &[String], defaults: bool) -> Result<Self, DiffError> {
        let mut keys = Vec::new();
        if defaults {
            keys.push(
                Regex::new(DEFAULT_KEY_PATTERN).map_err(|e| DiffError::BadRegex {
                    flag: "the default redaction pattern",
                    regex: DEFAULT_KEY_PATTERN.into(),
                    message: e.to_string(),
                })?,
            );
        }
        for p in extra {
            keys.push(Regex::new(p).map_err(|e| DiffError::BadRegex {
                flag: "--redact-key",
                regex: p.clone(),
                message: e.to_string(),
            })?);
        }
        let secret_kind = Regex::new(r#"(?m)["']?kind["']?\s*:\s*["']?(?i:(?:Sealed)?Secret)\b"#)
            .expect("static regex is valid");
        let credentials = CREDENTIAL_PATTERNS
            .iter()
            .map(|p| Regex::new(p).expect("static regex is valid"))
            .collect();
        // Keys end at `:`/`=` (options `--password=x`, query `?password=x`,
        // flow maps `{password: x}`, `export X_PASSWORD=x`, `a = "x"`). A
        // key's opening quote is in group 1, so a rewritten match keeps it.
        // `/:` starts a key too: `.npmrc` scopes keys to a registry
        // (`//registry.npmjs.org/:_authToken=x`). A TOML (or Python)
        // triple-quoted value runs to its closing quotes, over lines, or to
        // the end of the text. PowerShell's `$env:` starts a key, and so
        // does a quoted segment of a dotted TOML key (`db."password"`). A
        // key's quotes may be escaped (`{\"password\": \"x\"}`: JSON in
        // a double-quoted string the text mode reads as written), and so
        // may a value's. A YAML anchor before the value (`{password: &p
        // x}`) is not the value, nor is a standard tag (`!!str x`); a flow
        // list (`{"tokens": ["x"]}`) is.
        // Code declares and assigns with more (re-probe 10): a sigil or
        // declarator before the key (PHP `$password`, `$this->password`,
        // C `*password`, `password[]`, PowerShell `${env:KEY}`, Perl
        // `$ENV{KEY}`, Objective-C `@"password"`), other operators (Go and
        // Make `:=`, Make `?=`, `+=`, jsonnet `::`, `:::`, `+:`), a type
        // between key and value (`password: str = "x"`, TypeScript,
        // Kotlin; Rust's `: &str = "x"`, read as an anchor, leaves a value
        // that starts with `=`) hidden with the value, and a value
        // concatenated of quoted parts (`'a' + 'x'`). Make's `!=` is not
        // read: its value is a command line, and in code `!=` compares.
        // A comment marker glued to the key (`#password: x`, `!db.password=x`
        // in a `.properties` file) starts it too: a commented-out secret is
        // usually a real old or alternative value (re-probe 15r). A `}`
        // before the key ends a variable or template part of its name
        // (`${PREFIX}_PASSWORD = x`, `{{ env }}_DB_PASSWORD=x`: re-probe 18).
        // Ruby's `@password ||= x`, Perl's `//=`, PHP's `.=` and C#/JS/PHP's
        // `??=` assign too (re-probe 18 and its verification).
        let inline = Regex::new(
            r#"((?:^|\$\{?(?i:env):|[\s{,;?&(*$\[#!}@]|--?|->|/:)(?:@?\\?["'])?|\.["'])([A-Za-z_][A-Za-z0-9_.\-]*(?:(?:::?|\[[0-9]+\]\.?)[A-Za-z_][A-Za-z0-9_.\-]*)*)((?:\[[0-9]*\])?(?:\\?["'])?\}?\??(?:[ \t]+(?:string|\[\]byte)[ \t]*)?[ \t]*(?:\|\|=|//=|\?\?=|\.=|[:?+]=|::?:?|\+::?|=)[ \t]*(?:&[A-Za-z0-9_\-]+[ \t]+|!![A-Za-z]+[ \t]+)?)("""(?s:.*?)(?:"""|\z)|'''(?s:.*?)(?:'''|\z)|\\"[^"\n]*?\\"|(?:"(?:[^"\\\n]|\\.)*"|'[^'\n]*')(?:[ \t]*\+[ \t]*(?:"(?:[^"\\\n]|\\.)*"|'[^'\n]*'))+|"(?:[^"\\\n]|\\.)*"|'(?:[^'\n]|''|'\\'')*'|\[[^\[\]\n]*\]|=[ \t]*(?:"[^"\n]*"|'[^'\n]*'|[^\s,;&{}\[\]\n]+)|[A-Za-z_][A-Za-z0-9_.]*(?:<[^<>=\n]*>)?(?:\[[^\[\]=\n]*\])?\??[ \t]+=[ \t]*(?:"[^"\n]*"|'[^'\n]*'|[^\s,;&{}\[\]\n]+)|[^\s,;&{}\[\]\n]+)"#,
        )
        .expect("static regex is valid");
        // The element may have attributes (`<password encrypted="false">`,
        // `xml:space`) and a namespace prefix (SOAP WS-Security's
        // `<wsse:Password Type="…#PasswordText">`): its local name is the key.
        let xml =
            Regex::new(r"<([A-Za-z_][A-Za-z0-9_.:\-]*)((?:\s[^<>]*)?)>(<!\[CDATA\[(?s:.*?)\]\]>|[^<\n]*)</([A-Za-z_][A-Za-z0-9_.:\-]*)>")
                .expect("static regex is valid");
        let flag = Regex::new(r#"(^|[\s\[,"'])(--?[A-Za-z][A-Za-z0-9_.\-]*)(["']?(?:\s*,\s*|\s+)["']{0,2})([^\s,\[\]"'-][^\s,\[\]"']*)"#)
            .expect("static regex is valid");
        let auth_header = Regex::new(
            // Quotes may be escaped: the header inside a double-quoted string.
            // Any scheme word (Splunk, Bot, SSWS, GenieKey as well as Basic
            // and Bearer): the credential is what follows it.
            // A JavaScript template literal (`` `Bearer x` ``), the
            // name and value as two quoted arguments (Go's
            // `Header.Set("Authorization", "Splunk x")`), and an index
            // assignment or hash entry (`h["Authorization"] = "Splunk x"`,
            // `"Authorization" => "Bearer x"`).
            r#"(?i)(authorization(?:\\?["']?\]?[ \t]*(?:=>|[:=])?[ \t]*\\?["'`]?|\\?["'][ \t]*,[ \t]*\\?["'`])[ \t]*[A-Za-z][A-Za-z0-9._\-]*[ \t]+)([^\s"'`,;\\]+)"#,
        )
        .expect("static regex is valid");
        let scheme_token = Regex::new(
            r#"(?i)((?:^|[\s:="'\[,{])(?:bearer|basic)[ \t]+)([A-Za-z0-9\-._~+/]{8,}=*)"#,
        )
        .expect("static regex is valid");
        let flow_map = Regex::new(r"\{[^{}\n]*\}").expect("static regex is valid");
        // The fields of [`pair_name_field`] and [`pair_value_field`], any
        // case, after `:` or `=` (an HCL object).
        let flow_name = Regex::new(
            r#"(?:^|[{,\s])["']?(?i:name|key|header|parameterkey|type|setting)["']?[ \t]*[:=][ \t]*["']?([^,"'}\s]+)"#,
        )
        .expect("static regex is valid");
        let flow_value = Regex::new(
            r#"((?:^|[{,\s])["']?(?i:value|default|parametervalue|defaultvalue)["']?[ \t]*[:=][ \t]*)("[^"]*"|'[^']*'|[^,}\s][^,}]*)"#,
        )
        .expect("static regex is valid");
        let kind_key = Regex::new(r#"(?m)(?:^[ \t]*(?:-[ \t]+)*|[{,][ \t]*)["']?kind["']?[ \t]*:"#)
            .expect("static regex is valid");
        // `<setting name="ApiKey">` / `<value>x</value>` (.NET
        // `applicationSettings`), over lines.
        let xml_setting = Regex::new(
            r#"(<([A-Za-z_][A-Za-z0-9_.:\-]*)\s[^<>]*?\bname\s*=\s*["']([^"'\n]*)["'][^<>]*>\s*<value>)([^<]*)(</value>)"#,
        )
        .expect("static regex is valid");
        let here_string = Regex::new(
            r#"((?:-password-stdin|\bterraform[ \t]+login\b|\bsmbpasswd\b|\bwrangler[ \t]+(?:pages[ \t]+)?secret[ \t]+put\b|\bvercel[ \t]+env[ \t]+add\b|\bop[ \t]+signin\b|\bgh[ \t]+secret[ \t]+set\b|\bpasswd\b[^\n|;&]*--stdin|\bsudo\b[^\n|;&]*\s-[A-Za-z]*S)[^\n|;&]*?<<<[ \t]*)("[^"\n]*"|'[^'\n]*'|[^\s;|&]+)"#,
        )
        .expect("static regex is valid");
        let gh_secret = Regex::new(
            r#"((?:\bgh[ \t]+(?:secret|variable)[ \t]+set\b[^\n;|&]*?[ \t](?:--body|-b)|\b(?:ssm[ \t]+put-parameter|secretsmanager[ \t]+(?:create-secret|put-secret-value|update-secret)|keyvault[ \t]+secret[ \t]+set)\b[^\n;|&]*?[ \t](?:--value|--secret-string))(?:=|[ \t]+)|(?i:\bconvertto-securestring)[ \t]+(?i:(?:-string|-asplaintext|-force)[ \t]+)*)("[^"\n]*"|'[^'\n]*'|[^\s;|&]+)"#,
        )
        .expect("static regex is valid");
        let rocket = Regex::new(
            r#"(^|[\s{,(\[])(:?["']?)([A-Za-z_][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)*)(["']?[ \t]*=>[ \t]*)("[^"\n]*"|'[^'\n]*'|[^\s,}\)\(\[\n]+)"#,
        )
        .expect("static regex is valid");
        let netrc = Regex::new(
            r"(?mi)(^[ \t]*(?:(?:machine|default|login)[ \t][^\n]*?[ \t])?password[ \t]+)(\S+)([^\n]*)",
        )
        .expect("static regex is valid");
        let mysql_p = Regex::new(
            r"(\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mariadb|mariadb-dump)\b[^\n;|&]*?\s-p)([^\s-][^\s]*)",
        )
        .expect("static regex is valid");
        let directive = Regex::new(
            r#"(?mi)(^[ \t]*#?(?:requirepass|masterauth|bindpw|rootpwmodpw|(?:rootpw|sshpw)(?:[ \t]+--[a-z-]+(?:=\S+)?)*|sentinel[ \t]+auth-pass[ \t]+\S+|sentinel[ \t]+sentinel-pass|(?:ro|rw)community6?|neighbor[ \t]+\S+[ \t]+password|ip[ \t]+ospf[ \t]+message-digest-key[ \t]+[0-9]+[ \t]+md5|ip[ \t]+ospf[ \t]+authentication-key)[ \t]+)("[^"\n]*"|\S+)"#,
        )
        .expect("static regex is valid");
        // A command line (`sshpass -p 'pw' ssh`, `-pGlued`) or a flow list
        // of quoted args (`["sshpass", "-p", "pw"]`).
        let sshpass = Regex::new(
            r#"(\bsshpass\b[^\n;|&]*?[\s,\[]["']?-p(?:["']?[ \t]*,[ \t]*["']?|[ \t]*))([^\s"',\]]+|"[^"\n]*"|'[^'\n]*')"#,
        )
            .expect("static regex is valid");
        let from_literal = Regex::new(
            r#"(--from-literal(?:=|[ \t]+|\\?["']?[ \t]*,[ \t]*)(?:\\?["'])?[^=\s"',\]\\]+=)("[^"\n]*"|'[^'\n]*'|[^\s"',\]]+)"#,
        )
        .expect("static regex is valid");
        // A URL fragment's parameters too (`#access_token=X`, OAuth's
        // implicit flow).
        let code_pair = Regex::new(
            r#"((?:\[[ \t]*(?:["']([A-Za-z_][A-Za-z0-9_.:\-]*)["']|:([A-Za-z_][A-Za-z0-9_]*))[ \t]*\][ \t]*(?:=>|=|:)|\([ \t]*["']([A-Za-z_][A-Za-z0-9_.:\-]*)["'][ \t]*(?:,|\)[ \t]*\{)|["']([A-Za-z_][A-Za-z0-9_.:\-]*)["'][ \t]*(?:->|[ \t]to[ \t]))[ \t]*["'])([^"'\n]*)"#,
        )
        .expect("static regex is valid");
        let sbt_credentials =
            Regex::new(r#"(\bCredentials\((?:[ \t]*"[^"\n]*"[ \t]*,){3}[ \t]*")([^"\n]*)"#)
                .expect("static regex is valid");
        let debconf_password = Regex::new(
            r#"(\b[a-z0-9][a-z0-9.+\-]*[ \t]+[a-z0-9][a-z0-9.+\-]*/[^\s"']+[ \t]+password[ \t]+)([^"'\n]+)"#,
        )
        .expect("static regex is valid");
        let pass_command = Regex::new(
            r#"((?i:password[-_]?command|passcommand|passwordeval)["']?(?:[ \t]*[=:][ \t]*|[ \t]+))("[^"\n]*"|'[^'\n]*'|[^\s"']+)"#,
        )
        .expect("static regex is valid");
        let fallback = Regex::new(
            r#"(\b([A-Za-z_][A-Za-z0-9_]*)["'\]\)\}]*[ \t]*(?:\|\||\?\?|\?:|//)[ \t]*["'`])([^"'`\n]*)"#,
        )
        .expect("static regex is valid");
        let query = Regex::new(r#"(&amp;|[?&#])([A-Za-z_][A-Za-z0-9_.\-]*)(=)([^&#\s"'<>]+)"#)
            .expect("static regex is valid");
        let curl_user = Regex::new(
            r#"(\b(?:(?:curl|wget)\b[^\n;|&]*?\s(?:(?:-u|-U)(?:=|[ \t]*)|(?:--user|--proxy-user)(?:=|[ \t]+))|https?[ \t]+(?:[^\n;|&]*?[ \t])?(?:-a|--auth)(?:=|[ \t]+))["']?(?:[^\s:"'-][^\s:"']*)?:)([^\s"']+)"#,
        )
        .expect("static regex is valid");
        let redis_a = Regex::new(
            r#"(\b(?:redis|valkey|keydb)-cli\b[^\n;|&]*?[\s,\[]-a(?:[ \t]*,[ \t]*|[ \t]+)["']?)([^\s"',\]]+)"#,
        )
        .expect("static regex is valid");
        let user_flag = Regex::new(
            r#"((?:^|[\s,\[])["']?(-u|--user|--proxy-user|--(?:src-|dest-)?creds)["']?(?:[ \t]*,[ \t]*|[ \t]+|=)["']?)([^\s"',\]]+)"#,
        )
        .expect("static regex is valid");
        // The port is digits or `*`; the host is not all digits, so that
        // `12:00:00:00:00` is not read as one.
        let pgpass_line = Regex::new(
            r"(?m)^([ \t]*[^:\s#]*[^:\s#0-9][^:\s#]*:(?:[0-9]{1,5}|\*):[^:\s]+:[^:\s]+:)(\S+)[ \t]*$",
        )
        .expect("static regex is valid");
        let blank_pair = Regex::new(
            r#"(?m)((?:^[ \t]*(?:#[ \t]*define[ \t]+)?|[{;][ \t]*)([A-Za-z_][A-Za-z0-9_]*(?i:pass|pw|secret|token|key|credential|auth|psk)[A-Za-z0-9_]*)[ \t]+)("[^"\n]*"|'[^'\n]*'|[^\s"'{}()=:,;#<][^\s;{}]*)([ \t]*(?:[;}][^\n]*|#[^\n]*|//[^\n]*)?)$"#,
        )
        .expect("static regex is valid");
        let cisco = Regex::new(
            r"(?mi)(^[ \t]*(?:username[ \t]+\S+(?:[ \t]+\S+)*?|enable)[ \t]+(?:password|secret)[ \t]+(?:[0-9][ \t]+)?)(\S+)|(^[ \t]*password[ \t]+[0-9][ \t]+)(\S+)([ \t]*\r?$)",
        )
        .expect("static regex is valid");
        let redis_acl =
            Regex::new(r"(?m)(?:^[ \t]*user|\b(?i:acl[ \t]+setuser))[ \t]+\S+[ \t][^\n]*")
                .expect("static regex is valid");
        let attr_pair = Regex::new(
            r#"(<(?:[A-Za-z][A-Za-z0-9:_.\-]*\s+(?i:key|name)\s*=\s*["']([^"'\n]*)["']|([A-Za-z][A-Za-z0-9:_.\-]*))\s+(?i:value)\s*=\s*["'])([^"'\n]*)"#,
        )
        .expect("static regex is valid");
        let registry_login = Regex::new(
            r#"(\b(?:docker|podman|nerdctl|buildah|skopeo|oras|oc|cf|helm["']?[ \t,]+["']?registry|regctl["']?[ \t,]+["']?registry|crane["']?[ \t,]+["']?auth|az(?:["']?[ \t,]+["']?acr)?)["']?(?:[ \t,]+["']?-[^\s,"']*["']?)*[ \t,]+["']?login\b[^\n;|&]*?[\s,\[]["']?-p(?:["']?[ \t]*,[ \t]*["']?|[ \t]+["']?|=["']?)?)([^\s"',\]]+)"#,
        )
        .expect("static regex is valid");
        let config_set = Regex::new(
            r#"(\b(?:(?:configure|config)[ \t]+set|npm[ \t]+(?:c[ \t]+)?set)[ \t]+(?:--?[A-Za-z][A-Za-z0-9-]*(?:[ \t=][^\s-]\S*)?[ \t]+)*["']?([A-Za-z_/][A-Za-z0-9_./:\-]*)["']?[ \t]+["']?)([^\s"';|&]+)"#,
        )
        .expect("static regex is valid");
        let header_directive = Regex::new(
            r#"(\b(?:proxy_set_header|grpc_set_header|add_header|http-(?:request|response|after-response)[ \t]+(?:set|add)-header|header_up|request_header|(?i:RequestHeader[ \t]+(?:set|append|add|setifempty)|Header[ \t]+(?:always[ \t]+)?(?:set|append|add|setifempty)))[ \t]+["']?([A-Za-z0-9_\-]+)["']?[ \t]+)("[^"\n]*"|'[^'\n]*'|[^\s;]+)"#,
        )
        .expect("static regex is valid");
        let github_userinfo = Regex::new(
            r#"(\bhttps?://)([^\s/\\:@"'<>`]+)@((?:[A-Za-z0-9-]+\.)*github\.[A-Za-z0-9.-]+)"#,
        )
        .expect("static regex is valid");
        let space_pair = Regex::new(
            r#"(?m)^([ \t]*((?i:ENV)[ \t]+)?([A-Za-z_][A-Za-z0-9_\-]*(?:\.[A-Za-z0-9_\-]+)*)[ \t]+)([^\s=:][^\n]*)"#,
        )
        .expect("static regex is valid");
        let set_pair = Regex::new(
            r#"((?:\bset[ \t]+env\(|\bset\([ \t]*(?:ENV\{)?|\b(?:set|setenv|setx|SET|SETX|Setx)[ \t]+(?:[-/][A-Za-z]+[ \t]+)*\$?|(?i:\b(?:set|new)-item)[ \t]+(?:(?i:-path)[ \t]+)?(?i:env):|(?i:\b(?:set|new)-variable)[ \t]+(?:(?i:-name)[ \t]+)?)([A-Za-z_][A-Za-z0-9_]*)\}?\)?[ \t]+(?:(?i:-value)[ \t]+|(?:(?i:for)[ \t]+[^\s=]+[ \t]*)?=[ \t]*)?)("[^"\n]*"|'[^'\n]*'|[^\s;"')][^\s;)]*)"#,
        )
        .expect("static regex is valid");
        let xml_keyed = Regex::new(
            r#"(<([A-Za-z_][A-Za-z0-9_.:\-]*)\s[^<>]*?\b(?:key|name)\s*=\s*["']([^"'\n]*)["'][^<>]*>)(<!\[CDATA\[(?s:.*?)\]\]>|[^<\n]+)</([A-Za-z_][A-Za-z0-9_.:\-]*)>"#,
        )
        .expect("static regex is valid");
        let braced = Regex::new(
            r#"((?:^|[\s;,"'(])([A-Za-z_][A-Za-z0-9_.\-]*)[ \t]*=[ \t]*\{)((?:[^}\n]|\}\})*)\}"#,
        )
        .expect("static regex is valid");
        let auth_directive = Regex::new(
            r#"(?i)(\bstats[ \t]+auth[ \t]+[^:\s]+:|\binsecure-password[ \t]+|\bidentified[ \t]+(?:with[ \t]+\S+[ \t]+)?by[ \t]+)([^\s'";]+)|(\b(?:password(?:[ \t]+|[ \t]*=[ \t]*|[ \t]*\([ \t]*|[ \t]+for[ \t]+\S+[ \t]*=[ \t]*(?:password[ \t]*\([ \t]*)?)|identified[ \t]+(?:with[ \t]+\S+[ \t]+)?by[ \t]+)['"])((?:[^'"\\\n]|\\.)+)"#,
        )
        .expect("static regex is valid");
        let dsn_password = Regex::new(
            r#"((?:^|[\s"'=])[^\s:@/"'=]+:)([^\s@/"']+)(@(?:tcp6?|udp6?|unix)?\()|(\b(?:sqlplus|sqlldr|expdp|impdp|rman|dgmgrl)[ \t]+(?:-[A-Za-z]+[ \t]+)*(?:(?:target|catalog|auxiliary)[ \t]+)?["']?[A-Za-z0-9_$#]+/|\bjdbc:oracle:[a-z0-9]+:["']?[A-Za-z0-9_$#]+/)([^\s@/"']+)"#,
        )
        .expect("static regex is valid");
        let colon_key = Regex::new(
            r#"(["'])((?:[A-Za-z0-9_.\-]+:)+)([A-Za-z_][A-Za-z0-9_.\-]*)(["'][ \t]*[:=][ \t]*)("[^"\n]*"|'[^'\n]*'|[^\s,;&{}\[\]\n]+)"#,
        )
        .expect("static regex is valid");
        let tsig_secret = Regex::new(r#"(?m)((?:^|[{;])[ \t]*secret[ \t]+)("[^"\n]*")([ \t]*;)"#)
            .expect("static regex is valid");
        let snmp_user = Regex::new(
            r#"(\bcreateUser[ \t]+(?:-e[ \t]+\S+[ \t]+|-[lm][ \t]+)*[^\s"'(\-]\S*[ \t]+(?i:MD5|SHA(?:-?[0-9]{3})?)[ \t]+)("[^"\n]*"|'[^'\n]*'|[^\s"']+)(?:([ \t]+(?i:DES|AES(?:128|192|256)?C?)[ \t]+)("[^"\n]*"|'[^'\n]*'|[^\s"']+))?"#,
        )
        .expect("static regex is valid");
        let ntp_key = Regex::new(
            r"(?m)(^[ \t]*[0-9]+[ \t]+(?:M|MD5|SHA1?|SHA(?:3-)?(?:224|256|384|512)|RMD(?:128|160|256|320)|TIGER|WHIRLPOOL|AES(?:128|256)(?:CMAC)?)[ \t]+(?:(?:HEX|ASCII):)?)(\S+)([ \t]*(?:#[^\n]*)?)$",
        )
        .expect("static regex is valid");
        let squid_login = Regex::new(r"(\bcache_peer\b[^\n]*?[ \t]login=[^\s:]+:)(\S+)")
            .expect("static regex is valid");
        let pass_line =
            Regex::new(r#"(?m)(^[ \t]*(?:Pass|PASS)[ \t]+)("[^"\n]*"|[^\s"]+)([ \t]*)$"#)
                .expect("static regex is valid");
        let plain_scheme = Regex::new(
            r#"(\{(?i:PLAIN|CLEARTEXT)(?:-TRUNC)?(?:\.(?i:b64|base64|hex))?\})([^:\s'"][^:\s]*)"#,
        )
        .expect("static regex is valid");
        let mongo_password = Regex::new(
            r#"(\bchangeUserPassword[ \t]*\([ \t]*(?:"[^"\n]*"|'[^'\n]*')[ \t]*,[ \t]*["'])([^"'\n]*)"#,
        )
        .expect("static regex is valid");
        let setter_call =
            Regex::new(r#"(\.([A-Za-z_][A-Za-z0-9_]*)[ \t]*\([ \t]*["'])([^"'\n]*)(["'][ \t]*\))"#)
                .expect("static regex is valid");
        let shell_default = Regex::new(r"(\$\{([A-Za-z_][A-Za-z0-9_]*)[-=])([^}\n]*)\}")
            .expect("static regex is valid");
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        Ok(Redactor {
            memo_id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            known: None,
            shell_default,
            setter_call,
            mongo_password,
            ntp_key,
            squid_login,
            pass_line,
            plain_scheme,
            tsig_secret,
            snmp_user,
            xml_setting,
            here_string,
            gh_secret,
            colon_key,
            space_pair,
            set_pair,
            xml_keyed,
            braced,
            auth_directive,
            dsn_password,
            registry_login,
            config_set,
            header_directive,
            github_userinfo,
            curl_user,
            redis_a,
            user_flag,
            pgpass_line,
            attr_pair,
            blank_pair,
            cisco,
            redis_acl,
            query,
            kind_key,
            rocket,
            netrc,
            mysql_p,
            directive,
            sshpass,
            from_literal,
            code_pair,
            sbt_credentials,
            debconf_password,
            pass_command,
            fallback,
            keys,
            defaults,
            secret_kind,
            credentials,
            inline,
            xml,
            flag,
            auth_header,
            flow_map,
            scheme_token,
            flow_name,
            flow_value,
        })
    }

    /// The [`CREDENTIAL_PATTERNS`] to run on `text`: the webhook URL rules
    /// (the last [`WEBHOOK_PATTERNS`] of them, with no literal prefix for
    /// the regex engine to scan for) only when it holds `hook` or
    /// `telegram`.
    fn credentials_for(&self, text: &str) -> &[Regex] {
        if text.contains("hook") || text.contains("telegram") {
            &self.credentials
        } else {
            &self.credentials[..self.credentials.len() - WEBHOOK_PATTERNS]
        }
    }

    /// Whether a key (or the `name`/`key`/`header` of a `{name, value}`
    /// pair) names a secret: a key pattern, a secret word in it, or a
    /// credential header's name.
    pub(crate) fn key_matches(&self, key: &str) -> bool {
        memo::key_matched(self.memo_id, key, || self.key_matches_uncached(key))
    }

    fn key_matches_uncached(&self, key: &str) -> bool {
        if self.defaults
            && (keys::credentials_file_variable(key) || keys::names_an_existing_object(key))
        {
            // The default rules do not read it (only `--redact-key`
            // patterns, after the default pattern, do).
            return self.keys[1..].iter().any(|r| r.is_match(key));
        }
        self.keys.iter().any(|r| r.is_match(key))
            || (self.defaults
                && (keyword_in_key(key)
                    || credential_header(key)
                    || bundler_host_key(key)
                    || more_secret_key_names(key)
                    || keys::acme_sh_key(key)
                    || keys::snmp_community_key(key)
                    || keys::key_file_secret_names(key)
                    || keys::salt_or_pepper_key(key)
                    || keys::personal_access_token_key(key)
                    || keys::app_secret_key_names(key)
                    || keys::erlang_cookie_key(key)
                    || keys::cipher_and_payment_key_names(key)
                    || keys::identity_service_key_names(key)
                    || keys::abbreviated_and_signing_key_names(key)
                    || keys::enrollment_hmac_and_sse_key_names(key)
                    || keys::password_words_in_other_languages(key)
                    || package_manager_auth_key(key)))
            || keys::lookalike_skeleton(key).is_some_and(|k| self.key_matches(&k))
    }

    /// Whether a text (a file not compared as YAML, or a string value)
    /// may be a Secret or SealedSecret manifest. Conservative: besides a
    /// plain `kind: Secret`, any `kind` key whose value is not a plain
    /// identifier (a tag, anchor, alias, escape, block scalar or a value
    /// continued on the next line: YAML can spell `Secret` in all of
    /// these) or that contains `secret` in any case counts.
    pub fn looks_like_secret(&self, text: &str) -> bool {
        if self.looks_like_secret_as_written(text) {
            return true;
        }
        // A key spelled with escapes (`"k\x69nd"`, `"\u006bind"`) is read
        // decoded.
        (text.contains("\\x") || text.contains("\\u") || text.contains("\\U")) && {
            let decoded = decode_escapes(text);
            decoded != text && self.looks_like_secret_as_written(&decoded)
        }
    }

    /// [`Self::looks_like_secret`] of the text as written.
    fn looks_like_secret_as_written(&self, text: &str) -> bool {
        // Most strings hold no `kind`: no regex, no copy.
        if !text.contains("kind") {
            return false;
        }
        let text: std::borrow::Cow<str> = if text.contains('\u{feff}') {
            text.replace('\u{feff}', "").into()
        } else {
            text.into()
        };
        if self.secret_kind.is_match(&text) || (text.contains('=') && toml_secret_kind(&text)) {
            return true;
        }
        // `find_iter`, not captures: this runs on every string holding `kind`.
        for m in self.kind_key.find_iter(&text) {
            let line_end = text[m.end()..]
                .find('\n')
                .map_or(text.len(), |i| m.end() + i);
            let rest = &text[m.end()..line_end];
            if !plain_kind(rest) && !schema::kind_holds_a_map(&text, m.start(), m.end()) {
                return true;
            }
            // A deeper line right after continues the value (`kind: Sec` /
            // `  ret` is a plain scalar over two lines).
            let key_col = {
                let line_start = text[..m.start()].rfind('\n').map_or(0, |i| i + 1);
                let line = &text[line_start..m.end()];
                line.len() - line.trim_start_matches([' ', '\t', '-']).len()
            };
            let next = text[line_end..]
                .split('\n')
                .skip(1)
                .find(|l| !l.trim().is_empty());
            if let Some(next) = next {
                let ind = next.len() - next.trim_start().len();
                let plain_line = rest
                    .trim_start()
                    .starts_with(|ch: char| ch.is_ascii_alphanumeric());
                if plain_line && ind > key_col && !next.trim_start().starts_with('#') {
                    return true;
                }
            }
        }
        false
    }

    /// A string value under a key named `auth` (docker `config.json`'s
    /// `auths.<registry>.auth`, base64 of `user:password`; htpasswd-style
    /// `auth: "admin:password"`) that has the shape of a credential; a
    /// base64 value under `encrypt` (re-probe 17).
    fn auth_value(&self, key: &str, value: &str) -> bool {
        let key = key.trim_matches(['"', '\'']);
        // `basicAuth`, `basic_auth`, `basic-auth`, also as the last part
        // of a longer key (`prometheus.io/basic-auth`).
        // Most keys end in neither `h` nor `s`: no copy for them.
        let basic = key.ends_with(['h', 'H', 's', 'S'])
            && key.get(key.len().saturating_sub(16)..).is_some_and(|tail| {
                let tail = tail.to_ascii_lowercase();
                let tail = tail.strip_suffix("users").unwrap_or(&tail);
                let tail = tail.trim_end_matches(['-', '_']);
                ["basicauth", "basic_auth", "basic-auth"]
                    .iter()
                    .any(|b| tail.ends_with(b))
            });

        // Consul's and Nomad's gossip key (`encrypt = "<base64>"`, also
        // `consul agent -encrypt=X` and JSON): `encrypt` is also a switch
        // (`encrypt = true`, `encrypt: tls`), so only a key's shape is.
        let encrypt = key.eq_ignore_ascii_case("encrypt");
        // A dotted key's last segment (Elastic Beats' `cloud.auth:
        // "elastic:X"`: re-probe 18).
        let last = key.rsplit('.').next().unwrap_or(key);
        // probe32: Galera's `wsrep_sst_auth = user:X` (`--wsrep-sst-auth=`).
        let sst = key.get(key.len().saturating_sub(8)..).is_some_and(|t| {
            t.eq_ignore_ascii_case("sst_auth") || t.eq_ignore_ascii_case("sst-auth")
        });
        // probe35 (red-auth-suffix-user-password): a key whose last word
        // is `auth` (`relay_auth`, `smtp-auth`, Hiera's
        // `profile::mail::relay_auth`) holding `user:X`; not its base64
        // test (`enable_auth: Disabled` is a word).
        let suffix = !last.eq_ignore_ascii_case("auth")
            && key.len() > 5
            && key.is_char_boundary(key.len() - 4)
            && key[key.len() - 4..].eq_ignore_ascii_case("auth")
            && key[..key.len() - 4].ends_with(['_', '-', ':']);
        // red39: a key whose last word is `basic` (`BASIC`, `HTTP_BASIC`),
        // read like `suffix`: `user:X` or its base64.
        let basic_word = key.len() >= 5
            && key.is_char_boundary(key.len() - 5)
            && key[key.len() - 5..].eq_ignore_ascii_case("basic")
            && (key.len() == 5 || key[..key.len() - 5].ends_with(['_', '-', '.', ':']));
        if !(last.eq_ignore_ascii_case("auth") || basic || encrypt || sst || suffix || basic_word) {
            return false;
        }
        let v = value.trim().trim_matches(['"', '\'']);
        let user_pass = !encrypt
            && v.split_once(':').is_some_and(|(u, p)| {
                !u.is_empty()
                    && !p.is_empty()
                    && !v.contains(char::is_whitespace)
                    && !v.contains("//")
            });
        let base64 = v.len() >= 8
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
            && v.bytes()
                .any(|b| b.is_ascii_digit() || b == b'=' || b.is_ascii_uppercase());
        // red39 (red-base64-user-password-under-auth-names): under a
        // key ending in `auth` only base64 that decodes to `user:X`
        // (`REGISTRY_AUTH: dXNlcjpY…`, a docker `auth` copied into a
        // variable): a word such as `Disabled` stays.
        user_pass || (base64 && (!(suffix || basic_word) || decodes_to_user_password(v)))
    }

    /// Hides, inside one string, what is a secret whatever the string's
    /// key: credential-shaped values, and values of secret-named keys
    /// written inline (`password=x`, `{token: x}`, `<secret>x</secret>`,
    /// `--password=x`). The same rules serve the semantic and text modes.
    /// A text holding escapes (`"pass\u0077ord": x`, `"password\tx"`) is
    /// read once more with them decoded; when that hides more, the decoded
    /// text is what is shown (its control characters written as escapes).
    pub fn scrub(&self, text: &str) -> String {
        // The known values first (red42): a rule that hides a value's
        // start up to a delimiter (`pw=Tz5"Pk<`) left its rest for them
        // to miss.
        let hidden = self.known_first(text);
        let text: &str = &hidden;
        if plain_word(text) {
            return text.to_string();
        }
        memo::scrubbed(self.memo_id, memo::Text::Scrubbed, text, || {
            if has_invisible(text) {
                self.scrub_invisible(text)
            } else {
                self.scrub_visible(text)
            }
        })
    }

    /// These rules with the secret `values` this run knows (red41: a
    /// review's inventories' secret-named parameters, [`secret_values`]):
    /// each is hidden wherever it occurs in a string, a file or a name,
    /// and a base64 run holding its encoding is hidden whole. The memo of
    /// the rules is shared: the values are hidden after it.
    pub fn with_known_values(mut self, values: &std::collections::BTreeSet<String>) -> Self {
        self.known = known::Known::new(values).map(std::sync::Arc::new);
        self
    }

    /// `text` with the known secret values hidden ([`Self::with_known_values`]).
    fn hide_known(&self, text: String) -> String {
        match &self.known {
            Some(k) => k.hide(&text).unwrap_or(text),
            None => text,
        }
    }

    /// [`Self::hide_known`] before the rules read a text, borrowed when
    /// nothing is hidden.
    fn known_first<'t>(&self, text: &'t str) -> std::borrow::Cow<'t, str> {
        match self.known.as_ref().and_then(|k| k.hide(text)) {
            Some(h) => std::borrow::Cow::Owned(h),
            None => std::borrow::Cow::Borrowed(text),
        }
    }

    /// [`Self::scrub`] of a text holding control or invisible characters
    /// (a NUL, an ANSI colour code, a zero-width space, a byte-order mark
    /// inside a line: terminal output, text copied from a web page): read
    /// once more with each of them (an ANSI sequence whole) as a blank, so
    /// that one glued to a key (`\e[1mDB_PASSWORD\e[0m=x`, `x\0password=x`)
    /// does not hide it from the key rules; when that hides more, the text
    /// with blanks is what is shown.
    fn scrub_invisible(&self, text: &str) -> String {
        let out = self.scrub_visible(text);
        let blanked = blank_invisible(text);
        let again = self.scrub_visible(&blanked);
        if again.matches(OLD).count() > out.matches(OLD).count() {
            again
        } else {
            out
        }
    }

    /// [`Self::scrub`] of a text without control characters.
    fn scrub_visible(&self, text: &str) -> String {
        let mut out = self.scrub_at(text, 0);
        if out.contains("data:") && out.contains('%') {
            out = self.hide_encoded_data_urls(&out);
        }
        if !out.contains('\\') {
            return out;
        }
        let decoded = decode_escapes(&out);
        if decoded != out {
            // Escaped controls (`"x=1\u0001password=x"`) decode to controls:
            // read as blanks ([`Self::scrub_invisible`]).
            let decoded = if has_invisible(&decoded) {
                blank_invisible(&decoded)
            } else {
                decoded
            };
            let again = self.scrub_at(&decoded, 0);
            if again != decoded {
                return encode_controls(&again);
            }
        }
        // The first pass may have hidden only an escape: `--password
        // \"X\"` (a JSON string read as text) hid the `\` and showed X,
        // and decoding what it left, `<redacted>"X\"`, hides nothing more
        // (verify22). The text is read once more with its quotes decoded,
        // and shown so when that leaves fewer of its characters visible.
        if !text.contains("\\\"") {
            return out;
        }
        // Only `\"` and `\\` are decoded: the text keeps its lines (one
        // read may span several).
        let plain = decode_quote_escapes(text);
        let fresh = self.scrub_at(&plain, 0);
        let visible = |t: &str| t.len() - t.matches(OLD).count() * OLD.len();
        if visible(&fresh) + (text.len() - plain.len()) < visible(&out) {
            fresh
        } else {
            out
        }
    }

    /// probe35 (red-ignition-percent-encoded-data-urls): an Ignition
    /// config's file contents as a percent-encoded `data:` URL (Butane
    /// writes small files so: `data:,token%3A%20X%0A`): a payload whose
    /// decoded text the rules hide something in is hidden whole (the
    /// parts cannot be mapped back to the encoded text). A base64 payload
    /// is not read.
    fn hide_encoded_data_urls(&self, text: &str) -> String {
        static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
        let re = RE.get_or_init(|| {
            Regex::new(r#"(\bdata:[A-Za-z0-9!#$&^_.+/=;-]*,)([^\s"'\\<>]+)"#)
                .expect("static regex is valid")
        });
        let mut out = text.to_string();
        replace_in(&mut out, re, |c: &regex::Captures| {
            let decoded = (!c[1].contains(";base64"))
                .then(|| escapes::percent_decode(&c[2]))
                .flatten()
                .filter(|d| d != &c[2]);
            match decoded {
                Some(d) if self.redact_text(&d).matches(OLD).count() > d.matches(OLD).count() => {
                    format!("{}{OLD}", &c[1])
                }
                _ => c[0].to_string(),
            }
        });
        out
    }

    /// A name the outputs print (a target, a file path, an object's
    /// `kind/namespace/name`): each `/`-separated part scrubbed as a string
    /// (a token as a file name, `DB_PASSWORD=x.env`). Most names hold no
    /// `=`, `:` or credential prefix and come back as they are.
    pub fn scrub_name(&self, name: &str) -> String {
        if !name.split('/').any(name_may_hold_secret) {
            return self.hide_known(name.to_string());
        }
        name.split('/')
            .map(|part| {
                if name_may_hold_secret(part) {
                    self.scrub(part)
                } else {
                    self.hide_known(part.to_string())
                }
            })
            .collect::<Vec<_>>()
            .join("/")
    }

    /// `--password` or `-token`: an option whose value is the next item.
    fn is_secret_flag(&self, v: Option<&Value>) -> bool {
        v.and_then(Value::as_str).is_some_and(|s| {
            s.starts_with('-') && !s.contains('=') && self.key_matches(s.trim_start_matches('-'))
        })
    }

    /// Both sides of a string scrubbed; a hidden change says so.
    fn scrub_pair(&self, old: Option<&str>, new: Option<&str>) -> (Option<String>, Option<String>) {
        let (a, b) = (
            old.map(|o| self.scrub_value(o)),
            new.map(|n| self.scrub_value(n)),
        );
        let hid_new = match (new, &b) {
            (Some(n), Some(b)) => n != b,
            _ => false,
        };
        let b = match (old, new, b) {
            (Some(o), Some(n), Some(b))
                if hid_new && o != n && a.as_deref() == Some(b.as_str()) =>
            {
                // Only the hidden part changed: say so.
                Some(format!("{b} {CHANGED}"))
            }
            (_, _, b) => b,
        };
        (a, b)
    }

    /// A string value of the semantic mode: [`Self::scrub`], or, when it
    /// holds a line break (a file carried in a ConfigMap), the text
    /// mode's reading of a file ([`Self::redact_lines`], after the
    /// credential shapes over the whole text), so that a secret key's
    /// value continued on the lines below it (a heredoc, a `\`
    /// continuation, a multi-line array, a value on the next line) is
    /// hidden in both modes alike.
    fn scrub_value(&self, text: &str) -> String {
        // One line with its newline is a file too (`app.ini: |` holding
        // `password = ab;x`): the line rule reads its value to the line's
        // end, as the text mode does.
        if !text.contains('\n') {
            return self.scrub(text);
        }
        let text = self.known_first(text);
        self.redact_lines(&self.whole_text_shapes(&text), &HashSet::new())
    }

    /// What the line rule cannot see line by line, over a whole text
    /// first: credential shapes (a PEM block spans lines) and an XML
    /// setting whose `<value>` is on the next line.
    /// Credential shapes (tokens, URL passwords, private keys) hidden in
    /// free text such as an error message, where reading `key: value`
    /// pairs would take a file name for a key (`password.jsonnet: no such
    /// field`).
    pub fn hide_credential_shapes(&self, text: &str) -> String {
        memo::scrubbed(self.memo_id, memo::Text::ShapesHidden, text, || {
            self.whole_text_shapes(text)
        })
    }

    fn whole_text_shapes(&self, text: &str) -> String {
        let mut whole = text.to_string();
        for re in self.credentials_for(text) {
            replace_in(&mut whole, re, OLD);
        }
        if xml_value_child(&whole) {
            self.hide_xml_settings(&mut whole);
        }
        if whole.contains("ParameterValue=") {
            self.hide_cfn_shorthand(&mut whole);
        }
        // Bicep's `@secure()` decorator may be on the line above its
        // `param` (issue 19).
        if self.defaults && whole.contains("@secure()") {
            replace_in(&mut whole, bicep_secure_param_re(), hide_after_first);
        }
        // A base64-encoded private key wrapped over lines (the line rules
        // see one line of it at a time).
        if whole.contains("LS0tLS1CRUdJTi") {
            hide_base64_private_keys(&mut whole);
        }
        // red39: a gzip payload wrapped over lines, alike.
        if whole.contains("H4sI") {
            shapes::hide_gzip_base64(&mut whole, |t| {
                self.scrub(t) != t || self.redact_text(t) != t
            });
        }
        // Positional secrets read over lines (an `expect` pattern and its
        // `send`, a `kms` or `tacacs server` block, a multi-line INSERT).
        hide_positional_secrets(&mut whole, |k| self.key_matches(k));
        hide_shape_rules(&mut whole, |k| self.key_matches(k));
        whole
    }

    /// The AWS CLI's shorthand of a CloudFormation parameter,
    /// `ParameterKey=DbPassword,ParameterValue=x` (`--parameters`): the
    /// value of a pair whose key matches (verify 17; the JSON and YAML
    /// forms are read as name/value pairs).
    fn hide_cfn_shorthand(&self, out: &mut String) {
        static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
        let re = RE.get_or_init(|| {
            Regex::new(r#"(ParameterKey=([A-Za-z0-9_.\-]+),\s*ParameterValue=)("[^"\n]*"|'[^'\n]*'|[^,\s"']+)"#)
                .expect("static regex is valid")
        });
        replace_in(out, re, |c: &regex::Captures| {
            if self.key_matches(&c[2]) && &c[3] != OLD {
                format!("{}{OLD}", &c[1])
            } else {
                c[0].to_string()
            }
        });
    }

    /// [`Self::xml_setting`]'s and [`xml_name_child_re`]'s replacements in
    /// `out`.
    fn hide_xml_settings(&self, out: &mut String) {
        replace_in(out, &self.xml_setting, |c: &regex::Captures| {
            if self.key_matches(&c[3]) && !c[4].trim().is_empty() && &c[4] != OLD {
                format!("{}{OLD}{}", &c[1], &c[5])
            } else {
                c[0].to_string()
            }
        });
        // Windows answer files (`autounattend.xml`): `<AdministratorPassword>`
        // / `<Value>X</Value>` / `<PlainText>true</PlainText>`, also
        // `<AutoLogon><Password><Value>X` (re-probe 18).
        if out.contains("<Value>") || out.contains("<value>") || out.contains("<VALUE>") {
            replace_in(out, xml_value_child_re(), |c: &regex::Captures| {
                if self.key_matches(&c[2]) && !c[3].trim().is_empty() && &c[3] != OLD {
                    format!("{}{OLD}{}", &c[1], &c[4])
                } else {
                    c[0].to_string()
                }
            });
        }
        if out.contains("</name>") {
            replace_in(out, xml_name_child_re(), |c: &regex::Captures| {
                if self.key_matches(c[2].trim()) && !c[3].trim().is_empty() && &c[3] != OLD {
                    format!("{}{OLD}{}", &c[1], &c[4])
                } else {
                    c[0].to_string()
                }
            });
        }
    }

    /// Redacts an old and a new version of one object together, so each
    /// placeholder can say whether the hidden value changed.
    pub fn redact_pair(&self, old: Option<&Value>, new: Option<&Value>) -> (Value, Value) {
        let (o, n) = self.walk(old, new);
        (o.unwrap_or(Value::Null), n.unwrap_or(Value::Null))
    }

    /// Redacts `key: value` / `key = value` lines of a file that is not
    /// compared as YAML; a file that looks like a Secret is withheld whole.
    pub fn redact_text(&self, text: &str) -> String {
        self.redact_text_pair(Some(text), None)
            .0
            .unwrap_or_default()
    }

    /// [`Self::redact_text`] of the old and the new version of one file
    /// together: a YAML anchor whose alias either version hides under a
    /// secret key (`base: &b x` / `password: *b`) is hidden in both, so a
    /// change that starts using a value as a password does not show it as
    /// the old line.
    pub fn redact_text_pair(
        &self,
        old: Option<&str>,
        new: Option<&str>,
    ) -> (Option<String>, Option<String>) {
        // Credential shapes first, over the whole text: a PEM block spans
        // lines. `Err` is a file withheld whole.
        let prepare = |text: &str| -> Result<String, String> {
            if self.looks_like_secret(text) {
                return Err("(content not shown: the file looks like a Kubernetes Secret that is not compared as YAML)\n".into());
            }
            Ok(self.whole_text_shapes(&self.known_first(text)))
        };
        let sides = [old.map(prepare), new.map(prepare)];
        let none = HashSet::new();
        let first = sides.clone().map(|side| {
            side.map(|t| match t {
                Ok(t) => self.redact_lines(&t, &none),
                Err(withheld) => withheld,
            })
        });
        // The value is written at the anchor; the aliases the first pass
        // hid name the anchors to hide.
        let anchored = |t: &str| t.contains('&') && t.contains('*');
        let mut anchors = HashSet::new();
        for (side, out) in sides.iter().zip(&first) {
            if let (Some(Ok(t)), Some(out)) = (side, out) {
                if anchored(t) {
                    anchors.extend(hidden_aliases(t, out));
                }
            }
        }
        if anchors.is_empty() {
            let [a, b] = first;
            return (a, b);
        }
        let [a, b] = [0, 1].map(|i| match &sides[i] {
            Some(Ok(t)) if t.contains('&') => Some(self.redact_lines(t, &anchors)),
            _ => first[i].clone(),
        });
        (a, b)
    }
}

/// `re`'s replacements made in `out`, which is left as it is (not copied)
/// when nothing matches.
/// The replacement for the rules whose match is an option or directive
/// (group 1) followed by the secret (group 2, the rest of the match).
fn hide_after_first(c: &regex::Captures) -> String {
    format!("{}{OLD}", &c[1])
}

fn replace_in(out: &mut String, re: &Regex, rep: impl regex::Replacer) {
    let new = match re.replace_all(out, rep) {
        std::borrow::Cow::Owned(s) => Some(s),
        std::borrow::Cow::Borrowed(_) => None,
    };
    if let Some(s) = new {
        *out = s;
    }
}

/// Whether `text` is one short word of letters, digits, `_`, `.` and `-`
/// (a name, a label, a version, a number as a string: most of a catalog's
/// scalars), which no rule reads: every credential shape is 15 or more
/// characters long, and every other rule needs a blank, a `=`, `:` or
/// other punctuation around the secret. Such a string skips the rules,
/// whose literal pre-checks alone cost a 3 MB JSON file of 165,000 short
/// values 24 s of a review (debug build; verify25,
/// v-diff-large-catalog-file-time-and-memory).
fn plain_word(text: &str) -> bool {
    text.len() < PLAIN_WORD_MAX
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// [`plain_word`]'s bound: shorter than the shortest credential shape.
const PLAIN_WORD_MAX: usize = 15;
