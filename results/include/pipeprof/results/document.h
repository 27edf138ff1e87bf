// Building a results document (schema version kSchemaVersion, described by
// results/schema/results.schema.json): the environment, the run's settings and, per experiment,
// its spec, every repetition and the aggregates. The experiments come as JSON from the harness;
// this adds each repetition's efficiency (the experiment's ideal_ms / that repetition's wall_ms,
// null without a positive ideal) so that `compare` can test the repetitions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "pipeprof/results/environment.h"

namespace pipeprof::results {

struct RunInfo {
  int repetitions = 0;
  bool interrupted = false;
  nlohmann::json machine = nlohmann::json::object();  // e.g. {"sleep_overshoot": {...}}
  std::string created_utc;                            // "2026-01-31T12:00:00Z"; empty: left out
};

nlohmann::json make_document(const Environment& environment, nlohmann::json experiments,
                             const RunInfo& run);

// The current time as "YYYY-MM-DDTHH:MM:SSZ".
std::string utc_now();

}  // namespace pipeprof::results
