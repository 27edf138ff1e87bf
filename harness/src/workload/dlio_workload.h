// A DLIO workload file (the YAML that DLIO and MLPerf Storage run), read as DLIO reads it: every
// key its configuration loader knows, with DLIO's defaults, its older spellings (`data_reader` for
// `reader`, `record_length` beside `record_length_bytes`), numbers written as floats, and time
// values as numbers or distributions (pipelines/time_distribution.h). Keys DLIO does not know are
// warnings naming them; values that cannot be used are InputErrors naming the file and the key.
//
// pipeprof extensions, which DLIO ignores: `reader.read_threads: autotune` (the online tuner picks
// the reader parallelism and prefetch), and a top-level `pipeprof` section with `scale`, the
// fraction of the dataset's files a run uses unless --scale says otherwise (the shipped MLPerf
// workloads carry one that fits a small machine), and `remote` (RemoteSettings: the dataset read
// from an object server).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pipeprof/pipelines/datagen.h"
#include "pipeprof/pipelines/remote.h"
#include "pipeprof/pipelines/time_distribution.h"
#include "workload/dlio_checkpoint.h"

namespace YAML {
class Node;  // yaml-cpp's, for read_workload (workload/dlio_yaml.h includes the library)
}

namespace pipeprof::harness::workload {

enum class Loader { kPyTorch, kTensorFlow };

// pipeprof.remote: the dataset folder served by an object server (nginx on 127.0.0.1, started for
// the run) and read over HTTP in one of EXPERIMENTS.md's C2 ways.
enum class RemoteMode {
  kNone,       // local files
  kCopyFirst,  // copy every file to local disk (copy_threads in parallel), then train locally
  kDirect,     // every epoch reads every file over HTTP
  kCached,     // through a read-through disk cache (optionally preloaded)
  // C3: sampler processes write fetched samples as TFRecord shards into a local folder; every
  // epoch trains on the shards complete at its start (growing_run.h)
  kGrowingCache,
};
struct RemoteSettings {
  RemoteMode mode = RemoteMode::kNone;
  double latency_ms = 20;    // time to first byte per request
  double rate_mib_s = 0;     // bytes/s per request (0: unlimited)
  bool preload = false;      // cached: fetch the file list ahead, in parallel with training
  // cached: 0: the training files' size plus 10%; growing_cache: the shards' disk budget (0: none)
  double cache_budget_mib = 0;
  int64_t copy_threads = 8;     // copy_first: requests in flight; cached: preload threads
  std::string cache_dir;        // cached: empty: <output folder>/remote_cache
  bool keep_cache = false;      // cached: reuse what an earlier run left (a warm start)
  int64_t samplers = 4;         // growing_cache: sampler processes
  int64_t shard_samples = 64;   // growing_cache: samples per shard
};
std::string_view remote_mode_name(RemoteMode mode);

struct DlioWorkload {
  std::string file;        // the workload file as given
  std::string name;        // model.name, else the file's stem
  std::string framework = "tensorflow";
  Loader loader = Loader::kTensorFlow;  // reader.data_loader (DLIO's default: tensorflow)

  // workflow
  bool generate_data = false;
  bool train = true;
  bool evaluation = false;
  bool checkpoint = false;

  pipelines::formats::DlioDataset dataset;
  bool dataset_has_stdev = false;

  // reader
  int64_t batch_size = 1;
  int64_t batch_size_eval = 1;
  int64_t read_threads = 1;
  bool read_threads_autotune = false;
  int64_t computation_threads = 1;
  int64_t prefetch_size = 2;
  bool file_shuffle = false;
  bool sample_shuffle = false;
  int64_t shuffle_size = 1024;
  std::optional<int64_t> transfer_size;
  bool dont_use_mmap = false;
  bool odirect = false;
  pipelines::TimeDistribution preprocess_time;

  // train
  int64_t epochs = 1;
  pipelines::TimeDistribution computation_time;
  int64_t total_training_steps = -1;
  int64_t seed = 123;
  bool seed_change_epoch = true;

  // evaluation
  pipelines::TimeDistribution eval_time;
  int64_t eval_after_epoch = 1;
  int64_t epochs_between_evals = 1;

  // output and metric
  std::string output_folder;  // output.folder; empty: the command's default
  std::string log_file = "dlio.log";
  int64_t exclude_start_steps = 1;
  int64_t exclude_end_steps = 0;
  double au = 0.90;  // metric.au: the AU an accelerator must keep (a fraction)

  // model and checkpoint (workflow.checkpoint; dlio_checkpoint.h)
  ModelSettings model;
  CheckpointSettings checkpoint_settings;

  double scale = 1;  // pipeprof.scale
  RemoteSettings remote;  // pipeprof.remote
  // storage.storage_type: s3. The dataset and the checkpoints are then s3:// objects: a
  // data_folder or checkpoint_folder without a scheme is a prefix in the bucket storage_root;
  // storage_options give the endpoint (the first of a comma-separated list, or rank r's
  // endpoints[r % N] under mpirun), the key pair, the region, path-style URLs and the attempts.
  bool s3 = false;
  std::string storage_root;
  std::vector<std::string> s3_endpoints;
  pipelines::S3Options s3_options;
  int s3_max_attempts = 5;

  std::vector<std::string> warnings;  // unknown keys, settings that are not emulated
};

// Reads `file` with `overrides` (Hydra's grammar: see apply_overrides in dlio_yaml.h) applied.
// Throws InputError naming the file and the key.
DlioWorkload load_workload(const std::string& file, const std::vector<std::string>& overrides = {});
// The same for `root`, the document load_yaml_mapping (dlio_yaml.h) read from `file`, for a caller
// that reads parts of the file itself: the file is parsed once.
DlioWorkload read_workload(const std::string& file, const YAML::Node& root);

// Scales the dataset to `scale` of its files (train and eval; at least one file each where the
// workload has any). Throws InputError for a scale outside (0, 1].
void apply_scale(DlioWorkload& w, double scale);

// DLIO's steps per epoch: floor(num_samples_per_file * num_files_train / batch_size / ranks), at
// most total_training_steps when that is set.
int64_t steps_per_epoch(const DlioWorkload& w, int64_t ranks);

// Bytes per sample as DLIO reports I/O (record_length, its mean; MB/s = samples/s x this / 2^20).
double record_bytes(const DlioWorkload& w);

std::string loader_name(Loader loader);

}  // namespace pipeprof::harness::workload
