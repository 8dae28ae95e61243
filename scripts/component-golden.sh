#!/usr/bin/env bash
# Runs every golden test of Commodore components with `strata component compile`
# the way the Project Syn component template's `make golden-diff` runs them:
#   component compile . -f tests/<instance>.yml <commodore_args' --search-paths, else --search-paths .> -n <name> [--alias <instance>]
# compared byte for byte with tests/golden/<instance>/.
# Usage: [GOLDEN_ARGS=--no-fetch] scripts/component-golden.sh STRATA COMPONENT_DIR...
# (prints one line per instance:
#   <component> <instance> <identical>/<total> <status>)
set -u
strata=$1; shift
for dir in "$@"; do
  dir=${dir%/}
  [ -d "$dir/tests" ] || continue
  name=$(sed -n 's/^COMPONENT_NAME ?= *//p' "$dir/Makefile.vars.mk" 2>/dev/null)
  # A name computed by make (`$(shell basename ${PWD} ...)`): the directory's.
  case $name in *'$('*) name= ;; esac
  [ -n "$name" ] || name=$(basename "$dir" | sed 's/^component-//')
  # The search paths `make golden-diff` passes (`commodore_args`): older
  # components put their helm charts below ./dependencies.
  sp=$(sed -n 's/^commodore_args *?= *//p' "$dir/Makefile.vars.mk" 2>/dev/null |
    grep -o -- '--search-paths [^ ]*' | tr '\n' ' ')
  [ -n "$sp" ] || sp='--search-paths .'
  alias=false
  grep -qs -- '--alias $(instance)' "$dir/Makefile.custom.mk" "$dir/Makefile.vars.mk" && alias=true
  for t in "$dir"/tests/*.yml; do
    [ -f "$t" ] || continue
    inst=$(basename "$t" .yml)
    [ -d "$dir/tests/golden/$inst" ] || continue
    # shellcheck disable=SC2206 # $sp is flag/value pairs without spaces
    args=(component compile . -f "tests/$inst.yml" $sp -n "$name" --golden "tests/golden/$inst" ${GOLDEN_ARGS:-})
    $alias && args+=(--alias "$inst")
    out=$(cd "$dir" && "$strata" "${args[@]}" 2>&1 >/dev/null)
    rc=$?
    summary=$(printf '%s\n' "$out" | sed -n 's/^Golden files: \([0-9]*\) of \([0-9]*\) identical.*/\1\/\2/p' | tail -1)
    case $rc in
      0) echo "$name $inst $summary ok" ;;
      1) echo "$name $inst $summary differs" ;;
      *) echo "$name $inst -/$(find "$dir/tests/golden/$inst" -type f | wc -l) error: $(printf '%s' "$out" | head -c 300 | tr '\n' ' ')" ;;
    esac
  done
done
