#!/usr/bin/env bash
# Issue 18's compile figures on the generated platform
# (bench/gen_inventory.py --platform, the jsonnet component of
# bench/pr-loop.sh): a full `strata compile` against `cp -r` of the catalog
# it writes, measured the same way in the same run (both right after each
# other, page cache warm, RUNS times), `compile -t` of one target, and
# `compile --cache DIR`: cold, warm with nothing changed, after an
# inventory edit that changes no parameter, after one tenant's change.
#
#   bench/compile-speed.sh                     # builds target/release/strata
#   STRATA=path/to/strata N=100 RUNS=5 bench/compile-speed.sh
#
# Each figure: wall seconds and peak RSS (/usr/bin/time -v). With
# STRATA_TIMINGS=1 strata prints its phases; the last full compile's and
# the last warm compile's are shown. A benchmark, not a test. The load
# average is printed: figures are only comparable on an idle machine.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="${WORK:-$ROOT/bench/work/compile-speed}"
N="${N:-1000}"
RUNS="${RUNS:-3}"
mkdir -p "$WORK"
if [ -z "${STRATA:-}" ]; then
  (cd "$ROOT" && cargo build --release --quiet)
  STRATA="$ROOT/target/release/strata"
fi

# shellcheck source=bench/platform.sh
. "$ROOT/bench/platform.sh"

row() { printf '%-52s %8s %9s\n' "$@"; }

echo "strata: $("$STRATA" --version); cores: $(nproc); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
project "$N"
dir="$WORK/platform-$N"
cd "$dir"
row "what ($N targets)" "seconds" "peak MiB"
for i in $(seq "$RUNS"); do
  rm -rf out copy
  r=$(STRATA_TIMINGS=1 measure "$STRATA" compile --output-path out)
  cp "$WORK/stderr.log" "$WORK/full-timings.log"
  row "compile, full (run $i)" $r
  c=$(measure cp -r out/compiled copy)
  row "cp -r of that catalog (run $i)" $c
  python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); print('    ratio compile / cp -r: %.2f' % (a/b if b else float('inf')))" "${r%% *}" "${c%% *}"
done
echo "    catalog: $(find out/compiled -type f | wc -l) files, $(du -sm out/compiled | cut -f1) MiB"
sed 's/^/    /' "$WORK/full-timings.log" | grep -v '^    Compiled'
for i in $(seq "$RUNS"); do
  r=$(measure "$STRATA" compile --output-path one -t t-0001)
  row "compile -t t-0001 (run $i)" $r
done
rm -rf cache cached
r=$(measure "$STRATA" compile --output-path cached --cache cache)
row "compile --cache, cold" $r
for i in $(seq "$RUNS"); do
  r=$(STRATA_TIMINGS=1 measure "$STRATA" compile --output-path cached --cache cache)
  cp "$WORK/stderr.log" "$WORK/warm-timings.log"
  row "compile --cache, warm, no change (run $i)" $r
done
sed 's/^/    /' "$WORK/warm-timings.log"
diff -r out/compiled cached/compiled >/dev/null && echo "    cached catalog == full compile: MATCH" || echo "    cached catalog differs from the full compile: MISMATCH"
# An edit that changes no parameter: rendered, nothing compiled or relinked.
echo "# bench" >> inventory/classes/tenant/t07.yml
r=$(measure "$STRATA" compile --output-path cached --cache cache)
row "compile --cache, comment added to a class" $r
grep -h "^Compiled" "$WORK/stderr.log" | sed 's/^/    /'
# One tenant's owner changes (the pull request of bench/pr-loop.sh).
git checkout -q base -- inventory
r=$(measure "$STRATA" compile --output-path cached --cache cache)
row "compile --cache, one tenant changed" $r
grep -h "^Compiled" "$WORK/stderr.log" | sed 's/^/    /'
git checkout -q HEAD -- inventory
rm -rf out && "$STRATA" compile --output-path out >/dev/null 2>&1
r=$(measure "$STRATA" compile --output-path cached --cache cache)
row "compile --cache, back to the first inventory" $r
diff -r out/compiled cached/compiled >/dev/null && echo "    cached catalog == full compile: MATCH" || echo "    cached catalog differs from the full compile: MISMATCH"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
