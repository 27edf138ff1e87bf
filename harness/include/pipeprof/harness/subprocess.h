// Other programs run by pipeprof (the PyTorch peer, mpirun for the scale-out suite): started from
// an argument vector, never through a shell, so no argument needs quoting. This process keeps its
// SIGINT handler while the child runs: a Ctrl-C reaches the child too (it is in the same process
// group), and the caller decides what a stopped child means.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace pipeprof::harness {

struct ProcessResult {
  bool started = false;  // false: the program could not be started (`output` says why)
  int exit_code = -1;    // the child's exit status; 128 + signal when a signal ended it
  std::string output;    // stdout and stderr together (when captured)
  bool ok() const { return started && exit_code == 0; }
};

// Runs argv[0] (a path, or a name looked up in PATH) with the arguments, waits for it and returns
// how it ended. Its stdout and stderr go to `output_file` when one is given (created or truncated),
// else they are captured into ProcessResult::output. Throws std::invalid_argument for an empty
// argv.
ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::optional<std::filesystem::path>& output_file = std::nullopt);

}  // namespace pipeprof::harness
