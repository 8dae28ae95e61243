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

# wall seconds and peak MiB of one command, as "S MiB"; its stderr in $WORK/stderr.log
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
