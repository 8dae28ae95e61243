#!/usr/bin/env bash
# Commodore (syn-commodore from PyPI, in bench/work/venv) on the same 30
# components as bench/fetch.sh, for the ratio. Run bench/fetch.sh first.
# Commodore has no fetch-only command: `catalog compile` fetches global and
# tenant config and every component, runs jsonnet-bundler, then compiles;
# the components here compile nothing, so the time is essentially fetching.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$here/work/fetch
venv=$here/work/venv
[ -x "$venv/bin/commodore" ] || { python3 -m venv "$venv"; "$venv/bin/pip" install -q syn-commodore; }
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
export GIT_CONFIG_NOSYSTEM=1 HOME=$work/home
cw=$work/commodore
rm -rf "$cw" "$work/srv/global.git" "$work/srv/tenant.git" "$work/srv/catalog.git" "$work/src/global" "$work/src/tenant"
mkdir -p "$cw"

# Component class files Commodore expects (class/<name>.yml, class/defaults.yml).
g=$work/src/global
mkdir -p "$g"
{
  echo "classes: []"
  echo "applications:"
  while read -r name url version path; do echo "  - $name"; done < "$work/list.txt"
  echo "parameters:"
  echo "  kapitan:"
  echo "    secrets: {vaultkv: {auth: token, engine: kv-v2, mount: kv, VAULT_ADDR: 'http://127.0.0.1:1'}}"
  echo "  components:"
  while read -r name url version path; do
    echo "    $name: {url: '$url', version: '$version', path: $path}"
  done < "$work/list.txt"
} > "$g/commodore.yml"
git -C "$g" init -q -b master && git -C "$g" add -A && git -C "$g" commit -qm g
git clone -q --bare "$g" "$work/srv/global.git"
t=$work/src/tenant
mkdir -p "$t"
echo "parameters: {}" > "$t/c-bench.yml"
git -C "$t" init -q -b master && git -C "$t" add -A && git -C "$t" commit -qm t
git clone -q --bare "$t" "$work/srv/tenant.git"
git init -q --bare -b master "$work/srv/catalog.git"

# The components have no jsonnet dependencies: a no-op `jb` keeps
# Commodore from failing for lack of the jsonnet-bundler binary.
mkdir -p "$work/bin"
printf '#!/bin/sh\nmkdir -p vendor\nexit 0\n' > "$work/bin/jb"
chmod +x "$work/bin/jb"
export PATH=$work/bin:$PATH

port=18765
"$venv/bin/python" "$here/commodore_api.py" $port "$work" &
api=$!
trap 'kill $api' EXIT
sleep 1
# Prints "TOTAL FETCH": the whole run, and the time until Commodore starts
# "Updating cluster catalog..." (global and tenant config, package and
# component discovery and fetching: everything strata fetch does).
stamp() {
  "$venv/bin/python" -u -c '
import sys, time
t0 = float(sys.argv[1])
for line in sys.stdin:
    print(f"{time.time() - t0:.3f} {line}", end="")
' "$1"
}
run() {
  local start end
  start=$(date +%s.%N)
  (cd "$cw" && PYTHONUNBUFFERED=1 "$venv/bin/commodore" catalog compile --api-url "http://127.0.0.1:$port" --api-token x c-bench) 2>&1 \
    | stamp "$start" > "$work/commodore.log" || { tail -20 "$work/commodore.log"; exit 1; }
  grep -q "Catalog compiled" "$work/commodore.log" || { tail -20 "$work/commodore.log"; exit 1; }
  end=$(date +%s.%N)
  fetch=$(grep "Updating cluster catalog" "$work/commodore.log" | awk '{print $1}')
  echo "$(echo "$end - $start" | bc) $fetch"
}
read -r scratch scratch_fetch <<< "$(run)"
read -r again again_fetch <<< "$(run)"
echo "Commodore $("$venv/bin/commodore" --version | awk '{print $3}') catalog compile, 30 components (total / until fetching is done):"
echo "  from scratch: ${scratch}s / ${scratch_fetch}s"
echo "  up to date:   ${again}s / ${again_fetch}s"

# strata's whole `catalog compile` (fetching in Commodore's order, then
# compiling) on the same API and repositories, from scratch and up to date.
strata=${STRATA:-$(dirname "$here")/target/debug/strata}
sw=$work/strata-cw
srun() {
  local start end
  start=$(date +%s.%N)
  "$strata" catalog compile c-bench --api-url "http://127.0.0.1:$port" --api-token x -d "$sw" > "$work/strata.log" 2>&1 \
    || { tail -20 "$work/strata.log"; exit 1; }
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
echo "strata catalog compile, same hierarchy (3 runs each; whole run, and the fetch phase):"
for i in 1 2 3; do
  rm -rf "$sw"
  s=$(srun)
  sf=$(grep -o 'Fetched.*' "$work/strata.log")
  u=$(srun)
  echo "  from scratch: ${s}s ($sf); up to date: ${u}s ($(grep -o 'Fetched.*' "$work/strata.log"))"
done
