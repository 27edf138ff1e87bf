#include "pipeprof/pipelines/tensor.h"

#include <fmt/format.h>
#include <pthread.h>
#include <sys/mman.h>

#include <cstring>
#include <mutex>
#include <new>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace pipeprof::pipelines {
namespace {

// Huge buffers freed recently, kept mapped for the next tensor of the same size. A pipeline makes
// elements of one size again and again (a 48 MB batch per step), and a fresh mapping costs a page
// fault per page (per 2 MiB with huge pages) and the kernel zeroing it, which on a VM costs
// several times writing the bytes: in the Ray article's generator, clear_page took 29% of the
// generator thread's time and its PRNG fill 6%. A buffer taken again is zeroed by memset.
// At most kMostHeld bytes are kept; the rest are unmapped as before.
//
// A kept buffer is not inherited by a forked child (MADV_DONTFORK). Otherwise a producer process
// would take its parent's kept buffers for its own tensors, and writing them costs a copy-on-write
// fault per 4 KiB page (a copy, where a fresh mapping faults once per 2 MiB and zeroes), and the
// parent pays the same for every page it writes while a child still shares it: in the suite, the
// Ray multiprocess experiment after the generator (which leaves three 48 MB buffers kept) waited
// 2.3-3.2 times its copy floor in the steady state, against 1.35 in a fresh process.
class HugeBuffers {
 public:
  static constexpr size_t kMostHeld = size_t{512} << 20;

  // A kept buffer of exactly n bytes (zeroed when asked), or nullptr.
  void* take(size_t n, bool zero) {
    void* p = nullptr;
    bool inherited = true;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (size_t i = 0; i < kept_.size(); ++i) {
        if (kept_[i].bytes != n) continue;
        p = kept_[i].data;
        kept_.erase(kept_.begin() + static_cast<ptrdiff_t>(i));
        held_ -= n;
        // Under the lock: a fork (which holds it) sees the buffer either kept or inherited.
        inherited = ::madvise(p, n, MADV_DOFORK) == 0;
        break;
      }
    }
    if (p != nullptr && !inherited) {
      // (The kernel could not split the mapping, near vm.max_map_count.) A live tensor must be
      // inherited by a producer forked later: a fresh mapping instead.
      ::munmap(p, n);
      return nullptr;
    }
    if (p != nullptr && zero) std::memset(p, 0, n);
    return p;
  }
  // Keeps the buffer, or unmaps it when the cache is full.
  void give(void* p, size_t n) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (held_ + n <= kMostHeld && ::madvise(p, n, MADV_DONTFORK) == 0) {
        kept_.push_back({p, n});
        held_ += n;
        return;
      }
    }
    ::munmap(p, n);
  }
  // A forked child has only the forking thread: the lock is held across the fork (no list half
  // changed) and released on both sides. The child has none of the kept buffers (not inherited).
  void lock() { mutex_.lock(); }
  void unlock() { mutex_.unlock(); }
  void unlock_in_child() {
    kept_.clear();
    held_ = 0;
    mutex_.unlock();
  }

 private:
  struct Kept {
    void* data;
    size_t bytes;
  };
  std::mutex mutex_;
  std::vector<Kept> kept_;
  size_t held_ = 0;
};

// Made while the program starts, before any thread (a static made on first use could be half made
// at a fork); never destroyed, since tensors may be freed after main returns.
HugeBuffers* const g_huge_buffers = [] {
  auto* made = new HugeBuffers;
  ::pthread_atfork([] { g_huge_buffers->lock(); }, [] { g_huge_buffers->unlock(); },
                   [] { g_huge_buffers->unlock_in_child(); });
  return made;
}();

// Small buffers share one allocation with their reference count (16-byte aligned); large ones are
// 64-byte aligned so that vectorized fills and copies are efficient. Zeroed unless `zero` is false
// (the caller writes every byte).
std::shared_ptr<std::byte> allocate(size_t nbytes, bool zero = true) {
  constexpr size_t kSmall = 256;
  if (nbytes <= kSmall) {
    std::shared_ptr<std::byte[]> small = std::make_shared<std::byte[]>(nbytes == 0 ? 1 : nbytes);
    return std::shared_ptr<std::byte>(small, small.get());
  }
  // Huge buffers (a 48 MB image batch) are their own anonymous mappings, advised to use
  // transparent huge pages: first touch then faults once per 2 MiB instead of once per 4 KiB,
  // which on a VM costs more than writing the bytes. A fresh mapping is already zero.
  constexpr size_t kHuge = size_t{4} << 20;
  if (nbytes >= kHuge) {
    void* m = g_huge_buffers != nullptr ? g_huge_buffers->take(nbytes, zero) : nullptr;  // null: static init
    if (m == nullptr) {
      m = ::mmap(nullptr, nbytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m == MAP_FAILED) throw std::bad_alloc();
      ::madvise(m, nbytes, MADV_HUGEPAGE);  // best effort
    }
    return std::shared_ptr<std::byte>(static_cast<std::byte*>(m),
                                      [nbytes](std::byte* p) {
                                        if (g_huge_buffers != nullptr) {
                                          g_huge_buffers->give(p, nbytes);
                                        } else {
                                          ::munmap(p, nbytes);
                                        }
                                      });
  }
  constexpr std::align_val_t kAlign{64};
  auto* raw = static_cast<std::byte*>(::operator new(nbytes == 0 ? 1 : nbytes, kAlign));
  if (zero) std::memset(raw, 0, nbytes);
  return std::shared_ptr<std::byte>(raw, [](std::byte* p) { ::operator delete(p, kAlign); });
}

template <typename Fn>
decltype(auto) visit_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kBool:
      return fn(bool{});
    case DType::kUInt8:
      return fn(uint8_t{});
    case DType::kInt32:
      return fn(int32_t{});
    case DType::kInt64:
      return fn(int64_t{});
    case DType::kFloat32:
      return fn(float{});
    case DType::kFloat64:
      return fn(double{});
  }
  throw std::logic_error("unknown dtype");
}

nlohmann::json values_to_json(const Tensor& t, size_t dim, size_t& offset) {
  if (dim == t.shape().size()) {
    return visit_dtype(t.dtype(), [&](auto tag) -> nlohmann::json {
      using T = decltype(tag);
      return t.values<T>()[offset++];
    });
  }
  nlohmann::json arr = nlohmann::json::array();
  for (int64_t i = 0; i < t.shape()[dim]; ++i)
    arr.push_back(values_to_json(t, dim + 1, offset));
  return arr;
}

// `leaf_seen`: a number was met, which fixes the rank at shape.size(); a list found deeper than
// that later (as in [1, [2, 3]]) is as ragged as a number found too shallow.
void infer_shape(const nlohmann::json& v, size_t dim, Shape& shape, bool& has_fraction,
                 bool& leaf_seen) {
  if (v.is_array()) {
    const auto n = static_cast<int64_t>(v.size());
    if (dim == shape.size()) {
      if (leaf_seen)
        throw std::invalid_argument("ragged nested array: a list where a number was expected");
      shape.push_back(n);
    } else if (shape[dim] != n) {
      throw std::invalid_argument(fmt::format(
          "ragged nested array: dimension {} has lengths {} and {}", dim, shape[dim], n));
    }
    for (const auto& x : v)
      infer_shape(x, dim + 1, shape, has_fraction, leaf_seen);
    return;
  }
  if (dim != shape.size())
    throw std::invalid_argument("ragged nested array: a number where a list was expected");
  leaf_seen = true;
  if (v.is_number_float()) has_fraction = true;
  if (!v.is_number() && !v.is_boolean()) {
    throw std::invalid_argument(
        fmt::format("expected a number, bool or nested array, got {}", v.dump()));
  }
}

void fill_from_json(const nlohmann::json& v, Tensor& t, size_t& offset) {
  if (v.is_array()) {
    for (const auto& x : v)
      fill_from_json(x, t, offset);
    return;
  }
  visit_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    auto out = t.mutable_values<T>();
    if (v.is_boolean()) {
      out[offset++] = static_cast<T>(v.get<bool>());
    } else {
      out[offset++] = static_cast<T>(v.get<double>());
      if constexpr (std::is_integral_v<T>) {
        if (v.is_number_integer()) out[offset - 1] = static_cast<T>(v.get<int64_t>());
      }
    }
  });
}

}  // namespace

size_t dtype_size(DType dtype) {
  return visit_dtype(dtype, [](auto tag) { return sizeof(tag); });
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kBool:
      return "bool";
    case DType::kUInt8:
      return "uint8";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kFloat32:
      return "float32";
    case DType::kFloat64:
      return "float64";
  }
  return "unknown";
}

DType parse_dtype(std::string_view name) {
  for (DType d : {DType::kBool, DType::kUInt8, DType::kInt32, DType::kInt64, DType::kFloat32,
                  DType::kFloat64}) {
    if (dtype_name(d) == name) return d;
  }
  throw std::invalid_argument(fmt::format(
      "unknown dtype '{}' (expected bool, uint8, int32, int64, float32 or float64)", name));
}

int64_t num_elements(const Shape& shape) {
  // At most 2^40 values (a terabyte of bytes): anything larger is a mistake, and the product must
  // not overflow into a small, wrong size.
  constexpr int64_t kMaxElements = int64_t{1} << 40;
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw std::invalid_argument("negative dimension in shape " + shape_string(shape));
    if (__builtin_mul_overflow(n, d, &n) || n > kMaxElements) {
      throw std::invalid_argument("shape " + shape_string(shape) + " has too many elements");
    }
  }
  return n;
}

std::string shape_string(const Shape& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

Tensor::Tensor(DType dtype, Shape shape)
    : dtype_(dtype), shape_(std::move(shape)), num_elements_(pipelines::num_elements(shape_)) {
  if (nbytes() <= kInlineBytes) {
    inline_ = true;
  } else {
    data_ = allocate(nbytes());
  }
}

Tensor Tensor::uninitialized(DType dtype, Shape shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.num_elements_ = pipelines::num_elements(t.shape_);
  if (t.nbytes() <= kInlineBytes) {
    t.inline_ = true;
  } else {
    t.data_ = allocate(t.nbytes(), /*zero=*/false);
  }
  return t;
}

Tensor Tensor::wrap(DType dtype, Shape shape, std::shared_ptr<std::byte> data) {
  if (!data) throw std::invalid_argument("Tensor::wrap: null data");
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.num_elements_ = pipelines::num_elements(t.shape_);
  t.data_ = std::move(data);
  return t;
}

std::byte* Tensor::mutable_data() {
  if (inline_) return inline_bytes_.data();
  if (data_ && data_.use_count() > 1) {
    auto copy = allocate(nbytes());
    std::memcpy(copy.get(), data_.get(), nbytes());
    data_ = std::move(copy);
  }
  return data_.get();
}

void Tensor::check_dtype(DType expected) const {
  if (expected != dtype_) {
    throw std::invalid_argument(fmt::format("tensor has dtype {}, accessed as {}",
                                            dtype_name(dtype_), dtype_name(expected)));
  }
}

int64_t Tensor::as_int64() const {
  if (num_elements_ != 1) {
    throw std::invalid_argument(
        fmt::format("expected a single value, got a tensor of shape {}", shape_string(shape_)));
  }
  return visit_dtype(dtype_, [&](auto tag) {
    using T = decltype(tag);
    return static_cast<int64_t>(values<T>()[0]);
  });
}

double Tensor::as_double() const {
  if (num_elements_ != 1) {
    throw std::invalid_argument(
        fmt::format("expected a single value, got a tensor of shape {}", shape_string(shape_)));
  }
  return visit_dtype(dtype_, [&](auto tag) {
    using T = decltype(tag);
    return static_cast<double>(values<T>()[0]);
  });
}

Tensor Tensor::slice(int64_t begin, int64_t end) const {
  if (shape_.empty()) throw std::invalid_argument("cannot slice a scalar");
  if (begin < 0 || end < begin || end > shape_[0]) {
    throw std::out_of_range(fmt::format("slice [{}, {}) out of range for dimension 0 of size {}",
                                        begin, end, shape_[0]));
  }
  const int64_t row = shape_[0] == 0 ? 0 : num_elements_ / shape_[0];
  const size_t offset = static_cast<size_t>(begin * row) * dtype_size(dtype_);
  if (inline_) {  // a few bytes: copy them
    Shape shape = shape_;
    shape[0] = end - begin;
    Tensor t(dtype_, std::move(shape));
    std::memcpy(t.mutable_data(), inline_bytes_.data() + offset, t.nbytes());
    t.copy_origin_from(*this);
    return t;
  }
  Tensor t;
  t.copy_origin_from(*this);
  t.dtype_ = dtype_;
  t.shape_ = shape_;
  t.shape_[0] = end - begin;
  t.num_elements_ = row * (end - begin);
  t.data_ = std::shared_ptr<std::byte>(data_, data_.get() + offset);
  return t;
}

Tensor Tensor::operator[](int64_t row) const {
  Tensor t = slice(row, row + 1);
  t.shape_.erase(t.shape_.begin());
  return t;
}

Tensor Tensor::reshape(Shape shape) const {
  if (pipelines::num_elements(shape) != num_elements_) {
    throw std::invalid_argument(
        fmt::format("cannot reshape {} into {}", shape_string(shape_), shape_string(shape)));
  }
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

void Tensor::set_origin(std::shared_ptr<const std::string> file, std::optional<uint64_t> offset) {
  origin_file_ = std::move(file);
  origin_offset_ = offset.value_or(kNoOffset);
}

void Tensor::copy_origin_from(const Tensor& other) {
  origin_file_ = other.origin_file_;
  origin_offset_ = other.origin_offset_;
}

std::string Tensor::origin() const {
  if (!origin_file_) return {};
  if (origin_offset_ == kNoOffset) return *origin_file_;
  return fmt::format("{}, record at byte {}", *origin_file_, origin_offset_);
}

bool Tensor::shares_buffer_with(const Tensor& other) const {
  return data_ && other.data_ && !data_.owner_before(other.data_) &&
         !other.data_.owner_before(data_);
}

Tensor Tensor::stack(std::span<const Tensor> parts) {
  if (parts.empty()) throw std::invalid_argument("cannot stack zero tensors");
  const Tensor& first = parts[0];
  Shape shape{static_cast<int64_t>(parts.size())};
  shape.insert(shape.end(), first.shape_.begin(), first.shape_.end());
  Tensor out = uninitialized(first.dtype_, std::move(shape));  // every row is copied in below
  const size_t row = first.nbytes();
  std::byte* dst = out.mutable_data();
  for (size_t i = 0; i < parts.size(); ++i) {
    const Tensor& p = parts[i];
    if (p.dtype_ != first.dtype_ || p.shape_ != first.shape_) {
      throw std::invalid_argument(fmt::format(
          "cannot stack: part {} is {}{} but part 0 is {}{}", i, dtype_name(p.dtype_),
          shape_string(p.shape_), dtype_name(first.dtype_), shape_string(first.shape_)));
    }
    std::memcpy(dst + i * row, p.data(), row);
  }
  return out;
}

bool Tensor::operator==(const Tensor& other) const {
  // An invalid (default-constructed) tensor has no values: it equals only another invalid one.
  if (valid() != other.valid()) return false;
  return dtype_ == other.dtype_ && shape_ == other.shape_ &&
         (data() == other.data() || std::memcmp(data(), other.data(), nbytes()) == 0);
}

nlohmann::json Tensor::to_json() const {
  if (!valid()) return nullptr;
  size_t offset = 0;
  return values_to_json(*this, 0, offset);
}

Tensor Tensor::from_json(const nlohmann::json& value, const DType* dtype) {
  Shape shape;
  bool has_fraction = false;
  bool leaf_seen = false;
  infer_shape(value, 0, shape, has_fraction, leaf_seen);
  DType dt = dtype ? *dtype
                   : (value.is_boolean() ? DType::kBool
                                         : (has_fraction ? DType::kFloat64 : DType::kInt64));
  if (!dtype && value.is_array() && !has_fraction) {
    // An all-bool array stays bool; a mixed array is numeric.
    const auto flat = value.flatten();
    bool all_bool = !flat.empty();
    for (const auto& [k, v] : flat.items())
      all_bool = all_bool && v.is_boolean();
    if (all_bool) dt = DType::kBool;
  }
  Tensor t(dt, std::move(shape));
  size_t offset = 0;
  fill_from_json(value, t, offset);
  return t;
}

nlohmann::json element_to_json(const Element& element) {
  if (element.size() == 1) return element[0].to_json();
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& t : element)
    arr.push_back(t.to_json());
  return arr;
}

nlohmann::json element_to_json_full(const Element& element) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& t : element) {
    arr.push_back({{"dtype", dtype_name(t.dtype())}, {"shape", t.shape()}, {"value", t.to_json()}});
  }
  return arr;
}

std::string element_debug_string(const Element& element) {
  std::ostringstream out;
  out << "(";
  for (size_t i = 0; i < element.size(); ++i) {
    const Tensor& t = element[i];
    if (i) out << ", ";
    out << dtype_name(t.dtype()) << shape_string(t.shape());
    if (t.num_elements() <= 16) out << "=" << t.to_json().dump();
  }
  out << ")";
  return out.str();
}

}  // namespace pipeprof::pipelines
