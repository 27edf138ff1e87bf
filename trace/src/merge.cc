#include "pipeprof/trace/merge.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>

namespace pipeprof::trace {

int64_t offset_at(const std::vector<ClockOffset>& offsets, int64_t t_ns) {
  if (offsets.empty()) return 0;
  const ClockOffset& a = offsets.front();
  const ClockOffset& b = offsets.back();
  if (offsets.size() == 1 || b.at_ns <= a.at_ns || t_ns <= a.at_ns) return a.offset_ns;
  if (t_ns >= b.at_ns) return b.offset_ns;
  const double f = static_cast<double>(t_ns - a.at_ns) / static_cast<double>(b.at_ns - a.at_ns);
  return a.offset_ns + static_cast<int64_t>(f * static_cast<double>(b.offset_ns - a.offset_ns));
}

Trace merge_ranks(std::vector<RankTrace> ranks) {
  std::sort(ranks.begin(), ranks.end(),
            [](const RankTrace& a, const RankTrace& b) { return a.rank < b.rank; });
  Trace out;
  if (!ranks.empty()) out.metadata = ranks.front().trace.metadata;
  int64_t max_error = 0;
  nlohmann::json offsets = nlohmann::json::array();
  for (RankTrace& r : ranks) {
    const Trace& in = r.trace;
    auto shift = [&r](int64_t t) { return t + offset_at(r.offsets, t); };
    auto str = [&](StrId id) { return id == kNoStr ? kNoStr : out.strings.intern(in.strings.str(id)); };
    auto args = [&](uint32_t a) {
      return a == kNoArgs || a >= in.args.size() ? kNoArgs : out.add_args(in.args[a]);
    };
    // The rank's processes: the first is the rank, the others are named after it.
    std::vector<int64_t> pid_of(in.processes.size());
    for (size_t p = 0; p < in.processes.size(); ++p) {
      const int64_t pid = p == 0 ? r.rank : 1'000'000 + static_cast<int64_t>(r.rank) * 1000 +
                                                static_cast<int64_t>(p);
      pid_of[p] = pid;
      Process& np = out.processes[out.process(pid)];
      np.name = p == 0 ? fmt::format("rank {} @ {}", r.rank, r.host)
                       : fmt::format("rank {} @ {}: {}", r.rank, r.host, in.processes[p].name);
      np.sort_index = static_cast<int64_t>(r.rank) * 1000 + static_cast<int64_t>(p);
    }
    std::vector<uint32_t> lane_of(in.lanes.size());
    for (size_t l = 0; l < in.lanes.size(); ++l) {
      const Lane& src = in.lanes[l];
      const int64_t pid = src.process < pid_of.size() ? pid_of[src.process] : r.rank;
      const uint32_t idx = src.kind == LaneKind::kGpuStream
                               ? out.gpu_lane(pid, src.device, src.stream)
                               : out.thread_lane(pid, src.tid);
      lane_of[l] = idx;
      Lane& dst = out.lanes[idx];
      dst.name = src.name;
      dst.sort_index = src.sort_index;
      dst.spans.reserve(dst.spans.size() + src.spans.size());
      for (const Span& s : src.spans) {
        Span n = s;
        n.start_ns = shift(s.start_ns);
        n.name = str(s.name);
        n.category = str(s.category);
        n.args = args(s.args);
        dst.spans.push_back(n);
      }
      for (const Instant& i : src.instants) {
        Instant n = i;
        n.ts_ns = shift(i.ts_ns);
        n.name = str(i.name);
        n.category = str(i.category);
        n.args = args(i.args);
        dst.instants.push_back(n);
      }
    }
    for (const Counter& c : in.counters) {
      Counter n;
      n.process = out.process(c.process < pid_of.size() ? pid_of[c.process] : r.rank);
      n.name = c.name;
      for (const auto& [t, v] : c.points)
        n.points.emplace_back(shift(t), v);
      out.counters.push_back(std::move(n));
    }
    for (const Flow& f : in.flows) {
      Flow n = f;
      n.id = (static_cast<uint64_t>(r.rank) << 48) ^ f.id;
      n.name = str(f.name);
      n.category = str(f.category);
      n.from_lane = lane_of.at(f.from_lane);
      n.to_lane = lane_of.at(f.to_lane);
      n.from_ns = shift(f.from_ns);
      n.to_ns = shift(f.to_ns);
      out.flows.push_back(n);
    }
    nlohmann::json o = {{"rank", r.rank}, {"host", r.host}, {"measures", nlohmann::json::array()}};
    for (const ClockOffset& c : r.offsets) {
      max_error = std::max(max_error, c.error_ns);
      o["measures"].push_back(
          {{"at_ns", c.at_ns}, {"offset_ns", c.offset_ns}, {"error_ns", c.error_ns}});
    }
    offsets.push_back(std::move(o));
  }
  out.metadata["ranks"] = std::to_string(ranks.size());
  out.metadata["clock_error_ns"] = std::to_string(max_error);
  out.metadata["clock_offsets"] = offsets.dump();
  out.metadata["clock"] = "rank 0's CLOCK_MONOTONIC (others moved by ping-pong offsets)";
  out.finalize();
  return out;
}

namespace {

// "rank 12 @ host" -> 12; -1 for other names (and a rank's further processes, "...: name").
int rank_of(const std::string& name) {
  constexpr std::string_view kPrefix = "rank ";
  if (name.rfind(kPrefix, 0) != 0 || name.find(": ") != std::string::npos) return -1;
  int rank = -1;
  const char* begin = name.data() + kPrefix.size();
  const auto [end, ec] = std::from_chars(begin, name.data() + name.size(), rank);
  if (ec != std::errc() || end == begin) return -1;
  return rank;
}

}  // namespace

std::optional<Straggler> barrier_straggler(const Trace& merged) {
  const StrId barrier = merged.strings.find("barrier");
  if (barrier == kNoStr) return std::nullopt;
  Straggler s;
  for (const Process& p : merged.processes) {
    const int rank = rank_of(p.name);
    if (rank < 0) continue;
    RankBarrierWait w{.rank = rank, .process = p.name};
    int64_t ns = 0;
    for (const uint32_t l : p.lanes) {
      for (const Span& span : merged.lanes[l].spans) {
        if (span.name != barrier) continue;
        ns += span.dur_ns;
        ++w.barriers;
      }
    }
    if (w.barriers == 0) continue;
    w.wait_ms = static_cast<double>(ns) / 1e6;
    w.mean_wait_ms = w.wait_ms / static_cast<double>(w.barriers);
    s.ranks.push_back(std::move(w));
  }
  if (s.ranks.size() < 2) return std::nullopt;
  std::sort(s.ranks.begin(), s.ranks.end(),
            [](const RankBarrierWait& a, const RankBarrierWait& b) { return a.rank < b.rank; });
  const auto least = std::min_element(
      s.ranks.begin(), s.ranks.end(),
      [](const RankBarrierWait& a, const RankBarrierWait& b) { return a.mean_wait_ms < b.mean_wait_ms; });
  s.rank = least->rank;
  double others = 0;
  for (const RankBarrierWait& w : s.ranks) {
    if (w.rank != s.rank) others += w.mean_wait_ms;
  }
  others /= static_cast<double>(s.ranks.size() - 1);
  s.behind_ms_per_barrier = others - least->mean_wait_ms;
  s.text = fmt::format(
      "straggler: rank {} ({}): it waits {:.3f} ms per barrier, the other ranks {:.3f} ms: they "
      "wait for it, and its steps take {:.3f} ms longer than theirs",
      s.rank, least->process, least->mean_wait_ms, others, s.behind_ms_per_barrier);
  return s;
}

nlohmann::json to_json(const Straggler& s) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const RankBarrierWait& w : s.ranks) {
    ranks.push_back({{"rank", w.rank},
                     {"process", w.process},
                     {"barriers", w.barriers},
                     {"barrier_wait_ms", w.wait_ms},
                     {"mean_barrier_wait_ms", w.mean_wait_ms}});
  }
  return {{"straggler", s.rank}, {"behind_ms_per_barrier", s.behind_ms_per_barrier},
          {"ranks", ranks}, {"text", s.text}};
}

}  // namespace pipeprof::trace
