// Small helpers shared by the report's SVG charts. Every number is written with a fixed
// precision so that the same input always gives the same bytes.
#pragma once

#include <string>
#include <string_view>

namespace pipeprof::results::svg {

// Escapes &, <, >, " and ' for text and attribute values.
std::string escape(std::string_view text);

// A stable colour for a name ("#rrggbb"): the FNV-1a hash of the name picks the hue; saturation
// and lightness are fixed so that black text stays readable on it.
std::string colour_for(std::string_view name);

// A "nice" axis step (1, 2 or 5 times a power of ten) that splits [0, span] into at most
// `max_ticks` intervals.
double tick_step(double span, int max_ticks);

// "12", "2.5", "0.125": the shortest of {:.0f}/{:.1f}/.../{:.3f} that is exact enough for a tick.
std::string tick_label(double value);

}  // namespace pipeprof::results::svg
