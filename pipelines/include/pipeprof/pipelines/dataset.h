// Dataset: an immutable graph of operations, built in C++ or loaded from a JSON spec (spec.h).
//
//   auto ds = range(2)
//                 .interleave(DatasetFn([](const Element& e) {
//                   return artificial({.num_samples = e[0].as_int64()});
//                 }), {.cycle_length = 2, .parallelism = kAutotune})
//                 .map(sleep_fn, {.parallelism = kAutotune})
//                 .prefetch(kAutotune);
//   for (auto it = ds.iterate(); auto e = it->next();) { ... }
//
// Semantics follow tf.data (see the operation headers). kAutotune asks for a knob that starts at
// the documented default below and that the tuner may move while the pipeline runs.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pipeprof/pipelines/iterator.h"
#include "pipeprof/pipelines/model.h"
#include "pipeprof/pipelines/tensor.h"

namespace pipeprof::pipelines {

// Defaults for kAutotune, until the tuner moves the knob:
// - map / interleave parallelism: the number of cores (at least 2), within [1, kMaxParallelism]
//   (interleave: at most cycle_length);
// - prefetch buffer_size: kDefaultAutotuneBuffer, within [1, kMaxBufferSize];
// - interleave cycle_length (not a knob): the number of cores, at least 2.
inline constexpr int64_t kMaxParallelism = 64;
inline constexpr int64_t kMaxBufferSize = 256;
inline constexpr int64_t kDefaultAutotuneBuffer = 2;
int64_t default_autotune_parallelism();

// What the ideal-time simulator knows of a callable. Each registered function states it next to
// its definition (functions.cc); the timing of a C++ callable is unknown.
struct SimTiming {
  bool known = false;                                // false: no latency known in advance
  std::string unknown = "a C++ callable has no known latency";  // why, when not known
  double latency_ms = 0;                             // per call (a generator: per element)
  bool evaluate = false;  // cheap and deterministic: the simulator calls it for element values
                          // (otherwise a map passes values through unchanged)
  // Bytes each call fills with CPU work (a new element of this size), timed at the fill rate
  // measured in the same run (sim::MeasuredRates); 0: none.
  double fill_bytes = 0;
  // A generator whose values are not cheap to make: how many elements it yields; -1: unknown.
  int64_t count = -1;
};

// A callable with a name. Built from the function registry (functions.h) it also carries the
// registry arguments and can be written back to a spec; built from a C++ lambda it cannot.
template <typename Signature>
struct Callable {
  std::string name = "fn";
  nlohmann::json args;        // registry arguments, or the nested spec of a DatasetFn
  bool serializable = false;  // true when `name` + `args` rebuild `fn` through the registry
  std::function<Signature> fn;
  SimTiming sim;              // how the ideal-time simulator models a call

  Callable() = default;
  template <typename F>
  requires std::is_constructible_v<std::function<Signature>, F> Callable(F f,
                                                                         std::string label = "fn")
      : name(std::move(label)), fn(std::move(f)) {}  // NOLINT
};

class Dataset;
using Function = Callable<Element(Element)>;          // map: takes the element, returns the result
using Predicate = Callable<bool(const Element&)>;     // filter
using DatasetFn = Callable<Dataset(const Element&)>;  // interleave: one input pipeline per element
// generator: a factory called once per iteration, returning the pull function of that iteration
// (std::nullopt ends the sequence).
using GeneratorFn = Callable<std::function<std::optional<Element>()>()>;

struct MapOptions {
  int64_t parallelism = 0;    // 0: sequential on the caller's thread; >= 1 or kAutotune: workers
  bool deterministic = true;  // false: yield results as they complete
  std::string name;           // stage name; default "map '<function name>'"
};

struct MapAndBatchOptions {
  int64_t batch_size = 1;
  bool drop_remainder = false;
  int64_t parallelism = 0;  // as MapOptions::parallelism
  std::string name;         // stage name; default "map_and_batch '<function name>'"
};

struct InterleaveOptions {
  int64_t cycle_length = kAutotune;  // inputs open at once; kAutotune: number of cores
  int64_t block_length = 1;          // consecutive elements taken from one input
  int64_t parallelism = 0;           // 0: sequential; >= 1 or kAutotune: workers fill inputs
  bool deterministic = true;
  // Parallel: elements each open input buffers ahead (tf.data's buffer_output_elements); 0:
  // block_length, at least 2. Deeper buffers let workers run ahead of a consumer that takes
  // elements in bursts, and wake it less often when elements are quick.
  int64_t buffer_output_elements = 0;
  // Parallel: input pipelines opened before the cycle needs them (tf.data's
  // prefetch_input_elements), in input order, and pulled by the same workers once the open slots
  // have their buffers' worth; a slot whose input ended takes the oldest of them. 0: a slot's next
  // input is opened only when the consumer finds the slot drained, so inputs of one element each
  // (files of one sample) are read in rounds: every worker starts its next read when the consumer
  // has passed all the slots, and a round lasts as long as its slowest read.
  int64_t prefetch_input_elements = 0;
  std::string name;
};

struct ShuffleOptions {
  std::optional<uint64_t> seed;  // fixed seed: the same order on every run
  bool reshuffle_each_iteration = true;
};

struct ArtificialOptions {
  double open_ms = 30;      // sleep when the iterator is first pulled ("open a file")
  double read_ms = 15;      // sleep before each element ("read a record")
  int64_t num_samples = 3;  // elements: the sample index 0..num_samples-1 as an int64 scalar
};

// multiprocess / shared_store: `producers` processes, each running the producer pipeline (the
// DatasetFn called with the producer's index as an int64 scalar) and sending its elements to the
// consuming process. See ops/multiprocess.h and ops/shared_store.h.
//
// Order: by default elements come in arrival order (whichever producer's element is ready first;
// each producer's own elements keep their order). deterministic = true takes them round-robin over
// the producers (0, 1, ..., producers - 1, 0, ...), skipping producers that have ended: the same
// order on every run.
struct MultiprocessOptions {
  int64_t producers = 8;
  // Elements produced and not yet received, across all producers (the article's
  // Queue(cpu_count() * 2)); with deterministic order each producer may have
  // max(1, ceil(queue_capacity / producers)) of them.
  int64_t queue_capacity = 16;
  bool deterministic = false;
};

struct SharedStoreOptions {
  int64_t producers = 8;
  // Objects allocated in the store and not yet handed to the consumer (being written or sealed),
  // across all producers; with deterministic order, max(1, ceil(queue_capacity / producers)) each.
  int64_t queue_capacity = 16;
  int64_t store_mb = 2048;  // capacity of the shared-memory store, MiB
  bool deterministic = false;
};

class DatasetNode;
class StorageContext;

// How a pipeline runs: what its file sources read remote objects with (remote.h: the read
// policy, a disk cache, the counters). nullptr: the default policy, no cache, not counted.
struct IterateOptions {
  std::shared_ptr<const StorageContext> storage;
};

class Dataset {
 public:
  explicit Dataset(std::shared_ptr<const DatasetNode> node) : node_(std::move(node)) {}

  const DatasetNode& node() const { return *node_; }
  const std::shared_ptr<const DatasetNode>& shared_node() const { return node_; }

  Dataset map(Function fn, MapOptions options = {}) const;
  Dataset interleave(DatasetFn fn, InterleaveOptions options = {}) const;
  Dataset prefetch(int64_t buffer_size = kAutotune) const;
  Dataset batch(int64_t batch_size, bool drop_remainder = false) const;
  Dataset cache() const;
  // On disk: written during the first complete pass, read by later ones (ops/cache.h).
  Dataset cache(std::string filename) const;
  // map(fn) then batch(), fused (ops/map_and_batch.h).
  Dataset map_and_batch(Function fn, MapAndBatchOptions options) const;
  Dataset shuffle(int64_t buffer_size, ShuffleOptions options = {}) const;
  Dataset repeat(int64_t count = -1) const;  // -1: forever
  Dataset take(int64_t count) const;         // -1: all
  Dataset skip(int64_t count) const;         // -1: all
  Dataset filter(Predicate predicate) const;
  Dataset shard(int64_t num_shards, int64_t index) const;

  // A fresh iterator tree with its own model. Throws PipelineError when the graph is invalid.
  std::unique_ptr<Iterator> iterate(IterateOptions options = {}) const;

  // The spec of this pipeline: {"stages": [...]}, source first. Throws SpecError when a stage
  // holds a C++ callable that has no registry name.
  nlohmann::json to_json() const;

  // Runs one epoch and returns up to `limit` elements (-1: all). A convenience for tests and tools.
  std::vector<Element> collect(int64_t limit = -1) const;

 private:
  std::shared_ptr<const DatasetNode> node_;
};

// Sources.
Dataset range(int64_t stop);
Dataset range(int64_t start, int64_t stop, int64_t step = 1);
Dataset from_tensors(Element element);                    // yields `element` once
Dataset from_tensor_slices(Element element);              // yields the rows of each component
Dataset from_vector(const std::vector<int64_t>& values);  // yields int64 scalars
Dataset generator(GeneratorFn fn);
Dataset artificial(ArtificialOptions options = {});
Dataset zip(
    std::vector<Dataset> inputs);  // tuples of the inputs' components; ends with the shortest
// Process-based sources (Linux): producer processes and a socket (multiprocess, copies every byte
// through the kernel) or a shared-memory object store (shared_store, zero copy for the consumer).
Dataset multiprocess(DatasetFn producer, MultiprocessOptions options = {});
// The rate in GB/s at which one side of the multiprocess transport's socket (a socket pair with
// its buffers) receives a large element that a thread on the other side sends as fast as it can:
// the best of `copies` receives of `bytes` each, into a buffer touched beforehand. The kernel
// copies every byte into its buffers and out again; the simulator charges a multiprocess
// element's receive at this rate (sim::MeasuredRates::socket_gb_per_s). 0 when it could not be
// measured (no socket, thread or memory, a failed or a 30 s receive); it throws nothing.
double measure_socket_receive_gb_per_s(size_t bytes = size_t{48} << 20, int copies = 6);
Dataset shared_store(DatasetFn producer, SharedStoreOptions options = {});
// The rate in GB/s at which a large element is written into object-store pages that no process
// has written before: a fresh store of `bytes`, the object's pages mapped for writing and the
// element copied in, as a shared_store producer does, from a buffer touched beforehand; the best of
// `tries`. The simulator charges a shared_store producer's first object at this rate where it
// may be written before any space could be reused (sim::MeasuredRates::store_first_write_gb_per_s;
// pipelines/src/ops/process_source_sim.cc). With a CUDA step alive the store is registered, its
// pages faulted in, and the rate comes out faster, which keeps the ideal a lower bound. 0 when it
// could not be measured (no memory for the store); it throws nothing.
double measure_store_first_write_gb_per_s(size_t bytes = size_t{48} << 20, int tries = 3);

// A node of the graph: one operation and its inputs. Immutable once built (the cache's store is
// the one piece of shared state, and it is internally synchronized).
class DatasetNode {
 public:
  virtual ~DatasetNode() = default;
  DatasetNode(const DatasetNode&) = delete;
  DatasetNode& operator=(const DatasetNode&) = delete;

  virtual std::string_view op() const = 0;
  // The stage's name in statistics, traces and errors, e.g. "map 'mapped_function'".
  virtual std::string display_name() const { return std::string(op()); }
  // The stage's parameters by field name (defaults included), without its main input.
  virtual nlohmann::json params() const = 0;
  // The spec entry {"op": ..., ...}: params() written through the operation's registration
  // (registry.h), which leaves out values equal to their defaults.
  nlohmann::json to_json() const;
  virtual std::unique_ptr<Iterator> make_iterator(const IteratorContext& ctx) const = 0;
  // How many elements every iterator of this node yields, where the node knows before it runs (a
  // reader of whole files: one per file); std::nullopt where it does not. An iterator of a node
  // that states a number yields exactly that many or fails.
  virtual std::optional<int64_t> cardinality() const { return std::nullopt; }

  const std::vector<Dataset>& inputs() const { return inputs_; }
  // A source starts a chain (range, ..., zip); any other stage transforms inputs()[0].
  bool is_source() const { return source_; }
  // Position in its chain: 0 for a source, input's + 1 otherwise ("stages[i]" of the spec).
  int chain_index() const { return chain_index_; }

 protected:
  // A transformation of `input`.
  explicit DatasetNode(Dataset input);
  // A source; `inputs` are the nested pipelines it reads (zip), if any.
  explicit DatasetNode(std::vector<Dataset> inputs = {});

 private:
  std::vector<Dataset> inputs_;
  bool source_ = true;
  int chain_index_ = 0;
};

}  // namespace pipeprof::pipelines
