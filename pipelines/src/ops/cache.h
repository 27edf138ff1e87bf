// cache(): in memory. The first iteration that runs to the end stores every element; later
// iterations replay the store without creating an input iterator at all (the stages before the
// cache do no work). An iteration that stops early (dropped, cancelled, or one whose input raised
// an error) stores nothing, so a partial pass never leaves an incomplete cache behind; the next
// iteration recomputes from the start.
#pragma once

#include <memory>
#include <mutex>

#include "pipeprof/pipelines/dataset.h"

namespace pipeprof::pipelines::ops {

class CacheNode final : public DatasetNode {
 public:
  explicit CacheNode(Dataset input)
      : DatasetNode(std::move(input)), store_(std::make_shared<Store>()) {}
  std::string_view op() const override { return "cache"; }
  nlohmann::json params() const override { return nlohmann::json::object(); }
  std::unique_ptr<Iterator> make_iterator(const IteratorContext& ctx) const override;

  // The elements of a complete pass, or nullptr while no pass has completed.
  std::shared_ptr<const std::vector<Element>> complete() const;
  void commit(std::vector<Element> elements) const;

 private:
  struct Store {
    std::mutex mu;
    std::shared_ptr<const std::vector<Element>> elements;
  };
  std::shared_ptr<Store> store_;
};

}  // namespace pipeprof::pipelines::ops
