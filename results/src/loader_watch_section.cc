#include "loader_watch_section.h"

#include <fmt/format.h>

#include <numeric>

#include "report_fields.h"

namespace pipeprof::results {

std::string loader_watch_section(const nlohmann::json&, const std::vector<Entry>& entries, Report&) {
  std::string rows, advice;
  for (const Entry& x : entries) {
    if (!x.loader_watch) continue;
    const LoaderWatchRecord& w = *x.loader_watch;
    const double rate = x.throughput.empty()
                            ? 0.0
                            : std::accumulate(x.throughput.begin(), x.throughput.end(), 0.0) /
                                  static_cast<double>(x.throughput.size());
    rows += fmt::format(
        "| {} | {} | {} / {} / {} | {} | {} | {} | {:.0f} | {:.1f} | {:.1f} | {:.2f} / {:.2f} | {:.0f} | "
        "{:.0f} | {}{} |\n",
        report_fields::cell(x.name), w.num_workers, w.prefetch_factor, w.pin_memory ? "pinned" : "-",
        w.persistent_workers ? "persistent" : "-", w.batch_size, w.epochs, w.batches, rate,
        w.input_bound_pct, w.steady_input_bound_pct, w.wait_p50_ms, w.wait_p99_ms, w.ready_pct,
        w.workers_busy_pct, w.worker_starts,
        w.dead_workers > 0 ? fmt::format(" ({} died)", w.dead_workers) : std::string());
    if (!w.suggestions.empty()) {
      advice += fmt::format("**{}**\n\n", report_fields::cell(x.name));
      for (const auto& [knob, text] : w.suggestions)
        advice += fmt::format("- `{}`: {}\n", knob, text);
      advice += "\n";
    }
  }
  if (rows.empty()) return "";
  return "## PyTorch DataLoaders, watched\n\n"
         "Training loops watched by the Python module (`pipeprof.watch`, docs/python.md): the "
         "loop's wait for each batch against its step, and inside the DataLoader's worker "
         "processes each fetch. Input-bound % = wait / (wait + step); steady leaves out each "
         "epoch's first wait (the workers starting); ready % = waits under 1 ms; workers busy % = "
         "their fetches over the time their processes ran (from each start to the next, or the "
         "epoch's end without persistent_workers).\n\n"
         "| run | workers | prefetch / pin / persistent | batch | epochs | batches | samples/s | "
         "input-bound % | steady % | wait p50 / p99 ms | ready % | workers busy % | worker starts |\n"
         "|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n" +
         rows + "\n" + advice;
}

}  // namespace pipeprof::results
