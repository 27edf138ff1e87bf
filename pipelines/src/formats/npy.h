// numpy's .npy format (versions 1.0, 2.0 and 3.0): a magic string, a version, a header length and
// a Python dict literal {'descr': ..., 'fortran_order': ..., 'shape': (...)} padded to 64 bytes,
// then the array's bytes. Readers accept C and Fortran order, either byte order, and the dtypes
// numpy writes that a tensor can hold without loss:
//   b1 -> bool, u1 -> uint8, i4 -> int32, i8 -> int64, f4 -> float32, f8 -> float64 (as stored),
//   i1, i2, u2 -> int32, u4 -> int64, f2 -> float32 (widened).
// Other dtypes (complex, u8, strings, objects, structured records) are refused by name.
// A little-endian C-order array of a tensor dtype whose bytes are suitably aligned is a zero-copy
// view of its mapping; everything else is converted into a new tensor in one pass.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "formats/mapped_file.h"
#include "pipeprof/pipelines/formats.h"
#include "pipeprof/pipelines/tensor.h"

namespace pipeprof::pipelines::formats {

// Where a reader may put an array's values instead of memory of its own (a batch's row): for an
// array of `dtype` and `shape`, a tensor of them over memory only the caller writes, and that
// memory; nullopt to decline.
struct ValuesHome {
  Tensor tensor;
  std::byte* bytes = nullptr;
};
using ValuesDestination = std::function<std::optional<ValuesHome>(DType, const Shape&)>;

// Where the one array of a file lay in it: a reader with a ValuesDestination expects the next
// file of the same size to hold its values at the same place (a dataset's files share a layout),
// reads them there, and checks the guess afterwards.
struct ValuesGuess {
  uint64_t file_size = 0;  // 0: none
  uint64_t values_at = 0;
  uint64_t values_bytes = 0;
  DType dtype = DType::kUInt8;
  Shape shape;

  // The guess from an array read from `file`: where `t`'s values lie in the file's bytes; none
  // when they are not there (converted, inflated, or empty).
  static ValuesGuess of(const Tensor& t, std::span<const std::byte> file);
};

// A file read as `guess` says, its values straight into memory `destination` gives: the tensor
// over that memory, the values' bytes and the file's other bytes. nullopt when there is no guess,
// the destination declines, or the file is not of the guessed size. Its reader then checks that
// the values were where the guess put them. Throws FormatError as read_split.
struct GuessedRead {
  ValuesHome home;
  std::span<std::byte> values;
  SplitFile file;
};
std::optional<GuessedRead> read_as_guessed(const std::string& path, const ValuesGuess& guess,
                                           const ValuesDestination& destination);

// read_npy, its values straight into `destination`'s memory when the file is laid out as the
// last .npy file this thread read this way (a local file of the same size: checked after the
// read, the header's dtype, shape and length); as read_npy otherwise, and the tensor is then not
// in `destination`.
Tensor read_npy(const std::string& path, const Storage& storage, WholeFile how,
                const ValuesDestination& destination);

struct NpyHeader {
  int major = 1;
  int minor = 0;
  std::string descr;  // as written, e.g. "<f4"
  bool fortran_order = false;
  Shape shape;
  size_t data_offset = 0;  // bytes from the start of the .npy data to the array's first byte
  size_t data_bytes = 0;   // the array's bytes in the file
  DType dtype = DType::kFloat32;  // the tensor's dtype
};

// Parses and checks a header at the start of `bytes` (the whole .npy content); the array must
// fit in `bytes`. `where` names the data in errors ("x.npy", "x.npz: member 'a.npy'"); offsets in
// errors are relative to the start of `bytes`. Throws FormatError.
// `total_size`: the size of the whole content when `bytes` holds only its beginning (an archive
// member read in pieces); the header must lie in `bytes`.
NpyHeader parse_npy_header(std::span<const std::byte> bytes, const std::string& where,
                           size_t total_size = static_cast<size_t>(-1));
// The dtype and layout of `h` allow reading the values straight into a tensor (no conversion).
bool npy_values_as_stored(const NpyHeader& h);

// The array of `bytes` (the whole .npy content) as a tensor. When `owner` keeps `bytes` alive
// (a mapping), a layout that allows it becomes a zero-copy view; otherwise the values are copied.
Tensor decode_npy(std::span<const std::byte> bytes, const std::string& where,
                  const std::shared_ptr<const void>& owner = nullptr);

// The header encode_npy writes for an array of `dtype` and `shape`: the array's bytes follow it
// (for writers that stream the values rather than hold them in a tensor).
std::vector<std::byte> encode_npy_header(DType dtype, const Shape& shape,
                                         const NpyWriteOptions& options = {});

// read_npy, encode_npy, write_npy and random_tensor: pipeprof/pipelines/formats.h.

}  // namespace pipeprof::pipelines::formats
