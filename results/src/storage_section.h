// The report's storage section: the DLIO / MLPerf Storage workloads of a results document (the
// experiments with a "workload" object, `pipeprof workload` and the peer loaders), with AU as DLIO
// computes it, the most accelerators found and the storage's bound, and pipeprof beside a peer
// loader (PyTorch's DataLoader) on the same workload, with a chart.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeprof/results/report.h"
#include "pipeprof/results/results_file.h"

namespace pipeprof::results {

// Markdown (empty without workloads); adds its chart to `report.files`.
std::string storage_section(const nlohmann::json& experiments, const std::vector<Entry>& entries,
                         Report& report);

}  // namespace pipeprof::results
