// Worker threads kept for reuse (ops/worker_thread.h): a task runs and is joined like a thread's;
// the thread parks and takes the next task of its name; other names get threads of their own;
// tasks of one name started together run at once; parked threads are let go on request; an
// epoch of a pipeline reuses the threads of the epoch before.
#include "ops/worker_thread.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/functions.h"
#include "pipeprof_testing/run_command.h"
#include "test_util.h"

namespace pipeprof::pipelines::ops {
namespace {

using namespace std::chrono_literals;

int64_t tid() {
  return static_cast<int64_t>(::syscall(SYS_gettid));
}

TEST(WorkerThread, JoinWaitsForTheTaskAndTheThreadIsReusedUnderItsName) {
  release_parked_worker_threads();
  std::atomic<bool> done{false};
  int64_t first = 0, second = 0, other = 0;
  WorkerThread a("test worker #0", [&] {
    std::this_thread::sleep_for(20ms);
    first = tid();
    done = true;
  });
  EXPECT_TRUE(a.joinable());
  a.join();
  EXPECT_FALSE(a.joinable());
  EXPECT_TRUE(done.load());  // join returned after the task
  EXPECT_NE(first, tid());
  EXPECT_EQ(parked_worker_threads(), 1);
  WorkerThread("test worker #0", [&] { second = tid(); }).join();
  EXPECT_EQ(second, first) << "the parked thread of the same name runs the next task";
  WorkerThread("test worker #1", [&] { other = tid(); }).join();
  EXPECT_NE(other, first) << "a parked thread only takes tasks of its own name";
  EXPECT_EQ(parked_worker_threads(), 2);
  EXPECT_EQ(release_parked_worker_threads(), 2);
  EXPECT_EQ(parked_worker_threads(), 0);
}

TEST(WorkerThread, TasksOfOneNameStartedTogetherRunAtOnce) {
  release_parked_worker_threads();
  std::atomic<int> inside{0}, most{0};
  std::mutex mu;
  std::set<int64_t> tids;
  {
    std::vector<WorkerThread> threads;
    for (int i = 0; i < 3; ++i) {
      threads.emplace_back("test same #0", [&] {
        const int now = ++inside;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::sleep_for(50ms);
        --inside;
        const std::lock_guard<std::mutex> lock(mu);
        tids.insert(tid());
      });
    }
  }  // the destructors join
  EXPECT_EQ(most.load(), 3);
  EXPECT_EQ(tids.size(), 3U);
  EXPECT_EQ(release_parked_worker_threads(), 3);
}

TEST(WorkerThread, MovedHandlesJoinOnce) {
  std::atomic<int> runs{0};
  WorkerThread a("test move #0", [&] { ++runs; });
  WorkerThread b(std::move(a));
  EXPECT_FALSE(a.joinable());  // NOLINT(bugprone-use-after-move): moved-from state is specified
  EXPECT_TRUE(b.joinable());
  WorkerThread c;
  c = std::move(b);
  c.join();
  EXPECT_EQ(runs.load(), 1);
  c.join();  // a no-op once joined
  release_parked_worker_threads();
}

TEST(WorkerThread, AReleasedThreadLeavesTheProcess) {
  // A first thread, so that threads a runtime starts with the first one (ThreadSanitizer's own)
  // are there before the count.
  WorkerThread("test release #0", [] {}).join();
  const int before = testing::thread_count();  // lets the parked one go
  WorkerThread("test release #0", [] {}).join();
  EXPECT_EQ(parked_worker_threads(), 1);
  // thread_count() lets parked threads go first: the count comes back.
  EXPECT_EQ(testing::wait_for_thread_count(before), before);
  EXPECT_EQ(parked_worker_threads(), 0);
}

// The tests' thread count must not count a thread that pthread_join has returned for: the kernel
// lists it in /proc/self/task for a moment after waking the joiner (a count right after a join
// came out one too high about once in 2,000 tries on a 2-core machine, failing teardown tests).
TEST(TestUtil, AJoinedThreadIsNotCounted) {
  const size_t before = testing::live_thread_ids().size();
  int counted_too_many = 0;
  for (int i = 0; i < 5000; ++i) {
    std::thread([] {}).join();
    if (testing::live_thread_ids().size() > before) ++counted_too_many;
  }
  EXPECT_EQ(counted_too_many, 0) << "of 5000 counts right after a join";
}

// Run in a process of its own by the next test: more threads than the cache parks finish
// together, so the extra ones leave (announced, not yet joined), and the process exits at once.
TEST(WorkerThreadExit, DISABLED_ThreadsThatLeftBeforeTheExit) {
  std::atomic<int> ready{0};
  std::vector<WorkerThread> workers;
  const int n = WorkerThread::kMaxParked + 8;
  for (int i = 0; i < n; ++i)
    workers.emplace_back("test exit", [&] {
      ++ready;
      while (ready.load() < n)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
  for (WorkerThread& w : workers)
    w.join();
}

// A thread that left the cache and ended is joined at the process's exit: one that ended unjoined
// is a leak (ThreadSanitizer reports it, and the process exits 66, under scripts/sanitize.sh).
TEST(WorkerThread, ThreadsThatLeftAreJoinedAtExit) {
  const pipeprof::testing::CliResult r = pipeprof::testing::run_command(
      // Sharded runs (scripts/sanitize.sh) must not shard the child's one test away.
      "env -u GTEST_TOTAL_SHARDS -u GTEST_SHARD_INDEX /proc/" + std::to_string(::getpid()) +
      "/exe --gtest_also_run_disabled_tests --gtest_filter=WorkerThreadExit.DISABLED_ThreadsThatLeftBeforeTheExit");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("ThreadSanitizer"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[  PASSED  ] 1 test"), std::string::npos) << r.out;
}

// A thread that leaves (here: the cache is full) is joined, not detached: once a
// NoWorkerThreadLeaving is held, its exit is complete, thread-local destructors included, so a
// fork taken under the guard meets no exit half done.
std::atomic<int> g_exits_done{0};
struct SlowExit {
  bool touched = false;
  ~SlowExit() {
    if (!touched) return;
    std::this_thread::sleep_for(250ms);  // an exit still under way when the joiner goes on
    ++g_exits_done;
  }
};
thread_local SlowExit t_slow_exit;

TEST(WorkerThread, AForkGuardWaitsForEveryThreadLeaving) {
  release_parked_worker_threads();
  g_exits_done = 0;
  constexpr int kThreads = WorkerThread::kMaxParked + 1;
  std::atomic<int> started{0};
  {
    std::vector<WorkerThread> threads;
    for (int i = 0; i < kThreads; ++i) {
      // All at once, so each needs a thread of its own.
      threads.emplace_back("test leave #0", [&] {
        t_slow_exit.touched = true;
        ++started;
        const auto deadline = std::chrono::steady_clock::now() + 30s;  // should a thread not start
        while (started.load() < kThreads && std::chrono::steady_clock::now() < deadline)
          std::this_thread::sleep_for(1ms);
      });
    }
  }  // joined: kMaxParked park, one leaves
  ASSERT_EQ(started.load(), kThreads);
  EXPECT_EQ(parked_worker_threads(), WorkerThread::kMaxParked);
  {
    const NoWorkerThreadLeaving guard;
    EXPECT_EQ(g_exits_done.load(), 1) << "the guard joined the thread that left";
  }
  EXPECT_EQ(release_parked_worker_threads(), WorkerThread::kMaxParked);
  EXPECT_EQ(g_exits_done.load(), kThreads) << "release joins the threads it lets go";
}

// The second epoch of a pipeline with a prefetch and a parallel map runs on the threads the first
// one parked: no new thread appears.
TEST(WorkerThread, TheNextEpochRunsOnTheParkedThreads) {
  release_parked_worker_threads();
  const Dataset ds = range(50)
                         .map(make_function("increment"), {.parallelism = 2})
                         .prefetch(4);
  auto epoch = [&] {
    auto it = ds.iterate();
    int64_t n = 0;
    while (it->next())
      ++n;
    EXPECT_EQ(n, 50);
  };
  epoch();
  const int parked = parked_worker_threads();
  EXPECT_EQ(parked, 3) << "the prefetch thread and the map's two workers";
  const std::vector<int64_t> ids_before = testing::live_thread_ids();
  const std::set<int64_t> threads_before(ids_before.begin(), ids_before.end());
  epoch();
  const std::vector<int64_t> ids_after = testing::live_thread_ids();
  const std::set<int64_t> threads_after(ids_after.begin(), ids_after.end());
  EXPECT_EQ(threads_after, threads_before);
  EXPECT_EQ(parked_worker_threads(), 3);
  release_parked_worker_threads();
}

}  // namespace
}  // namespace pipeprof::pipelines::ops
