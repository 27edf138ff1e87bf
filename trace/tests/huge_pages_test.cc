// Large arrays on transparent huge pages (huge_pages.h).
#include "pipeprof/trace/huge_pages.h"

#include <gtest/gtest.h>
#include <sys/prctl.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "pipeprof/trace/trace.h"

namespace pipeprof::trace {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// What /proc/self/smaps says of the mapping that holds `p`: its THPeligible line's value, or -1.
int thp_eligible(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= at && at < hi;
      continue;
    }
    if (inside && line.starts_with("THPeligible:")) return std::stoi(line.substr(12));
  }
  return -1;
}

// Whether the kernel takes MADV_HUGEPAGE here: THP set to `madvise` or `always`, and not switched
// off for this process (prctl PR_SET_THP_DISABLE, which a service manager may set).
bool thp_for_madvise() {
  if (::prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) == 1) return false;
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string s;
  std::getline(f, s);
  return s.find("[madvise]") != std::string::npos || s.find("[always]") != std::string::npos;
}

TEST(HugePages, SmallBlocksComeFromOperatorNewLargeOnesAreWholeAlignedHugePages) {
  void* small = allocate_maybe_huge(1000);
  ASSERT_NE(small, nullptr);
  std::memset(small, 0xab, 1000);
  free_maybe_huge(small, 1000);

  const size_t bytes = kHugePageBytes + 12345;  // rounded up to two huge pages
  void* large = allocate_maybe_huge(bytes);
  ASSERT_NE(large, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(large) % kHugePageBytes, 0U);
  std::memset(large, 0xcd, 2 * kHugePageBytes);  // the whole of both pages is the block's
  EXPECT_EQ(static_cast<unsigned char*>(large)[2 * kHugePageBytes - 1], 0xcd);
  // Advised for huge pages where the kernel takes the advice (the sanitizers' allocators map
  // their own memory).
  if (!kSanitized && thp_for_madvise()) {
    EXPECT_EQ(thp_eligible(large), 1);
  }
  free_maybe_huge(large, bytes);
}

TEST(HugePages, AVectorKeepsItsElementsAsItGrowsPastAHugePage) {
  HugePageVector<Span> spans;
  const size_t n = 3 * kHugePageBytes / sizeof(Span) + 7;
  for (size_t i = 0; i < n; ++i) {
    Span s;
    s.start_ns = static_cast<int64_t>(i);
    s.dur_ns = static_cast<int64_t>(2 * i + 1);
    spans.push_back(s);
  }
  EXPECT_EQ(reinterpret_cast<uintptr_t>(spans.data()) % kHugePageBytes, 0U);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(spans[i].start_ns, static_cast<int64_t>(i));
    ASSERT_EQ(spans[i].dur_ns, static_cast<int64_t>(2 * i + 1));
  }
  HugePageVector<Span> copy = spans;
  EXPECT_EQ(copy.size(), n);
  EXPECT_EQ(copy.back().start_ns, static_cast<int64_t>(n - 1));
  spans.clear();
  spans.shrink_to_fit();
  EXPECT_EQ(spans.capacity(), 0U);
}

TEST(HugePages, AVectorFilledOneAtATimeGrowsFourfoldFromAHugePageOn) {
  HugePageVector<Span> spans;
  std::vector<size_t> capacities;  // each capacity it outgrew, in order
  const size_t n = 40 * kHugePageBytes / sizeof(Span);
  for (size_t i = 0; i < n; ++i) {
    const size_t before = spans.capacity();
    room_for_one_more(spans);
    Span s;
    s.start_ns = static_cast<int64_t>(i);
    spans.push_back(s);
    if (spans.capacity() != before) capacities.push_back(spans.capacity());
  }
  ASSERT_EQ(spans.size(), n);
  for (size_t i = 0; i < n; i += 4099)
    ASSERT_EQ(spans[i].start_ns, static_cast<int64_t>(i));
  // Below a huge page the vector doubles as usual; from there on each step is fourfold. The
  // blocks it outgrew (written whole, then copied) hold 42 MiB of its 80: doubling would have
  // outgrown 126 MiB on the way.
  size_t outgrown_bytes = 0;
  for (size_t k = 1; k < capacities.size(); ++k) {
    const size_t bytes = capacities[k - 1] * sizeof(Span);
    if (bytes >= kHugePageBytes) {
      EXPECT_EQ(capacities[k], 4 * capacities[k - 1]) << "step " << k;
      outgrown_bytes += bytes;
    }
  }
  EXPECT_LT(outgrown_bytes, n * sizeof(Span));
}

}  // namespace
}  // namespace pipeprof::trace
