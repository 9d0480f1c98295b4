// Fuzz target: the IP-set op-stream reader and netlink message builder (everything
// ipsetApply does before the socket). A malformed stream must be an error, never a crash
// or an overflow; what is built must be whole netlink messages that fill the batch.
#include <linux/netlink.h>

#include <cstdint>
#include <cstdlib>

#include "common/netlink_read.h"
#include "ipset/ipset.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace palisade::ipset;
  Batch b;
  Result r;
  const bool ok = Build(data, size, 0xfffffff0u, &b, &r);
  if (ok != r.badInput.empty()) abort();
  if (!ok) return 0;
  for (const Batch::RevisionSlot& slot : b.revisions)
    if (slot.offset >= b.buf.size() || b.buf[slot.offset] != 0) abort();
  SetRevisions(&b, {{kHashIp, 4}, {kHashNet, 6}, {kHashIpPort, 5}});
  int left = static_cast<int>(b.buf.size());
  size_t messages = 0;
  for (auto* h = reinterpret_cast<const nlmsghdr*>(b.buf.data()); palisade::NlmsgOk(h, left);
       h = reinterpret_cast<const nlmsghdr*>(reinterpret_cast<const char*>(h) + NLMSG_ALIGN(h->nlmsg_len))) {
    left -= static_cast<int>(NLMSG_ALIGN(h->nlmsg_len));
    messages++;
  }
  if (left != 0 || messages != b.messages || b.bySeq.size() != messages) abort();
  return 0;
}
