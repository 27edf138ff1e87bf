// The binary wire format of an element, used by the process-based stages (multiprocess sends it
// over a socket; shared_store sends only the layout and writes the payload into shared memory).
//
// An element is a layout followed by a payload. The layout, little-endian:
//   u32 magic "PPEL", u32 format version, u32 number of tensors, u32 reserved (0), u64 payload
//   bytes, then per tensor: u8 dtype, u8 rank, u16 reserved (0), u32 reserved (0),
//   i64 dims[rank], u64 offset of its bytes in the payload, u64 byte count.
// The payload holds each tensor's values (row-major), each at an offset that is a multiple of
// kPayloadAlignment, in component order. Decoding checks every field (known dtype, rank <= 16,
// non-negative dimensions, byte count = values x dtype size, tensors inside the payload and in
// order) and throws SerializationError naming the byte offset and the field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

#include "pipeprof/pipelines/tensor.h"

namespace pipeprof::pipelines {

class SerializationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr uint32_t kElementMagic = 0x4C455050;  // "PPEL"
inline constexpr uint32_t kElementFormatVersion = 1;
inline constexpr uint64_t kPayloadAlignment = 64;
inline constexpr int64_t kMaxSerializedRank = 16;
inline constexpr uint32_t kMaxSerializedTensors = 4096;

struct TensorLayout {
  DType dtype = DType::kInt64;
  Shape shape;
  uint64_t offset = 0;  // in the payload
  uint64_t nbytes = 0;
};

struct ElementLayout {
  std::vector<TensorLayout> tensors;
  uint64_t payload_bytes = 0;
};

// Where each tensor of `element` goes in the payload.
ElementLayout layout_of(const Element& element);
// The encoded layout (the bytes before the payload).
std::vector<std::byte> encode_layout(const ElementLayout& layout);
// Decodes and validates a layout that fills `bytes` exactly; a payload larger than
// `max_payload_bytes` is refused before anything is allocated.
ElementLayout decode_layout(std::span<const std::byte> bytes,
                            uint64_t max_payload_bytes = uint64_t{1} << 40);

// Copies the tensors' values into `payload` (at least layout.payload_bytes long).
void write_payload(const Element& element, const ElementLayout& layout,
                   std::span<std::byte> payload);

// The whole element as one buffer: u64 layout size, layout, payload.
std::vector<std::byte> serialize(const Element& element);
// The inverse of serialize(); the tensors get their own buffers (a copy). Trailing bytes are an
// error.
Element deserialize(std::span<const std::byte> bytes);

}  // namespace pipeprof::pipelines
