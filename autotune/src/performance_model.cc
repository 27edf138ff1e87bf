#include "pipeprof/autotune/performance_model.h"

#include <algorithm>

namespace pipeprof::autotune {
namespace {

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.size() > prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

PerformanceModel::PerformanceModel(std::vector<StageModel> stages) : stages_(std::move(stages)) {
  // The stage whose workers run each stage: its own when it has a parallelism knob, else the
  // innermost parallel interleave whose nested pipeline holds it, else the consumer ("").
  for (auto& s : stages_) {
    s.worker_owner.clear();
    if (s.parallelism > 0) {
      s.worker_owner = s.key;
      continue;
    }
    size_t best = 0;
    for (const auto& o : stages_) {
      if (o.op != "interleave" || o.parallelism <= 0) continue;
      const std::string nested = o.key + ".pipeline.";
      if (starts_with(s.key, nested) && nested.size() > best) {
        best = nested.size();
        s.worker_owner = o.key;
      }
    }
  }
}

PerformanceModel PerformanceModel::from(const pipelines::Model& model) {
  std::vector<StageModel> stages;
  int64_t root_elements = 0;
  for (const pipelines::Node* node : model.nodes()) {
    const pipelines::NodeSnapshot snap = node->snapshot();
    StageModel s;
    s.key = snap.key;
    s.op = snap.op;
    s.name = snap.name;
    s.parent = snap.parent;
    s.elements = snap.elements;
    s.latency_ns = snap.wall_ns_per_element;
    s.cpu_share = snap.cpu_share;
    s.cpu_known = node->stats().sampled_wall_ns.load(std::memory_order_relaxed) > 0;
    for (const auto& [name, value] : snap.knobs) {
      if (name == "parallelism") s.parallelism = value;
      if (name == "buffer_size") s.buffer_size = value;
    }
    s.active_workers = node->stats().active_workers.load(std::memory_order_relaxed);
    s.buffered = snap.buffered;
    s.buffer_capacity = snap.buffer_capacity;
    s.blocked_ns = snap.blocked_ns;
    s.max_fill_ns = snap.max_fill_ns;
    if (s.parent.empty()) root_elements = s.elements;
    stages.push_back(std::move(s));
  }
  for (auto& s : stages) {
    s.ratio = root_elements > 0 && s.elements > 0
                  ? static_cast<double>(s.elements) / static_cast<double>(root_elements)
                  : 1.0;
  }
  return PerformanceModel(std::move(stages));
}

const StageModel* PerformanceModel::find(const std::string& key) const {
  for (const auto& s : stages_) {
    if (s.key == key) return &s;
  }
  return nullptr;
}

int64_t PerformanceModel::value_of(const StageModel& s, const std::string& knob, int64_t current,
                                   const KnobOverrides& overrides) {
  if (auto stage = overrides.find(s.key); stage != overrides.end()) {
    if (auto k = stage->second.find(knob); k != stage->second.end()) return k->second;
  }
  return current;
}

int64_t PerformanceModel::workers(const StageModel& s, const KnobOverrides& overrides) const {
  if (s.worker_owner.empty()) return 1;
  const StageModel* owner = find(s.worker_owner);
  if (owner == nullptr) return 1;
  return std::max<int64_t>(1, value_of(*owner, "parallelism", owner->parallelism, overrides));
}

double PerformanceModel::interval_ns(const KnobOverrides& overrides) const {
  double interval = 0;
  for (const auto& s : stages_) {
    if (!s.known()) continue;
    const double demand = s.latency_ns * s.ratio;
    interval = std::max(interval, demand / static_cast<double>(workers(s, overrides)));
  }
  return interval;
}

double PerformanceModel::worker_share(const StageModel& s, double unknown_share) const {
  if (s.op != "interleave") return s.cpu_known ? s.cpu_share : unknown_share;
  // A parallel interleave's workers run its nested pipelines: their share, weighted by latency.
  double wall = 0, cpu = 0;
  for (const auto& o : stages_) {
    if (o.worker_owner != s.key || &o == &s || !o.cpu_known || !o.known()) continue;
    wall += o.latency_ns * o.ratio;
    cpu += o.latency_ns * o.ratio * o.cpu_share;
  }
  return wall > 0 ? cpu / wall : unknown_share;
}

double PerformanceModel::cpu_cores(const KnobOverrides& overrides, double unknown_share,
                                   double whole_core_share, double idle_share) const {
  double cores = 0;
  for (const auto& s : stages_) {
    if (s.parallelism <= 0) continue;  // runs on its consumer's thread or its owner's workers
    double share = worker_share(s, unknown_share);
    if (share > whole_core_share) share = 1.0;
    if (share < idle_share) share = 0.0;
    cores += static_cast<double>(value_of(s, "parallelism", s.parallelism, overrides)) * share;
  }
  return cores;
}

int64_t PerformanceModel::buffer_elements(const KnobOverrides& overrides) const {
  int64_t total = 0;
  for (const auto& s : stages_) {
    if (s.buffer_size > 0) {
      total += value_of(s, "buffer_size", s.buffer_size, overrides);
    } else if (s.parallelism > 0 && s.op == "map") {
      total += value_of(s, "parallelism", s.parallelism, overrides);
    } else {
      total += s.buffer_capacity;
    }
  }
  return total;
}

}  // namespace pipeprof::autotune
