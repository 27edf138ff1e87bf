// Writing whole objects through the storage layer (pipeprof/pipelines/storage_io.h): an object
// appears under its name only when committed, O_DIRECT for aligned buffers, nothing left by a
// writer dropped or failing part way, and what a killed writer left removed by the next run.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "io/storage.h"
#include "pipeprof/pipelines/storage_io.h"
#include "pipeprof_testing/temp_dir.h"
#include "storage_test_util.h"

namespace pipeprof::pipelines {
namespace {

using io::IoError;
using testing_support::TempDir;
using testing_storage::random_bytes;
using testing_storage::read_all;
using testing_storage::write_all;

std::vector<std::byte> pattern_bytes(size_t n, uint64_t seed) {
  const std::string s = random_bytes(n, seed);
  std::vector<std::byte> out(n);
  std::memcpy(out.data(), s.data(), n);
  return out;
}

TEST(WritableFile, AppearsUnderItsNameOnlyAtCommitWithEveryByte) {
  const TempDir tmp;
  const std::string name = (tmp / "a/b/ckpt.pt").string();  // folders made as needed
  const std::vector<std::byte> bytes = pattern_bytes(3 * 4096 + 123, 1);
  auto f = create_file(name, {.fsync = true});
  f->append(std::span(bytes).first(5000));
  f->append(std::span(bytes).subspan(5000));
  EXPECT_EQ(f->size(), bytes.size());
  EXPECT_FALSE(std::filesystem::exists(name));  // not before commit
  f->commit();
  ASSERT_TRUE(std::filesystem::exists(name));
  const std::string back = read_all(name);
  ASSERT_EQ(back.size(), bytes.size());
  EXPECT_EQ(std::memcmp(back.data(), bytes.data(), bytes.size()), 0);
  EXPECT_EQ(object_size(name), bytes.size());
  EXPECT_EQ(read_whole_file(name, {.block_bytes = 4096}), bytes.size());
  // Nothing but the object is left in its folder.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(tmp / "a/b"),
                          std::filesystem::directory_iterator()),
            1);
}

TEST(WritableFile, DirectWritesAlignedBuffersAndTheTailThroughThePageCache) {
  const TempDir tmp;
  const std::string name = (tmp / "direct.bin").string();
  io::AlignedBuffer block(2 * 4096);
  const std::vector<std::byte> bytes = pattern_bytes(block.size + 100, 2);
  std::memcpy(block.data.get(), bytes.data(), block.size);
  std::unique_ptr<WritableFile> f;
  try {
    f = create_file(name, {.direct = true, .fsync = true});
  } catch (const IoError& e) {
    GTEST_SKIP() << e.what();  // a file system without O_DIRECT (tmpfs)
  }
  f->append(block.span());
  f->append(std::span(bytes).subspan(block.size));  // unaligned tail
  f->commit();
  const std::string back = read_all(name);
  ASSERT_EQ(back.size(), bytes.size());
  EXPECT_EQ(std::memcmp(back.data(), bytes.data(), bytes.size()), 0);
  EXPECT_EQ(read_whole_file(name, {.block_bytes = 4096, .direct = true}), bytes.size());
}

TEST(ReadWholeFile, StopsAtMaxBytes) {
  const TempDir tmp;
  const std::string name = (tmp / "w.bin").string();
  const std::vector<std::byte> bytes = pattern_bytes(10000, 5);
  {
    auto f = create_file(name);
    f->append(bytes);
    f->commit();
  }
  EXPECT_EQ(read_whole_file(name, {.block_bytes = 4096, .max_bytes = 4096}), 4096U);
  EXPECT_EQ(read_whole_file(name, {.block_bytes = 4096, .max_bytes = 5000}), 5000U);
  EXPECT_EQ(read_whole_file(name, {.block_bytes = 4096, .max_bytes = 1U << 20}), bytes.size());
}

TEST(WritableFile, DroppedBeforeCommitLeavesNothing) {
  const TempDir tmp;
  const std::string name = (tmp / "gone.pt").string();
  {
    auto f = create_file(name);
    const std::vector<std::byte> bytes = pattern_bytes(1000, 3);
    f->append(bytes);
  }
  EXPECT_TRUE(std::filesystem::is_empty(tmp.path()));
  // An earlier complete object of the name stays until a new one is committed over it.
  write_all(name, "old");
  {
    auto f = create_file(name);
    f->append(pattern_bytes(10, 4));
  }
  EXPECT_EQ(read_all(name), "old");
}

// A write the file system refuses part way (here the file size limit, EFBIG: a full disk fails
// the same way with ENOSPC) names the object and the offset, and leaves no partial object.
TEST(WritableFile, AFailedWriteNamesTheObjectAndOffsetAndLeavesNothing) {
  const TempDir tmp;
  const std::string name = (tmp / "big.pt").string();
  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = 64 * 1024;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string message;
  {
    auto f = create_file(name);
    try {
      for (int i = 0; i < 4; ++i)
        f->append(pattern_bytes(32 * 1024, 5));
    } catch (const IoError& e) {
      message = e.what();
    }
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_NE(message.find(name), std::string::npos) << message;
  EXPECT_NE(message.find("at byte 65536"), std::string::npos) << message;
  EXPECT_TRUE(std::filesystem::is_empty(tmp.path()));
}

TEST(WritableFile, ReadOnlySchemesAndMissingObjectsAreNamed) {
  try {
    (void)create_file("http://127.0.0.1:9/x.pt");
    FAIL() << "expected an IoError";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("http://127.0.0.1:9/x.pt"), std::string::npos);
  }
  const TempDir tmp;
  try {
    (void)read_whole_file((tmp / "missing.pt").string());
    FAIL() << "expected an IoError";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("missing.pt"), std::string::npos);
  }
}

// What a writer killed outright leaves (its temporary file) is removed by the next run on this
// host; a live writer's, and another host's, are not.
TEST(WritableFile, AbandonedPartialsOfDeadWritersAreRemoved) {
  const TempDir tmp;
  {
    auto f = create_file((tmp / "a/x.pt").string());
    f->append(pattern_bytes(100, 6));
    // Its temporary file carries this host and pid: find it, and make one of a dead pid beside it.
    std::string live;
    for (const auto& e : std::filesystem::directory_iterator(tmp / "a"))
      live = e.path().filename().string();
    ASSERT_NE(live.find(".partial-"), std::string::npos) << live;
    const pid_t child = ::fork();
    if (child == 0) ::_exit(0);
    ASSERT_GT(child, 0);
    ::waitpid(child, nullptr, 0);  // reaped: its pid is free
    const std::string mine = std::to_string(::getpid());
    const auto at = live.find("-" + mine + "-");
    ASSERT_NE(at, std::string::npos) << live;
    std::string dead = live;
    dead.replace(at, mine.size() + 2, "-" + std::to_string(child) + "-");
    write_all(tmp / "a" / dead, "left by a killed writer");
    std::filesystem::create_directories(tmp / "b");
    const auto other = tmp / ("b/y.pt.partial-otherhost-" + std::to_string(child) + "-0");
    write_all(other, "another host's");
    EXPECT_EQ(remove_abandoned_partials(tmp.path().string()), 1U);
    EXPECT_FALSE(std::filesystem::exists(tmp / "a" / dead));
    EXPECT_TRUE(std::filesystem::exists(tmp / "a" / live));  // this live writer's
    EXPECT_TRUE(std::filesystem::exists(other));
    f->commit();
  }
  EXPECT_EQ(remove_abandoned_partials((tmp / "missing").string()), 0U);
}

}  // namespace
}  // namespace pipeprof::pipelines
