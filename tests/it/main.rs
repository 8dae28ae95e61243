//! Integration tests: one binary, one module per area.

mod ci;
mod cli;
mod commodore;
mod commodore_base_dir;
mod commodore_imports;
mod compile;
mod component;
mod confine;
mod fetch;
mod github_api;
mod hooks;
mod hostile;
mod incremental;
mod inventory;
mod kapitan_compat;
mod newcomer;
mod order;
mod packages;
mod publish;
mod readme;
mod refs;
mod review;
mod review_render;
mod support;
mod template;
mod ytt_upstream;

/// The shared conformance corpora beside the project root (`../shared/conformance`).
#[allow(dead_code)]
pub fn conformance_dir() -> std::path::PathBuf {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::var_os("STRATA_CONFORMANCE_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("../shared/conformance"));
    assert!(
        dir.is_dir(),
        "conformance corpora not found at {}: set STRATA_CONFORMANCE_DIR",
        dir.display()
    );
    dir
}

/// The built `strata` binary, ready to run. Without the runner's
/// `GITHUB_EVENT_NAME`: on the project's own `pull_request` CI every
/// command would run confined (issue 19), and tests that read a fixture
/// outside their working directory on purpose would fail there only; a
/// test wanting an event sets it.
#[allow(dead_code)]
pub fn strata() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("strata").expect("the strata binary is built");
    cmd.env_remove("GITHUB_EVENT_NAME");
    // `strata order` reads kapp's `$KAPP_NAMESPACE` as `kapp deploy` does.
    cmd.env_remove("KAPP_NAMESPACE");
    cmd
}
