#include <algorithm>
#include <cmath>
#include <string>

#include "rows.h"

namespace pipeprof::viewer {
namespace {

// Below this width a span shows no label; a folded run shows its count from the same width.
constexpr float kMinLabelPx = 18.0f;

void label(const RowContext& ctx, float x0, float x1, float y, float h, Rgba fill,
           std::string_view text) {
  const float l = std::max(x0, ctx.left) + 3.0f;
  const float r = std::min(x1, ctx.right) - 2.0f;
  if (r - l < 6.0f || text.empty()) return;
  ImFont* font = ImGui::GetFont();
  const float size = ImGui::GetFontSize();
  const ImVec4 clip(l, y, r, y + h);
  ctx.draw->AddText(font, size, ImVec2(l, y + (h - size) * 0.5f), text_colour_on(fill), text.data(),
                    text.data() + text.size(), 0.0f, &clip);
}

}  // namespace

void paint_spans(const RowContext& ctx, const Row& row, const SpanStyle& style) {
  if (row.index >= ctx.doc->lanes.size()) return;
  const LaneIndex& index = ctx.doc->lanes[row.index];
  const trace::Lane& lane = ctx.doc->trace.lanes[row.index];
  const PixelWindow window = ctx.doc->window(*ctx.view);
  const float h = ctx.layout->metrics().span_height - 1.0f;
  const bool filtering = ctx.filter->active();
  std::string buffer;
  for (size_t depth = 0; depth < index.depth_count(); ++depth) {
    const float y = ctx.screen_y(ctx.layout->depth_top(row, depth));
    if (y > ctx.clip_bottom || y + h < ctx.clip_top) continue;
    for (const DrawItem& item : index.items(depth, window)) {
      const float x0 =
          std::max(ctx.left - 1.0f,
                   ctx.screen_x(std::floor(window.to_px(static_cast<double>(item.start_ns)))));
      float x1 =
          std::min(ctx.right + 1.0f, ctx.screen_x(window.to_px(static_cast<double>(item.end_ns))));
      x1 = std::max(x1, x0 + 1.0f);
      if (item.folded()) {
        const Rgba fill = filtering ? dimmed(kFoldColour) : kFoldColour;
        ctx.draw->AddRectFilled(ImVec2(x0, y), ImVec2(x1, y + h), fill);
        if (x1 - x0 >= kMinLabelPx) {
          buffer = std::to_string(item.count);
          label(ctx, x0, x1, y, h, fill, buffer);
        }
        continue;
      }
      const trace::Span& span = lane.spans[item.span];
      const Rgba base = span_colour(ctx, span.name);
      const bool match = !filtering || ctx.filter->matches(span.name);
      const Rgba fill = match ? base : dimmed(base);
      ctx.draw->AddRectFilled(ImVec2(x0, y), ImVec2(x1, y + h), fill);
      if (x1 - x0 >= 4.0f) ctx.draw->AddRect(ImVec2(x0, y), ImVec2(x1, y + h), darker(fill));
      if (filtering && match)
        ctx.draw->AddRect(ImVec2(x0 - 1.0f, y - 1.0f), ImVec2(x1 + 1.0f, y + h + 1.0f),
                          rgba(255, 255, 255), 0.0f, 0, 1.5f);
      if (ctx.selected && ctx.selected->doc == ctx.doc_index && ctx.selected->lane == row.index &&
          ctx.selected->span == item.span)
        ctx.draw->AddRect(ImVec2(x0 - 1.0f, y - 1.0f), ImVec2(x1 + 1.0f, y + h + 1.0f),
                          rgba(255, 230, 0), 0.0f, 0, 2.5f);
      if (x1 - x0 >= kMinLabelPx) {
        const std::string_view name = ctx.doc->trace.name(span);
        if (style.shorten_names) {
          buffer = short_kernel_name(name);
          label(ctx, x0, x1, y, h, fill, buffer);
        } else {
          label(ctx, x0, x1, y, h, fill, name);
        }
      }
    }
  }
}

}  // namespace pipeprof::viewer
