#include "ipset/ipset.h"

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/ipset/ip_set.h>
#include <linux/netfilter/nfnetlink.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <mutex>

#include "common/netlink_read.h"
#include "nft/netlink.h"

namespace palisade::ipset {
namespace {

// An ADD/DEL message's ADT nest has a 16-bit length: members go in messages of at most
// this many bytes (about 1,300 IPv4 members), as `ipset restore` keeps them small.
constexpr size_t kMsgBudget = 32 * 1024;
// Room for one command message or one member, with headers and alignment.
constexpr size_t kMaxCmd = 256;
constexpr size_t kMaxMember = 96;
// Sent per sendmsg (the socket's send buffer bounds one datagram).
constexpr size_t kSendChunk = 192 * 1024;

uint8_t Nfproto(uint8_t family) { return family == 6 ? NFPROTO_IPV6 : NFPROTO_IPV4; }

class Reader {
 public:
  Reader(const uint8_t* p, size_t len) : p_(p), len_(len) {}
  bool Has(size_t n) const { return n <= len_ - off_; }
  bool Done() const { return off_ == len_; }
  uint8_t U8() { return p_[off_++]; }
  uint32_t U32() {
    uint32_t v;
    std::memcpy(&v, p_ + off_, 4);
    off_ += 4;
    return v;
  }
  const uint8_t* Take(size_t n) {
    const uint8_t* at = p_ + off_;
    off_ += n;
    return at;
  }
  // A length-prefixed set name: 1..31 printable bytes.
  bool Name(std::string* out) {
    if (!Has(1)) return false;
    const size_t n = U8();
    if (n == 0 || n > kMaxName || !Has(n)) return false;
    const uint8_t* s = Take(n);
    for (size_t i = 0; i < n; i++)
      if (s[i] < 0x21 || s[i] > 0x7e) return false;
    out->assign(reinterpret_cast<const char*>(s), n);
    return true;
  }

 private:
  const uint8_t* p_;
  size_t len_;
  size_t off_ = 0;
};

// A request's netlink and nfnetlink headers and the protocol attribute every ipset
// message carries.
nlmsghdr* PutHeader(char* at, uint8_t cmd, uint16_t flags, uint32_t seq, uint8_t nfgenFamily) {
  nlmsghdr* h = mnl_nlmsg_put_header(at);
  h->nlmsg_type = (NFNL_SUBSYS_IPSET << 8) | cmd;
  h->nlmsg_flags = NLM_F_REQUEST | flags;
  h->nlmsg_seq = seq;
  auto* g = static_cast<nfgenmsg*>(mnl_nlmsg_put_extra_header(h, sizeof(nfgenmsg)));
  g->nfgen_family = nfgenFamily;
  g->version = NFNETLINK_V0;
  g->res_id = 0;
  mnl_attr_put_u8(h, IPSET_ATTR_PROTOCOL, IPSET_PROTOCOL);
  return h;
}

class Writer {
 public:
  explicit Writer(Batch* b) : b_(b) {}
  // Starts a message with room for `reserve` more bytes.
  nlmsghdr* Start(uint8_t cmd, uint8_t family, uint32_t tag, int64_t firstMember, size_t reserve) {
    if (b_->buf.size() - used_ < reserve + kMaxCmd) b_->buf.resize((b_->buf.size() + reserve + kMaxCmd) * 2);
    // No NLM_F_EXCL: as `ipset -exist`, adding what is there or deleting what is not is fine.
    nlmsghdr* h = PutHeader(b_->buf.data() + used_, cmd, NLM_F_ACK, b_->nextSeq,
                            family ? Nfproto(family) : static_cast<uint8_t>(NFPROTO_UNSPEC));
    b_->bySeq[b_->nextSeq++] = {tag, firstMember};
    return h;
  }
  void End(nlmsghdr* h) {
    used_ += NLMSG_ALIGN(h->nlmsg_len);
    b_->messages++;
  }
  size_t used() const { return used_; }

 private:
  Batch* b_;
  size_t used_ = 0;
};

void PutMember(nlmsghdr* h, uint8_t family, uint8_t type, const uint8_t* m, uint32_t lineno) {
  nlattr* data = mnl_attr_nest_start(h, IPSET_ATTR_DATA);
  nlattr* ip = mnl_attr_nest_start(h, IPSET_ATTR_IP);
  if (family == 4)
    mnl_attr_put(h, IPSET_ATTR_IPADDR_IPV4 | NLA_F_NET_BYTEORDER, 4, m);
  else
    mnl_attr_put(h, IPSET_ATTR_IPADDR_IPV6 | NLA_F_NET_BYTEORDER, 16, m);
  mnl_attr_nest_end(h, ip);
  if (type == kHashNet) mnl_attr_put_u8(h, IPSET_ATTR_CIDR, m[16]);
  if (type == kHashIpPort) {
    uint16_t port;
    std::memcpy(&port, m + 18, 2);
    mnl_attr_put_u16(h, IPSET_ATTR_PORT | NLA_F_NET_BYTEORDER, htons(port));
    mnl_attr_put_u8(h, IPSET_ATTR_PROTO, m[17]);
  }
  mnl_attr_put_u32(h, IPSET_ATTR_LINENO, lineno);
  mnl_attr_nest_end(h, data);
}

bool ValidMember(uint8_t family, uint8_t type, const uint8_t* m) {
  const unsigned max = family == 4 ? 32 : 128;
  if (type == kHashNet) return m[16] >= 1 && m[16] <= max;
  if (type == kHashIpPort)
    return m[17] == IPPROTO_TCP || m[17] == IPPROTO_UDP || m[17] == IPPROTO_SCTP || m[17] == IPPROTO_UDPLITE;
  return true;
}

// ADD/DEL: the members in as many messages as they need, each numbering its members so a
// failure names the one the kernel stopped at.
bool PutMembers(Reader& r, Writer& w, uint8_t cmd, uint32_t tag, const std::string& name, Result* out) {
  if (!r.Has(6)) return false;
  const uint8_t family = r.U8(), type = r.U8();
  const uint32_t count = r.U32();
  if ((family != 4 && family != 6) || !TypeName(type) || count > (1u << 26) ||
      !r.Has(static_cast<size_t>(count) * kMemberSize))
    return false;
  uint32_t i = 0;
  do {
    nlmsghdr* h = w.Start(cmd, family, tag, i, kMsgBudget + kMaxMember);
    mnl_attr_put_strz(h, IPSET_ATTR_SETNAME, name.c_str());
    // The kernel writes the failing member's line number here in its error report.
    mnl_attr_put_u32(h, IPSET_ATTR_LINENO, 0);
    nlattr* adt = mnl_attr_nest_start(h, IPSET_ATTR_ADT);
    const uint32_t first = i;
    for (; i < count && h->nlmsg_len < kMsgBudget; i++) {
      const uint8_t* m = r.Take(kMemberSize);
      if (!ValidMember(family, type, m)) {
        out->badInput = "ipset member " + std::to_string(i) + " of " + name + " is malformed";
        return false;
      }
      PutMember(h, family, type, m, i - first + 1);
    }
    mnl_attr_nest_end(h, adt);
    w.End(h);
  } while (i < count);
  return true;
}

bool PutOp(Reader& r, Writer& w, Batch* b, Result* out) {
  if (!r.Has(5)) return false;
  const uint8_t op = r.U8();
  const uint32_t tag = r.U32();
  std::string name;
  if (!r.Name(&name)) return false;
  switch (op) {
    case kCreate: {
      if (!r.Has(10)) return false;
      const uint8_t type = r.U8(), family = r.U8();
      const uint32_t maxelem = r.U32(), hashsize = r.U32();
      if (!TypeName(type) || (family != 4 && family != 6) || maxelem == 0) return false;
      nlmsghdr* h = w.Start(IPSET_CMD_CREATE, family, tag, -1, kMaxCmd);
      mnl_attr_put_strz(h, IPSET_ATTR_SETNAME, name.c_str());
      mnl_attr_put_strz(h, IPSET_ATTR_TYPENAME, TypeName(type));
      auto* rev = static_cast<nlattr*>(mnl_nlmsg_get_payload_tail(h));
      mnl_attr_put_u8(h, IPSET_ATTR_REVISION, 0);
      b->revisions.push_back(
          {static_cast<size_t>(static_cast<char*>(mnl_attr_get_payload(rev)) - b->buf.data()), type});
      mnl_attr_put_u8(h, IPSET_ATTR_FAMILY, Nfproto(family));
      nlattr* data = mnl_attr_nest_start(h, IPSET_ATTR_DATA);
      mnl_attr_put_u32(h, IPSET_ATTR_MAXELEM | NLA_F_NET_BYTEORDER, htonl(maxelem));
      if (hashsize) mnl_attr_put_u32(h, IPSET_ATTR_HASHSIZE | NLA_F_NET_BYTEORDER, htonl(hashsize));
      mnl_attr_nest_end(h, data);
      w.End(h);
      break;
    }
    case kDestroy:
    case kFlush: {
      if (op == kDestroy) b->destroys = true;
      nlmsghdr* h = w.Start(op == kDestroy ? IPSET_CMD_DESTROY : IPSET_CMD_FLUSH, 0, tag, -1, kMaxCmd);
      mnl_attr_put_strz(h, IPSET_ATTR_SETNAME, name.c_str());
      w.End(h);
      break;
    }
    case kSwap: {
      std::string other;
      if (!r.Name(&other)) return false;
      nlmsghdr* h = w.Start(IPSET_CMD_SWAP, 0, tag, -1, kMaxCmd);
      mnl_attr_put_strz(h, IPSET_ATTR_SETNAME, name.c_str());
      mnl_attr_put_strz(h, IPSET_ATTR_SETNAME2, other.c_str());
      w.End(h);
      break;
    }
    case kAdd:
    case kDel:
      if (!PutMembers(r, w, op == kAdd ? IPSET_CMD_ADD : IPSET_CMD_DEL, tag, name, out)) return false;
      break;
    default:
      out->badInput = "unknown ipset op " + std::to_string(op);
      return false;
  }
  out->ops++;
  return true;
}

// The netfilter netlink socket of the nft code, with buffers for a send chunk and for
// error reports, which echo the whole failing message (up to kMsgBudget each).
// From the pool of open ones: closing one would wait for nf_tables' deferred frees
// (nft/netlink.h).
int OpenSocket(nft::PooledSocket& lease, std::string* what) {
  if (int e = lease.Open(what)) return e;
  lease.sock().SizeFor(kSendChunk + kMsgBudget, 8 << 20);
  return 0;
}

// The newest revision of `type` this kernel has (IPSET_CMD_TYPE), cached per process.
int KernelRevision(nft::NlSocket& s, uint8_t type, uint8_t* rev, std::string* what) {
  static std::mutex mu;
  static std::unordered_map<uint8_t, uint8_t> cache;
  {
    std::lock_guard<std::mutex> l(mu);
    auto it = cache.find(type);
    if (it != cache.end()) {
      *rev = it->second;
      return 0;
    }
  }
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  nlmsghdr* h = PutHeader(buf.data(), IPSET_CMD_TYPE, 0, static_cast<uint32_t>(time(nullptr)), NFPROTO_IPV4);
  mnl_attr_put_strz(h, IPSET_ATTR_TYPENAME, TypeName(type));
  mnl_attr_put_u8(h, IPSET_ATTR_FAMILY, NFPROTO_IPV4);
  if (mnl_socket_sendto(s.get(), h, h->nlmsg_len) < 0) {
    *what = "send ipset type query";
    return errno;
  }
  const ssize_t n = RecvFromKernel(mnl_socket_get_fd(s.get()), buf.data(), buf.size(), 0);
  if (n < 0) {
    *what = "receive ipset type";
    return errno;
  }
  int len = static_cast<int>(n);
  for (auto* m = reinterpret_cast<nlmsghdr*>(buf.data()); NlmsgOk(m, len); m = mnl_nlmsg_next(m, &len)) {
    if (m->nlmsg_type == NLMSG_ERROR && mnl_nlmsg_get_payload_len(m) >= sizeof(nlmsgerr)) {
      *what = std::string("ipset type ") + TypeName(type);
      return -static_cast<nlmsgerr*>(mnl_nlmsg_get_payload(m))->error;
    }
    if (mnl_nlmsg_get_payload_len(m) < sizeof(nfgenmsg)) continue;
    int found = -1;
    mnl_attr_parse(
        m, sizeof(nfgenmsg),
        [](const nlattr* a, void* data) {
          if (mnl_attr_get_type(a) == IPSET_ATTR_REVISION && mnl_attr_validate(a, MNL_TYPE_U8) >= 0)
            *static_cast<int*>(data) = mnl_attr_get_u8(a);
          return MNL_CB_OK;
        },
        &found);
    if (found >= 0) {
      *rev = static_cast<uint8_t>(found);
      std::lock_guard<std::mutex> l(mu);
      cache[type] = *rev;
      return 0;
    }
  }
  *what = std::string("ipset type ") + TypeName(type) + ": no revision in the answer";
  return EPROTO;
}

// The lineno the kernel wrote into its error report's echo of our message.
int64_t ErrorLine(const nlmsgerr* err, size_t payload) {
  if (payload < sizeof(nlmsgerr) + sizeof(nfgenmsg)) return -1;
  const auto* echoed = &err->msg;
  if (echoed->nlmsg_len > payload - sizeof(nlmsgerr) + sizeof(nlmsghdr) ||
      echoed->nlmsg_len < NLMSG_HDRLEN + sizeof(nfgenmsg))
    return -1;
  int64_t line = -1;
  mnl_attr_parse(
      echoed, sizeof(nfgenmsg),
      [](const nlattr* a, void* data) {
        if (mnl_attr_get_type(a) == IPSET_ATTR_LINENO && mnl_attr_validate(a, MNL_TYPE_U32) >= 0)
          *static_cast<int64_t*>(data) = mnl_attr_get_u32(a);
        return MNL_CB_OK;
      },
      &line);
  return line;
}

// Sends [from, to) of the batch and reads one answer per message.
bool SendAndCollect(nft::NlSocket& s, Batch& b, const char* from, size_t bytes, size_t messages, Result* out) {
  if (mnl_socket_sendto(s.get(), from, bytes) < 0) {
    out->sysErrno = errno;
    out->sysWhat = "sendto";
    return false;
  }
  std::vector<char> rbuf(1 << 20);
  size_t answered = 0;
  while (answered < messages) {
    const ssize_t n = RecvFromKernel(mnl_socket_get_fd(s.get()), rbuf.data(), rbuf.size(), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      out->sysErrno = errno;
      out->sysWhat = "recv";
      return false;
    }
    int left = static_cast<int>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(rbuf.data()); NlmsgOk(h, left); h = mnl_nlmsg_next(h, &left)) {
      if (h->nlmsg_type != NLMSG_ERROR || mnl_nlmsg_get_payload_len(h) < sizeof(nlmsgerr)) continue;
      auto it = b.bySeq.find(h->nlmsg_seq);
      if (it == b.bySeq.end()) continue;
      answered++;
      const auto* err = static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(h));
      if (!err->error) continue;
      int64_t member = -1;
      if (it->second.firstMember >= 0) {
        const int64_t line = ErrorLine(err, mnl_nlmsg_get_payload_len(h));
        member = line > 0 ? it->second.firstMember + line - 1 : it->second.firstMember;
      }
      out->failures.push_back({it->second.tag, -err->error, member});
    }
  }
  return true;
}

// "10.0.0.1", "10.0.0.0/8" (hash:net), "10.0.0.1,tcp:80" (hash:ip,port): ipset's own text.
std::string MemberText(const std::string& type, int family, const nlattr* data) {
  struct M {
    const void* addr = nullptr;
    int cidr = -1;
    int port = -1;
    int proto = -1;
    size_t alen;
  } m;
  m.alen = family == 4 ? 4 : 16;
  mnl_attr_parse_nested(
      data,
      [](const nlattr* a, void* p) {
        auto* x = static_cast<M*>(p);
        switch (mnl_attr_get_type(a)) {
          case IPSET_ATTR_IP:
            mnl_attr_parse_nested(
                a,
                [](const nlattr* ip, void* q) {
                  auto* y = static_cast<M*>(q);
                  if (mnl_attr_get_payload_len(ip) == y->alen) y->addr = mnl_attr_get_payload(ip);
                  return MNL_CB_OK;
                },
                x);
            break;
          case IPSET_ATTR_CIDR:
            if (mnl_attr_validate(a, MNL_TYPE_U8) >= 0) x->cidr = mnl_attr_get_u8(a);
            break;
          case IPSET_ATTR_PORT:
            if (mnl_attr_validate(a, MNL_TYPE_U16) >= 0) x->port = ntohs(mnl_attr_get_u16(a));
            break;
          case IPSET_ATTR_PROTO:
            if (mnl_attr_validate(a, MNL_TYPE_U8) >= 0) x->proto = mnl_attr_get_u8(a);
            break;
        }
        return MNL_CB_OK;
      },
      &m);
  if (!m.addr) return "";
  char buf[INET6_ADDRSTRLEN];
  if (!inet_ntop(family == 4 ? AF_INET : AF_INET6, m.addr, buf, sizeof(buf))) return "";
  std::string out = buf;
  if (type == "hash:net" && m.cidr >= 0) out += "/" + std::to_string(m.cidr);
  if (type == "hash:ip,port" && m.port >= 0) {
    const char* proto = m.proto == IPPROTO_TCP       ? "tcp"
                        : m.proto == IPPROTO_UDP     ? "udp"
                        : m.proto == IPPROTO_SCTP    ? "sctp"
                        : m.proto == IPPROTO_UDPLITE ? "udplite"
                                                     : nullptr;
    out += "," + (proto ? std::string(proto) : std::to_string(m.proto)) + ":" + std::to_string(m.port);
  }
  return out;
}

// One LIST answer: a set's header and/or a run of its members (big sets span messages).
void ParseListed(const nlmsghdr* h, const std::string& prefix, List* out) {
  if (mnl_nlmsg_get_payload_len(h) < sizeof(nfgenmsg)) return;
  struct Attrs {
    const nlattr* tb[IPSET_ATTR_CMD_MAX + 1] = {};
  } at;
  mnl_attr_parse(
      h, sizeof(nfgenmsg),
      [](const nlattr* a, void* p) {
        const uint16_t t = mnl_attr_get_type(a);
        if (t <= IPSET_ATTR_CMD_MAX) static_cast<Attrs*>(p)->tb[t] = a;
        return MNL_CB_OK;
      },
      &at);
  const nlattr* name = at.tb[IPSET_ATTR_SETNAME];
  if (!name || mnl_attr_validate(name, MNL_TYPE_NUL_STRING) < 0) return;
  const std::string setName = mnl_attr_get_str(name);
  if (setName.compare(0, prefix.size(), prefix) != 0) return;
  if (out->sets.empty() || out->sets.back().name != setName) out->sets.push_back({setName, "", 0, 0, 0, {}});
  ListedSet& set = out->sets.back();
  if (const nlattr* t = at.tb[IPSET_ATTR_TYPENAME]; t && mnl_attr_validate(t, MNL_TYPE_NUL_STRING) >= 0)
    set.type = mnl_attr_get_str(t);
  if (const nlattr* f = at.tb[IPSET_ATTR_FAMILY]; f && mnl_attr_validate(f, MNL_TYPE_U8) >= 0)
    set.family = mnl_attr_get_u8(f) == NFPROTO_IPV6 ? 6 : 4;
  if (const nlattr* r = at.tb[IPSET_ATTR_REVISION]; r && mnl_attr_validate(r, MNL_TYPE_U8) >= 0)
    set.revision = mnl_attr_get_u8(r);
  if (const nlattr* d = at.tb[IPSET_ATTR_DATA]; d && mnl_attr_validate(d, MNL_TYPE_NESTED) >= 0) {
    mnl_attr_parse_nested(
        d,
        [](const nlattr* a, void* p) {
          if ((mnl_attr_get_type(a) & NLA_TYPE_MASK) == IPSET_ATTR_MAXELEM && mnl_attr_validate(a, MNL_TYPE_U32) >= 0)
            static_cast<ListedSet*>(p)->maxelem = ntohl(mnl_attr_get_u32(a));
          return MNL_CB_OK;
        },
        &set);
  }
  if (const nlattr* adt = at.tb[IPSET_ATTR_ADT]; adt && mnl_attr_validate(adt, MNL_TYPE_NESTED) >= 0 && set.family) {
    const char* start = static_cast<const char*>(mnl_attr_get_payload(adt));
    const char* end = start + mnl_attr_get_payload_len(adt);
    for (const nlattr* member = reinterpret_cast<const nlattr*>(start);
         mnl_attr_ok(member, static_cast<int>(end - reinterpret_cast<const char*>(member)));
         member = mnl_attr_next(member)) {
      if (mnl_attr_get_type(member) != IPSET_ATTR_DATA) continue;
      std::string text = MemberText(set.type, set.family, member);
      if (!text.empty()) set.members.push_back(std::move(text));
    }
  }
}

}  // namespace

List ListSets(const std::string& prefix) {
  List out;
  nft::PooledSocket lease;
  if (int e = OpenSocket(lease, &out.sysWhat)) {
    out.sysErrno = e;
    return out;
  }
  nft::NlSocket& s = lease.sock();
  std::vector<char> buf(1 << 20);
  const uint32_t seq = static_cast<uint32_t>(time(nullptr));
  nlmsghdr* h = PutHeader(buf.data(), IPSET_CMD_LIST, NLM_F_DUMP, seq, NFPROTO_UNSPEC);
  if (mnl_socket_sendto(s.get(), h, h->nlmsg_len) < 0) {
    out.sysErrno = errno;
    out.sysWhat = "send ipset list";
    return out;
  }
  for (;;) {
    const ssize_t n = RecvFromKernel(mnl_socket_get_fd(s.get()), buf.data(), buf.size(), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      out.sysErrno = errno;
      out.sysWhat = "receive ipset list";
      return out;
    }
    int left = static_cast<int>(n);
    for (auto* m = reinterpret_cast<nlmsghdr*>(buf.data()); NlmsgOk(m, left); m = mnl_nlmsg_next(m, &left)) {
      if (m->nlmsg_seq != seq) continue;
      if (m->nlmsg_type == NLMSG_DONE) {
        lease.Reusable();
        return out;
      }
      if (m->nlmsg_type == NLMSG_ERROR) {
        const int e = mnl_nlmsg_get_payload_len(m) >= sizeof(nlmsgerr)
                          ? -static_cast<nlmsgerr*>(mnl_nlmsg_get_payload(m))->error
                          : EPROTO;
        if (e == 0) continue;
        out.sysErrno = e;
        out.sysWhat = "ipset list";
        return out;
      }
      ParseListed(m, prefix, &out);
    }
  }
}

const char* TypeName(uint8_t type) {
  switch (type) {
    case kHashIp:
      return "hash:ip";
    case kHashNet:
      return "hash:net";
    case kHashIpPort:
      return "hash:ip,port";
    default:
      return nullptr;
  }
}

bool Build(const uint8_t* ops, size_t len, uint32_t firstSeq, Batch* b, Result* out) {
  b->buf.assign(64 * 1024, 0);
  b->bySeq.clear();
  b->nextSeq = firstSeq;
  b->messages = 0;
  b->revisions.clear();
  b->destroys = false;
  Reader r(ops, len);
  Writer w(b);
  while (!r.Done()) {
    if (!PutOp(r, w, b, out)) {
      if (out->badInput.empty()) out->badInput = "malformed ipset op stream";
      return false;
    }
  }
  b->buf.resize(w.used());
  return true;
}

void SetRevisions(Batch* b, const Revisions& revisions) {
  for (const Batch::RevisionSlot& slot : b->revisions) {
    auto it = revisions.find(slot.type);
    b->buf[slot.offset] = static_cast<char>(it == revisions.end() ? 0 : it->second);
  }
}

Result Apply(const uint8_t* ops, size_t len) {
  Result out;
  Batch b;
  // Everything is read and built before any I/O: a malformed stream touches nothing.
  if (!Build(ops, len, static_cast<uint32_t>(time(nullptr)) << 8, &b, &out) || !out.ops) return out;
  nft::PooledSocket lease;
  if (int e = OpenSocket(lease, &out.sysWhat)) {
    out.sysErrno = e;
    return out;
  }
  nft::NlSocket& s = lease.sock();
  Revisions revisions;
  for (const Batch::RevisionSlot& slot : b.revisions) {
    if (revisions.count(slot.type)) continue;
    uint8_t rev = 0;
    if (int e = KernelRevision(s, slot.type, &rev, &out.sysWhat)) {
      out.sysErrno = e;
      return out;
    }
    revisions[slot.type] = rev;
  }
  SetRevisions(&b, revisions);
  // iptables-nft rules (xt_set matches) let go of a set only when nf_tables frees them,
  // after a grace period, in its work queue: a set their last commit stopped using is
  // still busy (EBUSY) until then. (iptables-nft-restore's exit used to wait for it.)
  if (b.destroys) nft::SettleDeferredFrees();
  out.messages = b.messages;
  // In chunks of whole messages, each chunk's answers read before the next is sent.
  size_t at = 0;
  while (at < b.buf.size()) {
    size_t end = at, messages = 0;
    int left = static_cast<int>(b.buf.size() - at);
    for (auto* h = reinterpret_cast<nlmsghdr*>(b.buf.data() + at);
         NlmsgOk(h, left) && (messages == 0 || end - at + h->nlmsg_len <= kSendChunk); h = mnl_nlmsg_next(h, &left)) {
      end += NLMSG_ALIGN(h->nlmsg_len);
      messages++;
    }
    if (!SendAndCollect(s, b, b.buf.data() + at, end - at, messages, &out)) return out;
    at = end;
  }
  // Every message of every chunk was answered.
  lease.Reusable();
  return out;
}

}  // namespace palisade::ipset
