#include "image_functions.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "formats/format_error.h"
#include "formats/jpeg.h"
#include "pipeprof/pipelines/errors.h"

namespace pipeprof::pipelines::image {
namespace {

Function make(std::string name, const nlohmann::json& args, decltype(Function::fn) fn) {
  Function c;
  c.sim = {.known = false, .unknown = "image work of unknown duration"};
  c.name = std::move(name);
  c.args = args.is_null() ? nlohmann::json::object() : args;
  c.serializable = true;
  c.fn = std::move(fn);
  return c;
}

// The image of an element: component 0, uint8 or float32, [height, width] or [height, width, c].
const Tensor& image_of(const Element& e, const char* fn) {
  if (e.empty()) throw std::invalid_argument(fmt::format("{}: the element has no components", fn));
  const Tensor& t = e[0];
  if ((t.dtype() != DType::kUInt8 && t.dtype() != DType::kFloat32) ||
      (t.rank() != 2 && t.rank() != 3)) {
    throw std::invalid_argument(fmt::format(
        "{}: expected an image (uint8 or float32 [height, width(, channels)]), got {}{}", fn,
        dtype_name(t.dtype()), shape_string(t.shape())));
  }
  return t;
}

uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// A value that depends on the seed and the image (its shape and some of its bytes), so a random
// choice is the same for the same image whatever the order or parallelism of the calls.
uint64_t image_hash(const Tensor& t, uint64_t seed) {
  uint64_t h = mix(seed);
  for (int64_t d : t.shape())
    h = mix(h ^ static_cast<uint64_t>(d));
  const size_t n = t.nbytes();
  const auto* p = t.data();
  for (size_t i = 0; i < 16 && n > 0; ++i) {
    const size_t at = (n - 1) * i / 15;
    h = mix(h ^ std::to_integer<uint64_t>(p[at]) ^ (static_cast<uint64_t>(i) << 8));
  }
  return h;
}

// Rows [top, top + height) and columns [left, left + width) of an image, copied.
Tensor crop(const Tensor& t, int64_t top, int64_t left, int64_t height, int64_t width) {
  const int64_t w = t.shape()[1];
  const int64_t c = t.rank() == 3 ? t.shape()[2] : 1;
  Shape shape{height, width};
  if (t.rank() == 3) shape.push_back(c);
  Tensor out(t.dtype(), shape);
  const size_t px = static_cast<size_t>(c) * dtype_size(t.dtype());
  std::byte* dst = out.mutable_data();
  for (int64_t y = 0; y < height; ++y) {
    std::memcpy(dst + static_cast<size_t>(y * width) * px,
                t.data() + static_cast<size_t>((top + y) * w + left) * px,
                static_cast<size_t>(width) * px);
  }
  return out;
}

template <typename T>
void bilinear(const Tensor& in, Tensor& out) {
  const int64_t h = in.shape()[0], w = in.shape()[1];
  const int64_t c = in.rank() == 3 ? in.shape()[2] : 1;
  const int64_t oh = out.shape()[0], ow = out.shape()[1];
  const auto src = in.values<T>();
  auto dst = out.mutable_values<T>();
  const double sy = static_cast<double>(h) / static_cast<double>(oh);
  const double sx = static_cast<double>(w) / static_cast<double>(ow);
  for (int64_t y = 0; y < oh; ++y) {
    // Half-pixel centres, as tf.image.resize (bilinear, no antialias).
    const double fy = std::clamp((static_cast<double>(y) + 0.5) * sy - 0.5, 0.0, static_cast<double>(h - 1));
    const auto y0 = static_cast<int64_t>(fy);
    const int64_t y1 = std::min(y0 + 1, h - 1);
    const double wy = fy - static_cast<double>(y0);
    for (int64_t x = 0; x < ow; ++x) {
      const double fx = std::clamp((static_cast<double>(x) + 0.5) * sx - 0.5, 0.0, static_cast<double>(w - 1));
      const auto x0 = static_cast<int64_t>(fx);
      const int64_t x1 = std::min(x0 + 1, w - 1);
      const double wx = fx - static_cast<double>(x0);
      for (int64_t k = 0; k < c; ++k) {
        auto at = [&](int64_t yy, int64_t xx) {
          return static_cast<double>(src[static_cast<size_t>((yy * w + xx) * c + k)]);
        };
        const double v = (1 - wy) * ((1 - wx) * at(y0, x0) + wx * at(y0, x1)) +
                         wy * ((1 - wx) * at(y1, x0) + wx * at(y1, x1));
        if constexpr (std::is_integral_v<T>) {
          dst[static_cast<size_t>((y * ow + x) * c + k)] =
              static_cast<T>(std::clamp(std::lround(v), 0L, 255L));
        } else {
          dst[static_cast<size_t>((y * ow + x) * c + k)] = static_cast<T>(v);
        }
      }
    }
  }
}

int64_t size_arg(const spec_detail::Fields& f, const char* key) {
  return f.integer(key, std::nullopt, 1, 1 << 16);
}

}  // namespace

Function decode_jpeg(const spec_detail::Fields& f, const nlohmann::json& args) {
  f.only({"channels"});
  const int64_t channels = f.integer("channels", 0, 0, 3);
  if (channels == 2) f.fail("channels", "0 (as stored), 1 or 3", 2);
  return make("decode_jpeg", args, [channels](Element e) {
    if (e.empty() || e[0].dtype() != DType::kUInt8 || e[0].rank() != 1) {
      throw std::invalid_argument(fmt::format(
          "decode_jpeg: expected the JPEG's bytes (a uint8 vector), got {}",
          e.empty() ? std::string("no component")
                    : std::string(dtype_name(e[0].dtype())) + shape_string(e[0].shape())));
    }
    const Tensor& bytes = e[0];
    const std::string origin = bytes.origin();  // the file (and record) the bytes came from
    try {
      Tensor image = formats::decode_jpeg({bytes.data(), bytes.nbytes()},
                                          static_cast<int>(channels),
                                          origin.empty() ? "element" : origin);
      image.copy_origin_from(bytes);
      e[0] = std::move(image);
    } catch (const formats::FormatError& ex) {
      throw InputDataError("decode_jpeg", ex.what());
    }
    return e;
  });
}

Function resize(const spec_detail::Fields& f, const nlohmann::json& args) {
  f.only({"height", "width"});
  const int64_t height = size_arg(f, "height"), width = size_arg(f, "width");
  return make("resize", args, [height, width](Element e) {
    const Tensor& in = image_of(e, "resize");
    if (in.shape()[0] < 1 || in.shape()[1] < 1)
      throw std::invalid_argument("resize: an empty image " + shape_string(in.shape()));
    Shape shape{height, width};
    if (in.rank() == 3) shape.push_back(in.shape()[2]);
    Tensor out(in.dtype(), shape);
    if (in.dtype() == DType::kUInt8) {
      bilinear<uint8_t>(in, out);
    } else {
      bilinear<float>(in, out);
    }
    e[0] = std::move(out);
    return e;
  });
}

Function random_crop(const spec_detail::Fields& f, const nlohmann::json& args) {
  f.only({"height", "width", "seed"});
  const int64_t height = size_arg(f, "height"), width = size_arg(f, "width");
  const auto seed = static_cast<uint64_t>(f.integer("seed", 0, 0));
  return make("random_crop", args, [height, width, seed](Element e) {
    const Tensor& in = image_of(e, "random_crop");
    if (in.shape()[0] < height || in.shape()[1] < width) {
      throw std::invalid_argument(fmt::format("random_crop: a {}x{} crop of a {} image", height,
                                              width, shape_string(in.shape())));
    }
    const uint64_t h = image_hash(in, seed);
    const auto top = static_cast<int64_t>(h % static_cast<uint64_t>(in.shape()[0] - height + 1));
    const auto left =
        static_cast<int64_t>(mix(h) % static_cast<uint64_t>(in.shape()[1] - width + 1));
    e[0] = crop(in, top, left, height, width);
    return e;
  });
}

Function flip(const spec_detail::Fields& f, const nlohmann::json& args) {
  f.only({"direction", "probability", "seed"});
  const std::string direction = f.string("direction", std::string("horizontal"));
  if (direction != "horizontal" && direction != "vertical")
    f.fail("direction", "\"horizontal\" or \"vertical\"", direction);
  const double probability = f.number("probability", 1.0, 0);
  if (probability > 1) f.fail("probability", "a number in [0, 1]", probability);
  const auto seed = static_cast<uint64_t>(f.integer("seed", 0, 0));
  const bool horizontal = direction == "horizontal";
  return make("flip", args, [horizontal, probability, seed](Element e) {
    const Tensor& in = image_of(e, "flip");
    if (probability < 1) {
      const double u = static_cast<double>(image_hash(in, seed) >> 11) * 0x1.0p-53;
      if (u >= probability) return e;
    }
    const int64_t h = in.shape()[0], w = in.shape()[1];
    const int64_t c = in.rank() == 3 ? in.shape()[2] : 1;
    const size_t px = static_cast<size_t>(c) * dtype_size(in.dtype());
    Tensor out(in.dtype(), in.shape());
    std::byte* dst = out.mutable_data();
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t x = 0; x < w; ++x) {
        const int64_t sy = horizontal ? y : h - 1 - y;
        const int64_t sx = horizontal ? w - 1 - x : x;
        std::memcpy(dst + static_cast<size_t>(y * w + x) * px,
                    in.data() + static_cast<size_t>(sy * w + sx) * px, px);
      }
    }
    e[0] = std::move(out);
    return e;
  });
}

Function normalize(const spec_detail::Fields& f, const nlohmann::json& args) {
  f.only({"mean", "std"});
  // A number for every channel, or one per channel (3).
  auto per_channel = [&f](const char* key, float fallback) {
    std::vector<float> v;
    if (!f.has(key)) return std::vector<float>{fallback};
    const nlohmann::json& j = f.raw(key);
    if (j.is_number()) return std::vector<float>{j.get<float>()};
    if (j.is_array() && j.size() == 3) {
      for (const auto& x : j) {
        if (!x.is_number()) f.fail(key, "a number or 3 numbers (one per channel)", j);
        v.push_back(x.get<float>());
      }
      return v;
    }
    f.fail(key, "a number or 3 numbers (one per channel)", j);
    return v;
  };
  const std::vector<float> mean = per_channel("mean", 0.0F), stdev = per_channel("std", 1.0F);
  for (const float s : stdev) {
    if (!(s > 0)) f.fail("std", "positive numbers", f.raw("std"));
  }
  return make("normalize", args, [mean, stdev](Element e) {
    const Tensor& in = image_of(e, "normalize");
    const int64_t c = in.rank() == 3 ? in.shape()[2] : 1;
    if ((mean.size() > 1 || stdev.size() > 1) && c != 3) {
      throw std::invalid_argument(fmt::format(
          "normalize: per-channel mean or std for an image of {} channel(s)", c));
    }
    Tensor out(DType::kFloat32, in.shape());
    float* dst = out.mutable_values<float>().data();
    const auto n = static_cast<size_t>(in.shape()[0] * in.shape()[1]);
    float scale[3], shift[3];
    for (size_t k = 0; k < 3; ++k) {
      const float m = mean[mean.size() > 1 ? k : 0], s = stdev[stdev.size() > 1 ? k : 0];
      scale[k] = 1.0F / (255.0F * s);  // (x / 255 - m) / s
      shift[k] = -m / s;
    }
    const auto channels = static_cast<size_t>(c);
    if (in.dtype() == DType::kUInt8) {
      const auto* src = reinterpret_cast<const uint8_t*>(in.data());
      for (size_t i = 0; i < n; ++i) {
        for (size_t k = 0; k < channels; ++k) {
          const size_t at = i * channels + k;
          dst[at] = static_cast<float>(src[at]) * scale[k % 3] + shift[k % 3];
        }
      }
    } else {
      const auto* src = reinterpret_cast<const float*>(in.data());
      for (size_t i = 0; i < n; ++i) {
        for (size_t k = 0; k < channels; ++k) {
          const size_t at = i * channels + k;
          dst[at] = src[at] * scale[k % 3] + shift[k % 3];
        }
      }
    }
    e[0] = std::move(out);
    return e;
  });
}

}  // namespace pipeprof::pipelines::image
