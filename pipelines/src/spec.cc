#include "pipeprof/pipelines/spec.h"

#include <fmt/format.h>


#include <fstream>
#include <sstream>

#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/functions.h"
#include "ops/stage_reader.h"
#include "pipeprof/pipelines/registry.h"
#include "pipeprof/trace/json_depth.h"
#include "spec_fields.h"

namespace pipeprof::pipelines {
namespace {

using spec_detail::ElementScope;
using spec_detail::Fields;

struct Context {
  std::string source;
  ElementScope scope;
};

Dataset parse_chain(const nlohmann::json& pipeline, const Context& ctx, const std::string& path);

DatasetFn nested_pipeline_fn(const nlohmann::json& pipeline, const Context& ctx,
                             const std::string& path) {
  // Validate now, with placeholders for "$element", so a bad nested spec fails at load time.
  parse_chain(pipeline, Context{ctx.source, ElementScope{true, nullptr}}, path);
  DatasetFn fn;
  fn.name = "pipeline";
  fn.args = pipeline;
  fn.serializable = true;
  fn.fn = [pipeline, source = ctx.source, path](const Element& outer) {
    return parse_chain(pipeline, Context{source, ElementScope{true, &outer}}, path);
  };
  return fn;
}

// One stage: its operation's registration validates the fields and builds it. Sources get no
// input; transformations get the chain so far.
Dataset parse_stage(const nlohmann::json& stage, const Dataset* input, const Context& ctx,
                    const std::string& path) {
  const Fields f(stage, ctx.source + ": " + path, ctx.scope);
  const std::string op = f.string("op");
  const OpRegistration* registration = find_op(op);
  const OpKind kind = input == nullptr ? OpKind::kSource : OpKind::kTransform;
  if (registration == nullptr || registration->kind != kind) {
    f.fail("op",
           kind == OpKind::kSource
               ? fmt::format("a source operation ({})", op_names(OpKind::kSource))
               : fmt::format("a transformation ({})", op_names(OpKind::kTransform)),
           stage.at("op"));
  }
  const StageReader reader(
      *registration, f,
      [&](const nlohmann::json& pipeline, const std::string& key) {
        return parse_chain(pipeline, ctx, path + "." + key);
      },
      [&](const nlohmann::json& pipeline, const std::string& key) {
        return nested_pipeline_fn(pipeline, ctx, path + "." + key);
      });
  reader.validate();
  try {
    return registration->build(reader, input);
  } catch (const std::invalid_argument& e) {
    throw SpecError(fmt::format("{}: {}", f.where(), e.what()));
  }
}

Dataset parse_chain(const nlohmann::json& pipeline, const Context& ctx, const std::string& path) {
  const std::string prefix = path.empty() ? "" : path + ".";
  const Fields f(pipeline, ctx.source + ": " + (path.empty() ? "(top level)" : path), ctx.scope);
  if (!path.empty()) f.only({"stages"});
  const auto& stages = f.raw("stages");
  if (!stages.is_array() || stages.empty()) f.fail("stages", "a non-empty list of stages", stages);
  Dataset dataset = parse_stage(stages[0], nullptr, ctx, prefix + "stages[0]");
  for (size_t i = 1; i < stages.size(); ++i) {
    dataset = parse_stage(stages[i], &dataset, ctx, fmt::format("{}stages[{}]", prefix, i));
  }
  return dataset;
}

}  // namespace

namespace {

void resolve_stages(nlohmann::json& pipeline, const ParseOptions& o) {
  if (!pipeline.is_object() || !pipeline.contains("stages") || !pipeline["stages"].is_array())
    return;
  nlohmann::json out = nlohmann::json::array();
  for (nlohmann::json stage : pipeline["stages"]) {
    bool shard_after = false;
    if (stage.is_object()) {
      // Not yet validated (the stage's own checks come later): any value, of any type.
      const nlohmann::json& op_value = stage.value("op", nlohmann::json());
      const std::string op = op_value.is_string() ? op_value.get<std::string>() : std::string();
      if (op == "shard") {
        if (stage.value("num_shards", nlohmann::json()) == "ranks") stage["num_shards"] = o.ranks;
        if (stage.value("index", nlohmann::json()) == "rank") stage["index"] = o.rank;
      } else if (op == "list_files" && stage.value("shard", nlohmann::json()) == "rank") {
        // Every rank lists and shuffles the files, then keeps its share: the ranks' orders must
        // be the same, or their shares overlap. A shuffled listing needs a seed.
        if (stage.value("shuffle", nlohmann::json(true)) == true && !stage.contains("seed")) {
          throw SpecError(
              "list_files: \"shard\": \"rank\" needs a \"seed\" when it shuffles (every rank "
              "must shuffle the files the same way, or their shares overlap), or \"shuffle\": "
              "false");
        }
        stage.erase("shard");
        shard_after = true;
      }
      if (stage.contains("pipeline")) resolve_stages(stage["pipeline"], o);
      if (stage.contains("inputs") && stage["inputs"].is_array()) {
        for (nlohmann::json& input : stage["inputs"])
          resolve_stages(input, o);
      }
    }
    out.push_back(std::move(stage));
    if (shard_after) {
      out.push_back({{"op", "shard"}, {"num_shards", o.ranks}, {"index", o.rank}});
    }
  }
  pipeline["stages"] = std::move(out);
}

}  // namespace

nlohmann::json resolve_ranks(const nlohmann::json& document, const ParseOptions& options) {
  if (options.ranks < 1 || options.rank < 0 || options.rank >= options.ranks) {
    throw std::invalid_argument(
        fmt::format("spec parse options: rank {} of {}", options.rank, options.ranks));
  }
  nlohmann::json out = document;
  resolve_stages(out, options);
  return out;
}

Spec parse_spec(const nlohmann::json& input, const std::string& source, const ParseOptions& options) {
  const nlohmann::json document = resolve_ranks(input, options);
  const Fields f(document, source + ": (top level)");
  f.only({"name", "description", "stages", "experiment"});
  Spec spec{f.string("name", std::string()), f.string("description", std::string()),
            parse_chain(document, Context{source, {}}, ""), document};
  return spec;
}

Dataset parse_pipeline(const nlohmann::json& pipeline, const std::string& source,
                       const ParseOptions& options) {
  return parse_chain(resolve_ranks(pipeline, options), Context{source, {}}, "");
}

Spec load_spec(const std::filesystem::path& file, const ParseOptions& options) {
  const std::string source = file.string();
  std::error_code dir_ec;
  // An ifstream opens a directory without complaint and then reads nothing.
  if (std::filesystem::is_directory(file, dir_ec)) {
    throw SpecError(fmt::format("{}: is a directory, not a spec file", source));
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::error_code ec;
    const bool exists = std::filesystem::exists(file, ec);
    throw SpecError(fmt::format("{}: {}", source, exists ? "cannot be read" : "no such file"));
  }
  std::ostringstream text;
  text << in.rdbuf();
  nlohmann::json document;
  try {
    document = trace::parse_json(text.str());  // at most trace::kMaxJsonDepth levels
  } catch (const nlohmann::json::parse_error& e) {
    throw SpecError(fmt::format("{}: invalid JSON at byte {}: {}", source, e.byte, e.what()));
  }
  return parse_spec(document, source, options);
}

nlohmann::json to_spec(const Dataset& dataset, const std::string& name,
                       const std::string& description) {
  nlohmann::json doc = dataset.to_json();
  if (!name.empty()) doc["name"] = name;
  if (!description.empty()) doc["description"] = description;
  return doc;
}

void save_spec(const std::filesystem::path& file, const Dataset& dataset, const std::string& name,
               const std::string& description) {
  const nlohmann::json doc = to_spec(dataset, name, description);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) throw SpecError(fmt::format("{}: cannot be written", file.string()));
  out << doc.dump(2) << "\n";
  if (!out) throw SpecError(fmt::format("{}: write failed", file.string()));
}

}  // namespace pipeprof::pipelines
