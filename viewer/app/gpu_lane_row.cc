#include "rows.h"

namespace pipeprof::viewer {

// A GPU stream: a tinted background (GPU rows stand apart from CPU threads) and kernels, copies
// and sets labelled with short kernel names.
void draw_gpu_lane(const RowContext& ctx, const Row& row) {
  const float y0 = ctx.screen_y(row.y);
  ctx.draw->AddRectFilled(ImVec2(ctx.left, y0), ImVec2(ctx.right, y0 + row.height),
                          rgba(36, 42, 38));
  paint_spans(ctx, row, SpanStyle{.shorten_names = true});
}

std::string short_kernel_name(std::string_view name) {
  if (name.substr(0, 5) == "void ") name.remove_prefix(5);
  // Cut at the first '<' or '(' that is not part of "(anonymous namespace)".
  size_t cut = std::string_view::npos;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '<') {
      cut = i;
      break;
    }
    if (name[i] == '(') {
      if (name.substr(i, 21) == "(anonymous namespace)") {
        i += 20;
        continue;
      }
      cut = i;
      break;
    }
  }
  return std::string(name.substr(0, cut));
}

}  // namespace pipeprof::viewer
