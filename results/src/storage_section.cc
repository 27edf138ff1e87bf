#include "storage_section.h"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <vector>

#include "report_fields.h"
#include "summary_chart.h"

namespace pipeprof::results {
namespace {

using report_fields::cell;
constexpr auto number = report_fields::opt_number;
constexpr auto text = report_fields::str;
constexpr auto shown = report_fields::num;

struct Row {
  std::string id, name, loader;
  std::optional<double> au, throughput, io, wait_p99, max_accelerators, bound, accelerators;
  bool at_limit = false;  // the search stopped at its limit: the most is at least that
  bool cold = false;      // a search on files dropped from the page cache
  bool meets = false;
};

Row row_of(const nlohmann::json& x) {
  const nlohmann::json& w = x["workload"];
  Row r;
  r.id = text(x, "id");
  r.name = text(w, "name");
  r.loader = text(w, "peer").empty() ? "pipeprof" : text(w, "peer");
  r.accelerators = number(w, "accelerators");
  if (auto d = w.find("dlio"); d != w.end() && d->is_object()) {
    r.au = number(*d, "train_au_mean_percentage");
    r.throughput = number(*d, "train_throughput_mean_samples_per_second");
    r.io = number(*d, "train_io_mean_MB_per_second");
    r.meets = text(*d, "train_au_meet_expectation") == "success";
  }
  if (auto m = w.find("wait_ms"); m != w.end() && m->is_object()) r.wait_p99 = number(*m, "p99");
  if (auto m = w.find("max_accelerators"); m != w.end() && m->is_object()) {
    r.max_accelerators = number(*m, "max_accelerators");
    r.bound = number(*m, "bound_accelerators");
    const auto limit = number(*m, "limit");
    r.at_limit = limit && r.max_accelerators && *r.max_accelerators >= *limit;
    // A search on cold files stands apart from the warm one that its peers are set beside.
    r.cold = m->value("storage_cold", false);
    if (r.cold) r.loader += " (cold)";
  }
  return r;
}

// Workloads read from an object server (their "remote" object): per epoch beside the ideal.
std::string remote_subsection(const nlohmann::json& experiments, Report& report) {
  std::string rows;
  std::vector<ChartRow> chart;
  for (const auto& x : experiments) {
    const auto w = x.find("workload");
    if (w == x.end() || !w->is_object()) continue;
    const auto remote = w->find("remote");
    if (remote == w->end() || !remote->is_object()) continue;
    const std::string mode =
        text(*remote, "mode") + (remote->value("preload", false) ? " + preload" : "");
    const auto first_step = number(*remote, "time_to_first_step_seconds");
    const auto first_ideal = number(*remote, "time_to_first_step_ideal_seconds");
    std::optional<double> first_epoch, later_sum;
    int later = 0;
    for (const auto& e : remote->value("epochs", nlohmann::json::array())) {
      const auto hit = number(e, "cache_hit_ratio");
      std::optional<double> mib = number(e, "remote_bytes");
      if (mib) *mib /= 1048576.0;
      rows += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", cell(text(x, "id")),
                          cell(mode), shown(number(e, "epoch"), 0), shown(number(e, "seconds"), 2),
                          shown(number(e, "ideal_seconds"), 2), shown(number(e, "au_percentage"), 1),
                          shown(mib, 1),
                          hit ? fmt::format("{:.1f}%", *hit * 100) : std::string("-"));
      const auto seconds = number(e, "seconds");
      if (!seconds) continue;
      if (!first_epoch) {
        first_epoch = seconds;
      } else {
        later_sum = later_sum.value_or(0) + *seconds;
        ++later;
      }
    }
    rows += fmt::format("| {} | {} | first step | {} | {} | | | |\n", cell(text(x, "id")),
                        cell(mode), shown(first_step, 2), shown(first_ideal, 2));
    std::optional<double> later_mean;
    if (later > 0) later_mean = *later_sum / later;
    chart.push_back({text(*w, "name"), first_epoch, later_mean, first_step});
  }
  std::string growing;
  for (const auto& x : experiments) {
    const auto w = x.find("workload");
    if (w == x.end() || !w->is_object()) continue;
    const auto g = w->find("growing_cache");
    if (g == w->end() || !g->is_object()) continue;
    for (const auto& e : g->value("epochs", nlohmann::json::array())) {
      growing += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", cell(text(x, "id")),
                             shown(number(e, "epoch"), 0), shown(number(e, "shards"), 0),
                             shown(number(e, "samples"), 0), shown(number(e, "evicted_shards"), 0),
                             shown(number(e, "seconds"), 2), shown(number(e, "au_percentage"), 1),
                             shown(number(e, "wait_p99_ms"), 2),
                             shown(number(e, "deserialize_mb_per_s_per_thread"), 0));
    }
  }
  if (!growing.empty()) {
    growing =
        "### A sample cache that grows every epoch\n\n"
        "Sampler processes fetch samples from the object server and write TFRecord shards; every "
        "epoch trains on the shards complete at its start (the oldest evicted beyond the disk "
        "budget). Deserialization runs in the reader threads; the seed needs 300-600 MB/s of it.\n\n"
        "| workload | epoch | shards | samples | evicted | seconds | AU % | wait p99 ms | "
        "deserialization MB/s per thread |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|\n" +
        growing + "\n";
  }
  if (rows.empty()) return growing;
  std::string md =
      "### Remote object storage\n\n"
      "The dataset served by nginx on 127.0.0.1 with a time to first byte and a bandwidth limit per "
      "request, read by copying it first, directly every epoch, or through a disk cache (with or "
      "without preloading). `first step` is the time from the start (a copy included) to the first "
      "batch in hand. Remote MiB and hit ratio count what happened during the epoch's wall time (the "
      "loaders read ahead into the next epoch).\n\n"
      "| workload | mode | epoch | seconds | ideal s | AU % | remote MiB | hit ratio |\n"
      "|---|---|--:|--:|--:|--:|--:|--:|\n" + rows + "\n";
  ChartText t;
  t.title = "Remote reads: seconds";
  t.series[0] = "epoch 1";
  t.series[1] = "later epochs (mean)";
  t.series[2] = "time to first step";
  t.unit = "s";
  report.files.push_back({"remote.svg", summary_chart_svg(chart, t)});
  md += "![epoch times and the time to the first step, per way of reading](remote.svg)\n\n";
  return md + growing;
}

}  // namespace

std::string storage_section(const nlohmann::json& experiments, const std::vector<Entry>&,
                         Report& report) {
  std::vector<Row> rows;
  for (const auto& x : experiments) {
    if (auto w = x.find("workload"); w != x.end() && w->is_object() && w->contains("dlio")) {
      rows.push_back(row_of(x));
    }
  }
  if (rows.empty()) {
    const std::string remote = remote_subsection(experiments, report);
    return remote.empty() ? "" : "## Storage workloads\n\n" + remote;
  }
  std::string md =
      "## Storage workloads\n\n"
      "DLIO / MLPerf Storage workloads: accelerator utilization (AU) = time computing / wall time "
      "of the training loop, the first step excluded, as DLIO computes it (the mean over the "
      "simulated accelerators; throughput their sum). `max accel.` is the most simulated "
      "accelerators whose AU met the workload's threshold (the MLPerf Storage result), and "
      "`storage bound` the storage's read bandwidth (the mean of its measures between the "
      "search's probes) over what one accelerator demands; `of bound` the first over the second. "
      "`>=`: the search stopped at its limit. A `(cold)` loader read files dropped from the page "
      "cache before every epoch, as on a dataset too large to be cached; otherwise the "
      "\"storage\" is the page cache.\n\n"
      "| workload | loader | accelerators | AU % | meets | samples/s | MiB/s | wait p99 ms | max "
      "accel. | storage bound | of bound |\n|---|---|--:|--:|---|--:|--:|--:|--:|--:|--:|\n";
  for (const Row& r : rows) {
    std::optional<double> of_bound;
    if (r.max_accelerators && r.bound && *r.bound > 0) of_bound = *r.max_accelerators / *r.bound;
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", cell(r.id),
                      cell(r.loader),
                      shown(r.accelerators, 0), shown(r.au, 2), r.meets ? "yes" : "no",
                      shown(r.throughput, 1), shown(r.io, 1), shown(r.wait_p99, 2),
                      (r.at_limit ? ">=" : "") + shown(r.max_accelerators, 0), shown(r.bound, 1),
                      (r.at_limit && of_bound ? ">=" : "") + shown(of_bound, 2));
  }
  md += "\n";
  // pipeprof beside each peer loader run on the same workload.
  std::map<std::string, const Row*> ours;
  for (const Row& r : rows)
    if (r.loader == "pipeprof") ours[r.name] = &r;
  auto is_ours = [](const Row& r) { return r.loader == "pipeprof" || r.cold; };
  std::vector<ChartRow> chart;
  bool by_max = false;
  std::string pairs;
  for (const Row& peer : rows) {
    if (is_ours(peer)) continue;
    const auto it = ours.find(peer.name);
    if (it == ours.end()) continue;
    const Row& p = *it->second;
    std::optional<double> ratio;
    if (p.max_accelerators && peer.max_accelerators && *peer.max_accelerators > 0)
      ratio = *p.max_accelerators / *peer.max_accelerators;
    pairs += fmt::format("| {} | {} | {}{} | {} | {} | {} | {} |\n", cell(peer.name),
                         cell(peer.loader), p.at_limit ? ">=" : "", shown(p.max_accelerators, 0),
                         shown(peer.max_accelerators, 0),
                         ratio ? fmt::format("{}{:.1f}x", p.at_limit ? ">=" : "", *ratio)
                               : std::string("-"),
                         shown(p.au, 2), shown(peer.au, 2));
    if (p.max_accelerators && peer.max_accelerators) {
      by_max = true;
      chart.push_back({peer.name, p.max_accelerators, peer.max_accelerators, p.bound});
    } else {
      chart.push_back({peer.name, p.au, peer.au, std::nullopt});
    }
  }
  if (!pairs.empty()) {
    md +=
        "### pipeprof beside other loaders\n\nThe same workload file, files, threads and step. "
        "AU is each run's own (its accelerator count in the table above).\n\n"
        "| workload | peer | pipeprof max accel. | peer max accel. | ratio | pipeprof AU % | peer AU "
        "% |\n|---|---|--:|--:|--:|--:|--:|\n" +
        pairs + "\n";
    ChartText t;
    if (by_max) {
      t.title = "Simulated accelerators sustained at the AU threshold";
      t.series[0] = "pipeprof";
      t.series[1] = "peer loader";
      t.series[2] = "storage bound";
      t.unit = "accelerators";
    } else {
      t.title = "AU (%)";
      t.unit = "%";
      t.series[0] = "pipeprof";
      t.series[1] = "peer loader";
      t.series[2] = "-";
    }
    report.files.push_back({"storage.svg", summary_chart_svg(chart, t)});
    md += "![pipeprof beside other loaders on the same workloads](storage.svg)\n\n";
  }
  md += remote_subsection(experiments, report);
  return md;
}

}  // namespace pipeprof::results
