// Painters of the timeline's rows, one per kind of row (thread lane, GPU lane, counter, headers),
// and what they share: the frame's drawing context and the span painter of the lanes.
#pragma once

#include <imgui.h>

#include <optional>
#include <string>
#include <vector>

#include "pipeprof/viewer/document.h"
#include "pipeprof/viewer/name_filter.h"
#include "pipeprof/viewer/palette.h"
#include "pipeprof/viewer/timeline_layout.h"

namespace pipeprof::viewer {

// A span picked by the user: document, lane and index into the lane's spans.
struct SpanRef {
  uint32_t doc = 0;
  uint32_t lane = 0;
  uint32_t span = 0;
  bool operator==(const SpanRef&) const = default;
};

// What every row painter needs for one frame.
struct RowContext {
  ImDrawList* draw = nullptr;
  const Document* doc = nullptr;
  uint32_t doc_index = 0;
  const TimeView* view = nullptr;
  const TimelineLayout* layout = nullptr;
  const NameFilter* filter = nullptr;          // prepared on doc's strings
  const std::vector<Rgba>* colours = nullptr;  // per string id of doc
  std::optional<SpanRef> selected;
  ImVec2 origin;   // screen position of time 0 of the view (x) and of content y 0 (y)
  float left = 0;  // screen x range of the timeline area
  float right = 0;
  float clip_top = 0;  // screen y range visible
  float clip_bottom = 0;
  float screen_y(float content_y) const { return origin.y + content_y; }
  float screen_x(double px) const { return origin.x + static_cast<float>(px); }
};

// The colour of a span's name (palette entry by hash of the name).
inline Rgba span_colour(const RowContext& ctx, trace::StrId name) {
  return name < ctx.colours->size() ? (*ctx.colours)[name] : name_colour("");
}

// Spans of a lane, depth by depth, with level of detail: the shared body of thread and GPU lanes.
// `label` shortens a name for display (GPU kernels drop their template arguments).
struct SpanStyle {
  bool shorten_names = false;
};
void paint_spans(const RowContext& ctx, const Row& row, const SpanStyle& style);

void draw_thread_lane(const RowContext& ctx, const Row& row);
void draw_gpu_lane(const RowContext& ctx, const Row& row);
void draw_counter_row(const RowContext& ctx, const Row& row);
void draw_process_header(const RowContext& ctx, const Row& row, bool collapsed);
void draw_document_header(const RowContext& ctx, const Row& row);

// The name shown in the label column for a row.
std::string row_label(const Document& doc, const Row& row);
// A display form of a kernel name: "void ns::kernel<...>(args)" -> "ns::kernel".
std::string short_kernel_name(std::string_view name);

// Flow arrows between lanes for the visible time window.
void draw_flows(const RowContext& ctx);

}  // namespace pipeprof::viewer
