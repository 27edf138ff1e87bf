#include "server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "pipeprof/pipelines/remote.h"

extern char** environ;

namespace pipeprof::testbed {

int free_port(const std::string& who) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw pipelines::RemoteError(fmt::format("{}: socket: {}", who, std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int err = errno;
    ::close(fd);
    throw pipelines::RemoteError(fmt::format("{}: no free port on 127.0.0.1: {}", who, std::strerror(err)));
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

bool answers(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

std::string tail_of(const std::filesystem::path& file, size_t max_bytes) {
  std::ifstream in(file, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.size() > max_bytes) text = "..." + text.substr(text.size() - max_bytes);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

bool pid_alive(const std::filesystem::path& file) {
  std::ifstream in(file);
  long value = 0;
  if (!(in >> value) || value <= 0) return false;
  return ::kill(static_cast<pid_t>(value), 0) == 0 || errno == EPERM;
}

void remove_stale_folders(const std::filesystem::path& tmp, const std::string& prefix,
                          const std::string& fallback_pid_file) {
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(tmp, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::filesystem::path dir = it->path();
    if (!dir.filename().string().starts_with(prefix)) continue;
    std::error_code e2;
    if (!std::filesystem::is_directory(dir, e2)) continue;
    bool stale = false;
    if (std::filesystem::exists(dir / "owner.pid", e2)) {
      stale = !pid_alive(dir / "owner.pid");
    } else {
      const auto age = std::filesystem::file_time_type::clock::now() -
                       std::filesystem::last_write_time(dir, e2);
      stale = !e2 && age > std::chrono::hours(1) &&
              (fallback_pid_file.empty() || !pid_alive(dir / fallback_pid_file));
    }
    if (stale) std::filesystem::remove_all(dir, e2);  // another user's: left alone (no permission)
  }
}

Spawner::Spawner() : thread_([this] { loop(); }) {}

Spawner::~Spawner() {
  {
    const std::lock_guard lock(mutex_);
    quit_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

pid_t Spawner::run(const std::function<pid_t()>& job) {
  std::unique_lock lock(mutex_);
  job_ = &job;
  done_ = false;
  wake_.notify_all();
  wake_.wait(lock, [&] { return done_; });
  errno = error_;
  return result_;
}

void Spawner::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return quit_ || job_ != nullptr; });
    if (quit_) return;
    result_ = (*job_)();
    error_ = errno;
    job_ = nullptr;
    done_ = true;
    wake_.notify_all();
  }
}

pid_t Spawner::spawn(const std::vector<std::string>& args, const std::filesystem::path& log, pid_t group,
                     const std::map<std::string, std::string>& env) {
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  argv.push_back(nullptr);
  // The environment, built before the fork (only async-signal-safe calls after it).
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const auto eq = entry.find('=');
    if (eq != std::string_view::npos && env.contains(std::string(entry.substr(0, eq)))) continue;
    env_strings.emplace_back(entry);
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<const char*> envp;
  for (const auto& e : env_strings) envp.push_back(e.c_str());
  envp.push_back(nullptr);
  const std::string log_s = log.string();
  const pid_t parent = ::getpid();
  const pid_t pid = run([&]() -> pid_t {
    const pid_t child = ::fork();
    if (child != 0) return child;
    ::setpgid(0, group);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);
    const int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) {
      ::dup2(null, STDIN_FILENO);
      ::dup2(null, STDOUT_FILENO);
    }
    const int err = ::open(log_s.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (err >= 0) {
      ::dup2(err, STDOUT_FILENO);
      ::dup2(err, STDERR_FILENO);
    }
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::close_range(3, ~0U, 0);
    ::execve(argv[0], const_cast<char* const*>(argv.data()), const_cast<char* const*>(envp.data()));
    ::_exit(127);
  });
  if (pid > 0) ::setpgid(pid, group == 0 ? pid : group);  // also here: it holds before either runs on
  return pid;
}

}  // namespace pipeprof::testbed
