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
#   page_cache   the local files in the page cache (predict --warm; the workload after a read)
#   http_<L>ms_<R>mib   nginx on 127.0.0.1 with L ms to the first byte and R MiB/s per request
#                (`pipeprof serve` for the probe; the workload's pipeprof.remote, mode direct)
# Workloads (WORKLOADS, default npz_256k): files of harness/workloads/, run at their
# pipeprof.scale; remote set-ups add READ_THREADS_REMOTE reader threads (default 16), so that an
# accelerator's streams can cover the latency. The data is generated under DATA (default
# data/bench_predict, kept). Prints one line per set-up and workload and a summary table with the
# error of each prediction; writes OUT (default out/bench_predict) /predict.csv.
set -euo pipefail

BUILD_DIR=${1:-build}
PIPEPROF="$BUILD_DIR/harness/pipeprof"
[ -x "$PIPEPROF" ] || { echo "bench_predict.sh: $PIPEPROF not found (build it first)" >&2; exit 2; }
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SETUPS=${SETUPS:-"local_cold page_cache http_5ms_8mib http_20ms_8mib http_5ms_32mib http_20ms_32mib"}
WORKLOADS=${WORKLOADS:-npz_256k}
READ_THREADS_REMOTE=${READ_THREADS_REMOTE:-16}
MAX=${MAX_ACCELERATORS:-128}
DATA=${DATA:-data/bench_predict}
OUT=${OUT:-out/bench_predict}
mkdir -p "$OUT" "$DATA"
SERVER=
stop_server() {
  if [ -n "$SERVER" ]; then kill -INT "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; fi
  SERVER=
}
trap stop_server EXIT

echo "setup,workload,predicted,measured,error_percent,binding" >"$OUT/predict.csv"
for name in $WORKLOADS; do
  base="$HERE/harness/workloads/$name.yaml"
  [ -f "$base" ] || { echo "bench_predict.sh: no workload $base" >&2; exit 2; }
  data="$DATA/$name"
  "$PIPEPROF" datagen --workload "$base" --data-folder "$data" --quiet >/dev/null
  for setup in $SETUPS; do
    w="$OUT/$name-$setup.yaml"
    cp "$base" "$w"
    overrides=(++workload.dataset.data_folder="$data")
    predict_flags=()
    workload_flags=()
    folder=
    case "$setup" in
      local_cold) predict_flags=(--cold); workload_flags=(--drop-caches) ;;
      page_cache)
        predict_flags=(--warm)
        cat "$data"/train/* >/dev/null ;;
      http_*ms_*mib)
        latency=${setup#http_}; latency=${latency%%ms_*}
        rate=${setup##*ms_}; rate=${rate%mib}
        overrides+=(++workload.reader.read_threads="$READ_THREADS_REMOTE"
                    ++workload.pipeprof.remote.mode=direct
                    ++workload.pipeprof.remote.latency_ms="$latency"
                    ++workload.pipeprof.remote.rate_mib_s="$rate")
        "$PIPEPROF" serve "$data" --latency-ms "$latency" --rate-mib-s "$rate" >"$OUT/serve.out" 2>&1 &
        SERVER=$!
        for _ in $(seq 1 100); do grep -q "^serving" "$OUT/serve.out" && break; sleep 0.1; done
        folder=$(sed -n 's/^serving .* at \(http[^ ]*\) .*/\1/p' "$OUT/serve.out")
        [ -n "$folder" ] || { cat "$OUT/serve.out" >&2; exit 1; }
        predict_flags=(--data-folder "$folder") ;;
      *) echo "bench_predict.sh: unknown set-up $setup" >&2; exit 2 ;;
    esac
    "$PIPEPROF" predict "$w" "${overrides[@]}" --probe -q --out "$OUT/$name-$setup" "${predict_flags[@]}" \
      --max-accelerators "$MAX" --json >"$OUT/$name-$setup.predict.json"
    stop_server
    predicted=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["predictions"][0]["max_accelerators"])' "$OUT/$name-$setup.predict.json")
    binding=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["predictions"][0]["binding"])' "$OUT/$name-$setup.predict.json")
    [ "$setup" = page_cache ] && cat "$data"/train/* >/dev/null
    "$PIPEPROF" workload "$w" "${overrides[@]}" --find-max-accelerators --max-accelerators "$MAX" \
      "${workload_flags[@]}" -q --out "$OUT/$name-$setup" >"$OUT/$name-$setup.search.txt" 2>&1
    measured=$(sed -n 's/^max accelerators at AU >= [0-9]*%: \([0-9]*\).*/\1/p' "$OUT/$name-$setup.search.txt")
    error=$(/usr/bin/python3 -c 'import sys; p,m=float(sys.argv[1]),float(sys.argv[2]); print(f"{(p-m)/m*100:+.1f}" if m else "n/a")' "$predicted" "$measured")
    echo "$setup  $name: predicted $predicted, measured $measured ($error%), binding: $binding"
    echo "$setup,$name,$predicted,$measured,$error,$binding" >>"$OUT/predict.csv"
  done
done
echo
column -s, -t <"$OUT/predict.csv"
