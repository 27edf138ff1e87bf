#include "pipeprof/results/report.h"

#include <fmt/format.h>

#include <fstream>
#include <unistd.h>
#include <cstring>
#include <cerrno>
#include <atomic>
#include <optional>
#include <set>

#include "pipeprof/results/compare.h"
#include "pipeprof/results/environment.h"
#include "pipeprof/results/gantt_svg.h"
#include "pipeprof/results/results_file.h"
#include "pipeprof/trace/chrome_json.h"
#include "report_fields.h"
#include "report_section.h"
#include "checkpoint_section.h"
#include "loader_watch_section.h"
#include "scaleout_section.h"
#include "storage_section.h"
#include "summary_chart.h"

namespace pipeprof::results {
namespace {

using report_fields::cell;
using report_fields::num;
using report_fields::opt_number;
using report_fields::str;

// The anchor a code host gives the heading "### <id>": lower case, punctuation other than '-' and
// '_' dropped, spaces as '-'.
std::string anchor(const std::string& id) {
  std::string out;
  for (char c : id) {
    if (c >= 'A' && c <= 'Z') {
      out += static_cast<char>(c - 'A' + 'a');
    } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_') {
      out += c;
    } else if (c == ' ') {
      out += '-';
    }
  }
  return out;
}

// A file name made of the id's letters, digits, '-', '_' and '.'.
std::string file_safe(const std::string& id) {
  std::string out;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    out += ok ? c : '_';
  }
  return out.empty() ? "experiment" : out;
}

// What the online tuner picked, when it ran: "Online tuner: `prefetch` buffer_size = 2 (3
// changes)."
std::string tuning_line(const nlohmann::json& x) {
  auto it = x.find("autotune");
  if (it == x.end() || !it->is_object()) return "";
  std::string picks;
  if (auto f = it->find("final"); f != it->end() && f->is_array()) {
    for (const auto& k : *f) {
      if (!k.is_object()) continue;
      const std::string value = k.contains("value") ? k["value"].dump() : "?";
      picks += fmt::format("{}`{}` {} = {}", picks.empty() ? "" : ", ", str(k, "stage"),
                           str(k, "knob"), value);
    }
  }
  size_t changes = 0;
  if (auto c = it->find("changes"); c != it->end() && c->is_array()) changes = c->size();
  return fmt::format("Online tuner: {} ({} change(s) in the last repetition).\n\n",
                     picks.empty() ? std::string("no knob") : picks, changes);
}

// A process-based transport against its physical floor.
std::string transport_line(const nlohmann::json& x) {
  auto it = x.find("transport");
  if (it == x.end() || !it->is_object()) return "";
  const auto bytes = opt_number(*it, "bytes_copied_per_element");
  std::string line = fmt::format(
      "Transport: {} MB copied per element at {} GB/s memcpy bandwidth, a floor of {} ms per "
      "element.",
      bytes ? fmt::format("{:.1f}", *bytes / 1e6) : std::string("-"),
      num(opt_number(*it, "memcpy_gb_per_s"), 1),
      num(opt_number(*it, "copy_floor_ms_per_element"), 3));
  // A socket transport's ideal receives each element at the socket's measured rate.
  if (auto rates = x.find("measured_rates"); rates != x.end() && rates->is_object()) {
    if (auto socket = opt_number(*rates, "socket_gb_per_s"); socket && *socket > 0) {
      line += fmt::format(" The ideal receives each element through the socket at {:.1f} GB/s, "
                          "the rate a large element was received through a socket pair with the "
                          "transport's buffers in the same run.",
                          *socket);
    }
    if (auto first = opt_number(*rates, "store_first_write_gb_per_s"); first && *first > 0) {
      line += fmt::format(" The ideal writes each producer's first element into pages no process "
                          "has written before at {:.2f} GB/s, the rate measured into a fresh "
                          "store in the same run.",
                          *first);
    }
  }
  return line + "\n\n";
}

// Part B (the Ray article) publishes the mean wait per batch, not a total time.
bool is_part_b(const Entry& e) { return e.kind == EntryKind::kExperiment && e.part == "B"; }

// Part B on the article's metric: the mean and steady-state wait per batch beside the article's
// figure, the transport's copy floor and how far above it the steady-state wait is; with its chart.
std::string part_b_section(const nlohmann::json& experiments, const std::vector<Entry>& entries,
                           Report& report) {
  std::string md;
  std::vector<ChartRow> chart;
  for (size_t i = 0; i < experiments.size(); ++i) {
    const auto& x = experiments[i];
    if (!is_part_b(entries[i]) || x["repetitions"].empty()) continue;
    if (md.empty()) {
      md +=
          "## Part B on the article's metric\n\nThe Ray article measures the mean time the "
          "training loop waits for each batch. `steady` leaves out each epoch's first wait (the "
          "producers' start); `copy floor` is the time the transport's copies of one element take "
          "at the memcpy bandwidth measured in the same run. `ideal wait` is the mean wait of the "
          "zero-overhead simulation (producers' fetch and fill, the queue, the transport's copies "
          "at the measured rates) and `efficiency` = ideal / measured wall time, as in part A.\n\n"
          "| experiment | producers | mean wait ms | steady wait ms | article ms | x article | "
          "copy floor ms | steady x floor | ideal wait ms | efficiency |\n"
          "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n";
    }
    std::optional<double> mean;
    if (auto w = x.find("median_wait"); w != x.end() && w->is_object())
      mean = opt_number(*w, "mean_ms");
    const auto steady = opt_number(x, "median_steady_wait_ms");
    const auto article = opt_number(x, "seed_wait_ms");
    std::optional<double> floor, vs_article, vs_floor;
    if (auto t = x.find("transport"); t != x.end() && t->is_object())
      floor = opt_number(*t, "copy_floor_ms_per_element");
    if (mean && article && *article > 0) vs_article = *mean / *article;
    if (steady && floor && *floor > 0) vs_floor = *steady / *floor;
    const auto producers = opt_number(x, "producers");
    md += fmt::format(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", cell(entries[i].name),
        producers ? fmt::format("{:.0f}", *producers) : std::string("-"), num(mean, 2),
        num(steady, 2), num(article, 0), num(vs_article, 3), num(floor, 3), num(vs_floor, 2),
        num(opt_number(x, "ideal_wait_ms"), 2), num(opt_number(x, "efficiency"), 3));
    chart.push_back({entries[i].name, mean, steady, article});
  }
  if (md.empty()) return md;
  md += "\n";
  report.files.push_back(
      {"summary-part-b.svg",
       summary_chart_svg(chart, {.title = "Part B: wait per batch (ms)",
                                 .series = {"mean wait (measured)", "steady-state wait",
                                            "the article's mean wait"}})});
  md += "![Part B: wait per batch, measured and the article's](summary-part-b.svg)\n\n";
  return md;
}

std::string environment_section(const nlohmann::json& doc) {
  std::string md = "## Environment\n\n| | |\n|---|---|\n";
  auto row = [&md](const std::string& key, const std::string& value) {
    md += fmt::format("| {} | {} |\n", key, cell(value.empty() ? "unknown" : value));
  };
  if (auto it = doc.find("environment"); it != doc.end() && it->is_object()) {
    const Environment env = environment_from_json(*it);
    row("CPU", env.cpu_model);
    row("Cores", env.cores > 0 ? std::to_string(env.cores) : "");
    row("Memory", env.memory_bytes > 0
                      ? fmt::format("{:.1f} GiB",
                                    static_cast<double>(env.memory_bytes) / (1024.0 * 1024 * 1024))
                      : "");
    std::string gpus;
    for (const auto& g : env.gpus)
      gpus += (gpus.empty() ? "" : ", ") + g;
    row("GPU", gpus.empty() ? "none" : gpus);
    row("OS", env.os);
    row("Kernel", env.kernel);
    row("Compiler", env.compiler);
    row("Build type", env.build_type);
    row("Git commit", env.git_commit);
    row("pipeprof", env.pipeprof_version);
  } else if (auto m = doc.find("machine"); m != doc.end() && m->is_object()) {  // schema 1
    row("CPU", str(*m, "cpu_model"));
    row("Cores", m->contains("cores") ? m->at("cores").dump() : "");
    row("pipeprof", str(doc, "pipeprof_version"));
  }
  if (auto m = doc.find("machine"); m != doc.end() && m->contains("sleep_overshoot")) {
    const auto& o = (*m)["sleep_overshoot"];
    row("Sleep overshoot",
        fmt::format("{} x {} ms: plain sleep p50 {} ms, max {} ms; precise sleep p50 {} ms, max "
                    "{} ms",
                    o.value("count", 0), num(opt_number(o, "sleep_ms"), 0),
                    num(opt_number(o, "plain_p50_ms"), 3), num(opt_number(o, "plain_max_ms"), 3),
                    num(opt_number(o, "precise_p50_ms"), 3),
                    num(opt_number(o, "precise_max_ms"), 3)));
  }
  if (std::string created = str(doc, "created_utc"); !created.empty()) row("Run at (UTC)", created);
  return md;
}

}  // namespace

const std::vector<ReportSection>& report_sections() {
  static const std::vector<ReportSection> sections{
      {"part B", {"summary-part-b.svg"}, &part_b_section},
      {"storage", {"storage.svg", "prediction.svg", "remote.svg"}, &storage_section},
      {"scale-out", {"scaleout.svg"}, &scaleout_section},
      {"checkpoints", {"checkpoints.svg"}, &checkpoint_section},
      {"PyTorch DataLoaders", {}, &loader_watch_section},
  };
  return sections;
}

namespace {

Report render(const nlohmann::json& doc, const std::filesystem::path& base_dir,
              const std::string& source) {
  const std::vector<Entry> entries = pipeprof_entries(doc, source);  // validates
  const nlohmann::json& experiments = doc["experiments"];
  Report report;
  std::string& md = report.markdown;

  md += "# pipeprof results\n\n";
  md += fmt::format(
      "{} experiment(s), {} repetition(s) each. Efficiency = ideal / measured, where measured is "
      "the median wall time of the repetitions and ideal the zero-overhead time the simulator "
      "gives for the same spec: 1.0 means no framework overhead. `bound` is the ideal with every "
      "knob at its best. `seed` is the time the source document published for tf.data, and "
      "`seed eff.` its efficiency against the ideal it documents.\n\n",
      experiments.size(), doc.value("repetitions", 0));
  if (doc.value("interrupted", false)) md += "**Interrupted**: the results are partial.\n\n";

  md += "## Summary\n\n";
  md +=
      "| experiment | step | measured ms | ideal ms | bound ms | efficiency | seed ms | seed eff. "
      "| repetitions |\n|---|---|--:|--:|--:|--:|--:|--:|--:|\n";
  std::vector<ChartRow> chart;
  for (size_t i = 0; i < experiments.size(); ++i) {
    const auto& x = experiments[i];
    const bool measured = !x["repetitions"].empty();
    const std::optional<double> wall =
        measured ? opt_number(x, "median_wall_ms") : std::optional<double>();
    const auto ideal = opt_number(x, "ideal_ms");
    const auto seed = opt_number(x, "seed_ms");
    const auto documented = opt_number(x, "documented_ideal_ms");
    std::optional<double> seed_eff;
    if (seed && documented && *seed > 0 && *documented > 0) seed_eff = *documented / *seed;
    md += fmt::format("| [{}](#{}) | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                      cell(entries[i].name), anchor(entries[i].name), cell(str(x, "step")),
                      num(wall, 2), num(ideal, 1), num(opt_number(x, "bound_ms"), 1),
                      num(opt_number(x, "efficiency"), 3), num(seed, 2), num(seed_eff, 3),
                      x["repetitions"].size());
    // Part B is compared on its own metric (the wait per batch), in its own chart below.
    if (measured && !is_part_b(entries[i])) chart.push_back({entries[i].name, wall, ideal, seed});
  }
  md += "\n";
  if (!chart.empty()) {
    report.files.push_back({"summary.svg", summary_chart_svg(chart)});
    md += "![Measured, ideal and seed times per experiment](summary.svg)\n\n";
  }
  std::set<std::string> used_names{"summary.svg", "report.md"};
  for (const ReportSection& section : report_sections()) {
    md += section.render(experiments, entries, report);
    used_names.insert(section.files.begin(), section.files.end());
  }

  md += "## Experiments\n\n";
  for (size_t i = 0; i < experiments.size(); ++i) {
    const auto& x = experiments[i];
    const Entry& e = entries[i];
    md += fmt::format("### {}\n\n", e.name);
    if (std::string d = str(x, "description"); !d.empty()) md += d + "\n\n";
    md += fmt::format("Step `{}`, {} epoch(s).", str(x, "step"), x.value("epochs", 0));
    if (!e.time_ns.empty()) {
      std::string walls;
      for (double ns : e.time_ns)
        walls += (walls.empty() ? "" : ", ") + fmt::format("{:.2f}", ns / 1e6);
      md += fmt::format(" Wall time per repetition (ms): {}.", walls);
    }
    if (!e.efficiency.empty()) {
      const auto [lo, hi] = std::minmax_element(e.efficiency.begin(), e.efficiency.end());
      md += fmt::format(" Efficiency per repetition {:.3f} to {:.3f} (median {:.3f}).", *lo, *hi,
                        median(e.efficiency));
    }
    if (auto w = x.find("median_wait"); w != x.end() && w->is_object() && !e.time_ns.empty()) {
      md += fmt::format(" Wait for input per step: p50 {} ms, p99 {} ms",
                        num(opt_number(*w, "p50_ms"), 3), num(opt_number(*w, "p99_ms"), 3));
      if (auto steady = opt_number(x, "median_steady_wait_ms")) {
        md += fmt::format(", steady-state mean {:.3f} ms", *steady);
      }
      md += ".";
    }
    md += "\n\n";
    md += tuning_line(x);
    md += transport_line(x);
    for (const char* key : {"simulation_note", "notice", "ideal_basis"}) {
      if (std::string note = str(x, key); !note.empty()) md += fmt::format("- {}\n", note);
    }
    if (x.contains("simulation_note") || x.contains("notice") || x.contains("ideal_basis")) {
      md += "\n";
    }
    const std::string trace_rel = str(x, "trace");
    if (trace_rel.empty()) {
      md += "_No trace recorded._\n\n";
      continue;
    }
    try {
      const trace::Trace t = trace::load_chrome_json(base_dir / trace_rel);
      std::string name = "gantt-" + file_safe(e.name) + ".svg";
      for (int n = 2; !used_names.insert(name).second; ++n)
        name = fmt::format("gantt-{}-{}.svg", file_safe(e.name), n);
      report.files.push_back({name, gantt_svg(t, e.name + " (" + trace_rel + ")")});
      md += fmt::format("![Gantt chart of {}]({})\n\nTrace: `{}`\n\n", e.name, name, trace_rel);
    } catch (const std::exception& err) {
      md += fmt::format("_The trace `{}` could not be read: {}_\n\n", trace_rel, err.what());
    }
  }
  md += environment_section(doc);
  return report;
}

}  // namespace

Report render_report(const nlohmann::json& doc, const std::filesystem::path& base_dir,
                     const std::string& source) {
  try {
    return render(doc, base_dir, source);
  } catch (const nlohmann::json::exception& e) {  // a value of an unexpected type
    throw ResultsError(fmt::format("{}: {}", source, e.what()));
  }
}

void write_text_file(const std::filesystem::path& path, const std::string& text) {
  // A file is replaced whole: written beside it under a name of this process's own, then renamed
  // over it, so that a reader never sees half of it (a link is followed: its target is replaced).
  // A device or a pipe (/dev/stdout) is written in place.
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  const bool in_place = !ec && std::filesystem::exists(status) &&
                        !std::filesystem::is_regular_file(status);
  const std::filesystem::path final_path =
      !in_place && std::filesystem::is_symlink(path, ec) ? std::filesystem::canonical(path, ec) : path;
  static std::atomic<uint64_t> serial{0};
  const std::filesystem::path target =
      in_place ? path
               : std::filesystem::path(fmt::format("{}.partial-{}-{}", final_path.string(),
                                                   ::getpid(), serial.fetch_add(1)));
  const auto fail = [&](const std::string& why) {
    std::error_code ignored;
    if (!in_place) std::filesystem::remove(target, ignored);
    throw std::runtime_error(path.string() + ": cannot be written" + (why.empty() ? "" : ": " + why));
  };
  {
    std::ofstream out(target, std::ios::binary | std::ios::trunc);
    if (!out) fail(std::strerror(errno));
    out << text;
    out.close();
    if (!out) fail(std::strerror(errno));
  }
  if (in_place) return;
  std::filesystem::rename(target, final_path, ec);
  if (ec) fail(ec.message());
}

void write_report(const Report& report, const std::filesystem::path& out_dir) {
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  for (const auto& f : report.files)
    write_text_file(out_dir / f.name, f.content);
  write_text_file(out_dir / "report.md", report.markdown);
}

}  // namespace pipeprof::results
