#include "ops/map_and_batch.h"

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "ops/batch.h"
#include "ops/common.h"
#include "ops/map.h"
#include "ops/stage_reader.h"
#include "ops/worker_thread.h"
#include "pipeprof/pipelines/functions.h"
#include "pipeprof/pipelines/registry.h"
#include "pipeprof/pipelines/sleep.h"

namespace pipeprof::pipelines {
namespace ops {
namespace {

// Stacks the rows into one element, with batch's checks (arity, dtype and shape agree).
Element stack_rows(const std::vector<Element>& rows) {
  Element out;
  const Element& first = rows.front();
  for (size_t r = 1; r < rows.size(); ++r) {
    if (rows[r].size() != first.size()) {
      throw std::invalid_argument(fmt::format("element {} of the batch has {} components, element 0 has {}",
                                              r, rows[r].size(), first.size()));
    }
    for (size_t c = 0; c < first.size(); ++c) {
      const Tensor& t = rows[r][c];
      if (t.dtype() != first[c].dtype() || t.shape() != first[c].shape()) {
        throw std::invalid_argument(fmt::format(
            "element {} component {} is {}{}, element 0's is {}{}", r, c, dtype_name(t.dtype()),
            shape_string(t.shape()), dtype_name(first[c].dtype()), shape_string(first[c].shape())));
      }
    }
  }
  std::vector<Tensor> parts(rows.size());
  for (size_t c = 0; c < first.size(); ++c) {
    for (size_t r = 0; r < rows.size(); ++r)
      parts[r] = rows[r][c];
    out.push_back(Tensor::stack(parts));
  }
  return out;
}

class SequentialMapAndBatchIterator final : public Iterator {
 public:
  SequentialMapAndBatchIterator(const IteratorContext& ctx, const MapAndBatchNode& node)
      : Iterator(ctx, &node),
        node_(node),
        input_(node.inputs()[0].node().make_iterator(input_context())) {}

 protected:
  std::optional<Element> next_impl() override {
    if (ended_) return std::nullopt;
    std::vector<Element> rows;
    while (static_cast<int64_t>(rows.size()) < node_.options.batch_size) {
      auto e = input_->next();
      if (!e) {
        ended_ = true;
        break;
      }
      rows.push_back(with_stage(stage_name(), [&] {
        trace::ScopedSpan span(trace_work_name(), trace::category::pipeline());
        return node_.fn.fn(std::move(*e));
      }));
    }
    if (rows.empty() ||
        (ended_ && node_.options.drop_remainder &&
         static_cast<int64_t>(rows.size()) < node_.options.batch_size)) {
      return std::nullopt;
    }
    return with_stage(stage_name(), [&] { return stack_rows(rows); });
  }

 private:
  const MapAndBatchNode& node_;
  std::unique_ptr<Iterator> input_;
  bool ended_ = false;
};

// Workers take turns pulling the input (one at a time); each result is kept by its position in
// the input until the consumer takes it, in order. Pulls stop two batches ahead of the consumer,
// and at most `parallelism` calls of fn run at once (read on every decision: a knob change takes
// effect at once).
class ParallelMapAndBatchIterator final : public Iterator {
 public:
  ParallelMapAndBatchIterator(const IteratorContext& ctx, const MapAndBatchNode& node)
      : Iterator(ctx, &node),
        node_(node),
        input_(node.inputs()[0].node().make_iterator(input_context())) {
    if (node.options.parallelism == kAutotune) {
      knob_ =
          &this->node()->knob("parallelism", 1, kMaxParallelism, default_autotune_parallelism());
    }
  }

  ~ParallelMapAndBatchIterator() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (auto& t : workers_)
      t.join();
  }

 protected:
  std::optional<Element> next_impl() override {
    if (ended_) return std::nullopt;
    const int64_t batch = node_.options.batch_size;
    std::vector<Element> rows;
    std::unique_lock<std::mutex> lock(mu_);
    spawn_workers();
    while (static_cast<int64_t>(rows.size()) < batch) {
      auto it = results_.find(taken_);
      if (it == results_.end()) {
        if (input_ended_ && taken_ >= total_) {
          ended_ = true;
          break;
        }
        BlockedScope blocked(*this);
        done_cv_.wait_for(lock, std::chrono::milliseconds(20));
        if (cancellation().cancelled()) return std::nullopt;
        spawn_workers();
        continue;
      }
      Result r = std::move(it->second);
      results_.erase(it);
      ++taken_;
      set_buffered(static_cast<int64_t>(results_.size()));
      work_cv_.notify_all();  // the window moved
      if (r.error) {
        lock.unlock();
        std::rethrow_exception(r.error);  // the rows so far are dropped, as batch drops them
      }
      rows.push_back(std::move(*r.value));
    }
    lock.unlock();
    if (rows.empty() || (ended_ && node_.options.drop_remainder &&
                         static_cast<int64_t>(rows.size()) < batch)) {
      return std::nullopt;
    }
    return with_stage(stage_name(), [&] { return stack_rows(rows); });
  }

 private:
  int64_t parallelism() const { return knob_ ? knob_->value() : node_.options.parallelism; }

  // With the lock held: one thread per unit of parallelism, created on demand; a changed knob
  // wakes the idle ones.
  void spawn_workers() {
    const int64_t want = parallelism();
    stats().buffer_capacity.store(want, std::memory_order_relaxed);
    while (static_cast<int64_t>(workers_.size()) < want)
      workers_.emplace_back(fmt::format("{} #{}", stage_name(), workers_.size()),
                            [this, i = static_cast<int64_t>(workers_.size())] { work(i); });
    if (want != last_parallelism_) {
      last_parallelism_ = want;
      work_cv_.notify_all();
    }
  }

  bool can_pull(int64_t index) const {
    return !pulling_ && !input_ended_ && index < parallelism() && in_flight_ < parallelism() &&
           next_seq_ < taken_ + 2 * node_.options.batch_size;
  }

  void work(int64_t index) {
    prepare_worker_thread(stage_name(), index);
    CancellationScope cancel_scope(&cancellation());
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      work_cv_.wait(lock, [&] { return stop_ || can_pull(index); });
      if (stop_) return;
      pulling_ = true;
      const int64_t seq = next_seq_;
      lock.unlock();
      Result in = capture(stage_name(), [&] { return input_->next(); });
      lock.lock();
      pulling_ = false;
      if (in.end()) {
        input_ended_ = true;
        total_ = seq;
        done_cv_.notify_all();
        work_cv_.notify_all();
        continue;
      }
      ++next_seq_;
      ++in_flight_;
      work_cv_.notify_one();  // the next pull can start
      lock.unlock();
      Result out;
      if (in.error) {
        out = std::move(in);
      } else {
        WorkScope work(*this);
        out = capture(stage_name(), [&] { return node_.fn.fn(std::move(*in.value)); });
      }
      lock.lock();
      --in_flight_;
      results_.emplace(seq, std::move(out));
      if (seq == taken_) done_cv_.notify_one();
      work_cv_.notify_one();
    }
  }

  const MapAndBatchNode& node_;
  std::unique_ptr<Iterator> input_;
  Knob* knob_ = nullptr;
  bool ended_ = false;  // consumer only
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  // Guarded by mu_:
  std::map<int64_t, Result> results_;  // by position in the input
  int64_t next_seq_ = 0;               // position of the next pull
  int64_t taken_ = 0;                  // position the consumer takes next
  int64_t in_flight_ = 0;
  int64_t total_ = 0;
  int64_t last_parallelism_ = 0;
  bool pulling_ = false;
  bool input_ended_ = false;
  bool stop_ = false;
  std::vector<WorkerThread> workers_;
};

}  // namespace

MapAndBatchNode::MapAndBatchNode(Dataset input, Function fn_, MapAndBatchOptions options_)
    : DatasetNode(std::move(input)), fn(std::move(fn_)), options(std::move(options_)) {
  if (!fn.fn) throw std::invalid_argument("map_and_batch: empty function");
  if (options.batch_size < 1) throw std::invalid_argument("map_and_batch: batch_size must be positive");
  if ((options.parallelism < 0 && options.parallelism != kAutotune) ||
      options.parallelism > kMaxParallelism) {
    throw std::invalid_argument("map_and_batch: parallelism must be in [0, " +
                                std::to_string(kMaxParallelism) + "] or kAutotune");
  }
}

std::string MapAndBatchNode::display_name() const {
  return named_stage("map_and_batch", options.name.empty() ? fn.name : options.name);
}

nlohmann::json MapAndBatchNode::params() const {
  nlohmann::json out{{"batch_size", options.batch_size},
                     {"drop_remainder", options.drop_remainder},
                     {"parallelism", tunable_json(options.parallelism)},
                     {"name", options.name}};
  add_callable_json(out, "fn", fn, "map_and_batch");
  return out;
}

std::unique_ptr<Iterator> MapAndBatchNode::make_iterator(const IteratorContext& ctx) const {
  if (options.parallelism == 0) return std::make_unique<SequentialMapAndBatchIterator>(ctx, *this);
  return std::make_unique<ParallelMapAndBatchIterator>(ctx, *this);
}

const OpRegistration& map_and_batch_registration() {
  static const OpRegistration kOp{
      .name = "map_and_batch",
      .kind = OpKind::kTransform,
      .summary = "map then batch fused into one stage (tf.data's map_and_batch)",
      .fields = {{.name = "fn", .type = FieldType::kString, .required = true,
                  .doc = "a function of functions.h"},
                 {.name = "args", .type = FieldType::kObject,
                  .fallback = nlohmann::json::object(), .spelled_out = false},
                 {.name = "batch_size", .type = FieldType::kInteger, .required = true, .min = 1},
                 {.name = "drop_remainder", .type = FieldType::kBoolean, .fallback = false},
                 {.name = "parallelism", .type = FieldType::kTunable, .fallback = 0, .min = 1,
                  .max = kMaxParallelism, .knob = KnobRule{.kind = KnobKind::kParallelism},
                  .doc = "absent: sequential on the consumer's thread", .spelled_out = false},
                 {.name = "name", .type = FieldType::kString, .fallback = "", .spelled_out = false}},
      .build = [](const StageReader& s, const Dataset* input) {
        return input->map_and_batch(make_function(s.string("fn"), s.object("args"), s.where()),
                                    {.batch_size = s.integer("batch_size"),
                                     .drop_remainder = s.boolean("drop_remainder"),
                                     .parallelism = s.tunable("parallelism"),
                                     .name = s.string("name")});
      },
      // map then batch: the map's rule (sequential or parallel workers) feeding batch's.
      .simulate = [](const sim::SimStage& s) -> sim::NodePtr {
        const sim::MapFn timing =
            map_timing(make_function(s.string("fn"), s.value("args")), s, "map_and_batch");
        const sim::NodePtr input = s.input();
        sim::NodePtr mapped;
        if (s.tunable("parallelism") == 0) {
          mapped = std::make_shared<sim::FnNode>([input, timing] {
            return std::make_unique<sim::SeqMapIterator>(input->iterate(), timing);
          });
        } else {
          const double workers = s.capacity("parallelism");
          mapped = std::make_shared<sim::FnNode>([input, timing, workers] {
            return std::make_unique<sim::ParallelMapIterator>(input->iterate(), timing, workers);
          });
        }
        return simulate_batch(mapped, s.integer("batch_size"), s.boolean("drop_remainder"));
      }};
  return kOp;
}

}  // namespace ops

Dataset Dataset::map_and_batch(Function fn, MapAndBatchOptions options) const {
  return Dataset(std::make_shared<ops::MapAndBatchNode>(*this, std::move(fn), std::move(options)));
}

}  // namespace pipeprof::pipelines
