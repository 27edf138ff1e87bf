// Chrome Trace Event JSON: parse_chrome_json and load_chrome_json (chrome_json_document.h is the
// reader; chrome_json_parts.h reads a file a part at a time).
#include <filesystem>
#include <string>

#include "chrome_json_document.h"
#include "chrome_json_parts.h"
#include "padded_buffer.h"
#include "pipeprof/trace/chrome_json.h"

namespace pipeprof::trace {

using detail::Reader;

TraceFormatError::TraceFormatError(std::string source, uint64_t offset, const std::string& what)
    : std::runtime_error(source + ": byte " + std::to_string(offset) + ": " + what),
      source_(std::move(source)),
      offset_(offset) {}

Trace parse_chrome_json(std::string_view json, const std::string& source,
                        const ReadOptions& options) {
  const PaddedBuffer buffer = PaddedBuffer::copy_of(json);
  return Reader(source, options)
      .run(simdjson::padded_string_view(buffer.data(), buffer.size(), buffer.capacity()));
}

Trace load_chrome_json(const std::filesystem::path& path, const ReadOptions& options) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw std::runtime_error(path.string() + ": no such file");
  if (options.stats != nullptr) *options.stats = ReadStats{};
  if (options.stream) {
    try {
      return detail::read_in_parts(path, options);
    } catch (const detail::NotStreamable&) {
    } catch (const TraceFormatError&) {
    } catch (const simdjson::simdjson_error&) {
    }
    // Read again whole: the shape the parts do not handle, or an error to report as a whole
    // read reports it.
  }
  if (options.stats != nullptr) options.stats->whole = true;
  const PaddedBuffer buffer = PaddedBuffer::load(path);
  return Reader(path.string(), options)
      .run(simdjson::padded_string_view(buffer.data(), buffer.size(), buffer.capacity()));
}

}  // namespace pipeprof::trace
