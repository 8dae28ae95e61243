//! libFuzzer entry point for the `redact` target (see src/lib.rs).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    strata_fuzz::redact(data);
});
