// PNG images written through stb_image_write (Debian's libstb) and read through libpng: DLIO's png
// format, one 8-bit image a file.
#include <fmt/format.h>
#include <png.h>
#include <stb_image_write.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include <cstring>
#include <limits>

#include "formats/format_error.h"
#include "pipeprof/pipelines/formats.h"

namespace pipeprof::pipelines::formats {

std::vector<std::byte> encode_png(const Tensor& image) {
  const Shape& s = image.shape();
  if (image.dtype() != DType::kUInt8 || (s.size() != 2 && s.size() != 3)) {
    throw FormatError(fmt::format("png: expected a uint8 [height, width] or [height, width, "
                                  "channels] image, got {}{}",
                                  dtype_name(image.dtype()), shape_string(s)));
  }
  const int64_t channels = s.size() == 3 ? s[2] : 1;
  constexpr int64_t kMax = std::numeric_limits<int>::max() / 4;
  if (channels < 1 || channels > 4 || s[0] < 1 || s[1] < 1 || s[0] > kMax || s[1] > kMax ||
      s[1] * channels > kMax) {
    throw FormatError(fmt::format("png: cannot encode an image of shape {}", shape_string(s)));
  }
  std::vector<std::byte> out;
  auto sink = [](void* context, void* data, int size) {
    auto* bytes = static_cast<std::vector<std::byte>*>(context);
    const auto* p = static_cast<const std::byte*>(data);
    bytes->insert(bytes->end(), p, p + size);
  };
  if (stbi_write_png_to_func(sink, &out, static_cast<int>(s[1]), static_cast<int>(s[0]),
                             static_cast<int>(channels), image.data(),
                             static_cast<int>(s[1] * channels)) == 0) {
    throw FormatError(fmt::format("png: the image of shape {} could not be encoded", shape_string(s)));
  }
  return out;
}

namespace {

uint32_t big_endian_at(std::span<const std::byte> bytes, size_t at) {
  return static_cast<uint32_t>(bytes[at]) << 24 | static_cast<uint32_t>(bytes[at + 1]) << 16 |
         static_cast<uint32_t>(bytes[at + 2]) << 8 | static_cast<uint32_t>(bytes[at + 3]);
}

// Images of more pixels are refused whatever their bytes (PIL refuses beyond 179 million).
constexpr uint64_t kPngMostPixels = uint64_t{1} << 28;
// Deflate packs at most about 1032 bytes into one: an image whose stored rows could not come out
// of the file's bytes is a forged header.
constexpr uint64_t kDeflateMostRatio = 1032;
constexpr uint64_t kPngSmallBytes = uint64_t{64} << 20;

}  // namespace

Tensor decode_png(std::span<const std::byte> bytes, const std::string& where) {
  constexpr uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (bytes.size() < sizeof kSignature || std::memcmp(bytes.data(), kSignature, sizeof kSignature) != 0)
    throw FormatError(fmt::format("{}: offset 0: not a PNG image (no PNG signature)", where));
  // The header (IHDR, the first chunk) says how many bytes the image's rows take once inflated:
  // checked against what the file's bytes could inflate to before libpng allocates anything.
  if (bytes.size() >= 33 && std::memcmp(bytes.data() + 12, "IHDR", 4) == 0) {
    const uint64_t width = big_endian_at(bytes, 16), height = big_endian_at(bytes, 20);
    const auto depth = static_cast<uint64_t>(bytes[24]);
    const auto type = static_cast<unsigned>(bytes[25]);
    const uint64_t samples = type == 2 ? 3 : type == 4 ? 2 : type == 6 ? 4 : 1;  // 0 gray, 3 palette
    const uint64_t row_bytes = (width * samples * depth + 7) / 8 + 1;  // + the filter byte
    // (Each side at most 2^31 - 1, as PNG has it, so that the products below cannot overflow.)
    if (width > 0x7FFFFFFFU || height > 0x7FFFFFFFU || width * height > kPngMostPixels ||
        height * row_bytes > std::max(kPngSmallBytes, bytes.size() * kDeflateMostRatio)) {
      throw FormatError(fmt::format("{}: a {}x{} image is implausible for {} bytes of PNG data",
                                    where, width, height, bytes.size()));
    }
  }
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  // png_image_free on every way out (a no-op once finish_read has freed it).
  const std::unique_ptr<png_image, void (*)(png_image*)> guard(&image, png_image_free);
  if (png_image_begin_read_from_memory(&image, bytes.data(), bytes.size()) == 0)
    throw FormatError(fmt::format("{}: damaged PNG: {}", where, image.message));
  // The channels as stored (a palette expands to its colours); 8 bits a channel, or 16 where the
  // file has 16 (libpng's "linear" format). libpng's simplified API applies a file's colour
  // chunks (gAMA, sRGB, iCCP) as it converts: without them, the values are the stored ones.
  const bool color = (image.format & PNG_FORMAT_FLAG_COLOR) != 0;
  const bool alpha = (image.format & PNG_FORMAT_FLAG_ALPHA) != 0;
  const bool sixteen = (image.format & PNG_FORMAT_FLAG_LINEAR) != 0;
  image.format = (color ? (alpha ? PNG_FORMAT_RGBA : PNG_FORMAT_RGB)
                        : (alpha ? PNG_FORMAT_GA : PNG_FORMAT_GRAY)) |
                 (sixteen ? PNG_FORMAT_FLAG_LINEAR : 0U);
  const int64_t channels = PNG_IMAGE_PIXEL_CHANNELS(image.format);
  const uint64_t values = static_cast<uint64_t>(image.width) * image.height *
                          static_cast<uint64_t>(channels);
  if (image.width == 0 || image.height == 0 ||
      static_cast<uint64_t>(image.width) * image.height > kPngMostPixels) {
    throw FormatError(fmt::format("{}: a {}x{} image is implausible for {} bytes of PNG data",
                                  where, image.width, image.height, bytes.size()));
  }
  const Shape shape{static_cast<int64_t>(image.height), static_cast<int64_t>(image.width), channels};
  if (!sixteen) {
    Tensor out = Tensor::uninitialized(DType::kUInt8, shape);
    if (png_image_finish_read(&image, nullptr, out.mutable_data(), 0, nullptr) == 0)
      throw FormatError(fmt::format("{}: damaged PNG: {}", where, image.message));
    return out;
  }
  // 16 bits a channel, widened to int32 as the npy reader widens uint16: libpng writes them into
  // the tensor's second half, then each is widened forwards (value i is read before the int32 it
  // becomes overwrites it, and never overwrites a later one).
  Tensor out = Tensor::uninitialized(DType::kInt32, shape);
  std::byte* base = out.mutable_data();
  std::byte* narrow = base + values * 2;
  if (png_image_finish_read(&image, nullptr, narrow, 0, nullptr) == 0)
    throw FormatError(fmt::format("{}: damaged PNG: {}", where, image.message));
  for (uint64_t i = 0; i < values; ++i) {
    uint16_t v = 0;
    std::memcpy(&v, narrow + 2 * i, sizeof v);
    const auto wide = static_cast<int32_t>(v);
    std::memcpy(base + 4 * i, &wide, sizeof wide);
  }
  return out;
}

}  // namespace pipeprof::pipelines::formats
