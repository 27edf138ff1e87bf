// pipeprof analyze trace.json [--json]: step breakdown, input-bound %, stage busy %, the
// bottleneck with a suggestion, and GPU busy/idle for a Chrome-JSON trace (ours or Kineto's).
#include <iostream>
#include <memory>

#include "commands/commands.h"
#include "pipeprof/trace/analysis.h"
#include "pipeprof/trace/chrome_json.h"

namespace pipeprof::harness {
namespace {

struct AnalyzeCommandOptions {
  std::string path;
  bool json = false;
};

Outcome analyze_command(const AnalyzeCommandOptions& o) {
  const trace::Trace t = read_input([&] { return trace::load_chrome_json(o.path); });
  const trace::Analysis a = trace::analyze(t);
  if (o.json) {
    std::cout << trace::to_json(a).dump(2) << "\n";
  } else {
    std::cout << trace::format_text(a);
  }
  return Outcome::kOk;
}

}  // namespace

CommandRunner add_analyze_command(CLI::App& app) {
  auto o = std::make_shared<AnalyzeCommandOptions>();
  auto* cmd = app.add_subcommand(
      "analyze", "Analyse a Chrome-JSON trace: input-bound %, stage busy %, bottleneck, GPU idle");
  cmd->add_option("trace", o->path,
                  "Trace file (pipeprof, PyTorch profiler / Kineto, Perfetto JSON)")
      ->required();
  cmd->add_flag("--json", o->json, "Print the analysis as JSON");
  cmd->footer("Exit status: 0 analysed, 2 bad usage or a missing or malformed trace.");
  return [o] { return analyze_command(*o); };
}

}  // namespace pipeprof::harness
