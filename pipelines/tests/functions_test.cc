// The function registry (map functions, predicates, generators built by name with JSON arguments)
// and the counter-based PRNG behind fill_random.
#include "pipeprof/pipelines/functions.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "pipeprof/pipelines/errors.h"
#include "test_util.h"

namespace pipeprof::pipelines {
namespace {

using ::testing::ElementsAre;
using ::testing::Ge;
using ::testing::Lt;

TEST(Registry, Names) {
  EXPECT_THAT(function_names(),
              ElementsAre("busy_ms", "chain", "decode_jpeg", "fill_random", "flip", "identity",
                          "increment", "nbytes", "normalize", "parse_example", "random_crop",
                          "resize", "sleep_ms", "sleep_time"));
  EXPECT_THAT(predicate_names(),
              ElementsAre("equal", "greater_than", "less_than", "modulo_equals", "not_equal"));
  EXPECT_THAT(generator_names(), ElementsAre("counter", "random_tensors"));
}

TEST(Registry, BuiltCallablesAreSerializable) {
  const Function f = make_function("sleep_ms", {{"ms", 2}});
  EXPECT_EQ(f.name, "sleep_ms");
  EXPECT_TRUE(f.serializable);
  EXPECT_EQ(f.args, nlohmann::json({{"ms", 2}}));
  EXPECT_EQ(make_function("identity", nullptr).args, nlohmann::json::object());
}

TEST(Registry, ErrorsNameTheArgument) {
  auto message = [](auto&& build) {
    try {
      build();
    } catch (const SpecError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(message([] { make_function("nope", {}, "f.json: stages[1]"); }),
            "f.json: stages[1]: unknown function \"nope\" (known: busy_ms, chain, decode_jpeg, "
            "fill_random, flip, identity, increment, nbytes, normalize, parse_example, random_crop, "
            "resize, sleep_ms, sleep_time)");
  EXPECT_EQ(message([] { make_function("sleep_ms"); }),
            "args.args.ms: expected a non-negative number, got nothing");
  EXPECT_EQ(message([] {
              make_predicate("modulo_equals", {{"modulus", 0}});
            }),
            "args.args.modulus: expected a positive integer, got 0");
  EXPECT_EQ(message([] {
              make_generator("random_tensors", {{"count", 1}});
            }),
            "args.args: expected exactly one of \"shape\" or \"shapes\"");
  EXPECT_EQ(message([] {
              make_predicate("less_than", {{"value", "x"}});
            }),
            "args.args.value: expected a number, got \"x\"");
}

TEST(Functions, IdentityAndIncrement) {
  const Element in{Tensor::from_vector<int32_t>({1, 2, 3, 4, 5, 6, 7, 8}),
                   Tensor::scalar<double>(0.5), Tensor::scalar<uint8_t>(255)};
  const Element same = make_function("identity").fn(in);
  EXPECT_TRUE(same[0].shares_buffer_with(in[0]));
  const Element out = make_function("increment").fn(in);
  EXPECT_THAT(out[0].values<int32_t>(), ElementsAre(2, 3, 4, 5, 6, 7, 8, 9));
  EXPECT_EQ(out[1].as_double(), 1.5);
  EXPECT_EQ(out[2].as_int64(), 0) << "uint8 wraps";
  EXPECT_THAT(in[0].values<int32_t>(), ElementsAre(1, 2, 3, 4, 5, 6, 7, 8))
      << "the input is not modified (copy on write)";
  EXPECT_THROW(make_function("increment").fn({Tensor::scalar<bool>(true)}), std::invalid_argument);
}

TEST(Functions, SleepAndBusyTakeTheirTime) {
  int64_t start = trace::now_ns();
  make_function("sleep_ms", {{"ms", 5}}).fn(scalar_element(1));
  EXPECT_GE(trace::now_ns() - start, 5 * trace::kNsPerMs);
  const int64_t cpu0 = trace::thread_cpu_ns();
  make_function("busy_ms", {{"ms", 5}}).fn(scalar_element(1));
  EXPECT_GE(trace::thread_cpu_ns() - cpu0, 5 * trace::kNsPerMs);
}

TEST(Functions, FillRandomShapesAndSeeds) {
  const Function f = make_function("fill_random", {{"shapes", {{2, 3}, {4}}}, {"seed", 5}});
  const Element a = f.fn(scalar_element(1));
  ASSERT_EQ(a.size(), 2U);
  EXPECT_EQ(a[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(a[1].shape(), Shape{4});
  EXPECT_EQ(a[0].dtype(), DType::kFloat32);
  EXPECT_EQ(f.fn(scalar_element(1))[0], a[0]) << "same seed and element: same values";
  EXPECT_FALSE(f.fn(scalar_element(2))[0] == a[0]) << "another element: other values";
  EXPECT_FALSE(make_function("fill_random", {{"shapes", {{2, 3}, {4}}}, {"seed", 6}})
                   .fn(scalar_element(1))[0] == a[0])
      << "another seed: other values";
}

TEST(FillRandom, DeterministicUniformValuesInTheUnitInterval) {
  std::vector<float> a(10000), b(10000), c(10000);
  fill_random(a, 42);
  fill_random(b, 42);
  fill_random(c, 43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  double sum = 0;
  for (float v : a) {
    ASSERT_THAT(v, Ge(0.0F));
    ASSERT_THAT(v, Lt(1.0F));
    sum += v;
  }
  EXPECT_NEAR(sum / static_cast<double>(a.size()), 0.5, 0.05);
  int below_tenth = 0;
  for (float v : a)
    below_tenth += v < 0.1F ? 1 : 0;
  EXPECT_NEAR(below_tenth, 1000, 200) << "roughly uniform";
}

TEST(Predicates, RejectElementsWithoutComponents) {
  EXPECT_THROW(make_predicate("less_than", {{"value", 1}}).fn(Element{}), std::invalid_argument);
  EXPECT_TRUE(make_predicate("greater_than", {{"value", 0.5}}).fn({Tensor::scalar<float>(0.75F)}));
}

TEST(Generators, CounterYieldsThenEnds) {
  auto pull = make_generator("counter", {{"count", 2}}).fn();
  EXPECT_EQ(pull()->at(0).as_int64(), 0);
  EXPECT_EQ(pull()->at(0).as_int64(), 1);
  EXPECT_FALSE(pull().has_value());
}

}  // namespace
}  // namespace pipeprof::pipelines
