#include "svg.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>

namespace pipeprof::results::svg {

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

const char* palette(size_t slot) {
  static constexpr const char* kPalette[kPaletteSize] = {
      "#8fb9e3", "#f6a35c", "#86cf7f", "#e88a8a", "#b9a1df", "#c8a07f", "#f0a6d3",
      "#d6d65c", "#6fd3d8", "#5b8fd1", "#f7d26a", "#4fae6b", "#d95f5f", "#9b7fd1",
      "#a8806a", "#e377c2", "#b5e3a8", "#ffb3a7", "#7fb0b8", "#c5c56f"};
  return kPalette[slot % kPaletteSize];
}

size_t palette_slot(std::string_view name) {
  uint32_t h = 2166136261u;
  for (unsigned char c : name) {
    h ^= c;
    h *= 16777619u;
  }
  return h % kPaletteSize;
}

const char* ColourMap::assign(std::string_view name) {
  if (auto it = slots_.find(name); it != slots_.end()) return palette(it->second);
  size_t slot = palette_slot(name);
  for (size_t i = 0; i < kPaletteSize && used_[slot]; ++i)
    slot = (slot + 1) % kPaletteSize;  // all used: share the preferred slot's neighbour
  used_[slot] = true;
  slots_.emplace(std::string(name), slot);
  return palette(slot);
}

const char* ColourMap::colour(std::string_view name) const {
  auto it = slots_.find(name);
  return palette(it == slots_.end() ? palette_slot(name) : it->second);
}

double tick_step(double span, int max_ticks) {
  if (!(span > 0)) return 1;
  const double raw = span / max_ticks;
  const double power = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw) return m * power;
  return 10 * power;
}

std::string tick_label(double value) {
  for (int digits = 0; digits < 3; ++digits) {
    const double scale = std::pow(10, digits);
    if (std::fabs(std::round(value * scale) - value * scale) < 1e-6) {
      return fmt::format("{:.{}f}", value, digits);
    }
  }
  return fmt::format("{:.3f}", value);
}

}  // namespace pipeprof::results::svg
