#include "formats/npz.h"

#include <fmt/format.h>
#include <zip.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <unistd.h>

#include "formats/format_error.h"
#include "formats/mapped_file.h"
#include "formats/npy.h"

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

// The archive over the mapped file (libzip reads it from memory).
ZipPtr open_archive(const MappedFile& file) {
  // libzip takes an empty file for an empty archive; numpy never writes one.
  if (file.size() == 0) throw FormatError(fmt::format("{}: offset 0: an empty file, not a zip archive", file.path()));
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* src = zip_source_buffer_create(file.bytes().data(), file.size(), 0, &error);
  if (src == nullptr) {
    const std::string msg = zip_message(&error);
    zip_error_fini(&error);
    throw FormatError(fmt::format("{}: {}", file.path(), msg));
  }
  zip_t* za = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &error);
  if (za == nullptr) {
    const std::string msg = zip_message(&error);
    zip_source_free(src);
    zip_error_fini(&error);
    throw FormatError(fmt::format("{}: not a readable zip archive: {}", file.path(), msg));
  }
  zip_error_fini(&error);
  return ZipPtr(za);
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

Tensor read_member(zip_t* za, zip_uint64_t index, const MappedFile& file, const std::string& name) {
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

std::vector<std::string> npz_keys(const std::string& path) {
  const auto file = MappedFile::open(path);
  ZipPtr za = open_archive(*file);
  std::vector<std::string> keys;
  const zip_int64_t n = zip_get_num_entries(za.get(), 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    const char* name = zip_get_name(za.get(), static_cast<zip_uint64_t>(i), 0);
    if (name == nullptr) throw FormatError(fmt::format("{}: entry {}: {}", path, i, zip_strerror(za.get())));
    keys.push_back(key_of(name));
  }
  return keys;
}

NamedTensors read_npz(const std::string& path, const std::vector<std::string>& keys) {
  const auto file = MappedFile::open(path);
  ZipPtr za = open_archive(*file);
  NamedTensors out;
  const zip_int64_t n = zip_get_num_entries(za.get(), 0);
  if (keys.empty()) {
    for (zip_int64_t i = 0; i < n; ++i) {
      const auto index = static_cast<zip_uint64_t>(i);
      const char* name = zip_get_name(za.get(), index, 0);
      if (name == nullptr) throw FormatError(fmt::format("{}: entry {}: {}", path, i, zip_strerror(za.get())));
      out.emplace_back(key_of(name), read_member(za.get(), index, *file, name));
    }
    return out;
  }
  for (const std::string& key : keys) {
    const std::string name = key + ".npy";
    zip_int64_t index = zip_name_locate(za.get(), name.c_str(), 0);
    if (index < 0) {
      index = zip_name_locate(za.get(), key.c_str(), 0);
      if (index < 0) throw FormatError(fmt::format("{}: no array '{}' in the archive", path, key));
    }
    const char* stored = zip_get_name(za.get(), static_cast<zip_uint64_t>(index), 0);
    out.emplace_back(key, read_member(za.get(), static_cast<zip_uint64_t>(index), *file,
                                      stored != nullptr ? stored : name));
  }
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

}  // namespace pipeprof::pipelines::formats
