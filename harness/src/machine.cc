#include "pipeprof/harness/machine.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "pipeprof/pipelines/sleep.h"
#include "pipeprof/trace/clock.h"

namespace pipeprof::harness {
namespace {

void summarize(std::vector<double> v, double& p50, double& p99, double& max) {
  std::sort(v.begin(), v.end());
  p50 = v[v.size() / 2];
  p99 = v[std::min(v.size() - 1, (v.size() * 99) / 100)];
  max = v.back();
}

}  // namespace

SleepOvershoot measure_sleep_overshoot(double sleep_ms, int count) {
  SleepOvershoot o;
  o.sleep_ms = sleep_ms;
  o.count = std::max(1, count);
  const auto ns = static_cast<int64_t>(sleep_ms * 1e6);
  std::vector<double> plain, precise;
  for (int i = 0; i < o.count; ++i) {
    int64_t t0 = trace::now_ns();
    std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
    plain.push_back(static_cast<double>(trace::now_ns() - t0 - ns) / 1e6);
    t0 = trace::now_ns();
    pipelines::precise_sleep_for(ns);
    precise.push_back(static_cast<double>(trace::now_ns() - t0 - ns) / 1e6);
  }
  summarize(plain, o.plain_p50_ms, o.plain_p99_ms, o.plain_max_ms);
  summarize(precise, o.precise_p50_ms, o.precise_p99_ms, o.precise_max_ms);
  return o;
}

nlohmann::json to_json(const SleepOvershoot& o) {
  return {{"sleep_ms", o.sleep_ms},
          {"count", o.count},
          {"plain_p50_ms", o.plain_p50_ms},
          {"plain_p99_ms", o.plain_p99_ms},
          {"plain_max_ms", o.plain_max_ms},
          {"precise_p50_ms", o.precise_p50_ms},
          {"precise_p99_ms", o.precise_p99_ms},
          {"precise_max_ms", o.precise_max_ms}};
}

}  // namespace pipeprof::harness
