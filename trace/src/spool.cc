#include "pipeprof/trace/spool.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "pipeprof/trace/chrome_json.h"
#include "pipeprof/trace/clock.h"

namespace pipeprof::trace {
namespace {

constexpr std::string_view kSpoolMagic = "PPSPOOL1";
constexpr size_t kSpoolHeader = 16;  // magic + pid
constexpr size_t kSpoolFlushBytes = 32 * 1024;
// A name or lane name longer than this is not something a writer of ours wrote.
constexpr uint32_t kSpoolMaxText = 1 << 20;

enum SpoolTag : uint8_t { kName = 1, kSpan = 2, kInstant = 3, kThread = 4, kProcess = 5 };

template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

void put_text(std::string& out, std::string_view s) {
  put<uint32_t>(out, static_cast<uint32_t>(std::min<size_t>(s.size(), kSpoolMaxText)));
  out.append(s.substr(0, kSpoolMaxText));
}

// Reads fixed fields from a byte range; `ok` turns false when the range ends first.
struct SpoolCursor {
  const char* p;
  const char* end;
  bool ok = true;
  template <typename T>
  T get() {
    T v{};
    if (static_cast<size_t>(end - p) < sizeof v) {
      ok = false;
      return v;
    }
    std::memcpy(&v, p, sizeof v);
    p += sizeof v;
    return v;
  }
  std::string_view text(uint32_t n) {
    if (static_cast<size_t>(end - p) < n) {
      ok = false;
      return {};
    }
    std::string_view s(p, n);
    p += n;
    return s;
  }
};

}  // namespace

SpoolWriter::SpoolWriter(const std::filesystem::path& path, std::string_view process_name)
    : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw std::runtime_error("cannot create the spool file " + path.string() + ": " +
                             std::strerror(errno));
  buffer_.reserve(kSpoolFlushBytes + 256);
  buffer_.append(kSpoolMagic);
  put<int64_t>(buffer_, static_cast<int64_t>(::getpid()));
  buffer_.push_back(static_cast<char>(kProcess));
  put_text(buffer_, process_name);
  flush();
}

SpoolWriter::~SpoolWriter() {
  try {
    flush();
  } catch (...) {  // a destructor reports nothing; the reader sees what was written
  }
  if (fd_ >= 0) ::close(fd_);
}

uint32_t SpoolWriter::name(std::string_view s) {
  if (auto it = names_.find(std::string(s)); it != names_.end()) return it->second;
  const auto id = static_cast<uint32_t>(names_.size());
  names_.emplace(std::string(s), id);
  buffer_.push_back(static_cast<char>(kName));
  put<uint32_t>(buffer_, id);
  put_text(buffer_, s);
  return id;
}

void SpoolWriter::thread_name(int64_t tid, std::string_view name) {
  buffer_.push_back(static_cast<char>(kThread));
  put<int64_t>(buffer_, tid);
  put_text(buffer_, name);
  maybe_flush(now_ns());
}

void SpoolWriter::span(uint32_t name, uint32_t category, int64_t tid, int64_t start_ns,
                       int64_t end_ns) {
  buffer_.push_back(static_cast<char>(kSpan));
  put<uint32_t>(buffer_, name);
  put<uint32_t>(buffer_, category);
  put<int64_t>(buffer_, tid);
  put<int64_t>(buffer_, start_ns);
  put<int64_t>(buffer_, end_ns);
  ++events_;
  maybe_flush(end_ns);
}

void SpoolWriter::instant(uint32_t name, uint32_t category, int64_t tid, int64_t ts_ns) {
  buffer_.push_back(static_cast<char>(kInstant));
  put<uint32_t>(buffer_, name);
  put<uint32_t>(buffer_, category);
  put<int64_t>(buffer_, tid);
  put<int64_t>(buffer_, ts_ns);
  ++events_;
  maybe_flush(ts_ns);
}

void SpoolWriter::maybe_flush(int64_t now) {
  if (buffer_.size() >= kSpoolFlushBytes || now - last_flush_ns_ >= flush_interval_ns_) flush();
}

void SpoolWriter::flush() {
  last_flush_ns_ = now_ns();
  size_t done = 0;
  while (done < buffer_.size()) {
    const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      buffer_.clear();
      throw std::runtime_error("cannot write the spool file " + path_.string() + ": " +
                               std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  buffer_.clear();
}

size_t SpoolReader::read_into(Trace& trace) {
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return 0;
    throw std::runtime_error("cannot read the spool file " + path_.string() + ": " +
                             std::strerror(errno));
  }
  std::string bytes;
  char chunk[1 << 16];
  for (uint64_t at = offset_;;) {
    const ssize_t n = ::pread(fd, chunk, sizeof chunk, static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    bytes.append(chunk, static_cast<size_t>(n));
    at += static_cast<uint64_t>(n);
  }
  ::close(fd);

  const std::string source = path_.string();
  const uint64_t base_offset = offset_;  // the file offset of bytes[0]
  SpoolCursor c{bytes.data(), bytes.data() + bytes.size()};
  if (offset_ == 0) {
    if (bytes.size() < kSpoolHeader) {
      const size_t n = std::min(bytes.size(), kSpoolMagic.size());
      if (std::string_view(bytes).substr(0, n) != kSpoolMagic.substr(0, n))
        throw TraceFormatError(source, 0, "not a pipeprof spool file");
      return 0;
    }
    if (std::string_view(bytes.data(), kSpoolMagic.size()) != kSpoolMagic)
      throw TraceFormatError(source, 0, "not a pipeprof spool file");
    c.p += kSpoolMagic.size();
    pid_ = c.get<int64_t>();
    offset_ = kSpoolHeader;
  }
  const char* base = bytes.data();
  const auto file_offset = [&](const char* p) { return base_offset + static_cast<uint64_t>(p - base); };
  const auto string_of = [&](uint32_t id, const char* at) {
    if (id >= names_.size())
      throw TraceFormatError(source, file_offset(at),
                             "name id " + std::to_string(id) + " used before it was defined");
    return names_[id];
  };

  size_t events = 0;
  const uint32_t process = trace.process(pid_);
  while (c.p < c.end) {
    const char* record = c.p;
    const auto tag = c.get<uint8_t>();
    switch (tag) {
      case kName: {
        const auto id = c.get<uint32_t>();
        const auto n = c.get<uint32_t>();
        if (c.ok && n > kSpoolMaxText)
          throw TraceFormatError(source, file_offset(record), "a name longer than 1 MiB");
        const std::string_view s = c.text(n);
        if (!c.ok) break;
        if (id != names_.size())
          throw TraceFormatError(source, file_offset(record),
                                 "name id " + std::to_string(id) + " out of order (expected " +
                                     std::to_string(names_.size()) + ")");
        names_.push_back(trace.strings.intern(s));
        break;
      }
      case kSpan: {
        const auto name = c.get<uint32_t>();
        const auto category = c.get<uint32_t>();
        const auto tid = c.get<int64_t>();
        const auto start = c.get<int64_t>();
        const auto end = c.get<int64_t>();
        if (!c.ok) break;
        if (end < start)
          throw TraceFormatError(source, file_offset(record), "a span that ends before it starts");
        Span s;
        s.start_ns = start;
        s.dur_ns = end - start;
        s.name = string_of(name, record);
        s.category = string_of(category, record);
        trace.lanes[trace.thread_lane(pid_, tid)].spans.push_back(s);
        ++events;
        break;
      }
      case kInstant: {
        const auto name = c.get<uint32_t>();
        const auto category = c.get<uint32_t>();
        const auto tid = c.get<int64_t>();
        const auto ts = c.get<int64_t>();
        if (!c.ok) break;
        Instant i;
        i.ts_ns = ts;
        i.name = string_of(name, record);
        i.category = string_of(category, record);
        trace.lanes[trace.thread_lane(pid_, tid)].instants.push_back(i);
        ++events;
        break;
      }
      case kThread:
      case kProcess: {
        const auto tid = tag == kThread ? c.get<int64_t>() : 0;
        const auto n = c.get<uint32_t>();
        if (c.ok && n > kSpoolMaxText)
          throw TraceFormatError(source, file_offset(record), "a name longer than 1 MiB");
        const std::string_view s = c.text(n);
        if (!c.ok) break;
        if (tag == kThread)
          trace.lanes[trace.thread_lane(pid_, tid)].name = std::string(s);
        else
          trace.processes[process].name = std::string(s);
        break;
      }
      default:
        if (!c.ok) break;
        throw TraceFormatError(source, file_offset(record),
                               "unknown record tag " + std::to_string(tag));
    }
    if (!c.ok) {  // the writer is part-way through this record: read it next time
      c.p = record;
      break;
    }
  }
  offset_ = file_offset(c.p);
  return events;
}

}  // namespace pipeprof::trace
