// cache(filename): written during the first complete pass and read afterwards; a pass that stops
// early leaves nothing behind; a second writer fails with a clear error; a damaged file is found.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>

#include "pipeprof/pipelines/functions.h"
#include "pipeprof_testing/temp_dir.h"
#include "test_util.h"

namespace pipeprof::pipelines {
namespace {

using pipeprof::testing_support::TempDir;
using testing::collect_ints;

// range(n) mapped through a counter of calls, as [value, value * 10] float64 pairs plus the value.
Dataset counted(int64_t n, std::atomic<int>& calls) {
  return range(n).map(Function(
      [&calls](Element e) {
        ++calls;
        const int64_t x = e[0].as_int64();
        return Element{Tensor::scalar<int64_t>(x),
                       Tensor::from_vector<double>({static_cast<double>(x), x * 10.0})};
      },
      "counted"));
}

std::vector<std::string> leftovers(const TempDir& tmp) {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(tmp.path()))
    out.push_back(entry.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(DiskCache, FirstCompletePassWritesLaterPassesRead) {
  const TempDir tmp;
  const std::string file = (tmp / "c.cache").string();
  std::atomic<int> calls{0};
  const Dataset d = counted(20, calls).cache(file);
  const auto first = d.collect();
  EXPECT_EQ(calls.load(), 20);
  EXPECT_EQ(leftovers(tmp), std::vector<std::string>{"c.cache"}) << "no partial file or lock left";
  const auto second = d.collect();
  EXPECT_EQ(calls.load(), 20) << "the second pass reads the file, not the input";
  ASSERT_EQ(second.size(), 20U);
  for (size_t i = 0; i < first.size(); ++i)
    EXPECT_EQ(second[i], first[i]);
  // Another pipeline (another run) with the same file reads it too.
  std::atomic<int> other_calls{0};
  EXPECT_EQ(collect_ints(counted(20, other_calls).cache(file)).size(), 20U);
  EXPECT_EQ(other_calls.load(), 0);
}

TEST(DiskCache, APassThatStopsEarlyLeavesNothingBehind) {
  const TempDir tmp;
  const std::string file = (tmp / "c.cache").string();
  std::atomic<int> calls{0};
  const Dataset d = counted(10, calls).cache(file);
  {
    auto it = d.iterate();
    ASSERT_TRUE(it->next().has_value());
    ASSERT_TRUE(it->next().has_value());
    EXPECT_TRUE(std::filesystem::exists(file + ".partial"));
    EXPECT_TRUE(std::filesystem::exists(file + ".lock"));
  }
  EXPECT_TRUE(leftovers(tmp).empty());
  // take() stops the pass before the end too.
  EXPECT_EQ(d.take(5).collect().size(), 5U);
  EXPECT_TRUE(leftovers(tmp).empty());
  // An input error fails the pass: no file.
  const Dataset failing = range(10)
                              .map(Function([](Element e) {
                                if (e[0].as_int64() == 6) throw std::runtime_error("boom");
                                return e;
                              }, "fails_at_6"))
                              .cache(file);
  auto it = failing.iterate();
  for (int i = 0; i < 6; ++i)
    ASSERT_TRUE(it->next().has_value());
  EXPECT_THROW(it->next(), PipelineError);
  while (it->next()) {
  }
  it.reset();
  EXPECT_TRUE(leftovers(tmp).empty());
  // A complete pass then writes it.
  calls = 0;
  EXPECT_EQ(d.collect().size(), 10U);
  EXPECT_EQ(calls.load(), 10);
  EXPECT_EQ(leftovers(tmp), std::vector<std::string>{"c.cache"});
}

TEST(DiskCache, ASecondWriterGetsAClearError) {
  const TempDir tmp;
  const std::string file = (tmp / "c.cache").string();
  std::atomic<int> calls{0};
  const Dataset d = counted(6, calls).cache(file);
  auto first = d.iterate();
  ASSERT_TRUE(first->next().has_value());
  auto second = d.iterate();
  try {
    second->next();
    FAIL() << "no error";
  } catch (const PipelineError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("another pass is writing this cache"), std::string::npos) << msg;
    EXPECT_NE(msg.find("c.cache.lock"), std::string::npos) << msg;
  }
  EXPECT_FALSE(second->next().has_value());
  second.reset();
  EXPECT_TRUE(std::filesystem::exists(file + ".partial")) << "the failed writer left the first alone";
  while (first->next()) {
  }
  first.reset();
  EXPECT_EQ(leftovers(tmp), std::vector<std::string>{"c.cache"});
}

TEST(DiskCache, DamagedFilesAreDataErrorsNamingTheOffset) {
  const TempDir tmp;
  const std::string file = (tmp / "c.cache").string();
  std::atomic<int> calls{0};
  const Dataset d = counted(8, calls).cache(file);
  d.collect();
  std::string good;
  {
    std::ifstream in(file, std::ios::binary);
    good.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto write = [&](const std::string& bytes) { std::ofstream(file, std::ios::binary) << bytes; };
  auto expect_data_error = [&](const std::string& what, const std::string& part) {
    try {
      d.collect();
      ADD_FAILURE() << what << ": no error";
    } catch (const InputDataError& e) {
      EXPECT_NE(std::string(e.what()).find("c.cache"), std::string::npos) << what << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << what << ": " << e.what();
    }
  };
  for (size_t cut : {size_t{0}, size_t{10}, size_t{30}, good.size() / 2, good.size() - 1}) {
    write(good.substr(0, cut));
    expect_data_error("truncated at " + std::to_string(cut), cut < 40 ? "offset 0" : "offset");
  }
  std::string magic = good;
  magic[0] = 'X';
  write(magic);
  expect_data_error("magic", "not a pipeprof cache file");
  // Every byte flipped in turn, past the header: a CRC, length or footer error.
  for (size_t i = 16; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x5A);
    write(bad);
    expect_data_error("byte " + std::to_string(i), "offset");
  }
  // A huge record length is refused before anything is allocated.
  std::string huge = good;
  for (int k = 0; k < 7; ++k)
    huge[16 + static_cast<size_t>(k)] = '\x7f';
  write(huge);
  expect_data_error("huge length", "exceeds the file");
  EXPECT_EQ(calls.load(), 8) << "a damaged cache is reported, not silently recomputed";
}

TEST(DiskCache, SpecFieldRoundTrips) {
  const TempDir tmp;
  const std::string file = (tmp / "s.cache").string();
  const nlohmann::json spec = {
      {"stages", {{{"op", "range"}, {"start", 0}, {"stop", 5}, {"step", 1}}, {{"op", "cache"}, {"filename", file}}}}};
  const Dataset d = parse_pipeline(spec, "test.json");
  EXPECT_EQ(d.to_json(), spec);
  EXPECT_EQ(collect_ints(d), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(collect_ints(d), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(std::filesystem::exists(file));
  const nlohmann::json memory = {{"stages", {{{"op", "range"}, {"start", 0}, {"stop", 5}, {"step", 1}}, {{"op", "cache"}}}}};
  EXPECT_EQ(parse_pipeline(memory, "test.json").to_json(), memory);
}

}  // namespace
}  // namespace pipeprof::pipelines
