// DLIO workload files as pipeprof reads them (keys, defaults, quirks, overrides, errors), the
// loaders' access patterns, DLIO's metrics against a hand computation, and a small workload run
// end to end through the C++ API with its AU recomputed from the step log.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "pipeprof/harness/errors.h"
#include "pipeprof/pipelines/datagen.h"
#include "pipeprof/pipelines/spec.h"
#include "pipeprof/results/document.h"
#include "schema_check.h"
#include "pipeprof_testing/temp_dir.h"
#include "workload/dlio_metrics.h"
#include "workload/dlio_workload.h"
#include "workload/workload_pipeline.h"
#include "workload/workload_run.h"

namespace pipeprof::harness::workload {
namespace {

using pipeprof::testing_support::TempDir;
namespace formats = pipelines::formats;

std::string error_of(const std::string& file, const std::vector<std::string>& overrides = {}) {
  try {
    load_workload(file, overrides);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError for " << file;
  return {};
}

bool has_warning(const DlioWorkload& w, const std::string& part) {
  for (const auto& warning : w.warnings)
    if (warning.find(part) != std::string::npos) return true;
  return false;
}

TEST(WorkloadFile, TheShippedMLPerfWorkloadsLoadWithoutWarnings) {
  for (const char* name : {"unet3d_h100", "resnet50_h100", "cosmoflow_h100", "npz_256k"}) {
    const DlioWorkload w =
        load_workload(std::string(PIPEPROF_WORKLOADS_DIR) + "/" + name + ".yaml");
    EXPECT_TRUE(w.warnings.empty()) << name << ": " << w.warnings.front();
  }
  const DlioWorkload u = load_workload(std::string(PIPEPROF_WORKLOADS_DIR) + "/unet3d_h100.yaml");
  EXPECT_EQ(u.name, "unet3d");
  EXPECT_EQ(u.loader, Loader::kPyTorch);
  EXPECT_EQ(u.dataset.format, formats::DataFormat::kNpz);
  EXPECT_EQ(u.dataset.num_files_train, 168);
  EXPECT_DOUBLE_EQ(u.dataset.record_length, 146600628);
  EXPECT_DOUBLE_EQ(u.dataset.record_length_stdev, 68341808);
  EXPECT_EQ(u.batch_size, 7);
  EXPECT_EQ(u.read_threads, 4);
  EXPECT_TRUE(u.file_shuffle);
  EXPECT_DOUBLE_EQ(u.computation_time.mean(), 0.323);
  EXPECT_DOUBLE_EQ(u.au, 0.90);
  EXPECT_DOUBLE_EQ(u.scale, 0.25);
  const DlioWorkload r =
      load_workload(std::string(PIPEPROF_WORKLOADS_DIR) + "/resnet50_h100.yaml");
  EXPECT_EQ(r.loader, Loader::kTensorFlow);
  EXPECT_DOUBLE_EQ(r.dataset.record_length, 114660.07);  // a float, as the file writes it
  EXPECT_EQ(steps_per_epoch(r, 1), 3202);               // 1024 x 1251 / 400
}

TEST(WorkloadFile, DlioDefaultsOlderSpellingsAndTimeForms) {
  const TempDir tmp;
  const DlioWorkload d = load_workload(tmp.write("empty.yaml", "train:\n  epochs: 1\n").string());
  EXPECT_EQ(d.loader, Loader::kTensorFlow);  // DLIO's default framework and loader
  EXPECT_EQ(d.batch_size, 1);
  EXPECT_EQ(d.read_threads, 1);
  EXPECT_EQ(d.prefetch_size, 2);
  EXPECT_EQ(d.shuffle_size, 1024);
  EXPECT_EQ(d.seed, 123);
  EXPECT_EQ(d.dataset.num_files_train, 8);
  EXPECT_DOUBLE_EQ(d.dataset.record_length, 65536);
  EXPECT_EQ(d.exclude_start_steps, 1);
  EXPECT_TRUE(d.computation_time.zero());

  const DlioWorkload o = load_workload(tmp.write("old.yaml", R"(model: old_model
framework: pytorch
dataset:
  format: npz
  num_files_train: 168.0
  record_length: 1.5e6
data_reader:
  data_loader: pytorch
  batch_size: 4
  read_threads: autotune
reader:
  batch_size: 99
train:
  computation_time: 0.5
  computation_time_stdev: 0.1
  epochs: 3
)").string());
  EXPECT_EQ(o.name, "old_model");
  EXPECT_EQ(o.dataset.num_files_train, 168);
  EXPECT_DOUBLE_EQ(o.dataset.record_length, 1.5e6);
  EXPECT_EQ(o.batch_size, 4);  // data_reader wins over reader
  EXPECT_TRUE(o.read_threads_autotune);
  EXPECT_EQ(o.computation_time.kind(), pipelines::TimeDistribution::Kind::kNormal);
  EXPECT_EQ(o.computation_time.to_json(),
            (nlohmann::json{{"type", "normal"}, {"mean", 0.5}, {"stdev", 0.1}}));

  const DlioWorkload t = load_workload(tmp.write("times.yaml", R"(reader:
  preprocess_time: {type: uniform, min: 0.001, max: 0.003}
train:
  computation_time: {type: gamma, shape: 2, scale: 0.01}
evaluation:
  eval_time: {mean: 0.2}
)").string());
  EXPECT_EQ(t.preprocess_time.kind(), pipelines::TimeDistribution::Kind::kUniform);
  EXPECT_DOUBLE_EQ(t.preprocess_time.mean(), 0.002);
  EXPECT_DOUBLE_EQ(t.computation_time.mean(), 0.02);
  EXPECT_DOUBLE_EQ(t.eval_time.mean(), 0.2);
}

TEST(WorkloadFile, UnknownKeysAreWarningsNamingThem) {
  const TempDir tmp;
  const DlioWorkload w = load_workload(tmp.write("w.yaml", R"(reader:
  read_thread: 4
  batch_size: 2
trian:
  epochs: 2
metric:
  au: 0.7
)").string());
  EXPECT_TRUE(has_warning(w, "unknown key reader.read_thread")) << w.warnings.size();
  EXPECT_TRUE(has_warning(w, "unknown section `trian`"));
  EXPECT_EQ(w.warnings.size(), 2U);
  EXPECT_DOUBLE_EQ(w.au, 0.7);
}

TEST(WorkloadFile, BadValuesNameTheFileAndTheKey) {
  const TempDir tmp;
  const auto file = [&](const std::string& name, const std::string& text) {
    return tmp.write(name, text).string();
  };
  struct Case {
    std::string text, message;
  };
  const std::vector<Case> cases{
      {"reader:\n  batch_size: seven\n", "reader.batch_size: expected a whole number >= 1, got \"seven\""},
      {"reader:\n  batch_size: 2.5\n", "reader.batch_size: expected a whole number >= 1, got \"2.5\""},
      {"reader:\n  data_loader: dali\n", "reader.data_loader: expected pytorch or tensorflow"},
      {"reader:\n  file_shuffle: sometimes\n", "reader.file_shuffle: expected off, seed or random"},
      {"train:\n  epochs: 0\n", "train.epochs: expected a whole number >= 1, got \"0\""},
      {"train:\n  computation_time: {type: normal, stdev: 1}\n",
       "train.computation_time: expected a key `mean`"},
      {"train:\n  computation_time: {type: zipf, a: 2}\n",
       "train.computation_time.type: expected normal, uniform, gamma, exponential or poisson"},
      {"train:\n  computation_time: {type: uniform, min: 2, max: 1}\n",
       "train.computation_time.max: expected a number >= 2"},
      {"dataset:\n  format: parquet\n", "dataset.format: expected a format"},
      {"dataset:\n  record_length_bytes: -1\n", "dataset.record_length_bytes: expected a number of bytes"},
      {"metric:\n  au: 90\n", "metric.au: expected a fraction between 0 and 1"},
      {"framework: pytorch\ndataset:\n  format: tfrecord\n",
       "the pytorch loader does not read tfrecord files"},
      {"reader: [1, 2]\n", "reader: expected a mapping of keys to values, got a list"},
      {"- a\n- b\n", "expected a DLIO workload"},
      {"reader:\n  batch_size: [\n", "not a YAML file"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string f = file("bad" + std::to_string(i) + ".yaml", cases[i].text);
    const std::string msg = error_of(f);
    EXPECT_NE(msg.find(f + ": "), std::string::npos) << msg;
    EXPECT_NE(msg.find(cases[i].message), std::string::npos) << cases[i].text << " -> " << msg;
  }
  EXPECT_NE(error_of((tmp / "missing.yaml").string()).find("cannot read the workload file"),
            std::string::npos);
}

TEST(WorkloadOverrides, HydrasGrammar) {
  const TempDir tmp;
  const std::string f = tmp.write("w.yaml", "reader:\n  read_threads: 2\ntrain:\n  epochs: 5\n"
                                            "  seed: 1\n").string();
  const DlioWorkload w = load_workload(
      f, {"++workload.reader.read_threads=8", "workload.train.epochs=2", "+train.total_training_steps=3",
          "~workload.train.seed", "++workload.dataset.num_files_train=16",
          "++workload.train.computation_time={mean: 0.3, stdev: 0.05}"});
  EXPECT_EQ(w.read_threads, 8);
  EXPECT_EQ(w.epochs, 2);
  EXPECT_EQ(w.total_training_steps, 3);
  EXPECT_EQ(w.seed, 123);  // removed: DLIO's default
  EXPECT_EQ(w.dataset.num_files_train, 16);
  EXPECT_NEAR(w.computation_time.mean(), 0.3, 1e-9);  // |N(0.3, 0.05)| has the mean 0.3
  EXPECT_EQ(w.computation_time.kind(), pipelines::TimeDistribution::Kind::kNormal);

  const std::vector<std::pair<std::string, std::string>> bad{
      {"workload.train.total_training_steps=3", "has no `train.total_training_steps` (use ++"},
      {"+workload.train.epochs=3", "already has `train.epochs`"},
      {"~workload.train.nothing", "has no `train.nothing`"},
      {"workload.train.epochs", "expected [+|++]workload.<section>.<key>=<value>"},
      {"++workload.train.epochs=[1", "the value is not YAML"},
      {"++workload.train.epochs.x=1", "`train.epochs` is not a section"},
      {"++workload.train.epochs=none", "train.epochs: expected a whole number"},
      // Empty: once read as "no value" and the default (batch 1) used.
      {"++workload.reader.batch_size=", "no value after '=' (to remove the key: ~workload.reader.batch_size)"},
      {"workload.train.epochs= ", "no value after '='"},
  };
  for (const auto& [o, part] : bad) {
    const std::string msg = error_of(f, {o});
    EXPECT_NE(msg.find(part), std::string::npos) << o << " -> " << msg;
  }
}

// Text that is not UTF-8 failed only when results.json was written, after the whole run, with the
// JSON library's message: refused as the file is read, naming the key, the line and the byte.
TEST(WorkloadFile, TextThatIsNotUtf8IsRefusedNamingTheKey) {
  const TempDir tmp;
  const std::string f =
      tmp.write("latin1.yaml", "model:\n  name: caf\xe9\ntrain:\n  epochs: 2\n").string();
  EXPECT_EQ(error_of(f, {}), f + ": line 2: the value of `model.name` is not UTF-8 text (byte 3 of it)");
  const std::string key = tmp.write("key.yaml", "model:\n  n\xffme: x\n").string();
  EXPECT_EQ(error_of(key, {}), key + ": line 2: the key `model` is not UTF-8 text (byte 1 of it)");
  const std::string ok = tmp.write("ok.yaml", "model:\n  name: caf\xc3\xa9\ntrain:\n  epochs: 2\n").string();
  EXPECT_EQ(error_of(ok, {"++workload.model.name=b\xe9"}),
            "override of `model.name`: not UTF-8 text (byte 23 of the override)");
}

// yaml-cpp reads the first of two equal keys; DLIO's loader refuses such a file, and so does this.
TEST(WorkloadFile, AKeyTwiceInASectionIsRefusedWithItsLine) {
  const TempDir tmp;
  const std::string f =
      tmp.write("dup.yaml", "model:\n  name: a\ntrain:\n  epochs: 2\n  seed: 1\n  epochs: 3\n").string();
  EXPECT_EQ(error_of(f, {}), f + ": line 6: `train.epochs` appears twice in its section (DLIO refuses this too)");
  const std::string top = tmp.write("top.yaml", "train:\n  epochs: 2\ntrain:\n  epochs: 3\n").string();
  EXPECT_NE(error_of(top, {}).find("line 3: `train` appears twice"), std::string::npos) << error_of(top, {});
}

TEST(WorkloadScale, ScalesTheFilesAndKeepsOne) {
  DlioWorkload w;
  w.dataset.num_files_train = 168;
  w.dataset.num_files_eval = 2;
  apply_scale(w, 0.25);
  EXPECT_EQ(w.dataset.num_files_train, 42);
  EXPECT_EQ(w.dataset.num_files_eval, 1);
  EXPECT_THROW(apply_scale(w, 0), InputError);
  EXPECT_THROW(apply_scale(w, 1.5), InputError);
}

// ---- access patterns ----

std::vector<std::string> names(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i)
    out.push_back("/d/train/img_" + std::to_string(10 + i) + ".npz");
  return out;
}

TEST(WorkloadLoader, PyTorchRanksReadContiguousSampleRanges) {
  DlioWorkload w;
  w.loader = Loader::kPyTorch;
  w.dataset.format = formats::DataFormat::kNpz;
  w.dataset.num_files_train = 10;
  w.dataset.num_samples_per_file = 3;  // 30 samples
  w.batch_size = 2;
  w.read_threads = 2;
  // floor(30 / 4) = 7 each: [0, 7), [7, 14), [14, 21), [21, 28); samples 28 and 29 left out.
  EXPECT_EQ(pytorch_samples(w, 0, 4).begin, 0);
  EXPECT_EQ(pytorch_samples(w, 1, 4).begin, 7);
  EXPECT_EQ(pytorch_samples(w, 3, 4).begin, 21);
  EXPECT_EQ(pytorch_samples(w, 3, 4).end, 28);
  const nlohmann::json spec = loader_spec(w, names(10), 1, 4);
  const auto& st = spec["stages"];
  // Samples 7..13 lie in files 2..4; skip the 1 of file 2 before sample 7, take 7.
  EXPECT_EQ(st[0]["op"], "list_files");
  const std::vector<std::string> all = names(10);
  EXPECT_EQ(st[0]["files"], nlohmann::json(std::vector<std::string>(all.begin() + 2, all.begin() + 5)));
  EXPECT_EQ(st[1]["op"], "interleave");
  EXPECT_EQ(st[1]["cycle_length"], 2);
  EXPECT_EQ(st[1]["parallelism"], 2);
  EXPECT_EQ(st[1]["prefetch_input_elements"], 2);  // a cycle's worth of files opened ahead
  EXPECT_EQ(st[1]["block_length"], 3);
  EXPECT_EQ(st[1]["pipeline"]["stages"][0]["rows_axis"], -1);
  EXPECT_EQ(st[2], (nlohmann::json{{"op", "skip"}, {"count", 1}}));
  EXPECT_EQ(st[3], (nlohmann::json{{"op", "take"}, {"count", 7}}));
  EXPECT_EQ(st[4]["op"], "batch");
  EXPECT_EQ(st[5], (nlohmann::json{{"op", "prefetch"}, {"buffer_size", 2}}));  // 2 x ceil(2 / 2)
  EXPECT_NO_THROW(pipelines::parse_spec(spec, "spec"));
  // The training loop's loader: the same, repeated before its prefetch.
  const nlohmann::json r = repeated(spec);
  EXPECT_EQ(r["stages"][5]["op"], "repeat");
  EXPECT_EQ(r["stages"][6]["op"], "prefetch");
  EXPECT_EQ(steps_per_epoch(w, 4), 3);  // floor(30 / 2 / 4)
}

TEST(WorkloadLoader, TensorFlowRanksTakeFilesRoundRobinAndShuffleRecords) {
  DlioWorkload w;
  w.dataset.num_files_train = 7;
  w.read_threads = 3;
  w.batch_size = 4;
  w.sample_shuffle = true;
  w.shuffle_size = 16;
  w.file_shuffle = true;
  const nlohmann::json spec = loader_spec(w, names(7), 2, 3);
  const auto& st = spec["stages"];
  EXPECT_EQ(st[0]["files"], (nlohmann::json{names(7)[2], names(7)[5]}));  // i % 3 == 2
  EXPECT_EQ(st[0]["shuffle"], true);
  EXPECT_EQ(st[1]["op"], "interleave");
  EXPECT_EQ(st[1]["block_length"], 1);
  EXPECT_EQ(st[1]["pipeline"]["stages"][0]["op"], "tfrecord");
  EXPECT_EQ(st[2]["op"], "shuffle");
  EXPECT_EQ(st[2]["buffer_size"], 16);
  EXPECT_EQ(st[3]["op"], "batch");
  EXPECT_NO_THROW(pipelines::parse_spec(spec, "spec"));
  // Fewer files than ranks: every rank lists them all and keeps its share of the records.
  const nlohmann::json few = loader_spec(w, names(2), 1, 3);
  EXPECT_EQ(few["stages"][0]["files"].size(), 2U);
  EXPECT_EQ(few["stages"][2], (nlohmann::json{{"op", "shard"}, {"num_shards", 3}, {"index", 1}}));
  // read_threads: autotune makes the reader's parallelism and the prefetch knobs.
  w.read_threads_autotune = true;
  const nlohmann::json tuned = loader_spec(w, names(7), 0, 1);
  EXPECT_EQ(tuned["stages"][1]["parallelism"], "autotune");
  EXPECT_EQ(tuned["stages"].back()["buffer_size"], "autotune");
}

// ---- DLIO's metrics ----

StepRecord step(double load_s, double compute_s, double barrier_s = 0) {
  StepRecord s;
  s.load_ns = static_cast<int64_t>(load_s * 1e9);
  s.compute_ns = static_cast<int64_t>(compute_s * 1e9);
  s.proc_ns = s.load_ns + s.compute_ns;
  s.barrier_ns = static_cast<int64_t>(barrier_s * 1e9);
  return s;
}

TEST(DlioMetrics, AuAndThroughputAsDlioComputesThem) {
  DlioWorkload w;
  w.batch_size = 4;
  EpochRecord e;
  e.start_ns = 0;
  // Steps: (load, compute) = (2, 1), (0.5, 1), (0.25, 1), (0, 1); 0.25 s of barrier besides.
  e.steps = {step(2, 1), step(0.5, 1), step(0.25, 1, 0.25), step(0, 1)};
  e.end_ns = static_cast<int64_t>(7.0 * 1e9);
  // First step excluded: compute 3 s over (7 - proc[0] = 3) = 4 s; throughput (4 - 2) / 4 x 4.
  const EpochMetrics m = epoch_metrics(w, e, 4);
  EXPECT_NEAR(m.au, 3.0 / 4.0, 1e-9);
  EXPECT_NEAR(m.throughput, 2.0 / 4.0 * 4, 1e-9);
  // exclude_end_steps 1: the last step's proc leaves the time too.
  w.exclude_end_steps = 1;
  const EpochMetrics end = epoch_metrics(w, e, 4);
  EXPECT_NEAR(end.au, 2.0 / 3.0, 1e-9);
  // A single step cannot be measured.
  EpochRecord one;
  one.steps = {step(1, 1)};
  one.end_ns = 2'000'000'000;
  EXPECT_FALSE(epoch_metrics(w, one, 1).measured);
}

TEST(DlioMetrics, AcceleratorsAverageAuAndSumThroughput) {
  DlioWorkload w;
  w.batch_size = 2;
  w.dataset.record_length = 1048576;
  w.au = 0.9;
  TrainRun run;
  for (int a = 0; a < 2; ++a) {
    ConsumerRecord acc;
    for (int epoch = 0; epoch < 2; ++epoch) {
      EpochRecord e;
      e.epoch = epoch + 1;
      // Accelerator 0 never waits; accelerator 1 waits 1 s in its second step.
      e.steps = {step(1, 1), step(a == 1 ? 1 : 0, 1), step(0, 1)};
      e.end_ns = static_cast<int64_t>((a == 1 ? 5.0 : 4.0) * 1e9);
      e.complete = true;
      acc.epochs.push_back(e);
    }
    run.accelerators.push_back(acc);
  }
  const RunMetrics m = run_metrics(w, run, 3);
  // AU: accelerator 0: 2 / 2 = 1; accelerator 1: 2 / 3. Mean: 5/6 each epoch.
  ASSERT_EQ(m.au_percentage.size(), 2U);
  EXPECT_NEAR(m.au_percentage[0], 100.0 * 5 / 6, 1e-9);
  EXPECT_NEAR(m.au_mean_percentage, 100.0 * 5 / 6, 1e-9);
  EXPECT_NEAR(m.au_stdev_percentage, 0, 1e-9);
  // Throughput: (3 - 2) / 2 x 2 = 1 plus (3 - 2) / 3 x 2 = 2/3, summed.
  EXPECT_NEAR(m.throughput_mean, 1 + 2.0 / 3, 1e-9);
  EXPECT_NEAR(m.io_mean_mb_per_s, (1 + 2.0 / 3) * 1.0, 1e-9);  // x record_length / 2^20
  EXPECT_FALSE(m.meets_au);
  EXPECT_NEAR(m.accelerator_au_percentage[1], 100.0 * 2 / 3, 1e-9);

  const nlohmann::ordered_json s = summary_json(w, m, "a", "b");
  std::vector<std::string> keys;
  for (const auto& [k, v] : s.items())
    keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{
                      "start", "num_accelerators", "num_hosts", "hostname", "metric",
                      "num_files_train", "num_files_eval", "num_samples_per_file", "host_cpu_count",
                      "host_processor_name", "potential_caching", "host_cpuinfo", "host_meminfo",
                      "host_memory_GB", "data_size_per_host_GB", "epochs", "end"}));
  EXPECT_EQ(s["metric"]["train_au_meet_expectation"], "fail");
  EXPECT_EQ(s["num_accelerators"], 2);
  EXPECT_EQ(s["epochs"], 2);
}

// ---- a small workload, run ----

TEST(WorkloadRun, AuAndThroughputAgreeWithTheStepLog) {
  const TempDir tmp;
  DlioWorkload w;
  w.file = "test.yaml";
  w.name = "small";
  w.loader = Loader::kPyTorch;
  w.dataset.data_folder = (tmp / "data").string();
  w.dataset.format = formats::DataFormat::kNpz;
  w.dataset.num_files_train = 24;
  w.dataset.num_samples_per_file = 2;
  w.dataset.record_length = 4096;
  w.batch_size = 4;
  w.read_threads = 2;
  w.epochs = 2;
  w.computation_time = pipelines::TimeDistribution::constant(0.004);
  formats::generate_dataset(w.dataset, {});
  const WorkloadResult r = run_workload(w, {.accelerators = 2});
  ASSERT_EQ(r.run.accelerators.size(), 2U);
  EXPECT_EQ(r.steps, 6);  // 48 samples / 4 / 2
  // The hand computation: per accelerator and epoch, compute after the first step over the epoch
  // less the first step's proc; the mean over accelerators, the mean over epochs.
  std::vector<double> au_by_epoch(2, 0.0), thr_by_epoch(2, 0.0);
  int64_t samples = 0, bytes = 0;
  for (const ConsumerRecord& a : r.run.accelerators) {
    ASSERT_EQ(a.epochs.size(), 2U);
    for (size_t e = 0; e < 2; ++e) {
      const EpochRecord& rec = a.epochs[e];
      ASSERT_EQ(rec.steps.size(), 6U);
      double compute = 0;
      for (size_t i = 1; i < rec.steps.size(); ++i)
        compute += static_cast<double>(rec.steps[i].compute_ns) / 1e9;
      const double time =
          static_cast<double>(rec.end_ns - rec.start_ns - rec.steps[0].proc_ns) / 1e9;
      au_by_epoch[e] += 100 * compute / time / 2;
      thr_by_epoch[e] += (6 - 2) / time * 4;
      for (const StepRecord& s : rec.steps) {
        samples += s.samples;
        bytes += s.bytes;
        EXPECT_GE(s.compute_ns, 4'000'000);
      }
    }
  }
  ASSERT_EQ(r.metrics.au_percentage.size(), 2U);
  for (size_t e = 0; e < 2; ++e) {
    EXPECT_NEAR(r.metrics.au_percentage[e], au_by_epoch[e], 1e-6);
    EXPECT_NEAR(r.metrics.throughput_samples_per_s[e], thr_by_epoch[e], 1e-6);
  }
  EXPECT_NEAR(r.metrics.au_mean_percentage, (au_by_epoch[0] + au_by_epoch[1]) / 2, 1e-6);
  EXPECT_GT(r.metrics.au_mean_percentage, 0);
  EXPECT_LE(r.metrics.au_mean_percentage, 100);
  // Every step had a full batch of 64 x 64 samples (sqrt(4096)); the loaders read every file once
  // an epoch (2 accelerators x 12 files).
  EXPECT_EQ(samples, 2 * 2 * 6 * 4);
  EXPECT_EQ(bytes, samples * 64 * 64);
  int64_t files_opened = 0;
  for (const auto& s : r.run.accelerators[0].stages)
    files_opened += s.files_opened;
  EXPECT_GE(files_opened, 12);
  EXPECT_GT(r.metrics.bytes_read_per_epoch[0], 24 * 4096);
  // The result entry: one repetition per epoch, the ideal the computation time.
  const ExperimentResult x = to_experiment(w, r);
  EXPECT_EQ(x.id, "workload:small");
  EXPECT_EQ(x.repetitions.size(), 2U);
  EXPECT_NEAR(*x.ideal_ms, 6 * 4.0, 1e-9);
  ASSERT_TRUE(x.efficiency.has_value());
  EXPECT_GT(*x.efficiency, 0);
  EXPECT_LE(*x.efficiency, 1.0);
  // Its kind and workload record, every field of which the schema describes.
  EXPECT_EQ(x.kind, results::EntryKind::kWorkload);
  const nlohmann::json entry = to_json(x);
  const nlohmann::json& j = entry["workload"];
  EXPECT_EQ(entry["kind"], "workload");
  EXPECT_EQ(j["accelerators"], 2);
  EXPECT_EQ(j["per_accelerator"].size(), 2U);
  EXPECT_EQ(j["dlio"]["train_au_percentage"].size(), 2U);
  const nlohmann::json schema = results::testing::read_json(PIPEPROF_RESULTS_SCHEMA);
  const nlohmann::json doc =
      results::make_document(results::capture_environment("test"), nlohmann::json::array({entry}),
                             {.repetitions = 1, .created_utc = results::utc_now()});
  std::vector<std::string> problems;  // the entry as the document holds it
  results::testing::check_schema(schema, schema["$defs"]["experiment"], doc["experiments"][0],
                                 "$.experiments[0]", problems);
  EXPECT_EQ(results::testing::joined(problems), "");
}

TEST(WorkloadRun, AutotunedReadersStartAtOneThread) {
  const TempDir tmp;
  DlioWorkload w;
  w.file = "auto.yaml";
  w.loader = Loader::kTensorFlow;
  w.dataset.data_folder = (tmp / "data").string();
  w.dataset.num_files_train = 8;
  w.dataset.num_samples_per_file = 16;
  w.dataset.record_length = 1024;
  w.batch_size = 4;
  w.read_threads_autotune = true;
  w.epochs = 2;
  w.computation_time = pipelines::TimeDistribution::constant(0.002);
  formats::generate_dataset(w.dataset, {});
  const WorkloadResult r = run_workload(w, {.accelerators = 1});
  const nlohmann::json& tuned = r.run.accelerators.at(0).autotune;
  ASSERT_TRUE(tuned.contains("final")) << tuned.dump();
  // One reader keeps up with 2 ms steps of 4 KiB: the tuner has no reason to add one, and the
  // knob it would otherwise start at (cycle_length, 8) is never seen.
  bool seen = false;
  for (const auto& k : tuned["final"]) {
    if (k["knob"] != "parallelism") continue;
    seen = true;
    EXPECT_EQ(k["value"], 1) << tuned.dump();
  }
  EXPECT_TRUE(seen) << tuned.dump();
  for (const auto& c : tuned["changes"]) {
    if (c["knob"] == "parallelism") {
      EXPECT_GE(c["old"].get<int>(), 1);
    }
  }
}

TEST(WorkloadRun, MissingFilesNameTheFolderAndHowToMakeThem) {
  const TempDir tmp;
  DlioWorkload w;
  w.file = "w.yaml";
  w.dataset.data_folder = (tmp / "nothing").string();
  w.dataset.num_files_train = 4;
  try {
    training_files(w);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("0 training file(s) match"), std::string::npos) << msg;
    EXPECT_NE(msg.find("pipeprof datagen --workload w.yaml"), std::string::npos) << msg;
  }
}

// The storage measures between probes read at most about a budget of bytes, spread over the set.
TEST(WorkloadRun, StorageMeasuresReadFilesSpreadOverTheDatasetUpToABudget) {
  const TempDir tmp;
  std::vector<std::string> files;
  for (int i = 0; i < 10; ++i) {
    std::string name = "f";
    name += std::to_string(i);  // not "f" + ...: GCC 12's false -Wrestrict at -O3
    const auto path = tmp.write(name, std::string(1000, 'x'));
    files.push_back(path.string());
  }
  EXPECT_EQ(spread_files(files, 10'000), files);  // all of them fit
  EXPECT_EQ(spread_files(files, 1'000'000), files);
  const std::vector<std::string> half = spread_files(files, 5'000);
  ASSERT_EQ(half.size(), 5u);  // every 2nd
  EXPECT_EQ(half[0], files[0]);
  EXPECT_EQ(half[4], files[8]);
  const std::vector<std::string> third = spread_files(files, 3'500);
  ASSERT_EQ(third.size(), 4u);  // every 3rd: 0, 3, 6, 9
  EXPECT_EQ(third[3], files[9]);
  EXPECT_TRUE(spread_files({}, 1).empty());
}

TEST(WorkloadRun, TheSyntheticLoaderWaitsForNothing) {
  DlioWorkload w;
  w.dataset.num_files_train = 4;
  w.dataset.num_samples_per_file = 8;
  w.batch_size = 4;
  w.computation_time = pipelines::TimeDistribution::constant(0.002);
  const WorkloadResult r = run_workload(w, {.accelerators = 2}, LoaderMode::kSynthetic);
  EXPECT_EQ(r.steps, 4);
  EXPECT_GT(r.metrics.au_mean_percentage, 50);  // no loader: only the barrier and the sleeps
  for (const auto& a : r.run.accelerators)
    EXPECT_EQ(a.epochs.front().bytes_read, 0);
}

}  // namespace
}  // namespace pipeprof::harness::workload
