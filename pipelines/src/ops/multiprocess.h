// multiprocess(producer, {producers, queue_capacity, deterministic}): the copy-heavy transport.
// `producers` processes (fork() when the iterator is created, before it starts any thread) each
// run the producer pipeline and send every element over their own Unix socket: the binary layout
// of serialization.h, then the tensors' bytes, written straight from the tensors (one copy into
// the kernel) and read by the consumer's next() straight into the element's new tensors (one copy
// out of it): 2 x payload bytes copied per element, counted in the stage's bytes_copied.
// A producer sends a finished element only once it holds a slot of the queue (a process-shared
// semaphore, released when the consumer has read the element), and keeps producing while a
// sender thread writes: like Python's multiprocessing.Queue(queue_capacity).
//
// Errors name the producer: its pipeline's failure ("producer 2 (pid 123): <message>"), or its
// death ("producer 2 (pid 123) was killed by signal 9 (Killed)", noticed within ~50 ms through its
// pidfd). Destroying the iterator ends and reaps every producer (SIGTERM, then SIGKILL).
#pragma once

#include "pipeprof/pipelines/dataset.h"
#include "pipeprof/pipelines/registry.h"

namespace pipeprof::pipelines::ops {

// Bounds of the process sources' parameters: they catch typos before they exhaust processes or
// memory.
inline constexpr int64_t kMaxProducers = 1024;
inline constexpr int64_t kMaxQueueCapacity = int64_t{1} << 20;
inline constexpr int64_t kMaxStoreMb = int64_t{1} << 20;

// The fields multiprocess and shared_store share (registrations; `extra` goes before
// "deterministic"), and their simulation rule (process_source_sim.cc).
std::vector<FieldSpec> process_source_fields(std::optional<FieldSpec> extra);
sim::NodePtr simulate_process_source(const sim::SimStage& s);

class MultiprocessNode final : public DatasetNode {
 public:
  MultiprocessNode(DatasetFn producer_fn, MultiprocessOptions opts)
      : producer(std::move(producer_fn)), options(opts) {}
  std::string_view op() const override { return "multiprocess"; }
  nlohmann::json params() const override;
  std::unique_ptr<Iterator> make_iterator(const IteratorContext& ctx) const override;

  DatasetFn producer;
  MultiprocessOptions options;
};

}  // namespace pipeprof::pipelines::ops
