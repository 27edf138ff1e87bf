// What the remote storage tests share (remote_test.cc: reads, listings, retries; remote_cache_test.cc:
// the disk cache and the growing cache): a real nginx per test (ObjectServer), objects of random
// bytes in a folder of the test's own, and a storage context with fast retries and its counters.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "formats/tfrecord.h"
#include "io/http.h"
#include "io/remote_cache.h"
#include "io/storage.h"
#include "pipeprof/pipelines/files.h"
#include "pipeprof/pipelines/formats.h"
#include "pipeprof/pipelines/remote.h"
#include "pipeprof/testbed/growing_cache.h"
#include "pipeprof/testbed/object_server.h"
#include "test_util.h"

namespace pipeprof::pipelines::remote_testing {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

using testbed::GrowingCacheOptions;
using testbed::GrowingSampleCache;
using testbed::ObjectServer;

#define REQUIRE_NGINX(latency)                                                   \
  do {                                                                           \
    std::string why_;                                                            \
    if (!ObjectServer::available(latency, &why_)) GTEST_SKIP() << why_;          \
  } while (0)

inline std::vector<std::byte> random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> out(n);
  for (auto& b : out) b = static_cast<std::byte>(rng() & 0xff);
  return out;
}

inline std::vector<std::byte> bytes_of_string(std::string_view s) {
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  return {p, p + s.size()};
}

inline void write_file(const fs::path& path, const std::vector<std::byte>& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline std::vector<std::byte> read_all(io::RandomAccessFile& file) {
  std::vector<std::byte> out(file.size());
  out.resize(io::read_fully(file, 0, out));
  return out;
}

// The tests read through a storage context of their own: fast retries for the fault tests, its
// counters, and (use_cache) a disk cache.
class RemoteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fast_.max_attempts = 3;
    fast_.backoff_initial = 20ms;
    fast_.backoff_max = 200ms;
    fast_.connect_timeout = 1000ms;
    fast_.stall_timeout = 2000ms;
    storage_ = std::make_shared<StorageContext>(fast_);
    root_ = fs::temp_directory_path() /
            ("pipeprof-remote-test-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "data");
    fs::create_directories(root_ / "tmp");
    // The servers' temporary folders go under the test's own folder, where they are checked.
    const char* tmpdir = std::getenv("TMPDIR");
    saved_tmpdir_ = tmpdir != nullptr ? std::optional<std::string>(tmpdir) : std::nullopt;
    ::setenv("TMPDIR", (root_ / "tmp").c_str(), 1);
  }
  void TearDown() override {
    storage_.reset();
    if (saved_tmpdir_) {
      ::setenv("TMPDIR", saved_tmpdir_->c_str(), 1);
    } else {
      ::unsetenv("TMPDIR");
    }
    fs::remove_all(root_);
  }
  // n objects of `bytes` each under data/<folder>/obj_<i>.bin; returns their contents.
  std::vector<std::vector<std::byte>> make_objects(const std::string& folder, int n, size_t bytes) {
    std::vector<std::vector<std::byte>> out;
    for (int i = 0; i < n; ++i) {
      out.push_back(random_bytes(bytes, static_cast<uint64_t>(i) + 1));
      write_file(root_ / "data" / folder / ("obj_" + std::to_string(i) + ".bin"), out.back());
    }
    return out;
  }
  std::string url_of(const ObjectServer& server, const std::string& folder, int i) const {
    return server.url() + folder + "/obj_" + std::to_string(i) + ".bin";
  }

  // Reads through `cache` from now on (counters from zero).
  void use_cache(std::shared_ptr<RemoteCache> cache) {
    storage_ = std::make_shared<StorageContext>(fast_, std::move(cache));
  }
  void use_read_options(const RemoteReadOptions& read) {
    storage_ = std::make_shared<StorageContext>(read, storage_->cache());
  }
  std::unique_ptr<io::RandomAccessFile> open_url(const std::string& url) const {
    return io::open_file(url, io::OpenOptions{.storage = storage_});
  }
  RemoteCounters counters() const { return storage_->counters(); }
  // Retries enough to outlast a server restarted after 300 ms (restart_after).
  RemoteReadOptions patient() const {
    RemoteReadOptions o = fast_;
    o.max_attempts = 8;
    o.backoff_initial = 50ms;
    o.backoff_max = 400ms;
    return o;
  }
  void reset_counters() { storage_->reset_counters(); }

  RemoteReadOptions fast_;
  std::shared_ptr<StorageContext> storage_;
  std::optional<std::string> saved_tmpdir_;
  fs::path root_;
};

// A thread that starts `server` again after `after` (a server that goes away and comes back);
// `error` gets what the start threw.
inline std::thread restart_after(ObjectServer& server, std::chrono::milliseconds after,
                                 std::string& error) {
  return std::thread([&server, after, &error] {
    std::this_thread::sleep_for(after);
    try {
      server.start();
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
}

inline bool process_alive(pid_t pid) {
  return ::kill(pid, 0) == 0;
}

class RemoteCacheTest : public RemoteTest {};

}  // namespace pipeprof::pipelines::remote_testing
