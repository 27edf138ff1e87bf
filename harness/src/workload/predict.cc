#include "workload/predict.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "pipeprof/harness/errors.h"
#include "pipeprof/pipelines/memory_limit.h"
#include "pipeprof/results/json_at.h"
#include "pipeprof/trace/json_depth.h"

namespace pipeprof::harness::workload {
namespace {

using results::JsonAt;
namespace jr = results::json_read;

constexpr double kMiB = 1048576.0;
constexpr const char* kProfileKind = "pipeprof.storage_profile";

std::vector<BandwidthPoint> read_curve(const nlohmann::json& j, std::string_view key, const JsonAt& at,
                                       bool required) {
  if (required) (void)jr::need(j, key, at);
  auto points = jr::list(j, key, at, [](const nlohmann::json& v, const JsonAt& a) {
    jr::object(v, a);
    BandwidthPoint p{jr::integer(v, "streams", a), jr::number(v, "mib_per_s", a)};
    if (p.streams < 1) a.at("streams").fail(fmt::format("expected a whole number >= 1, got {}", p.streams));
    if (!(p.mib_per_s > 0) || !std::isfinite(p.mib_per_s))
      a.at("mib_per_s").fail(fmt::format("expected a number > 0, got {}", p.mib_per_s));
    if (jr::find(v, "cpu_us_per_mib")) {
      p.cpu_us_per_mib = jr::number(v, "cpu_us_per_mib", a);
      if (!(p.cpu_us_per_mib >= 0) || !std::isfinite(p.cpu_us_per_mib))
        a.at("cpu_us_per_mib").fail(fmt::format("expected a number >= 0, got {}", p.cpu_us_per_mib));
    }
    if (jr::find(v, "start_wait_ms")) {
      p.start_wait_ms = jr::number(v, "start_wait_ms", a);
      if (!(p.start_wait_ms >= 0) || !std::isfinite(p.start_wait_ms))
        a.at("start_wait_ms").fail(fmt::format("expected a number >= 0, got {}", p.start_wait_ms));
    }
    return p;
  });
  for (size_t i = 1; i < points.size(); ++i) {
    if (points[i].streams <= points[i - 1].streams) {
      at.at(key).at(i).at("streams").fail(
          fmt::format("streams must rise from point to point ({} after {})", points[i].streams,
                      points[i - 1].streams));
    }
  }
  if (required && points.empty()) at.at(key).fail("expected at least one measured point");
  return points;
}

double positive(const nlohmann::json& j, std::string_view key, const JsonAt& at, bool zero_ok) {
  const double v = jr::number(j, key, at);
  if (!std::isfinite(v) || v < 0 || (!zero_ok && v == 0))
    at.at(key).fail(fmt::format("expected a number {} 0, got {}", zero_ok ? ">=" : ">", v));
  return v;
}

nlohmann::ordered_json curve_json(const std::vector<BandwidthPoint>& c) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const BandwidthPoint& p : c) {
    out.push_back({{"streams", p.streams}, {"mib_per_s", p.mib_per_s}});
    if (p.cpu_us_per_mib > 0) out.back()["cpu_us_per_mib"] = p.cpu_us_per_mib;
    if (p.start_wait_ms > 0) out.back()["start_wait_ms"] = p.start_wait_ms;
  }
  return out;
}

// Whether the curve levelled off at its end (its last doubling gained less than 5%): beyond it,
// its last figure is a measured plateau rather than a guess.
bool levelled_off(const std::vector<BandwidthPoint>& c) {
  return c.size() >= 2 && c.back().mib_per_s < 1.05 * c[c.size() - 2].mib_per_s;
}

// A figure of the points (`field`) at k streams, piecewise linear in log2(streams) between the
// two points around k; `k` lies within [a.streams, b.streams].
double between(const BandwidthPoint& a, const BandwidthPoint& b, double k, double BandwidthPoint::*field) {
  const double x0 = std::log2(static_cast<double>(a.streams));
  const double x1 = std::log2(static_cast<double>(b.streams));
  const double f = (std::log2(k) - x0) / (x1 - x0);
  return a.*field + f * (b.*field - a.*field);
}

// B(k): piecewise linear in log2(streams) between measured points; below the first point, in
// proportion to the streams; beyond the last, the last (`extrapolated` set unless the curve
// levelled off there).
double bandwidth_at(const std::vector<BandwidthPoint>& c, double k, bool* extrapolated) {
  if (c.empty()) return 0;
  const BandwidthPoint& first = c.front();
  if (k <= static_cast<double>(first.streams)) return first.mib_per_s * k / static_cast<double>(first.streams);
  for (size_t i = 1; i < c.size(); ++i)
    if (k <= static_cast<double>(c[i].streams)) return between(c[i - 1], c[i], k, &BandwidthPoint::mib_per_s);
  if (extrapolated != nullptr && !levelled_off(c)) *extrapolated = true;
  return c.back().mib_per_s;
}

// A figure of the points that have it (> 0) at k streams, read off them as B(k) is (below the
// first and beyond the last, their figure); 0 when none has it.
double figure_at(const std::vector<BandwidthPoint>& c, double k, double BandwidthPoint::*field) {
  const BandwidthPoint* before = nullptr;
  for (const BandwidthPoint& p : c) {
    if (!(p.*field > 0)) continue;
    if (k <= static_cast<double>(p.streams))
      return before != nullptr ? between(*before, p, k, field) : p.*field;
    before = &p;
  }
  return before != nullptr ? (*before).*field : 0;
}

// The loaders' start (start_wait_ms) at k streams: within the measured points as figure_at reads
// it; beyond the last that has one, in proportion to the streams. Past the bandwidth's plateau
// every further stream's first batch comes out of the same bandwidth, so the wait for the last
// one grows at least as the streams do (the probes measured 3 to 5 times the wait for twice the
// streams there).
double start_wait_at(const std::vector<BandwidthPoint>& c, double k) {
  const BandwidthPoint* last = nullptr;
  for (const BandwidthPoint& p : c)
    if (p.start_wait_ms > 0) last = &p;
  if (last == nullptr) return 0;
  if (k <= static_cast<double>(last->streams))
    return figure_at(c, k, &BandwidthPoint::start_wait_ms);
  return last->start_wait_ms * k / static_cast<double>(last->streams);
}

// The curve's highest point (a null one when empty).
BandwidthPoint peak_point(const std::vector<BandwidthPoint>& c) {
  BandwidthPoint m;
  for (const BandwidthPoint& p : c)
    if (p.mib_per_s > m.mib_per_s) m = p;
  return m;
}

struct Terms {
  double au = 1;
  double supply = 0;        // samples/s, all accelerators
  double storage_mib = 0;   // B(k), with the what-ifs
  double storage_supply = 0;  // samples/s the streams alone would give
  std::string limit;
  bool extrapolated = false;
};

// The streams of a curve's last point with a CPU figure (0: none).
double last_cpu_streams(const std::vector<BandwidthPoint>& c) {
  for (auto it = c.rbegin(); it != c.rend(); ++it)
    if (it->cpu_us_per_mib > 0) return static_cast<double>(it->streams);
  return 0;
}

// What a sample costs a client's cores in an epoch of that class at k streams of that client: a
// cold one also pays what its reads cost beyond warm ones (the kernel's page-cache fills; more as
// the streams contend), where the profile's passes measured both, compared at the same streams
// (at most the last both measured).
double cpu_us_per_sample(const StorageProfile& p, const WorkloadDemand& d, bool warm, double k) {
  if (warm) return p.cpu_us_per_sample;
  const double at = std::min({k, last_cpu_streams(p.cold), last_cpu_streams(p.warm)});
  if (!(at > 0)) return p.cpu_us_per_sample;
  const double cold = cpu_per_mib_at(p.cold, at);
  const double hot = cpu_per_mib_at(p.warm, at);
  const double mib = d.file_bytes / static_cast<double>(std::max<int64_t>(1, d.samples_per_file)) / kMiB;
  // The extra work fills the cores the loop left idle before it adds to their time.
  const double busy = p.cpu_busy_us_per_sample > 0
                          ? std::min(p.cpu_busy_us_per_sample, p.cpu_us_per_sample)
                          : p.cpu_us_per_sample;
  return std::max(p.cpu_us_per_sample, busy + std::max(0.0, cold - hot) * mib);
}

// One epoch class (cold or warm) at N accelerators.
Terms terms_at(const std::vector<BandwidthPoint>& curve, const StorageProfile& p, const WorkloadDemand& d,
               int64_t n, const PredictOptions& o, bool warm) {
  Terms t;
  const double k = static_cast<double>(n) * static_cast<double>(d.threads);
  t.storage_mib = bandwidth_at(curve, k, &t.extrapolated);
  // A stream's time for a file is at least its requests' first bytes (a profile whose first byte
  // exceeds a stream's measured time per file has that time raised to it).
  // A stream's time for one file: its requests' first bytes, then the transfer.
  const double requests = std::ceil(d.file_bytes / std::max(4096.0, d.request_bytes));
  const double measured_latency_s = requests * p.first_byte_ms / 1e3;
  const double file_s = k * d.file_bytes / std::max(1e-9, t.storage_mib * kMiB);
  const double latency_s = o.latency_ms ? requests * *o.latency_ms / 1e3 : measured_latency_s;
  const double transfer_s = std::max(0.0, file_s - measured_latency_s) / o.bandwidth_factor;
  const double io_s = latency_s + transfer_s;
  t.storage_mib = k * d.file_bytes / std::max(1e-12, io_s) / kMiB;
  // Samples an accelerator keeps of each file it reads (all of them, unless every accelerator
  // reads every file: more accelerators than files under the tensorflow loader).
  const double amplification =
      d.files_per_accelerator && d.files > 0 && n > d.files ? static_cast<double>(n) : 1.0;
  const double spf = static_cast<double>(d.samples_per_file) / amplification;
  const double cpu_s =
      cpu_us_per_sample(p, d, warm, k / static_cast<double>(std::max<int64_t>(1, o.clients))) * amplification / 1e6;
  // The probe's passes ran the workload's loader, so a stream's measured time holds the parsing
  // of its samples; what is left of a reader's time per sample is DLIO's preprocess sleep.
  const double thread_s = spf * d.preprocess_s;
  const double threads_supply = k * spf / std::max(1e-12, io_s + thread_s);
  t.storage_supply = k * spf / std::max(1e-12, io_s);
  const double cpu_supply = cpu_s > 0
                                ? static_cast<double>(o.clients) * static_cast<double>(p.cores) / cpu_s
                                : std::numeric_limits<double>::infinity();
  t.supply = std::min(threads_supply, cpu_supply);
  const double demand = static_cast<double>(n) * d.samples_per_second;
  t.au = demand > 0 ? std::min(1.0, t.supply / demand) : 1;
  if (t.au < 1) {
    if (amplification > 1) {
      t.limit = "files (fewer than accelerators: each reads them all)";
    } else if (cpu_supply < threads_supply) {
      t.limit = "client CPU";
    } else if (thread_s > io_s) {
      t.limit = "reader threads";
    } else if (warm) {
      t.limit = "the page cache";
    } else {
      // Short of the curve's peak, more streams would bring more: the requests in flight do not
      // cover the latency. At or past it (a storage, or its server, that gives less to more
      // streams), they would not.
      const BandwidthPoint top = peak_point(curve);
      const bool rising = k < static_cast<double>(top.streams);
      t.limit = t.storage_mib < 0.9 * top.mib_per_s * o.bandwidth_factor && rising && !t.extrapolated
                    ? "requests in flight x latency"
                    : "storage bandwidth";
    }
  }
  return t;
}

bool warm_epochs(const StorageProfile& p, const WorkloadDemand& d, const PredictOptions& o) {
  if (o.warm) return !p.warm.empty();
  return !o.cold && !p.warm.empty() && d.epochs > 1 &&
         d.dataset_bytes / static_cast<double>(std::max<int64_t>(1, o.clients)) <= 0.8 * p.memory_bytes;
}

}  // namespace

double peak(const std::vector<BandwidthPoint>& c) { return peak_point(c).mib_per_s; }

double cpu_per_mib_at(const std::vector<BandwidthPoint>& c, double k) {
  return figure_at(c, k, &BandwidthPoint::cpu_us_per_mib);
}

nlohmann::ordered_json to_json(const StorageProfile& p) {
  nlohmann::ordered_json j{{"kind", kProfileKind},
                           {"version", kStorageProfileVersion},
                           {"target", p.target},
                           {"measured_utc", p.measured_utc},
                           {"host", p.host},
                           {"workload", {{"format", p.format},
                                         {"loader", p.loader},
                                         {"file_bytes", p.file_bytes},
                                         {"request_bytes", p.request_bytes}}},
                           {"bandwidth", {{"cold", curve_json(p.cold)}, {"warm", curve_json(p.warm)}}},
                           {"latency", {{"first_byte_ms", p.first_byte_ms},
                                        {"requests_per_s", p.requests_per_s}}},
                           {"client", {{"cpu_us_per_sample", p.cpu_us_per_sample},
                                       {"cores", p.cores},
                                       {"memory_bytes", p.memory_bytes}}},
                           {"complete", p.complete},
                           {"notes", p.notes}};
  if (p.cpu_busy_us_per_sample > 0)
    j["client"]["cpu_busy_us_per_sample"] = p.cpu_busy_us_per_sample;
  return j;
}

StorageProfile storage_profile_from_json(const nlohmann::json& doc, const std::string& source) {
  const JsonAt at{source, ""};
  jr::object(doc, at);
  if (const std::string kind = jr::text(doc, "kind", at); kind != kProfileKind)
    at.at("kind").fail(fmt::format("expected \"{}\", got \"{}\"", kProfileKind, kind));
  if (const int64_t v = jr::integer(doc, "version", at); v != kStorageProfileVersion) {
    at.at("version").fail(fmt::format("this pipeprof reads storage profiles of version {}, got {}",
                                      kStorageProfileVersion, v));
  }
  StorageProfile p;
  p.source = source;
  p.target = jr::opt_text(doc, "target", at).value_or("");
  p.measured_utc = jr::opt_text(doc, "measured_utc", at).value_or("");
  p.host = jr::opt_text(doc, "host", at).value_or("");
  const JsonAt wa = at.at("workload");
  const nlohmann::json& wj = jr::object(jr::need(doc, "workload", at), wa);
  p.format = jr::text(wj, "format", wa);
  p.loader = jr::opt_text(wj, "loader", wa).value_or("");
  p.file_bytes = positive(wj, "file_bytes", wa, false);
  p.request_bytes = positive(wj, "request_bytes", wa, false);
  const JsonAt ba = at.at("bandwidth");
  const nlohmann::json& bj = jr::object(jr::need(doc, "bandwidth", at), ba);
  p.cold = read_curve(bj, "cold", ba, true);
  p.warm = read_curve(bj, "warm", ba, false);
  const JsonAt la = at.at("latency");
  const nlohmann::json& lj = jr::object(jr::need(doc, "latency", at), la);
  p.first_byte_ms = positive(lj, "first_byte_ms", la, true);
  p.requests_per_s = jr::find(lj, "requests_per_s") ? positive(lj, "requests_per_s", la, true) : 0;
  const JsonAt ca = at.at("client");
  const nlohmann::json& cj = jr::object(jr::need(doc, "client", at), ca);
  p.cpu_us_per_sample = positive(cj, "cpu_us_per_sample", ca, true);
  if (jr::find(cj, "cpu_busy_us_per_sample"))
    p.cpu_busy_us_per_sample = positive(cj, "cpu_busy_us_per_sample", ca, true);
  p.cores = jr::integer(cj, "cores", ca);
  if (p.cores < 1 || p.cores > 1'000'000)
    ca.at("cores").fail(fmt::format("expected a whole number in [1, 1000000], got {}", p.cores));
  p.memory_bytes = positive(cj, "memory_bytes", ca, true);
  p.complete = jr::flag(doc, "complete", at, true);
  p.notes = jr::list(doc, "notes", at, [](const nlohmann::json& v, const JsonAt& a) { return jr::as_text(v, a); });
  return p;
}

StorageProfile read_storage_profile(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read the storage profile", file));
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json doc;
  try {
    doc = trace::parse_json(text.str());  // at most trace::kMaxJsonDepth levels; 1e999 refused
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(fmt::format("{}: byte {}: not a JSON storage profile", file, e.byte));
  }
  try {
    return storage_profile_from_json(doc, file);
  } catch (const results::ResultsError& e) {
    throw InputError(e.what());
  }
}

void check_profile_matches(const StorageProfile& p, const DlioWorkload& w) {
  const std::string format(pipelines::formats::data_format_name(w.dataset.format));
  if (p.format != format) {
    throw InputError(fmt::format(
        "{}: workload.format: the profile was measured on {} files, the workload {} reads {} "
        "(probe its storage with `pipeprof predict {} --probe`)",
        p.source.empty() ? "the storage profile" : p.source, p.format, w.file, format, w.file));
  }
}

std::vector<std::string> profile_warnings(const StorageProfile& p, const DlioWorkload& w) {
  std::vector<std::string> out;
  const std::string name = p.source.empty() ? "the probe's profile" : p.source;
  if (!p.complete) {
    out.push_back(fmt::format("{}: the probe was cut short (complete: false): what it did not measure "
                              "counts as zero (no CPU cost, no latency)",
                              name));
  }
  const double file = record_bytes(w) * static_cast<double>(std::max<int64_t>(1, w.dataset.num_samples_per_file));
  if (file > 0 && (p.file_bytes > 2 * file || p.file_bytes < file / 2)) {
    out.push_back(fmt::format("{}: measured on files of {:.0f} bytes, the workload's are about {:.0f}: "
                              "bandwidth by streams depends on the file size",
                              name, p.file_bytes, file));
  }
  if (!p.loader.empty() && p.loader != loader_name(w.loader)) {
    out.push_back(fmt::format("{}: measured with the {} loader, the workload uses the {} loader", name,
                              p.loader, loader_name(w.loader)));
  }
  return out;
}

WorkloadDemand demand_of(const DlioWorkload& w) {
  WorkloadDemand d;
  const double step_s = w.computation_time.mean();
  if (!(step_s > 0)) {
    throw InputError(fmt::format(
        "{}: train.computation_time: the prediction needs an accelerator that computes (got {} s): "
        "set it, e.g. ++workload.train.computation_time=0.1",
        w.file, step_s));
  }
  d.sample_bytes = record_bytes(w);
  d.samples_per_second = static_cast<double>(w.batch_size) / step_s;
  d.mib_per_second = d.samples_per_second * d.sample_bytes / kMiB;
  d.samples_per_file = std::max<int64_t>(1, w.dataset.num_samples_per_file);
  d.file_bytes = d.sample_bytes * static_cast<double>(d.samples_per_file);
  d.request_bytes = std::min(d.file_bytes, static_cast<double>(w.transfer_size.value_or(1 << 20)));
  d.threads = std::max<int64_t>(1, w.read_threads);
  d.preprocess_s = w.preprocess_time.mean();
  d.dataset_bytes = d.file_bytes * static_cast<double>(w.dataset.num_files_train);
  d.au = w.au;
  d.epochs = std::max<int64_t>(1, w.epochs);
  d.files = w.dataset.num_files_train;
  d.files_per_accelerator = w.loader == Loader::kTensorFlow;
  d.samples = static_cast<double>(d.samples_per_file) * static_cast<double>(w.dataset.num_files_train);
  d.batch = std::max<int64_t>(1, w.batch_size);
  d.step_cap = std::max<int64_t>(0, w.total_training_steps);
  d.window_excluded = std::max<int64_t>(0, w.exclude_start_steps) + std::max<int64_t>(0, w.exclude_end_steps);
  d.step_s = step_s;
  return d;
}

int64_t steps_at(const WorkloadDemand& d, int64_t accelerators) {
  if (!(d.samples > 0)) return 0;
  const double steps = std::floor(d.samples / static_cast<double>(std::max<int64_t>(1, d.batch)) /
                                  static_cast<double>(std::max<int64_t>(1, accelerators)));
  const auto n = static_cast<int64_t>(std::min(steps, 9e18));
  return d.step_cap > 0 ? std::min(n, d.step_cap) : n;
}

WhatIf parse_what_if(const std::string& text, const std::string& what) {
  WhatIf c;
  c.label = text;
  std::stringstream in(text);
  std::string item;
  bool any = false;
  while (std::getline(in, item, ',')) {
    const auto eq = item.find('=');
    const std::string key = item.substr(0, eq);
    if (eq == std::string::npos) {
      throw InputError(fmt::format("{} \"{}\": expected key=value, e.g. bandwidth=x2 or latency_ms=5",
                                   what, item));
    }
    static const std::array<std::string_view, 7> kKeys{"bandwidth", "latency_ms", "cpu_us", "cores",
                                                       "memory_gib", "read_threads", "clients"};
    if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
      throw InputError(fmt::format(
          "{} \"{}\": unknown key \"{}\" (expected one of: bandwidth, latency_ms, cpu_us, cores, "
          "memory_gib, read_threads, clients)",
          what, text, key));
    }
    std::string value = item.substr(eq + 1);
    const bool times = key == "bandwidth" && value.starts_with('x');
    if (times) value = value.substr(1);
    double v = 0;
    try {
      size_t used = 0;
      v = std::stod(value, &used);
      if (used != value.size()) throw std::invalid_argument(value);
    } catch (const std::exception&) {
      throw InputError(fmt::format("{} \"{}\": {}: expected a number, got \"{}\"", what, text, key,
                                   item.substr(eq + 1)));
    }
    const bool zero_ok = key == "latency_ms" || key == "cpu_us";
    if (!std::isfinite(v) || v < 0 || (!zero_ok && v == 0) || v > 1e12) {
      throw InputError(fmt::format("{} \"{}\": {}: expected a number {} 0 (at most 1e12), got {}", what,
                                   text, key, zero_ok ? ">=" : ">", item.substr(eq + 1)));
    }
    auto whole = [&] {
      if (v != std::floor(v) || v > 1e9)
        throw InputError(fmt::format("{} \"{}\": {}: expected a whole number, got {}", what, text, key, v));
      return v;
    };
    if (key == "bandwidth") {
      (times ? c.bandwidth_factor : c.bandwidth_mib_per_s) = v;
    } else if (key == "latency_ms") {
      c.latency_ms = v;
    } else if (key == "cpu_us") {
      c.cpu_us = v;
    } else if (key == "cores") {
      c.cores = whole();
    } else if (key == "memory_gib") {
      c.memory_gib = v;
    } else if (key == "read_threads") {
      c.read_threads = whole();
    } else {
      c.clients = whole();
    }
    any = true;
  }
  if (!any) throw InputError(fmt::format("{}: empty (expected key=value, e.g. bandwidth=x2)", what));
  return c;
}

void apply_what_if(const WhatIf& c, StorageProfile& p, WorkloadDemand& d, PredictOptions& o) {
  if (c.bandwidth_factor) o.bandwidth_factor *= *c.bandwidth_factor;
  if (c.bandwidth_mib_per_s) o.bandwidth_factor = *c.bandwidth_mib_per_s / std::max(1e-9, peak(p.cold));
  if (c.latency_ms) o.latency_ms = *c.latency_ms;
  if (c.cpu_us) {
    p.cpu_us_per_sample = *c.cpu_us;
    p.cpu_busy_us_per_sample = 0;  // all of it busy: a cold epoch adds its extra on top
  }
  if (c.cores) p.cores = static_cast<int64_t>(*c.cores);
  if (c.memory_gib) p.memory_bytes = *c.memory_gib * 1073741824.0;
  if (c.read_threads) d.threads = static_cast<int64_t>(*c.read_threads);
  if (c.clients) o.clients = static_cast<int64_t>(*c.clients);
}

PredictedPoint predict_at(const StorageProfile& p, const WorkloadDemand& d, int64_t accelerators,
                          const PredictOptions& o) {
  PredictedPoint out;
  out.accelerators = accelerators;
  out.streams = static_cast<int64_t>(
      std::min(9e18, static_cast<double>(accelerators) * static_cast<double>(d.threads)));
  const Terms cold = terms_at(p.cold, p, d, accelerators, o, false);
  Terms use = cold;
  if (o.warm && !p.warm.empty()) {
    use = terms_at(p.warm, p, d, accelerators, o, true);
  } else if (warm_epochs(p, d, o)) {
    const Terms warm = terms_at(p.warm, p, d, accelerators, o, true);
    const double e = static_cast<double>(d.epochs);
    use.au = (cold.au + (e - 1) * warm.au) / e;
    use.supply = (cold.supply + (e - 1) * warm.supply) / e;
    // The epoch class that falls shorter names the limit.
    if (warm.au < cold.au) use.limit = warm.limit;
  }
  // The start: the first epoch's window also holds the barrier after the first step, where each
  // accelerator waits for the last one's first batch (the first epoch's curve says how long).
  const std::vector<BandwidthPoint>& first_curve = o.warm && !p.warm.empty() ? p.warm : p.cold;
  const double start_s =
      start_wait_at(first_curve, static_cast<double>(out.streams) /
                                     static_cast<double>(std::max<int64_t>(1, o.clients))) /
      1e3;
  const double window_s =
      static_cast<double>(steps_at(d, accelerators) - d.window_excluded) * d.step_s;
  if (start_s > 0 && window_s > 0 && use.au > 0) {
    const double first_au = (o.warm && !p.warm.empty()) ? use.au : cold.au;
    const double started = window_s / (window_s / first_au + start_s);
    const double au = use.au - (first_au - started) / static_cast<double>(std::max<int64_t>(1, d.epochs));
    if (use.limit.empty() || (use.au >= d.au && au < d.au)) use.limit = "the loaders' start";
    use.au = au;
  }
  out.au = use.au;
  out.samples_per_second = std::min(use.supply, static_cast<double>(accelerators) * d.samples_per_second);
  out.storage_mib_per_s = use.storage_mib;
  out.limit = use.limit;
  out.extrapolated = use.extrapolated;
  return out;
}

Prediction predict(const StorageProfile& p, const WorkloadDemand& d, const PredictOptions& o) {
  Prediction r;
  r.demand = d;
  r.warm_epochs = warm_epochs(p, d, o);
  r.probed_streams = p.cold.empty() ? 0 : p.cold.back().streams;
  r.clients = o.clients;
  auto meets = [&](int64_t n) { return predict_at(p, d, n, o).au >= d.au - 1e-12; };
  // Counts from one up, to the first that misses (as DLIO's search starts from one): a curve
  // whose bandwidth per stream rises somewhere (noise, or a profile written by hand) then gives
  // the first range that meets the threshold, never a count beyond a miss.
  int64_t good = 0;
  while (good < o.limit && meets(good + 1))
    ++good;
  r.max_accelerators = good;
  r.capped = good >= o.limit;
  r.at_max = predict_at(p, d, std::max<int64_t>(1, good), o);
  r.beyond = predict_at(p, d, good + 1, o);
  r.binding = r.capped ? "" : r.beyond.limit;
  r.extrapolated = r.beyond.extrapolated || r.at_max.extrapolated;
  // The curve: 1, 2, 4, ... past the maximum, and the two counts around it.
  std::vector<int64_t> counts;
  const int64_t top = std::min<int64_t>(o.limit, std::max<int64_t>(8, 2 * std::max<int64_t>(1, good)));
  for (int64_t n = 1; n <= top; n *= 2)
    counts.push_back(n);
  if (good > 0) counts.push_back(good);
  if (good < o.limit) counts.push_back(good + 1);
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  for (int64_t n : counts)
    r.curve.push_back(predict_at(p, d, n, o));

  // Headroom at the maximum: each resource's capacity against what the accelerators take at
  // metric.au, each from the model's own terms.
  const int64_t m = std::max<int64_t>(1, good);
  const double taken = d.au * static_cast<double>(m) * d.samples_per_second;
  const double streams = static_cast<double>(m) * static_cast<double>(d.threads);
  auto add = [&](std::string name, double capacity, std::string detail) {
    r.headroom.push_back({std::move(name), capacity, taken > 0 ? capacity / taken : 0, std::move(detail)});
  };
  if (!o.warm) {
    const Terms t = terms_at(p.cold, p, d, m, o, false);
    add("storage", t.storage_supply,
        fmt::format("{:.0f} MiB/s at {:.0f} streams (most measured: {:.0f} MiB/s; {:.0f} MiB/s taken)",
                    t.storage_mib, streams, peak(p.cold), taken * d.sample_bytes / kMiB));
  }
  if (r.warm_epochs) {
    const Terms t = terms_at(p.warm, p, d, m, o, true);
    add("the page cache", t.storage_supply, fmt::format("{:.0f} MiB/s warm at {:.0f} streams", t.storage_mib, streams));
  }
  // A cold epoch's figure where there is one (the first, or all), as the storage row's.
  const double cpu_us =
      cpu_us_per_sample(p, d, o.warm, streams / static_cast<double>(std::max<int64_t>(1, o.clients)));
  const double cpu_s = cpu_us / 1e6;
  if (d.preprocess_s > 0) {
    add("reader threads", streams / d.preprocess_s,
        fmt::format("{:.0f} threads x {:.1f} ms of preprocess per sample", streams, d.preprocess_s * 1e3));
  }
  if (cpu_s > 0) {
    add("client CPU", static_cast<double>(o.clients) * static_cast<double>(p.cores) / cpu_s,
        fmt::format("{} client(s) x {} cores, {:.1f} us per sample{}", o.clients, p.cores, cpu_us,
                    cpu_us > p.cpu_us_per_sample ? " in a cold epoch (its reads' page-cache fills included)" : ""));
  }
  const double share = d.dataset_bytes / static_cast<double>(o.clients);
  r.headroom.push_back({"memory (page cache)", 0, share > 0 ? p.memory_bytes / share : 0,
                        fmt::format("a client's share of the dataset {} against {} of memory{}",
                                    pipelines::format_bytes(share), pipelines::format_bytes(p.memory_bytes),
                                    o.warm ? ": every epoch warm (--warm)"
                                    : r.warm_epochs ? ": epochs after the first read it warm"
                                                  : (o.cold ? ": every epoch cold (--cold)" : ": cold"))});
  return r;
}

nlohmann::ordered_json to_json(const Prediction& p) {
  nlohmann::ordered_json curve = nlohmann::ordered_json::array();
  for (const PredictedPoint& c : p.curve) {
    curve.push_back({{"accelerators", c.accelerators},
                     {"streams", c.streams},
                     {"au", c.au},
                     {"samples_per_second", c.samples_per_second},
                     {"storage_mib_per_s", c.storage_mib_per_s},
                     {"limited_by", c.limit},
                     {"extrapolated", c.extrapolated}});
  }
  nlohmann::ordered_json headroom = nlohmann::ordered_json::array();
  for (const ResourceHeadroom& h : p.headroom)
    headroom.push_back({{"resource", h.resource}, {"samples_per_second", h.capacity},
                        {"headroom", h.headroom}, {"detail", h.detail}});
  return {{"what_if", p.label},
          {"demand", {{"samples_per_second", p.demand.samples_per_second},
                      {"mib_per_second", p.demand.mib_per_second},
                      {"sample_bytes", p.demand.sample_bytes},
                      {"read_threads", p.demand.threads},
                      {"au_threshold", p.demand.au}}},
          {"clients", p.clients},
          {"max_accelerators", p.max_accelerators},
          {"capped", p.capped},
          {"au_at_max", p.at_max.au},
          {"binding", p.binding},
          {"extrapolated", p.extrapolated},
          {"probed_streams", p.probed_streams},
          {"warm_epochs", p.warm_epochs},
          {"headroom", headroom},
          {"curve", curve}};
}

std::string prediction_text(const Prediction& p) {
  std::string out;
  out += fmt::format("accelerators  streams  AU %    samples/s  storage MiB/s  limited by\n");
  for (const PredictedPoint& c : p.curve) {
    out += fmt::format("{:>12}  {:>7}  {:>5.1f}  {:>11.1f}  {:>13.0f}  {}{}\n", c.accelerators, c.streams,
                       c.au * 100, c.samples_per_second, c.storage_mib_per_s,
                       c.limit.empty() ? "-" : c.limit, c.extrapolated ? " (extrapolated)" : "");
  }
  if (p.max_accelerators == 0) {
    out += fmt::format("predicted maximum: none: one accelerator's AU is {:.1f}%, below {:.0f}% ({})\n",
                       p.at_max.au * 100, p.demand.au * 100, p.at_max.limit);
  } else if (p.capped) {
    out += fmt::format("predicted maximum: at least {} accelerator(s) at AU >= {:.0f}% (AU {:.1f}%): the "
                       "--max-accelerators limit\n",
                       p.max_accelerators, p.demand.au * 100, p.at_max.au * 100);
  } else {
    out += fmt::format("predicted maximum: {} accelerator(s) at AU >= {:.0f}% (AU {:.1f}%; {}: {:.1f}%)\n",
                       p.max_accelerators, p.demand.au * 100, p.at_max.au * 100, p.beyond.accelerators,
                       p.beyond.au * 100);
  }
  if (!p.binding.empty()) out += fmt::format("binding resource: {}\n", p.binding);
  out += fmt::format("headroom at {} accelerator(s) (capacity / what they take at AU {:.0f}%):\n",
                     std::max<int64_t>(1, p.max_accelerators), p.demand.au * 100);
  for (const ResourceHeadroom& h : p.headroom)
    out += fmt::format("  {:<20} {:>8.2f}x  {}\n", h.resource, h.headroom, h.detail);
  if (p.extrapolated) {
    out += fmt::format(
        "extrapolated: the maximum needs {} streams, the profile measured up to {} and its bandwidth "
        "was still rising there (its last figure is taken as a plateau); a probe with more streams "
        "(--probe-streams), or from several clients, measures them\n",
        p.beyond.streams, p.probed_streams);
  }
  return out;
}

std::string demand_text(const DlioWorkload& w, const WorkloadDemand& d) {
  return fmt::format(
      "{}: {}, {} loader; {} files x {} samples/file of {:.0f} bytes; batch {}, read_threads {}, "
      "computation_time {} s, AU threshold {:.2f}\n"
      "demand per accelerator: {:.1f} samples/s, {:.0f} MiB/s (AU 100%)\n",
      w.name, pipelines::formats::data_format_name(w.dataset.format), loader_name(w.loader),
      w.dataset.num_files_train, d.samples_per_file, d.sample_bytes, w.batch_size, d.threads,
      w.computation_time.mean(), d.au, d.samples_per_second, d.mib_per_second);
}

}  // namespace pipeprof::harness::workload
