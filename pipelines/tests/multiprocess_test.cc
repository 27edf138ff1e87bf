// The process-based stages, multiprocess and shared_store, through the same checks: every element
// arrives, each producer's order is kept, deterministic order is round-robin, errors and crashes
// name the producer, and every way out (the end, an error, a crash, early destruction, an
// exception in the consumer) leaves no process, descriptor or shared memory behind.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "mp_test_util.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/functions.h"
#include "pipeprof/pipelines/spec.h"
#include "pipeprof/trace/clock.h"
#include "test_util.h"

namespace pipeprof::pipelines {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::LeakCheck;

struct Transport {
  std::string op;
  Dataset (*make)(DatasetFn, int64_t producers, int64_t queue, bool deterministic);
};

const Transport kMultiprocess{
    "multiprocess", [](DatasetFn fn, int64_t p, int64_t q, bool d) {
      return multiprocess(std::move(fn), {.producers = p, .queue_capacity = q, .deterministic = d});
    }};
const Transport kSharedStore{
    "shared_store", [](DatasetFn fn, int64_t p, int64_t q, bool d) {
      return shared_store(
          std::move(fn), {.producers = p, .queue_capacity = q, .store_mb = 64, .deterministic = d});
    }};

class Transports : public ::testing::TestWithParam<Transport> {};

TEST_P(Transports, EveryElementArrivesAndEachProducerKeepsItsOrder) {
  LeakCheck leaks;
  {
    const Dataset ds = GetParam().make(testing::counting_producer(20), 3, 4, false);
    const std::vector<int64_t> got = testing::collect_ints(ds);
    ASSERT_EQ(got.size(), 60u);
    std::map<int64_t, std::vector<int64_t>> by_producer;
    for (int64_t v : got)
      by_producer[v / 100].push_back(v);
    ASSERT_EQ(by_producer.size(), 3u);
    for (const auto& [p, values] : by_producer) {
      ASSERT_EQ(values.size(), 20u) << "producer " << p;
      EXPECT_TRUE(std::is_sorted(values.begin(), values.end())) << "producer " << p;
      EXPECT_EQ(values.front(), p * 100);
    }
  }
  leaks.verify();
}

TEST_P(Transports, DeterministicOrderIsRoundRobinSkippingEndedProducers) {
  LeakCheck leaks;
  {
    // Producer i yields i * 100 .. i * 100 + i: producer 0 ends first, then 1, then 2.
    const DatasetFn fn([](const Element& e) {
      const int64_t i = e.at(0).as_int64();
      return range(i * 100, i * 100 + i + 1);
    });
    const Dataset ds = GetParam().make(fn, 3, 2, true);
    EXPECT_THAT(testing::collect_ints(ds), ElementsAre(0, 100, 200, 101, 201, 202));
    EXPECT_THAT(testing::collect_ints(ds), ElementsAre(0, 100, 200, 101, 201, 202))
        << "a second epoch starts fresh producers";
  }
  leaks.verify();
}

TEST_P(Transports, TensorsArriveWithTheirDtypesShapesAndValues) {
  LeakCheck leaks;
  {
    const nlohmann::json spec = {
        {"stages",
         {{{"op", GetParam().op},
           {"producers", 2},
           {"queue_capacity", 2},
           {"deterministic", true},
           {"pipeline",
            {{"stages",
              {{{"op", "generator"},
                {"fn", "random_tensors"},
                {"args", {{"count", 3}, {"shapes", {{64, 1000, 3}, {4, 1}}}, {"seed", 7}}}}}}}}}}}};
    const std::vector<Element> got = parse_pipeline(spec).collect();
    const std::vector<Element> want =
        generator(make_generator("random_tensors",
                                 {{"count", 3}, {"shapes", {{64, 1000, 3}, {4, 1}}}, {"seed", 7}}))
            .collect();
    ASSERT_EQ(got.size(), 6u);
    for (size_t k = 0; k < got.size(); ++k) {
      ASSERT_EQ(got[k].size(), 2u);
      EXPECT_EQ(got[k][0].dtype(), DType::kFloat32);
      EXPECT_EQ(got[k][0].shape(), (Shape{64, 1000, 3}));
      EXPECT_TRUE(got[k] == want[k / 2]) << "element " << k;
    }
  }
  leaks.verify();
}

TEST_P(Transports, SpecRoundTripsAndValidates) {
  const nlohmann::json spec = {
      {"stages",
       {{{"op", GetParam().op},
         {"producers", 2},
         {"queue_capacity", 5},
         {"pipeline", {{"stages", {{{"op", "range"}, {"start", "$element"}, {"stop", 3}}}}}}}}}};
  const Dataset ds = parse_pipeline(spec);
  const nlohmann::json back = ds.to_json();
  EXPECT_EQ(back["stages"][0]["producers"], 2);
  EXPECT_EQ(back["stages"][0]["queue_capacity"], 5);
  EXPECT_EQ(back["stages"][0]["pipeline"], spec["stages"][0]["pipeline"]);
  std::vector<int64_t> got = testing::collect_ints(parse_pipeline(back));
  std::sort(got.begin(), got.end());
  EXPECT_THAT(got, ElementsAre(0, 1, 1, 2, 2));

  nlohmann::json bad = spec;
  bad["stages"][0]["producers"] = 0;
  EXPECT_THROW(parse_pipeline(bad), SpecError);
  bad = spec;
  bad["stages"][0]["pipeline"]["stages"][0]["op"] = "nope";
  EXPECT_THROW(parse_pipeline(bad), SpecError);
  bad = spec;
  bad["stages"][0]["typo"] = 1;
  EXPECT_THROW(parse_pipeline(bad), SpecError);
}

TEST_P(Transports, AFailingProducerPipelineNamesTheProducerAfterItsEarlierElements) {
  LeakCheck leaks;
  {
    // Producer 1 fails on its third element.
    const DatasetFn fn([](const Element& e) {
      const int64_t i = e.at(0).as_int64();
      return range(i * 100, i * 100 + 5).map(Function([i](Element x) {
        if (i == 1 && x.at(0).as_int64() == 102) throw std::runtime_error("bad record 102");
        return x;
      }));
    });
    auto it = GetParam().make(fn, 2, 2, true).iterate();
    std::vector<int64_t> got;
    try {
      while (auto e = it->next())
        got.push_back(e->at(0).as_int64());
      FAIL() << "no error";
    } catch (const PipelineError& e) {
      EXPECT_THAT(e.what(), HasSubstr("producer 1"));
      EXPECT_THAT(e.what(), HasSubstr("bad record 102"));
      EXPECT_EQ(e.stage(), GetParam().op);
    }
    EXPECT_THAT(got, ElementsAre(0, 100, 1, 101, 2));
    EXPECT_THROW(it->next(), PipelineError) << "the failure is sticky";
  }
  leaks.verify();
}

TEST_P(Transports, AProducerKilledBySigkillIsReportedWithinOneSecond) {
  LeakCheck leaks;
  {
    auto it = GetParam().make(testing::pid_producer(20), 2, 4, false).iterate();
    auto first = it->next();
    ASSERT_TRUE(first.has_value());
    const auto victim = static_cast<pid_t>(first->at(0).as_int64());
    ASSERT_EQ(::kill(victim, SIGKILL), 0);
    const int64_t t0 = trace::now_ns();
    try {
      while (it->next()) {
      }
      FAIL() << "no error after a producer was killed";
    } catch (const PipelineError& e) {
      EXPECT_THAT(e.what(), HasSubstr("pid " + std::to_string(victim)));
      EXPECT_THAT(e.what(), HasSubstr("killed by signal 9"));
    }
    EXPECT_LT(trace::now_ns() - t0, 1'000'000'000) << "the crash took over 1 s to be noticed";
  }
  leaks.verify();
}

TEST_P(Transports, EarlyDestructionEndsAndReapsEveryProducer) {
  LeakCheck leaks;
  {
    // Producers that would run for 1000 x 50 ms.
    auto it = GetParam().make(testing::pid_producer(50), 3, 2, false).iterate();
    ASSERT_TRUE(it->next().has_value());
    const int64_t t0 = trace::now_ns();
    it.reset();
    EXPECT_LT(trace::now_ns() - t0, 2'000'000'000) << "destruction must not wait for producers";
  }
  leaks.verify();
}

TEST_P(Transports, DestructionBeforeAnyPullAndAnExceptionInTheConsumerLeaveNothing) {
  LeakCheck leaks;
  { auto it = GetParam().make(testing::counting_producer(1000), 2, 2, false).iterate(); }
  EXPECT_THROW(
      {
        auto it = GetParam().make(testing::counting_producer(1000), 2, 2, false).iterate();
        it->next();
        throw std::runtime_error("the training step failed");
      },
      std::runtime_error);
  leaks.verify();
}

TEST_P(Transports, CountsTheBytesItsTransportCopies) {
  const Dataset ds =
      GetParam().make(DatasetFn([](const Element&) {
                        return from_tensors(Element{Tensor(DType::kFloat32, {1000})}).repeat(3);
                      }),
                      2, 2, false);
  auto it = ds.iterate();
  while (it->next()) {
  }
  const auto model = it->shared_model();
  it.reset();
  int64_t copied = -1;
  for (const auto& s : model->snapshot())
    if (s.op == GetParam().op) copied = s.bytes_copied;
  // 6 elements of 4000 payload bytes: twice through the socket, once into the store.
  EXPECT_EQ(copied, GetParam().op == "multiprocess" ? 6 * 2 * 4000 : 6 * 4000);
}

INSTANTIATE_TEST_SUITE_P(Ops, Transports, ::testing::Values(kMultiprocess, kSharedStore),
                         [](const ::testing::TestParamInfo<Transport>& p) { return p.param.op; });

TEST(Multiprocess, MeasuresTheSocketsReceiveRateAndLeavesNothing) {
  const testing::LeakCheck leaks;
  // Elements larger than the socket's buffers (16 MiB asked for, which the kernel doubles), and a
  // byte.
  const double rate = measure_socket_receive_gb_per_s(size_t{40} << 20, 2);
  EXPECT_GT(rate, 0.0);
  EXPECT_TRUE(std::isfinite(rate));
  EXPECT_GT(measure_socket_receive_gb_per_s(1, 1), 0.0);
  leaks.verify();
}

TEST(Multiprocess, RejectsBadOptions) {
  EXPECT_THROW(multiprocess(testing::counting_producer(1), {.producers = 0}),
               std::invalid_argument);
  EXPECT_THROW(multiprocess(testing::counting_producer(1), {.queue_capacity = 0}),
               std::invalid_argument);
  EXPECT_THROW(shared_store(testing::counting_producer(1), {.store_mb = 0}), std::invalid_argument);
}

}  // namespace
}  // namespace pipeprof::pipelines
