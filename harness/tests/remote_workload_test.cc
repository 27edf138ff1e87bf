// `pipeprof workload` on a remote dataset (pipeprof.remote): the three ways of EXPERIMENTS.md C2
// against a real nginx the run starts (copy_first, direct, cached with and without preloading),
// their per-epoch figures in results.json, what each leaves behind (no server process, no copy, no
// temporary folder), bad settings (exit 2) and Ctrl-C (exit 130, the server stopped). Skips where
// nginx or its echo module is not installed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "pipeprof/pipelines/remote.h"
#include "pipeprof/testbed/object_server.h"
#include "pipeprof_testing/run_command.h"
#include "pipeprof_testing/temp_dir.h"

namespace {

using pipeprof::testing::CliResult;
using pipeprof::testing_support::TempDir;
namespace fs = std::filesystem;

#define REQUIRE_NGINX()                                                                      \
  do {                                                                                       \
    std::string why_;                                                                        \
    if (!pipeprof::testbed::ObjectServer::available(true, &why_)) GTEST_SKIP() << why_;    \
  } while (0)

// The command with TMPDIR in the test's folder, so that the server's temporary folder is seen.
CliResult pipeprof(const TempDir& tmp, const std::string& args) {
  return pipeprof::testing::run_command("TMPDIR=" + (tmp / "tmp").string() + " " +
                                        std::string(PIPEPROF_BINARY) + " " + args);
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

// 16 npz files of one 64 KiB sample, batch 2, 2 readers, a 5 ms step: 8 steps an epoch, 2 epochs;
// the server adds 2 ms to first byte.
fs::path workload(const TempDir& tmp, const std::string& mode, const std::string& extra = "") {
  fs::create_directories(tmp / "tmp");
  return tmp.write(
      mode + ".yaml",
      "model:\n  name: remote_" + mode + "\nframework: pytorch\nworkflow:\n  generate_data: "
      "True\n  train: True\ndataset:\n  data_folder: " + (tmp / "data").string() +
          "\n  format: npz\n  num_files_train: 16\n  num_samples_per_file: 1\n  "
          "record_length_bytes: 65536\nreader:\n  data_loader: pytorch\n  batch_size: 2\n  "
          "read_threads: 2\ntrain:\n  epochs: 2\n  computation_time: 0.005\nmetric:\n  au: "
          "0.5\npipeprof:\n  remote:\n    mode: " + mode + "\n    latency_ms: 2\n" + extra);
}

int64_t dataset_bytes(const TempDir& tmp) {
  int64_t total = 0;
  for (const auto& e : fs::directory_iterator(tmp / "data" / "train")) total += static_cast<int64_t>(e.file_size());
  return total;
}

// Nothing of the server is left: its temporary folder is gone (its processes stop with it).
void expect_server_gone(const TempDir& tmp) {
  for (const auto& e : fs::directory_iterator(tmp / "tmp")) {
    EXPECT_FALSE(e.path().filename().string().starts_with("pipeprof-nginx-")) << e.path();
  }
  // "[p]": the pattern does not match the shell that runs pgrep.
  const CliResult ps =
      pipeprof::testing::run_command("pgrep -f '" + (tmp / "tmp").string() + "/[p]ipeprof-nginx'");
  EXPECT_NE(ps.code, 0) << "nginx processes left: " << ps.out;
}

TEST(RemoteWorkload, DirectReadsEveryFileEveryEpoch) {
  REQUIRE_NGINX();
  const TempDir tmp;
  const auto out = tmp / "out";
  const CliResult r = pipeprof(tmp, "workload " + workload(tmp, "direct").string() + " -q --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("remote (direct): 16 files"), std::string::npos) << r.out;
  const auto remote = read_json(out / "results.json")["experiments"][0]["workload"]["remote"];
  EXPECT_EQ(remote["mode"], "direct");
  EXPECT_EQ(remote["files"], 16);
  EXPECT_EQ(remote["requests_in_flight"], 2);
  ASSERT_EQ(remote["epochs"].size(), 2U);
  const int64_t bytes = dataset_bytes(tmp);
  for (const auto& e : remote["epochs"]) {
    // Every file each epoch (the loaders read ahead into the next epoch: at most a few more).
    EXPECT_GE(e["remote_bytes"].get<int64_t>(), bytes * 3 / 4) << e;
    EXPECT_GE(e["requests"].get<int64_t>(), 12) << e;
    EXPECT_GT(e["seconds"].get<double>(), 0);
    EXPECT_GT(e["ideal_seconds"].get<double>(), 0);
  }
  EXPECT_GT(remote["time_to_first_step_seconds"].get<double>(), 0.002);  // at least one latency
  expect_server_gone(tmp);
}

// The search's storage bound of a workload that serves its files is what its server gives, not
// the page cache of its folder: 16 streams (the least the measure opens), each request of a
// 64 KiB file taking at least 50 ms, give at most 20 MiB/s, where the page cache gives hundreds.
TEST(RemoteWorkload, TheSearchMeasuresTheStorageBoundThroughTheServer) {
  REQUIRE_NGINX();
  const TempDir tmp;
  const auto out = tmp / "out";
  const CliResult r = pipeprof(
      tmp, "workload " + workload(tmp, "direct").string() +
               " ++workload.pipeprof.remote.latency_ms=50 ++workload.train.computation_time=0.1"
               " --find-max-accelerators --max-accelerators 2 -q --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("from a server of the workload's settings, http 50 ms, unlimited"),
            std::string::npos)
      << r.out;
  const auto search = read_json(out / "results.json")["experiments"][0]["workload"]["max_accelerators"];
  EXPECT_EQ(search["storage_served"], "http 50 ms, unlimited") << search.dump();
  const double mib_per_s = search["storage_mib_per_s"].get<double>();
  EXPECT_GT(mib_per_s, 1.0) << search.dump();
  EXPECT_LT(mib_per_s, 16 * 0.0625 / 0.05) << search.dump();
  expect_server_gone(tmp);
}

TEST(RemoteWorkload, CachedServesLaterEpochsLocallyAndCleansUp) {
  REQUIRE_NGINX();
  const TempDir tmp;
  const auto out = tmp / "out";
  for (const bool preload : {false, true}) {
    const CliResult r =
        pipeprof(tmp, "workload " +
                          workload(tmp, "cached", preload ? "    preload: True\n" : "").string() +
                          " -q --out " + out.string());
    ASSERT_EQ(r.code, 0) << r.out;
    const auto remote = read_json(out / "results.json")["experiments"][0]["workload"]["remote"];
    EXPECT_EQ(remote["mode"], "cached");
    EXPECT_EQ(remote["preload"], preload);
    ASSERT_EQ(remote["epochs"].size(), 2U);
    EXPECT_GT(remote["epochs"][0]["remote_bytes"].get<int64_t>(), 0);
    EXPECT_EQ(remote["epochs"][1]["remote_bytes"], 0) << remote;  // the budget holds the dataset
    EXPECT_EQ(remote["epochs"][1]["cache_hit_ratio"], 1.0) << remote;
    EXPECT_EQ(remote["cache"]["bytes_fetched"], dataset_bytes(tmp)) << remote;
    EXPECT_EQ(remote["cache"]["damaged"], 0);
    if (preload) {
      EXPECT_GT(remote["cache"]["preloaded"].get<int64_t>(), 0) << remote;
    }
    EXPECT_FALSE(fs::exists(out / "remote_cache")) << "the run's cache was left behind";
    expect_server_gone(tmp);
  }
  // keep_cache with a folder of the user's: a second run starts warm.
  const auto dir = tmp / "cache";
  const std::string keep = "    cache_dir: " + dir.string() + "\n    keep_cache: True\n";
  ASSERT_EQ(pipeprof(tmp, "workload " + workload(tmp, "cached", keep).string() + " -q --out " + out.string()).code, 0);
  EXPECT_TRUE(fs::exists(dir));
  const CliResult warm =
      pipeprof(tmp, "workload " + workload(tmp, "cached", keep).string() + " -q --out " + out.string());
  ASSERT_EQ(warm.code, 0) << warm.out;
  const auto remote = read_json(out / "results.json")["experiments"][0]["workload"]["remote"];
  EXPECT_EQ(remote["epochs"][0]["remote_bytes"], 0) << remote;
  EXPECT_EQ(remote["cache"]["misses"], 0) << remote;
}

TEST(RemoteWorkload, CopyFirstCopiesBeforeTheFirstStepThenReadsLocally) {
  REQUIRE_NGINX();
  const TempDir tmp;
  const auto out = tmp / "out";
  const CliResult r = pipeprof(tmp, "workload " + workload(tmp, "copy_first").string() + " --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("copy first:"), std::string::npos) << r.out;
  const auto remote = read_json(out / "results.json")["experiments"][0]["workload"]["remote"];
  EXPECT_EQ(remote["copy_bytes"], dataset_bytes(tmp));
  EXPECT_GT(remote["copy_seconds"].get<double>(), 0);
  EXPECT_GE(remote["time_to_first_step_seconds"].get<double>(), remote["copy_seconds"].get<double>());
  for (const auto& e : remote["epochs"]) EXPECT_EQ(e["remote_bytes"], 0) << e;
  EXPECT_FALSE(fs::exists(out / "remote_copy")) << "the copy was left behind";
  expect_server_gone(tmp);
}

TEST(RemoteWorkload, GrowingCacheTrainsOnMoreShardsEveryEpoch) {
  REQUIRE_NGINX();
  const TempDir tmp;
  const auto out = tmp / "out";
  // 16 samples, 2 samplers, shards of 2: up to 8 shards.
  const auto w = workload(tmp, "growing_cache", "    samplers: 2\n    shard_samples: 2\n");
  const CliResult r = pipeprof(tmp, "workload " + w.string() + " ++workload.train.epochs=4 -q --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("growing cache: 2 samplers, 2 samples a shard"), std::string::npos) << r.out;
  const auto x = read_json(out / "results.json")["experiments"][0];
  const auto& g = x["workload"]["growing_cache"];
  ASSERT_EQ(g["epochs"].size(), 4U) << g;
  int64_t before = 0;
  for (const auto& e : g["epochs"]) {
    EXPECT_GE(e["shards"].get<int64_t>(), before) << g;  // no budget: the set only grows
    before = e["shards"].get<int64_t>();
    EXPECT_EQ(e["samples"].get<int64_t>(), 2 * e["shards"].get<int64_t>()) << e;
    EXPECT_GT(e["deserialize_mb_per_s_per_thread"].get<double>(), 0) << e;
  }
  // A shard's two samples, 2 ms to first byte each, come before the first step.
  EXPECT_GT(g["time_to_first_step_seconds"].get<double>(), 0.004);
  EXPECT_EQ(x["repetitions"].size(), 4U);
  EXPECT_FALSE(fs::exists(out / "growing_cache")) << "the shards were left behind";
  expect_server_gone(tmp);
}

TEST(ServeCommand, ServesAFolderUntilCtrlC) {
  REQUIRE_NGINX();
  const TempDir tmp;
  fs::create_directories(tmp / "tmp");
  fs::create_directories(tmp / "site");
  tmp.write("site/hello.txt", "hello from pipeprof\n");
  const std::string log = (tmp / "serve.log").string();
  const std::string cmd = "TMPDIR=" + (tmp / "tmp").string() + " " + PIPEPROF_BINARY + " serve " +
                          (tmp / "site").string() + " --latency-ms 1 > " + log + " 2>&1";
  // Start it, wait for its address, fetch a file and the folder's JSON index, then Ctrl-C.
  const std::string get =
      "/usr/bin/python3 -c \"import sys, urllib.request; "
      "print(urllib.request.urlopen(sys.argv[1]).read().decode())\"";
  const CliResult r = pipeprof::testing::run_command(
      "sh -c '" + cmd + " & pid=$!; for i in $(seq 100); do grep -q http " + log +
      " && break; sleep 0.05; done; url=$(grep -o \"http://[^ ]*\" " + log +
      "); " + get + " ${url}hello.txt; " + get + " $url; kill -INT $pid; wait $pid; echo \"rc=$?\"'");
  EXPECT_NE(r.out.find("hello from pipeprof"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"name\":\"hello.txt\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rc=130"), std::string::npos) << r.out;
  expect_server_gone(tmp);
  EXPECT_EQ(pipeprof(tmp, "serve " + (tmp / "nowhere").string()).code, 2);
}

TEST(RunCommand, ReadsUrlsThroughADiskCacheKeptAcrossRuns) {
  REQUIRE_NGINX();
  const TempDir tmp;
  fs::create_directories(tmp / "tmp");
  fs::create_directories(tmp / "site" / "d");
  for (int i = 0; i < 4; ++i) tmp.write("site/d/f" + std::to_string(i) + ".bin", std::string(4000, 'a' + i));
  pipeprof::testbed::ObjectServer server({.root = tmp / "site"});
  const auto spec = tmp.write(
      "spec.json", R"({"stages": [{"op": "list_files", "pattern": ")" + server.url() +
                       R"(d/*.bin", "shuffle": false}, {"op": "interleave", "cycle_length": 2,
                       "pipeline": {"stages": [{"op": "fixed_length_records", "files": "$element",
                       "record_bytes": 1000}]}}]})");
  const std::string run = "run " + spec.string() + " --step none --repetitions 1 --cache-dir " +
                          (tmp / "cache").string() + " --cache-mib 1";
  const CliResult cold = pipeprof(tmp, run);
  ASSERT_EQ(cold.code, 0) << cold.out;
  EXPECT_NE(cold.out.find("MB fetched"), std::string::npos) << cold.out;
  EXPECT_EQ(cold.out.find("remote: 0 requests"), std::string::npos) << cold.out;
  // The second run lists the folder (one request) and reads every file from the cache.
  const CliResult warm = pipeprof(tmp, run);
  ASSERT_EQ(warm.code, 0) << warm.out;
  EXPECT_NE(warm.out.find("remote: 1 requests, 0.0 MB fetched"), std::string::npos) << warm.out;
  EXPECT_EQ(pipeprof(tmp, "run " + spec.string() + " --cache-dir " + (tmp / "c2").string()).code, 2);
}

TEST(RemoteWorkload, BadSettingsAreExit2NamingTheKey) {
  const TempDir tmp;
  const CliResult mode = pipeprof(tmp, "workload " + workload(tmp, "sideways").string() + " -q");
  EXPECT_EQ(mode.code, 2) << mode.out;
  EXPECT_NE(mode.out.find("pipeprof.remote.mode"), std::string::npos) << mode.out;
  const CliResult latency =
      pipeprof(tmp, "workload " + workload(tmp, "direct").string() + " ++pipeprof.remote.latency_ms=-1 -q");
  EXPECT_EQ(latency.code, 2) << latency.out;
  EXPECT_NE(latency.out.find("pipeprof.remote.latency_ms"), std::string::npos) << latency.out;
}

// The server killed while the dataset is read: bad input data (exit 2) naming the object, whether
// the loaders read it (direct) or the copy does (copy_first), and nothing of the server left.
TEST(RemoteWorkload, ServerKilledMidRunIsExit2InEveryMode) {
  REQUIRE_NGINX();
  for (const std::string mode : {"copy_first", "direct"}) {
    const TempDir tmp;
    // 250 ms to first byte: copy_first copies for about 4 s with one copier; direct runs until
    // it fails.
    const auto w = workload(tmp, mode, "    copy_threads: 1\n");
    const std::string server = (tmp / "tmp").string() + "/[p]ipeprof-nginx";
    const std::string cmd = "TMPDIR=" + (tmp / "tmp").string() + " " + PIPEPROF_BINARY +
                            " workload " + w.string() +
                            " workload.train.epochs=100000 ++pipeprof.remote.latency_ms=250 -q --out " +
                            (tmp / "out").string();
    // The server (nginx's master and workers: its process group) is killed half a second after it
    // starts (after the data generation).
    const CliResult r = pipeprof::testing::run_command(
        "sh -c '" + cmd + " & pid=$!; i=0; until pgrep -f \"" + server +
        "\" >/dev/null || [ $i -ge 600 ]; do sleep 0.05; i=$((i+1)); done; sleep 0.5; pkill -KILL -g "
        "$(pgrep -f \"" +
        server + "\"); wait $pid; echo \"rc=$?\"'");
    EXPECT_NE(r.out.find("rc=2"), std::string::npos) << mode << ": " << r.out;
    EXPECT_NE(r.out.find("bad input data"), std::string::npos) << mode << ": " << r.out;
    EXPECT_NE(r.out.find("http://127.0.0.1:"), std::string::npos) << mode << ": " << r.out;
    expect_server_gone(tmp);
  }
}

// Ctrl-C while every read waits on a server that does not answer (30 s to first byte): the reads
// in flight end (they waited out the stall timeout and every retry, about a minute, then exited
// 2 writing nothing), the run exits 130 and writes what it measured.
TEST(RemoteWorkload, CtrlCDuringAStalledReadEndsTheReadsAndExits130) {
  REQUIRE_NGINX();
  const TempDir tmp;
  const auto w = workload(tmp, "direct");
  const auto out = tmp / "out";
  const std::string server = (tmp / "tmp").string() + "/[p]ipeprof-nginx";
  const std::string cmd = "TMPDIR=" + (tmp / "tmp").string() + " " + PIPEPROF_BINARY + " workload " +
                          w.string() + " ++pipeprof.remote.latency_ms=30000 -q --out " + out.string();
  // SECONDS: whole seconds from the signal to the exit.
  const CliResult r = pipeprof::testing::run_command(
      "bash -c '" + cmd + " & pid=$!; i=0; until pgrep -f \"" + server +
      "\" >/dev/null || [ $i -ge 600 ]; do sleep 0.05; i=$((i+1)); done; sleep 1; kill -INT $pid; "
      "SECONDS=0; wait $pid; echo \"rc=$? after=$SECONDS\"'");
  EXPECT_NE(r.out.find("rc=130"), std::string::npos) << r.out;
  const size_t at = r.out.find("after=");
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_LT(std::stoi(r.out.substr(at + 6)), 15) << "the reads waited out their retries: " << r.out;
  EXPECT_EQ(read_json(out / "results.json")["interrupted"], true);
  expect_server_gone(tmp);
}

TEST(RemoteWorkload, CtrlCStopsTheServerAndWritesWhatWasMeasured) {
  REQUIRE_NGINX();
  const TempDir tmp;
  const auto w = workload(tmp, "cached", "    preload: True\n");
  const auto out = tmp / "out";
  const std::string cmd = "TMPDIR=" + (tmp / "tmp").string() + " " + PIPEPROF_BINARY + " workload " +
                          w.string() + " workload.train.epochs=100000 -q --out " + out.string();
  const CliResult r = pipeprof::testing::run_command(
      "sh -c '" + cmd + " & pid=$!; sleep 2; kill -INT $pid; wait $pid; echo \"rc=$?\"'");
  EXPECT_NE(r.out.find("rc=130"), std::string::npos) << r.out;
  EXPECT_EQ(read_json(out / "results.json")["interrupted"], true);
  EXPECT_FALSE(fs::exists(out / "remote_cache"));
  expect_server_gone(tmp);
}

}  // namespace
