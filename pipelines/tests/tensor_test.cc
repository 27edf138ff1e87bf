// Tensor and Element: dtypes and shapes, zero-copy views (slices, rows, reshapes) with copy on
// write, stacking, equality, JSON conversion and wrapping foreign memory.
#include "pipeprof/pipelines/tensor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "test_util.h"

namespace pipeprof::pipelines {
namespace {

using ::testing::Each;
using ::testing::ElementsAre;
using testing::values;

TEST(DType, NamesSizesAndParsing) {
  EXPECT_EQ(dtype_size(DType::kBool), 1U);
  EXPECT_EQ(dtype_size(DType::kInt32), 4U);
  EXPECT_EQ(dtype_size(DType::kFloat64), 8U);
  for (DType d : {DType::kBool, DType::kUInt8, DType::kInt32, DType::kInt64, DType::kFloat32,
                  DType::kFloat64}) {
    EXPECT_EQ(parse_dtype(dtype_name(d)), d) << dtype_name(d);
  }
  EXPECT_THROW(parse_dtype("float16"), std::invalid_argument);
}

TEST(Shape, CountAndText) {
  EXPECT_EQ(num_elements({}), 1);
  EXPECT_EQ(num_elements({4, 0, 3}), 0);
  EXPECT_EQ(num_elements({4, 1000000, 3}), 12000000);
  EXPECT_EQ(shape_string({4, 1000000, 3}), "[4, 1000000, 3]");
  EXPECT_EQ(shape_string({}), "[]");
  EXPECT_THROW(num_elements({2, -1}), std::invalid_argument);
}

TEST(Tensor, NewTensorsAreZeroFilled) {
  for (Shape shape : {Shape{3}, Shape{100, 10}}) {  // a small and a large (aligned) buffer
    Tensor t(DType::kFloat32, shape);
    EXPECT_TRUE(t.valid());
    EXPECT_EQ(t.nbytes(), static_cast<size_t>(num_elements(shape)) * 4);
    EXPECT_THAT(t.values<float>(), Each(0.0F));
  }
  EXPECT_EQ(reinterpret_cast<uintptr_t>(Tensor(DType::kUInt8, {1000}).data()) % 64, 0U);
  EXPECT_FALSE(Tensor().valid());
}

TEST(Tensor, ScalarsAndVectors) {
  const Tensor s = Tensor::scalar<int32_t>(-7);
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.num_elements(), 1);
  EXPECT_EQ(s.as_int64(), -7);
  EXPECT_EQ(s.as_double(), -7.0);
  const Tensor v = Tensor::from_vector<double>({1.5, 2.5, 3.5, 4.5, 5.5, 6.5}, {2, 3});
  EXPECT_EQ(v.shape(), (Shape{2, 3}));
  EXPECT_THAT(v.values<double>(), ElementsAre(1.5, 2.5, 3.5, 4.5, 5.5, 6.5));
  EXPECT_THROW(v.as_int64(), std::invalid_argument);
  EXPECT_THROW(v.values<float>(), std::invalid_argument) << "wrong dtype";
}

TEST(Tensor, SlicesRowsAndReshapesShareTheBuffer) {
  const Tensor t = Tensor::from_vector<int64_t>({0, 1, 2, 3, 4, 5, 6, 7}, {4, 2});
  const Tensor middle = t.slice(1, 3);
  EXPECT_EQ(middle.shape(), (Shape{2, 2}));
  EXPECT_THAT(values(middle), ElementsAre(2, 3, 4, 5));
  EXPECT_TRUE(middle.shares_buffer_with(t));
  EXPECT_EQ(middle.data(), t.data() + 2 * sizeof(int64_t));

  const Tensor row = t[3];
  EXPECT_EQ(row.shape(), Shape{2});
  EXPECT_THAT(values(row), ElementsAre(6, 7));
  EXPECT_TRUE(row.shares_buffer_with(t));

  const Tensor flat = t.reshape({8});
  EXPECT_TRUE(flat.shares_buffer_with(t));
  EXPECT_EQ(flat.data(), t.data());
  EXPECT_THAT(values(flat[5].reshape({1})), ElementsAre(5));

  EXPECT_FALSE(
      t.shares_buffer_with(Tensor::from_vector<int64_t>({0, 1, 2, 3, 4, 5, 6, 7}, {4, 2})));
  EXPECT_FALSE(Tensor().shares_buffer_with(Tensor()));
}

TEST(Tensor, TheOriginTravelsWithViewsAndCopiesButNotIntoAStack) {
  Tensor t = Tensor::from_vector<int64_t>({0, 1, 2, 3, 4, 5, 6, 7}, {4, 2});
  EXPECT_EQ(t.origin(), "");
  const auto file = std::make_shared<const std::string>("data/a.tfrecord");
  t.set_origin(file, 4096);
  EXPECT_EQ(t.origin(), "data/a.tfrecord, record at byte 4096");
  Tensor copy = t;
  copy.mutable_data();  // copy on write keeps it
  EXPECT_EQ(copy.origin(), t.origin());
  EXPECT_EQ(t.slice(1, 3).origin(), t.origin());
  EXPECT_EQ(t[2].origin(), t.origin());
  EXPECT_EQ(t.reshape({8}).origin(), t.origin());
  Tensor tiny = Tensor::from_vector<int64_t>({1, 2}, {2});  // inline bytes: slices are copies
  tiny.set_origin(file);
  EXPECT_EQ(tiny[1].origin(), "data/a.tfrecord");
  const std::vector<Tensor> rows{t[0], t[1]};
  EXPECT_EQ(Tensor::stack(rows).origin(), "") << "a batch holds many records";
}

TEST(Tensor, InvalidViews) {
  const Tensor t = Tensor::from_vector<int64_t>({0, 1, 2, 3});
  EXPECT_THROW(t.slice(2, 5), std::out_of_range);
  EXPECT_THROW(t.slice(3, 2), std::out_of_range);
  EXPECT_THROW(t.slice(-1, 2), std::out_of_range);
  EXPECT_THROW(t[4], std::out_of_range);
  EXPECT_THROW(Tensor::scalar<int64_t>(1).slice(0, 1), std::invalid_argument);
  EXPECT_THROW(t.reshape({3}), std::invalid_argument);
  EXPECT_EQ(t.slice(2, 2).num_elements(), 0);
}

TEST(Tensor, CopyOnWrite) {
  const Tensor original = Tensor::from_vector<int64_t>({1, 2, 3, 4}, {2, 2});
  Tensor copy = original;
  EXPECT_TRUE(copy.shares_buffer_with(original));
  copy.mutable_values<int64_t>()[0] = 100;
  EXPECT_FALSE(copy.shares_buffer_with(original)) << "writing to a shared buffer copies it first";
  EXPECT_THAT(values(original), ElementsAre(1, 2, 3, 4));
  EXPECT_THAT(values(copy), ElementsAre(100, 2, 3, 4));

  Tensor row = original[1];
  row.mutable_values<int64_t>()[1] = -4;
  EXPECT_THAT(values(row), ElementsAre(3, -4));
  EXPECT_THAT(values(original), ElementsAre(1, 2, 3, 4)) << "a view's write must not leak back";

  // A sole owner writes in place.
  Tensor alone = Tensor::from_vector<int64_t>({5, 6});
  const std::byte* before = alone.data();
  alone.mutable_values<int64_t>()[1] = 60;
  EXPECT_EQ(alone.data(), before);
  EXPECT_THAT(values(alone), ElementsAre(5, 60));
}

TEST(Tensor, SmallTensorsKeepTheirValuesInline) {
  // Up to kInlineBytes the values live in the tensor itself: copies and slices copy the bytes.
  const Tensor small = Tensor::from_vector<int64_t>({1, 2});
  ASSERT_LE(small.nbytes(), Tensor::kInlineBytes);
  Tensor copy = small;
  EXPECT_FALSE(copy.shares_buffer_with(small));
  EXPECT_EQ(copy, small);
  copy.mutable_values<int64_t>()[0] = 7;
  EXPECT_THAT(values(small), ElementsAre(1, 2));
  EXPECT_THAT(values(copy), ElementsAre(7, 2));
  EXPECT_THAT(values(small[1]), ElementsAre(2));
  EXPECT_THAT(values(small.slice(0, 1)), ElementsAre(1));
  EXPECT_THAT(values(small.reshape({2, 1})[1]), ElementsAre(2));
  EXPECT_TRUE(Tensor(DType::kFloat32, {0}).valid());
}

TEST(Tensor, StackAddsAFirstDimension) {
  const Tensor a = Tensor::from_vector<float>({1, 2});
  const Tensor b = Tensor::from_vector<float>({3, 4});
  const Tensor parts[] = {a, b, a};
  const Tensor s = Tensor::stack(parts);
  EXPECT_EQ(s.shape(), (Shape{3, 2}));
  EXPECT_THAT(s.values<float>(), ElementsAre(1, 2, 3, 4, 1, 2));
  EXPECT_FALSE(s.shares_buffer_with(a));

  const Tensor scalars[] = {Tensor::scalar<int64_t>(4), Tensor::scalar<int64_t>(5)};
  EXPECT_THAT(values(Tensor::stack(scalars)), ElementsAre(4, 5));

  const Tensor mixed_dtype[] = {a, Tensor::from_vector<double>({1, 2})};
  EXPECT_THROW(Tensor::stack(mixed_dtype), std::invalid_argument);
  const Tensor mixed_shape[] = {a, Tensor::from_vector<float>({1, 2, 3})};
  EXPECT_THROW(Tensor::stack(mixed_shape), std::invalid_argument);
  EXPECT_THROW(Tensor::stack({}), std::invalid_argument);
}

TEST(Tensor, EqualityComparesDtypeShapeAndValues) {
  const Tensor a = Tensor::from_vector<int64_t>({1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(a, Tensor::from_vector<int64_t>({1, 2, 3, 4}, {2, 2}));
  EXPECT_FALSE(a == Tensor::from_vector<int64_t>({1, 2, 3, 5}, {2, 2}));
  EXPECT_FALSE(a == a.reshape({4}));
  EXPECT_FALSE(a == Tensor::from_vector<int32_t>({1, 2, 3, 4}, {2, 2}));
  EXPECT_EQ(Tensor(), Tensor());
  EXPECT_FALSE(Tensor() == Tensor::scalar<int64_t>(5)) << "an invalid tensor has no values";
  EXPECT_FALSE(Tensor::scalar<int64_t>(0) == Tensor());
}

TEST(Tensor, JsonRoundTrip) {
  const Tensor t = Tensor::from_vector<int64_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(t.to_json(), nlohmann::json::parse("[[1,2,3],[4,5,6]]"));
  EXPECT_EQ(Tensor::from_json(t.to_json()), t);
  EXPECT_EQ(Tensor::scalar<double>(2.5).to_json(), nlohmann::json(2.5));
  EXPECT_EQ(Tensor().to_json(), nlohmann::json(nullptr));

  EXPECT_EQ(Tensor::from_json(nlohmann::json::parse("[1, 2.5]")).dtype(), DType::kFloat64);
  EXPECT_EQ(Tensor::from_json(nlohmann::json::parse("[[1], [2]]")).dtype(), DType::kInt64);
  EXPECT_EQ(Tensor::from_json(nlohmann::json::parse("[true, false]")).dtype(), DType::kBool);
  EXPECT_EQ(Tensor::from_json(nlohmann::json(true)).dtype(), DType::kBool);
  EXPECT_EQ(Tensor::from_json(nlohmann::json::parse("[]")).shape(), Shape{0});
  const DType f32 = DType::kFloat32;
  const Tensor f = Tensor::from_json(nlohmann::json::parse("[[1, 2], [3, 4]]"), &f32);
  EXPECT_EQ(f.dtype(), DType::kFloat32);
  EXPECT_THAT(f.values<float>(), ElementsAre(1, 2, 3, 4));
  // Large integers keep their exact value.
  EXPECT_EQ(Tensor::from_json(nlohmann::json(int64_t{9007199254740993})).as_int64(),
            int64_t{9007199254740993});
}

TEST(Tensor, RaggedOrNonNumericJsonIsRejected) {
  for (const char* text : {"[[1, 2], [3]]", "[[1, 2], 3]", "[1, [2, 3]]", "[[1, [2]], [3, 4]]",
                           "[\"a\"]", "{\"x\": 1}"}) {
    EXPECT_THROW(Tensor::from_json(nlohmann::json::parse(text)), std::invalid_argument) << text;
  }
}

TEST(Tensor, WrapKeepsTheOwnerAliveUntilTheLastView) {
  bool released = false;
  auto* raw = new int64_t[4]{10, 20, 30, 40};
  std::shared_ptr<std::byte> owner(reinterpret_cast<std::byte*>(raw), [&](std::byte* p) {
    released = true;
    delete[] reinterpret_cast<int64_t*>(p);
  });
  Tensor row;
  {
    Tensor t = Tensor::wrap(DType::kInt64, {2, 2}, std::move(owner));
    EXPECT_THAT(values(t), ElementsAre(10, 20, 30, 40));
    row = t[1];
  }
  EXPECT_FALSE(released);
  EXPECT_THAT(values(row), ElementsAre(30, 40));
  row = Tensor();
  EXPECT_TRUE(released);
  EXPECT_THROW(Tensor::wrap(DType::kInt64, {1}, nullptr), std::invalid_argument);
}

TEST(Element, JsonAndDebugText) {
  const Element one{Tensor::scalar<int64_t>(3)};
  const Element pair{Tensor::from_vector<int64_t>({1, 2}), Tensor::scalar<float>(0.5F)};
  EXPECT_EQ(element_to_json(one), nlohmann::json(3));
  EXPECT_EQ(element_to_json(pair), nlohmann::json::parse("[[1,2],0.5]"));
  EXPECT_EQ(element_to_json_full(pair),
            nlohmann::json::parse(R"([{"dtype":"int64","shape":[2],"value":[1,2]},
                                      {"dtype":"float32","shape":[],"value":0.5}])"));
  EXPECT_EQ(element_debug_string(pair), "(int64[2]=[1,2], float32[]=0.5)");
  EXPECT_EQ(element_debug_string({Tensor(DType::kUInt8, {32})}), "(uint8[32])");
  const Element nine = scalar_element(9);
  ASSERT_EQ(nine.size(), 1U);
  EXPECT_EQ(nine[0].dtype(), DType::kInt64);
  EXPECT_EQ(nine[0].as_int64(), 9);
}

// A huge buffer freed is kept for the next tensor of its size (no fresh mapping to fault in and
// zero: the Ray generator's 48 MB elements), zeroed again for a zero-filled tensor, not for an
// uninitialized one, and never shared by two live tensors.
TEST(Tensor, HugeBuffersAreReusedAndZeroedForZeroFilledTensors) {
  const Shape shape{3, 1000, 1000};  // 12 MB of float32
  uintptr_t first = 0;  // the address only: the tensor goes
  {
    Tensor t(DType::kFloat32, shape);
    first = reinterpret_cast<uintptr_t>(t.data());
    std::memset(t.mutable_data(), 0xab, t.nbytes());
  }
  {
    Tensor again(DType::kFloat32, shape);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(again.data()), first) << "the freed buffer was not reused";
    const auto* bytes = again.data();
    EXPECT_TRUE(std::all_of(bytes, bytes + again.nbytes(), [](std::byte b) { return b == std::byte{0}; }))
        << "a reused buffer was not zeroed";
    std::memset(again.mutable_data(), 0xcd, again.nbytes());
    Tensor other(DType::kFloat32, shape);  // while `again` lives: another buffer
    EXPECT_NE(other.data(), again.data());
  }
  Tensor raw = Tensor::uninitialized(DType::kFloat32, shape);
  EXPECT_EQ(raw.nbytes(), size_t{12'000'000});
  std::memset(raw.mutable_data(), 1, raw.nbytes());
  EXPECT_EQ(raw.data()[raw.nbytes() - 1], std::byte{1});
}

// The kernel's flags of the mapping that holds `p` (/proc/self/smaps' VmFlags), empty if none.
std::string mapping_flags(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  std::string line;
  while (std::getline(smaps, line)) {
    uintptr_t begin = 0;
    uintptr_t end = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = begin <= at && at < end;
    } else if (inside && line.starts_with("VmFlags:")) {
      return line.substr(8) + " ";
    }
  }
  return {};
}

// A kept huge buffer is the parent's alone: a forked child does not inherit it (it would write its
// own tensors into pages it shares with the parent, a copy-on-write fault per 4 KiB page, and the
// parent would pay the same), while a live tensor's buffer is inherited as any memory is, also
// one that was kept before it was taken again. (The kernel's "dc" flag: not copied on fork. The
// child does not look for the kept buffer itself: a sanitizer's runtime may map its own memory
// there in the child.)
TEST(Tensor, AForkedChildInheritsLiveHugeBuffersButNotKeptOnes) {
  const Shape shape{2, 1000, 1000};  // 8 MB of float32
  const std::byte* first = nullptr;
  {
    Tensor freed(DType::kFloat32, shape);
    first = freed.data();
  }
  Tensor live(DType::kFloat32, shape);  // the kept buffer, taken again
  ASSERT_EQ(live.data(), first);
  std::memset(live.mutable_data(), 0x5a, live.nbytes());
  const std::byte* kept = nullptr;
  {
    Tensor freed(DType::kFloat32, shape);
    std::memset(freed.mutable_data(), 1, freed.nbytes());
    kept = freed.data();
  }
  const std::string kept_flags = mapping_flags(kept);
  ASSERT_FALSE(kept_flags.empty()) << "the kept buffer is not mapped";
  EXPECT_NE(kept_flags.find(" dc "), std::string::npos)
      << "a kept buffer would be inherited by a forked child: " << kept_flags;
  EXPECT_EQ(mapping_flags(live.data()).find(" dc "), std::string::npos)
      << "a live tensor would not be inherited: " << mapping_flags(live.data());
  const pid_t child = ::fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    const bool seen = live.data()[0] == std::byte{0x5a} &&
                      live.data()[live.nbytes() - 1] == std::byte{0x5a};
    ::_exit(seen ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the child did not inherit a live tensor: " << status;
  // The parent still has it, and takes it for its next tensor of that size.
  Tensor again(DType::kFloat32, shape);
  EXPECT_EQ(again.data(), kept);
}

}  // namespace
}  // namespace pipeprof::pipelines
