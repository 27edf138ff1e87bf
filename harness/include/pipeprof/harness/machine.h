// Facts about this machine that the efficiency figures depend on.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

namespace pipeprof::harness {

// How late sleeps wake up, in ms: a plain sleep (std::this_thread::sleep_for) against the precise
// sleep the simulated latencies use. Measured with `count` sleeps of `sleep_ms` each.
struct SleepOvershoot {
  double sleep_ms = 0;
  int count = 0;
  double plain_p50_ms = 0, plain_p99_ms = 0, plain_max_ms = 0;
  double precise_p50_ms = 0, precise_p99_ms = 0, precise_max_ms = 0;
};
SleepOvershoot measure_sleep_overshoot(double sleep_ms = 10, int count = 20);
// results.json's machine.sleep_overshoot.
nlohmann::json to_json(const SleepOvershoot& o);

}  // namespace pipeprof::harness
