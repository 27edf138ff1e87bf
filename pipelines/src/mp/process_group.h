// ProcessGroup: producer processes created with fork(), each connected to the parent by its own
// Unix stream socket, watched through a pidfd, and always reaped.
//
// fork() copies only the calling thread. The child therefore touches no lock another parent thread
// might have held at the fork beyond the allocator's (glibc's malloc resets them in the child; no
// worker thread's exit, which hands memory back to the allocator, is under way at the fork:
// ops::NoWorkerThreadLeaving, for allocators that are not reset, AddressSanitizer's): it closes
// every inherited descriptor except its socket and the standard streams, resets SIGINT (ignored:
// Ctrl-C is the parent's to handle, and the parent ends its children), SIGTERM and SIGPIPE
// (defaults, SIGPIPE ignored), asks for SIGKILL when the parent dies, and then runs only its own
// fresh pipeline. It leaves with _exit(), so no atexit handler or static destructor of the parent
// runs twice.
//
// terminate() (also run by the destructor): SIGTERM to every child still running, up to
// `grace_ms` for them to exit, then SIGKILL, and waitpid for each: no process is left behind.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mp/shared_semaphores.h"
#include "mp/unique_fd.h"

namespace pipeprof::pipelines::mp {

// "exited normally", "exited with status 3", "was killed by signal 9 (Killed)".
std::string describe_exit(int wait_status);

class ProcessGroup {
 public:
  // Child i runs body(i, socket_fd); its return value is its exit status (an exception: 70).
  using Body = std::function<int(int index, int socket_fd)>;

  ProcessGroup() = default;
  // Forks `count` children. `socket_buffer_bytes` > 0 asks for socket buffers of that size.
  // When the children outnumber the CPUs this process may run on, they share one CPU turn per CPU
  // (cpu_turns.h). Throws std::system_error (after ending the children already started) when
  // fork fails.
  ProcessGroup(int count, const Body& body, int socket_buffer_bytes = 0);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int size() const { return static_cast<int>(children_.size()); }
  // Whether the children share CPU turns (they outnumber the CPUs).
  bool takes_turns() const { return turns_ != nullptr; }
  pid_t pid(int i) const { return children_[i].pid; }
  int socket(int i) const { return children_[i].socket.get(); }
  // Readable once the child has exited; -1 after it has been reaped.
  int pidfd(int i) const { return children_[i].pidfd.get(); }
  bool reaped(int i) const { return children_[i].reaped; }
  int wait_status(int i) const { return children_[i].status; }

  // Reaps child i if it exits within `timeout_ms` (0: only if it already has); returns whether it
  // is reaped. Its status is wait_status(i).
  bool reap(int i, int timeout_ms);
  // "producer 3 (pid 1234)".
  std::string name(int i) const;
  // name(i) with what the kernel says of the process when it is not running normally:
  // "producer 3 (pid 1234, stopped)"; also "waiting on the disk", "exited, not yet reaped".
  std::string name_with_state(int i) const;

  void terminate(int grace_ms = 500);

 private:
  struct Child {
    pid_t pid = -1;
    UniqueFd socket;
    UniqueFd pidfd;
    bool reaped = false;
    int status = 0;
  };
  [[noreturn]] static void run_child(int index, int socket_fd, const Body& body);

  std::unique_ptr<SharedSemaphores> turns_;  // made before the forks; the children's own copies
  std::vector<Child> children_;
};

}  // namespace pipeprof::pipelines::mp
