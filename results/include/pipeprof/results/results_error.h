// The error of a results file that cannot be used.
#pragma once

#include <stdexcept>

namespace pipeprof::results {

// A file that cannot be used: missing, not JSON, or not the expected shape. The message names the
// file, the JSON path when there is one, and what was expected.
class ResultsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace pipeprof::results
