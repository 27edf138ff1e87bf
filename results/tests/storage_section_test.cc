// The report's storage section: DLIO workloads with AU, the most accelerators and the storage
// bound, and pipeprof beside a peer loader on the same workload, with its chart.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "pipeprof/results/report.h"

namespace pipeprof::results {
namespace {

nlohmann::json workload_entry(const std::string& id, const std::string& peer, double au,
                              double max_accelerators) {
  nlohmann::json w{{"file", "w.yaml"},
                   {"name", "npz_256k"},
                   {"loader", "pytorch"},
                   {"format", "npz"},
                   {"accelerators", 1},
                   {"steps_per_epoch", 40},
                   {"dlio",
                    {{"train_au_percentage", {au}},
                     {"train_au_mean_percentage", au},
                     {"train_au_meet_expectation", au >= 90 ? "success" : "fail"},
                     {"train_throughput_samples_per_second", {150.0}},
                     {"train_throughput_mean_samples_per_second", 150.0},
                     {"train_io_mean_MB_per_second", 37.5}}},
                   {"per_accelerator", nlohmann::json::array()},
                   {"wait_ms", {{"mean", 0.1}, {"p50", 0.05}, {"p99", 1.25}}},
                   {"max_accelerators",
                    {{"max_accelerators", max_accelerators}, {"bound_accelerators", 33.5}}}};
  if (!peer.empty()) w["peer"] = peer;
  return {{"id", id}, {"ideal_ms", 2000}, {"repetitions", {{{"wall_ms", 2010}}}}, {"workload", w}};
}

// The report holds this table row (or this start of one).
void expect_row(const std::string& md, const std::string& row) {
  EXPECT_NE(md.find(row), std::string::npos) << row << "\n" << md;
}

TEST(StorageSection, WorkloadsAndPipeprofBesideAPeer) {
  // The same search on cold files: its own row, not set beside the peer (which ran warm).
  nlohmann::json cold = workload_entry("workload:npz_256k (cold)", "", 90.2, 30);
  cold["workload"]["max_accelerators"]["storage_cold"] = true;
  cold["workload"]["max_accelerators"]["limit"] = 64;
  // A search that stopped at its limit: the most is at least that.
  nlohmann::json capped = workload_entry("workload:npz_256k (quick)", "", 99.6, 16);
  capped["workload"]["max_accelerators"]["limit"] = 16;
  capped["workload"]["name"] = "npz_quick";
  nlohmann::json capped_peer =
      workload_entry("workload:npz_quick (pytorch)", "pytorch_dataloader", 91.0, 3);
  capped_peer["workload"]["name"] = "npz_quick";
  const nlohmann::json doc{
      {"schema_version", 3},
      {"experiments",
       {{{"id", "naive"}, {"repetitions", {{{"wall_ms", 5}}}}},
        workload_entry("workload:npz_256k", "", 99.5, 39),
        workload_entry("workload:npz_256k (pytorch)", "pytorch_dataloader", 92.2, 3),
        cold, capped, capped_peer}}};
  const Report r = render_report(doc, ".", "doc.json");
  const std::string& md = r.markdown;
  expect_row(md, "## Storage workloads");
  expect_row(md, "| workload:npz_256k | pipeprof | 1 | 99.50 | yes | 150.0 | 37.5 | 1.25 | 39 | 33.5 | "
                 "1.16 |");
  expect_row(md, "| workload:npz_256k (cold) | pipeprof (cold) | 1 | 90.20 | yes | 150.0 | 37.5 | "
                 "1.25 | 30 | 33.5 | 0.90 |");
  expect_row(md, "| workload:npz_256k (quick) | pipeprof | 1 | 99.60 | yes | 150.0 | 37.5 | 1.25 | "
                 ">=16 | 33.5 | >=0.48 |");
  expect_row(md, "| workload:npz_256k (pytorch) | pytorch_dataloader | 1 | 92.20 | yes |");
  expect_row(md, "| npz_256k | pytorch_dataloader | 39 | 3 | 13.0x | 99.50 | 92.20 |");
  EXPECT_EQ(md.find("| npz_256k | pipeprof (cold) |"), std::string::npos) << md;  // not a peer
  expect_row(md, "| npz_quick | pytorch_dataloader | >=16 | 3 | >=5.3x | 99.60 | 91.00 |");
  bool chart = false;
  for (const auto& f : r.files)
    chart = chart || (f.name == "storage.svg" && f.content.find("pipeprof") != std::string::npos);
  EXPECT_TRUE(chart);
  // No workload, no section.
  const nlohmann::json plain{{"schema_version", 3},
                             {"experiments", {{{"id", "naive"}, {"repetitions", {{{"wall_ms", 5}}}}}}}};
  EXPECT_EQ(render_report(plain, ".", "doc.json").markdown.find("## Storage workloads"),
            std::string::npos);
}

TEST(StorageSection, RemoteReadsPerEpochWithTheirChart) {
  nlohmann::json x = workload_entry("workload:remote_cached", "", 88.7, 0);
  x["workload"]["name"] = "remote_cached";
  x["workload"].erase("max_accelerators");
  x["workload"]["remote"] = {
      {"mode", "cached"},
      {"preload", true},
      {"time_to_first_step_seconds", 0.082},
      {"time_to_first_step_ideal_seconds", 0.073},
      {"epochs",
       {{{"epoch", 1}, {"seconds", 4.89}, {"ideal_seconds", 4.65}, {"au_percentage", 66.2},
         {"remote_bytes", 134217728}, {"cache_hit_ratio", 0.111}},
        {{"epoch", 2}, {"seconds", 3.21}, {"ideal_seconds", 3.2}, {"au_percentage", 99.9},
         {"remote_bytes", 0}, {"cache_hit_ratio", 1.0}}}}};
  const nlohmann::json doc{{"schema_version", 3}, {"experiments", {x}}};
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
  const nlohmann::json x{
      {"id", "workload:growing_cache"},
      {"repetitions", {{{"wall_ms", 410}}}},
      {"workload",
       {{"name", "growing_cache"},
        {"growing_cache",
         {{"samplers", 4},
          {"epochs",
           {{{"epoch", 1}, {"shards", 1}, {"samples", 64}, {"evicted_shards", 0}, {"seconds", 0.41},
             {"au_percentage", 100.0}, {"wait_p99_ms", 5.06}, {"deserialize_mb_per_s_per_thread", 802.4}},
            {{"epoch", 2}, {"shards", 5}, {"samples", 320}, {"evicted_shards", 3}, {"seconds", 2.01},
             {"au_percentage", 99.8}, {"wait_p99_ms", 1.46},
             {"deserialize_mb_per_s_per_thread", 2723.0}}}}}}}}};
  const nlohmann::json doc{{"schema_version", 3}, {"experiments", {x}}};
  const std::string md = render_report(doc, ".", "doc.json").markdown;
  expect_row(md, "### A sample cache that grows every epoch");
  expect_row(md, "| workload:growing_cache | 1 | 1 | 64 | 0 | 0.41 | 100.0 | 5.06 | 802 |");
  expect_row(md, "| workload:growing_cache | 2 | 5 | 320 | 3 | 2.01 | 99.8 | 1.46 | 2723 |");
  // Not a DLIO run: not in the workloads' AU table.
  EXPECT_EQ(md.find("| workload:growing_cache | pipeprof |"), std::string::npos) << md;
}

}  // namespace
}  // namespace pipeprof::results
