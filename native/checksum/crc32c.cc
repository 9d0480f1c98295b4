#include "checksum/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace palisade::checksum {
namespace {

constexpr uint32_t kPoly = 0x82f63b78;  // reflected Castagnoli polynomial

std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[i] = c;
  }
  return t;
}

uint32_t Table(uint32_t c, const uint8_t* p, size_t n) {
  static const std::array<uint32_t, 256> table = MakeTable();
  while (n--) c = table[(c ^ *p++) & 0xff] ^ (c >> 8);
  return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t Hardware(uint32_t c, const uint8_t* p, size_t n) {
  uint64_t c64 = c;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c64 = _mm_crc32_u64(c64, v);
  }
  c = static_cast<uint32_t>(c64);
  for (; n; --n) c = _mm_crc32_u8(c, *p++);
  return c;
}
#endif

}  // namespace

uint32_t Crc32c(const uint8_t* data, size_t len) {
#if defined(__x86_64__)
  static const bool hardware = __builtin_cpu_supports("sse4.2");
  if (hardware) return ~Hardware(~0u, data, len);
#endif
  return ~Table(~0u, data, len);
}

}  // namespace palisade::checksum
