#include "pipeprof/pipelines/registry.h"

#include <fmt/format.h>

#include <stdexcept>

#include "ops/all_ops.h"
#include "ops/stage_reader.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/memory_limit.h"

namespace pipeprof::pipelines {
namespace ops {
#define PIPEPROF_DECLARE_OP(name) const OpRegistration& name##_registration();
PIPEPROF_FOR_EACH_OP(PIPEPROF_DECLARE_OP)
#undef PIPEPROF_DECLARE_OP
}  // namespace ops

const FieldSpec* OpRegistration::field(std::string_view name_) const {
  for (const FieldSpec& f : fields) {
    if (f.name == name_) return &f;
  }
  return nullptr;
}

const std::vector<const OpRegistration*>& registered_ops() {
  static const std::vector<const OpRegistration*> kOps{
#define PIPEPROF_LIST_OP(name) &ops::name##_registration(),
      PIPEPROF_FOR_EACH_OP(PIPEPROF_LIST_OP)
#undef PIPEPROF_LIST_OP
  };
  return kOps;
}

const OpRegistration* find_op(std::string_view op) {
  for (const OpRegistration* r : registered_ops()) {
    if (r->name == op) return r;
  }
  return nullptr;
}

std::string op_names(OpKind kind) {
  std::vector<std::string> names;
  for (const OpRegistration* r : registered_ops()) {
    if (r->kind == kind) names.push_back(r->name);
  }
  return fmt::format("{}", fmt::join(names, ", "));
}

nlohmann::json write_stage(const OpRegistration& op, const nlohmann::json& params) {
  for (const auto& [key, value] : params.items()) {
    if (key != "op" && op.field(key) == nullptr) {
      throw std::logic_error(
          fmt::format("{}: parameter \"{}\" is not a field of its registration", op.name, key));
    }
  }
  nlohmann::json out{{"op", op.name}};
  for (const FieldSpec& f : op.fields) {
    auto it = params.find(f.name);
    if (it == params.end() || it->is_null()) continue;
    if (!f.spelled_out && *it == f.fallback) continue;
    out[f.name] = *it;
  }
  return out;
}

// --- StageReader -------------------------------------------------------------------------------

const FieldSpec& StageReader::spec(const std::string& key, FieldType type) const {
  const FieldSpec* f = op_.field(key);
  if (f == nullptr || f->type != type) {
    throw std::logic_error(fmt::format("{}: field \"{}\" is not registered with the type read",
                                       op_.name, key));
  }
  return *f;
}

void StageReader::validate() const {
  std::vector<const char*> known{"op"};
  for (const FieldSpec& f : op_.fields)
    known.push_back(f.name.c_str());
  for (const auto& [key, value] : fields_.raw_object().items()) {
    bool ok = false;
    for (const char* k : known)
      ok = ok || key == k;
    if (!ok) {
      throw SpecError(fmt::format("{}: unknown key \"{}\" (expected one of: {})", where(), key,
                                  fmt::join(known, ", ")));
    }
  }
  for (const FieldSpec& f : op_.fields) {
    // A missing required field fails in its typed reader, which says what was expected.
    if (!has(f.name) && !f.required) continue;
    switch (f.type) {
      case FieldType::kInteger: integer(f.name); break;
      case FieldType::kNumber: number(f.name); break;
      case FieldType::kBoolean: boolean(f.name); break;
      case FieldType::kString: string(f.name); break;
      case FieldType::kTunable: tunable(f.name); break;
      case FieldType::kObject: object(f.name); break;
      case FieldType::kPipeline:
        if (!has(f.name) || !raw(f.name).is_object()) {
          fail(f.name, "a pipeline ({\"stages\": [...]})",
               has(f.name) ? raw(f.name) : nlohmann::json());
        }
        break;
      case FieldType::kPipelines:
        if (!has(f.name) || !raw(f.name).is_array() || raw(f.name).empty()) {
          fail(f.name, "a non-empty list of pipelines",
               has(f.name) ? raw(f.name) : nlohmann::json());
        }
        break;
      case FieldType::kValue:
        if (!has(f.name)) fail(f.name, "a value", nlohmann::json());
        break;
    }
  }
}

int64_t StageReader::integer(const std::string& key) const {
  const FieldSpec& f = spec(key, FieldType::kInteger);
  std::optional<int64_t> fallback;
  if (f.fallback.is_number_integer()) fallback = f.fallback.get<int64_t>();
  const int64_t value = fields_.integer(key, fallback, f.min, f.max);
  check_memory(f, value);
  return value;
}

std::optional<int64_t> StageReader::optional_integer(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return integer(key);
}

double StageReader::number(const std::string& key) const {
  const FieldSpec& f = spec(key, FieldType::kNumber);
  std::optional<double> fallback;
  if (f.fallback.is_number()) fallback = f.fallback.get<double>();
  return fields_.number(key, fallback, static_cast<double>(f.min));
}

bool StageReader::boolean(const std::string& key) const {
  const FieldSpec& f = spec(key, FieldType::kBoolean);
  std::optional<bool> fallback;
  if (f.fallback.is_boolean()) fallback = f.fallback.get<bool>();
  return fields_.boolean(key, fallback);
}

std::string StageReader::string(const std::string& key) const {
  const FieldSpec& f = spec(key, FieldType::kString);
  std::optional<std::string> fallback;
  if (f.fallback.is_string()) {
    fallback = f.fallback.get<std::string>();
  } else if (!f.required) {
    fallback = std::string();
  }
  return fields_.string(key, fallback);
}

int64_t StageReader::tunable(const std::string& key) const {
  const FieldSpec& f = spec(key, FieldType::kTunable);
  std::optional<int64_t> fallback;
  if (f.fallback.is_number_integer()) fallback = f.fallback.get<int64_t>();
  if (f.fallback == "autotune") fallback = kAutotune;
  const int64_t value = fields_.tunable(key, fallback, f.min, f.max);
  check_memory(f, value);
  return value;
}

void StageReader::check_memory(const FieldSpec& f, int64_t value) const {
  if (f.bytes_each <= 0 || value <= 0) return;
  check_fits_in_memory(fields_.path(f.name),
                       fmt::format("{} = {} (at least {} each)", f.name, value,
                                   format_bytes(static_cast<double>(f.bytes_each))),
                       value, f.bytes_each);
}

int64_t StageReader::tunable_or_start(const std::string& key) const {
  const FieldSpec& f = spec(key, FieldType::kTunable);
  const int64_t value = tunable(key);
  if (value != kAutotune) return value;
  const int64_t start = f.knob ? f.knob->start : 0;
  return start > 0 ? start : default_autotune_parallelism();
}

const nlohmann::json& StageReader::object(const std::string& key) const {
  const FieldSpec& f = spec(key, FieldType::kObject);
  return fields_.object(key, f.required);
}

DatasetFn StageReader::pipeline(const std::string& key) const {
  spec(key, FieldType::kPipeline);
  return nested_(raw(key), key);
}

std::vector<Dataset> StageReader::pipelines(const std::string& key) const {
  spec(key, FieldType::kPipelines);
  const auto& list = raw(key);
  if (!list.is_array() || list.empty()) fail(key, "a non-empty list of pipelines", list);
  std::vector<Dataset> out;
  for (size_t i = 0; i < list.size(); ++i)
    out.push_back(chain_(list[i], fmt::format("{}[{}]", key, i)));
  return out;
}

}  // namespace pipeprof::pipelines
