// Reading and writing traces: parse + model building of a ~50 MB PyTorch-profiler (Kineto) style
// trace (target: >= 100 MB/s end to end, i.e. <= 0.5 s for 50 MB), and writing a trace of the
// same size back as Chrome JSON.
//
//   BM_ReadKinetoTrace        parse_chrome_json of the text in memory, args kept
//   BM_LoadTraceFile/stream:S/threads:T  load_chrome_json of the same text in a file, as
//                             `pipeprof analyze` reads it (no args): S=1 a part at a time (the
//                             default 1 MiB parts), parsed by T threads (0: one per core; 1: the
//                             reading thread alone); S=0 the whole file at once
//                             PIPEPROF_TRACE_FILE=<trace> reads that file instead (a large one:
//                             make_kineto_trace.py writes them)
//   BM_AnalyzeTrace           analyze() of the same trace once read (the rest of `pipeprof analyze`)
//   BM_SimdjsonOnDemandRaw    simdjson On-Demand alone over the same text: every event's fields
//                             visited, keys compared, values skipped (what any reader on it pays)
//   BM_SimdjsonStage1         its first stage alone (the structural index)
//   BM_SimdjsonDom            simdjson's DOM parser over the same text, one thread: every value
//                             checked and stored, nothing read from it (the rate of a complete
//                             check of the text, which the trace readers also make)
#include <benchmark/benchmark.h>

#include <cstdint>
#include <simdjson.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "pipeprof/trace/analysis.h"
#include "pipeprof/trace/chrome_json.h"

namespace pipeprof::trace {
namespace {

// A Kineto-like trace of about `target_bytes`: per iteration an operator on the CPU thread, a
// launch (cuda_runtime) inside it, the kernel on one of four streams linked by an ac2g flow, a
// memcpy every eighth iteration, a Python function span, and process/thread metadata.
std::string make_kineto_trace(size_t target_bytes) {
  static constexpr const char* kKernels[] = {
      "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
      "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, "
      "at::detail::Array<char*, 3>)",
      "ampere_sgemm_128x64_tn",
      "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(Params)",
      "void at::native::(anonymous namespace)::softmax_warp_forward<float, float, float, 10, false>"
      "(float*, float const*, int, int, int)"};
  static constexpr int64_t kStreams[] = {7, 13, 21, 28};
  std::string out;
  out.reserve(target_bytes + 4096);
  out +=
      "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H100 "
      "80GB HBM3\", \"totalGlobalMem\": 84929347584, \"computeMajor\": 9, \"computeMinor\": 0}],\n"
      "  \"traceEvents\": [\n";
  out +=
      R"js(  {"name": "process_name", "ph": "M", "ts": 0, "pid": 31337, "tid": 0, "args": {"name": "python3"}},)js"
      "\n";
  out +=
      R"js(  {"name": "process_name", "ph": "M", "ts": 0, "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},)js"
      "\n";
  uint64_t rng = 88172645463325252ULL;
  auto next = [&rng] {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
  };
  int64_t ts_ns = 1'700'000'000'000'000'000;
  char buf[2048];
  auto us = [](int64_t ns) {
    return std::to_string(ns / 1000) + "." + std::to_string(1000 + ns % 1000).substr(1);
  };
  for (int64_t i = 0; out.size() < target_bytes; ++i) {
    const int64_t corr = 100000 + i;
    const int64_t op_start = ts_ns;
    const int64_t op_dur = 20'000 + static_cast<int64_t>(next() % 30'000);
    const int64_t launch = op_start + 3'000;
    const char* kernel = kKernels[next() % 4];
    const int64_t stream = kStreams[next() % 4];
    const int64_t k_start = launch + 8'000 + static_cast<int64_t>(next() % 5'000);
    const int64_t k_dur = 5'000 + static_cast<int64_t>(next() % 80'000);
    int n = std::snprintf(
        buf, sizeof buf,
        "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::linear\", \"pid\": 31337, "
        "\"tid\": "
        "31337, \"ts\": %s, \"dur\": %s, \"args\": {\"External id\": %lld, \"Sequence number\": "
        "%lld, \"Fwd thread id\": 0, \"Record function id\": 0, \"Input Dims\": [[64, 1024], "
        "[4096, 1024], [4096]], \"Input type\": [\"float\", \"float\", \"float\"], \"Ev Idx\": "
        "%lld}},\n"
        "  {\"ph\": \"X\", \"cat\": \"python_function\", \"name\": "
        "\"torch/nn/modules/linear.py(114): "
        "forward\", \"pid\": 31337, \"tid\": 31337, \"ts\": %s, \"dur\": %s, \"args\": {\"Python "
        "parent id\": %lld, \"Python id\": %lld, \"Python thread\": 0}},\n"
        "  {\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": "
        "31337, \"tid\": 31337, \"ts\": %s, \"dur\": 4.512, \"args\": {\"External id\": %lld, "
        "\"cbid\": 211, \"correlation\": %lld}},\n"
        "  {\"ph\": \"s\", \"id\": %lld, \"pid\": 31337, \"tid\": 31337, \"ts\": %s, \"cat\": "
        "\"ac2g\", \"name\": \"ac2g\"},\n"
        "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": 0, \"tid\": %lld, "
        "\"ts\": "
        "%s, \"dur\": %s, \"args\": {\"External id\": %lld, \"queued\": 0, \"device\": 0, "
        "\"context\": 1, \"stream\": %lld, \"correlation\": %lld, \"registers per thread\": 128, "
        "\"shared memory\": 49152, \"blocks per SM\": 1.185185, \"warps per SM\": 4.740741, "
        "\"grid\": [128, 1, 1], \"block\": [128, 1, 1], \"est. achieved occupancy %%\": 6}},\n"
        "  {\"ph\": \"f\", \"id\": %lld, \"pid\": 0, \"tid\": %lld, \"ts\": %s, \"cat\": \"ac2g\", "
        "\"name\": \"ac2g\", \"bp\": \"e\"},\n",
        us(op_start).c_str(), us(op_dur).c_str(), static_cast<long long>(i),
        static_cast<long long>(i), static_cast<long long>(i), us(op_start - 1'000).c_str(),
        us(op_dur + 2'000).c_str(), static_cast<long long>(i), static_cast<long long>(i + 1),
        us(launch).c_str(), static_cast<long long>(i), static_cast<long long>(corr),
        static_cast<long long>(corr), us(launch).c_str(), kernel, static_cast<long long>(stream),
        us(k_start).c_str(), us(k_dur).c_str(), static_cast<long long>(i),
        static_cast<long long>(stream), static_cast<long long>(corr), static_cast<long long>(corr),
        static_cast<long long>(stream), us(k_start).c_str());
    out.append(buf, static_cast<size_t>(n));
    if (i % 8 == 0) {
      n = std::snprintf(
          buf, sizeof buf,
          "  {\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD (Pageable -> "
          "Device)\", \"pid\": 0, \"tid\": 7, \"ts\": %s, \"dur\": 1.024, \"args\": {\"device\": "
          "0, \"context\": 1, \"stream\": 7, \"correlation\": %lld, \"bytes\": 262144, "
          "\"memory bandwidth (GB/s)\": 12.5}},\n",
          us(k_start + k_dur).c_str(), static_cast<long long>(corr + 50'000'000));
      out.append(buf, static_cast<size_t>(n));
    }
    ts_ns += op_dur + 1'000;
  }
  out +=
      R"js(  {"name": "thread_name", "ph": "M", "ts": 0, "pid": 31337, "tid": 31337, "args": {"name": "thread 31337 (python3)"}})js"
      "\n  ],\n  \"traceName\": \"bench.pt.trace.json\"\n}\n";
  return out;
}

const std::string& kineto_trace() {
  static const std::string text = make_kineto_trace(50u << 20);
  return text;
}

void BM_ReadKinetoTrace(benchmark::State& state) {
  const std::string& text = kineto_trace();
  size_t spans = 0;
  for (auto _ : state) {
    const Trace t = parse_chrome_json(text, "bench.json");
    spans = t.span_count();
    benchmark::DoNotOptimize(spans);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["MB"] = static_cast<double>(text.size()) / 1e6;
  state.counters["spans"] = static_cast<double>(spans);
}
BENCHMARK(BM_ReadKinetoTrace)->Unit(benchmark::kMillisecond)->UseRealTime();

// The trace in a file, once, removed at exit.
const std::filesystem::path& kineto_file() {
  struct File {
    std::filesystem::path path;
    File() {
      path = std::filesystem::temp_directory_path() / ("pipeprof_bench_" + std::to_string(::getpid()) + ".json");
      std::ofstream(path, std::ios::binary) << kineto_trace();
    }
    ~File() {
      std::error_code ec;
      std::filesystem::remove(path, ec);
    }
  };
  static const File file;
  return file.path;
}

void BM_LoadTraceFile(benchmark::State& state) {
  const char* given = std::getenv("PIPEPROF_TRACE_FILE");
  const std::filesystem::path path = given != nullptr && *given != '\0' ? std::filesystem::path(given) : kineto_file();
  const auto bytes = static_cast<int64_t>(std::filesystem::file_size(path));
  ReadOptions options;
  options.keep_args = false;
  options.stream = state.range(0) != 0;
  options.threads = static_cast<size_t>(state.range(1));
  size_t spans = 0;
  for (auto _ : state) {
    const Trace t = load_chrome_json(path, options);
    spans = t.span_count();
    benchmark::DoNotOptimize(spans);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * bytes);
  state.counters["spans"] = static_cast<double>(spans);
}
BENCHMARK(BM_LoadTraceFile)
    ->ArgNames({"stream", "threads"})
    ->Args({0, 1})
    ->Args({1, 1})
    ->Args({1, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The analysis of the loaded trace (what `pipeprof analyze` does after reading it), reported
// against the file's bytes so that it adds up with BM_LoadTraceFile.
void BM_AnalyzeTrace(benchmark::State& state) {
  const char* given = std::getenv("PIPEPROF_TRACE_FILE");
  const std::filesystem::path path = given != nullptr && *given != '\0' ? std::filesystem::path(given) : kineto_file();
  const auto bytes = static_cast<int64_t>(std::filesystem::file_size(path));
  const Trace t = load_chrome_json(path, ReadOptions{.keep_args = false});
  for (auto _ : state) {
    const Analysis a = analyze(t);
    benchmark::DoNotOptimize(a.spans);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * bytes);
  state.counters["spans"] = static_cast<double>(t.span_count());
}
BENCHMARK(BM_AnalyzeTrace)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SimdjsonOnDemandRaw(benchmark::State& state) {
  const simdjson::padded_string text(kineto_trace());
  simdjson::ondemand::parser parser;
  size_t events = 0;
  for (auto _ : state) {
    events = 0;
    size_t phases = 0;
    simdjson::ondemand::document doc = parser.iterate(text);
    for (auto field : doc.get_object()) {
      if (field.unescaped_key().value() != "traceEvents") continue;
      for (auto event : field.value().get_array()) {
        for (auto f : event.get_object()) {
          if (f.key().value() == "ph") ++phases;
        }
        ++events;
      }
    }
    benchmark::DoNotOptimize(phases);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kineto_trace().size()));
  state.counters["events"] = static_cast<double>(events);
}
BENCHMARK(BM_SimdjsonOnDemandRaw)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SimdjsonStage1(benchmark::State& state) {
  const simdjson::padded_string text(kineto_trace());
  simdjson::ondemand::parser parser;
  for (auto _ : state) {
    simdjson::ondemand::document doc = parser.iterate(text);
    benchmark::DoNotOptimize(doc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kineto_trace().size()));
}
BENCHMARK(BM_SimdjsonStage1)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SimdjsonDom(benchmark::State& state) {
  const simdjson::padded_string text(kineto_trace());
  simdjson::dom::parser parser;
  // Its buffers touched once before the timing (first-touch page faults of a fresh tape cost
  // more than the parse on some virtual machines): the parse's own rate.
  if (parser.parse(text).error() != simdjson::SUCCESS) {
    state.SkipWithError("simdjson's DOM parser refused the trace");
    return;
  }
  for (auto _ : state) {
    simdjson::dom::element doc;
    if (parser.parse(text).get(doc) != simdjson::SUCCESS) {
      state.SkipWithError("simdjson's DOM parser refused the trace");
      break;
    }
    benchmark::DoNotOptimize(doc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kineto_trace().size()));
}
BENCHMARK(BM_SimdjsonDom)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_WriteChromeJson(benchmark::State& state) {
  static const Trace trace = parse_chrome_json(kineto_trace(), "bench.json");
  size_t bytes = 0;
  for (auto _ : state) {
    std::ostringstream out;
    write_chrome_json(trace, out);
    bytes = out.view().size();
    benchmark::DoNotOptimize(bytes);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["MB"] = static_cast<double>(bytes) / 1e6;
}
BENCHMARK(BM_WriteChromeJson)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace pipeprof::trace
