// Tensor: a dtype, a shape and a shared, reference-counted buffer. Copies and views (slices along
// the first dimension, reshapes) share the buffer: nothing is copied until someone writes to a
// buffer that is shared (copy on write). Tensors of at most kInlineBytes (scalars, tiny vectors)
// keep their values inline instead, so the hot path of scalar pipelines never allocates for them;
// copying one copies its bytes. Element: the ordered tuple of tensors a pipeline yields.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pipeprof::pipelines {

enum class DType : uint8_t { kBool, kUInt8, kInt32, kInt64, kFloat32, kFloat64 };

size_t dtype_size(DType dtype);
std::string_view dtype_name(DType dtype);
// Parses "int64", "float32", ...; throws std::invalid_argument for an unknown name.
DType parse_dtype(std::string_view name);

template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<bool>() {
  return DType::kBool;
}
template <>
constexpr DType dtype_of<uint8_t>() {
  return DType::kUInt8;
}
template <>
constexpr DType dtype_of<int32_t>() {
  return DType::kInt32;
}
template <>
constexpr DType dtype_of<int64_t>() {
  return DType::kInt64;
}
template <>
constexpr DType dtype_of<float>() {
  return DType::kFloat32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::kFloat64;
}

using Shape = std::vector<int64_t>;
int64_t num_elements(const Shape& shape);
std::string shape_string(const Shape& shape);  // "[4, 1000000, 3]"

class Tensor {
 public:
  static constexpr size_t kInlineBytes = 16;

  Tensor() = default;

  // A new zero-filled tensor that owns its buffer.
  Tensor(DType dtype, Shape shape);
  // A new tensor whose every byte the caller writes before any is read (a fill, a stack): a
  // buffer used before is not zeroed again.
  static Tensor uninitialized(DType dtype, Shape shape);
  // A tensor over memory someone else owns (a shared-memory object, a pinned buffer): `owner`
  // keeps the memory alive and is released when the last tensor viewing it goes away.
  static Tensor wrap(DType dtype, Shape shape, std::shared_ptr<std::byte> data);

  template <typename T>
  static Tensor scalar(T value) {
    Tensor t(dtype_of<T>(), {});
    t.mutable_values<T>()[0] = value;
    return t;
  }
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, Shape shape) {
    Tensor t(dtype_of<T>(), std::move(shape));
    auto out = t.mutable_values<T>();
    for (size_t i = 0; i < out.size() && i < values.size(); ++i)
      out[i] = values[i];
    return t;
  }
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values) {
    return from_vector(values, Shape{static_cast<int64_t>(values.size())});
  }

  bool valid() const { return data_ != nullptr || inline_; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t num_elements() const { return num_elements_; }
  size_t nbytes() const { return static_cast<size_t>(num_elements_) * dtype_size(dtype_); }

  const std::byte* data() const { return inline_ ? inline_bytes_.data() : data_.get(); }
  // Write access; copies the buffer first when another tensor shares it.
  std::byte* mutable_data();

  template <typename T>
  std::span<const T> values() const {
    check_dtype(dtype_of<T>());
    return {reinterpret_cast<const T*>(data()), static_cast<size_t>(num_elements_)};
  }
  template <typename T>
  std::span<T> mutable_values() {
    check_dtype(dtype_of<T>());
    return {reinterpret_cast<T*>(mutable_data()), static_cast<size_t>(num_elements_)};
  }
  // The value of a one-element tensor, converted to int64 / double.
  int64_t as_int64() const;
  double as_double() const;

  // Zero-copy views.
  Tensor slice(int64_t begin, int64_t end) const;  // rows [begin, end) of dimension 0
  Tensor operator[](int64_t row) const;            // row `row` of dimension 0, rank - 1
  Tensor reshape(Shape shape) const;
  bool shares_buffer_with(const Tensor& other) const;

  // Stacks tensors of equal dtype and shape along a new first dimension (one copy).
  static Tensor stack(std::span<const Tensor> parts);

  bool operator==(const Tensor& other) const;  // same dtype, shape and values

  // Where the bytes were read from, so that bad data found later in the pipeline (a record that
  // does not decode) is reported with its file: the file, and the byte offset of the record in it
  // where the bytes are one record of many. Sources set it; copies, views and reshapes keep it; a
  // tensor computed from the values starts without one unless its function passes it on
  // (parse_example's features and decode_jpeg's image do; a batch's stack does not).
  void set_origin(std::shared_ptr<const std::string> file,
                  std::optional<uint64_t> offset = std::nullopt);
  void copy_origin_from(const Tensor& other);
  // "data/a.tfrecord, record at byte 4096", "data/x.npy", or empty when unknown.
  std::string origin() const;

  nlohmann::json to_json() const;  // nested arrays of values (a number for a scalar)
  // Builds a tensor from a JSON number, bool or rectangular nested array. Integers give int64,
  // any fraction gives float64, unless `dtype` says otherwise. Throws std::invalid_argument.
  static Tensor from_json(const nlohmann::json& value, const DType* dtype = nullptr);

 private:
  void check_dtype(DType expected) const;

  static constexpr uint64_t kNoOffset = ~uint64_t{0};

  DType dtype_ = DType::kInt64;
  bool inline_ = false;  // the values live in inline_bytes_ instead
  Shape shape_;
  int64_t num_elements_ = 0;
  std::shared_ptr<std::byte> data_;  // points at this tensor's first byte (aliasing the buffer)
  std::shared_ptr<const std::string> origin_file_;  // origin()
  uint64_t origin_offset_ = kNoOffset;
  alignas(16) std::array<std::byte, kInlineBytes> inline_bytes_{};
};

// An ordered tuple of tensors: what one pull of a pipeline yields.
using Element = std::vector<Tensor>;

// A one-component element holding an int64 scalar (what range and artificial yield).
inline Element scalar_element(int64_t value) {
  return Element{Tensor::scalar<int64_t>(value)};
}

nlohmann::json element_to_json(const Element& element);       // value, or array of values
nlohmann::json element_to_json_full(const Element& element);  // with dtype and shape
std::string element_debug_string(const Element& element);

}  // namespace pipeprof::pipelines
