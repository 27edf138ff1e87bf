// ArenaAllocator: offsets in a fixed-size arena. First fit over the free ranges (ordered by
// offset), blocks rounded up to kAlignment, and a freed block merged with its free neighbours, so
// the arena never fragments into pieces smaller than what was freed together. Not thread-safe (the
// object store locks around it).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace pipeprof::pipelines::mp {

class ArenaAllocator {
 public:
  static constexpr uint64_t kAlignment = 4096;

  explicit ArenaAllocator(uint64_t capacity);

  // The offset of a new block of at least `bytes` (0 counts as 1), or nullopt when no free range
  // is large enough now.
  std::optional<uint64_t> allocate(uint64_t bytes);
  // Frees the block at `offset`; throws std::invalid_argument for an offset that is not a block.
  void free(uint64_t offset);

  // `bytes` as a block size (rounded up to kAlignment).
  static uint64_t block_size(uint64_t bytes);
  uint64_t capacity() const { return capacity_; }
  uint64_t used() const { return used_; }
  size_t blocks() const { return allocated_.size(); }
  uint64_t largest_free() const;
  size_t free_ranges() const { return free_.size(); }
  // The free ranges, as (offset, size), by offset.
  std::vector<std::pair<uint64_t, uint64_t>> free_list() const {
    return {free_.begin(), free_.end()};
  }

 private:
  uint64_t capacity_;
  uint64_t used_ = 0;
  std::map<uint64_t, uint64_t> free_;       // offset -> size
  std::map<uint64_t, uint64_t> allocated_;  // offset -> size
};

}  // namespace pipeprof::pipelines::mp
