// pipeprof analyze trace.json [--json]: step breakdown, input-bound %, stage busy %, the
// bottleneck with a suggestion, and GPU busy/idle for a Chrome-JSON trace (ours or Kineto's).
#include <iostream>
#include <memory>

#include "commands/commands.h"
#include "pipeprof/harness/cli.h"
#include "pipeprof/trace/analysis.h"
#include "pipeprof/trace/chrome_json.h"

namespace pipeprof::harness {
namespace {

struct AnalyzeCommandOptions {
  std::string path;
  bool json = false;
};

int analyze_command(const AnalyzeCommandOptions& o) {
  trace::Trace t;
  try {
    t = trace::load_chrome_json(o.path);
  } catch (const trace::TraceFormatError& e) {
    std::cerr << "pipeprof analyze: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::runtime_error& e) {  // missing or unreadable file
    std::cerr << "pipeprof analyze: " << e.what() << "\n";
    return kExitBadInput;
  }
  const trace::Analysis a = trace::analyze(t);
  if (o.json) {
    std::cout << trace::to_json(a).dump(2) << "\n";
  } else {
    std::cout << trace::format_text(a);
  }
  return kExitOk;
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
  return [o] { return analyze_command(*o); };
}

}  // namespace pipeprof::harness
