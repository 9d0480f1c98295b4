#include "rtnl/routes.h"

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <unordered_map>

#include "common/netlink_read.h"
#include "rtnl/request.h"

namespace palisade::rtnl {
std::string AddrString(int family, const void* data, int prefix) {
  char buf[INET6_ADDRSTRLEN];
  if (!inet_ntop(family, data, buf, sizeof(buf))) return "";
  return prefix < 0 ? std::string(buf) : std::string(buf) + "/" + std::to_string(prefix);
}

std::string MacString(const uint8_t* m) {
  char buf[18];
  snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
  return buf;
}

RouteAttrs ParseRouteAttrs(const nlmsghdr* h) {
  RouteAttrs r;
  if (mnl_nlmsg_get_payload_len(h) < sizeof(rtmsg)) return r;
  const auto* rt = static_cast<const rtmsg*>(mnl_nlmsg_get_payload(h));
  if (rt->rtm_family != AF_INET && rt->rtm_family != AF_INET6) return r;
  struct Ctx {
    RouteAttrs* r;
    uint16_t alen;
  } ctx{&r, static_cast<uint16_t>(rt->rtm_family == AF_INET ? 4 : 16)};
  r.table = rt->rtm_table;
  mnl_attr_parse(
      h, sizeof(rtmsg),
      [](const nlattr* a, void* data) {
        auto* c = static_cast<Ctx*>(data);
        // A short attribute would make the reader run past it: take only well-formed ones.
        if (mnl_attr_get_type(a) == RTA_DST && mnl_attr_get_payload_len(a) == c->alen)
          c->r->dst = mnl_attr_get_payload(a);
        if (mnl_attr_get_type(a) == RTA_OIF && mnl_attr_validate(a, MNL_TYPE_U32) >= 0)
          c->r->oif = static_cast<int>(mnl_attr_get_u32(a));
        if (mnl_attr_get_type(a) == RTA_GATEWAY && mnl_attr_get_payload_len(a) == c->alen)
          c->r->gateway = mnl_attr_get_payload(a);
        if (mnl_attr_get_type(a) == RTA_TABLE && mnl_attr_validate(a, MNL_TYPE_U32) >= 0)
          c->r->table = mnl_attr_get_u32(a);
        if (mnl_attr_get_type(a) == RTA_METRICS && mnl_attr_validate(a, MNL_TYPE_NESTED) >= 0)
          mnl_attr_parse_nested(
              a,
              [](const nlattr* m, void* d) {
                if (mnl_attr_get_type(m) == RTAX_MTU && mnl_attr_validate(m, MNL_TYPE_U32) >= 0)
                  static_cast<RouteAttrs*>(d)->mtu = mnl_attr_get_u32(m);
                return MNL_CB_OK;
              },
              c->r);
        return MNL_CB_OK;
      },
      &ctx);
  return r;
}

namespace {

// Appends one op's message to the batch; false (with `out->badInput`) for a malformed op.
bool PutOp(const uint8_t* p, RouteBatch* b, RouteResult* out) {
  const uint8_t op = p[0];
  uint32_t tag, ifindex;
  std::memcpy(&tag, p + 1, 4);
  std::memcpy(&ifindex, p + 6, 4);
  if (p[5] != 4 && p[5] != 6) {
    out->badInput = "route op family " + std::to_string(p[5]) + " (expected 4 or 6)";
    return false;
  }
  const uint8_t fam = p[5] == 6 ? AF_INET6 : AF_INET;
  const size_t alen = fam == AF_INET ? 4 : 16;
  const uint8_t prefix = p[10];
  if (prefix > alen * 8) {
    out->badInput = "route op prefix length " + std::to_string(prefix) + " is too long for IPv" + std::to_string(p[5]);
    return false;
  }
  const uint8_t* addr = p + 11;
  const uint8_t proto = p[27], scope = p[28];
  const uint8_t* mac = p + 29;
  const uint8_t* gw = p + 35;
  const uint8_t rtype = p[51], rflags = p[52];
  const uint8_t* prefsrc = p + 53;
  uint32_t table, mtu;
  std::memcpy(&table, p + 69, 4);
  std::memcpy(&mtu, p + 73, 4);
  if (!table) table = RT_TABLE_MAIN;
  static const uint8_t kZero[16] = {};
  b->starts.push_back(b->used);
  nlmsghdr* h = mnl_nlmsg_put_header(b->buf.data() + b->used);
  h->nlmsg_seq = b->nextSeq;
  b->tags[b->nextSeq++] = tag;
  h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  if (op == kRouteReplace || op == kRouteDelete) {
    h->nlmsg_type = op == kRouteReplace ? RTM_NEWROUTE : RTM_DELROUTE;
    if (op == kRouteReplace) h->nlmsg_flags |= NLM_F_CREATE | NLM_F_REPLACE;
    auto* rt = static_cast<rtmsg*>(mnl_nlmsg_put_extra_header(h, sizeof(rtmsg)));
    rt->rtm_family = fam;
    rt->rtm_dst_len = prefix;
    // Tables beyond a byte are named only by RTA_TABLE.
    rt->rtm_table = table < 256 ? static_cast<uint8_t>(table) : static_cast<uint8_t>(RT_TABLE_UNSPEC);
    rt->rtm_protocol = proto;
    rt->rtm_scope = scope;
    rt->rtm_type = rtype ? rtype : static_cast<uint8_t>(RTN_UNICAST);
    rt->rtm_flags = rflags;
    mnl_attr_put(h, RTA_DST, alen, addr);
    if (ifindex) mnl_attr_put_u32(h, RTA_OIF, ifindex);
    if (std::memcmp(gw, kZero, alen) != 0) mnl_attr_put(h, RTA_GATEWAY, alen, gw);
    if (op == kRouteReplace && std::memcmp(prefsrc, kZero, alen) != 0) mnl_attr_put(h, RTA_PREFSRC, alen, prefsrc);
    if (table != RT_TABLE_MAIN) mnl_attr_put_u32(h, RTA_TABLE, table);
    if (op == kRouteReplace && mtu) {
      nlattr* metrics = mnl_attr_nest_start(h, RTA_METRICS);
      mnl_attr_put_u32(h, RTAX_MTU, mtu);
      mnl_attr_nest_end(h, metrics);
    }
  } else if (op == kNeighReplace || op == kNeighDelete || op == kFdbReplace || op == kFdbDelete) {
    const bool fdb = op == kFdbReplace || op == kFdbDelete;
    const bool replace = op == kNeighReplace || op == kFdbReplace;
    h->nlmsg_type = replace ? RTM_NEWNEIGH : RTM_DELNEIGH;
    if (replace) h->nlmsg_flags |= NLM_F_CREATE | NLM_F_REPLACE;
    auto* nd = static_cast<ndmsg*>(mnl_nlmsg_put_extra_header(h, sizeof(ndmsg)));
    nd->ndm_family = fdb ? AF_BRIDGE : fam;
    nd->ndm_ifindex = static_cast<int>(ifindex);
    nd->ndm_state = NUD_PERMANENT;
    if (fdb) nd->ndm_flags = NTF_SELF;
    mnl_attr_put(h, NDA_DST, alen, addr);
    // An FDB entry is keyed by its MAC, so a delete names it too.
    if (replace || fdb) mnl_attr_put(h, NDA_LLADDR, 6, mac);
  } else {
    out->badInput = "unknown route op " + std::to_string(op);
    return false;
  }
  b->used += NLMSG_ALIGN(h->nlmsg_len);
  out->ops++;
  return true;
}

}  // namespace

bool BuildRoutes(const uint8_t* ops, size_t len, uint32_t firstSeq, RouteBatch* b, RouteResult* out) {
  if (len % kRouteOpSize) {
    out->badInput = "route op stream length is not a multiple of the op size";
    return false;
  }
  b->buf.assign(len / kRouteOpSize * kMaxRouteMsg + 64, 0);
  b->used = 0;
  b->nextSeq = firstSeq;
  b->tags.clear();
  b->starts.clear();
  for (size_t off = 0; off < len; off += kRouteOpSize)
    if (!PutOp(ops + off, b, out)) return false;
  return true;
}

RouteResult ApplyRoutes(const uint8_t* ops, size_t len) {
  RouteResult out;
  RouteBatch b;
  if (!BuildRoutes(ops, len, static_cast<uint32_t>(time(nullptr)) << 8, &b, &out) || !out.ops) return out;
  RtnlSocket s;
  if (int e = s.Open(&out.sysWhat)) {
    out.sysErrno = e;
    return out;
  }
  // Errors then carry only the failed message's header, not the whole message.
  const int one = 1;
  setsockopt(s.fd(), SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
  std::vector<char> rbuf(MNL_SOCKET_BUFFER_SIZE);
  for (size_t first = 0; first < b.starts.size();) {
    // A chunk of whole messages [first, last): at least one, within the chunk limits.
    const size_t n = b.starts.size();
    auto endOf = [&](size_t k) { return k + 1 < n ? b.starts[k + 1] : b.used; };
    size_t last = first + 1;
    while (last < n && last - first < kRouteChunkMsgs && endOf(last) - b.starts[first] <= kRouteChunk) last++;
    const size_t from = b.starts[first];
    const size_t to = endOf(last - 1);
    // Only the chunk's last message asks for an ACK: the kernel answers the others only
    // if they fail (in order, before that ACK), which spares an skb per route.
    for (size_t k = first; k + 1 < last; k++)
      reinterpret_cast<nlmsghdr*>(b.buf.data() + b.starts[k])->nlmsg_flags &= ~NLM_F_ACK;
    const uint32_t lastSeq = reinterpret_cast<nlmsghdr*>(b.buf.data() + b.starts[last - 1])->nlmsg_seq;
    if (mnl_socket_sendto(s.nl, b.buf.data() + from, to - from) < 0) {
      out.sysErrno = errno;
      out.sysWhat = "sendto";
      return out;
    }
    bool done = false;
    while (!done) {
      ssize_t n = RecvFromKernel(s.fd(), rbuf.data(), rbuf.size(), 0);
      if (n < 0) {
        if (errno == EINTR) continue;
        out.sysErrno = errno;
        out.sysWhat = "recv";
        return out;
      }
      int left = static_cast<int>(n);
      for (auto* h = reinterpret_cast<nlmsghdr*>(rbuf.data()); NlmsgOk(h, left); h = mnl_nlmsg_next(h, &left)) {
        if (h->nlmsg_type != NLMSG_ERROR || mnl_nlmsg_get_payload_len(h) < sizeof(nlmsgerr)) continue;
        // By sequence number, not by range: the numbers may wrap around within a batch.
        auto t = b.tags.find(h->nlmsg_seq);
        if (t == b.tags.end()) continue;
        auto* err = static_cast<nlmsgerr*>(mnl_nlmsg_get_payload(h));
        if (err->error) out.failures.push_back({t->second, -err->error});
        if (h->nlmsg_seq == lastSeq) done = true;
      }
    }
    first = last;
  }
  return out;
}

RouteDump DumpRoutes(int protocol, uint32_t table) {
  RouteDump out;
  RtnlSocket s;
  if (int e = s.Open(&out.sysWhat)) {
    out.sysErrno = e;
    return out;
  }
  char buf[MNL_SOCKET_BUFFER_SIZE];
  for (int fam : {AF_INET, AF_INET6}) {
    nlmsghdr* h = mnl_nlmsg_put_header(buf);
    h->nlmsg_type = RTM_GETROUTE;
    h->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    auto* rt = static_cast<rtmsg*>(mnl_nlmsg_put_extra_header(h, sizeof(rtmsg)));
    rt->rtm_family = static_cast<unsigned char>(fam);
    const RequestStatus st = Request(s, h, [&](const nlmsghdr* m) {
      if (mnl_nlmsg_get_payload_len(m) < sizeof(rtmsg)) return;
      auto* r = static_cast<const rtmsg*>(mnl_nlmsg_get_payload(m));
      if (protocol >= 0 && r->rtm_protocol != protocol) return;
      const RouteAttrs a = ParseRouteAttrs(m);
      if (!a.dst || a.table != table) return;
      out.routes.push_back({r->rtm_family == AF_INET ? 4 : 6, a.table, AddrString(r->rtm_family, a.dst, r->rtm_dst_len),
                            a.oif, r->rtm_protocol, r->rtm_scope, r->rtm_type, static_cast<int>(r->rtm_flags),
                            a.gateway ? AddrString(r->rtm_family, a.gateway, -1) : "", a.mtu});
    });
    if (st.sysErrno || st.err) {
      out.sysErrno = st.sysErrno ? st.sysErrno : st.err;
      out.sysWhat = st.sysErrno ? st.sysWhat : "dump routes";
      return out;
    }
  }
  return out;
}

NeighDump DumpNeighs(int ifindex) {
  NeighDump out;
  RtnlSocket s;
  if (int e = s.Open(&out.sysWhat)) {
    out.sysErrno = e;
    return out;
  }
  char buf[MNL_SOCKET_BUFFER_SIZE];
  for (int fam : {AF_INET, AF_INET6, AF_BRIDGE}) {
    nlmsghdr* h = mnl_nlmsg_put_header(buf);
    h->nlmsg_type = RTM_GETNEIGH;
    h->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    auto* nd = static_cast<ndmsg*>(mnl_nlmsg_put_extra_header(h, sizeof(ndmsg)));
    nd->ndm_family = static_cast<unsigned char>(fam);
    nd->ndm_ifindex = ifindex;
    const RequestStatus st = Request(s, h, [&](const nlmsghdr* m) {
      if (mnl_nlmsg_get_payload_len(m) < sizeof(ndmsg)) return;
      auto* n = static_cast<const ndmsg*>(mnl_nlmsg_get_payload(m));
      // Older kernels ignore the interface filter: apply it here too.
      if (n->ndm_ifindex != ifindex) return;
      struct A {
        const void* dst = nullptr;
        uint16_t dstLen = 0;
        const uint8_t* mac = nullptr;
      } a;
      mnl_attr_parse(
          m, sizeof(ndmsg),
          [](const nlattr* at, void* d) {
            auto* x = static_cast<A*>(d);
            const uint16_t len = mnl_attr_get_payload_len(at);
            if (mnl_attr_get_type(at) == NDA_DST && (len == 4 || len == 16)) {
              x->dst = mnl_attr_get_payload(at);
              x->dstLen = len;
            }
            if (mnl_attr_get_type(at) == NDA_LLADDR && len == 6)
              x->mac = static_cast<const uint8_t*>(mnl_attr_get_payload(at));
            return MNL_CB_OK;
          },
          &a);
      if (!a.dst) return;
      const int family = n->ndm_family == AF_BRIDGE ? 7 : n->ndm_family == AF_INET6 ? 6 : 4;
      out.neighs.push_back({family, AddrString(a.dstLen == 4 ? AF_INET : AF_INET6, a.dst, -1),
                            a.mac ? MacString(a.mac) : "", n->ndm_state, n->ndm_flags});
    });
    if (st.sysErrno || st.err) {
      out.sysErrno = st.sysErrno ? st.sysErrno : st.err;
      out.sysWhat = st.sysErrno ? st.sysWhat : "dump neighbours";
      return out;
    }
  }
  return out;
}

}  // namespace palisade::rtnl
