// The suite's storage section (EXPERIMENTS.md C1-C3): the entries of harness/suite.json
// (suite_manifest.h) of kinds workload, search, peer and growing_cache, run in the manifest's
// order: the MLPerf Storage workloads on one simulated accelerator each, the loaders' searches for
// the most accelerators (pipeprof's, warm and cold, and its peers'), the remote experiments (C2)
// on a dataset served by nginx, and the growing cache (C3). Datasets are generated under OUT/data
// (kept: a second suite reuses them). Each run is an experiment entry with its "workload" object,
// for results.json and the report's storage section.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "workload/suite_manifest.h"

namespace pipeprof::harness::workload {

// The shipped workload files: $PIPEPROF_WORKLOADS if set, else the source tree's
// harness/workloads.
std::filesystem::path workloads_dir();

struct StorageSuiteOptions {
  std::filesystem::path out;
  bool quick = false;  // each entry's quick settings
  const std::atomic<bool>* stop = nullptr;
  std::function<void(const std::string&)> log;  // a line of progress
};

// The experiment entries of the storage section's `entries` (those of other kinds are left to
// their sections). An entry that fails is logged and left out; the count of failures is added to
// `failed`. An entry whose need (nginx) is missing is skipped with a line saying why.
std::vector<nlohmann::json> run_storage_suite(const StorageSuiteOptions& options,
                                              const std::vector<const SuiteEntry*>& entries,
                                              int& failed);

}  // namespace pipeprof::harness::workload
