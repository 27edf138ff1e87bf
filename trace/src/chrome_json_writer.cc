// Chrome Trace Event JSON writer. Layout: metadata ("M") events first, then each lane's spans and
// instants in display order, then counters and flows, one event per line.
//
// GPU lanes are written as threads of their process whose thread_name event also carries
// {"device": d, "stream": s}; the reader turns such threads back into GPU lanes. Their tid is the
// stream id unless a thread of the same process already uses it.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <ostream>
#include <set>
#include <stdexcept>
#include <system_error>

#include "json_text.h"
#include "pipeprof/trace/chrome_json.h"

namespace pipeprof::trace {
namespace {

namespace jt = json_text;

class Writer {
 public:
  Writer(const Trace& t, std::ostream& out) : t_(t), out_(out) { buf_.reserve(kFlushBytes + 4096); }

  void write() {
    assign_tids();
    buf_.append("{\"displayTimeUnit\":\"ns\",\"otherData\":{");
    bool first = true;
    for (const auto& [key, value] : t_.metadata) {
      if (!first) buf_.push_back(',');
      first = false;
      jt::append_string(buf_, key);
      buf_.push_back(':');
      jt::append_string(buf_, value);
    }
    buf_.append("},\n\"traceEvents\":[");
    write_metadata_events();
    for (const Process& p : t_.processes)
      for (uint32_t lane : p.lanes)
        write_lane_events(lane);
    write_counters();
    write_flows();
    buf_.append("\n]}\n");
    flush();
  }

 private:
  static constexpr size_t kFlushBytes = 1 << 20;

  void assign_tids() {
    tids_.assign(t_.lanes.size(), 0);
    std::vector<std::set<int64_t>> used(t_.processes.size());
    for (size_t i = 0; i < t_.lanes.size(); ++i) {
      const Lane& l = t_.lanes[i];
      if (l.kind == LaneKind::kThread) {
        tids_[i] = l.tid;
        if (l.process < used.size()) used[l.process].insert(l.tid);
      }
    }
    for (size_t i = 0; i < t_.lanes.size(); ++i) {
      const Lane& l = t_.lanes[i];
      if (l.kind != LaneKind::kGpuStream || l.process >= used.size()) continue;
      auto& taken = used[l.process];
      int64_t tid = l.stream;
      if (taken.contains(tid)) tid = *taken.rbegin() + 1;
      taken.insert(tid);
      tids_[i] = tid;
    }
  }

  int64_t pid_of(uint32_t process) const {
    return process < t_.processes.size() ? t_.processes[process].pid : 0;
  }

  // Starts an event object: {"ph":"X","pid":..,"tid":.. (no closing brace).
  void begin_event(char ph, int64_t pid) {
    buf_.append(first_event_ ? "\n{\"ph\":\"" : ",\n{\"ph\":\"");
    first_event_ = false;
    buf_.push_back(ph);
    buf_.append("\",\"pid\":");
    jt::append_int(buf_, pid);
  }
  void tid(int64_t tid) {
    buf_.append(",\"tid\":");
    jt::append_int(buf_, tid);
  }
  void ts(const char* key, int64_t ns) {
    buf_.append(",\"");
    buf_.append(key);
    buf_.append("\":");
    jt::append_us(buf_, ns);
  }
  void str(const char* key, std::string_view value) {
    buf_.append(",\"");
    buf_.append(key);
    buf_.append("\":");
    jt::append_string(buf_, value);
  }
  void str_id(const char* key, StrId id) {
    if (id != kNoStr && id < t_.strings.size()) str(key, t_.strings.str(id));
  }
  void args(uint32_t index) {
    if (index == kNoArgs || index >= t_.args.size() || t_.args[index].empty()) return;
    buf_.append(",\"args\":");
    buf_.append(t_.args[index]);
  }
  void end_event() {
    buf_.push_back('}');
    if (buf_.size() >= kFlushBytes) flush();
  }

  void write_metadata_events() {
    for (const Process& p : t_.processes) {
      if (!p.name.empty()) {
        begin_event('M', p.pid);
        str("name", "process_name");
        buf_.append(",\"args\":{\"name\":");
        jt::append_string(buf_, p.name);
        buf_.push_back('}');
        end_event();
      }
      if (p.sort_index != 0) {
        begin_event('M', p.pid);
        str("name", "process_sort_index");
        buf_.append(",\"args\":{\"sort_index\":");
        jt::append_int(buf_, p.sort_index);
        buf_.push_back('}');
        end_event();
      }
      for (uint32_t index : p.lanes) {
        const Lane& l = t_.lanes[index];
        const bool gpu = l.kind == LaneKind::kGpuStream;
        if (!l.name.empty() || gpu) {
          begin_event('M', p.pid);
          tid(tids_[index]);
          str("name", "thread_name");
          buf_.append(",\"args\":{\"name\":");
          jt::append_string(buf_, l.name);
          if (gpu) {
            buf_.append(",\"device\":");
            jt::append_int(buf_, l.device);
            buf_.append(",\"stream\":");
            jt::append_int(buf_, l.stream);
          }
          buf_.push_back('}');
          end_event();
        }
        if (l.sort_index != 0) {
          begin_event('M', p.pid);
          tid(tids_[index]);
          str("name", "thread_sort_index");
          buf_.append(",\"args\":{\"sort_index\":");
          jt::append_int(buf_, l.sort_index);
          buf_.push_back('}');
          end_event();
        }
      }
    }
  }

  void write_lane_events(uint32_t index) {
    const Lane& l = t_.lanes[index];
    const int64_t pid = pid_of(l.process);
    for (const Span& s : l.spans) {
      begin_event('X', pid);
      tid(tids_[index]);
      ts("ts", s.start_ns);
      ts("dur", s.dur_ns);
      str_id("name", s.name);
      str_id("cat", s.category);
      args(s.args);
      end_event();
    }
    for (const Instant& i : l.instants) {
      begin_event('i', pid);
      tid(tids_[index]);
      ts("ts", i.ts_ns);
      buf_.append(",\"s\":\"t\"");
      str_id("name", i.name);
      str_id("cat", i.category);
      args(i.args);
      end_event();
    }
  }

  // One "value" series per counter; the reader names a "value" series after its event.
  void write_counters() {
    for (const Counter& c : t_.counters) {
      const int64_t pid = pid_of(c.process);
      for (const auto& [t, v] : c.points) {
        if (!std::isfinite(v)) continue;  // JSON has no NaN or infinity
        begin_event('C', pid);
        ts("ts", t);
        str("name", c.name);
        buf_.append(",\"args\":{\"value\":");
        jt::append_double(buf_, v);
        buf_.push_back('}');
        end_event();
      }
    }
  }

  void write_flows() {
    for (const Flow& f : t_.flows) {
      if (f.from_lane >= t_.lanes.size() || f.to_lane >= t_.lanes.size()) continue;
      for (const bool start : {true, false}) {
        const uint32_t lane = start ? f.from_lane : f.to_lane;
        begin_event(start ? 's' : 'f', pid_of(t_.lanes[lane].process));
        tid(tids_[lane]);
        ts("ts", start ? f.from_ns : f.to_ns);
        buf_.append(",\"id\":");
        buf_.append(std::to_string(f.id));
        str_id("name", f.name);
        str_id("cat", f.category);
        if (!start) buf_.append(",\"bp\":\"e\"");
        end_event();
      }
    }
  }

  void flush() {
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
  }

  const Trace& t_;
  std::ostream& out_;
  std::string buf_;
  std::vector<int64_t> tids_;
  bool first_event_ = true;
};

}  // namespace

void write_chrome_json(const Trace& trace, std::ostream& out) {
  Writer(trace, out).write();
}

void save_chrome_json(const Trace& trace, const std::filesystem::path& path) {
  std::filesystem::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      throw std::runtime_error(path.string() + ": cannot be written (cannot create " +
                               tmp.string() + ")");
    write_chrome_json(trace, out);
    out.flush();
    if (!out) {
      out.close();
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      throw std::runtime_error(path.string() + ": write failed (disk full?)");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw std::runtime_error(path.string() + ": cannot be written: " + ec.message());
  }
}

}  // namespace pipeprof::trace
