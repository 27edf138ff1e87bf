// numpy's .npz archives: a zip (libzip) of .npy members, stored or deflated. Each member is
// decoded as in npy.h. A stored member (numpy's savez) is checked (its CRC-32, with ISA-L) and
// decoded where it lies in the file's mapping, a zero-copy view when the layout allows; a deflated
// one is inflated straight into the tensor when the layout allows, in one pass. A member's declared size is checked against the archive before anything
// is allocated: a stored member must fit in the file, a deflated one within deflate's largest
// ratio (1032:1) of its compressed size. The members' CRC-32s are checked.
#pragma once

#include "pipeprof/pipelines/formats.h"  // read_npz, npz_keys, write_npz


#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "formats/file_out.h"
#include "formats/npy.h"

namespace pipeprof::pipelines::formats {

// read_npz, the archive's one array (or the one key asked for) read with its values straight into
// `destination`'s memory when the file is laid out as the last archive this thread read (a local
// file of the same size, its values at the same place: checked after the read, the member's CRC-32
// included); as read_npz otherwise, and the array's tensor is then not in `destination`.
NamedTensors read_npz(const std::string& path, const std::vector<std::string>& keys,
                      const Storage& storage, WholeFile how, const ValuesDestination& destination);

// A stored (uncompressed) .npz archive written member by member, each member's bytes streamed as
// they are made, as numpy's savez lays it out: for data generation, where holding a file's arrays
// in memory (and copying them into a zip library's buffers) costs more than making them. Each
// member's zip CRC-32 (ISA-L) is computed as its bytes pass and written into its local header when
// it ends; the central directory is written by close(). No zip64: a member, and the archive, must
// stay below 4 GiB (kMaxBytes); write_npz (libzip) writes larger archives. Throws FormatError
// naming the file on a failed write; an unfinished archive is left as it is (write it under a
// temporary name).
class NpzStreamWriter {
 public:
  static constexpr uint64_t kMaxBytes = 0xFFFFFFFFULL - (uint64_t{1} << 20);

  explicit NpzStreamWriter(const std::string& path);
  ~NpzStreamWriter();
  NpzStreamWriter(const NpzStreamWriter&) = delete;
  NpzStreamWriter& operator=(const NpzStreamWriter&) = delete;

  // Starts member `key`.npy of exactly `bytes` bytes (its .npy header included).
  void begin(const std::string& key, uint64_t bytes);
  void append(std::span<const std::byte> bytes);
  void end();    // the member's bytes must all have been appended
  void close();  // writes the central directory and closes the file

 private:
  struct Member {
    std::string name;
    uint64_t offset = 0, size = 0;
    uint32_t crc = 0;
  };
  void write(std::span<const std::byte> bytes);

  std::unique_ptr<FileOut> out_;  // null once closed
  uint64_t offset_ = 0;
  uint64_t left_ = 0;
  bool in_member_ = false;
  uint16_t dos_time_ = 0, dos_date_ = 0;
  std::vector<Member> members_;
};

}  // namespace pipeprof::pipelines::formats
