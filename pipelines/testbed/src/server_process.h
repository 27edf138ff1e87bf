// What the test bed's servers (nginx's ObjectServer, the S3 server) share: free ports on
// 127.0.0.1, a readiness probe, a log's tail, the folders of servers whose owner died, and the
// thread that forks their processes (the parent-death signal fires when the forking thread exits,
// so that thread lives as long as the server).
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace pipeprof::testbed {

// A port nobody listens on now (the kernel's pick for port 0). Throws RemoteError naming `who`.
int free_port(const std::string& who);

// Whether something accepts connections on 127.0.0.1:port.
bool answers(int port);

// The last bytes of a log file, trailing blank space trimmed.
std::string tail_of(const std::filesystem::path& file, size_t max_bytes = 2000);

// Whether the file holds the pid of a live process (another user's counts as live).
bool pid_alive(const std::filesystem::path& file);

// Removes the folders named <prefix>* under `tmp` whose owner.pid names no live process (a
// pipeprof killed with SIGKILL cannot remove its own); a folder without owner.pid goes when it is
// an hour old and `fallback_pid_file` in it (if named) names no live process either.
void remove_stale_folders(const std::filesystem::path& tmp, const std::string& prefix,
                          const std::string& fallback_pid_file = "");

// A thread that runs jobs handed to it (forks) and lives until the server goes.
class Spawner {
 public:
  Spawner();
  ~Spawner();
  Spawner(const Spawner&) = delete;
  Spawner& operator=(const Spawner&) = delete;

  // Runs `job` on the thread; returns its result (errno is the job's).
  pid_t run(const std::function<pid_t()>& job);

  // Forks and execs argv[0] (a path) with its output appended to `log`, stdin from /dev/null,
  // no descriptor of ours but the standard streams, a parent-death SIGTERM, and process group
  // `group` (0: a group of its own). `env` is added to the environment. Returns the pid, or -1
  // (errno set).
  pid_t spawn(const std::vector<std::string>& argv, const std::filesystem::path& log, pid_t group = 0,
              const std::map<std::string, std::string>& env = {});

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable wake_;
  const std::function<pid_t()>* job_ = nullptr;
  pid_t result_ = -1;
  int error_ = 0;
  bool done_ = false;
  bool quit_ = false;
  std::thread thread_;
};

}  // namespace pipeprof::testbed
