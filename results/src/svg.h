// Small helpers shared by the report's SVG charts. Every number is written with a fixed
// precision so that the same input always gives the same bytes.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <string>
#include <string_view>

namespace pipeprof::results::svg {

// Escapes &, <, >, " and ' for text and attribute values.
std::string escape(std::string_view text);

// A categorical palette: colours distinct from each other, light enough for black text, none of
// them the grey of merged blocks.
inline constexpr size_t kPaletteSize = 20;
const char* palette(size_t slot);

// The palette slot a name prefers: the FNV-1a hash of the name modulo the palette size. The same
// name prefers the same colour in every chart.
size_t palette_slot(std::string_view name);
inline std::string colour_for(std::string_view name) {
  return palette(palette_slot(name));
}

// Colours for the names of one chart. Names are assigned in the order given (the chart passes
// them largest total time first): each gets its preferred slot, or when a name before it holds
// that slot, the next free one, so up to kPaletteSize names of one chart never share a colour.
class ColourMap {
 public:
  const char* assign(std::string_view name);
  const char* colour(std::string_view name) const;  // an assigned name's colour

 private:
  std::map<std::string, size_t, std::less<>> slots_;
  std::array<bool, kPaletteSize> used_{};
};

// A "nice" axis step (1, 2 or 5 times a power of ten) that splits [0, span] into at most
// `max_ticks` intervals.
double tick_step(double span, int max_ticks);

// "12", "2.5", "0.125": the shortest of {:.0f}/{:.1f}/.../{:.3f} that is exact enough for a tick.
std::string tick_label(double value);

}  // namespace pipeprof::results::svg
