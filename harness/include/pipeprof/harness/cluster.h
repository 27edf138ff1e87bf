// The cluster a run belongs to: one process is one rank. Launched by Open MPI's mpirun (and built
// with PIPEPROF_MPI), the ranks are MPI_COMM_WORLD's; otherwise there is one rank, this process.
//
//   cluster::init(argc, argv);            // first thing in main (MPI_Init_thread under mpirun)
//   cluster::Cluster& c = cluster::current();
//   if (c.agree_stop(!prepared, &stop)) ...   // collective: every rank stops when any asks
//   const auto parts = c.gather(my_json);     // rank 0 gets every rank's text
//   cluster::shutdown();                  // last (MPI_Finalize, or nothing after a broken job)
//
// Every collective polls the caller's stop flag while it waits: a rank that was stopped (Ctrl-C,
// or the SIGTERM mpirun sends when another rank died) while a peer never comes gives up the wait,
// marks the cluster broken and goes on to write what it measured, instead of hanging.
//
// The MPI implementation lives in cluster_mpi.cc (compiled only with Open MPI); without it,
// init() under mpirun is an error naming what is missing, and everything runs as one rank.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "pipeprof/pipelines/spec.h"

namespace pipeprof::harness::cluster {

// How one rank's clock relates to rank 0's, from a ping-pong: rank 0 sends at t0 (its clock),
// the rank answers with its clock tr, rank 0 receives at t1. offset = (t0 + t1) / 2 - tr is what
// to add to the rank's timestamps to put them on rank 0's clock; error = (t1 - t0) / 2 of the
// fastest exchange bounds how wrong that can be.
struct ClockSync {
  int rank = 0;
  int64_t at_ns = 0;      // when it was measured, on rank 0's clock
  int64_t offset_ns = 0;  // add to the rank's clock
  int64_t error_ns = 0;   // half the fastest round trip
};

class Cluster {
 public:
  virtual ~Cluster() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string host() const = 0;       // this rank's host name
  virtual std::string describe() const = 0;   // "one process" or "Open MPI 4.1.4, 4 ranks"
  virtual bool mpi() const = 0;                // launched by mpirun (even with one rank)

  // Collective: true when any rank passes `mine` = true. Returns true (and marks the cluster
  // broken) when `stop` is set while the other ranks do not come.
  virtual bool agree_stop(bool mine, const std::atomic<bool>* stop) = 0;
  // Collective: rank 0 gets every rank's `mine`, by rank; the others get an empty vector. Throws
  // std::runtime_error when the ranks do not all come (stop set while waiting).
  virtual std::vector<std::string> gather(const std::string& mine,
                                          const std::atomic<bool>* stop) = 0;
  // Collective: every rank gets rank 0's `value`.
  virtual std::string broadcast(const std::string& value, const std::atomic<bool>* stop) = 0;
  // Collective: the clocks of all ranks against rank 0's (rank 0 gets one entry per rank, the
  // others an empty vector), from `rounds` ping-pongs each at least (more, for a while, where none
  // was fast). Gives up like the others (an empty vector, the cluster broken) when `stop` is set
  // and a rank does not answer.
  virtual std::vector<ClockSync> sync_clocks(int rounds, const std::atomic<bool>* stop) = 0;

  // A collective gave up: the job is ending (a peer died or the run was stopped under mpirun).
  virtual bool broken() const = 0;
};

// Call first in main, before any thread starts. Under mpirun (OMPI_COMM_WORLD_SIZE in the
// environment) it initializes MPI; it throws std::runtime_error when this build has no MPI.
void init(int* argc, char*** argv);
// Ends MPI: MPI_Finalize after a run that ended together (exit code 0 or 130, the cluster
// whole); after a failure of this rank (any other exit code) MPI_Abort, which ends the ranks
// that may still wait for this one in a collective, instead of a finalize that would wait for
// them. Nothing without MPI.
void shutdown(int exit_code);
Cluster& current();
// How a spec is read on this rank: its rank tokens ("shard": "rank") stand for `cluster`'s rank.
pipelines::ParseOptions spec_options(const Cluster& cluster);
// Whether this build has the Open MPI implementation (PIPEPROF_MPI).
bool mpi_built();
// The launcher's rank count from the environment (1 when not launched by mpirun).
int launched_ranks();

// This rank's clock for the merged timeline: trace::now_ns() plus a skew the environment variable
// PIPEPROF_CLOCK_SKEW_NS asks for (rank r's clock runs r x that many ns ahead: it stands for hosts
// whose clocks differ, so tests can check that merging puts them back on one clock).
int64_t rank_clock_skew_ns();

}  // namespace pipeprof::harness::cluster
