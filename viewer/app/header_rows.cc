#include <string>

#include "rows.h"

namespace pipeprof::viewer {

void draw_process_header(const RowContext& ctx, const Row& row, bool collapsed) {
  const float y0 = ctx.screen_y(row.y);
  ctx.draw->AddRectFilled(ImVec2(ctx.left, y0), ImVec2(ctx.right, y0 + row.height),
                          rgba(48, 52, 60));
  ctx.draw->AddLine(ImVec2(ctx.left, y0), ImVec2(ctx.right, y0), rgba(80, 86, 98));
  if (collapsed) {
    ctx.draw->AddText(ImVec2(ctx.left + 6.0f, y0 + 3.0f), rgba(170, 170, 170),
                      "(folded: click the name to show its lanes)");
  }
}

void draw_document_header(const RowContext& ctx, const Row& row) {
  const float y0 = ctx.screen_y(row.y);
  ctx.draw->AddRectFilled(ImVec2(ctx.left - 400.0f, y0), ImVec2(ctx.right, y0 + row.height),
                          rgba(70, 60, 100));
  const std::string text = ctx.doc->title + "  (" + format_duration(ctx.doc->duration_ns()) + ")";
  ctx.draw->AddText(ImVec2(ctx.left + 6.0f, y0 + 4.0f), rgba(255, 255, 255), text.c_str());
}

std::string row_label(const Document& doc, const Row& row) {
  const trace::Trace& t = doc.trace;
  switch (row.kind) {
    case RowKind::kDocumentHeader:
      return doc.title;
    case RowKind::kProcessHeader: {
      const trace::Process& p = t.processes[row.index];
      return (p.name.empty() ? "process" : p.name) + " (pid " + std::to_string(p.pid) + ")";
    }
    case RowKind::kThreadLane: {
      const trace::Lane& l = t.lanes[row.index];
      return l.name.empty() ? "thread " + std::to_string(l.tid) : l.name;
    }
    case RowKind::kGpuLane: {
      const trace::Lane& l = t.lanes[row.index];
      return l.name.empty()
                 ? "GPU " + std::to_string(l.device) + " stream " + std::to_string(l.stream)
                 : l.name;
    }
    case RowKind::kCounter:
      return t.counters[row.index].name;
  }
  return {};
}

}  // namespace pipeprof::viewer
