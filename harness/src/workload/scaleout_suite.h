// The suite's scale-out section (EXPERIMENTS.md C4): the manifest's scaleout entries
// (suite_manifest.h; tf.data's old and new ImageNet input pipelines, harness/scaleout/dell_old.json
// and dell_new.json) on ImageNet-like TFRecord shards with real JPEG decoding and augmentation, each
// run by `mpirun -np N pipeprof run` at the entry's rank counts (1, 2 and 4: one process per
// simulated GPU, as Horovod runs). Per pipeline one experiment entry (the
// 4-rank run's rank 0 result) with a "scaleout" object: per rank count the images/s in total and
// per rank, the scaling efficiency (images/s at N / (N x images/s at 1)) and AU per rank. Skipped,
// with a line saying so, where mpirun is not installed.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "workload/suite_manifest.h"

namespace pipeprof::harness::workload {

// The spec templates: $PIPEPROF_SCALEOUT if set, else the source tree's harness/scaleout.
std::filesystem::path scaleout_dir();
// mpirun on the PATH ("" when there is none).
std::string find_mpirun();

struct ScaleoutOptions {
  std::filesystem::path out;  // data in OUT/data/imagenet_like, runs in OUT/scaleout
  bool quick = false;         // fewer images and one repetition
  const std::atomic<bool>* stop = nullptr;
  std::function<void(const std::string&)> log;
};

// The entries of kind scaleout among `entries` (the others are left to their sections).
std::vector<nlohmann::json> run_scaleout_suite(const ScaleoutOptions& options,
                                               const std::vector<const SuiteEntry*>& entries,
                                               int& failed);

}  // namespace pipeprof::harness::workload
