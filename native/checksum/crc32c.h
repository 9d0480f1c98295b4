#pragma once

#include <cstddef>
#include <cstdint>

namespace palisade::checksum {

// CRC-32C (Castagnoli), as snappy's framing format sums each chunk: the CPU's crc32
// instruction where it has SSE 4.2, a table otherwise.
uint32_t Crc32c(const uint8_t* data, size_t len);

}  // namespace palisade::checksum
