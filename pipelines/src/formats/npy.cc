#include "formats/npy.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <bit>
#include <cctype>
#include <cstring>
#include <limits>
#include <optional>

#include "formats/format_error.h"
#include "formats/mapped_file.h"
#include "io/filesystem.h"
#include "pipeprof/pipelines/functions.h"

namespace pipeprof::pipelines::formats {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
constexpr size_t kMaxRank = 32;
constexpr size_t kMaxHeaderBytes = size_t{1} << 20;

// How the file stores a value, and the tensor dtype it becomes.
struct FileType {
  char kind = 'f';  // b, u, i, f
  size_t size = 4;
  bool swap = false;  // big-endian on this (little-endian) machine
  DType dtype = DType::kFloat32;
  bool exact() const { return !swap && size == dtype_size(dtype); }
};

std::optional<DType> tensor_dtype(char kind, size_t size) {
  switch (kind) {
    case 'b':
      if (size == 1) return DType::kBool;
      break;
    case 'u':
      if (size == 1) return DType::kUInt8;
      if (size == 2) return DType::kInt32;
      if (size == 4) return DType::kInt64;
      break;
    case 'i':
      if (size == 1 || size == 2 || size == 4) return DType::kInt32;
      if (size == 8) return DType::kInt64;
      break;
    case 'f':
      if (size == 2 || size == 4) return DType::kFloat32;
      if (size == 8) return DType::kFloat64;
      break;
    default:
      break;
  }
  return std::nullopt;
}

FileType parse_descr(const std::string& descr, const std::string& where) {
  const auto bad = [&](const std::string& why) -> FormatError {
    return FormatError(fmt::format("{}: header: dtype '{}': {}", where, descr, why));
  };
  if (descr.size() < 3 || descr.size() > 8 || std::string("<>|=").find(descr[0]) == std::string::npos)
    throw bad("expected a byte order, a kind and a size (e.g. '<f4')");
  FileType t;
  t.kind = descr[1];
  size_t size = 0;
  for (size_t i = 2; i < descr.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(descr[i]))) throw bad("the size is not a number");
    size = size * 10 + static_cast<size_t>(descr[i] - '0');
  }
  t.size = size;
  auto dtype = tensor_dtype(t.kind, t.size);
  if (!dtype) {
    throw bad(
        "not a dtype a tensor holds without loss (b1, u1, u2, u4, i1, i2, i4, i8, f2, f4, f8)");
  }
  t.dtype = *dtype;
  t.swap = descr[0] == '>' && t.size > 1;
  return t;
}

// A minimal reader of the Python literal numpy writes: a dict of string keys whose values are
// strings, True/False or tuples of integers.
class Literal {
 public:
  Literal(std::string_view text, std::string where, size_t base)
      : text_(text), where_(std::move(where)), base_(base) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw FormatError(fmt::format("{}: offset {}: header: {}", where_, base_ + pos_, what));
  }
  void skip() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }
  bool eat(char c) {
    skip();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(fmt::format("expected '{}'", c));
  }
  bool peek(char c) {
    skip();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  std::string string() {
    skip();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
      fail("expected a quoted string");
    const char q = text_[pos_++];
    const size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != q) {
      if (text_[pos_] == '\\') fail("escapes in strings are not supported");
      ++pos_;
    }
    if (pos_ >= text_.size()) fail("unterminated string");
    return std::string(text_.substr(start, pos_++ - start));
  }
  bool boolean() {
    skip();
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail("expected True or False");
  }
  int64_t integer() {
    skip();
    if (pos_ < text_.size() && text_[pos_] == '-') fail("negative dimension");
    if (pos_ >= text_.size() || !std::isdigit(static_cast<unsigned char>(text_[pos_])))
      fail("expected an integer");
    int64_t v = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) fail("dimension too large");
      v = v * 10 + (text_[pos_++] - '0');
    }
    if (eat('L')) {  // Python 2's long suffix
    }
    return v;
  }
  Shape tuple() {
    expect('(');
    Shape shape;
    while (!eat(')')) {
      if (shape.size() >= kMaxRank) fail(fmt::format("more than {} dimensions", kMaxRank));
      shape.push_back(integer());
      if (!eat(',')) {
        expect(')');
        break;
      }
    }
    return shape;
  }
  bool at_end() {
    skip();
    return pos_ == text_.size();
  }

 private:
  std::string_view text_;
  std::string where_;
  size_t base_;
  size_t pos_ = 0;
};

uint16_t read_u16(const std::byte* p) {
  return static_cast<uint16_t>(std::to_integer<unsigned>(p[0]) |
                               (std::to_integer<unsigned>(p[1]) << 8));
}
uint32_t read_u32(const std::byte* p) {
  return std::to_integer<uint32_t>(p[0]) | (std::to_integer<uint32_t>(p[1]) << 8) |
         (std::to_integer<uint32_t>(p[2]) << 16) | (std::to_integer<uint32_t>(p[3]) << 24);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000U) << 16;
  uint32_t exp = (h >> 10) & 0x1FU;
  uint32_t mant = h & 0x3FFU;
  uint32_t bits = 0;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400U) == 0) {
        mant <<= 1;
        --exp;
      }
      bits = sign | (exp << 23) | ((mant & 0x3FFU) << 13);
    }
  } else if (exp == 0x1F) {
    bits = sign | 0x7F800000U | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

// One stored value at `p` (in the file's type) as the tensor's type, written at `out`.
void convert_value(const std::byte* p, const FileType& t, std::byte* out) {
  std::byte v[8];
  std::memcpy(v, p, t.size);
  if (t.swap) {
    for (size_t i = 0; i < t.size / 2; ++i)
      std::swap(v[i], v[t.size - 1 - i]);
  }
  if (t.size == dtype_size(t.dtype)) {
    if (t.dtype == DType::kBool) v[0] = std::byte{v[0] != std::byte{0}};
    std::memcpy(out, v, t.size);
    return;
  }
  if (t.kind == 'f') {  // f2 -> f4
    uint16_t h = 0;
    std::memcpy(&h, v, 2);
    const float f = half_to_float(h);
    std::memcpy(out, &f, 4);
  } else if (t.dtype == DType::kInt32) {
    int32_t x = 0;
    if (t.kind == 'i' && t.size == 1) {
      int8_t s = 0;
      std::memcpy(&s, v, 1);
      x = s;
    } else if (t.kind == 'i') {
      int16_t s = 0;
      std::memcpy(&s, v, 2);
      x = s;
    } else {
      uint16_t s = 0;
      std::memcpy(&s, v, 2);
      x = s;
    }
    std::memcpy(out, &x, 4);
  } else {  // u4 -> i8
    uint32_t s = 0;
    std::memcpy(&s, v, 4);
    const int64_t x = s;
    std::memcpy(out, &x, 8);
  }
}

std::string shape_tuple(const Shape& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

std::string_view descr_of(DType dtype) {
  switch (dtype) {
    case DType::kBool:
      return "|b1";
    case DType::kUInt8:
      return "|u1";
    case DType::kInt32:
      return "<i4";
    case DType::kInt64:
      return "<i8";
    case DType::kFloat32:
      return "<f4";
    case DType::kFloat64:
      return "<f8";
  }
  return "?";
}

// For each row-major index, the element index in column-major order, walked with an odometer.
template <typename Visit>
void for_each_fortran_index(const Shape& shape, Visit&& visit) {
  const size_t rank = shape.size();
  const int64_t n = num_elements(shape);
  if (rank == 0 || n == 0) {
    if (n == 1) visit(0, 0);
    return;
  }
  std::vector<int64_t> idx(rank);
  std::vector<int64_t> stride(rank);
  stride[0] = 1;
  for (size_t k = 1; k < rank; ++k)
    stride[k] = stride[k - 1] * shape[k - 1];
  int64_t f = 0;
  for (int64_t c = 0; c < n; ++c) {
    visit(c, f);
    for (size_t k = rank; k-- > 0;) {
      if (++idx[k] < shape[k]) {
        f += stride[k];
        break;
      }
      f -= stride[k] * (shape[k] - 1);
      idx[k] = 0;
    }
  }
}

}  // namespace

NpyHeader parse_npy_header(std::span<const std::byte> bytes, const std::string& where,
                           size_t total_size) {
  if (total_size == static_cast<size_t>(-1)) total_size = bytes.size();
  if (bytes.size() < 10)
    throw FormatError(fmt::format("{}: offset 0: {} bytes, too short for a .npy header", where,
                                  bytes.size()));
  if (std::memcmp(bytes.data(), kMagic, kMagicSize) != 0)
    throw FormatError(fmt::format("{}: offset 0: not a .npy file (wrong magic)", where));
  NpyHeader h;
  h.major = std::to_integer<int>(bytes[6]);
  h.minor = std::to_integer<int>(bytes[7]);
  if (h.major < 1 || h.major > 3 || h.minor != 0)
    throw FormatError(fmt::format("{}: offset 6: unsupported .npy version {}.{} (1.0, 2.0, 3.0)",
                                  where, h.major, h.minor));
  size_t header_len = 0, start = 0;
  if (h.major == 1) {
    header_len = read_u16(bytes.data() + 8);
    start = 10;
  } else {
    if (bytes.size() < 12)
      throw FormatError(fmt::format("{}: offset 8: truncated header length", where));
    header_len = read_u32(bytes.data() + 8);
    start = 12;
  }
  if (header_len > kMaxHeaderBytes || header_len > bytes.size() - start) {
    throw FormatError(fmt::format("{}: offset 8: header length {} exceeds the file ({} bytes)",
                                  where, header_len, total_size));
  }
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + start), header_len);
  Literal lit(text, where, start);
  bool have_descr = false, have_order = false, have_shape = false;
  lit.expect('{');
  while (!lit.eat('}')) {
    const std::string key = lit.string();
    lit.expect(':');
    if (key == "descr") {
      if (lit.peek('[')) lit.fail("structured dtypes (records) are not supported");
      h.descr = lit.string();
      have_descr = true;
    } else if (key == "fortran_order") {
      h.fortran_order = lit.boolean();
      have_order = true;
    } else if (key == "shape") {
      h.shape = lit.tuple();
      have_shape = true;
    } else {
      lit.fail(fmt::format("unknown key '{}'", key));
    }
    if (!lit.eat(',')) {
      lit.expect('}');
      break;
    }
  }
  if (!lit.at_end()) lit.fail("text after the dict");
  if (!have_descr || !have_order || !have_shape)
    lit.fail("the dict lacks one of 'descr', 'fortran_order', 'shape'");
  const FileType t = parse_descr(h.descr, where);
  h.dtype = t.dtype;
  h.data_offset = start + header_len;
  // The array's size, checked against the file before anything is allocated.
  const size_t available = total_size - h.data_offset;
  uint64_t count = 1;
  for (int64_t d : h.shape) {
    if (d != 0 && count > available / static_cast<uint64_t>(d)) {
      throw FormatError(fmt::format(
          "{}: offset {}: shape {} needs more than the {} bytes after the header", where,
          h.data_offset, shape_tuple(h.shape), available));
    }
    count *= static_cast<uint64_t>(d);
  }
  if (count > available / t.size) {
    throw FormatError(fmt::format("{}: offset {}: shape {} of '{}' needs {} bytes, the file has {}",
                                  where, h.data_offset, shape_tuple(h.shape), h.descr,
                                  count * t.size, available));
  }
  h.data_bytes = static_cast<size_t>(count) * t.size;
  return h;
}

bool npy_values_as_stored(const NpyHeader& h) {
  return !(h.fortran_order && h.shape.size() > 1) && h.dtype != DType::kBool &&
         (h.descr[0] != '>' || dtype_size(h.dtype) == 1) &&
         static_cast<size_t>(std::stoul(h.descr.substr(2))) == dtype_size(h.dtype);
}

Tensor decode_npy(std::span<const std::byte> bytes, const std::string& where,
                  const std::shared_ptr<const void>& owner) {
  const NpyHeader h = parse_npy_header(bytes, where);
  const FileType t = parse_descr(h.descr, where);
  const std::byte* src = bytes.data() + h.data_offset;
  const bool c_order = !h.fortran_order || h.shape.size() <= 1;
  if (owner && t.exact() && c_order &&
      reinterpret_cast<uintptr_t>(src) % dtype_size(t.dtype) == 0 && h.data_bytes > 0) {
    // A view of the mapping; the aliasing pointer keeps the whole mapping alive.
    std::shared_ptr<std::byte> data(std::const_pointer_cast<void>(owner),
                                    const_cast<std::byte*>(src));
    if (t.dtype != DType::kBool) return Tensor::wrap(t.dtype, h.shape, std::move(data));
  }
  Tensor out(t.dtype, h.shape);
  std::byte* dst = out.mutable_data();
  const size_t out_size = dtype_size(t.dtype);
  const auto n = static_cast<int64_t>(out.num_elements());
  if (c_order) {
    if (t.exact() && t.dtype != DType::kBool) {
      if (h.data_bytes > 0) std::memcpy(dst, src, h.data_bytes);
    } else {
      for (int64_t i = 0; i < n; ++i)
        convert_value(src + static_cast<size_t>(i) * t.size, t, dst + static_cast<size_t>(i) * out_size);
    }
  } else {
    for_each_fortran_index(h.shape, [&](int64_t c, int64_t f) {
      convert_value(src + static_cast<size_t>(f) * t.size, t,
                    dst + static_cast<size_t>(c) * out_size);
    });
  }
  return out;
}

Tensor read_npy(const std::string& path, const Storage& storage, WholeFile how) {
  const auto file = MappedFile::open(path, storage, how);
  return decode_npy(file->bytes(), path, file);
}

ValuesGuess ValuesGuess::of(const Tensor& t, std::span<const std::byte> file) {
  if (t.nbytes() == 0 || t.data() < file.data() || t.data() + t.nbytes() > file.data() + file.size())
    return {};
  return ValuesGuess{.file_size = file.size(),
                     .values_at = static_cast<uint64_t>(t.data() - file.data()),
                     .values_bytes = t.nbytes(),
                     .dtype = t.dtype(),
                     .shape = t.shape()};
}

std::optional<GuessedRead> read_as_guessed(const std::string& path, const ValuesGuess& guess,
                                           const ValuesDestination& destination) {
  if (guess.file_size == 0) return std::nullopt;
  auto home = destination(guess.dtype, guess.shape);
  if (!home) return std::nullopt;
  const std::span<std::byte> values(home->bytes, static_cast<size_t>(guess.values_bytes));
  auto file = read_split(path, guess.file_size, guess.values_at, values);
  if (!file) return std::nullopt;
  return GuessedRead{std::move(*home), values, std::move(*file)};
}

namespace {

// The layout of the last .npy file this thread read with a destination.
thread_local ValuesGuess t_npy_layout;

// The file's values read straight into `destination`'s memory when it is laid out as
// t_npy_layout says (checked after the read); nullopt otherwise, or when anything is amiss (the
// caller then reads the file as usual, which reports what is wrong with it).
std::optional<Tensor> read_npy_placed(const std::string& path, const ValuesDestination& destination) {
  const ValuesGuess g = t_npy_layout;
  auto read = read_as_guessed(path, g, destination);
  if (!read) return std::nullopt;
  try {
    const NpyHeader h = parse_npy_header(read->file.head, path, static_cast<size_t>(g.file_size));
    if (!npy_values_as_stored(h) || h.data_offset != read->file.head.size() ||
        h.data_bytes != read->values.size() || h.dtype != g.dtype || h.shape != g.shape) {
      return std::nullopt;
    }
  } catch (const FormatError&) {
    return std::nullopt;
  }
  return std::move(read->home.tensor);
}

}  // namespace

Tensor read_npy(const std::string& path, const Storage& storage, WholeFile how,
                const ValuesDestination& destination) {
  if (how == WholeFile::kDirect || !io::is_local(path)) return read_npy(path, storage, how);
  if (auto placed = read_npy_placed(path, destination)) return std::move(*placed);
  const auto file = MappedFile::open(path, storage, how);
  Tensor t = decode_npy(file->bytes(), path, file);
  t_npy_layout = ValuesGuess::of(t, file->bytes());
  return t;
}

std::vector<std::byte> encode_npy_header(DType dtype, const Shape& shape,
                                         const NpyWriteOptions& options) {
  const bool fortran = options.fortran_order && shape.size() > 1;
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': {}, 'shape': {}, }}",
                                 descr_of(dtype), fortran ? "True" : "False", shape_tuple(shape));
  int major = options.major;
  if (major == 0) major = dict.size() + 11 + 64 < 65536 ? 1 : 2;
  if (major < 1 || major > 3) throw std::invalid_argument("npy: version must be 1, 2 or 3");
  const size_t prefix = major == 1 ? 10 : 12;
  size_t total = prefix + dict.size() + 1;  // + '\n'
  const size_t pad = (64 - total % 64) % 64;
  dict.append(pad, ' ');
  dict.push_back('\n');
  if (major == 1 && dict.size() > 65535) throw std::invalid_argument("npy: header too long for 1.0");
  std::vector<std::byte> out(prefix + dict.size());
  std::memcpy(out.data(), kMagic, kMagicSize);
  out[6] = std::byte(major);
  out[7] = std::byte{0};
  const auto len = static_cast<uint32_t>(dict.size());
  for (size_t i = 0; i < prefix - 8; ++i)
    out[8 + i] = std::byte((len >> (8 * i)) & 0xFFU);
  std::memcpy(out.data() + prefix, dict.data(), dict.size());
  return out;
}

std::vector<std::byte> encode_npy(const Tensor& tensor, const NpyWriteOptions& options) {
  const bool fortran = options.fortran_order && tensor.rank() > 1;
  std::vector<std::byte> out = encode_npy_header(tensor.dtype(), tensor.shape(), options);
  const size_t header = out.size();
  out.resize(header + tensor.nbytes());
  std::byte* dst = out.data() + header;
  if (!fortran) {
    if (tensor.nbytes() > 0) std::memcpy(dst, tensor.data(), tensor.nbytes());
  } else {
    const size_t s = dtype_size(tensor.dtype());
    for_each_fortran_index(tensor.shape(), [&](int64_t c, int64_t f) {
      std::memcpy(dst + static_cast<size_t>(f) * s, tensor.data() + static_cast<size_t>(c) * s, s);
    });
  }
  return out;
}

void write_npy(const std::string& path, const Tensor& tensor, const NpyWriteOptions& options) {
  write_file(path, encode_npy(tensor, options));
}

Tensor random_tensor(DType dtype, const Shape& shape, uint64_t seed) {
  Tensor t(dtype, shape);
  std::vector<float> u(static_cast<size_t>(t.num_elements()));
  fill_random(u, seed);
  std::byte* out = t.mutable_data();
  for (size_t i = 0; i < u.size(); ++i) {
    const double v = u[i];
    switch (dtype) {
      case DType::kBool:
        out[i] = std::byte{v >= 0.5};
        break;
      case DType::kUInt8:
        out[i] = std::byte(static_cast<uint8_t>(v * 256.0));
        break;
      case DType::kInt32: {
        const auto x = static_cast<int32_t>((v - 0.5) * 4294967296.0);
        std::memcpy(out + 4 * i, &x, 4);
        break;
      }
      case DType::kInt64: {
        const auto x = static_cast<int64_t>((v - 0.5) * 9.2e18) ^ static_cast<int64_t>(i);
        std::memcpy(out + 8 * i, &x, 8);
        break;
      }
      case DType::kFloat32: {
        const auto x = static_cast<float>(v);
        std::memcpy(out + 4 * i, &x, 4);
        break;
      }
      case DType::kFloat64:
        std::memcpy(out + 8 * i, &v, 8);
        break;
    }
  }
  return t;
}

}  // namespace pipeprof::pipelines::formats
