// The read-through disk cache against a real nginx (hits, LRU eviction, reuse across runs and by
// producer processes, damaged objects, a full disk, preloading, concurrent readers) and the
// growing sample cache. Skips where nginx (or its echo module) is not installed.
#include "remote_fixture.h"

namespace pipeprof::pipelines::remote_testing {
namespace {

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
}  // namespace pipeprof::pipelines::remote_testing
