// shared_store's own behaviour: tensors point into the shared mapping (zero copy), released
// objects give their space back so a small store carries a long stream, a full store makes
// producers wait while the consumer holds its elements, and an element larger than the store is
// an error naming store_mb. The checks common with multiprocess are in multiprocess_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "mp_test_util.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/trace/clock.h"
#include "test_util.h"

namespace pipeprof::pipelines {
namespace {

using ::testing::HasSubstr;

// Whether `p` lies in a mapping of an object store.
bool in_store(const void* p) {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.find("pipeprof-store") == std::string::npos) continue;
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2 && addr >= lo && addr < hi) return true;
  }
  return false;
}

// Producer i yields `count` float32 tensors of `floats` values, all equal to i * 1000 + k.
DatasetFn float_producer(int64_t count, int64_t floats) {
  return DatasetFn([count, floats](const Element& e) {
    const int64_t i = e.at(0).as_int64();
    return range(count).map(Function([i, floats](Element x) {
      Tensor t(DType::kFloat32, {floats});
      for (float& v : t.mutable_values<float>())
        v = static_cast<float>(i * 1000 + x.at(0).as_int64());
      return Element{t};
    }));
  });
}

TEST(SharedStore, TensorsPointIntoTheSharedMapping) {
  testing::LeakCheck leaks;
  {
    auto it = shared_store(float_producer(3, 1000), {.producers = 2, .store_mb = 8}).iterate();
    int n = 0;
    while (auto e = it->next()) {
      ASSERT_EQ(e->size(), 1u);
      EXPECT_TRUE(in_store(e->at(0).data())) << "element " << n << " was copied";
      const float v = e->at(0).values<float>()[999];
      EXPECT_EQ(v, e->at(0).values<float>()[0]);
      ++n;
    }
    EXPECT_EQ(n, 6);
  }
  leaks.verify();
}

TEST(SharedStore, ReleasedSpaceIsReusedSoASmallStoreCarriesALongStream) {
  testing::LeakCheck leaks;
  {
    // 60 elements of 1 MB through a 4 MiB store.
    const Dataset ds = shared_store(float_producer(20, 1 << 18), {.producers = 3, .store_mb = 4});
    int n = 0;
    for (auto it = ds.iterate(); auto e = it->next();)
      ++n;
    EXPECT_EQ(n, 60);
  }
  leaks.verify();
}

TEST(SharedStore, AFullStoreMakesProducersWaitUntilTheConsumerReleases) {
  testing::LeakCheck leaks;
  {
    // Each element takes 1 MiB + a page; a 4 MiB store holds 3 of them.
    auto it =
        shared_store(float_producer(4, (1 << 18) + 16), {.producers = 2, .store_mb = 4}).iterate();
    std::vector<Element> held;
    for (int k = 0; k < 3; ++k)
      held.push_back(*it->next());
    // The store is full of held elements: nothing more can arrive while they are kept...
    std::atomic<bool> got{false};
    std::thread puller([&] {
      auto e = it->next();
      got = e.has_value();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_FALSE(got.load()) << "an element arrived although the store is full";
    // ...and releasing one lets the producers go on.
    held.erase(held.begin());
    puller.join();
    EXPECT_TRUE(got.load());
    for (const Element& e : held)
      EXPECT_EQ(e.at(0).values<float>()[0], e.at(0).values<float>()[12345]) << "never evicted";
  }
  leaks.verify();
}

TEST(SharedStore, AnElementLargerThanTheStoreIsAnErrorNamingStoreMb) {
  testing::LeakCheck leaks;
  {
    auto it = shared_store(float_producer(1, 1 << 19), {.producers = 1, .store_mb = 1}).iterate();
    try {
      it->next();
      FAIL() << "no error";
    } catch (const PipelineError& e) {
      EXPECT_THAT(e.what(), HasSubstr("does not fit in the object store of 1 MiB"));
      EXPECT_THAT(e.what(), HasSubstr("producer 0"));
    }
  }
  leaks.verify();
}

TEST(SharedStore, DeterministicOrderReportsAStoreTooSmallInsteadOfHanging) {
  testing::LeakCheck leaks;
  {
    // Producer 0 is slow; producer 1 fills the 2 MiB store; producer 0 can never get space.
    const DatasetFn fn([](const Element& e) {
      const int64_t i = e.at(0).as_int64();
      return range(4).map(Function([i](Element x) {
        if (i == 0) ::usleep(200'000);
        return Element{Tensor(DType::kFloat32, {(1 << 18) - 2048}), x.at(0)};
      }));
    });
    auto it = shared_store(
                  fn, {.producers = 2, .queue_capacity = 8, .store_mb = 2, .deterministic = true})
                  .iterate();
    const int64_t t0 = trace::now_ns();
    EXPECT_THROW(
        {
          while (it->next()) {
          }
        },
        PipelineError);
    EXPECT_LT(trace::now_ns() - t0, 5'000'000'000);
  }
  leaks.verify();
}

}  // namespace
}  // namespace pipeprof::pipelines
