#include <cmath>

#include "rows.h"

namespace pipeprof::viewer {

// Arrows from a flow's start (launch) to its end (kernel), as curves between the two lanes' first
// nesting level, with an arrow head at the end. At most kMaxArrows per frame.
void draw_flows(const RowContext& ctx) {
  constexpr size_t kMaxArrows = 4000;
  const PixelWindow window = ctx.doc->window(*ctx.view);
  const auto t0 = static_cast<int64_t>(std::floor(window.t0_ns));
  const auto t1 = static_cast<int64_t>(std::ceil(window.t1_ns()));
  const Rgba colour = rgba(255, 210, 90, 200);
  const float half = ctx.layout->metrics().span_height * 0.5f;
  for (const uint32_t f : ctx.doc->flows.visible(t0, t1, kMaxArrows)) {
    const trace::Flow& flow = ctx.doc->trace.flows[f];
    const auto from_row = ctx.layout->lane_row(ctx.doc_index, flow.from_lane);
    const auto to_row = ctx.layout->lane_row(ctx.doc_index, flow.to_lane);
    if (!from_row || !to_row) continue;
    const Row& a = ctx.layout->rows()[*from_row];
    const Row& b = ctx.layout->rows()[*to_row];
    const ImVec2 p0(ctx.screen_x(window.to_px(static_cast<double>(flow.from_ns))),
                    ctx.screen_y(ctx.layout->depth_top(a, 0) + half));
    const ImVec2 p1(ctx.screen_x(window.to_px(static_cast<double>(flow.to_ns))),
                    ctx.screen_y(ctx.layout->depth_top(b, 0) + half));
    if (std::max(p0.y, p1.y) < ctx.clip_top || std::min(p0.y, p1.y) > ctx.clip_bottom) continue;
    const float bend = std::max(20.0f, std::abs(p1.x - p0.x) * 0.3f);
    ctx.draw->AddBezierCubic(p0, ImVec2(p0.x + bend, p0.y), ImVec2(p1.x - bend, p1.y), p1, colour,
                             1.5f);
    ctx.draw->AddTriangleFilled(ImVec2(p1.x, p1.y), ImVec2(p1.x - 7.0f, p1.y - 4.0f),
                                ImVec2(p1.x - 7.0f, p1.y + 4.0f), colour);
  }
}

}  // namespace pipeprof::viewer
