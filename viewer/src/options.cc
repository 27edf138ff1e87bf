#include "pipeprof/viewer/options.h"

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace pipeprof::viewer {
namespace {

double parse_number(std::string_view text, const std::string& what) {
  // std::from_chars for double: exact, locale-independent, and rejects trailing junk below.
  double value = 0.0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(value))
    throw std::invalid_argument(what + ": '" + std::string(text) + "' is not a number");
  return value;
}

}  // namespace

std::pair<int, int> parse_size(const std::string& text) {
  const auto x = text.find_first_of("xX");
  if (x == std::string::npos)
    throw std::invalid_argument("--size: expected WIDTHxHEIGHT (e.g. 1280x720), got '" + text +
                                "'");
  const double w = parse_number(std::string_view(text).substr(0, x), "--size width");
  const double h = parse_number(std::string_view(text).substr(x + 1), "--size height");
  if (w != std::floor(w) || h != std::floor(h) || w < 16 || h < 16 || w > 16384 || h > 16384)
    throw std::invalid_argument(
        "--size: width and height must be whole numbers in [16, 16384], got '" + text + "'");
  return {static_cast<int>(w), static_cast<int>(h)};
}

std::pair<double, double> parse_range(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos)
    throw std::invalid_argument("--range: expected START:END in milliseconds, got '" + text + "'");
  const double a = parse_number(std::string_view(text).substr(0, colon), "--range start");
  const double b = parse_number(std::string_view(text).substr(colon + 1), "--range end");
  if (!(a < b))
    throw std::invalid_argument("--range: START must be less than END, got '" + text + "'");
  return {a, b};
}

ParsedOptions parse_options(int argc, const char* const* argv) {
  ParsedOptions parsed;
  ViewerOptions& o = parsed.options;
  CLI::App app{
      "pipeprof-viewer: timeline viewer for pipeprof and Chrome-JSON (Kineto, Perfetto) traces"};
  app.name("pipeprof-viewer");
  std::vector<std::string> compare_files;
  std::string size_text, range_text;
  app.add_option("files", o.files, "Trace files (Chrome Trace Event JSON) to open");
  app.add_option("--compare", compare_files,
                 "Two traces stacked on a shared time axis relative to each one's start")
      ->expected(2);
  app.add_option("--screenshot", o.screenshot, "Render one frame to this PNG file and exit");
  app.add_option("--size", size_text, "Window or screenshot size WIDTHxHEIGHT (default 1600x900)");
  app.add_option("--range", range_text,
                 "Visible range START:END in milliseconds relative to the trace's start");
  app.add_option("--bench-frames", o.bench_frames,
                 "Render N frames with varied zoom and print per-frame CPU time")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--synthetic", o.synthetic_spans,
                 "Open a synthetic trace of N spans (with --write-kineto: its size in spans)")
      ->check(CLI::Range(size_t{1}, size_t{200'000'000}));
  app.add_option("--write-kineto", o.write_kineto,
                 "Write a synthetic PyTorch-profiler (Kineto) style trace to this file and exit");
  app.add_option("--kineto-mb", o.kineto_mb, "Size of the --write-kineto trace in MB (default 50)")
      ->check(CLI::Range(0.001, 10000.0));
  app.add_flag("--flows", o.flows, "Show flow arrows from the start");
  app.add_flag("--steps", o.steps,
               "Open the steps window: one stacked bar per training step (PyTorch "
               "ProfilerStep#N or the train loop), the verdict; click a bar to zoom to it");
  try {
    app.parse(argc, argv);
    if (!size_text.empty()) std::tie(o.width, o.height) = parse_size(size_text);
    if (!range_text.empty()) o.range_ms = parse_range(range_text);
    if (!compare_files.empty()) {
      if (!o.files.empty())
        throw std::invalid_argument("--compare takes exactly two traces; give no others");
      o.compare = true;
      o.files = compare_files;
    }
    if (!o.screenshot.empty() && o.bench_frames > 0)
      throw std::invalid_argument("--screenshot and --bench-frames cannot be combined");
  } catch (const CLI::ParseError& e) {
    std::ostringstream out, err;
    parsed.exit_code = app.exit(e, out, err) == 0 ? 0 : 2;
    parsed.message = out.str() + err.str();
  } catch (const std::invalid_argument& e) {
    parsed.exit_code = 2;
    parsed.message = std::string("pipeprof-viewer: ") + e.what() + "\n";
  }
  return parsed;
}

}  // namespace pipeprof::viewer
