// Between cluster.cc (the single-process cluster and the entry points) and the MPI
// implementation (cluster_mpi.cc with Open MPI, cluster_mpi_stub.cc without).
#pragma once

#include <memory>

#include "pipeprof/harness/cluster.h"

namespace pipeprof::harness::cluster::detail {

// MPI_Init_thread and a cluster over MPI_COMM_WORLD; nullptr in a build without MPI.
std::unique_ptr<Cluster> make_mpi_cluster(int* argc, char*** argv);
// MPI_Finalize (a whole job) or nothing (a broken one: peers may be gone, and finalizing would
// wait for them).
void finalize_mpi(bool broken);
// MPI_Abort on MPI_COMM_WORLD with `code` (ends every rank); never returns.
[[noreturn]] void abort_mpi(int code);
bool have_mpi();

}  // namespace pipeprof::harness::cluster::detail
