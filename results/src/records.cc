#include "pipeprof/results/records.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>

namespace pipeprof::results {
namespace {

using namespace json_read;

constexpr std::array<std::pair<EntryKind, const char*>, 6> kKinds{{
    {EntryKind::kExperiment, "experiment"},
    {EntryKind::kWorkload, "workload"},
    {EntryKind::kPeer, "peer"},
    {EntryKind::kGrowingCache, "growing_cache"},
    {EntryKind::kScaleout, "scaleout"},
    {EntryKind::kLoaderWatch, "loader_watch"},
}};

// ---- writing --------------------------------------------------------------------------------

template <class T>
void put(nlohmann::json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

template <class T, class Write>
nlohmann::json array_of(const std::vector<T>& items, Write write) {
  nlohmann::json out = nlohmann::json::array();
  for (const T& item : items)
    out.push_back(write(item));
  return out;
}

// ---- the records ----------------------------------------------------------------------------

RankRow rank_from_json(const nlohmann::json& j, const JsonAt& at) {
  object(j, at);
  RankRow r;
  r.rank = static_cast<int>(integer(j, "rank", at));
  r.host = text(j, "host", at);
  // Workload results before the one rank path named the rate "throughput_samples_per_second".
  r.samples_per_second = find(j, "samples_per_second") ? number(j, "samples_per_second", at)
                                                       : number(j, "throughput_samples_per_second", at);
  r.au_percentage = number(j, "au_percentage", at);
  r.interrupted = flag(j, "interrupted", at, false);
  r.error = opt_text(j, "error", at);
  r.median_wall_ms = opt_number(j, "median_wall_ms", at);
  r.wait_mean_ms = opt_number(j, "wait_mean_ms", at);
  r.elements = opt_integer(j, "elements", at);
  r.accelerators = opt_integer(j, "accelerators", at);
  r.cpu_ms = opt_number(j, "cpu_ms", at);
  return r;
}

DlioFigures dlio_from_json(const nlohmann::json& j, const JsonAt& at) {
  DlioFigures d;
  d.au_percentage = numbers(j, "train_au_percentage", at);
  d.throughput = numbers(j, "train_throughput_samples_per_second", at);
  d.au_mean_percentage = number(j, "train_au_mean_percentage", at);
  d.au_stdev_percentage = opt_number(j, "train_au_stdev_percentage", at).value_or(0);
  d.throughput_mean = number(j, "train_throughput_mean_samples_per_second", at);
  d.throughput_stdev = opt_number(j, "train_throughput_stdev_samples_per_second", at).value_or(0);
  d.io_mean_mb_per_s = number(j, "train_io_mean_MB_per_second", at);
  d.io_stdev_mb_per_s = opt_number(j, "train_io_stdev_MB_per_second", at).value_or(0);
  const std::string meets = text(j, "train_au_meet_expectation", at);
  if (meets != "success" && meets != "fail")
    at.at("train_au_meet_expectation").fail(fmt::format("expected \"success\" or \"fail\", got \"{}\"", meets));
  d.meets_au = meets == "success";
  return d;
}


CacheCounters cache_from_json(const nlohmann::json& j, const JsonAt& at) {
  CacheCounters c;
  c.hits = integer(j, "hits", at);
  c.misses = integer(j, "misses", at);
  c.bytes_fetched = opt_integer(j, "bytes_fetched", at).value_or(0);
  c.evictions = opt_integer(j, "evictions", at).value_or(0);
  c.damaged = opt_integer(j, "damaged", at).value_or(0);
  c.write_failures = opt_integer(j, "write_failures", at).value_or(0);
  c.too_large = opt_integer(j, "too_large", at).value_or(0);
  c.preloaded = opt_integer(j, "preloaded", at).value_or(0);
  c.preload_failures = opt_integer(j, "preload_failures", at).value_or(0);
  return c;
}

RemoteEpoch remote_epoch_from_json(const nlohmann::json& j, const JsonAt& at) {
  object(j, at);
  RemoteEpoch e;
  e.epoch = integer(j, "epoch", at);
  e.seconds = number(j, "seconds", at);
  e.ideal_seconds = number(j, "ideal_seconds", at);
  e.au_percentage = number(j, "au_percentage", at);
  e.remote_bytes = integer(j, "remote_bytes", at);
  e.requests = opt_integer(j, "requests", at).value_or(0);
  e.retries = opt_integer(j, "retries", at).value_or(0);
  e.cache_hits = opt_integer(j, "cache_hits", at);
  e.cache_misses = opt_integer(j, "cache_misses", at);
  e.cache_hit_ratio = opt_number(j, "cache_hit_ratio", at);
  return e;
}

RemoteRecord remote_from_json(const nlohmann::json& j, const JsonAt& at) {
  RemoteRecord r;
  r.mode = text(j, "mode", at);
  r.preload = flag(j, "preload", at, false);
  r.store = opt_text(j, "store", at);
  r.latency_ms = number(j, "latency_ms", at);
  r.rate_mib_s_per_request = number(j, "rate_mib_s_per_request", at);
  r.requests_in_flight = integer(j, "requests_in_flight", at);
  r.files = integer(j, "files", at);
  r.dataset_bytes = integer(j, "dataset_bytes", at);
  r.copy_seconds = opt_number(j, "copy_seconds", at);
  r.copy_ideal_seconds = opt_number(j, "copy_ideal_seconds", at);
  r.copy_bytes = opt_integer(j, "copy_bytes", at);
  r.copy_threads = opt_integer(j, "copy_threads", at);
  r.cache_budget_bytes = opt_integer(j, "cache_budget_bytes", at);
  r.cache = part(j, "cache", at, cache_from_json);
  r.time_to_first_step_seconds = opt_number(j, "time_to_first_step_seconds", at);
  r.time_to_first_step_ideal_seconds = number(j, "time_to_first_step_ideal_seconds", at);
  r.epochs = list(j, "epochs", at, remote_epoch_from_json);
  return r;
}


AcceleratorSearch search_from_json(const nlohmann::json& j, const JsonAt& at) {
  AcceleratorSearch s;
  s.max_accelerators = integer(j, "max_accelerators", at);
  s.limit = opt_integer(j, "limit", at).value_or(0);
  s.probes = list(j, "probes", at, [](const nlohmann::json& p, const JsonAt& a) {
    object(p, a);
    return SearchProbe{.accelerators = integer(p, "accelerators", a),
                       .au_percentage = number(p, "au_percentage", a),
                       .samples_per_second = opt_number(p, "throughput_samples_per_second", a),
                       .meets = flag(p, "meets", a, false),
                       .au_runs = find(p, "au_runs") ? numbers(p, "au_runs", a)
                                                     : std::vector<double>{}};
  });
  if (find(j, "storage_mib_per_s")) {  // pipeprof's own search measures the storage
    StorageBound b;
    b.mib_per_s = number(j, "storage_mib_per_s", at);
    b.samples_mib_per_s = numbers(j, "storage_samples_mib_per_s", at);
    b.cold = flag(j, "storage_cold", at, false);
    if (find(j, "storage_served")) b.served = text(j, "storage_served", at);
    b.demand_mib_per_s = number(j, "demand_mib_per_s", at);
    b.bound_accelerators = number(j, "bound_accelerators", at);
    s.storage = std::move(b);
  }
  s.prediction = part(j, "prediction", at, [](const nlohmann::json& p, const JsonAt& a) {
    object(p, a);
    return PredictionCheck{.storage = text(p, "storage", a),
                           .predicted = integer(p, "max_accelerators", a),
                           .binding = text(p, "binding", a),
                           .extrapolated = flag(p, "extrapolated", a, false),
                           .capped = flag(p, "capped", a, false),
                           .profile_mib_per_s = number(p, "profile_mib_per_s", a),
                           .error_percent = opt_number(p, "error_percent", a)};
  });
  return s;
}


StallRecord stall_from_json(const nlohmann::json& j, const JsonAt& at) {
  StallRecord s;
  s.epochs = list(j, "epochs", at, [](const nlohmann::json& e, const JsonAt& a) {
    object(e, a);
    return StallEpochRecord{.epoch = integer(e, "epoch", a),
                            .synthetic_s = number(e, "synthetic_s", a),
                            .warm_s = number(e, "warm_s", a),
                            .cold_s = number(e, "cold_s", a),
                            .fetch_stall_s = number(e, "fetch_stall_s", a),
                            .prep_stall_s = number(e, "prep_stall_s", a)};
  });
  s.synthetic_au_percentage = number(j, "synthetic_au_percentage", at);
  s.warm_au_percentage = number(j, "warm_au_percentage", at);
  s.cold_au_percentage = number(j, "cold_au_percentage", at);
  return s;
}

CheckpointRecord checkpoint_from_json(const nlohmann::json& j, const JsonAt& at) {
  object(j, at);
  CheckpointRecord c;
  c.model = text(j, "model", at);
  c.ranks = integer(j, "ranks", at);
  c.tensor = integer(j, "tensor", at);
  c.pipeline = integer(j, "pipeline", at);
  c.data = integer(j, "data", at);
  c.zero_stage = integer(j, "zero_stage", at);
  c.mode = text(j, "mode", at);
  c.parameters = opt_integer(j, "parameters", at).value_or(0);
  c.size_gib = number(j, "checkpoint_size_GB", at);
  c.files = integer(j, "files", at);
  c.bytes = integer(j, "bytes", at);
  c.folder = text(j, "folder", at);
  c.fsync = flag(j, "fsync", at, false);
  c.direct = flag(j, "direct", at, false);
  c.cold_reads = flag(j, "cold_reads", at, true);
  c.ops = list(j, "ops", at, [](const nlohmann::json& o, const JsonAt& a) {
    object(o, a);
    CheckpointOpRecord r{.kind = text(o, "kind", a),
                         .epoch = integer(o, "epoch", a),
                         .step = integer(o, "step", a),
                         .index = integer(o, "index", a),
                         .ranks = integer(o, "ranks", a),
                         .bytes = integer(o, "bytes", a),
                         .rank0_seconds = number(o, "rank0_seconds", a),
                         .slowest_seconds = number(o, "slowest_seconds", a),
                         .dlio_gib_per_s = number(o, "dlio_GB_per_second", a),
                         .gib_per_s = number(o, "GB_per_second", a)};
    if (r.kind != "save" && r.kind != "load") a.at("kind").fail("expected \"save\" or \"load\"");
    return r;
  });
  c.save_duration_mean_s = opt_number(j, "save_checkpoint_duration_mean_seconds", at);
  c.save_duration_stdev_s = opt_number(j, "save_checkpoint_duration_stdev_seconds", at);
  c.save_io_mean_gib_per_s = opt_number(j, "save_checkpoint_io_mean_GB_per_second", at);
  c.save_io_stdev_gib_per_s = opt_number(j, "save_checkpoint_io_stdev_GB_per_second", at);
  c.load_duration_mean_s = opt_number(j, "load_checkpoint_duration_mean_seconds", at);
  c.load_duration_stdev_s = opt_number(j, "load_checkpoint_duration_stdev_seconds", at);
  c.load_io_mean_gib_per_s = opt_number(j, "load_checkpoint_io_mean_GB_per_second", at);
  c.load_io_stdev_gib_per_s = opt_number(j, "load_checkpoint_io_stdev_GB_per_second", at);
  c.save_slowest_mean_s = opt_number(j, "save_slowest_rank_mean_seconds", at);
  c.save_gib_per_s = opt_number(j, "save_GB_per_second", at);
  c.load_slowest_mean_s = opt_number(j, "load_slowest_rank_mean_seconds", at);
  c.load_gib_per_s = opt_number(j, "load_GB_per_second", at);
  c.training_stall_s = opt_number(j, "training_stall_seconds", at);
  return c;
}

GrowingCacheRecord growing_from_json(const nlohmann::json& j, const JsonAt& at) {
  GrowingCacheRecord g;
  g.samplers = integer(j, "samplers", at);
  g.shard_samples = integer(j, "shard_samples", at);
  g.latency_ms = number(j, "latency_ms", at);
  g.rate_mib_s_per_request = number(j, "rate_mib_s_per_request", at);
  g.budget_mib = number(j, "budget_mib", at);
  g.time_to_first_step_seconds = number(j, "time_to_first_step_seconds", at);
  g.epochs = list(j, "epochs", at, [](const nlohmann::json& e, const JsonAt& a) {
    object(e, a);
    return GrowingEpochRecord{.epoch = integer(e, "epoch", a),
                              .shards = integer(e, "shards", a),
                              .samples = integer(e, "samples", a),
                              .steps = integer(e, "steps", a),
                              .evicted_shards = integer(e, "evicted_shards", a),
                              .bytes = integer(e, "bytes", a),
                              .seconds = number(e, "seconds", a),
                              .au_percentage = number(e, "au_percentage", a),
                              .wait_mean_ms = number(e, "wait_mean_ms", a),
                              .wait_p99_ms = number(e, "wait_p99_ms", a),
                              .deserialize_mb_per_s_per_thread =
                                  number(e, "deserialize_mb_per_s_per_thread", a)};
  });
  return g;
}


}  // namespace

nlohmann::json to_json(const DlioFigures& d) {
  return {{"train_au_percentage", d.au_percentage},
          {"train_au_mean_percentage", d.au_mean_percentage},
          {"train_au_meet_expectation", d.meets_au ? "success" : "fail"},
          {"train_au_stdev_percentage", d.au_stdev_percentage},
          {"train_throughput_samples_per_second", d.throughput},
          {"train_throughput_mean_samples_per_second", d.throughput_mean},
          {"train_throughput_stdev_samples_per_second", d.throughput_stdev},
          {"train_io_mean_MB_per_second", d.io_mean_mb_per_s},
          {"train_io_stdev_MB_per_second", d.io_stdev_mb_per_s}};
}

nlohmann::json to_json(const RemoteRecord& r) {
  nlohmann::json out{{"mode", r.mode},
                     {"preload", r.preload},
                     {"latency_ms", r.latency_ms},
                     {"rate_mib_s_per_request", r.rate_mib_s_per_request},
                     {"requests_in_flight", r.requests_in_flight},
                     {"files", r.files},
                     {"dataset_bytes", r.dataset_bytes}};
  put(out, "store", r.store);
  put(out, "copy_seconds", r.copy_seconds);
  put(out, "copy_bytes", r.copy_bytes);
  put(out, "copy_ideal_seconds", r.copy_ideal_seconds);
  put(out, "copy_threads", r.copy_threads);
  put(out, "cache_budget_bytes", r.cache_budget_bytes);
  if (r.cache) {
    const CacheCounters& c = *r.cache;
    out["cache"] = {{"hits", c.hits},
                    {"misses", c.misses},
                    {"bytes_fetched", c.bytes_fetched},
                    {"evictions", c.evictions},
                    {"damaged", c.damaged},
                    {"write_failures", c.write_failures},
                    {"too_large", c.too_large},
                    {"preloaded", c.preloaded},
                    {"preload_failures", c.preload_failures}};
  }
  put(out, "time_to_first_step_seconds", r.time_to_first_step_seconds);
  out["time_to_first_step_ideal_seconds"] = r.time_to_first_step_ideal_seconds;
  out["epochs"] = array_of(r.epochs, [](const RemoteEpoch& e) {
    nlohmann::json x{{"epoch", e.epoch},
                     {"seconds", e.seconds},
                     {"ideal_seconds", e.ideal_seconds},
                     {"au_percentage", e.au_percentage},
                     {"remote_bytes", e.remote_bytes},
                     {"requests", e.requests},
                     {"retries", e.retries}};
    put(x, "cache_hits", e.cache_hits);
    put(x, "cache_misses", e.cache_misses);
    put(x, "cache_hit_ratio", e.cache_hit_ratio);
    return x;
  });
  return out;
}

nlohmann::json to_json(const AcceleratorSearch& s) {
  nlohmann::json out{{"max_accelerators", s.max_accelerators},
                     {"limit", s.limit},
                     {"probes", array_of(s.probes, [](const SearchProbe& p) {
                        nlohmann::json x{{"accelerators", p.accelerators},
                                         {"au_percentage", p.au_percentage},
                                         {"meets", p.meets}};
                        put(x, "throughput_samples_per_second", p.samples_per_second);
                        if (!p.au_runs.empty()) x["au_runs"] = p.au_runs;
                        return x;
                      })}};
  if (s.storage) {
    const StorageBound& b = *s.storage;
    const std::vector<double>& v = b.samples_mib_per_s;
    out["storage_mib_per_s"] = b.mib_per_s;
    out["storage_samples_mib_per_s"] = v;
    // Derived from the samples, for readers of the file.
    out["storage_mib_per_s_min"] = b.lowest();
    out["storage_mib_per_s_max"] = b.highest();
    out["storage_mib_per_s_before"] = v.empty() ? 0.0 : v.front();
    out["storage_mib_per_s_after"] = v.empty() ? 0.0 : v.back();
    out["storage_cold"] = b.cold;
    if (!b.served.empty()) out["storage_served"] = b.served;
    out["demand_mib_per_s"] = b.demand_mib_per_s;
    out["bound_accelerators"] = b.bound_accelerators;
  }
  if (const auto& p = s.prediction) {
    nlohmann::json x{{"storage", p->storage},
                     {"max_accelerators", p->predicted},
                     {"binding", p->binding},
                     {"extrapolated", p->extrapolated},
                     {"capped", p->capped},
                     {"profile_mib_per_s", p->profile_mib_per_s}};
    put(x, "error_percent", p->error_percent);
    out["prediction"] = std::move(x);
  }
  return out;
}

nlohmann::json to_json(const StallRecord& s) {
  return {{"epochs", array_of(s.epochs,
                              [](const StallEpochRecord& e) -> nlohmann::json {
                                return {{"epoch", e.epoch},
                                        {"synthetic_s", e.synthetic_s},
                                        {"warm_s", e.warm_s},
                                        {"cold_s", e.cold_s},
                                        {"fetch_stall_s", e.fetch_stall_s},
                                        {"prep_stall_s", e.prep_stall_s}};
                              })},
          {"synthetic_au_percentage", s.synthetic_au_percentage},
          {"warm_au_percentage", s.warm_au_percentage},
          {"cold_au_percentage", s.cold_au_percentage}};
}

nlohmann::json to_json(const CheckpointRecord& c) {
  nlohmann::json out{{"model", c.model},
                     {"ranks", c.ranks},
                     {"tensor", c.tensor},
                     {"pipeline", c.pipeline},
                     {"data", c.data},
                     {"zero_stage", c.zero_stage},
                     {"mode", c.mode},
                     {"checkpoint_size_GB", c.size_gib},
                     {"files", c.files},
                     {"bytes", c.bytes},
                     {"folder", c.folder},
                     {"fsync", c.fsync},
                     {"direct", c.direct},
                     {"cold_reads", c.cold_reads},
                     {"ops", array_of(c.ops, [](const CheckpointOpRecord& o) -> nlohmann::json {
                        return {{"kind", o.kind},
                                {"epoch", o.epoch},
                                {"step", o.step},
                                {"index", o.index},
                                {"ranks", o.ranks},
                                {"bytes", o.bytes},
                                {"rank0_seconds", o.rank0_seconds},
                                {"slowest_seconds", o.slowest_seconds},
                                {"dlio_GB_per_second", o.dlio_gib_per_s},
                                {"GB_per_second", o.gib_per_s}};
                      })}};
  if (c.parameters > 0) out["parameters"] = c.parameters;
  put(out, "save_checkpoint_duration_mean_seconds", c.save_duration_mean_s);
  put(out, "save_checkpoint_duration_stdev_seconds", c.save_duration_stdev_s);
  put(out, "save_checkpoint_io_mean_GB_per_second", c.save_io_mean_gib_per_s);
  put(out, "save_checkpoint_io_stdev_GB_per_second", c.save_io_stdev_gib_per_s);
  put(out, "load_checkpoint_duration_mean_seconds", c.load_duration_mean_s);
  put(out, "load_checkpoint_duration_stdev_seconds", c.load_duration_stdev_s);
  put(out, "load_checkpoint_io_mean_GB_per_second", c.load_io_mean_gib_per_s);
  put(out, "load_checkpoint_io_stdev_GB_per_second", c.load_io_stdev_gib_per_s);
  put(out, "save_slowest_rank_mean_seconds", c.save_slowest_mean_s);
  put(out, "save_GB_per_second", c.save_gib_per_s);
  put(out, "load_slowest_rank_mean_seconds", c.load_slowest_mean_s);
  put(out, "load_GB_per_second", c.load_gib_per_s);
  put(out, "training_stall_seconds", c.training_stall_s);
  return out;
}

nlohmann::json to_json(const GrowingCacheRecord& g) {
  return {{"samplers", g.samplers},
          {"shard_samples", g.shard_samples},
          {"latency_ms", g.latency_ms},
          {"rate_mib_s_per_request", g.rate_mib_s_per_request},
          {"budget_mib", g.budget_mib},
          {"time_to_first_step_seconds", g.time_to_first_step_seconds},
          {"epochs", array_of(g.epochs, [](const GrowingEpochRecord& e) -> nlohmann::json {
             return {{"epoch", e.epoch},
                     {"shards", e.shards},
                     {"samples", e.samples},
                     {"steps", e.steps},
                     {"evicted_shards", e.evicted_shards},
                     {"seconds", e.seconds},
                     {"au_percentage", e.au_percentage},
                     {"wait_mean_ms", e.wait_mean_ms},
                     {"wait_p99_ms", e.wait_p99_ms},
                     {"bytes", e.bytes},
                     {"deserialize_mb_per_s_per_thread", e.deserialize_mb_per_s_per_thread}};
           })}};
}

double StorageBound::lowest() const {
  return samples_mib_per_s.empty() ? 0.0 : *std::min_element(samples_mib_per_s.begin(), samples_mib_per_s.end());
}

double StorageBound::highest() const {
  return samples_mib_per_s.empty() ? 0.0 : *std::max_element(samples_mib_per_s.begin(), samples_mib_per_s.end());
}

const char* entry_kind_name(EntryKind kind) {
  for (const auto& [k, name] : kKinds)
    if (k == kind) return name;
  return "experiment";
}

std::optional<EntryKind> entry_kind_of(std::string_view name) {
  for (const auto& [k, n] : kKinds)
    if (name == n) return k;
  return std::nullopt;
}

nlohmann::json to_json(const RanksSummary& s) {
  nlohmann::json out{{"ranks", array_of(s.rows,
                                        [](const RankRow& r) {
                                          nlohmann::json row{{"rank", r.rank},
                                                             {"host", r.host},
                                                             {"samples_per_second", r.samples_per_second},
                                                             {"au_percentage", r.au_percentage},
                                                             {"interrupted", r.interrupted}};
                                          put(row, "error", r.error);
                                          put(row, "median_wall_ms", r.median_wall_ms);
                                          put(row, "wait_mean_ms", r.wait_mean_ms);
                                          put(row, "elements", r.elements);
                                          put(row, "accelerators", r.accelerators);
                                          put(row, "cpu_ms", r.cpu_ms);
                                          return row;
                                        })},
                     {"size", s.size},
                     {"cluster", s.cluster},
                     {"samples_per_second", s.samples_per_second},
                     {"samples_per_element", s.samples_per_element},
                     {"slowest_rank", s.slowest_rank},
                     {"slowest_behind_mean_percent", s.slowest_behind_mean_percent}};
  put(out, "clock_error_ns", s.clock_error_ns);
  return out;
}

RanksSummary ranks_from_json(const nlohmann::json& j, const JsonAt& at) {
  object(j, at);
  RanksSummary s;
  s.rows = list(j, "ranks", at, rank_from_json);
  s.size = static_cast<int>(opt_integer(j, "size", at).value_or(static_cast<int64_t>(s.rows.size())));
  s.cluster = opt_text(j, "cluster", at).value_or("");
  s.samples_per_second = find(j, "samples_per_second") ? number(j, "samples_per_second", at)
                                                       : number(j, "throughput_samples_per_second", at);
  s.samples_per_element = opt_integer(j, "samples_per_element", at).value_or(1);
  s.slowest_rank = static_cast<int>(integer(j, "slowest_rank", at));
  s.slowest_behind_mean_percent = number(j, "slowest_behind_mean_percent", at);
  s.clock_error_ns = opt_integer(j, "clock_error_ns", at);
  return s;
}

nlohmann::json to_json(const WorkloadRecord& w) {
  nlohmann::json out{{"file", w.file}, {"name", w.name}, {"format", w.format}};
  if (!w.loader.empty()) out["loader"] = w.loader;
  put(out, "peer", w.peer);
  out["batch_size"] = w.batch_size;
  out["read_threads"] = w.read_threads ? nlohmann::json(*w.read_threads) : nlohmann::json("autotune");
  out["computation_time"] = w.computation_time;
  if (w.dlio) {
    out["accelerators"] = w.accelerators;
    out["steps_per_epoch"] = w.steps_per_epoch;
  }
  put(out, "au_threshold", w.au_threshold);
  put(out, "scale", w.scale);
  if (w.dlio) out["dlio"] = to_json(*w.dlio);
  if (w.dlio || !w.per_accelerator.empty()) {
    out["per_accelerator"] = array_of(w.per_accelerator, [](const AcceleratorFigures& a) -> nlohmann::json {
      return {{"rank", a.rank},
              {"au_percentage", a.au_percentage},
              {"throughput_samples_per_second", a.samples_per_second}};
    });
  }
  if (w.wait) out["wait_ms"] = {{"mean", w.wait->mean_ms}, {"p50", w.wait->p50_ms}, {"p99", w.wait->p99_ms}};
  put(out, "barrier_mean_ms", w.barrier_mean_ms);
  put(out, "bytes_read", w.bytes_read);
  if (!w.bytes_read_per_epoch.empty()) out["bytes_read_per_epoch"] = w.bytes_read_per_epoch;
  put(out, "accelerator_priority", w.accelerator_priority);
  if (!w.notes.empty()) out["notes"] = w.notes;
  put(out, "page_cache", w.page_cache);
  if (w.remote) out["remote"] = to_json(*w.remote);
  if (w.ranks) {
    out["ranks"] = to_json(*w.ranks);
    out["cluster"] = w.ranks->cluster;
  }
  if (w.max_accelerators) out["max_accelerators"] = to_json(*w.max_accelerators);
  if (w.stall_analysis) out["stall_analysis"] = to_json(*w.stall_analysis);
  if (w.growing_cache) out["growing_cache"] = to_json(*w.growing_cache);
  if (w.checkpoint) out["checkpoint"] = to_json(*w.checkpoint);
  return out;
}

WorkloadRecord workload_from_json(const nlohmann::json& j, const JsonAt& at) {
  object(j, at);
  WorkloadRecord w;
  w.file = text(j, "file", at);
  w.name = text(j, "name", at);
  w.format = text(j, "format", at);
  w.loader = opt_text(j, "loader", at).value_or("");
  w.peer = opt_text(j, "peer", at);
  w.batch_size = opt_integer(j, "batch_size", at).value_or(0);
  if (const nlohmann::json* t = find(j, "read_threads"); t != nullptr && !t->is_string())
    w.read_threads = as_integer(*t, at.at("read_threads"));
  if (const nlohmann::json* c = find(j, "computation_time")) w.computation_time = *c;
  w.accelerators = opt_integer(j, "accelerators", at).value_or(0);
  w.steps_per_epoch = opt_integer(j, "steps_per_epoch", at).value_or(0);
  w.au_threshold = opt_number(j, "au_threshold", at);
  w.scale = opt_number(j, "scale", at);
  w.dlio = part(j, "dlio", at, dlio_from_json);
  w.per_accelerator = list(j, "per_accelerator", at, [](const nlohmann::json& a, const JsonAt& p) {
    object(a, p);
    return AcceleratorFigures{.rank = integer(a, "rank", p),
                              .au_percentage = number(a, "au_percentage", p),
                              .samples_per_second = number(a, "throughput_samples_per_second", p)};
  });
  w.wait = part(j, "wait_ms", at, [](const nlohmann::json& m, const JsonAt& p) {
    return WaitFigures{.mean_ms = number(m, "mean", p), .p50_ms = number(m, "p50", p),
                       .p99_ms = number(m, "p99", p)};
  });
  w.barrier_mean_ms = opt_number(j, "barrier_mean_ms", at);
  w.bytes_read = opt_integer(j, "bytes_read", at);
  w.bytes_read_per_epoch = list(j, "bytes_read_per_epoch", at, as_integer);
  w.accelerator_priority = opt_text(j, "accelerator_priority", at);
  w.notes = list(j, "notes", at, as_text);
  w.page_cache = opt_text(j, "page_cache", at);
  w.remote = part(j, "remote", at, remote_from_json);
  w.ranks = part(j, "ranks", at, ranks_from_json);
  w.max_accelerators = part(j, "max_accelerators", at, search_from_json);
  w.stall_analysis = part(j, "stall_analysis", at, stall_from_json);
  w.growing_cache = part(j, "growing_cache", at, growing_from_json);
  w.checkpoint = part(j, "checkpoint", at, checkpoint_from_json);
  if (w.dlio) {  // a DLIO run: its accelerators
    if (w.accelerators < 1) at.at("accelerators").fail("expected at least 1 accelerator");
    if (w.loader.empty()) at.fail("missing required key \"loader\"");
  }
  return w;
}

nlohmann::json to_json(const ScaleoutRecord& s) {
  return {{"points", array_of(s.points,
                              [](const ScaleoutPoint& p) {
                                nlohmann::json x{{"ranks", p.ranks},
                                                 {"images_per_second", p.images_per_second},
                                                 {"images_per_second_per_rank", p.images_per_second_per_rank},
                                                 {"au_per_rank", p.au_per_rank},
                                                 {"slowest_rank", p.slowest_rank},
                                                 {"trace", p.trace}};
                                put(x, "scaling_efficiency", p.scaling_efficiency);
                                return x;
                              })},
          {"spec", s.spec}};
}

ScaleoutRecord scaleout_from_json(const nlohmann::json& j, const JsonAt& at) {
  object(j, at);
  ScaleoutRecord s;
  s.spec = opt_text(j, "spec", at).value_or("");
  s.points = list(j, "points", at, [](const nlohmann::json& p, const JsonAt& a) {
    object(p, a);
    return ScaleoutPoint{.ranks = static_cast<int>(integer(p, "ranks", a)),
                         .images_per_second = number(p, "images_per_second", a),
                         .images_per_second_per_rank =
                             opt_number(p, "images_per_second_per_rank", a).value_or(0),
                         .scaling_efficiency = opt_number(p, "scaling_efficiency", a),
                         .au_per_rank = numbers(p, "au_per_rank", a),
                         .slowest_rank = static_cast<int>(opt_integer(p, "slowest_rank", a).value_or(-1)),
                         .trace = opt_text(p, "trace", a).value_or("")};
  });
  return s;
}

nlohmann::json to_json(const LoaderWatchRecord& w) {
  nlohmann::json j{{"settings", {{"num_workers", w.num_workers},
                                 {"prefetch_factor", w.prefetch_factor},
                                 {"pin_memory", w.pin_memory},
                                 {"persistent_workers", w.persistent_workers},
                                 {"batch_size", w.batch_size},
                                 {"device", w.device}}},
                   {"epochs", w.epochs},
                   {"batches", w.batches},
                   {"input_bound_pct", w.input_bound_pct},
                   {"steady_input_bound_pct", w.steady_input_bound_pct},
                   {"first_wait_ms", w.first_wait_ms},
                   {"wait_p50_ms", w.wait_p50_ms},
                   {"wait_p99_ms", w.wait_p99_ms},
                   {"ready_pct", w.ready_pct},
                   {"workers_busy_pct", w.workers_busy_pct},
                   {"pin_memory_busy_pct", w.pin_memory_busy_pct},
                   {"worker_starts", w.worker_starts},
                   {"restarts", w.restarts},
                   {"dead_workers", w.dead_workers},
                   {"trace", w.trace}};
  j["suggestions"] = nlohmann::json::array();
  for (const auto& [knob, text] : w.suggestions)
    j["suggestions"].push_back({{"knob", knob}, {"text", text}});
  return j;
}

LoaderWatchRecord loader_watch_from_json(const nlohmann::json& j, const JsonAt& at) {
  object(j, at);
  LoaderWatchRecord w;
  const JsonAt s_at = at.at("settings");
  const nlohmann::json& s = object(need(j, "settings", at), s_at);
  w.num_workers = integer(s, "num_workers", s_at);
  w.prefetch_factor = integer(s, "prefetch_factor", s_at);
  w.batch_size = integer(s, "batch_size", s_at);
  w.pin_memory = flag(s, "pin_memory", s_at, false);
  w.persistent_workers = flag(s, "persistent_workers", s_at, false);
  w.device = opt_text(s, "device", s_at).value_or("");
  w.epochs = integer(j, "epochs", at);
  w.batches = integer(j, "batches", at);
  w.input_bound_pct = number(j, "input_bound_pct", at);
  w.steady_input_bound_pct = number(j, "steady_input_bound_pct", at);
  w.first_wait_ms = number(j, "first_wait_ms", at);
  w.wait_p50_ms = number(j, "wait_p50_ms", at);
  w.wait_p99_ms = number(j, "wait_p99_ms", at);
  w.ready_pct = number(j, "ready_pct", at);
  w.workers_busy_pct = number(j, "workers_busy_pct", at);
  w.pin_memory_busy_pct = number(j, "pin_memory_busy_pct", at);
  w.worker_starts = integer(j, "worker_starts", at);
  w.restarts = integer(j, "restarts", at);
  w.dead_workers = integer(j, "dead_workers", at);
  w.trace = opt_text(j, "trace", at).value_or("");
  w.suggestions = list(j, "suggestions", at, [](const nlohmann::json& x, const JsonAt& a) {
    object(x, a);
    return std::pair<std::string, std::string>(text(x, "knob", a), text(x, "text", a));
  });
  return w;
}

}  // namespace pipeprof::results
