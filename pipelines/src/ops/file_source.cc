#include "ops/file_source.h"

#include <fmt/format.h>

#include <regex>

#include "ops/stage_reader.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/registry.h"
#include "pipeprof/trace/clock.h"
#include "pipeprof/trace/recorder.h"

namespace pipeprof::pipelines::ops {
namespace {

constexpr int64_t kRateSampleNs = 10 * trace::kNsPerMs;  // bytes/s counter: at most every 10 ms

}  // namespace

std::vector<std::string> read_files_field(const StageReader& stage, const std::string& key) {
  const nlohmann::json& v = stage.raw(key);
  const char* expected = "a file name, a non-empty list of file names or \"$element\"";
  if (v.is_string()) {
    const std::string text = v.get<std::string>();
    static const std::regex kRef(R"(\$element(?:\[(\d+)\])?)");
    std::smatch m;
    if (!std::regex_match(text, m, kRef)) {
      if (text.empty()) stage.fail(key, expected, v);
      return {text};
    }
    const spec_detail::ElementScope scope = stage.fields().scope();
    if (!scope.allowed) {
      throw SpecError(fmt::format("{}.{}: \"{}\" is only available inside an interleave's pipeline",
                                  stage.where(), key, text));
    }
    if (scope.outer == nullptr) return {text};  // validating: resolved when the pipeline opens
    const size_t k = m[1].matched ? std::stoul(m[1].str()) : 0;
    try {
      return {file_name(*scope.outer, k)};
    } catch (const std::invalid_argument& e) {
      throw SpecError(fmt::format("{}.{}: \"{}\": {}", stage.where(), key, text, e.what()));
    }
  }
  if (!v.is_array() || v.empty()) stage.fail(key, expected, v);
  std::vector<std::string> files;
  for (const auto& f : v) {
    if (!f.is_string() || f.get<std::string>().empty()) stage.fail(key, expected, v);
    files.push_back(f.get<std::string>());
  }
  return files;
}

void check_read_options(const char* op, const FileReadOptions& read) {
  if (read.buffer_size < 1 || read.buffer_size > kMaxReadBufferSize) {
    throw std::invalid_argument(std::string(op) + ": buffer_size must be in [1, " +
                                std::to_string(kMaxReadBufferSize) + "]");
  }
}

void add_read_params(nlohmann::json& out, const FileReadOptions& read) {
  out["buffer_size"] = read.buffer_size;
  out["direct"] = read.direct;
  out["drop_caches"] = read.drop_caches;
  out["mmap"] = read.mmap;
}

FileReadOptions read_options(const StageReader& s) {
  return {.buffer_size = s.integer("buffer_size"),
          .direct = s.boolean("direct"),
          .drop_caches = s.boolean("drop_caches"),
          .mmap = s.boolean("mmap")};
}

std::vector<FieldSpec> read_fields() {
  return {{.name = "buffer_size", .type = FieldType::kInteger, .fallback = kDefaultReadBufferSize,
           .min = 1, .max = kMaxReadBufferSize, .doc = "bytes per read call"},
          {.name = "direct", .type = FieldType::kBoolean, .fallback = false,
           .doc = "O_DIRECT: bypass the page cache", .spelled_out = false},
          {.name = "drop_caches", .type = FieldType::kBoolean, .fallback = false,
           .doc = "drop each file from the page cache before reading it (cold reads)",
           .spelled_out = false},
          {.name = "mmap", .type = FieldType::kBoolean, .fallback = true,
           .doc = "read uncompressed local files through a mapping (records are views, no copy); "
                  "off: read calls into buffers",
           .spelled_out = false}};
}

ReadAccounting::ReadAccounting(NodeStats& stats, std::string stage_name)
    : stats_(stats), stage_name_(std::move(stage_name)) {}

io::ReadObserver ReadAccounting::observer_for_file() {
  stats_.files_opened.fetch_add(1, std::memory_order_relaxed);
  trace::Recorder& rec = trace::Recorder::global();
  static const trace::NameId kBytes = rec.intern("bytes");
  static const trace::NameId kOffset = rec.intern("offset");
  // Interned per file only while tracing: a span per read names the file it read.
  const trace::NameId read_name = rec.intern(stage_name_ + ": read");
  const trace::NameId rate_name = rec.intern(stage_name_ + ": bytes/s");
  return [this, opened = trace::ticks(), read_name, rate_name,
          file_name = trace::Recorder::kNoArg](const io::ReadEvent& e) mutable {
    stats_.bytes_read.fetch_add(static_cast<int64_t>(e.bytes), std::memory_order_relaxed);
    stats_.read_calls.fetch_add(1, std::memory_order_relaxed);
    stats_.read_ns.fetch_add(trace::ticks_to_ns(e.end_ticks - e.start_ticks),
                             std::memory_order_relaxed);
    if (e.first) {
      stats_.first_byte_ns.fetch_add(trace::ticks_to_ns(e.end_ticks - opened),
                                     std::memory_order_relaxed);
    }
    trace::Recorder& r = trace::Recorder::global();
    if (!r.enabled()) return;
    if (file_name == trace::Recorder::kNoArg) file_name = r.intern(stage_name_ + ": " + e.file);
    // The read itself (bytes, offset) inside a span naming the file.
    r.span(file_name, trace::category::pipeline(), e.start_ticks, e.end_ticks, kBytes,
           static_cast<int64_t>(e.bytes), kOffset, static_cast<int64_t>(e.offset));
    r.span(read_name, trace::category::pipeline(), e.start_ticks, e.end_ticks, kBytes,
           static_cast<int64_t>(e.bytes));
    // bytes/s over the last >= 10 ms, one sample per interval across the stage's threads.
    int64_t last = stats_.rate_sample_ticks.load(std::memory_order_relaxed);
    const int64_t now = e.end_ticks;
    if (last == 0) {
      stats_.rate_sample_ticks.compare_exchange_strong(last, now);
      return;
    }
    const int64_t elapsed_ns = trace::ticks_to_ns(now - last);
    if (elapsed_ns < kRateSampleNs) return;
    if (!stats_.rate_sample_ticks.compare_exchange_strong(last, now)) return;
    const int64_t bytes = stats_.bytes_read.load(std::memory_order_relaxed);
    const int64_t before = stats_.rate_sample_bytes.exchange(bytes);
    r.counter(rate_name, static_cast<double>(bytes - before) * 1e9 / static_cast<double>(elapsed_ns));
  };
}

std::unique_ptr<io::ByteStream> open_source_file(const std::string& file, io::Compression compression,
                                                 const FileReadOptions& options,
                                                 ReadAccounting& accounting,
                                                 const std::shared_ptr<const StorageContext>& storage) {
  if (options.drop_caches) io::drop_from_page_cache(file);
  return io::open_stream(file, compression,
                         io::OpenOptions{.direct = options.direct, .map = options.mmap, .storage = storage},
                         static_cast<size_t>(options.buffer_size), accounting.observer_for_file());
}

}  // namespace pipeprof::pipelines::ops
