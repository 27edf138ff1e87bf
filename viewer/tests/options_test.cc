#include "pipeprof/viewer/options.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace pipeprof::viewer {
namespace {

ParsedOptions parse(std::vector<const char*> args) {
  args.insert(args.begin(), "pipeprof-viewer");
  return parse_options(static_cast<int>(args.size()), args.data());
}

TEST(Options, FilesAndScreenshot) {
  const auto p = parse(
      {"a.json", "b.json", "--screenshot", "out.png", "--size", "800x600", "--range", "1.5:20"});
  ASSERT_FALSE(p.exit_code) << p.message;
  EXPECT_EQ(p.options.files, (std::vector<std::string>{"a.json", "b.json"}));
  EXPECT_FALSE(p.options.compare);
  EXPECT_EQ(p.options.screenshot, "out.png");
  EXPECT_EQ(p.options.width, 800);
  EXPECT_EQ(p.options.height, 600);
  ASSERT_TRUE(p.options.range_ms);
  EXPECT_EQ(p.options.range_ms->first, 1.5);
  EXPECT_EQ(p.options.range_ms->second, 20.0);
}

TEST(Options, CompareTakesExactlyTwo) {
  auto p = parse({"--compare", "a.json", "b.json"});
  ASSERT_FALSE(p.exit_code) << p.message;
  EXPECT_TRUE(p.options.compare);
  EXPECT_EQ(p.options.files.size(), 2u);
  p = parse({"--compare", "a.json"});
  EXPECT_EQ(p.exit_code, 2);
  p = parse({"x.json", "--compare", "a.json", "b.json"});
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.message.find("--compare"), std::string::npos);
}

TEST(Options, BadValuesAreUsageErrors) {
  for (const auto& args :
       std::vector<std::vector<const char*>>{{"--size", "800"},
                                             {"--size", "0x600"},
                                             {"--size", "80.5x600"},
                                             {"--range", "5:1"},
                                             {"--range", "abc:1"},
                                             {"--range", "1"},
                                             {"--bench-frames", "0"},
                                             {"--bench-frames", "10", "--screenshot", "x.png"},
                                             {"--no-such-option"}}) {
    const auto p = parse(args);
    EXPECT_EQ(p.exit_code, 2) << args[0];
    EXPECT_FALSE(p.message.empty());
  }
  EXPECT_EQ(parse({"--help"}).exit_code, 0);
  EXPECT_NE(parse({"--help"}).message.find("--screenshot"), std::string::npos);
}

TEST(Options, SizeAndRangeParsers) {
  EXPECT_EQ(parse_size("1280x720"), std::make_pair(1280, 720));
  EXPECT_EQ(parse_size("64X64"), std::make_pair(64, 64));
  EXPECT_THROW(parse_size("1280x"), std::invalid_argument);
  EXPECT_THROW(parse_size("99999x10"), std::invalid_argument);
  EXPECT_EQ(parse_range("0:2.5"), std::make_pair(0.0, 2.5));
  EXPECT_EQ(parse_range("-1:1"), std::make_pair(-1.0, 1.0));
  EXPECT_THROW(parse_range("1:1"), std::invalid_argument);
  EXPECT_THROW(parse_range("1:2x"), std::invalid_argument);
}

TEST(Options, BenchAndSynthetic) {
  const auto p = parse({"--bench-frames", "100", "--synthetic", "1000000", "--flows"});
  ASSERT_FALSE(p.exit_code) << p.message;
  EXPECT_EQ(p.options.bench_frames, 100);
  EXPECT_EQ(p.options.synthetic_spans, 1000000u);
  EXPECT_TRUE(p.options.flows);
}

}  // namespace
}  // namespace pipeprof::viewer
