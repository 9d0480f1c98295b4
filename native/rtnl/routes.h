// Route and neighbour programming over rtnetlink: a batch of replace/delete operations
// sent with one sendmsg (the kernel handles them in order, answering each), and a dump of
// the main table's routes of one protocol. Plain C++; runs on a worker thread.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

struct nlmsghdr;

namespace palisade::rtnl {

// "addr/prefix" for an address of `family` (AF_INET, AF_INET6), or just "addr" when
// `prefix` is negative; empty if unprintable.
std::string AddrString(int family, const void* data, int prefix);
// "aa:bb:cc:dd:ee:ff"
std::string MacString(const uint8_t* mac);

// A route message's destination (null for a default route), output interface and gateway.
struct RouteAttrs {
  const void* dst = nullptr;
  int oif = 0;
  const void* gateway = nullptr;
  uint32_t table = 0;  // RTA_TABLE, else rtm_table
  uint32_t mtu = 0;    // RTA_METRICS' RTAX_MTU, 0 when none
};
RouteAttrs ParseRouteAttrs(const nlmsghdr* h);

// Op stream (little-endian): u8 op, u32 tag, u8 family (4|6), u32 ifindex,
// u8 prefixLen, 16 bytes address (IPv4 in the first 4), u8 protocol, u8 scope,
// 6 bytes MAC (neighbour and FDB ops), 16 bytes gateway (routes; all zero: none),
// u8 route type (RTN_*, 0 meaning unicast), u8 route flags (RTNH_F_ONLINK), 16 bytes
// preferred source (route replaces; all zero: none), u32 routing table (0: main), u32 MTU
// (route replaces: RTAX_MTU; 0: none).
// Routes: no output interface when ifindex is 0 (a blackhole). FDB ops: the address is
// the remote VTEP's IP (NDA_DST), the MAC its VTEP MAC, on the VXLAN device `ifindex`.
enum RouteOp : uint8_t {
  kRouteReplace = 1,
  kRouteDelete = 2,
  kNeighReplace = 3,
  kNeighDelete = 4,
  kFdbReplace = 5,
  kFdbDelete = 6
};
constexpr size_t kRouteOpSize = 1 + 4 + 1 + 4 + 1 + 16 + 1 + 1 + 6 + 16 + 1 + 1 + 16 + 4 + 4;

struct RouteFailure {
  uint32_t tag;
  int err;
};

struct RouteResult {
  std::vector<RouteFailure> failures;
  size_t ops = 0;
  int sysErrno = 0;
  std::string sysWhat;
  std::string badInput;
};

// The largest message one op becomes (a route: header, rtmsg, RTA_DST, RTA_OIF, RTA_GATEWAY,
// RTA_PREFSRC, RTA_TABLE, RTA_METRICS with RTAX_MTU).
constexpr size_t kMaxRouteMsg = 160;

// The messages of a batch, where each starts, and which op each sequence number came from.
// They go to the kernel in chunks of at most kRouteChunk bytes and kRouteChunkMsgs
// messages, each chunk's answers read before the next is sent: one sendmsg of 10,000
// routes is too long for the socket (EMSGSIZE), and each answer is its own skb, charged
// at about a kilobyte against the receive buffer (ENOBUFS beyond a few hundred).
constexpr size_t kRouteChunk = 64 * 1024;
constexpr size_t kRouteChunkMsgs = 128;
struct RouteBatch {
  std::vector<char> buf;
  std::vector<size_t> starts;
  size_t used = 0;
  uint32_t nextSeq = 0;
  std::unordered_map<uint32_t, uint32_t> tags;
};

// Everything ApplyRoutes does before the socket (the fuzz target's entry): reads the op
// stream into `b`; false, with `out->badInput`, for a malformed stream.
bool BuildRoutes(const uint8_t* ops, size_t len, uint32_t firstSeq, RouteBatch* b, RouteResult* out);

RouteResult ApplyRoutes(const uint8_t* ops, size_t len);

struct DumpedRoute {
  int family;
  uint32_t table;
  std::string dst;  // "a.b.c.d/len"
  int ifindex;
  int protocol;
  int scope;
  int type;             // RTN_*
  int flags;            // rtm_flags (RTNH_F_ONLINK)
  std::string gateway;  // "" when none
  uint32_t mtu;         // RTAX_MTU, 0 when none
};

struct RouteDump {
  std::vector<DumpedRoute> routes;
  int sysErrno = 0;
  std::string sysWhat;
};

// One table's routes (RT_TABLE_MAIN for the main table) of one protocol; protocol < 0:
// every protocol's routes.
RouteDump DumpRoutes(int protocol, uint32_t table);

// Permanent neighbour (AF_INET/AF_INET6) and FDB (AF_BRIDGE) entries of one interface.
struct DumpedNeigh {
  int family;       // 4, 6, or 7 for an FDB entry
  std::string dst;  // address without prefix
  std::string mac;  // "aa:bb:..."
  int state;
  int flags;
};

struct NeighDump {
  std::vector<DumpedNeigh> neighs;
  int sysErrno = 0;
  std::string sysWhat;
};

NeighDump DumpNeighs(int ifindex);

}  // namespace palisade::rtnl
