#include "watch_session.h"

#include <unistd.h>

#include <algorithm>

#include "pipeprof/trace/analysis.h"
#include "pipeprof/trace/chrome_json.h"

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

}  // namespace pipeprof::python
