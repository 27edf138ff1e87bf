#include "ops/batch.h"

#include <cstring>
#include <stdexcept>

#include "ops/batch_rows.h"
#include "ops/common.h"
#include "ops/interleave.h"
#include "ops/range.h"
#include "ops/stage_reader.h"
#include "pipeprof/pipelines/registry.h"

namespace pipeprof::pipelines {
namespace ops {
namespace {

// Copies each element into its row of the output as it arrives (no intermediate list); a short
// last batch is a zero-copy view of the rows filled. Over a deterministic parallel interleave, the
// interleave's workers place the elements in their rows themselves where they can (batch_rows.h),
// and a row found filled is not copied again.
class BatchIterator final : public Iterator {
 public:
  BatchIterator(const IteratorContext& ctx, const BatchNode& node)
      : Iterator(ctx, &node), node_(node), input_(make_input()) {}

 protected:
  std::optional<Element> next_impl() override {
    if (ended_) return std::nullopt;
    Element out;
    int64_t n = 0;
    try {
      while (n < node_.batch_size) {
        auto e = input_->next();
        if (!e) {
          ended_ = true;
          break;
        }
        with_stage(stage_name(), [&] { add_row(out, *e, n); });
        ++n;
      }
    } catch (...) {
      // The rows consumed are lost with the batch, so later elements no longer arrive in the
      // order their rows were given out: rows are no longer placed (and this batch's are not
      // written again).
      if (placed_) placed_->stop();
      placed_.reset();
      throw;
    }
    if (placed_) placed_->release(batches_++);  // the batch's buffer is the batch's own now
    if (n == 0 || (ended_ && node_.drop_remainder && n < node_.batch_size)) return std::nullopt;
    if (n < node_.batch_size) {
      for (Tensor& t : out)
        t = t.slice(0, n);
    }
    return out;
  }

 private:
  void add_row(Element& out, const Element& e, int64_t row) {
    if (row == 0) {
      out.reserve(e.size());
      rows_.clear();
      if (auto placed = placed_ ? placed_->batch(batches_, e) : std::nullopt) {
        out = std::move(placed->tensors);
        for (size_t c = 0; c < e.size(); ++c)
          rows_.push_back(Row{placed->bases[c], e[c].nbytes()});
      } else {
        for (const Tensor& t : e) {
          Shape shape{node_.batch_size};
          shape.insert(shape.end(), t.shape().begin(), t.shape().end());
          // Not zeroed: every row is written before the batch is seen (a short last batch is a
          // view of its rows).
          out.push_back(Tensor::uninitialized(t.dtype(), std::move(shape)));
          rows_.push_back(Row{out.back().mutable_data(), t.nbytes()});
        }
      }
    }
    if (e.size() != out.size()) {
      throw std::invalid_argument("element " + std::to_string(row) + " of the batch has " +
                                  std::to_string(e.size()) + " components, element 0 has " +
                                  std::to_string(out.size()));
    }
    for (size_t c = 0; c < e.size(); ++c) {
      const Tensor& t = e[c];
      if (t.dtype() != out[c].dtype() || t.nbytes() != rows_[c].bytes ||
          !std::equal(t.shape().begin(), t.shape().end(), out[c].shape().begin() + 1,
                      out[c].shape().end())) {
        throw std::invalid_argument(
            "element " + std::to_string(row) + " component " + std::to_string(c) + " is " +
            std::string(dtype_name(t.dtype())) + shape_string(t.shape()) + ", element 0's is " +
            std::string(dtype_name(out[c].dtype())) +
            shape_string(Shape(out[c].shape().begin() + 1, out[c].shape().end())));
      }
      std::byte* const to = rows_[c].base + static_cast<size_t>(row) * rows_[c].bytes;
      if (t.data() != to) std::memcpy(to, t.data(), rows_[c].bytes);  // else placed there
    }
  }

  // The input's iterator; over a deterministic parallel interleave, one that places rows.
  std::unique_ptr<Iterator> make_input() {
    const DatasetNode& input = node_.inputs()[0].node();
    if (const auto* interleave = dynamic_cast<const InterleaveNode*>(&input);
        interleave != nullptr && interleave->options.parallelism != 0 &&
        interleave->options.deterministic) {
      placed_ = std::make_shared<BatchRows>(node_.batch_size);
      return make_parallel_interleave_iterator(input_context(), *interleave, placed_);
    }
    return input.make_iterator(input_context());
  }

  struct Row {
    std::byte* base;
    size_t bytes;
  };
  const BatchNode& node_;
  std::shared_ptr<BatchRows> placed_;  // before input_: the interleave's workers use it
  std::unique_ptr<Iterator> input_;
  std::vector<Row> rows_;
  int64_t batches_ = 0;  // the batch being made (the index placed_ knows it by)
  bool ended_ = false;
};

// batch over range, fused: the batch of an arithmetic sequence is filled directly, with the same
// values, dtype and shapes as stacking the range's scalars (a static rewrite in the spirit of
// tf.data's fusions). The range stage then does not appear in the statistics on its own.
class RangeBatchIterator final : public Iterator {
 public:
  RangeBatchIterator(const IteratorContext& ctx, const BatchNode& node, const RangeNode& range)
      : Iterator(ctx, &node),
        batch_(node.batch_size),
        drop_(node.drop_remainder),
        next_(range.start),
        stop_(range.stop),
        step_(range.step) {}

 protected:
  std::optional<Element> next_impl() override {
    const int64_t remaining =
        step_ > 0 ? (stop_ - next_ + step_ - 1) / step_ : (next_ - stop_ - step_ - 1) / -step_;
    const int64_t n = std::min(batch_, std::max<int64_t>(0, remaining));
    if (n == 0 || (drop_ && n < batch_)) return std::nullopt;
    Tensor t(DType::kInt64, Shape{n});
    auto values = t.mutable_values<int64_t>();
    for (int64_t i = 0; i < n; ++i)
      values[static_cast<size_t>(i)] = next_ + i * step_;
    next_ += n * step_;
    return Element{std::move(t)};
  }

 private:
  int64_t batch_;
  bool drop_;
  int64_t next_, stop_, step_;
};

}  // namespace

BatchNode::BatchNode(Dataset input, int64_t batch_size_, bool drop_remainder_)
    : DatasetNode(std::move(input)), batch_size(batch_size_), drop_remainder(drop_remainder_) {
  if (batch_size < 1) throw std::invalid_argument("batch: batch_size must be positive");
}

nlohmann::json BatchNode::params() const {
  return {{"batch_size", batch_size}, {"drop_remainder", drop_remainder}};
}

std::unique_ptr<Iterator> BatchNode::make_iterator(const IteratorContext& ctx) const {
  if (const auto* range = dynamic_cast<const RangeNode*>(&inputs()[0].node())) {
    return std::make_unique<RangeBatchIterator>(ctx, *this, *range);
  }
  return std::make_unique<BatchIterator>(ctx, *this);
}

const OpRegistration& batch_registration() {
  static const OpRegistration kOp{
      .name = "batch",
      .kind = OpKind::kTransform,
      .summary = "batch_size consecutive elements stacked into one",
      .fields = {{.name = "batch_size", .type = FieldType::kInteger, .required = true, .min = 1,
                  .bytes_each = kMinElementBytes},
                 {.name = "drop_remainder", .type = FieldType::kBoolean, .fallback = false}},
      .build = [](const StageReader& s, const Dataset* input) {
        return input->batch(s.integer("batch_size"), s.boolean("drop_remainder"));
      },
      .simulate = [](const sim::SimStage& s) -> sim::NodePtr {
        return simulate_batch(s.input(), s.integer("batch_size"), s.boolean("drop_remainder"));
      }};
  return kOp;
}

sim::NodePtr simulate_batch(sim::NodePtr input, int64_t batch_size, bool drop_remainder) {
  return sim::counting_stage(std::move(input), [size = batch_size, drop = drop_remainder] {
    return [size, drop, ended = false](sim::SimIterator& in, sim::Time t) mutable -> sim::Pull {
      int64_t n = 0;
      std::optional<double> bytes = 0.0;  // the components stacked: the sum, when all are known
      while (!ended && n < size) {
        sim::Pull p = in.next(t);
        t = p.at;
        if (!p.elem) {
          ended = true;
        } else {
          ++n;
          bytes = bytes && p.elem->bytes ? std::optional(*bytes + *p.elem->bytes) : std::nullopt;
        }
      }
      if (n == 0 || (ended && drop && n < size)) return {std::nullopt, t};
      return {sim::Elem{std::nullopt, bytes}, t};
    };
  });
}

}  // namespace ops

Dataset Dataset::batch(int64_t batch_size, bool drop_remainder) const {
  return Dataset(std::make_shared<ops::BatchNode>(*this, batch_size, drop_remainder));
}

}  // namespace pipeprof::pipelines
