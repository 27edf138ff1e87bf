// DLIO's csv files read back as numbers (decode_csv in formats.h).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>
#include <vector>

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
  size_t n = 1;
  for (const char c : line)
    n += c == ',' ? 1 : 0;
  return n;
}

}  // namespace

Tensor decode_csv(std::span<const std::byte> bytes, const std::string& where) {
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (text.empty()) throw FormatError(fmt::format("{}: an empty file (expected a header line)", where));
  size_t at = 0;
  const size_t columns = csv_fields(csv_line(text, at));
  // Every value takes at least a byte and a separator: the rows are bounded by the file's size
  // before anything is allocated for them.
  std::vector<int64_t> integers;
  std::vector<double> reals;  // in use once a value is not an integer
  bool real = false;
  int64_t rows = 0;
  for (int64_t line_number = 2; at < text.size(); ++line_number) {
    const std::string_view line = csv_line(text, at);
    if (line.empty()) continue;  // blank lines are skipped, as pandas skips them
    const char* p = line.data();
    const char* const end = line.data() + line.size();
    for (size_t column = 1; column <= columns; ++column) {
      const char* field_end = std::find(p, end, ',');
      if (column == columns ? field_end != end : field_end == end) {
        throw FormatError(fmt::format("{}: line {}: {} values, the header has {}", where,
                                      line_number, csv_fields(line), columns));
      }
      const std::string_view field(p, static_cast<size_t>(field_end - p));
      auto fail = [&] {
        throw FormatError(fmt::format("{}: line {}, column {}: not a number: \"{}\"", where,
                                      line_number, column, field.substr(0, 40)));
      };
      bool integer = false;
      int64_t n = 0;
      if (!real && !field.empty()) {
        const auto r = std::from_chars(field.data(), field.data() + field.size(), n);
        integer = r.ec == std::errc() && r.ptr == field.data() + field.size();
      }
      if (!integer) {
        double v = std::numeric_limits<double>::quiet_NaN();  // an empty value, as pandas reads it
        if (!field.empty()) {
          const char* start = field.data() + (field.front() == '+' ? 1 : 0);
          const auto r = std::from_chars(start, field.data() + field.size(), v);
          if (r.ec != std::errc() || r.ptr != field.data() + field.size()) fail();
        }
        if (!real) {
          real = true;
          reals.assign(integers.begin(), integers.end());
          integers = {};
        }
        reals.push_back(v);
      } else if (real) {
        reals.push_back(static_cast<double>(n));
      } else {
        integers.push_back(n);
      }
      p = field_end + 1;
    }
    ++rows;
  }
  const Shape shape{rows, static_cast<int64_t>(columns)};
  if (real) {
    Tensor out = Tensor::uninitialized(DType::kFloat64, shape);
    if (!reals.empty()) std::memcpy(out.mutable_data(), reals.data(), reals.size() * sizeof(double));
    return out;
  }
  Tensor out = Tensor::uninitialized(DType::kInt64, shape);
  if (!integers.empty())
    std::memcpy(out.mutable_data(), integers.data(), integers.size() * sizeof(int64_t));
  return out;
}

}  // namespace pipeprof::pipelines::formats
