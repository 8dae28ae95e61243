//! Installing strata's git `pre-commit` hook (`hooks/pre-commit`, embedded
//! in the binary) into a repository, without ever clobbering a hook that
//! someone else wrote.
//!
//! The hooks directory comes from `git rev-parse --git-path hooks`, so
//! `core.hooksPath` and linked worktrees (whose hooks live in the common git
//! directory) land where git will actually look.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The hook script, byte for byte what `hooks/pre-commit` holds.
pub const PRE_COMMIT_HOOK: &str = include_str!("../../hooks/pre-commit");

/// A line only strata's hook carries: a file holding it is ours to replace.
pub const HOOK_MARKER: &str = "# strata-managed-hook: pre-commit";

/// Suffix of the copy kept of a foreign hook that `--force` replaced.
pub const BACKUP_SUFFIX: &str = ".strata-backup";

/// What [`install`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstallOutcome {
    /// There was no hook; ours is now there.
    Installed { path: PathBuf },
    /// Our hook was already there, identical: nothing changed.
    Unchanged { path: PathBuf },
    /// An older or edited copy of our hook was replaced by this version.
    Updated { path: PathBuf },
    /// A foreign hook was moved to `backup` and ours put in its place.
    Replaced { path: PathBuf, backup: PathBuf },
}

#[derive(Debug, thiserror::Error)]
pub enum HooksError {
    #[error("cannot run `git` to find the hooks directory of {dir}: {source}")]
    GitMissing {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{dir} is not inside a git repository: {message}")]
    NotARepository { dir: PathBuf, message: String },
    #[error("{path} already exists and is not strata's hook")]
    Foreign { path: PathBuf },
    #[error("{path} is not strata's hook and {backup} already exists")]
    BackupExists { path: PathBuf, backup: PathBuf },
    #[error("cannot write the hook {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl crate::diagnostics::ToDiagnostic for HooksError {
    fn to_diagnostic(&self) -> crate::diagnostics::Diagnostic {
        let d = crate::diagnostics::Diagnostic::error(self.to_string());
        match self {
            HooksError::GitMissing { .. } => d.with_hint("install git and put it on PATH"),
            HooksError::NotARepository { .. } => {
                d.with_hint("run `strata hooks install` inside the repository, or pass --repo DIR")
            }
            HooksError::Foreign { path } => d.with_file(path.clone()).with_hint(format!(
                "merge its commands into strata's hook by hand, or pass --force to move it to {} and install strata's",
                backup_path(path).display()
            )),
            HooksError::BackupExists { path, backup } => d
                .with_file(path.clone())
                .with_hint(format!(
                    "an earlier --force kept a backup there; move {} away first",
                    backup.display()
                )),
            HooksError::Io { path, .. } => d.with_file(path.clone()),
        }
    }
}

/// The directory git runs hooks from for the repository holding `dir`.
pub fn hooks_dir(dir: &Path) -> Result<PathBuf, HooksError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["rev-parse", "--path-format=absolute", "--git-path", "hooks"])
        .output()
        .map_err(|source| HooksError::GitMissing {
            dir: dir.to_path_buf(),
            source,
        })?;
    if !out.status.success() {
        return Err(HooksError::NotARepository {
            dir: dir.to_path_buf(),
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    let text = String::from_utf8_lossy(&out.stdout);
    // Gits older than 2.31 echo the unknown --path-format flag on a line of
    // its own before the path.
    let line = text.lines().last().unwrap_or("").trim_end_matches('\r');
    if line.is_empty() {
        return Err(HooksError::NotARepository {
            dir: dir.to_path_buf(),
            message: "git printed no hooks path".to_string(),
        });
    }
    let p = PathBuf::from(line);
    // Old gits ignore --path-format and print a path relative to `dir`.
    Ok(if p.is_absolute() { p } else { dir.join(p) })
}

/// Where a foreign hook at `hook` is kept when `--force` replaces it.
pub fn backup_path(hook: &Path) -> PathBuf {
    let mut name = hook
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(BACKUP_SUFFIX);
    hook.with_file_name(name)
}

/// Whether `content` is a hook strata installed (any version of it).
pub fn is_strata_hook(content: &[u8]) -> bool {
    content
        .split(|b| *b == b'\n')
        .any(|line| line.strip_suffix(b"\r").unwrap_or(line) == HOOK_MARKER.as_bytes())
}

/// Installs [`PRE_COMMIT_HOOK`] as the `pre-commit` hook of the repository
/// holding `dir`. Re-installing over strata's own hook is always fine; a
/// foreign hook is refused unless `force`, which first moves it to
/// `pre-commit.strata-backup`.
pub fn install(dir: &Path, force: bool) -> Result<InstallOutcome, HooksError> {
    let hooks = hooks_dir(dir)?;
    install_into(&hooks, force)
}

/// [`install`] into a known hooks directory (created when missing).
pub fn install_into(hooks: &Path, force: bool) -> Result<InstallOutcome, HooksError> {
    let path = hooks.join("pre-commit");
    let io = |source| HooksError::Io {
        path: path.clone(),
        source,
    };
    // symlink_metadata: a dangling symlink is still a hook someone set up.
    let existing = match std::fs::symlink_metadata(&path) {
        Ok(_) => Some(std::fs::read(&path).unwrap_or_default()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io(e)),
    };
    let outcome = match existing {
        None => InstallOutcome::Installed { path: path.clone() },
        Some(content) if content == PRE_COMMIT_HOOK.as_bytes() && is_executable(&path) => {
            return Ok(InstallOutcome::Unchanged { path });
        }
        Some(content) if is_strata_hook(&content) => InstallOutcome::Updated { path: path.clone() },
        Some(_) if !force => return Err(HooksError::Foreign { path }),
        Some(_) => {
            let backup = backup_path(&path);
            if std::fs::symlink_metadata(&backup).is_ok() {
                return Err(HooksError::BackupExists { path, backup });
            }
            std::fs::rename(&path, &backup).map_err(io)?;
            InstallOutcome::Replaced {
                path: path.clone(),
                backup,
            }
        }
    };
    std::fs::create_dir_all(hooks).map_err(io)?;
    // Write beside it and rename, so a failed write never leaves half a hook.
    let mut tmp = tempfile::Builder::new()
        .prefix(".pre-commit.")
        .tempfile_in(hooks)
        .map_err(io)?;
    std::io::Write::write_all(&mut tmp, PRE_COMMIT_HOOK.as_bytes()).map_err(io)?;
    set_executable(tmp.path()).map_err(io)?;
    tmp.persist(&path).map_err(|e| io(e.error))?;
    Ok(outcome)
}

#[cfg(unix)]
fn set_executable(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
}

#[cfg(not(unix))]
fn set_executable(_path: &Path) -> std::io::Result<()> {
    Ok(())
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o111 == 0o111)
        .unwrap_or(false)
}

#[cfg(not(unix))]
fn is_executable(_path: &Path) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_hook_is_a_marked_posix_script() {
        assert!(PRE_COMMIT_HOOK.starts_with("#!/bin/sh\n"));
        assert!(is_strata_hook(PRE_COMMIT_HOOK.as_bytes()));
        assert!(!is_strata_hook(b"#!/bin/sh\nexec lint-staged\n"));
        // The marker must be a whole line, not a mention inside another one.
        assert!(!is_strata_hook(
            b"echo '# strata-managed-hook: pre-commit'\n"
        ));
    }

    #[test]
    fn backup_sits_beside_the_hook() {
        assert_eq!(
            backup_path(Path::new("/r/.git/hooks/pre-commit")),
            PathBuf::from("/r/.git/hooks/pre-commit.strata-backup")
        );
    }

    #[test]
    fn install_into_is_idempotent_and_guards_foreign_hooks() {
        let dir = tempfile::tempdir().unwrap();
        let hooks = dir.path().join("hooks");
        let hook = hooks.join("pre-commit");
        assert_eq!(
            install_into(&hooks, false).unwrap(),
            InstallOutcome::Installed { path: hook.clone() }
        );
        assert_eq!(std::fs::read_to_string(&hook).unwrap(), PRE_COMMIT_HOOK);
        assert!(is_executable(&hook));
        assert_eq!(
            install_into(&hooks, false).unwrap(),
            InstallOutcome::Unchanged { path: hook.clone() }
        );

        let old = format!("#!/bin/sh\n{HOOK_MARKER}\nstrata lint\n");
        std::fs::write(&hook, old).unwrap();
        assert_eq!(
            install_into(&hooks, false).unwrap(),
            InstallOutcome::Updated { path: hook.clone() }
        );

        std::fs::write(&hook, "#!/bin/sh\nmake check\n").unwrap();
        assert!(matches!(
            install_into(&hooks, false),
            Err(HooksError::Foreign { path }) if path == hook
        ));
        assert_eq!(
            std::fs::read_to_string(&hook).unwrap(),
            "#!/bin/sh\nmake check\n"
        );
        let backup = backup_path(&hook);
        assert_eq!(
            install_into(&hooks, true).unwrap(),
            InstallOutcome::Replaced {
                path: hook.clone(),
                backup: backup.clone()
            }
        );
        assert_eq!(
            std::fs::read_to_string(&backup).unwrap(),
            "#!/bin/sh\nmake check\n"
        );
        assert_eq!(std::fs::read_to_string(&hook).unwrap(), PRE_COMMIT_HOOK);

        // A second foreign hook must not overwrite the first one's backup.
        std::fs::write(&hook, "#!/bin/sh\nother\n").unwrap();
        assert!(matches!(
            install_into(&hooks, true),
            Err(HooksError::BackupExists { .. })
        ));
        assert_eq!(
            std::fs::read_to_string(&backup).unwrap(),
            "#!/bin/sh\nmake check\n"
        );
    }
}
