// Experiments: a pipeline spec plus the step the consumer runs and the number of epochs, with the
// numbers the source documents publish. The catalog ships as JSON specs in harness/experiments/,
// each with an "experiment" object:
//   "experiment": {"part": "A", "step": "sleep:10", "epochs": 2, "seed_ms": 234.75, "ideal_ms":
//   210}
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "pipeprof/pipelines/spec.h"

namespace pipeprof::harness {

struct Experiment {
  std::string id;
  std::string description;
  pipelines::Spec spec;
  std::string step = "sleep:10";  // the experiment's own step
  int64_t epochs = 1;
  std::optional<double> seed_ms;              // the time the source document publishes
  std::optional<double> documented_ideal_ms;  // EXPERIMENTS.md's zero-overhead ideal
  // The mean wait per batch the source document publishes (the Ray article's metric, part B).
  std::optional<double> seed_wait_ms;
  std::string part;  // EXPERIMENTS.md's part: "A", "B", ...
  std::filesystem::path file;
};

// Loads one experiment (a spec with or without an "experiment" object; defaults: step sleep:10,
// 1 epoch), its rank tokens read for the rank of `options` (rank 0 of 1 by default; the command
// line passes this process's rank under mpirun). Throws pipelines::SpecError naming the file and
// field.
Experiment load_experiment(const std::filesystem::path& file, const pipelines::ParseOptions& options = {});

// The shipped catalog directory: $PIPEPROF_EXPERIMENTS if set, else the source tree's
// harness/experiments.
std::filesystem::path catalog_dir();

// Every experiment of the catalog, in the order of EXPERIMENTS.md.
std::vector<Experiment> load_catalog(const std::filesystem::path& dir = catalog_dir(),
                                     const pipelines::ParseOptions& options = {});

// An experiment by id from the catalog, or a spec file path. Throws SpecError when neither.
Experiment find_experiment(const std::string& id_or_path, const pipelines::ParseOptions& options = {});

}  // namespace pipeprof::harness
