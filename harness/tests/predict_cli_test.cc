// `pipeprof predict` end to end: a probe of a small local dataset (its profile written and read
// back), what-ifs, JSON output, and bad input (exit 2 naming the file and key, the folder or the
// URL); a probe of nginx with a time to first byte; Ctrl-C during a probe (exit 130, the profile
// so far written).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "pipeprof_testing/run_command.h"
#include "pipeprof/testbed/object_server.h"
#include "pipeprof_testing/temp_dir.h"

namespace {

using pipeprof::testing::CliResult;
using pipeprof::testing_support::TempDir;
namespace fs = std::filesystem;

CliResult pipeprof(const std::string& args) {
  return pipeprof::testing::run_command(std::string(PIPEPROF_BINARY) + " " + args);
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

// 48 npz files of one 64 KiB sample, read by the pytorch loader with 2 threads, batch 4, 10 ms
// steps: 400 samples/s, 25 MiB/s an accelerator.
std::string workload_text(const TempDir& tmp, const std::string& format = "npz") {
  return "model:\n  name: tiny\nframework: pytorch\nworkflow:\n  generate_data: False\n  train: "
         "True\ndataset:\n  data_folder: " +
         (tmp / "data").string() + "\n  format: " + format +
         "\n  num_files_train: 48\n  num_samples_per_file: 1\n  record_length_bytes: 65536\n"
         "reader:\n  data_loader: pytorch\n  batch_size: 4\n  read_threads: 2\ntrain:\n  epochs: 2\n"
         "  computation_time: 0.01\nmetric:\n  au: 0.9\n";
}

// The workload written and its data generated.
fs::path generated(const TempDir& tmp) {
  const fs::path w = tmp.write("tiny.yaml", workload_text(tmp));
  const CliResult g = pipeprof("datagen --workload " + w.string() + " -q");
  EXPECT_EQ(g.code, 0) << g.out;
  return w;
}

// The printed maximum; 0 for "none" (a slow machine's, or a sanitizer's, probe can give that).
int64_t printed_max(const std::string& out) {
  if (out.find("predicted maximum: none") != std::string::npos) return 0;
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("predicted maximum: ([0-9]+) accelerator"))) return -1;
  return std::stoll(m[1]);
}

TEST(PredictCommand, ProbesWritesItsProfileAndPredictsTheSameFromIt) {
  const TempDir tmp;
  const fs::path w = generated(tmp);
  const fs::path out = tmp / "out";
  const CliResult r = pipeprof("predict " + w.string() +
                               " --probe --probe-seconds 0.2 --probe-streams 4 --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("demand per accelerator: 400.0 samples/s, 25 MiB/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cold   1 stream(s):"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("us a sample (warm)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("headroom at"), std::string::npos) << r.out;
  // The training loop's calibration reads the workload's own files: all 48, as its accelerators
  // need more (half again what the loader's figure feeds, 24 steps of 4 samples each).
  std::smatch loop;
  const std::regex loop_line(
      "the training loop's \\(([0-9]+) accelerators over ([0-9]+) of the workload's files\\)");
  ASSERT_TRUE(std::regex_search(r.out, loop, loop_line)) << r.out;
  EXPECT_GE(std::stoll(loop[1]), 2) << r.out;
  EXPECT_LE(std::stoll(loop[1]), 256) << r.out;
  EXPECT_EQ(loop[2], "48") << r.out;
  const int64_t max = printed_max(r.out);
  ASSERT_GE(max, 0) << r.out;

  const fs::path profile = out / "storage_profile.json";
  const nlohmann::json p = read_json(profile);
  EXPECT_EQ(p["kind"], "pipeprof.storage_profile");
  EXPECT_EQ(p["workload"]["format"], "npz");
  ASSERT_GE(p["bandwidth"]["cold"].size(), 1U);
  EXPECT_LE(p["bandwidth"]["cold"].back()["streams"].get<int>(), 4);
  EXPECT_GT(p["bandwidth"]["cold"][0]["mib_per_s"].get<double>(), 0);
  EXPECT_GT(p["client"]["cpu_us_per_sample"].get<double>(), 0);
  EXPECT_GT(p["workload"]["file_bytes"].get<double>(), 65536);

  // The same profile read back gives the same prediction, as JSON too.
  const CliResult again = pipeprof("predict " + w.string() + " --profile " + profile.string() + " --json");
  ASSERT_EQ(again.code, 0) << again.out;
  ASSERT_NE(again.out.find('{'), std::string::npos) << again.out;
  const nlohmann::json j = nlohmann::json::parse(again.out.substr(again.out.find('{')));
  ASSERT_EQ(j["predictions"].size(), 1U);
  EXPECT_EQ(j["predictions"][0]["max_accelerators"].get<int64_t>(), max);
  EXPECT_FALSE(j["predictions"][0]["curve"].empty());
}

TEST(PredictCommand, WhatIfsStandSideBySide) {
  const TempDir tmp;
  const fs::path w = tmp.write("tiny.yaml", workload_text(tmp));
  const fs::path profile = tmp.write("p.json", R"({
    "kind": "pipeprof.storage_profile", "version": 1, "target": "/data",
    "workload": {"format": "npz", "loader": "pytorch", "file_bytes": 65536, "request_bytes": 65536},
    "bandwidth": {"cold": [{"streams": 1, "mib_per_s": 50}, {"streams": 8, "mib_per_s": 400},
                           {"streams": 64, "mib_per_s": 1000}]},
    "latency": {"first_byte_ms": 0.5},
    "client": {"cpu_us_per_sample": 20, "cores": 4, "memory_bytes": 1e9}})");
  // An override after the what-ifs is the workload's, not a what-if.
  const CliResult r = pipeprof("predict " + w.string() + " --profile " + profile.string() +
                               " --what-if bandwidth=x2 --what-if latency_ms=20 --what-if read_threads=16"
                               " ++workload.train.computation_time=0.02");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("demand per accelerator: 200.0 samples/s"), std::string::npos) << r.out;
  const auto table = r.out.find("what-if ");
  ASSERT_NE(table, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(as measured)", table), std::string::npos);
  EXPECT_NE(r.out.find("bandwidth=x2", table), std::string::npos);
  EXPECT_NE(r.out.find("latency_ms=20", table), std::string::npos);
  const CliResult j = pipeprof("predict " + w.string() + " --profile " + profile.string() +
                               " --json --what-if bandwidth=x2 --what-if latency_ms=20");
  ASSERT_EQ(j.code, 0) << j.out;
  ASSERT_NE(j.out.find('{'), std::string::npos) << j.out;
  const nlohmann::json doc = nlohmann::json::parse(j.out.substr(j.out.find('{')));
  const auto& p = doc["predictions"];
  ASSERT_EQ(p.size(), 3U);
  EXPECT_GT(p[1]["max_accelerators"].get<int64_t>(), p[0]["max_accelerators"].get<int64_t>());
  EXPECT_LT(p[2]["max_accelerators"].get<int64_t>(), p[0]["max_accelerators"].get<int64_t>());
  // --set changes the base; --clients spreads the accelerators over clients.
  const CliResult set = pipeprof("predict " + w.string() + " --profile " + profile.string() +
                                 " --json --set bandwidth=x2");
  ASSERT_EQ(set.code, 0) << set.out;
  ASSERT_NE(set.out.find('{'), std::string::npos) << set.out;
  EXPECT_EQ(nlohmann::json::parse(set.out.substr(set.out.find('{')))["predictions"][0]["max_accelerators"],
            p[1]["max_accelerators"]);
}

TEST(PredictCommand, BadInputExits2NamingWhatWasWrong) {
  const TempDir tmp;
  const fs::path w = tmp.write("tiny.yaml", workload_text(tmp));
  const fs::path good = tmp.write("p.json", R"({
    "kind": "pipeprof.storage_profile", "version": 1,
    "workload": {"format": "npz", "file_bytes": 65536, "request_bytes": 65536},
    "bandwidth": {"cold": [{"streams": 1, "mib_per_s": 50}]},
    "latency": {"first_byte_ms": 0.5},
    "client": {"cpu_us_per_sample": 20, "cores": 4, "memory_bytes": 1e9}})");
  ASSERT_EQ(pipeprof("predict " + w.string() + " --profile " + good.string()).code, 0);

  auto expect_2 = [](const CliResult& r, const std::string& needle) {
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find(needle), std::string::npos) << r.out;
  };
  const fs::path truncated = tmp.write("t.json", R"({"kind": "pipeprof.storage_profile", "vers)");
  expect_2(pipeprof("predict " + w.string() + " --profile " + truncated.string()),
           truncated.string() + ": byte");
  std::string text = read_json(good).dump();
  text.replace(text.find("\"cores\":4"), 9, "\"cores\":0");
  const fs::path bad_key = tmp.write("k.json", text);
  expect_2(pipeprof("predict " + w.string() + " --profile " + bad_key.string()),
           bad_key.string() + ": client.cores: expected a whole number in [1, 1000000], got 0");
  const fs::path npy = tmp.write("npy.yaml", workload_text(tmp, "npy"));
  expect_2(pipeprof("predict " + npy.string() + " --profile " + good.string()),
           "workload.format: the profile was measured on npz files");
  // Nothing to probe: the data is not there; a server that does not answer.
  expect_2(pipeprof("predict " + w.string() + " --probe --out " + (tmp / "o").string()), "pipeprof datagen");
  expect_2(pipeprof("predict " + w.string() + " --probe --out " + (tmp / "o").string() +
                    " --data-folder http://127.0.0.1:9/nothing"),
           "http://127.0.0.1:9/nothing");
  expect_2(pipeprof("predict " + w.string() + " --profile " + good.string() + " --set bandwith=x2"),
           "unknown key \"bandwith\"");
  expect_2(pipeprof("predict " + w.string() + " --profile " + good.string() + " --clients 0"), "--clients");
  expect_2(pipeprof("predict " + w.string() + " --profile " + good.string() + " --probe"), "--probe");
  expect_2(pipeprof("predict " + w.string() + " --profile " + good.string() + " --cold --warm"), "--warm");
  expect_2(pipeprof("predict " + w.string() + " --profile " + good.string() + " --warm"),
           "--warm: " + good.string() + " has no warm curve");
  expect_2(pipeprof("predict " + w.string() + " --profile " + good.string() +
                    " ++workload.train.computation_time=0"),
           "train.computation_time");
}

#define REQUIRE_NGINX()                                                                   \
  do {                                                                                    \
    std::string why_;                                                                     \
    if (!pipeprof::testbed::ObjectServer::available(true, &why_)) GTEST_SKIP() << why_; \
  } while (0)

TEST(PredictCommand, ProbesAnHttpServerWithItsTimeToFirstByte) {
  REQUIRE_NGINX();
  const TempDir tmp;
  const fs::path w = generated(tmp);
  pipeprof::testbed::ObjectServer server({.root = tmp / "data", .latency = std::chrono::milliseconds(20)});
  const fs::path out = tmp / "out";
  const CliResult r = pipeprof("predict " + w.string() + " --probe --probe-seconds 0.5 --probe-streams 8 --out " +
                               out.string() + " --data-folder " + server.url());
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json p = read_json(out / "storage_profile.json");
  EXPECT_EQ(p["target"], server.url());
  // 20 ms before the first byte of every request: one stream reads at most 50 files a second.
  EXPECT_GE(p["latency"]["first_byte_ms"].get<double>(), 19) << p.dump(2);
  EXPECT_LT(p["bandwidth"]["cold"][0]["mib_per_s"].get<double>(), 50 * 65536.0 * 1.1 / 1048576) << p.dump(2);
  EXPECT_TRUE(p["bandwidth"]["warm"].empty());
  // Streams overlap their waits: 8 give several times what one gives.
  ASSERT_GE(p["bandwidth"]["cold"].size(), 4U) << p.dump(2);
  EXPECT_GT(p["bandwidth"]["cold"][3]["mib_per_s"].get<double>(), 3 * p["bandwidth"]["cold"][0]["mib_per_s"].get<double>());
  // Two streams an accelerator at 20 ms a file cannot give one accelerator its 400 samples/s.
  EXPECT_NE(r.out.find("predicted maximum: none"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("binding resource: requests in flight x latency"), std::string::npos) << r.out;
}

// A workload that serves its own files (pipeprof.remote) is probed as its runs read them: through
// nginx with its latency, not from its folder; --warm is refused for it, naming the file.
TEST(PredictCommand, AWorkloadThatServesItsFilesIsProbedThroughItsServer) {
  REQUIRE_NGINX();
  const TempDir tmp;
  (void)generated(tmp);  // its files, under tmp/data
  const fs::path served =
      tmp.write("served.yaml", workload_text(tmp) +
                                   "pipeprof:\n  remote:\n    mode: direct\n    latency_ms: 20\n");
  const fs::path out = tmp / "out";
  const CliResult r = pipeprof("predict " + served.string() +
                               " --probe --probe-seconds 0.5 --probe-streams 8 --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("served by nginx: http 20 ms, unlimited"), std::string::npos) << r.out;
  const nlohmann::json p = read_json(out / "storage_profile.json");
  EXPECT_TRUE(p["target"].get<std::string>().starts_with("http://127.0.0.1:")) << p.dump(2);
  EXPECT_GE(p["latency"]["first_byte_ms"].get<double>(), 19) << p.dump(2);
  EXPECT_TRUE(p["bandwidth"]["warm"].empty());
  // --data-folder still names the storage to probe: the folder itself, no server.
  const CliResult local = pipeprof("predict " + served.string() + " --probe --probe-seconds 0.2 --probe-streams 2 --out " +
                                   (tmp / "local").string() + " --data-folder " + (tmp / "data").string());
  ASSERT_EQ(local.code, 0) << local.out;
  EXPECT_EQ(read_json(tmp / "local" / "storage_profile.json")["target"], (tmp / "data").string());
  const CliResult warm = pipeprof("predict " + served.string() + " --probe --warm --out " + (tmp / "w").string());
  EXPECT_EQ(warm.code, 2) << warm.out;
  EXPECT_NE(warm.out.find(served.string() + " serves its files over HTTP"), std::string::npos) << warm.out;
  // A mode the model does not describe is refused before anything is written or started.
  const fs::path cached =
      tmp.write("cached.yaml", workload_text(tmp) + "pipeprof:\n  remote:\n    mode: cached\n");
  const CliResult c = pipeprof("predict " + cached.string() + " --probe --out " + (tmp / "c").string());
  EXPECT_EQ(c.code, 2) << c.out;
  EXPECT_NE(c.out.find(cached.string() + ": pipeprof.remote.mode cached"), std::string::npos) << c.out;
  EXPECT_FALSE(fs::exists(tmp / "c"));
  // Files that are not there are named as a run names them (exit 2), before a server starts.
  const CliResult missing = pipeprof("predict " + served.string() + " --probe --out " + (tmp / "m").string() +
                                     " ++workload.dataset.data_folder=" + (tmp / "nothing").string());
  EXPECT_EQ(missing.code, 2) << missing.out;
  EXPECT_NE(missing.out.find((tmp / "nothing").string()), std::string::npos) << missing.out;
  EXPECT_EQ(missing.out.find("http://"), std::string::npos) << missing.out;
}

TEST(PredictCommand, CtrlCDuringAProbeExits130WritingWhatItMeasured) {
  REQUIRE_NGINX();
  const TempDir tmp;
  const fs::path w = generated(tmp);
  // 200 ms to the first byte: a stream's pass over the 48 files takes about 10 s. A pass of 0.5 s
  // lasts until 0.5 s after every loader's first batch (four files, 0.8 s at one stream), so the
  // first pass is measured well within the 4 s before the interrupt.
  pipeprof::testbed::ObjectServer server({.root = tmp / "data", .latency = std::chrono::milliseconds(200)});
  const fs::path out = tmp / "out";
  const std::string cmd = std::string(PIPEPROF_BINARY) + " predict " + w.string() +
                          " --probe --probe-seconds 0.5 -q --out " + out.string() + " --data-folder " + server.url();
  const CliResult r = pipeprof::testing::interrupt_after(cmd, "sleep 4");
  EXPECT_NE(r.out.find("rc=130"), std::string::npos) << r.out;
  // The passes measured before the interrupt are in the profile, which says it was cut short.
  const nlohmann::json p = read_json(out / "storage_profile.json");
  EXPECT_GE(p["bandwidth"]["cold"].size(), 1U);
  EXPECT_EQ(p["complete"], false);
  EXPECT_NE(p["notes"].dump().find("interrupted"), std::string::npos) << p.dump(2);
  // Reused, it predicts with a warning that figures are missing.
  const CliResult reuse = pipeprof("predict " + w.string() + " --profile " + (out / "storage_profile.json").string());
  EXPECT_EQ(reuse.code, 0) << reuse.out;
  EXPECT_NE(reuse.out.find("warning: " + (out / "storage_profile.json").string() + ": the probe was cut short"),
            std::string::npos)
      << reuse.out;
}

// Ctrl-C while a request of the probe waits on the server (here its first, for the size of the
// first file, which the server answers after 30 s): the reader ends that request, and the run
// exits 130 within a few seconds, not 2 naming the data folder as one that could not be read.
TEST(PredictCommand, CtrlCDuringARequestExits130) {
  REQUIRE_NGINX();
  const TempDir tmp;
  const fs::path w = generated(tmp);
  pipeprof::testbed::ObjectServer server({.root = tmp / "data", .latency = std::chrono::seconds(30)});
  const fs::path log = tmp / "predict.log";
  const std::string cmd = std::string(PIPEPROF_BINARY) + " predict " + w.string() +
                          " --probe --out " + (tmp / "out").string() + " --data-folder " +
                          server.url() + " >" + log.string() + " 2>&1";
  // The interrupt comes once the run says it probes (its Ctrl-C handler is in place: a command
  // started with & in sh ignores SIGINT until then), and a second later, in the first request.
  const std::string wait_for_probe = "for i in $(seq 200); do grep -q \"probing the storage\" " +
                                     log.string() + " && break; sleep 0.1; done; sleep 1";
  const auto t0 = std::chrono::steady_clock::now();
  CliResult r = pipeprof::testing::interrupt_after(cmd, wait_for_probe);
  r.out += pipeprof::testing::run_command("cat " + log.string()).out;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(25)) << r.out;
  EXPECT_NE(r.out.find("rc=130"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("could not read"), std::string::npos) << r.out;
}

// Ctrl-C while the probe reads through a workload's own server: exit 130 with the passes
// measured so far written, and the server stopped (no nginx left, its folder removed).
TEST(PredictCommand, CtrlCDuringAProbeOfAServedWorkloadStopsItsServer) {
  REQUIRE_NGINX();
  const TempDir tmp;
  (void)generated(tmp);
  // 200 ms to the first byte: a stream's pass over the 48 files takes about 10 s.
  const fs::path served =
      tmp.write("served.yaml", workload_text(tmp) +
                                   "pipeprof:\n  remote:\n    mode: direct\n    latency_ms: 200\n");
  const fs::path scratch = tmp / "scratch";  // the server's folder goes under TMPDIR
  fs::create_directories(scratch);
  const fs::path out = tmp / "out";
  const std::string cmd = "TMPDIR=" + scratch.string() + " " + std::string(PIPEPROF_BINARY) + " predict " +
                          served.string() + " --probe --probe-seconds 0.5 -q --out " + out.string();
  const CliResult r = pipeprof::testing::interrupt_after(cmd, "sleep 4");
  EXPECT_NE(r.out.find("rc=130"), std::string::npos) << r.out;
  const nlohmann::json p = read_json(out / "storage_profile.json");
  EXPECT_TRUE(p["target"].get<std::string>().starts_with("http://127.0.0.1:")) << p.dump(2);
  EXPECT_EQ(p["complete"], false);
  EXPECT_TRUE(fs::is_empty(scratch)) << "left under TMPDIR: " << fs::directory_iterator(scratch)->path();
  const CliResult ps = pipeprof::testing::run_command("pgrep -f '[n]ginx.*" + scratch.string() + "'");
  EXPECT_NE(ps.code, 0) << "nginx left: " << ps.out;
}

}  // namespace
