use crate::compiler::instructions::Instruction;
use crate::error::{Error, ErrorKind};

use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;

/// Helper for tracking fuel consumption
pub struct FuelTracker {
    // The initial fuel level.
    initial: u64,
    // This should be an AtomicI64 but sadly 32bit targets do not necessarily have
    // AtomicI64 available.
    remaining: AtomicIsize,
    // strata: the instant past which the render stops, and the instructions
    // run (the clock is read every 256th, and on every sized charge).
    deadline: Option<std::time::Instant>,
    ticks: std::sync::atomic::AtomicU32,
}

/// strata: seconds a render may run, 0 for no limit.
static RENDER_TIME_LIMIT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// strata: seconds each later render may run (0: no limit). Fuel bounds the
/// instructions and what some of them copy; this bounds whatever an
/// instruction costs that fuel does not see.
pub fn set_render_time_limit(seconds: u64) {
    RENDER_TIME_LIMIT.store(seconds, Ordering::Relaxed);
}

std::thread_local! {
    /// strata: the deadline of the renders started on this thread, set by
    /// the embedding program (an evaluation the render is part of), in
    /// place of [`set_render_time_limit`]'s seconds from each render's start.
    static THREAD_DEADLINE: std::cell::Cell<Option<Option<std::time::Instant>>> =
        const { std::cell::Cell::new(None) };
}

/// strata: the deadline of the renders this thread starts from now on
/// (`Some(None)`: none), or `None` to go back to [`set_render_time_limit`].
pub fn set_thread_render_deadline(deadline: Option<Option<std::time::Instant>>) {
    THREAD_DEADLINE.with(|d| d.set(deadline));
}

impl FuelTracker {
    /// Creates a new fuel tracker.
    ///
    /// The fuel tracker is always wrapped in an `Arc` so that it can be
    /// shared across nested invocations of the template evaluation.
    pub fn new(fuel: u64) -> Arc<FuelTracker> {
        let limit = RENDER_TIME_LIMIT.load(Ordering::Relaxed);
        let deadline = THREAD_DEADLINE.with(|d| d.get()).unwrap_or_else(|| {
            (limit > 0)
                .then(|| {
                    std::time::Instant::now().checked_add(std::time::Duration::from_secs(limit))
                })
                .flatten()
        });
        Arc::new(FuelTracker {
            initial: fuel,
            remaining: AtomicIsize::new(fuel as isize),
            deadline,
            ticks: std::sync::atomic::AtomicU32::new(0),
        })
    }

    /// Tracks an instruction.  If it runs out of fuel an error is returned.
    pub fn track(&self, instr: &Instruction) -> Result<(), Error> {
        self.check_time(255)?;
        let fuel_to_consume = fuel_for_instruction(instr);
        if fuel_to_consume != 0 {
            let old_fuel = self.remaining.fetch_sub(fuel_to_consume, Ordering::Relaxed);
            if old_fuel - fuel_to_consume <= 0 {
                return Err(Error::from(ErrorKind::OutOfFuel));
            }
        }
        Ok(())
    }

    /// strata: charges `amount` more fuel for the work an instruction does
    /// in proportion to what it copies (`~` and `+` copy both operands: a
    /// loop appending to a string is quadratic in bytes, linear in
    /// instructions).
    pub fn charge(&self, amount: u64) -> Result<(), Error> {
        if amount == 0 {
            return Ok(());
        }
        // A sized operation costs far more than reading the clock.
        self.check_time(0)?;
        let amount = amount.min(isize::MAX as u64 / 2) as isize;
        let old_fuel = self.remaining.fetch_sub(amount, Ordering::Relaxed);
        if old_fuel.saturating_sub(amount) <= 0 {
            return Err(Error::from(ErrorKind::OutOfFuel));
        }
        Ok(())
    }

    /// strata: an error once the render's deadline has passed (the clock
    /// is read when the calls counted, masked by `mask`, come to `mask`).
    fn check_time(&self, mask: u32) -> Result<(), Error> {
        if let Some(deadline) = self.deadline {
            let tick = self.ticks.fetch_add(1, Ordering::Relaxed);
            if tick & mask == mask && std::time::Instant::now() >= deadline {
                return Err(Error::from(ErrorKind::OutOfTime));
            }
        }
        Ok(())
    }

    /// Returns the remaining fuel.
    pub fn remaining(&self) -> u64 {
        self.remaining.load(Ordering::Relaxed) as _
    }

    /// Returns the consumed fuel.
    pub fn consumed(&self) -> u64 {
        self.initial.saturating_sub(self.remaining())
    }
}

/// How much fuel does an instruction consume?
fn fuel_for_instruction(instruction: &Instruction) -> isize {
    match instruction {
        Instruction::BeginCapture(_)
        | Instruction::PushLoop(_)
        | Instruction::PushDidNotIterate
        | Instruction::PushWith
        | Instruction::PopFrame
        | Instruction::PopLoopFrame
        | Instruction::DupTop
        | Instruction::DiscardTop
        | Instruction::PushAutoEscape
        | Instruction::PopAutoEscape => 0,
        #[cfg(feature = "multi_template")]
        Instruction::ExportLocals => 0,
        #[cfg(feature = "macros")]
        Instruction::LoadBlocks | Instruction::BuildMacro(..) | Instruction::Return => 0,
        _ => 1,
    }
}
