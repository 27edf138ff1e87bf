#include "pipeprof/results/document.h"

#include <chrono>
#include <ctime>

#include "pipeprof/results/results_file.h"

namespace pipeprof::results {

nlohmann::json make_document(const Environment& environment, nlohmann::json experiments,
                             const RunInfo& run) {
  for (auto& x : experiments) {
    if (!x.is_object() || !x.contains("repetitions")) continue;
    const auto ideal = x.find("ideal_ms");
    const bool has_ideal = ideal != x.end() && ideal->is_number() && ideal->get<double>() > 0;
    for (auto& rep : x["repetitions"]) {
      const auto wall = rep.find("wall_ms");
      if (has_ideal && wall != rep.end() && wall->is_number() && wall->get<double>() > 0) {
        rep["efficiency"] = ideal->get<double>() / wall->get<double>();
      } else {
        rep["efficiency"] = nullptr;
      }
    }
  }
  nlohmann::json doc{
      {"schema_version", kSchemaVersion},     {"pipeprof_version", environment.pipeprof_version},
      {"repetitions", run.repetitions},       {"interrupted", run.interrupted},
      {"environment", to_json(environment)},  {"machine", run.machine},
      {"experiments", std::move(experiments)}};
  if (!run.created_utc.empty()) doc["created_utc"] = run.created_utc;
  return doc;
}

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace pipeprof::results
