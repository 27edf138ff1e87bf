#include "workload/prediction_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "pipeprof/harness/errors.h"
#include "workload/dlio_training.h"
#include "workload/remote_env.h"
#include "workload/storage_probe.h"

namespace pipeprof::harness::workload {

ProbedStorage storage_to_probe(const DlioWorkload& w) {
  ProbedStorage out{.workload = w};
  // The run's own object server (a dataset in S3 is probed in its bucket, whatever its mode).
  if (w.remote.mode == RemoteMode::kNone || w.s3) return out;
  if (w.remote.mode != RemoteMode::kDirect) {
    throw InputError(fmt::format("{}: predict: pipeprof.remote.mode {} is not what the model describes "
                                 "(direct is: every epoch reads every file from the server)",
                                 w.file, remote_mode_name(w.remote.mode)));
  }
  out.storage = fmt::format("http {:g} ms, {}", w.remote.latency_ms,
                            w.remote.rate_mib_s > 0 ? fmt::format("{:g} MiB/s", w.remote.rate_mib_s)
                                                    : std::string("unlimited"));
  out.server = start_object_server(w);
  out.workload.dataset.data_folder = out.server->url();
  return out;
}

SearchPrediction predict_search(const DlioWorkload& w, bool cold, int64_t limit,
                                const std::atomic<bool>* stop,
                                const std::function<void(const std::string&)>& log) {
  SearchPrediction out;
  const ProbedStorage served = storage_to_probe(w);
  const bool remote = served.server != nullptr;
  // The probe measures as many streams as the search's accelerators can open, and no more.
  const int64_t threads = std::max<int64_t>(1, w.read_threads);
  ProbeOptions o{.max_streams = std::clamp<int64_t>(limit * threads, 1, 512),
                 // Warm passes even for a cold search: a cold read's CPU is measured against them.
                 .warm = !remote,
                 .stop = stop,
                 .on_progress = [&](const std::string& line) {
                   if (log) log(w.name + ": " + line);
                 }};
  PredictOptions po{.cold = cold || remote, .limit = limit};
  if (remote) {
    out.storage = served.storage;
    out.profile = probe_storage(served.workload, o);
  } else if (w.s3) {
    // s3://: objects behind a server, as the search reads them (no page cache of this client).
    out.storage = "s3";
    po.cold = true;
    o.warm = false;
    o.storage = s3_storage(w, stop);
    out.profile = probe_storage(w, o);
  } else {
    out.storage = cold ? "local, cold" : "page cache";
    po.warm = !cold;
    out.profile = probe_storage(w, o);
  }
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
  if (s.max_accelerators > 0 && !at_limit && !x.capped) {
    c.error_percent = 100.0 * static_cast<double>(x.max_accelerators - s.max_accelerators) /
                      static_cast<double>(s.max_accelerators);
  }
  return c;
}

}  // namespace pipeprof::harness::workload
