#include "formats/crc32c.h"

#include <algorithm>
#include <array>
#include <cstring>

#include <zlib.h>

#if defined(PIPEPROF_HAVE_ISAL)
#include <isa-l/crc.h>
#elif defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace pipeprof::pipelines::formats {
namespace {

// The portable fallback: one table, a byte at a time (reflected polynomial 0x82F63B78).
constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k)
      c = (c & 1U) != 0 ? (c >> 1) ^ 0x82F63B78U : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kTable = make_table();

[[maybe_unused]] uint32_t crc_table(const std::byte* p, size_t n, uint32_t crc) {
  crc = ~crc;
  for (size_t i = 0; i < n; ++i)
    crc = kTable[(crc ^ static_cast<uint8_t>(p[i])) & 0xFFU] ^ (crc >> 8);
  return ~crc;
}

#if !defined(PIPEPROF_HAVE_ISAL) && defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc_sse42(const std::byte* p, size_t n, uint32_t crc) {
  uint64_t c = ~crc;
  while (n >= 8) {
    uint64_t v = 0;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<uint32_t>(c);
  while (n > 0) {
    c32 = _mm_crc32_u8(c32, static_cast<uint8_t>(*p));
    ++p;
    --n;
  }
  return ~c32;
}

bool have_sse42() {
  static const bool kHave = __builtin_cpu_supports("sse4.2");
  return kHave;
}
#endif

}  // namespace

uint32_t crc32c(std::span<const std::byte> data, uint32_t crc) {
#if defined(PIPEPROF_HAVE_ISAL)
  // ISA-L's crc32_iscsi neither inverts its seed nor its result; its length is an int.
  uint32_t c = ~crc;
  auto* p = reinterpret_cast<unsigned char*>(const_cast<std::byte*>(data.data()));
  size_t n = data.size();
  do {
    const size_t chunk = std::min<size_t>(n, size_t{1} << 30);
    c = crc32_iscsi(p, static_cast<int>(chunk), c);
    p += chunk;
    n -= chunk;
  } while (n > 0);
  return ~c;
#else
#if defined(__x86_64__)
  if (have_sse42()) return crc_sse42(data.data(), data.size(), crc);
#endif
  return crc_table(data.data(), data.size(), crc);
#endif
}

uint32_t crc32_ieee(std::span<const std::byte> data, uint32_t crc) {
  auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size();
#if defined(PIPEPROF_HAVE_ISAL)
  // crc32_gzip_refl takes and returns the CRC as zlib does (seed 0 for a fresh one).
  return crc32_gzip_refl(crc, const_cast<unsigned char*>(p), n);
#else
  uLong c = crc;
  while (n > 0) {
    const size_t chunk = std::min<size_t>(n, size_t{1} << 30);
    c = ::crc32(c, p, static_cast<uInt>(chunk));
    p += chunk;
    n -= chunk;
  }
  return static_cast<uint32_t>(c);
#endif
}

std::string_view crc32c_implementation() {
#if defined(PIPEPROF_HAVE_ISAL)
  return "isa-l";
#else
#if defined(__x86_64__)
  if (have_sse42()) return "sse4.2";
#endif
  return "table";
#endif
}

}  // namespace pipeprof::pipelines::formats
