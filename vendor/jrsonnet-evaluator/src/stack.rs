use std::{cell::Cell, marker::PhantomData};

use crate::error::{Error, ErrorKind};

struct StackLimit {
	max_stack_size: Cell<usize>,
	current_depth: Cell<usize>,
}

#[cfg(nightly)]
struct NightlyLocalKey<T>(pub T);
#[cfg(nightly)]
impl<T> NightlyLocalKey<T> {
	#[inline(always)]
	fn with<U>(&self, v: impl FnOnce(&T) -> U) -> U {
		v(&self.0)
	}
}
#[cfg(not(nightly))]
#[allow(dead_code)]
type NightlyLocalKey<T> = std::thread::LocalKey<T>;

#[cfg(nightly)]
#[macro_export]
macro_rules! const_tls {
	(const $name:ident: $t:ty = $expr:expr;) => {
		#[thread_local]
		static $name: NightlyLocalKey<$t> = NightlyLocalKey($expr);
	};
}
#[cfg(not(nightly))]
#[macro_export]
macro_rules! const_tls {
	(const $name:ident: $t:ty = $expr:expr;) => {
		thread_local! {
			static $name: $t = const { $expr };
		}
	};
}

const_tls! {
	const STACK_LIMIT: StackLimit = StackLimit {
		max_stack_size: Cell::new(200),
		current_depth: Cell::new(0),
	};
}

pub struct StackOverflowError;
impl From<StackOverflowError> for ErrorKind {
	fn from(_: StackOverflowError) -> Self {
		Self::StackOverflow
	}
}
impl From<StackOverflowError> for Error {
	fn from(_: StackOverflowError) -> Self {
		ErrorKind::StackOverflow.into()
	}
}

/// Used to implement stack depth limitation
pub struct StackDepthGuard(PhantomData<()>);
impl Drop for StackDepthGuard {
	fn drop(&mut self) {
		STACK_LIMIT.with(|limit| limit.current_depth.set(limit.current_depth.get() - 1));
	}
}

// strata: an evaluation's deadline, checked every 16 frames and work
// charges: a loop whose every step costs a scan of a large input (or any
// other shape no budget counts) ends at the deadline instead of running for
// hours. Unset (no deadline) until an embedder sets it.
thread_local! {
	static DEADLINE: Cell<Option<std::time::Instant>> = const { Cell::new(None) };
	static DEADLINE_TICKS: Cell<u32> = const { Cell::new(0) };
	static TIMED_OUT: Cell<bool> = const { Cell::new(false) };
}

/// strata: the instant past which this thread's evaluation stops (frames
/// fail, and [`evaluation_timed_out`] says why); `None` for no deadline.
pub fn set_evaluation_deadline(deadline: Option<std::time::Instant>) {
	DEADLINE.with(|d| d.set(deadline));
	DEADLINE_TICKS.with(|t| t.set(0));
	TIMED_OUT.with(|t| t.set(false));
}

/// strata: whether this thread's evaluation went past its deadline.
pub fn evaluation_timed_out() -> bool {
	TIMED_OUT.with(Cell::get)
}

/// strata: true once the deadline has passed (looked at every 16th call).
#[inline]
pub fn past_deadline() -> bool {
	if TIMED_OUT.with(Cell::get) {
		return true;
	}
	let tick = DEADLINE_TICKS.with(|t| {
		let n = t.get().wrapping_add(1);
		t.set(n);
		n
	});
	// Every 16th: one frame may cost milliseconds (`std.objectFields` of
	// 100,000 fields), and the clock costs about as much as a cheap frame.
	if tick & 15 != 0 {
		return false;
	}
	let late = DEADLINE.with(Cell::get).is_some_and(|d| std::time::Instant::now() >= d);
	if late {
		TIMED_OUT.with(|t| t.set(true));
	}
	late
}

// #[cfg(feature = "nightly")]
pub fn check_depth() -> Result<StackDepthGuard, StackOverflowError> {
	if past_deadline() {
		return Err(StackOverflowError);
	}
	STACK_LIMIT.with(|limit| {
		let current = limit.current_depth.get();
		if current < limit.max_stack_size.get() {
			limit.current_depth.set(current + 1);
			Ok(StackDepthGuard(PhantomData))
		} else {
			Err(StackOverflowError)
		}
	})
}

pub struct StackDepthLimitOverrideGuard {
	old_limit: usize,
}
impl Drop for StackDepthLimitOverrideGuard {
	fn drop(&mut self) {
		STACK_LIMIT.with(|limit| limit.max_stack_size.set(self.old_limit));
	}
}

pub fn limit_stack_depth(depth_limit: usize) -> StackDepthLimitOverrideGuard {
	STACK_LIMIT.with(|limit| {
		let old_limit = limit.max_stack_size.get();
		let current_depth = limit.current_depth.get();

		limit.max_stack_size.set(current_depth + depth_limit);
		StackDepthLimitOverrideGuard { old_limit }
	})
}

/// Like [`limit_stack_depth`], but set depth is not guarded, and will be kept
///
/// Used to implement `set_max_stack` in C api, prefer to use [`limit_stack_depth`] instead
pub fn set_stack_depth_limit(depth_limit: usize) {
	std::mem::forget(limit_stack_depth(depth_limit));
}
