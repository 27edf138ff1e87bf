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
  EXPECT_NO_THROW(pipelines::parse_spec(spec));
  EXPECT_TRUE(discover_knobs(spec).empty());
}

}  // namespace
}  // namespace pipeprof::autotune
