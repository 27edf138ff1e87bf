// Ranks on Open MPI (label `mpi`): `mpirun --oversubscribe -np 2 | 4 pipeprof workload | run` on
// this machine. Rank 0 gathers every rank's records into one results.json and summary.json, the
// ranks' traces merge into one timeline with a lane per rank on one clock (checked against a
// known barrier with the ranks' clocks deliberately skewed), a rank that fails is named by rank
// 0, a killed rank ends the job within seconds with the rank named, and Ctrl-C writes what was
// measured. Skips where mpirun is not installed or this build has no MPI.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "pipeprof/harness/cluster.h"
#include "pipeprof_testing/mpirun.h"
#include "pipeprof_testing/run_command.h"
#include "pipeprof_testing/temp_dir.h"
#include "workload/scaleout_suite.h"

namespace {

using pipeprof::testing::CliResult;
using pipeprof::testing_support::mpirun;
using pipeprof::testing_support::mpirun_options;
using pipeprof::testing_support::TempDir;
namespace fs = std::filesystem;

#define REQUIRE_MPI()                                                                      \
  do {                                                                                     \
    if (pipeprof::harness::workload::find_mpirun().empty())                                \
      GTEST_SKIP() << "mpirun is not installed (openmpi-bin)";                             \
    if (!pipeprof::harness::cluster::mpi_built())                                          \
      GTEST_SKIP() << "this build has no Open MPI (PIPEPROF_MPI)";                         \
  } while (0)

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

// 32 npz files of one 64 KiB sample, batch 2, 2 readers, a 5 ms step, 2 epochs.
fs::path workload(const TempDir& tmp, int epochs = 2) {
  return tmp.write("w.yaml",
                   "model:\n  name: mpi_small\nframework: pytorch\nworkflow:\n  generate_data: "
                   "True\n  train: True\ndataset:\n  data_folder: " + (tmp / "data").string() +
                       "\n  format: npz\n  num_files_train: 32\n  num_samples_per_file: 1\n  "
                       "record_length: 65536\nreader:\n  data_loader: pytorch\n  batch_size: 2\n  "
                       "read_threads: 2\ntrain:\n  epochs: " + std::to_string(epochs) +
                       "\n  computation_time: 0.005\nmetric:\n  au: 0.5\n");
}

std::string bin() {
  return PIPEPROF_BINARY;
}

// The workload's dataset, once, before a job that does not generate it.
void generate(const fs::path& workload_file) {
  const CliResult r =
      pipeprof::testing::run_command(bin() + " datagen --workload " + workload_file.string() + " -q");
  ASSERT_EQ(r.code, 0) << r.out;
}

// No rank of the job is left running. mpirun can return while a rank it is killing (after
// another rank's non-zero exit) is still on its way out, so the ranks get a few seconds to go.
void expect_no_ranks_left(const TempDir& tmp) {
  const std::string pgrep = "pgrep -f '[p]ipeprof workload " + (tmp / "w.yaml").string() + "'";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  CliResult ps = pipeprof::testing::run_command(pgrep);
  while (ps.code == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ps = pipeprof::testing::run_command(pgrep);
  }
  EXPECT_NE(ps.code, 0) << "ranks left 10 s after mpirun returned: " << ps.out;
}

TEST(Mpi, WorkloadGathersEveryRankAndMergesTheTraces) {
  REQUIRE_MPI();
  const TempDir tmp;
  const fs::path out = tmp / "out";
  const CliResult r = pipeprof::testing::run_command(
      mpirun(2) + bin() + " workload " + workload(tmp).string() + " -q --out " + out.string() +
      " --trace " + (out / "trace.json").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("ranks: Open MPI"), std::string::npos) << r.out;
  const nlohmann::json summary = read_json(out / "summary.json");
  EXPECT_EQ(summary["num_accelerators"], 2) << summary;
  const nlohmann::json w = read_json(out / "results.json")["experiments"][0]["workload"];
  EXPECT_EQ(w["accelerators"], 2);
  EXPECT_EQ(w["steps_per_epoch"], 8);  // 32 samples / batch 2 / 2 ranks
  ASSERT_EQ(w["ranks"]["ranks"].size(), 2U) << w;
  double sum = 0;
  for (const auto& row : w["ranks"]["ranks"]) {
    EXPECT_GT(row["samples_per_second"].get<double>(), 0) << row;
    EXPECT_EQ(row["accelerators"], 1);
    sum += row["samples_per_second"].get<double>();
  }
  EXPECT_NEAR(w["ranks"]["samples_per_second"].get<double>(), sum, 1e-6);
  ASSERT_EQ(w["per_accelerator"].size(), 2U);
  // One process per rank in the trace, each with its accelerator's lane and the loader's.
  const nlohmann::json trace = read_json(out / "trace.json");
  std::map<int, std::string> names;
  std::map<int, int> barriers;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("name", "") == "process_name") names[e["pid"].get<int>()] = e["args"]["name"];
    if (e.value("name", "") == "barrier") ++barriers[e["pid"].get<int>()];
  }
  ASSERT_EQ(names.size(), 2U) << trace["otherData"];
  EXPECT_TRUE(names[0].starts_with("rank 0 @ ")) << names[0];
  EXPECT_TRUE(names[1].starts_with("rank 1 @ ")) << names[1];
  EXPECT_EQ(barriers[0], 16);  // a barrier after every step of 2 epochs
  EXPECT_EQ(barriers[1], 16);
  EXPECT_EQ(trace["otherData"]["ranks"], "2");
  // `pipeprof analyze` names the rank the others wait for.
  const CliResult a = pipeprof::testing::run_command(bin() + " analyze " + (out / "trace.json").string());
  ASSERT_EQ(a.code, 0) << a.out;
  EXPECT_NE(a.out.find("straggler: rank "), std::string::npos) << a.out;
  expect_no_ranks_left(tmp);
}

// The ranks' clocks skewed by 5 ms per rank (PIPEPROF_CLOCK_SKEW_NS stands for hosts whose clocks
// differ): after the merge, every rank's barrier of a step must overlap the others': the last rank
// arrives before any leaves. Unmerged (or merged with a wrong sign) they would be 5-15 ms apart.
TEST(Mpi, MergedTraceIsOnOneClock) {
  REQUIRE_MPI();
  const TempDir tmp;
  const fs::path out = tmp / "out";
  const CliResult r = pipeprof::testing::run_command(
      "PIPEPROF_CLOCK_SKEW_NS=5000000 " + mpirun(4, "PIPEPROF_CLOCK_SKEW_NS") + bin() +
      " workload " + workload(tmp).string() + " -q --normal-priority --out " + out.string() +
      " --trace " + (out / "trace.json").string());
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json trace = read_json(out / "trace.json");
  const int64_t error_ns = std::stoll(trace["otherData"]["clock_error_ns"].get<std::string>());
  EXPECT_LE(error_ns, 50'000) << "the ping-pong's error bound";
  const nlohmann::json offsets = nlohmann::json::parse(trace["otherData"]["clock_offsets"].get<std::string>());
  for (const auto& o : offsets) {
    const int rank = o["rank"];
    for (const auto& m : o["measures"]) {
      EXPECT_NEAR(m["offset_ns"].get<double>(), -5e6 * rank, 200'000) << o;
    }
  }
  std::map<int, std::vector<std::pair<double, double>>> spans;  // per rank, us
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("name", "") != "barrier") continue;
    const double ts = e["ts"].get<double>();
    spans[e["pid"].get<int>()].emplace_back(ts, ts + e["dur"].get<double>());
  }
  ASSERT_EQ(spans.size(), 4U);
  for (auto& [rank, s] : spans)
    std::sort(s.begin(), s.end());
  const size_t steps = spans[0].size();
  ASSERT_EQ(steps, 8U);  // 32 / 2 / 4 ranks = 4 steps, 2 epochs
  for (size_t i = 0; i < steps; ++i) {
    double last_in = -1e300, first_out = 1e300;
    for (auto& [rank, s] : spans) {
      ASSERT_EQ(s.size(), steps) << "rank " << rank;
      last_in = std::max(last_in, s[i].first);
      first_out = std::min(first_out, s[i].second);
    }
    // Each rank's clock is within error_ns of rank 0's at the ping-pong (at most 50 us: above),
    // but on a loaded 2-core machine barriers were seen 20-80 us apart with a bound of 5-40 us.
    // What this checks is the merge: a wrong or missing one puts the ranks 5-15 ms apart, far
    // beyond 1 ms.
    const double tolerance_us = std::max(2.0 * static_cast<double>(error_ns) / 1e3, 1000.0);
    EXPECT_LE(last_in, first_out + tolerance_us)
        << "barrier " << i << ": the last rank arrived " << last_in - first_out
        << " us after the first left; the clocks' error bound is " << error_ns / 1e3 << " us";
  }
}

TEST(Mpi, FailingRankIsNamedByRankZero) {
  REQUIRE_MPI();
  const TempDir tmp;
  const fs::path w = workload(tmp);
  ASSERT_NO_FATAL_FAILURE(generate(w));
  // MPMD: rank 1 is pointed at a folder without the dataset.
  const std::string common = " workload " + w.string() + " -q --out " + (tmp / "out").string();
  const std::string cmd = mpirun_options();
  const CliResult r = pipeprof::testing::run_command(
      cmd + " -np 1 " + bin() + common + " ++workload.workflow.generate_data=False : -np 1 " +
      bin() + common + " ++workload.workflow.generate_data=False ++workload.dataset.data_folder=" +
      (tmp / "nothing").string());
  EXPECT_EQ(r.code, 2) << "bad input on a rank exits 2, as alone:\n" << r.out;
  EXPECT_NE(r.out.find("rank 1 @ "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("training file(s)"), std::string::npos) << r.out;
  expect_no_ranks_left(tmp);
}

// DLIO's checkpoints under mpirun: every process writes its ranks' files, rank 0 gathers every
// rank's saves and loads; a rank whose checkpoint is missing is named by rank 0 with exit 2.
TEST(Mpi, CheckpointsAreWrittenByEveryRankAndAMissingOneIsNamed) {
  REQUIRE_MPI();
  const TempDir tmp;
  const fs::path w = tmp.write(
      "w.yaml",
      "model:\n  name: mpi_ckpt\n  type: transformer\n  num_layers: 2\n  parallelism:\n    "
      "zero_stage: 1\n    tensor: 2\n  transformer:\n    vocab_size: 1000\n    hidden_size: 256\n"
      "    ffn_hidden_size: 512\n    num_attention_heads: 8\n    num_kv_heads: 8\n"
      "framework: pytorch\nworkflow:\n  train: False\n  checkpoint: True\ncheckpoint:\n  "
      "checkpoint_folder: " + (tmp / "ckpt").string() +
          "\n  num_checkpoints_write: 2\n  num_checkpoints_read: 2\n");
  const fs::path out = tmp / "out";
  const CliResult r = pipeprof::testing::run_command(mpirun(2) + bin() + " workload " + w.string() +
                                                     " -n 2 -q --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  // 4 ranks of tensor 2: data-parallel ranks 0 and 1, each with two tensor-parallel halves.
  for (const char* f : {"model_0_model_states.pt", "model_1_model_states.pt",
                        "zero_pp_rank_1_mp_rank_0_optim_states.pt",
                        "zero_pp_rank_1_mp_rank_1_optim_states.pt"})
    EXPECT_TRUE(fs::exists(tmp / "ckpt" / "global_epoch1_step2" / f)) << f;
  const nlohmann::json c = read_json(out / "results.json")["experiments"][0]["workload"]["checkpoint"];
  EXPECT_EQ(c["ranks"], 4);
  ASSERT_EQ(c["ops"].size(), 4U) << c;
  for (const auto& op : c["ops"])
    EXPECT_EQ(op["ranks"], 4) << op;  // every process's ranks, gathered

  // MPMD: rank 1 reads from a folder without the checkpoint.
  const std::string common = " workload " + w.string() + " -n 2 -q --out " + (tmp / "o2").string() +
                             " ++workload.checkpoint.num_checkpoints_write=0";
  const CliResult bad = pipeprof::testing::run_command(
      mpirun_options() + " -np 1 " + bin() + common + " : -np 1 " + bin() + common +
      " ++workload.checkpoint.checkpoint_folder=" + (tmp / "none").string());
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("rank 1 @ "), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find((tmp / "none").string()), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("is missing"), std::string::npos) << bad.out;
  expect_no_ranks_left(tmp);
}

TEST(Mpi, KilledRankEndsTheJobNamingIt) {
  REQUIRE_MPI();
  const TempDir tmp;
  const fs::path w = workload(tmp, 1000);
  ASSERT_NO_FATAL_FAILURE(generate(w));
  // Kill rank 1 (the second rank process mpirun started) once the job runs.
  const std::string job = mpirun(3) + bin() + " workload " + w.string() + " -q --out " +
                          (tmp / "out").string();
  const CliResult r = pipeprof::testing::run_command(
      "sh -c '" + job + " & pid=$!; sleep 2; victim=$(pgrep -P $pid -f \"[p]ipeprof workload\" | "
      "sort -n | sed -n 2p); kill -9 $victim; start=$(date +%s); wait $pid; rc=$?; "
      "echo \"rc=$rc after $(( $(date +%s) - start )) s\"'");
  EXPECT_NE(r.out.find("rank 1"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("rc=0 "), std::string::npos) << r.out;
  const auto at = r.out.find("after ");
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_LE(std::stoi(r.out.substr(at + 6)), 10) << r.out;  // within seconds, never a hang
  expect_no_ranks_left(tmp);
}

// A stopped rank (SIGSTOP) once left the others waiting in the step's collective forever. Their
// watchdog names the wait, and --stall-timeout ends the job (exit 1) within seconds.
TEST(Mpi, AStoppedRankIsReportedAndTheStallTimeoutEndsTheJob) {
  REQUIRE_MPI();
  const TempDir tmp;
  const fs::path w = workload(tmp, 1000);
  ASSERT_NO_FATAL_FAILURE(generate(w));
  const std::string job = mpirun(2) + bin() + " workload " + w.string() + " -q --out " +
                          (tmp / "out").string() + " --stall-report 1 --stall-timeout 3";
  const CliResult r = pipeprof::testing::run_command(
      "sh -c '" + job + " & pid=$!; sleep 2; victim=$(pgrep -P $pid -f \"[p]ipeprof workload\" | "
      "sort -n | sed -n 2p); kill -STOP $victim; start=$(date +%s); wait $pid; rc=$?; "
      "kill -CONT $victim 2>/dev/null; echo \"rc=$rc after $(( $(date +%s) - start )) s\"'");
  EXPECT_NE(r.out.find("rank 0 of 2: the other ranks at the step barrier"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the run stalled: no progress for 3.0 s (the stall timeout)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("rc=1 "), std::string::npos) << r.out;
  const auto at = r.out.rfind("after ");  // the shell's line, the last
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_LE(std::stoi(r.out.substr(at + 6)), 20) << r.out;  // never a hang
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  expect_no_ranks_left(tmp);
}

TEST(Mpi, CtrlCWritesWhatWasMeasured) {
  REQUIRE_MPI();
  const TempDir tmp;
  const fs::path w = workload(tmp, 1000);
  ASSERT_NO_FATAL_FAILURE(generate(w));
  const fs::path out = tmp / "out";
  const std::string job = mpirun(2) + bin() + " workload " + w.string() + " -q --out " + out.string();
  const CliResult r = pipeprof::testing::run_command("sh -c '" + job +
                                                     " & pid=$!; sleep 2; kill -INT $pid; wait $pid; "
                                                     "echo \"rc=$?\"'");
  EXPECT_EQ(r.out.find("rc=0\n"), std::string::npos) << r.out;
  ASSERT_TRUE(fs::exists(out / "results.json")) << r.out;
  const nlohmann::json doc = read_json(out / "results.json");
  EXPECT_TRUE(doc["interrupted"].get<bool>()) << doc;
  const nlohmann::json ranks = doc["experiments"][0]["workload"]["ranks"]["ranks"];
  EXPECT_EQ(ranks.size(), 2U) << doc["experiments"][0]["workload"];
  EXPECT_GT(doc["experiments"][0]["workload"]["dlio"]["train_au_mean_percentage"].get<double>(), 0);
  expect_no_ranks_left(tmp);
}

// `pipeprof run` under mpirun: the spec's rank tokens shard the files, rank 0 reports every rank.
TEST(Mpi, RunShardsFilesByRankAndGathersResults) {
  REQUIRE_MPI();
  const TempDir tmp;
  ASSERT_EQ(pipeprof::testing::run_command(bin() + " datagen --image-records " +
                                            (tmp / "images").string() +
                                            " --shards 4 --images-per-shard 8 --image-size 64 -q")
                .code,
            0);
  const fs::path spec = tmp.write(
      "spec.json",
      R"({"name": "sharded", "stages": [
           {"op": "list_files", "pattern": ")" + (tmp / "images").string() + R"(/train-*.tfrecord", "shuffle": false, "shard": "rank"},
           {"op": "interleave", "cycle_length": 2, "pipeline": {"stages": [{"op": "tfrecord", "files": "$element"}]}},
           {"op": "map", "fn": "chain", "args": {"fns": [
             {"fn": "parse_example", "args": {"features": [{"key": "image/encoded", "type": "bytes"}]}},
             {"fn": "decode_jpeg", "args": {"channels": 3}},
             {"fn": "normalize", "args": {"mean": 0.5, "std": 0.25}}]}},
           {"op": "batch", "batch_size": 4}],
         "experiment": {"step": "sleep:1", "epochs": 1}})");
  const fs::path json = tmp / "r.json";
  const CliResult r = pipeprof::testing::run_command(
      mpirun(2) + bin() + " run " + spec.string() + " --repetitions 1 --json " + json.string());
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json doc = read_json(json);
  ASSERT_EQ(doc["ranks"]["ranks"].size(), 2U) << doc["ranks"];
  for (const auto& row : doc["ranks"]["ranks"]) {
    EXPECT_EQ(row["elements"], 4) << row;  // 2 of the 4 shards: 16 images, 4 batches of 4
  }
  EXPECT_EQ(doc["ranks"]["samples_per_element"], 4);
  EXPECT_GT(doc["ranks"]["samples_per_second"].get<double>(), 0);
}

// `pipeprof suite` under mpirun: the catalog on every rank, one results.json with each
// experiment's ranks, and the traces merged (one process per rank).
TEST(Mpi, SuiteOnRanksWritesOneResultsWithEveryRank) {
  REQUIRE_MPI();
  const TempDir tmp;
  const fs::path out = tmp / "suite";
  const CliResult r = pipeprof::testing::run_command(
      mpirun(2) + bin() + " suite --quick --only map_parallel --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("all ranks"), std::string::npos) << r.out;
  const nlohmann::json doc = read_json(out / "results.json");
  ASSERT_EQ(doc["experiments"].size(), 1U);
  const nlohmann::json& x = doc["experiments"][0];
  EXPECT_EQ(x["id"], "map_parallel");
  ASSERT_EQ(x["ranks"]["ranks"].size(), 2U) << x["ranks"];
  EXPECT_GT(x["ranks"]["samples_per_second"].get<double>(), 0);
  const nlohmann::json trace = read_json(out / x["trace"].get<std::string>());
  int processes = 0;
  for (const auto& e : trace["traceEvents"])
    processes += e.value("name", "") == "process_name" ? 1 : 0;
  EXPECT_EQ(processes, 2);
  EXPECT_TRUE(fs::exists(out / "report.md"));
}

// Two "hosts": rank 1 in a network namespace this test creates, joined to the first by a veth
// pair (addresses of a private /24 that exists only between the two), and MPI held to TCP over it
// (no shared memory), so the ranks' messages take the TCP path they take between nodes. Needs root
// and iproute2; skips otherwise.
TEST(Mpi, TwoRanksOverTcpBetweenNetworkNamespaces) {
  REQUIRE_MPI();
  if (::geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  const TempDir tmp;
  const int id = static_cast<int>(::getpid() % 200) + 20;
  const std::string ns = "pipeprof-mpi-" + std::to_string(::getpid());
  const std::string a = "ppm" + std::to_string(::getpid() % 100000) + "a";
  const std::string b = "ppm" + std::to_string(::getpid() % 100000) + "b";
  const std::string net = "10.231." + std::to_string(id) + ".";
  const CliResult setup = pipeprof::testing::run_command(
      "ip netns add " + ns + " && ip link add " + a + " type veth peer name " + b +
      " && ip link set " + b + " netns " + ns + " && ip addr add " + net + "1/24 dev " + a +
      " && ip link set " + a + " up && ip netns exec " + ns + " ip addr add " + net + "2/24 dev " +
      b + " && ip netns exec " + ns + " ip link set " + b + " up && ip netns exec " + ns +
      " ip link set lo up");
  struct Cleanup {
    std::string ns;
    ~Cleanup() { (void)pipeprof::testing::run_command("ip netns del " + ns + " 2>/dev/null"); }
  } cleanup{ns};
  if (setup.code != 0) GTEST_SKIP() << "cannot create a network namespace here: " << setup.out;
  const fs::path w = workload(tmp);
  ASSERT_NO_FATAL_FAILURE(generate(w));
  const fs::path out = tmp / "out";
  const std::string args = " workload " + w.string() + " -q --out " + out.string() +
                           " --trace " + (out / "trace.json").string();  // every rank records
  // PMIx, Open MPI's runtime and its TCP transport all on the veth's network.
  const CliResult r = pipeprof::testing::run_command(
      "PMIX_MCA_ptl_tcp_if_include=" + net + "0/24 " + mpirun_options() +
      " --mca btl tcp,self --mca btl_tcp_if_include " + net + "0/24 "
      "--mca oob_tcp_if_include " + net + "0/24 -x PMIX_MCA_ptl_tcp_if_include -np 1 " + bin() +
      args + " : -np 1 ip netns exec " + ns + " " + bin() + args);
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json w_json = read_json(out / "results.json")["experiments"][0]["workload"];
  ASSERT_EQ(w_json["ranks"]["ranks"].size(), 2U) << w_json;
  EXPECT_EQ(w_json["steps_per_epoch"], 8);
  const nlohmann::json trace = read_json(out / "trace.json");
  int processes = 0;
  for (const auto& e : trace["traceEvents"])
    processes += e.value("name", "") == "process_name" ? 1 : 0;
  EXPECT_EQ(processes, 2) << trace["otherData"];
}

// A loader that fails mid-epoch on one rank only (its files are cut short): every rank stops at
// the next step and rank 0 names the rank; never a hang (the job runs under a 60 s timeout).
TEST(Mpi, LoaderFailingOnOneRankStopsEveryRank) {
  REQUIRE_MPI();
  const TempDir tmp;
  const fs::path w = workload(tmp);
  ASSERT_NO_FATAL_FAILURE(generate(w));
  // Rank 1's copy of the dataset: the same names, every file cut to 100 bytes.
  fs::create_directories(tmp / "cut" / "train");
  for (const auto& e : fs::directory_iterator(tmp / "data" / "train")) {
    fs::copy_file(e.path(), tmp / "cut" / "train" / e.path().filename());
    fs::resize_file(tmp / "cut" / "train" / e.path().filename(), 100);
  }
  const std::string common = " workload " + w.string() + " -q --out " + (tmp / "out").string() +
                             " ++workload.workflow.generate_data=False";
  const std::string cmd = "timeout 60 " + mpirun_options();
  const CliResult r = pipeprof::testing::run_command(
      "(" + cmd + " -np 1 " + bin() + common + " : -np 1 " + bin() + common +
      " ++workload.dataset.data_folder=" + (tmp / "cut").string() + ") 2>&1; echo \"rc=$?\"");
  EXPECT_EQ(r.out.find("rc=124"), std::string::npos) << "the job hung:\n" << r.out;
  // Corrupt data on a rank is bad input: exit 2, as alone.
  EXPECT_NE(r.out.find("rc=2\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank 1 @ "), std::string::npos) << r.out;
  expect_no_ranks_left(tmp);
}

// Rank 0 failing before the ranks' first collective (its --spec-out cannot be written) while
// rank 1 waits in it: the job ends (MPI_Abort) instead of waiting for rank 0 forever.
TEST(Mpi, RankZeroFailingAloneEndsTheJob) {
  REQUIRE_MPI();
  const TempDir tmp;
  const fs::path w = workload(tmp);
  ASSERT_NO_FATAL_FAILURE(generate(w));
  const std::string common = " workload " + w.string() + " -q --out " + (tmp / "out").string() +
                             " ++workload.workflow.generate_data=False";
  const std::string cmd = "timeout 60 " + mpirun_options();
  const CliResult r = pipeprof::testing::run_command(
      "(" + cmd + " -np 1 " + bin() + common + " --spec-out " +
      (tmp / "no" / "such" / "x.json").string() + " : -np 1 " + bin() + common +
      ") 2>&1; echo \"rc=$?\"");
  EXPECT_EQ(r.out.find("rc=0\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("rc=124"), std::string::npos) << "the job hung:\n" << r.out;
  EXPECT_NE(r.out.find("(rank 0 @ "), std::string::npos) << r.out;
  expect_no_ranks_left(tmp);
}

}  // namespace

