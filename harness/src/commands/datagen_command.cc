// pipeprof datagen: writes a dataset in DLIO's layout (pipeprof/pipelines/datagen.h) from flags or
// from a DLIO workload file's `dataset` section, flags overriding the file.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "commands/commands.h"
#include "commands/interrupt.h"
#include "workload/dlio_dataset_yaml.h"
#include "workload/dlio_training.h"
#include "workload/dlio_workload.h"
#include "workload/dlio_yaml.h"
#include "pipeprof/pipelines/datagen.h"

namespace pipeprof::harness {
namespace {

namespace formats = pipelines::formats;

struct DatagenOptions {
  std::string workload;
  std::string data_folder;
  std::string format;
  int64_t num_files_train = 0;
  int64_t num_files_eval = 0;
  int64_t num_samples_per_file = 0;
  double record_length = 0;
  double record_length_stdev = 0;
  double record_length_resize = 0;
  int64_t num_subfolders_train = 0;
  int64_t num_subfolders_eval = 0;
  std::string file_prefix;
  uint64_t seed = 10;
  int threads = 0;
  bool allow_other_files = false;
  bool overwrite = false;
  bool quiet = false;
  // --image-records: ImageNet-like TFRecord shards instead of a DLIO dataset.
  std::string image_records;
  int64_t shards = 8;
  int64_t images_per_shard = 64;
  int64_t image_size = 256;
  // The DlioDataset key of each dataset flag given on the command line, with the flag's name.
  std::map<std::string, CLI::Option*> flags;
};

std::string megabytes(double bytes) {
  return fmt::format("{:.1f} MB", bytes / 1e6);
}

// "[#####.....]  37/168 files  5210.3 MB  812 MB/s" on one line of stderr, redrawn in place.
void draw_progress(const formats::GenerateProgress& p) {
  constexpr int kWidth = 24;
  const double done = p.files_total > 0 ? static_cast<double>(p.files_done) / p.files_total : 1;
  const int filled = static_cast<int>(done * kWidth);
  std::fprintf(stderr, "\r[%s%s] %lld/%lld files  %s  %.0f MB/s ", std::string(filled, '#').c_str(),
               std::string(kWidth - filled, '.').c_str(), static_cast<long long>(p.files_done),
               static_cast<long long>(p.files_total), megabytes(p.bytes_written).c_str(),
               p.seconds > 0 ? p.bytes_written / p.seconds / 1e6 : 0.0);
  std::fflush(stderr);
}

// The dataset: DLIO's defaults, then the workload file's section, then the flags. Remembers where
// each value came from, so that a value out of range is reported as the user wrote it.
// A workload whose storage section says s3 gives its bucket's folder and how to reach it
// (`storage`), as `pipeprof workload` generates it.
formats::DlioDataset resolve(const DatagenOptions& o, std::map<std::string, std::string>& file_keys,
                             std::shared_ptr<pipelines::StorageContext>& storage) {
  formats::DlioDataset d;
  if (!o.workload.empty()) {
    // Parsed once: the dataset section, then, where there is a storage section, the whole workload.
    const YAML::Node root = read_input([&] { return workload::load_yaml_mapping(o.workload); });
    DlioDatasetSection section = read_input([&] { return read_dlio_dataset(o.workload, root); });
    d = section.dataset;
    file_keys = section.keys;
    if (root["storage"].IsDefined()) {
      const workload::DlioWorkload w =
          read_input([&] { return workload::read_workload(o.workload, root); });
      if (w.s3) {
        d.data_folder = w.dataset.data_folder;  // s3://<storage_root>/<data_folder>
        storage = workload::s3_storage(w, &InterruptGuard::flag());
      }
    }
  }
  auto given = [&](const std::string& key) { return o.flags.at(key)->count() > 0; };
  if (given("data_folder")) d.data_folder = o.data_folder;
  if (given("format")) {
    const auto f = formats::parse_data_format(o.format);
    if (!f) {
      throw InputError(fmt::format("--format: expected one of {}, got \"{}\"",
                                   formats::data_format_names(), o.format));
    }
    d.format = *f;
  }
  if (given("num_files_train")) d.num_files_train = o.num_files_train;
  if (given("num_files_eval")) d.num_files_eval = o.num_files_eval;
  if (given("num_samples_per_file")) d.num_samples_per_file = o.num_samples_per_file;
  if (given("record_length")) d.record_length = o.record_length;
  if (given("record_length_stdev")) d.record_length_stdev = o.record_length_stdev;
  if (given("record_length_resize")) d.record_length_resize = o.record_length_resize;
  if (given("num_subfolders_train")) d.num_subfolders_train = o.num_subfolders_train;
  if (given("num_subfolders_eval")) d.num_subfolders_eval = o.num_subfolders_eval;
  if (given("file_prefix")) d.file_prefix = o.file_prefix;
  d.seed = o.seed;
  if (!given("data_folder") && file_keys.count("data_folder") == 0) {
    throw InputError(
        "no data folder: give --data-folder, or --workload with a file whose dataset "
        "section has data_folder");
  }
  try {
    formats::validate(d);
  } catch (const formats::DatasetConfigError& e) {
    const std::string& what = e.detail();
    if (given(e.key()))
      throw InputError(fmt::format("{}: {}", o.flags.at(e.key())->get_name(), what));
    if (const auto it = file_keys.find(e.key()); it != file_keys.end()) {
      throw InputError(fmt::format("{}: dataset.{}: {}", o.workload, it->second, what));
    }
    throw InputError(e.what());
  }
  return d;
}

}  // namespace

Outcome run_datagen(const formats::DlioDataset& d, const DatagenRunOptions& o) {
  if (!o.allow_other_files) {
    const auto other = read_input([&] { return formats::other_files(d, 5); });
    if (!other.empty()) {
      std::string names;
      for (const auto& n : other)
        names += (names.empty() ? "" : ", ") + n;
      throw InputError(
          fmt::format("{} holds files that are not this dataset's ({}{}); pass "
                      "--allow-other-files to write into it anyway",
                      d.data_folder, names, other.size() >= 5 ? ", ..." : ""));
    }
  }
  const InterruptGuard guard;
  formats::GenerateOptions options;
  options.threads = o.threads;
  options.overwrite = o.overwrite;
  options.stop = &InterruptGuard::flag();
  options.storage = o.storage;
  if (!options.storage && d.data_folder.starts_with("s3://")) {
    // The AWS environment's settings; Ctrl-C ends a request in progress.
    options.storage = std::make_shared<pipelines::StorageContext>(
        pipelines::RemoteReadOptions{.stop = &InterruptGuard::flag()});
  }
  const bool bar = !o.quiet && isatty(STDERR_FILENO) != 0;
  if (bar) options.on_progress = draw_progress;
  const formats::GenerateResult r = formats::generate_dataset(d, options);
  if (bar) std::fputc('\n', stderr);
  const int64_t total = d.num_files_train + d.num_files_eval;
  if (r.files_rewritten > 0) {  // said even with -q: files were replaced
    std::cerr << fmt::format(
        "{}: wrote {} file(s) again that did not match this layout (first: {})\n", d.data_folder,
        r.files_rewritten, r.first_rewritten);
  }
  if (r.interrupted) {
    std::cerr << fmt::format(
        "interrupted: {} of {} files complete, no partial file left; run "
        "again to write the rest\n",
        r.files_kept + r.files_written, total);
    return Outcome::kInterrupted;
  }
  if (!o.quiet) {
    (o.summary_to_stderr ? std::cerr : std::cout) << fmt::format(
        "{}: {} {} files: wrote {} ({}) in {:.2f} s, {:.0f} MB/s; kept {} complete\n",
        d.data_folder, total, formats::data_format_name(d.format), r.files_written,
        megabytes(static_cast<double>(r.bytes_written)), r.seconds,
        r.seconds > 0 ? static_cast<double>(r.bytes_written) / r.seconds / 1e6 : 0.0,
        r.files_kept);
  }
  return Outcome::kOk;
}

CommandRunner add_datagen_command(CLI::App& app) {
  auto o = std::make_shared<DatagenOptions>();
  auto* cmd = app.add_subcommand(
      "datagen",
      "Write a dataset in DLIO's layout: <data-folder>/train/<prefix>_<i>_of_<N>.<format> (i "
      "zero-padded to the digits of N; valid/ for eval files; subfolders i % S when asked), "
      "samples of d1 x d2 random bytes with d ~ N(sqrt(record-length), record-length-stdev / (2 "
      "sqrt(record-length))) drawn per file, as DLIO's generators write them");
  cmd->footer(
      "Formats: tfrecord (one tf.Example per sample: image bytes, size int64), npz (x: uint8 [d1, "
      "d2, samples], y: zeros), npy (uint8 [d1, d2, samples]), hdf5 (records: uint8 [samples, d1, "
      "d2], labels), jpeg (one grayscale image per file), raw (records of exactly record-length "
      "bytes, fixed_length_records' layout), indexed_binary and mmap_indexed_binary (Megatron's "
      "layout: the samples back to back, with <file>.off.idx and <file>.sz.idx of uint64 offsets "
      "and sizes, written before the data file), csv (pandas' layout: a header row, then a row "
      "per sample: its index and its d1 x d2 values), png (one 8-bit grayscale image per file).\n"
      "Files are written in parallel under hidden temporary names, synced to the disk and renamed "
      "when complete, so Ctrl-C or a crash leaves no partial file. A second run keeps the files "
      "that are what this layout writes (their size; for hdf5 and jpeg the signature too) and "
      "writes again the others (cut, empty, another record length), saying so. "
      "Flags override the workload file's dataset section. Writing into a folder that holds other "
      "files needs --allow-other-files. Prints progress on stderr when it is a terminal.");
  cmd->add_option("--workload", o->workload,
                  "A DLIO workload file (YAML): its dataset section gives the defaults")
      ->check(CLI::ExistingFile);
  auto flag = [&](const std::string& key, CLI::Option* option) { o->flags[key] = option; };
  flag("data_folder", cmd->add_option("--data-folder", o->data_folder,
                                      "The dataset's root folder (DLIO's data_folder)"));
  flag("format", cmd->add_option("--format", o->format,
                                 "tfrecord, npz, npy, hdf5, jpeg, raw, indexed_binary, "
                                 "mmap_indexed_binary, csv or png (default tfrecord)"));
  flag("num_files_train",
       cmd->add_option("--num-files-train", o->num_files_train, "Files in train/ (default 8)"));
  flag("num_files_eval",
       cmd->add_option("--num-files-eval", o->num_files_eval, "Files in valid/ (default 0)"));
  flag("num_samples_per_file", cmd->add_option("--num-samples-per-file", o->num_samples_per_file,
                                               "Samples in each file (default 1)"));
  flag("record_length", cmd->add_option("--record-length", o->record_length,
                                        "Mean bytes per sample (default 65536; a float is fine)"));
  flag("record_length_stdev",
       cmd->add_option("--record-length-stdev", o->record_length_stdev,
                       "Standard deviation of a sample's bytes (default 0)"));
  flag("record_length_resize",
       cmd->add_option("--record-length-resize", o->record_length_resize,
                       "DLIO's resized sample size (readers only; recorded, not written)"));
  flag("num_subfolders_train",
       cmd->add_option("--num-subfolders-train", o->num_subfolders_train,
                       "Spread train files over this many subfolders (used when > 1)"));
  flag("num_subfolders_eval",
       cmd->add_option("--num-subfolders-eval", o->num_subfolders_eval,
                       "Spread eval files over this many subfolders (used when > 1)"));
  flag("file_prefix",
       cmd->add_option("--file-prefix", o->file_prefix, "File name prefix (default img)"));
  cmd->add_option("--seed", o->seed, "Seed of the sizes and the payload (default 10, as DLIO)");
  cmd->add_option("--threads", o->threads, "Files written in parallel (default: one per CPU)")
      ->check(CLI::Range(1, 1024));
  cmd->add_flag("--allow-other-files", o->allow_other_files,
                "Write even if the folder holds files that are not this dataset's");
  cmd->add_flag("--overwrite", o->overwrite, "Rewrite complete files too");
  cmd->add_flag("--quiet,-q", o->quiet, "No progress and no summary");
  cmd->add_option("--image-records", o->image_records,
                  "Instead: ImageNet-like TFRecord shards in this folder (train-<i>-of-<N>."
                  "tfrecord; a tf.Example per image: image/encoded, a JPEG at quality 90, and "
                  "image/class/label), as the scale-out experiment (dell_old, dell_new) reads");
  cmd->add_option("--shards", o->shards, "With --image-records: shards (default 8)")
      ->check(CLI::Range(int64_t{1}, int64_t{100000}));
  cmd->add_option("--images-per-shard", o->images_per_shard,
                  "With --image-records: images per shard (default 64)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  cmd->add_option("--image-size", o->image_size,
                  "With --image-records: height and width of the images (default 256)")
      ->check(CLI::Range(int64_t{8}, int64_t{8192}));

  return [o]() -> Outcome {
    if (!o->image_records.empty()) {
      const InterruptGuard guard;
      const formats::ImageRecordsResult r = read_input([&] {
        return formats::generate_image_records(
            {.folder = o->image_records,
             .shards = o->shards,
             .images_per_shard = o->images_per_shard,
             .height = o->image_size,
             .width = o->image_size,
             .quality = 90,
             .seed = o->seed},
            &InterruptGuard::flag());
      });
      if (InterruptGuard::flag().load()) return Outcome::kInterrupted;
      if (!o->quiet) {
        std::cerr << fmt::format("{}: {} shard(s) of {} images ({} written, {:.1f} MB)\n",
                                 o->image_records, r.files.size(), o->images_per_shard,
                                 r.shards_written, static_cast<double>(r.bytes) / 1e6);
      }
      return Outcome::kOk;
    }
    std::map<std::string, std::string> file_keys;
    std::shared_ptr<pipelines::StorageContext> storage;
    const formats::DlioDataset d = resolve(*o, file_keys, storage);
    return run_datagen(d, {.threads = o->threads,
                           .overwrite = o->overwrite,
                           .allow_other_files = o->allow_other_files,
                           .quiet = o->quiet,
                           .storage = storage});
  };
}

}  // namespace pipeprof::harness
