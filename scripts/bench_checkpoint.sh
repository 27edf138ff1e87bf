#!/usr/bin/env bash
# Checkpoint writes (with fsync) and cold reads against fio, on the same file sizes, block size and
# number of writers / readers, in one run.
#
#   scripts/bench_checkpoint.sh [build dir]      (default: build)
#
# pipeprof runs a checkpoint-only DLIO workload whose RANKS ranks each write one file of FILE_MB MiB
# per checkpoint (a model of model_size_bytes under ZeRO 3: DLIO's model_states-<rank>.pt), written
# with fsync and then read back cold, once per round; its figure is MLPerf Storage's (every
# rank's bytes over the slowest rank's time), the median over the rounds. fio runs RANKS jobs, each
# writing one file of the same size in blocks of the same size (64 MiB: pipeprof's write and read
# calls) and fsyncing it at the end (end_fsync), then reading it back with its pages dropped first
# (invalidate=1), ROUNDS times.
#
# Environment: CKPT_DIR (default: a temporary folder, removed at the end), RANKS (2), FILE_MB
# (512), ROUNDS (5), DIRECT=1 (O_DIRECT for both: reader.odirect), SETTLE_S (2).
# Rounds alternate pipeprof and fio, each going first in every other round; after files are
# removed, `sync` and SETTLE_S seconds let the file system finish with them (on a file system
# mounted with `discard`, a removal's discards would otherwise slow whichever write comes next),
# and the same settle comes between each tool's write and its read (a read at once after a synced
# write ran at half speed on the development VM's disk, whichever tool made it).
# Prints each round, then the medians and their ratios.
set -euo pipefail

BUILD_DIR=${1:-build}
PIPEPROF="$BUILD_DIR/harness/pipeprof"
[ -x "$PIPEPROF" ] || { echo "bench_checkpoint.sh: $PIPEPROF not found (build it first)" >&2; exit 2; }
command -v fio >/dev/null || { echo "bench_checkpoint.sh: fio not found (apt-get install fio)" >&2; exit 2; }

RANKS=${RANKS:-2} FILE_MB=${FILE_MB:-512} ROUNDS=${ROUNDS:-5} DIRECT=${DIRECT:-0}
BS=$((64 * 1024 * 1024))
OWN_DIR=0
if [ -z "${CKPT_DIR:-}" ]; then
  CKPT_DIR=$(mktemp -d "${TMPDIR:-/var/tmp}/pipeprof_ckpt_XXXXXX")
  OWN_DIR=1
fi
cleanup() { [ "$OWN_DIR" = 1 ] && rm -rf "$CKPT_DIR"; }
SETTLE_S=${SETTLE_S:-2}
settle() { sync; sleep "$SETTLE_S"; }
trap cleanup EXIT

BYTES=$((FILE_MB * 1024 * 1024))
# One file a phase: the checkpoint written (and synced), then, after the settle, read back cold.
for phase in write read; do
cat >"$CKPT_DIR/$phase.yaml" <<EOF
model:
  name: bench_checkpoint
  type: cnn
  model_size_bytes: $BYTES
  parallelism:
    zero_stage: 3
framework: pytorch
workflow:
  train: False
  checkpoint: True
reader:
  odirect: $([ "$DIRECT" = 1 ] && echo True || echo False)
checkpoint:
  checkpoint_folder: $CKPT_DIR/pipeprof
  num_checkpoints_write: $([ "$phase" = write ] && echo 1 || echo 0)
  num_checkpoints_read: $([ "$phase" = read ] && echo 1 || echo 0)
  fsync: True
EOF
done
# One round of pipeprof: one checkpoint written, then read back cold by a second run after the
# settle (as fio's read is a second job); its MLPerf figures (GiB/s).
pipeprof_figure() {
  "$PIPEPROF" workload "$CKPT_DIR/$1.yaml" -n "$RANKS" -q --out "$CKPT_DIR/out-$1" >/dev/null 2>&1
  python3 - "$CKPT_DIR/out-$1/results.json" "$2" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["experiments"][0]["workload"]["checkpoint"]
print(c[sys.argv[2]])
PY
}
pipeprof_round() {
  local w r
  w=$(pipeprof_figure write save_GB_per_second)
  settle
  r=$(pipeprof_figure read load_GB_per_second)
  echo "$w $r"
  rm -rf "$CKPT_DIR/pipeprof"
  settle
}

# fio: RANKS jobs, one file each, the same size and block size; GiB/s of the group.
fio_gibps() {
  local rw=$1 extra=$2 job="$CKPT_DIR/$1.fio"
  {
    echo "[global]"
    echo "rw=$rw"; echo "bs=$BS"; echo "size=$BYTES"; echo "ioengine=psync"; echo "direct=$DIRECT"
    echo "group_reporting=1"; echo "directory=$CKPT_DIR/fio"; echo "$extra"
    local r
    for ((r = 0; r < RANKS; r++)); do
      echo "[rank$r]"; echo "filename=model_states-$r.pt"
    done
  } >"$job"
  fio --output-format=json "$job" | python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]
side = j["write"] if j["write"]["io_bytes"] else j["read"]
print(side["bw_bytes"] / 2**30)'
}
# Rounds alternate between the two (a shared disk's bandwidth moves from minute to minute).
mkdir -p "$CKPT_DIR/fio"
fw=() fr=() pw=() pr=()
fio_round() {
  fw+=("$(fio_gibps write end_fsync=1)")
  settle
  fr+=("$(fio_gibps read invalidate=1)")
  rm -f "$CKPT_DIR"/fio/*
  settle
}
# A write first that neither side counts: the first write into the folder ran at half speed for
# whichever tool came first.
fio_gibps write end_fsync=1 >/dev/null
rm -f "$CKPT_DIR"/fio/*
settle
for ((i = 0; i < ROUNDS; i++)); do
  if ((i % 2 == 1)); then fio_round; fi
  # (Not `read < <(...)`: that returns at the printed line, while the round's removal goes on.)
  out=$(pipeprof_round)
  read -r w r <<<"$out"
  pw+=("$w") pr+=("$r")
  if ((i % 2 == 0)); then fio_round; fi
  printf "round %d: write fio %.3f pipeprof %.3f, read fio %.3f pipeprof %.3f GiB/s\n" $((i + 1)) \
    "${fw[-1]}" "$w" "${fr[-1]}" "$r"
done
# Medians: one round that a neighbour's burst slowed moves a mean by a third on a shared disk.
median() { python3 -c 'import statistics, sys; print(statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }
F_WRITE=$(median "${fw[@]}") F_READ=$(median "${fr[@]}") P_WRITE=$(median "${pw[@]}") P_READ=$(median "${pr[@]}")

printf "checkpoint: %d ranks x %d MiB files, %d rounds, fsync, %s\n" "$RANKS" "$FILE_MB" "$ROUNDS" \
  "$([ "$DIRECT" = 1 ] && echo O_DIRECT || echo buffered)"
printf "%-6s %12s %12s %8s   (medians of the rounds)\n" "" "fio GiB/s" "pipeprof" "ratio"
printf "%-6s %12.3f %12.3f %8.3f\n" write "$F_WRITE" "$P_WRITE" "$(python3 -c "print($P_WRITE/$F_WRITE)")"
printf "%-6s %12.3f %12.3f %8.3f\n" read "$F_READ" "$P_READ" "$(python3 -c "print($P_READ/$F_READ)")"
