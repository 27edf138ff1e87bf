#include "workload/dlio_checkpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>
#include <tuple>

#include "pipeprof/harness/errors.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/files.h"
#include "pipeprof/pipelines/storage_io.h"
#include "pipeprof/trace/clock.h"
#include "pipeprof/trace/recorder.h"
#include "workload/dlio_metrics.h"
#include "workload/dlio_workload.h"

namespace pipeprof::harness::workload {
namespace {

// DLIO's emulated compute between checkpoints: a sleep, cut short when `cut()` is true (a stop,
// a failed rank).
void compute_for(double seconds, const std::function<bool()>& cut) {
  const int64_t end = trace::now_ns() + static_cast<int64_t>(seconds * 1e9);
  for (int64_t now = trace::now_ns(); now < end; now = trace::now_ns()) {
    if (cut()) return;
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(end - now, 50'000'000)));
  }
}

trace::NameId checkpoint_category() {
  static const trace::NameId id = trace::Recorder::global().intern("checkpoint");
  return id;
}

}  // namespace

// ---- writing and reading --------------------------------------------------------------------

namespace {

// The bytes every write hands the storage: one aligned buffer, filled once (random bytes, or
// fp32 1.0 when checkpoint.randomize_tensor is off: DLIO's ones, in one datatype for every file),
// shared by every rank's thread.
class Payload {
 public:
  Payload(size_t bytes, bool randomize, const std::string& datatype) : bytes_(bytes) {
    data_.reset(static_cast<std::byte*>(std::aligned_alloc(pipelines::kStorageAlignment, bytes)));
    if (!data_) throw std::bad_alloc();
    if (randomize) {
      std::mt19937_64 rng(123);
      auto* words = reinterpret_cast<uint64_t*>(data_.get());
      for (size_t i = 0; i < bytes / 8; ++i)
        words[i] = rng();
    } else {
      // 1.0 in the datatype: fp16 0x3C00, bf16 0x3F80, fp32 0x3F800000, ... (little-endian).
      std::vector<uint8_t> one;
      if (datatype == "fp16") one = {0x00, 0x3C};
      else if (datatype == "bf16") one = {0x80, 0x3F};
      else if (datatype == "fp64") one = {0, 0, 0, 0, 0, 0, 0xF0, 0x3F};
      else if (datatype == "int8" || datatype == "uint8") one = {1};
      else one = {0x00, 0x00, 0x80, 0x3F};
      for (size_t i = 0; i < bytes; ++i)
        data_.get()[i] = static_cast<std::byte>(one[i % one.size()]);
    }
  }
  std::span<const std::byte> first(size_t n) const { return {data_.get(), std::min(n, bytes_)}; }
  size_t size() const { return bytes_; }

 private:
  struct Free {
    void operator()(std::byte* p) const noexcept { std::free(p); }
  };
  std::unique_ptr<std::byte, Free> data_;
  size_t bytes_;
};

const Payload& payload(size_t bytes, bool randomize, const std::string& datatype) {
  static std::mutex mutex;
  static std::map<std::tuple<size_t, bool, std::string>, std::unique_ptr<Payload>> made;
  const std::lock_guard lock(mutex);
  auto& p = made[{bytes, randomize, datatype}];
  if (!p) p = std::make_unique<Payload>(bytes, randomize, datatype);
  return *p;
}

}  // namespace

CheckpointIo::CheckpointIo(const CheckpointPlan& plan, const CheckpointSettings& settings,
                           int64_t first_rank, int64_t local_ranks, CheckpointIoOptions options)
    : plan_(plan), settings_(settings), first_rank_(first_rank), local_ranks_(local_ranks),
      options_(options) {
  options_.buffer_bytes = std::max<size_t>(
      pipelines::kStorageAlignment,
      options_.buffer_bytes / pipelines::kStorageAlignment * pipelines::kStorageAlignment);
  // What writers of an earlier run on this host left when they were killed outright.
  if (first_rank_ == 0) (void)pipelines::remove_abandoned_partials(plan_.folder);
  // No larger than the largest file of this process's ranks; its bytes are made now, not in the
  // first save's time.
  int64_t largest = 0;
  for (int64_t r = first_rank_; r < first_rank_ + local_ranks_ && r < plan_.ranks; ++r) {
    for (const CheckpointFile& f : share(r).files)
      largest = std::max(largest, f.bytes);
  }
  const auto rounded = static_cast<size_t>(
      (largest + static_cast<int64_t>(pipelines::kStorageAlignment) - 1) /
      static_cast<int64_t>(pipelines::kStorageAlignment) *
      static_cast<int64_t>(pipelines::kStorageAlignment));
  if (rounded > 0) {
    options_.buffer_bytes = std::min(options_.buffer_bytes, rounded);
    (void)payload(options_.buffer_bytes, settings_.randomize_tensor, "fp32");
  }
}

const RankShare& CheckpointIo::share(int64_t rank) const {
  return plan_.per_rank.at(static_cast<size_t>(rank));
}

void CheckpointIo::record(bool save, int64_t rank, int64_t epoch, int64_t step, int64_t index,
                          int64_t start_ns, int64_t end_ns, int64_t bytes) {
  const std::lock_guard lock(mutex_);
  auto it = std::find_if(ops_.begin(), ops_.end(), [&](const CheckpointOp& op) {
    return op.save == save && op.epoch == epoch && op.step == step && op.index == index;
  });
  if (it == ops_.end()) {
    ops_.push_back({.save = save, .epoch = epoch, .step = step, .index = index,
                    .start_ns = start_ns, .end_ns = end_ns});
    it = ops_.end() - 1;
  }
  it->ranks.push_back(rank);
  it->seconds.push_back(trace::ns_to_seconds(end_ns - start_ns));
  it->bytes.push_back(bytes);
  it->start_ns = std::min(it->start_ns, start_ns);
  it->end_ns = std::max(it->end_ns, end_ns);
}

void CheckpointIo::save(int64_t rank, int64_t epoch, int64_t step, int64_t index,
                        int64_t start_ns, const std::function<void()>& sync) {
  static const trace::NameId span_name = trace::Recorder::global().intern("checkpoint save");
  static const trace::NameId write_name = trace::Recorder::global().intern("write checkpoint file");
  static const trace::NameId step_key = trace::Recorder::global().intern("step");
  static const trace::NameId bytes_key = trace::Recorder::global().intern("bytes");
  const RankShare& mine = share(rank);
  const std::string folder = checkpoint_path(plan_, epoch, step);
  // Made in the constructor when this process's ranks write anything (not in this clock).
  const Payload* data =
      mine.files.empty() ? nullptr : &payload(options_.buffer_bytes, settings_.randomize_tensor, "fp32");
  int64_t written = 0;
  {
    const trace::ScopedSpan span(span_name, checkpoint_category(), step_key, step);
    for (const CheckpointFile& f : mine.files) {
      const trace::ScopedSpan file_span(write_name, trace::category::pipeline(), bytes_key, f.bytes);
      auto out = pipelines::create_file(
          folder + "/" + f.name,
          {.direct = options_.direct, .fsync = settings_.fsync, .storage = options_.storage});
      int64_t left = f.bytes;
      while (left > 0) {
        if (options_.stop != nullptr && options_.stop->load()) return;  // dropped: removed
        const auto n = static_cast<size_t>(std::min<int64_t>(left, static_cast<int64_t>(data->size())));
        out->append(data->first(n));
        left -= static_cast<int64_t>(n);
      }
      out->commit();
      written += f.bytes;
    }
  }
  if (sync) sync();
  record(true, rank, epoch, step, index, start_ns, trace::now_ns(), written);
}

void CheckpointIo::load(int64_t rank, int64_t epoch, int64_t step, int64_t index,
                        int64_t start_ns, bool written_here, const std::function<void()>& sync) {
  static const trace::NameId span_name = trace::Recorder::global().intern("checkpoint load");
  static const trace::NameId read_name = trace::Recorder::global().intern("read checkpoint file");
  static const trace::NameId step_key = trace::Recorder::global().intern("step");
  static const trace::NameId bytes_key = trace::Recorder::global().intern("bytes");
  // With recovery_rank_shift a rank reads the files of the rank one node over (a rank of another
  // node, so that no node reads what it wrote from its own page cache); within one process the
  // next process's ranks.
  int64_t source = rank;
  if (settings_.recovery_rank_shift && plan_.ranks > local_ranks_) {
    source = (rank + local_ranks_) % plan_.ranks;
  }
  const RankShare& theirs = share(source);
  const std::string folder = checkpoint_path(plan_, epoch, step);
  int64_t read = 0;
  {
    const trace::ScopedSpan span(span_name, checkpoint_category(), step_key, step);
    for (const CheckpointFile& f : theirs.files) {
      const std::string name = folder + "/" + f.name;
      const trace::ScopedSpan file_span(read_name, trace::category::pipeline(), bytes_key, f.bytes);
      uint64_t got = 0;
      try {
        got = pipelines::read_whole_file(
            name, {.block_bytes = options_.buffer_bytes, .direct = options_.direct,
                   .storage = options_.storage, .stop = options_.stop});
      } catch (const pipelines::IoError& e) {
        std::error_code ec;
        // Missing: no such file, or an object store's 404.
        const bool missing = name.find("://") != std::string::npos
                                 ? std::string_view(e.what()).find("HTTP 404") != std::string_view::npos
                                 : !std::filesystem::exists(name, ec);
        if (missing) {
          const std::string what = fmt::format(
              "checkpoint {}: {} is missing (rank {} reads {} bytes from it{})",
              checkpoint_id(epoch, step), name, rank, f.bytes,
              written_here ? "; this run wrote it" : "; write the checkpoint first: "
                                                     "checkpoint.num_checkpoints_write");
          if (written_here) throw RunFailure(what);
          throw InputError(what);
        }
        throw;
      }
      if (options_.stop != nullptr && options_.stop->load()) return;
      if (static_cast<int64_t>(got) != f.bytes) {
        const std::string what = fmt::format(
            "checkpoint {}: {} holds {} bytes, rank {}'s share is {} bytes ({})",
            checkpoint_id(epoch, step), name, got, source, f.bytes,
            written_here ? "this run wrote it whole: the storage lost bytes"
                         : "a truncated checkpoint, or one written for another model or rank "
                           "count");
        if (written_here) throw RunFailure(what);
        throw InputError(what);
      }
      read += f.bytes;
    }
  }
  if (sync) sync();
  record(false, rank, epoch, step, index, start_ns, trace::now_ns(), read);
}

void CheckpointIo::drop_from_page_cache(int64_t epoch, int64_t step) const {
  const std::string folder = checkpoint_path(plan_, epoch, step);
  for (int64_t r = first_rank_; r < first_rank_ + local_ranks_; ++r) {
    for (const CheckpointFile& f : share(r).files) {
      try {
        pipelines::drop_from_page_cache(folder + "/" + f.name);
      } catch (const pipelines::InputDataError&) {
        // A missing file: the read names it, with the size it expects.
      }
    }
  }
}

std::vector<CheckpointOp> CheckpointIo::ops() const {
  const std::lock_guard lock(mutex_);
  std::vector<CheckpointOp> out = ops_;
  std::stable_sort(out.begin(), out.end(),
                   [](const CheckpointOp& a, const CheckpointOp& b) { return a.start_ns < b.start_ns; });
  return out;
}

// ---- the checkpoint-only run ------------------------------------------------------------------

CheckpointRun run_checkpoints(const DlioWorkload& w, const CheckpointPlan& plan, int64_t first_rank,
                              int64_t local_ranks, cluster::Cluster* cluster,
                              const CheckpointIoOptions& options,
                              const std::function<void(const std::string&)>& on_progress) {
  const CheckpointSettings& c = w.checkpoint_settings;
  CheckpointIo io(plan, c, first_rank, local_ranks, options);
  const int64_t writes = std::max<int64_t>(0, c.num_write);
  const int64_t reads = std::max<int64_t>(0, c.num_read);
  const std::atomic<bool>* stop = options.stop;
  const bool ranks = cluster != nullptr && cluster->size() > 1;
  std::atomic<bool> failed{false};
  std::atomic<bool> stopped{false};
  std::exception_ptr first_error;
  std::mutex error_mutex;
  // The ranks' meeting point: the last local rank to arrive runs the processes' collective (which
  // carries a stop or a failure to every process) and decides whether they go on.
  std::barrier meet(local_ranks, [&]() noexcept {
    bool mine = failed.load() || (stop != nullptr && stop->load());
    if (ranks) {
      try {
        mine = cluster->agree_stop(mine, stop);
      } catch (...) {
        mine = true;
      }
    }
    if (mine) stopped = true;
  });
  auto phase = [&](const std::string& what) {
    if (on_progress) on_progress(what);
  };
  auto fail = [&] {
    {
      const std::lock_guard lock(error_mutex);
      if (!first_error) first_error = std::current_exception();
    }
    failed = true;
  };
  // The compute before a write ends early once anything stops the run.
  auto cut = [&] { return failed.load() || stopped.load() || (stop != nullptr && stop->load()); };
  auto sync = [&] { meet.arrive_and_wait(); };  // checkpoint.rank_sync: before the end is taken
  const std::function<void()> no_sync;
  auto rank_loop = [&](int64_t local) {
    const int64_t rank = first_rank + local;
    const bool lead = local == 0;
    try {
      trace::Recorder::global().set_thread_name(fmt::format("rank {}", rank));
      for (int64_t i = 1; i <= writes; ++i) {
        if (c.time_between_s > 0) compute_for(c.time_between_s, cut);
        meet.arrive_and_wait();
        if (stopped) return;
        if (lead) phase(fmt::format("writing checkpoint {} of {}", i, writes));
        io.save(rank, 1, i, i, trace::now_ns(), c.rank_sync ? std::function<void()>(sync) : no_sync);
        if (stopped) return;
      }
      for (int64_t i = 1; i <= reads; ++i) {
        io.drop_from_page_cache(1, i);  // cold: what the read phase reads comes from the device
        meet.arrive_and_wait();
        if (stopped) return;
        if (lead) phase(fmt::format("reading checkpoint {} of {}", i, reads));
        io.load(rank, 1, i, i, trace::now_ns(), i <= writes,
                c.rank_sync ? std::function<void()>(sync) : no_sync);
        if (stopped) return;
      }
      meet.arrive_and_wait();  // the last collective: a failure elsewhere is known everywhere
    } catch (...) {
      fail();
      meet.arrive_and_drop();
    }
  };
  {
    std::vector<std::jthread> threads;
    int64_t started = 1;  // this thread's rank
    try {
      for (int64_t k = 1; k < local_ranks; ++k, ++started)
        threads.emplace_back(rank_loop, k);
    } catch (...) {
      // A thread that could not start (a process limit): its place at the barrier is dropped, so
      // the others are not kept waiting for it.
      fail();
      for (int64_t k = started; k < local_ranks; ++k)
        meet.arrive_and_drop();
    }
    rank_loop(0);
  }
  if (first_error) std::rethrow_exception(first_error);
  CheckpointRun run;
  run.ops = io.ops();
  // Stopped by Ctrl-C, or by another process's failure (which that process reports).
  run.interrupted = (stop != nullptr && stop->load()) || stopped.load();
  return run;
}

// ---- figures --------------------------------------------------------------------------------

std::string ops_to_text(const std::vector<CheckpointOp>& ops) {
  nlohmann::json j = nlohmann::json::array();
  for (const CheckpointOp& op : ops) {
    j.push_back({{"save", op.save}, {"epoch", op.epoch}, {"step", op.step}, {"index", op.index},
                 {"ranks", op.ranks}, {"seconds", op.seconds}, {"bytes", op.bytes},
                 {"start_ns", op.start_ns}, {"end_ns", op.end_ns}});
  }
  return j.dump();
}

std::vector<CheckpointOp> ops_from_text(const std::string& text) {
  std::vector<CheckpointOp> out;
  const nlohmann::json j = nlohmann::json::parse(text);
  for (const nlohmann::json& x : j) {
    out.push_back({.save = x.at("save").get<bool>(),
                   .epoch = x.at("epoch").get<int64_t>(),
                   .step = x.at("step").get<int64_t>(),
                   .index = x.at("index").get<int64_t>(),
                   .ranks = x.at("ranks").get<std::vector<int64_t>>(),
                   .seconds = x.at("seconds").get<std::vector<double>>(),
                   .bytes = x.at("bytes").get<std::vector<int64_t>>(),
                   .start_ns = x.at("start_ns").get<int64_t>(),
                   .end_ns = x.at("end_ns").get<int64_t>()});
  }
  return out;
}

std::vector<CheckpointOp> merge_ops(const std::vector<CheckpointOp>& ops) {
  std::vector<CheckpointOp> merged;
  for (const CheckpointOp& op : ops) {
    auto it = std::find_if(merged.begin(), merged.end(), [&](const CheckpointOp& m) {
      return m.save == op.save && m.epoch == op.epoch && m.step == op.step && m.index == op.index;
    });
    if (it == merged.end()) {
      merged.push_back(op);
      continue;
    }
    it->ranks.insert(it->ranks.end(), op.ranks.begin(), op.ranks.end());
    it->seconds.insert(it->seconds.end(), op.seconds.begin(), op.seconds.end());
    it->bytes.insert(it->bytes.end(), op.bytes.begin(), op.bytes.end());
    it->start_ns = std::min(it->start_ns, op.start_ns);
    it->end_ns = std::max(it->end_ns, op.end_ns);
  }
  std::stable_sort(merged.begin(), merged.end(), [](const CheckpointOp& a, const CheckpointOp& b) {
    return a.start_ns < b.start_ns;
  });
  return merged;
}

results::CheckpointRecord checkpoint_record(const DlioWorkload& w, const CheckpointPlan& plan,
                                            const std::vector<CheckpointOp>& ops) {
  results::CheckpointRecord r;
  r.model = w.model.type.empty() ? w.name : w.model.type;
  r.ranks = plan.ranks;
  r.tensor = plan.tensor;
  r.pipeline = plan.pipeline;
  r.data = plan.data;
  r.zero_stage = plan.zero_stage;
  r.mode = plan.subset ? "subset" : "default";
  r.parameters = plan.parameters;
  r.size_gib = plan.size_gib();
  r.files = plan.files();
  r.bytes = plan.file_bytes();
  r.folder = plan.folder;
  r.fsync = w.checkpoint_settings.fsync;
  r.direct = w.odirect;
  r.cold_reads = true;
  // The same operation's ranks (from every process) as one; an operation that not every rank
  // finished (stopped by Ctrl-C) is no measure of the storage.
  std::vector<CheckpointOp> merged = merge_ops(ops);
  std::erase_if(merged, [&](const CheckpointOp& op) {
    return static_cast<int64_t>(op.ranks.size()) < plan.ranks;
  });
  std::vector<double> save_d, save_io, load_d, load_io, save_slow, save_tp, load_slow, load_tp;
  for (const CheckpointOp& op : merged) {
    results::CheckpointOpRecord o;
    o.kind = op.save ? "save" : "load";
    o.epoch = op.epoch;
    o.step = op.step;
    o.index = op.index;
    o.ranks = static_cast<int64_t>(op.ranks.size());
    for (size_t k = 0; k < op.ranks.size(); ++k) {
      o.bytes += op.bytes[k];
      o.slowest_seconds = std::max(o.slowest_seconds, op.seconds[k]);
      if (op.ranks[k] == 0) o.rank0_seconds = op.seconds[k];
    }
    o.dlio_gib_per_s = o.rank0_seconds > 0 ? plan.size_gib() / o.rank0_seconds : 0;
    o.gib_per_s = o.slowest_seconds > 0 ? static_cast<double>(o.bytes) / kGiB / o.slowest_seconds : 0;
    (op.save ? save_d : load_d).push_back(o.rank0_seconds);
    (op.save ? save_io : load_io).push_back(o.dlio_gib_per_s);
    (op.save ? save_slow : load_slow).push_back(o.slowest_seconds);
    (op.save ? save_tp : load_tp).push_back(o.gib_per_s);
    r.ops.push_back(o);
  }
  if (!save_d.empty()) {
    r.save_duration_mean_s = mean(save_d);
    r.save_duration_stdev_s = population_stdev(save_d);
    r.save_io_mean_gib_per_s = mean(save_io);
    r.save_io_stdev_gib_per_s = population_stdev(save_io);
    r.save_slowest_mean_s = mean(save_slow);
    r.save_gib_per_s = mean(save_tp);
  }
  if (!load_d.empty()) {
    r.load_duration_mean_s = mean(load_d);
    r.load_duration_stdev_s = population_stdev(load_d);
    r.load_io_mean_gib_per_s = mean(load_io);
    r.load_io_stdev_gib_per_s = population_stdev(load_io);
    r.load_slowest_mean_s = mean(load_slow);
    r.load_gib_per_s = mean(load_tp);
  }
  return r;
}

}  // namespace pipeprof::harness::workload
