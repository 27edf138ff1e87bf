#include "pipeprof/testbed/s3_server.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

#include "pipeprof/pipelines/storage_io.h"
#include "server_process.h"

namespace pipeprof::testbed {
using pipelines::RemoteError;
namespace {

constexpr const char* kMemcached = "/usr/bin/memcached";
constexpr const char* kPython = "/usr/bin/python3";
constexpr const char* kServers[] = {"account", "container", "object"};

// A server exited at start because its port was taken meanwhile.
struct PortTaken {};

std::string bin(const std::string& name) {
  return "/usr/bin/" + name;
}

// Swift keeps an object's metadata in extended attributes of its file.
bool has_xattrs(const std::filesystem::path& dir) {
  const std::string p = dir.string();
  if (::setxattr(p.c_str(), "user.pipeprof", "1", 1, 0) != 0) return false;
  ::removexattr(p.c_str(), "user.pipeprof");
  return true;
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out) throw RemoteError(fmt::format("S3 server: cannot write {}", path.string()));
}

}  // namespace

bool S3Server::available(std::string* why) {
  std::vector<std::string> missing;
  for (const char* s : kServers) {
    if (::access(bin(fmt::format("swift-{}-server", s)).c_str(), X_OK) != 0)
      missing.push_back(fmt::format("swift-{}-server (Debian: swift-{})", s, s));
  }
  if (::access(bin("swift-proxy-server").c_str(), X_OK) != 0)
    missing.emplace_back("swift-proxy-server (Debian: swift-proxy)");
  if (::access(kMemcached, X_OK) != 0) missing.emplace_back("memcached (Debian: memcached)");
  if (missing.empty()) return true;
  if (why != nullptr) {
    *why = "not installed:";
    for (const auto& m : missing) *why += " " + m;
  }
  return false;
}

S3Server::S3Server(S3ServerOptions options)
    : options_(std::move(options)), spawner_(std::make_unique<Spawner>()) {
  std::string why;
  if (!available(&why)) throw RemoteError("S3 server: " + why);
  const std::filesystem::path tmp = std::filesystem::temp_directory_path();
  remove_stale_folders(tmp, "pipeprof-s3-");
  remove_stale_folders("/var/tmp", "pipeprof-s3-");
  std::string tmpl = (tmp / "pipeprof-s3-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    throw RemoteError(fmt::format("S3 server: cannot create a temporary folder: {}", std::strerror(errno)));
  }
  dir_ = tmpl;
  std::error_code ec;
  try {
    write_file(dir_ / "owner.pid", fmt::format("{}\n", ::getpid()));
    if (!options_.data_dir.empty()) {
      data_ = options_.data_dir;
      std::filesystem::create_directories(data_);
    } else if (std::filesystem::create_directories(dir_ / "data"); has_xattrs(dir_ / "data")) {
      data_ = dir_ / "data";
    } else {
      std::string other = "/var/tmp/pipeprof-s3-XXXXXX";
      if (::mkdtemp(other.data()) == nullptr) {
        throw RemoteError(fmt::format("S3 server: {} has no extended attributes and /var/tmp cannot "
                                      "be used: {}", tmp.string(), std::strerror(errno)));
      }
      data_ = other;
      write_file(data_ / "owner.pid", fmt::format("{}\n", ::getpid()));
    }
    if (!has_xattrs(data_)) {
      throw RemoteError(fmt::format("S3 server: {} has no extended attributes (user.*), which Swift "
                                    "needs for its objects",
                                    data_.string()));
    }
    std::filesystem::create_directories(data_ / "d1");
    // The ports are free when picked, and another process may take one before a server binds
    // it: then every process is stopped and the servers start again on other ports.
    for (int attempt = 1;; ++attempt) {
      try {
        launch();
        break;
      } catch (const PortTaken&) {
        reap(std::chrono::milliseconds(0));
        if (attempt == 5) throw RemoteError("S3 server: no free ports found in 5 tries");
      }
    }
  } catch (...) {
    reap(std::chrono::milliseconds(0));
    if (!options_.data_dir.empty()) {
    } else if (data_ != dir_ / "data") {
      std::filesystem::remove_all(data_, ec);
    }
    std::filesystem::remove_all(dir_, ec);
    throw;
  }
}

S3Server::~S3Server() {
  try {
    stop();
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor reports nothing
  }
  std::error_code ec;
  if (options_.data_dir.empty() && !data_.empty() && data_ != dir_ / "data") {
    std::filesystem::remove_all(data_, ec);
  }
  std::filesystem::remove_all(dir_, ec);
}

std::string S3Server::endpoint() const {
  return fmt::format("http://127.0.0.1:{}", port_);
}

pipelines::S3Options S3Server::options() const {
  return {.endpoint_url = endpoint(),
          .access_key_id = options_.access_key_id,
          .secret_access_key = options_.secret_access_key,
          .region = options_.region,
          .force_path_style = true};
}

void S3Server::create_bucket(const std::string& name) const {
  try {
    pipelines::create_bucket(
        "s3://" + name, std::make_shared<pipelines::StorageContext>(pipelines::RemoteReadOptions{}, nullptr,
                                                                     options()));
  } catch (const pipelines::IoError& e) {
    throw RemoteError(e.what());
  }
}

void S3Server::launch() {
  const auto colon = options_.access_key_id.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == options_.access_key_id.size()) {
    throw RemoteError(fmt::format("S3 server: the access key id must be <account>:<user>, got \"{}\"",
                                  options_.access_key_id));
  }
  const std::string account = options_.access_key_id.substr(0, colon);
  const std::string user = options_.access_key_id.substr(colon + 1);
  const std::string d = dir_.string();
  const int memcached_port = free_port("S3 server");
  port_ = free_port("S3 server");
  std::map<std::string, int> ports;
  for (const char* s : kServers) ports[s] = free_port("S3 server");
  write_file(dir_ / "swift.conf",
             "[swift-hash]\nswift_hash_path_suffix = pipeprof\n"
             "[storage-policy:0]\nname = Policy-0\ndefault = yes\n");
  // The rings: one device, one replica, on this machine's ports.
  std::string rings = "from swift.common.ring import RingBuilder\n";
  for (const char* s : kServers) {
    rings += fmt::format(
        "b = RingBuilder(4, 1, 1)\n"
        "b.add_dev({{'id': 0, 'region': 1, 'zone': 1, 'ip': '127.0.0.1', 'port': {}, 'device': 'd1', "
        "'weight': 1}})\n"
        "b.rebalance()\nb.get_ring().save('{}/{}.ring.gz')\n",
        ports[s], d, s);
  }
  write_file(dir_ / "rings.py", rings);
  const auto log = [&](const std::string& name) { return dir_ / (name + ".log"); };
  for (const char* name : {"rings", "memcached", "account", "container", "object", "proxy"}) {
    std::error_code ec;
    std::filesystem::remove(log(name), ec);  // an earlier try's
  }
  const pid_t ring_pid = spawner_->spawn({kPython, (dir_ / "rings.py").string()}, log("rings"));
  if (ring_pid < 0) throw RemoteError(fmt::format("S3 server: fork: {}", std::strerror(errno)));
  int status = 0;
  while (::waitpid(ring_pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw RemoteError(fmt::format("S3 server: building Swift's rings failed: {}", tail_of(log("rings"))));
  }
  const std::string common = fmt::format(
      "[DEFAULT]\nbind_ip = 127.0.0.1\nbind_timeout = 2\nswift_dir = {}\nlog_level = WARNING\n"
      "log_name = pipeprof-s3\n",
      d);
  for (const char* s : kServers) {
    write_file(dir_ / fmt::format("{}-server.conf", s),
               common + fmt::format("bind_port = {}\ndevices = {}\nmount_check = false\nworkers = 0\n"
                                    "[pipeline:main]\npipeline = {}-server\n"
                                    "[app:{}-server]\nuse = egg:swift#{}\n",
                                    ports[s], data_.string(), s, s, s));
  }
  write_file(dir_ / "proxy-server.conf",
             common + fmt::format(
                          "bind_port = {}\nworkers = {}\n"
                          "[pipeline:main]\n"
                          "pipeline = catch_errors gatekeeper proxy-logging cache listing_formats s3api "
                          "tempauth copy slo dlo proxy-logging proxy-server\n"
                          "[app:proxy-server]\nuse = egg:swift#proxy\naccount_autocreate = true\n"
                          "[filter:catch_errors]\nuse = egg:swift#catch_errors\n"
                          "[filter:gatekeeper]\nuse = egg:swift#gatekeeper\n"
                          "[filter:proxy-logging]\nuse = egg:swift#proxy_logging\n"
                          "[filter:cache]\nuse = egg:swift#memcache\nmemcache_servers = 127.0.0.1:{}\n"
                          "[filter:listing_formats]\nuse = egg:swift#listing_formats\n"
                          "[filter:s3api]\nuse = egg:swift#s3api\nlocation = {}\n"
                          "[filter:tempauth]\nuse = egg:swift#tempauth\nuser_{}_{} = {} .admin\n"
                          "[filter:copy]\nuse = egg:swift#copy\n"
                          "[filter:slo]\nuse = egg:swift#slo\n"
                          "[filter:dlo]\nuse = egg:swift#dlo\n",
                          port_, std::max(0, options_.workers), memcached_port, options_.region, account,
                          user, options_.secret_access_key));
  // Every process in the group of the first (memcached), so that one signal reaches them all.
  std::vector<std::string> memcached = {kMemcached, "-l", "127.0.0.1", "-p", std::to_string(memcached_port),
                                        "-U", "0", "-m", "64"};
  if (::geteuid() == 0) {
    memcached.emplace_back("-u");
    memcached.emplace_back("root");
  }
  std::vector<std::pair<std::string, int>> started;  // log name, port
  auto start = [&](const std::vector<std::string>& argv, const std::string& name, int port) {
    const pid_t pid = spawner_->spawn(argv, log(name), group_ > 0 ? group_ : 0,
                                      {{"PYTHONDONTWRITEBYTECODE", "1"}});
    if (pid < 0) throw RemoteError(fmt::format("S3 server: fork: {}", std::strerror(errno)));
    if (group_ <= 0) group_ = pid;
    pids_.push_back(pid);
    names_.push_back(name);
    started.emplace_back(name, port);
  };
  start(memcached, "memcached", memcached_port);
  for (const char* s : kServers) {
    start({bin(fmt::format("swift-{}-server", s)), (dir_ / fmt::format("{}-server.conf", s)).string(), "-v"},
          s, ports[s]);
  }
  start({bin("swift-proxy-server"), (dir_ / "proxy-server.conf").string(), "-v"}, "proxy", port_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    for (size_t i = 0; i < pids_.size(); ++i) {
      int st = 0;
      if (::waitpid(pids_[i], &st, WNOHANG) == pids_[i]) {
        pids_[i] = -1;
        const std::string name = started[i].first;
        const std::string why = tail_of(log(name));
        if (why.find("Address already in use") != std::string::npos ||
            why.find("Could not bind") != std::string::npos)
          throw PortTaken{};
        throw RemoteError(fmt::format("S3 server: {} exited at start: {}", name, why));
      }
    }
    bool all = true;
    for (const auto& [name, port] : started) all = all && answers(port);
    if (all) return;
    if (std::chrono::steady_clock::now() > deadline) {
      throw RemoteError(fmt::format("S3 server: the proxy did not answer on port {} within 60 s: {}", port_,
                                    tail_of(log("proxy"))));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Swift's servers make sessions of their own (setsid) at start: each is signalled by its pid and
// its group (a proxy's workers), besides the group they were started in.
void S3Server::signal_all(int sig) {
  if (group_ > 0) ::kill(-group_, sig);
  for (const pid_t pid : pids_) {
    if (pid <= 0) continue;
    ::kill(pid, sig);
    ::kill(-pid, sig);
  }
}

void S3Server::reap(std::chrono::milliseconds grace) {
  if (group_ <= 0) return;
  const auto deadline = std::chrono::steady_clock::now() + grace;
  for (pid_t& pid : pids_) {
    if (pid <= 0) continue;
    for (;;) {
      int status = 0;
      const pid_t r = ::waitpid(pid, &status, WNOHANG);
      if (r == pid || (r < 0 && errno == ECHILD)) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        signal_all(SIGKILL);
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ::kill(-pid, SIGKILL);  // what it forked
    pid = -1;
  }
  signal_all(SIGKILL);
  group_ = -1;
  pids_.clear();
  names_.clear();
}

std::string S3Server::exited() {
  std::string gone;
  for (size_t i = 0; i < pids_.size(); ++i) {
    if (pids_[i] <= 0) continue;
    int status = 0;
    if (::waitpid(pids_[i], &status, WNOHANG) != pids_[i]) continue;
    pids_[i] = -1;
    const std::string how = WIFSIGNALED(status) ? fmt::format("killed by signal {}", WTERMSIG(status))
                                                : fmt::format("exited with status {}", WEXITSTATUS(status));
    gone += fmt::format("{}{} {}", gone.empty() ? "" : ", ", names_[i], how);
  }
  return gone;
}

void S3Server::kill_component(const std::string& name) {
  for (size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] != name || pids_[i] <= 0) continue;
    ::kill(pids_[i], SIGKILL);
    ::kill(-pids_[i], SIGKILL);
    int status = 0;
    while (::waitpid(pids_[i], &status, 0) < 0 && errno == EINTR) {
    }
    pids_[i] = -1;
    return;
  }
  throw RemoteError(fmt::format("S3 server: no running process \"{}\" (memcached, account, container, "
                                "object, proxy)", name));
}

void S3Server::stop() {
  if (group_ <= 0) return;
  signal_all(SIGTERM);
  reap(std::chrono::seconds(5));
}

void S3Server::kill() {
  if (group_ <= 0) return;
  signal_all(SIGKILL);
  reap(std::chrono::seconds(5));
}

}  // namespace pipeprof::testbed
