// `pipeprof workload` on S3 (storage.storage_type: s3) against a real S3 server the test starts on
// 127.0.0.1 (testbed::S3Server: OpenStack Swift's S3 API, signatures checked): training reads the
// dataset's objects, checkpoints are written into the bucket and read back, a wrong secret key is
// an exit 2 naming the endpoint and the bucket, and data generation into a bucket is refused.
// Skips where Swift or memcached is not installed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "pipeprof/pipelines/files.h"
#include "pipeprof/pipelines/remote.h"
#include "pipeprof/pipelines/storage_io.h"
#include "pipeprof/testbed/s3_server.h"
#include "pipeprof_testing/run_command.h"
#include "pipeprof_testing/temp_dir.h"

namespace {

using pipeprof::testing::CliResult;
using pipeprof::testing_support::TempDir;
namespace fs = std::filesystem;
namespace pp = pipeprof::pipelines;

class S3Workload : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string why;
    if (!pipeprof::testbed::S3Server::available(&why)) {
      skip_ = why;
      return;
    }
    server_ = new pipeprof::testbed::S3Server();
    server_->create_bucket("mlperf");
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (server_ == nullptr) GTEST_SKIP() << skip_;
  }

  static std::shared_ptr<pp::StorageContext> storage() {
    return std::make_shared<pp::StorageContext>(pp::RemoteReadOptions{}, nullptr, server_->options());
  }

  // The storage section of a workload on the test's server.
  static std::string storage_yaml(const std::string& secret = "pipeprof-secret") {
    const pp::S3Options o = server_->options();
    return "storage:\n  storage_type: s3\n  storage_root: mlperf\n  storage_options:\n"
           "    endpoint_url: " + o.endpoint_url + "\n    access_key_id: " + o.access_key_id +
           "\n    secret_access_key: " + secret + "\n    region: us-east-1\n"
           "    s3_force_path_style: True\n    s3_max_attempts: 2\n";
  }

  // 8 npz files of one 32 KiB sample generated locally and copied into s3://mlperf/<prefix>/train/.
  static void upload_dataset(const TempDir& tmp, const std::string& prefix) {
    const CliResult gen = pipeprof::testing::run_command(
        std::string(PIPEPROF_BINARY) + " datagen --data-folder " + (tmp / "local").string() +
        " --format npz --num-files-train 8 --num-samples-per-file 1 --record-length 32768 --quiet");
    ASSERT_EQ(gen.code, 0) << gen.out;
    const auto s = storage();
    for (const auto& e : fs::directory_iterator(tmp / "local" / "train")) {
      std::ifstream in(e.path(), std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      auto out = pp::create_file("s3://mlperf/" + prefix + "/train/" + e.path().filename().string(),
                                 {.storage = s});
      out->append(std::as_bytes(std::span(bytes.data(), bytes.size())));
      out->commit();
    }
  }

  static std::string training_yaml(const std::string& prefix, const std::string& extra = "") {
    return "model:\n  name: s3_unet\n  type: transformer\n  num_layers: 2\n  parallelism:\n"
           "    tensor: 1\n    pipeline: 1\n  transformer:\n    vocab_size: 1000\n    hidden_size: 256\n"
           "    ffn_hidden_size: 512\n    num_attention_heads: 4\n    num_kv_heads: 4\n"
           "framework: pytorch\nworkflow:\n  generate_data: False\n  train: True\n  checkpoint: True\n"
           "dataset:\n  data_folder: " + prefix + "\n  format: npz\n  num_files_train: 8\n"
           "  num_samples_per_file: 1\n  record_length_bytes: 32768\n"
           "reader:\n  data_loader: pytorch\n  batch_size: 2\n  read_threads: 2\n"
           "train:\n  epochs: 1\n  computation_time: 0.002\n"
           "checkpoint:\n  checkpoint_folder: " + prefix + "-ckpt\n  checkpoint_after_epoch: 1\n"
           "metric:\n  au: 0.5\n" + extra;
  }

  static inline pipeprof::testbed::S3Server* server_ = nullptr;
  static inline std::string skip_;
};

CliResult pipeprof_cmd(const std::string& args) {
  return pipeprof::testing::run_command(std::string(PIPEPROF_BINARY) + " " + args);
}

TEST_F(S3Workload, TrainingReadsTheBucketAndCheckpointsIntoIt) {
  const TempDir tmp;
  upload_dataset(tmp, "unet");
  const fs::path yaml = tmp.write("s3.yaml", training_yaml("unet", storage_yaml()));
  const CliResult r = pipeprof_cmd("workload " + yaml.string() + " -n 2 -q --out " + (tmp / "out").string());
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(tmp / "out" / "results.json");
  const auto results = nlohmann::json::parse(in);
  const auto& wl = results["experiments"][0]["workload"];
  EXPECT_GT(wl.dump().size(), 0U);
  std::ifstream sin(tmp / "out" / "summary.json");
  const auto summary = nlohmann::json::parse(sin);
  EXPECT_GT(summary["metric"]["train_au_mean_percentage"].get<double>(), 0) << summary.dump(1);
  EXPECT_GT(summary["metric"]["save_checkpoint_duration_mean_seconds"].get<double>(), 0) << summary.dump(1);
  // The checkpoint's objects are in the bucket (after epoch 1's 2 steps: DLIO's step 3), none left
  // half-written.
  const auto written = pp::matching_files("s3://mlperf/unet-ckpt/global_epoch1_step3/*", storage().get());
  EXPECT_FALSE(written.empty());
  for (const auto& name : written) EXPECT_EQ(name.find(".partial"), std::string::npos) << name;
}

// pipeprof.remote over a bucket: read through the disk cache (the second epoch from the cache
// alone), copied first, or direct with the remote figures; the run's own server's latency and rate
// are refused naming the key.
TEST_F(S3Workload, TheBucketIsReadThroughTheDiskCacheOrCopiedFirst) {
  const TempDir tmp;
  upload_dataset(tmp, "cached");
  std::string base = training_yaml("cached", storage_yaml());
  base.replace(base.find("epochs: 1"), 9, "epochs: 2");
  base.replace(base.find("checkpoint: True"), 16, "checkpoint: False");
  const auto remote_of = [&](const std::string& mode) {
    const fs::path yaml = tmp.write(mode + ".yaml", base + "pipeprof:\n  remote:\n    mode: " + mode + "\n");
    const fs::path out = tmp / ("out-" + mode);
    const CliResult r = pipeprof_cmd("workload " + yaml.string() + " -q --out " + out.string());
    EXPECT_EQ(r.code, 0) << r.out;
    std::ifstream in(out / "results.json");
    return nlohmann::json::parse(in)["experiments"][0]["workload"]["remote"];
  };
  nlohmann::json remote = remote_of("cached");
  ASSERT_TRUE(remote.is_object()) << remote.dump(1);
  EXPECT_EQ(remote["store"].get<std::string>().find("s3://mlperf/cached"), 0U) << remote.dump(1);
  EXPECT_EQ(remote["files"], 8);
  const int64_t dataset = remote["dataset_bytes"].get<int64_t>();
  EXPECT_GT(dataset, 8 * 32768);
  EXPECT_EQ(remote["cache"]["misses"], 8) << remote.dump(1);  // each object fetched once
  EXPECT_GE(remote["cache"]["hits"].get<int64_t>(), 8) << remote.dump(1);
  EXPECT_EQ(remote["cache"]["bytes_fetched"], dataset) << remote.dump(1);
  ASSERT_EQ(remote["epochs"].size(), 2U);
  EXPECT_GE(remote["epochs"][0]["remote_bytes"].get<int64_t>(), dataset) << remote.dump(1);
  EXPECT_EQ(remote["epochs"][1]["remote_bytes"], 0) << remote.dump(1);
  EXPECT_EQ(remote["epochs"][1]["cache_hit_ratio"], 1.0) << remote.dump(1);

  remote = remote_of("copy_first");
  ASSERT_TRUE(remote.is_object()) << remote.dump(1);
  EXPECT_GE(remote["copy_bytes"].get<int64_t>(), dataset) << remote.dump(1);
  for (const auto& e : remote["epochs"]) EXPECT_EQ(e["remote_bytes"], 0) << remote.dump(1);

  remote = remote_of("direct");
  ASSERT_TRUE(remote.is_object()) << remote.dump(1);
  for (const auto& e : remote["epochs"]) EXPECT_GE(e["remote_bytes"].get<int64_t>(), dataset) << remote.dump(1);

  const CliResult r = pipeprof_cmd(
      "workload " + tmp.write("latency.yaml", base + "pipeprof:\n  remote:\n    mode: cached\n    latency_ms: 5\n").string() +
      " -q --dry-run");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("pipeprof.remote.latency_ms"), std::string::npos) << r.out;
}

TEST_F(S3Workload, CheckpointsAloneAreWrittenAndReadBack) {
  const TempDir tmp;
  const fs::path yaml = tmp.write(
      "ckpt.yaml",
      "model:\n  name: s3_llama\n  type: transformer\n  num_layers: 2\n  parallelism:\n    tensor: 1\n"
      "    pipeline: 1\n    zero_stage: 3\n  transformer:\n    vocab_size: 2000\n    hidden_size: 512\n"
      "    ffn_hidden_size: 1024\n    num_attention_heads: 8\n    num_kv_heads: 8\n"
      "framework: pytorch\nworkflow:\n  train: False\n  checkpoint: True\n"
      "checkpoint:\n  checkpoint_folder: llama\n  time_between_checkpoints: 0\n"
      "  num_checkpoints_write: 2\n  num_checkpoints_read: 1\n  fsync: True\n" + storage_yaml());
  const CliResult r = pipeprof_cmd("workload " + yaml.string() + " -n 2 -q --out " + (tmp / "out").string());
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream sin(tmp / "out" / "summary.json");
  const auto summary = nlohmann::json::parse(sin);
  EXPECT_GT(summary["metric"]["load_checkpoint_duration_mean_seconds"].get<double>(), 0) << summary.dump(1);
  EXPECT_FALSE(pp::matching_files("s3://mlperf/llama/global_epoch1_step1/*", storage().get()).empty());
}

// `pipeprof predict --probe` on the bucket: the workload's loader reads its objects by streams,
// the profile names the bucket's folder, and a wrong secret key is an exit 2 naming it.
TEST_F(S3Workload, PredictProbesTheBucket) {
  const TempDir tmp;
  upload_dataset(tmp, "probed");
  const fs::path yaml = tmp.write("s3.yaml", training_yaml("probed", storage_yaml()));
  const fs::path out = tmp / "out";
  const CliResult r = pipeprof_cmd("predict " + yaml.string() + " --probe --probe-seconds 0.3 --probe-streams 4 --out " +
                                   out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("probing s3://mlperf/probed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("predicted maximum:"), std::string::npos) << r.out;
  std::ifstream in(out / "storage_profile.json");
  const auto p = nlohmann::json::parse(in);
  EXPECT_EQ(p["target"], "s3://mlperf/probed");
  EXPECT_GT(p["bandwidth"]["cold"][0]["mib_per_s"].get<double>(), 0) << p.dump(1);
  EXPECT_GT(p["latency"]["first_byte_ms"].get<double>(), 0) << p.dump(1);

  const fs::path bad = tmp.write("bad.yaml", training_yaml("probed", storage_yaml("wrong-secret")));
  const CliResult denied = pipeprof_cmd("predict " + bad.string() + " --probe --out " + (tmp / "o2").string());
  EXPECT_EQ(denied.code, 2) << denied.out;
  EXPECT_NE(denied.out.find("mlperf"), std::string::npos) << denied.out;
}

// `datagen --workload` of an s3 workload writes into its bucket, as the workload's own
// generate_data does (it wrote a local folder named after the data_folder).
TEST_F(S3Workload, DatagenOfAnS3WorkloadWritesIntoItsBucket) {
  const TempDir tmp;
  const fs::path yaml = tmp.write("gen.yaml", training_yaml("generated", storage_yaml()));
  const CliResult gen = pipeprof::testing::run_command("cd " + tmp.path().string() + " && " +
                                                       PIPEPROF_BINARY + " datagen --workload " + yaml.string());
  ASSERT_EQ(gen.code, 0) << gen.out;
  EXPECT_NE(gen.out.find("s3://mlperf/generated"), std::string::npos) << gen.out;
  EXPECT_FALSE(fs::exists(tmp / "generated")) << "a local folder was written";
  const CliResult r = pipeprof_cmd("workload " + yaml.string() + " -q --out " + (tmp / "out").string());
  EXPECT_EQ(r.code, 0) << r.out;  // it reads the 8 objects datagen wrote
}

// `pipeprof serve --s3` whose proxy dies stops serving, naming it (it went on "serving" a server
// that refused every connection), and leaves no Swift process.
TEST_F(S3Workload, ServeStopsNamingAComponentThatDies) {
  const TempDir tmp;
  fs::create_directories(tmp / "site");
  tmp.write("site/a.txt", "hello\n");
  const std::string log = (tmp / "serve.log").string();
  // --seconds: were the death missed, serving would end (exit 0) instead of hanging the test.
  const std::string serve =
      std::string(PIPEPROF_BINARY) + " serve --s3 served --seconds 60 " + (tmp / "site").string();
  const CliResult r = pipeprof::testing::run_command(
      "sh -c '" + serve + " > " + log + " 2>&1 & pid=$!; for i in $(seq 300); do grep -q serving " + log +
      " && break; sleep 0.1; done; proxy=$(pgrep -P $pid -f swift-proxy-server | head -1); [ -n \"$proxy\" ] && kill -9 $proxy; "
      "wait $pid; echo \"rc=$?\"; cat " + log + "'");
  EXPECT_NE(r.out.find("rc=1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the S3 server stopped serving: its proxy killed by signal 9"), std::string::npos) << r.out;
  const CliResult left = pipeprof::testing::run_command("pgrep -f '[s]wift-.*" + tmp.path().filename().string() + "'");
  EXPECT_NE(left.code, 0) << "Swift processes left: " << left.out;
}

TEST_F(S3Workload, AWrongSecretKeyIsExit2NamingTheEndpointAndBucket) {
  const TempDir tmp;
  const fs::path yaml = tmp.write("bad.yaml", training_yaml("nothing", storage_yaml("wrong-secret")));
  const CliResult r = pipeprof_cmd("workload " + yaml.string() + " -q --out " + (tmp / "out").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("SignatureDoesNotMatch"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(server_->endpoint()), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bucket mlperf"), std::string::npos) << r.out;
  // Generating its data says the same, with the same exit code (it was 1).
  const CliResult gen = pipeprof_cmd("datagen --workload " + yaml.string() + " -q");
  EXPECT_EQ(gen.code, 2) << gen.out;
  EXPECT_NE(gen.out.find("SignatureDoesNotMatch"), std::string::npos) << gen.out;
  EXPECT_NE(gen.out.find("bucket mlperf"), std::string::npos) << gen.out;
}

TEST_F(S3Workload, BadStorageSettingsAreExit2NamingTheKey) {
  const TempDir tmp;
  const auto run = [&](const std::string& name, const std::string& text) {
    return pipeprof_cmd("workload " + tmp.write(name, text).string() + " -q --dry-run");
  };
  const std::string base = training_yaml("x");
  CliResult r = run("type.yaml", base + "storage:\n  storage_type: azure\n");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("storage.storage_type"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("azure"), std::string::npos) << r.out;
  r = run("root.yaml", base + "storage:\n  storage_type: s3\n");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("storage.storage_root"), std::string::npos) << r.out;
  r = run("endpoint.yaml", base + "storage:\n  storage_type: s3\n  storage_root: b\n  storage_options:\n"
                                  "    endpoint_url: ftp://x\n");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("storage.storage_options.endpoint_url"), std::string::npos) << r.out;
  // Half a key pair (the other half would come from the AWS environment).
  const std::string s3 = base + "storage:\n  storage_type: s3\n  storage_root: b\n  storage_options:\n"
                                "    endpoint_url: http://127.0.0.1:9, http://127.0.0.1:9\n";
  r = run("half.yaml", s3 + "    access_key_id: a\n");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("storage.storage_options.secret_access_key: missing: access_key_id is given without it"),
            std::string::npos)
      << r.out;
  r = run("other_half.yaml", s3 + "    secret_access_key: b\n");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("storage.storage_options.access_key_id: missing"), std::string::npos) << r.out;
  // An endpoint listed twice is said, not refused.
  r = run("twice.yaml", s3 + "    access_key_id: a\n    secret_access_key: b\n");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("http://127.0.0.1:9 is listed more than once"), std::string::npos) << r.out;
}

// generate_data writes the dataset into the bucket (each file staged locally, uploaded, removed),
// trains on it, and a second run keeps the objects that are there.
TEST_F(S3Workload, GeneratesIntoTheBucketThenTrainsAndKeepsWhatIsThere) {
  const TempDir tmp;
  std::string gen = training_yaml("gen", storage_yaml());
  gen.replace(gen.find("generate_data: False"), 20, "generate_data: True");
  gen.replace(gen.find("format: npz"), 11, "format: npy\n  num_subfolders_train: 2");
  const fs::path yaml = tmp.write("gen.yaml", gen);
  const std::string cmd = "cd " + tmp.path().string() + " && TMPDIR=" + tmp.path().string() + " " +
                          PIPEPROF_BINARY + " workload " + yaml.string() + " --out " +
                          (tmp / "out").string();
  CliResult r = pipeprof::testing::run_command(cmd);
  ASSERT_EQ(r.code, 0) << r.out;
  // DLIO's subfolders: file i in train/<i % 2>/, each folder listed for training.
  const auto objects = pp::list_objects("s3://mlperf/gen/train/0", storage().get());
  ASSERT_EQ(objects.size(), 4U);
  EXPECT_EQ(objects[0].first, "s3://mlperf/gen/train/0/img_0_of_8.npy");
  EXPECT_EQ(objects[0].second, 181U * 181U + 128U);  // a 181 x 181 sample and the npy header
  EXPECT_FALSE(fs::exists(tmp / "s3:"));
  for (const auto& e : fs::directory_iterator(tmp.path()))  // the staging folder is gone
    EXPECT_FALSE(e.path().filename().string().starts_with("pipeprof-datagen-")) << e.path();
  r = pipeprof::testing::run_command(cmd);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("kept 8 complete"), std::string::npos) << r.out;
}

}  // namespace
