// CPU turns: producers that outnumber the cores do their CPU-bound work at most one per core;
// elsewhere a turn never waits.
#include "mp/cpu_turns.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <new>
#include <thread>
#include <vector>

#include "mp/process_group.h"
#include "pipeprof/pipelines/sleep.h"

namespace pipeprof::pipelines {
namespace {

// Counters in memory shared with the children (lock-free atomics work across processes).
struct Inside {
  std::atomic<int> now{0};
  std::atomic<int> most{0};

  void enter() {
    const int n = now.fetch_add(1) + 1;
    int m = most.load();
    while (n > m && !most.compare_exchange_weak(m, n)) {
    }
  }
  void leave() { now.fetch_sub(1); }
  // Waits up to `seconds` for `n` to be inside at once.
  bool all_inside(int n, double seconds) const {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (now.load() < n) {
      if (std::chrono::steady_clock::now() > end) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }
};

class SharedInside {
 public:
  SharedInside() {
    void* p = ::mmap(nullptr, sizeof(Inside), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                     -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    inside_ = new (p) Inside;
  }
  ~SharedInside() {
    inside_->~Inside();
    ::munmap(inside_, sizeof(Inside));
  }
  SharedInside(const SharedInside&) = delete;
  SharedInside& operator=(const SharedInside&) = delete;
  Inside* operator->() const { return inside_; }
  Inside* get() const { return inside_; }

 private:
  Inside* inside_ = nullptr;
};

void reap_all(mp::ProcessGroup& group) {
  for (int i = 0; i < group.size(); ++i) {
    ASSERT_TRUE(group.reap(i, 60'000)) << group.name(i);
    EXPECT_EQ(group.wait_status(i), 0) << group.name(i) << " " << mp::describe_exit(group.wait_status(i));
  }
}

TEST(CpuTurns, ProducersThatOutnumberTheCoresDoTheirCpuWorkAtMostOnePerCore) {
  const int cpus = mp::usable_cpus();
  const SharedInside inside;
  Inside* in = inside.get();
  mp::ProcessGroup group(cpus + 2, [in](int, int) {
    for (int i = 0; i < 20; ++i) {
      const mp::CpuTurn turn;
      const mp::CpuTurn nested;  // keeps the turn it has: no second one, no deadlock
      in->enter();
      busy_for(3'000'000);  // 3 ms of CPU work, longer than a scheduler's time slice
      in->leave();
    }
    return 0;
  });
  EXPECT_TRUE(group.takes_turns());
  reap_all(group);
  EXPECT_GE(inside->most.load(), 1);
  EXPECT_LE(inside->most.load(), cpus) << "more producers did CPU work at once than there are cores";
}

TEST(CpuTurns, AGroupNoLargerThanTheCoresAndAProcessOutsideAGroupNeverWait) {
  const int cpus = mp::usable_cpus();
  {
    // Every child holds a turn until all of them hold one.
    const SharedInside inside;
    Inside* in = inside.get();
    mp::ProcessGroup group(cpus, [in, cpus](int, int) {
      const mp::CpuTurn turn;
      in->enter();
      return in->all_inside(cpus, 30) ? 0 : 1;
    });
    EXPECT_FALSE(group.takes_turns());
    reap_all(group);
  }
  // Here, outside any group: threads beyond the cores each hold a turn at once.
  Inside here;
  std::vector<std::thread> threads;
  std::atomic<int> waited_out{0};
  const int n = cpus + 2;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&] {
      const mp::CpuTurn turn;
      here.enter();
      if (!here.all_inside(n, 30)) ++waited_out;
    });
  }
  for (std::thread& t : threads)
    t.join();
  EXPECT_EQ(waited_out.load(), 0);
  EXPECT_EQ(here.most.load(), n);
}

}  // namespace
}  // namespace pipeprof::pipelines
