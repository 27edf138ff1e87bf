#include "ops/worker_thread.h"

#include <pthread.h>

#include <algorithm>
#include <cstdlib>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace pipeprof::pipelines::ops {
namespace detail {

// One thread of the cache. `assigned` counts the tasks given to it, `completed` those that have
// returned; a WorkerThread waits for `completed` to reach its ticket.
struct ParkedWorker {
  std::string name;
  std::mutex mu;
  std::condition_variable cv;
  std::function<void()> task;  // the next task (guarded by mu)
  uint64_t assigned = 0, completed = 0;
  bool exit = false;    // asked to leave while parked
  bool exited = false;  // has left its loop
  // The thread's own handle: set by its spawner before the thread can take `mu`, then touched only
  // by the thread, which hands it to the cache's `leaving` list as it leaves.
  std::thread self;
};

}  // namespace detail

namespace {

using detail::ParkedWorker;

struct Cache {
  std::mutex mu;
  std::vector<std::shared_ptr<ParkedWorker>> parked;  // oldest first
  // Threads that have left the cache for good and are leaving the process, or have left it: joined
  // (under `mu`) by the next spawn, by a NoWorkerThreadLeaving and by release_parked_worker_threads.
  std::vector<std::thread> leaving;
  // Threads created and not yet in run_worker (still in the runtime's own start-up).
  int starting = 0;
  std::condition_variable started;  // `starting` went down
};

// Never destroyed: threads may still be parked in it while the process exits. A child
// created by fork() gets a fresh one (the parent's lock may have been held by another thread at
// the fork, and its parked threads were not copied).
Cache* g_cache = nullptr;

void join_all(std::vector<std::thread>& threads) {
  for (std::thread& t : threads)
    t.join();
  threads.clear();
}

Cache& cache() {
  static std::once_flag once;
  std::call_once(once, [] {
    g_cache = new Cache;  // NOLINT(cppcoreguidelines-owning-memory): intentionally never freed
    ::pthread_atfork(nullptr, nullptr, [] { g_cache = new Cache; });
    // At exit, the threads that have left are joined: nothing else would (a spawn, a release
    // or a NoWorkerThreadLeaving joins them otherwise), and a thread that ended unjoined is a leak
    // to ThreadSanitizer. Parked ones keep waiting: the process's end takes them. An exit while
    // the lock is held (a NoWorkerThreadLeaving around a fork) does not wait for it.
    std::atexit([] {
      const std::unique_lock<std::mutex> lock(g_cache->mu, std::try_to_lock);
      if (lock.owns_lock()) join_all(g_cache->leaving);
    });
  });
  return *g_cache;
}

// Takes `w` out of the parked list; false when it was not there (a spawner took it first).
bool unpark(Cache& c, const std::shared_ptr<ParkedWorker>& w) {
  const auto it = std::find(c.parked.begin(), c.parked.end(), w);
  if (it == c.parked.end()) return false;
  c.parked.erase(it);
  return true;
}

// Called by the thread of `w`, under the cache's lock, once it knows it leaves: from then on it
// touches neither the cache nor anything of a task, and whoever joins it waits for its whole exit.
void announce_leaving(Cache& c, ParkedWorker& w) {
  if (w.self.joinable()) c.leaving.push_back(std::move(w.self));
}

// A thread counted in `starting` has started, or will not: under the cache's lock.
void done_starting(Cache& c) {
  --c.starting;
  c.started.notify_all();
}

void run_worker(std::shared_ptr<ParkedWorker> w) {
  {
    // The runtime's start-up of this thread is over (a NoWorkerThreadLeaving waits for it).
    Cache& c = cache();
    const std::lock_guard<std::mutex> cache_lock(c.mu);
    done_starting(c);
  }
  std::unique_lock<std::mutex> lock(w->mu);
  while (true) {
    if (w->assigned == w->completed) {
      // Parked: wait for a task, for release, or until idle for too long.
      const bool woken = w->cv.wait_for(lock, WorkerThread::kIdleExit,
                                        [&] { return w->assigned > w->completed || w->exit; });
      if (!woken || (w->exit && w->assigned == w->completed)) {
        const bool asked = w->exit;  // by release, which unparked it first
        lock.unlock();
        bool leave = false;
        {
          Cache& c = cache();
          const std::lock_guard<std::mutex> cache_lock(c.mu);
          // Asked to leave, or idle and nobody took it meanwhile.
          leave = unpark(c, w) || asked;
          if (leave) announce_leaving(c, *w);
        }
        lock.lock();
        if (leave) break;
        continue;  // a spawner took it: its task is on the way
      }
    }
    std::function<void()> task = std::move(w->task);
    w->task = nullptr;
    lock.unlock();
    task();  // an exception ends the process, as it would on a std::thread
    task = nullptr;  // the task's captures go before the joiner hears of it
    bool parked = false;
    {
      Cache& c = cache();
      const std::lock_guard<std::mutex> cache_lock(c.mu);
      if (static_cast<int>(c.parked.size()) < WorkerThread::kMaxParked) {
        // Parked before the joiner is told: the next epoch's spawn of this name finds it.
        c.parked.push_back(w);
        parked = true;
      } else if (w->assigned == w->completed + 1) {
        // No room, and no task can come (only a parked thread is given one): it leaves, announced
        // before the joiner is told.
        announce_leaving(c, *w);
      }
    }
    lock.lock();
    ++w->completed;
    w->cv.notify_all();
    if (!parked && w->assigned == w->completed) break;
  }
  w->exited = true;
  w->cv.notify_all();
}

}  // namespace

WorkerThread::WorkerThread(std::string name, std::function<void()> task) {
  Cache& c = cache();
  std::shared_ptr<ParkedWorker> w;
  {
    const std::lock_guard<std::mutex> lock(c.mu);
    join_all(c.leaving);  // threads that have left: their exits are (nearly) done
    for (auto it = c.parked.rbegin(); it != c.parked.rend(); ++it) {
      if ((*it)->name == name) {
        w = *it;
        c.parked.erase(std::next(it).base());
        break;
      }
    }
    if (w == nullptr) ++c.starting;
  }
  const bool fresh = w == nullptr;
  std::exception_ptr no_thread;
  {
    if (fresh) {
      w = std::make_shared<ParkedWorker>();
      w->name = std::move(name);
    }
    const std::lock_guard<std::mutex> lock(w->mu);
    w->task = std::move(task);
    ticket_ = ++w->assigned;
    // The new thread's first step after its start takes `mu`: its handle is in place before it
    // can leave.
    if (fresh) {
      try {
        w->self = std::thread(run_worker, w);
      } catch (...) {
        no_thread = std::current_exception();
      }
    }
  }
  if (no_thread) {
    {
      const std::lock_guard<std::mutex> lock(c.mu);
      done_starting(c);
    }
    std::rethrow_exception(no_thread);  // std::system_error, as std::thread throws
  }
  if (!fresh) w->cv.notify_all();
  worker_ = std::move(w);
}

WorkerThread::WorkerThread(WorkerThread&& other) noexcept
    : worker_(std::move(other.worker_)), ticket_(std::exchange(other.ticket_, 0)) {}

WorkerThread& WorkerThread::operator=(WorkerThread&& other) noexcept {
  if (this != &other) {
    if (joinable()) join();
    worker_ = std::move(other.worker_);
    ticket_ = std::exchange(other.ticket_, 0);
  }
  return *this;
}

WorkerThread::~WorkerThread() {
  if (joinable()) join();
}

void WorkerThread::join() {
  if (!worker_) return;
  {
    std::unique_lock<std::mutex> lock(worker_->mu);
    worker_->cv.wait(lock, [&] { return worker_->completed >= ticket_; });
  }
  worker_.reset();
}

int release_parked_worker_threads() {
  std::vector<std::shared_ptr<ParkedWorker>> all;
  {
    Cache& c = cache();
    const std::lock_guard<std::mutex> lock(c.mu);
    all.swap(c.parked);
  }
  for (const auto& w : all) {
    const std::lock_guard<std::mutex> lock(w->mu);
    w->exit = true;
    w->cv.notify_all();
  }
  for (const auto& w : all) {
    std::unique_lock<std::mutex> lock(w->mu);
    w->cv.wait(lock, [&] { return w->exited; });
  }
  // Each has announced its leaving before it left its loop: joined, it is gone from the process.
  {
    Cache& c = cache();
    const std::lock_guard<std::mutex> lock(c.mu);
    join_all(c.leaving);
  }
  return static_cast<int>(all.size());
}

NoWorkerThreadLeaving::NoWorkerThreadLeaving() : lock_(cache().mu) {
  Cache& c = cache();
  c.started.wait(lock_, [&] { return c.starting == 0; });
  join_all(c.leaving);
}

NoWorkerThreadLeaving::~NoWorkerThreadLeaving() = default;

int parked_worker_threads() {
  Cache& c = cache();
  const std::lock_guard<std::mutex> lock(c.mu);
  return static_cast<int>(c.parked.size());
}

}  // namespace pipeprof::pipelines::ops
