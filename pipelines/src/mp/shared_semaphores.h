// Counting semaphores in an anonymous shared mapping, usable by the process that creates them and
// by every child it forks afterwards (POSIX semaphores with pshared = 1). The mapping goes away
// with the last process that maps it.
#pragma once

#include <semaphore.h>

#include <cstdint>

namespace pipeprof::pipelines::mp {

class SharedSemaphores {
 public:
  SharedSemaphores() = default;
  // `count` semaphores, each starting at `initial`. Throws std::system_error.
  SharedSemaphores(int count, unsigned initial);
  ~SharedSemaphores();
  SharedSemaphores(const SharedSemaphores&) = delete;
  SharedSemaphores& operator=(const SharedSemaphores&) = delete;

  // Waits for a unit of semaphore i (retries on signals).
  void acquire(int i);
  void release(int i);
  int value(int i) const;

 private:
  sem_t* sems_ = nullptr;
  int count_ = 0;
};

}  // namespace pipeprof::pipelines::mp
