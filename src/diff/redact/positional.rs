//! Positional rules: a secret a daemon's configuration, a database init
//! script or a network device's configuration holds by its place on a line
//! (literal needles), and SQL `INSERT` rows by column.

use regex::Regex;

use super::rules::{hide_rule_values, needle_set, Rule};
use super::{replace_in, OLD};

/// Literals that run [`hide_positional_secrets`]' other rules (Neo4j's
/// `SET PASSWORD FROM`, an INSERT or MySQL's REPLACE).
const POSITIONAL_NEEDLES: &[&str] = &[
    "ASSWORD", "assword", "INSERT", "insert", "Insert", "REPLACE", "replace", "Replace",
];

/// Every [`positional_rules`]' needle and [`POSITIONAL_NEEDLES`] in one
/// set, and each rule's needles' indexes in it: one pass over a text says
/// which rules may match (thirty `str::contains` calls cost more than the
/// rules, in a debug build most).
fn positional_needles() -> &'static (regex::RegexSet, Vec<Vec<usize>>) {
    static SET: std::sync::OnceLock<(regex::RegexSet, Vec<Vec<usize>>)> =
        std::sync::OnceLock::new();
    SET.get_or_init(|| {
        needle_set(
            POSITIONAL_NEEDLES,
            positional_rules().iter().map(|r| r.needles),
            regex::escape,
        )
    })
}

/// The positional [`Rule`]s (each regex's group `v` the secret, its
/// needles literals), compiled once. Some read over lines (an `expect`
/// pattern and its `send`, a Boundary `kms` block, an IOS `tacacs server`
/// block): they run over whole texts too ([`Redactor::whole_text_shapes`](super::Redactor::whole_text_shapes)).
fn positional_rules() -> &'static [Rule] {
    static RULES: std::sync::OnceLock<Vec<Rule>> = std::sync::OnceLock::new();
    fn never(_: &str) -> bool {
        false
    }
    RULES.get_or_init(|| {
        let rule = Rule::new;
        vec![
            // probe26: `vault operator init`'s output kept in a file
            // (`Unseal Key 1: X`, `Recovery Key 1: X`), and Fluent Bit's
            // Datadog output `apikey X` (one word, which the blank-separated
            // rule does not read: prose starts with such words).
            rule(
                &["Unseal Key", "Recovery Key"],
                r"(?m)^(?:[ \t]*(?:Unseal|Recovery) Key [0-9]+:[ \t]*)(?P<v>\S+)",
                never,
            ),
            rule(
                &["apikey", "Apikey", "ApiKey", "APIKEY"],
                r"(?im)^(?:[ \t]*apikey[ \t]+)(?P<v>\S+)(?:[ \t]*\r?)$",
                never,
            ),
            // The OpenTelemetry Collector's Datadog exporter as a flow map,
            // `api: {key: X, site: …}` (YAML or JSON); red41: an API
            // gateway's `key-auth: {key: X}`.
            rule(
                &[
                    "api: {", "api\": {", "api:{", "api\":{", "wt: {", "wt\": {", "WT: {",
                    "WT\": {", "ypt: {", "ypt\": {", "ion: {", "ion\": {", "uth: {",
                    "uth\": {", "uth:{", "uth\":{",
                ],
                r#"(?i)(?:\b(?:api|jwt|crypt|encryption|key[_-]?auth)["']?[ \t]*:[ \t]*\{(?:[^{}\n]*?[,\s])?["']?key["']?[ \t]*:[ \t]*)(?P<v>"[^"\n]*"|'[^'\n]*'|[^\s,}]+)"#,
                never,
            ),
            // probe26 (r-redact-windows-commands-ipsec-secrets-sasl-passwd):
            // `cmdkey /pass:X`, `schtasks … /rp X` (`net user`/`net use`
            // are red11's positional rules).
            rule(
                &["cmdkey", "CMDKEY", "Cmdkey"],
                r#"(?i)(?:\bcmdkey\b[^\n]*?[ \t]/pass:)(?P<v>"[^"\n]*"|\S+)"#,
                never,
            ),
            rule(
                &["schtasks", "SCHTASKS", "Schtasks"],
                r#"(?i)(?:\bschtasks\b[^\n]*?[ \t]/rp[ \t]+)(?P<v>"[^"\n]*"|[^\s/*"]\S*)"#,
                never,
            ),
            // strongSwan's `ipsec.secrets`: `ID : PSK "X"` (EAP, XAUTH,
            // NTLM too; quoted, or `0x`/`0s` hex and base64).
            rule(
                &[": PSK", ": EAP", ": XAUTH", ": NTLM", ":PSK", ":EAP", ":XAUTH"],
                r#"(?m)^(?:[^\n#]*:[ \t]*(?:PSK|EAP|XAUTH|NTLM)[ \t]+)(?P<v>"[^"\n]*"|'[^'\n]*'|0[xs]\S+)"#,
                never,
            ),
            // Postfix's `sasl_passwd`: `[smtp.example.com]:587 user:X` (or
            // a host naming smtp or mail); a version after `:` is an
            // image's tag and a number a port, not a password.
            rule(
                &["]:", "smtp", "mail"],
                r"(?m)^(?:[ \t]*(?:\[[^\]\s]+\](?::[0-9]+)?|[^\s\[\]]*(?:smtp|mail)[^\s\[\]]*)[ \t]+[^\s:]+:)(?P<v>\S+)(?:[ \t]*\r?)$",
                |v| {
                    v.bytes().all(|b| b.is_ascii_digit())
                        || (v.starts_with(|c: char| c.is_ascii_digit()) && v.contains('.'))
                },
            ),
            // Logstash's Elastic Cloud login, `cloud_auth => "user:X"`.
            rule(
                &["cloud_auth"],
                r#"(?:\bcloud_auth[ \t]*=>[ \t]*["'][^"':\n]*:)(?P<v>[^"'\n]*)(?:["'])"#,
                never,
            ),
            // Daemons. sendmail's `AuthInfo:host "U:user" "P:X"` (`P=X`
            // base64).
            rule(
                &["AuthInfo", "authinfo", "AUTHINFO"],
                r#"(?i)(?:\bAuthInfo:[^\n]*?"P[:=])(?P<v>[^"\n]*)(?:")"#,
                never,
            ),
            // Exim's `client_send = : user : X` (`^user^X`): the last field;
            // an expansion (`${extract…}`) reads the secret elsewhere.
            rule(
                &["client_send"],
                r"(?m)(?:\bclient_send[ \t]*=[^\n]*[:^][ \t]*)(?P<v>[^:^\s${}][^:^\n{}]*?)(?:[ \t]*\r?)$",
                never,
            ),
            // Exim's `passwd.client`, `host.example.com:user:X`: a host
            // name with a dot, a user that is not a port, a value that is not
            // a version (Maven's `group:artifact:1.2`).
            rule(
                &[],
                r"(?m)^(?:[ \t]*(?:\*\.)?[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}:[^:\s]*[^:\s0-9][^:\s]*:)(?P<v>[^:\s]+)(?:[ \t]*\r?)$",
                |v| v.starts_with(|c: char| c.is_ascii_digit()) && v.contains('.'),
            ),
            // ZooKeeper's `addauth digest user:X`.
            rule(&["addauth"], r"(?:\baddauth[ \t]+digest[ \t]+[^:\s]+:)(?P<v>\S+)", never),
            // ProFTPD's `SQLConnectInfo db user X` and `LDAPBindDN dn X`.
            rule(
                &["SQLConnectInfo", "sqlconnectinfo", "SQLCONNECTINFO"],
                r#"(?i)(?:\bSQLConnectInfo[ \t]+\S+[ \t]+\S+[ \t]+)(?P<v>"[^"\n]*"|\S+)"#,
                never,
            ),
            rule(
                &["LDAPBindDN", "ldapbinddn", "LDAPBINDDN"],
                r#"(?i)(?:\bLDAPBindDN[ \t]+(?:"[^"\n]*"|\S+)[ \t]+)(?P<v>"[^"\n]*"|\S+)"#,
                never,
            ),
            // Boundary's `kms "aead" { key = "X" }`, on one line or over
            // the block's lines (`key_id` is not `key`).
            rule(
                &["kms"],
                r#"(?:\bkms[ \t]+"[^"\n]*"[ \t]*\{[^{}]*?(?:^|[\s{;])key[ \t]*=[ \t]*")(?P<v>[^"\n]*)(?:")"#,
                never,
            ),
            // `expect "*assword*"` then `send "X\r"` (on the next line or in
            // the pattern's block; pexpect's `expect(…)`/`sendline(…)`).
            rule(
                &["assword", "assphrase", "ASSWORD"],
                r#"(?i)(?:\bexpect[ \t(]+[^\n]*?(?:assword|assphrase|asscode)[^\n]*?(?:\r?\n[ \t]*|[{;][ \t]*)[^\n]*?\b(?:exp_)?send(?:line)?[ \t(]+(?:--[ \t]+)?")(?P<v>(?:[^"\\\n]|\\[^rn\n])*)(?:(?:\\[rn])*")"#,
                never,
            ),
            rule(
                &["assword", "assphrase", "ASSWORD"],
                r#"(?i)(?:\bexpect[ \t(]+[^\n]*?(?:assword|assphrase|asscode)[^\n]*?(?:\r?\n[ \t]*|[{;][ \t]*)[^\n]*?\b(?:exp_)?send(?:line)?[ \t(]+')(?P<v>[^'\n]*?)(?:(?:\\[rn])*')"#,
                never,
            ),
            // A NATS NKEY seed: base32, `S` then the key type (user,
            // account, operator, server, cluster, curve), 58 characters.
            rule(
                &["SU", "SA", "SO", "SN", "SC", "SX"],
                r"(?:)\b(?P<v>S[UAONCX][A-Z2-7]{56})\b",
                never,
            ),
            // `cloudflared service install TOKEN`.
            rule(
                &["cloudflared"],
                r#"(?:\bcloudflared(?:\.exe)?[ \t]+(?:[^\n]*?[ \t])?service[ \t]+install[ \t]+)(?P<v>"[^"\n]*"|[^\s"']+)"#,
                never,
            ),
            // Database init statements. MongoDB's `db.auth("u", "X")`.
            rule(
                &[".auth"],
                r#"(?:\.auth[ \t]*\([ \t]*(?:"[^"\n]*"|'[^'\n]*')[ \t]*,[ \t]*)(?P<v>"[^"\n]*"|'[^'\n]*')"#,
                never,
            ),
            // Redis' `AUTH X` / `AUTH user X` as a line (after a
            // redis-cli prompt or redis-cli's options too) or a quoted
            // command (`printf "AUTH X\r\n"`); an SMTP mechanism's name is
            // not a secret.
            rule(
                &["AUTH "],
                r#"(?m)(?:(?:^[ \t]*(?:[^\s>]*>[ \t]*)?|["']|\bredis-cli[ \t][^\n]*?[ \t])AUTH[ \t]+(?:[^\s"'\\]+[ \t]+)?)(?P<v>[^\s"'\\]+)(?:[ \t]*\r?$|\\[rn]|["'])"#,
                |v| {
                    [
                        "LOGIN", "PLAIN", "CRAM-MD5", "DIGEST-MD5", "XOAUTH2", "OAUTHBEARER",
                        "GSSAPI", "EXTERNAL", "NTLM", "ANONYMOUS",
                    ]
                    .contains(&v)
                },
            ),
            // MSSQL's `sp_addlogin 'u', 'X'` and `sp_password 'old', 'X'`
            // (both passwords).
            rule(
                &["sp_addlogin", "SP_ADDLOGIN"],
                r"(?i)(?:\bsp_addlogin[ \t]+(?:@loginame[ \t]*=[ \t]*)?N?'[^'\n]*'[ \t]*,[ \t]*(?:@passwd[ \t]*=[ \t]*)?)(?P<v>N?'[^'\n]*')",
                never,
            ),
            rule(
                &["sp_password", "SP_PASSWORD"],
                r"(?i)(?:\bsp_password[ \t]+(?:@old[ \t]*=[ \t]*)?)(?P<v>N?'[^'\n]*')",
                never,
            ),
            rule(
                &["sp_password", "SP_PASSWORD"],
                r"(?i)(?:\bsp_password[ \t]+(?:@old[ \t]*=[ \t]*)?(?:N?'[^'\n]*'|NULL|<redacted>)[ \t]*,[ \t]*(?:@new[ \t]*=[ \t]*)?)(?P<v>N?'[^'\n]*')",
                never,
            ),
            // Network devices. Cisco's `crypto isakmp key [6] X address …`.
            rule(
                &["isakmp"],
                r"(?im)^(?:[ \t]*crypto[ \t]+isakmp[ \t]+key[ \t]+(?:[0-9][ \t]+)?)(?P<v>\S+)",
                never,
            ),
            // IOS keyrings' and ASA's `pre-shared-key [local|remote] [6] X`,
            // `pre-shared-key address A [MASK] key X`, Junos'
            // `pre-shared-key ascii-text "X"` (also as a `set` line).
            rule(
                &["pre-shared-key"],
                r#"(?im)^(?:[ \t]*(?:set[ \t]+[^\n]*?[ \t])?(?:ikev[12][ \t]+(?:(?:local|remote)-authentication[ \t]+)?)?pre-shared-key[ \t]+(?:(?:local|remote|ascii-text|hexadecimal)[ \t]+|address[ \t]+\S+(?:[ \t]+\S+)?[ \t]+key[ \t]+|hostname[ \t]+\S+[ \t]+key[ \t]+)?(?:[0-9][ \t]+)?)(?P<v>"[^"\n]*"|[^\s;]+)"#,
                never,
            ),
            // A key chain's `key-string [7] X` (HSRP's `authentication md5
            // key-string X` too).
            rule(
                &["key-string"],
                r"(?im)^(?:[ \t]*(?:[a-z]+[ \t]+(?:[0-9]+[ \t]+)?authentication[ \t]+(?:md5[ \t]+|text[ \t]+)?)?key-string[ \t]+(?:[0-9][ \t]+)?)(?P<v>\S+)",
                never,
            ),
            // `tacacs-server [host H …] key [7] X`, `radius-server key X`,
            // `server-private A key X`.
            rule(
                &["-server", "server-private"],
                r"(?im)^(?:[ \t]*(?:tacacs-server|radius-server|server-private[ \t]+\S+)[ \t]+(?:host[ \t]+\S+[ \t]+)?(?:[^\n]*?[ \t])?key[ \t]+(?:[0-9][ \t]+)?)(?P<v>\S+)",
                never,
            ),
            // `tacacs server NAME` / `radius server NAME` / ASA's
            // `aaa-server G host A`, then an indented ` key [7] X`.
            rule(
                &[" server ", "aaa-server"],
                r"(?im)(?:^[ \t]*(?:(?:tacacs|radius)[ \t]+server[ \t]+\S+|aaa-server[ \t]+[^\n]*?[ \t]host[ \t]+\S+[^\n]*?)[ \t]*\r?\n(?:[ \t]+[^\n]*\n)*?[ \t]+key[ \t]+(?:[0-9][ \t]+)?)(?P<v>\S+)",
                never,
            ),
            // `ntp authentication-key 1 md5 X`; Junos' `authentication-key
            // "X"` (`set … authentication-key 1 type md5 value "X"` for
            // NTP) and OSPF's `authentication md5 1 key "X"`.
            rule(
                &["authentication-key"],
                r"(?im)^(?:[ \t]*ntp[ \t]+authentication-key[ \t]+[0-9]+[ \t]+\S+[ \t]+)(?P<v>\S+)",
                never,
            ),
            rule(
                &["authentication-key"],
                r#"(?m)^(?:[ \t]*(?:set[ \t]+[^\n]*?[ \t])?authentication-key[ \t]+(?:[0-9]+[ \t]+type[ \t]+\S+[ \t]+value[ \t]+)?)(?P<v>"[^"\n]*"|[^\s;]+)"#,
                never,
            ),
            rule(
                &["md5"],
                r#"(?:\bauthentication[ \t]+md5[ \t]+[0-9]+[ \t]+key[ \t]+)(?P<v>"[^"\n]*"|[^\s;]+)"#,
                never,
            ),
            // `snmp-server community X RO`; Junos' `snmp community X`.
            rule(
                &["community"],
                r#"(?im)^(?:[ \t]*(?:set[ \t]+)?snmp(?:-server)?[ \t]+community[ \t]+(?:[0-9][ \t]+)?)(?P<v>"[^"\n]*"|[^\s;{]+)"#,
                never,
            ),
            // OpenWrt UCI's `option key 'X'` (a wifi-iface's PSK, WEP's
            // `key1`…`key4`); a path is a key file's (OpenVPN, uhttpd).
            rule(
                &["option"],
                r#"(?m)^(?:[ \t]*option[ \t]+key[1-4]?[ \t]+)(?P<v>'[^'\n]*'|"[^"\n]*"|\S+)"#,
                |v| v.trim_start_matches(['\'', '"']).starts_with('/'),
            ),
            // wget's `--header=NAME:X` (the option glued to the header,
            // or quoted whole: `'--header=Authorization: Bearer X'`): the
            // key rules read `--header` as the key there. A credential
            // header's name, or one naming a token, key or secret; in a
            // quoted header any scheme word before the credential (red36:
            // Dynatrace's `Api-Token`, as `Authorization: SCHEME X` is read
            // elsewhere; unquoted, the word after the value is the URL).
            rule(
                &["-header="],
                r#"(?i)(?:--header=(?:['"](?:(?:proxy-)?authorization|cookie|private-token|x-honeycomb-team|(?:x-)?jfrog-art-api|x-[a-z0-9-]+-(?:key|auth)|x-auth-key|ocp-apim-subscription-key|dd-application-key|x-insert-key|x-license-key|x-query-key|x-parse-master-key|[a-z0-9-]*(?:token|api-?key|secret|password)[a-z0-9-]*):[ \t]*(?:[a-z][a-z0-9._\-]*[ \t]+)?|(?:(?:proxy-)?authorization|cookie|private-token|x-honeycomb-team|(?:x-)?jfrog-art-api|x-[a-z0-9-]+-(?:key|auth)|x-auth-key|ocp-apim-subscription-key|dd-application-key|x-insert-key|x-license-key|x-query-key|x-parse-master-key|[a-z0-9-]*(?:token|api-?key|secret|password)[a-z0-9-]*):[ \t]*(?:(?:bearer|basic|token|apikey)[ \t]+)?))(?P<v>[^\s'"]+)"#,
                never,
            ),
            // red36 (red-cipher-and-payment-key-names): Netdata's streaming
            // `api key = X` (`stream.conf`): a key with a blank, which the
            // line rules do not read as one key.
            rule(
                &["api key", "API key"],
                r#"(?m)^(?:[ \t]*(?i:api key)[ \t]*=[ \t]*)(?P<v>[^\s#;]+)"#,
                never,
            ),
            // red36 (red-prompt-keys-and-password-params): TeamCity's Kotlin
            // DSL `password("env.NAME", "X", …)`: the second literal is the
            // value (the first, a name, is read as a setter's argument).
            rule(
                &["password("],
                r#"(?:\bpassword\([ \t]*"[^"\n]*"[ \t]*,[ \t]*")(?P<v>[^"\n]*)"#,
                never,
            ),
            // red36: a quoted prompt as a key (Ansible `expect`'s
            // `responses`, `"Enter admin password:": X`): the key ends in
            // `:` or `?` inside its quotes, which a JSON key does not (the
            // needles: that end and the key's closing quote and colon).
            rule(
                &[":\":", "?\":", ": \":", "? \":"],
                r#"(?mi)(?:^[ \t]*(?:-[ \t]+)?"[^"\n]*(?:password|passphrase)[^"\n]*[:?][ \t]*"[ \t]*:[ \t]+)(?P<v>"[^"\n]*"|'[^'\n]*'|[^\s"'#][^\n#]*?)[ \t]*$"#,
                never,
            ),
            // red36 (red-proxy-credentials): tinyproxy's `BasicAuth USER
            // X`, 3proxy's `users NAME:CL:X` (`CL` a clear-text password;
            // `CR` a hash), Privoxy's `forward-socks5 / USER:X@HOST:PORT .`.
            rule(
                &["BasicAuth"],
                r#"(?m)(?:^[ \t]*BasicAuth[ \t]+\S+[ \t]+)(?P<v>\S+)"#,
                never,
            ),
            rule(
                &[":CL:"],
                r#"(?:(?:^|[\s"'])[^\s:"']+:CL:)(?P<v>[^\s"']+)"#,
                never,
            ),
            rule(
                &["forward-socks"],
                r#"(?:\bforward-socks[45]t?[ \t]+\S+[ \t]+[^\s:@]+:)(?P<v>[^\s@]+)@"#,
                never,
            ),
            // probe32 (red-dsn-userinfo-without-scheme): Apache Pulsar's
            // token authentication parameters, `authParams=token:X`
            // (`file:…` names a file and stays).
            rule(
                &["token:"],
                r#"(?i)(?:\b(?:authParams|brokerClientAuthenticationParameters|authenticationParameters)["']?[ \t]*[=:][ \t]*["']?token:)(?P<v>[^\s'",]+)"#,
                |v| v.starts_with("file:"),
            ),
            // probe32 (red-command-line-positions): ngrok's authtoken
            // (`ngrok config add-authtoken X`, v2's `ngrok authtoken X`),
            // `mysqladmin password X`, FreeRDP's `/p:X`, Python's basic auth tuple (`auth=("u",
            // "X")`, `HTTPBasicAuth("u", "X")`; a variable stays).
            rule(
                &["authtoken"],
                r#"(?:\bngrok[ \t]+(?:config[ \t]+add-authtoken|authtoken)[ \t]+(?:--?[A-Za-z-]+(?:[= ][^\s-]\S*)?[ \t]+)*)(?P<v>'[^'\n]*'|"[^"\n]*"|[^\s'";|&]+)"#,
                never,
            ),
            // `mysqladmin [options] password X` sets the new password.
            rule(
                &["mysqladmin"],
                r#"(?:\bmysqladmin\b[^\n|;&]*?[ \t]password[ \t]+)(?P<v>'[^'\n]*'|"[^"\n]*"|[^\s'";|&]+)"#,
                never,
            ),
            rule(
                &["/p:"],
                r#"(?i)(?:\b(?:x|wl|sdl-)?freerdp3?\b[^\n]*?[ \t]/p:)(?P<v>'[^'\n]*'|"[^"\n]*"|[^\s'"]+)"#,
                never,
            ),
            rule(
                &["auth=(", "auth = (", "Auth("],
                r#"(?:(?:\bauth[ \t]*=[ \t]*\(|\bHTTP(?:Basic|Digest)Auth\()[ \t]*(?:'[^'\n]*'|"[^"\n]*"|[A-Za-z_][A-Za-z0-9_.]*)[ \t]*,[ \t]*)(?P<v>'[^'\n]*'|"[^"\n]*")"#,
                never,
            ),
            // The same set with the `uci` command (`uci set
            // wireless.r0.key='X'`, a provisioning script's).
            rule(
                &["uci "],
                r#"(?m)(?:\buci[ \t]+(?:-q[ \t]+)?(?:set|add_list)[ \t]+['"]?[^\s.=]+\.[^\s.=]+\.key[1-4]?=)(?P<v>'[^'\n]*'|"[^"\n]*"|[^\s'"]+)"#,
                |v| v.trim_start_matches(['\'', '"']).starts_with('/'),
            ),
            // probe35 (red-powershell-securestring-and-package-api-keys):
            // a plain text piped into `ConvertTo-SecureString` (`'X' |
            // ConvertTo-SecureString -AsPlainText -Force`; its `-String`
            // and `-AsPlainText X` forms are the `gh_secret` rule's), and
            // the API keys `choco apikey --key X` and `nuget setapikey X`
            // save (a variable stays).
            rule(
                &["ecureString", "ecurestring", "ECURESTRING"],
                r#"(?P<v>"[^"\n]*"|'[^'\n]*')(?:[ \t]*\|[ \t]*(?i:convertto-securestring)\b)"#,
                shell_variable,
            ),
            rule(
                &["apikey", "Apikey", "ApiKey", "APIKEY", "apiKey"],
                r#"(?i)(?:\b(?:choco|chocolatey|cinst)(?:\.exe)?[ \t]+(?:apikey|setapikey)\b[^\n|;&]*?[ \t](?:--key|-k|--api-key|--apikey)(?:=|[ \t]+))(?P<v>"[^"\n]*"|'[^'\n]*'|[^\s"'|;&]+)"#,
                shell_variable,
            ),
            rule(
                &["setapikey", "SetApiKey", "setApiKey", "SETAPIKEY"],
                r#"(?i)(?:\bnuget(?:\.exe)?[ \t]+setapikey[ \t]+)(?P<v>"[^"\n]*"|'[^'\n]*'|[^\s"'|;&-][^\s|;&]*)"#,
                shell_variable,
            ),
            // probe35 (red-self-hosted-app-key-names): coturn's static
            // long-term user, `user=NAME:X` (or `NAME:0xKEY`), in a text
            // of coturn's options (elsewhere `user=www-data:www-data` is
            // a user and a group).
            rule(
                &["lt-cred-mech", "auth-secret", "turnserver", "listening-port"],
                r"(?m)^(?:[ \t]*user[ \t]*=[ \t]*[^:\s]+:)(?P<v>\S+)",
                never,
            ),
            // probe35 (red-netplan-wireguard-keys): netplan's WireGuard
            // keys as a flow map, `keys: {public: …, shared: X}`.
            rule(
                &["key: {", "keys: {", "key\": {", "keys\": {"],
                r#"(?:\bkeys?["']?[ \t]*:[ \t]*\{(?:[^{}\n]*?[,\s])?["']?(?:private|shared)["']?[ \t]*:[ \t]*)(?P<v>"[^"\n]*"|'[^'\n]*'|[^\s,}]+)"#,
                |v| matches!(v, "true" | "false" | "null" | "~"),
            ),
            // probe35 (red-erlang-distribution-cookies): `erl -setcookie
            // X` and a release's `vm.args` line `-setcookie X`.
            rule(
                &["-setcookie"],
                r#"(?:(?:^|[\s'"\[,])-setcookie[ \t]+)(?P<v>"[^"\n]*"|'[^'\n]*'|[^\s'",\]]+)"#,
                shell_variable,
            ),
            // probe35 (red-clickhouse-operator-user-paths): the Altinity
            // ClickHouse operator's `users:` map keys a setting by its path,
            // `NAME/password: X` (`/password_sha256_hex`); the text mode's
            // key pattern holds no `/` (the semantic walk reads the key).
            rule(
                &["/password"],
                r#"(?m)(?:^[ \t]*["']?[A-Za-z0-9_.\-]+/(?P<key>password[A-Za-z0-9_]*)["']?[ \t]*:[ \t]*)(?P<v>"[^"\n]*"|'[^'\n]*'|[^\s#]+)"#,
                never,
            ),
            // red38 (red-fluent-bit-header-directives): Fluent Bit's `http`
            // (and `loki`, `splunk`) output `Header NAME VALUE`, a header
            // that authenticates (`Header X-Auth-Token X`, `Header
            // Authorization Bearer X`; a `NAME` the key rules read): the
            // value to the line's end.
            rule(
                &["Header", "header", "HEADER"],
                r#"(?m)(?:^[ \t]*(?:[Hh]eader|HEADER)[ \t]+(?P<key>[A-Za-z][A-Za-z0-9_\-]*)[ \t]+)(?P<v>[!-"$-~](?:[ -"$-~]*[!-"$-~])?)"#,
                shell_variable,
            ),
            // red38 (red-nginx-api-key-maps): NGINX's API gateway pattern,
            // `map $http_x_api_key $api_client { "KEY" client; }`: the
            // API keys are the map's quoted keys. Read in a text whose
            // map reads an API-key header or argument; a regex key (`~…`)
            // stays, and so does a key shorter than 8 characters.
            rule(
                &[
                    "$http_x_api_key",
                    "$http_apikey",
                    "$http_api_key",
                    "$arg_api_key",
                    "$arg_apikey",
                    "$http_x_auth_token",
                ],
                r#"(?m)(?:^[ \t]*|[{;][ \t]*)(?P<v>"[A-Za-z0-9_.+/=\-]{8,}"|'[A-Za-z0-9_.+/=\-]{8,}')(?:[ \t]+[^ \t\r\n;]+[ \t]*;)"#,
                never,
            ),
            // red40 (red-nginx-if-credential-comparisons): nginx's
            // `if ($http_x_internal_key != "X")` (`=` too; `$arg_…`,
            // `$cookie_…`): a request checked against a literal key,
            // when the variable names a key, token, secret or password
            // (a regex match, `~`, stays).
            rule(
                &["$http_", "$arg_", "$cookie_"],
                r#"(?:\bif[ \t]*\([ \t]*\$(?:http|arg|cookie)_(?:[a-z0-9_]*_)?(?:key|apikey|token|secret|auth|authorization|password|passwd|pass)[ \t]*!?=[ \t]*)(?P<v>"[^"\n]*"|'[^'\n]*'|[^\s)]+)"#,
                never,
            ),
            // red40 (red-tsig-key-options): the BIND tools' `-y
            // [ALGORITHM:]NAME:SECRET` (`nsupdate`, `dig`, `kdig`,
            // `knsupdate`, `host`), a TSIG key given on the command line.
            rule(
                &["-y"],
                r#"(?:\b(?:nsupdate|knsupdate|dig|kdig|host)\b[^\n;|&]*?[ \t]-y[ \t]*["']?(?:hmac-[A-Za-z0-9]+:)?[^\s:"']+:)(?P<v>[^\s"']+)"#,
                shell_variable,
            ),
            // red40 (red-caddy-dns-provider-token): Caddy's `dns PROVIDER
            // TOKEN` (in a `tls` block, and the global `acme_dns`): the
            // provider module's API token as its one argument; a
            // placeholder (`{env.CF_API_TOKEN}`) stays, and so does a value
            // that reads as a word or an address.
            rule(
                &["dns "],
                r#"(?m)(?:^[ \t]*(?:acme_)?dns[ \t]+[a-z][a-z0-9_]*[ \t]+)(?P<v>[^\s{}]+)(?:[ \t]*\r?)$"#,
                not_a_token,
            ),
            // red40 (red-cli-credential-files): Maven's
            // `settings-security.xml` master password (`{…}`, encrypted
            // with a key Maven ships: as good as plain text), Kaggle's
            // `kaggle.json` (`{"username": U, "key": X}`), and an AK/SK
            // pair's `sk` (Huawei Cloud's and other Chinese clouds'
            // `{"ak": A, "sk": X}`, `ak = A` / `sk = X`): `sk` alone is a
            // language code, beside `ak` it is the secret key.
            rule(
                &["<master>"],
                r#"(?:<master>)(?P<v>\{[^<\n]*\})(?:</master>)"#,
                never,
            ),
            rule(
                &["\"key\""],
                r#"(?:\{[ \t\r\n]*"username"[ \t]*:[ \t]*"[^"\n]*"[ \t]*,[ \t\r\n]*"key"[ \t]*:[ \t]*")(?P<v>[^"\n]+)(?:"[ \t\r\n]*\})"#,
                never,
            ),
            rule(
                &[
                    "\"ak\"", "'ak'", "ak:", "ak =", "ak=", "\"AK\"", "AK:", "AK =", "AK=",
                ],
                r#"(?:(?:^|[\s{,])["']?(?i:ak)["']?[ \t]*[:=][ \t]*["']?[A-Za-z0-9_\-]+["']?[ \t]*(?:,[ \t\r\n]*|\r?\n[ \t]*)["']?(?i:sk)["']?[ \t]*[:=][ \t]*["']?)(?P<v>[^\s"',}]+)"#,
                shell_variable,
            ),
            // red40 (red-samba-user-percent-password): Samba's clients take
            // `-U [DOMAIN\\]USER%PASSWORD` (`net ads join -U
            // administrator%X`, `smbclient`, `rpcclient`, `smbcacls`,
            // `samba-tool`), `--user=` too.
            rule(
                &["-U", "--user"],
                r#"(?:[ \t](?:-U[ \t]*|--user[= \t])["']?[^\s%"'\\/]+(?:[\\/]+[^\s%"'\\/]+)?%)(?P<v>[^\s"']+)"#,
                shell_variable,
            ),
            // red40 (red-oracle-ezconnect-password): an Oracle connect
            // string `USER/PASSWORD@//HOST:PORT/SERVICE` (EZConnect) or
            // `USER/PASSWORD@(DESCRIPTION=…)`, whatever reads it (a
            // variable, sqlldr, expdp; sqlplus and rman were read).
            rule(
                &["@//", "@(DESCRIPTION", "@(description"],
                r#"(?:(?:^|[\s"'=(,:\[])[A-Za-z][A-Za-z0-9_$#]*/)(?P<v>[^\s/@"']+)@(?://|\()"#,
                shell_variable,
            ),
            // red40 (red-token-in-url-path): a channel URL of a private
            // conda server, `https://HOST/t/TOKEN/CHANNEL` (anaconda.org,
            // Anaconda Server): the path's `t` segment carries the token.
            rule(
                &["/t/"],
                r#"(?:://(?:<redacted[^>\n]*>|[^\s"'])*?/t/)(?P<v>[A-Za-z0-9_\-]{12,})(?:/|\s|$|["'])"#,
                not_token_like,
            ),
        ]
    })
}

/// A `/t/` segment that reads as a word, not a token: shorter than 20
/// characters and no run of letters and digits mixed.
fn not_token_like(v: &str) -> bool {
    v.len() < 20 && !super::shapes::token_like(v)
}

/// A value that does not read as a token: shorter than 20 characters
/// or no run of letters and digits mixed (an address, a word).
fn not_a_token(v: &str) -> bool {
    v.len() < 20 || !super::shapes::token_like(v)
}

/// A value that is a variable of a shell or of PowerShell (`$pw`,
/// `$env:KEY`, `${KEY}`, `%KEY%`), quoted or not: the secret is elsewhere.
fn shell_variable(v: &str) -> bool {
    let v = v.trim_matches(['"', '\'']);
    v.is_empty() || v.starts_with('$') || (v.starts_with('%') && v.ends_with('%'))
}

/// Hides each [`positional_rules`] match's secret in `out`; Neo4j's
/// `SET PASSWORD FROM 'old' TO 'X'` (both passwords; the `set` rule has
/// read `FROM` as the value by then) and [`hide_insert_values`].
pub(super) fn hide_positional_secrets(out: &mut String, secret_column: impl Fn(&str) -> bool) {
    let (set, ids) = positional_needles();
    let hit = set.matches(out);
    // Indexes 0..8 are POSITIONAL_NEEDLES.
    let password = hit.matched(0) || hit.matched(1);
    let insert = (2..8).any(|i| hit.matched(i));
    // A rule without needles runs on every text (its regex is the
    // pre-check: no literal says where its shape may be).
    hide_rule_values(out, positional_rules(), ids, &hit, &secret_column);
    // red38: a key in another script (`密码: X`, `пароль = X`, a lookalike
    // `pаssword: X`), which the line rules' key (ASCII letters) does not
    // read. Most texts are ASCII: one check skips the regex.
    if !out.is_ascii() {
        hide_non_ascii_keys(out, &secret_column);
    }
    if password {
        static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
        let re = RE.get_or_init(|| {
            Regex::new(r#"(?i)(\bSET[ \t]+PASSWORD[ \t]+)(?:FROM|<redacted>)([ \t]+)(?:'[^'\n]*'|"[^"\n]*"|<redacted>)([ \t]+)(TO)([ \t]+)(?:'[^'\n]*'|"[^"\n]*"|<redacted>)"#)
                .expect("static regex is valid")
        });
        replace_in(out, re, |c: &regex::Captures| {
            let from = if &c[4] == "to" { "from" } else { "FROM" };
            format!(
                "{}{from}{}{OLD}{}{}{}{OLD}",
                &c[1], &c[2], &c[3], &c[4], &c[5]
            )
        });
    }
    if insert {
        hide_insert_values(out, secret_column);
    }
}

/// red38 (red-password-words-in-other-languages,
/// red-lookalike-key-letters): `KEY: X` and `KEY = X` lines (a list
/// item's too) whose key holds a letter outside ASCII and names a secret
/// (`secret_name`: the key rules, which read other languages' words and
/// lookalike letters). A block scalar's indicator, a boolean or null stays.
fn hide_non_ascii_keys(out: &mut String, secret_name: impl Fn(&str) -> bool) {
    // By hand, not a regex: a Unicode class's automaton costs more to
    // build than the few lines it reads.
    let mut hidden: Vec<(usize, usize)> = Vec::new();
    let mut at = 0;
    for line in out.split_inclusive('\n') {
        let start = at;
        at += line.len();
        if line.is_ascii() {
            continue;
        }
        let body = line.trim_end_matches(['\n', '\r']);
        let rest = body.trim_start_matches([' ', '\t']);
        let rest = rest
            .strip_prefix('-')
            .filter(|r| r.starts_with([' ', '\t']))
            .map_or(rest, |r| r.trim_start_matches([' ', '\t']));
        let rest = rest.trim_start_matches(['"', '\'']);
        let Some(sep) = rest.find([':', '=']) else {
            continue;
        };
        let key = rest[..sep]
            .trim_end_matches([' ', '\t'])
            .trim_end_matches(['"', '\'']);
        if key.is_empty()
            || key.is_ascii()
            || key.contains(|c: char| c.is_whitespace() || "#[]{},".contains(c))
        {
            continue;
        }
        let value = rest[sep + 1..].trim_start_matches([' ', '\t']);
        let value = match value.chars().next() {
            Some(q @ ('"' | '\'')) => value[1..].find(q).map_or(value, |e| &value[..e + 2]),
            _ => value.split([' ', '\t', '#']).next().unwrap_or(""),
        };
        let shown = matches!(
            value,
            "" | "|" | ">" | "|-" | ">-" | "|+" | ">+" | "true" | "false" | "null" | "~"
        ) || value.contains(OLD);
        if !shown && secret_name(key) {
            let v = start + (value.as_ptr() as usize - line.as_ptr() as usize);
            hidden.push((v, v + value.len()));
        }
    }
    for (s, e) in hidden.into_iter().rev() {
        out.replace_range(s..e, OLD);
    }
}

/// `INSERT INTO t (name, password) VALUES ('a', 'X'), ('b', 'Y')`: the
/// value in each row at a secret-named column's position, whole (a call
/// such as `crypt('X', gen_salt('bf'))` too); a bind parameter (`?`, `$1`,
/// `:pw`, `%s`), `NULL` and `DEFAULT` are not secrets. The dialects'
/// spellings of the same statement too: MySQL's `REPLACE INTO`, its
/// `LOW_PRIORITY`/`HIGH_PRIORITY`/`DELAYED` modifiers and `VALUE`,
/// SQLite's `INSERT OR REPLACE`, PostgreSQL's table alias and
/// `OVERRIDING SYSTEM VALUE`.
fn hide_insert_values(out: &mut String, secret_column: impl Fn(&str) -> bool) {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(concat!(
            r"(?i)\b(?:insert|replace)",
            r"(?:[ \t]+(?:ignore|low_priority|high_priority|delayed|or[ \t]+(?:replace|ignore|abort|fail|rollback)))*",
            r"[ \t]+into[ \t]+[^\s(]+(?:[ \t]+(?:as[ \t]+)?[A-Za-z_][A-Za-z0-9_]*)?",
            r"[ \t\r\n]*\(([^()]*)\)[ \t\r\n]*",
            r"(?:overriding[ \t]+(?:system|user)[ \t]+value[ \t\r\n]+)?values?[ \t\r\n]*",
        ))
            .expect("static regex is valid")
    });
    let mut hidden: Vec<(usize, usize)> = Vec::new();
    for c in re.captures_iter(out) {
        let secret: Vec<bool> = c[1]
            .split(',')
            .map(|col| secret_column(col.trim().trim_matches(['"', '`', '[', ']', '\''])))
            .collect();
        if !secret.contains(&true) {
            continue;
        }
        for items in value_rows(out, c.get(0).map_or(0, |m| m.end())) {
            for (n, &(s, e)) in items.iter().enumerate() {
                let item = &out[s..e];
                let bind = item == "?"
                    || item.starts_with(['$', ':', '%', '@'])
                    || item.eq_ignore_ascii_case("null")
                    || item.eq_ignore_ascii_case("default")
                    || item.is_empty()
                    || item == OLD;
                if secret.get(n) == Some(&true) && !bind {
                    hidden.push((s, e));
                }
            }
        }
    }
    for (s, e) in hidden.into_iter().rev() {
        out.replace_range(s..e, OLD);
    }
}

/// The items of each `VALUES` row from `start` (the first row's `(`):
/// `(` items `)`, then `,` and the next row, blanks between.
pub(super) fn value_rows(text: &str, start: usize) -> Vec<Vec<(usize, usize)>> {
    let bytes = text.as_bytes();
    let mut rows = Vec::new();
    let mut i = start;
    while i < bytes.len() && bytes[i] == b'(' {
        let (items, end) = row_items(text, i + 1);
        rows.push(items);
        i = end;
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if i < bytes.len() && bytes[i] == b',' {
            i += 1;
            while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                i += 1;
            }
        } else {
            break;
        }
    }
    rows
}

/// The items of a `VALUES` row from `start` (after its `(`), trimmed, and
/// the offset after its `)` (or the text's end): commas inside quotes
/// (`'…'`, `"…"`, a doubled quote escaping one) and inside parentheses do
/// not split.
fn row_items(text: &str, start: usize) -> (Vec<(usize, usize)>, usize) {
    let bytes = text.as_bytes();
    let mut items = Vec::new();
    let mut depth = 0usize;
    let mut quote: Option<u8> = None;
    let mut item_start = start;
    let mut i = start;
    let trimmed = |s: usize, e: usize| {
        let t = &text[s..e];
        let s2 = s + (t.len() - t.trim_start().len());
        (s2, s2 + t.trim().len())
    };
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) if b == b'\\' => i += 1,
            Some(_) => {}
            None => match b {
                b'\'' | b'"' => quote = Some(b),
                b'(' => depth += 1,
                b')' if depth == 0 => {
                    items.push(trimmed(item_start, i));
                    return (items, i + 1);
                }
                b')' => depth -= 1,
                b',' if depth == 0 => {
                    items.push(trimmed(item_start, i));
                    item_start = i + 1;
                }
                _ => {}
            },
        }
        i += 1;
    }
    (items, bytes.len())
}
