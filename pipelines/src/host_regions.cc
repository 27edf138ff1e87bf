#include "pipeprof/pipelines/host_regions.h"

#include <unistd.h>

#include <map>
#include <mutex>
#include <utility>

namespace pipeprof::pipelines {
namespace {

struct Registry {
  std::mutex mu;  // held while the observer runs, so it never runs twice at once
  HostRegionObserver observer;
  pid_t observer_pid = 0;  // a forked child inherits the observer but must not call it
  std::map<void*, size_t> live;
};

Registry& registry() {
  static Registry* r = new Registry();  // used from destructors that may run at exit
  return *r;
}

}  // namespace

void set_host_region_observer(HostRegionObserver observer) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  if (r.observer.unmapped && r.observer_pid == ::getpid()) {
    for (const auto& [base, bytes] : r.live)
      r.observer.unmapped(base, bytes);
  }
  r.observer = std::move(observer);
  r.observer_pid = ::getpid();
  if (r.observer.mapped) {
    for (const auto& [base, bytes] : r.live)
      r.observer.mapped(base, bytes);
  }
}

void host_region_mapped(void* base, size_t bytes) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.live[base] = bytes;
  if (r.observer.mapped && r.observer_pid == ::getpid()) r.observer.mapped(base, bytes);
}

void host_region_unmapped(void* base, size_t bytes) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  if (r.live.erase(base) == 0) return;
  if (r.observer.unmapped && r.observer_pid == ::getpid()) r.observer.unmapped(base, bytes);
}

}  // namespace pipeprof::pipelines
