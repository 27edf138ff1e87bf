// A file written with write(2) and pwrite(2), no stdio buffer (the writers hand it large chunks),
// for data generation's writers. Every failure is a FormatError naming the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace pipeprof::pipelines::formats {

class FileOut {
 public:
  enum class Mode { kCreate, kExisting };  // kCreate truncates; kExisting writes in place
  explicit FileOut(const std::string& path, Mode mode = Mode::kCreate);
  ~FileOut();  // closes without reporting; call close() to learn of a failure
  FileOut(const FileOut&) = delete;
  FileOut& operator=(const FileOut&) = delete;

  void write(std::span<const std::byte> bytes);                     // at the end of what was written
  void write_at(uint64_t offset, std::span<const std::byte> bytes);  // in place
  void close();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace pipeprof::pipelines::formats
