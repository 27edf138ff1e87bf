// Reading DLIO workload files (YAML, yaml-cpp): loading one with DLIO's Hydra-style command-line
// overrides applied, and typed reads of a section's values whose errors name the file and the key
// ("unet3d.yaml: reader.batch_size: expected a whole number >= 1, got \"seven\"").
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace pipeprof::harness::workload {

// Loads a YAML file whose top level is a mapping; throws InputError naming the file when it cannot
// be read or parsed.
YAML::Node load_yaml_mapping(const std::string& path);

// Applies overrides in Hydra's grammar, each relative to the workload (DLIO mounts the file under
// `workload`, and the prefix may be written or left out):
//   workload.train.epochs=2          sets a key the file has (an error if it has none)
//   +workload.train.seed=7           adds a key the file does not have (an error if it has one)
//   ++workload.reader.read_threads=8 sets or adds
//   ~workload.train.seed             removes a key
// The value is read as YAML ("8", "True", "{mean: 0.3, stdev: 0.05}"). Throws InputError naming
// the override.
void apply_overrides(YAML::Node& root, const std::vector<std::string>& overrides);

// One section of the file (`dataset`, `reader`, ...); reads its keys, typed.
class Section {
 public:
  // `node` may be undefined or null (a section the file leaves out: every key takes its default).
  Section(std::string file, std::string name, YAML::Node node);

  const std::string& name() const { return name_; }
  bool has(std::string_view key) const;
  YAML::Node get(std::string_view key) const;
  // The section's keys that are not in `known`.
  std::vector<std::string> unknown_keys(const std::vector<std::string_view>& known) const;

  [[noreturn]] void fail(std::string_view key, std::string_view expected) const;
  std::string text(std::string_view key, std::string_view expected = "a string") const;
  double number(std::string_view key, double min = -1e300) const;
  // A whole number, written as an integer or as a float with no fraction ("168.0"), as DLIO
  // accepts.
  int64_t whole(std::string_view key, int64_t min) const;
  bool boolean(std::string_view key) const;  // true/false, True/False, yes/no, on/off
  // The value as JSON (mappings and lists kept; scalars that read as numbers become numbers).
  nlohmann::json json(std::string_view key) const;
  // "<file>: <section>.<key>"
  std::string where(std::string_view key) const;

 private:
  std::string file_;
  std::string name_;
  YAML::Node node_;
};

// A scalar YAML node's text as YAML 1.1 reads a boolean; empty when it is none.
std::optional<bool> yaml_boolean(const std::string& text);

}  // namespace pipeprof::harness::workload
