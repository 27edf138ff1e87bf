// A DLIO workload's data loader as a pipeprof pipeline spec, for one rank of `ranks` (a simulated
// accelerator, or an MPI rank), with the access pattern of the loader DLIO emulates:
//
//   pytorch     the rank reads a contiguous range of sample indices (floor(samples / ranks) each,
//               DLIO's split, the remainder left out), in order; read_threads readers (an interleave over the range's
//               files) each read whole files, samples counted as they come
//               list_files(the range's files)
//                 -> interleave(<format source> -> nbytes [-> sleep_time preprocess],
//                               cycle_length = parallelism = read_threads, block = samples/file)
//                 -> skip -> take (the range's samples) -> batch(drop_remainder)
//                 -> prefetch(read_threads x prefetch_factor)
//   tensorflow  files round-robin over ranks, read_threads files interleaved record by record
//               (TFRecordDataset's num_parallel_reads), a shuffle buffer
//               list_files(the rank's files, file_shuffle) -> interleave(... cycle_length =
//                 parallelism = read_threads, block 1) -> [shuffle(shuffle_size, seed)]
//                 -> batch(drop_remainder) -> prefetch
//
// The files are listed once, in the spec (DLIO lists them once too). With file_shuffle a rank
// shuffles its own files every epoch; DLIO shuffles the whole list before sharding it, so that
// its ranks trade files between epochs. The spec is one epoch's loader (what --spec-out writes, for
// `pipeprof run`); the training loop runs it repeated (repeated()), one loader for every epoch (it
// takes an epoch's steps from it, as DLIO's TensorFlow loader takes them from its repeated
// dataset): made before the first epoch, it reads on across the epoch boundaries, so an epoch does
// not begin by starting its loader.
//
// A sample is read in full (its bytes come from storage and, for tfrecord and npz, their CRCs are
// checked) and then stands as its size in bytes (`nbytes`), as DLIO's readers return a fixed
// stand-in instead of the data. With `read_threads: autotune` the interleave's parallelism and the
// prefetch buffer are knobs for the online tuner.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "workload/dlio_workload.h"

namespace pipeprof::harness::workload {

// The glob pattern of the workload's training files (DLIO's listing: train/*.<format>, or
// train/*/*.<format> with subfolders).
std::string train_pattern(const DlioWorkload& w);

// The samples of the training set (num_files_train x num_samples_per_file) that rank `rank` of
// `ranks` reads under the pytorch loader: [begin, end).
struct SampleRange {
  int64_t begin = 0, end = 0;
};
SampleRange pytorch_samples(const DlioWorkload& w, int64_t rank, int64_t ranks);

// The training files DLIO's layout gives the workload (sorted, as DLIO lists them), whether they
// exist or not.
std::vector<std::string> expected_training_files(const DlioWorkload& w);

// The spec (pipelines/spec.h) of rank `rank`'s loader over the training `files` (DLIO's listing):
// one epoch. With `samples`, each sample stays itself (its arrays, batched) instead of standing as
// its size in bytes (for Python's pipeprof.Pipeline.from_workload; batching needs samples of one
// shape, record_length_stdev 0).
nlohmann::json loader_spec(const DlioWorkload& w, const std::vector<std::string>& files,
                           int64_t rank, int64_t ranks, bool samples = false);

// The spec repeated without end (a repeat stage before its final prefetch).
nlohmann::json repeated(nlohmann::json spec);

}  // namespace pipeprof::harness::workload
