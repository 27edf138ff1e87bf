// The test bed's S3 server: OpenStack Swift with its S3 API (s3api, which checks every request's
// AWS Signature Version 4) on 127.0.0.1, for the tests, the S3 benchmark and workloads run against
// S3 storage. Debian's packages: python3-swift, swift-proxy, swift-object, swift-container,
// swift-account, and memcached (Swift's token cache). It runs five processes (memcached, the
// account, container and object servers, and the proxy that speaks S3) in one process group, with
// their data, rings and configuration in a temporary folder of its own; the destructor stops them
// and removes the folder. Its failures are pipelines::RemoteError.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>
#include <chrono>

#include "pipeprof/pipelines/remote.h"

namespace pipeprof::testbed {

class Spawner;

struct S3ServerOptions {
  // The key pair the server accepts (Swift's tempauth: "<account>:<user>" and its key).
  std::string access_key_id = "pipeprof:tester";
  std::string secret_access_key = "pipeprof-secret";
  std::string region = "us-east-1";
  // Proxy worker processes (0: one process, the proxy's own).
  int workers = 0;
  // Where objects are stored (a file system with extended attributes); empty: the server's
  // temporary folder, else /var/tmp when that one has none.
  std::filesystem::path data_dir;
};

class S3Server {
 public:
  // Whether Swift and memcached are installed; `why` says what is missing.
  static bool available(std::string* why = nullptr);

  // Starts the servers and waits until the S3 API answers (at most 60 s). Throws RemoteError
  // naming what failed (a package missing, a server's own log).
  explicit S3Server(S3ServerOptions options = {});
  ~S3Server();
  S3Server(const S3Server&) = delete;
  S3Server& operator=(const S3Server&) = delete;

  // "http://127.0.0.1:<port>"
  std::string endpoint() const;
  int port() const { return port_; }
  // What a client needs: the endpoint, the key pair, the region, path-style URLs.
  pipelines::S3Options options() const;
  // Creates a bucket (s3://<name>). Throws RemoteError.
  void create_bucket(const std::string& name) const;

  bool running() const { return group_ > 0; }
  // The components that have exited on their own since they started, reaped now ("proxy exited
  // with status 1", "object killed by signal 9"); empty while every one runs. One stopped by
  // kill_component is not counted.
  std::string exited();
  // Stops every process (SIGTERM, SIGKILL after 5 s).
  void stop();
  // Kills every process at once (SIGKILL): a crash.
  void kill();
  // Kills one of them (SIGKILL): "memcached", "account", "container", "object" or "proxy". With
  // the object server gone, the proxy answers reads of objects with 503 (a storage node down).
  // Throws RemoteError for another name.
  void kill_component(const std::string& name);

 private:
  void launch();
  void reap(std::chrono::milliseconds grace);
  void signal_all(int sig);

  S3ServerOptions options_;
  std::unique_ptr<Spawner> spawner_;
  std::filesystem::path dir_;
  std::filesystem::path data_;
  int port_ = 0;
  pid_t group_ = -1;
  std::vector<pid_t> pids_;
  std::vector<std::string> names_;  // of pids_
};

}  // namespace pipeprof::testbed
