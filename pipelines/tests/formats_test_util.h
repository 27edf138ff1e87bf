// Helpers shared by the format tests (formats_test.cc, npz_test.cc): byte and file utilities, a
// deterministic tensor of every dtype, and the FormatError expectation.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "formats/format_error.h"
#include "formats/mapped_file.h"
#include "pipeprof/pipelines/tensor.h"

namespace pipeprof::pipelines::formats::test {

inline std::vector<double> as_doubles(const Tensor& t) {
  std::vector<double> out;
  const auto n = static_cast<size_t>(t.num_elements());
  for (size_t i = 0; i < n; ++i) {
    switch (t.dtype()) {
      case DType::kBool:
        out.push_back(t.values<bool>()[i] ? 1 : 0);
        break;
      case DType::kUInt8:
        out.push_back(t.values<uint8_t>()[i]);
        break;
      case DType::kInt32:
        out.push_back(t.values<int32_t>()[i]);
        break;
      case DType::kInt64:
        out.push_back(static_cast<double>(t.values<int64_t>()[i]));
        break;
      case DType::kFloat32:
        out.push_back(t.values<float>()[i]);
        break;
      case DType::kFloat64:
        out.push_back(t.values<double>()[i]);
        break;
    }
  }
  return out;
}

inline Shape shape_of(const nlohmann::json& j) {
  return j.get<Shape>();
}

inline std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

inline void write_bytes(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline std::vector<std::byte> file_bytes(const std::filesystem::path& path) {
  return bytes_of(read_file(path.string()));
}

inline Tensor arange(DType dtype, Shape shape) {
  Tensor t(dtype, shape);
  const auto n = static_cast<size_t>(t.num_elements());
  std::byte* p = t.mutable_data();
  for (size_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(i) * 1.5 - 3;
    switch (dtype) {
      case DType::kBool:
        p[i] = std::byte{i % 3 == 0};
        break;
      case DType::kUInt8:
        p[i] = std::byte(static_cast<uint8_t>(i * 7));
        break;
      case DType::kInt32: {
        const auto x = static_cast<int32_t>(i) * -1000003;
        std::memcpy(p + 4 * i, &x, 4);
        break;
      }
      case DType::kInt64: {
        const auto x = static_cast<int64_t>(i) * 1000000000007LL;
        std::memcpy(p + 8 * i, &x, 8);
        break;
      }
      case DType::kFloat32: {
        const auto x = static_cast<float>(v);
        std::memcpy(p + 4 * i, &x, 4);
        break;
      }
      case DType::kFloat64:
        std::memcpy(p + 8 * i, &v, 8);
        break;
    }
  }
  return t;
}

inline const std::vector<DType> kDtypes{DType::kBool,  DType::kUInt8,   DType::kInt32,
                                 DType::kInt64, DType::kFloat32, DType::kFloat64};

// Expects `fn` to throw a FormatError whose message holds every one of `parts`.
template <typename Fn>
void expect_format_error(Fn&& fn, const std::vector<std::string>& parts, const std::string& what) {
  try {
    fn();
    ADD_FAILURE() << what << ": no error";
  } catch (const FormatError& e) {
    for (const auto& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << what << ": " << e.what();
  }
}

}  // namespace pipeprof::pipelines::formats::test
