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

# wall seconds and peak MiB of one command, as "S MiB"
measure() {
  local log="$WORK/time.log"
  /usr/bin/time -v -o "$log" "$@" >/dev/null 2>"$WORK/stderr.log" || {
    echo "FAILED: $*" >&2
    tail -20 "$WORK/stderr.log" >&2
    exit 2
  }
  local wall rss
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log")
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
  python3 - "$wall" "$rss" <<'PY'
import sys
w, rss = sys.argv[1], int(sys.argv[2])
parts = [float(p) for p in w.split(":")]
secs = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
print("%.2f %.0f" % (secs, rss / 1024))
PY
}

project() {
  local n="$1" dir="$WORK/platform-$1"
  rm -rf "$dir"
  mkdir -p "$dir/components"
  python3 "$ROOT/bench/gen_inventory.py" "$dir/inventory" "$n" --platform >/dev/null
  cat > "$dir/components/platform.jsonnet" <<'JSONNET'
local kap = import 'lib/kapitan.libjsonnet';
local p = kap.inventory().parameters;
local names = std.sort(std.objectFields(p.components));
{
  [c]: [
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        name: p[c].name,
        namespace: p[c].namespace,
        labels: p[c].labels,
        annotations: { owner: p.tenant.contact },
      },
      spec: {
        replicas: p[c].replicas,
        selector: { matchLabels: p[c].selector },
        template: {
          metadata: { labels: p[c].labels },
          spec: {
            containers: [{
              name: c,
              image: p[c].image.full,
              args: p[c].args,
              env: [{ name: k, value: std.toString(p[c].env[k]) } for k in std.objectFields(p[c].env)],
              resources: p[c].resources,
            }],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: c + '-settings', namespace: p[c].namespace },
      data: { [k]: std.toString(p[c].settings[k]) for k in std.objectFields(p[c].settings) },
    },
  ]
  for c in names
  if p[c].enabled
}
JSONNET
  (
    cd "$dir"
    git init -q -b main
    git -c user.name=bench -c user.email=bench@example.invalid add -A
    git -c user.name=bench -c user.email=bench@example.invalid commit -q -m base
    git branch base
    # The pull request: one tenant's owner changes.
    sed -i 's/owner: "team-${tenant:id}"/owner: "platform-team"/' inventory/classes/tenant/t07.yml
    git -c user.name=bench -c user.email=bench@example.invalid commit -q -am "tenant t07: new owner"
    cat > event.json <<JSON
{"pull_request": {"number": 1, "base": {"sha": "$(git rev-parse base)"}, "head": {"sha": "$(git rev-parse HEAD)"}}}
JSON
  )
}

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
