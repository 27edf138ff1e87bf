// `pipeprof predict --probe`: measures the storage behind a workload's data folder (a local
// folder, http(s)://, s3://) and this client, as a storage profile (predict.h).
//
//   bandwidth   k = 1, 2, 4, ... streams: the workload's own loaders with k reader threads in all
//               (probe_pass) over its training files, so that each file is read as the
//               workload reads it, for a time-boxed pass each (cold: the files
//               dropped from the page cache before every pass; warm: read once first, when they
//               fit in half the memory), until two doublings in a row gain less than 5% and
//               the streams reach what the plateau would feed at the workload's demand, or
//               `max_streams`; the process's CPU time per MiB in each pass (a cold pass
//               beside a warm one: what a cold read costs this client's cores), and how long
//               its loaders, started together, waited on the mean for the last one's first batch
//               (what DLIO's barrier after a run's first step costs; the median of three starts,
//               the pass's and two alone, each cold where the pass is)
//   first byte  open + the first 4 KiB of up to 64 files, one stream, cold
//   requests/s  4 KiB reads of the files' heads on 16 streams
//   CPU         the workload's loader alone (one accelerator) over a few files in the page cache,
//               then (local files that fit in half the memory) its training loop with half again
//               as many accelerators as that could feed, over the probe's files (three runs: the
//               first, which pays its buffers' first touches, left out): what a sample costs the
//               client's cores near its limit
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "workload/dlio_workload.h"
#include "workload/predict.h"

namespace pipeprof::pipelines {
class StorageContext;
}

namespace pipeprof::harness::workload {

struct ProbeOptions {
  int64_t max_streams = 512;  // the probe stops earlier where the curve levels off
  double pass_seconds = 1.5;      // at most, per pass (a pass also ends when the files run out)
  int64_t max_bytes = int64_t{4} << 30;  // the files a pass may read (every k-th file beyond it)
  bool warm = true;                      // also the warm curve (local files that fit in memory)
  const std::atomic<bool>* stop = nullptr;
  std::shared_ptr<const pipelines::StorageContext> storage;  // how to read (null: the defaults)
  std::function<void(const std::string&)> on_progress;       // a line per measurement
  // The local files behind the server the probe reads through (ProbedStorage::served_files):
  // read into this machine's page cache before the first pass where they fit in half its memory,
  // as a run finds them after its first epoch (the server reads them through that cache).
  std::vector<std::string> served_files;
};

// Probes the storage of `w`'s training files. Throws InputError naming the folder or URL when the
// files cannot be listed or read. With `stop` set, returns what it measured so far (notes say so).
StorageProfile probe_storage(const DlioWorkload& w, const ProbeOptions& options);

// Whether a bandwidth curve ends at its last point (the pass just measured): its last two
// doublings each gained less than 5%, it reached `at_least` streams, and it covers the streams its
// highest point would feed at `stream_mib` MiB/s a stream (the workload's demand at metric.au over
// its reader threads; 0: not known, the plateau alone ends it).
bool curve_ends(const std::vector<BandwidthPoint>& c, int64_t at_least, double stream_mib);

// What a sample costs this client when it reads remote objects: the loader's own calibration
// (`loader_us`), or where lower the cold curve's CPU per MiB at one loader's streams (`streams`)
// times the MiB a sample reads: that pass ran the same loader over the same server, measured over
// its steady state, and a machine's other load only adds to a process's CPU time.
double remote_cpu_us_per_sample(double loader_us, const std::vector<BandwidthPoint>& cold,
                                double streams, double mib_per_sample);

// What one bandwidth pass measured.
struct PassFigures {
  double mib_per_s = 0;
  double cpu_us_per_mib = 0;  // the process's CPU time per MiB over the same span (0: not measured)
  double start_wait_ms = 0;   // each loader's wait, on the mean, from its first batch to the last one's
  int64_t bytes = 0;          // what the loaders read, start included
};

// One bandwidth pass: `streams` reader threads as the workload's accelerators run them (loaders of
// read_threads threads each, every one over its shard of `files`; the workload's batch where a
// shard fills one, no shuffle, no preprocess sleep), all started together, for at most `seconds`
// or until the files are read. As a run's accelerators meet at the barrier after their first
// step, each loader's consumer waits after its first batch until every loader has one (its loader
// reads ahead into its buffer meanwhile): MiB/s of samples from that moment on, the batches
// buffered by then left out (the whole pass where that leaves less than a quarter of it). Throws
// what a loader throws (a file that cannot be read or parsed).
PassFigures probe_pass(const DlioWorkload& w, const std::vector<std::string>& files, int64_t streams,
                       double seconds, const ProbeOptions& options);

// A pass's start alone: the loaders start as probe_pass's do and end once every one has its first
// batch (start_wait_ms and bytes; no bandwidth). The probe measures each stream count's start
// kStartMeasures times, each of its passes' own included, and keeps the median.
PassFigures probe_start(const DlioWorkload& w, const std::vector<std::string>& files,
                        int64_t streams, const ProbeOptions& options);
inline constexpr size_t kStartMeasures = 3;

// A pass that reads more than 5% less than the point before it (fewer streams) is measured again,
// kPassMeasures passes in all, and the one of median MiB/s is kept (with its CPU per MiB; of two,
// when a pass again read nothing, the higher: the first was the suspect one): a single pass at
// many streams on a machine whose cores the server shares can read half of what the passes around
// it read (369 MiB/s at 256 streams between 668 at 128 and 811 at 512), and the prediction reads
// the curve between its points. A curve that rises is taken as measured.
inline constexpr size_t kPassMeasures = 3;
bool measure_again(const std::vector<BandwidthPoint>& so_far, double mib_per_s);
// The pass of median MiB/s (the upper middle one of an even count); `passes` not empty.
PassFigures median_pass(std::vector<PassFigures> passes);

}  // namespace pipeprof::harness::workload
