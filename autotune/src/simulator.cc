#include "pipeprof/autotune/simulator.h"

#include <fmt/format.h>

#include <exception>

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/registry.h"
#include "pipeprof/pipelines/simulation.h"

namespace pipeprof::autotune {
namespace {

using pipelines::sim::NodePtr;
using pipelines::sim::Pull;
using pipelines::sim::SimContext;
using pipelines::sim::SimStage;
using pipelines::sim::Time;
using pipelines::sim::Unsupported;

NodePtr build_chain(const nlohmann::json& pipeline, const SimContext& ctx);

NodePtr build_stage(const nlohmann::json& stage, NodePtr input, const SimContext& ctx) {
  const std::string op = stage.at("op").get<std::string>();
  const pipelines::OpRegistration* registration = pipelines::find_op(op);
  if (registration == nullptr) throw Unsupported(fmt::format("operation '{}'", op));
  if (!registration->simulate) throw Unsupported(fmt::format("operation '{}' has no model", op));
  const SimStage s(*registration, stage, std::move(input), ctx,
                   [&ctx](const nlohmann::json& nested) { return build_chain(nested, ctx); });
  return registration->simulate(s);
}

NodePtr build_chain(const nlohmann::json& pipeline, const SimContext& ctx) {
  const auto& stages = pipeline.at("stages");
  NodePtr node = build_stage(stages.at(0), nullptr, ctx);
  for (size_t i = 1; i < stages.size(); ++i)
    node = build_stage(stages[i], node, ctx);
  return node;
}

}  // namespace

SimResult simulate(const nlohmann::json& pipeline, const SimOptions& options) {
  SimResult result;
  const SimContext ctx{.bound = options.bound,
                       .autotune_parallelism = options.autotune_parallelism > 0
                                                   ? options.autotune_parallelism
                                                   : pipelines::default_autotune_parallelism(),
                       .rates = options.rates};
  try {
    NodePtr root = build_chain(pipeline, ctx);
    Time t = 0, waited = 0;
    for (int64_t epoch = 0; epoch < options.epochs; ++epoch) {
      auto it = root->iterate();
      while (true) {
        Pull p = it->next(t);
        if (!p.elem) {
          t = p.at;
          break;
        }
        waited += p.at - t;
        t = p.at;
        ++result.elements;
        t += options.step_ms;
      }
    }
    result.supported = true;
    result.total_ms = t;
    if (result.elements > 0) result.wait_mean_ms = waited / static_cast<double>(result.elements);
  } catch (const pipelines::sim::NeedsMeasurement& e) {
    result.reason = e.what();
    result.needs_rates = true;
    result.needed_rate = e.rate;
  } catch (const Unsupported& e) {
    result.reason = e.what();
  } catch (const nlohmann::json::exception& e) {
    result.reason = fmt::format("unexpected spec shape: {}", e.what());
  } catch (const std::exception& e) {
    result.reason = fmt::format("simulation failed: {}", e.what());
  }
  return result;
}

}  // namespace pipeprof::autotune
