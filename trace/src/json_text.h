// Small JSON text helpers shared by the Chrome-JSON writer and reader: string escaping (with UTF-8
// repair), microsecond timestamps with nanosecond fractions, and exact decimal parsing of them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "pipeprof/trace/utf8.h"

namespace pipeprof::trace::json_text {

// Appends `s` as a quoted JSON string. Quotes, backslashes and control characters are escaped;
// valid UTF-8 passes through; each byte of an invalid UTF-8 sequence becomes U+FFFD, so the
// output is always valid JSON.
void append_string(std::string& out, std::string_view s);

// Appends nanoseconds as microseconds with exactly three decimals ("-12.345", "0.001").
void append_us(std::string& out, int64_t ns);

// Appends an integer / a double in the shortest form that reads back exactly.
void append_int(std::string& out, int64_t v);
void append_double(std::string& out, double v);

// Parses a JSON number (or the text of a number held in a string) counting microseconds, e.g.
// "1680000000000.123" or "1.5e3", into integer nanoseconds, rounded half away from zero. Exact:
// no binary floating point is involved. nullopt when the text is not a JSON number or the value
// does not fit in int64 nanoseconds (about +-292 years).
std::optional<int64_t> parse_us_to_ns(std::string_view text);

// True when `text` is exactly a JSON number (any magnitude).
bool is_number(std::string_view text);

// Unescapes the inside of a JSON string (the text between its quotes) into `out`, turning \uXXXX
// escapes (surrogate pairs included) into UTF-8. False when an escape is invalid.
bool unescape(std::string_view inner, std::string& out);

// Checks that `text` is exactly one JSON value (blanks around it allowed), with at most
// `max_depth` arrays and objects open at once, without recursion. nullopt when it is; otherwise
// where it goes wrong (the offset in `text` of the first byte that cannot continue it, or its size
// when it ends early) and whether the nesting was too deep. `scratch` holds the unescaping of
// strings with escapes (checked as unescape checks them).
struct ValueError {
  size_t offset = 0;
  bool too_deep = false;
};
std::optional<ValueError> check_value(std::string_view text, size_t max_depth, std::string& scratch);

// Parses an integer written in decimal ("-42") or hex ("0x2a"); nullopt otherwise.
std::optional<int64_t> parse_integer(std::string_view text);

using trace::first_invalid_utf8;  // pipeprof/trace/utf8.h

}  // namespace pipeprof::trace::json_text
