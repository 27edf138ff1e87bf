// generator: elements from a C++ callable or a registered generator; the factory runs once per
// iteration; failures name the stage.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <optional>
#include <thread>
#include <stdexcept>

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/functions.h"
#include "test_util.h"

namespace pipeprof::pipelines {
namespace {

using testing::collect_ints;
using ::testing::ElementsAre;
using ::testing::Ge;
using ::testing::Lt;
using testing::spec_dataset;

TEST(Generator, FactoryRunsOncePerIteration) {
  std::atomic<int> factory_calls{0};
  const Dataset ds = generator(GeneratorFn([&] {
    const int epoch = factory_calls++;
    return std::function<std::optional<Element>()>(
        [epoch, i = 0]() mutable -> std::optional<Element> {
          if (i == 3) return std::nullopt;
          return scalar_element(epoch * 10 + i++);
        });
  }));
  EXPECT_EQ(factory_calls.load(), 0) << "building the dataset runs nothing";
  EXPECT_THAT(collect_ints(ds), ElementsAre(0, 1, 2));
  EXPECT_THAT(collect_ints(ds), ElementsAre(10, 11, 12));
  EXPECT_EQ(factory_calls.load(), 2);
}

TEST(Generator, EndIsStickyEvenIfThePullFunctionWouldGoOn) {
  // This pull function yields again after reporting the end; the iterator must not.
  auto gen = GeneratorFn([] {
    return std::function<std::optional<Element>()>([i = 0]() mutable -> std::optional<Element> {
      ++i;
      if (i == 3) return std::nullopt;
      return scalar_element(i);
    });
  });
  auto it = generator(gen).iterate();
  EXPECT_THAT(testing::drain_ints(*it), ElementsAre(1, 2));
  EXPECT_FALSE(it->next().has_value());
  EXPECT_FALSE(it->next().has_value());
}

TEST(Generator, CounterThroughSpec) {
  EXPECT_THAT(collect_ints(spec_dataset(R"({"stages": [{"op": "generator", "fn": "counter",
    "args": {"count": 4}}]})")),
              ElementsAre(0, 1, 2, 3));
}

TEST(Generator, RandomTensorsHaveTheirShapesAndAreReproducible) {
  const char* json = R"({"stages": [{"op": "generator", "fn": "random_tensors",
    "args": {"count": 3, "shapes": [[2, 3], [4]], "seed": 11}}]})";
  const auto a = spec_dataset(json).collect();
  const auto b = spec_dataset(json).collect();
  ASSERT_EQ(a.size(), 3U);
  ASSERT_EQ(a[0].size(), 2U);
  EXPECT_EQ(a[0][0].shape(), (Shape{2, 3}));
  EXPECT_EQ(a[0][1].shape(), Shape{4});
  EXPECT_EQ(a[0][0].dtype(), DType::kFloat32);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i][0], b[i][0]) << i;
    for (float v : a[i][0].values<float>()) {
      EXPECT_THAT(v, Ge(0.0F));
      EXPECT_THAT(v, Lt(1.0F));
    }
  }
  EXPECT_FALSE(a[0][0] == a[1][0]) << "each element draws other values";
}

TEST(Generator, FailureNamesTheStage) {
  auto gen = GeneratorFn(
      [] {
        return std::function<std::optional<Element>()>(
            []() -> std::optional<Element> { throw std::runtime_error("disk on fire"); });
      },
      "reader");
  auto it = generator(gen).iterate();
  try {
    it->next();
    FAIL() << "expected a PipelineError";
  } catch (const PipelineError& e) {
    EXPECT_EQ(e.stage(), "generator 'reader'");
    EXPECT_STREQ(e.what(), "generator 'reader': disk on fire");
  }
}

TEST(Generator, FactoryReturningNothingIsAnError) {
  auto gen = GeneratorFn([] { return std::function<std::optional<Element>()>(); }, "broken");
  EXPECT_THROW(generator(gen).collect(), PipelineError);
  EXPECT_THROW(generator(GeneratorFn{}), std::invalid_argument);
}

TEST(Generator, SpecErrors) {
  try {
    testing::spec(R"({"stages": [{"op": "generator", "fn": "counter", "args": {"count": -1}}]})");
    FAIL() << "expected a SpecError";
  } catch (const SpecError& e) {
    EXPECT_STREQ(e.what(),
                 "test.json: stages[0].args.count: expected a non-negative integer, got -1");
  }
  EXPECT_THROW(testing::spec(R"({"stages": [{"op": "generator", "fn": "nope"}]})"), SpecError);
}

TEST(Generator, CppFactoryCannotBeWrittenToASpec) {
  auto ds = generator(GeneratorFn([] { return std::function<std::optional<Element>()>(); }));
  EXPECT_THROW(ds.to_json(), SpecError);
  EXPECT_EQ(generator(make_generator("counter", {{"count", 2}})).to_json(),
            nlohmann::json::parse(
                R"({"stages": [{"op": "generator", "fn": "counter", "args": {"count": 2}}]})"));
}

// This process's resident memory in bytes (/proc/self/statm's second field, in pages).
int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * ::sysconf(_SC_PAGESIZE);
}

TEST(Generator, RandomTensorsFaultTheirPagesInWhileTheirDelayRuns) {
  // 64 MiB and a few floats more (no buffer of an earlier test is the same size, so the memory is
  // new to the process), fetched with a delay of a second: the pages are faulted in at the start
  // of the delay, not by the fill after it.
  constexpr int64_t kFloats = (int64_t{16} << 20) + 1234;
  constexpr int64_t kBytes = kFloats * 4;
  const GeneratorFn g = make_generator(
      "random_tensors", {{"count", 1}, {"shape", {kFloats}}, {"delay_ms", 1000}});
  auto next = g.fn();
  const int64_t before = resident_bytes();
  const auto start = std::chrono::steady_clock::now();
  std::atomic<bool> made{false};
  std::optional<Element> element;
  std::thread fetch([&] {
    element = next();
    made = true;
  });
  std::optional<double> resident_after_s;
  while (!made && !resident_after_s) {
    if (resident_bytes() - before >= kBytes * 9 / 10) {
      resident_after_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  fetch.join();
  ASSERT_TRUE(element.has_value());
  ASSERT_EQ((*element)[0].num_elements(), kFloats);
  ASSERT_TRUE(resident_after_s.has_value()) << "the element's memory was not resident before it came";
  EXPECT_LT(*resident_after_s, 0.9) << "its pages were faulted in by the fill, after the delay";
}

}  // namespace
}  // namespace pipeprof::pipelines
