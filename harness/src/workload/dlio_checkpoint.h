// DLIO's checkpointing (MLPerf Storage's checkpoint workloads; planned in dlio_checkpoint_plan.cc,
// written and read in dlio_checkpoint.cc): each rank's share of a model's
// state and its optimizer's, sized exactly as DLIO sizes them, written as DLIO names the files,
// and read back.
//
// Sizing (a transformer: model.num_layers, model.transformer.*): the parameters are
//   N = 2 x vocab x h + h + L x (2h + h(h + 2 dim_kv) + h^2 + 3 h ffn),  dim_kv = h / heads x kv_heads
// Layers are numbered 0 (embedding) .. L+2 (the final norm), L+1 the output head; pipeline rank p
// holds a contiguous run of them (the first rank from layer 0, the last to L+2). A layer's tensors
// are split over the tensor-parallel ranks (and, with ZeRO 3, over the data-parallel ranks), in
// model.model_datatype. The optimizer state of a rank is [n, 5h, n, 5h, n, 5h] elements of
// model.optimizer_datatype with n = N / (dp x mp) under ZeRO >= 1 and N / mp under ZeRO 0
// (mp = tensor x pipeline). Under ZeRO 0 only the first data-parallel replica (ranks < mp) writes.
// Files per rank, in `<checkpoint_folder>/global_epoch<E>_step<S>/`:
//   ZeRO 1, 2 (data-parallel rank 0): layer_<i>-model_<mp>_model_states.pt per layer (pipeline > 1)
//                                     or model_<mp>_model_states.pt
//   ZeRO 0, 3: zero_pp_rank_<dp>_mp_rank_<mp>_model_states.pt
//   every writing rank: zero_pp_rank_<dp>_mp_rank_<mp>_optim_states.pt
//   models other than transformers: model_states-<rank>.pt of model.model_size_bytes (and, as in
//   DLIO, the layers above when they set num_layers, sized with the transformer keys' defaults)
// The checkpoint's size (DLIO's checkpoint_size_GB) is the model and optimizer bytes the ranks
// hold, in GiB, as DLIO counts them: model_size_bytes once, not per rank; DLIO's older
// layer_parameters and optimization_groups not at all; ZeRO 2's layers on every data-parallel
// rank though only the first writes them. checkpoint.mode subset sizes the ranks of a job of
// model.parallelism.data replicas of which this run is the first ranks. A checkpoint that holds
// nothing (a transformer without num_layers) is refused.
//
// Where pipeprof differs from DLIO's code: checkpoint.fsync and checkpoint.recovery_rank_shift
// take effect (DLIO's configuration loader stores them under misspelled names, so they never do);
// the files hold the tensors' bytes without torch.save's few hundred bytes of pickle; and the read
// phase starts cold (the files dropped from the page cache, as MLPerf Storage's rules require).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "pipeprof/harness/cluster.h"
#include "pipeprof/pipelines/remote.h"
#include "pipeprof/results/records.h"

namespace pipeprof::harness::workload {

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;  // DLIO's "GB"

struct DlioWorkload;
class Section;

// The `model` section as DLIO reads it for checkpoints (its defaults).
struct ModelSettings {
  std::string type;  // "transformer" or another name ("" when not given)
  int64_t num_layers = -1;
  int64_t model_size_bytes = 10240;  // non-transformer models: one tensor of this many bytes
  std::string model_datatype = "fp16", optimizer_datatype = "fp32";
  int64_t tensor = 1, pipeline = 1, data = -1;  // parallelism (data -1: ranks / (tensor x pipeline))
  int64_t zero_stage = 0;
  int64_t vocab_size = 32000, hidden_size = 2048, ffn_hidden_size = 8192;
  int64_t num_attention_heads = 32, num_kv_heads = 8;
  std::vector<int64_t> layer_parameters;     // DLIO's older form: elements per tensor of a layer
  std::vector<int64_t> optimization_groups;  // DLIO's older form: elements per optimizer group
};

// The `checkpoint` section (DLIO's defaults).
struct CheckpointSettings {
  std::string folder = "./checkpoints";
  int64_t after_epoch = 1;
  int64_t epochs_between = 1;
  int64_t steps_between = -1;     // > 0: every that many steps of an epoch (epochs then ignored)
  double time_between_s = -1;     // checkpoint-only: the emulated compute before each write
  int64_t num_write = -1, num_read = -1;
  bool fsync = false;
  bool all_ranks = false;  // type: rank_zero (DLIO's default) or all_ranks; sizing ignores it
  bool subset = false;     // mode: default or subset
  bool recovery_rank_shift = false;
  bool rank_sync = false;      // a barrier after each write and read, before its end is taken
  bool randomize_tensor = true;
};

// Reads the model and checkpoint sections into w.model and w.checkpoint_settings (values that
// cannot be used: InputError naming the file and key; keys DLIO does not know: warnings).
void read_checkpoint_sections(DlioWorkload& w, const Section& model, const Section& checkpoint);

struct CheckpointFile {
  std::string name;  // within the checkpoint's folder ("zero_pp_rank_0_mp_rank_0_optim_states.pt")
  int64_t bytes = 0;
};

struct RankShare {
  int64_t rank = 0, tp_rank = 0, pp_rank = 0, dp_rank = 0;
  std::vector<CheckpointFile> files;
  int64_t model_bytes = 0, optimizer_bytes = 0;  // what DLIO counts in the checkpoint's size
  int64_t bytes() const;                         // the files' bytes
};

struct CheckpointPlan {
  int64_t ranks = 0;
  int64_t tensor = 1, pipeline = 1, data = 1;  // data: the replicas (subset: model.parallelism.data)
  int64_t zero_stage = 0;
  bool subset = false;
  int64_t parameters = 0;  // N (transformers)
  std::string folder;      // checkpoint.checkpoint_folder
  std::vector<RankShare> per_rank;
  int64_t model_bytes = 0, optimizer_bytes = 0;  // sums over the ranks
  int64_t file_bytes() const;                    // every rank's files
  int64_t files() const;
  double size_gib() const;  // DLIO's checkpoint_size_GB: (model + optimizer bytes) / 2^30
};

// The checkpoint of `ranks` ranks. Throws InputError naming the file and key for what DLIO's
// validation refuses (ranks not a multiple of tensor x pipeline, layers fewer than pipeline
// stages, ZeRO 3 with pipeline parallelism, data parallelism in default mode, ...).
CheckpointPlan plan_checkpoint(const DlioWorkload& w, int64_t ranks);

// Refuses (InputError naming checkpoint.checkpoint_folder, the bytes needed and free) `count`
// checkpoints of this process's ranks that the folder's file system has no room for, before any
// is written. Local folders only.
void check_room(const CheckpointPlan& plan, int64_t count, int64_t first_rank, int64_t local_ranks);

// "global_epoch<E>_step<S>": a checkpoint's folder within checkpoint_folder.
std::string checkpoint_id(int64_t epoch, int64_t step);

// The checkpoint's folder for (epoch, step).
std::string checkpoint_path(const CheckpointPlan& plan, int64_t epoch, int64_t step);

// Where checkpoints are taken during training, as DLIO takes them: after step S of an epoch when
// checkpoint.steps_between_checkpoints > 0 (S = k x that), else after the epochs from
// checkpoint_after_epoch every epochs_between_checkpoints (step: the epoch's steps + 1).
bool checkpoint_after_step(const DlioWorkload& w, int64_t step);
bool checkpoint_after_epoch(const DlioWorkload& w, int64_t epoch);

// One save or load of a checkpoint by this process's ranks.
struct CheckpointOp {
  bool save = true;
  int64_t epoch = 0, step = 0;
  int64_t index = 0;  // DLIO's block: 1, 2, ... per kind
  std::vector<int64_t> ranks;           // the ranks that took part (this process's)
  std::vector<double> seconds;          // per rank: its barrier-to-end time
  std::vector<int64_t> bytes;           // per rank
  int64_t start_ns = 0, end_ns = 0;     // the first start, the last end (trace clock)
};

// The operations of every process merged into one per checkpoint (its ranks together, the first
// start and the last end; under mpirun those are on each process's own clock, so only rank 0's
// durations are exact across hosts), in the order they began.
std::vector<CheckpointOp> merge_ops(const std::vector<CheckpointOp>& ops);

struct CheckpointIoOptions {
  bool direct = false;                       // O_DIRECT (reader.odirect)
  size_t buffer_bytes = size_t{64} << 20;    // per write / read call
  const std::atomic<bool>* stop = nullptr;   // Ctrl-C: a write in progress is dropped
  // Object storage (an S3 workload's settings); nullptr: local folders.
  std::shared_ptr<const pipelines::StorageContext> storage;
};

// Writes and reads the checkpoints of this process's ranks (first_rank .. first_rank + local - 1
// of plan.ranks), each rank on its own thread calling save / load. Every write and read is a trace
// span (on the calling thread's lane, category "checkpoint").
class CheckpointIo {
 public:
  CheckpointIo(const CheckpointPlan& plan, const CheckpointSettings& settings, int64_t first_rank,
               int64_t local_ranks, CheckpointIoOptions options);

  // Rank `rank` writes its files of checkpoint (epoch, step). Throws IoError (a full disk, ...)
  // naming the file; nothing partial is left under a final name. `sync`, when given, runs before
  // the end is taken (checkpoint.rank_sync: a barrier of the ranks). A stop (Ctrl-C) drops the
  // file being written and records nothing: the operation is then incomplete.
  void save(int64_t rank, int64_t epoch, int64_t step, int64_t index, int64_t start_ns,
            const std::function<void()>& sync = {});
  // Rank `rank` reads its files back. A file that is missing or whose size is not the one the
  // plan gives: InputError naming it (bad input: a checkpoint of another run), or RunFailure when
  // `written_here` (the storage lost what this run wrote).
  void load(int64_t rank, int64_t epoch, int64_t step, int64_t index, int64_t start_ns,
            bool written_here = false, const std::function<void()>& sync = {});
  // Drops this process's ranks' files of (epoch, step) from the page cache (a cold read).
  void drop_from_page_cache(int64_t epoch, int64_t step) const;

  std::vector<CheckpointOp> ops() const;  // in the order they began

 private:
  void record(bool save, int64_t rank, int64_t epoch, int64_t step, int64_t index,
              int64_t start_ns, int64_t end_ns, int64_t bytes);
  const RankShare& share(int64_t rank) const;

  const CheckpointPlan& plan_;
  CheckpointSettings settings_;
  int64_t first_rank_, local_ranks_;
  CheckpointIoOptions options_;
  mutable std::mutex mutex_;
  std::vector<CheckpointOp> ops_;
};

// A checkpoint-only run (workflow.checkpoint without workflow.train): num_checkpoints_write
// checkpoints written (global_epoch1_step1 ..), each after checkpoint.time_between_checkpoints of
// emulated compute, then num_checkpoints_read of them read, cold. Ranks meet at a barrier before
// every write and read (and after, with rank_sync); under mpirun across processes too.
struct CheckpointRun {
  std::vector<CheckpointOp> ops;
  bool interrupted = false;
};
CheckpointRun run_checkpoints(const DlioWorkload& w, const CheckpointPlan& plan, int64_t first_rank,
                              int64_t local_ranks, cluster::Cluster* cluster,
                              const CheckpointIoOptions& options,
                              const std::function<void(const std::string&)>& on_progress);

// Every rank's operations together (rank 0 gathers the others' under mpirun), as results.json
// holds them, with DLIO's and MLPerf's figures (records.h CheckpointRecord). An operation that not
// every rank finished (Ctrl-C) is left out of the figures.
results::CheckpointRecord checkpoint_record(const DlioWorkload& w, const CheckpointPlan& plan,
                                            const std::vector<CheckpointOp>& ops);

// This process's operations as text for cluster::gather, and back.
std::string ops_to_text(const std::vector<CheckpointOp>& ops);
std::vector<CheckpointOp> ops_from_text(const std::string& text);

// --dry-run's account of the checkpoint (per rank, in all) as lines of text.
std::string describe_plan(const DlioWorkload& w, const CheckpointPlan& plan);

}  // namespace pipeprof::harness::workload
