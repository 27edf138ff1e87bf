// DLIO's csv files read back as numbers (decode_csv in formats.h).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string_view>

#include "formats/format_error.h"
#include "pipeprof/pipelines/formats.h"

namespace pipeprof::pipelines::formats {
namespace {

// The line starting at `at` without its end ("\n" or "\r\n"); `at` moves past it.
std::string_view csv_line(std::string_view text, size_t& at) {
  const size_t end = std::min(text.find('\n', at), text.size());
  std::string_view line = text.substr(at, end - at);
  at = end + 1;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

size_t csv_fields(std::string_view line) {
  return static_cast<size_t>(std::count(line.begin(), line.end(), ',')) + 1;
}

// An integer's text, a leading '+' allowed as pandas allows it.
bool parse_integer(std::string_view field, int64_t& n) {
  if (!field.empty() && field.front() == '+') field.remove_prefix(1);
  if (field.empty()) return false;
  const auto r = std::from_chars(field.data(), field.data() + field.size(), n);
  return r.ec == std::errc() && r.ptr == field.data() + field.size();
}

bool parse_real(std::string_view field, double& v) {
  if (field.empty()) {
    v = std::numeric_limits<double>::quiet_NaN();  // an empty value, as pandas reads it
    return true;
  }
  if (field.front() == '+') field.remove_prefix(1);
  const auto r = std::from_chars(field.data(), field.data() + field.size(), v);
  return r.ec == std::errc() && r.ptr == field.data() + field.size();
}

}  // namespace

Tensor decode_csv(std::span<const std::byte> bytes, const std::string& where) {
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (text.empty()) throw FormatError(fmt::format("{}: an empty file (expected a header line)", where));
  size_t at = 0;
  const size_t columns = csv_fields(csv_line(text, at));
  const size_t first_row = at;
  // The rows first (lines that are not blank), each as wide as the header, so that the table is
  // allocated once and never beyond 8 bytes a byte of the file (a value takes a separator at least).
  int64_t rows = 0, line_number = 1;
  for (size_t scan = first_row; scan < text.size();) {
    ++line_number;
    const std::string_view line = csv_line(text, scan);
    if (line.empty()) continue;  // blank lines are skipped, as pandas skips them
    if (const size_t n = csv_fields(line); n != columns) {
      throw FormatError(fmt::format("{}: line {}: {} values, the header has {}", where, line_number,
                                    n, columns));
    }
    ++rows;
  }
  const Shape shape{rows, static_cast<int64_t>(columns)};
  // One buffer whichever the values turn out to be: int64 and float64 are both 8 bytes.
  const std::shared_ptr<std::byte> buffer(new std::byte[static_cast<size_t>(rows) * columns * 8],
                                          std::default_delete<std::byte[]>());
  std::byte* values = buffer.get();
  bool real = false;  // once a value is not an integer, the table is float64 (converted in place)
  size_t index = 0;
  line_number = 1;
  for (size_t scan = first_row; scan < text.size();) {
    ++line_number;
    const std::string_view line = csv_line(text, scan);
    if (line.empty()) continue;
    size_t start = 0;
    for (size_t column = 1; column <= columns; ++column) {
      const size_t comma = std::min(line.find(',', start), line.size());
      const std::string_view field = line.substr(start, comma - start);
      start = comma + 1;
      int64_t n = 0;
      double v = 0;
      if (!real && parse_integer(field, n)) {
        std::memcpy(values + 8 * index, &n, sizeof n);
      } else if (parse_real(field, v)) {
        if (!real) {  // the integers so far become reals, in place
          real = true;
          for (size_t i = 0; i < index; ++i) {
            int64_t earlier = 0;
            std::memcpy(&earlier, values + 8 * i, sizeof earlier);
            const auto as_real = static_cast<double>(earlier);
            std::memcpy(values + 8 * i, &as_real, sizeof as_real);
          }
        }
        std::memcpy(values + 8 * index, &v, sizeof v);
      } else {
        throw FormatError(fmt::format("{}: line {}, column {}: not a number: \"{}\"", where,
                                      line_number, column, field.substr(0, 40)));
      }
      ++index;
    }
  }
  return Tensor::wrap(real ? DType::kFloat64 : DType::kInt64, shape, buffer);
}

}  // namespace pipeprof::pipelines::formats
