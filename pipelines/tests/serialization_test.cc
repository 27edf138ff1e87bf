// The element wire format: round trips of every dtype and shape, and a malformed-input battery
// (every truncation, bad fields, random damage) that must give SerializationError, never a crash.
#include "pipeprof/pipelines/serialization.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "pipeprof/pipelines/functions.h"

namespace pipeprof::pipelines {
namespace {

using ::testing::HasSubstr;

Element sample() {
  Tensor big(DType::kFloat32, {3, 5, 7});
  fill_random(big.mutable_values<float>(), 3);
  return {Tensor::scalar<int64_t>(42),
          Tensor::from_vector<double>({1.5, -2.25, 3}),
          big,
          Tensor(DType::kUInt8, {0, 4}),
          Tensor::from_vector<bool>({true, false, true}),
          Tensor::from_vector<int32_t>({7, 8, 9, 10}, {2, 2})};
}

TEST(Serialization, RoundTripsEveryDtypeAndShape) {
  const Element e = sample();
  const Element back = deserialize(serialize(e));
  ASSERT_EQ(back.size(), e.size());
  for (size_t i = 0; i < e.size(); ++i) {
    EXPECT_EQ(back[i].dtype(), e[i].dtype()) << i;
    EXPECT_EQ(back[i].shape(), e[i].shape()) << i;
    EXPECT_TRUE(back[i] == e[i]) << i;
    EXPECT_FALSE(back[i].shares_buffer_with(e[i]));
  }
  EXPECT_TRUE(deserialize(serialize(Element{})).empty());
}

TEST(Serialization, LayoutAlignsEachTensorAndHasNoTrailingPadding) {
  const ElementLayout layout = layout_of(sample());
  uint64_t end = 0;
  for (const TensorLayout& t : layout.tensors) {
    EXPECT_EQ(t.offset % kPayloadAlignment, 0u);
    EXPECT_GE(t.offset, end);
    end = t.offset + t.nbytes;
  }
  EXPECT_EQ(layout.payload_bytes, end);
  const ElementLayout back = decode_layout(encode_layout(layout));
  ASSERT_EQ(back.tensors.size(), layout.tensors.size());
  EXPECT_EQ(back.payload_bytes, layout.payload_bytes);
  EXPECT_EQ(back.tensors[2].shape, (Shape{3, 5, 7}));
}

TEST(Serialization, EveryTruncationIsAnError) {
  const std::vector<std::byte> bytes = serialize(sample());
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_THROW(deserialize(std::span(bytes).first(n)), SerializationError) << "length " << n;
  }
  std::vector<std::byte> longer = bytes;
  longer.push_back(std::byte{0});
  EXPECT_THROW(deserialize(longer), SerializationError);
}

// Offsets in the encoded layout of sample(): the prefix is 24 bytes; tensor 0 (a scalar) follows.
constexpr size_t kFirstTensor = 24;

std::vector<std::byte> layout_bytes() {
  return encode_layout(layout_of(sample()));
}

std::string error_of(const std::vector<std::byte>& layout) {
  try {
    decode_layout(layout);
  } catch (const SerializationError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Serialization, BadFieldsAreNamedWithTheirOffset) {
  auto bad = layout_bytes();
  bad[0] = std::byte{'X'};
  EXPECT_THAT(error_of(bad), HasSubstr("bad magic"));
  bad = layout_bytes();
  bad[4] = std::byte{9};
  EXPECT_THAT(error_of(bad), HasSubstr("format version 9"));
  bad = layout_bytes();
  bad[kFirstTensor] = std::byte{77};
  EXPECT_THAT(error_of(bad), HasSubstr("unknown dtype code 77"));
  bad = layout_bytes();
  bad[kFirstTensor + 1] = std::byte{17};
  EXPECT_THAT(error_of(bad), HasSubstr("rank 17"));
  // Tensor 1: rank 1; its dimension follows its 8-byte head (tensor 0, a scalar, takes 24 bytes).
  bad = layout_bytes();
  const size_t dim = kFirstTensor + 24 + 8;
  const int64_t negative = -3;
  std::memcpy(bad.data() + dim, &negative, sizeof negative);
  EXPECT_THAT(error_of(bad), HasSubstr("negative dimension -3"));
  bad = layout_bytes();
  const int64_t four = 4;
  std::memcpy(bad.data() + dim, &four, sizeof four);
  EXPECT_THAT(error_of(bad), HasSubstr("24 bytes for 4 values of float64"));
  bad = layout_bytes();
  const uint64_t huge = uint64_t{1} << 50;
  std::memcpy(bad.data() + 16, &huge, sizeof huge);
  EXPECT_THAT(error_of(bad), HasSubstr("exceeds the limit"));
}

TEST(Serialization, RandomDamageNeverCrashes) {
  const std::vector<std::byte> good = serialize(sample());
  std::mt19937_64 rng(1);
  int accepted = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<std::byte> bytes = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f)
      bytes[rng() % bytes.size()] = static_cast<std::byte>(rng());
    try {
      const Element e = deserialize(bytes);
      ++accepted;  // damage in the payload's values is not detectable, and is fine
      EXPECT_EQ(e.size(), sample().size());
    } catch (const SerializationError&) {
    }
  }
  EXPECT_LT(accepted, 3000);
}

TEST(Serialization, RefusesInvalidTensors) {
  EXPECT_THROW(layout_of(Element{Tensor()}), SerializationError);
  EXPECT_THROW(layout_of(Element{Tensor(DType::kUInt8, Shape(17, 1))}), SerializationError);
}

}  // namespace
}  // namespace pipeprof::pipelines
