// batch: SEMANTICS case 4 (batch sizes, drop_remainder, stacking each component of a tuple)
// through the C++ API and specs, plus shapes, mismatches and argument checks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/errors.h"
#include "test_util.h"

namespace pipeprof::pipelines {
namespace {

using ::testing::ElementsAre;
using testing::spec_dataset;
using testing::values;

// Each batch as the JSON of its element: [[0,1,2], ...] or [[[0,1],[4,5]], ...] for tuples.
nlohmann::json batches(const Dataset& ds) {
  nlohmann::json out = nlohmann::json::array();
  for (const Element& e : ds.collect())
    out.push_back(element_to_json(e));
  return out;
}

TEST(Batch, Semantics4BatchSizes) {
  EXPECT_EQ(batches(range(8).batch(3)), nlohmann::json::parse("[[0,1,2],[3,4,5],[6,7]]"));
  EXPECT_EQ(batches(range(8).batch(3, /*drop_remainder=*/true)),
            nlohmann::json::parse("[[0,1,2],[3,4,5]]"));
}

TEST(Batch, Semantics4ThroughSpec) {
  EXPECT_EQ(batches(spec_dataset(R"({"stages": [{"op": "range", "stop": 8},
    {"op": "batch", "batch_size": 3}]})")),
            nlohmann::json::parse("[[0,1,2],[3,4,5],[6,7]]"));
  EXPECT_EQ(batches(spec_dataset(R"({"stages": [{"op": "range", "stop": 8},
    {"op": "batch", "batch_size": 3, "drop_remainder": true}]})")),
            nlohmann::json::parse("[[0,1,2],[3,4,5]]"));
}

TEST(Batch, Semantics4StacksEachComponentOfAPair) {
  const auto out = zip({range(4), range(4, 8)}).batch(2).collect();
  ASSERT_EQ(out.size(), 2U);
  ASSERT_EQ(out[0].size(), 2U);
  EXPECT_THAT(values(out[0][0]), ElementsAre(0, 1));
  EXPECT_THAT(values(out[0][1]), ElementsAre(4, 5));
  EXPECT_THAT(values(out[1][0]), ElementsAre(2, 3));
  EXPECT_THAT(values(out[1][1]), ElementsAre(6, 7));
  EXPECT_EQ(out[0][0].shape(), Shape{2});
}

TEST(Batch, Semantics4PairThroughSpec) {
  auto ds = spec_dataset(R"({"stages": [
    {"op": "zip", "inputs": [{"stages": [{"op": "range", "stop": 4}]},
                             {"stages": [{"op": "range", "start": 4, "stop": 8}]}]},
    {"op": "batch", "batch_size": 2}]})");
  EXPECT_EQ(batches(ds), nlohmann::json::parse("[[[0,1],[4,5]],[[2,3],[6,7]]]"));
}

TEST(Batch, StacksTensorsAlongANewFirstDimension) {
  auto rows = from_tensor_slices(
      {Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {4, 3})});
  const auto out = rows.batch(2).collect();
  ASSERT_EQ(out.size(), 2U);
  EXPECT_EQ(out[1][0].shape(), (Shape{2, 3}));
  EXPECT_EQ(out[1][0].dtype(), DType::kFloat32);
  EXPECT_THAT(out[1][0].values<float>(), ElementsAre(7, 8, 9, 10, 11, 12));
}

TEST(Batch, ExactMultipleHasNoEmptyBatch) {
  EXPECT_EQ(batches(range(6).batch(3, true)), nlohmann::json::parse("[[0,1,2],[3,4,5]]"));
  EXPECT_EQ(batches(range(6).batch(3)), nlohmann::json::parse("[[0,1,2],[3,4,5]]"));
  EXPECT_TRUE(range(2).batch(3, true).collect().empty());
  EXPECT_TRUE(range(0).batch(3).collect().empty());
}

TEST(Batch, MismatchedShapesNameTheStage) {
  auto ds = range(1, 4)
                .interleave(DatasetFn([](const Element& x) {
                              return from_tensors({Tensor(DType::kInt64, {x[0].as_int64()})});
                            }),
                            {.cycle_length = 1})
                .batch(2);
  auto it = ds.iterate();
  try {
    it->next();
    FAIL() << "expected a PipelineError";
  } catch (const PipelineError& e) {
    EXPECT_EQ(e.stage(), "batch");
    EXPECT_STREQ(e.what(), "batch: element 1 component 0 is int64[2], element 0's is int64[1]");
  }
}

TEST(Batch, InvalidBatchSize) {
  EXPECT_THROW(range(3).batch(0), std::invalid_argument);
  EXPECT_THROW(testing::spec(R"({"stages": [{"op": "range", "stop": 3},
    {"op": "batch", "batch_size": 0}]})"),
               SpecError);
}

}  // namespace
}  // namespace pipeprof::pipelines
