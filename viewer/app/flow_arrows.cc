#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "rows.h"

namespace pipeprof::viewer {

// Arrows from a flow's start (launch) to its end (kernel), as curves between the two lanes' first
// nesting level, with an arrow head at the end. Level of detail: flows come in time order, and a
// flow whose ends fall within kMergePx of the last drawn one between the same rows is skipped, so
// a zoomed-out view of many thousand launches draws at most a few per pixel column; beyond
// kCurveLimit arrows, straight lines replace the curves.
void draw_flows(const RowContext& ctx) {
  constexpr size_t kMaxFlows = 20000;
  constexpr size_t kCurveLimit = 300;
  constexpr float kMergePx = 3.0f;
  const PixelWindow window = ctx.doc->window(*ctx.view);
  const auto t0 = static_cast<int64_t>(std::floor(window.t0_ns));
  const auto t1 = static_cast<int64_t>(std::ceil(window.t1_ns()));
  const Rgba colour = rgba(255, 210, 90, 200);
  const float half = ctx.layout->metrics().span_height * 0.5f;
  struct Drawn {
    size_t from_row, to_row;
    float x0, x1;
  };
  std::vector<Drawn> last;  // the last arrow drawn per pair of rows (few pairs)
  std::vector<std::pair<ImVec2, ImVec2>> arrows;
  for (const uint32_t f : ctx.doc->flows.visible(t0, t1, kMaxFlows)) {
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
    auto it = std::find_if(last.begin(), last.end(), [&](const Drawn& d) {
      return d.from_row == *from_row && d.to_row == *to_row;
    });
    if (it != last.end() && std::abs(it->x0 - p0.x) < kMergePx &&
        std::abs(it->x1 - p1.x) < kMergePx)
      continue;
    if (it == last.end()) it = last.insert(last.end(), Drawn{*from_row, *to_row, 0.0f, 0.0f});
    it->x0 = p0.x;
    it->x1 = p1.x;
    arrows.emplace_back(p0, p1);
  }
  const bool curves = arrows.size() <= kCurveLimit;
  for (const auto& [p0, p1] : arrows) {
    if (curves) {
      const float bend = std::max(20.0f, std::abs(p1.x - p0.x) * 0.3f);
      ctx.draw->AddBezierCubic(p0, ImVec2(p0.x + bend, p0.y), ImVec2(p1.x - bend, p1.y), p1, colour,
                               1.5f);
      ctx.draw->AddTriangleFilled(ImVec2(p1.x, p1.y), ImVec2(p1.x - 7.0f, p1.y - 4.0f),
                                  ImVec2(p1.x - 7.0f, p1.y + 4.0f), colour);
    } else {
      ctx.draw->AddLine(p0, p1, colour);
    }
  }
}

}  // namespace pipeprof::viewer
