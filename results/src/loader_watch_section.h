// The report's section for PyTorch DataLoaders watched by the Python module (kind loader_watch).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeprof/results/report.h"
#include "pipeprof/results/results_file.h"

namespace pipeprof::results {

// Markdown for the entries of kind loader_watch (empty when there are none): a table of their
// figures, then each one's suggestions with their evidence.
std::string loader_watch_section(const nlohmann::json& experiments, const std::vector<Entry>& entries,
                                 Report& report);

}  // namespace pipeprof::results
