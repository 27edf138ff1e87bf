// Runs a command line through the shell and returns its exit code and its stdout and stderr
// together, for the tests of the command-line tools.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace pipeprof::testing {

struct CliResult {
  int code = -1;    // the exit code; -1 when the command could not run or was killed
  std::string out;  // stdout and stderr together
};

inline CliResult run_command(const std::string& command_line) {
  CliResult r;
  const std::string command = command_line + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buffer{};
  while (size_t n = fread(buffer.data(), 1, buffer.size(), pipe))
    r.out.append(buffer.data(), n);
  const int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Starts `command` in the background of a shell, runs `wait` (shell words: `sleep 4`, or a loop
// that waits for a line in a log), sends SIGINT to it and waits for it; the output ends with
// "rc=<its exit code>". A command started with & in sh ignores SIGINT until it installs its own
// handler, so `wait` should outlast the command's start.
inline CliResult interrupt_after(const std::string& command, const std::string& wait) {
  return run_command("sh -c '" + command + " & pid=$!; " + wait +
                     "; kill -INT $pid; wait $pid; echo \"rc=$?\"'");
}

}  // namespace pipeprof::testing
