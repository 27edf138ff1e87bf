// Stopping the real `pipeprof` binary while it runs: Ctrl-C (SIGINT) during `run` and `suite`
// exits 130 having written what was measured, also when the loop waits for an element that never
// comes, and leaves no producer process or shared memory behind; a stalled run (its producer
// processes stopped with SIGSTOP) is reported by the watchdog (--stall-report) and ended by
// --stall-timeout (exit 1). Tests that count leftover processes make themselves a subreaper, so a
// process that outlives pipeprof becomes their child.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "cli_process.h"
#include "pipeprof_testing/run_command.h"
#include "pipeprof_testing/temp_dir.h"

namespace {

using pipeprof::testing_support::TempDir;

using pipeprof::cli_testing::run;
using pipeprof::cli_testing::spawn_quiet;
using pipeprof::cli_testing::wait_exit;
using pipeprof::testing::CliResult;

// Two producer processes that read for a long time: the tests stop them (SIGSTOP).
constexpr const char* kTwoProducers = R"({
    "stages": [{"op": "multiprocess", "producers": 2, "pipeline": {"stages": [
      {"op": "artificial", "open_ms": 0, "read_ms": 20, "num_samples": 100000}]}}],
    "experiment": {"step": "sleep:1"}})";

// Stops (SIGSTOP) the child processes of `pid`; returns how many.
int stop_children(pid_t pid) {
  const CliResult children = pipeprof::testing::run_command("pgrep -P " + std::to_string(pid));
  int stopped = 0;
  std::istringstream ids(children.out);
  for (pid_t child = 0; ids >> child;) stopped += kill(child, SIGSTOP) == 0 ? 1 : 0;
  return stopped;
}

// Reaps what this process (a subreaper) inherited: the processes that outlived their parent.
int reap_leftovers() {
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  int status = 0;
  int leftovers = 0;
  while (waitpid(-1, &status, WNOHANG) > 0)
    ++leftovers;
  return leftovers;
}

// Ctrl-C while producers run: pipeprof exits 130 and leaves no process behind (this test adopts
// orphans as a subreaper, so a producer left running would be its child) and nothing in /dev/shm.
TEST(Run, CtrlCDuringProcessSourcesLeavesNoProcessOrSharedMemory) {
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  // Names in /dev/shm (other tests running beside this one, MPI's among them, add their own: only
  // new names of pipeprof's or of the process's are its leftovers).
  auto shm_entries = [] {
    std::set<std::string> names;
    std::error_code ec;
    for (auto it = std::filesystem::directory_iterator("/dev/shm", ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
      names.insert(it->path().filename().string());
    return names;
  };
  const std::set<std::string> shm_before = shm_entries();
  const TempDir tmp;
  const auto slow = tmp.write("slow_store.json", R"({
    "stages": [{"op": "shared_store", "producers": 3, "queue_capacity": 4, "store_mb": 16,
                "pipeline": {"stages": [{"op": "generator", "fn": "random_tensors",
                  "args": {"count": 1000, "shapes": [[1024]], "delay_ms": 20}}]}}],
    "experiment": {"step": "sleep:5"}})");
  const pid_t pid = spawn_quiet({"run", slow.string(), "--repetitions", "1"});
  ASSERT_GE(pid, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // producers are running
  kill(pid, SIGINT);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  // Any producer left would now be our child.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  int leftovers = 0;
  while (waitpid(-1, &status, WNOHANG) > 0)
    ++leftovers;
  errno = 0;
  EXPECT_EQ(waitpid(-1, &status, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD) << "a producer process is still running";
  EXPECT_EQ(leftovers, 0) << "producer processes outlived pipeprof";
  for (const std::string& name : shm_entries()) {
    if (shm_before.contains(name)) continue;
    EXPECT_TRUE(name.find("pipeprof") == std::string::npos && name.find(std::to_string(pid)) == std::string::npos)
        << "left in /dev/shm: " << name;
  }
  prctl(PR_SET_CHILD_SUBREAPER, 0);
}

// Ctrl-C while the loop waits for an element that no time brings: a source that opens for a day
// (the sleep is on the loop's own thread), and producer processes that were stopped (SIGSTOP).
// It was ignored; a second Ctrl-C aborted, writing nothing. Now: 130, with what was measured.
TEST(Run, CtrlCWhileWaitingForAnElementThatNeverComesExits130) {
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  const TempDir tmp;
  const auto day = tmp.write("day.json", R"({
    "stages": [{"op": "artificial", "open_ms": 86400000, "read_ms": 1, "num_samples": 10}],
    "experiment": {"step": "sleep:1"}})");
  const pid_t pid = spawn_quiet({"run", day.string(), "--repetitions", "1", "--json",
                                 (tmp / "day_result.json").string()});
  ASSERT_GE(pid, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  kill(pid, SIGINT);
  EXPECT_EQ(wait_exit(pid, std::chrono::seconds(20)), 130);
  EXPECT_TRUE(std::filesystem::exists(tmp / "day_result.json"));

  const auto stopped = tmp.write("stopped.json", kTwoProducers);
  const pid_t mp = spawn_quiet({"run", stopped.string(), "--repetitions", "1"});
  ASSERT_GE(mp, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the producers run
  EXPECT_EQ(stop_children(mp), 2);  // its children, the producers
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(mp, SIGINT);
  EXPECT_EQ(wait_exit(mp, std::chrono::seconds(20)), 130);
  // No producer left (they would now be this process's children).
  EXPECT_EQ(reap_leftovers(), 0) << "producers outlived pipeprof";
  int status = 0;
  errno = 0;
  EXPECT_EQ(waitpid(-1, &status, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD) << "a stopped producer is still there";
  prctl(PR_SET_CHILD_SUBREAPER, 0);
}

// A stopped producer process once left the run waiting forever, silently. The watchdog says whom
// it waits for (the producers, stopped), and --stall-timeout makes the stall an error (exit 1).
TEST(Run, AStallIsReportedAndTheStallTimeoutEndsIt) {
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  const TempDir tmp;
  const auto stopped = tmp.write("stopped.json", kTwoProducers);
  const auto log = tmp / "log.txt";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // A process group of its own, with this process (its parent) outside it in the same session:
    // the group is never orphaned while the test runs, so the kernel never sends its stopped
    // producers SIGHUP (which it does to the stopped members of a group that becomes orphaned,
    // as this test's own group may where the test runner starts it in a session of its own).
    setpgid(0, 0);
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    execl(PIPEPROF_BINARY, PIPEPROF_BINARY, "run", stopped.c_str(), "--repetitions", "1",
          "--stall-report", "0.5", "--stall-timeout", "3", static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the producers run
  EXPECT_EQ(stop_children(pid), 2);
  EXPECT_EQ(wait_exit(pid, std::chrono::seconds(30)), 1);
  std::ifstream in(log);
  const std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(out.find("warning: no progress for"), std::string::npos) << out;
  EXPECT_NE(out.find("the run stalled: no progress for 3.0 s (the stall timeout)"), std::string::npos) << out;
  EXPECT_NE(out.find("multiprocess: an element from producer 0 (pid "), std::string::npos) << out;
  EXPECT_NE(out.find(", stopped)"), std::string::npos) << out;
  EXPECT_EQ(reap_leftovers(), 0) << "producers outlived pipeprof";
  prctl(PR_SET_CHILD_SUBREAPER, 0);

  CliResult r = run("run naive --stall-timeout 0");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--stall-timeout: expected a number of seconds above 0"), std::string::npos) << r.out;
  r = run(std::string("workload ") + PIPEPROF_WORKLOADS_DIR + "/unet3d_h100.yaml --stall-report nan");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--stall-report: expected a number of seconds from 0 to 1000000"), std::string::npos)
      << r.out;
}

TEST(Suite, CtrlCStopsCleanlyAndWritesWhatWasMeasured) {
  const TempDir tmp;
  const auto dir = tmp / "out";
  const pid_t pid = spawn_quiet({"suite", "--repetitions", "3", "--out", dir.string()});
  ASSERT_GE(pid, 0);
  // Interrupted once the first experiment is done (its trace is written at once): on a loaded
  // machine that can take much longer than the ~1.3 s it takes on a quiet one.
  const auto first_done = dir / "traces" / "naive.json";
  for (int i = 0; i < 600 && !std::filesystem::exists(first_done); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(std::filesystem::exists(first_done)) << "the first experiment did not finish in 60 s";
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // into the second experiment
  kill(pid, SIGINT);
  int status = 0;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10))
      << "stopping took too long";
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  std::ifstream in(dir / "results.json");
  ASSERT_TRUE(in.good()) << "results.json was not written";
  const auto j = nlohmann::json::parse(in);
  EXPECT_TRUE(j["interrupted"].get<bool>());
  EXPECT_GE(j["experiments"].size(), 1u);
  EXPECT_LT(j["experiments"].size(), 11u);
}

}  // namespace
