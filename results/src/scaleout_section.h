// The report's scale-out section (EXPERIMENTS.md C4): the experiments with a "scaleout" object
// (dell_old and dell_new under mpirun at 1, 2 and 4 ranks): images/s in total and per rank,
// scaling efficiency and AU per rank, with a chart of images/s by rank count.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeprof/results/report.h"
#include "pipeprof/results/results_file.h"

namespace pipeprof::results {

// Markdown (empty without such experiments); adds its chart to `report.files`.
std::string scaleout_section(const nlohmann::json& experiments, const std::vector<Entry>& entries,
                         Report& report);

}  // namespace pipeprof::results
