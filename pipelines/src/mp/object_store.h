// ObjectStore: a shared-memory object store. One arena, a memfd (memfd_create) mapped MAP_SHARED
// by the consumer; producer processes forked afterwards inherit the same mapping at the same
// address. The descriptor is closed as soon as the arena is mapped, so the memory belongs to the
// mappings alone and is freed when the last process unmaps it: nothing is left in /dev/shm or in
// the descriptor table, whatever happens to the processes.
//
// When no object will be created any more (every producer has ended), close() says so, and trim()
// gives the pages of free space back to the kernel (at close all of it, afterwards each object as
// it is released), so that the unmapping at the end has only what is still taken left to free.
//
// An object's life: create (a producer asks for space; the consumer side allocates it) -> written
// by the producer -> sealed (its layout is known) -> taken by the consumer (zero copy: tensors
// point into the mapping) -> released when the last tensor viewing it goes away, which returns its
// space to the allocator and wakes release_fd(). A live object (being written, sealed or taken and
// still referenced) is never evicted; a full store makes producers wait instead.
//
// Thread-safe. The store is held by a shared_ptr: taken objects keep it (and the mapping) alive
// after its creator is gone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mp/arena_allocator.h"
#include "mp/unique_fd.h"

namespace pipeprof::pipelines::mp {

class ObjectStore : public std::enable_shared_from_this<ObjectStore> {
 public:
  enum class State { kWriting, kSealed, kTaken };
  struct Object {
    uint64_t id = 0;
    uint64_t offset = 0;
    uint64_t size = 0;  // bytes asked for
    int owner = -1;     // producer index
    State state = State::kWriting;
  };

  // Maps an arena of `capacity_bytes`. Throws std::system_error.
  static std::shared_ptr<ObjectStore> create(uint64_t capacity_bytes,
                                             const std::string& name = "pipeprof-store");
  ~ObjectStore();
  ObjectStore(const ObjectStore&) = delete;
  ObjectStore& operator=(const ObjectStore&) = delete;

  std::byte* base() const { return base_; }
  uint64_t capacity() const { return allocator_.capacity(); }

  // A new object of `bytes` for `owner`, or nullopt when it does not fit now. Throws
  // std::length_error when it could never fit, std::logic_error after close().
  std::optional<Object> create_object(uint64_t bytes, int owner);
  // Marks a written object sealed; throws std::invalid_argument for an unknown id, an object not
  // being written, or an owner that is not its creator.
  void seal(uint64_t id, int owner);
  // Hands a sealed object over: the returned pointer (its first byte) keeps it alive; the last
  // copy's destruction releases it. Throws std::invalid_argument unless it is sealed.
  std::shared_ptr<std::byte> take(uint64_t id);
  // Frees the objects a dead producer was writing or had sealed (nobody will take them).
  void drop_owner(int owner);

  // No object will be created any more: the free space, and from now on each released object's
  // space, is left for trim() to give back.
  void close();
  // Gives back to the kernel (MADV_REMOVE) the whole pages of the space freed since close() (at
  // the first call, all free space at close); returns the bytes given back. It frees pages, which
  // takes time in proportion: call it from a thread that nobody waits on. A no-op before close().
  uint64_t trim();

  // Readable after a release or a drop (an eventfd): space may have become free.
  int release_fd() const { return release_fd_.get(); }
  // Reads release_fd() back to not-readable.
  void clear_release_signal() const;
  // Makes release_fd() readable (as a release does): wakes a thread that polls it.
  void wake() const;

  uint64_t used_bytes() const;
  size_t objects() const;
  // Objects being written or sealed and not taken yet (of `owner`, or of everyone when -1).
  size_t pending(int owner = -1) const;
  // Objects taken and still referenced.
  size_t taken() const;
  // The largest object that could be created now.
  uint64_t largest_free() const;

 private:
  ObjectStore(uint64_t capacity, std::byte* base, uint64_t mapped, UniqueFd release_fd);
  void release(uint64_t id);
  // Under mu_: frees an object's space (left for trim() once closed).
  void free_space(const Object& o);

  mutable std::mutex mu_;
  ArenaAllocator allocator_;
  std::byte* base_;
  uint64_t mapped_;
  UniqueFd release_fd_;
  std::map<uint64_t, Object> objects_;
  uint64_t next_id_ = 1;
  bool closed_ = false;
  std::vector<std::pair<uint64_t, uint64_t>> to_trim_;  // (offset, bytes) freed since close()
};

}  // namespace pipeprof::pipelines::mp
