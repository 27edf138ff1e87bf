// An event's fields as the Chrome JSON reader (chrome_json_document.h) takes them from the text,
// before they are handled, and the small text helpers it shares with the parts' reader.
#pragma once

#include <charconv>
#include <cmath>
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

// An event's top-level numeric arg: its key and its number's text.
using NumericArg = std::pair<std::string_view, std::string_view>;

// The fields of one event that the model uses; string views point into the parser's buffers. Its
// numeric args are [args_begin, args_end) of a list beside it (the reader's, or a part's), so that
// an event is a few words to copy and reading one allocates nothing.
struct EventFields {
  std::optional<std::string_view> ph, name, cat, bp;
  int64_t pid = 0, tid = 0;
  std::string_view pid_text, tid_text;  // set when given as strings
  std::optional<int64_t> ts, dur;
  std::optional<uint64_t> id;
  bool has_args = false;
  std::string_view args_raw;
  uint32_t args_begin = 0, args_end = 0;
  std::string_view stream_arg, device_arg;  // two of them, found as they are read (GPU events')
  std::optional<std::string_view> arg_name;  // top-level "name" string

  void clear() {
    ph = name = cat = bp = std::nullopt;
    pid = tid = 0;
    pid_text = tid_text = {};
    ts = dur = std::nullopt;
    id = std::nullopt;
    has_args = false;
    args_raw = {};
    args_begin = args_end = 0;
    stream_arg = device_arg = {};
    arg_name = std::nullopt;
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
