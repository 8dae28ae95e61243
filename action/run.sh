#!/usr/bin/env bash
# The action's run step: builds the strata command line from the action's
# inputs, which arrive as environment variables (INPUT_*) and never as text
# pasted into a script, so no input can inject shell code. `strata ci`
# itself writes the step outputs ($GITHUB_OUTPUT) and the job summary.
set -euo pipefail

bin="${STRATA_BIN:-strata}"
command="${INPUT_COMMAND:-ci}"
if [ -z "$command" ]; then
  command=ci
fi

# Space-separated lists; words only, no globbing or quote processing.
split() {
  local IFS=$' \t\n'
  set -f
  # shellcheck disable=SC2206
  words=($1)
  set +f
}

argv=("$command")
case "$command" in
  ci | compile | lint | inventory)
    if [ -n "${INPUT_INVENTORY_PATH:-}" ]; then
      argv+=(--inventory-path "$INPUT_INVENTORY_PATH")
    fi
    ;;
esac
case "$command" in
  ci | compile | inventory)
    split "${INPUT_TARGETS:-}"
    if [ "${#words[@]}" -gt 0 ]; then
      argv+=(--targets "${words[@]}")
    fi
    ;;
esac
case "$command" in
  ci | compile)
    if [ -n "${INPUT_CACHE:-}" ]; then
      argv+=(--cache "$INPUT_CACHE")
    fi
    ;;
esac
if [ "$command" = ci ]; then
  if [ -n "${INPUT_CATALOG_REPO:-}" ]; then
    argv+=(--catalog-repo "$INPUT_CATALOG_REPO")
  fi
  argv+=(--fail-on "${INPUT_FAIL_ON:-error}")
  case "${INPUT_COMMENT:-true}" in
    true | True | TRUE | yes | 1) ;;
    false | False | FALSE | no | 0) argv+=(--no-comment) ;;
    *)
      echo "::error title=strata action::input comment must be true or false, not '${INPUT_COMMENT}'"
      exit 2
      ;;
  esac
elif [ "$command" = lint ] && [ "${INPUT_FAIL_ON:-error}" != never ]; then
  argv+=(--fail-on "${INPUT_FAIL_ON:-error}")
fi
split "${INPUT_ARGS:-}"
argv+=(${words[@]+"${words[@]}"})

echo "strata ${argv[*]}" >&2
exec "$bin" "${argv[@]}"
