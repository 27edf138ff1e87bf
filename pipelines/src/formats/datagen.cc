// Writing a dataset in DLIO's layout (pipeprof/pipelines/datagen.h): one task per missing file,
// taken by a pool of threads; each file is written to its temporary name and renamed into place.
//
// The byte formats (raw, npy, tfrecord) stream their payload: random bytes are made a chunk at a
// time into a buffer that stays in cache and written at once, so a file of any size costs one pass
// of the generator and the kernel's copy. The container formats (npz, hdf5, jpeg) hold the file's
// arrays in memory and hand them to their library writers (write_npz, write_hdf5, encode_jpeg).
#include "pipeprof/pipelines/datagen.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "formats/example.h"
#include "formats/mapped_file.h"
#include "formats/npy.h"
#include "formats/random_bytes.h"
#include "formats/tfrecord.h"
#include "pipeprof/pipelines/formats.h"

namespace pipeprof::pipelines::formats {
namespace {

namespace fs = std::filesystem;

constexpr size_t kChunkBytes = size_t{1} << 20;  // fits in L2: made, then written at once

// Thrown inside a task when the run is asked to stop; the task removes its temporary file.
struct Stopped {};

// What the tasks share: the stop flags and the byte counter the progress reports read.
struct Shared {
  const std::atomic<bool>* stop = nullptr;
  std::atomic<bool> failed{false};
  std::atomic<uint64_t> bytes{0};
  void check() const {
    if (failed.load(std::memory_order_relaxed) ||
        (stop != nullptr && stop->load(std::memory_order_relaxed))) {
      throw Stopped{};
    }
  }
};

// A file written with write(2) (no stdio buffer: the chunks are already large).
class FileOut {
 public:
  explicit FileOut(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw FormatError(fmt::format("{}: cannot create: {}", path, std::strerror(errno)));
  }
  ~FileOut() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileOut(const FileOut&) = delete;
  FileOut& operator=(const FileOut&) = delete;

  void write(std::span<const std::byte> bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        throw FormatError(fmt::format("{}: write failed: {}", path_,
                                      n < 0 ? std::strerror(errno) : "no progress"));
      }
      bytes = bytes.subspan(static_cast<size_t>(n));
    }
  }
  void close() {
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0)
      throw FormatError(fmt::format("{}: close failed: {}", path_, std::strerror(errno)));
  }

 private:
  std::string path_;
  int fd_ = -1;
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

// Writes `file` (its payload from `seed`) to `out`; returns the bytes the file holds when the
// writer does not count them as it goes.
uint64_t write_file_as(const DlioDataset& d, const DatasetFile& file, const std::string& out,
                       uint64_t seed, Shared& shared) {
  RandomBytes rng(seed);
  const int64_t samples = d.num_samples_per_file;
  const Shape shape{file.dim1, file.dim2, samples};
  std::vector<std::byte> buffer;
  if (d.format == DataFormat::kRaw || d.format == DataFormat::kNpy ||
      d.format == DataFormat::kTFRecord) {
    buffer.resize(static_cast<size_t>(std::min<uint64_t>(kChunkBytes, file.bytes)));
  }
  switch (d.format) {
    case DataFormat::kRaw: {
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
      // tf.Example {image: the sample's bytes, size: DLIO's mean dimension}, framed as it streams.
      const auto dimension = static_cast<int64_t>(std::sqrt(d.record_length));
      const uint64_t sample = static_cast<uint64_t>(file.dim1) * static_cast<uint64_t>(file.dim2);
      const ExampleFrame frame = encode_example_around(
          "image", sample, {{"size", {.kind = FeatureKind::kInt64, .int64s = {dimension}}}});
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
      Tensor x(DType::kUInt8, shape);
      fill_random(x, rng, shared);
      write_npz(out, {{"x", std::move(x)}, {"y", Tensor(DType::kInt64, {samples})}}, false);
      return fs::file_size(out);
    }
    case DataFormat::kHdf5: {
      Tensor records(DType::kUInt8, {samples, file.dim1, file.dim2});
      fill_random(records, rng, shared);
      write_hdf5(out,
                 {{"records", std::move(records)}, {"labels", Tensor(DType::kInt64, {samples})}});
      return fs::file_size(out);
    }
    case DataFormat::kJpeg: {
      Tensor image(DType::kUInt8, {file.dim1, file.dim2, 1});
      fill_random(image, rng, shared);
      const std::vector<std::byte> bytes = encode_jpeg(image, 75);
      write_file(out, bytes);
      return bytes.size();
    }
  }
  return 0;
}

// The payload seed of file `k` of the run (train files first): a function of the seed and k only.
uint64_t file_seed(uint64_t seed, uint64_t k) {
  return (seed * 0x9E3779B97F4A7C15ULL) ^ (k + 1) * 0xD1B54A32D192ED03ULL;
}

}  // namespace

GenerateResult generate_dataset(const DlioDataset& d, const GenerateOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<DatasetFile> files = dataset_files(d);
  for (const std::string& folder : dataset_folders(d)) {
    std::error_code ec;
    fs::create_directories(folder, ec);
    if (ec)
      throw FormatError(fmt::format("{}: cannot create the folder: {}", folder, ec.message()));
  }

  GenerateResult result;
  std::vector<size_t> todo;
  for (size_t k = 0; k < files.size(); ++k) {
    std::error_code ec;
    if (!options.overwrite && fs::is_regular_file(files[k].path, ec)) {
      fs::remove(temporary_name(files[k].path), ec);  // a stale leftover beside a complete file
      ++result.files_kept;
    } else {
      todo.push_back(k);
    }
  }

  Shared shared;
  shared.stop = options.stop;
  std::atomic<size_t> next{0};
  std::atomic<int64_t> written{0};
  std::mutex mu;
  std::condition_variable cv;
  std::exception_ptr error;
  int running = 0;
  auto task = [&] {
    for (size_t t = next.fetch_add(1); t < todo.size(); t = next.fetch_add(1)) {
      const DatasetFile& file = files[todo[t]];
      const std::string tmp = temporary_name(file.path);
      try {
        shared.check();
        const uint64_t extra = write_file_as(d, file, tmp, file_seed(d.seed, todo[t]), shared);
        shared.bytes.fetch_add(extra, std::memory_order_relaxed);
        std::error_code ec;
        fs::rename(tmp, file.path, ec);
        if (ec) {
          throw FormatError(
              fmt::format("{}: cannot rename {} into place: {}", file.path, tmp, ec.message()));
        }
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
