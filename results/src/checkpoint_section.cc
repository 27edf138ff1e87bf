#include "checkpoint_section.h"

#include <fmt/format.h>

#include "report_fields.h"
#include "summary_chart.h"

namespace pipeprof::results {
namespace {

std::string seconds_or_dash(const std::optional<double>& v) {
  return v ? fmt::format("{:.3f}", *v) : "-";
}

}  // namespace

std::string checkpoint_section(const nlohmann::json&, const std::vector<Entry>& entries,
                               Report& report) {
  std::string summary, ops;
  std::vector<ChartRow> chart;
  for (const Entry& x : entries) {
    if (!x.workload || !x.workload->checkpoint) continue;
    const CheckpointRecord& c = *x.workload->checkpoint;
    const std::string name = report_fields::cell(x.workload->name);
    summary += fmt::format(
        "| {} | {} | {} = {} x {} x {}{} | {} | {:.3f} | {} | {} | {} / {} | {} / {} | {} / {} |{}\n",
        name, report_fields::cell(c.model), c.ranks, c.tensor, c.pipeline, c.data,
        c.mode == "subset" ? " (subset)" : "", c.zero_stage, c.size_gib, c.files,
        c.fsync ? "fsync" : "-", seconds_or_dash(c.save_duration_mean_s),
        seconds_or_dash(c.save_io_mean_gib_per_s), seconds_or_dash(c.save_slowest_mean_s),
        seconds_or_dash(c.save_gib_per_s), seconds_or_dash(c.load_slowest_mean_s),
        seconds_or_dash(c.load_gib_per_s),
        c.training_stall_s ? fmt::format(" {:.3f} |", *c.training_stall_s) : " - |");
    for (const CheckpointOpRecord& op : c.ops) {
      ops += fmt::format("| {} | {} {} | {} | {} | {} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} |\n",
                         name, op.kind, op.index, op.epoch, op.step, op.ranks,
                         static_cast<double>(op.bytes) / 1073741824.0, op.rank0_seconds,
                         op.dlio_gib_per_s, op.slowest_seconds, op.gib_per_s);
      chart.push_back({fmt::format("{} {} {}", x.workload->name, op.kind, op.index), op.gib_per_s,
                       op.dlio_gib_per_s, std::nullopt});
    }
  }
  if (summary.empty()) return "";
  std::string md =
      "## Checkpoints\n\n"
      "DLIO's checkpoints (`workflow.checkpoint`): each rank's share of the model and optimizer "
      "state, sized and named as DLIO writes them (docs/workloads.md). GB is GiB (2^30 bytes), as "
      "DLIO divides. DLIO's figures take rank 0's duration and the checkpoint's size over it; "
      "MLPerf Storage's take the slowest rank's duration and every rank's bytes over it. Reads "
      "start cold (the files dropped from the page cache).\n\n"
      "| workload | model | ranks = tensor x pipeline x data | ZeRO | size GiB | files | sync | "
      "save s / GiB/s (DLIO) | save s / GiB/s (MLPerf) | load s / GiB/s (MLPerf) | training "
      "waited s |\n"
      "|---|---|---|--:|--:|--:|---|--:|--:|--:|--:|\n" +
      summary + "\n";
  md += "| workload | checkpoint | epoch | step | ranks | GiB | rank 0 s | DLIO GiB/s | slowest s | "
        "MLPerf GiB/s |\n|---|---|--:|--:|--:|--:|--:|--:|--:|--:|\n" +
        ops + "\n";
  if (!chart.empty()) {
    ChartText t;
    t.title = "Checkpoint throughput (GiB/s)";
    t.series[0] = "MLPerf (slowest rank)";
    t.series[1] = "DLIO (rank 0)";
    t.series[2] = "";
    t.unit = "GiB/s";
    report.files.push_back({"checkpoints.svg", summary_chart_svg(chart, t)});
    md += "![checkpoint throughput per save and load](checkpoints.svg)\n\n";
  }
  return md;
}

}  // namespace pipeprof::results
