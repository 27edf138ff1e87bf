#include <exception>
#include <iostream>

#include "pipeprof/harness/cli.h"
#include "pipeprof/harness/cluster.h"
#include "pipeprof/pipelines/allocator.h"

int main(int argc, char** argv) {
  namespace cluster = pipeprof::harness::cluster;
  // Before any thread: loaders' buffers stay in malloc's arenas (allocator.h).
  (void)pipeprof::pipelines::keep_buffers_in_arenas();
  try {
    cluster::init(&argc, &argv);  // under mpirun: MPI, before any thread starts
  } catch (const std::exception& e) {
    std::cerr << "pipeprof: " << e.what() << "\n";
    return 2;
  }
  const int rc = pipeprof::harness::run_cli(argc, argv);
  cluster::shutdown(rc);
  return rc;
}
