// The VXLAN device Felix owns (vxlan.calico) over rtnetlink: read it back, create it,
// set its MTU and state, delete it; and its addresses. One request per call, on a
// worker thread; the kernel's answer (an errno) is part of the result. Plain C++.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace palisade::rtnl {

struct VxlanSpec {
  std::string name;
  uint32_t vni = 0;
  uint16_t port = 0;
  int parent = 0;       // the underlay device's ifindex (0: none)
  int localFamily = 0;  // 4 or 6 (0: no local address)
  uint8_t local[16] = {};
  uint8_t mac[6] = {};
  bool hasMac = false;
  int mtu = 0;  // 0: the kernel's default
};

struct LinkInfo {
  bool found = false;
  int index = 0;
  std::string kind;  // "vxlan", "veth", ... ("" when not said)
  int mtu = 0;
  bool up = false;
  std::string mac;  // "aa:bb:cc:dd:ee:ff"
  // VXLAN only:
  uint32_t vni = 0;
  int port = 0;
  int parent = 0;
  std::string local;  // "" when none
  int learning = -1;
};

struct LinkResult {
  int sysErrno = 0;  // the socket failed
  std::string sysWhat;
  int err = 0;  // the kernel refused (positive errno)
  LinkInfo link;
  std::vector<std::string> addrs;  // "a.b.c.d/len"
};

LinkResult GetLink(const std::string& name);
LinkResult AddVxlan(const VxlanSpec& spec);
// kind: "ipip" or "wireguard" (checked by the caller).
LinkResult AddBareLink(const std::string& name, const std::string& kind, int mtu);
// mtu 0: leave it; up: bring up (true) or down (false).
LinkResult SetLink(int index, int mtu, bool up);
LinkResult DeleteLink(int index);
LinkResult ChangeAddr(bool add, int index, int family, const uint8_t addr[16], int prefix);
LinkResult DumpAddrs(int index);

}  // namespace palisade::rtnl
