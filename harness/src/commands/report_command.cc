// pipeprof report results.json [--out DIR]
//
// Turns a results file into DIR/report.md with SVG charts next to it (results/report.h): the
// summary table, measured vs ideal vs seed, one Gantt chart per experiment from its trace, and the
// environment. The same code writes the suite's report.
#include <fmt/format.h>

#include <iostream>

#include "commands/commands.h"
#include "pipeprof/results/report.h"
#include "pipeprof/results/results_file.h"

namespace pipeprof::harness {
namespace {

struct ReportCommandOptions {
  std::string results;
  std::string out;
};

Outcome report_command(const ReportCommandOptions& o) {
  const std::filesystem::path path(o.results);
  const results::ResultsFile file = read_input([&] { return results::load_results(path); });
  if (file.format != results::Format::kPipeprof) {
    throw InputError(o.results + ": Google Benchmark JSON; report reads pipeprof results files");
  }
  const results::Report report =
      read_input([&] { return results::render_report(file.doc, path.parent_path(), o.results); });
  std::filesystem::path out = o.out.empty() ? path.parent_path() : std::filesystem::path(o.out);
  if (out.empty()) out = ".";
  results::write_report(report, out);  // throws std::runtime_error naming what cannot be written
  std::cerr << fmt::format("wrote {} and {} chart(s)\n", (out / "report.md").string(),
                           report.files.size());
  return Outcome::kOk;
}

}  // namespace

CommandRunner add_report_command(CLI::App& app) {
  auto o = std::make_shared<ReportCommandOptions>();
  auto* cmd =
      app.add_subcommand("report", "Write a Markdown report with SVG charts from a results file");
  cmd->footer(
      "Writes DIR/report.md, DIR/summary.svg (measured vs ideal vs the seed's time) and one "
      "DIR/gantt-<id>.svg per experiment drawn from its trace, with the summary table and the "
      "environment. Exit status: 0 written, 1 cannot write, 2 bad input.");
  cmd->add_option("results", o->results, "results.json written by pipeprof suite")->required();
  cmd->add_option("--out", o->out,
                  "Folder for report.md and the charts (default: the results file's folder)");
  return [o] { return report_command(*o); };
}

}  // namespace pipeprof::harness
