#include "pipeprof/viewer/span_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

namespace pipeprof::viewer {
namespace {

bool selected(const trace::Span& s, const SpanQuery& q) {
  if (q.name && s.name != *q.name) return false;
  if (q.filter != nullptr && !q.filter->matches(s.name)) return false;
  if (q.range && (s.start_ns < q.range->first || s.end_ns() > q.range->second)) return false;
  return true;
}

template <typename F>
void for_each_selected(const trace::Trace& trace, const SpanQuery& query, F&& f) {
  for (const trace::Lane& lane : trace.lanes) {
    auto begin = lane.spans.begin();
    auto end = lane.spans.end();
    if (query.range) {
      // Spans are in start order: skip those starting before the range or after its end.
      begin = std::lower_bound(begin, end, query.range->first,
                               [](const trace::Span& s, int64_t t) { return s.start_ns < t; });
      end = std::upper_bound(begin, end, query.range->second,
                             [](int64_t t, const trace::Span& s) { return t < s.start_ns; });
    }
    for (auto it = begin; it != end; ++it) {
      if (selected(*it, query)) f(*it);
    }
  }
}

}  // namespace

int64_t percentile(const std::vector<int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double clamped = std::clamp(p, 0.0, 100.0);
  const auto n = static_cast<double>(sorted.size());
  const auto rank = static_cast<size_t>(std::max(1.0, std::ceil(clamped / 100.0 * n)));
  return sorted[std::min(rank, sorted.size()) - 1];
}

Histogram make_histogram(const std::vector<int64_t>& sorted, size_t bins) {
  Histogram h;
  if (sorted.empty() || bins == 0) return h;
  h.lo_ns = static_cast<double>(sorted.front());
  h.hi_ns = static_cast<double>(sorted.back());
  if (h.hi_ns <= h.lo_ns) {
    h.hi_ns = h.lo_ns + 1.0;
    h.counts.assign(1, static_cast<float>(sorted.size()));
    return h;
  }
  h.counts.assign(bins, 0.0f);
  const double width = (h.hi_ns - h.lo_ns) / static_cast<double>(bins);
  for (const int64_t v : sorted) {
    auto bin = static_cast<size_t>((static_cast<double>(v) - h.lo_ns) / width);
    h.counts[std::min(bin, bins - 1)] += 1.0f;
  }
  return h;
}

SpanStats compute_stats(std::vector<int64_t> durations, size_t bins) {
  SpanStats s;
  if (durations.empty()) return s;
  std::sort(durations.begin(), durations.end());
  s.count = durations.size();
  s.total_ns = std::accumulate(durations.begin(), durations.end(), int64_t{0});
  s.min_ns = durations.front();
  s.max_ns = durations.back();
  s.mean_ns = static_cast<double>(s.total_ns) / static_cast<double>(s.count);
  s.p50_ns = percentile(durations, 50.0);
  s.p90_ns = percentile(durations, 90.0);
  s.p99_ns = percentile(durations, 99.0);
  s.histogram = make_histogram(durations, bins);
  return s;
}

std::vector<int64_t> collect_durations(const trace::Trace& trace, const SpanQuery& query) {
  std::vector<int64_t> out;
  for_each_selected(trace, query, [&](const trace::Span& s) { out.push_back(s.dur_ns); });
  return out;
}

std::vector<NameTotal> totals_by_name(const trace::Trace& trace, const SpanQuery& query) {
  std::unordered_map<trace::StrId, NameTotal> by_name;
  for_each_selected(trace, query, [&](const trace::Span& s) {
    NameTotal& t = by_name[s.name];
    t.name = s.name;
    ++t.count;
    t.total_ns += s.dur_ns;
  });
  std::vector<NameTotal> out;
  out.reserve(by_name.size());
  for (const auto& [name, total] : by_name)
    out.push_back(total);
  std::sort(out.begin(), out.end(), [](const NameTotal& a, const NameTotal& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  return out;
}

}  // namespace pipeprof::viewer
