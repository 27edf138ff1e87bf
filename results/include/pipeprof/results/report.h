// The Markdown report of a results file, written to read well on a code host: a summary table
// (measured, ideal, bound, efficiency, the seed's time and efficiency), an SVG bar chart of
// measured vs ideal vs seed, one SVG Gantt chart per experiment drawn from its own trace, and the
// environment. The output depends only on the results file and its traces (no clock, no absolute
// paths), so the same input always gives the same bytes.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace pipeprof::results {

struct ReportFile {
  std::string name;  // relative to the report's folder
  std::string content;
};

struct Report {
  std::string markdown;           // report.md
  std::vector<ReportFile> files;  // the SVG charts it links to
};

// `doc` is a pipeprof results document (schema 1 or 2; throws ResultsError naming `source`
// otherwise). Trace paths in the document are relative to `base_dir` (the results file's folder).
Report render_report(const nlohmann::json& doc, const std::filesystem::path& base_dir,
                     const std::string& source = "<memory>");

// Writes report.md and the charts into `out_dir` (created); throws std::runtime_error naming the
// file that cannot be written.
void write_report(const Report& report, const std::filesystem::path& out_dir);

// Writes `text` to `path`, replacing it whole (written beside it as `path`.partial-<pid>-<n>, then
// renamed; a link's target is replaced; a device or pipe is written in place); throws
// std::runtime_error naming the path and why.
void write_text_file(const std::filesystem::path& path, const std::string& text);

}  // namespace pipeprof::results
