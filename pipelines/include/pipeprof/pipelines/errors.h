// Errors a pipeline reports through Iterator::next() and spec loading.
#pragma once

#include <stdexcept>
#include <string>

namespace pipeprof::pipelines {

// A failure inside a running pipeline. The message names the stage, e.g.
// "map 'mapped_function': division by zero".
class PipelineError : public std::runtime_error {
 public:
  PipelineError(std::string stage, const std::string& message)
      : std::runtime_error(stage + ": " + message), stage_(std::move(stage)) {}
  const std::string& stage() const { return stage_; }

 private:
  std::string stage_;
};

// A pipeline that failed on its input data: a file that is missing or cannot be read, a corrupt
// or truncated record, a pattern that matches no file. The message names the stage, the file and
// the byte offset (or the archive member or dataset), e.g. "tfrecord: a.tfrecord: TFRecord record
// at byte 1040: corrupt data (...)".
// The command line reports it as bad input (exit 2), where other pipeline failures exit 1.
class InputDataError : public PipelineError {
 public:
  using PipelineError::PipelineError;
};

// Bytes that could not be opened, read or written through the storage layer (storage_io.h): the
// message names the file or URL, and the byte offset where it applies.
class IoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A pipeline spec that cannot be loaded: the message names the file, the JSON path and what was
// expected, e.g. "spec.json: stages[2].parallelism: expected a positive integer or \"autotune\",
// got -3".
class SpecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace pipeprof::pipelines
