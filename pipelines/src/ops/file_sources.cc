// npy, npz, hdf5, jpeg, png and csv: the file sources of file_sources.h over the readers of
// formats/ (a file read whole, its arrays or its decoded image or table).
#include "pipeprof/pipelines/file_sources.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "formats/format_error.h"
#include "formats/hdf5.h"
#include "formats/mapped_file.h"
#include "formats/npy.h"
#include "formats/npz.h"
#include "ops/batch_rows.h"
#include "io/filesystem.h"
#include "ops/common.h"
#include "ops/stage_reader.h"
#include "pipeprof/pipelines/files.h"
#include "pipeprof/pipelines/registry.h"

namespace pipeprof::pipelines {
namespace ops {
namespace {

enum class FileFormat { kNpy, kNpz, kHdf5, kJpeg, kPng, kCsv };

std::string_view format_op(FileFormat format) {
  switch (format) {
    case FileFormat::kNpy:
      return "npy";
    case FileFormat::kNpz:
      return "npz";
    case FileFormat::kHdf5:
      return "hdf5";
    case FileFormat::kJpeg:
      return "jpeg";
    case FileFormat::kPng:
      return "png";
    case FileFormat::kCsv:
      return "csv";
  }
  return "?";
}

// The row of the element being read on this thread (RowScope), as a reader's destination.
formats::ValuesDestination into_row() {
  return [](DType dtype, const Shape& shape) -> std::optional<formats::ValuesHome> {
    auto row = RowScope::row(dtype, shape);
    if (!row) return std::nullopt;
    return formats::ValuesHome{std::move(row->views.front()), row->bytes.front()};
  };
}

// The key of the field naming the arrays to read ("keys" for npz, "datasets" for hdf5; none for
// the others, whose file holds one array).
const char* names_key(FileFormat format) {
  return format == FileFormat::kHdf5 ? "datasets" : "keys";
}
bool has_names(FileFormat format) {
  return format == FileFormat::kNpz || format == FileFormat::kHdf5;
}

class FileSourceNode final : public DatasetNode {
 public:
  FileSourceNode(FileFormat format_, std::vector<std::string> files_,
                 std::vector<std::string> names_, bool rows_, int64_t rows_axis_ = 0,
                 formats::WholeFile how_ = formats::WholeFile::kAuto)
      : format(format_),
        files(std::move(files_)),
        names(std::move(names_)),
        rows(rows_),
        rows_axis(rows_axis_),
        how(how_) {
    for (const std::string& f : files) {
      if (f.empty()) throw std::invalid_argument(std::string(format_op(format)) + ": an empty file name");
    }
    if (!has_names(format) && !names.empty()) {
      throw std::invalid_argument(std::string(format_op(format)) +
                                  ": a file holds one array, it has no keys");
    }
  }
  std::string_view op() const override { return format_op(format); }
  nlohmann::json params() const override {
    nlohmann::json out{{"files", files}, {"rows", rows}, {"rows_axis", rows_axis}};
    if (has_names(format)) out[names_key(format)] = names;
    if (how == formats::WholeFile::kRead) out["mmap"] = false;
    if (how == formats::WholeFile::kDirect) out["direct"] = true;
    return out;
  }
  std::unique_ptr<Iterator> make_iterator(const IteratorContext& ctx) const override;
  // An element per file, unless its arrays are split into rows.
  std::optional<int64_t> cardinality() const override {
    if (rows) return std::nullopt;
    return static_cast<int64_t>(files.size());
  }

  // The arrays of one file (throws formats::FormatError).
  Element read(const std::string& file, const formats::Storage& storage) const {
    switch (format) {
      // Under a batch that gave this element a row (batch_rows.h), the values are read straight
      // into it when the file is laid out as the last.
      case FileFormat::kNpy:
        if (RowScope::active()) return Element{formats::read_npy(file, storage, how, into_row())};
        return Element{formats::read_npy(file, storage, how)};
      case FileFormat::kNpz:
        if (RowScope::active()) return values(formats::read_npz(file, names, storage, how, into_row()));
        return values(formats::read_npz(file, names, storage, how));
      case FileFormat::kHdf5:
        return values(formats::read_hdf5(file, names, storage, how));
      case FileFormat::kJpeg:
      case FileFormat::kPng:
      case FileFormat::kCsv: {
        // Decoded from the file's bytes (mapped or read), released once decoded.
        const auto bytes = formats::MappedFile::open(file, storage, how);
        if (format == FileFormat::kJpeg) return Element{formats::decode_jpeg(bytes->bytes(), 0, file)};
        if (format == FileFormat::kPng) return Element{formats::decode_png(bytes->bytes(), file)};
        return Element{formats::decode_csv(bytes->bytes(), file)};
      }
    }
    return {};
  }

  const FileFormat format;
  const std::vector<std::string> files;
  const std::vector<std::string> names;
  const bool rows;
  const int64_t rows_axis;  // >= 0: that dimension of every array; < 0: counted from the last
  const formats::WholeFile how;  // mapped, read or read with O_DIRECT

 private:
  static Element values(formats::NamedTensors named) {
    Element out;
    out.reserve(named.size());
    for (auto& [name, t] : named)
      out.push_back(std::move(t));
    return out;
  }
};

class FileSourceIterator final : public Iterator {
 public:
  FileSourceIterator(const IteratorContext& ctx, const FileSourceNode& node)
      : Iterator(ctx, &node), node_(node), read_name_(trace_phase("read")) {}

 protected:
  std::optional<Element> next_impl() override {
    while (true) {
      if (current_ && row_ < rows_) return row(row_++);
      if (next_file_ >= node_.files.size()) return std::nullopt;
      const std::string& file = node_.files[next_file_++];
      Element arrays;
      try {
        trace::ScopedSpan span(read_name_, trace::category::pipeline());
        const int64_t start = trace::now_ns();
        arrays = node_.read(file, storage());
        count_read(file, arrays, trace::now_ns() - start);
      } catch (const formats::FormatError& e) {
        throw InputDataError(stage_name(), e.what());
      }
      const auto origin = std::make_shared<const std::string>(file);
      for (Tensor& t : arrays)
        t.set_origin(origin);
      if (!node_.rows) return arrays;
      rows_ = -1;
      for (const Tensor& t : arrays) {
        const int64_t axis = node_.rows_axis < 0 ? t.rank() + node_.rows_axis : node_.rows_axis;
        const int64_t n = axis < 0 || axis >= t.rank() ? -2 : t.shape()[static_cast<size_t>(axis)];
        if (n == -2 || (rows_ >= 0 && n != rows_)) {
          throw InputDataError(
              stage_name(),
              fmt::format("{}: rows: every array needs the same number of rows along dimension "
                          "{}, got {}",
                          file, node_.rows_axis, shape_string(t.shape())));
        }
        rows_ = n;
      }
      current_ = std::move(arrays);
      row_ = 0;
      if (rows_ < 0) rows_ = 0;
    }
  }

 private:
  Element row(int64_t r) const {
    Element out;
    out.reserve(current_->size());
    for (const Tensor& t : *current_) {
      const int64_t axis = node_.rows_axis < 0 ? t.rank() + node_.rows_axis : node_.rows_axis;
      out.push_back(axis == 0 ? t[r] : take_along(t, axis, r));  // t[r]: a view of the file's
    }
    return out;
  }

  // Row `index` along dimension `axis` > 0: a copy (its bytes are strided in the array).
  static Tensor take_along(const Tensor& t, int64_t axis, int64_t index) {
    Shape shape;
    int64_t outer = 1, inner = static_cast<int64_t>(dtype_size(t.dtype()));
    for (int64_t d = 0; d < t.rank(); ++d) {
      const int64_t n = t.shape()[static_cast<size_t>(d)];
      if (d != axis) shape.push_back(n);
      if (d < axis) outer *= n;
      if (d > axis) inner *= n;
    }
    Tensor out(t.dtype(), std::move(shape));
    const int64_t n = t.shape()[static_cast<size_t>(axis)];
    const std::byte* src = t.data() + index * inner;
    std::byte* dst = out.mutable_data();
    if (inner == 1) {  // a byte array's last dimension: DLIO's npy and npz samples
      for (int64_t o = 0; o < outer; ++o)
        dst[o] = src[o * n];
    } else {
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(dst + o * inner, src + o * n * inner, static_cast<size_t>(inner));
    }
    out.copy_origin_from(t);
    return out;
  }

  // A file read whole (by the format's library, or through its mapping): one read of its size in
  // the stage's storage statistics, its time the time to first byte.
  void count_read(const std::string& file, const Element& arrays, int64_t ns) {
    int64_t size = 0;
    if (!io::is_local(file)) {
      // A remote object, read whole: its arrays' bytes (the object's, less its headers).
      for (const Tensor& t : arrays) size += static_cast<int64_t>(t.nbytes());
    } else {
      std::error_code ec;
      const auto bytes = std::filesystem::file_size(file, ec);
      size = ec ? 0 : static_cast<int64_t>(bytes);
    }
    NodeStats& st = stats();
    st.bytes_read.fetch_add(size, std::memory_order_relaxed);
    st.read_calls.fetch_add(1, std::memory_order_relaxed);
    st.read_ns.fetch_add(ns, std::memory_order_relaxed);
    st.files_opened.fetch_add(1, std::memory_order_relaxed);
    st.first_byte_ns.fetch_add(ns, std::memory_order_relaxed);
  }

  const FileSourceNode& node_;
  trace::NameId read_name_;
  size_t next_file_ = 0;
  std::optional<Element> current_;
  int64_t row_ = 0, rows_ = 0;
};

std::unique_ptr<Iterator> FileSourceNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<FileSourceIterator>(ctx, *this);
}

// A list of strings from a kValue field (absent: empty).
std::vector<std::string> string_list(const StageReader& s, const std::string& key) {
  if (!s.has(key)) return {};
  const auto& v = s.raw(key);
  if (!v.is_array()) s.fail(key, "a list of strings", v);
  std::vector<std::string> out;
  for (const auto& item : v) {
    if (!item.is_string() || item.get<std::string>().empty()) s.fail(key, "a list of non-empty strings", v);
    out.push_back(item.get<std::string>());
  }
  return out;
}

// "files": [...] or "file": a name or "$element" / "$element[k]" (inside an interleave).
std::vector<std::string> file_list(const StageReader& s) {
  if (s.has("files") == s.has("file")) {
    throw SpecError(fmt::format("{}: expected exactly one of \"file\" or \"files\"", s.where()));
  }
  if (s.has("files")) {
    auto files = string_list(s, "files");
    if (files.empty()) s.fail("files", "a non-empty list of file names", s.raw("files"));
    return files;
  }
  const auto& v = s.raw("file");
  if (!v.is_string() || v.get<std::string>().empty()) s.fail("file", "a file name or \"$element\"", v);
  if (!v.get<std::string>().starts_with("$element")) return {v.get<std::string>()};
  const Element e = s.element("file", "");
  if (s.fields().scope().outer == nullptr) return {"$element"};  // validation: a placeholder
  try {
    return {file_name_of(e.at(0))};
  } catch (const std::exception& ex) {
    throw SpecError(fmt::format("{}.file: \"$element\": {}", s.where(), ex.what()));
  }
}

OpRegistration file_source_registration(FileFormat format, std::string summary) {
  std::vector<FieldSpec> fields{
      {.name = "files", .type = FieldType::kValue, .doc = "a list of file names"},
      {.name = "file", .type = FieldType::kValue,
       .doc = "one file name; \"$element\" inside an interleave's pipeline"}};
  if (format == FileFormat::kNpz) {
    fields.push_back({.name = "keys", .type = FieldType::kValue,
                      .fallback = nlohmann::json::array(),
                      .doc = "arrays to read, in order (absent: all, archive order)",
                      .spelled_out = false});
  } else if (format == FileFormat::kHdf5) {
    fields.push_back({.name = "datasets", .type = FieldType::kValue,
                      .fallback = nlohmann::json::array(),
                      .doc = "datasets to read, in order (absent: all, by name)",
                      .spelled_out = false});
  }
  fields.push_back({.name = "rows", .type = FieldType::kBoolean, .fallback = false,
                    .doc = "yield the rows of the first dimension instead of whole arrays",
                    .spelled_out = false});
  fields.push_back({.name = "rows_axis", .type = FieldType::kInteger, .fallback = 0, .min = -8,
                    .max = 7,
                    .doc = "with rows: the dimension rows are taken along (-1: each array's "
                           "last, as DLIO's npz and npy samples lie; other than 0: copied)",
                    .spelled_out = false});
  fields.push_back({.name = "mmap", .type = FieldType::kBoolean, .fallback = true,
                    .doc = "map files larger than 1 MiB (arrays are views of the page cache); "
                           "off: read calls into memory",
                    .spelled_out = false});
  fields.push_back({.name = "direct", .type = FieldType::kBoolean, .fallback = false,
                    .doc = "O_DIRECT: read whole files into memory bypassing the page cache",
                    .spelled_out = false});
  const std::string name(format_op(format));
  return OpRegistration{
      .name = name,
      .kind = OpKind::kSource,
      .summary = std::move(summary),
      .fields = std::move(fields),
      .build = [format](const StageReader& s, const Dataset*) {
        std::vector<std::string> names;
        if (has_names(format)) names = string_list(s, names_key(format));
        const formats::WholeFile how = s.boolean("direct") ? formats::WholeFile::kDirect
                                       : s.boolean("mmap")  ? formats::WholeFile::kAuto
                                                            : formats::WholeFile::kRead;
        return Dataset(std::make_shared<FileSourceNode>(format, file_list(s), std::move(names),
                                                        s.boolean("rows"),
                                                        s.integer("rows_axis"), how));
      },
      .simulate = [name](const sim::SimStage&) -> sim::NodePtr {
        throw sim::Unsupported(name + ": reads files; its timing depends on the storage");
      }};
}

}  // namespace

const OpRegistration& npy_registration() {
  static const OpRegistration kOp = file_source_registration(
      FileFormat::kNpy, "numpy .npy files, one element (the array) per file");
  return kOp;
}
const OpRegistration& npz_registration() {
  static const OpRegistration kOp = file_source_registration(
      FileFormat::kNpz, "numpy .npz archives, one element (a component per array) per file");
  return kOp;
}
const OpRegistration& hdf5_registration() {
  static const OpRegistration kOp = file_source_registration(
      FileFormat::kHdf5, "HDF5 files, one element (a component per dataset) per file");
  return kOp;
}
const OpRegistration& jpeg_registration() {
  static const OpRegistration kOp = file_source_registration(
      FileFormat::kJpeg, "JPEG files, one element (the decoded image, uint8 [h, w, c]) per file");
  return kOp;
}
const OpRegistration& png_registration() {
  static const OpRegistration kOp = file_source_registration(
      FileFormat::kPng,
      "PNG files, one element (the decoded image, uint8 [h, w, c]; int32 for 16 bits) per file");
  return kOp;
}
const OpRegistration& csv_registration() {
  static const OpRegistration kOp = file_source_registration(
      FileFormat::kCsv,
      "CSV files of numbers after a header line (DLIO's csv), one element (the table, int64 or "
      "float64 [rows, columns]) per file; rows: one per row");
  return kOp;
}

}  // namespace ops

Dataset npy_files(std::vector<std::string> files, bool rows) {
  return Dataset(std::make_shared<ops::FileSourceNode>(ops::FileFormat::kNpy, std::move(files),
                                                       std::vector<std::string>{}, rows));
}
Dataset npz_files(std::vector<std::string> files, std::vector<std::string> keys, bool rows) {
  return Dataset(std::make_shared<ops::FileSourceNode>(ops::FileFormat::kNpz, std::move(files),
                                                       std::move(keys), rows));
}
Dataset hdf5_files(std::vector<std::string> files, std::vector<std::string> datasets, bool rows) {
  return Dataset(std::make_shared<ops::FileSourceNode>(ops::FileFormat::kHdf5, std::move(files),
                                                       std::move(datasets), rows));
}

Element file_name_element(const std::string& name) {
  return Element{file_name_tensor(name)};  // list_files' encoding (files.h)
}

std::string file_name_of(const Tensor& tensor) {
  if (tensor.dtype() != DType::kUInt8 || tensor.rank() != 1 || tensor.num_elements() == 0) {
    throw std::invalid_argument(fmt::format(
        "expected a file name (a non-empty uint8 vector of its bytes), got {}{}",
        dtype_name(tensor.dtype()), shape_string(tensor.shape())));
  }
  return {reinterpret_cast<const char*>(tensor.data()), static_cast<size_t>(tensor.num_elements())};
}

}  // namespace pipeprof::pipelines
