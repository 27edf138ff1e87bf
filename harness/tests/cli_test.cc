// The command line as a user sees it, through the real `pipeprof` binary: help and version, bad
// usage and bad input and their exit codes (with exit_status_of, where errors become them), and
// inspect, list, analyze, run and suite on good and bad input, with what they print and write.
// Stopping a run (Ctrl-C, stalls and the stall timeout) is cli_signals_test.cc's.
#include "pipeprof/harness/cli.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <new>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "cli_process.h"
#include "pipeprof/harness/step.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/results/results_file.h"
#include "pipeprof/trace/chrome_json.h"
#include "pipeprof_testing/run_command.h"
#include "pipeprof_testing/temp_dir.h"

namespace {

using pipeprof::testing_support::TempDir;

using pipeprof::cli_testing::run;
using pipeprof::testing::CliResult;

// Points pipeprof at another experiment catalog while it lives (children inherit the environment).
class CatalogOverride {
 public:
  explicit CatalogOverride(const std::filesystem::path& dir) {
    setenv("PIPEPROF_EXPERIMENTS", dir.c_str(), 1);
  }
  ~CatalogOverride() { unsetenv("PIPEPROF_EXPERIMENTS"); }
  CatalogOverride(const CatalogOverride&) = delete;
  CatalogOverride& operator=(const CatalogOverride&) = delete;
};

std::string spec(const std::string& name) {
  return std::string(PIPEPROF_SPEC_DIR) + "/" + name;
}

TEST(Cli, HelpListsCommandsAndExitsZero) {
  CliResult r = run("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("inspect"), std::string::npos) << r.out;
}

TEST(Cli, NoCommandIsBadUsage) {
  CliResult r = run("");
  EXPECT_EQ(r.code, 2) << r.out;
  // An unknown word is named, with the commands there are.
  r = run("frobnicate --epochs 3");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("unknown command \"frobnicate\" (the commands: suite, list, run,"),
            std::string::npos)
      << r.out;
}

// Values out of range are refused before anything runs, saying what was expected.
TEST(Cli, OutOfRangeValuesSayWhatWasExpected) {
  CliResult r = run("run naive --epochs 0");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--epochs: expected a whole number of at least 1, got \"0\""), std::string::npos)
      << r.out;
  EXPECT_LT(r.out.size(), 200u) << r.out;  // no 300-digit bound
  for (const char* scale : {"0", "-1", "nan", "1.5"}) {
    r = run(std::string("workload ") + PIPEPROF_WORKLOADS_DIR + "/unet3d_h100.yaml --scale " + scale);
    EXPECT_EQ(r.code, 2) << scale << ": " << r.out;
    EXPECT_NE(r.out.find(std::string("--scale: expected a fraction in (0, 1], got \"") + scale + "\""),
              std::string::npos)
        << r.out;
  }
  // A step of 1e15 ms once ran and reported an efficiency of 4e13.
  r = run("run naive --step sleep:1e15 --repetitions 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("1e15 ms is longer than the longest step allowed"), std::string::npos) << r.out;
  // An artificial source told to wait 1e13 ms did not wait at all (the clock overflowed).
  const TempDir tmp;
  const auto spec = tmp.write(
      "long.json", R"({"stages": [{"op": "artificial", "open_ms": 1e13, "read_ms": 1, "num_samples": 1}]})");
  r = run("inspect " + spec.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("long.json: stages[0]: artificial: open_ms and read_ms must be at most"),
            std::string::npos)
      << r.out;
}

TEST(Cli, OpsListsEveryOperationFromTheRegistry) {
  CliResult r = run("ops");
  EXPECT_EQ(r.code, 0) << r.out;
  for (const char* op : {"range", "map", "interleave", "prefetch", "shared_store", "filter"})
    EXPECT_NE(r.out.find(std::string(op) + " ("), std::string::npos) << op << "\n" << r.out;
  EXPECT_NE(r.out.find("knob: parallelism, online and offline"), std::string::npos) << r.out;

  CliResult one = run("ops shuffle --json");
  ASSERT_EQ(one.code, 0) << one.out;
  const auto j = nlohmann::json::parse(one.out.substr(one.out.find('[')));
  ASSERT_EQ(j.size(), 1U);
  EXPECT_EQ(j[0]["op"], "shuffle");
  EXPECT_EQ(j[0]["fields"][0]["name"], "buffer_size");
  EXPECT_EQ(j[0]["fields"][0]["required"], true);

  CliResult bad = run("ops no_such_op");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("unknown operation \"no_such_op\""), std::string::npos) << bad.out;
}

TEST(Cli, VersionPrintsVersion) {
  CliResult r = run("--version");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("pipeprof 0."), std::string::npos) << r.out;
}

// exit_status_of is the one place where errors become exit codes.
TEST(ExitStatus, EachErrorTypeHasItsCode) {
  using pipeprof::harness::exit_status_of;
  auto code = [](auto error) { return exit_status_of(std::make_exception_ptr(error)).code; };
  EXPECT_EQ(code(pipeprof::harness::InputError("x")), 2);
  EXPECT_EQ(code(pipeprof::pipelines::SpecError("x")), 2);
  EXPECT_EQ(code(pipeprof::harness::StepError("x")), 2);
  EXPECT_EQ(code(pipeprof::trace::TraceFormatError("t.json", 3, "x")), 2);
  EXPECT_EQ(code(pipeprof::results::ResultsError("x")), 2);
  EXPECT_EQ(code(std::invalid_argument("x")), 2);
  EXPECT_EQ(code(CLI::ValidationError("--x", "not a number")), 2);
  EXPECT_EQ(code(CLI::CallForHelp()), 0);
  try {
    const auto parsed = nlohmann::json::parse("{");
    ADD_FAILURE() << "parsed: " << parsed.dump();
  } catch (...) {
    EXPECT_EQ(exit_status_of(std::current_exception()).code, 2);
  }

  EXPECT_EQ(code(pipeprof::harness::RunFailure("x")), 1);
  const auto failed = exit_status_of(
      std::make_exception_ptr(pipeprof::pipelines::PipelineError("map 'f'", "boom")));
  EXPECT_EQ(failed.code, 1);
  EXPECT_EQ(failed.message, "the pipeline failed: map 'f': boom");
  EXPECT_EQ(code(std::bad_alloc()), 1);
  EXPECT_EQ(code(std::runtime_error("out.json: cannot be written")), 1);
  EXPECT_EQ(code(42), 1);

  using pipeprof::harness::Outcome;
  EXPECT_EQ(pipeprof::harness::exit_code_of(Outcome::kOk), 0);
  EXPECT_EQ(pipeprof::harness::exit_code_of(Outcome::kFailed), 1);
  EXPECT_EQ(pipeprof::harness::exit_code_of(Outcome::kInterrupted), 130);
}

TEST(Cli, HelpListsTheExitCodes) {
  CliResult r = run("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("2 bad usage or bad input"), std::string::npos) << r.out;
}

TEST(Inspect, InterleaveCycleAndBlockLengthsMatchTfData) {
  CliResult r = run("inspect " + spec("interleave_cycle2_block4.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(
      r.out,
      "1\n1\n1\n1\n2\n2\n2\n2\n1\n1\n2\n2\n3\n3\n3\n3\n4\n4\n4\n4\n3\n3\n4\n4\n5\n5\n5\n5\n5\n5\n");
}

TEST(Inspect, EpochsAndLimit) {
  CliResult r = run("inspect " + spec("batch.json") + " --epochs 2 --limit 2");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "[0,1,2]\n[3,4,5]\n[0,1,2]\n[3,4,5]\n");
}

TEST(Inspect, FullFormatHasDtypeAndShape) {
  CliResult r = run("inspect " + spec("batch.json") + " --format full --limit 1");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out,
            "{\"components\":[{\"dtype\":\"int64\",\"shape\":[3],\"value\":[0,1,2]}],\"epoch\":0,"
            "\"index\":0}\n");
}

TEST(Inspect, InvalidParallelismNamesFilePathAndValue) {
  const TempDir tmp;
  auto path = tmp.write("bad_parallelism.json", R"({"stages": [
      {"op": "range", "stop": 10}, {"op": "map", "fn": "identity"},
      {"op": "map", "fn": "increment", "parallelism": -3}]})");
  CliResult r = run("inspect " + path.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(
      r.out.find(path.string() +
                 ": stages[2].parallelism: expected a positive integer or \"autotune\", got -3"),
      std::string::npos)
      << r.out;
}

TEST(Inspect, MissingFileIsBadInput) {
  CliResult r = run("inspect /nonexistent/spec.json");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("/nonexistent/spec.json: no such file"), std::string::npos) << r.out;
}

TEST(Inspect, TruncatedJsonNamesByteOffset) {
  const TempDir tmp;
  auto path = tmp.write("truncated.json", R"({"stages": [{"op": "range", "st)");
  CliResult r = run("inspect " + path.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("invalid JSON at byte"), std::string::npos) << r.out;
}

TEST(Inspect, UnknownOptionIsBadUsage) {
  CliResult r = run("inspect " + spec("batch.json") + " --bogus");
  EXPECT_EQ(r.code, 2) << r.out;
}

TEST(List, ShowsTheCatalog) {
  CliResult r = run("list");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("interleave_parallel_3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("map_vectorized"), std::string::npos) << r.out;
  // The storage workloads (part C) follow.
  EXPECT_NE(r.out.find("storage workloads (part C"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("remote_cached_preload"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("growing_cache"), std::string::npos) << r.out;
}

TEST(List, MissingOrBrokenCatalogIsBadInput) {
  const TempDir tmp;
  {
    const CatalogOverride catalog(tmp / "none");
    CliResult r = run("list");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("catalog folder does not exist"), std::string::npos) << r.out;
  }
  tmp.write("broken.json", R"({"stages": [{"op": "range", "stop": )");
  const CatalogOverride catalog(tmp.path());
  for (const char* command : {"list", "suite --quick --no-trace --out "}) {
    const std::string out = std::string(command).ends_with("--out ") ? (tmp / "out").string() : "";
    CliResult r = run(command + out);
    EXPECT_EQ(r.code, 2) << command << "\n" << r.out;
    EXPECT_NE(r.out.find("broken.json: invalid JSON at byte"), std::string::npos) << r.out;
  }
  EXPECT_FALSE(std::filesystem::exists(tmp / "out"));
}

TEST(Analyze, MissingOrMalformedTraceIsBadInput) {
  const TempDir tmp;
  CliResult r = run("analyze " + (tmp / "missing.json").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("missing.json: no such file"), std::string::npos) << r.out;
  const auto bad = tmp.write("bad.json", R"({"traceEvents": [{"ph": "X", "ts": )");
  r = run("analyze " + bad.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("bad.json: byte "), std::string::npos) << r.out;
  r = run("analyze " + tmp.path().string());  // a folder
  EXPECT_EQ(r.code, 2) << r.out;
  // Cut short: the byte where the text ends, not byte 0.
  const auto cut = tmp.write("cut.json", R"({"traceEvents": [)");
  r = run("analyze " + cut.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("cut.json: byte 17: the JSON ends inside an object or array"), std::string::npos)
      << r.out;
}

// A PyTorch profiler trace with two steps of `step_us`, each waiting `wait_us` for the DataLoader.
std::string torch_trace(int wait_us, int step_us = 100) {
  std::string events;
  for (int step = 0; step < 2; ++step) {
    const int at = step * step_us;
    if (step > 0) events += ",\n";
    events += "{\"ph\": \"X\", \"name\": \"ProfilerStep#" + std::to_string(step) +
              "\", \"pid\": 1, \"tid\": 1, \"ts\": " + std::to_string(at) +
              ", \"dur\": " + std::to_string(step_us) + "},\n{\"ph\": \"X\", \"name\": "
              "\"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__\", \"pid\": 1, "
              "\"tid\": 1, \"ts\": " +
              std::to_string(at) + ", \"dur\": " + std::to_string(wait_us) + "}";
  }
  return "[" + events + "]";
}

TEST(Analyze, PyTorchTraceGetsTheStepBreakdown) {
  const TempDir tmp;
  const auto trace = tmp.write("torch.json", torch_trace(40));
  CliResult r = run("analyze " + trace.string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("input-bound 40.0%: highly input-bound"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("suggestion (num_workers)"), std::string::npos) << r.out;
  r = run("analyze --json " + trace.string());
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  EXPECT_DOUBLE_EQ(j.at("torch").at("input_bound_pct").get<double>(), 40.0);
  EXPECT_EQ(j.at("torch").at("per_step").size(), 2u);
}

TEST(Analyze, FolderOfRankTracesNamesTheSlowestRank) {
  const TempDir tmp;
  tmp.write("rank-0.json", torch_trace(10));
  tmp.write("rank-1.json", torch_trace(10));
  tmp.write("rank-2.json", torch_trace(60, 150));  // 50 us more per step, all of it waiting
  CliResult r = run("analyze " + tmp.path().string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("slowest rank: 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cause: DataLoader, +0.050 ms per step"), std::string::npos) << r.out;
  r = run("analyze --json " + tmp.path().string());
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  EXPECT_EQ(j.at("ranks").size(), 3u);
  tmp.write("rank-3.json", R"({"traceEvents": [{"ph": "X", "ts": )");
  r = run("analyze " + tmp.path().string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("rank-3.json: byte "), std::string::npos) << r.out;
}

// PyTorch's tensorboard_trace_handler(use_gzip=True) writes *.pt.trace.json.gz: analyze reads it
// (and a zstd one) as it reads the plain file, alone or as a rank's trace in a folder.
TEST(Analyze, CompressedTracesAreReadByTheirContent) {
  const TempDir tmp;
  const auto plain = tmp.write("w.pt.trace.json", torch_trace(40));
  ASSERT_EQ(pipeprof::testing::run_command("gzip -k " + plain.string()).code, 0);
  CliResult r = run("analyze " + plain.string() + ".gz");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("input-bound 40.0%: highly input-bound"), std::string::npos) << r.out;
  const TempDir ranks;
  ranks.write("rank-0.json", torch_trace(10));
  const auto one = ranks.write("rank-1.json", torch_trace(60, 150));
  ASSERT_EQ(pipeprof::testing::run_command("gzip " + one.string()).code, 0);  // rank-1.json.gz
  r = run("analyze " + ranks.path().string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("slowest rank: 1"), std::string::npos) << r.out;
  // Cut short: the file and the byte where the compressed data ends.
  const auto cut = tmp.write("cut.json.gz", std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00", 8));
  r = run("analyze " + cut.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("cut.json.gz: byte 8: truncated gzip data"), std::string::npos) << r.out;
}

TEST(Run, UnknownExperimentIsBadInput) {
  CliResult r = run("run no_such_thing");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("no experiment \"no_such_thing\""), std::string::npos) << r.out;
}

TEST(Run, BadStepIsBadInput) {
  CliResult r = run("run naive --step warp:3");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("unknown step 'warp:3'"), std::string::npos) << r.out;
}

TEST(Run, ProducersNeedAProcessStage) {
  CliResult r = run("run naive --producers 2 --repetitions 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("need a multiprocess or shared_store stage"), std::string::npos) << r.out;
}

TEST(Run, MalformedSpecIsBadInput) {
  const TempDir tmp;
  const auto broken = tmp.write("broken.json", R"({"stages": [{"op": "range", "stop": 3})");
  CliResult r = run("run " + broken.string() + " --repetitions 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("broken.json: invalid JSON at byte"), std::string::npos) << r.out;
  r = run("run " + (tmp / "missing.json").string() + " --repetitions 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("missing.json: no such file"), std::string::npos) << r.out;
}

// 200 000 arrays under a function's args crashed inspect, run and tune (SIGSEGV) before the
// nesting limit: now each says where the document got too deep, with exit 2.
TEST(Run, ASpecNestedTooDeepIsBadInputEverywhere) {
  const TempDir tmp;
  const int levels = 200000;
  const auto deep = tmp.write(
      "deep.json", R"({"stages": [{"op": "range", "stop": 3}, {"op": "map", "fn": {"name": "add", "args": [)" +
                       std::string(levels, '[') + std::string(levels, ']') + "]}}]}");
  for (const std::string command : {"inspect", "run", "tune"}) {
    const CliResult r = run(command + " " + deep.string());
    EXPECT_EQ(r.code, 2) << command << ": " << r.out;
    EXPECT_NE(r.out.find("deep.json: invalid JSON at byte"), std::string::npos) << command << ": " << r.out;
    EXPECT_NE(r.out.find("nested deeper than 256 levels"), std::string::npos) << command << ": " << r.out;
  }
}

TEST(Run, DamagedDataFilesAreBadInputNamingFileAndOffset) {
  const TempDir tmp;
  const auto npy = tmp.write("bad.npy", std::string("\x93NUMPY\x01\x00\x40\x00{'descr': '<f4'", 24));
  const auto npz = tmp.write("bad.npz", "PK\x03\x04 this archive was cut short");
  const auto h5 = tmp.write("bad.h5", "\x89HDF\r\n\x1a\n truncated superblock");
  const auto cache = tmp.write("bad.cache", "PPCACHE1 and nothing after the magic");
  const std::vector<std::pair<std::string, std::string>> cases{
      {R"({"op": "npy", "files": [")" + npy.string() + R"("]})", "bad.npy: offset 8"},
      {R"({"op": "npz", "file": ")" + npz.string() + R"("})", "bad.npz"},
      {R"({"op": "hdf5", "file": ")" + h5.string() + R"("})", "bad.h5"},
  };
  for (const auto& [source, message] : cases) {
    const auto spec = tmp.write("spec.json", R"({"stages": [)" + source + "]}");
    const CliResult r = run("run " + spec.string() + " --repetitions 1 --epochs 1");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("bad input data"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(message), std::string::npos) << r.out;
  }
  const auto spec = tmp.write("cache.json", R"({"stages": [{"op": "range", "stop": 4},
      {"op": "cache", "filename": ")" + cache.string() + R"("}]})");
  const CliResult r = run("run " + spec.string() + " --repetitions 1 --epochs 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("bad.cache: offset"), std::string::npos) << r.out;
}

TEST(Run, UnwritableJsonIsAFailure) {
  const TempDir tmp;
  const auto path = tmp / "no_such_dir" / "result.json";
  CliResult r = run("run map_vectorized --epochs 1 --repetitions 1 --json " + path.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("result.json: cannot be written"), std::string::npos) << r.out;
}

TEST(Run, ProducersAndQueueCapacityOverrideTheSpec) {
  const TempDir tmp;
  const auto path = tmp / "result.json";
  CliResult r = run("run " + spec("tiny_multiprocess.json") +
                    " --producers 2 --queue-capacity 3 --repetitions 1 "
                    "--json " + path.string());
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(path);
  const auto j = nlohmann::json::parse(in);
  const std::string spec = j["spec"].dump();
  EXPECT_NE(spec.find("\"producers\":2"), std::string::npos) << spec;
  EXPECT_NE(spec.find("\"queue_capacity\":3"), std::string::npos) << spec;
  EXPECT_EQ(j["repetitions"][0]["steps"], 4);  // 2 producers x 2 elements
}

TEST(Run, ProducerSpansAreMergedAsOneProcessLaneEach) {
  const TempDir tmp;
  const auto path = tmp / "trace.json";
  CliResult r = run("run " + spec("tiny_multiprocess.json") + " --producers 3 --repetitions 1 " +
                    "--trace " + path.string());
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(path);
  const auto j = nlohmann::json::parse(in);
  std::map<int64_t, std::string> process_names;
  std::set<int64_t> pids_with_spans;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") {
      process_names[e["pid"].get<int64_t>()] = e["args"]["name"].get<std::string>();
    }
    if (e["ph"] == "X") pids_with_spans.insert(e["pid"].get<int64_t>());
  }
  int producers = 0;
  for (const auto& [pid, name] : process_names) {
    if (name.rfind("producer ", 0) != 0) continue;
    ++producers;
    EXPECT_TRUE(pids_with_spans.contains(pid)) << name << " has no spans";
  }
  EXPECT_EQ(producers, 3) << j.dump().substr(0, 2000);
}

TEST(Run, CudaStepWithoutGpuExitsTwo) {
  if (pipeprof::harness::cuda_step_available()) GTEST_SKIP() << "a GPU is usable here";
  CliResult r = run("run naive --step cuda:10 --repetitions 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("cuda:10"), std::string::npos) << r.out;
}

TEST(Run, WritesJsonWithEveryRepetition) {
  const TempDir tmp;
  const auto path = tmp / "result.json";
  CliResult r = run("run map_vectorized --repetitions 3 --json " + path.string());
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(path);
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["id"], "map_vectorized");
  EXPECT_EQ(j["repetitions"].size(), 3u);
  EXPECT_TRUE(j["ideal_ms"].is_number());
}

TEST(Suite, QuickRunWritesResultsAndReport) {
  const TempDir tmp;
  const auto dir = tmp / "out";
  CliResult r = run("suite --quick --only naive,map_scalar --out " + dir.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("[ 1/2] naive"), std::string::npos) << r.out;  // progress
  EXPECT_NE(r.out.find("sleep overshoot"), std::string::npos) << r.out;
  std::ifstream in(dir / "results.json");
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["schema_version"], 4);
  EXPECT_EQ(j["experiments"][0]["kind"], "experiment");
  ASSERT_EQ(j["experiments"].size(), 2u);
  EXPECT_EQ(j["experiments"][0]["id"], "naive");
  EXPECT_DOUBLE_EQ(j["experiments"][0]["ideal_ms"].get<double>(), 210.0);
  EXPECT_TRUE(std::filesystem::exists(dir / "report.md"));
}

TEST(Suite, CudaStepWithoutGpuIsBadInput) {
  if (pipeprof::harness::cuda_step_available()) GTEST_SKIP() << "a GPU is usable here";
  const TempDir tmp;
  CliResult r = run("suite --quick --only naive --step cuda:10 --out " + (tmp / "out").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_FALSE(std::filesystem::exists(tmp / "out")) << "nothing is run or written on bad input";
}

TEST(Suite, UnknownIdInOnlyIsBadInput) {
  const TempDir tmp;
  CliResult r = run("suite --quick --only naive,no_such,nor_this --out " + (tmp / "out").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("no experiment \"no_such\", \"nor_this\" in the catalog, and no such entry"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(std::filesystem::exists(tmp / "out")) << "nothing is run or written on bad input";
}

// An experiment that fails on bad input (here its own cuda step, with no GPU) does not stop the
// others, and the suite exits 2 once it has written what it measured.
TEST(Suite, AnExperimentWithBadInputExitsTwoAfterTheOthers) {
  if (pipeprof::harness::cuda_step_available()) GTEST_SKIP() << "a GPU is usable here";
  const TempDir tmp;
  tmp.write("fine.json", R"({"stages": [{"op": "range", "stop": 3}],
                            "experiment": {"step": "none"}})");
  tmp.write("gpu.json", R"({"stages": [{"op": "range", "stop": 3}],
                           "experiment": {"step": "cuda:10"}})");
  const CatalogOverride catalog(tmp.path());
  CliResult r = run("suite --quick --no-trace --no-storage --no-scaleout --out " + (tmp / "out").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("1 of 2 experiment(s) failed on bad input"), std::string::npos) << r.out;
  std::ifstream in(tmp / "out" / "results.json");
  ASSERT_TRUE(in.good()) << r.out;
  const auto j = nlohmann::json::parse(in);
  ASSERT_EQ(j["experiments"].size(), 1u);
  EXPECT_EQ(j["experiments"][0]["id"], "fine");
}

TEST(Suite, UnwritableOutputIsAFailure) {
  const TempDir tmp;
  const auto dir = tmp.path();
  std::filesystem::create_directories(dir / "results.json");  // a folder where the file must go
  CliResult r = run("suite --quick --only map_vectorized --out " + dir.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("results.json: cannot be written"), std::string::npos) << r.out;
}

}  // namespace
