//! The `strata` binary: everything lives in the library.

// Compiling allocates and frees millions of small values; glibc's malloc
// spent a third of a compile's CPU time on them (issue 18).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    strata::cli::main()
}
