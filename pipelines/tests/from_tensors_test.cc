// from_tensors, from_tensor_slices and from_vector: the sources over in-memory tensors, through the
// C++ API and specs; slices are zero-copy views of the source tensors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/errors.h"
#include "test_util.h"

namespace pipeprof::pipelines {
namespace {

using testing::collect_ints;
using ::testing::ElementsAre;
using testing::spec_dataset;
using testing::values;

TEST(FromTensors, YieldsTheWholeElementOnceWithoutCopying) {
  Element element{Tensor::from_vector<int64_t>({1, 2, 3}), Tensor::scalar<double>(0.5)};
  const auto out = from_tensors(element).collect();
  ASSERT_EQ(out.size(), 1U);
  ASSERT_EQ(out[0].size(), 2U);
  EXPECT_THAT(values(out[0][0]), ElementsAre(1, 2, 3));
  EXPECT_EQ(out[0][1].as_double(), 0.5);
  EXPECT_TRUE(out[0][0].shares_buffer_with(element[0]));
}

TEST(FromTensorSlices, YieldsTheRowsOfEveryComponent) {
  Element element{Tensor::from_vector<int64_t>({1, 2, 3, 4, 5, 6}, {3, 2}),
                  Tensor::from_vector<float>({0.5F, 1.5F, 2.5F})};
  const auto out = from_tensor_slices(element).collect();
  ASSERT_EQ(out.size(), 3U);
  EXPECT_EQ(out[1][0].shape(), Shape{2});
  EXPECT_THAT(values(out[1][0]), ElementsAre(3, 4));
  EXPECT_EQ(out[1][1].rank(), 0);
  EXPECT_EQ(out[2][1].as_double(), 2.5);
}

TEST(FromTensorSlices, RowsAreZeroCopyViews) {
  Tensor source = Tensor::from_vector<int64_t>({10, 20, 30, 40}, {2, 2});
  const auto out = from_tensor_slices({source}).collect();
  ASSERT_EQ(out.size(), 2U);
  EXPECT_TRUE(out[0][0].shares_buffer_with(source));
  EXPECT_TRUE(out[1][0].shares_buffer_with(source));
  EXPECT_EQ(out[1][0].data(), source.data() + 2 * sizeof(int64_t));
}

TEST(FromTensorSlices, InvalidElements) {
  EXPECT_THROW(from_tensor_slices({Tensor::scalar<int64_t>(1)}), std::invalid_argument);
  EXPECT_THROW(from_tensor_slices(
                   {Tensor::from_vector<int64_t>({1, 2}), Tensor::from_vector<int64_t>({1, 2, 3})}),
               std::invalid_argument);
  EXPECT_THROW(from_tensors({}), std::invalid_argument);
}

TEST(FromVector, YieldsScalars) {
  EXPECT_THAT(collect_ints(from_vector({5, -1, 7})), ElementsAre(5, -1, 7));
  EXPECT_TRUE(from_vector({}).collect().empty());
}

TEST(FromTensors, ThroughSpec) {
  const auto one = spec_dataset(R"({"stages": [{"op": "from_tensors", "value": [[1, 2], [3, 4]],
    "dtype": "int32"}]})")
                       .collect();
  ASSERT_EQ(one.size(), 1U);
  EXPECT_EQ(one[0][0].dtype(), DType::kInt32);
  EXPECT_EQ(one[0][0].shape(), (Shape{2, 2}));
  EXPECT_THAT(one[0][0].values<int32_t>(), ElementsAre(1, 2, 3, 4));

  const auto rows = spec_dataset(R"({"stages": [{"op": "from_tensor_slices", "components": [
    {"value": [1, 2, 3]}, {"value": [0.5, 1.5, 2.5], "dtype": "float32"}]}]})")
                        .collect();
  ASSERT_EQ(rows.size(), 3U);
  EXPECT_EQ(rows[2][0].as_int64(), 3);
  EXPECT_EQ(rows[2][1].dtype(), DType::kFloat32);
  EXPECT_EQ(rows[2][1].as_double(), 2.5);

  EXPECT_THAT(
      collect_ints(spec_dataset(R"({"stages": [{"op": "from_vector", "values": [4, 5]}]})")),
      ElementsAre(4, 5));
}

TEST(FromTensors, SpecErrors) {
  auto message = [](const char* json) {
    try {
      testing::spec(json);
    } catch (const SpecError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(R"({"stages": [{"op": "from_tensor_slices", "value": 3}]})"),
            "test.json: stages[0]: from_tensor_slices: cannot slice a scalar");
  EXPECT_EQ(
      message(R"({"stages": [{"op": "from_tensors", "value": [1, 2], "dtype": "int128"}]})"),
      "test.json: stages[0].dtype: expected bool, uint8, int32, int64, float32 or float64, got "
      "\"int128\"");
  EXPECT_EQ(message(R"({"stages": [{"op": "from_tensors", "value": [[1, 2], [3]]}]})"),
            "test.json: stages[0].value: ragged nested array: dimension 1 has lengths 2 and 1");
  EXPECT_EQ(message(R"({"stages": [{"op": "from_vector", "values": [1, 2.5]}]})"),
            "test.json: stages[0].values: expected a list of integers, got [1,2.5]");
}

}  // namespace
}  // namespace pipeprof::pipelines
