// The file formats of pipelines/src/formats/ as other modules use them (data generators, tools,
// benchmarks): readers and writers of numpy .npy/.npz, HDF5 and JPEG files, and the random payloads
// generators fill them with. Every reader checks what it reads against the file and throws
// FormatError naming the file and where in it (byte offset, archive member, dataset); nothing is
// allocated beyond what the file can hold. Details of each format: src/formats/<format>.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "pipeprof/pipelines/tensor.h"

namespace pipeprof::pipelines {
class StorageContext;
}

namespace pipeprof::pipelines::formats {

// The readers take remote objects (http:// URLs) where they take paths: read whole into memory
// with `storage`'s read policy, through its cache, counted there (remote.h; nullptr: the defaults).
using Storage = std::shared_ptr<const StorageContext>;

class FormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// How a whole array file (npy, npz, hdf5) comes into memory:
//   kAuto    mapped when larger than 1 MiB (arrays are views of the page cache), read otherwise
//   kRead    read calls into memory, never mapped (DLIO's reader.dont_use_mmap)
//   kDirect  O_DIRECT reads into aligned memory, bypassing the page cache (DLIO's reader.odirect)
// Remote objects are always read into memory.
enum class WholeFile { kAuto, kRead, kDirect };

// --- numpy .npy (versions 1.0, 2.0, 3.0; C or Fortran order) ---
struct NpyWriteOptions {
  int major = 0;               // 0: 1.0 when the header fits, else 2.0; or 1, 2, 3
  bool fortran_order = false;  // write the values in column-major order
};
// Maps `path` and decodes it (a zero-copy view of the mapping where the layout allows).
Tensor read_npy(const std::string& path, const Storage& storage = nullptr,
                WholeFile how = WholeFile::kAuto);
std::vector<std::byte> encode_npy(const Tensor& tensor, const NpyWriteOptions& options = {});
void write_npy(const std::string& path, const Tensor& tensor, const NpyWriteOptions& options = {});

// --- numpy .npz (a zip of .npy members, stored or deflated) ---
// The arrays by key (member name without ".npy"), in archive order or in the order of `keys`.
NamedTensors read_npz(const std::string& path, const std::vector<std::string>& keys = {},
                      const Storage& storage = nullptr, WholeFile how = WholeFile::kAuto);
std::vector<std::string> npz_keys(const std::string& path, const Storage& storage = nullptr);
// As numpy's savez (stored) or savez_compressed (deflated).
void write_npz(const std::string& path, const NamedTensors& arrays, bool compressed);

// --- HDF5 (libhdf5) ---
// The datasets at the given paths, in that order; every dataset (depth-first, by name) when empty.
NamedTensors read_hdf5(const std::string& path, const std::vector<std::string>& datasets = {},
                       const Storage& storage = nullptr, WholeFile how = WholeFile::kAuto);
struct Hdf5WriteOptions {
  int deflate_level = 0;  // 0: contiguous, stored; 1..9: chunked (by rows) and deflated
};
void write_hdf5(const std::string& path, const NamedTensors& datasets,
                const Hdf5WriteOptions& options = {});

// --- JPEG (libturbojpeg) ---
// channels: 0 keeps the image's own (1 for grayscale, else 3), 1 gray, 3 RGB; uint8 [h, w, c].
Tensor decode_jpeg(std::span<const std::byte> bytes, int channels, const std::string& where);
// `image`: uint8 [height, width, 1 or 3] (or [height, width]); quality 1..100.
std::vector<std::byte> encode_jpeg(const Tensor& image, int quality = 90);
void write_jpeg(const std::string& path, const Tensor& image, int quality = 90);

// --- PNG (stb_image_write; libpng reads) ---
// `image`: uint8 [height, width] or [height, width, 1..4]; 8 bits a channel, deflated.
std::vector<std::byte> encode_png(const Tensor& image);
// [h, w, c] with the file's channels (1 gray, 2 gray and alpha, 3 RGB, 4 RGBA; a palette expands
// to its colours): uint8, or int32 holding the values of a 16-bit image (with alpha, its colours
// premultiplied, as libpng gives 16-bit data). Throws FormatError naming `where`: not a PNG,
// damaged (libpng's message), or an image implausibly large for its bytes.
Tensor decode_png(std::span<const std::byte> bytes, const std::string& where);

// --- CSV (DLIO's csv format: pandas' to_csv) ---
// A header line, then a row per sample of comma-separated numbers (pandas' index first, as its
// read_csv().to_numpy() keeps it): a [rows, columns] tensor, int64 when every value is an integer,
// float64 otherwise (an empty value is NaN, as pandas reads it). Throws FormatError naming `where`,
// the line and the column of a value that is not a number, and a row of another width than the
// header.
Tensor decode_csv(std::span<const std::byte> bytes, const std::string& where);

// A tensor of `dtype` and `shape` filled with pseudo-random values from `seed`: floats in [0, 1),
// integers over their range, bools. The same seed gives the same values.
Tensor random_tensor(DType dtype, const Shape& shape, uint64_t seed);

}  // namespace pipeprof::pipelines::formats
