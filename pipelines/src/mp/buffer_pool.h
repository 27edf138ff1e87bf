// BufferPool: large receive buffers that come back when the tensors viewing them are gone. A fresh
// buffer costs a page fault per page on first touch (on a VM, more than copying the bytes into it);
// a recycled one is already mapped. Buffers are anonymous mappings advised to use transparent huge
// pages. At most `max_cached` free buffers are kept; the rest are unmapped at once, as are all of
// them when the pool and the last buffer are gone. Thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

namespace pipeprof::pipelines::mp {

class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  static std::shared_ptr<BufferPool> create(size_t max_cached);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of at least `bytes` (unspecified contents). Throws std::bad_alloc.
  std::shared_ptr<std::byte> get(size_t bytes);

  size_t cached() const;
  size_t mapped() const;  // buffers alive, cached or in use
  static size_t rounded(size_t bytes);

 private:
  explicit BufferPool(size_t max_cached) : max_cached_(max_cached) {}
  static void unmap(std::byte* p, size_t size);
  void give_back(std::byte* p, size_t size);

  mutable std::mutex mu_;
  size_t max_cached_;
  std::multimap<size_t, std::byte*> free_;  // size -> buffer
  size_t in_use_ = 0;
};

}  // namespace pipeprof::pipelines::mp
