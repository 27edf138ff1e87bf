// DLIO's checkpoints (workload/dlio_checkpoint.h): each rank's share sized and named as DLIO does
// (the llama3 files at MLPerf Storage's process counts give its published sizes), DLIO's
// refusals, when training checkpoints, and the writes and reads: sizes checked, a missing or
// truncated file named with its expected size, a full disk named and nothing partial left.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "pipeprof/harness/errors.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof_testing/temp_dir.h"
#include "workload/dlio_checkpoint.h"
#include "workload/dlio_training.h"
#include "workload/dlio_workload.h"

namespace pipeprof::harness::workload {
namespace {

using pipeprof::testing_support::TempDir;
namespace fs = std::filesystem;

DlioWorkload llama(const std::string& size, const std::vector<std::string>& overrides = {}) {
  return load_workload(std::string(PIPEPROF_WORKLOADS_DIR) + "/llama3_" + size + ".yaml", overrides);
}

std::string plan_error(const DlioWorkload& w, int64_t ranks) {
  try {
    (void)plan_checkpoint(w, ranks);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError for " << ranks << " ranks";
  return {};
}

std::string load_error(const std::string& file, const std::vector<std::string>& overrides) {
  try {
    (void)load_workload(file, overrides);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError";
  return {};
}

// MLPerf Storage's published checkpoint sizes (GiB, as DLIO's checkpoint_size_GB) at its process
// counts: 8B 105, 70B 912, 405B 5.29 thousand.
TEST(CheckpointPlan, LlamaFilesAtMlperfProcessCountsGiveThePublishedSizes) {
  struct Case {
    const char* size;
    int64_t ranks;
    double gib;
    int64_t parameters;
  };
  for (const Case& c : {Case{"8b", 8, 104.70, 8'030'261'248}, Case{"70b", 64, 911.21, 69'882'617'856},
                        Case{"405b", 512, 5292.25, 405'853'388'800}}) {
    const DlioWorkload w = llama(c.size);
    EXPECT_TRUE(w.checkpoint && !w.train) << c.size;
    const CheckpointPlan plan = plan_checkpoint(w, c.ranks);
    EXPECT_EQ(plan.parameters, c.parameters) << c.size;
    EXPECT_NEAR(plan.size_gib(), c.gib, 0.005) << c.size;
  }
  // MLPerf's 1T file (192 heads, 32 kv heads) and DLIO's older one (32 and 32).
  EXPECT_NEAR(plan_checkpoint(llama("1t"), 1024).size_gib(), 15426.59, 0.005);
  EXPECT_NEAR(plan_checkpoint(llama("1t", {"++workload.model.transformer.num_attention_heads=32",
                                           "++workload.model.transformer.num_kv_heads=32"}),
                              1024)
                  .size_gib(),
              17289.14, 0.005);
}

TEST(CheckpointPlan, NamesAndSizesEachRanksFilesAsDlioDoes) {
  // 8B, ZeRO 3 on 8 ranks: every rank its model shard and its optimizer shard.
  const CheckpointPlan p8 = plan_checkpoint(llama("8b"), 8);
  ASSERT_EQ(p8.per_rank.size(), 8U);
  for (const RankShare& r : p8.per_rank) {
    ASSERT_EQ(r.files.size(), 2U);
    EXPECT_EQ(r.files[0].name, fmt::format("zero_pp_rank_{}_mp_rank_0_model_states.pt", r.rank));
    EXPECT_EQ(r.files[0].bytes, 2'007'565'312);
    EXPECT_EQ(r.files[1].name, fmt::format("zero_pp_rank_{}_mp_rank_0_optim_states.pt", r.rank));
    EXPECT_EQ(r.files[1].bytes, 12'045'637'632);
  }
  // 405B, tensor 8 x pipeline 32, ZeRO 1: the first data-parallel replica writes the layers (one
  // file each), pipeline rank 0 from the embedding (layer 0), the last to the final norm (128).
  const CheckpointPlan p405 = plan_checkpoint(llama("405b"), 512);
  const RankShare& first = p405.per_rank[0];
  ASSERT_EQ(first.files.size(), 6U);
  EXPECT_EQ(first.files[0].name, "layer_0-model_0_model_states.pt");
  EXPECT_EQ(first.files[0].bytes, 16384LL * 128256 / 8 * 2);
  EXPECT_EQ(first.files[4].name, "layer_4-model_0_model_states.pt");
  EXPECT_EQ(first.files[5].name, "zero_pp_rank_0_mp_rank_0_optim_states.pt");
  const RankShare& last_stage = p405.per_rank[31 * 8 + 3];  // pipeline rank 31, tensor rank 3
  EXPECT_EQ(last_stage.pp_rank, 31);
  EXPECT_EQ(last_stage.files.front().name, "layer_124-model_251_model_states.pt");
  EXPECT_EQ(last_stage.files[last_stage.files.size() - 2].name, "layer_128-model_251_model_states.pt");
  const RankShare& second_replica = p405.per_rank[256];  // data-parallel rank 1: optimizer only
  ASSERT_EQ(second_replica.files.size(), 1U);
  EXPECT_EQ(second_replica.files[0].name, "zero_pp_rank_1_mp_rank_0_optim_states.pt");
  EXPECT_EQ(second_replica.model_bytes, 0);
}

TEST(CheckpointPlan, ZeroStageZeroWritesTheFirstReplicaAndOtherModelsOneTensor) {
  const TempDir tmp;
  const auto zero0 = llama("8b", {"++workload.model.parallelism.zero_stage=0",
                                  "++workload.model.parallelism.tensor=2"});
  const CheckpointPlan p = plan_checkpoint(zero0, 8);
  for (const RankShare& r : p.per_rank)
    EXPECT_EQ(r.files.empty(), r.rank >= 2) << r.rank;  // ranks < tensor x pipeline
  // A model that is not a transformer: model_states-<rank>.pt of model_size bytes from rank 0.
  const auto cnn = tmp.write("cnn.yaml",
                             "model:\n  name: unet3d\n  type: cnn\n  model_size: 499153191\n"
                             "framework: pytorch\nworkflow:\n  train: False\n  checkpoint: True\n");
  const CheckpointPlan c = plan_checkpoint(load_workload(cnn.string()), 4);
  ASSERT_EQ(c.files(), 1);
  EXPECT_EQ(c.per_rank[0].files[0].name, "model_states-0.pt");
  EXPECT_EQ(c.per_rank[0].files[0].bytes, 499153191);
  EXPECT_NEAR(c.size_gib(), 499153191 / 1073741824.0, 1e-9);
}

TEST(CheckpointPlan, DliosRefusalsNameTheKey) {
  EXPECT_NE(plan_error(llama("70b"), 12).find("not a multiple of tensor x pipeline = 8"),
            std::string::npos);
  const std::string file = std::string(PIPEPROF_WORKLOADS_DIR) + "/llama3_405b.yaml";
  EXPECT_NE(load_error(file, {"++workload.model.parallelism.zero_stage=3"})
                .find("model.parallelism.zero_stage: ZeRO stage 3 is not compatible"),
            std::string::npos);
  EXPECT_NE(load_error(file, {"++workload.model.parallelism.data=2"})
                .find("model.parallelism.data: set only with checkpoint.mode: subset"),
            std::string::npos);
  EXPECT_NE(load_error(file, {"++workload.checkpoint.num_checkpoints_read=11"})
                .find("checkpoint.num_checkpoints_read"),
            std::string::npos);
  EXPECT_NE(load_error(file, {"++workload.model.model_datatype=fp8"}).find("model.model_datatype"),
            std::string::npos);
  EXPECT_NE(load_error(file, {"++workload.model.num_layers=16"}).find("model.num_layers"),
            std::string::npos);
  // Values whose products would not fit in 64 bits, and a checkpoint of nothing.
  EXPECT_NE(load_error(file, {"++workload.model.parallelism.tensor=4294967296"})
                .find("model.parallelism.tensor: expected at most 65536"),
            std::string::npos);
  EXPECT_NE(load_error(file, {"++workload.model.transformer.num_kv_heads=1000000000000000"})
                .find("model.transformer.num_kv_heads"),
            std::string::npos);
  EXPECT_NE(plan_error(llama("8b", {"~workload.model.num_layers"}), 8).find("the checkpoint holds nothing"),
            std::string::npos);
  // Settings a workload that does not checkpoint never uses are not refused.
  EXPECT_NO_THROW(load_workload(file, {"++workload.workflow.checkpoint=False",
                                       "++workload.model.parallelism.zero_stage=3"}));
  // Subset: the first ranks of a job of `data` replicas.
  const auto subset = llama("70b", {"++workload.checkpoint.mode=subset",
                                    "++workload.model.parallelism.data=8"});
  const CheckpointPlan p = plan_checkpoint(subset, 8);
  EXPECT_TRUE(p.subset);
  EXPECT_NEAR(p.size_gib(), 113.90, 0.01);  // MLPerf's "8-process size" of 70B: 114 GB
  EXPECT_NE(plan_error(subset, 128).find("more than the job's 64"), std::string::npos);
}

TEST(CheckpointSchedule, AfterStepsOrEpochsAsDlioTakesThem) {
  const TempDir tmp;
  const auto f = tmp.write("w.yaml", "workflow:\n  train: True\n  checkpoint: True\n"
                                     "dataset:\n  num_files_train: 1\n  format: npz\n");
  DlioWorkload w = load_workload(f.string(), {"++workload.checkpoint.checkpoint_after_epoch=2",
                                              "++workload.checkpoint.epochs_between_checkpoints=3"});
  std::vector<int64_t> epochs;
  for (int64_t e = 1; e <= 9; ++e)
    if (checkpoint_after_epoch(w, e)) epochs.push_back(e);
  EXPECT_EQ(epochs, (std::vector<int64_t>{2, 5, 8}));
  EXPECT_FALSE(checkpoint_after_step(w, 3));
  w = load_workload(f.string(), {"++workload.checkpoint.steps_between_checkpoints=3"});
  EXPECT_TRUE(checkpoint_after_step(w, 3));
  EXPECT_TRUE(checkpoint_after_step(w, 6));
  EXPECT_FALSE(checkpoint_after_step(w, 4));
  EXPECT_FALSE(checkpoint_after_epoch(w, 1));  // steps set: epochs are not checkpointed
  w = load_workload(f.string(), {"++workload.checkpoint.steps_between_checkpoints=0"});
  EXPECT_FALSE(checkpoint_after_step(w, 1));  // DLIO: 0 never fires
  EXPECT_FALSE(checkpoint_after_epoch(w, 1));
}

// A small model's checkpoint in a temporary folder.
DlioWorkload small_model(const TempDir& tmp, const fs::path& folder) {
  const auto f = tmp.write(
      "small.yaml",
      "model:\n  name: small\n  type: transformer\n  num_layers: 2\n  parallelism:\n    "
      "zero_stage: 3\n  transformer:\n    vocab_size: 1000\n    hidden_size: 128\n    "
      "ffn_hidden_size: 256\n    num_attention_heads: 4\n    num_kv_heads: 4\n"
      "framework: pytorch\nworkflow:\n  train: False\n  checkpoint: True\ncheckpoint:\n  "
      "checkpoint_folder: " +
          folder.string() + "\n  num_checkpoints_write: 2\n  num_checkpoints_read: 2\n  fsync: True\n");
  return load_workload(f.string());
}

TEST(CheckpointIo, WritesEveryRanksFilesAndReadsThemBackColdWithTheirSizes) {
  const TempDir tmp;
  const DlioWorkload w = small_model(tmp, tmp / "ckpt");
  const CheckpointPlan plan = plan_checkpoint(w, 2);
  const CheckpointRun run = run_checkpoints(w, plan, 0, 2, nullptr, {.buffer_bytes = 1 << 16}, {});
  EXPECT_FALSE(run.interrupted);
  ASSERT_EQ(run.ops.size(), 4U);  // 2 saves, 2 loads, both ranks in each
  for (int64_t step = 1; step <= 2; ++step) {
    for (const RankShare& r : plan.per_rank) {
      for (const CheckpointFile& f : r.files) {
        const fs::path p = fs::path(checkpoint_path(plan, 1, step)) / f.name;
        ASSERT_TRUE(fs::exists(p)) << p;
        EXPECT_EQ(static_cast<int64_t>(fs::file_size(p)), f.bytes) << p;
      }
    }
  }
  const results::CheckpointRecord rec = checkpoint_record(w, plan, run.ops);
  ASSERT_EQ(rec.ops.size(), 4U);
  for (const results::CheckpointOpRecord& op : rec.ops) {
    EXPECT_EQ(op.ranks, 2);
    EXPECT_EQ(op.bytes, plan.file_bytes());
    EXPECT_GE(op.slowest_seconds, op.rank0_seconds);
    EXPECT_NEAR(op.gib_per_s, static_cast<double>(op.bytes) / 1073741824.0 / op.slowest_seconds, 1e-9);
    EXPECT_NEAR(op.dlio_gib_per_s, plan.size_gib() / op.rank0_seconds, 1e-9);
  }
  ASSERT_TRUE(rec.save_duration_mean_s && rec.load_duration_mean_s);
  EXPECT_NEAR(*rec.save_duration_mean_s, (rec.ops[0].rank0_seconds + rec.ops[1].rank0_seconds) / 2, 1e-12);

  // A truncated file: named with the size rank 1 expects; a missing one likewise.
  const RankShare& r1 = plan.per_rank[1];
  const fs::path victim = fs::path(checkpoint_path(plan, 1, 2)) / r1.files[0].name;
  fs::resize_file(victim, 1000);
  CheckpointIo io(plan, w.checkpoint_settings, 0, 2, {});
  try {
    io.load(1, 1, 2, 1, 0);
    FAIL() << "a truncated checkpoint was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(victim.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("holds 1000 bytes, rank 1's share is " +
                                         std::to_string(r1.files[0].bytes)),
              std::string::npos)
        << e.what();
  }
  // The same, of a checkpoint this run wrote: the storage lost it, a failed run (exit 1).
  EXPECT_THROW(io.load(1, 1, 2, 1, 0, true), RunFailure);
  fs::remove(victim);
  try {
    io.load(1, 1, 2, 1, 0);
    FAIL() << "a missing checkpoint was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(victim.string() + " is missing"), std::string::npos)
        << e.what();
  }
}

TEST(CheckpointIo, AFullDiskNamesTheFileAndLeavesNoCheckpointToRead) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a small tmpfs";
  const TempDir tmp;
  const fs::path dir = tmp / "small";
  fs::create_directories(dir);
  if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=256k") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  }
  struct Unmount {
    fs::path dir;
    ~Unmount() { ::umount2(dir.c_str(), MNT_DETACH); }
  } unmount{dir};
  const DlioWorkload w = small_model(tmp, dir / "ckpt");
  const CheckpointPlan plan = plan_checkpoint(w, 1);
  ASSERT_GT(plan.file_bytes(), 256 * 1024);
  // The room is checked before anything is written ...
  try {
    check_room(plan, 1, 0, 1);
    FAIL() << "no room was found";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("checkpoint.checkpoint_folder"), std::string::npos);
  }
  // ... and a write that fills the disk anyway names its file and leaves nothing under it.
  CheckpointIo io(plan, w.checkpoint_settings, 0, 1, {.buffer_bytes = 1 << 16});
  try {
    io.save(0, 1, 1, 1, 0);
    FAIL() << "the full disk went unnoticed";
  } catch (const pipelines::IoError& e) {
    EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(checkpoint_path(plan, 1, 1)), std::string::npos) << e.what();
  }
  for (const CheckpointFile& f : plan.per_rank[0].files)
    EXPECT_FALSE(fs::exists(fs::path(checkpoint_path(plan, 1, 1)) / f.name)) << f.name;
}

// csv and png (as jpeg and raw) are generated and read by the workload's reader
// (WorkloadCommand.ImageCsvAndRawFormatsAreGeneratedAndRead runs them).
TEST(DatasetFormat, ImagesAndCsvAreFormatsOfTheLoaderToo) {
  const TempDir tmp;
  const auto f = tmp.write("w.yaml", "workflow:\n  generate_data: True\n  train: False\n"
                                     "dataset:\n  num_files_train: 2\n  format: png\n");
  EXPECT_EQ(load_workload(f.string(), {}).dataset.format, pipelines::formats::DataFormat::kPng);
  EXPECT_EQ(load_workload(f.string(), {"++workload.dataset.format=csv"}).dataset.format,
            pipelines::formats::DataFormat::kCsv);
  EXPECT_TRUE(load_workload(f.string(), {"++workload.workflow.train=True"}).train);
}

// Storage other than file systems and S3 is refused by name, and a URL never becomes a local
// folder; S3's folders are prefixes in storage_root's bucket.
TEST(StorageType, UnsupportedStorageAndUrlFoldersAreBadInputNamingTheKey) {
  const TempDir tmp;
  const auto f = tmp.write("w.yaml", "workflow:\n  train: True\n  checkpoint: True\n"
                                     "dataset:\n  num_files_train: 1\n  format: npz\n");
  EXPECT_NE(load_error(f.string(), {"++workload.storage.storage_type=azure"})
                .find("storage.storage_type: expected local_fs, parallel_fs or s3, got \"azure\""),
            std::string::npos);
  EXPECT_NO_THROW(load_workload(f.string(), {"++workload.storage.storage_type=parallel_fs"}));
  EXPECT_NE(load_error(f.string(), {"++workload.dataset.data_folder=gs://bucket/train"})
                .find("dataset.data_folder: \"gs://bucket/train\" is a URL"),
            std::string::npos);
  EXPECT_NE(load_error(f.string(), {"++workload.checkpoint.checkpoint_folder=gs://bucket/ckpt"})
                .find("checkpoint.checkpoint_folder: \"gs://bucket/ckpt\" is a URL"),
            std::string::npos);
  EXPECT_NE(load_error(f.string(), {"++workload.storage.storage_type=s3"}).find("storage.storage_root"),
            std::string::npos);
  const DlioWorkload w = load_workload(
      f.string(), {"++workload.storage.storage_type=s3", "++workload.storage.storage_root=bkt",
                   "++workload.dataset.data_folder=./data/unet3d/",
                   "++workload.checkpoint.checkpoint_folder=s3://other/ckpt",
                   "++workload.storage.storage_options={endpoint_url: 'http://a:1, http://b:2'}"});
  EXPECT_EQ(w.dataset.data_folder, "s3://bkt/data/unet3d");
  EXPECT_EQ(w.checkpoint_settings.folder, "s3://other/ckpt");
  EXPECT_EQ(w.s3_endpoints, (std::vector<std::string>{"http://a:1", "http://b:2"}));
  EXPECT_EQ(s3_storage(w, nullptr, 1)->s3().endpoint_url, "http://b:2");
  // The bucket written as a URL or with slashes is the bucket; a checkpoint folder's last slash goes.
  const DlioWorkload w2 = load_workload(
      f.string(), {"++workload.storage.storage_type=s3", "++workload.storage.storage_root=s3://bkt/",
                   "++workload.checkpoint.checkpoint_folder=ckpt/"});
  EXPECT_EQ(w2.storage_root, "bkt");
  EXPECT_EQ(w2.checkpoint_settings.folder, "s3://bkt/ckpt");
  EXPECT_NE(load_error(f.string(), {"++workload.storage.storage_type=s3",
                                    "++workload.storage.storage_root=a/b"})
                .find("storage.storage_root"),
            std::string::npos);
  // An s3:// folder alone is S3 too (the AWS environment's settings).
  EXPECT_TRUE(load_workload(f.string(), {"++workload.dataset.data_folder=s3://bkt/d"}).s3);
  EXPECT_FALSE(fs::exists("s3:"));
  EXPECT_FALSE(fs::exists("gs:"));
}

}  // namespace
}  // namespace pipeprof::harness::workload
