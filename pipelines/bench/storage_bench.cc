// Storage benchmarks (linked into pipeprof-bench):
//
//   BM_Crc32c/<bytes>            CRC-32C throughput (bytes/s)
//   BM_TFRecordPerRecord/bytes:<n>/mapped:<0|1>  the TFRecord reader over a page-cached file
//                                (read calls, or a mapping), CRCs on: time per record
//                                (ns_per_record) and the CRC's share of it (crc_ns_per_record)
//   BM_TFRecordRead              the parallel-read pipeline list_files -> interleave(tfrecord),
//                                bytes/s, on the files scripts/bench_storage.sh shares with fio
//   BM_WaitScope                 one WaitScope entered and left and one note_progress (waits.h):
//                                what every blocking read and write pays for the run's watchdog
//   BM_NpzRead                   the same over numpy .npz archives in DLIO's npz layout (a stored
//                                uint8 member x and an int64 member y): list_files ->
//                                interleave(npz_files), the archives' bytes per second
//   BM_HttpObjectRead/parts:<n>  a 64 MiB object read whole from nginx at 32 MiB/s and 20 ms per
//                                request: one request for it, or parts of 8 MiB, n in flight
//
// BM_TFRecordRead reads the environment: PIPEPROF_STORAGE_DIR (a folder of *.tfrecord files; made
// when empty: PIPEPROF_STORAGE_FILES files of PIPEPROF_STORAGE_FILE_MB MiB, records of
// PIPEPROF_STORAGE_RECORD_KB KiB), PIPEPROF_STORAGE_THREADS (interleave cycle and parallelism),
// PIPEPROF_STORAGE_BS (read buffer bytes), PIPEPROF_STORAGE_COLD=1 (drop every file from the
// page cache before each read), PIPEPROF_STORAGE_DIRECT=1 (O_DIRECT), PIPEPROF_STORAGE_MMAP=0 (read
// calls into buffers instead of a mapping), PIPEPROF_STORAGE_BUFFER (the interleave's
// buffer_output_elements; 0: its default), PIPEPROF_STORAGE_VERIFY_CRC=0 (records' CRCs not
// checked: the CRC's share of the time). BM_NpzRead reads the same
// variables (its files are *.npz; O_DIRECT does not apply: archives are mapped).
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "formats/crc32c.h"
#include "formats/tfrecord.h"
#include "io/byte_stream.h"
#include "io/storage.h"
#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/file_sources.h"
#include "pipeprof/pipelines/remote.h"
#include "pipeprof/testbed/object_server.h"
#include "pipeprof/pipelines/files.h"
#include "pipeprof/pipelines/formats.h"
#include "pipeprof/pipelines/waits.h"
#include "pipeprof/trace/clock.h"

namespace pipeprof::pipelines {
namespace {

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoll(v) : fallback;
}

std::string random_record(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i + 8 <= n; i += 8) {
    const uint64_t v = rng();
    std::memcpy(s.data() + i, &v, 8);
  }
  return s;
}

void BM_Crc32c(benchmark::State& state) {
  const std::string data = random_record(static_cast<size_t>(state.range(0)), 1);
  for (auto _ : state)
    benchmark::DoNotOptimize(formats::crc32c(data));
  state.SetBytesProcessed(state.iterations() * state.range(0));
  state.SetLabel(std::string(formats::crc32c_implementation()));
}
BENCHMARK(BM_Crc32c)->Arg(64)->Arg(4096)->Arg(1 << 20);

void BM_WaitScope(benchmark::State& state) {
  const std::string path = "/data/some/file.npz";
  auto what = [&] { return "reading " + path; };
  for (auto _ : state) {
    WaitScope waiting(what);
    benchmark::ClobberMemory();
    note_progress();
  }
}
BENCHMARK(BM_WaitScope)->ThreadRange(1, 4);

// A temporary file removed at the end of the benchmark.
struct ScratchFile {
  explicit ScratchFile(const std::string& name)
      : path((std::filesystem::temp_directory_path() / name).string()) {}
  ~ScratchFile() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
  std::string path;
};

void BM_TFRecordPerRecord(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  constexpr int kRecords = 100000;
  const ScratchFile file("pipeprof_bench_per_record_" + std::to_string(::getpid()) + ".tfrecord");
  {
    formats::TFRecordWriter w(file.path);
    const std::string r = random_record(bytes, 2);
    for (int i = 0; i < kRecords; ++i)
      w.write(r);
    w.close();
  }
  int64_t records = 0;
  for (auto _ : state) {
    formats::TFRecordReader reader(
        io::open_stream(file.path, io::Compression::kNone, {.map = state.range(1) != 0}));
    while (auto r = reader.next()) {
      benchmark::DoNotOptimize(r->data.get());
      ++records;
    }
  }
  // The CRC's own cost for the same bytes (length field + data), to separate it out.
  const std::string r = random_record(bytes, 3);
  const int64_t start = trace::ticks();
  uint32_t sink = 0;
  for (int i = 0; i < kRecords; ++i) {
    sink ^= formats::crc32c(std::string_view(r.data(), std::min<size_t>(8, r.size())));
    sink ^= formats::crc32c(r);
  }
  benchmark::DoNotOptimize(sink);
  const double crc_ns = static_cast<double>(trace::ticks_to_ns(trace::ticks() - start)) / kRecords;
  state.SetItemsProcessed(records);
  state.SetBytesProcessed(records * static_cast<int64_t>(bytes));
  state.counters["ns_per_record"] = benchmark::Counter(
      static_cast<double>(records), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["crc_ns_per_record"] = crc_ns;
}
BENCHMARK(BM_TFRecordPerRecord)
    ->ArgsProduct({{0, 100, 1000, 100000}, {0, 1}})
    ->ArgNames({"bytes", "mapped"})
    ->Unit(benchmark::kMillisecond);

std::string bench_dir() {
  if (const char* d = std::getenv("PIPEPROF_STORAGE_DIR"); d != nullptr && *d != '\0') return d;
  return (std::filesystem::temp_directory_path() / "pipeprof_storage_bench").string();
}

// Makes the benchmark's files unless the folder already has *.tfrecord files.
std::vector<std::string> ensure_files(const std::string& dir) {
  std::filesystem::create_directories(dir);
  auto files = io::match_files(dir + "/*.tfrecord");
  if (!files.empty()) return files;
  const int64_t n = env_int("PIPEPROF_STORAGE_FILES", 8);
  const int64_t mb = env_int("PIPEPROF_STORAGE_FILE_MB", 64);
  const auto record = static_cast<size_t>(env_int("PIPEPROF_STORAGE_RECORD_KB", 112) * 1024);
  const std::string payload = random_record(record, 4);
  for (int64_t i = 0; i < n; ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "/img_%03lld_of_%03lld.tfrecord", static_cast<long long>(i),
                  static_cast<long long>(n));
    formats::TFRecordWriter w(dir + name);
    for (int64_t written = 0; written < mb * (1 << 20); written += static_cast<int64_t>(record) + 16)
      w.write(payload);
    w.close();
  }
  return io::match_files(dir + "/*.tfrecord");
}

void BM_TFRecordRead(benchmark::State& state) {
  const std::string dir = bench_dir();
  const auto files = ensure_files(dir);
  const int64_t threads = env_int("PIPEPROF_STORAGE_THREADS", 1);
  const bool cold = env_int("PIPEPROF_STORAGE_COLD", 0) != 0;
  FileReadOptions read{.buffer_size = env_int("PIPEPROF_STORAGE_BS", kDefaultReadBufferSize),
                       .direct = env_int("PIPEPROF_STORAGE_DIRECT", 0) != 0,
                       .drop_caches = cold,
                       .mmap = env_int("PIPEPROF_STORAGE_MMAP", 1) != 0};
  const bool verify = env_int("PIPEPROF_STORAGE_VERIFY_CRC", 1) != 0;
  const Dataset ds =
      list_files(dir + "/*.tfrecord", {.shuffle = false})
          .interleave(DatasetFn([read, verify](const Element& f) {
                        return tfrecord({file_name(f)}, {.verify_crc = verify, .read = read});
                      }),
                      {.cycle_length = threads,
                       .parallelism = threads,
                       .buffer_output_elements = env_int("PIPEPROF_STORAGE_BUFFER", 0)});
  int64_t bytes = 0;
  for (auto _ : state) {
    auto it = ds.iterate();
    while (auto e = it->next())
      benchmark::DoNotOptimize(e->at(0).data());
    for (const auto& s : it->model().snapshot())
      bytes += s.bytes_read;
  }
  state.SetBytesProcessed(bytes);
  state.SetLabel(std::to_string(files.size()) + " files, " + std::to_string(threads) +
                 " threads, bs " + std::to_string(read.buffer_size) + (cold ? ", cold" : ", warm") +
                 (read.direct ? ", O_DIRECT" : "") + (read.mmap && !read.direct ? ", mapped" : "") +
                 (verify ? "" : ", CRCs not checked"));
}
BENCHMARK(BM_TFRecordRead)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

// Makes the npz benchmark's files unless the folder already has *.npz files: DLIO's npz layout,
// x uint8 [record, record, samples] and y int64 [samples] of zeros, stored (numpy's savez).
std::vector<std::string> ensure_npz_files(const std::string& dir) {
  std::filesystem::create_directories(dir);
  auto files = io::match_files(dir + "/*.npz");
  if (!files.empty()) return files;
  const int64_t n = env_int("PIPEPROF_STORAGE_FILES", 8);
  const int64_t mb = env_int("PIPEPROF_STORAGE_FILE_MB", 64);
  constexpr int64_t kSide = 224;  // resnet50-like samples of 224 x 224 bytes
  const int64_t samples = std::max<int64_t>(1, mb * (1 << 20) / (kSide * kSide));
  for (int64_t i = 0; i < n; ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "/img_%03lld_of_%03lld.npz", static_cast<long long>(i),
                  static_cast<long long>(n));
    formats::write_npz(dir + name,
                       {{"x", formats::random_tensor(DType::kUInt8, {kSide, kSide, samples},
                                                     static_cast<uint64_t>(i) + 1)},
                        {"y", Tensor(DType::kInt64, {samples})}},
                       /*compressed=*/false);
  }
  return io::match_files(dir + "/*.npz");
}

void BM_NpzRead(benchmark::State& state) {
  const std::string dir = bench_dir();
  const auto files = ensure_npz_files(dir);
  const int64_t threads = env_int("PIPEPROF_STORAGE_THREADS", 1);
  const bool cold = env_int("PIPEPROF_STORAGE_COLD", 0) != 0;
  int64_t archive_bytes = 0;
  for (const auto& f : files)
    archive_bytes += static_cast<int64_t>(std::filesystem::file_size(f));
  const Dataset ds =
      list_files(dir + "/*.npz", {.shuffle = false})
          .interleave(DatasetFn([](const Element& f) { return npz_files({file_name(f)}); }),
                      {.cycle_length = threads, .parallelism = threads});
  int64_t bytes = 0;
  for (auto _ : state) {
    if (cold) {
      state.PauseTiming();
      for (const auto& f : files)
        io::drop_from_page_cache(f);
      state.ResumeTiming();
    }
    auto it = ds.iterate();
    uint64_t sum = 0;
    while (auto e = it->next()) {
      // Touch every page: a zero-copy view of a mapping is paid for as well.
      for (const Tensor& t : *e) {
        const auto* p = reinterpret_cast<const unsigned char*>(t.data());
        for (size_t i = 0; i < t.nbytes(); i += 4096)
          sum += p[i];
      }
    }
    benchmark::DoNotOptimize(sum);
    bytes += archive_bytes;
  }
  state.SetBytesProcessed(bytes);
  state.SetLabel(std::to_string(files.size()) + " files, " + std::to_string(threads) +
                 " threads" + (cold ? ", cold" : ", warm"));
}
BENCHMARK(BM_NpzRead)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

// One 64 MiB object read whole over HTTP from the test bed's nginx, which limits each request to
// 32 MiB/s and answers after 20 ms (a remote store's per-connection rate): one request for the
// rest after the open's first MiB (parts:1), or parts of 8 MiB with that many in flight from the
// one reading thread. Skips where nginx is missing.
void BM_HttpObjectRead(benchmark::State& state) {
  std::string why;
  if (!testbed::ObjectServer::available(true, &why)) {
    state.SkipWithError(why.c_str());
    return;
  }
  static const std::filesystem::path dir = [] {
    const auto d = std::filesystem::temp_directory_path() /
                   ("pipeprof_bench_http_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    std::vector<char> bytes(size_t{64} << 20, 'x');
    std::ofstream(d / "object.bin", std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    });
    return d;
  }();
  testbed::ObjectServer server({.root = dir, .latency = std::chrono::milliseconds(20),
                                .rate_bytes_per_second = int64_t{32} << 20});
  RemoteReadOptions read;
  read.parts_in_flight = static_cast<int>(state.range(0));
  const auto storage = std::make_shared<StorageContext>(read);
  std::vector<std::byte> out(size_t{64} << 20);
  int64_t bytes = 0;
  for (auto _ : state) {
    auto file = io::open_file(server.url() + "object.bin", io::OpenOptions{.storage = storage});
    if (io::read_fully(*file, 0, out) != out.size()) state.SkipWithError("short read");
    bytes += static_cast<int64_t>(out.size());
  }
  state.SetBytesProcessed(bytes);
  state.counters["requests"] = static_cast<double>(storage->counters().requests) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_HttpObjectRead)->ArgName("parts")->Arg(1)->Arg(2)->Arg(4)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

}  // namespace
}  // namespace pipeprof::pipelines
