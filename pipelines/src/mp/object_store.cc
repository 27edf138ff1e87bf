#include "mp/object_store.h"

#include <fmt/format.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <system_error>

#include "pipeprof/pipelines/host_regions.h"

namespace pipeprof::pipelines::mp {

std::shared_ptr<ObjectStore> ObjectStore::create(uint64_t capacity_bytes, const std::string& name) {
  const uint64_t size = ArenaAllocator::block_size(capacity_bytes);
  UniqueFd fd(::memfd_create(name.c_str(), MFD_CLOEXEC));
  if (!fd.valid()) throw std::system_error(errno, std::generic_category(), "memfd_create");
  if (::ftruncate(fd.get(), static_cast<off_t>(size)) != 0) {
    throw std::system_error(errno, std::generic_category(),
                            fmt::format("ftruncate of the object store to {} bytes", size));
  }
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED) {
    throw std::system_error(errno, std::generic_category(),
                            fmt::format("mmap of the object store ({} bytes)", size));
  }
  ::madvise(p, size, MADV_HUGEPAGE);  // best effort: fewer page faults on large objects
  UniqueFd event(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!event.valid()) {
    const int err = errno;
    ::munmap(p, size);
    throw std::system_error(err, std::generic_category(), "eventfd for the object store");
  }
  // The mapping keeps the memory; the descriptor is not needed any more.
  auto store = std::shared_ptr<ObjectStore>(
      new ObjectStore(size, static_cast<std::byte*>(p), size, std::move(event)));
  host_region_mapped(p, size);  // a CUDA step registers the arena once (host_regions.h)
  return store;
}

ObjectStore::ObjectStore(uint64_t capacity, std::byte* base, uint64_t mapped, UniqueFd release_fd)
    : allocator_(capacity), base_(base), mapped_(mapped), release_fd_(std::move(release_fd)) {}

ObjectStore::~ObjectStore() {
  host_region_unmapped(base_, mapped_);
  ::munmap(base_, mapped_);
}

std::optional<ObjectStore::Object> ObjectStore::create_object(uint64_t bytes, int owner) {
  std::lock_guard lock(mu_);
  if (closed_) throw std::logic_error("the object store is closed: no object is created any more");
  if (ArenaAllocator::block_size(bytes) > allocator_.capacity()) {
    throw std::length_error(fmt::format("an object of {} bytes cannot fit in a store of {} bytes",
                                        bytes, allocator_.capacity()));
  }
  const auto offset = allocator_.allocate(bytes);
  if (!offset) return std::nullopt;
  Object o{next_id_++, *offset, bytes, owner, State::kWriting};
  objects_.emplace(o.id, o);
  return o;
}

void ObjectStore::seal(uint64_t id, int owner) {
  std::lock_guard lock(mu_);
  auto it = objects_.find(id);
  if (it == objects_.end() || it->second.state != State::kWriting || it->second.owner != owner) {
    throw std::invalid_argument(
        fmt::format("object {} is not being written by producer {}", id, owner));
  }
  it->second.state = State::kSealed;
}

std::shared_ptr<std::byte> ObjectStore::take(uint64_t id) {
  std::byte* data = nullptr;
  {
    std::lock_guard lock(mu_);
    auto it = objects_.find(id);
    if (it == objects_.end() || it->second.state != State::kSealed)
      throw std::invalid_argument(fmt::format("object {} is not sealed", id));
    it->second.state = State::kTaken;
    data = base_ + it->second.offset;
  }
  wake();  // the pending count went down: a producer may be waiting for it
  return std::shared_ptr<std::byte>(
      data, [self = shared_from_this(), id](std::byte*) { self->release(id); });
}

void ObjectStore::release(uint64_t id) {
  {
    std::lock_guard lock(mu_);
    auto it = objects_.find(id);
    if (it == objects_.end()) return;
    free_space(it->second);
    objects_.erase(it);
  }
  wake();
}

void ObjectStore::drop_owner(int owner) {
  {
    std::lock_guard lock(mu_);
    for (auto it = objects_.begin(); it != objects_.end();) {
      if (it->second.owner == owner && it->second.state != State::kTaken) {
        free_space(it->second);
        it = objects_.erase(it);
      } else {
        ++it;
      }
    }
  }
  wake();
}

void ObjectStore::free_space(const Object& o) {
  allocator_.free(o.offset);
  if (closed_) to_trim_.emplace_back(o.offset, ArenaAllocator::block_size(o.size));
}

void ObjectStore::close() {
  std::lock_guard lock(mu_);
  if (closed_) return;
  closed_ = true;
  to_trim_ = allocator_.free_list();
}

uint64_t ObjectStore::trim() {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  {
    std::lock_guard lock(mu_);
    ranges.swap(to_trim_);
  }
  // Outside the lock: a closed store never hands these ranges out again. Only the whole pages
  // inside a range: where the page is larger than the arena's alignment (64 KiB pages), a page
  // that reaches past the range may hold an object still taken.
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  uint64_t given = 0;
  for (const auto& [offset, bytes] : ranges) {
    const uint64_t from = (offset + page - 1) / page * page;
    const uint64_t to = (offset + bytes) / page * page;
    if (from < to && ::madvise(base_ + from, to - from, MADV_REMOVE) == 0) given += to - from;
  }
  return given;
}

void ObjectStore::wake() const {
  const uint64_t one = 1;
  [[maybe_unused]] const auto w = ::write(release_fd_.get(), &one, sizeof one);
}

void ObjectStore::clear_release_signal() const {
  uint64_t value = 0;
  [[maybe_unused]] const auto r = ::read(release_fd_.get(), &value, sizeof value);
}

uint64_t ObjectStore::used_bytes() const {
  std::lock_guard lock(mu_);
  return allocator_.used();
}

size_t ObjectStore::objects() const {
  std::lock_guard lock(mu_);
  return objects_.size();
}

size_t ObjectStore::pending(int owner) const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [id, o] : objects_)
    n += o.state != State::kTaken && (owner < 0 || o.owner == owner) ? 1 : 0;
  return n;
}

size_t ObjectStore::taken() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [id, o] : objects_)
    n += o.state == State::kTaken ? 1 : 0;
  return n;
}

uint64_t ObjectStore::largest_free() const {
  std::lock_guard lock(mu_);
  return allocator_.largest_free();
}

}  // namespace pipeprof::pipelines::mp
