//! Credential shapes: values hidden by their form whatever their key (URL
//! passwords, vendors' token formats, base64-encoded private keys) and the
//! shape rules read by their place on a line (named groups `v` / `key`,
//! regex needles).

use regex::Regex;
use std::collections::HashSet;

use super::positional::value_rows;
use super::rules::{hide_rule_values, needle_set, Rule};
use super::{replace_in, CHANGED, OLD, UNCHANGED};

/// A base64 token that starts with `-----BEGIN ` encoded (re-probe 18),
/// with the lines that carry it on when it ends its line: `base64` and
/// `openssl base64` wrap at 76 and 64 columns, and each wrapped line
/// decodes on its own (the verification of re-probe 18 read a key back
/// from them).
fn base64_pem_re() -> &'static Regex {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?m)LS0tLS1CRUdJTi[A-Za-z0-9+/]*={0,2}(?:[ \t]*\r?\n[ \t]*[A-Za-z0-9+/]+={0,2}[ \t]*\r?$)*")
            .expect("static regex is valid")
    })
}

/// Replaces each [`base64_pem_re`] token that encodes a private key.
pub(super) fn hide_base64_private_keys(out: &mut String) {
    replace_in(out, base64_pem_re(), |c: &regex::Captures| {
        if encodes_private_key(&c[0]) {
            OLD.to_string()
        } else {
            c[0].to_string()
        }
    });
}

/// Whether a [`base64_pem_re`] token's first line decodes to a private
/// key's frame (`-----BEGIN RSA PRIVATE KEY-----`, an OpenVPN static key);
/// a certificate's stays.
fn encodes_private_key(token: &str) -> bool {
    use base64::Engine;
    // 96 characters are 72 bytes: more than the longest BEGIN line.
    let first = token
        .split(['\r', '\n', ' ', '\t'])
        .next()
        .unwrap_or_default();
    let head = &first[..first.len().min(96) / 4 * 4];
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(head) else {
        return false;
    };
    let text = String::from_utf8_lossy(&bytes);
    let line = text.split('\n').next().unwrap_or_default();
    line.contains("PRIVATE KEY") || line.contains("OpenVPN")
}

/// red39 (red-gzip-base64-payloads): a gzip file base64-encoded
/// (`H4sI…`: the magic `1f 8b 08`), with the lines that carry it on when
/// `base64` wrapped it.
fn gzip_base64_re() -> &'static Regex {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?m)\bH4sI[A-Za-z0-9+/]{12,}={0,2}(?:[ \t]*\r?\n[ \t]*[A-Za-z0-9+/]+={0,2}[ \t]*\r?$)*")
            .expect("static regex is valid")
    })
}

/// At most this many bytes of a gzip payload are decompressed and read.
const GZIP_READ_LIMIT: u64 = 1 << 20;

/// Replaces each [`gzip_base64_re`] token whose decompressed text
/// `holds_secret` says holds a secret (a `.env`, a kubeconfig, a script
/// piped through `base64 -d | gunzip`), or that holds another such token
/// (not read further); a token that does not decode, or decodes to binary,
/// stays. Reading stops at [`GZIP_READ_LIMIT`] bytes.
pub(super) fn hide_gzip_base64(out: &mut String, holds_secret: impl Fn(&str) -> bool) {
    use base64::Engine;
    use std::io::Read;
    replace_in(out, gzip_base64_re(), |c: &regex::Captures| {
        let b64: String = c[0].chars().filter(|ch| !ch.is_whitespace()).collect();
        let engine = base64::engine::general_purpose::GeneralPurpose::new(
            &base64::alphabet::STANDARD,
            base64::engine::GeneralPurposeConfig::new()
                .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent)
                .with_decode_allow_trailing_bits(true),
        );
        let Ok(bytes) = engine.decode(b64.as_bytes()) else {
            return c[0].to_string();
        };
        let mut text = Vec::new();
        // A payload cut short (an error after some bytes) is read as far
        // as it decompressed.
        let _ = flate2::read::GzDecoder::new(bytes.as_slice())
            .take(GZIP_READ_LIMIT)
            .read_to_end(&mut text);
        let Ok(text) = std::str::from_utf8(&text) else {
            return c[0].to_string();
        };
        if text.contains("H4sI") || holds_secret(text) {
            OLD.to_string()
        } else {
            c[0].to_string()
        }
    });
}

/// A Hadoop-style configuration property (`core-site.xml`,
/// `hive-site.xml`, `ssl-server.xml`; Spark, HBase, Ranger, Oozie):
/// `<property><name>KEY</name><value>X</value></property>`, the key a
/// `<name>` child, its `<description>`, `<final>`, `<source>` or `<tag>`
/// siblings between, over lines. Group 2 is the key, group 3 the value.
pub(super) fn xml_name_child_re() -> &'static Regex {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"(<name>([^<]*)</name>(?:\s*<(?:description|final|source|tag)>[^<]*</(?:description|final|source|tag)>)*\s*<value>)([^<]*)(</value>)",
        )
        .expect("static regex is valid")
    })
}

/// `scheme://user:password@`: the password is group 2. It runs to the
/// last `@` of the URL (which ends at whitespace, a quote or `<>`): RFC 3986
/// wants `/`, `?`, `#` and `@` percent-encoded in a password, but real
/// connection strings hold generated passwords unencoded (base64 has `/`),
/// and URL readers such as libpq, redis-py and Python's `urlsplit` take the
/// host after the last `@`. A path or query holding an `@` after a port
/// (`http://h:8080/x?mail=a@b`) is hidden too: over-redaction, not a leak.
/// The user may hold an `@` (an e-mail address written unencoded:
/// django-environ's `EMAIL_URL=smtp://me@gmail.com:X@smtp.gmail.com`,
/// Azure's `svc@tenant` database users): it runs to the first `:`, so a
/// user with an `@`, a port and an `@` after it in the path
/// (`ssh://git@h:22/r@v1`) is over-redacted the same way.
fn url_password_re() -> &'static Regex {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        // `\/\/` and `\u002F\u002F` too: a URL inside a JSON string with
        // its slashes escaped; `%2F%2F`: percent-encoded (a URL passed in a
        // query parameter). A user already hidden as a credential shape
        // (`s3://AKIA…:X@bucket`, the text mode hides shapes over the
        // whole text first) still has its password read.
        Regex::new(
            r#"([A-Za-z][A-Za-z0-9+.\-]*:(?:\\?/|\\u002[Ff]|%2[Ff]){2}(?:<redacted>|[^\s/\\:"'<>`]*):)([^\s"'<>`]+)(@)"#,
        )
        .expect("static regex is valid")
    })
}

/// A URL percent-encoded whole, its `:` and `@` too
/// (`?next=https%3A%2F%2Fu%3AX%40db`, a URL passed in a query parameter):
/// the password runs from the user's `%3A` to the last `%40` of the
/// parameter (which ends at `&`). Its scheme's `:` must be `%3A` too, so a
/// `%40` in an ordinary URL's query (`http://h:8080/x?mail=a%40b`) is not
/// read as one.
fn encoded_url_password_re() -> &'static Regex {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r#"([A-Za-z][A-Za-z0-9+.\-]*%3[Aa](?:%2[Ff]){2}[^\s/\\:@%"'<>`&]*%3[Aa])([^\s"'<>`&]+)(%40)"#,
        )
        .expect("static regex is valid")
    })
}

/// The URL password rules that apply to `text`: the encoded one only when
/// it holds an encoded `@`.
/// A scheme-relative URL's password (`//u:X@h`, after a blank, quote,
/// `=`, `(` or at the start).
fn relative_url_password_re() -> &'static Regex {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r#"((?:^|[\s"'=(])//[^\s/\\:"'<>`]+:)([^\s"'<>`]+)(@)"#)
            .expect("static regex is valid")
    })
}

/// Whether `text` holds `//` not after a scheme's `:`.
fn has_relative_url(text: &str) -> bool {
    text.match_indices("//")
        .any(|(i, _)| i == 0 || !matches!(text.as_bytes()[i - 1], b':' | b'/'))
}

fn url_password_res(text: &str) -> impl Iterator<Item = &'static Regex> {
    std::iter::once(url_password_re())
        .chain(text.contains("%40").then(encoded_url_password_re))
        .chain((text.contains('@') && has_relative_url(text)).then(relative_url_password_re))
}

pub(super) fn mask_url_passwords(text: &str, with: &str) -> String {
    let mut out = text.to_string();
    for re in url_password_res(text) {
        replace_in(&mut out, re, |c: &regex::Captures| {
            format!("{}{with}{}", &c[1], &c[3])
        });
    }
    if out.contains("://") && out.contains('@') {
        replace_in(&mut out, token_userinfo_re(), |c: &regex::Captures| {
            if token_like(&c[2]) {
                format!("{}{with}{}", &c[1], &c[3])
            } else {
                c[0].to_string()
            }
        });
    }
    out
}

/// Issue 19 (red40, red-token-only-userinfo): a URL whose userinfo is a
/// token and no password, the form NATS (`nats://TOKEN@host`), Sentry
/// DSNs (`https://KEY@o1.ingest.sentry.io/1`) and Uptrace DSNs document
/// for token authentication (GitHub's is [`Redactor`](super::Redactor)'s
/// `github_userinfo`, whatever the user). Group 2, read by [`token_like`]
/// so that user names (`git@`, `ci-bot@`, `svc-deployment-user-01@`)
/// stay.
fn token_userinfo_re() -> &'static Regex {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(\b[A-Za-z][A-Za-z0-9+.\-]*://)([A-Za-z0-9_\-.~]{16,})(@[A-Za-z0-9\[])")
            .expect("static regex is valid")
    })
}

/// Whether a URL's userinfo reads as a token, not a user's name: a run
/// of 12 or more letters and digits (a UUID's last group is 12) holding
/// both.
pub(super) fn token_like(s: &str) -> bool {
    s.split(|c: char| !c.is_ascii_alphanumeric()).any(|run| {
        run.len() >= 12
            && run.bytes().any(|b| b.is_ascii_digit())
            && run.bytes().any(|b| b.is_ascii_alphabetic())
    })
}

/// Both sides with URL passwords hidden; the placeholders say whether the
/// passwords changed, like the other redactions.
pub(super) fn url_passwords_pair(old: &str, new: &str) -> (String, String) {
    let passwords = |t: &str| -> Vec<String> {
        url_password_res(t)
            .flat_map(|re| re.captures_iter(t).map(|c| c[2].to_string()))
            .chain(
                token_userinfo_re()
                    .captures_iter(t)
                    .map(|c| c[2].to_string())
                    .filter(|u| token_like(u)),
            )
            .collect()
    };
    let (po, pn) = (passwords(old), passwords(new));
    if po.is_empty() && pn.is_empty() {
        return (old.to_string(), new.to_string());
    }
    if po == pn {
        (
            mask_url_passwords(old, UNCHANGED),
            mask_url_passwords(new, UNCHANGED),
        )
    } else {
        (
            mask_url_passwords(old, OLD),
            mask_url_passwords(new, CHANGED),
        )
    }
}

/// Whether a text holds a `<value>` element (in the letter cases XML
/// files write it): the pre-check of [`Redactor::hide_xml_settings`](super::Redactor::hide_xml_settings).
pub(super) fn xml_value_child(text: &str) -> bool {
    text.contains("<value>") || text.contains("<Value>") || text.contains("<VALUE>")
}

/// An element (group 2 its name) whose first child is `<Value>` in any
/// of its letter cases, over lines: the value is group 3.
pub(super) fn xml_value_child_re() -> &'static Regex {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"(<([A-Za-z_][A-Za-z0-9_.\-]*)(?:\s[^<>]*)?>\s*<(?:value|Value|VALUE)>)([^<]*)(</(?:value|Value|VALUE)>)",
        )
        .expect("static regex is valid")
    })
}

/// Issue 19 (probe26, r-redact-vendor-token-shapes): vendors' API keys
/// and tokens with a prefix of their own, after gitleaks' rules where it
/// has one (age-secret-key, twilio-api-key, new-relic-user-api-key and
/// -insert-key, shopify-*, atlassian-api-token, linear-api-key,
/// huggingface-access-token and -organization-api-token,
/// mailgun-private-api-token, grafana-cloud-api-token and
/// -service-account-token, sentry-org-token and -user-token,
/// postman-api-token, pulumi-api-token, heroku-api-key-v2,
/// flyio-access-token, mapbox-api-token, square-access-token and
/// -secret, databricks-api-token, figma, airtable-personnal-access-token,
/// cloudflare-origin-ca-key, rubygems-api-token, contentful,
/// planetscale-*, sonar, gitlab-rrt, jfrog, gcp OAuth client secrets) and
/// the formats the vendors document (Stripe's webhook secret `whsec_`,
/// Supabase, Braintree, LaunchDarkly's server SDK key, Buildkite,
/// CircleCI, Docker Hub, Notion, NuGet, Netlify, Render, Resend,
/// Replicate, Groq, Perplexity, LangSmith, Pinecone, Infisical, Octopus
/// Deploy, Google OAuth access and refresh tokens, Dropbox; a Ceph key,
/// `AQ…==`, 16 bytes of key behind a 12-byte header, in a keyring's `key =`
/// or Rook's CSI `userKey`; red36: Dynatrace's `dt0c01.` API and PaaS
/// tokens). One
/// alternation whose branches all start with a literal, so the engine
/// scans for the prefixes only; public keys (`pk_live_`, `pk.eyJ`,
/// `pubkey-`, `NRJS-`) are not read. A value of one of these shapes is
/// hidden under any key, in both modes.
///
/// red39 (red-more-vendor-token-prefixes), the branches from Brevo's
/// `xkeysib-` on (one alternation: each regex costs a search per line of
/// every text): more vendors' token formats with a literal prefix, after
/// gitleaks' rules where it has one
/// (sendinblue-api-token, bitbucket and Atlassian repository tokens,
/// 1password-service-account-token, typeform, prefect, sourcegraph,
/// adafruit, easypost, flutterwave, shippo, duffel, readme, yandex,
/// clojars, harness, scalingo, infracost, twitter-bearer-token,
/// facebook-page-access-token, mailchimp-api-key) and the formats the
/// vendors document (Neon's `napi_`, Honeycomb's ingest keys, crates.io,
/// OpenRouter, DeepSeek's `sk-` and 32 hex digits, IFTTT's Maker URL).
/// Mailchimp's key (no literal prefix) is [`MAILCHIMP_API_KEY`]. A distinctive prefix is
/// followed by a shorter minimum than the vendor's length (each counted
/// character is a state the regex compiles at start-up).
pub(super) const VENDOR_TOKEN_PREFIXES: &str = r"\b(?:AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}|SK[0-9a-fA-F]{32}\b|NRAK-[A-Z0-9]{27}|NRII-[A-Za-z0-9_\-]{32}|shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}|ATATT3[A-Za-z0-9_\-=]{100,}|lin_(?:api|oauth)_[A-Za-z0-9]{40,64}|(?:hf|api_org)_[A-Za-z]{34}\b|key-[a-f0-9]{32}\b|gl(?:c|sa)_[A-Za-z0-9+/]{32,400}(?:_[A-Fa-f0-9]{8})?={0,2}|sntry[su]_[A-Za-z0-9+/=_\-]{40,}|PMAK-[A-Fa-f0-9]{24}-[A-Fa-f0-9]{34}|pul-[a-f0-9]{40}|HRKU-[A-Za-z0-9_\-]{30,}|(?:FlyV1 )?(?:fo1_[A-Za-z0-9_\-]{43}|fm1[ar]_[A-Za-z0-9+/]{100,}={0,3}|fm2_[A-Za-z0-9+/]{100,}={0,3})|sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_\-]{20,}|sk\.eyJ[A-Za-z0-9_\-]{20,}\.[A-Za-z0-9_\-]{20,}|sq0(?:csp|atp)-[A-Za-z0-9_\-]{22,43}|EAAA[A-Za-z0-9_\-]{60}\b|whsec_[A-Za-z0-9+/=]{32,}|access_token\$production\$[0-9a-z]{16}\$[0-9a-f]{32}|sdk-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b|bkua_[a-f0-9]{40}|CCIP(?:AT|RJ)_[A-Za-z0-9]{22}_[a-f0-9]{40}|dckr_(?:pat|oat)_[A-Za-z0-9_\-]{27,}|dapi[a-f0-9]{32}(?:-[0-9])?\b|fig[dop]_[A-Za-z0-9_\-]{40,}|ntn_[A-Za-z0-9]{40,}|secret_[A-Za-z0-9]{43}\b|oy2[a-z0-9]{43}\b|pat[A-Za-z0-9]{14}\.[a-f0-9]{64}|v1\.0-[a-f0-9]{24}-[a-f0-9]{146}|rubygems_[a-f0-9]{48}|CFPAT-[A-Za-z0-9_\-]{43}|pscale_(?:tkn|pw|oauth)_[A-Za-z0-9=_.\-]{32,64}|nfp_[A-Za-z0-9]{36,}|rnd_[A-Za-z0-9]{32}\b|re_[A-Za-z0-9]{8}_[A-Za-z0-9]{24}\b|r8_[A-Za-z0-9]{37}\b|gsk_[A-Za-z0-9]{52}\b|pplx-[A-Za-z0-9]{48}\b|lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}|pcsk_[A-Za-z0-9]{4,8}_[A-Za-z0-9]{40,}|st\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.[0-9a-f]{32}\.[0-9a-f]{32}|API-[A-Z0-9]{26}\b|ya29\.[A-Za-z0-9_\-]{30,}|1//0[A-Za-z0-9_\-]{40,}|sl\.(?:u\.)?[A-Za-z0-9_\-=]{130,}|sq[apu]_[a-f0-9]{40}\b|GR1348941[A-Za-z0-9_\-]{20}|GOCSPX-[A-Za-z0-9_\-]{28}|cmVmdGtu[A-Za-z0-9]{56}|AKCp[A-Za-z0-9]{69}\b|AQ[A-D][A-Za-z0-9+/]{35}==|dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}|x(?:keysib|smtpsib)-[a-f0-9]{24,}-[A-Za-z0-9]{8,}|ATBB[A-Za-z0-9_=.\-]{32}|ATCTT3xFfGN0[A-Za-z0-9_=\-]{24,}|ops_eyJ[A-Za-z0-9+/=]{24,}|napi_[a-z0-9]{32,}|tfp_[A-Za-z0-9_.=\-]{32,}|pnu_[A-Za-z0-9]{36}\b|sgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}\b|hc[ax]i[ck]_[A-Za-z0-9]{20,}|aio_[A-Za-z0-9]{28}\b|EZ[AT]K[A-Za-z0-9]{54}\b|FLWSECK(?:_TEST)?-[a-fA-F0-9]{32}-X|shippo_(?:live|test)_[a-f0-9]{24,}|duffel_(?:live|test)_[A-Za-z0-9_=\-]{24,}|rdme_[A-Za-z0-9]{32,}|y0_[A-Za-z0-9_\-]{40,}|CLOJARS_[a-z0-9]{32,}|(?:pat|sat)\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}\b|tk-us-[A-Za-z0-9_\-]{32,}|ico-[A-Za-z0-9]{32}\b|cio[A-Za-z0-9]{32}\b|sk-or-v1-[a-f0-9]{32,}|sk-[a-f0-9]{32}\b|AAAAAAAAAAAAAAAAAAAAA[A-Za-z0-9%]{48,}|EAA[A-Z][A-Za-z0-9]{100,}|K00[0-9][A-Za-z0-9+/]{27}\b|A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}\b|K10[a-f0-9]{64}::[A-Za-z0-9_.\-]+:[A-Za-z0-9_.\-]+|maker\.ifttt\.com/(?:trigger/[A-Za-z0-9_.\-]+/(?:json/)?with/key|use)/[A-Za-z0-9_\-]{16,})";

/// The token shapes of [`VENDOR_TOKEN_PREFIXES`] whose literal is inside
/// (a Telegram bot token `ID:AA…`, a Terraform Cloud token
/// `ID.atlasv1.…`, an Azure AD client secret `abc8Q~…`): a regex each,
/// which the engine scans for its inner literal (one alternation of the
/// three has none in common, and is scanned whole).
pub(super) const VENDOR_TOKEN_INNER: [&str; 3] = [
    r"\b[0-9]{8,10}:AA[A-Za-z0-9_\-]{33}\b",
    r"\b[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,70}",
    r"\b[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34}",
];

/// red39: Mailchimp's API key, 32 hex digits and its data centre.
pub(super) const MAILCHIMP_API_KEY: &str = r"\b[0-9a-f]{32}-us[0-9]{1,2}\b";

/// red39 (red-headerless-der-keys-and-keystores): a private key written as
/// base64 DER without its PEM frame (Java and .NET settings take them so:
/// `jwt.private-key=MIIEv…`), and binary keystores in base64 (a
/// ConfigMap's `binaryData`, a Helm value): PKCS#8 (RSA, EC, Ed25519, and
/// PBES2-encrypted), PKCS#1 RSA, SEC1 EC, PKCS#12 (version 3, a truststore
/// too: its bags cannot be told apart without the password), JKS
/// (`FEEDFEED`) and JCEKS (`CECECECE`). Each branch is the DER header up
/// to the version and algorithm bytes, so certificates, CSRs and public
/// keys (`MIIC…CCA…`, `MIIBIjAN…`) do not match; with the lines that
/// carry the token on when `base64` wrapped it.
pub(super) const DER_PRIVATE_KEYS_AND_KEYSTORES: &str = r"(?m)(?:\bMII[A-Za-z0-9+/]{2}[AQgw]IB(?:ADAN|AAKC|AzCC)|\bMII[A-Za-z0-9+/]{5}BgkqhkiG9w0BBQ0w|\bMI[GH][A-Za-z0-9+/]AgEAMB[AM]GByqGSM49|\bMHcCAQEEI|\bMIGkAgEBBD|\bMC4CAQAwBQYDK2Vw|/u3\+7QAAAA|\bzs7OzgAAAA|\bBQIAAA[A-Za-z0-9+/]{20})[A-Za-z0-9+/]*={0,2}(?:[ \t]*\r?\n[ \t]*[A-Za-z0-9+/]+={0,2}[ \t]*\r?$)*";

/// The needles of [`hide_shape_rules`]' functions, at the start of
/// [`shape_rules`]' set: Composer's OAuth maps, Helm's pairs, an INSERT.
const SHAPE_FUNCTION_NEEDLES: &[&str] = &[
    "-oauth",
    r"\]\.value=",
    "INSERT|insert|Insert|REPLACE|replace|Replace",
];

/// The shape [`Rule`]s (issue 19's review, red11: needles are regexes),
/// compiled once, with the needles' set and each rule's
/// needles' indexes in it.
fn shape_rules() -> &'static (Vec<Rule>, regex::RegexSet, Vec<Vec<usize>>) {
    static RULES: std::sync::OnceLock<(Vec<Rule>, regex::RegexSet, Vec<Vec<usize>>)> =
        std::sync::OnceLock::new();
    fn never(_: &str) -> bool {
        false
    }
    // A value: quoted, or a word (not a redirection, pipe or option).
    const VALUE: &str = r#"(?P<v>"[^"\n]*"|'[^'\n]*'|[^\s"'<>|;&/*][^\s"'<>|;&]*)"#;
    RULES.get_or_init(|| {
        let rule = |needles: &'static [&'static str], re: &str, shown: fn(&str) -> bool| {
            Rule::new(needles, &re.replace("@VALUE@", VALUE), shown)
        };
        let rules = vec![
            // probe32 (red-env-directives-setenv-fpm-env): Apache's
            // `SetEnv NAME X` and a PHP-FPM pool's `env[NAME] = X`, when
            // NAME matches the key rules.
            rule(
                &["SetEnv"],
                r"(?m)^[ \t]*SetEnv[ \t]+(?P<key>[A-Za-z_][A-Za-z0-9_]*)[ \t]+@VALUE@",
                never,
            ),
            rule(
                &[r"env\["],
                r#"(?m)^[ \t]*env\[(?P<key>[A-Za-z_][A-Za-z0-9_]*)\][ \t]*=[ \t]*(?P<v>"[^"\n]*"|'[^'\n]*'|[^\s"'][^\n]*?)[ \t]*\r?$"#,
                never,
            ),
            // probe32 (red-profile-prefixed-properties): a Quarkus
            // profile's property, `%prod.quarkus.datasource.password=X`
            // (the `%` keeps the key rules from reading the key).
            rule(
                &[r"(?m)^[ \t]*%[A-Za-z]"],
                r"(?m)^[ \t]*%[A-Za-z0-9_-]+\.(?P<key>[A-Za-z0-9_.\-\[\]]+)[ \t]*[=:][ \t]*(?P<v>[^\s][^\n]*?)[ \t]*\r?$",
                never,
            ),
            // probe32 (red-neutral-key-under-crypto-parent): a PHP array's
            // `'crypt' => ['key' => 'X']` (Magento's `env.php`, over lines
            // as Magento writes it), `'jwt'` and `'encryption'` alike.
            rule(
                &[r#"(?i)['"](?:crypt|jwt|encryption)['"][ \t]*=>"#],
                r#"(?i)['"](?:crypt|jwt|encryption)['"]\s*=>\s*(?:\[|array\s*\()\s*['"]key['"]\s*=>\s*@VALUE@"#,
                never,
            ),
            // Package managers. `composer config [-g] github-oauth.HOST X`
            // (`gitlab-oauth`, `gitlab-token`, `bearer`), `http-basic.HOST
            // USER X`, `bitbucket-oauth.HOST KEY X`.
            rule(
                &["composer"],
                r"(\bcomposer(?:\.phar)?[ \t]+(?:[^\n]*?[ \t])?config[ \t]+(?:[^\n]*?[ \t])?(?:(?:github-oauth|gitlab-oauth|gitlab-token|bearer)\.\S+|(?:http-basic|bitbucket-oauth)\.\S+[ \t]+\S+)[ \t]+)@VALUE@",
                never,
            ),
            // Yarn 1's `.yarnrc`: `"//registry/:_authToken" X` (a key and
            // its value apart by a blank, the key quoted or not).
            rule(
                &[r":_auth", r":_password"],
                r#"(?m)^[ \t]*"?[^"\s=]*:_(?:authToken|auth|password)"?[ \t]+(?P<v>"[^"\n]*"|[^\s"=]\S*)"#,
                never,
            ),
            // A Ruby symbol as a key at a line's start (RubyGems'
            // `~/.gem/credentials`: `:rubygems_api_key: X`).
            rule(
                &[r"(?m)^[ \t]*:[A-Za-z_]"],
                r#"(?m)^[ \t]*:(?P<key>[A-Za-z_][A-Za-z0-9_]*):[ \t]+(?P<v>"[^"\n]*"|'[^'\n]*'|[^\s#][^\n#]*?)[ \t]*\r?$"#,
                never,
            ),
            // C#'s auto-property initialiser, `Password { get; set; } =
            // "X";` (`init`, `private set`, a verbatim or interpolated
            // string).
            rule(
                &["get;", r"get[ \t]+;", "init;"],
                r#"\b(?P<key>[A-Za-z_][A-Za-z0-9_]*)[ \t]*\{[ \t]*(?:(?:public|private|protected|internal)[ \t]+)?(?:get|init|set)[ \t]*;[^{}\n]*\}[ \t]*=[ \t]*(?P<v>@?\$?@?"(?:[^"\\\n]|\\.)*")"#,
                never,
            ),
            // C++ brace initialisation, `std::string apiToken{"X"};` (a
            // prefixed or raw string literal too).
            rule(
                &[r#"\{[ \t]*(?:u8|[LuU])?R?""#],
                r#"\b(?P<key>[A-Za-z_][A-Za-z0-9_]*)[ \t]*\{[ \t]*(?P<v>(?:u8|[LuU])?R?"(?:[^"\\\n]|\\.)*")[ \t]*\}"#,
                never,
            ),
            // `auto password = std::string{"X"};`: a type's brace init
            // assigned to the name (the inline rule, run first on a
            // string, may have hidden the type as the value).
            rule(
                &[r#"\{[ \t]*(?:u8|[LuU])?R?""#],
                r#"\b(?P<key>[A-Za-z_][A-Za-z0-9_]*)[ \t]*:?=[ \t]*(?:<redacted>|[A-Za-z_][A-Za-z0-9_:<>, ]*)[ \t]*\{[ \t]*(?P<v>(?:u8|[LuU])?R?"(?:[^"\\\n]|\\.)*")[ \t]*\}"#,
                never,
            ),
            // Positional leftovers. IOS' `snmp-server host A [vrf V]
            // [informs|traps] [version 1|2c] COMMUNITY` (SNMPv3's word
            // there is a user name: `version 3 …` leaves `version`).
            rule(
                &["snmp-server"],
                r#"(?im)^[ \t]*(?:-[ \t]+|"?[\w.-]+"?[ \t]*[:=][ \t]*"?)?snmp-server[ \t]+host[ \t]+\S+(?:[ \t]+vrf[ \t]+\S+)?(?:[ \t]+(?:informs|traps))?(?:[ \t]+version[ \t]+(?:1|2c))?[ \t]+(?P<v>[^\s"]+)"#,
                |v| {
                    ["version", "informs", "traps", "vrf"]
                        .iter()
                        .any(|w| v.eq_ignore_ascii_case(w))
                },
            ),
            // lftp's `-u user,X` (on its command line, or `open -u` in its
            // commands).
            rule(
                &[r"\blftp\b", r"\bopen[ \t]+(?:[^\n]*?[ \t])?-u[ \t]"],
                r#"\b(?:lftp|open)[ \t]+(?:[^\n]*?[ \t])?-u[ \t]+["']?[^,\s"']+,(?P<v>[^\s"',]+)"#,
                never,
            ),
            // Windows' `net user NAME X` (`*` prompts, `/add` is an
            // option) and `net use [D:] \\host\share X` / `/user:NAME X`.
            rule(
                &[r"(?i)\bnet(?:\.exe)?[ \t]+user[ \t]"],
                r#"(?i)\bnet(?:\.exe)?[ \t]+user[ \t]+(?:"[^"\n]*"|[^\s"/]+)[ \t]+(?P<v>"[^"\n]*"|[^\s"/*][^\s"]*)"#,
                never,
            ),
            rule(
                &[r"(?i)\bnet(?:\.exe)?[ \t]+use[ \t]"],
                r#"(?i)\bnet(?:\.exe)?[ \t]+use[ \t]+(?:(?:[A-Z]:|\*)[ \t]+)?\\\\\S+[ \t]+(?P<v>"[^"\n]*"|[^\s"/*][^\s"]*)"#,
                never,
            ),
            rule(
                &[r"(?i)\bnet(?:\.exe)?[ \t]+use[ \t]"],
                r#"(?i)\bnet(?:\.exe)?[ \t]+use[ \t][^\n]*?[ \t]/u(?:ser)?:\S+[ \t]+(?P<v>"[^"\n]*"|[^\s"/*][^\s"]*)"#,
                never,
            ),
            // NetworkManager: `nmcli … password X`, `wifi-sec.psk X`,
            // `802-1x.password X`, `wifi-sec.wep-key0 X` (`…-flags` stay).
            rule(
                &["nmcli"],
                r#"\bnmcli[ \t][^\n]*?[ \t](?:password|[A-Za-z0-9-]+\.(?:psk|password|wep-key[0-3]|leap-password|private-key-password|phase2-private-key-password|pin))[ \t]+(?P<v>"[^"\n]*"|'[^'\n]*'|[^\s"']+)"#,
                never,
            ),
            // `wpa_passphrase SSID X` (without X it reads stdin).
            rule(
                &["wpa_passphrase"],
                r#"\bwpa_passphrase[ \t]+(?:"[^"\n]*"|'[^'\n]*'|[^\s"'<>|;]+)[ \t]+(?P<v>"[^"\n]*"|'[^'\n]*'|[^\s"'<>|;&]+)"#,
                never,
            ),
            // MSBuild's and dotnet's `/p:Password=X` (`-p:`, `/property:`,
            // several properties after `;`).
            rule(
                &[r"(?i)[/-](?:p|property):"],
                r#"(?:^|[\s"'])[/-](?i:p|property):(?:[^\s=;"']+=[^\s;"']*;)*(?P<key>[A-Za-z_][A-Za-z0-9_.]*)=(?P<v>"[^"\n]*"|[^\s;"']+)"#,
                never,
            ),
            // A Windows tool's `/NAME:X` option of a matching name
            // (sqlpackage's `/TargetPassword:X`, `/SourcePassword:X`, and
            // its `/tp:X`, `/sp:X`), signtool's `/p X`.
            rule(
                &[r"(?i)(?:^|[\s\x22'])/[a-z]*(?:pass|pwd|token|secret|key)[a-z]*:"],
                r#"(?:^|[\s"'])/(?P<key>[A-Za-z][A-Za-z0-9_]*):(?P<v>"[^"\n]*"|[^\s"']+)"#,
                never,
            ),
            rule(
                &[r"(?i)sqlpackage"],
                r#"(?i)\bsqlpackage(?:\.exe)?\b[^\n]*?[ \t]/(?:tp|sp):(?P<v>"[^"\n]*"|[^\s"']+)"#,
                never,
            ),
            rule(
                &[r"(?i)signtool"],
                r#"(?i)\bsigntool(?:\.exe)?[ \t][^\n]*?[ \t][/-]p[ \t]+(?P<v>"[^"\n]*"|[^\s"']+)"#,
                never,
            ),
            // red39 (red-pgbouncer-userlist-lines): PgBouncer's
            // `userlist.txt`, a line of two quoted words, `"USER" "X"` (X
            // a password, an `md5…` hash or a SCRAM verifier, each enough
            // to log in through it). A word starting with `-` or `$` is a
            // shell array's option or variable, not a user; a URL is Yarn
            // 1's `.yarnrc` (`"registry" "https://…"`), as are a boolean
            // and a number there.
            rule(
                &["\" \""],
                r#"(?m)^[ \t]*"[^"\s$-][^"\s]*"[ \t]+"(?P<v>[^"\s$][^"\s]*)"[ \t]*\r?$"#,
                |v| {
                    let v = v.trim_matches('"');
                    v.contains("://")
                        || v == "true"
                        || v == "false"
                        || v.bytes().all(|b| b.is_ascii_digit())
                },
            ),
            // PostgreSQL's dollar-quoted and escape-string passwords,
            // `PASSWORD $$X$$` (`$tag$X$tag$`), `PASSWORD E'X'`.
            rule(
                &[r"(?i)password[ \t]+(?:\$|[Ee]')"],
                r#"(?i)\bPASSWORD[ \t]+(?P<v>\$[A-Za-z0-9_]*\$[^$\n]*\$[A-Za-z0-9_]*\$|E'(?:[^'\\\n]|\\.|'')*')"#,
                never,
            ),
        ];
        // The custom functions' needles first ([`hide_shape_rules`]).
        let (set, ids) = needle_set(
            SHAPE_FUNCTION_NEEDLES,
            rules.iter().map(|r| r.needles),
            str::to_string,
        );
        (rules, set, ids)
    })
}

/// Composer's `"github-oauth": {"github.com": "X"}` written on one line
/// (`COMPOSER_AUTH`, an `auth.json` in a string): each value of the map,
/// its quotes escaped or not. Over lines the line rule follows the key's
/// bracket; a parsed file is a map under a secret key.
fn hide_composer_oauth_maps(out: &mut String) {
    static MAP: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    static VALUE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let map = MAP.get_or_init(|| {
        Regex::new(r#"(?i)(\\?["']?(?:github|gitlab)-oauth\\?["']?[ \t]*:[ \t]*\{)([^{}\n]*)(\})"#)
            .expect("static regex is valid")
    });
    let value = VALUE.get_or_init(|| {
        Regex::new(
            r#"(:[ \t]*)(\\"(?:[^"\\]|\\[^"])*\\"|"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^,\s}"'\\]+)"#,
        )
        .expect("static regex is valid")
    });
    replace_in(out, map, |c: &regex::Captures| {
        let body = value.replace_all(&c[2], |v: &regex::Captures| {
            if v[2].contains(OLD) {
                v[0].to_string()
            } else {
                format!("{}{OLD}", &v[1])
            }
        });
        format!("{}{body}{}", &c[1], &c[3])
    });
}

/// Helm's `--set env[0].name=DB_PASSWORD,env[0].value=X` (the pair in
/// one `--set` or two): the `value` of an indexed item whose `name` (or
/// `key`) matches, over the whole text.
fn hide_helm_set_pairs(out: &mut String, secret_name: impl Fn(&str) -> bool) {
    static NAME: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    static VALUE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let name = NAME.get_or_init(|| {
        Regex::new(r#"([A-Za-z0-9_.\-]+)\[([0-9]+)\]\.(?:name|key)=([^,\s"'\\]+)"#)
            .expect("static regex is valid")
    });
    let value = VALUE.get_or_init(|| {
        Regex::new(r#"([A-Za-z0-9_.\-]+)\[([0-9]+)\]\.value=([^,\s"'\\]+)"#)
            .expect("static regex is valid")
    });
    let secret: HashSet<(String, String)> = name
        .captures_iter(out)
        .filter(|c| secret_name(&c[3]))
        .map(|c| (c[1].to_string(), c[2].to_string()))
        .collect();
    if secret.is_empty() {
        return;
    }
    replace_in(out, value, |c: &regex::Captures| {
        if &c[3] != OLD && secret.contains(&(c[1].to_string(), c[2].to_string())) {
            format!("{}[{}].value={OLD}", &c[1], &c[2])
        } else {
            c[0].to_string()
        }
    });
}

/// A table that holds users or credentials: its name (the last part of
/// `schema.table`, unquoted) matches the key rules (`credentials`,
/// `api_tokens`) or is `user(s)`, `account(s)`, `login(s)`, `admin(s)`,
/// `member(s)`, with a prefix word or not (`auth_user`, `wp_users`).
fn credentials_table(table: &str, secret_name: &impl Fn(&str) -> bool) -> bool {
    let t = table.rsplit('.').next().unwrap_or(table);
    let t = t.trim_matches(['"', '`', '[', ']', '\'']);
    let base = t.rsplit('_').next().unwrap_or(t).to_ascii_lowercase();
    secret_name(t)
        || [
            "user", "users", "account", "accounts", "login", "logins", "admin", "admins", "member",
            "members",
        ]
        .contains(&base.as_str())
}

/// `INSERT INTO users VALUES (1, 'alice', 'X')`: without a column list
/// the password's position is not known, so in a users' or credentials'
/// table ([`credentials_table`]) every quoted item of each row is hidden
/// (an item holding a quote: `crypt('X', …)` too), except an e-mail
/// address and a date; numbers, `NULL`, booleans and bind parameters stay.
fn hide_insert_without_columns(out: &mut String, secret_name: impl Fn(&str) -> bool) {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(concat!(
            r"(?i)\b(?:insert|replace)",
            r"(?:[ \t]+(?:ignore|low_priority|high_priority|delayed|or[ \t]+(?:replace|ignore|abort|fail|rollback)))*",
            r"[ \t]+into[ \t]+([^\s(]+)",
            r"[ \t\r\n]+(?:overriding[ \t]+(?:system|user)[ \t]+value[ \t\r\n]+)?values?[ \t\r\n]*",
        ))
        .expect("static regex is valid")
    });
    let shown = |item: &str| {
        let inner = item.trim_matches(['\'', '"']);
        !item.contains(['\'', '"'])
            || item == OLD
            || (inner.contains('@') && !inner.contains([' ', ':', '/']) && inner.contains('.'))
            || (inner.len() >= 10
                && inner.as_bytes()[..10].iter().enumerate().all(|(i, b)| {
                    if i == 4 || i == 7 {
                        *b == b'-'
                    } else {
                        b.is_ascii_digit()
                    }
                }))
    };
    let mut hidden: Vec<(usize, usize)> = Vec::new();
    for c in re.captures_iter(out) {
        if !credentials_table(&c[1], &secret_name) {
            continue;
        }
        for items in value_rows(out, c.get(0).map_or(0, |m| m.end())) {
            for (s, e) in items {
                if !shown(&out[s..e]) {
                    hidden.push((s, e));
                }
            }
        }
    }
    for (s, e) in hidden.into_iter().rev() {
        out.replace_range(s..e, OLD);
    }
}

/// Hides each [`shape_rules`] match's secret in `out` (a group `key`
/// must satisfy `secret_name`), Composer's one-line OAuth maps
/// ([`hide_composer_oauth_maps`]), Helm's `--set` name/value pairs
/// ([`hide_helm_set_pairs`]) and an INSERT without a column list into a
/// users' table ([`hide_insert_without_columns`]).
pub(super) fn hide_shape_rules(out: &mut String, secret_name: impl Fn(&str) -> bool) {
    // One pass says which rules may match (a few `str::contains` per
    // string cost more than that in a debug build).
    let (rules, set, ids) = shape_rules();
    let hit = set.matches(out);
    if !hit.matched_any() {
        return;
    }
    if hit.matched(0) {
        hide_composer_oauth_maps(out);
    }
    if hit.matched(1) && (out.contains("].name=") || out.contains("].key=")) {
        hide_helm_set_pairs(out, &secret_name);
    }
    if hit.matched(2) {
        hide_insert_without_columns(out, &secret_name);
    }
    hide_rule_values(out, rules, ids, &hit, secret_name);
}
