// A search set beside its prediction (the suite's search entries with "predict"): the storage the
// search will read is probed first (storage_probe.h) and `pipeprof predict`'s model answers for the
// workload (predict.h); after the search, the record (results::PredictionCheck) holds both and
// the prediction's error, which the report tabulates and `compare` judges.
//
// Set-ups, as the search reads its files:
//   local, cold    files dropped from the page cache before every epoch: the cold curve, every
//                  epoch cold
//   page cache     files read into the page cache first: the warm curve, every epoch warm
//   http L ms, R MiB/s
//                  a workload of pipeprof.remote mode direct: its folder served by nginx with the
//                  workload's latency and rate for the probe, as the search's runs serve it
//   s3             storage.storage_type s3: the bucket through the workload's storage options
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "pipeprof/pipelines/dataset.h"

#include "pipeprof/results/records.h"
#include "workload/dlio_workload.h"
#include "workload/predict.h"
#include "workload/accelerator_search.h"
#include "pipeprof/testbed/object_server.h"

namespace pipeprof::harness::workload {

// Whether `w` serves its own files for its runs (pipeprof.remote; a dataset in S3 is read in its
// bucket, whatever the mode).
bool serves_own_files(const DlioWorkload& w);
// Throws InputError, naming the file and key, when `w` serves its files in a way the model does
// not describe: pipeprof.remote modes other than direct (every epoch reading every file from the
// server).
void check_probe_mode(const DlioWorkload& w);

// How `w`'s data folder is read with `stop` (Ctrl-C) ending a request in progress: an S3 dataset
// through its storage options, http(s) URLs with the reader's defaults; null (the defaults) for
// local files, whose reads check no flag.
std::shared_ptr<const pipelines::StorageContext> stoppable_storage(const DlioWorkload& w,
                                                                   const std::atomic<bool>* stop);

// What a probe of `w`'s storage reads, as the workload's runs read it: for pipeprof.remote, its
// data folder served by the workload's own object server (nginx with its latency and rate,
// started here and stopped when this is destroyed), each file in one request, as the runs read
// them; otherwise the data folder as it is (an S3 dataset through its storage options).
struct ProbedStorage {
  std::unique_ptr<testbed::ObjectServer> server;  // null: the workload serves nothing itself
  DlioWorkload workload;  // `w`, with data_folder at the server's URL when there is one
  std::string storage;    // "http 5 ms, 32 MiB/s" when served; empty otherwise
  std::shared_ptr<const pipelines::StorageContext> context;  // how to read (null: the defaults)
  std::vector<std::string> served_files;  // the local files the server serves (none: no server)
};
// `stop` (Ctrl-C) ends a request in progress. Throws InputError for training files that are not
// there (naming the folder, as a run would), and pipelines::RemoteError when the server fails to
// start. Any pipeprof.remote mode: the server is what every mode reads from.
ProbedStorage storage_as_runs_read(const DlioWorkload& w, const std::atomic<bool>* stop);
// The same, for the model's probe: first throws InputError for a mode check_probe_mode refuses.
ProbedStorage storage_to_probe(const DlioWorkload& w, const std::atomic<bool>* stop);

struct SearchPrediction {
  std::string storage;  // the set-up's label
  StorageProfile profile;
  Prediction prediction;
  bool interrupted = false;  // the probe was cut short: no prediction
};

// Probes the storage as a search of `w` with `cold` and at most `limit` accelerators will read it,
// then predicts. Leaves local files in the page cache when not cold (the search then reads them
// from there). Throws InputError for a set-up the model does not describe (pipeprof.remote modes
// other than direct) or storage the probe cannot read.
SearchPrediction predict_search(const DlioWorkload& w, bool cold, int64_t limit,
                                const std::atomic<bool>* stop,
                                const std::function<void(const std::string&)>& log);

// The record of the prediction beside the search's result.
results::PredictionCheck prediction_check(const SearchPrediction& p, const MaxAcceleratorSearch& s,
                                          int64_t limit);

}  // namespace pipeprof::harness::workload
