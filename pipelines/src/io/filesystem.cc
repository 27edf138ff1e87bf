#include "io/filesystem.h"

#include <fmt/format.h>

#include <map>
#include <mutex>

#include "io/http.h"
#include "io/remote_cache.h"
#include "io/s3.h"

namespace pipeprof::pipelines::io {
namespace {

class LocalFileSystem final : public FileSystem {
 public:
  std::unique_ptr<RandomAccessFile> open(const std::string& name,
                                         const OpenOptions& options) override {
    const std::string path = scheme_of(name) == "file" ? name.substr(7) : name;
    return open_local(path, options);
  }
  std::vector<std::string> match(const std::string& pattern, const StorageContext* /*storage*/) override {
    return match_local(scheme_of(pattern) == "file" ? pattern.substr(7) : pattern);
  }
  std::unique_ptr<WritableFile> create(const std::string& name, const WriteOptions& options) override {
    return create_local(scheme_of(name) == "file" ? name.substr(7) : name, options);
  }
};

// Objects read over HTTP (http(s):// and s3://): ranged reads, through the context's disk cache
// if it has one.
class RemoteFileSystem : public FileSystem {
 public:
  std::unique_ptr<RandomAccessFile> open(const std::string& name,
                                         const OpenOptions& options) override {
    if (options.direct) throw IoError(fmt::format("{}: O_DIRECT applies to local files only", name));
    return open_remote(name, options.storage);
  }
};

class HttpFileSystem final : public RemoteFileSystem {
 public:
  std::vector<std::string> match(const std::string& pattern, const StorageContext* storage) override {
    return match_http(pattern, access_of(storage));
  }
};

class S3FileSystem final : public RemoteFileSystem {
 public:
  std::vector<std::string> match(const std::string& pattern, const StorageContext* storage) override {
    return match_s3(pattern, access_of(storage));
  }
  std::unique_ptr<WritableFile> create(const std::string& name, const WriteOptions& options) override {
    return create_s3(name, access_of(options.storage.get()));
  }
};

struct Registry {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<FileSystem>> schemes;
  Registry() {
    auto local = std::make_shared<LocalFileSystem>();
    schemes[""] = local;
    schemes["file"] = local;
    auto http = std::make_shared<HttpFileSystem>();
    schemes["http"] = http;
    schemes["https"] = http;
    schemes["s3"] = std::make_shared<S3FileSystem>();
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

std::string scheme_of(const std::string& name) {
  const auto colon = name.find("://");
  if (colon == std::string::npos) return "";
  // A scheme is letters, digits, '+', '-' and '.' (RFC 3986); anything else makes it a path.
  for (size_t i = 0; i < colon; ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (i > 0 && ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.'));
    if (!ok) return "";
  }
  return name.substr(0, colon);
}

bool is_local(const std::string& name) {
  const std::string scheme = scheme_of(name);
  return scheme.empty() || scheme == "file";
}

void register_filesystem(const std::string& scheme, std::shared_ptr<FileSystem> fs) {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  r.schemes[scheme] = std::move(fs);
}

std::shared_ptr<FileSystem> filesystem_for(const std::string& name) {
  const std::string scheme = scheme_of(name);
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  if (const auto it = r.schemes.find(scheme); it != r.schemes.end()) return it->second;
  std::string known;
  for (const auto& [s, fs] : r.schemes) {
    if (s.empty()) continue;
    known += fmt::format("{}{}://", known.empty() ? "" : ", ", s);
  }
  throw IoError(fmt::format("{}: no storage backend for \"{}://\" URLs (local paths, {})", name,
                            scheme, known));
}

std::unique_ptr<WritableFile> FileSystem::create(const std::string& name, const WriteOptions&) {
  throw IoError(fmt::format("{}: {}:// objects cannot be written (writable storage: local paths, s3://)",
                            name, scheme_of(name)));
}

std::unique_ptr<RandomAccessFile> open_file(const std::string& name, const OpenOptions& options) {
  return filesystem_for(name)->open(name, options);
}

std::vector<std::string> match_files(const std::string& pattern, const StorageContext* storage) {
  return filesystem_for(pattern)->match(pattern, storage);
}

}  // namespace pipeprof::pipelines::io
