// The report's sections after the summary: one interface, one list. A section takes the results'
// entries, read with their kinds and typed records (results_file.h, records.h; the experiments'
// JSON beside them for what is not a record), returns its Markdown (empty when no entry is of its
// kind) and pushes the charts it draws onto report.files; it names those files here, so that no
// experiment's Gantt chart can take their names. A new section is a file of its own and a line in
// report_sections() (report.cc).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeprof/results/report.h"
#include "pipeprof/results/results_file.h"

namespace pipeprof::results {

struct ReportSection {
  const char* name;
  std::vector<std::string> files;  // the charts it may write
  std::string (*render)(const nlohmann::json& experiments, const std::vector<Entry>& entries,
                        Report& report);
};

// In the report's order: part B on its own metric, storage, scale-out.
const std::vector<ReportSection>& report_sections();

}  // namespace pipeprof::results
