// Fuzz target: the WireGuard change-stream reader and the SET_DEVICE message builder, and
// the GET reply reader. A malformed stream must be an error, never a crash; a well-formed
// one must split into messages no larger than asked that read back (with the reply
// reader, which understands the same attributes) as the same peers and allowed IPs. The
// raw input is also fed to the reply reader as a kernel message.
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "wg/wg.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace palisade::wg;
  {
    std::vector<uint8_t> copy(data, data + size);
    Device d;
    ParseGetReply(copy.data(), copy.size(), &d);
  }
  DeviceChange c;
  if (!ParseChange(data, size, &c).empty()) return 0;
  const size_t maxMsg = 512 + (size ? data[0] : 0) * 64;
  size_t wantAllowed = 0;
  for (const auto& p : c.peers)
    if (!(p.flags & kRemove)) wantAllowed += p.allowed.size();
  const auto msgs = BuildSetMessages(30, "wg0", c, maxMsg);
  size_t gotAllowed = 0;
  for (const auto& m : msgs) {
    if (m.size() > maxMsg) abort();
    Device d;
    ParseGetReply(m.data(), m.size(), &d);
    for (const auto& p : d.peers) gotAllowed += p.allowedIps.size();
  }
  if (gotAllowed != wantAllowed) abort();
  return 0;
}
