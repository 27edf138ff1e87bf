// Large arrays on transparent huge pages. On virtual machines a first-touch fault of a 4 KiB page
// costs more than what is then written to it: reading a 500 MB Kineto trace faulted 70,000 pages,
// a fifth of the process's time, most of them in the growing span and flow arrays. Blocks of
// 2 MiB and more are allocated 2 MiB-aligned and advised for huge pages (MADV_HUGEPAGE, honoured
// where the kernel's transparent_hugepage setting is `madvise` or `always`), so such an array
// faults once per 2 MiB; smaller ones come from operator new as usual.
#pragma once

#include <algorithm>
#include <cstddef>
#include <new>
#include <vector>

namespace pipeprof::trace {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// `bytes` of memory aligned for any object; from kHugePageBytes on, a whole number of huge pages,
// 2 MiB-aligned and advised for huge pages (advice only: the kernel may give 4 KiB pages). Throws
// std::bad_alloc. Free with free_maybe_huge and the same `bytes`.
void* allocate_maybe_huge(size_t bytes);
void free_maybe_huge(void* p, size_t bytes) noexcept;

template <class T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() noexcept = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor)
  T* allocate(size_t n) { return static_cast<T*>(allocate_maybe_huge(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { free_maybe_huge(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const noexcept {
    return true;
  }
};

// A vector that may grow large (a lane's spans, a trace's flows, an analysis's intervals).
template <class T>
using HugePageVector = std::vector<T, HugePageAllocator<T>>;

// Makes room for one more element of a vector that is filled one element at a time and may grow
// large. From a huge page on it grows fourfold instead of doubling: every block it outgrows was
// written whole and copied, where capacity it never fills is never touched. A vector of S bytes
// has then outgrown between S/3 and 4S/3 (doubling: between S and 2S), and on virtual machines a
// first touch of memory costs more than the copy (the 500 MB trace's analyze: 191 MB at its peak
// before, 167 after).
template <class T>
void room_for_one_more(HugePageVector<T>& v) {
  if (v.size() < v.capacity() || v.capacity() * sizeof(T) < kHugePageBytes) return;
  try {
    v.reserve(std::min(v.max_size(), v.capacity() * 4));
  } catch (const std::bad_alloc&) {
    // Four times may not be had (a memory limit) where the push's doubling can.
  }
}

}  // namespace pipeprof::trace
