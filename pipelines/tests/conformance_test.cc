// The shared conformance fixture: every operation, each in a small pipeline, goes through the same
// checks (tf.data's style): values and order, a sticky end of sequence, a fresh second iteration,
// statistics for the output stage, determinism over repeated runs, and no thread left behind when
// an iterator is dropped mid-epoch. Errors from a map function, teardown of slow parallel stages
// and determinism with parallelism > 1 follow.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "pipeprof/pipelines/dataset.h"
#include "formats/hdf5.h"
#include "formats/npy.h"
#include "formats/npz.h"
#include "formats/tfrecord.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/file_sources.h"
#include "pipeprof/pipelines/files.h"
#include "pipeprof/pipelines/functions.h"
#include "pipeprof_testing/temp_dir.h"
#include "pipeprof/pipelines/sleep.h"
#include "test_util.h"

namespace pipeprof::pipelines {
namespace {

using namespace std::chrono_literals;
using testing::drain_ints;
using ::testing::ElementsAreArray;
using ::testing::Gt;
using testing::ints;
using testing::ms_since;
using testing::run_with_deadline;
using testing::thread_count;
using testing::wait_for_thread_count;

struct OpCase {
  std::string name;
  std::function<Dataset()> make;
  std::string expected;          // JSON array of element_to_json(element)
  bool unordered = false;        // the output is a permutation of `expected`
  bool same_every_epoch = true;  // a second iteration yields the same order
  // The first complete pass writes a file that later passes read (cache with a filename): one
  // writer at a time, so two live iterators are checked once the file is complete (a second
  // writer's error is the formats tests' business).
  bool writes_on_first_pass = false;
};

std::ostream& operator<<(std::ostream& os, const OpCase& c) {
  return os << c.name;
}

nlohmann::json to_json_list(const std::vector<Element>& elements) {
  nlohmann::json out = nlohmann::json::array();
  for (const Element& e : elements)
    out.push_back(element_to_json(e));
  return out;
}

nlohmann::json sorted(nlohmann::json list) {
  std::sort(list.begin(), list.end());
  return list;
}

nlohmann::json run_epoch(Iterator& it) {
  nlohmann::json out = nlohmann::json::array();
  while (auto e = it.next())
    out.push_back(element_to_json(*e));
  return out;
}

Function square_fn() {
  return Function([](Element e) { return scalar_element(e[0].as_int64() * e[0].as_int64()); },
                  "square");
}

// Interleave of SEMANTICS case 1: range(1, 6) -> from_tensors(x).repeat(6), cycle 2, block 4.
Dataset case1_interleave(int64_t parallelism) {
  return range(1, 6).interleave(
      DatasetFn([](const Element& x) { return from_tensors(x).repeat(6); }),
      {.cycle_length = 2, .block_length = 4, .parallelism = parallelism});
}
constexpr const char* kCase1 = "[1,1,1,1,2,2,2,2,1,1,2,2,3,3,3,3,4,4,4,4,3,3,4,4,5,5,5,5,5,5]";

// Small files for the file sources, made once for the whole binary and removed at its exit:
// a.tfrecord holds the records [1], [2, 3]; b.tfrecord holds [4]; c.bin is a 2-byte header, the
// 2-byte records [5, 6] and [7, 8], and a 1-byte footer.
const std::filesystem::path& file_fixture() {
  static const testing_support::TempDir dir("conformance_files");
  static const bool written = [] {
    formats::TFRecordWriter a((dir / "a.tfrecord").string());
    a.write(std::string_view("\x01"));
    a.write(std::string_view("\x02\x03"));
    a.close();
    formats::TFRecordWriter b((dir / "b.tfrecord").string());
    b.write(std::string_view("\x04"));
    b.close();
    dir.write("c.bin", std::string("hh\x05\x06\x07\x08" "f"));
    return true;
  }();
  (void)written;
  return dir.path();
}
std::string fixture(const char* name) {
  return (file_fixture() / name).string();
}
std::string file_names_json(std::initializer_list<const char*> names) {
  nlohmann::json out = nlohmann::json::array();
  for (const char* n : names)
    out.push_back(element_to_json(Element{file_name_tensor(fixture(n))}));
  return out.dump();
}

// Files for the file sources and the on-disk cache, in a folder of this process's own: two
// files of each format holding int64 [2] vectors {0, 1} and {2, 3}.
const testing_support::TempDir& files_dir() {
  static const testing_support::TempDir dir("conformance_formats");  // removed at exit
  static const bool written = [] {
    for (int64_t i = 0; i < 2; ++i) {
      const Tensor t = Tensor::from_vector<int64_t>({2 * i, 2 * i + 1});
      const std::string stem = (dir / ("f" + std::to_string(i))).string();
      formats::write_npy(stem + ".npy", t);
      formats::write_npz(stem + ".npz", {{"x", t}}, i == 1);
      formats::write_hdf5(stem + ".h5", {{"x", t}});
    }
    return true;
  }();
  (void)written;
  return dir;
}
std::vector<std::string> conformance_files(const std::string& ext) {
  return {(files_dir() / ("f0" + ext)).string(), (files_dir() / ("f1" + ext)).string()};
}

std::vector<OpCase> op_cases() {
  return {
      {"range", [] { return range(2, 12, 3); }, "[2,5,8,11]"},
      {"range_negative_step", [] { return range(3, -3, -2); }, "[3,1,-1]"},
      {"from_tensors", [] { return from_tensors({Tensor::scalar<int64_t>(7)}); }, "[7]"},
      {"from_tensor_slices",
       [] {
         return from_tensor_slices({Tensor::from_vector<int64_t>({4, 5, 6})});
       },
       "[4,5,6]"},
      {"from_vector",
       [] {
         return from_vector({3, 1, 2});
       },
       "[3,1,2]"},
      {"generator_counter",
       [] {
         return generator(make_generator("counter", {{"count", 5}}));
       },
       "[0,1,2,3,4]"},
      {"generator_lambda",
       [] {
         return generator(GeneratorFn([] {
           return std::function<std::optional<Element>()>(
               [i = 0]() mutable -> std::optional<Element> {
                 if (i == 3) return std::nullopt;
                 return scalar_element(10 * ++i);
               });
         }));
       },
       "[10,20,30]"},
      {"artificial", [] { return artificial({.open_ms = 1, .read_ms = 1, .num_samples = 4}); },
       "[0,1,2,3]"},
      {"zip",
       [] {
         return zip({range(5), range(10, 13)});
       },
       "[[0,10],[1,11],[2,12]]"},
      {"map", [] { return range(6).map(make_function("increment")); }, "[1,2,3,4,5,6]"},
      {"map_parallel_3", [] { return range(12).map(square_fn(), {.parallelism = 3}); },
       "[0,1,4,9,16,25,36,49,64,81,100,121]"},
      {"map_autotune", [] { return range(12).map(square_fn(), {.parallelism = kAutotune}); },
       "[0,1,4,9,16,25,36,49,64,81,100,121]"},
      {"map_nondeterministic",
       [] { return range(12).map(square_fn(), {.parallelism = 4, .deterministic = false}); },
       "[0,1,4,9,16,25,36,49,64,81,100,121]", /*unordered=*/true, /*same_every_epoch=*/false},
      {"interleave", [] { return case1_interleave(0); }, kCase1},
      {"interleave_parallel_2", [] { return case1_interleave(2); }, kCase1},
      {"interleave_autotune", [] { return case1_interleave(kAutotune); }, kCase1},
      {"prefetch_1", [] { return range(10).prefetch(1); }, "[0,1,2,3,4,5,6,7,8,9]"},
      {"prefetch_autotune", [] { return range(10).prefetch(kAutotune); }, "[0,1,2,3,4,5,6,7,8,9]"},
      {"batch", [] { return range(7).batch(3); }, "[[0,1,2],[3,4,5],[6]]"},
      {"batch_drop_remainder", [] { return range(7).batch(3, true); }, "[[0,1,2],[3,4,5]]"},
      {"cache", [] { return range(5).map(make_function("increment")).cache(); }, "[1,2,3,4,5]"},
      {"cache_file",
       [] {
         return range(5).map(make_function("increment")).cache((files_dir() / "c.cache").string());
       },
       "[1,2,3,4,5]", false, true, true},
      {"map_and_batch",
       [] { return range(7).map_and_batch(make_function("increment"), {.batch_size = 3}); },
       "[[1,2,3],[4,5,6],[7]]"},
      {"map_and_batch_parallel_3",
       [] {
         return range(7).map_and_batch(square_fn(), {.batch_size = 3, .drop_remainder = true,
                                                     .parallelism = 3});
       },
       "[[0,1,4],[9,16,25]]"},
      {"map_and_batch_autotune",
       [] {
         return range(5).map_and_batch(square_fn(), {.batch_size = 2, .parallelism = kAutotune});
       },
       "[[0,1],[4,9],[16]]"},
      {"npy", [] { return npy_files(conformance_files(".npy")); }, "[[0,1],[2,3]]"},
      {"npy_rows", [] { return npy_files(conformance_files(".npy"), true); }, "[0,1,2,3]"},
      {"npz", [] { return npz_files(conformance_files(".npz"), {"x"}); }, "[[0,1],[2,3]]"},
      {"hdf5", [] { return hdf5_files(conformance_files(".h5"), {}, true); }, "[0,1,2,3]"},
      {"shuffle_fixed_order",
       [] { return range(20).shuffle(6, {.seed = 7, .reshuffle_each_iteration = false}); },
       "[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19]", /*unordered=*/true},
      {"shuffle_reshuffled",
       [] { return range(20).shuffle(6, {.seed = 7, .reshuffle_each_iteration = true}); },
       "[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19]", /*unordered=*/true,
       /*same_every_epoch=*/false},
      {"repeat",
       [] {
         return from_vector({1, 2}).repeat(3);
       },
       "[1,2,1,2,1,2]"},
      {"repeat_forever_take",
       [] {
         return from_vector({1, 2}).repeat().take(5);
       },
       "[1,2,1,2,1]"},
      {"take", [] { return range(10).take(4); }, "[0,1,2,3]"},
      {"skip", [] { return range(10).skip(6); }, "[6,7,8,9]"},
      {"filter",
       [] {
         return range(10).filter(
             Predicate([](const Element& e) { return e[0].as_int64() % 2 == 0; }, "even"));
       },
       "[0,2,4,6,8]"},
      {"shard", [] { return range(10).shard(3, 1); }, "[1,4,7]"},
      {"list_files_sorted",
       [] { return list_files(fixture("*.tfrecord"), {.shuffle = false}); },
       file_names_json({"a.tfrecord", "b.tfrecord"})},
      {"list_files_shuffled",
       [] { return list_files(fixture("*.tfrecord"), {.shuffle = true, .seed = 3}); },
       file_names_json({"a.tfrecord", "b.tfrecord"}), /*unordered=*/true,
       /*same_every_epoch=*/false},
      {"tfrecord", [] { return tfrecord({fixture("a.tfrecord"), fixture("b.tfrecord")}); },
       "[[1],[2,3],[4]]"},
      {"tfrecord_interleaved",
       [] {
         return list_files(fixture("*.tfrecord"), {.shuffle = false})
             .interleave(DatasetFn([](const Element& f) { return tfrecord({file_name(f)}); }),
                         {.cycle_length = 2, .parallelism = 2});
       },
       "[[1],[4],[2,3]]"},
      {"fixed_length_records",
       [] {
         return fixed_length_records({fixture("c.bin")},
                                     {.record_bytes = 2, .header_bytes = 2, .footer_bytes = 1});
       },
       "[[5,6],[7,8]]"},
      {"guide_pipeline",
       [] {
         return range(3)
             .interleave(DatasetFn([](const Element& x) {
                           return artificial(
                               {.open_ms = 1, .read_ms = 1, .num_samples = x[0].as_int64() + 1});
                         }),
                         {.cycle_length = 2, .parallelism = kAutotune})
             .map(make_function("sleep_ms", {{"ms", 1}}), {.parallelism = kAutotune})
             .prefetch(kAutotune);
       },
       "[0,0,1,0,1,2]"},
  };
}

class Conformance : public ::testing::TestWithParam<OpCase> {
 protected:
  void expect_matches(const nlohmann::json& actual) const {
    const auto expected = nlohmann::json::parse(GetParam().expected);
    if (GetParam().unordered) {
      EXPECT_EQ(sorted(actual), sorted(expected)) << "got " << actual.dump();
    } else {
      EXPECT_EQ(actual, expected);
    }
  }
};

TEST_P(Conformance, ValuesAndOrder) {
  run_with_deadline(20s, [&] { expect_matches(to_json_list(GetParam().make().collect())); });
}

TEST_P(Conformance, EndOfSequenceIsSticky) {
  run_with_deadline(20s, [&] {
    auto it = GetParam().make().iterate();
    expect_matches(run_epoch(*it));
    for (int i = 0; i < 3; ++i)
      EXPECT_FALSE(it->next().has_value()) << "pull " << i << " after the end";
  });
}

TEST_P(Conformance, SecondIterationStartsAfresh) {
  run_with_deadline(20s, [&] {
    const Dataset ds = GetParam().make();
    auto first = ds.iterate();
    const auto epoch1 = run_epoch(*first);
    auto second = ds.iterate();
    const auto epoch2 = run_epoch(*second);
    expect_matches(epoch1);
    expect_matches(epoch2);
    if (GetParam().same_every_epoch) {
      EXPECT_EQ(epoch1, epoch2);
    }
  });
}

TEST_P(Conformance, TwoLiveIteratorsAreIndependent) {
  run_with_deadline(20s, [&] {
    const Dataset ds = GetParam().make();
    if (GetParam().writes_on_first_pass) expect_matches(run_epoch(*ds.iterate()));
    auto a = ds.iterate();
    auto first = a->next();  // `a` is mid-epoch while `b` runs a whole epoch
    ASSERT_TRUE(first.has_value());
    auto b = ds.iterate();
    expect_matches(run_epoch(*b));
    nlohmann::json rest = run_epoch(*a);
    rest.insert(rest.begin(), element_to_json(*first));
    expect_matches(rest);
  });
}

TEST_P(Conformance, RepeatedRunsAreIdentical) {
  if (GetParam().unordered) GTEST_SKIP() << "order is not specified";
  run_with_deadline(30s, [&] {
    const auto reference = to_json_list(GetParam().make().collect());
    for (int run = 0; run < 3; ++run) {
      EXPECT_EQ(to_json_list(GetParam().make().collect()), reference) << "run " << run;
    }
  });
}

TEST_P(Conformance, OutputStageCountsItsElements) {
  run_with_deadline(20s, [&] {
    auto it = GetParam().make().iterate();
    const auto n = static_cast<int64_t>(run_epoch(*it).size());
    const auto nodes = it->model().snapshot();
    ASSERT_FALSE(nodes.empty());
    // The output stage is the one no other stage consumes; it is registered first.
    EXPECT_EQ(nodes.front().parent, "");
    EXPECT_EQ(nodes.front().elements, n);
    for (const auto& node : nodes)
      EXPECT_GE(node.elements, 0) << node.key;
  });
}

TEST_P(Conformance, DroppedMidEpochJoinsEveryThread) {
  run_with_deadline(20s, [&] {
    const Dataset ds = GetParam().make();
    const int before = thread_count();
    {
      auto it = ds.iterate();
      ASSERT_TRUE(it->next().has_value());
    }
    EXPECT_EQ(wait_for_thread_count(before), before);
  });
}

INSTANTIATE_TEST_SUITE_P(Ops, Conformance, ::testing::ValuesIn(op_cases()),
                         [](const auto& param_info) { return param_info.param.name; });

// --- Errors: a map function that fails on element k ---------------------------------------------

constexpr int64_t kFailAt = 3;

// Fails on the element whose value is kFailAt.
Function boom_fn() {
  return Function(
      [](Element e) {
        if (e[0].as_int64() == kFailAt)
          throw std::runtime_error("boom at " + std::to_string(kFailAt));
        return e;
      },
      "boom");
}

struct ErrorCase {
  std::string name;
  std::function<Dataset(Function)> make;  // a pipeline over range(8) applying the function
};

std::ostream& operator<<(std::ostream& os, const ErrorCase& c) {
  return os << c.name;
}

std::vector<ErrorCase> error_cases() {
  auto nested = [](int64_t parallelism) {
    return [parallelism](Function f) {
      return range(1).interleave(DatasetFn([f](const Element&) { return range(8).map(f); }),
                                 {.cycle_length = 1, .parallelism = parallelism});
    };
  };
  return {
      {"map_sequential", [](Function f) { return range(8).map(std::move(f)); }},
      {"map_parallel_1", [](Function f) { return range(8).map(std::move(f), {.parallelism = 1}); }},
      {"map_parallel_3", [](Function f) { return range(8).map(std::move(f), {.parallelism = 3}); }},
      {"map_autotune",
       [](Function f) { return range(8).map(std::move(f), {.parallelism = kAutotune}); }},
      {"map_then_prefetch",
       [](Function f) { return range(8).map(std::move(f), {.parallelism = 2}).prefetch(2); }},
      {"map_in_interleave", nested(0)},
      {"map_in_parallel_interleave", nested(1)},
      {"map_then_take", [](Function f) { return range(8).map(std::move(f)).take(-1); }},
  };
}

class MapErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(MapErrors, EarlierElementsThenTheErrorNamingTheStage) {
  run_with_deadline(20s, [&] {
    auto it = GetParam().make(boom_fn()).iterate();
    EXPECT_THAT(drain_ints(*it, kFailAt), ElementsAreArray({0, 1, 2}));
    try {
      auto e = it->next();
      FAIL() << "expected a PipelineError, got "
             << (e ? element_debug_string(*e) : std::string("the end"));
    } catch (const PipelineError& error) {
      EXPECT_EQ(error.stage(), "map 'boom'");
      EXPECT_STREQ(error.what(), "map 'boom': boom at 3");
    }
    // The failing element is skipped; the iteration goes on and ends normally.
    EXPECT_THAT(drain_ints(*it), ElementsAreArray({4, 5, 6, 7}));
    EXPECT_FALSE(it->next().has_value());
  });
}

TEST_P(MapErrors, DroppingAfterTheErrorJoinsEveryThread) {
  run_with_deadline(20s, [&] {
    const int before = thread_count();
    {
      auto it = GetParam().make(boom_fn()).iterate();
      drain_ints(*it, kFailAt);
      EXPECT_THROW(it->next(), PipelineError);
    }
    EXPECT_EQ(wait_for_thread_count(before), before);
  });
}

INSTANTIATE_TEST_SUITE_P(Ops, MapErrors, ::testing::ValuesIn(error_cases()),
                         [](const auto& param_info) { return param_info.param.name; });

TEST(MapErrorsNonDeterministic, EveryOtherElementAndTheErrorArrive) {
  run_with_deadline(20s, [] {
    auto it = range(8).map(boom_fn(), {.parallelism = 3, .deterministic = false}).iterate();
    std::vector<int64_t> got;
    int errors = 0;
    while (true) {
      try {
        auto e = it->next();
        if (!e) break;
        got.push_back(e->at(0).as_int64());
      } catch (const PipelineError& error) {
        EXPECT_EQ(error.stage(), "map 'boom'");
        ++errors;
      }
    }
    EXPECT_EQ(errors, 1);
    EXPECT_THAT(got, ::testing::UnorderedElementsAre(0, 1, 2, 4, 5, 6, 7));
  });
}

// --- Teardown: dropping an iterator whose workers are mid-sleep ----------------------------------

constexpr double kSlowMs = 400;
// Destruction must not wait for the sleeps to finish: the root cancels the tree first.
constexpr double kFastTeardownMs = kSlowMs / 2;

Function slow_fn() {
  return make_function("sleep_ms", {{"ms", kSlowMs}});
}

// Pulls one element, lets the workers start their next sleeps, then drops the iterator: every
// thread is joined, quickly.
void expect_fast_teardown(const Dataset& ds, int min_workers) {
  run_with_deadline(20s, [&] {
    const int before = thread_count();
    auto it = ds.iterate();
    ASSERT_TRUE(it->next().has_value());
    EXPECT_GE(thread_count(), before + min_workers) << "the pipeline should run worker threads";
    // Let the workers (and a prefetch thread whose buffer just got room) start their next sleep.
    std::this_thread::sleep_for(50ms);
    const int64_t start = trace::now_ns();
    it.reset();
    const double teardown_ms = ms_since(start);
    EXPECT_LT(teardown_ms, kFastTeardownMs) << "destruction waited for sleeping workers";
    EXPECT_EQ(wait_for_thread_count(before), before);
  });
}

TEST(Teardown, ParallelMapWithSleepingWorkers) {
  expect_fast_teardown(range(100).map(slow_fn(), {.parallelism = 4}), 4);
}

TEST(Teardown, AutotunedParallelMapWithSleepingWorkers) {
  expect_fast_teardown(range(100).map(slow_fn(), {.parallelism = kAutotune}), 2);
}

TEST(Teardown, ParallelInterleaveWithSleepingWorkers) {
  auto ds = range(8).interleave(
      DatasetFn([](const Element& x) { return from_tensors(x).repeat(10).map(slow_fn()); }),
      {.cycle_length = 3, .parallelism = 3});
  expect_fast_teardown(ds, 3);
}

TEST(Teardown, PrefetchWithSleepingProducer) {
  expect_fast_teardown(range(100).map(slow_fn()).prefetch(2), 1);
}

TEST(Teardown, PrefetchOverParallelMapOverParallelInterleave) {
  auto ds = range(8)
                .interleave(DatasetFn([](const Element&) {
                              return artificial(
                                  {.open_ms = kSlowMs, .read_ms = kSlowMs, .num_samples = 10});
                            }),
                            {.cycle_length = 2, .parallelism = 2})
                .map(slow_fn(), {.parallelism = 3})
                .prefetch(3);
  expect_fast_teardown(ds, 2 + 3 + 1);
}

// After cancellation every simulated file reads as empty; an interleave over an endless input must
// still give up at once instead of opening input after input forever.
TEST(Teardown, InterleaveOverEndlessInputStopsWhenCancelled) {
  auto open_slow = DatasetFn([](const Element&) {
    return artificial({.open_ms = kSlowMs, .read_ms = 1, .num_samples = 2});
  });
  expect_fast_teardown(range(2).repeat().interleave(open_slow, {.cycle_length = 2}).prefetch(1), 1);
  expect_fast_teardown(
      range(2).repeat().interleave(open_slow, {.cycle_length = 2, .parallelism = 2}).prefetch(1),
      3);
}

TEST(Teardown, IteratorNeverPulledStartsNoThread) {
  const int before = thread_count();
  auto it = range(10)
                .map(slow_fn(), {.parallelism = 4})
                .interleave(DatasetFn([](const Element& x) { return from_tensors(x); }),
                            {.cycle_length = 2, .parallelism = 2})
                .prefetch(2)
                .iterate();
  EXPECT_EQ(thread_count(), before);
  it.reset();
  EXPECT_EQ(wait_for_thread_count(before), before);
}

// --- Determinism with parallelism > 1 ------------------------------------------------------------

// Sleeps a value-dependent 0..1.8 ms so that parallel calls finish out of order.
Function jitter_fn() {
  return Function(
      [](Element e) {
        precise_sleep_for((e[0].as_int64() * 37 % 7) * 300 * trace::kNsPerUs);
        return scalar_element(e[0].as_int64() * 10);
      },
      "jitter");
}

TEST(Determinism, ParallelMapMatchesSequentialOnEveryRun) {
  const auto sequential = testing::collect_ints(range(40).map(jitter_fn()));
  ASSERT_EQ(sequential.size(), 40U);
  for (int64_t parallelism : std::vector<int64_t>{1, 2, 4, kAutotune}) {
    for (int run = 0; run < 2; ++run) {
      EXPECT_EQ(testing::collect_ints(range(40).map(jitter_fn(), {.parallelism = parallelism})),
                sequential)
          << "parallelism " << parallelism << ", run " << run;
    }
  }
}

TEST(Determinism, NonDeterministicMapYieldsAPermutation) {
  auto got =
      testing::collect_ints(range(40).map(jitter_fn(), {.parallelism = 4, .deterministic = false}));
  auto expected = testing::collect_ints(range(40).map(jitter_fn()));
  EXPECT_THAT(got, ::testing::UnorderedElementsAreArray(expected));
}

TEST(Determinism, ParallelInterleaveMatchesSequentialOnEveryRun) {
  auto make = [](int64_t parallelism) {
    return range(7).interleave(DatasetFn([](const Element& x) {
                                 const int64_t v = x[0].as_int64();
                                 return range(v * 10, v * 10 + v + 1).map(jitter_fn());
                               }),
                               {.cycle_length = 3, .block_length = 2, .parallelism = parallelism});
  };
  const auto sequential = testing::collect_ints(make(0));
  ASSERT_EQ(sequential.size(), 28U);
  for (int64_t parallelism : std::vector<int64_t>{1, 2, 3, kAutotune}) {
    for (int run = 0; run < 2; ++run) {
      EXPECT_EQ(testing::collect_ints(make(parallelism)), sequential)
          << "parallelism " << parallelism << ", run " << run;
    }
  }
}

TEST(Determinism, PipelineWithEveryParallelStageMatchesSequential) {
  auto make = [](int64_t parallelism, int64_t buffer) {
    auto ds =
        range(6)
            .interleave(
                DatasetFn([](const Element& x) { return range(x[0].as_int64()).map(jitter_fn()); }),
                {.cycle_length = 2, .parallelism = parallelism})
            .map(jitter_fn(), {.parallelism = parallelism});
    return buffer == 0 ? ds : ds.prefetch(buffer);
  };
  const auto sequential = testing::collect_ints(make(0, 0));
  EXPECT_EQ(testing::collect_ints(make(2, 2)), sequential);
  EXPECT_EQ(testing::collect_ints(make(kAutotune, kAutotune)), sequential);
}

}  // namespace
}  // namespace pipeprof::pipelines
