#include "ops/multiprocess.h"

#include <fmt/format.h>

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <limits>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "mp/buffer_pool.h"
#include "mp/channel.h"
#include "mp/process_group.h"
#include "mp/producer.h"
#include "mp/producer_poll.h"
#include "mp/shared_semaphores.h"
#include "mp/unique_fd.h"
#include "ops/common.h"
#include "pipeprof/pipelines/serialization.h"
#include "ops/stage_reader.h"
#include "pipeprof/pipelines/registry.h"
#include "pipeprof/pipelines/waits.h"
#include "pipeprof/trace/clock.h"

namespace pipeprof::pipelines {
namespace ops {
namespace {

// Each socket's buffers: the fewer times a large element fills them, the fewer hand-overs between
// producer and consumer (16 MiB against 4: the Ray experiment's steady wait 1.18-1.28 times its
// copy floor instead of 1.31-1.35). Where the process may not exceed net.core.[rw]mem_max, that.
constexpr int kSocketBufferBytes = 16 << 20;
constexpr int kPollSliceMs = 50;
// Tensors of at least this many bytes are received into recycled buffers.
constexpr uint64_t kPooledBytes = 1 << 20;
alignas(64) constexpr std::byte kZeros[kPayloadAlignment] = {};

int64_t slots_per_semaphore(const MultiprocessOptions& o) {
  return o.deterministic ? std::max<int64_t>(1, (o.queue_capacity + o.producers - 1) / o.producers)
                         : o.queue_capacity;
}

// Sends one element: kElement, body = u64 layout size, layout, payload (tensors written in place,
// zero padding between them).
void send_element(int fd, const Element& e) {
  const ElementLayout layout = layout_of(e);
  std::vector<std::byte> head;
  const std::vector<std::byte> encoded = encode_layout(layout);
  mp::append_pod<uint64_t>(head, encoded.size());
  head.insert(head.end(), encoded.begin(), encoded.end());
  std::vector<iovec> parts;
  uint64_t at = 0;
  for (size_t i = 0; i < e.size(); ++i) {
    const TensorLayout& t = layout.tensors[i];
    if (t.offset > at) parts.push_back({const_cast<std::byte*>(kZeros), t.offset - at});
    parts.push_back({const_cast<std::byte*>(e[i].data()), t.nbytes});
    at = t.offset + t.nbytes;
  }
  if (layout.payload_bytes > at)
    parts.push_back({const_cast<std::byte*>(kZeros), layout.payload_bytes - at});
  mp::send_message(fd, mp::MessageKind::kElement, head, parts);
}

// The producer side in the child: the pipeline thread takes a queue slot for each element and
// hands it to a sender thread that writes it to the socket.
class Sender {
 public:
  explicit Sender(int fd) : fd_(fd), thread_([this] { run(); }) {}
  ~Sender() {
    try {
      close();
    } catch (const mp::ChannelError&) {
      // The consumer is gone; the producer is exiting anyway.
    }
  }

  void push(Element&& e) {
    std::unique_lock lock(mu_);
    if (failed_) throw mp::ChannelError(error_, true);
    queue_.push_back(std::move(e));
    cv_.notify_all();
  }
  // Waits until everything is sent; throws if a send failed.
  void close() {
    {
      std::lock_guard lock(mu_);
      closed_ = true;
      cv_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
    if (failed_) throw mp::ChannelError(error_, true);
  }

 private:
  void run() {
    while (true) {
      Element e;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return closed_ || !queue_.empty(); });
        if (queue_.empty()) return;
        e = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        send_element(fd_, e);
      } catch (const std::exception& ex) {
        std::lock_guard lock(mu_);
        failed_ = true;
        error_ = ex.what();
        return;
      }
    }
  }

  int fd_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Element> queue_;
  bool closed_ = false;
  bool failed_ = false;
  std::string error_;
  std::thread thread_;
};

class MultiprocessIterator final : public Iterator {
 public:
  MultiprocessIterator(const IteratorContext& ctx, const MultiprocessNode& node)
      : Iterator(ctx, &node),
        node_(node),
        n_(static_cast<int>(node.options.producers)),
        slots_(node.options.deterministic ? n_ : 1,
               static_cast<unsigned>(slots_per_semaphore(node.options))),
        want_(static_cast<size_t>(n_), true),
        buffers_(mp::BufferPool::create(static_cast<size_t>(node.options.queue_capacity) + 2)),
        tracing_(trace::Recorder::global().enabled()) {
    group_ = std::make_unique<mp::ProcessGroup>(
        n_, [this](int i, int fd) { return producer_main(i, fd); }, kSocketBufferBytes);
    stats().buffer_capacity.store(node.options.queue_capacity);
  }

  ~MultiprocessIterator() override { group_.reset(); }

 protected:
  std::optional<Element> next_impl() override {
    // A failure is sticky: the producers behind it are not trusted any more.
    if (!error_.empty()) throw_failure();
    return pull();
  }

 private:
  int producer_main(int i, int fd) {
    const int sem = node_.options.deterministic ? i : 0;
    Sender sender(fd);
    mp::ProducerTask task{.index = i,
                          .socket_fd = fd,
                          .trace = tracing_,
                          .pipeline = &node_.producer,
                          .storage = storage(),
                          .emit =
                              [&](Element&& e) {
                                slots_.acquire(sem);
                                sender.push(std::move(e));
                              },
                          .finish = [&] { sender.close(); }};
    return mp::run_producer(task);
  }

  // `input`: a producer's pipeline failed on its input data (bad input, as in-process).
  [[noreturn]] void fail(const std::string& message, bool input = false) {
    error_ = message;
    input_error_ = input;
    throw_failure();
  }
  [[noreturn]] void throw_failure() const {
    if (input_error_) throw InputDataError(stage_name(), error_);
    throw PipelineError(stage_name(), error_);
  }

  bool keep_going() const { return !cancellation().cancelled(); }

  std::optional<Element> pull() {
    while (true) {
      int live = 0;
      for (bool w : want_)
        live += w ? 1 : 0;
      if (live == 0) return std::nullopt;
      // Deterministic: only the producer whose turn it is; otherwise whoever is ready first.
      std::vector<bool> watch = want_;
      if (node_.options.deterministic) {
        while (!want_[static_cast<size_t>(turn_)])
          turn_ = (turn_ + 1) % n_;
        watch.assign(watch.size(), false);
        watch[static_cast<size_t>(turn_)] = true;
      }
      mp::PollResult ready;
      {
        BlockedScope blocked(*this);
        auto what = [&] {
          std::string names;
          for (size_t k = 0; k < watch.size(); ++k) {
            if (watch[k]) names += (names.empty() ? "" : ", ") + group_->name_with_state(static_cast<int>(k));
          }
          return fmt::format("{}: an element from {}", stage_name(), names);
        };
        WaitScope waiting(what);
        while (ready.readable.empty() && ready.exited.empty()) {
          if (!keep_going()) return std::nullopt;
          ready = mp::poll_producers(*group_, watch, first_, kPollSliceMs);
        }
      }
      for (int i : ready.exited) {
        group_->reap(i, 0);
        const int status = group_->wait_status(i);
        // A producer that died of a signal is an error at once; one that exited has left its
        // last messages (kEnd or kError) in its socket.
        if (group_->reaped(i) && WIFSIGNALED(status))
          fail(group_->name(i) + " " + mp::describe_exit(status));
      }
      if (ready.readable.empty()) continue;
      const int i = ready.readable.front();
      first_ = (i + 1) % n_;
      if (auto e = read_message(i)) {
        if (node_.options.deterministic) turn_ = (turn_ + 1) % n_;
        return e;
      }
    }
  }

  // Reads one message from producer i: an element, or nullopt after a trace or its end.
  std::optional<Element> read_message(int i) {
    const int fd = group_->socket(i);
    auto go = [this] { return keep_going(); };
    try {
      std::byte raw[sizeof(mp::MessageHeader)];
      if (!mp::recv_exact_polled(fd, raw, sizeof raw, go)) return std::nullopt;
      const mp::MessageHeader h = mp::parse_header(raw);
      note_progress();
      if (h.kind == mp::MessageKind::kElement) return read_element(i, h.body_bytes);
      if (h.kind != mp::MessageKind::kEnd && h.kind != mp::MessageKind::kError &&
          h.kind != mp::MessageKind::kInputError && h.kind != mp::MessageKind::kTrace) {
        fail(fmt::format("{}: unexpected message kind {}", group_->name(i),
                         static_cast<uint32_t>(h.kind)));
      }
      std::string text(h.body_bytes, '\0');
      if (!mp::recv_exact_polled(fd, reinterpret_cast<std::byte*>(text.data()), text.size(), go))
        return std::nullopt;
      if (h.kind == mp::MessageKind::kError || h.kind == mp::MessageKind::kInputError)
        fail(group_->name(i) + ": " + text, h.kind == mp::MessageKind::kInputError);
      if (h.kind == mp::MessageKind::kTrace) {
        mp::merge_producer_trace(text, i);
      } else {
        want_[static_cast<size_t>(i)] = false;
        group_->reap(i, 1000);
      }
      return std::nullopt;
    } catch (const mp::ChannelError& e) {
      if (e.eof()) fail(mp::describe_lost_producer(*group_, i));
      fail(group_->name(i) + ": " + e.what());
    }
  }

  std::optional<Element> read_element(int i, uint64_t body_bytes) {
    const int fd = group_->socket(i);
    auto go = [this] { return keep_going(); };
    uint64_t layout_bytes = 0;
    if (body_bytes < sizeof layout_bytes)
      fail(fmt::format("{}: element message of {} bytes", group_->name(i), body_bytes));
    if (!mp::recv_exact_polled(fd, reinterpret_cast<std::byte*>(&layout_bytes), sizeof layout_bytes,
                               go))
      return std::nullopt;
    if (layout_bytes > body_bytes - sizeof layout_bytes || layout_bytes > (1u << 20))
      fail(fmt::format("{}: element layout of {} bytes", group_->name(i), layout_bytes));
    std::vector<std::byte> raw(layout_bytes);
    if (!mp::recv_exact_polled(fd, raw.data(), raw.size(), go)) return std::nullopt;
    ElementLayout layout;
    try {
      layout = decode_layout(raw, body_bytes - sizeof layout_bytes - layout_bytes);
    } catch (const SerializationError& e) {
      fail(group_->name(i) + ": " + e.what());
    }
    if (layout.payload_bytes != body_bytes - sizeof layout_bytes - layout_bytes)
      fail(fmt::format("{}: payload size does not match its layout", group_->name(i)));
    Element out;
    out.reserve(layout.tensors.size());
    uint64_t at = 0;
    std::byte pad[kPayloadAlignment];
    for (const TensorLayout& t : layout.tensors) {
      if (t.offset > at && !mp::recv_exact_polled(fd, pad, t.offset - at, go)) return std::nullopt;
      Tensor tensor = t.nbytes >= kPooledBytes
                          ? Tensor::wrap(t.dtype, t.shape, buffers_->get(t.nbytes))
                          : Tensor(t.dtype, t.shape);
      if (t.nbytes > 0 && !mp::recv_exact_polled(fd, tensor.mutable_data(), t.nbytes, go))
        return std::nullopt;
      out.push_back(std::move(tensor));
      at = t.offset + t.nbytes;
    }
    if (layout.payload_bytes > at && !mp::recv_exact_polled(fd, pad, layout.payload_bytes - at, go))
      return std::nullopt;
    slots_.release(node_.options.deterministic ? i : 0);
    // One copy into the socket by the producer, one out of it here.
    stats().bytes_copied.fetch_add(static_cast<int64_t>(2 * layout.payload_bytes),
                                   std::memory_order_relaxed);
    return out;
  }

  const MultiprocessNode& node_;
  const int n_;
  mp::SharedSemaphores slots_;
  std::vector<bool> want_;                   // producers that have not ended
  std::shared_ptr<mp::BufferPool> buffers_;  // receive buffers, recycled
  bool tracing_;
  std::unique_ptr<mp::ProcessGroup> group_;  // destroyed first: the children use slots_
  int first_ = 0;
  int turn_ = 0;
  std::string error_;
  bool input_error_ = false;  // error_ is a producer's bad input data
};

}  // namespace

nlohmann::json MultiprocessNode::params() const {
  if (!producer.serializable) {
    throw SpecError("multiprocess: a C++ producer pipeline has no spec and cannot be written");
  }
  return {{"producers", options.producers},
          {"queue_capacity", options.queue_capacity},
          {"deterministic", options.deterministic},
          {"pipeline", producer.args}};
}

std::unique_ptr<Iterator> MultiprocessNode::make_iterator(const IteratorContext& ctx) const {
  return std::make_unique<MultiprocessIterator>(ctx, *this);
}

std::vector<FieldSpec> process_source_fields(std::optional<FieldSpec> extra) {
  FieldSpec pipeline{.name = "pipeline", .type = FieldType::kPipeline, .required = true,
                     .doc = "what each producer runs; \"$element\" is the producer's index"};
  FieldSpec producers{.name = "producers", .type = FieldType::kTunable, .fallback = 8, .min = 1,
                      .max = kMaxProducers,
                      .knob = KnobRule{.kind = KnobKind::kProducers, .online = false, .start = 8}};
  FieldSpec queue_capacity{
      .name = "queue_capacity", .type = FieldType::kTunable, .fallback = 16, .min = 1,
      .max = kMaxQueueCapacity,
      .knob = KnobRule{.kind = KnobKind::kQueueCapacity, .online = false, .start = 16},
      .bytes_each = kMinElementBytes};
  FieldSpec deterministic{.name = "deterministic", .type = FieldType::kBoolean, .fallback = false};
  if (!extra) return {pipeline, producers, queue_capacity, deterministic};
  return {pipeline, producers, queue_capacity, *extra, deterministic};
}

const OpRegistration& multiprocess_registration() {
  static const OpRegistration kOp{
      .name = "multiprocess",
      .kind = OpKind::kSource,
      .summary = "producer processes sending their elements over sockets",
      .fields = process_source_fields(std::nullopt),
      .build = [](const StageReader& s, const Dataset*) {
        return multiprocess(s.pipeline("pipeline"),
                            {.producers = s.tunable_or_start("producers"),
                             .queue_capacity = s.tunable_or_start("queue_capacity"),
                             .deterministic = s.boolean("deterministic")});
      },
      .simulate = simulate_process_source};
  return kOp;
}

}  // namespace ops

double measure_socket_receive_gb_per_s(size_t bytes, int copies) {
  bytes = std::max<size_t>(bytes, 1);
  copies = std::max(copies, 1);
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return 0;
  mp::UniqueFd receiver(sv[0]), sender(sv[1]);
  mp::set_socket_buffers(receiver.get(), ops::kSocketBufferBytes);
  mp::set_socket_buffers(sender.get(), ops::kSocketBufferBytes);
  // A receive that has not ended by then is given up (the machine is far too slow to be timed).
  const int64_t deadline = trace::now_ns() + int64_t{30'000'000'000};
  int64_t best = std::numeric_limits<int64_t>::max();
  try {
    std::vector<std::byte> sent(bytes, std::byte{1});
    std::vector<std::byte> received(bytes);  // zeroed: its pages are touched before the timing
    // The sender is a thread: the kernel's work per byte is the same as from a producer process.
    std::jthread send([&] {
      try {
        const iovec part{sent.data(), bytes};
        for (int i = 0; i < copies; ++i)
          mp::send_all(sender.get(), std::span<const iovec>(&part, 1));
      } catch (...) {
        // The receiver gave up (its end was shut down), or the send failed: the receiver then
        // reads the end of the stream.
        ::shutdown(sender.get(), SHUT_WR);
      }
    });
    try {
      for (int i = 0; i < copies; ++i) {
        const int64_t t0 = trace::now_ns();
        if (!mp::recv_exact_polled(receiver.get(), received.data(), bytes,
                                   [&] { return trace::now_ns() < deadline; })) {
          throw mp::ChannelError("the socket's receive rate: no end within 30 s", false);
        }
        best = std::min(best, std::max<int64_t>(1, trace::now_ns() - t0));
      }
    } catch (...) {
      ::shutdown(receiver.get(), SHUT_RDWR);  // ends a send still waiting, before the join
      throw;
    }
  } catch (...) {
    return 0;  // the thread or the buffers could not be had, or the receive failed
  }
  return static_cast<double>(bytes) / static_cast<double>(best);
}

Dataset multiprocess(DatasetFn producer, MultiprocessOptions options) {
  if (!producer.fn) throw std::invalid_argument("multiprocess: empty producer function");
  if (options.producers < 1 || options.producers > ops::kMaxProducers)
    throw std::invalid_argument(fmt::format("multiprocess: producers must be in [1, {}], got {}",
                                            ops::kMaxProducers, options.producers));
  if (options.queue_capacity < 1 || options.queue_capacity > ops::kMaxQueueCapacity)
    throw std::invalid_argument(
        fmt::format("multiprocess: queue_capacity must be in [1, {}], got {}",
                    ops::kMaxQueueCapacity, options.queue_capacity));
  return Dataset(std::make_shared<ops::MultiprocessNode>(std::move(producer), options));
}

}  // namespace pipeprof::pipelines
