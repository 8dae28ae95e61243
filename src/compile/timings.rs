//! Per-phase timings of a compile, for `STRATA_TIMINGS=1`: the CLI turns
//! them on and prints them; the core only records. Off by default, and
//! then every probe is one relaxed atomic load.
//!
//! Phases run on worker threads (evaluation, serialisation, writing) are
//! summed over the threads, so they can add up to more than the wall time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static ENABLED: AtomicBool = AtomicBool::new(false);
static PHASES: Mutex<Vec<(&'static str, Duration, u64)>> = Mutex::new(Vec::new());

/// Starts recording (the CLI calls this when `STRATA_TIMINGS` is set).
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Adds `d` to `phase` (and counts one occurrence).
pub fn add(phase: &'static str, d: Duration) {
    let Ok(mut phases) = PHASES.lock() else {
        return;
    };
    match phases.iter_mut().find(|(p, _, _)| *p == phase) {
        Some((_, total, n)) => {
            *total += d;
            *n += 1;
        }
        None => phases.push((phase, d, 1)),
    }
}

/// Runs `f`, recording its time under `phase` when timings are on.
pub fn time<T>(phase: &'static str, f: impl FnOnce() -> T) -> T {
    if !enabled() {
        return f();
    }
    let start = Instant::now();
    let out = f();
    add(phase, start.elapsed());
    out
}

/// Every phase recorded so far, in the order first seen: (name, total
/// time, occurrences).
pub fn report() -> Vec<(&'static str, Duration, u64)> {
    PHASES.lock().map(|p| p.clone()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_only_when_enabled() {
        // Off: nothing recorded for this phase name.
        time("timings-test-off", || ());
        assert!(!report().iter().any(|(p, _, _)| *p == "timings-test-off"));
        enable();
        time("timings-test-on", || ());
        time("timings-test-on", || ());
        let r = report();
        let (_, _, n) = r
            .iter()
            .find(|(p, _, _)| *p == "timings-test-on")
            .expect("recorded");
        assert_eq!(*n, 2);
    }
}
