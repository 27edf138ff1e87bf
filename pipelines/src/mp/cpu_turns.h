// CPU turns. When a group's producer processes outnumber the cores they may run on, their
// CPU-bound work would otherwise run all at once, each at a fraction of a core: eight producers
// that wake together on two cores each finish their first element after four elements' worth of
// work, and the consumer waits that long for its first. With turns, at most one producer per core
// does such work at a time and the others sleep until a turn is free, so the first elements come
// one element's work after their fetch and the rest follow in the same total time.
//
// A ProcessGroup makes the turns before it forks (a counting semaphore in shared memory, one unit
// per core) and each child takes them up (use_cpu_turns). CpuTurn marks the CPU-bound work: the
// built-in fills (random_tensors, fill_random), busy_ms and the copy into the object store; it
// never covers a wait for I/O or for another process. Outside a producer, or in a group no larger
// than the cores, a CpuTurn does nothing. A thread that holds a turn and enters another CpuTurn
// keeps the one it has. A producer killed while it holds a turn takes that turn with it; the
// pipeline fails on a dead producer within a second anyway, and the group ends the others.
#pragma once

namespace pipeprof::pipelines::mp {

class SharedSemaphores;

// The CPUs this process may run on (its affinity mask; at least 1).
int usable_cpus();

// In a child of a ProcessGroup: this process's CpuTurn guards take turns from `turns`, semaphore 0
// (nullptr: none).
void use_cpu_turns(SharedSemaphores* turns);

class CpuTurn {
 public:
  CpuTurn();
  ~CpuTurn();
  CpuTurn(const CpuTurn&) = delete;
  CpuTurn& operator=(const CpuTurn&) = delete;

 private:
  SharedSemaphores* held_ = nullptr;
};

}  // namespace pipeprof::pipelines::mp
