#!/usr/bin/env bash
# The CI regression gate: a quick suite of the sleep-based experiments of part A, compared on
# efficiency (ideal / measured, stable across machines for sleep-based steps) with the baseline
# committed next to this script. Fails (exit 1) on a significant regression.
#
#   results/baseline/ci_quick.sh            run the quick suite and compare with the baseline
#   results/baseline/ci_quick.sh --refresh  run the quick suite and make it the new baseline
#
# Environment: PIPEPROF_BUILD_DIR (default <repo>/build), where `pipeprof` was built.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD_DIR=${PIPEPROF_BUILD_DIR:-$ROOT/build}
PIPEPROF=$BUILD_DIR/harness/pipeprof
BASELINE=$ROOT/results/baseline/ci-quick.json
OUT=$BUILD_DIR/ci-suite

# About 2.2 s per repetition of all of them on any machine: the steps are sleeps.
EXPERIMENTS=naive,prefetch,interleave_sequential,interleave_parallel,interleave_sequential_3,interleave_parallel_3,map_sequential,map_parallel,cache
REPETITIONS=7
THRESHOLD=10%

[ -x "$PIPEPROF" ] || { echo "ci_quick: $PIPEPROF not built (set PIPEPROF_BUILD_DIR)" >&2; exit 2; }
rm -rf "$OUT"
"$PIPEPROF" suite --only "$EXPERIMENTS" --repetitions "$REPETITIONS" --no-trace --out "$OUT"

if [ "${1:-}" = "--refresh" ]; then
  cp "$OUT/results.json" "$BASELINE"
  echo "ci_quick: wrote $BASELINE; review and commit it"
  exit 0
fi
"$PIPEPROF" compare "$BASELINE" "$OUT/results.json" --metric efficiency --threshold "$THRESHOLD"
