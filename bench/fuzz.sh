#!/usr/bin/env bash
# Fuzzes each target for SECONDS (default 60) under a 2 GB memory limit and
# prints one line per target: executions, crashes (panics), inputs slower
# than 1 s, slowest input. Usage: bench/fuzz.sh [SECONDS] [TARGET...]
#
# With cargo-fuzz and a nightly toolchain (libFuzzer, coverage-guided):
#   cd fuzz && cargo +nightly fuzz run yaml --features libfuzzer -- -max_total_time=60 -rss_limit_mb=2048
# Without them, this script runs the stable `mutate` driver (random
# mutation of tests/fixtures seeds, no coverage feedback).
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(yaml refs inventory overlay redact)
# The fuzz crate shares target/ with the main build; nice keeps it polite
# on a shared machine.
nice -n 10 cargo build --quiet --manifest-path fuzz/Cargo.toml --target-dir target --bin mutate
bin=target/debug/mutate
status=0
for t in "${targets[@]}"; do
  # A hang shows as the time-out's exit status 124; memory as a failed run.
  if ! (ulimit -v 2097152; timeout --kill-after=10 $((secs + 60)) nice -n 10 "$bin" "$t" "$secs"); then
    echo "target=$t FAILED (crash, time-out or out of memory; see fuzz/artifacts/$t)"
    status=1
  fi
done
exit $status
