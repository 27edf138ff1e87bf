#!/usr/bin/env bash
# The CI regression gate: a quick suite of the sleep-based experiments of part A, compared on
# efficiency (ideal / measured, stable across machines for sleep-based steps) with the baseline
# committed next to this script; then the suite's prediction check (a search set beside what
# `pipeprof predict` answers from a probe of the same storage), compared on the prediction's
# error (in points: a relative error is as portable as efficiency, the search's AU and samples/s
# are not). Fails (exit 1) on a significant regression.
#
#   results/baseline/ci_quick.sh            run both and compare with the baselines
#   results/baseline/ci_quick.sh --refresh  run both and make them the new baselines
#
# Environment: PIPEPROF_BUILD_DIR (default <repo>/build), where `pipeprof` was built.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD_DIR=${PIPEPROF_BUILD_DIR:-$ROOT/build}
PIPEPROF=$BUILD_DIR/harness/pipeprof
BASELINE=$ROOT/results/baseline/ci-quick.json
PREDICT_BASELINE=$ROOT/results/baseline/ci-predict.json
OUT=$BUILD_DIR/ci-suite
PREDICT_OUT=$BUILD_DIR/ci-predict

# About 2.2 s per repetition of all of them on any machine: the steps are sleeps.
EXPERIMENTS=naive,prefetch,interleave_sequential,interleave_parallel,interleave_sequential_3,interleave_parallel_3,map_sequential,map_parallel,cache
REPETITIONS=7
THRESHOLD=10%
# The prediction check: npz_256k from nginx (5 ms, 32 MiB/s per request), about a minute and a
# half; its dataset (2 GiB) is generated under $PREDICT_OUT/data once and kept. Its error is one
# sample, and on a 2-core machine that runs nginx beside the loaders both sides of it move: runs
# of the same commit gave errors from -21% to +33% (the search's maximum 18 to 27, the probe's
# plateau 900 to 1,140 MiB/s). So an error more than 25 points above the baseline's is measured
# again, up to PREDICTION_MEASURES times in all, and fails only when every check's error is too: a
# broken model (a unit or a resource lost) moves it by far more, and on every run.
PREDICTION=npz_256k_http
PREDICTION_THRESHOLD=25%
# Fresh-Debian runs of one week: first measures of +4.3%, +42.9%, +9.1% and +42.9% (a second of
# +15.8% and of +47.4%), the search's maximum 19-22 throughout and the prediction 22-30 with the
# probe's plateau (930-1,172 MiB/s). Later fresh-Debian runs gave first measures of -48.0% and
# -41.7%, and one run -42.9%, -42.1% and then +0.0% (predictions of 11-12 where the searches
# measured 19-21, the loaders' start measured long by the probe): up to five measures, failing only
# when all five regress (each about a minute and a half). The probe now keeps the median of three
# starts at each stream count (single starts ranged 21-201 ms at 128 streams and 83-433 at 256 in
# one session): three checks predicted 23, 24 and 24 where the searches measured 22, 22 and 20.
PREDICTION_MEASURES=5

[ -x "$PIPEPROF" ] || { echo "ci_quick: $PIPEPROF not built (set PIPEPROF_BUILD_DIR)" >&2; exit 2; }
rm -rf "$OUT"
"$PIPEPROF" suite --only "$EXPERIMENTS" --repetitions "$REPETITIONS" --no-trace --out "$OUT"
rm -f "$PREDICT_OUT"/results*.json
"$PIPEPROF" suite --only "$PREDICTION" --no-trace --out "$PREDICT_OUT"

if [ "${1:-}" = "--refresh" ]; then
  cp "$OUT/results.json" "$BASELINE"
  cp "$PREDICT_OUT/results.json" "$PREDICT_BASELINE"
  echo "ci_quick: wrote $BASELINE and $PREDICT_BASELINE; review and commit them"
  exit 0
fi
rc=0 prediction_rc=0
"$PIPEPROF" compare "$BASELINE" "$OUT/results.json" --metric efficiency --threshold "$THRESHOLD" || rc=$?
compare_prediction() {
  "$PIPEPROF" compare "$PREDICT_BASELINE" "$PREDICT_OUT/results.json" --metric prediction_error \
    --threshold "$PREDICTION_THRESHOLD"
}
compare_prediction || prediction_rc=$?
measure=1
while [ "$prediction_rc" -eq 1 ] && [ "$measure" -lt "$PREDICTION_MEASURES" ]; do
  mv "$PREDICT_OUT/results.json" "$PREDICT_OUT/results-$measure.json"
  measure=$((measure + 1))
  echo "ci_quick: the prediction's error regressed; measuring it again ($measure of $PREDICTION_MEASURES)" >&2
  if "$PIPEPROF" suite --only "$PREDICTION" --no-trace --out "$PREDICT_OUT"; then
    prediction_rc=0
    compare_prediction || prediction_rc=$?
  else
    echo "ci_quick: measure $measure of the prediction check failed (exit $?)" >&2
    prediction_rc=1
    break
  fi
done
[ "$prediction_rc" -gt "$rc" ] && rc=$prediction_rc
exit "$rc"
