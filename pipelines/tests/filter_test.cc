// filter: SEMANTICS case 8 through the C++ API and specs, plus the registered predicates and a
// failing predicate naming its stage.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/functions.h"
#include "test_util.h"

namespace pipeprof::pipelines {
namespace {

using testing::collect_ints;
using ::testing::ElementsAre;
using testing::spec_dataset;

TEST(Filter, Semantics8KeepsMatchingElements) {
  auto less_than_3 = Predicate([](const Element& e) { return e[0].as_int64() < 3; }, "lt3");
  EXPECT_THAT(collect_ints(range(1, 6).filter(less_than_3)), ElementsAre(1, 2));
}

TEST(Filter, Semantics8ThroughSpec) {
  EXPECT_THAT(collect_ints(spec_dataset(R"({"stages": [{"op": "range", "start": 1, "stop": 6},
    {"op": "filter", "predicate": "less_than", "args": {"value": 3}}]})")),
              ElementsAre(1, 2));
}

TEST(Filter, RegisteredPredicates) {
  auto with = [](const char* name, nlohmann::json args) {
    return collect_ints(range(-3, 7).filter(make_predicate(name, args)));
  };
  EXPECT_THAT(with("less_than", {{"value", 0}}), ElementsAre(-3, -2, -1));
  EXPECT_THAT(with("greater_than", {{"value", 4.5}}), ElementsAre(5, 6));
  EXPECT_THAT(with("equal", {{"value", 2}}), ElementsAre(2));
  EXPECT_THAT(with("not_equal", {{"value", 2}}), ElementsAre(-3, -2, -1, 0, 1, 3, 4, 5, 6));
  EXPECT_THAT(with("modulo_equals", {{"modulus", 3}, {"remainder", 1}}), ElementsAre(-2, 1, 4));
}

TEST(Filter, NothingMatches) {
  EXPECT_TRUE(range(100).filter(make_predicate("less_than", {{"value", -1}})).collect().empty());
}

TEST(Filter, FailingPredicateNamesTheStage) {
  auto picky = Predicate(
      [](const Element& e) {
        if (e[0].as_int64() == 2) throw std::domain_error("cannot judge 2");
        return true;
      },
      "picky");
  auto it = range(4).filter(picky).iterate();
  EXPECT_THAT(testing::drain_ints(*it, 2), ElementsAre(0, 1));
  try {
    it->next();
    FAIL() << "expected a PipelineError";
  } catch (const PipelineError& e) {
    EXPECT_EQ(e.stage(), "filter 'picky'");
    EXPECT_STREQ(e.what(), "filter 'picky': cannot judge 2");
  }
  EXPECT_THAT(testing::drain_ints(*it), ElementsAre(3));
}

TEST(Filter, EmptyPredicateIsRejected) {
  EXPECT_THROW(range(3).filter(Predicate{}), std::invalid_argument);
}

}  // namespace
}  // namespace pipeprof::pipelines
