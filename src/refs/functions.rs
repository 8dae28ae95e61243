//! Kapitan's reference functions (`||random:str:32|base64`): what a
//! missing reference is created from. Random choices come from OpenSSL's
//! CSPRNG; keys are PKCS#8 PEM as Python's `cryptography` writes them.

use super::{RefError, Refs};
use base64::Engine;
use openssl::pkey::{PKey, Private};
use sha2::Digest;

pub const FUNCTION_NAMES: &[&str] = &[
    "randomstr",
    "random",
    "sha256",
    "ed25519",
    "rsa",
    "rsapublic",
    "publickey",
    "reveal",
    "loweralphanum",
    "basicauth",
];

const LETTERS: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const LOWER: &str = "abcdefghijklmnopqrstuvwxyz";
const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const DIGITS: &str = "0123456789";
/// Python's `string.punctuation`.
const PUNCTUATION: &str = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";

/// The result of a chain: the data, and whether `|base64` was asked.
pub struct Output {
    pub data: String,
    pub base64: bool,
}

struct Ctx<'a> {
    refs: &'a Refs,
    token: &'a str,
    data: Option<String>,
    encoding: String,
}

/// Evaluates `||f1:a:b|f2|base64` (Kapitan's `_eval_func_str`).
pub fn eval_chain(refs: &Refs, token: &str, funcs: &str) -> Result<Output, RefError> {
    let body = funcs.strip_prefix("||").unwrap_or(funcs);
    let mut ctx = Ctx {
        refs,
        token,
        data: None,
        encoding: "original".into(),
    };
    let mut base64 = false;
    // Past the run's bound nothing more is generated (each later tag made
    // its megabyte before being refused; re-probe 11).
    refs.charge_generated(0)?;
    for f in body.split('|') {
        let mut parts = f.trim().split(':');
        let name = parts.next().unwrap_or("");
        let params: Vec<&str> = parts.collect();
        if name == "base64" {
            base64 = true;
            continue;
        }
        call(&mut ctx, name, &params)?;
        // Every step's result counts (`random:str:1048576|sha256` makes a
        // megabyte to keep 64 bytes).
        refs.charge_generated(ctx.data.as_ref().map_or(0, String::len))?;
    }
    let data = ctx.data.unwrap_or_default();
    Ok(Output { data, base64 })
}

/// The largest RSA key `rsa:BITS` generates.
const MAX_RSA_BITS: u32 = 8192;

fn too_many(name: &str, params: &[&str], max: usize) -> Result<(), RefError> {
    if params.len() > max {
        return Err(RefError::new(format!(
            "{params:?}: too many arguments for function {name}"
        )));
    }
    Ok(())
}

fn call(ctx: &mut Ctx, name: &str, p: &[&str]) -> Result<(), RefError> {
    let arg = |i: usize| p.get(i).copied().unwrap_or("");
    match name {
        "randomstr" => {
            too_many(name, p, 1)?;
            ctx.data = Some(random("str", arg(0), None)?);
        }
        "loweralphanum" => {
            too_many(name, p, 1)?;
            let n = if p.is_empty() { "8" } else { arg(0) };
            ctx.data = Some(random("loweralphanum", n, None)?);
        }
        "random" => {
            too_many(name, p, 3)?;
            let ty = if p.is_empty() { "str" } else { arg(0) };
            ctx.data = Some(random(ty, arg(1), p.get(2).copied())?);
        }
        "sha256" => {
            too_many(name, p, 1)?;
            match ctx.data.as_deref() {
                Some(d) if !d.is_empty() => {
                    let h = sha2::Sha256::digest(format!("{}:{d}", arg(0)).as_bytes());
                    ctx.data = Some(super::hex(&h));
                }
                _ => {
                    return Err(RefError::new(
                        "Ref error: eval_func: nothing to sha256 hash; try something like '|random:str|sha256'",
                    ))
                }
            }
        }
        "ed25519" => {
            too_many(name, p, 0)?;
            let key = PKey::generate_ed25519().map_err(ssl)?;
            ctx.data = Some(pkcs8(&key)?);
        }
        "rsa" => {
            too_many(name, p, 1)?;
            let bits: u32 = if p.is_empty() {
                4096
            } else {
                arg(0).parse().map_err(|_| {
                    RefError::new(format!("rsa: key size `{}` is not a number", arg(0)))
                })?
            };
            // Generating a key takes time that grows with the fourth power
            // of its size, and cannot be stopped once started: 8192 bits
            // took 41 s, 16384 minutes (re-probe 7).
            if !(1024..=MAX_RSA_BITS).contains(&bits) {
                return Err(RefError::new(format!(
                    "rsa: key size {bits} is out of range (1024..{MAX_RSA_BITS}: a larger key takes minutes to generate; 2048 or 4096 are usual)"
                )));
            }
            let rsa = openssl::rsa::Rsa::generate(bits).map_err(ssl)?;
            let key = PKey::from_rsa(rsa).map_err(ssl)?;
            ctx.data = Some(pkcs8(&key)?);
        }
        "rsapublic" | "publickey" => {
            too_many(name, p, 0)?;
            let Some(d) = ctx.data.as_deref().filter(|d| !d.is_empty()) else {
                return Err(RefError::new(format!(
                    "Ref error: eval_func: public key cannot be derived; try something like '|reveal:path/to/encrypted_private_key|{name}'"
                )));
            };
            let pem = if ctx.encoding == "base64" {
                super::decode_utf8(d)?
            } else {
                d.to_string()
            };
            // Never OpenSSL's default passphrase callback: it prompts on the
            // terminal and waits (re-probe 18). Kapitan refuses such a key.
            let key = PKey::private_key_from_pem_callback(pem.as_bytes(), |_| Ok(0)).map_err(|e| {
                if pem.contains("ENCRYPTED") {
                    RefError::new(format!(
                        "|{name}: the private key is encrypted with a passphrase, which strata does not ask for"
                    ))
                    .hint("reveal from a reference that holds the key without a passphrase (strata keeps it encrypted with the reference's backend)")
                } else {
                    ssl(e)
                }
            })?;
            let out = key.public_key_to_pem().map_err(ssl)?;
            ctx.data = Some(String::from_utf8_lossy(&out).into_owned());
        }
        "reveal" => {
            too_many(name, p, 1)?;
            let path = arg(0);
            let ty = ctx.token.split(':').next().unwrap_or("");
            let found = ctx.refs.get(ty, path)?;
            let Some(r) = found else {
                return Err(RefError::new(format!(
                    "|reveal function error: {path} file in {}|reveal:{path} does not exist",
                    ctx.token
                )));
            };
            ctx.encoding = r.file.encoding.clone();
            ctx.data = Some(ctx.refs.reveal_ref(&r, "")?);
        }
        "basicauth" => {
            too_many(name, p, 2)?;
            let user = if arg(0).is_empty() {
                choose(LOWER, 8)?
            } else {
                arg(0).to_string()
            };
            let pass = if arg(1).is_empty() {
                choose(&format!("{LETTERS}{DIGITS}"), 8)?
            } else {
                arg(1).to_string()
            };
            ctx.data =
                Some(base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}")));
        }
        other => {
            return Err(RefError::new(format!(
                "{other}: unknown ref function used. Choose one of: {:?}",
                FUNCTION_NAMES
            )))
        }
    }
    Ok(())
}

fn ssl(e: openssl::error::ErrorStack) -> RefError {
    RefError::new(format!("OpenSSL: {e}"))
}

fn pkcs8(key: &PKey<Private>) -> Result<String, RefError> {
    let pem = key.private_key_to_pem_pkcs8().map_err(ssl)?;
    Ok(String::from_utf8_lossy(&pem).into_owned())
}

/// Kapitan's `random(type, nchars, special_chars)`.
fn random(ty: &str, nchars: &str, special: Option<&str>) -> Result<String, RefError> {
    let pool: String = match ty {
        "str" => format!("{LETTERS}{DIGITS}-_"),
        "int" => DIGITS.into(),
        "loweralpha" => LOWER.into(),
        "upperalpha" => UPPER.into(),
        "loweralphanum" => format!("{LOWER}{DIGITS}"),
        "upperalphanum" => format!("{UPPER}{DIGITS}"),
        "special" => format!("{LETTERS}{DIGITS}{}", special.unwrap_or(PUNCTUATION)),
        other => {
            return Err(RefError::new(format!(
                "{other}: unknown random type used. Choose one of ['str', 'int', 'loweralpha', 'upperalpha', 'loweralphanum', 'upperalphanum', 'special']"
            )))
        }
    };
    let n: usize = if nchars.is_empty() {
        match ty {
            "str" => 43,
            "int" => 16,
            _ => 8,
        }
    } else {
        nchars.trim().parse().map_err(|_| {
            RefError::new(format!(
                "Ref error: eval_func: {nchars} cannot be converted into integer."
            ))
        })?
    };
    if n > 1 << 20 {
        return Err(RefError::new(format!(
            "random: {n} characters is more than strata generates (1 MiB)"
        )));
    }
    if ty != "special" && special.is_some_and(|s| s != PUNCTUATION) {
        return Err(RefError::new(format!(
            "Ref error: eval_func: {ty} has no option to use special characters. Use type special instead, i.e. ||random:special:{}",
            special.unwrap_or("")
        )));
    }
    // Duplicates dropped and only printable ASCII kept, as Kapitan does.
    let allowed = format!("{LETTERS}{DIGITS}{PUNCTUATION}");
    let mut chars: Vec<char> = pool.chars().filter(|c| allowed.contains(*c)).collect();
    chars.sort_unstable();
    chars.dedup();
    let pool: String = chars.into_iter().collect();
    choose(&pool, n)
}

/// `n` uniform choices from `pool` (rejection sampling over random bytes).
fn choose(pool: &str, n: usize) -> Result<String, RefError> {
    let chars: Vec<char> = pool.chars().collect();
    if chars.is_empty() {
        return Err(RefError::new("random: the character pool is empty"));
    }
    let len = chars.len();
    let limit = 256 - (256 % len);
    let mut out = String::with_capacity(n);
    let mut buf = [0u8; 64];
    while out.len() < n {
        openssl::rand::rand_bytes(&mut buf).map_err(ssl)?;
        for b in buf {
            if (b as usize) < limit && out.len() < n {
                out.push(chars[b as usize % len]);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::refs::MAX_GENERATED_BYTES;

    fn run(funcs: &str) -> Result<Output, RefError> {
        let d = tempfile::tempdir().unwrap();
        let r = Refs::new(d.path());
        eval_chain(&r, "base64:x", funcs)
    }

    /// Re-probe 10 (b-refs-random-1mib-per-tag-unbounded-total): 1 MiB per
    /// tag and no total; the references one run creates are bounded.
    #[test]
    fn generated_bytes_per_run_are_bounded() {
        let d = tempfile::tempdir().unwrap();
        let r = Refs::new(d.path());
        let per = (MAX_GENERATED_BYTES / 64) as usize;
        assert_eq!(per, 1 << 20);
        for _ in 0..64 {
            let o = eval_chain(&r, "base64:x", "||random:str:1048576").unwrap();
            assert_eq!(o.data.len(), per);
        }
        let e = eval_chain(&r, "base64:x", "||random:str:1048576")
            .err()
            .expect("past the bound");
        assert!(e.to_string().contains("more than 67108864 bytes"), "{e}");
        // Nothing more is generated in this run, and a chain's every step
        // counts.
        let e = eval_chain(&r, "base64:x", "||random:str:8")
            .err()
            .expect("past the bound");
        assert!(e.to_string().contains("more than 67108864 bytes"), "{e}");
        let d2 = tempfile::tempdir().unwrap();
        let r2 = Refs::new(d2.path());
        for _ in 0..63 {
            let o = eval_chain(&r2, "base64:x", "||random:str:1048576|sha256").unwrap();
            assert_eq!(o.data.len(), 64);
        }
        assert!(eval_chain(&r2, "base64:x", "||random:str:1048576|sha256").is_err());
        // Another run starts from nothing.
        assert!(run("||random:str:1048576").is_ok());
    }

    #[test]
    fn random_pools_and_lengths() {
        let o = run("||random:str").unwrap();
        assert_eq!(o.data.len(), 43);
        assert!(o
            .data
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
        assert_eq!(run("||random:int").unwrap().data.len(), 16);
        let l = run("||loweralphanum:20").unwrap().data;
        assert!(
            l.len() == 20
                && l.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        );
        let s = run("||random:special:10:#").unwrap().data;
        assert!(s.chars().all(|c| c.is_ascii_alphanumeric() || c == '#'));
        assert!(run("||random:str:10:#").is_err());
        assert!(run("||random:nope").is_err());
        assert!(run("||nope").is_err());
        assert!(run("||randomstr|base64").unwrap().base64);
    }

    #[test]
    fn sha256_and_basicauth() {
        assert!(run("||sha256").is_err());
        let h = run("||random:str:5|sha256:salt").unwrap().data;
        assert_eq!(h.len(), 64);
        let b = run("||basicauth:user:pw").unwrap().data;
        assert_eq!(b, "dXNlcjpwdw==");
    }

    #[test]
    fn rsa_key_sizes_are_bounded() {
        for bits in ["16384", "8193", "1023"] {
            let Err(e) = run(&format!("||rsa:{bits}")) else {
                panic!("rsa:{bits} accepted");
            };
            let e = e.to_string();
            assert!(
                e.contains(&format!("key size {bits} is out of range (1024..8192")),
                "{e}"
            );
        }
    }

    #[test]
    fn keys_are_pkcs8_pem() {
        let k = run("||ed25519").unwrap().data;
        assert!(k.starts_with("-----BEGIN PRIVATE KEY-----\n"), "{k}");
        let p = run("||ed25519|publickey").unwrap().data;
        assert!(p.starts_with("-----BEGIN PUBLIC KEY-----\n"), "{p}");
        let r = run("||rsa:1024|rsapublic").unwrap().data;
        assert!(r.starts_with("-----BEGIN PUBLIC KEY-----\n"), "{r}");
    }
}
