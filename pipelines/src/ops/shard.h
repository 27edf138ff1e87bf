// shard(num_shards, index): every num_shards-th element starting at position `index`.
// index must lie in [0, num_shards).
#pragma once

#include "pipeprof/pipelines/dataset.h"

namespace pipeprof::pipelines::ops {

class ShardNode final : public DatasetNode {
 public:
  ShardNode(Dataset input, int64_t num_shards, int64_t index);
  std::string_view op() const override { return "shard"; }
  nlohmann::json params() const override {
    return {{"num_shards", num_shards}, {"index", index}};
  }
  std::unique_ptr<Iterator> make_iterator(const IteratorContext& ctx) const override;

  int64_t num_shards, index;
};

}  // namespace pipeprof::pipelines::ops
