#include "pipeprof/autotune/knob_space.h"

#include <algorithm>

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/registry.h"

namespace pipeprof::autotune {
namespace {

bool is_autotune(const nlohmann::json& stage, const char* key) {
  auto it = stage.find(key);
  return it != stage.end() && it->is_string() && it->get<std::string>() == "autotune";
}

std::vector<int64_t> range_values(int64_t max) {
  std::vector<int64_t> v;
  for (int64_t i = 1; i <= max; ++i)
    v.push_back(i);
  return v;
}

std::vector<int64_t> power_values(int64_t max) {
  std::vector<int64_t> v;
  for (int64_t i = 1; i <= max; i *= 2)
    v.push_back(i);
  return v;
}

int64_t nearest(const std::vector<int64_t>& values, int64_t want) {
  int64_t best = values.front();
  for (int64_t v : values) {
    if (std::abs(v - want) < std::abs(best - want)) best = v;
  }
  return best;
}

int64_t limit(const KnobSpaceOptions& o, pipelines::KnobKind kind) {
  switch (kind) {
    case pipelines::KnobKind::kParallelism: return o.max_parallelism;
    case pipelines::KnobKind::kBufferSize: return o.max_buffer;
    case pipelines::KnobKind::kProducers: return o.max_producers;
    case pipelines::KnobKind::kQueueCapacity: return o.max_queue_capacity;
  }
  return 1;
}

bool powers_of_two(pipelines::KnobKind kind) {
  return kind == pipelines::KnobKind::kBufferSize || kind == pipelines::KnobKind::kQueueCapacity;
}

// The knobs of a pipeline's stages, from their operations' registrations, and those of the nested
// pipelines in document order.
void walk(const nlohmann::json& pipeline, const std::string& pointer, const std::string& label,
          const KnobSpaceOptions& o, std::vector<KnobSpec>& out) {
  auto stages = pipeline.find("stages");
  if (stages == pipeline.end() || !stages->is_array()) return;
  const int64_t initial_p =
      o.initial_parallelism > 0 ? o.initial_parallelism : pipelines::default_autotune_parallelism();
  for (size_t i = 0; i < stages->size(); ++i) {
    const nlohmann::json& stage = (*stages)[i];
    if (!stage.is_object()) continue;
    const std::string op = stage.value("op", std::string());
    const pipelines::OpRegistration* registration = pipelines::find_op(op);
    if (registration == nullptr) continue;
    const std::string at = pointer + "/stages/" + std::to_string(i);
    const std::string where = label + "stages[" + std::to_string(i) + "]";
    std::string name = where + " " + op;
    if (stage.contains("name") && stage["name"].is_string())
      name += " '" + stage["name"].get<std::string>() + "'";
    for (const pipelines::FieldSpec& field : registration->fields) {
      if (!field.knob || !is_autotune(stage, field.name.c_str())) continue;
      const pipelines::KnobRule& rule = *field.knob;
      // Set by the knob of the field it follows.
      if (!rule.follows.empty() && is_autotune(stage, rule.follows.c_str())) continue;
      int64_t max = limit(o, rule.kind);
      if (!rule.bounded_by.empty()) {
        auto bound = stage.find(rule.bounded_by);
        if (bound != stage.end() && bound->is_number_integer())
          max = std::min(max, bound->get<int64_t>());
      }
      max = std::max<int64_t>(1, max);
      const std::vector<int64_t> values =
          powers_of_two(rule.kind) ? power_values(max) : range_values(max);
      const int64_t initial = rule.start > 0 ? rule.start : initial_p;
      out.push_back({at + "/" + field.name, name, field.name, values, nearest(values, initial)});
    }
    for (const pipelines::FieldSpec& field : registration->fields) {
      auto nested = stage.find(field.name);
      if (nested == stage.end()) continue;
      if (field.type == pipelines::FieldType::kPipeline && nested->is_object()) {
        walk(*nested, at + "/" + field.name, where + "." + field.name + ".", o, out);
      } else if (field.type == pipelines::FieldType::kPipelines && nested->is_array()) {
        for (size_t k = 0; k < nested->size(); ++k) {
          walk((*nested)[k], at + "/" + field.name + "/" + std::to_string(k),
               where + "." + field.name + "[" + std::to_string(k) + "].", o, out);
        }
      }
    }
  }
}

}  // namespace

std::vector<KnobSpec> discover_knobs(const nlohmann::json& spec, const KnobSpaceOptions& options) {
  std::vector<KnobSpec> out;
  walk(spec, "", "", options, out);
  return out;
}

KnobAssignment complete(const std::vector<KnobSpec>& knobs, const KnobAssignment& assignment) {
  KnobAssignment out;
  for (const auto& k : knobs) {
    auto it = assignment.find(k.path);
    out[k.path] = it != assignment.end() ? it->second : k.initial;
  }
  return out;
}

nlohmann::json apply_assignment(nlohmann::json spec, const std::vector<KnobSpec>& knobs,
                                const KnobAssignment& assignment) {
  for (const auto& [path, value] : complete(knobs, assignment)) {
    const nlohmann::json::json_pointer pointer(path);
    spec[pointer] = value;
    // Fields that follow this knob (a parallel interleave's cycle_length) get its value too
    // while they are "autotune".
    const nlohmann::json::json_pointer stage = pointer.parent_pointer();
    const pipelines::OpRegistration* registration =
        pipelines::find_op(spec[stage].value("op", std::string()));
    if (registration == nullptr) continue;
    for (const pipelines::FieldSpec& field : registration->fields) {
      if (field.knob && field.knob->follows == pointer.back() &&
          is_autotune(spec[stage], field.name.c_str())) {
        spec[stage][field.name] = value;
      }
    }
  }
  return spec;
}

std::string to_string(const KnobAssignment& assignment, const std::vector<KnobSpec>& knobs) {
  std::string out;
  for (const auto& k : knobs) {
    auto it = assignment.find(k.path);
    if (!out.empty()) out += ", ";
    out += k.stage + " " + k.knob + "=" +
           std::to_string(it != assignment.end() ? it->second : k.initial);
  }
  return out;
}

nlohmann::json to_json(const KnobAssignment& assignment, const std::vector<KnobSpec>& knobs) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& k : knobs) {
    auto it = assignment.find(k.path);
    out.push_back({{"path", k.path},
                   {"stage", k.stage},
                   {"knob", k.knob},
                   {"value", it != assignment.end() ? it->second : k.initial}});
  }
  return out;
}

}  // namespace pipeprof::autotune
