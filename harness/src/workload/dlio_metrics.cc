#include "workload/dlio_metrics.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <numeric>
#include <thread>

#include "pipeprof/trace/clock.h"

namespace pipeprof::harness::workload {

double host_memory_gb() {
  const auto pages = ::sysconf(_SC_PHYS_PAGES);
  const auto page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0
             ? static_cast<double>(pages) * static_cast<double>(page) / 1024.0 / 1024.0 / 1024.0
             : 0;
}

double mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double population_stdev(const std::vector<double>& v) {
  if (v.empty()) return 0;
  const double m = mean(v);
  double sum = 0;
  for (double x : v)
    sum += (x - m) * (x - m);
  return std::sqrt(sum / static_cast<double>(v.size()));
}

namespace {

// The lines "key : value" of a /proc file as DLIO's lines_to_dict reads them: lines with exactly
// one ':', both sides trimmed, the last of a repeated key kept; `processor` skipped.
nlohmann::ordered_json proc_dict(const std::string& path) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  std::ifstream in(path);
  std::string line;
  auto trim = [](std::string s) {
    const auto b = s.find_first_not_of(" \t");
    const auto e = s.find_last_not_of(" \t");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  };
  while (std::getline(in, line)) {
    if (std::count(line.begin(), line.end(), ':') != 1) continue;
    const auto colon = line.find(':');
    const std::string key = trim(line.substr(0, colon));
    if (key.empty() || key == "processor") continue;
    out[key] = trim(line.substr(colon + 1));
  }
  return out;
}


std::string hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

std::string processor_name() {
  const nlohmann::ordered_json cpu = proc_dict("/proc/cpuinfo");
  return cpu.contains("model name") ? cpu["model name"].get<std::string>() : "";
}

}  // namespace

EpochMetrics epoch_metrics(const DlioWorkload& w, const EpochRecord& epoch, int64_t steps) {
  return harness::epoch_metrics(
      epoch, {.exclude_start = w.exclude_start_steps, .exclude_end = w.exclude_end_steps, .steps = steps},
      w.batch_size);
}

RunMetrics run_metrics(const DlioWorkload& w, const TrainRun& run, int64_t steps) {
  RunMetrics m;
  m.accelerators = static_cast<int64_t>(run.accelerators.size());
  size_t epochs = 0;
  for (const auto& a : run.accelerators)
    epochs = std::max(epochs, a.epochs.size());
  std::vector<int64_t> waits;
  double barrier_sum = 0;
  int64_t barrier_count = 0;
  for (size_t e = 0; e < epochs; ++e) {
    double au_sum = 0, throughput_sum = 0;
    int64_t bytes = 0, slowest = 0;
    bool any = false;
    for (const auto& a : run.accelerators) {
      if (e >= a.epochs.size()) continue;
      const EpochRecord& rec = a.epochs[e];
      const EpochMetrics em = epoch_metrics(w, rec, steps);
      au_sum += em.au;  // an accelerator without a measured epoch counts as 0, as in DLIO
      throughput_sum += em.throughput;
      any = any || em.measured;
      bytes += rec.bytes_read;
      slowest = std::max(slowest, rec.end_ns - rec.start_ns);
      for (const StepRecord& s : rec.steps) {
        waits.push_back(s.load_ns);
        barrier_sum += static_cast<double>(s.barrier_ns);
        ++barrier_count;
      }
    }
    if (!any) continue;  // an epoch cut short before any accelerator measured it
    m.au_percentage.push_back(100 * au_sum / static_cast<double>(m.accelerators));
    m.throughput_samples_per_s.push_back(throughput_sum);
    m.bytes_read_per_epoch.push_back(bytes);
    m.epoch_seconds.push_back(trace::ns_to_seconds(slowest));
  }
  m.au_mean_percentage = mean(m.au_percentage);
  m.au_stdev_percentage = population_stdev(m.au_percentage);
  m.throughput_mean = mean(m.throughput_samples_per_s);
  m.throughput_stdev = population_stdev(m.throughput_samples_per_s);
  m.io_mean_mb_per_s = m.throughput_mean * record_bytes(w) / 1024.0 / 1024.0;
  m.io_stdev_mb_per_s = m.throughput_stdev * record_bytes(w) / 1024.0 / 1024.0;
  m.meets_au = !m.au_percentage.empty() && m.au_mean_percentage >= w.au * 100;
  for (const auto& a : run.accelerators) {
    std::vector<double> au, thr;
    for (const EpochRecord& rec : a.epochs) {
      const EpochMetrics em = epoch_metrics(w, rec, steps);
      if (!em.measured) continue;
      au.push_back(100 * em.au);
      thr.push_back(em.throughput);
    }
    m.accelerator_au_percentage.push_back(mean(au));
    m.accelerator_throughput.push_back(mean(thr));
  }
  if (!waits.empty()) {
    std::sort(waits.begin(), waits.end());
    auto q = [&](double p) {
      const auto rank = static_cast<size_t>(std::ceil(p * static_cast<double>(waits.size())));
      return static_cast<double>(waits[std::min(waits.size() - 1, rank == 0 ? 0 : rank - 1)]) / 1e6;
    };
    m.wait_p50_ms = q(0.50);
    m.wait_p99_ms = q(0.99);
    m.wait_mean_ms = static_cast<double>(std::accumulate(waits.begin(), waits.end(), int64_t{0})) /
                     static_cast<double>(waits.size()) / 1e6;
  }
  if (barrier_count > 0) m.barrier_mean_ms = barrier_sum / static_cast<double>(barrier_count) / 1e6;
  return m;
}

namespace {

// A wall-clock time as DLIO stamps it: local time, microseconds.
std::string local_timestamp(std::chrono::system_clock::time_point t) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  const auto us =
      std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count() % 1000000;
  std::tm tm{};
  ::localtime_r(&seconds, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:06d}", buf, us);
}

}  // namespace

std::string dlio_timestamp() {
  return local_timestamp(std::chrono::system_clock::now());
}

nlohmann::ordered_json summary_json(const DlioWorkload& w, const RunMetrics& m,
                                    const std::string& start, const std::string& end,
                                    const results::CheckpointRecord* checkpoint) {
  nlohmann::ordered_json metric = nlohmann::ordered_json::object();
  if (w.train) {
  metric["train_au_percentage"] = m.au_percentage;
  metric["train_au_mean_percentage"] = m.au_mean_percentage;
  metric["train_au_meet_expectation"] = m.meets_au ? "success" : "fail";
  metric["train_au_stdev_percentage"] = m.au_stdev_percentage;
  metric["train_throughput_samples_per_second"] = m.throughput_samples_per_s;
  metric["train_throughput_mean_samples_per_second"] = m.throughput_mean;
  metric["train_throughput_stdev_samples_per_second"] = m.throughput_stdev;
  metric["train_io_mean_MB_per_second"] = m.io_mean_mb_per_s;
  metric["train_io_stdev_MB_per_second"] = m.io_stdev_mb_per_s;
  }
  if (checkpoint != nullptr) {  // DLIO's keys; GB is GiB, as DLIO divides by 1024^3
    // The record holds them under DLIO's names (results.json's checkpoint object).
    const nlohmann::json record = results::to_json(*checkpoint);
    for (const auto& [key, value] : record.items()) {
      if (key.starts_with("save_checkpoint_") || key.starts_with("load_checkpoint_")) metric[key] = value;
    }
    metric["checkpoint_size_GB"] = record.at("checkpoint_size_GB");
  }

  const double memory_gb = host_memory_gb();
  const double data_gb = static_cast<double>(w.dataset.num_samples_per_file) *
                         static_cast<double>(w.dataset.num_files_train) * record_bytes(w) / 1024.0 /
                         1024.0 / 1024.0;
  nlohmann::ordered_json s = nlohmann::ordered_json::object();
  s["start"] = start;
  s["num_accelerators"] = m.accelerators;
  s["num_hosts"] = 1;
  s["hostname"] = hostname();
  s["metric"] = metric;
  s["num_files_train"] = w.dataset.num_files_train;
  s["num_files_eval"] = w.dataset.num_files_eval;
  s["num_samples_per_file"] = w.dataset.num_samples_per_file;
  s["host_cpu_count"] = {static_cast<int64_t>(std::thread::hardware_concurrency())};
  s["host_processor_name"] = processor_name();
  s["potential_caching"] = {memory_gb <= data_gb ? 0 : 1};
  s["host_cpuinfo"] = proc_dict("/proc/cpuinfo");
  s["host_meminfo"] = proc_dict("/proc/meminfo");
  s["host_memory_GB"] = {memory_gb};
  s["data_size_per_host_GB"] = data_gb;
  s["epochs"] = m.au_percentage.size();
  s["end"] = end;
  return s;
}

nlohmann::ordered_json per_epoch_stats_json(const TrainRun& run,
                                            const std::vector<CheckpointOp>& checkpoints,
                                            double checkpoint_gib) {
  // The trace clock's epochs as wall-clock times, through the offset between the two clocks now.
  const auto wall_now = std::chrono::system_clock::now();
  const int64_t mono_now = trace::now_ns();
  auto stamp = [&](int64_t ns) {
    return local_timestamp(std::chrono::time_point_cast<std::chrono::system_clock::duration>(
        wall_now - std::chrono::nanoseconds(mono_now - ns)));
  };
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  // DLIO's save_ckpt<block> / load_ckpt<block> of an epoch: start, end, rank 0's duration and the
  // checkpoint's GiB over it.
  const std::vector<CheckpointOp> merged = merge_ops(checkpoints);  // every process's ranks as one
  auto add_checkpoints = [&](int64_t epoch, nlohmann::ordered_json& into) {
    for (const CheckpointOp& op : merged) {
      if (op.epoch != epoch) continue;
      double seconds = 0;
      for (size_t k = 0; k < op.ranks.size(); ++k)
        if (op.ranks[k] == 0) seconds = op.seconds[k];
      into[fmt::format("{}_ckpt{}", op.save ? "save" : "load", op.index)] = {
          {"start", stamp(op.start_ns)},
          {"end", stamp(op.end_ns)},
          {"duration", seconds},
          {"throughput", seconds > 0 ? checkpoint_gib / seconds : 0.0}};
    }
  };
  if (run.accelerators.empty()) {
    if (!merged.empty()) {  // checkpoint-only: epoch 1 holds them
      int64_t first = merged.front().start_ns, last = merged.front().end_ns;
      for (const CheckpointOp& op : merged) {
        first = std::min(first, op.start_ns);
        last = std::max(last, op.end_ns);
      }
      nlohmann::ordered_json epoch = nlohmann::ordered_json::object();
      epoch["start"] = stamp(first);
      add_checkpoints(1, epoch);
      epoch["end"] = stamp(last);
      epoch["duration"] = fmt::format("{:.2f}", trace::ns_to_seconds(last - first));
      out["1"] = epoch;
    }
    return out;
  }
  for (const EpochRecord& e : run.accelerators.front().epochs) {
    nlohmann::ordered_json epoch = nlohmann::ordered_json::object();
    epoch["start"] = stamp(e.start_ns);
    epoch["block1"] = {{"start", stamp(e.start_ns)},
                       {"end", stamp(e.end_ns)},
                       {"duration", fmt::format("{:.2f}", trace::ns_to_seconds(e.end_ns - e.start_ns))}};
    add_checkpoints(e.epoch, epoch);
    epoch["end"] = stamp(e.end_ns);
    epoch["duration"] = fmt::format("{:.2f}", trace::ns_to_seconds(e.end_ns - e.start_ns));
    out[std::to_string(e.epoch)] = epoch;
  }
  return out;
}

std::string metric_block(const DlioWorkload& w, const RunMetrics& m) {
  std::string out = "Averaged metric over all steps/epochs\n";
  out += "[METRIC] ==========================================================\n";
  out += fmt::format("[METRIC] Number of Simulated Accelerators: {} \n", m.accelerators);
  out += fmt::format("[METRIC] Training Accelerator Utilization [AU] (%): {:.4f} ({:.4f})\n",
                     m.au_mean_percentage, m.au_stdev_percentage);
  out += fmt::format("[METRIC] Training Throughput (samples/second): {:.4f} ({:.4f})\n",
                     m.throughput_mean, m.throughput_stdev);
  out += fmt::format("[METRIC] Training I/O Throughput (MB/second): {:.4f} ({:.4f})\n",
                     m.io_mean_mb_per_s, m.io_stdev_mb_per_s);
  out += fmt::format("[METRIC] train_au_meet_expectation: {}\n", m.meets_au ? "success" : "fail");
  out += "[METRIC] ==========================================================\n";
  (void)w;
  return out;
}

}  // namespace pipeprof::harness::workload
