// The suite's storage section (EXPERIMENTS.md C1): the shipped MLPerf Storage workloads
// (unet3d, resnet50, cosmoflow; H100 settings at the scale their files state) run on one simulated
// accelerator each, and the loader comparison: npz_256k's most accelerators at AU >= 90% with
// pipeprof, and with PyTorch's DataLoader (harness/peers/pytorch_dataloader.py) where Debian's
// python3-torch is installed. Datasets are generated under OUT/data (kept: a second suite reuses
// them). Then the remote experiments (C2: remote_copy_first, remote_direct, remote_cached, with and
// without preloading) on one dataset served by nginx, where nginx is installed. Each run is an
// experiment entry with its "workload" object, for results.json and the report's storage section.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace pipeprof::harness::workload {

// The shipped workload files: $PIPEPROF_WORKLOADS if set, else the source tree's
// harness/workloads.
std::filesystem::path workloads_dir();
// The PyTorch peer: $PIPEPROF_PEER if set, else the source tree's
// harness/peers/pytorch_dataloader.py.
std::filesystem::path pytorch_peer();

struct StorageSuiteOptions {
  std::filesystem::path out;
  bool quick = false;  // one epoch each, and smaller searches
  const std::atomic<bool>* stop = nullptr;
  std::function<void(const std::string&)> log;  // a line of progress
};

// The experiment entries of the storage section. A workload that fails is logged and left out;
// the count of failures is added to `failed`.
std::vector<nlohmann::json> run_storage_suite(const StorageSuiteOptions& options, int& failed);

}  // namespace pipeprof::harness::workload
