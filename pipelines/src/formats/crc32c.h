// CRC-32C (Castagnoli), as TFRecord, iSCSI and ext4 use it: ISA-L's crc32_iscsi when the build
// found libisal, else the SSE4.2 crc32 instruction when the CPU has it, else a table. And the
// CRC-32 of zip and gzip (IEEE 802.3): ISA-L's crc32_gzip_refl when found, else zlib's crc32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace pipeprof::pipelines::formats {

// The CRC-32C of `data` continuing from `crc` (0 for a fresh CRC): crc32c("123456789") is
// 0xE3069283, and crc32c(b, crc32c(a)) == crc32c(a + b).
uint32_t crc32c(std::span<const std::byte> data, uint32_t crc = 0);
inline uint32_t crc32c(std::string_view data, uint32_t crc = 0) {
  return crc32c(std::as_bytes(std::span(data.data(), data.size())), crc);
}

// The CRC-32 of zip, gzip and PNG (zlib's crc32) of `data` continuing from `crc` (0 for a fresh
// CRC): crc32_ieee("123456789") is 0xCBF43926.
uint32_t crc32_ieee(std::span<const std::byte> data, uint32_t crc = 0);

// TFRecord's (LevelDB's) masked CRC: rotated right by 15 bits plus a constant, so that a CRC of
// data holding CRCs is not degenerate.
inline uint32_t mask_crc(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8U;
}

// Which implementation runs: "isa-l", "sse4.2" or "table".
std::string_view crc32c_implementation();

}  // namespace pipeprof::pipelines::formats
