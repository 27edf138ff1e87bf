// The loop's side of `pipeprof.watch`: one timeline of the training loop, the pin-memory thread and
// the DataLoader's worker processes (read from their spool files as they grow), analysed live over
// a recent window and as a whole at the end. Thread-safe: the loop, the pin-memory thread and the
// live line's thread all call it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "pipeprof/trace/spool.h"
#include "pipeprof/trace/trace.h"

namespace pipeprof::python {

class WatchSession {
 public:
  // `spool_dir` is where the workers write their spools (*.spool); `loop_tid` the loop's thread.
  WatchSession(std::filesystem::path spool_dir, int64_t loop_tid);

  // A span on the train loop's lane: "get_next", "step" or "epoch".
  void loop_span(const std::string& name, int64_t start_ns, int64_t end_ns);
  // A span on a lane of this process ("pin_memory" or another helper thread), by thread id.
  void thread_span(int64_t tid, const std::string& lane, const std::string& name,
                   const std::string& category, int64_t start_ns, int64_t end_ns);
  void instant(const std::string& name, int64_t ts_ns);
  void set_metadata(const std::string& key, const std::string& value);

  // Reads what the workers flushed since the last call; returns the number of new events. A
  // malformed spool throws trace::TraceFormatError naming it.
  size_t poll();
  // The analysis (trace::to_json) of what ended after `since_ns` (0: everything), as JSON text.
  std::string analyze(int64_t since_ns);
  // Writes the whole trace (Chrome JSON, atomically) and returns its analysis as JSON text.
  std::string write_trace(const std::filesystem::path& path);
  // What the loop's process measured of an epoch that ended (in order): its samples, its CPU time
  // and the process's peak resident memory.
  void end_epoch(int64_t samples, double cpu_ms, int64_t peak_rss_kb);
  // Writes a results file (results::make_document; one entry of kind loader_watch whose
  // repetitions are the epochs) atomically; `trace` is the trace's path relative to it.
  void write_results(const std::filesystem::path& path, const std::string& id,
                     const std::string& description, const std::string& trace, bool interrupted);
  int64_t spans() const;

 private:
  trace::Trace snapshot(int64_t since_ns);
  std::filesystem::path spool_dir_;
  int64_t pid_;
  int64_t loop_tid_;
  mutable std::mutex mu_;
  trace::Trace trace_;
  std::map<std::filesystem::path, trace::SpoolReader> spools_;
  struct EpochFacts {
    int64_t samples;
    double cpu_ms;
    int64_t peak_rss_kb;
  };
  std::vector<EpochFacts> epochs_;
};

}  // namespace pipeprof::python
