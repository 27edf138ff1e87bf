// The process's allocator set for pipelines: buffers of a few MiB come from malloc's arenas
// instead of a fresh mapping each (allocator.h).
#include "pipeprof/pipelines/allocator.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "pipeprof_testing/timing.h"

namespace pipeprof::pipelines {
namespace {

TEST(Allocator, BuffersOfAFewMiBStayInTheArenas) {
#if !defined(__GLIBC__)
  GTEST_SKIP() << "glibc's malloc only";
#else
  if (pipeprof::testing::kSanitized) GTEST_SKIP() << "a sanitizer's allocator ignores mallopt";
  ASSERT_TRUE(keep_buffers_in_arenas());
  // A loader's buffers: 8 MiB each (a batch of large samples), allocated, touched and freed.
  const size_t mapped_before = mallinfo2().hblks;
  std::vector<void*> held;
  for (int i = 0; i < 4; ++i) {
    void* p = std::malloc(size_t{8} << 20);
    ASSERT_NE(p, nullptr);
    std::memset(p, i, size_t{8} << 20);
    held.push_back(p);
  }
  // None of them is a mapping of its own (with glibc's defaults, each would be).
  EXPECT_EQ(mallinfo2().hblks, mapped_before);
  for (void* p : held)
    std::free(p);
#endif
}

}  // namespace
}  // namespace pipeprof::pipelines
