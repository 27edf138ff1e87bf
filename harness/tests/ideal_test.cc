// The catalog's experiments through the ideal-time simulator: it must reproduce every
// zero-overhead ideal EXPERIMENTS.md prints, exactly; part B's follows the process sources' model,
// and is never above what a run measures.
#include <gtest/gtest.h>

#include "pipeprof/autotune/simulator.h"

#include "pipeprof/harness/experiment.h"
#include "pipeprof/harness/runner.h"
#include "pipeprof/harness/step.h"
#include "pipeprof/pipelines/spec.h"

namespace pipeprof::harness {
namespace {

using autotune::SimResult;
using autotune::simulate;

SimResult sim(const std::string& id, bool bound = false, int64_t parallelism = 2,
              const MachineRates& rates = {}) {
  const Experiment x = find_experiment(id);
  auto step = make_step(x.step).step;
  return simulate(x.spec.document, {.step_ms = step->target_ms(),
                                    .epochs = x.epochs,
                                    .bound = bound,
                                    .autotune_parallelism = parallelism,
                                    .rates = rates});
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

// Part B with the machine's rates fixed (memcpy 10 GB/s, fill 1 GB/s, socket receive 5 GB/s,
// first writes into a store 2 GB/s): an item is 48 000 016 bytes, filled in 48.000016 ms after its
// 500 ms fetch, copied in 4.8000016 ms (24.000008 ms into pages never written before), received
// through a socket in 9.6000032 ms.
TEST(CatalogIdeal, PartBFollowsTheProcessSourcesModel) {
  const double fetch_fill = 500 + 48.000016, first_write = 24.000008, receive = 9.6000032;
  const MachineRates all{.memcpy_gb_per_s = 10,
                         .fill_gb_per_s = 1,
                         .socket_gb_per_s = 5,
                         .store_first_write_gb_per_s = 2};
  auto without = [&](double MachineRates::*rate) {
    MachineRates r = all;
    r.*rate = 0;
    return r;
  };
  for (const char* id : {"generator", "multiprocess", "shared_store"}) {
    const SimResult r = sim(id, false, 2, all);
    ASSERT_TRUE(r.supported) << id << ": " << r.reason;
    // Without the measured rates there is no ideal, and the simulator says it needs them.
    const SimResult unmeasured = sim(id);
    EXPECT_FALSE(unmeasured.supported) << id;
    EXPECT_TRUE(unmeasured.needs_rates) << id << ": " << unmeasured.reason;
  }
  // One producer behind a prefetch: its items, then the last step.
  EXPECT_NEAR(sim("generator", false, 2, all).total_ms, 10 * fetch_fill + 100, 1e-6);
  // multiprocess needs the socket's receive rate, not the store's rates; shared_store the
  // reverse: memcpy, and the first writes into its fresh pages.
  const SimResult no_socket =
      sim("multiprocess", false, 2, without(&MachineRates::socket_gb_per_s));
  EXPECT_TRUE(no_socket.needs_rates);
  EXPECT_NE(no_socket.reason.find("socket receive rate"), std::string::npos) << no_socket.reason;
  EXPECT_TRUE(sim("multiprocess", false, 2,
                  without(&MachineRates::store_first_write_gb_per_s)).supported);
  EXPECT_TRUE(sim("shared_store", false, 2, without(&MachineRates::socket_gb_per_s)).supported);
  const SimResult no_memcpy =
      sim("shared_store", false, 2, without(&MachineRates::memcpy_gb_per_s));
  EXPECT_TRUE(no_memcpy.needs_rates);
  EXPECT_EQ(no_memcpy.needed_rate, "memcpy_gb_per_s");
  const SimResult no_first =
      sim("shared_store", false, 2, without(&MachineRates::store_first_write_gb_per_s));
  EXPECT_TRUE(no_first.needs_rates);
  EXPECT_EQ(no_first.needed_rate, "store_first_write_gb_per_s");
  EXPECT_NE(no_first.reason.find("never written before"), std::string::npos) << no_first.reason;
  // Eight producers of 10 items outrun a 100 ms step: after the first item, the consumer binds,
  // paying its receive out of the socket (multiprocess) or nothing (shared_store, whose producer
  // wrote the item into the store before the consumer could take it). shared_store's first item
  // is written into pages no process has written before.
  const SimResult mp = sim("multiprocess", false, 2, all);
  EXPECT_EQ(mp.elements, 80);
  EXPECT_NEAR(mp.total_ms, fetch_fill + 80 * (100 + receive), 1e-6);
  EXPECT_NEAR(sim("shared_store", false, 2, all).total_ms, fetch_fill + first_write + 80 * 100,
              1e-6);
}

// Ideal <= measured, the premise of efficiency: part B's experiments scaled down (two producers of
// three 480 kB items after a 30 ms fetch, a 10 ms step), run once each with the rates measured in
// the same run. Their efficiency is at most 1 (within 2%) and not trivially small.
TEST(CatalogIdeal, PartBIdealIsNeverAboveTheMeasuredTime) {
  for (const char* id : {"generator", "multiprocess", "shared_store"}) {
    Experiment x = find_experiment(id);
    nlohmann::json doc = x.spec.document;
    nlohmann::json& source = doc["stages"][0];
    nlohmann::json& generator =
        source.contains("pipeline") ? source["pipeline"]["stages"][0] : source;
    ASSERT_EQ(generator["fn"], "random_tensors") << id;
    generator["args"] = {{"count", 3}, {"shapes", {{4, 10000, 3}, {4, 1}}}, {"delay_ms", 30}};
    if (source.contains("producers")) {
      source["producers"] = 2;
      source["queue_capacity"] = 2;
    }
    if (source.contains("store_mb")) source["store_mb"] = 16;
    x.spec = pipelines::parse_spec(doc, id);
    x.step = "sleep:10";
    const ExperimentResult r = run_experiment(x, {.repetitions = 1});
    ASSERT_TRUE(r.ideal_ms.has_value()) << id << ": " << r.simulation_note;
    ASSERT_TRUE(r.efficiency.has_value()) << id;
    EXPECT_GT(r.rates.fill_gb_per_s, 0) << id;
    // A rate is measured where the ideal needs it: the socket's receive for multiprocess only,
    // the first writes into a store for shared_store only, the memcpy bandwidth for the process
    // sources (their transport's floor) only.
    EXPECT_EQ(r.rates.socket_gb_per_s > 0, std::string(id) == "multiprocess") << id;
    EXPECT_EQ(r.rates.store_first_write_gb_per_s > 0, std::string(id) == "shared_store") << id;
    EXPECT_EQ(r.rates.memcpy_gb_per_s > 0, std::string(id) != "generator") << id;
    EXPECT_LE(*r.efficiency, 1.02) << id << ": ideal " << *r.ideal_ms << " ms, measured "
                                   << r.median_wall_ms << " ms";
    EXPECT_GT(*r.efficiency, 0.2) << id;
    EXPECT_TRUE(r.ideal_wait_ms.has_value()) << id;
  }
}

}  // namespace
}  // namespace pipeprof::harness
