// The wait registry the run's watchdog reads (waits.h): open scopes of every thread, oldest first,
// described only when looked at; progress summed over threads, those that ended included.
#include "pipeprof/pipelines/waits.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <latch>
#include <string>
#include <thread>

namespace pipeprof::pipelines {
namespace {

bool has_wait(const std::vector<OpenWait>& waits, const std::string& what) {
  return std::any_of(waits.begin(), waits.end(), [&](const OpenWait& w) { return w.what == what; });
}

TEST(Waits, OpenScopesAreListedOldestFirstAndGoneWhenTheyEnd) {
  int described = 0;
  auto outer = [&] {
    ++described;
    return std::string("outer wait");
  };
  {
    WaitScope a(outer);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    auto inner = [] { return std::string("inner wait"); };
    {
      WaitScope b(inner);
      EXPECT_EQ(described, 0) << "described only when the watchdog looks";
      const std::vector<OpenWait> waits = open_waits();
      ASSERT_TRUE(has_wait(waits, "outer wait"));
      ASSERT_TRUE(has_wait(waits, "inner wait"));
      const auto at = [&](const char* what) {
        return std::find_if(waits.begin(), waits.end(), [&](const OpenWait& w) { return w.what == what; });
      };
      EXPECT_LT(at("outer wait"), at("inner wait")) << "the oldest first";
      EXPECT_LT(at("outer wait")->since_ns, at("inner wait")->since_ns);
      EXPECT_EQ(at("outer wait")->thread, static_cast<int64_t>(::gettid()));
    }
    const std::vector<OpenWait> waits = open_waits();
    EXPECT_TRUE(has_wait(waits, "outer wait"));
    EXPECT_FALSE(has_wait(waits, "inner wait"));
  }
  EXPECT_FALSE(has_wait(open_waits(), "outer wait"));
}

TEST(Waits, AnotherThreadsWaitIsSeenWhileItBlocks) {
  std::latch entered(1), release(1);
  std::thread t([&] {
    const std::string path = "/data/stuck-file.npz";
    auto what = [&] { return "reading " + path; };
    WaitScope wait(what);
    entered.count_down();
    release.wait();
  });
  entered.wait();
  EXPECT_TRUE(has_wait(open_waits(), "reading /data/stuck-file.npz"));
  release.count_down();
  t.join();
  EXPECT_FALSE(has_wait(open_waits(), "reading /data/stuck-file.npz"));
}

TEST(Waits, ADescriptionThatThrowsIsListedAsSuch) {
  auto broken = []() -> std::string { throw std::runtime_error("no"); };
  WaitScope wait(broken);
  EXPECT_TRUE(has_wait(open_waits(), "(a wait that could not be described)"));
}

TEST(Waits, ProgressIsSummedOverThreadsThoseThatEndedIncluded) {
  const uint64_t before = progress_count();
  note_progress();
  EXPECT_EQ(progress_count(), before + 1);
  std::thread t([] {
    for (int i = 0; i < 10; ++i)
      note_progress();
  });
  t.join();
  EXPECT_EQ(progress_count(), before + 11) << "a thread's progress stays counted after it ends";
}

TEST(Waits, AForkedChildSeesOnlyItsOwnWaits) {
  std::latch entered(1), release(1);
  std::thread t([&] {
    auto what = [] { return std::string("the parent's other thread"); };
    WaitScope wait(what);
    entered.count_down();
    release.wait();
  });
  entered.wait();
  const pid_t child = ::fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    // The parent's other thread does not exist here: its slot is gone; this thread's scopes work.
    auto mine = [] { return std::string("the child's wait"); };
    WaitScope wait(mine);
    const std::vector<OpenWait> waits = open_waits();
    const bool ok = waits.size() == 1 && waits[0].what == "the child's wait";
    note_progress();
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  release.count_down();
  t.join();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child listed waits other than its own";
}

}  // namespace
}  // namespace pipeprof::pipelines
