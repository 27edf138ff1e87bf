// The steps window's model: one stacked bar per training step (PyTorch ProfilerStep#N, or the
// train loop's steps of a pipeprof trace) split by TensorBoard's step-time categories, the
// verdict, and which step a click on the chart picks. No Dear ImGui here: unit-tested.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pipeprof/trace/analysis.h"
#include "pipeprof/viewer/palette.h"

namespace pipeprof::viewer {

struct StepBar {
  std::string name;
  double start_ns = 0;  // relative to the trace's start, as the timeline's times
  double end_ns = 0;
  std::array<double, trace::kStepCategories> segment_ns{};  // bottom (Kernel) to top (Other)
  double dataloader_ns = 0;                                  // raw DataLoader wait
  double duration_ns() const { return end_ns - start_ns; }
};

struct StepsModel {
  std::string source;  // "PyTorch ProfilerStep#N", "train loop", "" when there are no steps
  std::vector<StepBar> bars;
  double max_ns = 0;  // the longest step
  double input_bound_pct = 0;
  std::string verdict;
  std::vector<std::string> suggestions;
  std::vector<std::string> notes;
  bool empty() const { return bars.empty(); }
};

// From an analysis of a trace whose first event is at `origin_ns`.
StepsModel make_steps_model(const trace::Analysis& analysis, int64_t origin_ns);

// The bar under x (pixels from the chart's left edge) when `count` bars share `width_px`.
std::optional<size_t> bar_at(size_t count, double width_px, double x_px);
// The horizontal extent [x0, x1) of bar i (a gap of a fifth of the slot, at least 1 px wide bars).
std::pair<double, double> bar_extent(size_t count, double width_px, size_t i);

// What the timeline zooms to when a step is clicked (TimelineView::zoom_to adds its margin): the
// step's extent, at least 1 ns wide.
std::pair<double, double> zoom_range(const StepBar& bar);

// A fixed colour per category, the same in every trace.
Rgba category_colour(trace::StepCategory c);

}  // namespace pipeprof::viewer
