#include "pipeprof/pipelines/allocator.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace pipeprof::pipelines {

bool keep_buffers_in_arenas() {
#if defined(__GLIBC__)
  // 32 MiB is the largest mmap threshold glibc accepts on 64-bit (half its arena heap).
  const bool mapped = mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1;
  const bool trimmed = mallopt(M_TRIM_THRESHOLD, 64 << 20) == 1;
  return mapped && trimmed;
#else
  return false;
#endif
}

}  // namespace pipeprof::pipelines
