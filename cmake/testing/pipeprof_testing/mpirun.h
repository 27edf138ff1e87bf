// The mpirun command line of the tests that start ranks: more ranks than cores (--oversubscribe,
// no binding), root's permission where the tests run as root, and Open MPI's session directory
// under a folder of this test process's own. Two mpiruns that start at the same moment (ctest -j)
// otherwise race to create the shared one (/tmp/ompi.<host>.<uid>) and one of them fails at start
// ("A call to mkdir was unable to create the desired directory ... File exists").
//
//   run_command(pipeprof::testing_support::mpirun(2) + binary + " workload ...");
#pragma once

#include <unistd.h>

#include <string>

#include "pipeprof_testing/temp_dir.h"

namespace pipeprof::testing_support {

// "mpirun <options>", before the ranks' -np and program.
inline std::string mpirun_options() {
  static const TempDir session("mpirun");  // removed when the test process exits
  return "mpirun --oversubscribe --bind-to none" +
         std::string(::geteuid() == 0 ? " --allow-run-as-root" : "") + " --mca orte_tmpdir_base " +
         session.path().string();
}

// "mpirun <options> -np <ranks> " (`env`: a variable exported to the ranks, -x).
inline std::string mpirun(int ranks, const std::string& env = "") {
  return mpirun_options() + (env.empty() ? "" : " -x " + env) + " -np " + std::to_string(ranks) +
         " ";
}

}  // namespace pipeprof::testing_support
