// Analysis as JSON and as a readable report.
#include <fmt/format.h>

#include "pipeprof/trace/analysis.h"

namespace pipeprof::trace {
namespace {

double ms(int64_t ns) {
  return static_cast<double>(ns) / 1e6;
}

// Keeps long kernel names readable in the text report.
std::string shorten(const std::string& s, size_t max) {
  return s.size() <= max ? s : s.substr(0, max - 3) + "...";
}

}  // namespace

nlohmann::json to_json(const Analysis& a) {
  nlohmann::json j;
  j["format"] = a.format;
  if (!a.experiment.empty()) j["experiment"] = a.experiment;
  j["window"] = {{"start_ns", a.window_start_ns},
                 {"end_ns", a.window_end_ns},
                 {"duration_ms", ms(a.window_end_ns - a.window_start_ns)}};
  j["spans"] = a.spans;
  if (a.steps.present) {
    j["steps"] = {{"steps", a.steps.steps},
                  {"waits", a.steps.waits},
                  {"step_ms", ms(a.steps.step_ns)},
                  {"wait_ms", ms(a.steps.wait_ns)},
                  {"mean_step_ms", a.steps.mean_step_ms},
                  {"mean_wait_ms", a.steps.mean_wait_ms},
                  {"input_bound_pct", a.steps.input_bound_pct},
                  {"verdict", a.steps.verdict}};
  } else {
    j["steps"] = nullptr;
  }
  j["stages"] = nlohmann::json::array();
  for (const StageUsage& s : a.stages)
    j["stages"].push_back({{"stage", s.stage},
                           {"spans", s.spans},
                           {"busy_ms", ms(s.busy_ns)},
                           {"lanes", s.lanes},
                           {"peak_concurrency", s.peak_concurrency},
                           {"workers", s.workers},
                           {"busy_pct", s.busy_pct}});
  j["bottleneck"] = a.bottleneck.empty() ? nlohmann::json(nullptr) : nlohmann::json(a.bottleneck);
  j["suggestion"] = a.suggestion;
  if (a.gpu.present) {
    nlohmann::json g;
    g["window_ms"] = ms(a.gpu.window_ns);
    g["devices"] = nlohmann::json::array();
    for (const DeviceUsage& d : a.gpu.devices)
      g["devices"].push_back({{"device", d.device},
                              {"streams", d.streams},
                              {"busy_ms", ms(d.busy_ns)},
                              {"busy_pct", d.busy_pct},
                              {"idle_pct", d.idle_pct},
                              {"kernel_ms", ms(d.kernel_ns)},
                              {"memcpy_ms", ms(d.memcpy_ns)},
                              {"memset_ms", ms(d.memset_ns)}});
    g["streams"] = nlohmann::json::array();
    for (const StreamUsage& s : a.gpu.streams)
      g["streams"].push_back({{"pid", s.pid},
                              {"device", s.device},
                              {"stream", s.stream},
                              {"lane", s.lane},
                              {"spans", s.spans},
                              {"busy_ms", ms(s.busy_ns)},
                              {"busy_pct", s.busy_pct},
                              {"idle_pct", s.idle_pct}});
    g["top_kernels"] = nlohmann::json::array();
    for (const KernelStat& k : a.gpu.top_kernels)
      g["top_kernels"].push_back({{"name", k.name},
                                  {"count", k.count},
                                  {"total_ms", ms(k.total_ns)},
                                  {"mean_us", k.mean_ns / 1e3},
                                  {"share_pct", k.share_pct}});
    j["gpu"] = std::move(g);
  } else {
    j["gpu"] = nullptr;
  }
  j["notes"] = a.notes;
  return j;
}

std::string format_text(const Analysis& a) {
  std::string out;
  auto line = [&out](const std::string& s) {
    out += s;
    out += '\n';
  };
  line(fmt::format("trace: {}{}, {} spans, analysed window {:.3f} ms",
                   a.format.empty() ? "unknown format" : a.format,
                   a.experiment.empty() ? "" : " (" + a.experiment + ")", a.spans,
                   ms(a.window_end_ns - a.window_start_ns)));
  if (a.steps.present) {
    const StepBreakdown& b = a.steps;
    line("");
    line("step breakdown");
    line(fmt::format("  steps      {:>8}  total {:>10.3f} ms  mean {:>8.3f} ms", b.steps,
                     ms(b.step_ns), b.mean_step_ms));
    line(fmt::format("  get_next   {:>8}  total {:>10.3f} ms  mean {:>8.3f} ms", b.waits,
                     ms(b.wait_ns), b.mean_wait_ms));
    line(fmt::format("  input-bound {:.1f}%: {}", b.input_bound_pct, b.verdict));
  }
  if (!a.stages.empty()) {
    line("");
    line("pipeline stages (busy % = busy time / (workers x window))");
    size_t width = 5;
    for (const StageUsage& s : a.stages)
      width = std::max(width, s.stage.size());
    line(fmt::format("  {:<{}}  {:>7}  {:>7}  {:>8}  {:>12}", "stage", width, "workers", "busy %",
                     "spans", "busy ms"));
    for (const StageUsage& s : a.stages)
      line(fmt::format("  {:<{}}  {:>7}  {:>6.1f}%  {:>8}  {:>12.3f}", s.stage, width, s.workers,
                       s.busy_pct, s.spans, ms(s.busy_ns)));
  }
  if (!a.bottleneck.empty()) line(fmt::format("\nbottleneck: {}", a.bottleneck));
  if (!a.suggestion.empty())
    line(fmt::format("{}suggestion: {}", a.bottleneck.empty() ? "\n" : "", a.suggestion));
  if (a.gpu.present) {
    line("");
    line(fmt::format("GPU (over the trace's {:.3f} ms)", ms(a.gpu.window_ns)));
    for (const DeviceUsage& d : a.gpu.devices)
      line(
          fmt::format("  device {}: busy {:.1f}%, idle {:.1f}% ({} streams; kernels {:.3f} ms, "
                      "memcpy {:.3f} ms, memset {:.3f} ms)",
                      d.device, d.busy_pct, d.idle_pct, d.streams, ms(d.kernel_ns), ms(d.memcpy_ns),
                      ms(d.memset_ns)));
    for (const StreamUsage& s : a.gpu.streams)
      line(fmt::format("    stream {:>4} (device {}): busy {:5.1f}%, idle {:5.1f}%, {} spans",
                       s.stream, s.device, s.busy_pct, s.idle_pct, s.spans));
    if (!a.gpu.top_kernels.empty()) {
      line("  top kernels by total time");
      line(fmt::format("    {:>10}  {:>6}  {:>10}  {:>6}  {}", "total ms", "count", "mean us",
                       "share", "name"));
      for (const KernelStat& k : a.gpu.top_kernels)
        line(fmt::format("    {:>10.3f}  {:>6}  {:>10.3f}  {:>5.1f}%  {}", ms(k.total_ns), k.count,
                         k.mean_ns / 1e3, k.share_pct, shorten(k.name, 100)));
    }
  }
  if (!a.notes.empty()) {
    line("");
    for (const std::string& n : a.notes)
      line("note: " + n);
  }
  return out;
}

}  // namespace pipeprof::trace
