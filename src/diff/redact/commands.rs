//! Command lines: the clients whose options or arguments hold a password
//! that no secret word names (`mysql -pX`, `keytool -storepass X`, `vault
//! login X`), the words of a command line, and passwords written to a
//! program that reads them on standard input.

use crate::value::Value;
use regex::Regex;

use super::keys::{abbreviated_and_signing_key_names, bundler_host, keyword_in_key};
use super::OLD;

/// A command-line option whose next argument is a secret although its
/// name is not a secret word: `redis-cli -a PASSWORD`, `curl -u
/// user:password` (the user is hidden with it), `docker login -p PASSWORD`
/// (`registry-login`: a registry client and the word `login` in the same
/// command; `docker run -p 8080:80` is a port), and the options of
/// [`password_option`].
pub(super) fn command_secret_flag(program: &str, flag: &str) -> bool {
    match program {
        "redis-cli" => flag == "-a",
        "sshpass" | "registry-login" => flag == "-p",
        "curl" => matches!(flag, "-u" | "-U" | "--user" | "--proxy-user"),
        p => password_option(p, flag),
    }
}

/// Clients whose options or arguments hold a password that no secret word
/// names ([`password_option`], [`command_password_words`]); `curl` for its
/// cookies (`-b 'session=X'`).
pub(super) const PASSWORD_CLIENTS: &[&str] = &[
    "keytool",
    "jarsigner",
    "sqlcmd",
    "bcp",
    "ldapsearch",
    "ldapmodify",
    "ldapadd",
    "ldapdelete",
    "ldapwhoami",
    "ldapcompare",
    "ldapmodrdn",
    "ldappasswd",
    "ldapexop",
    "smbclient",
    "rpcclient",
    "smbcacls",
    "smbget",
    "zip",
    "zipcloak",
    "unzip",
    "7z",
    "7za",
    "7zr",
    "openssl",
    "ssh-keygen",
    "mongosh",
    "mongo",
    "mongodump",
    "mongorestore",
    "mongoexport",
    "mongoimport",
    "mongostat",
    "mongotop",
    "mongofiles",
    "htpasswd",
    "vault",
    "mc",
    "rabbitmqctl",
    "curl",
    "mysql",
    "mysqldump",
    "mysqladmin",
    "mysqlimport",
    "mysqlcheck",
    "mysqlshow",
    "mariadb",
    "mariadb-dump",
    "twine",
    "vsce",
    "ovsx",
    "rabbitmqadmin",
    "mosquitto_pub",
    "mosquitto_sub",
    "mosquitto_rr",
    "poetry",
    "cargo",
    "cqlsh",
    "mosquitto_passwd",
    "snmpwalk",
    "snmpbulkwalk",
    "snmpget",
    "snmpgetnext",
    "snmpbulkget",
    "snmpset",
    "snmptable",
    "snmptrap",
    "ipmitool",
    "kadmin",
    "ipa-server-install",
    "ipa-replica-install",
    "PsExec",
    "PsExec64",
    "psexec",
    "PsExec.exe",
    "PsExec64.exe",
    "psexec.exe",
    "doctl",
    "radtest",
    "mkpasswd",
    "fly",
    "flyctl",
    "doppler",
    "snyk",
    "codecov",
    "ansible-vault",
    "dotnet",
    "conan",
    "mix",
    "bundle",
    "mydumper",
    "myloader",
    "kdb5_util",
    "kubeadm",
    "gitlab-runner",
    "racadm",
    "beeline",
    "isql",
    "rdesktop",
    "db2",
    "hbbs",
    "hbbr",
    "consul",
    "cf",
    "swift",
    "etcdctl",
    "rclone",
];

/// The MySQL and MariaDB clients: their password is glued to `-p`
/// (`-pX`; `-p X` prompts, X is the database) or follows
/// `--password=`.
pub(super) fn mysql_client(program: &str) -> bool {
    program.starts_with("mysql") || program.starts_with("mariadb")
}

/// A list item (`-pX`, `-wX`, `-Uuser%X`, `--cookie=a=X`) that holds the
/// password of `program` glued to its option ([`command_password_words`]
/// of the item alone).
pub(super) fn glued_password(program: &str, item: &str) -> bool {
    item.starts_with('-')
        && command_password_words(program, &[item])
            .iter()
            .any(|&(_, at)| at > 0 && at < item.len())
}

/// An option of one of [`PASSWORD_CLIENTS`] whose next word is a password,
/// from each client's manual: keytool/jarsigner `-storepass`, `-keypass`
/// (and the `-src`/`-dest` forms, `-new`), sqlcmd/bcp `-P`, the OpenLDAP
/// clients' `-w` (ldappasswd's `-a` old and `-s` new password too),
/// zip/unzip `-P`, `openssl enc -k` (`-K`, a key in hex), ssh-keygen `-N`
/// (new passphrase) and `-P` (old), the MongoDB tools' `-p`;
/// twine's and rabbitmqadmin's `-p`, the VS Code and
/// Open VSX publishers' `-p`/`--pat` (a personal access token),
/// mosquitto_pub/sub/rr's `-P`.
fn password_option(program: &str, flag: &str) -> bool {
    match program {
        // keytool reads its options in any letter case (`-STOREPASS`).
        "keytool" | "jarsigner" => matches!(
            flag.to_ascii_lowercase().as_str(),
            "-storepass"
                | "-keypass"
                | "-srcstorepass"
                | "-deststorepass"
                | "-srckeypass"
                | "-destkeypass"
                | "-new"
        ),
        "sqlcmd" | "bcp" | "zip" | "zipcloak" | "unzip" => flag == "-P",
        "ldappasswd" => matches!(flag, "-w" | "-a" | "-s"),
        p if p.starts_with("ldap") => flag == "-w",
        "openssl" => matches!(flag, "-k" | "-K"),
        "ssh-keygen" => matches!(flag, "-N" | "-P"),
        p if p.starts_with("mongo") => flag == "-p",
        "twine" | "rabbitmqadmin" => flag == "-p",
        "vsce" | "ovsx" => matches!(flag, "-p" | "--pat"),
        "mosquitto_pub" | "mosquitto_sub" | "mosquitto_rr" => flag == "-P",
        "codecov" | "doctl" => flag == "-t",
        // Re-probe 18: Cassandra's shell, net-snmp's SNMPv3 passphrases,
        // a BMC's password, Kerberos' admin password, FreeIPA's installer
        // (Directory Server and admin), Sysinternals' PsExec.
        "cqlsh" => flag == "-p",
        // probe32: a v1/v2c community (`snmpwalk -v2c -c X`); snmpd's
        // and snmptrapd's `-c` is a configuration file.
        p if p.starts_with("snmp") => {
            matches!(flag, "-A" | "-X") || (flag == "-c" && !matches!(p, "snmpd" | "snmptrapd"))
        }
        "ipmitool" => flag == "-P",
        "kadmin" => flag == "-w",
        "ipa-server-install" | "ipa-replica-install" => matches!(flag, "-p" | "-a"),
        p if psexec(p) => flag == "-p",
        // mydumper/myloader's `-p`, kdb5_util's master password `-P`.
        "mydumper" | "myloader" => matches!(flag, "-p" | "--password"),
        "kdb5_util" => flag == "-P",
        // probe26: kubeadm's key for the control-plane certificates it
        // uploads, GitLab Runner's registration and runner tokens.
        "kubeadm" => flag == "--certificate-key",
        "gitlab-runner" => matches!(flag, "-r" | "-t"),
        // probe32: Dell's iDRAC client.
        "racadm" => flag == "-p",
        // red36 (red-database-and-desktop-client-passwords): Hive's
        // beeline, Sybase's isql, rdesktop.
        "beeline" | "rdesktop" => flag == "-p",
        "isql" => flag == "-P",
        // red36 (red-self-hosted-identity-key-names): RustDesk's server
        // key.
        "hbbs" | "hbbr" => flag == "-k",
        // red38 (red-positional-cli-secrets): OpenStack Swift's key.
        "swift" => matches!(flag, "-K" | "--key"),
        _ => false,
    }
}

/// Sysinternals' PsExec, by any of its names.
fn psexec(program: &str) -> bool {
    let p = program.to_ascii_lowercase();
    matches!(p.trim_end_matches(".exe"), "psexec" | "psexec64")
}

/// Whether [`password_option`] knows options of `program` (the clients
/// whose passwords a list of args can hold as the item after an option).
pub(super) fn has_password_options(program: &str) -> bool {
    matches!(
        program,
        "keytool"
            | "jarsigner"
            | "sqlcmd"
            | "bcp"
            | "zip"
            | "zipcloak"
            | "unzip"
            | "openssl"
            | "ssh-keygen"
            | "twine"
            | "vsce"
            | "ovsx"
            | "rabbitmqadmin"
            | "mosquitto_pub"
            | "mosquitto_sub"
            | "mosquitto_rr"
            | "cqlsh"
            | "ipmitool"
            | "kadmin"
            | "ipa-server-install"
            | "ipa-replica-install"
            | "doctl"
            | "codecov"
            | "mydumper"
            | "myloader"
            | "kdb5_util"
            | "kubeadm"
            | "gitlab-runner"
            | "racadm"
            | "beeline"
            | "isql"
            | "rdesktop"
            | "hbbs"
            | "hbbr"
            | "swift"
    ) || program.starts_with("ldap")
        || program.starts_with("mongo")
        || program.starts_with("snmp")
        || psexec(program)
}

/// Where the password is in the words that follow `program` (one of
/// [`PASSWORD_CLIENTS`]) on a command line, quotes removed: (word, byte
/// where the password starts in it). Besides [`password_option`]'s next
/// word, glued to it (`-wX`, `ldapsearch`'s getopt reads it so; not for
/// `openssl`, whose `-kfile` is another option) or after `=`: 7-Zip's
/// `-pX`; the Samba clients' `-U user%X`; curl's cookies (`-b`/`--cookie
/// 'name=X'`, not a cookie file); `htpasswd -b`'s last argument; `vault
/// login X`; `mc alias set NAME URL KEY X` (`mc config host add` too);
/// `rabbitmqctl add_user|change_password|authenticate_user USER X`;
/// Poetry's `config http-basic.REPO USER X` and `config pypi-token.REPO
/// X`; `cargo login X` and `openssl passwd X` (the last word:
/// `--registry NAME`, `-salt S` come before).
fn command_password_words(program: &str, words: &[&str]) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    let mut positional = Vec::new();
    let mut batch = false;
    let samba = matches!(program, "smbclient" | "rpcclient" | "smbcacls" | "smbget");
    // After `%` in a Samba `user%password`, after `=` in a cookie.
    let after = |w: &str, sep: char| w.find(sep).map(|i| i + 1);
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        if !w.starts_with('-') || w == "-" {
            positional.push(i);
            i += 1;
            continue;
        }
        let next = words.get(i + 1).copied();
        if program == "curl" {
            // `--oauth2-bearer X`; `--cert file:X` / `-E file:X` (the
            // certificate's password after its `:`).
            if w == "--oauth2-bearer" && next.is_some() {
                found.push((i + 1, 0));
                i += 2;
                continue;
            }
            if matches!(w, "-E" | "--cert") {
                if let Some(at) = next.and_then(|n| after(n, ':')) {
                    found.push((i + 1, at));
                }
                i += 2;
                continue;
            }
            if matches!(w, "-b" | "--cookie") {
                if let Some(at) = next.and_then(|n| after(n, '=')) {
                    found.push((i + 1, at));
                }
                i += 2;
                continue;
            }
            if let Some(v) = w.strip_prefix("--cookie=") {
                if let Some(at) = after(v, '=') {
                    found.push((i, "--cookie=".len() + at));
                }
            }
        } else if samba && matches!(w, "-U" | "--user") {
            if let Some(at) = next.and_then(|n| after(n, '%')) {
                found.push((i + 1, at));
            }
            i += 2;
            continue;
        } else if samba && (w.starts_with("-U") || w.starts_with("--user=")) {
            if let Some(at) = after(w, '%') {
                found.push((i, at));
            }
        } else if password_option(program, w) {
            if next.is_some() {
                found.push((i + 1, 0));
            }
            i += 2;
            continue;
        } else if let Some((f, _)) = w
            .split_once('=')
            .filter(|(f, _)| password_option(program, f))
        {
            found.push((i, f.len() + 1));
        } else {
            // Glued: 7-Zip's and MySQL's only form, getopt's for
            // one-letter options.
            let seven_zip = (matches!(program, "7z" | "7za" | "7zr") || mysql_client(program))
                && w.starts_with("-p");
            if mysql_client(program) && w.starts_with("--password=") {
                found.push((i, "--password=".len()));
            }
            let getopt = program != "openssl"
                && !w.starts_with("--")
                && w.get(..2).is_some_and(|f| password_option(program, f));
            if w.len() > 2 && (seven_zip || getopt) {
                found.push((i, 2));
            }
        }
        batch |= matches!(program, "htpasswd" | "mosquitto_passwd")
            && !w.starts_with("--")
            && w[1..].contains('b');
        i += 1;
    }
    let word = |n: usize| positional.get(n).map(|&i| words[i]);
    let hide_positional = |n: usize, found: &mut Vec<(usize, usize)>| {
        if let Some(&i) = positional.get(n) {
            found.push((i, 0));
        }
    };
    match program {
        "htpasswd" if batch && positional.len() >= 2 => {
            hide_positional(positional.len() - 1, &mut found)
        }
        "vault"
            if word(0) == Some("login")
                && word(1).is_some_and(|w| !w.contains('=') && w != "-") =>
        {
            hide_positional(1, &mut found)
        }
        "mc" if word(0) == Some("alias") && word(1) == Some("set") => {
            hide_positional(5, &mut found)
        }
        "mc" if word(0) == Some("config") && word(1) == Some("host") && word(2) == Some("add") => {
            hide_positional(6, &mut found)
        }
        // probe26: `mc admin user add ALIAS USER X`.
        "mc" if word(0) == Some("admin") && word(1) == Some("user") && word(2) == Some("add") => {
            hide_positional(5, &mut found)
        }
        "poetry" if word(0) == Some("config") => {
            if word(1).is_some_and(|w| w.starts_with("http-basic.")) {
                hide_positional(3, &mut found)
            } else if word(1).is_some_and(|w| w.starts_with("pypi-token.")) {
                hide_positional(2, &mut found)
            }
        }
        // `openssl passwd [-6] [-salt S] X`: the password to hash.
        "openssl" if word(0) == Some("passwd") && positional.len() >= 2 => {
            hide_positional(positional.len() - 1, &mut found)
        }
        "cargo" if word(0) == Some("login") && positional.len() >= 2 => {
            hide_positional(positional.len() - 1, &mut found)
        }
        // A secret store's write: each `KEY=VALUE` after the path or the
        // command, whatever KEY (like `--from-literal`); a value from a
        // file (`k=@file`) names it (re-probe 18).
        "vault" | "fly" | "flyctl" | "doppler"
            if matches!(
                (word(0), word(1)),
                (Some("kv"), Some("put" | "patch")) | (Some("secrets"), Some("set" | "import"))
            ) =>
        {
            for &i in &positional[2..] {
                if let Some(at) = words[i].find('=') {
                    if at > 0 && !words[i][at + 1..].starts_with('@') {
                        found.push((i, at + 1));
                    }
                }
            }
        }
        // `mosquitto_passwd -b FILE USER X`, `mkpasswd [-m M] X`: the
        // last word; `radtest USER X HOST PORT SECRET` (re-probe 18).
        "mosquitto_passwd" if batch && positional.len() >= 3 => {
            hide_positional(positional.len() - 1, &mut found)
        }
        "mkpasswd" if !positional.is_empty() => hide_positional(positional.len() - 1, &mut found),
        "radtest" => {
            hide_positional(1, &mut found);
            hide_positional(4, &mut found);
        }
        "snyk" if word(0) == Some("auth") && positional.len() >= 2 => {
            hide_positional(1, &mut found)
        }
        // `ansible-vault encrypt_string [options] X`: the plain text it
        // encrypts, the first word that is not an option or an option's
        // value.
        "ansible-vault" if word(0) == Some("encrypt_string") => {
            let valued = [
                "--name",
                "-n",
                "--vault-id",
                "--vault-password-file",
                "--encrypt-vault-id",
                "--output",
                "--stdin-name",
            ];
            let start = positional[0] + 1;
            let mut j = start;
            while j < words.len() {
                if valued.contains(&words[j]) {
                    j += 2;
                } else if words[j].starts_with('-') {
                    j += 1;
                } else {
                    found.push((j, 0));
                    break;
                }
            }
        }
        // Package managers' registry credentials (re-probe 18): `dotnet
        // nuget add|update source … -p X` and `push|delete … -k X` (not
        // `dotnet pack -p:Version=1`, an MSBuild property), Conan's `user
        // -p X` and `remote login … -p X`, Hex's `mix hex.organization auth
        // ORG --key X` and `hex.repo add … --auth-key X`, Bundler's `config
        // [set] [--global] HOST user:X`.
        "dotnet" if word(0) == Some("nuget") => {
            option_values(words, &["-p", "--password", "-k", "--api-key"], &mut found)
        }
        "conan"
            if word(0) == Some("user")
                || (word(0) == Some("remote") && word(1) == Some("login")) =>
        {
            option_values(words, &["-p", "--password"], &mut found)
        }
        "mix" if word(0).is_some_and(|w| w.starts_with("hex.")) => {
            option_values(words, &["--key", "--auth-key"], &mut found)
        }
        "bundle" if word(0) == Some("config") => {
            let n = if word(1) == Some("set") { 2 } else { 1 };
            if let (Some(host), Some(value)) = (word(n), word(n + 1)) {
                if bundler_host(host) && !value.contains("://") {
                    let at = value.find(':').map_or(0, |i| i + 1);
                    found.push((positional[n + 1], at));
                }
            }
        }
        // red36: `db2 connect to DB user U using X`.
        "db2" if word(0) == Some("connect") => {
            if let Some(n) = (0..positional.len()).find(|&n| word(n) == Some("using")) {
                hide_positional(n + 1, &mut found)
            }
        }
        // red38 (red-positional-cli-secrets): `vault operator unseal X`
        // (an unseal key; `-` reads it from stdin), `consul acl
        // set-agent-token TYPE X`, a secret-named key's value written to
        // a key-value store (`consul kv put app/db_password X`, `etcdctl
        // put /app/api_token X`), `cf auth USER X`, and `rclone config
        // create|update NAME [TYPE] key value …` pairs whose key is a
        // secret's (`secret_access_key`, `pass`, `key`, `token`).
        "vault"
            if word(0) == Some("operator")
                && word(1) == Some("unseal")
                && word(2).is_some_and(|w| w != "-") =>
        {
            hide_positional(2, &mut found)
        }
        "consul" if word(0) == Some("acl") && word(1) == Some("set-agent-token") => {
            hide_positional(3, &mut found)
        }
        "consul" | "etcdctl" => {
            let n = usize::from(program == "consul");
            let put = if program == "consul" {
                word(0) == Some("kv") && word(1) == Some("put")
            } else {
                word(0) == Some("put")
            };
            let named = word(n + 1).is_some_and(|k| {
                let last = k.rsplit(['/', '.', ':']).next().unwrap_or(k);
                keyword_in_key(last) || abbreviated_and_signing_key_names(last)
            });
            if put && named {
                hide_positional(n + 2, &mut found)
            }
        }
        "cf" if word(0) == Some("auth") => hide_positional(2, &mut found),
        "rclone" if word(0) == Some("config") => {
            let first = match word(1) {
                Some("create") => 4,
                Some("update") => 3,
                _ => usize::MAX,
            };
            let mut n = first;
            while let (Some(k), Some(_)) = (word(n), word(n + 1)) {
                let k = k.trim_end_matches('=');
                if matches!(k, "pass" | "key" | "password2") || keyword_in_key(k) {
                    hide_positional(n + 1, &mut found)
                }
                n += 2;
            }
        }
        "rabbitmqctl" => {
            let sub = (0..positional.len()).find(|&n| {
                word(n).is_some_and(|w| {
                    matches!(w, "add_user" | "change_password" | "authenticate_user")
                })
            });
            if let Some(n) = sub {
                hide_positional(n + 2, &mut found);
            }
        }
        _ => {}
    }
    found
}

/// red38: the [`PASSWORD_CLIENTS`] whose password [`command_password_words`]
/// reads by its place, not after an option.
pub(super) fn positional_client(program: &str) -> bool {
    matches!(
        program,
        "htpasswd"
            | "vault"
            | "mc"
            | "rabbitmqctl"
            | "consul"
            | "cf"
            | "etcdctl"
            | "rclone"
            | "mosquitto_passwd"
            | "mkpasswd"
            | "radtest"
            | "cargo"
            | "poetry"
    )
}

/// red38 (red-positional-cli-secrets): the items of a list of args that
/// hold a password by their place ([`command_password_words`]): after
/// the first item that is one of [`PASSWORD_CLIENTS`]
/// (`[rabbitmqctl, change_password, USER, X]`, `[htpasswd, -bc, FILE,
/// USER, X]`), or every item when `programs` (a sibling `command`) names
/// one (`command: [vault]` / `args: [operator, unseal, X]`): (item,
/// byte where the password starts in it).
pub(super) fn list_password_items(items: &[&str], programs: &[&str]) -> Vec<(usize, usize)> {
    let client = |w: &str| {
        let base = w.rsplit('/').next().unwrap_or(w);
        PASSWORD_CLIENTS.iter().find(|p| **p == base).copied()
    };
    if let Some((j, p)) = items
        .iter()
        .enumerate()
        .find_map(|(j, w)| client(w).map(|p| (j, p)))
    {
        return command_password_words(p, &items[j + 1..])
            .into_iter()
            .map(|(w, at)| (w + j + 1, at))
            .collect();
    }
    programs
        .iter()
        .filter(|p| PASSWORD_CLIENTS.contains(p))
        .flat_map(|p| command_password_words(p, items))
        .collect()
}

/// The words after one of `flags` (`-p X`) or glued to it by `=`
/// (`--password=X`), as [`command_password_words`] gives them.
fn option_values(words: &[&str], flags: &[&str], found: &mut Vec<(usize, usize)>) {
    for (i, w) in words.iter().enumerate() {
        if flags.contains(w) {
            if i + 1 < words.len() {
                found.push((i + 1, 0));
            }
        } else if let Some((f, _)) = w.split_once('=').filter(|(f, _)| flags.contains(f)) {
            found.push((i, f.len() + 1));
        }
    }
}

/// The byte ranges of the words of a command line that starts `text`, to
/// its end or the first unquoted `;`, `|`, `&`, `)`, backquote, newline or
/// redirection; `outer`, the quote the command line sits in (`sh -c
/// "..."`, a JSON string), ends it too. A quote that does not close on
/// the line ends it. Also where the command line ends.
fn command_word_ranges(text: &str, outer: Option<u8>) -> (Vec<(usize, usize)>, usize) {
    let b = text.as_bytes();
    let mut words = Vec::new();
    let mut i = 0;
    'words: loop {
        while i < b.len() && matches!(b[i], b' ' | b'\t') {
            i += 1;
        }
        if i >= b.len()
            || (matches!(b[i], b'\n' | b';' | b'|' | b'&' | b')' | b'`' | b'<' | b'>')
                && !text[i..].starts_with(OLD))
            || Some(b[i]) == outer
        {
            break;
        }
        let start = i;
        while i < b.len()
            && !matches!(
                b[i],
                b' ' | b'\t' | b'\n' | b';' | b'|' | b'&' | b')' | b'`'
            )
        {
            if matches!(b[i], b'"' | b'\'') {
                if Some(b[i]) == outer {
                    break;
                }
                let close = text[i + 1..].find(|c: char| c == b[i] as char || c == '\n');
                match close.map(|c| i + 1 + c) {
                    Some(end) if b[end] == b[i] => i = end + 1,
                    _ => {
                        if i > start {
                            words.push((start, i));
                        }
                        break 'words;
                    }
                }
            } else {
                i += 1;
            }
        }
        words.push((start, i));
    }
    (words, i)
}

/// A word's text without one pair of enclosing quotes, as a byte range.
fn unquoted(text: &str, (start, end): (usize, usize)) -> (usize, usize) {
    let w = &text[start..end];
    let quoted = w.len() >= 2
        && ((w.starts_with('"') && w.ends_with('"')) || (w.starts_with('\'') && w.ends_with('\'')));
    if quoted {
        (start + 1, end - 1)
    } else {
        (start, end)
    }
}

/// [`PASSWORD_CLIENTS`] as one alternation, longest name first (`7za`
/// before `7z`), which the regex engine scans for as literals.
pub(super) fn password_clients_re() -> &'static Regex {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        let mut names: Vec<&str> = PASSWORD_CLIENTS.to_vec();
        names.sort_by_key(|n| std::cmp::Reverse(n.len()));
        let alternation: Vec<String> = names.iter().map(|n| regex::escape(n)).collect();
        Regex::new(&alternation.join("|")).expect("static regex is valid")
    })
}

/// `text` with the passwords of [`command_password_words`] hidden on each
/// command line that runs one of [`PASSWORD_CLIENTS`] (the program a word
/// of its own: after a space, quote, `/`, `(` or a shell separator, and
/// followed by a space); `None` when there are none.
pub(super) fn hide_client_passwords(text: &str) -> Option<String> {
    let mut ranges = Vec::new();
    // Where the last command line read ends: a client named inside it is
    // one of its words (and reading each would make this quadratic).
    let mut read_to = 0;
    for m in password_clients_re().find_iter(text) {
        if m.start() < read_to {
            continue;
        }
        let before = text[..m.start()].chars().next_back();
        let starts_word = before.is_none_or(|c| {
            c.is_whitespace() || matches!(c, '/' | '"' | '\'' | '(' | ';' | '|' | '&' | '`')
        });
        let rest = &text[m.end()..];
        if !starts_word || !rest.starts_with([' ', '\t']) {
            continue;
        }
        let outer = before.filter(|c| matches!(c, '"' | '\'')).map(|c| c as u8);
        let (words, end) = command_word_ranges(rest, outer);
        read_to = m.end() + end;
        let texts: Vec<&str> = words
            .iter()
            .map(|&w| {
                let (s, e) = unquoted(rest, w);
                &rest[s..e]
            })
            .collect();
        for (w, at) in command_password_words(m.as_str(), &texts) {
            let (s, mut e) = unquoted(rest, words[w]);
            let s = s + at;
            // `--cookie='a=X'`: the closing quote stays.
            if let Some(q) = rest[s..e]
                .chars()
                .last()
                .filter(|c| matches!(c, '"' | '\''))
            {
                if rest[words[w].0..s].contains(q) {
                    e -= 1;
                }
            }
            if e > s && &rest[s..e] != OLD {
                ranges.push((m.end() + s, m.end() + e));
            }
        }
    }
    if ranges.is_empty() {
        return None;
    }
    ranges.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (s, e) in ranges {
        if s < last {
            continue;
        }
        out.push_str(&text[last..s]);
        out.push_str(OLD);
        last = e;
    }
    out.push_str(&text[last..]);
    Some(out)
}

/// A password written to a program that reads it on standard input:
/// `echo X | docker login --password-stdin` (any client's
/// `--password-stdin`, `passwd --stdin`), `echo "user:X" | chpasswd`
/// (the part after `:`), and a secret store's or password tool's stdin:
/// `echo X | gh secret set NAME`, `echo X | gcloud secrets create|versions
/// add … --data-file=-`, `echo -e "X\nX" | smbpasswd -s` (red36: also
/// `printf '%s\n%s\n' X X | smbpasswd -s`, two words), `| vercel env add
/// NAME`, `| gh auth login --with-token`, `| kinit USER`. Group 2 is the
/// echoed word (or two), group 4 the command it is piped into.
pub(super) fn stdin_password_re() -> &'static Regex {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r#"(\b(?:echo|printf)(?:[ \t]+-[neE]+)*(?:[ \t]+(?:'%s(?:\\n)?(?:%s(?:\\n)?)?'|"%s(?:\\n)?(?:%s(?:\\n)?)?"|%s(?:\\n)?))?[ \t]+)((?:"[^"\n]*"|'[^'\n]*'|[^\s|;&"']+)(?:[ \t]+(?:"[^"\n]*"|'[^'\n]*'|[^\s|;&"']+))?)([ \t]*\|[ \t]*)([^\n|;&]*)"#,
        )
        .expect("static regex is valid")
    })
}

/// red43: a literal echoed or printed into a file (`echo -n X >
/// /run/secrets/db_password`, `printf '%s' X > wg0.key`, `| tee FILE`):
/// group 2 is the word, group 4 the file, whose name says whether the
/// word is a secret ([`Redactor::key_matches`](super::Redactor::key_matches), or a `.key` file).
pub(super) fn echo_into_file_re() -> &'static Regex {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r#"(\b(?:echo|printf)(?:[ \t]+-[neE]+)*(?:[ \t]+(?:'%s(?:\\n)?'|"%s(?:\\n)?"|%s(?:\\n)?))?[ \t]+)("[^"\n]*"|'[^'\n]*'|[^\s|;&"'<>]+)([ \t]*(?:>>?|\|[ \t]*(?:sudo[ \t]+)?tee(?:[ \t]+-a)?)[ \t]*)("[^"\n]*"|'[^'\n]*'|[^\s|;&"'<>]+)"#,
        )
        .expect("static regex is valid")
    })
}

/// Whether the file [`echo_into_file_re`] writes holds a secret by its
/// name: its base name matches the key rules, or it is a `.key` file (a
/// private key: WireGuard's `wg0.key`, a TLS key).
pub(super) fn secret_file_name(path: &str, key_matches: impl Fn(&str) -> bool) -> bool {
    let path = path.trim_matches(['"', '\'']);
    let base = path.rsplit('/').next().unwrap_or(path);
    !base.is_empty()
        && !base.starts_with('$')
        && (key_matches(base)
            || base.ends_with(".key")
            || key_matches(&base.replace(['.', '-'], "_")))
}

/// [`stdin_password_re`]'s replacement.
pub(super) fn hide_stdin_password(c: &regex::Captures) -> String {
    let piped = c[4].trim_start();
    let piped = piped.strip_prefix("sudo ").unwrap_or(piped).trim_start();
    let word = &c[2];
    let (q, inner) = match word.chars().next() {
        Some('"' | '\'') => (&word[..1], &word[1..word.len() - 1]),
        _ => ("", word),
    };
    let shown = if piped.starts_with("chpasswd") {
        match inner.split_once(':') {
            Some((user, pass)) if !pass.is_empty() && pass != OLD => {
                Some(format!("{q}{user}:{OLD}{q}"))
            }
            _ => None,
        }
    } else if (piped.contains("-password-stdin")
        || piped.contains("--passwd-on-stdin")
        || sudo_stdin(&c[4])
        || piped == "passwd"
        || piped.starts_with("passwd ")
        || secret_store_stdin(piped))
        && !inner.is_empty()
        && inner != OLD
    {
        Some(format!("{q}{OLD}{q}"))
    } else {
        None
    };
    match shown {
        Some(w) => format!("{}{w}{}{}", &c[1], &c[3], &c[4]),
        None => c[0].to_string(),
    }
}

/// A command that stores what it reads on standard input as a secret:
/// `gh secret set NAME` with no `--body`, `gcloud secrets create|versions
/// add … --data-file=-`, `smbpasswd -s` (a new password, twice).
fn secret_store_stdin(piped: &str) -> bool {
    let words: Vec<&str> = piped.split_whitespace().collect();
    match words.as_slice() {
        ["gh", "secret", "set", rest @ ..] => {
            !rest.iter().any(|w| w.starts_with("--body") || *w == "-b")
        }
        ["gcloud", "secrets", ..] => {
            words
                .windows(2)
                .any(|w| w[0] == "--data-file=-" || (w[0] == "--data-file" && w[1] == "-"))
                || words.last() == Some(&"--data-file=-")
        }
        ["gh", "auth", "login", rest @ ..] => rest.contains(&"--with-token"),
        // `vault login -`: the token on stdin.
        ["vault", "login", rest @ ..] => rest.contains(&"-"),
        // `vercel env add NAME ENV` reads the value on stdin.
        ["vercel", "env", "add", ..] => true,
        // Re-probe 18: Cloudflare's `wrangler secret put NAME`, a Swarm
        // secret from stdin (`docker secret create NAME -`), `kubeseal
        // --raw` (the value it encrypts).
        ["wrangler", "secret", "put", ..] => true,
        ["docker" | "podman", "secret", "create", ..] => words.last() == Some(&"-"),
        ["kubeseal", rest @ ..] => rest.contains(&"--raw"),
        // red41: a Secret made from what is piped in (`kubectl create
        // secret generic NAME --from-file=password=/dev/stdin`, `oc`).
        ["kubectl" | "oc", "create", "secret", rest @ ..] => rest
            .iter()
            .any(|w| w.starts_with("--from") && (w.ends_with("=/dev/stdin") || w.ends_with("=-"))),
        // `dart pub token add URL` reads the token on stdin.
        ["dart" | "flutter", "pub", "token", "add", ..] => true,
        // red36: Kerberos' `kinit PRINCIPAL` reads the password on stdin.
        ["kinit", ..] => true,
        // red43: WireGuard's `wg pubkey` reads a private key on stdin
        // (`echo KEY | wg pubkey`), as `wg set IF private-key /dev/stdin`.
        ["wg", "pubkey", ..] => true,
        ["wg", "set", rest @ ..] => rest
            .windows(2)
            .any(|w| w[0] == "private-key" && w[1] == "/dev/stdin"),
        ["smbpasswd", rest @ ..] => rest
            .iter()
            .any(|w| w.starts_with('-') && !w.starts_with("--") && w.contains('s')),
        // probe26: the Elastic stack's keystores (`echo X |
        // bin/elasticsearch-keystore add --stdin NAME`, ECK's init
        // containers; Kibana's, Logstash's, OpenSearch's).
        [tool, "add", ..] => keystore_tool(tool),
        _ => false,
    }
}

/// `sudo -S ...` (also `-kS`, `--stdin`): sudo reads the password on
/// standard input.
fn sudo_stdin(piped: &str) -> bool {
    let Some(rest) = piped.trim_start().strip_prefix("sudo") else {
        return false;
    };
    rest.split_whitespace()
        .take_while(|w| w.starts_with('-'))
        .any(|w| w == "--stdin" || (!w.starts_with("--") && w.contains('S')))
}

/// Container registry clients whose `login` takes `-p PASSWORD`
/// (`helm registry login` too), and the Azure CLI (`az login -p`, `az acr
/// login -p`).
pub(super) const REGISTRY_CLIS: &[&str] = &[
    "docker", "podman", "nerdctl", "buildah", "skopeo", "helm", "oras", "az", "crane", "regctl",
];

/// `-u user:password` / `--user user:password` whatever program takes it
/// (curl behind an entrypoint script), but not `-u 1000:1000` or
/// `-u app:app` (a user and group, as `docker run -u` takes).
pub(super) fn user_password_flag(flag: &str, value: &str) -> bool {
    if !matches!(
        flag,
        "-u" | "--user" | "--proxy-user" | "--creds" | "--src-creds" | "--dest-creds"
    ) {
        return false;
    }
    let v = value.trim_matches(['"', '\'']);
    let Some((user, pass)) = v.split_once(':') else {
        return false;
    };
    let numeric = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    let user_and_group = user == pass || (numeric(user) && numeric(pass));
    let empty = user.is_empty() || pass.is_empty();
    !empty && !user_and_group && !v.contains([' ', '/', '@']) && pass != OLD
}

/// The programs of [`command_secret_flag`] a list of args or a text runs;
/// `registry-cli` for a registry client ([`REGISTRY_CLIS`]), which with a
/// `login` item ([`with_registry_login`]) is a `registry-login`.
pub(super) fn command_programs(
    items: impl IntoIterator<Item = impl AsRef<str>>,
) -> Vec<&'static str> {
    let mut found = Vec::new();
    for item in items {
        let word = item.as_ref();
        let base = word.rsplit('/').next().unwrap_or(word);
        // An item that is one of the clients with password options.
        if let Some(p) = PASSWORD_CLIENTS.iter().find(|p| **p == base) {
            if !found.contains(p) {
                found.push(p);
            }
        }
        // Most items name none: no more work for them.
        if !word.contains("redis-cli")
            && !word.contains("curl")
            && !word.contains("sshpass")
            && !REGISTRY_CLIS.iter().any(|p| word.contains(p))
        {
            continue;
        }
        for (p, with_arg) in [
            ("redis-cli", "redis-cli "),
            ("curl", "curl "),
            ("sshpass", "sshpass "),
        ] {
            if (base == p || word.contains(with_arg)) && !found.contains(&p) {
                found.push(p);
            }
        }
        if REGISTRY_CLIS.contains(&base) && !found.contains(&"registry-cli") {
            found.push("registry-cli");
        }
    }
    found
}

/// `programs` with `registry-login` added when a registry client is among
/// them and one of `lists` runs its `login`: the first item that is not
/// the client, `registry` (`helm registry login`), `acr` (`az acr login`)
/// or an option is `login`
/// (`[docker, login, -p, x]`, or `args: [login, -p, x]` beside `command:
/// [docker]`; not `[docker, run, --name, login, -p, 8080:80]`).
pub(super) fn with_registry_login<'p>(
    mut programs: Vec<&'p str>,
    lists: [&[Value]; 2],
) -> Vec<&'p str> {
    let runs_login = |l: &[Value]| {
        l.iter().filter_map(Value::as_str).find(|w| {
            let base = w.rsplit('/').next().unwrap_or(w);
            !(REGISTRY_CLIS.contains(&base)
                || matches!(*w, "registry" | "acr" | "auth")
                || w.starts_with('-'))
        }) == Some("login")
    };
    if programs.contains(&"registry-cli")
        && !programs.contains(&"registry-login")
        && lists.iter().any(|l| runs_login(l))
    {
        programs.push("registry-login");
    }
    programs
}

/// `line` with each item of its flow lists (`[a, b]`) that follows a flag
/// of one of `programs` ([`command_secret_flag`]) hidden.
pub(super) fn hide_flow_args(line: &str, programs: &[&str]) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    // A loop, not recursion: a line may hold any number of lists.
    while let Some((open, close)) = rest
        .find('[')
        .and_then(|o| rest[o..].find(']').map(|c| (o, o + c)))
    {
        out.push_str(&rest[..=open]);
        let items: Vec<&str> = rest[open + 1..close].split(',').collect();
        let flag = |s: &str| s.trim().trim_matches(['"', '\'']).to_string();
        // red38: a password by its place after the client.
        let words: Vec<String> = items.iter().map(|i| flag(i)).collect();
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        // The file's programs stand for a sibling `command` only on an
        // `args:` line (elsewhere a list names its program or none).
        let args_line = line
            .trim_start()
            .trim_start_matches("- ")
            .starts_with("args:");
        let placed = list_password_items(&words, if args_line { programs } else { &[] });
        for (i, item) in items.iter().enumerate() {
            let secret = placed.iter().any(|&(w, _)| w == i)
                || (i > 0
                    && programs
                        .iter()
                        .any(|p| command_secret_flag(p, &flag(items[i - 1]))))
                || programs.iter().any(|p| glued_password(p, &flag(item)));
            if i > 0 {
                out.push(',');
            }
            if secret && !item.trim().is_empty() {
                let lead = item.len() - item.trim_start().len();
                out.push_str(&item[..lead]);
                out.push_str(OLD);
            } else {
                out.push_str(item);
            }
        }
        rest = &rest[close..];
    }
    out.push_str(rest);
    out
}

/// probe26: a keystore tool of the Elastic stack or OpenSearch, by its
/// path's file name ([`secret_store_stdin`]).
fn keystore_tool(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    matches!(
        name,
        "elasticsearch-keystore" | "kibana-keystore" | "logstash-keystore" | "opensearch-keystore"
    )
}
