#include <fmt/format.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>

#include "cluster/cluster_impl.h"
#include "pipeprof/harness/cluster.h"
#include "pipeprof/pipelines/spec.h"

namespace pipeprof::harness::cluster {
namespace {

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

// One process, one rank: every collective is this rank's own answer.
class SingleCluster final : public Cluster {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string host() const override { return host_name(); }
  std::string describe() const override { return "one process (no MPI)"; }
  bool mpi() const override { return false; }
  bool agree_stop(bool mine, const std::atomic<bool>* /*stop*/) override { return mine; }
  std::vector<std::string> gather(const std::string& mine, const std::atomic<bool>*) override {
    return {mine};
  }
  std::string broadcast(const std::string& value, const std::atomic<bool>*) override {
    return value;
  }
  std::vector<ClockSync> sync_clocks(int /*rounds*/, const std::atomic<bool>*) override {
    return {ClockSync{}};
  }
  bool broken() const override { return false; }
};

std::unique_ptr<Cluster>& instance() {
  static std::unique_ptr<Cluster> c;
  return c;
}
bool g_mpi = false;

}  // namespace

int launched_ranks() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE"}) {
    if (const char* v = std::getenv(var); v != nullptr && *v != '\0') {
      const int n = std::atoi(v);
      if (n > 0) return n;
    }
  }
  return 1;
}

bool mpi_built() {
  return detail::have_mpi();
}

void init(int* argc, char*** argv) {
  if (instance()) return;
  // Only under mpirun: MPI_Init in a process started alone would make it a singleton job (and
  // start Open MPI's runtime) for nothing.
  if (std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr) {
    if (!detail::have_mpi()) {
      throw std::runtime_error(fmt::format(
          "started by mpirun ({} ranks), but this pipeprof was built without Open MPI: install "
          "libopenmpi-dev (scripts/setup.sh does) and rebuild, or run it without mpirun",
          launched_ranks()));
    }
    instance() = detail::make_mpi_cluster(argc, argv);
    g_mpi = true;
    return;
  }
  instance() = std::make_unique<SingleCluster>();
}

pipelines::ParseOptions spec_options(const Cluster& cluster) {
  return {.rank = cluster.rank(), .ranks = cluster.size()};
}

void shutdown(int exit_code) {
  if (!instance()) return;
  const bool broken = instance()->broken();
  const bool several = instance()->size() > 1;
  if (g_mpi && several && exit_code != 0 && exit_code != 130 && !broken) {
    std::fflush(stdout);
    std::fflush(stderr);
    detail::abort_mpi(exit_code);  // does not return
  }
  instance().reset();  // frees its communicator before MPI is finalized
  if (g_mpi) detail::finalize_mpi(broken);
  g_mpi = false;
}

Cluster& current() {
  if (!instance()) instance() = std::make_unique<SingleCluster>();
  return *instance();
}

int64_t rank_clock_skew_ns() {
  static const int64_t skew = [] {
    const char* v = std::getenv("PIPEPROF_CLOCK_SKEW_NS");
    if (v == nullptr || *v == '\0') return int64_t{0};
    const long long per_rank = std::strtoll(v, nullptr, 10);
    for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK"}) {
      if (const char* r = std::getenv(var); r != nullptr && *r != '\0')
        return static_cast<int64_t>(per_rank * std::strtoll(r, nullptr, 10));
    }
    return int64_t{0};
  }();
  return skew;
}

}  // namespace pipeprof::harness::cluster
