// Reading a trace file a part at a time (chrome_json_parts.h).
#include "chrome_json_parts.h"

#include <condition_variable>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "chrome_json_document.h"
#include "padded_buffer.h"
#include "pipeprof/trace/huge_pages.h"
#include "text_source.h"

namespace pipeprof::trace::detail {
namespace {

// Reading a trace file a part at a time, so that memory holds the model and a part or two of the
// text rather than the whole text and simdjson's index of it.
//
// The top level up to the events ("[" or {"...": ..., "traceEvents": [) is found in the first
// bytes and checked; then the events are read in parts of about part_bytes: a part ends after an
// event's "}" followed by "," and the next event's "{". The last such place in the part is taken;
// when it falls inside a string (one holding "}, {"), simdjson's first stage finds a string that
// does not end before any event is read, and the last such place outside strings is taken
// instead (a scan of the part's strings). What is left when the text ends (the last
// events and the rest of the top level) is read with the top level's beginning as one document,
// through the same code as a whole trace. Anything this does not expect (NotStreamable) and any
// error read the file again whole, so that messages and offsets are those of a whole read.

constexpr size_t kMostPrefixBytes = size_t{64} << 20;  // the top level before "traceEvents"
constexpr size_t kMostPartBytes = size_t{1} << 30;     // one event (or cut) larger: read whole
constexpr size_t kPartsBeyondWorkers = 5;              // read_parts_in_parallel's

// Text read so far, with simdjson's padding behind it; grows as needed.
class Window {
 public:
  explicit Window(size_t part_bytes) : part_bytes_(part_bytes) { reserve(part_bytes + 1); }
  size_t part_bytes() const { return part_bytes_; }
  char* data() { return data_.get(); }
  size_t size() const { return size_; }
  char& operator[](size_t i) { return data_[i]; }
  // The text in [0, size) with all the allocation behind it as padding.
  simdjson::padded_string_view view(size_t size) {
    return simdjson::padded_string_view(data_.get(), size, capacity_ + PaddedBuffer::kPadding);
  }
  // Reads until the window holds `target` bytes or the text ends; false once it has ended.
  bool fill(TextSource& source, size_t target) {
    if (target > capacity_) reserve(std::max(target, capacity_ * 2));
    while (size_ < target) {
      const size_t got = source.read(data_.get() + size_, target - size_);
      if (got == 0) return false;
      size_ += got;
    }
    return true;
  }
  // Drops the first n bytes.
  void drop_front(size_t n) {
    std::memmove(data_.get(), data_.get() + n, size_ - n);
    size_ -= n;
  }

 private:
  void reserve(size_t capacity) {
    std::unique_ptr<char[]> grown(new char[capacity + PaddedBuffer::kPadding]());  // padding zeroed
    if (size_ > 0) std::memcpy(grown.get(), data_.get(), size_);
    data_ = std::move(grown);
    capacity_ = capacity;
  }
  size_t part_bytes_;
  std::unique_ptr<char[]> data_;
  size_t size_ = 0, capacity_ = 0;
};

bool is_space(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

// The top level before the events, ending in "[", is a JSON object whose last key is traceEvents.
void check_prefix(std::string_view prefix) {
  simdjson::padded_string doc(std::string(prefix) + "]}");
  od::parser parser;
  od::document d;
  if (parser.iterate(doc).get(d) != simdjson::SUCCESS) throw NotStreamable{};
  try {
    std::string last;
    for (auto field : d.get_object())
      last = std::string(field.unescaped_key().value());
    if (last != "traceEvents") throw NotStreamable{};
  } catch (const simdjson::simdjson_error&) {
    throw NotStreamable{};
  }
}

// Where the top level's events begin (the byte after their "["), reading more as needed.
size_t find_events(Window& w, TextSource& source, bool& more) {
  size_t i = 0;
  while (i < w.size() && is_space(w[i]))
    ++i;
  if (i == w.size()) throw NotStreamable{};
  if (w[i] == '[') return i + 1;
  if (w[i] != '{') throw NotStreamable{};
  static constexpr std::string_view kKey = "\"traceEvents\"";
  size_t from = i;
  while (true) {
    const std::string_view text(w.data(), w.size());
    const size_t at = text.find(kKey, from);
    if (at == std::string_view::npos) {
      if (!more || w.size() >= kMostPrefixBytes) throw NotStreamable{};
      from = w.size() >= kKey.size() ? w.size() - kKey.size() : 0;
      more = w.fill(source, w.size() + w.part_bytes());
      continue;
    }
    // The key, blanks, ":", blanks, "[" (a few bytes, perhaps not read yet).
    size_t j = at + kKey.size();
    bool colon = false;
    while (true) {
      if (j == w.size()) {
        if (!more) throw NotStreamable{};
        more = w.fill(source, w.size() + 4096);
        continue;
      }
      const char c = w[j];
      if (is_space(c)) {
        ++j;
      } else if (c == ':' && !colon) {
        colon = true;
        ++j;
      } else if (c == '[' && colon) {
        check_prefix(std::string_view(w.data(), j + 1));
        return j + 1;
      } else {
        break;  // "traceEvents" in a string, or not an array: the next one
      }
    }
    from = at + 1;
  }
}

// The last place in [lo, hi) where an event ends and the next begins: "}", blanks, ",", blanks,
// "{". close: the byte after the "}"; next: the "{".
struct Cut {
  size_t close = 0, next = 0;
};
std::optional<Cut> last_cut(const char* text, size_t lo, size_t hi) {
  while (hi > lo) {
    const void* found = ::memrchr(text + lo, '{', hi - lo);
    if (found == nullptr) return std::nullopt;
    const size_t q = static_cast<size_t>(static_cast<const char*>(found) - text);
    size_t p = q;
    while (p > lo && is_space(text[p - 1]))
      --p;
    if (p > lo && text[p - 1] == ',') {
      --p;
      while (p > lo && is_space(text[p - 1]))
        --p;
      if (p > lo && text[p - 1] == '}') return Cut{p, q};
    }
    hi = q;
  }
  return std::nullopt;
}

// The last cut in [lo, hi) outside strings, from a scan of the strings from lo (where no string
// is open): for a part whose last cut fell inside one.
std::optional<Cut> last_cut_outside_strings(Window& w, size_t lo, size_t hi) {
  std::optional<Cut> cut;
  bool in_string = false;
  for (size_t i = lo; i < hi; ++i) {
    const char c = w[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '}') {
      size_t j = i + 1;
      while (j < hi && is_space(w[j]))
        ++j;
      if (j < hi && w[j] == ',') {
        ++j;
        while (j < hi && is_space(w[j]))
          ++j;
        if (j < hi && w[j] == '{') cut = Cut{i + 1, j};
      }
    }
  }
  return cut;
}

// The text up to the events read and checked; the window holds "[" and the events' first bytes.
struct Start {
  std::unique_ptr<TextSource> source;
  Window w;
  bool more = true;
  std::string prefix;  // the top level up to and with the events' "["
  uint64_t events_at = 0;  // where the events begin in the text (the byte after their "[")
  Start(const std::filesystem::path& path, const ReadOptions& options)
      : source(TextSource::open(path)), w(std::max<size_t>(options.part_bytes, 64)) {
    more = w.fill(*source, w.part_bytes());
    const size_t events = find_events(w, *source, more);
    events_at = events;
    prefix.assign(w.data(), events);
    w.drop_front(events - 1);  // w[0] is the "[" of every part
  }
  // The trace: the rest (the last events and the end of the top level) read by `reader`, which
  // has handled every event before them.
  Trace finish(Reader& reader) {
    const PaddedBuffer rest = PaddedBuffer::copy_of(prefix + std::string(w.data() + 1, w.size() - 1));
    return reader.run(simdjson::padded_string_view(rest.data(), rest.size(), rest.capacity()));
  }
};

// One thread reads, cuts and parses every part.
Trace read_parts(const std::filesystem::path& path, const ReadOptions& options) {
  Start start(path, options);
  Window& w = start.w;
  Reader reader(path.string(), options);
  size_t target = w.part_bytes() + 1;
  while (true) {
    if (start.more && w.size() < target) start.more = w.fill(*start.source, target);
    if (!start.more) break;  // the rest goes with the top level
    // The last cut; when it falls inside a string (found before any event is read), the last
    // one outside strings.
    bool read = false;
    for (int exact = 0; exact < 2 && !read; ++exact) {
      const std::optional<Cut> cut = exact == 0 ? last_cut(w.data(), 1, w.size()) : last_cut_outside_strings(w, 1, w.size());
      if (!cut) break;
      const char saved = w[cut->close];
      w[cut->close] = ']';
      if (reader.read_chunk(w.view(cut->close + 1))) {
        if (options.stats != nullptr) ++options.stats->parts;
        w.drop_front(cut->next - 1);
        w[0] = '[';
        read = true;
      } else {
        w[cut->close] = saved;
      }
    }
    if (read) {
      target = w.part_bytes() + 1;
    } else {
      if (target >= kMostPartBytes) throw NotStreamable{};  // one event this large: read whole
      target *= 2;
    }
  }
  return start.finish(reader);
}

// A part cut inside a string in parallel reading: the parts are read again by one thread, which
// can cut again.
struct CutInsideAString {};

// Text in a block of allocate_maybe_huge.
struct HugeFree {
  size_t bytes;
  void operator()(char* p) const noexcept { free_maybe_huge(p, bytes); }
};
using HugeText = std::unique_ptr<char[], HugeFree>;

// A part handed to a worker: its text ("[" + events + "]", padded), the reader that parses it (its
// parser holds the events' strings) and the events it collected, kept until they are handled.
struct PartJob {
  // The events' list is reserved for a part of short events at once (up to 64 Ki events, for
  // whatever part size a caller asks): its pages are touched only as events fill them, where
  // growing it by doubling touched twice as many (first-touch page faults are most of what a
  // small trace's reading costs on some virtual machines).
  PartJob(const std::string& source, const ReadOptions& options) : reader(source, options) {
    events.reserve(std::min<size_t>(options.part_bytes / 128, size_t{1} << 16) + 16);
  }
  // Room for n bytes, the text so far kept. The buffer is whole huge pages (at least one): it is
  // written once per part, and a part of 1 MiB in 4 KiB pages took 257 first-touch faults per
  // job, a quarter of a 500 MB trace's faults.
  void reserve(size_t n) {
    if (n <= capacity) return;
    const size_t want = std::max(n, capacity * 2) + PaddedBuffer::kPadding;
    const size_t block = (want + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
    const size_t grown = block - PaddedBuffer::kPadding;
    // Only the padding is zeroed: the text is written before it is read (and a reused buffer
    // holds an earlier part's bytes past `size` anyway).
    HugeText bigger(static_cast<char*>(allocate_maybe_huge(block)), HugeFree{block});
    std::memset(bigger.get() + grown, 0, PaddedBuffer::kPadding);
    if (size > 0) std::memcpy(bigger.get(), text.get(), size);
    text = std::move(bigger);
    capacity = grown;
  }
  // The part's text read from where it lies in a file that is not compressed (on the thread that
  // parses it): "[" + the events in [from, from + bytes) + "]".
  void load() {
    size = 0;
    reserve(bytes + 2);
    text[0] = '[';
    if (file->read_at(from, text.get() + 1, bytes) != bytes) throw NotStreamable{};  // it shrank
    text[bytes + 1] = ']';
    size = bytes + 2;
  }
  // Reads until the text holds `target` bytes; false once the source has ended.
  bool fill(TextSource& source, size_t target) {
    reserve(target);
    while (size < target) {
      const size_t got = source.read(text.get() + size, target - size);
      if (got == 0) return false;
      size += got;
    }
    return true;
  }
  HugeText text{nullptr, HugeFree{0}};
  size_t size = 0, capacity = 0;
  const TextSource* file = nullptr;  // load()'s: set when the part is read where it is parsed
  uint64_t from = 0;
  size_t bytes = 0;
  Reader reader;
  std::vector<EventFields> events;
  std::vector<NumericArg> args;
  size_t count = 0;
  bool done = false, unclosed = false;  // under the pool's lock
  std::exception_ptr error;
};

// The main thread reads and cuts the parts; `workers` threads parse them (simdjson, every value
// checked: most of the time), and so does the main thread while it waits for one; the main thread
// hands their events to the builder in the trace's order. Parts in flight: workers +
// kPartsBeyondWorkers, so that a worker finds a part to parse while this thread parses one and
// others wait to be handled (with two more, the one worker of a 2-core machine waited for parts a
// third of the time: a 500 MB trace read in 0.77 s, with five more in 0.69).
Trace read_parts_in_parallel(const std::filesystem::path& path, const ReadOptions& options, size_t workers) {
  Start start(path, options);
  Window& w = start.w;
  Reader reader(path.string(), options);
  std::vector<std::unique_ptr<PartJob>> jobs;
  std::deque<PartJob*> idle, in_flight;  // in_flight: in the trace's order
  for (size_t k = 0; k < workers + kPartsBeyondWorkers; ++k) {
    jobs.push_back(std::make_unique<PartJob>(path.string(), options));
    idle.push_back(jobs.back().get());
  }
  std::mutex mutex;
  std::condition_variable_any changed;
  std::deque<PartJob*> todo;
  // Parses a part (on a worker, or on this thread while it waits).
  auto parse = [&](PartJob* job) {
    try {
      if (job->file != nullptr) job->load();
      job->unclosed = !job->reader.collect_chunk(
          simdjson::padded_string_view(job->text.get(), job->size, job->capacity + PaddedBuffer::kPadding),
          job->events, job->args, job->count);
    } catch (...) {
      job->error = std::current_exception();
    }
    {
      std::lock_guard lock(mutex);
      job->done = true;
    }
    changed.notify_all();
  };
  // Hands the oldest part's events to the builder; while it is not parsed yet, this thread parses
  // parts no worker has taken rather than wait.
  auto handle_oldest = [&] {
    PartJob* job = in_flight.front();
    while (true) {
      PartJob* mine = nullptr;
      {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return job->done || !todo.empty(); });
        if (job->done) break;
        mine = todo.front();
        todo.pop_front();
      }
      parse(mine);
    }
    in_flight.pop_front();
    if (job->error) std::rethrow_exception(job->error);
    if (job->unclosed) throw CutInsideAString{};
    reader.handle(job->events, job->count, job->args);
    if (options.stats != nullptr) ++options.stats->parts;
    idle.push_back(job);
  };
  auto oldest_done = [&] {
    std::lock_guard lock(mutex);
    return !in_flight.empty() && in_flight.front()->done;
  };
  // Last: on any way out the workers stop and are joined before what they use goes.
  std::vector<std::jthread> pool;
  for (size_t k = 0; k < workers; ++k) {
    pool.emplace_back([&](const std::stop_token& stop) {
      while (true) {
        PartJob* job = nullptr;
        {
          std::unique_lock lock(mutex);
          if (!changed.wait(lock, stop, [&] { return !todo.empty(); })) return;
          job = todo.front();
          todo.pop_front();
        }
        parse(job);
      }
    });
  }
  // A part ready to parse (its text, or where it lies in the file): in flight, in the trace's
  // order; the parts parsed meanwhile are handled.
  auto submit = [&](PartJob* job) {
    job->done = job->unclosed = false;
    job->error = nullptr;
    job->count = 0;
    in_flight.push_back(job);
    {
      std::lock_guard lock(mutex);
      todo.push_back(job);
    }
    changed.notify_all();
    while (oldest_done())
      handle_oldest();
  };
  // Once the text has ended: the parts in flight, then `last` (the last events and the rest of
  // the top level) with the top level's beginning.
  std::string last;
  auto finish = [&] {
    while (!in_flight.empty())
      handle_oldest();
    const PaddedBuffer text = PaddedBuffer::copy_of(start.prefix + last);
    return reader.run(simdjson::padded_string_view(text.data(), text.size(), text.capacity()));
  };
  const size_t part = w.part_bytes();
  if (!start.source->compressed()) {
    // A file as it is: this thread finds where each part ends from a few bytes before its end,
    // and the thread that parses a part reads it (the copy out of the page cache is most of the
    // reading).
    const TextSource& source = *start.source;
    const uint64_t end = source.file_size();
    uint64_t from = start.events_at;
    if (end < from) throw NotStreamable{};  // the file grew since it was opened, or tells no size
    std::string probe;
    while (true) {
      if (idle.empty()) handle_oldest();
      std::optional<Cut> cut;  // in the file
      uint64_t hi = std::min(from + part, end);
      size_t look = size_t{16} << 10;
      while (hi < end) {
        const uint64_t lo = hi - std::min<uint64_t>(hi - from, look);
        probe.resize(hi - lo);
        if (source.read_at(lo, probe.data(), probe.size()) != probe.size()) throw NotStreamable{};
        if (const auto c = last_cut(probe.data(), 0, probe.size())) {
          cut = Cut{lo + c->close, lo + c->next};
          break;
        }
        if (lo > from) {  // further back
          look *= 4;
          continue;
        }
        if (hi - from >= kMostPartBytes) throw NotStreamable{};  // one event this large: read whole
        hi = std::min(from + 2 * (hi - from), end);              // further on
      }
      if (!cut) {  // the text ends within a part: what is left goes with the top level
        last.resize(end - from);
        if (source.read_at(from, last.data(), last.size()) != last.size()) throw NotStreamable{};
        break;
      }
      PartJob* job = idle.front();
      idle.pop_front();
      job->file = &source;
      job->from = from;
      job->bytes = cut->close - from;
      from = cut->next;
      submit(job);
    }
    return finish();
  }
  // Compressed text: each part is read straight into its job's text: "[", what followed the last
  // cut, new bytes.
  std::string carry(w.data() + 1, w.size() - 1);
  bool more = start.more;
  while (true) {
    if (idle.empty()) handle_oldest();
    PartJob* job = idle.front();
    job->size = 0;
    job->reserve(1 + carry.size() + part);
    job->text[0] = '[';
    std::memcpy(job->text.get() + 1, carry.data(), carry.size());
    job->size = 1 + carry.size();
    std::optional<Cut> cut;
    size_t target = std::max(job->size, part + 1);
    while (more) {
      if (job->size < target) more = job->fill(*start.source, target);
      if (!more) break;
      cut = last_cut(job->text.get(), 1, job->size);
      if (cut) break;
      if (target >= kMostPartBytes) throw NotStreamable{};  // one event this large: read whole
      target *= 2;
    }
    if (!more) {  // the text ended: what is left goes with the top level
      last.assign(job->text.get() + 1, job->size - 1);
      break;
    }
    idle.pop_front();
    carry.assign(job->text.get() + cut->next, job->size - cut->next);
    job->text[cut->close] = ']';
    job->size = cut->close + 1;
    submit(job);
  }
  return finish();
}

}  // namespace

Trace read_in_parts(const std::filesystem::path& path, const ReadOptions& options) {
  const size_t threads = options.threads != 0 ? options.threads : std::thread::hardware_concurrency();
  if (threads >= 2) {
    try {
      return read_parts_in_parallel(path, options, std::min<size_t>(threads, 8) - 1);  // and this one
    } catch (const CutInsideAString&) {
      if (options.stats != nullptr) *options.stats = ReadStats{};
    }
  }
  return read_parts(path, options);
}

}  // namespace pipeprof::trace::detail
