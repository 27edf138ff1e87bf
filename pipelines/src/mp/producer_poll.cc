#include "mp/producer_poll.h"

#include <poll.h>

#include <cerrno>

#include "pipeprof/trace/chrome_json.h"
#include "pipeprof/trace/recorder.h"

namespace pipeprof::pipelines::mp {

PollResult poll_producers(const ProcessGroup& group, const std::vector<bool>& want_socket,
                          int first, int timeout_ms, int extra_fd) {
  const int n = group.size();
  std::vector<pollfd> fds;
  std::vector<std::pair<int, bool>> who;  // producer, is_socket
  fds.reserve(static_cast<size_t>(2 * n + 1));
  for (int k = 0; k < n; ++k) {
    const int i = (first + k) % n;
    if (want_socket[static_cast<size_t>(i)]) {
      fds.push_back({group.socket(i), POLLIN, 0});
      who.emplace_back(i, true);
    }
  }
  for (int i = 0; i < n; ++i) {
    if (!group.reaped(i) && group.pidfd(i) >= 0) {
      fds.push_back({group.pidfd(i), POLLIN, 0});
      who.emplace_back(i, false);
    }
  }
  if (extra_fd >= 0) fds.push_back({extra_fd, POLLIN, 0});
  PollResult result;
  const int r = ::poll(fds.data(), fds.size(), timeout_ms);
  if (r <= 0) return result;  // timeout, or EINTR: the caller polls again
  for (size_t k = 0; k < who.size(); ++k) {
    if (fds[k].revents == 0) continue;
    (who[k].second ? result.readable : result.exited).push_back(who[k].first);
  }
  if (extra_fd >= 0 && fds.back().revents != 0) result.extra_ready = true;
  return result;
}

void merge_producer_trace(const std::string& json, int index) {
  trace::Recorder& rec = trace::Recorder::global();
  if (!rec.enabled()) return;
  try {
    rec.merge_process_trace(trace::parse_chrome_json(json, "producer " + std::to_string(index)));
  } catch (const std::exception&) {
    // A producer's trace that cannot be read is left out.
  }
}

std::string describe_lost_producer(ProcessGroup& group, int i) {
  if (group.reap(i, 1000)) {
    return group.name(i) + " " + describe_exit(group.wait_status(i)) +
           " before the end of its pipeline";
  }
  return group.name(i) + " closed its socket before the end of its pipeline";
}

}  // namespace pipeprof::pipelines::mp
