#!/usr/bin/env bash
# Benchmark of `strata fetch`: 30 components living in 10 local bare
# repositories (3 per repository, each in its own sub-directory, pinned to
# a tag, a branch or a commit), fetched over file:// from scratch and again
# when up to date. Everything lives under bench/work/fetch (git-ignored by
# being recreated each run).
#
#   bench/fetch.sh            # uses target/debug/strata (cargo build first)
#   STRATA=path/to/strata bench/fetch.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
strata=${STRATA:-$root/target/debug/strata}
work=$here/work/fetch
rm -rf "$work"
mkdir -p "$work/srv"
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
export GIT_CONFIG_NOSYSTEM=1 HOME=$work/home
mkdir -p "$HOME"

deps=$work/deps.yaml
echo "parameters:" > "$deps"
echo "  components:" >> "$deps"
for r in $(seq -w 1 10); do
  src=$work/src/repo-$r
  mkdir -p "$src"
  git -C "$src" init -q -b main
  for c in 1 2 3; do
    d=$src/component-$c
    mkdir -p "$d/class" "$d/component" "$d/lib"
    # What Commodore needs of a component (bench/commodore.sh).
    printf 'parameters:\n  comp_%s_%s:\n    namespace: ns\n' "$r" "$c" > "$d/class/defaults.yml"
    printf 'parameters:\n  kapitan:\n    compile:\n      - input_type: copy\n        input_paths: ["${_base_directory}/class/defaults.yml"]\n        output_path: comp-%s-%s/\n' "$r" "$c" > "$d/class/comp-$r-$c.yml"
    # ~40 files per component, some history.
    for f in $(seq 1 12); do
      printf 'parameters:\n  c%s_%s:\n    key%s: value%s\n' "$r" "$c" "$f" "$f" > "$d/class/defaults-$f.yml"
      printf 'local kap = import "lib/kapitan.libjsonnet";\n{ f%s: %s }\n' "$f" "$f" > "$d/component/main-$f.jsonnet"
      printf '{ lib%s: %s }\n' "$f" "$f" > "$d/lib/comp-$r-$c-$f.libsonnet"
    done
  done
  git -C "$src" add -A
  git -C "$src" commit -q -m one
  git -C "$src" tag v1.0.0
  for i in 1 2 3 4; do
    echo "change $i" >> "$src/component-1/class/defaults-1.yml"
    git -C "$src" commit -q -am "change $i"
  done
  git -C "$src" tag v1.1.0
  git clone -q --bare "$src" "$work/srv/repo-$r.git"
  commit=$(git -C "$src" rev-parse HEAD~2)
  url="file://$work/srv/repo-$r.git"
  echo "    comp-$r-1: {url: '$url', version: v1.0.0, path: component-1}" >> "$deps"
  echo "    comp-$r-2: {url: '$url', version: main, path: component-2}" >> "$deps"
  echo "    comp-$r-3: {url: '$url', version: '$commit', path: component-3}" >> "$deps"
done

run() {
  local start end
  start=$(date +%s.%N)
  "$strata" fetch --deps "$deps" --work-dir "$work/cluster" > "$work/out.txt" 2> "$work/err.txt"
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
scratch=$(run)
test "$(grep -c ' updated$' "$work/out.txt")" = 30
uptodate=$(run)
test "$(grep -c ' up to date$' "$work/out.txt")" = 30
# Baseline: what Commodore does with the git CLI (GitPython drives `git`):
# a bare clone per repository, then one `git worktree add` per component,
# and when up to date a `git fetch` per repository plus a checkout per
# component. Commodore's own Python overhead comes on top.
gitcli() {
  local start end base=$work/gitcli
  start=$(date +%s.%N)
  while read -r name url version path; do
    repo=$base/.repos/$(basename "$url")
    if [ ! -d "$repo" ]; then
      git clone -q --bare "$url" "$repo"
      git -C "$repo" config remote.origin.fetch '+refs/heads/*:refs/remotes/origin/*'
      git -C "$repo" fetch -q origin
    elif [ ! -f "$repo/.fetched" ]; then
      git -C "$repo" fetch -q --tags origin
    fi
    touch "$repo/.fetched"
    if [ -d "$base/$name" ]; then
      git -C "$base/$name" checkout -q --detach "$version"
    else
      git -C "$repo" worktree add -q --detach "$base/$name" "$version"
    fi
  done < "$work/list.txt"
  rm -f "$base"/.repos/*/.fetched
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
sed -n 's/^    \(comp-[^:]*\): {url: .\([^'"'"']*\)., version: \([^,]*\), path: \([^}]*\)}$/\1 \2 \3 \4/p' "$deps" \
  | sed "s/'//g" > "$work/list.txt"
test "$(wc -l < "$work/list.txt")" = 30
gitcli_scratch=$(gitcli)
gitcli_uptodate=$(gitcli)

echo "strata fetch, 30 components from 10 repositories (file://), $(basename "$strata") at $strata"
echo "  from scratch: ${scratch}s"
echo "  up to date:   ${uptodate}s"
echo "git CLI as Commodore drives it (bare clone + worktree add per component):"
echo "  from scratch: ${gitcli_scratch}s"
echo "  up to date:   ${gitcli_uptodate}s"
