#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "pipeprof/harness/experiment.h"
#include "pipeprof/harness/step.h"
#include "pipeprof/pipelines/errors.h"

namespace pipeprof::harness {
namespace {

// EXPERIMENTS.md's order; files not listed here follow in name order.
const std::vector<std::string> kOrder = {"naive",
                                         "prefetch",
                                         "interleave_sequential",
                                         "interleave_parallel",
                                         "interleave_sequential_3",
                                         "interleave_parallel_3",
                                         "map_sequential",
                                         "map_parallel",
                                         "cache",
                                         "map_scalar",
                                         "map_vectorized",
                                         "generator",
                                         "multiprocess",
                                         "shared_store"};

std::optional<double> optional_number(const nlohmann::json& e, const char* key,
                                      const std::string& where) {
  if (!e.contains(key)) return std::nullopt;
  if (!e.at(key).is_number()) {
    throw pipelines::SpecError(
        fmt::format("{}: experiment.{}: expected a number, got {}", where, key, e.at(key).dump()));
  }
  return e.at(key).get<double>();
}

}  // namespace

Experiment load_experiment(const std::filesystem::path& file, const pipelines::ParseOptions& options) {
  Experiment x{.id = {}, .description = {}, .spec = pipelines::load_spec(file, options)};
  x.file = file;
  x.id = x.spec.name.empty() ? file.stem().string() : x.spec.name;
  x.description = x.spec.description;
  const std::string where = file.string();
  if (x.spec.document.contains("experiment")) {
    const auto& e = x.spec.document.at("experiment");
    if (!e.is_object()) throw pipelines::SpecError(where + ": experiment: expected an object");
    for (const auto& [key, value] : e.items()) {
      if (key != "part" && key != "step" && key != "epochs" && key != "seed_ms" &&
          key != "seed_wait_ms" && key != "ideal_ms" && key != "note") {
        throw pipelines::SpecError(
            fmt::format("{}: experiment: unknown key \"{}\" (expected part, step, epochs, seed_ms, "
                        "seed_wait_ms, ideal_ms, note)",
                        where, key));
      }
    }
    if (e.contains("step")) {
      if (!e.at("step").is_string()) {
        throw pipelines::SpecError(where +
                                   ": experiment.step: expected a string such as \"sleep:10\"");
      }
      x.step = e.at("step").get<std::string>();
      try {
        check_step_name(x.step);
      } catch (const StepError& err) {
        throw pipelines::SpecError(fmt::format("{}: experiment.step: {}", where, err.what()));
      }
    }
    if (e.contains("epochs")) {
      if (!e.at("epochs").is_number_integer() || e.at("epochs").get<int64_t>() < 1) {
        throw pipelines::SpecError(
            fmt::format("{}: experiment.epochs: expected a positive integer, got {}", where,
                        e.at("epochs").dump()));
      }
      x.epochs = e.at("epochs").get<int64_t>();
    }
    x.seed_ms = optional_number(e, "seed_ms", where);
    x.documented_ideal_ms = optional_number(e, "ideal_ms", where);
    x.seed_wait_ms = optional_number(e, "seed_wait_ms", where);
    if (e.contains("part")) {
      if (!e.at("part").is_string()) {
        throw pipelines::SpecError(fmt::format("{}: experiment.part: expected a string such as "
                                               "\"A\", got {}",
                                               where, e.at("part").dump()));
      }
      x.part = e.at("part").get<std::string>();
    }
  }
  return x;
}

std::filesystem::path catalog_dir() {
  if (const char* env = std::getenv("PIPEPROF_EXPERIMENTS"); env != nullptr && *env != '\0')
    return env;
  return PIPEPROF_EXPERIMENTS_DIR;
}

std::vector<Experiment> load_catalog(const std::filesystem::path& dir,
                                     const pipelines::ParseOptions& options) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw pipelines::SpecError(
        fmt::format("{}: the experiment catalog folder does not exist", dir.string()));
  }
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  auto rank = [](const std::filesystem::path& p) {
    auto it = std::find(kOrder.begin(), kOrder.end(), p.stem().string());
    return std::pair{static_cast<size_t>(it - kOrder.begin()), p.stem().string()};
  };
  std::sort(files.begin(), files.end(),
            [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
  std::vector<Experiment> out;
  for (const auto& f : files)
    out.push_back(load_experiment(f, options));
  return out;
}

Experiment find_experiment(const std::string& id_or_path, const pipelines::ParseOptions& options) {
  std::error_code ec;
  if (id_or_path.find('/') != std::string::npos || id_or_path.ends_with(".json") ||
      std::filesystem::exists(id_or_path, ec)) {
    return load_experiment(id_or_path, options);
  }
  const auto file = catalog_dir() / (id_or_path + ".json");
  if (std::filesystem::exists(file, ec)) return load_experiment(file, options);
  std::vector<std::string> ids;
  for (const auto& x : load_catalog())
    ids.push_back(x.id);
  throw pipelines::SpecError(
      fmt::format("no experiment \"{}\" in the catalog (known: {}), and no such file", id_or_path,
                  fmt::join(ids, ", ")));
}

}  // namespace pipeprof::harness
