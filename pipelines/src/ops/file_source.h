// What the file sources (tfrecord, fixed_length_records) share: the list of files of a spec field
// (a path, a list of paths, or "$element" inside an interleave: a file name element of list_files),
// the common read options, and the observer that turns every read of a file into the stage's
// statistics (bytes read, read calls, time in reads, time to first byte per file), a trace span
// "<stage>: read" with the bytes and offset, per-file spans naming the file, and the
// "<stage>: bytes/s" counter.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "formats/tfrecord.h"
#include "io/byte_stream.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/files.h"
#include "pipeprof/pipelines/registry.h"

namespace pipeprof::pipelines {
class StageReader;
}

namespace pipeprof::pipelines::ops {

// The files of `key`: a string, a non-empty list of strings, or "$element" / "$element[k]" (a
// uint8 file name component of the outer element). Fails naming the JSON path otherwise.
std::vector<std::string> read_files_field(const StageReader& stage, const std::string& key);

// The read options every file source has: buffer_size, direct, drop_caches.
std::vector<FieldSpec> read_fields();
FileReadOptions read_options(const StageReader& stage);
void add_read_params(nlohmann::json& out, const FileReadOptions& read);
// Throws std::invalid_argument naming `op` for an option out of bounds.
void check_read_options(const char* op, const FileReadOptions& read);

// Counts a stage's reads into its statistics and the trace. One per open file.
class ReadAccounting {
 public:
  ReadAccounting(NodeStats& stats, std::string stage_name);
  // An observer for the stream of one file, opened now (the time to first byte starts here).
  io::ReadObserver observer_for_file();

 private:
  NodeStats& stats_;
  std::string stage_name_;
};

// Runs `fn`, turning an io::IoError or formats::FormatError (a file that cannot be read, a corrupt
// or truncated record) into an InputDataError of `stage`.
template <typename Fn>
decltype(auto) as_input_data_error(const std::string& stage, Fn&& fn);

// Opens one file of a file source as a stream, with its reads accounted, a remote one through the
// running pipeline's storage context (the iterator's storage()).
std::unique_ptr<io::ByteStream> open_source_file(const std::string& file, io::Compression compression,
                                                 const FileReadOptions& options,
                                                 ReadAccounting& accounting,
                                                 const std::shared_ptr<const StorageContext>& storage);

template <typename Fn>
decltype(auto) as_input_data_error(const std::string& stage, Fn&& fn) {
  try {
    return fn();
  } catch (const io::IoError& e) {
    throw InputDataError(stage, e.what());
  } catch (const formats::FormatError& e) {
    throw InputDataError(stage, e.what());
  }
}

}  // namespace pipeprof::pipelines::ops
