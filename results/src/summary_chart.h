// The report's summary chart: for each experiment, horizontal bars of the measured time (median),
// the ideal and the seed's published time, on one linear axis in milliseconds.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace pipeprof::results {

struct ChartRow {
  std::string name;
  std::optional<double> measured_ms, ideal_ms, seed_ms;
};

std::string summary_chart_svg(const std::vector<ChartRow>& rows);

}  // namespace pipeprof::results
