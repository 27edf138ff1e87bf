#include "workload/prediction_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "pipeprof/harness/errors.h"
#include "workload/dlio_training.h"
#include "workload/remote_env.h"
#include "workload/storage_probe.h"

namespace pipeprof::harness::workload {

bool serves_own_files(const DlioWorkload& w) { return w.remote.mode != RemoteMode::kNone && !w.s3; }

void check_probe_mode(const DlioWorkload& w) {
  if (serves_own_files(w) && w.remote.mode != RemoteMode::kDirect) {
    throw InputError(fmt::format(
        "{}: pipeprof.remote.mode {} is not what the prediction's model describes (direct is: every "
        "epoch reads every file from the server); probe the storage with --data-folder, or predict "
        "from a --profile",
        w.file, remote_mode_name(w.remote.mode)));
  }
}

ProbedStorage storage_to_probe(const DlioWorkload& w, const std::atomic<bool>* stop) {
  check_probe_mode(w);  // refuses only what a served workload does that the model does not describe
  return storage_as_runs_read(w, stop);
}

std::shared_ptr<const pipelines::StorageContext> stoppable_storage(const DlioWorkload& w,
                                                                   const std::atomic<bool>* stop) {
  if (w.s3) return s3_storage(w, stop);
  const std::string& folder = w.dataset.data_folder;
  if (!folder.starts_with("http://") && !folder.starts_with("https://")) return nullptr;
  return std::make_shared<pipelines::StorageContext>(pipelines::RemoteReadOptions{.stop = stop});
}

ProbedStorage storage_as_runs_read(const DlioWorkload& w, const std::atomic<bool>* stop) {
  ProbedStorage out{.workload = w};
  if (!serves_own_files(w)) {
    out.context = stoppable_storage(w, stop);
    return out;
  }
  out.served_files = training_files(w);  // missing files are named here, as a run names them
  out.storage = fmt::format("http {:g} ms, {}", w.remote.latency_ms,
                            w.remote.rate_mib_s > 0 ? fmt::format("{:g} MiB/s", w.remote.rate_mib_s)
                                                    : std::string("unlimited"));
  out.server = start_object_server(w);
  out.workload.dataset.data_folder = out.server->url();
  // As the runs read (RemoteEnvironment): one request per file, ended by Ctrl-C.
  pipelines::RemoteReadOptions read{.stop = stop};
  read.parts_in_flight = 1;
  out.context = std::make_shared<pipelines::StorageContext>(read);
  return out;
}

SearchPrediction predict_search(const DlioWorkload& w, bool cold, int64_t limit,
                                const std::atomic<bool>* stop,
                                const std::function<void(const std::string&)>& log) {
  SearchPrediction out;
  const ProbedStorage served = storage_to_probe(w, stop);
  const bool remote = served.server != nullptr;
  // The probe measures as many streams as the search's accelerators can open, and no more.
  const int64_t threads = std::max<int64_t>(1, w.read_threads);
  ProbeOptions o{.max_streams = std::clamp<int64_t>(limit * threads, 1, 512),
                 // Warm passes even for a cold search: a cold read's CPU is measured against them.
                 .warm = !remote,
                 .stop = stop,
                 .storage = served.context,
                 .on_progress = [&](const std::string& line) {
                   if (log) log(w.name + ": " + line);
                 },
                 .served_files = served.served_files};
  PredictOptions po{.cold = cold || remote, .limit = limit};
  if (remote) {
    out.storage = served.storage;
  } else if (w.s3) {
    // s3://: objects behind a server, as the search reads them (no page cache of this client).
    out.storage = "s3";
    po.cold = true;
    o.warm = false;
  } else {
    out.storage = cold ? "local, cold" : "page cache";
    po.warm = !cold;
  }
  out.profile = probe_storage(served.workload, o);
  if (!out.profile.complete) {
    out.interrupted = true;
    return out;
  }
  if (po.warm && out.profile.warm.empty()) {
    // The files do not fit in half the memory: the search's epochs are not all warm either.
    po.warm = false;
    out.storage = "local, as found";
  }
  out.prediction = predict(out.profile, demand_of(w), po);
  return out;
}

results::PredictionCheck prediction_check(const SearchPrediction& p, const MaxAcceleratorSearch& s,
                                          int64_t limit) {
  const Prediction& x = p.prediction;
  const std::vector<BandwidthPoint>& curve =
      x.warm_epochs && !p.profile.warm.empty() ? p.profile.warm : p.profile.cold;
  double highest = 0;
  for (const BandwidthPoint& b : curve)
    highest = std::max(highest, b.mib_per_s);
  results::PredictionCheck c{.storage = p.storage,
                             .predicted = x.max_accelerators,
                             .binding = x.binding,
                             .extrapolated = x.extrapolated,
                             .capped = x.capped,
                             .profile_mib_per_s = highest};
  const bool at_limit = limit > 0 && s.max_accelerators >= limit;
  // A capped prediction (every count up to the limit met) against a search that stopped short of
  // the limit is wrong by at least the gap: the error is kept, so that a model that predicts far
  // too many is still a figure the gate sees.
  if (s.max_accelerators > 0 && !at_limit) {
    c.error_percent = 100.0 * static_cast<double>(x.max_accelerators - s.max_accelerators) /
                      static_cast<double>(s.max_accelerators);
  }
  return c;
}

}  // namespace pipeprof::harness::workload
