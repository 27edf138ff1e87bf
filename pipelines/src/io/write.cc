// Writing whole objects, and reading them back front to back (pipeprof/pipelines/storage_io.h):
// the local file system's writable files, and the public entry points that go through the scheme
// registry (io/filesystem.h).
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "io/filesystem.h"
#include "io/storage.h"
#include "pipeprof/pipelines/storage_io.h"
#include "pipeprof/pipelines/waits.h"

namespace pipeprof::pipelines {
namespace io {
namespace {

std::string write_errno(int err) {
  return std::strerror(err);
}

// This host's name as it goes into temporary names (no '-' or '/': the name is split on '-').
const std::string& host_tag() {
  static const std::string tag = [] {
    char name[256] = {};
    if (::gethostname(name, sizeof(name) - 1) != 0) return std::string("host");
    std::string out;
    for (const char* c = name; *c != '\0'; ++c)
      out.push_back(*c == '-' || *c == '/' || *c == '.' ? '_' : *c);
    return out.empty() ? std::string("host") : out;
  }();
  return tag;
}

// A unique temporary name beside `path` (same folder: the rename stays on one file system):
// <path>.partial-<host>-<pid>-<n>, so that what a killed writer left can be told from what a
// live one is writing (remove_abandoned_partials).
std::string temporary_name(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  return fmt::format("{}.partial-{}-{}-{}", path, host_tag(), ::getpid(), counter.fetch_add(1));
}

void fsync_folder(const std::filesystem::path& folder, const std::string& name) {
  const int fd = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // the data is durable; a folder that cannot be opened is not an error
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL && err != EROFS) {
    throw IoError(fmt::format("{}: fsync of its folder failed: {}", name, write_errno(err)));
  }
}

class LocalWritableFile final : public WritableFile {
 public:
  LocalWritableFile(std::string path, const WriteOptions& options)
      : name_(std::move(path)), temporary_(temporary_name(name_)), direct_(options.direct),
        fsync_(options.fsync) {
    const std::filesystem::path folder = std::filesystem::path(name_).parent_path();
    if (!folder.empty()) {
      // The folders made here, so that a durable commit syncs their entries too.
      std::error_code ec;
      for (std::filesystem::path p = folder; !p.empty() && !std::filesystem::exists(p, ec);
           p = p.parent_path()) {
        created_.push_back(p);
        if (p == p.parent_path()) break;
      }
      std::filesystem::create_directories(folder, ec);
      if (ec) {
        throw IoError(fmt::format("{}: its folder cannot be created: {}", name_, ec.message()));
      }
    }
    int flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
    if (direct_) flags |= O_DIRECT;
    fd_ = ::open(temporary_.c_str(), flags, 0644);
    if (fd_ < 0 && direct_ && errno == EINVAL) {
      throw IoError(fmt::format("{}: the file system does not support O_DIRECT", name_));
    }
    if (fd_ < 0) {
      throw IoError(fmt::format("{}: cannot be created: {}", name_, write_errno(errno)));
    }
  }
  ~LocalWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(temporary_.c_str());
  }
  LocalWritableFile(const LocalWritableFile&) = delete;
  LocalWritableFile& operator=(const LocalWritableFile&) = delete;

  const std::string& name() const override { return name_; }
  uint64_t size() const override { return size_; }

  void append(std::span<const std::byte> bytes) override {
    if (fd_ < 0) throw IoError(fmt::format("{}: written after commit", name_));
    if (direct_ && (bytes.size() % kDirectAlignment != 0 ||
                    reinterpret_cast<uintptr_t>(bytes.data()) % kDirectAlignment != 0)) {
      // The tail (or a caller's unaligned buffer): the page cache takes it from here on.
      if (::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_DIRECT) != 0) {
        throw IoError(fmt::format("{}: cannot leave O_DIRECT: {}", name_, write_errno(errno)));
      }
      direct_ = false;
    }
    auto what = [&] { return fmt::format("writing {} at byte {}", name_, size_); };
    WaitScope waiting(what);
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::pwrite(fd_, bytes.data() + done, bytes.size() - done,
                                 static_cast<off_t>(size_ + done));
      if (n > 0) note_progress();
      if (n < 0) {
        if (errno == EINTR) continue;
        throw IoError(fmt::format("{}: write failed at byte {}: {}", name_, size_ + done,
                                  write_errno(errno)));
      }
      if (n == 0) {
        throw IoError(fmt::format("{}: write failed at byte {}: nothing written", name_,
                                  size_ + done));
      }
      done += static_cast<size_t>(n);
      // A short O_DIRECT write (the disk filling up) leaves the rest unaligned: it goes through
      // the page cache, which then reports why it stopped (ENOSPC rather than EINVAL).
      if (direct_ && done < bytes.size()) {
        (void)::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_DIRECT);
        direct_ = false;
      }
    }
    size_ += done;
  }

  void commit() override {
    if (fd_ < 0) throw IoError(fmt::format("{}: committed twice", name_));
    auto what = [&] { return fmt::format("syncing and closing {}", name_); };
    WaitScope waiting(what);
    if (fsync_ && ::fdatasync(fd_) != 0) {
      throw IoError(fmt::format("{}: fdatasync failed: {}", name_, write_errno(errno)));
    }
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) {  // NFS and others report a failed write at close
      throw IoError(fmt::format("{}: close failed: {}", name_, write_errno(errno)));
    }
    if (::rename(temporary_.c_str(), name_.c_str()) != 0) {
      throw IoError(fmt::format("{}: cannot be renamed into place: {}", name_, write_errno(errno)));
    }
    committed_ = true;
    note_progress();
    if (fsync_) {
      fsync_folder(std::filesystem::path(name_).parent_path(), name_);
      for (const std::filesystem::path& made : created_)  // each new folder's entry in its parent
        fsync_folder(made.parent_path(), name_);
    }
  }

 private:
  std::string name_;
  std::string temporary_;
  bool direct_;
  bool fsync_;
  int fd_ = -1;
  uint64_t size_ = 0;
  bool committed_ = false;
  std::vector<std::filesystem::path> created_;
};

}  // namespace

std::unique_ptr<WritableFile> create_local(const std::string& path, const WriteOptions& options) {
  return std::make_unique<LocalWritableFile>(path, options);
}

}  // namespace io

std::unique_ptr<WritableFile> create_file(const std::string& name, const WriteOptions& options) {
  return io::filesystem_for(name)->create(name, options);
}

uint64_t read_whole_file(const std::string& name, const WholeReadOptions& options) {
  const auto file =
      io::open_file(name, {.direct = options.direct, .storage = options.storage});
  const size_t block = std::max<size_t>(
      kStorageAlignment, (options.block_bytes + kStorageAlignment - 1) / kStorageAlignment *
                             kStorageAlignment);
  io::AlignedBuffer buffer(block);
  uint64_t offset = 0;
  while (options.stop == nullptr || !options.stop->load()) {
    size_t want = block;
    if (options.max_bytes > 0) {
      if (offset >= options.max_bytes) break;
      want = static_cast<size_t>(std::min<uint64_t>(block, options.max_bytes - offset));
    }
    const size_t n = file->read_at(offset, buffer.span().first(want));
    offset += n;
    if (n < want) break;
  }
  return offset;
}

size_t remove_abandoned_partials(const std::string& folder) {
  if (!io::is_local(folder)) return 0;
  const std::string root = io::scheme_of(folder) == "file" ? folder.substr(7) : folder;
  std::error_code ec;
  if (!std::filesystem::is_directory(root, ec)) return 0;
  const std::string mine = ".partial-" + io::host_tag() + "-";
  size_t removed = 0;
  std::filesystem::recursive_directory_iterator it(
      root, std::filesystem::directory_options::skip_permission_denied, ec);
  for (; !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const auto at = name.rfind(mine);
    if (at == std::string::npos || !it->is_regular_file(ec)) continue;
    // <pid>-<n> after the host: the writer's pid, alive or not.
    const std::string rest = name.substr(at + mine.size());
    const auto dash = rest.find('-');
    if (dash == std::string::npos || dash == 0) continue;
    pid_t pid = 0;
    try {
      pid = static_cast<pid_t>(std::stol(rest.substr(0, dash)));
    } catch (const std::logic_error&) {
      continue;
    }
    if (pid <= 0 || pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::error_code rm;
    if (std::filesystem::remove(it->path(), rm)) ++removed;
  }
  return removed;
}

uint64_t object_size(const std::string& name, const std::shared_ptr<const StorageContext>& storage) {
  return io::open_file(name, {.storage = storage})->size();
}

uint64_t copy_file(const std::string& from, const std::string& to, const WriteOptions& options,
                   const std::atomic<bool>* stop) {
  auto in = io::open_file(from, {.storage = options.storage});
  auto out = create_file(to, options);
  std::vector<std::byte> buffer(static_cast<size_t>(std::min<uint64_t>(in->size(), uint64_t{8} << 20)));
  for (uint64_t at = 0; at < in->size();) {
    if (stop != nullptr && stop->load()) throw IoError(fmt::format("{}: copy to {} stopped (interrupted)", from, to));
    const size_t n = io::read_fully(*in, at, std::span(buffer.data(),
                                                         static_cast<size_t>(std::min<uint64_t>(buffer.size(), in->size() - at))));
    if (n == 0) throw IoError(fmt::format("{}: ended at byte {} of {} while it was copied", from, at, in->size()));
    out->append(std::span(buffer.data(), n));
    at += n;
  }
  out->commit();
  return in->size();
}

}  // namespace pipeprof::pipelines
