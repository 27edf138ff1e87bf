// The step breakdown, stage usage, bottleneck and suggestion (rules in analysis.h).
#include "pipeprof/trace/analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <unordered_map>

#include "dataloader_analysis.h"
#include "gpu_usage.h"
#include "intervals.h"
#include "torch_steps.h"
#include "pipeprof/trace/clock.h"

namespace pipeprof::trace {
namespace {

constexpr std::string_view kTrainLoop = "train loop";
constexpr double kModeratePct = 5.0;    // TensorBoard: below this, not input-bound
constexpr double kHighPct = 20.0;       // TensorBoard: from this, highly input-bound
constexpr double kSaturatedPct = 50.0;  // a bottleneck busier than this is worth more workers

struct TrainLoop {
  std::vector<const Lane*> lanes;
  Intervals steps;  // merged step spans
  bool any = false;
  int64_t lo = 0, hi = 0;
};

TrainLoop find_train_loop(const Trace& t, StepBreakdown& b) {
  TrainLoop loop;
  Intervals steps;
  for (const Lane& lane : t.lanes) {
    // The runner's "train loop", or a workload's simulated accelerators ("accelerator 3").
    if (lane.kind != LaneKind::kThread ||
        (lane.name != kTrainLoop && !lane.name.starts_with("accelerator ")))
      continue;
    loop.lanes.push_back(&lane);
    for (const Span& s : lane.spans) {
      const std::string_view name = t.name(s);
      const bool step = name == "step";
      const bool wait = name == "get_next";
      if (!step && !wait && name != "epoch") continue;
      if (step) {
        ++b.steps;
        b.step_ns += s.dur_ns;
        steps.emplace_back(s.start_ns, s.end_ns());
      } else if (wait) {
        ++b.waits;
        b.wait_ns += s.dur_ns;
      }
      loop.lo = loop.any ? std::min(loop.lo, s.start_ns) : s.start_ns;
      loop.hi = loop.any ? std::max(loop.hi, s.end_ns()) : s.end_ns();
      loop.any = true;
    }
  }
  loop.steps = merge_intervals(std::move(steps));
  b.present = b.steps + b.waits > 0;
  if (b.present) {
    b.mean_step_ms =
        b.steps > 0 ? static_cast<double>(b.step_ns) / 1e6 / static_cast<double>(b.steps) : 0;
    b.mean_wait_ms =
        b.waits > 0 ? static_cast<double>(b.wait_ns) / 1e6 / static_cast<double>(b.waits) : 0;
    b.input_bound_pct = percent_of(b.wait_ns, b.wait_ns + b.step_ns);
    b.verdict = std::string(input_bound_verdict(b.input_bound_pct));
  }
  return loop;
}

// Busy time per stage: each instant of a lane belongs to the innermost span covering it.
class StageAccounting {
 public:
  StageAccounting(const Trace& t, int64_t lo, int64_t hi, const Intervals& steps)
      : t_(t), lo_(lo), hi_(hi), steps_(steps) {}

  void add_lane(const Lane& lane) {
    struct Open {
      int64_t end;
      int stage;  // -1: not stage work (a wait, a step, another category)
    };
    std::vector<Open> stack;
    std::vector<bool> seen_here(stages_.size(), false);
    std::unordered_map<int, Intervals> raw;  // this lane's work spans per stage
    int64_t cursor = lo_;
    auto attribute = [&](int stage, int64_t a, int64_t b) {
      const int64_t n = clipped_length(a, b, lo_, hi_);
      if (stage < 0 || n <= 0) return;
      stages_[static_cast<size_t>(stage)].busy_ns += n;
      work_ns_ += n;
      work_in_steps_ns_ += overlap_with(steps_, std::max(a, lo_), std::min(b, hi_));
    };
    auto advance = [&](int64_t t) {
      while (!stack.empty() && stack.back().end <= t) {
        if (stack.back().end > cursor) {
          attribute(stack.back().stage, cursor, stack.back().end);
          cursor = stack.back().end;
        }
        stack.pop_back();
      }
      if (!stack.empty() && t > cursor) attribute(stack.back().stage, cursor, t);
      cursor = std::max(cursor, t);
    };
    for (const Span& s : lane.spans) {
      advance(s.start_ns);
      int stage = -1;
      if (t_.category(s) == "pipeline") {
        stage = stage_index(stage_of(t_.name(s)));
        if (seen_here.size() < stages_.size()) seen_here.resize(stages_.size(), false);
        StageUsage& u = stages_[static_cast<size_t>(stage)];
        if (s.end_ns() > lo_ && s.start_ns < hi_) {
          ++u.spans;
          raw[stage].emplace_back(std::max(s.start_ns, lo_), std::min(s.end_ns(), hi_));
          if (!seen_here[static_cast<size_t>(stage)]) {
            seen_here[static_cast<size_t>(stage)] = true;
            ++u.lanes;
          }
        }
      }
      stack.push_back({s.end_ns(), stage});
    }
    advance(std::numeric_limits<int64_t>::max());
    for (auto& [stage, intervals] : raw) {
      if (edges_.size() < stages_.size()) edges_.resize(stages_.size());
      for (const Interval& i : merge_intervals(std::move(intervals))) {
        edges_[static_cast<size_t>(stage)].emplace_back(i.first, 1);
        edges_[static_cast<size_t>(stage)].emplace_back(i.second, -1);
      }
    }
  }

  // The stages, with `peak` = the most of a stage's calls running at once (over all lanes).
  std::vector<StageUsage> take(std::vector<int>& peak) {
    edges_.resize(stages_.size());
    peak.assign(stages_.size(), 0);
    for (size_t i = 0; i < stages_.size(); ++i) {
      std::sort(edges_[i].begin(), edges_[i].end());  // ends (-1) before starts at equal times
      int running = 0;
      for (const auto& [t, delta] : edges_[i]) {
        running += delta;
        peak[i] = std::max(peak[i], running);
      }
    }
    return std::move(stages_);
  }
  int64_t work_ns() const { return work_ns_; }
  int64_t work_in_steps_ns() const { return work_in_steps_ns_; }

 private:
  int stage_index(std::string_view name) {
    const auto it = index_.find(std::string(name));
    if (it != index_.end()) return it->second;
    const int i = static_cast<int>(stages_.size());
    StageUsage u;
    u.stage = std::string(name);
    stages_.push_back(std::move(u));
    index_.emplace(std::string(name), i);
    return i;
  }

  const Trace& t_;
  int64_t lo_, hi_;
  const Intervals& steps_;
  std::vector<StageUsage> stages_;
  std::unordered_map<std::string, int> index_;
  std::vector<std::vector<std::pair<int64_t, int>>> edges_;  // per stage: (time, +1 / -1)
  int64_t work_ns_ = 0;
  int64_t work_in_steps_ns_ = 0;
};

// The last value of "<stage>: parallelism", or 0.
int parallelism_of(const Trace& t, const std::string& stage, bool& found) {
  const std::string name = stage + ": parallelism";
  found = false;
  for (const Counter& c : t.counters) {
    if (c.name != name || c.points.empty()) continue;
    found = true;
    const double v = c.points.back().second;
    return v >= 1 && v < 1e6 ? static_cast<int>(v) : 0;
  }
  return 0;
}

std::string suggest(Analysis& a, bool has_prefetch, int64_t work_ns, int64_t work_in_steps_ns) {
  const StepBreakdown& b = a.steps;
  if (!b.present) return "";
  if (b.input_bound_pct < kModeratePct)
    return fmt::format("not input-bound: the step takes {:.0f}% of the time",
                       100.0 - b.input_bound_pct);
  if (a.stages.empty())
    return fmt::format(
        "input-bound ({:.0f}% of the time waiting for input), but the trace has no pipeline spans "
        "to tell which stage is slow",
        b.input_bound_pct);
  const StageUsage& s = a.stages.front();
  a.bottleneck = s.stage;
  if (!has_prefetch && work_ns > 0 && percent_of(work_in_steps_ns, work_ns) < 1.0)
    return "add prefetch: reads and steps never overlap";
  if (s.busy_pct < kSaturatedPct)
    return fmt::format(
        "input-bound, but no stage is saturated (the busiest, {}, is busy {:.0f}% of the time): "
        "raise the prefetch buffer size, or look for waits outside the pipeline",
        s.stage, s.busy_pct);
  if (s.has_parallelism || s.workers > 1)
    return fmt::format("raise {} parallelism: its {} workers are busy {:.0f}% of the time", s.stage,
                       s.workers, s.busy_pct);
  const std::string how = s.stage.starts_with("map")
                              ? "map with num_parallel_calls"
                              : "interleave with num_parallel_calls, or prefetch";
  return fmt::format("parallelize {}: its one thread is busy {:.0f}% of the time ({})", s.stage,
                     s.busy_pct, how);
}

}  // namespace

std::string_view input_bound_verdict(double pct) {
  return pct < kModeratePct ? "not input-bound"
         : pct < kHighPct   ? "moderately input-bound"
                            : "highly input-bound";
}

std::string_view stage_of(std::string_view name) {
  size_t from = 0;
  const size_t open = name.find('\'');
  if (open != std::string_view::npos) {
    const size_t close = name.rfind('\'');
    if (close > open) from = close;
  }
  const size_t sep = name.find(": ", from);
  return sep == std::string_view::npos ? name : name.substr(0, sep);
}

Analysis analyze(const Trace& t) {
  Analysis a;
  if (const auto it = t.metadata.find("format"); it != t.metadata.end()) a.format = it->second;
  if (const auto it = t.metadata.find("experiment"); it != t.metadata.end())
    a.experiment = it->second;
  a.spans = static_cast<int64_t>(t.span_count());
  if (a.spans == 0) a.notes.emplace_back("the trace has no spans");

  // The PyTorch and GPU analyses read the trace alone: they run beside the rest (a large trace's
  // analysis takes a good part of a second).
  std::future<TorchAnalysis> torch = std::async(std::launch::async, [&t] { return analyze_torch(t); });
  std::future<GpuUsage> gpu = std::async(std::launch::async, [&t] { return analyze_gpu(t); });
  const TrainLoop loop = find_train_loop(t, a.steps);
  if (loop.any) {
    a.window_start_ns = loop.lo;
    a.window_end_ns = loop.hi;
  } else {
    a.window_start_ns = t.start_ns();
    a.window_end_ns = t.end_ns();
  }
  const int64_t window = a.window_end_ns - a.window_start_ns;

  StageAccounting acc(t, a.window_start_ns, a.window_end_ns, loop.steps);
  for (const Lane& lane : t.lanes)
    if (lane.kind == LaneKind::kThread) acc.add_lane(lane);
  std::vector<int> peak;
  a.stages = acc.take(peak);
  bool has_prefetch = false;
  for (size_t i = 0; i < a.stages.size(); ++i) {
    StageUsage& s = a.stages[i];
    const int parallelism = parallelism_of(t, s.stage, s.has_parallelism);
    s.peak_concurrency = peak[i];
    s.workers = std::max({1, peak[i], parallelism});
    s.busy_pct = s.workers > 0 ? percent_of(s.busy_ns, window) / s.workers : 0.0;
    has_prefetch = has_prefetch || s.stage.starts_with("prefetch");
  }
  std::stable_sort(a.stages.begin(), a.stages.end(), [](const StageUsage& x, const StageUsage& y) {
    return x.busy_pct > y.busy_pct;
  });
  a.suggestion = suggest(a, has_prefetch, acc.work_ns(), acc.work_in_steps_ns());

  a.torch = torch.get();
  if (!loop.any && a.spans > 0 && !a.torch.present)
    a.notes.emplace_back(
        "no \"train loop\" thread with step/get_next spans: no step breakdown or input-bound %");
  a.gpu = gpu.get();
  a.loader = analyze_dataloader(t, a.steps, a.window_start_ns, a.window_end_ns);
  a.step_times = a.torch.present ? a.torch.steps : train_loop_steps(t);
  if (a.torch.present && a.torch.iterator.empty())
    a.notes.emplace_back(
        "no DataLoader spans (enumerate(DataLoader)#...__next__ or enumerate(DataPipe)#...) in the "
        "steps: the loop reads its data some other way, so the DataLoader wait is 0");
  return a;
}

}  // namespace pipeprof::trace
