#!/usr/bin/env bash
# Benchmark kadet inputs: `strata compile` (one Python bridge per compile)
# against `kapitan compile` on TARGETS targets of one kadet generator
# (a Deployment built from a shared library module and a ConfigMap).
#
#   bench/kadet.sh                   # 100 targets
#   KAPITAN=/path/to/kapitan STRATA=target/debug/strata bench/kadet.sh
#
# Kapitan is installed into bench/work/venv (gitignored) unless KAPITAN is
# given; strata runs kadet with that same venv's python (it has kadet), so
# both use the same interpreter and kadet. Outputs must be identical.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="$ROOT/bench/work"
TARGETS="${TARGETS:-100}"
RUNS="${RUNS:-3}"
mkdir -p "$WORK"

if [ -z "${KAPITAN:-}" ]; then
  if [ ! -x "$WORK/venv/bin/kapitan" ]; then
    python3 -m venv "$WORK/venv"
    "$WORK/venv/bin/pip" install -q "kapitan==0.36.3"
  fi
  KAPITAN="$WORK/venv/bin/kapitan"
fi
PYTHON="${PYTHON:-$(dirname "$KAPITAN")/python}"
if [ -z "${STRATA:-}" ]; then
  (cd "$ROOT" && cargo build --release --quiet)
  STRATA="$ROOT/target/release/strata"
fi

P="$WORK/kadet-$TARGETS"
rm -rf "$P"
mkdir -p "$P/inventory/classes" "$P/inventory/targets" "$P/components" "$P/lib"
cp -r "$ROOT/tests/fixtures/kapitan_compat/kadet/components/webapp" "$P/components/"
cp -r "$ROOT/tests/fixtures/kapitan_compat/kadet/lib/kgen" "$P/lib/"
sed -i '/print(/d' "$P/components/webapp/__init__.py"
cat > "$P/inventory/classes/common.yml" <<'YAML'
parameters:
  namespace: ${_reclass_:name:short}
  app:
    image: nginx:1.25
    replicas: 3
    ratio: 0.1
    config: |
      line one
      line two
    ports: [80, 443]
  kapitan:
    vars:
      target: ${_reclass_:name:short}
    compile:
      - output_path: manifests
        input_type: kadet
        input_paths:
          - components/webapp
        input_params:
          replicas_default: 2
YAML
for i in $(seq -w 1 "$TARGETS"); do
  printf 'classes:\n  - common\n' > "$P/inventory/targets/t$i.yml"
done

cd "$P"
best() { sort -n | head -1; }
k=$(for _ in $(seq "$RUNS"); do
  rm -rf compiled
  /usr/bin/time -f %e "$KAPITAN" compile >/dev/null 2>"$WORK/k.time" || { cat "$WORK/k.time"; exit 2; }
  tail -1 "$WORK/k.time"
done | best)
mv compiled "$WORK/kadet-kapitan"
s=$(for _ in $(seq "$RUNS"); do
  rm -rf "$WORK/kadet-strata"
  /usr/bin/time -f %e "$STRATA" compile --quiet --python "$PYTHON" --output-path "$WORK/kadet-strata" 2>"$WORK/s.time" || { cat "$WORK/s.time"; exit 2; }
  tail -1 "$WORK/s.time"
done | best)
diff -r "$WORK/kadet-kapitan" "$WORK/kadet-strata/compiled" >/dev/null || { echo "outputs differ" >&2; exit 1; }
rm -rf "$WORK/kadet-kapitan"
python3 - "$TARGETS" "$k" "$s" <<'PY'
import sys
n, k, s = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
print(f"{n} kadet targets (best of runs): kapitan {k:.2f}s ({1000*k/n:.1f} ms/target), "
      f"strata {s:.2f}s ({1000*s/n:.1f} ms/target), {k/s:.1f}x; outputs identical")
PY
