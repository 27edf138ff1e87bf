#include "mp/shared_semaphores.h"

#include <sys/mman.h>

#include <cerrno>
#include <system_error>

namespace pipeprof::pipelines::mp {

SharedSemaphores::SharedSemaphores(int count, unsigned initial) : count_(count) {
  void* p = ::mmap(nullptr, sizeof(sem_t) * static_cast<size_t>(count), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw std::system_error(errno, std::generic_category(), "mmap of shared semaphores");
  sems_ = static_cast<sem_t*>(p);
  for (int i = 0; i < count; ++i) {
    if (::sem_init(&sems_[i], 1, initial) != 0) {
      const int err = errno;
      ::munmap(sems_, sizeof(sem_t) * static_cast<size_t>(count_));
      sems_ = nullptr;
      throw std::system_error(err, std::generic_category(), "sem_init");
    }
  }
}

SharedSemaphores::~SharedSemaphores() {
  if (sems_ == nullptr) return;
  for (int i = 0; i < count_; ++i)
    ::sem_destroy(&sems_[i]);
  ::munmap(sems_, sizeof(sem_t) * static_cast<size_t>(count_));
}

void SharedSemaphores::acquire(int i) {
  while (::sem_wait(&sems_[i]) != 0 && errno == EINTR) {
  }
}

void SharedSemaphores::release(int i) {
  ::sem_post(&sems_[i]);
}

int SharedSemaphores::value(int i) const {
  int v = 0;
  ::sem_getvalue(&sems_[i], &v);
  return v;
}

}  // namespace pipeprof::pipelines::mp
