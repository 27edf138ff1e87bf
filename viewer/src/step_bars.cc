#include "pipeprof/viewer/step_bars.h"


#include <algorithm>
#include <cmath>
#include <utility>

namespace pipeprof::viewer {

StepsModel make_steps_model(const trace::Analysis& a, int64_t origin_ns) {
  StepsModel m;
  if (a.step_times.empty()) {
    m.notes = a.notes;
    return m;
  }
  if (a.torch.present) {
    m.source = "PyTorch ProfilerStep#N";
    m.input_bound_pct = a.torch.input_bound_pct;
    m.verdict = a.torch.verdict;
    for (const trace::Suggestion& s : a.torch.suggestions)
      m.suggestions.push_back(s.knob + ": " + s.text);
  } else {
    m.source = "train loop";
    m.input_bound_pct = a.steps.input_bound_pct;
    m.verdict = a.steps.verdict;
    if (!a.suggestion.empty()) m.suggestions.push_back(a.suggestion);
  }
  m.notes = a.notes;
  for (const trace::StepTime& s : a.step_times) {
    StepBar b;
    b.name = s.name;
    b.start_ns = static_cast<double>(s.start_ns - origin_ns);
    b.end_ns = static_cast<double>(s.end_ns - origin_ns);
    for (size_t c = 0; c < trace::kStepCategories; ++c)
      b.segment_ns[c] = static_cast<double>(s.breakdown_ns[c]);
    b.dataloader_ns = static_cast<double>(s.dataloader_ns);
    m.max_ns = std::max(m.max_ns, b.duration_ns());
    m.bars.push_back(std::move(b));
  }
  return m;
}

std::pair<double, double> bar_extent(size_t count, double width_px, size_t i) {
  if (count == 0 || width_px <= 0) return {0, 0};
  const double slot = width_px / static_cast<double>(count);
  const double x0 = slot * static_cast<double>(i);
  const double w = std::max(1.0, slot * 0.8);
  return {x0, x0 + w};
}

std::optional<size_t> bar_at(size_t count, double width_px, double x_px) {
  if (count == 0 || width_px <= 0 || x_px < 0 || x_px >= width_px) return std::nullopt;
  const double slot = width_px / static_cast<double>(count);
  const auto i = std::min(count - 1, static_cast<size_t>(std::floor(x_px / slot)));
  return i;
}

std::pair<double, double> zoom_range(const StepBar& bar) {
  return {bar.start_ns, std::max(bar.end_ns, bar.start_ns + 1.0)};
}

Rgba category_colour(trace::StepCategory c) {
  using C = trace::StepCategory;
  switch (c) {
    case C::kKernel:
      return rgba(76, 175, 80);
    case C::kMemcpy:
      return rgba(33, 150, 243);
    case C::kMemset:
      return rgba(0, 188, 212);
    case C::kCommunication:
      return rgba(156, 39, 176);
    case C::kRuntime:
      return rgba(255, 193, 7);
    case C::kDataLoader:
      return rgba(244, 67, 54);
    case C::kCpuExec:
      return rgba(255, 152, 0);
    case C::kOther:
      return rgba(158, 158, 158);
  }
  return rgba(158, 158, 158);
}

}  // namespace pipeprof::viewer
