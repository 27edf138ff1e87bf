// Tuning problems for the evaluation benchmark (autotune/problems/*.json): a knob space, a
// noise-free cost, the same cost with noise (what a search sees), and a real pipeline the online
// tuner can run. Two kinds:
// - "simulator": a pipeline spec whose cost is its simulated wall time (autotune/simulator.h) for
//   the given knob values, with "step_ms" and "epochs";
// - "synthetic": a chain of stages on `cores` cores with a cheap cost model (see cost()), where
//   computing workers past the cores slow each other down and every thread costs a little, so the
//   optimum lies inside the space.
// Both add relative Gaussian noise of `noise` to each trial.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "pipeprof/autotune/knob_space.h"
#include "pipeprof/pipelines/dataset.h"

namespace pipeprof::autotune::bench {

struct Problem {
  std::string name, kind, description;
  nlohmann::json document;
  std::vector<KnobSpec> knobs;
  double noise = 0;
  int64_t cores = 2;  // the parallelism of the "parallelism = cores" baseline

  // Wall time (ms) of the pipeline with these knob values, without noise.
  double cost(const KnobAssignment& assignment) const;
  // The same with noise drawn from `rng`.
  double noisy_cost(const KnobAssignment& assignment, std::mt19937_64& rng) const;
  // A real pipeline with the same stages and "autotune" knobs, for the online tuner; its
  // consumer's step (ms) and epochs.
  pipelines::Dataset pipeline() const;
  double step_ms() const;
  int64_t epochs() const;
};

// Throws std::runtime_error naming the file and what is wrong.
Problem load_problem(const std::filesystem::path& file);
std::vector<Problem> load_problems(const std::filesystem::path& dir);

// Every assignment of the space (the first knob varies slowest).
std::vector<KnobAssignment> grid(const std::vector<KnobSpec>& knobs);

// The model key of a stage ("stages[1].pipeline.stages[0]") as a JSON pointer prefix
// ("/stages/1/pipeline/stages/0").
std::string key_to_pointer(const std::string& key);

}  // namespace pipeprof::autotune::bench
