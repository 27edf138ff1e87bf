// The shared-memory object store and its allocator: first fit, merging of freed neighbours,
// objects through their life (create, seal, take, release), full stores, a forked writer, a closed
// store's pages given back, and no descriptor or mapping left afterwards.
#include "mp/object_store.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "mp/arena_allocator.h"
#include "mp_test_util.h"

namespace pipeprof::pipelines::mp {
namespace {

constexpr uint64_t kA = ArenaAllocator::kAlignment;

TEST(ArenaAllocator, FirstFitAlignedBlocks) {
  ArenaAllocator a(10 * kA);
  EXPECT_EQ(a.allocate(1), 0u);
  EXPECT_EQ(a.allocate(kA + 1), kA);
  EXPECT_EQ(a.allocate(0), 3 * kA);
  EXPECT_EQ(a.used(), 4 * kA);
  EXPECT_EQ(a.allocate(7 * kA), std::nullopt) << "only 6 blocks are free";
  EXPECT_EQ(a.allocate(6 * kA), 4 * kA);
  EXPECT_EQ(a.allocate(1), std::nullopt);
}

TEST(ArenaAllocator, FreedNeighboursMerge) {
  ArenaAllocator a(8 * kA);
  const auto x = *a.allocate(2 * kA);
  const auto y = *a.allocate(2 * kA);
  const auto z = *a.allocate(2 * kA);
  a.free(x);
  a.free(z);
  EXPECT_EQ(a.largest_free(), 4 * kA) << "z merged with the tail";
  a.free(y);
  EXPECT_EQ(a.free_ranges(), 1u);
  EXPECT_EQ(a.largest_free(), 8 * kA);
  EXPECT_EQ(a.used(), 0u);
  EXPECT_THROW(a.free(y), std::invalid_argument);
  EXPECT_THROW(a.free(123), std::invalid_argument);
}

TEST(ObjectStore, ObjectLifeAndReleaseByTheLastReference) {
  testing::LeakCheck leaks;
  {
    auto store = ObjectStore::create(16 * kA);
    EXPECT_EQ(testing::store_mappings(), 1);
    auto o = store->create_object(3 * kA, 0);
    ASSERT_TRUE(o.has_value());
    std::memset(store->base() + o->offset, 0x5a, o->size);
    EXPECT_EQ(store->pending(), 1u);
    EXPECT_THROW(store->take(o->id), std::invalid_argument) << "not sealed";
    EXPECT_THROW(store->seal(o->id, 1), std::invalid_argument) << "not its owner";
    store->seal(o->id, 0);
    auto data = store->take(o->id);
    EXPECT_EQ(store->pending(), 0u);
    EXPECT_EQ(store->taken(), 1u);
    EXPECT_EQ(data.get()[0], std::byte{0x5a});
    auto copy = data;
    data.reset();
    EXPECT_EQ(store->used_bytes(), 3 * kA) << "still referenced";
    copy.reset();
    EXPECT_EQ(store->used_bytes(), 0u);
    EXPECT_EQ(store->objects(), 0u);
  }
  leaks.verify();
}

TEST(ObjectStore, AFullStoreRefusesUntilSpaceIsReleased) {
  auto store = ObjectStore::create(4 * kA);
  auto a = store->create_object(2 * kA, 0);
  auto b = store->create_object(2 * kA, 1);
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(store->create_object(1, 0).has_value()) << "full: wait, never evict";
  EXPECT_THROW(store->create_object(5 * kA, 0), std::length_error);
  store->seal(a->id, 0);
  auto held = store->take(a->id);
  EXPECT_FALSE(store->create_object(kA, 0).has_value());
  store->clear_release_signal();
  held.reset();
  uint64_t signalled = 0;
  EXPECT_EQ(::read(store->release_fd(), &signalled, sizeof signalled),
            static_cast<ssize_t>(sizeof signalled))
      << "a release wakes the allocator";
  EXPECT_TRUE(store->create_object(2 * kA, 0).has_value());
  store->drop_owner(1);
  EXPECT_EQ(store->pending(1), 0u);
  EXPECT_TRUE(store->create_object(2 * kA, 0).has_value()) << "a dead producer's space is back";
}

TEST(ObjectStore, TakenObjectsOutliveTheirStoreHandle) {
  testing::LeakCheck leaks;
  {
    std::shared_ptr<std::byte> data;
    {
      auto store = ObjectStore::create(kA);
      auto o = store->create_object(8, 0);
      store->base()[o->offset] = std::byte{7};
      store->seal(o->id, 0);
      data = store->take(o->id);
    }
    EXPECT_EQ(data.get()[0], std::byte{7});
    EXPECT_EQ(testing::store_mappings(), 1);
  }
  leaks.verify();
}

TEST(ObjectStore, AForkedWriterIsSeenWithoutACopy) {
  testing::LeakCheck leaks;
  {
    auto store = ObjectStore::create(64 * kA);
    auto o = store->create_object(10 * kA, 3);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (uint64_t k = 0; k < o->size; ++k)
        store->base()[o->offset + k] = static_cast<std::byte>(k % 251);
      ::_exit(0);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    store->seal(o->id, 3);
    auto data = store->take(o->id);
    for (uint64_t k = 0; k < o->size; k += 997)
      ASSERT_EQ(data.get()[k], static_cast<std::byte>(k % 251)) << k;
  }
  leaks.verify();
}

// The store's pages that hold memory now (mincore: a shared mapping's pages in the page cache).
uint64_t resident_bytes(const ObjectStore& store) {
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in((store.capacity() + page - 1) / page);
  if (::mincore(store.base(), store.capacity(), in.data()) != 0) return ~uint64_t{0};
  uint64_t n = 0;
  for (unsigned char c : in) n += c & 1U;
  return n * page;
}

TEST(ObjectStore, AClosedStoreGivesFreedPagesBackAndCreatesNoMore) {
  if (::sysconf(_SC_PAGESIZE) != static_cast<long>(kA))
    GTEST_SKIP() << "the sizes below are whole pages of 4 KiB";
  testing::LeakCheck leaks;
  {
    auto store = ObjectStore::create(64 * kA);
    EXPECT_EQ(store->trim(), 0u);  // open: nothing is given back
    auto a = store->create_object(16 * kA, 0);
    auto b = store->create_object(8 * kA, 1);
    std::memset(store->base() + a->offset, 1, a->size);
    std::memset(store->base() + b->offset, 2, b->size);
    store->seal(a->id, 0);
    store->seal(b->id, 1);
    auto ta = store->take(a->id);
    auto tb = store->take(b->id);
    ta.reset();  // freed while open: kept for a next object
    EXPECT_EQ(resident_bytes(*store), 24 * kA);
    EXPECT_EQ(store->trim(), 0u);

    store->close();
    EXPECT_THROW(store->create_object(kA, 0), std::logic_error);
    EXPECT_EQ(store->trim(), 56 * kA);  // all the free space at close, a's pages among it
    EXPECT_EQ(resident_bytes(*store), 8 * kA);
    EXPECT_EQ(store->trim(), 0u);  // given back once

    // b, still taken, keeps its bytes until it is released; then its pages go back too.
    for (uint64_t k = 0; k < b->size; k += 1021) ASSERT_EQ(tb.get()[k], std::byte{2}) << k;
    tb.reset();
    EXPECT_EQ(store->trim(), 8 * kA);
    EXPECT_EQ(resident_bytes(*store), 0u);
  }
  leaks.verify();
}

}  // namespace
}  // namespace pipeprof::pipelines::mp
