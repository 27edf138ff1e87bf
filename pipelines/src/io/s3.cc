#include "io/s3.h"

#include "io/remote_cache.h"

#include <expat.h>
#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <cstdlib>
#include <functional>

namespace pipeprof::pipelines::io {
namespace {

std::string env_or(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

std::string first_of(const std::string& given, std::initializer_list<const char*> env,
                     const std::string& fallback = "") {
  if (!given.empty()) return given;
  for (const char* name : env) {
    if (std::string v = env_or(name); !v.empty()) return v;
  }
  return fallback;
}

// ---- XML (expat): every element's text, by its path from the root ("A/B/C") ----

class XmlReader {
 public:
  using Visit = std::function<void(const std::string& path, const std::string& text)>;

  // Throws IoError with `what` when the text is not well-formed XML or nests too deep.
  static void read(std::string_view text, const std::string& what, const Visit& visit) {
    XmlReader reader(visit);
    XML_Parser parser = XML_ParserCreate(nullptr);
    if (parser == nullptr) throw std::bad_alloc();
    struct Free {
      XML_Parser p;
      ~Free() { XML_ParserFree(p); }
    } free_parser{parser};
    XML_SetUserData(parser, &reader);
    XML_SetElementHandler(parser, &XmlReader::on_start, &XmlReader::on_end);
    XML_SetCharacterDataHandler(parser, &XmlReader::on_text);
    const bool ok = XML_Parse(parser, text.data(), static_cast<int>(text.size()), 1) == XML_STATUS_OK;
    if (reader.too_deep_) {
      throw IoError(fmt::format("{}: the XML response nests deeper than {} elements", what, kMaxDepth));
    }
    if (!ok) {
      throw IoError(fmt::format("{}: malformed XML response at line {}: {}", what,
                                XML_GetCurrentLineNumber(parser),
                                XML_ErrorString(XML_GetErrorCode(parser))));
    }
  }

 private:
  static constexpr size_t kMaxDepth = 32;
  explicit XmlReader(const Visit& visit) : visit_(visit) {}

  static void on_start(void* user, const XML_Char* name, const XML_Char**) {
    auto* r = static_cast<XmlReader*>(user);
    if (++r->depth_ > kMaxDepth) {
      r->too_deep_ = true;
      return;
    }
    r->marks_.push_back(r->path_.size());
    if (!r->path_.empty()) r->path_ += '/';
    r->path_ += name;
    r->text_.clear();
  }
  static void on_end(void* user, const XML_Char*) {
    auto* r = static_cast<XmlReader*>(user);
    if (r->depth_-- > kMaxDepth) return;
    if (!r->too_deep_) r->visit_(r->path_, r->text_);
    r->path_.resize(r->marks_.back());
    r->marks_.pop_back();
    r->text_.clear();
  }
  static void on_text(void* user, const XML_Char* s, int len) {
    auto* r = static_cast<XmlReader*>(user);
    if (r->text_.size() < 65536) r->text_.append(s, static_cast<size_t>(len));
  }

  const Visit& visit_;
  std::string path_;
  std::vector<size_t> marks_;
  std::string text_;
  size_t depth_ = 0;
  bool too_deep_ = false;
};

std::string body_text(const std::vector<std::byte>& body) {
  return {reinterpret_cast<const char*>(body.data()), body.size()};
}

bool is_address(std::string_view host) {
  if (host == "localhost" || host.starts_with('[')) return true;
  return !host.empty() && std::all_of(host.begin(), host.end(), [](char c) {
    return (c >= '0' && c <= '9') || c == '.';
  });
}

// A bucket name that can be a DNS label in a virtual-hosted URL.
bool dns_compatible(std::string_view bucket) {
  return !bucket.empty() && bucket.find('.') == std::string_view::npos &&
         std::all_of(bucket.begin(), bucket.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
         });
}

// What errors say of a request to `bucket`.
std::string where_of(const S3Settings& settings, const std::string& bucket) {
  return fmt::format("endpoint {}, bucket {}", settings.endpoint, bucket);
}

HttpAccess signed_access(const S3Settings& settings, const HttpAccess& access, const std::string& name,
                         const std::string& bucket) {
  HttpAccess a = access;
  if (!settings.access_key_id.empty() || !settings.secret_access_key.empty()) {
    a.signing = {.provider = fmt::format("aws:amz:{}:s3", settings.region),
                 .user = settings.access_key_id,
                 .password = settings.secret_access_key,
                 .session_token = settings.session_token};
  }
  a.name = name;
  a.where = where_of(settings, bucket);
  a.describe_error = &s3_error_gist;
  return a;
}

// One S3 call whose reply is XML: the reply's elements by path (throws IoError naming `what`).
void read_xml_reply(const HttpReply& reply, const std::string& what, const XmlReader::Visit& visit) {
  XmlReader::read(body_text(reply.body), what, visit);
}

class S3WritableFile final : public WritableFile {
 public:
  S3WritableFile(std::string name, const HttpAccess& access)
      : name_(std::move(name)), settings_(s3_settings_of(access.s3)) {
    const S3Name n = parse_s3_name(name_);
    if (n.key.empty() || n.key.back() == '/') {
      throw IoError(fmt::format("{}: an object needs a key after the bucket", name_));
    }
    bucket_ = n.bucket;
    key_ = n.key;
    access_ = signed_access(settings_, access, name_, bucket_);
    part_bytes_ = std::max<uint64_t>(settings_.part_bytes, uint64_t{5} << 20);
  }

  ~S3WritableFile() override {
    if (committed_ || upload_id_.empty()) return;
    // Nothing appears under the name; the parts are dropped. Sent even after Ctrl-C (which is
    // often why the upload was dropped), once, with a short stall limit.
    HttpAccess abort = access_;
    abort.options.stop = nullptr;
    abort.options.max_attempts = 1;
    abort.options.stall_timeout = std::min(abort.options.stall_timeout, std::chrono::milliseconds(2000));
    try {
      http_exchange(url("uploadId=" + s3_encode(upload_id_, false)), {.method = "DELETE"}, abort);
    } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor reports nothing
    }
  }

  const std::string& name() const override { return name_; }
  uint64_t size() const override { return size_; }

  void append(std::span<const std::byte> bytes) override {
    if (committed_) throw IoError(fmt::format("{}: appended to after commit", name_));
    while (!bytes.empty()) {
      const auto part = static_cast<size_t>(s3_part_bytes(part_bytes_, etags_.size() + 1));
      if (buffer_.capacity() < part) buffer_.reserve(part);
      const size_t room = part - buffer_.size();
      const size_t n = std::min(room, bytes.size());
      buffer_.insert(buffer_.end(), bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(n));
      bytes = bytes.subspan(n);
      size_ += n;
      if (buffer_.size() == part && !bytes.empty()) upload_part();
    }
  }

  void commit() override {
    if (committed_) return;
    if (upload_id_.empty()) {
      http_exchange(url(), {.method = "PUT", .body = buffer_, .send_body = true}, access_);
    } else {
      if (!buffer_.empty()) upload_part();
      std::string xml = "<CompleteMultipartUpload>";
      for (size_t i = 0; i < etags_.size(); ++i) {
        xml += fmt::format("<Part><PartNumber>{}</PartNumber><ETag>{}</ETag></Part>", i + 1,
                           etags_[i]);
      }
      xml += "</CompleteMultipartUpload>";
      const HttpReply reply = http_exchange(
          url("uploadId=" + s3_encode(upload_id_, false)),
          {.method = "POST", .body = std::as_bytes(std::span(xml.data(), xml.size())), .send_body = true},
          access_);
      // S3 may answer 200 and still fail, with an <Error> as the body.
      std::string code, message;
      read_xml_reply(reply, label(), [&](const std::string& path, const std::string& text) {
        if (path == "Error/Code") code = text;
        if (path == "Error/Message") message = text;
      });
      if (!code.empty()) {
        throw IoError(fmt::format("{}: completing the multipart upload failed: {}: {}", label(), code,
                                  message));
      }
    }
    committed_ = true;
    buffer_ = {};
  }

 private:
  std::string url(const std::string& query = "") const {
    return s3_http_url(settings_, bucket_, key_, query);
  }
  std::string label() const { return fmt::format("{} ({})", name_, access_.where); }

  void upload_part() {
    if (upload_id_.empty()) {
      const HttpReply reply =
          http_exchange(url("uploads="), {.method = "POST", .send_body = true}, access_);
      read_xml_reply(reply, label(), [&](const std::string& path, const std::string& text) {
        if (path == "InitiateMultipartUploadResult/UploadId") upload_id_ = text;
      });
      if (upload_id_.empty()) {
        throw IoError(fmt::format("{}: the server started no multipart upload (no UploadId)", label()));
      }
    }
    const size_t number = etags_.size() + 1;
    if (number > kS3MostParts) {
      throw IoError(fmt::format("{}: more than S3's {} parts ({} bytes so far)", label(), kS3MostParts, size_));
    }
    const HttpReply reply = http_exchange(
        url(fmt::format("partNumber={}&uploadId={}", number, s3_encode(upload_id_, false))),
        {.method = "PUT", .body = buffer_, .send_body = true}, access_);
    if (reply.etag.empty()) {
      throw IoError(fmt::format("{}: part {} was stored without an ETag", label(), number));
    }
    etags_.push_back(reply.etag);
    buffer_.clear();
  }

  std::string name_;
  S3Settings settings_;
  std::string bucket_;
  std::string key_;
  HttpAccess access_;
  uint64_t part_bytes_ = 0;
  std::vector<std::byte> buffer_;
  uint64_t size_ = 0;
  std::string upload_id_;
  std::vector<std::string> etags_;
  bool committed_ = false;
};

}  // namespace

uint64_t s3_part_bytes(uint64_t first_bytes, uint64_t number) {
  constexpr uint64_t kMost = uint64_t{5} << 30;  // S3's largest part
  const uint64_t doublings = number == 0 ? 0 : (number - 1) / kS3PartsPerSize;
  uint64_t bytes = std::min(first_bytes, kMost);
  for (uint64_t i = 0; i < doublings && bytes < kMost; ++i)
    bytes = std::min(bytes * 2, kMost);
  return bytes;
}

bool is_s3_url(const std::string& name) {
  return name.starts_with("s3://");
}

S3Name parse_s3_name(const std::string& name) {
  if (!is_s3_url(name)) throw IoError(fmt::format("{}: not an s3:// name", name));
  const std::string rest = name.substr(5);
  const auto slash = rest.find('/');
  S3Name out{.bucket = rest.substr(0, slash), .key = slash == std::string::npos ? "" : rest.substr(slash + 1)};
  if (out.bucket.empty()) throw IoError(fmt::format("{}: expected s3://<bucket>/<key>", name));
  return out;
}

S3Settings s3_settings_of(const S3Options& options) {
  S3Settings s;
  s.region = first_of(options.region, {"AWS_REGION", "AWS_DEFAULT_REGION"}, "us-east-1");
  s.endpoint = first_of(options.endpoint_url, {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"},
                        fmt::format("https://s3.{}.amazonaws.com", s.region));
  while (s.endpoint.ends_with('/')) s.endpoint.pop_back();
  if (s.endpoint.find("://") == std::string::npos) s.endpoint = "https://" + s.endpoint;
  s.access_key_id = first_of(options.access_key_id, {"AWS_ACCESS_KEY_ID"});
  s.secret_access_key = first_of(options.secret_access_key, {"AWS_SECRET_ACCESS_KEY"});
  s.session_token = first_of(options.session_token, {"AWS_SESSION_TOKEN"});
  s.force_path_style = options.force_path_style;
  s.part_bytes = options.part_bytes;
  return s;
}

std::string s3_encode(std::string_view text, bool keep_slash) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out += c;
    } else {
      out += fmt::format("%{:02X}", u);
    }
  }
  return out;
}

std::string s3_http_url(const S3Settings& settings, const std::string& bucket, const std::string& key,
                        const std::string& query) {
  const auto scheme_end = settings.endpoint.find("://") + 3;
  const auto path_start = settings.endpoint.find('/', scheme_end);
  const std::string host = settings.endpoint.substr(scheme_end, path_start - scheme_end);
  const std::string host_name = host.starts_with('[') ? host : host.substr(0, host.rfind(':'));
  // An address cannot take a bucket's name in front of it: path style whatever is asked.
  const bool path_style = is_address(host_name) ||
                          settings.force_path_style.value_or(!dns_compatible(bucket));
  std::string url;
  // The bucket itself: no '/' after it (the path is signed as it is sent).
  std::string object;
  if (!key.empty()) object = fmt::format("/{}", s3_encode(key, true));
  if (path_style) {
    url = fmt::format("{}/{}{}", settings.endpoint, s3_encode(bucket, false), object);
  } else {
    url = fmt::format("{}{}.{}{}{}", settings.endpoint.substr(0, scheme_end), bucket, host,
                      path_start == std::string::npos ? "" : settings.endpoint.substr(path_start),
                      key.empty() ? "/" : object);
  }
  if (!query.empty()) url += "?" + query;
  return url;
}

std::pair<std::string, HttpAccess> s3_request_for(const std::string& name, const HttpAccess& access) {
  const S3Name n = parse_s3_name(name);
  const S3Settings settings = s3_settings_of(access.s3);
  return {s3_http_url(settings, n.bucket, n.key), signed_access(settings, access, name, n.bucket)};
}

std::string s3_url_decode(std::string_view text) {
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '+') {
      out.push_back(' ');
    } else if (c == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2])));
      i += 2;
    } else {
      out.push_back(c);  // not an escape: kept as it came
    }
  }
  return out;
}

std::vector<S3Object> list_s3(const std::string& bucket, const std::string& prefix,
                              const HttpAccess& access, int max_keys) {
  const S3Settings settings = s3_settings_of(access.s3);
  const std::string name = fmt::format("s3://{}/{}", bucket, prefix);
  const HttpAccess a = signed_access(settings, access, name, bucket);
  std::vector<S3Object> out;
  std::string token;
  for (int page = 0;; ++page) {
    // The parameters in SigV4's order (sorted by name), encoded as it encodes them.
    std::string query;
    if (!token.empty()) query += "continuation-token=" + s3_encode(token, false) + "&";
    query += "delimiter=%2F&encoding-type=url&list-type=2";
    query += fmt::format("&max-keys={}", max_keys);
    query += "&prefix=" + s3_encode(prefix, false);
    const HttpReply reply = http_exchange(s3_http_url(settings, bucket, "", query), {}, a);
    bool truncated = false, encoded = false;
    std::string next;
    S3Object current;
    std::vector<S3Object> listed;
    read_xml_reply(reply, fmt::format("{} ({}): listing page {}", name, a.where, page + 1),
                   [&](const std::string& path, const std::string& text) {
                     if (path == "ListBucketResult/Contents/Key") current.key = text;
                     if (path == "ListBucketResult/Contents/Size")
                       current.size = std::strtoull(text.c_str(), nullptr, 10);
                     if (path == "ListBucketResult/Contents") listed.push_back(std::exchange(current, {}));
                     if (path == "ListBucketResult/IsTruncated") truncated = text == "true";
                     if (path == "ListBucketResult/NextContinuationToken") next = text;
                     if (path == "ListBucketResult/EncodingType") encoded = text == "url";
                   });
    for (S3Object& object : listed) {
      if (encoded) object.key = s3_url_decode(object.key);
      if (!object.key.empty() && object.key.back() == '/') continue;  // a folder marker
      out.push_back(std::move(object));
    }
    if (!truncated) break;
    if (next.empty() || next == token) {
      throw IoError(fmt::format("{} ({}): the listing is truncated but gives no new continuation token",
                                name, a.where));
    }
    token = next;
  }
  return out;
}

namespace {

// A pattern's bucket, folder ("a/b/", or "") and last part, which alone may hold wildcards.
struct S3Pattern {
  std::string bucket, folder, name;
  explicit S3Pattern(const std::string& pattern) {
    const S3Name n = parse_s3_name(pattern);
    const auto last = n.key.rfind('/');
    bucket = n.bucket;
    folder = last == std::string::npos ? "" : n.key.substr(0, last + 1);
    name = n.key.substr(folder.size());
    if (folder.find_first_of("*?[") != std::string::npos) {
      throw IoError(fmt::format("{}: wildcards are allowed only in the last part of a name", pattern));
    }
  }
  bool has_wildcards() const { return name.find_first_of("*?[") != std::string::npos; }

  // The objects of the folder that the last part matches (as a pattern when it has wildcards, else
  // as it is), sorted by name.
  std::vector<std::pair<std::string, uint64_t>> objects(const HttpAccess& access) const {
    std::vector<std::pair<std::string, uint64_t>> out;
    for (const S3Object& object : list_s3(bucket, folder, access)) {
      const std::string base = object.key.substr(folder.size());
      if (has_wildcards() ? ::fnmatch(name.c_str(), base.c_str(), FNM_PERIOD) == 0 : base == name) {
        out.emplace_back(fmt::format("s3://{}/{}", bucket, object.key), object.size);
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }
};

}  // namespace

std::vector<std::string> match_s3(const std::string& pattern, const HttpAccess& access) {
  const S3Pattern p(pattern);
  if (!p.has_wildcards()) return {pattern};
  std::vector<std::string> out;
  for (auto& [name, size] : p.objects(access))
    out.push_back(std::move(name));
  return out;
}

std::vector<std::pair<std::string, uint64_t>> match_s3_objects(const std::string& pattern,
                                                               const HttpAccess& access) {
  return S3Pattern(pattern).objects(access);
}

std::unique_ptr<WritableFile> create_s3(const std::string& name, const HttpAccess& access) {
  return std::make_unique<S3WritableFile>(name, access);
}

void create_s3_bucket(const std::string& name, const HttpAccess& access) {
  const S3Name n = parse_s3_name(name);
  const S3Settings settings = s3_settings_of(access.s3);
  const HttpAccess a = signed_access(settings, access, "s3://" + n.bucket, n.bucket);
  std::string body;
  if (settings.region != "us-east-1") {
    body = fmt::format(
        "<CreateBucketConfiguration><LocationConstraint>{}</LocationConstraint></CreateBucketConfiguration>",
        settings.region);
  }
  const HttpReply reply = http_exchange(
      s3_http_url(settings, n.bucket, ""),
      {.method = "PUT", .body = std::as_bytes(std::span(body.data(), body.size())), .send_body = true}, a,
      [](long status) { return status == 409; });
  if (reply.status == 409) {
    // BucketAlreadyOwnedByYou is fine; BucketAlreadyExists (another account's) is not. The body of
    // an accepted error status is not kept: ask for the bucket's listing to tell them apart.
    list_s3(n.bucket, "", a, 1);
  }
}

std::string s3_error_gist(std::string_view body) {
  std::string code, message;
  try {
    XmlReader::read(body, "error", [&](const std::string& path, const std::string& text) {
      if (path == "Error/Code") code = text;
      if (path == "Error/Message") message = text;
    });
  } catch (const IoError&) {
    return "";
  }
  if (code.empty()) return "";
  return message.empty() ? code : fmt::format("{}: {}", code, message);
}

}  // namespace pipeprof::pipelines::io

namespace pipeprof::pipelines {

void create_bucket(const std::string& name, const std::shared_ptr<const StorageContext>& storage) {
  io::create_s3_bucket(name, io::access_of(storage.get()));
}

std::vector<std::pair<std::string, uint64_t>> list_objects(const std::string& folder,
                                                           const StorageContext* storage) {
  if (!io::is_s3_url(folder)) {
    throw IoError(fmt::format("{}: objects are listed with their sizes in s3:// folders only", folder));
  }
  const io::S3Name n = io::parse_s3_name(folder);
  std::string prefix = n.key;
  if (!prefix.empty() && !prefix.ends_with('/')) prefix += '/';
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const io::S3Object& o : io::list_s3(n.bucket, prefix, io::access_of(storage)))
    out.emplace_back(fmt::format("s3://{}/{}", n.bucket, o.key), o.size);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace pipeprof::pipelines
