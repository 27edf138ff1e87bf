#include "mp/buffer_pool.h"

#include <sys/mman.h>

#include <new>

namespace pipeprof::pipelines::mp {
namespace {
constexpr size_t kHugePage = size_t{2} << 20;
}

std::shared_ptr<BufferPool> BufferPool::create(size_t max_cached) {
  return std::shared_ptr<BufferPool>(new BufferPool(max_cached));
}

BufferPool::~BufferPool() {
  for (const auto& [size, p] : free_)
    unmap(p, size);
}

size_t BufferPool::rounded(size_t bytes) {
  return (std::max<size_t>(bytes, 1) + kHugePage - 1) / kHugePage * kHugePage;
}

void BufferPool::unmap(std::byte* p, size_t size) {
  ::munmap(p, size);
}

std::shared_ptr<std::byte> BufferPool::get(size_t bytes) {
  const size_t size = rounded(bytes);
  std::byte* p = nullptr;
  {
    std::lock_guard lock(mu_);
    if (auto it = free_.find(size); it != free_.end()) {
      p = it->second;
      free_.erase(it);
    }
    ++in_use_;
  }
  if (p == nullptr) {
    void* m = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      std::lock_guard lock(mu_);
      --in_use_;
      throw std::bad_alloc();
    }
    ::madvise(m, size, MADV_HUGEPAGE);  // best effort
    p = static_cast<std::byte*>(m);
  }
  std::weak_ptr<BufferPool> pool = weak_from_this();
  return std::shared_ptr<std::byte>(p, [pool, size](std::byte* q) {
    if (auto self = pool.lock()) {
      self->give_back(q, size);
    } else {
      unmap(q, size);
    }
  });
}

void BufferPool::give_back(std::byte* p, size_t size) {
  {
    std::lock_guard lock(mu_);
    --in_use_;
    if (free_.size() < max_cached_) {
      free_.emplace(size, p);
      return;
    }
  }
  unmap(p, size);
}

size_t BufferPool::cached() const {
  std::lock_guard lock(mu_);
  return free_.size();
}

size_t BufferPool::mapped() const {
  std::lock_guard lock(mu_);
  return free_.size() + in_use_;
}

}  // namespace pipeprof::pipelines::mp
