#include "pipeprof/harness/subprocess.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace pipeprof::harness {
namespace {

// Closes its descriptor when it goes.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

struct FileActions {
  posix_spawn_file_actions_t actions{};
  FileActions() { posix_spawn_file_actions_init(&actions); }
  ~FileActions() { posix_spawn_file_actions_destroy(&actions); }
};

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::optional<std::filesystem::path>& output_file) {
  if (argv.empty()) throw std::invalid_argument("run_process: no program");
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  ProcessResult result;
  FileActions fa;
  Fd read_end, write_end;  // the pipe that captures the output, when there is no file
  if (output_file) {
    posix_spawn_file_actions_addopen(&fa.actions, STDOUT_FILENO, output_file->c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa.actions, STDOUT_FILENO, STDERR_FILENO);
  } else {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      result.output = fmt::format("{}: cannot make a pipe: {}", argv[0], std::strerror(errno));
      return result;
    }
    read_end.fd = fds[0];
    write_end.fd = fds[1];
    posix_spawn_file_actions_adddup2(&fa.actions, write_end.fd, STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa.actions, write_end.fd, STDERR_FILENO);
  }
  pid_t pid = 0;
  if (const int rc = ::posix_spawnp(&pid, args[0], &fa.actions, nullptr, args.data(), environ);
      rc != 0) {
    result.output = fmt::format("{}: cannot start{}: {}", argv[0],
                                output_file ? " (its output to " + output_file->string() + ")" : "",
                                std::strerror(rc));
    return result;
  }
  result.started = true;
  if (!output_file) {
    ::close(write_end.fd);  // the child holds its copy; EOF comes when it exits
    write_end.fd = -1;
    char buf[4096];
    for (;;) {
      const ssize_t n = ::read(read_end.fd, buf, sizeof(buf));
      if (n > 0) {
        result.output.append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        break;
      }
    }
  }
  result.exit_code = wait_for(pid);
  return result;
}

}  // namespace pipeprof::harness
