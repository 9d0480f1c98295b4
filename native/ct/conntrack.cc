#include "ct/conntrack.h"
#include "common/netlink_read.h"
#include "nft/netlink.h"

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <set>
#include <string>
#include <vector>

namespace palisade::ct {
namespace {

using Addr = std::string;  // 4 or 16 raw bytes

// Calls f on each attribute in [begin, end) (libmnl's iteration macros are C, not C++).
template <typename F>
void ForEach(const void* begin, const void* end, F f) {
  const auto* a = static_cast<const nlattr*>(begin);
  while (mnl_attr_ok(a, static_cast<int>(static_cast<const char*>(end) - reinterpret_cast<const char*>(a)))) {
    f(a);
    a = mnl_attr_next(a);
  }
}

template <typename F>
void ForEachNested(const nlattr* nest, F f) {
  const char* p = static_cast<const char*>(mnl_attr_get_payload(nest));
  ForEach(p, p + mnl_attr_get_payload_len(nest), f);
}

// The nested attribute `type` of `parent`, or null.
const nlattr* Nested(const nlattr* parent, uint16_t type) {
  const nlattr* found = nullptr;
  ForEachNested(parent, [&](const nlattr* a) {
    if (mnl_attr_get_type(a) == type) found = a;
  });
  return found;
}

// Whether a CTA_TUPLE_* attribute names one of `addrs` as source or destination.
bool TupleHits(const nlattr* tuple, const std::set<Addr>& addrs) {
  if (!tuple) return false;
  const nlattr* ip = Nested(tuple, CTA_TUPLE_IP);
  if (!ip) return false;
  bool hit = false;
  ForEachNested(ip, [&](const nlattr* a) {
    const uint16_t t = mnl_attr_get_type(a);
    if (t != CTA_IP_V4_SRC && t != CTA_IP_V4_DST && t != CTA_IP_V6_SRC && t != CTA_IP_V6_DST) return;
    if (addrs.count(Addr(static_cast<const char*>(mnl_attr_get_payload(a)), mnl_attr_get_payload_len(a)))) hit = true;
  });
  return hit;
}

struct DumpState {
  const std::set<Addr>* addrs;
  uint32_t scanned = 0;
  // Each doomed entry's CTA_TUPLE_ORIG (and CTA_ZONE) attributes, copied whole.
  std::vector<std::string> doomed;
};

int OnEntry(const nlmsghdr* h, void* data) {
  auto* st = static_cast<DumpState*>(data);
  st->scanned++;
  const nlattr* orig = nullptr;
  const nlattr* reply = nullptr;
  const nlattr* zone = nullptr;
  ForEach(mnl_nlmsg_get_payload_offset(h, sizeof(nfgenmsg)), mnl_nlmsg_get_payload_tail(h), [&](const nlattr* a) {
    switch (mnl_attr_get_type(a)) {
      case CTA_TUPLE_ORIG:
        orig = a;
        break;
      case CTA_TUPLE_REPLY:
        reply = a;
        break;
      case CTA_ZONE:
        zone = a;
        break;
      default:
        break;
    }
  });
  if (!orig || !(TupleHits(orig, *st->addrs) || TupleHits(reply, *st->addrs))) return MNL_CB_OK;
  std::string key(reinterpret_cast<const char*>(orig), NLA_ALIGN(orig->nla_len));
  if (zone) key.append(reinterpret_cast<const char*>(zone), NLA_ALIGN(zone->nla_len));
  st->doomed.push_back(std::move(key));
  return MNL_CB_OK;
}

nlmsghdr* PutHeader(char* buf, uint16_t type, uint16_t flags, uint8_t family, uint32_t seq) {
  nlmsghdr* h = mnl_nlmsg_put_header(buf);
  h->nlmsg_type = (NFNL_SUBSYS_CTNETLINK << 8) | type;
  h->nlmsg_flags = NLM_F_REQUEST | flags;
  h->nlmsg_seq = seq;
  auto* g = static_cast<nfgenmsg*>(mnl_nlmsg_put_extra_header(h, sizeof(nfgenmsg)));
  g->nfgen_family = family;
  g->version = NFNETLINK_V0;
  g->res_id = 0;
  return h;
}

// Dumps one family's table into `st`; 0 or an errno (what failed in `what`).
int Dump(mnl_socket* nl, uint8_t family, DumpState* st, std::string* what) {
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE * 4);
  const uint32_t seq = static_cast<uint32_t>(time(nullptr));
  nlmsghdr* h = PutHeader(buf.data(), IPCTNL_MSG_CT_GET, NLM_F_DUMP, family, seq);
  if (mnl_socket_sendto(nl, h, h->nlmsg_len) < 0) {
    *what = "send conntrack dump";
    return errno;
  }
  const uint32_t port = mnl_socket_get_portid(nl);
  for (;;) {
    ssize_t n = RecvFromKernel(mnl_socket_get_fd(nl), buf.data(), buf.size(), 0);
    if (n < 0) {
      *what = "receive conntrack dump";
      return errno;
    }
    int r = mnl_cb_run(buf.data(), static_cast<size_t>(n), seq, port, OnEntry, st);
    if (r == MNL_CB_STOP) return 0;
    if (r < 0) {
      // No conntrack module, or no table yet: nothing to delete.
      if (errno == ENOENT || errno == EOPNOTSUPP || errno == EAFNOSUPPORT) return 0;
      *what = "conntrack dump";
      return errno;
    }
  }
}

// Deletes the doomed entries, one acked request each; an entry gone meanwhile is fine.
int Delete(mnl_socket* nl, uint8_t family, const DumpState& st, uint32_t* deleted, std::string* what) {
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  const uint32_t port = mnl_socket_get_portid(nl);
  uint32_t seq = static_cast<uint32_t>(time(nullptr)) << 8;
  for (const std::string& attrs : st.doomed) {
    nlmsghdr* h = PutHeader(buf.data(), IPCTNL_MSG_CT_DELETE, NLM_F_ACK, family, ++seq);
    std::memcpy(mnl_nlmsg_get_payload_tail(h), attrs.data(), attrs.size());
    h->nlmsg_len += static_cast<uint32_t>(attrs.size());
    if (mnl_socket_sendto(nl, h, h->nlmsg_len) < 0) {
      *what = "send conntrack delete";
      return errno;
    }
    ssize_t n = RecvFromKernel(mnl_socket_get_fd(nl), buf.data(), buf.size(), 0);
    if (n < 0) {
      *what = "receive conntrack delete ack";
      return errno;
    }
    if (mnl_cb_run(buf.data(), static_cast<size_t>(n), seq, port, nullptr, nullptr) < 0 && errno != ENOENT) {
      *what = "conntrack delete";
      return errno;
    }
    (*deleted)++;
  }
  return 0;
}

}  // namespace

FlushResult FlushAddresses(const uint8_t* records, size_t len) {
  FlushResult out;
  if (len % kAddrRecordSize) {
    out.badInput = "address record stream length is not a multiple of the record size";
    return out;
  }
  std::set<Addr> v4, v6;
  for (size_t off = 0; off < len; off += kAddrRecordSize) {
    const uint8_t fam = records[off];
    const char* a = reinterpret_cast<const char*>(records + off + 1);
    if (fam == 4)
      v4.insert(Addr(a, 4));
    else if (fam == 6)
      v6.insert(Addr(a, 16));
    else {
      out.badInput = "address family must be 4 or 6";
      return out;
    }
  }
  for (const auto& [family, addrs] : {std::make_pair(uint8_t(AF_INET), &v4), std::make_pair(uint8_t(AF_INET6), &v6)}) {
    if (addrs->empty()) continue;
    // A pooled socket: closing one makes nf_tables flush its deferred frees under its
    // commit mutex, holding every nftables commit back (nft/netlink.h).
    nft::PooledSocket lease;
    if ((out.sysErrno = lease.Open(&out.sysWhat))) return out;
    mnl_socket* nl = lease.sock().get();
    DumpState st;
    st.addrs = addrs;
    if ((out.sysErrno = Dump(nl, family, &st, &out.sysWhat))) return out;
    out.scanned += st.scanned;
    if ((out.sysErrno = Delete(nl, family, st, &out.deleted, &out.sysWhat))) return out;
    // The dump was read to its end and each delete to its answer.
    lease.Reusable();
  }
  return out;
}

}  // namespace palisade::ct
