// What the consumer side of the process-based stages watches: the producers' sockets (a message
// or the end of file) and pidfds (the process exited), in one poll.
#pragma once

#include <string>
#include <vector>

#include "mp/process_group.h"

namespace pipeprof::pipelines::mp {

struct PollResult {
  std::vector<int> readable;  // producers whose socket has data or hung up
  std::vector<int> exited;    // producers whose process exited and is not reaped yet
  bool extra_ready = false;   // `extra_fd` is readable
};

// Polls the sockets of the producers with want_socket[i] (starting at `first`, so that every
// producer gets its turn), the pidfds of every unreaped producer, and `extra_fd` (when >= 0), for
// up to `timeout_ms`.
PollResult poll_producers(const ProcessGroup& group, const std::vector<bool>& want_socket,
                          int first, int timeout_ms, int extra_fd = -1);

// Merges a producer's trace (Chrome JSON sent with kTrace) into the current recording, as its own
// process lane group. A malformed trace is dropped (tracing must not fail the pipeline).
void merge_producer_trace(const std::string& json, int index);

// Why producer i's socket ended without kEnd: reaps it (waiting up to 1 s) and describes its exit.
std::string describe_lost_producer(ProcessGroup& group, int i);

}  // namespace pipeprof::pipelines::mp
