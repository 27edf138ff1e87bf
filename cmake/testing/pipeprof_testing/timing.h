// Tests whose outcome depends on the machine's timing (sleep precision, CPU shares, a tuner's
// reaction to measured load) run beside other tests on shared, sometimes sanitized, 2-core
// machines. A timing scenario may therefore be retried: `retry_timing(n, fn)` runs `fn` up to `n`
// times and passes as soon as one attempt records no failure; the failures of every attempt are
// reported only when all of them failed, so a check that is wrong fails every time and still fails
// the test. Use it only around checks of timing, never around checks of results.
#pragma once

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pipeprof::testing {

// True when built with a sanitizer: timings stretch several-fold there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

template <typename Fn>
void retry_timing(int attempts, Fn&& fn) {
  std::vector<std::string> earlier;
  for (int attempt = 1; attempt < attempts; ++attempt) {
    ::testing::TestPartResultArray results;
    {
      ::testing::ScopedFakeTestPartResultReporter intercept(
          ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
      fn();
    }
    bool failed = false;
    for (int i = 0; i < results.size(); ++i) {
      const auto& r = results.GetTestPartResult(i);
      if (r.failed()) {
        failed = true;
        earlier.push_back("attempt " + std::to_string(attempt) + ": " + r.message());
      }
    }
    if (!failed) return;
  }
  // The last attempt reports to the test as usual, with what the earlier ones saw.
  std::string trace = "earlier attempts also failed:";
  for (const auto& e : earlier)
    trace += "\n  " + e;
  SCOPED_TRACE(attempts > 1 ? trace : std::string("single attempt"));
  fn();
}

}  // namespace pipeprof::testing
