// Fuzz target: the iptables restore op stream, as both native transports take it, up to
// the kernel: decoding, the x_tables entries libiptc would get, and the nftables batch in
// iptables-nft's layout (set indices made up, nothing read back, nothing sent). A
// malformed stream must be an error, never a crash, a leak or an overflow.
#include <cstdint>
#include <cstdlib>

#include "iptc/legacy.h"
#include "iptc/nft.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace palisade::iptc;
  ApplyResult legacy = PrepareOnly(data, size);
  NftApplyResult nft = BuildOnlyNft(data, size);
  // Both decode the same stream: they agree on whether it is well formed.
  if (legacy.badInput.empty() != nft.badInput.empty()) abort();
  return 0;
}
