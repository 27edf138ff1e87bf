#include "formats/jpeg.h"

#include <fmt/format.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "formats/format_error.h"
#include "formats/mapped_file.h"

namespace pipeprof::pipelines::formats {
namespace {

struct TjCloser {
  void operator()(void* h) const { tjDestroy(h); }
};
using TjPtr = std::unique_ptr<void, TjCloser>;

constexpr uint64_t kMaxRatio = 1024;
constexpr uint64_t kMinLimit = uint64_t{64} << 20;

std::string tj_error(void* handle) {
  return tjGetErrorStr2(handle);
}

}  // namespace

Tensor decode_jpeg(std::span<const std::byte> bytes, int channels, const std::string& where) {
  if (channels != 0 && channels != 1 && channels != 3)
    throw std::invalid_argument("decode_jpeg: channels must be 0, 1 or 3");
  if (bytes.size() < 4 || bytes[0] != std::byte{0xFF} || bytes[1] != std::byte{0xD8})
    throw FormatError(fmt::format("{}: offset 0: not a JPEG image (no SOI marker)", where));
  TjPtr handle(tjInitDecompress());
  if (!handle) throw FormatError(fmt::format("{}: {}", where, tj_error(nullptr)));
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  const auto size = static_cast<unsigned long>(bytes.size());  // NOLINT(google-runtime-int)
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(handle.get(), data, size, &width, &height, &subsamp, &colorspace) != 0)
    throw FormatError(fmt::format("{}: bad JPEG header: {}", where, tj_error(handle.get())));
  if (channels == 0) channels = colorspace == TJCS_GRAY ? 1 : 3;
  const uint64_t out_bytes =
      static_cast<uint64_t>(width) * static_cast<uint64_t>(height) * static_cast<uint64_t>(channels);
  if (width <= 0 || height <= 0 ||
      out_bytes > std::max<uint64_t>(kMinLimit, bytes.size() * kMaxRatio)) {
    throw FormatError(fmt::format(
        "{}: a {}x{} image is implausible for {} bytes of JPEG data", where, width, height,
        bytes.size()));
  }
  Tensor out(DType::kUInt8, Shape{height, width, channels});
  const int format = channels == 1 ? TJPF_GRAY : TJPF_RGB;
  if (tjDecompress2(handle.get(), data, size, reinterpret_cast<unsigned char*>(out.mutable_data()),
                    width, 0, height, format, TJFLAG_STOPONWARNING) != 0) {
    throw FormatError(fmt::format("{}: corrupt JPEG data ({}x{}): {}", where, width, height,
                                  tj_error(handle.get())));
  }
  return out;
}

std::vector<std::byte> encode_jpeg(const Tensor& image, int quality) {
  if (image.dtype() != DType::kUInt8 || (image.rank() != 2 && image.rank() != 3))
    throw std::invalid_argument("encode_jpeg: expected a uint8 [height, width, channels] image, got " +
                                std::string(dtype_name(image.dtype())) + shape_string(image.shape()));
  const int64_t channels = image.rank() == 2 ? 1 : image.shape()[2];
  if (channels != 1 && channels != 3)
    throw std::invalid_argument("encode_jpeg: 1 or 3 channels, got " + std::to_string(channels));
  const int64_t height = image.shape()[0], width = image.shape()[1];
  if (height < 1 || width < 1 || height > 65535 || width > 65535)
    throw std::invalid_argument("encode_jpeg: image of " + shape_string(image.shape()) +
                                " (each side 1..65535)");
  TjPtr handle(tjInitCompress());
  if (!handle) throw std::runtime_error("encode_jpeg: " + tj_error(nullptr));
  unsigned char* out = nullptr;
  unsigned long out_size = 0;  // NOLINT(google-runtime-int): turbojpeg's type
  const int rc = tjCompress2(handle.get(), reinterpret_cast<const unsigned char*>(image.data()),
                             static_cast<int>(width), 0, static_cast<int>(height),
                             channels == 1 ? TJPF_GRAY : TJPF_RGB, &out, &out_size,
                             channels == 1 ? TJSAMP_GRAY : TJSAMP_420,
                             std::clamp(quality, 1, 100), 0);
  if (rc != 0) {
    const std::string msg = tj_error(handle.get());
    tjFree(out);
    throw std::runtime_error("encode_jpeg: " + msg);
  }
  std::vector<std::byte> bytes(out_size);
  std::memcpy(bytes.data(), out, out_size);
  tjFree(out);
  return bytes;
}

void write_jpeg(const std::string& path, const Tensor& image, int quality) {
  write_file(path, encode_jpeg(image, quality));
}

}  // namespace pipeprof::pipelines::formats
