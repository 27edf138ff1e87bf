// Chrome Trace Event Format (JSON) export and import.
//
// The writer emits what Perfetto UI and chrome://tracing open: "X" complete events, "i" instants,
// "M" metadata (process_name, thread_name, process_sort_index, thread_sort_index), "C" counters,
// "s"/"f" flow events, ts/dur in microseconds with nanosecond fractions, and the metadata map as
// top-level "otherData".
//
// The reader accepts the same format as other tools write it: {"traceEvents": [...]} objects or
// bare event arrays, PyTorch profiler / Kineto traces (GPU kernels, memcpy and memset on device
// and stream lanes, "ac2g" flows, fractional-microsecond ts) and B/E pairs. Malformed or truncated
// input raises TraceFormatError with the byte offset of the problem; it never crashes.
//
// Reader rules: ts/dur are numbers or numeric strings of microseconds, converted exactly to
// nanoseconds (rounded half away from zero); "X" needs ts and a dur >= 0; an "E" without an open
// "B" on its thread is an error, a "B" never closed ends at the trace's last timestamp (metadata
// "unclosed_spans" counts them); a thread becomes a GPU lane when its thread_name metadata carries
// "device"/"stream" (as the writer emits them) or its events are GPU categories (kernel,
// gpu_memcpy, gpu_memset, gpu_user_annotation, gpu) with a "stream" arg; flows are chained per
// (category, id) in time order; a counter's "value" series is named after the event, another key
// k "<name>.k"; string pids/tids that are not numbers get synthetic negative ids and name their
// process/thread; unknown phases are ignored. Metadata "format" is taken from "otherData", else
// "kineto" when Kineto's categories or keys appear, else "chrome".
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <string_view>

#include "pipeprof/trace/trace.h"

namespace pipeprof::trace {

class TraceFormatError : public std::runtime_error {
 public:
  TraceFormatError(std::string source, uint64_t offset, const std::string& what);
  const std::string& source() const { return source_; }  // file name or "<memory>"
  uint64_t offset() const { return offset_; }              // byte offset of the problem
 private:
  std::string source_;
  uint64_t offset_;
};

void write_chrome_json(const Trace& trace, std::ostream& out);
// Writes atomically (temporary file, then rename); throws std::runtime_error naming the path.
void save_chrome_json(const Trace& trace, const std::filesystem::path& path);

// How load_chrome_json read a file (for tests and benchmarks).
struct ReadStats {
  size_t parts = 0;    // parts of events read before the rest (streamed)
  bool whole = false;  // read whole in the end (not streamed, or a shape or error the parts left)
};

struct ReadOptions {
  // Keep each event's "args" object (Trace::args). The analysis never reads them, so `pipeprof
  // analyze` turns this off: a Kineto trace's args are about half its bytes, and copying them is
  // a third of the reading time. They are validated either way.
  bool keep_args = true;
  // load_chrome_json reads the file a part at a time (memory: the model and a few parts of text,
  // not the whole text and simdjson's index of it), and again whole where the
  // trace's shape is one the parts do not handle or its text is malformed (so that errors are
  // those of a whole read). Off: always whole (for comparisons).
  bool stream = true;
  // The text read at a time when streaming (tests: small). A part, its structural index and its
  // strings stay in a core's cache: 1 MiB parts read a 500 MB trace in 0.77 times the time of
  // 8 MiB parts on a 2-core machine.
  size_t part_bytes = size_t{1} << 20;
  // Threads that parse the parts: 0, one per core (at most 8); 1, the calling thread alone. The
  // calling thread reads, cuts and builds, and parses too while it waits for a part.
  size_t threads = 0;
  ReadStats* stats = nullptr;  // filled when given
};

// Parses a whole document held in memory; `source` names it in errors.
Trace parse_chrome_json(std::string_view json, const std::string& source = "<memory>",
                        const ReadOptions& options = {});
// Reads and parses a file; a missing or unreadable file throws std::runtime_error naming it.
Trace load_chrome_json(const std::filesystem::path& path, const ReadOptions& options = {});

}  // namespace pipeprof::trace
