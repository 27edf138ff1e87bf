// `pipeprof serve <folder>`: the object server of the remote experiments (nginx on 127.0.0.1, a
// time to first byte and a bandwidth limit per request) for the user's own runs, until Ctrl-C.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <thread>

#include "commands/commands.h"
#include "commands/interrupt.h"
#include "pipeprof/pipelines/remote.h"
#include "pipeprof/testbed/object_server.h"

namespace pipeprof::harness {
namespace {

struct ServeOptions {
  std::string folder;
  double latency_ms = 0;
  double rate_mib_s = 0;
  int port = 0;
  double seconds = 0;  // 0: until Ctrl-C
};

Outcome serve_command(const ServeOptions& o) {
  std::error_code ec;
  if (!std::filesystem::is_directory(o.folder, ec)) {
    throw InputError(fmt::format("{}: not a folder", o.folder));
  }
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
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(static_cast<int64_t>(o.seconds * 1e3));
  while (!InterruptGuard::flag().load()) {
    if (o.seconds > 0 && std::chrono::steady_clock::now() >= until) break;
    if (!server->alive()) throw RunFailure("the object server (nginx) exited");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  server->stop();
  std::cerr << "stopped\n";
  return InterruptGuard::flag().load() ? Outcome::kInterrupted : Outcome::kOk;
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
  cmd->footer(
      "Folders list as JSON (nginx's autoindex), which list_files reads for http:// patterns. "
      "Needs nginx-light and, for --latency-ms, libnginx-mod-http-echo. Exit status: 0 stopped "
      "after --seconds, 1 the server could not start or died, 2 bad usage, 130 Ctrl-C.");
  return [o] { return serve_command(*o); };
}

}  // namespace pipeprof::harness
