// Analysis as JSON and as a readable report.
#include <fmt/format.h>

#include <functional>

#include "pipeprof/trace/analysis.h"
#include "pipeprof/trace/clock.h"

namespace pipeprof::trace {
namespace {

// Keeps long kernel names readable in the text report.
std::string shorten(const std::string& s, size_t max) {
  return s.size() <= max ? s : s.substr(0, max - 3) + "...";
}

nlohmann::json breakdown_json(const std::array<int64_t, kStepCategories>& b) {
  nlohmann::json j = nlohmann::json::object();
  for (size_t c = 0; c < kStepCategories; ++c)
    j[std::string(step_category_name(static_cast<StepCategory>(c)))] = ns_to_ms(b[c]);
  return j;
}

nlohmann::json torch_json(const TorchAnalysis& t) {
  nlohmann::json j;
  j["iterator"] = t.iterator.empty() ? nlohmann::json(nullptr) : nlohmann::json(t.iterator);
  j["steps"] = static_cast<int64_t>(t.steps.size());
  j["step_ms"] = ns_to_ms(t.step_ns);
  j["mean_step_ms"] = t.mean_step_ms;
  j["dataloader_ms"] = ns_to_ms(t.dataloader_ns);
  j["mean_dataloader_ms"] = t.mean_dataloader_ms;
  j["optimizer_ms"] = ns_to_ms(t.optimizer_ns);
  j["input_bound_pct"] = t.input_bound_pct;
  j["verdict"] = t.verdict;
  j["breakdown_ms"] = breakdown_json(t.breakdown_ns);
  if (t.has_gpu) {
    j["gpu_idle"] = {{"idle_ms", ns_to_ms(t.gpu_idle.idle_ns)},
                     {"host_wait_ms", ns_to_ms(t.gpu_idle.host_wait_ns)},
                     {"kernel_wait_ms", ns_to_ms(t.gpu_idle.kernel_wait_ns)},
                     {"other_ms", ns_to_ms(t.gpu_idle.other_ns)}};
    j["pageable_memcpy_ms"] = ns_to_ms(t.pageable_memcpy_ns);
  } else {
    j["gpu_idle"] = nullptr;
  }
  j["per_step"] = nlohmann::json::array();
  for (const StepTime& s : t.steps)
    j["per_step"].push_back({{"name", s.name},
                             {"start_ns", s.start_ns},
                             {"end_ns", s.end_ns},
                             {"duration_ms", ns_to_ms(s.duration_ns())},
                             {"dataloader_ms", ns_to_ms(s.dataloader_ns)},
                             {"optimizer_ms", ns_to_ms(s.optimizer_ns)},
                             {"breakdown_ms", breakdown_json(s.breakdown_ns)}});
  j["suggestions"] = nlohmann::json::array();
  for (const Suggestion& s : t.suggestions)
    j["suggestions"].push_back({{"knob", s.knob}, {"text", s.text}});
  return j;
}

nlohmann::json loader_json(const LoaderAnalysis& l) {
  nlohmann::json j;
  j["settings"] = {{"num_workers", l.num_workers},
                   {"prefetch_factor", l.prefetch_factor},
                   {"pin_memory", l.pin_memory},
                   {"persistent_workers", l.persistent_workers},
                   {"batch_size", l.batch_size},
                   {"cpus", l.cpus},
                   {"device", l.device}};
  j["batches"] = l.batches;
  j["wait_p50_ms"] = l.wait_p50_ms;
  j["wait_p99_ms"] = l.wait_p99_ms;
  j["ready_pct"] = l.ready_pct;
  j["epochs"] = l.epochs;
  j["first_wait_ms"] = l.first_wait_ms;
  j["steady_input_bound_pct"] = l.steady_input_bound_pct;
  j["workers_busy_pct"] = l.workers_busy_pct;
  j["pin_memory_busy_pct"] = l.pin_memory_busy_pct;
  j["worker_starts"] = l.worker_starts;
  j["restarts"] = l.restarts;
  j["mean_start_ms"] = l.mean_start_ms;
  j["getitem_share_pct"] = l.getitem_share_pct;
  j["collate_share_pct"] = l.collate_share_pct;
  j["mean_item_us"] = l.mean_item_us;
  j["workers"] = nlohmann::json::array();
  for (const LoaderWorker& w : l.workers) {
    nlohmann::json wj = {{"worker", w.worker},     {"pids", w.pids},
                         {"fetches", w.fetches},   {"items", w.items},
                         {"busy_ms", ns_to_ms(w.busy_ns)}, {"running_ms", ns_to_ms(w.running_ns)},
                         {"busy_pct", w.busy_pct},
                         {"getitem_ms", ns_to_ms(w.getitem_ns)},
                         {"collate_ms", ns_to_ms(w.collate_ns)}, {"died", w.died}};
    if (w.died) wj["exitcode"] = w.exitcode;
    j["workers"].push_back(std::move(wj));
  }
  j["suggestions"] = nlohmann::json::array();
  for (const Suggestion& s : l.suggestions)
    j["suggestions"].push_back({{"knob", s.knob}, {"text", s.text}});
  j["notes"] = l.notes;
  return j;
}

void loader_text(const LoaderAnalysis& l, const std::function<void(const std::string&)>& line) {
  line("");
  line(fmt::format("DataLoader: num_workers {}, prefetch_factor {}, pin_memory {}, "
                   "persistent_workers {}, batch_size {}",
                   l.num_workers, l.prefetch_factor, l.pin_memory, l.persistent_workers,
                   l.batch_size));
  line(fmt::format("  {} batches in {} epochs: each epoch's first wait {:.3f} ms in all; then wait "
                   "p50 {:.3f} ms, p99 {:.3f} ms, ready when asked {:.0f}%, input-bound {:.1f}%",
                   l.batches, l.epochs, l.first_wait_ms, l.wait_p50_ms, l.wait_p99_ms, l.ready_pct,
                   l.steady_input_bound_pct));
  line(fmt::format("  workers busy {:.1f}% (__getitem__ {:.0f}%, collate_fn {:.0f}% of it); "
                   "pin-memory thread busy {:.1f}%; {} worker starts",
                   l.workers_busy_pct, l.getitem_share_pct, l.collate_share_pct,
                   l.pin_memory_busy_pct, l.worker_starts));
  for (const LoaderWorker& w : l.workers)
    line(fmt::format("    worker {:>2}: busy {:5.1f}%, {} fetches, {} items{}", w.worker, w.busy_pct,
                     w.fetches, w.items, w.died ? " (died)" : ""));
  for (const Suggestion& s : l.suggestions)
    line(fmt::format("  suggestion ({}): {}", s.knob, s.text));
  for (const std::string& n : l.notes)
    line("  note: " + n);
}

double pct_of(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

void torch_text(const TorchAnalysis& t, const std::function<void(const std::string&)>& line) {
  const double n = static_cast<double>(t.steps.size());
  line("");
  line(fmt::format("PyTorch steps: {} ProfilerStep spans, mean {:.3f} ms, DataLoader {}", t.steps.size(),
                   t.mean_step_ms, t.iterator.empty() ? "not seen" : t.iterator));
  line(fmt::format("  DataLoader wait {:.3f} ms per step (raw), optimizer step {:.3f} ms per step",
                   t.mean_dataloader_ms, ns_to_ms(t.optimizer_ns) / n));
  line(fmt::format("  input-bound {:.1f}%: {} (DataLoader wait / step time; < 5% not, 5-20% "
                   "moderately, >= 20% highly: TensorBoard's input-pipeline thresholds)",
                   t.input_bound_pct, t.verdict));
  line("  step-time breakdown (TensorBoard priority: Kernel > Memcpy > Memset > Communication > "
       "Runtime > DataLoader > CPU Exec > Other)");
  for (size_t c = 0; c < kStepCategories; ++c)
    line(fmt::format("    {:<14} {:>10.3f} ms per step  {:>5.1f}%",
                     step_category_name(static_cast<StepCategory>(c)), ns_to_ms(t.breakdown_ns[c]) / n,
                     pct_of(t.breakdown_ns[c], t.step_ns)));
  if (t.has_gpu) {
    const GpuIdle& g = t.gpu_idle;
    line(fmt::format("  GPU idle in the steps {:.3f} ms (summed over streams): host wait {:.1f}%, "
                     "kernel wait {:.1f}%, other {:.1f}%",
                     ns_to_ms(g.idle_ns), pct_of(g.host_wait_ns, g.idle_ns),
                     pct_of(g.kernel_wait_ns, g.idle_ns), pct_of(g.other_ns, g.idle_ns)));
  }
  line("  per step (ms)");
  std::string head = fmt::format("    {:<18} {:>9} {:>10}", "step", "total", "raw wait");
  for (size_t c = 0; c < kStepCategories; ++c)
    head += fmt::format(" {:>9}", step_category_name(static_cast<StepCategory>(c)).substr(0, 9));
  line(head);
  constexpr size_t kRows = 20;
  for (size_t i = 0; i < t.steps.size(); ++i) {
    if (i == kRows) {
      line(fmt::format("    ... {} more (--json lists every step)", t.steps.size() - kRows));
      break;
    }
    const StepTime& s = t.steps[i];
    std::string row = fmt::format("    {:<18} {:>9.3f} {:>10.3f}", s.name, ns_to_ms(s.duration_ns()),
                                  ns_to_ms(s.dataloader_ns));
    for (size_t c = 0; c < kStepCategories; ++c)
      row += fmt::format(" {:>9.3f}", ns_to_ms(s.breakdown_ns[c]));
    line(row);
  }
  for (const Suggestion& s : t.suggestions)
    line(fmt::format("suggestion ({}): {}", s.knob, s.text));
}

}  // namespace

nlohmann::json to_json(const Analysis& a) {
  nlohmann::json j;
  j["format"] = a.format;
  if (!a.experiment.empty()) j["experiment"] = a.experiment;
  j["window"] = {{"start_ns", a.window_start_ns},
                 {"end_ns", a.window_end_ns},
                 {"duration_ms", ns_to_ms(a.window_end_ns - a.window_start_ns)}};
  j["spans"] = a.spans;
  if (a.steps.present) {
    j["steps"] = {{"steps", a.steps.steps},
                  {"waits", a.steps.waits},
                  {"step_ms", ns_to_ms(a.steps.step_ns)},
                  {"wait_ms", ns_to_ms(a.steps.wait_ns)},
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
                           {"busy_ms", ns_to_ms(s.busy_ns)},
                           {"lanes", s.lanes},
                           {"peak_concurrency", s.peak_concurrency},
                           {"workers", s.workers},
                           {"busy_pct", s.busy_pct}});
  j["bottleneck"] = a.bottleneck.empty() ? nlohmann::json(nullptr) : nlohmann::json(a.bottleneck);
  j["suggestion"] = a.suggestion;
  if (a.gpu.present) {
    nlohmann::json g;
    g["window_ms"] = ns_to_ms(a.gpu.window_ns);
    g["devices"] = nlohmann::json::array();
    for (const DeviceUsage& d : a.gpu.devices)
      g["devices"].push_back({{"device", d.device},
                              {"streams", d.streams},
                              {"busy_ms", ns_to_ms(d.busy_ns)},
                              {"busy_pct", d.busy_pct},
                              {"idle_pct", d.idle_pct},
                              {"kernel_ms", ns_to_ms(d.kernel_ns)},
                              {"memcpy_ms", ns_to_ms(d.memcpy_ns)},
                              {"memset_ms", ns_to_ms(d.memset_ns)}});
    g["streams"] = nlohmann::json::array();
    for (const StreamUsage& s : a.gpu.streams)
      g["streams"].push_back({{"pid", s.pid},
                              {"device", s.device},
                              {"stream", s.stream},
                              {"lane", s.lane},
                              {"spans", s.spans},
                              {"busy_ms", ns_to_ms(s.busy_ns)},
                              {"busy_pct", s.busy_pct},
                              {"idle_pct", s.idle_pct}});
    g["top_kernels"] = nlohmann::json::array();
    for (const KernelStat& k : a.gpu.top_kernels)
      g["top_kernels"].push_back({{"name", k.name},
                                  {"count", k.count},
                                  {"total_ms", ns_to_ms(k.total_ns)},
                                  {"mean_us", k.mean_ns / 1e3},
                                  {"share_pct", k.share_pct}});
    j["gpu"] = std::move(g);
  } else {
    j["gpu"] = nullptr;
  }
  j["torch"] = a.torch.present ? torch_json(a.torch) : nlohmann::json(nullptr);
  j["loader"] = a.loader.present ? loader_json(a.loader) : nlohmann::json(nullptr);
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
                   ns_to_ms(a.window_end_ns - a.window_start_ns)));
  if (a.steps.present) {
    const StepBreakdown& b = a.steps;
    line("");
    line("step breakdown");
    line(fmt::format("  steps      {:>8}  total {:>10.3f} ms  mean {:>8.3f} ms", b.steps,
                     ns_to_ms(b.step_ns), b.mean_step_ms));
    line(fmt::format("  get_next   {:>8}  total {:>10.3f} ms  mean {:>8.3f} ms", b.waits,
                     ns_to_ms(b.wait_ns), b.mean_wait_ms));
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
                       s.busy_pct, s.spans, ns_to_ms(s.busy_ns)));
  }
  if (!a.bottleneck.empty()) line(fmt::format("\nbottleneck: {}", a.bottleneck));
  if (!a.suggestion.empty())
    line(fmt::format("{}suggestion: {}", a.bottleneck.empty() ? "\n" : "", a.suggestion));
  if (a.torch.present) torch_text(a.torch, line);
  if (a.loader.present) loader_text(a.loader, line);
  if (a.gpu.present) {
    line("");
    line(fmt::format("GPU (over the trace's {:.3f} ms)", ns_to_ms(a.gpu.window_ns)));
    for (const DeviceUsage& d : a.gpu.devices)
      line(
          fmt::format("  device {}: busy {:.1f}%, idle {:.1f}% ({} streams; kernels {:.3f} ms, "
                      "memcpy {:.3f} ms, memset {:.3f} ms)",
                      d.device, d.busy_pct, d.idle_pct, d.streams, ns_to_ms(d.kernel_ns), ns_to_ms(d.memcpy_ns),
                      ns_to_ms(d.memset_ns)));
    for (const StreamUsage& s : a.gpu.streams)
      line(fmt::format("    stream {:>4} (device {}): busy {:5.1f}%, idle {:5.1f}%, {} spans",
                       s.stream, s.device, s.busy_pct, s.idle_pct, s.spans));
    if (!a.gpu.top_kernels.empty()) {
      line("  top kernels by total time");
      line(fmt::format("    {:>10}  {:>6}  {:>10}  {:>6}  {}", "total ms", "count", "mean us",
                       "share", "name"));
      for (const KernelStat& k : a.gpu.top_kernels)
        line(fmt::format("    {:>10.3f}  {:>6}  {:>10.3f}  {:>5.1f}%  {}", ns_to_ms(k.total_ns), k.count,
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
