// JSON pipeline specs: load, validate, save.
//
//   {
//     "name": "map_parallel",
//     "description": "ArtificialDataset with a parallel map",
//     "stages": [
//       {"op": "artificial", "open_ms": 30, "read_ms": 15, "num_samples": 3},
//       {"op": "map", "fn": "sleep_ms", "args": {"ms": 30}, "parallelism": "autotune",
//        "name": "mapped_function"}
//     ]
//   }
//
// The first stage is a source (range, from_tensors, from_tensor_slices, from_vector, generator,
// artificial, zip, multiprocess, shared_store); the others transform it in order. Each operation's
// fields, their types, bounds and defaults are those of its registration (registry.h). Nested pipelines ({"stages": [...]}) appear
// in zip's "inputs" and interleave's "pipeline". Inside interleave's pipeline, "$element" stands
// for the outer element: as a number parameter it is component 0's value ("$element[k]": component
// k), as from_tensors' value it is the whole element. Unknown keys are errors, so typos are caught.
// The top-level "experiment" object is reserved for the harness and not read here.
//
// Ranks (a job of several processes, e.g. under mpirun): shard's "num_shards": "ranks" and
// "index": "rank" stand for the rank count and rank given in ParseOptions, and list_files'
// "shard": "rank" keeps the rank's share of the files (a shard stage right after it; a shuffled
// listing then needs a seed, so that every rank shuffles alike).
// parse_spec resolves them; Spec::document holds the resolved spec.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "pipeprof/pipelines/dataset.h"

namespace pipeprof::pipelines {

struct Spec {
  std::string name;
  std::string description;
  Dataset dataset;
  nlohmann::json document;  // the whole document as loaded (including "experiment")
};

// How a spec is read: the rank and rank count its rank tokens stand for (rank 0 of 1: one process).
struct ParseOptions {
  int64_t rank = 0;
  int64_t ranks = 1;
};

// The spec with its rank tokens replaced by the rank and rank count of `options`. Throws
// std::invalid_argument for a rank outside [0, ranks).
nlohmann::json resolve_ranks(const nlohmann::json& document, const ParseOptions& options = {});

// Throws SpecError: "<source>: <json path>: expected <what>, got <value>".
Spec parse_spec(const nlohmann::json& document, const std::string& source = "<spec>",
                const ParseOptions& options = {});
// Reads and parses a file; an unreadable file or invalid JSON is a SpecError naming the file (and
// the byte offset of a JSON syntax error).
Spec load_spec(const std::filesystem::path& file, const ParseOptions& options = {});
// Parses a pipeline object ({"stages": [...]}) alone.
Dataset parse_pipeline(const nlohmann::json& pipeline, const std::string& source = "<spec>",
                       const ParseOptions& options = {});

// The document for `dataset` ({"name", "description", "stages"}), loadable by load_spec.
nlohmann::json to_spec(const Dataset& dataset, const std::string& name = {},
                       const std::string& description = {});
void save_spec(const std::filesystem::path& file, const Dataset& dataset,
               const std::string& name = {}, const std::string& description = {});

}  // namespace pipeprof::pipelines
