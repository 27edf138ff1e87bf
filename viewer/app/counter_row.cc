#include <algorithm>
#include <cstdio>

#include "rows.h"

namespace pipeprof::viewer {

// A counter: an area graph scaled from zero (or the minimum, when negative) to the maximum, with
// its name and the range in the corner.
void draw_counter_row(const RowContext& ctx, const Row& row) {
  if (row.index >= ctx.doc->counters.size()) return;
  const CounterIndex& counter = ctx.doc->counters[row.index];
  const float top = ctx.screen_y(row.y) + 3.0f;
  const float bottom = ctx.screen_y(row.y + row.height) - 2.0f;
  const double lo = std::min(0.0, counter.min_value());
  const double hi = std::max(counter.max_value(), lo + 1e-9);
  const Rgba colour = name_colour(ctx.doc->trace.counters[row.index].name);
  const Rgba fill = blend(colour, kCanvasBackground, 0.35f);
  auto y_of = [&](double v) {
    return bottom - static_cast<float>((v - lo) / (hi - lo)) * (bottom - top);
  };
  const float zero = y_of(0.0);
  const PixelWindow window = ctx.doc->window(*ctx.view);
  for (const CounterStep& s : counter.steps(window)) {
    const float x0 = ctx.screen_x(s.x0);
    const float x1 = ctx.screen_x(s.x1);
    const float y = y_of(s.value);
    ctx.draw->AddRectFilled(ImVec2(x0, std::min(y, zero)), ImVec2(x1, std::max(y, zero)), fill);
    ctx.draw->AddLine(ImVec2(x0, y), ImVec2(x1, y), colour);
  }
  char range[64];
  std::snprintf(range, sizeof range, "max %.6g", counter.max_value());
  ctx.draw->AddText(ImVec2(ctx.left + 4.0f, top - 2.0f), rgba(200, 200, 200, 200), range);
}

}  // namespace pipeprof::viewer
