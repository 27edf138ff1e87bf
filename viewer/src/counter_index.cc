#include "pipeprof/viewer/counter_index.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace pipeprof::viewer {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

int64_t clamp_ns(double t) {
  constexpr double kMax = 9.0e18;
  if (!(t > -kMax)) return -static_cast<int64_t>(kMax);
  if (!(t < kMax)) return static_cast<int64_t>(kMax);
  return static_cast<int64_t>(std::floor(t));
}

}  // namespace

CounterIndex::CounterIndex(const trace::Counter& counter) {
  ts_.reserve(counter.points.size());
  values_.reserve(counter.points.size());
  for (const auto& [ts, value] : counter.points) {
    ts_.push_back(ts);
    values_.push_back(std::isfinite(value) ? value : 0.0);
  }
  if (!std::is_sorted(ts_.begin(), ts_.end())) {
    std::vector<size_t> order(ts_.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return ts_[a] < ts_[b]; });
    std::vector<int64_t> ts;
    std::vector<double> values;
    for (const size_t i : order) {
      ts.push_back(ts_[i]);
      values.push_back(values_[i]);
    }
    ts_ = std::move(ts);
    values_ = std::move(values);
  }
  const size_t n = values_.size();
  tree_.assign(2 * n, kNaN);
  for (size_t i = 0; i < n; ++i)
    tree_[n + i] = values_[i];
  for (size_t i = n; i-- > 1;)
    tree_[i] = std::max(tree_[2 * i], tree_[2 * i + 1]);
  if (n > 0) {
    min_ = *std::min_element(values_.begin(), values_.end());
    max_ = *std::max_element(values_.begin(), values_.end());
  }
}

double CounterIndex::value_at(int64_t t_ns) const {
  const auto it = std::upper_bound(ts_.begin(), ts_.end(), t_ns);
  if (it == ts_.begin()) return kNaN;
  return values_[static_cast<size_t>(it - ts_.begin()) - 1];
}

double CounterIndex::range_max(size_t first, size_t last) const {
  const size_t n = values_.size();
  last = std::min(last, n);
  if (first >= last) return kNaN;
  double best = -std::numeric_limits<double>::infinity();
  for (size_t l = first + n, r = last + n; l < r; l >>= 1, r >>= 1) {
    if (l & 1) best = std::max(best, tree_[l++]);
    if (r & 1) best = std::max(best, tree_[--r]);
  }
  return best;
}

std::vector<CounterStep> CounterIndex::steps(const PixelWindow& window) const {
  std::vector<CounterStep> out;
  if (ts_.empty() || !(window.ns_per_px > 0.0)) return out;
  const auto columns = static_cast<int64_t>(std::ceil(window.width_px));
  // First column at which the counter has a value.
  int64_t column = std::max<int64_t>(
      0, static_cast<int64_t>(std::floor(window.to_px(static_cast<double>(ts_.front())))));
  auto push = [&](double x0, double x1, double value) {
    if (!out.empty() && out.back().value == value && out.back().x1 >= x0) {
      out.back().x1 = x1;
    } else {
      out.push_back({x0, x1, value});
    }
  };
  while (column < columns) {
    const auto c0 = clamp_ns(window.t0_ns + static_cast<double>(column) * window.ns_per_px);
    const auto c1 = clamp_ns(window.t0_ns + static_cast<double>(column + 1) * window.ns_per_px);
    const auto a = static_cast<size_t>(std::lower_bound(ts_.begin(), ts_.end(), c0) - ts_.begin());
    const auto b = static_cast<size_t>(std::lower_bound(ts_.begin(), ts_.end(), c1) - ts_.begin());
    // The value held when the column starts, unless a point replaces it right at the start.
    double value = a > 0 && (a == b || ts_[a] > c0) ? values_[a - 1] : kNaN;
    if (b > a) value = std::isnan(value) ? range_max(a, b) : std::max(value, range_max(a, b));
    if (b == a) {
      // No point in this column: the value holds until the next point; jump there at once.
      const int64_t next_column =
          b < ts_.size()
              ? static_cast<int64_t>(std::floor(window.to_px(static_cast<double>(ts_[b]))))
              : columns;
      const int64_t until = std::clamp<int64_t>(next_column, column + 1, columns);
      if (!std::isnan(value)) push(static_cast<double>(column), static_cast<double>(until), value);
      column = until;
      continue;
    }
    push(static_cast<double>(column), static_cast<double>(column + 1), value);
    ++column;
  }
  return out;
}

FlowIndex::FlowIndex(std::span<const trace::Flow> flows) {
  order_.resize(flows.size());
  for (size_t i = 0; i < flows.size(); ++i)
    order_[i] = static_cast<uint32_t>(i);
  auto lo = [&](uint32_t i) { return std::min(flows[i].from_ns, flows[i].to_ns); };
  auto hi = [&](uint32_t i) { return std::max(flows[i].from_ns, flows[i].to_ns); };
  std::stable_sort(order_.begin(), order_.end(),
                   [&](uint32_t a, uint32_t b) { return lo(a) < lo(b); });
  lo_.reserve(order_.size());
  hi_.reserve(order_.size());
  max_hi_.reserve(order_.size());
  for (const uint32_t i : order_) {
    lo_.push_back(lo(i));
    hi_.push_back(hi(i));
    max_hi_.push_back(max_hi_.empty() ? hi(i) : std::max(max_hi_.back(), hi(i)));
  }
}

std::vector<uint32_t> FlowIndex::visible(int64_t t0_ns, int64_t t1_ns, size_t limit) const {
  std::vector<uint32_t> out;
  const auto first = static_cast<size_t>(std::lower_bound(max_hi_.begin(), max_hi_.end(), t0_ns) -
                                         max_hi_.begin());
  const auto last =
      static_cast<size_t>(std::upper_bound(lo_.begin(), lo_.end(), t1_ns) - lo_.begin());
  for (size_t i = first; i < last && out.size() < limit; ++i) {
    if (hi_[i] >= t0_ns) out.push_back(order_[i]);
  }
  return out;
}

}  // namespace pipeprof::viewer
