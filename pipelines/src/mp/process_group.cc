#include "mp/process_group.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <climits>
#include <cstring>
#include <system_error>

#include "io/http.h"
#include "mp/channel.h"
#include "mp/cpu_turns.h"
#include "ops/worker_thread.h"
#include "pipeprof/trace/clock.h"

// Whether this is a ThreadSanitizer build (GCC defines __SANITIZE_THREAD__, Clang has the feature).
#if defined(__SANITIZE_THREAD__)
#define PIPEPROF_THREAD_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PIPEPROF_THREAD_SANITIZER 1
#endif
#endif
#ifndef PIPEPROF_THREAD_SANITIZER
#define PIPEPROF_THREAD_SANITIZER 0
#endif

namespace pipeprof::pipelines::mp {
namespace {

constexpr bool kThreadSanitizer = PIPEPROF_THREAD_SANITIZER != 0;

int pidfd_open(pid_t pid) {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

// Closes every descriptor but 0, 1, 2 and `keep`.
void close_other_fds(int keep) {
  if (keep > 3) ::close_range(3, static_cast<unsigned>(keep - 1), 0);
  ::close_range(static_cast<unsigned>(std::max(keep + 1, 3)), UINT_MAX, 0);
}

}  // namespace

std::string describe_exit(int status) {
  if (WIFEXITED(status)) {
    return WEXITSTATUS(status) == 0 ? "exited normally"
                                    : fmt::format("exited with status {}", WEXITSTATUS(status));
  }
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* text = ::strsignal(sig);
    return fmt::format("was killed by signal {} ({})", sig, text ? text : "unknown");
  }
  return fmt::format("ended with wait status {:#x}", status);
}

void ProcessGroup::run_child(int index, int socket_fd, const Body& body) {
  close_other_fds(socket_fd);
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGTERM, SIG_DFL);
  ::signal(SIGPIPE, SIG_IGN);
  int code = 70;
  try {
    code = body(index, socket_fd);
  } catch (...) {
    code = 70;
  }
  ::_exit(code);
}

ProcessGroup::ProcessGroup(int count, const Body& body, int socket_buffer_bytes) {
  children_.reserve(static_cast<size_t>(count));
  if (const int cpus = usable_cpus(); count > cpus)
    turns_ = std::make_unique<SharedSemaphores>(1, static_cast<unsigned>(cpus));
  const pid_t parent = ::getpid();
  // ThreadSanitizer's runtime ends a child of fork() that starts a thread when the parent had
  // other threads at the fork, even idle ones: the worker cache's parked threads (which hold no
  // lock, and which a test run of several tests in one process leaves behind) go first.
  if (kThreadSanitizer) ops::release_parked_worker_threads();
  for (int i = 0; i < count; ++i) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      const int err = errno;
      terminate();
      throw std::system_error(err, std::generic_category(), "socketpair for a producer");
    }
    UniqueFd mine(sv[0]), theirs(sv[1]);
    if (socket_buffer_bytes > 0) {
      set_socket_buffers(mine.get(), socket_buffer_bytes);
      set_socket_buffers(theirs.get(), socket_buffer_bytes);
    }
    pid_t pid = 0;
    {
      // No thread of the worker cache is leaving the process at the fork (ops/worker_thread.h).
      const ops::NoWorkerThreadLeaving quiet;
      pid = ::fork();
    }
    if (pid < 0) {
      const int err = errno;
      terminate();
      throw std::system_error(err, std::generic_category(), "fork of a producer process");
    }
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(71);  // the parent died before prctl took effect
      // The forking thread's HTTP connections are the parent's: the child opens its own.
      io::forget_http_connections_after_fork();
      use_cpu_turns(turns_.get());
      run_child(i, theirs.get(), body);
    }
    Child c;
    c.pid = pid;
    c.socket = std::move(mine);
    c.pidfd = UniqueFd(pidfd_open(pid));
    children_.push_back(std::move(c));
  }
}

ProcessGroup::~ProcessGroup() {
  terminate();
}

std::string ProcessGroup::name(int i) const {
  return fmt::format("producer {} (pid {})", i, children_[i].pid);
}

std::string ProcessGroup::name_with_state(int i) const {
  const Child& c = children_[i];
  // Only the pid is read (another thread may be reaping it): /proc/<pid>/stat is
  // "pid (comm) S ...", the state after the last ')'.
  const char* state = nullptr;
  std::ifstream in(fmt::format("/proc/{}/stat", c.pid));
  std::string stat;
  std::getline(in, stat);
  const size_t close = stat.rfind(')');
  if (close != std::string::npos && close + 2 < stat.size()) {
    switch (stat[close + 2]) {
      case 'T':
      case 't': state = "stopped"; break;
      case 'D': state = "waiting on the disk"; break;
      case 'Z': state = "exited, not yet reaped"; break;
      default: break;
    }
  }
  if (state == nullptr) return name(i);
  return fmt::format("producer {} (pid {}, {})", i, c.pid, state);
}

bool ProcessGroup::reap(int i, int timeout_ms) {
  Child& c = children_[i];
  if (c.reaped) return true;
  const int64_t deadline = trace::now_ns() + int64_t{timeout_ms} * 1'000'000;
  while (true) {
    int status = 0;
    const pid_t r = ::waitpid(c.pid, &status, WNOHANG);
    if (r == c.pid || (r < 0 && errno == ECHILD)) {
      c.reaped = true;
      c.status = r == c.pid ? status : 0;
      c.pidfd.reset();
      return true;
    }
    const int64_t left_ms = (deadline - trace::now_ns()) / 1'000'000;
    if (left_ms <= 0) return false;
    if (c.pidfd.valid()) {
      pollfd p{c.pidfd.get(), POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left_ms, 100)));
    } else {
      ::usleep(1000);
    }
  }
}

void ProcessGroup::terminate(int grace_ms) {
  for (size_t i = 0; i < children_.size(); ++i) {
    if (!children_[i].reaped && !reap(static_cast<int>(i), 0)) ::kill(children_[i].pid, SIGTERM);
  }
  const int64_t deadline = trace::now_ns() + int64_t{grace_ms} * 1'000'000;
  for (size_t i = 0; i < children_.size(); ++i) {
    const auto left_ms = std::max<int64_t>(0, (deadline - trace::now_ns()) / 1'000'000);
    if (!reap(static_cast<int>(i), static_cast<int>(left_ms))) {
      ::kill(children_[i].pid, SIGKILL);
      while (!reap(static_cast<int>(i), 1000)) {
      }
    }
    children_[i].socket.reset();
  }
}

}  // namespace pipeprof::pipelines::mp
