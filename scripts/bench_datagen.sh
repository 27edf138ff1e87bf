#!/usr/bin/env bash
# `pipeprof datagen` write bandwidth against fio's sequential write, in the same folder, with the
# same number of files, file size and threads (fio: each job writes its files one after the other,
# no preallocation, as datagen does), alternating passes (best of REPS for each).
# Both write through the page cache (no O_DIRECT, no fsync), as DLIO's generators do. datagen
# writes 1 MiB chunks; fio uses the same block size.
#
#   scripts/bench_datagen.sh [build dir]      (default: build)
#
# Environment: DATAGEN_DIR (default: a temporary folder under /var/tmp, removed at the end),
# FILES (8), FILE_MB (256), THREADS (2), FORMATS ("raw npy tfrecord npz"), REPS (3).
# The samples are large: one 64 MiB record per 64 MiB of file (FILE_MB a multiple of 64).
set -euo pipefail

BUILD_DIR=${1:-build}
PIPEPROF="$BUILD_DIR/harness/pipeprof"
[ -x "$PIPEPROF" ] || { echo "bench_datagen.sh: $PIPEPROF not found (build pipeprof first)" >&2; exit 2; }
command -v fio >/dev/null || { echo "bench_datagen.sh: fio not found (apt-get install fio)" >&2; exit 2; }

FILES=${FILES:-8} FILE_MB=${FILE_MB:-256} THREADS=${THREADS:-2} REPS=${REPS:-3}
FORMATS=${FORMATS:-raw npy tfrecord npz}
OWN_DIR=0
if [ -z "${DATAGEN_DIR:-}" ]; then
  DATAGEN_DIR=$(mktemp -d "${TMPDIR:-/var/tmp}/pipeprof_datagen_XXXXXX")
  OWN_DIR=1
fi
cleanup() { [ "$OWN_DIR" = 1 ] && rm -rf "$DATAGEN_DIR"; }
trap cleanup EXIT

RECORD=$((64 * 1024 * 1024))
SAMPLES=$((FILE_MB / 64))
[ "$SAMPLES" -ge 1 ] || { echo "bench_datagen.sh: FILE_MB must be at least 64" >&2; exit 2; }

# fio: THREADS jobs sharing FILES files of FILE_MB, written sequentially in 1 MiB blocks.
fio_mbps() {
  local dir="$DATAGEN_DIR/fio"
  mkdir -p "$dir"
  fio --name=w --directory="$dir" --rw=write --bs=1M --ioengine=psync --numjobs="$THREADS" \
    --file_service_type=sequential --fallocate=none \
    --nrfiles=$((FILES / THREADS)) --filesize="${FILE_MB}M" --size=$((FILES / THREADS * FILE_MB))M \
    --group_reporting --output-format=json |
    python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]["write"]; print("%.0f" % (j["io_bytes"] / (j["runtime"] / 1000) / 1e6))'
  settle "$dir"
}

# Removes a pass's files and waits for the disk to go quiet, so that one pass's writeback does not
# slow the next.
settle() {
  rm -rf "$1"
  sync
  sleep 2
}

datagen_mbps() {
  local dir="$DATAGEN_DIR/$1"
  "$PIPEPROF" datagen --data-folder "$dir" --format "$1" --num-files-train "$FILES" \
    --num-samples-per-file "$SAMPLES" --record-length "$RECORD" --threads "$THREADS" |
    sed -E 's/.* ([0-9]+) MB\/s.*/\1/'
  settle "$dir"
}

best() { sort -n | tail -1; }
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

declare -A results
fio_runs=()
for ((r = 0; r < REPS; r++)); do
  fio_runs+=("$(fio_mbps)")
  for f in $FORMATS; do results[$f]+="$(datagen_mbps "$f") "; done
done
fio_best=$(printf '%s\n' "${fio_runs[@]}" | best)
fio_median=$(printf '%s\n' "${fio_runs[@]}" | median)
echo "$FILES files x $FILE_MB MiB, $THREADS threads, 64 MiB records, $REPS passes (MB/s)"
printf '%-22s best %6s  median %6s  (runs: %s)\n' "fio sequential write:" "$fio_best" "$fio_median" "${fio_runs[*]}"
for f in $FORMATS; do
  b=$(printf '%s\n' ${results[$f]} | best)
  m=$(printf '%s\n' ${results[$f]} | median)
  printf '%-22s best %6s  median %6s  (%.2f, %.2f of fio; runs: %s)\n' "datagen $f:" "$b" "$m" \
    "$(echo "$b / $fio_best" | bc -l)" "$(echo "$m / $fio_median" | bc -l)" "${results[$f]% }"
done
