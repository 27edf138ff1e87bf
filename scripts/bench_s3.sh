#!/usr/bin/env bash
# S3 reads through the test bed's S3 server (OpenStack Swift's S3 API on 127.0.0.1): pipeprof's
# workload loader against boto3 (python3-boto3, the reference S3 client), on the same objects with
# the same number of requests in flight, in one run.
#
#   scripts/bench_s3.sh [build dir]      (default: build)
#
# A dataset of FILES npz objects of MIB MiB is generated locally and served as the bucket "bench"
# (`pipeprof serve --s3`). pipeprof runs a DLIO workload on it (storage.storage_type: s3, the
# pytorch loader, batch 1, THREADS read threads, no compute, 2 epochs): its figure is the samples/s
# of its training epochs (DLIO's train_throughput_mean_samples_per_second) times the object's
# bytes. boto3 GETs every object once with THREADS threads (a ThreadPoolExecutor, a connection
# each, path-style addressing): bytes over the wall time. Rounds alternate the two; prints each
# round, the medians and their ratio.
#
# Environment: FILES (64), MIB (8), THREADS (4), ROUNDS (3).
set -euo pipefail

BUILD_DIR=${1:-build}
PIPEPROF="$BUILD_DIR/harness/pipeprof"
[ -x "$PIPEPROF" ] || { echo "bench_s3.sh: $PIPEPROF not found (build it first)" >&2; exit 2; }
python3 -c 'import boto3' 2>/dev/null || { echo "bench_s3.sh: boto3 not found (apt-get install python3-boto3)" >&2; exit 2; }

FILES=${FILES:-64} MIB=${MIB:-8} THREADS=${THREADS:-4} ROUNDS=${ROUNDS:-3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pipeprof_s3bench_XXXXXX")
SERVER=
cleanup() {
  [ -n "$SERVER" ] && kill -INT "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

"$PIPEPROF" datagen --data-folder "$WORK/data" --format npz --num-files-train "$FILES" \
  --num-samples-per-file 1 --record-length $((MIB * 1048576)) --quiet
"$PIPEPROF" serve --s3 bench "$WORK/data" >"$WORK/serve.out" 2>&1 &
SERVER=$!
for _ in $(seq 1 600); do
  grep -q "^serving" "$WORK/serve.out" && break
  kill -0 "$SERVER" 2>/dev/null || { cat "$WORK/serve.out" >&2; exit 1; }
  sleep 0.2
done
grep -q "^serving" "$WORK/serve.out" || { echo "bench_s3.sh: the S3 server did not start" >&2; exit 1; }
# "  or: AWS_ENDPOINT_URL=... AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... AWS_REGION=..."
eval "export $(sed -n 's/^  or: //p' "$WORK/serve.out")"
OBJECT_BYTES=$(stat -c %s "$(ls "$WORK"/data/train/*.npz | head -1)")

cat >"$WORK/bench.yaml" <<YAML
model:
  name: bench_s3
framework: pytorch
workflow:
  generate_data: False
  train: True
dataset:
  data_folder: s3://bench
  format: npz
  num_files_train: $FILES
  num_samples_per_file: 1
  record_length_bytes: $((MIB * 1048576))
reader:
  data_loader: pytorch
  batch_size: 1
  read_threads: $THREADS
train:
  epochs: 2
  computation_time: 0
storage:
  storage_type: s3
  storage_root: bench
  storage_options:
    endpoint_url: $AWS_ENDPOINT_URL
    s3_force_path_style: True
YAML

cat >"$WORK/boto.py" <<'PY'
import os, sys, time
from concurrent.futures import ThreadPoolExecutor
import boto3
from botocore.config import Config
threads = int(sys.argv[1])
s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"],
                  config=Config(s3={"addressing_style": "path"}, max_pool_connections=threads,
                                retries={"max_attempts": 1}))
keys = [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket="bench", Prefix="train/")
        for o in page.get("Contents", [])]
def get(key):
    return len(s3.get_object(Bucket="bench", Key=key)["Body"].read())
t0 = time.perf_counter()
with ThreadPoolExecutor(threads) as pool:
    total = sum(pool.map(get, keys))
print(total / (time.perf_counter() - t0) / 1048576)
PY

echo "S3 reads: $FILES objects of $OBJECT_BYTES bytes, $THREADS requests in flight, $ROUNDS rounds ($AWS_ENDPOINT_URL)"
PP=() BO=()
for r in $(seq 1 "$ROUNDS"); do
  rm -rf "$WORK/out"
  "$PIPEPROF" workload "$WORK/bench.yaml" -q --out "$WORK/out" >/dev/null 2>"$WORK/workload.err" ||
    { cat "$WORK/workload.err" >&2; exit 1; }
  pp=$(python3 -c "import json,sys; m=json.load(open('$WORK/out/summary.json'))['metric']; print(m['train_throughput_mean_samples_per_second'] * $OBJECT_BYTES / 1048576)")
  bo=$(python3 "$WORK/boto.py" "$THREADS")
  printf "round %d: pipeprof %.1f MiB/s, boto3 %.1f MiB/s\n" "$r" "$pp" "$bo"
  PP+=("$pp") BO+=("$bo")
done
python3 - "${PP[*]}" "${BO[*]}" <<'PY'
import statistics, sys
pp = [float(x) for x in sys.argv[1].split()]
bo = [float(x) for x in sys.argv[2].split()]
print(f"median: pipeprof {statistics.median(pp):.1f} MiB/s, boto3 {statistics.median(bo):.1f} MiB/s: "
      f"ratio {statistics.median(pp) / statistics.median(bo):.3f}")
PY
