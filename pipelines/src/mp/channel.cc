#include "mp/channel.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace pipeprof::pipelines::mp {

void send_all(int fd, std::span<const iovec> parts) {
  std::vector<iovec> iov(parts.begin(), parts.end());
  size_t first = 0;
  while (first < iov.size()) {
    if (iov[first].iov_len == 0) {
      ++first;
      continue;
    }
    msghdr msg{};
    msg.msg_iov = iov.data() + first;
    msg.msg_iovlen = std::min<size_t>(iov.size() - first, IOV_MAX);
    const ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw ChannelError(fmt::format("send failed: {}", std::strerror(errno)),
                         errno == EPIPE || errno == ECONNRESET);
    }
    auto left = static_cast<size_t>(n);
    while (first < iov.size() && left >= iov[first].iov_len) {
      left -= iov[first].iov_len;
      ++first;
    }
    if (left > 0) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
}

void send_message(int fd, MessageKind kind, std::span<const std::byte> body,
                  std::span<const iovec> extra) {
  MessageHeader header{kMessageMagic, kind, body.size()};
  for (const iovec& v : extra)
    header.body_bytes += v.iov_len;
  std::vector<iovec> parts;
  parts.reserve(2 + extra.size());
  parts.push_back({&header, sizeof header});
  parts.push_back({const_cast<std::byte*>(body.data()), body.size()});
  parts.insert(parts.end(), extra.begin(), extra.end());
  send_all(fd, parts);
}

namespace {

// Reads at least this large wait for all their bytes in the kernel (recv_exact_polled).
constexpr size_t kWaitAllBytes = size_t{1} << 20;

// One read; returns bytes read (> 0) or throws. EINTR and EAGAIN (a receive timeout) return 0.
size_t read_some(int fd, std::byte* out, size_t n, int flags = 0) {
  const ssize_t got = ::recv(fd, out, n, flags);
  if (got > 0) return static_cast<size_t>(got);
  if (got == 0) throw ChannelError("the peer closed the connection", true);
  if (errno == EINTR || errno == EAGAIN) return 0;
  throw ChannelError(fmt::format("receive failed: {}", std::strerror(errno)), errno == ECONNRESET);
}

}  // namespace

void recv_exact(int fd, std::byte* out, size_t n) {
  size_t done = 0;
  while (done < n)
    done += read_some(fd, out + done, n - done);
}

bool recv_exact_polled(int fd, std::byte* out, size_t n, const std::function<bool()>& keep_going,
                       int slice_ms) {
  size_t done = 0;
  // A large body: one MSG_WAITALL call copies what arrives until all of it is in, without a poll
  // and a return to user space for every socket buffer's worth; the socket's receive timeout (a
  // slice; a zero one would be none) bounds each call, so keep_going() is still asked. Where the
  // timeout cannot be set, the polled reads below.
  const int ms = std::max(slice_ms, 1);
  const timeval slice{ms / 1000, static_cast<suseconds_t>(ms % 1000) * 1000};
  if (n >= kWaitAllBytes && ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &slice, sizeof slice) == 0) {
    while (done < n) {
      done += read_some(fd, out + done, n - done, MSG_WAITALL);
      if (done < n && !keep_going()) return false;
    }
    return true;
  }
  while (done < n) {
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, slice_ms);
    if (r < 0 && errno != EINTR)
      throw ChannelError(fmt::format("poll failed: {}", std::strerror(errno)), false);
    if (r > 0) {
      // Readable, or hung up (recv then reports the end of file).
      done += read_some(fd, out + done, n - done);
      continue;
    }
    if (!keep_going()) return false;
  }
  return true;
}

MessageHeader parse_header(const std::byte* bytes) {
  MessageHeader h;
  std::memcpy(&h, bytes, sizeof h);
  if (h.magic != kMessageMagic) {
    throw ChannelError(fmt::format("corrupt stream: bad message magic {:#x}", h.magic), false);
  }
  const auto kind = static_cast<uint32_t>(h.kind);
  if (kind < 1 || kind > 8)
    throw ChannelError(fmt::format("corrupt stream: unknown message kind {}", kind), false);
  if (h.body_bytes > kMaxMessageBody) {
    throw ChannelError(fmt::format("corrupt stream: message body of {} bytes", h.body_bytes),
                       false);
  }
  return h;
}

void set_socket_buffers(int fd, int bytes) {
  if (::setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof bytes) != 0)
    ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) != 0)
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}

}  // namespace pipeprof::pipelines::mp
