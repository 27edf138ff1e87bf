#include "workload/rank_gather.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <sstream>

#include "pipeprof/harness/errors.h"
#include "pipeprof/trace/chrome_json.h"
#include "pipeprof/trace/merge.h"

namespace pipeprof::harness::workload {
namespace {

nlohmann::json records_json(const std::vector<ConsumerRecord>& accelerators, int64_t skew) {
  nlohmann::json out = nlohmann::json::array();
  for (const ConsumerRecord& a : accelerators) {
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

ConsumerRecord record_from_json(const nlohmann::json& j,
                                   const std::vector<trace::ClockOffset>& offsets) {
  ConsumerRecord a;
  a.rank = j.at("rank").get<int64_t>();
  a.autotune = j.at("autotune");
  for (const nlohmann::json& je : j.at("epochs")) {
    EpochRecord e;
    e.epoch = je.at("epoch").get<int64_t>();
    // On rank 0's clock, as the merged trace puts them.
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

std::vector<trace::ClockOffset> clock_offsets(int rank, const std::vector<cluster::ClockSync>& start,
                                              const std::vector<cluster::ClockSync>& end) {
  std::vector<trace::ClockOffset> offsets;
  for (const auto* syncs : {&start, &end}) {
    for (const cluster::ClockSync& s : *syncs) {
      if (s.rank == rank && rank != 0) {
        offsets.push_back(
            {.at_ns = s.at_ns - s.offset_ns, .offset_ns = s.offset_ns, .error_ns = s.error_ns});
      }
    }
  }
  return offsets;
}

std::string rank_trace_json(const trace::Trace& trace) {
  const int64_t skew = cluster::rank_clock_skew_ns();
  std::ostringstream json;
  if (skew == 0) {
    trace::write_chrome_json(trace, json);
    return json.str();
  }
  trace::Trace t = trace;  // this rank's "host clock" (PIPEPROF_CLOCK_SKEW_NS)
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

Slowest slowest_rank(const std::vector<std::pair<int, double>>& rates) {
  Slowest s;
  double sum = 0, slowest_rate = 0;
  for (const auto& [rank, rate] : rates) {
    sum += rate;
    if (s.rank < 0 || rate < slowest_rate) {
      s.rank = rank;
      slowest_rate = rate;
    }
  }
  const double mean = rates.empty() ? 0 : sum / static_cast<double>(rates.size());
  s.behind_mean_percent = mean > 0 ? 100.0 * (mean - slowest_rate) / mean : 0.0;
  return s;
}

std::string rank_report(const cluster::Cluster& c, const TrainRun& run, std::exception_ptr error,
                        double cpu_ms) {
  const int64_t skew = cluster::rank_clock_skew_ns();
  nlohmann::json out{{"rank", c.rank()},
                     {"host", c.host()},
                     {"accelerators", records_json(run.accelerators, skew)},
                     {"notes", run.notes},
                     {"interrupted", run.interrupted},
                     {"realtime", run.realtime},
                     {"cpu_ms", cpu_ms},
                     {"error", nullptr}};
  if (error) {
    try {
      std::rethrow_exception(error);
    } catch (const InputError& e) {
      out["error"] = {{"kind", "input"}, {"message", e.what()}};
    } catch (const std::exception& e) {
      out["error"] = {{"kind", "run"}, {"message", e.what()}};
    } catch (...) {
      out["error"] = {{"kind", "run"}, {"message", "an unknown error"}};
    }
  }
  if (run.trace && c.rank() != 0) out["trace"] = rank_trace_json(*run.trace);
  return out.dump();
}

GatheredRanks gather_ranks(const std::vector<std::string>& reports, TrainRun local,
                           const std::vector<cluster::ClockSync>& start,
                           const std::vector<cluster::ClockSync>& end) {
  GatheredRanks g;
  g.run.files = std::move(local.files);
  g.run.spec = std::move(local.spec);
  g.run.realtime = true;
  g.ranks = nlohmann::json::array();
  std::vector<trace::RankTrace> traces;
  for (size_t r = 0; r < reports.size(); ++r) {
    const nlohmann::json rep = nlohmann::json::parse(reports[r]);
    const int rank = rep.at("rank").get<int>();
    const std::string host = rep.at("host").get<std::string>();
    std::vector<trace::ClockOffset> offsets = clock_offsets(rank, start, end);
    for (const trace::ClockOffset& o : offsets)
      g.clock_error_ns = std::max(g.clock_error_ns, o.error_ns);
    nlohmann::json row{{"rank", rank}, {"host", host}, {"cpu_ms", rep.at("cpu_ms")}};
    int64_t accelerators = 0;
    if (rank == 0) {
      for (ConsumerRecord& a : local.accelerators) {
        g.run.accelerators.push_back(std::move(a));
        ++accelerators;
      }
    } else {
      for (const nlohmann::json& a : rep.at("accelerators")) {
        g.run.accelerators.push_back(record_from_json(a, offsets));
        ++accelerators;
      }
    }
    row["accelerators"] = accelerators;
    for (const nlohmann::json& n : rep.at("notes"))
      g.run.notes.push_back(fmt::format("rank {}: {}", rank, n.get<std::string>()));
    g.run.interrupted = g.run.interrupted || rep.at("interrupted").get<bool>();
    g.run.realtime = g.run.realtime && rep.at("realtime").get<bool>();
    g.cpu_ms += rep.at("cpu_ms").get<double>();
    if (!rep.at("error").is_null()) {
      row["error"] = rep["error"]["message"];
      if (g.error.empty()) {
        g.error = fmt::format("rank {} @ {}: {}", rank, host,
                              rep["error"]["message"].get<std::string>());
        g.error_is_input = rep["error"]["kind"] == "input";
      }
    }
    if (rank == 0 && local.trace) {
      traces.push_back({.rank = 0, .host = host, .trace = std::move(*local.trace), .offsets = {}});
    } else if (rep.contains("trace")) {
      traces.push_back({.rank = rank,
                        .host = host,
                        .trace = trace::parse_chrome_json(rep["trace"].get<std::string>(),
                                                          fmt::format("rank {}'s trace", rank)),
                        .offsets = std::move(offsets)});
    }
    g.ranks.push_back(std::move(row));
  }
  std::stable_sort(g.run.accelerators.begin(), g.run.accelerators.end(),
                   [](const ConsumerRecord& a, const ConsumerRecord& b) { return a.rank < b.rank; });
  if (!traces.empty()) g.run.trace = std::make_shared<trace::Trace>(trace::merge_ranks(std::move(traces)));
  return g;
}

nlohmann::json rank_summary(const GatheredRanks& g, const std::vector<double>& accelerator_au,
                            const std::vector<double>& accelerator_throughput,
                            int64_t accelerators_per_rank) {
  nlohmann::json rows = nlohmann::json::array();
  std::vector<std::pair<int, double>> rates;
  for (const nlohmann::json& r : g.ranks) {
    nlohmann::json row = r;
    const auto rank = r.at("rank").get<size_t>();
    double au = 0, tp = 0;
    int64_t n = 0;
    for (size_t k = rank * static_cast<size_t>(accelerators_per_rank);
         k < (rank + 1) * static_cast<size_t>(accelerators_per_rank) && k < accelerator_au.size();
         ++k, ++n) {
      au += accelerator_au[k];
      tp += accelerator_throughput[k];
    }
    row["au_percentage"] = n > 0 ? au / static_cast<double>(n) : 0.0;
    row["throughput_samples_per_second"] = tp;
    rates.emplace_back(static_cast<int>(rank), tp);
    rows.push_back(std::move(row));
  }
  double sum = 0;
  for (const auto& [rank, rate] : rates)
    sum += rate;
  const Slowest slowest = slowest_rank(rates);
  return {{"ranks", rows},
          {"throughput_samples_per_second", sum},
          {"slowest_rank", slowest.rank},
          {"slowest_behind_mean_percent", slowest.behind_mean_percent},
          {"clock_error_ns", g.clock_error_ns}};
}

}  // namespace pipeprof::harness::workload
