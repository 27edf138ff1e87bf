#include "pipeprof/viewer/timeline_layout.h"

#include <algorithm>
#include <cmath>

namespace pipeprof::viewer {

TimelineLayout::TimelineLayout(const std::vector<const Document*>& docs,
                               const LayoutOptions& options)
    : metrics_(options.metrics) {
  float y = 0.0f;
  auto add = [&](RowKind kind, uint32_t doc, uint32_t process, uint32_t index, float height) {
    rows_.push_back({kind, doc, process, index, y, height});
    y += height;
  };
  lane_rows_.resize(docs.size());
  for (uint32_t d = 0; d < docs.size(); ++d) {
    const trace::Trace& t = docs[d]->trace;
    lane_rows_[d].assign(t.lanes.size(), -1);
    if (options.document_headers)
      add(RowKind::kDocumentHeader, d, 0, d, metrics_.document_header_height);
    // Counters by process (Trace::finalize() sorts them by process).
    std::vector<std::vector<uint32_t>> counters(t.processes.size());
    for (uint32_t c = 0; c < t.counters.size(); ++c) {
      if (t.counters[c].process < counters.size()) counters[t.counters[c].process].push_back(c);
    }
    for (uint32_t p = 0; p < t.processes.size(); ++p) {
      if (t.processes[p].lanes.empty() && counters[p].empty()) continue;
      add(RowKind::kProcessHeader, d, p, p, metrics_.process_header_height);
      if (options.collapsed.count({d, p}) != 0) continue;
      for (const uint32_t lane : t.processes[p].lanes) {
        const trace::Lane& l = t.lanes[lane];
        const auto levels = static_cast<float>(std::max<uint32_t>(1, l.max_depth));
        lane_rows_[d][lane] = static_cast<int32_t>(rows_.size());
        add(l.kind == trace::LaneKind::kGpuStream ? RowKind::kGpuLane : RowKind::kThreadLane, d, p,
            lane, levels * metrics_.span_height + 2.0f * metrics_.lane_padding);
      }
      for (const uint32_t c : counters[p])
        add(RowKind::kCounter, d, p, c, metrics_.counter_height);
    }
  }
  height_ = y;
}

std::optional<size_t> TimelineLayout::row_at(float y) const {
  if (rows_.empty() || y < 0.0f || y >= height_) return std::nullopt;
  const auto it = std::upper_bound(rows_.begin(), rows_.end(), y,
                                   [](float v, const Row& r) { return v < r.y; });
  return static_cast<size_t>(it - rows_.begin()) - 1;
}

std::pair<size_t, size_t> TimelineLayout::rows_between(float y0, float y1) const {
  const auto first = std::upper_bound(rows_.begin(), rows_.end(), y0,
                                      [](float v, const Row& r) { return v < r.y + r.height; });
  const auto last = std::lower_bound(rows_.begin(), rows_.end(), y1,
                                     [](const Row& r, float v) { return r.y < v; });
  const auto f = static_cast<size_t>(first - rows_.begin());
  return {f, std::max(f, static_cast<size_t>(last - rows_.begin()))};
}

float TimelineLayout::depth_top(const Row& row, size_t depth) const {
  return row.y + metrics_.lane_padding + static_cast<float>(depth) * metrics_.span_height;
}

std::optional<size_t> TimelineLayout::depth_at(const Row& row, float y) const {
  if (row.kind != RowKind::kThreadLane && row.kind != RowKind::kGpuLane) return std::nullopt;
  const float inside = y - row.y - metrics_.lane_padding;
  if (inside < 0.0f || y >= row.y + row.height - metrics_.lane_padding) return std::nullopt;
  return static_cast<size_t>(std::floor(inside / metrics_.span_height));
}

std::optional<size_t> TimelineLayout::lane_row(uint32_t doc, uint32_t lane) const {
  if (doc >= lane_rows_.size() || lane >= lane_rows_[doc].size() || lane_rows_[doc][lane] < 0)
    return std::nullopt;
  return static_cast<size_t>(lane_rows_[doc][lane]);
}

std::optional<Hit> hit_test(const TimelineLayout& layout, const std::vector<const Document*>& docs,
                            const TimeView& view, double x, float y) {
  const auto row_index = layout.row_at(y);
  if (!row_index) return std::nullopt;
  Hit hit;
  hit.row = *row_index;
  const Row& row = layout.rows()[*row_index];
  hit.depth = layout.depth_at(row, y);
  if (hit.depth && row.doc < docs.size() && x >= 0.0 && x < view.width()) {
    const Document& doc = *docs[row.doc];
    if (row.index < doc.lanes.size())
      hit.item = doc.lanes[row.index].item_at(*hit.depth, doc.window(view), x);
  }
  return hit;
}

}  // namespace pipeprof::viewer
