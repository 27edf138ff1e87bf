#include "workload/workload_pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "pipeprof/harness/errors.h"

namespace pipeprof::harness::workload {
namespace {

using pipelines::formats::DataFormat;

// The source reading one file (the interleave's "$element"), with the read options the reader's
// keys ask for.
// reader.odirect (DLIO's O_DIRECT readers) and reader.dont_use_mmap on an array file's source.
nlohmann::json read_mode(const DlioWorkload& w, nlohmann::json source) {
  if (w.odirect) source["direct"] = true;
  if (w.dont_use_mmap) source["mmap"] = false;
  return source;
}

nlohmann::json file_source(const DlioWorkload& w) {
  const bool many = w.dataset.num_samples_per_file > 1;
  switch (w.dataset.format) {
    case DataFormat::kTFRecord: {
      nlohmann::json s{{"op", "tfrecord"}, {"files", "$element"}};
      if (w.transfer_size) s["buffer_size"] = *w.transfer_size;
      if (w.dont_use_mmap) s["mmap"] = false;
      if (w.odirect) s["direct"] = true;
      return s;
    }
    case DataFormat::kNpz:  // x: uint8 [d1, d2, samples]
      return read_mode(w, many ? nlohmann::json{{"op", "npz"}, {"file", "$element"},
                                                {"keys", {"x"}}, {"rows", true}, {"rows_axis", -1}}
                               : nlohmann::json{{"op", "npz"}, {"file", "$element"}, {"keys", {"x"}}});
    case DataFormat::kNpy:  // uint8 [d1, d2, samples]
      return read_mode(w, many ? nlohmann::json{{"op", "npy"}, {"file", "$element"},
                                                {"rows", true}, {"rows_axis", -1}}
                               : nlohmann::json{{"op", "npy"}, {"file", "$element"}});
    case DataFormat::kHdf5:  // records: uint8 [samples, d1, d2]
      return read_mode(w, {{"op", "hdf5"}, {"file", "$element"}, {"datasets", {"records"}},
                           {"rows", true}});
    case DataFormat::kIndexedBinary:  // DLIO's reader: a read call per sample
      return {{"op", "indexed_binary"}, {"files", "$element"}, {"mmap", false},
              {"direct", w.odirect}};
    case DataFormat::kMmapIndexedBinary:  // DLIO's reader: views of the mapped file
      return {{"op", "indexed_binary"}, {"files", "$element"},
              {"mmap", !w.dont_use_mmap && !w.odirect}, {"direct", w.odirect}};
    case DataFormat::kJpeg:  // DLIO's image readers: the file decoded (PIL's open, np.asarray)
      return read_mode(w, {{"op", "jpeg"}, {"file", "$element"}});
    case DataFormat::kPng:
      return read_mode(w, {{"op", "png"}, {"file", "$element"}});
    case DataFormat::kCsv:  // DLIO's: pandas' read_csv, a sample a row
      return read_mode(w, {{"op", "csv"}, {"file", "$element"}, {"rows", true}});
    case DataFormat::kRaw:  // records of exactly record_length bytes
      return {{"op", "fixed_length_records"},
              {"files", "$element"},
              {"record_bytes", static_cast<int64_t>(w.dataset.record_length)},
              {"mmap", !w.dont_use_mmap && !w.odirect},
              {"direct", w.odirect}};
  }
  throw std::invalid_argument("the workload's reader does not read this format");
}

// An image file is one image, whatever the samples a file: DLIO's image readers give that image
// for each of the file's sample indices.
bool one_image_a_file(const DlioWorkload& w) {
  return w.dataset.format == DataFormat::kJpeg || w.dataset.format == DataFormat::kPng;
}

// The interleave reading the files: read_threads of them at once (sequential without readers).
nlohmann::json reader(const DlioWorkload& w, int64_t block_length, int64_t rank, bool samples) {
  nlohmann::json inner = nlohmann::json::array({file_source(w)});
  if (!samples) inner.push_back({{"op", "map"}, {"fn", "nbytes"}});
  if (one_image_a_file(w) && w.dataset.num_samples_per_file > 1)
    inner.push_back({{"op", "repeat"}, {"count", w.dataset.num_samples_per_file}});
  if (!w.preprocess_time.zero()) {
    inner.push_back({{"op", "map"},
                     {"fn", "sleep_time"},
                     {"args", {{"time", w.preprocess_time.to_json()}, {"seed", w.seed + rank}}}});
  }
  nlohmann::json stage{{"op", "interleave"},
                       {"pipeline", {{"stages", inner}}},
                       {"block_length", block_length},
                       {"name", "reader"}};
  if (w.read_threads_autotune) {
    stage["cycle_length"] = std::max<int64_t>(w.read_threads, 8);
    stage["parallelism"] = "autotune";
  } else {
    stage["cycle_length"] = std::max<int64_t>(1, w.read_threads);
    if (w.read_threads > 0) stage["parallelism"] = w.read_threads;
  }
  // A parallel reader opens as many files ahead of the cycle as it holds, so that a reader thread
  // whose file is read goes on to the next one (as DLIO's workers do) instead of waiting for the
  // cycle to come back: files of one sample would otherwise be read in rounds, each as long as its
  // largest file.
  if (stage.contains("parallelism")) stage["prefetch_input_elements"] = stage["cycle_length"];
  // Small records (tfrecord) are handed over in bursts rather than one wake-up each.
  if (w.dataset.format == DataFormat::kTFRecord) stage["buffer_output_elements"] = 16;
  return stage;
}

nlohmann::json prefetch(const DlioWorkload& w, int64_t batches) {
  if (w.read_threads_autotune) return {{"op", "prefetch"}, {"buffer_size", "autotune"}};
  return {{"op", "prefetch"}, {"buffer_size", batches}};
}

}  // namespace

std::string train_pattern(const DlioWorkload& w) {
  const std::filesystem::path train = std::filesystem::path(w.dataset.data_folder) / "train";
  const std::string ext(pipelines::formats::data_format_name(w.dataset.format));
  return (w.dataset.num_subfolders_train > 1 ? train / "*" / ("*." + ext) : train / ("*." + ext))
      .string();
}

SampleRange pytorch_samples(const DlioWorkload& w, int64_t rank, int64_t ranks) {
  const int64_t total = w.dataset.num_files_train * w.dataset.num_samples_per_file;
  // DLIO's sampler (MLPerf Storage v3): floor(total / ranks) each, the remainder left out, so that
  // no rank is left with fewer samples than the others' steps need.
  const int64_t per_rank = total / ranks;
  return {rank * per_rank, (rank + 1) * per_rank};
}

nlohmann::json repeated(nlohmann::json spec) {
  nlohmann::json& stages = spec.at("stages");
  const bool prefetch = !stages.empty() && stages.back().value("op", "") == "prefetch";
  stages.insert(prefetch ? stages.end() - 1 : stages.end(), nlohmann::json{{"op", "repeat"}});
  return spec;
}

std::vector<std::string> expected_training_files(const DlioWorkload& w) {
  std::vector<std::string> files;
  for (const auto& f : pipelines::formats::dataset_files(w.dataset)) {
    if (!f.eval) files.push_back(f.path);
  }
  std::sort(files.begin(), files.end());
  return files;
}

nlohmann::json loader_spec(const DlioWorkload& w, const std::vector<std::string>& files,
                           int64_t rank, int64_t ranks, bool samples) {
  const int64_t nspf = w.dataset.num_samples_per_file;
  nlohmann::json stages = nlohmann::json::array();
  // The rank's files, listed once (the listing is DLIO's: sorted, num_files_train of them).
  auto list = [&](std::vector<std::string> mine, bool shuffle) {
    nlohmann::json s{{"op", "list_files"}, {"files", std::move(mine)}, {"shuffle", shuffle}};
    if (shuffle) s["seed"] = w.seed + rank;
    return s;
  };
  if (w.loader == Loader::kPyTorch) {
    const SampleRange r = pytorch_samples(w, rank, ranks);
    const int64_t first_file = r.begin / nspf;
    const int64_t count = r.end > r.begin ? (r.end - 1) / nspf - first_file + 1 : 0;
    if (count == 0) throw InputError(fmt::format("{}: rank {} of {} has no samples", w.file, rank, ranks));
    stages.push_back(list({files.begin() + first_file, files.begin() + first_file + count}, false));
    // A block of a whole file per slot: the samples come in index order while read_threads files
    // are read at once.
    stages.push_back(reader(w, nspf, rank, samples));
    stages.push_back({{"op", "skip"}, {"count", r.begin - first_file * nspf}});
    stages.push_back({{"op", "take"}, {"count", r.end - r.begin}});
    stages.push_back({{"op", "batch"}, {"batch_size", w.batch_size}, {"drop_remainder", true}});
    // PyTorch's DataLoader keeps prefetch_factor batches per worker in flight, prefetch_factor =
    // ceil(prefetch_size / read_threads) (2 when that is 0), as DLIO sets it; none without workers.
    if (w.read_threads > 0 || w.read_threads_autotune) {
      const int64_t rt = std::max<int64_t>(1, w.read_threads);
      int64_t factor = (w.prefetch_size + rt - 1) / rt;
      if (factor <= 0) factor = 2;
      stages.push_back(prefetch(w, rt * factor));
    }
  } else {
    // DLIO's TFRecord reader: files round-robin over ranks when there are enough of them (each
    // rank's own files shuffled with file_shuffle, a new order every epoch), else every file on
    // every rank and the records sharded.
    const auto n = static_cast<int64_t>(files.size());
    if (n >= ranks) {
      std::vector<std::string> mine;
      for (int64_t i = rank; i < n; i += ranks)
        mine.push_back(files[static_cast<size_t>(i)]);
      stages.push_back(list(std::move(mine), w.file_shuffle));
      stages.push_back(reader(w, 1, rank, samples));
    } else {
      stages.push_back(list(files, w.file_shuffle));
      stages.push_back(reader(w, 1, rank, samples));
      stages.push_back({{"op", "shard"}, {"num_shards", ranks}, {"index", rank}});
    }
    if (w.sample_shuffle) {
      stages.push_back({{"op", "shuffle"}, {"buffer_size", w.shuffle_size}, {"seed", w.seed + rank}});
    }
    stages.push_back({{"op", "batch"}, {"batch_size", w.batch_size}, {"drop_remainder", true}});
    if (w.prefetch_size > 0 || w.read_threads_autotune) stages.push_back(prefetch(w, w.prefetch_size));
  }
  return {{"name", fmt::format("{}_{}", w.name, loader_name(w.loader))},
          {"description",
           fmt::format("DLIO workload {} ({} files, {} loader), rank {} of {}", w.name,
                       pipelines::formats::data_format_name(w.dataset.format),
                       loader_name(w.loader), rank, ranks)},
          {"stages", stages}};
}

}  // namespace pipeprof::harness::workload
