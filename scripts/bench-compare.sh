#!/usr/bin/env bash
# Runs benchmark suites on a base commit and on this working tree in one run, alternating base and head per suite,
# so that both see the same machine and load. Each side's output is kept in BENCH_OUT (default
# /tmp/corral-bench-compare) as base-SUITE.txt and head-SUITE.txt, with the load average before each run.
# Usage: scripts/bench-compare.sh BASE_REF [SUITE...]   (suites: api gateway controller memory; default: all)
# The memory suite's soak follows CORRAL_BENCH_SOAK_S (default 600 s) on both sides.
set -euo pipefail
if [ $# -lt 1 ]; then
  echo "usage: $0 BASE_REF [SUITE...]" >&2
  exit 2
fi
base_ref=$1
shift
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(api gateway controller memory)
root=$(git rev-parse --show-toplevel)
out=${BENCH_OUT:-/tmp/corral-bench-compare}
mkdir -p "$out"

# The base in a worktree of its own, sharing this checkout's node_modules (same dependencies).
base_dir=$(mktemp -d /tmp/corral-bench-base.XXXXXX)
trap 'git -C "$root" worktree remove --force "$base_dir" >/dev/null 2>&1 || true' EXIT
git -C "$root" worktree add --detach "$base_dir" "$base_ref" >/dev/null
ln -s "$root/node_modules" "$base_dir/node_modules"
echo "base: $(git -C "$base_dir" log -1 --format='%h %s' | cut -c1-100)"
echo "head: $(git -C "$root" log -1 --format='%h %s' | cut -c1-100)$(git -C "$root" diff --quiet || echo ' (with uncommitted changes)')"
for dir in "$base_dir" "$root"; do (cd "$dir" && npx tsc -p tsconfig.build.json); done

for suite in "${suites[@]}"; do
  for side in base head; do
    dir=$root
    [ "$side" = base ] && dir=$base_dir
    echo "== $side: npm run bench -- $suite (load average $(cut -d' ' -f1-3 /proc/loadavg))" | tee "$out/$side-$suite.txt"
    (cd "$dir" && node --import tsx bench/run.ts "$suite") 2>&1 | tee -a "$out/$side-$suite.txt"
  done
done
echo "outputs in $out"
