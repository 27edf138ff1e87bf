#include <algorithm>

#include "rows.h"

namespace pipeprof::viewer {

// A CPU thread: its spans nested by depth, and instant events as small markers on top.
void draw_thread_lane(const RowContext& ctx, const Row& row) {
  paint_spans(ctx, row, SpanStyle{});
  const trace::Lane& lane = ctx.doc->trace.lanes[row.index];
  if (lane.instants.empty()) return;
  const PixelWindow window = ctx.doc->window(*ctx.view);
  const auto t0 = static_cast<int64_t>(window.t0_ns) - 1;
  const auto t1 = static_cast<int64_t>(window.t1_ns()) + 1;
  auto it = std::lower_bound(lane.instants.begin(), lane.instants.end(), t0,
                             [](const trace::Instant& i, int64_t t) { return i.ts_ns < t; });
  const float y = ctx.screen_y(row.y) + 1.0f;
  float last_x = -1e9f;
  for (; it != lane.instants.end() && it->ts_ns <= t1; ++it) {
    const float x = ctx.screen_x(window.to_px(static_cast<double>(it->ts_ns)));
    if (x - last_x < 2.0f) continue;  // one marker per two pixels is all the eye can see
    last_x = x;
    ctx.draw->AddTriangleFilled(ImVec2(x - 3.0f, y), ImVec2(x + 3.0f, y), ImVec2(x, y + 5.0f),
                                rgba(240, 240, 240));
  }
}

}  // namespace pipeprof::viewer
