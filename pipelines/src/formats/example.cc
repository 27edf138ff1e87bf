#include "formats/example.h"

#include <fmt/format.h>

#include <cstring>

#include "formats/tfrecord.h"

namespace pipeprof::pipelines::formats {
namespace {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

// Reads protobuf fields from [begin, end) of a buffer; offsets in errors count from `base`.
class WireReader {
 public:
  WireReader(std::span<const std::byte> data, size_t base) : data_(data), base_(base) {}

  bool done() const { return pos_ >= data_.size(); }
  size_t offset() const { return base_ + pos_; }

  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) fail("truncated varint");
      const auto b = static_cast<uint8_t>(data_[pos_++]);
      v |= static_cast<uint64_t>(b & 0x7FU) << shift;
      if ((b & 0x80U) == 0) return v;
    }
    fail("varint longer than 10 bytes");
  }
  // A field's tag: (number, wire type).
  std::pair<uint32_t, uint32_t> tag() {
    const uint64_t t = varint();
    if ((t >> 3) == 0 || (t >> 3) > 0x1FFFFFFFU) fail("invalid field number");
    return {static_cast<uint32_t>(t >> 3), static_cast<uint32_t>(t & 7U)};
  }
  // The contents of a length-delimited field, as a reader (and its span).
  std::span<const std::byte> bytes() {
    const uint64_t n = varint();
    if (n > data_.size() - pos_) {
      fail(fmt::format("a field of {} bytes runs past the end of its message ({} bytes left)", n,
                       data_.size() - pos_));
    }
    auto out = data_.subspan(pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return out;
  }
  WireReader sub(std::span<const std::byte> part) const {
    return WireReader(part, base_ + static_cast<size_t>(part.data() - data_.data()));
  }
  uint32_t fixed32() {
    if (data_.size() - pos_ < 4) fail("truncated fixed32");
    uint32_t v = 0;
    std::memcpy(&v, data_.data() + pos_, 4);  // little-endian hosts (x86-64, arm64)
    pos_ += 4;
    return v;
  }
  void skip(uint32_t wire) {
    switch (wire) {
      case kVarint:
        varint();
        break;
      case kFixed64:
        if (data_.size() - pos_ < 8) fail("truncated fixed64");
        pos_ += 8;
        break;
      case kLengthDelimited:
        bytes();
        break;
      case kFixed32:
        fixed32();
        break;
      default:
        fail(fmt::format("unsupported wire type {}", wire));
    }
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw FormatError(fmt::format("tf.Example: {} at byte {}", what, offset()));
  }

 private:
  std::span<const std::byte> data_;
  size_t base_;
  size_t pos_ = 0;
};

void expect_wire(const WireReader& r, uint32_t wire, uint32_t expected, const char* what) {
  if (wire != expected) r.fail(fmt::format("{} has wire type {}, expected {}", what, wire, expected));
}

Feature decode_feature(WireReader r) {
  Feature f;
  while (!r.done()) {
    const auto [field, wire] = r.tag();
    if (field < 1 || field > 3) {
      r.skip(wire);
      continue;
    }
    expect_wire(r, wire, kLengthDelimited, "a feature's value list");
    WireReader list = r.sub(r.bytes());
    // A oneof: the last list present wins.
    f = Feature{};
    f.kind = field == 1 ? FeatureKind::kBytes : field == 2 ? FeatureKind::kFloat : FeatureKind::kInt64;
    while (!list.done()) {
      const auto [vfield, vwire] = list.tag();
      if (vfield != 1) {
        list.skip(vwire);
        continue;
      }
      if (f.kind == FeatureKind::kBytes) {
        expect_wire(list, vwire, kLengthDelimited, "a bytes value");
        f.bytes.push_back(list.bytes());
      } else if (f.kind == FeatureKind::kFloat) {
        if (vwire == kLengthDelimited) {  // packed
          WireReader packed = list.sub(list.bytes());
          while (!packed.done()) {
            const uint32_t bits = packed.fixed32();
            float v = 0;
            std::memcpy(&v, &bits, 4);
            f.floats.push_back(v);
          }
        } else {
          expect_wire(list, vwire, kFixed32, "a float value");
          const uint32_t bits = list.fixed32();
          float v = 0;
          std::memcpy(&v, &bits, 4);
          f.floats.push_back(v);
        }
      } else if (vwire == kLengthDelimited) {  // packed int64
        WireReader packed = list.sub(list.bytes());
        while (!packed.done())
          f.int64s.push_back(static_cast<int64_t>(packed.varint()));
      } else {
        expect_wire(list, vwire, kVarint, "an int64 value");
        f.int64s.push_back(static_cast<int64_t>(list.varint()));
      }
    }
  }
  return f;
}

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7FU) | 0x80U));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void put_tag(std::string& out, uint32_t field, uint32_t wire) {
  put_varint(out, (static_cast<uint64_t>(field) << 3) | wire);
}
void put_bytes(std::string& out, uint32_t field, std::string_view data) {
  put_tag(out, field, kLengthDelimited);
  put_varint(out, data.size());
  out.append(data);
}

}  // namespace

std::string_view feature_kind_name(FeatureKind kind) {
  switch (kind) {
    case FeatureKind::kBytes:
      return "bytes";
    case FeatureKind::kFloat:
      return "float";
    case FeatureKind::kInt64:
      return "int64";
    case FeatureKind::kNone:
      break;
  }
  return "none";
}

std::vector<Feature> decode_example(std::span<const std::byte> example,
                                    const std::vector<std::string>& keys) {
  std::vector<Feature> out(keys.size());
  WireReader r(example, 0);
  while (!r.done()) {
    const auto [field, wire] = r.tag();
    if (field != 1) {
      r.skip(wire);
      continue;
    }
    expect_wire(r, wire, kLengthDelimited, "Example.features");
    WireReader features = r.sub(r.bytes());
    while (!features.done()) {
      const auto [ffield, fwire] = features.tag();
      if (ffield != 1) {
        features.skip(fwire);
        continue;
      }
      expect_wire(features, fwire, kLengthDelimited, "a feature map entry");
      WireReader entry = features.sub(features.bytes());
      std::string_view key;
      std::span<const std::byte> value;
      bool has_value = false;
      while (!entry.done()) {
        const auto [efield, ewire] = entry.tag();
        if (efield == 1) {
          expect_wire(entry, ewire, kLengthDelimited, "a feature's key");
          auto k = entry.bytes();
          key = std::string_view(reinterpret_cast<const char*>(k.data()), k.size());
        } else if (efield == 2) {
          expect_wire(entry, ewire, kLengthDelimited, "a feature's value");
          value = entry.bytes();
          has_value = true;
        } else {
          entry.skip(ewire);
        }
      }
      for (size_t i = 0; i < keys.size(); ++i) {
        if (keys[i] != key) continue;
        out[i] = has_value ? decode_feature(entry.sub(value)) : Feature{};
        // A present key with an empty Feature is a feature with no list: kind none.
      }
    }
  }
  return out;
}

namespace {

// The Features.feature map's entries (Features' field 1, repeated), in the given order.
std::string encode_feature_map(const std::vector<std::pair<std::string, FeatureValue>>& features) {
  std::string map;
  for (const auto& [key, value] : features) {
    std::string list;
    uint32_t list_field = 1;
    switch (value.kind) {
      case FeatureKind::kBytes:
        for (const auto& b : value.bytes)
          put_bytes(list, 1, b);
        break;
      case FeatureKind::kFloat: {
        list_field = 2;
        std::string packed;
        for (float v : value.floats) {
          char bytes[4];
          std::memcpy(bytes, &v, 4);
          packed.append(bytes, 4);
        }
        if (!value.floats.empty()) put_bytes(list, 1, packed);
        break;
      }
      case FeatureKind::kInt64: {
        list_field = 3;
        std::string packed;
        for (int64_t v : value.int64s)
          put_varint(packed, static_cast<uint64_t>(v));
        if (!value.int64s.empty()) put_bytes(list, 1, packed);
        break;
      }
      case FeatureKind::kNone:
        break;
    }
    std::string feature;
    if (value.kind != FeatureKind::kNone) put_bytes(feature, list_field, list);
    std::string entry;
    put_bytes(entry, 1, key);
    put_bytes(entry, 2, feature);
    put_bytes(map, 1, entry);
  }
  return map;
}

size_t varint_size(uint64_t v) {
  size_t n = 1;
  for (; v >= 0x80; v >>= 7)
    ++n;
  return n;
}

}  // namespace

std::string encode_example(const std::vector<std::pair<std::string, FeatureValue>>& features) {
  std::string example;
  put_bytes(example, 1, encode_feature_map(features));
  return example;
}

ExampleFrame encode_example_around(std::string_view key, uint64_t value_bytes,
                                   const std::vector<std::pair<std::string, FeatureValue>>& rest) {
  // The bytes feature's nesting, innermost first: BytesList {value}, Feature {bytes_list},
  // the map entry {key, Feature}; each is a tag and a length in front of its content.
  const uint64_t list = 1 + varint_size(value_bytes) + value_bytes;
  const uint64_t feature = 1 + varint_size(list) + list;
  std::string entry_head;
  put_bytes(entry_head, 1, key);
  put_tag(entry_head, 2, kLengthDelimited);
  put_varint(entry_head, feature);
  put_tag(entry_head, 1, kLengthDelimited);  // Feature.bytes_list
  put_varint(entry_head, list);
  put_tag(entry_head, 1, kLengthDelimited);  // BytesList.value
  put_varint(entry_head, value_bytes);
  const uint64_t entry = entry_head.size() + value_bytes;
  ExampleFrame out;
  out.tail = encode_feature_map(rest);
  const uint64_t map = 1 + varint_size(entry) + entry + out.tail.size();
  put_tag(out.head, 1, kLengthDelimited);  // Example.features
  put_varint(out.head, map);
  put_tag(out.head, 1, kLengthDelimited);  // Features.feature's entry
  put_varint(out.head, entry);
  out.head += entry_head;
  return out;
}

}  // namespace pipeprof::pipelines::formats
