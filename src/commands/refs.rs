//! `strata refs`: Kapitan's `refs` command. Write a reference from a file
//! or stdin, reveal the tags in a file, a directory or one `--tag`, and
//! re-encrypt gpg references for new recipients (`--update`).

use crate::cli::diag_err;
use crate::cli::eprintln;
use crate::commands::inventory::InventoryFlags;
use crate::inventory::config::KapitanDefaults;
use crate::inventory::Inventory;
use crate::refs::{Refs, TargetRefs};
use crate::value::{Map, Value};
use base64::Engine;
use clap::Args;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct RefsArgs {
    #[command(flatten)]
    pub inv: InventoryFlags,
    /// Write a reference: TYPE:PATH (plain, base64, env, gpg, vaultkv, vaulttransit), value from --file
    #[arg(short = 'w', long, value_name = "TYPE:PATH", conflicts_with_all = ["reveal", "update"])]
    pub write: Option<String>,
    /// Re-encrypt a gpg reference (TYPE:PATH) for --recipients or the target's recipients
    #[arg(long, value_name = "TYPE:PATH", conflicts_with = "reveal")]
    pub update: Option<String>,
    /// Check that every gpg reference under refs/<target>/ is encrypted for
    /// its target's recipients; exit 1 when one is not
    #[arg(long, conflicts_with_all = ["write", "update", "reveal", "update_targets"])]
    pub validate_targets: bool,
    /// Re-encrypt the gpg references under refs/<target>/ whose recipients
    /// differ from the target's
    #[arg(long, conflicts_with_all = ["write", "update", "reveal"])]
    pub update_targets: bool,
    /// Reveal the tags in --file (a file, a directory or - for stdin) or --tag
    #[arg(short = 'r', long)]
    pub reveal: bool,
    /// The tag to reveal, e.g. "?{base64:my/ref:1a2b3c4d}"
    #[arg(long, value_name = "TAG")]
    pub tag: Option<String>,
    /// Reveal one reference file
    #[arg(long = "ref-file", visible_alias = "rf", value_name = "FILE")]
    pub ref_file: Option<PathBuf>,
    /// Input file (- for stdin)
    #[arg(short = 'f', long, value_name = "FILE")]
    pub file: Option<String>,
    /// Base64-encode the value before storing it (encoding: base64)
    #[arg(long = "base64", visible_alias = "b64")]
    pub base64: bool,
    /// The value is binary: read it as bytes
    #[arg(long)]
    pub binary: bool,
    /// Take backend settings (gpg recipients) from this target's parameters.kapitan.secrets
    #[arg(short = 't', long = "target-name", value_name = "TARGET")]
    pub target_name: Option<String>,
    /// gpg recipients (key names or fingerprints)
    #[arg(short = 'R', long, num_args = 1.., value_name = "RECIPIENT")]
    pub recipients: Vec<String>,
    /// vaultkv: authentication (token or approle) when the target does not set it
    #[arg(long, value_name = "AUTH")]
    pub vault_auth: Option<String>,
    /// vaultkv: mount point [default: secret]
    #[arg(long, value_name = "MOUNT")]
    pub vault_mount: Option<String>,
    /// vaultkv: path in Vault [default: the reference path]
    #[arg(long, value_name = "PATH")]
    pub vault_path: Option<String>,
    /// vaultkv: key in Vault
    #[arg(long, value_name = "KEY")]
    pub vault_key: Option<String>,
    /// Where references live [default: ./refs, or .kapitan]
    #[arg(long, value_name = "DIR")]
    pub refs_path: Option<PathBuf>,
    /// Read and write nothing outside the working directory but paths
    /// outside it given as flags (the refs directory `.kapitan` sets, a
    /// linked `refs`, the inventory), and reveal nothing (on by default on
    /// a GitHub `pull_request*` event)
    #[arg(long)]
    pub confine: bool,
}

/// Reads `file` (or stdin), at most `max` bytes: a value for `--write`
/// past what a reference file holds is refused before it is read whole (a
/// 10 GB file took about 13 times its size in memory while it was encoded;
/// probe 40).
fn read_input(file: &str, binary: bool, max: u64) -> anyhow::Result<Vec<u8>> {
    let mut buf = Vec::new();
    let too_large = || {
        anyhow::anyhow!(
            "{file}: holds more than {max} bytes: a reference holds one secret of at most {} MiB (its file at most {} MiB, base64-encoded); keep large files out of references",
            max >> 20,
            crate::refs::MAX_REF_FILE_BYTES >> 20
        )
    };
    if file == "-" {
        std::io::stdin()
            .take(max.saturating_add(1))
            .read_to_end(&mut buf)
            .map_err(|e| anyhow::anyhow!("cannot read stdin: {e}"))?;
    } else {
        let f =
            std::fs::File::open(file).map_err(|e| anyhow::anyhow!("cannot read {file}: {e}"))?;
        if f.metadata().is_ok_and(|m| m.is_file() && m.len() > max) {
            return Err(too_large());
        }
        f.take(max.saturating_add(1))
            .read_to_end(&mut buf)
            .map_err(|e| anyhow::anyhow!("cannot read {file}: {e}"))?;
    }
    if buf.len() as u64 > max {
        return Err(too_large());
    }
    if !binary && std::str::from_utf8(&buf).is_err() {
        anyhow::bail!("{file} is not UTF-8 text: add --binary for binary data");
    }
    Ok(buf)
}

fn target_refs(args: &RefsArgs) -> anyhow::Result<TargetRefs> {
    let mut t = TargetRefs::default();
    if let Some(name) = &args.target_name {
        let opts = crate::commands::lint::confined_on_pull_request(
            args.inv.options("refs")?,
            args.confine,
        )?;
        let inventory = Inventory::load(&opts).map_err(diag_err)?;
        let nodes = inventory
            .render(std::slice::from_ref(name))
            .map_err(diag_err)?;
        let node = nodes
            .get(name)
            .ok_or_else(|| anyhow::anyhow!("target `{name}` not found in the inventory"))?;
        t.target = name.clone();
        t.secrets = node.parameters.get_path(&["kapitan", "secrets"]).cloned();
        if t.secrets.is_none() {
            anyhow::bail!("parameters.kapitan.secrets not defined in {name}");
        }
    }
    if !args.recipients.is_empty()
        && t.secrets
            .as_ref()
            .and_then(|s| s.get_path(&["gpg"]))
            .is_none()
    {
        // Kapitan: the target's recipients win over --recipients.
        let list = args
            .recipients
            .iter()
            .map(|r| {
                let mut m = Map::default();
                m.insert("name".into(), Value::String(r.clone()));
                Value::Map(m)
            })
            .collect();
        let mut recips = Map::default();
        recips.insert("recipients".into(), Value::List(list));
        let mut secrets = match t.secrets.take() {
            Some(Value::Map(m)) => m,
            _ => Map::default(),
        };
        secrets.insert("gpg".into(), Value::Map(recips));
        t.secrets = Some(Value::Map(secrets));
    }
    if args.vault_key.is_some() || args.vault_mount.is_some() || args.vault_path.is_some() {
        t.vault_location = Some([
            args.vault_mount.clone().unwrap_or_default(),
            args.vault_path.clone().unwrap_or_default(),
            args.vault_key.clone().unwrap_or_default(),
        ]);
    }
    if let Some(auth) = &args.vault_auth {
        let mut secrets = match t.secrets.take() {
            Some(Value::Map(m)) => m,
            _ => Map::default(),
        };
        let mut kv = match secrets.shift_remove("vaultkv") {
            Some(Value::Map(m)) => m,
            _ => Map::default(),
        };
        kv.insert("auth".into(), Value::String(auth.clone()));
        secrets.insert("vaultkv".into(), Value::Map(kv));
        t.secrets = Some(Value::Map(secrets));
    }
    Ok(t)
}

fn split_token(token: &str) -> anyhow::Result<(&str, &str)> {
    match token.split_once(':') {
        Some((ty, path)) if !path.contains(':') && !ty.is_empty() && !path.is_empty() => {
            Ok((ty, path))
        }
        _ => anyhow::bail!(
            "Invalid token name: {token}. Token names must be in the format <type>:<path>, e.g. gpg:my/secret"
        ),
    }
}

pub fn run(args: RefsArgs) -> anyhow::Result<ExitCode> {
    let defaults = KapitanDefaults::load(Path::new(".")).map_err(diag_err)?;
    let root = args
        .refs_path
        .clone()
        .or_else(|| defaults.get_str("refs", "refs-path").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("./refs"));
    confine_refs(&args, &root)?;
    let refs = Refs::new(root);
    if let Some(token) = &args.write {
        let (ty, path) = split_token(token)?;
        let file = args
            .file
            .as_deref()
            .ok_or_else(|| anyhow::anyhow!("--file is required with --write (- for stdin)"))?;
        let data = read_input(file, args.binary, crate::refs::MAX_GENERATED_BYTES)?;
        let t = target_refs(&args)?;
        let (data, encoding) = if args.base64 {
            (
                base64::engine::general_purpose::STANDARD
                    .encode(&data)
                    .into_bytes(),
                "base64",
            )
        } else {
            (data, "original")
        };
        let f = refs
            .encode(ty, path, &data, encoding, &t)
            .map_err(diag_err)?;
        let written = refs.write_file(path, &f).map_err(diag_err)?;
        eprintln!("Wrote {}", written.display());
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(token) = &args.update {
        let (ty, path) = split_token(token)?;
        if ty != "gpg" {
            anyhow::bail!("--update re-encrypts gpg references; {token} is a {ty} reference");
        }
        let t = target_refs(&args)?;
        let r = refs
            .get(ty, path)
            .map_err(diag_err)?
            .ok_or_else(|| anyhow::anyhow!("reference {token} does not exist"))?;
        let value = refs.reveal_ref(&r, &t.target).map_err(diag_err)?;
        let f = refs
            .encode(ty, path, value.as_bytes(), &r.file.encoding, &t)
            .map_err(diag_err)?;
        refs.write_file(path, &f).map_err(diag_err)?;
        eprintln!("Updated recipients of {token}");
        return Ok(ExitCode::SUCCESS);
    }
    if args.validate_targets || args.update_targets {
        return validate_targets(&args, &refs);
    }
    if args.reveal {
        let t = TargetRefs::default();
        let mut out = std::io::stdout().lock();
        if let Some(tag) = &args.tag {
            let v = refs.reveal_str(tag, &t).map_err(diag_err)?;
            out.write_all(v.as_bytes())?;
        } else if let Some(rf) = &args.ref_file {
            let text = read_regular(rf, crate::refs::MAX_REF_FILE_BYTES)?;
            let file = crate::refs::parse_ref_file(&text)
                .map_err(|e| anyhow::anyhow!("{}: {e}", rf.display()))?;
            let r = crate::refs::Ref {
                path: rf.display().to_string(),
                hash: String::new(),
                subvar: None,
                file,
            };
            let v = refs.reveal_ref(&r, "").map_err(diag_err)?;
            out.write_all(v.as_bytes())?;
        } else if let Some(file) = &args.file {
            let mut files = Vec::new();
            if file == "-" {
                let data = read_input("-", false, u64::MAX)?;
                let text = String::from_utf8_lossy(&data);
                let v = refs.reveal_str(&text, &t).map_err(diag_err)?;
                out.write_all(v.as_bytes())?;
                return Ok(ExitCode::SUCCESS);
            }
            let p = PathBuf::from(file);
            if p.is_dir() {
                collect(&p, &mut files)?;
            } else {
                files.push(p);
            }
            // Kapitan prints one kind for a directory: YAML files if there
            // are any, else JSON files, else the others.
            let kind = |f: &Path| match f.extension().and_then(|e| e.to_str()) {
                Some("yml" | "yaml") => 0,
                Some("json") => 1,
                _ => 2,
            };
            let shown = files.iter().map(|f| kind(f)).min().unwrap_or(2);
            for f in files.iter().filter(|f| kind(f) == shown) {
                let text = read_regular(f, u64::MAX)?;
                let failed = |e: crate::refs::RefError| {
                    anyhow::anyhow!("Reveal failed for file {}: {e}", f.display())
                };
                let v = match kind(f) {
                    0 => {
                        let docs = crate::compile::pyyaml_load::load_all(&text)
                            .map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?;
                        let mut outs = String::new();
                        // Kapitan's PrettyDumper without a multiline style.
                        let opts = crate::compile::yaml_dump::DumpOptions {
                            indent: 2,
                            indentless_sequences: false,
                            multiline: None,
                            null_as_empty: false,
                            integral_floats_as_ints: false,
                            quote_digit_strings: false,
                        };
                        for d in docs {
                            let d = refs.reveal_value(&d, &t).map_err(failed)?;
                            let body = crate::compile::yaml_dump::dump(&d, &opts);
                            // yaml.dump_all(explicit_start=True)
                            if matches!(d, Value::Map(_) | Value::List(_)) {
                                outs.push_str("---\n");
                            } else {
                                outs.push_str("--- ");
                            }
                            outs.push_str(&body);
                        }
                        outs
                    }
                    1 => {
                        let j: serde_json::Value = serde_json::from_str(&text)
                            .map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?;
                        let d = refs
                            .reveal_value(&Value::from_json(&j), &t)
                            .map_err(failed)?;
                        let mut s = String::new();
                        crate::compile::output::json_dump(&d, 4, 0, true, &mut s);
                        s
                    }
                    _ => refs.reveal_str(&text, &t).map_err(failed)?,
                };
                out.write_all(v.as_bytes())?;
            }
        } else {
            anyhow::bail!("--file, --ref-file or --tag is required with --reveal");
        }
        return Ok(ExitCode::SUCCESS);
    }
    anyhow::bail!("nothing to do: use --write, --reveal or --update")
}

/// On a pull request (or `--confine`): the refs directory, unless given as
/// `--refs-path` outside the working directory, and the files given must
/// resolve inside it (a `.kapitan` `refs-path: /home/runner/...` or a
/// committed `refs -> ...` link had `--write` write, and `--reveal` read,
/// the runner's directory), and nothing is revealed: the pull request's
/// reference files choose the Vault address the runner's token goes to, as
/// in a confined compile.
fn confine_refs(args: &RefsArgs, root: &Path) -> anyhow::Result<()> {
    let mut given: Vec<&Path> = args.refs_path.iter().map(PathBuf::as_path).collect();
    given.extend(args.ref_file.as_deref());
    given.extend(args.file.as_deref().map(Path::new));
    let Some(c) = crate::commands::confine::working_tree("refs", args.confine, &given)? else {
        return Ok(());
    };
    if args.reveal || args.update.is_some() || args.update_targets {
        anyhow::bail!(
            "a confined `strata refs` (a pull request's: a GitHub `pull_request*` event, or --confine) never reveals secrets: the pull request chooses the references and the Vault address they are read from; reveal only in a trusted job"
        );
    }
    crate::commands::confine::check_inputs(Some(&c), given.iter().copied())?;
    if args.refs_path.is_none() {
        c.check_tree(root).map_err(|e| {
            if root == Path::new("./refs") {
                anyhow::anyhow!("{e}")
            } else {
                anyhow::anyhow!(
                    "`.kapitan` sets the refs path to `{}`: {e} (--refs-path)",
                    root.display()
                )
            }
        })?;
    }
    Ok(())
}

/// Files below `dir`, sorted (the one walker that ends on symlink loops
/// and links that fan out, and refuses FIFOs).
/// The text of `path`, which must be a regular file (links followed) of at
/// most `max` bytes: `--ref-file refs/x` or `-f x`, a link to `/dev/zero`,
/// read until memory ran out, and a FIFO blocked for ever (probe 40).
fn read_regular(path: &Path, max: u64) -> anyhow::Result<String> {
    // Looked at before it is opened: opening a FIFO waits for a writer.
    let meta = std::fs::metadata(path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    if !meta.is_file() {
        anyhow::bail!(
            "{}: is not a regular file (a directory, a FIFO or a device): give a file",
            path.display()
        );
    }
    if meta.len() > max {
        anyhow::bail!(
            "{}: is {} bytes: a reference file holds at most {max} bytes (one secret, base64-encoded)",
            path.display(),
            meta.len()
        );
    }
    let f = std::fs::File::open(path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    let mut text = String::new();
    f.take(max.saturating_add(1))
        .read_to_string(&mut text)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    Ok(text)
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    out.extend(
        crate::fswalk::files_following(dir)?
            .into_iter()
            .map(|(_, path)| path),
    );
    Ok(())
}

/// Refuses a catalog written by `strata compile --reveal` in a command
/// whose output others read (diff, comment, ci, push).
pub fn refuse_revealed(dir: &Path, what: &str) -> anyhow::Result<()> {
    if let Some(m) = crate::refs::revealed_marker(dir) {
        anyhow::bail!(
            "{} holds revealed secrets ({} exists): {what} never uses a catalog compiled with --reveal; compile again without --reveal",
            dir.display(),
            m.display()
        );
    }
    Ok(())
}

/// Refuses `--reveal` among compile flags passed through a review or
/// publish command.
pub fn refuse_reveal_flag<S: AsRef<std::ffi::OsStr>>(
    flags: &[S],
    what: &str,
) -> anyhow::Result<()> {
    if flags
        .iter()
        .any(|f| matches!(f.as_ref().to_str(), Some("--reveal")))
    {
        anyhow::bail!("{what} never reveals secrets: remove --reveal from the compile flags");
    }
    Ok(())
}

/// Kapitan's `refs --validate-targets` / `--update-targets` for gpg
/// references stored under `refs/<target name>/`.
fn validate_targets(args: &RefsArgs, refs: &Refs) -> anyhow::Result<ExitCode> {
    let opts =
        crate::commands::lint::confined_on_pull_request(args.inv.options("refs")?, args.confine)?;
    let inventory = Inventory::load(&opts).map_err(diag_err)?;
    let nodes = inventory.render(&[]).map_err(diag_err)?;
    let mut mismatched = 0;
    for (name, node) in &nodes {
        let dir = refs.root().join(name);
        if !dir.is_dir() {
            continue;
        }
        let secrets = node.parameters.get_path(&["kapitan", "secrets"]).cloned();
        let Some(recipients) = secrets
            .as_ref()
            .and_then(|s| s.get_path(&["gpg", "recipients"]))
            .and_then(|r| match r {
                Value::List(l) => Some(l.clone()),
                _ => None,
            })
        else {
            continue;
        };
        let want = crate::refs::gpg_fingerprints(&recipients).map_err(diag_err)?;
        let mut files = Vec::new();
        collect(&dir, &mut files)?;
        for f in files {
            let rel = f
                .strip_prefix(refs.root())
                .unwrap_or(&f)
                .to_string_lossy()
                .into_owned();
            let Some(file) = refs.read_file(&rel).map_err(diag_err)? else {
                continue;
            };
            if file.type_name != "gpg" && !file.type_name.is_empty() {
                continue;
            }
            let have_list = match file.extra.get("recipients") {
                Some(Value::List(l)) => l.clone(),
                _ => Vec::new(),
            };
            let have = crate::refs::gpg_fingerprints(&have_list).map_err(diag_err)?;
            if have == want {
                continue;
            }
            mismatched += 1;
            if args.validate_targets {
                let remove: Vec<&String> = have.iter().filter(|f| !want.contains(f)).collect();
                let add: Vec<&String> = want.iter().filter(|f| !have.contains(f)).collect();
                println!("?{{gpg:{rel}}} recipient mismatch (target {name})");
                if !remove.is_empty() {
                    println!("  needs removal: {remove:?}");
                }
                if !add.is_empty() {
                    println!("  needs addition: {add:?}");
                }
            } else {
                let t = TargetRefs {
                    target: name.clone(),
                    secrets: secrets.clone(),
                    ..Default::default()
                };
                let r = refs
                    .get("gpg", &rel)
                    .map_err(diag_err)?
                    .ok_or_else(|| anyhow::anyhow!("{rel} disappeared"))?;
                let value = refs.reveal_ref(&r, name).map_err(diag_err)?;
                let new = refs
                    .encode("gpg", &rel, value.as_bytes(), &r.file.encoding, &t)
                    .map_err(diag_err)?;
                refs.write_file(&rel, &new).map_err(diag_err)?;
                eprintln!("Updated recipients of ?{{gpg:{rel}}}");
            }
        }
    }
    Ok(if args.validate_targets && mismatched > 0 {
        ExitCode::from(crate::cli::EXIT_FINDINGS)
    } else {
        ExitCode::SUCCESS
    })
}
