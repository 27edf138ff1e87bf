// Reading a trace file a part at a time (ReadOptions::stream, part_bytes): the same model as a
// whole read for every shape of trace, cuts that fall inside strings, compressed files, and the
// same errors at the same bytes of the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "compress_for_tests.h"
#include "pipeprof/trace/chrome_json.h"
#include "pipeprof_testing/temp_dir.h"

namespace pipeprof::trace {
namespace {

namespace fs = std::filesystem;

// Events of every phase the reader models, names holding "}, {" and "}\n,{" (a cut there would
// fall inside a string), escapes, B/E pairs and flows that cross parts, a GPU stream.
std::string streamed_events(int steps) {
  std::string out;
  for (int i = 0; i < steps; ++i) {
    const std::string ts = std::to_string(1'700'000'000'000'000LL + i * 100) + ".250";
    if (i > 0) out += ",\n";
    out += R"({"ph": "B", "name": "step \"}, {\" )" + std::to_string(i) +
           R"(", "pid": 1, "tid": 1, "ts": )" + ts + "}";
    out += R"(, {"ph": "X", "cat": "cpu_op", "name": "aten::mm}, {}\n,{", "pid": 1, "tid": 2, "ts": )" + ts +
           R"(, "dur": 12.5, "args": {"External id": )" + std::to_string(i) + R"(, "note": "a}, {b"}})";
    out += R"(,{"ph": "s", "id": )" + std::to_string(i) + R"(, "pid": 1, "tid": 2, "ts": )" + ts +
           R"(, "cat": "ac2g", "name": "ac2g"})";
    out += R"(, {"ph": "X", "cat": "kernel", "name": "gemm\u00e9", "pid": 0, "tid": 7, "ts": )" + ts +
           R"(, "dur": 3, "args": {"device": 0, "stream": 7, "correlation": )" + std::to_string(i) + "}}";
    out += R"(, {"ph": "f", "id": )" + std::to_string(i) + R"(, "pid": 0, "tid": 7, "ts": )" + ts +
           R"(, "cat": "ac2g", "name": "ac2g", "bp": "e"})";
    out += R"(, {"ph": "C", "name": "queue", "pid": 1, "ts": )" + ts + R"(, "args": {"value": )" +
           std::to_string(i % 7) + "}}";
    out += R"(, {"ph": "E", "pid": 1, "tid": 1, "ts": )" + ts + "}";
  }
  out += R"(, {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "loop"}})";
  return out;
}

std::string object_trace(int steps) {
  return R"({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU"}], "traceEvents": [)" "\n" +
         streamed_events(steps) + "\n],\n" +
         R"("otherData": {"format": "kineto", "note": "after the events"}, "traceName": "t"})" "\n";
}

std::string array_trace(int steps) {
  return "  [" + streamed_events(steps) + "]\n";
}

fs::path put(const testing_support::TempDir& tmp, const std::string& name, const std::string& text) {
  const fs::path p = tmp.path() / name;
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

std::string canonical(const Trace& t) {
  std::ostringstream out;
  write_chrome_json(t, out);
  return out.str();
}

Trace read(const fs::path& p, bool stream, size_t part_bytes, bool keep_args = true,
           ReadStats* stats = nullptr, size_t threads = 0) {
  ReadOptions o;
  o.stats = stats;
  o.threads = threads;
  o.stream = stream;
  o.part_bytes = part_bytes;
  o.keep_args = keep_args;
  return load_chrome_json(p, o);
}

TEST(StreamedTrace, PartsReadTheSameModelAsAWholeRead) {
  const testing_support::TempDir tmp;
  for (const auto& [name, text] : {std::pair<std::string, std::string>{"object.json", object_trace(300)},
                                   {"array.json", array_trace(300)},
                                   {"object.json.gz", test_compress::gzip(object_trace(300))}}) {
    const fs::path p = put(tmp, name, text);
    const Trace whole = read(p, false, 0);
    ASSERT_GT(whole.span_count(), 600u) << name;
    ASSERT_EQ(whole.flows.size(), 300u) << name;
    const std::string expected = canonical(whole);
    // Parts of every size, from smaller than one event to larger than the file; parsed by the
    // reading thread alone, or by three others.
    for (const size_t threads : {1u, 3u}) {
      for (const size_t part : {64u, 200u, 1000u, 4096u, 65536u, 8u << 20}) {
        const std::string what = name + ", parts of " + std::to_string(part) + " bytes, threads " + std::to_string(threads);
        ReadStats stats;
        EXPECT_EQ(canonical(read(p, true, part, true, &stats, threads)), expected) << what;
        EXPECT_FALSE(stats.whole) << what;
        if (part <= 4096) {
          EXPECT_GT(stats.parts, text.size() / part / 4) << what;
        }
      }
    }
    EXPECT_EQ(canonical(read(p, true, 500, false)), canonical(read(p, false, 0, false))) << name;
  }
}

// Names full of "}, {" put most cuts inside strings: the reader finds it (an unterminated string)
// before reading any event of the part and cuts earlier.
TEST(StreamedTrace, ACutInsideAStringIsNotTaken) {
  const testing_support::TempDir tmp;
  std::string events;
  for (int i = 0; i < 200; ++i) {
    if (i > 0) events += ", ";
    events += R"({"ph": "X", "name": ")";
    for (int k = 0; k < 20; ++k)
      events += "}, {";
    events += std::to_string(i) + R"(", "pid": 1, "tid": 1, "ts": )" + std::to_string(i * 10) + R"(, "dur": 5})";
  }
  const fs::path p = put(tmp, "strings.json", R"({"traceEvents": [)" + events + "]}");
  const std::string expected = canonical(read(p, false, 0));
  for (const size_t threads : {1u, 3u}) {
    for (const size_t part : {64u, 100u, 333u, 1024u}) {
      ReadStats stats;
      EXPECT_EQ(canonical(read(p, true, part, true, &stats, threads)), expected) << "parts of " << part << " bytes";
      EXPECT_FALSE(stats.whole);
      EXPECT_GT(stats.parts, 5u) << "parts of " << part << " bytes";
    }
  }
}

// A bad event far into the file, a truncated file: the error (its message and byte) is a whole
// read's.
TEST(StreamedTrace, ErrorsNameTheSameByteAsAWholeRead) {
  const testing_support::TempDir tmp;
  std::string text = object_trace(200);
  const size_t at = text.find(R"("ts": )", text.size() * 3 / 4);
  ASSERT_NE(at, std::string::npos);
  std::string no_ts = text;
  no_ts.replace(at, 4, R"("tz")");
  const std::string truncated = text.substr(0, text.size() * 2 / 3);
  std::string bad_number = text;
  bad_number.replace(text.find(R"("dur": 12.5)", text.size() / 2), 11, R"("dur": 1.2.5)");
  for (const auto& [name, body] : {std::pair<std::string, std::string>{"no_ts.json", no_ts},
                                   {"truncated.json", truncated},
                                   {"bad_number.json", bad_number},
                                   {"truncated.json.gz", test_compress::gzip(truncated)}}) {
    const fs::path p = put(tmp, name, body);
    std::string whole_error, streamed_error;
    try {
      (void)read(p, false, 0);
    } catch (const TraceFormatError& e) {
      whole_error = e.what();
    }
    for (const size_t threads : {1u, 3u}) {
      ReadStats stats;
      streamed_error.clear();
      try {
        (void)read(p, true, 256, true, &stats, threads);
      } catch (const TraceFormatError& e) {
        streamed_error = e.what();
      }
      EXPECT_TRUE(stats.whole) << name;
      EXPECT_EQ(streamed_error, whole_error) << name << ", threads " << threads;
    }
    EXPECT_FALSE(whole_error.empty()) << name;
  }
}

// Shapes the parts do not handle are read whole, with the same result: "traceEvents" first met
// nested in another key, events that are not objects, an empty array, blanks only.
TEST(StreamedTrace, OtherShapesAreReadWhole) {
  const testing_support::TempDir tmp;
  const std::string nested =
      R"({"meta": {"traceEvents": []}, "note": "\"traceEvents\": [", "traceEvents": [)" + streamed_events(50) + "]}";
  const fs::path p = put(tmp, "nested.json", nested);
  const Trace whole = read(p, false, 0);
  EXPECT_GT(whole.span_count(), 100u);
  ReadStats stats;
  EXPECT_EQ(canonical(read(p, true, 128, true, &stats)), canonical(whole));
  EXPECT_TRUE(stats.whole);
  for (const auto& [name, body] : {std::pair<std::string, std::string>{"empty.json", R"({"traceEvents": []})"},
                                   {"empty_array.json", "[]"}}) {
    const fs::path e = put(tmp, name, body);
    EXPECT_EQ(read(e, true, 64).span_count(), 0u) << name;
  }
  const fs::path numbers = put(tmp, "numbers.json", R"({"traceEvents": [1, 2, 3]})");
  EXPECT_THROW((void)read(numbers, true, 64), TraceFormatError);
  const fs::path blank = put(tmp, "blank.json", "   \n");
  EXPECT_THROW((void)read(blank, true, 64), TraceFormatError);
}

}  // namespace
}  // namespace pipeprof::trace
