// The test bed's object store: a real HTTP server (nginx) on 127.0.0.1 serving a folder, with a
// time to first byte per request and a bandwidth limit per request, for the remote experiments,
// `pipeprof serve` and the tests. It is stopped (and its temporary folder removed) by its
// destructor. Its failures are pipelines::RemoteError.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "pipeprof/pipelines/remote.h"

namespace pipeprof::testbed {

using pipelines::RemoteError;
class Spawner;

struct ObjectServerOptions {
  std::filesystem::path root;  // the folder served: <root>/a/b is http://127.0.0.1:<port>/a/b
  // Time to first byte added to every request (nginx's echo module, echo_sleep), rounded to whole
  // milliseconds; 0: none.
  std::chrono::microseconds latency{0};
  // Bytes/s per request (nginx's limit_rate); 0: unlimited.
  int64_t rate_bytes_per_second = 0;
  // Fault injection: requests under these path prefixes get this status (e.g. {"/broken/", 500});
  // a key "=/path" matches that path only.
  std::map<std::string, int> fixed_status;
  int port = 0;  // 0: a free port
  std::string nginx;  // the binary; empty: nginx on PATH, else /usr/sbin/nginx
  int workers = 1;
};

class ObjectServer {
 public:
  // Whether nginx (and, for `latency`, its echo module) is installed; `why` says what is missing.
  static bool available(bool with_latency = false, std::string* why = nullptr);

  // Starts nginx and waits until it answers. Throws RemoteError naming what failed (nginx missing,
  // the root not a folder, nginx's own error log).
  explicit ObjectServer(ObjectServerOptions options);
  // Stops the server and removes its temporary folder.
  ~ObjectServer();
  ObjectServer(const ObjectServer&) = delete;
  ObjectServer& operator=(const ObjectServer&) = delete;

  // "http://127.0.0.1:<port>/" (with the trailing slash).
  std::string url() const;
  int port() const { return port_; }
  pid_t pid() const { return pid_; }  // the nginx master process; -1 when stopped
  bool running() const { return pid_ > 0; }
  // Whether nginx still runs (reaps it when it has exited: running() is false then).
  bool alive();

  // Stops the server (SIGTERM: nginx's fast shutdown; SIGKILL after 5 s): open transfers are cut.
  void stop();
  // Kills the server at once (SIGKILL to every nginx process): a crash.
  void kill();
  // Starts it again on the same port with the same options.
  void start();

 private:
  void launch();
  void reap(std::chrono::milliseconds grace);

  ObjectServerOptions options_;
  std::unique_ptr<Spawner> spawner_;
  std::filesystem::path dir_;  // config, logs, nginx's temporary files
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace pipeprof::testbed
