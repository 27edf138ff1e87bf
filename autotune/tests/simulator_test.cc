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
  const SimResult r = simulate(spec, {.step_ms = 1, .epochs = 1});
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
  const std::set<std::string> unsupported{"multiprocess", "shared_store", "list_files", "tfrecord",
                                          "fixed_length_records", "npy", "npz", "hdf5"};
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

TEST(Simulator, ProcessSourcesAreUnsupportedWithAReason) {
  const nlohmann::json p = nlohmann::json::parse(
      R"({"stages": [{"op": "multiprocess", "producers": 2,
                      "pipeline": {"stages": [{"op": "range", "stop": 3}]}}]})");
  const SimResult r = simulate(p, {.step_ms = 1, .epochs = 1});
  EXPECT_FALSE(r.supported);
  EXPECT_NE(r.reason.find("multiprocess"), std::string::npos) << r.reason;
}

}  // namespace
}  // namespace pipeprof::autotune
