// The ideal-time simulator on small specs: the timing rules of the operations, what it refuses to
// guess, and that every registered operation's rule follows the real operation's element
// semantics (the same elements, counted, for the same spec).
#include "pipeprof/autotune/simulator.h"

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "pipeprof/pipelines/registry.h"
#include "pipeprof/pipelines/spec.h"

namespace pipeprof::autotune {
namespace {

TEST(Simulator, PrefetchBufferBoundsHowFarTheProducerRuns) {
  const nlohmann::json p = {
      {"stages",
       {{{"op", "artificial"}, {"open_ms", 0}, {"read_ms", 10}, {"num_samples", 4}},
        {{"op", "prefetch"}, {"buffer_size", 1}}}}};
  // Reads take 10, steps 30: with one slot the producer stays at most one element ahead.
  // Element k is read in [10k', ...] and the consumer is the bottleneck: 10 + 4 x 30.
  EXPECT_DOUBLE_EQ(simulate(p, {.step_ms = 30, .epochs = 1}).total_ms, 130);
  // Reads slower than steps: the reads are the bottleneck, 4 x 40 + 5.
  const nlohmann::json slow = {
      {"stages",
       {{{"op", "artificial"}, {"open_ms", 0}, {"read_ms", 40}, {"num_samples", 4}},
        {{"op", "prefetch"}, {"buffer_size", 1}}}}};
  EXPECT_DOUBLE_EQ(simulate(slow, {.step_ms = 5, .epochs = 1}).total_ms, 165);
}

TEST(Simulator, ElementsAndEpochsAreCounted) {
  const nlohmann::json p = {
      {"stages", {{{"op", "range"}, {"stop", 10}}, {{"op", "batch"}, {"batch_size", 4}}}}};
  const SimResult r = simulate(p, {.step_ms = 1, .epochs = 3});
  ASSERT_TRUE(r.supported);
  EXPECT_EQ(r.elements, 9);  // 3 batches per epoch
  EXPECT_DOUBLE_EQ(r.total_ms, 9);
}

TEST(Simulator, UnknownLatenciesAreUnsupportedNotGuessed) {
  const nlohmann::json p = {{"stages",
                             {{{"op", "range"}, {"stop", 3}},
                              {{"op", "map"}, {"fn", "fill_random"}, {"args", {{"shape", {4}}}}}}}};
  const SimResult r = simulate(p, {.step_ms = 1, .epochs = 1});
  EXPECT_FALSE(r.supported);
  EXPECT_NE(r.reason.find("fill_random"), std::string::npos) << r.reason;

  const nlohmann::json few_workers = {
      {"stages",
       {{{"op", "range"}, {"stop", 4}},
        {{"op", "interleave"},
         {"cycle_length", 4},
         {"parallelism", 2},
         {"pipeline", {{"stages", {{{"op", "artificial"}, {"num_samples", 1}}}}}}}}}};
  const SimResult fw = simulate(few_workers, {.step_ms = 1, .epochs = 1});
  EXPECT_FALSE(fw.supported);
  EXPECT_NE(fw.reason.find("fewer workers"), std::string::npos) << fw.reason;
}

TEST(Simulator, RepeatOfAnEmptyInputStopsAfterOnePassLikeTheRealOne) {
  const nlohmann::json p = {{"stages",
                             {{{"op", "artificial"}, {"open_ms", 50}, {"num_samples", 0}},
                              {{"op", "repeat"}, {"count", 5}}}}};
  EXPECT_DOUBLE_EQ(simulate(p, {.step_ms = 1, .epochs = 1}).total_ms, 50);
}

TEST(Simulator, HugeRangesAreLazy) {
  const nlohmann::json p = {
      {"stages", {{{"op", "range"}, {"stop", int64_t{1} << 62}}, {{"op", "take"}, {"count", 3}}}}};
  const SimResult r = simulate(p, {.step_ms = 2, .epochs = 1});
  ASSERT_TRUE(r.supported) << r.reason;
  EXPECT_EQ(r.elements, 3);
}

TEST(Simulator, FilterTakeSkipShardFollowValues) {
  const nlohmann::json p = {
      {"stages",
       {{{"op", "range"}, {"stop", 20}},
        {{"op", "filter"}, {"predicate", "less_than"}, {"args", {{"value", 10}}}},
        {{"op", "shard"}, {"num_shards", 3}, {"index", 1}},
        {{"op", "skip"}, {"count", 1}},
        {{"op", "take"}, {"count", 5}}}}};
  // range(20) -> 0..9 -> 1,4,7 -> 4,7
  EXPECT_EQ(simulate(p, {.step_ms = 1, .epochs = 1}).elements, 2);
}


TEST(Simulator, EveryRegisteredOperationHasARule) {
  for (const pipelines::OpRegistration* op : pipelines::registered_ops()) {
    EXPECT_TRUE(static_cast<bool>(op->simulate)) << op->name;
    EXPECT_TRUE(static_cast<bool>(op->build)) << op->name;
    EXPECT_FALSE(op->summary.empty()) << op->name;
  }
}

// The simulator counts the elements the real pipeline yields, for specs that use every operation
// with a simulation rule (and every predicate and element function with a known timing).
class SameElementsAsTheRealPipeline : public ::testing::TestWithParam<const char*> {};

TEST_P(SameElementsAsTheRealPipeline, Counted) {
  const nlohmann::json spec = nlohmann::json::parse(GetParam());
  const int64_t real =
      static_cast<int64_t>(pipelines::parse_pipeline(spec, "<test>").collect().size());
  // Rates as if measured (process sources copy or receive, random_tensors fill); any positive
  // value counts.
  const SimResult r = simulate(spec, {.step_ms = 1,
                                      .epochs = 1,
                                      .rates = {.memcpy_gb_per_s = 10,
                                                .fill_gb_per_s = 1,
                                                .socket_gb_per_s = 10,
                                                .store_first_write_gb_per_s = 1}});
  ASSERT_TRUE(r.supported) << r.reason;
  EXPECT_EQ(r.elements, real) << GetParam();
}

constexpr const char* kRange = R"({"op": "range", "start": -7, "stop": 23, "step": 2})";

std::string chain(const std::string& source, const std::string& stage) {
  return R"({"stages": [)" + source + ", " + stage + "]}";
}

const std::vector<std::string>& specs() {
  static const std::vector<std::string> kSpecs{
      chain(kRange, R"({"op": "filter", "predicate": "less_than", "args": {"value": 5}})"),
      chain(kRange, R"({"op": "filter", "predicate": "greater_than", "args": {"value": 5}})"),
      chain(kRange, R"({"op": "filter", "predicate": "equal", "args": {"value": 5}})"),
      chain(kRange, R"({"op": "filter", "predicate": "not_equal", "args": {"value": 5}})"),
      chain(kRange,
            R"({"op": "filter", "predicate": "modulo_equals", "args": {"modulus": 3, "remainder": 1}})"),
      R"({"stages": [{"op": "range", "stop": 10}, {"op": "map", "fn": "increment"},
                     {"op": "map", "fn": "identity", "parallelism": 2},
                     {"op": "filter", "predicate": "modulo_equals", "args": {"modulus": 2}}]})",
      chain(kRange, R"({"op": "shard", "num_shards": 4, "index": 3})"),
      chain(kRange, R"({"op": "skip", "count": 4})"),
      chain(kRange, R"({"op": "skip", "count": -1})"),
      chain(kRange, R"({"op": "take", "count": 4})"),
      chain(kRange, R"({"op": "repeat", "count": 3})"),
      chain(kRange, R"({"op": "batch", "batch_size": 4})"),
      chain(kRange, R"({"op": "batch", "batch_size": 4, "drop_remainder": true})"),
      chain(kRange, R"({"op": "map_and_batch", "fn": "increment", "batch_size": 4})"),
      chain(kRange, R"({"op": "map_and_batch", "fn": "sleep_ms", "args": {"ms": 0.1},
                        "batch_size": 4, "drop_remainder": true, "parallelism": 3})"),
      chain(kRange, R"({"op": "shuffle", "buffer_size": 4, "seed": 1})"),
      chain(kRange, R"({"op": "cache"})"),
      chain(kRange, R"({"op": "prefetch", "buffer_size": 1})"),
      chain(R"({"op": "from_vector", "values": [4, 1, 2, 7]})",
            R"({"op": "filter", "predicate": "greater_than", "args": {"value": 1}})"),
      chain(R"({"op": "from_tensor_slices", "value": [[1, 2], [3, 4], [5, 6]]})",
            R"({"op": "take", "count": 2})"),
      chain(R"({"op": "from_tensors", "value": 3})", R"({"op": "repeat", "count": 2})"),
      chain(R"({"op": "generator", "fn": "counter", "args": {"count": 9}})",
            R"({"op": "filter", "predicate": "less_than", "args": {"value": 4}})"),
      chain(R"({"op": "artificial", "open_ms": 0, "read_ms": 0, "num_samples": 5})",
            R"({"op": "filter", "predicate": "not_equal", "args": {"value": 2}})"),
      R"({"stages": [{"op": "zip", "inputs": [{"stages": [{"op": "range", "stop": 5}]},
                                               {"stages": [{"op": "range", "stop": 3}]}]}]})",
      chain(R"({"op": "range", "stop": 4})",
            R"({"op": "interleave", "cycle_length": 2, "block_length": 2,
                "pipeline": {"stages": [{"op": "range", "stop": "$element"}]}})"),
      // Process sources (each spawns its producers: tiny pipelines only). Producer i runs the
      // nested pipeline with "$element" = i: 0 + 1 + 2 + 3 elements.
      R"({"stages": [{"op": "multiprocess", "producers": 4, "queue_capacity": 2,
                      "pipeline": {"stages": [{"op": "range", "stop": "$element"}]}}]})",
      R"({"stages": [{"op": "multiprocess", "producers": 3, "queue_capacity": 1,
                      "deterministic": true,
                      "pipeline": {"stages": [{"op": "range", "stop": 5},
                                              {"op": "filter", "predicate": "greater_than",
                                               "args": {"value": 1}}]}}]})",
      R"({"stages": [{"op": "shared_store", "producers": 2, "queue_capacity": 2, "store_mb": 1,
                      "pipeline": {"stages": [{"op": "generator", "fn": "random_tensors",
                                               "args": {"count": 3, "shapes": [[2, 3]]}}]}}]})",
      R"({"stages": [{"op": "shared_store", "producers": 3, "deterministic": true, "store_mb": 1,
                      "pipeline": {"stages": [{"op": "range", "stop": "$element"},
                                              {"op": "map", "fn": "fill_random",
                                               "args": {"shape": [4]}}]}},
                     {"op": "batch", "batch_size": 2}]})",
      chain(R"({"op": "range", "stop": 5})",
            R"({"op": "interleave", "cycle_length": 3, "parallelism": 3,
                "pipeline": {"stages": [{"op": "range", "stop": "$element"},
                                        {"op": "filter", "predicate": "greater_than",
                                         "args": {"value": 0}}]}})"),
  };
  return kSpecs;
}

INSTANTIATE_TEST_SUITE_P(Registry, SameElementsAsTheRealPipeline,
                         ::testing::ValuesIn([] {
                           std::vector<const char*> out;
                           for (const auto& s : specs())
                             out.push_back(s.c_str());
                           return out;
                         }()));

TEST(Simulator, EveryRegisteredOperationIsCoveredByTheElementCheck) {
  // A new operation must come with a spec above (or a reason it cannot be simulated).
  // Process sources, and file sources whose timing is the storage's (known only when they run).
  const std::set<std::string> unsupported{"list_files", "tfrecord", "fixed_length_records", "indexed_binary",
                                          "npy", "npz", "hdf5", "jpeg", "png", "csv"};
  std::set<std::string> covered;
  for (const auto& text : specs()) {
    const nlohmann::json spec = nlohmann::json::parse(text);
    std::function<void(const nlohmann::json&)> visit = [&](const nlohmann::json& j) {
      if (j.is_object()) {
        if (j.contains("op")) covered.insert(j["op"].get<std::string>());
        for (const auto& [k, v] : j.items())
          visit(v);
      } else if (j.is_array()) {
        for (const auto& v : j)
          visit(v);
      }
    };
    visit(spec);
  }
  for (const pipelines::OpRegistration* op : pipelines::registered_ops()) {
    if (unsupported.contains(op->name)) continue;
    EXPECT_TRUE(covered.contains(op->name)) << op->name << " has no spec in the element check";
  }
}

TEST(Simulator, FileSourcesAreUnsupportedWithAReason) {
  const nlohmann::json p = nlohmann::json::parse(
      R"({"stages": [{"op": "list_files", "pattern": "/nonexistent/*.tfrecord"},
                     {"op": "interleave", "cycle_length": 2,
                      "pipeline": {"stages": [{"op": "tfrecord", "files": "$element"}]}}]})");
  const SimResult r = simulate(p, {.step_ms = 1, .epochs = 1});
  EXPECT_FALSE(r.supported);
  EXPECT_NE(r.reason.find("list_files"), std::string::npos) << r.reason;
}

TEST(Simulator, CopiesAndFillsNeedTheMeasuredRates) {
  const nlohmann::json p = nlohmann::json::parse(
      R"({"stages": [{"op": "multiprocess", "producers": 2,
                      "pipeline": {"stages": [{"op": "range", "stop": 3}]}}]})");
  const SimResult r = simulate(p, {.step_ms = 1, .epochs = 1});
  EXPECT_FALSE(r.supported);
  EXPECT_TRUE(r.needs_rates);
  EXPECT_NE(r.reason.find("multiprocess"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("socket receive rate"), std::string::npos) << r.reason;
  EXPECT_EQ(r.needed_rate, "socket_gb_per_s");
  EXPECT_TRUE(simulate(p, {.step_ms = 1, .epochs = 1, .rates = {.socket_gb_per_s = 1}}).supported);

  const nlohmann::json g = nlohmann::json::parse(
      R"({"stages": [{"op": "generator", "fn": "random_tensors",
                      "args": {"count": 2, "shapes": [[1000]], "delay_ms": 5}}]})");
  const SimResult nofill =
      simulate(g, {.step_ms = 1, .epochs = 1, .rates = {.memcpy_gb_per_s = 1}});
  EXPECT_TRUE(nofill.needs_rates);
  EXPECT_NE(nofill.reason.find("fill rate"), std::string::npos) << nofill.reason;
  EXPECT_EQ(nofill.needed_rate, "fill_gb_per_s");
  // 4000 bytes at 0.001 GB/s (1000 bytes per ms): 4 ms of fill after each 5 ms fetch.
  const SimResult filled =
      simulate(g, {.step_ms = 1, .epochs = 1, .rates = {.fill_gb_per_s = 0.001}});
  ASSERT_TRUE(filled.supported) << filled.reason;
  EXPECT_DOUBLE_EQ(filled.total_ms, 2 * 9 + 1 + 1);
}

// The Ray article's shape, small: each producer fetches (50 ms) and fills (1 MB at 1 GB/s: 1 ms)
// 20 items; memcpy (shared_store) and the socket's receive (multiprocess) at 1 GB/s move an item
// in 1 ms; the step takes 10 ms.
nlohmann::json process_source(const std::string& op, int producers, int queue_capacity) {
  nlohmann::json p = nlohmann::json::parse(R"({"stages": [{"op": "", "pipeline": {"stages": [
      {"op": "generator", "fn": "random_tensors",
       "args": {"count": 20, "shapes": [[250000]], "delay_ms": 50}}]}}]})");
  p["stages"][0]["op"] = op;
  p["stages"][0]["producers"] = producers;
  p["stages"][0]["queue_capacity"] = queue_capacity;
  return p;
}

SimResult run_model(const nlohmann::json& p) {
  return simulate(p, {.step_ms = 10,
                      .epochs = 1,
                      .rates = {.memcpy_gb_per_s = 1,
                                .fill_gb_per_s = 1,
                                .socket_gb_per_s = 1,
                                .store_first_write_gb_per_s = 1}});
}

double ms_per_element(const SimResult& r) {
  return r.total_ms / static_cast<double>(r.elements);
}

TEST(Simulator, OneProducerIsItsFetchPlusFill) {
  // multiprocess: item j is sent at 51 (j + 1), read by 51 (j + 1) + 1; after the last, the step.
  const SimResult mp = run_model(process_source("multiprocess", 1, 16));
  ASSERT_TRUE(mp.supported) << mp.reason;
  EXPECT_EQ(mp.elements, 20);
  EXPECT_DOUBLE_EQ(mp.total_ms, 20 * 51 + 1 + 10);
  // shared_store: the producer writes each item (1 ms) before its next fetch; zero-copy take.
  const SimResult ss = run_model(process_source("shared_store", 1, 16));
  ASSERT_TRUE(ss.supported) << ss.reason;
  EXPECT_DOUBLE_EQ(ss.total_ms, 20 * 52 + 10);
}

// A shared_store producer's first object may go into pages that no process has written until the
// earliest time any space could be freed for reuse: it is written at the rate of such first
// writes, or, if that ends later, at memcpy's from that time; every later object at memcpy's.
TEST(Simulator, AProducersFirstObjectBeforeAnyTakePaysTheFirstWrites) {
  auto total = [](int producers, int queue_capacity, double first_write_gb_per_s,
                  double step_ms = 10) {
    const SimResult r = simulate(process_source("shared_store", producers, queue_capacity),
                                 {.step_ms = step_ms,
                                  .epochs = 1,
                                  .rates = {.memcpy_gb_per_s = 1,
                                            .fill_gb_per_s = 1,
                                            .store_first_write_gb_per_s = first_write_gb_per_s}});
    EXPECT_TRUE(r.supported) << r.reason;
    return r.total_ms;
  };
  // One producer: its first 1 MB object takes 2 ms at 0.5 GB/s, the other 19 take 1 ms.
  EXPECT_DOUBLE_EQ(total(1, 16, 0.5), 20 * 52 + 1 + 10);
  EXPECT_DOUBLE_EQ(total(1, 16, 0.5) - total(1, 16, 1), 1);
  // Two producers, one slot, a short step: the second producer gets the slot when the consumer
  // takes the first one's object, at 53, the earliest any space could be reused (51 + 2): priced
  // at memcpy from there, only the first producer pays (the consumer waits for the second's
  // write too).
  EXPECT_DOUBLE_EQ(total(2, 1, 0.5, 0.5) - total(2, 1, 1, 0.5), 1);
}

TEST(Simulator, MoreProducersLowerTheTimePerElementUntilTheConsumerBinds) {
  for (const std::string op : {"multiprocess", "shared_store"}) {
    // The consumer's floor: the step, plus the read out of the socket for multiprocess (the
    // producer's write overlaps it); shared_store's consumer copies nothing.
    const double floor = op == "multiprocess" ? 10 + 1 : 10;
    double previous = 0;
    for (int producers : {1, 2, 3, 4}) {
      const SimResult r = run_model(process_source(op, producers, 64));
      ASSERT_TRUE(r.supported) << r.reason;
      EXPECT_EQ(r.elements, 20 * producers);
      const double per = ms_per_element(r);
      if (previous > 0) {
        EXPECT_LT(per, previous - 1) << op << " with " << producers;
      }
      EXPECT_GT(per, floor) << op;
      previous = per;
    }
    // From six producers on they deliver an item faster than the consumer takes one: it binds.
    for (int producers : {6, 12, 24}) {
      const SimResult r = run_model(process_source(op, producers, 64));
      // Only the first item's fetch and fill (and write) come before the consumer's work.
      const double start = op == "multiprocess" ? 51 : 52;
      EXPECT_NEAR(r.total_ms, start + floor * static_cast<double>(r.elements), 1e-6)
          << op << " with " << producers;
      EXPECT_NEAR(r.wait_mean_ms, (op == "multiprocess" ? 1 : 0) + start / r.elements, 1e-6);
    }
  }
}

TEST(Simulator, QueueCapacityMattersForABurstyFetch) {
  // One producer yields bursts: a 100 ms open, then 8 items at once, three times. With room for a
  // burst the producer opens the next one while the consumer works through this one (steps of
  // 10 ms): 3 x 100 + 8 x 10. With one slot it gets the burst's last slot only when the consumer
  // has taken the one before, and opens the next burst 70 ms late each time: 160 + 100 for the
  // second burst, 320 + 100 for the third, done 80 later.
  auto bursty = [](int queue_capacity) {
    nlohmann::json p = nlohmann::json::parse(R"({"stages": [{"op": "multiprocess",
        "producers": 1, "pipeline": {"stages": [
        {"op": "artificial", "open_ms": 100, "read_ms": 0, "num_samples": 8},
        {"op": "repeat", "count": 3}]}}]})");
    p["stages"][0]["queue_capacity"] = queue_capacity;
    return simulate(p, {.step_ms = 10, .epochs = 1, .rates = {.socket_gb_per_s = 1e6}});
  };
  const SimResult roomy = bursty(16);
  const SimResult tight = bursty(1);
  ASSERT_TRUE(roomy.supported && tight.supported) << roomy.reason << tight.reason;
  EXPECT_EQ(roomy.elements, 24);
  EXPECT_NEAR(roomy.total_ms, 3 * 100 + 8 * 10, 1e-6);
  EXPECT_NEAR(tight.total_ms, 420 + 8 * 10, 1e-6);
  EXPECT_GT(tight.total_ms, roomy.total_ms + 100);
  // The bound unbounds the queue: it is the roomy time whatever the spec says.
  nlohmann::json autotuned = nlohmann::json::parse(R"({"stages": [{"op": "multiprocess",
      "producers": 1, "queue_capacity": "autotune", "pipeline": {"stages": [
      {"op": "artificial", "open_ms": 100, "read_ms": 0, "num_samples": 8},
      {"op": "repeat", "count": 3}]}}]})");
  const SimResult bound = simulate(
      autotuned, {.step_ms = 10, .epochs = 1, .bound = true, .rates = {.socket_gb_per_s = 1e6}});
  ASSERT_TRUE(bound.supported) << bound.reason;
  EXPECT_NEAR(bound.total_ms, roomy.total_ms, 1e-6);
}

TEST(Simulator, DeterministicProducersTakeTurns) {
  const nlohmann::json p = nlohmann::json::parse(R"({"stages": [{"op": "shared_store",
      "producers": 2, "queue_capacity": 8, "deterministic": true, "pipeline": {"stages": [
      {"op": "artificial", "open_ms": 0, "read_ms": 10, "num_samples": 3}]}}]})");
  const SimResult r = simulate(
      p, {.step_ms = 1,
          .epochs = 1,
          .rates = {.memcpy_gb_per_s = 1e6, .store_first_write_gb_per_s = 1e6}});
  ASSERT_TRUE(r.supported) << r.reason;
  EXPECT_EQ(r.elements, 6);
  // Both producers read at 10, 20, 30; in turn the consumer takes 0@10, 1@11, 0@20, 1@21, 0@30,
  // 1@31, then the last step.
  EXPECT_NEAR(r.total_ms, 32, 1e-6);
}

}  // namespace
}  // namespace pipeprof::autotune
