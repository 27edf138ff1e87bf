#include "ops/shuffle.h"

#include <random>
#include <stdexcept>
#include "ops/stage_reader.h"
#include "pipeprof/pipelines/registry.h"

namespace pipeprof::pipelines {
namespace ops {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

class ShuffleIterator final : public Iterator {
 public:
  ShuffleIterator(const IteratorContext& ctx, const ShuffleNode& node, uint64_t seed)
      : Iterator(ctx, &node),
        node_(node),
        rng_(seed),
        input_(node.inputs()[0].node().make_iterator(input_context())) {
    stats().buffer_capacity.store(node.buffer_size);
  }

 protected:
  std::optional<Element> next_impl() override {
    if (!filled_) {
      filled_ = true;
      buffer_.reserve(static_cast<size_t>(node_.buffer_size));
      while (static_cast<int64_t>(buffer_.size()) < node_.buffer_size) {
        auto e = input_->next();
        if (!e) break;
        buffer_.push_back(std::move(*e));
      }
    }
    if (buffer_.empty()) return std::nullopt;
    std::uniform_int_distribution<size_t> pick(0, buffer_.size() - 1);
    const size_t i = pick(rng_);
    Element out = std::move(buffer_[i]);
    if (auto e = input_->next()) {
      buffer_[i] = std::move(*e);
    } else {
      buffer_[i] = std::move(buffer_.back());
      buffer_.pop_back();
    }
    set_buffered(static_cast<int64_t>(buffer_.size()));
    return out;
  }

 private:
  const ShuffleNode& node_;
  std::mt19937_64 rng_;
  std::unique_ptr<Iterator> input_;
  std::vector<Element> buffer_;
  bool filled_ = false;
};

}  // namespace

ShuffleNode::ShuffleNode(Dataset input, int64_t buffer_size_, ShuffleOptions options_)
    : DatasetNode(std::move(input)),
      buffer_size(buffer_size_),
      options(options_),
      base_seed(options_.seed ? *options_.seed : std::random_device{}()) {
  if (buffer_size < 1) throw std::invalid_argument("shuffle: buffer_size must be positive");
}

nlohmann::json ShuffleNode::params() const {
  nlohmann::json out{{"buffer_size", buffer_size},
                     {"reshuffle_each_iteration", options.reshuffle_each_iteration}};
  if (options.seed) out["seed"] = *options.seed;
  return out;
}

std::unique_ptr<Iterator> ShuffleNode::make_iterator(const IteratorContext& ctx) const {
  const uint64_t iteration = iterations.fetch_add(1);
  const uint64_t seed =
      splitmix64(base_seed ^ splitmix64(options.reshuffle_each_iteration ? iteration : 0));
  return std::make_unique<ShuffleIterator>(ctx, *this, seed);
}

const OpRegistration& shuffle_registration() {
  static const OpRegistration kOp{
      .name = "shuffle",
      .kind = OpKind::kTransform,
      .summary = "a uniformly random pick from a buffer of buffer_size elements",
      .fields = {{.name = "buffer_size", .type = FieldType::kInteger, .required = true, .min = 1,
                  .max = kMaxShuffleBuffer, .bytes_each = kMinElementBytes},
                 {.name = "seed", .type = FieldType::kInteger, .min = 0,
                  .doc = "absent: a new order on every run"},
                 {.name = "reshuffle_each_iteration", .type = FieldType::kBoolean,
                  .fallback = true}},
      .build = [](const StageReader& s, const Dataset* input) {
        ShuffleOptions options{.seed = std::nullopt,
                               .reshuffle_each_iteration = s.boolean("reshuffle_each_iteration")};
        if (auto seed = s.optional_integer("seed")) options.seed = static_cast<uint64_t>(*seed);
        return input->shuffle(s.integer("buffer_size"), options);
      },
      .simulate = [](const sim::SimStage& s) -> sim::NodePtr {
        // The order changes but not the timing: the first pull fills the buffer, every later pull
        // takes one more element. Values are no longer tracked (they are permuted).
        const int64_t buffer = s.integer("buffer_size");
        return sim::counting_stage(s.input(), [buffer] {
          return [buffer, held = int64_t{0}, filled = false, ended = false](
                     sim::SimIterator& in, sim::Time t) mutable -> sim::Pull {
            auto pull = [&] {
              sim::Pull p = in.next(t);
              t = p.at;
              if (p.elem) {
                ++held;
              } else {
                ended = true;
              }
            };
            if (!filled) {
              filled = true;
              while (!ended && held < buffer)
                pull();
            }
            if (held == 0) return {std::nullopt, t};
            --held;
            if (!ended) pull();
            return {sim::Elem{}, t};
          };
        });
      }};
  return kOp;
}

}  // namespace ops

Dataset Dataset::shuffle(int64_t buffer_size, ShuffleOptions options) const {
  return Dataset(std::make_shared<ops::ShuffleNode>(*this, buffer_size, options));
}

}  // namespace pipeprof::pipelines
