// Starting the real `pipeprof` binary from the command-line tests (cli_test.cc,
// cli_signals_test.cc): to completion, with its output (run), or in the background with its output
// discarded (spawn_quiet), then waiting a limited time for it to exit (wait_exit). The test target
// defines PIPEPROF_BINARY, the binary's path.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "pipeprof_testing/run_command.h"

#ifndef PIPEPROF_BINARY
#error "cli_process.h needs PIPEPROF_BINARY, the path of the pipeprof binary"
#endif

namespace pipeprof::cli_testing {

// Runs pipeprof with `args` (a shell command line's words) and returns its exit code and output.
inline pipeprof::testing::CliResult run(const std::string& args) {
  return pipeprof::testing::run_command(std::string(PIPEPROF_BINARY) + " " + args);
}

// Starts pipeprof with `args` in a child process, its output discarded; returns the child's pid.
inline pid_t spawn_quiet(const std::vector<std::string>& args) {
  std::vector<char*> argv{const_cast<char*>(PIPEPROF_BINARY)};
  for (const auto& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, STDOUT_FILENO);
    dup2(devnull, STDERR_FILENO);
    execv(PIPEPROF_BINARY, argv.data());
    _exit(127);
  }
  return pid;
}

// Waits up to `limit` for `pid` to exit; its exit status, or -1 when it did not (it is killed).
inline int wait_exit(pid_t pid, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (std::chrono::steady_clock::now() < until) {
    if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return -1;
}

}  // namespace pipeprof::cli_testing
