#include "scaleout_section.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include "report_fields.h"
#include "summary_chart.h"

namespace pipeprof::results {

std::string scaleout_section(const nlohmann::json&, const std::vector<Entry>& entries,
                             Report& report) {
  // images/s by pipeline and rank count.
  std::map<std::string, std::map<int, double>> rate;
  std::string rows;
  for (const Entry& x : entries) {
    if (!x.scaleout) continue;
    const std::string& id = x.name;
    for (const ScaleoutPoint& p : x.scaleout->points) {
      const int n = p.ranks;
      const double total = p.images_per_second;
      rate[id][n] = total;
      const std::vector<double>& au = p.au_per_rank;
      std::string au_text = "-";
      if (!au.empty()) {
        const auto [lo, hi] = std::minmax_element(au.begin(), au.end());
        au_text = au.size() == 1 || *hi - *lo < 0.05 ? fmt::format("{:.1f}", *lo)
                                                      : fmt::format("{:.1f}–{:.1f}", *lo, *hi);
      }
      rows += fmt::format(
          "| {} | {} | {:.1f} | {:.1f} | {} | {} |\n", report_fields::cell(id), n, total,
          n > 0 ? total / n : 0.0,
          report_fields::num(p.scaling_efficiency, 2),
          au_text);
    }
  }
  if (rows.empty()) return "";
  std::string md =
      "## Scale-out: tf.data's old and new input pipeline over ranks\n\n"
      "`dell_old` and `dell_new` (EXPERIMENTS.md C4) on ImageNet-like TFRecord shards (JPEG decode "
      "and augmentation on the CPU), one process per simulated GPU under `mpirun` as Horovod runs "
      "them. Scaling efficiency = images/s at N ranks / (N x images/s at 1 rank); AU per rank = "
      "the step's share of the rank's wall time. The ranks share this machine's cores.\n\n"
      "| pipeline | ranks | images/s | per rank | scaling efficiency | AU per rank % |\n"
      "|---|--:|--:|--:|--:|--:|\n" +
      rows + "\n";
  // new / old at every rank count, and the chart.
  const auto oldp = rate.find("dell_old"), newp = rate.find("dell_new");
  if (oldp != rate.end() && newp != rate.end()) {
    std::vector<ChartRow> chart;
    std::string ratios;
    const double base = newp->second.count(1) ? newp->second.at(1) : 0.0;
    for (const auto& [n, fresh] : newp->second) {
      const auto o = oldp->second.find(n);
      std::optional<double> old_rate;
      if (o != oldp->second.end()) old_rate = o->second;
      if (old_rate && *old_rate > 0)
        ratios += fmt::format("{}{} rank(s) {:.2f}x", ratios.empty() ? "" : ", ", n, fresh / *old_rate);
      chart.push_back({fmt::format("{} rank{}", n, n == 1 ? "" : "s"), fresh, old_rate,
                       base > 0 ? std::optional<double>(base * n) : std::nullopt});
    }
    if (!ratios.empty()) md += "dell_new over dell_old: " + ratios + ".\n\n";
    ChartText t;
    t.title = "Images/s by rank count";
    t.series[0] = "dell_new";
    t.series[1] = "dell_old";
    t.series[2] = "dell_new, linear";
    t.unit = "images/s";
    report.files.push_back({"scaleout.svg", summary_chart_svg(chart, t)});
    md += "![images/s of dell_new and dell_old by rank count](scaleout.svg)\n\n";
  }
  return md;
}

}  // namespace pipeprof::results
