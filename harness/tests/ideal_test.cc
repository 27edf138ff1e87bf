// The catalog's experiments through the ideal-time simulator: it must reproduce every
// zero-overhead ideal EXPERIMENTS.md prints, exactly.
#include <gtest/gtest.h>

#include "pipeprof/autotune/simulator.h"

#include "pipeprof/harness/experiment.h"
#include "pipeprof/harness/step.h"

namespace pipeprof::harness {
namespace {

using autotune::SimResult;
using autotune::simulate;

SimResult sim(const std::string& id, bool bound = false, int64_t parallelism = 2) {
  const Experiment x = find_experiment(id);
  auto step = make_step(x.step).step;
  return simulate(x.spec.document, {.step_ms = step->target_ms(),
                                    .epochs = x.epochs,
                                    .bound = bound,
                                    .autotune_parallelism = parallelism});
}

struct Expected {
  const char* id;
  double ideal_ms;  // EXPERIMENTS.md (with enough parallelism: the bound)
};

class DocumentedIdeal : public ::testing::TestWithParam<Expected> {};

TEST_P(DocumentedIdeal, BoundEqualsThePrintedIdeal) {
  const SimResult r = sim(GetParam().id, /*bound=*/true);
  ASSERT_TRUE(r.supported) << r.reason;
  EXPECT_DOUBLE_EQ(r.total_ms, GetParam().ideal_ms);
}

TEST_P(DocumentedIdeal, CatalogCarriesThePrintedIdeal) {
  const Experiment x = find_experiment(GetParam().id);
  ASSERT_TRUE(x.documented_ideal_ms.has_value());
  EXPECT_DOUBLE_EQ(*x.documented_ideal_ms, GetParam().ideal_ms);
}

INSTANTIATE_TEST_SUITE_P(
    ExperimentsMd, DocumentedIdeal,
    ::testing::Values(Expected{"naive", 210}, Expected{"prefetch", 170},
                      Expected{"interleave_sequential", 170}, Expected{"interleave_parallel", 110},
                      Expected{"interleave_sequential_3", 420},
                      Expected{"interleave_parallel_3", 210}, Expected{"map_sequential", 390},
                      Expected{"map_parallel", 230}, Expected{"cache", 315},
                      Expected{"map_scalar", 0}, Expected{"map_vectorized", 0}),
    [](const auto& param_info) { return std::string(param_info.param.id); });

TEST(CatalogIdeal, IdealUsesTheKnobsStartingValues) {
  // Two map workers: the third read waits until the consumer takes the first result at 75 ms,
  // so each epoch ends at 130 instead of 115.
  EXPECT_DOUBLE_EQ(sim("map_parallel", false, 2).total_ms, 260);
  EXPECT_DOUBLE_EQ(sim("map_parallel", false, 3).total_ms, 230);
  // One worker: each read waits for the consumer to take the previous result (75, 120, 165).
  EXPECT_DOUBLE_EQ(sim("map_parallel", false, 1).total_ms, 2 * 175);
  // Without knobs, ideal and bound agree.
  EXPECT_DOUBLE_EQ(sim("naive", false).total_ms, 210);
  EXPECT_DOUBLE_EQ(sim("cache", false).total_ms, 315);
}

}  // namespace
}  // namespace pipeprof::harness
