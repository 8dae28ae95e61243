//! The `gpg` backend through the `gpg` program, as Kapitan does through
//! python-gnupg: the user's keyring, agent and pinentry (smartcards,
//! passphrases) keep working, and no OpenPGP implementation is compiled
//! into strata. `GNUPGHOME` selects the keyring.

use super::{RefError, TargetRefs};
use crate::value::Value;
use std::io::Write;
use std::process::{Command, Stdio};

fn gpg() -> Command {
    let mut c = Command::new(std::env::var_os("STRATA_GPG").unwrap_or_else(|| "gpg".into()));
    c.args(["--batch", "--no-tty", "--yes"]);
    c
}

fn run(c: Command, input: &[u8]) -> Result<Vec<u8>, RefError> {
    let out = spawn(c, input)?;
    if !out.status.success() {
        return Err(failed(&out));
    }
    Ok(out.stdout)
}

/// gpg's error lines (without `[GNUPG:]` status lines) for the message.
fn failed(out: &std::process::Output) -> RefError {
    let err = String::from_utf8_lossy(&out.stderr);
    let last: Vec<&str> = err
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("[GNUPG:]"))
        .collect();
    RefError::new(format!("gpg failed ({}): {}", out.status, last.join("; ")))
}

/// The most gpg may write, decrypted or encrypted. A message is
/// compressed before it is encrypted: 2,853 bytes of a reference file
/// decrypted to 2 GB of zeros and took 4.2 GB of memory (probe 27), and
/// the recipients' public keys, which anyone can encrypt to, are named in
/// every reference file.
const MAX_OUTPUT: u64 = 64 << 20;

/// Runs gpg under the program time limit. A message encrypted with a
/// passphrase (`gpg -c`) makes gpg-agent ask for it on the terminal and wait
/// for ever (`--batch` does not stop the agent's pinentry): gpg is stopped
/// as soon as it says it needs one (`NEED_PASSPHRASE_SYM`, a status line
/// of `decrypt`), and an error says why (re-probe 18
/// encrypted-pem-or-symmetric-gpg-ref-waits-for-a-passphrase).
fn spawn(mut c: Command, input: &[u8]) -> Result<std::process::Output, RefError> {
    use std::io::{BufRead, Read};
    let mut child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            RefError::new(format!("cannot run gpg: {e}"))
                .hint("install GnuPG (the `gpg` program) or set STRATA_GPG to its path")
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        // Large inputs: write from a thread so gpg's stdout cannot fill up.
        let data = input.to_vec();
        std::thread::spawn(move || {
            let _ = stdin.write_all(&data);
        });
    }
    let limit = crate::child::timeout();
    let dog = crate::child::Watchdog::start(child.id(), false, limit);
    // Dropping the pipe past the limit ends gpg (a broken pipe).
    let stdout = child.stdout.take().map(|o| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = o.take(MAX_OUTPUT + 1).read_to_end(&mut v);
            v
        })
    });
    let mut stderr = Vec::new();
    let mut symmetric = false;
    if let Some(err) = child.stderr.take() {
        for line in std::io::BufReader::new(err).split(b'\n') {
            let Ok(line) = line else { break };
            if line.starts_with(b"[GNUPG:] NEED_PASSPHRASE_SYM") && !symmetric {
                symmetric = true;
                let _ = child.kill();
            }
            // gpg's own messages are short; a flood is not kept.
            if stderr.len() < 64 << 10 {
                stderr.extend_from_slice(&line);
                stderr.push(b'\n');
            }
        }
    }
    let status = child
        .wait()
        .map_err(|e| RefError::new(format!("gpg: {e}")))?;
    let stdout = stdout.and_then(|t| t.join().ok()).unwrap_or_default();
    if stdout.len() as u64 > MAX_OUTPUT {
        dog.finish();
        return Err(RefError::new(format!(
            "gpg wrote more than {} MiB: a secret is never that large (a compressed message that unpacks without end?)",
            MAX_OUTPUT >> 20
        ))
        .hint("write the secret again with `strata refs --write`: this reference file does not hold one"));
    }
    if dog.finish() {
        return Err(RefError::new(format!(
            "gpg: {}",
            crate::child::timed_out_message(limit)
        )));
    }
    if symmetric {
        return Err(RefError::new(
            "the gpg message is encrypted with a passphrase (symmetric, `gpg -c`), not to the target's recipients: strata never asks for a passphrase; encrypt it to the recipients (`strata refs --write gpg:...`)",
        ));
    }
    Ok(std::process::Output {
        status,
        stdout,
        stderr,
    })
}

/// Whether gpg decrypted the message, by its status lines as python-gnupg
/// (Kapitan) decides: `DECRYPTION_OKAY` without `DECRYPTION_FAILED`. gpg
/// exits 2 when the data decrypted but a signature could not be checked
/// (signer's public key not in the keyring); Kapitan reveals those.
fn decryption_okay(stderr: &[u8]) -> bool {
    let err = String::from_utf8_lossy(stderr);
    let status = |k: &str| {
        err.lines().any(|l| {
            l.strip_prefix("[GNUPG:] ")
                .is_some_and(|r| r.split_whitespace().next() == Some(k))
        })
    };
    status("DECRYPTION_OKAY") && !status("DECRYPTION_FAILED")
}

/// `parameters.kapitan.secrets.gpg.recipients` of the target.
pub fn recipients_for(t: &TargetRefs, path: &str) -> Result<Vec<Value>, RefError> {
    let r = t
        .secrets
        .as_ref()
        .and_then(|s| s.get_path(&["gpg", "recipients"]))
        .and_then(|r| match r {
            Value::List(l) => Some(l.clone()),
            _ => None,
        });
    match r {
        Some(l) if !l.is_empty() => Ok(l),
        _ => {
            let on = if t.target.is_empty() {
                "(no target given)".to_string()
            } else {
                format!("target {}", t.target)
            };
            Err(RefError::new(format!(
                "cannot create ?{{gpg:{path}}}: parameters.kapitan.secrets.gpg.recipients is not set for {on}"
            ))
            .hint("list recipients (each `fingerprint:` or `name:`) under parameters.kapitan.secrets.gpg.recipients, or pass --recipients to strata refs"))
        }
    }
}

/// Kapitan's `lookup_fingerprints`: fingerprints as given, names looked
/// up (first key that has not expired), sorted and deduplicated.
pub fn fingerprints(recipients: &[Value]) -> Result<Vec<String>, RefError> {
    let mut out = Vec::new();
    for r in recipients {
        if let Some(f) = r.get_path(&["fingerprint"]).and_then(Value::as_str) {
            out.push(f.to_string());
        } else if let Some(n) = r.get_path(&["name"]).and_then(Value::as_str) {
            out.push(fingerprint_for_name(n)?);
        } else if let Some(s) = r.as_str() {
            out.push(s.to_string());
        } else {
            return Err(RefError::new(
                "a gpg recipient needs `fingerprint:` or `name:`",
            ));
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

fn fingerprint_for_name(name: &str) -> Result<String, RefError> {
    let mut c = gpg();
    c.args([
        "--with-colons",
        "--fixed-list-mode",
        "--list-keys",
        "--",
        name,
    ]);
    let out = run(c, b"").map_err(|e| {
        RefError::new(format!(
            "Could not find valid key for recipient: {name} ({})",
            e.message
        ))
    })?;
    let text = String::from_utf8_lossy(&out);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut expires_ok = false;
    for line in text.lines() {
        let f: Vec<&str> = line.split(':').collect();
        match f.first() {
            Some(&"pub") => {
                let exp = f.get(6).copied().unwrap_or("");
                let revoked = f.get(1).is_some_and(|v| *v == "r" || *v == "e");
                expires_ok =
                    !revoked && (exp.is_empty() || exp.parse::<u64>().is_ok_and(|e| e > now));
            }
            Some(&"fpr") if expires_ok => {
                if let Some(fp) = f.get(9).filter(|s| !s.is_empty()) {
                    return Ok(fp.to_string());
                }
            }
            _ => {}
        }
    }
    Err(RefError::new(format!(
        "Could not find valid key for recipient: {name}"
    )))
}

/// Binary OpenPGP message for the recipients, signed with the default key
/// (python-gnupg's `encrypt(sign=True, armor=False)`).
pub fn encrypt(data: &[u8], fingerprints: &[String]) -> Result<Vec<u8>, RefError> {
    let mut c = gpg();
    c.args(["--encrypt", "--sign"]);
    for f in fingerprints {
        c.args(["--recipient", f]);
    }
    run(c, data)
}

pub fn decrypt(data: &[u8]) -> Result<String, RefError> {
    let mut c = gpg();
    c.args(["--status-fd", "2", "--decrypt"]);
    let out = spawn(c, data)?;
    if !out.status.success() && !decryption_okay(&out.stderr) {
        return Err(failed(&out));
    }
    // The key is there: the value is binary (`--write gpg:x --binary`
    // without `--base64`), which Kapitan cannot reveal either.
    String::from_utf8(out.stdout).map_err(|_| {
        RefError::new("decrypted gpg data is not UTF-8 text").hint(
            "the reference holds binary data (written with --binary but without --base64): write it again with --base64",
        )
    })
}
