// `pipeprof tune` end to end (through run_cli): the tuned spec it writes loads and runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "pipeprof/autotune/knob_space.h"
#include "pipeprof/harness/cli.h"
#include "pipeprof/pipelines/spec.h"
#include "pipeprof_testing/temp_dir.h"

namespace pipeprof::autotune {
namespace {

namespace fs = std::filesystem;

int cli(std::vector<std::string> args) {
  args.insert(args.begin(), "pipeprof");
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  return harness::run_cli(static_cast<int>(argv.size()), argv.data());
}

class TuneCommand : public ::testing::Test {
 protected:
  fs::path write(const std::string& name, const nlohmann::json& j) {
    return tmp_.write(name, j.dump(2));
  }
  testing_support::TempDir tmp_;
  const fs::path& dir_ = tmp_.path();
};

const nlohmann::json kSpec = nlohmann::json::parse(R"({
  "name": "small",
  "description": "a 1 ms map behind a prefetch",
  "stages": [
    {"op": "range", "stop": 12},
    {"op": "map", "fn": "sleep_ms", "args": {"ms": 1}, "parallelism": "autotune"},
    {"op": "prefetch", "buffer_size": "autotune"}
  ],
  "experiment": {"step": "none", "epochs": 1}
})");

TEST_F(TuneCommand, WritesATunedSpecThatLoads) {
  const fs::path spec = write("spec.json", kSpec);
  const fs::path out = dir_ / "tuned.json";
  const fs::path log = dir_ / "log.json";
  ASSERT_EQ(cli({"tune", spec.string(), "--budget", "5", "--strategy", "hill", "--repeats", "1",
                 "--max-parallelism", "4", "--out", out.string(), "--log", log.string()}),
            harness::kExitOk);
  const pipelines::Spec tuned = pipelines::load_spec(out);
  EXPECT_TRUE(discover_knobs(tuned.document).empty()) << "every knob has a value";
  EXPECT_TRUE(tuned.document["stages"][1]["parallelism"].is_number_integer());
  EXPECT_EQ(tuned.document["experiment"]["step"], "none");
  EXPECT_EQ(tuned.dataset.collect().size(), 12u);
  nlohmann::json l;
  std::ifstream(log) >> l;
  EXPECT_EQ(l["strategy"], "hill");
  EXPECT_EQ(l["trials"].size(), 5u);
  EXPECT_EQ(l["best"].size(), 2u);
  // The tuned spec runs.
  EXPECT_EQ(cli({"run", out.string(), "--repetitions", "1"}), harness::kExitOk);
}

TEST_F(TuneCommand, GridCoversTheSpace) {
  const fs::path spec = write("spec.json", kSpec);
  const fs::path log = dir_ / "log.json";
  ASSERT_EQ(cli({"tune", spec.string(), "--budget", "100", "--strategy", "grid",
                 "--max-parallelism", "2", "--objective", "wait", "--log", log.string()}),
            harness::kExitOk);
  nlohmann::json l;
  std::ifstream(log) >> l;
  EXPECT_EQ(l["trials"].size(), 2u * 7u);  // parallelism 1..2 x buffer 1..64
  EXPECT_EQ(l["stopped"], "space exhausted");
  EXPECT_EQ(l["objective"], "wait");
}

TEST_F(TuneCommand, RejectsBadInput) {
  nlohmann::json fixed = kSpec;
  fixed["stages"][1]["parallelism"] = 2;
  fixed["stages"][2]["buffer_size"] = 2;
  EXPECT_EQ(cli({"tune", write("fixed.json", fixed).string()}), harness::kExitBadInput);
  EXPECT_EQ(cli({"tune", write("spec.json", kSpec).string(), "--strategy", "annealing"}),
            harness::kExitBadInput);
  EXPECT_EQ(cli({"tune", (dir_ / "missing.json").string()}), harness::kExitBadInput);
  EXPECT_EQ(cli({"tune", write("spec.json", kSpec).string(), "--budget", "2", "--step", "warp:3"}),
            harness::kExitBadInput);
}

TEST_F(TuneCommand, ModelSearchesProducersAndQueueCapacity) {
  // Producers that fetch bursts of 8 items every 100 ms, a 10 ms step: on the mean wait, more
  // producers are better (their items come in faster than the consumer takes them). No trial runs
  // the pipeline: the simulator answers, with the machine's rates measured once.
  const nlohmann::json spec = nlohmann::json::parse(R"({
    "name": "bursty_producers",
    "stages": [{"op": "multiprocess", "producers": "autotune", "queue_capacity": "autotune",
                "pipeline": {"stages": [
                  {"op": "artificial", "open_ms": 100, "read_ms": 0, "num_samples": 8},
                  {"op": "repeat", "count": 3}]}}],
    "experiment": {"step": "sleep:10", "epochs": 1}
  })");
  const fs::path log = dir_ / "log.json";
  const fs::path out = dir_ / "tuned.json";
  ASSERT_EQ(cli({"tune", write("spec.json", spec).string(), "--model", "--strategy", "grid",
                 "--budget", "100", "--objective", "wait", "--max-producers", "4", "--out",
                 out.string(), "--log", log.string()}),
            harness::kExitOk);
  nlohmann::json l;
  std::ifstream(log) >> l;
  EXPECT_EQ(l["trials_of"], "model");
  EXPECT_EQ(l["trials"].size(), 4u * 7u);  // producers 1..4 x queue_capacity 1..64
  // multiprocess's model needs the socket's receive rate only.
  EXPECT_GT(l["measured_rates"]["socket_gb_per_s"].get<double>(), 0);
  EXPECT_FALSE(l["measured_rates"].contains("memcpy_gb_per_s"));
  const pipelines::Spec tuned = pipelines::load_spec(out);
  EXPECT_EQ(tuned.document["stages"][0]["producers"], 4);
  EXPECT_TRUE(tuned.document["stages"][0]["queue_capacity"].is_number_integer());

  // A spec the model cannot run is bad input for --model.
  const nlohmann::json files = nlohmann::json::parse(R"({"stages": [
    {"op": "list_files", "pattern": "/nonexistent/*.tfrecord"},
    {"op": "interleave", "cycle_length": 2, "parallelism": "autotune",
     "pipeline": {"stages": [{"op": "tfrecord", "files": "$element"}]}}]})");
  EXPECT_EQ(cli({"tune", write("files.json", files).string(), "--model", "--budget", "2"}),
            harness::kExitBadInput);
}

TEST_F(TuneCommand, AnOutputThatCannotBeWrittenIsAFailure) {
  EXPECT_EQ(cli({"tune", write("spec.json", kSpec).string(), "--budget", "1", "--out",
                 (dir_ / "no_such_dir" / "tuned.json").string()}),
            harness::kExitFailed);
}

}  // namespace
}  // namespace pipeprof::autotune
