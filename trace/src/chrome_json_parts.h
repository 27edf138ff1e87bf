// Reading a trace file a part at a time, so that memory holds the model and a part or two of the
// text rather than the whole text and simdjson's index of it (chrome_json_parts.cc says how).
#pragma once

#include <filesystem>

#include "pipeprof/trace/chrome_json.h"

namespace pipeprof::trace::detail {

// A trace whose shape the parts do not handle: load_chrome_json reads it whole.
struct NotStreamable {};

// The trace, read in parts (by options.threads parsing threads). Throws NotStreamable, and
// TraceFormatError or simdjson's errors for malformed text (which a whole read then reports).
Trace read_in_parts(const std::filesystem::path& path, const ReadOptions& options);

}  // namespace pipeprof::trace::detail
