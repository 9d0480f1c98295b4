// Extension payloads, revision by revision as iptables 1.8.9 picks them on current
// kernels; test/kernel/iptables-native.test.ts compares our entries byte for byte with
// what iptables-legacy writes for every rule shape palisade renders.
#include "xt/encode.h"

#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <linux/netfilter/ipset/ip_set.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/x_tables.h>
#include <linux/netfilter/xt_CT.h>
#include <linux/netfilter/xt_LOG.h>
#include <linux/netfilter/xt_addrtype.h>
#include <linux/netfilter/xt_comment.h>
#include <linux/netfilter/xt_conntrack.h>
#include <linux/netfilter/xt_limit.h>
#include <linux/netfilter/xt_mark.h>
#include <linux/netfilter/xt_multiport.h>
#include <linux/netfilter/xt_rpfilter.h>
#include <linux/netfilter/xt_set.h>
#include <linux/netfilter_ipv4/ip_tables.h>
#include <linux/netfilter_ipv4/ipt_REJECT.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#include <linux/netfilter_ipv6/ip6t_REJECT.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

namespace palisade::xt {
namespace {

template <typename T>
Blob Of(const char* name, uint8_t rev, const T& info, size_t userSize = sizeof(T)) {
  static_assert(sizeof(T) <= kMaxInfo, "an info larger than Blob holds");
  Blob b;
  b.name = name;
  b.revision = rev;
  b.size = sizeof(T);
  b.userSize = static_cast<uint16_t>(userSize);
  std::memcpy(b.data, &info, sizeof(T));
  return b;
}

Blob Set(const Match& m, int family, SetIndex& sets) {
  xt_set_info_match_v4 info{};
  info.match_set.index = sets.Get(m.text);
  info.match_set.dim = m.dim;
  for (uint8_t i = 0; i < m.dim; i++)
    if (m.srcBits >> i & 1) info.match_set.flags |= 1 << (i + 1);
  if (m.inv) info.match_set.flags |= IPSET_INV_MATCH;
  return Of("set", 4, info);
}

Blob Multiport(const Match& m) {
  xt_multiport_v1 info{};
  info.flags = m.dir == 0 ? XT_MULTIPORT_SOURCE : XT_MULTIPORT_DESTINATION;
  for (const auto& [first, last] : m.ports) {
    info.ports[info.count] = first;
    if (first != last) {
      info.pflags[info.count++] = 1;
      info.ports[info.count] = last;
    }
    info.count++;
  }
  info.invert = m.inv;
  return Of("multiport", 1, info);
}

Blob Icmp(const Match& m, int family) {
  if (family == 4) {
    ipt_icmp info{m.icmpType, {m.codeMin, m.codeMax}, static_cast<uint8_t>(m.inv ? IPT_ICMP_INV : 0)};
    return Of("icmp", 0, info);
  }
  ip6t_icmp info{m.icmpType, {m.codeMin, m.codeMax}, static_cast<uint8_t>(m.inv ? IP6T_ICMP_INV : 0)};
  return Of("icmp6", 0, info);
}

Blob Conntrack(const Match& m) {
  static const uint16_t kBits[kCtStates] = {
      XT_CONNTRACK_STATE_INVALID,
      XT_CONNTRACK_STATE_BIT(IP_CT_ESTABLISHED),
      XT_CONNTRACK_STATE_BIT(IP_CT_RELATED),
      XT_CONNTRACK_STATE_BIT(IP_CT_NEW),
      XT_CONNTRACK_STATE_UNTRACKED,
      XT_CONNTRACK_STATE_SNAT,
      XT_CONNTRACK_STATE_DNAT,
  };
  xt_conntrack_mtinfo3 info{};
  info.match_flags = XT_CONNTRACK_STATE;
  for (int s = 0; s < kCtStates; s++)
    if (m.states >> s & 1) info.state_mask |= kBits[s];
  if (m.inv) info.invert_flags = XT_CONNTRACK_STATE;
  return Of("conntrack", 3, info);
}

Blob Addrtype(const Match& m) {
  xt_addrtype_info_v1 info{};
  uint16_t bit = static_cast<uint16_t>(1 << m.addrType);
  if (m.dir == 0) {
    info.source = bit;
    if (m.inv) info.flags |= XT_ADDRTYPE_INVERT_SOURCE;
  } else {
    info.dest = bit;
    if (m.inv) info.flags |= XT_ADDRTYPE_INVERT_DEST;
  }
  if (m.flags == kAddrLimitIn) info.flags |= XT_ADDRTYPE_LIMIT_IFACE_IN;
  if (m.flags == kAddrLimitOut) info.flags |= XT_ADDRTYPE_LIMIT_IFACE_OUT;
  return Of("addrtype", 1, info);
}

Blob Rpfilter(const Match& m) {
  xt_rpfilter_info info{};
  if (m.flags & kRpfLoose) info.flags |= XT_RPFILTER_LOOSE;
  if (m.flags & kRpfValidMark) info.flags |= XT_RPFILTER_VALID_MARK;
  if (m.flags & kRpfAcceptLocal) info.flags |= XT_RPFILTER_ACCEPT_LOCAL;
  if (m.flags & kRpfInvert) info.flags |= XT_RPFILTER_INVERT;
  return Of("rpfilter", 0, info);
}

// The NAT targets as iptables 1.8.9 writes them: MASQUERADE revision 0 (IPv4: one compat
// range), SNAT revision 0 (IPv4) or 1 (IPv6), DNAT revision 2; an address range as its
// first and last, a port range in network order with PROTO_SPECIFIED.
template <typename Range>
void FillRange(Range& info, const Target& t, int family, uint32_t flags) {
  info.flags = flags;
  if (flags & NF_NAT_RANGE_MAP_IPS) {
    std::memcpy(&info.min_addr, t.addr, family == 4 ? 4 : 16);
    std::memcpy(&info.max_addr, t.addrLast, family == 4 ? 4 : 16);
  }
  info.min_proto.all = htons(t.portMin);
  info.max_proto.all = htons(t.portMax);
}

Blob Nat(const Target& t, int family, const char* name) {
  uint32_t flags = t.kind == TargetKind::Masquerade ? 0 : NF_NAT_RANGE_MAP_IPS;
  if (t.randomFully) flags |= NF_NAT_RANGE_PROTO_RANDOM_FULLY;
  if (t.portMin != 0) flags |= NF_NAT_RANGE_PROTO_SPECIFIED;
  if (family == 4 && t.kind != TargetKind::Dnat) {
    nf_nat_ipv4_multi_range_compat info{};
    info.rangesize = 1;
    info.range[0].flags = flags;
    if (flags & NF_NAT_RANGE_MAP_IPS) {
      std::memcpy(&info.range[0].min_ip, t.addr, 4);
      std::memcpy(&info.range[0].max_ip, t.addrLast, 4);
    }
    info.range[0].min.all = htons(t.portMin);
    info.range[0].max.all = htons(t.portMax);
    return Of(name, 0, info);
  }
  if (t.kind != TargetKind::Dnat) {
    nf_nat_range info{};
    FillRange(info, t, family, flags);
    return Of(name, t.kind == TargetKind::Snat ? 1 : 0, info);
  }
  nf_nat_range2 info{};
  FillRange(info, t, family, flags);
  return Of(name, 2, info);
}

}  // namespace

SetIndex::~SetIndex() {
  if (fd_ >= 0) close(fd_);
}

uint16_t SetIndex::Get(const std::string& name) {
  auto it = cache_.find(name);
  if (it != cache_.end()) return it->second;
  if (offline_) return cache_.emplace(name, static_cast<uint16_t>(cache_.size())).first->second;
  if (fd_ < 0) {
    fd_ = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
    if (fd_ < 0) throw RuleError("cannot open a socket to look up IP sets", errno);
    ip_set_req_version v{IP_SET_OP_VERSION, 0};
    socklen_t len = sizeof v;
    if (getsockopt(fd_, SOL_IP, SO_IP_SET, &v, &len) != 0)
      throw RuleError("cannot ask the kernel for its ipset protocol version", errno);
    version_ = v.version;
  }
  ip_set_req_get_set_family req{};
  req.op = IP_SET_OP_GET_FNAME;
  req.version = version_;
  std::strncpy(req.set.name, name.c_str(), IPSET_MAXNAMELEN - 1);
  socklen_t len = sizeof req;
  if (getsockopt(fd_, SOL_IP, SO_IP_SET, &req, &len) != 0) throw RuleError("cannot look up IP set " + name, errno);
  if (req.set.index == IPSET_INVALID_ID) throw RuleError("IP set " + name + " does not exist", ENOENT);
  if (req.family != static_cast<unsigned>(family_ == 4 ? NFPROTO_IPV4 : NFPROTO_IPV6))
    throw RuleError("IP set " + name + " is of the other IP family", EINVAL);
  cache_.emplace(name, req.set.index);
  return req.set.index;
}

Blob EncodeMatch(const Match& m, int family, SetIndex& sets) {
  switch (m.kind) {
    case MatchKind::Comment: {
      xt_comment_info info{};
      std::memcpy(info.comment, m.text.data(), m.text.size());
      return Of("comment", 0, info);
    }
    case MatchKind::Set:
      return Set(m, family, sets);
    case MatchKind::Multiport:
      return Multiport(m);
    case MatchKind::Icmp:
      return Icmp(m, family);
    case MatchKind::Mark: {
      xt_mark_mtinfo1 info{};
      info.mark = m.value;
      info.mask = m.mask;
      info.invert = m.inv;
      return Of("mark", 1, info);
    }
    case MatchKind::Conntrack:
      return Conntrack(m);
    case MatchKind::Addrtype:
      return Addrtype(m);
    case MatchKind::Rpfilter:
      return Rpfilter(m);
    case MatchKind::Limit: {
      xt_rateinfo info{};
      info.avg = m.value;
      info.burst = m.mask;
      return Of("limit", 0, info, offsetof(xt_rateinfo, prev));
    }
  }
  throw BadOps("unknown match kind");
}

Blob EncodeTarget(const Target& t, int family) {
  switch (t.kind) {
    case TargetKind::Standard: {
      Blob b;
      b.name = t.name.c_str();
      return b;
    }
    case TargetKind::Mark: {
      xt_mark_tginfo2 info{t.mark, t.mask};
      return Of("MARK", 2, info);
    }
    case TargetKind::Log: {
      xt_log_info info{};
      info.level = t.level;
      std::memcpy(info.prefix, t.name.data(), t.name.size());
      return Of("LOG", 0, info);
    }
    case TargetKind::Reject:
      if (family == 4) return Of("REJECT", 0, ipt_reject_info{IPT_ICMP_PORT_UNREACHABLE});
      return Of("REJECT", 0, ip6t_reject_info{IP6T_ICMP6_PORT_UNREACH});
    case TargetKind::Notrack: {
      // `-j NOTRACK` is CT revision 2 with the alias flag (so iptables-save prints it back
      // as NOTRACK); `-j CT --notrack` the same without it.
      xt_ct_target_info_v1 info{};
      info.flags = XT_CT_NOTRACK | (t.alias ? XT_CT_NOTRACK_ALIAS : 0);
      return Of("CT", 2, info, offsetof(xt_ct_target_info_v1, ct));
    }
    case TargetKind::Masquerade:
      return Nat(t, family, "MASQUERADE");
    case TargetKind::Snat:
      return Nat(t, family, "SNAT");
    case TargetKind::Dnat:
      return Nat(t, family, "DNAT");
  }
  throw BadOps("unknown target kind");
}

}  // namespace palisade::xt
