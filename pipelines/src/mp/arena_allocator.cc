#include "mp/arena_allocator.h"

#include <fmt/format.h>

#include <stdexcept>

namespace pipeprof::pipelines::mp {

ArenaAllocator::ArenaAllocator(uint64_t capacity) : capacity_(capacity / kAlignment * kAlignment) {
  if (capacity_ > 0) free_.emplace(0, capacity_);
}

uint64_t ArenaAllocator::block_size(uint64_t bytes) {
  if (bytes == 0) bytes = 1;
  if (bytes > ~uint64_t{0} - kAlignment) return ~uint64_t{0} / kAlignment * kAlignment;
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

std::optional<uint64_t> ArenaAllocator::allocate(uint64_t bytes) {
  const uint64_t size = block_size(bytes);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < size) continue;
    const uint64_t offset = it->first;
    const uint64_t rest = it->second - size;
    free_.erase(it);
    if (rest > 0) free_.emplace(offset + size, rest);
    allocated_.emplace(offset, size);
    used_ += size;
    return offset;
  }
  return std::nullopt;
}

void ArenaAllocator::free(uint64_t offset) {
  auto a = allocated_.find(offset);
  if (a == allocated_.end())
    throw std::invalid_argument(fmt::format("arena: no block at offset {}", offset));
  uint64_t start = offset;
  uint64_t size = a->second;
  used_ -= size;
  allocated_.erase(a);
  auto next = free_.lower_bound(start);
  if (next != free_.end() && next->first == start + size) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      size += prev->second;
      free_.erase(prev);
    }
  }
  free_.emplace(start, size);
}

uint64_t ArenaAllocator::largest_free() const {
  uint64_t best = 0;
  for (const auto& [offset, size] : free_)
    best = std::max(best, size);
  return best;
}

}  // namespace pipeprof::pipelines::mp
