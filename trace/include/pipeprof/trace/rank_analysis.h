// Per-rank comparison for distributed PyTorch jobs, which write one profiler trace per rank
// ("rank-0.json", "rank-1.json", ... in one folder; gzip or zstd ones as rank-0.json.gz or
// rank-0.json.zst):
//
//   const auto files = trace::find_rank_traces("traces/");
//   std::vector<trace::RankAnalysis> ranks;
//   for (const auto& [rank, path] : files)
//     ranks.push_back({rank, path.string(), trace::analyze(trace::load_chrome_json(path))});
//   const trace::RankComparison c = trace::compare_ranks(std::move(ranks));
//
// The slowest rank is the one with the longest mean step; its cause is the step-time category
// (Kernel, ..., DataLoader, CPU Exec, Other) whose mean per step exceeds the median of the other
// ranks by the most.
#pragma once

#include <array>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "pipeprof/trace/analysis.h"

namespace pipeprof::trace {

struct RankAnalysis {
  int rank = 0;
  std::string file;
  Analysis analysis;
  // Filled by compare_ranks from analysis.step_times.
  int64_t steps = 0;
  double mean_step_ms = 0;
  double input_bound_pct = 0;
  std::string verdict;
  std::array<double, kStepCategories> mean_breakdown_ms{};
};

struct RankComparison {
  std::vector<RankAnalysis> ranks;  // by rank
  int slowest = -1;                 // index into ranks; -1 when no rank has steps
  double median_step_ms = 0;        // of the other ranks
  std::string cause;                // a category name; "" with a single rank
  double cause_excess_ms = 0;       // per step, over the other ranks' median
};

// The rank-<N>.json files of a folder, by rank. Throws std::runtime_error naming the folder when
// it is not a folder or holds none.
std::vector<std::pair<int, std::filesystem::path>> find_rank_traces(
    const std::filesystem::path& dir);

RankComparison compare_ranks(std::vector<RankAnalysis> ranks);

nlohmann::json to_json(const RankComparison& c);
std::string format_text(const RankComparison& c);

}  // namespace pipeprof::trace
