// shared_store(producer, {producers, queue_capacity, store_mb, deterministic}): the zero-copy
// transport, like Ray's object store. `producers` processes (forked when the iterator is created)
// each run the producer pipeline; for every element a producer asks the consumer for space in the
// shared-memory object store (mp/object_store.h), writes the tensors there once (the one copy,
// counted in bytes_copied), seals the object and sends a small handle (object id and layout) over
// its socket. The consumer's tensors point into the mapping; the object is released, and its space
// reused, when the last of them goes away.
//
// Backpressure: space is granted only while fewer than queue_capacity objects are pending (being
// written or sealed, not yet taken) and the store has room: a full store makes producers wait,
// never fails, and never evicts a live object. An element larger than the whole store is an error
// naming its size and store_mb. A consumer-side service thread grants space and receives handles,
// so producers make progress while the consumer runs its step.
//
// With deterministic order every producer may have max(1, ceil(queue_capacity / producers))
// pending objects, and the store must hold that many objects of every producer; if the producer
// whose turn it is cannot get space while nothing the consumer holds can free any, next() reports
// that the store is too small instead of waiting forever.
//
// Errors name the producer, as for multiprocess. Destroying the iterator stops the service thread
// and ends and reaps every producer; objects already taken stay valid until released.
#pragma once

#include "pipeprof/pipelines/dataset.h"

namespace pipeprof::pipelines::ops {

class SharedStoreNode final : public DatasetNode {
 public:
  SharedStoreNode(DatasetFn producer_fn, SharedStoreOptions opts)
      : producer(std::move(producer_fn)), options(opts) {}
  std::string_view op() const override { return "shared_store"; }
  nlohmann::json params() const override;
  std::unique_ptr<Iterator> make_iterator(const IteratorContext& ctx) const override;

  DatasetFn producer;
  SharedStoreOptions options;
};

}  // namespace pipeprof::pipelines::ops
