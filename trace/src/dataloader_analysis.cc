#include "dataloader_analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstring>
#include <map>

#include "pipeprof/trace/clock.h"

namespace pipeprof::trace {
namespace {

constexpr std::string_view kWorkerProcess = "DataLoader worker ";
constexpr int64_t kReadyNs = 1'000'000;     // a get_next wait under this: the batch was there
constexpr double kInputBoundPct = 5.0;      // TensorBoard's threshold, as the step breakdown's
constexpr double kWorkersSaturated = 70.0;  // workers this busy cannot keep up more
constexpr double kWorkersIdle = 50.0;
constexpr double kCollateShare = 30.0;
constexpr double kCheapItemUs = 50.0;

std::string meta(const Trace& t, const std::string& key) {
  const auto it = t.metadata.find(key);
  return it == t.metadata.end() ? std::string() : it->second;
}

int meta_int(const Trace& t, const std::string& key) {
  const std::string v = meta(t, key);
  int out = 0;
  const auto r = std::from_chars(v.data(), v.data() + v.size(), out);
  return r.ec == std::errc() ? out : 0;
}

bool meta_bool(const Trace& t, const std::string& key) {
  const std::string v = meta(t, key);
  return v == "true" || v == "True" || v == "1";
}

double percentile_ms(std::vector<int64_t> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return ns_to_ms(v[lo]) * (1 - frac) + ns_to_ms(v[hi]) * frac;
}

std::string exit_text(int exitcode) {
  if (exitcode < 0) {
    const char* abbrev = sigabbrev_np(-exitcode);
    return fmt::format("killed by signal {}{}", -exitcode,
                       abbrev != nullptr ? fmt::format(" (SIG{})", abbrev) : std::string());
  }
  return fmt::format("exited with status {}", exitcode);
}

void read_dead_workers(const Trace& t, LoaderAnalysis& a) {
  const std::string text = meta(t, "dead_workers");
  if (text.empty()) return;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_array()) {
    a.notes.emplace_back("the metadata \"dead_workers\" is not a JSON array: ignored");
    return;
  }
  for (const nlohmann::json& d : j) {
    if (!d.is_object() || !d.contains("worker") || !d["worker"].is_number_integer()) continue;
    const int id = d["worker"].get<int>();
    const int64_t pid = d.value("pid", int64_t{0});
    const int code = d.value("exitcode", 0);
    auto it = std::find_if(a.workers.begin(), a.workers.end(),
                           [&](const LoaderWorker& w) { return w.worker == id; });
    if (it == a.workers.end()) {
      a.workers.push_back({.worker = id});
      it = a.workers.end() - 1;
      if (pid != 0) it->pids.push_back(pid);
    }
    it->died = true;
    it->exitcode = code;
  }
}

void suggest(LoaderAnalysis& a, const StepBreakdown& s) {
  const auto add = [&](std::string knob, std::string text) {
    a.suggestions.push_back({std::move(knob), std::move(text)});
  };
  for (const LoaderWorker& w : a.workers)
    if (w.died)
      add("worker", fmt::format("DataLoader worker {}{} {}: the loop's error came from that", w.worker,
                                w.pids.empty() ? std::string() : fmt::format(" (pid {})", w.pids.back()),
                                exit_text(w.exitcode)));
  if (!s.present) return;
  const int W = a.num_workers;
  const std::string cpus = a.cpus > 0 ? fmt::format(" (this machine has {} CPUs)", a.cpus) : "";
  const auto first_ns = static_cast<int64_t>(a.first_wait_ms * 1e6);
  const double first_share = percent_of(first_ns, s.wait_ns);
  if (s.input_bound_pct >= kInputBoundPct && a.epochs > 0 && first_share >= 50.0) {
    add(a.persistent_workers || W == 0 ? "start-up" : "persistent_workers",
        fmt::format("{:.0f}% of the loop's wait ({:.1f} ms) was each epoch's first batch: the "
                    "iterator and its workers starting{} and the first batches being made; the rest "
                    "of the run waited {:.1f}% of its time. {}",
                    first_share, a.first_wait_ms,
                    a.mean_start_ms > 0 ? fmt::format(" ({:.1f} ms from a worker's start to its "
                                                      "first batch)",
                                                      a.mean_start_ms)
                                        : std::string(),
                    a.steady_input_bound_pct,
                    a.persistent_workers || W == 0
                        ? "It is the cost of a short run: it shrinks as epochs grow"
                        : "persistent_workers=True starts the workers once"));
    return;
  }
  // The rest judges the steady state: each epoch's first wait left out.
  const double ib = a.epochs > 0 ? a.steady_input_bound_pct : s.input_bound_pct;
  const bool input_bound = ib >= kInputBoundPct;
  const int64_t steady_waits = std::max<int64_t>(1, s.waits - a.epochs);
  const double wait = a.epochs > 0 ? ns_to_ms(s.wait_ns - first_ns) / static_cast<double>(steady_waits)
                                   : s.mean_wait_ms;
  const double step = s.mean_step_ms;
  if (input_bound && W == 0) {
    const int need = step > 0 ? static_cast<int>(std::ceil(wait / step)) + 1 : 2;
    add("num_workers",
        fmt::format("num_workers=0 loads every batch on the training loop's thread: the loop waited "
                    "{:.0f}% of its time ({:.2f} ms a batch against a {:.2f} ms step); about {} "
                    "workers{} would load while the step runs",
                    ib, wait, step, need, cpus));
  } else if (input_bound && a.workers_busy_pct >= kWorkersSaturated) {
    const double scale = step > 0 ? (wait + step) / step : 2.0;
    const int need = std::max(
        W + 1, static_cast<int>(std::ceil(W * a.workers_busy_pct / 100.0 * scale)));
    std::string text = fmt::format(
        "the loop waited {:.0f}% of its time and the {} workers were busy {:.0f}%: raise "
        "num_workers to about {}",
        ib, W, a.workers_busy_pct, need);
    if (a.cpus > 0 && need >= a.cpus)
      text += fmt::format(", more than this machine's {} CPUs leave for the loop: make the work "
                          "per sample cheaper too",
                          a.cpus);
    add("num_workers", std::move(text));
  } else if (input_bound && W > 0 && a.workers_busy_pct < kWorkersIdle) {
    if (a.pin_memory && a.pin_memory_busy_pct >= kWorkersIdle) {
      add("pin_memory",
          fmt::format("the loop waited {:.0f}% of its time while the workers were busy only {:.0f}% "
                      "and the pin-memory thread {:.0f}%: pinning is the bottleneck; return fewer, "
                      "larger tensors per batch, or pin in the workers' shared memory",
                      ib, a.workers_busy_pct, a.pin_memory_busy_pct));
    } else if (a.wait_p99_ms > 4 * std::max(a.wait_p50_ms, 0.01)) {
      add("prefetch_factor",
          fmt::format("the loop waited {:.0f}% of its time in bursts (wait p50 {:.2f} ms, p99 {:.2f} "
                      "ms) while the workers were busy only {:.0f}%: raise prefetch_factor (now {}) so "
                      "more batches are asked for ahead",
                      ib, a.wait_p50_ms, a.wait_p99_ms, a.workers_busy_pct,
                      a.prefetch_factor));
    } else {
      add("batch transfer",
          fmt::format("the loop waited {:.0f}% of its time while the workers were busy only {:.0f}%: "
                      "the time goes between the workers and the loop (batches sent through the "
                      "result queue and rebuilt in the loop's process); return fewer, larger tensors "
                      "(one array per batch rather than many objects)",
                      ib, a.workers_busy_pct));
    }
  }
  if (input_bound && a.collate_share_pct >= kCollateShare)
    add("collate_fn",
        fmt::format("collate_fn took {:.0f}% of the workers' busy time: a cheaper collate (stacking "
                    "one array per batch), or the batch assembled on the GPU",
                    a.collate_share_pct));
  if (input_bound && a.mean_item_us > 0 && a.mean_item_us < kCheapItemUs && a.batch_size > 1)
    add("__getitems__",
        fmt::format("each sample took {:.1f} us in __getitem__, so the per-sample calls and the "
                    "collate of {} objects dominate: fetch a whole batch at once (__getitems__, or "
                    "a batched transform with batch_size=None and a batch_sampler)",
                    a.mean_item_us, a.batch_size));
  if (a.restarts > 0 && !a.persistent_workers)
    add("persistent_workers",
        fmt::format("the workers were started {} times ({} restarts: a new set every epoch), each "
                    "{:.1f} ms to its first batch: persistent_workers=True keeps them",
                    a.worker_starts, a.restarts, a.mean_start_ms));
  if (a.device == "cuda" && !a.pin_memory && W > 0)
    add("pin_memory",
        "the step runs on the GPU and batches come from pageable memory: pin_memory=True lets "
        "their copy to the GPU run asynchronously (a non_blocking=True copy)");
  if (!input_bound && W > 1 && a.workers_busy_pct < 40.0) {
    const int fewer =
        std::max(1, static_cast<int>(std::ceil(W * a.workers_busy_pct / 100.0 / 0.8)));
    if (fewer < W)
      add("num_workers",
          fmt::format("not input-bound ({:.1f}% waiting) and the {} workers were busy only {:.0f}%: "
                      "{} would keep up and leave CPU to the step",
                      ib, W, a.workers_busy_pct, fewer));
  }
}

}  // namespace

LoaderAnalysis analyze_dataloader(const Trace& t, const StepBreakdown& steps, int64_t lo,
                                  int64_t hi) {
  LoaderAnalysis a;
  if (meta(t, "loader").empty()) return a;
  a.present = true;
  a.num_workers = meta_int(t, "num_workers");
  a.prefetch_factor = meta_int(t, "prefetch_factor");
  a.pin_memory = meta_bool(t, "pin_memory");
  a.persistent_workers = meta_bool(t, "persistent_workers");
  a.batch_size = meta_int(t, "batch_size");
  a.cpus = meta_int(t, "cpus");
  a.device = meta(t, "device");
  const int64_t window = hi - lo;

  std::vector<int64_t> waits;  // but each epoch's first
  int64_t first_waits_ns = 0;
  int64_t pin_ns = 0;
  std::map<int, LoaderWorker> workers;
  std::map<int, std::vector<int64_t>> worker_starts;  // each worker's "worker started" instants
  std::vector<std::pair<int64_t, int64_t>> epoch_spans;  // the loop's epochs, [start, end)
  int64_t start_ns_total = 0, starts_timed = 0, getitem_calls = 0, getitem_ns = 0;
  int64_t getitems_calls = 0;
  for (const Lane& lane : t.lanes) {
    if (lane.kind != LaneKind::kThread) continue;
    const Process& p = t.processes[lane.process];
    if (lane.name == "train loop") {
      // Spans are sorted by start (longer first), so an epoch comes before its first wait.
      bool first = true;
      for (const Span& s : lane.spans) {
        const std::string_view name = t.name(s);
        if (name == "epoch") {
          ++a.epochs;
          epoch_spans.emplace_back(s.start_ns, s.end_ns());
          first = true;
        } else if (name == "get_next") {
          if (first && a.epochs > 0)
            first_waits_ns += s.dur_ns;
          else
            waits.push_back(s.dur_ns);
          first = false;
        }
      }
      continue;
    }
    if (lane.name == "pin_memory") {
      for (const Span& s : lane.spans)
        if (t.name(s) == "pin_memory")
          pin_ns += std::max<int64_t>(0, std::min(s.end_ns(), hi) - std::max(s.start_ns, lo));
      continue;
    }
    if (!p.name.starts_with(kWorkerProcess)) continue;
    int id = 0;
    const std::string_view digits = std::string_view(p.name).substr(kWorkerProcess.size());
    if (std::from_chars(digits.data(), digits.data() + digits.size(), id).ec != std::errc()) continue;
    LoaderWorker& w = workers[id];
    w.worker = id;
    if (std::find(w.pids.begin(), w.pids.end(), p.pid) == w.pids.end()) w.pids.push_back(p.pid);
    int64_t started = -1;
    for (const Instant& i : lane.instants)
      if (t.strings.str(i.name) == "worker started") {
        ++a.worker_starts;
        started = i.ts_ns;
        worker_starts[id].push_back(i.ts_ns);
      }
    bool first_fetch = true;
    for (const Span& s : lane.spans) {
      const std::string_view name = t.name(s);
      if (name == "fetch") {
        ++w.fetches;
        w.busy_ns += std::max<int64_t>(0, std::min(s.end_ns(), hi) - std::max(s.start_ns, lo));
        if (first_fetch && started >= 0 && s.end_ns() >= started) {
          start_ns_total += s.end_ns() - started;
          ++starts_timed;
        }
        first_fetch = false;
      } else if (name == "__getitem__" || name == "next(dataset)") {
        ++w.items;
        w.getitem_ns += s.dur_ns;
        ++getitem_calls;
        getitem_ns += s.dur_ns;
      } else if (name == "__getitems__") {
        w.items += std::max(1, a.batch_size);
        w.getitem_ns += s.dur_ns;
        ++getitems_calls;
        getitem_ns += s.dur_ns;
      } else if (name == "collate_fn") {
        w.collate_ns += s.dur_ns;
      }
    }
  }
  // A worker's busy % is of the time it ran inside the window: from each of its starts to its
  // next start or the window's end; without persistent_workers a process lasts one epoch, so no
  // further than the end of the epoch it started in. Its process starting is the first batch's
  // wait, which the steady judgement leaves out too.
  auto epoch_end = [&](int64_t at) {
    for (const auto& [start, end] : epoch_spans)
      if (start <= at && at < end) return end;
    return hi;
  };
  int64_t running_total = 0;
  for (auto& [id, w] : workers) {
    std::vector<int64_t>& starts = worker_starts[id];
    std::sort(starts.begin(), starts.end());
    int64_t running = starts.empty() ? window : 0;
    for (size_t k = 0; k < starts.size(); ++k) {
      const int64_t from = std::clamp(starts[k], lo, hi);
      int64_t to = k + 1 < starts.size() ? std::clamp(starts[k + 1], lo, hi) : hi;
      if (!a.persistent_workers) to = std::min(to, epoch_end(starts[k]));
      running += std::max<int64_t>(0, to - from);
    }
    w.running_ns = running;
    w.busy_pct = percent_of(w.busy_ns, running);
    running_total += running;
    a.workers.push_back(w);
  }
  read_dead_workers(t, a);
  std::sort(a.workers.begin(), a.workers.end(),
            [](const LoaderWorker& x, const LoaderWorker& y) { return x.worker < y.worker; });

  // A loop's last wait of an epoch ends without a batch: batches are its steps.
  a.batches = steps.steps;
  a.wait_p50_ms = percentile_ms(waits, 0.50);
  a.wait_p99_ms = percentile_ms(waits, 0.99);
  a.ready_pct = waits.empty() ? 0.0
                              : 100.0 * static_cast<double>(std::count_if(
                                            waits.begin(), waits.end(),
                                            [](int64_t w) { return w < kReadyNs; })) /
                                    static_cast<double>(waits.size());
  a.first_wait_ms = ns_to_ms(first_waits_ns);
  a.steady_input_bound_pct =
      percent_of(steps.wait_ns - first_waits_ns, steps.wait_ns - first_waits_ns + steps.step_ns);
  a.pin_memory_busy_pct = percent_of(pin_ns, window);
  int64_t busy = 0, collate = 0, in_getitem = 0;
  for (const LoaderWorker& w : a.workers) {
    busy += w.busy_ns;
    collate += w.collate_ns;
    in_getitem += w.getitem_ns;
  }
  // Workers of the settings that left no spans count as idle for the whole window.
  const int missing = std::max(0, a.num_workers - static_cast<int>(a.workers.size()));
  a.workers_busy_pct = percent_of(busy, running_total + missing * window);
  a.getitem_share_pct = percent_of(in_getitem, busy);
  a.collate_share_pct = percent_of(collate, busy);
  const int64_t items = getitem_calls + getitems_calls * std::max(1, a.batch_size);
  a.mean_item_us = items > 0 ? static_cast<double>(getitem_ns) / 1e3 / static_cast<double>(items) : 0;
  a.restarts = std::max<int64_t>(0, a.worker_starts - static_cast<int64_t>(a.workers.size()));
  a.mean_start_ms = starts_timed > 0 ? ns_to_ms(start_ns_total) / static_cast<double>(starts_timed) : 0;
  if (a.num_workers > 0 && a.workers.empty())
    a.notes.emplace_back(fmt::format(
        "num_workers is {} but no worker process left spans: the workers were not instrumented "
        "(a worker_init_fn replaced after watching began?)",
        a.num_workers));
  suggest(a, steps);
  return a;
}

}  // namespace pipeprof::trace
