#!/usr/bin/env bash
# The issue-20 check on the review comment's size: two generated catalogs of
# 1,000 targets x 60 Deployments, where the pull request changes one
# tenant's owner annotation (17 targets, 1,020 objects, one line each).
# Diffs them, builds the comment (`strata comment --dry-run`) and fails
# unless it is under 4,000 characters and names the change, the count and
# the targets.
#
#   bench/review_size.sh [STRATA_BIN]   (default: a release build)
set -euo pipefail
cd "$(dirname "$0")/.."
work=bench/work/review-size
rm -rf "$work"
mkdir -p "$work"
bin=${1:-}
if [ -z "$bin" ]; then
  cargo build --release --quiet
  bin=$PWD/target/release/strata
fi
python3 - "$work/cat" <<'PY'
import os, sys
root = sys.argv[1]
for side in ("base", "head"):
    for t in range(1, 1001):
        tn = "cluster-%04d" % t
        d = os.path.join(root, side, tn, "apps")
        os.makedirs(d, exist_ok=True)
        tenant = t % 59  # tenant 1 owns 17 of the 1,000 targets
        owner = "owner-%d@example.invalid" % tenant
        if side == "head" and tenant == 1:
            owner = "platform-team@example.invalid"
        for i in range(60):
            with open(os.path.join(d, "app-%02d.yaml" % i), "w") as f:
                f.write(
                    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n"
                    f"  name: app-{i:02d}\n  namespace: {tn}\n"
                    f"  annotations:\n    owner: {owner}\n"
                    f"  labels:\n    cluster: {tn}\n"
                    "spec:\n  replicas: 2\n  template:\n    spec:\n      containers:\n"
                    f"      - name: app\n        image: registry.example/app-{i:02d}:1.0\n"
                )
PY
t0=$(date +%s%N)
"$bin" diff --catalogs "$work/cat/base" "$work/cat/head" --format json --json-out "$work/diff.json" >/dev/null
t1=$(date +%s%N)
"$bin" comment --diff "$work/diff.json" --output "$work/strata-review.md" --dry-run >"$work/comment.md"
chars=$(python3 -c 'import sys; print(len(open(sys.argv[1], encoding="utf-8").read()))' "$work/comment.md")
echo "diff: $(( (t1 - t0) / 1000000 )) ms; comment: $chars characters; full report: $(wc -c <"$work/strata-review.md") bytes"
grep -q 'metadata.annotations.owner`: `"owner-1@example.invalid"` → `"platform-team@example.invalid"`' "$work/comment.md"
grep -q 'in 1,020 objects (`Deployment` ×1,020) across 17 targets: `cluster-0001`' "$work/comment.md"
if [ "$chars" -ge 4000 ]; then
  echo "FAIL: the comment has $chars characters (budget: under 4,000)" >&2
  exit 1
fi
echo "OK: under 4,000 characters, names the change, the count and the targets"
