// One rtnetlink socket, and one request on it read to its end: the ACK or error of a
// change, the reply of a GET, or every reply of a dump up to NLMSG_DONE. Shared by the
// route, neighbour, link and address code, which differ only in what they send and how
// they read a reply. Plain C++; runs on a worker thread.
#pragma once

#include <libmnl/libmnl.h>
#include <linux/netlink.h>

#include <atomic>
#include <cerrno>
#include <ctime>
#include <string>
#include <vector>

#include "common/netlink_read.h"

namespace palisade::rtnl {

struct RtnlSocket {
  mnl_socket* nl = nullptr;
  ~RtnlSocket() {
    if (nl) mnl_socket_close(nl);
  }
  // 0, or the errno with `*what` naming the step that failed. NETLINK_GENERIC for the
  // WireGuard family, which is asked the same way.
  int Open(std::string* what, int protocol = NETLINK_ROUTE) {
    nl = mnl_socket_open(protocol);
    if (!nl) {
      *what = protocol == NETLINK_ROUTE ? "socket(NETLINK_ROUTE)" : "socket(NETLINK_GENERIC)";
      return errno;
    }
    if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
      *what = "bind";
      return errno;
    }
    return 0;
  }
  int fd() const { return mnl_socket_get_fd(nl); }
};

struct RequestStatus {
  int sysErrno = 0;  // the socket failed
  std::string sysWhat;
  int err = 0;  // the kernel refused (positive errno)
};

// A sequence number no other request of this process has had lately. One counter for
// every request: a counter per Request instantiation gave two requests on one socket the
// same number within a second, and the second then took the first's late ACK for its
// own answer.
inline uint32_t NextSeq() {
  static std::atomic<uint32_t> counter{0};
  return static_cast<uint32_t>(time(nullptr)) + counter.fetch_add(1, std::memory_order_relaxed) + 1;
}

// Sends `h` (its sequence number is set here) and reads until its answer; `onMsg(reply)`
// sees each reply message of a GET or a dump.
template <typename F>
RequestStatus Request(RtnlSocket& s, nlmsghdr* h, F onMsg) {
  RequestStatus out;
  const uint32_t seq = NextSeq();
  h->nlmsg_seq = seq;
  if (mnl_socket_sendto(s.nl, h, h->nlmsg_len) < 0) {
    out.sysErrno = errno;
    out.sysWhat = "sendto";
    return out;
  }
  const bool dump = (h->nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP;
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  for (;;) {
    ssize_t n = RecvFromKernel(s.fd(), buf.data(), buf.size(), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      out.sysErrno = errno;
      out.sysWhat = "recv";
      return out;
    }
    int left = static_cast<int>(n);
    for (auto* m = reinterpret_cast<nlmsghdr*>(buf.data()); NlmsgOk(m, left); m = mnl_nlmsg_next(m, &left)) {
      if (m->nlmsg_seq != seq) continue;
      if (m->nlmsg_type == NLMSG_DONE) return out;
      if (m->nlmsg_type == NLMSG_ERROR) {
        if (mnl_nlmsg_get_payload_len(m) >= sizeof(nlmsgerr))
          out.err = -static_cast<nlmsgerr*>(mnl_nlmsg_get_payload(m))->error;
        return out;
      }
      onMsg(m);
      if (!dump) return out;
    }
  }
}

}  // namespace palisade::rtnl
