// PNG images written through stb_image_write (Debian's libstb): DLIO's png format, one 8-bit image
// a file.
#include <fmt/format.h>
#include <stb_image_write.h>

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

}  // namespace pipeprof::pipelines::formats
