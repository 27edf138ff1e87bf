// shard: SEMANTICS case 7 through the C++ API and specs; an index outside [0, num_shards) is an
// error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/errors.h"
#include "test_util.h"

namespace pipeprof::pipelines {
namespace {

using testing::collect_ints;
using ::testing::ElementsAre;
using testing::spec_dataset;

TEST(Shard, Semantics7EveryNthElement) {
  EXPECT_THAT(collect_ints(range(10).shard(3, 0)), ElementsAre(0, 3, 6, 9));
  EXPECT_THAT(collect_ints(range(10).shard(3, 1)), ElementsAre(1, 4, 7));
  EXPECT_THAT(collect_ints(range(10).shard(3, 2)), ElementsAre(2, 5, 8));
}

TEST(Shard, Semantics7ThroughSpec) {
  auto shard = [](int index) {
    return collect_ints(spec_dataset(R"({"stages": [{"op": "range", "stop": 10},
      {"op": "shard", "num_shards": 3, "index": )" +
                                     std::to_string(index) + "}]}"));
  };
  EXPECT_THAT(shard(0), ElementsAre(0, 3, 6, 9));
  EXPECT_THAT(shard(1), ElementsAre(1, 4, 7));
  EXPECT_THAT(shard(2), ElementsAre(2, 5, 8));
}

TEST(Shard, Semantics7IndexOutsideTheRangeIsAnError) {
  EXPECT_THROW(range(10).shard(3, 3), std::invalid_argument);
  EXPECT_THROW(range(10).shard(3, -1), std::invalid_argument);
  EXPECT_THROW(range(10).shard(0, 0), std::invalid_argument);
  try {
    testing::spec(R"({"stages": [{"op": "range", "stop": 10},
      {"op": "shard", "num_shards": 3, "index": 3}]})");
    FAIL() << "expected a SpecError";
  } catch (const SpecError& e) {
    EXPECT_STREQ(e.what(), "test.json: stages[1].index: expected an integer <= 2, got 3");
  }
}

TEST(Shard, ShardsPartitionTheInput) {
  std::vector<int64_t> all;
  for (int i = 0; i < 4; ++i) {
    for (int64_t v : collect_ints(range(23).shard(4, i)))
      all.push_back(v);
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, collect_ints(range(23)));
  EXPECT_THAT(collect_ints(range(5).shard(1, 0)), ElementsAre(0, 1, 2, 3, 4));
}

}  // namespace
}  // namespace pipeprof::pipelines
