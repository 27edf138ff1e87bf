// tf.Example, the protocol buffer TFRecord files usually hold:
//
//   Example { Features features = 1; }   Features { map<string, Feature> feature = 1; }
//   Feature { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2;
//                          Int64List int64_list = 3; } }
//   BytesList { repeated bytes value = 1; }  FloatList { repeated float value = 1 [packed]; }
//   Int64List { repeated int64 value = 1 [packed]; }
//
// Encoded and decoded on the protobuf wire format directly (these five messages only; packed and
// unpacked repeated fields are both read, unknown fields are skipped), so no generated code or
// protobuf runtime is needed. Malformed input is a FormatError naming the byte offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pipeprof::pipelines::formats {

enum class FeatureKind { kNone, kBytes, kFloat, kInt64 };
std::string_view feature_kind_name(FeatureKind kind);  // "bytes", "float", "int64"

// One feature's values. Bytes values point into the decoded record.
struct Feature {
  FeatureKind kind = FeatureKind::kNone;
  std::vector<std::span<const std::byte>> bytes;
  std::vector<float> floats;
  std::vector<int64_t> int64s;
};

// The features named in `keys`, in that order, from a serialized Example; a key not present has
// kind kNone. A key that appears twice takes its last value (protobuf's map rule).
std::vector<Feature> decode_example(std::span<const std::byte> example,
                                    const std::vector<std::string>& keys);

// Builds a serialized Example (for writers and tests); features are written in the given order.
struct FeatureValue {
  FeatureKind kind = FeatureKind::kBytes;
  std::vector<std::string> bytes;
  std::vector<float> floats;
  std::vector<int64_t> int64s;
};
std::string encode_example(const std::vector<std::pair<std::string, FeatureValue>>& features);

// The serialized Example of a bytes feature `key` with one value of `value_bytes` bytes followed by
// the features `rest`, without the value itself, for values too large to copy:
//   head + value + tail == encode_example({{key, {kBytes, {value}}}, rest...}).
struct ExampleFrame {
  std::string head;
  std::string tail;
};
ExampleFrame encode_example_around(std::string_view key, uint64_t value_bytes,
                                   const std::vector<std::pair<std::string, FeatureValue>>& rest);

}  // namespace pipeprof::pipelines::formats
