// What an operation's builder reads a spec stage through: the stage's fields, typed and checked
// against the operation's registration (bounds and defaults come from its FieldSpec), and nested
// pipelines parsed with the spec's source and JSON path, so every error reads
// "<source>: <json path>.<key>: expected <what>, got <value>".
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/registry.h"
#include "spec_fields.h"

namespace pipeprof::pipelines {

class StageReader {
 public:
  // Parses a nested pipeline found at `key` of this stage.
  using ChainParser = std::function<Dataset(const nlohmann::json& pipeline, const std::string& key)>;
  // The same, as a DatasetFn called with the outer element ("$element").
  using NestedParser =
      std::function<DatasetFn(const nlohmann::json& pipeline, const std::string& key)>;

  StageReader(const OpRegistration& op, const spec_detail::Fields& fields, ChainParser chain,
              NestedParser nested)
      : op_(op), fields_(fields), chain_(std::move(chain)), nested_(std::move(nested)) {}

  // Checks the stage against the registration: no unknown key, every required field present and
  // every present field of the declared type and within its bounds.
  void validate() const;

  const std::string& where() const { return fields_.where(); }
  const spec_detail::Fields& fields() const { return fields_; }
  bool has(const std::string& key) const { return fields_.has(key); }
  const nlohmann::json& raw(const std::string& key) const { return fields_.raw(key); }
  [[noreturn]] void fail(const std::string& key, const std::string& expected,
                         const nlohmann::json& got) const {
    fields_.fail(key, expected, got);
  }

  // Typed values with the registration's bounds and defaults.
  int64_t integer(const std::string& key) const;
  std::optional<int64_t> optional_integer(const std::string& key) const;  // absent: nullopt
  double number(const std::string& key) const;
  bool boolean(const std::string& key) const;
  std::string string(const std::string& key) const;  // absent without a default: ""
  // A kTunable field: its value, or kAutotune.
  int64_t tunable(const std::string& key) const;
  // A kTunable field that only the offline tuner moves: "autotune" runs at the knob's start.
  int64_t tunable_or_start(const std::string& key) const;
  const nlohmann::json& object(const std::string& key) const;  // absent: {}
  Element element(const std::string& key, const std::string& dtype_key) const {
    return fields_.element(key, dtype_key);
  }

  // Nested pipelines: a kPipeline field as a DatasetFn, a kPipelines field as datasets.
  DatasetFn pipeline(const std::string& key) const;
  std::vector<Dataset> pipelines(const std::string& key) const;

 private:
  const FieldSpec& spec(const std::string& key, FieldType type) const;
  // Fails when a size field (FieldSpec::bytes_each) asks for more than the machine can hold.
  void check_memory(const FieldSpec& f, int64_t value) const;

  const OpRegistration& op_;
  const spec_detail::Fields& fields_;
  ChainParser chain_;
  NestedParser nested_;
};

}  // namespace pipeprof::pipelines
