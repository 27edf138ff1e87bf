// shuffle: SEMANTICS case 10 through the C++ API and specs: a permutation; the same order on every
// run with a fixed seed; the same order every epoch without reshuffling and different orders with
// it; buffer_size 1 keeps the order.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/errors.h"
#include "test_util.h"

namespace pipeprof::pipelines {
namespace {

using testing::collect_ints;
using ::testing::ElementsAreArray;
using testing::spec_dataset;
using ::testing::UnorderedElementsAreArray;

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i)
    out.push_back(i);
  return out;
}

TEST(Shuffle, Semantics10OutputIsAPermutation) {
  const auto out = collect_ints(range(100).shuffle(10));
  EXPECT_THAT(out, UnorderedElementsAreArray(iota(100)));
  EXPECT_NE(out, iota(100)) << "a buffer of 10 over 100 elements should move something";
}

TEST(Shuffle, Semantics10FixedSeedGivesTheSameOrderOnEveryRun) {
  const auto a = collect_ints(range(100).shuffle(20, {.seed = 42}));
  const auto b = collect_ints(range(100).shuffle(20, {.seed = 42}));
  EXPECT_EQ(a, b);
  EXPECT_THAT(a, UnorderedElementsAreArray(iota(100)));
  EXPECT_NE(collect_ints(range(100).shuffle(20, {.seed = 43})), a) << "another seed, another order";
}

TEST(Shuffle, Semantics10ReshuffleFalseKeepsTheOrderEveryEpoch) {
  const Dataset ds = range(100).shuffle(100, {.seed = 1, .reshuffle_each_iteration = false});
  const auto epoch1 = collect_ints(ds);
  EXPECT_NE(epoch1, iota(100));
  EXPECT_EQ(collect_ints(ds), epoch1);
  EXPECT_EQ(collect_ints(ds), epoch1);
}

TEST(Shuffle, Semantics10ReshuffleTrueChangesTheOrderEveryEpoch) {
  for (std::optional<uint64_t> seed : {std::optional<uint64_t>(1), std::optional<uint64_t>()}) {
    const Dataset ds = range(100).shuffle(100, {.seed = seed, .reshuffle_each_iteration = true});
    const auto epoch1 = collect_ints(ds);
    const auto epoch2 = collect_ints(ds);
    EXPECT_THAT(epoch2, UnorderedElementsAreArray(epoch1));
    EXPECT_NE(epoch1, epoch2);
  }
  // With a fixed seed, the sequence of epochs is itself reproducible.
  const Dataset a = range(50).shuffle(50, {.seed = 9});
  const Dataset b = range(50).shuffle(50, {.seed = 9});
  for (int epoch = 0; epoch < 3; ++epoch)
    EXPECT_EQ(collect_ints(a), collect_ints(b)) << epoch;
}

TEST(Shuffle, Semantics10BufferSizeOneKeepsTheOrder) {
  EXPECT_THAT(collect_ints(range(50).shuffle(1, {.seed = 3})), ElementsAreArray(iota(50)));
  EXPECT_THAT(collect_ints(range(50).shuffle(1)), ElementsAreArray(iota(50)));
}

TEST(Shuffle, Semantics10ThroughSpec) {
  const char* fixed = R"({"stages": [{"op": "range", "stop": 100},
    {"op": "shuffle", "buffer_size": 100, "seed": 5, "reshuffle_each_iteration": false}]})";
  const auto a = collect_ints(spec_dataset(fixed));
  EXPECT_THAT(a, UnorderedElementsAreArray(iota(100)));
  EXPECT_NE(a, iota(100));
  const Dataset ds = spec_dataset(fixed);
  EXPECT_EQ(collect_ints(ds), a) << "the same seed in another document gives the same order";
  EXPECT_EQ(collect_ints(ds), a) << "reshuffle_each_iteration false: every epoch the same";

  const Dataset reshuffled = spec_dataset(R"({"stages": [{"op": "range", "stop": 100},
    {"op": "shuffle", "buffer_size": 100, "seed": 5}]})");
  EXPECT_NE(collect_ints(reshuffled), collect_ints(reshuffled));

  EXPECT_THAT(collect_ints(spec_dataset(R"({"stages": [{"op": "range", "stop": 30},
    {"op": "shuffle", "buffer_size": 1}]})")),
              ElementsAreArray(iota(30)));
}

TEST(Shuffle, BufferLargerThanTheInput) {
  EXPECT_THAT(collect_ints(range(5).shuffle(1000, {.seed = 2})),
              UnorderedElementsAreArray(iota(5)));
  EXPECT_TRUE(range(0).shuffle(4).collect().empty());
}

TEST(Shuffle, InvalidBufferSize) {
  EXPECT_THROW(range(3).shuffle(0), std::invalid_argument);
  EXPECT_THROW(testing::spec(R"({"stages": [{"op": "range", "stop": 3},
    {"op": "shuffle", "buffer_size": 0}]})"),
               SpecError);
}

}  // namespace
}  // namespace pipeprof::pipelines
