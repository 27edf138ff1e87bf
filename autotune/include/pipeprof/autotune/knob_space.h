// The search space of a pipeline spec for offline tuning: every parameter written as "autotune"
// whose field is a knob in its operation's registration (pipelines/registry.h: map and interleave
// "parallelism", prefetch "buffer_size", interleave "cycle_length", the "producers" and
// "queue_capacity" of multiprocess and shared_store stages, ...), with the ordered values a search
// may give it, and the spec with concrete values written in.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace pipeprof::autotune {

struct KnobSpec {
  std::string path;             // JSON pointer into the spec, e.g. "/stages/1/parallelism"
  std::string stage;            // e.g. "stages[1] map 'mapped_function'"
  std::string knob;             // "parallelism", "buffer_size", "cycle_length", "producers" or
                                // "queue_capacity"
  std::vector<int64_t> values;  // ascending
  int64_t initial = 0;          // where a search starts (the online default)
};

// path -> value. A knob missing from an assignment keeps its KnobSpec::initial.
using KnobAssignment = std::map<std::string, int64_t>;

struct KnobSpaceOptions {
  int64_t max_parallelism = 16;     // parallelism and cycle_length: 1..max
  int64_t max_buffer = 64;          // buffer_size: powers of two 1..max
  int64_t max_producers = 16;       // producers: 1..max (starting at 8)
  int64_t max_queue_capacity = 64;  // queue_capacity: powers of two 1..max (starting at 16)
  int64_t initial_parallelism = 0;  // 0: pipelines::default_autotune_parallelism()
};

// Every "autotune" parameter of `spec` (nested pipelines included), in document order. A parallel
// interleave whose parallelism and cycle_length are both "autotune" gets one knob,
// "parallelism", that sets both (the simulator needs as many workers as inputs).
std::vector<KnobSpec> discover_knobs(const nlohmann::json& spec,
                                     const KnobSpaceOptions& options = {});

// `spec` with each knob's value (or its initial value) written in place of "autotune".
nlohmann::json apply_assignment(nlohmann::json spec, const std::vector<KnobSpec>& knobs,
                                const KnobAssignment& assignment);

// The full assignment: each knob's value from `assignment`, else its initial value.
KnobAssignment complete(const std::vector<KnobSpec>& knobs, const KnobAssignment& assignment);
std::string to_string(const KnobAssignment& assignment, const std::vector<KnobSpec>& knobs);
nlohmann::json to_json(const KnobAssignment& assignment, const std::vector<KnobSpec>& knobs);

}  // namespace pipeprof::autotune
