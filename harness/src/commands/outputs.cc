#include "commands/outputs.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "pipeprof/harness/errors.h"

namespace pipeprof::harness {
namespace {

std::atomic<int> g_probe{0};

// Makes and removes a file in `dir`; returns errno on failure, 0 when it could.
int probe(const std::filesystem::path& dir) {
  const std::filesystem::path p =
      dir / fmt::format(".pipeprof-write-check-{}-{}", ::getpid(), g_probe.fetch_add(1));
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return errno;
  ::close(fd);
  ::unlink(p.c_str());
  return 0;
}

}  // namespace

void check_output_folder(const std::string& option, const std::filesystem::path& dir) {
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    throw RunFailure(fmt::format("{} {}: cannot be written: the folder cannot be created ({})",
                                 option, dir.string(),
                                 ec ? ec.message() : std::string("a file of that name is there")));
  }
  if (const int err = probe(dir); err != 0) {
    throw RunFailure(fmt::format("{} {}: cannot be written: no file can be made in the folder ({})",
                                 option, dir.string(), std::strerror(err)));
  }
}

void check_output_file(const std::string& option, const std::filesystem::path& file) {
  if (file.empty()) return;
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) {
    throw RunFailure(fmt::format("{} {}: cannot be written: it is a folder", option, file.string()));
  }
  const std::filesystem::path dir = file.has_parent_path() ? file.parent_path() : ".";
  if (!std::filesystem::is_directory(dir, ec)) {
    throw RunFailure(fmt::format("{} {}: cannot be written: its folder {} {}", option, file.string(),
                                 dir.string(),
                                 std::filesystem::exists(dir, ec) ? "is not a folder" : "does not exist"));
  }
  if (const int err = probe(dir); err != 0) {
    throw RunFailure(fmt::format("{} {}: cannot be written: no file can be made in {} ({})", option,
                                 file.string(), dir.string(), std::strerror(err)));
  }
}

}  // namespace pipeprof::harness
