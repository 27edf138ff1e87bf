// The report's storage section: DLIO workloads with AU, the most accelerators and the storage
// bound, and pipeprof beside a peer loader on the same workload, with its chart; the remote and
// growing-cache tables. The documents are written through the typed records, as the harness does.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "pipeprof/results/records.h"
#include "pipeprof/results/report.h"
#include "pipeprof/results/results_file.h"

namespace pipeprof::results {
namespace {

// A workload's record as pipeprof writes it (records.h), with its DLIO figures and a search.
WorkloadRecord workload(double au, int64_t max_accelerators) {
  WorkloadRecord w{.file = "w.yaml", .name = "npz_256k", .format = "npz", .loader = "pytorch",
                   .batch_size = 4, .read_threads = 4, .computation_time = 0.05,
                   .accelerators = 1, .steps_per_epoch = 40};
  w.dlio = DlioFigures{.au_percentage = {au}, .throughput = {150.0}, .au_mean_percentage = au,
                       .throughput_mean = 150.0, .io_mean_mb_per_s = 37.5, .meets_au = au >= 90};
  w.wait = WaitFigures{.mean_ms = 0.1, .p50_ms = 0.05, .p99_ms = 1.25};
  w.max_accelerators = AcceleratorSearch{.max_accelerators = max_accelerators, .limit = 64};
  w.max_accelerators->storage = StorageBound{.samples_mib_per_s = {1250, 1262}, .mib_per_s = 1256,
                                             .demand_mib_per_s = 37.5, .bound_accelerators = 33.5};
  return w;
}

// An entry of `kind` holding the record, as to_json(ExperimentResult) writes it.
nlohmann::json entry(const std::string& id, const WorkloadRecord& w,
                     EntryKind kind = EntryKind::kWorkload) {
  return {{"id", id},
          {"kind", entry_kind_name(kind)},
          {"ideal_ms", 2000},
          {"repetitions", {{{"wall_ms", 2010}}}},
          {"workload", to_json(w)}};
}

nlohmann::json document(const std::vector<nlohmann::json>& experiments) {
  return {{"schema_version", kSchemaVersion}, {"experiments", experiments}};
}

// The report holds this table row (or this start of one).
void expect_row(const std::string& md, const std::string& row) {
  EXPECT_NE(md.find(row), std::string::npos) << row << "\n" << md;
}

TEST(StorageSection, WorkloadsAndPipeprofBesideAPeer) {
  // The same search on cold files: its own row, not set beside the peer (which ran warm).
  WorkloadRecord cold = workload(90.2, 30);
  cold.max_accelerators->storage->cold = true;
  // A search that stopped at its limit: the most is at least that.
  WorkloadRecord capped = workload(99.6, 16);
  capped.max_accelerators->limit = 16;
  capped.name = "npz_quick";
  auto peer_of = [](WorkloadRecord w) {  // a peer's search measures no storage
    w.peer = "pytorch_dataloader";
    w.max_accelerators->storage.reset();
    return w;
  };
  WorkloadRecord capped_peer = peer_of(workload(91.0, 3));
  capped_peer.name = "npz_quick";
  const nlohmann::json doc = document(
      {{{"id", "naive"}, {"kind", "experiment"}, {"repetitions", {{{"wall_ms", 5}}}}},
       entry("workload:npz_256k", workload(99.5, 39)),
       entry("workload:npz_256k (pytorch)", peer_of(workload(92.2, 3)), EntryKind::kPeer),
       entry("workload:npz_256k (cold)", cold), entry("workload:npz_256k (quick)", capped),
       entry("workload:npz_quick (pytorch)", capped_peer, EntryKind::kPeer)});
  const Report r = render_report(doc, ".", "doc.json");
  const std::string& md = r.markdown;
  expect_row(md, "## Storage workloads");
  expect_row(md, "| workload:npz_256k | pipeprof | 1 | 99.50 | yes | 150.0 | 37.5 | 1.25 | 39 | 33.5 | "
                 "1.16 |");
  expect_row(md, "| workload:npz_256k (cold) | pipeprof (cold) | 1 | 90.20 | yes | 150.0 | 37.5 | "
                 "1.25 | 30 | 33.5 | 0.90 |");
  expect_row(md, "| workload:npz_256k (quick) | pipeprof | 1 | 99.60 | yes | 150.0 | 37.5 | 1.25 | "
                 ">=16 | 33.5 | >=0.48 |");
  expect_row(md, "| workload:npz_256k (pytorch) | pytorch_dataloader | 1 | 92.20 | yes | 150.0 | 37.5 "
                 "| 1.25 | 3 | - | - |");
  expect_row(md, "| npz_256k | pytorch_dataloader | 39 | 3 | 13.0x | 99.50 | 92.20 |");
  EXPECT_EQ(md.find("| npz_256k | pipeprof (cold) |"), std::string::npos) << md;  // not a peer
  expect_row(md, "| npz_quick | pytorch_dataloader | >=16 | 3 | >=5.3x | 99.60 | 91.00 |");
  bool chart = false;
  for (const auto& f : r.files)
    chart = chart || (f.name == "storage.svg" && f.content.find("pipeprof") != std::string::npos);
  EXPECT_TRUE(chart);
  // No workload, no section.
  const nlohmann::json plain = document(
      {{{"id", "naive"}, {"kind", "experiment"}, {"repetitions", {{{"wall_ms", 5}}}}}});
  EXPECT_EQ(render_report(plain, ".", "doc.json").markdown.find("## Storage workloads"),
            std::string::npos);
}

TEST(StorageSection, SearchesBesideTheirPredictionsWithTheirChart) {
  WorkloadRecord cold = workload(90.2, 20);
  cold.max_accelerators->prediction =
      PredictionCheck{.storage = "local, cold", .predicted = 18, .binding = "storage bandwidth",
                      .profile_mib_per_s = 812.4, .error_percent = -10};
  WorkloadRecord http = workload(91.5, 16);
  http.max_accelerators->limit = 16;  // at its limit: no error
  http.max_accelerators->prediction =
      PredictionCheck{.storage = "http 5 ms, 32 MiB/s", .predicted = 40, .binding = "client CPU",
                      .extrapolated = true, .profile_mib_per_s = 700};
  WorkloadRecord plain = workload(99.5, 39);  // no prediction: no row
  const nlohmann::json doc = document({entry("workload:npz_256k (cold)", cold),
                                       entry("workload:npz_256k_http", http),
                                       entry("workload:npz_256k", plain)});
  const Report r = render_report(doc, ".", "doc.json");
  const std::string& md = r.markdown;
  expect_row(md, "### Predicted against measured");
  expect_row(md, "| npz_256k | local, cold | 18 | 20 | -10.0% | storage bandwidth | 812 |");
  expect_row(md, "| npz_256k | http 5 ms, 32 MiB/s | 40 (extrapolated) | >=16 | - | client CPU | 700 |");
  size_t rows = 0;
  for (size_t at = md.find("| npz_256k | "); at != std::string::npos; at = md.find("| npz_256k | ", at + 1))
    ++rows;
  EXPECT_EQ(rows, 2u) << md;
  bool chart = false;
  for (const auto& f : r.files) {
    chart = chart || (f.name == "prediction.svg" &&
                      f.content.find("npz_256k, local, cold") != std::string::npos);
  }
  EXPECT_TRUE(chart);
  // Without a prediction, no subsection and no chart.
  const Report none = render_report(document({entry("workload:npz_256k", plain)}), ".", "doc.json");
  EXPECT_EQ(none.markdown.find("Predicted against measured"), std::string::npos);
  for (const auto& f : none.files)
    EXPECT_NE(f.name, "prediction.svg");
}

TEST(StorageSection, RemoteReadsPerEpochWithTheirChart) {
  WorkloadRecord w = workload(88.7, 0);
  w.name = "remote_cached";
  w.max_accelerators.reset();
  w.remote = RemoteRecord{.mode = "cached", .preload = true, .latency_ms = 5,
                          .rate_mib_s_per_request = 200, .requests_in_flight = 4, .files = 64,
                          .dataset_bytes = 134217728, .cache_budget_bytes = 268435456,
                          .cache = CacheCounters{.hits = 72, .misses = 64},
                          .time_to_first_step_seconds = 0.082,
                          .time_to_first_step_ideal_seconds = 0.073};
  w.remote->epochs = {
      {.epoch = 1, .seconds = 4.89, .ideal_seconds = 4.65, .au_percentage = 66.2,
       .remote_bytes = 134217728, .requests = 64, .cache_hits = 8, .cache_misses = 64,
       .cache_hit_ratio = 0.111},
      {.epoch = 2, .seconds = 3.21, .ideal_seconds = 3.2, .au_percentage = 99.9, .remote_bytes = 0,
       .cache_hits = 64, .cache_misses = 0, .cache_hit_ratio = 1.0}};
  const nlohmann::json doc = document({entry("workload:remote_cached", w)});
  const Report r = render_report(doc, ".", "doc.json");
  const std::string& md = r.markdown;
  expect_row(md, "### Remote object storage");
  expect_row(md, "| workload:remote_cached | cached + preload | 1 | 4.89 | 4.65 | 66.2 | 128.0 | "
                    "11.1% |");
  expect_row(md, "| workload:remote_cached | cached + preload | 2 | 3.21 | 3.20 | 99.9 | 0.0 | "
                    "100.0% |");
  expect_row(md, "| workload:remote_cached | cached + preload | first step | 0.08 | 0.07 |");
  bool chart = false;
  for (const auto& f : r.files) {
    chart = chart || (f.name == "remote.svg" &&
                      f.content.find("remote_cached: epoch 1 4.89 s") != std::string::npos);
  }
  EXPECT_TRUE(chart);
}

TEST(StorageSection, GrowingCacheEpochs) {
  WorkloadRecord w{.file = "g.yaml", .name = "growing_cache", .format = "tfrecord", .batch_size = 8,
                   .read_threads = 2, .computation_time = 0.01};
  w.growing_cache = GrowingCacheRecord{.samplers = 4, .shard_samples = 64, .latency_ms = 5,
                                       .rate_mib_s_per_request = 100, .budget_mib = 64,
                                       .time_to_first_step_seconds = 0.3};
  w.growing_cache->epochs = {
      {.epoch = 1, .shards = 1, .samples = 64, .steps = 8, .evicted_shards = 0, .bytes = 65536,
       .seconds = 0.41, .au_percentage = 100.0, .wait_mean_ms = 1, .wait_p99_ms = 5.06,
       .deserialize_mb_per_s_per_thread = 802.4},
      {.epoch = 2, .shards = 5, .samples = 320, .steps = 40, .evicted_shards = 3, .bytes = 327680,
       .seconds = 2.01, .au_percentage = 99.8, .wait_mean_ms = 0.5, .wait_p99_ms = 1.46,
       .deserialize_mb_per_s_per_thread = 2723.0}};
  const nlohmann::json doc =
      document({entry("workload:growing_cache", w, EntryKind::kGrowingCache)});
  const std::string md = render_report(doc, ".", "doc.json").markdown;
  expect_row(md, "### A sample cache that grows every epoch");
  expect_row(md, "| workload:growing_cache | 1 | 1 | 64 | 0 | 0.41 | 100.0 | 5.06 | 802 |");
  expect_row(md, "| workload:growing_cache | 2 | 5 | 320 | 3 | 2.01 | 99.8 | 1.46 | 2723 |");
  // Not a DLIO run: not in the workloads' AU table.
  EXPECT_EQ(md.find("| workload:growing_cache | pipeprof |"), std::string::npos) << md;
}

}  // namespace
}  // namespace pipeprof::results
