//! The `strata` binary: everything lives in the library.

fn main() -> std::process::ExitCode {
    strata::cli::main()
}
