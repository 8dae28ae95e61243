//! CLI basics: help, version, exit code for bad usage.

use crate::strata;

#[test]
fn version_and_help() {
    strata()
        .arg("--version")
        .assert()
        .success()
        .stdout(predicates::str::starts_with("strata "));
    strata().arg("--help").assert().success();
}

#[test]
fn unknown_subcommand_exits_2() {
    strata().arg("no-such-command").assert().code(2);
}
