#include "workload/storage_suite.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>

#include "pipeprof/harness/errors.h"
#include "pipeprof/pipelines/datagen.h"
#include "pipeprof/pipelines/remote.h"
#include "pipeprof/testbed/object_server.h"
#include "workload/dlio_workload.h"
#include "workload/growing_run.h"
#include "workload/peers.h"
#include "workload/prediction_check.h"
#include "workload/accelerator_search.h"
#include "workload/workload_run.h"

namespace pipeprof::harness::workload {
namespace {

namespace fs = std::filesystem;

// A workload file with its dataset under `data` (in the folder the entry names), at its own
// scale, `epochs` epochs.
DlioWorkload prepared(const SuiteEntry& e, const fs::path& data, int64_t epochs) {
  DlioWorkload w = load_workload(
      (workloads_dir() / (e.workload + ".yaml")).string(),
      {fmt::format("++workload.dataset.data_folder={}", (data / e.data).string()),
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

}  // namespace

fs::path workloads_dir() {
  if (const char* env = std::getenv("PIPEPROF_WORKLOADS"); env != nullptr && *env != '\0')
    return env;
  return PIPEPROF_WORKLOADS_DIR;
}

std::vector<nlohmann::json> run_storage_suite(const StorageSuiteOptions& o,
                                              const std::vector<const SuiteEntry*>& entries,
                                              int& failed) {
  std::vector<nlohmann::json> out;
  const fs::path data = o.out / "data";
  auto stopped = [&] { return o.stop != nullptr && o.stop->load(); };
  auto log = [&](const std::string& line) {
    if (o.log) o.log(line);
  };
  std::string no_nginx;
  const bool nginx = testbed::ObjectServer::available(true, &no_nginx);
  for (const SuiteEntry* entry : entries) {
    const SuiteEntry& e = *entry;
    if (stopped()) break;
    if (e.kind == EntryKind::kCatalog || e.kind == EntryKind::kScaleout) continue;
    if (e.needs == "nginx" && !nginx) {
      log(fmt::format("{}: skipped: {}", e.id, no_nginx));
      continue;
    }
    const int64_t epochs = e.epochs.pick(o.quick);
    const int64_t limit = e.limit.pick(o.quick);
    try {
      switch (e.kind) {
        case EntryKind::kWorkload: {
          const DlioWorkload w = prepared(e, data, epochs);
          generate(w, o);
          if (w.remote.mode != RemoteMode::kNone) {
            // Remote object storage (C2): the dataset served by nginx for this run.
            const WorkloadResult r =
                run_workload(w, {.accelerators = 1, .stop = o.stop, .scratch_dir = o.out / "scratch"});
            std::string times;
            for (const results::RemoteEpoch& epoch : r.remote->epochs)
              times += fmt::format("{}{:.2f} s", times.empty() ? "" : ", ", epoch.seconds);
            log(fmt::format("{}: AU {:.2f}%, epochs {}; first step after {:.2f} s", w.name,
                            r.metrics.au_mean_percentage, times,
                            r.remote->time_to_first_step_seconds.value_or(0)));
            out.push_back(to_json(to_experiment(w, r)));
            break;
          }
          // On files read once first when they fit in half the available memory (with
          // warm_page_cache): otherwise the AU would depend on what earlier runs left in the page
          // cache (the storage's own limit is the cold search's).
          const std::vector<std::string> files = training_files(w);
          const bool warm =
              e.warm_page_cache && files_bytes(files) <= available_memory_bytes() / 2;
          if (warm) (void)measure_storage_mib_per_s(files, 4, false, o.stop);
          const WorkloadResult r = run_workload(w, {.accelerators = 1, .stop = o.stop});
          log(fmt::format("{}: AU {:.2f}% ({}), {:.1f} samples/s, {:.1f} MiB/s ({})", w.name,
                          r.metrics.au_mean_percentage, r.metrics.meets_au ? "meets" : "below",
                          r.metrics.throughput_mean, r.metrics.io_mean_mb_per_s,
                          warm ? "files read into the page cache first"
                               : e.warm_page_cache
                                     ? "files larger than half the available memory, not cached first"
                                     : "files as found in the page cache"));
          ExperimentResult x = to_experiment(w, r);
          x.workload->page_cache = warm ? "warm" : "as found";
          out.push_back(to_json(x));
          break;
        }
        case EntryKind::kSearch: {
          // With `cold`, the files are dropped from the page cache before every epoch and every
          // storage measure, as MLPerf Storage's rules require (a dataset too large to be
          // cached): the loader against the device itself.
          const DlioWorkload w = prepared(e, data, epochs);
          generate(w, o);
          std::optional<SearchPrediction> predicted;
          if (e.predict) {
            predicted = predict_search(w, e.cold, limit, o.stop, log);
            if (predicted->interrupted) break;
            log(fmt::format("{} ({}): pipeprof predict: {} accelerators{}, binding: {}", w.name,
                            predicted->storage, predicted->prediction.max_accelerators,
                            predicted->prediction.extrapolated ? " (extrapolated)" : "",
                            predicted->prediction.binding.empty() ? "-" : predicted->prediction.binding));
          }
          const MaxAcceleratorSearch s =
              find_max_accelerators(w, {.drop_caches = e.cold, .stop = o.stop}, limit,
                                [&](const Probe& p) { log(w.name + ": " + probe_text(p)); });
          if (s.interrupted) break;
          const WorkloadResult r = run_workload(
              w, {.accelerators = std::max<int64_t>(1, s.max_accelerators), .drop_caches = e.cold,
                  .stop = o.stop});
          ExperimentResult x = to_experiment(w, r);
          if (e.cold) x.id += " (cold)";
          x.workload->max_accelerators = search_record(s, e.cold, limit);
          if (predicted) {
            x.workload->max_accelerators->prediction = prediction_check(*predicted, s, limit);
            if (const auto error = x.workload->max_accelerators->prediction->error_percent)
              log(fmt::format("{}: predicted {}, measured {} ({:+.1f}%)", e.id,
                              predicted->prediction.max_accelerators, s.max_accelerators, *error));
          }
          log(fmt::format("{}{}: pipeprof sustains {} accelerators at AU >= {:.0f}%, {:.0f}% of the "
                          "storage bound ({:.1f}: {:.0f} MiB/s {})",
                          w.name, e.cold ? ", cold" : "", s.max_accelerators, w.au * 100,
                          storage_bound_reached_percent(s),
                          s.bound, s.storage_mib_per_s, storage_source_text(s, e.cold)));
          out.push_back(to_json(x));
          break;
        }
        case EntryKind::kPeer: {
          const Peer* peer = find_peer(e.peer);  // known: the manifest was checked
          std::string why;
          if (!peer->available(&why)) {
            log(fmt::format("{}: skipped: {}", e.id, why));
            break;
          }
          const DlioWorkload w = prepared(e, data, epochs);
          generate(w, o);
          std::optional<PeerRun> x = peer->find_max_accelerators(
              {.workload_file = workloads_dir() / (e.workload + ".yaml"),
               .overrides = {"++workload.dataset.data_folder=" + w.dataset.data_folder,
                             fmt::format("++workload.train.epochs={}", epochs)},
               .limit = limit,
               .out = o.out / fmt::format("{}.json", e.id),
               .id = "workload:" + w.name + peer->id_suffix()});
          if (!x || stopped()) break;  // interrupted
          log(fmt::format("{}: {} sustains {} accelerators", w.name, peer->name(),
                          x->read.workload->max_accelerators->max_accelerators));
          out.push_back(std::move(x->entry));
          break;
        }
        case EntryKind::kGrowingCache: {
          // The local sample cache that grows every epoch (C3).
          const DlioWorkload w = prepared(e, data, epochs);
          generate(w, o);
          const GrowingRun g = run_growing_cache(w, o.out / "scratch", o.stop);
          double slowest = 0;
          for (const GrowingEpoch& epoch : g.epochs) {
            slowest = slowest == 0 ? epoch.deserialize_mb_s_per_thread
                                   : std::min(slowest, epoch.deserialize_mb_s_per_thread);
          }
          log(fmt::format("{}: {} epochs, {} shards in the last, deserialization >= {:.0f} MB/s per "
                          "reader thread",
                          e.id, g.epochs.size(), g.epochs.empty() ? 0 : g.epochs.back().shards, slowest));
          out.push_back(growing_entry(w, g));
          break;
        }
        case EntryKind::kCatalog:
        case EntryKind::kScaleout:
          break;
      }
    } catch (const std::exception& ex) {
      ++failed;
      log(fmt::format("{}: failed: {}", e.id, ex.what()));
    }
  }
  std::error_code ec;
  fs::remove(o.out / "scratch", ec);  // the runs removed what they put there; empty now
  return out;
}

}  // namespace pipeprof::harness::workload
