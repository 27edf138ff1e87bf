// The read-through disk cache of remote objects. An object lives in the cache folder as two files:
// <key> (its bytes, exactly) and <key>.meta ("pipeprof-remote-cache 1", its size and CRC-32C, its
// URL). Both are written under temporary names and renamed into place, the meta file first, so a
// reader that finds the object finds its meta; a reader checks size and CRC-32C on every open, and
// a mismatch (a damaged or half-replaced file) evicts the object and fetches it again. The least
// recently used objects go first when the budget is exceeded (a hit touches the object's mtime, so
// the order holds across processes and runs); the folder is read again (at most once a second)
// before evicting, so objects other processes added count too. A write that fails (ENOSPC, EDQUOT, EFBIG, EIO) evicts room and
// tries once more, then serves the object from memory without keeping it.
#include "io/remote_cache.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <future>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

#include "formats/crc32c.h"
#include "io/http.h"
#include "pipeprof/pipelines/remote.h"

namespace pipeprof::pipelines {

using Bytes = std::shared_ptr<const std::vector<std::byte>>;

namespace {

constexpr std::string_view kMagic = "pipeprof-remote-cache 1";

// A whole object in memory (a miss: the fetched bytes are served while they are written out).
class MemoryFile final : public io::RandomAccessFile {
 public:
  MemoryFile(std::string name, Bytes bytes) : name_(std::move(name)), bytes_(std::move(bytes)) {}
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return bytes_->size(); }
  size_t read_at(uint64_t offset, std::span<std::byte> out) override {
    if (offset >= bytes_->size()) return 0;
    const size_t n = std::min<size_t>(out.size(), bytes_->size() - static_cast<size_t>(offset));
    std::memcpy(out.data(), bytes_->data() + offset, n);
    return n;
  }

 private:
  std::string name_;
  Bytes bytes_;
};

// FNV-1a, 64 bits: stable across runs and builds (std::hash is not), so a cache folder's names
// hold from one run to the next.
uint64_t fnv1a(std::string_view s) {
  uint64_t h = 14695981039346656037ULL;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

// The object's file name: a hash of the URL, then (for people looking at the folder) the URL's
// last part, made safe.
std::string key_of(const std::string& url) {
  std::string tail = url.substr(url.rfind('/') + 1);
  if (tail.size() > 64) tail = tail.substr(tail.size() - 64);
  for (char& c : tail) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '.' && c != '-' && c != '_') c = '_';
  }
  return fmt::format("{:016x}-{}", fnv1a(url), tail);
}

bool is_object_name(const std::string& name) {
  return !name.empty() && name.front() != '.' && !name.ends_with(".meta");
}

struct Meta {
  uint64_t size = 0;
  uint32_t crc = 0;
  std::string url;
};

std::optional<Meta> read_meta(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string magic;
  Meta m;
  std::string crc_hex;
  if (!std::getline(in, magic) || magic != kMagic) return std::nullopt;
  if (!(in >> m.size >> crc_hex)) return std::nullopt;
  in.ignore(1);
  if (!std::getline(in, m.url)) return std::nullopt;
  try {
    m.crc = static_cast<uint32_t>(std::stoul(crc_hex, nullptr, 16));
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return m;
}

// Writes `bytes` to `path` (created or truncated); returns 0 or the errno.
int write_all(const std::filesystem::path& path, std::span<const std::byte> bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return err;
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) return errno;
  return 0;
}

std::atomic<uint64_t> g_temp_counter{0};

RemoteCounters snapshot(const io::HttpCounters& c) {
  return {.requests = c.requests.load(), .retries = c.retries.load(), .bytes = c.bytes.load(),
          .failures = c.failures.load()};
}

}  // namespace

struct RemoteCache::Impl {
  struct Entry {
    uint64_t size = 0;
    std::filesystem::file_time_type last_use;
  };
  struct InFlight {
    std::shared_future<Bytes> bytes;
  };

  RemoteCacheOptions options;
  mutable std::mutex mutex;
  std::unordered_map<std::string, Entry> index;  // key -> entry (this process's view)
  uint64_t used = 0;
  std::chrono::steady_clock::time_point last_rescan;  // of the folder (rescan_locked)
  std::unordered_map<std::string, std::shared_future<Bytes>> in_flight;

  std::atomic<int64_t> hits{0}, misses{0}, bytes_fetched{0}, bytes_from_cache{0}, evictions{0},
      damaged{0}, write_failures{0}, too_large{0}, preloaded{0}, preload_failures{0};
  io::HttpCounters http;  // the requests of this cache's preloads

  io::HttpAccess access() {
    return {.options = io::http_options_of(options.read), .counters = &http, .s3 = options.s3};
  }

  std::vector<std::thread> preloaders;
  std::atomic<bool> stop_preload{false};
  std::atomic<size_t> preload_next{0};
  std::atomic<uint64_t> preload_bytes{0};
  std::vector<std::string> preload_urls;

  // What an object is known by: its URL, or with key_by_path the URL's path.
  std::string identity(const std::string& url) const {
    if (!options.key_by_path) return url;
    const auto scheme = url.find("://");
    const auto path = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
    return path == std::string::npos ? url : url.substr(path);
  }

  std::filesystem::path object_path(const std::string& key) const { return options.dir / key; }
  std::filesystem::path meta_path(const std::string& key) const {
    return options.dir / (key + ".meta");
  }

  // Reads the folder's objects into the index (under mutex).
  void rescan_locked() {
    last_rescan = std::chrono::steady_clock::now();
    index.clear();
    used = 0;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(options.dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (!is_object_name(name)) continue;
      std::error_code e2;
      const auto size = entry.file_size(e2);
      if (e2) continue;
      const auto mtime = entry.last_write_time(e2);
      if (e2) continue;
      index[name] = Entry{.size = size, .last_use = mtime};
      used += size;
    }
  }

  void remove_locked(const std::string& key) {
    std::error_code ec;
    std::filesystem::remove(object_path(key), ec);
    std::filesystem::remove(meta_path(key), ec);
    if (auto it = index.find(key); it != index.end()) {
      used -= std::min(used, it->second.size);
      index.erase(it);
    }
  }

  // Evicts least recently used objects (never `keep`) until `bytes` more fit in `budget`. The
  // folder is read again when the last reading is a second old, so other processes' objects count
  // (seen within a second) without a listing per store, which would make a cold epoch quadratic
  // in the number of objects; between readings the index follows this process's own changes.
  void make_room_locked(uint64_t bytes, const std::string& keep, uint64_t budget) {
    if (std::chrono::steady_clock::now() - last_rescan >= std::chrono::seconds(1)) rescan_locked();
    if (used + bytes <= budget) return;
    std::vector<std::pair<std::filesystem::file_time_type, std::string>> order;
    for (const auto& [key, entry] : index) {
      if (key != keep) order.emplace_back(entry.last_use, key);
    }
    std::sort(order.begin(), order.end());
    for (const auto& [when, key] : order) {
      if (used + bytes <= budget) break;
      remove_locked(key);
      evictions.fetch_add(1, std::memory_order_relaxed);
    }
  }

  // A verified cached copy, or nullptr: missing (or evicted, or being replaced, meanwhile), or
  // damaged (removed and counted).
  std::unique_ptr<io::RandomAccessFile> open_cached(const std::string& key, const std::string& url) {
    const auto path = object_path(key);
    struct stat before {};
    if (::stat(path.c_str(), &before) != 0) return nullptr;
    std::unique_ptr<io::RandomAccessFile> file;
    try {
      file = io::open_file(path.string());
    } catch (const io::IoError&) {
      return nullptr;  // evicted by someone else meanwhile
    }
    const auto meta = read_meta(meta_path(key));
    if (!meta) return nullptr;  // evicted meanwhile (its meta goes with it): a miss, not damage
    bool good = meta->url == identity(url) && meta->size == file->size();
    if (good) {
      uint32_t crc = 0;
      if (auto mapping = file->map()) {
        crc = formats::crc32c(std::span<const std::byte>(mapping->data(), mapping->size()));
      } else {
        std::vector<std::byte> buffer(1 << 20);
        for (uint64_t offset = 0; offset < file->size();) {
          const size_t n = file->read_at(offset, buffer);
          if (n == 0) break;
          crc = formats::crc32c(std::span<const std::byte>(buffer.data(), n), crc);
          offset += n;
        }
      }
      good = crc == meta->crc;
    }
    const std::lock_guard lock(mutex);
    if (!good) {
      // Damaged, unless the object was replaced while it was checked (a writer renames the new
      // meta, then the new object): then the folder holds a good one, which stays.
      struct stat now {};
      if (::stat(path.c_str(), &now) != 0 || now.st_ino != before.st_ino ||
          now.st_mtim.tv_sec != before.st_mtim.tv_sec || now.st_mtim.tv_nsec != before.st_mtim.tv_nsec) {
        return nullptr;
      }
      damaged.fetch_add(1, std::memory_order_relaxed);
      remove_locked(key);
      return nullptr;
    }
    // Most recently used now (the order eviction goes by, in every process).
    const timespec times[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
    ::utimensat(AT_FDCWD, path.c_str(), times, 0);
    if (auto it = index.find(key); it != index.end()) used -= std::min(used, it->second.size);
    index[key] = Entry{.size = file->size(), .last_use = std::filesystem::file_time_type::clock::now()};
    used += file->size();
    hits.fetch_add(1, std::memory_order_relaxed);
    bytes_from_cache.fetch_add(static_cast<int64_t>(file->size()), std::memory_order_relaxed);
    return file;
  }

  // Keeps a fetched object; false when it could not be (counted).
  bool store(const std::string& key, const std::string& url, const std::vector<std::byte>& bytes) {
    if (bytes.size() > options.budget_bytes) {
      too_large.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    const uint32_t crc = formats::crc32c(std::span<const std::byte>(bytes));
    const std::string meta_text =
        fmt::format("{}\n{} {:08x}\n{}\n", kMagic, bytes.size(), crc, identity(url));
    const auto stem = fmt::format(".tmp-{}-{}-{}", key, ::getpid(), g_temp_counter.fetch_add(1));
    const auto tmp_object = options.dir / stem;
    const auto tmp_meta = options.dir / (stem + ".meta");
    const std::lock_guard lock(mutex);
    make_room_locked(bytes.size(), key, options.budget_bytes);
    for (int attempt = 0; attempt < 2; ++attempt) {
      int err = write_all(tmp_object, bytes);
      if (err == 0) {
        err = write_all(tmp_meta, std::as_bytes(std::span(meta_text.data(), meta_text.size())));
      }
      if (err == 0 && ::rename(tmp_meta.c_str(), meta_path(key).c_str()) != 0) err = errno;
      if (err == 0 && ::rename(tmp_object.c_str(), object_path(key).c_str()) != 0) err = errno;
      if (err == 0) {
        if (auto it = index.find(key); it != index.end()) used -= std::min(used, it->second.size);
        index[key] = Entry{.size = bytes.size(),
                           .last_use = std::filesystem::file_time_type::clock::now()};
        used += bytes.size();
        return true;
      }
      std::error_code ec;
      std::filesystem::remove(tmp_object, ec);
      std::filesystem::remove(tmp_meta, ec);
      const bool full = err == ENOSPC || err == EDQUOT || err == EFBIG;
      if (!full || attempt == 1) break;
      // The disk holds less than the budget says: make room for twice the object, then try again.
      make_room_locked(0, key, used > 2 * bytes.size() ? used - 2 * bytes.size() : 0);
    }
    write_failures.fetch_add(1, std::memory_order_relaxed);
    return false;
  }

  // The object's bytes from the server, once per process at a time: a second caller waits for the
  // first one's fetch. `preload`: counted as preloaded.
  // A fetch of the object: a reader's with its context's policy and counters, a preload's with the
  // cache's own.
  Bytes fetch(const std::string& key, const std::string& url, bool preload, const io::HttpAccess& how) {
    std::promise<Bytes> promise;
    std::shared_future<Bytes> future;
    {
      const std::lock_guard lock(mutex);
      if (auto it = in_flight.find(key); it != in_flight.end()) {
        future = it->second;
      } else {
        in_flight.emplace(key, promise.get_future().share());
      }
    }
    if (future.valid()) {
      // Another thread's fetch: a reader waits for it (and gets its error, if it fails); the
      // preloader moves on to the next object instead.
      if (preload) return nullptr;
      return future.get();
    }
    try {
      // Another fetch may have finished between the caller's look into the folder and this one's
      // start: then the object is there, and it is served from there.
      if (auto cached = preload ? nullptr : open_cached(key, url)) {
        auto bytes = std::make_shared<std::vector<std::byte>>(static_cast<size_t>(cached->size()));
        if (io::read_fully(*cached, 0, *bytes) == bytes->size()) {
          Bytes result = std::move(bytes);
          promise.set_value(result);
          const std::lock_guard lock(mutex);
          in_flight.erase(key);
          return result;
        }
      }
      if (!preload) misses.fetch_add(1, std::memory_order_relaxed);
      auto bytes = std::make_shared<const std::vector<std::byte>>(io::fetch_http(url, how));
      bytes_fetched.fetch_add(static_cast<int64_t>(bytes->size()), std::memory_order_relaxed);
      if (preload) {
        if (preload_bytes.fetch_add(bytes->size()) + bytes->size() > options.budget_bytes) {
          stop_preload = true;  // the budget is full of this run's objects: keep the rest remote
        } else if (store(key, url, *bytes)) {
          preloaded.fetch_add(1, std::memory_order_relaxed);
        }
      } else {
        store(key, url, *bytes);
      }
      promise.set_value(bytes);
      const std::lock_guard lock(mutex);
      in_flight.erase(key);
      return bytes;
    } catch (...) {
      promise.set_exception(std::current_exception());
      const std::lock_guard lock(mutex);
      in_flight.erase(key);
      throw;
    }
  }

  std::unique_ptr<io::RandomAccessFile> open(const std::string& url, const io::HttpAccess& how) {
    const std::string key = key_of(identity(url));
    {
      // An object being fetched (by a preloader or another reader): wait for it.
      std::shared_future<Bytes> pending;
      {
        const std::lock_guard lock(mutex);
        if (auto it = in_flight.find(key); it != in_flight.end()) pending = it->second;
      }
      if (pending.valid()) {
        try {
          Bytes bytes = pending.get();
          hits.fetch_add(1, std::memory_order_relaxed);
          bytes_from_cache.fetch_add(static_cast<int64_t>(bytes->size()), std::memory_order_relaxed);
          return std::make_unique<MemoryFile>(url, std::move(bytes));
        } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): fetched again below
        }
      }
    }
    if (auto cached = open_cached(key, url)) return cached;
    return std::make_unique<MemoryFile>(url, fetch(key, url, /*preload=*/false, how));
  }

  void preload_worker() {
    while (!stop_preload.load()) {
      const size_t i = preload_next.fetch_add(1);
      if (i >= preload_urls.size()) return;
      const std::string& url = preload_urls[i];
      const std::string key = key_of(identity(url));
      std::error_code ec;
      if (std::filesystem::exists(meta_path(key), ec) &&
          std::filesystem::exists(object_path(key), ec)) {
        const auto size = std::filesystem::file_size(object_path(key), ec);
        if (!ec && preload_bytes.fetch_add(size) + size > options.budget_bytes) {
          stop_preload = true;  // every preloader stops: the budget is full of this list's objects
          return;
        }
        continue;  // already cached (checked when opened)
      }
      try {
        fetch(key, url, /*preload=*/true, access());
      } catch (const std::exception&) {
        preload_failures.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }

  void join_preloaders() {
    for (auto& t : preloaders) {
      if (t.joinable()) t.join();
    }
    preloaders.clear();
  }
};

RemoteCache::RemoteCache(RemoteCacheOptions options) : impl_(std::make_unique<Impl>()) {
  if (options.budget_bytes == 0) throw RemoteError("remote cache: the byte budget must be > 0");
  if (options.dir.empty()) throw RemoteError("remote cache: no folder given");
  std::error_code ec;
  std::filesystem::create_directories(options.dir, ec);
  if (ec || !std::filesystem::is_directory(options.dir)) {
    throw RemoteError(fmt::format("remote cache: cannot create the folder {}: {}",
                                  options.dir.string(), ec ? ec.message() : "not a folder"));
  }
  if (::access(options.dir.c_str(), W_OK) != 0) {
    throw RemoteError(fmt::format("remote cache: the folder {} is not writable: {}",
                                  options.dir.string(), std::strerror(errno)));
  }
  impl_->options = std::move(options);
  const std::lock_guard lock(impl_->mutex);
  // Temporary files of a run that died midway are removed; objects are kept.
  for (const auto& entry : std::filesystem::directory_iterator(impl_->options.dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(".tmp-")) {
      // A writer takes far less than ten minutes: an older one died midway.
      std::error_code e2;
      const auto age = std::filesystem::file_time_type::clock::now() - entry.last_write_time(e2);
      if (!e2 && age > std::chrono::minutes(10)) std::filesystem::remove(entry.path(), e2);
    }
  }
  impl_->rescan_locked();
}

RemoteCache::~RemoteCache() {
  impl_->stop_preload = true;
  impl_->join_preloaders();
}

void RemoteCache::preload(std::vector<std::string> urls) {
  impl_->stop_preload = true;
  impl_->join_preloaders();
  impl_->stop_preload = false;
  impl_->preload_urls = std::move(urls);
  impl_->preload_next = 0;
  impl_->preload_bytes = 0;
  const int threads = std::max(1, impl_->options.preload_threads);
  for (int i = 0; i < threads; ++i) impl_->preloaders.emplace_back([this] { impl_->preload_worker(); });
}

void RemoteCache::wait_for_preload() {
  impl_->join_preloaders();
}

void RemoteCache::stop_preload() {
  impl_->stop_preload = true;
  impl_->join_preloaders();
}

void RemoteCache::clear() {
  const std::lock_guard lock(impl_->mutex);
  impl_->rescan_locked();
  std::vector<std::string> keys;
  for (const auto& [key, entry] : impl_->index) keys.push_back(key);
  for (const std::string& key : keys) impl_->remove_locked(key);
}

RemoteCacheCounters RemoteCache::counters() const {
  const Impl& i = *impl_;
  return {.hits = i.hits, .misses = i.misses, .bytes_fetched = i.bytes_fetched,
          .bytes_from_cache = i.bytes_from_cache, .evictions = i.evictions, .damaged = i.damaged,
          .write_failures = i.write_failures, .too_large = i.too_large, .preloaded = i.preloaded,
          .preload_failures = i.preload_failures};
}

uint64_t RemoteCache::bytes_cached() const {
  const std::lock_guard lock(impl_->mutex);
  return impl_->used;
}

const RemoteCacheOptions& RemoteCache::options() const {
  return impl_->options;
}

RemoteCounters RemoteCache::http_counters() const {
  return snapshot(impl_->http);
}

StorageContext::StorageContext(RemoteReadOptions read, std::shared_ptr<RemoteCache> cache, S3Options s3)
    : read_(read), cache_(std::move(cache)), s3_(std::move(s3)), counters_(std::make_unique<Counters>()) {
  if (cache_) counters_->cache_base = cache_->http_counters();
}

StorageContext::~StorageContext() = default;

RemoteCounters StorageContext::counters() const {
  RemoteCounters c = snapshot(counters_->http);
  if (cache_) {
    const RemoteCounters f = cache_->http_counters();
    const std::lock_guard lock(counters_->mutex);
    const RemoteCounters& base = counters_->cache_base;
    c.requests += f.requests - base.requests;
    c.retries += f.retries - base.retries;
    c.bytes += f.bytes - base.bytes;
    c.failures += f.failures - base.failures;
  }
  return c;
}

void StorageContext::reset_counters() {
  counters_->http.requests = 0;
  counters_->http.retries = 0;
  counters_->http.bytes = 0;
  counters_->http.failures = 0;
  if (cache_) {
    const std::lock_guard lock(counters_->mutex);
    counters_->cache_base = cache_->http_counters();
  }
}

uint64_t download(const std::string& url, const std::filesystem::path& to, const StorageContext* storage) {
  std::vector<std::byte> bytes;
  try {
    bytes = io::fetch_http(url, io::access_of(storage));
  } catch (const io::IoError& e) {
    throw RemoteError(e.what());
  }
  const auto tmp = to.string() + fmt::format(".tmp-{}-{}", ::getpid(), g_temp_counter.fetch_add(1));
  std::error_code ec;
  std::filesystem::create_directories(to.parent_path(), ec);
  if (const int err = write_all(tmp, bytes); err != 0 || ::rename(tmp.c_str(), to.c_str()) != 0) {
    const int why = err != 0 ? err : errno;
    std::filesystem::remove(tmp, ec);
    throw std::runtime_error(fmt::format("{}: cannot write the copy of {}: {}", to.string(), url,
                                         std::strerror(why)));
  }
  return bytes.size();
}

namespace io {

HttpOptions http_options_of(const RemoteReadOptions& read) {
  HttpOptions o;
  o.max_attempts = read.max_attempts;
  o.backoff_initial = read.backoff_initial;
  o.backoff_max = read.backoff_max;
  o.connect_timeout = read.connect_timeout;
  o.stall_timeout = read.stall_timeout;
  o.parts_in_flight = read.parts_in_flight;
  o.part_bytes = static_cast<size_t>(read.part_bytes);
  o.stop = read.stop;
  return o;
}

HttpAccess access_of(const StorageContext* storage) {
  if (storage == nullptr) return {};
  return {.options = http_options_of(storage->read_options()),
          .counters = &storage->live_counters().http,
          .s3 = storage->s3()};
}

std::unique_ptr<RandomAccessFile> open_remote(const std::string& url,
                                              const std::shared_ptr<const StorageContext>& storage) {
  HttpAccess access = access_of(storage.get());
  // A miss through the cache is fetched with the reader's policy and counted in its context.
  if (storage && storage->cache()) return storage->cache()->impl().open(url, access);
  access.owner = storage;  // the open file counts into it for as long as it reads
  return open_http(url, access);
}

}  // namespace io

}  // namespace pipeprof::pipelines
