#include "pipeprof/results/results_file.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "pipeprof/trace/json_depth.h"

namespace pipeprof::results {
namespace {

[[noreturn]] void fail(const std::string& source, const std::string& json_path,
                       const std::string& what) {
  throw ResultsError(fmt::format("{}: {}: {}", source, json_path, what));
}

const nlohmann::json& member(const nlohmann::json& object, const char* key,
                             const std::string& source, const std::string& path) {
  auto it = object.find(key);
  if (it == object.end()) fail(source, path, fmt::format("missing required key \"{}\"", key));
  return *it;
}

double number(const nlohmann::json& value, const std::string& source, const std::string& path) {
  if (!value.is_number())
    fail(source, path, fmt::format("expected a number, got {}", value.dump()));
  return value.get<double>();
}

double ns_per_unit(const std::string& unit, const std::string& source, const std::string& path) {
  if (unit == "ns") return 1;
  if (unit == "us") return 1e3;
  if (unit == "ms") return 1e6;
  if (unit == "s") return 1e9;
  fail(source, path, fmt::format("unknown time_unit \"{}\" (expected ns, us, ms or s)", unit));
}

// Google Benchmark writes non-finite numbers as bare NaN / Infinity / -Infinity (e.g. the "cv" of a
// counter that is always zero), which JSON does not allow; they become null outside strings.
std::string non_finite_as_null(std::string_view text) {
  static constexpr std::string_view kTokens[] = {"-Infinity", "Infinity", "-inf", "inf",
                                                 "NaN",       "-nan",     "nan"};
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      out += c;
      continue;
    }
    bool replaced = false;
    for (std::string_view token : kTokens) {
      if (text.substr(i, token.size()) == token) {
        out += "null";
        i += token.size() - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

// The entry's kind, part and typed records.
void read_records(const nlohmann::json& x, int version, const JsonAt& at, Entry& e) {
  if (version >= 4) {
    const auto kind = x.find("kind");
    if (kind == x.end()) at.fail("missing required key \"kind\"");
    if (!kind->is_string() || !entry_kind_of(kind->get<std::string>())) {
      at.at("kind").fail(fmt::format(
          "unknown kind {} (expected experiment, workload, peer, growing_cache, scaleout or loader_watch)",
          kind->dump()));
    }
    e.kind = *entry_kind_of(kind->get<std::string>());
  } else {
    e.kind = experiment_kind_before_4(x);
  }
  if (auto part = x.find("part"); part != x.end() && part->is_string()) {
    e.part = part->get<std::string>();
  } else if (version < 4 && x.contains("seed_wait_ms")) {
    // Part B's entries carried its metric before they carried their part. (A move: GCC 12 at -O3
    // reports a false -Wrestrict in assigning the literal.)
    e.part = std::string("B");
  }
  if (auto it = x.find("workload"); it != x.end() && !it->is_null())
    e.workload = workload_from_json(*it, at.at("workload"));
  if (is_workload_kind(e.kind) && !e.workload) at.fail("missing required key \"workload\"");
  // A training run has DLIO's figures; a checkpoint-only run its checkpoint instead.
  if ((e.kind == EntryKind::kWorkload || e.kind == EntryKind::kPeer) && !e.workload->dlio &&
      !e.workload->checkpoint)
    at.at("workload").fail("missing required key \"dlio\"");
  if (e.kind == EntryKind::kGrowingCache && !e.workload->growing_cache)
    at.at("workload").fail("missing required key \"growing_cache\"");
  if (auto it = x.find("ranks"); it != x.end() && !it->is_null())
    e.ranks = ranks_from_json(*it, at.at("ranks"));
  if (auto it = x.find("scaleout"); it != x.end() && !it->is_null())
    e.scaleout = scaleout_from_json(*it, at.at("scaleout"));
  if (e.kind == EntryKind::kScaleout && !e.scaleout) at.fail("missing required key \"scaleout\"");
  if (auto it = x.find("loader_watch"); it != x.end() && !it->is_null())
    e.loader_watch = loader_watch_from_json(*it, at.at("loader_watch"));
  if (e.kind == EntryKind::kLoaderWatch && !e.loader_watch)
    at.fail("missing required key \"loader_watch\"");
}

}  // namespace

EntryKind experiment_kind_before_4(const nlohmann::json& x) {
  if (auto s = x.find("scaleout"); s != x.end() && s->is_object()) return EntryKind::kScaleout;
  const auto w = x.find("workload");
  if (w == x.end() || !w->is_object()) return EntryKind::kExperiment;
  if (w->contains("growing_cache")) return EntryKind::kGrowingCache;
  if (w->contains("peer")) return EntryKind::kPeer;
  return EntryKind::kWorkload;
}

std::vector<Entry> pipeprof_entries(const nlohmann::json& doc, const std::string& source) {
  if (!doc.is_object()) fail(source, "$", "expected a JSON object");
  const auto version = doc.find("schema_version");
  if (version == doc.end()) fail(source, "$", "missing required key \"schema_version\"");
  if (!version->is_number_integer() || (*version < 1 || *version > kSchemaVersion)) {
    fail(source, "schema_version",
         fmt::format("unsupported value {} (this pipeprof reads 1 to {})", version->dump(), kSchemaVersion));
  }
  const auto& experiments = member(doc, "experiments", source, "$");
  if (!experiments.is_array()) fail(source, "experiments", "expected an array");
  std::vector<Entry> entries;
  for (size_t i = 0; i < experiments.size(); ++i) {
    const std::string at = fmt::format("experiments[{}]", i);
    const auto& x = experiments[i];
    if (!x.is_object()) fail(source, at, "expected an object");
    const auto& id = member(x, "id", source, at);
    if (!id.is_string()) fail(source, at + ".id", "expected a string");
    const auto& reps = member(x, "repetitions", source, at);
    if (!reps.is_array()) fail(source, at + ".repetitions", "expected an array");
    Entry e{.name = id.get<std::string>()};
    std::optional<double> ideal;
    if (auto it = x.find("ideal_ms"); it != x.end() && it->is_number()) ideal = it->get<double>();
    for (size_t r = 0; r < reps.size(); ++r) {
      const std::string rep_at = fmt::format("{}.repetitions[{}]", at, r);
      const double wall =
          number(member(reps[r], "wall_ms", source, rep_at), source, rep_at + ".wall_ms");
      e.time_ns.push_back(wall * 1e6);
      // Stored since schema 2; computed the same way (ideal / wall of this repetition) otherwise.
      if (auto it = reps[r].find("efficiency"); it != reps[r].end() && it->is_number()) {
        e.efficiency.push_back(it->get<double>());
      } else if (ideal && *ideal > 0 && wall > 0) {
        e.efficiency.push_back(*ideal / wall);
      }
      if (auto it = reps[r].find("au_percentage"); it != reps[r].end() && it->is_number())
        e.au.push_back(it->get<double>());
      if (auto it = reps[r].find("samples_per_second"); it != reps[r].end() && it->is_number())
        e.throughput.push_back(it->get<double>());
    }
    if (e.efficiency.size() != e.time_ns.size()) e.efficiency.clear();
    if (e.au.size() != e.time_ns.size()) e.au.clear();
    if (e.throughput.size() != e.time_ns.size()) e.throughput.clear();
    read_records(x, version->get<int>(), JsonAt{source, at}, e);
    if (e.workload && e.workload->max_accelerators && e.workload->max_accelerators->prediction) {
      if (const auto error = e.workload->max_accelerators->prediction->error_percent)
        e.prediction_error.push_back(std::abs(*error));
    }
    entries.push_back(std::move(e));
  }
  return entries;
}

std::vector<Entry> google_benchmark_entries(const nlohmann::json& doc, const std::string& source) {
  const auto& benchmarks = member(doc, "benchmarks", source, "$");
  if (!benchmarks.is_array()) fail(source, "benchmarks", "expected an array");
  std::vector<Entry> entries;
  std::map<std::string, size_t> index;
  std::map<std::string, double> aggregates;  // run_name -> median (else mean) in ns
  for (size_t i = 0; i < benchmarks.size(); ++i) {
    const std::string at = fmt::format("benchmarks[{}]", i);
    const auto& b = benchmarks[i];
    if (!b.is_object()) fail(source, at, "expected an object");
    if (b.contains("error_occurred") && b["error_occurred"] == true) continue;
    const bool aggregate = b.value("run_type", std::string("iteration")) == "aggregate";
    const std::string aggregate_name = b.value("aggregate_name", std::string());
    if (aggregate && aggregate_name != "median" && aggregate_name != "mean") continue;
    std::string name;
    if (auto it = b.find("run_name"); it != b.end() && it->is_string()) {
      name = it->get<std::string>();
    } else {
      const auto& n = member(b, "name", source, at);
      if (!n.is_string()) fail(source, at + ".name", "expected a string");
      name = n.get<std::string>();
    }
    const double real = number(member(b, "real_time", source, at), source, at + ".real_time");
    const std::string unit = b.value("time_unit", std::string("ns"));
    const double ns = real * ns_per_unit(unit, source, at + ".time_unit");
    if (aggregate) {
      // Kept for runs without iteration rows (--benchmark_report_aggregates_only): the median,
      // else the mean, as a single sample.
      if (aggregate_name == "median" || !aggregates.count(name)) aggregates[name] = ns;
      continue;
    }
    auto [it, added] = index.try_emplace(name, entries.size());
    if (added) entries.push_back(Entry{.name = name});
    entries[it->second].time_ns.push_back(ns);
  }
  for (const auto& [name, ns] : aggregates) {
    if (!index.count(name)) entries.push_back(Entry{.name = name, .time_ns = {ns}});
  }
  return entries;
}

ResultsFile parse_results(std::string_view text, const std::string& source) {
  ResultsFile file;
  file.path = source;
  try {
    file.doc = trace::parse_json(non_finite_as_null(text));  // at most trace::kMaxJsonDepth levels
  } catch (const nlohmann::json::parse_error& e) {
    throw ResultsError(fmt::format("{}: not valid JSON (byte {}): {}", source, e.byte, e.what()));
  }
  if (!file.doc.is_object()) fail(source, "$", "expected a JSON object");
  try {
    if (file.doc.contains("schema_version")) {
      file.format = Format::kPipeprof;
      file.entries = pipeprof_entries(file.doc, source);
      file.schema_version = file.doc["schema_version"].get<int>();
    } else if (file.doc.contains("benchmarks")) {
      file.format = Format::kGoogleBenchmark;
      file.entries = google_benchmark_entries(file.doc, source);
    } else {
      fail(source, "$",
           "neither a pipeprof results file (no \"schema_version\") nor Google Benchmark JSON "
           "(no \"benchmarks\")");
    }
  } catch (const nlohmann::json::exception& e) {  // a value of an unexpected type
    throw ResultsError(fmt::format("{}: {}", source, e.what()));
  }
  return file;
}

ResultsFile load_results(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ResultsError(path.string() + ": cannot be read (missing or unreadable)");
  std::ostringstream text;
  text << in.rdbuf();
  ResultsFile file = parse_results(text.str(), path.string());
  file.path = path;
  return file;
}

}  // namespace pipeprof::results
