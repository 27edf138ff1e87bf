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
constexpr auto shown = report_fields::num;

struct Row {
  std::string id, name, loader;
  std::optional<double> au, throughput, io, wait_p99, max_accelerators, bound, accelerators;
  bool at_limit = false;  // the search stopped at its limit: the most is at least that
  bool cold = false;      // a search on files dropped from the page cache
  bool meets = false;
};

Row row_of(const Entry& e) {
  const WorkloadRecord& w = *e.workload;
  Row r;
  r.id = e.name;
  r.name = w.name;
  r.loader = w.peer.value_or("pipeprof");
  r.accelerators = static_cast<double>(w.accelerators);
  if (w.dlio) {
    r.au = w.dlio->au_mean_percentage;
    r.throughput = w.dlio->throughput_mean;
    r.io = w.dlio->io_mean_mb_per_s;
    r.meets = w.dlio->meets_au;
  }
  if (w.wait) r.wait_p99 = w.wait->p99_ms;
  if (const auto& m = w.max_accelerators) {
    r.max_accelerators = static_cast<double>(m->max_accelerators);
    if (m->storage) r.bound = m->storage->bound_accelerators;
    r.at_limit = m->at_limit();
    // A search on cold files stands apart from the warm one that its peers are set beside.
    r.cold = m->storage && m->storage->cold;
    if (r.cold) r.loader += " (cold)";
  }
  return r;
}

// Workloads read from an object server (their remote record): per epoch beside the ideal.
std::string remote_subsection(const std::vector<Entry>& entries, Report& report) {
  std::string rows;
  std::vector<ChartRow> chart;
  for (const Entry& x : entries) {
    if (!x.workload || !x.workload->remote) continue;
    const RemoteRecord& remote = *x.workload->remote;
    const std::string mode = remote.mode + (remote.preload ? " + preload" : "") +
                             (remote.store ? " from " + *remote.store : "");
    std::optional<double> first_epoch, later_sum;
    int later = 0;
    for (const RemoteEpoch& e : remote.epochs) {
      rows += fmt::format("| {} | {} | {} | {:.2f} | {:.2f} | {:.1f} | {:.1f} | {} |\n", cell(x.name),
                          cell(mode), e.epoch, e.seconds, e.ideal_seconds, e.au_percentage,
                          static_cast<double>(e.remote_bytes) / 1048576.0,
                          e.cache_hit_ratio ? fmt::format("{:.1f}%", *e.cache_hit_ratio * 100)
                                            : std::string("-"));
      if (!first_epoch) {
        first_epoch = e.seconds;
      } else {
        later_sum = later_sum.value_or(0) + e.seconds;
        ++later;
      }
    }
    rows += fmt::format("| {} | {} | first step | {} | {:.2f} | | | |\n", cell(x.name), cell(mode),
                        shown(remote.time_to_first_step_seconds, 2),
                        remote.time_to_first_step_ideal_seconds);
    std::optional<double> later_mean;
    if (later > 0) later_mean = *later_sum / later;
    chart.push_back({x.workload->name, first_epoch, later_mean, remote.time_to_first_step_seconds});
  }
  std::string growing;
  for (const Entry& x : entries) {
    if (!x.workload || !x.workload->growing_cache) continue;
    for (const GrowingEpochRecord& e : x.workload->growing_cache->epochs) {
      growing += fmt::format("| {} | {} | {} | {} | {} | {:.2f} | {:.1f} | {:.2f} | {:.0f} |\n",
                             cell(x.name), e.epoch, e.shards, e.samples, e.evicted_shards,
                             e.seconds, e.au_percentage, e.wait_p99_ms,
                             e.deserialize_mb_per_s_per_thread);
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

// Searches set beside pipeprof predict's answer from a probe of the same storage just before.
std::string prediction_subsection(const std::vector<Entry>& entries, Report& report) {
  std::string rows;
  std::vector<ChartRow> chart;
  for (const Entry& x : entries) {
    if (!x.workload || !x.workload->max_accelerators || !x.workload->max_accelerators->prediction)
      continue;
    const AcceleratorSearch& s = *x.workload->max_accelerators;
    const PredictionCheck& p = *s.prediction;
    std::string flags;
    if (p.extrapolated) flags += " (extrapolated)";
    rows += fmt::format("| {} | {} | {}{}{} | {}{} | {} | {} | {:.0f} |\n", cell(x.workload->name),
                        cell(p.storage), p.capped ? ">=" : "", p.predicted, flags,
                        s.at_limit() ? ">=" : "", s.max_accelerators,
                        p.error_percent ? fmt::format("{:+.1f}%", *p.error_percent) : std::string("-"),
                        cell(p.binding.empty() ? "-" : p.binding), p.profile_mib_per_s);
    chart.push_back({fmt::format("{}, {}", x.workload->name, p.storage),
                     static_cast<double>(p.predicted), static_cast<double>(s.max_accelerators),
                     std::nullopt});
  }
  if (rows.empty()) return "";
  ChartText t;
  t.title = "Most simulated accelerators at the AU threshold: predicted and measured";
  t.series[0] = "predicted (pipeprof predict)";
  t.series[1] = "measured (the search)";
  t.series[2] = "";
  t.unit = "accelerators";
  report.files.push_back({"prediction.svg", summary_chart_svg(chart, t)});
  return "### Predicted against measured\n\n"
         "Before each search, `pipeprof predict` probed the same storage (bandwidth by streams, "
         "first byte, the loader's CPU per sample) and predicted the most accelerators that meet "
         "the workload's AU threshold, without running it. `error` is (predicted - measured) / "
         "measured; `probe MiB/s` the highest bandwidth of the curve the prediction used; "
         "`binding` the resource the prediction names. `>=`: at the search's limit.\n\n"
         "| workload | storage | predicted | measured | error | binding | probe MiB/s |\n"
         "|---|---|--:|--:|--:|---|--:|\n" +
         rows + "\n![predicted and measured most accelerators per storage set-up](prediction.svg)\n\n";
}

}  // namespace

std::string storage_section(const nlohmann::json&, const std::vector<Entry>& entries,
                            Report& report) {
  std::vector<Row> rows;
  for (const Entry& e : entries) {
    if (e.workload && e.workload->dlio) rows.push_back(row_of(e));
  }
  if (rows.empty()) {
    const std::string remote = remote_subsection(entries, report);
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
      "cache before every epoch, as on a dataset too large to be cached; a workload that serves "
      "its files (pipeprof.remote) is measured through a server of its settings, an S3 dataset "
      "in its bucket; otherwise the \"storage\" is the page cache.\n\n"
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
  md += prediction_subsection(entries, report);
  md += remote_subsection(entries, report);
  return md;
}

}  // namespace pipeprof::results
