#include "pipeprof/trace/recorder.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <bit>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "pipeprof/trace/clock.h"

#if defined(PIPEPROF_HAVE_NVTX)
#include <nvtx3/nvToolsExt.h>
#endif

namespace pipeprof::trace {

constinit Recorder Recorder::instance_;

namespace {

using Kind = detail::EventKind;
using detail::Event;

constexpr size_t kChunkEvents = 4096;
constexpr size_t kMaxChunks = 1024;  // at most 4M events (192 MiB) per thread and recording

// The events of one thread. Only the owning thread appends; collectors read the published prefix
// [0, count) concurrently, so chunks are never moved or freed while the buffer is registered.
struct ThreadBuffer {
  std::array<std::atomic<Event*>, kMaxChunks> chunks{};
  std::atomic<size_t> count{0};
  std::atomic<uint64_t> generation{0};  // the recording these events belong to
  std::atomic<int64_t> dropped{0};
  std::atomic<bool> exited{false};
  int64_t tid = 0;
  std::mutex meta_mu;  // guards name and sort_index
  std::string name;
  int64_t sort_index = 0;

  ~ThreadBuffer() {
    for (auto& c : chunks)
      delete[] c.load(std::memory_order_relaxed);
  }
};

struct State {
  std::mutex mu;  // guards buffers, foreign, process_name and the string table
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  std::vector<Trace> foreign;
  std::string process_name = "pipeprof";
  std::deque<std::string> names;
  std::unordered_map<std::string_view, NameId> name_index;
  std::atomic<int64_t> dropped_total{0};
};

State& state() {
  static State* s = new State();  // never destroyed: threads may record during static teardown
  return *s;
}

// Registers the calling thread's buffer on first use and marks it exited when the thread ends.
struct ThreadSlot {
  std::shared_ptr<ThreadBuffer> buffer;
  ThreadSlot() {
    buffer = std::make_shared<ThreadBuffer>();
    buffer->tid = static_cast<int64_t>(::syscall(SYS_gettid));
    std::lock_guard lock(state().mu);
    state().buffers.push_back(buffer);
  }
  ~ThreadSlot() {
    detail::cursor = detail::Cursor{};  // events after this go through the slow path
    buffer->exited.store(true, std::memory_order_release);
  }
};

ThreadBuffer& this_thread_buffer() {
  thread_local ThreadSlot slot;
  return *slot.buffer;
}

}  // namespace

void detail::append_slow(const Event& e) noexcept {
  ThreadBuffer& b = this_thread_buffer();
  const uint64_t gen = recording_generation.load(std::memory_order_acquire);
  size_t n = b.count.load(std::memory_order_relaxed);
  if (b.generation.load(std::memory_order_relaxed) != gen) {
    // First event of a new recording on this thread: start over. Collectors only read buffers of
    // the current generation, so nobody reads the old events any more.
    b.count.store(0, std::memory_order_release);
    b.generation.store(gen, std::memory_order_release);
    n = 0;
  }
  Cursor& c = cursor;
  const size_t chunk = n / kChunkEvents;
  if (chunk >= kMaxChunks) {
    b.dropped.fetch_add(1, std::memory_order_relaxed);
    state().dropped_total.fetch_add(1, std::memory_order_relaxed);
    c = Cursor{};  // every later event of this recording comes here and is dropped
    return;
  }
  Event* events = b.chunks[chunk].load(std::memory_order_relaxed);
  if (events == nullptr) {
    events = new Event[kChunkEvents];
    b.chunks[chunk].store(events, std::memory_order_release);
  }
  events[n % kChunkEvents] = e;
  b.count.store(n + 1, std::memory_order_release);
  // The fast path continues in this chunk.
  c.slot = events + n % kChunkEvents + 1;
  c.slot_end = events + kChunkEvents;
  c.count = &b.count;
  c.n = n + 1;
  c.generation = gen;
}

namespace {

#if defined(PIPEPROF_HAVE_NVTX)
nvtxDomainHandle_t nvtx_domain() {
  static nvtxDomainHandle_t d = nvtxDomainCreateA("pipeprof");
  return d;
}
#endif

// Maps ticks to CLOCK_MONOTONIC nanoseconds with a reference pair read now.
struct TickMapping {
  int64_t ref_ticks;
  int64_t ref_ns;
  double ns_per_tick;
  TickMapping() {
    recalibrate_ticks();
    ns_per_tick = trace::ns_per_tick();
    // Take the tightest of a few adjacent (ticks, ns) reads.
    int64_t best = INT64_MAX;
    ref_ticks = ticks();
    ref_ns = now_ns();
    for (int i = 0; i < 5; ++i) {
      const int64_t t0 = ticks();
      const int64_t ns = now_ns();
      const int64_t t1 = ticks();
      if (t1 - t0 < best) {
        best = t1 - t0;
        ref_ticks = t0 + (t1 - t0) / 2;
        ref_ns = ns;
      }
    }
  }
  int64_t to_ns(int64_t t) const {
    return ref_ns + static_cast<int64_t>(static_cast<double>(t - ref_ticks) * ns_per_tick);
  }
};

std::string json_escape(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

// Appends the events of `src` (another process's finished trace) to `dst`.
void merge_into(Trace& dst, const Trace& src) {
  std::vector<uint32_t> lane_map(src.lanes.size());
  for (size_t i = 0; i < src.lanes.size(); ++i) {
    const Lane& l = src.lanes[i];
    const Process& p = src.processes[l.process];
    const size_t lanes_before = dst.lanes.size();
    const uint32_t idx = l.kind == LaneKind::kGpuStream ? dst.gpu_lane(p.pid, l.device, l.stream)
                                                        : dst.thread_lane(p.pid, l.tid);
    lane_map[i] = idx;
    Lane& d = dst.lanes[idx];
    if (d.name.empty()) d.name = l.name;
    // A lane this process recorded itself (GPU API calls on the training thread) keeps its place.
    if (idx >= lanes_before) d.sort_index = l.sort_index;
    Process& dp = dst.processes[d.process];
    if (dp.name.empty()) dp.name = p.name;
    dp.sort_index = p.sort_index;
    auto remap = [&](StrId id) {
      return id == kNoStr ? kNoStr : dst.strings.intern(src.strings.str(id));
    };
    auto args = [&](uint32_t a) { return a == kNoArgs ? kNoArgs : dst.add_args(src.args[a]); };
    for (Span s : l.spans) {
      s.name = remap(s.name);
      s.category = remap(s.category);
      s.args = args(s.args);
      d.spans.push_back(s);
    }
    for (Instant in : l.instants) {
      in.name = remap(in.name);
      in.category = remap(in.category);
      in.args = args(in.args);
      d.instants.push_back(in);
    }
  }
  for (const Process& p : src.processes) {
    Process& dp = dst.processes[dst.process(p.pid)];
    if (dp.name.empty()) dp.name = p.name;
  }
  for (const Counter& c : src.counters) {
    Counter copy = c;
    copy.process = dst.process(src.processes[c.process].pid);
    dst.counters.push_back(std::move(copy));
  }
  for (Flow f : src.flows) {
    f.name = f.name == kNoStr ? kNoStr : dst.strings.intern(src.strings.str(f.name));
    f.category = f.category == kNoStr ? kNoStr : dst.strings.intern(src.strings.str(f.category));
    f.from_lane = lane_map[f.from_lane];
    f.to_lane = lane_map[f.to_lane];
    dst.flows.push_back(f);
  }
}

}  // namespace

NameId Recorder::intern(std::string_view s) {
  State& st = state();
  std::lock_guard lock(st.mu);
  if (auto it = st.name_index.find(s); it != st.name_index.end()) return it->second;
  const auto id = static_cast<NameId>(st.names.size());
  st.names.emplace_back(s);
  st.name_index.emplace(st.names.back(), id);
  return id;
}

std::string_view Recorder::name(NameId id) const {
  State& st = state();
  std::lock_guard lock(st.mu);
  return id < st.names.size() ? std::string_view(st.names[id]) : std::string_view();
}

void Recorder::set_process_name(std::string name) {
  std::lock_guard lock(state().mu);
  state().process_name = std::move(name);
}

void Recorder::set_thread_name(std::string_view name) {
  ThreadBuffer& b = this_thread_buffer();
  {
    std::lock_guard lock(b.meta_mu);
    b.name = name;
  }
  // The kernel's name is limited to 15 characters; it helps debuggers and top.
  std::string short_name(name.substr(0, 15));
  pthread_setname_np(pthread_self(), short_name.c_str());
}

void Recorder::set_thread_sort_index(int64_t index) {
  ThreadBuffer& b = this_thread_buffer();
  std::lock_guard lock(b.meta_mu);
  b.sort_index = index;
}

void Recorder::start() {
  State& st = state();
  std::lock_guard lock(st.mu);
  detail::recording_generation.fetch_add(1, std::memory_order_acq_rel);
  st.foreign.clear();
  st.dropped_total.store(0, std::memory_order_relaxed);
  // Buffers of threads that have ended hold only old events now: release them.
  std::erase_if(st.buffers, [](const std::shared_ptr<ThreadBuffer>& b) {
    return b->exited.load(std::memory_order_acquire);
  });
  for (auto& b : st.buffers)
    b->dropped.store(0, std::memory_order_relaxed);
  enabled_.store(true, std::memory_order_release);
}

Trace Recorder::stop() {
  enabled_.store(false, std::memory_order_release);
  return snapshot();
}

Trace Recorder::snapshot() {
  State& st = state();
  const TickMapping map;
  Trace t;
  t.metadata["format"] = "pipeprof";
  std::lock_guard lock(st.mu);
  const uint64_t gen = detail::recording_generation.load(std::memory_order_acquire);
  const int64_t pid = ::getpid();
  const uint32_t proc = t.process(pid);
  t.processes[proc].name = st.process_name;
  // Our names keep their ids in the trace's string table: intern them all in order first.
  for (const auto& n : st.names)
    t.strings.intern(n);
  std::unordered_map<NameId, std::vector<std::pair<int64_t, double>>> counters;
  std::unordered_map<uint64_t, std::pair<uint32_t, int64_t>> flow_starts;
  std::vector<std::tuple<uint64_t, NameId, uint32_t, int64_t>> flow_ends;
  const NameId args_none = kNoArg;
  for (const auto& b : st.buffers) {
    if (b->generation.load(std::memory_order_acquire) != gen) continue;
    const size_t n = b->count.load(std::memory_order_acquire);
    if (b->generation.load(std::memory_order_acquire) != gen) continue;
    const uint32_t lane = t.thread_lane(pid, b->tid);
    {
      std::lock_guard meta(b->meta_mu);
      t.lanes[lane].name = b->name.empty() ? "thread " + std::to_string(b->tid) : b->name;
      t.lanes[lane].sort_index = b->sort_index;
    }
    for (size_t i = 0; i < n; ++i) {
      const Event& e =
          b->chunks[i / kChunkEvents].load(std::memory_order_acquire)[i % kChunkEvents];
      switch (e.kind) {
        case Kind::kSpan: {
          Span s;
          s.start_ns = map.to_ns(e.start);
          s.dur_ns = std::max<int64_t>(0, map.to_ns(e.end) - s.start_ns);
          s.name = e.name;
          s.category = e.category;
          if (e.arg0_key != args_none) {
            std::string a =
                "{\"" + json_escape(st.names[e.arg0_key]) + "\":" + std::to_string(e.arg0);
            if (e.arg1_key != args_none)
              a += ",\"" + json_escape(st.names[e.arg1_key]) + "\":" + std::to_string(e.arg1);
            s.args = t.add_args(a + "}");
          }
          t.lanes[lane].spans.push_back(s);
          break;
        }
        case Kind::kInstant:
          t.lanes[lane].instants.push_back({map.to_ns(e.start), e.name, e.category, kNoArgs});
          break;
        case Kind::kCounter:
          counters[e.name].emplace_back(map.to_ns(e.start), std::bit_cast<double>(e.arg0));
          break;
        case Kind::kFlowStart:
          flow_starts[static_cast<uint64_t>(e.arg0)] = {lane, map.to_ns(e.start)};
          break;
        case Kind::kFlowEnd:
          flow_ends.emplace_back(static_cast<uint64_t>(e.arg0), e.name, lane, map.to_ns(e.start));
          break;
      }
    }
  }
  for (auto& [name, points] : counters) {
    Counter c;
    c.process = proc;
    c.name = st.names[name];
    c.points = std::move(points);
    t.counters.push_back(std::move(c));
  }
  const StrId flow_cat = t.strings.intern("flow");
  for (const auto& [id, name, lane, ts] : flow_ends) {
    const auto it = flow_starts.find(id);
    if (it == flow_starts.end()) continue;
    t.flows.push_back({id, name, flow_cat, it->second.first, it->second.second, lane, ts});
  }
  for (const Trace& f : st.foreign)
    merge_into(t, f);
  t.finalize();
  return t;
}

void Recorder::merge_process_trace(Trace trace) {
  if (!enabled()) return;
  std::lock_guard lock(state().mu);
  state().foreign.push_back(std::move(trace));
}

int64_t Recorder::dropped() const {
  return state().dropped_total.load(std::memory_order_relaxed);
}

void Recorder::span(NameId name, NameId category, int64_t start_ticks, int64_t end_ticks) {
  span(name, category, start_ticks, end_ticks, kNoArg, 0);
}

void Recorder::span(NameId name, NameId category, int64_t start_ticks, int64_t end_ticks,
                    NameId arg0_key, int64_t arg0, NameId arg1_key, int64_t arg1) {
  if (!enabled()) return;
  detail::append(
      {start_ticks, end_ticks, name, category, Kind::kSpan, arg0_key, arg0, arg1_key, arg1});
}

void Recorder::instant(NameId name, NameId category) {
  if (!enabled()) return;
  const int64_t now = ticks();
  detail::append({now, now, name, category, Kind::kInstant, kNoArg, 0, kNoArg, 0});
}

void Recorder::counter(NameId name, double value) {
  if (!enabled()) return;
  const int64_t now = ticks();
  detail::append(
      {now, now, name, kNoArg, Kind::kCounter, kNoArg, std::bit_cast<int64_t>(value), kNoArg, 0});
}

void Recorder::flow_start(NameId name, uint64_t id) {
  if (!enabled()) return;
  const int64_t now = ticks();
  detail::append(
      {now, now, name, kNoArg, Kind::kFlowStart, kNoArg, static_cast<int64_t>(id), kNoArg, 0});
}

void Recorder::flow_end(NameId name, uint64_t id) {
  if (!enabled()) return;
  const int64_t now = ticks();
  detail::append(
      {now, now, name, kNoArg, Kind::kFlowEnd, kNoArg, static_cast<int64_t>(id), kNoArg, 0});
}

#if defined(PIPEPROF_HAVE_NVTX)
namespace {
bool nvtx_tool_attached() {
  const char* path = std::getenv("NVTX_INJECTION64_PATH");
  return path != nullptr && path[0] != '\0';
}
}  // namespace
const bool detail::nvtx_attached = nvtx_tool_attached();

void detail::nvtx_push(NameId name) noexcept {
  nvtxEventAttributes_t attr{};
  attr.version = NVTX_VERSION;
  attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
  const std::string_view n = Recorder::global().name(name);
  attr.message.ascii = n.data();  // interned strings are stable and NUL-terminated
  nvtxDomainRangePushEx(nvtx_domain(), &attr);
}
void detail::nvtx_pop() noexcept {
  nvtxDomainRangePop(nvtx_domain());
}
#else
const bool detail::nvtx_attached = false;
void detail::nvtx_push(NameId) noexcept {}
void detail::nvtx_pop() noexcept {}
#endif

namespace category {
NameId pipeline() {
  static const NameId id = Recorder::global().intern("pipeline");
  return id;
}
NameId wait() {
  static const NameId id = Recorder::global().intern("wait");
  return id;
}
NameId step() {
  static const NameId id = Recorder::global().intern("step");
  return id;
}
NameId gpu() {
  static const NameId id = Recorder::global().intern("gpu");
  return id;
}
NameId cuda_api() {
  static const NameId id = Recorder::global().intern("cuda_api");
  return id;
}
}  // namespace category

}  // namespace pipeprof::trace
