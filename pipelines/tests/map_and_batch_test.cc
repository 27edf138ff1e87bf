// map_and_batch: the same elements (and errors) as map then batch, sequential, parallel and under
// the autotune knob; the parallelism bounds the calls running at once.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>

#include "pipeprof/pipelines/functions.h"
#include "test_util.h"

namespace pipeprof::pipelines {
namespace {

using namespace std::chrono_literals;
using testing::find_knob;
using testing::run_with_deadline;

// Each element's value as a [2] vector {x, x * x}: batches of it are [n, 2].
Function pair_fn() {
  return Function(
      [](Element e) {
        const int64_t x = e[0].as_int64();
        return Element{Tensor::from_vector<int64_t>({x, x * x}), Tensor::scalar<int64_t>(-x)};
      },
      "pair");
}

// Fails on the elements divisible by 5 (after the first), else as pair_fn.
Function failing_fn() {
  return Function(
      [](Element e) {
        const int64_t x = e[0].as_int64();
        if (x > 0 && x % 5 == 0) throw std::runtime_error("no multiples of five: " + std::to_string(x));
        return Element{Tensor::from_vector<int64_t>({x, x * x})};
      },
      "failing");
}

// Every outcome of an epoch: an element's JSON or "error: <message>", until the end.
std::vector<std::string> outcomes(const Dataset& d) {
  std::vector<std::string> out;
  auto it = d.iterate();
  for (int guard = 0; guard < 1000; ++guard) {
    try {
      auto e = it->next();
      if (!e) break;
      out.push_back(element_to_json(*e).dump());
    } catch (const PipelineError& e) {
      std::string msg = e.what();
      out.push_back("error: " + msg.substr(msg.find("no multiples")));
    }
  }
  return out;
}

TEST(MapAndBatch, SameElementsAsMapThenBatch) {
  run_with_deadline(60s, [] {
    for (int64_t n : {0, 1, 7, 24, 25}) {
      for (int64_t batch : {1, 3, 5, 8}) {
        for (bool drop : {false, true}) {
          const auto expected = outcomes(range(n).map(pair_fn()).batch(batch, drop));
          for (int64_t parallelism : {int64_t{0}, int64_t{1}, int64_t{3}, kAutotune}) {
            SCOPED_TRACE(fmt::format("n {} batch {} drop {} parallelism {}", n, batch, drop, parallelism));
            const Dataset fused = range(n).map_and_batch(
                pair_fn(), {.batch_size = batch, .drop_remainder = drop, .parallelism = parallelism});
            EXPECT_EQ(outcomes(fused), expected);
          }
        }
      }
    }
  });
}

TEST(MapAndBatch, ErrorsFailTheirBatchAsMapThenBatchDoes) {
  run_with_deadline(60s, [] {
    for (int64_t batch : {2, 3, 4}) {
      const auto expected = outcomes(range(23).map(failing_fn()).batch(batch));
      ASSERT_GE(std::count_if(expected.begin(), expected.end(),
                              [](const std::string& s) { return s.starts_with("error"); }),
                3);
      for (int64_t parallelism : {int64_t{0}, int64_t{2}, int64_t{4}}) {
        SCOPED_TRACE(fmt::format("batch {} parallelism {}", batch, parallelism));
        EXPECT_EQ(outcomes(range(23).map_and_batch(
                      failing_fn(), {.batch_size = batch, .parallelism = parallelism})),
                  expected);
      }
    }
  });
}

TEST(MapAndBatch, ParallelismBoundsTheCallsAtOnce) {
  run_with_deadline(60s, [] {
    testing::ConcurrencyProbe probe;
    const auto out = range(24).map_and_batch(probe.fn(5), {.batch_size = 4, .parallelism = 3}).collect();
    ASSERT_EQ(out.size(), 6U);
    EXPECT_EQ(probe.calls.load(), 24);
    EXPECT_LE(probe.max_active.load(), 3);
    EXPECT_GE(probe.max_active.load(), 2) << "calls overlap";
  });
}

TEST(MapAndBatch, TheKnobMovesWhileRunningAndResultsStayTheSame) {
  run_with_deadline(60s, [] {
    const auto expected = outcomes(range(60).map(pair_fn()).batch(7));
    const Dataset fused = range(60).map_and_batch(pair_fn(), {.batch_size = 7, .parallelism = kAutotune});
    auto it = fused.iterate();
    Knob* knob = find_knob(it->model(), "parallelism");
    ASSERT_NE(knob, nullptr);
    std::vector<std::string> got;
    int64_t i = 0;
    while (auto e = it->next()) {
      got.push_back(element_to_json(*e).dump());
      knob->set((i++ % 3 == 0) ? 1 : 4);
    }
    EXPECT_EQ(got, expected);
  });
}

TEST(MapAndBatch, SpecRoundTripsAndValidates) {
  const nlohmann::json spec = nlohmann::json::parse(R"({"stages": [
      {"op": "range", "start": 0, "stop": 10, "step": 1},
      {"op": "map_and_batch", "fn": "increment", "batch_size": 4, "drop_remainder": true,
       "parallelism": "autotune"}]})");
  const Dataset d = parse_pipeline(spec, "test.json");
  EXPECT_EQ(d.to_json(), spec);
  EXPECT_EQ(element_to_json(d.collect()[1]), nlohmann::json::parse("[5,6,7,8]"));
  EXPECT_THROW(parse_pipeline(nlohmann::json::parse(R"({"stages": [{"op": "range", "stop": 3},
      {"op": "map_and_batch", "fn": "increment", "batch_size": 0}]})"), "test.json"), SpecError);
  EXPECT_THROW(parse_pipeline(nlohmann::json::parse(R"({"stages": [{"op": "range", "stop": 3},
      {"op": "map_and_batch", "fn": "increment"}]})"), "test.json"), SpecError);
}

TEST(MapAndBatch, MismatchedShapesAreAnErrorNamingTheStage) {
  const Function ragged([](Element e) {
    return Element{Tensor(DType::kFloat32, {e[0].as_int64() + 1})};
  }, "ragged");
  for (int64_t parallelism : {0, 2}) {
    try {
      range(4).map_and_batch(ragged, {.batch_size = 2, .parallelism = parallelism}).collect();
      FAIL() << "no error";
    } catch (const PipelineError& e) {
      EXPECT_NE(std::string(e.what()).find("map_and_batch 'ragged'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("element 1 component 0"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace pipeprof::pipelines
