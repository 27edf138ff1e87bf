// S3 object storage against a real S3 server this suite starts on 127.0.0.1 (testbed::S3Server:
// OpenStack Swift's S3 API, which checks each request's Signature Version 4): ranged reads,
// listings page by page, single and multipart uploads, and the errors of a wrong key, a missing
// bucket or object, and an upload dropped before its commit.
#include <gtest/gtest.h>

#include <algorithm>

#include <random>

#include "io/remote_cache.h"
#include "io/s3.h"
#include "io/storage.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/files.h"
#include "pipeprof/pipelines/remote.h"
#include "pipeprof/pipelines/storage_io.h"
#include "pipeprof/testbed/s3_server.h"

namespace pipeprof::pipelines {
namespace {

using testbed::S3Server;

std::vector<std::byte> random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> out(n);
  for (auto& b : out) b = static_cast<std::byte>(rng() & 0xff);
  return out;
}

class S3Test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string why;
    if (!S3Server::available(&why)) {
      skip_ = why;
      return;
    }
    server_ = new S3Server();
    server_->create_bucket("data");
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (server_ == nullptr) GTEST_SKIP() << skip_;
  }

  static std::shared_ptr<StorageContext> storage(S3Options change = {}) {
    S3Options o = server_->options();
    if (!change.secret_access_key.empty()) o.secret_access_key = change.secret_access_key;
    o.part_bytes = change.part_bytes;
    RemoteReadOptions read;
    read.max_attempts = 2;
    read.backoff_initial = std::chrono::milliseconds(20);
    return std::make_shared<StorageContext>(read, nullptr, o);
  }

  static void put(const std::string& name, const std::vector<std::byte>& bytes,
                  const std::shared_ptr<StorageContext>& s = storage()) {
    auto f = create_file(name, {.storage = s});
    f->append(bytes);
    f->commit();
  }

  static std::vector<std::byte> get(const std::string& name,
                                    const std::shared_ptr<StorageContext>& s = storage()) {
    auto f = io::open_file(name, {.storage = s});
    std::vector<std::byte> out(f->size());
    out.resize(io::read_fully(*f, 0, out));
    return out;
  }

  static inline S3Server* server_ = nullptr;
  static inline std::string skip_;
};

TEST_F(S3Test, AnObjectWrittenIsReadBackWholeAndByRanges) {
  const auto bytes = random_bytes(3'000'123, 1);
  put("s3://data/small/a b+c.bin", bytes);  // a key with characters that are encoded
  auto f = io::open_file("s3://data/small/a b+c.bin", {.storage = storage()});
  EXPECT_EQ(f->name(), "s3://data/small/a b+c.bin");
  ASSERT_EQ(f->size(), bytes.size());
  std::vector<std::byte> part(1000);
  ASSERT_EQ(f->read_at(2'500'000, part), part.size());  // past the first request's bytes
  EXPECT_TRUE(std::equal(part.begin(), part.end(), bytes.begin() + 2'500'000));
  EXPECT_EQ(get("s3://data/small/a b+c.bin"), bytes);
  EXPECT_EQ(object_size("s3://data/small/a b+c.bin", storage()), bytes.size());
  EXPECT_EQ(read_whole_file("s3://data/small/a b+c.bin", {.block_bytes = 1 << 20, .storage = storage()}),
            bytes.size());
}

TEST_F(S3Test, AnEmptyObjectIsWrittenAndReadAsEmpty) {
  put("s3://data/empty/none.bin", {});
  auto f = io::open_file("s3://data/empty/none.bin", {.storage = storage()});
  EXPECT_EQ(f->size(), 0U);
  std::vector<std::byte> out(10);
  EXPECT_EQ(f->read_at(0, out), 0U);
  EXPECT_EQ(io::list_s3("data", "empty/", io::access_of(storage().get())).at(0).size, 0U);
}

TEST_F(S3Test, ALargeObjectGoesUpInPartsAndReadsBackTheSame) {
  const auto s = storage({.part_bytes = 5 << 20});
  const auto bytes = random_bytes((12 << 20) + 4321, 2);
  auto f = create_file("s3://data/large/ckpt.pt", {.storage = s});
  // Appends of odd sizes across the part boundaries.
  for (size_t at = 0; at < bytes.size();) {
    const size_t n = std::min<size_t>(bytes.size() - at, 3'333'333);
    f->append(std::span(bytes).subspan(at, n));
    at += n;
  }
  EXPECT_EQ(f->size(), bytes.size());
  // Nothing under the name before the commit.
  EXPECT_THROW(io::open_file("s3://data/large/ckpt.pt", {.storage = s}), IoError);
  f->commit();
  EXPECT_EQ(get("s3://data/large/ckpt.pt", s), bytes);
}

TEST_F(S3Test, AnUploadDroppedBeforeItsCommitLeavesNoObject) {
  const auto s = storage({.part_bytes = 5 << 20});
  {
    auto f = create_file("s3://data/dropped/ckpt.pt", {.storage = s});
    f->append(random_bytes(11 << 20, 3));  // two parts gone up
  }
  try {
    io::open_file("s3://data/dropped/ckpt.pt", {.storage = s});
    FAIL() << "an object appeared";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("NoSuchKey"), std::string::npos) << e.what();
  }
}

TEST_F(S3Test, ListingsGoPageByPageAndMatchTheLastPart) {
  std::vector<std::string> expected;
  for (int i = 0; i < 7; ++i) {
    const std::string name = "s3://data/list/obj_" + std::to_string(i) + ".bin";
    put(name, random_bytes(10 + i, 4));
    expected.push_back(name);
  }
  put("s3://data/list/notes.txt", random_bytes(5, 5));
  put("s3://data/list/sub/obj_9.bin", random_bytes(5, 6));  // in a subfolder: not listed
  const auto s = storage();
  const auto objects = io::list_s3("data", "list/", io::access_of(s.get()), /*max_keys=*/2);  // 4 pages
  ASSERT_EQ(objects.size(), 8U);
  EXPECT_EQ(objects[0].key, "list/notes.txt");
  EXPECT_EQ(objects[1].key, "list/obj_0.bin");
  EXPECT_EQ(objects[1].size, 10U);
  EXPECT_EQ(io::match_files("s3://data/list/obj_*.bin", storage().get()), expected);
  EXPECT_EQ(io::match_files("s3://data/list/none_*", storage().get()), std::vector<std::string>{});
  EXPECT_THROW(io::match_files("s3://data/l*/obj_1.bin", storage().get()), IoError);
  // With their sizes, from the same listing: what a remote workload reads its objects' sizes from.
  const auto sized = matching_objects("s3://data/list/obj_*.bin", s.get());
  ASSERT_EQ(sized.size(), expected.size());
  for (size_t i = 0; i < sized.size(); ++i) {
    EXPECT_EQ(sized[i].first, expected[i]);
    EXPECT_EQ(sized[i].second, 10U + i);
  }
  const auto one = matching_objects("s3://data/list/obj_3.bin", s.get());
  ASSERT_EQ(one.size(), 1U);
  EXPECT_EQ(one[0].second, 13U);
  EXPECT_TRUE(matching_objects("s3://data/list/obj_77.bin", s.get()).empty());
  put("s3://data/list/back\\slash.bin", random_bytes(3, 7));  // a name without wildcards: as it is
  const auto exact = matching_objects("s3://data/list/back\\slash.bin", s.get());
  ASSERT_EQ(exact.size(), 1U);
  EXPECT_EQ(exact[0].second, 3U);
  EXPECT_THROW(matching_objects("s3://data/l*/obj_1.bin", s.get()), InputDataError);
  EXPECT_THROW(matching_objects("/tmp/obj_*.bin", s.get()), InputDataError);
}

// A console's folder marker ("odd/", an empty object) is not a file of the folder, and keys XML
// cannot carry as they are (listed URL-encoded) come back as they were written.
TEST_F(S3Test, ListingsLeaveOutFolderMarkersAndDecodeTheirKeys) {
  const auto s = storage();
  {  // pipeprof writes no such object: a plain PUT of an empty body, as a console makes it
    const auto [url, access] = io::s3_request_for("s3://data/odd/", io::access_of(s.get()));
    io::http_exchange(url, {.method = "PUT", .send_body = true}, access);
  }
  const std::vector<std::string> names{"s3://data/odd/a b+c.bin", "s3://data/odd/per%cent.bin",
                                       "s3://data/odd/\xc3\xa9t\xc3\xa9.bin"};
  for (size_t i = 0; i < names.size(); ++i)
    put(names[i], random_bytes(3 + i, 9));
  const auto objects = io::list_s3("data", "odd/", io::access_of(s.get()), /*max_keys=*/2);
  std::vector<std::string> keys;
  for (const auto& o : objects)
    keys.push_back(o.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"odd/a b+c.bin", "odd/per%cent.bin",
                                            "odd/\xc3\xa9t\xc3\xa9.bin"}));
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(io::match_files("s3://data/odd/*", s.get()), sorted);
  EXPECT_EQ(get("s3://data/odd/a b+c.bin"), random_bytes(3, 9));
}

TEST_F(S3Test, AWrongSecretKeyIsRefusedNamingTheEndpointAndBucket) {
  put("s3://data/secret/a.bin", random_bytes(100, 7));
  const auto wrong = storage({.secret_access_key = "not-the-secret"});
  for (const auto& call : std::vector<std::function<void()>>{
           [&] { io::open_file("s3://data/secret/a.bin", {.storage = wrong}); },
           [&] { io::match_files("s3://data/secret/*.bin", wrong.get()); },
           [&] { put("s3://data/secret/b.bin", random_bytes(10, 8), wrong); }}) {
    try {
      call();
      FAIL() << "a wrong secret key was accepted";
    } catch (const IoError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("SignatureDoesNotMatch"), std::string::npos) << what;
      EXPECT_NE(what.find("403"), std::string::npos) << what;
      EXPECT_NE(what.find(server_->endpoint()), std::string::npos) << what;
      EXPECT_NE(what.find("bucket data"), std::string::npos) << what;
    }
  }
}

TEST_F(S3Test, AMissingBucketOrObjectIsAnErrorNamingIt) {
  try {
    io::match_files("s3://nobucket/train/*.npz", storage().get());
    FAIL() << "a missing bucket listed";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("NoSuchBucket"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bucket nobucket"), std::string::npos) << e.what();
  }
  try {
    io::open_file("s3://data/missing/x.npz", {.storage = storage()});
    FAIL() << "a missing object opened";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("s3://data/missing/x.npz"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("404"), std::string::npos) << e.what();
  }
  EXPECT_THROW(io::open_file("s3:///key", {.storage = storage()}), IoError);
  EXPECT_NO_THROW(server_->create_bucket("data"));  // this account's own bucket again
}

TEST_F(S3Test, TheDiskCacheTierReadsS3ObjectsOnce) {
  const auto bytes = random_bytes(2'500'000, 10);
  put("s3://data/cached/a.bin", bytes);
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("pipeprof-s3-cache-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  {
    auto cache = std::make_shared<RemoteCache>(RemoteCacheOptions{.dir = dir, .budget_bytes = 64 << 20,
                                                                  .s3 = server_->options()});
    const auto s = std::make_shared<StorageContext>(RemoteReadOptions{}, cache, server_->options());
    EXPECT_EQ(get("s3://data/cached/a.bin", s), bytes);  // fetched, kept
    EXPECT_EQ(get("s3://data/cached/a.bin", s), bytes);  // from the cache's folder
    EXPECT_EQ(cache->counters().misses, 1);
    EXPECT_EQ(cache->counters().hits, 1);
    EXPECT_EQ(s->counters().bytes, static_cast<int64_t>(bytes.size()));
  }
  std::filesystem::remove_all(dir);
}

// A server of its own per test: these kill it, or a part of it.
class S3FaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!S3Server::available(&why)) GTEST_SKIP() << why;
    server_ = std::make_unique<S3Server>();
    server_->create_bucket("data");
    RemoteReadOptions read;
    read.max_attempts = 3;
    read.backoff_initial = std::chrono::milliseconds(20);
    read.connect_timeout = std::chrono::milliseconds(1000);
    read.stall_timeout = std::chrono::milliseconds(2000);
    storage_ = std::make_shared<StorageContext>(read, nullptr, server_->options());
    auto f = create_file("s3://data/a.bin", {.storage = storage_});
    f->append(random_bytes(3'000'000, 9));
    f->commit();
  }
  std::unique_ptr<S3Server> server_;
  std::shared_ptr<StorageContext> storage_;
};

TEST_F(S3FaultTest, AServerThatDiesMidReadIsAnErrorNotAHang) {
  auto f = io::open_file("s3://data/a.bin", {.storage = storage_});  // the first MiB is in
  server_->kill();
  std::vector<std::byte> out(100'000);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    (void)f->read_at(2'000'000, out);
    FAIL() << "a read from a dead server succeeded";
  } catch (const IoError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("s3://data/a.bin"), std::string::npos) << what;
    EXPECT_NE(what.find("bytes 2000000-2099999"), std::string::npos) << what;
    EXPECT_NE(what.find("3 attempts"), std::string::npos) << what;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
}

TEST_F(S3FaultTest, AStormOf503IsRetriedThenNamed) {
  server_->kill_component("object");  // the proxy answers 503 for every object now
  try {
    (void)io::open_file("s3://data/a.bin", {.storage = storage_});
    FAIL() << "an object was read without its object server";
  } catch (const IoError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("503"), std::string::npos) << what;
    EXPECT_NE(what.find("gave up after 3 attempts"), std::string::npos) << what;
  }
  EXPECT_GE(storage_->counters().retries, 2);
  EXPECT_THROW(server_->kill_component("nothing"), RemoteError);
}

TEST(S3Names, UrlsArePathStyleForAddressesAndVirtualHostedOtherwise) {
  io::S3Settings s;
  s.endpoint = "http://127.0.0.1:9000";
  EXPECT_EQ(io::s3_http_url(s, "b", "a b/c~d.npz"), "http://127.0.0.1:9000/b/a%20b/c~d.npz");
  s.endpoint = "https://s3.us-west-2.amazonaws.com";
  EXPECT_EQ(io::s3_http_url(s, "bucket", "k", "list-type=2"),
            "https://bucket.s3.us-west-2.amazonaws.com/k?list-type=2");
  EXPECT_EQ(io::s3_http_url(s, "my.bucket", "k"), "https://s3.us-west-2.amazonaws.com/my.bucket/k");
  s.force_path_style = true;
  EXPECT_EQ(io::s3_http_url(s, "bucket", "k"), "https://s3.us-west-2.amazonaws.com/bucket/k");
  s.force_path_style = false;  // DLIO's default; an address takes path style regardless
  s.endpoint = "http://127.0.0.1:9000";
  EXPECT_EQ(io::s3_http_url(s, "bucket", "k"), "http://127.0.0.1:9000/bucket/k");
  EXPECT_EQ(io::s3_encode("a/b=c&d", false), "a%2Fb%3Dc%26d");
  EXPECT_EQ(io::s3_url_decode("a+b%2Bc%2fd%C3%A9%zz%4"), "a b+c/d\xc3\xa9%zz%4");
  EXPECT_EQ(io::s3_error_gist("<Error><Code>SlowDown</Code><Message>Reduce</Message></Error>"),
            "SlowDown: Reduce");
  EXPECT_EQ(io::s3_error_gist("<html>502</html>"), "");
  EXPECT_EQ(io::s3_error_gist("not xml"), "");
}

// Parts double every 1,000 so that S3's 10,000 parts hold more than its 5 TiB objects (16 MiB
// parts alone stopped at 160 GB: a large rank's checkpoint).
TEST(S3Names, PartsGrowSoThatTenThousandHoldTheLargestObject) {
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  EXPECT_EQ(io::s3_part_bytes(16 * kMiB, 1), 16 * kMiB);
  EXPECT_EQ(io::s3_part_bytes(16 * kMiB, 1000), 16 * kMiB);
  EXPECT_EQ(io::s3_part_bytes(16 * kMiB, 1001), 32 * kMiB);
  EXPECT_EQ(io::s3_part_bytes(16 * kMiB, 2001), 64 * kMiB);
  EXPECT_EQ(io::s3_part_bytes(16 * kMiB, 10000), 5120 * kMiB);  // at most S3's 5 GiB
  uint64_t total = 0;
  for (uint64_t n = 1; n <= io::kS3MostParts; ++n)
    total += io::s3_part_bytes(16 * kMiB, n);
  EXPECT_GT(total, uint64_t{5} << 40) << "10,000 parts hold less than S3's largest object";
  EXPECT_EQ(io::s3_part_bytes(uint64_t{6} << 30, 1), uint64_t{5} << 30);
}

}  // namespace
}  // namespace pipeprof::pipelines
