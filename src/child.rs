//! The programs strata starts (`external` commands, `helm`, the Python
//! bridge for kadet and Jinja2 filters, `gpg` for secret references) under
//! a time limit, keeping only the end of what they print on stderr. A pull
//! request can change what they run: `while True: pass` in a kadet input,
//! or `yes` as an external command, would otherwise hang the compile or
//! fill strata's memory.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Seconds one program may run, unless `STRATA_PROGRAM_TIMEOUT` says
/// otherwise: far above what `helm template`, kadet or an external script
/// of a real repository takes, and below a CI job's patience.
pub const DEFAULT_TIMEOUT_SECS: u64 = 300;

/// Bytes of a program's stderr kept for the error message (its end).
const STDERR_TAIL: usize = 64 * 1024;

/// The time limit of one program: `STRATA_PROGRAM_TIMEOUT` (seconds) or
/// [`DEFAULT_TIMEOUT_SECS`].
pub fn per_program_timeout() -> Duration {
    Duration::from_secs(crate::limits::get(
        "STRATA_PROGRAM_TIMEOUT",
        DEFAULT_TIMEOUT_SECS,
    ))
}

/// Seconds all the programs of one run may take together (each watched
/// run or Python bridge call adding its time): `STRATA_RUN_PROGRAM_SECONDS`,
/// default 3,600. The 300 s are per program, and every target runs its own
/// kadet inputs and helm charts: a class whose kadet input loops for ever,
/// included by a pull request's 13-byte target files, cost 300 s a target.
pub fn run_program_seconds() -> u64 {
    crate::limits::get("STRATA_RUN_PROGRAM_SECONDS", 3_600)
}

/// Microseconds the watched programs of this process have run.
static RUN_PROGRAM_MICROS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The time limit of a program starting now: [`per_program_timeout`], or
/// what is left of [`run_program_seconds`] when that is less.
pub fn timeout() -> Duration {
    let left = crate::limits::run_time_left(run_program_seconds(), &RUN_PROGRAM_MICROS);
    per_program_timeout().min(left)
}

/// What [`run`] says of a program that did not finish in time.
pub fn timed_out_message(limit: Duration) -> String {
    if limit < per_program_timeout() {
        return format!(
            "was stopped: the programs of this run (kadet inputs, Python filters, helm, external commands) together ran for more than {} s (many targets, each running a program for long? a class many targets include?): raise STRATA_RUN_PROGRAM_SECONDS (seconds) if the platform needs longer",
            run_program_seconds()
        );
    }
    format!(
        "did not finish within {} s and was stopped (an endless loop?): raise STRATA_PROGRAM_TIMEOUT (seconds) if it needs longer",
        limit.as_secs()
    )
}

/// Names of the runner's secrets, in the environment a job gives strata,
/// that a program a pull request's compile starts (helm, the Python bridge)
/// does not get: the pull request chooses what they run (a `helm_path`
/// script, a kadet input), and a kadet input returning `dict(os.environ)`
/// showed the runner's tokens in the review (probe 31,
/// review-programs-inherit-runner-tokens). Words of the name, split at `_`,
/// `-` and `.`, or a prefix, decide; `PATH`, `HOME`, `PWD`, `HELM_*`,
/// `PYTHON*` and the locale stay.
pub fn is_secret_env_name(name: &str) -> bool {
    const WORDS: &[&str] = &[
        "TOKEN",
        "TOKENS",
        "SECRET",
        "SECRETS",
        "PASSWORD",
        "PASSWORDS",
        "PASSWD",
        "PASS",
        "PASSPHRASE",
        "KEY",
        "KEYS",
        "APIKEY",
        "CREDENTIAL",
        "CREDENTIALS",
        "CREDS",
        "AUTH",
        "PAT",
        "PRIVATE",
        "COOKIE",
        "DSN",
        "WEBHOOK",
        "KUBECONFIG",
        "JWT",
        "OIDC",
        "CONNECTION",
        // Probe 44: SonarScanner's `SONAR_LOGIN` holds its token (an older
        // one is 40 hex digits, no shape to tell it by); `DOCKER_LOGIN`
        // and the like are user names at worst. A chat hook's URL is its
        // credential (`SLACK_HOOK`).
        "LOGIN",
        "HOOK",
    ];
    const PARTS: &[&str] = &[
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "APIKEY",
    ];
    // The runner's own (ACTIONS_RUNTIME_TOKEN, ACTIONS_ID_TOKEN_REQUEST_URL,
    // the cache's address), Vault's login settings, strata's push
    // credentials, and a kubeconfig's content under its usual names.
    // Git's configuration from the environment carries
    // `http.extraheader = AUTHORIZATION: basic …` as a checkout token does.
    const PREFIXES: &[&str] = &[
        "ACTIONS_",
        "VAULT_",
        "STRATA_GIT_",
        "KUBE_CONFIG",
        "GIT_CONFIG_VALUE_",
        "GIT_CONFIG_PARAMETERS",
    ];
    let up = name.to_ascii_uppercase();
    PREFIXES.iter().any(|p| up.starts_with(p))
        || PARTS.iter().any(|p| up.contains(p))
        || up.split(['_', '-', '.']).any(|w| WORDS.contains(&w))
        // `MYSQL_PWD`, not the working directory's `PWD` / `OLDPWD`.
        || (up.ends_with("_PWD") && up != "OLDPWD")
}

/// Whether an environment variable's value is a credential whatever its
/// name: a URL with a password (`DATABASE_URL`, a proxy's
/// `http://user:pw@proxy`), an HTTP authorization header (git's
/// `GIT_CONFIG_*` extraheader), a PEM private key, or a connection string's
/// key or password (re-probe verify23, v-env-secrets-under-neutral-names).
pub fn is_secret_env_value(value: &str) -> bool {
    let low = value.to_ascii_lowercase();
    let url_password = low.match_indices("://").any(|(at, _)| {
        let rest = &low[at + 3..];
        let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
        authority
            .rsplit_once('@')
            .is_some_and(|(userinfo, _)| userinfo.contains(':'))
    });
    url_password
        || credential_shape(value)
        || ["authorization:", "bearer ", "private key-----"]
            .iter()
            .any(|w| low.contains(w))
        || ["accountkey=", "sharedaccesskey=", "password=", "pwd="]
            .iter()
            .any(|w| low.contains(w))
}

/// Whether `value` holds a token of a known shape (the review's
/// [`crate::diff::redact::CREDENTIAL_PATTERNS`], after gitleaks: `ghp_…`,
/// `github_pat_…`, `AKIA…`, `glpat-…`, `xox…`, JWTs). A runner's token
/// under a name the name rule does not know (an action's `INPUT_GH`, a
/// workflow's `DEPLOY`) reached a pull request's kadet input in a confined
/// compile (probe 42, env-token-under-neutral-name); the review hides the
/// shape where it is written as is, not once a program encodes it.
fn credential_shape(value: &str) -> bool {
    static SHAPES: std::sync::OnceLock<Vec<regex::Regex>> = std::sync::OnceLock::new();
    SHAPES
        .get_or_init(|| {
            crate::diff::redact::CREDENTIAL_PATTERNS
                .iter()
                .filter_map(|p| regex::Regex::new(p).ok())
                .collect()
        })
        .iter()
        .any(|re| re.is_match(value))
}

/// Leaves the runner's secrets ([`is_secret_env_name`],
/// [`is_secret_env_value`]) out of `cmd`'s environment.
pub fn withhold_secret_env(cmd: &mut Command) {
    for (k, v) in std::env::vars_os() {
        if is_secret_env_name(&k.to_string_lossy()) || is_secret_env_value(&v.to_string_lossy()) {
            cmd.env_remove(&k);
        }
    }
}

/// Kills a process (or its whole process group) unless disarmed in time.
pub struct Watchdog {
    disarm: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<bool>>,
    /// When watching began; its time is added to the run's programs' once.
    started: Option<std::time::Instant>,
}

impl Watchdog {
    /// Watches process `pid`; with `group`, `pid` leads its own process
    /// group and the whole group is killed (a shell's children too).
    pub fn start(pid: u32, group: bool, limit: Duration) -> Watchdog {
        let (tx, rx) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("strata-watchdog".into())
            .spawn(move || match rx.recv_timeout(limit) {
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let Ok(pid) = libc::pid_t::try_from(pid) else {
                        return false;
                    };
                    let target = if group { -pid } else { pid };
                    // SAFETY: sends a signal; no memory is shared.
                    unsafe { libc::kill(target, libc::SIGKILL) };
                    true
                }
                _ => false,
            })
            .ok();
        Watchdog {
            disarm: Some(tx),
            thread,
            started: Some(std::time::Instant::now()),
        }
    }

    /// Stops watching; `true` when the time ran out and the process was
    /// killed.
    pub fn finish(mut self) -> bool {
        self.stop()
    }

    fn stop(&mut self) -> bool {
        if let Some(t) = self.started.take() {
            crate::limits::add_run_time(&RUN_PROGRAM_MICROS, t);
        }
        drop(self.disarm.take());
        self.thread
            .take()
            .map(|t| t.join().unwrap_or(false))
            .unwrap_or(false)
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stop();
    }
}

/// How a program run by [`run`] ended.
#[derive(Debug)]
pub enum Ended {
    /// It exited (or was killed by something else); the end of its stderr.
    Exited(ExitStatus, String),
    /// It ran past the limit and was killed.
    TimedOut(Duration),
}

/// Runs `cmd` in its own process group with stdin closed and stderr
/// captured (the caller sets stdout), killing the group past [`timeout`].
/// The end of stderr is read on a thread and waited for only briefly once
/// the program has exited: a daemon it started in a session of its own
/// (`setsid`), which the group kill misses, may hold the pipe open forever.
pub fn run(cmd: &mut Command) -> std::io::Result<Ended> {
    run_within(cmd, timeout())
}

/// [`run`] with the time limit given.
fn run_within(cmd: &mut Command, limit: Duration) -> std::io::Result<Ended> {
    cmd.stdin(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd.spawn()?;
    let dog = Watchdog::start(child.id(), true, limit);
    let tail = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (done_tx, done_rx) = mpsc::channel::<()>();
    if let Some(mut err) = child.stderr.take() {
        let tail = std::sync::Arc::clone(&tail);
        let _ = std::thread::Builder::new()
            .name("strata-stderr".into())
            .spawn(move || {
                let mut buf = [0u8; 8192];
                loop {
                    match err.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
                            t.extend_from_slice(&buf[..n]);
                            if t.len() > 2 * STDERR_TAIL {
                                let cut = t.len() - STDERR_TAIL;
                                t.drain(..cut);
                            }
                        }
                    }
                }
                let _ = done_tx.send(());
            });
    }
    let status = child.wait()?;
    let killed = dog.finish();
    // The program is gone; what still holds its stderr is not waited for.
    let _ = done_rx.recv_timeout(Duration::from_secs(2));
    if killed {
        return Ok(Ended::TimedOut(limit));
    }
    let mut tail = std::mem::take(&mut *tail.lock().unwrap_or_else(|e| e.into_inner()));
    if tail.len() > STDERR_TAIL {
        tail.drain(..tail.len() - STDERR_TAIL);
    }
    Ok(Ended::Exited(
        status,
        String::from_utf8_lossy(&tail).into_owned(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_past_its_limit_is_killed_with_its_children() {
        let started = std::time::Instant::now();
        let mut cmd = Command::new("/bin/sh");
        // The shell's child holds stderr open too: the whole group is
        // killed.
        cmd.arg("-c")
            .arg("sleep 30 & sleep 30")
            .stdout(Stdio::null());
        let limit = Duration::from_millis(300);
        let dog_run = matches!(run_within(&mut cmd, limit).unwrap(), Ended::TimedOut(_));
        assert!(dog_run, "the watchdog did not fire");
        assert!(started.elapsed() < Duration::from_secs(20));
    }

    #[test]
    fn a_daemon_holding_stderr_does_not_hold_the_caller() {
        // `setsid` leaves the process group: the program exits at once, its
        // daemon keeps the pipe open for 30 s.
        let started = std::time::Instant::now();
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg("setsid sleep 30 & echo started >&2; exit 0")
            .stdout(Stdio::null());
        match run(&mut cmd).unwrap() {
            Ended::Exited(status, tail) => {
                assert!(status.success());
                assert_eq!(tail, "started\n");
            }
            Ended::TimedOut(_) => panic!("reported as timed out"),
        }
        assert!(started.elapsed() < Duration::from_secs(20));
    }

    #[test]
    fn a_quick_program_keeps_the_end_of_its_stderr() {
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg("i=0; while [ $i -lt 3000 ]; do echo line $i >&2; i=$((i+1)); done; exit 3")
            .stdout(Stdio::null());
        match run(&mut cmd).unwrap() {
            Ended::Exited(status, tail) => {
                assert_eq!(status.code(), Some(3));
                assert!(tail.ends_with("line 2999\n"), "{tail}");
                assert!(tail.len() <= STDERR_TAIL);
            }
            Ended::TimedOut(_) => panic!("timed out"),
        }
    }

    #[test]
    fn secret_env_names_are_told_from_the_ones_programs_need() {
        for name in [
            "GITHUB_TOKEN",
            "GH_PAT",
            "VAULT_ADDR",
            "VAULT_TOKEN",
            "ACTIONS_RUNTIME_TOKEN",
            "ACTIONS_ID_TOKEN_REQUEST_URL",
            "STRATA_GIT_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "ARM_CLIENT_SECRET",
            "GCP_SA_KEY",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "KUBECONFIG",
            "KUBE_CONFIG_DATA",
            "NPM_TOKEN",
            "DOCKERHUB_PASSWORD",
            "db_password",
            "SENTRY_DSN",
            "SLACK_WEBHOOK_URL",
            "SSH_AUTH_SOCK",
            "MYAPITOKEN",
            // re-probe verify23 (v-env-secrets-under-neutral-names)
            "GIT_CONFIG_VALUE_0",
            "GIT_CONFIG_PARAMETERS",
            "MYSQL_PWD",
            "CI_JOB_JWT",
            "AZURE_STORAGE_CONNECTION_STRING",
            "oidc_request_url",
            // Probe 44
            "SONAR_LOGIN",
            "sonar.login",
            "SLACK_HOOK",
        ] {
            assert!(is_secret_env_name(name), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "PWD",
            "OLDPWD",
            "LANG",
            "LC_ALL",
            "TMPDIR",
            "HELM_CACHE_HOME",
            "HELM_REPOSITORY_CONFIG",
            "PYTHONPATH",
            "PYTHONHASHSEED",
            "VIRTUAL_ENV",
            "SSL_CERT_FILE",
            "XDG_CONFIG_HOME",
            "GITHUB_WORKSPACE",
            "RUNNER_TEMP",
            "CI",
            "GIT_CONFIG_COUNT",
            "LOGNAME",
            "USER",
        ] {
            assert!(!is_secret_env_name(name), "{name}");
        }
    }

    /// Re-probe verify23 (v-env-secrets-under-neutral-names): a kadet
    /// input's `dict(os.environ)` still showed credentials held under names
    /// the name rule does not know.
    #[test]
    fn secret_env_values_are_told_from_plain_settings() {
        for value in [
            "postgres://app:V23DBPW@db:5432/app",
            "http://u:V23PROXY@proxy:3128",
            "AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hz",
            "'http.extraheader'='Authorization: Bearer ghs_x'",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl",
            "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=V23AZ==",
            "Server=db;User Id=sa;Password=V23;",
            // Probe 42: token shapes under any name.
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "github_pat_11ABCDEFG0abcdefghijkl_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVV",
            "AKIAIOSFODNN7EXAMPLE",
            "glpat-abcdefghij0123456789",
            "xoxb-1234567890-abcdefghij",
            // The review's vendor shapes too (SonarQube's `sqp_`).
            "sqp_0123456789abcdef0123456789abcdef01234567",
        ] {
            assert!(is_secret_env_value(value), "{value}");
        }
        for value in [
            "/usr/local/bin:/usr/bin",
            "http://proxy:3128",
            "https://github.com/o/r@v1",
            "git@github.com:o/r.git",
            "https://api.github.com",
            "en_US.UTF-8",
            "/home/runner/work/r/r",
            "ssh://git@host:22/r",
        ] {
            assert!(!is_secret_env_value(value), "{value}");
        }
    }
}
