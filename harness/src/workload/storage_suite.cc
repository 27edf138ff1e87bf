#include "workload/storage_suite.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>

#include "pipeprof/harness/errors.h"
#include "pipeprof/harness/subprocess.h"
#include "pipeprof/pipelines/datagen.h"
#include "pipeprof/pipelines/remote.h"
#include "pipeprof/testbed/object_server.h"
#include "workload/dlio_workload.h"
#include "workload/growing_run.h"
#include "workload/workload_run.h"

namespace pipeprof::harness::workload {
namespace {

namespace fs = std::filesystem;

// A workload file with its dataset under `data` (in a folder named after the workload, or
// `folder`), at its own scale, `epochs` epochs.
DlioWorkload prepared(const std::string& name, const fs::path& data, int64_t epochs,
                      const std::string& folder = "") {
  DlioWorkload w = load_workload(
      (workloads_dir() / (name + ".yaml")).string(),
      {fmt::format("++workload.dataset.data_folder={}", (data / (folder.empty() ? name : folder)).string()),
       fmt::format("++workload.train.epochs={}", epochs)});
  apply_scale(w, w.scale);
  return w;
}

void generate(const DlioWorkload& w, const StorageSuiteOptions& o) {
  pipelines::formats::GenerateOptions g;
  g.stop = o.stop;
  const auto r = pipelines::formats::generate_dataset(w.dataset, g);
  if (r.files_written > 0 && o.log) {
    o.log(fmt::format("{}: generated {} files ({:.0f} MB) in {:.1f} s", w.name, r.files_written,
                      static_cast<double>(r.bytes_written) / 1e6, r.seconds));
  }
  if (r.interrupted) throw RunFailure("interrupted while generating the dataset");
}

nlohmann::json entry(const DlioWorkload& w, const WorkloadResult& r) {
  nlohmann::json x = to_json(to_experiment(w, r));
  x["workload"] = workload_json(w, r);
  return x;
}

// MemAvailable from /proc/meminfo, in bytes (0 when it cannot be read).
int64_t available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("MemAvailable:")) continue;
    try {
      return std::stoll(line.substr(line.find(':') + 1)) * 1024;  // "MemAvailable:  123 kB"
    } catch (const std::exception&) {
      return 0;
    }
  }
  return 0;
}

bool python_has_torch() {
  return run_process({"/usr/bin/python3", "-c", "import torch, numpy, yaml"}).ok();
}

}  // namespace

fs::path workloads_dir() {
  if (const char* env = std::getenv("PIPEPROF_WORKLOADS"); env != nullptr && *env != '\0')
    return env;
  return PIPEPROF_WORKLOADS_DIR;
}

fs::path pytorch_peer() {
  if (const char* env = std::getenv("PIPEPROF_PEER"); env != nullptr && *env != '\0') return env;
  return PIPEPROF_PEER_SCRIPT;
}

std::vector<nlohmann::json> run_storage_suite(const StorageSuiteOptions& o, int& failed) {
  std::vector<nlohmann::json> out;
  const fs::path data = o.out / "data";
  const int64_t epochs = o.quick ? 1 : 2;
  auto stopped = [&] { return o.stop != nullptr && o.stop->load(); };
  auto attempt = [&](const std::string& what, auto&& fn) {
    if (stopped()) return;
    try {
      fn();
    } catch (const std::exception& e) {
      ++failed;
      if (o.log) o.log(fmt::format("{}: failed: {}", what, e.what()));
    }
  };
  // The MLPerf Storage workloads, one accelerator each, on files read once first when they fit
  // in half the available memory: otherwise the AU would depend on what earlier runs left in
  // the page cache (the storage's own limit is the cold search's, below).
  for (const char* name : {"unet3d_h100", "resnet50_h100", "cosmoflow_h100"}) {
    attempt(name, [&] {
      const DlioWorkload w = prepared(name, data, epochs);
      generate(w, o);
      const std::vector<std::string> files = training_files(w);
      const bool warm = files_bytes(files) <= available_memory_bytes() / 2;
      if (warm) (void)measure_storage_mib_per_s(files, 4, false, o.stop);
      const WorkloadResult r = run_workload(w, {.accelerators = 1, .stop = o.stop});
      if (o.log) {
        o.log(fmt::format("{}: AU {:.2f}% ({}), {:.1f} samples/s, {:.1f} MiB/s ({})", w.name,
                          r.metrics.au_mean_percentage, r.metrics.meets_au ? "meets" : "below",
                          r.metrics.throughput_mean, r.metrics.io_mean_mb_per_s,
                          warm ? "files read into the page cache first"
                               : "files larger than half the available memory, not cached first"));
      }
      nlohmann::json x = entry(w, r);
      x["workload"]["page_cache"] = warm ? "warm" : "as found";
      out.push_back(std::move(x));
    });
  }
  // The loader comparison: the most accelerators each loader sustains on the same files.
  attempt("npz_256k", [&] {
    const DlioWorkload w = prepared("npz_256k", data, epochs);
    generate(w, o);
    WorkloadOptions options{.stop = o.stop};
    const int64_t limit = o.quick ? 16 : 64;
    const MaxAcceleratorSearch s = find_max_accelerators(w, options, limit, {});
    const WorkloadResult r = run_workload(w, {.accelerators = std::max<int64_t>(1, s.max_accelerators),
                                              .stop = o.stop});
    nlohmann::json x = entry(w, r);
    x["workload"]["max_accelerators"] = search_json(s, false, limit);
    if (o.log) {
      o.log(fmt::format("npz_256k: pipeprof sustains {} accelerators at AU >= {:.0f}% (storage "
                        "bound {:.1f})",
                        s.max_accelerators, w.au * 100, s.bound));
    }
    out.push_back(std::move(x));
    if (stopped()) return;
    if (!python_has_torch()) {
      if (o.log) o.log("npz_256k: the PyTorch peer skipped (/usr/bin/python3 lacks torch)");
      return;
    }
    const fs::path peer_out = o.out / "pytorch_npz_256k.json";
    const ProcessResult peer_run = run_process(
        {"/usr/bin/python3", pytorch_peer().string(), (workloads_dir() / "npz_256k.yaml").string(),
         "++workload.dataset.data_folder=" + w.dataset.data_folder,
         fmt::format("++workload.train.epochs={}", epochs), "--find-max-accelerators",
         "--max-accelerators", o.quick ? "4" : "8", "-q", "--out", peer_out.string()});
    if (stopped() || peer_run.exit_code == 130) return;  // interrupted
    if (!peer_run.ok()) {
      throw RunFailure(fmt::format("the PyTorch peer failed (exit {}): {}", peer_run.exit_code,
                                   peer_run.output));
    }
    std::ifstream in(peer_out);
    nlohmann::json peer = nlohmann::json::parse(in).at("experiments").at(0);
    peer["id"] = peer["id"].get<std::string>() + " (pytorch)";
    if (o.log) {
      o.log(fmt::format(
          "npz_256k: PyTorch's DataLoader sustains {} accelerators",
          peer.value(nlohmann::json::json_pointer("/workload/max_accelerators/max_accelerators"),
                     0)));
    }
    out.push_back(std::move(peer));
  });
  // The same search with the files dropped from the page cache before every epoch and before
  // every storage measure, as MLPerf Storage's rules require (a dataset too large to be cached):
  // the loader against the device itself.
  attempt("npz_256k (cold)", [&] {
    const DlioWorkload w = prepared("npz_256k", data, epochs);
    generate(w, o);
    const MaxAcceleratorSearch s =
        find_max_accelerators(w, {.drop_caches = true, .stop = o.stop}, 64, {});
    if (s.interrupted) return;
    const WorkloadResult r = run_workload(
        w, {.accelerators = std::max<int64_t>(1, s.max_accelerators), .drop_caches = true,
            .stop = o.stop});
    nlohmann::json x = entry(w, r);
    x["id"] = x["id"].get<std::string>() + " (cold)";
    x["workload"]["max_accelerators"] = search_json(s, true, 64);
    if (o.log) {
      o.log(fmt::format("npz_256k, cold: pipeprof sustains {} accelerators at AU >= {:.0f}%, "
                        "{:.0f}% of the storage bound ({:.1f}: {:.0f} MiB/s read from the device)",
                        s.max_accelerators, w.au * 100,
                        s.bound > 0 ? 100.0 * static_cast<double>(s.max_accelerators) / s.bound : 0,
                        s.bound, s.storage_mib_per_s));
    }
    out.push_back(std::move(x));
  });
  // Remote object storage (C2): the same dataset served by nginx, read in the three ways.
  std::string why;
  if (!testbed::ObjectServer::available(true, &why)) {
    if (o.log) o.log("remote_*: skipped: " + why);
    return out;
  }
  for (const char* name :
       {"remote_copy_first", "remote_direct", "remote_cached", "remote_cached_preload"}) {
    attempt(name, [&] {
      const DlioWorkload w = prepared(name, data, o.quick ? 2 : 3, "remote_256k");
      generate(w, o);
      const WorkloadResult r =
          run_workload(w, {.accelerators = 1, .stop = o.stop, .scratch_dir = o.out / "scratch"});
      if (o.log) {
        std::string times;
        for (const auto& e : r.remote.value("epochs", nlohmann::json::array())) {
          times += fmt::format("{}{:.2f} s", times.empty() ? "" : ", ", e.value("seconds", 0.0));
        }
        o.log(fmt::format("{}: AU {:.2f}%, epochs {}; first step after {:.2f} s", w.name,
                          r.metrics.au_mean_percentage, times,
                          r.remote.value("time_to_first_step_seconds", 0.0)));
      }
      out.push_back(entry(w, r));
    });
  }
  // The local sample cache that grows every epoch (C3), on the same dataset.
  attempt("growing_cache", [&] {
    const DlioWorkload w = prepared("growing_cache", data, o.quick ? 4 : 8, "remote_256k");
    generate(w, o);
    const GrowingRun g = run_growing_cache(w, o.out / "scratch", o.stop);
    if (o.log) {
      double slowest = 0;
      for (const GrowingEpoch& e : g.epochs) {
        slowest = slowest == 0 ? e.deserialize_mb_s_per_thread
                               : std::min(slowest, e.deserialize_mb_s_per_thread);
      }
      o.log(fmt::format("growing_cache: {} epochs, {} shards in the last, deserialization >= {:.0f} "
                        "MB/s per reader thread",
                        g.epochs.size(), g.epochs.empty() ? 0 : g.epochs.back().shards, slowest));
    }
    out.push_back(growing_entry(w, g));
  });
  std::error_code ec;
  fs::remove(o.out / "scratch", ec);  // the runs removed what they put there; empty now
  return out;
}

}  // namespace pipeprof::harness::workload
