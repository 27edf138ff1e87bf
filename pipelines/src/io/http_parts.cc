// A large read in parts that one thread keeps in flight together (http_request.h).
#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "io/http_request.h"
#include "pipeprof/pipelines/waits.h"

namespace pipeprof::pipelines::io::request {
namespace {

// This thread's multi handle and the easy handles it drives: parts of one read in flight at once,
// their connections kept alive for the next read (the multi handle's connection cache).
struct MultiHandles {
  CURLM* multi = nullptr;
  std::vector<CURL*> easy;
  ~MultiHandles() {
    for (CURL* e : easy)
      curl_easy_cleanup(e);
    if (multi != nullptr) curl_multi_cleanup(multi);
  }
};
thread_local MultiHandles t_multi;

MultiHandles& thread_multi(size_t handles) {
  MultiHandles& m = t_multi;
  if (m.multi == nullptr) {
    global_init();
    m.multi = curl_multi_init();
    if (m.multi == nullptr) throw IoError("libcurl could not create a multi handle (curl_multi_init)");
    // A connection per part: HTTP/2 would carry every part over one (its rate is what parts go
    // beyond).
    curl_multi_setopt(m.multi, CURLMOPT_PIPELINING, static_cast<long>(CURLPIPE_NOTHING));
  }
  while (m.easy.size() < handles) {
    CURL* e = curl_easy_init();
    if (e == nullptr) throw IoError("libcurl could not create a handle (curl_easy_init)");
    m.easy.push_back(e);
  }
  return m;
}

}  // namespace

void get_parts(const HttpAccess& access, const std::string& url, uint64_t begin,
               std::span<std::byte> out, uint64_t total) {
  const HttpOptions& options = access.options;
  HttpCounters* const counters = access.counters;
  const std::string label = label_of(access, url);
  const size_t part_bytes = std::max<size_t>(kLeastPartBytes, options.part_bytes);
  const int attempts = std::max(1, options.max_attempts);
  struct Part {
    uint64_t begin = 0;
    size_t length = 0;
    Sink sink;
    std::unique_ptr<Attempt> attempt;  // the one in flight
    CURL* curl = nullptr;              // while in flight
    int attempts = 0;
    std::chrono::steady_clock::time_point not_before{};
    bool done = false;
  };
  std::vector<Part> parts;
  for (size_t at = 0; at < out.size(); at += part_bytes) {
    Part p;
    p.begin = begin + at;
    p.length = std::min(part_bytes, out.size() - at);
    p.sink.out = out.data() + at;
    p.sink.capacity = p.length;
    parts.push_back(std::move(p));
  }
  const auto in_flight = static_cast<size_t>(std::max(1, options.parts_in_flight));
  MultiHandles& m = thread_multi(in_flight);
  std::vector<CURL*> free_handles(m.easy.begin(), m.easy.begin() + static_cast<std::ptrdiff_t>(in_flight));
  // Whatever ends the read, no transfer of it stays in the multi handle.
  struct Detach {
    MultiHandles& m;
    std::vector<Part>& parts;
    ~Detach() {
      for (Part& p : parts) {
        if (p.curl == nullptr) continue;
        curl_multi_remove_handle(m.multi, p.curl);
        curl_easy_reset(p.curl);  // it pointed into the part (its buffers go with it)
      }
    }
  } detach{m, parts};
  auto waiting_for = [&] { return fmt::format("{} {}: {} in parts", label == url ? "HTTP" : "HTTP of", label, range_text(begin, out.size())); };
  WaitScope waiting(waiting_for);
  const auto fail = [&](const Part& p, const std::string& why) {
    add_count(&HttpCounters::failures, counters);
    return IoError(fmt::format("{}: {}: {}", label, range_text(p.begin, p.length), why));
  };
  const auto started = std::chrono::steady_clock::now();
  size_t left = parts.size();
  while (left > 0) {
    if (stopped(options))
      throw IoError(fmt::format("{}: {}: stopped (interrupted)", label, range_text(begin, out.size())));
    const auto now = std::chrono::steady_clock::now();
    for (Part& p : parts) {
      if (free_handles.empty()) break;
      if (p.done || p.curl != nullptr || p.not_before > now) continue;
      p.curl = free_handles.back();
      free_handles.pop_back();
      p.attempt = std::make_unique<Attempt>();
      prepare(p.curl, *p.attempt, access, url, p.begin, p.length, p.sink, nullptr);
      if (curl_multi_add_handle(m.multi, p.curl) != CURLM_OK) {
        curl_easy_reset(p.curl);
        free_handles.push_back(p.curl);
        p.curl = nullptr;
        throw fail(p, "libcurl could not start the request (curl_multi_add_handle)");
      }
      if (++p.attempts > 1) add_count(&HttpCounters::retries, counters);
      add_count(&HttpCounters::requests, counters);
    }
    int running = 0;
    if (curl_multi_perform(m.multi, &running) != CURLM_OK) {
      add_count(&HttpCounters::failures, counters);
      throw IoError(fmt::format("{}: {}: libcurl's multi interface failed", label, range_text(begin, out.size())));
    }
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(m.multi, &queued)) {
      if (msg->msg != CURLMSG_DONE) continue;
      const auto it = std::find_if(parts.begin(), parts.end(), [&](const Part& p) { return p.curl == msg->easy_handle; });
      if (it == parts.end()) continue;
      Part& p = *it;
      const CURLcode rc = msg->data.result;  // msg is gone once the handle is removed
      curl_multi_remove_handle(m.multi, p.curl);
      Outcome o = conclude(p.curl, rc, *p.attempt, p.sink, access, p.begin, p.length,
                           [](long status) { return status == 416; });
      free_handles.push_back(p.curl);
      p.curl = nullptr;
      p.attempt.reset();
      switch (o.kind) {
        case Outcome::Kind::kStopped:
          throw IoError(fmt::format("{}: {}: stopped (interrupted)", label, range_text(begin, out.size())));
        case Outcome::Kind::kFail:
          throw fail(p, o.error);
        case Outcome::Kind::kRetry:
          if (p.attempts >= attempts) {
            const double seconds =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
            throw fail(p, fmt::format("{} (gave up after {} attempts in {:.1f} s)", o.error,
                                      p.attempts, seconds));
          }
          p.not_before = std::chrono::steady_clock::now() + backoff_before(options, p.attempts + 1);
          continue;
        case Outcome::Kind::kResponse:
          break;
      }
      const Response& r = o.response;
      if ((r.status == 206 || r.status == 416) && r.total && *r.total != total) {
        throw fail(p, fmt::format("the object changed while it was read ({} bytes when opened, {} now)",
                                  total, *r.total));
      }
      if (r.status != 206 || p.sink.received != p.length) {
        throw fail(p, fmt::format("expected a 206 response of {} bytes, got HTTP {} with {}", p.length,
                                  r.status, p.sink.received));
      }
      p.done = true;
      --left;
    }
    if (left == 0) break;
    // A part that can start now starts at once; otherwise wait until a transfer moves, the next
    // retry is due, or 100 ms pass (the stop is looked at).
    const auto after = std::chrono::steady_clock::now();
    auto next_start = std::chrono::steady_clock::time_point::max();
    for (const Part& p : parts)
      if (!p.done && p.curl == nullptr) next_start = std::min(next_start, p.not_before);
    if (!free_handles.empty() && next_start <= after) continue;
    int timeout_ms = 100;
    if (!free_handles.empty() && next_start != std::chrono::steady_clock::time_point::max()) {
      const auto until = std::chrono::duration_cast<std::chrono::milliseconds>(next_start - after).count();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(until + 1, 1, 100));
    }
    curl_multi_poll(m.multi, nullptr, 0, timeout_ms, nullptr);
  }
}

void forget_part_handles_after_fork() {
  // Left as they are: cleaning them up would close the parent's sockets.
  t_multi.multi = nullptr;
  t_multi.easy.clear();
}

}  // namespace pipeprof::pipelines::io::request
