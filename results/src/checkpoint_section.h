// The report's section for DLIO's checkpoints (a workload's `checkpoint` record: workflow.checkpoint
// during training or on its own).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeprof/results/report.h"
#include "pipeprof/results/results_file.h"

namespace pipeprof::results {

// Markdown for the workloads with checkpoints (empty when there are none): the checkpoint's shape
// and size, DLIO's and MLPerf Storage's figures per workload, every save and load, and a chart of
// their throughput (checkpoints.svg).
std::string checkpoint_section(const nlohmann::json& experiments, const std::vector<Entry>& entries,
                               Report& report);

}  // namespace pipeprof::results
