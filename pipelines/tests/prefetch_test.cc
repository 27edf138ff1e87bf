// prefetch: SEMANTICS case 11 (never changes the order or the values), the bound on how far it
// runs ahead, errors delivered in their place and argument checks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/functions.h"
#include "pipeprof/pipelines/sleep.h"
#include "test_util.h"

namespace pipeprof::pipelines {
namespace {

using namespace std::chrono_literals;
using testing::collect_ints;
using ::testing::ElementsAreArray;
using testing::spec_dataset;

Function jitter_fn() {
  return Function(
      [](Element e) {
        precise_sleep_for((e[0].as_int64() * 13 % 5) * 200 * trace::kNsPerUs);
        return e;
      },
      "jitter");
}

TEST(Prefetch, Semantics11OrderAndValuesUnchanged) {
  const auto expected = collect_ints(range(30).map(jitter_fn(), {.parallelism = 3}));
  ASSERT_EQ(expected.size(), 30U);
  for (int64_t buffer : std::vector<int64_t>{1, 2, 7, 64, kAutotune}) {
    EXPECT_THAT(collect_ints(range(30).map(jitter_fn(), {.parallelism = 3}).prefetch(buffer)),
                ElementsAreArray(expected))
        << "buffer " << buffer;
  }
  // A prefetch after each stage changes nothing either.
  EXPECT_THAT(collect_ints(range(30).prefetch(1).map(jitter_fn()).prefetch(2).prefetch(3)),
              ElementsAreArray(expected));
}

TEST(Prefetch, Semantics11ThroughSpec) {
  auto plain = collect_ints(spec_dataset(R"({"stages": [
    {"op": "range", "stop": 25}, {"op": "map", "fn": "increment"}]})"));
  ASSERT_EQ(plain.size(), 25U);
  for (const char* buffer : {"1", "4", "\"autotune\""}) {
    auto ds = spec_dataset(std::string(R"({"stages": [{"op": "range", "stop": 25},
      {"op": "prefetch", "buffer_size": )") +
                           buffer + R"(}, {"op": "map", "fn": "increment"},
      {"op": "prefetch", "buffer_size": )" +
                           buffer + "}]}");
    EXPECT_THAT(collect_ints(ds), ElementsAreArray(plain)) << "buffer " << buffer;
  }
}

TEST(Prefetch, TensorsPassThroughWithoutCopies) {
  Tensor big(DType::kFloat32, {64, 64});
  auto out = from_tensors({big}).prefetch(2).collect();
  ASSERT_EQ(out.size(), 1U);
  EXPECT_TRUE(out[0][0].shares_buffer_with(big));
}

TEST(Prefetch, RunsAheadByAtMostTheBufferSize) {
  std::atomic<int> pulled{0};
  auto counted = Function(
      [&](Element e) {
        ++pulled;
        return e;
      },
      "counted");
  auto it = range(100).map(counted).prefetch(3).iterate();
  ASSERT_TRUE(it->next().has_value());
  // The consumer holds one element; the buffer fills with three more, then the producer waits.
  const auto deadline = std::chrono::steady_clock::now() + 2s;
  while (pulled.load() < 4 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(pulled.load(), 4);
  const auto prefetch = testing::stage_snapshot(it->model(), "prefetch");
  ASSERT_TRUE(prefetch.has_value());
  EXPECT_EQ(prefetch->buffered, 3);
  EXPECT_EQ(prefetch->buffer_capacity, 3);
}

TEST(Prefetch, SourceErrorIsDeliveredInItsPlace) {
  auto gen = GeneratorFn(
      [] {
        return std::function<std::optional<Element>()>([i = 0]() mutable -> std::optional<Element> {
          if (i == 2) {
            ++i;
            throw std::runtime_error("bad record");
          }
          if (i == 5) return std::nullopt;
          return scalar_element(i++);
        });
      },
      "reader");
  auto it = generator(gen).prefetch(4).iterate();
  EXPECT_THAT(testing::drain_ints(*it, 2), ElementsAreArray({0, 1}));
  try {
    it->next();
    FAIL() << "expected a PipelineError";
  } catch (const PipelineError& e) {
    EXPECT_EQ(e.stage(), "generator 'reader'");
  }
  EXPECT_THAT(testing::drain_ints(*it), ElementsAreArray({3, 4}));
  EXPECT_FALSE(it->next().has_value());
}

TEST(Prefetch, InvalidBufferSize) {
  EXPECT_THROW(range(3).prefetch(0), std::invalid_argument);
  EXPECT_THROW(range(3).prefetch(-5), std::invalid_argument);
  EXPECT_THROW(testing::spec(R"({"stages": [{"op": "range", "stop": 3},
    {"op": "prefetch", "buffer_size": 0}]})"),
               SpecError);
}

}  // namespace
}  // namespace pipeprof::pipelines
