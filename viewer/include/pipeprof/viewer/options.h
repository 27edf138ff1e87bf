// The command line of pipeprof-viewer.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pipeprof::viewer {

struct ViewerOptions {
  std::vector<std::string> files;  // traces to open; with compare, exactly two
  bool compare = false;            // stack two traces on one relative time axis
  std::string screenshot;          // render one frame to this PNG and exit
  int width = 1600;
  int height = 900;
  std::optional<std::pair<double, double>> range_ms;  // visible range, ms from the trace start
  int bench_frames = 0;                               // render N frames and print frame times
  size_t synthetic_spans = 0;                         // open a synthetic trace of N spans
  std::string write_kineto;                           // write a Kineto-style trace and exit
  double kineto_mb = 50.0;                            // its size
  bool flows = false;                                 // show flow arrows from the start
  bool steps = false;                                 // open the steps window from the start
};

struct ParsedOptions {
  ViewerOptions options;
  std::optional<int> exit_code;  // set when the program should exit at once (help, bad usage)
  std::string message;           // what to print then (usage text or the error)
};

ParsedOptions parse_options(int argc, const char* const* argv);

// "1600x900" -> (1600, 900); throws std::invalid_argument on anything else or sizes outside
// [16, 16384].
std::pair<int, int> parse_size(const std::string& text);
// "12.5:40" (milliseconds) -> (12.5, 40); throws std::invalid_argument unless start < end.
std::pair<double, double> parse_range(const std::string& text);

}  // namespace pipeprof::viewer
