// Nesting limits for the JSON documents pipeprof reads that a user hands it (specs, results files,
// the suite's manifest, a server's listing): a document nested deeper than any real one would
// otherwise reach recursive code (a spec's parser, nlohmann::json's dump) and overflow the stack.
// Traces have the same limit in their own reader (chrome_json_reader.cc).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace pipeprof::trace {

inline constexpr int kMaxJsonDepth = 256;

// The offset of the first '[' or '{' that opens level max_depth + 1 (strings skipped), or npos
// when the text stays within max_depth levels. Linear in the text; the text need not be valid.
inline size_t json_too_deep_at(std::string_view text, int max_depth = kMaxJsonDepth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::string_view::npos;
}

// nlohmann::json::parse, refusing a document nested deeper than max_depth levels with the parse
// error a malformed document gets (its byte: the bracket that opens the level too many). A number
// beyond a double's range (1e999), which nlohmann::json reports as out_of_range without a place,
// is such a parse error too, at the number.
inline nlohmann::json parse_json(std::string_view text, int max_depth = kMaxJsonDepth) {
  if (const size_t at = json_too_deep_at(text, max_depth); at != std::string_view::npos) {
    throw nlohmann::json::parse_error::create(
        101, at + 1, "nested deeper than " + std::to_string(max_depth) + " levels", nullptr);
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::out_of_range& e) {
    const std::string what = e.what();  // "... number overflow parsing '1e999'"
    const size_t open = what.find('\'');
    const size_t close = what.rfind('\'');
    std::string number = open != std::string::npos && close > open
                             ? what.substr(open + 1, close - open - 1)
                             : std::string();
    const size_t at = number.empty() ? std::string_view::npos : text.find(number);
    throw nlohmann::json::parse_error::create(
        101, at == std::string_view::npos ? 1 : at + 1,
        "the number " + (number.empty() ? std::string("here") : number) + " is out of range",
        nullptr);
  }
}

}  // namespace pipeprof::trace
