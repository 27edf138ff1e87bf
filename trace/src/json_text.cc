#include "json_text.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

namespace pipeprof::trace::json_text {
namespace {

bool is_continuation(unsigned char c) {
  return (c & 0xC0U) == 0x80U;
}

// Length of the valid UTF-8 sequence starting at p (n bytes available), or 0 when invalid.
size_t utf8_sequence_length(const unsigned char* p, size_t n) {
  const unsigned c = p[0];
  if (c < 0x80U) return 1;
  if (c < 0xC2U) return 0;  // a continuation byte, or an overlong two-byte form
  if (c < 0xE0U) return n >= 2 && is_continuation(p[1]) ? 2 : 0;
  if (c < 0xF0U) {
    if (n < 3 || !is_continuation(p[1]) || !is_continuation(p[2])) return 0;
    if (c == 0xE0U && p[1] < 0xA0U) return 0;  // overlong
    if (c == 0xEDU && p[1] > 0x9FU) return 0;  // UTF-16 surrogate
    return 3;
  }
  if (c < 0xF5U) {
    if (n < 4 || !is_continuation(p[1]) || !is_continuation(p[2]) || !is_continuation(p[3]))
      return 0;
    if (c == 0xF0U && p[1] < 0x90U) return 0;  // overlong
    if (c == 0xF4U && p[1] > 0x8FU) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

bool is_plain(unsigned char c) {
  return c >= 0x20U && c < 0x80U && c != '"' && c != '\\';
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Eight ASCII digits at p, as their number; nullopt when any of the eight bytes is not a digit.
// The bytes are read as one little-endian word (the first digit lowest) and combined in pairs,
// then fours, then the eight: three multiplications where a loop takes eight.
std::optional<uint64_t> eight_digits(const char* p) {
  if constexpr (std::endian::native != std::endian::little) return std::nullopt;  // digit by digit
  uint64_t v = 0;
  std::memcpy(&v, p, 8);
  constexpr uint64_t kHigh = 0xF0F0F0F0F0F0F0F0ULL, kZeros = 0x3030303030303030ULL;
  if ((v & kHigh) != kZeros || ((v + 0x0606060606060606ULL) & kHigh) != kZeros) return std::nullopt;
  v -= kZeros;
  v = (v * (10 * 256 + 1)) >> 8;                                // 10 a + b per 16 bits
  v = ((v & 0x00FF00FF00FF00FFULL) * (100 * 65536 + 1)) >> 16;  // 100 ab + cd per 32
  return ((v & 0x0000FFFF0000FFFFULL) * ((uint64_t{10000} << 32) + 1)) >> 32;  // 10^4 abcd + efgh
}

}  // namespace

void append_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  out.push_back('"');
  size_t i = 0;
  while (i < n) {
    size_t j = i;
    while (j < n && is_plain(p[j]))
      ++j;
    out.append(s.data() + i, j - i);
    i = j;
    if (i == n) break;
    const unsigned char c = p[i];
    if (c >= 0x80U) {
      const size_t len = utf8_sequence_length(p + i, n - i);
      if (len == 0) {
        out.append("\\ufffd");
        ++i;
      } else {
        out.append(s.data() + i, len);
        i += len;
      }
      continue;
    }
    switch (c) {
      case '"':
        out.append("\\\"");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      case '\t':
        out.append("\\t");
        break;
      case '\b':
        out.append("\\b");
        break;
      case '\f':
        out.append("\\f");
        break;
      default:
        out.append("\\u00");
        out.push_back(kHex[c >> 4U]);
        out.push_back(kHex[c & 0xFU]);
    }
    ++i;
  }
  out.push_back('"');
}

void append_int(std::string& out, int64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_double(std::string& out, double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_us(std::string& out, int64_t ns) {
  uint64_t mag = static_cast<uint64_t>(ns);
  if (ns < 0) {
    out.push_back('-');
    mag = ~mag + 1;  // two's complement magnitude; exact for INT64_MIN too
  }
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, mag / 1000);
  out.append(buf, r.ptr);
  const auto frac = static_cast<unsigned>(mag % 1000);
  out.push_back('.');
  out.push_back(static_cast<char>('0' + frac / 100));
  out.push_back(static_cast<char>('0' + frac / 10 % 10));
  out.push_back(static_cast<char>('0' + frac % 10));
}

namespace {

// The significant digits of a number without an allocation: a timestamp has about 20; a number
// with more than kDigits goes to a std::string (digits.full() says so).
class InlineDigits {
 public:
  static constexpr size_t kDigits = 40;
  void push_back(char c) {
    if (size_ < kDigits) digits_[size_] = c;
    ++size_;
  }
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  bool full() const { return size_ > kDigits; }
  char operator[](size_t i) const { return i < kDigits ? digits_[i] : '0'; }  // past them: unused

 private:
  char digits_[kDigits];
  size_t size_ = 0;
};

template <typename Digits>
std::optional<int64_t> us_to_ns_from(std::string_view text, Digits& digits) {
  // Grammar of a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  size_t i = 0;
  const size_t n = text.size();
  const bool negative = i < n && text[i] == '-';
  if (negative) ++i;
  if (i >= n || !is_digit(text[i])) return std::nullopt;
  // The significant digits (leading zeros dropped) and the power of ten of the last one.
  int64_t exponent = 0;
  if (text[i] == '0') {
    ++i;
  } else {
    while (i < n && is_digit(text[i]))
      digits.push_back(text[i++]);
  }
  if (i < n && text[i] == '.') {
    ++i;
    if (i >= n || !is_digit(text[i])) return std::nullopt;
    while (i < n && is_digit(text[i])) {
      if (!(digits.empty() && text[i] == '0')) digits.push_back(text[i]);
      --exponent;
      ++i;
    }
  }
  if (i < n && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool exp_negative = false;
    if (i < n && (text[i] == '+' || text[i] == '-')) exp_negative = text[i++] == '-';
    if (i >= n || !is_digit(text[i])) return std::nullopt;
    int64_t e = 0;
    while (i < n && is_digit(text[i])) {
      if (e < 100'000) e = e * 10 + (text[i] - '0');
      ++i;
    }
    exponent += exp_negative ? -e : e;
  }
  if (i != n) return std::nullopt;
  if (digits.empty()) return 0;
  // value_ns = digits * 10^(exponent + 3)
  const int64_t shift = exponent + 3;
  uint64_t mag = 0;
  constexpr uint64_t kLimit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  const auto keep = static_cast<int64_t>(digits.size()) + std::min<int64_t>(shift, 0);
  for (int64_t k = 0; k < keep; ++k) {
    const auto d = static_cast<uint64_t>(digits[static_cast<size_t>(k)] - '0');
    if (mag > (kLimit - d) / 10) return std::nullopt;
    mag = mag * 10 + d;
  }
  if (shift > 0) {
    for (int64_t k = 0; k < shift; ++k) {
      if (mag > kLimit / 10) return std::nullopt;
      mag *= 10;
    }
  } else if (keep >= 0 && static_cast<size_t>(keep) < digits.size()) {
    if (digits[static_cast<size_t>(keep)] >= '5') {  // round half away from zero
      if (mag == kLimit) return std::nullopt;
      ++mag;
    }
  }
  const auto v = static_cast<int64_t>(mag);
  return negative ? -v : v;
}

}  // namespace

std::optional<int64_t> parse_us_to_ns(std::string_view text) {
  // Most timestamps (epoch microseconds have 16 digits): -?[0-9]{1,16}(\.[0-9]{1,3})? whose
  // nanoseconds fit in 64 bits, exact without rounding.
  {
    const char* p = text.data();
    const char* const end = p + text.size();
    const bool negative = p < end && *p == '-';
    if (negative) ++p;
    const char* const first = p;
    uint64_t whole = 0;
    while (end - p >= 8 && p - first <= 8) {  // 16-digit epoch microseconds: two words
      const std::optional<uint64_t> eight = eight_digits(p);
      if (!eight) break;
      whole = whole * 100'000'000 + *eight;
      p += 8;
    }
    while (p < end && is_digit(*p) && p - first < 17)
      whole = whole * 10 + static_cast<uint64_t>(*p++ - '0');
    const auto int_digits = p - first;
    constexpr uint64_t kMostWhole = (static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - 999) / 1000;
    if (int_digits >= 1 && int_digits <= 16 && whole <= kMostWhole && (int_digits == 1 || *first != '0')) {
      uint64_t frac = 0;
      int frac_digits = 0;
      bool fraction_ok = true;
      if (p < end && *p == '.') {
        ++p;
        while (p < end && is_digit(*p) && frac_digits < 3) {
          frac = frac * 10 + static_cast<uint64_t>(*p++ - '0');
          ++frac_digits;
        }
        fraction_ok = frac_digits > 0;
      }
      if (fraction_ok && p == end) {
        static constexpr uint64_t kScale[] = {1000, 100, 10, 1};
        const auto ns = static_cast<int64_t>(whole * 1000 + frac * kScale[frac_digits]);
        return negative ? -ns : ns;
      }
    }
  }
  InlineDigits digits;
  const std::optional<int64_t> ns = us_to_ns_from(text, digits);
  if (!digits.full()) return ns;
  std::string all;  // more significant digits than kept inline: again, all of them
  return us_to_ns_from(text, all);
}

bool is_number(std::string_view text) {
  size_t i = 0;
  const size_t n = text.size();
  if (i < n && text[i] == '-') ++i;
  if (i >= n || !is_digit(text[i])) return false;
  if (text[i] == '0') {
    ++i;
  } else {
    while (i < n && is_digit(text[i]))
      ++i;
  }
  if (i < n && text[i] == '.') {
    ++i;
    if (i >= n || !is_digit(text[i])) return false;
    while (i < n && is_digit(text[i]))
      ++i;
  }
  if (i < n && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < n && (text[i] == '+' || text[i] == '-')) ++i;
    if (i >= n || !is_digit(text[i])) return false;
    while (i < n && is_digit(text[i]))
      ++i;
  }
  return i == n;
}

namespace {

std::optional<unsigned> hex4(std::string_view s, size_t at) {
  if (at + 4 > s.size()) return std::nullopt;
  unsigned v = 0;
  for (size_t k = at; k < at + 4; ++k) {
    const char c = s[k];
    unsigned d = 0;
    if (c >= '0' && c <= '9') {
      d = static_cast<unsigned>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      d = static_cast<unsigned>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      d = static_cast<unsigned>(c - 'A' + 10);
    } else {
      return std::nullopt;
    }
    v = v * 16 + d;
  }
  return v;
}

void append_utf8(std::string& out, unsigned cp) {
  if (cp < 0x80U) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800U) {
    out.push_back(static_cast<char>(0xC0U | (cp >> 6U)));
    out.push_back(static_cast<char>(0x80U | (cp & 0x3FU)));
  } else if (cp < 0x10000U) {
    out.push_back(static_cast<char>(0xE0U | (cp >> 12U)));
    out.push_back(static_cast<char>(0x80U | ((cp >> 6U) & 0x3FU)));
    out.push_back(static_cast<char>(0x80U | (cp & 0x3FU)));
  } else {
    out.push_back(static_cast<char>(0xF0U | (cp >> 18U)));
    out.push_back(static_cast<char>(0x80U | ((cp >> 12U) & 0x3FU)));
    out.push_back(static_cast<char>(0x80U | ((cp >> 6U) & 0x3FU)));
    out.push_back(static_cast<char>(0x80U | (cp & 0x3FU)));
  }
}

}  // namespace

bool unescape(std::string_view inner, std::string& out) {
  size_t i = 0;
  while (i < inner.size()) {
    const size_t slash = inner.find('\\', i);
    if (slash == std::string_view::npos) {
      out.append(inner.substr(i));
      return true;
    }
    out.append(inner.substr(i, slash - i));
    i = slash + 1;
    if (i >= inner.size()) return false;
    const char c = inner[i++];
    switch (c) {
      case '"':
        out.push_back('"');
        break;
      case '\\':
        out.push_back('\\');
        break;
      case '/':
        out.push_back('/');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'u': {
        const auto hi = hex4(inner, i);
        if (!hi) return false;
        i += 4;
        unsigned cp = *hi;
        if (cp >= 0xD800U && cp <= 0xDBFFU) {  // a high surrogate needs its low half
          if (i + 2 > inner.size() || inner[i] != '\\' || inner[i + 1] != 'u') return false;
          const auto lo = hex4(inner, i + 2);
          if (!lo || *lo < 0xDC00U || *lo > 0xDFFFU) return false;
          i += 6;
          cp = 0x10000U + ((cp - 0xD800U) << 10U) + (*lo - 0xDC00U);
        } else if (cp >= 0xDC00U && cp <= 0xDFFFU) {
          return false;  // a lone low surrogate
        }
        append_utf8(out, cp);
        break;
      }
      default:
        return false;
    }
  }
  return true;
}

std::optional<ValueError> check_value(std::string_view text, size_t max_depth, std::string& scratch) {
  const size_t n = text.size();
  size_t i = 0;
  std::string open;  // the arrays ('[') and objects ('{') open, innermost last
  enum class Want { kValue, kValueOrEnd, kKey, kKeyOrEnd, kColon, kCommaOrEnd };
  Want want = Want::kValue;
  const auto blanks = [&] {
    while (i < n && (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t'))
      ++i;
  };
  // A string at i (text[i] == '"'): moves past it; false when it does not end, holds a control
  // character or an invalid escape.
  const auto string = [&] {
    const size_t start = ++i;
    bool escapes = false;
    while (i < n && text[i] != '"') {
      if (static_cast<unsigned char>(text[i]) < 0x20) return false;
      if (text[i] == '\\') {
        escapes = true;
        ++i;
      }
      ++i;
    }
    if (i >= n) return false;
    const std::string_view inner = text.substr(start, i - start);
    ++i;
    if (!escapes) return true;
    scratch.clear();
    return unescape(inner, scratch);
  };
  // A scalar at i: moves past it; false when it is none.
  const auto scalar = [&] {
    const char c = text[i];
    if (c == '"') return string();
    for (const std::string_view literal : {std::string_view("true"), std::string_view("false"),
                                           std::string_view("null")}) {
      if (c == literal.front()) {
        if (text.substr(i, literal.size()) != literal) return false;
        i += literal.size();
        return true;
      }
    }
    const size_t start = i;
    while (i < n && (is_digit(text[i]) || text[i] == '-' || text[i] == '+' || text[i] == '.' ||
                     text[i] == 'e' || text[i] == 'E'))
      ++i;
    if (is_number(text.substr(start, i - start))) return true;
    i = start;
    return false;
  };
  while (true) {
    blanks();
    if (i >= n) return ValueError{n, false};
    const char c = text[i];
    switch (want) {
      case Want::kKeyOrEnd:
      case Want::kValueOrEnd:
        if (c == (want == Want::kKeyOrEnd ? '}' : ']')) {
          want = Want::kCommaOrEnd;
          break;  // closed below
        }
        want = want == Want::kKeyOrEnd ? Want::kKey : Want::kValue;
        continue;
      case Want::kKey: {
        const size_t at = i;
        if (c != '"' || !string()) return ValueError{at, false};
        want = Want::kColon;
        continue;
      }
      case Want::kColon:
        if (c != ':') return ValueError{i, false};
        ++i;
        want = Want::kValue;
        continue;
      case Want::kValue: {
        if (c == '[' || c == '{') {
          if (open.size() >= max_depth) return ValueError{i, true};
          open.push_back(c);
          ++i;
          want = c == '[' ? Want::kValueOrEnd : Want::kKeyOrEnd;
          continue;
        }
        const size_t at = i;
        if (!scalar()) return ValueError{at, false};
        want = Want::kCommaOrEnd;
        if (open.empty()) {
          blanks();
          return i == n ? std::nullopt : std::optional<ValueError>(ValueError{i, false});
        }
        continue;
      }
      case Want::kCommaOrEnd:
        if (c == ',') {
          ++i;
          want = open.back() == '[' ? Want::kValue : Want::kKey;
          continue;
        }
        if (c != (open.back() == '[' ? ']' : '}')) return ValueError{i, false};
        break;  // closed below
    }
    // c closes the innermost array or object.
    open.pop_back();
    ++i;
    if (open.empty()) {
      blanks();
      return i == n ? std::nullopt : std::optional<ValueError>(ValueError{i, false});
    }
  }
}

std::optional<int64_t> parse_integer(std::string_view text) {
  int64_t v = 0;
  bool negative = false;
  if (!text.empty() && text.front() == '-') {
    negative = true;
    text.remove_prefix(1);
  }
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  }
  if (text.empty() || text.front() == '-' || text.front() == '+') return std::nullopt;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v, base);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size()) return std::nullopt;
  return negative ? -v : v;
}

}  // namespace pipeprof::trace::json_text

namespace pipeprof::trace {

std::optional<size_t> first_invalid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t i = 0;
  while (i < s.size()) {
    if (p[i] < 0x80U) {
      ++i;
      continue;
    }
    const size_t len = json_text::utf8_sequence_length(p + i, s.size() - i);
    if (len == 0) return i;
    i += len;
  }
  return std::nullopt;
}

}  // namespace pipeprof::trace
