// Helpers shared by the process-based stages' tests: counting this process's descriptors and
// shared-memory mappings, checking that no child process is left, and small producer pipelines.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "pipeprof/pipelines/dataset.h"

namespace pipeprof::pipelines::testing {

inline int open_fds() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd"))
    ++n;
  return n;
}

// Lines of /proc/self/maps that map an object store's memfd.
inline int store_mappings() {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);)
    n += line.find("pipeprof-store") != std::string::npos ? 1 : 0;
  return n;
}

inline std::vector<std::string> dev_shm_entries() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec))
    out.push_back(e.path().filename().string());
  return out;
}

// True when this process has no child at all (running or zombie).
inline bool no_children() {
  int status = 0;
  return ::waitpid(-1, &status, WNOHANG) == -1 && errno == ECHILD;
}

// Producer i yields i * 100, i * 100 + 1, ..., i * 100 + count - 1.
inline DatasetFn counting_producer(int64_t count) {
  return DatasetFn([count](const Element& e) {
    const int64_t i = e.at(0).as_int64();
    return range(i * 100, i * 100 + count);
  });
}

// Producer i yields its process id, then sleeps in its pipeline (cancellable) for `ms` per element.
inline DatasetFn pid_producer(double ms) {
  return DatasetFn([ms](const Element&) {
    return generator(GeneratorFn([] {
             return std::function<std::optional<Element>()>(
                 [n = 0]() mutable -> std::optional<Element> {
                   if (n++ == 1000) return std::nullopt;
                   return scalar_element(::getpid());
                 });
           }))
        .map(Function([ms](Element e) {
          ::usleep(static_cast<useconds_t>(ms * 1000));
          return e;
        }));
  });
}

// Checks, at the end of a scope, that no process, descriptor or shared mapping is left.
class LeakCheck {
 public:
  LeakCheck() : fds_(open_fds()), shm_(dev_shm_entries()) {}
  void verify() const {
    EXPECT_TRUE(no_children()) << "a producer process is left";
    EXPECT_EQ(open_fds(), fds_) << "descriptors leaked";
    EXPECT_EQ(store_mappings(), 0) << "an object store is still mapped";
    EXPECT_EQ(dev_shm_entries(), shm_) << "/dev/shm changed";
  }

 private:
  int fds_;
  std::vector<std::string> shm_;
};

}  // namespace pipeprof::pipelines::testing
