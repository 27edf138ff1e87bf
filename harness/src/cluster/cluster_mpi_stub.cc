// A build without Open MPI: no MPI cluster (cluster.cc runs one rank).
#include <cstdlib>

#include "cluster/cluster_impl.h"

namespace pipeprof::harness::cluster::detail {

std::unique_ptr<Cluster> make_mpi_cluster(int* /*argc*/, char*** /*argv*/) {
  return nullptr;
}
void finalize_mpi(bool /*broken*/) {}
void abort_mpi(int code) {
  std::exit(code);
}
bool have_mpi() {
  return false;
}

}  // namespace pipeprof::harness::cluster::detail
