// The operation registry: one registration per operation, next to the operation's own code
// (pipelines/src/ops/<op>.cc), stating everything the rest of pipeprof needs to know about it:
//
//   - its spec fields: names, types, bounds and defaults. The spec reader (spec.cc) validates a
//     stage against them (unknown keys, types, bounds) and hands the operation's builder a reader
//     that applies the defaults; the spec writer (Dataset::to_json) writes a node's parameters in
//     field order, leaving out the values equal to their defaults;
//   - its knobs: which fields may be "autotune", what kind of knob they are and how they relate to
//     each other. The offline tuner's search space (autotune/knob_space.h) is discovered from it;
//   - its simulation rule: how the ideal-time simulator (autotune/simulator.h) models it.
//
// Adding an operation: its files in pipelines/src/ops/ (the node, its iterator, its registration
// function `const OpRegistration& <name>_registration()`) and one line in ops/all_ops.h.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pipeprof/pipelines/simulation.h"

namespace pipeprof::pipelines {

class Dataset;
class StageReader;  // ops/stage_reader.h: typed, validated access to a stage's fields

enum class FieldType {
  kInteger,    // an integer within [min, max] (or "$element" inside an interleave)
  kNumber,     // a finite number >= min
  kBoolean,    // true or false
  kString,     // a string
  kTunable,    // an integer within [min, max], or "autotune" (a knob)
  kObject,     // a JSON object (a registered function's arguments)
  kPipeline,   // a nested pipeline {"stages": [...]}
  kPipelines,  // a non-empty list of nested pipelines
  kValue,      // any JSON value the operation reads itself (a tensor value, a list of values)
};

// What kind of knob a tunable field is: it decides the values an offline search may give it and
// the limit of autotune::KnobSpaceOptions that bounds them.
enum class KnobKind {
  kParallelism,    // worker threads: 1..max_parallelism
  kBufferSize,     // buffered elements: powers of two 1..max_buffer
  kProducers,      // producer processes: 1..max_producers
  kQueueCapacity,  // elements in flight between processes: powers of two 1..max_queue_capacity
};

struct KnobRule {
  KnobKind kind = KnobKind::kParallelism;
  // True when the online tuner moves it while the pipeline runs (a model knob); false when only
  // the offline tuner can (e.g. producer processes are forked once, at the start).
  bool online = true;
  // What "autotune" means until a tuner moves it; 0: pipelines::default_autotune_parallelism().
  int64_t start = 0;
  // A field whose fixed value caps this knob (interleave's parallelism <= cycle_length).
  std::string bounded_by;
  // When this field and the field named here are both "autotune", they are one knob, the other
  // field's, which sets both (interleave's cycle_length follows its parallelism).
  std::string follows;
};

// A buffered element's least footprint (its component list and one tensor header), for the
// memory check of element counts (FieldSpec::bytes_each).
inline constexpr int64_t kMinElementBytes = 64;

struct FieldSpec {
  std::string name;
  FieldType type = FieldType::kInteger;
  bool required = false;
  // The value when the field is absent (null: none; the operation decides). The writer leaves out
  // a parameter equal to it.
  nlohmann::json fallback;
  int64_t min = std::numeric_limits<int64_t>::min();
  int64_t max = std::numeric_limits<int64_t>::max();
  std::optional<KnobRule> knob;  // kTunable fields only
  // A count of things held in memory at once (buffered elements, a batch, MiB of a store), each at
  // least this many bytes: the reader checks the value times it against what the machine can
  // hold (memory_limit.h). 0: not a size.
  int64_t bytes_each = 0;
  std::string doc;
  // The writer spells a parameter out even at its default, so a written spec says what ran;
  // false leaves it out at its default (a default that means "off": map's sequential
  // parallelism, an empty name, no function arguments).
  bool spelled_out = true;
};

enum class OpKind {
  kSource,     // starts a chain (first stage)
  kTransform,  // transforms the previous stage's output
};

struct OpRegistration {
  std::string name;
  OpKind kind = OpKind::kTransform;
  std::string summary;  // one line, for listings and errors
  std::vector<FieldSpec> fields;
  // Builds the operation from a validated stage (sources get no input).
  std::function<Dataset(const StageReader& stage, const Dataset* input)> build;
  // The simulation rule: the operation as a node of the ideal-time model. May throw
  // sim::Unsupported with the reason when its timing is not known in advance.
  std::function<sim::NodePtr(const sim::SimStage& stage)> simulate;

  const FieldSpec* field(std::string_view name) const;
};

// Every registered operation, in registration order (ops/all_ops.h).
const std::vector<const OpRegistration*>& registered_ops();
// The registration of `op`, or nullptr.
const OpRegistration* find_op(std::string_view op);
// Names of the registered operations of one kind, comma-separated (for error messages).
std::string op_names(OpKind kind);

// A spec entry {"op": ..., <fields in registration order>} from a node's parameters (null ones
// and those of fields not spelled_out at their default are left out). Throws std::logic_error for a parameter the registration
// does not declare (a bug in the operation, caught by the conformance tests).
nlohmann::json write_stage(const OpRegistration& op, const nlohmann::json& params);

}  // namespace pipeprof::pipelines
