#include "pipeprof/pipelines/serialization.h"

#include <fmt/format.h>

#include <cstring>

namespace pipeprof::pipelines {
namespace {

constexpr size_t kPrefixBytes = 24;  // magic, version, count, reserved, payload bytes

uint64_t align_up(uint64_t n) {
  return (n + kPayloadAlignment - 1) / kPayloadAlignment * kPayloadAlignment;
}

class Writer {
 public:
  template <typename T>
  void put(T value) {
    const size_t at = out_.size();
    out_.resize(at + sizeof(T));
    std::memcpy(out_.data() + at, &value, sizeof(T));
  }
  std::vector<std::byte> take() { return std::move(out_); }

 private:
  std::vector<std::byte> out_;
};

class Reader {
 public:
  explicit Reader(std::span<const std::byte> bytes) : bytes_(bytes) {}

  template <typename T>
  T get(const char* field) {
    if (bytes_.size() - pos_ < sizeof(T)) {
      throw SerializationError(
          fmt::format("element layout: truncated at byte {} reading {} ({} bytes, {} left)", pos_,
                      field, sizeof(T), bytes_.size() - pos_));
    }
    T value;
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  size_t pos() const { return pos_; }
  size_t left() const { return bytes_.size() - pos_; }

 private:
  std::span<const std::byte> bytes_;
  size_t pos_ = 0;
};

[[noreturn]] void fail(size_t at, const std::string& what) {
  throw SerializationError(fmt::format("element layout: byte {}: {}", at, what));
}

}  // namespace

ElementLayout layout_of(const Element& element) {
  if (element.size() > kMaxSerializedTensors) {
    throw SerializationError(fmt::format("an element of {} tensors exceeds the limit of {}",
                                         element.size(), kMaxSerializedTensors));
  }
  ElementLayout layout;
  for (const Tensor& t : element) {
    if (!t.valid()) throw SerializationError("cannot serialize an invalid (empty) tensor");
    if (t.rank() > kMaxSerializedRank) {
      throw SerializationError(
          fmt::format("a tensor of rank {} exceeds the limit of {}", t.rank(), kMaxSerializedRank));
    }
    const uint64_t offset = align_up(layout.payload_bytes);
    layout.tensors.push_back({t.dtype(), t.shape(), offset, t.nbytes()});
    layout.payload_bytes = offset + t.nbytes();
  }
  return layout;
}

std::vector<std::byte> encode_layout(const ElementLayout& layout) {
  Writer w;
  w.put<uint32_t>(kElementMagic);
  w.put<uint32_t>(kElementFormatVersion);
  w.put<uint32_t>(static_cast<uint32_t>(layout.tensors.size()));
  w.put<uint32_t>(0);
  w.put<uint64_t>(layout.payload_bytes);
  for (const TensorLayout& t : layout.tensors) {
    w.put<uint8_t>(static_cast<uint8_t>(t.dtype));
    w.put<uint8_t>(static_cast<uint8_t>(t.shape.size()));
    w.put<uint16_t>(0);
    w.put<uint32_t>(0);
    for (int64_t d : t.shape)
      w.put<int64_t>(d);
    w.put<uint64_t>(t.offset);
    w.put<uint64_t>(t.nbytes);
  }
  return w.take();
}

ElementLayout decode_layout(std::span<const std::byte> bytes, uint64_t max_payload_bytes) {
  Reader r(bytes);
  if (r.get<uint32_t>("magic") != kElementMagic) fail(0, "bad magic (not an element layout)");
  if (const auto v = r.get<uint32_t>("version"); v != kElementFormatVersion)
    fail(4, fmt::format("format version {} (expected {})", v, kElementFormatVersion));
  const auto count = r.get<uint32_t>("tensor count");
  if (count > kMaxSerializedTensors)
    fail(8, fmt::format("{} tensors exceed the limit of {}", count, kMaxSerializedTensors));
  if (r.get<uint32_t>("reserved") != 0) fail(12, "reserved field is not zero");
  ElementLayout layout;
  layout.payload_bytes = r.get<uint64_t>("payload size");
  if (layout.payload_bytes > max_payload_bytes) {
    fail(16, fmt::format("payload of {} bytes exceeds the limit of {}", layout.payload_bytes,
                         max_payload_bytes));
  }
  uint64_t end_of_previous = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const size_t at = r.pos();
    TensorLayout t;
    const auto dtype = r.get<uint8_t>("dtype");
    if (dtype > static_cast<uint8_t>(DType::kFloat64))
      fail(at, fmt::format("tensor {}: unknown dtype code {}", i, dtype));
    t.dtype = static_cast<DType>(dtype);
    const auto rank = r.get<uint8_t>("rank");
    if (rank > kMaxSerializedRank)
      fail(at + 1, fmt::format("tensor {}: rank {} exceeds {}", i, rank, kMaxSerializedRank));
    if (r.get<uint16_t>("reserved") != 0 || r.get<uint32_t>("reserved") != 0)
      fail(at + 2, fmt::format("tensor {}: reserved field is not zero", i));
    for (uint8_t d = 0; d < rank; ++d) {
      const auto dim = r.get<int64_t>("dimension");
      if (dim < 0) fail(r.pos() - 8, fmt::format("tensor {}: negative dimension {}", i, dim));
      t.shape.push_back(dim);
    }
    t.offset = r.get<uint64_t>("offset");
    t.nbytes = r.get<uint64_t>("byte count");
    int64_t values = 0;
    try {
      values = num_elements(t.shape);
    } catch (const std::invalid_argument& e) {
      fail(at, fmt::format("tensor {}: {}", i, e.what()));
    }
    if (static_cast<uint64_t>(values) * dtype_size(t.dtype) != t.nbytes) {
      fail(r.pos() - 8, fmt::format("tensor {}: {} bytes for {} values of {}", i, t.nbytes, values,
                                    dtype_name(t.dtype)));
    }
    if (t.offset % kPayloadAlignment != 0 || t.offset < end_of_previous ||
        t.offset > layout.payload_bytes || t.nbytes > layout.payload_bytes - t.offset) {
      fail(r.pos() - 16, fmt::format("tensor {}: bytes [{}, +{}) outside the payload of {} bytes "
                                     "or out of order",
                                     i, t.offset, t.nbytes, layout.payload_bytes));
    }
    end_of_previous = t.offset + t.nbytes;
    layout.tensors.push_back(std::move(t));
  }
  if (r.left() != 0) fail(r.pos(), fmt::format("{} unexpected trailing bytes", r.left()));
  return layout;
}

void write_payload(const Element& element, const ElementLayout& layout,
                   std::span<std::byte> payload) {
  if (element.size() != layout.tensors.size() || payload.size() < layout.payload_bytes)
    throw SerializationError("write_payload: the layout does not describe this element");
  for (size_t i = 0; i < element.size(); ++i) {
    const TensorLayout& t = layout.tensors[i];
    if (t.nbytes > 0) std::memcpy(payload.data() + t.offset, element[i].data(), t.nbytes);
  }
}

std::vector<std::byte> serialize(const Element& element) {
  const ElementLayout layout = layout_of(element);
  const std::vector<std::byte> head = encode_layout(layout);
  std::vector<std::byte> out(sizeof(uint64_t) + head.size() + layout.payload_bytes);
  const uint64_t head_size = head.size();
  std::memcpy(out.data(), &head_size, sizeof head_size);
  std::memcpy(out.data() + sizeof head_size, head.data(), head.size());
  write_payload(element, layout, std::span<std::byte>(out).subspan(sizeof head_size + head.size()));
  return out;
}

Element deserialize(std::span<const std::byte> bytes) {
  uint64_t head_size = 0;
  if (bytes.size() < sizeof head_size) throw SerializationError("element: truncated size prefix");
  std::memcpy(&head_size, bytes.data(), sizeof head_size);
  if (head_size < kPrefixBytes || head_size > bytes.size() - sizeof head_size) {
    throw SerializationError(
        fmt::format("element: layout size {} does not fit in {} bytes", head_size, bytes.size()));
  }
  const auto rest = bytes.subspan(sizeof head_size);
  const ElementLayout layout = decode_layout(rest.first(head_size), rest.size() - head_size);
  const auto payload = rest.subspan(head_size);
  if (payload.size() != layout.payload_bytes) {
    throw SerializationError(fmt::format("element: {} payload bytes, the layout says {}",
                                         payload.size(), layout.payload_bytes));
  }
  Element out;
  for (const TensorLayout& t : layout.tensors) {
    Tensor tensor(t.dtype, t.shape);
    if (t.nbytes > 0) std::memcpy(tensor.mutable_data(), payload.data() + t.offset, t.nbytes);
    out.push_back(std::move(tensor));
  }
  return out;
}

}  // namespace pipeprof::pipelines
