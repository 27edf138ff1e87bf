// The reader on broken input: every failure is a TraceFormatError with an offset inside the input,
// never a crash, a hang or another exception.
#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <string>

#include "pipeprof/trace/chrome_json.h"

namespace pipeprof::trace {
namespace {

// Parses; returns "" on success or the error message. Fails the test on any other exception or an
// offset past the end.
std::string outcome(std::string_view text) {
  try {
    parse_chrome_json(text, "t.json");
    return "";
  } catch (const TraceFormatError& e) {
    EXPECT_LE(e.offset(), text.size()) << e.what();
    EXPECT_EQ(e.source(), "t.json");
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("t.json: byte ", 0), 0u) << what;
    return what.empty() ? "?" : what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected exception for input " << text.substr(0, 80) << ": " << e.what();
    return "unexpected";
  }
}

uint64_t error_offset(std::string_view text) {
  try {
    parse_chrome_json(text, "t.json");
  } catch (const TraceFormatError& e) {
    return e.offset();
  }
  ADD_FAILURE() << "parsed: " << text;
  return ~uint64_t{0};
}

const std::string kValid = R"js({"otherData": {"format": "pipeprof", "n": 3},
 "traceEvents": [
  {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "pipeprof \"ü\""}},
  {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "train loop"}},
  {"ph": "X", "name": "step", "cat": "step", "pid": 1, "tid": 2, "ts": 10.5, "dur": 2, "args": {"a": [1, {"b": null}], "c": true}},
  {"ph": "B", "name": "outer", "pid": 1, "tid": 2, "ts": 11},
  {"ph": "E", "pid": 1, "tid": 2, "ts": 12},
  {"ph": "i", "name": "mark", "pid": 1, "tid": 2, "ts": 13, "s": "t"},
  {"ph": "C", "name": "buffered", "pid": 1, "ts": 14, "args": {"value": 2.5}},
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 15, "dur": 1, "args": {"device": 0, "stream": 7}},
  {"ph": "s", "id": 1, "cat": "ac2g", "name": "ac2g", "pid": 1, "tid": 2, "ts": 14},
  {"ph": "f", "id": 1, "cat": "ac2g", "name": "ac2g", "pid": 0, "tid": 7, "ts": 15, "bp": "e"}
 ]})js";

TEST(ChromeJsonMalformed, TheValidDocumentParses) {
  EXPECT_EQ(outcome(kValid), "");
  const Trace t = parse_chrome_json(kValid);
  EXPECT_EQ(t.span_count(), 3u);
  EXPECT_EQ(t.flows.size(), 1u);
}

TEST(ChromeJsonMalformed, EveryPrefixErrorsCleanlyOrParses) {
  size_t parsed = 0;
  for (size_t n = 0; n < kValid.size(); ++n) {
    const std::string prefix = kValid.substr(0, n);
    if (outcome(prefix).empty()) ++parsed;
  }
  EXPECT_EQ(parsed, 0u) << "a strict prefix of an object never is a whole document";
  // A written trace, truncated everywhere.
  Trace t = parse_chrome_json(kValid);
  std::ostringstream out;
  write_chrome_json(t, out);
  const std::string written = out.str();
  for (size_t n = 0; n + 2 < written.size(); ++n)  // the last bytes are "}\n"
    EXPECT_NE(outcome(written.substr(0, n)), "") << n;
  EXPECT_EQ(outcome(written), "");
}

TEST(ChromeJsonMalformed, RandomByteDamageNeverCrashes) {
  std::mt19937 rng(12345);
  const std::string alphabet = "{}[]\":,\\ 0-9.eEtfnu\xff\xc3\x80x";
  for (int round = 0; round < 3000; ++round) {
    std::string s = kValid;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < edits; ++k) {
      const size_t at = rng() % s.size();
      switch (rng() % 3) {
        case 0:
          s[at] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          s.erase(at, 1 + rng() % 4);
          break;
        default:
          s.insert(at, 1, alphabet[rng() % alphabet.size()]);
      }
    }
    (void)outcome(s);
  }
}

TEST(ChromeJsonMalformed, ShapesThatAreNotTraces) {
  for (const char* text : {"",
                           "   \n",
                           "null",
                           "42",
                           "\"trace\"",
                           "true",
                           "{}",
                           R"({"otherData": {}})",
                           R"({"traceEvents": 5})",
                           R"({"traceEvents": {}})",
                           "[1]",
                           R"(["x"])",
                           "[[]]",
                           "[null]",
                           R"({"traceEvents": []} [])",
                           "[] x",
                           "hello",
                           "{'traceEvents': []}",
                           "[,]",
                           R"([{"ph": "X",}])",
                           R"({"traceEvents": [], "otherData": 7})",
                           "[{]",
                           "[}",
                           "\xef\xbb\xbf[]x"})
    EXPECT_NE(outcome(text), "") << text;
  EXPECT_EQ(outcome("[]"), "");
  EXPECT_EQ(outcome(R"({"traceEvents": []})"), "");
  EXPECT_EQ(outcome(" [ ] \n"), "");
}

TEST(ChromeJsonMalformed, EventsWithWrongFields) {
  const char* cases[] = {
      R"([{"name": "no phase", "ts": 1}])",
      R"([{"ph": "X", "dur": 1}])",               // no ts
      R"([{"ph": "X", "ts": 1}])",                // no dur
      R"([{"ph": "X", "ts": 1, "dur": -1}])",     // negative dur
      R"([{"ph": "X", "ts": NaN, "dur": 1}])",    // not JSON
      R"([{"ph": "X", "ts": "NaN", "dur": 1}])",  // not a number
      R"([{"ph": "X", "ts": "12abc", "dur": 1}])",
      R"([{"ph": "X", "ts": 1e400, "dur": 1}])",  // beyond int64 nanoseconds
      R"([{"ph": "X", "ts": 99999999999999999999, "dur": 1}])",
      R"([{"ph": "X", "ts": 1, "dur": 9223372036854775807}])",
      R"([{"ph": "X", "ts": 01, "dur": 1}])",  // leading zero
      R"([{"ph": "X", "ts": 1., "dur": 1}])",
      R"([{"ph": "X", "ts": -, "dur": 1}])",
      R"([{"ph": "X", "ts": [1], "dur": 1}])",
      R"([{"ph": "X", "ts": true, "dur": 1}])",
      R"([{"ph": 7, "ts": 1, "dur": 1}])",
      R"([{"ph": "X", "name": 5, "ts": 1, "dur": 1}])",
      R"([{"ph": "X", "cat": {}, "ts": 1, "dur": 1}])",
      R"([{"ph": "X", "pid": 1.5, "ts": 1, "dur": 1}])",
      R"([{"ph": "X", "tid": null, "ts": 1, "dur": 1}])",
      R"([{"ph": "X", "pid": 1e30, "ts": 1, "dur": 1}])",
      R"([{"ph": "X", "ts": 1, "dur": 1, "args": [1]}])",
      R"([{"ph": "X", "ts": 1, "dur": 1, "args": "x"}])",
      R"([{"ph": "X", "ts": 1, "dur": 1, "args": {"a": tru}}])",
      R"([{"ph": "X", "ts": 1, "dur": 1, "args": {"a": nul}}])",
      R"([{"ph": "X", "ts": 1, "dur": 1, "args": {"a": 1.2.3}}])",
      R"([{"ph": "X", "ts": 1, "dur": 1, "args": {"a": "\q"}}])",
      R"([{"ph": "X", "ts": 1, "dur": 1, "args": {"a": "\ud800"}}])",
      R"([{"ph": "X", "ts": 1, "dur": 1, "args": {"\x": 1}}])",
      R"([{"ph": "X", "ts": 1, "dur": 1, "extra": [1, 2,]}])",
      R"([{"ph": "X", "ts": 1, "dur": 1, "extra": +1}])",
      R"([{"ph": "s", "ts": 1}])",  // flow without id
      R"([{"ph": "s", "ts": 1, "id": 1.5}])",
      R"([{"ph": "s", "ts": 1, "id": []}])",
      R"([{"ph": "C", "name": "c", "ts": 1, "args": {"v": 1e999}}])",
      R"([{"ph": "E", "pid": 1, "tid": 1, "ts": 1}])",  // E without B
      R"([{"ph": "B", "pid": 1, "tid": 1, "ts": 5}, {"ph": "E", "pid": 1, "tid": 1, "ts": 4}])",
      R"([{"ph": "X", "ts": 1, "dur": 1} {"ph": "X", "ts": 1, "dur": 1}])",
      R"([{"ph": "X" "ts": 1, "dur": 1}])",
      R"([{"ph": "X", "ts": 1, "dur": 1, "name": "a
b"}])",  // a raw newline in a string
  };
  for (const char* text : cases)
    EXPECT_NE(outcome(text), "") << text;
}

TEST(ChromeJsonMalformed, OffsetsPointAtTheProblem) {
  const std::string missing_ts = R"([{"ph": "X", "ts": 1, "dur": 1}, {"ph": "X", "dur": 2}])";
  EXPECT_EQ(error_offset(missing_ts), missing_ts.find("{\"ph\": \"X\", \"dur\""));
  const std::string bad_utf8 = "[{\"ph\": \"X\", \"name\": \"ab\xc3\x28\", \"ts\": 1, \"dur\": 1}]";
  EXPECT_EQ(error_offset(bad_utf8), bad_utf8.find('\xc3'));
  const std::string bad_literal = R"([{"ph": "X", "ts": 1, "dur": 1, "args": {"a": tru}}])";
  EXPECT_EQ(error_offset(bad_literal), bad_literal.find("tru"));
  const std::string bad_ts =
      R"([{"ph": "X", "ts": 1, "dur": 1}, {"ph": "X", "ts": "x", "dur": 1}])";
  EXPECT_EQ(error_offset(bad_ts), bad_ts.find("{\"ph\": \"X\", \"ts\": \"x\""));
  try {
    parse_chrome_json(bad_ts, "t.json");
  } catch (const TraceFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("traceEvents[1]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("\"ts\""), std::string::npos) << e.what();
  }
  const std::string truncated = R"([{"ph": "X", "ts": 1, "dur": 1}, {"ph": "X", "ts": 2, "d)";
  EXPECT_GE(error_offset(truncated), truncated.find("{\"ph\": \"X\", \"ts\": 2"));
}

TEST(ChromeJsonMalformed, DeepNestingIsRejectedNotOverflowed) {
  const std::string deep_args = R"([{"ph": "X", "ts": 1, "dur": 1, "args": {"a": )" +
                                std::string(100000, '[') + std::string(100000, ']') + "}}]";
  EXPECT_NE(outcome(deep_args), "");
  EXPECT_NE(outcome(std::string(100000, '[')), "");
  // Moderate nesting inside args is fine and kept verbatim.
  const std::string nested = R"([{"ph": "X", "ts": 1, "dur": 1, "args": {"a": )" +
                             std::string(100, '[') + std::string(100, ']') + "}}]";
  const Trace t = parse_chrome_json(nested);
  ASSERT_EQ(t.span_count(), 1u);
  EXPECT_EQ(t.args.at(0).size(), 7 + 200u);
}

TEST(ChromeJsonMalformed, ValidOdditiesAreAccepted) {
  // Escaped keys, unicode escapes, huge numbers in args, string pids, missing pid/tid.
  const Trace t = parse_chrome_json(
      R"js([{"p\u0068": "X", "ts": "5", "dur": 0, "name": "\u00fc\ud83d\ude00", "pid": "12",
      "args": {"big": 123456789012345678901234567890, "tiny": 1e-400, "e\"k": "\\"}}])js");
  ASSERT_EQ(t.span_count(), 1u);
  const Lane& l = t.lanes[0];
  EXPECT_EQ(t.processes[l.process].pid, 12);
  EXPECT_EQ(t.name(l.spans[0]), "\u00fc\U0001F600");
  EXPECT_EQ(l.spans[0].start_ns, 5000);
}

}  // namespace
}  // namespace pipeprof::trace
