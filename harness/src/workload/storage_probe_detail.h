// The storage probe's helpers shared by its files (storage_probe.cc: the passes and the curve;
// storage_probe_cpu.cc: what a sample costs this client's CPU). Not part of the harness's API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pipeprof/pipelines/iterator.h"
#include "workload/dlio_workload.h"
#include "workload/storage_probe.h"

namespace pipeprof::harness::workload::probe_detail {

bool stopped(const ProbeOptions& o);
// `count` names taken evenly across `files`.
std::vector<std::string> evenly(const std::vector<std::string>& files, size_t count);
// Local files into the page cache (plain reads).
void read_warm(const std::vector<std::string>& files, const ProbeOptions& o);
// The workload as the probe's loaders run it over `files` split among `loaders`: `threads` reader
// threads each, the workload's batch where a loader's share fills one, no shuffle, no preprocess
// sleep, no step limit.
DlioWorkload probe_loader(const DlioWorkload& w, size_t files, int64_t loaders, int64_t threads);
// Loader `index` of `loaders` over its shard of `files`, reading through o.storage.
std::unique_ptr<pipelines::Iterator> open_probe_loader(const DlioWorkload& c,
                                                       const std::vector<std::string>& files,
                                                       int64_t index, int64_t loaders,
                                                       const ProbeOptions& o);

// The workload's own loader's CPU time per sample over `files` (storage_probe_cpu.cc).
double loader_cpu_us_per_sample(const DlioWorkload& w, const std::vector<std::string>& files,
                                const ProbeOptions& o);

// The training loop's figure (storage_probe_cpu.cc, where it is described).
struct LoopFigure {
  double us = 0;       // per sample; 0: not measured
  double busy_us = 0;  // of it, the process's CPU time
  int64_t accelerators = 0;
  size_t files = 0;  // the distinct files read
};
LoopFigure loop_cpu_us_per_sample(const DlioWorkload& w, const std::vector<std::string>& all,
                                  size_t most_files, double loader_us, int64_t cores,
                                  const ProbeOptions& o);

}  // namespace pipeprof::harness::workload::probe_detail
