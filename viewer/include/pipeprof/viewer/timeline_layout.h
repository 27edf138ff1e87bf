// The vertical layout of the timeline: one row per process header, thread lane, GPU stream lane
// and counter, with y positions, and hit testing from a point to the span drawn there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "pipeprof/viewer/document.h"
#include "pipeprof/viewer/lane_index.h"
#include "pipeprof/viewer/time_view.h"

namespace pipeprof::viewer {

enum class RowKind : uint8_t {
  kDocumentHeader,  // a trace's title (when several traces are stacked)
  kProcessHeader,   // a process's name and pid; click to fold its lanes
  kThreadLane,      // a CPU thread's spans, nested by depth
  kGpuLane,         // a GPU stream's kernels, copies and sets
  kCounter,         // a counter's area graph
};

struct Row {
  RowKind kind = RowKind::kThreadLane;
  uint32_t doc = 0;
  uint32_t process = 0;  // the process the row belongs to (unused for document headers)
  uint32_t index = 0;    // lane index (lanes), counter index (counters), else the process
  float y = 0.0f;        // top, from the top of the timeline's content
  float height = 0.0f;
};

struct LayoutMetrics {
  float span_height = 18.0f;  // one nesting level
  float lane_padding = 3.0f;  // above and below a lane's spans
  float process_header_height = 20.0f;
  float document_header_height = 24.0f;
  float counter_height = 40.0f;
};

// Fixed placement of the timeline inside the viewer's window (screenshots rely on it): the
// toolbar on top, then the time ruler, then the rows; lane names in a column on the left.
struct ScreenMetrics {
  float toolbar_height = 34.0f;
  float ruler_height = 24.0f;
  float label_width = 200.0f;
  float timeline_top() const { return toolbar_height + ruler_height; }
};

struct LayoutOptions {
  LayoutMetrics metrics;
  bool document_headers = false;                      // on when several traces are open
  std::set<std::pair<uint32_t, uint32_t>> collapsed;  // (doc, process) whose lanes are folded
};

class TimelineLayout {
 public:
  TimelineLayout() = default;
  TimelineLayout(const std::vector<const Document*>& docs, const LayoutOptions& options);

  const std::vector<Row>& rows() const { return rows_; }
  float height() const { return height_; }
  const LayoutMetrics& metrics() const { return metrics_; }

  // The row containing content y, if any.
  std::optional<size_t> row_at(float y) const;
  // Rows [first, last) that overlap [y0, y1).
  std::pair<size_t, size_t> rows_between(float y0, float y1) const;
  // Top of nesting level `depth` in a lane row, and the level under content y.
  float depth_top(const Row& row, size_t depth) const;
  std::optional<size_t> depth_at(const Row& row, float y) const;
  // The row of a lane, if it is shown (not folded away).
  std::optional<size_t> lane_row(uint32_t doc, uint32_t lane) const;

 private:
  std::vector<Row> rows_;
  std::vector<std::vector<int32_t>> lane_rows_;  // per document, per lane: row or -1
  float height_ = 0.0f;
  LayoutMetrics metrics_;
};

// What is under a point of the timeline: a row, and in a lane the span or folded run drawn there.
struct Hit {
  size_t row = 0;
  std::optional<size_t> depth;
  std::optional<DrawItem> item;
};

// x: pixels from the timeline area's left edge; y: content y (scrolling included).
std::optional<Hit> hit_test(const TimelineLayout& layout, const std::vector<const Document*>& docs,
                            const TimeView& view, double x, float y);

}  // namespace pipeprof::viewer
