# Shared by bench/pr-loop.sh and bench/compile-speed.sh (sourced; needs
# ROOT and WORK): `measure` times one command, `project N` generates issue
# 18's platform of N targets as a git repository with a one-tenant pull
# request (branch `base`, HEAD, event.json) in $WORK/platform-N.

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
    # Packed, as the clone a CI job checks out is: read from loose objects
    # (one small file each), both revisions took 1.35 s instead of 0.41 s.
    git gc -q
    cat > event.json <<JSON
{"pull_request": {"number": 1, "base": {"sha": "$(git rev-parse base)"}, "head": {"sha": "$(git rev-parse HEAD)"}}}
JSON
  )
}
