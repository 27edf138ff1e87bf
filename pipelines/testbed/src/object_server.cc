#include "pipeprof/testbed/object_server.h"

#include "server_process.h"

// The object server: nginx started on 127.0.0.1 with a generated configuration in a temporary
// folder of its own (config, error log, pid file, nginx's temporary files), in a process group of
// its own so that every nginx process can be signalled at once, and with a parent-death signal so
// that it stops when the process that started it dies without stopping it.
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <fstream>
#include <sstream>
#include <thread>


namespace pipeprof::testbed {
using namespace pipeprof::pipelines;
namespace {

constexpr const char* kEchoModule = "/usr/lib/nginx/modules/ngx_http_echo_module.so";

std::string find_nginx(const std::string& configured) {
  if (!configured.empty()) return ::access(configured.c_str(), X_OK) == 0 ? configured : "";
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::stringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');) {
      if (dir.empty()) continue;
      const std::string candidate = dir + "/nginx";
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
  }
  for (const char* candidate : {"/usr/sbin/nginx", "/usr/local/sbin/nginx"}) {
    if (::access(candidate, X_OK) == 0) return candidate;
  }
  return "";
}

bool pid_file_holds(const std::filesystem::path& file, pid_t pid) {
  std::ifstream in(file);
  long value = 0;
  return static_cast<bool>(in >> value) && value == pid;
}

// nginx's quoting for a path in its configuration.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

bool ObjectServer::available(bool with_latency, std::string* why) {
  if (find_nginx("").empty()) {
    if (why != nullptr) *why = "nginx is not installed (Debian: nginx-light)";
    return false;
  }
  if (with_latency && ::access(kEchoModule, R_OK) != 0) {
    if (why != nullptr) {
      *why = fmt::format("nginx's echo module ({}) is not installed (Debian: "
                         "libnginx-mod-http-echo)",
                         kEchoModule);
    }
    return false;
  }
  return true;
}

ObjectServer::ObjectServer(ObjectServerOptions options)
    : options_(std::move(options)), spawner_(std::make_unique<Spawner>()) {
  std::error_code ec;
  if (!std::filesystem::is_directory(options_.root, ec)) {
    throw RemoteError(fmt::format("object server: {} is not a folder", options_.root.string()));
  }
  options_.root = std::filesystem::absolute(options_.root);
  // The echo module sleeps in whole milliseconds.
  options_.latency = std::chrono::round<std::chrono::milliseconds>(options_.latency);
  if (options_.latency.count() < 0 || options_.rate_bytes_per_second < 0) {
    throw RemoteError("object server: latency and rate must not be negative");
  }
  std::string why;
  if (!available(options_.latency.count() > 0, &why)) throw RemoteError("object server: " + why);
  const std::filesystem::path tmp = std::filesystem::temp_directory_path();
  remove_stale_folders(tmp, "pipeprof-nginx-", "nginx.pid");
  std::string tmpl = (tmp / "pipeprof-nginx-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    throw RemoteError(fmt::format("object server: cannot create a temporary folder: {}",
                                  std::strerror(errno)));
  }
  dir_ = tmpl;
  try {
    std::ofstream(dir_ / "owner.pid") << ::getpid() << "\n";
    std::filesystem::create_directories(dir_ / "tmp");
    port_ = options_.port;
    launch();
  } catch (...) {
    std::filesystem::remove_all(dir_, ec);
    throw;
  }
}

ObjectServer::~ObjectServer() {
  try {
    stop();
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor reports nothing
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string ObjectServer::url() const {
  return fmt::format("http://127.0.0.1:{}/", port_);
}

void ObjectServer::launch() {
  const std::string nginx = find_nginx(options_.nginx);
  if (nginx.empty()) {
    throw RemoteError(options_.nginx.empty()
                          ? "object server: nginx is not installed (Debian: nginx-light)"
                          : fmt::format("object server: {} is not an executable", options_.nginx));
  }
  const bool pick_port = port_ == 0;
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (pick_port) port_ = free_port("object server");
    const auto conf = dir_ / "nginx.conf";
    const auto log = dir_ / "error.log";
    {
      std::ofstream out(conf, std::ios::trunc);
      const bool latency = options_.latency.count() > 0;
      // In the location that serves the file (set at the server level, it is lost on the way
      // through echo_exec). nginx waits bytes/rate after each piece it sends, so the pieces must
      // be small for the limit to hold on objects smaller than a socket buffer: a piece of at
      // most 10 ms at the rate (a response's last piece goes out at once).
      const int64_t rate = options_.rate_bytes_per_second;
      const std::string limit =
          rate > 0 ? fmt::format(" limit_rate {}; sendfile_max_chunk {}; output_buffers 2 {};",
                                 rate, std::max<int64_t>(4096, rate / 100),
                                 std::max<int64_t>(4096, rate / 100))
                   : std::string();
      if (latency) out << "load_module " << kEchoModule << ";\n";
      // Started as root, nginx's workers would run as nobody and could not read a private folder:
      // they keep the user that started the server.
      if (::geteuid() == 0) out << "user root;\n";
      // multi_accept: a worker takes every connection waiting at once. nginx otherwise accepts one
      // per pass of its event loop, and a run whose loaders open hundreds of connections together
      // has them accepted over seconds while the first ones already stream: at 256 streams of
      // 2.3 MB objects an accelerator waited 1.4-2.2 s on the mean for the last one's first batch
      // (0.18-0.24 s with it).
      out << "daemon off;\nworker_processes " << std::max(1, options_.workers) << ";\n"
          << "pid " << quoted((dir_ / "nginx.pid").string()) << ";\n"
          << "error_log " << quoted(log.string()) << " warn;\n"
          << "events { worker_connections 4096; multi_accept on; }\n"
          << "http {\n  access_log off;\n  sendfile on;\n  tcp_nopush on;\n"
          << "  keepalive_requests 1000000;\n  keepalive_timeout 300s;\n"
          << "  default_type application/octet-stream;\n";
      for (const char* kind : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"}) {
        out << "  " << kind << "_temp_path " << quoted((dir_ / "tmp").string()) << ";\n";
      }
      out << "  server {\n    listen 127.0.0.1:" << port_ << ";\n"
          << "    root " << quoted(options_.root.string()) << ";\n";
      for (const auto& [prefix, status] : options_.fixed_status) {
        // "=/path": that path only; otherwise everything under the prefix.
        if (prefix.starts_with("=")) {
          out << "    location = " << quoted(prefix.substr(1)) << " { return " << status << "; }\n";
        } else {
          out << "    location ^~ " << quoted(prefix) << " { return " << status << "; }\n";
        }
      }
      if (latency) {
        // The delay, then the file (or the folder's JSON index) from a named location: ranges,
        // Content-Length and sendfile as without it.
        out << fmt::format("    location / {{ echo_sleep {:.3f}; echo_exec @object; }}\n",
                           static_cast<double>(options_.latency.count()) / 1e6)
            << "    location @object { autoindex on; autoindex_format json;" << limit << " }\n";
      } else {
        out << "    location / { autoindex on; autoindex_format json;" << limit << " }\n";
      }
      out << "  }\n}\n";
      if (!out) throw RemoteError(fmt::format("object server: cannot write {}", conf.string()));
    }
    std::error_code ec;
    std::filesystem::remove(log, ec);
    const std::string prefix = dir_.string() + "/";
    const std::string conf_s = conf.string();
    const std::string log_s = log.string();
    // nginx is forked by the server's own thread, which lives as long as the server (the
    // parent-death signal fires when the forking thread exits).
    const pid_t pid = spawner_->spawn({nginx, "-p", prefix, "-c", conf_s, "-e", log_s}, log);
    if (pid < 0) throw RemoteError(fmt::format("object server: fork: {}", std::strerror(errno)));
    ::setpgid(pid, pid);  // also here, so that it holds before either side runs on
    pid_ = pid;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    bool exited = false;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        exited = true;
        pid_ = -1;
        break;
      }
      // Ready: nginx writes its pid file once its sockets are bound (so that an answer on the
      // port is this nginx's, not another process's that took the port meanwhile).
      if (pid_file_holds(dir_ / "nginx.pid", pid) && answers(port_)) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    const std::string why = tail_of(log);
    if (!exited) {
      reap(std::chrono::milliseconds(0));
      throw RemoteError(fmt::format("object server: nginx did not answer on port {} within 10 s{}",
                                    port_, why.empty() ? "" : ": " + why));
    }
    if (pick_port && why.find("Address already in use") != std::string::npos) continue;
    throw RemoteError(fmt::format("object server: nginx exited at start: {}",
                                  why.empty() ? "(no message)" : why));
  }
  throw RemoteError("object server: no free port found in 5 tries");
}

void ObjectServer::reap(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return;
  const auto deadline = std::chrono::steady_clock::now() + grace;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(-pid_, SIGKILL);
      ::kill(pid_, SIGKILL);
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  // Workers outlive their master for a moment after it is killed: they are in its group.
  ::kill(-pid_, SIGKILL);
  pid_ = -1;
}

bool ObjectServer::alive() {
  if (pid_ <= 0) return false;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_ || (r < 0 && errno == ECHILD)) {
    ::kill(-pid_, SIGKILL);  // workers left without their master
    pid_ = -1;
    return false;
  }
  return true;
}

void ObjectServer::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);  // nginx's fast shutdown: open transfers are cut
  reap(std::chrono::seconds(5));
}

void ObjectServer::kill() {
  if (pid_ <= 0) return;
  ::kill(-pid_, SIGKILL);
  reap(std::chrono::seconds(5));
}

void ObjectServer::start() {
  if (pid_ > 0) return;
  launch();
}

}  // namespace pipeprof::testbed
