// Data generation in DLIO's layout: the files a DLIO workload's `dataset` section describes, with
// DLIO's names, folders and sample sizes, filled with uniform random bytes.
//
//   <data_folder>/train/[<subfolder>/]<prefix>_<i>_of_<N>.<format>   (and valid/ for eval files)
//
// i is zero-padded to the number of digits of N; with num_subfolders_train > 1 file i goes to the
// subfolder i % num_subfolders_train, zero-padded to the digits of num_subfolders_train. Each
// file's samples are d1 x d2 uint8 arrays, (d1, d2) drawn once per file (train files, then eval
// files) from N(sqrt(record_length), record_length_stdev / (2 sqrt(record_length))), truncated to
// an integer and at least 1; without a stdev d1 = d2 = int(sqrt(record_length)). What a file holds:
//   tfrecord  one tf.Example per sample: image (bytes, d1 * d2), size (int64, the mean dimension)
//   npz       x: uint8 [d1, d2, samples], y: int64 [samples] of zeros (numpy's savez, stored)
//   npy       uint8 [d1, d2, samples]
//   hdf5      records: uint8 [samples, d1, d2], labels: int64 [samples] of zeros
//   jpeg      one grayscale d1 x d2 image (quality 75, as PIL's default); samples are ignored
//   raw       samples records of exactly record_length bytes back to back (fixed_length_records'
//             layout: no header or footer), so record_length_stdev must be 0
//   indexed_binary, mmap_indexed_binary
//             Megatron-style: the samples (d1 x d2 bytes each) back to back, and beside the file
//             <file>.off.idx and <file>.sz.idx, each a uint64 per sample (little-endian, no
//             header): its offset and its size; the two names differ in how DLIO reads them
//             (read calls, or a mapping of the file)
//
// Each file is written under a hidden temporary name in its folder (".<name>.tmp") and renamed
// when complete, so a file with its final name is always complete; a run finds complete files and
// keeps them (idempotent), and replaces a leftover temporary file. The payload of file k is a
// function of the seed and k only, so a run that is interrupted and resumed writes the same bytes.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pipeprof::pipelines {
class StorageContext;
}  // namespace pipeprof::pipelines

namespace pipeprof::pipelines::formats {

enum class DataFormat {
  kTFRecord, kNpz, kNpy, kHdf5, kJpeg, kRaw, kIndexedBinary, kMmapIndexedBinary, kCsv, kPng
};

std::string_view data_format_name(DataFormat format);  // also the files' extension
std::optional<DataFormat> parse_data_format(std::string_view name);
std::string data_format_names();  // "tfrecord, npz, npy, hdf5, jpeg, raw, indexed_binary, ..."

// The keys of DLIO's `dataset` section that data generation reads, with DLIO's defaults.
// record_length_resize only matters to readers (DLIO's resized image); it is kept for them.
struct DlioDataset {
  std::string data_folder = "./data";
  DataFormat format = DataFormat::kTFRecord;
  int64_t num_files_train = 8;
  int64_t num_files_eval = 0;
  int64_t num_samples_per_file = 1;
  double record_length = 64 * 1024;  // bytes; DLIO accepts a float here
  double record_length_stdev = 0;
  double record_length_resize = 0;
  int64_t num_subfolders_train = 0;
  int64_t num_subfolders_eval = 0;
  std::string file_prefix = "img";
  uint64_t seed = 10;  // DLIO seeds numpy's generator with 10 before generating
};

// A value of a DlioDataset that cannot be generated; key() is its DLIO key ("num_files_train"),
// detail() what is wrong with it, and what() both ("<key>: <detail>").
class DatasetConfigError : public std::invalid_argument {
 public:
  DatasetConfigError(std::string key, std::string detail)
      : std::invalid_argument(key + ": " + detail),
        key_(std::move(key)),
        detail_(std::move(detail)) {}
  const std::string& key() const { return key_; }
  const std::string& detail() const { return detail_; }

 private:
  std::string key_;
  std::string detail_;
};

// Throws DatasetConfigError for the first value that is out of range.
void validate(const DlioDataset& dataset);

struct DatasetFile {
  std::string path;   // data_folder/train/.../img_07_of_16.npz
  int64_t index = 0;  // within its split
  bool eval = false;  // valid/ rather than train/
  int64_t dim1 = 1;   // each sample is dim1 x dim2 bytes (raw: record_length bytes)
  int64_t dim2 = 1;
  uint64_t bytes = 0;  // the samples' payload (not counting the format's own framing)
};

// Every file of the dataset in DLIO's order (train, then eval), and the folders DLIO creates
// (train/, valid/ and their subfolders; for tfrecord also index/, index/train/ and index/valid/).
// Validates first.
std::vector<DatasetFile> dataset_files(const DlioDataset& dataset);
std::vector<std::string> dataset_folders(const DlioDataset& dataset);

// The index files DLIO writes with a data file, none for most formats:
//   tfrecord   the index for DALI (its tfrecord2idx: a line "<offset> <length>" per record, both
//              in bytes, the length framing included), at data_folder/index/{train,valid}/<file
//              name>.idx (its folders are among dataset_folders)
//   indexed_binary, mmap_indexed_binary   <file>.off.idx and <file>.sz.idx beside the file
// A data file under its final name has its index files complete: they are written first.
std::vector<std::string> index_files_of(const DlioDataset& dataset, const DatasetFile& file);

// Whether a format's samples are found through index files (indexed_binary, mmap_indexed_binary).
bool is_indexed_binary(DataFormat format);

// The hidden name a file is written under before it is renamed into place.
std::string temporary_name(const std::string& path);

// Entries under data_folder that are neither the dataset's files, its folders nor their temporary
// names (relative paths, sorted, at most `limit`). An absent folder holds none.
std::vector<std::string> other_files(const DlioDataset& dataset, size_t limit = 10);

struct GenerateProgress {
  int64_t files_done = 0;  // written or kept
  int64_t files_total = 0;
  uint64_t bytes_written = 0;  // file bytes written by this run
  double seconds = 0;
};

struct GenerateOptions {
  int threads = 0;         // files written in parallel; 0: one per hardware thread
  bool overwrite = false;  // rewrite complete files too
  // Checked between chunks: when it becomes true, the files in progress are abandoned (their
  // temporary files removed) and generate_dataset returns with interrupted set.
  const std::atomic<bool>* stop = nullptr;
  // Called from the calling thread about every `progress_interval_s` and once at the end.
  std::function<void(const GenerateProgress&)> on_progress;
  double progress_interval_s = 0.2;
  // An s3:// data folder: the S3 settings (nullptr: the AWS environment's).
  std::shared_ptr<const StorageContext> storage;
};

struct GenerateResult {
  int64_t files_written = 0;
  int64_t files_kept = 0;  // already complete
  // Files under their final names that were not what this layout writes (a size that does not
  // match, a cut or empty file, another record length): written again. The first one, with why.
  int64_t files_rewritten = 0;
  std::string first_rewritten;
  uint64_t bytes_written = 0;
  double seconds = 0;
  bool interrupted = false;
};

// Creates the folders and writes every missing file (or every file, with overwrite); a file already
// under its final name is kept only when it is what this layout writes: its exact size (raw, npy,
// tfrecord; npz: its x member's), or for hdf5 and jpeg the format's signature and a size that fits;
// others are written again (files_rewritten). Each file's data reaches the disk (fdatasync) before
// it is renamed into place, so a crash never leaves a short file under a final name. Does not check
// for other files (the caller decides, with other_files). Throws DatasetConfigError for a bad
// configuration and FormatError naming the file when one cannot be written (a full disk); no
// temporary file is left behind either way.
// An s3:// data folder: each file is written in a local temporary folder (under TMPDIR), uploaded
// (multipart when large) and removed; an object appears only when its upload completes. An object
// already there is kept when its size is what this layout writes (npz, hdf5: within the few KiB
// their containers add; jpeg: any), which the bucket's listing gives.
GenerateResult generate_dataset(const DlioDataset& dataset, const GenerateOptions& options = {});

}  // namespace pipeprof::pipelines::formats

namespace pipeprof::pipelines::formats {

// ImageNet-like TFRecord shards (tf.data's ImageNet layout, as the Dell experiment reads it):
//   <folder>/train-<i>-of-<N>.tfrecord, i zero-padded to 5 digits
// each record a tf.Example {"image/encoded": a JPEG (height x width x 3, quality), and
// "image/class/label": int64 in [0, 1000)}. The pictures are smooth colour fields with grain, so
// they compress and decode about as photographs do (random noise would not). Shards are written
// under temporary names and renamed; complete shards are kept (a second run writes nothing).
struct ImageRecords {
  std::string folder;
  int64_t shards = 8;
  int64_t images_per_shard = 64;
  int64_t height = 256, width = 256;
  int quality = 90;
  uint64_t seed = 3;
};

struct ImageRecordsResult {
  std::vector<std::string> files;  // the complete shards, in order (all of them unless stopped)
  int64_t shards_written = 0;
  uint64_t bytes = 0;  // of every shard
};

// Throws std::invalid_argument for bad sizes, FormatError naming a shard that cannot be written.
ImageRecordsResult generate_image_records(const ImageRecords& r,
                                          const std::atomic<bool>* stop = nullptr);

}  // namespace pipeprof::pipelines::formats
