// zip: tuples of the inputs' components, ending with the shortest input; nested pipelines in specs
// and their places in the model.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/errors.h"
#include "test_util.h"

namespace pipeprof::pipelines {
namespace {

using ::testing::ElementsAre;
using testing::spec_dataset;

nlohmann::json tuples(const Dataset& ds) {
  nlohmann::json out = nlohmann::json::array();
  for (const Element& e : ds.collect())
    out.push_back(element_to_json(e));
  return out;
}

TEST(Zip, EndsWithTheShortestInput) {
  EXPECT_EQ(tuples(zip({range(2), range(10, 15)})), nlohmann::json::parse("[[0,10],[1,11]]"));
  EXPECT_EQ(tuples(zip({range(10, 15), range(2)})), nlohmann::json::parse("[[10,0],[11,1]]"));
  EXPECT_TRUE(zip({range(3), range(0)}).collect().empty());
}

TEST(Zip, ComponentsOfEveryInputInOrder) {
  const auto out = zip({zip({range(3), range(3, 6)}), range(6, 9)}).collect();
  ASSERT_EQ(out.size(), 3U);
  ASSERT_EQ(out[2].size(), 3U);
  EXPECT_EQ(out[2][0].as_int64(), 2);
  EXPECT_EQ(out[2][1].as_int64(), 5);
  EXPECT_EQ(out[2][2].as_int64(), 8);
}

TEST(Zip, SingleInputIsIdentity) {
  EXPECT_THAT(testing::collect_ints(zip({range(4)})), ElementsAre(0, 1, 2, 3));
}

TEST(Zip, ThroughSpecWithNestedStages) {
  auto ds = spec_dataset(R"({"stages": [
    {"op": "zip", "inputs": [{"stages": [{"op": "range", "stop": 5}, {"op": "skip", "count": 2}]},
                             {"stages": [{"op": "from_vector", "values": [7, 8, 9, 10]}]}]},
    {"op": "take", "count": 2}]})");
  EXPECT_EQ(tuples(ds), nlohmann::json::parse("[[2,7],[3,8]]"));
}

TEST(Zip, NestedStagesHaveTheirOwnModelEntries) {
  auto ds = zip({range(3).map(Function([](Element e) { return e; }, "id")), range(3)});
  auto it = ds.iterate();
  EXPECT_EQ(testing::drain_ints(*it).size(), 3U);
  std::vector<std::string> keys;
  for (const auto& s : it->model().snapshot())
    keys.push_back(s.key + " " + s.op);
  EXPECT_THAT(keys, ElementsAre("stages[0] zip", "stages[0].inputs[0].stages[1] map",
                                "stages[0].inputs[0].stages[0] range",
                                "stages[0].inputs[1].stages[0] range"));
}

TEST(Zip, NeedsAnInput) {
  EXPECT_THROW(zip({}), std::invalid_argument);
  EXPECT_THROW(testing::spec(R"({"stages": [{"op": "zip", "inputs": []}]})"), SpecError);
}

}  // namespace
}  // namespace pipeprof::pipelines
