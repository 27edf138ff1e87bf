#include "pipeprof/trace/chrome_json.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "pipeprof_testing/temp_dir.h"

namespace pipeprof::trace {
namespace {

const Lane* lane_named(const Trace& t, std::string_view name) {
  for (const Lane& l : t.lanes)
    if (l.name == name) return &l;
  return nullptr;
}

const Lane* gpu_lane_of(const Trace& t, int32_t device, int64_t stream) {
  for (const Lane& l : t.lanes)
    if (l.kind == LaneKind::kGpuStream && l.device == device && l.stream == stream) return &l;
  return nullptr;
}

const Counter* counter_named(const Trace& t, std::string_view name) {
  for (const Counter& c : t.counters)
    if (c.name == name) return &c;
  return nullptr;
}

std::string str(const Trace& t, StrId id) {
  return id == kNoStr ? "<none>" : t.strings.str(id);
}

std::string write(const Trace& t) {
  std::ostringstream out;
  write_chrome_json(t, out);
  return out.str();
}

Span make_span(Trace& t, int64_t start, int64_t dur, std::string_view name, std::string_view cat,
               std::string args = "") {
  Span s;
  s.start_ns = start;
  s.dur_ns = dur;
  s.name = t.strings.intern(name);
  s.category = t.strings.intern(cat);
  if (!args.empty()) s.args = t.add_args(std::move(args));
  return s;
}

// A trace with every kind of event, awkward names and a GPU.
Trace sample_trace() {
  Trace t;
  t.metadata["format"] = "pipeprof";
  t.metadata["experiment"] = "map \"parallel\"";
  const int64_t base = 1'700'000'000'123'456'789;  // epoch nanoseconds: beyond a double's precision
  const uint32_t loop = t.thread_lane(100, 1);
  t.lanes[loop].name = "train loop";
  t.lanes[loop].sort_index = -1;
  t.processes[t.lanes[loop].process].name = "pipeprof";
  const uint32_t worker = t.thread_lane(100, 2);
  t.lanes[worker].name = "map 'naïve \"quoted\" \\ 日本' #0";
  const uint32_t child = t.thread_lane(200, 7);
  t.lanes[child].name = "producer main";
  t.processes[t.lanes[child].process].name = "producer 0";
  t.processes[t.lanes[child].process].sort_index = 5;
  const uint32_t gpu0 = t.gpu_lane(100, 0, 7);
  const uint32_t gpu1 = t.gpu_lane(100, 1, 2);  // stream 2 is also thread 2's tid
  t.lanes[loop].spans.push_back(make_span(t, base, 5'000'001, "epoch", "step"));
  t.lanes[loop].spans.push_back(make_span(t, base + 1, 999, "get_next", "wait"));
  t.lanes[loop].spans.push_back(make_span(t, base + 1000, 2'000'000, "step", "step", "{\"i\":0}"));
  t.lanes[worker].spans.push_back(make_span(t, base + 10, 300, "map 'naïve \"quoted\" \\ 日本'",
                                            "pipeline", "{\"name\":\"tab\\there\",\"v\":[1,2]}"));
  t.lanes[child].spans.push_back(make_span(t, base + 20, 0, "generator: read", "pipeline"));
  t.lanes[gpu0].spans.push_back(make_span(t, base + 2000, 500, "void gemm<float>(int)", "gpu"));
  t.lanes[gpu1].spans.push_back(make_span(t, base + 2100, 50, "Memcpy HtoD", "gpu"));
  Instant i;
  i.ts_ns = base + 42;
  i.name = t.strings.intern("marker\n");
  i.category = t.strings.intern("pipeline");
  t.lanes[worker].instants.push_back(i);
  Counter c;
  c.process = t.lanes[loop].process;
  c.name = "map 'f': buffered";
  c.points = {{base, 1.0}, {base + 5, 2.5}, {base + 9, -0.125}};
  t.counters.push_back(c);
  Flow f;
  f.id = 77;
  f.name = t.strings.intern("launch");
  f.category = t.strings.intern("flow");
  f.from_lane = loop;
  f.from_ns = base + 1500;
  f.to_lane = gpu0;
  f.to_ns = base + 2000;
  t.flows.push_back(f);
  t.finalize();
  return t;
}

TEST(ChromeJson, RoundTripKeepsEveryKindOfEvent) {
  const Trace in = sample_trace();
  const std::string text = write(in);
  const Trace out = parse_chrome_json(text);
  EXPECT_EQ(out.metadata, in.metadata);
  ASSERT_EQ(out.processes.size(), in.processes.size());
  for (size_t p = 0; p < in.processes.size(); ++p) {
    EXPECT_EQ(out.processes[p].pid, in.processes[p].pid);
    EXPECT_EQ(out.processes[p].name, in.processes[p].name);
    EXPECT_EQ(out.processes[p].sort_index, in.processes[p].sort_index);
    ASSERT_EQ(out.processes[p].lanes.size(), in.processes[p].lanes.size());
  }
  ASSERT_EQ(out.lanes.size(), in.lanes.size());
  for (const Lane& a : in.lanes) {
    const Lane* b = a.kind == LaneKind::kGpuStream ? gpu_lane_of(out, a.device, a.stream)
                                                   : lane_named(out, a.name);
    ASSERT_NE(b, nullptr) << a.name;
    EXPECT_EQ(b->name, a.name);
    EXPECT_EQ(b->kind, a.kind);
    EXPECT_EQ(b->sort_index, a.sort_index);
    EXPECT_EQ(out.processes[b->process].pid, in.processes[a.process].pid);
    ASSERT_EQ(b->spans.size(), a.spans.size()) << a.name;
    for (size_t k = 0; k < a.spans.size(); ++k) {
      EXPECT_EQ(b->spans[k].start_ns, a.spans[k].start_ns);
      EXPECT_EQ(b->spans[k].dur_ns, a.spans[k].dur_ns);
      EXPECT_EQ(b->spans[k].depth, a.spans[k].depth);
      EXPECT_EQ(str(out, b->spans[k].name), str(in, a.spans[k].name));
      EXPECT_EQ(str(out, b->spans[k].category), str(in, a.spans[k].category));
      const auto args = [](const Trace& t, const Span& s) {
        return s.args == kNoArgs ? std::string("<none>") : t.args[s.args];
      };
      EXPECT_EQ(args(out, b->spans[k]), args(in, a.spans[k]));
    }
    ASSERT_EQ(b->instants.size(), a.instants.size());
    for (size_t k = 0; k < a.instants.size(); ++k) {
      EXPECT_EQ(b->instants[k].ts_ns, a.instants[k].ts_ns);
      EXPECT_EQ(str(out, b->instants[k].name), str(in, a.instants[k].name));
    }
  }
  ASSERT_EQ(out.counters.size(), 1u);
  EXPECT_EQ(out.counters[0].name, in.counters[0].name);
  EXPECT_EQ(out.counters[0].points, in.counters[0].points);
  ASSERT_EQ(out.flows.size(), 1u);
  EXPECT_EQ(out.flows[0].id, 77u);
  EXPECT_EQ(str(out, out.flows[0].name), "launch");
  EXPECT_EQ(out.flows[0].from_ns, in.flows[0].from_ns);
  EXPECT_EQ(out.flows[0].to_ns, in.flows[0].to_ns);
  EXPECT_EQ(out.lanes[out.flows[0].from_lane].name, "train loop");
  EXPECT_EQ(out.lanes[out.flows[0].to_lane].kind, LaneKind::kGpuStream);
  EXPECT_EQ(out.start_ns(), in.start_ns());
  EXPECT_EQ(out.end_ns(), in.end_ns());
  // Writing the read trace gives the same text.
  EXPECT_EQ(write(out), text);
}

TEST(ChromeJson, WriterUsesMicrosecondsWithNanosecondFractionsAndEscapes) {
  Trace t;
  const uint32_t l = t.thread_lane(1, 2);
  t.lanes[l].name = "a\"b\x01";
  t.lanes[l].spans.push_back(make_span(t, 1234, 5, "x", "c"));
  t.lanes[l].spans.push_back(make_span(t, -1500, 1, "neg", "c"));
  t.finalize();
  const std::string text = write(t);
  EXPECT_NE(text.find(R"("ts":1.234,"dur":0.005)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("ts":-1.500,"dur":0.001)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("name":"a\"b\u0001")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("name":"thread_name")"), std::string::npos) << text;
}

TEST(ChromeJson, WriterRepairsInvalidUtf8) {
  Trace t;
  const uint32_t l = t.thread_lane(1, 1);
  t.lanes[l].spans.push_back(make_span(t, 0, 1, "bad \xff\xc3 end", "c"));
  t.finalize();
  const Trace back = parse_chrome_json(write(t));
  ASSERT_EQ(back.span_count(), 1u);
  EXPECT_EQ(back.name(back.lanes[0].spans[0]), "bad \xEF\xBF\xBD\xEF\xBF\xBD end");
}

// A PyTorch-profiler-like trace: a CPU thread launching kernels on two streams, ac2g flows, a
// string tid, fractional timestamps, string ts, Kineto's extra top-level keys.
constexpr std::string_view kKineto = R"js({
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "NVIDIA H100", "totalGlobalMem": 85000000000}],
  "traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 4242, "tid": 4242,
   "ts": 1700000000000100.250, "dur": 20.5, "args": {"External id": 3, "Input Dims": [[2, 2], [2, 2]]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 4242,
   "ts": 1700000000000105.000, "dur": 4.25, "args": {"correlation": 11, "cbid": 211}},
  {"ph": "s", "id": 11, "pid": 4242, "tid": 4242, "ts": 1700000000000105.000, "cat": "ac2g", "name": "ac2g"},
  {"ph": "X", "cat": "kernel", "name": "void gemm_kernel<float, 128>(float*)", "pid": 0, "tid": 7,
   "ts": 1700000000000110.125, "dur": 30.000,
   "args": {"queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": 11, "grid": [4, 1, 1]}},
  {"ph": "f", "id": 11, "pid": 0, "tid": 7, "ts": 1700000000000110.125, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 4242, "tid": 4242,
   "ts": "1700000000000112.5", "dur": "3", "args": {"correlation": 12}},
  {"ph": "s", "id": 12, "pid": 4242, "tid": 4242, "ts": 1700000000000112.5, "cat": "ac2g", "name": "ac2g"},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": "stream 13",
   "ts": 1700000000000150, "dur": 2.001, "args": {"device": 0, "stream": 13, "correlation": 12, "bytes": 4096}},
  {"ph": "f", "id": 12, "pid": 0, "tid": "stream 13", "ts": 1700000000000150, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "i", "s": "t", "name": "checkpoint", "pid": 4242, "tid": 4242, "ts": 1700000000000200},
  {"name": "process_name", "ph": "M", "ts": 0, "pid": 4242, "tid": 0, "args": {"name": "python3"}},
  {"name": "process_name", "ph": "M", "ts": 0, "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
  {"name": "thread_name", "ph": "M", "ts": 0, "pid": 4242, "tid": 4242, "args": {"name": "thread 4242 (python3)"}},
  {"name": "thread_name", "ph": "M", "ts": 0, "pid": 0, "tid": 7, "args": {"name": "stream 7 "}},
  {"name": "process_sort_index", "ph": "M", "pid": 0, "args": {"sort_index": 5000000}},
  {"ph": "C", "name": "Memory", "pid": 4242, "ts": 1700000000000190, "args": {"Total Allocated": 512, "Total Reserved": 2048}}
  ],
  "traceName": "x.pt.trace.json", "displayTimeUnit": "ms"
})js";

TEST(ChromeJson, ReadsKinetoTraces) {
  const Trace t = parse_chrome_json(kKineto, "kineto.json");
  EXPECT_EQ(t.metadata.at("format"), "kineto");
  const Lane* cpu = lane_named(t, "thread 4242 (python3)");
  ASSERT_NE(cpu, nullptr);
  ASSERT_EQ(cpu->spans.size(), 3u);
  EXPECT_EQ(t.name(cpu->spans[0]), "aten::mm");
  EXPECT_EQ(cpu->spans[0].start_ns, 1'700'000'000'000'100'250);
  EXPECT_EQ(cpu->spans[0].dur_ns, 20'500);
  EXPECT_EQ(cpu->spans[1].depth, 1u);  // cudaLaunchKernel inside aten::mm
  EXPECT_EQ(t.name(cpu->spans[2]), "cudaMemcpyAsync");
  EXPECT_EQ(cpu->spans[2].start_ns, 1'700'000'000'000'112'500);
  EXPECT_EQ(cpu->spans[2].dur_ns, 3'000);
  EXPECT_EQ(t.args[cpu->spans[0].args], R"({"External id": 3, "Input Dims": [[2, 2], [2, 2]]})");
  ASSERT_EQ(cpu->instants.size(), 1u);

  const Lane* s7 = gpu_lane_of(t, 0, 7);
  const Lane* s13 = gpu_lane_of(t, 0, 13);
  ASSERT_NE(s7, nullptr);
  ASSERT_NE(s13, nullptr);
  EXPECT_EQ(s7->name, "GPU 0 stream 7");
  ASSERT_EQ(s7->spans.size(), 1u);
  EXPECT_EQ(t.name(s7->spans[0]), "void gemm_kernel<float, 128>(float*)");
  EXPECT_EQ(s7->spans[0].dur_ns, 30'000);
  ASSERT_EQ(s13->spans.size(), 1u);
  EXPECT_EQ(s13->spans[0].dur_ns, 2'001);
  EXPECT_EQ(t.processes[s7->process].name, "GPU 0");
  EXPECT_EQ(t.processes[s7->process].sort_index, 5'000'000);
  EXPECT_EQ(t.processes[cpu->process].name, "python3");
  // Display order: the python process (sort index 0) before the GPU (5000000).
  EXPECT_EQ(t.processes.front().pid, 4242);

  ASSERT_EQ(t.flows.size(), 2u);
  for (const Flow& f : t.flows) {
    EXPECT_EQ(&t.lanes[f.from_lane], cpu);
    EXPECT_EQ(t.lanes[f.to_lane].kind, LaneKind::kGpuStream);
    EXPECT_EQ(str(t, f.category), "ac2g");
  }
  const Counter* alloc = counter_named(t, "Memory.Total Allocated");
  ASSERT_NE(alloc, nullptr);
  ASSERT_EQ(alloc->points.size(), 1u);
  EXPECT_EQ(alloc->points[0].second, 512);
  EXPECT_NE(counter_named(t, "Memory.Total Reserved"), nullptr);
}

// A trace of many flows has them resolved on a thread of their own while the lanes are sorted
// (64 Ki points and more): the arrows are the same, and the time range holds a flow point that lies
// outside every span.
TEST(ChromeJson, ManyFlowsAreResolvedBesideTheLanesSorting) {
  constexpr int kPairs = 40'000;  // 80,000 flow points
  std::string json = "[";
  for (int i = kPairs - 1; i >= 0; --i) {  // spans out of order: finalize() sorts them
    const std::string ts = std::to_string(1'000 + 10 * int64_t{i});
    json += R"({"ph": "X", "name": "launch", "pid": 1, "tid": 2, "ts": )" + ts + R"(, "dur": 2},)";
    json += R"({"ph": "s", "cat": "ac2g", "id": )" + std::to_string(i) +
            R"(, "pid": 1, "tid": 2, "ts": )" + ts + "},";
    json += R"({"ph": "f", "cat": "ac2g", "bp": "e", "id": )" + std::to_string(i) +
            R"(, "pid": 0, "tid": 7, "ts": )" + std::to_string(1'005 + 10 * int64_t{i}) + "},";
  }
  json += R"({"ph": "s", "cat": "late", "id": 1, "pid": 1, "tid": 2, "ts": 900000},)";
  json += R"({"ph": "f", "cat": "late", "id": 1, "pid": 1, "tid": 2, "ts": 950000}])";
  const Trace t = parse_chrome_json(json, "flows.json");
  ASSERT_EQ(t.flows.size(), size_t{kPairs} + 1);
  const Lane* cpu = nullptr;
  for (const Lane& l : t.lanes)
    if (l.tid == 2) cpu = &l;
  ASSERT_NE(cpu, nullptr);
  ASSERT_EQ(cpu->spans.size(), size_t{kPairs});
  EXPECT_EQ(cpu->spans.front().start_ns, 1'000'000);
  EXPECT_EQ(cpu->spans.back().start_ns, (1'000 + 10 * int64_t{kPairs - 1}) * 1000);
  for (int k : {0, 1, kPairs / 2, kPairs - 1}) {
    const Flow& f = t.flows[static_cast<size_t>(k)];  // ordered by (category, id)
    EXPECT_EQ(f.id, static_cast<uint64_t>(k));
    EXPECT_EQ(&t.lanes[f.from_lane], cpu);
    EXPECT_EQ(f.from_ns, (1'000 + 10 * int64_t{k}) * 1000);
    EXPECT_EQ(f.to_ns, (1'005 + 10 * int64_t{k}) * 1000);
    EXPECT_NE(&t.lanes[f.to_lane], cpu);
  }
  EXPECT_EQ(str(t, t.flows.back().category), "late");
  EXPECT_EQ(t.end_ns(), 950'000'000);  // the late flow's end, past every span
}

// Without args the model is the same but for Trace::args; malformed args are still an error.
TEST(ChromeJson, ReadingWithoutArgsKeepsEverythingElse) {
  const Trace full = parse_chrome_json(kKineto, "kineto.json");
  const Trace lean = parse_chrome_json(kKineto, "kineto.json", {.keep_args = false});
  EXPECT_FALSE(full.args.empty());
  EXPECT_TRUE(lean.args.empty());
  ASSERT_EQ(lean.lanes.size(), full.lanes.size());
  for (size_t l = 0; l < full.lanes.size(); ++l) {
    EXPECT_EQ(lean.lanes[l].name, full.lanes[l].name);
    EXPECT_EQ(lean.lanes[l].kind, full.lanes[l].kind);
    ASSERT_EQ(lean.lanes[l].spans.size(), full.lanes[l].spans.size());
    for (size_t i = 0; i < full.lanes[l].spans.size(); ++i) {
      EXPECT_EQ(lean.lanes[l].spans[i].start_ns, full.lanes[l].spans[i].start_ns);
      EXPECT_EQ(lean.lanes[l].spans[i].args, kNoArgs);
    }
  }
  EXPECT_EQ(lean.flows.size(), full.flows.size());
  EXPECT_EQ(lean.metadata, full.metadata);
  EXPECT_THROW(parse_chrome_json(R"([{"ph": "X", "ts": 1, "dur": 1, "args": {"a": tru}}])", "bad",
                                 {.keep_args = false}),
               TraceFormatError);
}

// Strings are read from the text without a copy, 16 bytes at a time: names of every length
// around those steps, with and without escapes (anywhere in them), read back as written; an
// invalid escape is an error at the string, naming its key.
TEST(ChromeJson, StringsOfEveryLengthAndEscapeReadBack) {
  for (const bool keep_args : {true, false}) {
    std::string text = "[";
    std::vector<std::string> expected;
    for (size_t length = 0; length < 70; ++length) {
      for (const int escape_at : {-1, 0, 15, 16, 31, 32}) {
        if (escape_at >= static_cast<int>(length)) continue;
        std::string json, plain;
        for (size_t i = 0; i < length; ++i) {
          const char c = static_cast<char>('a' + i % 26);
          if (static_cast<int>(i) == escape_at) {
            json += "\\\"";  // an escaped quote
            plain += '"';
          } else {
            json += c;
            plain += c;
          }
        }
        if (text.size() > 1) text += ",";
        text += R"({"ph": "X", "cat": "c)" + json + R"(", "name": ")" + json +
                R"(", "pid": 1, "tid": 1, "ts": )" + std::to_string(expected.size()) +
                R"(, "dur": 1, "args": {")" + json + R"(": 1}})";
        expected.push_back(plain);
      }
    }
    const std::string long_name(3000, 'x');
    text += R"(, {"ph": "X", "name": ")" + long_name + R"(\u00e9", "pid": 1, "tid": 1, "ts": 9999, "dur": 1},)";
    text += R"({"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "lo\top"}}])";
    expected.push_back(long_name + "\xc3\xa9");
    const Trace t = parse_chrome_json(text, "strings.json", {.keep_args = keep_args});
    const Lane* lane = lane_named(t, "lo\top");
    ASSERT_NE(lane, nullptr);
    ASSERT_EQ(lane->spans.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      const Span& s = lane->spans[i];
      EXPECT_EQ(str(t, s.name), expected[i]) << i;
      if (i + 1 < expected.size()) {
        EXPECT_EQ(str(t, s.category), "c" + expected[i]) << i;
      }
    }
  }
  for (const std::string_view bad :
       {R"([{"ph": "X", "name": "abc\qdef", "pid": 1, "tid": 1, "ts": 1, "dur": 1}])",
        R"([{"ph": "X", "name": "a long name of more than sixteen bytes \u12", "pid": 1, "tid": 1, "ts": 1, "dur": 1}])",
        R"([{"ph": "X", "cat": "\x", "pid": 1, "tid": 1, "ts": 1, "dur": 1}])",
        R"([{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "\z"}}])",
        R"([{"ph": "X", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "ke\y": 1}])"}) {
    try {
      (void)parse_chrome_json(bad, "bad.json");
      ADD_FAILURE() << bad << ": no error";
    } catch (const TraceFormatError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("invalid escape"), std::string::npos) << what;
      EXPECT_EQ(bad.substr(e.offset() - 1, 1), "\"") << what;  // at the string's first byte
    }
  }
}

// The phase may come after the args: counters and metadata still read their numbers.
TEST(ChromeJson, CountersAndMetadataReadTheirArgsWhereverThePhaseIs) {
  const Trace t = parse_chrome_json(R"([
    {"name": "queue", "pid": 1, "ts": 5, "args": {"value": 3, "other": 4}, "ph": "C"},
    {"ph": "C", "name": "depth", "pid": 1, "ts": 6, "args": {"value": 7}},
    {"name": "thread_sort_index", "pid": 1, "tid": 2, "args": {"sort_index": -5}, "ph": "M"},
    {"ph": "X", "name": "s", "pid": 1, "tid": 2, "ts": 1, "dur": 1, "args": {"value": 9}}
  ])", "order.json", {.keep_args = false});
  const Counter* queue = counter_named(t, "queue");
  ASSERT_NE(queue, nullptr);
  ASSERT_EQ(queue->points.size(), 1u);
  EXPECT_EQ(queue->points[0].second, 3.0);
  ASSERT_NE(counter_named(t, "queue.other"), nullptr);
  const Counter* depth = counter_named(t, "depth");
  ASSERT_NE(depth, nullptr);
  EXPECT_EQ(depth->points.at(0).second, 7.0);
  ASSERT_EQ(t.lanes.size(), 1u);
  EXPECT_EQ(t.lanes[0].sort_index, -5);
}

TEST(ChromeJson, MatchesBeginEndPairsPerThread) {
  const std::string_view text = R"([
    {"ph": "B", "name": "outer", "cat": "c", "pid": 1, "tid": 1, "ts": 10, "args": {"a": 1}},
    {"ph": "B", "name": "other thread", "pid": 1, "tid": 2, "ts": 11},
    {"ph": "B", "name": "inner", "pid": 1, "tid": 1, "ts": 12},
    {"ph": "E", "pid": 1, "tid": 1, "ts": 15, "args": {"result": "ok"}},
    {"ph": "E", "pid": 1, "tid": 1, "ts": 20},
    {"ph": "E", "pid": 1, "tid": 2, "ts": 30}
  ])";
  const Trace t = parse_chrome_json(text);
  EXPECT_EQ(t.metadata.at("format"), "chrome");
  EXPECT_EQ(t.metadata.count("unclosed_spans"), 0u);
  ASSERT_EQ(t.lanes.size(), 2u);
  const Lane& l = t.lanes[t.processes[0].lanes[0]];
  ASSERT_EQ(l.spans.size(), 2u);
  EXPECT_EQ(t.name(l.spans[0]), "outer");
  EXPECT_EQ(l.spans[0].start_ns, 10'000);
  EXPECT_EQ(l.spans[0].dur_ns, 10'000);
  EXPECT_EQ(t.args[l.spans[0].args], R"({"a": 1})");
  EXPECT_EQ(t.name(l.spans[1]), "inner");
  EXPECT_EQ(l.spans[1].dur_ns, 3'000);
  EXPECT_EQ(l.spans[1].depth, 1u);
  EXPECT_EQ(t.args[l.spans[1].args], R"({"result": "ok"})");
  EXPECT_EQ(l.max_depth, 2u);
}

TEST(ChromeJson, UnclosedBeginsEndAtTheTraceEnd) {
  const Trace t = parse_chrome_json(R"({"traceEvents": [
    {"ph": "B", "name": "open", "pid": 1, "tid": 1, "ts": 1},
    {"ph": "X", "name": "later", "pid": 1, "tid": 2, "ts": 5, "dur": 3}]})");
  EXPECT_EQ(t.metadata.at("unclosed_spans"), "1");
  const Lane* l = nullptr;
  for (const Lane& x : t.lanes)
    if (x.tid == 1) l = &x;
  ASSERT_NE(l, nullptr);
  ASSERT_EQ(l->spans.size(), 1u);
  EXPECT_EQ(l->spans[0].end_ns(), 8'000);
}

TEST(ChromeJson, EndWithoutBeginIsAnErrorAtThatEvent) {
  const std::string text =
      R"([{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}, {"ph": "E", "pid": 1, "tid": 1, "ts": 5}])";
  try {
    parse_chrome_json(text, "be.json");
    FAIL() << "expected TraceFormatError";
  } catch (const TraceFormatError& e) {
    EXPECT_EQ(e.offset(), text.find("{\"ph\": \"E\""));
    EXPECT_EQ(e.source(), "be.json");
    EXPECT_NE(std::string(e.what()).find("without an open begin"), std::string::npos) << e.what();
  }
}

TEST(ChromeJson, ReadsBareArraysAndIgnoresUnknownPhases) {
  const Trace t = parse_chrome_json(R"([
    {"ph": "X", "name": "a", "pid": 3, "tid": 4, "ts": 0.0005, "dur": 1e-3},
    {"ph": "b", "name": "async", "pid": 3, "tid": 4, "ts": 1, "id": 5},
    {"ph": "P", "name": "sample", "pid": 3, "tid": 4, "ts": 1},
    {"ph": "I", "name": "global", "pid": 3, "tid": 4, "ts": 2, "s": "g"}
  ])");
  ASSERT_EQ(t.span_count(), 1u);
  const Lane& l = t.lanes[0];
  EXPECT_EQ(l.spans[0].start_ns, 1);  // 0.5 ns rounds away from zero
  EXPECT_EQ(l.spans[0].dur_ns, 1);
  EXPECT_EQ(l.instants.size(), 1u);
}

// Microseconds of every shape become exact nanoseconds: the common ones (up to 16 integer digits
// and 3 decimals) and the rest (more digits, exponents, rounding half away from zero).
TEST(ChromeJson, TimestampsOfEveryShapeBecomeExactNanoseconds) {
  const std::pair<std::string, int64_t> cases[] = {
      {"0", 0},
      {"-0", 0},
      {"7", 7'000},
      {"0.001", 1},
      {"-5.5", -5'500},
      {"12.34", 12'340},
      {"999999999999999.999", 999'999'999'999'999'999},
      {"-999999999999999.999", -999'999'999'999'999'999},
      {"1700000000000100.25", 1'700'000'000'000'100'250},  // epoch microseconds: 16 digits
      {"12345678", 12'345'678'000},                        // eight digits, read as one word
      {"1234567.125", 1'234'567'125},                      // a "." among the first eight
      {"123456789012.5", 123'456'789'012'500},             // a word, then digit by digit
      {"9223372036854774.999", 9'223'372'036'854'774'999},
      {"9223372036854775.807", INT64_MAX},
      {"-9223372036854775.807", -INT64_MAX},
      {"1.000000000000000000000000000000000000000000000000000000000000000000000000000001", 1'000},
      {"12.3456", 12'346},
      {"12.3454", 12'345},
      {"-0.0005", -1},
      {"1e3", 1'000'000},
      {"2.5E-2", 25},
      {"\"42.5\"", 42'500},  // a string holding a number
  };
  for (const auto& [text, ns] : cases) {
    const Trace t = parse_chrome_json(R"([{"ph": "i", "name": "a", "pid": 1, "tid": 1, "ts": )" +
                                      text + "}]");
    ASSERT_EQ(t.lanes.size(), 1u) << text;
    ASSERT_EQ(t.lanes[0].instants.size(), 1u) << text;
    EXPECT_EQ(t.lanes[0].instants[0].ts_ns, ns) << text;
  }
  for (const std::string text : {"01", "1.", "-", "\"1.2.3\"", "9223372036854775.808", "17000000000001002", "\"\""}) {
    EXPECT_THROW(parse_chrome_json(R"([{"ph": "i", "name": "a", "pid": 1, "tid": 1, "ts": )" +
                                   text + "}]"),
                 TraceFormatError)
        << text;
  }
}

TEST(ChromeJson, FlowsChainThroughStepsInTimeOrder) {
  const Trace t = parse_chrome_json(R"([
    {"ph": "f", "id": "0x10", "cat": "q", "name": "hop", "pid": 1, "tid": 3, "ts": 30, "bp": "e"},
    {"ph": "t", "id": 16, "cat": "q", "name": "hop", "pid": 1, "tid": 2, "ts": 20},
    {"ph": "s", "id": 16, "cat": "q", "name": "hop", "pid": 1, "tid": 1, "ts": 10},
    {"ph": "s", "id": 16, "cat": "other", "name": "hop", "pid": 1, "tid": 1, "ts": 10},
    {"ph": "f", "id": 99, "cat": "q", "name": "orphan", "pid": 1, "tid": 1, "ts": 10}
  ])");
  ASSERT_EQ(t.flows.size(), 2u);
  EXPECT_EQ(t.lanes[t.flows[0].from_lane].tid, 1);
  EXPECT_EQ(t.lanes[t.flows[0].to_lane].tid, 2);
  EXPECT_EQ(t.lanes[t.flows[1].from_lane].tid, 2);
  EXPECT_EQ(t.lanes[t.flows[1].to_lane].tid, 3);
  EXPECT_EQ(t.flows[1].to_ns, 30'000);
}

TEST(ChromeJson, SaveIsAtomicAndLoadNamesMissingFiles) {
  const testing_support::TempDir tmp;
  const auto& dir = tmp.path();
  const auto path = dir / "t.json";
  const Trace in = sample_trace();
  save_chrome_json(in, path);
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    EXPECT_EQ(entry.path().filename(), "t.json");  // no temporary left behind
  const Trace out = load_chrome_json(path);
  EXPECT_EQ(out.span_count(), in.span_count());
  try {
    load_chrome_json(dir / "missing.json");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.json"), std::string::npos);
  }
  EXPECT_THROW(save_chrome_json(in, dir / "no_such_dir" / "t.json"), std::runtime_error);
  std::ofstream(dir / "bad.json") << "[{\"ph\": \"X\"";
  try {
    load_chrome_json(dir / "bad.json");
    FAIL();
  } catch (const TraceFormatError& e) {
    EXPECT_EQ(e.source(), (dir / "bad.json").string());
  }
}

}  // namespace
}  // namespace pipeprof::trace
