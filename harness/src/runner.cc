#include "pipeprof/harness/runner.h"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <memory>
#include <string_view>

#include "pipeprof/autotune/simulator.h"
#include "pipeprof/harness/step.h"
#include "pipeprof/harness/training_loop.h"
#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/functions.h"
#include "pipeprof/pipelines/sleep.h"
#include "pipeprof/results/compare.h"
#include "pipeprof/trace/clock.h"
#include "pipeprof/trace/gpu_tracer.h"
#include "pipeprof/trace/recorder.h"

namespace pipeprof::harness {
namespace {

using autotune::SimOptions;
using autotune::SimResult;
using autotune::simulate;
using results::median;

int64_t peak_rss_kb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

bool stopped(const RunOptions& o) {
  return o.stop != nullptr && o.stop->load(std::memory_order_relaxed);
}

// One repetition: the training loop with one consumer on this thread, a fresh iterator per epoch
// and the experiment's step.
Repetition run_once(const Experiment& x, Step& step, int64_t epochs, const RunOptions& options,
                    std::vector<pipelines::NodeSnapshot>& stages, nlohmann::json& tuned) {
  // A fresh graph per repetition: state that lives in the graph (a cache's store, a shuffle's
  // iteration count) must not carry over from one repetition to the next.
  const pipelines::Dataset dataset =
      pipelines::parse_spec(x.spec.document, x.file.string()).dataset;
  LoopOptions loop;
  loop.epochs = epochs;
  loop.loader_life = LoaderLife::kEpoch;
  loop.open = [&dataset, &options](int64_t, int64_t) { return dataset.iterate({.storage = options.storage}); };
  loop.step = [&step](int64_t, pipelines::Element& element, int64_t) { step.run(element); };
  loop.autotune = options.autotune;
  loop.stop = options.stop;
  loop.lane_name = [](int64_t) { return std::string("train loop"); };
  loop.sort_index = -1;
  const int64_t cpu0 = trace::process_cpu_ns();
  const int64_t t0 = trace::now_ns();
  LoopRun run = run_loop(loop);
  Repetition rep = repetition_of(loop_figures(run.consumers));
  rep.wall_ms = trace::ns_to_ms(trace::now_ns() - t0);
  rep.cpu_ms = trace::ns_to_ms(trace::process_cpu_ns() - cpu0);
  rep.peak_rss_kb = peak_rss_kb();
  rep.interrupted = run.interrupted;
  ConsumerRecord& consumer = run.consumers.front();
  stages = std::move(consumer.stages);
  tuned = std::move(consumer.autotune);
  return rep;
}

// Whether the pipeline moves elements between processes (its transport's cost is then reported
// against the machine's memcpy bandwidth).
bool has_process_transport(const nlohmann::json& pipeline) {
  if (!pipeline.contains("stages")) return false;
  for (const auto& stage : pipeline.at("stages")) {
    const std::string op = stage.value("op", "");
    if (op == "multiprocess" || op == "shared_store") return true;
  }
  return false;
}

}  // namespace

double measure_memcpy_gb_per_s(size_t bytes, int copies) {
  auto src = std::make_unique<std::byte[]>(bytes);
  auto dst = std::make_unique<std::byte[]>(bytes);
  std::memset(src.get(), 1, bytes);
  std::memset(dst.get(), 0, bytes);
  int64_t best = 0;
  for (int i = 0; i < std::max(1, copies); ++i) {
    const int64_t t0 = trace::now_ns();
    std::memcpy(dst.get(), src.get(), bytes);
    const int64_t dt = trace::now_ns() - t0;
    if (best == 0 || dt < best) best = dt;
  }
  return best > 0 ? static_cast<double>(bytes) / static_cast<double>(best) : 0;
}

double measure_fill_gb_per_s(size_t bytes, int fills) {
  std::vector<float> buffer(std::max<size_t>(1, bytes / sizeof(float)), 0.0F);
  int64_t best = 0;
  for (int i = 0; i < std::max(1, fills); ++i) {
    const int64_t t0 = trace::now_ns();
    pipelines::fill_random(buffer, static_cast<uint64_t>(i) + 1);
    const int64_t dt = trace::now_ns() - t0;
    if (best == 0 || dt < best) best = dt;
  }
  const double filled = static_cast<double>(buffer.size() * sizeof(float));
  return best > 0 ? filled / static_cast<double>(best) : 0;
}

namespace {

// Each machine rate: its name (the simulator's NeedsMeasurement and the JSON key), where it is
// kept, and how it is measured.
struct RateKind {
  std::string_view key;
  double MachineRates::*member;
  double (*measure)();
};
constexpr RateKind kRateKinds[] = {
    {"memcpy_gb_per_s", &MachineRates::memcpy_gb_per_s, [] { return measure_memcpy_gb_per_s(); }},
    {"fill_gb_per_s", &MachineRates::fill_gb_per_s, [] { return measure_fill_gb_per_s(); }},
    {"socket_gb_per_s", &MachineRates::socket_gb_per_s,
     [] { return pipelines::measure_socket_receive_gb_per_s(); }},
    {"store_first_write_gb_per_s", &MachineRates::store_first_write_gb_per_s,
     [] { return pipelines::measure_store_first_write_gb_per_s(); }},
};

}  // namespace

nlohmann::json to_json(const MachineRates& rates) {
  nlohmann::json out = nlohmann::json::object();
  for (const RateKind& kind : kRateKinds)
    if (rates.*kind.member > 0) out[std::string(kind.key)] = rates.*kind.member;
  return out;
}

SimResult simulate_measured(const nlohmann::json& spec, SimOptions options, MachineRates& rates) {
  auto use = [&] { options.rates = rates; };
  use();
  SimResult r = simulate(spec, options);
  // Each missing rate the simulation asks for, measured once (every pass measures a rate that was
  // 0, or ends the loop): a spec may need all of them.
  while (r.needs_rates) {
    const auto* kind = std::find_if(std::begin(kRateKinds), std::end(kRateKinds),
                                    [&](const RateKind& k) { return k.key == r.needed_rate; });
    if (kind == std::end(kRateKinds)) break;  // a rate this runner does not know
    double& rate = rates.*kind->member;
    if (rate > 0) break;  // measured, and still refused
    rate = kind->measure();
    if (rate <= 0) break;  // could not be measured: the reason says which
    use();
    r = simulate(spec, options);
  }
  return r;
}

Repetition repetition_of(const LoopFigures& f) {
  Repetition rep;
  rep.steps = f.steps;
  rep.wait = f.wait;
  rep.step_mean_ms = f.step_mean_ms;
  rep.steady_wait_mean_ms = f.steady_wait_mean_ms;
  rep.wall_ms = f.wall_ms;
  rep.au_percentage = f.au_percentage;
  rep.samples = f.samples;
  return rep;
}

ExperimentResult run_experiment(const Experiment& x, const RunOptions& options) {
  pipelines::set_minimal_timer_slack();
  ExperimentResult r;
  r.id = x.id;
  r.description = x.description;
  r.epochs = options.epochs > 0 ? options.epochs : x.epochs;
  r.spec = x.spec.dataset.to_json();
  r.seed_ms = x.seed_ms;
  r.documented_ideal_ms = x.documented_ideal_ms;
  r.part = x.part;
  r.seed_wait_ms = x.seed_wait_ms;
  if (r.spec.contains("stages")) {
    for (const auto& stage : r.spec["stages"]) {
      const std::string op = stage.value("op", "");
      if ((op == "multiprocess" || op == "shared_store") && stage.contains("producers") &&
          stage["producers"].is_number_integer()) {
        r.producers = stage["producers"].get<int64_t>();
      }
    }
  }
  StepChoice choice = make_step(options.step.empty() ? x.step : options.step, x.step);
  r.step = choice.step->name();
  r.notice = choice.notice;

  // The published numbers belong to the experiment as published: other epochs or another step
  // time make them incomparable.
  if (r.epochs != x.epochs || (!options.step.empty() && options.step != x.step)) {
    r.seed_ms.reset();
    r.documented_ideal_ms.reset();
    r.seed_wait_ms.reset();
  }

  // The traced run comes first and is not a measurement: recording costs a little per span, and a
  // run interrupted early still leaves its trace.
  if (options.trace && !stopped(options)) {
    trace::Recorder& rec = trace::Recorder::global();
    rec.start();
    Repetition rep;
    nlohmann::json tuned;
    std::vector<pipelines::NodeSnapshot> stages;
    // A GPU step's kernels, copies and API calls join the trace on GPU lanes (CPU-only with one
    // notice where CUPTI cannot be used).
    const bool gpu_step = r.step.starts_with("cuda:");
    trace::GpuTracer gpu;
    if (gpu_step) gpu.start();
    try {
      rep = run_once(x, *choice.step, r.epochs, options, stages, tuned);
    } catch (...) {
      gpu.stop();
      rec.stop();
      throw;
    }
    gpu.stop();  // merges into the recording, so before the recorder stops
    r.trace = std::make_shared<trace::Trace>(rec.stop());
    if (gpu_step) {
      r.trace->metadata["gpu_timeline"] = gpu.notice().empty() ? "cupti" : "off: " + gpu.notice();
      r.trace->metadata["gpu_records_dropped"] = std::to_string(gpu.dropped_records());
    }
    r.trace->metadata["experiment"] = x.id;
    r.trace->metadata["step"] = r.step;
    r.trace->metadata["epochs"] = std::to_string(r.epochs);
    if (rep.interrupted) r.trace->metadata["interrupted"] = "true";
    r.interrupted = rep.interrupted;
  }
  for (int i = 0; i < std::max(1, options.repetitions) && !stopped(options); ++i) {
    Repetition rep = run_once(x, *choice.step, r.epochs, options, r.stages, r.autotune);
    r.interrupted = r.interrupted || rep.interrupted;
    if (options.on_repetition) options.on_repetition(i, rep);
    if (rep.interrupted) break;  // a partial repetition is not a measurement
    r.repetitions.push_back(rep);
  }
  summarize_repetitions(r);
  // The machine's rates, measured in the same run: the transport's floor, and what the simulator
  // needs for CPU fills and copies.
  MachineRates rates;
  if (has_process_transport(r.spec) && !stopped(options))
    rates.memcpy_gb_per_s = measure_memcpy_gb_per_s();

  SimOptions sim{.step_ms = choice.step->target_ms(), .epochs = r.epochs};
  const SimResult ideal = simulate_measured(r.spec, sim, rates);
  sim.bound = true;
  const SimResult bound = simulate_measured(r.spec, sim, rates);
  r.rates = rates;
  if (bound.supported) r.bound_ms = bound.total_ms;
  if (ideal.supported) {
    r.ideal_ms = ideal.total_ms;
    if (ideal.elements > 0) r.ideal_wait_ms = ideal.wait_mean_ms;
    // With the online tuner moving the knobs, the configured values are "the best": the ideal
    // is the bound.
    if (!r.autotune.is_null() && bound.supported) {
      r.ideal_ms = bound.total_ms;
      r.ideal_basis = "bound: the online tuner moved the knobs";
    }
    if (!r.repetitions.empty() && *r.ideal_ms > 0) r.efficiency = *r.ideal_ms / r.median_wall_ms;
  } else {
    r.simulation_note = ideal.reason;
  }
  return r;
}

void summarize_repetitions(ExperimentResult& r) {
  std::vector<double> walls, means, p50s, p99s, maxs, steady;
  for (const auto& rep : r.repetitions) {
    walls.push_back(rep.wall_ms);
    means.push_back(rep.wait.mean_ms);
    p50s.push_back(rep.wait.p50_ms);
    p99s.push_back(rep.wait.p99_ms);
    maxs.push_back(rep.wait.max_ms);
    steady.push_back(rep.steady_wait_mean_ms);
    r.elements = rep.steps;
  }
  r.median_wall_ms = median(walls);
  r.median_wait = {median(means), median(p50s), median(p99s), median(maxs)};
  r.median_steady_wait_ms = median(steady);
}

double bytes_copied_per_element(const ExperimentResult& r) {
  double copied = 0;
  for (const auto& s : r.stages)
    if (s.elements > 0)
      copied += static_cast<double>(s.bytes_copied) / static_cast<double>(s.elements);
  return copied;
}

std::optional<double> copy_floor_ms_per_element(const ExperimentResult& r) {
  if (r.rates.memcpy_gb_per_s <= 0) return std::nullopt;
  return bytes_copied_per_element(r) / (r.rates.memcpy_gb_per_s * 1e9) * 1e3;
}

nlohmann::json to_json(const ExperimentResult& r) {
  auto opt = [](const std::optional<double>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  auto waits = [](const WaitStats& w) {
    return nlohmann::json{
        {"mean_ms", w.mean_ms}, {"p50_ms", w.p50_ms}, {"p99_ms", w.p99_ms}, {"max_ms", w.max_ms}};
  };
  nlohmann::json reps = nlohmann::json::array();
  for (const auto& rep : r.repetitions) {
    reps.push_back({{"wall_ms", rep.wall_ms},
                    {"steps", rep.steps},
                    {"wait", waits(rep.wait)},
                    {"step_mean_ms", rep.step_mean_ms},
                    {"steady_wait_mean_ms", rep.steady_wait_mean_ms},
                    {"cpu_ms", rep.cpu_ms},
                    {"peak_rss_kb", rep.peak_rss_kb},
                    {"au_percentage", rep.au_percentage},
                    {"samples", rep.samples},
                    {"samples_per_second",
                     rep.wall_ms > 0 ? static_cast<double>(rep.samples) / (rep.wall_ms / 1e3) : 0.0}});
  }
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& s : r.stages) {
    nlohmann::json knobs = nlohmann::json::object();
    for (const auto& [k, v] : s.knobs)
      knobs[k] = v;
    stages.push_back({{"key", s.key},
                      {"name", s.name},
                      {"elements", s.elements},
                      {"wall_us_per_element", s.wall_ns_per_element / 1e3},
                      {"cpu_share", s.cpu_share},
                      {"blocked_ms", static_cast<double>(s.blocked_ns) / 1e6},
                      {"mean_buffered", s.mean_buffered},
                      {"knobs", knobs}});
    if (s.bytes_copied > 0 && s.elements > 0) {
      stages.back()["bytes_copied_per_element"] =
          static_cast<double>(s.bytes_copied) / static_cast<double>(s.elements);
    }
    if (s.files_opened > 0) {  // a file source: its storage reads
      stages.back()["bytes_read"] = s.bytes_read;
      stages.back()["read_calls"] = s.read_calls;
      stages.back()["files_opened"] = s.files_opened;
      stages.back()["read_mb_per_s"] = s.read_mb_per_s;
      stages.back()["first_byte_ms"] = s.mean_first_byte_ns / 1e6;
    }
  }
  nlohmann::json out{{"id", r.id},
                     {"kind", results::entry_kind_name(r.kind)},
                     {"description", r.description},
                     {"step", r.step},
                     {"epochs", r.epochs},
                     {"spec", r.spec},
                     {"repetitions", reps},
                     {"median_wall_ms", r.median_wall_ms},
                     {"median_wait", waits(r.median_wait)},
                     {"elements", r.elements},
                     {"ideal_ms", opt(r.ideal_ms)},
                     {"bound_ms", opt(r.bound_ms)},
                     {"efficiency", opt(r.efficiency)},
                     {"seed_ms", opt(r.seed_ms)},
                     {"documented_ideal_ms", opt(r.documented_ideal_ms)},
                     {"interrupted", r.interrupted},
                     {"stages", stages}};
  if (!r.simulation_note.empty()) out["simulation_note"] = r.simulation_note;
  if (!r.notice.empty()) out["notice"] = r.notice;
  if (!r.autotune.is_null()) out["autotune"] = r.autotune;
  if (!r.trace_file.empty()) out["trace"] = r.trace_file;
  if (!r.ideal_basis.empty()) out["ideal_basis"] = r.ideal_basis;
  out["median_steady_wait_ms"] = r.median_steady_wait_ms;
  if (!r.part.empty()) out["part"] = r.part;
  if (r.seed_wait_ms) out["seed_wait_ms"] = *r.seed_wait_ms;
  if (r.producers > 0) out["producers"] = r.producers;
  // A process-based transport's cost against its physical floor: the copies it made per element
  // at the machine's memcpy bandwidth.
  if (r.rates.memcpy_gb_per_s > 0) {
    out["transport"] = {{"memcpy_gb_per_s", r.rates.memcpy_gb_per_s},
                        {"bytes_copied_per_element", bytes_copied_per_element(r)},
                        {"copy_floor_ms_per_element", *copy_floor_ms_per_element(r)}};
  }
  // The rates the simulator's ideal was computed with (CPU fills, copies, socket receives).
  if (nlohmann::json rates = to_json(r.rates); !rates.empty()) {
    out["measured_rates"] = std::move(rates);
  }
  if (r.ideal_wait_ms) out["ideal_wait_ms"] = *r.ideal_wait_ms;
  // Per input element: what the source produced, over all epochs.
  for (const auto& s : r.stages) {
    if (s.key == "stages[0]" && s.elements > 0 && !r.repetitions.empty()) {
      out["source_elements"] = s.elements * r.epochs;
      out["ns_per_source_element"] =
          r.median_wall_ms * 1e6 / static_cast<double>(s.elements * r.epochs);
    }
  }
  if (r.workload) out["workload"] = results::to_json(*r.workload);
  if (r.ranks) out["ranks"] = results::to_json(*r.ranks);
  if (r.loader_watch) out["loader_watch"] = results::to_json(*r.loader_watch);
  return out;
}

}  // namespace pipeprof::harness
