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

port=18765
"$venv/bin/python" "$here/commodore_api.py" $port "$work" &
api=$!
trap 'kill $api' EXIT
sleep 1
run() {
  local start end
  start=$(date +%s.%N)
  (cd "$cw" && "$venv/bin/commodore" catalog compile --api-url "http://127.0.0.1:$port" --api-token x c-bench) > "$work/commodore.log" 2>&1 || { tail -20 "$work/commodore.log"; exit 1; }
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
scratch=$(run)
again=$(run)
echo "Commodore $("$venv/bin/commodore" --version | awk '{print $3}') catalog compile (fetch + empty compile), 30 components:"
echo "  from scratch: ${scratch}s"
echo "  up to date:   ${again}s"
