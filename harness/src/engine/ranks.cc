#include "pipeprof/harness/ranks.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>
#include <utility>

#include "pipeprof/harness/errors.h"
#include "pipeprof/trace/chrome_json.h"
#include "pipeprof/trace/merge.h"

namespace pipeprof::harness {
namespace {

RankFailure default_classify(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const InputError& e) {
    return {.message = e.what(), .input = true};
  } catch (const std::exception& e) {
    return {.message = e.what(), .input = false};
  } catch (...) {
    return {.message = "an unknown error", .input = false};
  }
}

// The trace as Chrome JSON on the clock the ping-pong measured: its own, plus the test skew.
std::string trace_json(const trace::Trace& trace, int64_t skew) {
  std::ostringstream json;
  if (skew == 0) {
    trace::write_chrome_json(trace, json);
    return json.str();
  }
  trace::Trace t = trace;
  for (trace::Lane& l : t.lanes) {
    for (trace::Span& s : l.spans)
      s.start_ns += skew;
    for (trace::Instant& i : l.instants)
      i.ts_ns += skew;
  }
  for (trace::Counter& k : t.counters) {
    for (auto& p : k.points)
      p.first += skew;
  }
  for (trace::Flow& f : t.flows) {
    f.from_ns += skew;
    f.to_ns += skew;
  }
  trace::write_chrome_json(t, json);
  return json.str();
}

nlohmann::json consumers_json(const std::vector<ConsumerRecord>& consumers, int64_t skew) {
  nlohmann::json out = nlohmann::json::array();
  for (const ConsumerRecord& a : consumers) {
    nlohmann::json epochs = nlohmann::json::array();
    for (const EpochRecord& e : a.epochs) {
      nlohmann::json steps = nlohmann::json::array();
      for (const StepRecord& s : e.steps)
        steps.push_back({s.load_ns, s.compute_ns, s.proc_ns, s.barrier_ns, s.samples, s.bytes});
      epochs.push_back({{"epoch", e.epoch},
                        {"start_ns", e.start_ns + skew},
                        {"end_ns", e.end_ns + skew},
                        {"bytes_read", e.bytes_read},
                        {"complete", e.complete},
                        {"steps", std::move(steps)}});
    }
    out.push_back({{"rank", a.rank}, {"epochs", std::move(epochs)}, {"autotune", a.autotune}});
  }
  return out;
}

ConsumerRecord consumer_from_json(const nlohmann::json& j, const std::vector<trace::ClockOffset>& offsets) {
  ConsumerRecord a;
  a.rank = j.at("rank").get<int64_t>();
  a.autotune = j.at("autotune");
  for (const nlohmann::json& je : j.at("epochs")) {
    EpochRecord e;
    e.epoch = je.at("epoch").get<int64_t>();
    e.start_ns = je.at("start_ns").get<int64_t>();
    e.start_ns += trace::offset_at(offsets, e.start_ns);
    e.end_ns = je.at("end_ns").get<int64_t>();
    e.end_ns += trace::offset_at(offsets, e.end_ns);
    e.bytes_read = je.at("bytes_read").get<int64_t>();
    e.complete = je.at("complete").get<bool>();
    for (const nlohmann::json& s : je.at("steps")) {
      e.steps.push_back(StepRecord{.load_ns = s.at(0).get<int64_t>(),
                                   .compute_ns = s.at(1).get<int64_t>(),
                                   .proc_ns = s.at(2).get<int64_t>(),
                                   .barrier_ns = s.at(3).get<int64_t>(),
                                   .samples = s.at(4).get<int64_t>(),
                                   .bytes = s.at(5).get<int64_t>()});
    }
    a.epochs.push_back(std::move(e));
  }
  return a;
}

}  // namespace

nlohmann::json rank_report_json(const RankReport& r) {
  const int64_t skew = cluster::rank_clock_skew_ns();
  nlohmann::json out{{"rank", r.rank},
                     {"host", r.host},
                     {"error", nullptr},
                     {"interrupted", r.interrupted},
                     {"realtime", r.realtime},
                     {"cpu_ms", r.cpu_ms},
                     {"notes", r.notes},
                     {"consumers", consumers_json(r.consumers, skew)},
                     {"figures", nullptr}};
  if (r.error) out["error"] = {{"message", r.error->message}, {"input", r.error->input}};
  if (r.figures) {
    const RankFigures& f = *r.figures;
    out["figures"] = {{"median_wall_ms", f.median_wall_ms},
                      {"elements", f.elements},
                      {"samples_per_second", f.samples_per_second},
                      {"au_percentage", f.au_percentage},
                      {"wait_mean_ms", f.wait_mean_ms}};
  }
  if (r.trace) out["trace"] = trace_json(*r.trace, skew);
  if (!r.payload.empty()) out["payload"] = r.payload;
  return out;
}

RankReport rank_report_from_json(const nlohmann::json& j, const std::vector<trace::ClockOffset>& offsets) {
  RankReport r;
  r.rank = j.at("rank").get<int>();
  r.host = j.at("host").get<std::string>();
  if (!j.at("error").is_null()) {
    r.error = RankFailure{.message = j["error"].at("message").get<std::string>(),
                          .input = j["error"].at("input").get<bool>()};
  }
  r.interrupted = j.at("interrupted").get<bool>();
  r.realtime = j.at("realtime").get<bool>();
  r.cpu_ms = j.at("cpu_ms").get<double>();
  r.notes = j.at("notes").get<std::vector<std::string>>();
  if (const auto p = j.find("payload"); p != j.end()) r.payload = p->get<std::string>();
  for (const nlohmann::json& a : j.at("consumers"))
    r.consumers.push_back(consumer_from_json(a, offsets));
  if (const nlohmann::json& f = j.at("figures"); !f.is_null()) {
    r.figures = RankFigures{.median_wall_ms = f.at("median_wall_ms").get<double>(),
                            .elements = f.at("elements").get<int64_t>(),
                            .samples_per_second = f.at("samples_per_second").get<double>(),
                            .au_percentage = f.at("au_percentage").get<double>(),
                            .wait_mean_ms = f.at("wait_mean_ms").get<double>()};
  }
  if (j.contains("trace")) {
    r.trace = std::make_shared<trace::Trace>(
        trace::parse_chrome_json(j["trace"].get<std::string>(), fmt::format("rank {}'s trace", r.rank)));
  }
  return r;
}

std::vector<trace::ClockOffset> clock_offsets(int rank, const std::vector<cluster::ClockSync>& start,
                                              const std::vector<cluster::ClockSync>& end) {
  std::vector<trace::ClockOffset> offsets;
  for (const auto* syncs : {&start, &end}) {
    for (const cluster::ClockSync& s : *syncs) {
      if (s.rank == rank && rank != 0) {
        offsets.push_back({.at_ns = s.at_ns - s.offset_ns, .offset_ns = s.offset_ns, .error_ns = s.error_ns});
      }
    }
  }
  return offsets;
}

RankRun run_on_ranks(cluster::Cluster& ranks, const std::function<RankReport()>& body,
                     const RankRunOptions& options) {
  const ErrorClassifier classify = options.classify ? options.classify : ErrorClassifier(default_classify);
  RankRun out;
  std::exception_ptr error = options.failed_before;
  const bool any_failed = ranks.agree_stop(error != nullptr, options.stop);
  const std::vector<cluster::ClockSync> sync_start = ranks.sync_clocks(50, options.stop);
  if (!any_failed) {
    try {
      out.mine = body();
    } catch (...) {
      error = std::current_exception();
    }
  }
  const std::vector<cluster::ClockSync> sync_end = ranks.sync_clocks(50, options.stop);
  out.mine.rank = ranks.rank();
  out.mine.host = ranks.host();
  if (error) out.mine.error = classify(error);

  std::vector<std::string> parts;
  if (!ranks.broken()) {
    // Rank 0's own trace and records stay where they are; the others travel as JSON.
    nlohmann::json wire;
    if (ranks.rank() == 0) {
      const RankReport bare{.rank = out.mine.rank,
                            .host = out.mine.host,
                            .error = out.mine.error,
                            .interrupted = out.mine.interrupted,
                            .realtime = out.mine.realtime,
                            .cpu_ms = out.mine.cpu_ms,
                            .notes = out.mine.notes};
      wire = rank_report_json(bare);
    } else {
      wire = rank_report_json(out.mine);
    }
    try {
      parts = ranks.gather(wire.dump(), options.stop);
    } catch (const std::exception&) {
      if (!ranks.broken()) throw;
    }
  }
  if (ranks.broken()) {
    out.broken = true;
    return out;
  }
  if (ranks.rank() != 0) return out;

  std::vector<trace::RankTrace> traces;
  for (const std::string& part : parts) {
    const nlohmann::json j = nlohmann::json::parse(part);
    const int rank = j.at("rank").get<int>();
    std::vector<trace::ClockOffset> offsets = clock_offsets(rank, sync_start, sync_end);
    for (const trace::ClockOffset& o : offsets)
      out.clock_error_ns = std::max(out.clock_error_ns, o.error_ns);
    RankReport r;
    if (rank == 0) {
      r = std::move(out.mine);
      out.mine = RankReport{.rank = r.rank, .host = r.host, .error = r.error};
    } else {
      r = rank_report_from_json(j, offsets);
    }
    if (r.trace) {
      traces.push_back({.rank = r.rank, .host = r.host, .trace = std::move(*r.trace), .offsets = std::move(offsets)});
      r.trace.reset();
    }
    out.ranks.push_back(std::move(r));
  }
  std::stable_sort(out.ranks.begin(), out.ranks.end(),
                   [](const RankReport& a, const RankReport& b) { return a.rank < b.rank; });
  for (const RankReport& r : out.ranks) {
    if (r.error) {  // the lowest rank that failed, named
      out.failure = RankFailure{.message = fmt::format("rank {} @ {}: {}", r.rank, r.host, r.error->message),
                                .input = r.error->input};
      break;
    }
  }
  if (!traces.empty()) out.merged = std::make_shared<trace::Trace>(trace::merge_ranks(std::move(traces)));
  return out;
}

void sum_up(RanksSummary& s) {
  s.samples_per_second = 0;
  s.slowest_rank = -1;
  double slowest_rate = 0;
  size_t counted = 0;
  for (const RankRow& r : s.rows) {
    if (r.error) continue;
    s.samples_per_second += r.samples_per_second;
    ++counted;
    if (s.slowest_rank < 0 || r.samples_per_second < slowest_rate) {
      s.slowest_rank = r.rank;
      slowest_rate = r.samples_per_second;
    }
  }
  const double mean = counted == 0 ? 0 : s.samples_per_second / static_cast<double>(counted);
  s.slowest_behind_mean_percent = mean > 0 ? 100.0 * (mean - slowest_rate) / mean : 0.0;
}

std::string rank_table(const RanksSummary& s) {
  std::string out = fmt::format("{:>5}  {:<16} {:>12} {:>12} {:>8}\n", "rank", "host", "wall ms", "samples/s", "AU %");
  for (const RankRow& r : s.rows) {
    if (r.error) {
      out += fmt::format("{:>5}  {:<16} failed: {}\n", r.rank, r.host, *r.error);
      continue;
    }
    out += fmt::format("{:>5}  {:<16} {:>12} {:>12.1f} {:>8.1f}\n", r.rank, r.host,
                       r.median_wall_ms ? fmt::format("{:.1f}", *r.median_wall_ms) : std::string("-"),
                       r.samples_per_second, r.au_percentage);
  }
  const size_t n = s.rows.size();
  out += fmt::format("all ranks: {:.1f} samples/s ({} x {:.1f}); slowest rank {} ({:.1f}% below the mean)\n",
                     s.samples_per_second, n, n > 0 ? s.samples_per_second / static_cast<double>(n) : 0.0,
                     s.slowest_rank, s.slowest_behind_mean_percent);
  return out;
}

}  // namespace pipeprof::harness
