#include "ops/shared_store.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "mp/channel.h"
#include "mp/cpu_turns.h"
#include "pages.h"
#include "ops/multiprocess.h"
#include "mp/object_store.h"
#include "mp/process_group.h"
#include "mp/producer.h"
#include "mp/producer_poll.h"
#include "ops/common.h"
#include "pipeprof/pipelines/serialization.h"
#include "ops/stage_reader.h"
#include "pipeprof/pipelines/registry.h"
#include "pipeprof/pipelines/waits.h"

namespace pipeprof::pipelines {
namespace ops {
namespace {

constexpr int kPollSliceMs = 50;
constexpr uint64_t kMaxLayoutBytes = 1 << 20;

// A sealed object waiting for the consumer.
struct Ready {
  uint64_t id = 0;
  ElementLayout layout;
  std::string error;  // set instead: the producer's pipeline failed after its earlier elements
  bool input = false;  // ... on its input data (bad input, as in-process)
};

struct Request {
  int producer = 0;
  uint64_t bytes = 0;
};

// The producer side in the child: space, write, seal.
void store_element(int fd, std::byte* base, int index, const Element& e) {
  const ElementLayout layout = layout_of(e);
  std::vector<std::byte> ask;
  mp::append_pod<uint64_t>(ask, layout.payload_bytes);
  mp::send_message(fd, mp::MessageKind::kAllocate, ask);
  std::byte raw[sizeof(mp::MessageHeader)];
  mp::recv_exact(fd, raw, sizeof raw);
  const mp::MessageHeader h = mp::parse_header(raw);
  uint64_t grant[2] = {0, 0};  // object id, offset
  if (h.kind != mp::MessageKind::kGrant || h.body_bytes != sizeof grant)
    throw std::runtime_error("the consumer answered an allocation with an unexpected message");
  mp::recv_exact(fd, reinterpret_cast<std::byte*>(grant), sizeof grant);
  if (grant[1] == mp::kNoGrant) {
    throw std::runtime_error(
        fmt::format("producer {}: the object store refused an element of {} bytes", index,
                    layout.payload_bytes));
  }
  // The element's tensors may view a file mapping not read yet: read it in first, outside the
  // CPU turn, which never covers a wait for the disk.
  for (const Tensor& t : e)
    fault_in_for_read(std::span<const std::byte>(t.data(), t.nbytes()));
  {
    // In a timeline, the producer's span of its turn and its copy into the store.
    static const trace::NameId kWrite = trace::Recorder::global().intern("shared_store: write");
    trace::ScopedSpan span(kWrite, trace::category::pipeline());
    const mp::CpuTurn turn;  // the copy is CPU work; the wait for space above is not
    // The object's pages mapped in one call rather than one fault per page.
    const std::span<std::byte> object(base + grant[1], layout.payload_bytes);
    fault_in_for_write(object);
    write_payload(e, layout, object);
  }
  std::vector<std::byte> sealed;
  mp::append_pod<uint64_t>(sealed, grant[0]);
  mp::append_pod<uint64_t>(sealed, layout.payload_bytes);  // bytes copied
  const std::vector<std::byte> encoded = encode_layout(layout);
  sealed.insert(sealed.end(), encoded.begin(), encoded.end());
  mp::send_message(fd, mp::MessageKind::kSealed, sealed);
}

class SharedStoreIterator final : public Iterator {
 public:
  SharedStoreIterator(const IteratorContext& ctx, const SharedStoreNode& node)
      : Iterator(ctx, &node),
        node_(node),
        n_(static_cast<int>(node.options.producers)),
        per_producer_(node.options.deterministic
                          ? std::max<int64_t>(1, (node.options.queue_capacity + n_ - 1) / n_)
                          : node.options.queue_capacity),
        store_(mp::ObjectStore::create(static_cast<uint64_t>(node.options.store_mb) << 20)),
        ready_(static_cast<size_t>(n_)),
        ended_(static_cast<size_t>(n_), false),
        tracing_(trace::Recorder::global().enabled()) {
    stats().buffer_capacity.store(node.options.queue_capacity);
    group_ = std::make_unique<mp::ProcessGroup>(
        n_, [this](int i, int fd) { return producer_main(i, fd); });
    service_ = std::thread([this] { serve(); });
  }

  ~SharedStoreIterator() override {
    stop_.store(true);
    store_->wake();  // the service thread sees stop_ now, not at the end of its poll's slice
    if (service_.joinable()) service_.join();
    group_.reset();
  }

 protected:
  std::optional<Element> next_impl() override {
    std::unique_lock lock(mu_);
    Ready r;
    {
      BlockedScope blocked(*this);
      auto what = [&] {  // the producers' names do not change while it runs
        std::string names;
        for (int k = 0; k < n_; ++k)
          names += (k == 0 ? "" : ", ") + group_->name_with_state(k);
        return fmt::format("{}: an element from {}", stage_name(), names);
      };
      WaitScope waiting(what);
      while (true) {
        if (!error_.empty()) throw_failure();
        if (cancellation().cancelled()) return std::nullopt;
        const int who = pick();
        if (who >= 0) {
          r = std::move(ready_[static_cast<size_t>(who)].front());
          ready_[static_cast<size_t>(who)].pop_front();
          if (node_.options.deterministic) {
            turn_ = (who + 1) % n_;
          } else {
            arrival_.pop_front();
          }
          if (!r.error.empty()) {
            error_ = r.error;
            input_error_ = r.input;
            throw_failure();
          }
          break;
        }
        if (who == kAllEnded) return std::nullopt;
        waiting_for_ = node_.options.deterministic ? turn_ : -1;
        cv_.wait_for(lock, std::chrono::milliseconds(kPollSliceMs));
      }
      waiting_for_ = -2;
    }
    lock.unlock();
    std::shared_ptr<std::byte> object = store_->take(r.id);
    Element out;
    out.reserve(r.layout.tensors.size());
    for (const TensorLayout& t : r.layout.tensors) {
      out.push_back(Tensor::wrap(t.dtype, t.shape,
                                 std::shared_ptr<std::byte>(object, object.get() + t.offset)));
    }
    set_buffered(static_cast<int64_t>(store_->pending()));
    return out;
  }

 private:
  static constexpr int kAllEnded = -2;

  int producer_main(int i, int fd) {
    std::byte* base = store_->base();
    mp::ProducerTask task{.index = i,
                          .socket_fd = fd,
                          .trace = tracing_,
                          .pipeline = &node_.producer,
                          .storage = storage(),
                          .emit = [&](Element&& e) { store_element(fd, base, i, e); },
                          .finish = {}};
    return mp::run_producer(task);
  }

  // Under mu_: the producer whose sealed object comes next, -1 to wait, kAllEnded at the end.
  int pick() {
    if (!node_.options.deterministic) {
      if (!arrival_.empty()) return arrival_.front();
      for (int i = 0; i < n_; ++i)
        if (!ended_[static_cast<size_t>(i)]) return -1;
      return kAllEnded;
    }
    for (int k = 0; k < n_; ++k) {
      const int i = (turn_ + k) % n_;
      if (!ready_[static_cast<size_t>(i)].empty()) {
        turn_ = i;
        return i;
      }
      if (!ended_[static_cast<size_t>(i)]) {
        turn_ = i;
        return -1;
      }
    }
    return kAllEnded;
  }

  [[noreturn]] void throw_failure() const {
    if (input_error_) throw InputDataError(stage_name(), error_);
    throw PipelineError(stage_name(), error_);
  }

  void set_error(const std::string& message) {
    std::lock_guard lock(mu_);
    if (error_.empty()) error_ = message;
    cv_.notify_all();
  }
  bool failed() {
    std::lock_guard lock(mu_);
    return !error_.empty();
  }

  // The service thread: grants space, receives sealed objects, watches the producers.
  void serve() {
    prepare_worker_thread(stage_name(), 0);
    std::vector<bool> watch(static_cast<size_t>(n_), true);
    int first = 0;
    while (!stop_.load() && !failed()) {
      const mp::PollResult r =
          mp::poll_producers(*group_, watch, first, kPollSliceMs, store_->release_fd());
      if (r.extra_ready) store_->clear_release_signal();
      for (int i : r.exited) {
        group_->reap(i, 0);
        if (group_->reaped(i) && WIFSIGNALED(group_->wait_status(i))) {
          set_error(group_->name(i) + " " + mp::describe_exit(group_->wait_status(i)));
        }
      }
      for (int i : r.readable) {
        first = (i + 1) % n_;
        if (!receive(i)) watch[static_cast<size_t>(i)] = false;
      }
      grant();
      // Once every producer has ended, the space the consumer releases goes back to the kernel
      // here, while it still works on what it took, rather than in the unmapping at its end.
      store_->trim();
    }
  }

  // Handles one message of producer i; false once its socket is done.
  bool receive(int i) {
    const int fd = group_->socket(i);
    auto go = [this] { return !stop_.load(); };
    try {
      std::byte raw[sizeof(mp::MessageHeader)];
      if (!mp::recv_exact_polled(fd, raw, sizeof raw, go)) return true;
      const mp::MessageHeader h = mp::parse_header(raw);
      const uint64_t limit =
          h.kind == mp::MessageKind::kTrace ? (uint64_t{1} << 32) : kMaxLayoutBytes;
      if (h.body_bytes > limit)
        throw mp::ChannelError(fmt::format("message of {} bytes", h.body_bytes), false);
      std::vector<std::byte> body(h.body_bytes);
      if (!mp::recv_exact_polled(fd, body.data(), body.size(), go)) return true;
      const std::string text(reinterpret_cast<const char*>(body.data()), body.size());
      switch (h.kind) {
        case mp::MessageKind::kAllocate: {
          uint64_t bytes = 0;
          if (body.size() != sizeof bytes) throw mp::ChannelError("bad allocation request", false);
          std::memcpy(&bytes, body.data(), sizeof bytes);
          if (fits_store(bytes, i)) requests_.push_back({i, bytes});
          return true;
        }
        case mp::MessageKind::kSealed:
          sealed(i, body);
          return true;
        case mp::MessageKind::kTrace:
          mp::merge_producer_trace(text, i);
          return true;
        case mp::MessageKind::kEnd: {
          group_->reap(i, 1000);
          std::lock_guard lock(mu_);
          ended_[static_cast<size_t>(i)] = true;
          cv_.notify_all();
          if (std::all_of(ended_.begin(), ended_.end(), [](bool e) { return e; })) {
            store_->close();  // nobody asks for space any more
            requests_.clear();
          }
          return false;
        }
        case mp::MessageKind::kError:
        case mp::MessageKind::kInputError: {
          // Delivered after the producer's earlier elements, in their order.
          std::lock_guard lock(mu_);
          ready_[static_cast<size_t>(i)].push_back({0, {}, group_->name(i) + ": " + text,
                                                    h.kind == mp::MessageKind::kInputError});
          arrival_.push_back(i);
          ended_[static_cast<size_t>(i)] = true;
          cv_.notify_all();
          return false;
        }
        default:
          throw mp::ChannelError(
              fmt::format("unexpected message kind {}", static_cast<uint32_t>(h.kind)), false);
      }
    } catch (const mp::ChannelError& e) {
      set_error(e.eof() ? mp::describe_lost_producer(*group_, i)
                        : group_->name(i) + ": " + e.what());
      store_->drop_owner(i);
      return false;
    } catch (const std::exception& e) {
      set_error(group_->name(i) + ": " + e.what());
      store_->drop_owner(i);
      return false;
    }
  }

  // An element larger than the whole store can never be stored: refuse it and fail.
  bool fits_store(uint64_t bytes, int i) {
    if (mp::ArenaAllocator::block_size(bytes) <= store_->capacity()) return true;
    set_error(
        fmt::format("{}: an element of {} bytes does not fit in the object store of {} MiB "
                    "(raise store_mb)",
                    group_->name(i), bytes, node_.options.store_mb));
    answer(i, 0, mp::kNoGrant);
    return false;
  }

  void answer(int i, uint64_t id, uint64_t offset) {
    const uint64_t grant[2] = {id, offset};  // the body: object id, offset
    mp::send_message(group_->socket(i), mp::MessageKind::kGrant, std::as_bytes(std::span(grant)));
  }

  void sealed(int i, const std::vector<std::byte>& body) {
    uint64_t head[2];  // object id, bytes copied
    if (body.size() < sizeof head) throw mp::ChannelError("bad sealed message", false);
    std::memcpy(head, body.data(), sizeof head);
    auto it = granted_.find(head[0]);
    if (it == granted_.end() || it->second.first != i)
      throw std::runtime_error(fmt::format("sealed object {} was not granted to it", head[0]));
    ElementLayout layout = decode_layout(std::span(body).subspan(sizeof head), it->second.second);
    granted_.erase(it);
    store_->seal(head[0], i);
    note_progress();
    stats().bytes_copied.fetch_add(static_cast<int64_t>(head[1]), std::memory_order_relaxed);
    std::lock_guard lock(mu_);
    ready_[static_cast<size_t>(i)].push_back({head[0], std::move(layout)});
    arrival_.push_back(i);
    cv_.notify_all();
  }

  // Grants space to waiting requests, in order, while the pending limit and the store allow.
  void grant() {
    for (auto it = requests_.begin(); it != requests_.end();) {
      const int i = it->producer;
      const bool under_limit =
          static_cast<int64_t>(store_->pending(node_.options.deterministic ? i : -1)) <
          per_producer_;
      if (!under_limit) {
        ++it;
        continue;
      }
      const auto object = store_->create_object(it->bytes, i);
      if (!object) {
        check_stall(i);
        if (!node_.options.deterministic) return;  // first come, first served
        ++it;
        continue;
      }
      granted_[object->id] = {i, it->bytes};
      answer(i, object->id, object->offset);
      it = requests_.erase(it);
    }
  }

  // Deterministic order: the producer whose turn it is cannot get space and nothing the consumer
  // holds can free any: the store is too small for this order.
  void check_stall(int i) {
    if (!node_.options.deterministic) return;
    int waiting = -2;
    {
      std::lock_guard lock(mu_);
      waiting = waiting_for_;
    }
    if (waiting == i && store_->taken() == 0) {
      set_error(
          fmt::format("the object store of {} MiB is full of other producers' objects while "
                      "deterministic order waits for {} (raise store_mb)",
                      node_.options.store_mb, group_->name(i)));
    }
  }

  const SharedStoreNode& node_;
  const int n_;
  const int64_t per_producer_;
  std::shared_ptr<mp::ObjectStore> store_;
  std::unique_ptr<mp::ProcessGroup> group_;
  std::thread service_;
  std::atomic<bool> stop_{false};
  // Service thread only.
  std::deque<Request> requests_;
  std::map<uint64_t, std::pair<int, uint64_t>> granted_;  // id -> producer, bytes
  // Shared with next(), under mu_.
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::deque<Ready>> ready_;
  std::deque<int> arrival_;
  std::vector<bool> ended_;
  std::string error_;
  bool input_error_ = false;  // error_ is a producer's bad input data
  int turn_ = 0;
  int waiting_for_ = -2;
  bool tracing_;
};

}  // namespace

nlohmann::json SharedStoreNode::params() const {
  if (!producer.serializable) {
    throw SpecError("shared_store: a C++ producer pipeline has no spec and cannot be written");
  }
  return {{"producers", options.producers},
          {"queue_capacity", options.queue_capacity},
          {"store_mb", options.store_mb},
          {"deterministic", options.deterministic},
          {"pipeline", producer.args}};
}

std::unique_ptr<Iterator> SharedStoreNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<SharedStoreIterator>(ctx, *this);
}

const OpRegistration& shared_store_registration() {
  static const OpRegistration kOp{
      .name = "shared_store",
      .kind = OpKind::kSource,
      .summary = "producer processes writing into a shared-memory object store (zero copy)",
      .fields = process_source_fields(
          FieldSpec{.name = "store_mb", .type = FieldType::kInteger, .fallback = 2048, .min = 1,
                    .max = kMaxStoreMb, .bytes_each = int64_t{1} << 20, .doc = "capacity of the shared-memory store, MiB"}),
      .build = [](const StageReader& s, const Dataset*) {
        return shared_store(s.pipeline("pipeline"),
                            {.producers = s.tunable_or_start("producers"),
                             .queue_capacity = s.tunable_or_start("queue_capacity"),
                             .store_mb = s.integer("store_mb"),
                             .deterministic = s.boolean("deterministic")});
      },
      .simulate = simulate_process_source};
  return kOp;
}

}  // namespace ops

double measure_store_first_write_gb_per_s(size_t bytes, int tries) {
  bytes = std::max<size_t>(bytes, 1);
  try {
    const std::vector<std::byte> source(bytes, std::byte{1});  // written: its pages are touched
    int64_t best = 0;
    for (int i = 0; i < std::max(1, tries); ++i) {
      const auto store = mp::ObjectStore::create(bytes);
      const auto object = store->create_object(bytes, 0);
      if (!object) return 0;
      const std::span<std::byte> to(store->base() + object->offset, bytes);
      const int64_t t0 = trace::now_ns();
      fault_in_for_write(to);  // the producer's own steps (store_element)
      std::memcpy(to.data(), source.data(), bytes);
      const int64_t dt = trace::now_ns() - t0;
      if (best == 0 || dt < best) best = dt;
    }
    return best > 0 ? static_cast<double>(bytes) / static_cast<double>(best) : 0;
  } catch (const std::exception&) {
    return 0;  // no memory for the store or the source
  }
}

Dataset shared_store(DatasetFn producer, SharedStoreOptions options) {
  if (!producer.fn) throw std::invalid_argument("shared_store: empty producer function");
  if (options.producers < 1 || options.producers > ops::kMaxProducers)
    throw std::invalid_argument(fmt::format("shared_store: producers must be in [1, {}], got {}",
                                            ops::kMaxProducers, options.producers));
  if (options.queue_capacity < 1 || options.queue_capacity > ops::kMaxQueueCapacity)
    throw std::invalid_argument(
        fmt::format("shared_store: queue_capacity must be in [1, {}], got {}",
                    ops::kMaxQueueCapacity, options.queue_capacity));
  if (options.store_mb < 1 || options.store_mb > ops::kMaxStoreMb)
    throw std::invalid_argument(fmt::format("shared_store: store_mb must be in [1, {}], got {}",
                                            ops::kMaxStoreMb, options.store_mb));
  return Dataset(std::make_shared<ops::SharedStoreNode>(std::move(producer), options));
}

}  // namespace pipeprof::pipelines
