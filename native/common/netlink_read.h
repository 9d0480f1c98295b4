// Reading netlink safely. Answers and events are believed only when the kernel sent them:
// another process with CAP_NET_ADMIN can unicast a forged message to any netlink socket's port id (a
// privileged pod on the host network could fake an interface or an ACK); like
// vishvananda/netlink, which Felix uses, we drop every datagram whose sender is not port 0.
#pragma once

#include <linux/netlink.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>

namespace palisade {

// recv(2) for a netlink socket that skips datagrams not sent by the kernel. A datagram
// larger than `len` fails with ENOSPC instead of being parsed truncated.
inline ssize_t RecvFromKernel(int fd, void* buf, size_t len, int flags) {
  for (;;) {
    sockaddr_nl from{};
    iovec iov{buf, len};
    msghdr msg{};
    msg.msg_name = &from;
    msg.msg_namelen = sizeof(from);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    const ssize_t n = recvmsg(fd, &msg, flags);
    if (n < 0) return n;
    if (msg.msg_flags & MSG_TRUNC) {
      errno = ENOSPC;
      return -1;
    }
    if (msg.msg_namelen == sizeof(from) && from.nl_family == AF_NETLINK && from.nl_pid == 0) return n;
  }
}

// mnl_nlmsg_ok compares the message length as a signed int, so a length of 2^31 or more
// passes and mnl_nlmsg_next then advances by nothing (the aligned length wraps to 0): an
// endless loop the rtnetlink fuzzer found. This check compares unsigned.
inline bool NlmsgOk(const nlmsghdr* h, int len) {
  return len >= static_cast<int>(sizeof(nlmsghdr)) && h->nlmsg_len >= sizeof(nlmsghdr) &&
         h->nlmsg_len <= static_cast<unsigned>(len);
}

}  // namespace palisade
