// The report's summary chart: for each experiment, horizontal bars of the measured time (median),
// the ideal and the seed's published time on a linear axis in milliseconds. Experiments whose
// largest values are within a factor of 10 share a panel with its own axis, so that second-long
// experiments do not flatten the others.
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
