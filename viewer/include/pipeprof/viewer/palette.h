// Colours of the timeline: a span's colour comes from a stable hash of its name, so the same name
// has the same colour in every trace, every run and every machine.
#pragma once

#include <cstdint>
#include <string_view>

namespace pipeprof::viewer {

// Packed as Dear ImGui's ImU32: 0xAABBGGRR.
using Rgba = uint32_t;

constexpr Rgba rgba(uint32_t r, uint32_t g, uint32_t b, uint32_t a = 255) {
  return (r & 0xffu) | (g & 0xffu) << 8 | (b & 0xffu) << 16 | (a & 0xffu) << 24;
}
constexpr uint32_t red(Rgba c) {
  return c & 0xffu;
}
constexpr uint32_t green(Rgba c) {
  return (c >> 8) & 0xffu;
}
constexpr uint32_t blue(Rgba c) {
  return (c >> 16) & 0xffu;
}
constexpr uint32_t alpha(Rgba c) {
  return (c >> 24) & 0xffu;
}

// Background of the timeline canvas (what the screenshot test expects where nothing is drawn).
inline constexpr Rgba kCanvasBackground = rgba(30, 32, 36);
// Folded runs of spans too narrow to draw one by one.
inline constexpr Rgba kFoldColour = rgba(120, 126, 140);

// 64-bit FNV-1a: stable across platforms and standard library versions (std::hash is not).
uint64_t stable_hash(std::string_view text);

// Number of entries in the palette and the entry a name maps to.
int palette_size();
int palette_index(std::string_view name);
Rgba palette_colour(int index);
Rgba name_colour(std::string_view name);

// Blends `c` towards `towards` by `amount` in [0, 1] (0: c, 1: towards).
Rgba blend(Rgba c, Rgba towards, float amount);
// A span that does not match the search: faded into the canvas background.
Rgba dimmed(Rgba c);
// Outline of a span: the colour a third darker.
Rgba darker(Rgba c);
// Black or white, whichever reads better on `c`.
Rgba text_colour_on(Rgba c);

}  // namespace pipeprof::viewer
