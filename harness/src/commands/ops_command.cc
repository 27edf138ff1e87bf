// pipeprof ops [op ...] [--json]: the reference of the pipeline operations, from their
// registrations (pipelines/registry.h): fields with types, bounds and defaults, knobs, summaries.
#include <fmt/format.h>

#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "commands/commands.h"
#include "pipeprof/pipelines/registry.h"

namespace pipeprof::harness {
namespace {

using pipelines::FieldSpec;
using pipelines::FieldType;
using pipelines::KnobKind;
using pipelines::OpRegistration;

std::string type_name(FieldType type) {
  switch (type) {
    case FieldType::kInteger: return "integer";
    case FieldType::kNumber: return "number";
    case FieldType::kBoolean: return "boolean";
    case FieldType::kString: return "string";
    case FieldType::kTunable: return "integer|\"autotune\"";
    case FieldType::kObject: return "object";
    case FieldType::kPipeline: return "pipeline";
    case FieldType::kPipelines: return "list of pipelines";
    case FieldType::kValue: return "value";
  }
  return "?";
}

std::string knob_name(KnobKind kind) {
  switch (kind) {
    case KnobKind::kParallelism: return "parallelism";
    case KnobKind::kBufferSize: return "buffer size";
    case KnobKind::kProducers: return "producers";
    case KnobKind::kQueueCapacity: return "queue capacity";
  }
  return "?";
}

std::string bounds(const FieldSpec& f) {
  constexpr int64_t kLow = std::numeric_limits<int64_t>::min();
  constexpr int64_t kHigh = std::numeric_limits<int64_t>::max();
  if (f.type != FieldType::kInteger && f.type != FieldType::kTunable &&
      f.type != FieldType::kNumber) {
    return "";
  }
  if (f.min == kLow && f.max == kHigh) return "";
  if (f.max == kHigh) return fmt::format(">= {}", f.min);
  if (f.min == kLow) return fmt::format("<= {}", f.max);
  return fmt::format("{}..{}", f.min, f.max);
}

nlohmann::json to_json(const OpRegistration& op) {
  nlohmann::json fields = nlohmann::json::array();
  for (const FieldSpec& f : op.fields) {
    nlohmann::json j{{"name", f.name}, {"type", type_name(f.type)}, {"required", f.required}};
    if (!f.fallback.is_null()) j["default"] = f.fallback;
    if (!bounds(f).empty()) j["bounds"] = bounds(f);
    if (f.knob) {
      j["knob"] = {{"kind", knob_name(f.knob->kind)}, {"online", f.knob->online}};
      if (!f.knob->bounded_by.empty()) j["knob"]["bounded_by"] = f.knob->bounded_by;
      if (!f.knob->follows.empty()) j["knob"]["follows"] = f.knob->follows;
    }
    if (!f.doc.empty()) j["doc"] = f.doc;
    fields.push_back(std::move(j));
  }
  return {{"op", op.name},
          {"kind", op.kind == pipelines::OpKind::kSource ? "source" : "transformation"},
          {"summary", op.summary},
          {"fields", std::move(fields)}};
}

void print(const OpRegistration& op) {
  std::cout << fmt::format("{} ({}): {}\n", op.name,
                           op.kind == pipelines::OpKind::kSource ? "source" : "transformation",
                           op.summary);
  for (const FieldSpec& f : op.fields) {
    std::string notes = f.required ? "required" : "";
    if (!f.fallback.is_null()) notes = "default " + f.fallback.dump();
    if (const std::string b = bounds(f); !b.empty()) notes += (notes.empty() ? "" : ", ") + b;
    if (f.knob) {
      notes += fmt::format("{}knob: {}, {}", notes.empty() ? "" : "; ", knob_name(f.knob->kind),
                           f.knob->online ? "online and offline" : "offline only");
    }
    std::cout << fmt::format("  {:<26} {:<20} {}{}\n", f.name, type_name(f.type), notes,
                             f.doc.empty() ? "" : " (" + f.doc + ")");
  }
}

}  // namespace

CommandRunner add_ops_command(CLI::App& app) {
  struct Options {
    std::vector<std::string> names;
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "ops", "List the pipeline operations a spec may use: fields, defaults, bounds and knobs");
  cmd->add_option("op", o->names, "Only these operations (default: all)");
  cmd->add_flag("--json", o->json, "Print the reference as JSON");
  return [o] {
    std::vector<const OpRegistration*> selected;
    for (const std::string& name : o->names) {
      const OpRegistration* op = pipelines::find_op(name);
      if (op == nullptr) {
        throw InputError(fmt::format("unknown operation \"{}\" (known: {}, {})", name,
                                     pipelines::op_names(pipelines::OpKind::kSource),
                                     pipelines::op_names(pipelines::OpKind::kTransform)));
      }
      selected.push_back(op);
    }
    if (selected.empty()) selected = pipelines::registered_ops();
    if (o->json) {
      nlohmann::json out = nlohmann::json::array();
      for (const OpRegistration* op : selected)
        out.push_back(to_json(*op));
      std::cout << out.dump(2) << "\n";
    } else {
      for (size_t i = 0; i < selected.size(); ++i) {
        if (i > 0) std::cout << "\n";
        print(*selected[i]);
      }
    }
    return Outcome::kOk;
  };
}

}  // namespace pipeprof::harness
