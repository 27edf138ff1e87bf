#include "mp/cpu_turns.h"

#include <sched.h>

#include <algorithm>
#include <thread>

#include "mp/shared_semaphores.h"

namespace pipeprof::pipelines::mp {
namespace {

SharedSemaphores* g_turns = nullptr;  // set once in a child, before its pipeline's threads start
thread_local int t_depth = 0;

}  // namespace

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0)  // more CPUs than a cpu_set_t holds
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return std::max(1, CPU_COUNT(&set));
}

void use_cpu_turns(SharedSemaphores* turns) {
  g_turns = turns;
}

CpuTurn::CpuTurn() {
  if (t_depth++ > 0 || g_turns == nullptr) return;
  held_ = g_turns;
  held_->acquire(0);
}

CpuTurn::~CpuTurn() {
  --t_depth;
  if (held_ != nullptr) held_->release(0);
}

}  // namespace pipeprof::pipelines::mp
