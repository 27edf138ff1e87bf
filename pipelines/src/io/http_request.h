// What one HTTP request and a read in parts share (http.cc: the request, retried; http_parts.cc:
// a large range in parts, several in flight from one thread): where a response goes, one attempt's
// state, setting an attempt up and reading what it came to. Internal to the storage layer.
#pragma once

#include <curl/curl.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "io/http.h"

namespace pipeprof::pipelines::io::request {

// Where a response's body goes: a fixed span (ranged reads into the caller's buffer) or a growing
// vector (whole objects, listings).
// The body of a response that is not 2xx (an error page) never reaches the caller's memory and is
// not counted; its start is kept for the error's message.
struct Sink {
  std::byte* out = nullptr;
  size_t capacity = 0;
  std::vector<std::byte>* grow = nullptr;
  size_t received = 0;
  bool overflow = false;
  CURL* curl = nullptr;
  HttpCounters* counters = nullptr;
  std::string error_body;  // the start of a response that is not 2xx (its error's gist)
};

// The headers we read: Content-Range (the object's size) and ETag (an uploaded part's). A new status
// line (a redirect or a 100 Continue before the real response) starts over.
struct Headers {
  std::string content_range;
  std::string etag;
  std::string content_length;
};

// A request's body, read by libcurl from memory (from the start again on every attempt).
struct Upload {
  std::span<const std::byte> body;
  size_t sent = 0;
};

struct Response {
  long status = 0;
  std::optional<uint64_t> total;  // from Content-Range
  size_t received = 0;
  std::string etag;
  std::optional<uint64_t> content_length;  // a HEAD's
};

// One attempt's state, alive while its transfer runs: what libcurl writes into (the error text, the
// headers) and what it sends from (the request's headers, an upload's body).
struct Attempt {
  Attempt() = default;
  Attempt(const Attempt&) = delete;
  Attempt& operator=(const Attempt&) = delete;
  ~Attempt() { curl_slist_free_all(header_list); }
  char error_buffer[CURL_ERROR_SIZE] = {};
  Headers headers;
  Upload upload;
  std::string range;
  struct curl_slist* header_list = nullptr;
};

// What an attempt came to: a response (2xx, or a status the caller accepts), a failure that may
// pass (retried), one that may not, or the stop.
struct Outcome {
  enum class Kind { kResponse, kRetry, kFail, kStopped } kind = Kind::kFail;
  Response response;
  std::string error;  // kRetry and kFail: why
};

// Adds to one of the reader's counters, where it keeps them.
void add_count(std::atomic<int64_t> HttpCounters::*which, HttpCounters* counters, int64_t n = 1);
// curl_global_init, once.
void global_init();
// The access's stop flag is set.
bool stopped(const HttpOptions& options);
// "bytes 0-99", or "the whole object" for length 0.
std::string range_text(uint64_t begin, size_t length);
// What errors call a request: the access's name (or the URL), and where.
std::string label_of(const HttpAccess& access, const std::string& url);
// Sets up `curl` (reset first: its live connections stay) for one attempt of a GET of
// [begin, begin + length), of the whole object when length is 0, or of `request`.
void prepare(CURL* curl, Attempt& a, const HttpAccess& access, const std::string& url,
             uint64_t begin, size_t length, Sink& sink, const HttpRequest* request);
// What an attempt that ended with `rc` came to.
Outcome conclude(CURL* curl, CURLcode rc, Attempt& a, const Sink& sink, const HttpAccess& access,
                 uint64_t begin, size_t length, bool (*accept_status)(long));
// The wait before attempt `attempt` (2, 3, ...): backoff_initial doubled per retry, at most
// backoff_max.
std::chrono::milliseconds backoff_before(const HttpOptions& options, int attempt);

// ---- Reads in parts (http_parts.cc) ----

// Parts are at least this large (a smaller part_bytes is taken as this).
inline constexpr size_t kLeastPartBytes = size_t{64} << 10;

// Reads [begin, begin + out.size()) of an object of `total` bytes in parts of options.part_bytes,
// with up to options.parts_in_flight requests at once on this thread (libcurl's multi interface).
// Each part is retried as a single request is; the first part that fails for good, the stop, or
// an object whose size changed ends the read with an IoError naming the part's range.
void get_parts(const HttpAccess& access, const std::string& url, uint64_t begin,
               std::span<std::byte> out, uint64_t total);

// In a child process just forked: forgets this thread's multi handle without closing its
// connections (forget_http_connections_after_fork).
void forget_part_handles_after_fork();

}  // namespace pipeprof::pipelines::io::request
