// pipeprof inspect spec.json [--epochs N] [--limit K] [--format values|full] [--stats]
// Runs a pipeline spec and prints its elements as JSON lines, so anyone can check the semantics
// from a shell.
#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "commands/commands.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/spec.h"

namespace pipeprof::harness {
namespace {

struct InspectOptions {
  std::string spec;
  int64_t epochs = 1;
  int64_t limit = -1;
  std::string format = "values";
  bool stats = false;
};

void print_stats(const pipelines::Model& model) {
  std::cerr << fmt::format("{:<36} {:>10} {:>12} {:>10} {:>12}  {}\n", "stage", "elements",
                           "us/element", "cpu share", "blocked ms", "knobs");
  for (const auto& s : model.snapshot()) {
    std::string knobs;
    for (const auto& [name, value] : s.knobs)
      knobs += fmt::format("{}={} ", name, value);
    std::cerr << fmt::format("{:<36} {:>10} {:>12.2f} {:>10.2f} {:>12.2f}  {}\n",
                             s.key + " " + s.name, s.elements, s.wall_ns_per_element / 1e3,
                             s.cpu_share, static_cast<double>(s.blocked_ns) / 1e6, knobs);
  }
}

Outcome inspect(const InspectOptions& options) {
  const pipelines::Spec spec = read_input([&] { return pipelines::load_spec(options.spec); });
  const bool full = options.format == "full";
  for (int64_t epoch = 0; epoch < options.epochs; ++epoch) {
    auto it = spec.dataset.iterate();
    int64_t index = 0;
    try {
      for (; options.limit < 0 || index < options.limit; ++index) {
        auto element = it->next();
        if (!element) break;
        if (full) {
          nlohmann::json line{{"epoch", epoch},
                              {"index", index},
                              {"components", pipelines::element_to_json_full(*element)}};
          std::cout << line.dump() << "\n";
        } else {
          std::cout << pipelines::element_to_json(*element).dump() << "\n";
        }
      }
    } catch (const pipelines::InputDataError& e) {  // bad input, as from `run` (exit 2)
      throw pipelines::InputDataError(fmt::format("{}: epoch {}, element {}", options.spec, epoch, index),
                                      e.what());
    } catch (const pipelines::PipelineError& e) {
      throw RunFailure(
          fmt::format("{}: epoch {}, element {}: {}", options.spec, epoch, index, e.what()));
    }
    std::cout.flush();
    if (options.stats) {
      const auto model = it->shared_model();
      it.reset();  // the iterators flush their statistics when they go
      std::cerr << fmt::format("# epoch {}: {} elements\n", epoch, index);
      print_stats(*model);
    }
  }
  return Outcome::kOk;
}

}  // namespace

CommandRunner add_inspect_command(CLI::App& app) {
  auto options = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand(
      "inspect", "Run a pipeline spec and print its elements as JSON lines (one per element)");
  cmd->add_option("spec", options->spec, "Pipeline spec (JSON) to run")->required();
  cmd->add_option("--epochs", options->epochs, "Number of epochs (a fresh iterator each)")
      ->check(positive_count());
  cmd->add_option("--limit", options->limit, "Print at most K elements per epoch (-1: all)")
      ->check(CLI::Range(int64_t{-1}, std::numeric_limits<int64_t>::max()));
  cmd->add_option("--format", options->format,
                  "values: the element's value(s); full: epoch, index, dtype, shape and value")
      ->check(CLI::IsMember({"values", "full"}));
  cmd->add_flag("--stats", options->stats, "Print per-stage statistics to stderr after each epoch");
  cmd->footer(
      "Example:\n  pipeprof inspect specs/interleave.json --epochs 2 --limit 10\n"
      "Exit codes: 0 ok, 1 the pipeline failed while running, 2 bad usage or an invalid spec.");
  return [options] { return inspect(*options); };
}

}  // namespace pipeprof::harness
