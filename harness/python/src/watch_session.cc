#include "watch_session.h"

#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "pipeprof/harness/metrics.h"
#include "pipeprof/harness/runner.h"
#include "pipeprof/results/document.h"
#include "pipeprof/results/environment.h"
#include "pipeprof/results/records.h"
#include "pipeprof/results/report.h"
#include "pipeprof/results/results_file.h"
#include "pipeprof/trace/analysis.h"
#include "pipeprof/trace/chrome_json.h"
#include "pipeprof/trace/clock.h"

namespace pipeprof::python {

WatchSession::WatchSession(std::filesystem::path spool_dir, int64_t loop_tid)
    : spool_dir_(std::move(spool_dir)), pid_(::getpid()), loop_tid_(loop_tid) {
  trace_.metadata["format"] = "pipeprof";
  const uint32_t p = trace_.process(pid_);
  trace_.processes[p].name = "training loop";
  trace_.lanes[trace_.thread_lane(pid_, loop_tid_)].name = "train loop";
}

void WatchSession::loop_span(const std::string& name, int64_t start_ns, int64_t end_ns) {
  const std::string_view category = name == "get_next" ? "wait" : "step";
  std::lock_guard lock(mu_);
  trace::Span s;
  s.start_ns = start_ns;
  s.dur_ns = std::max<int64_t>(0, end_ns - start_ns);
  s.name = trace_.strings.intern(name);
  s.category = trace_.strings.intern(category);
  trace_.lanes[trace_.thread_lane(pid_, loop_tid_)].spans.push_back(s);
}

void WatchSession::thread_span(int64_t tid, const std::string& lane, const std::string& name,
                               const std::string& category, int64_t start_ns, int64_t end_ns) {
  std::lock_guard lock(mu_);
  trace::Lane& l = trace_.lanes[trace_.thread_lane(pid_, tid)];
  if (l.name.empty()) l.name = lane;
  trace::Span s;
  s.start_ns = start_ns;
  s.dur_ns = std::max<int64_t>(0, end_ns - start_ns);
  s.name = trace_.strings.intern(name);
  s.category = trace_.strings.intern(category);
  l.spans.push_back(s);
}

void WatchSession::instant(const std::string& name, int64_t ts_ns) {
  std::lock_guard lock(mu_);
  trace::Instant i;
  i.ts_ns = ts_ns;
  i.name = trace_.strings.intern(name);
  i.category = trace_.strings.intern("step");
  trace_.lanes[trace_.thread_lane(pid_, loop_tid_)].instants.push_back(i);
}

void WatchSession::set_metadata(const std::string& key, const std::string& value) {
  std::lock_guard lock(mu_);
  trace_.metadata[key] = value;
}

size_t WatchSession::poll() {
  std::vector<std::filesystem::path> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(spool_dir_, ec))
    if (entry.path().extension() == ".spool") found.push_back(entry.path());
  std::lock_guard lock(mu_);
  size_t events = 0;
  for (const auto& path : found) {
    auto it = spools_.find(path);
    if (it == spools_.end()) it = spools_.emplace(path, trace::SpoolReader(path)).first;
    events += it->second.read_into(trace_);
  }
  return events;
}

trace::Trace WatchSession::snapshot(int64_t since_ns) {
  std::lock_guard lock(mu_);
  trace::Trace t = trace_;
  if (since_ns > 0) {
    for (trace::Lane& lane : t.lanes) {
      std::erase_if(lane.spans, [&](const trace::Span& s) { return s.end_ns() <= since_ns; });
      for (trace::Span& s : lane.spans)
        if (s.start_ns < since_ns) {
          s.dur_ns = s.end_ns() - since_ns;
          s.start_ns = since_ns;
        }
      std::erase_if(lane.instants, [&](const trace::Instant& i) { return i.ts_ns < since_ns; });
    }
  }
  return t;
}

std::string WatchSession::analyze(int64_t since_ns) {
  trace::Trace t = snapshot(since_ns);
  t.finalize();
  return trace::to_json(trace::analyze(t)).dump();
}

std::string WatchSession::write_trace(const std::filesystem::path& path) {
  trace::Trace t = snapshot(0);
  t.finalize();
  trace::save_chrome_json(t, path);
  return trace::to_json(trace::analyze(t)).dump();
}

int64_t WatchSession::spans() const {
  std::lock_guard lock(mu_);
  return static_cast<int64_t>(trace_.span_count());
}

void WatchSession::end_epoch(int64_t samples, double cpu_ms, int64_t peak_rss_kb) {
  std::lock_guard lock(mu_);
  epochs_.push_back({samples, cpu_ms, peak_rss_kb});
}

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

// The watched loop as a results entry (harness::ExperimentResult, kind loader_watch), written
// through the same code as every other run's: an epoch of the loop is a repetition.
void WatchSession::write_results(const std::filesystem::path& path, const std::string& id,
                                 const std::string& description, const std::string& trace_path,
                                 bool interrupted) {
  trace::Trace t = snapshot(0);
  t.finalize();
  const trace::Analysis a = trace::analyze(t);
  std::vector<EpochFacts> facts;
  {
    std::lock_guard lock(mu_);
    facts = epochs_;
  }
  harness::ExperimentResult r;
  r.id = id;
  r.kind = results::EntryKind::kLoaderWatch;
  r.description = description;
  r.step = "the watched loop's own";
  r.spec = nlohmann::json::object();
  r.interrupted = interrupted;
  r.trace_file = trace_path;
  // Each epoch span of the train loop, with the waits and steps inside it.
  const trace::Lane* loop = nullptr;
  for (const trace::Lane& lane : t.lanes)
    if (lane.name == "train loop") loop = &lane;
  std::vector<double> walls, steady;
  std::vector<int64_t> every_wait;
  if (loop != nullptr) {
    size_t e = 0;
    for (const trace::Span& s : loop->spans) {
      if (t.name(s) != "epoch") continue;
      std::vector<int64_t> waits;
      int64_t step_ns = 0;
      harness::Repetition rep;
      for (const trace::Span& x : loop->spans) {
        if (x.start_ns < s.start_ns || x.end_ns() > s.end_ns()) continue;
        if (t.name(x) == "get_next") waits.push_back(x.dur_ns);
        if (t.name(x) == "step") {
          ++rep.steps;
          step_ns += x.dur_ns;
        }
      }
      rep.wall_ms = trace::ns_to_ms(s.dur_ns);
      int64_t wait_ns = 0;
      for (int64_t w : waits) wait_ns += w;
      rep.step_mean_ms = rep.steps > 0 ? trace::ns_to_ms(step_ns) / static_cast<double>(rep.steps) : 0.0;
      rep.steady_wait_mean_ms = waits.size() > 1 ? trace::ns_to_ms(wait_ns - waits.front()) /
                                                       static_cast<double>(waits.size() - 1)
                                                 : 0.0;
      rep.au_percentage = trace::percent_of(step_ns, s.dur_ns);
      if (e < facts.size()) {
        rep.cpu_ms = facts[e].cpu_ms;
        rep.peak_rss_kb = facts[e].peak_rss_kb;
        rep.samples = facts[e].samples;
      }
      every_wait.insert(every_wait.end(), waits.begin(), waits.end());
      rep.wait = harness::wait_stats(std::move(waits));
      walls.push_back(rep.wall_ms);
      steady.push_back(rep.steady_wait_mean_ms);
      r.elements = std::max(r.elements, rep.steps);
      r.repetitions.push_back(rep);
      ++e;
    }
  }
  r.epochs = static_cast<int64_t>(r.repetitions.size());
  r.median_wall_ms = median(walls);
  r.median_wait = harness::wait_stats(std::move(every_wait));
  r.median_steady_wait_ms = median(steady);

  const trace::LoaderAnalysis& l = a.loader;
  results::LoaderWatchRecord w;
  w.num_workers = l.num_workers;
  w.prefetch_factor = l.prefetch_factor;
  w.batch_size = l.batch_size;
  w.pin_memory = l.pin_memory;
  w.persistent_workers = l.persistent_workers;
  w.device = l.device;
  w.epochs = r.epochs;
  w.batches = a.steps.steps;
  w.input_bound_pct = a.steps.input_bound_pct;
  w.steady_input_bound_pct = l.present ? l.steady_input_bound_pct : a.steps.input_bound_pct;
  w.first_wait_ms = l.first_wait_ms;
  w.wait_p50_ms = l.wait_p50_ms;
  w.wait_p99_ms = l.wait_p99_ms;
  w.ready_pct = l.ready_pct;
  w.workers_busy_pct = l.workers_busy_pct;
  w.pin_memory_busy_pct = l.pin_memory_busy_pct;
  w.worker_starts = l.worker_starts;
  w.restarts = l.restarts;
  for (const trace::LoaderWorker& x : l.workers) w.dead_workers += x.died ? 1 : 0;
  for (const trace::Suggestion& s : l.suggestions) w.suggestions.emplace_back(s.knob, s.text);
  if (!l.present && !a.suggestion.empty()) w.suggestions.emplace_back("loop", a.suggestion);
  w.trace = trace_path;
  r.loader_watch = std::move(w);

  results::RunInfo run;
  run.repetitions = static_cast<int>(r.repetitions.size());
  run.interrupted = interrupted;
  run.created_utc = results::utc_now();
  const nlohmann::json doc = results::make_document(
      results::capture_environment(PIPEPROF_VERSION_TEXT), nlohmann::json::array({to_json(r)}), run);
  results::parse_results(doc.dump(), path.string());  // what it wrote reads back, or it says why
  results::write_text_file(path, doc.dump(2) + "\n");
}

}  // namespace pipeprof::python
