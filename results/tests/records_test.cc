// The typed records of results.json: what to_json writes is read back unchanged, every field is
// in the schema (which allows no other), a value of the wrong type is named by file and JSON path,
// and a file written before schema 4 is read by what its entries hold.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "pipeprof/results/document.h"
#include "pipeprof/results/records.h"
#include "pipeprof/results/report.h"
#include "pipeprof/results/results_file.h"
#include "schema_check.h"

namespace pipeprof::results {
namespace {

using testing::read_json;
using testing::joined;
using testing::schema_problems;

RanksSummary two_ranks() {
  RanksSummary s{.size = 2, .cluster = "Open MPI 4.1.4, 2 ranks", .samples_per_second = 300,
                 .slowest_rank = 1, .slowest_behind_mean_percent = 20, .clock_error_ns = 1500};
  s.rows = {{.rank = 0, .host = "a", .samples_per_second = 180, .au_percentage = 95,
             .accelerators = 2, .cpu_ms = 10},
            {.rank = 1, .host = "b", .samples_per_second = 120, .au_percentage = 80,
             .error = "rank 1: corrupt record", .accelerators = 2}};
  return s;
}

// A workload record with every part a run of `pipeprof workload` can write.
WorkloadRecord full_workload() {
  WorkloadRecord w{.file = "/w/unet3d.yaml", .name = "unet3d", .format = "npz", .loader = "pytorch",
                   .batch_size = 7, .computation_time = {{"mean", 0.323}, {"stdev", 0.01}},
                   .accelerators = 4, .steps_per_epoch = 12, .au_threshold = 0.9, .scale = 0.25};
  w.dlio = DlioFigures{.au_percentage = {91.5, 93.0}, .throughput = {80.5, 81.0},
                       .au_mean_percentage = 92.25, .au_stdev_percentage = 0.75,
                       .throughput_mean = 80.75, .throughput_stdev = 0.25,
                       .io_mean_mb_per_s = 11000.5, .io_stdev_mb_per_s = 34.5, .meets_au = true};
  w.per_accelerator = {{.rank = 0, .au_percentage = 92, .samples_per_second = 20},
                       {.rank = 1, .au_percentage = 92.5, .samples_per_second = 20.5}};
  w.wait = WaitFigures{.mean_ms = 1.5, .p50_ms = 0.5, .p99_ms = 25};
  w.barrier_mean_ms = 0.25;
  w.bytes_read = 1 << 30;
  w.bytes_read_per_epoch = {1 << 29, 1 << 29};
  w.accelerator_priority = "normal";
  w.notes = {"real-time priority refused"};
  w.page_cache = "warm";
  w.remote = RemoteRecord{.mode = "copy_first", .store = "s3://mlperf/unet3d at http://127.0.0.1:9000",
                          .latency_ms = 20, .rate_mib_s_per_request = 50,
                          .requests_in_flight = 16, .files = 168, .dataset_bytes = 1 << 30,
                          .copy_seconds = 4.5, .copy_ideal_seconds = 4.25, .copy_bytes = 1 << 30,
                          .copy_threads = 8, .cache_budget_bytes = 1 << 29,
                          .cache = CacheCounters{.hits = 1, .misses = 2, .bytes_fetched = 3,
                                                 .evictions = 4, .damaged = 5, .write_failures = 6,
                                                 .too_large = 7, .preloaded = 8,
                                                 .preload_failures = 9},
                          .time_to_first_step_seconds = 4.75,
                          .time_to_first_step_ideal_seconds = 4.25};
  w.remote->epochs = {{.epoch = 1, .seconds = 3.5, .ideal_seconds = 3.25, .au_percentage = 93,
                       .remote_bytes = 0, .requests = 0, .retries = 0, .cache_hits = 4,
                       .cache_misses = 0, .cache_hit_ratio = 1}};
  w.ranks = two_ranks();
  w.max_accelerators = AcceleratorSearch{.max_accelerators = 5, .limit = 8};
  w.max_accelerators->probes = {{.accelerators = 4, .au_percentage = 95, .samples_per_second = 80, .meets = true},
                                {.accelerators = 6, .au_percentage = 89.6, .meets = false,
                                 .au_runs = {89.1, 90.4, 89.6}},
                                {.accelerators = 8, .au_percentage = 60, .meets = false}};
  w.max_accelerators->storage = StorageBound{.samples_mib_per_s = {2000, 2100, 1900}, .mib_per_s = 2000,
                                             .cold = true, .demand_mib_per_s = 380,
                                             .bound_accelerators = 5.26};
  w.max_accelerators->prediction = PredictionCheck{.storage = "local, cold", .predicted = 4,
                                                   .binding = "storage bandwidth",
                                                   .profile_mib_per_s = 1900, .error_percent = -20};
  w.stall_analysis = StallRecord{.synthetic_au_percentage = 99, .warm_au_percentage = 95,
                                 .cold_au_percentage = 60};
  w.stall_analysis->epochs = {{.epoch = 1, .synthetic_s = 1, .warm_s = 1.05, .cold_s = 1.6,
                               .fetch_stall_s = 0.55, .prep_stall_s = 0.05}};
  return w;
}

WorkloadRecord growing_workload() {
  WorkloadRecord w{.file = "g.yaml", .name = "growing", .format = "tfrecord", .batch_size = 8,
                   .read_threads = 2, .computation_time = 0.01};
  w.growing_cache = GrowingCacheRecord{.samplers = 4, .shard_samples = 64, .latency_ms = 5,
                                       .rate_mib_s_per_request = 100, .budget_mib = 64,
                                       .time_to_first_step_seconds = 0.3};
  w.growing_cache->epochs = {{.epoch = 1, .shards = 1, .samples = 64, .steps = 8, .evicted_shards = 0,
                              .bytes = 65536, .seconds = 0.41, .au_percentage = 100, .wait_mean_ms = 1,
                              .wait_p99_ms = 5, .deserialize_mb_per_s_per_thread = 800}};
  return w;
}

LoaderWatchRecord watched_loader() {
  LoaderWatchRecord w{.num_workers = 4, .prefetch_factor = 2, .batch_size = 64, .pin_memory = true,
                      .persistent_workers = false, .device = "cuda", .epochs = 2, .batches = 64,
                      .input_bound_pct = 34.1, .steady_input_bound_pct = 24.8, .first_wait_ms = 200.7,
                      .wait_p50_ms = 1.79, .wait_p99_ms = 27.36, .ready_pct = 48,
                      .workers_busy_pct = 32, .pin_memory_busy_pct = 12, .worker_starts = 8,
                      .restarts = 4, .dead_workers = 1, .trace = "trace.json"};
  w.suggestions = {{"prefetch_factor", "raise prefetch_factor"}, {"worker", "worker 2 died"}};
  return w;
}

// The golden file's first experiment as an entry of another kind with `extra` records.
nlohmann::json entry_of_kind(EntryKind kind, const std::string& id) {
  nlohmann::json x = read_json(PIPEPROF_RESULTS_TEST_DATA "/golden/results.json")["experiments"][0];
  x.erase("trace");
  x["id"] = id;
  x["kind"] = entry_kind_name(kind);
  return x;
}

nlohmann::json every_kind() {
  nlohmann::json workload = entry_of_kind(EntryKind::kWorkload, "workload:unet3d");
  workload["workload"] = to_json(full_workload());
  workload["ranks"] = to_json(two_ranks());
  WorkloadRecord peer_record = full_workload();
  peer_record.peer = "pytorch_dataloader";
  peer_record.max_accelerators->storage.reset();
  nlohmann::json peer = entry_of_kind(EntryKind::kPeer, "workload:unet3d (pytorch)");
  peer["workload"] = to_json(peer_record);
  nlohmann::json growing = entry_of_kind(EntryKind::kGrowingCache, "workload:growing");
  growing["workload"] = to_json(growing_workload());
  nlohmann::json scaleout = entry_of_kind(EntryKind::kScaleout, "dell_new");
  scaleout["scaleout"] = to_json(ScaleoutRecord{
      .points = {{.ranks = 1, .images_per_second = 340, .images_per_second_per_rank = 340,
                  .scaling_efficiency = 1.0, .au_per_rank = {21.5}, .slowest_rank = 0, .trace = "t1.json"},
                 {.ranks = 2, .images_per_second = 600, .images_per_second_per_rank = 300,
                  .scaling_efficiency = 0.88, .au_per_rank = {18, 19.5}, .slowest_rank = 1,
                  .trace = "t2.json"}},
      .spec = "dell_new.json"});
  nlohmann::json watch = entry_of_kind(EntryKind::kLoaderWatch, "watch:Images");
  watch["loader_watch"] = to_json(watched_loader());
  const nlohmann::json golden = read_json(PIPEPROF_RESULTS_TEST_DATA "/golden/results.json");
  return make_document(capture_environment("0.1.0"),
                       {entry_of_kind(EntryKind::kExperiment, "naive"), workload, peer, growing, scaleout,
                        watch},
                       {.repetitions = 3, .machine = golden["machine"], .created_utc = utc_now()});
}

TEST(Records, WhatIsWrittenIsReadBackUnchanged) {
  const nlohmann::json w = to_json(full_workload());
  EXPECT_EQ(to_json(workload_from_json(w, {"x.json", "workload"})), w);
  const nlohmann::json g = to_json(growing_workload());
  EXPECT_EQ(to_json(workload_from_json(g, {"x.json", "workload"})), g);
  const nlohmann::json r = to_json(two_ranks());
  EXPECT_EQ(to_json(ranks_from_json(r, {"x.json", "ranks"})), r);
  const nlohmann::json l = to_json(watched_loader());
  EXPECT_EQ(to_json(loader_watch_from_json(l, {"x.json", "loader_watch"})), l);
  // An autotuned read_threads is written as "autotune" and read back as none.
  WorkloadRecord tuned = full_workload();
  tuned.read_threads.reset();
  EXPECT_EQ(to_json(tuned)["read_threads"], "autotune");
  EXPECT_FALSE(workload_from_json(to_json(tuned), {"x.json", "w"}).read_threads);
}

TEST(Records, EveryFieldOfEveryKindIsInTheSchemaAndNothingElse) {
  const nlohmann::json schema = read_json(PIPEPROF_RESULTS_SCHEMA);
  nlohmann::json doc = every_kind();
  ASSERT_EQ(joined(schema_problems(schema, doc)), "");
  // The file reads back with each entry's kind and records.
  const ResultsFile file = parse_results(doc.dump(), "every.json");
  ASSERT_EQ(file.entries.size(), 6u);
  EXPECT_EQ(file.entries[0].kind, EntryKind::kExperiment);
  EXPECT_EQ(file.entries[1].kind, EntryKind::kWorkload);
  EXPECT_TRUE(file.entries[1].judged_on_au());
  EXPECT_EQ(file.entries[1].workload->max_accelerators->storage->bound_accelerators, 5.26);
  // A search beside its prediction: compare judges the error's size.
  EXPECT_EQ(file.entries[1].workload->max_accelerators->prediction->binding, "storage bandwidth");
  EXPECT_EQ(file.entries[1].prediction_error, std::vector<double>{20});
  EXPECT_EQ(file.entries[1].ranks->rows[1].error, "rank 1: corrupt record");
  EXPECT_EQ(file.entries[2].workload->peer, "pytorch_dataloader");
  EXPECT_EQ(file.entries[3].workload->growing_cache->epochs.size(), 1u);
  EXPECT_EQ(file.entries[4].scaleout->points[1].scaling_efficiency, 0.88);
  EXPECT_EQ(file.entries[5].kind, EntryKind::kLoaderWatch);
  EXPECT_TRUE(file.entries[5].judged_on_au());
  EXPECT_EQ(file.entries[5].loader_watch->suggestions[1].second, "worker 2 died");
  // The report has its section, with the figures and the suggestions.
  const Report report = render_report(doc, ".", "every.json");
  EXPECT_NE(report.markdown.find("## PyTorch DataLoaders, watched"), std::string::npos);
  EXPECT_NE(report.markdown.find("| watch:Images | 4 | 2 / pinned / - | 64 | 2 | 64 |"),
            std::string::npos)
      << report.markdown;
  EXPECT_NE(report.markdown.find("- `worker`: worker 2 died"), std::string::npos);
  // A field the schema does not describe, a kind it does not know: each a problem.
  doc["experiments"][1]["workload"]["remote"]["epochs"][0]["surprise"] = 1;
  doc["experiments"][2]["kind"] = "benchmark";
  const auto problems = schema_problems(schema, doc);
  EXPECT_EQ(problems.size(), 2u) << joined(problems);
  EXPECT_NE(joined(problems).find(
                "$.experiments[1].workload.remote.epochs[0]: key \"surprise\" is not in the schema"),
            std::string::npos)
      << joined(problems);
}

std::string error_of(const nlohmann::json& doc) {
  try {
    parse_results(doc.dump(), "in.json");
  } catch (const ResultsError& e) {
    return e.what();
  }
  return "";
}

TEST(Records, AValueOfTheWrongTypeIsNamedByFileAndPath) {
  nlohmann::json doc = every_kind();
  doc["experiments"][1]["workload"]["dlio"]["train_au_mean_percentage"] = "high";
  EXPECT_EQ(error_of(doc),
            "in.json: experiments[1].workload.dlio.train_au_mean_percentage: expected a number, got "
            "\"high\"");
  doc = every_kind();
  doc["experiments"][1]["workload"]["remote"]["epochs"][0].erase("seconds");
  EXPECT_EQ(error_of(doc), "in.json: experiments[1].workload.remote.epochs[0]: missing required key \"seconds\"");
  doc = every_kind();
  doc["experiments"][4]["scaleout"]["points"][0]["ranks"] = 1.5;
  EXPECT_EQ(error_of(doc), "in.json: experiments[4].scaleout.points[0].ranks: expected an integer, got 1.5");
  doc = every_kind();
  doc["experiments"][0].erase("kind");
  EXPECT_EQ(error_of(doc), "in.json: experiments[0]: missing required key \"kind\"");
  doc = every_kind();
  doc["experiments"][0]["kind"] = "benchmark";
  EXPECT_NE(error_of(doc).find("in.json: experiments[0].kind: unknown kind \"benchmark\""), std::string::npos);
  // A kind without the record it needs.
  doc = every_kind();
  doc["experiments"][2]["workload"].erase("dlio");
  EXPECT_EQ(error_of(doc), "in.json: experiments[2].workload: missing required key \"dlio\"");
  doc = every_kind();
  doc["experiments"][3]["kind"] = "scaleout";
  EXPECT_EQ(error_of(doc), "in.json: experiments[3]: missing required key \"scaleout\"");
}

// A suite's results.json written by schema 3 (the remote workloads and the scale-out, trimmed):
// its entries get their kinds from what they hold, and the report shows the same tables it did.
TEST(Records, ASchema3SuiteIsReadAndReportedAsBefore) {
  const ResultsFile file = load_results(PIPEPROF_RESULTS_TEST_DATA "/schema3/results.json");
  EXPECT_EQ(file.schema_version, 3);
  ASSERT_EQ(file.entries.size(), 2u);
  EXPECT_EQ(file.entries[0].kind, EntryKind::kWorkload);
  EXPECT_EQ(file.entries[0].workload->remote->mode, "cached");
  EXPECT_EQ(file.entries[1].kind, EntryKind::kScaleout);
  const std::string md = render_report(file.doc, ".", "results.json").markdown;
  for (const char* row : {"| workload:remote_cached | pipeprof | 1 | 81.58 | no | 128.0 | 32.0 | 45.82 | - | - | - |",
                          "| workload:remote_cached | cached | 1 | 5.12 | 4.65 | 63.2 | 128.2 | 11.1% |",
                          "| workload:remote_cached | cached | 2 | 3.22 | 3.20 | 99.9 | 0.0 | 100.0% |",
                          "| workload:remote_cached | cached | first step | 0.08 | 0.07 | | | |",
                          "| dell_new | 2 | 597.6 | 298.8 | 0.88 | 17.9–19.6 |"}) {
    EXPECT_NE(md.find(row), std::string::npos) << row << "\n" << md;
  }
}

}  // namespace
}  // namespace pipeprof::results
