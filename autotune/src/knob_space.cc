#include "pipeprof/autotune/knob_space.h"

#include <algorithm>

#include "pipeprof/pipelines/dataset.h"

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

void walk(const nlohmann::json& pipeline, const std::string& pointer, const std::string& label,
          const KnobSpaceOptions& o, std::vector<KnobSpec>& out) {
  auto stages = pipeline.find("stages");
  if (stages == pipeline.end() || !stages->is_array()) return;
  const int64_t initial_p =
      o.initial_parallelism > 0 ? o.initial_parallelism : pipelines::default_autotune_parallelism();
  for (size_t i = 0; i < stages->size(); ++i) {
    const nlohmann::json& stage = (*stages)[i];
    if (!stage.is_object()) continue;
    const std::string at = pointer + "/stages/" + std::to_string(i);
    const std::string where = label + "stages[" + std::to_string(i) + "]";
    const std::string op = stage.value("op", std::string());
    std::string name = where + " " + op;
    if (stage.contains("name") && stage["name"].is_string())
      name += " '" + stage["name"].get<std::string>() + "'";
    auto add = [&](const std::string& knob, std::vector<int64_t> values, int64_t initial) {
      out.push_back({at + "/" + knob, name, knob, values, nearest(values, initial)});
    };
    if (op == "map" && is_autotune(stage, "parallelism")) {
      add("parallelism", range_values(o.max_parallelism), initial_p);
    } else if (op == "interleave") {
      const bool p = is_autotune(stage, "parallelism");
      const bool c = is_autotune(stage, "cycle_length");
      if (p) {
        int64_t max = o.max_parallelism;
        auto cycle = stage.find("cycle_length");
        if (!c && cycle != stage.end() && cycle->is_number_integer())
          max = std::min(max, cycle->get<int64_t>());
        add("parallelism", range_values(std::max<int64_t>(1, max)), initial_p);
      } else if (c) {
        add("cycle_length", range_values(o.max_parallelism), initial_p);
      }
    } else if (op == "prefetch" && is_autotune(stage, "buffer_size")) {
      add("buffer_size", power_values(o.max_buffer), pipelines::kDefaultAutotuneBuffer);
    } else if (op == "multiprocess" || op == "shared_store") {
      // Offline only: the producer processes are forked when the pipeline starts.
      if (is_autotune(stage, "producers")) add("producers", range_values(o.max_producers), 8);
      if (is_autotune(stage, "queue_capacity"))
        add("queue_capacity", power_values(o.max_queue_capacity), 16);
    }
    if (auto nested = stage.find("pipeline"); nested != stage.end() && nested->is_object())
      walk(*nested, at + "/pipeline", where + ".pipeline.", o, out);
    if (auto inputs = stage.find("inputs"); inputs != stage.end() && inputs->is_array()) {
      for (size_t k = 0; k < inputs->size(); ++k) {
        walk((*inputs)[k], at + "/inputs/" + std::to_string(k),
             where + ".inputs[" + std::to_string(k) + "].", o, out);
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
    // A parallel interleave's single knob sets its cycle_length too when that was "autotune".
    const nlohmann::json::json_pointer stage = pointer.parent_pointer();
    if (pointer.back() == "parallelism" && spec[stage].value("op", "") == "interleave" &&
        is_autotune(spec[stage], "cycle_length")) {
      spec[stage]["cycle_length"] = value;
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
