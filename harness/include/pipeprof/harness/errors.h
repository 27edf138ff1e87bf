// The harness's own errors: what the run engine, the workloads and the suite throw. They carry a
// message that names the file, key or option and what was expected; they choose no exit code. The
// command line (cli.h, exit_status_of) is the one place that maps them, and every other library's
// error type, to an exit code.
#pragma once

#include <stdexcept>

namespace pipeprof::harness {

// Bad usage or bad input that no library's own error type describes: a file that cannot be read,
// an unknown experiment id, an option value that does not fit the input. The command line exits 2.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A run or check that failed after its input was accepted. The command line exits 1.
class RunFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace pipeprof::harness
