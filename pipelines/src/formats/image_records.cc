#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <stdexcept>

#include "formats/example.h"
#include "formats/jpeg.h"
#include "formats/tfrecord.h"
#include "pipeprof/pipelines/datagen.h"
#include "pipeprof/pipelines/tensor.h"

namespace pipeprof::pipelines::formats {
namespace {

namespace fs = std::filesystem;

// A smooth picture: two colours blended along a random direction, a low-frequency ripple, and
// grain; JPEG then spends on it about what it spends on a photograph.
Tensor picture(int64_t height, int64_t width, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(0.0F, 1.0F);
  std::normal_distribution<float> grain(0.0F, 6.0F);
  float a[3], b[3];
  for (int k = 0; k < 3; ++k) {
    a[k] = 255.0F * u(rng);
    b[k] = 255.0F * u(rng);
  }
  const float angle = 6.2831853F * u(rng), fx = 2.0F + 10.0F * u(rng), fy = 2.0F + 10.0F * u(rng);
  const float dx = std::cos(angle), dy = std::sin(angle);
  Tensor image(DType::kUInt8, {height, width, 3});
  auto* px = reinterpret_cast<uint8_t*>(image.mutable_data());
  for (int64_t y = 0; y < height; ++y) {
    const float ny = static_cast<float>(y) / static_cast<float>(height);
    for (int64_t x = 0; x < width; ++x) {
      const float nx = static_cast<float>(x) / static_cast<float>(width);
      const float t = std::clamp(0.5F + 0.5F * (dx * (nx - 0.5F) + dy * (ny - 0.5F)) * 2.0F, 0.0F, 1.0F);
      const float ripple = 20.0F * std::sin(fx * nx * 3.14159F) * std::sin(fy * ny * 3.14159F);
      for (int k = 0; k < 3; ++k) {
        const float v = a[k] * (1 - t) + b[k] * t + ripple + grain(rng);
        *px++ = static_cast<uint8_t>(std::clamp(v, 0.0F, 255.0F));
      }
    }
  }
  return image;
}

}  // namespace

ImageRecordsResult generate_image_records(const ImageRecords& r, const std::atomic<bool>* stop) {
  if (r.folder.empty()) throw std::invalid_argument("image records: no folder");
  if (r.shards < 1 || r.images_per_shard < 1 || r.height < 8 || r.width < 8 || r.quality < 1 ||
      r.quality > 100) {
    throw std::invalid_argument(fmt::format(
        "image records: {} shards of {} images of {}x{} at quality {}: expected at least one "
        "shard and image, at least 8x8 pixels and a quality in [1, 100]",
        r.shards, r.images_per_shard, r.height, r.width, r.quality));
  }
  std::error_code ec;
  fs::create_directories(r.folder, ec);
  if (ec) throw FormatError(fmt::format("{}: cannot create the folder: {}", r.folder, ec.message()));
  ImageRecordsResult out;
  for (int64_t i = 0; i < r.shards; ++i) {
    const std::string path =
        (fs::path(r.folder) / fmt::format("train-{:05}-of-{:05}.tfrecord", i, r.shards)).string();
    if (fs::exists(path, ec)) {
      out.files.push_back(path);
      const auto size = fs::file_size(path, ec);
      if (!ec) out.bytes += size;
      continue;
    }
    const std::string tmp = temporary_name(path);
    try {
      std::mt19937_64 rng(r.seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(i));
      TFRecordWriter w(tmp);
      for (int64_t k = 0; k < r.images_per_shard; ++k) {
        if (stop != nullptr && stop->load()) {  // interrupted: the complete shards only
          w.close();
          fs::remove(tmp, ec);
          return out;
        }
        const std::vector<std::byte> jpeg = encode_jpeg(picture(r.height, r.width, rng), r.quality);
        const auto label = static_cast<int64_t>(rng() % 1000);
        w.write(encode_example(
            {{"image/encoded",
              FeatureValue{.kind = FeatureKind::kBytes,
                           .bytes = {std::string(reinterpret_cast<const char*>(jpeg.data()), jpeg.size())}}},
             {"image/class/label", FeatureValue{.kind = FeatureKind::kInt64, .int64s = {label}}}}));
      }
      w.close();
      fs::rename(tmp, path);
    } catch (...) {
      fs::remove(tmp, ec);
      throw;
    }
    out.files.push_back(path);
    const auto size = fs::file_size(path, ec);
    if (!ec) out.bytes += size;
    ++out.shards_written;
  }
  return out;
}

}  // namespace pipeprof::pipelines::formats
