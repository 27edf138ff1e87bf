#!/usr/bin/env bash
# pipeprof set-up: installs the Debian packages the build needs (only the missing ones, after one
# apt-get update), configures and builds with the default preset, then runs the requested job.
#
#   scripts/setup.sh suite [pipeprof suite options]   build pipeprof and the viewer, then run the suite
#   scripts/setup.sh test                             build, then run every test (ctest)
#   scripts/setup.sh build                            build everything (tests and benchmarks too)
#
# Idempotent, and works from any current folder. Environment: PIPEPROF_BUILD_DIR (default
# <repo>/build), PIPEPROF_JOBS (default: the number of cores).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${PIPEPROF_BUILD_DIR:-$ROOT/build}
JOBS=${PIPEPROF_JOBS:-$(nproc)}
JOB=${1:-build}
[ $# -gt 0 ] && shift

say() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }
die() { printf '[setup] error: %s\n' "$*" >&2; exit 2; }

case "$JOB" in
  suite|test|build) ;;
  -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) die "unknown job '$JOB' (expected suite, test or build; see --help)" ;;
esac

# The build's Debian packages. xvfb and xauth run the viewer's window tests headless.
PACKAGES=(
  g++ cmake ninja-build pkg-config git ca-certificates
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev libsimdjson-dev
  # DLIO workload files (YAML)
  libyaml-cpp-dev
  libimgui-dev libglfw3-dev libgl-dev xvfb xauth
  # Storage: zlib (gzip, npz), ISA-L (CRC-32C), libzip, libhdf5, libturbojpeg; fio for the storage
  # benchmark; numpy, h5py and PIL check the formats in the tests
  zlib1g-dev libisal-dev fio libzip-dev libhdf5-dev libturbojpeg0-dev
  # PNG images (stb_image_write writes them, libpng reads them)
  libstb-dev libpng-dev
  # Compressed traces (gzip through zlib, zstd)
  libzstd-dev
  python3-numpy python3-h5py python3-pil
  # Remote object storage: libcurl for HTTP reads; nginx (with its echo module for a time to first
  # byte) as the object server of the remote experiments and tests
  libcurl4-openssl-dev nginx-light libnginx-mod-http-echo
  # S3 object storage: expat for S3's XML replies; OpenStack Swift with its S3 API (s3api, which
  # checks Signature Version 4) and memcached, its token cache, as the S3 server of the tests
  libexpat1-dev python3-swift swift swift-proxy swift-object swift-container swift-account memcached
  # boto3, the reference S3 client of the S3 benchmark (scripts/bench_s3.sh)
  python3-boto3
  # The PyTorch peer (harness/peers/pytorch_dataloader.py): PyTorch's DataLoader on the same
  # workloads, in the suite's storage section and its test
  python3-torch python3-yaml
  # The Python module (python/, docs/python.md): pybind11 over Python 3's headers; its tests run
  # real DataLoaders under pytest
  python3-dev pybind11-dev python3-pytest
  # Ranks: Open MPI (mpirun and its library) for scale-out runs and the `mpi` tests
  libopenmpi-dev openmpi-bin
  # ip: the mpi test that runs two ranks in two network namespaces joined by a veth pair
  iproute2
  # vmtouch holds a dataset in the page cache while the prediction benchmark's searches run there
  # (scripts/bench_predict.sh)
  vmtouch
)

install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    say "all ${#PACKAGES[@]} packages present"
    return
  fi
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || die "missing packages (${missing[*]}) and not root: run as root or install them"
    sudo=(sudo)
  fi
  say "installing: ${missing[*]}"
  "${sudo[@]}" apt-get update -qq
  # No service is started by the packages' scripts (nginx-light would start a system nginx on port
  # 80): pipeprof starts its own servers on free loopback ports when it needs them. Debian's way is
  # a policy-rc.d that says no, for the time of the install (one that is already there is kept).
  local policy=/usr/sbin/policy-rc.d placed=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null && "${sudo[@]}" chmod 755 "$policy" && placed=1
  fi
  local rc=0
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" || rc=$?
  [ "$placed" = 1 ] && "${sudo[@]}" rm -f "$policy"
  [ "$rc" = 0 ] || die "apt-get install failed for: ${missing[*]}"
}

build() {
  say "configuring ($BUILD_DIR)"
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$BUILD_DIR/configure.log" 2>&1 \
    || { cat "$BUILD_DIR/configure.log"; die "cmake configure failed"; }
  grep -E "^-- (pipeprof|CUDA|Viewer)" "$BUILD_DIR/configure.log" || true
  # The suite needs only the command line and the viewer; the tests and benchmarks (most of the
  # targets) are built for the test and build jobs.
  local targets=()
  if [ "$JOB" = suite ]; then
    targets=(--target pipeprof)
    grep -qE "^-- Viewer \(.*\): ON" "$BUILD_DIR/configure.log" && targets+=(pipeprof-viewer)
  fi
  say "building ${targets[*]:-everything} with $JOBS jobs"
  cmake --build "$BUILD_DIR" -j "$JOBS" "${targets[@]}"
}

install_packages
mkdir -p "$BUILD_DIR"
build

case "$JOB" in
  build) say "built: $BUILD_DIR/harness/pipeprof" ;;
  test)
    say "running the tests"
    ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" --no-tests=error "$@"
    ;;
  suite)
    say "running the suite"
    "$BUILD_DIR/harness/pipeprof" suite "$@"
    ;;
esac
