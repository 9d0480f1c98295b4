// Fuzz target: the route/neighbour op-stream reader (everything routeApply does before the
// socket), then the route attribute parser on what it built. A malformed stream must be an
// error, never a crash or an overflow; a well-formed one must read back as it was written.
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "common/netlink_read.h"
#include "rtnl/routes.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace palisade::rtnl;
  RouteBatch b;
  RouteResult r;
  const bool ok = BuildRoutes(data, size, 0xfffffff0u, &b, &r);
  if (ok != r.badInput.empty()) abort();
  if (!ok) return 0;
  if (b.used > b.buf.size() || r.ops != size / kRouteOpSize) abort();
  int left = static_cast<int>(b.used);
  size_t i = 0;
  for (auto* h = reinterpret_cast<const nlmsghdr*>(b.buf.data()); palisade::NlmsgOk(h, left);
       h = mnl_nlmsg_next(h, &left), i++) {
    const uint8_t* op = data + i * kRouteOpSize;
    if (h->nlmsg_type != RTM_NEWROUTE && h->nlmsg_type != RTM_DELROUTE) continue;
    const RouteAttrs a = ParseRouteAttrs(h);
    const size_t alen = op[5] == 4 ? 4 : 16;
    uint32_t ifindex;
    std::memcpy(&ifindex, op + 6, 4);
    uint32_t table;
    std::memcpy(&table, op + 69, 4);
    if (!table) table = RT_TABLE_MAIN;
    if (!a.dst || std::memcmp(a.dst, op + 11, alen) != 0 || static_cast<uint32_t>(a.oif) != ifindex) abort();
    if (a.table != table) abort();
  }
  if (i != r.ops || left != 0) abort();
  return 0;
}
