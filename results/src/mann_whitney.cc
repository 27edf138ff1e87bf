#include "pipeprof/results/mann_whitney.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace pipeprof::results {
namespace {

// Number of arrangements of n1 x-values and n2 y-values with each U = 0 .. n1 n2, by the
// recurrence f(n1, n2, u) = f(n1 - 1, n2, u - n2) + f(n1, n2 - 1, u) (the largest value is an x,
// beating all n2 y-values, or a y). Counts fit a double exactly for n1, n2 <= kExactMaxSize.
std::vector<double> u_counts(int n1, int n2) {
  // table[a][b] = counts for sizes (a, b), built up in b for each a.
  std::vector<std::vector<std::vector<double>>> table(n1 + 1,
                                                      std::vector<std::vector<double>>(n2 + 1));
  for (int a = 0; a <= n1; ++a) {
    for (int b = 0; b <= n2; ++b) {
      std::vector<double>& f = table[a][b];
      f.assign(static_cast<size_t>(a * b + 1), 0.0);
      if (a == 0 || b == 0) {
        f[0] = 1;
        continue;
      }
      const auto& drop_x = table[a - 1][b];
      const auto& drop_y = table[a][b - 1];
      for (size_t u = 0; u < f.size(); ++u) {
        if (u >= static_cast<size_t>(b) && u - b < drop_x.size()) f[u] += drop_x[u - b];
        if (u < drop_y.size()) f[u] += drop_y[u];
      }
    }
  }
  return table[n1][n2];
}

}  // namespace

MannWhitney mann_whitney_u(std::span<const double> x, std::span<const double> y) {
  MannWhitney r;
  const size_t n1 = x.size(), n2 = y.size();
  if (n1 == 0 || n2 == 0) return r;
  r.valid = true;

  // Pooled sample, sorted, with mean ranks for ties.
  std::vector<std::pair<double, bool>> pooled;  // (value, from x)
  pooled.reserve(n1 + n2);
  for (double v : x)
    pooled.emplace_back(v, true);
  for (double v : y)
    pooled.emplace_back(v, false);
  std::sort(pooled.begin(), pooled.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  const size_t n = pooled.size();
  double rank_sum_x = 0, tie_term = 0;
  bool ties = false;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && pooled[j].first == pooled[i].first)
      ++j;
    const double t = static_cast<double>(j - i);
    const double mean_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (size_t k = i; k < j; ++k)
      if (pooled[k].second) rank_sum_x += mean_rank;
    if (t > 1) {
      ties = true;
      tie_term += t * t * t - t;
    }
    i = j;
  }
  const double dn1 = static_cast<double>(n1), dn2 = static_cast<double>(n2);
  r.u1 = rank_sum_x - dn1 * (dn1 + 1) / 2;
  r.u2 = dn1 * dn2 - r.u1;
  const double u_max = std::max(r.u1, r.u2);

  if (!ties && n1 <= static_cast<size_t>(kExactMaxSize) &&
      n2 <= static_cast<size_t>(kExactMaxSize)) {
    r.exact = true;
    const std::vector<double> counts = u_counts(static_cast<int>(n1), static_cast<int>(n2));
    const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
    // P(U >= u_max); u_max is an integer without ties.
    double tail = 0;
    for (size_t u = static_cast<size_t>(std::llround(u_max)); u < counts.size(); ++u)
      tail += counts[u];
    r.p = std::min(1.0, 2 * tail / total);
    return r;
  }

  const double dn = static_cast<double>(n);
  const double mu = dn1 * dn2 / 2;
  const double variance = dn1 * dn2 / 12 * ((dn + 1) - tie_term / (dn * (dn - 1)));
  if (variance <= 0) {  // every value equal
    r.p = 1;
    return r;
  }
  const double z = (u_max - mu - 0.5) / std::sqrt(variance);
  r.p = std::clamp(std::erfc(z / std::sqrt(2.0)), 0.0, 1.0);  // 2 * P(Z >= z)
  return r;
}

}  // namespace pipeprof::results
