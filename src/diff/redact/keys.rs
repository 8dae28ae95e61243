//! Key names: the rules, besides the key patterns, that say a key (or a
//! header, a directive, a query parameter) holds a secret.

use regex::Regex;

use super::structural::is_name_list_key;
use super::{KEYWORD_PATTERN, PRODUCT_KEY_PATTERN, REFERENCE_WORDS};

/// Query parameters that sign a URL, so that the URL is a credential:
/// Azure SAS `sig`, S3 and GCS presigned `X-Amz-Signature` /
/// `X-Goog-Signature`, CloudFront's `Signature`.
pub(super) fn signature_param(name: &str) -> bool {
    ["sig", "signature", "x-amz-signature", "x-goog-signature"]
        .iter()
        .any(|p| name.eq_ignore_ascii_case(p))
}

/// The private members of a JSON Web Key (RFC 7518 section 6): an RSA
/// key's `d`, `p`, `q`, `dp`, `dq`, `qi`, an EC or OKP key's `d`, a
/// symmetric (`oct`) key's `k`. Read only in a map or text that holds a
/// `kty` (OIDC signing keys of Dex, Hydra, oauth2-proxy in a ConfigMap).
pub(super) fn jwk_private(key: &str) -> bool {
    matches!(
        key.trim_matches(['"', '\'']),
        "d" | "p" | "q" | "dp" | "dq" | "qi" | "k"
    )
}

/// A Bundler source host (or URL) whose credentials `bundle config HOST
/// user:X` sets: not one of the dotted settings (`build.nokogiri`,
/// `mirror.URL`, `local.GEM`, `gem.test`).
pub(super) fn bundler_host(name: &str) -> bool {
    name.contains('.')
        && !["build.", "mirror.", "local.", "gem."]
            .iter()
            .any(|p| name.starts_with(p))
}

/// Bundler's credentials for a source host in the environment or in
/// `.bundle/config`: `BUNDLE_GEMS__EXAMPLE__COM` (the host's dots written
/// `__`), not the settings of that shape (`BUNDLE_BUILD__NOKOGIRI`,
/// `BUNDLE_MIRROR__…`, `BUNDLE_LOCAL__…`, `BUNDLE_GEM__…`)
/// (<https://bundler.io/man/bundle-config.1.html>, "Credentials for gem
/// sources").
pub(super) fn bundler_host_key(key: &str) -> bool {
    key.strip_prefix("BUNDLE_").is_some_and(|host| {
        host.contains("__")
            && !["BUILD__", "MIRROR__", "LOCAL__", "GEM__"]
                .iter()
                .any(|p| host.starts_with(p))
    })
}

/// A secret word of [`Redactor::blank_pair`](super::Redactor::blank_pair)'s keys, in any case: that
/// rule's pre-check.
pub(super) fn secret_word_re() -> &'static Regex {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?i)pass|pw|secret|token|key|credential|auth|psk")
            .expect("static regex is valid")
    })
}

/// Directives whose name holds a secret word but whose value is not a
/// secret ([`Redactor::blank_pair`](super::Redactor::blank_pair)): nginx's `*_pass` (an upstream
/// address or location) and `server_tokens` (`on`/`off`), Apache's
/// `SSLPassPhraseDialog` (how to ask for one).
pub(super) const NOT_SECRET_DIRECTIVES: &[&str] = &[
    "proxy_pass",
    "fastcgi_pass",
    "uwsgi_pass",
    "scgi_pass",
    "grpc_pass",
    "memcached_pass",
    "upload_pass",
    "server_tokens",
    "sslpassphrasedialog",
];

/// HTTP header names whose value is a credential: in a `{name, value}`
/// (or `{key, value}`) pair, as Kubernetes probe `httpHeaders` and
/// Envoy/Istio header lists write headers, the `Authorization` header rule
/// sees the value without the name.
pub(super) fn credential_header(name: &str) -> bool {
    [
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
        "x-honeycomb-team",
        // Issue 19: API-key headers the key patterns do not read
        // (Artifactory, Cloudflare's global key, Azure API Management,
        // Datadog's application key, New Relic's insert, license and
        // query keys, Parse's master key).
        "x-jfrog-art-api",
        "x-auth-key",
        "ocp-apim-subscription-key",
        "dd-application-key",
        "x-insert-key",
        "x-license-key",
        "x-query-key",
        "x-parse-master-key",
        // red40: Artifactory's header without its `X-` (as curl examples
        // write it).
        "jfrog-art-api",
    ]
    .iter()
    .any(|h| name.eq_ignore_ascii_case(h))
        || custom_key_header(name)
}

/// Issue 19 (red40, red-custom-key-headers): a custom header (`X-…`)
/// whose last word is `key` or `auth`: the API-key headers services and
/// gateways invent (`X-Partner-Key`, `X-Backend-Key`, `X-Internal-Key`,
/// `X-Client-Key`, `X-Sentry-Auth`), of which the list above names the
/// well-known ones. `X-Cache-Key` (a cache's key, not a credential)
/// stays.
fn custom_key_header(name: &str) -> bool {
    let Some(rest) = name
        .get(..2)
        .filter(|p| p.eq_ignore_ascii_case("x-"))
        .map(|_| &name[2..])
    else {
        return false;
    };
    let Some((head, last)) = rest.rsplit_once('-') else {
        return false;
    };
    !head.is_empty()
        && (last.eq_ignore_ascii_case("key") || last.eq_ignore_ascii_case("auth"))
        && !head.eq_ignore_ascii_case("cache")
        && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// A JAAS configuration's `user_NAME="X"` option (Kafka's
/// `PlainLoginModule`, ZooKeeper's `DigestLoginModule`): the password of
/// user NAME (re-probe 17). Read only in a text naming a `LoginModule`:
/// elsewhere `user_agent` or `user_name` is not a password.
pub(super) fn jaas_user(key: &str) -> bool {
    key.strip_prefix("user_")
        .is_some_and(|name| !name.is_empty())
}

/// [`KEYWORD_PATTERN`]'s rule.
pub(super) fn keyword_in_key(key: &str) -> bool {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    static PRODUCT: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| Regex::new(KEYWORD_PATTERN).expect("static regex is valid"));
    let product = || {
        let has_key = key
            .as_bytes()
            .windows(3)
            .any(|w| w.eq_ignore_ascii_case(b"key"));
        let re =
            PRODUCT.get_or_init(|| Regex::new(PRODUCT_KEY_PATTERN).expect("static regex is valid"));
        has_key.then(|| re.find_iter(key).last()).flatten()
    };
    // The later of the two rules' last words.
    let Some(last) = [re.find_iter(key).last(), product()]
        .into_iter()
        .flatten()
        .max_by_key(|m| m.end())
    else {
        return false;
    };
    if is_name_list_key(key) {
        return false;
    }
    match last_word(&key[last.end()..]) {
        None => true,
        Some(word) => !REFERENCE_WORDS.iter().any(|w| word.eq_ignore_ascii_case(w)),
    }
}

/// red43: the part of a key before its secret word says that the key
/// names an object rather than holding a value: Helm charts' `existing`
/// (`existingSecret`, `auth.existingSecretPasswordKey`: the name of a
/// Secret the chart reads, and of its key) and the Vault agent injector's
/// `agent-inject-` (`vault.hashicorp.com/agent-inject-secret-db:
/// database/creds/app`, a path in Vault). Read in the key's last segment
/// (after `.`, `/`, `:`).
pub(super) fn names_an_existing_object(key: &str) -> bool {
    let segment = key.rsplit(['.', '/', ':']).next().unwrap_or(key);
    let lower = segment.to_ascii_lowercase();
    // The text rules read a key from a `-` inside it (`--password`):
    // `agent-inject-secret-db` reaches them as `inject-secret-db`.
    lower.starts_with("existing")
        || lower.starts_with("agent-inject-")
        || lower.starts_with("inject-secret")
}

/// The last word of a key's tail: after its last character that is not a
/// letter or digit, and after its last lower-case-to-capital step
/// (`KeyRef` gives `Ref`, `_MOUNT_PATH` gives `PATH`, `TTL` gives `TTL`).
pub(super) fn last_word(tail: &str) -> Option<&str> {
    let tail = tail.trim_end_matches(|c: char| !c.is_alphanumeric());
    if tail.is_empty() {
        return None;
    }
    let start = tail
        .char_indices()
        .rev()
        .find(|(_, c)| !c.is_alphanumeric())
        .map_or(0, |(i, c)| i + c.len_utf8());
    let word = &tail[start..];
    let b = word.as_bytes();
    let cut = (1..b.len())
        .rev()
        .find(|&i| {
            b[i].is_ascii_uppercase()
                && (b[i - 1].is_ascii_lowercase() || b[i - 1].is_ascii_digit())
        })
        .unwrap_or(0);
    Some(&word[cut..])
}

/// Whether a part of a name ([`Redactor::scrub_name`](super::Redactor::scrub_name)) can hold what the
/// rules hide: a `key=value`, `:`, `@` or `%`, or a run of 16 letters and
/// digits with a digit or a capital after a small letter (a token's
/// body: every credential shape has one). Names are scrubbed once per
/// changed file and object, so most skip the rules.
pub(super) fn name_may_hold_secret(part: &str) -> bool {
    if part.contains(['=', ':', '@', '%']) {
        return true;
    }
    part.split(|c: char| !c.is_ascii_alphanumeric()).any(|run| {
        run.len() >= 16
            && (run.bytes().any(|b| b.is_ascii_digit())
                || run
                    .as_bytes()
                    .windows(2)
                    .any(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase()))
    })
}

/// probe26 (r-redact-key-names-replica-set-csrf-sec-key-sonar-login):
/// key names of secrets that the word rules do not read: the MongoDB
/// replica set's shared key (`MONGODB_REPLICA_SET_KEY`, Bitnami's
/// `auth.replicaSetKey`), a `CSRF_KEY` (Harbor), Fluentd's S3 `aws_sec_key`,
/// SonarScanner's `sonar.login` (a token); WordPress's keys and salts
/// (`LOGGED_IN_KEY`, `NONCE_SALT`, `WORDPRESS_AUTH_SALT`; `AUTH_KEY` and
/// `SECURE_AUTH_KEY` were read already), Rails' Active Record encryption
/// keys (`ACTIVE_RECORD_ENCRYPTION_PRIMARY_KEY`). Run only on keys holding
/// `key`, `login` or `salt`.
pub(super) fn more_secret_key_names(key: &str) -> bool {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let lower = key.to_ascii_lowercase();
    if !lower.contains("key") && !lower.contains("login") && !lower.contains("salt") {
        return false;
    }
    RE.get_or_init(|| {
        Regex::new(r"(?i)(?:replica[_.-]?set[_.-]?key|csrf[_.-]?key|(?:^|[_.-])sec[_.-]?key|^-?D?sonar[_.-]login|(?:^|[_.-])(?:(?:secure_)?auth_salt|logged_in_(?:key|salt)|nonce_(?:key|salt))|encryption[_.-]?(?:primary|deterministic)[_.-]?key)$")
            .expect("static regex is valid")
    })
    .is_match(key)
}

/// Probe 31 (a kadet input dumping the environment): a personal access
/// token under a name that says so only by `PAT` (`GH_PAT`, `GITHUB_PAT`,
/// `ADO_PAT`, a forge's `gitlab_pat`): the last word `PAT` in upper case,
/// as environment variables are written, or `pat` after a forge's name
/// (a lower-case `*_pat` is also a pattern's abbreviation, `ignore_pat`).
pub(super) fn personal_access_token_key(key: &str) -> bool {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    if !key.ends_with("PAT") && !key.to_ascii_lowercase().ends_with("pat") {
        return false;
    }
    RE.get_or_init(|| {
        Regex::new(r"(?:^|[_.-])PAT$|(?i:(?:^|[_.-])(?:github|gh|gitlab|gl|ado|azure[_.-]?devops|devops|bitbucket|gitea|forgejo|codeberg|docker(?:hub)?|quay|huggingface|hf)[_.-]?pat)$")
            .expect("static regex is valid")
    })
    .is_match(key)
}

/// probe32 (red-salt-and-pepper-key-names): salts and peppers that key
/// an HMAC or a password hash: Drupal's `hash_salt` (also Umami's
/// `HASH_SALT`), Matomo's `salt`, Mattermost's `PublicLinkSalt` and
/// `InviteSalt`, Icinga's `TicketSalt`, Phoenix's `signing_salt`, Devise's
/// `pepper`. Other salts stay: `WP_CACHE_KEY_SALT` is a cache prefix, and
/// `salt_rounds`/`saltLength` are numbers of a hash's settings.
pub(super) fn salt_or_pepper_key(key: &str) -> bool {
    let lower = key
        .trim_end_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_ascii_lowercase();
    let whole_word = |head: &str| {
        head.is_empty() || head.ends_with(|c: char| !c.is_ascii_alphanumeric()) || {
            // A camel-case word: `config.Pepper`, `appPepper`.
            let at = head.len();
            key.as_bytes().get(at).is_some_and(u8::is_ascii_uppercase)
        }
    };
    if let Some(head) = lower.strip_suffix("pepper") {
        return whole_word(head);
    }
    let Some(head) = lower.strip_suffix("salt") else {
        return false;
    };
    let head = head.trim_end_matches(['_', '.', '-']);
    head.is_empty() && whole_word(&lower[..lower.len() - 4])
        || [
            "hash",
            "ticket",
            "publiclink",
            "public_link",
            "invite",
            "signing",
        ]
        .iter()
        .any(|w| head.strip_suffix(w).is_some_and(whole_word))
}

/// probe32 (red-machinekey-credential-reference-certificatekey): ASP.NET's
/// `<machineKey validationKey="X" decryptionKey="X">` (they sign and
/// encrypt the auth cookie and ViewState), kubeadm's `certificateKey` (it
/// decrypts the control plane's uploaded certificates; nginx's
/// `ssl_certificate_key` is a path and stays), WildFly's
/// `<credential-reference clear-text="X"/>`.
pub(super) fn key_file_secret_names(key: &str) -> bool {
    let key = key.trim_matches(['"', '\'']);
    [
        "validationKey",
        "decryptionKey",
        "certificateKey",
        "certificate_key",
        "clear-text",
    ]
    .iter()
    .any(|n| key.eq_ignore_ascii_case(n))
}

/// probe32 (red-snmp-community): an SNMP v1/v2c community, the devices'
/// password, as a key (`community: X` in snmp_exporter's `auths`,
/// Telegraf's `community = "X"`, `SNMP_COMMUNITY`); `communities` (BGP's)
/// and `rocommunity` (net-snmp's directive, read elsewhere) are not it.
pub(super) fn snmp_community_key(key: &str) -> bool {
    let key = key.trim_matches(['"', '\'']);
    let Some(at) = key.len().checked_sub(9) else {
        return false;
    };
    key.is_char_boundary(at)
        && key[at..].eq_ignore_ascii_case("community")
        && (at == 0
            || key[..at].ends_with(['_', '.', '-'])
            || (key.as_bytes()[at] == b'C' && key.as_bytes()[at - 1].is_ascii_lowercase()))
}

/// probe32 (red-terse-vendor-key-names): acme.sh's DNS API credentials,
/// `CF_Key`, `GD_Key`, `Ali_Key` (a provider's short name and `_Key` in
/// that letter case), `OVH_AK`/`OVH_AS`/`OVH_CK`, also as `account.conf`
/// saves them (`SAVED_CF_Key`).
pub(super) fn acme_sh_key(key: &str) -> bool {
    let key = key.trim_matches(['"', '\'']);
    let key = key.strip_prefix("SAVED_").unwrap_or(key);
    if matches!(key, "OVH_AK" | "OVH_AS" | "OVH_CK") {
        return true;
    }
    key.strip_suffix("_Key").is_some_and(|name| {
        (1..=12).contains(&name.len())
            && name.as_bytes()[0].is_ascii_alphabetic()
            && name.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

/// Package managers' credential keys the key patterns do not read (issue
/// 19, red11): Yarn 2+'s `npmAuthIdent` (`user:password`, also
/// `YARN_NPM_AUTH_IDENT`), Composer's `github-oauth` and `gitlab-oauth`
/// maps of host to token (`auth.json`, `COMPOSER_AUTH`; its
/// `gitlab-token`, `bearer` and `http-basic` passwords were read already).
pub(super) fn package_manager_auth_key(key: &str) -> bool {
    let k = key.as_bytes();
    let ends = |w: &[u8]| k.len() >= w.len() && k[k.len() - w.len()..].eq_ignore_ascii_case(w);
    (ends(b"authident") || ends(b"auth_ident") || ends(b"auth-ident"))
        || key.eq_ignore_ascii_case("github-oauth")
        || key.eq_ignore_ascii_case("gitlab-oauth")
}

/// probe35 (red-self-hosted-app-key-names): secrets of self-hosted apps'
/// configurations under names no word rule reads: Harbor's `xsrfKey`
/// (`core.xsrfKey`, `CSRF_KEY` was probe26's), nslcd's `rootpwmodpw`,
/// Zulip's `zulip-secrets.conf` `camo_key`, `avatar_salt` and
/// `zulip_org_key`, Concourse's `CONCOURSE_ADD_LOCAL_USER` (`user:X,…`,
/// also `--add-local-user`; the whole list, as `auth: user:X` is hidden).
pub(super) fn app_secret_key_names(key: &str) -> bool {
    let lower = key
        .trim_matches(['"', '\''])
        .trim_start_matches('-')
        .to_ascii_lowercase();
    let ends = |w: &str| {
        lower.strip_suffix(w).is_some_and(|head| {
            head.is_empty() || head.ends_with(['_', '.', '-']) || head.ends_with("core")
        })
    };
    ["xsrfkey", "xsrf_key", "xsrf-key"].iter().any(|w| ends(w))
        || ["add_local_user", "add-local-user"].iter().any(|w| ends(w))
        || matches!(
            lower.as_str(),
            "rootpwmodpw" | "camo_key" | "avatar_salt" | "zulip_org_key"
        )
}

/// probe35 (red-erlang-distribution-cookies): the cookie that lets an
/// Erlang node join a cluster (and run code on every node): EMQX's
/// `node.cookie`, a `distribution_cookie` (`cookie` alone names an HTTP
/// cookie's settings elsewhere); `RELEASE_COOKIE`/`ERLANG_COOKIE` are
/// read by the product words.
pub(super) fn erlang_cookie_key(key: &str) -> bool {
    let key = key.trim_matches(['"', '\'']);
    ["node.cookie", "distribution_cookie", "distribution.cookie"]
        .iter()
        .any(|n| key.eq_ignore_ascii_case(n))
}

/// red36 (red-cipher-and-payment-key-names): keys named for a cipher or a
/// payment API that no word rule reads: `aes_key`/`aesKey` (WeChat's
/// `EncodingAESKey` too), Roundcube's `des_key`, Apache Shiro's
/// `rememberMeManager.cipherKey`, WeChat Pay's `mchKey` and `apiV3Key`,
/// Authorize.net's `transactionKey`, Instana's `INSTANA_AGENT_KEY` and
/// `INSTANA_DOWNLOAD_KEY`, ServerChan's `SENDKEY`, Netdata's `api key`
/// (with a blank, in `stream.conf`). The word must start a word of the
/// key: `nodes_key` is not `des`, `mydes_key` is not either; `key` ends
/// the key (`aes_key_path` names a file).
pub(super) fn cipher_and_payment_key_names(key: &str) -> bool {
    let key = key.trim_matches(['"', '\'']);
    let lower = key.to_ascii_lowercase();
    let Some(head) = lower.strip_suffix("key") else {
        return false;
    };
    let words = [
        "aes",
        "encodingaes",
        "des",
        "cipher",
        "mch",
        "apiv3",
        "api_v3",
        "transaction",
        "agent",
        "download",
        "send",
        "api ",
    ];
    let head = head.strip_suffix(['_', '.', '-']).unwrap_or(head);
    words.iter().any(|w| {
        head.strip_suffix(w).is_some_and(|before| {
            before.is_empty()
                || before.ends_with(|c: char| !c.is_ascii_alphanumeric())
                // A camel-case word: `rememberMeManager.cipherKey` is
                // read at `.`, `wxMchKey` at the capital.
                || key
                    .as_bytes()
                    .get(before.len())
                    .is_some_and(u8::is_ascii_uppercase)
                    && before.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        })
    })
}

/// red36 (red-self-hosted-identity-key-names): keys of self-hosted
/// identity services under names no word rule reads: Bitwarden's
/// `globalSettings__internalIdentityKey`, `__oidcIdentityClientKey`,
/// `__installation__key`, `__yubico__key` and `__duo__aKey` (.NET's `__`
/// separator), Duo's `skey`/`akey` (`login_duo.conf`, the integration's
/// secret; `ikey` names it), LLDAP's `LLDAP_KEY_SEED`.
pub(super) fn identity_service_key_names(key: &str) -> bool {
    let lower = key.trim_matches(['"', '\'']).to_ascii_lowercase();
    let last = lower.rsplit(['.', ':']).next().unwrap_or(&lower);
    let last = last.rsplit("__").next().unwrap_or(last);
    matches!(
        last,
        "skey" | "akey" | "internalidentitykey" | "oidcidentityclientkey"
    ) || ["installation__key", "yubico__key", "lldap_key_seed"]
        .iter()
        .any(|w| lower.ends_with(w))
}

/// compat34's over-redaction (red36): `GOOGLE_APPLICATION_CREDENTIALS`
/// names the service-account key file by its path (Google's client
/// libraries read no other value), so it is not a secret's name. A key
/// file pasted into it is still hidden by what it holds: its
/// `private_key` and PEM block, or the base64 of the whole file (a
/// credential shape).
pub(super) fn credentials_file_variable(key: &str) -> bool {
    key.trim_matches(['"', '\''])
        .eq_ignore_ascii_case("GOOGLE_APPLICATION_CREDENTIALS")
}

/// red38 (red-abbreviated-and-signing-key-names): key names of secrets
/// that the word rules do not read: the password spelled short or split
/// (`DB_PSWD`, `DB_PSWRD`, `DB_PWORD`, `DB_PASSWRD`, `DB_PASS_WORD`,
/// `FTP_UPASS`, `MAIL_LOGINPASS`), the keys that sign tokens or one-time
/// codes (`JWT_KEY`, `JWT_SIGN_KEY`, `jwtKey`, `TOTP_KEY`, an INWX
/// webhook's `otpKey`, `SIGNATURE_KEY`, `WEBHOOK_SIG_KEY`, Spring
/// Security's `remember-me.key`), DNSimple's `DNSIMPLE_OAUTH` (external-dns'
/// token variable) and Argo CD notifications' PagerDuty `serviceKeys`.
/// Read at the key's end only (`JWT_KEY_PATH` stays).
pub(super) fn abbreviated_and_signing_key_names(key: &str) -> bool {
    let key = key.trim_matches(['"', '\'']);
    // Most keys end in none of these letters: no copy, no regex for them.
    if !key.ends_with(['d', 'y', 's', 'h', 'D', 'Y', 'S', 'H']) {
        return false;
    }
    let lower = key.to_ascii_lowercase();
    // `word` as the whole key or after a separator.
    let last_is = |word: &str| {
        lower
            .strip_suffix(word)
            .is_some_and(|head| head.is_empty() || head.ends_with(['_', '.', '-']))
    };
    if [
        "pswd",
        "pswrd",
        "pwrd",
        "pword",
        "passwrd",
        "pass_word",
        "pass-word",
        "pass.word",
        "upass",
        "loginpass",
        "servicekeys",
    ]
    .iter()
    .any(|w| last_is(w))
    {
        return true;
    }
    // The words before a final `key` (or `oauth`), read as words:
    // `RFC2136_TSIG_KEY` (lego's TSIG key's name) holds no `sig`.
    if !(lower.ends_with("key") || lower.ends_with("oauth")) {
        return false;
    }
    let words = key_words(key);
    let is = |n: usize, w: &str| {
        words
            .len()
            .checked_sub(n + 1)
            .is_some_and(|i| words[i].eq_ignore_ascii_case(w))
    };
    if is(0, "key") {
        return is(1, "jwt")
            || (is(2, "jwt") && (is(1, "sign") || is(1, "signing")))
            || [
                "otp",
                "totp",
                "hotp",
                "mfa",
                "signature",
                "sig",
                "rememberme",
            ]
            .iter()
            .any(|w| is(1, w))
            || (is(2, "remember") && is(1, "me"));
    }
    is(0, "oauth") && is(1, "dnsimple")
}

/// The words of a key: split at what is not a letter or digit and at a
/// lower-case-to-capital step (`rememberMeKey`: `remember`, `Me`, `Key`).
/// Issue 19 (red40, red-enrollment-hmac-and-sse-key-names): key names
/// that hold a secret without a secret word the other rules read: a
/// final `SK` in capitals after another word (the AK/SK pairs of Chinese
/// clouds: Huawei's `HUAWEICLOUD_SDK_SK`, `OBS_SK`; a lower-case `sk`
/// is a language code in translations), a final `hmac` after another word
/// (`webhook-hmac`, Adyen's HMAC key) and `hmac` before a final `key`,
/// enrolment keys (NetBird's `--setup-key`, `enrollment_key`), and S3's
/// customer-provided encryption key (`--sse-c-key`, `SSECustomerKey`,
/// `sse_customer_key`; its `…KeyMD5` is a digest and stays).
pub(super) fn enrollment_hmac_and_sse_key_names(key: &str) -> bool {
    let key = key.trim_matches(['"', '\'']);
    if !key.ends_with(['K', 'y', 'Y', 'c', 'C']) {
        return false;
    }
    if let Some(head) = key.strip_suffix("SK") {
        return head.len() > 1 && head.ends_with(['_', '-', '.']);
    }
    let lower = key.to_ascii_lowercase();
    if let Some(head) = lower.strip_suffix("hmac") {
        return head.len() > 1 && head.ends_with(['_', '-', '.']);
    }
    let compact: String = lower
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    if compact.ends_with("sseckey") || compact.ends_with("ssecustomerkey") {
        return true;
    }
    let words = key_words(key);
    words.len() >= 2
        && words[words.len() - 1].eq_ignore_ascii_case("key")
        && ["hmac", "setup", "enrollment", "enrolment"]
            .iter()
            .any(|w| words[words.len() - 2].eq_ignore_ascii_case(w))
}

fn key_words(key: &str) -> Vec<&str> {
    key_word_spans(key).map(|(s, e)| &key[s..e]).collect()
}

/// [`key_words`] as byte ranges of the key.
fn key_word_spans(key: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let b = key.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < b.len() && !b[i].is_ascii_alphanumeric() {
            i += 1;
        }
        if i == b.len() {
            return None;
        }
        let start = i;
        i += 1;
        while i < b.len()
            && b[i].is_ascii_alphanumeric()
            && !(b[i].is_ascii_uppercase()
                && (b[i - 1].is_ascii_lowercase() || b[i - 1].is_ascii_digit()))
        {
            i += 1;
        }
        Some((start, i))
    })
}

/// red38 (red-password-words-in-other-languages): the word password in
/// languages the key patterns do not read (German, Dutch, Portuguese,
/// Spanish and French are [`KEYWORD_PATTERN`]'s): Polish `hasło`,
/// Swedish `lösenord`, Finnish `salasana`, Czech and Slovak `heslo`,
/// Hungarian `jelszó`, Turkish `şifre`, Danish `adgangskode`, Norwegian
/// `passord`, Russian and Ukrainian `пароль`, Chinese `密码`/`口令`,
/// Japanese `パスワード`, Korean `비밀번호`, Portuguese `palavra-passe`,
/// Indonesian `kata_sandi`, Croatian `lozinka`, Vietnamese `mật khẩu`,
/// Catalan `contrasenya`, Slovene `geslo`; and `parola` (Romanian,
/// Turkish, Bulgarian transliterated) as the key's last word only
/// (Italian `parola_chiave` is a keyword). Not before
/// a reference word (`passord_file` stays). An ASCII key is read by its
/// words (split at separators and at a lower-case-to-capital step:
/// `cachesLoaded` holds no `heslo`), a key in another script anywhere.
pub(super) fn password_words_in_other_languages(key: &str) -> bool {
    let key = key.trim_matches(['"', '\'']);
    let reference_after = |end: usize| {
        last_word(&key[end..])
            .is_some_and(|w| REFERENCE_WORDS.iter().any(|r| w.eq_ignore_ascii_case(r)))
    };
    if !key.is_ascii() {
        // Scripts without word breaks (`数据库密码`): the word anywhere.
        const WORDS: &[&str] = &[
            "hasło",
            "lösenord",
            "jelszó",
            "şifre",
            "пароль",
            "密码",
            "口令",
            "パスワード",
            "비밀번호",
            "mật_khẩu",
            "mật khẩu",
        ];
        let lower = key.to_lowercase();
        if WORDS.iter().any(|w| {
            lower.match_indices(w).last().is_some_and(|(i, _)| {
                let end = i + w.len();
                // `lower` has `key`'s byte offsets only when lower-casing
                // kept every length; else the whole tail is read.
                let end = if lower.len() == key.len() {
                    end
                } else {
                    key.len()
                };
                !reference_after(end)
            })
        }) {
            return true;
        }
    }
    // ASCII words, read as whole words (`cachesLoaded` holds no `heslo`):
    // split at what is not a letter or digit and at a lower-case-to-capital
    // step; two- and three-word spellings by the words before.
    const ONE: &[&str] = &[
        "haslo",
        "losenord",
        "salasana",
        "heslo",
        "jelszo",
        "sifre",
        "adgangskode",
        "passord",
        "lozinka",
        "contrasenya",
        "geslo",
        "katasandi",
        "matkhau",
        "palavrapasse",
    ];
    let (mut prev2, mut prev): (&str, &str) = ("", "");
    for (start, i) in key_word_spans(key) {
        let w = &key[start..i];
        let is = |a: &str, x: &str| a.eq_ignore_ascii_case(x);
        let found = ONE.iter().any(|o| is(w, o))
            || (is(prev, "palavra") && is(w, "passe"))
            || (is(prev, "kata") && is(w, "sandi"))
            || (is(prev, "mat") && is(w, "khau"))
            || (is(prev2, "parola") && is(prev, "d") && is(w, "ordine"));
        if found && !reference_after(i) {
            return true;
        }
        // `parola` (`parol`) only as the last word.
        if (is(w, "parola") || is(w, "parol"))
            && !key[i..].bytes().any(|c| c.is_ascii_alphanumeric())
        {
            return true;
        }
        (prev2, prev) = (prev, w);
    }
    false
}

/// red38 (red-lookalike-key-letters): a key written with letters that
/// look like Latin ones (Cyrillic `а`, `е`, `о`, `р`, `с`, `х`, `у`, `і`,
/// Greek capitals, fullwidth forms: `pаssword`, `ＰＡＳＳＷＯＲＤ`) read as
/// the Latin key it looks like; `None` when it holds none (an ASCII key
/// costs one check).
pub(super) fn lookalike_skeleton(key: &str) -> Option<String> {
    if key.is_ascii() {
        return None;
    }
    let mut changed = false;
    let skeleton: String = key
        .chars()
        .map(|c| {
            let l = match c {
                // Fullwidth ASCII (U+FF01..U+FF5E).
                '\u{ff01}'..='\u{ff5e}' => char::from_u32(c as u32 - 0xfee0).unwrap_or(c),
                'а' => 'a',
                'е' => 'e',
                'о' => 'o',
                'р' => 'p',
                'с' => 'c',
                'х' => 'x',
                'у' => 'y',
                'і' => 'i',
                'ј' => 'j',
                'ѕ' => 's',
                'ԁ' => 'd',
                'ԛ' => 'q',
                'ԝ' => 'w',
                'һ' => 'h',
                'к' => 'k',
                'т' => 't',
                'в' => 'b',
                'м' => 'm',
                'н' => 'h',
                'А' => 'A',
                'В' => 'B',
                'Е' => 'E',
                'К' => 'K',
                'М' => 'M',
                'Н' => 'H',
                'О' => 'O',
                'Р' => 'P',
                'С' => 'C',
                'Т' => 'T',
                'Х' => 'X',
                'У' => 'Y',
                'І' => 'I',
                'Ѕ' => 'S',
                'Ј' => 'J',
                'Α' => 'A',
                'Β' => 'B',
                'Ε' => 'E',
                'Ζ' => 'Z',
                'Η' => 'H',
                'Ι' => 'I',
                'Κ' => 'K',
                'Μ' => 'M',
                'Ν' => 'N',
                'Ο' => 'O',
                'Ρ' => 'P',
                'Τ' => 'T',
                'Υ' => 'Y',
                'Χ' => 'X',
                'ο' => 'o',
                'ρ' => 'p',
                'α' => 'a',
                'ν' => 'v',
                'τ' => 't',
                'κ' => 'k',
                'ι' => 'i',
                'υ' => 'u',
                _ => c,
            };
            changed |= l != c;
            l
        })
        .collect();
    // A key wholly in another script (`пароль`) is no lookalike: only a
    // key that becomes ASCII is read so.
    (changed && skeleton.is_ascii()).then_some(skeleton)
}
