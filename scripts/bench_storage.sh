#!/usr/bin/env bash
# TFRecord and npz read bandwidth against fio, on the same files, block size and threads, in one
# run, warm (page-cached) and cold (files dropped from the page cache before each pass: sync_file_range +
# posix_fadvise DONTNEED, no root needed; fio's --invalidate=1 does the same).
#
#   scripts/bench_storage.sh [build dir]      (default: build)
#
# Environment: STORAGE_DIR (default: a temporary folder, removed at the end), FILES (8), FILE_MB
# (64), THREADS (2), BS (262144), RECORD_KB (112: resnet50-like samples), DIRECT=1 (O_DIRECT,
# TFRecord only), MMAP=0 (TFRecord through read calls rather than a mapping), BUFFER (32: the
# interleave's buffer_output_elements), FORMATS ("tfrecord npz"), ROUNDS (3).
# Prints fio's and pipeprof's MB/s and their ratio for each format and case.
set -euo pipefail

BUILD_DIR=${1:-build}
BENCH="$BUILD_DIR/harness/pipeprof-bench"
[ -x "$BENCH" ] || { echo "bench_storage.sh: $BENCH not found (build pipeprof-bench first)" >&2; exit 2; }
command -v fio >/dev/null || { echo "bench_storage.sh: fio not found (apt-get install fio)" >&2; exit 2; }

FILES=${FILES:-8} FILE_MB=${FILE_MB:-64} THREADS=${THREADS:-2} BS=${BS:-262144}
RECORD_KB=${RECORD_KB:-112} DIRECT=${DIRECT:-0} MMAP=${MMAP:-1} BUFFER=${BUFFER:-32}
OWN_DIR=0
if [ -z "${STORAGE_DIR:-}" ]; then
  STORAGE_DIR=$(mktemp -d "${TMPDIR:-/var/tmp}/pipeprof_storage_XXXXXX")
  OWN_DIR=1
fi
cleanup() { [ "$OWN_DIR" = 1 ] && rm -rf "$STORAGE_DIR"; }
trap cleanup EXIT

export PIPEPROF_STORAGE_DIR="$STORAGE_DIR" PIPEPROF_STORAGE_FILES="$FILES"
export PIPEPROF_STORAGE_FILE_MB="$FILE_MB" PIPEPROF_STORAGE_THREADS="$THREADS"
export PIPEPROF_STORAGE_BS="$BS" PIPEPROF_STORAGE_RECORD_KB="$RECORD_KB"
export PIPEPROF_STORAGE_DIRECT="$DIRECT" PIPEPROF_STORAGE_MMAP="$MMAP" PIPEPROF_STORAGE_BUFFER="$BUFFER"

# pipeprof's MB/s (1e6 bytes/s) from Google Benchmark's JSON.
pipeprof_mbps() {
  PIPEPROF_STORAGE_COLD=$1 "$BENCH" --benchmark_filter="^$BM/" \
    --benchmark_format=json 2>/dev/null |
    python3 -c 'import json,sys; b=json.load(sys.stdin)["benchmarks"][0]; print("%.1f" % (b["bytes_per_second"] / 1e6))'
}

# fio: one job per thread, each reading its share of the files (file i goes to job i mod THREADS)
# sequentially with the same block size, as the interleave's workers do.
fio_mbps() {
  local invalidate=$1 job="$STORAGE_DIR/read.fio"
  {
    echo "[global]"
    echo "rw=read"; echo "bs=$BS"; echo "ioengine=psync"; echo "invalidate=$invalidate"
    echo "direct=$DIRECT"; echo "group_reporting=1"; echo "file_service_type=sequential"
    local t
    for ((t = 0; t < THREADS; t++)); do
      local names=() i=0 f
      for f in "$STORAGE_DIR"/*."$EXT"; do
        [ $((i % THREADS)) -eq "$t" ] && names+=("${f//:/\\:}")
        i=$((i + 1))
      done
      [ ${#names[@]} -eq 0 ] && continue
      echo "[reader$t]"
      echo "filename=$(IFS=:; echo "${names[*]}")"
    done
  } >"$job"
  fio --readonly --output-format=json "$job" |
    python3 -c 'import json,sys; j=json.load(sys.stdin); print("%.1f" % (j["jobs"][0]["read"]["bw_bytes"] / 1e6))'
}

FORMATS=${FORMATS:-tfrecord npz}
ROUNDS=${ROUNDS:-3}
best() { python3 -c "import sys; print(max(float(x) for x in sys.argv[1:]))" "$@"; }
printf '%-9s %-6s %12s %14s %8s\n' format case fio_MB/s pipeprof_MB/s ratio
for EXT in $FORMATS; do
  case $EXT in
    tfrecord) BM=BM_TFRecordRead ;;
    npz) BM=BM_NpzRead ;;
    *) echo "bench_storage.sh: unknown format '$EXT' (tfrecord or npz)" >&2; exit 2 ;;
  esac
  # Make the files (the benchmark writes them when the folder has none), then read them once from
  # storage through pipeprof: the page cache then holds them as pipeprof's reader leaves them (in
  # 2 MiB folios where its huge-page hint is honoured), as for a dataset read in an earlier epoch,
  # rather than as the writer left them. Mapped reads run up to 1.6 times faster on the former;
  # fio's copies hardly notice (docs/storage.md).
  PIPEPROF_STORAGE_COLD=1 "$BENCH" --benchmark_filter="^$BM/" --benchmark_min_time=0.01 >/dev/null 2>&1
  echo "# $EXT: $(ls "$STORAGE_DIR"/*."$EXT" | wc -l) x ${FILE_MB} MiB in $STORAGE_DIR; threads $THREADS, bs $BS, direct $DIRECT" >&2
  # Each side runs ROUNDS times, alternating, and keeps its best pass: on a shared machine the
  # other processes' load then weighs on both alike.
  for mode in warm cold; do
    cold=0; [ $mode = cold ] && cold=1
    fs=() ps=()
    for ((r = 0; r < ROUNDS; r++)); do
      fs+=("$(fio_mbps $cold)")
      ps+=("$(pipeprof_mbps $cold)")
    done
    f=$(best "${fs[@]}") p=$(best "${ps[@]}")
    printf '%-9s %-6s %12s %14s %8s\n' "$EXT" $mode "$f" "$p" "$(python3 -c "print('%.2f' % ($p / $f))")"
  done
done
