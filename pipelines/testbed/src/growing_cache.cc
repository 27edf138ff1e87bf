#include "pipeprof/testbed/growing_cache.h"

// The growing sample cache's samplers: forked processes (mp::ProcessGroup) that fetch their share of
// the samples over HTTP and write TFRecord shards, each renamed into place when complete. A sampler
// that fails writes its reason to its socket and exits with status 70; the parent reads it when it
// finds the sampler gone.
#include <fmt/format.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>

#include "formats/example.h"
#include "formats/tfrecord.h"
#include "io/http.h"
#include "mp/process_group.h"

namespace pipeprof::testbed {
using namespace pipeprof::pipelines;
namespace fs = std::filesystem;

namespace {

bool is_shard(const std::string& name) {
  return name.starts_with("shard-") && name.ends_with(".tfrecord");
}

struct ShardFile {
  fs::path path;
  uint64_t bytes = 0;
  fs::file_time_type mtime;
};

std::vector<ShardFile> list_shards(const fs::path& dir) {
  std::vector<ShardFile> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!is_shard(e.path().filename().string())) continue;
    std::error_code e2;
    ShardFile f{.path = e.path(), .bytes = e.file_size(e2), .mtime = e.last_write_time(e2)};
    if (!e2) out.push_back(std::move(f));
  }
  return out;
}

// A sampler: its share of the samples, in order, into shards.
int sample(const GrowingCacheOptions& o, int index, int socket_fd) {
  try {
    std::unique_ptr<formats::TFRecordWriter> writer;
    fs::path temporary, final_name;
    int64_t in_shard = 0;
    int64_t shard = 0;
    auto finish_shard = [&] {
      writer->close();
      writer.reset();
      if (::rename(temporary.c_str(), final_name.c_str()) != 0) {
        throw io::IoError(fmt::format("{}: cannot rename to {}: {}", temporary.string(),
                                      final_name.string(), std::strerror(errno)));
      }
      in_shard = 0;
      ++shard;
    };
    const auto samplers = static_cast<size_t>(std::max(1, o.samplers));
    for (size_t k = static_cast<size_t>(index); k < o.urls.size(); k += samplers) {
      // One request per sample, as the growing cache's ideals count them.
      io::HttpAccess one_request;
      one_request.options.parts_in_flight = 1;
      const std::vector<std::byte> bytes = io::fetch_http(o.urls[k], one_request);
      if (!writer) {
        temporary = o.dir / fmt::format(".tmp-shard-{}-{:06}.tfrecord", index, shard);
        final_name = o.dir / fmt::format("shard-{}-{:06}.tfrecord", index, shard);
        writer = std::make_unique<formats::TFRecordWriter>(temporary.string());
      }
      formats::FeatureValue label;
      label.kind = formats::FeatureKind::kInt64;
      label.int64s = {static_cast<int64_t>(k)};
      const formats::ExampleFrame frame =
          formats::encode_example_around("image", bytes.size(), {{"label", label}});
      writer->begin_record(frame.head.size() + bytes.size() + frame.tail.size());
      writer->append(std::as_bytes(std::span(frame.head.data(), frame.head.size())));
      writer->append(bytes);
      writer->append(std::as_bytes(std::span(frame.tail.data(), frame.tail.size())));
      writer->end_record();
      if (++in_shard == o.shard_samples) finish_shard();
    }
    if (writer) finish_shard();
    return 0;
  } catch (const std::exception& e) {
    const std::string why = e.what();
    (void)!::write(socket_fd, why.data(), why.size());
    return 70;
  }
}

}  // namespace

struct GrowingSampleCache::Impl {
  GrowingCacheOptions options;
  std::optional<mp::ProcessGroup> group;
};

GrowingSampleCache::GrowingSampleCache(GrowingCacheOptions options) : impl_(std::make_unique<Impl>()) {
  if (options.shard_samples < 1) throw RemoteError("growing cache: shard_samples must be >= 1");
  if (options.samplers < 1) throw RemoteError("growing cache: samplers must be >= 1");
  std::error_code ec;
  fs::remove_all(options.dir, ec);
  fs::create_directories(options.dir, ec);
  if (ec) {
    throw RemoteError(fmt::format("growing cache: cannot create {}: {}", options.dir.string(),
                                  ec.message()));
  }
  impl_->options = std::move(options);
  const GrowingCacheOptions& o = impl_->options;
  try {
    impl_->group.emplace(o.samplers, [&o](int i, int fd) { return sample(o, i, fd); });
  } catch (const std::system_error& e) {
    throw RemoteError(fmt::format("growing cache: cannot start the samplers: {}", e.what()));
  }
}

GrowingSampleCache::~GrowingSampleCache() {
  if (impl_->group) impl_->group->terminate();
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(impl_->options.dir, ec)) {
    if (e.path().filename().string().starts_with(".tmp-")) fs::remove(e.path(), ec);
  }
}

std::string GrowingSampleCache::pattern() const {
  return (impl_->options.dir / "*.tfrecord").string();
}

GrowingSampleCache::Shards GrowingSampleCache::complete() const {
  Shards s;
  for (const ShardFile& f : list_shards(impl_->options.dir)) {
    ++s.shards;
    s.bytes += f.bytes;
  }
  return s;
}

GrowingSampleCache::Shards GrowingSampleCache::enforce_budget() {
  Shards removed;
  if (impl_->options.budget_bytes == 0) return removed;
  std::vector<ShardFile> shards = list_shards(impl_->options.dir);
  uint64_t total = 0;
  for (const ShardFile& f : shards) total += f.bytes;
  std::sort(shards.begin(), shards.end(), [](const ShardFile& a, const ShardFile& b) {
    return a.mtime != b.mtime ? a.mtime < b.mtime : a.path < b.path;
  });
  for (const ShardFile& f : shards) {
    if (total <= impl_->options.budget_bytes) break;
    std::error_code ec;
    if (fs::remove(f.path, ec)) {
      ++removed.shards;
      removed.bytes += f.bytes;
    }
    total -= f.bytes;
  }
  return removed;
}

bool GrowingSampleCache::samplers_done() {
  mp::ProcessGroup& g = *impl_->group;
  bool all = true;
  for (int i = 0; i < g.size(); ++i) {
    if (!g.reap(i, 0)) {
      all = false;
      continue;
    }
    const int status = g.wait_status(i);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
    char buffer[2048];
    const ssize_t n = g.socket(i) >= 0 ? ::recv(g.socket(i), buffer, sizeof buffer, MSG_DONTWAIT) : -1;
    throw RemoteError(fmt::format("growing cache: sampler {} (pid {}) {}{}", i, g.pid(i),
                                  mp::describe_exit(status),
                                  n > 0 ? ": " + std::string(buffer, static_cast<size_t>(n)) : ""));
  }
  return all;
}

bool GrowingSampleCache::wait_for_first_shard(const std::atomic<bool>* stop) {
  for (;;) {
    if (complete().shards > 0) return true;
    if (samplers_done()) return complete().shards > 0;
    if (stop != nullptr && stop->load()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace pipeprof::testbed
