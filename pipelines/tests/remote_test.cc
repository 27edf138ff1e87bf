// Remote object storage against a real nginx started by each test (ObjectServer): ranged reads,
// listings, the file sources over http:// URLs, each pipeline's own storage context, and retries
// and their limits (404, 500, a killed and a restarted server, a body cut short). Skips where
// nginx (or its echo module) is not installed. The disk cache: remote_cache_test.cc.
#include <sys/wait.h>

#include "remote_fixture.h"

namespace pipeprof::pipelines::remote_testing {
namespace {

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

// A server whose process was killed (SIGKILL: nothing of it could clean up) leaves its folder;
// the next server to start removes it, and leaves the folders of running processes alone.
TEST_F(RemoteTest, FoldersOfKilledRunsAreRemovedAtTheNextStart) {
  REQUIRE_NGINX(false);
  make_objects("a", 1, 10);
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_GT(dead, 0);
  ASSERT_EQ(::waitpid(dead, nullptr, 0), dead);
  auto folder = [&](const std::string& name, const std::string& owner) {
    const fs::path dir = root_ / "tmp" / name;
    fs::create_directories(dir / "tmp");
    if (!owner.empty()) std::ofstream(dir / "owner.pid") << owner << "\n";
    std::ofstream(dir / "nginx.conf") << "x";
    return dir;
  };
  const fs::path killed = folder("pipeprof-nginx-killed", std::to_string(dead));
  const fs::path running = folder("pipeprof-nginx-running", std::to_string(::getpid()));
  const fs::path starting = folder("pipeprof-nginx-starting", "");  // its owner file not yet written
  const fs::path other = folder("other-killed", std::to_string(dead));
  {
    ObjectServer server({.root = root_ / "data"});
  }
  EXPECT_FALSE(fs::exists(killed));
  EXPECT_TRUE(fs::exists(running));
  EXPECT_TRUE(fs::exists(starting));
  EXPECT_TRUE(fs::exists(other));
}

// Loaders open their connections together (256 at a run's start): the server takes every waiting
// connection in one pass of its event loop, not one a pass while the first ones stream (which made
// the last connections of a burst wait seconds for their first bytes). Its generated
// configuration says so; the figures that show the difference are in docs/remote.md.
TEST_F(RemoteTest, ServerAcceptsEveryWaitingConnectionAtOnce) {
  REQUIRE_NGINX(false);
  make_objects("a", 1, 10);
  ObjectServer server({.root = root_ / "data"});
  std::string conf;
  for (const auto& entry : fs::directory_iterator(root_ / "tmp")) {
    if (entry.path().filename().string().starts_with("pipeprof-nginx-")) {
      std::ifstream in(entry.path() / "nginx.conf");
      conf.assign(std::istreambuf_iterator<char>(in), {});
    }
  }
  ASSERT_FALSE(conf.empty()) << "no nginx.conf in the server's folder under " << root_ / "tmp";
  const auto events = conf.find("events {");
  ASSERT_NE(events, std::string::npos) << conf;
  const std::string block = conf.substr(events, conf.find('}', events) - events);
  EXPECT_NE(block.find("multi_accept on;"), std::string::npos) << block;
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
  use_read_options(patient());
  ObjectServer server({.root = root_ / "data"});
  auto file = open_url(url_of(server, "r", 0));
  server.kill();
  std::string restart_error;
  std::thread restart = restart_after(server, 300ms, restart_error);
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

// A read of several parts' worth is fetched in parts by one thread, several requests at once; the
// bytes are the object's, each part one request.
TEST_F(RemoteTest, LargeReadsAreFetchedInParts) {
  REQUIRE_NGINX(false);
  const auto objects = make_objects("big", 1, (5 << 20) + 100);
  ObjectServer server({.root = root_ / "data"});
  RemoteReadOptions parts = fast_;
  parts.part_bytes = 1 << 20;
  parts.parts_in_flight = 4;
  use_read_options(parts);
  auto file = open_url(url_of(server, "big", 0));
  reset_counters();
  EXPECT_EQ(read_all(*file), objects[0]);
  // After the open's first MiB: 4 MiB and 100 bytes, five parts.
  EXPECT_EQ(counters().requests, 5);
  EXPECT_EQ(counters().bytes, (4 << 20) + 100);
  // A read inside the object, across part boundaries.
  reset_counters();
  std::vector<std::byte> middle((3 << 20) - 7);
  ASSERT_EQ(file->read_at(1234567, middle), middle.size());
  EXPECT_TRUE(std::equal(middle.begin(), middle.end(), objects[0].begin() + 1234567));
  EXPECT_EQ(counters().requests, 3);
  // One part in flight: one request per read, as before.
  parts.parts_in_flight = 1;
  use_read_options(parts);
  file = open_url(url_of(server, "big", 0));
  reset_counters();
  EXPECT_EQ(read_all(*file), objects[0]);
  EXPECT_EQ(counters().requests, 1);
}

// A part that fails is retried on its own (the server goes away and comes back mid-read); an
// object that changed size since it was opened is an error naming both sizes.
TEST_F(RemoteTest, PartsAreRetriedAndAChangedObjectIsAnError) {
  REQUIRE_NGINX(false);
  auto objects = make_objects("r", 1, 6 << 20);
  RemoteReadOptions in_parts = patient();
  in_parts.part_bytes = 512 << 10;
  in_parts.parts_in_flight = 3;
  use_read_options(in_parts);
  ObjectServer server({.root = root_ / "data"});
  auto file = open_url(url_of(server, "r", 0));
  server.kill();
  std::string restart_error;
  std::thread restart = restart_after(server, 300ms, restart_error);
  reset_counters();
  std::vector<std::byte> rest((5 << 20) - 1000);
  size_t n = 0;
  EXPECT_NO_THROW(n = file->read_at(1 << 20, rest));
  restart.join();
  EXPECT_EQ(restart_error, "");
  EXPECT_EQ(n, rest.size());
  EXPECT_TRUE(std::equal(rest.begin(), rest.end(), objects[0].begin() + (1 << 20)));
  EXPECT_GE(counters().retries, 1);

  write_file(root_ / "data" / "r" / "obj_0.bin", random_bytes(7 << 20, 9));
  std::string what;
  try {
    file->read_at(1 << 20, rest);
  } catch (const io::IoError& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("obj_0.bin"), std::string::npos) << what;
  EXPECT_NE(what.find("changed while it was read (6291456 bytes when opened, 7340032 now)"),
            std::string::npos)
      << what;
}

// The stop ends a read in parts at once, whatever its parts are doing.
TEST_F(RemoteTest, AStopEndsAReadInParts) {
  REQUIRE_NGINX(false);
  make_objects("slow", 1, 9 << 20);
  ObjectServer server({.root = root_ / "data", .rate_bytes_per_second = 1 << 20});
  std::atomic<bool> stop{false};
  RemoteReadOptions parts = fast_;
  parts.part_bytes = 1 << 20;
  parts.parts_in_flight = 4;
  parts.stop = &stop;
  use_read_options(parts);
  auto file = open_url(url_of(server, "slow", 0));
  std::thread stopper([&] {
    std::this_thread::sleep_for(300ms);
    stop = true;
  });
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::byte> rest(8 << 20);
  std::string what;
  try {
    file->read_at(1 << 20, rest);
  } catch (const io::IoError& e) {
    what = e.what();
  }
  stopper.join();
  EXPECT_NE(what.find("stopped"), std::string::npos) << what;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);  // 2 s of transfer at the least
}

}  // namespace
}  // namespace pipeprof::pipelines::remote_testing
