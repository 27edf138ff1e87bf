#include "pipeprof/viewer/palette.h"

#include <array>
#include <cmath>

namespace pipeprof::viewer {
namespace {

// Medium-saturation colours that stay readable with black or white text and differ from their
// neighbours in hue; 24 entries so that a typical pipeline's dozen names rarely collide.
constexpr std::array<Rgba, 24> kPalette = {
    rgba(78, 121, 167),  rgba(242, 142, 43),  rgba(225, 87, 89),   rgba(118, 183, 178),
    rgba(89, 161, 79),   rgba(237, 201, 72),  rgba(176, 122, 161), rgba(255, 157, 167),
    rgba(156, 117, 95),  rgba(186, 176, 171), rgba(95, 169, 214),  rgba(214, 110, 52),
    rgba(140, 209, 125), rgba(200, 82, 140),  rgba(127, 127, 220), rgba(222, 170, 110),
    rgba(96, 190, 150),  rgba(231, 120, 200), rgba(170, 196, 60),  rgba(64, 150, 140),
    rgba(250, 190, 120), rgba(150, 90, 200),  rgba(205, 140, 95),  rgba(110, 200, 230)};

}  // namespace

uint64_t stable_hash(std::string_view text) {
  uint64_t h = 14695981039346656037ULL;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

int palette_size() {
  return static_cast<int>(kPalette.size());
}

int palette_index(std::string_view name) {
  // Fold the high bits in: FNV-1a's low bits alone vary little for names that differ at the end.
  const uint64_t h = stable_hash(name);
  return static_cast<int>((h ^ (h >> 29) ^ (h >> 47)) % kPalette.size());
}

Rgba palette_colour(int index) {
  const auto n = static_cast<int>(kPalette.size());
  return kPalette[static_cast<size_t>(((index % n) + n) % n)];
}

Rgba name_colour(std::string_view name) {
  return palette_colour(palette_index(name));
}

Rgba blend(Rgba c, Rgba towards, float amount) {
  const float a = amount < 0.0f ? 0.0f : (amount > 1.0f ? 1.0f : amount);
  auto mix = [a](uint32_t x, uint32_t y) {
    return static_cast<uint32_t>(
        std::lround(static_cast<float>(x) * (1.0f - a) + static_cast<float>(y) * a));
  };
  return rgba(mix(red(c), red(towards)), mix(green(c), green(towards)), mix(blue(c), blue(towards)),
              alpha(c));
}

Rgba dimmed(Rgba c) {
  return blend(c, kCanvasBackground, 0.75f);
}

Rgba darker(Rgba c) {
  return blend(c, rgba(0, 0, 0), 0.35f);
}

Rgba text_colour_on(Rgba c) {
  // Rec. 601 luma is enough to choose between black and white.
  const double luma = 0.299 * red(c) + 0.587 * green(c) + 0.114 * blue(c);
  return luma > 140.0 ? rgba(0, 0, 0) : rgba(255, 255, 255);
}

}  // namespace pipeprof::viewer
