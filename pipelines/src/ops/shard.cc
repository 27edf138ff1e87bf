#include "ops/shard.h"

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include "ops/stage_reader.h"
#include "pipeprof/pipelines/registry.h"

namespace pipeprof::pipelines {
namespace ops {
namespace {

class ShardIterator final : public Iterator {
 public:
  ShardIterator(const IteratorContext& ctx, const ShardNode& node)
      : Iterator(ctx, &node),
        node_(node),
        input_(node.inputs()[0].node().make_iterator(input_context())) {}

 protected:
  std::optional<Element> next_impl() override {
    while (true) {
      auto e = input_->next();
      if (!e) return std::nullopt;
      if (position_++ % node_.num_shards == node_.index) return e;
    }
  }

 private:
  const ShardNode& node_;
  std::unique_ptr<Iterator> input_;
  int64_t position_ = 0;
};

}  // namespace

ShardNode::ShardNode(Dataset input, int64_t num_shards_, int64_t index_)
    : DatasetNode(std::move(input)), num_shards(num_shards_), index(index_) {
  if (num_shards < 1) throw std::invalid_argument("shard: num_shards must be positive");
  if (index < 0 || index >= num_shards) {
    throw std::invalid_argument("shard: index " + std::to_string(index) + " is outside [0, " +
                                std::to_string(num_shards) + ")");
  }
}

std::unique_ptr<Iterator> ShardNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<ShardIterator>(ctx, *this);
}

const OpRegistration& shard_registration() {
  static const OpRegistration kOp{
      .name = "shard",
      .kind = OpKind::kTransform,
      .summary = "every num_shards-th element, starting at index",
      .fields = {{.name = "num_shards", .type = FieldType::kInteger, .required = true, .min = 1},
                 {.name = "index", .type = FieldType::kInteger, .required = true, .min = 0,
                  .doc = "below num_shards"}},
      .build = [](const StageReader& s, const Dataset* input) {
        const int64_t num_shards = s.integer("num_shards");
        const int64_t index = s.integer("index");
        if (index >= num_shards) s.fail("index", fmt::format("an integer <= {}", num_shards - 1), index);
        return input->shard(num_shards, index);
      },
      .simulate = [](const sim::SimStage& s) -> sim::NodePtr {
        const int64_t shards = s.integer("num_shards"), index = s.integer("index");
        return sim::counting_stage(s.input(), [shards, index] {
          return [shards, index, pos = int64_t{0}](sim::SimIterator& in,
                                                   sim::Time t) mutable -> sim::Pull {
            while (true) {
              sim::Pull p = in.next(t);
              t = p.at;
              if (!p.elem || pos++ % shards == index) return p;
            }
          };
        });
      }};
  return kOp;
}

}  // namespace ops

Dataset Dataset::shard(int64_t num_shards, int64_t index) const {
  return Dataset(std::make_shared<ops::ShardNode>(*this, num_shards, index));
}

}  // namespace pipeprof::pipelines
