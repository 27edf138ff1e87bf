// The body of a producer process: builds the producer's pipeline (the nested pipeline with
// "$element" = the producer's index), passes each element to `emit`, and reports to the consumer
// over its socket: its trace (when the parent was tracing at the fork) and kEnd after the last
// element, or kError with the failure's message. Runs only in the child.
#pragma once

#include <functional>
#include <string>

#include "pipeprof/pipelines/dataset.h"

namespace pipeprof::pipelines::mp {

struct ProducerTask {
  int index = 0;
  int socket_fd = -1;
  bool trace = false;  // record a trace and send it before kEnd
  const DatasetFn* pipeline = nullptr;
  // The consumer's storage context: the producer reads with its policy and its cache's folder
  // (through a context of its own; what it counts stays in the producer's process).
  std::shared_ptr<const StorageContext> storage;
  // Hands one element to the transport; throws on failure.
  std::function<void(Element&&)> emit;
  // Called after the last element, before the trace and kEnd (e.g. to drain a sender thread).
  std::function<void()> finish;
};

// Returns the process's exit status: 0 after a normal end, 1 after a reported failure, 2 when the
// consumer is gone.
int run_producer(const ProducerTask& task);

}  // namespace pipeprof::pipelines::mp
