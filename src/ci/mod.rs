//! `strata ci` without the terminal: which GitHub Actions event the job runs
//! for (from `GITHUB_EVENT_NAME` and the payload at `GITHUB_EVENT_PATH`),
//! which targets a shard `I/N` compiles, merging the catalogs of several
//! shards into one, and the step outputs in `$GITHUB_OUTPUT` syntax.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CiError {
    #[error("invalid shard `{spec}`: {message}")]
    BadShard { spec: String, message: String },
    #[error("cannot read the event payload {}: {message}", path.display())]
    EventIo { path: PathBuf, message: String },
    #[error("the event payload {} is not valid: {message}", path.display())]
    BadEvent { path: PathBuf, message: String },
    #[error("GITHUB_EVENT_NAME is `{name}` but GITHUB_EVENT_PATH is not set")]
    NoEventPath { name: String },
    #[error("{}: {message}", path.display())]
    Collect { path: PathBuf, message: String },
    #[error("compiled/{rel} is in two shards: {} and {}", first.display(), second.display())]
    Overlap {
        rel: String,
        first: PathBuf,
        second: PathBuf,
    },
}

impl crate::diagnostics::ToDiagnostic for CiError {
    fn to_diagnostic(&self) -> crate::diagnostics::Diagnostic {
        let d = crate::diagnostics::Diagnostic::error(self.to_string());
        match self {
            CiError::BadShard { .. } => {
                d.with_hint("write the shard as I/N with 1 <= I <= N, e.g. --shard 2/3")
            }
            CiError::Overlap { .. } => d.with_hint(
                "a target was compiled by two shards: give every shard the same N and a different I; or two targets write this file (a `vars.target` naming another target, or `c` writing into the directory of `c.sub`), which no shards can split: compile such an inventory without shards",
            ),
            CiError::NoEventPath { .. } => {
                d.with_hint("GitHub Actions sets both; set GITHUB_EVENT_PATH to the payload file")
            }
            CiError::Collect { .. } => d.with_hint(
                "pass the directories written by `strata compile --shard I/N --output-path DIR`",
            ),
            _ => d,
        }
    }
}

/// One shard of a matrix: the `index`-th (1-based) of `total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub total: usize,
}

impl Shard {
    /// Parses `I/N` (`1 <= I <= N`).
    pub fn parse(spec: &str) -> Result<Shard, CiError> {
        let bad = |m: &str| CiError::BadShard {
            spec: spec.to_string(),
            message: m.to_string(),
        };
        let (i, n) = spec
            .split_once('/')
            .ok_or_else(|| bad("expected I/N, e.g. 1/3"))?;
        let num = |s: &str, what: &str| {
            s.trim()
                .parse::<usize>()
                .map_err(|_| bad(&format!("{what} `{s}` is not a whole number")))
        };
        let (index, total) = (num(i, "I")?, num(n, "N")?);
        if total == 0 {
            return Err(bad("N must be at least 1"));
        }
        if index == 0 || index > total {
            return Err(bad(&format!(
                "I must be between 1 and {total} (shards are numbered from 1)"
            )));
        }
        Ok(Shard { index, total })
    }

    /// The shard's targets: the names sorted, then every N-th starting at
    /// the I-th (position `p` goes to shard `p mod N + 1`). Depends only on
    /// the set of names, so every matrix job agrees without talking.
    pub fn select(&self, names: &[String]) -> Vec<String> {
        let mut sorted: Vec<&String> = names.iter().collect();
        sorted.sort();
        sorted.dedup();
        sorted
            .into_iter()
            .enumerate()
            .filter(|(p, _)| p % self.total == self.index - 1)
            .map(|(_, n)| n.clone())
            .collect()
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.total)
    }
}

/// What the job runs for.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// `pull_request` or `pull_request_target`: review the change.
    PullRequest {
        name: String,
        pr: crate::github::PullRequest,
    },
    /// `push`; `default_branch` is true when it pushed the repository's
    /// default branch (the catalog is published only then).
    Push {
        git_ref: String,
        default_branch: bool,
    },
    /// Anything else, including a run outside GitHub Actions (`local`).
    Other { name: String },
}

impl Event {
    /// Reads the event from the environment (`env` is `std::env::var` in
    /// the CLI; a closure in tests).
    pub fn detect(env: &dyn Fn(&str) -> Option<String>) -> Result<Event, CiError> {
        let set = |k: &str| env(k).filter(|v| !v.trim().is_empty());
        let Some(name) = set("GITHUB_EVENT_NAME") else {
            return Ok(Event::Other {
                name: "local".into(),
            });
        };
        let needs_payload = matches!(
            name.as_str(),
            "pull_request" | "pull_request_target" | "push"
        );
        if !needs_payload {
            return Ok(Event::Other { name });
        }
        let path = PathBuf::from(
            set("GITHUB_EVENT_PATH").ok_or_else(|| CiError::NoEventPath { name: name.clone() })?,
        );
        let text = crate::github::read_event(&path).map_err(|e| CiError::EventIo {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let bad = |m: String| CiError::BadEvent {
            path: path.clone(),
            message: m,
        };
        let payload: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
        if name == "push" {
            // GITHUB_REF is what the job checked out; the payload's `ref`
            // says the same for a push.
            let git_ref = set("GITHUB_REF")
                .or_else(|| payload["ref"].as_str().map(str::to_string))
                .ok_or_else(|| bad("no `ref` and GITHUB_REF is not set".into()))?;
            let default = payload
                .pointer("/repository/default_branch")
                .and_then(|v| v.as_str())
                .ok_or_else(|| bad("no `repository.default_branch`".into()))?;
            return Ok(Event::Push {
                default_branch: git_ref == format!("refs/heads/{default}"),
                git_ref,
            });
        }
        let pr = crate::github::PullRequest::from_event(&path).map_err(|e| bad(e.to_string()))?;
        if pr.base_sha.is_none() || pr.head_sha.is_none() {
            return Err(bad(
                "no `pull_request.base.sha` / `pull_request.head.sha`".into()
            ));
        }
        Ok(Event::PullRequest { name, pr })
    }

    /// The event's name as GitHub spells it (`local` outside Actions).
    pub fn name(&self) -> &str {
        match self {
            Event::PullRequest { name, .. } | Event::Other { name } => name,
            Event::Push { .. } => "push",
        }
    }
}

/// The catalog directory of one shard's output: `DIR/compiled` when it
/// exists (what `compile --output-path DIR` writes), else `DIR` itself (an
/// artifact uploaded from `DIR/compiled`).
pub fn shard_catalog(dir: &Path) -> Result<PathBuf, CiError> {
    if !dir.is_dir() {
        return Err(CiError::Collect {
            path: dir.to_path_buf(),
            message: "not a directory".into(),
        });
    }
    let compiled = dir.join("compiled");
    Ok(if compiled.is_dir() {
        compiled
    } else {
        dir.to_path_buf()
    })
}

fn walk(root: &Path, rel: &Path, out: &mut BTreeMap<PathBuf, PathBuf>) -> Result<(), CiError> {
    let dir = root.join(rel);
    let rd = std::fs::read_dir(&dir).map_err(|e| CiError::Collect {
        path: dir.clone(),
        message: e.to_string(),
    })?;
    for e in rd {
        let e = e.map_err(|e| CiError::Collect {
            path: dir.clone(),
            message: e.to_string(),
        })?;
        let r = rel.join(e.file_name());
        let ft = e.file_type().map_err(|err| CiError::Collect {
            path: e.path(),
            message: err.to_string(),
        })?;
        if ft.is_dir() {
            walk(root, &r, out)?;
        } else if ft.is_file() || ft.is_symlink() {
            out.insert(r, e.path());
        } else {
            // A FIFO held the copy for ever, a device (`/dev/zero`'s
            // kind) filled the disk (probe 36): a compile writes neither.
            return Err(CiError::Collect {
                path: e.path(),
                message: "not a regular file, directory or symbolic link (a FIFO, socket or device): a shard's catalog holds only what a compile writes".into(),
            });
        }
    }
    Ok(())
}

/// Merges the shards' catalogs into `dest` (created; it must not hold
/// files yet) and returns the merged top-level entries (the targets'
/// directories), sorted. Directories merge; a file present in two shards
/// means a target was compiled twice, which is an error naming both.
pub fn collect(dirs: &[PathBuf], dest: &Path) -> Result<Vec<String>, CiError> {
    let mut owner: BTreeMap<PathBuf, (PathBuf, PathBuf)> = BTreeMap::new();
    for dir in dirs {
        let root = shard_catalog(dir)?;
        let mut files = BTreeMap::new();
        walk(&root, Path::new(""), &mut files)?;
        for (rel, src) in files {
            // A shard's top-level names become target names in the step
            // outputs and the review: the inventory's rule for them holds.
            if let Some(std::path::Component::Normal(first)) = rel.components().next() {
                let name = first.to_string_lossy();
                if let Some(why) = crate::inventory::checks::bad_target_name(&name) {
                    return Err(CiError::Collect {
                        path: root.join(first),
                        message: format!("invalid target name {name:?}: {why}"),
                    });
                }
            }
            if let Some((first, _)) = owner.get(&rel) {
                return Err(CiError::Overlap {
                    rel: rel.to_string_lossy().replace('\\', "/"),
                    first: first.clone(),
                    second: dir.clone(),
                });
            }
            owner.insert(rel, (dir.clone(), src));
        }
    }
    let io = |p: &Path, e: std::io::Error| CiError::Collect {
        path: p.to_path_buf(),
        message: e.to_string(),
    };
    std::fs::create_dir_all(dest).map_err(|e| io(dest, e))?;
    let mut top = std::collections::BTreeSet::new();
    for (rel, (_, src)) in &owner {
        let to = dest.join(rel);
        if let Some(p) = to.parent() {
            std::fs::create_dir_all(p).map_err(|e| io(p, e))?;
        }
        let meta = std::fs::symlink_metadata(src).map_err(|e| io(src, e))?;
        if meta.file_type().is_symlink() {
            copy_link(src, &to)?;
        } else {
            std::fs::copy(src, &to).map_err(|e| io(src, e))?;
        }
        if let Some(std::path::Component::Normal(first)) = rel.components().next() {
            top.insert(first.to_string_lossy().into_owned());
        }
    }
    Ok(top.into_iter().collect())
}

#[cfg(unix)]
fn copy_link(src: &Path, to: &Path) -> Result<(), CiError> {
    let target = std::fs::read_link(src).map_err(|e| CiError::Collect {
        path: src.to_path_buf(),
        message: e.to_string(),
    })?;
    std::os::unix::fs::symlink(target, to).map_err(|e| CiError::Collect {
        path: to.to_path_buf(),
        message: e.to_string(),
    })
}

#[cfg(not(unix))]
fn copy_link(src: &Path, to: &Path) -> Result<(), CiError> {
    std::fs::copy(src, to)
        .map(|_| ())
        .map_err(|e| CiError::Collect {
            path: src.to_path_buf(),
            message: e.to_string(),
        })
}

/// The step outputs `strata ci` sets.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outputs {
    /// Targets whose catalog differs from the base (pull requests).
    pub changed_targets: Vec<String>,
    /// Files added, removed, changed or renamed (pull requests).
    pub diff_files: usize,
    pub lint_errors: usize,
    /// The pull-request comment, when one was posted or is current.
    pub comment_url: Option<String>,
}

impl Outputs {
    /// The changed targets and file count of a diff.
    pub fn from_diff(d: &crate::diff::CatalogDiff) -> (Vec<String>, usize) {
        let mut names: Vec<String> = d.targets.iter().map(|t| t.name.clone()).collect();
        names.sort();
        let files = d.targets.iter().map(|t| t.files.len()).sum();
        (names, files)
    }

    /// `name=value` lines for `$GITHUB_OUTPUT` (the targets are space
    /// separated, and again as a JSON array: a target file's name may hold
    /// a blank, which splitting the first form cannot tell from two names).
    /// A control character in a value is written escaped (`\n`): the
    /// runner would read a raw newline as the start of another output,
    /// which a pull request could choose.
    pub fn render(&self) -> String {
        let safe = |v: &str| -> String {
            v.chars()
                .map(|c| {
                    if crate::diagnostics::must_escape(c) {
                        c.escape_default().to_string()
                    } else {
                        c.to_string()
                    }
                })
                .collect()
        };
        format!(
            "changed-targets={}\nchanged-targets-json={}\ndiff-files={}\nlint-errors={}\ncomment-url={}\n",
            safe(&self.changed_targets.join(" ")),
            // serde_json escapes every control character, and a JSON string
            // holds no raw newline.
            serde_json::Value::from(self.changed_targets.clone()),
            self.diff_files,
            self.lint_errors,
            safe(self.comment_url.as_deref().unwrap_or(""))
        )
    }
}

/// The web address of an issue comment (what the API's `html_url` is).
pub fn comment_url(server: &str, repo: &str, pr: u64, id: u64) -> String {
    format!(
        "{}/{repo}/pull/{pr}#issuecomment-{id}",
        server.trim_end_matches('/')
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("t{i:02}")).rev().collect()
    }

    #[test]
    fn shards_parse_and_reject() {
        assert_eq!(Shard::parse("2/3").unwrap(), Shard { index: 2, total: 3 });
        for bad in ["0/2", "3/2", "x", "1/0", "a/2", "1/b", "", "1/2/3"] {
            assert!(
                matches!(Shard::parse(bad), Err(CiError::BadShard { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn shards_partition_the_targets() {
        let all = names(10);
        let mut union = Vec::new();
        for i in 1..=3 {
            let s = Shard { index: i, total: 3 }.select(&all);
            assert!(s.len() == 3 || s.len() == 4);
            union.extend(s);
        }
        union.sort();
        let mut expected = all.clone();
        expected.sort();
        assert_eq!(union, expected);
        // Input order does not matter.
        let mut shuffled = all.clone();
        shuffled.swap(0, 7);
        assert_eq!(
            Shard { index: 2, total: 3 }.select(&shuffled),
            Shard { index: 2, total: 3 }.select(&all)
        );
        assert_eq!(
            Shard { index: 1, total: 3 }.select(&all),
            vec!["t00", "t03", "t06", "t09"]
        );
        assert!(Shard { index: 5, total: 5 }.select(&names(2)).is_empty());
    }

    #[test]
    fn events_from_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("event.json");
        std::fs::write(
            &p,
            r#"{"ref": "refs/heads/main", "repository": {"default_branch": "main"}}"#,
        )
        .unwrap();
        let path = p.to_string_lossy().into_owned();
        let env = |name: &'static str, git_ref: Option<&'static str>| {
            let path = path.clone();
            move |k: &str| match k {
                "GITHUB_EVENT_NAME" => Some(name.to_string()),
                "GITHUB_EVENT_PATH" => Some(path.clone()),
                "GITHUB_REF" => git_ref.map(str::to_string),
                _ => None,
            }
        };
        assert_eq!(
            Event::detect(&env("push", None)).unwrap(),
            Event::Push {
                git_ref: "refs/heads/main".into(),
                default_branch: true
            }
        );
        assert_eq!(
            Event::detect(&env("push", Some("refs/heads/feature"))).unwrap(),
            Event::Push {
                git_ref: "refs/heads/feature".into(),
                default_branch: false
            }
        );
        assert_eq!(
            Event::detect(&env("schedule", None)).unwrap().name(),
            "schedule"
        );
        assert_eq!(Event::detect(&|_| None).unwrap().name(), "local");
        // A push payload is not a pull request.
        assert!(matches!(
            Event::detect(&env("pull_request", None)),
            Err(CiError::BadEvent { .. })
        ));
        let no_path = |k: &str| (k == "GITHUB_EVENT_NAME").then(|| "push".to_string());
        assert!(matches!(
            Event::detect(&no_path),
            Err(CiError::NoEventPath { .. })
        ));
    }

    #[test]
    fn collect_merges_and_refuses_overlap() {
        let d = tempfile::tempdir().unwrap();
        let write = |rel: &str| {
            let p = d.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, rel).unwrap();
        };
        write("s1/compiled/a/x.yml");
        write("s1/compiled/team/b/y.yml");
        write("s2/compiled/team/c/y.yml");
        write("s3/a/x.yml");
        let s = |n: &str| d.path().join(n);
        let top = collect(&[s("s1"), s("s2")], &s("out")).unwrap();
        assert_eq!(top, vec!["a", "team"]);
        assert_eq!(
            std::fs::read_to_string(s("out/team/c/y.yml")).unwrap(),
            "s2/compiled/team/c/y.yml"
        );
        let err = collect(&[s("s1"), s("s2"), s("s3")], &s("out2")).unwrap_err();
        assert_eq!(
            err,
            CiError::Overlap {
                rel: "a/x.yml".into(),
                first: s("s1"),
                second: s("s3")
            }
        );
        assert!(matches!(
            collect(&[s("missing")], &s("out3")),
            Err(CiError::Collect { .. })
        ));
    }

    #[test]
    fn outputs_render() {
        let o = Outputs {
            changed_targets: vec!["dev".into(), "prod".into()],
            diff_files: 3,
            lint_errors: 0,
            comment_url: Some(comment_url("https://github.com/", "acme/infra", 7, 9)),
        };
        assert_eq!(
            o.render(),
            "changed-targets=dev prod\nchanged-targets-json=[\"dev\",\"prod\"]\ndiff-files=3\nlint-errors=0\ncomment-url=https://github.com/acme/infra/pull/7#issuecomment-9\n"
        );
        // Re-probe 7: a newline in a value cannot start another output.
        let o = Outputs {
            changed_targets: vec!["t".into(), "x\ndeploy=true".into()],
            diff_files: 1,
            lint_errors: 0,
            comment_url: None,
        };
        // A blank in a name is kept apart in the JSON form.
        let blank = Outputs {
            changed_targets: vec!["x prod".into()],
            diff_files: 1,
            lint_errors: 0,
            comment_url: None,
        };
        assert!(blank
            .render()
            .contains("\nchanged-targets-json=[\"x prod\"]\n"));
        assert_eq!(
            o.render(),
            "changed-targets=t x\\ndeploy=true\nchanged-targets-json=[\"t\",\"x\\ndeploy=true\"]\ndiff-files=1\nlint-errors=0\ncomment-url=\n"
        );
    }

    /// A FIFO in a shard held `ci --collect` for ever (probe 36; a
    /// socket here, which fails the copy at once instead of blocking the
    /// test): anything but files, directories and links is refused by name.
    #[cfg(unix)]
    #[test]
    fn collect_refuses_fifos_sockets_and_devices() {
        let tmp = tempfile::tempdir().unwrap();
        let shard = tmp.path().join("s1/compiled/a");
        std::fs::create_dir_all(&shard).unwrap();
        let _socket = std::os::unix::net::UnixListener::bind(shard.join("p.yaml")).unwrap();
        let err = collect(&[tmp.path().join("s1")], &tmp.path().join("dest")).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("p.yaml") && text.contains("a FIFO, socket or device"),
            "{text}"
        );
        assert!(!tmp.path().join("dest/a/p.yaml").exists());
    }

    /// Re-probe 7 (ci-collect-target-names-unvalidated-github-output-injection):
    /// a shard's top-level names are target names.
    #[test]
    fn collect_refuses_names_that_are_not_target_names() {
        let tmp = tempfile::tempdir().unwrap();
        let shard = tmp.path().join("s1");
        let bad = shard.join("compiled").join("x\ndeploy=true");
        std::fs::create_dir_all(&bad).unwrap();
        std::fs::write(bad.join("f.yaml"), "a: 1\n").unwrap();
        let err = collect(&[shard], &tmp.path().join("out")).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("invalid target name") && msg.contains("control character"),
            "{msg}"
        );
        assert!(!tmp.path().join("out").exists());
    }
}
