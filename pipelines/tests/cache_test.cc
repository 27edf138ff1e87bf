// cache: SEMANTICS case 12. After one full pass later passes replay the stored elements without
// running the stages before the cache; a pass that stops early (dropped, cancelled or failed)
// leaves no cache behind and the next pass recomputes from the start.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/errors.h"
#include "test_util.h"

namespace pipeprof::pipelines {
namespace {

using namespace std::chrono_literals;
using testing::collect_ints;
using testing::drain_ints;
using ::testing::ElementsAre;

// A map that counts its calls and adds 100.
struct Counted {
  std::atomic<int> calls{0};
  Function fn() {
    return Function(
        [this](Element e) {
          ++calls;
          return scalar_element(e[0].as_int64() + 100);
        },
        "counted");
  }
};

TEST(Cache, Semantics12LaterPassesDoNotRunEarlierStages) {
  Counted counted;
  const Dataset ds = range(5).map(counted.fn()).cache();
  EXPECT_THAT(collect_ints(ds), ElementsAre(100, 101, 102, 103, 104));
  EXPECT_EQ(counted.calls.load(), 5);
  EXPECT_THAT(collect_ints(ds), ElementsAre(100, 101, 102, 103, 104));
  EXPECT_THAT(collect_ints(ds), ElementsAre(100, 101, 102, 103, 104));
  EXPECT_EQ(counted.calls.load(), 5) << "the counter before the cache must not move";
}

TEST(Cache, Semantics12PartialPassRecomputesFromTheStart) {
  Counted counted;
  const Dataset ds = range(5).map(counted.fn()).cache();
  {
    auto it = ds.iterate();
    EXPECT_THAT(drain_ints(*it, 2), ElementsAre(100, 101));
  }  // dropped early: nothing is cached
  EXPECT_EQ(counted.calls.load(), 2);
  EXPECT_THAT(collect_ints(ds), ElementsAre(100, 101, 102, 103, 104));
  EXPECT_EQ(counted.calls.load(), 7) << "the second pass recomputes all five";
  EXPECT_THAT(collect_ints(ds), ElementsAre(100, 101, 102, 103, 104));
  EXPECT_EQ(counted.calls.load(), 7);
}

TEST(Cache, Semantics12ThroughSpec) {
  const Dataset ds = testing::spec_dataset(R"({"stages": [{"op": "range", "stop": 4},
    {"op": "map", "fn": "increment"}, {"op": "cache"}]})");
  auto first = ds.iterate();
  EXPECT_THAT(drain_ints(*first), ElementsAre(1, 2, 3, 4));
  const auto map1 = testing::stage_snapshot(first->model(), "map");
  ASSERT_TRUE(map1.has_value());
  EXPECT_EQ(map1->elements, 4);

  auto second = ds.iterate();
  EXPECT_THAT(drain_ints(*second), ElementsAre(1, 2, 3, 4));
  EXPECT_FALSE(testing::stage_snapshot(second->model(), "map").has_value())
      << "a replaying cache creates no input iterator";
  const auto cache2 = testing::stage_snapshot(second->model(), "cache");
  ASSERT_TRUE(cache2.has_value());
  EXPECT_EQ(cache2->elements, 4);
}

TEST(Cache, ReplayedElementsShareTheirBuffers) {
  const Dataset ds = from_tensors({Tensor(DType::kFloat32, {32, 32})}).cache();
  const auto first = ds.collect();
  const auto second = ds.collect();
  ASSERT_EQ(first.size(), 1U);
  ASSERT_EQ(second.size(), 1U);
  EXPECT_TRUE(second[0][0].shares_buffer_with(first[0][0]));
}

TEST(Cache, PassCancelledMidwayIsNotStored) {
  // The prefetch thread is inside the simulated read of element 1 when the iterator is dropped;
  // cancellation cuts the read short and the source ends early. That pass is not complete and
  // must not be replayed.
  Counted counted;
  const Dataset ds = artificial({.open_ms = 0, .read_ms = 100, .num_samples = 3})
                         .map(counted.fn())
                         .cache()
                         .prefetch(1);
  {
    auto it = ds.iterate();
    ASSERT_TRUE(it->next().has_value());
    std::this_thread::sleep_for(20ms);  // the producer is now reading element 1
  }
  EXPECT_EQ(counted.calls.load(), 1);
  EXPECT_THAT(collect_ints(ds), ElementsAre(100, 101, 102)) << "an incomplete pass was replayed";
  EXPECT_EQ(counted.calls.load(), 4) << "the next pass recomputes from the start";
  EXPECT_THAT(collect_ints(ds), ElementsAre(100, 101, 102));
  EXPECT_EQ(counted.calls.load(), 4);
}

TEST(Cache, PassWithAnErrorIsNotStored) {
  std::atomic<int> calls{0};
  auto flaky = Function(
      [&](Element e) {
        if (++calls == 2) throw std::runtime_error("transient");
        return e;
      },
      "flaky");
  const Dataset ds = range(3).map(flaky).cache();
  auto it = ds.iterate();
  EXPECT_EQ(it->next()->at(0).as_int64(), 0);
  EXPECT_THROW(it->next(), PipelineError);
  EXPECT_THAT(drain_ints(*it), ElementsAre(2)) << "the pass goes on after the error";
  // That pass lost element 1, so it is not a complete pass: the next one recomputes.
  EXPECT_THAT(collect_ints(ds), ElementsAre(0, 1, 2));
  EXPECT_EQ(calls.load(), 6);
  EXPECT_THAT(collect_ints(ds), ElementsAre(0, 1, 2));
  EXPECT_EQ(calls.load(), 6);
}

TEST(Cache, EmptyInputIsCachedToo) {
  Counted counted;
  const Dataset ds = range(0).map(counted.fn()).cache();
  EXPECT_TRUE(ds.collect().empty());
  EXPECT_TRUE(ds.collect().empty());
}

}  // namespace
}  // namespace pipeprof::pipelines
