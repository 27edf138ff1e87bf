// An event's fields as the Chrome JSON reader (chrome_json_document.h) takes them from the text,
// before they are handled, and the small text helpers it shares with the parts' reader.
#pragma once

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

namespace pipeprof::trace::detail {

inline std::string_view trim_right(std::string_view s) {
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

inline bool is_gpu_category(std::string_view cat) {
  return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" ||
         cat == "gpu_user_annotation" || cat == "gpu" || cat == "cuda_sync" || cat == "Kernel" ||
         cat == "Memcpy" || cat == "Memset";
}

inline bool is_kineto_category(std::string_view cat) {
  return cat == "ac2g" || cat == "kernel" || cat == "cuda_runtime" || cat == "cpu_op" ||
         cat == "gpu_memcpy" || cat == "cuda_driver" || cat == "python_function";
}

// A key of up to four characters as one number (its bytes, the first lowest), so that the keys
// of an event are told apart by a switch rather than by string compares.
constexpr uint32_t short_key(std::string_view key) {
  uint32_t packed = 0;
  for (size_t i = 0; i < key.size() && i < 4; ++i)
    packed |= static_cast<uint32_t>(static_cast<unsigned char>(key[i])) << (8 * i);
  return packed;
}

// An event's top-level numeric arg: its key and its number's text.
using NumericArg = std::pair<std::string_view, std::string_view>;

// The fields of one event that the model uses; string views point into the part's text or the
// reader's key storage. Its numeric args are [args_begin, args_end) of a list beside it (the
// reader's, or a part's), so that an event is a few words to copy and reading one allocates
// nothing. A part's list is reused from part to part: clear() resets the bits of `given` and the
// few fields that have defaults, not every field (a field whose bit is clear holds a stale value).
struct EventFields {
  enum Given : uint16_t {
    kPh = 1 << 0,
    kName = 1 << 1,
    kCat = 1 << 2,
    kBp = 1 << 3,
    kTs = 1 << 4,
    kDur = 1 << 5,
    kId = 1 << 6,
    kArgs = 1 << 7,
    kArgName = 1 << 8,  // the args' top-level "name" string
  };
  uint16_t given = 0;
  std::string_view ph, name, cat, bp;
  int64_t pid = 0, tid = 0;
  std::string_view pid_text, tid_text;  // set when given as strings
  int64_t ts = 0, dur = 0;
  uint64_t id = 0;
  std::string_view args_raw;
  uint32_t args_begin = 0, args_end = 0;
  std::string_view stream_arg, device_arg;  // two of them, found as they are read (GPU events')
  std::string_view arg_name;

  bool has(Given field) const { return (given & field) != 0; }
  // The event's name, or "" when it gives none.
  std::string_view name_or_empty() const { return has(kName) ? name : std::string_view(); }
  void clear() {
    given = 0;
    pid = tid = 0;
    pid_text = tid_text = {};
    args_raw = {};
    stream_arg = device_arg = {};
  }
  static std::optional<double> to_double(std::string_view text) {
    if (!text.empty() && text.size() <= 15) {  // most are small integers (streams, devices)
      int64_t n = 0;
      size_t i = 0;
      while (i < text.size() && text[i] >= '0' && text[i] <= '9')
        n = n * 10 + (text[i++] - '0');
      if (i == text.size()) return static_cast<double>(n);
    }
    double v = 0;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
    if (r.ec != std::errc() || !std::isfinite(v)) return std::nullopt;
    return v;
  }
};

}  // namespace pipeprof::trace::detail
