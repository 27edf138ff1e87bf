// `pipeprof workload` end to end on a small npz workload in a temporary folder: data generation
// from the workflow, DLIO's summary.json, pipeprof's results.json and report, the loader's spec,
// the trace, the accelerator search and the stall analysis; bad input (exit 2 naming the file and
// key), unknown keys (warnings), missing data, Ctrl-C (exit 130, what was measured written); and
// the PyTorch peer on the same files, compared with `pipeprof compare`.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeprof_testing/run_command.h"
#include "pipeprof_testing/temp_dir.h"
#include "schema_check.h"

namespace {

using pipeprof::testing::CliResult;
using pipeprof::testing_support::TempDir;
namespace fs = std::filesystem;

CliResult pipeprof(const std::string& args) {
  return pipeprof::testing::run_command(std::string(PIPEPROF_BINARY) + " " + args);
}

nlohmann::ordered_json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::ordered_json::parse(in);
}

// 16 npz files of 2 samples of 4 KiB, read by the pytorch loader with 2 threads, batch 2: 8 steps
// an epoch on two accelerators, 2 ms each.
std::string workload_text(const TempDir& tmp, const std::string& extra = "") {
  return "model:\n  name: tiny\nframework: pytorch\nworkflow:\n  generate_data: True\n  train: "
         "True\ndataset:\n  data_folder: " +
         (tmp / "data").string() +
         "\n  format: npz\n  num_files_train: 16\n  num_samples_per_file: 2\n  "
         "record_length_bytes: 4096\nreader:\n  data_loader: pytorch\n  batch_size: 2\n  "
         "read_threads: 2\ntrain:\n  epochs: 2\n  computation_time: 0.002\nmetric:\n  au: 0.5\n" +
         extra;
}

TEST(WorkloadCommand, RunsAWorkloadAndWritesDliosAndPipeprofsResults) {
  const TempDir tmp;
  const auto w = tmp.write("tiny.yaml", workload_text(tmp));
  const auto out = tmp / "out";
  const CliResult r = pipeprof("workload " + w.string() + " -n 2 -q --out " + out.string() +
                               " --spec-out " + (tmp / "spec.json").string() + " --trace " +
                               (tmp / "trace.json").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("[METRIC] Number of Simulated Accelerators: 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[METRIC] Training Accelerator Utilization [AU] (%):"), std::string::npos);
  EXPECT_EQ(fs::directory_iterator(tmp / "data" / "train") == fs::directory_iterator(), false);

  // DLIO's summary.json: its keys in its order, the metric DLIO's tools read.
  const auto summary = read_json(out / "summary.json");
  std::vector<std::string> keys;
  for (const auto& [k, v] : summary.items())
    keys.push_back(k);
  ASSERT_GE(keys.size(), 5U);
  EXPECT_EQ(keys.front(), "start");
  EXPECT_EQ(keys[1], "num_accelerators");
  EXPECT_EQ(keys.back(), "end");
  EXPECT_EQ(summary["num_accelerators"], 2);
  EXPECT_EQ(summary["epochs"], 2);
  const auto& m = summary["metric"];
  ASSERT_EQ(m["train_au_percentage"].size(), 2U);
  EXPECT_GT(m["train_au_mean_percentage"].get<double>(), 0);
  EXPECT_LE(m["train_au_mean_percentage"].get<double>(), 100);
  EXPECT_GT(m["train_throughput_mean_samples_per_second"].get<double>(), 0);
  EXPECT_NEAR(m["train_io_mean_MB_per_second"].get<double>(),
              m["train_throughput_mean_samples_per_second"].get<double>() * 4096 / 1048576, 1e-6);
  EXPECT_TRUE(m["train_au_meet_expectation"] == "success" || m["train_au_meet_expectation"] == "fail");
  const auto epochs = read_json(out / "per_epoch_stats.json");
  EXPECT_TRUE(epochs.contains("1") && epochs.contains("2"));
  EXPECT_TRUE(fs::exists(out / "dlio.log"));

  // pipeprof's results: schema 4, the workload object, a repetition per epoch; and the report.
  const auto results = read_json(out / "results.json");
  EXPECT_EQ(results["schema_version"], 4);
  const auto& x = results["experiments"][0];
  EXPECT_EQ(x["id"], "workload:tiny");
  EXPECT_EQ(x["kind"], "workload");
  {  // every field written is one the schema describes
    const nlohmann::json schema = pipeprof::results::testing::read_json(PIPEPROF_RESULTS_SCHEMA);
    EXPECT_EQ(pipeprof::results::testing::joined(
                  pipeprof::results::testing::schema_problems(schema, results)),
              "");
  }
  EXPECT_EQ(x["repetitions"].size(), 2U);
  EXPECT_EQ(x["workload"]["accelerators"], 2);
  EXPECT_EQ(x["workload"]["loader"], "pytorch");
  EXPECT_EQ(x["workload"]["per_accelerator"].size(), 2U);
  EXPECT_GT(x["workload"]["bytes_read"].get<int64_t>(), 2 * 16 * 8192);
  EXPECT_EQ(x["workload"]["dlio"]["train_au_mean_percentage"], m["train_au_mean_percentage"]);
  EXPECT_TRUE(fs::exists(out / "report.md"));
  EXPECT_EQ(pipeprof("report " + (out / "results.json").string() + " --out " +
                     (tmp / "report").string())
                .code,
            0);

  // The loader's spec runs as any other pipeline; the trace has a lane per accelerator.
  const CliResult inspect = pipeprof("inspect " + (tmp / "spec.json").string());
  EXPECT_EQ(inspect.code, 0) << inspect.out;
  std::ifstream trace(tmp / "trace.json");
  const std::string text((std::istreambuf_iterator<char>(trace)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("accelerator 1"), std::string::npos);
  EXPECT_NE(text.find("\"barrier\""), std::string::npos);
  EXPECT_EQ(pipeprof("analyze " + (tmp / "trace.json").string()).code, 0);

  // A second run keeps the generated files (idempotent) and finds its data.
  const CliResult again = pipeprof("workload " + w.string() + " --out " + out.string());
  EXPECT_EQ(again.code, 0) << again.out;
  EXPECT_NE(again.out.find("kept 16 complete"), std::string::npos) << again.out;
}

TEST(WorkloadCommand, FindsTheMostAcceleratorsAndSplitsTheStalls) {
  const TempDir tmp;
  const auto w = tmp.write("tiny.yaml", workload_text(tmp));
  const auto out = tmp / "out";
  const CliResult r = pipeprof("workload " + w.string() +
                               " --find-max-accelerators --max-accelerators 2 --stall-analysis -q "
                               "--out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("max accelerators at AU >= 50%:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the storage bound is"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fetch stall s"), std::string::npos) << r.out;
  const auto results = read_json(out / "results.json");
  const auto& wl = results["experiments"][0]["workload"];
  ASSERT_TRUE(wl.contains("max_accelerators")) << wl.dump();
  EXPECT_GE(wl["max_accelerators"]["probes"].size(), 2U);  // 1 and 2
  EXPECT_GT(wl["max_accelerators"]["storage_mib_per_s"].get<double>(), 0);
  // The bound uses the mean of the storage's measures: one before the search, one after every
  // run of a probe (a probe close to metric.au runs two or three times, listed in au_runs).
  const auto& m = wl["max_accelerators"];
  const auto samples = m["storage_samples_mib_per_s"].get<std::vector<double>>();
  size_t runs = 0;
  for (const auto& p : m["probes"])
    runs += p.contains("au_runs") ? p["au_runs"].size() : 1;
  ASSERT_EQ(samples.size(), runs + 1);
  double sum = 0;
  for (const double v : samples) {
    EXPECT_GT(v, 0);
    sum += v;
  }
  EXPECT_NEAR(m["storage_mib_per_s"].get<double>(), sum / static_cast<double>(samples.size()),
              1e-9);
  EXPECT_EQ(m["storage_mib_per_s_before"].get<double>(), samples.front());
  EXPECT_EQ(m["storage_mib_per_s_after"].get<double>(), samples.back());
  EXPECT_EQ(m["storage_mib_per_s_min"].get<double>(), *std::min_element(samples.begin(), samples.end()));
  EXPECT_EQ(m["storage_mib_per_s_max"].get<double>(), *std::max_element(samples.begin(), samples.end()));
  EXPECT_NEAR(m["bound_accelerators"].get<double>(),
              m["storage_mib_per_s"].get<double>() / m["demand_mib_per_s"].get<double>(), 1e-9);
  EXPECT_GT(wl["max_accelerators"]["demand_mib_per_s"].get<double>(), 0);
  ASSERT_TRUE(wl.contains("stall_analysis"));
  EXPECT_EQ(wl["stall_analysis"]["epochs"].size(), 2U);
  for (const auto& e : wl["stall_analysis"]["epochs"]) {
    EXPECT_GE(e["fetch_stall_s"].get<double>(), 0);
    EXPECT_GE(e["prep_stall_s"].get<double>(), 0);
    EXPECT_GT(e["synthetic_s"].get<double>(), 0);
  }
}

TEST(WorkloadCommand, BadInputIsExit2NamingTheFileAndTheKey) {
  const TempDir tmp;
  const auto bad = tmp.write("bad.yaml", "reader:\n  batch_size: seven\n");
  CliResult r = pipeprof("workload " + bad.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(bad.string() + ": reader.batch_size: expected a whole number >= 1, got "
                                      "\"seven\""),
            std::string::npos)
      << r.out;

  // Unknown keys are warnings; with training off nothing runs.
  const auto odd = tmp.write("odd.yaml", "reader:\n  read_thread: 4\nworkflow:\n  train: False\n");
  r = pipeprof("workload " + odd.string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("warning: " + odd.string() + ": unknown key reader.read_thread"),
            std::string::npos)
      << r.out;

  // Missing data: what to run to make it.
  const auto none = tmp.write(
      "none.yaml", "dataset:\n  data_folder: " + (tmp / "nothing").string() + "\n  format: npz\n");
  r = pipeprof("workload " + none.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("pipeprof datagen --workload " + none.string()), std::string::npos) << r.out;

  // Overrides that do not fit, a missing file, a bad flag.
  r = pipeprof("workload " + none.string() + " workload.train.epochs=2");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("the workload has no `train`"), std::string::npos) << r.out;
  EXPECT_EQ(pipeprof("workload " + (tmp / "missing.yaml").string()).code, 2);
  EXPECT_EQ(pipeprof("workload " + none.string() + " --scale 2").code, 2);
  EXPECT_EQ(pipeprof("workload " + none.string() + " --accelerators 0").code, 2);
}

// An output that cannot be written is found before anything runs (it was found after the whole
// run): exit 1 naming the option and the path, no data generated, nothing measured.
TEST(WorkloadCommand, AnOutputThatCannotBeWrittenIsFoundBeforeTheRun) {
  const TempDir tmp;
  const auto w = tmp.write("tiny.yaml", workload_text(tmp));
  const auto file = tmp.write("a_file", "x");
  const std::vector<std::pair<std::string, std::string>> cases{
      {" --out " + (file / "out").string(), "--out " + (file / "out").string() + ": cannot be written"},
      {" --out " + (tmp / "out").string() + " --trace " + (tmp / "missing" / "t.json").string(),
       "--trace " + (tmp / "missing" / "t.json").string() + ": cannot be written: its folder " +
           (tmp / "missing").string() + " does not exist"},
      {" --out " + (tmp / "out").string() + " --spec-out " + tmp.path().string(),
       "--spec-out " + tmp.path().string() + ": cannot be written: it is a folder"},
  };
  for (const auto& [args, message] : cases) {
    const CliResult r = pipeprof("workload " + w.string() + " -q" + args);
    EXPECT_EQ(r.code, 1) << args << ": " << r.out;
    EXPECT_NE(r.out.find(message), std::string::npos) << args << ": " << r.out;
    EXPECT_EQ(r.out.find("[METRIC]"), std::string::npos) << args << ": " << r.out;
    EXPECT_FALSE(fs::exists(tmp / "data")) << args << ": the data was generated first";
  }
  // run and suite too.
  const CliResult run = pipeprof("run naive --repetitions 1 --json " + (file / "x.json").string());
  EXPECT_EQ(run.code, 1) << run.out;
  EXPECT_NE(run.out.find("--json " + (file / "x.json").string() + ": cannot be written: its folder"),
            std::string::npos)
      << run.out;
  EXPECT_EQ(run.out.find("naive "), std::string::npos) << "it ran first: " << run.out;
  const CliResult suite = pipeprof("suite --quick --only naive --out " + (file / "o").string());
  EXPECT_EQ(suite.code, 1) << suite.out;
  EXPECT_NE(suite.out.find("--out " + (file / "o").string() + ": cannot be written"), std::string::npos)
      << suite.out;
}

// ---- DLIO's checkpoints ----

// A small transformer's checkpoint-only workload (ZeRO 1 on 2 ranks: 3 files of about 2.5 MiB).
std::string checkpoint_text(const TempDir& tmp, const std::string& extra = "") {
  return "model:\n  name: small\n  type: transformer\n  num_layers: 2\n  parallelism:\n    "
         "zero_stage: 1\n  transformer:\n    vocab_size: 1000\n    hidden_size: 256\n    "
         "ffn_hidden_size: 512\n    num_attention_heads: 8\n    num_kv_heads: 8\n"
         "framework: pytorch\nworkflow:\n  train: False\n  checkpoint: True\ncheckpoint:\n  "
         "checkpoint_folder: " +
         (tmp / "ckpt").string() +
         "\n  num_checkpoints_write: 2\n  num_checkpoints_read: 2\n  fsync: True\n" + extra;
}

TEST(WorkloadCheckpoints, ACheckpointOnlyWorkloadWritesReadsAndReportsAsDlioAndMlperf) {
  const TempDir tmp;
  const auto w = tmp.write("ckpt.yaml", checkpoint_text(tmp));
  const auto out = tmp / "out";
  const CliResult r = pipeprof("workload " + w.string() + " -n 2 -q --out " + out.string() +
                               " --trace " + (tmp / "t.json").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("[METRIC] Checkpoint save duration (seconds):"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[METRIC] Checkpoint load I/O Throughput (GB/second):"), std::string::npos);
  for (const char* step : {"global_epoch1_step1", "global_epoch1_step2"}) {
    EXPECT_TRUE(fs::exists(tmp / "ckpt" / step / "model_0_model_states.pt")) << step;
    EXPECT_TRUE(fs::exists(tmp / "ckpt" / step / "zero_pp_rank_1_mp_rank_0_optim_states.pt")) << step;
  }
  const auto summary = read_json(out / "summary.json");
  const auto& m = summary["metric"];
  for (const char* key : {"save_checkpoint_io_mean_GB_per_second", "save_checkpoint_duration_mean_seconds",
                          "load_checkpoint_io_mean_GB_per_second", "load_checkpoint_duration_stdev_seconds",
                          "checkpoint_size_GB"}) {
    EXPECT_TRUE(m.contains(key)) << key;
  }
  EXPECT_FALSE(m.contains("train_au_percentage"));  // no training
  EXPECT_EQ(summary["num_accelerators"], 2);
  const auto epochs = read_json(out / "per_epoch_stats.json");
  EXPECT_TRUE(epochs["1"].contains("save_ckpt2") && epochs["1"].contains("load_ckpt1")) << epochs.dump();
  const auto results = read_json(out / "results.json");
  {
    const nlohmann::json schema = pipeprof::results::testing::read_json(PIPEPROF_RESULTS_SCHEMA);
    EXPECT_EQ(pipeprof::results::testing::joined(
                  pipeprof::results::testing::schema_problems(schema, results)),
              "");
  }
  const auto& c = results["experiments"][0]["workload"]["checkpoint"];
  EXPECT_EQ(c["ranks"], 2);
  EXPECT_EQ(c["files"], 3);
  EXPECT_EQ(c["ops"].size(), 4U);
  EXPECT_DOUBLE_EQ(c["checkpoint_size_GB"].get<double>(), m["checkpoint_size_GB"].get<double>());
  std::ifstream report(out / "report.md");
  const std::string md((std::istreambuf_iterator<char>(report)), std::istreambuf_iterator<char>());
  EXPECT_NE(md.find("## Checkpoints"), std::string::npos);
  EXPECT_TRUE(fs::exists(out / "checkpoints.svg"));
  std::ifstream trace(tmp / "t.json");
  const std::string t((std::istreambuf_iterator<char>(trace)), std::istreambuf_iterator<char>());
  EXPECT_NE(t.find("write checkpoint file"), std::string::npos);
  EXPECT_NE(t.find("read checkpoint file"), std::string::npos);

  // Read-only run of what is there (num_checkpoints_write 0) and of what is not.
  ASSERT_EQ(pipeprof("workload " + w.string() + " -n 2 -q --out " + out.string() +
                     " ++workload.checkpoint.num_checkpoints_write=0")
                .code,
            0);
  fs::remove_all(tmp / "ckpt" / "global_epoch1_step2");
  const CliResult missing = pipeprof("workload " + w.string() + " -n 2 -q --out " + out.string() +
                                     " ++workload.checkpoint.num_checkpoints_write=0");
  EXPECT_EQ(missing.code, 2) << missing.out;
  EXPECT_NE(missing.out.find((tmp / "ckpt" / "global_epoch1_step2").string()), std::string::npos)
      << missing.out;
  EXPECT_NE(missing.out.find("is missing"), std::string::npos) << missing.out;
}

TEST(WorkloadCheckpoints, DryRunGivesMlperfsSizesWithoutTouchingStorage) {
  const TempDir tmp;
  struct Case {
    const char* file;
    int ranks;
    const char* size;
  };
  for (const Case& c : {Case{"llama3_8b", 8, "checkpoint: 104.70 GiB"},
                        Case{"llama3_70b", 64, "checkpoint: 911.21 GiB"},
                        Case{"llama3_405b", 512, "checkpoint: 5292.25 GiB"}}) {
    const CliResult r = pipeprof::testing::run_command(
        "cd " + tmp.path().string() + " && " + PIPEPROF_BINARY + " workload " +
        PIPEPROF_WORKLOADS_DIR + "/" + c.file + ".yaml -n " + std::to_string(c.ranks) + " --dry-run");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find(c.size), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("checkpoint-only: 10 written"), std::string::npos) << r.out;
  }
  EXPECT_TRUE(fs::is_empty(tmp.path()));  // nothing written
  // A rank count the model's parallelism does not divide: exit 2 naming the key.
  const CliResult bad = pipeprof("workload " + std::string(PIPEPROF_WORKLOADS_DIR) +
                                 "/llama3_70b.yaml -n 12 --dry-run");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("model.parallelism: 12 ranks"), std::string::npos) << bad.out;
  // A training workload: its files, bytes per rank and the dataset against this client's memory.
  const auto w = tmp.write("tiny.yaml", workload_text(tmp));
  const CliResult train = pipeprof("workload " + w.string() + " -n 2 --dry-run");
  ASSERT_EQ(train.code, 0) << train.out;
  EXPECT_NE(train.out.find("data generation: 16 npz file(s)"), std::string::npos) << train.out;
  EXPECT_NE(train.out.find("reads: 64.0 KiB per rank and epoch"), std::string::npos) << train.out;
  EXPECT_NE(train.out.find("this client's memory"), std::string::npos) << train.out;
  EXPECT_FALSE(fs::exists(tmp / "data"));
}

TEST(WorkloadCheckpoints, TrainingWaitsForCheckpointsOutsideAusWindow) {
  const TempDir tmp;
  std::string text = workload_text(tmp, "checkpoint:\n  checkpoint_folder: " +
                                            (tmp / "ckpt").string() +
                                            "\n  steps_between_checkpoints: 4\n");
  text.replace(text.find("model:\n  name: tiny\n"), 20,
               "model:\n  name: tiny\n  type: transformer\n  num_layers: 2\n  transformer:\n    "
               "vocab_size: 1000\n    hidden_size: 256\n    ffn_hidden_size: 512\n    "
               "num_attention_heads: 8\n    num_kv_heads: 8\n");
  text.replace(text.find("  train: True\n"), 14, "  train: True\n  checkpoint: True\n");
  const auto w = tmp.write("train.yaml", text);
  const auto out = tmp / "out";
  const CliResult r = pipeprof("workload " + w.string() + " -n 2 -q --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  // 8 steps an epoch, a checkpoint every 4: steps 4 and 8 of both epochs.
  for (const char* step : {"global_epoch1_step4", "global_epoch1_step8", "global_epoch2_step4",
                           "global_epoch2_step8"})
    EXPECT_TRUE(fs::exists(tmp / "ckpt" / step)) << step;
  const auto results = read_json(out / "results.json");
  const auto& x = results["experiments"][0]["workload"];
  EXPECT_EQ(x["checkpoint"]["ops"].size(), 4U);
  EXPECT_GT(x["checkpoint"]["training_stall_seconds"].get<double>(), 0);
  EXPECT_GT(x["dlio"]["train_au_mean_percentage"].get<double>(), 50);
  EXPECT_TRUE(read_json(out / "per_epoch_stats.json")["2"].contains("save_ckpt2"));
}

TEST(WorkloadCheckpoints, CtrlCDuringCheckpointsWritesWhatWasMeasuredAndExits130) {
  const TempDir tmp;
  const auto w = tmp.write("ckpt.yaml", checkpoint_text(tmp));
  const auto out = tmp / "out";
  const std::string cmd = std::string(PIPEPROF_BINARY) + " workload " + w.string() +
                          " ++workload.checkpoint.num_checkpoints_write=1000 "
                          "++workload.checkpoint.num_checkpoints_read=0 "
                          "++workload.checkpoint.time_between_checkpoints=0.2 "
                          "++workload.checkpoint.fsync=False -n 2 -q --out " +
                          out.string();
  const CliResult r = pipeprof::testing::run_command(
      "sh -c '" + cmd + " & pid=$!; sleep 1.5; kill -INT $pid; wait $pid; echo \"rc=$?\"'");
  EXPECT_NE(r.out.find("rc=130"), std::string::npos) << r.out;
  const auto results = read_json(out / "results.json");
  EXPECT_EQ(results["interrupted"], true);
  EXPECT_GE(results["experiments"][0]["workload"]["checkpoint"]["ops"].size(), 1U);
  // No file of a checkpoint cut short is left under its final name's folder half written: every
  // file there has its full size.
  for (const auto& e : fs::recursive_directory_iterator(tmp / "ckpt")) {
    if (!e.is_regular_file()) continue;
    EXPECT_EQ(e.path().filename().string().find(".partial-"), std::string::npos) << e.path();
  }
}

// DLIO's Megatron-style formats: generated with their index files and read through them (read
// calls for indexed_binary, a mapping for mmap_indexed_binary).
TEST(WorkloadCommand, IndexedBinaryFormatsAreGeneratedAndRead) {
  for (const std::string format : {"indexed_binary", "mmap_indexed_binary"}) {
    const TempDir tmp;
    std::string text = workload_text(tmp);
    text.replace(text.find("format: npz"), 11, "format: " + format);
    const auto w = tmp.write("ib.yaml", text);
    const auto out = tmp / "out";
    const CliResult r = pipeprof("workload " + w.string() + " -n 2 -q --out " + out.string() +
                                 " --spec-out " + (tmp / "spec.json").string());
    ASSERT_EQ(r.code, 0) << r.out;
    const fs::path first = tmp / "data" / "train" / ("img_01_of_16." + format);
    EXPECT_TRUE(fs::exists(first.string() + ".off.idx")) << first;
    EXPECT_TRUE(fs::exists(first.string() + ".sz.idx")) << first;
    const auto x = read_json(out / "results.json")["experiments"][0]["workload"];
    EXPECT_EQ(x["format"], format);
    EXPECT_GE(x["bytes_read"].get<int64_t>(), 2 * 16 * 2 * 4096) << x;
    const auto spec = read_json(tmp / "spec.json").dump();
    EXPECT_NE(spec.find(format == "indexed_binary" ? R"("mmap":false)" : R"("mmap":true)"),
              std::string::npos)
        << spec;
    // A damaged index: exit 2 naming it.
    fs::resize_file(first.string() + ".sz.idx", 5);
    const CliResult bad = pipeprof("workload " + w.string() + " -q --out " + out.string() +
                                   " ++workload.workflow.generate_data=False");
    EXPECT_EQ(bad.code, 2) << bad.out;
    EXPECT_NE(bad.out.find(first.string() + ".sz.idx: 5 bytes"), std::string::npos) << bad.out;
  }
}

// DLIO's image, csv and raw formats: generated and read (an image decoded, given for each of its
// file's samples as DLIO's image readers give it; a csv's rows; raw's fixed-length records), and a
// damaged file is bad input naming it.
TEST(WorkloadCommand, ImageCsvAndRawFormatsAreGeneratedAndRead) {
  for (const std::string format : {"jpeg", "png", "csv", "raw"}) {
    SCOPED_TRACE(format);
    const TempDir tmp;
    std::string text = workload_text(tmp);
    text.replace(text.find("format: npz"), 11, "format: " + format);
    const auto w = tmp.write("f.yaml", text);
    const auto out = tmp / "out";
    const CliResult r = pipeprof("workload " + w.string() + " -n 2 -q --out " + out.string());
    ASSERT_EQ(r.code, 0) << r.out;
    const auto x = read_json(out / "results.json")["experiments"][0]["workload"];
    EXPECT_EQ(x["format"], format);
    EXPECT_EQ(x["steps_per_epoch"], 8) << "16 files of 2 samples over 2 accelerators, batch 2";
    EXPECT_GT(x["bytes_read"].get<int64_t>(), 0) << x;
    // The first bytes overwritten: a csv value or the image's signature; raw has no structure.
    if (format == "raw") continue;
    const fs::path first = tmp / "data" / "train" / ("img_00_of_16." + format);
    {
      std::fstream f(first, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(format == "csv" ? static_cast<std::streamoff>(fs::file_size(first) - 3) : 0);
      f.write("x", 1);
    }
    const CliResult bad = pipeprof("workload " + w.string() + " -q --out " + out.string() +
                                   " ++workload.workflow.generate_data=False");
    EXPECT_EQ(bad.code, 2) << bad.out;
    EXPECT_NE(bad.out.find(first.string()), std::string::npos) << bad.out;
  }
}

// reader.odirect and reader.dont_use_mmap reach the loader's file source, which reads with them.
TEST(WorkloadCommand, ODirectAndNoMmapReachTheReader) {
  const TempDir tmp;
  const auto w = tmp.write("tiny.yaml", workload_text(tmp));
  for (const std::string key : {"odirect", "dont_use_mmap"}) {
    const CliResult r = pipeprof("workload " + w.string() + " -q --out " + (tmp / "out").string() +
                                 " ++workload.reader." + key + "=True --spec-out " +
                                 (tmp / "spec.json").string());
    ASSERT_EQ(r.code, 0) << r.out;
    const std::string spec = read_json(tmp / "spec.json").dump();
    EXPECT_NE(spec.find(key == "odirect" ? R"("direct":true)" : R"("mmap":false)"), std::string::npos)
        << spec;
  }
}

TEST(WorkloadCommand, CtrlCWritesWhatWasMeasuredAndExits130) {
  const TempDir tmp;
  const auto w = tmp.write("tiny.yaml", workload_text(tmp));
  ASSERT_EQ(pipeprof("datagen --workload " + w.string() + " -q").code, 0);
  const auto out = tmp / "out";
  const std::string cmd = std::string(PIPEPROF_BINARY) + " workload " + w.string() +
                          " workload.train.epochs=100000 -q --out " + out.string();
  const CliResult r = pipeprof::testing::run_command(
      "sh -c '" + cmd + " & pid=$!; sleep 1.5; kill -INT $pid; wait $pid; echo \"rc=$?\"'");
  EXPECT_NE(r.out.find("rc=130"), std::string::npos) << r.out;
  const auto results = read_json(out / "results.json");
  EXPECT_EQ(results["interrupted"], true);
  EXPECT_TRUE(fs::exists(out / "summary.json"));
  EXPECT_GE(read_json(out / "summary.json")["epochs"].get<int>(), 1);
}

TEST(PyTorchPeer, RunsTheSameWorkloadInPipeprofsResultsFormat) {
  if (std::system("/usr/bin/python3 -c 'import torch, numpy, yaml' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "/usr/bin/python3 lacks torch (python3-torch; scripts/setup.sh installs it)";
  }
  const TempDir tmp;
  const auto w = tmp.write("tiny.yaml", workload_text(tmp));
  ASSERT_EQ(pipeprof("datagen --workload " + w.string() + " -q").code, 0);
  const auto peer = tmp / "peer.json";
  const CliResult r = pipeprof::testing::run_command(std::string(PIPEPROF_PEER) + " " +
                                                     w.string() + " -n 2 --out " + peer.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("through PyTorch's DataLoader: 2 accelerator(s), 2 worker(s) each"),
            std::string::npos)
      << r.out;
  const auto doc = read_json(peer);
  EXPECT_EQ(doc["schema_version"], 4);
  const auto& x = doc["experiments"][0];
  EXPECT_EQ(x["id"], "workload:tiny");
  EXPECT_EQ(x["kind"], "peer");
  {  // the peer's entry, workload record and all, is read as pipeprof's own
    const nlohmann::json schema = pipeprof::results::testing::read_json(PIPEPROF_RESULTS_SCHEMA);
    std::vector<std::string> problems;
    pipeprof::results::testing::check_schema(schema, schema["$defs"]["workload"], x["workload"],
                                             "$.workload", problems);
    EXPECT_EQ(pipeprof::results::testing::joined(problems), "");
  }
  EXPECT_EQ(x["workload"]["peer"], "pytorch_dataloader");
  EXPECT_EQ(x["workload"]["accelerators"], 2);
  EXPECT_EQ(x["repetitions"].size(), 2U);
  EXPECT_GT(x["workload"]["dlio"]["train_throughput_mean_samples_per_second"].get<double>(), 0);
  // Side by side: pipeprof's run of the same workload against the peer's.
  const auto out = tmp / "out";
  ASSERT_EQ(pipeprof("workload " + w.string() + " -n 2 -q --out " + out.string()).code, 0);
  const CliResult cmp = pipeprof("compare " + peer.string() + " " + (out / "results.json").string());
  EXPECT_TRUE(cmp.code == 0 || cmp.code == 1) << cmp.out;
  EXPECT_NE(cmp.out.find("workload:tiny"), std::string::npos) << cmp.out;
  EXPECT_EQ(pipeprof("report " + peer.string() + " --out " + (tmp / "r").string()).code, 0);

  // Ctrl-C: the accelerators and their workers stop, what was measured is written, exit 130.
  const auto stopped = tmp / "stopped.json";
  const std::string long_run = std::string(PIPEPROF_PEER) + " " + w.string() +
                               " ++workload.train.epochs=100000 -n 2 --out " + stopped.string();
  const CliResult ctrl_c = pipeprof::testing::run_command(
      "sh -c '" + long_run + " & pid=$!; sleep 4; kill -INT $pid; wait $pid; echo \"rc=$?\"'");
  EXPECT_NE(ctrl_c.out.find("rc=130"), std::string::npos) << ctrl_c.out;
  EXPECT_EQ(read_json(stopped)["interrupted"], true);
  // "[p]": the pattern does not match the shell that runs pgrep.
  const CliResult left =
      pipeprof::testing::run_command("pgrep -f '[p]ytorch_dataloader.py .*" + stopped.string() + "'");
  EXPECT_NE(left.code, 0) << "processes left: " << left.out;

  // Bad input: a format the peer does not read.
  const auto tf = tmp.write("tf.yaml", "dataset:\n  format: tfrecord\n");
  const CliResult bad = pipeprof::testing::run_command(std::string(PIPEPROF_PEER) + " " + tf.string());
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("reads npz files"), std::string::npos) << bad.out;
}

// The suite runs what its manifest lists, by kind, and --only picks entries, kinds and sections.
TEST(SuiteManifest, RunsItsEntriesByKindAndOnlyPicksThem) {
  const TempDir tmp;
  fs::create_directories(tmp / "workloads");
  std::ofstream(tmp / "workloads" / "tiny.yaml") << workload_text(tmp);
  const auto manifest = tmp.write("suite.json", R"({"entries": [
      {"id": "catalog", "kind": "catalog", "section": "catalog"},
      {"id": "tiny", "kind": "workload", "section": "storage", "workload": "tiny",
       "epochs": {"quick": 1, "full": 2}},
      {"id": "tiny_cold", "kind": "search", "section": "storage", "workload": "tiny", "epochs": 1,
       "limit": {"quick": 2, "full": 4}, "cold": true, "predict": true}]})");
  ::setenv("PIPEPROF_WORKLOADS", (tmp / "workloads").c_str(), 1);
  const std::string common = "suite --quick --no-trace --manifest " + manifest.string() + " --out ";
  const CliResult all = pipeprof(common + (tmp / "all").string() + " --only storage");
  const CliResult search = pipeprof(common + (tmp / "search").string() + " --only search");
  const CliResult bad_only = pipeprof(common + (tmp / "bad").string() + " --only tiny,nope");
  ::unsetenv("PIPEPROF_WORKLOADS");
  ASSERT_EQ(all.code, 0) << all.out;
  const auto results = read_json(tmp / "all" / "results.json");
  std::vector<std::string> ids;
  for (const auto& x : results["experiments"])
    ids.push_back(x["id"].get<std::string>());
  EXPECT_EQ(ids, (std::vector<std::string>{"workload:tiny", "workload:tiny (cold)"})) << all.out;
  const auto cold = results["experiments"][1];
  EXPECT_EQ(cold["workload"]["max_accelerators"]["limit"], 2) << cold.dump();
  EXPECT_EQ(cold["workload"]["max_accelerators"]["storage_cold"], true);
  // "predict": the probe's prediction beside the search, on the same (cold) storage.
  const auto prediction = cold["workload"]["max_accelerators"]["prediction"];
  EXPECT_EQ(prediction["storage"], "local, cold") << cold.dump();
  EXPECT_TRUE(prediction["max_accelerators"].is_number_integer()) << cold.dump();
  EXPECT_GT(prediction["profile_mib_per_s"].get<double>(), 0) << cold.dump();
  EXPECT_NE(all.out.find("pipeprof predict: "), std::string::npos) << all.out;
  // Each repetition (an epoch) has its AU and samples/s, for compare.
  EXPECT_TRUE(cold["repetitions"][0]["au_percentage"].is_number());
  ASSERT_EQ(search.code, 0) << search.out;
  EXPECT_EQ(read_json(tmp / "search" / "results.json")["experiments"].size(), 1u) << search.out;
  EXPECT_EQ(bad_only.code, 2) << bad_only.out;
  EXPECT_NE(bad_only.out.find("no experiment \"nope\""), std::string::npos) << bad_only.out;
  EXPECT_FALSE(fs::exists(tmp / "bad")) << "nothing is run or written on bad input";
}

TEST(SuiteManifest, ABadManifestIsBadInputNamingTheFileAndKey) {
  const TempDir tmp;
  const auto bad_kind = tmp.write("kind.json", R"({"entries": [
      {"id": "x", "kind": "benchmark", "section": "storage"}]})");
  CliResult r = pipeprof("suite --quick --manifest " + bad_kind.string() + " --out " + (tmp / "o").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("kind.json: entries[0].kind: unknown kind \"benchmark\""), std::string::npos)
      << r.out;
  const auto no_limit = tmp.write("limit.json", R"({"entries": [
      {"id": "s", "kind": "search", "section": "storage", "workload": "w", "limit": {"quick": 0, "full": 4}}]})");
  r = pipeprof("suite --quick --manifest " + no_limit.string() + " --out " + (tmp / "o").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("limit.json: entries[0].limit.quick: expected a whole number"), std::string::npos)
      << r.out;
  const auto twice = tmp.write("twice.json", R"({"entries": [
      {"id": "c", "kind": "catalog", "section": "catalog"}, {"id": "c", "kind": "catalog", "section": "catalog"}]})");
  r = pipeprof("suite --quick --manifest " + twice.string() + " --out " + (tmp / "o").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("entries[1].id: \"c\" appears twice"), std::string::npos) << r.out;
  r = pipeprof("suite --quick --manifest " + (tmp / "missing.json").string() + " --out " + (tmp / "o").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("missing.json: the suite manifest cannot be read"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(tmp / "o"));
}

}  // namespace
