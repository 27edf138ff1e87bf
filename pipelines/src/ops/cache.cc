#include "ops/cache.h"

#include "formats/cache_file.h"
#include "formats/format_error.h"
#include "ops/stage_reader.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/registry.h"

namespace pipeprof::pipelines {
namespace ops {
namespace {

class CacheIterator final : public Iterator {
 public:
  CacheIterator(const IteratorContext& ctx, const CacheNode& node)
      : Iterator(ctx, &node), node_(node), cached_(node.complete()) {
    if (!cached_) input_ = node.inputs()[0].node().make_iterator(input_context());
  }

 protected:
  std::optional<Element> next_impl() override {
    if (cached_) {
      if (position_ >= cached_->size()) return std::nullopt;
      return (*cached_)[position_++];  // shares the tensors' buffers
    }
    if (done_) return std::nullopt;
    std::optional<Element> e;
    try {
      e = input_->next();
    } catch (...) {
      failed_ = true;  // this pass misses an element: it will not be stored
      throw;
    }
    if (!e) {
      done_ = true;
      // A pass that lost an element to an error, or an input cut short by cancellation (the tree
      // is being destroyed mid-pass), is not a complete pass.
      if (!failed_ && !cancellation().cancelled()) node_.commit(std::move(pending_));
      return std::nullopt;
    }
    pending_.push_back(*e);
    set_buffered(static_cast<int64_t>(pending_.size()));
    return e;
  }

 private:
  const CacheNode& node_;
  std::shared_ptr<const std::vector<Element>> cached_;
  std::unique_ptr<Iterator> input_;
  std::vector<Element> pending_;
  size_t position_ = 0;
  bool done_ = false;
  bool failed_ = false;
};

// The on-disk cache: reads a committed file, or writes one during a complete pass.
class FileCacheIterator final : public Iterator {
 public:
  FileCacheIterator(const IteratorContext& ctx, const CacheNode& node)
      : Iterator(ctx, &node), node_(node) {}

 protected:
  std::optional<Element> next_impl() override {
    if (done_) return std::nullopt;
    if (!started_) start();
    if (reader_) {
      try {
        auto e = reader_->next();
        if (!e) done_ = true;
        return e;
      } catch (const formats::FormatError& e) {
        throw InputDataError(stage_name(), e.what());
      }
    }
    std::optional<Element> e;
    try {
      e = input_->next();
    } catch (...) {
      failed_ = true;  // this pass misses an element: it will not be committed
      throw;
    }
    if (!e) {
      done_ = true;
      if (!failed_ && !cancellation().cancelled()) {
        try {
          writer_->commit();
        } catch (const formats::FormatError& ex) {
          writer_.reset();
          throw PipelineError(stage_name(), ex.what());
        }
      }
      writer_.reset();  // without a commit: removes the partial file
      return std::nullopt;
    }
    try {
      writer_->append(*e);
    } catch (const formats::FormatError& ex) {
      failed_ = true;
      throw PipelineError(stage_name(), ex.what());
    }
    return e;
  }

 private:
  void start() {
    started_ = true;
    try {
      if (formats::cache_file_exists(node_.filename)) {
        reader_ = std::make_unique<formats::CacheFileReader>(node_.filename);
        return;
      }
    } catch (const formats::FormatError& e) {
      done_ = true;
      throw InputDataError(stage_name(), e.what());
    }
    try {
      writer_ = std::make_unique<formats::CacheFileWriter>(node_.filename);
    } catch (const formats::FormatError& e) {
      done_ = true;
      throw PipelineError(stage_name(), e.what());
    }
    input_ = node_.inputs()[0].node().make_iterator(input_context());
  }

  const CacheNode& node_;
  std::unique_ptr<formats::CacheFileReader> reader_;
  std::unique_ptr<formats::CacheFileWriter> writer_;
  std::unique_ptr<Iterator> input_;
  bool started_ = false;
  bool done_ = false;
  bool failed_ = false;
};

}  // namespace

std::shared_ptr<const std::vector<Element>> CacheNode::complete() const {
  std::lock_guard<std::mutex> lock(store_->mu);
  return store_->elements;
}

void CacheNode::commit(std::vector<Element> elements) const {
  std::lock_guard<std::mutex> lock(store_->mu);
  if (!store_->elements)
    store_->elements = std::make_shared<const std::vector<Element>>(std::move(elements));
}

std::unique_ptr<Iterator> CacheNode::make_iterator(const IteratorContext& ctx) const {
  if (!filename.empty()) return std::make_unique<FileCacheIterator>(ctx, *this);
  return std::make_unique<CacheIterator>(ctx, *this);
}

namespace {

// The cache keeps its elements across epochs: after a complete pass, later passes replay them at
// no cost and never touch the input.
class SimCacheNode final : public sim::SimNode {
 public:
  explicit SimCacheNode(sim::NodePtr input) : input_(std::move(input)) {}
  std::unique_ptr<sim::SimIterator> iterate() override {
    if (complete_) return std::make_unique<sim::ListIterator>(*complete_, 0, 0);
    auto input = std::shared_ptr<sim::SimIterator>(input_->iterate());
    auto pending = std::make_shared<std::vector<sim::Elem>>();
    return std::make_unique<sim::LambdaIterator>([this, input, pending](sim::Time t) {
      sim::Pull p = input->next(t);
      if (p.elem) {
        pending->push_back(*p.elem);
      } else if (!complete_) {
        complete_ = *pending;
      }
      return p;
    });
  }

 private:
  sim::NodePtr input_;
  std::optional<std::vector<sim::Elem>> complete_;
};

}  // namespace

const OpRegistration& cache_registration() {
  static const OpRegistration kOp{
      .name = "cache",
      .kind = OpKind::kTransform,
      .summary = "keeps the elements of the first complete pass (in memory or in a file) and "
                 "replays them",
      .fields = {{.name = "filename", .type = FieldType::kString, .fallback = "",
                  .doc = "absent: in memory; else the cache file, kept across runs",
                  .spelled_out = false}},
      .build = [](const StageReader& s, const Dataset* input) {
        const std::string filename = s.string("filename");
        return filename.empty() ? input->cache() : input->cache(filename);
      },
      .simulate = [](const sim::SimStage& s) -> sim::NodePtr {
        return std::make_shared<SimCacheNode>(s.input());
      }};
  return kOp;
}

}  // namespace ops

Dataset Dataset::cache() const {
  return Dataset(std::make_shared<ops::CacheNode>(*this));
}

Dataset Dataset::cache(std::string filename) const {
  if (filename.empty()) throw std::invalid_argument("cache: an empty file name (use cache())");
  return Dataset(std::make_shared<ops::CacheNode>(*this, std::move(filename)));
}

}  // namespace pipeprof::pipelines
