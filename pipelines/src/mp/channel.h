// Messages between a producer process and the consumer over a stream socket: a 16-byte header
// (u32 magic "PPMS", u32 kind, u64 body size) and the body. Sends are blocking and never raise
// SIGPIPE; receives on the consumer side poll in short slices so that they can give up when the
// consumer is cancelled or the peer is gone, and never hang.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace pipeprof::pipelines::mp {

enum class MessageKind : uint32_t {
  kElement = 1,   // producer -> consumer: element layout + payload (multiprocess)
  kEnd = 2,       // producer -> consumer: the producer's pipeline ended normally
  kError = 3,     // producer -> consumer: its pipeline failed; body: the message
  kTrace = 4,     // producer -> consumer: its trace as Chrome JSON
  kAllocate = 5,  // producer -> consumer: u64 bytes wanted in the object store
  kGrant = 6,     // consumer -> producer: u64 object id, u64 offset (kNoGrant: refused)
  kSealed = 7,    // producer -> consumer: u64 object id, u64 bytes copied, element layout
  kInputError = 8,  // producer -> consumer: its pipeline failed on its input data (a corrupt or
                    // missing file: InputDataError, bad input); body: the message
};

inline constexpr uint32_t kMessageMagic = 0x534D5050;  // "PPMS"
inline constexpr uint64_t kNoGrant = ~uint64_t{0};
// Bodies larger than this are refused before anything is allocated (a corrupt stream).
inline constexpr uint64_t kMaxMessageBody = uint64_t{1} << 40;

struct MessageHeader {
  uint32_t magic = kMessageMagic;
  MessageKind kind = MessageKind::kEnd;
  uint64_t body_bytes = 0;
};
static_assert(sizeof(MessageHeader) == 16);

// The peer closed the socket (end of file) or a transfer failed.
class ChannelError : public std::runtime_error {
 public:
  ChannelError(const std::string& what, bool eof) : std::runtime_error(what), eof_(eof) {}
  bool eof() const { return eof_; }

 private:
  bool eof_;
};

// Writes every byte of `parts` (blocking). Throws ChannelError.
void send_all(int fd, std::span<const iovec> parts);
// A message: header, `body`, then `extra` (counted in the body size).
void send_message(int fd, MessageKind kind, std::span<const std::byte> body,
                  std::span<const iovec> extra = {});

// Reads exactly `n` bytes (blocking, for the producer side). Throws ChannelError.
void recv_exact(int fd, std::byte* out, size_t n);

// Reads exactly `n` bytes, polling `fd` in slices of `slice_ms`; between slices `keep_going()`
// may throw or return false to give up (returns false then). Throws ChannelError. A read of 1 MiB
// or more waits in the kernel for all its bytes (MSG_WAITALL), in slices set as the socket's
// receive timeout (SO_RCVTIMEO stays set: the consumer's end is read only through this).
bool recv_exact_polled(int fd, std::byte* out, size_t n, const std::function<bool()>& keep_going,
                       int slice_ms = 50);

// Reads a header and validates its magic and size. Throws ChannelError.
MessageHeader parse_header(const std::byte* bytes);

// Helpers for small fixed bodies.
template <typename T>
void append_pod(std::vector<std::byte>& out, const T& value) {
  const auto* p = reinterpret_cast<const std::byte*>(&value);
  out.insert(out.end(), p, p + sizeof(T));
}

// Sets large socket buffers (best effort: beyond net.core.[rw]mem_max only where the process has
// CAP_NET_ADMIN, else capped there).
void set_socket_buffers(int fd, int bytes);

}  // namespace pipeprof::pipelines::mp
