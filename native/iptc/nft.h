// iptables-nft without a fork: the restore transaction (the same op stream libiptc takes)
// programmed over netlink in the tables, chains and expressions iptables-nft 1.8.9 itself
// writes, so iptables-nft-save prints our rules exactly as the rendering has them and
// kube-proxy's own restores into the same tables keep working. One nftables batch per
// apply: all tables of the family commit or none do, and a refused rule is named.
#pragma once

#include <cstdint>
#include <string>

namespace palisade::iptc {

struct NftApplyResult {
  std::string badInput;
  int sysErrno = 0;
  std::string sysWhat;
  // Something this transport does not build (the caller runs iptables-nft-restore instead).
  std::string unsupported;
  bool failed = false;
  uint32_t failedTag = 0;
  int failedErrno = 0;
  std::string failedWhat;
  uint32_t ops = 0;
  uint32_t messages = 0;
  double prepareMs = 0, readMs = 0, commitMs = 0;
};

NftApplyResult ApplyNft(const uint8_t* ops, size_t len);
// Everything ApplyNft does without the kernel (no read-back, set indices made up, nothing
// sent): the fuzz target's entry.
NftApplyResult BuildOnlyNft(const uint8_t* ops, size_t len);

}  // namespace palisade::iptc
