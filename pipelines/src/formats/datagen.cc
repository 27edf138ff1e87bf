// Writing a dataset in DLIO's layout (pipeprof/pipelines/datagen.h): one task per missing file,
// taken by a pool of threads; each file is written to its temporary name and renamed into place.
//
// The byte formats (raw, npy, tfrecord) stream their payload: random bytes are made a chunk at a
// time into a buffer that stays in cache and written at once, so a file of any size costs one pass
// of the generator and the kernel's copy; so does npz (NpzStreamWriter: stored members, their
// CRC-32s computed as the bytes pass), and hdf5 (libhdf5 lays the file out and writes the labels;
// the records' bytes are streamed into the space it allocated). jpeg holds each image in memory
// for libturbojpeg.
#include "pipeprof/pipelines/datagen.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <zip.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "formats/example.h"
#include "formats/file_out.h"
#include "formats/hdf5.h"
#include "formats/mapped_file.h"
#include "formats/npy.h"
#include "formats/npz.h"
#include "formats/random_bytes.h"
#include "formats/tfrecord.h"
#include "pipeprof/pipelines/formats.h"
#include "pipeprof/pipelines/storage_io.h"

namespace pipeprof::pipelines::formats {
namespace {

namespace fs = std::filesystem;

constexpr size_t kChunkBytes = size_t{1} << 20;  // fits in L2: made, then written at once

// Thrown inside a task when the run is asked to stop; the task removes its temporary file.
struct Stopped {};

// What the tasks share: the stop flags and the byte counter the progress reports read.
struct Shared {
  const std::atomic<bool>* stop = nullptr;
  std::shared_ptr<const StorageContext> storage;  // an s3:// dataset's settings
  std::atomic<bool> failed{false};
  std::atomic<uint64_t> bytes{0};
  void check() const {
    if (failed.load(std::memory_order_relaxed) ||
        (stop != nullptr && stop->load(std::memory_order_relaxed))) {
      throw Stopped{};
    }
  }
};

// Makes `n` random bytes chunk by chunk and hands each chunk to `sink`, counting and checking for
// a stop between chunks.
template <typename Sink>
void stream_random(uint64_t n, RandomBytes& rng, std::vector<std::byte>& buffer, Shared& shared,
                   Sink&& sink) {
  while (n > 0) {
    const size_t k = static_cast<size_t>(std::min<uint64_t>(n, buffer.size()));
    const std::span<std::byte> chunk(buffer.data(), k);
    rng.fill(chunk);
    sink(std::span<const std::byte>(chunk));
    shared.bytes.fetch_add(k, std::memory_order_relaxed);
    n -= k;
    shared.check();
  }
}

void fill_random(Tensor& t, RandomBytes& rng, Shared& shared) {
  shared.check();
  rng.fill({t.mutable_data(), t.nbytes()});
}

// A tfrecord file's records, each around one sample: tf.Example {image: the sample's bytes, size:
// DLIO's mean dimension}.
ExampleFrame tfrecord_frame_of(const DlioDataset& d, const DatasetFile& file) {
  const auto dimension = static_cast<int64_t>(std::sqrt(d.record_length));
  const uint64_t sample = static_cast<uint64_t>(file.dim1) * static_cast<uint64_t>(file.dim2);
  return encode_example_around("image", sample,
                               {{"size", {.kind = FeatureKind::kInt64, .int64s = {dimension}}}});
}

bool is_remote(const std::string& path) {
  return path.find("://") != std::string::npos;
}

// Writes `bytes` to `path` through its temporary name (removed on failure); an object of remote
// storage (s3://) is uploaded whole.
void write_small_file(const std::string& path, std::string_view bytes,
                      const std::shared_ptr<const StorageContext>& storage) {
  if (is_remote(path)) {
    try {
      auto out = create_file(path, {.storage = storage});
      out->append(std::as_bytes(std::span(bytes.data(), bytes.size())));
      out->commit();
    } catch (const IoError& e) {
      throw FormatError(e.what());
    }
    return;
  }
  const std::string tmp = temporary_name(path);
  try {
    FileOut f(tmp);
    f.write(std::as_bytes(std::span(bytes.data(), bytes.size())));
    f.close();
    std::error_code ec;
    fs::rename(tmp, path, ec);
    if (ec) throw FormatError(fmt::format("{}: cannot rename {} into place: {}", path, tmp, ec.message()));
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
}

// The index files of `file` (index_files_of), which follow from the layout alone: every sample
// of a file has the same size.
//   tfrecord: DALI's tfrecord2idx, as DLIO writes it (the framed record's offset and length).
//   indexed_binary: each sample's offset and size as uint64 (little-endian, DLIO's numpy
//   arrays), samples back to back from byte 0.
void write_index_files(const DlioDataset& d, const DatasetFile& file,
                       const std::shared_ptr<const StorageContext>& storage) {
  const std::vector<std::string> names = index_files_of(d, file);
  const uint64_t sample = static_cast<uint64_t>(file.dim1) * static_cast<uint64_t>(file.dim2);
  if (d.format == DataFormat::kTFRecord) {
    const ExampleFrame frame = tfrecord_frame_of(d, file);
    const uint64_t framed = kTFRecordHeaderBytes + frame.head.size() + sample + frame.tail.size() +
                            kTFRecordFooterBytes;
    std::string text;
    for (int64_t i = 0; i < d.num_samples_per_file; ++i)
      text += fmt::format("{} {}\n", static_cast<uint64_t>(i) * framed, framed);
    write_small_file(names.at(0), text, storage);
  } else if (is_indexed_binary(d.format)) {
    std::string offsets, sizes;
    auto put = [](std::string& out, uint64_t v) {
      for (int b = 0; b < 8; ++b)
        out.push_back(static_cast<char>((v >> (8 * b)) & 0xFFU));
    };
    for (int64_t i = 0; i < d.num_samples_per_file; ++i) {
      put(offsets, static_cast<uint64_t>(i) * sample);
      put(sizes, sample);
    }
    write_small_file(names.at(0), offsets, storage);
    write_small_file(names.at(1), sizes, storage);
  }
}

// DLIO's csv (pandas' to_csv of a DataFrame with a row per sample): a header of the column
// numbers after an empty index column (",0,1,...,n-1"), then a row per sample: its index and its
// d1 x d2 values, 0..255 in decimal. Written and counted a chunk at a time.
void write_csv(const std::string& out, const DatasetFile& file, int64_t samples, RandomBytes& rng,
               Shared& shared) {
  const uint64_t values = static_cast<uint64_t>(file.dim1) * static_cast<uint64_t>(file.dim2);
  FileOut f(out);
  std::string text;
  text.reserve(kChunkBytes + 64);
  auto flush = [&](bool force) {
    if (!force && text.size() < kChunkBytes) return;
    f.write(std::as_bytes(std::span(text.data(), text.size())));
    shared.bytes.fetch_add(text.size(), std::memory_order_relaxed);
    text.clear();
    shared.check();
  };
  for (uint64_t v = 0; v < values; ++v) {
    text += ',';
    text += std::to_string(v);
    flush(false);
  }
  text += '\n';
  static const auto kDecimal = [] {
    std::array<std::string, 256> table;
    for (int i = 0; i < 256; ++i) {
      std::string& entry = table[static_cast<size_t>(i)];
      entry.push_back(',');
      entry.append(std::to_string(i));
    }
    return table;
  }();
  std::vector<std::byte> row(static_cast<size_t>(std::min<uint64_t>(values, kChunkBytes)));
  for (int64_t s = 0; s < samples; ++s) {
    text += std::to_string(s);
    for (uint64_t done = 0; done < values;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(values - done, row.size()));
      rng.fill(std::span(row.data(), n));
      for (size_t i = 0; i < n; ++i) {
        text += kDecimal[static_cast<uint8_t>(row[i])];
        flush(false);
      }
      done += n;
    }
    text += '\n';
  }
  flush(true);
  f.close();
}

// Writes `file` (its payload from `seed`) to `out`; returns the bytes the file holds when the
// writer does not count them as it goes.
uint64_t write_file_as(const DlioDataset& d, const DatasetFile& file, const std::string& out,
                       uint64_t seed, Shared& shared) {
  RandomBytes rng(seed);
  const int64_t samples = d.num_samples_per_file;
  const Shape shape{file.dim1, file.dim2, samples};
  std::vector<std::byte> buffer;
  if (d.format == DataFormat::kRaw || d.format == DataFormat::kNpy ||
      d.format == DataFormat::kTFRecord || is_indexed_binary(d.format)) {
    buffer.resize(static_cast<size_t>(std::min<uint64_t>(kChunkBytes, file.bytes)));
  }
  switch (d.format) {
    case DataFormat::kRaw: {
      FileOut f(out);
      stream_random(file.bytes, rng, buffer, shared, [&](auto chunk) { f.write(chunk); });
      f.close();
      return 0;
    }
    case DataFormat::kIndexedBinary:
    case DataFormat::kMmapIndexedBinary: {
      // The index first: the data file appears under its name (after this returns) with it.
      write_index_files(d, file, shared.storage);
      FileOut f(out);
      stream_random(file.bytes, rng, buffer, shared, [&](auto chunk) { f.write(chunk); });
      f.close();
      return 0;
    }
    case DataFormat::kNpy: {
      FileOut f(out);
      const auto header = encode_npy_header(DType::kUInt8, shape);
      f.write(header);
      shared.bytes.fetch_add(header.size(), std::memory_order_relaxed);
      stream_random(file.bytes, rng, buffer, shared, [&](auto chunk) { f.write(chunk); });
      f.close();
      return 0;
    }
    case DataFormat::kTFRecord: {
      // Each record framed around its sample as the sample streams.
      const uint64_t sample = static_cast<uint64_t>(file.dim1) * static_cast<uint64_t>(file.dim2);
      const ExampleFrame frame = tfrecord_frame_of(d, file);
      const auto as_bytes = [](const std::string& s) {
        return std::as_bytes(std::span(s.data(), s.size()));
      };
      TFRecordWriter w(out);
      for (int64_t i = 0; i < samples; ++i) {
        w.begin_record(frame.head.size() + sample + frame.tail.size());
        w.append(as_bytes(frame.head));
        stream_random(sample, rng, buffer, shared, [&](auto chunk) { w.append(chunk); });
        w.append(as_bytes(frame.tail));
        w.end_record();
      }
      w.close();
      return samples *
             (frame.head.size() + frame.tail.size() + kTFRecordHeaderBytes + kTFRecordFooterBytes);
    }
    case DataFormat::kNpz: {
      // numpy's savez: x the payload, y int64 zeros, both stored.
      const auto x_header = encode_npy_header(DType::kUInt8, shape);
      const auto y_header = encode_npy_header(DType::kInt64, {samples});
      const uint64_t y_bytes = static_cast<uint64_t>(samples) * sizeof(int64_t);
      if (x_header.size() + file.bytes + y_header.size() + y_bytes + 4096 >
          NpzStreamWriter::kMaxBytes) {
        // Past what a zip without zip64 holds: in memory, through libzip.
        Tensor x(DType::kUInt8, shape);
        fill_random(x, rng, shared);
        write_npz(out, {{"x", std::move(x)}, {"y", Tensor(DType::kInt64, {samples})}}, false);
        return fs::file_size(out);
      }
      buffer.resize(static_cast<size_t>(std::min<uint64_t>(kChunkBytes, std::max(file.bytes, y_bytes))));
      NpzStreamWriter w(out);
      w.begin("x", x_header.size() + file.bytes);
      w.append(x_header);
      stream_random(file.bytes, rng, buffer, shared, [&](auto chunk) { w.append(chunk); });
      w.end();
      w.begin("y", y_header.size() + y_bytes);
      w.append(y_header);
      std::fill(buffer.begin(), buffer.end(), std::byte{0});
      for (uint64_t left = y_bytes; left > 0;) {
        const size_t k = static_cast<size_t>(std::min<uint64_t>(left, buffer.size()));
        w.append(std::span<const std::byte>(buffer.data(), k));
        left -= k;
      }
      w.end();
      w.close();
      return fs::file_size(out) - file.bytes;  // the payload was counted as it went
    }
    case DataFormat::kHdf5: {
      // The layout through libhdf5 (records allocated, labels written), then the records' bytes
      // streamed into their place, outside the library's process-wide lock.
      const auto extents = create_hdf5_layout(
          out, {{.name = "records", .dtype = DType::kUInt8, .shape = {samples, file.dim1, file.dim2}}},
          {{"labels", Tensor(DType::kInt64, {samples})}});
      if (extents.size() != 1 || extents[0].bytes != file.bytes)
        throw FormatError(fmt::format("{}: libhdf5 laid the records out unexpectedly", out));
      buffer.resize(static_cast<size_t>(std::min<uint64_t>(kChunkBytes, std::max<uint64_t>(1, file.bytes))));
      FileOut f(out, FileOut::Mode::kExisting);
      uint64_t at = extents[0].offset;
      stream_random(file.bytes, rng, buffer, shared, [&](auto chunk) {
        f.write_at(at, chunk);
        at += chunk.size();
      });
      f.close();
      return fs::file_size(out) - file.bytes;  // the records were counted as they went
    }
    case DataFormat::kJpeg: {
      Tensor image(DType::kUInt8, {file.dim1, file.dim2, 1});
      fill_random(image, rng, shared);
      const std::vector<std::byte> bytes = encode_jpeg(image, 75);
      write_file(out, bytes);
      return bytes.size();
    }
    case DataFormat::kPng: {  // DLIO's: one 8-bit grayscale image
      Tensor image(DType::kUInt8, {file.dim1, file.dim2});
      fill_random(image, rng, shared);
      const std::vector<std::byte> bytes = encode_png(image);
      write_file(out, bytes);
      return bytes.size();
    }
    case DataFormat::kCsv:
      write_csv(out, file, samples, rng, shared);
      return 0;
  }
  return 0;
}

std::string csv_size_mismatch(const DatasetFile& file, int64_t samples, uint64_t size);

// The size of a file of this layout where it follows from the layout alone (raw, indexed binary,
// npy, tfrecord); nullopt where a container or an encoder decides it.
std::optional<uint64_t> exact_size(const DlioDataset& d, const DatasetFile& file) {
  const int64_t samples = d.num_samples_per_file;
  switch (d.format) {
    case DataFormat::kRaw:
    case DataFormat::kIndexedBinary:
    case DataFormat::kMmapIndexedBinary:
      return file.bytes;
    case DataFormat::kNpy:
      return encode_npy_header(DType::kUInt8, {file.dim1, file.dim2, samples}).size() + file.bytes;
    case DataFormat::kTFRecord: {
      const ExampleFrame frame = tfrecord_frame_of(d, file);
      const uint64_t sample = static_cast<uint64_t>(file.dim1) * static_cast<uint64_t>(file.dim2);
      return static_cast<uint64_t>(samples) *
             (kTFRecordHeaderBytes + frame.head.size() + sample + frame.tail.size() + kTFRecordFooterBytes);
    }
    default:
      return std::nullopt;
  }
}

// Why a file under its final name is not what this layout writes ("" when it is): its size, or the
// format's own signature where the size depends on a library (hdf5) or an encoder (jpeg).
std::string mismatch(const DlioDataset& d, const DatasetFile& file) {
  std::error_code ec;
  const uint64_t size = fs::file_size(file.path, ec);
  if (ec) return "cannot be read: " + ec.message();
  const int64_t samples = d.num_samples_per_file;
  auto expect = [&](uint64_t want) {
    return size == want ? std::string()
                        : fmt::format("{} bytes where this layout writes {}", size, want);
  };
  auto first_and_last = [&](size_t n) {
    std::string head(n, '\0'), tail(n, '\0');
    std::ifstream in(file.path, std::ios::binary);
    in.read(head.data(), static_cast<std::streamsize>(n));
    in.seekg(-static_cast<std::streamoff>(n), std::ios::end);
    in.read(tail.data(), static_cast<std::streamsize>(n));
    return std::pair{in ? head : std::string(), in ? tail : std::string()};
  };
  if (const auto exact = exact_size(d, file)) return expect(*exact);
  switch (d.format) {
    case DataFormat::kRaw:
    case DataFormat::kIndexedBinary:
    case DataFormat::kMmapIndexedBinary:
    case DataFormat::kNpy:
    case DataFormat::kTFRecord:
      return {};  // exact_size
    case DataFormat::kNpz: {
      int error = 0;
      zip_t* za = zip_open(file.path.c_str(), ZIP_RDONLY, &error);
      if (za == nullptr) return "not a complete zip archive";
      zip_stat_t st;
      zip_stat_init(&st);
      const bool found = zip_stat(za, "x.npy", 0, &st) == 0 && (st.valid & ZIP_STAT_SIZE) != 0;
      zip_discard(za);
      const uint64_t want =
          encode_npy_header(DType::kUInt8, {file.dim1, file.dim2, samples}).size() + file.bytes;
      if (!found) return "no x.npy member";
      return st.size == want ? std::string()
                             : fmt::format("an x.npy of {} bytes where this layout writes {}", st.size, want);
    }
    case DataFormat::kHdf5: {
      // The records' bytes and libhdf5's layout around them (a few KiB).
      if (size < file.bytes || size > file.bytes + (uint64_t{1} << 20))
        return fmt::format("{} bytes where this layout writes {} bytes of records (and libhdf5's "
                           "few KiB around them)",
                           size, file.bytes);
      const auto [head, tail] = first_and_last(8);
      return head == std::string("\x89HDF\r\n\x1a\n", 8) ? std::string() : std::string("no HDF5 signature");
    }
    case DataFormat::kJpeg: {
      if (size < 4) return fmt::format("{} bytes", size);
      const auto [head, tail] = first_and_last(2);
      return head == "\xFF\xD8" && tail == "\xFF\xD9" ? std::string()
                                                       : std::string("not a complete JPEG image");
    }
    case DataFormat::kPng: {
      if (size < 20) return fmt::format("{} bytes", size);
      const auto [head, tail] = first_and_last(8);
      // The signature, and the IEND chunk's type and CRC last.
      return head == std::string("\x89PNG\r\n\x1a\n", 8) && tail == std::string("IEND\xAE\x42\x60\x82", 8)
                 ? std::string()
                 : std::string("not a complete PNG image");
    }
    case DataFormat::kCsv: {
      if (const std::string why = csv_size_mismatch(file, samples, size); !why.empty()) return why;
      const auto [head, tail] = first_and_last(2);
      return head == ",0" && tail.ends_with('\n') ? std::string() : std::string("not a complete csv file");
    }
  }
  return {};
}

// The file's data on the disk before its name is: a crash then leaves a temporary file, never a
// short file under the final name.
void sync_data(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw FormatError(fmt::format("{}: cannot be opened to sync: {}", path, std::strerror(errno)));
  const int rc = ::fdatasync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) throw FormatError(fmt::format("{}: cannot be synced to the disk: {}", path, std::strerror(err)));
}

// Why a csv file of `size` bytes cannot be what this layout writes: its values take 1 to 3 digits
// and a comma each ("" when it can).
std::string csv_size_mismatch(const DatasetFile& file, int64_t samples, uint64_t size) {
  const uint64_t values = static_cast<uint64_t>(file.dim1) * static_cast<uint64_t>(file.dim2);
  const uint64_t low = values * 2 * static_cast<uint64_t>(samples);
  const uint64_t high = values * 12 + static_cast<uint64_t>(samples) * (values * 4 + 24);
  return size >= low && size <= high
             ? std::string()
             : fmt::format("{} bytes where this layout writes {} to {}", size, low, high);
}

// Why an object of remote storage under a file's final name is not what this layout writes ("" when
// it is), from its size alone (what a listing gives; an upload is whole or absent, never cut).
std::string remote_mismatch(const DlioDataset& d, const DatasetFile& file, uint64_t size) {
  const int64_t samples = d.num_samples_per_file;
  const auto within = [&](uint64_t low, uint64_t slack) {
    return size >= low && size <= low + slack
               ? std::string()
               : fmt::format("{} bytes where this layout writes {} bytes and at most {} more", size, low,
                             slack);
  };
  if (const auto exact = exact_size(d, file)) {
    return size == *exact ? std::string()
                          : fmt::format("{} bytes where this layout writes {}", size, *exact);
  }
  switch (d.format) {
    case DataFormat::kRaw:
    case DataFormat::kIndexedBinary:
    case DataFormat::kMmapIndexedBinary:
    case DataFormat::kNpy:
    case DataFormat::kTFRecord:
      return {};  // exact_size
    case DataFormat::kNpz:  // the members and their headers, and the zip's few hundred bytes
      return within(file.bytes + 8 * static_cast<uint64_t>(samples), 64 * 1024);
    case DataFormat::kHdf5:
      return within(file.bytes, uint64_t{1} << 20);
    case DataFormat::kJpeg:
    case DataFormat::kPng:
      return size >= 4 ? std::string() : fmt::format("{} bytes", size);
    case DataFormat::kCsv:
      return csv_size_mismatch(file, samples, size);
  }
  return {};
}

// Uploads a local file as the object `name` (read and sent a part at a time); the object appears
// when the whole file is up.
void upload(const std::string& local, const std::string& name, Shared& shared) {
  try {
    (void)copy_file(local, name, {.storage = shared.storage}, shared.stop);
  } catch (const IoError& e) {
    shared.check();  // stopped: the task's own way out
    throw FormatError(e.what());
  }
}

// A local folder for the files of an s3:// dataset on their way up, removed with its contents.
struct Staging {
  std::string dir;
  Staging() {
    std::string tmpl = (fs::temp_directory_path() / "pipeprof-datagen-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) {
      throw FormatError(fmt::format("cannot create a temporary folder for the upload: {}",
                                    std::strerror(errno)));
    }
    dir = tmpl;
  }
  ~Staging() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  std::string path_for(size_t k) const { return fmt::format("{}/file-{}", dir, k); }
};

// The payload seed of file `k` of the run (train files first): a function of the seed and k only.
uint64_t file_seed(uint64_t seed, uint64_t k) {
  return (seed * 0x9E3779B97F4A7C15ULL) ^ (k + 1) * 0xD1B54A32D192ED03ULL;
}

}  // namespace

GenerateResult generate_dataset(const DlioDataset& d, const GenerateOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<DatasetFile> files = dataset_files(d);
  const bool remote = is_remote(d.data_folder);
  std::unique_ptr<Staging> staging;
  // What the bucket holds under the dataset's folders (remote): name -> size.
  std::map<std::string, uint64_t> existing;
  if (remote) {
    staging = std::make_unique<Staging>();
    std::set<std::string> folders;
    for (const DatasetFile& f : files) {
      folders.insert(fs::path(f.path).parent_path().string());
      for (const std::string& index : index_files_of(d, f))
        folders.insert(fs::path(index).parent_path().string());
    }
    for (const std::string& folder : folders) {
      try {
        for (const auto& [name, size] : list_objects(folder, options.storage.get())) existing[name] = size;
      } catch (const IoError& e) {
        // The bucket cannot be listed (a wrong key, a missing bucket, no server): the data
        // folder's storage is wrong, bad input as for a workload that reads it.
        throw DatasetConfigError("data_folder", e.what());
      }
    }
  } else {
    for (const std::string& folder : dataset_folders(d)) {
      std::error_code ec;
      fs::create_directories(folder, ec);
      if (ec)
        throw FormatError(fmt::format("{}: cannot create the folder: {}", folder, ec.message()));
    }
  }

  GenerateResult result;
  std::vector<size_t> todo;
  for (size_t k = 0; k < files.size(); ++k) {
    std::error_code ec;
    if (remote) {
      const auto it = existing.find(files[k].path);
      if (options.overwrite || it == existing.end()) {
        todo.push_back(k);
        continue;
      }
      if (const std::string why = remote_mismatch(d, files[k], it->second); !why.empty()) {
        if (result.files_rewritten++ == 0) result.first_rewritten = files[k].path + ": " + why;
        todo.push_back(k);
        continue;
      }
      ++result.files_kept;
      for (const std::string& index : index_files_of(d, files[k])) {
        if (!existing.contains(index)) {
          write_index_files(d, files[k], options.storage);
          break;
        }
      }
      continue;
    }
    if (!options.overwrite && fs::is_regular_file(files[k].path, ec)) {
      fs::remove(temporary_name(files[k].path), ec);  // a stale leftover beside a complete file
      if (const std::string why = mismatch(d, files[k]); !why.empty()) {
        if (result.files_rewritten++ == 0) result.first_rewritten = files[k].path + ": " + why;
        todo.push_back(k);
        continue;
      }
      ++result.files_kept;
      // A complete file whose index is missing (a run stopped between the two, or an index
      // removed): the index alone.
      for (const std::string& index : index_files_of(d, files[k])) {
        const uint64_t want = 8 * static_cast<uint64_t>(d.num_samples_per_file);
        if (!fs::is_regular_file(index, ec) ||
            (is_indexed_binary(d.format) && fs::file_size(index, ec) != want)) {
          write_index_files(d, files[k], options.storage);
          break;
        }
      }
    } else {
      todo.push_back(k);
    }
  }

  Shared shared;
  shared.stop = options.stop;
  shared.storage = options.storage;
  std::atomic<size_t> next{0};
  std::atomic<int64_t> written{0};
  std::mutex mu;
  std::condition_variable cv;
  std::exception_ptr error;
  int running = 0;
  auto task = [&] {
    for (size_t t = next.fetch_add(1); t < todo.size(); t = next.fetch_add(1)) {
      const DatasetFile& file = files[todo[t]];
      const std::string tmp = remote ? staging->path_for(todo[t]) : temporary_name(file.path);
      try {
        shared.check();
        const uint64_t extra = write_file_as(d, file, tmp, file_seed(d.seed, todo[t]), shared);
        shared.bytes.fetch_add(extra, std::memory_order_relaxed);
        if (remote) {
          upload(tmp, file.path, shared);  // the object appears when it is whole
          std::error_code ec;
          fs::remove(tmp, ec);
        } else {
          sync_data(tmp);
          std::error_code ec;
          fs::rename(tmp, file.path, ec);
          if (ec) {
            throw FormatError(
                fmt::format("{}: cannot rename {} into place: {}", file.path, tmp, ec.message()));
          }
        }
        if (d.format == DataFormat::kTFRecord) write_index_files(d, file, options.storage);
        written.fetch_add(1);
      } catch (...) {
        std::error_code ec;
        fs::remove(tmp, ec);
        if (!shared.failed.load() && !(shared.stop != nullptr && shared.stop->load())) {
          const std::lock_guard<std::mutex> lock(mu);
          if (!error) error = std::current_exception();
          shared.failed = true;
        }
        break;
      }
    }
    const std::lock_guard<std::mutex> lock(mu);
    --running;
    cv.notify_all();
  };

  const int hardware = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  const int threads = static_cast<int>(
      std::min<size_t>(options.threads > 0 ? options.threads : hardware, todo.size()));
  auto progress = [&] {
    GenerateProgress p;
    p.files_total = static_cast<int64_t>(files.size());
    p.files_done = result.files_kept + written.load();
    p.bytes_written = shared.bytes.load();
    p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return p;
  };
  {
    std::vector<std::jthread> pool;
    running = threads;
    for (int i = 0; i < threads; ++i)
      pool.emplace_back(task);
    const auto interval =
        std::chrono::duration<double>(std::max(0.01, options.progress_interval_s));
    std::unique_lock<std::mutex> lock(mu);
    while (running > 0) {
      cv.wait_for(lock, interval);
      if (options.on_progress && running > 0) {
        lock.unlock();
        options.on_progress(progress());
        lock.lock();
      }
    }
  }
  if (error) std::rethrow_exception(error);
  const GenerateProgress last = progress();
  if (options.on_progress) options.on_progress(last);
  result.files_written = written.load();
  result.bytes_written = last.bytes_written;
  result.seconds = last.seconds;
  result.interrupted =
      result.files_kept + result.files_written < static_cast<int64_t>(files.size());
  return result;
}

}  // namespace pipeprof::pipelines::formats
