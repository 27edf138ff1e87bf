#include "formats/npz.h"

#include <fmt/format.h>
#include <unistd.h>
#include <zip.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <ctime>
#include <memory>
#include <stdexcept>
#include <tuple>

#include "formats/crc32c.h"
#include "formats/format_error.h"
#include "formats/mapped_file.h"
#include "formats/npy.h"
#include "io/filesystem.h"

namespace pipeprof::pipelines::formats {
namespace {

constexpr uint64_t kMaxDeflateRatio = 1032;
constexpr size_t kHeaderProbe = 4096;

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
struct FileCloser {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};
using ZipPtr = std::unique_ptr<zip_t, ZipCloser>;
using ZipFilePtr = std::unique_ptr<zip_file_t, FileCloser>;

std::string zip_message(zip_error_t* error) {
  std::string s = zip_error_strerror(error);
  return s;
}

// libzip's view of the file in memory: a seekable source over its bytes that also notes where its
// last read began. A stored member read raw (ZIP_FL_COMPRESSED) starts with a read at its first
// data byte, so that offset locates the member in the mapping: its values are then checked and
// viewed there, not copied out. (A zip archive states where a member's local header is, not where
// its data is; libzip reads the local header, the source learns the rest.) The bytes are one span
// (a mapped or read file) or consecutive pieces of one (a file read in parts, read_split).
class MappedSource {
 public:
  explicit MappedSource(std::vector<std::span<const std::byte>> pieces)
      : pieces_(std::move(pieces)) {
    for (const auto& p : pieces_)
      size_ += p.size();
    zip_error_init(&error_);
  }
  ~MappedSource() { zip_error_fini(&error_); }
  MappedSource(const MappedSource&) = delete;
  MappedSource& operator=(const MappedSource&) = delete;

  int64_t last_read_at() const { return last_read_at_; }

  static zip_int64_t callback(void* state, void* data, zip_uint64_t len, zip_source_cmd_t cmd) {
    return static_cast<MappedSource*>(state)->command(data, len, cmd);
  }

 private:
  // Copies [from, from + n) of the pieces to `out`.
  void copy(uint64_t from, std::byte* out, uint64_t n) const {
    for (const auto& p : pieces_) {
      if (n == 0) return;
      if (from >= p.size()) {
        from -= p.size();
        continue;
      }
      const uint64_t k = std::min<uint64_t>(n, p.size() - from);
      std::memcpy(out, p.data() + from, k);
      out += k;
      n -= k;
      from = 0;
    }
  }

  zip_int64_t command(void* data, zip_uint64_t len, zip_source_cmd_t cmd) {
    const uint64_t size = size_;
    switch (cmd) {
      case ZIP_SOURCE_OPEN:
        pos_ = 0;
        return 0;
      case ZIP_SOURCE_READ: {
        const uint64_t n = std::min<uint64_t>(len, size - std::min(pos_, size));
        last_read_at_ = static_cast<int64_t>(pos_);
        if (n > 0) copy(pos_, static_cast<std::byte*>(data), n);
        pos_ += n;
        return static_cast<zip_int64_t>(n);
      }
      case ZIP_SOURCE_CLOSE:
      case ZIP_SOURCE_FREE:  // the state belongs to the archive's owner
        return 0;
      case ZIP_SOURCE_STAT: {
        if (len < sizeof(zip_stat_t)) break;
        auto* st = static_cast<zip_stat_t*>(data);
        zip_stat_init(st);
        st->size = size;
        st->comp_size = size;
        st->comp_method = ZIP_CM_STORE;
        st->valid |= ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD;
        return sizeof(zip_stat_t);
      }
      case ZIP_SOURCE_ERROR:
        return zip_error_to_data(&error_, data, len);
      case ZIP_SOURCE_SEEK: {
        const zip_int64_t to = zip_source_seek_compute_offset(pos_, size, data, len, &error_);
        if (to < 0) return -1;
        pos_ = static_cast<uint64_t>(to);
        return 0;
      }
      case ZIP_SOURCE_TELL:
        return static_cast<zip_int64_t>(pos_);
      case ZIP_SOURCE_SUPPORTS:
        return zip_source_make_command_bitmap(ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE,
                                              ZIP_SOURCE_STAT, ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE,
                                              ZIP_SOURCE_SEEK, ZIP_SOURCE_TELL,
                                              ZIP_SOURCE_SUPPORTS, -1);
      default:
        break;
    }
    zip_error_set(&error_, ZIP_ER_OPNOTSUPP, 0);
    return -1;
  }

  const std::vector<std::span<const std::byte>> pieces_;
  uint64_t size_ = 0;
  uint64_t pos_ = 0;
  int64_t last_read_at_ = -1;
  zip_error_t error_;
};

// An archive over a mapped file. The source outlives the archive (declared first).
struct Archive {
  std::unique_ptr<MappedSource> source;
  ZipPtr zip;
  zip_t* get() const { return zip.get(); }
};

// The archive over the file in memory, in one piece or several (libzip reads it from memory).
Archive open_archive(const std::string& path, std::vector<std::span<const std::byte>> pieces) {
  Archive a{std::make_unique<MappedSource>(std::move(pieces)), nullptr};
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* src = zip_source_function_create(&MappedSource::callback, a.source.get(), &error);
  if (src == nullptr) {
    const std::string msg = zip_message(&error);
    zip_error_fini(&error);
    throw FormatError(fmt::format("{}: {}", path, msg));
  }
  zip_t* za = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &error);
  if (za == nullptr) {
    const std::string msg = zip_message(&error);
    zip_source_free(src);
    zip_error_fini(&error);
    throw FormatError(fmt::format("{}: not a readable zip archive: {}", path, msg));
  }
  zip_error_fini(&error);
  a.zip = ZipPtr(za);
  return a;
}

Archive open_archive(const MappedFile& file) {
  // libzip takes an empty file for an empty archive; numpy never writes one.
  if (file.size() == 0) throw FormatError(fmt::format("{}: offset 0: an empty file, not a zip archive", file.path()));
  return open_archive(file.path(), {file.bytes()});
}

std::string key_of(const std::string& name) {
  return name.size() > 4 && name.ends_with(".npy") ? name.substr(0, name.size() - 4) : name;
}

// Reads exactly `n` bytes of the member (or fails naming the member and offset).
void read_exactly(zip_file_t* f, std::byte* out, size_t n, const std::string& where,
                  size_t offset) {
  size_t done = 0;
  while (done < n) {
    const zip_int64_t got = zip_fread(f, out + done, n - done);
    if (got < 0) {
      throw FormatError(fmt::format("{}: offset {}: {}", where, offset + done,
                                    zip_error_strerror(zip_file_get_error(f))));
    }
    if (got == 0) {
      throw FormatError(fmt::format("{}: offset {}: the member ends early ({} bytes expected)",
                                    where, offset + done, offset + n));
    }
    done += static_cast<size_t>(got);
  }
}

// Reads to the member's end, so libzip checks its CRC-32 and that no bytes are left.
void finish(zip_file_t* f, const std::string& where, size_t offset) {
  std::byte extra[1];
  const zip_int64_t got = zip_fread(f, extra, 1);
  if (got < 0) {
    throw FormatError(fmt::format("{}: offset {}: {}", where, offset,
                                  zip_error_strerror(zip_file_get_error(f))));
  }
  if (got > 0) throw FormatError(fmt::format("{}: offset {}: bytes past the member's size", where, offset));
}

// A stored member's bytes where they lie in the mapping, when the source saw where and the CRC-32
// the archive states for them matches (checked here with ISA-L's CRC, several times zlib's speed);
// an empty span otherwise, and the member is then read through libzip, which reports any damage.
std::span<const std::byte> locate_stored(const Archive& a, zip_uint64_t index, const zip_stat_t& st,
                                         const MappedFile& file, const std::string& where) {
  if (st.comp_method != ZIP_CM_STORE || (st.valid & ZIP_STAT_CRC) == 0 || st.size == 0) return {};
  ZipFilePtr raw(zip_fopen_index(a.get(), index, ZIP_FL_COMPRESSED));
  if (!raw) return {};
  std::byte first{};
  read_exactly(raw.get(), &first, 1, where, 0);
  const int64_t at = a.source->last_read_at();
  if (at < 0 || st.size > file.size() - static_cast<uint64_t>(at) ||
      file.bytes()[static_cast<size_t>(at)] != first) {
    return {};
  }
  const auto bytes = file.bytes().subspan(static_cast<size_t>(at), static_cast<size_t>(st.size));
  // A piece at a time: its pages mapped at once (not a fault per few pages), then checked while
  // they are still in cache.
  constexpr size_t kPiece = size_t{4} << 20;
  uint32_t crc = 0;
  for (size_t done = 0; done < bytes.size(); done += kPiece) {
    const auto piece = bytes.subspan(done, std::min(kPiece, bytes.size() - done));
    file.prefault(piece);
    crc = crc32_ieee(piece, crc);
  }
  if (crc != st.crc) return {};
  return bytes;
}

Tensor read_member(const Archive& a, zip_uint64_t index,
                   const std::shared_ptr<const MappedFile>& mapped, const std::string& name) {
  zip_t* za = a.get();
  const MappedFile& file = *mapped;
  const std::string where = fmt::format("{}: member '{}'", file.path(), name);
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat_index(za, index, 0, &st) != 0)
    throw FormatError(fmt::format("{}: {}", where, zip_strerror(za)));
  if ((st.valid & ZIP_STAT_SIZE) == 0 || (st.valid & ZIP_STAT_COMP_SIZE) == 0)
    throw FormatError(fmt::format("{}: the archive does not state the member's size", where));
  if (st.comp_method != ZIP_CM_STORE && st.comp_method != ZIP_CM_DEFLATE) {
    throw FormatError(fmt::format("{}: compression method {} (only stored and deflated)", where,
                                  st.comp_method));
  }
  if (st.comp_size > file.size() ||
      (st.comp_method == ZIP_CM_STORE ? st.size != st.comp_size
                                      : st.size > st.comp_size * kMaxDeflateRatio + 1024)) {
    throw FormatError(fmt::format(
        "{}: declared size {} (compressed {}) is impossible for an archive of {} bytes", where,
        st.size, st.comp_size, file.size()));
  }
  // Stored (numpy's savez): decoded where it lies, a view of the mapping when the layout allows.
  if (const auto bytes = locate_stored(a, index, st, file, where); !bytes.empty())
    return decode_npy(bytes, where, mapped);
  ZipFilePtr f(zip_fopen_index(za, index, 0));
  if (!f) throw FormatError(fmt::format("{}: {}", where, zip_strerror(za)));
  const auto size = static_cast<size_t>(st.size);
  std::vector<std::byte> head(std::min(size, kHeaderProbe));
  read_exactly(f.get(), head.data(), head.size(), where, 0);
  NpyHeader h;
  try {
    h = parse_npy_header(head, where, size);
  } catch (const FormatError&) {
    if (head.size() == size) throw;
    // A header longer than the probe: read the whole member and parse it from there.
    std::vector<std::byte> all(size);
    std::memcpy(all.data(), head.data(), head.size());
    read_exactly(f.get(), all.data() + head.size(), size - head.size(), where, head.size());
    finish(f.get(), where, size);
    return decode_npy(all, where);
  }
  if (!npy_values_as_stored(h) || h.data_offset + h.data_bytes != size) {
    if (h.data_offset + h.data_bytes != size) {
      throw FormatError(fmt::format("{}: offset {}: the array has {} bytes, the member {}", where,
                                    h.data_offset, h.data_bytes, size - h.data_offset));
    }
    std::vector<std::byte> all(size);
    std::memcpy(all.data(), head.data(), head.size());
    read_exactly(f.get(), all.data() + head.size(), size - head.size(), where, head.size());
    finish(f.get(), where, size);
    return decode_npy(all, where);
  }
  // The values straight into the tensor: what the probe holds, then the rest from the stream.
  Tensor t(h.dtype, h.shape);
  std::byte* dst = t.mutable_data();
  const size_t in_head = head.size() - h.data_offset;
  if (in_head > 0) std::memcpy(dst, head.data() + h.data_offset, in_head);
  read_exactly(f.get(), dst + in_head, h.data_bytes - in_head, where, head.size());
  finish(f.get(), where, size);
  return t;
}

}  // namespace

std::vector<std::string> npz_keys(const std::string& path, const Storage& storage) {
  const auto file = MappedFile::open(path, storage);
  const Archive za = open_archive(*file);
  std::vector<std::string> keys;
  const zip_int64_t n = zip_get_num_entries(za.get(), 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    const char* name = zip_get_name(za.get(), static_cast<zip_uint64_t>(i), 0);
    if (name == nullptr) throw FormatError(fmt::format("{}: entry {}: {}", path, i, zip_strerror(za.get())));
    keys.push_back(key_of(name));
  }
  return keys;
}

namespace {

// The member holding array `key` ("key.npy", or "key" as numpy also finds it), and its name.
std::pair<zip_uint64_t, std::string> locate_key(zip_t* za, const std::string& key,
                                                const std::string& path) {
  const std::string name = key + ".npy";
  zip_int64_t index = zip_name_locate(za, name.c_str(), 0);
  if (index < 0) {
    index = zip_name_locate(za, key.c_str(), 0);
    if (index < 0) throw FormatError(fmt::format("{}: no array '{}' in the archive", path, key));
  }
  const char* stored = zip_get_name(za, static_cast<zip_uint64_t>(index), 0);
  return {static_cast<zip_uint64_t>(index), stored != nullptr ? stored : name};
}

NamedTensors read_archive(const std::shared_ptr<const MappedFile>& file,
                          const std::vector<std::string>& keys) {
  const std::string& path = file->path();
  const Archive za = open_archive(*file);
  NamedTensors out;
  if (keys.empty()) {
    const zip_int64_t n = zip_get_num_entries(za.get(), 0);
    for (zip_int64_t i = 0; i < n; ++i) {
      const auto index = static_cast<zip_uint64_t>(i);
      const char* name = zip_get_name(za.get(), index, 0);
      if (name == nullptr) throw FormatError(fmt::format("{}: entry {}: {}", path, i, zip_strerror(za.get())));
      out.emplace_back(key_of(name), read_member(za, index, file, name));
    }
    return out;
  }
  for (const std::string& key : keys) {
    const auto [index, name] = locate_key(za.get(), key, path);
    out.emplace_back(key, read_member(za, index, file, name));
  }
  return out;
}

// The layout of the last archive this thread read with a destination (ValuesGuess).
thread_local ValuesGuess t_layout;

// The archive's one array read with its values straight into `destination`'s memory, when the
// file is laid out as t_layout says: checked after the read (the archive, the member's place, its
// .npy header and its CRC-32). nullopt when the guess was wrong or anything is amiss: the caller
// then reads the file as usual, which reports what is wrong with it.
std::optional<NamedTensors> read_placed(const std::string& path, const std::vector<std::string>& keys,
                                        const ValuesDestination& destination) {
  const ValuesGuess g = t_layout;
  auto read = read_as_guessed(path, g, destination);
  if (!read) return std::nullopt;
  try {
    const std::span<const std::byte> head = read->file.head, values = read->values;
    const Archive a = open_archive(path, {head, values, read->file.tail});
    zip_t* za = a.get();
    zip_uint64_t index = 0;
    std::string name, key;
    if (keys.empty()) {
      if (zip_get_num_entries(za, 0) != 1) return std::nullopt;
      const char* stored = zip_get_name(za, 0, 0);
      if (stored == nullptr) return std::nullopt;
      name = stored;
      key = key_of(name);
    } else {
      std::tie(index, name) = locate_key(za, keys.front(), path);
      key = keys.front();
    }
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(za, index, 0, &st) != 0 || st.comp_method != ZIP_CM_STORE ||
        (st.valid & ZIP_STAT_CRC) == 0 || (st.valid & ZIP_STAT_SIZE) == 0 || st.size == 0) {
      return std::nullopt;
    }
    ZipFilePtr raw(zip_fopen_index(za, index, ZIP_FL_COMPRESSED));
    if (!raw) return std::nullopt;
    std::byte first{};
    read_exactly(raw.get(), &first, 1, path, 0);
    const int64_t at = a.source->last_read_at();
    if (at < 0 || static_cast<uint64_t>(at) >= head.size() || head[static_cast<size_t>(at)] != first)
      return std::nullopt;
    const auto member = head.subspan(static_cast<size_t>(at));
    const NpyHeader h = parse_npy_header(member, path, static_cast<size_t>(st.size));
    if (!npy_values_as_stored(h) || h.data_offset != member.size() ||
        h.data_bytes != values.size() || st.size != member.size() + values.size() ||
        h.dtype != g.dtype || h.shape != g.shape) {
      return std::nullopt;
    }
    if (crc32_ieee(values, crc32_ieee(member)) != st.crc) return std::nullopt;
    NamedTensors out;
    out.emplace_back(std::move(key), std::move(read->home.tensor));
    return out;
  } catch (const FormatError&) {
    return std::nullopt;
  }
}

}  // namespace

NamedTensors read_npz(const std::string& path, const std::vector<std::string>& keys,
                      const Storage& storage, WholeFile how) {
  return read_archive(MappedFile::open(path, storage, how), keys);
}

NamedTensors read_npz(const std::string& path, const std::vector<std::string>& keys,
                      const Storage& storage, WholeFile how, const ValuesDestination& destination) {
  if (keys.size() > 1 || how == WholeFile::kDirect || !io::is_local(path))
    return read_npz(path, keys, storage, how);
  if (auto placed = read_placed(path, keys, destination)) return std::move(*placed);
  const auto file = MappedFile::open(path, storage, how);
  NamedTensors out = read_archive(file, keys);
  // Where its one array's values lay (a view of the file's bytes): the next file's guess.
  t_layout = out.size() == 1 ? ValuesGuess::of(out.front().second, file->bytes()) : ValuesGuess{};
  return out;
}

void write_npz(const std::string& path, const NamedTensors& arrays, bool compressed) {
  int err = 0;
  zip_t* raw = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  if (raw == nullptr) {
    zip_error_t error;
    zip_error_init_with_code(&error, err);
    const std::string msg = zip_error_strerror(&error);
    zip_error_fini(&error);
    throw FormatError(fmt::format("{}: cannot create: {}", path, msg));
  }
  ZipPtr za(raw);
  // The encoded members stay alive until zip_close writes them.
  std::vector<std::vector<std::byte>> buffers;
  buffers.reserve(arrays.size());
  for (const auto& [key, tensor] : arrays) {
    buffers.push_back(encode_npy(tensor));
    const auto& b = buffers.back();
    zip_source_t* src = zip_source_buffer(za.get(), b.data(), b.size(), 0);
    if (src == nullptr) throw FormatError(fmt::format("{}: {}", path, zip_strerror(za.get())));
    const zip_int64_t index =
        zip_file_add(za.get(), (key + ".npy").c_str(), src, ZIP_FL_OVERWRITE | ZIP_FL_ENC_UTF_8);
    if (index < 0) {
      zip_source_free(src);
      throw FormatError(fmt::format("{}: member '{}': {}", path, key, zip_strerror(za.get())));
    }
    if (zip_set_file_compression(za.get(), static_cast<zip_uint64_t>(index),
                                 compressed ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0) != 0) {
      throw FormatError(fmt::format("{}: member '{}': {}", path, key, zip_strerror(za.get())));
    }
  }
  if (zip_close(za.get()) != 0) {
    const std::string msg = zip_strerror(za.get());
    ::unlink(path.c_str());
    throw FormatError(fmt::format("{}: cannot write: {}", path, msg));
  }
  (void)za.release();  // closed
}

// --- NpzStreamWriter: the zip layout (APPNOTE 4.3) of stored members, no zip64 ---
namespace {

constexpr uint32_t kLocalHeaderSignature = 0x04034b50;
constexpr uint32_t kCentralHeaderSignature = 0x02014b50;
constexpr uint32_t kEndSignature = 0x06054b50;
constexpr uint16_t kVersionNeeded = 20;              // 2.0: stored members, no zip64
constexpr uint16_t kVersionMadeBy = (3 << 8) | 20;   // Unix, 2.0
constexpr uint32_t kExternalAttributes = 0100644U << 16;  // a regular file, rw-r--r--
constexpr size_t kLocalHeaderBytes = 30;
constexpr size_t kCrcOffsetInLocalHeader = 14;

class LittleEndian {
 public:
  void u16(uint16_t v) {
    bytes_.push_back(static_cast<std::byte>(v & 0xFF));
    bytes_.push_back(static_cast<std::byte>(v >> 8));
  }
  void u32(uint32_t v) {
    u16(static_cast<uint16_t>(v & 0xFFFF));
    u16(static_cast<uint16_t>(v >> 16));
  }
  void text(const std::string& s) {
    for (char c : s)
      bytes_.push_back(static_cast<std::byte>(c));
  }
  std::span<const std::byte> bytes() const { return bytes_; }

 private:
  std::vector<std::byte> bytes_;
};

}  // namespace

NpzStreamWriter::NpzStreamWriter(const std::string& path)
    : out_(std::make_unique<FileOut>(path)) {
  // The members' modification time, in MS-DOS form (2-second resolution, from 1980).
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  if (localtime_r(&now, &local) != nullptr && local.tm_year >= 80) {
    dos_time_ = static_cast<uint16_t>((local.tm_hour << 11) | (local.tm_min << 5) | (local.tm_sec / 2));
    dos_date_ = static_cast<uint16_t>(((local.tm_year - 80) << 9) | ((local.tm_mon + 1) << 5) | local.tm_mday);
  } else {
    dos_date_ = (1 << 5) | 1;  // 1980-01-01
  }
}

NpzStreamWriter::~NpzStreamWriter() = default;

void NpzStreamWriter::write(std::span<const std::byte> bytes) {
  out_->write(bytes);
  offset_ += bytes.size();
}

void NpzStreamWriter::begin(const std::string& key, uint64_t bytes) {
  if (!out_ || in_member_) throw std::logic_error("NpzStreamWriter: begin after close or inside a member");
  Member m{.name = key + ".npy", .offset = offset_, .size = bytes, .crc = 0};
  if (m.name.size() > 0xFFFF) throw FormatError(fmt::format("{}: member name too long", out_->path()));
  if (offset_ + kLocalHeaderBytes + m.name.size() + bytes > kMaxBytes) {
    throw FormatError(fmt::format("{}: member '{}' of {} bytes would take the archive past 4 GiB "
                                  "(stored archives are written without zip64)",
                                  out_->path(), m.name, bytes));
  }
  LittleEndian h;
  h.u32(kLocalHeaderSignature);
  h.u16(kVersionNeeded);
  h.u16(0);  // flags
  h.u16(0);  // stored
  h.u16(dos_time_);
  h.u16(dos_date_);
  h.u32(0);  // CRC-32: written when the member ends
  h.u32(static_cast<uint32_t>(bytes));
  h.u32(static_cast<uint32_t>(bytes));
  h.u16(static_cast<uint16_t>(m.name.size()));
  h.u16(0);  // no extra field
  h.text(m.name);
  write(h.bytes());
  members_.push_back(std::move(m));
  left_ = bytes;
  in_member_ = true;
}

void NpzStreamWriter::append(std::span<const std::byte> bytes) {
  if (!in_member_ || bytes.size() > left_) {
    throw std::logic_error("NpzStreamWriter: append beyond the member's size");
  }
  members_.back().crc = crc32_ieee(bytes, members_.back().crc);
  write(bytes);
  left_ -= bytes.size();
}

void NpzStreamWriter::end() {
  if (!in_member_ || left_ != 0) {
    throw std::logic_error("NpzStreamWriter: end before the member's bytes were appended");
  }
  const Member& m = members_.back();
  std::array<std::byte, 4> crc{};
  for (size_t i = 0; i < 4; ++i)
    crc[i] = static_cast<std::byte>((m.crc >> (8 * i)) & 0xFF);
  out_->write_at(m.offset + kCrcOffsetInLocalHeader, crc);
  in_member_ = false;
}

void NpzStreamWriter::close() {
  if (!out_) return;
  if (in_member_) throw std::logic_error("NpzStreamWriter: close inside a member");
  if (members_.size() > 0xFFFF) throw FormatError(fmt::format("{}: too many members", out_->path()));
  const uint64_t directory_at = offset_;
  LittleEndian d;
  for (const Member& m : members_) {
    d.u32(kCentralHeaderSignature);
    d.u16(kVersionMadeBy);
    d.u16(kVersionNeeded);
    d.u16(0);  // flags
    d.u16(0);  // stored
    d.u16(dos_time_);
    d.u16(dos_date_);
    d.u32(m.crc);
    d.u32(static_cast<uint32_t>(m.size));
    d.u32(static_cast<uint32_t>(m.size));
    d.u16(static_cast<uint16_t>(m.name.size()));
    d.u16(0);  // extra field
    d.u16(0);  // comment
    d.u16(0);  // disk
    d.u16(0);  // internal attributes
    d.u32(kExternalAttributes);
    d.u32(static_cast<uint32_t>(m.offset));
    d.text(m.name);
  }
  const uint64_t directory_bytes = d.bytes().size();
  if (directory_at + directory_bytes + 22 > 0xFFFFFFFFULL) {
    throw FormatError(fmt::format("{}: the archive would pass 4 GiB (no zip64)", out_->path()));
  }
  d.u32(kEndSignature);
  d.u16(0);  // this disk
  d.u16(0);  // the directory's disk
  d.u16(static_cast<uint16_t>(members_.size()));
  d.u16(static_cast<uint16_t>(members_.size()));
  d.u32(static_cast<uint32_t>(directory_bytes));
  d.u32(static_cast<uint32_t>(directory_at));
  d.u16(0);  // comment
  write(d.bytes());
  out_->close();
  out_.reset();
}

}  // namespace pipeprof::pipelines::formats
