// Remote object storage against a real nginx started by each test (ObjectServer): ranged reads,
// listings, the file sources over http:// URLs, retries and their limits (404, 500, a killed and a
// restarted server, a body cut short), and the read-through disk cache (hits, LRU eviction, reuse
// across runs, damaged objects, a full disk, preloading, concurrent readers). Skips where nginx
// (or its echo module) is not installed.
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

namespace pipeprof::pipelines {
namespace {

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

std::vector<std::byte> random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> out(n);
  for (auto& b : out) b = static_cast<std::byte>(rng() & 0xff);
  return out;
}

std::vector<std::byte> bytes_of_string(std::string_view s) {
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  return {p, p + s.size()};
}

void write_file(const fs::path& path, const std::vector<std::byte>& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<std::byte> read_all(io::RandomAccessFile& file) {
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
  void reset_counters() { storage_->reset_counters(); }

  RemoteReadOptions fast_;
  std::shared_ptr<StorageContext> storage_;
  std::optional<std::string> saved_tmpdir_;
  fs::path root_;
};

bool process_alive(pid_t pid) {
  return ::kill(pid, 0) == 0;
}

TEST_F(RemoteTest, ServerServesRangesAndStopsCleanly) {
  REQUIRE_NGINX(false);
  const auto objects = make_objects("a", 1, 3'000'000);
  pid_t pid = -1;
  {
    ObjectServer server({.root = root_ / "data"});
    pid = server.pid();
    ASSERT_GT(pid, 0);
    EXPECT_EQ(server.url(), "http://127.0.0.1:" + std::to_string(server.port()) + "/");
    reset_counters();
    auto file = open_url(url_of(server, "a", 0));
    EXPECT_EQ(file->size(), objects[0].size());
    EXPECT_EQ(read_all(*file), objects[0]);
    // A range in the middle, one past the end, and nothing after the end.
    std::vector<std::byte> part(1000);
    ASSERT_EQ(file->read_at(1'234'567, part), part.size());
    EXPECT_TRUE(std::equal(part.begin(), part.end(), objects[0].begin() + 1'234'567));
    EXPECT_EQ(file->read_at(objects[0].size() - 10, part), 10u);
    EXPECT_EQ(file->read_at(objects[0].size(), part), 0u);
    const auto c = counters();
    EXPECT_EQ(c.retries, 0);
    EXPECT_EQ(c.failures, 0);
    EXPECT_EQ(c.requests, 4);  // open (the first MiB), the rest, the middle, the tail
  }
  // Stopped: no nginx process left (the master and its workers are one process group).
  for (int i = 0; i < 100 && ::kill(-pid, 0) == 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_NE(::kill(-pid, 0), 0) << "nginx processes are left after the server was destroyed";
  // Its temporary folder (config, logs, pid file) is gone.
  for (const auto& entry : fs::directory_iterator(root_ / "tmp")) {
    EXPECT_FALSE(entry.path().filename().string().starts_with("pipeprof-nginx-")) << entry.path();
  }
}

TEST_F(RemoteTest, BadServerSettingsAreClearErrors) {
  REQUIRE_NGINX(false);
  try {
    ObjectServer server({.root = root_ / "missing"});
    FAIL() << "a missing root was accepted";
  } catch (const RemoteError& e) {
    EXPECT_NE(std::string(e.what()).find("missing is not a folder"), std::string::npos) << e.what();
  }
  try {
    ObjectServer server({.root = root_ / "data", .nginx = "/nonexistent/nginx"});
    FAIL() << "a missing nginx was accepted";
  } catch (const RemoteError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/nginx"), std::string::npos) << e.what();
  }
}

TEST_F(RemoteTest, EmptyAndSmallObjects) {
  REQUIRE_NGINX(false);
  write_file(root_ / "data" / "empty.bin", {});
  write_file(root_ / "data" / "small.bin", random_bytes(10, 3));
  ObjectServer server({.root = root_ / "data"});
  auto empty = open_url(server.url() + "empty.bin");
  EXPECT_EQ(empty->size(), 0u);
  std::vector<std::byte> buffer(16);
  EXPECT_EQ(empty->read_at(0, buffer), 0u);
  auto small = open_url(server.url() + "small.bin");
  EXPECT_EQ(small->size(), 10u);
  EXPECT_EQ(read_all(*small), random_bytes(10, 3));
}

TEST_F(RemoteTest, ListsThroughTheJsonIndexOrAManifest) {
  REQUIRE_NGINX(false);
  make_objects("train", 5, 100);
  write_file(root_ / "data" / "train" / "other.txt", random_bytes(5, 9));
  fs::create_directories(root_ / "data" / "train" / "sub.bin");  // a folder: not listed
  ObjectServer server({.root = root_ / "data"});
  const auto urls = io::match_files(server.url() + "train/obj_*.bin");
  ASSERT_EQ(urls.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(urls[static_cast<size_t>(i)], url_of(server, "train", i));
  EXPECT_EQ(io::match_files(server.url() + "train/*.bin").size(), 5u);
  EXPECT_TRUE(io::match_files(server.url() + "train/*.none").empty());

  // No index (403): the folder's manifest.txt.
  make_objects("hidden", 3, 10);
  write_file(root_ / "data" / "hidden" / "manifest.txt",
             bytes_of_string("# the objects\nobj_2.bin\nobj_0.bin\n\nobj_1.bin\n"));
  ObjectServer locked({.root = root_ / "data", .fixed_status = {{"=/hidden/", 403}}});
  const auto listed = io::match_files(locked.url() + "hidden/*.bin");
  ASSERT_EQ(listed.size(), 3u);
  EXPECT_EQ(listed[0], url_of(locked, "hidden", 0));
  // Neither: an error naming both.
  fs::remove(root_ / "data" / "hidden" / "manifest.txt");
  try {
    io::match_files(locked.url() + "hidden/*.bin");
    FAIL() << "listing without index or manifest succeeded";
  } catch (const io::IoError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("403"), std::string::npos) << what;
    EXPECT_NE(what.find("manifest.txt"), std::string::npos) << what;
    EXPECT_NE(what.find("404"), std::string::npos) << what;
  }
  EXPECT_THROW(io::match_files(locked.url() + "hid*/obj_0.bin"), io::IoError);
}

TEST_F(RemoteTest, FileSourcesReadUrls) {
  REQUIRE_NGINX(true);
  // TFRecord files, read through list_files + tfrecord over http with a 2 ms time to first byte.
  int64_t records = 0;
  for (int f = 0; f < 3; ++f) {
    fs::create_directories(root_ / "data" / "tf");
    formats::TFRecordWriter w((root_ / "data" / "tf" / ("part-" + std::to_string(f) + ".tfrecord")).string());
    for (int r = 0; r < 50; ++r, ++records) w.write(std::string(1000 + static_cast<size_t>(r), 'a' + static_cast<char>(f)));
    w.close();
  }
  formats::write_npz((root_ / "data" / "x.npz").string(),
                     {{"x", formats::random_tensor(DType::kFloat32, {4, 5}, 7)}}, false);
  ObjectServer server({.root = root_ / "data", .latency = 2ms});
  auto ds = list_files(server.url() + "tf/*.tfrecord", {.shuffle = false})
                .interleave(DatasetFn([](const Element& f) { return tfrecord({file_name(f)}); }),
                            {.cycle_length = 3, .parallelism = 3});
  auto it = ds.iterate({.storage = storage_});
  int64_t n = 0;
  while (auto e = it->next()) ++n;
  EXPECT_EQ(n, records);
  const auto arrays = formats::read_npz(server.url() + "x.npz");
  ASSERT_EQ(arrays.size(), 1u);
  EXPECT_EQ(arrays[0].first, "x");
  EXPECT_EQ(arrays[0].second.num_elements(), 20);
}

// Two pipelines in one process, each with its own storage context: each counts its own reads, and
// only the one with a cache reads through it. Nothing is process-wide.
TEST_F(RemoteTest, EachPipelineReadsWithItsOwnContext) {
  REQUIRE_NGINX(false);
  const auto objects = make_objects("two", 4, 50'000);
  formats::write_npz((root_ / "data" / "two" / "x.npz").string(),
                     {{"x", formats::random_tensor(DType::kFloat32, {8, 8}, 3)}}, false);
  ObjectServer server({.root = root_ / "data"});
  auto cache = std::make_shared<RemoteCache>(RemoteCacheOptions{.dir = root_ / "cache", .budget_bytes = 1 << 20});
  const auto cached = std::make_shared<StorageContext>(fast_, cache);
  const auto direct = std::make_shared<StorageContext>(fast_);
  std::vector<std::string> urls;
  for (int i = 0; i < 4; ++i) urls.push_back(url_of(server, "two", i));
  auto ds = list_files(urls, {.shuffle = false}).interleave(
      DatasetFn([](const Element& f) { return fixed_length_records({file_name(f)}, {.record_bytes = 10'000}); }),
      {.cycle_length = 2});
  for (int epoch = 0; epoch < 2; ++epoch) {
    auto a = ds.iterate({.storage = cached});
    auto b = ds.iterate({.storage = direct});
    int64_t na = 0, nb = 0;
    while (a->next()) ++na;
    while (b->next()) ++nb;
    EXPECT_EQ(na, 20);
    EXPECT_EQ(nb, 20);
  }
  // The cached pipeline fetched every object once; the direct one read them twice, itself.
  EXPECT_EQ(cached->counters().bytes, 4 * 50'000);
  EXPECT_EQ(direct->counters().bytes, 2 * 4 * 50'000);
  EXPECT_EQ(cache->counters().misses, 4);
  EXPECT_EQ(cache->counters().hits, 4);
  EXPECT_EQ(counters().requests, 0) << "the fixture's own context read nothing";
  // Array files too: read through the context given, counted there.
  const auto before = direct->counters().requests;
  EXPECT_EQ(formats::read_npz(server.url() + "two/x.npz", {}, direct).size(), 1u);
  EXPECT_GT(direct->counters().requests, before);
  EXPECT_EQ(cached->counters().bytes, 4 * 50'000);
}

TEST_F(RemoteTest, MissingObjectIsNotRetried) {
  REQUIRE_NGINX(false);
  ObjectServer server({.root = root_ / "data"});
  reset_counters();
  try {
    open_url(server.url() + "nope.bin");
    FAIL() << "a missing object opened";
  } catch (const io::IoError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(server.url() + "nope.bin"), std::string::npos) << what;
    EXPECT_NE(what.find("404"), std::string::npos) << what;
  }
  EXPECT_EQ(counters().requests, 1);
  // In a pipeline: an input-data error naming the URL.
  auto it = tfrecord({server.url() + "nope.tfrecord"}).iterate({.storage = storage_});
  try {
    it->next();
    FAIL() << "a missing object read";
  } catch (const InputDataError& e) {
    EXPECT_NE(std::string(e.what()).find("nope.tfrecord"), std::string::npos) << e.what();
  }
}

TEST_F(RemoteTest, ServerErrorsAreRetriedThenReported) {
  REQUIRE_NGINX(false);
  make_objects("broken", 1, 100);
  ObjectServer server({.root = root_ / "data", .fixed_status = {{"/broken/", 500}}});
  reset_counters();
  const auto start = std::chrono::steady_clock::now();
  try {
    open_url(url_of(server, "broken", 0));
    FAIL() << "a 500 was accepted";
  } catch (const io::IoError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("500"), std::string::npos) << what;
    EXPECT_NE(what.find("after 3 attempts"), std::string::npos) << what;
    EXPECT_NE(what.find(url_of(server, "broken", 0)), std::string::npos) << what;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  const auto c = counters();
  EXPECT_EQ(c.requests, 3);
  EXPECT_EQ(c.retries, 2);
  EXPECT_EQ(c.failures, 1);
}

TEST_F(RemoteTest, AnErrorPageLargerThanTheRangeIsRetriedNotTakenForData) {
  REQUIRE_NGINX(false);
  make_objects("busy", 1, 100);
  ObjectServer server({.root = root_ / "data", .fixed_status = {{"/busy/", 503}}});
  io::HttpAccess access = io::access_of(storage_.get());  // the fixture's policy and counters
  access.options.first_request_bytes = 16;  // nginx's 503 page is larger than that
  reset_counters();
  std::string what;
  try {
    io::open_http(url_of(server, "busy", 0), access);
  } catch (const io::IoError& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("HTTP 503 Service Unavailable (gave up after 3 attempts"), std::string::npos)
      << what;
  EXPECT_EQ(counters().retries, 2);
  EXPECT_EQ(counters().bytes, 0) << "an error page was counted as data";
}

TEST_F(RemoteTest, KilledServerEndsTheRunWithAClearErrorInBoundedTime) {
  REQUIRE_NGINX(false);
  make_objects("d", 40, 64 * 1024);
  ObjectServer server({.root = root_ / "data", .rate_bytes_per_second = 8 << 20});
  auto ds = list_files(server.url() + "d/*.bin", {.shuffle = false})
                .interleave(DatasetFn([](const Element& f) {
                              return fixed_length_records({file_name(f)}, {.record_bytes = 4096});
                            }),
                            {.cycle_length = 2, .parallelism = 2});
  testing::run_with_deadline(30s, [&] {
    auto it = ds.iterate({.storage = storage_});
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(it->next());
    const pid_t pid = server.pid();
    server.kill();
    EXPECT_FALSE(process_alive(pid));
    const auto killed = std::chrono::steady_clock::now();
    try {
      while (it->next()) {
      }
      FAIL() << "the run went on without its server";
    } catch (const InputDataError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(server.url() + "d/obj_"), std::string::npos) << what;
      EXPECT_NE(what.find("gave up after 3 attempts"), std::string::npos) << what;
    }
    EXPECT_LT(std::chrono::steady_clock::now() - killed, 10s);
  });
}

TEST_F(RemoteTest, RestartedServerIsRecoveredByRetries) {
  REQUIRE_NGINX(false);
  auto objects = make_objects("r", 1, 3'000'000);  // more than the first request's 1 MiB
  RemoteReadOptions patient = fast_;
  patient.max_attempts = 8;
  patient.backoff_initial = 50ms;
  patient.backoff_max = 400ms;
  use_read_options(patient);
  ObjectServer server({.root = root_ / "data"});
  auto file = open_url(url_of(server, "r", 0));
  server.kill();
  std::string restart_error;
  std::thread restart([&] {
    std::this_thread::sleep_for(300ms);
    try {
      server.start();
    } catch (const std::exception& e) {
      restart_error = e.what();
    }
  });
  reset_counters();
  std::vector<std::byte> tail(100'000);
  size_t n = 0;
  EXPECT_NO_THROW(n = file->read_at(2'400'000, tail));  // retried until the server is back
  restart.join();
  EXPECT_EQ(restart_error, "");
  EXPECT_EQ(n, tail.size());
  EXPECT_TRUE(std::equal(tail.begin(), tail.end(), objects[0].begin() + 2'400'000));
  EXPECT_GE(counters().retries, 1);
}

TEST_F(RemoteTest, BodyShorterThanItsContentLengthIsAnError) {
  REQUIRE_NGINX(false);
  const fs::path file = root_ / "data" / "shrinking.bin";
  write_file(file, random_bytes(4 << 20, 5));
  ObjectServer server({.root = root_ / "data", .rate_bytes_per_second = 2 << 20});
  auto remote = open_url(server.url() + "shrinking.bin");
  reset_counters();
  std::thread truncate([&] {
    // Once the read's body is flowing (nginx sent its Content-Length), the rest never comes.
    for (int i = 0; i < 2000 && counters().bytes < 300'000; ++i) std::this_thread::sleep_for(1ms);
    fs::resize_file(file, 2 << 20);
  });
  std::vector<std::byte> all(4 << 20);
  std::string what;
  try {
    remote->read_at(0, all);
  } catch (const io::IoError& e) {
    what = e.what();
  }
  truncate.join();
  ASSERT_FALSE(what.empty()) << "a cut-short body was accepted";
  EXPECT_NE(what.find("shrinking.bin"), std::string::npos) << what;
  // The cut-short body is retried; the retry finds the object changed.
  EXPECT_NE(what.find("changed while it was read (4194304 bytes when opened, 2097152 now)"),
            std::string::npos)
      << what;
  EXPECT_GE(counters().retries, 1);
}

// ---- The disk cache ----

class RemoteCacheTest : public RemoteTest {};

// Producer processes read with the consumer's context: its read policy and its cache's folder
// (opened anew in each producer), so what they fetch is there for the next run.
TEST_F(RemoteCacheTest, ProducerProcessesReadThroughTheConsumersCache) {
  REQUIRE_NGINX(false);
  const auto objects = make_objects("mp", 4, 20'000);
  ObjectServer server({.root = root_ / "data"});
  auto cache = std::make_shared<RemoteCache>(RemoteCacheOptions{.dir = root_ / "cache", .budget_bytes = 1 << 20});
  use_cache(cache);
  const std::string base = server.url();
  auto ds = multiprocess(
      DatasetFn([base](const Element& index) {
        const int64_t i = index.at(0).as_int64();
        return fixed_length_records({base + "mp/obj_" + std::to_string(i) + ".bin"}, {.record_bytes = 20'000});
      }),
      {.producers = 4});
  auto it = ds.iterate({.storage = storage_});
  int64_t n = 0;
  while (it->next()) ++n;
  EXPECT_EQ(n, 4);
  it.reset();
  // Every object went into the cache folder: a later context reads them without a request.
  auto later = std::make_shared<RemoteCache>(RemoteCacheOptions{.dir = root_ / "cache", .budget_bytes = 1 << 20});
  EXPECT_EQ(later->bytes_cached(), 4u * 20'000u);
  use_cache(later);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(read_all(*open_url(url_of(server, "mp", i))), objects[static_cast<size_t>(i)]);
  EXPECT_EQ(counters().requests, 0);
}

TEST_F(RemoteCacheTest, SecondEpochIsServedLocallyAndTheCacheOutlivesTheRun) {
  REQUIRE_NGINX(false);
  const auto objects = make_objects("c", 6, 100'000);
  ObjectServer server({.root = root_ / "data"});
  const fs::path dir = root_ / "cache";
  {
    auto cache = std::make_shared<RemoteCache>(RemoteCacheOptions{.dir = dir, .budget_bytes = 1 << 20});
    use_cache(cache);
    for (int epoch = 0; epoch < 2; ++epoch) {
      reset_counters();
      for (int i = 0; i < 6; ++i) {
        auto f = open_url(url_of(server, "c", i));
        EXPECT_EQ(read_all(*f), objects[static_cast<size_t>(i)]);
      }
      if (epoch == 1) {
        EXPECT_EQ(counters().bytes, 0) << "the second epoch went remote";
      }
    }
    const auto c = cache->counters();
    EXPECT_EQ(c.misses, 6);
    EXPECT_EQ(c.hits, 6);
    EXPECT_EQ(c.bytes_fetched, 600'000);
    EXPECT_EQ(c.bytes_from_cache, 600'000);
    EXPECT_EQ(cache->bytes_cached(), 600'000u);
  }
  // A later run on the same folder: warm from the start (the first cache is gone).
  use_cache(nullptr);
  auto cache = std::make_shared<RemoteCache>(RemoteCacheOptions{.dir = dir, .budget_bytes = 1 << 20});
  EXPECT_EQ(cache->bytes_cached(), 600'000u);
  use_cache(cache);
  reset_counters();
  auto f = open_url(url_of(server, "c", 3));
  EXPECT_EQ(read_all(*f), objects[3]);
  EXPECT_EQ(counters().requests, 0);
  EXPECT_EQ(cache->counters().hits, 1);
}

TEST_F(RemoteCacheTest, KeyByPathSurvivesAServerOnAnotherPort) {
  REQUIRE_NGINX(false);
  const auto objects = make_objects("k", 2, 10'000);
  const fs::path dir = root_ / "cache";
  for (const bool by_path : {true, false}) {
    fs::remove_all(dir);
    for (int run = 0; run < 2; ++run) {
      ObjectServer server({.root = root_ / "data"});  // a new port each run
      auto cache = std::make_shared<RemoteCache>(
          RemoteCacheOptions{.dir = dir, .budget_bytes = 1 << 20, .key_by_path = by_path});
      use_cache(cache);
      EXPECT_EQ(read_all(*open_url(url_of(server, "k", 1))), objects[1]);
      if (run == 1) {
        EXPECT_EQ(cache->counters().hits, by_path ? 1 : 0) << "key_by_path " << by_path;
      }
    }
  }
}

TEST_F(RemoteCacheTest, EvictsTheLeastRecentlyUsed) {
  REQUIRE_NGINX(false);
  make_objects("l", 4, 100'000);
  ObjectServer server({.root = root_ / "data"});
  auto cache = std::make_shared<RemoteCache>(
      RemoteCacheOptions{.dir = root_ / "cache", .budget_bytes = 250'000});
  use_cache(cache);
  auto open = [&](int i) { (void)open_url(url_of(server, "l", i)); };
  open(0);
  std::this_thread::sleep_for(20ms);
  open(1);
  std::this_thread::sleep_for(20ms);
  open(0);  // a hit: 0 is now newer than 1
  std::this_thread::sleep_for(20ms);
  open(2);  // evicts 1
  EXPECT_EQ(cache->counters().evictions, 1);
  EXPECT_LE(cache->bytes_cached(), 250'000u);
  reset_counters();
  open(0);
  EXPECT_EQ(counters().requests, 0) << "object 0 was evicted, not the least recently used";
  open(1);
  EXPECT_GT(counters().requests, 0) << "object 1 was kept over the budget";
  // Larger than the whole budget: served, not kept.
  write_file(root_ / "data" / "huge.bin", random_bytes(300'000, 11));
  auto huge = open_url(server.url() + "huge.bin");
  EXPECT_EQ(read_all(*huge), random_bytes(300'000, 11));
  EXPECT_EQ(cache->counters().too_large, 1);
}

TEST_F(RemoteCacheTest, DamagedObjectIsDetectedAndFetchedAgain) {
  REQUIRE_NGINX(false);
  const auto objects = make_objects("x", 2, 50'000);
  ObjectServer server({.root = root_ / "data"});
  auto cache = std::make_shared<RemoteCache>(RemoteCacheOptions{.dir = root_ / "cache", .budget_bytes = 1 << 20});
  use_cache(cache);
  (void)open_url(url_of(server, "x", 0));
  (void)open_url(url_of(server, "x", 1));
  // Flip a byte of one cached object and cut the other short.
  int damaged = 0;
  for (const auto& entry : fs::directory_iterator(root_ / "cache")) {
    const auto name = entry.path().filename().string();
    if (name.ends_with(".meta")) continue;
    if (name.find("obj_0") != std::string::npos) {
      std::fstream f(entry.path(), std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(12345);
      f.put('\x5a' ^ static_cast<char>(objects[0][12345]));
      ++damaged;
    } else {
      fs::resize_file(entry.path(), 1000);
      ++damaged;
    }
  }
  ASSERT_EQ(damaged, 2);
  EXPECT_EQ(read_all(*open_url(url_of(server, "x", 0))), objects[0]);
  EXPECT_EQ(read_all(*open_url(url_of(server, "x", 1))), objects[1]);
  const auto c = cache->counters();
  EXPECT_EQ(c.damaged, 2);
  EXPECT_EQ(c.misses, 4);
  // Fetched again and kept: the next open is a good hit.
  EXPECT_EQ(read_all(*open_url(url_of(server, "x", 0))), objects[0]);
  EXPECT_EQ(cache->counters().hits, 1);
}

TEST_F(RemoteCacheTest, FullDiskNeverFailsTheRun) {
  REQUIRE_NGINX(false);
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a small tmpfs";
  const auto objects = make_objects("f", 8, 200'000);
  const fs::path dir = root_ / "small";
  fs::create_directories(dir);
  // 1 MiB of disk under a 10 MB budget: writes fail with ENOSPC.
  if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=1m") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  }
  struct Unmount {
    fs::path dir;
    ~Unmount() { ::umount2(dir.c_str(), MNT_DETACH); }
  } unmount{dir};
  ObjectServer server({.root = root_ / "data"});
  {
    auto cache = std::make_shared<RemoteCache>(RemoteCacheOptions{.dir = dir, .budget_bytes = 10'000'000});
    use_cache(cache);
    // Forwards, then backwards: the second pass starts with what the first one kept last (a
    // scan in the same order over more than fits would miss every time under LRU).
    for (int epoch = 0; epoch < 2; ++epoch) {
      for (int k = 0; k < 8; ++k) {
        const int i = epoch == 0 ? k : 7 - k;
        EXPECT_EQ(read_all(*open_url(url_of(server, "f", i))), objects[static_cast<size_t>(i)]);
      }
    }
    const auto c = cache->counters();
    EXPECT_GT(c.write_failures + c.evictions, 0) << "the full disk went unnoticed";
    EXPECT_GT(c.hits, 0) << "nothing was kept at all";
  }
  for (const auto& entry : fs::directory_iterator(dir)) {
    EXPECT_FALSE(entry.path().filename().string().starts_with(".tmp-")) << entry.path();
  }
}

TEST_F(RemoteCacheTest, PreloadFetchesAheadAndReadersShareFetches) {
  REQUIRE_NGINX(true);
  const auto objects = make_objects("p", 16, 64 * 1024);
  ObjectServer server({.root = root_ / "data", .latency = 5ms});
  auto cache = std::make_shared<RemoteCache>(
      RemoteCacheOptions{.dir = root_ / "cache", .budget_bytes = 1 << 20, .preload_threads = 4});
  use_cache(cache);
  std::vector<std::string> urls;
  for (int i = 0; i < 16; ++i) urls.push_back(url_of(server, "p", i));
  reset_counters();
  cache->preload(urls);
  // Four readers at once while the preload runs: every object fetched once in all.
  std::vector<std::thread> readers;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&] {
      for (int i = 0; i < 16; ++i) {
        if (read_all(*open_url(urls[static_cast<size_t>(i)])) != objects[static_cast<size_t>(i)]) ++wrong;
      }
    });
  }
  for (auto& t : readers) t.join();
  cache->wait_for_preload();
  EXPECT_EQ(wrong, 0);
  const auto c = cache->counters();
  EXPECT_EQ(c.bytes_fetched, 16 * 64 * 1024);
  EXPECT_EQ(counters().bytes, 16 * 64 * 1024);
  EXPECT_GT(c.preloaded, 0);
  EXPECT_EQ(c.preload_failures, 0);
}

TEST_F(RemoteCacheTest, PreloadStopsAtTheBudget) {
  REQUIRE_NGINX(false);
  make_objects("b", 10, 100'000);
  ObjectServer server({.root = root_ / "data"});
  auto cache = std::make_shared<RemoteCache>(
      RemoteCacheOptions{.dir = root_ / "cache", .budget_bytes = 450'000, .preload_threads = 1});
  std::vector<std::string> urls;
  for (int i = 0; i < 10; ++i) urls.push_back(url_of(server, "b", i));
  cache->preload(urls);
  cache->wait_for_preload();
  EXPECT_EQ(cache->counters().preloaded, 4);
  EXPECT_EQ(cache->counters().evictions, 0);
  EXPECT_LE(cache->bytes_cached(), 450'000u);
}

TEST_F(RemoteCacheTest, GrowingCacheWritesCompleteShardsAndEvictsTheOldest) {
  REQUIRE_NGINX(true);
  make_objects("s", 20, 10'000);
  ObjectServer server({.root = root_ / "data", .latency = 1ms});
  GrowingCacheOptions o;
  for (int i = 0; i < 20; ++i) o.urls.push_back(url_of(server, "s", i));
  o.dir = root_ / "shards";
  o.samplers = 2;
  o.shard_samples = 4;  // per sampler: 10 samples -> shards of 4, 4 and 2
  {
    GrowingSampleCache cache(o);
    ASSERT_TRUE(cache.wait_for_first_shard(nullptr));
    while (!cache.samplers_done()) std::this_thread::sleep_for(5ms);
    const auto all = cache.complete();
    EXPECT_EQ(all.shards, 6);
    // Every sample once, as a tf.Example of its bytes and label, in complete shards.
    auto ds = list_files(cache.pattern(), {.shuffle = false})
                  .interleave(DatasetFn([](const Element& f) { return tfrecord({file_name(f)}); }),
                              {.cycle_length = 2});
    EXPECT_EQ(ds.collect().size(), 20u);
    for (const auto& e : fs::directory_iterator(o.dir)) {
      EXPECT_FALSE(e.path().filename().string().starts_with(".tmp-")) << e.path();
    }
  }
  // A budget of about three shards: the oldest go first.
  o.budget_bytes = 3 * 4 * 10'100;
  GrowingSampleCache cache(o);
  while (!cache.samplers_done()) std::this_thread::sleep_for(5ms);
  const auto removed = cache.enforce_budget();
  EXPECT_GE(removed.shards, 2);
  EXPECT_LE(cache.complete().bytes, o.budget_bytes);
}

TEST_F(RemoteCacheTest, GrowingCacheNamesAFailedSampler) {
  REQUIRE_NGINX(false);
  make_objects("g", 2, 1000);
  ObjectServer server({.root = root_ / "data"});
  GrowingCacheOptions o;
  o.urls = {url_of(server, "g", 0), server.url() + "g/missing.bin"};
  o.dir = root_ / "shards";
  o.samplers = 2;
  GrowingSampleCache cache(o);
  try {
    for (int i = 0; i < 1000 && !cache.samplers_done(); ++i) std::this_thread::sleep_for(5ms);
    FAIL() << "the failed sampler went unnoticed";
  } catch (const RemoteError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("sampler 1"), std::string::npos) << what;
    EXPECT_NE(what.find("missing.bin"), std::string::npos) << what;
    EXPECT_NE(what.find("404"), std::string::npos) << what;
  }
}

TEST_F(RemoteCacheTest, BadFolderIsAClearError) {
  write_file(root_ / "file", random_bytes(1, 1));
  EXPECT_THROW(RemoteCache({.dir = root_ / "file" / "cache", .budget_bytes = 1}), RemoteError);
  EXPECT_THROW(RemoteCache({.dir = root_ / "cache", .budget_bytes = 0}), RemoteError);
}

}  // namespace
}  // namespace pipeprof::pipelines
