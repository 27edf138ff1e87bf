#include "commands/table.h"

#include <fmt/format.h>

namespace pipeprof::harness {
namespace {

std::string num(const std::optional<double>& v, const char* format = "{:.1f}") {
  return v ? fmt::format(fmt::runtime(format), *v) : std::string("-");
}

// Part B on the article's own metric: the mean wait per batch, beside the article's figure, and
// the steady-state wait against the transport's copy floor; then the simulator's ideal mean wait
// and the efficiency (ideal / measured wall time), as part A has it.
void print_part_b(std::ostream& out, const std::vector<ExperimentResult>& results) {
  bool any = false;
  for (const auto& r : results)
    any = any || (r.seed_wait_ms.has_value() && !r.repetitions.empty()) || r.part == "B";
  if (!any) return;
  out << "part B on the article's metric, the mean wait per batch (ms):\n";
  out << fmt::format("{:<24} {:>9} {:>10} {:>10} {:>10} {:>10} {:>12} {:>10} {:>10} {:>10}\n",
                     "experiment", "producers", "mean wait", "steady", "article", "x article",
                     "copy floor", "x floor", "ideal wait", "efficiency");
  for (const auto& r : results) {
    if (!(r.seed_wait_ms || r.part == "B") || r.repetitions.empty()) continue;
    std::optional<double> vs_article, floor = copy_floor_ms_per_element(r), vs_floor;
    if (r.seed_wait_ms && *r.seed_wait_ms > 0) vs_article = r.median_wait.mean_ms / *r.seed_wait_ms;
    if (floor && *floor > 0) vs_floor = r.median_steady_wait_ms / *floor;
    out << fmt::format("{:<24} {:>9} {:>10.2f} {:>10.2f} {:>10} {:>10} {:>12} {:>10} {:>10} {:>10}\n",
                       r.id, r.producers > 0 ? std::to_string(r.producers) : std::string("-"),
                       r.median_wait.mean_ms, r.median_steady_wait_ms, num(r.seed_wait_ms, "{:.0f}"),
                       num(vs_article, "{:.3f}"), num(floor, "{:.3f}"), num(vs_floor, "{:.2f}"),
                       num(r.ideal_wait_ms, "{:.2f}"), num(r.efficiency, "{:.3f}"));
  }
}

}  // namespace

std::string summary_line(const ExperimentResult& r) {
  if (r.repetitions.empty()) return "no complete repetition";
  std::string line = fmt::format("{:.2f} ms median of {}", r.median_wall_ms, r.repetitions.size());
  if (r.ideal_ms) line += fmt::format(", ideal {:.1f}", *r.ideal_ms);
  if (r.efficiency) line += fmt::format(", efficiency {:.3f}", *r.efficiency);
  if (r.ideal_ms && *r.ideal_ms == 0 && r.elements > 0) {
    line += fmt::format(", wait p50 {:.3f} ms", r.median_wait.p50_ms);
  }
  return line;
}

void print_table(std::ostream& out, const std::vector<ExperimentResult>& results) {
  out << fmt::format("{:<24} {:>9} {:>11} {:>9} {:>9} {:>10} {:>10} {:>9} {:>10}\n", "experiment",
                     "step", "measured ms", "ideal", "bound", "efficiency", "seed (TF)", "TF eff.",
                     "wait p99");
  for (const auto& r : results) {
    std::optional<double> tf_eff;
    if (r.seed_ms && r.documented_ideal_ms && *r.documented_ideal_ms > 0) {
      tf_eff = *r.documented_ideal_ms / *r.seed_ms;
    }
    out << fmt::format(
        "{:<24} {:>9} {:>11} {:>9} {:>9} {:>10} {:>10} {:>9} {:>10}\n", r.id, r.step,
        r.repetitions.empty() ? std::string("-") : fmt::format("{:.2f}", r.median_wall_ms),
        num(r.ideal_ms), num(r.bound_ms), num(r.efficiency, "{:.3f}"), num(r.seed_ms, "{:.2f}"),
        num(tf_eff, "{:.3f}"),
        r.repetitions.empty() ? std::string("-") : fmt::format("{:.2f}", r.median_wait.p99_ms));
  }
  print_part_b(out, results);
  for (const auto& r : results) {
    if (!r.simulation_note.empty())
      out << fmt::format("  {}: no ideal: {}\n", r.id, r.simulation_note);
    if (!r.notice.empty()) out << fmt::format("  {}: {}\n", r.id, r.notice);
  }
}

void print_overshoot(std::ostream& out, const SleepOvershoot& o) {
  out << fmt::format(
      "sleep overshoot on this machine ({} x {:.0f} ms): plain sleep p50 {:.3f} ms, max {:.3f} ms; "
      "precise sleep p50 {:.3f} ms, max {:.3f} ms\n",
      o.count, o.sleep_ms, o.plain_p50_ms, o.plain_max_ms, o.precise_p50_ms, o.precise_max_ms);
}

}  // namespace pipeprof::harness
