// One iptables rule as the JS side describes it (src/dataplane/backends/iptables/restore-ops.ts writes it):
// the entry's own fields (protocol, addresses, interfaces, goto), its matches and its
// target, in iptables's terms. Both native transports build from it: x_tables entries
// (libiptc) and, later, iptables-nft's expressions. Read from the op stream by
// DecodeRule(), which refuses anything out of range.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/op_reader.h"

namespace palisade::xt {

struct Addr {
  uint8_t bytes[16] = {};
  uint8_t prefix = 0;  // 0: any address
  bool inv = false;
};

struct Iface {
  std::string name;  // empty: any interface; a trailing '+' matches a prefix
  bool inv = false;
};

enum class MatchKind : uint8_t {
  Comment = 1,
  Set = 2,
  Multiport = 3,
  Icmp = 4,
  Mark = 5,
  Conntrack = 6,
  Addrtype = 7,
  Rpfilter = 8,
  Limit = 9
};
enum class TargetKind : uint8_t {
  Standard = 1,
  Mark = 2,
  Log = 3,
  Reject = 4,
  Notrack = 5,
  Masquerade = 6,
  Snat = 7,
  Dnat = 8
};

// ct states, rpfilter flags, address types: the JS side's numbering, mapped to the
// kernel's constants in encode.cc.
enum CtState : uint8_t { kInvalid = 0, kEstablished, kRelated, kNew, kUntracked, kSnat, kDnat, kCtStates };
enum RpfFlag : uint8_t { kRpfLoose = 1, kRpfValidMark = 2, kRpfAcceptLocal = 4, kRpfInvert = 8 };
constexpr uint8_t kAddrTypes = 12;  // UNSPEC .. XRESOLVE, in the kernel's order
// addrtype's --limit-iface-in / --limit-iface-out.
enum AddrLimit : uint8_t { kAddrNoLimit = 0, kAddrLimitIn = 1, kAddrLimitOut = 2 };

struct Match {
  MatchKind kind = MatchKind::Comment;
  bool inv = false;
  std::string text;  // comment; set name
  uint8_t dim = 0;   // set: dimensions, and which are "src" (bit i-1 for dimension i)
  uint8_t srcBits = 0;
  uint8_t dir = 0;  // multiport, addrtype: 0 source, 1 destination
  std::vector<std::pair<uint16_t, uint16_t>> ports;
  uint8_t icmpType = 0, codeMin = 0, codeMax = 0xff;
  uint32_t value = 0, mask = 0;  // mark; limit: avg, burst
  uint16_t states = 0;           // conntrack: bit per CtState
  uint8_t addrType = 0;
  uint8_t flags = 0;  // rpfilter; addrtype: an AddrLimit
};

struct Target {
  TargetKind kind = TargetKind::Standard;
  std::string name;  // standard: ACCEPT, DROP, RETURN or a chain; log: prefix
  uint32_t mark = 0, mask = 0;
  uint8_t level = 0;
  bool randomFully = false;
  bool alias = false;                 // notrack: written as `-j NOTRACK`
  uint8_t addr[16] = {};              // snat, dnat: the first address
  uint8_t addrLast[16] = {};          // snat, dnat: the last address (the first for one)
  uint16_t portMin = 0, portMax = 0;  // nat: the ports to translate to (0, 0: the kernel's choice)
};

struct Rule {
  uint8_t proto = 0;
  bool protoInv = false;
  bool isGoto = false;
  Addr src, dst;
  Iface in, out;
  std::vector<Match> matches;
  Target target;
};

// Limits of the kernel structures the fields are copied into.
constexpr size_t kIfNameMax = 15;
constexpr size_t kChainMax = 28;
constexpr size_t kCommentMax = 255;
constexpr size_t kSetNameMax = 31;
constexpr size_t kLogPrefixMax = 29;
constexpr size_t kMaxMatches = 16;
constexpr size_t kMultiportMax = 15;

Rule DecodeRule(OpReader& r, int family);

}  // namespace palisade::xt
