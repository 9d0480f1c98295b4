// Fuzz target: the nftables op-stream reader and batch builder (everything nftCommit does
// before the socket) on arbitrary bytes. A malformed stream must be an error, never a
// crash, an overflow or a leak.
#include <cstddef>
#include <cstdint>

#include "nft/batch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  palisade::nft::BuildOnly(data, size);
  return 0;
}
