#include "pipeprof/pipelines/spec.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/functions.h"
#include "spec_fields.h"

namespace pipeprof::pipelines {
namespace {

// A process source's "producers" or "queue_capacity" written "autotune" is a knob for the offline
// tuner (`pipeprof tune`); the producers are forked once, so a plain run uses the default.
int64_t knob_or_default(int64_t value, int64_t fallback) {
  return value == kAutotune ? fallback : value;
}

using spec_detail::ElementScope;
using spec_detail::Fields;

// Upper bounds that catch typos before they exhaust memory or threads.
constexpr int64_t kMaxCycleLength = 4096;
constexpr int64_t kMaxFixedBuffer = int64_t{1} << 24;
constexpr int64_t kMaxProducers = 1024;
constexpr int64_t kMaxStoreMb = int64_t{1} << 20;

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

std::string optional_name(const Fields& f) {
  return f.string("name", std::string());
}

Dataset parse_source(const nlohmann::json& stage, const Context& ctx, const std::string& path) {
  const Fields f(stage, ctx.source + ": " + path, ctx.scope);
  const std::string op = f.string("op");
  if (op == "range") {
    f.only({"op", "start", "stop", "step"});
    const int64_t step = f.integer("step", 1);
    if (step == 0) f.fail("step", "a non-zero integer", step);
    return range(f.integer("start", 0), f.integer("stop"), step);
  }
  if (op == "from_tensors" || op == "from_tensor_slices") {
    f.only({"op", "value", "dtype", "components"});
    Element element;
    if (f.has("components")) {
      const auto& list = f.raw("components");
      if (!list.is_array() || list.empty()) f.fail("components", "a non-empty list", list);
      for (size_t i = 0; i < list.size(); ++i) {
        const Fields c(list[i], f.path(fmt::format("components[{}]", i)), ctx.scope);
        c.only({"value", "dtype"});
        for (Tensor& t : c.element("value", "dtype"))
          element.push_back(std::move(t));
      }
    } else {
      element = f.element("value", "dtype");
    }
    try {
      return op == "from_tensors" ? from_tensors(std::move(element))
                                  : from_tensor_slices(std::move(element));
    } catch (const std::invalid_argument& e) {
      throw SpecError(fmt::format("{}: {}", f.where(), e.what()));
    }
  }
  if (op == "from_vector") {
    f.only({"op", "values"});
    const auto& values = f.raw("values");
    std::vector<int64_t> v;
    if (!values.is_array()) f.fail("values", "a list of integers", values);
    for (const auto& x : values) {
      if (!x.is_number_integer()) f.fail("values", "a list of integers", values);
      v.push_back(x.get<int64_t>());
    }
    return from_vector(v);
  }
  if (op == "generator") {
    f.only({"op", "fn", "args"});
    return generator(make_generator(f.string("fn"), f.object("args"), f.where()));
  }
  if (op == "artificial") {
    f.only({"op", "open_ms", "read_ms", "num_samples"});
    return artificial({.open_ms = f.number("open_ms", 30.0, 0),
                       .read_ms = f.number("read_ms", 15.0, 0),
                       .num_samples = f.integer("num_samples", 3, 0)});
  }
  if (op == "multiprocess") {
    f.only({"op", "pipeline", "producers", "queue_capacity", "deterministic"});
    const MultiprocessOptions options{
        .producers = knob_or_default(f.tunable("producers", 8, 1, kMaxProducers), 8),
        .queue_capacity = knob_or_default(f.tunable("queue_capacity", 16, 1, kMaxFixedBuffer), 16),
        .deterministic = f.boolean("deterministic", false)};
    return multiprocess(nested_pipeline_fn(f.raw("pipeline"), ctx, path + ".pipeline"), options);
  }
  if (op == "shared_store") {
    f.only({"op", "pipeline", "producers", "queue_capacity", "store_mb", "deterministic"});
    const SharedStoreOptions options{
        .producers = knob_or_default(f.tunable("producers", 8, 1, kMaxProducers), 8),
        .queue_capacity = knob_or_default(f.tunable("queue_capacity", 16, 1, kMaxFixedBuffer), 16),
        .store_mb = f.integer("store_mb", 2048, 1, kMaxStoreMb),
        .deterministic = f.boolean("deterministic", false)};
    return shared_store(nested_pipeline_fn(f.raw("pipeline"), ctx, path + ".pipeline"), options);
  }
  if (op == "zip") {
    f.only({"op", "inputs"});
    const auto& inputs = f.raw("inputs");
    if (!inputs.is_array() || inputs.empty())
      f.fail("inputs", "a non-empty list of pipelines", inputs);
    std::vector<Dataset> datasets;
    for (size_t i = 0; i < inputs.size(); ++i) {
      datasets.push_back(parse_chain(inputs[i], ctx, fmt::format("{}.inputs[{}]", path, i)));
    }
    return zip(std::move(datasets));
  }
  f.fail("op",
         "a source operation (range, from_tensors, from_tensor_slices, from_vector, generator, "
         "artificial, zip, multiprocess, shared_store)",
         stage.at("op"));
}

Dataset apply_stage(const Dataset& input, const nlohmann::json& stage, const Context& ctx,
                    const std::string& path) {
  const Fields f(stage, ctx.source + ": " + path, ctx.scope);
  const std::string op = f.string("op");
  if (op == "map") {
    f.only({"op", "fn", "args", "parallelism", "deterministic", "name"});
    return input.map(make_function(f.string("fn"), f.object("args"), f.where()),
                     {.parallelism = f.tunable("parallelism", 0, 1, kMaxParallelism),
                      .deterministic = f.boolean("deterministic", true),
                      .name = optional_name(f)});
  }
  if (op == "interleave") {
    f.only(
        {"op", "pipeline", "cycle_length", "block_length", "parallelism", "deterministic", "name"});
    const int64_t cycle_length = f.tunable("cycle_length", -1, 1, kMaxCycleLength);
    InterleaveOptions options{.cycle_length = cycle_length,
                              .block_length = f.integer("block_length", 1, 1),
                              .parallelism = f.tunable("parallelism", 0, 1, kMaxParallelism),
                              .deterministic = f.boolean("deterministic", true),
                              .name = optional_name(f)};
    return input.interleave(nested_pipeline_fn(f.raw("pipeline"), ctx, path + ".pipeline"),
                            options);
  }
  if (op == "prefetch") {
    f.only({"op", "buffer_size"});
    return input.prefetch(f.tunable("buffer_size", -1, 1, kMaxFixedBuffer));
  }
  if (op == "batch") {
    f.only({"op", "batch_size", "drop_remainder"});
    return input.batch(f.integer("batch_size", std::nullopt, 1),
                       f.boolean("drop_remainder", false));
  }
  if (op == "cache") {
    f.only({"op"});
    return input.cache();
  }
  if (op == "shuffle") {
    f.only({"op", "buffer_size", "seed", "reshuffle_each_iteration"});
    ShuffleOptions options{.seed = std::nullopt,
                           .reshuffle_each_iteration = f.boolean("reshuffle_each_iteration", true)};
    if (f.has("seed")) options.seed = static_cast<uint64_t>(f.integer("seed", std::nullopt, 0));
    return input.shuffle(f.integer("buffer_size", std::nullopt, 1, kMaxFixedBuffer), options);
  }
  if (op == "repeat") {
    f.only({"op", "count"});
    return input.repeat(f.integer("count", -1, -1));
  }
  if (op == "take" || op == "skip") {
    f.only({"op", "count"});
    const int64_t count = f.integer("count", std::nullopt, -1);
    return op == "take" ? input.take(count) : input.skip(count);
  }
  if (op == "filter") {
    f.only({"op", "predicate", "args"});
    return input.filter(make_predicate(f.string("predicate"), f.object("args"), f.where()));
  }
  if (op == "shard") {
    f.only({"op", "num_shards", "index"});
    const int64_t num_shards = f.integer("num_shards", std::nullopt, 1);
    return input.shard(num_shards, f.integer("index", std::nullopt, 0, num_shards - 1));
  }
  f.fail("op",
         "a transformation (map, interleave, prefetch, batch, cache, shuffle, repeat, take, skip, "
         "filter, shard)",
         stage.at("op"));
}

Dataset parse_chain(const nlohmann::json& pipeline, const Context& ctx, const std::string& path) {
  const std::string prefix = path.empty() ? "" : path + ".";
  const Fields f(pipeline, ctx.source + ": " + (path.empty() ? "(top level)" : path), ctx.scope);
  if (!path.empty()) f.only({"stages"});
  const auto& stages = f.raw("stages");
  if (!stages.is_array() || stages.empty()) f.fail("stages", "a non-empty list of stages", stages);
  Dataset dataset = parse_source(stages[0], ctx, prefix + "stages[0]");
  for (size_t i = 1; i < stages.size(); ++i) {
    dataset = apply_stage(dataset, stages[i], ctx, fmt::format("{}stages[{}]", prefix, i));
  }
  return dataset;
}

}  // namespace

Spec parse_spec(const nlohmann::json& document, const std::string& source) {
  const Fields f(document, source + ": (top level)");
  f.only({"name", "description", "stages", "experiment"});
  Spec spec{f.string("name", std::string()), f.string("description", std::string()),
            parse_chain(document, Context{source, {}}, ""), document};
  return spec;
}

Dataset parse_pipeline(const nlohmann::json& pipeline, const std::string& source) {
  return parse_chain(pipeline, Context{source, {}}, "");
}

Spec load_spec(const std::filesystem::path& file) {
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
    document = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw SpecError(fmt::format("{}: invalid JSON at byte {}: {}", source, e.byte, e.what()));
  }
  return parse_spec(document, source);
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
