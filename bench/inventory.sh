#!/usr/bin/env bash
# Inventory benchmark: strata vs reclass-rs 0.11.0 vs Kapitan 0.36.3's reclass
# backend on the same generated inventory. See docs/bench.md.
#
# Environment knobs (defaults in brackets):
#   SMALL [100]            targets of the inventory all three tools render
#   LARGE [1000]           targets of the inventory only strata renders (scaling)
#   KAPITAN_TARGETS [100]  targets Kapitan renders; a smaller number times the
#                          first K targets and scales per target (said in the output)
#   REPEAT [3]             strata runs per size (the median is reported)
#   REUSE_PEERS [0]        1 = reuse bench/work/peer-results.json from an earlier run
#   SKIP_STRATA [0]        1 = time the peers only (no cargo build)
#   PEER_LARGE [0]         1 = also time reclass-rs on LARGE targets (slow: ~0.4 CPU s/target)
#   SEED [20261121]        generator seed
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="$ROOT/bench/work"
SMALL="${SMALL:-100}"
LARGE="${LARGE:-1000}"
KAPITAN_TARGETS="${KAPITAN_TARGETS:-100}"
REPEAT="${REPEAT:-3}"
SEED="${SEED:-20261121}"
mkdir -p "$WORK"

if [ ! -x /usr/bin/time ]; then
    echo "installing GNU time (needed for peak RSS) ..." >&2
    if [ "$(id -u)" = 0 ]; then apt-get install -y -q time >&2; else sudo apt-get install -y -q time >&2; fi
fi

VENV="$WORK/venv"
if ! "$VENV/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(not (m.version("kapitan") == "0.36.3" and m.version("reclass-rs") == "0.11.0"))' 2>/dev/null; then
    echo "creating $VENV with kapitan 0.36.3 and reclass-rs 0.11.0 ..." >&2
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q kapitan==0.36.3 reclass-rs==0.11.0
fi

# regenerate only when the generator, seed or size changed
for n in $(printf '%s\n' "$SMALL" "$LARGE" "$KAPITAN_TARGETS" | sort -un); do
    stamp="$(sha256sum "$ROOT/bench/gen_inventory.py" | cut -c1-16) seed=$SEED targets=$n"
    if [ -d "$WORK/inv-$n" ] && [ "$(cat "$WORK/inv-$n.stamp" 2>/dev/null)" = "$stamp" ]; then
        echo "reusing $WORK/inv-$n"
    else
        "$VENV/bin/python" "$ROOT/bench/gen_inventory.py" --seed "$SEED" "$WORK/inv-$n" "$n"
        echo "$stamp" > "$WORK/inv-$n.stamp"
    fi
done

STRATA="$ROOT/target/release/strata"
EXTRA=()
if [ "${SKIP_STRATA:-0}" = 1 ]; then
    EXTRA+=(--skip-strata)
else
    (cd "$ROOT" && cargo build --release --quiet)
fi
if [ "${REUSE_PEERS:-0}" = 1 ]; then EXTRA+=(--reuse-peers); fi
if [ "${PEER_LARGE:-0}" = 1 ]; then EXTRA+=(--peer-large); fi

echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
exec "$VENV/bin/python" "$ROOT/bench/run_bench.py" --python "$VENV/bin/python" \
    --strata "$STRATA" --work "$WORK" --small "$SMALL" --large "$LARGE" \
    --kapitan-targets "$KAPITAN_TARGETS" --repeat "$REPEAT" "${EXTRA[@]}"
