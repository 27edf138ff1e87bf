#include "workload/dlio_workload.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>
#include <string_view>

#include "pipeprof/harness/errors.h"
#include "workload/dlio_dataset_yaml.h"
#include "workload/dlio_yaml.h"

namespace pipeprof::harness::workload {
namespace {

using pipelines::TimeDistribution;
using pipelines::formats::DataFormat;

// The sections and keys DLIO's configuration loader reads (whether pipeprof uses them or not).
const std::vector<std::string_view> kSections{
    "model", "framework", "workflow", "dataset", "reader", "data_reader", "train", "evaluation",
    "checkpoint", "output", "profiling", "metric", "storage", "hydra", "pipeprof"};
const std::vector<std::string_view> kWorkflowKeys{"generate_data", "train", "evaluation",
                                                  "checkpoint", "profiling", "debug"};
const std::vector<std::string_view> kReaderKeys{
    "data_loader", "batch_size", "batch_size_eval", "read_threads", "computation_threads",
    "prefetch_size", "file_shuffle", "sample_shuffle", "shuffle_size", "transfer_size",
    "read_type", "preprocess_time", "preprocess_time_stdev", "pin_memory",
    "multiprocessing_context", "dont_use_mmap", "reader_classname", "data_loader_classname",
    "data_loader_sampler", "file_access", "odirect", "transformed_record_dims",
    "transformed_record_element_type", "storage_type", "protocol", "storage_library",
    "storage_root", "storage_options", "computatation_threads"};
const std::vector<std::string_view> kTrainKeys{"epochs", "computation_time",
                                               "computation_time_stdev", "total_training_steps",
                                               "seed", "seed_change_epoch"};
const std::vector<std::string_view> kEvaluationKeys{"eval_time", "eval_time_stdev",
                                                    "eval_after_epoch", "epochs_between_evals"};
const std::vector<std::string_view> kCheckpointKeys{
    "checkpoint_folder", "checkpoint_after_epoch", "epochs_between_checkpoints",
    "steps_between_checkpoints", "type", "checkpoint_mechanism_classname", "fsync",
    "time_between_checkpoints", "num_checkpoints_write", "num_checkpoints_read",
    "recovery_rank_shift", "rank_sync", "mode", "randomize_tensor", "ksm", "model_size",
    "optimization_groups", "num_layers", "layer_parameters", "tensor_parallelism",
    "pipeline_parallelism", "checkpoint_rank_sync"};
const std::vector<std::string_view> kOutputKeys{"folder", "log_file", "metric"};
const std::vector<std::string_view> kOutputMetricKeys{"exclude_start_steps", "exclude_end_steps"};
const std::vector<std::string_view> kProfilingKeys{"profiler", "iostat_devices"};
const std::vector<std::string_view> kMetricKeys{"au"};
const std::vector<std::string_view> kStorageKeys{"storage_type", "storage_root",
                                                 "storage_options", "storage_library"};
const std::vector<std::string_view> kStorageOptionKeys{
    "endpoint_url", "access_key_id", "secret_access_key", "session_token", "region",
    "s3_force_path_style", "s3_max_attempts"};
const std::vector<std::string_view> kModelKeys{
    "name", "type", "model_size", "model_size_bytes", "optimization_groups", "num_layers",
    "layer_parameters", "model_datatype", "optimizer_datatype", "parallelism", "transformer"};
const std::vector<std::string_view> kPipeprofKeys{"scale", "remote"};
const std::vector<std::string_view> kRemoteKeys{"mode",         "latency_ms",       "rate_mib_s",
                                                "preload",      "cache_budget_mib", "copy_threads",
                                                "cache_dir",    "keep_cache",       "samplers",
                                                "shard_samples"};

void warn_unknown(DlioWorkload& w, const Section& s, const std::vector<std::string_view>& known) {
  for (const std::string& key : s.unknown_keys(known)) {
    w.warnings.push_back(
        fmt::format("{}: unknown key {}.{} (DLIO does not read it; ignored)", w.file, s.name(), key));
  }
}

// A time value and its optional `<key>_stdev` companion, as DLIO folds them into one mapping.
TimeDistribution read_time(const Section& s, const std::string& key) {
  if (!s.has(key) && !s.has(key + "_stdev")) return {};
  nlohmann::json v = s.has(key) ? s.json(key) : nlohmann::json(0);
  if (!v.is_object()) v = nlohmann::json{{"mean", v}};
  if (s.has(key + "_stdev")) {
    const double stdev = s.number(key + "_stdev", 0);
    if (stdev > 0) v["stdev"] = stdev;
  }
  try {
    return TimeDistribution::parse(v, s.where(key));
  } catch (const std::invalid_argument& e) {
    throw InputError(e.what());
  }
}

// reader.file_shuffle / sample_shuffle: off, seed or random (DLIO's Shuffle values).
bool read_shuffle(const Section& s, std::string_view key) {
  if (!s.has(key)) return false;
  const std::string v = s.text(key, "off, seed or random");
  if (v == "off" || v == "OFF" || yaml_boolean(v) == std::optional<bool>(false)) return false;
  if (v == "seed" || v == "random" || yaml_boolean(v) == std::optional<bool>(true)) return true;
  s.fail(key, "off, seed or random");
}

}  // namespace

std::string loader_name(Loader loader) {
  return loader == Loader::kPyTorch ? "pytorch" : "tensorflow";
}

DlioWorkload load_workload(const std::string& file, const std::vector<std::string>& overrides) {
  YAML::Node root = load_yaml_mapping(file);
  apply_overrides(root, overrides);
  return read_workload(file, root);
}

// `root` is const: looking a key up adds nothing to the document.
DlioWorkload read_workload(const std::string& file, const YAML::Node& root) {
  DlioWorkload w;
  w.file = file;
  w.name = std::filesystem::path(file).stem().string();
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    if (std::find(kSections.begin(), kSections.end(), key) == kSections.end()) {
      w.warnings.push_back(
          fmt::format("{}: unknown section `{}` (DLIO does not read it; ignored)", file, key));
    }
  }
  auto section = [&](const char* name) { return Section(file, name, root[name]); };

  // model: a mapping with a name (DLIO's newer files) or a name alone (older ones).
  const bool model_is_name = root["model"] && root["model"].IsScalar();
  if (model_is_name) {
    w.name = root["model"].Scalar();
  } else {
    const Section model = section("model");
    warn_unknown(w, model, kModelKeys);
    if (model.has("name")) w.name = model.text("name", "a model name");
  }

  // framework and workflow
  if (root["framework"]) {
    const YAML::Node f = root["framework"];
    if (!f.IsScalar() || (f.Scalar() != "pytorch" && f.Scalar() != "tensorflow")) {
      throw InputError(fmt::format("{}: framework: expected pytorch or tensorflow, got {}", file,
                                   f.IsScalar() ? fmt::format("\"{}\"", f.Scalar()) : "a mapping"));
    }
    w.framework = f.Scalar();
  }
  {
    const Section s = section("workflow");
    warn_unknown(w, s, kWorkflowKeys);
    if (s.has("generate_data")) w.generate_data = s.boolean("generate_data");
    if (s.has("train")) w.train = s.boolean("train");
    if (s.has("evaluation")) w.evaluation = s.boolean("evaluation");
    if (s.has("checkpoint")) w.checkpoint = s.boolean("checkpoint");
    if (s.has("profiling") && s.boolean("profiling")) {
      w.warnings.push_back(fmt::format(
          "{}: workflow.profiling: DLIO's profilers are not run (pipeprof traces with --trace)",
          file));
    }
  }

  // dataset
  if (root["dataset"]) {
    const Section s = section("dataset");
    warn_unknown(w, s, dlio_dataset_keys());
    const DlioDatasetSection d = read_dlio_dataset(s);
    w.dataset = d.dataset;
    if (s.has("compression")) {
      const std::string c = s.text("compression", "a compression name");
      if (c != "none" && c != "None" && c != "NONE") {
        w.warnings.push_back(fmt::format(
            "{}: dataset.compression: \"{}\" is not generated (files are written uncompressed); "
            "compressed files are read",
            file, c));
      }
    }
  }
  w.dataset_has_stdev = w.dataset.record_length_stdev > 0;

  // reader (or data_reader, DLIO's older name, which wins when both are present)
  {
    const Section s = root["data_reader"] ? section("data_reader") : section("reader");
    warn_unknown(w, s, kReaderKeys);
    std::string loader = w.framework;
    if (s.has("data_loader")) loader = s.text("data_loader", "pytorch or tensorflow");
    if (loader == "pytorch") {
      w.loader = Loader::kPyTorch;
    } else if (loader == "tensorflow") {
      w.loader = Loader::kTensorFlow;
    } else {
      s.fail("data_loader",
             "pytorch or tensorflow (the loaders pipeprof emulates; DALI's are not)");
    }
    if (s.has("batch_size")) w.batch_size = s.whole("batch_size", 1);
    if (s.has("batch_size_eval")) w.batch_size_eval = s.whole("batch_size_eval", 1);
    if (s.has("read_threads")) {
      if (s.get("read_threads").IsScalar() && s.get("read_threads").Scalar() == "autotune") {
        w.read_threads_autotune = true;
      } else {
        w.read_threads = s.whole("read_threads", 0);
      }
    }
    if (s.has("computation_threads")) w.computation_threads = s.whole("computation_threads", 1);
    if (s.has("prefetch_size")) w.prefetch_size = s.whole("prefetch_size", 0);
    w.file_shuffle = read_shuffle(s, "file_shuffle");
    w.sample_shuffle = read_shuffle(s, "sample_shuffle");
    if (s.has("shuffle_size")) w.shuffle_size = s.whole("shuffle_size", 1);
    if (s.has("transfer_size")) w.transfer_size = s.whole("transfer_size", 1);
    if (s.has("dont_use_mmap")) w.dont_use_mmap = s.boolean("dont_use_mmap");
    if (s.has("odirect")) w.odirect = s.boolean("odirect");
    w.preprocess_time = read_time(s, "preprocess_time");
    if (s.has("read_type")) {
      const std::string t = s.text("read_type", "on_demand or memory");
      if (t != "on_demand" && t != "memory") s.fail("read_type", "on_demand or memory");
    }
  }

  // train
  {
    const Section s = section("train");
    warn_unknown(w, s, kTrainKeys);
    if (s.has("epochs")) w.epochs = s.whole("epochs", 1);
    w.computation_time = read_time(s, "computation_time");
    if (s.has("total_training_steps")) w.total_training_steps = s.whole("total_training_steps", -1);
    if (s.has("seed")) w.seed = s.whole("seed", 0);
    if (s.has("seed_change_epoch")) w.seed_change_epoch = s.boolean("seed_change_epoch");
  }
  {
    const Section s = section("evaluation");
    warn_unknown(w, s, kEvaluationKeys);
    w.eval_time = read_time(s, "eval_time");
    if (s.has("eval_after_epoch")) w.eval_after_epoch = s.whole("eval_after_epoch", 0);
    if (s.has("epochs_between_evals")) w.epochs_between_evals = s.whole("epochs_between_evals", 1);
  }
  {
    const Section checkpoint = section("checkpoint");
    warn_unknown(w, checkpoint, kCheckpointKeys);
    read_checkpoint_sections(w, model_is_name ? Section(file, "model", YAML::Node()) : section("model"),
                             checkpoint);
  }
  warn_unknown(w, section("profiling"), kProfilingKeys);
  {
    // storage.storage_type (and the reader's older spelling): local and parallel file systems are
    // folders; s3 is object storage (storage_root the bucket, storage_options how to reach it).
    const Section storage = section("storage");
    warn_unknown(w, storage, kStorageKeys);
    const Section reader = root["data_reader"] ? section("data_reader") : section("reader");
    for (const Section* s : {&storage, &reader}) {
      if (!s->has("storage_type")) continue;
      const std::string t = s->text("storage_type", "local_fs, parallel_fs or s3");
      if (t == "s3" || t == "S3") {
        w.s3 = true;
      } else if (t != "local_fs" && t != "parallel_fs" && t != "LOCAL_FS" && t != "PARALLEL_FS") {
        throw InputError(fmt::format(
            "{}: expected local_fs, parallel_fs or s3, got \"{}\" (a dataset behind an HTTP object "
            "server: the pipeprof.remote section, docs/remote.md)",
            s->where("storage_type"), t));
      }
      if (s->has("storage_root")) {
        // A bucket's name ("s3://bucket" and slashes around it are taken as the bucket too).
        std::string bucket = s->text("storage_root", "a bucket name");
        if (bucket.starts_with("s3://")) bucket.erase(0, 5);
        while (bucket.ends_with('/')) bucket.pop_back();
        while (bucket.starts_with('/')) bucket.erase(0, 1);
        if (bucket.empty() || bucket.find('/') != std::string::npos || bucket.find("://") != std::string::npos)
          s->fail("storage_root", "a bucket name");
        w.storage_root = bucket;
      }
      if (s->has("storage_options")) {
        const YAML::Node node = s->get("storage_options");
        if (!node.IsMap()) s->fail("storage_options", "a mapping (endpoint_url, access_key_id, ...)");
        const Section o(file, std::string(s == &storage ? "storage" : "reader") + ".storage_options", node);
        warn_unknown(w, o, kStorageOptionKeys);
        pipelines::S3Options& so = w.s3_options;
        if (o.has("endpoint_url")) {
          std::stringstream list(o.text("endpoint_url", "a URL (or several, comma-separated)"));
          for (std::string e; std::getline(list, e, ',');) {
            while (!e.empty() && e.front() == ' ') e.erase(e.begin());
            while (!e.empty() && e.back() == ' ') e.pop_back();
            if (e.empty()) continue;
            if (!e.starts_with("http://") && !e.starts_with("https://"))
              o.fail("endpoint_url", "http:// or https:// URLs");
            if (std::find(w.s3_endpoints.begin(), w.s3_endpoints.end(), e) != w.s3_endpoints.end()) {
              w.warnings.push_back(fmt::format(
                  "{}: {} is listed more than once (rank r uses endpoint r % N of the list, so the "
                  "ranks given each of its places share one endpoint)",
                  o.where("endpoint_url"), e));
            }
            w.s3_endpoints.push_back(e);
          }
          if (!w.s3_endpoints.empty()) so.endpoint_url = w.s3_endpoints.front();
        }
        if (o.has("access_key_id")) so.access_key_id = o.text("access_key_id");
        if (o.has("secret_access_key")) so.secret_access_key = o.text("secret_access_key");
        // Half a key pair would be completed from the AWS environment, signing with another
        // account's secret: refused, naming the half that is missing.
        if (o.has("access_key_id") != o.has("secret_access_key")) {
          const char* missing = o.has("access_key_id") ? "secret_access_key" : "access_key_id";
          throw InputError(fmt::format("{}: missing: {} is given without it (a key pair goes together)",
                                       o.where(missing),
                                       o.has("access_key_id") ? "access_key_id" : "secret_access_key"));
        }
        if (o.has("session_token")) so.session_token = o.text("session_token");
        if (o.has("region")) so.region = o.text("region");
        if (o.has("s3_force_path_style")) so.force_path_style = o.boolean("s3_force_path_style");
        if (o.has("s3_max_attempts")) w.s3_max_attempts = static_cast<int>(o.whole("s3_max_attempts", 1));
      }
    }
    // An s3:// folder is S3's whatever storage_type says (with the AWS environment's settings
    // where storage_options give none); other folders are prefixes in the bucket only when
    // storage_type says s3.
    const bool declared_s3 = w.s3;
    if (w.dataset.data_folder.starts_with("s3://") || w.checkpoint_settings.folder.starts_with("s3://"))
      w.s3 = true;
    if (declared_s3) {
      // Folders without a scheme are prefixes in the bucket.
      auto in_bucket = [&](std::string& folder, const std::string& key) {
        if (folder.starts_with("s3://")) return;
        if (folder.find("://") != std::string::npos) {
          throw InputError(fmt::format("{}: {}: \"{}\" is not an s3:// name (storage.storage_type is s3)",
                                       file, key, folder));
        }
        if (w.storage_root.empty()) {
          throw InputError(fmt::format("{}: storage.storage_root: the bucket is needed for {} \"{}\" "
                                       "(storage.storage_type is s3)",
                                       file, key, folder));
        }
        while (folder.starts_with("./")) folder.erase(0, 2);
        while (folder.starts_with('/')) folder.erase(0, 1);
        folder = "s3://" + w.storage_root + (folder.empty() ? "" : "/" + folder);
      };
      if (w.train || w.evaluation || w.generate_data || w.dataset.data_folder.starts_with("s3://"))
        in_bucket(w.dataset.data_folder, "dataset.data_folder");
      if (w.checkpoint || w.checkpoint_settings.folder.starts_with("s3://"))
        in_bucket(w.checkpoint_settings.folder, "checkpoint.checkpoint_folder");
      while (w.dataset.data_folder.ends_with('/')) w.dataset.data_folder.pop_back();
      while (w.checkpoint_settings.folder.ends_with('/')) w.checkpoint_settings.folder.pop_back();
    }
  }
  if (const std::string& f = w.checkpoint_settings.folder;
      !w.s3 && f.find("://") != std::string::npos && !f.starts_with("file://")) {
    throw InputError(fmt::format(
        "{}: checkpoint.checkpoint_folder: \"{}\" is a URL; checkpoints are written to local "
        "folders (or to S3 with storage.storage_type: s3)",
        file, f));
  }
  {
    const Section s = section("output");
    warn_unknown(w, s, kOutputKeys);
    if (s.has("folder")) w.output_folder = s.text("folder", "a folder");
    if (s.has("log_file")) w.log_file = s.text("log_file", "a file name");
    if (s.has("metric")) {
      const Section m(file, "output.metric", s.get("metric"));
      warn_unknown(w, m, kOutputMetricKeys);
      if (m.has("exclude_start_steps")) w.exclude_start_steps = m.whole("exclude_start_steps", 0);
      if (m.has("exclude_end_steps")) w.exclude_end_steps = m.whole("exclude_end_steps", 0);
    }
  }
  {
    const Section s = section("metric");
    warn_unknown(w, s, kMetricKeys);
    if (s.has("au")) {
      w.au = s.number("au", 0);
      if (w.au > 1) s.fail("au", "a fraction between 0 and 1 (0.90 for 90%)");
    }
  }
  std::set<std::string, std::less<>> remote_keys_given;  // pipeprof.remote's, of those S3 refuses
  {
    const Section s = section("pipeprof");
    warn_unknown(w, s, kPipeprofKeys);
    if (s.has("scale")) {
      w.scale = s.number("scale", 0);
      if (w.scale <= 0 || w.scale > 1) s.fail("scale", "a fraction in (0, 1]");
    }
    if (s.has("remote")) {
      const YAML::Node node = s.get("remote");
      if (!node.IsMap()) s.fail("remote", "a mapping (mode, latency_ms, rate_mib_s, ...)");
      const Section r(file, "pipeprof.remote", node);
      warn_unknown(w, r, kRemoteKeys);
      RemoteSettings& rs = w.remote;
      const std::string mode = r.has("mode") ? r.text("mode") : "direct";
      if (mode == "direct") {
        rs.mode = RemoteMode::kDirect;
      } else if (mode == "cached") {
        rs.mode = RemoteMode::kCached;
      } else if (mode == "copy_first") {
        rs.mode = RemoteMode::kCopyFirst;
      } else if (mode == "growing_cache") {
        rs.mode = RemoteMode::kGrowingCache;
      } else if (mode == "none" || mode == "local") {
        rs.mode = RemoteMode::kNone;
      } else {
        r.fail("mode", "direct, cached, copy_first, growing_cache or none");
      }
      if (r.has("latency_ms")) rs.latency_ms = r.number("latency_ms", 0);
      if (r.has("rate_mib_s")) rs.rate_mib_s = r.number("rate_mib_s", 0);
      for (const char* key : {"latency_ms", "rate_mib_s"})
        if (r.has(key)) remote_keys_given.insert(key);
      if (r.has("preload")) rs.preload = r.boolean("preload");
      if (r.has("cache_budget_mib")) rs.cache_budget_mib = r.number("cache_budget_mib", 0);
      if (r.has("copy_threads")) rs.copy_threads = r.whole("copy_threads", 1);
      if (r.has("cache_dir")) rs.cache_dir = r.text("cache_dir", "a folder");
      if (r.has("keep_cache")) rs.keep_cache = r.boolean("keep_cache");
      if (r.has("samplers")) rs.samplers = r.whole("samplers", 1);
      if (r.has("shard_samples")) rs.shard_samples = r.whole("shard_samples", 1);
      if (rs.mode != RemoteMode::kNone && w.odirect) {
        r.fail("mode", "local files with reader.odirect (O_DIRECT does not apply to HTTP)");
      }
    }
  }

  // A dataset in S3 is read from its own server: direct (with the remote figures), through the
  // disk cache or copied first. The latency and rate shape the run's own object server, which an
  // S3 dataset does not use.
  if (w.s3 && w.remote.mode != RemoteMode::kNone) {
    if (w.remote.mode == RemoteMode::kGrowingCache) {
      throw InputError(fmt::format(
          "{}: pipeprof.remote.mode: growing_cache samples a local folder served over HTTP; a "
          "dataset in S3 (storage.storage_type: s3) is read direct, cached or copy_first",
          file));
    }
    for (const char* key : {"latency_ms", "rate_mib_s"}) {
      if (remote_keys_given.contains(key)) {
        throw InputError(fmt::format(
            "{}: pipeprof.remote.{}: shapes the replies of the run's own object server, which a "
            "dataset in S3 (storage.storage_type: s3) does not use: it is read from its bucket",
            file, key));
      }
    }
    w.remote.latency_ms = 0;  // not known: the store's own
    w.remote.rate_mib_s = 0;
  }
  if (w.s3 && w.odirect) {
    throw InputError(fmt::format("{}: reader.odirect: O_DIRECT applies to local files, not to S3 "
                                 "(storage.storage_type: s3)", file));
  }
  // What DLIO's own validation refuses (of a workload that reads or writes a dataset: a
  // checkpoint-only file has no dataset section).
  const bool uses_data = w.train || w.evaluation || w.generate_data;
  if (uses_data && w.loader == Loader::kPyTorch && w.dataset.format == DataFormat::kTFRecord) {
    throw InputError(fmt::format(
        "{}: reader.data_loader: the pytorch loader does not read tfrecord files (DLIO refuses "
        "this too); use the tensorflow loader",
        file));
  }
  if (w.train && w.dataset.num_files_train == 0) {
    throw InputError(fmt::format("{}: dataset.num_files_train: a training run needs files", file));
  }
  try {
    pipelines::formats::validate(w.dataset);
  } catch (const pipelines::formats::DatasetConfigError& e) {
    throw InputError(fmt::format("{}: dataset.{}: {}", file, e.key(), e.detail()));
  }
  return w;
}

std::string_view remote_mode_name(RemoteMode mode) {
  switch (mode) {
    case RemoteMode::kNone: return "none";
    case RemoteMode::kCopyFirst: return "copy_first";
    case RemoteMode::kDirect: return "direct";
    case RemoteMode::kCached: return "cached";
    case RemoteMode::kGrowingCache: return "growing_cache";
  }
  return "none";
}

void apply_scale(DlioWorkload& w, double scale) {
  if (!(scale > 0) || scale > 1) {
    throw InputError(fmt::format("--scale: expected a fraction in (0, 1], got {}", scale));
  }
  auto scaled = [&](int64_t n) {
    if (n == 0) return n;
    return std::max<int64_t>(1, static_cast<int64_t>(std::llround(static_cast<double>(n) * scale)));
  };
  w.dataset.num_files_train = scaled(w.dataset.num_files_train);
  w.dataset.num_files_eval = scaled(w.dataset.num_files_eval);
  w.scale = scale;
}

int64_t steps_per_epoch(const DlioWorkload& w, int64_t ranks) {
  const auto samples = static_cast<double>(w.dataset.num_samples_per_file) *
                       static_cast<double>(w.dataset.num_files_train);
  auto steps = static_cast<int64_t>(std::floor(samples / static_cast<double>(w.batch_size) /
                                               static_cast<double>(std::max<int64_t>(1, ranks))));
  if (w.total_training_steps > 0) steps = std::min(steps, w.total_training_steps);
  return steps;
}

double record_bytes(const DlioWorkload& w) {
  return w.dataset.record_length;
}

}  // namespace pipeprof::harness::workload
