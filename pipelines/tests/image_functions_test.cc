// The image functions: decode_jpeg, resize, random_crop and flip, alone and as an image pipeline.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include "formats/jpeg.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/functions.h"
#include "test_util.h"

namespace pipeprof::pipelines {
namespace {

Tensor image(int64_t h, int64_t w, int64_t c) {
  Tensor t(DType::kUInt8, {h, w, c});
  auto v = t.mutable_values<uint8_t>();
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<uint8_t>((i * 37 + i / 7) % 251);
  return t;
}

Tensor bytes_tensor(const std::vector<std::byte>& bytes) {
  Tensor t(DType::kUInt8, {static_cast<int64_t>(bytes.size())});
  std::memcpy(t.mutable_data(), bytes.data(), bytes.size());
  return t;
}

uint8_t at(const Tensor& t, int64_t y, int64_t x, int64_t k) {
  return t.values<uint8_t>()[static_cast<size_t>((y * t.shape()[1] + x) * t.shape()[2] + k)];
}

TEST(ImageFunctions, DecodeJpegTurnsBytesIntoAnImage) {
  const Tensor img = image(24, 32, 3);
  const Element in{bytes_tensor(formats::encode_jpeg(img, 95)), Tensor::scalar<int64_t>(7)};
  const Element out = make_function("decode_jpeg").fn(in);
  ASSERT_EQ(out.size(), 2U);
  EXPECT_EQ(out[0].shape(), (Shape{24, 32, 3}));
  EXPECT_EQ(out[0].dtype(), DType::kUInt8);
  EXPECT_EQ(out[1].as_int64(), 7) << "other components pass through";
  EXPECT_EQ(make_function("decode_jpeg", {{"channels", 1}}).fn(in)[0].shape(), (Shape{24, 32, 1}));
  EXPECT_THROW(make_function("decode_jpeg", {{"channels", 2}}), SpecError);
  // Damaged bytes: a InputDataError naming decode_jpeg.
  auto bad = formats::encode_jpeg(img, 95);
  bad.resize(bad.size() / 2);
  try {
    make_function("decode_jpeg").fn(Element{bytes_tensor(bad)});
    FAIL() << "no error";
  } catch (const InputDataError& e) {
    EXPECT_NE(std::string(e.what()).find("decode_jpeg"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_function("decode_jpeg").fn(scalar_element(3)), std::invalid_argument);
}

TEST(ImageFunctions, ResizeIsBilinearWithHalfPixelCentres) {
  Tensor two(DType::kUInt8, {2, 2, 1});
  auto v = two.mutable_values<uint8_t>();
  v[0] = 0;
  v[1] = 100;
  v[2] = 200;
  v[3] = 100;
  const Tensor out = make_function("resize", {{"height", 4}, {"width", 4}}).fn(Element{two})[0];
  EXPECT_EQ(out.shape(), (Shape{4, 4, 1}));
  // Corners keep their values; (0, 1) sits a quarter of the way from 0 to 100.
  EXPECT_EQ(at(out, 0, 0, 0), 0);
  EXPECT_EQ(at(out, 0, 1, 0), 25);
  EXPECT_EQ(at(out, 0, 3, 0), 100);
  EXPECT_EQ(at(out, 3, 0, 0), 200);
  EXPECT_EQ(at(out, 1, 1, 0), 63);  // 0.75*0.75*0 + 0.75*0.25*100 + 0.25*0.75*200 + 0.25*0.25*100
  const Tensor img = image(9, 11, 3);
  EXPECT_EQ(make_function("resize", {{"height", 9}, {"width", 11}}).fn(Element{img})[0], img);
  Tensor f(DType::kFloat32, {3, 3});
  EXPECT_EQ(make_function("resize", {{"height", 5}, {"width", 2}}).fn(Element{f})[0].shape(), (Shape{5, 2}));
  EXPECT_THROW(make_function("resize", {{"height", 0}, {"width", 2}}), SpecError);
}

TEST(ImageFunctions, RandomCropTakesABlockChosenByTheImageAndSeed) {
  const Tensor img = image(20, 30, 3);
  const Function crop = make_function("random_crop", {{"height", 8}, {"width", 10}, {"seed", 3}});
  const Tensor out = crop.fn(Element{img})[0];
  ASSERT_EQ(out.shape(), (Shape{8, 10, 3}));
  EXPECT_EQ(crop.fn(Element{img})[0], out) << "the same image and seed give the same crop";
  // The crop is a block of the image: find its offset.
  bool found = false;
  for (int64_t top = 0; top <= 12 && !found; ++top) {
    for (int64_t left = 0; left <= 20 && !found; ++left) {
      bool same = true;
      for (int64_t y = 0; y < 8 && same; ++y)
        for (int64_t x = 0; x < 10 && same; ++x)
          for (int64_t k = 0; k < 3 && same; ++k)
            same = at(out, y, x, k) == at(img, top + y, left + x, k);
      found = same;
    }
  }
  EXPECT_TRUE(found);
  std::set<std::string> crops;
  for (int seed = 0; seed < 10; ++seed) {
    crops.insert(element_to_json(
        make_function("random_crop", {{"height", 8}, {"width", 10}, {"seed", seed}}).fn(Element{img}))
                     .dump());
  }
  EXPECT_GT(crops.size(), 3U) << "seeds choose different offsets";
  EXPECT_THROW(make_function("random_crop", {{"height", 40}, {"width", 10}}).fn(Element{img}),
               std::invalid_argument);
}

TEST(ImageFunctions, FlipMirrorsAndHonoursTheProbability) {
  const Tensor img = image(5, 7, 3);
  const Tensor h = make_function("flip").fn(Element{img})[0];
  const Tensor v = make_function("flip", {{"direction", "vertical"}}).fn(Element{img})[0];
  for (int64_t y = 0; y < 5; ++y) {
    for (int64_t x = 0; x < 7; ++x) {
      for (int64_t k = 0; k < 3; ++k) {
        EXPECT_EQ(at(h, y, x, k), at(img, y, 6 - x, k));
        EXPECT_EQ(at(v, y, x, k), at(img, 4 - y, x, k));
      }
    }
  }
  EXPECT_EQ(make_function("flip").fn(Element{h})[0], img);
  EXPECT_EQ(make_function("flip", {{"probability", 0}}).fn(Element{img})[0], img);
  int flipped = 0;
  for (int i = 0; i < 200; ++i) {
    Tensor t = image(4, 4, 1);
    t.mutable_values<uint8_t>()[0] = static_cast<uint8_t>(i);
    t.mutable_values<uint8_t>()[5] = static_cast<uint8_t>(i * 7);
    if (!(make_function("flip", {{"probability", 0.5}, {"seed", 1}}).fn(Element{t})[0] == t)) ++flipped;
  }
  EXPECT_GT(flipped, 60);
  EXPECT_LT(flipped, 140);
  EXPECT_THROW(make_function("flip", {{"direction", "diagonal"}}), SpecError);
  EXPECT_THROW(make_function("flip", {{"probability", 2}}), SpecError);
}

TEST(ImageFunctions, AnImagePipelineFromJpegBytesToBatches) {
  std::vector<Element> jpegs;
  for (int i = 0; i < 6; ++i)
    jpegs.push_back(Element{bytes_tensor(formats::encode_jpeg(image(40 + i, 50 - i, 3), 90))});
  const Dataset d =
      generator(GeneratorFn([jpegs] {
        return std::function<std::optional<Element>()>([jpegs, i = size_t{0}]() mutable -> std::optional<Element> {
          if (i == jpegs.size()) return std::nullopt;
          return jpegs[i++];
        });
      }))
          .map(make_function("decode_jpeg"), {.parallelism = 2})
          .map(make_function("random_crop", {{"height", 32}, {"width", 32}}))
          .map(make_function("flip", {{"probability", 0.5}}))
          .map_and_batch(make_function("resize", {{"height", 16}, {"width", 16}}),
                         {.batch_size = 4, .parallelism = 2});
  const auto batches = d.collect();
  ASSERT_EQ(batches.size(), 2U);
  EXPECT_EQ(batches[0][0].shape(), (Shape{4, 16, 16, 3}));
  EXPECT_EQ(batches[1][0].shape(), (Shape{2, 16, 16, 3}));
}

TEST(ImageFunctions, NormalizeScalesPerChannel) {
  Tensor in(DType::kUInt8, {1, 2, 3});
  auto v = in.mutable_values<uint8_t>();
  const uint8_t px[6] = {0, 255, 51, 255, 0, 102};
  std::copy(px, px + 6, v.begin());
  const Function f = make_function(
      "normalize", {{"mean", {0.5, 0.0, 0.2}}, {"std", {0.5, 1.0, 0.2}}});
  const Element out = f.fn({in});
  ASSERT_EQ(out[0].dtype(), DType::kFloat32);
  ASSERT_EQ(out[0].shape(), (Shape{1, 2, 3}));
  const auto o = out[0].values<float>();
  EXPECT_NEAR(o[0], -1.0F, 1e-5);  // (0 / 255 - 0.5) / 0.5
  EXPECT_NEAR(o[1], 1.0F, 1e-5);   // (255 / 255 - 0) / 1
  EXPECT_NEAR(o[2], 0.0F, 1e-5);   // (51 / 255 - 0.2) / 0.2
  EXPECT_NEAR(o[3], 1.0F, 1e-5);
  EXPECT_NEAR(o[5], 1.0F, 1e-5);   // (102 / 255 - 0.2) / 0.2
  // One number for every channel; per-channel values need 3 channels; std must be positive.
  EXPECT_NEAR(make_function("normalize", {{"mean", 0.0}, {"std", 1.0}}).fn({in})[0].values<float>()[1],
              1.0F, 1e-6);
  EXPECT_THROW(f.fn({image(2, 2, 1)}), std::invalid_argument);
  EXPECT_THROW(make_function("normalize", {{"std", 0}}), SpecError);
  EXPECT_THROW(make_function("normalize", {{"mean", {1, 2}}}), SpecError);
}

TEST(ImageFunctions, ChainAppliesItsFunctionsInOrder) {
  const std::vector<std::byte> jpeg = formats::encode_jpeg(image(32, 32, 3), 90);
  const Function f = make_function(
      "chain", {{"fns", {{{"fn", "decode_jpeg"}, {"args", {{"channels", 3}}}},
                         {{"fn", "resize"}, {"args", {{"height", 8}, {"width", 4}}}},
                         {{"fn", "normalize"}}}}});
  const Element out = f.fn({bytes_tensor(jpeg), Tensor::scalar<int64_t>(7)});
  EXPECT_EQ(out[0].dtype(), DType::kFloat32);
  EXPECT_EQ(out[0].shape(), (Shape{8, 4, 3}));
  EXPECT_EQ(out[1].as_int64(), 7);  // the label passes through
  EXPECT_THROW(make_function("chain", {{"fns", nlohmann::json::array()}}), SpecError);
  EXPECT_THROW(make_function("chain", {{"fns", {{{"fn", "nope"}}}}}), SpecError);
  // A chain of cheap, known functions keeps a known timing; an image function makes it unknown.
  EXPECT_TRUE(make_function("chain", {{"fns", {{{"fn", "identity"}}}}}).sim.known);
  EXPECT_FALSE(f.sim.known);
}

}  // namespace
}  // namespace pipeprof::pipelines
