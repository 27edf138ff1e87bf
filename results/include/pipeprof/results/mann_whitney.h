// The Mann-Whitney U test (Wilcoxon rank-sum): do two samples come from the same distribution?
// It compares ranks, not means, so one slow outlier repetition cannot make a difference
// significant on its own, and it assumes no distribution of the times.
//
// Rule: U1 = R1 - n1 (n1 + 1) / 2 with R1 the sum of x's ranks in the pooled sample (ties get the
// mean of their ranks); U2 = n1 n2 - U1. The two-sided p-value is
//   - exact, from the distribution of U over every arrangement of the ranks, when there are no
//     ties and both samples have at most kExactMaxSize values;
//   - otherwise the normal approximation with the tie correction of the variance and a
//     continuity correction of 0.5:  z = (max(U1, U2) - n1 n2 / 2 - 0.5) / sigma,
//     sigma^2 = n1 n2 / 12 * ((n + 1) - sum(t^3 - t) / (n (n - 1))), p = 2 P(Z >= z).
// This matches scipy.stats.mannwhitneyu(x, y, alternative="two-sided") with method="exact" or
// "asymptotic" respectively. p is capped at 1; all values equal gives p = 1.
#pragma once

#include <span>

namespace pipeprof::results {

inline constexpr int kExactMaxSize = 10;

struct MannWhitney {
  double u1 = 0;  // U of the first sample (scipy's statistic)
  double u2 = 0;  // n1 n2 - u1
  double p = 1;   // two-sided
  bool exact = false;
  bool valid = false;  // false when a sample is empty (p is then 1)
};

MannWhitney mann_whitney_u(std::span<const double> x, std::span<const double> y);

}  // namespace pipeprof::results
