// `pipeprof serve <folder>`: the object server of the remote experiments (nginx on 127.0.0.1, a
// time to first byte and a bandwidth limit per request) for the user's own runs, until Ctrl-C;
// with --s3 <bucket>, the test bed's S3 server (OpenStack Swift's S3 API) holding the folder's
// files as the bucket's objects.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <iostream>
#include <thread>

#include "commands/commands.h"
#include "commands/interrupt.h"
#include "pipeprof/pipelines/memory_limit.h"
#include "pipeprof/pipelines/remote.h"
#include "pipeprof/pipelines/storage_io.h"
#include "pipeprof/testbed/object_server.h"
#include "pipeprof/testbed/s3_server.h"

namespace pipeprof::harness {
namespace {

struct ServeOptions {
  std::string folder;
  double latency_ms = 0;
  double rate_mib_s = 0;
  int port = 0;
  double seconds = 0;  // 0: until Ctrl-C
  std::string s3_bucket;  // --s3
};

// Waits for Ctrl-C or --seconds while `alive` says the server runs.
Outcome wait_serving(const ServeOptions& o, const std::function<bool()>& alive, const char* what) {
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(static_cast<int64_t>(o.seconds * 1e3));
  while (!InterruptGuard::flag().load()) {
    if (o.seconds > 0 && std::chrono::steady_clock::now() >= until) break;
    if (!alive()) throw RunFailure(fmt::format("the {} exited", what));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return InterruptGuard::flag().load() ? Outcome::kInterrupted : Outcome::kOk;
}

// The folder's files as objects of a bucket of the test bed's S3 server, until Ctrl-C.
Outcome serve_s3(const ServeOptions& o) {
  if (o.latency_ms > 0 || o.rate_mib_s > 0 || o.port != 0) {
    throw InputError("--s3: --latency-ms, --rate-mib-s and --port apply to the HTTP server only");
  }
  const InterruptGuard guard;
  std::unique_ptr<testbed::S3Server> server;
  try {
    server = std::make_unique<testbed::S3Server>();
    server->create_bucket(o.s3_bucket);
  } catch (const pipelines::RemoteError& e) {
    throw RunFailure(e.what());
  }
  const auto storage = std::make_shared<pipelines::StorageContext>(
      pipelines::RemoteReadOptions{.stop = &InterruptGuard::flag()}, nullptr, server->options());
  const std::filesystem::path root = std::filesystem::absolute(o.folder);
  int64_t files = 0;
  uint64_t bytes = 0;
  const auto t0 = std::chrono::steady_clock::now();
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (InterruptGuard::flag().load()) return Outcome::kInterrupted;
    if (!it->is_regular_file(ec)) continue;
    const std::string key = it->path().lexically_relative(root).string();
    const std::string name = fmt::format("s3://{}/{}", o.s3_bucket, key);
    try {
      bytes += pipelines::copy_file(it->path().string(), name, {.storage = storage});
    } catch (const pipelines::IoError& e) {
      if (InterruptGuard::flag().load()) return Outcome::kInterrupted;
      throw RunFailure(e.what());
    }
    ++files;
  }
  if (ec) throw InputError(fmt::format("{}: cannot be read: {}", o.folder, ec.message()));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const pipelines::S3Options so = server->options();
  std::cout << fmt::format(
                   "serving {} as s3://{}/ ({} objects, {}, uploaded in {:.1f} s) at {}; Ctrl-C stops it\n"
                   "  storage:\n    storage_type: s3\n    storage_root: {}\n    storage_options:\n"
                   "      endpoint_url: {}\n      access_key_id: {}\n      secret_access_key: {}\n"
                   "      region: {}\n      s3_force_path_style: True\n"
                   "  or: AWS_ENDPOINT_URL={} AWS_ACCESS_KEY_ID={} AWS_SECRET_ACCESS_KEY={} AWS_REGION={}\n",
                   root.string(), o.s3_bucket, files, pipelines::format_bytes(static_cast<double>(bytes)), s,
                   so.endpoint_url, o.s3_bucket, so.endpoint_url, so.access_key_id,
                   so.secret_access_key, so.region, so.endpoint_url, so.access_key_id,
                   so.secret_access_key, so.region)
            << std::flush;
  // A component that exits (the proxy, a storage server) ends the serving, naming it: clients
  // would otherwise get refused connections or 503s from a server said to be serving.
  const Outcome out = wait_serving(o, [&] {
    if (const std::string gone = server->exited(); !gone.empty()) {
      server->stop();
      throw RunFailure(fmt::format("the S3 server stopped serving: its {}", gone));
    }
    return true;
  }, "S3 server");
  server->stop();
  std::cerr << "stopped\n";
  return out;
}

Outcome serve_command(const ServeOptions& o) {
  std::error_code ec;
  if (!std::filesystem::is_directory(o.folder, ec)) {
    throw InputError(fmt::format("{}: not a folder", o.folder));
  }
  if (!o.s3_bucket.empty()) return serve_s3(o);
  const InterruptGuard guard;
  std::unique_ptr<testbed::ObjectServer> server;
  try {
    server = std::make_unique<testbed::ObjectServer>(testbed::ObjectServerOptions{
        .root = o.folder,
        .latency = std::chrono::microseconds(std::llround(o.latency_ms * 1e3)),
        .rate_bytes_per_second = static_cast<int64_t>(o.rate_mib_s * 1048576.0),
        .port = o.port});
  } catch (const pipelines::RemoteError& e) {
    throw RunFailure(e.what());
  }
  std::cout << fmt::format("serving {} at {} ({} ms to first byte, {}); Ctrl-C stops it\n",
                           std::filesystem::absolute(o.folder).string(), server->url(), o.latency_ms,
                           o.rate_mib_s > 0 ? fmt::format("{} MiB/s per request", o.rate_mib_s)
                                            : std::string("no bandwidth limit"))
            << std::flush;
  const Outcome out = wait_serving(o, [&] { return server->alive(); }, "object server (nginx)");
  server->stop();
  std::cerr << "stopped\n";
  return out;
}

}  // namespace

CommandRunner add_serve_command(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  auto* cmd = app.add_subcommand(
      "serve",
      "Serve a folder over HTTP on 127.0.0.1 (nginx), as the remote experiments' object store: "
      "with a time to first byte and a bandwidth limit per request; until Ctrl-C");
  cmd->add_option("folder", o->folder, "The folder served (its files under http://127.0.0.1:<port>/)")
      ->required();
  cmd->add_option("--latency-ms", o->latency_ms, "Time to first byte per request (whole ms)")
      ->check(CLI::Range(0.0, 60000.0))
      ->capture_default_str();
  cmd->add_option("--rate-mib-s", o->rate_mib_s, "Bandwidth per request in MiB/s (0: unlimited)")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  cmd->add_option("--port", o->port, "The port (0: a free one)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  cmd->add_option("--seconds", o->seconds, "Stop after this long (0: at Ctrl-C)")
      ->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--s3", o->s3_bucket,
                  "Serve the folder's files as the objects of this bucket of an S3 server (OpenStack "
                  "Swift's S3 API on 127.0.0.1, signatures checked); prints its endpoint and keys");
  cmd->footer(
      "Folders list as JSON (nginx's autoindex), which list_files reads for http:// patterns. "
      "Needs nginx-light and, for --latency-ms, libnginx-mod-http-echo; --s3 needs python3-swift, "
      "swift-proxy, swift-object, swift-container, swift-account and memcached. Exit status: 0 stopped "
      "after --seconds, 1 the server could not start or died, 2 bad usage, 130 Ctrl-C.");
  return [o] { return serve_command(*o); };
}

}  // namespace pipeprof::harness
