// The reader on broken input: every failure is a TraceFormatError with an offset inside the input,
// never a crash, a hang or another exception; what it accepts is a trace the rest of pipeprof can
// use.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <sstream>
#include <string>

#include "pipeprof/trace/chrome_json.h"

namespace pipeprof::trace {
namespace {

// Checks that a trace the reader returned is one the rest of pipeprof can use: every index in
// range, spans with a duration >= 0 inside the trace's time range, sorted as finalize() leaves
// them, and the same spans when written and read back.
void expect_usable(const Trace& t, std::string_view input) {
  const std::string where = "trace from: " + std::string(input.substr(0, 120));
  EXPECT_LE(t.start_ns(), t.end_ns()) << where;
  auto valid_str = [&](StrId id) { return id == kNoStr || id < t.strings.size(); };
  auto valid_args = [&](uint32_t a) { return a == kNoArgs || a < t.args.size(); };
  for (const Process& p : t.processes) {
    for (uint32_t lane : p.lanes)
      EXPECT_LT(lane, t.lanes.size()) << where;
  }
  for (const Lane& lane : t.lanes) {
    EXPECT_LT(lane.process, t.processes.size()) << where;
    for (const Span& s : lane.spans) {
      EXPECT_GE(s.dur_ns, 0) << where;
      EXPECT_GE(s.start_ns, t.start_ns()) << where;
      EXPECT_LE(s.end_ns(), t.end_ns()) << where;
      EXPECT_TRUE(valid_str(s.name) && valid_str(s.category) && valid_args(s.args)) << where;
      EXPECT_LT(s.depth, lane.max_depth) << where;
    }
    EXPECT_TRUE(
        std::is_sorted(lane.spans.begin(), lane.spans.end(),
                       [](const Span& a, const Span& b) { return a.start_ns < b.start_ns; }))
        << where;
    for (const Instant& i : lane.instants)
      EXPECT_TRUE(valid_str(i.name) && valid_str(i.category) && valid_args(i.args)) << where;
  }
  for (const Counter& c : t.counters)
    EXPECT_LT(c.process, t.processes.size()) << where;
  for (const Flow& f : t.flows) {
    EXPECT_LT(f.from_lane, t.lanes.size()) << where;
    EXPECT_LT(f.to_lane, t.lanes.size()) << where;
  }
  std::ostringstream written;
  write_chrome_json(t, written);
  try {
    EXPECT_EQ(parse_chrome_json(written.str(), "rewritten").span_count(), t.span_count()) << where;
  } catch (const std::exception& e) {
    ADD_FAILURE() << where << ": written back, it does not read: " << e.what();
  }
}

// Parses; returns "" when the document gave a usable trace, else the error message. Fails the test
// on any exception but TraceFormatError, and on an error that does not name the source and a byte
// offset inside the document.
std::string outcome(std::string_view text) {
  try {
    expect_usable(parse_chrome_json(text, "t.json"), text);
    return "";
  } catch (const TraceFormatError& e) {
    EXPECT_LE(e.offset(), text.size()) << e.what();
    EXPECT_EQ(e.source(), "t.json");
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("t.json: byte " + std::to_string(e.offset()) + ": ", 0), 0u) << what;
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
  size_t parsed = 0, errors = 0;
  for (size_t n = 0; n < kValid.size(); ++n) {
    const std::string prefix = kValid.substr(0, n);
    ++(outcome(prefix).empty() ? parsed : errors);
  }
  EXPECT_EQ(parsed, 0u) << "a strict prefix of an object never is a whole document";
  EXPECT_EQ(errors, kValid.size());
  // A written trace, truncated everywhere.
  Trace t = parse_chrome_json(kValid);
  std::ostringstream out;
  write_chrome_json(t, out);
  const std::string written = out.str();
  size_t written_errors = 0;
  for (size_t n = 0; n + 2 < written.size(); ++n) {  // the last bytes are "}\n"
    const bool error = !outcome(written.substr(0, n)).empty();
    EXPECT_TRUE(error) << "a prefix of " << n << " bytes parsed";
    written_errors += error ? 1 : 0;
  }
  EXPECT_EQ(written_errors, written.size() - 2);
  EXPECT_EQ(outcome(written), "");
}

// Each damaged document either parses into a usable trace or raises TraceFormatError naming the
// source and an offset inside the document (outcome() checks both); both happen.
TEST(ChromeJsonMalformed, RandomByteDamageNeverCrashes) {
  constexpr int kRounds = 3000;
  int parsed = 0, errors = 0;
  std::mt19937 rng(12345);
  const std::string alphabet = "{}[]\":,\\ 0-9.eEtfnu\xff\xc3\x80x";
  for (int round = 0; round < kRounds; ++round) {
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
    ++(outcome(s).empty() ? parsed : errors);
  }
  EXPECT_EQ(parsed + errors, kRounds);
  // Most damage breaks the document; some (inside a name, a digit for a digit) leaves a trace.
  EXPECT_GT(errors, kRounds / 2) << parsed << " parsed, " << errors << " errors";
  EXPECT_GT(parsed, kRounds / 100) << parsed << " parsed, " << errors << " errors";
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
      // Arrays and objects inside args, checked from their text.
      R"([{"ph": "X", "ts": 1, "dur": 1, "args": {"a": [1, 2,]}}])",
      R"([{"ph": "X", "ts": 1, "dur": 1, "args": {"a": [1 2]}}])",
      R"([{"ph": "X", "ts": 1, "dur": 1, "args": {"a": [,1]}}])",
      R"([{"ph": "X", "ts": 1, "dur": 1, "args": {"a": [[1], [2}]}}])",
      R"([{"ph": "X", "ts": 1, "dur": 1, "args": {"a": {"b" 1}}}])",
      R"([{"ph": "X", "ts": 1, "dur": 1, "args": {"a": {"b": 1,}}}])",
      R"([{"ph": "X", "ts": 1, "dur": 1, "args": {"a": {1: 2}}}])",
      R"([{"ph": "X", "ts": 1, "dur": 1, "args": {"a": {"b": }}}])",
      R"([{"ph": "X", "ts": 1, "dur": 1, "args": {"a": ["x\q"]}}])",
      R"([{"ph": "X", "ts": 1, "dur": 1, "args": {"a": {"\q": 1}}}])",
      R"([{"ph": "X", "ts": 1, "dur": 1, "args": {"a": [01]}}])",
      R"([{"ph": "X", "ts": 1, "dur": 1, "args": {"a": [-]}}])",
      R"([{"ph": "X", "ts": 1, "dur": 1, "args": {"a": [1.5e]}}])",
      R"([{"ph": "X", "ts": 1, "dur": 1, "args": {"a": [tru]}}])",
      R"([{"ph": "X", "ts": 1, "dur": 1, "args": {"a": [nulll]}}])",
      R"([{"ph": "X", "ts": 1, "dur": 1, "args": {"a": [1]x}}])",
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
  // Every kind of value inside arrays and objects of args, blanks anywhere between tokens.
  const std::string nested =
      R"js({"a": [ [], {}, [[ ]], {"b": [null, true, false, -1.5e3, 0, 0.25E+2, "\u00fc\"\\"]} ] ,)js"
      R"js( "c" : { "d" : { } , "e\u0041" : [ 1 ] } })js";
  const Trace u = parse_chrome_json(R"([{"ph": "X", "ts": 1, "dur": 1, "args": )" + nested + "}]");
  ASSERT_EQ(u.span_count(), 1u);
  EXPECT_EQ(u.args.at(0), nested);
  EXPECT_EQ(t.name(l.spans[0]), "\u00fc\U0001F600");
  EXPECT_EQ(l.spans[0].start_ns, 5000);
}

}  // namespace
}  // namespace pipeprof::trace
