// cache(): in memory. The first iteration that runs to the end stores every element; later
// iterations replay the store without creating an input iterator at all (the stages before the
// cache do no work). An iteration that stops early (dropped, cancelled, or one whose input raised
// an error) stores nothing, so a partial pass never leaves an incomplete cache behind; the next
// iteration recomputes from the start.
//
// cache(filename): tf.data's on-disk cache, in the format of formats/cache_file.h. A pass that
// finds <filename> reads it (the stages before the cache do no work); otherwise it writes the
// elements as they pass, to <filename>.partial under the lock <filename>.lock, and renames it to
// <filename> when it reaches the end. A pass that stops early (dropped, cancelled, or an input
// error) removes its partial file, so no later pass trusts it. A second pass that tries to write
// the same cache while the first is writing fails at its first pull, naming the lock; a damaged
// cache file fails the pass reading it with a InputDataError naming the file and byte offset.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "pipeprof/pipelines/dataset.h"

namespace pipeprof::pipelines::ops {

class CacheNode final : public DatasetNode {
 public:
  explicit CacheNode(Dataset input, std::string filename_ = {})
      : DatasetNode(std::move(input)),
        filename(std::move(filename_)),
        store_(std::make_shared<Store>()) {}
  std::string_view op() const override { return "cache"; }
  nlohmann::json params() const override { return {{"filename", filename}}; }
  std::unique_ptr<Iterator> make_iterator(const IteratorContext& ctx) const override;

  // The elements of a complete pass, or nullptr while no pass has completed.
  std::shared_ptr<const std::vector<Element>> complete() const;
  void commit(std::vector<Element> elements) const;

  const std::string filename;  // empty: in memory

 private:
  struct Store {
    std::mutex mu;
    std::shared_ptr<const std::vector<Element>> elements;
  };
  std::shared_ptr<Store> store_;
};

}  // namespace pipeprof::pipelines::ops
