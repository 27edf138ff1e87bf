#include "io/http.h"

#include <curl/curl.h>
#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "io/http_request.h"
#include "io/s3.h"
#include "pipeprof/pipelines/waits.h"
#include "pipeprof/trace/json_depth.h"

namespace pipeprof::pipelines::io {
namespace {

using namespace request;  // NOLINT(google-build-using-namespace): this file's own helpers



// One curl handle per thread: it keeps its connections alive between requests (curl_easy_reset
// keeps them), so a thread reading file after file from one server reuses one connection.
struct Handle {
  CURL* curl = nullptr;
  ~Handle() {
    if (curl != nullptr) curl_easy_cleanup(curl);
  }
};
thread_local Handle t_handle;

CURL* thread_handle() {
  Handle& handle = t_handle;
  if (handle.curl == nullptr) {
    global_init();
    handle.curl = curl_easy_init();
    if (handle.curl == nullptr) throw IoError("libcurl could not create a handle (curl_easy_init)");
  }
  return handle.curl;
}


constexpr size_t kErrorBodyBytes = 8192;

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* sink = static_cast<Sink*>(user);
  const size_t n = size * count;
  note_progress();
  long status = 0;
  curl_easy_getinfo(sink->curl, CURLINFO_RESPONSE_CODE, &status);
  if (status < 200 || status >= 300) {
    if (sink->error_body.size() < kErrorBodyBytes)
      sink->error_body.append(data, std::min(n, kErrorBodyBytes - sink->error_body.size()));
    return n;
  }
  if (sink->grow != nullptr) {
    const auto* p = reinterpret_cast<const std::byte*>(data);
    sink->grow->insert(sink->grow->end(), p, p + n);
  } else {
    if (sink->received + n > sink->capacity) {
      sink->overflow = true;
      return 0;  // more than asked for: curl stops with CURLE_WRITE_ERROR
    }
    std::memcpy(sink->out + sink->received, data, n);
  }
  sink->received += n;
  add_count(&HttpCounters::bytes, sink->counters, static_cast<int64_t>(n));
  return n;
}

// libcurl's progress callback, whenever data moves and at least once a second: a non-zero
// return ends the transfer (CURLE_ABORTED_BY_CALLBACK).
int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* stop = static_cast<const std::atomic<bool>*>(user);
  return stop->load(std::memory_order_relaxed) ? 1 : 0;
}



std::string_view header_value(std::string_view line, std::string_view lower_name) {
  if (line.size() <= lower_name.size() ||
      !std::equal(lower_name.begin(), lower_name.end(), line.begin(),
                  [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); })) {
    return {};
  }
  std::string_view value = line.substr(lower_name.size());
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' '))
    value.remove_suffix(1);
  return value;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* headers = static_cast<Headers*>(user);
  const size_t n = size * count;
  const std::string_view line(data, n);
  if (line.starts_with("HTTP/")) *headers = {};
  if (const auto v = header_value(line, "content-range:"); !v.empty()) headers->content_range.assign(v);
  if (const auto v = header_value(line, "etag:"); !v.empty()) headers->etag.assign(v);
  if (const auto v = header_value(line, "content-length:"); !v.empty()) headers->content_length.assign(v);
  return n;
}


// libcurl rewinds the body to send it again (a kept-alive connection found closed).
int on_seek(void* user, curl_off_t offset, int origin) {
  auto* upload = static_cast<Upload*>(user);
  if (origin != SEEK_SET || offset < 0 || static_cast<uint64_t>(offset) > upload->body.size())
    return CURL_SEEKFUNC_CANTSEEK;
  upload->sent = static_cast<size_t>(offset);
  return CURL_SEEKFUNC_OK;
}

size_t on_read(char* out, size_t size, size_t count, void* user) {
  auto* upload = static_cast<Upload*>(user);
  const size_t n = std::min(size * count, upload->body.size() - upload->sent);
  std::memcpy(out, upload->body.data() + upload->sent, n);
  upload->sent += n;
  if (n > 0) note_progress();
  return n;
}

// "bytes 0-99/1000" or "bytes */1000": the total (nullopt when absent or "*").
std::optional<uint64_t> total_from_content_range(const std::string& value) {
  const auto slash = value.rfind('/');
  if (slash == std::string::npos || slash + 1 >= value.size()) return std::nullopt;
  uint64_t total = 0;
  for (size_t i = slash + 1; i < value.size(); ++i) {
    const char c = value[i];
    if (c < '0' || c > '9') return std::nullopt;
    total = total * 10 + static_cast<uint64_t>(c - '0');
  }
  return total;
}

bool retryable(CURLcode rc) {
  switch (rc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SEND_FAIL_REWIND:
      return true;
    default:
      return false;
  }
}

bool retryable_status(long status) {
  return status >= 500 || status == 429 || status == 408;
}

std::string status_text(long status) {
  switch (status) {
    case 400: return "400 Bad Request";
    case 401: return "401 Unauthorized";
    case 403: return "403 Forbidden";
    case 404: return "404 Not Found";
    case 408: return "408 Request Timeout";
    case 416: return "416 Range Not Satisfiable";
    case 429: return "429 Too Many Requests";
    case 500: return "500 Internal Server Error";
    case 502: return "502 Bad Gateway";
    case 503: return "503 Service Unavailable";
    case 504: return "504 Gateway Timeout";
    default: return std::to_string(status);
  }
}




// "HTTP 403 Forbidden" and, where the access reads error bodies, their gist.
std::string failure_text(const HttpAccess& access, long status, const std::string& body) {
  std::string text = fmt::format("HTTP {}", status_text(status));
  if (access.describe_error != nullptr && !body.empty()) {
    if (const std::string gist = access.describe_error(body); !gist.empty()) text += ": " + gist;
  }
  return text;
}






// One request (a GET of [begin, begin + length), or of the whole object when length is 0; or
// `request`'s method and body), retried as the options say. Statuses that are not retried come
// back to the caller when `accept_status` says so (a listing may be 404); other failures throw
// IoError naming the object, the range and why.
Response get(const HttpAccess& access, const std::string& url, uint64_t begin, size_t length,
             Sink& sink, bool (*accept_status)(long) = nullptr, const HttpRequest* request = nullptr) {
  const HttpOptions& options = access.options;
  HttpCounters* const counters = access.counters;
  CURL* curl = thread_handle();
  const auto started = std::chrono::steady_clock::now();
  std::string last_error;
  const int attempts = std::max(1, options.max_attempts);
  const std::string label = label_of(access, url);
  const std::string what = request != nullptr ? request->method : range_text(begin, length);
  auto stopped_error = [&] {
    return IoError(fmt::format("{}: {}: stopped (interrupted)", label, what));
  };
  auto waiting_for = [&] { return fmt::format("{} {}: {}", label == url ? "HTTP" : "HTTP of", label, what); };
  WaitScope waiting(waiting_for);
  for (int attempt = 1; attempt <= attempts; ++attempt) {
    if (attempt > 1) {
      add_count(&HttpCounters::retries, counters);
      const auto until = std::chrono::steady_clock::now() + backoff_before(options, attempt);
      while (!stopped(options) && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (stopped(options)) throw stopped_error();
    Attempt a;
    prepare(curl, a, access, url, begin, length, sink, request);
    add_count(&HttpCounters::requests, counters);
    const CURLcode rc = curl_easy_perform(curl);
    Outcome o = conclude(curl, rc, a, sink, access, begin, length, accept_status);
    switch (o.kind) {
      case Outcome::Kind::kResponse:
        return o.response;
      case Outcome::Kind::kStopped:
        throw stopped_error();
      case Outcome::Kind::kRetry:
        last_error = std::move(o.error);
        continue;
      case Outcome::Kind::kFail:
        add_count(&HttpCounters::failures, counters);
        throw IoError(fmt::format("{}: {}: {}", label, what, o.error));
    }
  }
  add_count(&HttpCounters::failures, counters);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  throw IoError(fmt::format("{}: {}: {} (gave up after {} attempts in {:.1f} s)", label, what,
                            last_error, attempts, seconds));
}


class HttpFile final : public RandomAccessFile {
 public:
  HttpFile(std::string url, HttpAccess access)
      : url_(std::move(url)),
        access_(std::move(access)),
        name_(access_.name.empty() ? url_ : access_.name),
        label_(label_of(access_, url_)) {
    const size_t first = std::max<size_t>(1, access_.options.first_request_bytes);
    std::unique_ptr<std::byte[]> buffer(new std::byte[first]);  // not zero-filled
    Sink sink{.out = buffer.get(), .capacity = first};
    // 416: the range starts at or past the end: an empty object ("bytes */0").
    const Response r = get(access_, url_, 0, first, sink, [](long status) { return status == 416; });
    if (r.status == 416) {
      // An empty object: said by the Content-Range ("bytes */0"), or where the server gives none
      // with its 416 (S3), by a HEAD's Content-Length.
      bool empty = r.total && *r.total == 0;
      if (!r.total) {
        Sink none;
        const HttpRequest head{.method = "HEAD"};
        const Response h = get(access_, url_, 0, 0, none, nullptr, &head);
        empty = h.content_length && *h.content_length == 0;
      }
      if (!empty) {
        throw IoError(fmt::format("{}: bytes 0-{}: HTTP 416 Range Not Satisfiable", label_, first - 1));
      }
      size_ = 0;
      return;
    }
    head_.assign(buffer.get(), buffer.get() + r.received);  // only what came
    if (r.status == 206 && r.total) {
      size_ = *r.total;
    } else if (r.status == 200 && r.received < first) {
      size_ = r.received;  // the server ignored the range and sent the whole (small) object
    } else {
      throw IoError(fmt::format("{}: the server does not give the object's size for a ranged "
                                "GET (HTTP {}, no Content-Range)",
                                label_, r.status));
    }
  }

  const std::string& name() const override { return name_; }
  uint64_t size() const override { return size_; }

  size_t read_at(uint64_t offset, std::span<std::byte> out) override {
    if (offset >= size_ || out.empty()) return 0;
    const size_t want = static_cast<size_t>(std::min<uint64_t>(out.size(), size_ - offset));
    size_t done = 0;
    if (offset < head_.size()) {  // the first request's bytes
      done = std::min<size_t>(want, head_.size() - static_cast<size_t>(offset));
      std::memcpy(out.data(), head_.data() + offset, done);
    }
    const HttpOptions& o = access_.options;
    if (done < want && o.parts_in_flight > 1 &&
        (want - done) / 2 >= std::max<size_t>(kLeastPartBytes, o.part_bytes)) {
      get_parts(access_, url_, offset + done, out.subspan(done, want - done), size_);
      return want;
    }
    if (done < want) {
      Sink sink{.out = out.data() + done, .capacity = want - done};
      // 416: the range is past the end of the object now.
      const Response r =
          get(access_, url_, offset + done, want - done, sink, [](long status) { return status == 416; });
      if ((r.status == 206 || r.status == 416) && r.total && *r.total != size_) {
        throw IoError(fmt::format("{}: {}: the object changed while it was read ({} bytes when "
                                  "opened, {} now)",
                                  label_, range_text(offset + done, want - done), size_, *r.total));
      }
      if (r.status != 206 || sink.received != want - done) {
        throw IoError(fmt::format("{}: {}: expected a 206 response of {} bytes, got HTTP {} with {}",
                                  label_, range_text(offset + done, want - done), want - done,
                                  r.status, sink.received));
      }
      done = want;
    }
    return done;
  }

 private:
  std::string url_;
  HttpAccess access_;
  std::string name_;
  std::string label_;
  std::vector<std::byte> head_;
  uint64_t size_ = 0;
};

bool has_wildcard(std::string_view s) {
  return s.find_first_of("*?[") != std::string_view::npos;
}

// Percent-encodes a name from a listing for use in a URL path.
std::string encode_name(std::string_view name) {
  std::string out;
  for (const char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0 || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      out += c;
    } else {
      out += fmt::format("%{:02X}", u);
    }
  }
  return out;
}

}  // namespace

// ---- What a request and a read in parts share (http_request.h) ----

namespace request {

// Adds to one of the reader's counters, where it keeps them.
void add_count(std::atomic<int64_t> HttpCounters::*which, HttpCounters* counters, int64_t n) {
  if (counters != nullptr) (counters->*which).fetch_add(n, std::memory_order_relaxed);
}

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
      throw IoError("libcurl could not be initialized (curl_global_init)");
    }
  });
}

bool stopped(const HttpOptions& options) {
  return options.stop != nullptr && options.stop->load(std::memory_order_relaxed);
}

std::string range_text(uint64_t begin, size_t length) {
  if (length == 0) return "the whole object";
  return fmt::format("bytes {}-{}", begin, begin + length - 1);
}

// What errors call a request: the access's name (or the URL), and where.
std::string label_of(const HttpAccess& access, const std::string& url) {
  const std::string& name = access.name.empty() ? url : access.name;
  return access.where.empty() ? name : fmt::format("{} ({})", name, access.where);
}

// Sets up `curl` (reset first: its live connections stay) for one attempt of a GET of
// [begin, begin + length), of the whole object when length is 0, or of `request`.
void prepare(CURL* curl, Attempt& a, const HttpAccess& access, const std::string& url,
             uint64_t begin, size_t length, Sink& sink, const HttpRequest* request) {
  const HttpOptions& options = access.options;
  curl_easy_reset(curl);
  sink.received = 0;
  sink.overflow = false;
  sink.curl = curl;
  sink.error_body.clear();
  sink.counters = access.counters;
  if (sink.grow != nullptr) sink.grow->clear();
  a.range = length == 0 ? std::string() : fmt::format("{}-{}", begin, begin + length - 1);
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, a.error_buffer);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &a.headers);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options.connect_timeout.count()));
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME,
                   std::max<long>(1, static_cast<long>(options.stall_timeout.count() / 1000)));
  curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, nullptr);  // bytes as stored, no compression
  if (!a.range.empty()) curl_easy_setopt(curl, CURLOPT_RANGE, a.range.c_str());
  // The request's headers: S3's signing.
  const auto add_header = [&](const std::string& h) {
    struct curl_slist* grown = curl_slist_append(a.header_list, h.c_str());
    if (grown == nullptr) throw std::bad_alloc();
    a.header_list = grown;
  };
  if (!access.signing.provider.empty()) {
    curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, access.signing.provider.c_str());
    curl_easy_setopt(curl, CURLOPT_PATH_AS_IS, 1L);  // a key's "." and ".." are its own
    curl_easy_setopt(curl, CURLOPT_USERNAME, access.signing.user.c_str());
    curl_easy_setopt(curl, CURLOPT_PASSWORD, access.signing.password.c_str());
    add_header("x-amz-content-sha256: UNSIGNED-PAYLOAD");
    if (!access.signing.session_token.empty())
      add_header("x-amz-security-token: " + access.signing.session_token);
  }
  if (request != nullptr) {
    if (request->send_body) {
      a.upload.body = request->body;
      curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(curl, CURLOPT_READFUNCTION, on_read);
      curl_easy_setopt(curl, CURLOPT_READDATA, &a.upload);
      curl_easy_setopt(curl, CURLOPT_SEEKFUNCTION, on_seek);
      curl_easy_setopt(curl, CURLOPT_SEEKDATA, &a.upload);
      curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(request->body.size()));
      // (No "Expect:" to save the 100-continue round trip: libcurl would sign it, empty, and
      // the server would see a request without it.)
    }
    if (request->method == "HEAD") {
      curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
    } else if (request->method != "GET" && !(request->method == "PUT" && request->send_body)) {
      curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request->method.c_str());
    }
  }
  if (a.header_list != nullptr) curl_easy_setopt(curl, CURLOPT_HTTPHEADER, a.header_list);
  if (options.stop != nullptr) {
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, options.stop);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  }
}

Outcome conclude(CURL* curl, CURLcode rc, Attempt& a, const Sink& sink, const HttpAccess& access,
                 uint64_t begin, size_t length, bool (*accept_status)(long)) {
  using Kind = Outcome::Kind;
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, nullptr);  // the buffer goes with this attempt
  if (sink.overflow) {
    return {.kind = Kind::kFail,
            .error = status == 200 ? std::string("the server ignored the Range header (HTTP 200 "
                                                 "with the whole object)")
                                   : fmt::format("the server sent more than the {} bytes asked for",
                                                 length)};
  }
  if (rc == CURLE_ABORTED_BY_CALLBACK) return {.kind = Kind::kStopped};
  if (rc != CURLE_OK) {
    const std::string why = a.error_buffer[0] != '\0' ? a.error_buffer : curl_easy_strerror(rc);
    std::string error = rc == CURLE_PARTIAL_FILE
                            ? fmt::format("the body ended early ({} bytes received): {}", sink.received, why)
                            : why;
    return {.kind = retryable(rc) ? Kind::kRetry : Kind::kFail, .error = std::move(error)};
  }
  Response response{.status = status, .total = total_from_content_range(a.headers.content_range),
                    .received = sink.received, .etag = a.headers.etag,
                    .content_length = total_from_content_range("/" + a.headers.content_length)};
  if (status >= 200 && status < 300) {
    // A ranged body shorter than the range asked for, where the object goes on, is cut short.
    if (length != 0 && status == 206 && response.total) {
      const uint64_t expected =
          std::min<uint64_t>(length, *response.total > begin ? *response.total - begin : 0);
      if (sink.received < expected) {
        return {.kind = Kind::kRetry,
                .error = fmt::format("the body ended early ({} of {} bytes)", sink.received, expected)};
      }
    }
    return {.kind = Kind::kResponse, .response = response};
  }
  if (accept_status != nullptr && accept_status(status)) return {.kind = Kind::kResponse, .response = response};
  return {.kind = retryable_status(status) ? Kind::kRetry : Kind::kFail,
          .error = failure_text(access, status, sink.error_body)};
}

// The wait before attempt `attempt` (2, 3, ...): backoff_initial doubled per retry, at most
// backoff_max.
std::chrono::milliseconds backoff_before(const HttpOptions& options, int attempt) {
  const auto wait = options.backoff_initial * (int64_t{1} << std::min(attempt - 2, 20));
  return std::min<std::chrono::milliseconds>(wait, options.backoff_max);
}

}  // namespace request

void forget_http_connections_after_fork() {
  // Left as they are: cleaning them up would close the parent's sockets.
  t_handle.curl = nullptr;
  request::forget_part_handles_after_fork();
}

bool is_http_url(const std::string& name) {
  return name.starts_with("http://") || name.starts_with("https://");
}

std::unique_ptr<RandomAccessFile> open_http(const std::string& url, const HttpAccess& access) {
  if (is_s3_url(url)) {
    auto [http_url, signed_access] = s3_request_for(url, access);
    return std::make_unique<HttpFile>(http_url, signed_access);
  }
  return std::make_unique<HttpFile>(url, access);
}

std::vector<std::byte> fetch_http(const std::string& name, const HttpAccess& name_access) {
  const auto [url, access] =
      is_s3_url(name) ? s3_request_for(name, name_access) : std::pair{name, name_access};
  HttpFile file(url, access);
  std::vector<std::byte> out(static_cast<size_t>(file.size()));
  if (!out.empty() && file.read_at(0, out) != out.size()) {
    throw IoError(fmt::format("{}: the object ended before its {} bytes", label_of(access, url),
                              out.size()));
  }
  return out;
}

HttpReply http_exchange(const std::string& url, const HttpRequest& request, const HttpAccess& access,
                        bool (*accept_status)(long)) {
  HttpReply reply;
  Sink sink{.grow = &reply.body};
  const Response r = get(access, url, 0, 0, sink, accept_status, &request);
  reply.status = r.status;
  reply.etag = r.etag;
  return reply;
}

std::vector<std::string> match_http(const std::string& pattern, const HttpAccess& access) {
  const auto scheme = pattern.find("://");
  const auto path_start = pattern.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  if (scheme == std::string::npos || path_start == std::string::npos) {
    throw IoError(fmt::format("{}: expected a URL with a path (http://host:port/folder/*.ext)",
                              pattern));
  }
  const auto last = pattern.rfind('/');
  const std::string folder = pattern.substr(0, last + 1);
  const std::string name_pattern = pattern.substr(last + 1);
  if (has_wildcard(std::string_view(folder).substr(path_start))) {
    throw IoError(fmt::format("{}: wildcards are allowed only in the last part of a URL", pattern));
  }
  if (!has_wildcard(name_pattern)) return {pattern};  // one object, as a local name without them

  std::vector<std::string> names;
  std::vector<std::byte> body;
  Sink sink{.grow = &body};
  auto client_error = [](long status) { return status >= 400 && status < 500; };
  const Response index = get(access, folder, 0, 0, sink, client_error);
  bool listed = false;
  if (index.status == 200) {
    const std::string_view text(reinterpret_cast<const char*>(body.data()), body.size());
    if (trace::json_too_deep_at(text) != std::string_view::npos) {
      throw IoError(fmt::format("{}: the JSON index is nested deeper than {} levels", folder,
                                trace::kMaxJsonDepth));
    }
    const auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (json.is_array()) {
      for (const auto& entry : json) {
        if (!entry.is_object() || !entry.contains("name") || !entry.at("name").is_string()) {
          throw IoError(fmt::format("{}: the JSON index has an entry without a name: {}", folder,
                                    entry.dump()));
        }
        if (entry.value("type", std::string("file")) != "file") continue;
        names.push_back(entry.at("name").get<std::string>());
      }
      listed = true;
    }
  }
  std::string index_result =
      listed ? std::string() : (index.status == 200 ? "not a JSON index" : "HTTP " + status_text(index.status));
  if (!listed) {
    const std::string manifest = folder + "manifest.txt";
    const Response m = get(access, manifest, 0, 0, sink, client_error);
    if (m.status != 200) {
      throw IoError(fmt::format("{}: cannot list {}: its index gave {}, and {} gave HTTP {}",
                                pattern, folder, index_result, manifest, status_text(m.status)));
    }
    std::istringstream lines(std::string(reinterpret_cast<const char*>(body.data()), body.size()));
    for (std::string line; std::getline(lines, line);) {
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
      if (line.empty() || line.front() == '#') continue;
      names.push_back(line);
    }
  }
  std::vector<std::string> out;
  for (const auto& name : names) {
    if (::fnmatch(name_pattern.c_str(), name.c_str(), FNM_PERIOD) == 0) {
      out.push_back(folder + encode_name(name));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace pipeprof::pipelines::io
