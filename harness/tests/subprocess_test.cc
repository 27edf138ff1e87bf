// Programs run from an argument vector (subprocess.h): no shell, so arguments reach the program as
// they are.
#include "pipeprof/harness/subprocess.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "pipeprof_testing/temp_dir.h"

namespace pipeprof::harness {
namespace {

TEST(Subprocess, ArgumentsNeedNoQuotingAndOutputIsCaptured) {
  const ProcessResult r = run_process({"/bin/sh", "-c", "printf '%s|' \"$@\"; echo err >&2", "sh",
                                       "it's", "a b", "$HOME", "; rm -rf /"});
  ASSERT_TRUE(r.started) << r.output;
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.output, "it's|a b|$HOME|; rm -rf /|err\n");
}

TEST(Subprocess, ExitCodesAndSignalsAreReported) {
  EXPECT_EQ(run_process({"/bin/sh", "-c", "exit 3"}).exit_code, 3);
  const ProcessResult killed = run_process({"/bin/sh", "-c", "kill -9 $$"});
  EXPECT_EQ(killed.exit_code, 128 + 9);
  EXPECT_FALSE(killed.ok());
}

TEST(Subprocess, AProgramThatCannotStartIsSaid) {
  const ProcessResult r = run_process({"/nonexistent/program", "x"});
  EXPECT_FALSE(r.started);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.output.find("/nonexistent/program: cannot start"), std::string::npos) << r.output;
  EXPECT_THROW(run_process({}), std::invalid_argument);
}

TEST(Subprocess, OutputGoesToAFileWhenAsked) {
  const testing_support::TempDir tmp;
  const auto log = tmp.path() / "out.log";
  const ProcessResult r = run_process({"sh", "-c", "echo out; echo err >&2"}, log);  // PATH lookup
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.output.empty());
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "out\nerr\n");
}

}  // namespace
}  // namespace pipeprof::harness
