#include "pipeprof/autotune/knob_space.h"

#include <gtest/gtest.h>

#include "pipeprof/pipelines/spec.h"

namespace pipeprof::autotune {
namespace {

const nlohmann::json kSpec = nlohmann::json::parse(R"({
  "name": "t",
  "stages": [
    {"op": "range", "stop": 4},
    {"op": "interleave", "cycle_length": "autotune", "parallelism": "autotune",
     "pipeline": {"stages": [{"op": "artificial", "open_ms": 1, "read_ms": 1, "num_samples": 2},
                              {"op": "map", "fn": "identity", "parallelism": "autotune"}]}},
    {"op": "map", "fn": "sleep_ms", "args": {"ms": 1}, "parallelism": 3, "name": "f"},
    {"op": "prefetch", "buffer_size": "autotune"}
  ]
})");

TEST(KnobSpace, DiscoversEveryAutotuneParameter) {
  const auto knobs =
      discover_knobs(kSpec, {.max_parallelism = 8, .max_buffer = 16, .initial_parallelism = 2});
  ASSERT_EQ(knobs.size(), 3u);
  EXPECT_EQ(knobs[0].path, "/stages/1/parallelism");
  EXPECT_EQ(knobs[0].values.size(), 8u);
  EXPECT_EQ(knobs[0].initial, 2);
  EXPECT_EQ(knobs[1].path, "/stages/1/pipeline/stages/1/parallelism");
  EXPECT_EQ(knobs[2].path, "/stages/3/buffer_size");
  EXPECT_EQ(knobs[2].values, (std::vector<int64_t>{1, 2, 4, 8, 16}));
  EXPECT_EQ(knobs[2].initial, 2);
}

TEST(KnobSpace, AppliedSpecsParse) {
  const auto knobs = discover_knobs(kSpec, {.initial_parallelism = 2});
  const auto spec = apply_assignment(kSpec, knobs, {{"/stages/1/parallelism", 4}});
  EXPECT_EQ(spec["stages"][1]["parallelism"], 4);
  EXPECT_EQ(spec["stages"][1]["cycle_length"], 4);  // tied to the interleave's parallelism
  EXPECT_EQ(spec["stages"][1]["pipeline"]["stages"][1]["parallelism"], 2);
  EXPECT_EQ(spec["stages"][3]["buffer_size"], 2);
  // The pipeline built from it runs with the applied values.
  const std::string as_run = pipelines::parse_spec(spec).dataset.to_json().dump();
  EXPECT_NE(as_run.find("\"cycle_length\":4"), std::string::npos) << as_run;
  EXPECT_NE(as_run.find("\"parallelism\":4"), std::string::npos) << as_run;
  EXPECT_EQ(as_run.find("autotune"), std::string::npos) << as_run;
  EXPECT_TRUE(discover_knobs(spec).empty());
}

TEST(KnobSpace, ProcessSourcesHaveProducerAndQueueKnobs) {
  const nlohmann::json spec = nlohmann::json::parse(R"({
    "stages": [
      {"op": "shared_store", "producers": "autotune", "queue_capacity": "autotune",
       "pipeline": {"stages": [{"op": "range", "stop": 4}]}},
      {"op": "prefetch", "buffer_size": 2}
    ]
  })");
  const auto knobs = discover_knobs(spec, {.max_producers = 4, .max_queue_capacity = 32});
  ASSERT_EQ(knobs.size(), 2u);
  EXPECT_EQ(knobs[0].path, "/stages/0/producers");
  EXPECT_EQ(knobs[0].values, (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(knobs[0].initial, 4);  // the default of 8, clamped to the space
  EXPECT_EQ(knobs[1].path, "/stages/0/queue_capacity");
  EXPECT_EQ(knobs[1].values, (std::vector<int64_t>{1, 2, 4, 8, 16, 32}));
  EXPECT_EQ(knobs[1].initial, 16);
  const auto applied = apply_assignment(spec, knobs, {{"/stages/0/producers", 3}});
  EXPECT_EQ(applied["stages"][0]["producers"], 3);
  EXPECT_EQ(applied["stages"][0]["queue_capacity"], 16);
  const std::string applied_run = pipelines::parse_spec(applied).dataset.to_json().dump();
  EXPECT_NE(applied_run.find("\"producers\":3"), std::string::npos) << applied_run;
  // Unapplied, the spec still runs: the defaults stand in for the knobs.
  const pipelines::Spec parsed = pipelines::parse_spec(spec);
  const std::string as_run = parsed.dataset.to_json().dump();
  EXPECT_NE(as_run.find("\"producers\":8"), std::string::npos) << as_run;
  EXPECT_NE(as_run.find("\"queue_capacity\":16"), std::string::npos) << as_run;
}

}  // namespace
}  // namespace pipeprof::autotune
