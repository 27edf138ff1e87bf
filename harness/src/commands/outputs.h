// Outputs checked before a run starts: a folder or file that cannot be written is found in the
// first second, not after an hour of measuring. Each check throws RunFailure (exit 1, as an output
// that cannot be written at the end) naming the option and the path.
#pragma once

#include <filesystem>
#include <string>

namespace pipeprof::harness {

// `dir` (the value of `option`) exists or is created, with its parents, and a file can be made in
// it (a probe, removed at once).
void check_output_folder(const std::string& option, const std::filesystem::path& dir);

// `file`'s folder exists and a file can be made in it; `file` is not a folder. Nothing is created
// but the probe, which is removed.
void check_output_file(const std::string& option, const std::filesystem::path& file);

}  // namespace pipeprof::harness
