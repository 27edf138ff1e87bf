// map: SEMANTICS case 9 (order with any parallelism; a permutation when not deterministic) and
// case 13 (a failing function) through the C++ API and specs, plus naming, the bound on work in
// flight and argument checks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/functions.h"
#include "pipeprof/pipelines/sleep.h"
#include "test_util.h"

namespace pipeprof::pipelines {
namespace {

using testing::collect_ints;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using testing::spec_dataset;
using ::testing::UnorderedElementsAreArray;

std::vector<int64_t> iota(int64_t n, int64_t scale = 1) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i)
    out.push_back(i * scale);
  return out;
}

using testing::ConcurrencyProbe;

class MapParallelism : public ::testing::TestWithParam<int64_t> {};

TEST_P(MapParallelism, Semantics9DeterministicKeepsInputOrder) {
  // Later elements finish first: element i sleeps (20 - i) * 0.1 ms.
  auto fn = Function(
      [](Element e) {
        precise_sleep_for((20 - e[0].as_int64()) * 100 * trace::kNsPerUs);
        return scalar_element(e[0].as_int64() * 2);
      },
      "reverse_sleep");
  EXPECT_THAT(collect_ints(range(20).map(fn, {.parallelism = GetParam()})),
              ElementsAreArray(iota(20, 2)));
}

TEST_P(MapParallelism, Semantics9ThroughSpec) {
  const std::string p = GetParam() == kAutotune ? "\"autotune\"" : std::to_string(GetParam());
  auto ds = spec_dataset(R"({"stages": [{"op": "range", "stop": 20},
    {"op": "map", "fn": "increment")" +
                         (GetParam() == 0 ? std::string() : ", \"parallelism\": " + p) + "}]}");
  std::vector<int64_t> expected = iota(21);
  expected.erase(expected.begin());
  EXPECT_THAT(collect_ints(ds), ElementsAreArray(expected));
}

TEST_P(MapParallelism, Semantics9NonDeterministicIsAPermutation) {
  if (GetParam() == 0) GTEST_SKIP() << "a sequential map has no order choice";
  ConcurrencyProbe probe;
  auto ds = range(20).map(probe.fn(0.2), {.parallelism = GetParam(), .deterministic = false});
  EXPECT_THAT(collect_ints(ds), UnorderedElementsAreArray(iota(20, 2)));
  auto spec = spec_dataset(R"({"stages": [{"op": "range", "stop": 20},
    {"op": "map", "fn": "identity", "parallelism": 3, "deterministic": false}]})");
  EXPECT_THAT(collect_ints(spec), UnorderedElementsAreArray(iota(20)));
}

TEST_P(MapParallelism, NeverMoreCallsAtOnceThanTheParallelism) {
  ConcurrencyProbe probe;
  const int64_t p = GetParam() == kAutotune ? default_autotune_parallelism() : GetParam();
  EXPECT_THAT(collect_ints(range(16).map(probe.fn(10), {.parallelism = GetParam()})),
              ElementsAreArray(iota(16, 2)));
  EXPECT_EQ(probe.calls.load(), 16);
  EXPECT_LE(probe.max_active.load(), std::max<int64_t>(p, 1));
  if (p >= 2) {
    EXPECT_GE(probe.max_active.load(), 2) << "parallel calls should overlap";
  }
}

INSTANTIATE_TEST_SUITE_P(Parallelism, MapParallelism,
                         ::testing::Values(int64_t{0}, int64_t{1}, int64_t{3}, kAutotune),
                         [](const auto& param_info) {
                           return param_info.param == kAutotune ? std::string("autotune")
                                                                : std::to_string(param_info.param);
                         });

TEST(Map, NonDeterministicYieldsAFastElementBeforeASlowOne) {
  auto fn = Function(
      [](Element e) {
        if (e[0].as_int64() == 0) precise_sleep_for(300 * trace::kNsPerMs);
        return e;
      },
      "slow_first");
  auto det = range(4).map(fn, {.parallelism = 2}).iterate();
  EXPECT_EQ(det->next()->at(0).as_int64(), 0);
  auto nondet = range(4).map(fn, {.parallelism = 2, .deterministic = false}).iterate();
  EXPECT_NE(nondet->next()->at(0).as_int64(), 0);
}

TEST(Map, ConsumerWaitingForASlowFrontElementDoesNotSpin) {
  // Element 0 takes 300 ms, the others finish at once: in deterministic order the consumer waits
  // for element 0 while later results are ready. That wait must block, not burn the CPU.
  auto fn = Function(
      [](Element e) {
        if (e[0].as_int64() == 0) precise_sleep_for(300 * trace::kNsPerMs);
        return e;
      },
      "slow_first");
  auto it = range(4).map(fn, {.parallelism = 3}).iterate();
  const int64_t cpu0 = trace::thread_cpu_ns();
  EXPECT_EQ(it->next()->at(0).as_int64(), 0);
  EXPECT_LT(trace::thread_cpu_ns() - cpu0, 100 * trace::kNsPerMs);
}

TEST(Map, Semantics13FailingFunctionThroughSpec) {
  // No registered function fails on a chosen element; increment fails on a bool tensor, so this
  // spec fails at element 0 (the C++ cases of conformance_test.cc fail at element 3).
  auto ds = spec_dataset(R"({"stages": [
    {"op": "from_tensor_slices", "value": [true, false], "dtype": "bool"},
    {"op": "map", "fn": "increment", "parallelism": 2, "name": "bump"}]})");
  auto it = ds.iterate();
  try {
    it->next();
    FAIL() << "expected a PipelineError";
  } catch (const PipelineError& e) {
    EXPECT_EQ(e.stage(), "map 'bump'");
    EXPECT_THAT(e.what(), ::testing::HasSubstr("cannot increment a bool tensor"));
  }
}

TEST(Map, ForeignExceptionBecomesAPipelineError) {
  auto fn = Function(
      [](Element e) -> Element {
        if (e[0].as_int64() == 1) throw 42;  // not a std::exception
        return e;
      },
      "odd");
  for (int64_t parallelism : std::vector<int64_t>{0, 2}) {
    auto it = range(3).map(fn, {.parallelism = parallelism}).iterate();
    EXPECT_EQ(it->next()->at(0).as_int64(), 0);
    try {
      it->next();
      FAIL() << "expected a PipelineError, parallelism " << parallelism;
    } catch (const PipelineError& e) {
      EXPECT_EQ(e.stage(), "map 'odd'");
      EXPECT_STREQ(e.what(), "map 'odd': unknown exception");
    } catch (...) {
      ADD_FAILURE() << "a foreign exception escaped next(), parallelism " << parallelism;
    }
    EXPECT_EQ(it->next()->at(0).as_int64(), 2);
  }
}

TEST(Map, StageNames) {
  EXPECT_EQ(range(1).map(make_function("identity")).node().display_name(), "map 'identity'");
  EXPECT_EQ(
      range(1).map(make_function("identity"), {.name = "mapped_function"}).node().display_name(),
      "map 'mapped_function'");
  auto ds = spec_dataset(R"({"stages": [{"op": "range", "stop": 2},
    {"op": "map", "fn": "sleep_ms", "args": {"ms": 0}, "name": "mapped_function"}]})");
  auto it = ds.iterate();
  testing::drain_ints(*it);
  const auto map = testing::stage_snapshot(it->model(), "map");
  ASSERT_TRUE(map.has_value());
  EXPECT_EQ(map->name, "map 'mapped_function'");
  EXPECT_EQ(map->elements, 2);
}

TEST(Map, ResultReplacesTheElement) {
  auto fn = Function(
      [](Element e) {
        return Element{e[0], Tensor::from_vector<int64_t>({e[0].as_int64(), -e[0].as_int64()})};
      },
      "pair");
  auto out = range(1, 3).map(fn, {.parallelism = 2}).collect();
  ASSERT_EQ(out.size(), 2U);
  ASSERT_EQ(out[1].size(), 2U);
  EXPECT_EQ(out[1][0].as_int64(), 2);
  EXPECT_THAT(testing::values(out[1][1]), ElementsAre(2, -2));
}

TEST(Map, InvalidArguments) {
  EXPECT_THROW(range(1).map(Function{}), std::invalid_argument);
  EXPECT_THROW(range(1).map(make_function("identity"), {.parallelism = -2}), std::invalid_argument);
}

TEST(Map, CppLambdaCannotBeWrittenToASpec) {
  auto ds = range(2).map(Function([](Element e) { return e; }, "lambda"));
  try {
    ds.to_json();
    FAIL() << "expected a SpecError";
  } catch (const SpecError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("map 'lambda'"));
  }
}

}  // namespace
}  // namespace pipeprof::pipelines
