#include "formats/hdf5.h"

#include <fmt/format.h>
#include <hdf5.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "formats/format_error.h"
#include "formats/mapped_file.h"
#include "io/filesystem.h"

namespace pipeprof::pipelines::formats {
namespace {

constexpr hsize_t kMaxDeflateRatio = 1032;

std::mutex& hdf5_mutex() {
  static std::mutex mu;
  return mu;
}

// Before the first call into libhdf5 (once): no clean-up at exit (H5dont_atexit), and no printing
// of its error stacks (errors are reported by message). Every file is closed before its call
// returns, so the exit-time clean-up has nothing to write; after reading damaged files it only
// found blocks the library itself had lost and printed "HDF5: infinite loop closing library".
void quiet_errors() {
  static const bool done = [] {
    H5dont_atexit();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)done;
}

// The innermost description on libhdf5's error stack, e.g. "truncated file: eof = 1000, ...".
std::string last_error() {
  std::string out;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned n, const H5E_error2_t* e, void* data) -> herr_t {
        auto* s = static_cast<std::string*>(data);
        if (n == 0 && e->desc != nullptr) *s = e->desc;
        return 0;
      },
      &out);
  H5Eclear2(H5E_DEFAULT);
  return out.empty() ? "libhdf5 error" : out;
}

// An HDF5 identifier closed by `close` when it goes out of scope.
class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

herr_t close_enum(hid_t id) {
  return H5Tclose(id);
}

// An enum of uint8 FALSE=0, TRUE=1: how h5py stores numpy bools.
hid_t bool_type() {
  const hid_t t = H5Tenum_create(H5T_NATIVE_UINT8);
  uint8_t v = 0;
  H5Tenum_insert(t, "FALSE", &v);
  v = 1;
  H5Tenum_insert(t, "TRUE", &v);
  return t;
}

struct MemType {
  DType dtype;
  hid_t type;  // a native type, or an enum to close
  bool owned = false;
};

MemType memory_type(hid_t file_type, const std::string& where) {
  const H5T_class_t cls = H5Tget_class(file_type);
  const size_t size = H5Tget_size(file_type);
  if (cls == H5T_INTEGER) {
    const bool is_signed = H5Tget_sign(file_type) == H5T_SGN_2;
    if (!is_signed && size == 1) return {DType::kUInt8, H5T_NATIVE_UINT8};
    if ((is_signed && size <= 4) || (!is_signed && size == 2)) return {DType::kInt32, H5T_NATIVE_INT32};
    if ((is_signed && size == 8) || (!is_signed && size == 4)) return {DType::kInt64, H5T_NATIVE_INT64};
    throw FormatError(fmt::format("{}: {}-byte {} integers have no tensor dtype", where, size,
                                  is_signed ? "signed" : "unsigned"));
  }
  if (cls == H5T_FLOAT) {
    if (size <= 4) return {DType::kFloat32, H5T_NATIVE_FLOAT};
    if (size == 8) return {DType::kFloat64, H5T_NATIVE_DOUBLE};
    throw FormatError(fmt::format("{}: {}-byte floats have no tensor dtype", where, size));
  }
  if (cls == H5T_ENUM && size == 1 && H5Tget_nmembers(file_type) == 2) {
    return {DType::kBool, bool_type(), true};
  }
  throw FormatError(fmt::format(
      "{}: datatype class {} has no tensor dtype (integers, floats and h5py's bools)", where,
      static_cast<int>(cls)));
}

hid_t file_type_of(DType dtype) {
  switch (dtype) {
    case DType::kBool:
      return H5T_NATIVE_UINT8;  // replaced by the bool enum
    case DType::kUInt8:
      return H5T_STD_U8LE;
    case DType::kInt32:
      return H5T_STD_I32LE;
    case DType::kInt64:
      return H5T_STD_I64LE;
    case DType::kFloat32:
      return H5T_IEEE_F32LE;
    case DType::kFloat64:
      return H5T_IEEE_F64LE;
  }
  return H5T_NATIVE_UINT8;
}
hid_t native_type_of(DType dtype) {
  switch (dtype) {
    case DType::kBool:
    case DType::kUInt8:
      return H5T_NATIVE_UINT8;
    case DType::kInt32:
      return H5T_NATIVE_INT32;
    case DType::kInt64:
      return H5T_NATIVE_INT64;
    case DType::kFloat32:
      return H5T_NATIVE_FLOAT;
    case DType::kFloat64:
      return H5T_NATIVE_DOUBLE;
  }
  return H5T_NATIVE_UINT8;
}

Tensor read_dataset(hid_t file, const std::string& path, const std::string& name,
                    uint64_t file_size) {
  const std::string where = fmt::format("{}: dataset '{}'", path, name);
  if (H5Lexists(file, name.c_str(), H5P_DEFAULT) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw FormatError(fmt::format("{}: no such dataset", where));
  }
  Handle ds(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.ok()) throw FormatError(fmt::format("{}: {}", where, last_error()));
  Handle space(H5Dget_space(ds.get()), H5Sclose);
  if (!space.ok()) throw FormatError(fmt::format("{}: {}", where, last_error()));
  const H5S_class_t sclass = H5Sget_simple_extent_type(space.get());
  if (sclass != H5S_SIMPLE && sclass != H5S_SCALAR)
    throw FormatError(fmt::format("{}: a dataset without a simple dataspace", where));
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0 || rank > 32) throw FormatError(fmt::format("{}: rank {} unsupported", where, rank));
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  if (rank > 0 && H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0)
    throw FormatError(fmt::format("{}: {}", where, last_error()));
  Handle ftype(H5Dget_type(ds.get()), H5Tclose);
  if (!ftype.ok()) throw FormatError(fmt::format("{}: {}", where, last_error()));
  const size_t fsize = H5Tget_size(ftype.get());
  // The declared size against what the file can hold, before anything is allocated.
  Handle plist(H5Dget_create_plist(ds.get()), H5Pclose);
  const int filters = plist.ok() ? H5Pget_nfilters(plist.get()) : 0;
  const hsize_t stored = H5Dget_storage_size(ds.get());
  const hsize_t limit = filters > 0 ? stored * kMaxDeflateRatio + (hsize_t{1} << 20) : file_size;
  hsize_t count = 1;
  Shape shape;
  for (hsize_t d : dims) {
    if (d != 0 && count > limit / d) {
      throw FormatError(fmt::format("{}: shape of {} dimensions declares more than the file's {} bytes",
                                    where, rank, file_size));
    }
    count *= d;
    shape.push_back(static_cast<int64_t>(d));
  }
  if (fsize == 0 || count > limit / fsize) {
    throw FormatError(fmt::format("{}: declares {} values of {} bytes, more than the file holds ({} bytes)",
                                  where, count, fsize, file_size));
  }
  MemType mt = memory_type(ftype.get(), where);
  Handle owned(mt.owned ? mt.type : -1, close_enum);
  Tensor t(mt.dtype, shape);
  if (count > 0 &&
      H5Dread(ds.get(), mt.type, H5S_ALL, H5S_ALL, H5P_DEFAULT, t.mutable_data()) < 0) {
    throw FormatError(fmt::format("{}: read failed: {}", where, last_error()));
  }
  return t;
}

std::vector<std::string> all_datasets(hid_t file, const std::string& path) {
  std::vector<std::string> names;
  const herr_t rc = H5Ovisit2(
      file, H5_INDEX_NAME, H5_ITER_INC,
      [](hid_t, const char* name, const H5O_info_t* info, void* data) -> herr_t {
        if (info->type == H5O_TYPE_DATASET)
          static_cast<std::vector<std::string>*>(data)->emplace_back(name);
        return 0;
      },
      &names, H5O_INFO_BASIC);
  if (rc < 0) throw FormatError(fmt::format("{}: cannot list datasets: {}", path, last_error()));
  return names;
}

}  // namespace

NamedTensors read_hdf5(const std::string& path, const std::vector<std::string>& datasets,
                       const Storage& storage, WholeFile how) {
  // A remote object, or a file read with O_DIRECT, is read whole into memory and opened as a file
  // image; a local file otherwise through libhdf5's own read calls.
  const bool remote = !io::is_local(path) || how == WholeFile::kDirect;
  uint64_t file_size = 0;
  std::shared_ptr<const MappedFile> image;
  if (remote) {
    image = MappedFile::open(path, storage, how);
    file_size = image->size();
  } else {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      throw FormatError(fmt::format("{}: cannot open: no such file", path));
    }
    file_size = static_cast<uint64_t>(st.st_size);
  }
  std::lock_guard<std::mutex> lock(hdf5_mutex());
  quiet_errors();
  Handle fapl(remote ? H5Pcreate(H5P_FILE_ACCESS) : H5I_INVALID_HID, H5Pclose);
  if (remote) {
    // HDF5's in-memory ("core") driver over the object's bytes: a file image.
    constexpr std::array<char, 8> kSignature = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
    if (image->size() < kSignature.size() ||
        std::memcmp(image->bytes().data(), kSignature.data(), kSignature.size()) != 0) {
      throw FormatError(fmt::format("{}: offset 0: not an HDF5 file (no superblock signature)", path));
    }
    if (!fapl.ok() || H5Pset_fapl_core(fapl.get(), 1 << 20, 0) < 0 ||
        H5Pset_file_image(fapl.get(), const_cast<std::byte*>(image->bytes().data()), image->size()) < 0) {
      throw FormatError(fmt::format("{}: cannot set up an HDF5 file image: {}", path, last_error()));
    }
  } else {
    if (H5Fis_hdf5(path.c_str()) <= 0) {
      H5Eclear2(H5E_DEFAULT);
      throw FormatError(fmt::format("{}: offset 0: not an HDF5 file (no superblock signature)", path));
    }
  }
  // A file image of a local file opens under another name: the core driver refuses to open an
  // image under the name of a file that exists.
  const std::string open_name = remote && io::is_local(path) ? path + " (read with O_DIRECT)" : path;
  Handle file(H5Fopen(open_name.c_str(), H5F_ACC_RDONLY, remote ? fapl.get() : H5P_DEFAULT), H5Fclose);
  if (!file.ok()) throw FormatError(fmt::format("{}: cannot open as HDF5: {}", path, last_error()));
  const std::vector<std::string> names = datasets.empty() ? all_datasets(file.get(), path) : datasets;
  NamedTensors out;
  for (const std::string& name : names)
    out.emplace_back(name, read_dataset(file.get(), path, name, file_size));
  return out;
}

namespace {

// Creates dataset `name` (intermediate groups as needed) of `dtype` and `shape`: contiguous, or
// chunked by rows and deflated at `deflate_level` > 0; `streamed`: contiguous, its space allocated
// now and never filled (its bytes are written outside the library). Returns the dataset's id.
hid_t create_dataset(hid_t file, const std::string& where, const std::string& name, DType dtype,
                     const Shape& shape, int deflate_level, bool streamed) {
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  Handle space(shape.empty() ? H5Screate(H5S_SCALAR)
                             : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
               H5Sclose);
  Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  // No modification time in the object header: the same content writes the same bytes (datagen's
  // files are a function of the seed and the index, and a rewritten file equals the first).
  H5Pset_obj_track_times(dcpl.get(), 0);
  int64_t elements = 1;
  for (int64_t d : shape)
    elements *= d;
  if (streamed) {
    H5Pset_layout(dcpl.get(), H5D_CONTIGUOUS);
    H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_EARLY);
    H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER);
  } else if (deflate_level > 0 && !shape.empty() && elements > 0) {
    std::vector<hsize_t> chunk = dims;
    chunk[0] = std::max<hsize_t>(1, std::min<hsize_t>(dims[0], 64));
    H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data());
    H5Pset_deflate(dcpl.get(), static_cast<unsigned>(std::min(deflate_level, 9)));
  }
  Handle btype(dtype == DType::kBool ? bool_type() : -1, close_enum);
  const hid_t ftype = dtype == DType::kBool ? btype.get() : file_type_of(dtype);
  Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(lcpl.get(), 1);
  const hid_t ds =
      H5Dcreate2(file, name.c_str(), ftype, space.get(), lcpl.get(), dcpl.get(), H5P_DEFAULT);
  if (ds < 0) throw FormatError(fmt::format("{}: cannot create: {}", where, last_error()));
  return ds;
}

void write_tensor(hid_t ds, const Tensor& tensor, const std::string& where) {
  Handle btype(tensor.dtype() == DType::kBool ? bool_type() : -1, close_enum);
  const hid_t mtype = tensor.dtype() == DType::kBool ? btype.get() : native_type_of(tensor.dtype());
  if (tensor.num_elements() > 0 &&
      H5Dwrite(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, tensor.data()) < 0) {
    throw FormatError(fmt::format("{}: write failed: {}", where, last_error()));
  }
}

}  // namespace

void write_hdf5(const std::string& path, const NamedTensors& datasets,
                const Hdf5WriteOptions& options) {
  std::lock_guard<std::mutex> lock(hdf5_mutex());
  quiet_errors();
  Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  if (!file.ok()) throw FormatError(fmt::format("{}: cannot create: {}", path, last_error()));
  for (const auto& [name, tensor] : datasets) {
    const std::string where = fmt::format("{}: dataset '{}'", path, name);
    Handle ds(create_dataset(file.get(), where, name, tensor.dtype(), tensor.shape(),
                             options.deflate_level, false),
              H5Dclose);
    write_tensor(ds.get(), tensor, where);
  }
  if (H5Fflush(file.get(), H5F_SCOPE_GLOBAL) < 0)
    throw FormatError(fmt::format("{}: cannot write: {}", path, last_error()));
}

std::vector<Hdf5Extent> create_hdf5_layout(const std::string& path,
                                           const std::vector<Hdf5StreamedDataset>& streamed,
                                           const NamedTensors& written) {
  std::lock_guard<std::mutex> lock(hdf5_mutex());
  quiet_errors();
  std::vector<Hdf5Extent> out;
  {
    Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    if (!file.ok()) throw FormatError(fmt::format("{}: cannot create: {}", path, last_error()));
    for (const Hdf5StreamedDataset& d : streamed) {
      if (d.dtype == DType::kBool)
        throw std::invalid_argument("create_hdf5_layout: a streamed dataset cannot be bool");
      const std::string where = fmt::format("{}: dataset '{}'", path, d.name);
      Handle ds(create_dataset(file.get(), where, d.name, d.dtype, d.shape, 0, true), H5Dclose);
      int64_t elements = 1;
      for (int64_t n : d.shape)
        elements *= n;
      const auto bytes = static_cast<uint64_t>(elements) * dtype_size(d.dtype);
      const haddr_t at = H5Dget_offset(ds.get());
      if (bytes > 0 && at == HADDR_UNDEF)
        throw FormatError(fmt::format("{}: the library placed no contiguous storage", where));
      out.push_back({.name = d.name, .offset = bytes > 0 ? static_cast<uint64_t>(at) : 0, .bytes = bytes});
    }
    for (const auto& [name, tensor] : written) {
      const std::string where = fmt::format("{}: dataset '{}'", path, name);
      Handle ds(create_dataset(file.get(), where, name, tensor.dtype(), tensor.shape(), 0, false),
                H5Dclose);
      write_tensor(ds.get(), tensor, where);
    }
    if (H5Fflush(file.get(), H5F_SCOPE_GLOBAL) < 0)
      throw FormatError(fmt::format("{}: cannot write: {}", path, last_error()));
  }  // closed: the file now spans every allocated dataset
  return out;
}

}  // namespace pipeprof::pipelines::formats
