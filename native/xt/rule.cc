// DecodeRule: the op stream's rule layout (src/dataplane/backends/iptables/restore-ops.ts), checked field by
// field against the kernel structures' limits.
#include "xt/rule.h"

namespace palisade::xt {
namespace {

Addr DecodeAddr(OpReader& r, int family) {
  Addr a;
  r.raw(a.bytes, sizeof a.bytes);
  a.prefix = r.u8();
  a.inv = r.u8() != 0;
  if (a.prefix > (family == 4 ? 32 : 128)) throw BadOps("an address prefix is longer than the family allows");
  return a;
}

Iface DecodeIface(OpReader& r) {
  Iface i;
  i.name = r.str(kIfNameMax);
  i.inv = r.u8() != 0;
  return i;
}

Match DecodeMatch(OpReader& r) {
  Match m;
  m.kind = static_cast<MatchKind>(r.u8());
  m.inv = r.u8() != 0;
  switch (m.kind) {
    case MatchKind::Comment:
      m.text = r.str(kCommentMax);
      break;
    case MatchKind::Set:
      m.text = r.str(kSetNameMax);
      m.dim = r.u8();
      m.srcBits = r.u8();
      if (m.dim < 1 || m.dim > 6) throw BadOps("a set match has 1 to 6 dimensions");
      break;
    case MatchKind::Multiport: {
      m.dir = r.u8();
      size_t n = r.u8();
      size_t slots = 0;
      for (size_t i = 0; i < n; i++) {
        uint16_t first = r.u16(), last = r.u16();
        if (first > last) throw BadOps("a port range ends before it starts");
        m.ports.emplace_back(first, last);
        slots += first == last ? 1 : 2;
      }
      if (m.dir > 1 || !n || slots > kMultiportMax)
        throw BadOps("a multiport match takes 1 to 15 ports (a range counts twice)");
      break;
    }
    case MatchKind::Icmp:
      m.icmpType = r.u8();
      m.codeMin = r.u8();
      m.codeMax = r.u8();
      break;
    case MatchKind::Mark:
      m.value = r.u32();
      m.mask = r.u32();
      break;
    case MatchKind::Limit:
      m.value = r.u32();
      m.mask = r.u32();
      // The average interval divides (nft's rate, the kernel's credit): never 0 (fuzzing found this).
      if (m.value == 0) throw BadOps("a limit's average interval must not be 0");
      break;
    case MatchKind::Conntrack:
      m.states = r.u16();
      if (!m.states || m.states >> kCtStates) throw BadOps("a conntrack match needs known states");
      break;
    case MatchKind::Addrtype:
      m.dir = r.u8();
      m.addrType = r.u8();
      m.flags = r.u8();
      if (m.dir > 1 || m.addrType >= kAddrTypes) throw BadOps("unknown address type");
      if (m.flags > kAddrLimitOut) throw BadOps("unknown address type interface limit");
      break;
    case MatchKind::Rpfilter:
      m.flags = r.u8();
      if (m.flags > 15) throw BadOps("unknown rpfilter flags");
      break;
    default:
      throw BadOps("unknown match kind " + std::to_string(static_cast<int>(m.kind)));
  }
  return m;
}

// A NAT target's port range: both 0 (the kernel chooses), or first <= last, neither 0.
void ReadPorts(OpReader& r, Target& t) {
  t.portMin = r.u16();
  t.portMax = r.u16();
  if ((t.portMin == 0) != (t.portMax == 0) || t.portMin > t.portMax)
    throw BadOps("a NAT port range is 0-0 or first <= last, neither 0");
}

Target DecodeTarget(OpReader& r) {
  Target t;
  t.kind = static_cast<TargetKind>(r.u8());
  switch (t.kind) {
    case TargetKind::Standard:
      t.name = r.str(kChainMax);
      if (t.name.empty()) throw BadOps("a rule needs a target");
      break;
    case TargetKind::Mark:
      t.mark = r.u32();
      t.mask = r.u32();
      break;
    case TargetKind::Log:
      t.level = r.u8();
      t.name = r.str(kLogPrefixMax);
      if (t.level > 7) throw BadOps("a log level is 0 to 7");
      break;
    case TargetKind::Reject:
      break;
    case TargetKind::Notrack:
      t.alias = r.u8() != 0;
      break;
    case TargetKind::Masquerade:
      t.randomFully = r.u8() != 0;
      ReadPorts(r, t);
      break;
    case TargetKind::Snat:
    case TargetKind::Dnat:
      r.raw(t.addr, sizeof t.addr);
      r.raw(t.addrLast, sizeof t.addrLast);
      ReadPorts(r, t);
      t.randomFully = r.u8() != 0;
      break;
    default:
      throw BadOps("unknown target kind " + std::to_string(static_cast<int>(t.kind)));
  }
  return t;
}

}  // namespace

Rule DecodeRule(OpReader& r, int family) {
  Rule rule;
  rule.proto = r.u8();
  rule.protoInv = r.u8() != 0;
  rule.isGoto = r.u8() != 0;
  rule.src = DecodeAddr(r, family);
  rule.dst = DecodeAddr(r, family);
  rule.in = DecodeIface(r);
  rule.out = DecodeIface(r);
  size_t n = r.u8();
  if (n > kMaxMatches) throw BadOps("a rule has more than 16 matches");
  for (size_t i = 0; i < n; i++) rule.matches.push_back(DecodeMatch(r));
  rule.target = DecodeTarget(r);
  if (rule.isGoto && rule.target.kind != TargetKind::Standard) throw BadOps("a goto needs a chain");
  return rule;
}

}  // namespace palisade::xt
