// Spans from another process, while it runs: a spool file that one process appends to and
// another reads as it grows.
//
//   trace::SpoolWriter w(dir / "worker-3.spool", "DataLoader worker 3");   // in the child
//   const auto name = w.name("__getitem__");
//   w.span(name, trace_category, tid, start_ns, end_ns);                    // CLOCK_MONOTONIC ns
//
//   trace::SpoolReader r(dir / "worker-3.spool");                           // in the parent
//   r.read_into(trace);   // appends what is new since the last call; call again later
//
// The multi-process producers hand over their whole trace once, at their end; a spool is for a
// child whose life the parent does not control (a PyTorch DataLoader worker, killed or ended at any
// time): what it flushed is read while it runs, and a child killed mid-write loses at most its
// unflushed buffer (a cut last record is waited for, never misread).
//
// Format (this machine's byte order; the file is never moved between machines): the magic
// "PPSPOOL1", the writer's pid (int64), then records, each a tag byte and its fields:
//   1 name      uint32 id, uint32 length, bytes        (ids are dense, defined before use)
//   2 span      uint32 name, uint32 category, int64 tid, int64 start_ns, int64 end_ns
//   3 instant   uint32 name, uint32 category, int64 tid, int64 ts_ns
//   4 thread    int64 tid, uint32 length, bytes        (the lane's name)
//   5 process   uint32 length, bytes                   (the process's name)
// Anything else is a TraceFormatError naming the file and the byte offset.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pipeprof/trace/trace.h"

namespace pipeprof::trace {

class SpoolWriter {
 public:
  // Creates (truncates) the file. Throws std::runtime_error naming it when it cannot.
  SpoolWriter(const std::filesystem::path& path, std::string_view process_name);
  ~SpoolWriter();  // flushes
  SpoolWriter(const SpoolWriter&) = delete;
  SpoolWriter& operator=(const SpoolWriter&) = delete;

  // The id of a name or category (defined in the file on first use).
  uint32_t name(std::string_view s);
  void thread_name(int64_t tid, std::string_view name);
  void span(uint32_t name, uint32_t category, int64_t tid, int64_t start_ns, int64_t end_ns);
  void instant(uint32_t name, uint32_t category, int64_t tid, int64_t ts_ns);

  // Writes the buffer out. Also done when it holds 32 KiB, and at the first event after
  // `flush_interval_ns` without a flush (so a reader sees a busy child at least that often).
  void flush();
  void set_flush_interval_ns(int64_t ns) { flush_interval_ns_ = ns; }
  const std::filesystem::path& path() const { return path_; }
  int64_t events() const { return events_; }

 private:
  void maybe_flush(int64_t now_ns);
  std::filesystem::path path_;
  int fd_ = -1;
  std::string buffer_;
  std::unordered_map<std::string, uint32_t> names_;
  int64_t last_flush_ns_ = 0;
  int64_t flush_interval_ns_ = 250'000'000;
  int64_t events_ = 0;
};

class SpoolReader {
 public:
  explicit SpoolReader(std::filesystem::path path) : path_(std::move(path)) {}

  // Appends the events written since the last call to `trace` (the writer's pid is the process,
  // tids its lanes); returns how many. A record the writer has not finished is left for the next
  // call. A missing file or one without its header yet gives 0. Throws TraceFormatError on a
  // malformed record.
  size_t read_into(Trace& trace);

  int64_t pid() const { return pid_; }  // 0 until the header was read
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  uint64_t offset_ = 0;  // of the first unread byte
  int64_t pid_ = 0;
  std::vector<StrId> names_;  // the file's name ids, as the trace's string ids
};

}  // namespace pipeprof::trace
