#include "pipeprof/pipelines/waits.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>

#include "pipeprof/trace/clock.h"

namespace pipeprof::pipelines {

// One thread's open scopes (innermost first through WaitScope::outer_) and its progress.
struct WaitSlot {
  std::mutex mutex;
  WaitScope* innermost = nullptr;
  std::atomic<uint64_t> progress{0};
  int64_t thread = 0;
};

namespace {

struct Registry {
  std::mutex mutex;
  std::vector<WaitSlot*> slots;
  uint64_t retired = 0;  // the progress of threads that ended
};

// Counts forks into a child: a thread whose slot was registered before the current one is the
// forking thread in a child, whose registry was emptied.
std::atomic<uint64_t> g_forks{0};

void before_fork();
void after_fork_in_parent();
void after_fork_in_child();

// Made while the program starts, before any thread: a static made on first use could be half made
// in another thread at a fork, and its guard would then block the child for good. Never destroyed:
// threads may end after main returns.
Registry* const g_registry = [] {
  auto* made = new Registry;
  ::pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
  return made;
}();

Registry& registry() {
  return *g_registry;
}

// A forked child has only the forking thread: the other slots belong to threads it does not have
// (their locks may be held for good), so they are dropped there. The registry's lock is held
// across the fork so that no slot list is half changed.
void before_fork() {
  registry().mutex.lock();
}
void after_fork_in_parent() {
  registry().mutex.unlock();
}
void after_fork_in_child() {
  Registry& reg = registry();
  reg.slots.clear();
  g_forks.fetch_add(1, std::memory_order_relaxed);
  reg.mutex.unlock();
}

// Registers the thread's slot on first use and retires it when the thread ends.
struct SlotOwner {
  std::unique_ptr<WaitSlot> slot;
  uint64_t forks = 0;  // g_forks when it was registered
  ~SlotOwner() {
    if (!slot) return;
    Registry& reg = registry();
    std::lock_guard<std::mutex> lock(reg.mutex);
    std::erase(reg.slots, slot.get());
    reg.retired += slot->progress.load(std::memory_order_relaxed);
  }
};

WaitSlot& my_slot() {
  thread_local SlotOwner owner;
  const uint64_t forks = g_forks.load(std::memory_order_relaxed);
  if (!owner.slot || owner.forks != forks) {
    // New thread, or the forking thread in a child (its registry was emptied): (re)register.
    if (!owner.slot) owner.slot = std::make_unique<WaitSlot>();
    owner.forks = forks;
    owner.slot->thread = static_cast<int64_t>(::syscall(SYS_gettid));
    Registry& reg = registry();
    std::lock_guard<std::mutex> lock(reg.mutex);
    if (std::find(reg.slots.begin(), reg.slots.end(), owner.slot.get()) == reg.slots.end())
      reg.slots.push_back(owner.slot.get());
  }
  return *owner.slot;
}

}  // namespace

void WaitScope::enter() {
  slot_ = &my_slot();
  since_ns_ = trace::now_ns();
  std::lock_guard<std::mutex> lock(slot_->mutex);
  outer_ = slot_->innermost;
  slot_->innermost = this;
}

WaitScope::~WaitScope() {
  std::lock_guard<std::mutex> lock(slot_->mutex);
  // Scopes end in reverse order on their thread; unlink this one wherever it is all the same.
  WaitScope** link = &slot_->innermost;
  while (*link != nullptr && *link != this)
    link = &(*link)->outer_;
  if (*link == this) *link = outer_;
}

void note_progress() {
  my_slot().progress.fetch_add(1, std::memory_order_relaxed);
}

uint64_t progress_count() {
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  uint64_t sum = reg.retired;
  for (const WaitSlot* s : reg.slots)
    sum += s->progress.load(std::memory_order_relaxed);
  return sum;
}

std::vector<OpenWait> open_waits() {
  std::vector<OpenWait> waits;
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  for (WaitSlot* s : reg.slots) {
    std::lock_guard<std::mutex> slot_lock(s->mutex);
    for (const WaitScope* w = s->innermost; w != nullptr; w = w->outer_) {
      OpenWait open;
      open.since_ns = w->since_ns_;
      open.thread = s->thread;
      try {
        open.what = w->call_(w->describe_);
      } catch (...) {
        open.what = "(a wait that could not be described)";
      }
      waits.push_back(std::move(open));
    }
  }
  std::stable_sort(waits.begin(), waits.end(),
                   [](const OpenWait& a, const OpenWait& b) { return a.since_ns < b.since_ns; });
  return waits;
}

}  // namespace pipeprof::pipelines
