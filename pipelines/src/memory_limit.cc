#include "pipeprof/pipelines/memory_limit.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <limits>

#include "pipeprof/pipelines/errors.h"

namespace pipeprof::pipelines {
namespace {

MemoryLimit read_memory_limit() {
  MemoryLimit m{std::numeric_limits<int64_t>::max(), "no limit found"};
  auto consider = [&m](int64_t bytes, const char* source) {
    if (bytes > 0 && bytes < m.bytes) m = {bytes, source};
  };
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page_size > 0) consider(int64_t{pages} * page_size, "physical memory");
  rlimit r{};
  if (::getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
    consider(static_cast<int64_t>(r.rlim_cur), "ulimit -v");
  if (::getrlimit(RLIMIT_DATA, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
    consider(static_cast<int64_t>(r.rlim_cur), "ulimit -d");
  // cgroup v2: the limit of the group this process runs in ("max" when there is none).
  std::ifstream cgroup("/proc/self/cgroup");
  std::string line;
  while (std::getline(cgroup, line)) {
    if (line.rfind("0::", 0) != 0) continue;
    std::ifstream max("/sys/fs/cgroup" + line.substr(3) + "/memory.max");
    int64_t bytes = 0;
    if (max >> bytes) consider(bytes, "cgroup memory.max");
  }
  return m;
}

}  // namespace

const MemoryLimit& memory_limit() {
  static const MemoryLimit m = read_memory_limit();
  return m;
}

std::string format_bytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int unit = 0;
  while (bytes >= 1024.0 && unit < 6) {
    bytes /= 1024.0;
    ++unit;
  }
  return unit == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.1f} {}", bytes, kUnits[unit]);
}

void check_fits_in_memory(const std::string& where, const std::string& what, int64_t count,
                          int64_t bytes_each) {
  const MemoryLimit& limit = memory_limit();
  const long double need = static_cast<long double>(count) * static_cast<long double>(bytes_each);
  if (need <= static_cast<long double>(limit.bytes)) return;
  throw SpecError(fmt::format("{}: {} needs {}, more than this machine can hold ({}, {})", where,
                              what, format_bytes(static_cast<double>(need)),
                              format_bytes(static_cast<double>(limit.bytes)), limit.source));
}

}  // namespace pipeprof::pipelines
