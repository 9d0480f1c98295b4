#include "rtnl/links.h"

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "rtnl/request.h"
#include "rtnl/routes.h"

namespace palisade::rtnl {
namespace {

// The VXLAN attributes of a link message's IFLA_LINKINFO / IFLA_INFO_DATA.
void ParseVxlanData(const nlattr* data, LinkInfo* l) {
  mnl_attr_parse_nested(
      data,
      [](const nlattr* a, void* p) {
        auto* l = static_cast<LinkInfo*>(p);
        const uint16_t len = mnl_attr_get_payload_len(a);
        switch (mnl_attr_get_type(a)) {
          case IFLA_VXLAN_ID:
            if (len == 4) l->vni = mnl_attr_get_u32(a);
            break;
          case IFLA_VXLAN_PORT:
            if (len == 2) l->port = ntohs(mnl_attr_get_u16(a));
            break;
          case IFLA_VXLAN_LINK:
            if (len == 4) l->parent = static_cast<int>(mnl_attr_get_u32(a));
            break;
          case IFLA_VXLAN_LOCAL:
            if (len == 4) l->local = AddrString(AF_INET, mnl_attr_get_payload(a), -1);
            break;
          case IFLA_VXLAN_LOCAL6:
            if (len == 16) l->local = AddrString(AF_INET6, mnl_attr_get_payload(a), -1);
            break;
          case IFLA_VXLAN_LEARNING:
            if (len == 1) l->learning = mnl_attr_get_u8(a);
            break;
        }
        return MNL_CB_OK;
      },
      l);
}

void ParseLink(const nlmsghdr* m, LinkInfo* l) {
  if (mnl_nlmsg_get_payload_len(m) < sizeof(ifinfomsg)) return;
  auto* ifi = static_cast<const ifinfomsg*>(mnl_nlmsg_get_payload(m));
  l->found = true;
  l->index = ifi->ifi_index;
  l->up = (ifi->ifi_flags & IFF_UP) != 0;
  mnl_attr_parse(
      m, sizeof(ifinfomsg),
      [](const nlattr* a, void* p) {
        auto* l = static_cast<LinkInfo*>(p);
        const uint16_t len = mnl_attr_get_payload_len(a);
        switch (mnl_attr_get_type(a)) {
          case IFLA_MTU:
            if (len == 4) l->mtu = static_cast<int>(mnl_attr_get_u32(a));
            break;
          case IFLA_ADDRESS:
            if (len == 6) l->mac = MacString(static_cast<const uint8_t*>(mnl_attr_get_payload(a)));
            break;
          case IFLA_LINKINFO:
            mnl_attr_parse_nested(
                a,
                [](const nlattr* b, void* q) {
                  auto* l = static_cast<LinkInfo*>(q);
                  if (mnl_attr_get_type(b) == IFLA_INFO_KIND && mnl_attr_validate(b, MNL_TYPE_NUL_STRING) >= 0)
                    l->kind = mnl_attr_get_str(b);
                  if (mnl_attr_get_type(b) == IFLA_INFO_DATA) ParseVxlanData(b, l);
                  return MNL_CB_OK;
                },
                l);
            break;
        }
        return MNL_CB_OK;
      },
      l);
}

// One request on a fresh socket, its outcome (and replies, through `onMsg`) in a LinkResult.
template <typename F>
LinkResult Transact(nlmsghdr* h, F onMsg) {
  LinkResult out;
  RtnlSocket s;
  if (int e = s.Open(&out.sysWhat)) {
    out.sysErrno = e;
    return out;
  }
  const RequestStatus st = Request(s, h, [&](const nlmsghdr* m) { onMsg(m, &out); });
  out.sysErrno = st.sysErrno;
  if (st.sysErrno) out.sysWhat = st.sysWhat;
  out.err = st.err;
  return out;
}

nlmsghdr* Header(char* buf, uint16_t type, uint16_t flags) {
  nlmsghdr* h = mnl_nlmsg_put_header(buf);
  h->nlmsg_type = type;
  h->nlmsg_flags = NLM_F_REQUEST | flags;
  return h;
}

}  // namespace

LinkResult GetLink(const std::string& name) {
  char buf[512];
  nlmsghdr* h = Header(buf, RTM_GETLINK, 0);
  auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(h, sizeof(ifinfomsg)));
  ifi->ifi_family = AF_UNSPEC;
  mnl_attr_put_strz(h, IFLA_IFNAME, name.c_str());
  LinkResult r = Transact(h, [](const nlmsghdr* m, LinkResult* out) { ParseLink(m, &out->link); });
  // No such device is an answer, not a failure.
  if (r.err == ENODEV) r.err = 0;
  return r;
}

LinkResult AddVxlan(const VxlanSpec& spec) {
  char buf[1024];
  nlmsghdr* h = Header(buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK);
  auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(h, sizeof(ifinfomsg)));
  ifi->ifi_family = AF_UNSPEC;
  mnl_attr_put_strz(h, IFLA_IFNAME, spec.name.c_str());
  if (spec.mtu) mnl_attr_put_u32(h, IFLA_MTU, static_cast<uint32_t>(spec.mtu));
  if (spec.hasMac) mnl_attr_put(h, IFLA_ADDRESS, 6, spec.mac);
  nlattr* info = mnl_attr_nest_start(h, IFLA_LINKINFO);
  mnl_attr_put_strz(h, IFLA_INFO_KIND, "vxlan");
  nlattr* data = mnl_attr_nest_start(h, IFLA_INFO_DATA);
  mnl_attr_put_u32(h, IFLA_VXLAN_ID, spec.vni);
  if (spec.parent) mnl_attr_put_u32(h, IFLA_VXLAN_LINK, static_cast<uint32_t>(spec.parent));
  if (spec.localFamily == 4) mnl_attr_put(h, IFLA_VXLAN_LOCAL, 4, spec.local);
  if (spec.localFamily == 6) mnl_attr_put(h, IFLA_VXLAN_LOCAL6, 16, spec.local);
  mnl_attr_put_u16(h, IFLA_VXLAN_PORT, htons(spec.port));
  mnl_attr_put_u8(h, IFLA_VXLAN_LEARNING, 0);
  mnl_attr_nest_end(h, data);
  mnl_attr_nest_end(h, info);
  LinkResult r = Transact(h, [](const nlmsghdr*, LinkResult*) {});
  if (r.sysErrno || r.err) return r;
  return GetLink(spec.name);
}

// A device of a kind that needs no attributes to exist: an IP-in-IP device with no fixed
// ends (`ip link add NAME type ipip`; tunl0 is the kernel's own when the module loads), a
// WireGuard device (configured afterwards over generic netlink). EOPNOTSUPP without the
// kind's module.
LinkResult AddBareLink(const std::string& name, const std::string& kind, int mtu) {
  char buf[512];
  nlmsghdr* h = Header(buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK);
  auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(h, sizeof(ifinfomsg)));
  ifi->ifi_family = AF_UNSPEC;
  mnl_attr_put_strz(h, IFLA_IFNAME, name.c_str());
  if (mtu) mnl_attr_put_u32(h, IFLA_MTU, static_cast<uint32_t>(mtu));
  nlattr* info = mnl_attr_nest_start(h, IFLA_LINKINFO);
  mnl_attr_put_strz(h, IFLA_INFO_KIND, kind.c_str());
  mnl_attr_nest_end(h, info);
  LinkResult r = Transact(h, [](const nlmsghdr*, LinkResult*) {});
  if (r.sysErrno || r.err) return r;
  return GetLink(name);
}

LinkResult SetLink(int index, int mtu, bool up) {
  char buf[256];
  nlmsghdr* h = Header(buf, RTM_NEWLINK, NLM_F_ACK);
  auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(h, sizeof(ifinfomsg)));
  ifi->ifi_family = AF_UNSPEC;
  ifi->ifi_index = index;
  ifi->ifi_change = IFF_UP;
  ifi->ifi_flags = up ? IFF_UP : 0;
  if (mtu) mnl_attr_put_u32(h, IFLA_MTU, static_cast<uint32_t>(mtu));
  return Transact(h, [](const nlmsghdr*, LinkResult*) {});
}

LinkResult DeleteLink(int index) {
  char buf[128];
  nlmsghdr* h = Header(buf, RTM_DELLINK, NLM_F_ACK);
  auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(h, sizeof(ifinfomsg)));
  ifi->ifi_family = AF_UNSPEC;
  ifi->ifi_index = index;
  return Transact(h, [](const nlmsghdr*, LinkResult*) {});
}

LinkResult ChangeAddr(bool add, int index, int family, const uint8_t addr[16], int prefix) {
  char buf[256];
  nlmsghdr* h = Header(buf, add ? RTM_NEWADDR : RTM_DELADDR, NLM_F_ACK | (add ? NLM_F_CREATE | NLM_F_REPLACE : 0));
  auto* ifa = static_cast<ifaddrmsg*>(mnl_nlmsg_put_extra_header(h, sizeof(ifaddrmsg)));
  ifa->ifa_family = family == 6 ? AF_INET6 : AF_INET;
  ifa->ifa_prefixlen = static_cast<unsigned char>(prefix);
  ifa->ifa_index = static_cast<unsigned>(index);
  ifa->ifa_scope = RT_SCOPE_UNIVERSE;
  const size_t len = family == 6 ? 16 : 4;
  mnl_attr_put(h, IFA_LOCAL, len, addr);
  mnl_attr_put(h, IFA_ADDRESS, len, addr);
  return Transact(h, [](const nlmsghdr*, LinkResult*) {});
}

LinkResult DumpAddrs(int index) {
  char buf[128];
  nlmsghdr* h = Header(buf, RTM_GETADDR, NLM_F_DUMP);
  auto* ifa = static_cast<ifaddrmsg*>(mnl_nlmsg_put_extra_header(h, sizeof(ifaddrmsg)));
  ifa->ifa_family = AF_UNSPEC;
  return Transact(h, [index](const nlmsghdr* m, LinkResult* out) {
    if (mnl_nlmsg_get_payload_len(m) < sizeof(ifaddrmsg)) return;
    auto* ifa = static_cast<const ifaddrmsg*>(mnl_nlmsg_get_payload(m));
    if (static_cast<int>(ifa->ifa_index) != index) return;
    if (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6) return;
    struct A {
      const void* addr = nullptr;
      const void* local = nullptr;
      uint16_t want;
    } a{nullptr, nullptr, static_cast<uint16_t>(ifa->ifa_family == AF_INET ? 4 : 16)};
    mnl_attr_parse(
        m, sizeof(ifaddrmsg),
        [](const nlattr* at, void* p) {
          auto* x = static_cast<A*>(p);
          if (mnl_attr_get_payload_len(at) != x->want) return MNL_CB_OK;
          if (mnl_attr_get_type(at) == IFA_LOCAL) x->local = mnl_attr_get_payload(at);
          if (mnl_attr_get_type(at) == IFA_ADDRESS) x->addr = mnl_attr_get_payload(at);
          return MNL_CB_OK;
        },
        &a);
    const void* local = a.local ? a.local : a.addr;
    if (local) out->addrs.push_back(AddrString(ifa->ifa_family, local, ifa->ifa_prefixlen));
  });
}

}  // namespace palisade::rtnl
