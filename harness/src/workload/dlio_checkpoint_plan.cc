// DLIO's checkpoints, planned (dlio_checkpoint.h): the model and checkpoint sections read, each
// rank's share sized and named, the room checked, the schedule during training, and --dry-run's
// account. The writes, reads and figures are in dlio_checkpoint.cc.
#include <fmt/format.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>
#include <string_view>
#include <vector>

#include "pipeprof/harness/errors.h"
#include "workload/dlio_checkpoint.h"
#include "workload/dlio_workload.h"
#include "workload/dlio_yaml.h"

namespace pipeprof::harness::workload {
namespace {

const std::vector<std::string_view> kParallelismKeys{"tensor", "pipeline", "data", "zero_stage"};
const std::vector<std::string_view> kTransformerKeys{
    "vocab_size", "hidden_size", "ffn_hidden_size", "num_attention_heads", "num_kv_heads"};

int64_t datatype_bytes(const Section& s, std::string_view key, const std::string& name) {
  if (name == "int8" || name == "uint8") return 1;
  if (name == "fp16" || name == "bf16") return 2;
  if (name == "fp32") return 4;
  if (name == "fp64") return 8;
  s.fail(key, "one of fp16, bf16, fp32, fp64, int8, uint8");
}

int64_t datatype_bytes(const std::string& name) {
  if (name == "int8" || name == "uint8") return 1;
  if (name == "fp16" || name == "bf16") return 2;
  if (name == "fp64") return 8;
  return 4;
}

std::vector<int64_t> whole_list(const Section& s, std::string_view key) {
  const YAML::Node v = s.get(key);
  if (!v.IsSequence()) s.fail(key, "a list of whole numbers");
  std::vector<int64_t> out;
  for (const YAML::Node& item : v) {
    if (!item.IsScalar()) s.fail(key, "a list of whole numbers");
    try {
      const double d = std::stod(item.Scalar());
      if (d < 0 || d != std::floor(d) || d > 1e12) {
        s.fail(key, "a list of whole numbers from 0 to 1e12");
      }
      if (v.size() > 100'000) s.fail(key, "at most 100000 numbers");
      out.push_back(static_cast<int64_t>(d));
    } catch (const std::logic_error&) {
      s.fail(key, "a list of whole numbers");
    }
  }
  return out;
}

// Which file of its share a tensor of the model goes to, per DLIO's layout.
struct Layers {
  int64_t start = 0, end = -1;  // inclusive
};

Layers layer_range(const ModelSettings& m, int64_t pp_rank, bool predefined) {
  const int64_t L = m.num_layers, pp = m.pipeline;
  const int64_t n = L / pp, r = L % pp;
  Layers out;
  if (pp_rank < r) {
    out.start = pp_rank * (n + 1) + 1;
    out.end = out.start + n;
  } else {
    out.start = r * (n + 1) + (pp_rank - r) * n + 1;
    out.end = out.start + n - 1;
  }
  if (!predefined) {
    if (pp_rank == pp - 1) out.end = L + 2;
    if (pp_rank == 0) out.start = 0;
  }
  return out;
}

// The elements of layer i's tensors held by one rank (DLIO's get_layer_parameters).
std::vector<int64_t> layer_elements(const ModelSettings& m, int64_t i, int64_t dp) {
  const int64_t h = m.hidden_size, tp = m.tensor, L = m.num_layers;
  const int64_t sf = m.zero_stage < 3 ? 1 : dp;
  const int64_t dim_kv = h / m.num_attention_heads * m.num_kv_heads;
  if (i == 0 || i == L + 1) return {h * m.vocab_size / tp / sf};
  if (i == L + 2) return {h / sf};
  return {h / sf,
          h * (h + 2 * dim_kv) / tp / sf,
          h * h / tp / sf,
          h / sf,
          h * 2 * m.ffn_hidden_size / tp / sf,
          h * m.ffn_hidden_size / tp / sf};
}

int64_t parameters(const ModelSettings& m) {
  if (m.num_layers <= 0) return 0;
  const int64_t h = m.hidden_size, L = m.num_layers;
  const int64_t dim_kv = h / m.num_attention_heads * m.num_kv_heads;
  const int64_t embedding = m.vocab_size * h;
  const int64_t layer = h + h * (h + 2 * dim_kv) + h * h + h + m.ffn_hidden_size * 2 * h +
                        m.ffn_hidden_size * h;
  return embedding + layer * L + h + embedding;
}

}  // namespace

void read_checkpoint_sections(DlioWorkload& w, const Section& model, const Section& checkpoint) {
  ModelSettings& m = w.model;
  CheckpointSettings& c = w.checkpoint_settings;
  // The checkpoint section's older spellings of the model's keys (DLIO's earlier files).
  if (checkpoint.has("model_size")) m.model_size_bytes = checkpoint.whole("model_size", 0);
  if (m.num_layers > 1'000'000 || (checkpoint.has("num_layers") && checkpoint.whole("num_layers", -1) > 1'000'000)) {
    checkpoint.fail("num_layers", "at most 1000000");
  }
  if (checkpoint.has("num_layers")) m.num_layers = checkpoint.whole("num_layers", -1);
  if (checkpoint.has("tensor_parallelism")) m.tensor = checkpoint.whole("tensor_parallelism", 1);
  if (checkpoint.has("pipeline_parallelism"))
    m.pipeline = checkpoint.whole("pipeline_parallelism", 1);
  if (checkpoint.has("layer_parameters"))
    m.layer_parameters = whole_list(checkpoint, "layer_parameters");
  if (checkpoint.has("optimization_groups"))
    m.optimization_groups = whole_list(checkpoint, "optimization_groups");

  if (model.has("type")) m.type = model.text("type", "a model type");
  if (model.has("num_layers")) m.num_layers = model.whole("num_layers", -1);
  if (m.num_layers > 1'000'000) model.fail("num_layers", "at most 1000000");
  if (model.has("model_size_bytes")) m.model_size_bytes = model.whole("model_size_bytes", 0);
  if (model.has("model_size")) m.model_size_bytes = model.whole("model_size", 0);
  if (m.model_size_bytes > int64_t{1} << 50) {
    throw InputError(fmt::format("{}: model.model_size_bytes: at most 2^50 bytes (1 PiB)", w.file));
  }
  if (model.has("model_datatype")) {
    m.model_datatype = model.text("model_datatype");
    (void)datatype_bytes(model, "model_datatype", m.model_datatype);
  }
  if (model.has("optimizer_datatype")) {
    m.optimizer_datatype = model.text("optimizer_datatype");
    (void)datatype_bytes(model, "optimizer_datatype", m.optimizer_datatype);
  }
  if (model.has("layer_parameters")) m.layer_parameters = whole_list(model, "layer_parameters");
  if (model.has("optimization_groups"))
    m.optimization_groups = whole_list(model, "optimization_groups");
  if (model.has("parallelism")) {
    const YAML::Node node = model.get("parallelism");
    if (!node.IsMap()) model.fail("parallelism", "a mapping (tensor, pipeline, data, zero_stage)");
    const Section p(w.file, "model.parallelism", node);
    for (const std::string& key : p.unknown_keys(kParallelismKeys)) {
      w.warnings.push_back(fmt::format(
          "{}: unknown key model.parallelism.{} (DLIO does not read it; ignored)", w.file, key));
    }
    if (p.has("tensor")) m.tensor = p.whole("tensor", 1);
    if (p.has("pipeline")) m.pipeline = p.whole("pipeline", 1);
    if (p.has("data")) m.data = p.whole("data", -1);
    // Bounds that keep every product of them in 64 bits (a million ranks and more).
    if (m.tensor > 65536) p.fail("tensor", "at most 65536");
    if (m.pipeline > 65536) p.fail("pipeline", "at most 65536");
    if (m.data > 1'000'000) p.fail("data", "at most 1000000");
    if (p.has("zero_stage")) {
      m.zero_stage = p.whole("zero_stage", 0);
      if (m.zero_stage > 3) p.fail("zero_stage", "0, 1, 2 or 3");
    }
  }
  if (model.has("transformer")) {
    const YAML::Node node = model.get("transformer");
    if (!node.IsMap()) model.fail("transformer", "a mapping (vocab_size, hidden_size, ...)");
    const Section t(w.file, "model.transformer", node);
    for (const std::string& key : t.unknown_keys(kTransformerKeys)) {
      w.warnings.push_back(fmt::format(
          "{}: unknown key model.transformer.{} (DLIO does not read it; ignored)", w.file, key));
    }
    if (t.has("vocab_size")) m.vocab_size = t.whole("vocab_size", 1);
    if (t.has("hidden_size")) m.hidden_size = t.whole("hidden_size", 1);
    if (t.has("ffn_hidden_size")) m.ffn_hidden_size = t.whole("ffn_hidden_size", 1);
    if (t.has("num_attention_heads")) m.num_attention_heads = t.whole("num_attention_heads", 1);
    if (t.has("num_kv_heads")) m.num_kv_heads = t.whole("num_kv_heads", 1);
    if (m.hidden_size > 10'000'000) t.fail("hidden_size", "at most 10000000");
    if (m.vocab_size > 1'000'000'000) t.fail("vocab_size", "at most 1000000000");
    if (m.ffn_hidden_size > 100'000'000) t.fail("ffn_hidden_size", "at most 100000000");
    if (m.num_attention_heads > m.hidden_size) {
      t.fail("num_attention_heads", fmt::format("at most hidden_size ({})", m.hidden_size));
    }
    if (m.num_kv_heads > m.num_attention_heads) {
      t.fail("num_kv_heads", fmt::format("at most num_attention_heads ({})", m.num_attention_heads));
    }
  }
  // Sizes that would overflow 64 bits: refused here rather than wrapped.
  const double h = static_cast<double>(m.hidden_size);
  const double estimate =
      (2 * h * static_cast<double>(m.vocab_size) +
       static_cast<double>(std::max<int64_t>(m.num_layers, 0)) * (4 * h * h + 3 * h * static_cast<double>(m.ffn_hidden_size))) * 8;
  if (estimate > 1e18) {
    throw InputError(fmt::format("{}: model: a model of {:.3g} parameters is beyond what pipeprof sizes",
                                 w.file, estimate / 8));
  }

  if (checkpoint.has("checkpoint_folder")) {
    c.folder = checkpoint.text("checkpoint_folder", "a folder or URL");
    if (c.folder.starts_with("file://")) c.folder = c.folder.substr(7);
    while (c.folder.size() > 1 && c.folder.back() == '/')
      c.folder.pop_back();
    if (c.folder.empty()) checkpoint.fail("checkpoint_folder", "a folder or URL");
  }
  if (checkpoint.has("checkpoint_after_epoch"))
    c.after_epoch = checkpoint.whole("checkpoint_after_epoch", 0);
  if (checkpoint.has("epochs_between_checkpoints"))
    c.epochs_between = checkpoint.whole("epochs_between_checkpoints", -1);
  if (checkpoint.has("steps_between_checkpoints"))
    c.steps_between = checkpoint.whole("steps_between_checkpoints", -1);
  if (checkpoint.has("time_between_checkpoints")) {
    c.time_between_s = checkpoint.number("time_between_checkpoints");
    if (c.time_between_s > 86400) checkpoint.fail("time_between_checkpoints", "seconds, at most a day");
  }
  if (checkpoint.has("num_checkpoints_write"))
    c.num_write = checkpoint.whole("num_checkpoints_write", -1);
  if (checkpoint.has("num_checkpoints_read"))
    c.num_read = checkpoint.whole("num_checkpoints_read", -1);
  if (c.num_write > 10000) checkpoint.fail("num_checkpoints_write", "at most 10000");
  if (checkpoint.has("fsync")) c.fsync = checkpoint.boolean("fsync");
  if (checkpoint.has("type")) {
    const std::string t = checkpoint.text("type", "rank_zero or all_ranks");
    if (t != "rank_zero" && t != "all_ranks") checkpoint.fail("type", "rank_zero or all_ranks");
    c.all_ranks = t == "all_ranks";
  }
  if (checkpoint.has("mode")) {
    const std::string t = checkpoint.text("mode", "default or subset");
    if (t != "default" && t != "subset") checkpoint.fail("mode", "default or subset");
    c.subset = t == "subset";
  }
  if (checkpoint.has("recovery_rank_shift"))
    c.recovery_rank_shift = checkpoint.boolean("recovery_rank_shift");
  if (checkpoint.has("rank_sync")) c.rank_sync = checkpoint.boolean("rank_sync");
  if (checkpoint.has("checkpoint_rank_sync"))
    c.rank_sync = checkpoint.boolean("checkpoint_rank_sync");
  if (checkpoint.has("randomize_tensor")) c.randomize_tensor = checkpoint.boolean("randomize_tensor");
  if (checkpoint.has("checkpoint_mechanism_classname")) {
    w.warnings.push_back(fmt::format(
        "{}: checkpoint.checkpoint_mechanism_classname: pipeprof writes DLIO's PyTorch layout "
        "(custom classes are not loaded)",
        w.file));
  }
  if (checkpoint.has("ksm")) {
    w.warnings.push_back(fmt::format(
        "{}: checkpoint.ksm: memory merging of the tensors is not emulated (it changes no I/O)",
        w.file));
  }
  if (c.steps_between == 0 && w.checkpoint) {
    w.warnings.push_back(fmt::format(
        "{}: checkpoint.steps_between_checkpoints: 0 writes no checkpoint during training (as in "
        "DLIO); -1 checkpoints after epochs",
        w.file));
  }
  // DLIO's own refusals that need no rank count (of a workload that checkpoints).
  if (!w.checkpoint) return;
  if (m.num_layers > 0 && m.num_layers < m.pipeline) {
    throw InputError(fmt::format(
        "{}: model.num_layers: {} layers cannot be split over {} pipeline stages "
        "(model.parallelism.pipeline)",
        w.file, m.num_layers, m.pipeline));
  }
  if (m.pipeline > 1 && m.zero_stage == 3) {
    throw InputError(fmt::format(
        "{}: model.parallelism.zero_stage: ZeRO stage 3 is not compatible with pipeline "
        "parallelism ({} stages)",
        w.file, m.pipeline));
  }
  if (m.data > 0 && !c.subset) {
    throw InputError(fmt::format(
        "{}: model.parallelism.data: set only with checkpoint.mode: subset (in default mode the "
        "data parallelism is the ranks / (tensor x pipeline))",
        w.file));
  }
  if (c.subset && m.data <= 0) {
    throw InputError(fmt::format(
        "{}: model.parallelism.data: subset checkpointing needs the job's data parallelism "
        "(the replicas of the full job)",
        w.file));
  }
  if (c.num_write > 0 && c.num_read > c.num_write) {
    throw InputError(fmt::format(
        "{}: checkpoint.num_checkpoints_read: {} checkpoints cannot be read when {} are written",
        w.file, c.num_read, c.num_write));
  }
}

int64_t RankShare::bytes() const {
  int64_t b = 0;
  for (const CheckpointFile& f : files)
    b += f.bytes;
  return b;
}

int64_t CheckpointPlan::file_bytes() const {
  int64_t b = 0;
  for (const RankShare& r : per_rank)
    b += r.bytes();
  return b;
}

int64_t CheckpointPlan::files() const {
  int64_t n = 0;
  for (const RankShare& r : per_rank)
    n += static_cast<int64_t>(r.files.size());
  return n;
}

double CheckpointPlan::size_gib() const {
  return (static_cast<double>(model_bytes) + static_cast<double>(optimizer_bytes)) / kGiB;
}

CheckpointPlan plan_checkpoint(const DlioWorkload& w, int64_t ranks) {
  const ModelSettings& m = w.model;
  const CheckpointSettings& c = w.checkpoint_settings;
  const int64_t mp = m.tensor * m.pipeline;
  if (ranks < 1) throw InputError("--accelerators: a checkpoint needs at least one rank");
  if (!c.subset && ranks % mp != 0) {
    throw InputError(fmt::format(
        "{}: model.parallelism: {} ranks (--accelerators x mpirun's processes) are not a multiple "
        "of tensor x pipeline = {}",
        w.file, ranks, mp));
  }
  const int64_t dp = m.data < 0 ? ranks / mp : m.data;
  if (c.subset && dp * mp < ranks) {
    throw InputError(fmt::format(
        "{}: model.parallelism.data: {} ranks are more than the job's {} (data x tensor x "
        "pipeline) in subset mode",
        w.file, ranks, dp * mp));
  }
  if (ranks > 1'000'000) throw InputError("--accelerators: at most 1000000 checkpoint ranks");
  CheckpointPlan plan;
  plan.ranks = ranks;
  plan.tensor = m.tensor;
  plan.pipeline = m.pipeline;
  plan.data = dp;
  plan.zero_stage = m.zero_stage;
  plan.subset = c.subset;
  plan.parameters = parameters(m);
  plan.folder = c.folder;
  const bool transformer = m.type == "transformer";
  const bool legacy_layers = !m.layer_parameters.empty();
  const int64_t mdt = datatype_bytes(m.model_datatype);
  const int64_t odt = datatype_bytes(m.optimizer_datatype);
  const int64_t h = m.hidden_size;
  if (!transformer && m.model_size_bytes > 0) plan.model_bytes = m.model_size_bytes;

  plan.per_rank.reserve(static_cast<size_t>(ranks));
  long double total = 0;  // every rank's bytes, counted as they are added: no sum may wrap
  for (int64_t rank = 0; rank < ranks; ++rank) {
    RankShare r;
    r.rank = rank;
    r.pp_rank = (rank / m.tensor) % m.pipeline;
    r.tp_rank = rank % m.tensor;
    r.dp_rank = rank / mp;
    const int64_t mp_rank = rank % mp;
    const bool writes = m.zero_stage != 0 || rank < mp;
    if (!writes) {
      plan.per_rank.push_back(std::move(r));
      continue;
    }
    if (!transformer && m.model_size_bytes > 0) {
      r.files.push_back({fmt::format("model_states-{}.pt", rank), m.model_size_bytes});
    }
    if (m.num_layers > 0 || legacy_layers) {
      const Layers layers = layer_range(m, r.pp_rank, legacy_layers);
      const bool allocated = !(m.zero_stage == 1 && r.dp_rank != 0);
      std::vector<int64_t> layer_bytes;
      for (int64_t i = layers.start; i <= layers.end; ++i) {
        int64_t b = 0;
        if (legacy_layers) {
          for (int64_t p : m.layer_parameters)
            b += p / m.tensor;  // int8 tensors
        } else {
          for (int64_t e : layer_elements(m, i, dp))
            if (e > 0) b += e * mdt;
        }
        layer_bytes.push_back(b);
      }
      int64_t all = 0;
      for (int64_t b : layer_bytes)
        all += b;
      if (allocated && !legacy_layers) r.model_bytes = all;
      if (m.zero_stage > 0 && m.zero_stage < 3) {
        if (r.dp_rank == 0 && allocated) {
          if (m.pipeline > 1) {
            for (int64_t i = layers.start; i <= layers.end; ++i) {
              r.files.push_back({fmt::format("layer_{}-model_{}_model_states.pt", i, mp_rank),
                                 layer_bytes[static_cast<size_t>(i - layers.start)]});
            }
          } else {
            r.files.push_back({fmt::format("model_{}_model_states.pt", mp_rank), all});
          }
        }
      } else {
        r.files.push_back(
            {fmt::format("zero_pp_rank_{}_mp_rank_{}_model_states.pt", r.dp_rank, mp_rank), all});
      }
    }
    int64_t optimizer = 0;
    if (!m.optimization_groups.empty()) {
      for (int64_t s : m.optimization_groups)
        if (s > 0) optimizer += 3 * s;  // two int8 tensors of s and their combined copy
    } else if (plan.parameters > 0) {
      const int64_t n = m.zero_stage > 0 ? plan.parameters / (dp * mp) : plan.parameters / mp;
      if (n > 0) {
        optimizer = (3 * n + 15 * h) * odt;
        r.optimizer_bytes = optimizer;
      }
    }
    if (optimizer > 0) {
      r.files.push_back(
          {fmt::format("zero_pp_rank_{}_mp_rank_{}_optim_states.pt", r.dp_rank, mp_rank), optimizer});
    }
    plan.model_bytes += r.model_bytes;
    plan.optimizer_bytes += r.optimizer_bytes;
    total += static_cast<long double>(r.bytes()) + static_cast<long double>(r.model_bytes) +
             static_cast<long double>(r.optimizer_bytes);
    if (total > static_cast<long double>(int64_t{1} << 62)) {
      throw InputError(fmt::format(
          "{}: model: a checkpoint of {} ranks of this model is beyond what pipeprof sizes (2^62 "
          "bytes)",
          w.file, ranks));
    }
    plan.per_rank.push_back(std::move(r));
  }
  if (plan.file_bytes() == 0) {
    throw InputError(fmt::format(
        "{}: model: the checkpoint holds nothing (a transformer needs model.num_layers; another "
        "model model.model_size_bytes)",
        w.file));
  }
  return plan;
}

void check_room(const CheckpointPlan& plan, int64_t count, int64_t first_rank,
                int64_t local_ranks) {
  if (plan.folder.find("://") != std::string::npos || count <= 0) return;
  double needed = 0;
  for (int64_t r = first_rank; r < first_rank + local_ranks && r < plan.ranks; ++r)
    needed += static_cast<double>(plan.per_rank[static_cast<size_t>(r)].bytes());
  needed *= static_cast<double>(count);
  std::filesystem::path at = std::filesystem::absolute(plan.folder);
  std::error_code ec;
  while (!std::filesystem::exists(at, ec) && at.has_parent_path() && at != at.parent_path())
    at = at.parent_path();
  struct statvfs fs {};
  if (::statvfs(at.c_str(), &fs) != 0) return;
  const double free = static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize);
  if (needed > free) {
    throw InputError(fmt::format(
        "checkpoint.checkpoint_folder: {} checkpoint(s) of {:.2f} GiB need {:.2f} GiB, the file "
        "system of {} has {:.2f} GiB free (--dry-run shows the sizes; a smaller model, fewer "
        "checkpoints or another folder: ++workload.checkpoint.checkpoint_folder=...)",
        count, needed / static_cast<double>(count) / kGiB, needed / kGiB, at.string(), free / kGiB));
  }
}

std::string checkpoint_id(int64_t epoch, int64_t step) {
  return fmt::format("global_epoch{}_step{}", epoch, step);
}

std::string checkpoint_path(const CheckpointPlan& plan, int64_t epoch, int64_t step) {
  return fmt::format("{}/{}", plan.folder, checkpoint_id(epoch, step));
}

bool checkpoint_after_step(const DlioWorkload& w, int64_t step) {
  const int64_t every = w.checkpoint_settings.steps_between;
  return w.checkpoint && every > 0 && step % every == 0;
}

bool checkpoint_after_epoch(const DlioWorkload& w, int64_t epoch) {
  const CheckpointSettings& c = w.checkpoint_settings;
  if (!w.checkpoint || c.steps_between >= 0 || epoch < c.after_epoch) return false;
  if (c.epochs_between <= 0) return epoch == c.after_epoch;
  return (epoch - c.after_epoch) % c.epochs_between == 0;
}

// ---- --dry-run --------------------------------------------------------------------------------

std::string describe_plan(const DlioWorkload& w, const CheckpointPlan& plan) {
  std::ostringstream out;
  auto gib = [](double bytes) { return bytes / kGiB; };
  const ModelSettings& m = w.model;
  if (plan.parameters > 0) {
    out << fmt::format(
        "model: {} layers, hidden {}, ffn {}, {} heads ({} kv), vocab {}: {:.3f} B parameters "
        "({} model, {} optimizer state)\n",
        m.num_layers, m.hidden_size, m.ffn_hidden_size, m.num_attention_heads, m.num_kv_heads,
        m.vocab_size, static_cast<double>(plan.parameters) / 1e9, m.model_datatype,
        m.optimizer_datatype);
  } else {
    out << fmt::format("model: {} bytes of model state (model.model_size_bytes)\n",
                       m.model_size_bytes);
  }
  out << fmt::format(
      "parallelism: {} ranks = tensor {} x pipeline {} x data {}{}, ZeRO stage {}\n", plan.ranks,
      plan.tensor, plan.pipeline, plan.data,
      plan.subset ? fmt::format(" (subset: {} of the job's {} ranks)", plan.ranks,
                                plan.tensor * plan.pipeline * plan.data)
                  : "",
      plan.zero_stage);
  out << fmt::format(
      "checkpoint: {:.2f} GiB ({:.2f} GiB model + {:.2f} GiB optimizer state; DLIO's "
      "checkpoint_size_GB), {} files, {:.2f} GiB written\n",
      plan.size_gib(), gib(static_cast<double>(plan.model_bytes)),
      gib(static_cast<double>(plan.optimizer_bytes)), plan.files(),
      gib(static_cast<double>(plan.file_bytes())));
  // Ranks with the same share, grouped.
  std::map<std::pair<int64_t, size_t>, std::vector<int64_t>> groups;
  for (const RankShare& r : plan.per_rank)
    groups[{r.bytes(), r.files.size()}].push_back(r.rank);
  for (const auto& [key, ranks] : groups) {
    const std::string who =
        ranks.size() == 1 ? fmt::format("rank {}", ranks[0])
                          : fmt::format("{} ranks ({}{}{})", ranks.size(), ranks[0],
                                        ranks.size() > 2 ? ", ..., " : ", ", ranks.back());
    out << fmt::format("  {}: {} file(s), {:.3f} GiB each\n", who, key.second,
                       gib(static_cast<double>(key.first)));
  }
  const RankShare* example = nullptr;
  for (const RankShare& r : plan.per_rank) {
    if (!r.files.empty()) {
      example = &r;
      break;
    }
  }
  if (example != nullptr) {
    out << fmt::format("  rank {}'s files in {}/:\n", example->rank,
                       checkpoint_path(plan, 1, 1));
    size_t shown = 0;
    for (const CheckpointFile& f : example->files) {
      if (++shown > 8) {
        out << fmt::format("    ... {} more\n", example->files.size() - 8);
        break;
      }
      out << fmt::format("    {}  {} bytes\n", f.name, f.bytes);
    }
  }
  return out.str();
}

}  // namespace pipeprof::harness::workload
