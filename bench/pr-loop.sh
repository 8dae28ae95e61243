#!/usr/bin/env bash
# Issue 18's figures: the pull-request loop and compile costs on the
# generated platform (bench/gen_inventory.py --platform: 5 class levels,
# one jsonnet component writing a Deployment and a ConfigMap per enabled
# component), on 100 and 1,000 targets.
#
#   bench/pr-loop.sh                    # builds target/release/strata
#   STRATA=path/to/strata bench/pr-loop.sh
#   SIZES="100" bench/pr-loop.sh
#
# Measures, each with /usr/bin/time -v (wall seconds, peak RSS):
#   - `strata ci` on a pull_request event (comment off) for a pull request
#     that changes one tenant's owner, at every size;
#   - a full `strata compile` of the largest size, and `cp -r` of the
#     catalog it wrote;
#   - `strata compile --cache DIR` with a warm cache and no change.
# A benchmark, not a test: nothing in `cargo test` runs it. It prints the
# load average too: the figures are only comparable on an idle machine.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="$ROOT/bench/work/pr-loop"
SIZES="${SIZES:-100 1000}"
mkdir -p "$WORK"
if [ -z "${STRATA:-}" ]; then
  (cd "$ROOT" && cargo build --release --quiet)
  STRATA="$ROOT/target/release/strata"
fi

# shellcheck source=bench/platform.sh
. "$ROOT/bench/platform.sh"

echo "strata: $("$STRATA" --version); cores: $(nproc); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-44s %8s %9s\n' "what" "seconds" "peak MiB"
for n in $SIZES; do
  project "$n"
  dir="$WORK/platform-$n"
  files=$(cd "$dir" && git diff --stat base HEAD | tail -1)
  r=$(cd "$dir" && GITHUB_EVENT_NAME=pull_request GITHUB_EVENT_PATH="$dir/event.json" \
    STRATA_TIMINGS=1 measure "$STRATA" ci --no-comment --fail-on never)
  printf '%-44s %8s %9s\n' "ci, pull request ($n targets)" $r
  grep -h "^review:\|^timing:" "$WORK/stderr.log" | sed 's/^/    /'
done
# PR_ONLY=1: the pull-request loop only (no compile figures).
if [ -n "${PR_ONLY:-}" ]; then
  echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
  exit 0
fi
n=$(echo "$SIZES" | tr ' ' '\n' | tail -1)
dir="$WORK/platform-$n"
rm -rf "$dir/out" "$dir/copy" "$dir/cache" "$dir/cached"
r=$(cd "$dir" && measure "$STRATA" compile --output-path out)
printf '%-44s %8s %9s\n' "compile, full ($n targets)" $r
echo "    catalog: $(find "$dir/out/compiled" -type f | wc -l) files, $(du -sm "$dir/out/compiled" | cut -f1) MiB"
r=$(measure cp -r "$dir/out/compiled" "$dir/copy")
printf '%-44s %8s %9s\n' "cp -r of that catalog" $r
r=$(cd "$dir" && measure "$STRATA" compile --output-path cached --cache cache)
printf '%-44s %8s %9s\n' "compile --cache, cold ($n targets)" $r
r=$(cd "$dir" && measure "$STRATA" compile --output-path cached --cache cache)
printf '%-44s %8s %9s\n' "compile --cache, warm, no change ($n targets)" $r
grep -h "^Compiled" "$WORK/stderr.log" | sed 's/^/    /'
diff -r "$dir/out/compiled" "$dir/cached/compiled" >/dev/null && echo "cached catalog == full compile: MATCH" || echo "cached catalog differs from the full compile: MISMATCH"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
