#!/usr/bin/env bash
# Fuzzes each target for SECONDS (default 60), one target at a time, and
# prints one line per target: executions, crashes, timeouts (> 1 s), ooms
# (> 2 GB RSS). Usage:
#   bench/fuzz.sh [SECONDS] [TARGET...]           cargo-fuzz / libFuzzer (nightly)
#   bench/fuzz.sh --stable [SECONDS] [TARGET...]  the stable `mutate` driver
# Targets: yaml refs inventory overlay redact (default: all five).
# FUZZ_RUNS=N stops a target after N executions (SECONDS stays the upper
# bound); FUZZ_JOBS=N runs N fuzzing processes at once (default 1).
# FUZZ_TIMEOUT=N counts an input as a time-out after N seconds (default 1).
# On a loaded machine, raise it: libFuzzer's time-out handler allocates
# from inside its SIGALRM handler, and when the alarm interrupts glibc's
# malloc or free the job deadlocks at 0 CPU until the run's time limit
# (seen with the inventory target's alias- and reference-bomb seeds,
# which take 0.1-0.5 s alone and over 5 s at load 7).
#
# libFuzzer runs in fork mode (-fork=1 -ignore_crashes=1 -ignore_timeouts=1
# -ignore_ooms=1), so a finding does not end the run and every finding is
# counted; each one is saved under fuzz/artifacts/TARGET/. The corpora live
# in fuzz/corpus/TARGET (grown by libFuzzer, not committed), seeded by
# fuzz/seed.py from tests/fixtures into fuzz/seeds/TARGET.
# Needs: `rustup toolchain install nightly` and `cargo install cargo-fuzz`.
# The instrumented build uses no sanitizer (-s none): strata has no unsafe
# code of its own, and ASan would halve the executions; pass
# FUZZ_SANITIZER=address to use it. Everything runs under `nice -n 19`.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=libfuzzer
if [ "${1:-}" = "--stable" ]; then
  mode=stable
  shift
fi
secs="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(yaml refs inventory overlay redact)

if [ "$mode" = stable ]; then
  # Random mutation of the same seeds, no coverage feedback.
  nice -n 19 cargo build --quiet --manifest-path fuzz/Cargo.toml --target-dir target \
    --no-default-features --features stable-driver --bin mutate
  bin=target/debug/mutate
  status=0
  for t in "${targets[@]}"; do
    # A hang shows as the time-out's exit status 124; memory as a failed run.
    if ! (ulimit -v 2097152; timeout --kill-after=10 $((secs + 60)) nice -n 19 "$bin" "$t" "$secs"); then
      echo "target=$t FAILED (crash, time-out or out of memory; see fuzz/artifacts/$t)"
      status=1
    fi
  done
  exit $status
fi

sanitizer="${FUZZ_SANITIZER:-none}"
nice -n 19 cargo +nightly fuzz build -s "$sanitizer" >&2
triple="$(rustc +nightly -vV | sed -n 's/^host: //p')"
bindir="fuzz/target/$triple/release"
python3 fuzz/seed.py fuzz/seeds
status=0
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
  log="fuzz/artifacts/$t/last-run.log"
  stamp="fuzz/artifacts/$t/.started"
  touch "$stamp"
  # The parent process only schedules jobs; -max_total_time bounds the run.
  timeout --kill-after=30 $((secs + 120)) nice -n 19 "$bindir/$t" \
    -fork="${FUZZ_JOBS:-1}" -runs="${FUZZ_RUNS:--1}" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
    -rss_limit_mb=2048 -timeout="${FUZZ_TIMEOUT:-1}" -max_total_time="$secs" -max_len=65536 \
    -artifact_prefix="fuzz/artifacts/$t/" \
    "fuzz/corpus/$t" "fuzz/seeds/$t" >"$log" 2>&1 || true
  # Fork mode's progress line: "#EXECS: cov: .. corp: .. exec/s: .. oom/timeout/crash: O/T/C time: Ns ..."
  last="$(grep -E '^#[0-9]+: cov:' "$log" | tail -1 || true)"
  if [ -z "$last" ]; then
    echo "target=$t FAILED to run (see $log)"
    status=1
    continue
  fi
  execs="$(sed -E 's/^#([0-9]+):.*/\1/' <<<"$last")"
  # The progress line is printed before the last job's finding is counted:
  # count the inputs libFuzzer saved during this run instead.
  found() { find "fuzz/artifacts/$t" -maxdepth 1 -name "$1-*" -newer "$stamp" | wc -l; }
  crashes="$(found crash)"
  timeouts="$(found timeout)"
  ooms="$(found oom)"
  cov="$(sed -E 's/.* cov: ([0-9]+).*/\1/' <<<"$last")"
  corp="$(sed -E 's/.* corp: ([0-9]+).*/\1/' <<<"$last")"
  took="$(sed -E 's/.* time: ([0-9]+)s.*/\1/' <<<"$last")"
  echo "target=$t execs=$execs crashes=$crashes timeouts=$timeouts ooms=$ooms cov=$cov corpus=$corp seconds=$took"
  if [ "$crashes" != 0 ] || [ "$timeouts" != 0 ] || [ "$ooms" != 0 ]; then
    status=1
  fi
done
exit $status
