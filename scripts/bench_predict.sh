#!/usr/bin/env bash
# pipeprof predict against measurement: for each storage set-up, the predicted most accelerators
# at the workload's AU threshold (a probe of that storage, then `pipeprof predict`) beside the
# measured one (`pipeprof workload --find-max-accelerators` on the same storage), in one run.
#
#   scripts/bench_predict.sh [build dir]      (default: build)
#
# Set-ups (SETUPS, space-separated; default all):
#   local_cold   the local files, dropped from the page cache before every epoch and pass
#                (predict --cold; workload --drop-caches)
#   page_cache   the local files in the page cache (predict --warm; the workload after a read,
#                with the files held in memory by vmtouch while it runs)
#   http_<L>ms_<R>mib   nginx on 127.0.0.1 with L ms to the first byte and R MiB/s per request
#                (the workload's pipeprof.remote, mode direct: predict probes through the nginx the
#                workload starts, as its runs read)
# Workloads (WORKLOADS, default npz_256k resnet50_h100): files of harness/workloads/, run and predicted at
# their pipeprof.scale; remote set-ups add READ_THREADS_REMOTE reader threads (default 16), so that an
# accelerator's streams can cover the latency. The data is generated under DATA (default
# data/bench_predict, kept). Prints one line per set-up and workload and a summary table with the
# error of each prediction; writes OUT (default out/bench_predict) /predict.csv.
# SCALE: run and predict every workload at that fraction of its files instead of its
# pipeprof.scale (the data then goes to DATA/<name>-<SCALE>).
# OVERRIDES: ++workload.* overrides (space-separated) for every workload's prediction, search and
# data, for example smaller samples and more files of an MLPerf workload (its data then goes to
# DATA/<name>-<a hash of the overrides>).
# REPEATS (default 1): each set-up's prediction and search run that many times, one after the
# other in turns; the table compares their medians (this machine's speed drifts over minutes, and
# a search near its limit moves by a few accelerators from run to run), and the CSV keeps every
# run's figure.
# RECHECK_AU (default 2, the search's own default): the searches run any probe whose AU lies within
# that many points of metric.au again and decide it by the median of three runs. Short runs of an
# MLPerf workload over nginx move by 10-15 points from run to run at the same count (their first
# epoch's start); RECHECK_AU=10 keeps one unlucky run from ending a search early.
set -euo pipefail

BUILD_DIR=${1:-build}
PIPEPROF="$BUILD_DIR/harness/pipeprof"
[ -x "$PIPEPROF" ] || { echo "bench_predict.sh: $PIPEPROF not found (build it first)" >&2; exit 2; }
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SETUPS=${SETUPS:-"local_cold page_cache http_5ms_8mib http_20ms_8mib http_5ms_32mib http_20ms_32mib"}
WORKLOADS=${WORKLOADS:-"npz_256k resnet50_h100"}
READ_THREADS_REMOTE=${READ_THREADS_REMOTE:-16}
MAX=${MAX_ACCELERATORS:-128}
REPEATS=${REPEATS:-1}
RECHECK_AU=${RECHECK_AU:-2}
[[ $RECHECK_AU =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "bench_predict.sh: RECHECK_AU must be a number of AU points >= 0, got '$RECHECK_AU'" >&2; exit 2; }
[[ $REPEATS =~ ^[1-9][0-9]*$ ]] || { echo "bench_predict.sh: REPEATS must be a whole number >= 1, got '$REPEATS'" >&2; exit 2; }
DATA=${DATA:-data/bench_predict}
OUT=${OUT:-out/bench_predict}
read -r -a EXTRA <<<"${OVERRIDES:-}"
for o in "${EXTRA[@]}"; do
  [[ $o == ++workload.* ]] || { echo "bench_predict.sh: OVERRIDES takes ++workload.<key>=<value> words, got '$o'" >&2; exit 2; }
done
mkdir -p "$OUT" "$DATA"
# page_cache: the files are held in memory while the search runs (vmtouch -l, where this user may
# lock memory). Some virtual machines' hosts take clean page-cache pages back even with memory
# free (the development VM lost 0.05 GiB of a 13 GiB dataset in 30 idle seconds), and the reads
# that go to the disk again hold every accelerator at DLIO's barrier.
HOLDER=
release() { if [ -n "$HOLDER" ]; then kill "$HOLDER" 2>/dev/null || true; HOLDER=; fi; }
trap release EXIT
# Ctrl-C: pipeprof stops cleanly and exits 130, which a script goes on from; this one stops then
# (once the command it waits for has ended), keeping predict.csv's rows so far.
trap 'echo "bench_predict.sh: interrupted" >&2; exit 130' INT
hold() {
  if ! command -v vmtouch >/dev/null; then
    echo "bench_predict.sh: no vmtouch: $1 is not held in memory" >&2
    return 0
  fi
  rm -f "$OUT/vmtouch.pid"
  if vmtouch -q -l -d -w -P "$OUT/vmtouch.pid" "$1" && [ -s "$OUT/vmtouch.pid" ]; then
    HOLDER=$(cat "$OUT/vmtouch.pid")
  else
    echo "bench_predict.sh: vmtouch could not lock $1 in memory: the page cache is not held" >&2
  fi
}
# The median of the runs that gave a figure (n/a when none did).
median() { /usr/bin/python3 -c 'import statistics, sys
v = [float(x) for x in sys.argv[1:] if x != "n/a"]
print(f"{statistics.median(v):g}" if v else "n/a")' "$@"; }
echo "setup,workload,predicted,measured,error_percent,binding,predicted_runs,measured_runs" >"$OUT/predict.csv"
for name in $WORKLOADS; do
  base="$HERE/harness/workloads/$name.yaml"
  [ -f "$base" ] || { echo "bench_predict.sh: no workload $base" >&2; exit 2; }
  data="$DATA/$name"
  scale_flags=()
  if [ -n "${SCALE:-}" ]; then data="$DATA/$name-$SCALE"; scale_flags=(--scale "$SCALE"); fi
  if [ ${#EXTRA[@]} -gt 0 ]; then data="$data-$(printf '%s\n' "${EXTRA[@]}" | md5sum | cut -c1-8)"; fi
  # At the workload's pipeprof.scale, or SCALE (`pipeprof datagen --workload` writes the full size).
  "$PIPEPROF" workload "$base" "${EXTRA[@]}" ++workload.dataset.data_folder="$data" ++workload.workflow.generate_data=True \
    ++workload.workflow.train=False ++workload.workflow.checkpoint=False "${scale_flags[@]}" -q >/dev/null
  sync  # written back, so that a cold set-up can drop the files from the page cache
  for setup in $SETUPS; do
    w="$OUT/$name-$setup.yaml"
    cp "$base" "$w"
    overrides=("${EXTRA[@]}" ++workload.dataset.data_folder="$data")
    predict_flags=()
    workload_flags=()
    case "$setup" in
      local_cold) predict_flags=(--cold); workload_flags=(--drop-caches) ;;
      page_cache) predict_flags=(--warm) ;;
      http_*ms_*mib)
        latency=${setup#http_}; latency=${latency%%ms_*}
        rate=${setup##*ms_}; rate=${rate%mib}
        overrides+=(++workload.reader.read_threads="$READ_THREADS_REMOTE"
                    ++workload.pipeprof.remote.mode=direct
                    ++workload.pipeprof.remote.latency_ms="$latency"
                    ++workload.pipeprof.remote.rate_mib_s="$rate")
        ;;
      *) echo "bench_predict.sh: unknown set-up $setup" >&2; exit 2 ;;
    esac
    # The prediction for the dataset the search runs on: the workload's pipeprof.scale.
    scale=${SCALE:-$(/usr/bin/python3 -c 'import sys, yaml; d = yaml.safe_load(open(sys.argv[1])) or {}; print((d.get("pipeprof") or {}).get("scale", 1))' "$w")}
    predicted_runs=() measured_runs=() bindings=()
    for run in $(seq 1 "$REPEATS"); do
      tag="$name-$setup"; [ "$REPEATS" -gt 1 ] && tag="$name-$setup.$run"
      predicted=n/a measured=n/a binding=n/a
      [ "$setup" = page_cache ] && find "$data/train" -type f -exec cat {} + >/dev/null
      if "$PIPEPROF" predict "$w" "${overrides[@]}" --probe -q --out "$OUT/$tag/probe" --scale "$scale" \
           "${predict_flags[@]}" --max-accelerators "$MAX" --json >"$OUT/$tag.predict.json" 2>"$OUT/$tag.predict.err"; then
        read -r predicted binding < <(/usr/bin/python3 -c 'import json,sys; p = json.load(open(sys.argv[1]))["predictions"][0]; print(p["max_accelerators"], p["binding"] or "-")' "$OUT/$tag.predict.json") || true
        [ -n "$predicted" ] || predicted=n/a
      else
        echo "bench_predict.sh: $setup $name: predict failed:" >&2; cat "$OUT/$tag.predict.err" >&2
      fi
      if [ "$setup" = page_cache ]; then
        find "$data/train" -type f -exec cat {} + >/dev/null
        hold "$data/train"
      fi
      if "$PIPEPROF" workload "$w" "${overrides[@]}" --find-max-accelerators --max-accelerators "$MAX" --recheck-au "$RECHECK_AU" \
           "${workload_flags[@]}" "${scale_flags[@]}" -q --out "$OUT/$tag/search" >"$OUT/$tag.search.txt" 2>&1; then
        measured=$(sed -n 's/^max accelerators at AU >= [0-9]*%: \([0-9]*\).*/\1/p' "$OUT/$tag.search.txt")
      fi
      release
      [ -n "$measured" ] || { echo "bench_predict.sh: $setup $name: the search failed:" >&2; tail -5 "$OUT/$tag.search.txt" >&2; measured=n/a; }
      [ "$REPEATS" -gt 1 ] && echo "$setup  $name (run $run of $REPEATS): predicted $predicted, measured $measured"
      predicted_runs+=("$predicted") measured_runs+=("$measured") bindings+=("$binding")
    done
    predicted=$(median "${predicted_runs[@]}") measured=$(median "${measured_runs[@]}")
    # The binding resource of a run whose prediction is the median (else of the last run).
    binding=${bindings[-1]}
    for i in "${!predicted_runs[@]}"; do
      [ "${predicted_runs[$i]}" = "$predicted" ] && { binding=${bindings[$i]}; break; }
    done
    error=$(/usr/bin/python3 -c 'import sys
try: p, m = float(sys.argv[1]), float(sys.argv[2]); print(f"{(p - m) / m * 100:+.1f}" if m else "n/a")
except ValueError: print("n/a")' "$predicted" "$measured")
    echo "$setup  $name: predicted $predicted, measured $measured ($error%), binding: $binding"
    echo "$setup,$name,$predicted,$measured,$error,$binding,${predicted_runs[*]},${measured_runs[*]}" >>"$OUT/predict.csv"
  done
done
echo
column -s, -t <"$OUT/predict.csv"
