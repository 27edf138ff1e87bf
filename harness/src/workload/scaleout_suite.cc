#include "workload/scaleout_suite.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "pipeprof/harness/ranks.h"
#include "pipeprof/harness/subprocess.h"
#include "pipeprof/pipelines/datagen.h"
#include "pipeprof/results/report.h"
#include "workload/storage_suite.h"

namespace pipeprof::harness::workload {
namespace {

namespace fs = std::filesystem;

std::string self_exe() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("pipeprof") : p.string();
}

}  // namespace

fs::path scaleout_dir() {
  if (const char* env = std::getenv("PIPEPROF_SCALEOUT"); env != nullptr && *env != '\0')
    return env;
  return PIPEPROF_SCALEOUT_DIR;
}

std::string find_mpirun() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / "mpirun";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

std::vector<nlohmann::json> run_scaleout_suite(const ScaleoutOptions& o,
                                               const std::vector<const SuiteEntry*>& entries,
                                               int& failed) {
  std::vector<nlohmann::json> out;
  std::vector<const SuiteEntry*> specs;
  for (const SuiteEntry* e : entries)
    if (e->kind == EntryKind::kScaleout) specs.push_back(e);
  if (specs.empty()) return out;
  auto log = [&](const std::string& line) {
    if (o.log) o.log(line);
  };
  auto stopped = [&] { return o.stop != nullptr && o.stop->load(); };
  const std::string mpirun = find_mpirun();
  if (mpirun.empty()) {
    log("skipped: mpirun is not installed (Debian: openmpi-bin; scripts/setup.sh installs it)");
    return out;
  }
  const fs::path data = o.out / "data" / "imagenet_like";
  const fs::path runs = o.out / "scaleout";
  fs::create_directories(runs);
  pipelines::formats::ImageRecords images{.folder = data.string(),
                                          .shards = o.quick ? 16 : 32,
                                          .images_per_shard = 64};
  try {
    log(fmt::format("ImageNet-like shards in {} ({} x {} JPEGs of 256x256)", data.string(),
                    images.shards, images.images_per_shard));
    (void)pipelines::formats::generate_image_records(images, o.stop);
  } catch (const std::exception& e) {
    log(fmt::format("failed: the image shards: {}", e.what()));
    ++failed;
    return out;
  }
  const bool root = ::geteuid() == 0;
  for (const SuiteEntry* spec_entry : specs) {
    if (stopped()) break;
    const std::string& id = spec_entry->id;
    // The spec with the data folder filled in (users can run it themselves under mpirun).
    std::ifstream in(scaleout_dir() / (spec_entry->spec + ".json"));
    std::stringstream text;
    text << in.rdbuf();
    std::string spec = text.str();
    if (spec.empty()) {
      log(fmt::format("failed: {}: no spec in {}", id, scaleout_dir().string()));
      ++failed;
      continue;
    }
    for (size_t at = spec.find("@DATA@"); at != std::string::npos; at = spec.find("@DATA@"))
      spec.replace(at, 6, data.string());
    const fs::path spec_file = runs / (spec_entry->spec + ".json");
    results::write_text_file(spec_file, spec);
    results::ScaleoutRecord scaleout{.spec = spec_file.filename().string()};
    nlohmann::json entry;
    double one_rank = 0;
    for (const int n : spec_entry->ranks) {
      if (stopped()) break;
      const fs::path json = runs / fmt::format("{}-{}.json", id, n);
      const fs::path trace = runs / fmt::format("{}-{}.trace.json", id, n);
      std::error_code ec;
      fs::remove(json, ec);
      std::vector<std::string> argv{mpirun};
      if (root) argv.emplace_back("--allow-run-as-root");
      for (const char* a : {"--oversubscribe", "--bind-to", "none", "-np"})
        argv.emplace_back(a);
      argv.push_back(std::to_string(n));
      for (const std::string& a :
           {self_exe(), std::string("run"), spec_file.string(), std::string("--repetitions"),
            std::string(o.quick ? "1" : "3"), std::string("--json"), json.string(),
            std::string("--trace"), trace.string()})
        argv.push_back(a);
      const ProcessResult ran = run_process(argv, runs / fmt::format("{}-{}.log", id, n));
      if (stopped()) break;
      if (!ran.ok() || !fs::exists(json)) {
        log(fmt::format("failed: {} on {} rank(s) (exit {}; see {}-{}.log in {})", id, n,
                        ran.exit_code, id, n, runs.string()));
        ++failed;
        continue;
      }
      // What rank 0 wrote: its experiment result with the typed ranks summary (records.h).
      nlohmann::json r;
      RanksSummary ranks;
      try {
        std::ifstream jin(json);
        r = nlohmann::json::parse(jin);
        if (!r.is_object() || !r.contains("ranks"))
          throw results::ResultsError(json.string() + ": missing required key \"ranks\"");
        ranks = results::ranks_from_json(r["ranks"], {json.string(), "ranks"});
      } catch (const std::exception& e) {
        log(fmt::format("failed: {} on {} rank(s): {}", id, n, e.what()));
        ++failed;
        continue;
      }
      const double total = ranks.samples_per_second;
      std::vector<double> au;
      for (const RankRow& row : ranks.rows)
        au.push_back(row.au_percentage);
      if (n == 1) one_rank = total;
      results::ScaleoutPoint point{.ranks = n,
                                   .images_per_second = total,
                                   .images_per_second_per_rank = total / n,
                                   .au_per_rank = au,
                                   .slowest_rank = ranks.slowest_rank,
                                   .trace = trace.filename().string()};
      if (one_rank > 0) point.scaling_efficiency = total / (n * one_rank);
      log(fmt::format("{} on {} rank(s): {:.1f} images/s ({:.1f} per rank){}", id, n, total,
                      total / n,
                      one_rank > 0 ? fmt::format(", scaling efficiency {:.2f}", total / (n * one_rank))
                                   : std::string()));
      scaleout.points.push_back(std::move(point));
      entry = std::move(r);  // the entry's experiment figures: the last rank count's rank 0
    }
    if (scaleout.points.empty()) continue;
    // The scale-out record stands for the runs' ranks objects.
    entry.erase("ranks");
    entry["id"] = id;
    entry["kind"] = results::entry_kind_name(results::EntryKind::kScaleout);
    entry["part"] = "C";
    entry["scaleout"] = to_json(scaleout);
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace pipeprof::harness::workload
