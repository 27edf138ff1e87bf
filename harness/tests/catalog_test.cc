#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "pipeprof/harness/experiment.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof_testing/temp_dir.h"

namespace pipeprof::harness {
namespace {

using testing_support::TempDir;

TEST(Catalog, HasEveryPartAExperimentInOrder) {
  const auto catalog = load_catalog();
  std::vector<std::string> ids;
  for (const auto& x : catalog)
    ids.push_back(x.id);
  EXPECT_EQ(ids, (std::vector<std::string>{
                     "naive", "prefetch", "interleave_sequential", "interleave_parallel",
                     "interleave_sequential_3", "interleave_parallel_3", "map_sequential",
                     "map_parallel", "cache", "map_scalar", "map_vectorized",
                     // Part B: the Ray article's transports (one pass each, as published).
                     "generator", "multiprocess", "shared_store",
                     // Variants with every knob on autotune, for the online tuner.
                     "interleave_parallel_autotune", "map_parallel_autotune", "prefetch_autotune",
                     "prefetch_bursty_autotune"}));
  for (const auto& x : catalog) {
    EXPECT_FALSE(x.description.empty()) << x.id;
    if (x.spec.document.at("experiment").value("part", "") != "B") {
      EXPECT_GE(x.epochs, 2) << x.id;
    }
  }
  EXPECT_EQ(find_experiment("cache").epochs, 5);
  EXPECT_EQ(find_experiment("map_scalar").step, "none");
}

TEST(Catalog, PartBExperimentsHaveTheArticlesItemsAndTheirKnobs) {
  for (const std::string id : {"generator", "multiprocess", "shared_store"}) {
    const Experiment x = find_experiment(id);
    EXPECT_EQ(x.step, "sleep:100") << id;
    EXPECT_EQ(x.epochs, 1) << id;
    const auto& source = x.spec.document.at("stages").at(0);
    const auto& gen = id == "generator" ? source : source.at("pipeline").at("stages").at(0);
    EXPECT_EQ(gen.at("args").at("count"), 10) << id;
    EXPECT_EQ(gen.at("args").at("delay_ms"), 500) << id;
    EXPECT_EQ(gen.at("args").at("shapes"), nlohmann::json::parse("[[4, 1000000, 3], [4, 1]]"));
    if (id != "generator") {
      EXPECT_EQ(source.at("producers"), 8) << id;
      EXPECT_EQ(source.at("queue_capacity"), 16) << id;
      EXPECT_EQ(x.spec.dataset.node().op(), id);
    }
  }
}

TEST(Catalog, UnknownIdListsTheKnownOnes) {
  try {
    find_experiment("no_such_experiment");
    FAIL();
  } catch (const pipelines::SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("naive"), std::string::npos) << e.what();
  }
}

TEST(Catalog, ExperimentBlockIsValidated) {
  const TempDir tmp;
  auto bad_step = tmp.write("bad_step.json", R"({"stages": [{"op": "range", "stop": 3}],
      "experiment": {"step": "warp:3"}})");
  EXPECT_THROW(load_experiment(bad_step), pipelines::SpecError);
  auto bad_epochs = tmp.write("bad_epochs.json", R"({"stages": [{"op": "range", "stop": 3}],
      "experiment": {"epochs": 0}})");
  try {
    load_experiment(bad_epochs);
    FAIL();
  } catch (const pipelines::SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("experiment.epochs: expected a positive integer, got 0"),
              std::string::npos)
        << e.what();
  }
  auto unknown = tmp.write("unknown.json", R"({"stages": [{"op": "range", "stop": 3}],
      "experiment": {"epoch": 2}})");
  EXPECT_THROW(load_experiment(unknown), pipelines::SpecError);
}

TEST(Catalog, PlainSpecGetsDefaults) {
  const TempDir tmp;
  auto plain = tmp.write("plain.json", R"({"stages": [{"op": "range", "stop": 3}]})");
  const Experiment x = load_experiment(plain);
  EXPECT_EQ(x.id, "plain");
  EXPECT_EQ(x.step, "sleep:10");
  EXPECT_EQ(x.epochs, 1);
  EXPECT_FALSE(x.seed_ms.has_value());
}

}  // namespace
}  // namespace pipeprof::harness
