#include "pipeprof/viewer/synthetic_trace.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace pipeprof::viewer {
namespace {

// xorshift64: fast and deterministic on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ULL + 0x2545F4914F6CDD1DULL) {}
  uint64_t next() {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return state_;
  }
  int64_t between(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }

 private:
  uint64_t state_;
};

constexpr std::array<const char*, 5> kKernels = {
    "ampere_sgemm_128x64_tn", "vectorized_elementwise_kernel<add>", "softmax_warp_forward",
    "cutlass_tensorop_s1688gemm_128x128", "reduce_kernel<sum>"};

}  // namespace

trace::Trace make_synthetic_trace(size_t spans, uint64_t seed) {
  trace::Trace t;
  Rng rng(seed);
  constexpr int64_t kPid = 4242;
  constexpr int kWorkers = 4;
  const uint32_t proc = t.process(kPid);
  t.processes[proc].name = "train.py";
  const uint32_t main_lane = t.thread_lane(kPid, kPid);
  t.lanes[main_lane].name = "main";
  std::array<uint32_t, kWorkers> workers{};
  for (int w = 0; w < kWorkers; ++w) {
    workers[static_cast<size_t>(w)] = t.thread_lane(kPid, kPid + 1 + w);
    t.lanes[workers[static_cast<size_t>(w)]].name = "worker " + std::to_string(w);
  }
  const std::array<uint32_t, 2> streams = {t.gpu_lane(0, 0, 7), t.gpu_lane(0, 0, 13)};
  t.processes[t.process(0)].name = "GPU 0";
  t.metadata["format"] = "pipeprof";
  t.metadata["experiment"] = "synthetic";

  const trace::StrId epoch = t.strings.intern("epoch");
  const trace::StrId step = t.strings.intern("step");
  const trace::StrId get_next = t.strings.intern("get_next");
  const trace::StrId train = t.strings.intern("train_step");
  const trace::StrId map = t.strings.intern("map 'parse'");
  const trace::StrId read = t.strings.intern("read");
  const trace::StrId decode = t.strings.intern("decode");
  std::array<trace::StrId, kKernels.size()> kernels{};
  for (size_t k = 0; k < kKernels.size(); ++k)
    kernels[k] = t.strings.intern(kKernels[k]);
  const trace::StrId launch = t.strings.intern("ac2g");

  auto add = [&](uint32_t lane, int64_t start, int64_t dur, trace::StrId name) {
    trace::Span s;
    s.start_ns = start;
    s.dur_ns = dur;
    s.name = name;
    t.lanes[lane].spans.push_back(s);
  };
  const int64_t origin = 1'000'000'000;
  const size_t quota_main = spans / 4 + 1;
  const size_t quota_worker = spans / 8 + 1;
  const size_t quota_gpu = spans / 4 + 1;

  // Main thread: epochs of steps; a step = get_next then train_step, each step launches kernels.
  size_t made = 0;
  int64_t clock = origin;
  std::vector<int64_t> step_starts;
  while (made < quota_main) {
    const int64_t epoch_start = clock;
    const int steps = static_cast<int>(rng.between(50, 200));
    for (int s = 0; s < steps && made < quota_main; ++s) {
      const int64_t wait = rng.between(2'000, 40'000);
      const int64_t work = rng.between(20'000, 60'000);
      add(main_lane, clock + 500, wait, get_next);
      add(main_lane, clock + 1'000 + wait, work, train);
      add(main_lane, clock, wait + work + 1'500, step);
      step_starts.push_back(clock + 1'000 + wait);
      clock += wait + work + 2'000;
      made += 3;
    }
    add(main_lane, epoch_start, clock - epoch_start, epoch);
    clock += 5'000;
    ++made;
  }
  const int64_t end = clock;

  // Workers: map calls with a read and a decode inside, spread over the same time.
  for (const uint32_t lane : workers) {
    int64_t w = origin + rng.between(0, 5'000);
    const auto count = static_cast<int64_t>(quota_worker / 3 + 1);
    const int64_t mean_period = std::max<int64_t>(100, (end - origin) / count);
    for (int64_t i = 0; i < count; ++i) {
      const int64_t r = rng.between(mean_period / 8, mean_period / 3);
      const int64_t d = rng.between(mean_period / 8, mean_period / 3);
      add(lane, w + 100, r, read);
      add(lane, w + 200 + r, d, decode);
      add(lane, w, r + d + 300, map);
      w += r + d + 300 + rng.between(0, mean_period / 4);
    }
  }

  // GPU streams: kernels back to back after each launch; every kernel on stream 7 gets a flow.
  for (size_t g = 0; g < streams.size(); ++g) {
    const auto count = static_cast<int64_t>(quota_gpu / 2 + 1);
    const int64_t period = std::max<int64_t>(50, (end - origin) / count);
    int64_t k = origin + 10'000;
    for (int64_t i = 0; i < count; ++i) {
      const int64_t dur = rng.between(period / 4, period * 3 / 4);
      add(streams[g], k, dur, kernels[static_cast<size_t>(rng.next() % kernels.size())]);
      if (g == 0 && i % 16 == 0) {
        // From the last train_step that started before the kernel: its launch.
        const auto it = std::upper_bound(step_starts.begin(), step_starts.end(), k);
        if (it != step_starts.begin())
          t.flows.push_back(
              {static_cast<uint64_t>(i), launch, launch, main_lane, *(it - 1), streams[g], k});
      }
      k += dur + rng.between(0, period / 2);
    }
  }

  // Prefetch buffer occupancy, one point per 50 us.
  trace::Counter buffer;
  buffer.process = proc;
  buffer.name = "buffer prefetch";
  int64_t level = 2;
  for (int64_t ts = origin; ts <= end; ts += 50'000) {
    level = std::clamp<int64_t>(level + rng.between(-1, 1), 0, 8);
    buffer.points.emplace_back(ts, static_cast<double>(level));
  }
  t.counters.push_back(std::move(buffer));
  t.finalize();
  return t;
}

size_t write_kineto_style_trace(std::ostream& out, size_t target_bytes, uint64_t seed) {
  Rng rng(seed);
  constexpr int64_t kPid = 5151;
  constexpr std::array<int64_t, 4> kStreams = {7, 13, 21, 28};
  out << "{\n\"schemaVersion\": 1,\n\"deviceProperties\": [{\"id\": 0, \"name\": \"Synthetic "
         "GPU\"}],\n\"traceEvents\": [\n";
  size_t written = 200;
  auto line = [&](const char* text, int n) {
    out.write(text, n);
    written += static_cast<size_t>(n);
  };
  char buf[1024];
  int n = std::snprintf(buf, sizeof buf,
                        "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %lld, \"tid\": 0, "
                        "\"args\": {\"name\": \"python3 train.py\"}},\n"
                        "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 0, \"tid\": 0, "
                        "\"args\": {\"name\": \"GPU 0\"}},\n"
                        "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %lld, \"tid\": %lld, "
                        "\"args\": {\"name\": \"python main\"}},\n",
                        static_cast<long long>(kPid), static_cast<long long>(kPid),
                        static_cast<long long>(kPid));
  line(buf, n);
  auto us = [](int64_t ns) {
    return std::to_string(ns / 1000) + "." + std::to_string(1000 + ns % 1000).substr(1);
  };
  size_t spans = 0;
  int64_t cpu = 1'700'000'000'000'000;
  std::array<int64_t, kStreams.size()> stream_free{};
  for (int64_t i = 0; written < target_bytes; ++i) {
    const int64_t op_dur = rng.between(15'000, 45'000);
    const int64_t launch_at = cpu + rng.between(2'000, 8'000);
    const size_t s = static_cast<size_t>(rng.next() % kStreams.size());
    const int64_t k_start = std::max(launch_at + rng.between(5'000, 12'000), stream_free[s]);
    const int64_t k_dur = rng.between(4'000, 90'000);
    stream_free[s] = k_start + k_dur + 500;
    const char* kernel = kKernels[static_cast<size_t>(rng.next() % kKernels.size())];
    const long long corr = 1000 + i;
    n = std::snprintf(
        buf, sizeof buf,
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::linear\", \"pid\": %lld, \"tid\": "
        "%lld, \"ts\": %s, \"dur\": %s, \"args\": {\"External id\": %lld, \"Input Dims\": [[64, "
        "1024], [1024, 1024]]}},\n"
        "{\"ph\": \"X\", \"cat\": \"python_function\", \"name\": \"nn/modules/linear.py(114): "
        "forward\", \"pid\": %lld, \"tid\": %lld, \"ts\": %s, \"dur\": %s, \"args\": {\"Python "
        "id\": %lld}},\n"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": %lld, "
        "\"tid\": %lld, \"ts\": %s, \"dur\": 4.250, \"args\": {\"correlation\": %lld}},\n"
        "{\"ph\": \"s\", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"id\": %lld, \"pid\": %lld, "
        "\"tid\": %lld, \"ts\": %s},\n"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": 0, \"tid\": %lld, \"ts\": "
        "%s, \"dur\": %s, \"args\": {\"device\": 0, \"stream\": %lld, \"correlation\": %lld, "
        "\"grid\": [128, 1, 1], \"block\": [256, 1, 1]}},\n"
        "{\"ph\": \"f\", \"bp\": \"e\", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"id\": %lld, "
        "\"pid\": 0, \"tid\": %lld, \"ts\": %s},\n",
        static_cast<long long>(kPid), static_cast<long long>(kPid), us(cpu).c_str(),
        us(op_dur).c_str(), corr, static_cast<long long>(kPid), static_cast<long long>(kPid),
        us(cpu + 500).c_str(), us(op_dur - 1'000).c_str(), corr, static_cast<long long>(kPid),
        static_cast<long long>(kPid), us(launch_at).c_str(), corr, corr,
        static_cast<long long>(kPid), static_cast<long long>(kPid), us(launch_at).c_str(), kernel,
        static_cast<long long>(kStreams[s]), us(k_start).c_str(), us(k_dur).c_str(),
        static_cast<long long>(kStreams[s]), corr, corr, static_cast<long long>(kStreams[s]),
        us(k_start).c_str());
    line(buf, n);
    spans += 4;
    cpu += op_dur + rng.between(1'000, 6'000);
  }
  // The last event has no trailing comma: close with a final metadata event.
  n = std::snprintf(buf, sizeof buf,
                    "{\"ph\": \"M\", \"name\": \"process_sort_index\", \"pid\": 0, \"tid\": 0, "
                    "\"args\": {\"sort_index\": 1}}\n]\n}\n");
  line(buf, n);
  return spans;
}

size_t write_kineto_style_trace(const std::filesystem::path& path, size_t target_bytes,
                                uint64_t seed) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error(path.string() + ": cannot open for writing");
  const size_t spans = write_kineto_style_trace(out, target_bytes, seed);
  out.flush();
  if (!out) throw std::runtime_error(path.string() + ": write failed");
  return spans;
}

}  // namespace pipeprof::viewer
