#include "wg/wg.h"

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/time_types.h>
#include <linux/wireguard.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>

#include "rtnl/request.h"
#include "rtnl/routes.h"

namespace palisade::wg {
namespace {

// Room one peer's own attributes take at most (nest, key, flags, endpoint, keepalive),
// and one allowed IP (nest, family, address, mask), with their headers and padding.
constexpr size_t kPeerRoom = 4 + 36 + 8 + 32 + 8 + 4 + 4;
constexpr size_t kAllowedRoom = 4 + 8 + 20 + 8;

uint16_t U16At(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
uint32_t U32At(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

std::string Hex(const void* data, size_t len) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s(len * 2, '0');
  const auto* b = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < len; i++) {
    s[2 * i] = kDigits[b[i] >> 4];
    s[2 * i + 1] = kDigits[b[i] & 15];
  }
  return s;
}

bool AllZero(const uint8_t* p, size_t len) {
  for (size_t i = 0; i < len; i++)
    if (p[i]) return false;
  return true;
}

std::string ParsePeer(const uint8_t* p, const uint8_t* end, PeerChange* peer, const uint8_t** next) {
  if (static_cast<size_t>(end - p) < kPeerHeader) return "wireguard change: truncated peer";
  std::memcpy(peer->key, p, kKeyLen);
  peer->flags = p[32];
  peer->endpointFamily = p[33];
  std::memcpy(peer->endpoint, p + 34, 16);
  peer->endpointPort = U16At(p + 50);
  peer->keepalive = U16At(p + 52);
  const uint32_t n = U32At(p + 54);
  p += kPeerHeader;
  if ((peer->flags & kSetEndpoint) && peer->endpointFamily != 4 && peer->endpointFamily != 6)
    return "wireguard change: endpoint family " + std::to_string(peer->endpointFamily);
  if (static_cast<size_t>(end - p) / kAllowedSize < n) return "wireguard change: truncated allowed IPs";
  peer->allowed.resize(n);
  for (uint32_t i = 0; i < n; i++, p += kAllowedSize) {
    AllowedIp& a = peer->allowed[i];
    a.family = p[0];
    std::memcpy(a.addr, p + 1, 16);
    a.prefix = p[17];
    if (a.family != 4 && a.family != 6) return "wireguard change: allowed IP family " + std::to_string(a.family);
    if (a.prefix > (a.family == 4 ? 32 : 128)) return "wireguard change: allowed IP prefix " + std::to_string(a.prefix);
  }
  *next = p;
  return "";
}

// A SET_DEVICE message's start: header, generic header, the device's name.
nlmsghdr* StartSet(std::vector<char>* buf, uint16_t familyId, const std::string& name) {
  nlmsghdr* h = mnl_nlmsg_put_header(buf->data());
  h->nlmsg_type = familyId;
  h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  auto* g = static_cast<genlmsghdr*>(mnl_nlmsg_put_extra_header(h, sizeof(genlmsghdr)));
  g->cmd = WG_CMD_SET_DEVICE;
  g->version = WG_GENL_VERSION;
  mnl_attr_put_strz(h, WGDEVICE_A_IFNAME, name.c_str());
  return h;
}

void PutPeerHead(nlmsghdr* h, const PeerChange& p, bool continued) {
  mnl_attr_put(h, WGPEER_A_PUBLIC_KEY, kKeyLen, p.key);
  if (continued) return;
  uint32_t flags = 0;
  if (p.flags & kRemove) flags |= WGPEER_F_REMOVE_ME;
  if (p.flags & kReplaceAllowed) flags |= WGPEER_F_REPLACE_ALLOWEDIPS;
  if (p.flags & kUpdateOnly) flags |= WGPEER_F_UPDATE_ONLY;
  mnl_attr_put_u32(h, WGPEER_A_FLAGS, flags);
  if (p.flags & kRemove) return;
  if (p.flags & kSetEndpoint) {
    if (p.endpointFamily == 4) {
      sockaddr_in sa{};
      sa.sin_family = AF_INET;
      sa.sin_port = htons(p.endpointPort);
      std::memcpy(&sa.sin_addr, p.endpoint, 4);
      mnl_attr_put(h, WGPEER_A_ENDPOINT, sizeof(sa), &sa);
    } else {
      sockaddr_in6 sa{};
      sa.sin6_family = AF_INET6;
      sa.sin6_port = htons(p.endpointPort);
      std::memcpy(&sa.sin6_addr, p.endpoint, 16);
      mnl_attr_put(h, WGPEER_A_ENDPOINT, sizeof(sa), &sa);
    }
  }
  if (p.flags & kSetKeepalive) mnl_attr_put_u16(h, WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL, p.keepalive);
}

std::string EndpointString(const uint8_t* p, uint16_t len) {
  sa_family_t fam;
  if (len < sizeof(fam)) return "";
  std::memcpy(&fam, p, sizeof(fam));
  if (fam == AF_INET && len >= sizeof(sockaddr_in)) {
    sockaddr_in sa;
    std::memcpy(&sa, p, sizeof(sa));
    return rtnl::AddrString(AF_INET, &sa.sin_addr, -1) + ":" + std::to_string(ntohs(sa.sin_port));
  }
  if (fam == AF_INET6 && len >= sizeof(sockaddr_in6)) {
    sockaddr_in6 sa;
    std::memcpy(&sa, p, sizeof(sa));
    return "[" + rtnl::AddrString(AF_INET6, &sa.sin6_addr, -1) + "]:" + std::to_string(ntohs(sa.sin6_port));
  }
  return "";
}

int ParseAllowedIp(const nlattr* one, void* data) {
  struct A {
    int family = 0;
    const void* addr = nullptr;
    uint16_t addrLen = 0;
    int prefix = -1;
  } a;
  mnl_attr_parse_nested(
      one,
      [](const nlattr* x, void* q) {
        auto* a = static_cast<A*>(q);
        const uint16_t len = mnl_attr_get_payload_len(x);
        if (mnl_attr_get_type(x) == WGALLOWEDIP_A_FAMILY && len == 2) a->family = mnl_attr_get_u16(x);
        if (mnl_attr_get_type(x) == WGALLOWEDIP_A_IPADDR && (len == 4 || len == 16)) {
          a->addr = mnl_attr_get_payload(x);
          a->addrLen = len;
        }
        if (mnl_attr_get_type(x) == WGALLOWEDIP_A_CIDR_MASK && len == 1) a->prefix = mnl_attr_get_u8(x);
        return MNL_CB_OK;
      },
      &a);
  const bool v4 = a.family == AF_INET && a.addrLen == 4 && a.prefix >= 0 && a.prefix <= 32;
  const bool v6 = a.family == AF_INET6 && a.addrLen == 16 && a.prefix >= 0 && a.prefix <= 128;
  if (v4 || v6) static_cast<Peer*>(data)->allowedIps.push_back(rtnl::AddrString(a.family, a.addr, a.prefix));
  return MNL_CB_OK;
}

int ParsePeerField(const nlattr* a, void* data) {
  auto* p = static_cast<Peer*>(data);
  const uint16_t len = mnl_attr_get_payload_len(a);
  const auto* pay = static_cast<const uint8_t*>(mnl_attr_get_payload(a));
  switch (mnl_attr_get_type(a)) {
    case WGPEER_A_PUBLIC_KEY:
      if (len == kKeyLen) p->publicKey = Hex(pay, kKeyLen);
      break;
    case WGPEER_A_ENDPOINT:
      p->endpoint = EndpointString(pay, len);
      break;
    case WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL:
      if (len == 2) p->keepalive = mnl_attr_get_u16(a);
      break;
    case WGPEER_A_LAST_HANDSHAKE_TIME:
      if (len == sizeof(__kernel_timespec)) {
        __kernel_timespec ts;
        std::memcpy(&ts, pay, sizeof(ts));
        p->lastHandshakeSec = ts.tv_sec;
      }
      break;
    case WGPEER_A_RX_BYTES:
      if (len == 8) p->rxBytes = mnl_attr_get_u64(a);
      break;
    case WGPEER_A_TX_BYTES:
      if (len == 8) p->txBytes = mnl_attr_get_u64(a);
      break;
    case WGPEER_A_ALLOWEDIPS:
      mnl_attr_parse_nested(a, ParseAllowedIp, p);
      break;
  }
  return MNL_CB_OK;
}

// One peer of a reply; a peer whose allowed IPs did not fit one message comes again,
// under the same key, in the next: its allowed IPs join the peer already read.
int ParsePeerAttr(const nlattr* a, void* data) {
  auto* d = static_cast<Device*>(data);
  Peer p;
  mnl_attr_parse_nested(a, ParsePeerField, &p);
  if (p.publicKey.empty()) return MNL_CB_OK;
  if (!d->peers.empty() && d->peers.back().publicKey == p.publicKey) {
    auto& prev = d->peers.back().allowedIps;
    prev.insert(prev.end(), p.allowedIps.begin(), p.allowedIps.end());
  } else {
    d->peers.push_back(std::move(p));
  }
  return MNL_CB_OK;
}

}  // namespace

std::string ParseChange(const uint8_t* p, size_t len, DeviceChange* out) {
  if (len < kChangeHeader) return "wireguard change: shorter than its header";
  const uint8_t* end = p + len;
  out->flags = p[0];
  std::memcpy(out->privateKey, p + 1, kKeyLen);
  out->listenPort = U16At(p + 33);
  out->fwmark = U32At(p + 35);
  const uint32_t n = U32At(p + 39);
  p += kChangeHeader;
  if (static_cast<size_t>(end - p) / kPeerHeader < n) return "wireguard change: truncated peers";
  out->peers.resize(n);
  for (uint32_t i = 0; i < n; i++) {
    std::string err = ParsePeer(p, end, &out->peers[i], &p);
    if (!err.empty()) return err;
  }
  if (p != end) return "wireguard change: bytes after the last peer";
  return "";
}

std::vector<std::vector<char>> BuildSetMessages(uint16_t familyId, const std::string& name, const DeviceChange& c,
                                                size_t maxMsg) {
  std::vector<std::vector<char>> out;
  size_t pi = 0, ai = 0;
  bool peerStarted = false;
  do {
    std::vector<char> buf(maxMsg, 0);
    nlmsghdr* h = StartSet(&buf, familyId, name);
    if (out.empty()) {
      mnl_attr_put_u32(h, WGDEVICE_A_FLAGS, (c.flags & kReplacePeers) ? WGDEVICE_F_REPLACE_PEERS : 0);
      if (c.flags & kSetPrivateKey) mnl_attr_put(h, WGDEVICE_A_PRIVATE_KEY, kKeyLen, c.privateKey);
      if (c.flags & kSetListenPort) mnl_attr_put_u16(h, WGDEVICE_A_LISTEN_PORT, c.listenPort);
      if (c.flags & kSetFwmark) mnl_attr_put_u32(h, WGDEVICE_A_FWMARK, c.fwmark);
    }
    auto room = [&]() { return maxMsg - h->nlmsg_len; };
    if (pi < c.peers.size()) {
      nlattr* peers = mnl_attr_nest_start(h, WGDEVICE_A_PEERS);
      bool full = false;
      for (; pi < c.peers.size() && !full && room() >= kPeerRoom + kAllowedRoom;) {
        const PeerChange& p = c.peers[pi];
        nlattr* peer = mnl_attr_nest_start(h, 0);
        PutPeerHead(h, p, peerStarted);
        peerStarted = true;
        if (!(p.flags & kRemove) && ai < p.allowed.size()) {
          nlattr* list = mnl_attr_nest_start(h, WGPEER_A_ALLOWEDIPS);
          for (; ai < p.allowed.size() && room() >= kAllowedRoom; ai++) {
            const AllowedIp& a = p.allowed[ai];
            nlattr* one = mnl_attr_nest_start(h, 0);
            mnl_attr_put_u16(h, WGALLOWEDIP_A_FAMILY, a.family == 4 ? AF_INET : AF_INET6);
            mnl_attr_put(h, WGALLOWEDIP_A_IPADDR, a.family == 4 ? 4 : 16, a.addr);
            mnl_attr_put_u8(h, WGALLOWEDIP_A_CIDR_MASK, a.prefix);
            mnl_attr_nest_end(h, one);
          }
          mnl_attr_nest_end(h, list);
        }
        mnl_attr_nest_end(h, peer);
        if ((p.flags & kRemove) || ai >= p.allowed.size()) {
          pi++;
          ai = 0;
          peerStarted = false;
        } else {
          full = true;  // this peer goes on in the next message
        }
      }
      mnl_attr_nest_end(h, peers);
    }
    buf.resize(h->nlmsg_len);
    out.push_back(std::move(buf));
  } while (pi < c.peers.size());
  return out;
}

void ParseGetReply(const void* msg, size_t len, Device* d) {
  const auto* h = static_cast<const nlmsghdr*>(msg);
  // libmnl walks attributes up to the message's aligned end: that must be inside `len` too.
  if (len < sizeof(nlmsghdr) || NLMSG_ALIGN(h->nlmsg_len) > len || mnl_nlmsg_get_payload_len(h) < sizeof(genlmsghdr))
    return;
  d->found = true;
  mnl_attr_parse(
      h, sizeof(genlmsghdr),
      [](const nlattr* a, void* data) {
        auto* d = static_cast<Device*>(data);
        const uint16_t plen = mnl_attr_get_payload_len(a);
        const auto* pay = static_cast<const uint8_t*>(mnl_attr_get_payload(a));
        switch (mnl_attr_get_type(a)) {
          case WGDEVICE_A_IFINDEX:
            if (plen == 4) d->ifindex = static_cast<int>(mnl_attr_get_u32(a));
            break;
          case WGDEVICE_A_PRIVATE_KEY:
            if (plen == kKeyLen && !AllZero(pay, kKeyLen)) d->privateKey = Hex(pay, kKeyLen);
            break;
          case WGDEVICE_A_PUBLIC_KEY:
            if (plen == kKeyLen && !AllZero(pay, kKeyLen)) d->publicKey = Hex(pay, kKeyLen);
            break;
          case WGDEVICE_A_LISTEN_PORT:
            if (plen == 2) d->listenPort = mnl_attr_get_u16(a);
            break;
          case WGDEVICE_A_FWMARK:
            if (plen == 4) d->fwmark = mnl_attr_get_u32(a);
            break;
          case WGDEVICE_A_PEERS:
            mnl_attr_parse_nested(a, ParsePeerAttr, d);
            break;
        }
        return MNL_CB_OK;
      },
      d);
}

namespace {

// The "wireguard" generic netlink family's id; 0 with `noFamily` when the kernel has none.
uint16_t ResolveFamily(rtnl::RtnlSocket& s, Result* out) {
  char buf[256];
  nlmsghdr* h = mnl_nlmsg_put_header(buf);
  h->nlmsg_type = GENL_ID_CTRL;
  // No ACK: the reply (or an error) is the answer, and nothing is left on the socket.
  h->nlmsg_flags = NLM_F_REQUEST;
  auto* g = static_cast<genlmsghdr*>(mnl_nlmsg_put_extra_header(h, sizeof(genlmsghdr)));
  g->cmd = CTRL_CMD_GETFAMILY;
  g->version = 1;
  mnl_attr_put_strz(h, CTRL_ATTR_FAMILY_NAME, WG_GENL_NAME);
  uint16_t id = 0;
  const rtnl::RequestStatus st = rtnl::Request(s, h, [&](const nlmsghdr* m) {
    if (mnl_nlmsg_get_payload_len(m) < sizeof(genlmsghdr)) return;
    mnl_attr_parse(
        m, sizeof(genlmsghdr),
        [](const nlattr* a, void* p) {
          if (mnl_attr_get_type(a) == CTRL_ATTR_FAMILY_ID && mnl_attr_get_payload_len(a) == 2)
            *static_cast<uint16_t*>(p) = mnl_attr_get_u16(a);
          return MNL_CB_OK;
        },
        &id);
  });
  if (st.sysErrno) {
    out->sysErrno = st.sysErrno;
    out->sysWhat = st.sysWhat;
  } else if (st.err == ENOENT || (!st.err && !id)) {
    out->noFamily = true;
  } else if (st.err) {
    out->err = st.err;
  }
  return id;
}

// A socket with the family resolved; false (the reason in `out`) otherwise.
bool Open(rtnl::RtnlSocket& s, Result* out, uint16_t* id) {
  if (int e = s.Open(&out->sysWhat, NETLINK_GENERIC)) {
    out->sysErrno = e;
    return false;
  }
  *id = ResolveFamily(s, out);
  return *id != 0;
}

}  // namespace

Result GetDevice(const std::string& name) {
  Result out;
  rtnl::RtnlSocket s;
  uint16_t id = 0;
  if (!Open(s, &out, &id)) return out;
  char buf[256];
  nlmsghdr* h = mnl_nlmsg_put_header(buf);
  h->nlmsg_type = id;
  h->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  auto* g = static_cast<genlmsghdr*>(mnl_nlmsg_put_extra_header(h, sizeof(genlmsghdr)));
  g->cmd = WG_CMD_GET_DEVICE;
  g->version = WG_GENL_VERSION;
  mnl_attr_put_strz(h, WGDEVICE_A_IFNAME, name.c_str());
  const rtnl::RequestStatus st =
      rtnl::Request(s, h, [&](const nlmsghdr* m) { ParseGetReply(m, NLMSG_ALIGN(m->nlmsg_len), &out.device); });
  out.sysErrno = st.sysErrno;
  if (st.sysErrno) out.sysWhat = st.sysWhat;
  out.err = st.err;
  out.messages = 1;
  return out;
}

Result SetDevice(const std::string& name, const uint8_t* change, size_t len) {
  Result out;
  DeviceChange c;
  out.badInput = ParseChange(change, len, &c);
  if (!out.badInput.empty()) return out;
  if (name.empty() || name.size() >= 16) {
    out.badInput = "wireguard: a device name is 1 to 15 bytes";
    return out;
  }
  rtnl::RtnlSocket s;
  uint16_t id = 0;
  if (!Open(s, &out, &id)) return out;
  // 32 KiB a message: well within the socket's send buffer, a few for a thousand peers.
  for (auto& m : BuildSetMessages(id, name, c, 32 * 1024)) {
    const rtnl::RequestStatus st = rtnl::Request(s, reinterpret_cast<nlmsghdr*>(m.data()), [](const nlmsghdr*) {});
    out.messages++;
    if (st.sysErrno || st.err) {
      out.sysErrno = st.sysErrno;
      out.sysWhat = st.sysWhat;
      out.err = st.err;
      return out;
    }
  }
  return out;
}

}  // namespace palisade::wg
