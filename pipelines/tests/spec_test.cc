// JSON pipeline specs: error messages ("<source>: <json path>: expected <what>, got <value>"),
// loading files, and the round trip parse -> to_spec -> parse.
#include "pipeprof/pipelines/spec.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/files.h"
#include "pipeprof/pipelines/functions.h"
#include "pipeprof/pipelines/memory_limit.h"
#include "test_util.h"

namespace pipeprof::pipelines {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// The SpecError message of parsing `json` as "spec.json" ("" when it parses).
std::string error_of(std::string_view json) {
  try {
    parse_spec(nlohmann::json::parse(json), "spec.json");
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}

// The SpecError message `fn` throws ("" when it throws none).
template <typename Fn>
std::string error_message(Fn&& fn) {
  try {
    fn();
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}

struct ErrorCase {
  const char* name;
  const char* json;
  const char* message;
};

std::ostream& operator<<(std::ostream& os, const ErrorCase& c) {
  return os << c.name;
}

class SpecErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(SpecErrors, ExactMessage) {
  EXPECT_EQ(error_of(GetParam().json), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Messages, SpecErrors,
    ::testing::Values(
        ErrorCase{"negative_parallelism",
                  R"({"stages": [{"op": "range", "stop": 5}, {"op": "take", "count": 2},
                     {"op": "map", "fn": "identity", "parallelism": -3}]})",
                  "spec.json: stages[2].parallelism: expected a positive integer or \"autotune\", "
                  "got -3"},
        ErrorCase{"misspelt_autotune",
                  R"({"stages": [{"op": "range", "stop": 5},
                     {"op": "map", "fn": "identity", "parallelism": "auto"}]})",
                  "spec.json: stages[1].parallelism: expected a positive integer or \"autotune\", "
                  "got \"auto\""},
        ErrorCase{"unknown_source_op", R"({"stages": [{"op": "rang", "stop": 5}]})",
                  "spec.json: stages[0].op: expected a source operation (range, from_tensors, "
                  "from_tensor_slices, from_vector, generator, artificial, list_files, tfrecord, "
                  "fixed_length_records, indexed_binary, zip, multiprocess, shared_store, npy, npz, "
                  "hdf5, jpeg, png, csv), got \"rang\""},
        ErrorCase{"unknown_transformation",
                  R"({"stages": [{"op": "range", "stop": 5}, {"op": "mapp"}]})",
                  "spec.json: stages[1].op: expected a transformation (map, interleave, prefetch, "
                  "batch, map_and_batch, cache, shuffle, repeat, take, skip, filter, shard), got "
                  "\"mapp\""},
        ErrorCase{"source_in_the_middle",
                  R"({"stages": [{"op": "range", "stop": 5}, {"op": "range", "stop": 5}]})",
                  "spec.json: stages[1].op: expected a transformation (map, interleave, prefetch, "
                  "batch, map_and_batch, cache, shuffle, repeat, take, skip, filter, shard), got "
                  "\"range\""},
        ErrorCase{
            "unknown_key",
            R"({"stages": [{"op": "range", "stop": 5},
                     {"op": "map", "fn": "identity", "paralelism": 2}]})",
            "spec.json: stages[1]: unknown key \"paralelism\" (expected one of: op, fn, args, "
            "parallelism, deterministic, name)"},
        ErrorCase{
            "unknown_top_level_key", R"({"stages": [{"op": "range", "stop": 5}], "nme": "x"})",
            "spec.json: (top level): unknown key \"nme\" (expected one of: name, description, "
            "stages, experiment)"},
        ErrorCase{"unknown_function",
                  R"({"stages": [{"op": "range", "stop": 5}, {"op": "map", "fn": "sleepy"}]})",
                  "spec.json: stages[1]: unknown function \"sleepy\" (known: busy_ms, chain, "
                  "decode_jpeg, fill_random, flip, identity, increment, nbytes, normalize, "
                  "parse_example, random_crop, resize, sleep_ms, sleep_time)"},
        ErrorCase{"unknown_argument",
                  R"({"stages": [{"op": "range", "stop": 5},
                     {"op": "map", "fn": "sleep_ms", "args": {"msec": 1}}]})",
                  "spec.json: stages[1].args: unknown key \"msec\" (expected one of: ms)"},
        ErrorCase{"argument_to_a_function_without_arguments",
                  R"({"stages": [{"op": "range", "stop": 5},
                     {"op": "map", "fn": "identity", "args": {"x": 1}}]})",
                  "spec.json: stages[1].args: unknown key \"x\" (this takes no arguments)"},
        ErrorCase{"bad_argument",
                  R"({"stages": [{"op": "range", "stop": 5},
                     {"op": "map", "fn": "sleep_ms", "args": {"ms": -1}}]})",
                  "spec.json: stages[1].args.ms: expected a non-negative number, got -1.0"},
        ErrorCase{"missing_required_field", R"({"stages": [{"op": "range"}]})",
                  "spec.json: stages[0].stop: expected an integer, got nothing"},
        ErrorCase{"missing_function", R"({"stages": [{"op": "range", "stop": 5}, {"op": "map"}]})",
                  "spec.json: stages[1].fn: expected a string, got nothing"},
        ErrorCase{"empty_stages", R"({"stages": []})",
                  "spec.json: (top level).stages: expected a non-empty list of stages, got []"},
        ErrorCase{"stage_not_an_object", R"({"stages": [{"op": "range", "stop": 5}, 3]})",
                  "spec.json: stages[1]: expected an object, got 3"},
        ErrorCase{"op_not_a_string", R"({"stages": [{"op": 15, "num_samples": 3}]})",
                  "spec.json: stages[0].op: expected a string, got 15"},
        ErrorCase{"document_not_an_object", R"([1, 2])",
                  "spec.json: (top level): expected an object, got [1,2]"},
        ErrorCase{"wrong_type",
                  R"({"stages": [{"op": "range", "stop": 5},
                     {"op": "map", "fn": "identity", "deterministic": "yes"}]})",
                  "spec.json: stages[1].deterministic: expected true or false, got \"yes\""},
        ErrorCase{"element_outside_interleave",
                  R"({"stages": [{"op": "range", "stop": "$element"}]})",
                  "spec.json: stages[0].stop: \"$element\" is only available inside an "
                  "interleave's pipeline"},
        ErrorCase{"element_value_outside_interleave",
                  R"({"stages": [{"op": "from_tensors", "value": "$element"}]})",
                  "spec.json: stages[0].value: \"$element\" is only available inside an "
                  "interleave's pipeline"},
        ErrorCase{"nested_pipeline_path",
                  R"({"stages": [{"op": "range", "stop": 3}, {"op": "interleave", "pipeline":
                     {"stages": [{"op": "range", "stop": "$element", "step": "x"}]}}]})",
                  "spec.json: stages[1].pipeline.stages[0].step: expected an integer, got \"x\""},
        ErrorCase{"nested_pipeline_unknown_key",
                  R"({"stages": [{"op": "range", "stop": 3}, {"op": "interleave", "pipeline":
                     {"stages": [{"op": "range", "stop": 1}], "extra": 1}}]})",
                  "spec.json: stages[1].pipeline: unknown key \"extra\" (expected one of: stages)"},
        ErrorCase{"zip_input_path",
                  R"({"stages": [{"op": "zip", "inputs": [{"stages": [{"op": "range", "stop": 1}]},
                     {"stages": [{"op": "range", "stop": -1.5}]}]}]})",
                  "spec.json: stages[0].inputs[1].stages[0].stop: expected an integer, got -1.5"},
        ErrorCase{"zero_cycle_length",
                  R"({"stages": [{"op": "range", "stop": 3}, {"op": "interleave",
                     "cycle_length": 0, "pipeline": {"stages": [{"op": "range", "stop": 1}]}}]})",
                  "spec.json: stages[1].cycle_length: expected a positive integer or \"autotune\", "
                  "got 0"},
        ErrorCase{"bad_shape",
                  R"({"stages": [{"op": "range", "stop": 5},
                     {"op": "map", "fn": "fill_random", "args": {"shape": [2, -1]}}]})",
                  "spec.json: stages[1].args.shape: expected a shape (a list of non-negative "
                  "integers), got [2,-1]"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

// Sizes from input that the machine cannot hold are spec errors naming the stage, the size asked
// and the limit (the limit differs between machines: the message is checked in parts).
TEST(Spec, SizesBeyondMemoryAreSpecErrors) {
  const std::string limit = format_bytes(static_cast<double>(memory_limit().bytes));
  struct Case {
    const char* json;
    const char* starts;
    const char* asked;
  };
  const Case cases[] = {
      {R"({"stages": [{"op": "range", "stop": 5},
          {"op": "map", "fn": "fill_random", "args": {"shape": [1000000, 1000000]}}]})",
       "spec.json: stages[1].args.shape: a float32 tensor of shape [1000000,1000000] needs ",
       "3.6 TiB"},
      {R"({"stages": [{"op": "generator", "fn": "random_tensors",
          "args": {"count": 2, "shapes": [[3], [4000000000, 4000000000]]}}]})",
       "spec.json: stages[0].args.shapes[1]: a float32 tensor of shape [4000000000,4000000000] "
       "needs ",
       "EiB"},
      {R"({"stages": [{"op": "range", "stop": 5}, {"op": "batch", "batch_size": 1000000000000000}]})",
       "spec.json: stages[1].batch_size: batch_size = 1000000000000000 (at least 64 B each) needs ",
       "56.8 PiB"},
      {R"({"stages": [{"op": "shared_store", "store_mb": 1048576,
          "pipeline": {"stages": [{"op": "range", "stop": 1}]}}]})",
       "spec.json: stages[0].store_mb: store_mb = 1048576 (at least 1.0 MiB each) needs ",
       "1.0 TiB"},
  };
  for (const Case& c : cases) {
    const std::string message = error_of(c.json);
    EXPECT_EQ(message.rfind(c.starts, 0), 0U) << message;
    EXPECT_NE(message.find(c.asked), std::string::npos) << message;
    EXPECT_NE(message.find(", more than this machine can hold (" + limit + ", "), std::string::npos)
        << message;
  }
  // Sizes that fit are accepted.
  EXPECT_EQ(error_of(R"({"stages": [{"op": "range", "stop": 5},
      {"op": "map", "fn": "fill_random", "args": {"shape": [64, 64]}},
      {"op": "batch", "batch_size": 1000}]})"),
            "");
}

TEST(Spec, SourceDefaultsToTheCallersLabel) {
  try {
    parse_spec(nlohmann::json::parse(R"({"stages": [{"op": "range"}]})"));
    FAIL() << "expected a SpecError";
  } catch (const SpecError& e) {
    EXPECT_STREQ(e.what(), "<spec>: stages[0].stop: expected an integer, got nothing");
  }
}

TEST(Spec, NameDescriptionAndTheWholeDocument) {
  const auto doc = nlohmann::json::parse(R"({"name": "map_parallel", "description": "a map",
    "experiment": {"epochs": 2, "anything": "goes"},
    "stages": [{"op": "range", "stop": 2}, {"op": "map", "fn": "identity"}]})");
  const Spec spec = parse_spec(doc, "x.json");
  EXPECT_EQ(spec.name, "map_parallel");
  EXPECT_EQ(spec.description, "a map");
  EXPECT_EQ(spec.document, doc);
  EXPECT_EQ(spec.document.at("experiment").at("epochs"), 2);
  EXPECT_EQ(testing::collect_ints(spec.dataset), (std::vector<int64_t>{0, 1}));
}

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("pipeprof_spec_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path write(const std::string& name, const std::string& text) {
    const auto path = dir_ / name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::filesystem::path dir_;
};

using LoadSpec = TempDir;

TEST_F(LoadSpec, MissingFile) {
  const auto path = dir_ / "missing.json";
  try {
    load_spec(path);
    FAIL() << "expected a SpecError";
  } catch (const SpecError& e) {
    EXPECT_EQ(std::string(e.what()), path.string() + ": no such file");
  }
}

TEST_F(LoadSpec, InvalidJsonNamesTheFileAndTheByteOffset) {
  const auto path = write("bad.json", "{\"stages\": [\n  {\"op\": \"range\", \"stop\": 5},\n]}");
  try {
    load_spec(path);
    FAIL() << "expected a SpecError";
  } catch (const SpecError& e) {
    // The stray ']' is the 44th byte (line 3, column 1).
    EXPECT_THAT(e.what(), StartsWith(path.string() + ": invalid JSON at byte 44: "));
    EXPECT_THAT(e.what(), HasSubstr("line 3, column 1"));
  }
}

// A document nested far deeper than any spec (200 000 arrays under a function's args, 850 KB of
// interleaves within interleaves) is refused before anything recursive sees it.
TEST_F(LoadSpec, NestingDeeperThanTheLimitIsRefusedNamingTheByte) {
  const std::string prefix = R"({"stages": [{"op": "range", "stop": 3}, {"op": "map", "fn": )"
                             R"({"name": "add", "args": [)";
  const int levels = 200000;
  const auto deep = write("deep.json", prefix + std::string(levels, '[') + std::string(levels, ']') + "]}}]}");
  EXPECT_THAT(error_message([&] { load_spec(deep); }),
              AllOf(StartsWith(deep.string() + ": invalid JSON at byte "),
                    HasSubstr("nested deeper than 256 levels")));
  // The byte named is the bracket that opens level 257: the prefix holds 5 levels.
  EXPECT_THAT(error_message([&] { load_spec(deep); }),
              StartsWith(fmt::format("{}: invalid JSON at byte {}:", deep.string(),
                                     prefix.size() + (257 - 5))));
  // Brackets inside strings do not count; a spec within the limit still loads.
  const auto fine = write("fine.json", R"({"name": ")" + std::string(1000, '[') +
                                           R"(", "stages": [{"op": "range", "stop": 3}]})");
  EXPECT_EQ(load_spec(fine).dataset.collect().size(), 3U);
}

// A number beyond a double's range was the JSON library's out_of_range, naming neither the file
// nor the place.
TEST_F(LoadSpec, ANumberOutOfRangeIsNamedWithItsByte) {
  const auto huge = write("huge.json", R"({"stages": [{"op": "range", "stop": 1e999}]})");
  EXPECT_EQ(error_message([&] { load_spec(huge); }),
            huge.string() + ": invalid JSON at byte 37: [json.exception.parse_error.101] parse "
                            "error at byte 37: the number 1e999 is out of range");
}

TEST_F(LoadSpec, EmptyFileAndDirectory) {
  const auto empty = write("empty.json", "");
  EXPECT_THAT(error_message([&] { load_spec(empty); }),
              StartsWith(empty.string() + ": invalid JSON at byte 1: "));
  EXPECT_EQ(error_message([&] { load_spec(dir_); }),
            dir_.string() + ": is a directory, not a spec file");
}

TEST_F(LoadSpec, ValidationErrorsNameTheFile) {
  const auto path = write("p.json", R"({"stages": [{"op": "range", "stop": 5},
    {"op": "map", "fn": "identity", "parallelism": -3}]})");
  EXPECT_EQ(error_message([&] { load_spec(path); }),
            path.string() +
                ": stages[1].parallelism: expected a positive integer or \"autotune\", got -3");
}

TEST_F(LoadSpec, SaveThenLoad) {
  const Dataset ds = range(6).map(make_function("increment"), {.parallelism = 2}).batch(4);
  const auto path = dir_ / "saved.json";
  save_spec(path, ds, "saved", "two batches");
  const Spec spec = load_spec(path);
  EXPECT_EQ(spec.name, "saved");
  EXPECT_EQ(spec.description, "two batches");
  EXPECT_EQ(to_spec(spec.dataset, "saved", "two batches"), to_spec(ds, "saved", "two batches"));
  const auto batches = spec.dataset.collect();
  ASSERT_EQ(batches.size(), 2U);
  EXPECT_EQ(element_to_json(batches[1]), nlohmann::json::parse("[5, 6]"));
  EXPECT_THROW(save_spec(dir_ / "no_such_dir" / "x.json", ds), SpecError);
}

// --- Round trip ----------------------------------------------------------------------------------

struct RoundTripCase {
  const char* name;
  const char* json;
};

std::ostream& operator<<(std::ostream& os, const RoundTripCase& c) {
  return os << c.name;
}

class RoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

nlohmann::json all_elements(const Dataset& ds) {
  nlohmann::json out = nlohmann::json::array();
  for (const Element& e : ds.collect()) {
    out.push_back(element_to_json_full(e));
  }
  return out;
}

TEST_P(RoundTrip, ParseWriteParseGivesTheSameElementsAndJson) {
  const Dataset first = testing::spec_dataset(GetParam().json);
  const nlohmann::json written = to_spec(first, "rt", "round trip");
  const Spec second = parse_spec(written, "written.json");
  EXPECT_EQ(second.name, "rt");
  EXPECT_EQ(to_spec(second.dataset, "rt", "round trip"), written);
  EXPECT_EQ(all_elements(second.dataset), all_elements(first)) << written.dump(2);
}

INSTANTIATE_TEST_SUITE_P(
    Specs, RoundTrip,
    ::testing::Values(
        RoundTripCase{"interleave_case1", R"({"stages": [{"op": "range", "start": 1, "stop": 6},
           {"op": "interleave", "cycle_length": 2, "block_length": 4,
            "pipeline": {"stages": [{"op": "from_tensors", "value": "$element"},
                                    {"op": "repeat", "count": 6}]}}]})"},
        RoundTripCase{"guide_pipeline", R"({"stages": [{"op": "range", "stop": 7},
           {"op": "interleave", "cycle_length": "autotune", "parallelism": "autotune",
            "name": "reader", "pipeline": {"stages": [{"op": "range", "stop": "$element"}]}},
           {"op": "map", "fn": "sleep_ms", "args": {"ms": 0.1}, "parallelism": 3,
            "name": "mapped_function"},
           {"op": "map", "fn": "increment", "parallelism": "autotune"},
           {"op": "prefetch", "buffer_size": "autotune"}, {"op": "shuffle", "buffer_size": 1000,
            "seed": 3}]})"},
        RoundTripCase{"zip_batch_cache", R"({"stages": [{"op": "zip", "inputs": [
              {"stages": [{"op": "range", "stop": 9}, {"op": "shard", "num_shards": 2, "index": 1}]},
              {"stages": [{"op": "from_vector", "values": [5, 6, 7]}, {"op": "repeat"}]}]},
           {"op": "batch", "batch_size": 2, "drop_remainder": true}, {"op": "cache"}]})"},
        RoundTripCase{"slices_with_dtypes",
                      R"({"stages": [{"op": "from_tensor_slices", "components": [
              {"value": [[1, 2], [3, 4], [5, 6]], "dtype": "uint8"},
              {"value": [0.5, 1.5, 2.5], "dtype": "float32"}]},
           {"op": "skip", "count": 1}, {"op": "take", "count": -1}]})"},
        RoundTripCase{
            "bool_tensor",
            R"({"stages": [{"op": "from_tensors", "value": [true, false]}, {"op": "repeat", "count": 2}]})"},
        RoundTripCase{"random_tensors", R"({"stages": [{"op": "generator", "fn": "random_tensors",
            "args": {"count": 2, "shape": [2, 2], "seed": 4}},
           {"op": "map", "fn": "fill_random", "args": {"shapes": [[3], [1, 2]], "seed": 8}}]})"},
        RoundTripCase{"filters",
                      R"({"stages": [{"op": "generator", "fn": "counter", "args": {"count": 12}},
           {"op": "filter", "predicate": "modulo_equals", "args": {"modulus": 3, "remainder": 2}},
           {"op": "filter", "predicate": "less_than", "args": {"value": 10}}]})"},
        RoundTripCase{
            "artificial_busy_prefetch",
            R"({"stages": [{"op": "artificial", "open_ms": 0, "read_ms": 0.2, "num_samples": 3},
           {"op": "map", "fn": "busy_ms", "args": {"ms": 0.1}}, {"op": "prefetch", "buffer_size": 2}]})"},
        RoundTripCase{"shuffle_fixed", R"({"stages": [{"op": "range", "stop": 20},
           {"op": "shuffle", "buffer_size": 5, "seed": 11, "reshuffle_each_iteration": false}]})"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(Spec, NonDeterministicStagesRoundTrip) {
  const char* json = R"({"stages": [{"op": "range", "stop": 6},
    {"op": "interleave", "cycle_length": 2, "block_length": 1, "parallelism": 2,
     "deterministic": false, "pipeline": {"stages": [{"op": "range", "stop": "$element"}]}},
    {"op": "map", "fn": "increment", "parallelism": "autotune", "deterministic": false}]})";
  const Dataset first = testing::spec_dataset(json);
  const nlohmann::json written = to_spec(first);
  EXPECT_EQ(to_spec(parse_spec(written).dataset), written);
  EXPECT_EQ(written.at("stages")[1].at("deterministic"), false);
  EXPECT_EQ(written.at("stages")[2].at("deterministic"), false);
  auto a = testing::collect_ints(first);
  auto b = testing::collect_ints(parse_spec(written).dataset);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.size(), 15U);
}

TEST(Spec, WrittenSpecsSpellOutDefaults) {
  const Dataset ds = testing::spec_dataset(R"({"stages": [{"op": "range", "stop": 3},
    {"op": "interleave", "pipeline": {"stages": [{"op": "range", "stop": 1}]}}]})");
  EXPECT_EQ(to_spec(ds), nlohmann::json::parse(R"({"stages": [
    {"op": "range", "start": 0, "stop": 3, "step": 1},
    {"op": "interleave", "cycle_length": "autotune", "block_length": 1,
     "pipeline": {"stages": [{"op": "range", "stop": 1}]}}]})"));
}

TEST(Spec, ParsePipelineAlone) {
  const Dataset ds =
      parse_pipeline(nlohmann::json::parse(R"({"stages": [{"op": "range", "stop": 2}]})"));
  EXPECT_EQ(testing::collect_ints(ds), (std::vector<int64_t>{0, 1}));
  EXPECT_THROW(parse_pipeline(nlohmann::json::parse(R"({"stages": [{"op": "nope"}]})")), SpecError);
}

// Rank tokens: shard's "ranks" / "rank" and list_files' "shard": "rank" become the rank the spec is
// read for (a parse option, not a process-wide setting).
TEST(Spec, RankTokensResolveToTheRankOfTheParseOptions) {
  const ParseOptions rank1{.rank = 1, .ranks = 3};
  const nlohmann::json doc = nlohmann::json::parse(R"({"stages": [
      {"op": "list_files", "files": ["a", "b", "c", "d", "e"], "shuffle": false, "shard": "rank"},
      {"op": "interleave", "cycle_length": 1, "pipeline": {"stages": [
        {"op": "range", "stop": 6}, {"op": "shard", "num_shards": "ranks", "index": "rank"}]}}]})");
  const nlohmann::json r = resolve_ranks(doc, rank1);
  ASSERT_EQ(r["stages"].size(), 3U);
  EXPECT_FALSE(r["stages"][0].contains("shard"));
  EXPECT_EQ(r["stages"][1], nlohmann::json({{"op", "shard"}, {"num_shards", 3}, {"index", 1}}));
  const nlohmann::json& inner = r["stages"][2]["pipeline"]["stages"][1];
  EXPECT_EQ(inner["num_shards"], 3);
  EXPECT_EQ(inner["index"], 1);
  // Without options: rank 0 of 1, every file.
  EXPECT_EQ(resolve_ranks(doc)["stages"][1]["num_shards"], 1);
  // Parsed, rank 1 of 3 keeps the files b and e.
  const Spec spec = parse_spec(
      nlohmann::json::parse(
          R"({"stages": [{"op": "list_files", "files": ["a", "b", "c", "d", "e"], "shuffle": false, "shard": "rank"}]})"),
      "<spec>", rank1);
  std::vector<std::string> files;
  auto it = spec.dataset.iterate();
  while (auto e = it->next())
    files.push_back(file_name(*e));
  EXPECT_EQ(files, (std::vector<std::string>{"b", "e"}));
  EXPECT_THROW(resolve_ranks(doc, {.rank = 3, .ranks = 3}), std::invalid_argument);
  // Shuffled without a seed, the ranks' orders (and so their shares) would differ.
  EXPECT_THROW(resolve_ranks(nlohmann::json::parse(
                   R"({"stages": [{"op": "list_files", "pattern": "*.x", "shard": "rank"}]})")),
               SpecError);
  EXPECT_NO_THROW(resolve_ranks(nlohmann::json::parse(
      R"({"stages": [{"op": "list_files", "pattern": "*.x", "seed": 3, "shard": "rank"}]})")));
}

}  // namespace
}  // namespace pipeprof::pipelines
