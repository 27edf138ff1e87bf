// The producers' channel (mp/channel.h): a large body received in one piece however it is written,
// a peer that stops in the middle of one still lets the consumer give up between slices, and a
// peer that closes in the middle is an end-of-stream error.
#include "mp/channel.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

namespace pipeprof::pipelines::mp {
namespace {

struct SocketPair {
  SocketPair() {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    consumer = sv[0];
    producer = sv[1];
    set_socket_buffers(consumer, 1 << 20);
    set_socket_buffers(producer, 1 << 20);
  }
  ~SocketPair() {
    if (consumer >= 0) ::close(consumer);
    if (producer >= 0) ::close(producer);
  }
  int consumer = -1, producer = -1;
};

// Writes bytes[from, to) in pieces of `piece` bytes.
void write_pieces(int fd, const std::vector<std::byte>& bytes, size_t from, size_t to, size_t piece) {
  for (size_t at = from; at < to;) {
    const ssize_t n = ::send(fd, bytes.data() + at, std::min(piece, to - at), MSG_NOSIGNAL);
    if (n <= 0) return;
    at += static_cast<size_t>(n);
  }
}

std::vector<std::byte> pattern(size_t n) {
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = std::byte(static_cast<uint8_t>(i * 131 + i / 4099));
  return v;
}

TEST(Channel, ALargeBodyArrivesWholeHoweverItIsWritten) {
  for (const size_t size : {size_t{100}, size_t{3} << 20, (size_t{9} << 20) + 7}) {
    SCOPED_TRACE(size);
    const SocketPair s;
    const auto sent = pattern(size);
    std::thread writer([&] { write_pieces(s.producer, sent, 0, size, 65537); });
    std::vector<std::byte> got(size);
    EXPECT_TRUE(recv_exact_polled(s.consumer, got.data(), size, [] { return true; }, 20));
    writer.join();
    EXPECT_EQ(got, sent);
  }
}

TEST(Channel, APeerThatStopsInTheMiddleOfABodyLetsTheConsumerGiveUp) {
  const SocketPair s;
  const size_t size = size_t{4} << 20;
  const auto sent = pattern(size);
  std::atomic<bool> done{false};
  std::thread writer([&] {
    write_pieces(s.producer, sent, 0, size / 2, 1 << 16);  // half, then silence
    while (!done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  std::vector<std::byte> got(size);
  int asked = 0;
  EXPECT_FALSE(recv_exact_polled(s.consumer, got.data(), size, [&] { return ++asked < 4; }, 20));
  EXPECT_EQ(asked, 4) << "asked between slices until it said no";
  done = true;
  writer.join();
}

TEST(Channel, APeerThatClosesInTheMiddleOfABodyIsTheEndOfTheStream) {
  SocketPair s;
  const size_t size = size_t{2} << 20;
  const auto sent = pattern(size);
  std::thread writer([&] {
    write_pieces(s.producer, sent, 0, size / 3, 1 << 16);
    ::close(s.producer);
    s.producer = -1;
  });
  std::vector<std::byte> got(size);
  try {
    recv_exact_polled(s.consumer, got.data(), size, [] { return true; }, 20);
    ADD_FAILURE() << "no error";
  } catch (const ChannelError& e) {
    EXPECT_TRUE(e.eof()) << e.what();
  }
  writer.join();
}

}  // namespace
}  // namespace pipeprof::pipelines::mp
