// The threads of the parallel operations (prefetch's producer, the workers of parallel map,
// parallel interleave and map_and_batch), kept for reuse. A thread whose task has returned parks
// instead of exiting, and the next task started under the same name (the same stage's worker in
// the next epoch's iterator: "prefetch #0", "interleave #1") runs on it, so an epoch starts and
// ends without creating or joining a thread: a wake-up instead of a clone and an exit. A trace
// lane keeps its name, since a parked thread only takes work under the name it had.
//
// A WorkerThread is joined like a std::thread: join() (or the destructor) waits until the task has
// returned; the thread itself then parks. At most kMaxParked threads are parked; a thread parked
// for kIdleExit exits. In a child created by fork() the cache starts empty (the parent's parked
// threads do not exist there).
//
// A thread that leaves is joined (by the next spawn, by a NoWorkerThreadLeaving or by
// release_parked_worker_threads), never detached, so that a fork can wait until no start or exit
// of one is under way (see NoWorkerThreadLeaving).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace pipeprof::pipelines::ops {

namespace detail {
struct ParkedWorker;
}

class WorkerThread {
 public:
  static constexpr int kMaxParked = 64;
  static constexpr std::chrono::seconds kIdleExit{10};

  WorkerThread() = default;
  // Runs `task` on a thread parked under `name`, else on a new thread. Throws std::system_error
  // when no thread can be created (as std::thread does).
  WorkerThread(std::string name, std::function<void()> task);
  WorkerThread(WorkerThread&& other) noexcept;
  WorkerThread& operator=(WorkerThread&& other) noexcept;
  WorkerThread(const WorkerThread&) = delete;
  WorkerThread& operator=(const WorkerThread&) = delete;
  ~WorkerThread();  // joins when still joinable

  bool joinable() const { return worker_ != nullptr; }
  void join();  // waits for the task to return

 private:
  std::shared_ptr<detail::ParkedWorker> worker_;
  uint64_t ticket_ = 0;
};

// Held around a fork(): every thread of the cache that was starting has started (its runtime's
// start-up is over), every one that has left is joined (its exit is complete), and none starts or
// leaves until the guard ends (one that would waits for it). A thread's start and exit take the
// allocator's and the thread registry's locks. glibc resets its own in a child of fork();
// AddressSanitizer's runtime (GCC 12's) does not, so a start or an exit at the moment of a fork
// could leave the child waiting for good on its first allocation. Parked threads hold no lock;
// threads running tasks, and threads that are not the cache's, are the caller's to have stopped
// or let start before it forks: this guard covers the cache's threads only.
class NoWorkerThreadLeaving {
 public:
  NoWorkerThreadLeaving();
  ~NoWorkerThreadLeaving();
  NoWorkerThreadLeaving(const NoWorkerThreadLeaving&) = delete;
  NoWorkerThreadLeaving& operator=(const NoWorkerThreadLeaving&) = delete;

 private:
  std::unique_lock<std::mutex> lock_;
};

// Ends every parked thread and waits until each has left the process (for tests that count its
// threads, and before a fork under ThreadSanitizer: mp::ProcessGroup; a running program never
// needs it). Returns how many there were.
int release_parked_worker_threads();
int parked_worker_threads();

}  // namespace pipeprof::pipelines::ops
