#include "pipeprof/results/mann_whitney.h"

#include <gtest/gtest.h>

#include <vector>

namespace pipeprof::results {
namespace {

// Reference values: scipy.stats.mannwhitneyu(x, y, alternative="two-sided") with the method the
// comment names (exact for small samples without ties, asymptotic with continuity correction
// otherwise).
TEST(MannWhitney, FullySeparatedSmallSamplesExact) {
  const std::vector<double> x{1, 2, 3, 4, 5}, y{6, 7, 8, 9, 10};
  const MannWhitney r = mann_whitney_u(x, y);
  EXPECT_TRUE(r.exact);
  EXPECT_DOUBLE_EQ(r.u1, 0);
  EXPECT_DOUBLE_EQ(r.u2, 25);
  EXPECT_NEAR(r.p, 2.0 / 252, 1e-12);  // 0.0079365
  // Symmetric in the order of the samples.
  const MannWhitney swapped = mann_whitney_u(y, x);
  EXPECT_DOUBLE_EQ(swapped.u1, 25);
  EXPECT_NEAR(swapped.p, r.p, 1e-12);
}

TEST(MannWhitney, ScipyDocumentationExample) {
  // scipy's documentation: males vs females, U1 = 17, exact p = 0.1111, asymptotic p = 0.11134.
  const std::vector<double> males{19, 22, 16, 29, 24}, females{20, 11, 17, 12};
  const MannWhitney r = mann_whitney_u(males, females);
  EXPECT_TRUE(r.exact);
  EXPECT_DOUBLE_EQ(r.u1, 17);
  EXPECT_NEAR(r.p, 0.1111111111, 1e-9);  // P(U >= 17) = 7 / 126, times two
}

TEST(MannWhitney, TiesUseTheNormalApproximationWithTieCorrection) {
  const std::vector<double> x{1, 2, 2, 3, 4}, y{2, 3, 4, 5, 5, 6};
  const MannWhitney r = mann_whitney_u(x, y);
  EXPECT_FALSE(r.exact);
  EXPECT_DOUBLE_EQ(r.u1, 5);
  EXPECT_NEAR(r.p, 0.07794691458872482, 1e-12);

  const std::vector<double> a{1, 1, 1, 2}, b{1, 2, 2, 2};
  const MannWhitney t = mann_whitney_u(a, b);
  EXPECT_DOUBLE_EQ(t.u1, 4);
  EXPECT_NEAR(t.p, 0.24706152509165807, 1e-12);
}

TEST(MannWhitney, LargerSamplesUseTheNormalApproximation) {
  std::vector<double> x, y;
  for (int i = 1; i <= 12; ++i)
    x.push_back(i);
  for (int i = 7; i <= 18; ++i)
    y.push_back(i + 0.5);  // no ties, but more than kExactMaxSize values
  const MannWhitney r = mann_whitney_u(x, y);
  EXPECT_FALSE(r.exact);
  EXPECT_DOUBLE_EQ(r.u1, 15);
  // z = (129 - 72 - 0.5) / sqrt(300), p = erfc(z / sqrt 2)
  EXPECT_NEAR(r.p, 0.0011061781840807242, 1e-12);
}

TEST(MannWhitney, IdenticalSamplesAreNotDifferent) {
  const std::vector<double> x{3, 3, 3}, y{3, 3, 3, 3};
  const MannWhitney r = mann_whitney_u(x, y);
  EXPECT_DOUBLE_EQ(r.p, 1);
  const std::vector<double> a{1, 2, 3}, b{1.5, 2.5};
  EXPECT_NEAR(mann_whitney_u(a, b).p, 1.0, 1e-12);  // U1 = 3 = n1 n2 / 2: the middle
}

TEST(MannWhitney, EmptySampleIsInvalid) {
  const std::vector<double> x{1, 2}, empty;
  const MannWhitney r = mann_whitney_u(x, empty);
  EXPECT_FALSE(r.valid);
  EXPECT_DOUBLE_EQ(r.p, 1);
}

TEST(MannWhitney, ExactAtTheSizeLimit) {
  std::vector<double> x, y;
  for (int i = 0; i < kExactMaxSize; ++i) {
    x.push_back(i);
    y.push_back(i + kExactMaxSize);
  }
  const MannWhitney r = mann_whitney_u(x, y);
  EXPECT_TRUE(r.exact);
  EXPECT_NEAR(r.p, 2.0 / 184756, 1e-15);  // 2 / C(20, 10)
}

}  // namespace
}  // namespace pipeprof::results
