//! The `strata` binary: everything lives in the library.

use std::alloc::{GlobalAlloc, Layout};

// Compiling allocates and frees millions of small values; glibc's malloc
// spent a third of a compile's CPU time on them (issue 18).
#[global_allocator]
static ALLOC: Metered = Metered;

/// mimalloc, with every allocation counted against the budget of the code
/// being evaluated on this thread (`strata::memguard`).
struct Metered;

// SAFETY: every call is passed on unchanged to mimalloc; the accounting
// before it neither allocates nor unwinds.
unsafe impl GlobalAlloc for Metered {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        charge_alloc(layout.size() as isize);
        unsafe { mimalloc::MiMalloc.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        charge_alloc(layout.size() as isize);
        unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        strata::memguard::charge(-(layout.size() as isize));
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        charge_alloc(new_size as isize - layout.size() as isize);
        unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
    }
}

/// Past either budget (memory, or the number of allocations, which bounds
/// jsonnet's work) an allocator cannot return an error: the process ends
/// with exit code 2 and a message naming the evaluation. The catalog being
/// compiled is still in its temporary directory, which the next compile
/// removes; the previous catalog stays.
#[inline]
fn charge_alloc(delta: isize) {
    if !strata::memguard::charge_alloc(delta) {
        use std::io::Write;
        let mut buf = [0u8; 1024];
        let n = strata::memguard::describe(&mut buf);
        let _ = std::io::stderr().write_all(&buf[..n]);
        // `_exit`, not `exit`: the thread's destructors would run in the
        // middle of the evaluation (jrsonnet's aborts on that).
        // SAFETY: ends the process; nothing after it runs.
        unsafe { libc::_exit(2) }
    }
}

fn main() -> std::process::ExitCode {
    strata::cli::main()
}
