// Ctrl-C for long commands: the first SIGINT (or SIGTERM) sets a flag the runner checks between
// elements, so the command stops cleanly and writes what it measured; a second one exits at once.
// Guards nest (one thread): only the outermost installs and restores the handlers.
#pragma once

#include <atomic>

namespace pipeprof::harness {

class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  static const std::atomic<bool>& flag();
};

}  // namespace pipeprof::harness
