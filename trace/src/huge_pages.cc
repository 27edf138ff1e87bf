#include "pipeprof/trace/huge_pages.h"

#include <sys/mman.h>

#include <cstdlib>
#include <new>

namespace pipeprof::trace {

static_assert(kHugePageBytes % alignof(std::max_align_t) == 0);

void* allocate_maybe_huge(size_t bytes) {
  if (bytes < kHugePageBytes) return ::operator new(bytes);
  const size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  void* p = std::aligned_alloc(kHugePageBytes, rounded);
  if (p == nullptr) throw std::bad_alloc();
#if defined(MADV_HUGEPAGE)
  (void)::madvise(p, rounded, MADV_HUGEPAGE);  // advice only: fine if refused
#endif
  return p;
}

void free_maybe_huge(void* p, size_t bytes) noexcept {
  if (bytes < kHugePageBytes) {
    ::operator delete(p, bytes);
    return;
  }
  std::free(p);
}

}  // namespace pipeprof::trace
