#include <exception>
#include <iostream>

#include "pipeprof/harness/cli.h"
#include "pipeprof/harness/cluster.h"

int main(int argc, char** argv) {
  namespace cluster = pipeprof::harness::cluster;
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
