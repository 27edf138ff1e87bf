// --find-max-accelerators' search (search_max_accelerators) over a scripted noisy storage: which
// probes are run again, how they are decided, and what Ctrl-C leaves.
#include "workload/accelerator_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <vector>

namespace pipeprof::harness::workload {
namespace {

// A storage whose true AU is 100 - n (threshold 90: ten accelerators meet it), measured with
// scripted noise: the k-th run at n gives 100 - n + noise[n][k] (0 once the script runs out).
struct NoisyStorage {
  std::map<int64_t, std::vector<double>> noise;
  std::map<int64_t, int> runs;
  double slope = 1;  // AU points lost per accelerator
  std::optional<ProbeRun> operator()(int64_t n) {
    const int k = runs[n]++;
    const std::vector<double>& d = noise[n];
    const double e = k < static_cast<int>(d.size()) ? d[static_cast<size_t>(k)] : 0.0;
    return ProbeRun{.au_percentage = 100.0 - slope * static_cast<double>(n) + e,
                    .throughput = 10.0 * static_cast<double>(n) + k};  // k: which run it was
  }
};

TEST(MaxAcceleratorSearch, AProbeCloseToTheThresholdIsDecidedByTheMedianOfThreeRuns) {
  // At 10 the first run dips to 89.5 (one noisy epoch), the second meets it at 90.75 and the
  // third at 90.25: the median meets it, so the search finds 10. Run once, the dip cuts it to 9.
  const std::map<int64_t, std::vector<double>> noise{{10, {-0.5, 0.75, 0.25}}};
  NoisyStorage once{.noise = noise};
  EXPECT_EQ(search_max_accelerators(64, 90, 0, std::ref(once), {}).max_accelerators, 9);

  NoisyStorage rechecked{.noise = noise};
  std::vector<Probe> seen;
  const SearchSteps s = search_max_accelerators(64, 90, kRecheckAuPoints, std::ref(rechecked),
                                                [&](const Probe& p) { seen.push_back(p); });
  EXPECT_EQ(s.max_accelerators, 10);
  EXPECT_FALSE(s.interrupted);
  ASSERT_EQ(seen.size(), s.probes.size());
  // 1, 2 and 4 are far above; 8 (AU 92) lies within 2 points and is run again; 16 is far below
  // (run twice: the first at a new highest count that fails); then the bisection: 12 (88, within 2
  // points), 10 and 11.
  std::vector<int64_t> order;
  for (const Probe& p : s.probes)
    order.push_back(p.accelerators);
  EXPECT_EQ(order, (std::vector<int64_t>{1, 2, 4, 8, 16, 12, 10, 11}));
  EXPECT_EQ(rechecked.runs[16], 2);  // far below, but a new highest count that fails: run again
  for (const Probe& p : s.probes) {
    SCOPED_TRACE(p.accelerators);
    const double au = 100.0 - static_cast<double>(p.accelerators);
    if (std::abs(au - 90) > kRecheckAuPoints && p.accelerators != 16) {
      EXPECT_EQ(p.au_runs, (std::vector<double>{au}));  // far from 90: one run
      EXPECT_EQ(rechecked.runs[p.accelerators], 1);
    }
  }
  const Probe& ten = s.probes[6];
  EXPECT_EQ(ten.au_runs, (std::vector<double>{89.5, 90.75, 90.25}));  // they disagreed: a third
  EXPECT_DOUBLE_EQ(ten.au_percentage, 90.25);
  EXPECT_DOUBLE_EQ(ten.throughput, 102);  // the third run's: its AU is the median
  EXPECT_TRUE(ten.meets);
  const Probe& eight = s.probes[3];
  EXPECT_EQ(eight.au_runs, (std::vector<double>{92, 92}));  // two that agree decide it
  EXPECT_DOUBLE_EQ(eight.throughput, 80.5);                  // their mean
  EXPECT_TRUE(eight.meets);
  const Probe& eleven = s.probes[7];
  EXPECT_EQ(eleven.au_runs, (std::vector<double>{89, 89}));
  EXPECT_FALSE(eleven.meets);
}

TEST(MaxAcceleratorSearch, TheFirstRunAtANewHighestCountIsRunAgainWhenItFails) {
  // AU 100 - n/2: twenty accelerators meet 90. The first run at 16 (the first with that many
  // loaders) loses 20 points to first touches; its next two runs give 92.
  const std::map<int64_t, std::vector<double>> noise{{16, {-20}}};
  NoisyStorage once{.noise = noise, .slope = 0.5};
  EXPECT_EQ(search_max_accelerators(64, 90, 0, std::ref(once), {}).max_accelerators, 15);

  NoisyStorage rechecked{.noise = noise, .slope = 0.5};
  const SearchSteps s = search_max_accelerators(64, 90, kRecheckAuPoints, std::ref(rechecked), {});
  EXPECT_EQ(s.max_accelerators, 20);
  std::vector<int64_t> order;
  for (const Probe& p : s.probes)
    order.push_back(p.accelerators);
  // 32 (84) is a new highest count that fails: run twice, both fail. 24 (88) and 20 (90) are
  // close to 90; 22 (89) and 21 (89.5) too; none of them is a new highest count.
  EXPECT_EQ(order, (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 24, 20, 22, 21}));
  EXPECT_EQ(s.probes[4].au_runs, (std::vector<double>{72, 92, 92}));
  EXPECT_TRUE(s.probes[4].meets);
  EXPECT_EQ(s.probes[5].au_runs, (std::vector<double>{84, 84}));
  EXPECT_FALSE(s.probes[5].meets);
  EXPECT_EQ(rechecked.runs[8], 1);  // a new highest count that meets it: once
}

TEST(MaxAcceleratorSearch, ALuckyRunCloseToTheThresholdDoesNotRaiseTheMaximum) {
  // At 11 the first run jumps to 90.25; the next two stay below: the median does not meet it.
  NoisyStorage storage{.noise = {{11, {1.25, -0.5, 0.5}}}};
  const SearchSteps s = search_max_accelerators(64, 90, kRecheckAuPoints, std::ref(storage), {});
  EXPECT_EQ(s.max_accelerators, 10);
  EXPECT_EQ(storage.runs[11], 3);
  const auto eleven = std::find_if(s.probes.begin(), s.probes.end(),
                                   [](const Probe& p) { return p.accelerators == 11; });
  ASSERT_NE(eleven, s.probes.end());
  EXPECT_FALSE(eleven->meets);
  EXPECT_DOUBLE_EQ(eleven->au_percentage, 89.5);
}

TEST(MaxAcceleratorSearch, CountsWithTooFewSamplesAndInterruptedRunsDoNotMeetIt) {
  int calls = 0;
  const SearchSteps few = search_max_accelerators(
      64, 90, kRecheckAuPoints,
      [&](int64_t n) -> std::optional<ProbeRun> {
        ++calls;
        if (n > 4) return std::nullopt;
        return ProbeRun{.au_percentage = 99};
      },
      {});
  EXPECT_EQ(few.max_accelerators, 4);
  ASSERT_FALSE(few.probes.empty());
  EXPECT_TRUE(few.probes.back().au_runs.empty());
  EXPECT_EQ(calls, 6);  // 1, 2, 4, 8, then 6 and 5 between, each once

  // Ctrl-C during the second run of the probe at 2 (close to 90: it is run again): the probe does
  // not meet it, the cut-short run's figures are left out, and the search ends.
  int runs_at_two = 0;
  const SearchSteps stopped = search_max_accelerators(
      64, 90, kRecheckAuPoints,
      [&](int64_t n) {
        const bool cut = n == 2 && ++runs_at_two == 2;
        return ProbeRun{.au_percentage = cut ? 0.0 : 90.5, .interrupted = cut};
      },
      {});
  EXPECT_TRUE(stopped.interrupted);
  EXPECT_EQ(stopped.max_accelerators, 1);
  ASSERT_EQ(stopped.probes.size(), 2u);
  EXPECT_EQ(stopped.probes[0].au_runs, (std::vector<double>{90.5, 90.5}));
  EXPECT_TRUE(stopped.probes[1].interrupted);
  EXPECT_FALSE(stopped.probes[1].meets);
  EXPECT_EQ(stopped.probes[1].au_runs, (std::vector<double>{90.5}));
  EXPECT_DOUBLE_EQ(stopped.probes[1].au_percentage, 90.5);
  EXPECT_EQ(runs_at_two, 2);

  // A run that measured no epoch does not meet even a threshold of 0.
  const SearchSteps none = search_max_accelerators(
      64, 0, kRecheckAuPoints, [](int64_t) { return ProbeRun{.measured = false}; }, {});
  EXPECT_EQ(none.max_accelerators, 0);
}

TEST(MaxAcceleratorSearch, RecheckZeroRunsEveryProbeOnceEvenOnTheThreshold) {
  NoisyStorage storage;  // AU 100 - n: exactly 90 at 10
  const SearchSteps s = search_max_accelerators(64, 90, 0, std::ref(storage), {});
  EXPECT_EQ(s.max_accelerators, 10);
  for (const auto& [n, runs] : storage.runs)
    EXPECT_EQ(runs, 1) << n;
}

}  // namespace
}  // namespace pipeprof::harness::workload
