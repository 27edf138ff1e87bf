#!/usr/bin/env bash
# The sanitizer runs (CI runs `all` after the tests; scripts/setup.sh installs the packages):
#
#   scripts/sanitize.sh tsan   ThreadSanitizer: the pipelines and autotune unit tests
#                              (pipelines_*_test, autotune_unit_test), the trace reader's
#                              (trace_chrome_json_test: parts parsed by worker threads) and the
#                              PyTorch analysis's (trace_torch_analysis_test) in build-tsan/
#   scripts/sanitize.sh asan   AddressSanitizer + LeakSanitizer + UndefinedBehaviorSanitizer: every
#                              test labelled `unit` (target pipeprof_unit_tests) in build-asan/
#   scripts/sanitize.sh all    both (the default)
#
# Each configures with its CMake preset, builds only those test targets and runs their `unit`
# tests with ctest. Any sanitizer report fails its test. Extra arguments go to ctest. Environment:
# PIPEPROF_JOBS (default: the number of cores), PIPEPROF_TEST_SHARDS (default 4; 0 runs each test
# in its own process).
#
# A test binary runs as a few CTest tests here, each a share of its tests in one process
# (GoogleTest's sharding; PIPEPROF_TEST_SHARDS in cmake/PipeprofTargets.cmake), not one process per
# test: an instrumented process takes about a quarter of a second to start, which was three
# quarters of the AddressSanitizer run's time. A failure names its shard
# (<binary>/shard<i>of<N>) and the output names the test; to run one test alone, run the binary
# with --gtest_filter.
#
# Build settings beyond the presets: no CUDA (the sanitizers and the CUDA runtime do not mix, and
# the GPU code is not what these runs check); tsan without the viewer, which it does not test; and
# line tables only (-g1) instead of full debug info, enough for the reports' stacks (inlined frames
# included) and a quarter to a third less compile time. asan links its executables without PIE:
# UndefinedBehaviorSanitizer's data for each check holds pointers, about 1.8 million of them in a
# test executable, which a position-independent executable relocates at every start (50 MB of
# pages written, a third of a second per test process on a 2-core VM); without PIE the linker
# fixes them, and each test process starts in about half the time.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
JOBS=${PIPEPROF_JOBS:-$(nproc)}
SHARDS=${PIPEPROF_TEST_SHARDS:-4}
WHICH=${1:-all}
[ $# -gt 0 ] && shift

say() { printf '\033[1m[sanitize]\033[0m %s\n' "$*"; }
die() { printf '[sanitize] error: %s\n' "$*" >&2; exit 2; }
[[ "$SHARDS" =~ ^[0-9]+$ ]] || die "PIPEPROF_TEST_SHARDS must be a whole number, got '$SHARDS'"

case "$WHICH" in
  tsan) PRESETS=(tsan) ;;
  asan) PRESETS=(asan) ;;
  all) PRESETS=(tsan asan) ;;
  -h|--help) sed -n '2,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) die "unknown run '$WHICH' (expected tsan, asan or all; see --help)" ;;
esac

# halt_on_error: the first report ends the test process, which fails it (the exit code is not 0).
# second_deadlock_stack: both stacks of a lock-order inversion. Leak checks are on for ASan.
# Races inside uninstrumented libraries that their own locks prevent (scripts/tsan.supp says which).
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$ROOT/scripts/tsan.supp ${TSAN_OPTIONS:-}"
export ASAN_OPTIONS="halt_on_error=1 detect_leaks=1 detect_stack_use_after_return=1 check_initialization_order=1 strict_init_order=1 ${ASAN_OPTIONS:-}"
# Leaks inside third-party libraries (scripts/lsan.supp says which and why) are not ours to fix.
export LSAN_OPTIONS="suppressions=$ROOT/scripts/lsan.supp print_suppressions=0 ${LSAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1 ${UBSAN_OPTIONS:-}"

TIMINGS=()
since() { local s=$(( $(date +%s) - $1 )); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

run_preset() {
  local preset=$1 dir=$ROOT/build-$1 start configure=(-DPIPEPROF_TEST_SHARDS="$SHARDS") targets=()
  local runner=()
  shift
  case "$preset" in
    tsan)
      configure+=(-DPIPEPROF_CUDA=OFF -DPIPEPROF_VIEWER=OFF "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
      targets=(pipelines_conformance_test pipelines_ops_test pipelines_unit_test pipelines_mp_test
               pipelines_storage_test pipelines_formats_test autotune_unit_test trace_chrome_json_test
               trace_torch_analysis_test)
      # GCC 12's ThreadSanitizer cannot map its shadow memory with more than 28 bits of mmap
      # randomisation ("unexpected memory mapping"): run without address randomisation there.
      if [ "$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 28)" -gt 28 ]; then
        runner=(setarch "$(uname -m)" -R)
      fi
      ;;
    asan)
      configure+=(-DPIPEPROF_CUDA=OFF "-DCMAKE_CXX_FLAGS_DEBUG=-g1" "-DCMAKE_EXE_LINKER_FLAGS=-no-pie")
      targets=(pipeprof_unit_tests)
      ;;
  esac

  start=$(date +%s)
  say "$preset: configuring ($dir)"
  mkdir -p "$dir"
  (cd "$ROOT" && cmake --preset "$preset" "${configure[@]}") >"$dir/configure.log" 2>&1 \
    || { cat "$dir/configure.log"; die "$preset: cmake configure failed"; }
  grep -E "^-- (pipeprof|CUDA|Viewer)" "$dir/configure.log" || true
  say "$preset: building ${targets[*]} with $JOBS jobs"
  cmake --build "$dir" -j "$JOBS" --target "${targets[@]}"
  TIMINGS+=("$preset configure+build $(since "$start")")

  start=$(date +%s)
  say "$preset: running the tests"
  # Only the binaries built here (pipeprof_unit_tests builds every unit test binary). Without
  # shards (PIPEPROF_TEST_SHARDS=0), the binaries not built are placeholders without a label.
  local only=()
  if [ "$SHARDS" -gt 0 ] && [ "${targets[*]}" != pipeprof_unit_tests ]; then
    only=(-R "^($(IFS='|'; echo "${targets[*]}"))/")
  fi
  "${runner[@]}" ctest --test-dir "$dir" -L unit "${only[@]}" --output-on-failure -j "$JOBS" \
    --no-tests=error "$@"
  TIMINGS+=("$preset tests $(since "$start")")
}

for preset in "${PRESETS[@]}"; do
  run_preset "$preset" "$@"
done
say "passed"
printf '  %s\n' "${TIMINGS[@]}"
