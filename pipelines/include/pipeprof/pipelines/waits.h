// What the threads of this process are waiting for, and whether anything moves: the run's
// watchdog (harness/training_loop.h) reads both to say whom a stalled run waits for.
//
//   auto what = [&] { return "reading " + path; };   // called only when the watchdog looks
//   WaitScope wait(what);                              // while the read blocks
//   ... pread(...) ...
//   note_progress();                                   // bytes arrived
//
// A WaitScope costs two uncontended locks of the thread's own slot and no allocation: the
// description is a callable the watchdog calls (under that slot's lock, so the scope and what its
// callable refers to stay alive meanwhile); it must only read what does not change while the
// scope lives. Scopes nest; the innermost is the most specific, and every open one is listed.
//
// Progress is counted per thread (no shared cache line on the hot path): a file read that
// returned bytes, a body chunk of an HTTP transfer, a message from a producer process, a step of
// the training loop. A stall is a time in which the sum does not change.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace pipeprof::pipelines {

struct WaitSlot;

struct OpenWait {
  std::string what;
  int64_t since_ns = 0;  // trace clock
  int64_t thread = 0;    // the kernel's thread id
};
// Every open WaitScope of the process's threads, the oldest first.
std::vector<OpenWait> open_waits();

class WaitScope {
 public:
  template <typename Describe>
    requires std::is_invocable_r_v<std::string, const Describe&>
  explicit WaitScope(const Describe& describe)
      : describe_(&describe), call_([](const void* f) -> std::string {
          return (*static_cast<const Describe*>(f))();
        }) {
    enter();
  }
  // The callable must outlive the scope: a temporary would not.
  template <typename Describe>
    requires(!std::is_lvalue_reference_v<Describe>)
  explicit WaitScope(Describe&&) = delete;
  ~WaitScope();
  WaitScope(const WaitScope&) = delete;
  WaitScope& operator=(const WaitScope&) = delete;

 private:
  friend std::vector<OpenWait> open_waits();
  void enter();

  const void* describe_;
  std::string (*call_)(const void*);
  int64_t since_ns_ = 0;
  WaitScope* outer_ = nullptr;
  WaitSlot* slot_ = nullptr;
};

// Something moved on this thread (bytes, an element, a step).
void note_progress();
// The sum of every thread's progress so far (threads that ended included).
uint64_t progress_count();

}  // namespace pipeprof::pipelines
