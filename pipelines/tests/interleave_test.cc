// interleave: SEMANTICS cases 1-3 (cycle and block lengths, flat map, parallel with deterministic
// order), through the C++ API and through JSON specs, plus nested pipelines and failures.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/spec.h"
#include "test_util.h"

namespace pipeprof::pipelines {
namespace {

using testing::collect_ints;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using testing::spec_dataset;
using ::testing::UnorderedElementsAreArray;

const std::vector<int64_t> kCase1 = {1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3,
                                     3, 4, 4, 4, 4, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5};

Dataset case1(int64_t parallelism) {
  return range(1, 6).interleave(
      DatasetFn([](const Element& x) { return from_tensors(x).repeat(6); }),
      {.cycle_length = 2, .block_length = 4, .parallelism = parallelism});
}

std::string case1_spec(const std::string& parallelism) {
  return R"({"stages": [
    {"op": "range", "start": 1, "stop": 6},
    {"op": "interleave", "cycle_length": 2, "block_length": 4)" +
         (parallelism.empty() ? std::string() : ", \"parallelism\": " + parallelism) + R"(,
     "pipeline": {"stages": [{"op": "from_tensors", "value": "$element"},
                             {"op": "repeat", "count": 6}]}}]})";
}

// Case 1 through a spec with `field` set to `value` beside its block_length: the same output,
// and the option kept in the spec the dataset writes back.
void expect_case1_spec_option(const std::string& field, int64_t value) {
  std::string spec = case1_spec("2");
  const std::string block = R"("block_length": 4)";
  spec.replace(spec.find(block), block.size(), block + fmt::format(R"(, "{}": {})", field, value));
  const Dataset ds = spec_dataset(spec);
  EXPECT_THAT(collect_ints(ds), ElementsAreArray(kCase1)) << field;
  EXPECT_EQ(ds.to_json()["stages"][1][field], value);
}

// The pulls counted once they reach `expect` (or 10 s pass), and 50 ms more for a pull too many.
int64_t pulls_settled(const std::atomic<int64_t>& pulls, int64_t expect) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (pulls.load() < expect && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return pulls.load();
}

TEST(Interleave, Semantics1CycleAndBlockLengths) {
  EXPECT_THAT(collect_ints(case1(0)), ElementsAreArray(kCase1));
}

TEST(Interleave, Semantics1ThroughSpec) {
  EXPECT_THAT(collect_ints(spec_dataset(case1_spec(""))), ElementsAreArray(kCase1));
}

TEST(Interleave, Semantics2CycleLengthOneIsAFlatMap) {
  auto ds = range(3).interleave(DatasetFn([](const Element& x) { return range(x[0].as_int64()); }),
                                {.cycle_length = 1});
  EXPECT_THAT(collect_ints(ds), ElementsAre(0, 0, 1));
}

TEST(Interleave, Semantics2ThroughSpec) {
  auto ds = spec_dataset(R"({"stages": [
    {"op": "range", "stop": 3},
    {"op": "interleave", "cycle_length": 1,
     "pipeline": {"stages": [{"op": "range", "stop": "$element"}]}}]})");
  EXPECT_THAT(collect_ints(ds), ElementsAre(0, 0, 1));
}

class ParallelInterleave : public ::testing::TestWithParam<int64_t> {};

TEST_P(ParallelInterleave, Semantics3DeterministicOrderEqualsSequential) {
  for (int run = 0; run < 3; ++run) {
    EXPECT_THAT(collect_ints(case1(GetParam())), ElementsAreArray(kCase1)) << "run " << run;
  }
}

TEST_P(ParallelInterleave, Semantics3ThroughSpec) {
  const std::string p = GetParam() == kAutotune ? "\"autotune\"" : std::to_string(GetParam());
  for (int run = 0; run < 3; ++run) {
    EXPECT_THAT(collect_ints(spec_dataset(case1_spec(p))), ElementsAreArray(kCase1))
        << "run " << run;
  }
}

TEST_P(ParallelInterleave, NonDeterministicYieldsAPermutation) {
  auto ds = range(1, 6).interleave(
      DatasetFn([](const Element& x) { return from_tensors(x).repeat(6); }),
      {.cycle_length = 2, .block_length = 4, .parallelism = GetParam(), .deterministic = false});
  EXPECT_THAT(collect_ints(ds), UnorderedElementsAreArray(kCase1));
}

INSTANTIATE_TEST_SUITE_P(Parallelism, ParallelInterleave,
                         ::testing::Values(int64_t{1}, int64_t{2}, int64_t{3}, kAutotune),
                         [](const auto& param_info) {
                           return param_info.param == kAutotune ? std::string("autotune")
                                                                : std::to_string(param_info.param);
                         });

TEST(Interleave, DeeperSlotBuffersKeepTheOrder) {
  for (int64_t buffer : {1, 2, 3, 64}) {
    EXPECT_THAT(collect_ints(range(1, 6).interleave(
                    DatasetFn([](const Element& x) { return from_tensors(x).repeat(6); }),
                    {.cycle_length = 2,
                     .block_length = 4,
                     .parallelism = 2,
                     .buffer_output_elements = buffer})),
                ElementsAreArray(kCase1))
        << "buffer_output_elements " << buffer;
  }
  expect_case1_spec_option("buffer_output_elements", 9);
}

// Each open slot is pulled ahead by exactly its buffer's worth of elements while the consumer
// does not take any: the pulls stop there (no more), and reach it (the buffer is used).
TEST(Interleave, WorkersPullEachSlotAheadUpToItsBuffer) {
  for (int64_t buffer : {0, 5}) {
    auto pulls = std::make_shared<std::atomic<int64_t>>(0);
    auto ds = range(2).interleave(
        DatasetFn([pulls](const Element&) {
          return range(1000).map(Function([pulls](Element x) {
            pulls->fetch_add(1);
            return x;
          }));
        }),
        {.cycle_length = 2, .parallelism = 2, .buffer_output_elements = buffer});
    auto it = ds.iterate();
    ASSERT_TRUE(it->next().has_value());
    // Two slots, each holding its buffer's worth, plus the element taken.
    const int64_t expect = 2 * (buffer == 0 ? 2 : buffer) + 1;
    EXPECT_EQ(pulls_settled(*pulls, expect), expect) << "buffer_output_elements " << buffer;
  }
}

TEST(Interleave, InputsOpenedAheadKeepTheOrder) {
  for (int64_t parallelism : {1, 2}) {
    for (int64_t ahead : {1, 2, 3, 64}) {
      EXPECT_THAT(collect_ints(range(1, 6).interleave(
                      DatasetFn([](const Element& x) { return from_tensors(x).repeat(6); }),
                      {.cycle_length = 2,
                       .block_length = 4,
                       .parallelism = parallelism,
                       .prefetch_input_elements = ahead})),
                  ElementsAreArray(kCase1))
          << "parallelism " << parallelism << ", prefetch_input_elements " << ahead;
    }
  }
  // Inputs of one element each, and inputs that yield none, as whole-file readers give.
  for (int64_t ahead : {0, 1, 4}) {
    auto ds = range(40).interleave(DatasetFn([](const Element& x) {
                                     const int64_t v = x[0].as_int64();
                                     return from_tensors(x).take(v % 7 == 3 ? 0 : 1);
                                   }),
                                   {.cycle_length = 3, .parallelism = 2, .prefetch_input_elements = ahead});
    std::vector<int64_t> expect;
    for (int64_t v = 0; v < 40; ++v)
      if (v % 7 != 3) expect.push_back(v);
    EXPECT_THAT(collect_ints(ds), ElementsAreArray(expect)) << "prefetch_input_elements " << ahead;
  }
  expect_case1_spec_option("prefetch_input_elements", 3);
}

// Inputs of one element each (files of one sample): while the consumer holds the first element,
// the workers read the other open slot's input and the inputs opened ahead, and no more. Without
// inputs opened ahead, a slot's next input waits for the consumer to come back to the slot.
TEST(Interleave, InputsOpenedAheadArePulledBeforeTheCycleNeedsThem) {
  for (int64_t ahead : {0, 2, 5}) {
    auto pulls = std::make_shared<std::atomic<int64_t>>(0);
    auto ds = range(100).interleave(
        DatasetFn([pulls](const Element& x) {
          return from_tensors(x).map(Function([pulls](Element e) {
            pulls->fetch_add(1);
            return e;
          }));
        }),
        {.cycle_length = 2, .parallelism = 2, .prefetch_input_elements = ahead});
    auto it = ds.iterate();
    ASSERT_TRUE(it->next().has_value());
    const int64_t expect = 2 + ahead;
    EXPECT_EQ(pulls_settled(*pulls, expect), expect) << "prefetch_input_elements " << ahead;
  }
}

// Not deterministic: an element of an input opened ahead is not the consumer's until its input
// enters the cycle, so the consumer waits (and does not spin) while the cycle's slots are slow.
TEST(Interleave, NonDeterministicConsumerWaitsWhileOnlyInputsAheadHaveElements) {
  auto ds = range(6).interleave(DatasetFn([](const Element& x) {
                                  return from_tensors(x).map(Function([](Element e) {
                                    if (e[0].as_int64() < 2)
                                      std::this_thread::sleep_for(std::chrono::milliseconds(300));
                                    return e;
                                  }));
                                }),
                                {.cycle_length = 2,
                                 .parallelism = 3,
                                 .deterministic = false,
                                 .prefetch_input_elements = 2});
  timespec before{};
  timespec after{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &before);
  EXPECT_THAT(collect_ints(ds), UnorderedElementsAreArray({0, 1, 2, 3, 4, 5}));
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &after);
  const double cpu_s = static_cast<double>(after.tv_sec - before.tv_sec) +
                       static_cast<double>(after.tv_nsec - before.tv_nsec) * 1e-9;
  // A consumer that took an element ahead for one of the cycle's would spin holding the lock: the
  // slow inputs could never hand theirs over (a hang), or it would burn the 300 ms they take.
  EXPECT_LT(cpu_s, 0.15);
}

TEST(Interleave, CycleLongerThanTheInputAndBlockLongerThanEachPipeline) {
  for (int64_t parallelism : std::vector<int64_t>{0, 2}) {
    auto ds = range(1, 4).interleave(
        DatasetFn([](const Element& x) { return from_tensors(x).repeat(x[0].as_int64()); }),
        {.cycle_length = 5, .block_length = 10, .parallelism = parallelism});
    EXPECT_THAT(collect_ints(ds), ElementsAre(1, 2, 2, 3, 3, 3)) << "parallelism " << parallelism;
  }
}

TEST(Interleave, BlockLengthOneAlternates) {
  auto ds = range(2).interleave(DatasetFn([](const Element& x) {
                                  return range(x[0].as_int64() * 10, x[0].as_int64() * 10 + 3);
                                }),
                                {.cycle_length = 2});
  EXPECT_THAT(collect_ints(ds), ElementsAre(0, 10, 1, 11, 2, 12));
}

TEST(Interleave, EmptyInputAndEmptyPipelines) {
  auto fn = DatasetFn([](const Element&) { return range(0); });
  EXPECT_TRUE(range(0).interleave(fn, {.cycle_length = 2}).collect().empty());
  EXPECT_TRUE(range(5).interleave(fn, {.cycle_length = 2}).collect().empty());
  EXPECT_TRUE(range(5).interleave(fn, {.cycle_length = 2, .parallelism = 2}).collect().empty());
}

TEST(Interleave, ElementReferenceSelectsAComponent) {
  auto ds = spec_dataset(R"({"stages": [
    {"op": "zip", "inputs": [{"stages": [{"op": "range", "stop": 3}]},
                             {"stages": [{"op": "range", "start": 1, "stop": 4}]}]},
    {"op": "interleave", "cycle_length": 1,
     "pipeline": {"stages": [{"op": "range", "start": "$element[0]", "stop": "$element[1]"},
                             {"op": "repeat", "count": 2}]}}]})");
  EXPECT_THAT(collect_ints(ds), ElementsAre(0, 0, 1, 1, 2, 2));
}

TEST(Interleave, FunctionFailureNamesTheStageAfterEarlierElements) {
  for (int64_t parallelism : std::vector<int64_t>{0, 2}) {
    auto ds = range(4).interleave(DatasetFn([](const Element& x) -> Dataset {
                                    if (x[0].as_int64() == 2) throw std::runtime_error("no file 2");
                                    return from_tensors(x);
                                  }),
                                  {.cycle_length = 1, .parallelism = parallelism, .name = "open"});
    auto it = ds.iterate();
    EXPECT_EQ(it->next()->at(0).as_int64(), 0);
    EXPECT_EQ(it->next()->at(0).as_int64(), 1);
    try {
      it->next();
      FAIL() << "expected a PipelineError";
    } catch (const PipelineError& e) {
      EXPECT_EQ(e.stage(), "interleave 'open'");
      EXPECT_STREQ(e.what(), "interleave 'open': no file 2");
    }
  }
}

TEST(Interleave, SpecElementOutOfRangeFailsWhenTheInputIsOpened) {
  auto ds = spec_dataset(R"({"stages": [
    {"op": "range", "stop": 2},
    {"op": "interleave", "cycle_length": 1,
     "pipeline": {"stages": [{"op": "range", "stop": "$element[1]"}]}}]})");
  auto it = ds.iterate();
  try {
    it->next();
    FAIL() << "expected a PipelineError";
  } catch (const PipelineError& e) {
    EXPECT_EQ(e.stage(), "interleave");
    EXPECT_THAT(e.what(), ::testing::HasSubstr("stages[1].pipeline.stages[0].stop"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("refers to component 1, but the element has 1"));
  }
}

TEST(Interleave, NestedStagesShareOneModelEntry) {
  auto ds = range(3).interleave(
      DatasetFn([](const Element& x) { return from_tensors(x).repeat(2); }), {.cycle_length = 2});
  auto it = ds.iterate();
  EXPECT_EQ(testing::drain_ints(*it).size(), 6U);
  std::vector<std::string> keys;
  for (const auto& s : it->model().snapshot())
    keys.push_back(s.key + " <- " + s.parent);
  EXPECT_THAT(keys, ElementsAre("stages[1] <- ", "stages[0] <- stages[1]",
                                "stages[1].pipeline.stages[1] <- stages[1]",
                                "stages[1].pipeline.stages[0] <- stages[1].pipeline.stages[1]"));
  const auto repeat = testing::stage_snapshot(it->model(), "repeat");
  ASSERT_TRUE(repeat.has_value());
  EXPECT_EQ(repeat->elements, 6) << "the three repeat iterators report to one entry";
}

TEST(Interleave, InvalidOptions) {
  auto fn = DatasetFn([](const Element& x) { return from_tensors(x); });
  EXPECT_THROW(range(3).interleave(fn, {.cycle_length = 0}), std::invalid_argument);
  EXPECT_THROW(range(3).interleave(fn, {.block_length = 0}), std::invalid_argument);
  EXPECT_THROW(range(3).interleave(fn, {.parallelism = -4}), std::invalid_argument);
  EXPECT_THROW(range(3).interleave(fn, {.buffer_output_elements = -1}), std::invalid_argument);
  EXPECT_THROW(range(3).interleave(fn, {.prefetch_input_elements = -1}), std::invalid_argument);
  EXPECT_THROW(spec_dataset(R"({"stages": [{"op": "range", "stop": 3},
    {"op": "interleave", "parallelism": 2, "buffer_output_elements": -2,
     "pipeline": {"stages": [{"op": "range", "stop": 2}]}}]})"),
               SpecError);
  EXPECT_THROW(range(3).interleave(DatasetFn{}), std::invalid_argument);
}

TEST(Interleave, CppFunctionCannotBeWrittenToASpec) {
  auto ds = range(3).interleave(DatasetFn([](const Element& x) { return from_tensors(x); }));
  EXPECT_THROW(ds.to_json(), SpecError);
}

}  // namespace
}  // namespace pipeprof::pipelines

namespace pipeprof::pipelines {
namespace {

// A finished input pipeline is torn down while its own workers may still run (a prefetch cut
// short by take): the iterator must go before the graph it uses (AddressSanitizer checks this).
TEST(Interleave, FinishedInputsWithLiveWorkersAreTornDownSafely) {
  for (int64_t parallelism : {0, 1}) {
    auto inner = DatasetFn(
        [](const Element& e) {
          return range(1000)
              .map(Function([](Element x) { return x; }), {.parallelism = 2})
              .prefetch(8)
              .take(1)
              .map(Function([v = e[0].as_int64()](Element) { return scalar_element(v); }));
        },
        "inner");
    const auto values =
        collect_ints(range(20).interleave(inner, {.cycle_length = 2, .parallelism = parallelism}));
    ASSERT_EQ(values.size(), 20u) << "parallelism " << parallelism;
  }
}

}  // namespace
}  // namespace pipeprof::pipelines
