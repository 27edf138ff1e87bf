// pipeprof analyze trace.json|folder [--json]: step breakdown, input-bound %, stage busy %, the
// bottleneck with a suggestion, and GPU busy/idle for a Chrome-JSON trace (ours or Kineto's); for
// PyTorch profiler traces the per-step breakdown with TensorBoard's priority rule, the DataLoader
// wait, the GPU idle split and suggestions; for a folder of rank-<N>.json traces a per-rank table
// with the slowest rank and its cause.
#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "commands/commands.h"
#include "pipeprof/trace/analysis.h"
#include "pipeprof/trace/chrome_json.h"
#include "pipeprof/trace/merge.h"
#include "pipeprof/trace/rank_analysis.h"

namespace pipeprof::harness {
namespace {

// The analysis reads no event args: skipping their copy makes large traces read faster.
constexpr trace::ReadOptions kRead{.keep_args = false};

struct AnalyzeCommandOptions {
  std::string path;
  bool json = false;
};

Outcome analyze_ranks(const AnalyzeCommandOptions& o) {
  const auto files = read_input([&] { return trace::find_rank_traces(o.path); });
  std::vector<trace::RankAnalysis> ranks;
  for (const auto& [rank, path] : files) {
    trace::RankAnalysis r;
    r.rank = rank;
    r.file = path.string();
    r.analysis = trace::analyze(read_input([&] { return trace::load_chrome_json(path, kRead); }));
    ranks.push_back(std::move(r));
  }
  const trace::RankComparison c = trace::compare_ranks(std::move(ranks));
  if (o.json) {
    std::cout << trace::to_json(c).dump(2) << "\n";
  } else {
    std::cout << trace::format_text(c);
  }
  return Outcome::kOk;
}

Outcome analyze_command(const AnalyzeCommandOptions& o) {
  std::error_code ec;
  if (std::filesystem::is_directory(o.path, ec)) return analyze_ranks(o);
  const trace::Trace t = read_input([&] { return trace::load_chrome_json(o.path, kRead); });
  const trace::Analysis a = trace::analyze(t);
  // A merged trace of ranks (pipeprof workload under mpirun): who the others wait for.
  const std::optional<trace::Straggler> straggler = trace::barrier_straggler(t);
  if (o.json) {
    nlohmann::json j = trace::to_json(a);
    if (straggler) j["ranks"] = trace::to_json(*straggler);
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << trace::format_text(a);
    if (straggler) {
      std::cout << "\nranks (barrier wait per step):\n";
      for (const trace::RankBarrierWait& w : straggler->ranks) {
        std::cout << fmt::format("  {:<28} {:>5} barriers  {:9.3f} ms each{}\n", w.process,
                                 w.barriers, w.mean_wait_ms,
                                 w.rank == straggler->rank ? "  <- straggler" : "");
      }
      std::cout << straggler->text << "\n";
    }
  }
  return Outcome::kOk;
}

}  // namespace

CommandRunner add_analyze_command(CLI::App& app) {
  auto o = std::make_shared<AnalyzeCommandOptions>();
  auto* cmd = app.add_subcommand(
      "analyze",
      "Analyse a Chrome-JSON trace: input-bound %, stage busy %, bottleneck, GPU idle; PyTorch "
      "profiler steps; a folder of rank-<N>.json traces rank by rank; in a merged trace of ranks "
      "(pipeprof workload under mpirun), the straggler the others wait for");
  cmd->add_option("trace", o->path,
                  "Trace file (pipeprof, PyTorch profiler / Kineto, Perfetto JSON), or a folder of "
                  "per-rank PyTorch traces named rank-<N>.json")
      ->required();
  cmd->add_flag("--json", o->json, "Print the analysis as JSON");
  cmd->footer("Exit status: 0 analysed, 2 bad usage or a missing or malformed trace.");
  return [o] { return analyze_command(*o); };
}

}  // namespace pipeprof::harness
