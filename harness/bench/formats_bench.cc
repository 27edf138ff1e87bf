// Read bandwidth of the array-file sources: one epoch over files in a temporary folder (under
// $PIPEPROF_BENCH_DIR when set, else the system's temporary folder), the bytes of the arrays per
// second as the counter bytes_per_second. Every 4 KiB page of every array is touched, so a
// zero-copy mapping is paid for as well. The files are written just before and so sit in the page
// cache: this measures the readers (parsing, inflating, copying), not the disk; the storage
// comparison with fio drops the cache first.
//   BM_Read_Npz/<stored 0 | deflated 1>/<MiB per file>
//   BM_Read_Npy/<MiB per file>
//   BM_Read_Hdf5/<MiB per file>
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "pipeprof/pipelines/file_sources.h"
#include "pipeprof/pipelines/formats.h"

namespace pipeprof::pipelines {
namespace {

constexpr int kFiles = 8;

// A folder of its own, removed with its files when it goes.
class BenchDir {
 public:
  BenchDir() {
    const char* base = std::getenv("PIPEPROF_BENCH_DIR");
    std::string pattern = (std::filesystem::path(base != nullptr ? base : std::filesystem::temp_directory_path().c_str()) /
                           "pipeprof_formats_bench_XXXXXX")
                              .string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~BenchDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  BenchDir(const BenchDir&) = delete;
  BenchDir& operator=(const BenchDir&) = delete;
  bool ok() const { return !path_.empty(); }
  std::string file(int i, const char* ext) const {
    std::string name = "f";  // appends: GCC 12 -O3 flags `"..." + std::string&&` (-Wrestrict)
    name += std::to_string(i);
    name += ext;
    return (path_ / name).string();
  }

 private:
  std::filesystem::path path_;
};

// float32 [rows, 1024] arrays of `mib` MiB: random values (deflate saves little on them, as on
// real sample data).
Tensor payload(int64_t mib, uint64_t seed) {
  return formats::random_tensor(DType::kFloat32, {mib * 256, 1024}, seed);
}

void read_epochs(benchmark::State& state, const Dataset& d, int64_t bytes_per_epoch) {
  for (auto _ : state) {
    auto it = d.iterate();
    int64_t bytes = 0;
    uint64_t sum = 0;
    while (auto e = it->next()) {
      for (const Tensor& t : *e) {
        const auto* p = reinterpret_cast<const unsigned char*>(t.data());
        for (size_t i = 0; i < t.nbytes(); i += 4096)
          sum += p[i];
        bytes += static_cast<int64_t>(t.nbytes());
      }
    }
    benchmark::DoNotOptimize(sum);
    if (bytes != bytes_per_epoch) state.SkipWithError("unexpected byte count");
  }
  state.SetBytesProcessed(state.iterations() * bytes_per_epoch);
  state.counters["bytes_per_second"] = benchmark::Counter(
      static_cast<double>(bytes_per_epoch), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["files"] = kFiles;
}

void BM_Read_Npz(benchmark::State& state) {
  const bool deflated = state.range(0) != 0;
  const int64_t mib = state.range(1);
  const BenchDir dir;
  if (!dir.ok()) return state.SkipWithError("cannot create a temporary folder");
  std::vector<std::string> files;
  for (int i = 0; i < kFiles; ++i) {
    files.push_back(dir.file(i, ".npz"));
    formats::write_npz(files.back(), {{"x", payload(mib, static_cast<uint64_t>(i))}}, deflated);
  }
  read_epochs(state, npz_files(files, {"x"}), kFiles * mib * (1 << 20));
}
BENCHMARK(BM_Read_Npz)
    ->ArgsProduct({{0, 1}, {1, 16}})
    ->ArgNames({"deflated", "mib"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_Read_Npy(benchmark::State& state) {
  const int64_t mib = state.range(0);
  const BenchDir dir;
  if (!dir.ok()) return state.SkipWithError("cannot create a temporary folder");
  std::vector<std::string> files;
  for (int i = 0; i < kFiles; ++i) {
    files.push_back(dir.file(i, ".npy"));
    formats::write_npy(files.back(), payload(mib, static_cast<uint64_t>(i)));
  }
  read_epochs(state, npy_files(files), kFiles * mib * (1 << 20));
}
BENCHMARK(BM_Read_Npy)->Arg(1)->Arg(16)->ArgName("mib")->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Read_Hdf5(benchmark::State& state) {
  const int64_t mib = state.range(0);
  const BenchDir dir;
  if (!dir.ok()) return state.SkipWithError("cannot create a temporary folder");
  std::vector<std::string> files;
  for (int i = 0; i < kFiles; ++i) {
    files.push_back(dir.file(i, ".h5"));
    formats::write_hdf5(files.back(), {{"records", payload(mib, static_cast<uint64_t>(i))}});
  }
  read_epochs(state, hdf5_files(files, {"records"}), kFiles * mib * (1 << 20));
}
BENCHMARK(BM_Read_Hdf5)->Arg(1)->Arg(16)->ArgName("mib")->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace pipeprof::pipelines
