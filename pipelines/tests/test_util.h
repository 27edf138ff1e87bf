// Helpers shared by the pipelines tests: reading int64 values out of elements, parsing specs
// written inline, counting this process's threads, and a deadline guard for tests that must not
// hang.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "ops/worker_thread.h"
#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/iterator.h"
#include "pipeprof/pipelines/sleep.h"
#include "pipeprof/pipelines/spec.h"
#include "pipeprof/trace/clock.h"

namespace pipeprof::pipelines::testing {

// The value of a one-value component 0 of each element.
inline std::vector<int64_t> ints(const std::vector<Element>& elements) {
  std::vector<int64_t> out;
  out.reserve(elements.size());
  for (const Element& e : elements)
    out.push_back(e.at(0).as_int64());
  return out;
}

// All int64 values of one tensor, flattened.
inline std::vector<int64_t> values(const Tensor& t) {
  auto v = t.values<int64_t>();
  return {v.begin(), v.end()};
}

// One full epoch of `dataset` as int64 values of component 0.
inline std::vector<int64_t> collect_ints(const Dataset& dataset) {
  return ints(dataset.collect());
}

// Pulls `it` until the end (or `limit` elements) and returns the int64 values of component 0.
inline std::vector<int64_t> drain_ints(Iterator& it, int64_t limit = -1) {
  std::vector<int64_t> out;
  while (limit < 0 || static_cast<int64_t>(out.size()) < limit) {
    auto e = it.next();
    if (!e) break;
    out.push_back(e->at(0).as_int64());
  }
  return out;
}

// A spec document written inline, parsed with source "test.json".
inline Spec spec(std::string_view json) {
  return parse_spec(nlohmann::json::parse(json), "test.json");
}
inline Dataset spec_dataset(std::string_view json) {
  return spec(json).dataset;
}

// The ids of this process's threads that run (entries of /proc/self/task), leaving out a thread
// that is exiting: the kernel sets PF_EXITING (0x4 in /proc/<tid>/stat's ninth field, `flags`)
// when the thread starts to exit, and pthread_join can return, and the joiner run on, while the
// joined thread is still listed. A thread whose entry is gone by the time it is read is gone.
inline std::vector<int64_t> live_thread_ids() {
  constexpr unsigned long kPfExiting = 0x4;
  std::vector<int64_t> ids;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const size_t comm_end = line.rfind(')');  // the name may hold spaces and parentheses
    if (comm_end == std::string::npos) continue;
    std::istringstream fields(line.substr(comm_end + 1));
    std::string state;
    long long ppid = 0, pgrp = 0, session = 0, tty = 0, tpgid = 0;
    unsigned long flags = 0;
    if (!(fields >> state >> ppid >> pgrp >> session >> tty >> tpgid >> flags)) continue;
    if ((flags & kPfExiting) != 0) continue;
    ids.push_back(std::stoll(entry.path().filename().string()));
  }
  return ids;
}

// Number of threads of this process that run (live_thread_ids), parked worker threads let go
// first (ops/worker_thread.h): what is left runs something, so a thread an iterator failed to stop
// is still counted.
inline int thread_count() {
  ops::release_parked_worker_threads();
  return static_cast<int>(live_thread_ids().size());
}

// Waits (up to `limit`) for the thread count to come back to `expected` and returns the last count.
// A thread let go from the cache is still running for a moment after release returns, so an exact
// comparison needs a short grace period; a leaked thread never goes away.
inline int wait_for_thread_count(
    int expected, std::chrono::milliseconds limit = std::chrono::milliseconds(2000)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int n = thread_count();
  while (n != expected && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    n = thread_count();
  }
  return n;
}

// Milliseconds elapsed since `start_ns` on the trace clock.
inline double ms_since(int64_t start_ns) {
  return static_cast<double>(trace::now_ns() - start_ns) / static_cast<double>(trace::kNsPerMs);
}

// Runs `body` on another thread and waits at most `limit`. A body that does not finish means the
// pipeline hangs: the test cannot recover from that (the thread cannot be joined), so it reports
// and aborts the binary instead of waiting for the CTest timeout.
inline void run_with_deadline(std::chrono::milliseconds limit, const std::function<void()>& body,
                              std::string_view what = "the test body") {
  std::packaged_task<void()> task(body);
  auto done = task.get_future();
  std::thread runner(std::move(task));
  if (done.wait_for(limit) != std::future_status::ready) {
    std::fprintf(stderr, "FATAL: %.*s did not finish within %lld ms (the pipeline hangs)\n",
                 static_cast<int>(what.size()), what.data(), static_cast<long long>(limit.count()));
    std::abort();
  }
  runner.join();
  done.get();  // rethrows what the body threw (gtest assertions in it are already recorded)
}

// The model entry of the first stage with operation `op` (nullopt when no such stage ran).
inline std::optional<NodeSnapshot> stage_snapshot(const Model& model, std::string_view op) {
  for (const NodeSnapshot& s : model.snapshot()) {
    if (s.op == op) return s;
  }
  return std::nullopt;
}

// The knob called `name` of the model, or nullptr.
inline Knob* find_knob(const Model& model, std::string_view name) {
  for (Knob* k : model.knobs()) {
    if (k->name() == name) return k;
  }
  return nullptr;
}

// Counts the calls of a map function and how many run at once; each call sleeps `ms` (precisely)
// and returns the input's value doubled.
struct ConcurrencyProbe {
  std::atomic<int> active{0};
  std::atomic<int> max_active{0};
  std::atomic<int> calls{0};

  Function fn(double ms) {
    return Function(
        [this, ms](Element e) {
          const int now = ++active;
          int seen = max_active.load();
          while (now > seen && !max_active.compare_exchange_weak(seen, now)) {
          }
          ++calls;
          precise_sleep_for(static_cast<int64_t>(ms * static_cast<double>(trace::kNsPerMs)));
          --active;
          return scalar_element(e[0].as_int64() * 2);
        },
        "probe");
  }
};

}  // namespace pipeprof::pipelines::testing
