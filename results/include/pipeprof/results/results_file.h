// Reading results files: pipeprof's own results.json (schema versions 1 to 3) and Google
// Benchmark's JSON output (--benchmark_format=json or --benchmark_out). Both become a list of
// named entries, each with the samples of every repetition, which is what `compare` needs; the
// pipeprof document is kept whole for `report`.
//
// Google Benchmark: "iteration" runs are grouped by run_name (name without the aggregate suffix)
// and become the repetitions, real_time converted to nanoseconds from time_unit; "aggregate" runs
// (mean, median, stddev, cv) are skipped, since they summarise the same repetitions; a benchmark
// reported with aggregates only (--benchmark_report_aggregates_only) gets its median (else its
// mean) as a single sample, which `compare` can only judge on the threshold.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "pipeprof/results/records.h"
#include "pipeprof/results/results_error.h"

namespace pipeprof::results {

// The schema version this pipeprof writes; versions 1 to 4 are read. Version 3 added an
// experiment's optional "workload" object (a DLIO workload's metrics: `pipeprof workload`);
// version 4 each entry's "kind" and the typed records of records.h, every field in the schema.
// Entries of files before 4 get their kind from what they hold (experiment_kind_before_4).
inline constexpr int kSchemaVersion = 4;

enum class Format { kPipeprof, kGoogleBenchmark };

struct Entry {
  std::string name;                // experiment id or benchmark run_name
  std::vector<double> time_ns;     // per repetition: wall time (pipeprof) or real_time (gbench)
  std::vector<double> efficiency;  // per repetition: ideal / wall; empty without an ideal
  // Per repetition, where every repetition has them: accelerator utilization in % and samples/s.
  std::vector<double> au, throughput;
  // A search set beside its prediction (records.h, PredictionCheck): |error| in %, one value.
  std::vector<double> prediction_error;
  // pipeprof files: what the entry is, its part of the catalog ("A", "B", "C" or ""), and its
  // typed records (records.h).
  EntryKind kind = EntryKind::kExperiment;
  std::string part;
  std::optional<WorkloadRecord> workload;
  std::optional<RanksSummary> ranks;
  std::optional<ScaleoutRecord> scaleout;
  std::optional<LoaderWatchRecord> loader_watch;
  bool judged_on_au() const { return results::judged_on_au(kind); }
};

struct ResultsFile {
  std::filesystem::path path;  // where it was read from ("<memory>" when parsed from text)
  Format format = Format::kPipeprof;
  int schema_version = 0;  // pipeprof files only
  nlohmann::json doc;      // the whole document as read
  std::vector<Entry> entries;
};

// Throws ResultsError.
ResultsFile parse_results(std::string_view text, const std::string& source = "<memory>");
ResultsFile load_results(const std::filesystem::path& path);

// Validates a parsed pipeprof document (schema version 1 to 4) and returns its entries; throws
// ResultsError naming `source` and the JSON path of the first problem.
std::vector<Entry> pipeprof_entries(const nlohmann::json& doc, const std::string& source);
// The kind of an entry of a file before schema 4, from what it holds.
EntryKind experiment_kind_before_4(const nlohmann::json& experiment);
std::vector<Entry> google_benchmark_entries(const nlohmann::json& doc, const std::string& source);

}  // namespace pipeprof::results
