#include "pipeprof/harness/metrics.h"
#include "pipeprof/trace/clock.h"

#include <algorithm>
#include <cmath>

namespace pipeprof::harness {
namespace {

// The q-quantile of sorted values (nearest rank).
int64_t quantile(const std::vector<int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
}

}  // namespace

WaitStats wait_stats(std::vector<int64_t> waits_ns) {
  WaitStats w;
  if (waits_ns.empty()) return w;
  std::sort(waits_ns.begin(), waits_ns.end());
  double sum = 0;
  for (int64_t v : waits_ns)
    sum += static_cast<double>(v);
  w.mean_ms = sum / static_cast<double>(waits_ns.size()) / 1e6;
  w.p50_ms = trace::ns_to_ms(quantile(waits_ns, 0.50));
  w.p99_ms = trace::ns_to_ms(quantile(waits_ns, 0.99));
  w.max_ms = trace::ns_to_ms(waits_ns.back());
  return w;
}

EpochMetrics epoch_metrics(const EpochRecord& epoch, const AuWindow& window, int64_t batch_size) {
  EpochMetrics m;
  const auto& st = epoch.steps;
  const int64_t n = static_cast<int64_t>(st.size());
  const int64_t s = window.exclude_start;
  const int64_t e = (window.steps > 0 ? window.steps : n) - 1 - window.exclude_end;
  // Python's slices, as DLIO takes them: indices clamp to the list.
  double compute = 0, excluded_proc = 0;
  for (int64_t i = 0; i < n; ++i) {
    // A pause after a step (a checkpoint) is in no step: DLIO ends its block before it.
    excluded_proc += trace::ns_to_seconds(st[static_cast<size_t>(i)].pause_ns);
    if (i >= s && i <= e) {
      compute += trace::ns_to_seconds(st[static_cast<size_t>(i)].compute_ns);
    } else {
      excluded_proc += trace::ns_to_seconds(st[static_cast<size_t>(i)].proc_ns);
    }
  }
  const double total = trace::ns_to_seconds(epoch.end_ns - epoch.start_ns) - excluded_proc;
  if (n < 2 || total <= 0) return m;
  m.au = compute == 0 ? 0 : compute / total;
  m.throughput = static_cast<double>(n - 2) / total * static_cast<double>(batch_size);
  m.measured = true;
  return m;
}

LoopFigures loop_figures(const std::vector<ConsumerRecord>& consumers,
                         std::optional<size_t> epoch_index) {
  LoopFigures f;
  std::vector<int64_t> waits, steady;
  int64_t compute = 0, barrier = 0, slowest_wall = -1, slowest_compute = 0;
  for (const ConsumerRecord& c : consumers) {
    int64_t steps = 0, wall = 0, busy = 0;
    for (size_t k = 0; k < c.epochs.size(); ++k) {
      if (epoch_index && k != *epoch_index) continue;
      const EpochRecord& e = c.epochs[k];
      f.complete = f.complete && e.complete;
      wall += e.end_ns - e.start_ns;
      for (size_t i = 0; i < e.steps.size(); ++i) {
        const StepRecord& s = e.steps[i];
        wall -= s.pause_ns;  // a checkpoint between steps is no step's time
        waits.push_back(s.load_ns);
        if (i > 0) steady.push_back(s.load_ns);
        compute += s.compute_ns;
        busy += s.compute_ns;
        barrier += s.barrier_ns;
        f.samples += s.samples;
      }
      steps += static_cast<int64_t>(e.steps.size());
    }
    f.steps = std::max(f.steps, steps);
    if (wall > slowest_wall) {
      slowest_wall = wall;
      slowest_compute = busy;
    }
  }
  if (slowest_wall > 0) {
    f.wall_ms = trace::ns_to_ms(slowest_wall);
    f.au_percentage = 100.0 * static_cast<double>(slowest_compute) / static_cast<double>(slowest_wall);
  }
  const double n = static_cast<double>(waits.size());
  if (!waits.empty()) {
    f.step_mean_ms = trace::ns_to_ms(compute) / n;
    f.barrier_mean_ms = trace::ns_to_ms(barrier) / n;
  }
  f.wait = wait_stats(std::move(waits));
  f.steady_wait_mean_ms = wait_stats(std::move(steady)).mean_ms;
  return f;
}

}  // namespace pipeprof::harness
