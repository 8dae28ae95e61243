#!/usr/bin/env bash
# Benchmark of `strata order` on the kapp-order corpus's cf-for-k8s cases
# (245 resources, kapp's default rules plus the app's own kapp Config:
# 10,181 edges when applying, 7,544 when deleting), plus a generated app of
# 3,020 resources (2,003,000 edges) to show how it scales.
#
#   bench/order.sh [RUNS]        (default 10 runs per case; release build)
#
# Prints the median and the slowest wall time per case and fails if the
# cf-for-k8s median is not under one second.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
cases=../shared/conformance/kapp-order/cases
work=bench/work/order
mkdir -p "$work"

cargo build --release --quiet
bin=$PWD/target/release/strata

# time_case NAME ARGS...: runs `strata order ARGS` $runs times, prints
# "NAME median max", and leaves the median in $median_ms.
time_case() {
  local name=$1; shift
  local times=()
  for _ in $(seq "$runs"); do
    local t0 t1
    t0=$(date +%s%N)
    "$bin" order "$@" >/dev/null
    t1=$(date +%s%N)
    times+=($(( (t1 - t0) / 1000000 )))
  done
  local sorted
  sorted=$(printf '%s\n' "${times[@]}" | sort -n)
  median_ms=$(sed -n "$(( (runs + 1) / 2 ))p" <<<"$sorted")
  printf '%-34s median %5d ms   max %5d ms   (%d runs)\n' "$name" "$median_ms" "$(tail -n1 <<<"$sorted")" "$runs"
}

up=$cases/test-change-graph-cf-for-k8s-upsert
down=$cases/test-change-graph-cf-for-k8s-delete
edges=$("$bin" order "$up/input.yaml" --order-config "$up/config.yaml" --format edges | wc -l)
echo "cf-for-k8s: $(grep -c '^kind:' "$up/input.yaml") resources, $edges edges (upsert)"

time_case "cf-for-k8s upsert --format edges" "$up/input.yaml" --order-config "$up/config.yaml" --format edges
cf_median=$median_ms
time_case "cf-for-k8s delete --format edges" "$down/input.yaml" --order-config "$down/config.yaml" --delete --format edges
time_case "cf-for-k8s upsert --format text" "$up/input.yaml" --order-config "$up/config.yaml"

# A larger app: 20 namespaces x 50 x (ConfigMap, Deployment, Service). kapp's
# last default rule makes every Deployment/Service wait for every ConfigMap.
large=$work/large.yaml
if [ ! -s "$large" ]; then
  for n in $(seq 0 19); do
    printf -- '---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns%d\n' "$n"
    for i in $(seq 0 49); do
      printf -- '---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm%d\n  namespace: ns%d\n' "$i" "$n"
      printf -- '---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d%d\n  namespace: ns%d\n' "$i" "$n"
      printf -- '---\napiVersion: v1\nkind: Service\nmetadata:\n  name: s%d\n  namespace: ns%d\n' "$i" "$n"
    done
  done >"$large"
fi
time_case "3,020 resources --format waves" "$large" --format waves

if [ "$cf_median" -ge 1000 ]; then
  echo "FAIL: cf-for-k8s took ${cf_median} ms (budget: under 1000 ms)" >&2
  exit 1
fi
echo "OK: cf-for-k8s orders in ${cf_median} ms (budget: under 1000 ms)"
