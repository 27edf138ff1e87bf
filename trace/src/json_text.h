// Small JSON text helpers shared by the Chrome-JSON writer and reader: string escaping (with UTF-8
// repair), microsecond timestamps with nanosecond fractions, and exact decimal parsing of them.
#pragma once

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <bit>
#include <cstdint>
#include <cstring>
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

// Where a string ends: `p` is its first byte (after the opening quote); the closing quote, the
// first '"' before `end` that no backslash escapes, and whether a backslash comes before it (the
// inside must then be unescaped). nullopt when no quote ends it before `end`. Plain strings are
// looked at 16 bytes at a time (SSE2), which may read up to 15 bytes past `end`: the text must be
// padded (as simdjson's documents are).
struct StringEnd {
  const char* close = nullptr;
  bool escaped = false;
};
inline std::optional<StringEnd> find_string_end(const char* p, const char* end) {
  const char* q = p;
#if defined(__SSE2__)
  // The first quote of a 16-byte block with no backslash before it ends the string.
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
  for (int round = 0; round < 32 && q < end; ++round, q += 16) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    const auto quotes = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(bytes, quote)));
    const auto escapes = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(bytes, backslash)));
    if (quotes != 0 && (escapes & ((quotes & -quotes) - 1)) == 0) {
      const char* close = q + std::countr_zero(quotes);
      if (close >= end) return std::nullopt;
      return StringEnd{close, false};
    }
    if (escapes != 0) break;
  }
  q = p;
#else
  // Most strings are a few plain characters: a byte loop finds their end before a call would.
  for (int i = 0; i < 16 && q < end && *q != '"' && *q != '\\'; ++i)
    ++q;
  if (q < end && *q == '"') return StringEnd{q, false};
#endif
  for (;;) {
    q = static_cast<const char*>(std::memchr(q, '"', static_cast<size_t>(end - q)));
    if (q == nullptr) return std::nullopt;
    ptrdiff_t backslashes = 0;
    while (q - backslashes > p && q[-1 - backslashes] == '\\')
      ++backslashes;
    if (backslashes % 2 == 0) break;
    ++q;
  }
  return StringEnd{q, std::memchr(p, '\\', static_cast<size_t>(q - p)) != nullptr};
}

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
