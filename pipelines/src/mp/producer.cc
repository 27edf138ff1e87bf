#include "mp/producer.h"

#include <fmt/format.h>

#include <sstream>

#include "mp/channel.h"
#include "pipeprof/pipelines/errors.h"
#include "pipeprof/pipelines/remote.h"
#include "pipeprof/trace/chrome_json.h"
#include "pipeprof/trace/recorder.h"

namespace pipeprof::pipelines::mp {
namespace {

// The producer's own storage context: the consumer's read policy, and its cache's folder opened
// anew. The consumer's cache object is not used here: its locks and its fetches in flight belong
// to the consumer's threads, which the fork did not copy.
std::shared_ptr<const StorageContext> producer_storage(const std::shared_ptr<const StorageContext>& consumer) {
  if (!consumer) return nullptr;
  std::shared_ptr<RemoteCache> cache;
  if (consumer->cache()) cache = std::make_shared<RemoteCache>(consumer->cache()->options());
  return std::make_shared<StorageContext>(consumer->read_options(), std::move(cache));
}

}  // namespace

int run_producer(const ProducerTask& task) {
  trace::Recorder& rec = trace::Recorder::global();
  if (task.trace) {
    rec.start();
    rec.set_process_name(fmt::format("producer {}", task.index));
    rec.set_thread_name(fmt::format("producer {}", task.index));
  }
  try {
    try {
      const Dataset dataset = task.pipeline->fn(scalar_element(task.index));
      auto it = dataset.iterate({.storage = producer_storage(task.storage)});
      while (auto e = it->next())
        task.emit(std::move(*e));
      it.reset();
      if (task.finish) task.finish();
    } catch (const ChannelError&) {
      throw;
    } catch (const std::exception& e) {
      const std::string text = e.what();
      // Bad input data stays bad input on the consumer's side (the same exit code as in-process).
      const MessageKind kind = dynamic_cast<const InputDataError*>(&e) != nullptr
                                   ? MessageKind::kInputError
                                   : MessageKind::kError;
      // The elements before the failure go first (the sender must not write concurrently).
      if (task.finish) task.finish();
      send_message(task.socket_fd, kind, std::as_bytes(std::span(text.data(), text.size())));
      return 1;
    }
    if (task.trace) {
      std::ostringstream json;
      trace::write_chrome_json(rec.stop(), json);
      const std::string text = json.str();
      send_message(task.socket_fd, MessageKind::kTrace,
                   std::as_bytes(std::span(text.data(), text.size())));
    }
    send_message(task.socket_fd, MessageKind::kEnd, {});
    return 0;
  } catch (const ChannelError&) {
    return 2;  // the consumer is gone: nobody to report to
  }
}

}  // namespace pipeprof::pipelines::mp
