#include "pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

namespace pipeprof::pipelines {
namespace {

constexpr size_t kSmallestRange = size_t{256} << 10;

uintptr_t page_size() {
  static const auto kPage = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  return kPage;
}

// madvise over the whole pages that hold [data, data + size); whether it succeeded.
bool advise_pages(const std::byte* data, size_t size, int advice) {
  const auto begin = reinterpret_cast<uintptr_t>(data) & ~(page_size() - 1);
  const auto end = reinterpret_cast<uintptr_t>(data + size);
  // NOLINTNEXTLINE(performance-no-int-to-ptr): a page-aligned address inside the same mapping
  return ::madvise(reinterpret_cast<void*>(begin), end - begin, advice) == 0;
}

}  // namespace

void fault_in_for_write(std::span<std::byte> bytes) {
  if (bytes.size() < kSmallestRange) return;
#if defined(MADV_POPULATE_WRITE)
  if (advise_pages(bytes.data(), bytes.size(), MADV_POPULATE_WRITE)) return;
#endif
  for (size_t i = 0; i < bytes.size(); i += page_size())
    bytes[i] = std::byte{0};
}

void fault_in_for_read(std::span<const std::byte> bytes) {
  if (bytes.size() < kSmallestRange) return;
#if defined(MADV_POPULATE_READ)
  (void)advise_pages(bytes.data(), bytes.size(), MADV_POPULATE_READ);
#endif
}

}  // namespace pipeprof::pipelines
