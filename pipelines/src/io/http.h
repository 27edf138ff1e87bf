// HTTP object storage (libcurl): a file is an object behind an http:// or https:// URL, read with
// ranged GETs. Each thread keeps one connection per server alive between requests (a curl handle
// per thread), so several threads reading several files keep several requests in flight; a large
// read is split into parts that one thread keeps in flight together (a multi handle). Failures
// that may pass (no connection, a timeout, a reset or cut-short body, 5xx and 429) are retried a
// bounded number of times with exponential backoff; every error names the URL, the byte range and
// the HTTP status or curl's reason. Listing a "folder" reads the server's JSON index (nginx's
// `autoindex_format json`) or, where it has none, a manifest file in that folder.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/storage.h"
#include "pipeprof/pipelines/remote.h"

namespace pipeprof::pipelines::io {

struct HttpOptions {
  // Attempts per request (the first included) before a retryable failure is an error.
  int max_attempts = 5;
  // Backoff before retry k (k = 1, 2, ...): backoff_initial * 2^(k-1), at most backoff_max.
  std::chrono::milliseconds backoff_initial{100};
  std::chrono::milliseconds backoff_max{2000};
  // A connection that is not established within this time fails (and is retried).
  std::chrono::milliseconds connect_timeout{3000};
  // A transfer that moves no byte for this long fails (and is retried): a stalled server, never a
  // slow but moving one.
  std::chrono::milliseconds stall_timeout{10000};
  // The first request of an open file asks for this many bytes: it gives the object's size too
  // (Content-Range), so an object up to this size costs one request.
  size_t first_request_bytes = 1024 * 1024;
  // A read of at least two parts' worth (a whole object, a cache's fetch) is split into parts of
  // part_bytes, parts_in_flight of them requested at once by the reading thread (libcurl's multi
  // interface), as S3 clients do to go beyond one connection's rate. 1: one request per read.
  int parts_in_flight = 4;
  size_t part_bytes = size_t{8} << 20;
  // Set (Ctrl-C): the transfer in progress and any wait before a retry end at once, and the request
  // fails with "stopped". Not owned; null: never.
  const std::atomic<bool>* stop = nullptr;
};

// What HTTP reads did: counted by whoever reads (a pipeline's StorageContext, a disk cache).
struct HttpCounters {
  std::atomic<int64_t> requests{0};  // GETs sent, retries included
  std::atomic<int64_t> retries{0};   // requests that were a retry of a failed one
  std::atomic<int64_t> bytes{0};     // body bytes received
  std::atomic<int64_t> failures{0};  // requests that gave up (an IoError)
};

// Requests signed with AWS Signature Version 4 (libcurl's CURLOPT_AWS_SIGV4): S3 (io/s3.h).
struct HttpSigning {
  std::string provider;  // "aws:amz:<region>:s3"; empty: requests are not signed
  std::string user;      // the access key id
  std::string password;  // the secret access key
  std::string session_token;  // temporary credentials' token (x-amz-security-token), or empty
};

// How a read is made: its options, and the counters it adds to (none: not counted). An open file
// keeps `owner` alive (the StorageContext or cache that holds the counters).
struct HttpAccess {
  HttpOptions options;
  HttpCounters* counters = nullptr;
  std::shared_ptr<const void> owner;
  HttpSigning signing;
  // The name an open file reports and errors name ("": the URL), and what errors add after it
  // (an S3 object's endpoint and bucket).
  std::string name;
  std::string where;
  // The gist of an error response's body (an S3 <Error>'s code and message); null: not read.
  std::string (*describe_error)(std::string_view body) = nullptr;
  // Where and as whom s3:// names are read (io/s3.h turns them into signed HTTP requests).
  S3Options s3;
};

// A request other than a ranged GET: S3's listings, uploads and their multipart calls.
struct HttpRequest {
  std::string method = "GET";
  // Sent as the body when `send_body` (a PUT or POST; an empty span sends Content-Length: 0).
  std::span<const std::byte> body;
  bool send_body = false;
};

struct HttpReply {
  long status = 0;
  std::vector<std::byte> body;  // a 2xx response's body
  std::string etag;             // the ETag header, quotes kept
};

// Sends `request` to `url` with the access's signing, retried as its options say (a request is
// sent again whole). A 2xx status is returned; so is one `accept_status` accepts; any other throws
// IoError naming the access's name (or the URL), where, the status and the error body's gist.
HttpReply http_exchange(const std::string& url, const HttpRequest& request, const HttpAccess& access,
                        bool (*accept_status)(long) = nullptr);

// In a child process just forked: forgets this thread's connections without closing them (their
// descriptors are the parent's, or closed and reused in the child); the next request opens new
// ones.
void forget_http_connections_after_fork();

// True for http:// and https:// URLs.
bool is_http_url(const std::string& name);

// Opens an object: its first request (first_request_bytes from byte 0) gives its size. Throws
// IoError naming the URL (404, 403, a server that cannot be reached after the retries, ...).
// An s3:// name is read from its endpoint with the access's S3 settings (io/s3.h).
std::unique_ptr<RandomAccessFile> open_http(const std::string& url, const HttpAccess& access = {});

// Reads the whole object into memory (an open and one more request for the rest).
std::vector<std::byte> fetch_http(const std::string& url, const HttpAccess& access = {});

// The URLs of the objects matching `pattern`, an http(s) URL whose last part may hold wildcards
// (*, ?, [...]: fnmatch), sorted bytewise. The folder's listing is its JSON index (a GET of the
// folder's URL with a trailing slash) or, when the server gives none (403, 404, not JSON), the
// file "manifest.txt" in that folder: one name per line, relative to the folder ('#' starts a
// comment). Throws IoError naming both when neither exists, or when the folder part holds a
// wildcard.
std::vector<std::string> match_http(const std::string& pattern, const HttpAccess& access = {});

}  // namespace pipeprof::pipelines::io
