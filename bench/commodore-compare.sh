#!/usr/bin/env bash
# Compares `strata catalog compile --local` with the real Commodore
# (`syn-commodore` from PyPI, installed into a virtualenv; not a project
# dependency) on every working directory under tests/fixtures/commodore/.
# Prints one line per catalog file (identical / differs / only-in-...) and
# the byte-identical count. Usage: bench/commodore-compare.sh [venv-dir]
# With SAVE_EXPECTED=1, Commodore's catalogs are stored as
# tests/fixtures/commodore/<name>.expected/ (what tests/it/commodore.rs
# compares strata with).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-/tmp/commodore-venv}
if [ ! -x "$venv/bin/commodore" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q syn-commodore
fi
strata="$root/target/debug/strata"
[ -x "$strata" ] || (cd "$root" && cargo build -q)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Commodore insists on finding jsonnet-bundler even when it does not fetch;
# a no-op stand-in is enough in local mode (vendor/ is prepared below).
mkdir -p "$work/bin"; printf '#!/bin/sh\nexit 0\n' > "$work/bin/jb"; chmod +x "$work/bin/jb"
export PATH="$work/bin:$PATH"
total=0; same=0
gitinit() { (cd "$1" && git init -q -b master && git add -A && git -c user.name=t -c user.email=t@t commit -qm init --allow-empty && git remote add origin "$1" && git fetch -q origin && git remote set-head origin -a >/dev/null); }
for fx in "$root"/tests/fixtures/commodore/*/; do
  name=$(basename "$fx")
  [ -f "$fx/cluster.json" ] || continue
  cluster=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cluster"]["id"])' "$fx/cluster.json")
  tenant=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tenant"]["id"])' "$fx/cluster.json")
  s="$work/$name-strata"; c="$work/$name-commodore"
  cp -r "$fx" "$s"
  "$strata" catalog compile "$cluster" --local --cluster-file "$s/cluster.json" -d "$s" --quiet
  # Commodore's local mode wants what an earlier regular run leaves: the
  # params and bootstrap target files, git repositories for the global and
  # tenant config and the catalog, and vendor/lib (jsonnet-bundler's link).
  cp -r "$fx" "$c"
  mkdir -p "$c/inventory/classes/params" "$c/inventory/classes/defaults" "$c/inventory/classes/components" "$c/inventory/targets" "$c/vendor" "$c/catalog" "$c/dependencies/lib" "$c/dependencies/libs"
  cp "$s/inventory/classes/params/cluster.yml" "$c/inventory/classes/params/"
  cp "$s/inventory/targets/cluster.yml" "$c/inventory/targets/"
  ln -s ../dependencies/lib "$c/vendor/lib"
  for d in "$c"/dependencies/*/; do case "$(basename "$d")" in lib|libs) ;; *) gitinit "$d";; esac; done
  gitinit "$c/inventory/classes/global"; gitinit "$c/inventory/classes/$tenant"; gitinit "$c/catalog"
  (cd "$c" && "$venv/bin/commodore" catalog compile --local "$cluster" > "$work/$name.log" 2>&1) || {
    echo "$name: commodore failed:"; tail -20 "$work/$name.log"; continue; }
  if [ -n "${SAVE_EXPECTED:-}" ]; then
    # The expected catalogs the integration tests compare with.
    rm -rf "$root/tests/fixtures/commodore/$name.expected"
    mkdir -p "$root/tests/fixtures/commodore/$name.expected"
    cp -r "$c/catalog/manifests" "$c/catalog/refs" "$root/tests/fixtures/commodore/$name.expected/"
  fi
  while IFS= read -r f; do
    total=$((total+1))
    if [ ! -f "$s/catalog/$f" ]; then echo "only-in-commodore $name/$f"
    elif [ ! -f "$c/catalog/$f" ]; then echo "only-in-strata $name/$f"
    elif cmp -s "$s/catalog/$f" "$c/catalog/$f"; then same=$((same+1)); echo "identical $name/$f"
    else echo "differs $name/$f"; diff "$c/catalog/$f" "$s/catalog/$f" | head -20 || true; fi
  done < <( (cd "$s/catalog" && find manifests refs -type f; cd "$c/catalog" && find manifests refs -type f) | sort -u)
done
echo "byte-identical: $same/$total"
