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

std::string colour_for(std::string_view name) {
  uint32_t h = 2166136261u;
  for (unsigned char c : name) {
    h ^= c;
    h *= 16777619u;
  }
  const double hue = static_cast<double>(h % 360);
  const double s = 0.55, l = 0.62;
  // HSL to RGB.
  const double chroma = (1 - std::fabs(2 * l - 1)) * s;
  const double hp = hue / 60;
  const double x = chroma * (1 - std::fabs(std::fmod(hp, 2) - 1));
  double r = 0, g = 0, b = 0;
  if (hp < 1) {
    r = chroma, g = x;
  } else if (hp < 2) {
    r = x, g = chroma;
  } else if (hp < 3) {
    g = chroma, b = x;
  } else if (hp < 4) {
    g = x, b = chroma;
  } else if (hp < 5) {
    r = x, b = chroma;
  } else {
    r = chroma, b = x;
  }
  const double m = l - chroma / 2;
  auto byte = [m](double v) { return static_cast<int>(std::lround((v + m) * 255)); };
  return fmt::format("#{:02x}{:02x}{:02x}", byte(r), byte(g), byte(b));
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
