#!/usr/bin/env bash
# Benchmark `strata compile` against `kapitan compile` (Kapitan from PyPI)
# on the same generated inventory: TARGETS targets, each compiling a
# jsonnet component that generates OBJECTS Kubernetes objects.
#
#   bench/compile.sh                 # 50 targets x 2000 objects
#   TARGETS=10 OBJECTS=500 bench/compile.sh
#
# Kapitan is installed into bench/work/venv (gitignored) on first use; strata
# is built with `cargo build --release` unless STRATA=<binary> is given.
# Both run one after the other with their default parallelism; the outputs
# are compared (they must be identical) and the ratio printed.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="$ROOT/bench/work"
TARGETS="${TARGETS:-50}"
OBJECTS="${OBJECTS:-2000}"
KAPITAN_VERSION="${KAPITAN_VERSION:-0.36.3}"
mkdir -p "$WORK"

if [ ! -x "$WORK/venv/bin/kapitan" ]; then
  python3 -m venv "$WORK/venv"
  "$WORK/venv/bin/pip" install -q "kapitan==$KAPITAN_VERSION"
fi
KAPITAN="$WORK/venv/bin/kapitan"

if [ -z "${STRATA:-}" ]; then
  (cd "$ROOT" && cargo build --release --quiet)
  STRATA="$ROOT/target/release/strata"
fi

PROJECT="$WORK/project-$TARGETS-$OBJECTS"
rm -rf "$PROJECT"
mkdir -p "$PROJECT/inventory/classes" "$PROJECT/inventory/targets" "$PROJECT/components"

cat > "$PROJECT/inventory/classes/common.yml" <<EOF
parameters:
  objects: $OBJECTS
  namespace: \${_reclass_:name:short}
  image: registry.example.com/app:1.2.3
  kapitan:
    vars:
      target: \${_reclass_:name:short}
    compile:
      - output_path: manifests
        input_type: jsonnet
        input_paths:
          - components/app.jsonnet
        output_type: yaml
EOF

for i in $(seq -w 1 "$TARGETS"); do
  cat > "$PROJECT/inventory/targets/t$i.yml" <<EOF
classes:
  - common
parameters:
  replicas: $((10#$i % 5 + 1))
EOF
done

# A jsonnet-heavy component: OBJECTS objects (Deployments, Services and
# ConfigMaps) in a handful of multi-document files.
cat > "$PROJECT/components/app.jsonnet" <<'EOF'
local kap = import 'lib/kapitan.libjsonnet';
local p = kap.inventory().parameters;
local deployment(i) = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'app-%d' % i, namespace: p.namespace, labels: { app: 'app-%d' % i, tier: 'backend' } },
  spec: {
    replicas: p.replicas,
    selector: { matchLabels: { app: 'app-%d' % i } },
    template: {
      metadata: { labels: { app: 'app-%d' % i } },
      spec: {
        containers: [{
          name: 'app',
          image: p.image,
          args: ['--port=8080', '--verbose'],
          ports: [{ containerPort: 8080, name: 'http' }],
          env: [{ name: 'INDEX', value: std.toString(i) }, { name: 'ENABLED', value: 'true' }],
          resources: { limits: { cpu: '500m', memory: '128Mi' } },
        }],
      },
    },
  },
};
local service(i) = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'app-%d' % i, namespace: p.namespace },
  spec: { selector: { app: 'app-%d' % i }, ports: [{ port: 80, targetPort: 8080 }] },
};
local configmap(i) = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'app-%d' % i, namespace: p.namespace },
  data: { 'config.yaml': 'index: %d\nname: app-%d\n' % [i, i], checksum: kap.sha256('app-%d' % i) },
};
local make(i) = [deployment, service, configmap][i % 3](i);
local n = p.objects;
local files = 10;
{
  ['objects-%02d' % f]: [make(i) for i in std.range(0, n - 1) if i % files == f]
  for f in std.range(0, files - 1)
}
EOF

cd "$PROJECT"
rm -rf out-kapitan out-strata

start=$(date +%s.%N)
"$KAPITAN" compile --inventory-path inventory --output-path out-kapitan > kapitan.log 2>&1
mid=$(date +%s.%N)
"$STRATA" compile --inventory-path inventory --output-path out-strata --quiet
end=$(date +%s.%N)

kap_s=$(echo "$mid - $start" | bc -l)
str_s=$(echo "$end - $mid" | bc -l)
files=$(find out-strata/compiled -type f | wc -l)
if diff -r out-kapitan/compiled out-strata/compiled > /dev/null; then
  same="identical"
else
  same="DIFFERENT (see diff -r $PROJECT/out-kapitan/compiled $PROJECT/out-strata/compiled)"
fi
printf 'targets: %s, objects per target: %s, files: %s, catalogs: %s\n' "$TARGETS" "$OBJECTS" "$files" "$same"
printf 'kapitan %s: %.2fs\nstrata: %.2fs\nratio: %.1fx\n' "$KAPITAN_VERSION" "$kap_s" "$str_s" "$(echo "$kap_s / $str_s" | bc -l)"
