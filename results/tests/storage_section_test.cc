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

TEST(StorageSection, WorkloadsAndPipeprofBesideAPeer) {
  const nlohmann::json doc{
      {"schema_version", 3},
      {"experiments",
       {{{"id", "naive"}, {"repetitions", {{{"wall_ms", 5}}}}},
        workload_entry("workload:npz_256k", "", 99.5, 39),
        workload_entry("workload:npz_256k (pytorch)", "pytorch_dataloader", 92.2, 3)}}};
  const Report r = render_report(doc, ".", "doc.json");
  const std::string& md = r.markdown;
  EXPECT_NE(md.find("## Storage workloads"), std::string::npos) << md;
  EXPECT_NE(md.find("| workload:npz_256k | pipeprof | 1 | 99.50 | yes | 150.0 | 37.5 | 1.25 | 39 | "
                    "33.5 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| workload:npz_256k (pytorch) | pytorch_dataloader | 1 | 92.20 | yes |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| npz_256k | pytorch_dataloader | 39 | 3 | 13.0x | 99.50 | 92.20 |"),
            std::string::npos)
      << md;
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

}  // namespace
}  // namespace pipeprof::results
