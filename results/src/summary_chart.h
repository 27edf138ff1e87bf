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

// The chart's title and the legend of its three series (measured, ideal, seed by default).
struct ChartText {
  std::string title = "Measured vs ideal vs seed (ms)";
  std::string series[3] = {"measured (median)", "ideal", "seed (tf.data)"};  // "": no legend
  std::string unit = "ms";  // of the values (tooltips, the axis note); empty: none
};

std::string summary_chart_svg(const std::vector<ChartRow>& rows, const ChartText& text = {});

}  // namespace pipeprof::results
