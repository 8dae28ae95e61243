//! The limits a user may set through the environment (`STRATA_EVAL_MEMORY`,
//! `STRATA_EVAL_ALLOCATIONS`, `STRATA_EVAL_STEPS`, `STRATA_RENDER_MEMORY`,
//! `STRATA_PROGRAM_TIMEOUT`, `STRATA_EVAL_TIMEOUT`, `STRATA_MAX_TARGET_FILES`,
//! `STRATA_MAX_FILES`, `STRATA_CHECKOUT_FILES`, `STRATA_CHECKOUT_BYTES`,
//! `STRATA_CHECKOUT_FILE_BYTES`, `STRATA_CHECKOUT_REPEATED_FILES`,
//! `STRATA_CHECKOUT_PATH_COMPONENTS`, `STRATA_MAX_WALK_LEVELS`,
//! `STRATA_MAX_RUN_WALK_LEVELS`, `STRATA_MAX_RENDER_LOOKUPS`,
//! `STRATA_MAX_TARGET_INSTALLS`, `STRATA_COMMENT_LIST_BYTES`,
//! `STRATA_COMMENT_LIST_SECONDS`, `STRATA_MAX_YAML_NODES`,
//! `STRATA_RUN_EVAL_SECONDS`, `STRATA_RUN_PROGRAM_SECONDS`,
//! `STRATA_MAX_RUN_ALIAS_NODES`, `STRATA_MAX_CATALOG_BYTES`,
//! `STRATA_MAX_DOWNLOAD_BYTES`, `STRATA_MAX_FETCH_BYTES`,
//! `STRATA_REVIEW_MEMORY_BYTES`):
//! one reading rule for
//! all of them, so the check of their values and their use cannot disagree.

/// Every limit variable and the unit of its value.
pub const VARIABLES: [(&str, &str); 28] = [
    ("STRATA_EVAL_MEMORY", "bytes"),
    ("STRATA_EVAL_ALLOCATIONS", "allocations"),
    ("STRATA_RENDER_MEMORY", "bytes"),
    ("STRATA_PROGRAM_TIMEOUT", "seconds"),
    ("STRATA_EVAL_TIMEOUT", "seconds"),
    ("STRATA_EVAL_STEPS", "steps"),
    ("STRATA_MAX_TARGET_FILES", "files"),
    ("STRATA_MAX_FILES", "files"),
    ("STRATA_CHECKOUT_FILES", "files"),
    ("STRATA_CHECKOUT_BYTES", "bytes"),
    ("STRATA_CHECKOUT_FILE_BYTES", "bytes"),
    ("STRATA_CHECKOUT_REPEATED_FILES", "files"),
    ("STRATA_CHECKOUT_PATH_COMPONENTS", "path components"),
    ("STRATA_CHECKOUT_TREE_BYTES", "bytes"),
    ("STRATA_MAX_WALK_LEVELS", "directory levels"),
    ("STRATA_MAX_RUN_WALK_LEVELS", "directory levels"),
    ("STRATA_MAX_RENDER_LOOKUPS", "reference lookups"),
    ("STRATA_MAX_TARGET_INSTALLS", "installs"),
    ("STRATA_COMMENT_LIST_BYTES", "bytes"),
    ("STRATA_COMMENT_LIST_SECONDS", "seconds"),
    ("STRATA_MAX_YAML_NODES", "nodes"),
    ("STRATA_RUN_EVAL_SECONDS", "seconds"),
    ("STRATA_RUN_PROGRAM_SECONDS", "seconds"),
    ("STRATA_MAX_RUN_ALIAS_NODES", "nodes"),
    ("STRATA_MAX_CATALOG_BYTES", "bytes"),
    ("STRATA_MAX_DOWNLOAD_BYTES", "bytes"),
    ("STRATA_MAX_FETCH_BYTES", "bytes"),
    ("STRATA_REVIEW_MEMORY_BYTES", "bytes"),
];

/// The most bytes of compiled files an incremental review keeps in memory
/// per side instead of writing them (`memtree`):
/// `STRATA_REVIEW_MEMORY_BYTES`, default 256 MiB; the rest is written.
pub fn review_memory_bytes() -> u64 {
    get("STRATA_REVIEW_MEMORY_BYTES", 256 << 20)
}

/// The most files one compile run writes, all targets together:
/// `STRATA_MAX_FILES`, default 1,000,000 (a pull request adding ten
/// targets of 100,000 files each made a review run for minutes).
pub fn max_files() -> u64 {
    get("STRATA_MAX_FILES", 1_000_000)
}

/// The most bytes one compile run writes into the catalog, all targets
/// together: `STRATA_MAX_CATALOG_BYTES`, default 16 GiB. The file counts
/// bound how many files, not how large: a 100 MB file in the tree (zeros
/// pack to a few hundred kilobytes) copied by a class that a pull request's
/// 13-byte target files include was written once per target, 954 MB for
/// ten, a full disk for a few hundred (probe 39, catalog-bytes-unbounded).
pub fn max_catalog_bytes() -> u64 {
    get("STRATA_MAX_CATALOG_BYTES", 16 << 30)
}

/// The most files a checked-out or fetched git tree may hold:
/// `STRATA_CHECKOUT_FILES`, default 200,000.
pub fn checkout_files() -> u64 {
    get("STRATA_CHECKOUT_FILES", 200_000)
}

/// The most path components (files and directories, each counted with its
/// depth) a checked-out or fetched git tree may hold:
/// `STRATA_CHECKOUT_PATH_COMPONENTS`, default 4,000,000.
pub fn checkout_path_components() -> u64 {
    get("STRATA_CHECKOUT_PATH_COMPONENTS", 4_000_000)
}

/// The largest tree object (one directory's listing) a checkout or fetch
/// reads: `STRATA_CHECKOUT_TREE_BYTES`, default 32 MiB, some 900,000
/// entries of 10-byte names, far more than the files either writes.
pub fn checkout_tree_bytes() -> u64 {
    get("STRATA_CHECKOUT_TREE_BYTES", 32 << 20)
}

/// The largest file a checked-out or fetched git tree may hold:
/// `STRATA_CHECKOUT_FILE_BYTES`, default 256 MiB.
pub fn checkout_file_bytes() -> u64 {
    get("STRATA_CHECKOUT_FILE_BYTES", 256 << 20)
}

/// The most bytes the git trees one run fetches may write, all together:
/// `STRATA_MAX_FETCH_BYTES`, default 4 GiB (one blob of zeros under many
/// names packs to almost nothing and is written once per name; probe 40).
pub fn max_fetch_bytes() -> u64 {
    get("STRATA_MAX_FETCH_BYTES", 4 << 30)
}

/// The most files one target's compile writes: `STRATA_MAX_TARGET_FILES`,
/// default 100,000. One jsonnet or kadet key is one file, so 51 bytes of
/// jsonnet wrote 300,000 files and made a review run for minutes.
pub fn max_target_files() -> u64 {
    get("STRATA_MAX_TARGET_FILES", 100_000)
}

/// The most Carvel package installs one target's compile renders:
/// `STRATA_MAX_TARGET_INSTALLS`, default 1,000 (real clusters have tens).
/// Each install is a package resolution, a template run and a directory of
/// files, so a 232-byte jsonnet writing 7,500 PackageInstall documents kept
/// a compile, and a review, busy for over a minute (re-probe 18).
pub fn max_target_installs() -> u64 {
    get("STRATA_MAX_TARGET_INSTALLS", 1_000)
}

/// The most worker threads a compile or fetch starts, whatever
/// `--parallelism` or `.kapitan` asks for (a pull request sets the latter):
/// 16, or the number of CPUs when there are more. Each compile worker
/// reserves a 64 MiB stack: 16 of them fit well under a 4 GiB address-space
/// limit.
pub fn max_workers() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .max(16)
}

/// Seconds one evaluation (a jsonnet input or filter, a Jinja2 render, a
/// Starlark template) may run: `STRATA_EVAL_TIMEOUT`, default 60. The
/// backstop for work no budget counts.
pub fn eval_timeout() -> std::time::Duration {
    std::time::Duration::from_secs(get("STRATA_EVAL_TIMEOUT", 60))
}

/// Seconds all the evaluations of one run may take together:
/// `STRATA_RUN_EVAL_SECONDS`, default 3,600. [`eval_timeout`] is per
/// evaluation, and every target evaluates its own entries: one class whose
/// jsonnet runs until the 60 s limit, included by the 13-byte target files
/// of a pull request, cost 60 s per target, hours for a thousand (probe 39,
/// eval-timeout-per-target-times-targets). A whole compile of the bench
/// platform evaluates for well under a minute; an hour leaves room for a
/// fleet whose every target evaluates a heavy library (kube-prometheus
/// takes seconds per target) in a full compile.
pub fn run_eval_seconds() -> u64 {
    get("STRATA_RUN_EVAL_SECONDS", 3_600)
}

/// Microseconds the evaluations of this process have run, the finished
/// ones (an evaluation nested in another counts with it, once).
static RUN_EVAL_MICROS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

thread_local! {
    /// Open [`EvalClock`]s on this thread, and whether the outermost's
    /// deadline is the run's budget rather than [`eval_timeout`].
    static EVAL_DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    static EVAL_DEADLINE: std::cell::Cell<(Option<std::time::Instant>, bool)> =
        const { std::cell::Cell::new((None, false)) };
}

/// The time of one evaluation (a jsonnet input or filter, a Jinja2 render,
/// a Starlark template file), from [`eval_clock`] until it is dropped,
/// counted against [`run_eval_seconds`]. Its deadline is [`eval_timeout`]
/// from its start, or sooner when less is left of the run's budget; an
/// evaluation started inside another (a Jinja2 render from jsonnet's
/// `jinja2_render_file`, a loaded Starlark file) shares the outer one's.
pub struct EvalClock {
    start: std::time::Instant,
    outer: bool,
}

/// Starts an [`EvalClock`] on this thread.
pub fn eval_clock() -> EvalClock {
    let start = std::time::Instant::now();
    let outer = EVAL_DEPTH.with(|d| {
        d.set(d.get() + 1);
        d.get() == 1
    });
    if outer {
        let left = run_time_left(run_eval_seconds(), &RUN_EVAL_MICROS);
        let per = eval_timeout();
        let (allowed, by_run) = if left < per {
            (left, true)
        } else {
            (per, false)
        };
        let deadline = start.checked_add(allowed);
        EVAL_DEADLINE.with(|c| c.set((deadline, by_run)));
        minijinja::set_thread_render_deadline(Some(deadline));
    }
    EvalClock { start, outer }
}

impl EvalClock {
    /// The instant past which the evaluation stops (`None`: no limit).
    pub fn deadline(&self) -> Option<std::time::Instant> {
        EVAL_DEADLINE.with(|c| c.get().0)
    }

    /// Whether the run's budget, not [`eval_timeout`], set the deadline of
    /// the outermost evaluation open on this thread.
    pub fn by_run(&self) -> bool {
        eval_deadline_by_run()
    }
}

/// Whether the run's budget, not [`eval_timeout`], set the deadline of the
/// last evaluation started on this thread.
pub fn eval_deadline_by_run() -> bool {
    EVAL_DEADLINE.with(|c| c.get().1)
}

impl Drop for EvalClock {
    fn drop(&mut self) {
        EVAL_DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
        if self.outer {
            add_run_time(&RUN_EVAL_MICROS, self.start);
            minijinja::set_thread_render_deadline(None);
        }
    }
}

/// What is left of a run-wide budget of `secs` seconds when `used`
/// microseconds of it are spent (the evaluations' or the programs').
pub fn run_time_left(secs: u64, used: &std::sync::atomic::AtomicU64) -> std::time::Duration {
    let used = std::time::Duration::from_micros(used.load(std::sync::atomic::Ordering::Relaxed));
    std::time::Duration::from_secs(secs).saturating_sub(used)
}

/// Adds the time since `start` to a run-wide count of microseconds.
pub fn add_run_time(used: &std::sync::atomic::AtomicU64, start: std::time::Instant) {
    let us = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
    used.fetch_add(us, std::sync::atomic::Ordering::Relaxed);
}

/// What an evaluation stopped by the run's budget says.
pub fn run_eval_message() -> String {
    format!(
        "the evaluations of this run together ran for more than {} s and this one was stopped (many targets, each evaluating for long? a class many targets include?): raise STRATA_RUN_EVAL_SECONDS (seconds) if the platform needs longer",
        run_eval_seconds()
    )
}

/// What an evaluation stopped at its deadline says: the per-evaluation
/// limit, or the run's budget when that set the deadline (the last
/// evaluation started on this thread).
pub fn eval_time_message() -> String {
    if eval_deadline_by_run() {
        run_eval_message()
    } else {
        format!(
            "the evaluation ran for more than {} s and was stopped (an endless or quadratic loop?): raise STRATA_EVAL_TIMEOUT (seconds) if it needs longer",
            eval_timeout().as_secs()
        )
    }
}

/// `name`'s value when it is a positive whole number, else `default`.
pub fn get(name: &str, default: u64) -> u64 {
    std::env::var_os(name)
        .and_then(|v| parse(&v.to_string_lossy()))
        .unwrap_or(default)
}

fn parse(text: &str) -> Option<u64> {
    text.trim().parse::<u64>().ok().filter(|&n| n > 0)
}

/// The first limit variable that is set to something [`get`] would ignore,
/// as an error message: a typo (`2G`) must not leave the default in place
/// without a word.
pub fn first_invalid() -> Option<String> {
    VARIABLES.into_iter().find_map(|(name, unit)| {
        let v = std::env::var_os(name)?;
        let text = v.to_string_lossy();
        parse(&text).is_none().then(|| {
            format!(
                "{name}={text:?} is not a positive whole number of {unit}: set it to one (e.g. {name}={}), or unset it for the default",
                match unit {
                    "seconds" => "600",
                    "files" => "500000",
                    "installs" => "5000",
                    _ => "4294967296",
                }
            )
        })
    })
}

/// How long an evaluation may run before [`Watchdog`] ends the process:
/// [`eval_timeout`] and as long again, at most 30 s more.
pub fn watchdog_limit() -> std::time::Duration {
    let t = eval_timeout();
    // A huge STRATA_EVAL_TIMEOUT means no limit, never an overflow.
    t.saturating_add(t.min(std::time::Duration::from_secs(30)))
}

/// The last stop for one evaluation that no budget can interrupt: a native
/// operation (Starlark's `==`, `str()` or `sorted` of a list holding the
/// previous one twice, 60 times over: 2^60 leaves from a few values)
/// never returns to the statement checks that enforce the time limit
/// (re-probe 16). Unless dropped first, the process ends at its deadline
/// with exit code 2, saying what ran too long. A catalog is replaced only
/// once whole, so the previous one stays; scratch directories are locked
/// and swept by the next run. One thread watches every deadline.
pub struct Watchdog {
    id: u64,
}

type Deadlines = std::collections::BTreeMap<u64, (std::time::Instant, String)>;

static WATCHED: std::sync::Mutex<Deadlines> = std::sync::Mutex::new(Deadlines::new());

/// Starts a [`Watchdog`] for `what` (a file, an overlay).
/// It goes off at [`watchdog_limit`].
pub fn watchdog(what: String) -> Watchdog {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    static WATCHER: std::sync::Once = std::sync::Once::new();
    let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let at = std::time::Instant::now().checked_add(watchdog_limit());
    if let (Ok(mut w), Some(at)) = (WATCHED.lock(), at) {
        w.insert(id, (at, what));
    }
    WATCHER.call_once(|| {
        // Without the thread there is no last stop, as before.
        let _ = std::thread::Builder::new()
            .name("strata-watchdog".into())
            .spawn(|| loop {
                std::thread::sleep(std::time::Duration::from_secs(1));
                let now = std::time::Instant::now();
                let Ok(w) = WATCHED.lock() else { return };
                if let Some((_, what)) = w.values().find(|(at, _)| *at <= now) {
                    eprintln!(
                        "error: {what}: the evaluation ran for more than {} s inside one operation (a value shared many times over, compared or printed whole?) and strata stopped: raise STRATA_EVAL_TIMEOUT (seconds) if it needs longer",
                        watchdog_limit().as_secs()
                    );
                    std::process::exit(2);
                }
            });
    });
    Watchdog { id }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        if let Ok(mut w) = WATCHED.lock() {
            w.remove(&self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    /// Re-probe 17 (eval-timeout-near-u64-max-panics-duration-overflow):
    /// a timeout near u64::MAX (no limit) overflowed the watchdog's sum.
    #[test]
    fn the_watchdog_limit_saturates() {
        std::env::set_var("STRATA_EVAL_TIMEOUT", u64::MAX.to_string());
        assert_eq!(super::watchdog_limit(), std::time::Duration::MAX);
        std::env::remove_var("STRATA_EVAL_TIMEOUT");
    }

    #[test]
    fn only_positive_whole_numbers_are_read() {
        assert_eq!(super::parse(" 42 "), Some(42));
        for bad in ["0", "-1", "2G", "1.5", ""] {
            assert_eq!(super::parse(bad), None, "{bad}");
        }
    }
}
