//! The limits a user may set through the environment (`STRATA_EVAL_MEMORY`,
//! `STRATA_EVAL_ALLOCATIONS`, `STRATA_EVAL_STEPS`, `STRATA_RENDER_MEMORY`,
//! `STRATA_PROGRAM_TIMEOUT`, `STRATA_EVAL_TIMEOUT`, `STRATA_MAX_TARGET_FILES`,
//! `STRATA_MAX_FILES`, `STRATA_CHECKOUT_FILES`, `STRATA_CHECKOUT_BYTES`,
//! `STRATA_CHECKOUT_FILE_BYTES`, `STRATA_CHECKOUT_REPEATED_FILES`,
//! `STRATA_CHECKOUT_PATH_COMPONENTS`, `STRATA_MAX_WALK_LEVELS`):
//! one reading rule for
//! all of them, so the check of their values and their use cannot disagree.

/// Every limit variable and the unit of its value.
pub const VARIABLES: [(&str, &str); 14] = [
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
    ("STRATA_MAX_WALK_LEVELS", "directory levels"),
];

/// The most files one compile run writes, all targets together:
/// `STRATA_MAX_FILES`, default 1,000,000 (a pull request adding ten
/// targets of 100,000 files each made a review run for minutes).
pub fn max_files() -> u64 {
    get("STRATA_MAX_FILES", 1_000_000)
}

/// The most files one target's compile writes: `STRATA_MAX_TARGET_FILES`,
/// default 100,000. One jsonnet or kadet key is one file, so 51 bytes of
/// jsonnet wrote 300,000 files and made a review run for minutes.
pub fn max_target_files() -> u64 {
    get("STRATA_MAX_TARGET_FILES", 100_000)
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
                    _ => "4294967296",
                }
            )
        })
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_positive_whole_numbers_are_read() {
        assert_eq!(super::parse(" 42 "), Some(42));
        for bad in ["0", "-1", "2G", "1.5", ""] {
            assert_eq!(super::parse(bad), None, "{bad}");
        }
    }
}
