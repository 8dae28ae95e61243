//! A memory budget for evaluating code a pull request can change (jsonnet,
//! Jinja2, Starlark templates), shared by the evaluations running at once. Those languages can build
//! a huge value in a few steps (`f(s + s, n - 1)`, a `replace` of every
//! character by a long string) that no step count sees: jrsonnet and
//! minijinja have no memory limit, so an evaluation took memory until the
//! kernel killed strata, or panicked past 4 GB.
//!
//! The library only keeps the account: [`metered`] marks the current thread
//! as evaluating something, and [`charge`] (called by the binary's global
//! allocator for every allocation, reallocation and free) says when the
//! bytes held since the evaluation began pass the budget. Each thread counts
//! on its own and takes what it needs from one process-wide pool in chunks
//! (its high-water mark, rounded up), giving it back when its evaluation
//! ends: a compile on N cores holds at most the budget, not N times it, and
//! the allocator's fast path stays one thread-local add and compare. An allocator
//! cannot return an error, so the binary then ends the process with exit
//! code 2 and [`describe`]'s message; the catalog being written is still in
//! its temporary directory, so the previous one stays intact.

use std::cell::Cell;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes the evaluations running at once may hold (allocated and not yet
/// freed on their threads), unless `STRATA_EVAL_MEMORY` (bytes) says
/// otherwise.
pub const DEFAULT_LIMIT: usize = 2 << 30;

/// Allocations one evaluation may make, unless `STRATA_EVAL_ALLOCATIONS`
/// says otherwise. jsonnet has no step limit: `f(n-1) + f(n-1)` recursion
/// or nested `std.foldl` loops run for hours in a few bytes of memory. Every
/// jsonnet function call and array element allocates, so a bound on
/// allocations is a bound on work: 200,000,000 is 15 s (nested `std.foldl`)
/// to 28 s (`f(n-1) + f(n-1)`) of jsonnet in a release build, and 40 times
/// what the heaviest evaluation of the conformance corpora makes.
pub const DEFAULT_ALLOCATIONS: u64 = 200_000_000;

/// What a thread takes from the pool at a time: one atomic operation per
/// MiB of growth, and at most a MiB per thread taken but not used.
const CHUNK: usize = 1 << 20;

/// Bytes taken from the pool by the evaluations running now.
static POOL_TAKEN: AtomicUsize = AtomicUsize::new(0);

/// Longest description kept for the message (the allocator cannot allocate).
const WHAT_CAP: usize = 400;

/// What a thread that meters nothing has left: far from both ends, so the
/// allocations and frees of a whole run never reach zero or overflow.
const UNMETERED: isize = isize::MAX / 2;

thread_local! {
    /// Bytes the current evaluation may still allocate before it takes
    /// more from the pool (what it took minus what it holds); [`UNMETERED`]
    /// when nothing is metered. One counter, so the allocator's fast path
    /// is one read, one write and one compare.
    static REMAINING: Cell<isize> = const { Cell::new(UNMETERED) };
    /// Bytes this thread's evaluation took from the pool.
    static TAKEN: Cell<usize> = const { Cell::new(0) };
    /// Allocations the current evaluation may still make; [`UNMETERED`]
    /// when nothing is metered.
    static ALLOCS_LEFT: Cell<isize> = const { Cell::new(UNMETERED) };
    /// Whether the evaluation was stopped for its allocations (else for
    /// its memory), for the message.
    static OUT_OF_ALLOCS: Cell<bool> = const { Cell::new(false) };
    /// The allocation budget of the current (or last) scope.
    static ALLOC_BUDGET: Cell<u64> = const { Cell::new(0) };
    /// Whether an evaluation is metered on this thread.
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    /// The budget of the current (or last) scope, for the message.
    static BUDGET: Cell<usize> = const { Cell::new(0) };
    static WHAT: Cell<[u8; WHAT_CAP]> = const { Cell::new([0; WHAT_CAP]) };
    static WHAT_LEN: Cell<usize> = const { Cell::new(0) };
}

/// The budget for one evaluation: `STRATA_EVAL_MEMORY` or [`DEFAULT_LIMIT`].
pub fn limit() -> usize {
    usize::try_from(crate::limits::get(
        "STRATA_EVAL_MEMORY",
        DEFAULT_LIMIT as u64,
    ))
    .unwrap_or(usize::MAX)
}

/// The allocations one evaluation may make: `STRATA_EVAL_ALLOCATIONS` or
/// [`DEFAULT_ALLOCATIONS`].
pub fn alloc_limit() -> u64 {
    crate::limits::get("STRATA_EVAL_ALLOCATIONS", DEFAULT_ALLOCATIONS)
}

/// Runs `f` with this thread's allocations counted against [`limit`]
/// (shared with the evaluations running on other threads);
/// `what` names the evaluation in the message. Inside another metered
/// evaluation (`jinja2_render_file` called from jsonnet), the outer budget
/// and name stay.
pub fn metered<R>(what: &str, f: impl FnOnce() -> R) -> R {
    if ACTIVE.with(Cell::get) {
        return f();
    }
    let mut buf = [0u8; WHAT_CAP];
    // Cut at a character boundary so the message stays valid UTF-8.
    let mut n = what.len().min(WHAT_CAP);
    while !what.is_char_boundary(n) {
        n -= 1;
    }
    buf[..n].copy_from_slice(&what.as_bytes()[..n]);
    WHAT.with(|w| w.set(buf));
    WHAT_LEN.with(|l| l.set(n));
    let budget = limit();
    BUDGET.with(|b| b.set(budget));
    ACTIVE.with(|a| a.set(true));
    TAKEN.with(|t| t.set(0));
    REMAINING.with(|r| r.set(0));
    let allocs = alloc_limit();
    ALLOC_BUDGET.with(|b| b.set(allocs));
    OUT_OF_ALLOCS.with(|o| o.set(false));
    ALLOCS_LEFT.with(|a| a.set(isize::try_from(allocs).unwrap_or(UNMETERED)));
    // Reset on unwind too, so a panic does not leave the thread metered.
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            stop();
        }
    }
    let _reset = Reset;
    f()
}

/// The name of the evaluation metered on this thread, if any: an
/// evaluation handed to another thread (templates get their own stack)
/// keeps it there.
pub fn current() -> Option<String> {
    if !ACTIVE.with(Cell::get) {
        return None;
    }
    let n = WHAT_LEN.with(Cell::get);
    let buf = WHAT.with(Cell::get);
    Some(String::from_utf8_lossy(&buf[..n]).into_owned())
}

fn stop() {
    let _ = ACTIVE.try_with(|a| a.set(false));
    let _ = REMAINING.try_with(|r| r.set(UNMETERED));
    let _ = ALLOCS_LEFT.try_with(|a| a.set(UNMETERED));
    if let Ok(taken) = TAKEN.try_with(|t| t.replace(0)) {
        POOL_TAKEN.fetch_sub(taken, Ordering::Relaxed);
    }
}

/// Counts `delta` bytes (negative for a free) against the current thread's
/// share of the budget; `false` when the evaluations now hold more than
/// they may (metering
/// then stops, so the caller may allocate its message). Never allocates,
/// never panics (it runs inside the global allocator, also while a thread
/// is being torn down).
#[inline(always)]
pub fn charge(delta: isize) -> bool {
    REMAINING
        .try_with(|r| {
            let left = r.get().wrapping_sub(delta);
            r.set(left);
            left >= 0
        })
        .unwrap_or(true)
        || take_more()
}

/// [`charge`] for an allocation or reallocation, which also counts against
/// the evaluation's allocations; `false` when it is over either budget.
#[inline(always)]
pub fn charge_alloc(delta: isize) -> bool {
    charge(delta)
        && (ALLOCS_LEFT
            .try_with(|a| {
                let left = a.get() - 1;
                a.set(left);
                left >= 0
            })
            .unwrap_or(true)
            || out_of_allocs())
}

/// The allocation counter went below zero: over budget if an evaluation is
/// metered (then metering stops); else only drift.
#[cold]
fn out_of_allocs() -> bool {
    let active = ACTIVE.try_with(Cell::get).unwrap_or(false);
    stop();
    if active {
        let _ = OUT_OF_ALLOCS.try_with(|o| o.set(true));
    }
    !active
}

/// The counter went below zero. Outside an evaluation that is only drift,
/// and the counter starts afresh; inside one, the thread takes what it is
/// short of (at least a [`CHUNK`]) from the pool, and is over budget when
/// the pool has not got it (metering then stops).
#[cold]
fn take_more() -> bool {
    if !ACTIVE.try_with(Cell::get).unwrap_or(false) {
        stop();
        return true;
    }
    let short = REMAINING.try_with(Cell::get).unwrap_or(0).unsigned_abs();
    let want = short.div_ceil(CHUNK).max(1).saturating_mul(CHUNK);
    let budget = BUDGET.try_with(Cell::get).unwrap_or(0);
    let before = POOL_TAKEN.fetch_add(want, Ordering::Relaxed);
    if before.saturating_add(want) > budget {
        POOL_TAKEN.fetch_sub(want, Ordering::Relaxed);
        stop();
        return false;
    }
    let _ = TAKEN.try_with(|t| t.set(t.get() + want));
    let _ = REMAINING.try_with(|r| r.set(r.get().saturating_add_unsigned(want)));
    true
}

/// The error line for an evaluation that went over its budget, written into
/// `out` without allocating; returns its length.
pub fn describe(out: &mut [u8]) -> usize {
    let what = WHAT.try_with(Cell::get).unwrap_or([0; WHAT_CAP]);
    let len = WHAT_LEN.try_with(Cell::get).unwrap_or(0).min(WHAT_CAP);
    let what = std::str::from_utf8(&what[..len]).unwrap_or("an evaluation");
    let mut w = SliceWriter { buf: out, len: 0 };
    let _ = if OUT_OF_ALLOCS.try_with(Cell::get).unwrap_or(false) {
        writeln!(
            w,
            "error: {what}: the evaluation made more than {} allocations (an endless loop, or a recursion that calls itself more than once per step?): do less work in one evaluation, or raise STRATA_EVAL_ALLOCATIONS",
            ALLOC_BUDGET.try_with(Cell::get).unwrap_or(0)
        )
    } else {
        writeln!(
            w,
            "error: {what}: the evaluations in progress hold more than {} bytes of memory (this one and any running beside it: a value built too large, e.g. a string doubled in a loop?): build smaller values, or raise STRATA_EVAL_MEMORY",
            BUDGET.try_with(Cell::get).unwrap_or(0)
        )
    };
    w.len
}

/// `fmt::Write` into a fixed buffer; output past its end is dropped.
struct SliceWriter<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl std::fmt::Write for SliceWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let room = self.buf.len() - self.len;
        let n = s.len().min(room);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_is_per_scope_and_names_the_evaluation() {
        // Outside a scope nothing is counted, nor ever refused.
        assert!(charge(isize::MAX / 2));
        assert!(charge(isize::MAX / 2));
        assert!(charge(1));
        let over = metered("target t, compile entry #1 (jsonnet)", || {
            assert!(charge(1000));
            assert!(charge(-1000));
            // Nested scopes keep the outer budget and name.
            metered("inner", || charge(limit() as isize + 1))
        });
        assert!(!over);
        let mut buf = [0u8; 600];
        let n = describe(&mut buf);
        let msg = std::str::from_utf8(&buf[..n]).unwrap();
        assert!(
            msg.starts_with(
                "error: target t, compile entry #1 (jsonnet): the evaluations in progress hold more than"
            ),
            "{msg}"
        );
        // After the scope, metering is off again.
        assert!(charge(isize::MAX / 2));
        // A long name is cut at a character boundary.
        let long = "é".repeat(300);
        metered(&long, || {
            let n = describe(&mut buf);
            assert!(std::str::from_utf8(&buf[..n]).is_ok());
        });
    }

    #[test]
    fn evaluations_on_several_threads_share_one_budget() {
        // Each of two evaluations holds 60% of the budget: alone either
        // fits, together they do not, whichever thread allocates last.
        let share = (limit() / 10 * 6) as isize;
        let first_holds = std::sync::Barrier::new(2);
        let second_done = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            s.spawn(|| {
                metered("first", || {
                    assert!(charge(share));
                    first_holds.wait();
                    second_done.wait();
                });
            });
            s.spawn(|| {
                first_holds.wait();
                let fits = metered("second", || charge(share));
                assert!(!fits, "two evaluations held 120% of the budget");
                second_done.wait();
            });
        });
        // Both ended: their shares are back in the pool.
        std::thread::spawn(move || metered("third", || charge(share)))
            .join()
            .map(|fits| assert!(fits, "a finished evaluation kept its share"))
            .unwrap();
    }
}
