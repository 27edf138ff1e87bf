// Per-step analysis: PyTorch ProfilerStep#N steps with the TensorBoard plugin's step-time
// breakdown, the raw DataLoader wait, the GPU idle split and suggestions in PyTorch's terms; and
// the train loop steps of pipeprof traces (rules in analysis.h).
#include "torch_steps.h"

#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <system_error>
#include <limits>
#include <string_view>

#include "gpu_usage.h"
#include "intervals.h"
#include "pipeprof/trace/clock.h"

namespace pipeprof::trace {
namespace {

constexpr std::string_view kProfilerStep = "ProfilerStep#";
constexpr std::string_view kDataLoader = "enumerate(DataLoader)#";
constexpr std::string_view kDataPipe = "enumerate(DataPipe)#";
constexpr std::string_view kOptimizerStep = "Optimizer.step#";
// HolisticTraceAnalysis' default consecutive_kernel_delay: a gap up to this between two GPU
// activities on a stream is the cost of starting the next one ("kernel wait").
constexpr int64_t kConsecutiveKernelDelayNs = 30;
// A step whose DataLoader wait exceeds this many times the median wait (and kBurstMinMs) is a
// burst: on the first step, a loader starting its workers (as a non-persistent multi-process
// DataLoader does every epoch), later on, too few batches in flight.
constexpr double kBurstFactor = 5.0;
constexpr double kBurstMinMs = 10.0;
// From this many GPU spans on, analyze_torch gathers the GPU's lists on a thread of their own.
constexpr size_t kGpuSpansForAThread = 64 * 1024;

constexpr size_t idx(StepCategory c) {
  return static_cast<size_t>(c);
}

// A span's kind worked out once per name and category: a trace has a few thousand names and
// millions of spans, and the rules compare and search the names' text (kernel names run to
// hundreds of characters).
class KindMemo {
 public:
  template <typename Classify>
  uint8_t of(const Span& s, Classify classify) {
    if (s.name < slots_.size()) {
      const Slot& slot = slots_[s.name];
      if (slot.known && slot.category == s.category) return slot.kind;
    }
    const uint8_t kind = classify();
    if (s.name != kNoStr) {
      if (s.name >= slots_.size()) slots_.resize(size_t{s.name} + 1);
      slots_[s.name] = Slot{s.category, kind, true};
    }
    return kind;
  }

 private:
  struct Slot {
    StrId category = kNoStr;
    uint8_t kind = 0;
    bool known = false;
  };
  std::vector<Slot> slots_;
};

// What a GPU span counts as, and what a host span is, for the breakdown (KindMemo's kinds).
enum GpuKind : uint8_t { kGpuNone, kGpuKernel, kGpuNccl, kGpuMemcpy, kGpuPageableHtoD, kGpuMemset };
enum HostKind : uint8_t {
  kHostOther,
  kHostStep,
  kHostDataLoader,
  kHostDataPipe,
  kHostRuntime,
  kHostSyncRuntime,
  kHostCpuExec,
  kHostOptimizer
};

bool is_dataloader(std::string_view name) {
  return (name.starts_with(kDataLoader) && name.ends_with("__next__")) ||
         name.starts_with(kDataPipe);
}

bool is_runtime(std::string_view name, std::string_view cat) {
  if (cat == "cuda_runtime" || cat == "cuda_driver") return true;
  if (!cat.empty()) return false;
  // The legacy (non-Kineto) profiler writes no categories; its runtime and driver calls keep
  // CUDA's names: cudaLaunchKernel, cuLaunchKernel.
  auto api = [name](std::string_view prefix) {
    return name.size() > prefix.size() && name.starts_with(prefix) &&
           name[prefix.size()] >= 'A' && name[prefix.size()] <= 'Z';
  };
  return api("cuda") || api("cu");
}

// Operators and annotations that count as CPU Exec. Python function spans nest around everything
// (the whole script), and a ProfilerStep# span is the step itself, so neither is an operator.
bool is_cpu_exec(std::string_view name, std::string_view cat) {
  if (name.starts_with(kProfilerStep)) return false;
  return cat.empty() || cat == "cpu_op" || cat == "user_annotation" || cat == "Operator" ||
         cat == "cpu_instant_event";
}

// The part of a merged interval list inside [lo, hi).
Intervals clip(const Intervals& merged, int64_t lo, int64_t hi) {
  Intervals out;
  auto it = std::lower_bound(merged.begin(), merged.end(), lo,
                             [](const Interval& i, int64_t t) { return i.second <= t; });
  for (; it != merged.end() && it->first < hi; ++it)
    out.emplace_back(std::max(lo, it->first), std::min(hi, it->second));
  return out;
}

std::string iterator_of(std::string_view name) {
  if (name.starts_with(kDataPipe)) return "DataPipe";
  name.remove_prefix(kDataLoader.size());
  const size_t dot = name.find('.');
  return std::string(name.substr(0, dot));
}

double median(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? static_cast<double>(v[n / 2])
                    : (static_cast<double>(v[n / 2 - 1]) + static_cast<double>(v[n / 2])) / 2.0;
}

void suggest(TorchAnalysis& a, int64_t sync_copy_ns) {
  const double n = static_cast<double>(a.steps.size());
  const bool input_bound = a.input_bound_pct >= 5.0;
  const bool multi = a.iterator.find("MultiProcessing") != std::string::npos;
  const bool single = a.iterator.find("SingleProcess") != std::string::npos;
  auto add = [&a](std::string knob, std::string text) {
    a.suggestions.push_back({std::move(knob), std::move(text)});
  };
  std::vector<int64_t> waits;
  size_t worst = 0;
  for (size_t i = 0; i < a.steps.size(); ++i) {
    waits.push_back(a.steps[i].dataloader_ns);
    if (a.steps[i].dataloader_ns > a.steps[worst].dataloader_ns) worst = i;
  }
  const double median_wait_ms = median(waits) / 1e6;
  const double worst_ms = a.steps.empty() ? 0 : ns_to_ms(a.steps[worst].dataloader_ns);
  if (input_bound && a.iterator.empty()) {
    add("num_workers",
        fmt::format("input-bound by its wait for data ({:.1f}% of the step), but the trace has no "
                    "DataLoader spans: feed the loop from a torch.utils.data.DataLoader with "
                    "num_workers > 0",
                    a.input_bound_pct));
  } else if (input_bound && (single || a.iterator == "DataPipe")) {
    add("num_workers",
        fmt::format("set num_workers > 0 in the DataLoader: batches are loaded on the training "
                    "thread ({}), {:.2f} ms per step, {:.1f}% of the step",
                    a.iterator == "DataPipe" ? "the DataPipe is iterated directly"
                                             : "num_workers=0",
                    a.mean_dataloader_ms, a.input_bound_pct));
  } else if (input_bound && multi) {
    add("num_workers",
        fmt::format("raise num_workers: the worker processes do not keep up, the loop still waits "
                    "{:.2f} ms per step for a batch ({:.1f}% of the step)",
                    a.mean_dataloader_ms, a.input_bound_pct));
    const bool burst = worst_ms >= kBurstMinMs && worst_ms > kBurstFactor * median_wait_ms;
    if (burst && worst == 0)
      add("persistent_workers",
          fmt::format("set persistent_workers=True: the first step ({}) waits {:.2f} ms for data "
                      "against a median of {:.2f} ms, as a loader does when it starts its workers "
                      "for a new epoch",
                      a.steps[worst].name, worst_ms, median_wait_ms));
    else if (burst || median_wait_ms < 0.25 * a.mean_dataloader_ms)
      add("prefetch_factor",
          fmt::format("raise prefetch_factor: the waits come in bursts ({} waits {:.2f} ms, the "
                      "median step {:.2f} ms), so more batches in flight per worker would absorb "
                      "them",
                      a.steps[worst].name, worst_ms, median_wait_ms));
  }
  if (a.pageable_memcpy_ns > 0)
    add("pin_memory",
        fmt::format("set pin_memory=True in the DataLoader and copy batches with "
                    ".to(device, non_blocking=True): {:.3f} ms per step of host-to-device copies "
                    "come from pageable memory",
                    ns_to_ms(a.pageable_memcpy_ns) / n));
  if (sync_copy_ns > 0 && percent_of(sync_copy_ns, a.step_ns) >= 1.0)
    add("non_blocking",
        fmt::format("copy tensors with .to(device, non_blocking=True): synchronous copies and "
                    "stream synchronizations block the host {:.3f} ms per step ({:.1f}% of the "
                    "step)",
                    ns_to_ms(sync_copy_ns) / n, percent_of(sync_copy_ns, a.step_ns)));
  if (a.has_gpu && a.gpu_idle.idle_ns > 0 && percent_of(a.gpu_idle.host_wait_ns, a.gpu_idle.idle_ns) >= 50 &&
      !input_bound)
    add("launch overhead",
        fmt::format("the GPU idles {:.1f}% of its idle time waiting for the host to launch work: "
                    "larger batches or fewer, larger operations (torch.compile, CUDA graphs) keep "
                    "it fed",
                    percent_of(a.gpu_idle.host_wait_ns, a.gpu_idle.idle_ns)));
  if (!input_bound && a.suggestions.empty()) {
    size_t top = 0;
    for (size_t c = 0; c < kStepCategories; ++c)
      if (a.breakdown_ns[c] > a.breakdown_ns[top]) top = c;
    add("none",
        fmt::format("not input-bound: the DataLoader wait is {:.1f}% of the step; the step's time "
                    "goes to {} ({:.1f}%)",
                    a.input_bound_pct, step_category_name(static_cast<StepCategory>(top)),
                    percent_of(a.breakdown_ns[top], a.step_ns)));
  }
}

}  // namespace

std::string_view step_category_name(StepCategory c) {
  static constexpr std::string_view kNames[kStepCategories] = {
      "Kernel", "Memcpy", "Memset", "Communication", "Runtime", "DataLoader", "CPU Exec", "Other"};
  return kNames[idx(c)];
}

TorchAnalysis analyze_torch(const Trace& t) {
  TorchAnalysis a;
  // 1. The steps, and every category's spans as one merged interval list.
  std::vector<Intervals> cat(kStepCategories);
  Intervals optimizer, pageable, sync_copy;
  Intervals steps_cpu;
  std::vector<std::string> step_names;
  std::string dataloader_iter, datapipe_iter;
  KindMemo gpu_kinds, host_kinds;
  const auto gpu_kind = [&](const Span& s) {
    return gpu_kinds.of(s, [&]() -> uint8_t {
      const std::string_view name = t.name(s);
      switch (gpu_activity_of(name, t.category(s))) {
        case GpuActivity::kKernel:
          return name.find("nccl") != std::string_view::npos ||
                         name.find("NCCL") != std::string_view::npos
                     ? kGpuNccl
                     : kGpuKernel;
        case GpuActivity::kMemcpy:
          return name.find("HtoD") != std::string_view::npos &&
                         name.find("Pageable") != std::string_view::npos
                     ? kGpuPageableHtoD
                     : kGpuMemcpy;
        case GpuActivity::kMemset:
          return kGpuMemset;
        case GpuActivity::kNone:
          break;
      }
      return kGpuNone;
    });
  };
  const auto host_kind = [&](const Span& s) {
    return host_kinds.of(s, [&]() -> uint8_t {
      const std::string_view name = t.name(s);
      const std::string_view c = t.category(s);
      if (name.starts_with(kProfilerStep)) return kHostStep;
      if (is_dataloader(name)) return name.starts_with(kDataPipe) ? kHostDataPipe : kHostDataLoader;
      if (is_runtime(name, c)) {
        return name == "cudaMemcpy" || name == "cudaStreamSynchronize" ||
                       name == "cudaDeviceSynchronize"
                   ? kHostSyncRuntime
                   : kHostRuntime;
      }
      if (is_cpu_exec(name, c)) return name.starts_with(kOptimizerStep) ? kHostOptimizer : kHostCpuExec;
      return kHostOther;
    });
  };
  // Each list is reserved at its exact size first (a count of every span's kind, which KindMemo
  // makes cheap): grown by doubling, a large trace's lists were copied and their pages touched
  // about twice, which was half of this analysis's time.
  enum Target : size_t {
    kKernelList,
    kCommList,
    kMemcpyList,
    kMemsetList,
    kPageableList,
    kStepList,
    kDataLoaderList,
    kSyncCopyList,
    kRuntimeList,
    kOptimizerList,
    kCpuExecList,
    kTargets
  };
  // The lists a span of each kind goes to (at most two).
  const auto targets_of = [&](const Lane& lane, const Span& s, Target(&out)[2]) -> int {
    if (lane.kind == LaneKind::kGpuStream) {
      switch (gpu_kind(s)) {
        case kGpuKernel:
          out[0] = kKernelList;
          return 1;
        case kGpuNccl:
          out[0] = kCommList;
          return 1;
        case kGpuPageableHtoD:
          out[0] = kPageableList;
          out[1] = kMemcpyList;
          return 2;
        case kGpuMemcpy:
          out[0] = kMemcpyList;
          return 1;
        case kGpuMemset:
          out[0] = kMemsetList;
          return 1;
        default:
          return 0;
      }
    }
    switch (host_kind(s)) {
      case kHostStep:
        out[0] = kStepList;
        return 1;
      case kHostDataLoader:
      case kHostDataPipe:
        out[0] = kDataLoaderList;
        return 1;
      case kHostSyncRuntime:
        out[0] = kSyncCopyList;
        out[1] = kRuntimeList;
        return 2;
      case kHostRuntime:
        out[0] = kRuntimeList;
        return 1;
      case kHostOptimizer:
        out[0] = kOptimizerList;
        out[1] = kCpuExecList;
        return 2;
      case kHostCpuExec:
        out[0] = kCpuExecList;
        return 1;
      default:
        return 0;
    }
  };
  Intervals* const lists[kTargets] = {&cat[idx(StepCategory::kKernel)],
                                      &cat[idx(StepCategory::kCommunication)],
                                      &cat[idx(StepCategory::kMemcpy)],
                                      &cat[idx(StepCategory::kMemset)],
                                      &pageable,
                                      &steps_cpu,
                                      &cat[idx(StepCategory::kDataLoader)],
                                      &sync_copy,
                                      &cat[idx(StepCategory::kRuntime)],
                                      &optimizer,
                                      &cat[idx(StepCategory::kCpuExec)]};
  // The GPU's lanes and the host's fill different lists (and memos): a large trace's are gathered
  // on two threads, this analysis being the last part of analyze() still running.
  const auto gather = [&](LaneKind kind) {
    size_t counts[kTargets] = {};
    Target to[2];
    for (const Lane& lane : t.lanes)
      if (lane.kind == kind)
        for (const Span& s : lane.spans)
          for (int k = targets_of(lane, s, to); k > 0; --k)
            ++counts[to[k - 1]];
    for (size_t k = 0; k < kTargets; ++k)
      if (counts[k] > 0) lists[k]->reserve(counts[k]);  // the other kind's lists are not touched
    if (kind == LaneKind::kThread) step_names.reserve(counts[kStepList]);
    for (const Lane& lane : t.lanes) {
      if (lane.kind != kind) continue;
      for (const Span& s : lane.spans) {
        const int k = targets_of(lane, s, to);
        if (k == 0) continue;
        const Interval i{s.start_ns, s.end_ns()};
        for (int j = 0; j < k; ++j)
          lists[to[j]]->push_back(i);
        if (kind == LaneKind::kGpuStream) continue;
        if (to[0] == kStepList) step_names.emplace_back(t.name(s));
        if (to[0] == kDataLoaderList) {
          std::string& it = host_kind(s) == kHostDataPipe ? datapipe_iter : dataloader_iter;
          if (it.empty()) it = iterator_of(t.name(s));
        }
      }
    }
  };
  size_t gpu_spans = 0;
  for (const Lane& lane : t.lanes)
    if (lane.kind == LaneKind::kGpuStream) gpu_spans += lane.spans.size();
  a.has_gpu = gpu_spans > 0;
  std::future<void> gpu_lists;
  if (gpu_spans >= kGpuSpansForAThread) {
    try {
      gpu_lists = std::async(std::launch::async, gather, LaneKind::kGpuStream);
    } catch (const std::system_error&) {  // no thread to be had: on this one
      gather(LaneKind::kGpuStream);
    }
  } else {
    gather(LaneKind::kGpuStream);
  }
  gather(LaneKind::kThread);
  if (gpu_lists.valid()) gpu_lists.get();
  if (steps_cpu.empty()) return a;
  a.present = true;
  a.iterator = !dataloader_iter.empty() ? dataloader_iter : datapipe_iter;
  for (auto& c : cat)
    c = merge_intervals(std::move(c));
  optimizer = merge_intervals(std::move(optimizer));
  pageable = merge_intervals(std::move(pageable));
  sync_copy = merge_intervals(std::move(sync_copy));

  // 2. Step ranges, sorted, extended to the end of the GPU work launched inside them.
  std::vector<size_t> order(steps_cpu.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t x, size_t y) { return steps_cpu[x] < steps_cpu[y]; });
  Intervals steps;
  std::vector<std::string> names;
  for (size_t i : order) {
    steps.push_back(steps_cpu[i]);
    names.push_back(std::move(step_names[i]));
  }
  // Launch time of each GPU span that a flow points at: (lane, span index) -> launch ns.
  std::vector<std::vector<int64_t>> launch(t.lanes.size());
  std::vector<int64_t> gpu_end(steps.size(), std::numeric_limits<int64_t>::min());
  std::vector<size_t> hints(t.lanes.size(), 0);
  for (const Flow& f : t.flows) {
    if (f.to_lane >= t.lanes.size() || f.from_lane >= t.lanes.size()) continue;
    const Lane& to = t.lanes[f.to_lane];
    if (to.kind != LaneKind::kGpuStream || t.lanes[f.from_lane].kind != LaneKind::kThread) continue;
    const size_t at = lower_bound_from(to.spans, f.to_ns, hints[f.to_lane],
                                       [](const Span& s, int64_t ts) { return s.start_ns < ts; });
    if (at == to.spans.size() || to.spans[at].start_ns != f.to_ns) continue;
    const auto it = to.spans.begin() + static_cast<ptrdiff_t>(at);
    auto& l = launch[f.to_lane];
    if (l.empty()) l.assign(to.spans.size(), std::numeric_limits<int64_t>::min());
    l[at] = f.from_ns;
    // The step whose CPU range holds the launch.
    auto st = std::upper_bound(steps.begin(), steps.end(), f.from_ns,
                               [](int64_t ts, const Interval& s) { return ts < s.first; });
    if (st == steps.begin()) continue;
    --st;
    if (f.from_ns >= st->second) continue;
    const size_t k = static_cast<size_t>(st - steps.begin());
    gpu_end[k] = std::max(gpu_end[k], it->end_ns());
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    int64_t end = std::max(steps[i].second, gpu_end[i]);
    if (i + 1 < steps.size()) end = std::min(end, std::max(steps[i].second, steps[i + 1].first));
    steps[i].second = end;
  }
  for (size_t i = 1; i < steps.size(); ++i) {  // overlapping ProfilerStep spans, if any
    steps[i].first = std::max(steps[i].first, steps[i - 1].second);
    steps[i].second = std::max(steps[i].second, steps[i].first);
  }

  // 3. Per step: the priority rule, the raw DataLoader wait, the optimizer.
  for (size_t i = 0; i < steps.size(); ++i) {
    StepTime st;
    st.name = std::move(names[i]);
    st.start_ns = steps[i].first;
    st.end_ns = steps[i].second;
    Intervals covered;
    int64_t covered_ns = 0;
    for (size_t c = 0; c + 1 < kStepCategories; ++c) {
      Intervals part = clip(cat[c], st.start_ns, st.end_ns);
      if (c == idx(StepCategory::kDataLoader)) st.dataloader_ns = total_length(part);
      if (part.empty()) continue;
      covered.insert(covered.end(), part.begin(), part.end());
      covered = merge_intervals(std::move(covered));
      const int64_t now = total_length(covered);
      st.breakdown_ns[c] = now - covered_ns;
      covered_ns = now;
    }
    st.breakdown_ns[idx(StepCategory::kOther)] = st.duration_ns() - covered_ns;
    st.optimizer_ns = total_length(clip(optimizer, st.start_ns, st.end_ns));
    a.step_ns += st.duration_ns();
    a.dataloader_ns += st.dataloader_ns;
    a.optimizer_ns += st.optimizer_ns;
    for (size_t c = 0; c < kStepCategories; ++c)
      a.breakdown_ns[c] += st.breakdown_ns[c];
    a.steps.push_back(std::move(st));
  }
  const Intervals step_union = merge_intervals(steps);
  int64_t sync_copy_ns = 0;
  for (const Interval& s : step_union) {
    a.pageable_memcpy_ns += total_length(clip(pageable, s.first, s.second));
    sync_copy_ns += total_length(clip(sync_copy, s.first, s.second));
  }
  const double n = static_cast<double>(a.steps.size());
  a.mean_step_ms = ns_to_ms(a.step_ns) / n;
  a.mean_dataloader_ms = ns_to_ms(a.dataloader_ns) / n;
  a.input_bound_pct = percent_of(a.dataloader_ns, a.step_ns);
  a.verdict = std::string(input_bound_verdict(a.input_bound_pct));

  // 4. GPU idle inside the steps, per stream with activity, split as HolisticTraceAnalysis does.
  for (size_t li = 0; li < t.lanes.size(); ++li) {
    const Lane& lane = t.lanes[li];
    if (lane.kind != LaneKind::kGpuStream) continue;
    int64_t prev_end = std::numeric_limits<int64_t>::min();
    int64_t classified = 0;
    for (size_t si = 0; si < lane.spans.size(); ++si) {
      const Span& s = lane.spans[si];
      if (gpu_kind(s) == kGpuNone) continue;
      if (prev_end != std::numeric_limits<int64_t>::min() && s.start_ns > prev_end) {
        const int64_t in_steps = overlap_with(step_union, prev_end, s.start_ns);
        const int64_t launched =
            launch[li].empty() ? std::numeric_limits<int64_t>::min() : launch[li][si];
        if (s.start_ns - prev_end <= kConsecutiveKernelDelayNs)
          a.gpu_idle.kernel_wait_ns += in_steps;
        else if (launched != std::numeric_limits<int64_t>::min() && launched >= prev_end)
          a.gpu_idle.host_wait_ns += in_steps;
        else
          a.gpu_idle.other_ns += in_steps;
        classified += in_steps;
      }
      prev_end = std::max(prev_end, s.end_ns());
    }
    a.gpu_idle.idle_ns += classified;
  }

  suggest(a, sync_copy_ns);
  return a;
}

std::vector<StepTime> train_loop_steps(const Trace& t) {
  std::vector<StepTime> out;
  for (const Lane& lane : t.lanes) {
    if (lane.kind != LaneKind::kThread || lane.name != "train loop") continue;
    Intervals waits;
    int64_t since = std::numeric_limits<int64_t>::min();
    for (const Span& s : lane.spans) {
      const std::string_view name = t.name(s);
      if (name == "get_next") {
        waits.emplace_back(s.start_ns, s.end_ns());
        continue;
      }
      if (name != "step") continue;
      StepTime st;
      st.name = fmt::format("step {}", out.size() + 1);
      st.start_ns = s.start_ns;
      for (const Interval& w : waits)
        if (w.first >= since) st.start_ns = std::min(st.start_ns, w.first);
      st.end_ns = s.end_ns();
      int64_t wait = 0;
      for (const Interval& w : waits)
        if (w.first >= since && w.first >= st.start_ns)
          wait += clipped_length(w.first, w.second, st.start_ns, s.start_ns);
      st.dataloader_ns = wait;
      st.breakdown_ns[idx(StepCategory::kDataLoader)] = wait;
      st.breakdown_ns[idx(StepCategory::kCpuExec)] = s.dur_ns;
      st.breakdown_ns[idx(StepCategory::kOther)] = std::max<int64_t>(0, st.duration_ns() - wait - s.dur_ns);
      waits.clear();
      since = s.end_ns();
      out.push_back(std::move(st));
    }
  }
  std::sort(out.begin(), out.end(),
            [](const StepTime& x, const StepTime& y) { return x.start_ns < y.start_ns; });
  return out;
}

}  // namespace pipeprof::trace
